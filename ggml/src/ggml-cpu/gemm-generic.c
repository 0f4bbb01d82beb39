// gemm-generic.c — the portable GEMM pieces (see gemm.h for the formats): per-type unpacking of
// weight blocks into levels and scales, the panel packer, the activation group filler and a
// scalar 16 x 8 kernel. The kernel is the reference the SIMD ones are tested against, so it
// spells the arithmetic of gemm.h out directly.
#include "gemm.h"

#include <string.h>

#define FP16(x) GGML_FP16_TO_FP32(x)

// One storage block of a weight row ("unit": 32 elements, or 256 for the K-quants) as levels
// lv[0..unit), and per GEMM block (qb elements) its scale d and minimum m.
typedef void (*unit_levels_t)(const void * blk, uint8_t * lv, float * d, float * m);

static void levels_q4_0(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q4_0 * b = (const block_q4_0 *) vb;
    for (int j = 0; j < QK4_0 / 2; j++) {
        lv[j] = b->qs[j] & 0x0F;
        lv[j + QK4_0 / 2] = b->qs[j] >> 4;
    }
    d[0] = FP16(b->d);
    (void) m;
}

static void levels_q4_1(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q4_1 * b = (const block_q4_1 *) vb;
    for (int j = 0; j < QK4_1 / 2; j++) {
        lv[j] = b->qs[j] & 0x0F;
        lv[j + QK4_1 / 2] = b->qs[j] >> 4;
    }
    d[0] = FP16(b->d);
    m[0] = FP16(b->m);
}

static void levels_q5_0(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q5_0 * b = (const block_q5_0 *) vb;
    uint32_t qh;
    memcpy(&qh, b->qh, sizeof(qh));
    for (int j = 0; j < QK5_0 / 2; j++) {
        lv[j] = (uint8_t) ((b->qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
        lv[j + QK5_0 / 2] = (uint8_t) ((b->qs[j] >> 4) | (((qh >> (j + QK5_0 / 2)) & 1) << 4));
    }
    d[0] = FP16(b->d);
    (void) m;
}

static void levels_q5_1(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q5_1 * b = (const block_q5_1 *) vb;
    uint32_t qh;
    memcpy(&qh, b->qh, sizeof(qh));
    for (int j = 0; j < QK5_1 / 2; j++) {
        lv[j] = (uint8_t) ((b->qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
        lv[j + QK5_1 / 2] = (uint8_t) ((b->qs[j] >> 4) | (((qh >> (j + QK5_1 / 2)) & 1) << 4));
    }
    d[0] = FP16(b->d);
    m[0] = FP16(b->m);
}

static void levels_q8_0(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q8_0 * b = (const block_q8_0 *) vb;
    for (int j = 0; j < QK8_0; j++) lv[j] = (uint8_t) (b->qs[j] + 128);
    d[0] = FP16(b->d);
    (void) m;
}

// q2_K: 16 blocks of 16, x = d*(sc & 15)*q - dmin*(sc >> 4).
static void levels_q2_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q2_K * b = (const block_q2_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const int chunk = e / 128, shift = 2 * ((e % 128) / 32), l = e % 32;
        lv[e] = (uint8_t) ((b->qs[32 * chunk + l] >> shift) & 3);
    }
    const float dd = FP16(b->d), dm = FP16(b->dmin);
    for (int j = 0; j < QK_K / 16; j++) {
        d[j] = dd * (float) (b->scales[j] & 0x0F);
        m[j] = -dm * (float) (b->scales[j] >> 4);
    }
}

// q3_K: 16 blocks of 16, x = d*(sc - 32)*(u - 4) with u = low 2 bits + 4*hmask bit.
static void levels_q3_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q3_K * b = (const block_q3_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const int qv = (b->qs[(e / 128) * 32 + (e % 32)] >> (2 * ((e % 128) / 32))) & 3;
        const int high = (b->hmask[e % 32] >> (e / 32)) & 1;
        lv[e] = (uint8_t) (qv + 4 * high);
    }
    int8_t sc[16];
    ggml_quants_unpack_q3_K_scales(b->scales, sc);
    const float dd = FP16(b->d);
    for (int j = 0; j < QK_K / 16; j++) d[j] = dd * (float) (sc[j] - 32);
    (void) m;
}

// q4_K: 8 blocks of 32, x = d*sc*q - dmin*mn.
static void levels_q4_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q4_K * b = (const block_q4_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const uint8_t q = b->qs[32 * (e / 64) + (e % 32)];
        lv[e] = (uint8_t) ((e / 32) % 2 ? q >> 4 : q & 0x0F);
    }
    const float dd = FP16(b->d), dm = FP16(b->dmin);
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t sc, mn;
        ggml_quants_get_scale_min_k4(j, b->scales, &sc, &mn);
        d[j] = dd * (float) sc;
        m[j] = -dm * (float) mn;
    }
}

