// quants-avx2.c — AVX2 + FMA + F16C dot products and activation quantizers (compiled with
// those flags only; cpu-traits.c installs them after a cpuid check).
//
// Integer work uses maddubs (u8 x s8 -> s16 pairs) then madd (-> s32): every operand range
// below keeps the s16 pair sums far from saturation (largest: 2 * 128 * 127 for q8_0).
#include "quants-avx2.h"

#include <immintrin.h>
#include <string.h>

// ---- helpers ----

// maddubs of u (unsigned bytes) and y, then each 128-bit half's 8 s16 sums times its scale
// (from scale_pair) -> 8 int32.
static inline __m256i dot_scaled_pair(__m256i u, __m256i y, __m256i scale) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), scale);
}

// s16 lanes [sc[j] x8 | sc[j+1] x8] from 16 signed byte scales held in both halves of sc8x2:
// one byte shuffle puts sc[j] in the high byte of each s16, the arithmetic shift sign-extends.
static inline __m256i scale_pair(__m256i sc8x2, int j) {
    const __m256i ctrl =
        _mm256_set_m128i(_mm_set1_epi16((short) (((j + 1) << 8) | 0x80)), _mm_set1_epi16((short) ((j << 8) | 0x80)));
    return _mm256_srai_epi16(_mm256_shuffle_epi8(sc8x2, ctrl), 8);
}

// The 8 scales (low 8 bytes of *sc) and 8 mins (*m) of a q4_K/q5_K block, built in
// registers (a byte array round trip would stall on store forwarding).
static inline void k4_scales_mins(const uint8_t * q, __m128i * sc, __m128i * m) {
    uint32_t s_lo, s_hi, m_lo, m_hi;
    ggml_quants_k4_scale_words(q, &s_lo, &s_hi, &m_lo, &m_hi);
    *sc = _mm_setr_epi32((int) s_lo, (int) s_hi, 0, 0);
    *m = _mm_setr_epi32((int) m_lo, (int) m_hi, 0, 0);
}

// The 16 q3_K scales minus 32 as signed bytes.
static inline __m128i q3_K_scales(const uint8_t * s) {
    uint32_t w[4];
    ggml_quants_q3_K_scale_words(s, w);
    return _mm_sub_epi8(_mm_setr_epi32((int) w[0], (int) w[1], (int) w[2], (int) w[3]), _mm_set1_epi8(32));
}

// ---- float types ----

static void vec_dot_f32_f32(int n, float * s, const void * x, const void * y) {
    const float * a = (const float *) x;
    const float * b = (const float *) y;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 0), _mm256_loadu_ps(b + i + 0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    }
    float sum = hsum_f32_8(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += a[i] * b[i];
    *s = sum;
}

static inline __m256 load_f16_8(const ggml_fp16_t * p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) p)); }

