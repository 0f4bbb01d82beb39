// ggml-quants-k.c — reference quantize / dequantize of the K-quants (super-blocks of 256).
//
// The quantizers follow the published K-quant scheme: per sub-block, search a scale (and
// for the "_1"-like types a minimum) that minimises a weighted error over a small sweep of
// candidate inverse scales; then quantize the sub-block scales themselves against one fp16
// super-block scale, and finally re-quantize the values against the *rounded* scales so
// that what is stored is what dequantizes best. Dequantizers match gguf.quants bit for bit;
// the q2_K..q6_K quantizers gave the same bytes as llama.cpp's reference ones on every input
// tried (a one-off comparison against a scratch build, since gguf.quants cannot write them).
// q8_K is an activation-only format here: positive scale, levels clamped to [-127, 127].
#include "ggml-quants.h"

#include <math.h>
#include <string.h>

// Below this magnitude a group is treated as all zeros.
#define GROUP_MAX_EPS 1e-15f

#define nearest_int ggml_quants_nearest_int

// Signed-symmetric levels in [-nmax, nmax-1] for n values; rmse_type 1 weights by qw, or by
// x^2 when qw is NULL. Returns the scale; L gets levels + nmax.
float ggml_quants_fit_sym(int n, int nmax, const float * x, int8_t * L, int rmse_type, const float * qw) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t) n);
        return 0.0f;
    }
    float iscale = -(float) nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; i++) {
            const int l = nearest_int(iscale * x[i]);
            L[i] = (int8_t) (nmax + GGML_MAX(-nmax, GGML_MIN(nmax - 1, l)));
        }
        return 1.0f / iscale;
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * x[i]);
        l = GGML_MAX(-nmax, GGML_MIN(nmax - 1, l));
        L[i] = (int8_t) (l + nmax);
        const float w = qw ? qw[i] : x[i] * x[i];
        sumlx += w * x[i] * (float) l;
        suml2 += w * (float) l * (float) l;
    }
    float scale = suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    // a slightly larger or smaller inverse scale often rounds the group better
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -((float) nmax + 0.1f * (float) is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale * x[i]);
            l = GGML_MAX(-nmax, GGML_MIN(nmax - 1, l));
            const float w = qw ? qw[i] : x[i] * x[i];
            sumlx += w * x[i] * (float) l;
            suml2 += w * (float) l * (float) l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                const int l = nearest_int(iscale * x[i]);
                L[i] = (int8_t) (nmax + GGML_MAX(-nmax, GGML_MIN(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// 3-bit variant: starts from max-based rounding, then moves single levels while the
// x^2-weighted least-squares fit improves. L gets levels + nmax.
static float make_q3_quants(int n, int nmax, const float * x, int8_t * L) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t) n);
        return 0.0f;
    }
    const float iscale = -(float) nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * x[i]);
        l = GGML_MAX(-nmax, GGML_MIN(nmax - 1, l));
        L[i] = (int8_t) l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float) l;
        suml2 += w * (float) l * (float) l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float) L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float) L[i] * (float) L[i];
                int new_l = nearest_int(x[i] * sl2 / slx);
                new_l = GGML_MAX(-nmax, GGML_MIN(nmax - 1, new_l));
                if (new_l != L[i]) {
                    slx += w * x[i] * (float) new_l;
                    sl2 += w * (float) new_l * (float) new_l;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t) new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t) (L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric levels in [0, nmax] with a minimum: x ~ scale * L - the_min. Sweeps nstep+1
// inverse scales around nmax / (max - min), refitting scale and min by weighted least squares
// at each; use_mad picks weighted absolute error instead of squared.
float ggml_quants_fit_affine(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * the_min,
                             uint8_t * Laux, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    if (max == min) {
        memset(L, 0, (size_t) n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float) nmax / (max - min);
    float scale = 1.0f / iscale;
    float best_err = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t) GGML_MAX(0, GGML_MIN(nmax, l));
        float diff = scale * (float) L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_err += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * (float) is + (float) nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = GGML_MAX(0, GGML_MIN(nmax, l));
            Laux[i] = (uint8_t) l;
            const float w = weights[i];
            sum_l += w * (float) l;
            sum_l2 += w * (float) l * (float) l;
            sum_xl += w * (float) l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0.0f;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float) Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                err += weights[i] * diff;
            }
            if (err < best_err) {
                memcpy(L, Laux, (size_t) n);
                best_err = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// ---- q2_K ----

void ggml_quants_pack_2bit(const uint8_t * L, uint8_t * qs) {
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = (uint8_t) (L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

void quantize_row_q2_K_ref(const float * x, block_q2_K * y, int64_t k) {
    const int64_t nb = k / QK_K;
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    const float q4scale = 15.0f;

    for (int64_t i = 0; i < nb; i++) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = ggml_quants_fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0.0f) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                y[i].scales[j] = (uint8_t) nearest_int(iscale * scales[j]);
            }
            y[i].d = GGML_FP32_TO_FP16(max_scale / q4scale);
        } else {
            memset(y[i].scales, 0, sizeof(y[i].scales));
            y[i].d = GGML_FP32_TO_FP16(0.0f);
        }
        if (max_min > 0.0f) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j) {
                y[i].scales[j] |= (uint8_t) (nearest_int(iscale * mins[j]) << 4);
            }
            y[i].dmin = GGML_FP32_TO_FP16(max_min / q4scale);
        } else {
            y[i].dmin = GGML_FP32_TO_FP16(0.0f);
        }
        // re-quantize against the scales as stored
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = GGML_FP16_TO_FP32(y[i].d) * (float) (y[i].scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = GGML_FP16_TO_FP32(y[i].dmin) * (float) (y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                const int l = nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = (uint8_t) GGML_MAX(0, GGML_MIN(3, l));
            }
        }
        ggml_quants_pack_2bit(L, y[i].qs);
        x += QK_K;
    }
}

