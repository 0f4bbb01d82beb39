// quants-iq-neon-kernels.h — NEON dot products of IQ4_NL, IQ4_XS, MXFP4 (against Q8_0), the IQ3 /
// IQ2 / IQ1 codebook types and TQ1_0 / TQ2_0 (against Q8_K), compiled twice by quants-neon.c after
// quants-neon-kernels.h (with and without sdot; NEON_NAME, NEON_I8DOT and that file's dot2 and
// dot16 as there). Not a public header: include only there.
//
// Levels come from one table lookup (tbl) of the 16-entry level table, or from codebook entries
// read as 8-byte words with their signs applied as byte masks (neon_sign_mask16). The integer
// sums per sub-block and the float steps per block are the portable kernels' own
// (quants-iq-generic.c), in their order: the results are the portable ones bit for bit.

// ---- 32-granular types against Q8_0 ----

// Integer dot of 32 nibble-coded levels (table lut; low nibbles values 0..15, high 16..31) with
// 32 int8 activations.
static inline int NEON_NAME(lut_dot32)(int8x16_t lut, const uint8_t * qs, const int8_t * q8) {
    const uint8x16_t v = vld1q_u8(qs);
    const int8x16_t lo = vqtbl1q_s8(lut, vandq_u8(v, vdupq_n_u8(0x0F)));
    const int8x16_t hi = vqtbl1q_s8(lut, vshrq_n_u8(v, 4));
    return vaddvq_s32(NEON_NAME(dot2)(lo, vld1q_s8(q8), hi, vld1q_s8(q8 + 16)));
}

