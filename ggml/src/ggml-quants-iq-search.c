// ggml-quants-iq-search.c — quantizers of the codebook types IQ3_S, IQ3_XXS, IQ2_S, IQ2_XS,
// IQ2_XXS, IQ1_S and IQ1_M: a weighted search for each group's grid entry and each sub-block's
// scale (IQ1: and the sign of its +-1/8 shift).
//
// Every group of 4 (IQ3) or 8 (IQ2) magnitudes is coded as one grid entry times the sub-block
// scale, with its signs stored apart (IQ3_XXS, IQ2_XXS and IQ2_XS keep 7 sign bits per 8 values:
// the eighth makes the count of minus signs even, so a group with an odd count gives the sign of
// its least important value up and codes that value as small as the grid allows). For a
// candidate scale each magnitude is rounded to its nearest level; the resulting point is looked
// up in the grid, and if the grid does not hold it the nearest few grid points (precomputed per
// point, once) are scored with the importance weights. Sixteen candidate scales per sub-block
// (and one per level, for flat blocks);
// the one with the smallest weighted error, sum(w q x)^2 / sum(w q^2) largest, gives the
// least-squares scale. The super-block's fp16 d then makes each sub-block scale a 4-bit
// multiple (2 s + 1), and the groups are coded once more under the stored scales. Weights: the
// importance matrix (or 1) times sqrt(sigma^2 + x^2).
#include "ggml-quants.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define IQS_NB    8      // grid neighbours kept per off-grid point
#define IQS_NTRY  16   // candidate scales per sub-block
#define IQ1_NCLIP 12  // IQ1's extra candidates that clip the largest magnitude (up to 1.3 * 1.15^11 = 6x)

struct iq_book {
    int dim, nlev, n;            // values per entry, levels per value, entries
    uint8_t lev[8];              // the grid's bytes of each level
    float flev[8];               // the levels' values, ascending (int8 bytes for IQ1)
    int16_t * map;               // point key -> grid index, -1 off the grid
    uint16_t * nbr;              // point key -> IQS_NB nearest grid indices
    uint8_t * gl;                // grid index -> dim level indices
    bool ok;
};

enum {
    IQB_3XXS,
    IQB_3S,
    IQB_2XXS,
    IQB_2XS,
    IQB_2S,
    IQB_1S,
    IQB_COUNT
};
static struct iq_book books[IQB_COUNT];
static pthread_once_t books_once = PTHREAD_ONCE_INIT;

static int iq_key(const uint8_t * l, int dim, int nlev) {
    int k = 0;
    for (int j = dim - 1; j >= 0; j--) k = k * nlev + l[j];
    return k;
}

static void book_build(struct iq_book * b, int dim, const uint8_t * lev, int nlev, bool signed_lev, const void * grid, int n) {
    b->dim = dim;
    b->nlev = nlev;
    b->n = n;
    memcpy(b->lev, lev, (size_t) nlev);
    for (int j = 0; j < nlev; j++) b->flev[j] = signed_lev ? (float) (int8_t) lev[j] : (float) lev[j];
    int nkeys = 1;
    for (int j = 0; j < dim; j++) nkeys *= nlev;
    b->map = malloc(sizeof(int16_t) * (size_t) nkeys);
    b->nbr = malloc(sizeof(uint16_t) * (size_t) nkeys * IQS_NB);
    b->gl = malloc((size_t) n * (size_t) dim);
    if (!b->map || !b->nbr || !b->gl) return;
    for (int k = 0; k < nkeys; k++) b->map[k] = -1;
    for (int i = 0; i < n; i++) {
        const uint8_t * e = (const uint8_t *) grid + (size_t) i * (size_t) dim;
        for (int j = 0; j < dim; j++) {
            int li = 0;
            while (li < nlev && lev[li] != e[j]) li++;
            b->gl[i * dim + j] = (uint8_t) li;
        }
        b->map[iq_key(b->gl + i * dim, dim, nlev)] = (int16_t) i;
    }
    uint8_t l[8];
    for (int k = 0; k < nkeys; k++) {
        int kk = k;
        for (int j = 0; j < dim; j++) {
            l[j] = (uint8_t) (kk % nlev);
            kk /= nlev;
        }
        float bd[IQS_NB];
        for (int t = 0; t < IQS_NB; t++) {
            bd[t] = INFINITY;
            b->nbr[k * IQS_NB + t] = 0;
        }
        for (int i = 0; i < n; i++) {
            float dist = 0.0f;
            for (int j = 0; j < dim; j++) {
                const float df = b->flev[l[j]] - b->flev[b->gl[i * dim + j]];
                dist += df * df;
            }
            if (dist >= bd[IQS_NB - 1]) continue;
            int t = IQS_NB - 1;
            while (t > 0 && bd[t - 1] > dist) {
                bd[t] = bd[t - 1];
                b->nbr[k * IQS_NB + t] = b->nbr[k * IQS_NB + t - 1];
                t--;
            }
            bd[t] = dist;
            b->nbr[k * IQS_NB + t] = (uint16_t) i;
        }
    }
    b->ok = true;
}