void dequantize_row_q2_K(const block_q2_K * x, float * y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const float min = GGML_FP16_TO_FP32(x[i].dmin);
        const uint8_t * q = x[i].qs;
        for (int n = 0; n < QK_K; n += 128) {
            for (int s = 0; s < 4; ++s) {
                const int shift = 2 * s;
                for (int half = 0; half < 2; ++half) {
                    const uint8_t sc = x[i].scales[(n + 32 * s + 16 * half) / 16];
                    const float dl = d * (float) (sc & 0xF);
                    const float ml = min * (float) (sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        const float v = dl * (float) ((q[16 * half + l] >> shift) & 3);
                        *y++ = v - ml;
                    }
                }
            }
            q += 32;
        }
    }
}

// ---- q3_K ----

void ggml_quants_pack_q3_K_scales(const int * ls, uint8_t * scales) {
    memset(scales, 0, K_SCALE_SIZE);
    for (int j = 0; j < QK_K / 16; ++j) {
        const int l = ls[j];
        if (j < 8) {
            scales[j] = (uint8_t) (l & 0xF);
        } else {
            scales[j - 8] |= (uint8_t) ((l & 0xF) << 4);
        }
        scales[j % 4 + 8] |= (uint8_t) ((l >> 4) << (2 * (j / 4)));
    }
}

void ggml_quants_pack_q3_K_levels(int8_t * L, uint8_t * hmask, uint8_t * qs) {
    // bit 2 of level j goes to hmask byte j % 32, bit j / 32
    memset(hmask, 0, QK_K / 8);
    for (int j = 0; j < QK_K; ++j) {
        if (L[j] > 3) {
            hmask[j % (QK_K / 8)] |= (uint8_t) (1 << (j / (QK_K / 8)));
            L[j] -= 4;
        }
    }
    ggml_quants_pack_2bit((const uint8_t *) L, qs);
}

void quantize_row_q3_K_ref(const float * x, block_q3_K * y, int64_t k) {
    const int64_t nb = k / QK_K;
    int8_t L[QK_K];
    float scales[QK_K / 16];

    for (int64_t i = 0; i < nb; i++) {
        float max_scale = 0.0f, amax = 0.0f;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            const float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        memset(y[i].scales, 0, sizeof(y[i].scales));
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            int ls[QK_K / 16];
            for (int j = 0; j < QK_K / 16; ++j) ls[j] = GGML_MAX(-32, GGML_MIN(31, nearest_int(iscale * scales[j]))) + 32;
            ggml_quants_pack_q3_K_scales(ls, y[i].scales);
            y[i].d = GGML_FP32_TO_FP16(1.0f / iscale);
        } else {
            y[i].d = GGML_FP32_TO_FP16(0.0f);
        }
        int8_t sc[16];
        ggml_quants_unpack_q3_K_scales(y[i].scales, sc);
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = GGML_FP16_TO_FP32(y[i].d) * (float) (sc[j] - 32);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                int l = nearest_int(x[16 * j + ii] / d);
                l = GGML_MAX(-4, GGML_MIN(3, l));
                L[16 * j + ii] = (int8_t) (l + 4);
            }
        }
        ggml_quants_pack_q3_K_levels(L, y[i].hmask, y[i].qs);
        x += QK_K;
    }
}

void dequantize_row_q3_K(const block_q3_K * x, float * y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d_all = GGML_FP16_TO_FP32(x[i].d);
        int8_t sc[16];
        ggml_quants_unpack_q3_K_scales(x[i].scales, sc);
        for (int j = 0; j < QK_K; ++j) {
            const int sub = j / 16;
            const int qv = (x[i].qs[(j / 128) * 32 + (j % 32)] >> (2 * ((j % 128) / 32))) & 3;
            const int high = (x[i].hmask[j % 32] >> (j / 32)) & 1;
            const float dl = d_all * (float) (sc[sub] - 32);
            y[i * QK_K + j] = dl * (float) (qv - (high ? 0 : 4));
        }
    }
}

