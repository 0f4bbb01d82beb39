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
    for (int j = 0; j < QK4_0/2; j++) {
        lv[j]           = b->qs[j] & 0x0F;
        lv[j + QK4_0/2] = b->qs[j] >> 4;
    }
    d[0] = FP16(b->d);
    (void) m;
}

static void levels_q4_1(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q4_1 * b = (const block_q4_1 *) vb;
    for (int j = 0; j < QK4_1/2; j++) {
        lv[j]           = b->qs[j] & 0x0F;
        lv[j + QK4_1/2] = b->qs[j] >> 4;
    }
    d[0] = FP16(b->d);
    m[0] = FP16(b->m);
}

static void levels_q5_0(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q5_0 * b = (const block_q5_0 *) vb;
    uint32_t qh;
    memcpy(&qh, b->qh, sizeof(qh));
    for (int j = 0; j < QK5_0/2; j++) {
        lv[j]           = (uint8_t) ((b->qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
        lv[j + QK5_0/2] = (uint8_t) ((b->qs[j] >> 4)   | (((qh >> (j + QK5_0/2)) & 1) << 4));
    }
    d[0] = FP16(b->d);
    (void) m;
}

static void levels_q5_1(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q5_1 * b = (const block_q5_1 *) vb;
    uint32_t qh;
    memcpy(&qh, b->qh, sizeof(qh));
    for (int j = 0; j < QK5_1/2; j++) {
        lv[j]           = (uint8_t) ((b->qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
        lv[j + QK5_1/2] = (uint8_t) ((b->qs[j] >> 4)   | (((qh >> (j + QK5_1/2)) & 1) << 4));
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
        const int chunk = e/128, shift = 2*((e % 128)/32), l = e % 32;
        lv[e] = (uint8_t) ((b->qs[32*chunk + l] >> shift) & 3);
    }
    const float dd = FP16(b->d), dm = FP16(b->dmin);
    for (int j = 0; j < QK_K/16; j++) {
        d[j] = dd*(float) (b->scales[j] & 0x0F);
        m[j] = -dm*(float) (b->scales[j] >> 4);
    }
}

// q3_K: 16 blocks of 16, x = d*(sc - 32)*(u - 4) with u = low 2 bits + 4*hmask bit.
static void levels_q3_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q3_K * b = (const block_q3_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const int qv   = (b->qs[(e/128)*32 + (e % 32)] >> (2*((e % 128)/32))) & 3;
        const int high = (b->hmask[e % 32] >> (e/32)) & 1;
        lv[e] = (uint8_t) (qv + 4*high);
    }
    int8_t sc[16];
    ggml_quants_unpack_q3_K_scales(b->scales, sc);
    const float dd = FP16(b->d);
    for (int j = 0; j < QK_K/16; j++) d[j] = dd*(float) (sc[j] - 32);
    (void) m;
}

// q4_K: 8 blocks of 32, x = d*sc*q - dmin*mn.
static void levels_q4_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q4_K * b = (const block_q4_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const uint8_t q = b->qs[32*(e/64) + (e % 32)];
        lv[e] = (uint8_t) ((e/32) % 2 ? q >> 4 : q & 0x0F);
    }
    const float dd = FP16(b->d), dm = FP16(b->dmin);
    for (int j = 0; j < QK_K/32; j++) {
        uint8_t sc, mn;
        ggml_quants_get_scale_min_k4(j, b->scales, &sc, &mn);
        d[j] = dd*(float) sc;
        m[j] = -dm*(float) mn;
    }
}

// q5_K: q4_K plus a fifth bit: bit j of qh[e % 32] for block j.
static void levels_q5_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q5_K * b = (const block_q5_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const int j = e/32;
        const uint8_t q = b->qs[32*(e/64) + (e % 32)];
        lv[e] = (uint8_t) ((j % 2 ? q >> 4 : q & 0x0F) | (((b->qh[e % 32] >> j) & 1) << 4));
    }
    const float dd = FP16(b->d), dm = FP16(b->dmin);
    for (int j = 0; j < QK_K/32; j++) {
        uint8_t sc, mn;
        ggml_quants_get_scale_min_k4(j, b->scales, &sc, &mn);
        d[j] = dd*(float) sc;
        m[j] = -dm*(float) mn;
    }
}

// q6_K: 16 blocks of 16, x = d*sc*(q - 32) with q = 4 bits of ql + 2 bits of qh.
static void levels_q6_K(const void * vb, uint8_t * lv, float * d, float * m) {
    const block_q6_K * b = (const block_q6_K *) vb;
    for (int e = 0; e < QK_K; e++) {
        const int n = e/128, quad = (e % 128)/32, l = e % 32;
        const uint8_t ql = b->ql[64*n + l + 32*(quad & 1)];
        const int lo = quad >= 2 ? ql >> 4 : ql & 0x0F;
        const int hi = (b->qh[32*n + l] >> (2*quad)) & 3;
        lv[e] = (uint8_t) (lo | (hi << 4));
    }
    const float dd = FP16(b->d);
    for (int j = 0; j < QK_K/16; j++) d[j] = dd*(float) b->scales[j];
    (void) m;
}

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
        default:             return NULL;
    }
}

