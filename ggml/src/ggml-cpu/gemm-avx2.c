// gemm-avx2.c — the GEMM micro-kernel with AVX2 (formats in gemm.h).
//
// Without VNNI a 4-way byte dot is maddubs (u8 x s8 -> s16 pairs) then madd with ones (-> s32).
// maddubs saturates at 32767, and a pair reaches 2 * level * 128: safe for levels below 128,
// so every type but q8_0 (levels up to 255) runs here. (Not yet chosen by mul_mat: see
// ggml_gemm_init_avx2.)
// A 256-bit vector holds 4 levels of 8 rows: the 16-row panel is done as two halves, each
// with 4 columns at a time (16 registers: 4 integer sums, 4 block sums, 4 accumulators).
#include "gemm.h"

#include <immintrin.h>
#include <string.h>

static inline int32_t ld_i32(const void * p) { int32_t v; memcpy(&v, p, 4); return v; }
static inline float   ld_f32(const void * p) { float v;   memcpy(&v, p, 4); return v; }

#define CW 4 // columns per pass

// Rows [8h, 8h+8) x columns [c0, c0+4) over all K.
static inline __attribute__((always_inline)) void
half_tile(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc, int nr, int nc,
          int h, int c0, const int QB, const int SB, const bool MIN, const bool CORR, const int CWT) {
    const size_t pbb = (size_t) QB*GGML_GEMM_MR + 64 + (MIN ? 64 : 0);
    const size_t gbb = (size_t) QB*GGML_GEMM_NR + 64;
    const size_t sbb = 32 + (size_t) SB*gbb;
    const int64_t nsb = K/(QB*SB);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[CW];
    for (int c = 0; c < CWT; c++) acc[c] = _mm256_setzero_ps();
    const uint8_t * pb = panel + 32*h;
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * sbp = group + (size_t) i*sbb + 4*c0;
        const uint8_t * ab = group + (size_t) i*sbb + 32 + 4*c0;
        __m256 t[CW];
        if (SB > 1) {
            for (int c = 0; c < CWT; c++) t[c] = _mm256_setzero_ps();
        }
        for (int j = 0; j < SB; j++) {
            __m256i ia[CW];
            for (int c = 0; c < CWT; c++) {
                ia[c] = CORR ? _mm256_set1_epi32(ld_i32(ab + QB*GGML_GEMM_NR + 4*c)) : _mm256_setzero_si256();
            }
            for (int g = 0; g < QB/4; g++) {
                const __m256i w = _mm256_loadu_si256((const __m256i *) (pb + 64*g));
                for (int c = 0; c < CWT; c++) {
                    const __m256i p16 = _mm256_maddubs_epi16(w, _mm256_set1_epi32(ld_i32(ab + 32*g + 4*c)));
                    ia[c] = _mm256_add_epi32(ia[c], _mm256_madd_epi16(p16, ones));
                }
            }
            const __m256 d = _mm256_loadu_ps((const float *) (pb + QB*GGML_GEMM_MR));
            if (SB == 1) {
                for (int c = 0; c < CWT; c++) {
                    const __m256 dd = _mm256_mul_ps(d, _mm256_set1_ps(ld_f32(sbp + 4*c)));
                    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[c]), dd, acc[c]);
                }
            } else {
                for (int c = 0; c < CWT; c++) t[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[c]), d, t[c]);
            }
            if (MIN) {
                const __m256 m = _mm256_loadu_ps((const float *) (pb + QB*GGML_GEMM_MR + 64));
                for (int c = 0; c < CWT; c++) {
                    acc[c] = _mm256_fmadd_ps(m, _mm256_set1_ps(ld_f32(ab + QB*GGML_GEMM_NR + 32 + 4*c)), acc[c]);
                }
            }
            pb += pbb;
            ab += gbb;
        }
        if (SB > 1) {
            for (int c = 0; c < CWT; c++) acc[c] = _mm256_fmadd_ps(t[c], _mm256_set1_ps(ld_f32(sbp + 4*c)), acc[c]);
        }
    }
    const int rows = nr - 8*h;
    for (int c = 0; c < CWT && c0 + c < nc; c++) {
        float * out = dst + (c0 + c)*ldc + 8*h;
        if (rows >= 8) {
            _mm256_storeu_ps(out, acc[c]);
        } else {
            float tmp[8];
            _mm256_storeu_ps(tmp, acc[c]);
            memcpy(out, tmp, (size_t) rows*sizeof(float));
        }
    }
}

static inline __attribute__((always_inline)) void
tile(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc, int nr, int nc,
     const int QB, const int SB, const bool MIN, const bool CORR) {
    for (int h = 0; h < 2 && 8*h < nr; h++) {
        for (int c0 = 0; c0 < nc; c0 += CW) {
            // a column's lanes see the same operations in every width: results never depend on N
            if (nc - c0 == 1)      half_tile(K, panel, group, dst, ldc, nr, nc, h, c0, QB, SB, MIN, CORR, 1);
            else if (nc - c0 == 2) half_tile(K, panel, group, dst, ldc, nr, nc, h, c0, QB, SB, MIN, CORR, 2);
            else                   half_tile(K, panel, group, dst, ldc, nr, nc, h, c0, QB, SB, MIN, CORR, CW);
        }
    }
}

#define TILE_FN(name, QB, SB, MIN, CORR)                                                              \
static void name(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc,   \
                 int nr, int nc) {                                                                    \
    tile(K, panel, group, dst, ldc, nr, nc, QB, SB, MIN, CORR);                                       \
}

TILE_FN(tile_32_1_off, 32,  1, false, true)   // q4_0, q5_0
TILE_FN(tile_32_1_min, 32,  1, true,  false)  // q4_1, q5_1
TILE_FN(tile_32_8_min, 32,  8, true,  false)  // q4_K, q5_K
TILE_FN(tile_16_16_off, 16, 16, false, true)  // q3_K, q6_K
TILE_FN(tile_16_16_min, 16, 16, true,  false) // q2_K

static void kernel_avx2(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                        float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t * p = (const uint8_t *) panel;
    const uint8_t * g = (const uint8_t *) group;
    if (gt->qb == 32 && gt->sb == 1) {
        if (gt->has_min) tile_32_1_min(K, p, g, dst, ldc, nr, nc);
        else             tile_32_1_off(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 32 && gt->sb == 8 && gt->has_min) {
        tile_32_8_min(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 16 && gt->sb == 16) {
        if (gt->has_min) tile_16_16_min(K, p, g, dst, ldc, nr, nc);
        else             tile_16_16_off(K, p, g, dst, ldc, nr, nc);
    } else {
        ggml_gemm_kernel_generic(gt, K, panel, group, dst, ldc, nr, nc);
    }
}

void ggml_gemm_init_avx2(struct ggml_gemm_traits * t) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (t[i].qb == 0 || i == GGML_TYPE_Q8_0) continue; // q8_0 levels would saturate maddubs
        t[i].kernel = kernel_avx2;
        // Not used by mul_mat yet (accelerated stays false): without AVX2 panel packers and a
        // one-column gemv, the portable packer makes token generation and small batches several
        // times slower than vec_dot, and mul_mat must use one path for every N. The kernel is
        // tested against the portable one (tests/c/test_gemm.c) for when those exist.
    }
}
