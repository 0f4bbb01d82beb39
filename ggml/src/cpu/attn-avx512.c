// attn-avx512.c — flash-attention kernels with AVX-512 (math in attn.h).
//
// scores: per row, 16 keys at a time; the q . k dot products run over 16-element chunks of the
// row (one FMA per chunk and key) and are folded into one vector of 16 scores by a fixed
// transpose-and-add tree (the same for every lane, so a key's score does not depend on its
// lane); visible keys are appended with vcompressps. probs: 16 list entries at a time.
// accum: o += p * v with the output elements in lanes, o held in registers across the block.
#include "attn.h"

#include <immintrin.h>
#include <math.h>

// exp(x) as in ggml_cpu_expf (Cody-Waite reduction, degree-6 polynomial); 2^n by vscalefps.
// exp(-inf) = 0, results below FLT_MIN are 0, above exp(88.38) inf.
static inline __m512 exp16(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.3365447504f), hi = _mm512_set1_ps(88.3762626647949f);
    const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512 y = _mm512_scalef_ps(p, n);
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y, _mm512_setzero_ps());
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), y, _mm512_set1_ps(INFINITY));
}

static inline __m512 tanh16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 e = exp16(_mm512_add_ps(x, x));
    return _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
}

// Lane u of the result = sum of the 16 lanes of a[u].
static inline __m512 reduce_16x16(const __m512 a[16]) {
    __m512 b[8], c[4], e[2];
    for (int p = 0; p < 8; p++) {
        // per 128-bit lane: [x0+x2, y0+y2, x1+x3, y1+y3] of x = a[2p], y = a[2p+1]
        b[p] = _mm512_add_ps(_mm512_unpacklo_ps(a[2*p], a[2*p + 1]), _mm512_unpackhi_ps(a[2*p], a[2*p + 1]));
    }
    for (int p = 0; p < 4; p++) {
        // per 128-bit lane: the partial sums of keys 4p..4p+3
        c[p] = _mm512_add_ps(_mm512_shuffle_ps(b[2*p], b[2*p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(b[2*p], b[2*p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    for (int p = 0; p < 2; p++) {
        // [keys 8p..8p+3 lanes 0+1, same lanes 2+3, keys 8p+4..8p+7 lanes 0+1, lanes 2+3]
        e[p] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2*p], c[2*p + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(c[2*p], c[2*p + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    return _mm512_add_ps(_mm512_shuffle_f32x4(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

static inline __mmask16 lanes_below(int64_t n) {
    return n >= 16 ? (__mmask16) 0xFFFF : n <= 0 ? (__mmask16) 0 : (__mmask16) ((1u << n) - 1);
}

static void scores_avx512(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * k, int64_t ldk) {
    const int D = r->D;
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int i = 0; i < r->nr; i++) {
        const float * mrow = r->mask ? r->mask[i] : NULL;
        const float * q = r->q + i*r->ldq;
        float * s = r->s + i*r->lds;
        int32_t * cell = r->cell + i*r->lds;
        int64_t n = r->n[i];
        __m512 mx = ninf;
        for (int j = 0; j < nk; j += 16) {
            __mmask16 live = lanes_below(nk - j);
            if (mrow) live = _mm512_mask_cmp_ps_mask(live, _mm512_maskz_loadu_ps(live, mrow + j), ninf, _CMP_NEQ_UQ);
            if (!live) continue; // every cell hidden from this row
            const float * kp[16];
            for (int u = 0; u < 16; u++) kp[u] = k + (j + u < nk ? j + u : nk - 1)*ldk; // past nk: not live
            __m512 acc[16];
            for (int u = 0; u < 16; u++) acc[u] = _mm512_setzero_ps();
            for (int d0 = 0; d0 < D; d0 += 16) {
                const __mmask16 md = lanes_below(D - d0);
                const __m512 qv = _mm512_maskz_loadu_ps(md, q + d0);
                for (int u = 0; u < 16; u++) acc[u] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(md, kp[u] + d0), acc[u]);
            }
            __m512 x = _mm512_mul_ps(reduce_16x16(acc), _mm512_set1_ps(r->scale));
            if (r->softcap != 0.0f) {
                const __m512 cap = _mm512_set1_ps(r->softcap);
                x = _mm512_mul_ps(cap, tanh16(_mm512_div_ps(x, cap)));
            }
            if (mrow) x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(r->slope[i]), _mm512_maskz_loadu_ps(live, mrow + j)));
            _mm512_mask_compressstoreu_ps(s + n, live, x);
            _mm512_mask_compressstoreu_epi32(cell + n, live, _mm512_add_epi32(iota, _mm512_set1_epi32((int) (j0 + j))));
            n += __builtin_popcount((unsigned) live);
            mx = _mm512_mask_max_ps(mx, live, mx, x);
        }
        r->n[i] = n;
        const float bm = _mm512_reduce_max_ps(mx);
        r->m[i] = bm > r->m[i] ? bm : r->m[i];
    }
}

static void probs_avx512(const struct ggml_fa_rows * r) {
    for (int i = 0; i < r->nr; i++) {
        float * s = r->s + i*r->lds;
        const int64_t n = r->n[i];
        const __m512 m = _mm512_set1_ps(r->m[i]);
        __m512 sum = _mm512_setzero_ps();
        for (int64_t j = 0; j < n; j += 16) {
            const __mmask16 valid = lanes_below(n - j);
            const __m512 p = _mm512_maskz_mov_ps(valid, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(valid, s + j), m)));
            _mm512_mask_storeu_ps(s + j, valid, p);
            sum = _mm512_add_ps(sum, p);
        }
        r->l[i] = _mm512_reduce_add_ps(sum);
    }
}

static void accum_avx512(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * v, int64_t ldv) {
    const int Dv = r->Dv;
    for (int i = 0; i < r->nr; i++) {
        const float * p = r->s + i*r->lds;
        const int32_t * cell = r->cell + i*r->lds;
        const int64_t e0 = r->next[i];
        int64_t e1 = e0;
        while (e1 < r->n[i] && cell[e1] < j0 + nk) e1++;
        r->next[i] = e1;
        if (e1 == e0) continue;
        float * o = r->o + i*r->ldo;
        for (int c0 = 0; c0 < Dv; c0 += 128) {
            __m512 acc[8];
            const int nc = (Dv - c0 + 15)/16 < 8 ? (Dv - c0 + 15)/16 : 8;
            for (int t = 0; t < 8; t++) {
                acc[t] = _mm512_setzero_ps();
                if (t < nc) acc[t] = _mm512_maskz_loadu_ps(lanes_below(Dv - c0 - 16*t), o + c0 + 16*t);
            }
            for (int64_t e = e0; e < e1; e++) {
                const __m512 pe = _mm512_set1_ps(p[e]);
                const float * vj = v + (cell[e] - j0)*ldv + c0;
                for (int t = 0; t < 8; t++) {
                    if (t < nc) acc[t] = _mm512_fmadd_ps(pe, _mm512_maskz_loadu_ps(lanes_below(Dv - c0 - 16*t), vj + 16*t), acc[t]);
                }
            }
            for (int t = 0; t < 8; t++) {
                if (t < nc) _mm512_mask_storeu_ps(o + c0 + 16*t, lanes_below(Dv - c0 - 16*t), acc[t]);
            }
        }
    }
}

void ggml_fa_kernels_init_avx512(struct ggml_fa_kernels * k) {
    k->scores = scores_avx512;
    k->probs = probs_avx512;
    k->accum = accum_avx512;
}
