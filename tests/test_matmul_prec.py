"""MUL_MAT of Q8_0 weights at high precision (ggml_mul_mat_set_prec(node, GGML_PREC_F32), what the
lm head asks; ggml/src/ggml-cpu/ops-matmul-float.c): the weights' dequantized values (gguf.quants,
an independent quantizer) times the activations rounded to 16 bits per 32-block as
matmul-float.h documents (NumPy below), in float64, within F32 rounding; against the exact
product within the 16-bit rounding, where the default int8 path (activations rounded to Q8_0)
is far coarser; a column's bits do not depend on the batch, the thread count or the kernel set.
K-quant weights (below): q4_K, q5_K, q6_K against activations rounded per 32 (q8_1), q2_K and
q3_K per 256 (q8_K), on the GEMM and vec_dot paths, weights dequantized by gguf.quants."""
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


# ---- K-quant weights: activations rounded with one float scale per 32 (q8_1) ----
#
# q4_K, q5_K and q6_K meet activations quantized like q8_1 (per 32 values: da = amax/127 in
# F32, q = x/da rounded half away from zero); q2_K and q3_K still meet q8_K ones (per 256:
# da = 1/(127/amax), q = x*(127/amax) rounded half to even). The weights are random block bytes
# (scales made sane) dequantized by gguf.quants, so neither side of the reference is our code.

KQ = {"Q2_K": (ggml.GGML_TYPE_Q2_K, 84, (80, 82)), "Q3_K": (ggml.GGML_TYPE_Q3_K, 110, (108,)),
      "Q4_K": (ggml.GGML_TYPE_Q4_K, 144, (0, 2)), "Q5_K": (ggml.GGML_TYPE_Q5_K, 176, (0, 2)),
      "Q6_K": (ggml.GGML_TYPE_Q6_K, 210, (208,))}  # type, block bytes, offsets of its fp16 scales
PER32 = ("Q4_K", "Q5_K", "Q6_K")


