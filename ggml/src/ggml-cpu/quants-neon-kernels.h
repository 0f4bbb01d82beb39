// quants-neon-kernels.h — the NEON integer dot kernels, written once and compiled twice by
// quants-neon.c: with the ARMv8.2 dot-product instruction (sdot) and without it. The includer
// defines NEON_NAME(name) (suffixes the function names) and NEON_I8DOT(acc, a, b) (adds the
// products of 16 signed byte pairs into 4 int32 lanes). Not a public header: include only there.

static inline int32x4_t NEON_NAME(dot2)(int8x16_t a0, int8x16_t b0, int8x16_t a1, int8x16_t b1) {
    return NEON_I8DOT(NEON_I8DOT(vdupq_n_s32(0), a0, b0), a1, b1);
}

// ---- 32-element blocks: two blocks per step, float accumulation per block ----

static void NEON_NAME(vec_dot_q8_0_q8_0)(int n, float * s, const void * x, const void * y) {
    const block_q8_0 * a = (const block_q8_0 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int nb = n / QK8_0;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int i = 0;
    for (; i + 2 <= nb; i += 2) {
        const int32x4_t p0 =
            NEON_NAME(dot2)(vld1q_s8(a[i].qs), vld1q_s8(b[i].qs), vld1q_s8(a[i].qs + 16), vld1q_s8(b[i].qs + 16));
        const int32x4_t p1 =
            NEON_NAME(dot2)(vld1q_s8(a[i + 1].qs), vld1q_s8(b[i + 1].qs), vld1q_s8(a[i + 1].qs + 16), vld1q_s8(b[i + 1].qs + 16));
        acc0 = vmlaq_n_f32(acc0, vcvtq_f32_s32(p0), neon_fp16_to_f32(a[i].d) * neon_fp16_to_f32(b[i].d));
        acc1 = vmlaq_n_f32(acc1, vcvtq_f32_s32(p1), neon_fp16_to_f32(a[i + 1].d) * neon_fp16_to_f32(b[i + 1].d));
    }
    for (; i < nb; i++) {
        const int32x4_t p0 =
            NEON_NAME(dot2)(vld1q_s8(a[i].qs), vld1q_s8(b[i].qs), vld1q_s8(a[i].qs + 16), vld1q_s8(b[i].qs + 16));
        acc0 = vmlaq_n_f32(acc0, vcvtq_f32_s32(p0), neon_fp16_to_f32(a[i].d) * neon_fp16_to_f32(b[i].d));
    }
    *s = vaddvq_f32(vaddq_f32(acc0, acc1));
}

// The 32 levels of a q4 block as two signed vectors (elements 0..15, 16..31), minus off.
static inline void NEON_NAME(q4_levels)(const uint8_t * qs, int8_t off, int8x16_t * lo, int8x16_t * hi) {
    const uint8x16_t v = vld1q_u8(qs);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), vdupq_n_s8(off));
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), vdupq_n_s8(off));
}

// The 32 levels of a q5 block (bit 4 of element j is bit j of qh), minus off.
static inline void NEON_NAME(q5_levels)(const uint8_t * qs, const uint8_t * qhp, int8_t off, int8x16_t * lo, int8x16_t * hi) {
    static const uint8_t bit_tab[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t bits = vld1q_u8(bit_tab);
    const uint8x16_t h0 = vcombine_u8(vdup_n_u8(qhp[0]), vdup_n_u8(qhp[1]));
    const uint8x16_t h1 = vcombine_u8(vdup_n_u8(qhp[2]), vdup_n_u8(qhp[3]));
    const uint8x16_t b4 = vdupq_n_u8(0x10);
    const uint8x16_t v = vld1q_u8(qs);
    const uint8x16_t l = vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0F)), vandq_u8(vtstq_u8(h0, bits), b4));
    const uint8x16_t h = vorrq_u8(vshrq_n_u8(v, 4), vandq_u8(vtstq_u8(h1, bits), b4));
    *lo = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8(off));
    *hi = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8(off));
}

static void NEON_NAME(vec_dot_q4_0_q8_0)(int n, float * s, const void * x, const void * y) {
    const block_q4_0 * a = (const block_q4_0 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int nb = n / QK8_0;
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int i = 0; i < nb; i++) {
        int8x16_t lo, hi;
        NEON_NAME(q4_levels)(a[i].qs, 8, &lo, &hi);
        const int32x4_t p = NEON_NAME(dot2)(lo, vld1q_s8(b[i].qs), hi, vld1q_s8(b[i].qs + 16));
        acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), neon_fp16_to_f32(a[i].d) * neon_fp16_to_f32(b[i].d));
    }
    *s = vaddvq_f32(acc);
}

