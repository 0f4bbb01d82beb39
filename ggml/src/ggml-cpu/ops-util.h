// ops-util.h — small inline helpers shared by the op kernels (ops-*.c): element load/store
// by type, row conversion, reductions written so that the compiler vectorizes them without
// -ffast-math, and a vectorizable exp. Private to the CPU backend.
#ifndef GGML_CPU_OPS_UTIL_H
#define GGML_CPU_OPS_UTIL_H

#include "cpu-impl.h"

#include <stdint.h>
#include <string.h>
#include <math.h>

// Lanes of the independent accumulators used by the reductions below. Float addition is not
// associative, so without -ffast-math the compiler only vectorizes a reduction when the code
// itself keeps separate partial sums; 16 covers one AVX-512 register or two AVX2 ones.
#define GGML_CPU_RLANES 16

// Largest block of floats the kernels keep on the stack for gathering strided data; also
// an upper bound on the block size of the quantized types (256 for the K-quants).
#define GGML_CPU_CHUNK 256

// Byte address of element (i0, i1, i2, i3) of t.
static inline char * ggml_cpu_ptr(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

// Splits a flat row index of t (rows = ne1*ne2*ne3) into (i1, i2, i3).
static inline void ggml_cpu_row_index(const struct ggml_tensor * t, int64_t ir, int64_t * i1, int64_t * i2, int64_t * i3) {
    const int64_t ne1 = t->ne[1], ne12 = t->ne[1] * t->ne[2];
    *i3 = ir / ne12;
    const int64_t r = ir - *i3 * ne12;
    *i2 = r / ne1;
    *i1 = r - *i2 * ne1;
}

// Walks elements [*e, e1) of t (numbered row after row) one row segment at a time: the next
// segment is elements [*i0, *i0 + *n) of row (i1, i2, i3); false once the range is done.
static inline bool ggml_cpu_ew_next(const struct ggml_tensor * t, int64_t * e, int64_t e1, int64_t * i0, int64_t * n,
                                    int64_t * i1, int64_t * i2, int64_t * i3) {
    if (*e >= e1) return false;
    const int64_t ne0 = t->ne[0], ir = *e / ne0;
    *i0 = *e - ir * ne0;
    *n = ne0 - *i0 < e1 - *e ? ne0 - *i0 : e1 - *e;
    *e += *n;
    ggml_cpu_row_index(t, ir, i1, i2, i3);
    return true;
}

// True for the element types the generic kernels load and store as floats.
static inline bool ggml_cpu_is_float_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

// One element of type t (F32, F16, BF16, I32) as float.
static inline float ggml_cpu_load_f(const void * p, enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_F32: return *(const float *) p;
        case GGML_TYPE_F16: return GGML_FP16_TO_FP32(*(const ggml_fp16_t *) p);
        case GGML_TYPE_BF16: return ggml_compute_bf16_to_fp32(*(const ggml_bf16_t *) p);
        case GGML_TYPE_I32: return (float) *(const int32_t *) p;
        default: return 0.0f;
    }
}

// Stores v as one element of type t (F32, F16, BF16, I32).
static inline void ggml_cpu_store_f(void * p, enum ggml_type t, float v) {
    switch (t) {
        case GGML_TYPE_F32: *(float *) p = v; break;
        case GGML_TYPE_F16: *(ggml_fp16_t *) p = GGML_FP32_TO_FP16(v); break;
        case GGML_TYPE_BF16: *(ggml_bf16_t *) p = ggml_compute_fp32_to_bf16(v); break;
        case GGML_TYPE_I32: *(int32_t *) p = (int32_t) v; break;
        default: break;
    }
}

// n contiguous elements of type t (F32/F16/BF16) -> floats.
static inline void ggml_cpu_row_to_f32(const void * src, enum ggml_type t, float * dst, int64_t n) {
    switch (t) {
        case GGML_TYPE_F32: memcpy(dst, src, (size_t) n * sizeof(float)); break;
        case GGML_TYPE_F16: ggml_fp16_to_fp32_row((const ggml_fp16_t *) src, dst, n); break; // F16C when present
        case GGML_TYPE_BF16: {
            const ggml_bf16_t * s = (const ggml_bf16_t *) src;
            for (int64_t i = 0; i < n; i++) dst[i] = ggml_compute_bf16_to_fp32(s[i]);
        } break;
        default: break;
    }
}

