"""The ggml.h op constructors, bound for llama_py.ggml (which re-exports every name here).

Each builds a graph node and computes nothing; a refused input gives NULL with a logged reason.
Kept apart from ggml.py so that file stays about the arena, tensors, graphs and computation.
"""
from __future__ import annotations

from ctypes import c_float, c_int, c_int64

from .ggml import _c, _ctx, _t

# ---- ops (each returns a new node, or NULL with a logged reason) ----

# Copy of a into a new contiguous tensor of a's type.
@_c("ggml_dup", [_ctx, _t], _t)
def ggml_dup(ctx, a):
    ...


# Contiguous copy of a (same type).
@_c("ggml_cont", [_ctx, _t], _t)
def ggml_cont(ctx, a):
    ...


# Copies a into b (converting type); returns a view of b. Same element count.
@_c("ggml_cpy", [_ctx, _t, _t], _t)
def ggml_cpy(ctx, a, b):
    ...


# a + b, b broadcast over a.
@_c("ggml_add", [_ctx, _t, _t], _t)
def ggml_add(ctx, a, b):
    ...


# a += b.
@_c("ggml_add_inplace", [_ctx, _t, _t], _t)
def ggml_add_inplace(ctx, a, b):
    ...


# a - b, b broadcast over a.
@_c("ggml_sub", [_ctx, _t, _t], _t)
def ggml_sub(ctx, a, b):
    ...


# a -= b.
@_c("ggml_sub_inplace", [_ctx, _t, _t], _t)
def ggml_sub_inplace(ctx, a, b):
    ...


# a * b elementwise, b broadcast over a.
@_c("ggml_mul", [_ctx, _t, _t], _t)
def ggml_mul(ctx, a, b):
    ...


# a *= b.
@_c("ggml_mul_inplace", [_ctx, _t, _t], _t)
def ggml_mul_inplace(ctx, a, b):
    ...


# a / b elementwise, b broadcast over a.
@_c("ggml_div", [_ctx, _t, _t], _t)
def ggml_div(ctx, a, b):
    ...


# a /= b.
@_c("ggml_div_inplace", [_ctx, _t, _t], _t)
def ggml_div_inplace(ctx, a, b):
    ...


# a * s.
@_c("ggml_scale", [_ctx, _t, c_float], _t)
def ggml_scale(ctx, a, s):
    ...


# a *= s.
@_c("ggml_scale_inplace", [_ctx, _t, c_float], _t)
def ggml_scale_inplace(ctx, a, s):
    ...


# x / sqrt(mean(x^2) + eps) per row.
@_c("ggml_rms_norm", [_ctx, _t, c_float], _t)
def ggml_rms_norm(ctx, a, eps):
    ...


# In-place rms_norm.
@_c("ggml_rms_norm_inplace", [_ctx, _t, c_float], _t)
def ggml_rms_norm_inplace(ctx, a, eps):
    ...


# (x - mean) / sqrt(var + eps) per row.
@_c("ggml_norm", [_ctx, _t, c_float], _t)
def ggml_norm(ctx, a, eps):
    ...


# x * sigmoid(x).
@_c("ggml_silu", [_ctx, _t], _t)
def ggml_silu(ctx, a):
    ...


# In-place silu.
@_c("ggml_silu_inplace", [_ctx, _t], _t)
def ggml_silu_inplace(ctx, a):
    ...


# GELU, tanh approximation.
@_c("ggml_gelu", [_ctx, _t], _t)
def ggml_gelu(ctx, a):
    ...


# In-place gelu.
@_c("ggml_gelu_inplace", [_ctx, _t], _t)
def ggml_gelu_inplace(ctx, a):
    ...


# GELU, exact: x/2 (1 + erf(x/sqrt 2)).
@_c("ggml_gelu_erf", [_ctx, _t], _t)
def ggml_gelu_erf(ctx, a):
    ...


# tanh(x) (soft-capping: c * tanh(x / c)).
@_c("ggml_tanh", [_ctx, _t], _t)
def ggml_tanh(ctx, a):
    ...


# In-place tanh.
@_c("ggml_tanh_inplace", [_ctx, _t], _t)
def ggml_tanh_inplace(ctx, a):
    ...


# 1 / (1 + exp(-x)).
@_c("ggml_sigmoid", [_ctx, _t], _t)
def ggml_sigmoid(ctx, a):
    ...


