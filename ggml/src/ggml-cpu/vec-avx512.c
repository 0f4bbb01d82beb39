// vec-avx512.c — silu and swiglu rows, the chunk products (gemm_acc) and the LoRA axpy with AVX-512: 16 lanes, exp by Cody-Waite reduction and
// the degree-6 polynomial of ggml_cpu_expf (ops-util.h), 2^n by vscalefps; the row tail goes
// through masked loads and stores, so every element sees the same instructions.
#include "vec.h"

#include "simd-exp.h"

#include <immintrin.h>
#include <math.h>

// x / (1 + exp(-x)); at x = -inf the quotient is -inf/inf, replaced by the limit -0.
static inline __m512 vec_silu16(__m512 x) {
    const __m512 e = ggml_simd_exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
    const __m512 y = _mm512_div_ps(x, _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), y, _mm512_set1_ps(-0.0f));
}

static void silu_f32_avx512(int64_t n, float * y, const float * x) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(y + i, vec_silu16(_mm512_loadu_ps(x + i)));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16) ((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, vec_silu16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

static void swiglu_f32_avx512(int64_t n, float * y, const float * g, const float * u) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 s = vec_silu16(_mm512_loadu_ps(g + i));
        _mm512_storeu_ps(y + i, _mm512_mul_ps(s, _mm512_loadu_ps(u + i)));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16) ((1u << (n - i)) - 1);
        const __m512 s = vec_silu16(_mm512_maskz_loadu_ps(m, g + i));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, u + i)));
    }
}

// Tiles of R rows of C by up to 64 columns (4 registers per row, masked at the right edge):
// the R x 4 accumulators stay in registers over the whole k loop, each B row segment is
// loaded once per tile and each A element broadcast once.
static inline __attribute__((always_inline)) void gemm_tile_avx512(int R, int64_t k, float * C, int64_t ldc, const float * A,
                                                                   int64_t lda, const float * B, int64_t ldb,
                                                                   const __mmask16 mk[4]) {
    __m512 acc[4][4];
    for (int r = 0; r < R; r++) {
        for (int v = 0; v < 4; v++) acc[r][v] = _mm512_maskz_loadu_ps(mk[v], C + r * ldc + 16 * v);
    }
    for (int64_t p = 0; p < k; p++) {
        __m512 b[4];
        for (int v = 0; v < 4; v++) b[v] = _mm512_maskz_loadu_ps(mk[v], B + p * ldb + 16 * v);
        for (int r = 0; r < R; r++) {
            const __m512 a = _mm512_set1_ps(A[r * lda + p]);
            for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
        }
    }
    for (int r = 0; r < R; r++) {
        for (int v = 0; v < 4; v++) _mm512_mask_storeu_ps(C + r * ldc + 16 * v, mk[v], acc[r][v]);
    }
}

static void gemm_acc_f32_avx512(int64_t m, int64_t n, int64_t k, float * C, int64_t ldc, const float * A, int64_t lda,
                                const float * B, int64_t ldb) {
    for (int64_t j = 0; j < n; j += 64) {
        __mmask16 mk[4];
        for (int v = 0; v < 4; v++) {
            const int64_t rem = n - j - 16 * v;
            mk[v] = rem >= 16 ? (__mmask16) 0xFFFF : rem > 0 ? (__mmask16) ((1u << rem) - 1) : (__mmask16) 0;
        }
        int64_t i = 0;
        for (; i + 4 <= m; i += 4) gemm_tile_avx512(4, k, C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, mk);
        for (; i < m; i++) gemm_tile_avx512(1, k, C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, mk);
    }
}

// The LoRA axpy: 64 outputs per step in four independent fma chains (so the chains' latency
// overlaps), then 16 at a time, the tail masked; every element: y, then one fma per k in order.
static inline __m512 lora_load_f32(const float * p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
static inline __m512 lora_load_f16(const ggml_fp16_t * p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const void *) p));
}

#define LORA_AXPY_AVX512(NAME, T, LOAD)                                                                           \
    static void NAME(int64_t n, float * out, const float * y, int r, const float * c, const T * b, int64_t ldb) { \
        int64_t i = 0;                                                                                            \
        for (; i + 64 <= n; i += 64) {                                                                            \
            __m512 a0 = _mm512_loadu_ps(y + i), a1 = _mm512_loadu_ps(y + i + 16);                                 \
            __m512 a2 = _mm512_loadu_ps(y + i + 32), a3 = _mm512_loadu_ps(y + i + 48);                            \
            for (int k = 0; k < r; k++) {                                                                         \
                const __m512 ck = _mm512_set1_ps(c[k]);                                                           \
                const T * bk = b + k * ldb + i;                                                                   \
                a0 = _mm512_fmadd_ps(ck, LOAD(bk, 0xFFFF), a0);                                                   \
                a1 = _mm512_fmadd_ps(ck, LOAD(bk + 16, 0xFFFF), a1);                                              \
                a2 = _mm512_fmadd_ps(ck, LOAD(bk + 32, 0xFFFF), a2);                                              \
                a3 = _mm512_fmadd_ps(ck, LOAD(bk + 48, 0xFFFF), a3);                                              \
            }                                                                                                     \
            _mm512_storeu_ps(out + i, a0);                                                                        \
            _mm512_storeu_ps(out + i + 16, a1);                                                                   \
            _mm512_storeu_ps(out + i + 32, a2);                                                                   \
            _mm512_storeu_ps(out + i + 48, a3);                                                                   \
        }                                                                                                         \
        for (; i < n; i += 16) {                                                                                  \
            const __mmask16 m = n - i >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << (n - i)) - 1);             \
            __m512 a0 = _mm512_maskz_loadu_ps(m, y + i);                                                          \
            for (int k = 0; k < r; k++) a0 = _mm512_fmadd_ps(_mm512_set1_ps(c[k]), LOAD(b + k * ldb + i, m), a0); \
            _mm512_mask_storeu_ps(out + i, m, a0);                                                                \
        }                                                                                                         \
    }

LORA_AXPY_AVX512(lora_axpy_f32_avx512, float, lora_load_f32)
LORA_AXPY_AVX512(lora_axpy_f16_avx512, ggml_fp16_t, lora_load_f16)

void ggml_cpu_vec_init_avx512(struct ggml_cpu_vec_kernels * k) {
    k->silu_f32 = silu_f32_avx512;
    k->swiglu_f32 = swiglu_f32_avx512;
    k->gemm_acc_f32 = gemm_acc_f32_avx512;
    k->lora_axpy_f32 = lora_axpy_f32_avx512;
    k->lora_axpy_f16 = lora_axpy_f16_avx512;
}