// q5_K: q4_K plus a fifth bit: bit j of qh[e % 32] for block j.
static void levels_q5_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q5_K * b = (const block_q5_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const int j = e / 32;
        const uint8_t q = b->qs[32 * (e / 64) + (e % 32)];
        lv[e] = (uint8_t) ((j % 2 ? q >> 4 : q & 0x0F) | (((b->qh[e % 32] >> j) & 1) << 4));
    }
    const float dd = FP16(b->d), dm = FP16(b->dmin);
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t sc, mn;
        ggml_quants_get_scale_min_k4(j, b->scales, &sc, &mn);
        d[j] = dd * (float) sc;
        m[j] = -dm * (float) mn;
    }
}

// q6_K: 16 blocks of 16, x = d*sc*(q - 32) with q = 4 bits of ql + 2 bits of qh.
static void levels_q6_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q6_K * b = (const block_q6_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const int n = e / 128, quad = (e % 128) / 32, l = e % 32;
        const uint8_t ql = b->ql[64 * n + l + 32 * (quad & 1)];
        const int lo = quad >= 2 ? ql >> 4 : ql & 0x0F;
        const int hi = (b->qh[32 * n + l] >> (2 * quad)) & 3;
        lv[e] = (uint8_t) (lo | (hi << 4));
    }
    const float dd = FP16(b->d);
    for (int j = 0; j < QK_K / 16; j++) d[j] = dd * (float) b->scales[j];
    (void) m;
}

// iq4_nl: x = d*kvalues_iq4nl[nibble]; levels kvalues + 128 (off 128, as q8_0's).
static void levels_iq4_nl(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_iq4_nl * b = (const block_iq4_nl *) vb;
    for (int j = 0; j < QK4_NL / 2; j++) {
        lv[j] = (uint8_t) (ggml_kvalues_iq4nl[b->qs[j] & 0x0F] + 128);
        lv[j + QK4_NL / 2] = (uint8_t) (ggml_kvalues_iq4nl[b->qs[j] >> 4] + 128);
    }
    d[0] = FP16(b->d);
    (void) m;
}

// iq4_xs: 8 blocks of 32 laid out as iq4_nl's, x = d*(ls - 32)*kvalues_iq4nl[nibble].
static void levels_iq4_xs(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_iq4_xs * b = (const block_iq4_xs *) vb;
    const float dd = FP16(b->d);
    for (int ib = 0; ib < QK_K / 32; ib++) {
        for (int j = 0; j < 16; j++) {
            lv[32 * ib + j] = (uint8_t) (ggml_kvalues_iq4nl[b->qs[16 * ib + j] & 0x0F] + 128);
            lv[32 * ib + j + 16] = (uint8_t) (ggml_kvalues_iq4nl[b->qs[16 * ib + j] >> 4] + 128);
        }
        d[ib] = dd * (float) (ggml_gemm_iq4_xs_scale(b, ib) - 32);
    }
    (void) m;
}

// ---- the codebook and IQ1 types: signed values v (levels v + ggml_gemm_iq_off) times
// one float per GEMM block (ggml_gemm_iq_scales); IQ1's grid + delta as 8 g +- 1 with the scale / 8 ----

