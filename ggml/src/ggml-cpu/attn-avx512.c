// attn-avx512.c — flash-attention kernels with AVX-512 (math in attn.h).
//
// scores: the tile's 16 rows in the lanes, 8 keys at a time, one FMA per key element (broadcast
// from the K row) against the transposed queries; the 64 x 16 block of products is transposed
// back to rows, and each row's visible keys are appended with vcompressps. probs: 16 list
// entries at a time. accum: o += p * v with the output elements in lanes, o and o2 (even and
// odd entries) held in registers across the block; two rows whose entries name the same cells
// (the heads of a GQA group at one position) share each V load, 64 output elements at a time.
#include "attn.h"

#include "simd-exp.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

static inline __m512 tanh16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 e = ggml_simd_exp16(_mm512_add_ps(x, x));
    return _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
}

// 16x16 transpose: r[i] lane j <- r[j] lane i.
static inline void transpose_16x16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[4 * i]), _mm512_castps_pd(t[4 * i + 2])));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[4 * i]), _mm512_castps_pd(t[4 * i + 2])));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[4 * i + 1]), _mm512_castps_pd(t[4 * i + 3])));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[4 * i + 1]), _mm512_castps_pd(t[4 * i + 3])));
    }
    // r[4i + c] now holds, per 128-bit lane L, column c of rows 4i..4i+3 restricted to columns 4L..4L+3
    for (int c = 0; c < 4; c++) {
        const __m512 a0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88); // lanes 0,2 of each
        const __m512 a1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD); // lanes 1,3
        const __m512 a2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        const __m512 a3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
        t[c] = _mm512_shuffle_f32x4(a0, a2, 0x88); // column c     (128-bit lane 0 of each)
        t[c + 4] = _mm512_shuffle_f32x4(a1, a3, 0x88); // column c + 4 (lane 1)
        t[c + 8] = _mm512_shuffle_f32x4(a0, a2, 0xDD); // column c + 8 (lane 2)
        t[c + 12] = _mm512_shuffle_f32x4(a1, a3, 0xDD); // column c + 12 (lane 3)
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

static inline __mmask16 lanes_below(int64_t n) {
    return n >= 16 ? (__mmask16) 0xFFFF : n <= 0 ? (__mmask16) 0 : (__mmask16) ((1u << n) - 1);
}

// rows[i][j] = q_i . k_j for tiles of up to 8 rows (one-token decoding: a GQA group) with the
// lane operations of scores_avx512 on 8-lane vectors: where 512-bit operations are split in two
// (Zen 4) an 8-lane FMA costs half a 16-lane one, and the lanes past 8 would be idle anyway.
static void dots8(const struct ggml_fa_rows * r, int nk, const float * k, int64_t ldk, float rows[GGML_FA_ROWS][GGML_FA_BLOCK]) {
    const int D = r->D;
    float qk[GGML_FA_BLOCK + 32][8]; // qk[j] lane i = q_i . k_j
    for (int j = 0; j < nk; j += 8) {
        const float * kp[8];
        for (int u = 0; u < 8; u++) kp[u] = k + (j + u < nk ? j + u : nk - 1) * ldk; // past nk: never read back
        __m256 acc[8];
        for (int u = 0; u < 8; u++) acc[u] = _mm256_setzero_ps();
        for (int d = 0; d < D; d++) {
            const __m256 q = _mm256_loadu_ps(r->qt + d * GGML_FA_ROWS);
            for (int u = 0; u < 8; u++) acc[u] = _mm256_fmadd_ps(_mm256_broadcast_ss(kp[u] + d), q, acc[u]);
        }
        for (int u = 0; u < 8; u++) _mm256_storeu_ps(qk[j + u], acc[u]);
    }
    // 32 keys at a time: t[u] = keys 2u, 2u+1; after the transpose t[i] holds row i of the even
    // keys and t[8 + i] of the odd ones, interleaved back into key order
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    for (int j = 0; j < nk; j += 32) {
        __m512 t[16];
        for (int u = 0; u < 16; u++) t[u] = j + 2 * u < nk ? _mm512_loadu_ps(qk[j + 2 * u]) : _mm512_setzero_ps();
        transpose_16x16(t);
        for (int i = 0; i < r->nr; i++) {
            _mm512_storeu_ps(&rows[i][j], _mm512_permutex2var_ps(t[i], lo, t[8 + i]));
            if (j + 16 < GGML_FA_BLOCK) _mm512_storeu_ps(&rows[i][j + 16], _mm512_permutex2var_ps(t[i], hi, t[8 + i]));
        }
    }
}

