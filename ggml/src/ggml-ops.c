// ggml-ops.c — op constructors: validate shapes and types, then record the op, its sources and
// its parameters (layouts documented at the top of ggml-impl.h) on a new node. Nothing is
// computed here; a bad input returns NULL with a log line naming the op and the shapes.
#include "ggml-core.h"

#include <stdio.h>

#define DESC(t, buf) ggml_tensor_desc((t), (buf), sizeof(buf))

// Logs "<op>: <why>: a=<desc> b=<desc>" and returns NULL.
static struct ggml_tensor * ggml_op_fail(const char * op, const char * why, const struct ggml_tensor * a,
                                         const struct ggml_tensor * b) {
    char da[GGML_TENSOR_DESC_SIZE], db[GGML_TENSOR_DESC_SIZE];
    if (b) {
        GGML_LOG_ERROR("%s: %s: a = %s, b = %s", op, why, DESC(a, da), DESC(b, db));
    } else {
        GGML_LOG_ERROR("%s: %s: a = %s", op, why, DESC(a, da));
    }
    return NULL;
}

static bool ggml_is_float_type(enum ggml_type t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16; }

// New node: a fresh tensor of `type`/`ne`, or (inplace) a view of a with a's shape.
static struct ggml_tensor * ggml_new_node(struct ggml_context * ctx, enum ggml_op op, struct ggml_tensor * a, bool inplace,
                                          enum ggml_type type, const int64_t * ne) {
    struct ggml_tensor * t = inplace ? ggml_view_tensor(ctx, a) : ggml_new_tensor_impl(ctx, type, GGML_MAX_DIMS, ne, NULL, 0);
    if (!t) {
        return NULL;
    }
    t->op = op;
    t->src[0] = a;
    if (inplace) {
        ggml_format_name(t, "%s (inplace)", a->name);
    } else {
        t->name[0] = '\0';
    }
    return t;
}

// Node with a's type and shape.
static struct ggml_tensor * ggml_new_node_like(struct ggml_context * ctx, enum ggml_op op, struct ggml_tensor * a, bool inplace) {
    return ggml_new_node(ctx, op, a, inplace, a->type, a->ne);
}

// ---- copies ----

struct ggml_tensor * ggml_dup(struct ggml_context * ctx, struct ggml_tensor * a) {
    if (!a) {
        return ggml_op_fail("ggml_dup", "NULL input", a, NULL);
    }
    return ggml_new_node_like(ctx, GGML_OP_DUP, a, false);
}

struct ggml_tensor * ggml_cont(struct ggml_context * ctx, struct ggml_tensor * a) {
    if (!a) {
        return ggml_op_fail("ggml_cont", "NULL input", a, NULL);
    }
    if (ggml_is_quantized(a->type) && !ggml_is_contiguous(a)) {
        return ggml_op_fail("ggml_cont", "a strided quantized tensor cannot be made contiguous", a, NULL);
    }
    return ggml_new_node_like(ctx, GGML_OP_CONT, a, false);
}

struct ggml_tensor * ggml_cpy(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    if (!a || !b) {
        return ggml_op_fail("ggml_cpy", "NULL input", a, b);
    }
    if (ggml_nelements(a) != ggml_nelements(b)) {
        return ggml_op_fail("ggml_cpy", "element counts differ", a, b);
    }
    if (ggml_is_quantized(a->type) && a->type != b->type) {
        return ggml_op_fail("ggml_cpy", "a quantized source can only be copied to its own type", a, b);
    }
    if (ggml_is_quantized(b->type) && a->type != b->type) {
        const struct ggml_type_traits * tt = ggml_get_type_traits(b->type);
        if (a->type != GGML_TYPE_F32 || !tt || !tt->from_float_ref) {
            return ggml_op_fail("ggml_cpy", "quantizing needs an F32 source and a type with a quantizer", a, b);
        }
        if (!ggml_is_contiguous(b)) {
            return ggml_op_fail("ggml_cpy", "a quantized destination must be contiguous", a, b);
        }
    }
    struct ggml_tensor * t = ggml_view_tensor(ctx, b);
    if (!t) {
        return NULL;
    }
    t->op = GGML_OP_CPY;
    t->src[0] = a;
    t->src[1] = b;
    if (b->name[0]) {
        ggml_format_name(t, "%s (copy of %s)", b->name, a->name);
    } else {
        ggml_format_name(t, "%s (copy)", a->name);
    }
    return t;
}

// ---- elementwise binary ----

static struct ggml_tensor * ggml_binary_impl(struct ggml_context * ctx, enum ggml_op op, const char * name,
                                             struct ggml_tensor * a, struct ggml_tensor * b, bool inplace) {
    if (!a || !b) {
        return ggml_op_fail(name, "NULL input", a, b);
    }
    if (!ggml_is_float_type(a->type) || !ggml_is_float_type(b->type)) {
        return ggml_op_fail(name, "a and b must be F32, F16 or BF16", a, b);
    }
    if (!ggml_can_repeat(b, a)) {
        return ggml_op_fail(name, "b cannot be broadcast onto a (each a->ne[i] must be a multiple of b->ne[i])", a, b);
    }
    // Result has a's type and shape (ggml's convention); b is converted per element.
    struct ggml_tensor * t = ggml_new_node_like(ctx, op, a, inplace);
    if (t) {
        t->src[1] = b;
    }
    return t;
}