void ggml_gemm_iq_scales(enum ggml_type type, const void * blk, float * d) {
    switch (type) {
        case GGML_TYPE_IQ2_XXS: {
            const block_iq2_xxs * b = (const block_iq2_xxs *) blk;
            const float dd = FP16(b->d);
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                uint32_t w;
                memcpy(&w, b->qs + 4 * ib + 2, sizeof(w));
                d[ib] = dd * (0.5f + (float) (w >> 28)) * 0.25f;
            }
        } break;
        case GGML_TYPE_IQ2_XS:
        case GGML_TYPE_IQ2_S: {
            // the scale nibbles of both lead with d, then differ in what precedes them
            const ggml_fp16_t hd = type == GGML_TYPE_IQ2_XS ? ((const block_iq2_xs *) blk)->d : ((const block_iq2_s *) blk)->d;
            const uint8_t * sc =
                type == GGML_TYPE_IQ2_XS ? ((const block_iq2_xs *) blk)->scales : ((const block_iq2_s *) blk)->scales;
            const float dd = FP16(hd);
            for (int j = 0; j < QK_IQ / 16; j++) d[j] = dd * (0.5f + (float) ((sc[j / 2] >> (4 * (j % 2))) & 0xF)) * 0.25f;
        } break;
        case GGML_TYPE_IQ3_XXS: {
            const block_iq3_xxs * b = (const block_iq3_xxs *) blk;
            const float dd = FP16(b->d);
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                uint32_t w;
                memcpy(&w, b->qs + QK_IQ / 4 + 4 * ib, sizeof(w));
                d[ib] = dd * (0.5f + (float) (w >> 28)) * 0.5f;
            }
        } break;
        case GGML_TYPE_IQ3_S: {
            const block_iq3_s * b = (const block_iq3_s *) blk;
            const float dd = FP16(b->d);
            for (int ib = 0; ib < QK_IQ / 32; ib++) d[ib] = dd * (float) (1 + 2 * ((b->scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
        } break;
        case GGML_TYPE_IQ1_S: {
            const block_iq1_s * b = (const block_iq1_s *) blk;
            const float dd = FP16(b->d);
            for (int ib = 0; ib < QK_IQ / 32; ib++) d[ib] = dd * (float) (2 * ((b->qh[ib] >> 12) & 7) + 1) * 0.125f;
        } break;
        case GGML_TYPE_IQ1_M: {
            const block_iq1_m * b = (const block_iq1_m *) blk;
            const float dd = ggml_iq1_m_scale(b);
            uint16_t sc[4];
            memcpy(sc, b->scales, sizeof(sc));
            for (int j = 0; j < QK_IQ / 16; j++) d[j] = dd * (float) (2 * ((sc[j / 4] >> (3 * (j % 4))) & 7) + 1) * 0.125f;
        } break;
        default: break;
    }
}

// 8 grid magnitudes with 8 sign bits as levels.
static inline void iq_lv8(uint8_t * lv, uint64_t entry, unsigned signs, int off) {
    for (int j = 0; j < 8; j++) {
        const int g = (int) ((entry >> (8 * j)) & 0xFF);
        lv[j] = (uint8_t) ((signs >> j & 1 ? -g : g) + off);
    }
}
static inline void iq_lv4(uint8_t * lv, uint32_t entry, unsigned signs, int off) {
    for (int j = 0; j < 4; j++) {
        const int g = (int) ((entry >> (8 * j)) & 0xFF);
        lv[j] = (uint8_t) ((signs >> j & 1 ? -g : g) + off);
    }
}
// 8 IQ1 grid values (-1, 0, 1) plus delta (+-1/8) as levels 8 g +- 1 + 9.
static inline void iq1_lv8(uint8_t * lv, int idx, bool neg) {
    for (int j = 0; j < 8; j++) lv[j] = (uint8_t) (8 * (int8_t) (ggml_iq1s_grid[idx] >> (8 * j)) + (neg ? -1 : 1) + 9);
}

static void levels_iq(enum ggml_type type, const void * vb, uint8_t * lv, float * d) {
    ggml_gemm_iq_scales(type, vb, d);
    const int off = ggml_gemm_iq_off(type);
    switch (type) {
        case GGML_TYPE_IQ2_XXS: {
            const block_iq2_xxs * b = (const block_iq2_xxs *) vb;
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                uint32_t w[2];
                memcpy(w, b->qs + 4 * ib, sizeof(w));
                for (int l = 0; l < 4; l++) {
                    iq_lv8(lv + 32 * ib + 8 * l, ggml_iq2xxs_grid[(w[0] >> (8 * l)) & 0xFF],
                           ggml_iq2_ksigns[(w[1] >> (7 * l)) & 127], off);
                }
            }
        } break;
        case GGML_TYPE_IQ2_XS: {
            const block_iq2_xs * b = (const block_iq2_xs *) vb;
            for (int l = 0; l < QK_IQ / 8; l++)
                iq_lv8(lv + 8 * l, ggml_iq2xs_grid[b->qs[l] & 511], ggml_iq2_ksigns[b->qs[l] >> 9], off);
        } break;
        case GGML_TYPE_IQ2_S: {
            const block_iq2_s * b = (const block_iq2_s *) vb;
            for (int l = 0; l < QK_IQ / 8; l++) {
                const int idx = b->qs[l] | (((b->qh[l / 4] >> (2 * (l % 4))) & 3) << 8);
                iq_lv8(lv + 8 * l, ggml_iq2s_grid[idx], b->qs[QK_IQ / 8 + l], off);
            }
        } break;
        case GGML_TYPE_IQ3_XXS: {
            const block_iq3_xxs * b = (const block_iq3_xxs *) vb;
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                uint32_t w;
                memcpy(&w, b->qs + QK_IQ / 4 + 4 * ib, sizeof(w));
                for (int l = 0; l < 4; l++) {
                    const unsigned s = ggml_iq2_ksigns[(w >> (7 * l)) & 127];
                    iq_lv4(lv + 32 * ib + 8 * l, ggml_iq3xxs_grid[b->qs[8 * ib + 2 * l]], s & 0xF, off);
                    iq_lv4(lv + 32 * ib + 8 * l + 4, ggml_iq3xxs_grid[b->qs[8 * ib + 2 * l + 1]], s >> 4, off);
                }
            }
        } break;
        case GGML_TYPE_IQ3_S: {
            const block_iq3_s * b = (const block_iq3_s *) vb;
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                for (int l = 0; l < 8; l++) {
                    const int idx = b->qs[8 * ib + l] | (((b->qh[ib] >> l) & 1) << 8);
                    const unsigned sg = b->signs[4 * ib + l / 2];
                    iq_lv4(lv + 32 * ib + 4 * l, ggml_iq3s_grid[idx], l % 2 ? sg >> 4 : sg & 0xF, off);
                }
            }
        } break;
        case GGML_TYPE_IQ1_S: {
            const block_iq1_s * b = (const block_iq1_s *) vb;
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                const int qh = b->qh[ib];
                for (int l = 0; l < 4; l++)
                    iq1_lv8(lv + 32 * ib + 8 * l, b->qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8), qh & 0x8000);
            }
        } break;
        case GGML_TYPE_IQ1_M: {
            const block_iq1_m * b = (const block_iq1_m *) vb;
            for (int l = 0; l < QK_IQ / 8; l++) {
                const int nib = (b->qh[l / 2] >> (4 * (l % 2))) & 0xF;
                iq1_lv8(lv + 8 * l, b->qs[l] | ((nib & 7) << 8), nib & 8);
            }
        } break;
        default: break;
    }
}

