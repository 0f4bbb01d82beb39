// bench_moe.c — mul_mat_id against mul_mat at one expert shape: is a prompt's expert matmul as
// fast per multiply-add as a dense one? Quantized experts [K, M, n_as] (repacked as the model
// loader does), b [K, n_b, N], ids [n_used, N] chosen per token from mildly skewed random router
// logits (a few experts preferred, as trained routers do); the dense references are mul_mat of one
// [K, M] matrix by N columns and by the mean number of pairs an expert meets.
//
//   cc -O2 -std=c11 -D_GNU_SOURCE -I ggml/include -I include -I ggml/src scripts/bench_moe.c
//      build/ctest/libllama_static.a -lm -lpthread -o /tmp/bench_moe  (one command; a -DLLAMA_BUILD_TESTS=ON build)
//   /tmp/bench_moe q4_K 2048 1024 64 8 1 512 5 2     # TYPE K M n_as n_used n_b N reps threads
//
// Figures: G multiply-adds per second (K*M*pairs / time), best of reps, by CPU time per thread
// and by wall time (on a shared machine wall time counts other processes' turns: trust cpu).
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

static void time_graph(struct ggml_context * ctx, struct ggml_cgraph * gf, int nth, int reps, double * cpu, double * wall) {
    *cpu = *wall = 1e30;
    ggml_graph_compute_with_ctx(ctx, gf, nth);
    for (int r = 0; r < reps; r++) {
        const double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
        ggml_graph_compute_with_ctx(ctx, gf, nth);
        const double c = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / nth, w = clock_s(CLOCK_MONOTONIC) - w0;
        if (c < *cpu) *cpu = c;
        if (w < *wall) *wall = w;
    }
}

static void fill_quant(struct ggml_tensor * t, int64_t rows) {
    const int64_t K = t->ne[0];
    float * f = malloc(sizeof(float) * (size_t) (K * rows));
    for (int64_t i = 0; i < K * rows; i++) f[i] = frand();
    ggml_quantize_chunk(t->type, f, t->data, 0, rows, K, NULL);
    free(f);
}