struct ggml_tensor * ggml_add(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_ADD, "ggml_add", a, b, false);
}
struct ggml_tensor * ggml_add_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_ADD, "ggml_add_inplace", a, b, true);
}
struct ggml_tensor * ggml_sub(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_SUB, "ggml_sub", a, b, false);
}
struct ggml_tensor * ggml_sub_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_SUB, "ggml_sub_inplace", a, b, true);
}
struct ggml_tensor * ggml_mul(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_MUL, "ggml_mul", a, b, false);
}
struct ggml_tensor * ggml_mul_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_MUL, "ggml_mul_inplace", a, b, true);
}
struct ggml_tensor * ggml_div(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_DIV, "ggml_div", a, b, false);
}
struct ggml_tensor * ggml_div_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return ggml_binary_impl(ctx, GGML_OP_DIV, "ggml_div_inplace", a, b, true);
}

// ---- unary and row-wise ----

// Checks a is non-NULL F32, F16 or BF16 (the kernels load and store those as floats);
// logs under `name` otherwise.
static bool ggml_check_float(const char * name, const struct ggml_tensor * a) {
    if (!a) {
        ggml_op_fail(name, "NULL input", a, NULL);
        return false;
    }
    if (!ggml_is_float_type(a->type)) {
        ggml_op_fail(name, "input must be F32, F16 or BF16", a, NULL);
        return false;
    }
    return true;
}

static struct ggml_tensor * ggml_scale_impl(struct ggml_context * ctx, struct ggml_tensor * a, float s, bool inplace) {
    if (!ggml_check_float(inplace ? "ggml_scale_inplace" : "ggml_scale", a)) {
        return NULL;
    }
    // Result has a's type; the product is formed in F32 and rounded once.
    struct ggml_tensor * t = ggml_new_node_like(ctx, GGML_OP_SCALE, a, inplace);
    if (t) {
        ggml_set_op_params_f32(t, 0, s);
    }
    return t;
}

struct ggml_tensor * ggml_scale(struct ggml_context * ctx, struct ggml_tensor * a, float s) {
    return ggml_scale_impl(ctx, a, s, false);
}
struct ggml_tensor * ggml_scale_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float s) {
    return ggml_scale_impl(ctx, a, s, true);
}

static struct ggml_tensor * ggml_norm_impl(struct ggml_context * ctx, enum ggml_op op, const char * name, struct ggml_tensor * a,
                                           float eps, bool inplace) {
    if (!ggml_check_float(name, a)) {
        return NULL;
    }
    if (!(eps >= 0.0f) || isinf(eps)) {
        GGML_LOG_ERROR("%s: eps %g must be finite and >= 0", name, (double) eps);
        return NULL;
    }
    // Result has a's type; the row statistics are accumulated in F32/F64 whatever the type.
    struct ggml_tensor * t = ggml_new_node_like(ctx, op, a, inplace);
    if (t) {
        ggml_set_op_params_f32(t, 0, eps);
    }
    return t;
}

struct ggml_tensor * ggml_rms_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    return ggml_norm_impl(ctx, GGML_OP_RMS_NORM, "ggml_rms_norm", a, eps, false);
}
struct ggml_tensor * ggml_rms_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    return ggml_norm_impl(ctx, GGML_OP_RMS_NORM, "ggml_rms_norm_inplace", a, eps, true);
}
struct ggml_tensor * ggml_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    return ggml_norm_impl(ctx, GGML_OP_NORM, "ggml_norm", a, eps, false);
}

static struct ggml_tensor * ggml_unary_impl(struct ggml_context * ctx, enum ggml_op op, const char * name, struct ggml_tensor * a,
                                            bool inplace) {
    if (!ggml_check_float(name, a)) {
        return NULL;
    }
    // Result has a's type (F32 math, one rounding per element for F16/BF16).
    return ggml_new_node_like(ctx, op, a, inplace);
}

struct ggml_tensor * ggml_silu(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_SILU, "ggml_silu", a, false);
}
struct ggml_tensor * ggml_silu_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_SILU, "ggml_silu_inplace", a, true);
}
struct ggml_tensor * ggml_gelu(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_GELU, "ggml_gelu", a, false);
}
struct ggml_tensor * ggml_gelu_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_GELU, "ggml_gelu_inplace", a, true);
}
struct ggml_tensor * ggml_gelu_erf(struct ggml_context * ctx, struct ggml_tensor * a) {
    struct ggml_tensor * t = ggml_unary_impl(ctx, GGML_OP_GELU, "ggml_gelu_erf", a, false);
    if (t != NULL) {
        ggml_set_op_params_i32(t, 0, 1);
    }
    return t;
}

struct ggml_tensor * ggml_tanh(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_TANH, "ggml_tanh", a, false);
}
struct ggml_tensor * ggml_tanh_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_TANH, "ggml_tanh_inplace", a, true);
}

