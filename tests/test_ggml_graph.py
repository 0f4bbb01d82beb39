"""The ggml graph API as seen from Python, the NumPy helpers, the bindings and the ABI check."""
from __future__ import annotations

import ctypes
import re
from pathlib import Path

import numpy as np
import pytest

from llama_py import ggml

HEADER = Path(__file__).resolve().parents[1] / "ggml" / "include" / "ggml.h"
MB = 1024 * 1024


@pytest.fixture
def ctx(lib_path):
    c = ggml.ggml_init(ggml.ggml_init_params(mem_size=16 * MB, mem_buffer=None, no_alloc=False))
    assert c, "ggml_init failed"
    yield c
    ggml.ggml_free(c)


def compute(ctx, gf, n_threads):
    status = ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads)
    assert status == ggml.GGML_STATUS_SUCCESS, f"compute failed with status {status}"


def nodes(gf):
    return [ggml.ggml_graph_node(gf, i) for i in range(ggml.ggml_graph_n_nodes(gf))]


# ---- bindings ----

def _header_functions():
    text = HEADER.read_text()
    out = {}
    for m in re.finditer(r"^GGML_API\s+[^;]*?\b(ggml_\w+)\s*\(([^;]*?)\)\s*;", text, re.M | re.S):
        name, params = m.group(1), m.group(2).strip()
        n = 0 if params in ("", "void") else params.count(",") + 1
        if "..." in params:
            n -= 1  # the variadic tail is not a fixed argument
        out[name] = n
    return out


def test_every_header_function_is_bound_with_its_arity(lib_path):
    funcs = _header_functions()
    assert len(funcs) > 100, "header parse found too few functions"
    lib = ctypes.CDLL(str(lib_path))
    problems = []
    for name, n_args in sorted(funcs.items()):
        py = getattr(ggml, name, None)
        if py is None or getattr(py, "c_name", None) != name:
            problems.append(f"{name}: not bound in llama_py.ggml")
            continue
        if len(py.argtypes) != n_args:
            problems.append(f"{name}: {len(py.argtypes)} argtypes, header has {n_args} parameters")
        if not hasattr(lib, name):
            problems.append(f"{name}: not exported by {lib_path.name}")
    assert not problems, "\n".join(problems)


def test_enums_match_header():
    text = HEADER.read_text()
    for name, value in re.findall(r"^\s*GGML_TYPE_(\w+)\s*=\s*(\d+)", text, re.M):
        assert int(ggml.ggml_type[name]) == int(value), name
    ops = re.search(r"enum ggml_op \{(.*?)\};", text, re.S).group(1)
    op_names = re.findall(r"GGML_OP_(\w+)", ops)
    assert [m.name for m in ggml.ggml_op] == op_names
    assert ggml.GGML_OP_MUL_MAT == op_names.index("MUL_MAT")


def test_type_and_op_names_from_library(lib_path):
    assert ggml.ggml_type_name(ggml.GGML_TYPE_F32) == b"f32"
    assert ggml.ggml_type_name(ggml.GGML_TYPE_F16) == b"f16"
    assert ggml.ggml_type_size(ggml.GGML_TYPE_F16) == 2
    assert ggml.ggml_blck_size(ggml.GGML_TYPE_F32) == 1
    assert ggml.ggml_row_size(ggml.GGML_TYPE_F32, 10) == 40
    assert ggml.ggml_op_name(ggml.GGML_OP_MUL_MAT) == b"MUL_MAT"
    tr = ggml.ggml_get_type_traits(ggml.GGML_TYPE_F16)
    assert tr and tr.contents.type_size == 2 and not tr.contents.is_quantized


def test_fp16_and_bf16_conversions_match_numpy(lib_path):
    for v in (0.0, 1.0, -2.5, 65504.0, 1e-7, 3.14159):
        h = ggml.ggml_fp32_to_fp16(v)
        assert h == int(np.float16(v).view(np.uint16)), v
        assert ggml.ggml_fp16_to_fp32(h) == float(np.float16(v))
    b = ggml.ggml_fp32_to_bf16(1.5)
    assert b.bits == 0x3FC0 and ggml.ggml_bf16_to_fp32(b) == 1.5
    x = np.linspace(-3, 3, 37).astype(np.float32)
    h = np.empty(37, np.float16)
    ggml.ggml_fp32_to_fp16_row(x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), h.ctypes.data, 37)
    np.testing.assert_array_equal(h, x.astype(np.float16))


