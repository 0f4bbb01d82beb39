// quants-avx2.c — AVX2 + FMA + F16C dot products (compiled with those flags only; used
// after a cpuid check in cpu-traits.c).
#include "quants.h"

#include <immintrin.h>
#include <string.h>

// ---- helpers ----

// Horizontal sum of 8 floats.
static inline float hsum_f32_8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// 32 nibbles of 16 bytes as bytes 0..15: low nibbles in the low lane, high in the high lane.
static inline __m256i unpack_nibbles_32(const uint8_t * p) {
    const __m128i tmp = _mm_loadu_si128((const __m128i *)p);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Sum of x[i]*y[i] over 32 signed bytes as 8 int32 lanes (x must not hold -128).
static inline __m256i dot_i8_32(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    const __m256i p16 = _mm256_maddubs_epi16(ax, sy);
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// Sum of u[i]*y[i] over 32 unsigned (<128) x signed bytes as 8 int32 lanes.
static inline __m256i dot_u8_i8_32(__m256i u, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
}

// ---- float types ----

static void vec_dot_f32_f32(int n, float * s, const void * x, const void * y) {
    const float * a = (const float *)x;
    const float * b = (const float *)y;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i +  0), _mm256_loadu_ps(b + i +  0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i +  8), _mm256_loadu_ps(b + i +  8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    }
    float sum = hsum_f32_8(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += a[i] * b[i];
    *s = sum;
}

// ---- 32-element blocks ----

static void vec_dot_q8_0_q8_0(int n, float * s, const void * x, const void * y) {
    const block_q8_0 * a = (const block_q8_0 *)x;
    const block_q8_0 * b = (const block_q8_0 *)y;
    const int nb = n / QK8_0;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m256i qa = _mm256_loadu_si256((const __m256i *)a[i].qs);
        const __m256i qb = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256 d = _mm256_set1_ps(GGML_FP16_TO_FP32(a[i].d) * GGML_FP16_TO_FP32(b[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_32(qa, qb)), acc);
    }
    *s = hsum_f32_8(acc);
}

static void vec_dot_q4_0_q8_0(int n, float * s, const void * x, const void * y) {
    const block_q4_0 * a = (const block_q4_0 *)x;
    const block_q8_0 * b = (const block_q8_0 *)y;
    const int nb = n / QK8_0;
    __m256 acc = _mm256_setzero_ps();
    const __m256i off = _mm256_set1_epi8(8);
    for (int i = 0; i < nb; i++) {
        const __m256i qa = _mm256_sub_epi8(unpack_nibbles_32(a[i].qs), off);
        const __m256i qb = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256 d = _mm256_set1_ps(GGML_FP16_TO_FP32(a[i].d) * GGML_FP16_TO_FP32(b[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_32(qa, qb)), acc);
    }
    *s = hsum_f32_8(acc);
}

static void vec_dot_q4_1_q8_1(int n, float * s, const void * x, const void * y) {
    const block_q4_1 * a = (const block_q4_1 *)x;
    const block_q8_1 * b = (const block_q8_1 *)y;
    const int nb = n / QK8_1;
    __m256 acc = _mm256_setzero_ps();
    float summ = 0.0f;
    for (int i = 0; i < nb; i++) {
        const __m256i qa = unpack_nibbles_32(a[i].qs);
        const __m256i qb = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256 d = _mm256_set1_ps(GGML_FP16_TO_FP32(a[i].d) * b[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_u8_i8_32(qa, qb)), acc);
        summ += GGML_FP16_TO_FP32(a[i].m) * b[i].s;
    }
    *s = hsum_f32_8(acc) + summ;
}

void ggml_cpu_quants_init_avx2(struct ggml_type_traits_cpu * t) {
    t[GGML_TYPE_F32].vec_dot  = vec_dot_f32_f32;
    t[GGML_TYPE_Q8_0].vec_dot = vec_dot_q8_0_q8_0;
    t[GGML_TYPE_Q4_0].vec_dot = vec_dot_q4_0_q8_0;
    t[GGML_TYPE_Q4_1].vec_dot = vec_dot_q4_1_q8_1;
}