static void books_init(void) {
    static const uint8_t lev3xxs[8] = { 4, 12, 20, 28, 36, 44, 52, 62 };
    static const uint8_t lev3s[8] = { 1, 3, 5, 7, 9, 11, 13, 15 };
    static const uint8_t lev2[3] = { 8, 25, 43 };
    static const uint8_t lev1[3] = { 0xFF, 0x00, 0x01 }; // -1, 0, 1
    book_build(&books[IQB_3XXS], 4, lev3xxs, 8, false, ggml_iq3xxs_grid, 256);
    book_build(&books[IQB_3S], 4, lev3s, 8, false, ggml_iq3s_grid, 512);
    book_build(&books[IQB_2XXS], 8, lev2, 3, false, ggml_iq2xxs_grid, 256);
    book_build(&books[IQB_2XS], 8, lev2, 3, false, ggml_iq2xs_grid, 512);
    book_build(&books[IQB_2S], 8, lev2, 3, false, ggml_iq2s_grid, 1024);
    book_build(&books[IQB_1S], 8, lev1, 3, true, ggml_iq1s_grid, 2048);
}

// Best grid entry for a * id - shift under weights w (shift: IQ1's delta, else 0); adds to
// sum(w q a) and sum(w q^2) with q = level + shift, and returns the entry (its weighted squared
// error in *err when err is not NULL).
static int iq_code_shift(const struct iq_book * b, const float * a, const float * w, float id, float shift, float * sqx,
                         float * sq2, float * err) {
    uint8_t l[8];
    for (int j = 0; j < b->dim; j++) {
        const float v = a[j] * id - shift;
        int li = 0;
        while (li + 1 < b->nlev && fabsf(v - b->flev[li + 1]) < fabsf(v - b->flev[li])) li++;
        l[j] = (uint8_t) li;
    }
    const int key = iq_key(l, b->dim, b->nlev);
    int best = b->map[key];
    if (best < 0) {
        float be = INFINITY;
        for (int t = 0; t < IQS_NB; t++) {
            const int i = b->nbr[key * IQS_NB + t];
            float e = 0.0f;
            for (int j = 0; j < b->dim; j++) {
                const float df = a[j] * id - shift - b->flev[b->gl[i * b->dim + j]];
                e += w[j] * df * df;
            }
            if (e < be) {
                be = e;
                best = i;
            }
        }
    }
    float e = 0.0f;
    for (int j = 0; j < b->dim; j++) {
        const float q = b->flev[b->gl[best * b->dim + j]] + shift;
        *sqx += w[j] * q * a[j];
        *sq2 += w[j] * q * q;
        const float df = a[j] * id - q;
        e += w[j] * df * df;
    }
    if (err) *err = e;
    return best;
}

static int iq_code(const struct iq_book * b, const float * a, const float * w, float id, float * sqx, float * sq2) {
    return iq_code_shift(b, a, w, id, 0.0f, sqx, sq2, NULL);
}

// Least-squares scale of one sub-block of n magnitudes (groups of b->dim), 0 for all zeros.
static float iq_sub_scale(const struct iq_book * b, const float * a, const float * w, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) amax = fmaxf(amax, a[j]);
    if (amax < 1e-30f) return 0.0f;
    const float top = b->flev[b->nlev - 1];
    float best = -1.0f, scale = amax / top;
    // stretches of the top level over amax, then amax on each level (flat blocks)
    for (int t = 0; t < IQS_NTRY + b->nlev; t++) {
        const float id = t < IQS_NTRY ? top * (0.6f + 0.04f * (float) t) / amax : b->flev[t - IQS_NTRY] / amax;
        float sqx = 0.0f, sq2 = 0.0f;
        for (int g = 0; g < n; g += b->dim) iq_code(b, a + g, w + g, id, &sqx, &sq2);
        if (sq2 > 0.0f && sqx * sqx > best * sq2) {
            best = sqx * sqx / sq2;
            scale = sqx / sq2;
        }
    }
    return scale;
}