static void vec_dot_f16_f16(int n, float * s, const void * x, const void * y) {
    const ggml_fp16_t * a = (const ggml_fp16_t *) x;
    const ggml_fp16_t * b = (const ggml_fp16_t *) y;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(load_f16_8(a + i + 0), load_f16_8(b + i + 0), acc0);
        acc1 = _mm256_fmadd_ps(load_f16_8(a + i + 8), load_f16_8(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(load_f16_8(a + i + 16), load_f16_8(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(load_f16_8(a + i + 24), load_f16_8(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) {
        acc0 = _mm256_fmadd_ps(load_f16_8(a + i), load_f16_8(b + i), acc0);
    }
    float sum = hsum_f32_8(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += FP16_TO_FP32(a[i]) * FP16_TO_FP32(b[i]);
    *s = sum;
}

static inline __m256 load_bf16_8(const ggml_bf16_t * p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *) p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static void vec_dot_bf16_bf16(int n, float * s, const void * x, const void * y) {
    const ggml_bf16_t * a = (const ggml_bf16_t *) x;
    const ggml_bf16_t * b = (const ggml_bf16_t *) y;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(load_bf16_8(a + i + 0), load_bf16_8(b + i + 0), acc0);
        acc1 = _mm256_fmadd_ps(load_bf16_8(a + i + 8), load_bf16_8(b + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8) {
        acc0 = _mm256_fmadd_ps(load_bf16_8(a + i), load_bf16_8(b + i), acc0);
    }
    float sum = hsum_f32_8(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) sum += ggml_compute_bf16_to_fp32(a[i]) * ggml_compute_bf16_to_fp32(b[i]);
    *s = sum;
}

// F16C rounds to nearest even exactly like the reference conversion.
static void from_float_f16(const float * x, void * y, int64_t k) {
    ggml_fp16_t * h = (ggml_fp16_t *) y;
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
        const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *) (h + i), v);
    }
    for (; i < k; i++) h[i] = GGML_FP32_TO_FP16(x[i]);
}

// Integer round-to-nearest-even on the bit pattern, quiet NaNs: same bits as the reference.
static void from_float_bf16(const float * x, void * y, int64_t k) {
    ggml_bf16_t * h = (ggml_bf16_t *) y;
    int64_t i = 0;
    const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
    const __m256i inf = _mm256_set1_epi32(0x7F800000);
    const __m256i quiet = _mm256_set1_epi32(64 << 16);
    const __m256i round = _mm256_set1_epi32(0x7FFF);
    const __m256i one = _mm256_set1_epi32(1);
    for (; i + 16 <= k; i += 16) {
        __m256i r[2];
        for (int j = 0; j < 2; j++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *) (x + i + 8 * j));
            const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(v, abs_mask), inf);
            const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(v, 16), one);
            const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(v, _mm256_add_epi32(round, lsb)), 16);
            const __m256i nan = _mm256_srli_epi32(_mm256_or_si256(v, quiet), 16);
            r[j] = _mm256_blendv_epi8(rounded, nan, is_nan);
        }
        // packus works per 128-bit lane; the permute restores element order
        const __m256i packed = _mm256_packus_epi32(r[0], r[1]);
        _mm256_storeu_si256((__m256i *) (h + i), _mm256_permute4x64_epi64(packed, 0xD8));
    }
    for (; i < k; i++) h[i] = ggml_compute_fp32_to_bf16(x[i]);
}

// ---- activation quantizers ----

// Max |x| over 32 floats.
static inline float amax_32(const float * x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8)));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 16)));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 24)));
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// roundf(v): truncate, then step away from zero where the dropped fraction is >= 0.5.
static inline __m256i round_away_epi32(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
    const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
    const __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step);
    return _mm256_cvttps_epi32(_mm256_add_ps(t, up));
}

// Packs 4 x 8 int32 (in element order) to 32 int8 in element order.
static inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Quantizes 32 floats with inverse scale id (round half away from zero) into q; returns sum(q).
static inline int quantize_32_away(const float * x, float id, int8_t * q) {
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i i0 = round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 0), vid));
    const __m256i i1 = round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), vid));
    const __m256i i2 = round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), vid));
    const __m256i i3 = round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), vid));
    _mm256_storeu_si256((__m256i *) q, pack_i32_to_i8(i0, i1, i2, i3));
    return hsum_i32_8(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
}

static void quantize_row_q8_0(const float * x, void * vy, int64_t k) {
    block_q8_0 * y = (block_q8_0 *) vy;
    const int64_t nb = k / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float amax = amax_32(x + i * QK8_0);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = GGML_FP32_TO_FP16(d);
        quantize_32_away(x + i * QK8_0, id, y[i].qs);
    }
}

static void quantize_row_q8_1(const float * x, void * vy, int64_t k) {
    block_q8_1 * y = (block_q8_1 *) vy;
    const int64_t nb = k / QK8_1;
    for (int64_t i = 0; i < nb; i++) {
        const float amax = amax_32(x + i * QK8_1);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const int sum = quantize_32_away(x + i * QK8_1, id, y[i].qs);
        y[i].d = d;
        y[i].s = d * (float) sum;
    }
}

