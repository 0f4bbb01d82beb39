// matmul.cu — the choice of matrix-product kernel per node:
//   quantized src0: mmq.cu, the CPU's arithmetic (activations quantized as the CPU does, integer
//     dots per block), so offloaded layers agree with CPU ones to float-rounding level; types
//     without a unit dot, or rows that do not hold whole activation blocks: dequantized F16
//     tiles through tensor cores (gemm.cu);
//   float src0, up to 8 columns, rows contiguous, src1 unit stride: mmv.cu (b used as it is, as
//     the CPU's float tiles use it);
//   F16 src0 otherwise: tensor cores (b split into F16 high and low parts: about F32's precision);
//   anything else (F32 / BF16 weights, strided views such as a transposed V): F32 tiles.
#include "common.cuh"
#include "quants.cuh"

bool cuda_supports_mul_mat_type(enum ggml_type t) { return cu_type_has_deq8(t); }

bool cuda_op_mul_mat(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * s0 = dst->src[0];
    const struct ggml_tensor * s1 = dst->src[1];
    const bool rows = s0->nb[0] == ggml_type_size(s0->type);
    if (ggml_is_quantized(s0->type) && cuda_mul_mat_q_supported(s0, s1)) {
        return cuda_mul_mat_q(ctx, s0, s1, dst);
    }
    if (rows && s1->nb[0] == sizeof(float) && s1->ne[1] <= 8 && s1->ne[2] * s1->ne[3] <= 65535) {
        return cuda_mul_mat_vec(ctx, s0, s1, dst);
    }
    if (rows && (ggml_is_quantized(s0->type) || s0->type == GGML_TYPE_F16)) {
        return cuda_mul_mat_gemm_f16(ctx, s0, s1, dst);
    }
    if (ggml_is_quantized(s0->type)) {
        GGML_LOG_ERROR("CUDA: mul_mat: quantized %s with strided rows is not supported", ggml_type_name(s0->type));
        return false;
    }
    return cuda_mul_mat_generic(ctx, s0, s1, dst);
}
