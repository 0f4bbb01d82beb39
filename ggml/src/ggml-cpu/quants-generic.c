// quants-generic.c — portable dot products of every weight type with its activation type,
// and the activation quantizers. These are the reference the SIMD variants are tested
// against, so they favour obvious code: integer sums per block, one float scale per block.
#include "quants.h"

#include <math.h>
#include <string.h>

// ---- float types ----

void ggml_vec_dot_f32_f32_generic(int n, float * s, const void * x, const void * y) {
    const float * a = (const float *) x;
    const float * b = (const float *) y;
    // four partial sums keep the dependency chain short and the rounding close to SIMD's
    float acc[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        for (int j = 0; j < 4; j++) acc[j] += a[i + j] * b[i + j];
    }
    float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; i < n; i++) sum += a[i] * b[i];
    *s = sum;
}

void ggml_vec_dot_f16_f16_generic(int n, float * s, const void * x, const void * y) {
    const ggml_fp16_t * a = (const ggml_fp16_t *) x;
    const ggml_fp16_t * b = (const ggml_fp16_t *) y;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        sum += (double) (GGML_FP16_TO_FP32(a[i]) * GGML_FP16_TO_FP32(b[i]));
    }
    *s = (float) sum;
}

void ggml_vec_dot_bf16_bf16_generic(int n, float * s, const void * x, const void * y) {
    const ggml_bf16_t * a = (const ggml_bf16_t *) x;
    const ggml_bf16_t * b = (const ggml_bf16_t *) y;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        sum += (double) (ggml_compute_bf16_to_fp32(a[i]) * ggml_compute_bf16_to_fp32(b[i]));
    }
    *s = (float) sum;
}

// ---- 32-element block types ----

void ggml_vec_dot_q4_0_q8_0_generic(int n, float * s, const void * x, const void * y) {
    const block_q4_0 * a = (const block_q4_0 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int nb = n / QK8_0;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            const int v0 = (a[i].qs[j] & 0x0F) - 8;
            const int v1 = (a[i].qs[j] >> 4) - 8;
            sumi += v0 * b[i].qs[j] + v1 * b[i].qs[j + QK4_0 / 2];
        }
        sum += (float) sumi * (GGML_FP16_TO_FP32(a[i].d) * GGML_FP16_TO_FP32(b[i].d));
    }
    *s = sum;
}

void ggml_vec_dot_q4_1_q8_1_generic(int n, float * s, const void * x, const void * y) {
    const block_q4_1 * a = (const block_q4_1 *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK8_1;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_1 / 2; j++) {
            sumi += (a[i].qs[j] & 0x0F) * b[i].qs[j] + (a[i].qs[j] >> 4) * b[i].qs[j + QK4_1 / 2];
        }
        // sum((d q + m) * db qb) = d db sum(q qb) + m (db sum(qb)) and b.s holds db sum(qb)
        sum += (float) sumi * (GGML_FP16_TO_FP32(a[i].d) * b[i].d) + GGML_FP16_TO_FP32(a[i].m) * b[i].s;
    }
    *s = sum;
}

void ggml_vec_dot_q5_0_q8_0_generic(int n, float * s, const void * x, const void * y) {
    const block_q5_0 * a = (const block_q5_0 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int nb = n / QK8_0;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        uint32_t qh;
        memcpy(&qh, a[i].qh, sizeof(qh));
        int sumi = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int h0 = (int) ((qh >> j) & 1) << 4;
            const int h1 = (int) ((qh >> (j + QK5_0 / 2)) & 1) << 4;
            const int v0 = ((a[i].qs[j] & 0x0F) | h0) - 16;
            const int v1 = ((a[i].qs[j] >> 4) | h1) - 16;
            sumi += v0 * b[i].qs[j] + v1 * b[i].qs[j + QK5_0 / 2];
        }
        sum += (float) sumi * (GGML_FP16_TO_FP32(a[i].d) * GGML_FP16_TO_FP32(b[i].d));
    }
    *s = sum;
}

