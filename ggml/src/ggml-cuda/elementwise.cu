// elementwise.cu — one thread per destination element, any strides and float types:
// add/sub/mul/div (src1 repeated over src0: index modulo its sizes), scale, silu, gelu, tanh, sigmoid, softplus,
// swiglu (split or halves of one row), diag_mask_inf and concat. Each element is read before
// it is written at the same place, so inplace nodes (dst viewing src0) are safe.
#include "common.cuh"

enum {
    BIN_ADD,
    BIN_SUB,
    BIN_MUL,
    BIN_DIV
};
enum {
    UN_SCALE,
    UN_SILU,
    UN_GELU,
    UN_TANH,
    UN_SIGMOID,
    UN_SOFTPLUS,
    UN_CLAMP
};

static __global__ void k_binary(cu_tensor a, cu_tensor b, cu_tensor d, int op, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        int64_t i0, i1, i2, i3;
        cu_unflatten(d, i, i0, i1, i2, i3);
        const float x = cu_load_f(cu_ptr(a, i0, i1, i2, i3), a.type);
        const float y = cu_load_f(cu_ptr(b, i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]), b.type);
        float r;
        switch (op) {
            case BIN_ADD: r = x + y; break;
            case BIN_SUB: r = x - y; break;
            case BIN_MUL: r = x * y; break;
            default: r = x / y; break;
        }
        cu_store_f(cu_ptr(d, i0, i1, i2, i3), d.type, r);
    }
}

static __device__ __forceinline__ float cu_silu(float x) {
    // the limit at -inf is -0 (x / (1 + e^-x) alone is -inf/inf = NaN)
    return x == -INFINITY ? -0.0f : x / (1.0f + expf(-x));
}

static __device__ __forceinline__ float cu_gelu(float x) {
    const float k = 0.79788456080286535588f;   // sqrt(2/pi)
    const float u = k * x * (1.0f + 0.044715f * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

static __global__ void k_unary(cu_tensor a, cu_tensor d, int op, float s, float s2, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        int64_t i0, i1, i2, i3;
        cu_unflatten(d, i, i0, i1, i2, i3);
        const float x = cu_load_f(cu_ptr(a, i0, i1, i2, i3), a.type);
        // tanhf: CUDA's is within 2 ulp, NaN / +-inf / -0 as C's (the tests' tanh tolerances)
        const float r = op == UN_SCALE ? x * s
            : op == UN_SILU            ? cu_silu(x)
            : op == UN_TANH            ? tanhf(x)
            : op == UN_SIGMOID         ? 1.0f / (1.0f + expf(-x))
            : op == UN_SOFTPLUS        ? (x > 20.0f ? x : log1pf(expf(x)))
            : op == UN_CLAMP           ? (x < s ? s : (x > s2 ? s2 : x))
                                       : cu_gelu(x);
        cu_store_f(cu_ptr(d, i0, i1, i2, i3), d.type, r);
    }
}

static __global__ void k_swiglu(cu_tensor g, cu_tensor u, int64_t up_offs, cu_tensor d, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        int64_t i0, i1, i2, i3;
        cu_unflatten(d, i, i0, i1, i2, i3);
        const float gv = cu_load_f(cu_ptr(g, i0, i1, i2, i3), g.type);
        const float uv = cu_load_f(cu_ptr(u, i0, i1, i2, i3) + up_offs, u.type);
        cu_store_f(cu_ptr(d, i0, i1, i2, i3), d.type, cu_silu(gv) * uv);
    }
}

static __global__ void k_diag_mask_inf(cu_tensor a, cu_tensor d, int64_t n_past, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        int64_t i0, i1, i2, i3;
        cu_unflatten(d, i, i0, i1, i2, i3);
        const float v = i0 > n_past + i1 ? -INFINITY : cu_load_f(cu_ptr(a, i0, i1, i2, i3), a.type);
        cu_store_f(cu_ptr(d, i0, i1, i2, i3), d.type, v);
    }
}

// same: copy type-size bytes (any non-block type); else convert through float
static __global__ void k_concat(cu_tensor a, cu_tensor b, cu_tensor d, int dim, bool same, int ts, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        int64_t k[4];
        cu_unflatten(d, i, k[0], k[1], k[2], k[3]);
        char * pd = cu_ptr(d, k[0], k[1], k[2], k[3]);
        const cu_tensor * s = &a;
        if (k[dim] >= a.ne[dim]) {
            s = &b;
            k[dim] -= a.ne[dim];
        }
        const char * ps = cu_ptr(*s, k[0], k[1], k[2], k[3]);
        if (same) {
            for (int c = 0; c < ts; c++) pd[c] = ps[c];
        } else {
            cu_store_f(pd, d.type, cu_load_f(ps, s->type));
        }
    }
}

static unsigned ew_grid(int64_t n) {
    const int64_t b = (n + 255) / 256;
    return (unsigned) (b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

bool cuda_op_binary(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const int op = dst->op == GGML_OP_ADD ? BIN_ADD
        : dst->op == GGML_OP_SUB          ? BIN_SUB
        : dst->op == GGML_OP_MUL          ? BIN_MUL
                                          : BIN_DIV;
    const int64_t n = ggml_nelements(dst);
    k_binary<<<ew_grid(n), 256, 0, ctx->stream>>>(cu_desc(dst->src[0]), cu_desc(dst->src[1]), cu_desc(dst), op, n);
    return true;
}

bool cuda_op_unary(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const int op = dst->op == GGML_OP_SCALE ? UN_SCALE
        : dst->op == GGML_OP_SILU           ? UN_SILU
        : dst->op == GGML_OP_TANH           ? UN_TANH
        : dst->op == GGML_OP_SIGMOID        ? UN_SIGMOID
        : dst->op == GGML_OP_SOFTPLUS       ? UN_SOFTPLUS
        : dst->op == GGML_OP_CLAMP          ? UN_CLAMP
                                            : UN_GELU;
    const float s = op == UN_SCALE || op == UN_CLAMP ? ggml_get_op_params_f32(dst, 0) : 0.0f;
    const float s2 = op == UN_CLAMP ? ggml_get_op_params_f32(dst, 1) : 0.0f;
    const int64_t n = ggml_nelements(dst);
    k_unary<<<ew_grid(n), 256, 0, ctx->stream>>>(cu_desc(dst->src[0]), cu_desc(dst), op, s, s2, n);
    return true;
}

bool cuda_op_swiglu(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * g = dst->src[0];
    const struct ggml_tensor * u = dst->src[1] ? dst->src[1] : g;
    // with one source, up starts half a row into the gate's row
    const int64_t up_offs = dst->src[1] ? 0 : dst->ne[0] * (int64_t) g->nb[0];
    const int64_t n = ggml_nelements(dst);
    k_swiglu<<<ew_grid(n), 256, 0, ctx->stream>>>(cu_desc(g), cu_desc(u), up_offs, cu_desc(dst), n);
    return true;
}

bool cuda_op_diag_mask_inf(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const int64_t n = ggml_nelements(dst);
    k_diag_mask_inf<<<ew_grid(n), 256, 0, ctx->stream>>>(cu_desc(dst->src[0]), cu_desc(dst), ggml_get_op_params_i32(dst, 0), n);
    return true;
}

bool cuda_op_concat(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const bool same = a->type == dst->type && b->type == dst->type;
    const int64_t n = ggml_nelements(dst);
    k_concat<<<ew_grid(n), 256, 0, ctx->stream>>>(cu_desc(a), cu_desc(b), cu_desc(dst), ggml_get_op_params_i32(dst, 0), same,
                                                  (int) ggml_type_size(dst->type), n);
    return true;
}
