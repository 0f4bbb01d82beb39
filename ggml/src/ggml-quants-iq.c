// ggml-quants-iq.c — reference quantize / dequantize of IQ4_NL, IQ4_XS, MXFP4, the codebook
// types (IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M) and the ternary TQ1_0 / TQ2_0.
//
// Dequantization is bit-exact with gguf.quants: each value is the same float32 products in the
// same order as its NumPy code. MXFP4 and the TQ quantizers are bit-exact with gguf.quants's
// quantizers too (same single float32 steps, no contraction: see ggml-quants.c). IQ4_NL /
// IQ4_XS follow the published weighted scale search (2 * 7 + 1 candidate scales per 32 values,
// each scored by sum(w q x)^2 / sum(w q^2)), with weights x^2 or, given an importance matrix,
// qw * sqrt(sigma^2 + x^2).
#include "ggml-quants.h"

#include <math.h>
#include <string.h>

const int8_t ggml_kvalues_iq4nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
const int8_t ggml_kvalues_mxfp4[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

// ---- IQ4_NL / IQ4_XS ----

#define IQ4_NTRY      7
#define IQ4_GROUP_EPS 1e-15f

// floor_index[f + 128]: the last IQ4_NL level <= f, for integers f in [-128, 127] (the levels
// are integers, so it is also the last level <= any a in [f, f + 1)).
static const uint8_t * iq4_floor_index(void) {
    static uint8_t t[256];
    static int ready; // benign race: every thread writes the same bytes
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (int f = -128; f < 128; f++) {
            int lo = 0;
            while (lo < 15 && ggml_kvalues_iq4nl[lo + 1] <= f) lo++;
            t[f + 128] = (uint8_t) lo;
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return t;
}

// Index of the IQ4_NL level nearest to a (the lower one on a tie).
static inline int iq4_nearest(const int8_t * v, float a) {
    if (a <= v[0]) return 0;
    if (a >= v[15]) return 15;
    const int lo = iq4_floor_index()[(int) floorf(a) + 128];
    return a - v[lo] <= v[lo + 1] - a ? lo : lo + 1;
}

// Weighted sums of the levels chosen for x * id: sum(w q x) and sum(w q^2).
static void iq4_score(const float * x, const float * w, int n, float id, float * sqx, float * sq2) {
    float a = 0.0f, b = 0.0f;
    for (int j = 0; j < n; j++) {
        const float q = ggml_kvalues_iq4nl[iq4_nearest(ggml_kvalues_iq4nl, id * x[j])];
        a += w[j] * q * x[j];
        b += w[j] * q * q;
    }
    *sqx = a;
    *sq2 = b;
}

// Best scale of one group of n values (0 for an all-zero group): starting from the one that
// maps the largest magnitude to the outermost level, it tries 2 * IQ4_NTRY + 1 stretches and
// keeps the least-squares scale of the candidate with the smallest weighted error.
static float iq4_group_scale(const float * x, const float * w, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    if (amax < IQ4_GROUP_EPS) return 0.0f;
    const float v0 = ggml_kvalues_iq4nl[0];
    float sqx, sq2;
    iq4_score(x, w, n, -v0 / max, &sqx, &sq2);
    float d = sq2 > 0.0f ? sqx / sq2 : -max / v0;
    float best = d * sqx;
    for (int t = -IQ4_NTRY; t <= IQ4_NTRY; t++) {
        iq4_score(x, w, n, (t + v0) / max, &sqx, &sq2);
        if (sq2 > 0.0f && sqx * sqx > best * sq2) {
            d = sqx / sq2;
            best = d * sqx;
        }
    }
    return d;
}

// The importance weights of n values: qw * sqrt(sigma2 + x^2), or x^2 without qw.
static void iq4_weights(const float * x, const float * qw, int n, float sigma2, float * w) {
    for (int j = 0; j < n; j++) w[j] = qw ? qw[j] * sqrtf(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

static float iq4_sigma2(const float * x, int n) {
    float s = 0.0f;
    for (int j = 0; j < n; j++) s += x[j] * x[j];
    return 2.0f * s / (float) n;
}

// Packs 32 levels of x * id into 16 bytes (element j low nibble, j + 16 high).
static void iq4_pack32(const float * x, float id, uint8_t * qs) {
    for (int j = 0; j < 16; j++) {
        const int l0 = iq4_nearest(ggml_kvalues_iq4nl, id * x[j]);
        const int l1 = iq4_nearest(ggml_kvalues_iq4nl, id * x[j + 16]);
        qs[j] = (uint8_t) (l0 | (l1 << 4));
    }
}

void quantize_row_iq4_nl_imat(const float * x, block_iq4_nl * y, int64_t k, const float * qw) {
    const int64_t nb = k / QK4_NL;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK4_NL;
        float w[QK4_NL];
        iq4_weights(xb, qw ? qw + i * QK4_NL : NULL, QK4_NL, iq4_sigma2(xb, QK4_NL), w);
        const float d = iq4_group_scale(xb, w, QK4_NL);
        y[i].d = GGML_FP32_TO_FP16(d);
        const float dq = GGML_FP16_TO_FP32(y[i].d); // levels for the scale the file will hold
        iq4_pack32(xb, dq != 0.0f ? 1.0f / dq : 0.0f, y[i].qs);
    }
}

void quantize_row_iq4_nl_ref(const float * x, block_iq4_nl * y, int64_t k) { quantize_row_iq4_nl_imat(x, y, k, NULL); }

void quantize_row_iq4_xs_imat(const float * x, block_iq4_xs * y, int64_t k, const float * qw) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK_IQ;
        const float sigma2 = iq4_sigma2(xb, QK_IQ);
        float scales[QK_IQ / 32], amax = 0.0f, max = 0.0f;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            float w[32];
            iq4_weights(xb + 32 * ib, qw ? qw + i * QK_IQ + 32 * ib : NULL, 32, sigma2, w);
            scales[ib] = iq4_group_scale(xb + 32 * ib, w, 32);
            if (fabsf(scales[ib]) > amax) {
                amax = fabsf(scales[ib]);
                max = scales[ib];
            }
        }
        // the sub-block scales become 6-bit multiples of d = -max / 32 (so the largest is -32 * d)
        y[i].d = GGML_FP32_TO_FP16(-max / 32.0f);
        const float d = GGML_FP16_TO_FP32(y[i].d);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].scales_h = 0;
        memset(y[i].scales_l, 0, sizeof(y[i].scales_l));
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            int l = (int) lrintf(id * scales[ib]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * (float) l;
            iq4_pack32(xb + 32 * ib, dl != 0.0f ? 1.0f / dl : 0.0f, y[i].qs + 16 * ib);
            const int ls = l + 32;
            y[i].scales_l[ib / 2] |= (uint8_t) ((ls & 0xF) << (4 * (ib % 2)));
            y[i].scales_h |= (uint16_t) ((ls >> 4) << (2 * ib));
        }
    }
}