void ggml_vec_dot_q5_1_q8_1_generic(int n, float * s, const void * x, const void * y) {
    const block_q5_1 * a = (const block_q5_1 *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK8_1;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        uint32_t qh;
        memcpy(&qh, a[i].qh, sizeof(qh));
        int sumi = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int h0 = (int) ((qh >> j) & 1) << 4;
            const int h1 = (int) ((qh >> (j + QK5_1 / 2)) & 1) << 4;
            sumi += ((a[i].qs[j] & 0x0F) | h0) * b[i].qs[j] + ((a[i].qs[j] >> 4) | h1) * b[i].qs[j + QK5_1 / 2];
        }
        sum += (float) sumi * (GGML_FP16_TO_FP32(a[i].d) * b[i].d) + GGML_FP16_TO_FP32(a[i].m) * b[i].s;
    }
    *s = sum;
}

void ggml_vec_dot_q8_0_q8_0_generic(int n, float * s, const void * x, const void * y) {
    const block_q8_0 * a = (const block_q8_0 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int nb = n / QK8_0;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; j++) sumi += a[i].qs[j] * b[i].qs[j];
        sum += (float) sumi * (GGML_FP16_TO_FP32(a[i].d) * GGML_FP16_TO_FP32(b[i].d));
    }
    *s = sum;
}

// ---- K-quants (activations in q8_K; bsums carry the per-16 sums the mins need) ----

void ggml_vec_dot_q2_K_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_q2_K * a = (const block_q2_K *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int summs = 0;
        for (int j = 0; j < 16; j++) summs += b[i].bsums[j] * (a[i].scales[j] >> 4);
        int isum = 0;
        const uint8_t * q = a[i].qs;
        const int8_t * q8 = b[i].qs;
        for (int c = 0; c < QK_K / 128; c++) {
            for (int sh = 0; sh < 4; sh++) {
                for (int half = 0; half < 2; half++) {
                    const int sub = c * 8 + sh * 2 + half;
                    int acc = 0;
                    for (int l = 0; l < 16; l++) acc += ((q[16 * half + l] >> (2 * sh)) & 3) * q8[l + 16 * half];
                    isum += (a[i].scales[sub] & 0xF) * acc;
                }
                q8 += 32;
            }
            q += 32;
        }
        const float dall = b[i].d * GGML_FP16_TO_FP32(a[i].d);
        const float dmin = b[i].d * GGML_FP16_TO_FP32(a[i].dmin);
        sum += dall * (float) isum - dmin * (float) summs;
    }
    *s = sum;
}

void ggml_vec_dot_q3_K_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_q3_K * a = (const block_q3_K *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int8_t sc[16];
        ggml_quants_unpack_q3_K_scales(a[i].scales, sc);
        int isum = 0;
        for (int sub = 0; sub < 16; sub++) {
            int acc = 0;
            for (int l = 0; l < 16; l++) {
                const int j = sub * 16 + l;
                const int qv = (a[i].qs[(j / 128) * 32 + (j % 32)] >> (2 * ((j % 128) / 32))) & 3;
                const int hi = (a[i].hmask[j % 32] >> (j / 32)) & 1;
                acc += (qv - (hi ? 0 : 4)) * b[i].qs[j];
            }
            isum += (sc[sub] - 32) * acc;
        }
        sum += GGML_FP16_TO_FP32(a[i].d) * b[i].d * (float) isum;
    }
    *s = sum;
}

// K-quants against q8_1 (one float scale per 32 activations): each 32 values' integer dot,
// times its weight sub-block scales, becomes a float with the block's da; mins fold in with s.

// The 32 levels of sub-block j (0..7) of a q4_K / q5_K block (h5: q5_K's qh, else NULL).
static inline void k4_levels(const uint8_t * qs, const uint8_t * h5, int j, uint8_t * lv) {
    const uint8_t * q = qs + 32 * (j / 2);
    for (int l = 0; l < 32; l++) {
        lv[l] = (uint8_t) ((j % 2 ? q[l] >> 4 : q[l] & 0xF) | (h5 ? ((h5[l] >> j) & 1) << 4 : 0));
    }
}