// ---- q4_K / q5_K shared scale search ----

// Finds the 8 sub-block scales and mins of one super-block (nmax 15 or 31; the search sweeps
// nstep+1 inverse scales from rmin around nmax), packs them into the 12-byte 6-bit layout,
// sets d/dmin and re-quantizes x into L against the stored values.
static void quantize_k_scales_mins(const float * x, int nmax, float rmin, int nstep, uint8_t * L, uint8_t * packed,
                                   ggml_fp16_t * d_out, ggml_fp16_t * dmin_out) {
    float mins[QK_K / 32], scales[QK_K / 32], weights[32];
    uint8_t Laux[32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = ggml_quants_fit_affine(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    uint8_t ls[QK_K / 32], lm[QK_K / 32];
    for (int j = 0; j < QK_K / 32; ++j) {
        ls[j] = (uint8_t) GGML_MIN(63, nearest_int(inv_scale * scales[j]));
        lm[j] = (uint8_t) GGML_MIN(63, nearest_int(inv_min * mins[j]));
    }
    *d_out = GGML_FP32_TO_FP16(max_scale / 63.0f);
    *dmin_out = GGML_FP32_TO_FP16(max_min / 63.0f);
    ggml_quants_pack_k4(x, nmax, ls, lm, *d_out, *dmin_out, packed, L);
}

void ggml_quants_pack_k4(const float * x, int nmax, const uint8_t * ls, const uint8_t * lm, ggml_fp16_t d16, ggml_fp16_t dmin16,
                         uint8_t * packed, uint8_t * L) {
    memset(packed, 0, K_SCALE_SIZE);
    for (int j = 0; j < QK_K / 32; ++j) {
        if (j < 4) {
            packed[j] = ls[j];
            packed[j + 4] = lm[j];
        } else {
            packed[j + 4] = (uint8_t) ((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            packed[j - 4] |= (uint8_t) ((ls[j] >> 4) << 6);
            packed[j] |= (uint8_t) ((lm[j] >> 4) << 6);
        }
    }
    const float d_all = GGML_FP16_TO_FP32(d16);
    const float m_all = GGML_FP16_TO_FP32(dmin16);
    for (int j = 0; j < QK_K / 32; ++j) {
        const float d = d_all * (float) ls[j];
        if (d == 0.0f) continue;
        const float dm = m_all * (float) lm[j];
        for (int ii = 0; ii < 32; ++ii) {
            const int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t) GGML_MAX(0, GGML_MIN(nmax, l));
        }
    }
}

// ---- q4_K ----

void ggml_quants_pack_q4_K_levels(const uint8_t * L, uint8_t * q) {
    for (int j = 0; j < QK_K; j += 64) {
        for (int l = 0; l < 32; ++l) q[l] = (uint8_t) (L[j + l] | (L[j + l + 32] << 4));
        q += 32;
    }
}

void quantize_row_q4_K_ref(const float * x, block_q4_K * y, int64_t k) {
    const int64_t nb = k / QK_K;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < nb; i++) {
        memset(y[i].scales, 0, sizeof(y[i].scales));
        quantize_k_scales_mins(x, 15, -1.0f, 20, L, y[i].scales, &y[i].d, &y[i].dmin);
        ggml_quants_pack_q4_K_levels(L, y[i].qs);
        x += QK_K;
    }
}

void dequantize_row_q4_K(const block_q4_K * x, float * y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const float min = GGML_FP16_TO_FP32(x[i].dmin);
        const uint8_t * q = x[i].qs;
        for (int j = 0; j < QK_K; j += 64) {
            uint8_t sc, m;
            ggml_quants_get_scale_min_k4(j / 32, x[i].scales, &sc, &m);
            const float d1 = d * (float) sc, m1 = min * (float) m;
            ggml_quants_get_scale_min_k4(j / 32 + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float) sc, m2 = min * (float) m;
            for (int l = 0; l < 32; ++l) {
                const float v = d1 * (float) (q[l] & 0xF);
                *y++ = v - m1;
            }
            for (int l = 0; l < 32; ++l) {
                const float v = d2 * (float) (q[l] >> 4);
                *y++ = v - m2;
            }
            q += 32;
        }
    }
}

// ---- q5_K ----

void ggml_quants_pack_q5_K_levels(const uint8_t * L, uint8_t * qh, uint8_t * ql) {
    memset(qh, 0, QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < QK_K; n += 64) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            int l2 = L[n + j + 32];
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = (uint8_t) (l1 | (l2 << 4));
        }
        m1 = (uint8_t) (m1 << 2);
        m2 = (uint8_t) (m2 << 2);
        ql += 32;
    }
}

