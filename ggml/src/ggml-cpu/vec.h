// vec.h — SIMD row kernels of the elementwise activations (silu, swiglu) and of the delta rule's
// state rows (scale_dot, axpy_dot), chunk products (gemm_acc: ops-ssm.c) and the LoRA update's
// rank-r axpy (lora_axpy: ops-lora.c) by kernel set, and the
// rule that splits an elementwise op's flat element range over threads.
//
// vec-generic.c holds the portable kernels (the scalar math of ops-util.h, which the compiler
// vectorizes only to the baseline ISA there); vec-avx2.c and vec-avx512.c override them. Every
// kernel computes each element with the same instructions whatever n and the element's place
// in the row (tails use masked loads and stores), so splitting a row at any point over
// threads gives bit-identical results.
#ifndef GGML_CPU_VEC_H
#define GGML_CPU_VEC_H

#include "quants.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Element ranges handed to threads start at multiples of this many elements (one cache line
// of floats), so threads writing neighbouring ranges of a row do not share a line.
#define GGML_CPU_EW_ALIGN 16

struct ggml_cpu_vec_kernels {
    // y[i] = silu(x[i]) = x[i] / (1 + exp(-x[i])) for i < n; y may equal x.
    // silu(-inf) = -0, silu(+inf) = +inf, NaN stays NaN.
    void (*silu_f32)(int64_t n, float * y, const float * x);
    // y[i] = silu(g[i]) * u[i] for i < n; y may equal g or u.
    void (*swiglu_f32)(int64_t n, float * y, const float * g, const float * u);
    // x[i] *= s for i < n, then returns sum x[i] * y[i] (the delta rule's decay and prediction).
    float (*scale_dot_f32)(int64_t n, float * x, float s, const float * y);
    // x[i] += a * y[i] for i < n, then returns sum x[i] * z[i] (the delta rule's write and read).
    float (*axpy_dot_f32)(int64_t n, float * x, float a, const float * y, const float * z);
    // C[m x n] += A[m x k] B[k x n], all row-major F32 with row strides ldc, lda, ldb (floats);
    // C overlaps neither A nor B (the chunked delta rule's small products: ops-ssm.c).
    void (*gemm_acc_f32)(int64_t m, int64_t n, int64_t k, float * C, int64_t ldc, const float * A, int64_t lda, const float * B,
                         int64_t ldb);
    // out[i] = y[i] + sum_k c[k] * b[k*ldb + i] for i < n: acc = y[i], then acc = fma(c[k], b, acc)
    // for k = 0..r-1 in order (the LoRA update's B half, ops-lora.c); out may equal y. b F32 or F16.
    void (*lora_axpy_f32)(int64_t n, float * out, const float * y, int r, const float * c, const float * b, int64_t ldb);
    void (*lora_axpy_f16)(int64_t n, float * out, const float * y, int r, const float * c, const ggml_fp16_t * b, int64_t ldb);
};

// The kernels of kernel set v (the portable ones where v has none or the CPU cannot run it).
const struct ggml_cpu_vec_kernels * ggml_cpu_vec_kernels_get(enum ggml_cpu_kernel_variant v);

// The kernels of the selected kernel set (GGML_CPU_VARIANT lowers it).
const struct ggml_cpu_vec_kernels * ggml_cpu_vec_kernels_selected(void);

void ggml_cpu_vec_init_generic(struct ggml_cpu_vec_kernels * k);
void ggml_cpu_vec_init_avx2(struct ggml_cpu_vec_kernels * k);
void ggml_cpu_vec_init_avx512(struct ggml_cpu_vec_kernels * k);

// Thread ith of nth's share [*e0, *e1) of the n elements of an elementwise op, the elements
// numbered row after row: nth near-equal ranges that start at multiples of GGML_CPU_EW_ALIGN.
static inline void ggml_cpu_ew_split(int64_t n, int ith, int nth, int64_t * e0, int64_t * e1) {
    const int64_t nb = (n + GGML_CPU_EW_ALIGN - 1) / GGML_CPU_EW_ALIGN;
    const int64_t per = nb / nth, rem = nb % nth;
    const int64_t b0 = ith * per + (ith < rem ? ith : rem);
    const int64_t b1 = b0 + per + (ith < rem ? 1 : 0);
    *e0 = b0 * GGML_CPU_EW_ALIGN < n ? b0 * GGML_CPU_EW_ALIGN : n;
    *e1 = b1 * GGML_CPU_EW_ALIGN < n ? b1 * GGML_CPU_EW_ALIGN : n;
}

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_VEC_H
