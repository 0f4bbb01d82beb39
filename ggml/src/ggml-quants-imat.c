// ggml-quants-imat.c — quantizers of the 32-element types (q4_0, q4_1, q5_0, q5_1) and the
// K-quants (q2_K .. q6_K) under an importance matrix: llama.cpp's published weighted
// algorithms (the facts: weights qw * sqrt(sigma^2 + x^2), 19 or 37 candidate scales per group
// refitted by weighted least squares, the super-block scales themselves fitted under the
// summed group weights), written here from their description.
//
// One deliberate difference: the 32-element types re-round every level against the fp16 scale
// (and minimum) the block stores, instead of keeping the levels found for the unrounded scale.
// Nearest levels under the stored scale are never worse, whatever the weights.
#include "ggml-quants.h"

#include <math.h>
#include <string.h>

#define nearest_int ggml_quants_nearest_int

// Below this magnitude a group is treated as all zeros.
#define IMAT_EPS 1e-15f

// llama.cpp's "rmin, rdelta, nstep" for the asymmetric searches under an importance matrix.
#define IMAT_RMIN  (-0.9f)
#define IMAT_RSTEP 0.05f
#define IMAT_NSTEP 36

// Non-negative levels L in [0, nmax] for n non-negative values x (sub-block scales or mins) and
// their least-squares scale under weights w: nine inverse scales around nmax / max are tried,
// then single levels move while the weighted fit improves (five passes at most).
static float fit_pos(int n, int nmax, const float * x, uint8_t * L, const float * w) {
    float max = 0.0f;
    for (int i = 0; i < n; i++) max = fmaxf(max, x[i]);
    if (max < IMAT_EPS) {
        memset(L, 0, (size_t) n);
        return 0.0f;
    }
    // the plain nmax / max first, then stretches of -0.4 .. +0.4 levels that must do better
    float iscale = (float) nmax / max, best = INFINITY;
    for (int t = 0; t <= 8; t++) {
        const float id = t == 0 ? (float) nmax / max : (0.1f * (float) (t <= 4 ? t - 5 : t - 4) + (float) nmax) / max;
        const float sc = 1.0f / id;
        float mse = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = GGML_MAX(0, GGML_MIN(nmax, nearest_int(id * x[i])));
            const float diff = x[i] - sc * (float) l;
            mse += w[i] * diff * diff;
        }
        if (mse < best) {
            best = mse;
            iscale = id;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t) GGML_MAX(0, GGML_MIN(nmax, nearest_int(iscale * x[i])));
        sumlx += w[i] * x[i] * (float) L[i];
        suml2 += w[i] * (float) L[i] * (float) L[i];
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * (float) L[i];
            float sl2 = suml2 - w[i] * (float) L[i] * (float) L[i];
            if (!(slx > 0.0f && sl2 > 0.0f)) continue;
            const int nl = GGML_MAX(0, GGML_MIN(nmax, nearest_int(x[i] * sl2 / slx)));
            if (nl == L[i]) continue;
            slx += w[i] * x[i] * (float) nl;
            sl2 += w[i] * (float) nl * (float) nl;
            // keep the move when sum(w l x)^2 / sum(w l^2) grows
            if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (uint8_t) nl;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Weights of n values: qw * sqrt(sigma2 + x^2).
static void imat_weights(const float * x, const float * qw, int n, float sigma2, float * w) {
    for (int j = 0; j < n; j++) w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
}

static float sum_sq(const float * x, int64_t n) {
    float s = 0.0f;
    for (int64_t j = 0; j < n; j++) s += x[j] * x[j];
    return s;
}

// ---- 32-element types ----

// Nibbles of 32 levels: element j in the low half of byte j, j + 16 in the high half; bit 4 of
// each (5-bit types) into *qh when qh is not NULL.
static void pack32(const uint8_t * L, uint8_t * qs, uint8_t * qh) {
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t) ((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4));
        h |= (uint32_t) ((L[j] >> 4) & 1) << j;
        h |= (uint32_t) ((L[j + 16] >> 4) & 1) << (j + 16);
    }
    if (qh) memcpy(qh, &h, sizeof(h));
}

// Symmetric levels of 32 values (q4_0: nmax 8, q5_0: 16) against the fp16 scale *d16 it sets.
static void sym32(const float * x, const float * w, int nmax, ggml_fp16_t * d16, uint8_t * L) {
    int8_t l8[32];
    *d16 = GGML_FP32_TO_FP16(ggml_quants_fit_sym(32, nmax, x, l8, 1, w));
    const float d = GGML_FP16_TO_FP32(*d16);
    for (int j = 0; j < 32; j++) {
        L[j] = d != 0.0f ? (uint8_t) (GGML_MAX(-nmax, GGML_MIN(nmax - 1, nearest_int(x[j] / d))) + nmax) : (uint8_t) l8[j];
    }
}