def kq_blocks(name, M, K, rng):
    """Random blocks of `name` for M rows of K, and their values by gguf.quants."""
    _, nbytes, soffs = KQ[name]
    raw = rng.integers(0, 256, (M * (K // 256), nbytes), dtype=np.uint8)
    for o in soffs:  # fp16 super-block scales in a sane range, rows of different magnitude
        raw[:, o:o + 2] = rng.uniform(2e-4, 4e-3, (len(raw), 1)).astype(np.float16).view(np.uint8)
    qt = getattr(gguf.GGMLQuantizationType, name)
    return raw, gguf.quants.dequantize(raw, qt).reshape(M, K).astype(np.float64)


def act_round(b: np.ndarray, per: int):
    """b's values after the activation quantizer: per 32 (q8_1) or per 256 (q8_K)."""
    x = b.astype(np.float32).reshape(len(b), -1, per)
    amax = np.abs(x).max(-1, keepdims=True)
    if per == 32:
        da = (amax / np.float32(127)).astype(np.float32)
        inv = np.where(da > 0, np.float32(1) / np.where(da > 0, da, 1), 0).astype(np.float32)
        v = (x * inv).astype(np.float32)
        q = np.where(v >= 0, np.floor(v + 0.5), np.ceil(v - 0.5))
    else:
        isc = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
        da = np.where(amax > 0, np.float32(1) / np.where(isc > 0, isc, 1), 0).astype(np.float32)
        q = np.clip(np.rint((x * isc).astype(np.float32)), -127, 127)
    return (q.astype(np.float64) * da).reshape(b.shape)


def run_kq(name, K, M, N, n_threads, seed=0, cols=None, outliers=True):
    rng = np.random.default_rng(seed)
    raw, wv = kq_blocks(name, M, K, rng)
    bv = rng.standard_normal((max(N, 24), K)).astype(np.float32)
    if outliers:  # GeGLU-like: a few large values per row, so one scale per 256 loses the rest
        idx = rng.integers(0, K, (len(bv), K // 128))
        np.put_along_axis(bv, idx, rng.uniform(20, 60, idx.shape).astype(np.float32), axis=1)
    bv = bv[cols] if cols is not None else bv[:N]
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * 1024 * 1024, mem_buffer=None, no_alloc=False))
    try:
        a = ggml.ggml_new_tensor_2d(ctx, KQ[name][0], K, M)
        ggml.tensor_to_numpy(a, raw=True).reshape(raw.shape)[...] = raw
        b = ggml.tensor_from_numpy(ctx, np.ascontiguousarray(bv), F32)
        out = ggml.ggml_mul_mat(ctx, a, b)
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, out)
        assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
        got = np.array(ggml.tensor_to_numpy(out), dtype=np.float32).reshape(len(bv), M)
        return got, wv, bv.astype(np.float64)
    finally:
        ggml.ggml_free(ctx)


KQ_SHAPES = [(256, 16, 1), (512, 37, 1), (768, 48, 7), (1280, 21, 19)]  # K, M, N


@pytest.mark.parametrize("name", list(KQ))
@pytest.mark.parametrize("shape", KQ_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kquant_activations_rounded_per_32(name, shape):
    K, M, N = shape
    got, wv, bv = run_kq(name, K, M, N, 2)
    per = 32 if name in PER32 else 256
    bq = act_round(bv, per)
    ref, scale = bq @ wv.T, np.abs(bq) @ np.abs(wv).T
    tol = (K // 16 + 4) * 2.0 ** -23 * scale + 1e-30  # F32 rounding of a sum of K/16 block terms
    assert np.all(np.abs(got - ref) <= tol), f"max err {np.max(np.abs(got - ref) / tol):.3g} x tolerance"
    if per == 32:  # the other rounding is far outside that: the test tells them apart
        other = act_round(bv, 256) @ wv.T
        assert np.max(np.abs(got - other) / tol) > 10


@pytest.mark.parametrize("name", list(KQ))
def test_kquant_column_independent_of_batch_and_threads(name):
    K, M = 768, 48
    full, _, _ = run_kq(name, K, M, 24, 2, seed=5)
    again, _, _ = run_kq(name, K, M, 24, 1, seed=5)
    assert np.array_equal(again.view(np.uint32), full.view(np.uint32)), "1 thread differs"
    for cols in ([3], [0, 1], list(range(9, 20))):
        part, _, _ = run_kq(name, K, M, len(cols), 2, seed=5, cols=cols)
        assert np.array_equal(part.view(np.uint32), full[cols].view(np.uint32)), f"columns {cols} alone differ"


_KQ_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_matmul_prec import run_kq
from llama_py import ggml
bits = []
for name in ("Q4_K", "Q5_K", "Q6_K", "Q2_K", "Q3_K"):
    for n in (1, 5):
        got, _, _ = run_kq(name, 768, 37, n, 2, seed=13)
        bits += got.view(np.uint32).ravel().tolist()
print(json.dumps([ggml.ggml_cpu_variant().decode(), bits]))
"""


def test_kquant_x86_kernel_sets_give_the_same_bits():
    """The AVX2, AVX-VNNI and AVX-512 tiles and one-column kernels follow gemm.h's float order:
    the same bits (the portable set runs vec_dot, whose float order differs); q2_K and q3_K too
    since they have repacked layouts (one column: the repacked 1-column kernel on stored rows)."""
    def bits(variant):
        env = dict(os.environ, GGML_CPU_VARIANT=variant,
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run([sys.executable, "-c", _KQ_CHILD.format(tests=str(ROOT / "tests"))], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        name, b = json.loads(r.stdout.strip().splitlines()[-1])
        return name, np.array(b, dtype=np.uint32)
    seen = {}
    for v in ("avx2", "avxvnni", "avx512"):
        name, b = bits(v)
        if name in seen or name not in ("avx2", "avxvnni", "avx512"):
            continue
        seen[name] = b
    if len(seen) < 2:
        pytest.skip("fewer than two x86 kernel sets on this machine")
    first = next(iter(seen))
    for name, b in seen.items():
        assert np.array_equal(b, seen[first]), f"{name} differs from {first}"


_KQ_COLS_CHILD = """
import sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_matmul_prec import run_kq
from llama_py import ggml
for name in ("Q2_K", "Q3_K"):
    full, _, _ = run_kq(name, 768, 37, 24, 2, seed=17)
    for cols in ([5], [0, 1, 2], list(range(2, 13)), list(range(16, 24))):
        part, _, _ = run_kq(name, 768, 37, len(cols), 2, seed=17, cols=cols)
        assert np.array_equal(part.view(np.uint32), full[cols].view(np.uint32)), (name, cols)
print(ggml.ggml_cpu_variant().decode())
"""


@pytest.mark.parametrize("variant", ["avx2", "avxvnni", "avx512"])
def test_q2_K_q3_K_four_column_kernels_keep_the_bits(variant):
    """q2_K / q3_K columns (the GEMM tiles on the x86 sets, whose vec_dot path has a 4-column dot)
    must get the bits of a column alone whatever group they fall in (columns alone, in groups of
    4 and 8 and left over, in another tile)."""
    env = dict(os.environ, GGML_CPU_VARIANT=variant,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _KQ_COLS_CHILD.format(tests=str(ROOT / "tests"))], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = r.stdout.strip().splitlines()[-1]
    if got != variant:
        pytest.skip(f"the {variant} kernel set does not run here ({got} ran)")


_KQ_VEC_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_matmul_prec import run_kq, act_round
from llama_py import ggml
worst = 0.0
for name in ("Q4_K", "Q5_K", "Q6_K"):
    for K, M, N in ((256, 16, 1), (1280, 21, 5)):
        got, wv, bv = run_kq(name, K, M, N, 2, seed=7)
        bq = act_round(bv, 32)
        tol = (K // 16 + 4) * 2.0 ** -23 * (np.abs(bq) @ np.abs(wv).T) + 1e-30
        worst = max(worst, float(np.max(np.abs(got - bq @ wv.T) / tol)))
print(json.dumps([ggml.ggml_cpu_variant().decode(), worst]))
"""


@pytest.mark.parametrize("variant", ["portable", "avx2", "avx512"])
def test_kquant_vec_dot_path_rounds_per_32(variant):
    """With the GEMM off (and on the portable set, which has none) K-quants run the vec_dot
    kernels against q8_1: the same per-32 rounding, within F32 rounding."""
    env = dict(os.environ, GGML_CPU_VARIANT=variant, GGML_CPU_GEMM="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _KQ_VEC_CHILD.format(tests=str(ROOT / "tests"))], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    name, worst = json.loads(r.stdout.strip().splitlines()[-1])
    if name != variant:
        pytest.skip(f"{variant} is not available here ({name} ran)")
    assert worst <= 1, f"{name}: max err {worst:.3g} x tolerance"
