"""Every ggml op against NumPy: one table of cases, each run for its types x input layouts x
1, 2 and 3 threads.

A case builds its node from inputs made by `inp` (which lays the data out contiguous,
permuted or as a padded strided view) and returns the node and the expected result,
computed in float64 from the values the inputs actually hold (so F16 inputs are compared
after their own rounding, and only the kernel's arithmetic is judged). A result stored as
F16 is compared with the reference rounded through float16 (the kernels compute in F32 and
round once). Adding an op adds one `Case` to CASES.

The case's type is the type of every float operand the constructor lets vary (for the
elementwise, unary, norm, softmax, mask and reduction ops: `a`, `b` and the mask alike, and
the result keeps that type, which the test asserts); `*_mixed` cases give the second
operand the other type. Where a constructor fixes an operand's type (mul_mat's `b`,
flash-attention's `q`, set_rows' rows are F32), the type applies to the other operand; the
docstring of each builder says which. Broadcasting: the binary cases repeat `b` over every
dim and combination of dims, the softmax masks over rows and heads, mul_mat and flash
attention over heads (GQA).

Shapes are chosen large enough that the executor really splits every node over 2 and 3
threads (it keeps nodes under ~4096 elements of work per thread on one thread).
"""
from __future__ import annotations

import ctypes
import math
import zlib
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np
import pytest

from llama_py import ggml

MB = 1024 * 1024
F32, F16, I32, I64 = ggml.GGML_TYPE_F32, ggml.GGML_TYPE_F16, ggml.GGML_TYPE_I32, ggml.GGML_TYPE_I64
Q8_0, Q4_0, Q4_1 = ggml.GGML_TYPE_Q8_0, ggml.GGML_TYPE_Q4_0, ggml.GGML_TYPE_Q4_1
TYPE_NAMES = {F32: "f32", F16: "f16", Q8_0: "q8_0", Q4_0: "q4_0", Q4_1: "q4_1"}
LAYOUTS = ("cont", "perm", "view")
THREADS = (1, 2, 3)

# (atol, rtol) by the type the case's type parameter names. An F16 result and its rounded
# reference differ by at most one F16 ulp (<= 2^-10 relative) when the F32 arithmetic is
# accurate to well under an ulp, hence rtol 1e-3; atol covers F16 subnormals (ulp 6e-8).
DEFAULT_TOL = {F32: (1e-5, 1e-5), F16: (1e-6, 1e-3)}


# ---- inputs ----

def shape4(t) -> Tuple[int, int, int, int]:
    s = ggml.tensor_struct(t)
    return (s.ne[3], s.ne[2], s.ne[1], s.ne[0])


def val(t) -> np.ndarray:
    """The tensor's values as float64 in NumPy order, always 4-D (ne3, ne2, ne1, ne0)."""
    return np.asarray(ggml.tensor_to_numpy(t), dtype=np.float64).reshape(shape4(t))


def inp(ctx, arr: np.ndarray, type: int = F32, layout: str = "cont"):
    """A tensor holding arr (NumPy order, up to 4-D) in `type`, laid out as:
    cont: contiguous; perm: memory order of dims 1 and 2 swapped, then ggml_permute'd back
    (nb[1] > nb[2]); view: rows padded by 3 elements and offset into a bigger buffer."""
    arr = np.asarray(arr, dtype=np.float64)
    a4 = arr.reshape((1,) * (4 - arr.ndim) + arr.shape)
    n3, n2, n1, n0 = a4.shape
    if layout == "cont":
        t = ggml.ggml_new_tensor_4d(ctx, type, n0, n1, n2, n3)
    elif layout == "perm":
        base = ggml.ggml_new_tensor_4d(ctx, type, n0, n2, n1, n3)
        t = ggml.ggml_permute(ctx, base, 0, 2, 1, 3)
    elif layout == "view":
        base = ggml.ggml_new_tensor_4d(ctx, type, n0 + 3, n1, n2, n3 + 1)
        bs = ggml.tensor_struct(base)
        offs = 2 * ggml.ggml_type_size(type)
        t = ggml.ggml_view_4d(ctx, base, n0, n1, n2, n3, bs.nb[1], bs.nb[2], bs.nb[3], offs)
    else:
        raise ValueError(layout)
    assert t, f"could not create a {layout} input of shape {a4.shape}"
    ggml.tensor_to_numpy(t).reshape(a4.shape)[...] = a4
    return t


def ids_tensor(ctx, ids: np.ndarray, type: int = I32):
    return ggml.tensor_from_numpy(ctx, np.asarray(ids, dtype=np.int64 if type == I64 else np.int32), type)


# ---- the table ----

@dataclass
class Case:
    name: str
    build: Callable  # (ctx, rng, type, layout) -> (node, expected 4-D float64, [tensor to check])
    types: Sequence[int] = (F32, F16)
    layouts: Sequence[str] = LAYOUTS
    tol: Dict[int, Tuple[float, float]] = field(default_factory=dict)
    result: Optional[Callable[[int], int]] = None  # case type -> the node's type, when the op fixes it
    quant_layouts: Sequence[str] = LAYOUTS  # layouts run for quantized case types


def same(type):
    """Result type rule of the ops that keep a's type."""
    return type


def other(type):
    """The other of F32 / F16 (second operand of the *_mixed cases)."""
    return F16 if type == F32 else F32


X_SHAPE = (3, 5, 17, 50)  # 12750 elements: splits over 3 threads


def binary(fn, np_fn, b_shape, inplace_fn=None, mixed=False):
    """a and b (shape b_shape, repeated over a) both in the case's type and the layout;
    mixed: b in the other type."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-2, 2, X_SHAPE), type, layout)
        b = inp(ctx, rng.uniform(0.5, 2, b_shape), other(type) if mixed else type, layout)
        av, bv = val(a), val(b)
        out = (inplace_fn or fn)(ctx, a, b)
        # ggml repeats b along each dim (b's size divides a's): np.tile, not broadcasting
        bt = np.tile(bv, tuple(x // y for x, y in zip(av.shape, bv.shape)))
        return out, np_fn(av, bt), (a if inplace_fn else None)
    return build


def unary(fn, np_fn, lo=-8.0, hi=8.0, inplace=False):
    """a in the case's type and the layout; inplace: fn writes into a, which is checked."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(lo, hi, X_SHAPE), type, layout)
        av = val(a)
        return fn(ctx, a), np_fn(av), (a if inplace else None)
    return build


def np_silu(x):
    return x / (1.0 + np.exp(-x))


def np_gelu_erf(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def np_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def np_norm(x, eps, rms):
    mean = 0.0 if rms else x.mean(axis=-1, keepdims=True)
    d = x - mean
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps)


def alibi_slopes(n_head, max_bias):
    if max_bias <= 0:
        return np.ones(n_head)
    nl2 = 2 ** int(math.floor(math.log2(n_head)))
    m0, m1 = 2.0 ** (-max_bias / nl2), 2.0 ** (-max_bias / 2.0 / nl2)
    return np.array([m0 ** (h + 1) if h < nl2 else m1 ** (2 * (h - nl2) + 1) for h in range(n_head)])


def np_softmax(w):
    mx = w.max(axis=-1, keepdims=True)
    safe = np.where(np.isneginf(mx), 0.0, mx)
    e = np.exp(w - safe)
    s = e.sum(axis=-1, keepdims=True)
    return np.where(s > 0, e / np.where(s > 0, s, 1.0), 0.0)