// n floats -> n contiguous elements of type t (F32/F16/BF16).
static inline void ggml_cpu_row_from_f32(const float * src, void * dst, enum ggml_type t, int64_t n) {
    switch (t) {
        case GGML_TYPE_F32: memmove(dst, src, (size_t) n * sizeof(float)); break;
        case GGML_TYPE_F16: ggml_fp32_to_fp16_row(src, (ggml_fp16_t *) dst, n); break;
        case GGML_TYPE_BF16: {
            ggml_bf16_t * d = (ggml_bf16_t *) dst;
            for (int64_t i = 0; i < n; i++) d[i] = ggml_compute_fp32_to_bf16(src[i]);
        } break;
        default: break;
    }
}

static inline uint32_t ggml_cpu_f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}
static inline float ggml_cpu_u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

// c ? a : b through bit masks. GCC (with its default -ftrapping-math) will not if-convert a
// float ?: inside a loop, which blocks vectorization; the integer blend has no branch.
static inline float ggml_cpu_select(int c, float a, float b) {
    const uint32_t m = 0u - (uint32_t) c;
    return ggml_cpu_u2f((ggml_cpu_f2u(a) & m) | (ggml_cpu_f2u(b) & ~m));
}

// Sum of x[0..n).
static inline float ggml_cpu_vec_sum(int64_t n, const float * restrict x) {
    float acc[GGML_CPU_RLANES] = { 0 };
    int64_t i = 0;
    for (; i + GGML_CPU_RLANES <= n; i += GGML_CPU_RLANES) {
        for (int j = 0; j < GGML_CPU_RLANES; j++) acc[j] += x[i + j];
    }
    double s = 0.0;
    for (int j = 0; j < GGML_CPU_RLANES; j++) s += acc[j];
    for (; i < n; i++) s += x[i];
    return (float) s;
}

// Dot product of x[0..n) and y[0..n).
static inline float ggml_cpu_vec_dot(int64_t n, const float * restrict x, const float * restrict y) {
    float acc[GGML_CPU_RLANES] = { 0 };
    int64_t i = 0;
    for (; i + GGML_CPU_RLANES <= n; i += GGML_CPU_RLANES) {
        for (int j = 0; j < GGML_CPU_RLANES; j++) acc[j] += x[i + j] * y[i + j];
    }
    double s = 0.0;
    for (int j = 0; j < GGML_CPU_RLANES; j++) s += acc[j];
    for (; i < n; i++) s += x[i] * y[i];
    return (float) s;
}

// Maximum of x[0..n) (n >= 1); -inf entries are fine, NaN is not propagated.
static inline float ggml_cpu_vec_max(int64_t n, const float * restrict x) {
    float acc[GGML_CPU_RLANES];
    for (int j = 0; j < GGML_CPU_RLANES; j++) acc[j] = -INFINITY;
    int64_t i = 0;
    for (; i + GGML_CPU_RLANES <= n; i += GGML_CPU_RLANES) {
        // The blend is spelled out (not ggml_cpu_select) because GCC's SLP vectorizer only
        // picks it up in this form.
        for (int j = 0; j < GGML_CPU_RLANES; j++) {
            const float a = acc[j], b = x[i + j];
            uint32_t ua, ub;
            memcpy(&ua, &a, sizeof(ua));
            memcpy(&ub, &b, sizeof(ub));
            const uint32_t m = 0u - (uint32_t) (a > b);
            const uint32_t r = (ua & m) | (ub & ~m);
            memcpy(&acc[j], &r, sizeof(r));
        }
    }
    float m = -INFINITY;
    for (int j = 0; j < GGML_CPU_RLANES; j++) m = m > acc[j] ? m : acc[j];
    for (; i < n; i++) m = m > x[i] ? m : x[i];
    return m;
}

// y[i] = y[i]*s.
static inline void ggml_cpu_vec_scale(int64_t n, float * restrict y, float s) {
    for (int64_t i = 0; i < n; i++) y[i] *= s;
}

// y[i] += a*x[i].
static inline void ggml_cpu_vec_mad(int64_t n, float * restrict y, const float * restrict x, float a) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

