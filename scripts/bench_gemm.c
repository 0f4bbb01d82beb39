// bench_gemm.c — mul_mat speed for prompt-sized batches: quantized a [K, M] times F32 b [K, N],
// through the graph API, with the GEMM path (ggml-cpu/gemm.h) off ("old": vec_dot per column) and on
// ("new"), with the weights repacked at load ("repacked", repack.h; q4_0, q4_1, q8_0), on 1 and
// 2 threads; plus the bare micro-kernels on data that stays in cache: "kernel only" the stored
// layout's panel tile on synthetic bytes, "repacked tile" the tile prompts run on (a's repacked
// panels, b's activation groups), "1-col kernel" the one token generation runs.
// Built and run by scripts/bench_gemm.py (links the static library of a build folder).
//
// Figures are int8 multiply-adds x 2 per second (GOP/s = 2*M*N*K / time). On a shared machine
// wall-clock time includes time other processes took, so two clocks are reported, best of reps:
// cpu = CPU time of the process (all threads, spin-waits included) divided by the threads used,
// wall = elapsed time. For one thread cpu is the figure to trust.
#include "ggml-cpu/cpu-impl.h"
#include "ggml-cpu/gemm.h"
#include "ggml-cpu/repack.h"
#include "ggml.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float) ((rng >> 11) & 0xFFFFFF) / (float) 0x1000000 - 0.5f;
}

