// test_gemm.c — the GEMM path of mul_mat (ggml-cpu/gemm.h) against the per-column vec_dot path:
//   1. per kernel set and type: panels + activation groups + micro-kernel, tile by tile, equal to
//      the portable vec_dot of the same quantized rows within float rounding (the integer sums
//      are the same, only the order of float additions differs);
//   2. the portable packer's panels dequantize to the reference dequantizer's values, and every
//      set's packer writes the portable one's bytes for a whole panel;
//   3. ggml_mul_mat through the graph with the GEMM on and off (ragged M and N, broadcast
//      batches, strided b, 1-3 threads) agree;
//   4. a column multiplied alone gives the same bits as in a batch;
//   5. weights repacked at load give the same bits;
//   6. q8_0 at F32 precision (ggml_mul_mat_set_prec, the lm head): within 16-bit activation and
//      float rounding of the dequantized weights' double product, the same bits for stored and
//      repacked weights,
//      every N and thread count.
#define _POSIX_C_SOURCE 200112L
#include "ggml-cpu/gemm.h"
#include "ggml-cpu/repack.h"
#include "ggml.h"
#include "ggml-cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_fail = 0;
static int n_check = 0;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        n_check++;                                               \
        if (!(cond)) {                                           \
            n_fail++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint32_t rng_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t) (rng_state >> 16);
}
// Roughly normal values times scale, with an occasional outlier (large block scales).
static float rng_value(float scale) {
    float v = 0.0f;
    for (int i = 0; i < 4; i++) v += (float) (rng_u32() & 0xFFFFFF) / (float) 0x1000000 - 0.5f;
    if ((rng_u32() & 127) == 0) v *= 8.0f;
    return v * scale;
}

// One row of K values in type: its reference quantizer, or for the codebook types (no
// quantizer without an importance matrix) random blocks with an fp16 super-block scale about
// |x|'s size / 32 (IQ1_M keeps its scale in the top nibbles of its four scale words).
static void quantize_row(enum ggml_type type, const float * x, void * dst, int64_t K) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    if (tt->from_float_ref) {
        tt->from_float_ref(x, dst, K);
        return;
    }
    unsigned char * p = dst;
    const int64_t nb = K / tt->blck_size;
    for (size_t i = 0; i < (size_t) nb * tt->type_size; i++) p[i] = (unsigned char) rng_u32();
    for (int64_t b = 0; b < nb; b++) {
        const ggml_fp16_t h = ggml_fp32_to_fp16(fabsf(x[b * tt->blck_size]) / 32.0f + 1e-3f);
        unsigned char * blk = p + (size_t) b * tt->type_size;
        if (type == GGML_TYPE_IQ1_M) {
            uint16_t sc[4];
            memcpy(sc, blk + 48, sizeof(sc));
            for (int k = 0; k < 4; k++) sc[k] = (uint16_t) ((sc[k] & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12));
            memcpy(blk + 48, sc, sizeof(sc));
        } else {
            memcpy(blk, &h, sizeof(h));
        }
    }
}

static const enum ggml_type gemm_types[] = {
    GGML_TYPE_Q4_0,  GGML_TYPE_Q4_1,    GGML_TYPE_Q5_0,  GGML_TYPE_Q5_1,   GGML_TYPE_Q8_0,   GGML_TYPE_Q2_K,    GGML_TYPE_Q3_K,
    GGML_TYPE_Q4_K,  GGML_TYPE_Q5_K,    GGML_TYPE_Q6_K,  GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
    GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M,
};
#define N_TYPES (sizeof(gemm_types) / sizeof(gemm_types[0]))

static void * aligned(size_t n) {
    void * p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memset(p, 0, n);
    return p;
}

