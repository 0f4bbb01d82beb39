// ops-unary.c — elementwise scale, silu, gelu (tanh approximation or exact erf), tanh, sigmoid,
// softplus, clamp and the fused swiglu.
//
// The elements, numbered row after row, are split over threads in ranges (ggml_cpu_ew_split),
// so a single long row (a decoded token's activations) is shared too; each thread walks its
// range row segment by row segment. F32 segments with unit stride run SIMD kernels (silu and
// swiglu from the selected kernel set, vec.h) or loops the compiler vectorizes (ggml_cpu_expf
// is branch-free); F16/BF16 or strided rows go through float loads/stores. Every element is
// computed the same way wherever the range boundaries fall: results do not depend on the
// thread count.
#include "ops-util.h"
#include "vec.h"

enum unary_op {
    UN_SCALE,
    UN_SILU,
    UN_GELU,
    UN_GELU_ERF,
    UN_TANH,
    UN_SIGMOID,
    UN_SOFTPLUS,
    UN_CLAMP
};

// torch's softplus (threshold 20): x itself where exp(x) would add nothing a float can hold.
static inline float unary_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// y[i] = f(x[i]); y may equal x (inplace).
static void unary_vec_f32(enum unary_op op, int64_t n, float * y, const float * x, float s, float s2) {
    switch (op) {
        case UN_CLAMP:
            for (int64_t i = 0; i < n; i++) y[i] = x[i] < s ? s : (x[i] > s2 ? s2 : x[i]);
            break;
        case UN_SCALE:
            for (int64_t i = 0; i < n; i++) y[i] = x[i] * s;
            break;
        case UN_SILU:
            for (int64_t i = 0; i < n; i++) y[i] = ggml_cpu_silu(x[i]);
            break;
        case UN_GELU:
            for (int64_t i = 0; i < n; i++) y[i] = ggml_cpu_gelu(x[i]);
            break;
        case UN_GELU_ERF:
            for (int64_t i = 0; i < n; i++) y[i] = ggml_cpu_gelu_erf(x[i]);
            break;
        case UN_TANH:
            for (int64_t i = 0; i < n; i++) y[i] = ggml_cpu_tanh(x[i]);
            break;
        case UN_SIGMOID:
            for (int64_t i = 0; i < n; i++) y[i] = ggml_cpu_sigmoid(x[i]);
            break;
        case UN_SOFTPLUS:
            for (int64_t i = 0; i < n; i++) y[i] = unary_softplus(x[i]);
            break;
    }
}

static inline float unary_apply(enum unary_op op, float x, float s, float s2) {
    switch (op) {
        case UN_CLAMP: return x < s ? s : (x > s2 ? s2 : x);
        case UN_SCALE: return x * s;
        case UN_SILU: return ggml_cpu_silu(x);
        case UN_GELU: return ggml_cpu_gelu(x);
        case UN_GELU_ERF: return ggml_cpu_gelu_erf(x);
        case UN_TANH: return ggml_cpu_tanh(x);
        case UN_SIGMOID: return ggml_cpu_sigmoid(x);
        case UN_SOFTPLUS: return unary_softplus(x);
    }
    return 0.0f;
}

