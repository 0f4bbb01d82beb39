// ggml-fp16.c — exported half / bfloat16 conversions. Scalar code is the inline reference in
// ggml-impl.h; rows take the F16C path (ggml-fp16-avx2.c) when the CPU has it.
#include "ggml-impl.h"
#include "ggml-cpu/cpu-impl.h"

float ggml_fp16_to_fp32(ggml_fp16_t x) { return ggml_compute_fp16_to_fp32(x); }

ggml_fp16_t ggml_fp32_to_fp16(float x) { return ggml_compute_fp32_to_fp16(x); }

float ggml_bf16_to_fp32(ggml_bf16_t x) { return ggml_compute_bf16_to_fp32(x); }

ggml_bf16_t ggml_fp32_to_bf16(float x) { return ggml_compute_fp32_to_bf16(x); }

#if defined(__x86_64__) || defined(_M_X64)
// F16C row kernels (ggml-fp16-avx2.c); they return how many leading elements they converted.
int64_t ggml_fp16_to_fp32_row_f16c(const ggml_fp16_t * x, float * y, int64_t n);
int64_t ggml_fp32_to_fp16_row_f16c(const float * x, ggml_fp16_t * y, int64_t n);
#define GGML_FP16_HAVE_F16C 1
#else
#define GGML_FP16_HAVE_F16C 0
#endif

void ggml_fp16_to_fp32_row(const ggml_fp16_t * x, float * y, int64_t n) {
    int64_t i = 0;
#if GGML_FP16_HAVE_F16C
    if (n >= 8 && ggml_cpu_has_f16c()) {
        i = ggml_fp16_to_fp32_row_f16c(x, y, n);
    }
#endif
    for (; i < n; i++) {
        y[i] = ggml_compute_fp16_to_fp32(x[i]);
    }
}

void ggml_fp32_to_fp16_row(const float * x, ggml_fp16_t * y, int64_t n) {
    int64_t i = 0;
#if GGML_FP16_HAVE_F16C
    if (n >= 8 && ggml_cpu_has_f16c()) {
        i = ggml_fp32_to_fp16_row_f16c(x, y, n);
    }
#endif
    for (; i < n; i++) {
        y[i] = ggml_compute_fp32_to_fp16(x[i]);
    }
}

void ggml_bf16_to_fp32_row(const ggml_bf16_t * x, float * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = ggml_compute_bf16_to_fp32(x[i]);
    }
}

void ggml_fp32_to_bf16_row(const float * x, ggml_bf16_t * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = ggml_compute_fp32_to_bf16(x[i]);
    }
}
