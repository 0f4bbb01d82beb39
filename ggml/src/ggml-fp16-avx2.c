// ggml-fp16-avx2.c — F16C row conversions, compiled with -mf16c and called only after
// ggml_cpu_has_f16c() said yes. VCVTPS2PH with rounding mode 0 is round-to-nearest-even,
// the same rounding as the scalar reference.
#include "ggml-impl.h"

#include <immintrin.h>

int64_t ggml_fp16_to_fp32_row_f16c(const ggml_fp16_t * x, float * y, int64_t n);
int64_t ggml_fp32_to_fp16_row_f16c(const float * x, ggml_fp16_t * y, int64_t n);

int64_t ggml_fp16_to_fp32_row_f16c(const ggml_fp16_t * x, float * y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *) (x + i));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    return i;
}

int64_t ggml_fp32_to_fp16_row_f16c(const float * x, ggml_fp16_t * y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 f = _mm256_loadu_ps(x + i);
        _mm_storeu_si128((__m128i *) (y + i), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
    }
    return i;
}