// rows[i][j] = q_i . k_j, the tile's rows in the lanes (one FMA chain over d per lane).
static void dots16(const struct ggml_fa_rows * r, int nk, const float * k, int64_t ldk, float rows[GGML_FA_ROWS][GGML_FA_BLOCK]) {
    const int D = r->D;
    // qk[j] lane i = q_i . k_j, then transposed in 16x16 blocks: rows[i][j]
    __m512 qk[GGML_FA_BLOCK];
    for (int j = 0; j < nk; j += 8) {
        const float * kp[8];
        for (int u = 0; u < 8; u++) kp[u] = k + (j + u < nk ? j + u : nk - 1) * ldk; // past nk: never read back
        __m512 acc[8];
        for (int u = 0; u < 8; u++) acc[u] = _mm512_setzero_ps();
        for (int d = 0; d < D; d++) {
            const __m512 q = _mm512_loadu_ps(r->qt + d * GGML_FA_ROWS);
            for (int u = 0; u < 8; u++) acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(kp[u][d]), q, acc[u]);
        }
        for (int u = 0; u < 8; u++) qk[j + u] = acc[u];
    }
    for (int j = 0; j < nk; j += 16) {
        __m512 t[16];
        for (int u = 0; u < 16; u++) t[u] = j + u < nk ? qk[j + u] : _mm512_setzero_ps();
        transpose_16x16(t);
        for (int i = 0; i < r->nr; i++) _mm512_storeu_ps(&rows[i][j], t[i]);
    }
}

static void scores_avx512(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * k, int64_t ldk) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    float rows[GGML_FA_ROWS][GGML_FA_BLOCK];
    if (r->nr <= 8)
        dots8(r, nk, k, ldk, rows);
    else
        dots16(r, nk, k, ldk, rows);
    for (int i = 0; i < r->nr; i++) {
        const float * mrow = r->mask ? r->mask[i] : NULL;
        float * s = r->s + i * r->lds;
        int32_t * cell = r->cell + i * r->lds;
        int64_t n = r->n[i];
        __m512 mx = ninf;
        for (int j = 0; j < nk; j += 16) {
            __mmask16 live = lanes_below(nk - j);
            if (mrow) live = _mm512_mask_cmp_ps_mask(live, _mm512_maskz_loadu_ps(live, mrow + j), ninf, _CMP_NEQ_UQ);
            if (!live) continue; // every cell hidden from this row
            __m512 x = _mm512_mul_ps(_mm512_loadu_ps(&rows[i][j]), _mm512_set1_ps(r->scale));
            if (r->softcap != 0.0f) {
                const __m512 cap = _mm512_set1_ps(r->softcap);
                x = _mm512_mul_ps(cap, tanh16(_mm512_div_ps(x, cap)));
            }
            if (mrow) x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(r->slope[i]), _mm512_maskz_loadu_ps(live, mrow + j)));
            // compress in registers, then a plain store (vcompressps to memory is microcoded on Zen 4);
            // the 16 lanes fit: n <= j0 + j and the list has room for every cell, rounded up to 16
            const __m512i cj = _mm512_add_epi32(iota, _mm512_set1_epi32((int) (j0 + j)));
            if (live == 0xFFFF) { // every cell visible (causal: below the diagonal): nothing to compress
                _mm512_storeu_ps(s + n, x);
                _mm512_storeu_si512(cell + n, cj);
            } else {
                _mm512_storeu_ps(s + n, _mm512_maskz_compress_ps(live, x));
                _mm512_storeu_si512(cell + n, _mm512_maskz_compress_epi32(live, cj));
            }
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
        float * s = r->s + i * r->lds;
        const int64_t n = r->n[i];
        const __m512 m = _mm512_set1_ps(r->m[i]);
        __m512 sum = _mm512_setzero_ps();
        for (int64_t j = 0; j < n; j += 16) {
            const __mmask16 valid = lanes_below(n - j);
            const __m512 p = _mm512_maskz_mov_ps(valid, ggml_simd_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(valid, s + j), m)));
            _mm512_mask_storeu_ps(s + j, valid, p);
            sum = _mm512_add_ps(sum, p);
        }
        r->l[i] = _mm512_reduce_add_ps(sum);
    }
}