// Asymmetric levels of 32 values (q4_1: nmax 15, q5_1: 31) against the fp16 scale and
// minimum it sets.
static void affine32(const float * x, const float * w, int nmax, ggml_fp16_t * d16, ggml_fp16_t * m16, uint8_t * L) {
    uint8_t aux[32];
    float min;
    *d16 = GGML_FP32_TO_FP16(ggml_quants_fit_affine(32, nmax, x, w, L, &min, aux, IMAT_RMIN, IMAT_RSTEP, IMAT_NSTEP, false));
    *m16 = GGML_FP32_TO_FP16(-min);
    const float d = GGML_FP16_TO_FP32(*d16), m = GGML_FP16_TO_FP32(*m16);
    if (d == 0.0f) return;
    for (int j = 0; j < 32; j++) L[j] = (uint8_t) GGML_MAX(0, GGML_MIN(nmax, nearest_int((x[j] - m) / d)));
}

void quantize_row_q4_0_imat(const float * x, block_q4_0 * y, int64_t k, const float * qw) {
    const float sigma2 = sum_sq(x, k) / (float) k;
    for (int64_t i = 0; i < k / 32; i++) {
        float w[32];
        uint8_t L[32];
        imat_weights(x + 32 * i, qw + 32 * i, 32, sigma2, w);
        sym32(x + 32 * i, w, 8, &y[i].d, L);
        pack32(L, y[i].qs, NULL);
    }
}

void quantize_row_q5_0_imat(const float * x, block_q5_0 * y, int64_t k, const float * qw) {
    const float sigma2 = sum_sq(x, k) / (float) k;
    for (int64_t i = 0; i < k / 32; i++) {
        float w[32];
        uint8_t L[32];
        imat_weights(x + 32 * i, qw + 32 * i, 32, sigma2, w);
        sym32(x + 32 * i, w, 16, &y[i].d, L);
        pack32(L, y[i].qs, y[i].qh);
    }
}

void quantize_row_q4_1_imat(const float * x, block_q4_1 * y, int64_t k, const float * qw) {
    const float sigma2 = sum_sq(x, k) / (float) k;
    for (int64_t i = 0; i < k / 32; i++) {
        float w[32];
        uint8_t L[32];
        imat_weights(x + 32 * i, qw + 32 * i, 32, sigma2, w);
        affine32(x + 32 * i, w, 15, &y[i].d, &y[i].m, L);
        pack32(L, y[i].qs, NULL);
    }
}

void quantize_row_q5_1_imat(const float * x, block_q5_1 * y, int64_t k, const float * qw) {
    const float sigma2 = sum_sq(x, k) / (float) k;
    for (int64_t i = 0; i < k / 32; i++) {
        float w[32];
        uint8_t L[32];
        imat_weights(x + 32 * i, qw + 32 * i, 32, sigma2, w);
        affine32(x + 32 * i, w, 31, &y[i].d, &y[i].m, L);
        pack32(L, y[i].qs, y[i].qh);
    }
}

// ---- K-quants ----

// Scales and mins of the `ns` sub-blocks of one super-block (sub values each, levels 0..nmax),
// each fitted under its weights; sw gets each sub-block's weight sum. sigma2_mul: the variance
// term's factor (1 for q2_K, 2 for q4_K / q5_K).
static void k_fit_affine(const float * x, const float * qw, int ns, int sub, int nmax, float sigma2_mul, float * scales,
                         float * mins, float * sw, uint8_t * L) {
    const float sigma2 = sigma2_mul * sum_sq(x, QK_K) / (float) QK_K;
    for (int j = 0; j < ns; j++) {
        float w[32];
        uint8_t aux[32];
        imat_weights(x + sub * j, qw + sub * j, sub, sigma2, w);
        sw[j] = 0.0f;
        for (int l = 0; l < sub; l++) sw[j] += w[l];
        scales[j] = ggml_quants_fit_affine(sub, nmax, x + sub * j, w, L + sub * j, &mins[j], aux, IMAT_RMIN, IMAT_RSTEP,
                                           IMAT_NSTEP, false);
    }
}