// exp(x) for float, ~1.4 ulp, written with blends and integer bit tricks only so that loops
// calling it vectorize (libm's expf does not). exp(-inf) = 0, exp(+inf) = inf, NaN -> NaN;
// results below FLT_MIN flush to zero, above exp(88.376) become inf.
static inline float ggml_cpu_expf(float x) {
    const float hi = 88.3762626647949f;   // 2^n scaling below would overflow past this
    const float lo = -87.3365447504f;     // exp(lo) = FLT_MIN
    float xc = ggml_cpu_select(x > hi, hi, x);
    xc = ggml_cpu_select(xc < lo, lo, xc);
    // NaN would reach the float->int conversion below, which is undefined (UBSan); the NaN
    // is put back at the end.
    xc = ggml_cpu_select(xc != xc, 0.0f, xc);
    // n = round(x / ln2) by the 1.5*2^23 trick (exact for |n| < 2^22, no rounding-mode call).
    const float magic = 12582912.0f;
    const float n = (xc * 1.44269504088896341f + magic) - magic;
    // r = x - n*ln2 in two pieces (Cody-Waite), |r| <= ln2/2.
    float r = xc - n * 0.693359375f;
    r = r - n * (-2.12194440e-4f);
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    float y = p * ggml_cpu_u2f((uint32_t) ((int32_t) n + 127) << 23);
    y = ggml_cpu_select(x < lo, 0.0f, y);
    y = ggml_cpu_select(x > hi, INFINITY, y);
    y = ggml_cpu_select(x != x, x, y);
    return y;
}

// x * sigmoid(x).
static inline float ggml_cpu_silu(float x) {
    // The limit at -inf is 0; the formula alone would give -inf/inf = NaN.
    return ggml_cpu_select(x == -INFINITY, -0.0f, x / (1.0f + ggml_cpu_expf(-x)));
}

// 1 / (1 + exp(-x)): 0 at -inf (exp overflows to inf), 1 at +inf.
static inline float ggml_cpu_sigmoid(float x) { return 1.0f / (1.0f + ggml_cpu_expf(-x)); }

// tanh(x): sign(x) (1 - t) / (1 + t) with t = exp(-2|x|), which saturates at +-1 (t -> 0) and
// never overflows; below |x| = 1/16, where 1 - t cancels, the odd series to x^9 (relative
// error under 1e-12 there).
static inline float ggml_cpu_tanh(float x) {
    const float a = fabsf(x);
    const float t = ggml_cpu_expf(-2.0f * a);
    const float big = (1.0f - t) / (1.0f + t);
    const float a2 = a * a;
    const float small = a * (1.0f + a2 * (-1.0f / 3 + a2 * (2.0f / 15 + a2 * (-17.0f / 315 + a2 * (62.0f / 2835)))));
    const float r = ggml_cpu_select(a < 0.0625f, small, big);
    return ggml_cpu_select(x != x, x, copysignf(r, x));
}

// Exact GELU, x/2 (1 + erf(x/sqrt 2)) = x/2 erfc(-x/sqrt 2), with erfc from the Chebyshev fit
// of Numerical Recipes' erfcc (relative error below 1.2e-7 for every argument, so the far
// negative tail keeps its digits, which 1 + erf would cancel away); branch-free, so loops of
// it vectorize (libm's erff does not: it was most of a BERT encoder's GELU time).
static inline float ggml_cpu_gelu_erf(float x) {
    const float u = x * 0.70710678118654752440f;
    const float z = fabsf(u);
    const float t = 1.0f / (1.0f + 0.5f * z);
    const float p = -1.26551223f +
        t *
            (1.00002368f +
             t *
                 (0.37409196f +
                  t *
                      (0.09678418f +
                       t *
                           (-0.18628806f +
                            t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
    const float c = t * ggml_cpu_expf(-z * z + p);                  // erfc(|u|)
    const float one_plus_erf = ggml_cpu_select(u < 0.0f, c, 2.0f - c);
    return ggml_cpu_select(x == -INFINITY, -0.0f, 0.5f * x * one_plus_erf); // -inf * 0 would be NaN
}

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

static inline float ggml_cpu_gelu(float x) {
    const float k = 0.79788456080286535588f; // sqrt(2/pi)
    const float u = k * x * (1.0f + 0.044715f * x * x);
    // 1 + tanh(u) = 2 e / (e + 1) with e = exp(2u): no cancellation for negative u; for large
    // u, e overflows to inf (inf/inf), which the select replaces by the limit 2.
    const float e = ggml_cpu_expf(2.0f * u);
    float t = 2.0f * e / (e + 1.0f);
    t = ggml_cpu_select(u > 10.0f, 2.0f, t);
    return ggml_cpu_select(x == -INFINITY, -0.0f, 0.5f * x * t); // -inf * 0 would be NaN
}

#endif // GGML_CPU_OPS_UTIL_H