// o += p * v over entries [e0, e1) of a row: NC whole vectors of v per entry (Dv = 16*NC), even
// entries into a, odd into b, two entries per step.
static inline __attribute__((always_inline)) void accum_row(float * o, float * o2, const float * p, const int32_t * cell,
                                                            int64_t e0, int64_t e1, const float * v, int64_t ldv, int64_t j0,
                                                            const int NC) {
    __m512 a[8], b[8];
    for (int t = 0; t < NC; t++) {
        a[t] = _mm512_loadu_ps(o + 16 * t);
        b[t] = _mm512_loadu_ps(o2 + 16 * t);
    }
    int64_t e = e0;
    if (e < e1 && e % 2) { // an odd entry first: it belongs to b
        const __m512 pe = _mm512_set1_ps(p[e]);
        const float * vj = v + (cell[e] - j0) * ldv;
        for (int t = 0; t < NC; t++) b[t] = _mm512_fmadd_ps(pe, _mm512_loadu_ps(vj + 16 * t), b[t]);
        e++;
    }
    for (; e + 1 < e1; e += 2) {
        const __m512 pa = _mm512_set1_ps(p[e]), pb = _mm512_set1_ps(p[e + 1]);
        const float *va = v + (cell[e] - j0) * ldv, *vb = v + (cell[e + 1] - j0) * ldv;
        for (int t = 0; t < NC; t++) {
            a[t] = _mm512_fmadd_ps(pa, _mm512_loadu_ps(va + 16 * t), a[t]);
            b[t] = _mm512_fmadd_ps(pb, _mm512_loadu_ps(vb + 16 * t), b[t]);
        }
    }
    if (e < e1) { // an even entry last
        const __m512 pe = _mm512_set1_ps(p[e]);
        const float * vj = v + (cell[e] - j0) * ldv;
        for (int t = 0; t < NC; t++) a[t] = _mm512_fmadd_ps(pe, _mm512_loadu_ps(vj + 16 * t), a[t]);
    }
    for (int t = 0; t < NC; t++) {
        _mm512_storeu_ps(o + 16 * t, a[t]);
        _mm512_storeu_ps(o2 + 16 * t, b[t]);
    }
}

