// gemm-float-avx2.c — the float-weight dot tiles (matmul-float.h) with AVX2 + FMA + F16C: up
// to 4 weight rows x 3 activation columns, 12 accumulators in registers; each weight vector is
// converted once and used for every column of the tile.
#include "matmul-float.h"
#include "quants.h"

#include <immintrin.h>
#include <string.h>

static inline __m256 load_f32(const char * p, int64_t k) { return _mm256_loadu_ps((const float *) p + k); }
static inline __m256 load_f16(const char * p, int64_t k) {
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
#define MM_FLOAT_BODY(NAME, LOAD)                                                                                          \
    static inline __attribute__((always_inline)) void NAME(int64_t K, const char * a, size_t lda, const float * const * b, \
                                                           float * const * out, const int R, const int C) {                \
        __m256 acc[GGML_MM_FLOAT_MR][MM_AVX2_NC];                                                                          \
        for (int r = 0; r < R; r++)                                                                                        \
            for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();                                                   \
        for (int64_t k = 0; k < K; k += 8) {                                                                               \
            __m256 bv[MM_AVX2_NC];                                                                                         \
            for (int c = 0; c < C; c++) bv[c] = _mm256_loadu_ps(b[c] + k);                                                 \
            for (int r = 0; r < R; r++) {                                                                                  \
                const __m256 w = LOAD(a + (size_t) r * lda, k);                                                            \
                for (int c = 0; c < C; c++) acc[r][c] = _mm256_fmadd_ps(w, bv[c], acc[r][c]);                              \
            }                                                                                                              \
        }                                                                                                                  \
        for (int r = 0; r < R; r++)                                                                                        \
            for (int c = 0; c < C; c++) out[c][r] = hsum8(acc[r][c]);                                                      \
    }

// Columns per body call: 4 x 3 accumulators, 3 activation vectors and a weight fill the 16
// registers.
#define MM_AVX2_NC 3

// One dispatcher per weight type over the 12 tile shapes, the columns MM_AVX2_NC at a time.
#define MM_FLOAT_TILE(NAME, BODY)                                                                                               \
    static void NAME##_3(int64_t K, const char * a, size_t lda, int nr, const float * const * b, int nc, float * const * out) { \
        switch (nr * 4 + nc) {                                                                                                  \
            case 4 * 4 + 3: BODY(K, a, lda, b, out, 4, 3); break;                                                               \
            case 4 * 4 + 2: BODY(K, a, lda, b, out, 4, 2); break;                                                               \
            case 4 * 4 + 1: BODY(K, a, lda, b, out, 4, 1); break;                                                               \
            case 3 * 4 + 3: BODY(K, a, lda, b, out, 3, 3); break;                                                               \
            case 3 * 4 + 2: BODY(K, a, lda, b, out, 3, 2); break;                                                               \
            case 3 * 4 + 1: BODY(K, a, lda, b, out, 3, 1); break;                                                               \
            case 2 * 4 + 3: BODY(K, a, lda, b, out, 2, 3); break;                                                               \
            case 2 * 4 + 2: BODY(K, a, lda, b, out, 2, 2); break;                                                               \
            case 2 * 4 + 1: BODY(K, a, lda, b, out, 2, 1); break;                                                               \
            case 1 * 4 + 3: BODY(K, a, lda, b, out, 1, 3); break;                                                               \
            case 1 * 4 + 2: BODY(K, a, lda, b, out, 1, 2); break;                                                               \
            case 1 * 4 + 1: BODY(K, a, lda, b, out, 1, 1); break;                                                               \
            default: break;                                                                                                     \
        }                                                                                                                       \
    }                                                                                                                           \
    static void NAME(int64_t K, const char * a, size_t lda, int nr, const float * const * b, int nc, float * const * out) {     \
        for (int c0 = 0; c0 < nc; c0 += MM_AVX2_NC) {                                                                           \
            NAME##_3(K, a, lda, nr, b + c0, nc - c0 < MM_AVX2_NC ? nc - c0 : MM_AVX2_NC, out + c0);                             \
        }                                                                                                                       \
    }

MM_FLOAT_BODY(body_f32, load_f32)
MM_FLOAT_BODY(body_f16, load_f16)
MM_FLOAT_BODY(body_bf16, load_bf16)
MM_FLOAT_TILE(tile_f32, body_f32)
MM_FLOAT_TILE(tile_f16, body_f16)
MM_FLOAT_TILE(tile_bf16, body_bf16)

