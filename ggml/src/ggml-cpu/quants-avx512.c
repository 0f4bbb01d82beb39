// quants-avx512.c — AVX-512 (F/BW/VL/DQ + VNNI, BF16 where present) dot products.
// cpu-traits.c installs the AVX2 table first, so entries not set here keep their AVX2
// kernels (q8_K's activation quantizer among them).
//
// VNNI's vpdpbusd multiplies unsigned by signed bytes and sums each 4 into an int32 lane in
// one instruction (AVX2 needs maddubs + madd); the integer dots below are built around it.
#include "quants-x86.h"

#include <immintrin.h>
#include <string.h>

// ---- helpers ----

static inline float hsum_f32_16(__m512 x) {
    return hsum_f32_8(_mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1)));
}

// 0x10 in byte j where bit j of the little-endian 32-bit word at p is set (bit 4 of a q5 level).
static inline __m256i q5_high_bits(const uint8_t * p) {
    uint32_t w;
    memcpy(&w, p, sizeof(w));
    return _mm256_maskz_mov_epi8(_cvtu32_mask32(w), _mm256_set1_epi8(0x10));
}

// sum(u * y) for unsigned u < 128 and signed y, as 8 int32 lanes.
static inline __m256i dot_u8_i8(__m256i u, __m256i y) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y); }

// sum((u - off) * y): the offset's share is one more VNNI dot of off against y.
static inline __m256i dot_u8_off_i8(__m256i u, __m256i y, char off) {
    return _mm256_sub_epi32(dot_u8_i8(u, y), dot_u8_i8(_mm256_set1_epi8(off), y));
}

// ---- float types ----

// bf16 pairs with vdpbf16ps: each lane accumulates two products per instruction.
static void vec_dot_bf16_bf16_dp(int n, float * s, const void * x, const void * y) {
    const ggml_bf16_t * a = (const ggml_bf16_t *) x;
    const ggml_bf16_t * b = (const ggml_bf16_t *) y;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_dpbf16_ps(acc0, (__m512bh) _mm512_loadu_si512(a + i), (__m512bh) _mm512_loadu_si512(b + i));
        acc1 = _mm512_dpbf16_ps(acc1, (__m512bh) _mm512_loadu_si512(a + i + 32), (__m512bh) _mm512_loadu_si512(b + i + 32));
    }
    for (; i < n; i += 32) {
        const int r = n - i;
        const __mmask32 m = r >= 32 ? 0xFFFFFFFFu : (__mmask32) ((1u << r) - 1);
        acc0 =
            _mm512_dpbf16_ps(acc0, (__m512bh) _mm512_maskz_loadu_epi16(m, a + i), (__m512bh) _mm512_maskz_loadu_epi16(m, b + i));
    }
    *s = hsum_f32_16(_mm512_add_ps(acc0, acc1));
}

// ---- 32-element blocks (four per step, VNNI integer dots) ----

static inline __m256i block_dot_q8_0(const block_q8_0 * a, const int8_t * q8) {
    const __m256i x = _mm256_loadu_si256((const __m256i *) a->qs);
    const __m256i y = _mm256_loadu_si256((const __m256i *) q8);
    // |x| . (y with x's sign) keeps the first operand unsigned
    return dot_u8_i8(_mm256_abs_epi8(x), _mm256_sign_epi8(y, x));
}
static inline __m256i block_dot_q4_0(const block_q4_0 * a, const int8_t * q8) {
    return dot_u8_off_i8(unpack_nibbles_32(a->qs), _mm256_loadu_si256((const __m256i *) q8), 8);
}
static inline __m256i block_dot_q4_1(const block_q4_1 * a, const int8_t * q8) {
    return dot_u8_i8(unpack_nibbles_32(a->qs), _mm256_loadu_si256((const __m256i *) q8));
}
static inline __m256i block_dot_q5_0(const block_q5_0 * a, const int8_t * q8) {
    const __m256i u = _mm256_or_si256(unpack_nibbles_32(a->qs), q5_high_bits(a->qh));
    return dot_u8_off_i8(u, _mm256_loadu_si256((const __m256i *) q8), 16);
}
static inline __m256i block_dot_q5_1(const block_q5_1 * a, const int8_t * q8) {
    const __m256i u = _mm256_or_si256(unpack_nibbles_32(a->qs), q5_high_bits(a->qh));
    return dot_u8_i8(u, _mm256_loadu_si256((const __m256i *) q8));
}