// 1. Tiles of every available kernel set against vec_dot (portable) of the same quantized data.
static void check_kernels(enum ggml_type type, int64_t K, int M, int N) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu_variant(type, GGML_CPU_KERNELS_PORTABLE);
    const struct ggml_gemm_traits * gen = ggml_gemm_get_traits_variant(type, GGML_CPU_KERNELS_PORTABLE);
    CHECK(gen != NULL, "%s: no portable GEMM traits", ggml_type_name(type));
    if (!gen) return;
    const enum ggml_type at = gen->act_type;
    CHECK(at == tc->vec_dot_type, "%s: act_type %s != vec_dot_type %s", ggml_type_name(type), ggml_type_name(at),
          ggml_type_name(tc->vec_dot_type));
    const struct ggml_type_traits_cpu * atc = ggml_get_type_traits_cpu_variant(at, GGML_CPU_KERNELS_PORTABLE);

    const size_t wrow = ggml_row_size(type, K), arow = ggml_row_size(at, K);
    char * w = aligned(wrow * (size_t) M);
    char * qa = aligned(arow * (size_t) N);
    float * x = malloc(sizeof(float) * (size_t) K);
    float * wabs = malloc(sizeof(float) * (size_t) K * (size_t) M);
    float * aabs = malloc(sizeof(float) * (size_t) K * (size_t) N);
    for (int r = 0; r < M; r++) {
        const float sc = (r % 5 == 0) ? 0.01f : 1.0f; // rows of different magnitude
        for (int64_t k = 0; k < K; k++) x[k] = rng_value(sc);
        quantize_row(type, x, w + (size_t) r * wrow, K);
        tt->to_float(w + (size_t) r * wrow, wabs + (size_t) r * K, K);
    }
    for (int c = 0; c < N; c++) {
        for (int64_t k = 0; k < K; k++) x[k] = rng_value(c % 3 == 0 ? 10.0f : 1.0f);
        if (c == 2)
            for (int64_t k = 0; k < K; k++) x[k] = 0.0f; // an all-zero column
        atc->from_float(x, qa + (size_t) c * arow, K);
        ggml_get_type_traits(at)->to_float(qa + (size_t) c * arow, aabs + (size_t) c * K, K);
    }
    // reference: portable vec_dot, and the magnitude sum |w||a| that bounds rounding error
    float * ref = malloc(sizeof(float) * (size_t) M * (size_t) N);
    double * mag = malloc(sizeof(double) * (size_t) M * (size_t) N);
    for (int c = 0; c < N; c++)
        for (int r = 0; r < M; r++) {
            tc->vec_dot((int) K, &ref[c * M + r], w + (size_t) r * wrow, qa + (size_t) c * arow);
            double m = 0;
            for (int64_t k = 0; k < K; k++) m += fabs((double) wabs[(size_t) r * K + k] * aabs[(size_t) c * K + k]);
            mag[c * M + r] = m;
        }

    float * out_avx2 = NULL; // AVX-VNNI tiles share AVX2's layouts, integer sums and float steps: same bits
    for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
        const struct ggml_gemm_traits * gt = ggml_gemm_get_traits_variant(type, (enum ggml_cpu_kernel_variant) v);
        if (!gt) continue;
        const int ngroups = (N + GGML_GEMM_NR - 1) / GGML_GEMM_NR, npanels = (M + GGML_GEMM_MR - 1) / GGML_GEMM_MR;
        char * groups = aligned(ggml_gemm_group_bytes(gt, K) * (size_t) ngroups);
        char * panel = aligned(ggml_gemm_panel_bytes(gt, K));
        float * out = malloc(sizeof(float) * (size_t) M * (size_t) N);
        for (size_t i = 0; i < (size_t) M * N; i++) out[i] = NAN;
        // groups through the set's act_group; byte-equal to the portable per-column filler
        char * ref_groups = aligned(ggml_gemm_group_bytes(gt, K) * (size_t) ngroups);
        for (int g = 0; g < ngroups; g++) {
            const int nc = N - g * GGML_GEMM_NR < GGML_GEMM_NR ? N - g * GGML_GEMM_NR : GGML_GEMM_NR;
            gt->act_group(gt, qa + (size_t) g * GGML_GEMM_NR * arow, arow, nc, K,
                          groups + (size_t) g * ggml_gemm_group_bytes(gt, K));
            for (int c = 0; c < nc; c++) {
                ggml_gemm_act_generic(gt, qa + (size_t) (g * GGML_GEMM_NR + c) * arow, K, c,
                                      ref_groups + (size_t) g * ggml_gemm_group_bytes(gt, K));
            }
        }
        CHECK(memcmp(groups, ref_groups, ggml_gemm_group_bytes(gt, K) * (size_t) ngroups) == 0,
              "%s kernels=%s K=%lld N=%d: activation groups differ from the portable filler", ggml_type_name(type),
              ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v), (long long) K, N);
        free(ref_groups);
        for (int p = 0; p < npanels; p++) {
            const int nr = M - p * GGML_GEMM_MR < GGML_GEMM_MR ? M - p * GGML_GEMM_MR : GGML_GEMM_MR;
            gt->pack(gt, w + (size_t) p * GGML_GEMM_MR * wrow, wrow, nr, K, panel);
            for (int g = 0; g < ngroups; g++) {
                const int nc = N - g * GGML_GEMM_NR < GGML_GEMM_NR ? N - g * GGML_GEMM_NR : GGML_GEMM_NR;
                gt->kernel(gt, K, panel, groups + (size_t) g * ggml_gemm_group_bytes(gt, K),
                           out + (size_t) g * GGML_GEMM_NR * M + p * GGML_GEMM_MR, M, nr, nc);
            }
        }
        // each column alone (a 1-column group through the 1-column kernel) gives the same bits
        {
            char * one = aligned(ggml_gemm_group_bytes(gt, K));
            float * col = malloc(sizeof(float) * GGML_GEMM_MR);
            int differ = 0;
            for (int c = 0; c < N; c++) {
                memset(one, 0, ggml_gemm_group_bytes(gt, K));
                gt->act_group(gt, qa + (size_t) c * arow, arow, 1, K, one);
                for (int p = 0; p < npanels; p++) {
                    const int nr = M - p * GGML_GEMM_MR < GGML_GEMM_MR ? M - p * GGML_GEMM_MR : GGML_GEMM_MR;
                    gt->pack(gt, w + (size_t) p * GGML_GEMM_MR * wrow, wrow, nr, K, panel);
                    gt->kernel(gt, K, panel, one, col, GGML_GEMM_MR, nr, 1);
                    differ += memcmp(col, out + (size_t) c * M + p * GGML_GEMM_MR, sizeof(float) * (size_t) nr) != 0;
                }
            }
            CHECK(differ == 0, "%s kernels=%s K=%lld: %d tiles of a lone column differ from the same column in a group",
                  ggml_type_name(type), ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v), (long long) K, differ);
            free(one);
            free(col);
        }
        int bad = 0;
        double worst = 0;
        for (int c = 0; c < N; c++)
            for (int r = 0; r < M; r++) {
                const double e = fabs((double) out[c * M + r] - ref[c * M + r]);
                const double tol = 2e-6 * mag[c * M + r] + 1e-30;
                if (!(e <= tol)) {
                    bad++;
                    if (!(e / tol <= worst)) worst = e / tol;
                }
            }
        CHECK(bad == 0, "%s kernels=%s K=%lld M=%d N=%d: %d of %d outputs off (worst %.3g x tolerance)", ggml_type_name(type),
              ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v), (long long) K, M, N, bad, M * N, worst);
        if (v == GGML_CPU_KERNELS_AVXVNNI && out_avx2 && ggml_cpu_kernel_variant_available(GGML_CPU_KERNELS_AVXVNNI)) {
            CHECK(memcmp(out, out_avx2, sizeof(float) * (size_t) M * (size_t) N) == 0,
                  "%s K=%lld M=%d N=%d: the avxvnni tiles' bits differ from avx2's", ggml_type_name(type), (long long) K, M, N);
        }
        free(groups);
        free(panel);
        if (v == GGML_CPU_KERNELS_AVX2)
            out_avx2 = out;
        else
            free(out);
    }
    free(out_avx2);
    free(w);
    free(qa);
    free(x);
    free(wabs);
    free(aabs);
    free(ref);
    free(mag);
}

