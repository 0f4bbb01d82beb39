// common.cuh — private header of the CUDA backend (libggml-cuda.so): the backend's state,
// the tensor descriptor kernels take by value, element loads/stores, the scratch pool and
// the entry points of each op family (one .cu file each). Not installed.
//
// The arithmetic contract with the CPU backend: offloaded layers give the CPU's results up to
// the order of float sums (not its bits), so a model's placement changes its logits only at
// rounding level. Quantized weights (mmq.cu, qdot.cuh) meet activations quantized exactly as the
// CPU quantizes them: the same type (Q8_1 per 32 elements for q4_K / q5_K / q6_K, as the CPU's
// GEMM since per-32 scales; Q8_K for q2_K / q3_K; the CPU's 16-bit activations for a Q8_0
// product asked for F32 precision, the lm head) and the same bytes, then integer dots per
// 32-element unit and the CPU GEMM's float operations per block. Float weights use unrounded
// F32 activations as the CPU's float tiles do: directly (mmv.cu, the F32 tiles), or on tensor
// cores split into F16 high and low parts (gemm.cu: about 22 bits; an activation above 65504
// overflows there). tests/test_cuda.py compares every placement with the CPU within twice the
// CPU's own spread between two float orders (GEMM on / off).
//
// Errors never abort: every CUDA call goes through cuda_ok(), which logs the failing call
// and its reason and returns false; the op launchers return false, and graph_compute turns
// that into GGML_STATUS_FAILED.
#pragma once

#include "../ggml-backend-impl.h"
#include "../ggml-impl.h"

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#define CUDA_NAME        "CUDA"
#define CUDA_MAX_DEVICES 16

// True if the call succeeded; otherwise logs `what` with CUDA's reason and clears the error.
bool cuda_ok(cudaError_t err, const char * what);
#define CUDA_TRY(call) cuda_ok((call), #call)

// A tensor as kernels see it: device address, sizes and byte strides, type.
struct cu_tensor {
    char * data;
    int64_t ne[4];
    int64_t nb[4];
    int type;
};

static inline cu_tensor cu_desc(const struct ggml_tensor * t) {
    cu_tensor d;
    d.data = (char *) t->data;
    for (int i = 0; i < 4; i++) {
        d.ne[i] = t->ne[i];
        d.nb[i] = (int64_t) t->nb[i];
    }
    d.type = (int) t->type;
    return d;
}

static __host__ __device__ inline int64_t cu_nelements(const cu_tensor & t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }

// Scratch memory of one backend: a bump allocator reset at each graph computation. Buffers
// outgrown during a computation are kept until its end (kernels already queued use them).
struct cuda_pool {
    char * base = nullptr;
    size_t cap = 0, used = 0;
    char * retired[16] = {};
    int n_retired = 0;
    bool frozen = false;   // during CUDA-graph capture: growing would be an error
};

// Replayable decode graph (see ggml-cuda.cu).
struct cuda_graph_state {
    cudaGraphExec_t exec = nullptr;
    uint64_t signature = 0;     // of the graph it was captured from
    int n_replays = 0;
    int n_failures = 0;         // of capture
    bool disabled = false;      // GGML_CUDA_GRAPHS=0, or capture failed for good
};

// One backend: a device and a stream.
struct cuda_backend_ctx {
    int device;
    char name[16];
    cudaStream_t stream;
    cuda_pool pool;
    cuda_graph_state graph;
    bool unchanged_next;        // the scheduler's promise for the next graph_compute
    const struct ggml_cgraph * unchanged_graph;
    int sm_count;
    int cc;
    int * err_host = nullptr;   // set by kernels that met bad input (mapped host memory), read after each sync
    int * err_dev = nullptr;    // the same word as kernels address it                     // compute capability * 10 + minor
};

// Scratch of `size` bytes for this computation (256-byte aligned); NULL (logged) on failure.
void * cuda_pool_alloc(cuda_backend_ctx * ctx, size_t size);
// Starts a computation's use of the pool (offset 0).
void cuda_pool_reset(cuda_backend_ctx * ctx);
// Frees the outgrown buffers (after the stream is idle).
void cuda_pool_release_retired(cuda_backend_ctx * ctx);
// Frees everything.
void cuda_pool_free(cuda_backend_ctx * ctx);

// ---- element access (F32 / F16 / BF16 / I32) ----

static __device__ __forceinline__ float cu_load_f(const char * p, int type) {
    switch (type) {
        case GGML_TYPE_F32: return *(const float *) p;
        case GGML_TYPE_F16: return __half2float(*(const __half *) p);
        case GGML_TYPE_BF16: return __bfloat162float(*(const __nv_bfloat16 *) p);
        case GGML_TYPE_I32: return (float) *(const int32_t *) p;
        default: return 0.0f;
    }
}

static __device__ __forceinline__ void cu_store_f(char * p, int type, float v) {
    switch (type) {
        case GGML_TYPE_F32: *(float *) p = v; break;
        case GGML_TYPE_F16: *(__half *) p = __float2half_rn(v); break;
        case GGML_TYPE_BF16: *(__nv_bfloat16 *) p = __float2bfloat16_rn(v); break;
        case GGML_TYPE_I32: *(int32_t *) p = (int32_t) v; break;
        default: break;
    }
}