#define LEVELS_IQ_FN(name, TYPE)                                            \
    static void name(const void * vb, uint8_t * lv, float * d, float * m) { \
        levels_iq(TYPE, vb, lv, d);                                         \
        (void) m;                                                           \
    }
LEVELS_IQ_FN(levels_iq2_xxs, GGML_TYPE_IQ2_XXS)
LEVELS_IQ_FN(levels_iq2_xs, GGML_TYPE_IQ2_XS)
LEVELS_IQ_FN(levels_iq2_s, GGML_TYPE_IQ2_S)
LEVELS_IQ_FN(levels_iq3_xxs, GGML_TYPE_IQ3_XXS)
LEVELS_IQ_FN(levels_iq3_s, GGML_TYPE_IQ3_S)
LEVELS_IQ_FN(levels_iq1_s, GGML_TYPE_IQ1_S)
LEVELS_IQ_FN(levels_iq1_m, GGML_TYPE_IQ1_M)

static unit_levels_t unit_levels(enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q4_0: return levels_q4_0;
        case GGML_TYPE_Q4_1: return levels_q4_1;
        case GGML_TYPE_Q5_0: return levels_q5_0;
        case GGML_TYPE_Q5_1: return levels_q5_1;
        case GGML_TYPE_Q8_0: return levels_q8_0;
        case GGML_TYPE_Q2_K: return levels_q2_K;
        case GGML_TYPE_Q3_K: return levels_q3_K;
        case GGML_TYPE_Q4_K: return levels_q4_K;
        case GGML_TYPE_Q5_K: return levels_q5_K;
        case GGML_TYPE_Q6_K: return levels_q6_K;
        case GGML_TYPE_IQ4_NL: return levels_iq4_nl;
        case GGML_TYPE_IQ4_XS: return levels_iq4_xs;
        case GGML_TYPE_IQ2_XXS: return levels_iq2_xxs;
        case GGML_TYPE_IQ2_XS: return levels_iq2_xs;
        case GGML_TYPE_IQ2_S: return levels_iq2_s;
        case GGML_TYPE_IQ3_XXS: return levels_iq3_xxs;
        case GGML_TYPE_IQ3_S: return levels_iq3_s;
        case GGML_TYPE_IQ1_S: return levels_iq1_s;
        case GGML_TYPE_IQ1_M: return levels_iq1_m;
        default: return NULL;
    }
}

void ggml_gemm_pack_generic(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K,
                            void * panel) {
    const unit_levels_t levels = unit_levels(gt->type);
    const int64_t unit = ggml_blck_size(gt->type);
    const size_t unit_bytes = ggml_type_size(gt->type);
    const int bpu = (int) (unit / gt->qb);                    // GEMM blocks per storage unit
    const size_t pbb = ggml_gemm_panel_block_bytes(gt);
    const int ng = gt->qb / 4;                                // 4-level groups per block
    uint8_t lv[QK_K];
    float d[QK_K / 16], m[QK_K / 16];
    for (int64_t u = 0; u < K / unit; u++) {
        uint8_t * pu = (uint8_t *) panel + (size_t) u * bpu * pbb;
        for (int r = 0; r < GGML_GEMM_MR; r++) {
            if (r < nr) {
                levels((const char *) rows + (size_t) r * row_stride + (size_t) u * unit_bytes, lv, d, m);
            } else {
                memset(lv, 0, sizeof(lv));
                for (int j = 0; j < bpu; j++) d[j] = m[j] = 0.0f;
            }
            for (int j = 0; j < bpu; j++) {
                uint8_t * pb = pu + (size_t) j * pbb;
                for (int g = 0; g < ng; g++) memcpy(pb + 64 * g + 4 * r, lv + j * gt->qb + 4 * g, 4);
                memcpy(pb + gt->qb * GGML_GEMM_MR + 4 * r, &d[j], 4);
                if (gt->has_min) memcpy(pb + gt->qb * GGML_GEMM_MR + 64 + 4 * r, &m[j], 4);
            }
        }
    }
}

