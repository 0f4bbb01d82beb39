// cpu-impl.h — the contract between the CPU graph executor (compute.c, threadpool.c),
// the op kernels (ops-*.c) and the per-type dot products (quants-*.c).
//
// Every kernel is called once per thread with the same dst; thread ith of nth handles its
// share of rows. Kernels never allocate: scratch space comes from params->wdata, sized by
// ggml_cpu_work_size() before the graph runs. A kernel that needs a phase boundary (e.g.
// quantize all of b, then multiply) calls ggml_cpu_barrier(params).
#ifndef GGML_CPU_IMPL_H
#define GGML_CPU_IMPL_H

#include "../ggml-impl.h"
#include "ggml-cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ggml_compute_params {
    int ith;                     // this thread's index, 0..nth-1
    int nth;                     // threads working on this node
    size_t wsize;                // bytes of wdata
    void * wdata;                // shared scratch for this node (all threads see the same)
    struct ggml_threadpool * tp; // for ggml_cpu_barrier
};

// Waits until all nth threads of the current node reach this point.
void ggml_cpu_barrier(const struct ggml_compute_params * params);
// Kernels call this (from any of their threads, then return) when they cannot compute dst,
// e.g. an unsupported type or layout, after logging why: ggml_graph_compute then stops after
// this node and returns GGML_STATUS_FAILED instead of succeeding with garbage.
void ggml_cpu_kernel_failed(const struct ggml_compute_params * params);

// Scratch bytes node needs when run on n_threads threads (0 if none).
size_t ggml_cpu_work_size(const struct ggml_tensor * node, int n_threads);
// Runs node's kernel for thread params->ith; returns false for an unsupported op/type.
bool ggml_cpu_compute_forward(const struct ggml_compute_params * params, struct ggml_tensor * node);
// Number of threads worth using for node (1 for tiny nodes).
int ggml_cpu_n_tasks(const struct ggml_tensor * node, int n_threads);
// Most threads node's kernel can keep busy (its independent rows/items), at most n_threads.
int ggml_cpu_n_tasks_max(const struct ggml_tensor * node, int n_threads);

// Dot product of n elements of x (type T) and y (type vec_dot_type of T), result in *s.
typedef void (*ggml_vec_dot_t)(int n, float * s, const void * x, const void * y);
// One row x against 4 rows of vec_dot_type: s + k*bs (bytes) = vec_dot(x, y + k*by) for k < 4,
// the same bits as 4 vec_dot calls (the row is decoded once for the 4).
typedef void (*ggml_vec_dot_x4_t)(int n, float * s, size_t bs, const void * x, const void * y, size_t by);

// CPU-side traits per type: the fast activation quantizer and the dot kernel.
struct ggml_type_traits_cpu {
    ggml_from_float_t from_float;   // fast quantizer for activations (F32 -> this type)
    ggml_vec_dot_t vec_dot;      // this type . vec_dot_type
    enum ggml_type vec_dot_type; // type b's rows are converted to before vec_dot
    ggml_vec_dot_x4_t vec_dot_x4;   // 4 columns at once with vec_dot's bits, or NULL
};

// CPU traits of type (zeroed struct with vec_dot NULL if the type has no CPU matmul).
const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type);

// CPU features detected at run time (compute.c): 1 if the CPU and OS support the extension
// and the GGML_CPU_VARIANT environment variable did not rule it out, else 0.
int ggml_cpu_has_avx2(void);        // AVX2 + FMA + F16C
int ggml_cpu_has_f16c(void);
int ggml_cpu_has_avx512(void);      // AVX-512 F + BW + VL + DQ

// Kernels, one per op (ops-<family>.c).
void ggml_compute_forward_dup(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_cpy(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_add(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_sub(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_mul(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_div(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_scale(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_rms_norm(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_norm(const struct ggml_compute_params * params, struct ggml_tensor * dst);
// Whether rms_norm node `norm` followed by `mul` (norm times a 1-D F32 weight row) can run fused.
bool ggml_cpu_rms_norm_mul_fusable(const struct ggml_tensor * norm, const struct ggml_tensor * mul);
// rms_norm(norm->src[0]) * weight into mul, bit-identical to the two kernels one after the other.
void ggml_compute_forward_rms_norm_mul(const struct ggml_compute_params * params, struct ggml_tensor * norm,
                                       struct ggml_tensor * mul);
void ggml_compute_forward_tanh(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_sigmoid(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_softplus(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_clamp(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_l2_norm(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_ssm_conv(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_gated_delta_net(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_lora_add(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_silu(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_gelu(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_swiglu(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_mul_mat(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_soft_max(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_rope(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_diag_mask_inf(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_get_rows(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_set_rows(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_sum_rows(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_argmax(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_concat(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_flash_attn_ext(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_argsort(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_top_k(const struct ggml_compute_params * params, struct ggml_tensor * dst);
void ggml_compute_forward_mul_mat_id(const struct ggml_compute_params * params, struct ggml_tensor * dst);
// Row converter from F32 to a vec_dot_type (NULL for F32: a plain copy), shared by the matmuls.
ggml_from_float_t ggml_cpu_mm_converter(enum ggml_type vdt);

// Work sizes of ops that need scratch (ops-matmul.c, ops-softmax.c, ops-attention.c).
size_t ggml_cpu_work_size_mul_mat(const struct ggml_tensor * dst, int n_threads);
size_t ggml_cpu_work_size_soft_max(const struct ggml_tensor * dst, int n_threads);
size_t ggml_cpu_work_size_flash_attn_ext(const struct ggml_tensor * dst, int n_threads);
size_t ggml_cpu_work_size_argsort(const struct ggml_tensor * dst, int n_threads);
size_t ggml_cpu_work_size_mul_mat_id(const struct ggml_tensor * dst, int n_threads);
size_t ggml_cpu_work_size_gated_delta_net(const struct ggml_tensor * dst, int n_threads);
size_t ggml_cpu_work_size_lora_add(const struct ggml_tensor * dst, int n_threads);

// Splits n items over nth threads: [*i0, *i1) for thread ith.
static inline void ggml_cpu_split(int64_t n, int ith, int nth, int64_t * i0, int64_t * i1) {
    const int64_t per = (n + nth - 1) / nth;
    *i0 = GGML_MIN(n, per * ith);
    *i1 = GGML_MIN(n, *i0 + per);
}

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_IMPL_H
