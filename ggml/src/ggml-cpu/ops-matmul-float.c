// ops-matmul-float.c — MUL_MAT with F32 / F16 / BF16 weights and F32 activations through the
// dot tiles of matmul-float.h, where the kernel set has them (AVX2 and up); other machines
// keep the vec_dot path of ops-matmul.c.
//
// The activations are used as they are (no rounding to the weight type, no scratch). Work items
// are blocks of weight rows (of one batch) that fit in L2, split evenly over threads; inside a
// block the columns are taken NR at a time and, for each, the block's row tiles, so the
// columns stay in L1 while the block is read from L2.
#include "matmul-float.h"
#include "ops-util.h"
#include "quants.h"

// Bytes of weights one row block keeps in L2 (at least one tile of rows, at most 64 rows).
#define MM_FLOAT_BLOCK_BYTES (192u*1024u)

ggml_mm_float_tile_t ggml_mm_float_tile_get(enum ggml_type type) {
#if defined(__x86_64__) || defined(__i386__)
    const enum ggml_cpu_kernel_variant v = ggml_cpu_kernel_variant_selected();
    if (v == GGML_CPU_KERNELS_AVX2 || v == GGML_CPU_KERNELS_AVXVNNI || v == GGML_CPU_KERNELS_AVX512) {
        return ggml_mm_float_tile_avx2(type);
    }
#endif
    (void) type;
    return NULL;
}

bool ggml_cpu_mm_float_applies(const struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    if (!a || !b || !ggml_cpu_is_float_type(a->type) || ggml_mm_float_tile_get(a->type) == NULL) return false;
    const int64_t K = a->ne[0];
    return b->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 && K % 8 == 0 && b->ne[0] == K &&
           a->nb[0] == ggml_type_size(a->type) && b->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float) &&
           a->ne[2] > 0 && a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0 &&
           dst->ne[0] == a->ne[1] && dst->ne[1] == b->ne[1] && dst->ne[2] == b->ne[2] && dst->ne[3] == b->ne[3];
}

void ggml_cpu_mm_float_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const ggml_mm_float_tile_t tile = ggml_mm_float_tile_get(a->type);
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1], B2 = b->ne[2], B3 = b->ne[3];
    const int64_t r2 = B2/a->ne[2], r3 = B3/a->ne[3];
    const int64_t nbatch = B2*B3;
    const int nth = params->nth;

    // Rows per block: what fits the L2 budget, fewer when that leaves threads without work.
    const size_t row_bytes = (size_t) K*ggml_type_size(a->type);
    int64_t bm = (int64_t) (MM_FLOAT_BLOCK_BYTES/(row_bytes ? row_bytes : 1));
    bm = GGML_MAX(GGML_MM_FLOAT_MR, GGML_MIN(64, bm/GGML_MM_FLOAT_MR*GGML_MM_FLOAT_MR));
    const int64_t want = 4*(int64_t) nth;
    while (bm > GGML_MM_FLOAT_MR && ((M + bm - 1)/bm)*nbatch < want) bm -= GGML_MM_FLOAT_MR;
    const int64_t blocks_m = (M + bm - 1)/bm;

    int64_t t, t_end;
    ggml_cpu_split(blocks_m*nbatch, params->ith, nth, &t, &t_end);
    for (; t < t_end; t++) {
        const int64_t batch = t/blocks_m, i3 = batch/B2, i2 = batch - i3*B2;
        const int64_t m0 = (t - batch*blocks_m)*bm, m1 = GGML_MIN(M, m0 + bm);
        const char * abase = (const char *) a->data + (i2/r2)*a->nb[2] + (i3/r3)*a->nb[3];
        for (int64_t n0 = 0; n0 < N; n0 += GGML_MM_FLOAT_NR) {
            const int nc = (int) GGML_MIN(GGML_MM_FLOAT_NR, N - n0);
            const float * bp[GGML_MM_FLOAT_NR];
            float * op[GGML_MM_FLOAT_NR];
            for (int c = 0; c < nc; c++) {
                bp[c] = (const float *) ggml_cpu_ptr(b, 0, n0 + c, i2, i3);
            }
            for (int64_t r0 = m0; r0 < m1; r0 += GGML_MM_FLOAT_MR) {
                const int nr = (int) GGML_MIN(GGML_MM_FLOAT_MR, m1 - r0);
                for (int c = 0; c < nc; c++) {
                    op[c] = (float *) ggml_cpu_ptr(dst, r0, n0 + c, i2, i3);
                }
                tile(K, abase + r0*a->nb[1], a->nb[1], nr, bp, nc, op);
            }
        }
    }
}