struct ggml_tensor * ggml_sigmoid(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_SIGMOID, "ggml_sigmoid", a, false);
}
struct ggml_tensor * ggml_sigmoid_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_SIGMOID, "ggml_sigmoid_inplace", a, true);
}
struct ggml_tensor * ggml_clamp(struct ggml_context * ctx, struct ggml_tensor * a, float lo, float hi) {
    if (!ggml_check_float("ggml_clamp", a)) {
        return NULL;
    }
    if (isnan(lo) || isnan(hi) || lo > hi) {
        GGML_LOG_ERROR("ggml_clamp: bounds [%g, %g] must be ordered numbers", (double) lo, (double) hi);
        return NULL;
    }
    struct ggml_tensor * t = ggml_new_node_like(ctx, GGML_OP_CLAMP, a, false);
    if (t) {
        ggml_set_op_params_f32(t, 0, lo);
        ggml_set_op_params_f32(t, 1, hi);
    }
    return t;
}
struct ggml_tensor * ggml_softplus(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_SOFTPLUS, "ggml_softplus", a, false);
}
struct ggml_tensor * ggml_softplus_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_unary_impl(ctx, GGML_OP_SOFTPLUS, "ggml_softplus_inplace", a, true);
}
struct ggml_tensor * ggml_l2_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    return ggml_norm_impl(ctx, GGML_OP_L2_NORM, "ggml_l2_norm", a, eps, false);
}
struct ggml_tensor * ggml_l2_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    return ggml_norm_impl(ctx, GGML_OP_L2_NORM, "ggml_l2_norm_inplace", a, eps, true);
}

// ---- recurrent (state-space / linear attention) ----

struct ggml_tensor * ggml_ssm_conv(struct ggml_context * ctx, struct ggml_tensor * sx, struct ggml_tensor * c) {
    if (!sx || !c) {
        return ggml_op_fail("ggml_ssm_conv", "NULL input", sx, c);
    }
    if (sx->type != GGML_TYPE_F32 || (c->type != GGML_TYPE_F32 && c->type != GGML_TYPE_F16)) {
        return ggml_op_fail("ggml_ssm_conv", "sx must be F32, c F32 or F16", sx, c);
    }
    const int64_t d_conv = c->ne[0], d_inner = c->ne[1];
    if (d_conv < 1 || c->ne[2] != 1 || c->ne[3] != 1 || sx->ne[3] != 1 || sx->ne[1] != d_inner || sx->ne[0] < d_conv) {
        return ggml_op_fail("ggml_ssm_conv", "shapes must be sx [d_conv-1+n_t, d_inner, n_s], c [d_conv, d_inner], n_t >= 1", sx,
                            c);
    }
    if (c->nb[0] != ggml_type_size(c->type)) {
        return ggml_op_fail("ggml_ssm_conv", "c must have contiguous rows", sx, c);
    }
    const int64_t ne[4] = { d_inner, sx->ne[0] - d_conv + 1, sx->ne[2], 1 };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_SSM_CONV, sx, false, GGML_TYPE_F32, ne);
    if (t) {
        t->src[1] = c;
    }
    return t;
}

struct ggml_tensor * ggml_gated_delta_net(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                          struct ggml_tensor * v, struct ggml_tensor * g, struct ggml_tensor * beta,
                                          struct ggml_tensor * state, int64_t K) {
    const char * name = "ggml_gated_delta_net";
    if (!q || !k || !v || !g || !beta || !state) {
        return ggml_op_fail(name, "NULL input", q, v);
    }
    const struct ggml_tensor * all[6] = { q, k, v, g, beta, state };
    for (int i = 0; i < 6; i++) {
        if (all[i]->type != GGML_TYPE_F32 || all[i]->nb[0] != sizeof(float)) {
            return ggml_op_fail(name, "all inputs must be F32 with contiguous rows", all[i], NULL);
        }
    }
    const int64_t S = v->ne[0], H = v->ne[1], n_t = v->ne[2], n_s = v->ne[3];
    if (q->ne[0] != S || !ggml_are_same_shape(q, k) || q->ne[1] < 1 || H % q->ne[1] != 0 || q->ne[2] != n_t || q->ne[3] != n_s) {
        return ggml_op_fail(name, "q, k must be [S, H_k, n_t, n_s] with H % H_k == 0 (v [S, H, n_t, n_s])", q, v);
    }
    if ((g->ne[0] != 1 && g->ne[0] != S) || g->ne[1] != H || g->ne[2] != n_t || g->ne[3] != n_s) {
        return ggml_op_fail(name, "g must be [1 or S, H, n_t, n_s]", g, v);
    }
    if (beta->ne[0] != 1 || beta->ne[1] != H || beta->ne[2] != n_t || beta->ne[3] != n_s) {
        return ggml_op_fail(name, "beta must be [1, H, n_t, n_s]", beta, v);
    }
    if (state->ne[0] != S || state->ne[1] != S || state->ne[2] != H || state->ne[3] != n_s || !ggml_is_contiguous(state)) {
        return ggml_op_fail(name, "state must be contiguous [S, S, H, n_s]", state, v);
    }
    if (K < 1 || K > INT32_MAX / 2) {
        return ggml_op_fail(name, "K (state snapshots) must be >= 1", state, NULL);
    }
    const int64_t ne[4] = { S * H, n_t * n_s + K * S * n_s, 1, 1 };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_GATED_DELTA_NET, q, false, GGML_TYPE_F32, ne);
    if (t) {
        t->src[1] = k;
        t->src[2] = v;
        t->src[3] = g;
        t->src[4] = beta;
        t->src[5] = state;
        ggml_set_op_params_i32(t, 0, (int32_t) K);
    }
    return t;
}