// o += p * v for two rows whose entries [ea0, ea0 + cnt) and [eb0, eb0 + cnt) name the same
// cells: each V row is loaded once for both, 64 output elements from column c0. Row a's entry
// ea goes to oa when even, oa2 when odd; row b's entries keep their own parity (xb is the
// chain row b uses where row a uses oa), so each row's chains get the same FMAs as one row alone.
static inline __attribute__((always_inline)) void accum_pair64(float * oa, float * oa2, float * xb, float * yb, const float * pa,
                                                               const float * pb, const int32_t * cell, int64_t ea0, int64_t eb0,
                                                               int64_t cnt, const float * v, int64_t ldv, int64_t j0) {
    __m512 a[4], b[4], c[4], d[4];
    for (int t = 0; t < 4; t++) {
        a[t] = _mm512_loadu_ps(oa + 16 * t);
        b[t] = _mm512_loadu_ps(oa2 + 16 * t);
        c[t] = _mm512_loadu_ps(xb + 16 * t);
        d[t] = _mm512_loadu_ps(yb + 16 * t);
    }
    int64_t u = 0;
    if (u < cnt && ea0 % 2) { // row a's odd entry first: chains b and d
        const __m512 qa = _mm512_set1_ps(pa[ea0]), qb = _mm512_set1_ps(pb[eb0]);
        const float * vj = v + (cell[ea0] - j0) * ldv;
        for (int t = 0; t < 4; t++) {
            const __m512 x = _mm512_loadu_ps(vj + 16 * t);
            b[t] = _mm512_fmadd_ps(qa, x, b[t]);
            d[t] = _mm512_fmadd_ps(qb, x, d[t]);
        }
        u++;
    }
    for (; u + 1 < cnt; u += 2) {
        const __m512 qa0 = _mm512_set1_ps(pa[ea0 + u]), qb0 = _mm512_set1_ps(pb[eb0 + u]);
        const __m512 qa1 = _mm512_set1_ps(pa[ea0 + u + 1]), qb1 = _mm512_set1_ps(pb[eb0 + u + 1]);
        const float *v0 = v + (cell[ea0 + u] - j0) * ldv, *v1 = v + (cell[ea0 + u + 1] - j0) * ldv;
        for (int t = 0; t < 4; t++) {
            __m512 x0 = _mm512_loadu_ps(v0 + 16 * t), x1 = _mm512_loadu_ps(v1 + 16 * t);
            // in registers: folded into both FMAs as memory operands each would be loaded twice
            __asm__("" : "+v"(x0), "+v"(x1));
            a[t] = _mm512_fmadd_ps(qa0, x0, a[t]);
            c[t] = _mm512_fmadd_ps(qb0, x0, c[t]);
            b[t] = _mm512_fmadd_ps(qa1, x1, b[t]);
            d[t] = _mm512_fmadd_ps(qb1, x1, d[t]);
        }
    }
    if (u < cnt) { // row a's even entry last: chains a and c
        const __m512 qa = _mm512_set1_ps(pa[ea0 + u]), qb = _mm512_set1_ps(pb[eb0 + u]);
        const float * vj = v + (cell[ea0 + u] - j0) * ldv;
        for (int t = 0; t < 4; t++) {
            const __m512 x = _mm512_loadu_ps(vj + 16 * t);
            a[t] = _mm512_fmadd_ps(qa, x, a[t]);
            c[t] = _mm512_fmadd_ps(qb, x, c[t]);
        }
    }
    for (int t = 0; t < 4; t++) {
        _mm512_storeu_ps(oa + 16 * t, a[t]);
        _mm512_storeu_ps(oa2 + 16 * t, b[t]);
        _mm512_storeu_ps(xb + 16 * t, c[t]);
        _mm512_storeu_ps(yb + 16 * t, d[t]);
    }
}

