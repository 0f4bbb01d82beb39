// gemm-float-avx512.c — the float-weight dot tiles (matmul-float.h) with AVX-512: the same
// chains as the AVX2 tiles, two weight rows to a 16-lane register. Lanes 0-7 carry row r's
// 8-lane accumulator and lanes 8-15 row r+1's; the activation's 8 floats are broadcast to both
// halves, so every lane sees exactly the fma sequence of the AVX2 tile and the two halves are
// lane-summed in matmul-float.h's order: the bits do not change, the fma count halves. A
// converted weight pair (an insert and a conversion, both on the shuffle / fma ports) serves 8
// columns rather than 3, which is what makes the wider registers pay: 2 x 8 accumulators, 8
// activations and a weight pair take 26 of the 32 registers.
#include "matmul-float.h"

#include <immintrin.h>

// Rows r and r+1's 8 weights at k as 16 floats (r+1 in the high half).
static inline __m512 pair_f32(const char * p, size_t lda, int64_t k) {
    const __m256 lo = _mm256_loadu_ps((const float *) p + k);
    const __m256 hi = _mm256_loadu_ps((const float *) (p + lda) + k);
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}
static inline __m512 pair_f16(const char * p, size_t lda, int64_t k) {
    const __m128i lo = _mm_loadu_si128((const __m128i *) ((const uint16_t *) p + k));
    const __m128i hi = _mm_loadu_si128((const __m128i *) ((const uint16_t *) (p + lda) + k));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}
static inline __m512 pair_bf16(const char * p, size_t lda, int64_t k) {
    const __m128i lo = _mm_loadu_si128((const __m128i *) ((const uint16_t *) p + k));
    const __m128i hi = _mm_loadu_si128((const __m128i *) ((const uint16_t *) (p + lda) + k));
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// The lane sum of matmul-float.h on one 8-lane half.
static inline float hsum8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// R rows (R = 1: the high half's weights are row 0's again and its sums are dropped) by C
// columns; R and C are constants at every call site, so acc stays in registers.
#define MM_FLOAT_BODY512(NAME, PAIR)                                                                                       \
    static inline __attribute__((always_inline)) void NAME(int64_t K, const char * a, size_t lda, const float * const * b, \
                                                           float * const * out, const int R, const int C) {                \
        enum {                                                                                                             \
            P = (GGML_MM_FLOAT_MR + 1) / 2                                                                                 \
        };                                                                                                                 \
        const int np = (R + 1) / 2;                                                                                        \
        __m512 acc[P][GGML_MM_FLOAT_NR];                                                                                   \
        for (int p = 0; p < np; p++)                                                                                       \
            for (int c = 0; c < C; c++) acc[p][c] = _mm512_setzero_ps();                                                   \
        for (int64_t k = 0; k < K; k += 8) {                                                                               \
            __m512 bv[GGML_MM_FLOAT_NR];                                                                                   \
            for (int c = 0; c < C; c++) bv[c] = _mm512_broadcast_f32x8(_mm256_loadu_ps(b[c] + k));                         \
            for (int p = 0; p < np; p++) {                                                                                 \
                const size_t step = 2 * p + 1 < R ? lda : 0;                                                               \
                const __m512 w = PAIR(a + (size_t) (2 * p) * lda, step, k);                                                \
                for (int c = 0; c < C; c++) acc[p][c] = _mm512_fmadd_ps(w, bv[c], acc[p][c]);                              \
            }                                                                                                              \
        }                                                                                                                  \
        for (int p = 0; p < np; p++) {                                                                                     \
            for (int c = 0; c < C; c++) {                                                                                  \
                out[c][2 * p] = hsum8(_mm512_castps512_ps256(acc[p][c]));                                                  \
                if (2 * p + 1 < R) out[c][2 * p + 1] = hsum8(_mm512_extractf32x8_ps(acc[p][c], 1));                        \
            }                                                                                                              \
        }                                                                                                                  \
    }

// One dispatcher per weight type over the 32 tile shapes (rows 1-4, columns 1-8).
#define MM_T512_COLS(BODY, R)                         \
    switch (nc) {                                     \
        case 8: BODY(K, a, lda, b, out, R, 8); break; \
        case 7: BODY(K, a, lda, b, out, R, 7); break; \
        case 6: BODY(K, a, lda, b, out, R, 6); break; \
        case 5: BODY(K, a, lda, b, out, R, 5); break; \
        case 4: BODY(K, a, lda, b, out, R, 4); break; \
        case 3: BODY(K, a, lda, b, out, R, 3); break; \
        case 2: BODY(K, a, lda, b, out, R, 2); break; \
        case 1: BODY(K, a, lda, b, out, R, 1); break; \
        default: break;                               \
    }
#define MM_FLOAT_TILE512(NAME, BODY)                                                                                        \
    static void NAME(int64_t K, const char * a, size_t lda, int nr, const float * const * b, int nc, float * const * out) { \
        switch (nr) {                                                                                                       \
            case 4: MM_T512_COLS(BODY, 4) break;                                                                            \
            case 3: MM_T512_COLS(BODY, 3) break;                                                                            \
            case 2: MM_T512_COLS(BODY, 2) break;                                                                            \
            case 1: MM_T512_COLS(BODY, 1) break;                                                                            \
            default: break;                                                                                                 \
        }                                                                                                                   \
    }

MM_FLOAT_BODY512(body512_f32, pair_f32)
MM_FLOAT_BODY512(body512_f16, pair_f16)
MM_FLOAT_BODY512(body512_bf16, pair_bf16)
MM_FLOAT_TILE512(tile512_f32, body512_f32)
MM_FLOAT_TILE512(tile512_f16, body512_f16)
MM_FLOAT_TILE512(tile512_bf16, body512_bf16)

ggml_mm_float_tile_t ggml_mm_float_tile_avx512(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32: return tile512_f32;
        case GGML_TYPE_F16: return tile512_f16;
        case GGML_TYPE_BF16: return tile512_bf16;
        default: return NULL;
    }
}