static void NEON_NAME(vec_dot_q4_1_q8_1)(int n, float * s, const void * x, const void * y) {
    const block_q4_1 * a = (const block_q4_1 *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK8_1;
    float32x4_t acc = vdupq_n_f32(0.0f);
    float summ = 0.0f;
    for (int i = 0; i < nb; i++) {
        int8x16_t lo, hi;
        NEON_NAME(q4_levels)(a[i].qs, 0, &lo, &hi);
        const int32x4_t p = NEON_NAME(dot2)(lo, vld1q_s8(b[i].qs), hi, vld1q_s8(b[i].qs + 16));
        acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), neon_fp16_to_f32(a[i].d) * b[i].d);
        summ += neon_fp16_to_f32(a[i].m) * b[i].s;
    }
    *s = vaddvq_f32(acc) + summ;
}

static void NEON_NAME(vec_dot_q5_0_q8_0)(int n, float * s, const void * x, const void * y) {
    const block_q5_0 * a = (const block_q5_0 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int nb = n / QK8_0;
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int i = 0; i < nb; i++) {
        int8x16_t lo, hi;
        NEON_NAME(q5_levels)(a[i].qs, a[i].qh, 16, &lo, &hi);
        const int32x4_t p = NEON_NAME(dot2)(lo, vld1q_s8(b[i].qs), hi, vld1q_s8(b[i].qs + 16));
        acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), neon_fp16_to_f32(a[i].d) * neon_fp16_to_f32(b[i].d));
    }
    *s = vaddvq_f32(acc);
}

static void NEON_NAME(vec_dot_q5_1_q8_1)(int n, float * s, const void * x, const void * y) {
    const block_q5_1 * a = (const block_q5_1 *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK8_1;
    float32x4_t acc = vdupq_n_f32(0.0f);
    float summ = 0.0f;
    for (int i = 0; i < nb; i++) {
        int8x16_t lo, hi;
        NEON_NAME(q5_levels)(a[i].qs, a[i].qh, 0, &lo, &hi);
        const int32x4_t p = NEON_NAME(dot2)(lo, vld1q_s8(b[i].qs), hi, vld1q_s8(b[i].qs + 16));
        acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), neon_fp16_to_f32(a[i].d) * b[i].d);
        summ += neon_fp16_to_f32(a[i].m) * b[i].s;
    }
    *s = vaddvq_f32(acc) + summ;
}

// ---- K-quants: integer dot per sub-block, times its integer scale ----

static inline int NEON_NAME(dot16)(int8x16_t a, const int8_t * q8) {
    return vaddvq_s32(NEON_I8DOT(vdupq_n_s32(0), a, vld1q_s8(q8)));
}

static void NEON_NAME(vec_dot_q2_K_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_q2_K * a = (const block_q2_K *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    const uint8x16_t m3 = vdupq_n_u8(3);
    for (int i = 0; i < nb; i++) {
        int summs = 0;
        for (int j = 0; j < 16; j++) summs += b[i].bsums[j] * (a[i].scales[j] >> 4);
        int isum = 0;
        for (int c = 0; c < QK_K / 128; c++) {
            const uint8x16_t q0 = vld1q_u8(a[i].qs + 32 * c);
            const uint8x16_t q1 = vld1q_u8(a[i].qs + 32 * c + 16);
            const int8_t * q8 = b[i].qs + 128 * c;
            const uint8_t * sc = a[i].scales + 8 * c;
            for (int sh = 0; sh < 4; sh++) {
                const uint8x16_t sv = vreinterpretq_u8_s8(vdupq_n_s8((int8_t) (-2 * sh)));
                const int8x16_t v0 = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q0, vreinterpretq_s8_u8(sv)), m3));
                const int8x16_t v1 = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q1, vreinterpretq_s8_u8(sv)), m3));
                isum += (sc[2 * sh] & 0xF) * NEON_NAME(dot16)(v0, q8 + 32 * sh) +
                    (sc[2 * sh + 1] & 0xF) * NEON_NAME(dot16)(v1, q8 + 32 * sh + 16);
            }
        }
        const float dall = b[i].d * neon_fp16_to_f32(a[i].d);
        const float dmin = b[i].d * neon_fp16_to_f32(a[i].dmin);
        sum += dall * (float) isum - dmin * (float) summs;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_q3_K_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_q3_K * a = (const block_q3_K *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    const uint8x16_t m3 = vdupq_n_u8(3), m1 = vdupq_n_u8(1), four = vdupq_n_u8(4);
    for (int i = 0; i < nb; i++) {
        int8_t sc[16];
        ggml_quants_unpack_q3_K_scales(a[i].scales, sc);
        const uint8x16_t hm0 = vld1q_u8(a[i].hmask), hm1 = vld1q_u8(a[i].hmask + 16);
        int isum = 0;
        for (int c = 0; c < QK_K / 128; c++) {
            const uint8x16_t q0 = vld1q_u8(a[i].qs + 32 * c);
            const uint8x16_t q1 = vld1q_u8(a[i].qs + 32 * c + 16);
            const int8_t * q8 = b[i].qs + 128 * c;
            for (int sh = 0; sh < 4; sh++) {
                const int8x16_t shq = vdupq_n_s8((int8_t) (-2 * sh));
                const int8x16_t shh = vdupq_n_s8((int8_t) (-(4 * c + sh)));
                // level = low 2 bits - 4 unless the hmask bit is set
                const uint8x16_t l0 = vandq_u8(vshlq_u8(q0, shq), m3);
                const uint8x16_t l1 = vandq_u8(vshlq_u8(q1, shq), m3);
                const uint8x16_t h0 = vshlq_n_u8(vandq_u8(vshlq_u8(hm0, shh), m1), 2);
                const uint8x16_t h1 = vshlq_n_u8(vandq_u8(vshlq_u8(hm1, shh), m1), 2);
                const int8x16_t v0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l0, h0)), vreinterpretq_s8_u8(four));
                const int8x16_t v1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l1, h1)), vreinterpretq_s8_u8(four));
                const int sub = 8 * c + 2 * sh;
                isum += (sc[sub] - 32) * NEON_NAME(dot16)(v0, q8 + 32 * sh) +
                    (sc[sub + 1] - 32) * NEON_NAME(dot16)(v1, q8 + 32 * sh + 16);
            }
        }
        sum += neon_fp16_to_f32(a[i].d) * b[i].d * (float) isum;
    }
    *s = sum;
}