void ggml_gemm_pack_generic(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride,
                            int nr, int64_t K, void * panel) {
    const unit_levels_t levels = unit_levels(gt->type);
    const int64_t unit = ggml_blck_size(gt->type);
    const size_t unit_bytes = ggml_type_size(gt->type);
    const int bpu = (int) (unit/gt->qb);                    // GEMM blocks per storage unit
    const size_t pbb = ggml_gemm_panel_block_bytes(gt);
    const int ng = gt->qb/4;                                // 4-level groups per block
    uint8_t lv[QK_K];
    float d[QK_K/16], m[QK_K/16];
    for (int64_t u = 0; u < K/unit; u++) {
        uint8_t * pu = (uint8_t *) panel + (size_t) u*bpu*pbb;
        for (int r = 0; r < GGML_GEMM_MR; r++) {
            if (r < nr) {
                levels((const char *) rows + (size_t) r*row_stride + (size_t) u*unit_bytes, lv, d, m);
            } else {
                memset(lv, 0, sizeof(lv));
                for (int j = 0; j < bpu; j++) d[j] = m[j] = 0.0f;
            }
            for (int j = 0; j < bpu; j++) {
                uint8_t * pb = pu + (size_t) j*pbb;
                for (int g = 0; g < ng; g++) memcpy(pb + 64*g + 4*r, lv + j*gt->qb + 4*g, 4);
                memcpy(pb + gt->qb*GGML_GEMM_MR + 4*r, &d[j], 4);
                if (gt->has_min) memcpy(pb + gt->qb*GGML_GEMM_MR + 64 + 4*r, &m[j], 4);
            }
        }
    }
}

// Writes column c of one activation block: values q (qb of them), their sum times -off into
// corr and times da into s.
static void act_block(const struct ggml_gemm_traits * gt, const int8_t * q, int32_t sum, float da, int c,
                      uint8_t * blk) {
    for (int g = 0; g < gt->qb/4; g++) memcpy(blk + 32*g + 4*c, q + 4*g, 4);
    const int32_t corr = -gt->off*sum;
    const float s = da*(float) sum;
    memcpy(blk + gt->qb*GGML_GEMM_NR + 4*c, &corr, 4);
    memcpy(blk + gt->qb*GGML_GEMM_NR + 32 + 4*c, &s, 4);
}

