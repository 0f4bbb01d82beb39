// vec-avx2.c — silu and swiglu rows, the delta rule's scale_dot / axpy_dot rows (FMA, two
// accumulators), its chunk products (gemm_acc) and the LoRA axpy, with AVX2 + FMA: 8 lanes, exp by Cody-Waite reduction and
// the degree-6 polynomial of ggml_cpu_expf (ops-util.h), 2^n built in the exponent bits; the
// row tail goes through vmaskmovps, so every element sees the same instructions.
#include "vec.h"

#include "simd-exp.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

// x / (1 + exp(-x)); at x = -inf the quotient is -inf/inf, replaced by the limit -0.
static inline __m256 vec_silu8(__m256 x) {
    const __m256 e = ggml_simd_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    const __m256 y = _mm256_div_ps(x, _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
    return _mm256_blendv_ps(y, _mm256_set1_ps(-0.0f), _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ));
}

// Lanes [0, k) on, for 0 < k < 8.
static inline __m256i vec_lanes8(int64_t k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int) k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static void silu_f32_avx2(int64_t n, float * y, const float * x) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, vec_silu8(_mm256_loadu_ps(x + i)));
    }
    if (i < n) {
        const __m256i m = vec_lanes8(n - i);
        _mm256_maskstore_ps(y + i, m, vec_silu8(_mm256_maskload_ps(x + i, m)));
    }
}

static void swiglu_f32_avx2(int64_t n, float * y, const float * g, const float * u) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 s = vec_silu8(_mm256_loadu_ps(g + i));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
    }
    if (i < n) {
        const __m256i m = vec_lanes8(n - i);
        const __m256 s = vec_silu8(_mm256_maskload_ps(g + i, m));
        _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(s, _mm256_maskload_ps(u + i, m)));
    }
}

static inline float vec_hsum8(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// Two accumulators of 8 lanes; the tail through masked loads (masked-off lanes add 0).
static float scale_dot_f32_avx2(int64_t n, float * x, float s, const float * y) {
    const __m256 vs = _mm256_set1_ps(s);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 x0 = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs), x1 = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vs);
        _mm256_storeu_ps(x + i, x0);
        _mm256_storeu_ps(x + i + 8, x1);
        a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(y + i + 8), a1);
    }
    for (; i < n; i += 8) {
        const __m256i m = vec_lanes8(n - i < 8 ? n - i : 8);
        const __m256 x0 = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), vs);
        _mm256_maskstore_ps(x + i, m, x0);
        a0 = _mm256_fmadd_ps(x0, _mm256_maskload_ps(y + i, m), a0);
    }
    return vec_hsum8(_mm256_add_ps(a0, a1));
}

static float axpy_dot_f32_avx2(int64_t n, float * x, float a, const float * y, const float * z) {
    const __m256 va = _mm256_set1_ps(a);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 x0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i));
        const __m256 x1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(y + i + 8), _mm256_loadu_ps(x + i + 8));
        _mm256_storeu_ps(x + i, x0);
        _mm256_storeu_ps(x + i + 8, x1);
        a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(z + i), a0);
        a1 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(z + i + 8), a1);
    }
    for (; i < n; i += 8) {
        const __m256i m = vec_lanes8(n - i < 8 ? n - i : 8);
        const __m256 x0 = _mm256_fmadd_ps(va, _mm256_maskload_ps(y + i, m), _mm256_maskload_ps(x + i, m));
        _mm256_maskstore_ps(x + i, m, x0);
        a0 = _mm256_fmadd_ps(x0, _mm256_maskload_ps(z + i, m), a0);
    }
    return vec_hsum8(_mm256_add_ps(a0, a1));
}

// Tiles of R rows of C by up to 32 columns (4 registers per row, masked at the right edge):
// the accumulators stay in registers over the whole k loop.
static inline __attribute__((always_inline)) void gemm_tile_avx2(int R, int64_t k, float * C, int64_t ldc, const float * A,
                                                                 int64_t lda, const float * B, int64_t ldb, const __m256i mk[4]) {
    __m256 acc[2][4];
    for (int r = 0; r < R; r++) {
        for (int v = 0; v < 4; v++) acc[r][v] = _mm256_maskload_ps(C + r * ldc + 8 * v, mk[v]);
    }
    for (int64_t p = 0; p < k; p++) {
        __m256 b[4];
        for (int v = 0; v < 4; v++) b[v] = _mm256_maskload_ps(B + p * ldb + 8 * v, mk[v]);
        for (int r = 0; r < R; r++) {
            const __m256 a = _mm256_broadcast_ss(A + r * lda + p);
            for (int v = 0; v < 4; v++) acc[r][v] = _mm256_fmadd_ps(a, b[v], acc[r][v]);
        }
    }
    for (int r = 0; r < R; r++) {
        for (int v = 0; v < 4; v++) _mm256_maskstore_ps(C + r * ldc + 8 * v, mk[v], acc[r][v]);
    }
}