# In-place sigmoid.
@_c("ggml_sigmoid_inplace", [_ctx, _t], _t)
def ggml_sigmoid_inplace(ctx, a):
    ...


# min(max(a, lo), hi) elementwise; -inf / inf leave a side open.
@_c("ggml_clamp", [_ctx, _t, c_float, c_float], _t)
def ggml_clamp(ctx, a, lo, hi):
    ...


# silu(a) * b (fused SwiGLU); same shapes.
@_c("ggml_swiglu_split", [_ctx, _t, _t], _t)
def ggml_swiglu_split(ctx, a, b):
    ...


# SwiGLU over the two halves of dim 0: silu(a[:n/2]) * a[n/2:].
@_c("ggml_swiglu", [_ctx, _t], _t)
def ggml_swiglu(ctx, a):
    ...


# a [K, M, A2, A3] x b [K, N, B2, B3] (F32) -> [M, N, B2, B3] F32; a broadcast over dims 2-3.
@_c("ggml_mul_mat", [_ctx, _t, _t], _t)
def ggml_mul_mat(ctx, a, b):
    ...


GGML_PREC_DEFAULT, GGML_PREC_F32 = 0, 10


# Sets the precision a MUL_MAT node asks of its backend (GGML_PREC_F32: Q8_0 weights meet F32 activations on the CPU).
@_c("ggml_mul_mat_set_prec", [_t, c_int], None)
def ggml_mul_mat_set_prec(a, prec):
    ...


# Softmax over each row.
@_c("ggml_soft_max", [_ctx, _t], _t)
def ggml_soft_max(ctx, a):
    ...


# In-place softmax.
@_c("ggml_soft_max_inplace", [_ctx, _t], _t)
def ggml_soft_max_inplace(ctx, a):
    ...


# softmax(a*scale + mask) per row; mask may be NULL; max_bias > 0 enables ALiBi slopes.
@_c("ggml_soft_max_ext", [_ctx, _t, _t, c_float, c_float], _t)
def ggml_soft_max_ext(ctx, a, mask, scale, max_bias):
    ...


# Attention sinks (F32 [a->ne[2]]) joining a SOFT_MAX node's denominators; returns the node.
@_c("ggml_soft_max_add_sinks", [_t, _t], _t)
def ggml_soft_max_add_sinks(soft_max, sinks):
    ...


_ROPE_ARGS = [_ctx, _t, _t, _t, c_int, c_int, c_int, c_float, c_float, c_float, c_float, c_float, c_float]


# Rotary embedding of a [head_dim, n_head, n_tokens, 1] at positions b (I32, n_tokens).
@_c("ggml_rope_ext", _ROPE_ARGS, _t)
def ggml_rope_ext(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                  attn_factor, beta_fast, beta_slow):
    ...


# In-place rope_ext.
@_c("ggml_rope_ext_inplace", _ROPE_ARGS, _t)
def ggml_rope_ext_inplace(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                          attn_factor, beta_fast, beta_slow):
    ...


# Plain rope: ggml_rope_ext with freq_base 10000, scale 1, no YaRN.
@_c("ggml_rope", [_ctx, _t, _t, c_int, c_int], _t)
def ggml_rope(ctx, a, b, n_dims, mode):
    ...


# Sets a[i, j] = -inf where i > n_past + j (causal mask).
@_c("ggml_diag_mask_inf", [_ctx, _t, c_int], _t)
def ggml_diag_mask_inf(ctx, a, n_past):
    ...


# In-place diag_mask_inf.
@_c("ggml_diag_mask_inf_inplace", [_ctx, _t, c_int], _t)
def ggml_diag_mask_inf_inplace(ctx, a, n_past):
    ...


# Rows b (I32 indices, [n, B2, B3]) of a ([ne0, rows, B2, B3], any type) as F32 [ne0, n, B2, B3].
@_c("ggml_get_rows", [_ctx, _t, _t], _t)
def ggml_get_rows(ctx, a, b):
    ...


# Writes rows of b (F32) into a at row indices c (I32 or I64); returns a view of a.
@_c("ggml_set_rows", [_ctx, _t, _t, _t], _t)
def ggml_set_rows(ctx, a, b, c):
    ...


# Sum of each row -> [1, ne1, ne2, ne3].
@_c("ggml_sum_rows", [_ctx, _t], _t)
def ggml_sum_rows(ctx, a):
    ...


