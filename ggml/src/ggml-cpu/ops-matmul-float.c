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
#include "repack.h"

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

// ---- quantized weights at F32 precision (matmul-float.h) ----

// Columns per chunk: a chunk of activations stays in L2 while every 16-row block meets it.
#define MM_DEQ_CHUNK_BYTES (128u*1024u)
#define MM_DEQ_ROWS 16     // rows dequantized at a time (one repacked panel)
#define MM_DEQ_Q8_0_UNIT (16*32 + 32) // bytes of one 32-element block of a repacked q8_0 panel

// The chain of matmul-float.h in portable C: lane l takes k = l, l + 8, ... by fmaf, then the
// fixed lane sum.
static void tile_f32_portable(int64_t K, const char * a, size_t lda, int nr, const float * const * b, int nc,
                              float * const * out) {
    for (int r = 0; r < nr; r++) {
        const float * w = (const float *) (a + (size_t) r*lda);
        for (int c = 0; c < nc; c++) {
            float acc[8] = { 0 };
            for (int64_t k = 0; k < K; k += 8) {
                for (int l = 0; l < 8; l++) acc[l] = fmaf(w[k + l], b[c][k + l], acc[l]);
            }
            out[c][r] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
        }
    }
}

ggml_mm_float_tile_t ggml_mm_float_tile_f32_any(void) {
    const ggml_mm_float_tile_t t = ggml_mm_float_tile_get(GGML_TYPE_F32);
    return t ? t : tile_f32_portable;
}

bool ggml_cpu_mm_deq_applies(const struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    if (!a || !b || dst->op_params[0] != GGML_PREC_F32 || a->type != GGML_TYPE_Q8_0) return false;
    const int64_t K = a->ne[0];
    // 2D weight, contiguous F32 activations and output (the lm head's shapes)
    return b->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 && K % 32 == 0 && b->ne[0] == K &&
           a->ne[2] == 1 && a->ne[3] == 1 && b->ne[2] == 1 && b->ne[3] == 1 &&
           a->nb[0] == ggml_type_size(a->type) && b->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float) &&
           b->nb[1] % sizeof(float) == 0 && dst->nb[1] % sizeof(float) == 0 &&
           dst->ne[0] == a->ne[1] && dst->ne[1] == b->ne[1];
}

size_t ggml_cpu_mm_deq_work_size(const struct ggml_tensor * dst, int n_threads) {
    const int64_t K = dst->src[0]->ne[0];
    return (size_t) n_threads*GGML_PAD((size_t) MM_DEQ_ROWS*(size_t) K*sizeof(float), 64) + 64;
}

// Rows [r0, r0 + nr) of a repacked q8_0 copy (repack.h: per block, [8 dwords][16 rows][4 levels
// q + 128], then the 16 rows' fp16 d) as floats, row i at out + i*K.
static void deq_q8_0_repacked(const uint8_t * panel, int r_in, int nr, int64_t K, float * out) {
    for (int64_t u = 0; u < K/32; u++) {
        const uint8_t * o = panel + (size_t) u*MM_DEQ_Q8_0_UNIT;
        for (int i = 0; i < nr; i++) {
            const int r = r_in + i;
            ggml_fp16_t dh;
            memcpy(&dh, o + 16*32 + 2*r, sizeof(dh));
            const float d = GGML_FP16_TO_FP32(dh);
            float * y = out + (size_t) i*K + u*32;
            for (int g = 0; g < 8; g++) {
                for (int j = 0; j < 4; j++) y[4*g + j] = d*(float) ((int) o[64*g + 4*r + j] - 128);
            }
        }
    }
}

// Stored q8_0 rows: the same values d * q.
static void deq_q8_0_rows(const char * rows, size_t nb1, int nr, int64_t K, float * out) {
    for (int i = 0; i < nr; i++) {
        const block_q8_0 * x = (const block_q8_0 *) (rows + (size_t) i*nb1);
        float * y = out + (size_t) i*K;
        for (int64_t u = 0; u < K/32; u++) {
            const float d = GGML_FP16_TO_FP32(x[u].d);
            for (int j = 0; j < 32; j++) y[u*32 + j] = d*(float) x[u].qs[j];
        }
    }
}

void ggml_cpu_mm_deq_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const ggml_mm_float_tile_t tile = ggml_mm_float_tile_f32_any();
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    float * w = (float *) ((char *) params->wdata + 64 +
                           (size_t) params->ith*GGML_PAD((size_t) MM_DEQ_ROWS*(size_t) K*sizeof(float), 64));
    const uint8_t * packed = (const uint8_t *) ggml_cpu_repack_panels(a);
    const size_t panel_bytes = packed ? ggml_cpu_repack_panel_bytes(a) : 0;
    int64_t chunk = (int64_t) (MM_DEQ_CHUNK_BYTES/((size_t) K*sizeof(float)));
    chunk = GGML_MAX(GGML_MM_FLOAT_NR, chunk/GGML_MM_FLOAT_NR*GGML_MM_FLOAT_NR);

    // Each thread one contiguous run of 16-row blocks: in token generation every node ends
    // when its slowest thread does.
    const int64_t nblk = (M + MM_DEQ_ROWS - 1)/MM_DEQ_ROWS;
    int64_t t, t_end;
    ggml_cpu_split(nblk, params->ith, params->nth, &t, &t_end);
    for (int64_t c0 = 0; c0 < N; c0 += chunk) {
        const int64_t c1 = GGML_MIN(N, c0 + chunk);
        for (int64_t blk = t; blk < t_end; blk++) {
            const int64_t m0 = blk*MM_DEQ_ROWS;
            const int nr = (int) GGML_MIN(MM_DEQ_ROWS, M - m0);
            if (packed) {
                deq_q8_0_repacked(packed + (size_t) blk*panel_bytes, 0, nr, K, w);
            } else {
                deq_q8_0_rows((const char *) a->data + m0*a->nb[1], a->nb[1], nr, K, w);
            }
            for (int64_t n0 = c0; n0 < c1; n0 += GGML_MM_FLOAT_NR) {
                const int nc = (int) GGML_MIN(GGML_MM_FLOAT_NR, c1 - n0);
                const float * bp[GGML_MM_FLOAT_NR];
                float * op[GGML_MM_FLOAT_NR];
                for (int c = 0; c < nc; c++) bp[c] = (const float *) ((const char *) b->data + (n0 + c)*b->nb[1]);
                for (int r0 = 0; r0 < nr; r0 += GGML_MM_FLOAT_MR) {
                    const int rr = GGML_MIN(GGML_MM_FLOAT_MR, nr - r0);
                    for (int c = 0; c < nc; c++) {
                        op[c] = (float *) ((char *) dst->data + (n0 + c)*dst->nb[1]) + m0 + r0;
                    }
                    tile(K, (const char *) (w + (size_t) r0*K), (size_t) K*sizeof(float), rr, bp, nc, op);
                }
            }
        }
    }
}