def softmax_case(mask_kind: Optional[str], max_bias: float = 0.0, mixed=False):
    """a [67, 32, 6, 1] in the case's type and the layout, the mask (contiguous rows) in the
    case's type too, or the other one when mixed.
    mask_kind: None, "rows" ([ne0, ne1 + 5]: extra rows ignored), "heads" ([ne0, ne1, 2]:
    broadcast over dim 2 by modulo), "causal" (with one fully masked row)."""
    def build(ctx, rng, type, layout):
        shape = (1, 6, 32, 67)
        a = inp(ctx, rng.uniform(-4, 4, shape), type, layout)
        mtype = other(type) if mixed else type
        # the mask's rows must be contiguous: "view" (padded rows) is the non-contiguous layout it takes
        mlayout = "view" if layout != "cont" else "cont"
        mask = None
        if mask_kind == "rows":
            mask = inp(ctx, rng.uniform(-3, 1, (37, 67)), mtype, mlayout)
        elif mask_kind == "heads":
            mask = inp(ctx, rng.uniform(-2, 2, (2, 32, 67)), mtype, mlayout)
        elif mask_kind == "causal":
            i0 = np.arange(67)[None, :]
            i1 = np.arange(32)[:, None]
            m = np.where((i0 > i1 + 30) | (i1 == 5), -np.inf, 0.0)
            mask = inp(ctx, m, mtype, mlayout)
        av = val(a)
        scale = 0.7
        w = av * scale
        if mask is not None:
            mv = val(mask)[0]  # (m2, m1, ne0)
            slopes = alibi_slopes(shape[1], max_bias)
            for h in range(shape[1]):
                w[0, h] += slopes[h] * mv[h % mv.shape[0], :shape[2], :]
        out = ggml.ggml_soft_max_ext(ctx, a, mask, scale, max_bias)
        return out, np_softmax(w)
    return build


def softmax_sinks_case(build_ext):
    """softmax_case's result with a sink logit per head (F32 [6]; one -inf: no sink) joining each
    row's denominator without an output column (gpt-oss)."""
    def build(ctx, rng, type, layout):
        out, _ = build_ext(ctx, rng, type, layout)
        sinks = np.array([0.5, -2.0, 3.0, -np.inf, 6.0, 0.0])
        st = inp(ctx, sinks, F32, "cont")
        assert ggml.ggml_soft_max_add_sinks(out, st)
        # the case's softmax recomputed with the sink column appended, which is then dropped
        node = ctypes.cast(out, ctypes.POINTER(ggml.ggml_tensor)).contents
        a, mask = ctypes.addressof(node.src[0].contents), node.src[1]
        w = val(a) * 0.7
        if mask:
            mv = val(ctypes.addressof(mask.contents))
            w = w + mv[0][np.arange(6) % mv.shape[1], :32, :][None]
        full = np.concatenate([w, np.broadcast_to(sinks[None, :, None, None], w.shape[:3] + (1,))], axis=-1)
        return out, np_softmax(full)[..., :-1]
    return build


def soft_max_plain(inplace=False):
    """a in the case's type and the layout; inplace: the softmax overwrites a."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-4, 4, X_SHAPE), type, layout)
        fn = ggml.ggml_soft_max_inplace if inplace else ggml.ggml_soft_max
        return fn(ctx, a), np_softmax(val(a)), (a if inplace else None)
    return build


def diag_mask_case(n_past, inplace=False):
    """a [70, 60, 3] in the case's type and the layout."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-1, 1, (3, 60, 70)), type, layout)
        av = val(a)
        i0 = np.arange(70)[None, :]
        i1 = np.arange(60)[:, None]
        ref = np.where(i0 > n_past + i1, -np.inf, av)
        fn = ggml.ggml_diag_mask_inf_inplace if inplace else ggml.ggml_diag_mask_inf
        return fn(ctx, a, n_past), ref, (a if inplace else None)
    return build


def np_rope(x, pos, n_dims, mode, base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow,
            n_ctx_orig, ff=None):
    """x (1, n_tokens, n_head, head_dim) -> rotated, following the YaRN paper's formulas."""
    out = x.copy()
    half = n_dims // 2
    k = np.arange(half)
    theta_e = pos[:, None] * base ** (-2.0 * k / n_dims)[None, :]
    if ff is not None:
        theta_e = theta_e / ff[None, :half]
    theta_i = freq_scale * theta_e
    mscale = attn_factor
    if ext_factor != 0:
        def corr(beta):
            return n_dims * math.log(n_ctx_orig / (beta * 2 * math.pi)) / (2 * math.log(base))
        low = max(0.0, math.floor(corr(beta_fast)))
        high = min(n_dims - 1.0, math.ceil(corr(beta_slow)))
        y = (k - low) / max(0.001, high - low)
        mix = (1 - np.clip(y, 0, 1)) * ext_factor
        theta = theta_i * (1 - mix) + theta_e * mix
        mscale *= 1 + 0.1 * math.log(1.0 / freq_scale)
    else:
        theta = theta_i
    c = np.cos(theta)[None, :, None, :] * mscale  # (1, tokens, 1, half)
    s = np.sin(theta)[None, :, None, :] * mscale
    if mode == ggml.GGML_ROPE_TYPE_NEOX:
        x0, x1 = x[..., :half], x[..., half:n_dims]
        out[..., :half] = x0 * c - x1 * s
        out[..., half:n_dims] = x0 * s + x1 * c
    else:
        x0, x1 = x[..., 0:n_dims:2], x[..., 1:n_dims:2]
        out[..., 0:n_dims:2] = x0 * c - x1 * s
        out[..., 1:n_dims:2] = x0 * s + x1 * c
    return out


def rope_case(mode, n_dims, freq_scale=1.0, ext_factor=0.0, with_ff=False, pos_offset=0, inplace=False):
    """a [64, 7, 29] (head_dim, heads, tokens) in the case's type (F32/F16) and layout."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-1, 1, (1, 29, 7, 64)), type, layout)
        pos = (np.arange(29) * 37) % 211 + pos_offset
        p = ids_tensor(ctx, pos)
        ff = None
        ffv = None
        if with_ff:
            ffv = 1.0 + 0.25 * np.arange(n_dims // 2)
            ff = ggml.tensor_from_numpy(ctx, ffv.astype(np.float32))
        args = (n_dims, mode, 512, 10000.0, freq_scale, ext_factor, 0.9, 32.0, 1.0)
        av = val(a)
        fn = ggml.ggml_rope_ext_inplace if inplace else ggml.ggml_rope_ext
        out = fn(ctx, a, p, ff, *args)
        ref = np_rope(av, pos.astype(np.float64), n_dims, mode, 10000.0, freq_scale, ext_factor, 0.9, 32.0, 1.0,
                      512, ffv)
        return out, ref, (a if inplace else None)
    return build


def swiglu_case(split, mixed=False):
    """gate (and up, for split) in the case's type and the layout; mixed: up in the other type."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-6, 6, (3, 33, 128)), type, layout)
        av = val(a)
        if split:
            b = inp(ctx, rng.uniform(-2, 2, (3, 33, 128)), other(type) if mixed else type, layout)
            return ggml.ggml_swiglu_split(ctx, a, b), np_silu(av) * val(b)
        return ggml.ggml_swiglu(ctx, a), np_silu(av[..., :64]) * av[..., 64:]
    return build


WIDE = 5632  # TinyLlama's FFN width: a decoded token's activations are one row this long