struct ggml_tensor * ggml_gated_delta_net_chunked(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                                  struct ggml_tensor * v, struct ggml_tensor * g, struct ggml_tensor * beta,
                                                  struct ggml_tensor * state, int64_t chunk) {
    if (chunk < 1 || chunk > 256) {
        return ggml_op_fail("ggml_gated_delta_net_chunked", "chunk must be in [1, 256]", v, NULL);
    }
    struct ggml_tensor * t = ggml_gated_delta_net(ctx, q, k, v, g, beta, state, 1);
    if (t) {
        ggml_set_op_params_i32(t, 1, (int32_t) chunk);
    }
    return t;
}

struct ggml_tensor * ggml_swiglu_split(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    if (!a || !b) {
        return ggml_op_fail("ggml_swiglu_split", "NULL input", a, b);
    }
    if (!ggml_is_float_type(a->type) || !ggml_is_float_type(b->type)) {
        return ggml_op_fail("ggml_swiglu_split", "inputs must be F32, F16 or BF16", a, b);
    }
    if (!ggml_are_same_shape(a, b)) {
        return ggml_op_fail("ggml_swiglu_split", "gate and up must have the same shape", a, b);
    }
    // Result has the gate a's type; up b may be of another float type.
    struct ggml_tensor * t = ggml_new_node_like(ctx, GGML_OP_SWIGLU, a, false);
    if (t) {
        t->src[1] = b;
    }
    return t;
}

struct ggml_tensor * ggml_swiglu(struct ggml_context * ctx, struct ggml_tensor * a) {
    if (!ggml_check_float("ggml_swiglu", a)) {
        return NULL;
    }
    if (a->ne[0] % 2 != 0) {
        return ggml_op_fail("ggml_swiglu", "ne[0] must be even (gate and up halves)", a, NULL);
    }
    // Result has a's type, half its rows' length.
    const int64_t ne[4] = { a->ne[0] / 2, a->ne[1], a->ne[2], a->ne[3] };
    return ggml_new_node(ctx, GGML_OP_SWIGLU, a, false, a->type, ne);
}

// ---- matrix product ----

struct ggml_tensor * ggml_mul_mat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    if (!a || !b) {
        return ggml_op_fail("ggml_mul_mat", "NULL input", a, b);
    }
    if (b->type != GGML_TYPE_F32) {
        return ggml_op_fail("ggml_mul_mat", "b must be F32", a, b);
    }
    const struct ggml_type_traits * tt = ggml_get_type_traits(a->type);
    if (!tt || (!ggml_is_float_type(a->type) && !tt->is_quantized)) {
        return ggml_op_fail("ggml_mul_mat", "a must be F32, F16, BF16 or quantized", a, b);
    }
    if (a->ne[0] != b->ne[0]) {
        return ggml_op_fail("ggml_mul_mat", "a->ne[0] (K) must equal b->ne[0]", a, b);
    }
    if (a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) {
        return ggml_op_fail("ggml_mul_mat", "b->ne[2..3] must be multiples of a->ne[2..3]", a, b);
    }
    if (ggml_is_transposed(a)) {
        return ggml_op_fail("ggml_mul_mat", "a must not be transposed (use ggml_cont first)", a, b);
    }
    if (tt->is_quantized && a->nb[0] != tt->type_size) {
        return ggml_op_fail("ggml_mul_mat", "a quantized a must have contiguous rows", a, b);
    }
    const int64_t ne[4] = { a->ne[1], b->ne[1], b->ne[2], b->ne[3] };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_MUL_MAT, a, false, GGML_TYPE_F32, ne);
    if (t) {
        t->src[1] = b;
    }
    return t;
}

void ggml_mul_mat_set_prec(struct ggml_tensor * a, enum ggml_prec prec) {
    if (a != NULL && a->op == GGML_OP_MUL_MAT) a->op_params[0] = (int32_t) prec;
}

// ---- softmax and masks ----

static struct ggml_tensor * ggml_soft_max_impl(struct ggml_context * ctx, const char * name, struct ggml_tensor * a,
                                               struct ggml_tensor * mask, float scale, float max_bias, bool inplace) {
    if (!ggml_check_float(name, a)) {
        return NULL;
    }
    if (mask) {
        if (mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) {
            return ggml_op_fail(name, "mask must be F32 or F16", a, mask);
        }
        if (mask->ne[0] != a->ne[0] || mask->ne[1] < a->ne[1]) {
            return ggml_op_fail(name, "mask must be [a->ne[0], >= a->ne[1]]", a, mask);
        }
        if (mask->ne[2] <= 0 || mask->ne[3] <= 0 || a->ne[2] % mask->ne[2] != 0 || a->ne[3] % mask->ne[3] != 0) {
            return ggml_op_fail(name, "mask dims 2-3 must broadcast onto a", a, mask);
        }
        if (mask->nb[0] != ggml_type_size(mask->type)) {
            return ggml_op_fail(name, "mask rows must be contiguous", a, mask);
        }
    }
    if (max_bias < 0.0f || isnan(max_bias)) {
        GGML_LOG_ERROR("%s: max_bias %g must be >= 0", name, (double) max_bias);
        return NULL;
    }
    // Result has a's type; each row is computed in F32 and rounded once.
    struct ggml_tensor * t = ggml_new_node_like(ctx, GGML_OP_SOFT_MAX, a, inplace);
    if (t) {
        t->src[1] = mask;
        ggml_set_op_params_f32(t, 0, scale);
        ggml_set_op_params_f32(t, 1, max_bias);
    }
    return t;
}