// q4_K / q5_K / q6_K against q8_1: each 32 values' integer dot (times the weights' integer
// sub-block scales) becomes a float with the q8_1 block's scale; mins come in with its s.
static void NEON_NAME(vec_dot_q4_K_q8_1)(int n, float * s, const void * x, const void * y) {
    const block_q4_K * a = (const block_q4_K *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (int i = 0; i < nb; i++) {
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) ggml_quants_get_scale_min_k4(j, a[i].scales, &sc[j], &m[j]);
        const block_q8_1 * bi = b + (size_t) i * 8;
        float fsum = 0.0f, fmin = 0.0f;
        for (int j = 0; j < QK_K / 64; j++) {
            const uint8x16_t q0 = vld1q_u8(a[i].qs + 32 * j);
            const uint8x16_t q1 = vld1q_u8(a[i].qs + 32 * j + 16);
            const int8_t * y0 = bi[2 * j].qs;
            const int8_t * y1 = bi[2 * j + 1].qs;
            const int32x4_t plo = NEON_NAME(dot2)(vreinterpretq_s8_u8(vandq_u8(q0, m4)), vld1q_s8(y0),
                                                  vreinterpretq_s8_u8(vandq_u8(q1, m4)), vld1q_s8(y0 + 16));
            const int32x4_t phi = NEON_NAME(dot2)(vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vld1q_s8(y1),
                                                  vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), vld1q_s8(y1 + 16));
            fsum +=
                bi[2 * j].d * (float) (sc[2 * j] * vaddvq_s32(plo)) + bi[2 * j + 1].d * (float) (sc[2 * j + 1] * vaddvq_s32(phi));
            fmin += bi[2 * j].s * (float) m[2 * j] + bi[2 * j + 1].s * (float) m[2 * j + 1];
        }
        sum += neon_fp16_to_f32(a[i].d) * fsum - neon_fp16_to_f32(a[i].dmin) * fmin;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_q5_K_q8_1)(int n, float * s, const void * x, const void * y) {
    const block_q5_K * a = (const block_q5_K *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), b4 = vdupq_n_u8(0x10);
    for (int i = 0; i < nb; i++) {
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) ggml_quants_get_scale_min_k4(j, a[i].scales, &sc[j], &m[j]);
        const block_q8_1 * bi = b + (size_t) i * 8;
        const uint8x16_t qh0 = vld1q_u8(a[i].qh), qh1 = vld1q_u8(a[i].qh + 16);
        float fsum = 0.0f, fmin = 0.0f;
        for (int j = 0; j < QK_K / 64; j++) {
            const uint8x16_t q0 = vld1q_u8(a[i].qs + 32 * j);
            const uint8x16_t q1 = vld1q_u8(a[i].qs + 32 * j + 16);
            const uint8x16_t blo = vdupq_n_u8((uint8_t) (1u << (2 * j)));
            const uint8x16_t bhi = vdupq_n_u8((uint8_t) (1u << (2 * j + 1)));
            const uint8x16_t l0 = vorrq_u8(vandq_u8(q0, m4), vandq_u8(vtstq_u8(qh0, blo), b4));
            const uint8x16_t l1 = vorrq_u8(vandq_u8(q1, m4), vandq_u8(vtstq_u8(qh1, blo), b4));
            const uint8x16_t h0 = vorrq_u8(vshrq_n_u8(q0, 4), vandq_u8(vtstq_u8(qh0, bhi), b4));
            const uint8x16_t h1 = vorrq_u8(vshrq_n_u8(q1, 4), vandq_u8(vtstq_u8(qh1, bhi), b4));
            const int8_t * y0 = bi[2 * j].qs;
            const int8_t * y1 = bi[2 * j + 1].qs;
            const int32x4_t plo =
                NEON_NAME(dot2)(vreinterpretq_s8_u8(l0), vld1q_s8(y0), vreinterpretq_s8_u8(l1), vld1q_s8(y0 + 16));
            const int32x4_t phi =
                NEON_NAME(dot2)(vreinterpretq_s8_u8(h0), vld1q_s8(y1), vreinterpretq_s8_u8(h1), vld1q_s8(y1 + 16));
            fsum +=
                bi[2 * j].d * (float) (sc[2 * j] * vaddvq_s32(plo)) + bi[2 * j + 1].d * (float) (sc[2 * j + 1] * vaddvq_s32(phi));
            fmin += bi[2 * j].s * (float) m[2 * j] + bi[2 * j + 1].s * (float) m[2 * j + 1];
        }
        sum += neon_fp16_to_f32(a[i].d) * fsum - neon_fp16_to_f32(a[i].dmin) * fmin;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_q6_K_q8_1)(int n, float * s, const void * x, const void * y) {
    const block_q6_K * a = (const block_q6_K *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK_K;
    float sum = 0.0f;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(0x03);
    const int8x16_t off = vdupq_n_s8(32);
    for (int i = 0; i < nb; i++) {
        const int8_t * sc = a[i].scales;
        const block_q8_1 * bi = b + (size_t) i * 8;
        float fsum = 0.0f;
        for (int c = 0; c < QK_K / 128; c++) {
            const uint8_t * ql = a[i].ql + 64 * c;
            const uint8_t * qh = a[i].qh + 32 * c;
            int isub[4] = { 0, 0, 0, 0 }; // the 32-element sub-blocks 4c..4c+3
            for (int half = 0; half < 2; half++) {
                const uint8x16_t l0 = vld1q_u8(ql + 16 * half);
                const uint8x16_t l1 = vld1q_u8(ql + 32 + 16 * half);
                const uint8x16_t h = vld1q_u8(qh + 16 * half);
                // elements 16*half + {0, 32, 64, 96} + l of this 128-chunk
                const uint8x16_t u[4] = {
                    vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(h, m3), 4)),
                    vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4)),
                    vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4)),
                    vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4)),
                };
                for (int k = 0; k < 4; k++) {
                    const int8x16_t v = vsubq_s8(vreinterpretq_s8_u8(u[k]), off);
                    isub[k] += sc[8 * c + 2 * k + half] * NEON_NAME(dot16)(v, bi[4 * c + k].qs + 16 * half);
                }
            }
            for (int k = 0; k < 4; k++) fsum += bi[4 * c + k].d * (float) isub[k];
        }
        sum += neon_fp16_to_f32(a[i].d) * fsum;
    }
    *s = sum;
}