def np_silu_lim(x):
    """silu with its limits: -0 at -inf, inf at inf, NaN kept (x / (1 + exp(-x)) alone gives NaN at -inf)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(x == -np.inf, -0.0, x / (1.0 + np.exp(-x)))


def wide_values(rng, shape, lo, hi, specials):
    """Uniform values; specials: -inf, +inf, NaN and values where exp(-x) over- or underflows,
    scattered over the row, near its ends and around 16-element boundaries."""
    x = rng.uniform(lo, hi, shape)
    if specials:
        flat = x.reshape(-1)
        sv = [-np.inf, np.inf, np.nan, 90.0, -90.0, 88.0, -88.0, 1e-30, 0.0, -200.0]
        for k, i in enumerate(list(range(0, flat.size, 97)) + [1, 15, 16, 17, flat.size - 2, flat.size - 1]):
            flat[i] = sv[k % len(sv)]
    return x


def wide_unary(fn, np_fn, shape=(WIDE,), specials=False):
    """a (one row of WIDE by default) in the case's type and the layout: the executor splits the
    row's elements over threads; specials: see wide_values."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, wide_values(rng, shape, -10, 10, specials), type, layout)
        return fn(ctx, a), np_fn(val(a))
    return build


def wide_binary(fn, np_fn, shape, b_shape):
    """a (shape) and b (b_shape, repeated over a) in the case's type and the layout; few rows,
    so the elements of each row are split over threads."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-2, 2, shape), type, layout)
        b = inp(ctx, rng.uniform(0.5, 2, b_shape), type, layout)
        av, bv = val(a), val(b)
        bt = np.tile(bv, tuple(x // y for x, y in zip(av.shape, bv.shape)))
        return fn(ctx, a, b), np_fn(av, bt)
    return build


def wide_swiglu(split, shape=(WIDE,), specials=False):
    """gate (and up, for split) of shape `shape` in the case's type and the layout (fused: the
    row holds gate then up, twice as long); specials in the gate: see wide_values."""
    def build(ctx, rng, type, layout):
        n0 = shape[-1]
        gshape = shape if split else shape[:-1] + (2 * n0,)
        gv = wide_values(rng, gshape, -10, 10, specials)
        if not split:
            gv[..., n0:] = rng.uniform(-2, 2, shape)  # the up half: finite
        a = inp(ctx, gv, type, layout)
        av = val(a)
        if split:
            b = inp(ctx, rng.uniform(-2, 2, shape), type, layout)
            return ggml.ggml_swiglu_split(ctx, a, b), np_silu_lim(av) * val(b)
        return ggml.ggml_swiglu(ctx, a), np_silu_lim(av[..., :n0]) * av[..., n0:]
    return build


def round_to(type, x):
    return x.astype(np.float16).astype(np.float64) if type == F16 else x


def cont_case(op):
    """ggml_cont / ggml_dup of a tensor of the case's type in the layout: an exact copy."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-4, 4, (3, 5, 13, 64)), type, layout)
        out = op(ctx, a)
        return out, val(a)
    return build


def cpy_case(direction):
    """to: F32 source in the layout -> destination of the case's type (reshaped 2-D);
    from: source of the case's type in the layout -> permuted F32 destination."""
    def build(ctx, rng, type, layout):
        x = rng.uniform(-4, 4, (3, 5, 13, 64))
        if direction == "to":
            a = inp(ctx, x, F32, layout)
            b = ggml.ggml_new_tensor_2d(ctx, type, 64 * 13, 15)
            ref = round_to(type, val(a)).reshape(1, 1, 15, 64 * 13)
        else:
            a = inp(ctx, x, type, layout)
            b = inp(ctx, np.zeros(x.shape), F32, "perm")
            ref = val(a)
        out = ggml.ggml_cpy(ctx, a, b)
        return out, ref, b
    return build


def get_rows_case(ctx, rng, type, layout):
    """Table [64, 50, 2] of the case's type (F32/F16 in the layout; Q8_0/Q4_1 contiguous,
    quantized by gguf.quants), ids I32 [200, 2]; expected rows dequantized by gguf.quants."""
    x = rng.uniform(-1, 1, (2, 50, 64)).astype(np.float32)
    if type in (F32, F16):
        table = inp(ctx, x, type, layout)
        xq = val(table)[0]
    else:
        table, xq = quantized_input(ctx, x, type)
    ids = (np.arange(400).reshape(2, 200) * 7 + 3) % 50
    out = ggml.ggml_get_rows(ctx, table, ids_tensor(ctx, ids))
    ref = np.stack([xq[b][ids[b]] for b in range(2)])[None]
    return out, ref


def set_rows_case(ids_type):
    """Rows F32 [64, 50, 4] in the layout written into a [64, 300, 4] destination of the
    case's type at ids [50, 2] (broadcast over dim 2)."""
    def build(ctx, rng, type, layout):
        dst = ggml.ggml_new_tensor_3d(ctx, type, 64, 300, 4)
        ggml.tensor_to_numpy(dst)[...] = 0
        rows = inp(ctx, rng.uniform(-1, 1, (4, 50, 64)), F32, layout)
        ids = (np.arange(100).reshape(2, 50) * 11 + 5) % 300
        out = ggml.ggml_set_rows(ctx, dst, rows, ids_tensor(ctx, ids, ids_type))
        ref = np.zeros((1, 4, 300, 64))
        rv = val(rows)
        for b in range(4):
            ref[0, b, ids[b % 2]] = round_to(type, rv[0, b])
        return out, ref, dst
    return build


def concat_case(dim):
    """a (in the layout) and b (strided view) of the case's type joined along ggml dim."""
    def build(ctx, rng, type, layout):
        ne_a, ne_b = [48, 13, 7, 3], [48, 13, 7, 3]
        ne_a[dim], ne_b[dim] = 9, 4 + dim
        a = inp(ctx, rng.uniform(-1, 1, ne_a[::-1]), type, layout)
        b = inp(ctx, rng.uniform(-1, 1, ne_b[::-1]), type, "view")
        out = ggml.ggml_concat(ctx, a, b, dim)
        return out, np.concatenate([val(a), val(b)], axis=3 - dim)
    return build


def sum_rows_case(ctx, rng, type, layout):
    """a [171, 25, 3] in the case's type and the layout -> [1, 25, 3] of that type."""
    a = inp(ctx, rng.uniform(-1, 1, (3, 25, 171)), type, layout)
    return ggml.ggml_sum_rows(ctx, a), val(a).sum(axis=-1, keepdims=True)


def argmax_case(ctx, rng, type, layout):
    """a [513, 25] in the case's type and the layout -> I32 [25]; F16 rounding makes more ties,
    which the reference (first index) resolves like the kernel."""
    x = rng.uniform(-1, 1, (25, 513))
    x[3, 100] = x[3, 200] = 5.0  # tie: the first index wins
    x[7, 512] = 6.0  # max in the last column
    a = inp(ctx, x, type, layout)
    return ggml.ggml_argmax(ctx, a), np.argmax(val(a), axis=-1).reshape(1, 1, 1, 25)



def np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def sort_input(rng, shape):
    """Values with many ties (rounded to 1/8) and a few -inf, so the order of equal values shows."""
    x = np.round(rng.uniform(-4, 4, shape) * 8) / 8
    x.reshape(-1)[::37] = -np.inf
    return x


def np_argsort(x, desc):
    """Stable sort indices: equal values keep their order (lower index first), in either direction."""
    return np.argsort(-x if desc else x, axis=-1, kind="stable")


def argsort_case(desc):
    """a [130, 25, 3] of the case's type in the layout -> I32 of that shape."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, sort_input(rng, (3, 25, 130)), type, layout)
        order = ggml.GGML_SORT_ORDER_DESC if desc else ggml.GGML_SORT_ORDER_ASC
        return ggml.ggml_argsort(ctx, a, order), np_argsort(val(a), desc)
    return build


def top_k_case(k):
    """a [128, 40, 3] of the case's type in the layout -> I32 [k, 40, 3], largest first."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, sort_input(rng, (3, 40, 128)), type, layout)
        return ggml.ggml_top_k(ctx, a, k), np_argsort(val(a), True)[..., :k]
    return build


