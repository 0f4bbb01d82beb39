// attn-avx2.c — flash-attention kernels with AVX2 + FMA (math in attn.h); the layout of
// attn-avx512.c with 8-lane vectors: the tile's 16 rows as two vectors of 8, 4 keys at a time;
// visible keys are appended lane by lane (AVX2 has no compress).
#include "attn.h"

#include "simd-exp.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

static inline __m256 tanh8(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = ggml_simd_exp8(_mm256_add_ps(x, x));
    return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
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

// 8x8 transpose: r[u] lane i -> r[i] lane u.
static inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

static inline float hmax8(__m256 x) {
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

static void scores_avx2(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * k, int64_t ldk) {
    const int D = r->D;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    // qk[j][i] = q_i . k_j, the rows in lanes (two vectors of 8); keys past nk up to the next 8
    // are zero, so the transposes below read defined values (their lanes are never used)
    float qk[GGML_FA_BLOCK][GGML_FA_ROWS];
    for (int j = 0; j < nk; j += 4) {
        const float * kp[4];
        for (int u = 0; u < 4; u++) kp[u] = k + (j + u < nk ? j + u : nk - 1) * ldk; // past nk: never read back
        __m256 acc[4][2];
        for (int u = 0; u < 4; u++) acc[u][0] = acc[u][1] = _mm256_setzero_ps();
        if (r->nr <= 8) { // lanes 8..15 would only hold the zero rows: one vector (decoding: a GQA group)
            for (int d = 0; d < D; d++) {
                const __m256 q0 = _mm256_loadu_ps(r->qt + d * GGML_FA_ROWS);
                for (int u = 0; u < 4; u++) acc[u][0] = _mm256_fmadd_ps(_mm256_broadcast_ss(kp[u] + d), q0, acc[u][0]);
            }
        } else {
            for (int d = 0; d < D; d++) {
                const __m256 q0 = _mm256_loadu_ps(r->qt + d * GGML_FA_ROWS), q1 = _mm256_loadu_ps(r->qt + d * GGML_FA_ROWS + 8);
                for (int u = 0; u < 4; u++) {
                    const __m256 kd = _mm256_broadcast_ss(kp[u] + d);
                    acc[u][0] = _mm256_fmadd_ps(kd, q0, acc[u][0]);
                    acc[u][1] = _mm256_fmadd_ps(kd, q1, acc[u][1]);
                }
            }
        }
        for (int u = 0; u < 4 && j + u < nk; u++) {
            _mm256_storeu_ps(qk[j + u], acc[u][0]);
            _mm256_storeu_ps(qk[j + u] + 8, acc[u][1]);
        }
    }
    const int nk8 = (nk + 7) & ~7;
    for (int j = nk; j < nk8; j++) memset(qk[j], 0, sizeof(qk[j]));
    const __m256 scale = _mm256_set1_ps(r->scale);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int h = 0; h * 8 < r->nr; h++) {
        const int i1 = r->nr < 8 * h + 8 ? r->nr : 8 * h + 8;
        for (int j = 0; j < nk; j += 8) {
            // the 8 keys' scores of each of the 8 rows of this half
            __m256 t[8];
            for (int u = 0; u < 8; u++) t[u] = _mm256_loadu_ps(qk[j + u] + 8 * h);
            transpose8(t);
            const bool full = nk - j >= 8;
            const __m256i valid = lanes_below(nk - j);
            const int all = _mm256_movemask_ps(_mm256_castsi256_ps(valid));
            for (int i = 8 * h; i < i1; i++) {
                const float * mrow = r->mask ? r->mask[i] : NULL;
                __m256 mv = _mm256_setzero_ps();
                int live = all;
                if (mrow) {
                    mv = full ? _mm256_loadu_ps(mrow + j) : _mm256_maskload_ps(mrow + j, valid);
                    live &= _mm256_movemask_ps(_mm256_cmp_ps(mv, ninf, _CMP_NEQ_UQ));
                }
                if (!live) continue; // every cell hidden from this row
                __m256 x = _mm256_mul_ps(t[i - 8 * h], scale);
                if (r->softcap != 0.0f) {
                    const __m256 cap = _mm256_set1_ps(r->softcap);
                    x = _mm256_mul_ps(cap, tanh8(_mm256_div_ps(x, cap)));
                }
                if (mrow) x = _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(r->slope[i]), mv));
                float * s = r->s + i * r->lds;
                int32_t * cell = r->cell + i * r->lds;
                int64_t n = r->n[i];
                float mx = r->m[i];
                if (live == 0xFF) {
                    // all 8 visible (most blocks of a prompt): appended as vectors; a lane ignores
                    // a NaN score as the scalar compare below does
                    _mm256_storeu_ps(s + n, x);
                    _mm256_storeu_si256((__m256i *) (cell + n), _mm256_add_epi32(_mm256_set1_epi32((int32_t) (j0 + j)), iota));
                    const float hm = hmax8(_mm256_max_ps(x, _mm256_set1_ps(mx)));
                    mx = hm > mx ? hm : mx;
                    n += 8;
                } else {
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
    }
}

static void probs_avx2(const struct ggml_fa_rows * r) {
    for (int i = 0; i < r->nr; i++) {
        float * s = r->s + i * r->lds;
        const int64_t n = r->n[i];
        const __m256 m = _mm256_set1_ps(r->m[i]);
        __m256 sum = _mm256_setzero_ps();
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) {
            const __m256 p = ggml_simd_exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), m));
            _mm256_storeu_ps(s + j, p);
            sum = _mm256_add_ps(sum, p);
        }
        if (j < n) {
            const __m256i valid = lanes_below(n - j);
            const __m256 p =
                _mm256_and_ps(_mm256_castsi256_ps(valid), ggml_simd_exp8(_mm256_sub_ps(_mm256_maskload_ps(s + j, valid), m)));
            _mm256_maskstore_ps(s + j, valid, p);
            sum = _mm256_add_ps(sum, p);
        }
        r->l[i] = hsum8(sum);
    }
}

