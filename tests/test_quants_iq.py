"""IQ4_NL, IQ4_XS, MXFP4, the codebook types (IQ3 / IQ2 / IQ1) and TQ1_0 / TQ2_0 in graphs:
ggml_mul_mat against the float64 product of the gguf package's dequantized weights with the
activations rounded as the kernels round them (Q8_0 per 32 through gguf.quants, Q8_K per 256
emulated here), bit identity across thread counts and batch splits, and ggml_get_rows equal to
gguf's dequantization bit for bit. Block-level checks live in test_quants.py."""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_float, c_int, c_int64, c_void_p

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as QT  # noqa: E402
from gguf import quants as gq  # noqa: E402

import test_quants as T  # noqa: E402

Q8_0_ACT = (20, 23, 39)   # IQ4_NL, IQ4_XS, MXFP4: activations in Q8_0
TYPES = list(T.IQ_TYPES)


@pytest.fixture(scope="module")
def lib():
    return T._lib.load_library()


def weight_bytes(lib, t: int, rows: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """rows x k weights of type t: quantized normals where we quantize, else random blocks."""
    if t in T.QUANT_TYPES:
        x = rng.normal(0, 1, rows * k).astype(np.float32)
        if t in T.TERNARY:
            x = np.sign(x).astype(np.float32)
        return T.c_quantize(lib, t, x)
    bs, ts = T.EXPECTED_SIZES[t]
    nb = rows * k // bs
    raw = T.random_blocks(t, nb, rng).reshape(nb, ts)
    if t == 29:  # IQ1_M: its fp16 scale is spread over the top nibbles of the four scale words
        sc = raw[:, 48:56].copy().view(np.uint16).reshape(nb, 4)
        h = rng.uniform(0.01, 0.1, nb).astype(np.float16).view(np.uint16)
        for j in range(4):
            sc[:, j] = (sc[:, j] & 0x0FFF) | (((h >> (4 * j)) & 0xF) << 12)
        raw[:, 48:56] = sc.view(np.uint8).reshape(nb, 8)
    return raw.ravel()


def round_activations(t: int, x: np.ndarray) -> np.ndarray:
    """x (columns of k floats) as the matmul's activation quantizer rounds it."""
    if t in Q8_0_ACT:
        q = gq.quantize(x.astype(np.float32), QT.Q8_0)
        return gq.dequantize(q, QT.Q8_0).astype(np.float64)
    # Q8_K: per 256, iscale = 127 / amax, nearest integer, d = 1 / iscale
    b = x.astype(np.float32).reshape(-1, 256)
    amax = np.abs(b).max(axis=1, keepdims=True)
    iscale = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
    q = np.clip(np.rint(iscale * b), -127, 127)
    d = np.where(iscale > 0, np.float32(1) / np.where(iscale > 0, iscale, 1), 0).astype(np.float32)
    return (d.astype(np.float64) * q).reshape(x.shape)


def graph_run(lib, build, n_threads: int = 1):
    """Runs build(ctx, new2d) -> (output tensor, its float count) in a fresh context."""
    init = T._bind(lib, "ggml_init", [T.InitParams], c_void_p)
    free = T._bind(lib, "ggml_free", [c_void_p], None)
    new_graph = T._bind(lib, "ggml_new_graph", [c_void_p], c_void_p)
    expand = T._bind(lib, "ggml_build_forward_expand", [c_void_p, c_void_p], None)
    compute = T._bind(lib, "ggml_graph_compute_with_ctx", [c_void_p, c_void_p, c_int], c_int)
    get_data = T._bind(lib, "ggml_get_data", [c_void_p], c_void_p)
    ctx = init(T.InitParams(256 * 1024 * 1024, None, False))
    assert ctx
    try:
        out, n = build(ctx, get_data)
        gf = new_graph(ctx)
        expand(gf, out)
        assert compute(ctx, gf, n_threads) == 0
        return np.ctypeslib.as_array(ctypes.cast(get_data(out), POINTER(c_float)), shape=(n,)).copy()
    finally:
        free(ctx)


def mul_mat(lib, t: int, wq: np.ndarray, rows: int, k: int, x: np.ndarray, n_threads: int = 1) -> np.ndarray:
    new2d = T._bind(lib, "ggml_new_tensor_2d", [c_void_p, c_int, c_int64, c_int64], c_void_p)
    mm = T._bind(lib, "ggml_mul_mat", [c_void_p, c_void_p, c_void_p], c_void_p)
    n = x.shape[0]

    def build(ctx, get_data):
        a = new2d(ctx, t, k, rows)
        b = new2d(ctx, 0, k, n)
        ctypes.memmove(get_data(a), wq.ctypes.data, wq.nbytes)
        xb = np.ascontiguousarray(x, dtype=np.float32)
        ctypes.memmove(get_data(b), xb.ctypes.data, xb.nbytes)
        return mm(ctx, a, b), rows * n

    return graph_run(lib, build, n_threads).reshape(n, rows)


@pytest.mark.parametrize("t", TYPES, ids=lambda t: QT(t).name)
def test_mul_mat_matches_dequantized_reference(lib, t):
    rng = np.random.default_rng(500 + t)
    rows, k, n = 24, 512, 9
    wq = weight_bytes(lib, t, rows, k, rng)
    w = gq.dequantize(wq.reshape(rows, -1), QT(t)).astype(np.float64)
    x = rng.normal(0, 1, (n, k)).astype(np.float32)
    xr = round_activations(t, x)
    want = xr @ w.T
    scale = np.abs(xr) @ np.abs(w).T
    got = mul_mat(lib, t, wq, rows, k, x)
    err = np.abs(got - want) / np.maximum(scale, 1e-30)
    assert err.max() < 1e-5, f"{QT(t).name}: worst relative error {err.max():.2e}"


@pytest.mark.parametrize("t", TYPES, ids=lambda t: QT(t).name)
def test_mul_mat_bits_same_across_threads_and_batches(lib, t):
    rng = np.random.default_rng(900 + t)
    rows, k, n = 40, 768, 7
    wq = weight_bytes(lib, t, rows, k, rng)
    x = rng.normal(0, 1, (n, k)).astype(np.float32)
    ref = mul_mat(lib, t, wq, rows, k, x, n_threads=1)
    assert np.array_equal(ref, mul_mat(lib, t, wq, rows, k, x, n_threads=3))
    for j in (0, 4, 6):  # a column alone gives its bits in the batch
        one = mul_mat(lib, t, wq, rows, k, x[j:j + 1], n_threads=2)
        assert np.array_equal(one[0].view(np.uint32), ref[j].view(np.uint32)), f"{QT(t).name} column {j}"


@pytest.mark.parametrize("t", TYPES, ids=lambda t: QT(t).name)
def test_get_rows_equals_gguf_dequantize(lib, t):
    rng = np.random.default_rng(40 + t)
    rows, k = 10, 512
    wq = weight_bytes(lib, t, rows, k, rng)
    with np.errstate(all="ignore"):
        w = gq.dequantize(wq.reshape(rows, -1), QT(t))
    ids = np.array([3, 0, 9, 3, 7], dtype=np.int32)
    new1d = T._bind(lib, "ggml_new_tensor_1d", [c_void_p, c_int, c_int64], c_void_p)
    new2d = T._bind(lib, "ggml_new_tensor_2d", [c_void_p, c_int, c_int64, c_int64], c_void_p)
    get_rows = T._bind(lib, "ggml_get_rows", [c_void_p, c_void_p, c_void_p], c_void_p)

    def build(ctx, get_data):
        a = new2d(ctx, t, k, rows)
        i = new1d(ctx, 26, len(ids))
        ctypes.memmove(get_data(a), wq.ctypes.data, wq.nbytes)
        ctypes.memmove(get_data(i), ids.ctypes.data, ids.nbytes)
        return get_rows(ctx, a, i), len(ids) * k

    got = graph_run(lib, build).reshape(len(ids), k)
    T.assert_bits_equal(got, w[ids], f"get_rows {QT(t).name}")


@pytest.mark.parametrize("t", [16, 17, 19, 29], ids=lambda t: QT(t).name)
def test_imatrix_only_types_quantize_through_chunk(lib, t):
    """IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M: ggml_quantize_chunk needs the importance matrix (0 without),
    and with it writes blocks that gguf.quants reads back within the type's error."""
    qc = T._bind(lib, "ggml_quantize_chunk", [c_int, c_void_p, c_void_p, c_int64, c_int64, c_int64, c_void_p],
                 ctypes.c_size_t)
    rng = np.random.default_rng(t)
    rows, k = 4, 1024
    x = rng.normal(0, 1, rows * k).astype(np.float32)
    ts = T.EXPECTED_SIZES[t][1]
    out = np.zeros(rows * k // 256 * ts, dtype=np.uint8)
    assert qc(t, x.ctypes.data, out.ctypes.data, 0, rows, k, None) == 0
    im = rng.uniform(0.5, 2.0, k).astype(np.float32)
    assert qc(t, x.ctypes.data, out.ctypes.data, 0, rows, k, im.ctypes.data) == out.nbytes
    y = gq.dequantize(out, QT(t))
    rel = float(np.sqrt(np.mean((y - x) ** 2) / np.mean(x ** 2)))
    assert rel < {16: 0.36, 17: 0.31, 19: 0.5, 29: 0.46}[t], f"{QT(t).name} relative rmse {rel:.3f}"


_SETS_CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_quants as T
from test_quants_iq import weight_bytes, mul_mat
from llama_py import ggml
lib = T._lib.load_library()
bits = []
for t in (20, 23, 16, 17, 22, 18, 21, 19, 29):  # IQ4_NL, IQ4_XS, IQ2_XXS/XS/S, IQ3_XXS/S, IQ1_S/M
    rng = np.random.default_rng(70 + t)
    wq = weight_bytes(lib, t, 48, 768, rng)
    x = rng.normal(0, 1, (9, 768)).astype(np.float32)
    for n in (1, 2, 9):
        bits += mul_mat(lib, t, wq, 48, 768, x[:n], n_threads=2).view(np.uint32).ravel().tolist()
print(json.dumps([ggml.ggml_cpu_variant().decode(), bits]))
"""


def test_iq_x86_kernel_sets_give_the_same_bits():
    """The IQ types run the GEMM tiles (one column: IQ4_NL / IQ4_XS the repacked 1-column kernel,
    the codebook and IQ1 types the AVX2 set's gemv) on the AVX2, AVX-VNNI and AVX-512 sets, in
    gemm.h's float order: the same bits on each (the portable set keeps vec_dot, whose float
    order differs)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    tests = Path(__file__).resolve().parent
    seen = {}
    for v in ("avx2", "avxvnni", "avx512"):
        env = dict(os.environ, GGML_CPU_VARIANT=v,
                   PYTHONPATH=str(tests.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run([sys.executable, "-c", _SETS_CHILD.format(tests=str(tests))], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        name, b = json.loads(r.stdout.strip().splitlines()[-1])
        if name == v:
            seen[name] = np.array(b, dtype=np.uint32)
    if len(seen) < 2:
        pytest.skip("fewer than two x86 kernel sets on this machine")
    first = next(iter(seen))
    for name, b in seen.items():
        assert np.array_equal(b, seen[first]), f"{name} differs from {first}"