void ggml_gemm_act_generic(const struct ggml_gemm_traits * gt, const void * qrow, int64_t K, int c, void * group) {
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    const int64_t nsb = K/(gt->qb*gt->sb);
    for (int64_t i = 0; i < nsb; i++) {
        uint8_t * sbp = (uint8_t *) group + (size_t) i*sbb;
        float da;
        switch (gt->act_type) {
            case GGML_TYPE_Q8_0: {
                const block_q8_0 * b = (const block_q8_0 *) qrow + i;
                da = FP16(b->d);
                int32_t sum = 0;
                for (int j = 0; j < QK8_0; j++) sum += b->qs[j];
                act_block(gt, b->qs, sum, da, c, sbp + 32);
            } break;
            case GGML_TYPE_Q8_1: {
                const block_q8_1 * b = (const block_q8_1 *) qrow + i;
                da = b->d;
                int32_t sum = 0;
                for (int j = 0; j < QK8_1; j++) sum += b->qs[j];
                act_block(gt, b->qs, sum, da, c, sbp + 32);
                memcpy(sbp + 32 + gt->qb*GGML_GEMM_NR + 32 + 4*c, &b->s, 4); // the s vec_dot uses
            } break;
            case GGML_TYPE_Q8_K: {
                const block_q8_K * b = (const block_q8_K *) qrow + i;
                da = b->d;
                const int per = gt->qb/16; // bsums per block
                for (int j = 0; j < gt->sb; j++) {
                    int32_t sum = 0;
                    for (int t = 0; t < per; t++) sum += b->bsums[per*j + t];
                    act_block(gt, b->qs + gt->qb*j, sum, da, c, sbp + 32 + (size_t) j*gbb);
                }
            } break;
            default:
                da = 0.0f;
                break;
        }
        memcpy(sbp + 4*c, &da, 4);
    }
}

void ggml_gemm_act_group_generic(const struct ggml_gemm_traits * gt, const void * qrows, size_t qstride,
                                 int nc, int64_t K, void * group) {
    for (int c = 0; c < nc; c++) gt->act(gt, (const char *) qrows + (size_t) c*qstride, K, c, group);
}

void ggml_gemm_act_compact(const struct ggml_gemm_traits * gt, const void * group, int64_t K, void * out) {
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    const size_t cbb = (size_t) gt->qb + 8, csb = 4 + (size_t) gt->sb*cbb;
    for (int64_t i = 0; i < K/(gt->qb*gt->sb); i++) {
        const uint8_t * sbp = (const uint8_t *) group + (size_t) i*sbb;
        uint8_t * o = (uint8_t *) out + (size_t) i*csb;
        memcpy(o, sbp, 4); // da of column 0
        for (int j = 0; j < gt->sb; j++) {
            const uint8_t * blk = sbp + 32 + (size_t) j*gbb;
            uint8_t * ob = o + 4 + (size_t) j*cbb;
            for (int g = 0; g < gt->qb/4; g++) memcpy(ob + 4*g, blk + 32*g, 4);
            memcpy(ob + gt->qb, blk + gt->qb*GGML_GEMM_NR, 4);          // corr
            memcpy(ob + gt->qb + 4, blk + gt->qb*GGML_GEMM_NR + 32, 4); // s
        }
    }
}

void ggml_gemm_act_compact_row(const struct ggml_gemm_traits * gt, const void * qrow, int64_t K, void * out) {
    const size_t cbb = (size_t) gt->qb + 8, csb = 4 + (size_t) gt->sb*cbb;
    for (int64_t i = 0; i < K/(gt->qb*gt->sb); i++) {
        uint8_t * o = (uint8_t *) out + (size_t) i*csb;
        float da = 0.0f;
        for (int j = 0; j < gt->sb; j++) {
            const int8_t * q = NULL;
            int32_t sum = 0;
            float s_stored = 0.0f;
            switch (gt->act_type) {
                case GGML_TYPE_Q8_0: {
                    const block_q8_0 * b = (const block_q8_0 *) qrow + i;
                    da = FP16(b->d);
                    q = b->qs;
                } break;
                case GGML_TYPE_Q8_1: {
                    const block_q8_1 * b = (const block_q8_1 *) qrow + i;
                    da = b->d;
                    q = b->qs;
                    s_stored = b->s; // the s vec_dot uses, as ggml_gemm_act_generic keeps it
                } break;
                case GGML_TYPE_Q8_K: {
                    const block_q8_K * b = (const block_q8_K *) qrow + i;
                    da = b->d;
                    q = b->qs + gt->qb*j;
                    const int per = gt->qb/16;
                    for (int t = 0; t < per; t++) sum += b->bsums[per*j + t];
                } break;
                default:
                    return;
            }
            if (gt->act_type != GGML_TYPE_Q8_K) {
                for (int k = 0; k < gt->qb; k++) sum += q[k];
            }
            uint8_t * ob = o + 4 + (size_t) j*cbb;
            memcpy(ob, q, (size_t) gt->qb);
            const int32_t corr = -gt->off*sum;
            const float s = gt->act_type == GGML_TYPE_Q8_1 ? s_stored : da*(float) sum;
            memcpy(ob + gt->qb, &corr, 4);
            memcpy(ob + gt->qb + 4, &s, 4);
        }
        memcpy(o, &da, 4);
    }
}