// 2. Panel levels and scales of every set's packer reproduce the reference dequantizer:
//    d*(u - off) + m.
static void check_pack_values(enum ggml_type type, enum ggml_cpu_kernel_variant var) {
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits_variant(type, var);
    if (!gt) return;
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    const int64_t K = 512;
    const int nr = 11;
    const size_t wrow = ggml_row_size(type, K);
    char * w = aligned(wrow * nr);
    float *x = malloc(sizeof(float) * K), *deq = malloc(sizeof(float) * K);
    for (int r = 0; r < nr; r++) {
        for (int64_t k = 0; k < K; k++) x[k] = rng_value(1.0f) + (r % 2 ? 0.7f : 0.0f);
        quantize_row(type, x, w + (size_t) r * wrow, K);
    }
    char * panel = aligned(ggml_gemm_panel_bytes(gt, K));
    gt->pack(gt, w, wrow, nr, K, panel);
    const size_t pbb = ggml_gemm_panel_block_bytes(gt);
    int bad = 0;
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        if (r < nr) tt->to_float(w + (size_t) r * wrow, deq, K);
        for (int64_t k = 0; k < K; k++) {
            const uint8_t * pb = (const uint8_t *) panel + (size_t) (k / gt->qb) * pbb;
            const int kk = (int) (k % gt->qb);
            const int u = pb[64 * (kk / 4) + 4 * r + kk % 4];
            float d, m = 0.0f;
            memcpy(&d, pb + gt->qb * GGML_GEMM_MR + 4 * r, 4);
            if (gt->has_min) memcpy(&m, pb + gt->qb * GGML_GEMM_MR + 64 + 4 * r, 4);
            const float v = d * (float) (u - gt->off) + m;
            const float want = r < nr ? deq[k] : 0.0f;
            if (!(fabsf(v - want) <= 1e-6f * fabsf(want) + 1e-7f) || (r >= nr && (d != 0.0f || m != 0.0f))) bad++;
        }
    }
    CHECK(bad == 0, "%s kernels=%s: %d panel values differ from the reference dequantizer", ggml_type_name(type),
          ggml_cpu_kernel_variant_name(var), bad);
    // a whole panel (the sets' fast packers take only those): the portable packer's bytes
    {
        char * w16 = aligned(wrow * GGML_GEMM_MR);
        for (int r = 0; r < GGML_GEMM_MR; r++) {
            for (int64_t k = 0; k < K; k++) x[k] = rng_value(r % 3 ? 1.0f : 0.05f);
            quantize_row(type, x, w16 + (size_t) r * wrow, K);
        }
        char * want = aligned(ggml_gemm_panel_bytes(gt, K));
        gt->pack(gt, w16, wrow, GGML_GEMM_MR, K, panel);
        ggml_gemm_pack_generic(gt, w16, wrow, GGML_GEMM_MR, K, want);
        CHECK(memcmp(panel, want, ggml_gemm_panel_bytes(gt, K)) == 0,
              "%s kernels=%s: a whole panel differs from the portable packer's", ggml_type_name(type),
              ggml_cpu_kernel_variant_name(var));
        free(w16);
        free(want);
    }
    free(w);
    free(x);
    free(deq);
    free(panel);
}