# Index of the max of each row of a 2-D F32 tensor -> I32 [ne1].
@_c("ggml_argmax", [_ctx, _t], _t)
def ggml_argmax(ctx, a):
    ...


# Indices that sort each row (GGML_SORT_ORDER_ASC / _DESC) -> I32; equal values keep their order.
@_c("ggml_argsort", [_ctx, _t, c_int], _t)
def ggml_argsort(ctx, a, order):
    ...


# Indices of the k largest of each row, largest first (a view of a descending argsort).
@_c("ggml_argsort_top_k", [_ctx, _t, c_int], _t)
def ggml_argsort_top_k(ctx, a, k):
    ...


# Indices of the k largest of each row -> I32 [k, ...], largest first, ties by lower index.
@_c("ggml_top_k", [_ctx, _t, c_int], _t)
def ggml_top_k(ctx, a, k):
    ...


# Mixture-of-experts matmul: as [K, M, n_as], b [K, 1 or n_used, n_t] F32, ids I32 [n_used, n_t]
# -> [M, n_used, n_t]: column (j, t) = as[:, :, ids[j, t]] . b[:, j % n_b, t].
@_c("ggml_mul_mat_id", [_ctx, _t, _t, _t], _t)
def ggml_mul_mat_id(ctx, as_, b, ids):
    ...


# log(1 + exp(x)) (x above 20).
@_c("ggml_softplus", [_ctx, _t], _t)
def ggml_softplus(ctx, a):
    ...


# In-place softplus.
@_c("ggml_softplus_inplace", [_ctx, _t], _t)
def ggml_softplus_inplace(ctx, a):
    ...


# x / max(sqrt(sum(x^2)), eps) per row.
@_c("ggml_l2_norm", [_ctx, _t, c_float], _t)
def ggml_l2_norm(ctx, a, eps):
    ...


# In-place l2_norm.
@_c("ggml_l2_norm_inplace", [_ctx, _t, c_float], _t)
def ggml_l2_norm_inplace(ctx, a, eps):
    ...


# Causal depthwise convolution: sx [d_conv-1+n_t, d_inner, n_s], c [d_conv, d_inner] -> [d_inner, n_t, n_s].
@_c("ggml_ssm_conv", [_ctx, _t, _t], _t)
def ggml_ssm_conv(ctx, sx, c):
    ...


# Gated delta rule: outputs [S, H, n_t, n_s] then K state snapshots [S, S, H, n_s], in one [S*H, ...] tensor.
@_c("ggml_gated_delta_net", [_ctx, _t, _t, _t, _t, _t, _t, c_int64], _t)
def ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K):
    ...


# y + s_j B (A x_j) per column j, s_j = scale * rs[j] (a LoRA adapter's fused term); a [K, r] and
# bt [M, r] (B transposed) F32 or F16, x [K, N], y [M, N], rs [1, N] or None.
@_c("ggml_lora_add", [_ctx, _t, _t, _t, _t, _t, c_float], _t)
def ggml_lora_add(ctx, y, x, a, bt, rs, scale):
    ...


# The same with K = 1, computed chunk tokens at a time (the chunked form used for prompts).
@_c("ggml_gated_delta_net_chunked", [_ctx, _t, _t, _t, _t, _t, _t, c_int64], _t)
def ggml_gated_delta_net_chunked(ctx, q, k, v, g, beta, state, chunk):
    ...


# Concatenation of a and b along dim.
@_c("ggml_concat", [_ctx, _t, _t, c_int], _t)
def ggml_concat(ctx, a, b, dim):
    ...


# Attention: q [D, n_q, H, 1], k [D, n_kv, H_kv, 1], v [Dv, n_kv, H_kv, 1], mask or NULL
# -> [Dv, H, n_q, 1] F32.
@_c("ggml_flash_attn_ext", [_ctx, _t, _t, _t, _t, c_float, c_float, c_float], _t)
def ggml_flash_attn_ext(ctx, q, k, v, mask, scale, max_bias, logit_softcap):
    ...


# Attention sinks (F32 [q->ne[2]]) joining a FLASH_ATTN_EXT node's denominators; returns the node.
@_c("ggml_flash_attn_ext_add_sinks", [_t, _t], _t)
def ggml_flash_attn_ext_add_sinks(fa, sinks):
    ...