static void gemm_acc_f32_avx2(int64_t m, int64_t n, int64_t k, float * C, int64_t ldc, const float * A, int64_t lda,
                              const float * B, int64_t ldb) {
    for (int64_t j = 0; j < n; j += 32) {
        __m256i mk[4];
        for (int v = 0; v < 4; v++) {
            const int64_t rem = n - j - 8 * v;
            mk[v] = vec_lanes8(rem >= 8 ? 8 : rem > 0 ? rem : 0);
        }
        int64_t i = 0;
        for (; i + 2 <= m; i += 2) gemm_tile_avx2(2, k, C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, mk);
        for (; i < m; i++) gemm_tile_avx2(1, k, C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, mk);
    }
}

// The LoRA axpy: 64 outputs per step (a panel) in eight independent fma chains, then 8 at a time, the
// tail through masked loads (F16: the halves copied to a zeroed buffer); every element: y, then
// one fma per k in order.
static inline __m256 lora_load8_f32(const float * p) { return _mm256_loadu_ps(p); }
static inline __m256 lora_load8_f16(const ggml_fp16_t * p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) p)); }

#define LORA_AXPY_AVX2(NAME, T, LOAD)                                                                                \
    static void NAME(int64_t n, float * out, const float * y, int r, const float * c, const T * b, int64_t ldb) {    \
        int64_t i = 0;                                                                                               \
        for (; i + 64 <= n; i += 64) {                                                                               \
            __m256 acc[8];                                                                                           \
            for (int v = 0; v < 8; v++) acc[v] = _mm256_loadu_ps(y + i + 8 * v);                                     \
            for (int k = 0; k < r; k++) {                                                                            \
                const __m256 ck = _mm256_broadcast_ss(c + k);                                                        \
                const T * bk = b + k * ldb + i;                                                                      \
                for (int v = 0; v < 8; v++) acc[v] = _mm256_fmadd_ps(ck, LOAD(bk + 8 * v), acc[v]);                  \
            }                                                                                                        \
            for (int v = 0; v < 8; v++) _mm256_storeu_ps(out + i + 8 * v, acc[v]);                                   \
        }                                                                                                            \
        for (; i + 8 <= n; i += 8) {                                                                                 \
            __m256 a0 = _mm256_loadu_ps(y + i);                                                                      \
            for (int k = 0; k < r; k++) a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(c + k), LOAD(b + k * ldb + i), a0); \
            _mm256_storeu_ps(out + i, a0);                                                                           \
        }                                                                                                            \
        if (i < n) {                                                                                                 \
            const __m256i m = vec_lanes8(n - i);                                                                     \
            __m256 a0 = _mm256_maskload_ps(y + i, m);                                                                \
            for (int k = 0; k < r; k++) {                                                                            \
                T tail[8] = { 0 };                                                                                   \
                memcpy(tail, b + k * ldb + i, (size_t) (n - i) * sizeof(T));                                         \
                a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(c + k), LOAD(tail), a0);                                    \
            }                                                                                                        \
            _mm256_maskstore_ps(out + i, m, a0);                                                                     \
        }                                                                                                            \
    }

LORA_AXPY_AVX2(lora_axpy_f32_avx2, float, lora_load8_f32)
LORA_AXPY_AVX2(lora_axpy_f16_avx2, ggml_fp16_t, lora_load8_f16)

void ggml_cpu_vec_init_avx2(struct ggml_cpu_vec_kernels * k) {
    k->silu_f32 = silu_f32_avx2;
    k->swiglu_f32 = swiglu_f32_avx2;
    k->scale_dot_f32 = scale_dot_f32_avx2;
    k->axpy_dot_f32 = axpy_dot_f32_avx2;
    k->gemm_acc_f32 = gemm_acc_f32_avx2;
    k->lora_axpy_f32 = lora_axpy_f32_avx2;
    k->lora_axpy_f16 = lora_axpy_f16_avx2;
}