void quantize_row_iq4_xs_ref(const float * x, block_iq4_xs * y, int64_t k) { quantize_row_iq4_xs_imat(x, y, k, NULL); }

void dequantize_row_iq4_nl(const block_iq4_nl * x, float * y, int64_t k) {
    const int64_t nb = k / QK4_NL;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int j = 0; j < 16; j++) {
            y[i * 32 + j] = d * (float) ggml_kvalues_iq4nl[x[i].qs[j] & 0xF];
            y[i * 32 + j + 16] = d * (float) ggml_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

void dequantize_row_iq4_xs(const block_iq4_xs * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x[i].scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * (float) (ls - 32);
            const uint8_t * q = x[i].qs + 16 * ib;
            float * yb = y + i * QK_IQ + 32 * ib;
            for (int j = 0; j < 16; j++) {
                yb[j] = dl * (float) ggml_kvalues_iq4nl[q[j] & 0xF];
                yb[j + 16] = dl * (float) ggml_kvalues_iq4nl[q[j] >> 4];
            }
        }
    }
}

// ---- MXFP4 ----

// Nearest of the 16 doubled E2M1 levels times d to v (the first on a tie, as NumPy's argmin).
static inline int mxfp4_nearest(float d, float v) {
    int best = 0;
    float err = fabsf(d * (float) ggml_kvalues_mxfp4[0] - v);
    for (int l = 1; l < 16; l++) {
        const float e = fabsf(d * (float) ggml_kvalues_mxfp4[l] - v);
        if (e < err) {
            err = e;
            best = l;
        }
    }
    return best;
}

void quantize_row_mxfp4_ref(const float * x, block_mxfp4 * y, int64_t k) {
    const int64_t nb = k / QK_MXFP4;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK_MXFP4;
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; j++) amax = fmaxf(amax, fabsf(xb[j]));
        // the largest level (12, i.e. 6.0) times 2^(e-128) covers amax: e = floor(log2 amax) - 2 + 127
        const int e = amax > 0.0f ? (int) (floorf(log2f(amax)) - 2.0f + 127.0f) : 0;
        y[i].e = (uint8_t) e;
        const float d = ggml_e8m0_to_fp32_half(y[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            y[i].qs[j] = (uint8_t) (mxfp4_nearest(d, xb[j]) | (mxfp4_nearest(d, xb[j + 16]) << 4));
        }
    }
}