struct ggml_tensor * ggml_soft_max(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_soft_max_impl(ctx, "ggml_soft_max", a, NULL, 1.0f, 0.0f, false);
}
struct ggml_tensor * ggml_soft_max_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return ggml_soft_max_impl(ctx, "ggml_soft_max_inplace", a, NULL, 1.0f, 0.0f, true);
}
struct ggml_tensor * ggml_soft_max_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * mask, float scale,
                                       float max_bias) {
    return ggml_soft_max_impl(ctx, "ggml_soft_max_ext", a, mask, scale, max_bias, false);
}

struct ggml_tensor * ggml_soft_max_add_sinks(struct ggml_tensor * soft_max, struct ggml_tensor * sinks) {
    if (soft_max == NULL || sinks == NULL || soft_max->op != GGML_OP_SOFT_MAX) {
        return ggml_op_fail("ggml_soft_max_add_sinks", "needs a SOFT_MAX node and sinks", soft_max, sinks);
    }
    if (sinks->type != GGML_TYPE_F32 || ggml_nelements(sinks) != soft_max->src[0]->ne[2] || !ggml_is_contiguous(sinks)) {
        return ggml_op_fail("ggml_soft_max_add_sinks", "sinks must be contiguous F32 [a->ne[2]]", soft_max, sinks);
    }
    soft_max->src[2] = sinks;
    return soft_max;
}

struct ggml_tensor * ggml_flash_attn_ext_add_sinks(struct ggml_tensor * fa, struct ggml_tensor * sinks) {
    if (fa == NULL || sinks == NULL || fa->op != GGML_OP_FLASH_ATTN_EXT) {
        return ggml_op_fail("ggml_flash_attn_ext_add_sinks", "needs a FLASH_ATTN_EXT node and sinks", fa, sinks);
    }
    if (sinks->type != GGML_TYPE_F32 || ggml_nelements(sinks) != fa->src[0]->ne[2] || !ggml_is_contiguous(sinks)) {
        return ggml_op_fail("ggml_flash_attn_ext_add_sinks", "sinks must be contiguous F32 [q->ne[2]]", fa, sinks);
    }
    fa->src[4] = sinks;
    return fa;
}

static struct ggml_tensor * ggml_diag_mask_inf_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_past, bool inplace) {
    const char * name = inplace ? "ggml_diag_mask_inf_inplace" : "ggml_diag_mask_inf";
    if (!ggml_check_float(name, a)) {
        return NULL;
    }
    if (n_past < 0) {
        GGML_LOG_ERROR("%s: n_past %d must be >= 0", name, n_past);
        return NULL;
    }
    // Result has a's type (kept values are copied exactly, the rest become -inf).
    struct ggml_tensor * t = ggml_new_node_like(ctx, GGML_OP_DIAG_MASK_INF, a, inplace);
    if (t) {
        ggml_set_op_params_i32(t, 0, n_past);
    }
    return t;
}

struct ggml_tensor * ggml_diag_mask_inf(struct ggml_context * ctx, struct ggml_tensor * a, int n_past) {
    return ggml_diag_mask_inf_impl(ctx, a, n_past, false);
}
struct ggml_tensor * ggml_diag_mask_inf_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_past) {
    return ggml_diag_mask_inf_impl(ctx, a, n_past, true);
}

// ---- rotary embedding ----

static struct ggml_tensor * ggml_rope_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                           float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                           float beta_slow, bool inplace) {
    const char * name = inplace ? "ggml_rope_ext_inplace" : "ggml_rope_ext";
    if (!a || !b) {
        return ggml_op_fail(name, "NULL input", a, b);
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) {
        return ggml_op_fail(name, "a must be F32 or F16", a, b);
    }
    if (b->type != GGML_TYPE_I32 || ggml_n_dims(b) != 1 || b->ne[0] != a->ne[2]) {
        return ggml_op_fail(name, "positions b must be I32 [a->ne[2]] (one per token)", a, b);
    }
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > a->ne[0]) {
        char d[GGML_TENSOR_DESC_SIZE];
        GGML_LOG_ERROR("%s: n_dims %d must be even and in 2..ne[0] of a = %s", name, n_dims, DESC(a, d));
        return NULL;
    }
    if (mode != GGML_ROPE_TYPE_NORMAL && mode != GGML_ROPE_TYPE_NEOX) {
        GGML_LOG_ERROR("%s: mode %d is neither GGML_ROPE_TYPE_NORMAL nor GGML_ROPE_TYPE_NEOX", name, mode);
        return NULL;
    }
    if (c && (c->type != GGML_TYPE_F32 || c->ne[0] < n_dims / 2 || !ggml_is_contiguous(c))) {
        return ggml_op_fail(name, "frequency factors c must be contiguous F32 with >= n_dims/2 elements", a, c);
    }
    if (!(freq_base > 0.0f) || !(freq_scale > 0.0f)) {
        GGML_LOG_ERROR("%s: freq_base %g and freq_scale %g must be > 0", name, (double) freq_base, (double) freq_scale);
        return NULL;
    }
    struct ggml_tensor * t = ggml_new_node_like(ctx, GGML_OP_ROPE, a, inplace);
    if (!t) {
        return NULL;
    }
    t->src[1] = b;
    t->src[2] = c;
    ggml_set_op_params_i32(t, 1, n_dims);
    ggml_set_op_params_i32(t, 2, mode);
    ggml_set_op_params_i32(t, 4, n_ctx_orig);
    ggml_set_op_params_f32(t, 5, freq_base);
    ggml_set_op_params_f32(t, 6, freq_scale);
    ggml_set_op_params_f32(t, 7, ext_factor);
    ggml_set_op_params_f32(t, 8, attn_factor);
    ggml_set_op_params_f32(t, 9, beta_fast);
    ggml_set_op_params_f32(t, 10, beta_slow);
    return t;
}

