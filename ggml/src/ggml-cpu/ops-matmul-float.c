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

#include <stdatomic.h>

// Bytes of weights one row block keeps in L2 (at least one tile of rows, at most 64 rows).
#define MM_FLOAT_BLOCK_BYTES (192u * 1024u)

ggml_mm_float_tile_t ggml_mm_float_tile_get(enum ggml_type type) {
#if defined(__x86_64__) || defined(__i386__)
    const enum ggml_cpu_kernel_variant v = ggml_cpu_kernel_variant_selected();
    if (v == GGML_CPU_KERNELS_AVX512) {
        return ggml_mm_float_tile_avx512(type); // the AVX2 tiles' bits, two rows per register
    }
    if (v == GGML_CPU_KERNELS_AVX2 || v == GGML_CPU_KERNELS_AVXVNNI) {
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
        a->nb[0] == ggml_type_size(a->type) && b->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float) && a->ne[2] > 0 &&
        a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0 && dst->ne[0] == a->ne[1] &&
        dst->ne[1] == b->ne[1] && dst->ne[2] == b->ne[2] && dst->ne[3] == b->ne[3];
}

void ggml_cpu_mm_float_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const ggml_mm_float_tile_t tile = ggml_mm_float_tile_get(a->type);
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1], B2 = b->ne[2], B3 = b->ne[3];
    const int64_t r2 = B2 / a->ne[2], r3 = B3 / a->ne[3];
    const int64_t nbatch = B2 * B3;
    const int nth = params->nth;

    // Rows per block: what fits the L2 budget, fewer when that leaves threads without work.
    const size_t row_bytes = (size_t) K * ggml_type_size(a->type);
    int64_t bm = (int64_t) (MM_FLOAT_BLOCK_BYTES / (row_bytes ? row_bytes : 1));
    bm = GGML_MAX(GGML_MM_FLOAT_MR, GGML_MIN(64, bm / GGML_MM_FLOAT_MR * GGML_MM_FLOAT_MR));
    const int64_t want = 4 * (int64_t) nth;
    while (bm > GGML_MM_FLOAT_MR && ((M + bm - 1) / bm) * nbatch < want) bm -= GGML_MM_FLOAT_MR;
    const int64_t blocks_m = (M + bm - 1) / bm;

    int64_t t, t_end;
    ggml_cpu_split(blocks_m * nbatch, params->ith, nth, &t, &t_end);
    for (; t < t_end; t++) {
        const int64_t batch = t / blocks_m, i3 = batch / B2, i2 = batch - i3 * B2;
        const int64_t m0 = (t - batch * blocks_m) * bm, m1 = GGML_MIN(M, m0 + bm);
        const char * abase = (const char *) a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3];
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
                tile(K, abase + r0 * a->nb[1], a->nb[1], nr, bp, nc, op);
            }
        }
    }
}

// ---- Q8_0 weights at high precision (matmul-float.h) ----

// Columns per chunk: their 16-bit copies stay in L2 while every panel meets them.
#define MM_DEQ_CHUNK     64
#define MM_DEQ_ROWS      16     // rows per work unit (one repacked panel)
#define MM_DEQ_Q8_0_UNIT (16 * 32 + 32) // bytes of one 32-element block of a repacked q8_0 panel

static bool mm_deq_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
    const enum ggml_cpu_kernel_variant v = ggml_cpu_kernel_variant_selected();
    return v == GGML_CPU_KERNELS_AVX2 || v == GGML_CPU_KERNELS_AVXVNNI || v == GGML_CPU_KERNELS_AVX512;
#else
    return false;
#endif
}

bool ggml_cpu_mm_deq_applies(const struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    if (!a || !b || dst->op_params[0] != GGML_PREC_F32 || a->type != GGML_TYPE_Q8_0) return false;
    const int64_t K = a->ne[0];
    // 2D weight, contiguous F32 activations and output (the lm head's shapes)
    return b->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 && K % 32 == 0 && b->ne[0] == K && a->ne[2] == 1 &&
        a->ne[3] == 1 && b->ne[2] == 1 && b->ne[3] == 1 && a->nb[0] == ggml_type_size(a->type) && b->nb[0] == sizeof(float) &&
        dst->nb[0] == sizeof(float) && b->nb[1] % sizeof(float) == 0 && dst->nb[1] % sizeof(float) == 0 &&
        dst->ne[0] == a->ne[1] && dst->ne[1] == b->ne[1];
}