static bool listed(const char * list, const char * name) {
    if (!list || !*list) return true;
    const size_t len = strlen(name);
    for (const char * p = list; *p;) {
        const char * e = strchr(p, ',');
        const size_t l = e ? (size_t) (e - p) : strlen(p);
        if (l == len && strncmp(p, name, len) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

// Best (cpu per thread, wall) seconds of computing gf on nth threads.
static void time_graph(struct ggml_context * ctx, struct ggml_cgraph * gf, int nth, int reps, double * cpu, double * wall) {
    *cpu = *wall = 1e30;
    ggml_graph_compute_with_ctx(ctx, gf, nth); // warm-up (page faults, caches)
    for (int r = 0; r < reps; r++) {
        const double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
        ggml_graph_compute_with_ctx(ctx, gf, nth);
        const double c = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / nth, w = clock_s(CLOCK_MONOTONIC) - w0;
        if (c < *cpu) *cpu = c;
        if (w < *wall) *wall = w;
    }
}

// Micro-kernel alone: 4 panels x 8 groups of K (all in L2), thread CPU time, GOP/s.
static double kernel_gops(enum ggml_type type, int64_t K, int reps) {
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(type);
    if (!gt || !(gt->accelerated || gt->kernel_repacked)) return 0.0;
    const int P = 4, G = 8;
    const size_t pb = ggml_gemm_panel_bytes(gt, K), gb = ggml_gemm_group_bytes(gt, K);
    char * panels = aligned_alloc(64, GGML_PAD(pb * P, 64));
    char * groups = aligned_alloc(64, GGML_PAD(gb * G, 64));
    for (size_t i = 0; i < pb * P; i++) panels[i] = (char) (i * 7 & 15);
    for (size_t i = 0; i < gb * G; i++) groups[i] = (char) (i * 13 & 63);
    float out[GGML_GEMM_NR * GGML_GEMM_MR];
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        for (int it = 0; it < 4; it++)
            for (int p = 0; p < P; p++)
                for (int g = 0; g < G; g++) {
                    gt->kernel(gt, K, panels + p * pb, groups + g * gb, out, GGML_GEMM_MR, GGML_GEMM_MR, GGML_GEMM_NR);
                }
        const double t = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (t < best) best = t;
    }
    free(panels);
    free(groups);
    return 2.0 * 4 * P * G * GGML_GEMM_MR * GGML_GEMM_NR * (double) K / best * 1e-9;
}

// Repacked tile alone (what prompt processing runs): a's first 4 repacked panels against 8
// activation groups made from b's first 64 columns (all in L2), best of reps short runs by the
// monotonic clock (short runs dodge the other work of a shared machine), GOP/s.
static double kernel_rp_gops(const struct ggml_tensor * a, const struct ggml_tensor * b, int reps) {
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(a->type);
    const void * panels = ggml_cpu_repack_panels(a);
    const struct ggml_type_traits_cpu * atc = gt ? ggml_get_type_traits_cpu(gt->act_type) : NULL;
    const int64_t K = a->ne[0];
    const int P = 4, G = 8;
    if (!panels || !gt->kernel_repacked || !atc || !atc->from_float || a->ne[1] < P * GGML_GEMM_MR ||
        b->ne[1] < G * GGML_GEMM_NR) {
        return 0.0;
    }
    const size_t pbytes = ggml_cpu_repack_panel_bytes(a), gb = ggml_gemm_group_bytes(gt, K);
    const size_t qrow = GGML_PAD(ggml_row_size(gt->act_type, K), 64);
    char * q = aligned_alloc(64, qrow * GGML_GEMM_NR);
    char * groups = aligned_alloc(64, GGML_PAD(gb * G, 64));
    for (int g = 0; g < G; g++) {
        for (int c = 0; c < GGML_GEMM_NR; c++) {
            atc->from_float((const float *) ((const char *) b->data + (size_t) (g * GGML_GEMM_NR + c) * b->nb[1]), q + c * qrow,
                            K);
        }
        gt->act_group(gt, q, qrow, GGML_GEMM_NR, K, groups + (size_t) g * gb);
    }
    float out[GGML_GEMM_NR * GGML_GEMM_MR];
    double best = 1e30;
    for (int r = 0; r < 20 * reps; r++) {
        const double t0 = clock_s(CLOCK_MONOTONIC);
        for (int p = 0; p < P; p++)
            for (int g = 0; g < G; g++) {
                gt->kernel_repacked(gt, K, (const char *) panels + (size_t) p * pbytes, groups + (size_t) g * gb, out,
                                    GGML_GEMM_MR, GGML_GEMM_MR, GGML_GEMM_NR);
            }
        const double t = clock_s(CLOCK_MONOTONIC) - t0;
        if (t < best) best = t;
    }
    free(q);
    free(groups);
    return 2.0 * P * G * GGML_GEMM_MR * GGML_GEMM_NR * (double) K / best * 1e-9;
}

// One-column kernel on a's repacked panels alone (token generation's inner loop), on the first
// panels that fit in L2 (256 KiB), thread CPU time: GB/s of weight bytes. This is the compute
// side of the kernel's budget: from DRAM a token streams at the lower of this and the read roof.
static double kernel1_gbs(const struct ggml_tensor * a, const float * col, int reps) {
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(a->type);
    const void * panels = ggml_cpu_repack_panels(a);
    const struct ggml_type_traits_cpu * atc = gt ? ggml_get_type_traits_cpu(gt->act_type) : NULL;
    if (!panels || !gt->kernel_repacked1 || !atc || !atc->from_float) return 0.0;
    const int64_t K = a->ne[0];
    const size_t pbytes = ggml_cpu_repack_panel_bytes(a);
    int64_t np = (int64_t) ((256u * 1024) / pbytes);
    if (np < 1) np = 1;
    if (np > a->ne[1] / GGML_GEMM_MR) np = a->ne[1] / GGML_GEMM_MR;
    void * qrow = aligned_alloc(64, GGML_PAD(ggml_row_size(gt->act_type, K), 64));
    void * compact = aligned_alloc(64, GGML_PAD(ggml_gemm_compact_bytes(gt, K), 64));
    atc->from_float(col, qrow, K);
    ggml_gemm_act_compact_row(gt, qrow, K, compact);
    float out[GGML_GEMM_MR];
    const int iters = (int) (64u * 1024 * 1024 / ((size_t) np * pbytes)) + 1; // ~64 MB of panel reads per rep
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        for (int it = 0; it < iters; it++)
            for (int64_t p = 0; p < np; p++) {
                gt->kernel_repacked1(gt, K, (const char *) panels + (size_t) p * pbytes, compact, out, GGML_GEMM_MR, GGML_GEMM_MR,
                                     1);
            }
        const double t = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (t < best) best = t;
    }
    free(qrow);
    free(compact);
    return (double) iters * (double) np * (double) pbytes / best * 1e-9;
}

int main(int argc, char ** argv) {
    const char * types_arg = argc > 1 ? argv[1] : "q4_0,q4_1,q8_0,q4_K,q6_K";
    const char * shapes_arg = argc > 2 ? argv[2] : "576x576,576x1536,1536x576,2048x2048,2048x5632,5632x2048";
    const int N = argc > 3 ? atoi(argv[3]) : 512;
    const int reps = argc > 4 ? atoi(argv[4]) : 3;
    const int max_threads = argc > 5 ? atoi(argv[5]) : 2;
    const enum ggml_type all[] = { GGML_TYPE_Q4_0,    GGML_TYPE_Q4_1,   GGML_TYPE_Q5_0,    GGML_TYPE_Q5_1,   GGML_TYPE_Q8_0,
                                   GGML_TYPE_Q2_K,    GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,    GGML_TYPE_Q5_K,   GGML_TYPE_Q6_K,
                                   GGML_TYPE_IQ4_NL,  GGML_TYPE_IQ4_XS, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S,
                                   GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S,  GGML_TYPE_IQ1_S,   GGML_TYPE_IQ1_M };

    printf("kernel set: %s; N = %d; GOP/s = 2*M*N*K / time, best of %d; cpu = process CPU time / threads\n\n",
           ggml_cpu_kernel_variant_name(ggml_cpu_kernel_variant_selected()), N, reps);
    printf("| type | K x M | kernel only | repacked tile | 1-col kernel GB/s | threads | old cpu | new cpu | repacked cpu | "
           "speed-up | old wall | new wall | repacked wall |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t ti = 0; ti < sizeof(all) / sizeof(all[0]); ti++) {
        const enum ggml_type type = all[ti];
        if (!listed(types_arg, ggml_type_name(type))) continue;
        const struct ggml_type_traits * tt = ggml_get_type_traits(type);
        for (const char * s = shapes_arg; s && *s;) {
            long K = 0, M = 0;
            if (sscanf(s, "%ldx%ld", &K, &M) != 2) break;
            const char * e = strchr(s, ',');
            s = e ? e + 1 : NULL;
            if (K % ggml_blck_size(type) != 0) continue;
            struct ggml_init_params ip = {
                (size_t) (ggml_row_size(type, K) * M + (size_t) K * N * 4 + (size_t) M * N * 4) + 16u * 1024 * 1024, NULL, false
            };
            struct ggml_context * ctx = ggml_init(ip);
            struct ggml_tensor * a = ggml_new_tensor_2d(ctx, type, K, M);
            struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
            float * row = malloc(sizeof(float) * (size_t) K);
            for (long r = 0; r < M; r++) {
                for (long k = 0; k < K; k++) row[k] = frand();
                if (tt->from_float_ref) {
                    tt->from_float_ref(row, (char *) a->data + r * a->nb[1], K);
                    continue;
                }
                // the codebook types (no quantizer without an importance matrix): random bytes,
                // with a small finite fp16 scale where the type keeps it first (IQ1_M: spread
                // over its scale words; random ones are finite but for 1 in 32)
                unsigned char * q = (unsigned char *) a->data + r * a->nb[1];
                for (size_t i = 0; i < ggml_row_size(type, K); i++) {
                    (void) frand();
                    q[i] = (unsigned char) (rng >> 24);
                }
                const ggml_fp16_t h = ggml_fp32_to_fp16(0.01f);
                for (long u = 0; u < K / ggml_blck_size(type) && type != GGML_TYPE_IQ1_M; u++)
                    memcpy(q + (size_t) u * tt->type_size, &h, sizeof(h));
            }
            free(row);
            for (long i = 0; i < K * N; i++) ((float *) b->data)[i] = frand();
            struct ggml_tensor * out = ggml_mul_mat(ctx, a, b);
            struct ggml_cgraph * gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, out);
            const double ops = 2.0 * (double) M * N * K * 1e-9;
            const double kg = kernel_gops(type, K, reps);
            const size_t rsz = ggml_cpu_repack_size(a);
            void * rbuf = rsz ? aligned_alloc(64, GGML_PAD(rsz, 64)) : NULL;
            double k1 = 0.0, kr = 0.0;
            if (rbuf && ggml_cpu_repack(a, rbuf)) {
                kr = kernel_rp_gops(a, b, reps);
                k1 = kernel1_gbs(a, (const float *) b->data, reps);
                ggml_cpu_repack_clear(a);
            }
            for (int nth = 1; nth <= max_threads; nth++) {
                double oc, ow, nc, nw, rc = 0, rw = 0;
                ggml_gemm_set_enabled(false);
                time_graph(ctx, gf, nth, reps, &oc, &ow);
                ggml_gemm_set_enabled(true);
                time_graph(ctx, gf, nth, reps, &nc, &nw);
                if (rbuf && ggml_cpu_repack(a, rbuf)) {
                    time_graph(ctx, gf, nth, reps, &rc, &rw);
                    ggml_cpu_repack_clear(a);
                }
                const double best = rc > 0 && rc < nc ? rc : nc;
                printf("| %s | %ldx%ld | %.0f | %.0f | %.1f | %d | %.1f | %.1f | %.1f | %.2fx | %.1f | %.1f | %.1f |\n",
                       ggml_type_name(type), K, M, kg, kr, k1, nth, ops / oc, ops / nc, rc > 0 ? ops / rc : 0.0, oc / best,
                       ops / ow, ops / nw, rw > 0 ? ops / rw : 0.0);
                fflush(stdout);
            }
            free(rbuf);
            ggml_free(ctx);
        }
    }
    return 0;
}
