// gemm-avx512.c — the 16 x 8 GEMM micro-kernel with AVX-512 VNNI (formats in gemm.h).
//
// One 512-bit vector holds 4 levels of each of 16 weight rows; vpdpbusd multiplies it by 4
// activation values of one column, broadcast from memory (the instruction's embedded broadcast),
// and adds the 4 products into each row's int32 lane. Eight columns keep eight integer
// accumulators, so each weight vector is loaded once per 8 vpdpbusd. Per block the integer sums
// become floats scaled by the row scales (and the column scale, once per superblock).
#include "gemm.h"

#include <immintrin.h>
#include <string.h>

static inline int32_t ld_i32(const void * p) { int32_t v; memcpy(&v, p, 4); return v; }
static inline float   ld_f32(const void * p) { float v;   memcpy(&v, p, 4); return v; }

// The tile for one (qb, sb, has_min, has_corr) combination; constants fold after inlining.
static inline __attribute__((always_inline)) void
tile(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc, int nr, int nc,
     const int QB, const int SB, const bool MIN, const bool CORR) {
    const size_t pbb = (size_t) QB*GGML_GEMM_MR + 64 + (MIN ? 64 : 0);
    const size_t gbb = (size_t) QB*GGML_GEMM_NR + 64;
    const size_t sbb = 32 + (size_t) SB*gbb;
    const int64_t nsb = K/(QB*SB);
    __m512 acc[GGML_GEMM_NR];
    for (int c = 0; c < GGML_GEMM_NR; c++) acc[c] = _mm512_setzero_ps();
    const uint8_t * pb = panel;
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * sbp = group + (size_t) i*sbb;
        const uint8_t * ab = sbp + 32;
        __m512 t[GGML_GEMM_NR];
        if (SB > 1) {
            for (int c = 0; c < GGML_GEMM_NR; c++) t[c] = _mm512_setzero_ps();
        }
        for (int j = 0; j < SB; j++) {
            __m512i ia[GGML_GEMM_NR];
            for (int c = 0; c < GGML_GEMM_NR; c++) {
                ia[c] = CORR ? _mm512_set1_epi32(ld_i32(ab + QB*GGML_GEMM_NR + 4*c)) : _mm512_setzero_si512();
            }
            for (int g = 0; g < QB/4; g++) {
                const __m512i w = _mm512_loadu_si512((const void *) (pb + 64*g));
                for (int c = 0; c < GGML_GEMM_NR; c++) {
                    ia[c] = _mm512_dpbusd_epi32(ia[c], w, _mm512_set1_epi32(ld_i32(ab + 32*g + 4*c)));
                }
            }
            const __m512 d = _mm512_loadu_ps((const float *) (pb + QB*GGML_GEMM_MR));
            if (SB == 1) {
                for (int c = 0; c < GGML_GEMM_NR; c++) {
                    const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(ld_f32(sbp + 4*c)));
                    acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[c]), dd, acc[c]);
                }
            } else {
                for (int c = 0; c < GGML_GEMM_NR; c++) {
                    t[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[c]), d, t[c]);
                }
            }
            if (MIN) {
                const __m512 m = _mm512_loadu_ps((const float *) (pb + QB*GGML_GEMM_MR + 64));
                for (int c = 0; c < GGML_GEMM_NR; c++) {
                    acc[c] = _mm512_fmadd_ps(m, _mm512_set1_ps(ld_f32(ab + QB*GGML_GEMM_NR + 32 + 4*c)), acc[c]);
                }
            }
            pb += pbb;
            ab += gbb;
        }
        if (SB > 1) {
            for (int c = 0; c < GGML_GEMM_NR; c++) {
                acc[c] = _mm512_fmadd_ps(t[c], _mm512_set1_ps(ld_f32(sbp + 4*c)), acc[c]);
            }
        }
    }
    const __mmask16 mask = (__mmask16) ((1u << nr) - 1);
    for (int c = 0; c < nc; c++) {
        _mm512_mask_storeu_ps(dst + c*ldc, mask, acc[c]);
    }
}

#define TILE_FN(name, QB, SB, MIN, CORR)                                                              \
static void name(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc,   \
                 int nr, int nc) {                                                                    \
    tile(K, panel, group, dst, ldc, nr, nc, QB, SB, MIN, CORR);                                       \
}

TILE_FN(tile_32_1_off, 32,  1, false, true)   // q4_0, q5_0, q8_0
TILE_FN(tile_32_1_min, 32,  1, true,  false)  // q4_1, q5_1
TILE_FN(tile_32_8_min, 32,  8, true,  false)  // q4_K, q5_K
TILE_FN(tile_16_16_off, 16, 16, false, true)  // q3_K, q6_K
TILE_FN(tile_16_16_min, 16, 16, true,  false) // q2_K

static void kernel_avx512(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
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

void ggml_gemm_init_avx512(struct ggml_gemm_traits * t) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (t[i].qb == 0) continue;
        t[i].kernel = kernel_avx512;
        t[i].accelerated = true;
    }
}