// IQ4_NL (fp16 d) and MXFP4 (E8M0 e) blocks: 32 values through their level table, one scale.
static inline __attribute__((always_inline)) void NEON_NAME(dot_lut_blocks)(int n, float * s, const void * x, const void * y,
                                                                            const bool mx) {
    const block_iq4_nl * an = (const block_iq4_nl *) x;
    const block_mxfp4 * am = (const block_mxfp4 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int8x16_t lut = vld1q_s8(mx ? ggml_kvalues_mxfp4 : ggml_kvalues_iq4nl);
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) {
        const int sumi = NEON_NAME(lut_dot32)(lut, mx ? am[i].qs : an[i].qs, b[i].qs);
        const float da = mx ? ggml_e8m0_to_fp32_half(am[i].e) : neon_fp16_to_f32(an[i].d);
        sum += (float) sumi * (da * neon_fp16_to_f32(b[i].d));
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_iq4_nl_q8_0)(int n, float * s, const void * x, const void * y) {
    NEON_NAME(dot_lut_blocks)(n, s, x, y, false);
}

static void NEON_NAME(vec_dot_mxfp4_q8_0)(int n, float * s, const void * x, const void * y) {
    NEON_NAME(dot_lut_blocks)(n, s, x, y, true);
}

static void NEON_NAME(vec_dot_iq4_xs_q8_0)(int n, float * s, const void * x, const void * y) {
    const block_iq4_xs * a = (const block_iq4_xs *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    const int8x16_t lut = vld1q_s8(ggml_kvalues_iq4nl);
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const float d = neon_fp16_to_f32(a[i].d);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int ls = ((a[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((a[i].scales_h >> (2 * ib)) & 3) << 4);
            const block_q8_0 * bb = b + (size_t) i * 8 + ib;
            const int sumi = NEON_NAME(lut_dot32)(lut, a[i].qs + 16 * ib, bb->qs);
            sum += (float) ((ls - 32) * sumi) * (d * neon_fp16_to_f32(bb->d));
        }
    }
    *s = sum;
}

// ---- codebook types against Q8_K ----

// Dot of two signed 8-value grid entries (g0: values 0..7, g1: 8..15, signs s0 / s1: bit j
// negates value j) with 16 activations.
static inline int32x4_t NEON_NAME(grid_dot16)(int32x4_t acc, uint64_t g0, uint64_t g1, uint8_t s0, uint8_t s1,
                                              const int8_t * q8) {
    const int8x16_t g = neon_grid16(g0, g1);
    const int8x16_t v = vbslq_s8(neon_sign_mask16(s0, s1), vnegq_s8(g), g);
    return NEON_I8DOT(acc, v, vld1q_s8(q8));
}

static void NEON_NAME(vec_dot_iq2_xxs_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_iq2_xxs * a = (const block_iq2_xxs *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const int8_t * q8 = b[i].qs;
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++, q8 += 32) {
            uint32_t w[2];
            memcpy(w, a[i].qs + 4 * ib, sizeof(w));
            const uint8_t * idx = (const uint8_t *) &w[0];
            int32x4_t p = NEON_NAME(grid_dot16)(vdupq_n_s32(0), ggml_iq2xxs_grid[idx[0]], ggml_iq2xxs_grid[idx[1]],
                                                ggml_iq2_ksigns[w[1] & 127], ggml_iq2_ksigns[(w[1] >> 7) & 127], q8);
            p = NEON_NAME(grid_dot16)(p, ggml_iq2xxs_grid[idx[2]], ggml_iq2xxs_grid[idx[3]], ggml_iq2_ksigns[(w[1] >> 14) & 127],
                                      ggml_iq2_ksigns[(w[1] >> 21) & 127], q8 + 16);
            isum += (int) (2 * (w[1] >> 28) + 1) * vaddvq_s32(p); // (0.5 + s) / 4 = (2 s + 1) / 8
        }
        sum += 0.125f * (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_iq2_xs_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_iq2_xs * a = (const block_iq2_xs *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const uint16_t * q = a[i].qs + 4 * ib;
            const int8_t * q8 = b[i].qs + 32 * ib;
            const int32x4_t p0 = NEON_NAME(grid_dot16)(vdupq_n_s32(0), ggml_iq2xs_grid[q[0] & 511], ggml_iq2xs_grid[q[1] & 511],
                                                       ggml_iq2_ksigns[q[0] >> 9], ggml_iq2_ksigns[q[1] >> 9], q8);
            const int32x4_t p1 = NEON_NAME(grid_dot16)(vdupq_n_s32(0), ggml_iq2xs_grid[q[2] & 511], ggml_iq2xs_grid[q[3] & 511],
                                                       ggml_iq2_ksigns[q[2] >> 9], ggml_iq2_ksigns[q[3] >> 9], q8 + 16);
            const int sc = a[i].scales[ib];
            isum += (2 * (sc & 0xF) + 1) * vaddvq_s32(p0) + (2 * (sc >> 4) + 1) * vaddvq_s32(p1);
        }
        sum += 0.125f * (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_iq2_s_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_iq2_s * a = (const block_iq2_s *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const uint8_t * signs = a[i].qs + QK_IQ / 8;
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const uint8_t * q = a[i].qs + 4 * ib;
            const uint8_t * sg = signs + 4 * ib;
            const int h = a[i].qh[ib];
            const int8_t * q8 = b[i].qs + 32 * ib;
            const int32x4_t p0 = NEON_NAME(grid_dot16)(vdupq_n_s32(0), ggml_iq2s_grid[q[0] | ((h << 8) & 0x300)],
                                                       ggml_iq2s_grid[q[1] | ((h << 6) & 0x300)], sg[0], sg[1], q8);
            const int32x4_t p1 = NEON_NAME(grid_dot16)(vdupq_n_s32(0), ggml_iq2s_grid[q[2] | ((h << 4) & 0x300)],
                                                       ggml_iq2s_grid[q[3] | ((h << 2) & 0x300)], sg[2], sg[3], q8 + 16);
            const int sc = a[i].scales[ib];
            isum += (2 * (sc & 0xF) + 1) * vaddvq_s32(p0) + (2 * (sc >> 4) + 1) * vaddvq_s32(p1);
        }
        sum += 0.125f * (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_iq3_xxs_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_iq3_xxs * a = (const block_iq3_xxs *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    const uint32_t * grid = ggml_iq3xxs_grid;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const uint8_t * q = a[i].qs + 8 * ib;
            const int8_t * q8 = b[i].qs + 32 * ib;
            uint32_t w;
            memcpy(&w, a[i].qs + QK_IQ / 4 + 4 * ib, sizeof(w));
            int32x4_t p = NEON_NAME(grid_dot16)(vdupq_n_s32(0), neon_iq3_pair(grid[q[0]], grid[q[1]]),
                                                neon_iq3_pair(grid[q[2]], grid[q[3]]), ggml_iq2_ksigns[w & 127],
                                                ggml_iq2_ksigns[(w >> 7) & 127], q8);
            p = NEON_NAME(grid_dot16)(p, neon_iq3_pair(grid[q[4]], grid[q[5]]), neon_iq3_pair(grid[q[6]], grid[q[7]]),
                                      ggml_iq2_ksigns[(w >> 14) & 127], ggml_iq2_ksigns[(w >> 21) & 127], q8 + 16);
            isum += (int) (2 * (w >> 28) + 1) * vaddvq_s32(p); // (0.5 + s) / 2 = (2 s + 1) / 4
        }
        sum += 0.25f * (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_iq3_s_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_iq3_s * a = (const block_iq3_s *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const uint8_t * q = a[i].qs + 8 * ib;
            const uint8_t * sg = a[i].signs + 4 * ib;
            const int h = a[i].qh[ib];
            const int8_t * q8 = b[i].qs + 32 * ib;
            uint32_t g[8];
            for (int l = 0; l < 8; l++) g[l] = ggml_iq3s_grid[q[l] | (((h >> l) & 1) << 8)];
            int32x4_t p =
                NEON_NAME(grid_dot16)(vdupq_n_s32(0), neon_iq3_pair(g[0], g[1]), neon_iq3_pair(g[2], g[3]), sg[0], sg[1], q8);
            p = NEON_NAME(grid_dot16)(p, neon_iq3_pair(g[4], g[5]), neon_iq3_pair(g[6], g[7]), sg[2], sg[3], q8 + 16);
            const int ls = 2 * ((a[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1;
            isum += ls * vaddvq_s32(p);
        }
        sum += (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

// ---- IQ1_S / IQ1_M: 8 * (grid + delta) = 8 g +- 1 is an int8 level ----

// Dot of the levels 8 g + delta of two grid entries (deltas d0, d1: +1 or -1) with 16 activations.
static inline int NEON_NAME(iq1_dot16)(int i0, int i1, int8_t d0, int8_t d1, const int8_t * q8) {
    const int8x16_t g = neon_grid16(ggml_iq1s_grid[i0], ggml_iq1s_grid[i1]);
    const int8x16_t v = vaddq_s8(vshlq_n_s8(g, 3), vcombine_s8(vdup_n_s8(d0), vdup_n_s8(d1)));
    return NEON_NAME(dot16)(v, q8);
}

static void NEON_NAME(vec_dot_iq1_s_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_iq1_s * a = (const block_iq1_s *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int qh = a[i].qh[ib];
            const uint8_t * q = a[i].qs + 4 * ib;
            const int8_t * q8 = b[i].qs + 32 * ib;
            const int8_t dl = qh & 0x8000 ? -1 : 1;
            const int si = NEON_NAME(iq1_dot16)(q[0] | ((qh << 8) & 0x700), q[1] | ((qh << 5) & 0x700), dl, dl, q8) +
                NEON_NAME(iq1_dot16)(q[2] | ((qh << 2) & 0x700), q[3] | ((qh >> 1) & 0x700), dl, dl, q8 + 16);
            isum += (2 * ((qh >> 12) & 7) + 1) * si;
        }
        sum += 0.125f * (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_iq1_m_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_iq1_m * a = (const block_iq1_m *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        uint16_t sc[4];
        memcpy(sc, a[i].scales, sizeof(sc));
        int isum = 0;
        for (int ks = 0; ks < QK_IQ / 16; ks++) {
            // the 16 values of scale ks: grid entries 2 ks and 2 ks + 1, their index high bits and
            // delta signs in the two nibbles of qh[ks]
            const int h = a[i].qh[ks];
            const int ls = 2 * ((sc[ks / 4] >> (3 * (ks % 4))) & 7) + 1;
            const int si = NEON_NAME(iq1_dot16)(a[i].qs[2 * ks] | ((h << 8) & 0x700), a[i].qs[2 * ks + 1] | ((h << 4) & 0x700),
                                                h & 0x08 ? -1 : 1, h & 0x80 ? -1 : 1, b[i].qs + 16 * ks);
            isum += ls * si;
        }
        sum += 0.125f * (ggml_iq1_m_scale(&a[i]) * b[i].d) * (float) isum;
    }
    *s = sum;
}

// ---- ternary types against Q8_K: sum((t - 1) q) = sum(t q) - sum(q), the latter from bsums ----

static void NEON_NAME(vec_dot_tq2_0_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_tq2_0 * a = (const block_tq2_0 *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    const uint8x16_t m3 = vdupq_n_u8(3);
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int32x4_t acc = vdupq_n_s32(0);
        for (int c = 0; c < QK_IQ / 128; c++) {
            const uint8x16_t q0 = vld1q_u8(a[i].qs + 32 * c), q1 = vld1q_u8(a[i].qs + 32 * c + 16);
            const int8_t * q8 = b[i].qs + 128 * c;
            for (int t = 0; t < 4; t++) {
                const int8x16_t sh = vdupq_n_s8((int8_t) (-2 * t));
                const int8x16_t u0 = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q0, sh), m3));
                const int8x16_t u1 = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q1, sh), m3));
                acc = NEON_I8DOT(NEON_I8DOT(acc, u0, vld1q_s8(q8 + 32 * t)), u1, vld1q_s8(q8 + 32 * t + 16));
            }
        }
        const int ysum = neon_bsums_total(b[i].bsums);
        sum += (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) (vaddvq_s32(acc) - ysum);
    }
    *s = sum;
}

static void NEON_NAME(vec_dot_tq1_0_q8_K)(int n, float * s, const void * x, const void * y) {
    const block_tq1_0 * a = (const block_tq1_0 *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const uint8x16_t q0 = vld1q_u8(a[i].qs), q1 = vld1q_u8(a[i].qs + 16), q2 = vld1q_u8(a[i].qs + 32);
        const int8_t * q8 = b[i].qs;
        int32x4_t acc = vdupq_n_s32(0);
        for (int t = 0; t < 5; t++) {
            acc = NEON_I8DOT(acc, neon_tq1_trits16(q0, pow3[t]), vld1q_s8(q8 + 32 * t));
            acc = NEON_I8DOT(acc, neon_tq1_trits16(q1, pow3[t]), vld1q_s8(q8 + 32 * t + 16));
            acc = NEON_I8DOT(acc, neon_tq1_trits16(q2, pow3[t]), vld1q_s8(q8 + 160 + 16 * t));
        }
        int rest = 0; // the last 16 values: four trits in each of the 4 qh bytes
        for (int t = 0; t < 4; t++) {
            for (int j = 0; j < 4; j++) rest += ggml_tq1_trit(a[i].qh[j], t) * q8[240 + 4 * t + j];
        }
        const int ysum = neon_bsums_total(b[i].bsums);
        sum += (neon_fp16_to_f32(a[i].d) * b[i].d) * (float) (vaddvq_s32(acc) + rest - ysum);
    }
    *s = sum;
}

// Installs this compilation's IQ / TQ / MXFP4 dot kernels.
static void NEON_NAME(install_iq)(struct ggml_type_traits_cpu * t) {
    t[GGML_TYPE_IQ4_NL].vec_dot = NEON_NAME(vec_dot_iq4_nl_q8_0);
    t[GGML_TYPE_IQ4_XS].vec_dot = NEON_NAME(vec_dot_iq4_xs_q8_0);
    t[GGML_TYPE_MXFP4].vec_dot = NEON_NAME(vec_dot_mxfp4_q8_0);
    t[GGML_TYPE_IQ2_XXS].vec_dot = NEON_NAME(vec_dot_iq2_xxs_q8_K);
    t[GGML_TYPE_IQ2_XS].vec_dot = NEON_NAME(vec_dot_iq2_xs_q8_K);
    t[GGML_TYPE_IQ2_S].vec_dot = NEON_NAME(vec_dot_iq2_s_q8_K);
    t[GGML_TYPE_IQ3_XXS].vec_dot = NEON_NAME(vec_dot_iq3_xxs_q8_K);
    t[GGML_TYPE_IQ3_S].vec_dot = NEON_NAME(vec_dot_iq3_s_q8_K);
    t[GGML_TYPE_IQ1_S].vec_dot = NEON_NAME(vec_dot_iq1_s_q8_K);
    t[GGML_TYPE_IQ1_M].vec_dot = NEON_NAME(vec_dot_iq1_m_q8_K);
    t[GGML_TYPE_TQ1_0].vec_dot = NEON_NAME(vec_dot_tq1_0_q8_K);
    t[GGML_TYPE_TQ2_0].vec_dot = NEON_NAME(vec_dot_tq2_0_q8_K);
}