// Column weights of one super-block: qw * sqrt(sigma2 + x^2), qw = 1 without an importance
// matrix (x^2 alone favours the largest values too much for grids this coarse). sigma2 is
// sig_mul times the mean square: 1 for IQ2_XXS / IQ2_XS, 2 for the others (llama.cpp's choice).
static void iq_weights(const float * x, const float * qw, float sig_mul, float * w) {
    float s = 0.0f;
    for (int j = 0; j < QK_IQ; j++) s += x[j] * x[j];
    const float sigma2 = sig_mul * s / QK_IQ;
    for (int j = 0; j < QK_IQ; j++) w[j] = (qw ? qw[j] : 1.0f) * sqrtf(sigma2 + x[j] * x[j]);
    // all-zero weights (zero activations in the imatrix) would leave the search blind
    for (int j = 0; j < QK_IQ; j++)
        if (!(w[j] > 0.0f)) w[j] = 1e-12f;
}

// Magnitudes and sign bits of a super-block; with parity, each 8 values get an even number of
// minus signs (the least important value gives its sign up and is coded toward zero).
static void iq_signs(const float * x, const float * w, bool parity, float * a, uint8_t * neg) {
    for (int g = 0; g < QK_IQ / 8; g++) {
        uint8_t m = 0;
        int low = 0;
        for (int j = 0; j < 8; j++) {
            const float v = x[8 * g + j];
            a[8 * g + j] = fabsf(v);
            if (v < 0.0f) m |= (uint8_t) (1u << j);
            if (w[8 * g + j] * v * v < w[8 * g + low] * x[8 * g + low] * x[8 * g + low]) low = j;
        }
        if (parity && (__builtin_popcount(m) & 1)) {
            m ^= (uint8_t) (1u << low);
            a[8 * g + low] = 0.0f;
        }
        neg[g] = m;
    }
}

// Codes one super-block: sub-block scales as d * (2 s + 1) * unit (s 4-bit), the grid index of
// every group in idx. Returns d (fp16-rounded).
static float iq_block(const struct iq_book * b, const float * a, const float * w, int sub, float unit, uint8_t * s4,
                      uint16_t * idx) {
    float sc[QK_IQ / 16], smax = 0.0f;
    const int nsub = QK_IQ / sub;
    for (int ib = 0; ib < nsub; ib++) {
        sc[ib] = iq_sub_scale(b, a + ib * sub, w + ib * sub, sub);
        smax = fmaxf(smax, sc[ib]);
    }
    const float d = GGML_FP16_TO_FP32(GGML_FP32_TO_FP16(smax / (31.0f * unit)));
    for (int ib = 0; ib < nsub; ib++) {
        int s0 = d > 0.0f ? (int) lrintf((sc[ib] / (d * unit) - 1.0f) * 0.5f) : 0;
        s0 = s0 < 0 ? 0 : (s0 > 15 ? 15 : s0);
        // the stored scales are odd multiples of d * unit, a coarse step for small ones: the
        // neighbours of the nearest are coded too and the smallest weighted error kept
        float best = INFINITY;
        const int s_lo = s0 > 0 ? s0 - 1 : 0;
        for (int s = s_lo; s <= (s0 < 15 ? s0 + 1 : 15); s++) {
            const float db = d * unit * (float) (2 * s + 1);
            const float id = db > 0.0f ? 1.0f / db : 0.0f;
            float sqx = 0.0f, sq2 = 0.0f, e = 0.0f;
            uint16_t ix[QK_IQ / 4];
            for (int g = 0; g < sub; g += b->dim) {
                ix[g / b->dim] = (uint16_t) iq_code(b, a + ib * sub + g, w + ib * sub + g, id, &sqx, &sq2);
            }
            for (int g = 0; g < sub; g += b->dim) {
                for (int j = 0; j < b->dim; j++) {
                    const float df = a[ib * sub + g + j] - db * b->flev[b->gl[ix[g / b->dim] * b->dim + j]];
                    e += w[ib * sub + g + j] * df * df;
                }
            }
            if (s == s_lo || e < best) {
                best = e;
                s4[ib] = (uint8_t) s;
                memcpy(idx + ib * sub / b->dim, ix, sizeof(uint16_t) * (size_t) (sub / b->dim));
            }
        }
    }
    return d;
}

static const struct iq_book * iq_book_get(int which) {
    pthread_once(&books_once, books_init);
    return books[which].ok ? &books[which] : NULL;
}