// 3. mul_mat through the graph, GEMM on versus off.
static struct ggml_tensor * mm_case(struct ggml_context * ctx, enum ggml_type type, enum ggml_type btype, int64_t K, int64_t M,
                                    int64_t N, int64_t A2, int64_t B2, bool strided) {
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, type, K, M, A2);
    float * x = malloc(sizeof(float) * K);
    for (int64_t r = 0; r < M * A2; r++) {
        for (int64_t k = 0; k < K; k++) x[k] = rng_value(1.0f);
        quantize_row(type, x, (char *) a->data + r * a->nb[1], K);
    }
    free(x);
    struct ggml_tensor * b;
    if (strided) {
        // b[k, j] stored with j fastest: a transposed view, so columns are gathered element-wise
        struct ggml_tensor * bt = ggml_new_tensor_3d(ctx, btype, N, K, B2);
        b = ggml_transpose(ctx, bt);
        for (int64_t i = 0; i < N * K * B2; i++) {
            const float v = rng_value(1.0f);
            if (btype == GGML_TYPE_F32)
                ((float *) bt->data)[i] = v;
            else
                ((ggml_fp16_t *) bt->data)[i] = ggml_fp32_to_fp16(v);
        }
    } else {
        b = ggml_new_tensor_3d(ctx, btype, K, N, B2);
        for (int64_t i = 0; i < K * N * B2; i++) {
            const float v = rng_value(1.0f);
            if (btype == GGML_TYPE_F32)
                ((float *) b->data)[i] = v;
            else
                ((ggml_fp16_t *) b->data)[i] = ggml_fp32_to_fp16(v);
        }
    }
    return ggml_mul_mat(ctx, a, b);
}

static void check_mul_mat(void) {
    struct {
        enum ggml_type type, btype;
        int64_t K, M, N, A2, B2;
        bool strided;
    } cases[] = {
        { GGML_TYPE_Q4_0, GGML_TYPE_F32, 256, 70, 19, 1, 1, false },
        { GGML_TYPE_Q4_1, GGML_TYPE_F32, 576, 192, 64, 1, 1, false },
        { GGML_TYPE_Q8_0, GGML_TYPE_F32, 320, 33, 4, 1, 1, false },
        { GGML_TYPE_Q8_0, GGML_TYPE_F32, 256, 40, 13, 2, 4, true },
        { GGML_TYPE_Q4_K, GGML_TYPE_F32, 512, 50, 21, 1, 2, false },
        { GGML_TYPE_Q6_K, GGML_TYPE_F32, 256, 17, 9, 1, 1, true },
        { GGML_TYPE_Q5_0, GGML_TYPE_F32, 128, 16, 8, 1, 1, false },
        { GGML_TYPE_Q3_K, GGML_TYPE_F32, 256, 31, 12, 1, 1, false },
        { GGML_TYPE_Q2_K, GGML_TYPE_F32, 256, 31, 12, 1, 1, false },
        { GGML_TYPE_Q5_K, GGML_TYPE_F32, 256, 31, 7, 1, 1, false },
        { GGML_TYPE_Q5_1, GGML_TYPE_F32, 64, 300, 40, 1, 1, false },
        { GGML_TYPE_IQ2_XXS, GGML_TYPE_F32, 512, 50, 21, 1, 1, false },
        { GGML_TYPE_IQ2_XS, GGML_TYPE_F32, 256, 33, 9, 1, 2, true },
        { GGML_TYPE_IQ2_S, GGML_TYPE_F32, 256, 31, 12, 1, 1, false },
        { GGML_TYPE_IQ3_XXS, GGML_TYPE_F32, 256, 40, 13, 1, 1, false },
        { GGML_TYPE_IQ3_S, GGML_TYPE_F32, 512, 17, 30, 1, 1, false },
        { GGML_TYPE_IQ1_S, GGML_TYPE_F32, 256, 31, 12, 1, 1, false },
        { GGML_TYPE_IQ1_M, GGML_TYPE_F32, 256, 48, 3, 1, 1, false },
    };
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
        for (int nth = 1; nth <= 3; nth++) {
            struct ggml_init_params ip = { 64u * 1024 * 1024, NULL, false };
            struct ggml_context * ctx = ggml_init(ip);
            struct ggml_tensor * out = mm_case(ctx, cases[ci].type, cases[ci].btype, cases[ci].K, cases[ci].M, cases[ci].N,
                                               cases[ci].A2, cases[ci].B2, cases[ci].strided);
            CHECK(out != NULL, "mul_mat constructor");
            if (!out) {
                ggml_free(ctx);
                continue;
            }
            struct ggml_cgraph * gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, out);
            const size_t n = (size_t) ggml_nelements(out);
            float * want = malloc(n * sizeof(float));
            ggml_gemm_set_enabled(false);
            CHECK(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS, "vec_dot compute");
            memcpy(want, out->data, n * sizeof(float));
            memset(out->data, 0xFF, n * sizeof(float)); // NaN: every output must be written
            ggml_gemm_set_enabled(true);
            CHECK(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS, "gemm compute");
            double scale = 0;
            for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
            int bad = 0;
            for (size_t i = 0; i < n; i++) {
                const float got = ((float *) out->data)[i];
                if (!(fabs(got - want[i]) <= 1e-5 * scale)) bad++;
            }
            CHECK(bad == 0, "mul_mat %s x %s K=%lld M=%lld N=%lld B2=%lld nth=%d: %d of %zu outputs differ",
                  ggml_type_name(cases[ci].type), ggml_type_name(cases[ci].btype), (long long) cases[ci].K,
                  (long long) cases[ci].M, (long long) cases[ci].N, (long long) cases[ci].B2, nth, bad, n);
            free(want);
            ggml_free(ctx);
        }
}