# ---- graph ----

def test_diamond_dependency_computes_each_node_once_in_order(ctx):
    x = ggml.tensor_from_numpy(ctx, np.arange(8, dtype=np.float32) - 3)
    left = ggml.ggml_scale(ctx, x, 2.0)
    right = ggml.ggml_silu(ctx, x)
    top = ggml.ggml_add(ctx, left, right)
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, top)
    ggml.ggml_build_forward_expand(gf, left)  # already there: must not be added again
    ggml.ggml_build_forward_expand(gf, top)
    order = nodes(gf)
    assert len(order) == 3 and len(set(order)) == 3
    assert set(order[:2]) == {left, right} and order[2] == top
    assert ggml.ggml_graph_n_leafs(gf) == 1
    for n_threads in (1, 2, 3):
        ggml.tensor_set_numpy(top, np.full(8, np.nan, np.float32))
        compute(ctx, gf, n_threads)
        xs = np.arange(8, dtype=np.float32) - 3
        np.testing.assert_allclose(ggml.tensor_to_numpy(top), 2 * xs + xs / (1 + np.exp(-xs)), rtol=1e-5)


def test_sources_come_before_their_node(ctx):
    rng = np.random.default_rng(1)
    a = ggml.tensor_from_numpy(ctx, rng.standard_normal((4, 8)).astype(np.float32))
    b = ggml.tensor_from_numpy(ctx, rng.standard_normal((3, 8)).astype(np.float32))
    h = ggml.ggml_mul_mat(ctx, a, b)           # [4, 3]
    g = ggml.ggml_silu(ctx, h)
    s = ggml.ggml_soft_max(ctx, ggml.ggml_add(ctx, g, h))
    out = ggml.ggml_mul(ctx, s, ggml.ggml_scale(ctx, h, 0.5))
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, out)
    order = nodes(gf)
    position = {t: i for i, t in enumerate(order)}
    for i, t in enumerate(order):
        st = ggml.tensor_struct(t)
        for j in range(ggml.GGML_MAX_SRC):
            src = ctypes.cast(st.src[j], ctypes.c_void_p).value
            if src in position:
                assert position[src] < i, f"node {i} uses node {position[src]} computed after it"
    assert order[-1] == out


def test_graph_node_negative_index_and_out_of_range(ctx):
    x = ggml.tensor_from_numpy(ctx, np.ones(4, np.float32))
    y = ggml.ggml_scale(ctx, x, 3.0)
    z = ggml.ggml_add(ctx, y, x)
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, z)
    n = ggml.ggml_graph_n_nodes(gf)
    assert n == 2
    assert ggml.ggml_graph_node(gf, -1) == z == ggml.ggml_graph_node(gf, n - 1)
    assert ggml.ggml_graph_node(gf, -2) == y == ggml.ggml_graph_node(gf, 0)
    assert ggml.ggml_graph_node(gf, n) is None
    assert ggml.ggml_graph_node(gf, -n - 1) is None
    ggml.ggml_set_name(y, b"tripled")
    assert ggml.ggml_graph_get_tensor(gf, b"tripled") == y
    assert ggml.ggml_graph_get_tensor(gf, b"absent") is None


