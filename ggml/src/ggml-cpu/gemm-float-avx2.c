// gemm-float-avx2.c — the float-weight dot tiles (matmul-float.h) with AVX2 + FMA + F16C: up
// to 4 weight rows x 3 activation columns, 12 accumulators in registers; each weight vector is
// converted once and used for every column of the tile.
#include "matmul-float.h"

#include <immintrin.h>

static inline __m256 load_f32(const char * p, int64_t k)  { return _mm256_loadu_ps((const float *) p + k); }
static inline __m256 load_f16(const char * p, int64_t k)  {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) ((const uint16_t *) p + k)));
}
static inline __m256 load_bf16(const char * p, int64_t k) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *) ((const uint16_t *) p + k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// The lane sum of matmul-float.h.
static inline float hsum8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// R and C are constants at every call site, so the loops unroll and acc stays in registers.
#define MM_FLOAT_BODY(NAME, LOAD)                                                                   \
static inline __attribute__((always_inline)) void NAME(int64_t K, const char * a, size_t lda,       \
                                                       const float * const * b, float * const * out, \
                                                       const int R, const int C) {                  \
    __m256 acc[GGML_MM_FLOAT_MR][GGML_MM_FLOAT_NR];                                                 \
    for (int r = 0; r < R; r++) for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();        \
    for (int64_t k = 0; k < K; k += 8) {                                                            \
        __m256 bv[GGML_MM_FLOAT_NR];                                                                \
        for (int c = 0; c < C; c++) bv[c] = _mm256_loadu_ps(b[c] + k);                              \
        for (int r = 0; r < R; r++) {                                                               \
            const __m256 w = LOAD(a + (size_t) r*lda, k);                                           \
            for (int c = 0; c < C; c++) acc[r][c] = _mm256_fmadd_ps(w, bv[c], acc[r][c]);           \
        }                                                                                           \
    }                                                                                               \
    for (int r = 0; r < R; r++) for (int c = 0; c < C; c++) out[c][r] = hsum8(acc[r][c]);           \
}

// One dispatcher per weight type over the 12 tile shapes.
#define MM_FLOAT_TILE(NAME, BODY)                                                                   \
static void NAME(int64_t K, const char * a, size_t lda, int nr, const float * const * b, int nc,    \
                 float * const * out) {                                                             \
    switch (nr*4 + nc) {                                                                            \
        case 4*4 + 3: BODY(K, a, lda, b, out, 4, 3); break;                                         \
        case 4*4 + 2: BODY(K, a, lda, b, out, 4, 2); break;                                         \
        case 4*4 + 1: BODY(K, a, lda, b, out, 4, 1); break;                                         \
        case 3*4 + 3: BODY(K, a, lda, b, out, 3, 3); break;                                         \
        case 3*4 + 2: BODY(K, a, lda, b, out, 3, 2); break;                                         \
        case 3*4 + 1: BODY(K, a, lda, b, out, 3, 1); break;                                         \
        case 2*4 + 3: BODY(K, a, lda, b, out, 2, 3); break;                                         \
        case 2*4 + 2: BODY(K, a, lda, b, out, 2, 2); break;                                         \
        case 2*4 + 1: BODY(K, a, lda, b, out, 2, 1); break;                                         \
        case 1*4 + 3: BODY(K, a, lda, b, out, 1, 3); break;                                         \
        case 1*4 + 2: BODY(K, a, lda, b, out, 1, 2); break;                                         \
        case 1*4 + 1: BODY(K, a, lda, b, out, 1, 1); break;                                         \
        default: break;                                                                             \
    }                                                                                               \
}

MM_FLOAT_BODY(body_f32, load_f32)
MM_FLOAT_BODY(body_f16, load_f16)
MM_FLOAT_BODY(body_bf16, load_bf16)
MM_FLOAT_TILE(tile_f32, body_f32)
MM_FLOAT_TILE(tile_f16, body_f16)
MM_FLOAT_TILE(tile_bf16, body_bf16)

ggml_mm_float_tile_t ggml_mm_float_tile_avx2(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32:  return tile_f32;
        case GGML_TYPE_F16:  return tile_f16;
        case GGML_TYPE_BF16: return tile_bf16;
        default:             return NULL;
    }
}