void quantize_row_q5_K_ref(const float * x, block_q5_K * y, int64_t k) {
    const int64_t nb = k / QK_K;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < nb; i++) {
        memset(y[i].scales, 0, sizeof(y[i].scales));
        quantize_k_scales_mins(x, 31, -0.5f, 15, L, y[i].scales, &y[i].d, &y[i].dmin);
        ggml_quants_pack_q5_K_levels(L, y[i].qh, y[i].qs);
        x += QK_K;
    }
}

void dequantize_row_q5_K(const block_q5_K * x, float * y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const float min = GGML_FP16_TO_FP32(x[i].dmin);
        const uint8_t * ql = x[i].qs;
        const uint8_t * qh = x[i].qh;
        int is = 0;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < QK_K; j += 64) {
            uint8_t sc, m;
            ggml_quants_get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
            const float d1 = d * (float) sc, m1 = min * (float) m;
            ggml_quants_get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float) sc, m2 = min * (float) m;
            for (int l = 0; l < 32; ++l) {
                const float v = d1 * (float) ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0));
                *y++ = v - m1;
            }
            for (int l = 0; l < 32; ++l) {
                const float v = d2 * (float) ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0));
                *y++ = v - m2;
            }
            ql += 32;
            is += 2;
            u1 = (uint8_t) (u1 << 2);
            u2 = (uint8_t) (u2 << 2);
        }
    }
}

// ---- q6_K ----

void ggml_quants_finish_q6_K(const float * x, const float * scales, int8_t * L, block_q6_K * y) {
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float abs_scale = fabsf(scales[ib]);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scales[ib];
        }
    }
    if (max_abs_scale < GROUP_MAX_EPS) {
        memset(y, 0, sizeof(block_q6_K));
        y->d = GGML_FP32_TO_FP16(0.0f);
        return;
    }
    const float iscale = -128.0f / max_scale;
    y->d = GGML_FP32_TO_FP16(1.0f / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib) y->scales[ib] = (int8_t) GGML_MIN(127, nearest_int(iscale * scales[ib]));
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = GGML_FP16_TO_FP32(y->d) * (float) y->scales[j];
        if (d == 0.0f) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = GGML_MAX(-32, GGML_MIN(31, l));
            L[16 * j + ii] = (int8_t) (l + 32);
        }
    }
    uint8_t * ql = y->ql;
    uint8_t * qh = y->qh;
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = (uint8_t) (L[j + l + 0] & 0xF);
            const uint8_t q2 = (uint8_t) (L[j + l + 32] & 0xF);
            const uint8_t q3 = (uint8_t) (L[j + l + 64] & 0xF);
            const uint8_t q4 = (uint8_t) (L[j + l + 96] & 0xF);
            ql[l + 0] = (uint8_t) (q1 | (q3 << 4));
            ql[l + 32] = (uint8_t) (q2 | (q4 << 4));
            qh[l] = (uint8_t) ((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                               ((L[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

void quantize_row_q6_K_ref(const float * x, block_q6_K * y, int64_t k) {
    const int64_t nb = k / QK_K;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < nb; i++) {
        for (int ib = 0; ib < QK_K / 16; ++ib) scales[ib] = ggml_quants_fit_sym(16, 32, x + 16 * ib, L + 16 * ib, 1, NULL);
        ggml_quants_finish_q6_K(x, scales, L, &y[i]);
        x += QK_K;
    }
}

void dequantize_row_q6_K(const block_q6_K * x, float * y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const uint8_t * ql = x[i].ql;
        const uint8_t * qh = x[i].qh;
        const int8_t * sc = x[i].scales;
        for (int n = 0; n < QK_K; n += 128) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = (d * (float) sc[is + 0]) * (float) q1;
                y[l + 32] = (d * (float) sc[is + 2]) * (float) q2;
                y[l + 64] = (d * (float) sc[is + 4]) * (float) q3;
                y[l + 96] = (d * (float) sc[is + 6]) * (float) q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

// ---- q8_K (activations) ----

void quantize_row_q8_K_ref(const float * x, block_q8_K * y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; ++j) amax = GGML_MAX(amax, fabsf(x[j]));
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof(block_q8_K));
            x += QK_K;
            continue;
        }
        const float iscale = 127.0f / amax;
        for (int j = 0; j < QK_K; ++j) {
            const int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t) GGML_MAX(-127, GGML_MIN(127, v));
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
            y[i].bsums[j] = (int16_t) sum;
        }
        y[i].d = 1.0f / iscale;
        x += QK_K;
    }
}

void dequantize_row_q8_K(const block_q8_K * x, float * y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        for (int j = 0; j < QK_K; ++j) *y++ = x[i].d * (float) x[i].qs[j];
    }
}
