// vec-generic.c — portable activation row kernels, the LoRA axpy and the per-kernel-set tables (vec.h).
#include "vec.h"
#include "ops-util.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static void silu_f32_generic(int64_t n, float * y, const float * x) {
    for (int64_t i = 0; i < n; i++) y[i] = ggml_cpu_silu(x[i]);
}

static void swiglu_f32_generic(int64_t n, float * y, const float * g, const float * u) {
    for (int64_t i = 0; i < n; i++) y[i] = ggml_cpu_silu(g[i]) * u[i];
}

// Sum of x[i] * y[i] with GGML_CPU_RLANES independent partial sums (vectorizes without -ffast-math).
static float dot_f32_lanes(int64_t n, const float * restrict x, const float * restrict y) {
    float acc[GGML_CPU_RLANES] = { 0 };
    int64_t i = 0;
    for (; i + GGML_CPU_RLANES <= n; i += GGML_CPU_RLANES) {
        for (int j = 0; j < GGML_CPU_RLANES; j++) acc[j] += x[i + j] * y[i + j];
    }
    float s = 0.0f;
    for (int j = 0; j < GGML_CPU_RLANES; j++) s += acc[j];
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

static float scale_dot_f32_generic(int64_t n, float * x, float s, const float * y) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
    return dot_f32_lanes(n, x, y);
}

static float axpy_dot_f32_generic(int64_t n, float * x, float a, const float * y, const float * z) {
    for (int64_t i = 0; i < n; i++) x[i] += a * y[i];
    return dot_f32_lanes(n, x, z);
}

static void gemm_acc_f32_generic(int64_t m, int64_t n, int64_t k, float * C, int64_t ldc, const float * A, int64_t lda,
                                 const float * B, int64_t ldb) {
    for (int64_t i = 0; i < m; i++) {
        float * restrict c = C + i * ldc;
        for (int64_t p = 0; p < k; p++) {
            const float a = A[i * lda + p];
            const float * restrict b = B + p * ldb;
            for (int64_t j = 0; j < n; j++) c[j] += a * b[j];
        }
    }
}

// k outer, so the inner loops vectorize; each element still sees y, then one fmaf per k in order.
static void lora_axpy_f32_generic(int64_t n, float * out, const float * y, int r, const float * c, const float * b, int64_t ldb) {
    if (out != y) memcpy(out, y, (size_t) n * sizeof(float));
    for (int k = 0; k < r; k++) {
        const float * restrict bk = b + k * ldb;
        for (int64_t i = 0; i < n; i++) out[i] = fmaf(c[k], bk[i], out[i]);
    }
}

static void lora_axpy_f16_generic(int64_t n, float * out, const float * y, int r, const float * c, const ggml_fp16_t * b,
                                  int64_t ldb) {
    if (out != y) memcpy(out, y, (size_t) n * sizeof(float));
    for (int k = 0; k < r; k++) {
        const ggml_fp16_t * restrict bk = b + k * ldb;
        for (int64_t i = 0; i < n; i++) out[i] = fmaf(c[k], GGML_FP16_TO_FP32(bk[i]), out[i]);
    }
}

void ggml_cpu_vec_init_generic(struct ggml_cpu_vec_kernels * k) {
    k->silu_f32 = silu_f32_generic;
    k->swiglu_f32 = swiglu_f32_generic;
    k->scale_dot_f32 = scale_dot_f32_generic;
    k->axpy_dot_f32 = axpy_dot_f32_generic;
    k->gemm_acc_f32 = gemm_acc_f32_generic;
    k->lora_axpy_f32 = lora_axpy_f32_generic;
    k->lora_axpy_f16 = lora_axpy_f16_generic;
}

static struct ggml_cpu_vec_kernels vec_tables[GGML_CPU_KERNELS_COUNT];
static pthread_once_t vec_once = PTHREAD_ONCE_INIT;

static void vec_tables_init(void) {
    for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
        ggml_cpu_vec_init_generic(&vec_tables[v]);
    }
#if defined(__x86_64__) || defined(__i386__)
    // avx512 builds on avx2: what it leaves alone keeps the avx2 kernel; avxvnni is avx2 here
    if (ggml_cpu_kernel_variant_available(GGML_CPU_KERNELS_AVX2)) {
        ggml_cpu_vec_init_avx2(&vec_tables[GGML_CPU_KERNELS_AVX2]);
        ggml_cpu_vec_init_avx2(&vec_tables[GGML_CPU_KERNELS_AVXVNNI]);
        ggml_cpu_vec_init_avx2(&vec_tables[GGML_CPU_KERNELS_AVX512]);
    }
    if (ggml_cpu_kernel_variant_available(GGML_CPU_KERNELS_AVX512)) {
        ggml_cpu_vec_init_avx512(&vec_tables[GGML_CPU_KERNELS_AVX512]);
    }
#endif
}

const struct ggml_cpu_vec_kernels * ggml_cpu_vec_kernels_get(enum ggml_cpu_kernel_variant v) {
    pthread_once(&vec_once, vec_tables_init);
    if ((int) v < 0 || v >= GGML_CPU_KERNELS_COUNT || !ggml_cpu_kernel_variant_available(v)) {
        v = GGML_CPU_KERNELS_PORTABLE;
    }
    return &vec_tables[v];
}

const struct ggml_cpu_vec_kernels * ggml_cpu_vec_kernels_selected(void) {
    return ggml_cpu_vec_kernels_get(ggml_cpu_kernel_variant_selected());
}