// Writes column c of one activation block: values q (qb of them), their sum times -off into
// corr, and s (da*sum(q), or q8_1's stored s).
static void act_block(const struct ggml_gemm_traits * gt, const int8_t * q, int32_t sum, float s, int c, uint8_t * blk) {
    for (int g = 0; g < gt->qb / 4; g++) memcpy(blk + 32 * g + 4 * c, q + 4 * g, 4);
    const int32_t corr = -gt->off * sum;
    memcpy(blk + gt->qb * GGML_GEMM_NR + 4 * c, &corr, 4);
    memcpy(blk + gt->qb * GGML_GEMM_NR + 32 + 4 * c, &s, 4);
}

// Activation scale a of superblock i of a quantized row: its scale, its first value and (q8_1)
// the stored s of its 32 values. False for an act_type without a GEMM layout.
static bool act_scale(const struct ggml_gemm_traits * gt, const void * qrow, int64_t i, int a, float * da, const int8_t ** q,
                      float * s_stored) {
    const int64_t e0 = (i * ggml_gemm_n_ascales(gt) + a) * (int64_t) (gt->qb * gt->sa); // its first element
    switch (gt->act_type) {
        case GGML_TYPE_Q8_0: {
            const block_q8_0 * b = (const block_q8_0 *) qrow + e0 / QK8_0;
            *da = FP16(b->d);
            *q = b->qs;
            *s_stored = 0.0f;
        }
            return true;
        case GGML_TYPE_Q8_1: {
            const block_q8_1 * b = (const block_q8_1 *) qrow + e0 / QK8_1;
            *da = b->d;
            *q = b->qs;
            *s_stored = b->s;
        }
            return true;
        case GGML_TYPE_Q8_K: {
            const block_q8_K * b = (const block_q8_K *) qrow + e0 / QK_K;
            *da = b->d;
            *q = b->qs;
            *s_stored = 0.0f;
        }
            return true;
        default: return false;
    }
}

// s of weight block h of an activation scale: q8_1's stored one where the block is its whole
// 32 values (the s the vec_dot kernels of q4_1 / q5_1 use), else da*sum(q).
static inline float act_s(const struct ggml_gemm_traits * gt, float da, int32_t sum, float s_stored) {
    return gt->act_type == GGML_TYPE_Q8_1 && gt->qb == QK8_1 ? s_stored : da * (float) sum;
}

static inline int32_t sum_i8(const int8_t * q, int n) {
    int32_t sum = 0;
    for (int k = 0; k < n; k++) sum += q[k];
    return sum;
}

void ggml_gemm_act_generic(const struct ggml_gemm_traits * gt, const void * qrow, int64_t K, int c, void * group) {
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    const int na = ggml_gemm_n_ascales(gt);
    const int64_t nsb = K / (gt->qb * gt->sb);
    for (int64_t i = 0; i < nsb; i++) {
        uint8_t * sbp = (uint8_t *) group + (size_t) i * sbb;
        for (int a = 0; a < na; a++) {
            float da = 0.0f, s_stored = 0.0f;
            const int8_t * q = NULL;
            if (!act_scale(gt, qrow, i, a, &da, &q, &s_stored)) return;
            memcpy(sbp + 32 * a + 4 * c, &da, 4);
            for (int h = 0; h < gt->sa; h++) {
                const int8_t * qq = q + gt->qb * h;
                const int32_t sum = sum_i8(qq, gt->qb);
                act_block(gt, qq, sum, act_s(gt, da, sum, s_stored), c, sbp + 32 * na + (size_t) (a * gt->sa + h) * gbb);
            }
        }
    }
}

void ggml_gemm_act_group_generic(const struct ggml_gemm_traits * gt, const void * qrows, size_t qstride, int nc, int64_t K,
                                 void * group) {
    for (int c = 0; c < nc; c++) gt->act(gt, (const char *) qrows + (size_t) c * qstride, K, c, group);
}

