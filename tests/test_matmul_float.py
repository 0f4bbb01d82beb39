"""MUL_MAT with F32 / F16 / BF16 weights and F32 activations (ggml/src/ggml-cpu/ops-matmul-float.c
on AVX2 machines, the vec_dot path elsewhere): values against NumPy in float64 on the weights as
stored, and the bit-for-bit promises the llama layer relies on: a column's result does not depend
on the batch it came in, on its place in the batch, or on the thread count."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from llama_py import ggml

F32, F16, BF16 = ggml.GGML_TYPE_F32, ggml.GGML_TYPE_F16, ggml.GGML_TYPE_BF16
NAMES = {F32: "f32", F16: "f16", BF16: "bf16"}


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns, rounded to nearest even (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def weight(ctx, x: np.ndarray, type: int, row_pad: int = 0):
    """A [K, M, A2] weight holding x (A2, M, K), rows row_pad elements apart beyond K (a view,
    as the KV cache's are). Returns (tensor, the values it holds as float64)."""
    a2, m, k = x.shape
    if type == F32:
        held, bits = x.astype(np.float32), x.astype(np.float32).view(np.uint32)
    elif type == F16:
        held = x.astype(np.float16)
        bits = held.view(np.uint16)
    else:
        bits = to_bf16_bits(x)
        held = (bits.astype(np.uint32) << 16).view(np.float32)
    base = ggml.ggml_new_tensor_3d(ctx, type, k + row_pad, m, a2)
    bs = ggml.tensor_struct(base)
    t = ggml.ggml_view_3d(ctx, base, k, m, a2, bs.nb[1], bs.nb[2], 0) if row_pad else base
    esz = ggml.ggml_type_size(type)
    buf = (ctypes.c_uint8 * (bs.nb[2] * a2)).from_address(bs.data)
    raw = np.frombuffer(buf, dtype=bits.dtype).reshape(a2, m, k + row_pad)
    assert raw.itemsize == esz
    raw[..., :k] = bits
    return t, np.asarray(held, dtype=np.float64)


def run(K, M, N, A2, B2, type, n_threads, seed=0, row_pad=0, b_np=None):
    rng = np.random.default_rng(seed)
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * 1024 * 1024, mem_buffer=None, no_alloc=False))
    try:
        a, av = weight(ctx, rng.uniform(-1, 1, (A2, M, K)), type, row_pad)
        bv = rng.uniform(-1, 1, (B2, N, K)).astype(np.float32) if b_np is None else b_np
        b = ggml.tensor_from_numpy(ctx, bv, F32)
        out = ggml.ggml_mul_mat(ctx, a, b)
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, out)
        assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
        got = np.array(ggml.tensor_to_numpy(out), dtype=np.float32).reshape(B2, N, M)
        return got, av, bv.astype(np.float64)
    finally:
        ggml.ggml_free(ctx)


SHAPES = [  # K, M, N, A2, B2: tile remainders in rows (M % 4) and columns (N % 3, N % 8), GQA broadcast
    (8, 1, 1, 1, 1), (64, 5, 7, 1, 1), (256, 13, 4, 2, 6), (2048, 70, 11, 1, 1), (1024, 9, 1, 1, 1),
    (5632, 6, 3, 1, 1), (128, 7, 21, 1, 1),
]


@pytest.mark.parametrize("type", [F32, F16, BF16], ids=lambda t: NAMES[t])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("n_threads", [1, 3])
def test_values_match_float64(type, shape, n_threads):
    K, M, N, A2, B2 = shape
    got, av, bv = run(K, M, N, A2, B2, type, n_threads, row_pad=3 if type != F32 else 0)
    r = B2 // A2
    ref = np.stack([bv[i] @ av[i // r].T for i in range(B2)])
    scale = np.stack([np.abs(bv[i]) @ np.abs(av[i // r]).T for i in range(B2)])
    # F32 accumulation over K terms: well inside K * 2^-24 of the sum of magnitudes (F16 activations,
    # as the vec_dot path rounds them to, lose up to 2^-11 per term)
    tol = (2.0 ** -11 if type == F16 else 2.0 ** -9 if type == BF16 else K * 2.0 ** -24) * scale + 1e-30
    assert np.all(np.abs(got - ref) <= tol), f"max err {np.max(np.abs(got - ref) / tol):.3g} x tolerance"


@pytest.mark.parametrize("type", [F32, F16, BF16], ids=lambda t: NAMES[t])
def test_column_independent_of_batch_and_threads(type):
    K, M, N = 576, 37, 8
    rng = np.random.default_rng(7)
    b_all = rng.uniform(-1, 1, (1, N, K)).astype(np.float32)
    full, _, _ = run(K, M, N, 1, 1, type, 2, seed=3, b_np=b_all)
    for n_threads in (1, 3):
        again, _, _ = run(K, M, N, 1, 1, type, n_threads, seed=3, b_np=b_all)
        assert np.array_equal(again.view(np.uint32), full.view(np.uint32)), f"t{n_threads} differs from t2"
    for j in range(N):  # one column alone (token generation)
        one, _, _ = run(K, M, 1, 1, 1, type, 2, seed=3, b_np=b_all[:, j:j + 1])
        assert np.array_equal(one[0, 0].view(np.uint32), full[0, j].view(np.uint32)), f"column {j} alone differs"
    part, _, _ = run(K, M, 4, 1, 1, type, 2, seed=3, b_np=b_all[:, 2:6])  # shifted inside the tiles
    assert np.array_equal(part.view(np.uint32), full[:, 2:6].view(np.uint32))


_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_matmul_float import run
from llama_py import ggml
out = []
for t in (0, 1, 30):  # F32, F16, BF16
    for K, M, N in ((64, 7, 21), (768, 9, 17)):
        got, _, _ = run(K, M, N, 1, 1, t, 2, seed=5, row_pad=3 if t else 0)
        out += got.view(np.uint32).ravel().tolist()
print(json.dumps([ggml.ggml_cpu_variant().decode(), out]))
"""


def test_kernel_sets_give_the_same_bits():
    """The AVX-512 tiles (two rows per register, 8 columns) keep the AVX2 tiles' chains: same bits."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    seen = {}
    for v in ("avx2", "avx512"):
        env = dict(os.environ, GGML_CPU_VARIANT=v, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run([sys.executable, "-c", _CHILD.format(tests=str(root / "tests"))], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        name, bits = json.loads(r.stdout.strip().splitlines()[-1])
        seen[name] = bits
    if len(seen) < 2:
        pytest.skip("the AVX2 and AVX-512 kernel sets are not both available on this machine")
    a, b = seen.values()
    assert a == b