// 4. A column's output through the graph is bit for bit the same whether it is multiplied
//    alone (token generation) or in a batch (prompt processing).
static void check_batch_independence(void) {
    const enum ggml_type types[] = { GGML_TYPE_Q4_0,    GGML_TYPE_Q4_1,   GGML_TYPE_Q8_0,    GGML_TYPE_Q4_K,   GGML_TYPE_Q6_K,
                                     GGML_TYPE_Q5_0,    GGML_TYPE_Q5_1,   GGML_TYPE_Q5_K,    GGML_TYPE_Q2_K,   GGML_TYPE_Q3_K,
                                     GGML_TYPE_IQ4_NL,  GGML_TYPE_IQ4_XS, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S,
                                     GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S,  GGML_TYPE_IQ1_S,   GGML_TYPE_IQ1_M };
    const int64_t K = 512, M = 70, N = 13;
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++)
        for (int nth = 1; nth <= 2; nth++) {
            struct ggml_init_params ip = { 32u * 1024 * 1024, NULL, false };
            struct ggml_context * ctx = ggml_init(ip);
            struct ggml_tensor * full = mm_case(ctx, types[ti], GGML_TYPE_F32, K, M, N, 1, 1, false);
            struct ggml_tensor *a = full->src[0], *b = full->src[1];
            struct ggml_cgraph * gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, full);
            struct ggml_tensor * cols[13];
            for (int64_t j = 0; j < N; j++) {
                cols[j] = ggml_mul_mat(ctx, a, ggml_view_2d(ctx, b, K, 1, b->nb[1], (size_t) j * b->nb[1]));
                ggml_build_forward_expand(gf, cols[j]);
            }
            CHECK(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS, "compute");
            int differ = 0;
            for (int64_t j = 0; j < N; j++) {
                differ += memcmp(cols[j]->data, (char *) full->data + j * full->nb[1], (size_t) M * sizeof(float)) != 0;
            }
            CHECK(differ == 0, "mul_mat %s nth=%d: %d of %lld columns differ between the batch and one-column products",
                  ggml_type_name(types[ti]), nth, differ, (long long) N);
            ggml_free(ctx);
        }
}

// out = a . b through the selected set's tiles on the stored layout (pack + kernel, no graph):
// what mul_mat computes for repacked weights must be these bits, whichever path stored weights
// take (a set without fast packers keeps them on vec_dot).
static void tiles_reference(const struct ggml_tensor * a, const struct ggml_tensor * b, float * out) {
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(a->type);
    const struct ggml_type_traits_cpu * atc = ggml_get_type_traits_cpu(gt->act_type);
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    const size_t arow = ggml_row_size(gt->act_type, K), gb = ggml_gemm_group_bytes(gt, K);
    char *q = aligned(arow * GGML_GEMM_NR), *group = aligned(gb), *panel = aligned(ggml_gemm_panel_bytes(gt, K));
    float * tile = malloc(sizeof(float) * GGML_GEMM_MR * GGML_GEMM_NR);
    for (int64_t g = 0; g * GGML_GEMM_NR < N; g++) {
        const int nc = (int) (N - g * GGML_GEMM_NR < GGML_GEMM_NR ? N - g * GGML_GEMM_NR : GGML_GEMM_NR);
        for (int c = 0; c < nc; c++)
            atc->from_float((const float *) ((const char *) b->data + (g * GGML_GEMM_NR + c) * b->nb[1]), q + (size_t) c * arow,
                            K);
        memset(group, 0, gb);
        gt->act_group(gt, q, arow, nc, K, group);
        for (int64_t p = 0; p * GGML_GEMM_MR < M; p++) {
            const int nr = (int) (M - p * GGML_GEMM_MR < GGML_GEMM_MR ? M - p * GGML_GEMM_MR : GGML_GEMM_MR);
            gt->pack(gt, (const char *) a->data + p * GGML_GEMM_MR * a->nb[1], a->nb[1], nr, K, panel);
            gt->kernel(gt, K, panel, group, tile, GGML_GEMM_MR, nr, nc);
            for (int c = 0; c < nc; c++)
                memcpy(out + (g * GGML_GEMM_NR + c) * M + p * GGML_GEMM_MR, tile + c * GGML_GEMM_MR, sizeof(float) * (size_t) nr);
        }
    }
    free(q);
    free(group);
    free(panel);
    free(tile);
}