static void unary_forward(const struct ggml_compute_params * params, struct ggml_tensor * dst, enum unary_op op, float s) {
    const float s2 = op == UN_CLAMP ? ggml_get_op_params_f32(dst, 1) : 0.0f;
    const struct ggml_tensor * src0 = dst->src[0];
    if (!ggml_cpu_is_float_type(src0->type) || !ggml_cpu_is_float_type(dst->type)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("%s: unsupported types %s -> %s\n", ggml_op_name(dst->op), ggml_type_name(src0->type),
                           ggml_type_name(dst->type));
        }
        return;
    }
    const bool fast =
        src0->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float);

    const struct ggml_cpu_vec_kernels * vk = ggml_cpu_vec_kernels_selected();

    int64_t e, e1, i0, n, i1, i2, i3;
    ggml_cpu_ew_split(ggml_nelements(dst), params->ith, params->nth, &e, &e1);
    while (ggml_cpu_ew_next(dst, &e, e1, &i0, &n, &i1, &i2, &i3)) {
        const char * x = ggml_cpu_ptr(src0, i0, i1, i2, i3);
        char * y = ggml_cpu_ptr(dst, i0, i1, i2, i3);
        if (fast && op == UN_SILU) {
            vk->silu_f32(n, (float *) y, (const float *) x);
        } else if (fast) {
            unary_vec_f32(op, n, (float *) y, (const float *) x, s, s2);
        } else {
            for (int64_t i = 0; i < n; i++) {
                const float v = ggml_cpu_load_f(x + i * src0->nb[0], src0->type);
                ggml_cpu_store_f(y + i * dst->nb[0], dst->type, unary_apply(op, v, s, s2));
            }
        }
    }
}

void ggml_compute_forward_scale(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    unary_forward(params, dst, UN_SCALE, ggml_get_op_params_f32(dst, 0));
}

void ggml_compute_forward_silu(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    unary_forward(params, dst, UN_SILU, 0.0f);
}

void ggml_compute_forward_gelu(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    unary_forward(params, dst, ggml_get_op_params_i32(dst, 0) == 1 ? UN_GELU_ERF : UN_GELU, 0.0f);
}

void ggml_compute_forward_tanh(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    unary_forward(params, dst, UN_TANH, 0.0f);
}

void ggml_compute_forward_sigmoid(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    unary_forward(params, dst, UN_SIGMOID, 0.0f);
}

void ggml_compute_forward_softplus(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    unary_forward(params, dst, UN_SOFTPLUS, 0.0f);
}

// dst = silu(gate) * up, where (gate, up) = (src0, src1), or the two halves of each src0 row
// along dim 0 when src1 is NULL.
void ggml_compute_forward_swiglu(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * src1 = dst->src[1];
    const struct ggml_tensor * up = src1 ? src1 : src0;
    if (!ggml_cpu_is_float_type(src0->type) || !ggml_cpu_is_float_type(up->type) || !ggml_cpu_is_float_type(dst->type)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("SWIGLU: unsupported types %s, %s -> %s\n", ggml_type_name(src0->type), ggml_type_name(up->type),
                           ggml_type_name(dst->type));
        }
        return;
    }
    const int64_t ne0 = dst->ne[0];
    // With one source, up starts half a row into src0's row.
    const size_t up_offs = src1 ? 0 : (size_t) ne0 * src0->nb[0];
    const bool fast = src0->type == GGML_TYPE_F32 && up->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 &&
        src0->nb[0] == sizeof(float) && up->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float);

    const struct ggml_cpu_vec_kernels * vk = ggml_cpu_vec_kernels_selected();

    int64_t e, e1, i0, n, i1, i2, i3;
    ggml_cpu_ew_split(ggml_nelements(dst), params->ith, params->nth, &e, &e1);
    while (ggml_cpu_ew_next(dst, &e, e1, &i0, &n, &i1, &i2, &i3)) {
        const char * g = ggml_cpu_ptr(src0, i0, i1, i2, i3);
        const char * u = ggml_cpu_ptr(up, i0, i1, i2, i3) + up_offs;
        char * y = ggml_cpu_ptr(dst, i0, i1, i2, i3);
        if (fast) {
            vk->swiglu_f32(n, (float *) y, (const float *) g, (const float *) u);
        } else {
            for (int64_t i = 0; i < n; i++) {
                const float gv = ggml_cpu_load_f(g + i * src0->nb[0], src0->type);
                const float uv = ggml_cpu_load_f(u + i * up->nb[0], up->type);
                ggml_cpu_store_f(y + i * dst->nb[0], dst->type, ggml_cpu_silu(gv) * uv);
            }
        }
    }
}

void ggml_compute_forward_clamp(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    unary_forward(params, dst, UN_CLAMP, ggml_get_op_params_f32(dst, 0));
}