// The end of row i's list entries in cells before j1, from entry e0 on (cells increase by at
// least 1 per entry, so at most j1 - cell[e0] of them).
static inline int64_t entries_before(const struct ggml_fa_rows * r, int i, int64_t e0, int64_t j1) {
    const int32_t * cell = r->cell + i * r->lds;
    const int64_t n = r->n[i];
    if (e0 >= n || cell[e0] >= j1) return e0;
    int64_t lo = e0 + 1, hi = e0 + (j1 - cell[e0]) < n ? e0 + (j1 - cell[e0]) : n; // answer in [lo, hi]
    if (cell[hi - 1] < j1) return hi;
    while (lo < hi) { // cell[lo - 1] < j1 <= cell[hi]
        const int64_t mid = lo + (hi - lo) / 2;
        if (cell[mid] < j1)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void accum_avx512(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * v, int64_t ldv) {
    if (r->Dv % 64 == 0) {
        // rows in pairs where their entries in the block name the same cells (the heads of a GQA
        // group at one position): V rows loaded once for both
        int64_t e0s[GGML_FA_ROWS], e1s[GGML_FA_ROWS];
        for (int i = 0; i < r->nr; i++) {
            e0s[i] = r->next[i];
            e1s[i] = entries_before(r, i, e0s[i], j0 + nk);
            r->next[i] = e1s[i];
        }
        for (int i = 0; i < r->nr; i++) {
            const int64_t cnt = e1s[i] - e0s[i];
            if (cnt == 0) continue;
            const float * pa = r->s + i * r->lds;
            const int32_t * cell = r->cell + i * r->lds;
            float *oa = r->o + i * r->ldo, *oa2 = r->o2 + i * r->ldo;
            if (i + 1 < r->nr && e1s[i + 1] - e0s[i + 1] == cnt &&
                memcmp(cell + e0s[i], r->cell + (i + 1) * r->lds + e0s[i + 1], (size_t) cnt * sizeof(int32_t)) == 0) {
                const float * pb = r->s + (i + 1) * r->lds;
                float *ob = r->o + (i + 1) * r->ldo, *ob2 = r->o2 + (i + 1) * r->ldo;
                const bool same = (e0s[i] - e0s[i + 1]) % 2 == 0;
                for (int c0 = 0; c0 < r->Dv; c0 += 64) {
                    accum_pair64(oa + c0, oa2 + c0, (same ? ob : ob2) + c0, (same ? ob2 : ob) + c0, pa, pb, cell, e0s[i],
                                 e0s[i + 1], cnt, v + c0, ldv, j0);
                }
                i++;
                continue;
            }
            for (int c0 = 0; c0 < r->Dv; c0 += 64) {
                accum_row(oa + c0, oa2 + c0, pa, cell, e0s[i], e1s[i], v + c0, ldv, j0, 4);
            }
        }
        return;
    }
    const int Dv = r->Dv;
    for (int i = 0; i < r->nr; i++) {
        const float * p = r->s + i * r->lds;
        const int32_t * cell = r->cell + i * r->lds;
        const int64_t e0 = r->next[i];
        const int64_t e1 = entries_before(r, i, e0, j0 + nk);
        r->next[i] = e1;
        if (e1 == e0) continue;
        float *o = r->o + i * r->ldo, *o2 = r->o2 + i * r->ldo;
        for (int c0 = 0; c0 < Dv; c0 += 64) {
            // even entries into a, odd into b: two independent FMA chains per output vector
            __m512 a[4], b[4];
            const int nc = (Dv - c0 + 15) / 16 < 4 ? (Dv - c0 + 15) / 16 : 4;
            for (int t = 0; t < 4; t++) {
                a[t] = b[t] = _mm512_setzero_ps();
                if (t < nc) {
                    a[t] = _mm512_maskz_loadu_ps(lanes_below(Dv - c0 - 16 * t), o + c0 + 16 * t);
                    b[t] = _mm512_maskz_loadu_ps(lanes_below(Dv - c0 - 16 * t), o2 + c0 + 16 * t);
                }
            }
            for (int64_t e = e0; e < e1; e++) {
                const __m512 pe = _mm512_set1_ps(p[e]);
                const float * vj = v + (cell[e] - j0) * ldv + c0;
                if (e % 2 == 0) {
                    for (int t = 0; t < 4; t++) {
                        if (t < nc)
                            a[t] = _mm512_fmadd_ps(pe, _mm512_maskz_loadu_ps(lanes_below(Dv - c0 - 16 * t), vj + 16 * t), a[t]);
                    }
                } else {
                    for (int t = 0; t < 4; t++) {
                        if (t < nc)
                            b[t] = _mm512_fmadd_ps(pe, _mm512_maskz_loadu_ps(lanes_below(Dv - c0 - 16 * t), vj + 16 * t), b[t]);
                    }
                }
            }
            for (int t = 0; t < 4; t++) {
                if (t < nc) {
                    _mm512_mask_storeu_ps(o + c0 + 16 * t, lanes_below(Dv - c0 - 16 * t), a[t]);
                    _mm512_mask_storeu_ps(o2 + c0 + 16 * t, lanes_below(Dv - c0 - 16 * t), b[t]);
                }
            }
        }
    }
}

static void f16_rows_avx512(const void * src, size_t stride, int nk, int64_t n, float * dst) {
    for (int j = 0; j < nk; j++) {
        const ggml_fp16_t * h = (const ggml_fp16_t *) ((const char *) src + (size_t) j * stride);
        int64_t e = 0;
        for (; e + 16 <= n; e += 16)
            _mm512_storeu_ps(dst + j * n + e, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (h + e))));
        for (; e < n; e += 16) {
            const __mmask16 m = lanes_below(n - e);
            _mm512_mask_storeu_ps(dst + j * n + e, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + e)));
        }
    }
}

void ggml_fa_kernels_init_avx512(struct ggml_fa_kernels * k) {
    k->f16_rows = f16_rows_avx512;
    k->scores = scores_avx512;
    k->probs = probs_avx512;
    k->accum = accum_avx512;
}