// 5. Weights repacked at load (repack.h): same bytes as stored, same bits out as the stored
//    layout's tiles, for every N.
static void check_repack(void) {
    const enum ggml_type types[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q8_0,   GGML_TYPE_Q4_K,
                                     GGML_TYPE_Q6_K, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,   GGML_TYPE_Q5_K,
                                     GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS };
    // N = 2 and 10 end in a 2-column group: the tiles of one and two columns split their sums
    // over two chains (gemm-avx512.c); 2..16: the columns of a batched decode step (issue #37)
    const int64_t M = 48, Ns[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++)
        for (size_t ni = 0; ni < sizeof(Ns) / sizeof(Ns[0]); ni++) {
            const bool k3 = types[ti] == GGML_TYPE_Q3_K, xs = types[ti] == GGML_TYPE_IQ4_XS;
            const bool kq = types[ti] == GGML_TYPE_Q4_K || types[ti] == GGML_TYPE_Q5_K || k3 || xs;
            const int64_t K = kq || ggml_blck_size(types[ti]) == QK_K ? 512 : 320;
        // q4_K keeps d, dmin and its decoded sub-block scales per superblock: 2368 bytes per 16 rows
        // (q5_K: and 8 x 64 bytes of fifth bits; q3_K: 1824, its scales decoded and its third
        // bits in 4 of every 8; iq4_xs: 2208, its scales decoded)
            const size_t want_size = kq ? 64 +
                    (size_t) (M / 16) * (size_t) (K / 256) *
                        (k3                                ? 1824
                             : xs                          ? 2208
                             : types[ti] == GGML_TYPE_Q5_K ? 2880
                                                           : 2368)
                                        : 0;
            for (int nth = 1; nth <= 2; nth++) {
                struct ggml_init_params ip = { 16u * 1024 * 1024, NULL, false };
                struct ggml_context * ctx = ggml_init(ip);
                struct ggml_tensor * out = mm_case(ctx, types[ti], GGML_TYPE_F32, K, M, Ns[ni], 1, 1, false);
                struct ggml_tensor * a = out->src[0];
                struct ggml_cgraph * gf = ggml_new_graph(ctx);
                ggml_build_forward_expand(gf, out);
                const size_t n = (size_t) ggml_nelements(out);
                float * want = malloc(n * sizeof(float));
                CHECK(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS, "compute");
                const size_t sz = ggml_cpu_repack_size(a);
                const bool avail = ggml_gemm_get_traits(types[ti]) && ggml_gemm_get_traits(types[ti])->kernel_repacked;
                if (avail) {
                    tiles_reference(a, out->src[1], want);
                // stored weights on the GEMM path give those bits themselves
                    CHECK(!ggml_gemm_get_traits(types[ti])->accelerated || memcmp(want, out->data, n * sizeof(float)) == 0,
                          "%s N=%lld: stored weights' GEMM differs from its tiles", ggml_type_name(types[ti]),
                          (long long) Ns[ni]);
                } else {
                    memcpy(want, out->data, n * sizeof(float));
                }
                CHECK(sz == (avail ? (kq ? want_size : ggml_nbytes(a) + 64) : 0), "%s: repack size %zu for %zu bytes",
                      ggml_type_name(types[ti]), sz, ggml_nbytes(a));
                if (sz) {
                    void * buf = aligned(sz);
                    CHECK(ggml_cpu_repack(a, buf), "repack");
                    CHECK(ggml_cpu_repack_panels(a) != NULL, "repacked panels");
                    memset(out->data, 0xFF, n * sizeof(float));
                    CHECK(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS, "compute repacked");
                    CHECK(memcmp(want, out->data, n * sizeof(float)) == 0, "%s N=%lld nth=%d: repacked weights change the result",
                          ggml_type_name(types[ti]), (long long) Ns[ni], nth);
                // the copy is used even with the GEMM switched off (its loader may drop the stored bytes)
                    ggml_gemm_set_enabled(false);
                    memset(out->data, 0xFF, n * sizeof(float));
                    CHECK(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS, "compute repacked, gemm off");
                    CHECK(memcmp(want, out->data, n * sizeof(float)) == 0, "%s N=%lld: repacked copy not used with the GEMM off",
                          ggml_type_name(types[ti]), (long long) Ns[ni]);
                    ggml_gemm_set_enabled(true);
                    ggml_cpu_repack_clear(a);
                    CHECK(a->extra == NULL && ggml_cpu_repack_panels(a) == NULL, "repack clear");
                    free(buf);
                }
                free(want);
                ggml_free(ctx);
            }
        }
    // a whole set at once, on 2 threads, repeats and NULLs skipped; then freed
    {
        struct ggml_init_params ip = { 16u * 1024 * 1024, NULL, false };
        struct ggml_context * ctx = ggml_init(ip);
        struct ggml_tensor * outs[3];
        struct ggml_tensor * ws[6];
        struct ggml_cgraph * gf = ggml_new_graph(ctx);
        for (int i = 0; i < 3; i++) {
            outs[i] = mm_case(ctx, types[i], GGML_TYPE_F32, 256, 32, 1, 1, 1, false);
            ws[i] = outs[i]->src[0];
            ggml_build_forward_expand(gf, outs[i]);
        }
        ws[3] = ws[0];
        ws[4] = NULL;
        ws[5] = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 32);
        CHECK(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS, "compute");
        float want[3][32];
        const bool avail = ggml_gemm_get_traits(GGML_TYPE_Q4_0) && ggml_gemm_get_traits(GGML_TYPE_Q4_0)->kernel_repacked;
        for (int i = 0; i < 3; i++) {
            if (avail)
                tiles_reference(ws[i], outs[i]->src[1], want[i]);
            else
                memcpy(want[i], outs[i]->data, sizeof(want[i]));
        }
        void * buf = ggml_cpu_repack_all(ws, 6, 2);
        CHECK((buf != NULL) == avail, "repack_all");
        if (buf) {
            for (int i = 0; i < 3; i++) CHECK(ggml_cpu_repack_panels(ws[i]) != NULL, "tensor %d repacked", i);
            CHECK(ws[5]->extra == NULL, "f32 left alone");
            CHECK(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS, "compute repacked");
            for (int i = 0; i < 3; i++) CHECK(memcmp(want[i], outs[i]->data, sizeof(want[i])) == 0, "repack_all: tensor %d", i);
            ggml_cpu_repack_free(ws, 6, buf);
            for (int i = 0; i < 3; i++) CHECK(ws[i]->extra == NULL, "tensor %d released", i);
        }
        ggml_free(ctx);
    }
    // a fused copy made of parts (model.c: Q, K, V) is byte for byte the copy of the matrix the
    // parts stack into; parts that do not fit are refused
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        struct ggml_init_params ipf = { 8u * 1024 * 1024, NULL, false };
        struct ggml_context * ctx = ggml_init(ipf);
        struct ggml_tensor * out = mm_case(ctx, types[ti], GGML_TYPE_F32, 256, 80, 1, 1, 1, false);
        struct ggml_tensor * a = out->src[0];
        const size_t n = ggml_cpu_repack_size(a);
        if (n == 0) {
            ggml_free(ctx);
            continue; // no repacked layout under this kernel set
        }
        struct ggml_tensor * parts[3] = {
            ggml_view_2d(ctx, a, 256, 48, a->nb[1], 0),
            ggml_view_2d(ctx, a, 256, 16, a->nb[1], 48 * a->nb[1]),
            ggml_view_2d(ctx, a, 256, 16, a->nb[1], 64 * a->nb[1]),
        };
        struct ggml_tensor * f = ggml_new_tensor_2d(ctx, types[ti], 256, 80);
        void * whole = aligned_alloc(64, GGML_PAD(n, 64));
        void * fused = aligned_alloc(64, GGML_PAD(n, 64));
        CHECK(ggml_cpu_repack(a, whole), "%s: repack whole", ggml_type_name(types[ti]));
        CHECK(ggml_cpu_repack_parts(f, parts, 3, fused), "%s: repack parts", ggml_type_name(types[ti]));
        const size_t pb = ggml_cpu_repack_panel_bytes(a) * (size_t) (80 / GGML_GEMM_MR);
        CHECK(ggml_cpu_repack_panels(a) && ggml_cpu_repack_panels(f) && pb > 0 && pb < n &&
                  memcmp(ggml_cpu_repack_panels(a), ggml_cpu_repack_panels(f), pb) == 0,
              "%s: fused copy differs from the whole matrix' copy", ggml_type_name(types[ti]));
        CHECK(!ggml_cpu_repack_parts(f, parts, 2, fused), "%s: rows short of t's refused", ggml_type_name(types[ti]));
        struct ggml_tensor * odd = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 16);
        struct ggml_tensor * mixed[3] = { parts[0], parts[1], odd };
        CHECK(!ggml_cpu_repack_parts(f, mixed, 3, fused), "%s: a part of another type refused", ggml_type_name(types[ti]));
        ggml_cpu_repack_clear(a);
        ggml_cpu_repack_clear(f);
        free(whole);
        free(fused);
        ggml_free(ctx);
    }
    // shapes it declines: rows not a multiple of 16, other types
    struct ggml_init_params ip = { 1u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    CHECK(ggml_cpu_repack_size(ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 20)) == 0, "M %% 16 != 0 declined");
    CHECK(ggml_cpu_repack_size(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 64, 32)) == 0, "f16 declined");
    CHECK(ggml_cpu_repack_size(ggml_new_tensor_3d(ctx, GGML_TYPE_Q8_0, 64, 32, 2)) == 0, "3D declined");
    ggml_free(ctx);
}