int main(int argc, char ** argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: bench_moe TYPE K M n_as n_used n_b N reps threads\n");
        return 2;
    }
    enum ggml_type type = GGML_TYPE_COUNT;
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        if (ggml_type_name((enum ggml_type) t) && strcmp(ggml_type_name((enum ggml_type) t), argv[1]) == 0) type = t;
    }
    const int64_t K = atoll(argv[2]), M = atoll(argv[3]), n_as = atoll(argv[4]), n_used = atoll(argv[5]);
    const int64_t n_b = atoll(argv[6]), N = atoll(argv[7]);
    const int reps = atoi(argv[8]), max_threads = atoi(argv[9]);
    if (type == GGML_TYPE_COUNT) {
        fprintf(stderr, "unknown type %s\n", argv[1]);
        return 2;
    }
    const int64_t n_pairs = n_used * N;
    const size_t wbytes = ggml_row_size(type, K) * (size_t) (M * n_as);
    struct ggml_init_params ip = { .mem_size = wbytes + ggml_row_size(type, K) * (size_t) M +
                                       sizeof(float) * (size_t) (K * n_b * N + M * n_pairs + K * N * 2 + 2 * M * N + 64) +
                                       sizeof(int32_t) * (size_t) n_pairs + 64 * ggml_tensor_overhead() + (64u << 20),
                                   .mem_buffer = NULL,
                                   .no_alloc = false };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * as = ggml_new_tensor_3d(ctx, type, K, M, n_as);
    fill_quant(as, M * n_as);
    struct ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, n_b, N);
    for (int64_t i = 0; i < K * n_b * N; i++) ((float *) b->data)[i] = frand();
    struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n_used, N);
    // skewed routing: logit_e = bias_e + noise, bias from a fixed draw (some experts popular)
    float *bias = malloc(sizeof(float) * (size_t) n_as), *lg = malloc(sizeof(float) * (size_t) n_as);
    for (int64_t e = 0; e < n_as; e++) bias[e] = 0.5f * frand();
    int64_t * count = calloc((size_t) n_as, sizeof(int64_t));
    for (int64_t t = 0; t < N; t++) {
        for (int64_t e = 0; e < n_as; e++) lg[e] = bias[e] + 2.0f * frand();
        for (int64_t j = 0; j < n_used; j++) {
            int64_t best = 0;
            for (int64_t e = 1; e < n_as; e++)
                if (lg[e] > lg[best]) best = e;
            ((int32_t *) ids->data)[t * n_used + j] = (int32_t) best;
            count[best]++;
            lg[best] = -1e30f;
        }
    }
    int64_t cmin = n_pairs, cmax = 0, act = 0;
    for (int64_t e = 0; e < n_as; e++) {
        if (count[e] < cmin) cmin = count[e];
        if (count[e] > cmax) cmax = count[e];
        act += count[e] > 0;
    }
    printf(
        "# %s K=%lld M=%lld experts=%lld used=%lld n_b=%lld N=%lld: pairs per expert min %lld max %lld mean %.1f, %lld active\n",
        argv[1], (long long) K, (long long) M, (long long) n_as, (long long) n_used, (long long) n_b, (long long) N,
        (long long) cmin, (long long) cmax, (double) n_pairs / (double) n_as, (long long) act);
    struct ggml_tensor * y = ggml_mul_mat_id(ctx, as, b, ids);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);

    // dense references: one [K, M] matrix times N columns, and times the mean pairs per expert
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, type, K, M);
    fill_quant(a, M);
    const int64_t n_mean = GGML_MAX(1, n_pairs / n_as);
    struct ggml_tensor * bd = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
    for (int64_t i = 0; i < K * N; i++) ((float *) bd->data)[i] = frand();
    struct ggml_tensor * bm = ggml_view_2d(ctx, bd, K, n_mean, bd->nb[1], 0);
    struct ggml_cgraph *gd = ggml_new_graph(ctx), *gm = ggml_new_graph(ctx);
    ggml_build_forward_expand(gd, ggml_mul_mat(ctx, a, bd));
    ggml_build_forward_expand(gm, ggml_mul_mat(ctx, a, bm));

    // repack as the loader does: a flat [K, M * n_as] header over the experts, its copy handed over
    struct ggml_tensor flat = *as;
    flat.ne[1] = M * n_as;
    flat.ne[2] = 1;
    flat.nb[2] = flat.nb[3] = flat.nb[1] * (size_t) flat.ne[1];
    const size_t rs = ggml_cpu_repack_size(&flat), rsd = ggml_cpu_repack_size(a);
    void *rbuf = rs ? aligned_alloc(64, GGML_PAD(rs, 64)) : NULL, *rbufd = rsd ? aligned_alloc(64, GGML_PAD(rsd, 64)) : NULL;
    if (rbuf && ggml_cpu_repack(&flat, rbuf)) as->extra = flat.extra;
    if (rbufd) ggml_cpu_repack(a, rbufd);
    printf("# repacked: experts %s, dense %s\n", as->extra ? "yes" : "no", a->extra ? "yes" : "no");
    printf("| threads | mul_mat_id cpu | wall | dense N=%lld cpu | wall | dense N=%lld cpu | wall |\n", (long long) N,
           (long long) n_mean);
    printf("|---|---|---|---|---|---|---|\n");
    for (int nth = 1; nth <= max_threads; nth++) {
        double ic, iw, dc, dw, mc, mw;
        time_graph(ctx, gf, nth, reps, &ic, &iw);
        time_graph(ctx, gd, nth, reps, &dc, &dw);
        time_graph(ctx, gm, nth, reps, &mc, &mw);
        const double ops_id = (double) K * M * n_pairs * 1e-9, ops_d = (double) K * M * N * 1e-9,
                     ops_m = (double) K * M * n_mean * 1e-9;
        printf("| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", nth, ops_id / ic, ops_id / iw, ops_d / dc, ops_d / dw,
               ops_m / mc, ops_m / mw);
        fflush(stdout);
    }
    free(bias);
    free(lg);
    free(count);
    ggml_free(ctx);
    free(rbuf);
    free(rbufd);
    return 0;
}
