// quants-iq-generic.c — portable dot products of the IQ / TQ / MXFP4 weight types with their
// activation types: Q8_0 (32 values, fp16 scale) for the 32-granular IQ4_NL, IQ4_XS and MXFP4,
// Q8_K (256 values, float scale, per-16 sums) for the super-block codebook and ternary types.
// Integer sums per sub-block; each type's fractional factors ((2s+1)/8, the IQ1 delta 1/8)
// are folded into integers and applied once per block, so these are exact up to the last
// float multiplies. The SIMD sets (quants-iq-avx2.c, ...) are tested against these.
#include "quants.h"

#include <string.h>

// ---- 32-granular types against Q8_0 ----

// Integer dot of 32 nibble-coded levels (table lut) with 32 int8 activations.
static inline int iq_dot_lut32(const int8_t * lut, const uint8_t * qs, const int8_t * q8) {
    int s = 0;
    for (int j = 0; j < 16; j++) s += lut[qs[j] & 0xF] * q8[j] + lut[qs[j] >> 4] * q8[j + 16];
    return s;
}

void ggml_vec_dot_iq4_nl_q8_0_generic(int n, float * s, const void * x, const void * y) {
    const block_iq4_nl * a = (const block_iq4_nl *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK4_NL; i++) {
        const int sumi = iq_dot_lut32(ggml_kvalues_iq4nl, a[i].qs, b[i].qs);
        sum += (float) sumi * (GGML_FP16_TO_FP32(a[i].d) * GGML_FP16_TO_FP32(b[i].d));
    }
    *s = sum;
}

void ggml_vec_dot_mxfp4_q8_0_generic(int n, float * s, const void * x, const void * y) {
    const block_mxfp4 * a = (const block_mxfp4 *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_MXFP4; i++) {
        const int sumi = iq_dot_lut32(ggml_kvalues_mxfp4, a[i].qs, b[i].qs);
        sum += (float) sumi * (ggml_e8m0_to_fp32_half(a[i].e) * GGML_FP16_TO_FP32(b[i].d));
    }
    *s = sum;
}