// q8_K rounds to nearest even (cvtps under the default MXCSR), as the reference does.
static void quantize_row_q8_K(const float * x, void * vy, int64_t k) {
    block_q8_K * y = (block_q8_K *) vy;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j += 32) amax = GGML_MAX(amax, amax_32(x + j));
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        const float iscale = 127.0f / amax;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127), nlim = _mm256_set1_epi32(-127);
        for (int j = 0; j < QK_K; j += 32) {
            __m256i v[4];
            for (int u = 0; u < 4; u++) {
                v[u] = _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8 * u)));
                v[u] = _mm256_max_epi32(nlim, _mm256_min_epi32(lim, v[u]));
            }
            const __m256i q = pack_i32_to_i8(v[0], v[1], v[2], v[3]);
            _mm256_storeu_si256((__m256i *) (y[i].qs + j), q);
            // per-16 sums: widen to s16, pair-sum, then fold to the two 16-element halves
            const __m256i s16 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
            const __m128i lo = _mm256_castsi256_si128(s16), hi = _mm256_extracti128_si256(s16, 1);
            const __m128i h = _mm_hadd_epi32(lo, hi);   // [s0+s1, s2+s3, s4+s5, s6+s7]
            const __m128i hh = _mm_hadd_epi32(h, h);    // [first 16, second 16, ...]
            y[i].bsums[j / 16 + 0] = (int16_t) _mm_cvtsi128_si32(hh);
            y[i].bsums[j / 16 + 1] = (int16_t) _mm_extract_epi32(hh, 1);
        }
        y[i].d = 1.0f / iscale;
    }
}

// ---- 32-element blocks ----
//
// Each block is an integer dot scaled by its own float. Four blocks go together: their
// dots fold into one vector and their four fp16 scales convert in one instruction.

// Integer dot of one block as 8 int32 lanes, per weight type.
static inline __m256i block_dot_q8_0(const block_q8_0 * a, const int8_t * q8) {
    return dot_i8_32(_mm256_loadu_si256((const __m256i *) a->qs), _mm256_loadu_si256((const __m256i *) q8));
}
static inline __m256i block_dot_q4_0(const block_q4_0 * a, const int8_t * q8) {
    const __m256i qa = _mm256_sub_epi8(unpack_nibbles_32(a->qs), _mm256_set1_epi8(8));
    return dot_i8_32(qa, _mm256_loadu_si256((const __m256i *) q8));
}
static inline __m256i block_dot_q4_1(const block_q4_1 * a, const int8_t * q8) {
    return dot_u8_i8_32(unpack_nibbles_32(a->qs), _mm256_loadu_si256((const __m256i *) q8));
}
static inline __m256i block_dot_q5_0(const block_q5_0 * a, const int8_t * q8) {
    // (nibble | bit4) - 16 == nibble | 0xF0 when bit 4 is clear, the nibble itself when set
    const __m256i hi = _mm256_andnot_si256(bits_to_bytes_32(a->qh), _mm256_set1_epi8((char) 0xF0));
    const __m256i qa = _mm256_or_si256(unpack_nibbles_32(a->qs), hi);
    return dot_i8_32(qa, _mm256_loadu_si256((const __m256i *) q8));
}
static inline __m256i block_dot_q5_1(const block_q5_1 * a, const int8_t * q8) {
    const __m256i hi = _mm256_and_si256(bits_to_bytes_32(a->qh), _mm256_set1_epi8(0x10));
    const __m256i qa = _mm256_or_si256(unpack_nibbles_32(a->qs), hi);
    return dot_u8_i8_32(qa, _mm256_loadu_si256((const __m256i *) q8));
}

VEC_DOT_SYM(vec_dot_q8_0_q8_0, block_q8_0, block_dot_q8_0)
VEC_DOT_SYM(vec_dot_q4_0_q8_0, block_q4_0, block_dot_q4_0)
VEC_DOT_SYM(vec_dot_q5_0_q8_0, block_q5_0, block_dot_q5_0)
VEC_DOT_MIN(vec_dot_q4_1_q8_1, block_q4_1, block_dot_q4_1)
VEC_DOT_MIN(vec_dot_q5_1_q8_1, block_q5_1, block_dot_q5_1)

