// quants-avx2.h — the 256-bit helpers the AVX2 dot-product files share (quants-avx2.c,
// quants-iq-avx2.c); include only from files compiled with the AVX2 flags.
#ifndef GGML_CPU_QUANTS_AVX2_H
#define GGML_CPU_QUANTS_AVX2_H

#include "quants.h"

#include <immintrin.h>
#include <string.h>

// 0xFF in byte j where bit j of w is set.
static inline __m256i bits_to_bytes_32_w(uint32_t w) {
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                           0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)w), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

// 0xFF in byte j where bit j of the 32-bit little-endian word at p is set.
static inline __m256i bits_to_bytes_32(const uint8_t * p) {
    uint32_t w;
    memcpy(&w, p, sizeof(w));
    return bits_to_bytes_32_w(w);
}

// One half to float in hardware (the portable conversion branches on the exponent).
#define FP16_TO_FP32(x) _cvtsh_ss(x)

// Horizontal sum of 8 floats.
static inline float hsum_f32_8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// Horizontal sum of 8 int32.
static inline int hsum_i32_8(__m256i x) {
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
    r = _mm_add_epi32(r, _mm_unpackhi_epi64(r, r));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 1));
    return _mm_cvtsi128_si32(r);
}

// 32 nibbles of 16 bytes as bytes 0..15: low nibbles in the low lane, high in the high lane.
static inline __m256i unpack_nibbles_32(const uint8_t * p) {
    const __m128i tmp = _mm_loadu_si128((const __m128i *)p);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Sum of x[i]*y[i] over 32 signed bytes as 8 int32 lanes.
static inline __m256i dot_i8_32(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

// Sum of u[i]*y[i] over 32 unsigned (<128) x signed bytes as 8 int32 lanes.
static inline __m256i dot_u8_i8_32(__m256i u, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
}

// Four halves (as raw bits) to four floats with one conversion.
static inline __m128 fp16x4_to_f32(ggml_fp16_t h0, ggml_fp16_t h1, ggml_fp16_t h2, ggml_fp16_t h3) {
    const uint64_t v = (uint64_t)h0 | ((uint64_t)h1 << 16) | ((uint64_t)h2 << 32) | ((uint64_t)h3 << 48);
    return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)v));
}

// Folds four blocks' 8-lane integer dots into [b0, b1, b2, b3 | b0, b1, b2, b3] partial sums
// (low lane: elements of lanes 0-3, high lane: 4-7), so one FMA applies four block scales.
static inline __m256 fold4_i32(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
    return _mm256_cvtepi32_ps(h);
}

// Symmetric types against q8_0: sum_i d_a d_b dot_i, four blocks per step.
#define VEC_DOT_SYM(name, block_t, block_dot)                                                  \
static void name(int n, float * s, const void * x, const void * y) {                           \
    const block_t * a = (const block_t *)x;                                                    \
    const block_q8_0 * b = (const block_q8_0 *)y;                                              \
    const int nb = n / QK8_0;                                                                  \
    __m256 acc = _mm256_setzero_ps();                                                          \
    int i = 0;                                                                                 \
    for (; i + 4 <= nb; i += 4) {                                                              \
        const __m256 sums = fold4_i32(block_dot(&a[i], b[i].qs), block_dot(&a[i + 1], b[i + 1].qs), \
                                      block_dot(&a[i + 2], b[i + 2].qs), block_dot(&a[i + 3], b[i + 3].qs)); \
        const __m128 da = fp16x4_to_f32(a[i].d, a[i + 1].d, a[i + 2].d, a[i + 3].d);           \
        const __m128 db = fp16x4_to_f32(b[i].d, b[i + 1].d, b[i + 2].d, b[i + 3].d);           \
        const __m128 dd = _mm_mul_ps(da, db);                                                  \
        acc = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), sums, acc);                             \
    }                                                                                          \
    for (; i < nb; i++) {                                                                      \
        const __m256 d0 = _mm256_set1_ps(FP16_TO_FP32(a[i].d) * FP16_TO_FP32(b[i].d));         \
        acc = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(block_dot(&a[i], b[i].qs)), acc);         \
    }                                                                                          \
    *s = hsum_f32_8(acc);                                                                      \
}

#endif // GGML_CPU_QUANTS_AVX2_H