// 6. q8_0 weights at F32 precision (matmul-float.h): 16-bit activations, so the result is the
//    double product of the dequantized rows within their rounding and F32's; the bits do not
//    depend on repacking, N, a column's place or the thread count.
static void check_prec_f32(void) {
    // 2..16 and more: the lm head of a batched decode step (several columns per panel pass, AVX-512)
    const int64_t K = 320, M = 48 + 16 * 2, Ns[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 40 };
    const struct ggml_type_traits * tt = ggml_get_type_traits(GGML_TYPE_Q8_0);
    struct ggml_init_params ip = { 64u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * big = mm_case(ctx, GGML_TYPE_Q8_0, GGML_TYPE_F32, K, M, 40, 1, 1, false);
    struct ggml_tensor *a = big->src[0], *b40 = big->src[1];
    ggml_mul_mat_set_prec(big, GGML_PREC_F32);
    CHECK(big->op_params[0] == GGML_PREC_F32, "prec stored");
    float * deq = malloc(sizeof(float) * (size_t) (K * M));
    for (int64_t r = 0; r < M; r++) tt->to_float((const char *) a->data + r * a->nb[1], deq + r * K, K);
    float * want = malloc(sizeof(float) * (size_t) (M * 40));
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, big);
    CHECK(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS, "compute prec f32");
    memcpy(want, big->data, sizeof(float) * (size_t) (M * 40));
    double worst = 0.0, worst_default = 0.0;
    for (int64_t j = 0; j < 40; j++)
        for (int64_t r = 0; r < M; r++) {
        // allowed: 16-bit activation rounding (half a step of amax/32767 per block) and F32 rounding
            double ref = 0.0, mag = 0.0, q16 = 0.0;
            const float * bj = (const float *) b40->data + j * K;
            for (int64_t u = 0; u < K / 32; u++) {
                double amax = 0.0, wsum = 0.0;
                for (int64_t k = 32 * u; k < 32 * u + 32; k++) {
                    ref += (double) deq[r * K + k] * bj[k];
                    mag += fabs((double) deq[r * K + k] * bj[k]);
                    amax = fmax(amax, fabs(bj[k]));
                    wsum += fabs(deq[r * K + k]);
                }
                q16 += wsum * amax / 32767.0 * 0.5 * 1.001;
            }
            const double e = fabs(want[j * M + r] - ref) / (q16 + mag * (double) (K / 32 + 2) * ldexp(1.0, -23));
            if (e > worst) worst = e;
        }
    CHECK(worst <= 1.0, "q8_0 prec f32: error %.3g x the 16-bit activation + F32 bound", worst);
    // the default precision rounds the activations to q8_0: a far larger error (the test can fail)
    struct ggml_tensor * dflt = ggml_mul_mat(ctx, a, b40);
    struct ggml_cgraph * gd = ggml_new_graph(ctx);
    ggml_build_forward_expand(gd, dflt);
    CHECK(ggml_graph_compute_with_ctx(ctx, gd, 2) == GGML_STATUS_SUCCESS, "compute default");
    for (int64_t i = 0; i < M * 40; i++) {
        const double e = fabs((double) ((float *) dflt->data)[i] - want[i]);
        if (e > worst_default) worst_default = e;
    }
    CHECK(worst_default > 1e-4, "default precision indistinguishable from F32 (%.3g)", worst_default);
    const size_t sz = ggml_cpu_repack_size(a);
    void * buf = sz ? aligned(sz) : NULL;
    for (int rp = 0; rp < (sz ? 2 : 1); rp++) {
        if (rp) CHECK(ggml_cpu_repack(a, buf) && ggml_cpu_repack_panels(a) != NULL, "repack q8_0");
        for (size_t ni = 0; ni < sizeof(Ns) / sizeof(Ns[0]); ni++)
            for (int nth = 1; nth <= 3; nth++) {
                const int64_t N = Ns[ni], j0 = (40 - N) / 2; // columns j0.. of the batch of 40
                struct ggml_tensor * bv = ggml_view_2d(ctx, b40, K, N, b40->nb[1], (size_t) j0 * b40->nb[1]);
                struct ggml_tensor * o = ggml_mul_mat(ctx, a, bv);
                ggml_mul_mat_set_prec(o, GGML_PREC_F32);
                struct ggml_cgraph * g = ggml_new_graph(ctx);
                ggml_build_forward_expand(g, o);
                CHECK(ggml_graph_compute_with_ctx(ctx, g, nth) == GGML_STATUS_SUCCESS, "compute");
                CHECK(memcmp(o->data, want + j0 * M, sizeof(float) * (size_t) (N * M)) == 0,
                      "q8_0 prec f32 %s N=%lld nth=%d: bits differ from the batch of 40 on stored rows",
                      rp ? "repacked" : "stored", (long long) N, nth);
            }
    }
    if (buf) {
        ggml_cpu_repack_clear(a);
        free(buf);
    }
    free(deq);
    free(want);
    ggml_free(ctx);
}