// Installs this compilation's dot kernels.
static void NEON_NAME(install)(struct ggml_type_traits_cpu * t) {
    t[GGML_TYPE_Q4_0].vec_dot = NEON_NAME(vec_dot_q4_0_q8_0);
    t[GGML_TYPE_Q4_1].vec_dot = NEON_NAME(vec_dot_q4_1_q8_1);
    t[GGML_TYPE_Q5_0].vec_dot = NEON_NAME(vec_dot_q5_0_q8_0);
    t[GGML_TYPE_Q5_1].vec_dot = NEON_NAME(vec_dot_q5_1_q8_1);
    t[GGML_TYPE_Q8_0].vec_dot = NEON_NAME(vec_dot_q8_0_q8_0);
    t[GGML_TYPE_Q2_K].vec_dot = NEON_NAME(vec_dot_q2_K_q8_K);
    t[GGML_TYPE_Q3_K].vec_dot = NEON_NAME(vec_dot_q3_K_q8_K);
    t[GGML_TYPE_Q4_K].vec_dot = NEON_NAME(vec_dot_q4_K_q8_1);
    t[GGML_TYPE_Q5_K].vec_dot = NEON_NAME(vec_dot_q5_K_q8_1);
    t[GGML_TYPE_Q6_K].vec_dot = NEON_NAME(vec_dot_q6_K_q8_1);
}