def np_mul_mat_id(av, bv, ids):
    """av (n_as, M, K), bv (n_t, n_b, K), ids (n_t, n_used) -> (1, n_t, n_used, M)."""
    n_t, n_used = ids.shape
    out = np.zeros((1, n_t, n_used, av.shape[1]))
    for t in range(n_t):
        for j in range(n_used):
            out[0, t, j] = av[ids[t, j]] @ bv[t, j % bv.shape[1]]
    return out


def mul_mat_id_case(K, M, n_as, n_used, n_t, n_b):
    """Experts [K, M, n_as] of the case's type (quantized by gguf.quants), b F32 [K, n_b, n_t]
    in the layout, ids I32 [n_used, n_t] drawn without repeats per token (some experts unchosen)."""
    def build(ctx, rng, type, layout):
        a, av = quantized_input(ctx, rng.uniform(-1, 1, (n_as, M, K)).astype(np.float32), type)
        b = inp(ctx, rng.uniform(-1, 1, (n_t, n_b, K)), F32, layout)
        ids = np.stack([rng.permutation(n_as - 1)[:n_used] for _ in range(n_t)])  # expert n_as-1 never
        out = ggml.ggml_mul_mat_id(ctx, a, b, ids_tensor(ctx, ids))
        return out, np_mul_mat_id(av, val(b)[0], ids)
    return build

def quantized_input(ctx, x: np.ndarray, type: int):
    """A contiguous tensor of `type` holding x (3-D float32, NumPy order); quantized types are
    filled with gguf.quants' bytes (an independent quantizer). Returns (tensor, values held)."""
    import gguf
    if type in (F32, F16):
        t = inp(ctx, x, type)
        return t, val(t)[0]
    qt = {Q8_0: gguf.GGMLQuantizationType.Q8_0, Q4_0: gguf.GGMLQuantizationType.Q4_0,
          Q4_1: gguf.GGMLQuantizationType.Q4_1}[type]
    t = ggml.ggml_new_tensor_3d(ctx, type, x.shape[2], x.shape[1], x.shape[0])
    q = gguf.quants.quantize(x.reshape(-1, x.shape[2]), qt)
    ggml.tensor_to_numpy(t, raw=True).reshape(q.shape)[...] = q
    deq = gguf.quants.dequantize(q, qt).reshape(x.shape).astype(np.float64)
    return t, deq