// Coordinates of flat (row-major over ne) index i.
static __device__ __forceinline__ void cu_unflatten(const cu_tensor & t, int64_t i, int64_t & i0, int64_t & i1, int64_t & i2,
                                                    int64_t & i3) {
    i0 = i % t.ne[0];
    i /= t.ne[0];
    i1 = i % t.ne[1];
    i /= t.ne[1];
    i2 = i % t.ne[2];
    i3 = i / t.ne[2];
}

static __device__ __forceinline__ char * cu_ptr(const cu_tensor & t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

static inline bool cu_is_float(enum ggml_type t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16; }

// Grid size for n items of `per` per block (at least 1, capped at 2^31-1 blocks).
static inline unsigned cu_blocks(int64_t n, int per) {
    int64_t b = (n + per - 1) / per;
    if (b < 1) b = 1;
    if (b > 0x7fffffff) b = 0x7fffffff;
    return (unsigned) b;
}

// ---- op families: each launcher queues its kernels on ctx->stream; false (logged) on a
// failure found before launching. Supports-checks mirror them for supports_op. ----

// elementwise.cu: add/sub/mul/div, scale, silu, gelu, tanh, swiglu, diag_mask_inf, concat
bool cuda_op_binary(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_unary(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_swiglu(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_diag_mask_inf(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_concat(cuda_backend_ctx * ctx, struct ggml_tensor * dst);

// copy.cu: dup/cont/cpy (float conversions, same-type bytes, F32 -> Q8_0), get_rows, set_rows
bool cuda_op_cpy(cuda_backend_ctx * ctx, const struct ggml_tensor * src, struct ggml_tensor * dst);
bool cuda_op_get_rows(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_set_rows(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_supports_cpy(const struct ggml_tensor * src, const struct ggml_tensor * dst);
// Rows of a float tensor (any strides) to F16 rows of ld halfs, zero-padded from ne0 (helper for
// matmul); lo, if not NULL, receives the rounding remainders f16(x - f16(x)).
bool cuda_convert_to_f16(cuda_backend_ctx * ctx, const cu_tensor & src, __half * hi, __half * lo, int64_t ld);

// norm.cu: rms_norm, norm, soft_max, sum_rows, argmax
// mode 0: layer norm, 1: RMS norm, 2: L2 norm (x / max(sqrt(sum x^2), eps))
bool cuda_op_norm(cuda_backend_ctx * ctx, struct ggml_tensor * dst, int mode);
bool cuda_op_soft_max(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_sum_rows(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_argmax(cuda_backend_ctx * ctx, struct ggml_tensor * dst);

// ssm.cu: ssm_conv, gated_delta_net (F32; state size up to 256)
bool cuda_op_ssm_conv(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_op_gated_delta_net(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_supports_ssm(const struct ggml_tensor * op);

// rope.cu
bool cuda_op_rope(cuda_backend_ctx * ctx, struct ggml_tensor * dst);

// matmul.cu (+ mmv.cu, gemm.cu)
bool cuda_op_mul_mat(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_supports_mul_mat_type(enum ggml_type t);
// dst[m, n, i2, i3] = sum_k src0[k, m, i2/r2, i3/r3] * src1[k, n, i2, i3] for n < 8 (mmv.cu);
// src0 rows contiguous, src1 F32 with nb10 == 4, used as it is (as the CPU's float tiles).
bool cuda_mul_mat_vec(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                      struct ggml_tensor * dst);
// The same through F16 tensor cores (gemm.cu): src0 dequantized to F16 tiles, src1 split into
// F16 high and low parts (two products), so that it keeps about F32's precision.
bool cuda_mul_mat_gemm_f16(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                           struct ggml_tensor * dst);
// Quantized src0 with the CPU's arithmetic: activations quantized to the weight type's
// activation type, integer dots per 32-element unit (mmq.cu); any number of columns.
bool cuda_mul_mat_q(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                    struct ggml_tensor * dst);
bool cuda_mul_mat_q_supported(const struct ggml_tensor * src0, const struct ggml_tensor * src1);
// Any float src0 at any strides, F32 arithmetic (gemm.cu).
bool cuda_mul_mat_generic(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                          struct ggml_tensor * dst);
// Dequantizes rows of a row-contiguous src0 (any supported type) to F16 [rows, ld] with zero
// padding from ne0 to ld (dequant.cu).
bool cuda_dequant_rows_f16(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, __half * dst, int64_t ld);

// fattn.cu
bool cuda_op_flash_attn(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
// moe.cu: mul_mat_id (an id outside the experts raises ctx->err_dev), argsort and top_k
bool cuda_supports_mul_mat_id(const struct ggml_tensor * op);
bool cuda_op_mul_mat_id(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_supports_sort(const struct ggml_tensor * op);
bool cuda_op_sort(cuda_backend_ctx * ctx, struct ggml_tensor * dst);
bool cuda_supports_flash_attn(const struct ggml_tensor * dst);