static inline int dot_u8_i8(const uint8_t * u, const int8_t * v, int n) {
    int acc = 0;
    for (int l = 0; l < n; l++) acc += u[l] * v[l];
    return acc;
}

static float vec_dot_k4_q8_1(int n, const void * x, const void * y, bool q5) {
    const block_q8_1 * b = (const block_q8_1 *) y;
    const size_t bs = q5 ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const int nb = n / QK_K;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t * blk = (const uint8_t *) x + (size_t) i * bs;
        const block_q4_K * a4 = (const block_q4_K *) blk;
        const block_q5_K * a5 = (const block_q5_K *) blk;
        const uint8_t * scales = q5 ? a5->scales : a4->scales;
        float fsum = 0.0f, fmin = 0.0f;
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, m, lv[32];
            ggml_quants_get_scale_min_k4(j, scales, &sc, &m);
            k4_levels(q5 ? a5->qs : a4->qs, q5 ? a5->qh : NULL, j, lv);
            const block_q8_1 * bj = b + (size_t) i * 8 + j;
            fsum += bj->d * (float) (sc * dot_u8_i8(lv, bj->qs, 32));
            fmin += bj->s * (float) m;
        }
        const float d = GGML_FP16_TO_FP32(q5 ? a5->d : a4->d), dmin = GGML_FP16_TO_FP32(q5 ? a5->dmin : a4->dmin);
        sum += d * fsum - dmin * fmin;
    }
    return sum;
}

void ggml_vec_dot_q4_K_q8_1_generic(int n, float * s, const void * x, const void * y) { *s = vec_dot_k4_q8_1(n, x, y, false); }

void ggml_vec_dot_q5_K_q8_1_generic(int n, float * s, const void * x, const void * y) { *s = vec_dot_k4_q8_1(n, x, y, true); }

void ggml_vec_dot_q6_K_q8_1_generic(int n, float * s, const void * x, const void * y) {
    const block_q6_K * a = (const block_q6_K *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int8_t lv[QK_K];
        for (int e = 0; e < QK_K; e++) {
            const int h = e / 128, quad = (e % 128) / 32, l = e % 32;
            const uint8_t ql = a[i].ql[64 * h + l + 32 * (quad & 1)];
            const int lo = quad >= 2 ? ql >> 4 : ql & 0xF;
            lv[e] = (int8_t) ((lo | (((a[i].qh[32 * h + l] >> (2 * quad)) & 3) << 4)) - 32);
        }
        float fsum = 0.0f;
        for (int j = 0; j < QK_K / 32; j++) {
            const block_q8_1 * bj = b + (size_t) i * 8 + j;
            int acc0 = 0, acc1 = 0;
            for (int l = 0; l < 16; l++) {
                acc0 += lv[32 * j + l] * bj->qs[l];
                acc1 += lv[32 * j + 16 + l] * bj->qs[16 + l];
            }
            fsum += bj->d * (float) (a[i].scales[2 * j] * acc0 + a[i].scales[2 * j + 1] * acc1);
        }
        sum += GGML_FP16_TO_FP32(a[i].d) * fsum;
    }
    *s = sum;
}

// ---- activation quantizers (the reference ones are already the portable fast path) ----

void ggml_quantize_row_q8_0_generic(const float * x, void * y, int64_t k) { quantize_row_q8_0_ref(x, (block_q8_0 *) y, k); }

void ggml_quantize_row_q8_1_generic(const float * x, void * y, int64_t k) { quantize_row_q8_1_ref(x, (block_q8_1 *) y, k); }

void ggml_quantize_row_q8_K_generic(const float * x, void * y, int64_t k) { quantize_row_q8_K_ref(x, (block_q8_K *) y, k); }

// ---- the portable table ----