void ggml_gemm_act_compact(const struct ggml_gemm_traits * gt, const void * group, int64_t K, void * out) {
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    const int na = ggml_gemm_n_ascales(gt);
    const size_t cbb = (size_t) gt->qb + 8, csb = 4 * (size_t) na + (size_t) gt->sb * cbb;
    for (int64_t i = 0; i < K / (gt->qb * gt->sb); i++) {
        const uint8_t * sbp = (const uint8_t *) group + (size_t) i * sbb;
        uint8_t * o = (uint8_t *) out + (size_t) i * csb;
        for (int a = 0; a < na; a++) memcpy(o + 4 * a, sbp + 32 * a, 4); // da of column 0
        for (int j = 0; j < gt->sb; j++) {
            const uint8_t * blk = sbp + 32 * na + (size_t) j * gbb;
            uint8_t * ob = o + 4 * na + (size_t) j * cbb;
            for (int g = 0; g < gt->qb / 4; g++) memcpy(ob + 4 * g, blk + 32 * g, 4);
            memcpy(ob + gt->qb, blk + gt->qb * GGML_GEMM_NR, 4);          // corr
            memcpy(ob + gt->qb + 4, blk + gt->qb * GGML_GEMM_NR + 32, 4); // s
        }
    }
}

void ggml_gemm_act_compact_row(const struct ggml_gemm_traits * gt, const void * qrow, int64_t K, void * out) {
    const int na = ggml_gemm_n_ascales(gt);
    const size_t cbb = (size_t) gt->qb + 8, csb = 4 * (size_t) na + (size_t) gt->sb * cbb;
    for (int64_t i = 0; i < K / (gt->qb * gt->sb); i++) {
        uint8_t * o = (uint8_t *) out + (size_t) i * csb;
        for (int a = 0; a < na; a++) {
            float da = 0.0f, s_stored = 0.0f;
            const int8_t * q = NULL;
            if (!act_scale(gt, qrow, i, a, &da, &q, &s_stored)) return;
            memcpy(o + 4 * a, &da, 4);
            for (int h = 0; h < gt->sa; h++) {
                const int8_t * qq = q + gt->qb * h;
                const int32_t sum = sum_i8(qq, gt->qb);
                const int32_t corr = -gt->off * sum;
                const float s = act_s(gt, da, sum, s_stored);
                uint8_t * ob = o + 4 * na + (size_t) (a * gt->sa + h) * cbb;
                memcpy(ob, qq, (size_t) gt->qb);
                memcpy(ob + gt->qb, &corr, 4);
                memcpy(ob + gt->qb + 4, &s, 4);
            }
        }
    }
}

void ggml_gemm_kernel_generic(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group, float * dst,
                              int64_t ldc, int nr, int nc) {
    const int qb = gt->qb, sb = gt->sb, sa = gt->sa, na = ggml_gemm_n_ascales(gt);
    const size_t pbb = ggml_gemm_panel_block_bytes(gt), sbb = ggml_gemm_group_sblock_bytes(gt),
                 gbb = ggml_gemm_group_block_bytes(gt);
    const int64_t nsb = K / (qb * sb);
    for (int c = 0; c < nc; c++) {
        for (int r = 0; r < nr; r++) {
            float acc = 0.0f;
            for (int64_t i = 0; i < nsb; i++) {
                const uint8_t * sbp = (const uint8_t *) group + (size_t) i * sbb;
                float t = 0.0f;
                for (int j = 0; j < sb; j++) {
                    const uint8_t * pb = (const uint8_t *) panel + (size_t) (i * sb + j) * pbb;
                    const uint8_t * ab = sbp + 32 * na + (size_t) j * gbb;
                    int32_t isum;
                    memcpy(&isum, ab + qb * GGML_GEMM_NR + 4 * c, 4);
                    for (int k = 0; k < qb; k++) {
                        isum += (int32_t) pb[64 * (k / 4) + 4 * r + k % 4] * (int32_t) (int8_t) ab[32 * (k / 4) + 4 * c + k % 4];
                    }
                    float d, da;
                    memcpy(&d, pb + qb * GGML_GEMM_MR + 4 * r, 4);
                    memcpy(&da, sbp + 32 * (j / sa) + 4 * c, 4);
                    if (sb == 1) {
                        acc += (float) isum * (d * da);
                    } else {
                        if (j % sa == 0) t = 0.0f;
                        t += (float) isum * d;
                    }
                    if (gt->has_min) {
                        float m, s;
                        memcpy(&m, pb + qb * GGML_GEMM_MR + 64 + 4 * r, 4);
                        memcpy(&s, ab + qb * GGML_GEMM_NR + 32 + 4 * c, 4);
                        acc += m * s;
                    }
                    if (sb > 1 && j % sa == sa - 1) acc += t * da;
                }
            }
            dst[c * ldc + r] = acc;
        }
    }
}

// ---- q2_K / q3_K straight to the repacked layout (gemm.h: GGML_GEMM_RP_Q2_K / _Q3_K) ----
//
// A 16-element block j of a q2_K / q3_K superblock takes its 2-bit levels from 16 consecutive
// qs bytes (chunk j/8, shifted by 2*((j%8)/2), bytes 16*(j%2)..), and q3_K its third bit from
// hmask bytes 16*(j%2).. at bit j/2; so dword g of those bytes holds the 4 levels of level
// vector g of one row, and a row's 4 dwords give its dword of each packed vector at once.