void ggml_vec_dot_iq4_xs_q8_0_generic(int n, float * s, const void * x, const void * y) {
    const block_iq4_xs * a = (const block_iq4_xs *) x;
    const block_q8_0 * b = (const block_q8_0 *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const float d = GGML_FP16_TO_FP32(a[i].d);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int ls = ((a[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((a[i].scales_h >> (2 * ib)) & 3) << 4);
            const block_q8_0 * bb = b + (size_t) i * 8 + ib;
            const int sumi = iq_dot_lut32(ggml_kvalues_iq4nl, a[i].qs + 16 * ib, bb->qs);
            sum += (float) ((ls - 32) * sumi) * (d * GGML_FP16_TO_FP32(bb->d));
        }
    }
    *s = sum;
}

// ---- codebook types against Q8_K ----

// Dot of a grid entry's n byte values (signs: bit j negates value j) with n activations.
static inline int iq_dot_grid(const uint8_t * g, uint8_t signs, const int8_t * q8, int n) {
    int s = 0;
    for (int j = 0; j < n; j++) s += (signs >> j & 1 ? -g[j] : g[j]) * q8[j];
    return s;
}

void ggml_vec_dot_iq2_xxs_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_iq2_xxs * a = (const block_iq2_xxs *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const int8_t * q8 = b[i].qs;
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            uint32_t w[2];
            memcpy(w, a[i].qs + 4 * ib, sizeof(w));
            const uint8_t * idx = (const uint8_t *) &w[0];
            int si = 0;
            for (int l = 0; l < 4; l++) {
                const uint64_t g = ggml_iq2xxs_grid[idx[l]];
                si += iq_dot_grid((const uint8_t *) &g, ggml_iq2_ksigns[(w[1] >> (7 * l)) & 127], q8 + 8 * l, 8);
            }
            isum += (int) (2 * (w[1] >> 28) + 1) * si;   // (0.5 + s) / 4 = (2 s + 1) / 8
            q8 += 32;
        }
        sum += 0.125f * (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

void ggml_vec_dot_iq2_xs_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_iq2_xs * a = (const block_iq2_xs *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int l = 0; l < QK_IQ / 16; l++) {
            const int ls = 2 * ((a[i].scales[l / 2] >> (4 * (l % 2))) & 0xF) + 1;
            int si = 0;
            for (int h = 0; h < 2; h++) {
                const uint16_t q = a[i].qs[2 * l + h];
                const uint64_t g = ggml_iq2xs_grid[q & 511];
                si += iq_dot_grid((const uint8_t *) &g, ggml_iq2_ksigns[q >> 9], b[i].qs + 16 * l + 8 * h, 8);
            }
            isum += ls * si;
        }
        sum += 0.125f * (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

void ggml_vec_dot_iq2_s_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_iq2_s * a = (const block_iq2_s *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const uint8_t * signs = a[i].qs + QK_IQ / 8;
        int isum = 0;
        for (int l = 0; l < QK_IQ / 16; l++) {
            const int ls = 2 * ((a[i].scales[l / 2] >> (4 * (l % 2))) & 0xF) + 1;
            int si = 0;
            for (int h = 0; h < 2; h++) {
                const int e = 2 * l + h;
                const uint64_t g = ggml_iq2s_grid[a[i].qs[e] | (((a[i].qh[e / 4] >> (2 * (e % 4))) & 3) << 8)];
                si += iq_dot_grid((const uint8_t *) &g, signs[e], b[i].qs + 8 * e, 8);
            }
            isum += ls * si;
        }
        sum += 0.125f * (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

void ggml_vec_dot_iq3_xxs_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_iq3_xxs * a = (const block_iq3_xxs *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const uint8_t * qs = a[i].qs;
        const int8_t * q8 = b[i].qs;
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            uint32_t w;
            memcpy(&w, a[i].qs + QK_IQ / 4 + 4 * ib, sizeof(w));
            int si = 0;
            for (int l = 0; l < 4; l++) {
                const uint8_t sg = ggml_iq2_ksigns[(w >> (7 * l)) & 127];
                const uint32_t g0 = ggml_iq3xxs_grid[qs[2 * l]], g1 = ggml_iq3xxs_grid[qs[2 * l + 1]];
                si += iq_dot_grid((const uint8_t *) &g0, sg & 0xF, q8 + 8 * l, 4) +
                    iq_dot_grid((const uint8_t *) &g1, sg >> 4, q8 + 8 * l + 4, 4);
            }
            isum += (int) (2 * (w >> 28) + 1) * si;   // (0.5 + s) / 2 = (2 s + 1) / 4
            qs += 8;
            q8 += 32;
        }
        sum += 0.25f * (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

void ggml_vec_dot_iq3_s_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_iq3_s * a = (const block_iq3_s *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int ls = 2 * ((a[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1;
            int si = 0;
            for (int l = 0; l < 8; l++) {
                const uint32_t g = ggml_iq3s_grid[a[i].qs[8 * ib + l] | (((a[i].qh[ib] >> l) & 1) << 8)];
                const uint8_t sg = a[i].signs[4 * ib + l / 2];
                si += iq_dot_grid((const uint8_t *) &g, l % 2 ? sg >> 4 : sg & 0xF, b[i].qs + 32 * ib + 4 * l, 4);
            }
            isum += ls * si;
        }
        sum += (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

// 8 * the dot of an IQ1 grid entry (values -1, 0, 1) plus its delta (+-1/8) with 8 activations.
static inline int iq1_dot8(int idx, bool neg_delta, const int8_t * q8) {
    const uint64_t e = ggml_iq1s_grid[idx];
    const int8_t * g = (const int8_t *) &e;
    int s = 0, sq = 0;
    for (int j = 0; j < 8; j++) {
        s += g[j] * q8[j];
        sq += q8[j];
    }
    return 8 * s + (neg_delta ? -sq : sq);
}

void ggml_vec_dot_iq1_s_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_iq1_s * a = (const block_iq1_s *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const uint16_t qh = a[i].qh[ib];
            int si = 0;
            for (int l = 0; l < 4; l++) {
                si += iq1_dot8(a[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8), qh & 0x8000, b[i].qs + 32 * ib + 8 * l);
            }
            isum += (2 * ((qh >> 12) & 7) + 1) * si;
        }
        sum += 0.125f * (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) isum;
    }
    *s = sum;
}

void ggml_vec_dot_iq1_m_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_iq1_m * a = (const block_iq1_m *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        uint16_t sc[4];
        memcpy(sc, a[i].scales, sizeof(sc));
        int isum = 0;
        for (int ks = 0; ks < QK_IQ / 16; ks++) {
            const int ls = 2 * ((sc[ks / 4] >> (3 * (ks % 4))) & 7) + 1;
            int si = 0;
            for (int h = 0; h < 2; h++) {
                const int l = 2 * ks + h;
                const int nib = (a[i].qh[l / 2] >> (4 * (l % 2))) & 0xF;
                si += iq1_dot8(a[i].qs[l] | ((nib & 7) << 8), nib & 8, b[i].qs + 8 * l);
            }
            isum += ls * si;
        }
        sum += 0.125f * (ggml_iq1_m_scale(&a[i]) * b[i].d) * (float) isum;
    }
    *s = sum;
}

// ---- ternary types against Q8_K: sum((t - 1) q) = sum(t q) - sum(q), the latter from bsums ----

static inline int q8k_sum(const block_q8_K * b) {
    int s = 0;
    for (int j = 0; j < QK_IQ / 16; j++) s += b->bsums[j];
    return s;
}

void ggml_vec_dot_tq1_0_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_tq1_0 * a = (const block_tq1_0 *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        const int8_t * q8 = b[i].qs;
        int isum = 0;
        for (int t = 0; t < 5; t++) {
            for (int j = 0; j < 32; j++) isum += ggml_tq1_trit(a[i].qs[j], t) * q8[32 * t + j];
            for (int j = 0; j < 16; j++) isum += ggml_tq1_trit(a[i].qs[32 + j], t) * q8[160 + 16 * t + j];
        }
        for (int t = 0; t < 4; t++) {
            for (int j = 0; j < 4; j++) isum += ggml_tq1_trit(a[i].qh[j], t) * q8[240 + 4 * t + j];
        }
        sum += (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) (isum - q8k_sum(&b[i]));
    }
    *s = sum;
}

void ggml_vec_dot_tq2_0_q8_K_generic(int n, float * s, const void * x, const void * y) {
    const block_tq2_0 * a = (const block_tq2_0 *) x;
    const block_q8_K * b = (const block_q8_K *) y;
    float sum = 0.0f;
    for (int i = 0; i < n / QK_IQ; i++) {
        int isum = 0;
        for (int c = 0; c < QK_IQ / 128; c++) {
            for (int t = 0; t < 4; t++) {
                for (int j = 0; j < 32; j++) isum += ((a[i].qs[32 * c + j] >> (2 * t)) & 3) * b[i].qs[128 * c + 32 * t + j];
            }
        }
        sum += (GGML_FP16_TO_FP32(a[i].d) * b[i].d) * (float) (isum - q8k_sum(&b[i]));
    }
    *s = sum;
}

// ---- table entries ----

void ggml_cpu_quants_init_iq_generic(struct ggml_type_traits_cpu * t) {
    static const struct {
        enum ggml_type type;
        ggml_vec_dot_t dot;
        enum ggml_type act;
    } e[] = {
        { GGML_TYPE_IQ4_NL, ggml_vec_dot_iq4_nl_q8_0_generic, GGML_TYPE_Q8_0 },
        { GGML_TYPE_IQ4_XS, ggml_vec_dot_iq4_xs_q8_0_generic, GGML_TYPE_Q8_0 },
        { GGML_TYPE_MXFP4, ggml_vec_dot_mxfp4_q8_0_generic, GGML_TYPE_Q8_0 },
        { GGML_TYPE_IQ2_XXS, ggml_vec_dot_iq2_xxs_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ2_XS, ggml_vec_dot_iq2_xs_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ2_S, ggml_vec_dot_iq2_s_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ3_XXS, ggml_vec_dot_iq3_xxs_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ3_S, ggml_vec_dot_iq3_s_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ1_S, ggml_vec_dot_iq1_s_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ1_M, ggml_vec_dot_iq1_m_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_TQ1_0, ggml_vec_dot_tq1_0_q8_K_generic, GGML_TYPE_Q8_K },
        { GGML_TYPE_TQ2_0, ggml_vec_dot_tq2_0_q8_K_generic, GGML_TYPE_Q8_K },
    };
    for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
        t[e[i].type].vec_dot = e[i].dot;
        t[e[i].type].vec_dot_type = e[i].act;
    }
}