bool quantize_row_iq3_s_imat(const float * x, block_iq3_s * y, int64_t k, const float * qw) {
    const struct iq_book * b = iq_book_get(IQB_3S);
    if (!b) return false;
    for (int64_t i = 0; i < k / QK_IQ; i++) {
        const float * xb = x + i * QK_IQ;
        float w[QK_IQ], a[QK_IQ];
        uint8_t neg[QK_IQ / 8], s4[8];
        uint16_t idx[QK_IQ / 4];
        iq_weights(xb, qw ? qw + i * QK_IQ : NULL, 2.0f, w);
        iq_signs(xb, w, false, a, neg);
        memset(&y[i], 0, sizeof(y[i]));
        y[i].d = GGML_FP32_TO_FP16(iq_block(b, a, w, 32, 1.0f, s4, idx));
        for (int l = 0; l < QK_IQ / 4; l++) {
            y[i].qs[l] = (uint8_t) (idx[l] & 255);
            y[i].qh[l / 8] |= (uint8_t) ((idx[l] >> 8) << (l % 8));
        }
        memcpy(y[i].signs, neg, sizeof(neg));
        for (int ib = 0; ib < 8; ib++) y[i].scales[ib / 2] |= (uint8_t) (s4[ib] << (4 * (ib % 2)));
    }
    return true;
}

bool quantize_row_iq3_xxs_imat(const float * x, block_iq3_xxs * y, int64_t k, const float * qw) {
    const struct iq_book * b = iq_book_get(IQB_3XXS);
    if (!b) return false;
    for (int64_t i = 0; i < k / QK_IQ; i++) {
        const float * xb = x + i * QK_IQ;
        float w[QK_IQ], a[QK_IQ];
        uint8_t neg[QK_IQ / 8], s4[8];
        uint16_t idx[QK_IQ / 4];
        iq_weights(xb, qw ? qw + i * QK_IQ : NULL, 2.0f, w);
        iq_signs(xb, w, true, a, neg);
        y[i].d = GGML_FP32_TO_FP16(iq_block(b, a, w, 32, 0.25f, s4, idx));
        for (int l = 0; l < QK_IQ / 4; l++) y[i].qs[l] = (uint8_t) idx[l];
        for (int ib = 0; ib < 8; ib++) {
            uint32_t word = (uint32_t) s4[ib] << 28;
            for (int g = 0; g < 4; g++) word |= (uint32_t) (neg[4 * ib + g] & 127) << (7 * g);
            memcpy(y[i].qs + QK_IQ / 4 + 4 * ib, &word, sizeof(word));
        }
    }
    return true;
}

bool quantize_row_iq2_xxs_imat(const float * x, block_iq2_xxs * y, int64_t k, const float * qw) {
    const struct iq_book * b = iq_book_get(IQB_2XXS);
    if (!b) return false;
    for (int64_t i = 0; i < k / QK_IQ; i++) {
        const float * xb = x + i * QK_IQ;
        float w[QK_IQ], a[QK_IQ];
        uint8_t neg[QK_IQ / 8], s4[8];
        uint16_t idx[QK_IQ / 8];
        iq_weights(xb, qw ? qw + i * QK_IQ : NULL, 1.0f, w);
        iq_signs(xb, w, true, a, neg);
        y[i].d = GGML_FP32_TO_FP16(iq_block(b, a, w, 32, 0.125f, s4, idx));
        for (int ib = 0; ib < 8; ib++) {
            uint32_t wd[2] = { 0, (uint32_t) s4[ib] << 28 };
            for (int g = 0; g < 4; g++) {
                wd[0] |= (uint32_t) idx[4 * ib + g] << (8 * g);
                wd[1] |= (uint32_t) (neg[4 * ib + g] & 127) << (7 * g);
            }
            memcpy(y[i].qs + 4 * ib, wd, sizeof(wd));
        }
    }
    return true;
}