struct ggml_tensor * ggml_rope_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                   float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    return ggml_rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast,
                          beta_slow, false);
}

struct ggml_tensor * ggml_rope_ext_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                           float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                           float beta_slow) {
    return ggml_rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast,
                          beta_slow, true);
}

struct ggml_tensor * ggml_rope(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int n_dims, int mode) {
    return ggml_rope_impl(ctx, a, b, NULL, n_dims, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, false);
}

// ---- rows ----

struct ggml_tensor * ggml_get_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    if (!a || !b) {
        return ggml_op_fail("ggml_get_rows", "NULL input", a, b);
    }
    if (b->type != GGML_TYPE_I32) {
        return ggml_op_fail("ggml_get_rows", "row ids b must be I32", a, b);
    }
    if (b->ne[1] != a->ne[2] || b->ne[2] != a->ne[3] || b->ne[3] != 1) {
        return ggml_op_fail("ggml_get_rows", "b must be [n, a->ne[2], a->ne[3]]", a, b);
    }
    const struct ggml_type_traits * tt = ggml_get_type_traits(a->type);
    if (!tt || (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_I32 && !tt->to_float)) {
        return ggml_op_fail("ggml_get_rows", "a's type cannot be converted to F32", a, b);
    }
    const int64_t ne[4] = { a->ne[0], b->ne[0], b->ne[1], b->ne[2] };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_GET_ROWS, a, false, GGML_TYPE_F32, ne);
    if (t) {
        t->src[1] = b;
    }
    return t;
}

struct ggml_tensor * ggml_set_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c) {
    if (!a || !b || !c) {
        return ggml_op_fail("ggml_set_rows", "NULL input", a, b ? b : c);
    }
    if (b->type != GGML_TYPE_F32) {
        return ggml_op_fail("ggml_set_rows", "rows b must be F32", a, b);
    }
    if (c->type != GGML_TYPE_I32 && c->type != GGML_TYPE_I64) {
        return ggml_op_fail("ggml_set_rows", "row ids c must be I32 or I64", a, c);
    }
    if (b->ne[0] != a->ne[0] || b->ne[2] != a->ne[2] || b->ne[3] != a->ne[3]) {
        return ggml_op_fail("ggml_set_rows", "b must be [a->ne[0], n, a->ne[2], a->ne[3]]", a, b);
    }
    if (c->ne[0] != b->ne[1] || c->ne[1] <= 0 || c->ne[2] <= 0 || b->ne[2] % c->ne[1] != 0 || b->ne[3] % c->ne[2] != 0 ||
        c->ne[3] != 1) {
        return ggml_op_fail("ggml_set_rows", "ids c must be [n, d1, d2] with b->ne[2] % d1 == 0, b->ne[3] % d2 == 0", b, c);
    }
    if (a->type != b->type) {
        const struct ggml_type_traits * tt = ggml_get_type_traits(a->type);
        if (!tt || (!ggml_is_float_type(a->type) && !tt->from_float_ref)) {
            return ggml_op_fail("ggml_set_rows", "F32 rows cannot be converted to a's type", a, b);
        }
    }
    if (a->nb[0] != ggml_type_size(a->type)) {
        return ggml_op_fail("ggml_set_rows", "the destination's rows must be contiguous", a, b);
    }
    struct ggml_tensor * t = ggml_view_tensor(ctx, a);
    if (!t) {
        return NULL;
    }
    t->op = GGML_OP_SET_ROWS;
    t->src[0] = b;
    t->src[1] = c;
    ggml_format_name(t, "%s (set rows)", a->name);
    return t;
}

struct ggml_tensor * ggml_sum_rows(struct ggml_context * ctx, struct ggml_tensor * a) {
    if (!ggml_check_float("ggml_sum_rows", a)) {
        return NULL;
    }
    // Result has a's type (ggml's convention); the sum is accumulated in F32/F64 and rounded once.
    const int64_t ne[4] = { 1, a->ne[1], a->ne[2], a->ne[3] };
    return ggml_new_node(ctx, GGML_OP_SUM_ROWS, a, false, a->type, ne);
}

struct ggml_tensor * ggml_argmax(struct ggml_context * ctx, struct ggml_tensor * a) {
    if (!ggml_check_float("ggml_argmax", a)) {
        return NULL;
    }
    if (a->ne[2] != 1 || a->ne[3] != 1) {
        return ggml_op_fail("ggml_argmax", "a must be 2-D", a, NULL);
    }
    if (a->ne[0] > INT32_MAX) {
        return ggml_op_fail("ggml_argmax", "rows longer than INT32_MAX do not fit an I32 index", a, NULL);
    }
    // Result is I32 whatever a's float type.
    const int64_t ne[4] = { a->ne[1], 1, 1, 1 };
    return ggml_new_node(ctx, GGML_OP_ARGMAX, a, false, GGML_TYPE_I32, ne);
}

