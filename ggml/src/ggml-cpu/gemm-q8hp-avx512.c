// gemm-q8hp-avx512.c — Q8_0 weights at high precision (matmul-float.h) with AVX-512 VNNI: one
// repacked panel against up to 8 columns of 16-bit activations at once.
//
// The lm head of a batched decode step (a server's slots) meets several columns: each block's
// levels are widened to 16 bits once and multiplied into every column with vpdpwssd (two
// products per lane: lane 2r + p of a vector holds row r's levels 2p, 2p + 1 of the 4-level
// group), instead of once per column. The integer sums are exact in any order, and each row's
// float chain is matmul-float.h's, so the outputs are the bits of the one-column kernels.
#include "matmul-float.h"

#include <immintrin.h>
#include <string.h>

#define Q8_0_UNIT (16 * 32 + 32) // bytes of one 32-element block of a repacked q8_0 panel

static inline __attribute__((always_inline)) void panel_cols(const uint8_t * panel, int64_t K, const struct ggml_mm_a16 * a,
                                                             float * const * out, const int NC) {
    // row r's two lanes (2r, 2r + 1 of rows 0-7's vector, then of rows 8-15's) to lane r
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512 acc[8];
    for (int c = 0; c < NC; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t u = 0; u < K / 32; u++) {
        const uint8_t * o = panel + u * Q8_0_UNIT;
        __m512i lo[8], hi[8];
        for (int c = 0; c < NC; c++) lo[c] = hi[c] = _mm512_setzero_si512();
        for (int g = 0; g < 8; g++) {
            const __m512i w0 = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *) (o + 64 * g)));
            const __m512i w1 = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *) (o + 64 * g + 32)));
            for (int c = 0; c < NC; c++) {
                long long a4;
                memcpy(&a4, a[c].q + 32 * u + 4 * g, sizeof(a4));
                const __m512i av = _mm512_set1_epi64(a4);
                lo[c] = _mm512_dpwssd_epi32(lo[c], w0, av);
                hi[c] = _mm512_dpwssd_epi32(hi[c], w1, av);
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (o + 16 * 32)));
        for (int c = 0; c < NC; c++) {
            const __m512i isum =
                _mm512_add_epi32(_mm512_permutex2var_epi32(lo[c], even, hi[c]), _mm512_permutex2var_epi32(lo[c], odd, hi[c]));
            const __m512i v = _mm512_sub_epi32(isum, _mm512_set1_epi32(128 * a[c].s[u]));
            const __m512 p = _mm512_mul_ps(d, _mm512_set1_ps(a[c].d[u]));
            acc[c] = _mm512_fmadd_ps(p, _mm512_cvtepi32_ps(v), acc[c]);
        }
    }
    for (int c = 0; c < NC; c++) _mm512_storeu_ps(out[c], acc[c]);
}

void ggml_mm_q8_0_a16_panel_cols_avx512(const uint8_t * panel, int64_t K, const struct ggml_mm_a16 * a, int nc,
                                        float * const * out) {
    switch (nc) {
        case 1: panel_cols(panel, K, a, out, 1); break;
        case 2: panel_cols(panel, K, a, out, 2); break;
        case 3: panel_cols(panel, K, a, out, 3); break;
        case 4: panel_cols(panel, K, a, out, 4); break;
        case 5: panel_cols(panel, K, a, out, 5); break;
        case 6: panel_cols(panel, K, a, out, 6); break;
        case 7: panel_cols(panel, K, a, out, 7); break;
        default: panel_cols(panel, K, a, out, 8); break;
    }
}