bool quantize_row_iq2_xs_imat(const float * x, block_iq2_xs * y, int64_t k, const float * qw) {
    const struct iq_book * b = iq_book_get(IQB_2XS);
    if (!b) return false;
    for (int64_t i = 0; i < k / QK_IQ; i++) {
        const float * xb = x + i * QK_IQ;
        float w[QK_IQ], a[QK_IQ];
        uint8_t neg[QK_IQ / 8], s4[16];
        uint16_t idx[QK_IQ / 8];
        iq_weights(xb, qw ? qw + i * QK_IQ : NULL, 1.0f, w);
        iq_signs(xb, w, true, a, neg);
        y[i].d = GGML_FP32_TO_FP16(iq_block(b, a, w, 16, 0.125f, s4, idx));
        memset(y[i].scales, 0, sizeof(y[i].scales));
        for (int l = 0; l < QK_IQ / 8; l++) y[i].qs[l] = (uint16_t) (idx[l] | ((neg[l] & 127) << 9));
        for (int ib = 0; ib < 16; ib++) y[i].scales[ib / 2] |= (uint8_t) (s4[ib] << (4 * (ib % 2)));
    }
    return true;
}

bool quantize_row_iq2_s_imat(const float * x, block_iq2_s * y, int64_t k, const float * qw) {
    const struct iq_book * b = iq_book_get(IQB_2S);
    if (!b) return false;
    for (int64_t i = 0; i < k / QK_IQ; i++) {
        const float * xb = x + i * QK_IQ;
        float w[QK_IQ], a[QK_IQ];
        uint8_t neg[QK_IQ / 8], s4[16];
        uint16_t idx[QK_IQ / 8];
        iq_weights(xb, qw ? qw + i * QK_IQ : NULL, 2.0f, w);
        iq_signs(xb, w, false, a, neg);
        memset(&y[i], 0, sizeof(y[i]));
        y[i].d = GGML_FP32_TO_FP16(iq_block(b, a, w, 16, 0.125f, s4, idx));
        for (int l = 0; l < QK_IQ / 8; l++) {
            y[i].qs[l] = (uint8_t) (idx[l] & 255);
            y[i].qh[l / 4] |= (uint8_t) ((idx[l] >> 8) << (2 * (l % 4)));
            y[i].qs[QK_IQ / 8 + l] = neg[l];
        }
        for (int ib = 0; ib < 16; ib++) y[i].scales[ib / 2] |= (uint8_t) (s4[ib] << (4 * (ib % 2)));
    }
    return true;
}

// ---- IQ1_S / IQ1_M: x ~ scale * (g + delta), g a grid entry of {-1, 0, 1}, delta = +-1/8 (one
// per 32 values for IQ1_S, per 8 for IQ1_M), 3-bit scales (2 s + 1) per 32 / 16 ----

// Codes n values (entries of 8) at inverse scale id: the entries in idx, delta signs in neg
// (one per entry; with shared >= 0 all take that sign, else each its better one).
static void iq1_fit(const struct iq_book * b, const float * x, const float * w, int n, float id, int shared, uint16_t * idx,
                    uint8_t * neg, float * sqx, float * sq2) {
    for (int g = 0; g < n; g += 8) {
        float ax = 0.0f, a2 = 0.0f, bx = 0.0f, b2 = 0.0f, ea = 0.0f, eb = 0.0f;
        const int ia = iq_code_shift(b, x + g, w + g, id, IQ1S_DELTA, &ax, &a2, &ea);
        const int ib = shared == 0 ? ia : iq_code_shift(b, x + g, w + g, id, -IQ1S_DELTA, &bx, &b2, &eb);
        const bool use_neg = shared == 1 || (shared < 0 && eb < ea);
        idx[g / 8] = (uint16_t) (use_neg ? ib : ia);
        neg[g / 8] = use_neg;
        *sqx += use_neg ? bx : ax;
        *sq2 += use_neg ? b2 : a2;
    }
}

// Least-squares scale of n values (0 if none fits); *shared_out: the delta sign chosen for all
// (shared mode) or -1.
static float iq1_scale(const struct iq_book * b, const float * x, const float * w, int n, bool shared, int * shared_out) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(x[j]));
    *shared_out = shared ? 0 : -1;
    if (amax < 1e-30f) return 0.0f;
    uint16_t idx[4];
    uint8_t neg[4];
    float best = -1.0f, scale = 0.0f;
    for (int sg = 0; sg < (shared ? 2 : 1); sg++) {
        // stretches around amax on the outer level, then ones that clip amax (an outlier would
        // otherwise round every other value of the group to zero)
        for (int t = 0; t < IQS_NTRY + IQ1_NCLIP; t++) {
            const float r = t < IQS_NTRY ? 0.5f + 0.05f * (float) t : 1.3f * powf(1.15f, (float) (t - IQS_NTRY));
            const float id = 1.125f * r / amax;
            float sqx = 0.0f, sq2 = 0.0f;
            iq1_fit(b, x, w, n, id, shared ? sg : -1, idx, neg, &sqx, &sq2);
            if (sqx > 0.0f && sq2 > 0.0f && sqx * sqx > best * sq2) {
                best = sqx * sqx / sq2;
                scale = sqx / sq2;
                if (shared) *shared_out = sg;
            }
        }
    }
    return scale;
}