void dequantize_row_mxfp4(const block_mxfp4 * x, float * y, int64_t k) {
    const int64_t nb = k / QK_MXFP4;
    for (int64_t i = 0; i < nb; i++) {
        const float d = ggml_e8m0_to_fp32_half(x[i].e);
        for (int j = 0; j < 16; j++) {
            y[i * 32 + j] = d * (float) ggml_kvalues_mxfp4[x[i].qs[j] & 0xF];
            y[i * 32 + j + 16] = d * (float) ggml_kvalues_mxfp4[x[i].qs[j] >> 4];
        }
    }
}

// ---- IQ2_XXS / IQ2_XS / IQ2_S ----

// Writes the 8 values of a grid entry times db with 8 sign bits.
static inline void iq_put8(float * y, float db, uint64_t entry, uint8_t signs) {
    const uint8_t * g = (const uint8_t *) &entry;
    for (int j = 0; j < 8; j++) y[j] = db * (float) g[j] * (signs >> j & 1 ? -1.0f : 1.0f);
}

void dequantize_row_iq2_xxs(const block_iq2_xxs * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            uint32_t w[2];
            memcpy(w, x[i].qs + 4 * ib, sizeof(w));
            const float db = d * (0.5f + (float) (w[1] >> 28)) * 0.25f;
            const uint8_t * idx = (const uint8_t *) &w[0];
            for (int l = 0; l < 4; l++) {
                iq_put8(y + 8 * l, db, ggml_iq2xxs_grid[idx[l]], ggml_iq2_ksigns[(w[1] >> (7 * l)) & 127]);
            }
            y += 32;
        }
    }
}

void dequantize_row_iq2_xs(const block_iq2_xs * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int l = 0; l < QK_IQ / 8; l++) {
            const int s = (x[i].scales[l / 4] >> (4 * ((l / 2) % 2))) & 0xF;
            const float db = d * (0.5f + (float) s) * 0.25f;
            iq_put8(y + 8 * l, db, ggml_iq2xs_grid[x[i].qs[l] & 511], ggml_iq2_ksigns[x[i].qs[l] >> 9]);
        }
        y += QK_IQ;
    }
}

void dequantize_row_iq2_s(const block_iq2_s * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const uint8_t * signs = x[i].qs + QK_IQ / 8;
        for (int l = 0; l < QK_IQ / 8; l++) {
            const int s = (x[i].scales[l / 4] >> (4 * ((l / 2) % 2))) & 0xF;
            const float db = d * (0.5f + (float) s) * 0.25f;
            const int idx = x[i].qs[l] | (((x[i].qh[l / 4] >> (2 * (l % 4))) & 3) << 8);
            iq_put8(y + 8 * l, db, ggml_iq2s_grid[idx], signs[l]);
        }
        y += QK_IQ;
    }
}

// ---- IQ3_XXS / IQ3_S ----

// Writes the 4 values of a grid entry times db with 4 sign bits.
static inline void iq_put4(float * y, float db, uint32_t entry, uint8_t signs) {
    const uint8_t * g = (const uint8_t *) &entry;
    for (int j = 0; j < 4; j++) y[j] = db * (float) g[j] * (signs >> j & 1 ? -1.0f : 1.0f);
}

void dequantize_row_iq3_xxs(const block_iq3_xxs * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const uint8_t * qs = x[i].qs;
        const uint8_t * sc = x[i].qs + QK_IQ / 4;
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            uint32_t w;
            memcpy(&w, sc + 4 * ib, sizeof(w));
            const float db = d * (0.5f + (float) (w >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++) {
                const uint8_t s = ggml_iq2_ksigns[(w >> (7 * l)) & 127];
                iq_put4(y + 8 * l, db, ggml_iq3xxs_grid[qs[8 * ib + 2 * l]], s & 0xF);
                iq_put4(y + 8 * l + 4, db, ggml_iq3xxs_grid[qs[8 * ib + 2 * l + 1]], s >> 4);
            }
            y += 32;
        }
    }
}

void dequantize_row_iq3_s(const block_iq3_s * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int s = (x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
            const float db = d * (float) (1 + 2 * s);
            for (int l = 0; l < 8; l++) {
                const int g = 8 * ib + l;
                const int idx = x[i].qs[g] | (((x[i].qh[ib] >> l) & 1) << 8);
                const uint8_t sg = x[i].signs[4 * ib + l / 2];
                iq_put4(y + 4 * l, db, ggml_iq3s_grid[idx], l % 2 ? sg >> 4 : sg & 0xF);
            }
            y += 32;
        }
    }
}

// ---- IQ1_S / IQ1_M ----