ggml_mm_float_tile_t ggml_mm_float_tile_avx2(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32: return tile_f32;
        case GGML_TYPE_F16: return tile_f16;
        case GGML_TYPE_BF16: return tile_bf16;
        default: return NULL;
    }
}

// Q8_0 at high precision (matmul-float.h): 16 rows of a repacked panel times one 16-bit column.
// Per block, dword g of the 16 rows (levels u = q + 128, 4 per row) widened to int16 and
// multiplied by the column's 4 values there (vpmaddwd: two sums per row), summed over the 8
// dwords; then isum = sum(u*qa) - 128*sum(qa) and acc = fma(d_w*da, isum, acc), as the portable
// chain does.
void ggml_mm_q8_0_a16_panel_avx2(const uint8_t * panel, int64_t K, const struct ggml_mm_a16 * a, float * out) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t u = 0; u < K / 32; u++) {
        const uint8_t * o = panel + u * (16 * 32 + 32);
        const int16_t * q = a->q + 32 * u;
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        for (int g = 0; g < 8; g++) {
            long long a4;
            memcpy(&a4, q + 4 * g, sizeof(a4));
            const __m256i av = _mm256_set1_epi64x(a4);
            const uint8_t * pg = o + 64 * g;
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) (pg + 0))), av));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) (pg + 16))), av));
            s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) (pg + 32))), av));
            s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) (pg + 48))), av));
        }
        // s_h holds rows 4h..4h+3 (two lanes each; rows 4h, 4h+1 in the low half): the pair sums
        // come out as rows [0 1 4 5 | 2 3 6 7], put in order by a 64-bit permute
        const __m256i corr = _mm256_set1_epi32(128 * a->s[u]);
        const __m256i i01 = _mm256_sub_epi32(_mm256_permute4x64_epi64(_mm256_hadd_epi32(s0, s1), _MM_SHUFFLE(3, 1, 2, 0)), corr);
        const __m256i i23 = _mm256_sub_epi32(_mm256_permute4x64_epi64(_mm256_hadd_epi32(s2, s3), _MM_SHUFFLE(3, 1, 2, 0)), corr);
        const __m256 da = _mm256_set1_ps(a->d[u]);
        const __m256 p0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (o + 16 * 32))), da);
        const __m256 p1 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (o + 16 * 32 + 16))), da);
        acc0 = _mm256_fmadd_ps(p0, _mm256_cvtepi32_ps(i01), acc0);
        acc1 = _mm256_fmadd_ps(p1, _mm256_cvtepi32_ps(i23), acc1);
    }
    _mm256_storeu_ps(out, acc0);
    _mm256_storeu_ps(out + 8, acc1);
}

// The same for 8 stored q8_0 rows (row r at rows + r*row_stride): per block a row's 32 signed
// levels widened to int16 against the column's 32 values, the 8 rows' lane sums reduced
// together (the integer sums are exact, so their order does not matter), then the block's fma.
void ggml_mm_q8_0_a16_rows8_avx2(const char * rows, size_t row_stride, int64_t K, const struct ggml_mm_a16 * a, float * out) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t u = 0; u < K / 32; u++) {
        const __m256i q0 = _mm256_loadu_si256((const __m256i *) (a->q + 32 * u));
        const __m256i q1 = _mm256_loadu_si256((const __m256i *) (a->q + 32 * u + 16));
        __m256i v[8];
        uint16_t dh[8];
        for (int r = 0; r < 8; r++) {
            const block_q8_0 * b = (const block_q8_0 *) (rows + (size_t) r * row_stride) + u;
            memcpy(&dh[r], &b->d, sizeof(dh[r]));
            const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) b->qs));
            const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) (b->qs + 16)));
            v[r] = _mm256_add_epi32(_mm256_madd_epi16(w0, q0), _mm256_madd_epi16(w1, q1));
        }
        const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
        const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
        const __m256i h03 = _mm256_hadd_epi32(h01, h23), h47 = _mm256_hadd_epi32(h45, h67);
        const __m256i isum =
            _mm256_add_epi32(_mm256_permute2x128_si256(h03, h47, 0x20), _mm256_permute2x128_si256(h03, h47, 0x31));
        const __m256 p = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) dh)), _mm256_set1_ps(a->d[u]));
        acc = _mm256_fmadd_ps(p, _mm256_cvtepi32_ps(isum), acc);
    }
    _mm256_storeu_ps(out, acc);
}
