// attn-avx2.c — flash-attention kernels with AVX2 + FMA (math in attn.h); the layout of
// attn-avx512.c with 8 lanes: 8 keys per score vector, 8-element chunks of q . k; visible keys
// are appended lane by lane (AVX2 has no compress).
#include "attn.h"

#include <immintrin.h>
#include <math.h>

// exp(x) as in ggml_cpu_expf (Cody-Waite reduction, degree-6 polynomial, 2^n built in the
// exponent bits). exp(-inf) = 0, results below FLT_MIN are 0, above exp(88.38) inf.
static inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.3365447504f), hi = _mm256_set1_ps(88.3762626647949f);
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
}

static inline __m256 tanh8(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = exp8(_mm256_add_ps(x, x));
    return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
}

// Lane u of the result = sum of the 8 lanes of a[u].
static inline __m256 reduce_8x8(const __m256 a[8]) {
    __m256 b[4], c[2];
    for (int p = 0; p < 4; p++) {
        b[p] = _mm256_add_ps(_mm256_unpacklo_ps(a[2*p], a[2*p + 1]), _mm256_unpackhi_ps(a[2*p], a[2*p + 1]));
    }
    for (int p = 0; p < 2; p++) {
        c[p] = _mm256_add_ps(_mm256_shuffle_ps(b[2*p], b[2*p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(b[2*p], b[2*p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(c[0], c[1], 0x20), _mm256_permute2f128_ps(c[0], c[1], 0x31));
}

static inline float hsum8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// All-ones in lanes below n.
static inline __m256i lanes_below(int64_t n) {
    const int c = n > 8 ? 8 : n < 0 ? 0 : (int) n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static void scores_avx2(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * k, int64_t ldk) {
    const int D = r->D;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < r->nr; i++) {
        const float * mrow = r->mask ? r->mask[i] : NULL;
        const float * q = r->q + i*r->ldq;
        float * s = r->s + i*r->lds;
        int32_t * cell = r->cell + i*r->lds;
        int64_t n = r->n[i];
        float mx = r->m[i];
        for (int j = 0; j < nk; j += 8) {
            const __m256i valid = lanes_below(nk - j);
            __m256 mv = _mm256_setzero_ps();
            int live = _mm256_movemask_ps(_mm256_castsi256_ps(valid));
            if (mrow) {
                mv = _mm256_maskload_ps(mrow + j, valid);
                live &= _mm256_movemask_ps(_mm256_cmp_ps(mv, ninf, _CMP_NEQ_UQ));
            }
            if (!live) continue; // every cell hidden from this row
            const float * kp[8];
            for (int u = 0; u < 8; u++) kp[u] = k + (j + u < nk ? j + u : nk - 1)*ldk; // past nk: not live
            __m256 acc[8];
            for (int u = 0; u < 8; u++) acc[u] = _mm256_setzero_ps();
            for (int d0 = 0; d0 < D; d0 += 8) {
                const __m256i md = lanes_below(D - d0);
                const __m256 qv = _mm256_maskload_ps(q + d0, md);
                for (int u = 0; u < 8; u++) acc[u] = _mm256_fmadd_ps(qv, _mm256_maskload_ps(kp[u] + d0, md), acc[u]);
            }
            __m256 x = _mm256_mul_ps(reduce_8x8(acc), _mm256_set1_ps(r->scale));
            if (r->softcap != 0.0f) {
                const __m256 cap = _mm256_set1_ps(r->softcap);
                x = _mm256_mul_ps(cap, tanh8(_mm256_div_ps(x, cap)));
            }
            if (mrow) x = _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(r->slope[i]), mv));
            float xs[8];
            _mm256_storeu_ps(xs, x);
            for (int u = 0; u < 8; u++) {
                if (!(live >> u & 1)) continue;
                s[n] = xs[u];
                cell[n] = (int32_t) (j0 + j + u);
                n++;
                mx = xs[u] > mx ? xs[u] : mx;
            }
        }
        r->n[i] = n;
        r->m[i] = mx;
    }
}

static void probs_avx2(const struct ggml_fa_rows * r) {
    for (int i = 0; i < r->nr; i++) {
        float * s = r->s + i*r->lds;
        const int64_t n = r->n[i];
        const __m256 m = _mm256_set1_ps(r->m[i]);
        __m256 sum = _mm256_setzero_ps();
        for (int64_t j = 0; j < n; j += 8) {
            const __m256i valid = lanes_below(n - j);
            const __m256 p = _mm256_and_ps(_mm256_castsi256_ps(valid),
                                           exp8(_mm256_sub_ps(_mm256_maskload_ps(s + j, valid), m)));
            _mm256_maskstore_ps(s + j, valid, p);
            sum = _mm256_add_ps(sum, p);
        }
        r->l[i] = hsum8(sum);
    }
}

static void accum_avx2(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * v, int64_t ldv) {
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
        for (int c0 = 0; c0 < Dv; c0 += 64) {
            __m256 acc[8];
            const int nc = (Dv - c0 + 7)/8 < 8 ? (Dv - c0 + 7)/8 : 8;
            for (int t = 0; t < 8; t++) {
                acc[t] = _mm256_setzero_ps();
                if (t < nc) acc[t] = _mm256_maskload_ps(o + c0 + 8*t, lanes_below(Dv - c0 - 8*t));
            }
            for (int64_t e = e0; e < e1; e++) {
                const __m256 pe = _mm256_set1_ps(p[e]);
                const float * vj = v + (cell[e] - j0)*ldv + c0;
                for (int t = 0; t < 8; t++) {
                    if (t < nc) acc[t] = _mm256_fmadd_ps(pe, _mm256_maskload_ps(vj + 8*t, lanes_below(Dv - c0 - 8*t)), acc[t]);
                }
            }
            for (int t = 0; t < 8; t++) {
                if (t < nc) _mm256_maskstore_ps(o + c0 + 8*t, lanes_below(Dv - c0 - 8*t), acc[t]);
            }
        }
    }
}

void ggml_fa_kernels_init_avx2(struct ggml_fa_kernels * k) {
    k->scores = scores_avx2;
    k->probs = probs_avx2;
    k->accum = accum_avx2;
}