def test_matmul_add_softmax_on_1_2_3_threads(ctx):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((37, 64)).astype(np.float32)
    x = rng.standard_normal((5, 64)).astype(np.float32)
    bias = rng.standard_normal(37).astype(np.float32)
    y = ggml.ggml_soft_max(ctx, ggml.ggml_add(ctx, ggml.ggml_mul_mat(
        ctx, ggml.tensor_from_numpy(ctx, w), ggml.tensor_from_numpy(ctx, x)), ggml.tensor_from_numpy(ctx, bias)))
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, y)
    logits = x @ w.T + bias
    ref = np.exp(logits - logits.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    for n_threads in (1, 2, 3):
        ggml.tensor_set_numpy(y, np.zeros_like(ref))
        compute(ctx, gf, n_threads)
        np.testing.assert_allclose(ggml.tensor_to_numpy(y), ref, rtol=1e-5, atol=1e-7)


def test_threadpool_reuse_matches_one_shot(ctx):
    a = ggml.tensor_from_numpy(ctx, np.arange(12, dtype=np.float32).reshape(3, 4))
    y = ggml.ggml_scale(ctx, ggml.ggml_add(ctx, a, a), 0.25)
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, y)
    tp = ggml.ggml_threadpool_new(2)
    assert tp and ggml.ggml_threadpool_get_n_threads(tp) == 2
    try:
        for _ in range(3):
            ggml.tensor_set_numpy(y, np.zeros((3, 4), np.float32))
            assert ggml.ggml_graph_compute(gf, tp) == ggml.GGML_STATUS_SUCCESS
            np.testing.assert_array_equal(ggml.tensor_to_numpy(y), np.arange(12, dtype=np.float32).reshape(3, 4) / 2)
    finally:
        ggml.ggml_threadpool_free(tp)
    ggml.ggml_threadpool_free(None)  # NULL-safe


def test_arena_exhaustion_returns_null_and_logs(lib_path):
    size = 4 * ggml.ggml_tensor_overhead() + 4096
    c = ggml.ggml_init(ggml.ggml_init_params(mem_size=size, mem_buffer=None, no_alloc=False))
    assert c
    try:
        made = []
        with ggml.capture_log() as log:
            for _ in range(64):
                t = ggml.ggml_new_tensor_1d(c, ggml.GGML_TYPE_F32, 256)  # 1 KiB each
                if t is None:
                    break
                made.append(t)
            assert t is None, "a 64-tensor loop never filled a tiny arena"
            assert 0 < len(made) < 64
            # Still full, still no crash; a graph does not fit either.
            assert ggml.ggml_new_tensor_1d(c, ggml.GGML_TYPE_F32, 256) is None
            assert ggml.ggml_new_graph(c) is None
            with pytest.raises(ggml.LlamaError, match="NULL"):
                ggml.tensor_from_numpy(c, np.ones(256, np.float32))
        assert any(level == ggml.GGML_LOG_LEVEL_ERROR for level, _ in log), log
        assert ggml.ggml_used_mem(c) <= size
        # Earlier tensors stay intact and usable.
        ggml.tensor_set_numpy(made[0], np.full(256, 7, np.float32))
        assert ggml.tensor_to_numpy(made[0]).sum() == 7 * 256
        # After a reset the arena is usable again.
        ggml.ggml_reset(c)
        assert ggml.ggml_used_mem(c) == 0
        assert ggml.ggml_new_tensor_1d(c, ggml.GGML_TYPE_F32, 256) is not None
    finally:
        ggml.ggml_free(c)
    ggml.ggml_free(None)  # NULL-safe


def test_bad_shapes_return_null_not_abort(ctx):
    a = ggml.ggml_new_tensor_2d(ctx, ggml.GGML_TYPE_F32, 4, 3)
    b = ggml.ggml_new_tensor_2d(ctx, ggml.GGML_TYPE_F32, 5, 2)
    with ggml.capture_log() as log:
        assert ggml.ggml_mul_mat(ctx, a, b) is None  # K differs
        assert ggml.ggml_add(ctx, a, b) is None       # not broadcastable
    assert len(log) >= 2


# ---- views and NumPy ----

def test_views_share_data(ctx):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)  # ne = [6, 4]
    a = ggml.tensor_from_numpy(ctx, base)
    a_data = ggml.ggml_get_data(a)

    v = ggml.ggml_view_2d(ctx, a, 3, 2, 6 * 4, 1 * 6 * 4 + 2 * 4)  # rows 1-2, cols 2-4
    assert ggml.ggml_get_data(v) == a_data + 6 * 4 + 2 * 4
    assert ggml.tensor_struct(v).view_offs == 6 * 4 + 2 * 4
    np.testing.assert_array_equal(ggml.tensor_to_numpy(v), base[1:3, 2:5])
    ggml.tensor_to_numpy(v)[...] = -1  # writes through to a
    expect = base.copy()
    expect[1:3, 2:5] = -1
    np.testing.assert_array_equal(ggml.tensor_to_numpy(a), expect)

    t = ggml.ggml_transpose(ctx, a)
    assert ggml.ggml_get_data(t) == a_data and ggml.ggml_is_transposed(t)
    np.testing.assert_array_equal(ggml.tensor_to_numpy(t), expect.T)

    p = ggml.ggml_permute(ctx, ggml.ggml_reshape_3d(ctx, a, 6, 2, 2), 2, 0, 1, 3)
    assert ggml.ggml_get_data(p) == a_data
    np.testing.assert_array_equal(ggml.tensor_to_numpy(p), _permute_ref(expect.reshape(2, 2, 6), (2, 0, 1)))

    # A view computed through a graph: cont() of the transposed view equals NumPy's .T.
    c = ggml.ggml_cont(ctx, t)
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, c)
    compute(ctx, gf, 2)
    assert ggml.ggml_is_contiguous(c)
    np.testing.assert_array_equal(ggml.tensor_to_numpy(c), expect.T)