VEC_DOT_SYM(vec_dot_q8_0_q8_0, block_q8_0, block_dot_q8_0)
VEC_DOT_SYM(vec_dot_q4_0_q8_0, block_q4_0, block_dot_q4_0)
VEC_DOT_SYM(vec_dot_q5_0_q8_0, block_q5_0, block_dot_q5_0)
VEC_DOT_MIN(vec_dot_q4_1_q8_1, block_q4_1, block_dot_q4_1)
VEC_DOT_MIN(vec_dot_q5_1_q8_1, block_q5_1, block_dot_q5_1)

// ---- K-quants with 16-level sub-blocks: 64 levels per 512-bit step ----
//
// maddubs (u8 x s8 -> s16 pairs) then vpdpwssd multiplies those pairs by the sub-block scales
// and accumulates into int32 in one instruction. A 512-bit step covers four 16-level
// sub-blocks; vpermw spreads the matching scales over its lanes.

// The 32 bytes at p in both 256-bit halves.
static inline __m512i bcast256(const void * p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) p)); }

// int16 lanes [s[first] x8, s[first+1] x8, s[first+2] x8, s[first+3] x8] of the 16 int16 in s16.
static inline __m512i scales_by16(__m512i s16, int first) {
    const __m512i idx =
        _mm512_add_epi16(_mm512_set_epi64(0x0003000300030003LL, 0x0003000300030003LL, 0x0002000200020002LL, 0x0002000200020002LL,
                                          0x0001000100010001LL, 0x0001000100010001LL, 0x0000000000000000LL, 0x0000000000000000LL),
                         _mm512_set1_epi16((short) first));
    return _mm512_permutexvar_epi16(idx, s16);
}

// The 16 q3_K scales minus 32 as signed bytes.
static inline __m128i q3_K_scales(const uint8_t * s) {
    uint32_t w[4];
    ggml_quants_q3_K_scale_words(s, w);
    return _mm_sub_epi8(_mm_setr_epi32((int) w[0], (int) w[1], (int) w[2], (int) w[3]), _mm_set1_epi8(32));
}

// q2_K (Q3 false) and q3_K (Q3 true) against NC columns of q8_K (y + k*by, results at
// s + k*bs): the levels of each 128-element step are decoded once for the NC columns, and every
// column sees the instructions of the 1-column kernel in the same order (NC = 4 gives the bits
// of 4 calls with NC = 1).
static inline __attribute__((always_inline)) void dot_k23_cols(int n, float * s, size_t bs, const void * x, const void * y,
                                                               size_t by, const int NC, const bool Q3) {
    const block_q2_K * a2 = (const block_q2_K *) x;
    const block_q3_K * a3 = (const block_q3_K *) x;
    const int nb = n / QK_K;
    const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    const __m512i sh01 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i sh23 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    __m512 acc[4];
    __m256 accm[4]; // q2_K: the mins' term
#pragma GCC unroll 4
    for (int k = 0; k < NC; k++) {
        acc[k] = _mm512_setzero_ps();
        accm[k] = _mm256_setzero_ps();
    }
    for (int i = 0; i < nb; i++) {
        // q2_K: 4-bit scales and mins; q3_K: 6-bit scales, levels stored as q + 4*hbit - 4 (the
        // unsigned q + 4*hbit is dotted, 4*scale*sum(y) subtracted: sumi starts at -offs)
        __m256i sc16_256, mins = _mm256_setzero_si256();
        __m512i hm = _mm512_setzero_si512();
        if (Q3) {
            sc16_256 = _mm256_cvtepi8_epi16(q3_K_scales(a3[i].scales));
            hm = bcast256(a3[i].hmask);
        } else {
            const __m128i sc8 = _mm_loadu_si128((const __m128i *) a2[i].scales);
            mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0x0F)));
            sc16_256 = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, _mm_set1_epi8(0x0F)));
        }
        const __m512i sc16 = _mm512_castsi256_si512(sc16_256);
        const uint8_t * qs = Q3 ? a3[i].qs : a2[i].qs;
        const block_q8_K * bk[4];
        __m512i sumi[4];