def mul_mat_case(K, M, N, A2, B2):
    """a [K, M, A2] of the case's type (quantized by gguf.quants), b F32 [K, N, B2] in the
    layout; a broadcast over dim 2 (B2 / A2 heads share one a)."""
    def build(ctx, rng, type, layout):
        a, av = quantized_input(ctx, rng.uniform(-1, 1, (A2, M, K)).astype(np.float32), type)
        b = inp(ctx, rng.uniform(-1, 1, (B2, N, K)), F32, layout)
        bv = val(b)[0]
        r = B2 // A2
        ref = np.stack([bv[i] @ av[i // r].T for i in range(B2)])[None]  # (1, B2, N, M)
        return ggml.ggml_mul_mat(ctx, a, b), ref
    return build


def flash_attn_case(D, Dv, n_q, n_kv, H, H_kv, mask_kind=None, softcap=0.0, max_bias=0.0, kv_view=False,
                    sinks=None):
    """q F32 [D, n_q, H] in the layout; k, v of the case's type (F32/F16), contiguous or as a
    KV-cache view ([D, H_kv, n_ctx] seen as [D, n_kv, H_kv]); mask F16 or NULL; sinks (H logits,
    -inf: none) joining each row's softmax as a column without a value (gpt-oss)."""
    def build(ctx, rng, type, layout):
        q = inp(ctx, rng.uniform(-1, 1, (H, n_q, D)), F32, layout)
        if kv_view:
            kc = inp(ctx, rng.uniform(-1, 1, (n_kv + 10, H_kv, D)), type)
            vc = inp(ctx, rng.uniform(-1, 1, (n_kv + 10, H_kv, Dv)), type)
            ks, vs = ggml.tensor_struct(kc), ggml.tensor_struct(vc)
            k = ggml.ggml_view_3d(ctx, kc, D, n_kv, H_kv, ks.nb[2], ks.nb[1], 0)
            v = ggml.ggml_view_3d(ctx, vc, Dv, n_kv, H_kv, vs.nb[2], vs.nb[1], 0)
        else:
            k = inp(ctx, rng.uniform(-1, 1, (H_kv, n_kv, D)), type)
            v = inp(ctx, rng.uniform(-1, 1, (H_kv, n_kv, Dv)), type)
        mask = None
        mv = np.zeros((n_q, n_kv))
        if mask_kind == "random":
            m = rng.uniform(-1, 1, (n_q + 3, n_kv))
            m[(np.arange(n_q + 3)[:, None] * 1 + np.arange(n_kv)[None, :] * 3) % 7 == 0] = -np.inf
            mask = inp(ctx, m, F16)
            mv = val(mask)[0, 0, :n_q]
        elif mask_kind == "pages":
            # a batched decode step: position i is sequence i % 3, whose cells are the 64-cell
            # pages p with p % 3 == i % 3 (causal within them: up to cell n_kv - n_q + i)
            i0 = np.arange(n_kv)[None, :]
            i1 = np.arange(n_q + 3)[:, None]
            mask = inp(ctx, np.where(((i0 // 64) % 3 != i1 % 3) | (i0 > i1 + n_kv - n_q), -np.inf, 0.0), F16)
            mv = val(mask)[0, 0, :n_q]
        elif mask_kind == "causal":
            i0 = np.arange(n_kv)[None, :]
            i1 = np.arange(n_q + 3)[:, None]
            mask = inp(ctx, np.where((i0 > i1 + n_kv - n_q) | (i1 == 2), -np.inf, 0.0), F16)
            mv = val(mask)[0, 0, :n_q]
        scale = 1.0 / math.sqrt(D)
        qv, kv, vv = val(q)[0], val(k)[0], val(v)[0]
        slopes = alibi_slopes(H, max_bias)
        ref = np.zeros((1, n_q, H, Dv))
        for h in range(H):
            hk = h // (H // H_kv)
            s = qv[h] @ kv[hk].T * scale  # (n_q, n_kv)
            if softcap > 0:
                s = softcap * np.tanh(s / softcap)
            s = s + slopes[h] * mv
            if sinks is None:
                ref[0, :, h, :] = np_softmax(s) @ vv[hk]
            else:  # the sink column appended, then dropped
                full = np.concatenate([s, np.full((n_q, 1), sinks[h])], axis=-1)
                ref[0, :, h, :] = np_softmax(full)[:, :-1] @ vv[hk]
        out = ggml.ggml_flash_attn_ext(ctx, q, k, v, mask, scale, max_bias, softcap)
        if sinks is not None:
            assert ggml.ggml_flash_attn_ext_add_sinks(out, inp(ctx, np.asarray(sinks, dtype=np.float64), F32, "cont"))
        return out, ref
    return build


def np_softplus(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def np_l2_norm(x, eps):
    return x / np.maximum(np.sqrt((x * x).sum(axis=-1, keepdims=True)), eps)


def ssm_conv_case(d_conv, d_inner, n_t, n_s):
    """sx [d_conv-1+n_t, d_inner, n_s] (F32) in the layout, c [d_conv, d_inner] contiguous in the
    case's type (F32 or F16: GGUFs may store the taps either way)."""
    def build(ctx, rng, type, layout):
        sx = inp(ctx, rng.uniform(-2, 2, (n_s, d_inner, d_conv - 1 + n_t)), F32, layout)
        c = inp(ctx, rng.uniform(-1, 1, (d_inner, d_conv)), type, "cont")
        x, w = val(sx)[0], val(c)[0, 0]
        ref = np.zeros((n_s, n_t, d_inner))
        for t in range(n_t):
            ref[:, t, :] = (x[:, :, t:t + d_conv] * w[None]).sum(axis=-1)
        return ggml.ggml_ssm_conv(ctx, sx, c), ref
    return build


def np_gated_delta_net(q, k, v, g, beta, state, K):
    """float64 gated delta rule as the op documents it (q, k [n_s, n_t, H_k, S], v [n_s, n_t, H, S],
    g [n_s, n_t, H, 1 or S], beta [n_s, n_t, H, 1], state [n_s, H, S(j), S(i)]); the op's 2-D result."""
    n_s, n_t, H, S = v.shape
    H_k = q.shape[2]
    out = np.zeros((n_s, n_t, H, S))
    snaps = np.zeros((K, n_s, H, S, S))
    for s in range(n_s):
        for h in range(H):
            M = state[s, h].T.copy()                      # M[i][j]: key dim i, value dim j
            for t in range(n_t):
                qv, kv = q[s, t, h % H_k], k[s, t, h % H_k]
                M = M * np.exp(g[s, t, h])[:, None]       # scalar or per key dim
                M = M + np.outer(kv, beta[s, t, h, 0] * (v[s, t, h] - M.T @ kv))
                out[s, t, h] = M.T @ qv / math.sqrt(S)
                if n_t - 1 - t < K:
                    snaps[n_t - 1 - t, s, h] = M.T
    return np.concatenate([out.reshape(-1), snaps.reshape(-1)]).reshape(-1, H * S)


def gated_delta_net_case(S, H, H_k, n_t, n_s, K=1, g_vec=False, chunk=0):
    """q, k, v, g, beta in the layout (rows contiguous in all three), state contiguous; F32 only."""
    def build(ctx, rng, type, layout):
        def unit(shape):
            x = rng.normal(size=shape)
            return x / np.linalg.norm(x, axis=-1, keepdims=True)   # the model feeds L2-normed q, k
        q = inp(ctx, unit((n_s, n_t, H_k, S)), F32, layout)
        k = inp(ctx, unit((n_s, n_t, H_k, S)), F32, layout)
        v = inp(ctx, rng.uniform(-1, 1, (n_s, n_t, H, S)), F32, layout)
        g = inp(ctx, rng.uniform(-1.5, -0.01, (n_s, n_t, H, S if g_vec else 1)), F32, layout)
        beta = inp(ctx, rng.uniform(0.05, 0.95, (n_s, n_t, H, 1)), F32, layout)
        state = inp(ctx, rng.uniform(-0.5, 0.5, (n_s, H, S, S)), F32, "cont")
        ref = np_gated_delta_net(val(q), val(k), val(v), val(g), val(beta), val(state), K)
        if chunk:
            return ggml.ggml_gated_delta_net_chunked(ctx, q, k, v, g, beta, state, chunk), ref
        return ggml.ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K), ref
    return build


def lora_add_case(K, M, N, r, per_col=False, y_view=False):
    """a [K, r] and bt (B's panels [64, r, ceil(M/64)]) contiguous in the case's type (F32 or F16),
    x [K, N] F32 in the layout,
    y [M, N] F32 (a view of the middle rows of a fused product when y_view), per_col: rs [1, N]
    with zeros (those columns must be y's bits)."""
    def build(ctx, rng, type, layout):
        a = inp(ctx, rng.uniform(-1, 1, (r, K)), type, "cont")
        P = -(-M // 64)                                  # B transposed in panels of 64 outputs
        b = rng.uniform(-1, 1, (M, r))
        panels = np.zeros((P * 64, r))
        panels[:M] = b
        bt = inp(ctx, panels.reshape(P, 64, r).transpose(0, 2, 1), type, "cont")
        x = inp(ctx, rng.uniform(-1, 1, (N, K)), F32, layout)
        if y_view:
            big = inp(ctx, rng.uniform(-1, 1, (N, M + 40)), F32, "cont")
            y = ggml.ggml_view_2d(ctx, big, M, N, ggml.tensor_struct(big).nb[1], 24 * 4)
        else:
            y = inp(ctx, rng.uniform(-1, 1, (N, M)), F32, layout)
        s = np.full(N, 1.0)
        rs = None
        if per_col:
            s = rng.uniform(-2, 2, N) * (np.arange(N) % 3 != 1)
            rs = inp(ctx, s.reshape(N, 1), F32, "cont")
        av, xv, yv = val(a)[0, 0], val(x)[0, 0], val(y)[0, 0]
        bv = val(bt)[0].transpose(0, 2, 1).reshape(P * 64, r)[:M]   # B as held, (M, r)
        ref = yv + 0.75 * s[:, None] * ((xv @ av.T) @ bv.T)     # (N, M)
        return ggml.ggml_lora_add(ctx, y, x, a, bt, rs, 0.75), ref
    return build


F16_SOFTMAX_TOL = {F32: (1e-6, 1e-5), F16: (1e-6, 2e-3)}

CASES = [
    # b repeated over: nothing, dim 0 (row), dims 0+2, dims 0 (half) + 1 + 3, dims 1 + 3 (column),
    # everything (scalar), dims 1 + 2 with a partial row (ne0 50 = 5 x 10)
    Case("add", binary(ggml.ggml_add, np.add, X_SHAPE), result=same),
    Case("add_bcast_row", binary(ggml.ggml_add, np.add, (1, 1, 1, 50)), result=same),
    Case("add_inplace", binary(ggml.ggml_add, np.add, (1, 5, 1, 50), ggml.ggml_add_inplace), result=same),
    Case("add_mixed", binary(ggml.ggml_add, np.add, (1, 5, 1, 50), mixed=True), result=same),
    Case("sub_bcast_dims", binary(ggml.ggml_sub, np.subtract, (1, 5, 1, 25)), result=same),
    Case("sub_scalar_inplace", binary(ggml.ggml_sub, np.subtract, (1, 1, 1, 1), ggml.ggml_sub_inplace), result=same),
    Case("mul_bcast_col", binary(ggml.ggml_mul, np.multiply, (3, 1, 17, 1)), result=same),
    Case("mul_inplace", binary(ggml.ggml_mul, np.multiply, (3, 5, 17, 50), ggml.ggml_mul_inplace), result=same),
    Case("mul_mixed_bcast", binary(ggml.ggml_mul, np.multiply, (1, 1, 17, 50), mixed=True), result=same),
    Case("div", binary(ggml.ggml_div, np.divide, (1, 5, 17, 50)), result=same),
    Case("div_bcast_part_row", binary(ggml.ggml_div, np.divide, (3, 1, 1, 10)), result=same),
    Case("div_inplace_mixed", binary(ggml.ggml_div, np.divide, (3, 5, 1, 1), ggml.ggml_div_inplace, mixed=True),
         result=same),
    Case("scale", unary(lambda c, a: ggml.ggml_scale(c, a, 0.37), lambda x: x * np.float32(0.37)), result=same),
    Case("scale_inplace", unary(lambda c, a: ggml.ggml_scale_inplace(c, a, -1.5), lambda x: x * -1.5, inplace=True),
         result=same),
    Case("silu", unary(ggml.ggml_silu, np_silu, -20, 20), tol={F32: (1e-6, 1e-5)}, result=same),
    Case("silu_inplace", unary(ggml.ggml_silu_inplace, np_silu, inplace=True), tol={F32: (1e-6, 1e-5)}, result=same),
    Case("gelu", unary(ggml.ggml_gelu, np_gelu), tol={F32: (1e-6, 1e-5)}, result=same),
    Case("gelu_inplace", unary(ggml.ggml_gelu_inplace, np_gelu, inplace=True), tol={F32: (1e-6, 1e-5)}, result=same),
    Case("gelu_erf", unary(ggml.ggml_gelu_erf, np_gelu_erf), tol={F32: (1e-6, 1e-5)}, result=same),
    Case("tanh", unary(ggml.ggml_tanh, np.tanh), tol={F32: (1e-7, 1e-6)}, result=same),
    # around the switch from the series to the exp form (|x| = 1/16), where 1 - exp(-2|x|) cancels
    Case("tanh_small", unary(ggml.ggml_tanh, np.tanh, -0.2, 0.2), tol={F32: (1e-9, 1e-6)}, result=same),
    Case("tanh_inplace", unary(ggml.ggml_tanh_inplace, np.tanh, inplace=True), tol={F32: (1e-7, 1e-6)}, result=same),
    Case("swiglu", swiglu_case(False), tol={F32: (1e-5, 1e-5)}, result=same),
    Case("swiglu_split", swiglu_case(True), tol={F32: (1e-5, 1e-5)}, result=same),
    Case("swiglu_split_mixed", swiglu_case(True, mixed=True), tol={F32: (1e-5, 1e-5)}, result=same),
    # one row (a decoded token) or a few odd-length rows: elements split over threads, ranges
    # starting mid-row and, for b repeated along the row, mid-repetition
    Case("silu_wide", wide_unary(ggml.ggml_silu, np_silu_lim, specials=True), tol={F32: (1e-6, 1e-5)}, result=same),
    Case("gelu_wide", wide_unary(ggml.ggml_gelu, np_gelu), tol={F32: (1e-6, 1e-5)}, result=same),
    Case("tanh_wide", wide_unary(ggml.ggml_tanh, np.tanh, specials=True), tol={F32: (1e-7, 1e-6)}, result=same),
    Case("scale_wide", wide_unary(lambda c, a: ggml.ggml_scale(c, a, 0.37), lambda x: x * np.float32(0.37),
                                  shape=(3, 2051)), result=same),
    Case("swiglu_wide", wide_swiglu(False, specials=True), tol={F32: (1e-5, 1e-5)}, result=same),
    Case("swiglu_split_wide", wide_swiglu(True, specials=True), tol={F32: (1e-5, 1e-5)}, result=same),
    Case("swiglu_split_rows", wide_swiglu(True, shape=(3, 2051)), tol={F32: (1e-5, 1e-5)}, result=same),
    Case("mul_wide", wide_binary(ggml.ggml_mul, np.multiply, (1, WIDE), (WIDE,)), result=same),
    Case("mul_wide_bcast", wide_binary(ggml.ggml_mul, np.multiply, (1, WIDE), (64,)), result=same),
    Case("add_wide", wide_binary(ggml.ggml_add, np.add, (1, WIDE), (1, WIDE)), result=same),
    Case("add_rows_bcast", wide_binary(ggml.ggml_add, np.add, (3, 2052), (1, 36)), result=same),
    Case("sub_wide_scalar", wide_binary(ggml.ggml_sub, np.subtract, (1, WIDE), (1,)), result=same),
    Case("div_rows", wide_binary(ggml.ggml_div, np.divide, (3, 2051), (3, 2051)), result=same),
    Case("rms_norm", unary(lambda c, a: ggml.ggml_rms_norm(c, a, 1e-5), lambda x: np_norm(x, 1e-5, True), -3, 5),
         result=same),
    Case("rms_norm_inplace", unary(lambda c, a: ggml.ggml_rms_norm_inplace(c, a, 1e-6),
                                   lambda x: np_norm(x, 1e-6, True), -3, 5, inplace=True), result=same),
    Case("norm", unary(lambda c, a: ggml.ggml_norm(c, a, 1e-5), lambda x: np_norm(x, 1e-5, False), -3, 5),
         tol={F32: (2e-5, 2e-5)}, result=same),
    Case("sigmoid", unary(ggml.ggml_sigmoid, np_sigmoid, -20, 20), tol={F32: (1e-7, 1e-6)}, result=same),
    Case("sigmoid_inplace", unary(ggml.ggml_sigmoid_inplace, np_sigmoid, inplace=True), tol={F32: (1e-7, 1e-6)},
         result=same),
    Case("softplus", unary(ggml.ggml_softplus, np_softplus, -30, 30), tol={F32: (1e-6, 1e-6)}, result=same),
    Case("softplus_inplace", unary(ggml.ggml_softplus_inplace, np_softplus, inplace=True), tol={F32: (1e-6, 1e-6)},
         result=same),
    Case("l2_norm", unary(lambda c, a: ggml.ggml_l2_norm(c, a, 1e-6), lambda x: np_l2_norm(x, 1e-6), -3, 5),
         result=same),
    Case("l2_norm_inplace", unary(lambda c, a: ggml.ggml_l2_norm_inplace(c, a, 1e-6), lambda x: np_l2_norm(x, 1e-6),
                                  -3, 5, inplace=True), result=same),
    Case("ssm_conv", ssm_conv_case(4, 160, 7, 3), types=(F32, F16), tol={F32: (1e-5, 1e-5), F16: (1e-5, 1e-5)},
         result=lambda t: F32),
    Case("ssm_conv_one_token", ssm_conv_case(4, 1100, 1, 4), types=(F32, F16),
         tol={F32: (1e-5, 1e-5), F16: (1e-5, 1e-5)}, result=lambda t: F32),
    Case("gated_delta_net", gated_delta_net_case(16, 4, 4, 5, 2), types=(F32,), tol={F32: (1e-5, 1e-5)}),
    Case("gated_delta_net_gqa_snapshots", gated_delta_net_case(32, 6, 2, 7, 2, K=3), types=(F32,),
         tol={F32: (1e-5, 1e-5)}),
    Case("gated_delta_net_vec_gate", gated_delta_net_case(16, 4, 2, 3, 3, g_vec=True), types=(F32,),
         tol={F32: (1e-5, 1e-5)}),
    # the chunked form against the same token-by-token reference: whole chunks, a partial last
    # chunk, a prompt shorter than one chunk, GQA heads, one token (which steps the recurrence)
    Case("gated_delta_net_chunked", gated_delta_net_case(32, 4, 2, 150, 2, chunk=64), types=(F32,),
         tol={F32: (1e-5, 1e-5)}),
    Case("gated_delta_net_chunked_short", gated_delta_net_case(16, 3, 3, 5, 3, chunk=64), types=(F32,),
         tol={F32: (1e-5, 1e-5)}),
    Case("gated_delta_net_chunked_exact", gated_delta_net_case(24, 2, 1, 48, 1, chunk=16), types=(F32,),
         tol={F32: (1e-5, 1e-5)}),
    Case("gated_delta_net_chunked_one_token", gated_delta_net_case(16, 2, 2, 1, 2, chunk=64), types=(F32,),
         tol={F32: (1e-5, 1e-5)}),
    Case("soft_max", soft_max_plain(), tol=F16_SOFTMAX_TOL, result=same),
    Case("soft_max_inplace", soft_max_plain(True), tol=F16_SOFTMAX_TOL, result=same),
    Case("soft_max_mask_rows", softmax_case("rows"), tol=F16_SOFTMAX_TOL, result=same),
    Case("soft_max_mask_heads_alibi", softmax_case("heads", 8.0), tol=F16_SOFTMAX_TOL, result=same),
    Case("soft_max_causal_alibi", softmax_case("causal", 4.0), tol=F16_SOFTMAX_TOL, result=same),
    Case("soft_max_mask_mixed", softmax_case("heads", 0.0, mixed=True), tol=F16_SOFTMAX_TOL, result=same),
    Case("soft_max_sinks", softmax_sinks_case(softmax_case(None)), tol=F16_SOFTMAX_TOL, result=same),
    Case("soft_max_sinks_causal", softmax_sinks_case(softmax_case("causal")), tol=F16_SOFTMAX_TOL, result=same),
    Case("clamp", unary(lambda c, a: ggml.ggml_clamp(c, a, -1.5, 2.0), lambda x: np.clip(x, -1.5, 2.0)),
         tol={F32: (0, 0)}, result=same),
    Case("clamp_open_below", unary(lambda c, a: ggml.ggml_clamp(c, a, -np.inf, 7.0), lambda x: np.minimum(x, 7.0),
                                   -20, 20), tol={F32: (0, 0)}, result=same),
    Case("diag_mask_inf", diag_mask_case(0), tol={F32: (0, 0), F16: (0, 0)}, result=same),
    Case("diag_mask_inf_inplace", diag_mask_case(9, True), tol={F32: (0, 0), F16: (0, 0)}, result=same),
    Case("rope_normal", rope_case(ggml.GGML_ROPE_TYPE_NORMAL, 64), tol={F32: (2e-5, 1e-5), F16: (2e-3, 2e-3)}),
    Case("rope_neox", rope_case(ggml.GGML_ROPE_TYPE_NEOX, 64), tol={F32: (2e-5, 1e-5), F16: (2e-3, 2e-3)}),
    Case("rope_partial_ff", rope_case(ggml.GGML_ROPE_TYPE_NORMAL, 48, 0.5, with_ff=True),
         tol={F32: (2e-5, 1e-5), F16: (2e-3, 2e-3)}),
    Case("rope_yarn_neox", rope_case(ggml.GGML_ROPE_TYPE_NEOX, 32, 0.25, 1.0, with_ff=True),
         tol={F32: (2e-5, 1e-5), F16: (2e-3, 2e-3)}),
    # positions ~3000: the float angle itself carries ~3000 * 2^-24 rad of rounding
    Case("rope_yarn_far", rope_case(ggml.GGML_ROPE_TYPE_NORMAL, 64, 0.125, 0.5, pos_offset=3000),
         tol={F32: (5e-4, 1e-5), F16: (4e-3, 2e-3)}),
    Case("rope_inplace", rope_case(ggml.GGML_ROPE_TYPE_NEOX, 64, inplace=True),
         tol={F32: (2e-5, 1e-5), F16: (2e-3, 2e-3)}),
    Case("cont", cont_case(ggml.ggml_cont), tol={F32: (0, 0), F16: (0, 0)}),
    Case("dup", cont_case(ggml.ggml_dup), tol={F32: (0, 0), F16: (0, 0)}),
    Case("cpy_to", cpy_case("to"), tol={F32: (0, 0), F16: (0, 0)}),
    Case("cpy_from", cpy_case("from"), tol={F32: (0, 0), F16: (0, 0)}),
    Case("get_rows", get_rows_case, types=(F32, F16, Q8_0, Q4_1), quant_layouts=("cont",), result=lambda t: F32,
         tol={F32: (0, 0), F16: (0, 0), Q8_0: (1e-6, 1e-6), Q4_1: (1e-6, 1e-6)}),
    Case("set_rows_i32", set_rows_case(I32), tol={F32: (0, 0), F16: (0, 0)}),
    Case("set_rows_i64", set_rows_case(I64), tol={F32: (0, 0), F16: (0, 0)}),
    *[Case(f"concat_dim{d}", concat_case(d), tol={F32: (0, 0), F16: (0, 0)}) for d in range(4)],
    Case("sum_rows", sum_rows_case, tol={F32: (1e-5, 1e-5)}, result=same),
    Case("argmax", argmax_case, tol={F32: (0, 0), F16: (0, 0)}, result=lambda t: I32),
    # b is rounded to the dot kernel's vec_dot_type (F16 for F16 a, Q8 blocks for quantized a)
    Case("mul_mat_vec", mul_mat_case(256, 37, 1, 1, 1), types=(F32, F16, Q8_0, Q4_0, Q4_1),
         tol={F32: (1e-4, 1e-4), F16: (2e-2, 1e-3), Q8_0: (0.1, 1e-2), Q4_0: (0.1, 1e-2), Q4_1: (0.1, 1e-2)}),
    Case("mul_mat", mul_mat_case(256, 70, 19, 1, 1), types=(F32, F16, Q8_0, Q4_0, Q4_1),
         tol={F32: (1e-4, 1e-4), F16: (2e-2, 1e-3), Q8_0: (0.1, 1e-2), Q4_0: (0.1, 1e-2), Q4_1: (0.1, 1e-2)}),
    # b above the per-thread conversion limit: shared conversion, barrier, dynamic tiles
    Case("mul_mat_shared_b", mul_mat_case(256, 64, 48, 1, 1), types=(F32, F16, Q8_0, Q4_1),
         tol={F32: (1e-4, 1e-4), F16: (2e-2, 1e-3), Q8_0: (0.1, 1e-2), Q4_1: (0.1, 1e-2)}),
    Case("mul_mat_gqa", mul_mat_case(128, 33, 9, 2, 6), types=(F32, F16, Q8_0),
         tol={F32: (1e-4, 1e-4), F16: (2e-2, 1e-3), Q8_0: (0.1, 1e-2)}),
    Case("sigmoid", unary(ggml.ggml_sigmoid, np_sigmoid, -20, 20), tol={F32: (1e-7, 1e-6)}, result=same),
    Case("sigmoid_inplace", unary(ggml.ggml_sigmoid_inplace, np_sigmoid, inplace=True), tol={F32: (1e-7, 1e-6)},
         result=same),
    Case("argsort_asc", argsort_case(False), tol={F32: (0, 0), F16: (0, 0)}, result=lambda t: I32),
    Case("argsort_desc", argsort_case(True), tol={F32: (0, 0), F16: (0, 0)}, result=lambda t: I32),
    Case("top_k", top_k_case(8), tol={F32: (0, 0), F16: (0, 0)}, result=lambda t: I32),
    Case("top_k_one", top_k_case(1), tol={F32: (0, 0), F16: (0, 0)}, result=lambda t: I32),
    # a LoRA term: one decode column (K % 8: tiles; K odd: the portable dots), a batch with
    # per-column factors (zeros: y untouched) over a view of a fused product, rank not a tile multiple
    Case("lora_add_vec", lora_add_case(256, 900, 1, 16), tol={F32: (1e-5, 1e-5), F16: (1e-5, 1e-5)}),
    Case("lora_add_odd_k", lora_add_case(45, 70, 3, 5), tol={F32: (1e-5, 1e-5), F16: (1e-5, 1e-5)}),
    Case("lora_add_per_col_view", lora_add_case(96, 333, 11, 6, per_col=True, y_view=True),
         tol={F32: (1e-5, 1e-5), F16: (1e-5, 1e-5)}),
    # experts: b rounded to the dot kernel's vec_dot_type as for mul_mat
    Case("mul_mat_id_vec", mul_mat_id_case(256, 37, 6, 2, 1, 1), types=(F32, F16, Q8_0, Q4_0, Q4_1),
         tol={F32: (1e-4, 1e-4), F16: (2e-2, 1e-3), Q8_0: (0.1, 1e-2), Q4_0: (0.1, 1e-2), Q4_1: (0.1, 1e-2)}),
    Case("mul_mat_id", mul_mat_id_case(256, 70, 8, 3, 11, 3), types=(F32, F16, Q8_0, Q4_0, Q4_1),
         tol={F32: (1e-4, 1e-4), F16: (2e-2, 1e-3), Q8_0: (0.1, 1e-2), Q4_0: (0.1, 1e-2), Q4_1: (0.1, 1e-2)}),
    # b above the per-thread conversion limit: shared conversion, barrier, dynamic tiles
    Case("mul_mat_id_shared_b", mul_mat_id_case(256, 48, 5, 2, 40, 1), types=(F32, F16, Q8_0, Q4_1),
         tol={F32: (1e-4, 1e-4), F16: (2e-2, 1e-3), Q8_0: (0.1, 1e-2), Q4_1: (0.1, 1e-2)}),
    Case("flash_attn_vec", flash_attn_case(64, 64, 1, 200, 6, 2), tol={F32: (1e-5, 1e-4), F16: (2e-3, 1e-3)}),
    Case("flash_attn_mask_view", flash_attn_case(64, 64, 7, 50, 6, 3, "random", kv_view=True),
         tol={F32: (1e-5, 1e-4), F16: (2e-3, 1e-3)}),
    Case("flash_attn_softcap_dv", flash_attn_case(32, 48, 9, 40, 4, 4, "random", softcap=5.0),
         tol={F32: (1e-5, 1e-4), F16: (2e-3, 1e-3)}),
    Case("flash_attn_sinks", flash_attn_case(64, 64, 7, 50, 6, 3, "random", sinks=[0.5, -2.0, 3.0, -np.inf, 6.0, 0.0]),
         tol={F32: (1e-5, 1e-4), F16: (2e-3, 1e-3)}),
    Case("flash_attn_sinks_causal_vec", flash_attn_case(64, 64, 5, 45, 4, 2, "causal", sinks=[1.0, -np.inf, 9.0, -1.0]),
         tol={F32: (1e-5, 1e-4), F16: (2e-3, 1e-3)}),
    Case("flash_attn_pages", flash_attn_case(64, 64, 9, 420, 6, 2, "pages", kv_view=True),
         tol={F32: (1e-5, 1e-4), F16: (2e-3, 1e-3)}),
    Case("flash_attn_causal_alibi", flash_attn_case(64, 64, 12, 45, 8, 2, "causal", max_bias=4.0),
         tol={F32: (1e-5, 1e-4), F16: (2e-3, 1e-3)}),
]

PARAMS = [pytest.param(c, t, l, n, id=f"{c.name}-{TYPE_NAMES[t]}-{l}-t{n}")
          for c in CASES for t in c.types for l in (c.layouts if t in (F32, F16) else c.quant_layouts)
          for n in THREADS]


@pytest.fixture
def ctx(lib_path):
    c = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * MB, mem_buffer=None, no_alloc=False))
    assert c, "ggml_init failed"
    yield c
    ggml.ggml_free(c)


@pytest.mark.parametrize("case,type,layout,n_threads", PARAMS)
def test_op(ctx, case: Case, type: int, layout: str, n_threads: int):
    rng = np.random.default_rng(zlib.crc32(f"{case.name}-{type}-{layout}".encode()))
    built = case.build(ctx, rng, type, layout)
    node, expected = built[0], built[1]
    check = built[2] if len(built) > 2 and built[2] is not None else node
    assert node, f"{case.name}: constructor returned NULL (see log)"
    if case.result is not None:
        assert ggml.tensor_struct(node).type == case.result(type), f"{case.name}: result type"
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, node)
    assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
    got = val(check)
    # an F16 result is the kernel's F32 value rounded once: compare with the reference rounded likewise
    expected = round_to(ggml.tensor_struct(check).type, np.asarray(expected, dtype=np.float64).reshape(got.shape))
    atol, rtol = case.tol.get(type, DEFAULT_TOL.get(type, (1e-5, 1e-5)))
    assert np.array_equal(np.isnan(got), np.isnan(expected)), f"{case.name}: NaN pattern differs"
    np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol, err_msg=f"{case.name} {TYPE_NAMES[type]} {layout} t{n_threads}")


def test_every_compute_op_has_a_case(ctx):
    """Guards the table: every op the CPU backend computes is the node of some case."""
    seen = set()
    rng = np.random.default_rng(0)
    for c in CASES:
        node = c.build(ctx, rng, c.types[0], c.layouts[0])[0]
        assert node, f"{c.name}: constructor returned NULL"
        seen.add(ggml.tensor_struct(node).op)
    views = {ggml.ggml_op.NONE, ggml.ggml_op.RESHAPE, ggml.ggml_op.VIEW, ggml.ggml_op.PERMUTE,
             ggml.ggml_op.TRANSPOSE}
    missing = [ggml.ggml_op(o).name for o in range(ggml.ggml_op.COUNT) if o not in seen and o not in views]
    assert not missing, f"ops without a case: {missing}"


# ---- kernel sets (GGML_CPU_VARIANT): the SIMD silu / swiglu rows ----

_VARIANT_PROBE = r"""
import json, os, sys
sys.path.insert(0, os.environ["TESTS_DIR"])
import numpy as np
import test_ggml_ops as T
from llama_py import ggml
out = {"variant": ggml.ggml_cpu_variant().decode(), "runs": {}}
rng = np.random.default_rng(7)
gate = T.wide_values(rng, (T.WIDE + 5,), -10, 10, True)  # + 5: a row that ends in a partial vector
up = rng.uniform(-2, 2, T.WIDE + 5)
for n_threads in (1, 2, 3):
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=8 * T.MB, mem_buffer=None, no_alloc=False))
    g = T.inp(ctx, gate)
    u = T.inp(ctx, up)
    nodes = {"silu": ggml.ggml_silu(ctx, g), "swiglu": ggml.ggml_swiglu_split(ctx, g, u)}
    gf = ggml.ggml_new_graph(ctx)
    for t in nodes.values():
        ggml.ggml_build_forward_expand(gf, t)
    assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
    out["runs"][n_threads] = {k: np.asarray(ggml.tensor_to_numpy(t), dtype=np.float32).reshape(-1).tobytes().hex()
                              for k, t in nodes.items()}
    ggml.ggml_free(ctx)
out["gate"] = gate.astype(np.float32).tobytes().hex()
out["up"] = up.astype(np.float32).tobytes().hex()
print(json.dumps(out))
"""


def _probe_variant(env_value):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    from llama_py import _lib
    env = dict(os.environ)
    env.pop("GGML_CPU_VARIANT", None)
    if env_value is not None:
        env["GGML_CPU_VARIANT"] = env_value
    env["TESTS_DIR"] = str(Path(__file__).resolve().parent)
    env["LLAMA_PY_LIB"] = str(_lib.load_library()._name)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _VARIANT_PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_wide_activations_every_kernel_set(lib_path):
    """silu and swiglu of one long row under each kernel set the CPU can run: close to NumPy
    (limits at +-inf, NaN kept), and the same bits on 1, 2 and 3 threads."""
    best = _probe_variant(None)["variant"]
    order = ["portable", "avx2", "avx512"] if best in ("portable", "avx2", "avx512") else ["portable", best]
    for name in order[: order.index(best) + 1]:
        got = _probe_variant(name)
        assert got["variant"] == name
        g = np.frombuffer(bytes.fromhex(got["gate"]), dtype=np.float32).astype(np.float64)
        u = np.frombuffer(bytes.fromhex(got["up"]), dtype=np.float32).astype(np.float64)
        want = {"silu": np_silu_lim(g), "swiglu": np_silu_lim(g) * u}
        runs = got["runs"]
        for op, ref in want.items():
            one = runs["1"][op]
            for n_threads in ("2", "3"):
                assert runs[n_threads][op] == one, f"{name} {op}: t{n_threads} differs from t1"
            res = np.frombuffer(bytes.fromhex(one), dtype=np.float32).astype(np.float64)
            assert np.array_equal(np.isnan(res), np.isnan(ref)), f"{name} {op}: NaN pattern"
            assert np.array_equal(np.signbit(res[g == -np.inf]), np.signbit(ref[g == -np.inf])), f"{name} {op}: -0"
            np.testing.assert_allclose(res, ref, atol=1e-6, rtol=1e-5, err_msg=f"{name} {op}")