def _permute_ref(arr, axes):
    """NumPy result of ggml_permute(t, *axes) for a tensor whose NumPy view is arr:
    ggml dim i (NumPy axis n-1-i) moves to ggml position axes[i]."""
    n = arr.ndim
    src_for_dst = [0] * n
    for i, a in enumerate(axes):
        src_for_dst[a] = i
    # NumPy axis k of the result is ggml dim n-1-k, which came from ggml dim src_for_dst[n-1-k].
    return np.transpose(arr, [n - 1 - src_for_dst[n - 1 - k] for k in range(n)])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 5), (1, 1, 6)])
def test_numpy_round_trip(ctx, dtype, shape):
    rng = np.random.default_rng(3)
    arr = (rng.standard_normal(shape) * 50).astype(dtype)
    t = ggml.tensor_from_numpy(ctx, arr)
    st = ggml.tensor_struct(t)
    assert st.type == ggml.ggml_type_for_dtype(dtype)
    assert list(st.ne)[: len(shape)] == list(reversed(shape))
    assert ggml.ggml_nelements(t) == arr.size and ggml.ggml_nbytes(t) == arr.nbytes
    out = ggml.tensor_to_numpy(t)
    assert out.shape == ggml.tensor_shape(t)
    np.testing.assert_array_equal(out.reshape(arr.shape), arr)
    assert out.ctypes.data == ggml.ggml_get_data(t)  # a view, not a copy
    arr2 = (rng.standard_normal(shape) * 50).astype(dtype)
    ggml.tensor_set_numpy(t, arr2)
    np.testing.assert_array_equal(ggml.tensor_to_numpy(t).reshape(arr.shape), arr2)


def test_numpy_type_conversion_and_errors(ctx):
    x = np.linspace(-1, 1, 10)
    t = ggml.tensor_from_numpy(ctx, x, type=ggml.GGML_TYPE_F16)
    assert ggml.tensor_struct(t).type == ggml.GGML_TYPE_F16
    np.testing.assert_array_equal(ggml.tensor_to_numpy(t), x.astype(np.float16))
    with pytest.raises(TypeError):
        ggml.tensor_from_numpy(ctx, np.ones(4, np.uint8))
    with pytest.raises(ValueError):
        ggml.tensor_from_numpy(ctx, np.ones((1, 1, 1, 1, 2), np.float32))
    with pytest.raises(ValueError):
        ggml.tensor_set_numpy(t, np.ones(11))
    bf = ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_BF16, 8)
    with pytest.raises(TypeError):
        ggml.tensor_to_numpy(bf)
    assert ggml.tensor_to_numpy(bf, raw=True).shape == (16,)
    with pytest.raises(ValueError):
        ggml.tensor_to_numpy(None)


def test_no_alloc_context_tensors_have_no_data(lib_path):
    c = ggml.ggml_init(ggml.ggml_init_params(mem_size=MB, mem_buffer=None, no_alloc=True))
    try:
        t = ggml.ggml_new_tensor_2d(c, ggml.GGML_TYPE_F32, 4, 4)
        assert t and ggml.ggml_get_data(t) is None
        with pytest.raises(ValueError):
            ggml.tensor_to_numpy(t)
    finally:
        ggml.ggml_free(c)


# ---- ABI check ----

def test_abi_matches_library(lib_path):
    assert ggml.ggml_abi_version() == ggml.GGML_ABI_VERSION
    for pystruct, c_name in ggml.ABI_CHECKED_STRUCTS:
        ggml.check_struct_layout(pystruct, c_name)
        assert ggml.ggml_abi_struct_size(c_name.encode()) == ctypes.sizeof(pystruct)