// ---- K-quants ----

// q2_K (Q3 false) and q3_K (Q3 true) against NC columns of q8_K (y + k*by, results at
// s + k*bs): each 32-element group of levels is decoded once for the NC columns, and every
// column sees the instructions of the 1-column kernel in the same order (NC = 4 gives the bits
// of 4 calls with NC = 1).
static inline __attribute__((always_inline)) void dot_k23_cols(int n, float * s, size_t bs, const void * x, const void * y,
                                                               size_t by, const int NC, const bool Q3) {
    const block_q2_K * a2 = (const block_q2_K *) x;
    const block_q3_K * a3 = (const block_q3_K *) x;
    const int nb = n / QK_K;
    const __m256i m3 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1);
    __m256 acc[4];
#pragma GCC unroll 4
    for (int k = 0; k < NC; k++) acc[k] = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        // q2_K: 4-bit scales and mins; q3_K: 6-bit scales, levels stored as q + 4*hbit - 4 (the
        // unsigned q + 4*hbit is dotted, 4*scale*sum(y) subtracted after)
        __m256i sc2, mins = _mm256_setzero_si256(), sc16 = _mm256_setzero_si256(), hm = _mm256_setzero_si256();
        if (Q3) {
            const __m128i sc8 = q3_K_scales(a3[i].scales);
            sc2 = _mm256_broadcastsi128_si256(sc8);
            sc16 = _mm256_cvtepi8_epi16(sc8);
            hm = _mm256_loadu_si256((const __m256i *) a3[i].hmask);
        } else {
            const __m128i sc8 = _mm_loadu_si128((const __m128i *) a2[i].scales);
            mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0x0F)));
            sc2 = _mm256_broadcastsi128_si256(_mm_and_si128(sc8, _mm_set1_epi8(0x0F)));
        }
        const uint8_t * qs = Q3 ? a3[i].qs : a2[i].qs;
        const block_q8_K * bk[4];
        __m256i sumi[4];
#pragma GCC unroll 4
        for (int k = 0; k < NC; k++) {
            bk[k] = (const block_q8_K *) ((const char *) y + (size_t) k * by) + i;
            sumi[k] = _mm256_setzero_si256();
        }
#pragma GCC unroll 2
        for (int c = 0; c < QK_K / 128; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *) (qs + 32 * c));
#pragma GCC unroll 4
            for (int sh = 0; sh < 4; sh++) {
                __m256i v = _mm256_and_si256(_mm256_srli_epi16(q, 2 * sh), m3);
                if (Q3) {
                    const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * c + sh), m1);
                    v = _mm256_or_si256(v, _mm256_slli_epi16(hb, 2));
                }
                const __m256i sc = scale_pair(sc2, 8 * c + 2 * sh);
#pragma GCC unroll 4
                for (int k = 0; k < NC; k++) {
                    const __m256i y8 = _mm256_loadu_si256((const __m256i *) (bk[k]->qs + 128 * c + 32 * sh));
                    sumi[k] = _mm256_add_epi32(sumi[k], dot_scaled_pair(v, y8, sc));
                }
            }
        }
#pragma GCC unroll 4
        for (int k = 0; k < NC; k++) {
            const __m256i bsums = _mm256_loadu_si256((const __m256i *) bk[k]->bsums);
            if (Q3) {
                const float d = bk[k]->d * FP16_TO_FP32(a3[i].d);
                const __m256i offs = _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc16), 2);
                acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[k], offs)), acc[k]);
            } else {
                const float dall = bk[k]->d * FP16_TO_FP32(a2[i].d);
                const float dmin = bk[k]->d * FP16_TO_FP32(a2[i].dmin);
                const __m256i summs = _mm256_madd_epi16(bsums, mins);
                acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(dall), _mm256_cvtepi32_ps(sumi[k]), acc[k]);
                acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(-dmin), _mm256_cvtepi32_ps(summs), acc[k]);
            }
        }
    }