static inline uint32_t ld_u32(const uint8_t * p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void repack_q2_K_unit(const uint8_t * base, size_t row_stride, size_t uo, uint8_t * o) {
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        const block_q2_K * b = (const block_q2_K *) (base + (size_t) r * row_stride + uo);
        memcpy(o + 2 * r, &b->d, 2);
        memcpy(o + 32 + 2 * r, &b->dmin, 2);
        for (int j = 0; j < 16; j++) {
            o[64 + 16 * j + r] = b->scales[j];
            const uint8_t * q = b->qs + 32 * (j / 8) + 16 * (j % 2);
            const int shift = 2 * ((j % 8) / 2);
            uint32_t v = 0;
            for (int g = 0; g < 4; g++) v |= ((ld_u32(q + 4 * g) >> shift) & 0x03030303u) << (2 * g);
            memcpy(o + 320 + 64 * j + 4 * r, &v, 4);
        }
    }
}

static void repack_q3_K_unit(const uint8_t * base, size_t row_stride, size_t uo, uint8_t * o) {
    memset(o + 288, 0, 8 * 192); // the third bits are or-ed in
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        const block_q3_K * b = (const block_q3_K *) (base + (size_t) r * row_stride + uo);
        memcpy(o + 2 * r, &b->d, 2);
        int8_t sc[16];
        ggml_quants_unpack_q3_K_scales(b->scales, sc);
        for (int j = 0; j < 16; j++) {
            o[32 + 16 * j + r] = (uint8_t) (int8_t) (sc[j] - 32);
            const uint8_t *q = b->qs + 32 * (j / 8) + 16 * (j % 2), *hm = b->hmask + 16 * (j % 2);
            const int shift = 2 * ((j % 8) / 2);
            uint32_t v = 0, h = 0;
            for (int g = 0; g < 4; g++) {
                v |= ((ld_u32(q + 4 * g) >> shift) & 0x03030303u) << (2 * g);
                h |= ((ld_u32(hm + 4 * g) >> (j / 2)) & 0x01010101u) << (g + 4 * (j % 2));
            }
            uint8_t * op = o + 288 + 192 * (j / 2);
            memcpy(op + 64 * (j % 2) + 4 * r, &v, 4);
            uint32_t h0;
            memcpy(&h0, op + 128 + 4 * r, 4);
            h0 |= h;
            memcpy(op + 128 + 4 * r, &h0, 4);
        }
    }
}

bool ggml_gemm_repack_rows_q2_K_q3_K(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K,
                                     void * out) {
    const bool q2 = gt->type == GGML_TYPE_Q2_K;
    if (!q2 && gt->type != GGML_TYPE_Q3_K) return false;
    const size_t ub = ggml_type_size(gt->type), rub = q2 ? GGML_GEMM_RP_Q2_K : GGML_GEMM_RP_Q3_K;
    for (int64_t u = 0; u < K / QK_K; u++) {
        uint8_t * o = (uint8_t *) out + (size_t) u * rub;
        if (q2)
            repack_q2_K_unit((const uint8_t *) rows, row_stride, (size_t) u * ub, o);
        else
            repack_q3_K_unit((const uint8_t *) rows, row_stride, (size_t) u * ub, o);
    }
    return true;
}

// iq4_nl / iq4_xs: dword g of a 32-element block's 16 qs bytes holds levels 4g.. in its low
// nibbles and 16 + 4g.. in its high ones, which is the nibble layout: the 16 rows' dwords side by
// side (gemm.h: GGML_GEMM_RP_IQ4_XS).
static void repack_nibble_block(const uint8_t * base, size_t row_stride, size_t qo, uint8_t * o) {
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        const uint8_t * q = base + (size_t) r * row_stride + qo;
        for (int g = 0; g < 4; g++) memcpy(o + 64 * g + 4 * r, q + 4 * g, 4);
    }
}

bool ggml_gemm_repack_rows_iq4(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * out) {
    const uint8_t * base = (const uint8_t *) rows;
    uint8_t * o = (uint8_t *) out;
    if (gt->type == GGML_TYPE_IQ4_NL) {
        for (int64_t u = 0; u < K / QK4_NL; u++, o += GGML_GEMM_RP_IQ4_NL) {
            const size_t uo = (size_t) u * sizeof(block_iq4_nl);
            repack_nibble_block(base, row_stride, uo + offsetof(block_iq4_nl, qs), o);
            for (int r = 0; r < GGML_GEMM_MR; r++) memcpy(o + 256 + 2 * r, base + (size_t) r * row_stride + uo, 2);
        }
        return true;
    }
    if (gt->type != GGML_TYPE_IQ4_XS) return false;
    for (int64_t u = 0; u < K / QK_K; u++, o += GGML_GEMM_RP_IQ4_XS) {
        const size_t uo = (size_t) u * sizeof(block_iq4_xs);
        for (int r = 0; r < GGML_GEMM_MR; r++) {
            const block_iq4_xs * b = (const block_iq4_xs *) (base + (size_t) r * row_stride + uo);
            memcpy(o + 2 * r, &b->d, 2);
            for (int ib = 0; ib < QK_K / 32; ib++) o[32 + 16 * ib + r] = (uint8_t) (int8_t) (ggml_gemm_iq4_xs_scale(b, ib) - 32);
        }
        for (int ib = 0; ib < QK_K / 32; ib++) {
            repack_nibble_block(base, row_stride, uo + offsetof(block_iq4_xs, qs) + 16 * (size_t) ib, o + 160 + 256 * ib);
        }
    }
    return true;
}