def _tensor_copy(fields):
    class ggml_tensor_copy(ctypes.Structure):
        pass
    ggml_tensor_copy._fields_ = fields
    return ggml_tensor_copy


def test_abi_check_fails_loudly_on_reordered_field(lib_path):
    fields = list(ggml.ggml_tensor._fields_)
    i, j = [f[0] for f in fields].index("op"), [f[0] for f in fields].index("flags")
    fields[i], fields[j] = fields[j], fields[i]  # same types, swapped order: same size
    copy = _tensor_copy(fields)
    assert ctypes.sizeof(copy) == ctypes.sizeof(ggml.ggml_tensor)
    with pytest.raises(ggml.ABIMismatch, match=r"ggml_tensor.*'flags'"):
        ggml.check_struct_layout(copy, "ggml_tensor")


def test_abi_check_fails_on_size_unknown_field_and_struct(lib_path):
    longer = [(f[0], ctypes.c_char * 16) if f[0] == "padding" else f for f in ggml.ggml_tensor._fields_]
    with pytest.raises(ggml.ABIMismatch, match=r"ggml_tensor: size .*'padding'"):
        ggml.check_struct_layout(_tensor_copy(longer), "ggml_tensor")
    renamed = [("kind" if f[0] == "type" else f[0],) + tuple(f[1:]) for f in ggml.ggml_tensor._fields_]
    with pytest.raises(ggml.ABIMismatch, match=r"ggml_tensor: field 'kind'.*unknown"):
        ggml.check_struct_layout(_tensor_copy(renamed), "ggml_tensor")
    with pytest.raises(ggml.ABIMismatch, match=r"no_such_struct"):
        ggml.check_struct_layout(ggml.ggml_init_params, "no_such_struct")


def test_abi_version_mismatch_is_refused_naming_both(lib_path):
    v = ggml.GGML_ABI_VERSION
    with pytest.raises(ggml.ABIMismatch, match=rf"ABI version 999.*ABI version {v}|ABI version {v}.*ABI version 999"):
        ggml.check_abi_version(expected=999)
    with pytest.raises(ggml.ABIMismatch, match=r"ABI version 7"):
        ggml.check_abi_version(expected=1, actual=7)


def test_log_callback_is_kept_alive_and_removable(ctx):
    with ggml.capture_log() as log:
        assert ggml.ggml_add(ctx, ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, 3),
                             ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, 2)) is None
        assert ggml._log_callback_ref is not None
    assert log and all(isinstance(text, str) for _, text in log)
    assert ggml._log_callback_ref is None  # C default restored


def test_abort_callback_stops_compute_and_none_removes_it(ctx):
    x = ggml.tensor_from_numpy(ctx, np.ones(16, np.float32))
    y = ggml.ggml_scale(ctx, ggml.ggml_add(ctx, x, x), 3.0)
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, y)
    tp = ggml.ggml_threadpool_new(2)
    calls = []
    cb = ggml.ggml_abort_callback(lambda data: calls.append(1) or True)
    try:
        ggml.ggml_threadpool_set_abort_callback(tp, cb, None)
        ggml.tensor_set_numpy(y, np.zeros(16, np.float32))
        assert ggml.ggml_graph_compute(gf, tp) == ggml.GGML_STATUS_ABORTED
        assert calls and not np.all(ggml.tensor_to_numpy(y) == 6)
        ggml.ggml_threadpool_set_abort_callback(tp, None, None)  # None passes as NULL
        assert ggml.ggml_graph_compute(gf, tp) == ggml.GGML_STATUS_SUCCESS
        np.testing.assert_array_equal(ggml.tensor_to_numpy(y), np.full(16, 6, np.float32))
    finally:
        ggml.ggml_threadpool_free(tp)


def test_format_name_is_variadic(ctx):
    t = ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, 4)
    ggml.ggml_format_name(t, b"blk.%d.%s", ctypes.c_int(5), b"attn_q")
    assert ggml.ggml_get_name(t) == b"blk.5.attn_q"
    assert ggml.ggml_get_tensor(ctx, b"blk.5.attn_q") == t