// o[0..32) += p_e * v_e over entries [e0, e1), even entries into o, odd into o2 (Dv % 32 == 0).
static inline void accum_full32(const float * p, const int32_t * cell, int64_t e0, int64_t e1, int64_t j0, const float * v,
                                int64_t ldv, int c0, float * o, float * o2) {
    __m256 a[4], b[4];
    for (int t = 0; t < 4; t++) {
        a[t] = _mm256_loadu_ps(o + c0 + 8 * t);
        b[t] = _mm256_loadu_ps(o2 + c0 + 8 * t);
    }
    int64_t e = e0;
    if (e % 2 == 1) { // an odd entry first: into b
        const __m256 pe = _mm256_set1_ps(p[e]);
        const float * vj = v + (cell[e] - j0) * ldv + c0;
        for (int t = 0; t < 4; t++) b[t] = _mm256_fmadd_ps(pe, _mm256_loadu_ps(vj + 8 * t), b[t]);
        e++;
    }
    for (; e + 2 <= e1; e += 2) {
        const __m256 pa = _mm256_set1_ps(p[e]), pb = _mm256_set1_ps(p[e + 1]);
        const float * va = v + (cell[e] - j0) * ldv + c0;
        const float * vb = v + (cell[e + 1] - j0) * ldv + c0;
        for (int t = 0; t < 4; t++) {
            a[t] = _mm256_fmadd_ps(pa, _mm256_loadu_ps(va + 8 * t), a[t]);
            b[t] = _mm256_fmadd_ps(pb, _mm256_loadu_ps(vb + 8 * t), b[t]);
        }
    }
    if (e < e1) { // a last even entry
        const __m256 pe = _mm256_set1_ps(p[e]);
        const float * vj = v + (cell[e] - j0) * ldv + c0;
        for (int t = 0; t < 4; t++) a[t] = _mm256_fmadd_ps(pe, _mm256_loadu_ps(vj + 8 * t), a[t]);
    }
    for (int t = 0; t < 4; t++) {
        _mm256_storeu_ps(o + c0 + 8 * t, a[t]);
        _mm256_storeu_ps(o2 + c0 + 8 * t, b[t]);
    }
}

static void accum_avx2(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * v, int64_t ldv) {
    const int Dv = r->Dv;
    for (int i = 0; i < r->nr; i++) {
        const float * p = r->s + i * r->lds;
        const int32_t * cell = r->cell + i * r->lds;
        const int64_t e0 = r->next[i];
        int64_t e1 = e0;
        while (e1 < r->n[i] && cell[e1] < j0 + nk) e1++;
        r->next[i] = e1;
        if (e1 == e0) continue;
        float *o = r->o + i * r->ldo, *o2 = r->o2 + i * r->ldo;
        int c0 = 0;
        for (; c0 + 32 <= Dv; c0 += 32) accum_full32(p, cell, e0, e1, j0, v, ldv, c0, o, o2);
        for (; c0 < Dv; c0 += 32) {
            // the last partial 32: even entries into a, odd into b (two independent FMA chains)
            __m256 a[4], b[4];
            const int nc = (Dv - c0 + 7) / 8 < 4 ? (Dv - c0 + 7) / 8 : 4;
            for (int t = 0; t < 4; t++) {
                a[t] = b[t] = _mm256_setzero_ps();
                if (t < nc) {
                    a[t] = _mm256_maskload_ps(o + c0 + 8 * t, lanes_below(Dv - c0 - 8 * t));
                    b[t] = _mm256_maskload_ps(o2 + c0 + 8 * t, lanes_below(Dv - c0 - 8 * t));
                }
            }
            for (int64_t e = e0; e < e1; e++) {
                const __m256 pe = _mm256_set1_ps(p[e]);
                const float * vj = v + (cell[e] - j0) * ldv + c0;
                if (e % 2 == 0) {
                    for (int t = 0; t < 4; t++) {
                        if (t < nc)
                            a[t] = _mm256_fmadd_ps(pe, _mm256_maskload_ps(vj + 8 * t, lanes_below(Dv - c0 - 8 * t)), a[t]);
                    }
                } else {
                    for (int t = 0; t < 4; t++) {
                        if (t < nc)
                            b[t] = _mm256_fmadd_ps(pe, _mm256_maskload_ps(vj + 8 * t, lanes_below(Dv - c0 - 8 * t)), b[t]);
                    }
                }
            }
            for (int t = 0; t < 4; t++) {
                if (t < nc) {
                    _mm256_maskstore_ps(o + c0 + 8 * t, lanes_below(Dv - c0 - 8 * t), a[t]);
                    _mm256_maskstore_ps(o2 + c0 + 8 * t, lanes_below(Dv - c0 - 8 * t), b[t]);
                }
            }
        }
    }
}

static void f16_rows_avx2(const void * src, size_t stride, int nk, int64_t n, float * dst) {
    for (int j = 0; j < nk; j++) {
        const ggml_fp16_t * h = (const ggml_fp16_t *) ((const char *) src + (size_t) j * stride);
        int64_t e = 0;
        for (; e + 8 <= n; e += 8) _mm256_storeu_ps(dst + j * n + e, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (h + e))));
        for (; e < n; e++) dst[j * n + e] = _cvtsh_ss(h[e]);
    }
}

void ggml_fa_kernels_init_avx2(struct ggml_fa_kernels * k) {
    k->f16_rows = f16_rows_avx2;
    k->scores = scores_avx2;
    k->probs = probs_avx2;
    k->accum = accum_avx2;
}
