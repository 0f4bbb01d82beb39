// quants-avx2.h — the 256-bit helpers the AVX2 dot-product files share (quants-avx2.c,
// quants-iq-avx2.c); include only from files compiled with the AVX2 flags.
#ifndef GGML_CPU_QUANTS_AVX2_H
#define GGML_CPU_QUANTS_AVX2_H

#include "quants-x86.h"

#include <immintrin.h>
#include <string.h>

// 0xFF in byte j where bit j of w is set.
static inline __m256i bits_to_bytes_32_w(uint32_t w) {
    const __m256i shuf =
        _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int) w), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long) 0x8040201008040201ULL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

// 0xFF in byte j where bit j of the 32-bit little-endian word at p is set.
static inline __m256i bits_to_bytes_32(const uint8_t * p) {
    uint32_t w;
    memcpy(&w, p, sizeof(w));
    return bits_to_bytes_32_w(w);
}

// Horizontal sum of 8 int32.
static inline int hsum_i32_8(__m256i x) {
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
    r = _mm_add_epi32(r, _mm_unpackhi_epi64(r, r));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 1));
    return _mm_cvtsi128_si32(r);
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

// 8x8 transpose of dwords: r[c] = 8 dwords of column c -> r[g] = dword g of the 8 columns.
static inline void transpose_8x8(__m256i r[8]) {
    __m256i a[8], b[8];
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        b[4 * i + 0] = _mm256_unpacklo_epi64(a[4 * i + 0], a[4 * i + 2]);
        b[4 * i + 1] = _mm256_unpackhi_epi64(a[4 * i + 0], a[4 * i + 2]);
        b[4 * i + 2] = _mm256_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm256_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x20);
        r[i + 4] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x31);
    }
}

#endif // GGML_CPU_QUANTS_AVX2_H