static void from_float_f16(const float * x, void * y, int64_t k) { ggml_quants_f32_to_f16_row(x, y, k); }
static void from_float_bf16(const float * x, void * y, int64_t k) { ggml_quants_f32_to_bf16_row(x, y, k); }
static void from_float_f32(const float * x, void * y, int64_t k) { memcpy(y, x, (size_t) k * sizeof(float)); }

void ggml_cpu_quants_init_generic(struct ggml_type_traits_cpu * t) {
    memset(t, 0, sizeof(*t) * GGML_TYPE_COUNT);
    // weight types without a fast quantizer use the reference one (e.g. for a quantized KV cache)
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        const struct ggml_type_traits * tt = ggml_get_type_traits((enum ggml_type) i);
        if (tt && tt->is_quantized) t[i].from_float = tt->from_float_ref;
    }
    t[GGML_TYPE_F32] = (struct ggml_type_traits_cpu) { from_float_f32, ggml_vec_dot_f32_f32_generic, GGML_TYPE_F32, NULL };
    t[GGML_TYPE_F16] = (struct ggml_type_traits_cpu) { from_float_f16, ggml_vec_dot_f16_f16_generic, GGML_TYPE_F16, NULL };
    t[GGML_TYPE_BF16] = (struct ggml_type_traits_cpu) { from_float_bf16, ggml_vec_dot_bf16_bf16_generic, GGML_TYPE_BF16, NULL };

    t[GGML_TYPE_Q4_0].vec_dot = ggml_vec_dot_q4_0_q8_0_generic;
    t[GGML_TYPE_Q4_0].vec_dot_type = GGML_TYPE_Q8_0;
    t[GGML_TYPE_Q4_1].vec_dot = ggml_vec_dot_q4_1_q8_1_generic;
    t[GGML_TYPE_Q4_1].vec_dot_type = GGML_TYPE_Q8_1;
    t[GGML_TYPE_Q5_0].vec_dot = ggml_vec_dot_q5_0_q8_0_generic;
    t[GGML_TYPE_Q5_0].vec_dot_type = GGML_TYPE_Q8_0;
    t[GGML_TYPE_Q5_1].vec_dot = ggml_vec_dot_q5_1_q8_1_generic;
    t[GGML_TYPE_Q5_1].vec_dot_type = GGML_TYPE_Q8_1;
    t[GGML_TYPE_Q8_0].vec_dot = ggml_vec_dot_q8_0_q8_0_generic;
    t[GGML_TYPE_Q8_0].vec_dot_type = GGML_TYPE_Q8_0;
    t[GGML_TYPE_Q2_K].vec_dot = ggml_vec_dot_q2_K_q8_K_generic;
    t[GGML_TYPE_Q2_K].vec_dot_type = GGML_TYPE_Q8_K;
    t[GGML_TYPE_Q3_K].vec_dot = ggml_vec_dot_q3_K_q8_K_generic;
    t[GGML_TYPE_Q3_K].vec_dot_type = GGML_TYPE_Q8_K;
    t[GGML_TYPE_Q4_K].vec_dot = ggml_vec_dot_q4_K_q8_1_generic;
    t[GGML_TYPE_Q4_K].vec_dot_type = GGML_TYPE_Q8_1;
    t[GGML_TYPE_Q5_K].vec_dot = ggml_vec_dot_q5_K_q8_1_generic;
    t[GGML_TYPE_Q5_K].vec_dot_type = GGML_TYPE_Q8_1;
    t[GGML_TYPE_Q6_K].vec_dot = ggml_vec_dot_q6_K_q8_1_generic;
    t[GGML_TYPE_Q6_K].vec_dot_type = GGML_TYPE_Q8_1;

    ggml_cpu_quants_init_iq_generic(t);

    t[GGML_TYPE_Q8_0].from_float = ggml_quantize_row_q8_0_generic;
    t[GGML_TYPE_Q8_1].from_float = ggml_quantize_row_q8_1_generic;
    t[GGML_TYPE_Q8_K].from_float = ggml_quantize_row_q8_K_generic;
}