int main(void) {
    for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
        if (!ggml_cpu_kernel_variant_available((enum ggml_cpu_kernel_variant) v)) {
            fprintf(stderr, "note: kernel set %s not available here, skipped\n",
                    ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v));
        }
    }
    for (size_t t = 0; t < N_TYPES; t++) {
        for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) check_pack_values(gemm_types[t], (enum ggml_cpu_kernel_variant) v);
        const bool kq = ggml_blck_size(gemm_types[t]) == QK_K;
        check_kernels(gemm_types[t], kq ? 256 : 96, 37, 11);
        check_kernels(gemm_types[t], 768, 16, 8);
        check_kernels(gemm_types[t], kq ? 512 : 64, 5, 3);
    }
    // the x86 sets run the codebook and IQ1 types on the GEMM (packer and gemv of their own);
    // NEON keeps vec_dot for them
    const enum ggml_type iq[] = { GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
                                  GGML_TYPE_IQ3_S,   GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M };
    const enum ggml_cpu_kernel_variant x86[] = { GGML_CPU_KERNELS_AVX2, GGML_CPU_KERNELS_AVXVNNI, GGML_CPU_KERNELS_AVX512 };
    for (size_t k = 0; k < sizeof(x86) / sizeof(x86[0]); k++)
        for (size_t t = 0; t < sizeof(iq) / sizeof(iq[0]); t++) {
            const struct ggml_gemm_traits * gt = ggml_gemm_get_traits_variant(iq[t], x86[k]);
            if (!gt) continue;
            CHECK(gt->accelerated && gt->gemv && gt->pack != ggml_gemm_pack_generic, "%s kernels=%s: not on the GEMM",
                  ggml_type_name(iq[t]), ggml_cpu_kernel_variant_name(x86[k]));
        }
    fprintf(stderr, "note: mul_mat, batch and repack checks on kernel set %s (GGML_CPU_VARIANT picks another)\n",
            ggml_cpu_kernel_variant_name(ggml_cpu_kernel_variant_selected()));
    check_mul_mat();
    check_batch_independence();
    check_repack();
    check_prec_f32();
    printf("%d checks, %d failed\n", n_check, n_fail);
    return n_fail ? 1 : 0;
}