#pragma GCC unroll 4
        for (int k = 0; k < NC; k++) {
            bk[k] = (const block_q8_K *) ((const char *) y + (size_t) k * by) + i;
            if (Q3) {
                const __m256i bsums = _mm256_loadu_si256((const __m256i *) bk[k]->bsums);
                const __m256i offs = _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc16_256), 2);
                sumi[k] = _mm512_castsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), offs));
                sumi[k] = _mm512_inserti64x4(sumi[k], _mm256_setzero_si256(), 1);
            } else {
                sumi[k] = _mm512_setzero_si512();
            }
        }
#pragma GCC unroll 2
        for (int c = 0; c < QK_K / 128; c++) {
            const __m512i q = bcast256(qs + 32 * c);
            __m512i v01 = _mm512_and_si512(_mm512_srlv_epi16(q, sh01), m3);
            __m512i v23 = _mm512_and_si512(_mm512_srlv_epi16(q, sh23), m3);
            if (Q3) {
                // hmask bit 4c+sh belongs to the levels taken with shift 2*sh
                const __m512i bit01 =
                    _mm512_inserti64x4(_mm512_set1_epi8((char) (1 << (4 * c))), _mm256_set1_epi8((char) (1 << (4 * c + 1))), 1);
                const __m512i bit23 = _mm512_inserti64x4(_mm512_set1_epi8((char) (1 << (4 * c + 2))),
                                                         _mm256_set1_epi8((char) (1 << (4 * c + 3))), 1);
                v01 = _mm512_mask_add_epi8(v01, _mm512_test_epi8_mask(hm, bit01), v01, four);
                v23 = _mm512_mask_add_epi8(v23, _mm512_test_epi8_mask(hm, bit23), v23, four);
            }
            const __m512i s01 = scales_by16(sc16, 8 * c), s23 = scales_by16(sc16, 8 * c + 4);
#pragma GCC unroll 4
            for (int k = 0; k < NC; k++) {
                const __m512i y01 = _mm512_loadu_si512(bk[k]->qs + 128 * c);
                const __m512i y23 = _mm512_loadu_si512(bk[k]->qs + 128 * c + 64);
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(v01, y01), s01);
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(v23, y23), s23);
            }
        }
#pragma GCC unroll 4
        for (int k = 0; k < NC; k++) {
            if (Q3) {
                const float d = bk[k]->d * FP16_TO_FP32(a3[i].d);
                acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi[k]), acc[k]);
            } else {
                const __m256i summs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *) bk[k]->bsums), mins);
                const float dall = bk[k]->d * FP16_TO_FP32(a2[i].d);
                const float dmin = bk[k]->d * FP16_TO_FP32(a2[i].dmin);
                acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(dall), _mm512_cvtepi32_ps(sumi[k]), acc[k]);
                accm[k] = _mm256_fmadd_ps(_mm256_set1_ps(-dmin), _mm256_cvtepi32_ps(summs), accm[k]);
            }
        }
    }
#pragma GCC unroll 4
    for (int k = 0; k < NC; k++) {
        *(float *) ((char *) s + (size_t) k * bs) =
            Q3 ? _mm512_reduce_add_ps(acc[k]) : _mm512_reduce_add_ps(acc[k]) + hsum_f32_8(accm[k]);
    }
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