void ggml_gemm_gemv_prep_compact(const struct ggml_gemm_traits * gt, const void * qrow, const void * group, int64_t K,
                                 void * gv) {
    (void) qrow;
    ggml_gemm_act_compact(gt, group, K, gv);
}

void ggml_gemm_gemv_repacked(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * gv,
                             float * dst) {
    uint8_t * scratch = (uint8_t *) gv + GGML_PAD(ggml_gemm_compact_bytes(gt, K), 64);
    gt->repack_rows(gt, rows, row_stride, K, scratch);
    gt->kernel_repacked1(gt, K, scratch, gv, dst, GGML_GEMM_MR, GGML_GEMM_MR, 1);
}

void ggml_gemm_init_generic(struct ggml_gemm_traits * t) {
    memset(t, 0, sizeof(*t) * GGML_TYPE_COUNT);
    // q4_K, q5_K, q6_K meet activations with one scale per 32 (q8_1): one per 256 (q8_K)
    // rounds the small values of a superblock holding an outlier (GeGLU outputs) to few levels
    const struct {
        enum ggml_type type;
        int qb, sb, sa, off;
        bool has_min;
        enum ggml_type act;
    } defs[] = {
        { GGML_TYPE_Q4_0, 32, 1, 1, 8, false, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q4_1, 32, 1, 1, 0, true, GGML_TYPE_Q8_1 },
        { GGML_TYPE_Q5_0, 32, 1, 1, 16, false, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q5_1, 32, 1, 1, 0, true, GGML_TYPE_Q8_1 },
        { GGML_TYPE_Q8_0, 32, 1, 1, 128, false, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q2_K, 16, 16, 16, 0, true, GGML_TYPE_Q8_K },
        { GGML_TYPE_Q3_K, 16, 16, 16, 4, false, GGML_TYPE_Q8_K },
        { GGML_TYPE_Q4_K, 32, 8, 1, 0, true, GGML_TYPE_Q8_1 },
        { GGML_TYPE_Q5_K, 32, 8, 1, 0, true, GGML_TYPE_Q8_1 },
        { GGML_TYPE_Q6_K, 16, 16, 2, 32, false, GGML_TYPE_Q8_1 },
        { GGML_TYPE_IQ4_NL, 32, 1, 1, 128, false, GGML_TYPE_Q8_0 },
        { GGML_TYPE_IQ4_XS, 32, 8, 1, 128, false, GGML_TYPE_Q8_0 },
        // the codebook and IQ1 types meet q8_K (their vec_dot_type): one activation scale per 256
        { GGML_TYPE_IQ2_XXS, 32, 8, 8, ggml_gemm_iq_off(GGML_TYPE_IQ2_XXS), false, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ2_XS, 16, 16, 16, ggml_gemm_iq_off(GGML_TYPE_IQ2_XS), false, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ2_S, 16, 16, 16, ggml_gemm_iq_off(GGML_TYPE_IQ2_S), false, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ3_XXS, 32, 8, 8, ggml_gemm_iq_off(GGML_TYPE_IQ3_XXS), false, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ3_S, 32, 8, 8, ggml_gemm_iq_off(GGML_TYPE_IQ3_S), false, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ1_S, 32, 8, 8, ggml_gemm_iq_off(GGML_TYPE_IQ1_S), false, GGML_TYPE_Q8_K },
        { GGML_TYPE_IQ1_M, 16, 16, 16, ggml_gemm_iq_off(GGML_TYPE_IQ1_M), false, GGML_TYPE_Q8_K },
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
        struct ggml_gemm_traits * g = &t[defs[i].type];
        g->type = defs[i].type;
        g->qb = defs[i].qb;
        g->sb = defs[i].sb;
        g->sa = defs[i].sa;
        g->off = defs[i].off;
        g->has_min = defs[i].has_min;
        g->act_type = defs[i].act;
        g->pack = ggml_gemm_pack_generic;
        g->kernel = ggml_gemm_kernel_generic;
        g->act = ggml_gemm_act_generic;
        g->act_group = ggml_gemm_act_group_generic;
        g->accelerated = false;
    }
}