struct ggml_tensor * ggml_concat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int dim) {
    if (!a || !b) {
        return ggml_op_fail("ggml_concat", "NULL input", a, b);
    }
    if (dim < 0 || dim >= GGML_MAX_DIMS) {
        GGML_LOG_ERROR("ggml_concat: dim %d is not in 0..3", dim);
        return NULL;
    }
    if (a->type != b->type || ggml_is_quantized(a->type)) {
        return ggml_op_fail("ggml_concat", "a and b must have the same non-quantized type", a, b);
    }
    int64_t ne[4];
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (i != dim && a->ne[i] != b->ne[i]) {
            return ggml_op_fail("ggml_concat", "shapes must match outside the concatenated dim", a, b);
        }
        ne[i] = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    }
    // Result has a's (= b's) type; non-float types are moved as bytes.
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_CONCAT, a, false, a->type, ne);
    if (t) {
        t->src[1] = b;
        ggml_set_op_params_i32(t, 0, dim);
    }
    return t;
}

// ---- attention ----

struct ggml_tensor * ggml_flash_attn_ext(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                         struct ggml_tensor * v, struct ggml_tensor * mask, float scale, float max_bias,
                                         float logit_softcap) {
    const char * name = "ggml_flash_attn_ext";
    if (!q || !k || !v) {
        return ggml_op_fail(name, "NULL input", q, q ? (k ? v : k) : NULL);
    }
    if (q->type != GGML_TYPE_F32) {
        return ggml_op_fail(name, "q must be F32", q, NULL);
    }
    if ((k->type != GGML_TYPE_F32 && k->type != GGML_TYPE_F16) || (v->type != GGML_TYPE_F32 && v->type != GGML_TYPE_F16)) {
        return ggml_op_fail(name, "k and v must be F32 or F16", k, v);
    }
    if (k->ne[0] != q->ne[0]) {
        return ggml_op_fail(name, "k->ne[0] must equal q->ne[0] (head size)", q, k);
    }
    if (v->ne[1] != k->ne[1] || v->ne[2] != k->ne[2] || v->ne[3] != k->ne[3]) {
        return ggml_op_fail(name, "v must be [Dv, n_kv, H_kv] like k", k, v);
    }
    if (k->ne[2] <= 0 || q->ne[2] % k->ne[2] != 0) {
        return ggml_op_fail(name, "q heads must be a multiple of k heads", q, k);
    }
    if (k->ne[3] <= 0 || q->ne[3] % k->ne[3] != 0) {
        return ggml_op_fail(name, "q->ne[3] must be a multiple of k->ne[3]", q, k);
    }
    if (mask) {
        if (mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) {
            return ggml_op_fail(name, "mask must be F16 or F32", q, mask);
        }
        if (mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1]) {
            return ggml_op_fail(name, "mask must be [n_kv, >= n_q]", k, mask);
        }
        if (mask->ne[2] <= 0 || mask->ne[3] <= 0 || q->ne[2] % mask->ne[2] != 0 || q->ne[3] % mask->ne[3] != 0) {
            return ggml_op_fail(name, "mask dims 2-3 must broadcast onto q's heads", q, mask);
        }
        if (mask->nb[0] != ggml_type_size(mask->type)) {
            return ggml_op_fail(name, "mask rows must be contiguous", q, mask);
        }
    }
    if (max_bias < 0.0f || isnan(max_bias) || logit_softcap < 0.0f || isnan(logit_softcap)) {
        GGML_LOG_ERROR("%s: max_bias %g and logit_softcap %g must be >= 0", name, (double) max_bias, (double) logit_softcap);
        return NULL;
    }
    // Result is permuted relative to q: [Dv, H, n_q, ...], so heads of one token are adjacent.
    const int64_t ne[4] = { v->ne[0], q->ne[2], q->ne[1], q->ne[3] };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_FLASH_ATTN_EXT, q, false, GGML_TYPE_F32, ne);
    if (!t) {
        return NULL;
    }
    t->src[1] = k;
    t->src[2] = v;
    t->src[3] = mask;
    ggml_set_op_params_f32(t, 0, scale);
    ggml_set_op_params_f32(t, 1, max_bias);
    ggml_set_op_params_f32(t, 2, logit_softcap);
    return t;
}

// ---- sorting and experts ----

struct ggml_tensor * ggml_argsort(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_sort_order order) {
    if (!ggml_check_float("ggml_argsort", a)) {
        return NULL;
    }
    if (order != GGML_SORT_ORDER_ASC && order != GGML_SORT_ORDER_DESC) {
        GGML_LOG_ERROR("ggml_argsort: order %d is neither GGML_SORT_ORDER_ASC nor GGML_SORT_ORDER_DESC", (int) order);
        return NULL;
    }
    if (a->ne[0] > INT32_MAX) {
        return ggml_op_fail("ggml_argsort", "rows longer than INT32_MAX do not fit an I32 index", a, NULL);
    }
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_ARGSORT, a, false, GGML_TYPE_I32, a->ne);
    if (t) {
        ggml_set_op_params_i32(t, 0, (int32_t) order);
    }
    return t;
}

// k must be in 1..a->ne[0]; shared by the two top-k constructors.
static bool ggml_top_k_check(const char * name, const struct ggml_tensor * a, int k) {
    if (!ggml_check_float(name, a)) {
        return false;
    }
    if (k < 1 || k > a->ne[0]) {
        char d[GGML_TENSOR_DESC_SIZE];
        GGML_LOG_ERROR("%s: k = %d must be in 1..ne[0] of a = %s", name, k, DESC(a, d));
        return false;
    }
    return true;
}