// Writes dl * (grid + delta) for the 8 values of an IQ1 grid entry.
static inline void iq1_put8(float * y, float dl, float delta, int idx) {
    const uint64_t e = ggml_iq1s_grid[idx];
    const int8_t * g = (const int8_t *) &e;
    for (int j = 0; j < 8; j++) y[j] = dl * ((float) g[j] + delta);
}

void dequantize_row_iq1_s(const block_iq1_s * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const uint16_t qh = x[i].qh[ib];
            const float dl = d * (float) (2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
            for (int l = 0; l < 4; l++) {
                iq1_put8(y + 8 * l, dl, delta, x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8));
            }
            y += 32;
        }
    }
}

void dequantize_row_iq1_m(const block_iq1_m * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = ggml_iq1_m_scale(&x[i]);
        uint16_t sc[4];
        memcpy(sc, x[i].scales, sizeof(sc));
        for (int l = 0; l < QK_IQ / 8; l++) {
            const int ks = l / 2; // 3-bit scale ks (of 16) covers entries 2 ks and 2 ks + 1
            const int s = (sc[ks / 4] >> (3 * (ks % 4))) & 7;
            const float dl = d * (float) (2 * s + 1);
            const uint8_t nib = (uint8_t) ((x[i].qh[l / 2] >> (4 * (l % 2))) & 0xF);
            const float delta = nib & 8 ? -IQ1S_DELTA : IQ1S_DELTA;
            iq1_put8(y + 8 * l, dl, delta, x[i].qs[l] | ((nib & 7) << 8));
        }
        y += QK_IQ;
    }
}

// ---- TQ1_0 / TQ2_0 ----

// Ternary levels of a block: q in {0, 1, 2} for round(x / amax) + 1, and the scale amax.
static float tq_levels(const float * x, uint8_t * q) {
    float d = 0.0f;
    for (int j = 0; j < QK_IQ; j++) d = fmaxf(d, fabsf(x[j]));
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK_IQ; j++) q[j] = (uint8_t) ((int) roundf(x[j] * id) + 1);
    return d;
}

// n trits (most significant first) in base 3, then scaled to ceil(v * 256 / 243).
static uint8_t tq1_pack(const uint8_t * q, int stride, int n) {
    int v = 0;
    for (int t = 0; t < n; t++) v = 3 * v + q[t * stride];
    for (int t = n; t < 5; t++) v *= 3;
    return (uint8_t) ((v * 256 + 242) / 243);
}

void quantize_row_tq1_0_ref(const float * x, block_tq1_0 * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t q[QK_IQ];
        const float d = tq_levels(x + i * QK_IQ, q);
        for (int j = 0; j < 32; j++) y[i].qs[j] = tq1_pack(q + j, 32, 5);
        for (int j = 0; j < 16; j++) y[i].qs[32 + j] = tq1_pack(q + 160 + j, 16, 5);
        for (int j = 0; j < 4; j++) y[i].qh[j] = tq1_pack(q + 240 + j, 4, 4);
        y[i].d = GGML_FP32_TO_FP16(d);
    }
}

void dequantize_row_tq1_0(const block_tq1_0 * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        float * yb = y + i * QK_IQ;
        for (int n = 0; n < 5; n++) {
            for (int j = 0; j < 32; j++) yb[32 * n + j] = d * (float) (ggml_tq1_trit(x[i].qs[j], n) - 1);
            for (int j = 0; j < 16; j++) yb[160 + 16 * n + j] = d * (float) (ggml_tq1_trit(x[i].qs[32 + j], n) - 1);
        }
        for (int n = 0; n < 4; n++) {
            for (int j = 0; j < 4; j++) yb[240 + 4 * n + j] = d * (float) (ggml_tq1_trit(x[i].qh[j], n) - 1);
        }
    }
}

void quantize_row_tq2_0_ref(const float * x, block_tq2_0 * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t q[QK_IQ];
        const float d = tq_levels(x + i * QK_IQ, q);
        for (int c = 0; c < QK_IQ / 128; c++) {
            for (int j = 0; j < 32; j++) {
                const uint8_t * qc = q + 128 * c + j;
                y[i].qs[32 * c + j] = (uint8_t) (qc[0] | (qc[32] << 2) | (qc[64] << 4) | (qc[96] << 6));
            }
        }
        y[i].d = GGML_FP32_TO_FP16(d);
    }
}

void dequantize_row_tq2_0(const block_tq2_0 * x, float * y, int64_t k) {
    const int64_t nb = k / QK_IQ;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int c = 0; c < QK_IQ / 128; c++) {
            for (int n = 0; n < 4; n++) {
                for (int j = 0; j < 32; j++) {
                    y[i * QK_IQ + 128 * c + 32 * n + j] = d * (float) (((x[i].qs[32 * c + j] >> (2 * n)) & 3) - 1);
                }
            }
        }
    }
}