#pragma GCC unroll 4
    for (int k = 0; k < NC; k++) *(float *) ((char *) s + (size_t) k * bs) = hsum_f32_8(acc[k]);
}

static inline __attribute__((always_inline)) void dot_q2_K_cols(int n, float * s, size_t bs, const void * x, const void * y,
                                                                size_t by, const int NC) {
    dot_k23_cols(n, s, bs, x, y, by, NC, false);
}
static inline __attribute__((always_inline)) void dot_q3_K_cols(int n, float * s, size_t bs, const void * x, const void * y,
                                                                size_t by, const int NC) {
    dot_k23_cols(n, s, bs, x, y, by, NC, true);
}

GGML_VEC_DOT_COLS(q2_K, q8_K)
GGML_VEC_DOT_COLS(q3_K, q8_K)

// s16 lanes all equal to byte j of sc8 (zero-extended), with one byte shuffle.
static inline __m256i scale_bcast_u8(__m256i sc8x2, int j) {
    return _mm256_shuffle_epi8(sc8x2, _mm256_set1_epi16((short) (0x8000 | j)));
}

// q4_K / q5_K against q8_1: per 32-element sub-block the integer dot times its 6-bit scale,
// to float with the q8_1 block's scale; the mins come in with the blocks' s.
static inline __attribute__((always_inline)) float vec_dot_k4_q8_1(int n, const void * x, const void * y, const bool q5) {
    const block_q8_1 * b = (const block_q8_1 *) y;
    const size_t bs = q5 ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const int nb = n / QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const uint8_t * blk = (const uint8_t *) x + (size_t) i * bs;
        const block_q4_K * a4 = (const block_q4_K *) blk;
        const block_q5_K * a5 = (const block_q5_K *) blk;
        const uint8_t * qs = q5 ? a5->qs : a4->qs;
        const block_q8_1 * bi = b + (size_t) i * 8;
        __m128i sc, m;
        k4_scales_mins(q5 ? a5->scales : a4->scales, &sc, &m);
        const __m256i sc2 = _mm256_broadcastsi128_si256(sc);
        // the 8 mins times the 8 blocks' s (kept in registers: a byte array would stall on
        // store forwarding)
        const __m256 sv = _mm256_setr_ps(bi[0].s, bi[1].s, bi[2].s, bi[3].s, bi[4].s, bi[5].s, bi[6].s, bi[7].s);
        const __m256 ms = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m)), sv);
        const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *) a5->qh) : _mm256_setzero_si256();
        __m256 fs0 = _mm256_setzero_ps(), fs1 = _mm256_setzero_ps(); // two chains of FMAs
        for (int j = 0; j < QK_K / 64; j++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *) (qs + 32 * j));
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (q5) {
                // bit 2j of qh[l] is bit 4 of element 64j+l, bit 2j+1 of element 64j+32+l
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j), 4), b4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j + 1), 4), b4));
            }
            const block_q8_1 *y0 = bi + 2 * j, *y1 = bi + 2 * j + 1;
            const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *) y0->qs)),
                                                 scale_bcast_u8(sc2, 2 * j));
            const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *) y1->qs)),
                                                 scale_bcast_u8(sc2, 2 * j + 1));
            fs0 = _mm256_fmadd_ps(_mm256_set1_ps(y0->d), _mm256_cvtepi32_ps(p0), fs0);
            fs1 = _mm256_fmadd_ps(_mm256_set1_ps(y1->d), _mm256_cvtepi32_ps(p1), fs1);
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(FP16_TO_FP32(q5 ? a5->d : a4->d)), _mm256_add_ps(fs0, fs1), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(FP16_TO_FP32(q5 ? a5->dmin : a4->dmin)), ms, accm);
    }
    return hsum_f32_8(_mm256_sub_ps(acc, accm));
}

static void vec_dot_q4_K_q8_1(int n, float * s, const void * x, const void * y) { *s = vec_dot_k4_q8_1(n, x, y, false); }

