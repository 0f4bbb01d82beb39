"""Block formats against the `gguf` package (an independent implementation of GGUF).

- dequantize: the same bytes give bit-identical floats for every type gguf.quants can read;
- quantize: the same floats give identical bytes for every type gguf.quants can write;
- accuracy of every reference quantizer on a smooth signal (the K-quants, which gguf cannot
  write, are held to the error bounds of the format);
- quantized matrix-vector products (ggml_mul_mat, i.e. the CPU vec_dot kernels with the
  activation quantizer) against the float dot product.

The C side is reached through ggml_get_type_traits (public), with local ctypes mirrors so
this file depends only on ggml.h.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_bool, c_char_p, c_float, c_int, c_int64, c_size_t, c_void_p

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as QT  # noqa: E402
from gguf import quants as gq  # noqa: E402

from llama_py import _lib  # noqa: E402

TO_FLOAT = ctypes.CFUNCTYPE(None, c_void_p, POINTER(c_float), c_int64)
FROM_FLOAT = ctypes.CFUNCTYPE(None, POINTER(c_float), c_void_p, c_int64)


class TypeTraits(ctypes.Structure):
    _fields_ = [
        ("type_name", c_char_p),
        ("blck_size", c_int64),
        ("type_size", c_size_t),
        ("is_quantized", c_bool),
        ("to_float", TO_FLOAT),
        ("from_float_ref", FROM_FLOAT),
    ]


# id -> (gguf name, bits per weight class for the accuracy bounds)
QUANT_TYPES = {
    2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
    20: "IQ4_NL", 23: "IQ4_XS", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 18: "IQ3_XXS", 21: "IQ3_S",
    22: "IQ2_S",
}
# codebook types without a reference quantizer: they quantize only with an importance matrix
# (ggml_quantize_chunk; tests/test_quants_iq.py, test_imatrix.py)
READ_ONLY_TYPES = {16: "IQ2_XXS", 17: "IQ2_XS", 19: "IQ1_S", 29: "IQ1_M"}
IQ_TYPES = [20, 23, 39, 16, 17, 18, 19, 21, 22, 29, 34, 35]
GGUF_DEQUANT = [2, 3, 6, 7, 8, 10, 11, 12, 13, 14, 1, 30] + IQ_TYPES     # + F16, BF16
GGUF_QUANT = [2, 3, 6, 7, 8, 1, 30, 34, 35, 39]
# byte offsets of the fp16 scale fields in one block (random bytes there could be inf/NaN)
HALF_FIELDS = {2: [0], 3: [0, 2], 6: [0], 7: [0, 2], 8: [0], 10: [80, 82], 11: [108],
               12: [0, 2], 13: [0, 2], 14: [208], 16: [0], 17: [0], 18: [0], 19: [0], 20: [0],
               21: [0], 22: [0], 23: [0], 29: [], 34: [52], 35: [64], 39: []}

EXPECTED_SIZES = {  # (block size, bytes per block) as GGUF stores them
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
    14: (256, 210), 15: (256, 292), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
    28: (1, 8), 30: (1, 2), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50),
    20: (32, 18), 21: (256, 110), 22: (256, 82), 23: (256, 136), 29: (256, 56), 34: (256, 54),
    35: (256, 66), 39: (32, 17),
}
EXPECTED_NAMES = {
    0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 9: "q8_1",
    10: "q2_K", 11: "q3_K", 12: "q4_K", 13: "q5_K", 14: "q6_K", 15: "q8_K", 24: "i8",
    25: "i16", 26: "i32", 27: "i64", 28: "f64", 30: "bf16", 16: "iq2_xxs", 17: "iq2_xs",
    18: "iq3_xxs", 19: "iq1_s", 20: "iq4_nl", 21: "iq3_s", 22: "iq2_s", 23: "iq4_xs", 29: "iq1_m",
    34: "tq1_0", 35: "tq2_0", 39: "mxfp4",
}

MAX_QUANTIZATION_TOTAL_ERROR = 0.002
MAX_QUANTIZATION_TOTAL_ERROR_3BITS = 0.004
MAX_QUANTIZATION_TOTAL_ERROR_2BITS = 0.0075
MAX_QUANTIZATION_TOTAL_ERROR_3BITS_XXS = 0.0050
MAX_DOT_PRODUCT_ERROR = 0.02
MAX_DOT_PRODUCT_ERROR_LOWBIT = 0.04
TEST_SIZE = 32 * 128


def gguf_type(t: int) -> QT:
    return QT(t)


@pytest.fixture(scope="module")
def lib():
    return _lib.load_library()


def traits(lib, t: int) -> TypeTraits:
    p = _bind(lib, "ggml_get_type_traits", [c_int], POINTER(TypeTraits))(t)
    assert p, f"no traits for type {t}"
    return p.contents


def c_dequantize(lib, t: int, data: np.ndarray) -> np.ndarray:
    tr = traits(lib, t)
    nblocks = data.size // tr.type_size
    n = nblocks * tr.blck_size
    out = np.empty(n, dtype=np.float32)
    buf = np.ascontiguousarray(data, dtype=np.uint8)
    tr.to_float(buf.ctypes.data, out.ctypes.data_as(POINTER(c_float)), n)
    return out


def c_quantize(lib, t: int, x: np.ndarray) -> np.ndarray:
    tr = traits(lib, t)
    x = np.ascontiguousarray(x, dtype=np.float32).ravel()
    assert x.size % tr.blck_size == 0
    out = np.zeros(x.size // tr.blck_size * tr.type_size, dtype=np.uint8)
    tr.from_float_ref(x.ctypes.data_as(POINTER(c_float)), out.ctypes.data, x.size)
    return out


def random_blocks(t: int, nblocks: int, rng: np.random.Generator) -> np.ndarray:
    """Random block bytes whose fp16 scales are finite (so every value is comparable)."""
    tr_size = EXPECTED_SIZES[t][1]
    raw = rng.integers(0, 256, size=(nblocks, tr_size), dtype=np.uint8)
    if t == 1:  # f16: every element is a half
        return rng.normal(0, 4, size=nblocks).astype(np.float16).view(np.uint8).copy()
    if t == 30:  # bf16: keep exponents below 0xFF
        vals = rng.normal(0, 4, size=nblocks).astype(np.float32).view(np.uint32) >> 16
        return vals.astype(np.uint16).view(np.uint8).copy()
    for off in HALF_FIELDS[t]:
        halves = rng.uniform(-3, 3, size=nblocks).astype(np.float16)
        raw[:, off:off + 2] = halves.view(np.uint8).reshape(nblocks, 2)
    return raw.ravel()


def assert_bits_equal(a: np.ndarray, b: np.ndarray, what: str) -> None:
    a = np.asarray(a, dtype=np.float32).ravel()
    b = np.asarray(b, dtype=np.float32).ravel()
    assert a.shape == b.shape, what
    both_nan = np.isnan(a) & np.isnan(b)
    diff = (a.view(np.uint32) != b.view(np.uint32)) & ~both_nan
    if diff.any():
        i = int(np.flatnonzero(diff)[0])
        raise AssertionError(f"{what}: {int(diff.sum())} of {a.size} values differ, first at {i}: "
                             f"C {a[i]!r} vs gguf {b[i]!r}")


# ---- type table ----

def test_type_table_matches_gguf(lib):
    for t, (bs, ts) in EXPECTED_SIZES.items():
        tr = traits(lib, t)
        assert (tr.blck_size, tr.type_size) == (bs, ts), t
        assert tr.type_name.decode() == EXPECTED_NAMES[t]
        assert tr.is_quantized == (t in QUANT_TYPES or t in READ_ONLY_TYPES)
        if QT(t) in gguf.GGML_QUANT_SIZES:
            assert gguf.GGML_QUANT_SIZES[QT(t)] == (bs, ts), t
    for t in list(QUANT_TYPES) + [1, 30]:
        tr = traits(lib, t)
        assert tr.to_float and tr.from_float_ref, t
    for t in READ_ONLY_TYPES:
        tr = traits(lib, t)
        assert tr.to_float and not tr.from_float_ref, t


@pytest.mark.parametrize("t", [4, 5, 31, 32, 33, 36, 37, 38, 40, -1, 1000])
def test_unknown_types_have_no_traits(lib, t):
    assert not lib.ggml_get_type_traits(t)


# ---- bit-exact dequantization ----

@pytest.mark.parametrize("t", GGUF_DEQUANT, ids=lambda t: gguf_type(t).name)
def test_dequantize_matches_gguf(lib, t):
    rng = np.random.default_rng(1234 + t)
    bs, ts = EXPECTED_SIZES[t]
    nblocks = 64 if bs > 1 else 4096
    data = random_blocks(t, nblocks, rng)
    ours = c_dequantize(lib, t, data)
    ref = gq.dequantize(data.reshape(1, -1), gguf_type(t)).ravel()
    assert_bits_equal(ours, ref, f"dequantize {gguf_type(t).name}")


@pytest.mark.parametrize("t", [t for t in GGUF_DEQUANT if t not in (1, 30)], ids=lambda t: gguf_type(t).name)
def test_dequantize_raw_random_bytes_matches_gguf(lib, t):
    """Unsanitised bytes, inf/NaN scales included: same values, NaN where gguf has NaN."""
    rng = np.random.default_rng(99 + t)
    data = rng.integers(0, 256, size=32 * EXPECTED_SIZES[t][1], dtype=np.uint8)
    with np.errstate(all="ignore"):
        ref = gq.dequantize(data.reshape(1, -1), gguf_type(t)).ravel()
    assert_bits_equal(c_dequantize(lib, t, data), ref, f"raw dequantize {gguf_type(t).name}")


# ---- bit-exact quantization ----

def quant_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    n = 32 * 256
    out = [
        rng.normal(0, 1, n).astype(np.float32),
        (rng.normal(0, 1, n) * 1e-3).astype(np.float32),
        (rng.normal(0, 1, n) * 300).astype(np.float32),
        rng.uniform(-1, 1, n).astype(np.float32) + 0.5,
        (0.1 + 2 * np.cos(np.arange(n) + 0.3)).astype(np.float32),
    ]
    special = np.zeros(n, dtype=np.float32)
    special[32:64] = 1.0                               # constant block
    special[64:96] = -2.5                              # constant negative block
    special[96:128] = np.arange(32) - 16               # integers: ties for the 0.5 roundings
    special[128:160] = (np.arange(32) - 16) * 0.5
    special[160:192] = rng.normal(0, 1, 32).astype(np.float32)
    special[161] = 1e4                                 # one outlier
    special[192:224] = 1e-30                           # tiny (subnormal scale in fp16)
    special[224:256] = rng.integers(-127, 128, 32) / 127.0  # q8 ties
    out.append(special)
    return out


@pytest.mark.parametrize("t", GGUF_QUANT, ids=lambda t: gguf_type(t).name)
def test_quantize_matches_gguf(lib, t):
    rng = np.random.default_rng(7 + t)
    for k, x in enumerate(quant_inputs(rng)):
        ours = c_quantize(lib, t, x)
        with np.errstate(all="ignore"):
            ref = gq.quantize(x.reshape(1, -1), gguf_type(t)).view(np.uint8).ravel()
        if not np.array_equal(ours, ref):
            i = int(np.flatnonzero(ours != ref)[0])
            ts = EXPECTED_SIZES[t][1]
            raise AssertionError(f"{gguf_type(t).name} input {k}: bytes differ from byte {i} "
                                 f"(block {i // ts}): C {ours[i]} vs gguf {ref[i]}")


# ---- accuracy ----

def smooth_signal(offset: float) -> np.ndarray:
    return (0.1 + 2 * np.cos(np.arange(TEST_SIZE, dtype=np.float64) + offset)).astype(np.float32)


# the ternary types hold {-d, 0, d} only: they are tested on ternary signals instead
TERNARY = (34, 35)


def total_error_bound(t: int) -> float:
    if t in (10, 22):
        return MAX_QUANTIZATION_TOTAL_ERROR_2BITS
    if t == 18:
        return MAX_QUANTIZATION_TOTAL_ERROR_3BITS_XXS
    if t in (11, 39, 21):  # MXFP4: 4-bit floats under a power-of-two scale
        return MAX_QUANTIZATION_TOTAL_ERROR_3BITS
    return MAX_QUANTIZATION_TOTAL_ERROR


@pytest.mark.parametrize("t", [t for t in QUANT_TYPES if t not in TERNARY], ids=lambda t: QUANT_TYPES[t])
def test_quantize_roundtrip_error(lib, t):
    x = smooth_signal(0.0)
    y = c_dequantize(lib, t, c_quantize(lib, t, x))
    err = float(np.sqrt(np.sum((x.astype(np.float64) - y) ** 2)) / x.size)
    assert err <= total_error_bound(t), f"{QUANT_TYPES[t]}: rmse/n {err:.5f}"
    # the error must come from rounding, not a broken layout: per-element error is below a step
    assert np.max(np.abs(x - y)) < 0.6 * (np.max(x) - np.min(x)), QUANT_TYPES[t]


@pytest.mark.parametrize("t", [t for t in QUANT_TYPES if t >= 10 and t != 15], ids=lambda t: QUANT_TYPES[t])
def test_kquant_roundtrip_gguf_dequantizes_our_bytes(lib, t):
    """Our K-quant bytes read back by gguf give the same floats as our own reader."""
    x = np.random.default_rng(t).normal(0, 1, 8 * 256).astype(np.float32)
    q = c_quantize(lib, t, x)
    ref = gq.dequantize(q.reshape(1, -1), gguf_type(t)).ravel()
    ours = c_dequantize(lib, t, q)
    assert_bits_equal(ours, ref, QUANT_TYPES[t])
    rel = np.sqrt(np.mean((ours - x) ** 2)) / np.sqrt(np.mean(x ** 2))
    bound = {10: 0.45, 11: 0.25, 12: 0.12, 13: 0.06, 14: 0.03, 20: 0.09, 23: 0.09, 39: 0.13,
             34: 0.9, 35: 0.9, 18: 0.2, 21: 0.15, 22: 0.27}[t]
    assert rel < bound, f"{QUANT_TYPES[t]} relative rmse {rel:.4f}"


@pytest.mark.parametrize("t", [2, 3, 6, 7, 10, 11, 12, 13, 14], ids=lambda t: QUANT_TYPES[t])
def test_imatrix_quantizers_fit_the_weighted_error(lib, t):
    """Given an importance matrix, ggml_quantize_chunk's Q4_0..Q5_1 and Q2_K..Q6_K fit the
    column-weighted error: read back by gguf, sum(w (x - deq)^2) is well below the unweighted
    reference quantizer's; the 32-element types' levels are the nearest under the stored scale."""
    qc = _bind(lib, "ggml_quantize_chunk", [c_int, c_void_p, c_void_p, c_int64, c_int64, c_int64, c_void_p], c_size_t)
    rng = np.random.default_rng(100 + t)
    rows, k = 16, 512
    x = rng.standard_t(5, rows * k).astype(np.float32)
    im = rng.lognormal(0.0, 1.5, k).astype(np.float32)
    bs, ts = EXPECTED_SIZES[t]
    err, qs = [], []
    for w in (None, im):
        out = np.zeros(rows * k // bs * ts, dtype=np.uint8)
        assert qc(t, x.ctypes.data, out.ctypes.data, 0, rows, k, None if w is None else w.ctypes.data) == out.nbytes
        y = gq.dequantize(out.reshape(rows, -1), gguf_type(t)).reshape(rows, k)
        err.append(float(np.sum(im * (y.astype(np.float64) - x.reshape(rows, k)) ** 2)))
        qs.append((out, y))
    assert err[1] < 0.85 * err[0], f"{QUANT_TYPES[t]}: weighted error {err[1]:.4g} vs unweighted {err[0]:.4g}"
    if t in (2, 6):  # Q4_0 / Q5_0: d * (nearest level of x / d, clamped)
        nmax = 8 if t == 2 else 16
        out, y = qs[1]
        d = out.reshape(-1, ts)[:, :2].copy().view(np.float16).astype(np.float32).ravel()
        xb = x.reshape(-1, 32)
        want = d[:, None] * np.clip(np.rint(xb / d[:, None]), -nmax, nmax - 1)
        np.testing.assert_array_equal(y.reshape(-1, 32), want.astype(np.float32))


@pytest.mark.parametrize("t", TERNARY, ids=lambda t: QUANT_TYPES[t])
def test_ternary_values_roundtrip_exactly(lib, t):
    """A ternary signal (BitNet-style weights) comes back exactly: d * {-1, 0, 1}."""
    rng = np.random.default_rng(t)
    x = (rng.integers(-1, 2, 16 * 256) * 0.375).astype(np.float32)
    y = c_dequantize(lib, t, c_quantize(lib, t, x))
    assert_bits_equal(y, x, QUANT_TYPES[t])


def test_quantize_zeros_and_constants(lib):
    for t in QUANT_TYPES:
        for v in (0.0, 1.0, -3.0):
            x = np.full(512, v, dtype=np.float32)
            y = c_dequantize(lib, t, c_quantize(lib, t, x))
            assert np.all(np.isfinite(y)), (QUANT_TYPES[t], v)
            assert np.max(np.abs(y - x)) <= 0.02 * max(1.0, abs(v)), (QUANT_TYPES[t], v, y[:4])


# ---- quantized matrix-vector products through ggml_mul_mat ----

class InitParams(ctypes.Structure):
    _fields_ = [("mem_size", c_size_t), ("mem_buffer", c_void_p), ("no_alloc", c_bool)]


def _bind(lib, name, argtypes, restype):
    # lib[name] is a function object of its own: getattr(lib, name) is the one the library's
    # own bindings (llama_py.ggml) share, whose argtypes must not change under them
    f = lib[name]
    f.argtypes = argtypes
    f.restype = restype
    return f


def mul_mat_dot(lib, t: int, w: np.ndarray, x: np.ndarray, n_threads: int = 1) -> float:
    """ggml_mul_mat of w (one row, quantized to t with the reference quantizer) and x (F32)."""
    init = _bind(lib, "ggml_init", [InitParams], c_void_p)
    free = _bind(lib, "ggml_free", [c_void_p], None)
    new2d = _bind(lib, "ggml_new_tensor_2d", [c_void_p, c_int, c_int64, c_int64], c_void_p)
    mul_mat = _bind(lib, "ggml_mul_mat", [c_void_p, c_void_p, c_void_p], c_void_p)
    new_graph = _bind(lib, "ggml_new_graph", [c_void_p], c_void_p)
    expand = _bind(lib, "ggml_build_forward_expand", [c_void_p, c_void_p], None)
    compute = _bind(lib, "ggml_graph_compute_with_ctx", [c_void_p, c_void_p, c_int], c_int)
    get_data = _bind(lib, "ggml_get_data", [c_void_p], c_void_p)

    ctx = init(InitParams(64 * 1024 * 1024, None, False))
    assert ctx
    try:
        n = w.size
        a = new2d(ctx, t, n, 1)
        b = new2d(ctx, 0, n, 1)
        assert a and b
        q = c_quantize(lib, t, w)
        ctypes.memmove(get_data(a), q.ctypes.data, q.nbytes)
        ctypes.memmove(get_data(b), np.ascontiguousarray(x, dtype=np.float32).ctypes.data, 4 * n)
        c = mul_mat(ctx, a, b)
        assert c
        gf = new_graph(ctx)
        expand(gf, c)
        assert compute(ctx, gf, n_threads) == 0
        return float(ctypes.cast(get_data(c), POINTER(c_float))[0])
    finally:
        free(ctx)


@pytest.mark.parametrize("t", [t for t in QUANT_TYPES if t not in (9, 15)] + [1, 30],
                         ids=lambda t: QUANT_TYPES.get(t) or gguf_type(t).name)
def test_quantized_dot_product_error(lib, t):
    w = smooth_signal(0.0)
    if t in TERNARY:
        w = np.sign(w).astype(np.float32)
    x = smooth_signal(1.0)
    ref = float(np.dot(w.astype(np.float64), x.astype(np.float64)))
    got = mul_mat_dot(lib, t, w, x)
    err = abs(got - ref) / TEST_SIZE
    bound = MAX_DOT_PRODUCT_ERROR_LOWBIT if t in (10, 11, 18, 21, 22) else MAX_DOT_PRODUCT_ERROR
    assert err <= bound, f"{t}: dot {got} vs {ref} (error {err:.5f})"


# ---- kernel-set selection (GGML_CPU_VARIANT) ----

_VARIANT_PROBE = r"""
import ctypes, json, os, sys
sys.path.insert(0, os.environ["TESTS_DIR"])
import numpy as np
import test_quants as T
L = T._lib.load_library()
L.ggml_get_type_traits.argtypes = [ctypes.c_int]
L.ggml_get_type_traits.restype = ctypes.POINTER(T.TypeTraits)
L.ggml_cpu_variant.restype = ctypes.c_char_p
w, x = T.smooth_signal(0.0), T.smooth_signal(1.0)
dots = {t: T.mul_mat_dot(L, t, w, x) for t in (0, 1, 2, 3, 8, 12, 14, 30)}
print(json.dumps({"variant": L.ggml_cpu_variant().decode(), "dots": dots}))
"""


def _probe_variant(env_value):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = dict(os.environ)
    env.pop("GGML_CPU_VARIANT", None)
    if env_value is not None:
        env["GGML_CPU_VARIANT"] = env_value
    env["TESTS_DIR"] = str(Path(__file__).resolve().parent)
    env["LLAMA_PY_LIB"] = str(_lib.load_library()._name)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _VARIANT_PROBE], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_cpu_variant_env_lowers_and_kernels_agree(lib):
    """Each kernel set the env var can select gives the same products as the portable one."""
    best, _ = _probe_variant(None)
    order = ["portable", "avx2", "avx512"] if best["variant"] in ("avx2", "avx512", "portable") \
        else ["portable", best["variant"]]
    reachable = order[: order.index(best["variant"]) + 1]
    portable, _ = _probe_variant("portable")
    assert portable["variant"] == "portable"
    for name in reachable:
        got, _ = _probe_variant(name)
        assert got["variant"] == name
        for t, v in got["dots"].items():
            ref = portable["dots"][t]
            assert abs(v - ref) <= 1e-4 * max(1.0, abs(ref)), (name, t, v, ref)
    # an unknown name or a set above the best keeps the best, with a warning
    got, err = _probe_variant("no-such-set")
    assert got["variant"] == best["variant"] and "GGML_CPU_VARIANT" in err


# ---- K-quant quantizers against llama.cpp's (gguf.quants cannot write K-quants) ----

KQUANT_GOLDEN = __import__("pathlib").Path(__file__).resolve().parent / "data" / "kquants-llamacpp.json"


@pytest.mark.parametrize("name", ["q2_K", "q3_K", "q4_K", "q5_K", "q6_K"])
def test_kquant_quantize_matches_llamacpp(lib, name):
    """Bytes produced by llama.cpp's reference quantizer (see "about" in the data file)."""
    import json
    golden = json.loads(KQUANT_GOLDEN.read_text())
    t = {"q2_K": 10, "q3_K": 11, "q4_K": 12, "q5_K": 13, "q6_K": 14}[name]
    for k, (xhex, qhex) in enumerate(zip(golden["inputs"], golden[name])):
        x = np.frombuffer(bytes.fromhex(xhex), dtype=np.float32)
        want = np.frombuffer(bytes.fromhex(qhex), dtype=np.uint8)
        got = c_quantize(lib, t, x)
        if not np.array_equal(got, want):
            i = int(np.flatnonzero(got != want)[0])
            raise AssertionError(f"{name} input {k}: byte {i} (block {i // EXPECTED_SIZES[t][1]}) "
                                 f"is {got[i]}, llama.cpp wrote {want[i]}")