void ggml_gemm_kernel_generic(const struct ggml_gemm_traits * gt, int64_t K, const void * panel,
                              const void * group, float * dst, int64_t ldc, int nr, int nc) {
    const int qb = gt->qb, sb = gt->sb;
    const size_t pbb = ggml_gemm_panel_block_bytes(gt), sbb = ggml_gemm_group_sblock_bytes(gt),
                 gbb = ggml_gemm_group_block_bytes(gt);
    const int64_t nsb = K/(qb*sb);
    for (int c = 0; c < nc; c++) {
        for (int r = 0; r < nr; r++) {
            float acc = 0.0f;
            for (int64_t i = 0; i < nsb; i++) {
                const uint8_t * sbp = (const uint8_t *) group + (size_t) i*sbb;
                float t = 0.0f;
                for (int j = 0; j < sb; j++) {
                    const uint8_t * pb = (const uint8_t *) panel + (size_t) (i*sb + j)*pbb;
                    const uint8_t * ab = sbp + 32 + (size_t) j*gbb;
                    int32_t isum;
                    memcpy(&isum, ab + qb*GGML_GEMM_NR + 4*c, 4);
                    for (int k = 0; k < qb; k++) {
                        isum += (int32_t) pb[64*(k/4) + 4*r + k % 4]*(int32_t) (int8_t) ab[32*(k/4) + 4*c + k % 4];
                    }
                    float d;
                    memcpy(&d, pb + qb*GGML_GEMM_MR + 4*r, 4);
                    t += (float) isum*d;
                    if (gt->has_min) {
                        float m, s;
                        memcpy(&m, pb + qb*GGML_GEMM_MR + 64 + 4*r, 4);
                        memcpy(&s, ab + qb*GGML_GEMM_NR + 32 + 4*c, 4);
                        acc += m*s;
                    }
                }
                float da;
                memcpy(&da, sbp + 4*c, 4);
                acc += t*da;
            }
            dst[c*ldc + r] = acc;
        }
    }
}

void ggml_gemm_init_generic(struct ggml_gemm_traits * t) {
    memset(t, 0, sizeof(*t)*GGML_TYPE_COUNT);
    // type, qb, sb, off, has_min, act_type
    static const struct { enum ggml_type type; int qb, sb, off; bool has_min; enum ggml_type act; } defs[] = {
        { GGML_TYPE_Q4_0, 32,  1,   8, false, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q4_1, 32,  1,   0, true,  GGML_TYPE_Q8_1 },
        { GGML_TYPE_Q5_0, 32,  1,  16, false, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q5_1, 32,  1,   0, true,  GGML_TYPE_Q8_1 },
        { GGML_TYPE_Q8_0, 32,  1, 128, false, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q2_K, 16, 16,   0, true,  GGML_TYPE_Q8_K },
        { GGML_TYPE_Q3_K, 16, 16,   4, false, GGML_TYPE_Q8_K },
        { GGML_TYPE_Q4_K, 32,  8,   0, true,  GGML_TYPE_Q8_K },
        { GGML_TYPE_Q5_K, 32,  8,   0, true,  GGML_TYPE_Q8_K },
        { GGML_TYPE_Q6_K, 16, 16,  32, false, GGML_TYPE_Q8_K },
    };
    for (size_t i = 0; i < sizeof(defs)/sizeof(defs[0]); i++) {
        struct ggml_gemm_traits * g = &t[defs[i].type];
        g->type = defs[i].type;
        g->qb = defs[i].qb;
        g->sb = defs[i].sb;
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