static void vec_dot_q5_K_q8_1(int n, float * s, const void * x, const void * y) { *s = vec_dot_k4_q8_1(n, x, y, true); }

// q6_K against q8_1: levels q - 32 as signed bytes (the sign trick of dot_i8_32), each
// 16-element half scaled by its int8 scale, then the 32 values' q8_1 scale as a float.
static void vec_dot_q6_K_q8_1(int n, float * s, const void * x, const void * y) {
    const block_q6_K * a = (const block_q6_K *) x;
    const block_q8_1 * b = (const block_q8_1 *) y;
    const int nb = n / QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03), o32 = _mm256_set1_epi8(32);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m256i sc2 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) a[i].scales));
        __m256 fs[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() }; // two chains of FMAs
        for (int c = 0; c < QK_K / 128; c++) {
            const __m256i ql0 = _mm256_loadu_si256((const __m256i *) (a[i].ql + 64 * c));
            const __m256i ql1 = _mm256_loadu_si256((const __m256i *) (a[i].ql + 64 * c + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *) (a[i].qh + 32 * c));
            const __m256i v[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4)),
                _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4)),
            };
            for (int k = 0; k < 4; k++) {
                const block_q8_1 * bk = b + (size_t) i * 8 + 4 * c + k;
                const __m256i w = _mm256_sub_epi8(v[k], o32);
                const __m256i y8 = _mm256_loadu_si256((const __m256i *) bk->qs);
                const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(y8, w)),
                                                    scale_pair(sc2, 8 * c + 2 * k));
                fs[k % 2] = _mm256_fmadd_ps(_mm256_set1_ps(bk->d), _mm256_cvtepi32_ps(p), fs[k % 2]);
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(FP16_TO_FP32(a[i].d)), _mm256_add_ps(fs[0], fs[1]), acc);
    }
    *s = hsum_f32_8(acc);
}

void ggml_cpu_quants_init_avx2(struct ggml_type_traits_cpu * t) {
    ggml_cpu_quants_init_iq_avx2(t);
    t[GGML_TYPE_F32].vec_dot = vec_dot_f32_f32;
    t[GGML_TYPE_F16].vec_dot = vec_dot_f16_f16;
    t[GGML_TYPE_F16].from_float = from_float_f16;
    t[GGML_TYPE_BF16].vec_dot = vec_dot_bf16_bf16;
    t[GGML_TYPE_BF16].from_float = from_float_bf16;

    t[GGML_TYPE_Q4_0].vec_dot = vec_dot_q4_0_q8_0;
    t[GGML_TYPE_Q4_1].vec_dot = vec_dot_q4_1_q8_1;
    t[GGML_TYPE_Q5_0].vec_dot = vec_dot_q5_0_q8_0;
    t[GGML_TYPE_Q5_1].vec_dot = vec_dot_q5_1_q8_1;
    t[GGML_TYPE_Q8_0].vec_dot = vec_dot_q8_0_q8_0;
    t[GGML_TYPE_Q2_K].vec_dot = vec_dot_q2_K_q8_K;
    t[GGML_TYPE_Q3_K].vec_dot = vec_dot_q3_K_q8_K;
    t[GGML_TYPE_Q2_K].vec_dot_x4 = vec_dot_x4_q2_K_q8_K;
    t[GGML_TYPE_Q3_K].vec_dot_x4 = vec_dot_x4_q3_K_q8_K;
    t[GGML_TYPE_Q4_K].vec_dot = vec_dot_q4_K_q8_1;
    t[GGML_TYPE_Q5_K].vec_dot = vec_dot_q5_K_q8_1;
    t[GGML_TYPE_Q6_K].vec_dot = vec_dot_q6_K_q8_1;

    t[GGML_TYPE_Q8_0].from_float = quantize_row_q8_0;
    t[GGML_TYPE_Q8_1].from_float = quantize_row_q8_1;
    t[GGML_TYPE_Q8_K].from_float = quantize_row_q8_K;
}
