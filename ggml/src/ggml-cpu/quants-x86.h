// quants-x86.h — what the AVX2 and AVX-512 dot-product files share: the 256-bit helpers both
// use and the 32-element block dots VEC_DOT_SYM / VEC_DOT_MIN, written once. A file that
// expands the macros defines its block_dot_<type> (an integer dot of one block as 8 int32
// lanes: maddubs + madd on AVX2, vpdpbusd on AVX-512 VNNI) first. Include only from files
// compiled with AVX2 + F16C + FMA or wider.
#ifndef GGML_CPU_QUANTS_X86_H
#define GGML_CPU_QUANTS_X86_H

#include "quants.h"

#include <immintrin.h>
#include <string.h>

// One half to float in hardware (the portable conversion branches on the exponent).
#define FP16_TO_FP32(x) _cvtsh_ss(x)

// Horizontal sum of 8 floats.
static inline float hsum_f32_8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// 32 nibbles of 16 bytes as bytes 0..15: low nibbles in the low lane, high in the high lane.
static inline __m256i unpack_nibbles_32(const uint8_t * p) {
    const __m128i tmp = _mm_loadu_si128((const __m128i *) p);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Four halves (as raw bits) to four floats with one conversion.
static inline __m128 fp16x4_to_f32(ggml_fp16_t h0, ggml_fp16_t h1, ggml_fp16_t h2, ggml_fp16_t h3) {
    const uint64_t v = (uint64_t) h0 | ((uint64_t) h1 << 16) | ((uint64_t) h2 << 32) | ((uint64_t) h3 << 48);
    return _mm_cvtph_ps(_mm_cvtsi64_si128((long long) v));
}

// Folds four blocks' 8-lane integer dots into [b0, b1, b2, b3 | b0, b1, b2, b3] partial sums
// (low lane: elements of lanes 0-3, high lane: 4-7), so one FMA applies four block scales.
static inline __m256 fold4_i32(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
    return _mm256_cvtepi32_ps(h);
}

// ---- 32-element blocks ----
//
// Each block is an integer dot scaled by its own float. Four blocks go together: their
// dots fold into one vector and their four fp16 scales convert in one instruction.

// Symmetric types against q8_0: sum_i d_a d_b dot_i, four blocks per step.
#define VEC_DOT_SYM(name, block_t, block_dot)                                                                    \
    static void name(int n, float * s, const void * x, const void * y) {                                         \
        const block_t * a = (const block_t *) x;                                                                 \
        const block_q8_0 * b = (const block_q8_0 *) y;                                                           \
        const int nb = n / QK8_0;                                                                                \
        __m256 acc = _mm256_setzero_ps();                                                                        \
        int i = 0;                                                                                               \
        for (; i + 4 <= nb; i += 4) {                                                                            \
            const __m256 sums = fold4_i32(block_dot(&a[i], b[i].qs), block_dot(&a[i + 1], b[i + 1].qs),          \
                                          block_dot(&a[i + 2], b[i + 2].qs), block_dot(&a[i + 3], b[i + 3].qs)); \
            const __m128 da = fp16x4_to_f32(a[i].d, a[i + 1].d, a[i + 2].d, a[i + 3].d);                         \
            const __m128 db = fp16x4_to_f32(b[i].d, b[i + 1].d, b[i + 2].d, b[i + 3].d);                         \
            const __m128 dd = _mm_mul_ps(da, db);                                                                \
            acc = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), sums, acc);                                           \
        }                                                                                                        \
        for (; i < nb; i++) {                                                                                    \
            const __m256 d0 = _mm256_set1_ps(FP16_TO_FP32(a[i].d) * FP16_TO_FP32(b[i].d));                       \
            acc = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(block_dot(&a[i], b[i].qs)), acc);                       \
        }                                                                                                        \
        *s = hsum_f32_8(acc);                                                                                    \
    }

// Types with a minimum against q8_1: sum_i (d_a d_b dot_i + m_a s_b), four blocks per step.
#define VEC_DOT_MIN(name, block_t, block_dot)                                                                    \
    static void name(int n, float * s, const void * x, const void * y) {                                         \
        const block_t * a = (const block_t *) x;                                                                 \
        const block_q8_1 * b = (const block_q8_1 *) y;                                                           \
        const int nb = n / QK8_1;                                                                                \
        __m256 acc = _mm256_setzero_ps();                                                                        \
        __m128 accm = _mm_setzero_ps();                                                                          \
        float summ = 0.0f;                                                                                       \
        int i = 0;                                                                                               \
        for (; i + 4 <= nb; i += 4) {                                                                            \
            const __m256 sums = fold4_i32(block_dot(&a[i], b[i].qs), block_dot(&a[i + 1], b[i + 1].qs),          \
                                          block_dot(&a[i + 2], b[i + 2].qs), block_dot(&a[i + 3], b[i + 3].qs)); \
            const __m128 da = fp16x4_to_f32(a[i].d, a[i + 1].d, a[i + 2].d, a[i + 3].d);                         \
            const __m128 ma = fp16x4_to_f32(a[i].m, a[i + 1].m, a[i + 2].m, a[i + 3].m);                         \
            const __m128 db = _mm_setr_ps(b[i].d, b[i + 1].d, b[i + 2].d, b[i + 3].d);                           \
            const __m128 sb = _mm_setr_ps(b[i].s, b[i + 1].s, b[i + 2].s, b[i + 3].s);                           \
            const __m128 dd = _mm_mul_ps(da, db);                                                                \
            acc = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), sums, acc);                                           \
            accm = _mm_fmadd_ps(ma, sb, accm);                                                                   \
        }                                                                                                        \
        for (; i < nb; i++) {                                                                                    \
            const __m256 d0 = _mm256_set1_ps(FP16_TO_FP32(a[i].d) * b[i].d);                                     \
            acc = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(block_dot(&a[i], b[i].qs)), acc);                       \
            summ += FP16_TO_FP32(a[i].m) * b[i].s;                                                               \
        }                                                                                                        \
        __m128 m = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));                                                  \
        m = _mm_add_ss(m, _mm_movehdup_ps(m));                                                                   \
        *s = hsum_f32_8(acc) + _mm_cvtss_f32(m) + summ;                                                          \
    }

#endif // GGML_CPU_QUANTS_X86_H