struct ggml_tensor * ggml_argsort_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k) {
    if (!ggml_top_k_check("ggml_argsort_top_k", a, k)) {
        return NULL;
    }
    struct ggml_tensor * s = ggml_argsort(ctx, a, GGML_SORT_ORDER_DESC);
    return s ? ggml_view_4d(ctx, s, k, s->ne[1], s->ne[2], s->ne[3], s->nb[1], s->nb[2], s->nb[3], 0) : NULL;
}

struct ggml_tensor * ggml_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k) {
    if (!ggml_top_k_check("ggml_top_k", a, k)) {
        return NULL;
    }
    // its own op (not a view of a full sort): routing keeps 8 of 128 and need not sort the rest
    const int64_t ne[4] = { k, a->ne[1], a->ne[2], a->ne[3] };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_TOP_K, a, false, GGML_TYPE_I32, ne);
    if (t) {
        ggml_set_op_params_i32(t, 0, k);
    }
    return t;
}

struct ggml_tensor * ggml_mul_mat_id(struct ggml_context * ctx, struct ggml_tensor * as, struct ggml_tensor * b,
                                     struct ggml_tensor * ids) {
    const char * name = "ggml_mul_mat_id";
    if (!as || !b || !ids) {
        return ggml_op_fail(name, "NULL input", as, b ? b : ids);
    }
    if (b->type != GGML_TYPE_F32) {
        return ggml_op_fail(name, "b must be F32", as, b);
    }
    const struct ggml_type_traits * tt = ggml_get_type_traits(as->type);
    if (!tt || (!ggml_is_float_type(as->type) && !ggml_is_quantized(as->type))) {
        return ggml_op_fail(name, "experts must be F32, F16, BF16 or quantized", as, b);
    }
    if (as->ne[3] != 1 || as->ne[0] != b->ne[0] || as->nb[0] != ggml_type_size(as->type) || ggml_is_transposed(as)) {
        return ggml_op_fail(name, "experts must be [K = b->ne[0], M, n_as] with contiguous rows", as, b);
    }
    if (ids->type != GGML_TYPE_I32 || ids->ne[2] != 1 || ids->ne[3] != 1) {
        return ggml_op_fail(name, "ids must be I32 [n_used, n_tokens]", b, ids);
    }
    if (b->ne[3] != 1 || b->ne[2] != ids->ne[1] || (b->ne[1] != 1 && b->ne[1] != ids->ne[0])) {
        return ggml_op_fail(name, "b must be [K, 1 or n_used, n_tokens] for ids [n_used, n_tokens]", b, ids);
    }
    if (ids->ne[0] > as->ne[2]) {
        return ggml_op_fail(name, "more experts used per token (ids->ne[0]) than there are (as->ne[2])", as, ids);
    }
    const int64_t ne[4] = { as->ne[1], ids->ne[0], ids->ne[1], 1 };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_MUL_MAT_ID, as, false, GGML_TYPE_F32, ne);
    if (t) {
        t->src[1] = b;
        t->src[2] = ids;
    }
    return t;
}

// ---- low-rank update (LoRA) ----

struct ggml_tensor * ggml_lora_add(struct ggml_context * ctx, struct ggml_tensor * y, struct ggml_tensor * x,
                                   struct ggml_tensor * a, struct ggml_tensor * bt, struct ggml_tensor * rs, float scale) {
    const char * name = "ggml_lora_add";
    if (!y || !x || !a || !bt) {
        return ggml_op_fail(name, "NULL input", y ? y : x, a);
    }
    if (y->type != GGML_TYPE_F32 || x->type != GGML_TYPE_F32 || y->nb[0] != sizeof(float) || x->nb[0] != sizeof(float)) {
        return ggml_op_fail(name, "x and y must be F32 with contiguous rows", x, y);
    }
    if ((a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) || a->type != bt->type || !ggml_is_contiguous(a) ||
        !ggml_is_contiguous(bt)) {
        return ggml_op_fail(name, "a and bt must be contiguous, both F32 or both F16", a, bt);
    }
    const int64_t K = x->ne[0], N = x->ne[1], M = y->ne[0], r = a->ne[1];
    if (ggml_n_dims(x) > 2 || ggml_n_dims(y) > 2 || ggml_n_dims(a) > 2 || bt->ne[3] != 1 || a->ne[0] != K ||
        bt->ne[0] != GGML_LORA_PANEL || bt->ne[1] != r || bt->ne[2] != (M + GGML_LORA_PANEL - 1) / GGML_LORA_PANEL ||
        y->ne[1] != N || r < 1) {
        return ggml_op_fail(name, "shapes must be x [K, N], y [M, N], a [K, r], bt [64, r, ceil(M/64)]", a, bt);
    }
    if (rs && (rs->type != GGML_TYPE_F32 || rs->ne[0] != 1 || rs->ne[1] != N || ggml_nelements(rs) != N)) {
        return ggml_op_fail(name, "rs must be F32 [1, N]", rs, x);
    }
    const int64_t ne[4] = { M, N, 1, 1 };
    struct ggml_tensor * t = ggml_new_node(ctx, GGML_OP_LORA_ADD, y, false, GGML_TYPE_F32, ne);
    if (t) {
        t->src[1] = x;
        t->src[2] = a;
        t->src[3] = bt;
        t->src[4] = rs;
        ggml_set_op_params_f32(t, 0, scale);
    }
    return t;
}
