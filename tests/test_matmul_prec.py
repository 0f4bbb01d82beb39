"""MUL_MAT of Q8_0 weights at high precision (ggml_mul_mat_set_prec(node, GGML_PREC_F32), what the
lm head asks; ggml/src/ggml-cpu/ops-matmul-float.c): the weights' dequantized values (gguf.quants,
an independent quantizer) times the activations rounded to 16 bits per 32-block as
matmul-float.h documents (NumPy below), in float64, within F32 rounding; against the exact
product within the 16-bit rounding, where the default int8 path (activations rounded to Q8_0)
is far coarser; a column's bits do not depend on the batch, the thread count or the kernel set."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llama_py import ggml

gguf = pytest.importorskip("gguf", reason="the gguf package (an independent Q8_0 quantizer) is not installed")

F32, Q8_0 = ggml.GGML_TYPE_F32, ggml.GGML_TYPE_Q8_0
ROOT = Path(__file__).resolve().parent.parent


def run(K, M, N, n_threads, prec=ggml.GGML_PREC_F32, seed=0, cols=None):
    """out [N, M] for random weights (seeded) and activations (columns `cols` of a seeded batch)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K)).astype(np.float32) * rng.uniform(0.1, 3, (M, 1)).astype(np.float32)
    bv = rng.standard_normal((max(N, 40), K)).astype(np.float32)
    bv = bv[cols] if cols is not None else bv[:N]
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * 1024 * 1024, mem_buffer=None, no_alloc=False))
    try:
        a = ggml.ggml_new_tensor_2d(ctx, Q8_0, K, M)
        q = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q8_0)
        ggml.tensor_to_numpy(a, raw=True).reshape(q.shape)[...] = q
        av = gguf.quants.dequantize(q, gguf.GGMLQuantizationType.Q8_0).astype(np.float64)
        b = ggml.tensor_from_numpy(ctx, np.ascontiguousarray(bv), F32)
        out = ggml.ggml_mul_mat(ctx, a, b)
        if prec is not None:
            ggml.ggml_mul_mat_set_prec(out, prec)
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, out)
        assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
        got = np.array(ggml.tensor_to_numpy(out), dtype=np.float32).reshape(len(bv), M)
        return got, av, bv.astype(np.float64)
    finally:
        ggml.ggml_free(ctx)


SHAPES = [(32, 1, 1), (640, 37, 1), (640, 48, 7), (896, 21, 40), (2048, 16, 3)]  # K, M, N


def a16(b: np.ndarray):
    """The 16-bit activations of matmul-float.h: per 32-block da = amax/32767 (F32), q = x/da
    rounded half away from zero. Returns (dequantized values, half a step per element)."""
    x = b.astype(np.float32).reshape(len(b), -1, 32)
    da = (np.abs(x).max(-1, keepdims=True) / np.float32(32767)).astype(np.float32)
    inv = np.where(da > 0, np.float32(1) / np.where(da > 0, da, 1), 0).astype(np.float32)
    v = (x * inv).astype(np.float32)
    q = np.clip(np.where(v >= 0, np.floor(v + 0.5), np.ceil(v - 0.5)), -32767, 32767)
    deq = (q.astype(np.float64) * da).reshape(b.shape)
    return deq, np.broadcast_to(da / 2, x.shape).reshape(b.shape).astype(np.float64)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("n_threads", [1, 2])
def test_values_match_float64(shape, n_threads):
    K, M, N = shape
    got, av, bv = run(K, M, N, n_threads)
    bq, half = a16(bv)
    # the documented arithmetic: F32 rounding only (one fma per block, the int sums exact)
    ref, scale = bq @ av.T, np.abs(bq) @ np.abs(av).T
    tol = (K // 32 + 2) * 2.0 ** -23 * scale + 1e-30
    assert np.all(np.abs(got - ref) <= tol), f"max err {np.max(np.abs(got - ref) / tol):.3g} x tolerance"
    # the exact product: within the 16-bit rounding of the activations
    exact, bound = bv @ av.T, half @ np.abs(av).T * 1.001 + tol
    assert np.all(np.abs(got - exact) <= bound), f"max err {np.max(np.abs(got - exact) / bound):.3g} x bound"


def test_default_precision_rounds_activations():
    """Without the request the activations go through Q8_0: errors far beyond the F32 bound (so
    the test above can tell the paths apart)."""
    K, M, N = 640, 48, 7
    got, av, bv = run(K, M, N, 2, prec=None)
    _, half = a16(bv)
    bound = half @ np.abs(av).T
    assert np.max(np.abs(got - bv @ av.T) / bound) > 10


def test_column_independent_of_batch_and_threads():
    K, M = 640, 80
    full, _, _ = run(K, M, 40, 2, seed=3)
    for nth in (1, 3):
        again, _, _ = run(K, M, 40, nth, seed=3)
        assert np.array_equal(again.view(np.uint32), full.view(np.uint32)), f"{nth} threads differ"
    for cols in ([5], [0, 1], list(range(11, 24))):
        part, _, _ = run(K, M, len(cols), 2, seed=3, cols=cols)
        assert np.array_equal(part.view(np.uint32), full[cols].view(np.uint32)), f"columns {cols} alone differ"


_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_matmul_prec import run
from llama_py import ggml
got, _, _ = run(896, 37, 5, 2, seed=11)
print(json.dumps([ggml.ggml_cpu_variant().decode(), got.view(np.uint32).ravel().tolist()]))
"""


def _variant_bits(variant: str):
    env = dict(os.environ, GGML_CPU_VARIANT=variant, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _CHILD.format(tests=str(ROOT / "tests"))], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    name, bits = json.loads(r.stdout.strip().splitlines()[-1])
    return name, np.array(bits, dtype=np.uint32)


def test_kernel_sets_give_the_same_bits():
    """The portable tile runs the F32 tile's chain with fmaf: every kernel set, the same bits."""
    base_name, base = _variant_bits("auto")
    seen = {base_name}
    for v in ("portable", "avx2", "avxvnni", "avx512"):
        name, bits = _variant_bits(v)
        if name in seen:
            continue   # not available here: the library fell back to another set
        seen.add(name)
        assert np.array_equal(bits, base), f"{name} differs from {base_name}"
    if len(seen) < 2:
        pytest.skip("only one kernel set on this machine")