// Bytes of one column's 16-bit copy: q, then d and s per block.
static size_t mm_a16_bytes(int64_t K) {
    return GGML_PAD((size_t) K * sizeof(int16_t) + (size_t) (K / 32) * (sizeof(float) + sizeof(int32_t)), 64);
}

size_t ggml_cpu_mm_deq_work_size(const struct ggml_tensor * dst, int n_threads) {
    return (size_t) n_threads * MM_DEQ_CHUNK * mm_a16_bytes(dst->src[0]->ne[0]) + 64;
}

static struct ggml_mm_a16 mm_a16_view(char * p, int64_t K) {
    struct ggml_mm_a16 v = { (const int16_t *) p, (const float *) (p + (size_t) K * sizeof(int16_t)),
                             (const int32_t *) (p + (size_t) K * sizeof(int16_t) + (size_t) (K / 32) * sizeof(float)) };
    return v;
}

// The 16-bit quantization of matmul-float.h (rounding half away from zero, as roundf).
static void mm_a16_quantize(const float * x, int64_t K, char * p) {
    int16_t * q = (int16_t *) p;
    float * d = (float *) (p + (size_t) K * sizeof(int16_t));
    int32_t * s = (int32_t *) (d + K / 32);
    for (int64_t u = 0; u < K / 32; u++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * u + j]));
        const float du = amax / 32767.0f, id = du > 0.0f ? 1.0f / du : 0.0f;
        int32_t sum = 0;
        for (int j = 0; j < 32; j++) {
            float v = roundf(x[32 * u + j] * id);
            v = v > 32767.0f ? 32767.0f : v < -32767.0f ? -32767.0f : v == v ? v : 0.0f; // NaN: 0, not UB
            q[32 * u + j] = (int16_t) v;
            sum += q[32 * u + j];
        }
        d[u] = du;
        s[u] = sum;
    }
}

// Repacked panel, portable (levels q + 128 as [8 dwords][16 rows][4], then 16 fp16 d per block):
// per block the 16 rows' integer sums side by side, in loops a compiler vectorizes (NEON), then
// the chain of matmul-float.h: acc = fmaf(d_w*da, (float) isum, acc), blocks in order.
static void mm_q8_0_a16_panel_portable(const uint8_t * panel, int64_t K, const struct ggml_mm_a16 * a, float * out) {
    float acc[MM_DEQ_ROWS] = { 0 };
    for (int64_t u = 0; u < K / 32; u++) {
        const uint8_t * o = panel + u * MM_DEQ_Q8_0_UNIT;
        const int16_t * q = a->q + 32 * u;
        int32_t isum[MM_DEQ_ROWS] = { 0 };
        for (int g = 0; g < 8; g++) {
            for (int r = 0; r < MM_DEQ_ROWS; r++) {
                for (int j = 0; j < 4; j++) isum[r] += (int32_t) o[64 * g + 4 * r + j] * q[4 * g + j];
            }
        }
        const int32_t corr = 128 * a->s[u];
        for (int r = 0; r < MM_DEQ_ROWS; r++) {
            ggml_fp16_t h;
            memcpy(&h, o + 16 * 32 + 2 * r, sizeof(h));
            acc[r] = fmaf(GGML_FP16_TO_FP32(h) * a->d[u], (float) (isum[r] - corr), acc[r]);
        }
    }
    for (int r = 0; r < MM_DEQ_ROWS; r++) out[r] = acc[r];
}

// Stored rows, portable: the same chain, one row at a time.
static void mm_q8_0_a16_rows_portable(const char * rows, size_t nb1, int nr, int64_t K, const struct ggml_mm_a16 * a,
                                      float * out) {
    for (int r = 0; r < nr; r++) {
        const block_q8_0 * x = (const block_q8_0 *) (rows + (size_t) r * nb1);
        float acc = 0.0f;
        for (int64_t u = 0; u < K / 32; u++) {
            const int16_t * q = a->q + 32 * u;
            int32_t isum = 0;
            for (int j = 0; j < 32; j++) isum += (int32_t) x[u].qs[j] * q[j];
            acc = fmaf(GGML_FP16_TO_FP32(x[u].d) * a->d[u], (float) isum, acc);
        }
        out[r] = acc;
    }
}

void ggml_cpu_mm_deq_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    const size_t colb = mm_a16_bytes(K);
    char * cols = (char *) params->wdata + 64 + (size_t) params->ith * MM_DEQ_CHUNK * colb;
    const uint8_t * packed = (const uint8_t *) ggml_cpu_repack_panels(a);
    const size_t panel_bytes = packed ? ggml_cpu_repack_panel_bytes(a) : 0;
    const bool avx2 = mm_deq_avx2();