// Codes one IQ1 super-block: 3-bit scales s4 per group of `sub`, entries idx, delta signs neg
// (per entry), and returns the fp16-rounded d.
static float iq1_block(const struct iq_book * b, const float * x, const float * w, int sub, bool shared, uint8_t * s4,
                       uint16_t * idx, uint8_t * neg) {
    float sc[QK_IQ / 16], smax = 0.0f;
    int sh[QK_IQ / 16];
    const int ng = QK_IQ / sub;
    for (int ig = 0; ig < ng; ig++) {
        sc[ig] = iq1_scale(b, x + ig * sub, w + ig * sub, sub, shared, &sh[ig]);
        smax = fmaxf(smax, sc[ig]);
    }
    const float d = GGML_FP16_TO_FP32(GGML_FP32_TO_FP16(smax / 15.0f));
    for (int ig = 0; ig < ng; ig++) {
        int s = d > 0.0f ? (int) lrintf((sc[ig] / d - 1.0f) * 0.5f) : 0;
        s = s < 0 ? 0 : (s > 7 ? 7 : s);
        s4[ig] = (uint8_t) s;
        const float db = d * (float) (2 * s + 1);
        float sqx = 0.0f, sq2 = 0.0f;
        iq1_fit(b, x + ig * sub, w + ig * sub, sub, db > 0.0f ? 1.0f / db : 0.0f, sh[ig], idx + ig * sub / 8, neg + ig * sub / 8,
                &sqx, &sq2);
    }
    return d;
}

bool quantize_row_iq1_s_imat(const float * x, block_iq1_s * y, int64_t k, const float * qw) {
    const struct iq_book * b = iq_book_get(IQB_1S);
    if (!b) return false;
    for (int64_t i = 0; i < k / QK_IQ; i++) {
        const float * xb = x + i * QK_IQ;
        float w[QK_IQ];
        uint8_t s4[8], neg[QK_IQ / 8];
        uint16_t idx[QK_IQ / 8];
        iq_weights(xb, qw ? qw + i * QK_IQ : NULL, 2.0f, w);
        y[i].d = GGML_FP32_TO_FP16(iq1_block(b, xb, w, 32, true, s4, idx, neg));
        for (int ib = 0; ib < 8; ib++) {
            uint16_t h = (uint16_t) ((s4[ib] << 12) | (neg[4 * ib] ? 0x8000 : 0));
            for (int l = 0; l < 4; l++) {
                y[i].qs[4 * ib + l] = (uint8_t) (idx[4 * ib + l] & 255);
                h |= (uint16_t) ((idx[4 * ib + l] >> 8) << (3 * l));
            }
            y[i].qh[ib] = h;
        }
    }
    return true;
}

bool quantize_row_iq1_m_imat(const float * x, block_iq1_m * y, int64_t k, const float * qw) {
    const struct iq_book * b = iq_book_get(IQB_1S);
    if (!b) return false;
    for (int64_t i = 0; i < k / QK_IQ; i++) {
        const float * xb = x + i * QK_IQ;
        float w[QK_IQ];
        uint8_t s4[16], neg[QK_IQ / 8];
        uint16_t idx[QK_IQ / 8];
        iq_weights(xb, qw ? qw + i * QK_IQ : NULL, 2.0f, w);
        const ggml_fp16_t d = GGML_FP32_TO_FP16(iq1_block(b, xb, w, 16, false, s4, idx, neg));
        memset(&y[i], 0, sizeof(y[i]));
        for (int e = 0; e < QK_IQ / 8; e++) {
            y[i].qs[e] = (uint8_t) (idx[e] & 255);
            y[i].qh[e / 2] |= (uint8_t) ((((idx[e] >> 8) & 7) | (neg[e] ? 8 : 0)) << (4 * (e % 2)));
        }
        uint16_t sc[4] = { 0, 0, 0, 0 };
        for (int ks = 0; ks < 16; ks++) sc[ks / 4] |= (uint16_t) (s4[ks] << (3 * (ks % 4)));
        for (int j = 0; j < 4; j++) sc[j] |= (uint16_t) (((d >> (4 * j)) & 0xF) << 12);
        memcpy(y[i].scales, sc, sizeof(sc));
    }
    return true;
}