// ---- activation quantizers (byte-identical to the portable ones) ----

// roundf(v): truncate, then step away from zero where the dropped fraction is >= 0.5.
static inline __m512i round_away_16(__m512 v) {
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 step = _mm512_or_ps(_mm512_and_ps(v, _mm512_set1_ps(-0.0f)), _mm512_set1_ps(1.0f));
    return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, step));
}

// One 32-element block: q = round_away(x / d) with d = amax / 127; returns d, sets *sum = sum(q).
static inline float quantize_block_32(const float * x, int8_t * q, int * sum) {
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i i0 = round_away_16(_mm512_mul_ps(x0, vid)), i1 = round_away_16(_mm512_mul_ps(x1, vid));
    _mm_storeu_si128((__m128i *) q, _mm512_cvtsepi32_epi8(i0));
    _mm_storeu_si128((__m128i *) (q + 16), _mm512_cvtsepi32_epi8(i1));
    *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
    return d;
}

static void quantize_row_q8_0_avx512(const float * x, void * vy, int64_t k) {
    block_q8_0 * y = (block_q8_0 *) vy;
    for (int64_t i = 0; i < k / QK8_0; i++) {
        int sum;
        y[i].d = GGML_FP32_TO_FP16(quantize_block_32(x + i * QK8_0, y[i].qs, &sum));
    }
}

static void quantize_row_q8_1_avx512(const float * x, void * vy, int64_t k) {
    block_q8_1 * y = (block_q8_1 *) vy;
    for (int64_t i = 0; i < k / QK8_1; i++) {
        int sum;
        const float d = quantize_block_32(x + i * QK8_1, y[i].qs, &sum);
        y[i].d = d;
        y[i].s = d * (float) sum;
    }
}

// ---- IQ4_NL, IQ4_XS, MXFP4: table levels by byte shuffle, VNNI dots (signed levels: |l| . (y with
// l's sign), as q8_0) ----

static inline __m256i level_dot32(__m256i lv, const int8_t * q8) {
    return dot_u8_i8(_mm256_abs_epi8(lv), _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *) q8), lv));
}

#include "quants-iq-lut.h"

void ggml_cpu_quants_init_avx512(struct ggml_type_traits_cpu * t) {
    // f32, f16, q4_K and q5_K stay on the AVX2 kernels: 512-bit versions measured 3-25%
    // slower on this machine's double-pumped AVX-512 (Zen 4; scripts/bench_vec_dot.py).
    if (__builtin_cpu_supports("avx512bf16")) {
        t[GGML_TYPE_BF16].vec_dot = vec_dot_bf16_bf16_dp;
    }
    t[GGML_TYPE_Q8_0].vec_dot = vec_dot_q8_0_q8_0;
    t[GGML_TYPE_Q8_0].from_float = quantize_row_q8_0_avx512;
    t[GGML_TYPE_Q8_1].from_float = quantize_row_q8_1_avx512;
    t[GGML_TYPE_Q4_0].vec_dot = vec_dot_q4_0_q8_0;
    t[GGML_TYPE_Q4_1].vec_dot = vec_dot_q4_1_q8_1;
    t[GGML_TYPE_Q5_0].vec_dot = vec_dot_q5_0_q8_0;
    t[GGML_TYPE_Q5_1].vec_dot = vec_dot_q5_1_q8_1;
    t[GGML_TYPE_Q2_K].vec_dot = vec_dot_q2_K_q8_K;
    t[GGML_TYPE_Q3_K].vec_dot = vec_dot_q3_K_q8_K;
    t[GGML_TYPE_Q2_K].vec_dot_x4 = vec_dot_x4_q2_K_q8_K;
    t[GGML_TYPE_Q3_K].vec_dot_x4 = vec_dot_x4_q3_K_q8_K;
    iq_lut_install(t);
}