#if defined(__x86_64__) || defined(__i386__)
    const bool avx512 = ggml_cpu_kernel_variant_selected() == GGML_CPU_KERNELS_AVX512;
#else
    const bool avx512 = false;
#endif

    // Every thread quantizes the columns itself; 16-row blocks are claimed in runs, in order, as
    // in the int8 one-column path (a preempted thread leaves its share to the others). With
    // several column chunks each thread keeps one contiguous run (no barrier per chunk).
    const int64_t nblk = (M + MM_DEQ_ROWS - 1) / MM_DEQ_ROWS;
    const bool dynamic = params->nth > 1 && N <= MM_DEQ_CHUNK;
    const int64_t run = dynamic ? GGML_MAX(1, nblk / (8 * (int64_t) params->nth)) : 0;
    atomic_int * counter = (atomic_int *) params->wdata;
    if (dynamic) {
        if (params->ith == 0) atomic_store_explicit(counter, params->nth, memory_order_relaxed);
        ggml_cpu_barrier(params); // counter ready
    }
    for (int64_t c0 = 0; c0 < N; c0 += MM_DEQ_CHUNK) {
        const int64_t c1 = GGML_MIN(N, c0 + MM_DEQ_CHUNK);
        for (int64_t c = c0; c < c1; c++) {
            mm_a16_quantize((const float *) ((const char *) b->data + c * b->nb[1]), K, cols + (size_t) (c - c0) * colb);
        }
        int64_t t, t_end, r = params->ith;
        if (dynamic) {
            t = r * run;
            t_end = GGML_MIN(nblk, t + run);
        } else {
            ggml_cpu_split(nblk, params->ith, params->nth, &t, &t_end);
        }
        while (t < t_end) {
            for (int64_t blk = t; blk < t_end; blk++) {
                const int64_t m0 = blk * MM_DEQ_ROWS;
                const int nr = (int) GGML_MIN(MM_DEQ_ROWS, M - m0);
#if defined(__x86_64__) || defined(__i386__)
                if (packed && avx512) {
                    // several columns per pass over the panel (a batched decode step's lm head)
                    for (int64_t c = c0; c < c1; c += 8) {
                        const int nc = (int) GGML_MIN(8, c1 - c);
                        struct ggml_mm_a16 av[8];
                        float * o[8];
                        for (int j = 0; j < nc; j++) {
                            av[j] = mm_a16_view(cols + (size_t) (c + j - c0) * colb, K);
                            o[j] = (float *) ((char *) dst->data + (c + j) * dst->nb[1]) + m0;
                        }
                        ggml_mm_q8_0_a16_panel_cols_avx512(packed + (size_t) blk * panel_bytes, K, av, nc, o);
                    }
                    continue;
                }
#endif
                for (int64_t c = c0; c < c1; c++) {
                    const struct ggml_mm_a16 av = mm_a16_view(cols + (size_t) (c - c0) * colb, K);
                    float * o = (float *) ((char *) dst->data + c * dst->nb[1]) + m0;
                    if (packed) {
                        // whole panels only: repacking needs M % 16 == 0 (repack.h)
                        const uint8_t * pn = packed + (size_t) blk * panel_bytes;
#if defined(__x86_64__) || defined(__i386__)
                        if (avx2) {
                            ggml_mm_q8_0_a16_panel_avx2(pn, K, &av, o);
                            continue;
                        }
#endif
                        mm_q8_0_a16_panel_portable(pn, K, &av, o);
                    } else {
                        const char * rows = (const char *) a->data + m0 * a->nb[1];
                        int r0 = 0;
#if defined(__x86_64__) || defined(__i386__)
                        for (; avx2 && r0 + 8 <= nr; r0 += 8)
                            ggml_mm_q8_0_a16_rows8_avx2(rows + r0 * a->nb[1], a->nb[1], K, &av, o + r0);
#endif
                        if (r0 < nr) mm_q8_0_a16_rows_portable(rows + r0 * a->nb[1], a->nb[1], nr - r0, K, &av, o + r0);
                    }
                }
            }
            if (!dynamic) break;
            r = atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
            t = r * run;
            t_end = GGML_MIN(nblk, t + run);
        }
    }
    (void) avx2;
    (void) avx512;
}