void quantize_row_q2_K_imat(const float * x, block_q2_K * y, int64_t k, const float * qw) {
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, qw += QK_K) {
        float scales[16], mins[16], sw[16];
        uint8_t L[QK_K], Ls[16], Lm[16];
        k_fit_affine(x, qw, 16, 16, 3, 1.0f, scales, mins, sw, L);
        y[i].d = GGML_FP32_TO_FP16(fit_pos(16, 15, scales, Ls, sw));
        y[i].dmin = GGML_FP32_TO_FP16(fit_pos(16, 15, mins, Lm, sw));
        const float dall = GGML_FP16_TO_FP32(y[i].d), mall = GGML_FP16_TO_FP32(y[i].dmin);
        for (int j = 0; j < 16; j++) {
            y[i].scales[j] = (uint8_t) (Ls[j] | (Lm[j] << 4));
            const float d = dall * (float) Ls[j];
            if (d == 0.0f) continue;
            const float m = mall * (float) Lm[j];
            for (int l = 0; l < 16; l++) L[16 * j + l] = (uint8_t) GGML_MAX(0, GGML_MIN(3, nearest_int((x[16 * j + l] + m) / d)));
        }
        ggml_quants_pack_2bit(L, y[i].qs);
    }
}

void quantize_row_q3_K_imat(const float * x, block_q3_K * y, int64_t k, const float * qw) {
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, qw += QK_K) {
        const float sigma2 = 2.0f * sum_sq(x, QK_K) / (float) QK_K;
        float scales[16], sw[16];
        int8_t L[QK_K], Ls[16];
        for (int j = 0; j < 16; j++) {
            float w[16];
            imat_weights(x + 16 * j, qw + 16 * j, 16, sigma2, w);
            sw[j] = 0.0f;
            for (int l = 0; l < 16; l++) sw[j] += w[l];
            scales[j] = ggml_quants_fit_sym(16, 4, x + 16 * j, L + 16 * j, 1, w);
        }
        // the 6-bit signed sub-block scales are themselves a symmetric fit of the scales
        y[i].d = GGML_FP32_TO_FP16(ggml_quants_fit_sym(16, 32, scales, Ls, 1, sw));
        int ls[16];
        for (int j = 0; j < 16; j++) ls[j] = Ls[j];
        ggml_quants_pack_q3_K_scales(ls, y[i].scales);
        const float dall = GGML_FP16_TO_FP32(y[i].d);
        for (int j = 0; j < 16; j++) {
            const float d = dall * (float) (ls[j] - 32);
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; l++) L[16 * j + l] = (int8_t) (GGML_MAX(-4, GGML_MIN(3, nearest_int(x[16 * j + l] / d))) + 4);
        }
        ggml_quants_pack_q3_K_levels(L, y[i].hmask, y[i].qs);
    }
}

// q4_K / q5_K: 8 sub-blocks of 32, 6-bit scales and mins fitted under the sub-block weights.
static void k4_imat_block(const float * x, const float * qw, int nmax, uint8_t * packed, ggml_fp16_t * d16, ggml_fp16_t * m16,
                          uint8_t * L) {
    float scales[8], mins[8], sw[8];
    uint8_t Ls[8], Lm[8];
    k_fit_affine(x, qw, 8, 32, nmax, 2.0f, scales, mins, sw, L);
    *d16 = GGML_FP32_TO_FP16(fit_pos(8, 63, scales, Ls, sw));
    *m16 = GGML_FP32_TO_FP16(fit_pos(8, 63, mins, Lm, sw));
    ggml_quants_pack_k4(x, nmax, Ls, Lm, *d16, *m16, packed, L);
}

void quantize_row_q4_K_imat(const float * x, block_q4_K * y, int64_t k, const float * qw) {
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, qw += QK_K) {
        uint8_t L[QK_K];
        k4_imat_block(x, qw, 15, y[i].scales, &y[i].d, &y[i].dmin, L);
        ggml_quants_pack_q4_K_levels(L, y[i].qs);
    }
}

void quantize_row_q5_K_imat(const float * x, block_q5_K * y, int64_t k, const float * qw) {
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, qw += QK_K) {
        uint8_t L[QK_K];
        k4_imat_block(x, qw, 31, y[i].scales, &y[i].d, &y[i].dmin, L);
        ggml_quants_pack_q5_K_levels(L, y[i].qh, y[i].qs);
    }
}

void quantize_row_q6_K_imat(const float * x, block_q6_K * y, int64_t k, const float * qw) {
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, qw += QK_K) {
        float scales[16];
        int8_t L[QK_K];
        // q6_K's levels are fine enough that the raw column weights serve best
        for (int j = 0; j < 16; j++) scales[j] = ggml_quants_fit_sym(16, 32, x + 16 * j, L + 16 * j, 1, qw + 16 * j);
        ggml_quants_finish_q6_K(x, scales, L, &y[i]);
    }
}
