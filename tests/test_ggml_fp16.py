"""Half and bfloat16 conversions against NumPy: every half value, and float32 inputs over the
whole half range (NumPy's float16 cast rounds to nearest even, as ours must)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from llama_py import ggml

ALL_HALF_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def _ptr(a: np.ndarray, ctype=ctypes.c_void_p):
    return ctypes.cast(a.ctypes.data, ctype)


def _fp16_to_fp32_row(bits: np.ndarray) -> np.ndarray:
    out = np.empty(bits.size, dtype=np.float32)
    ggml.ggml_fp16_to_fp32_row(_ptr(bits), _ptr(out, ctypes.POINTER(ctypes.c_float)), bits.size)
    return out


def _fp32_to_fp16_row(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(x.size, dtype=np.uint16)
    ggml.ggml_fp32_to_fp16_row(_ptr(x, ctypes.POINTER(ctypes.c_float)), _ptr(out), x.size)
    return out


def _same_or_both_nan(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))


def test_every_half_converts_like_numpy(lib_path):
    want = ALL_HALF_BITS.view(np.float16).astype(np.float32)
    got = _fp16_to_fp32_row(ALL_HALF_BITS)
    assert _same_or_both_nan(got, want).all()
    # the scalar entry point, on a spread of values (ctypes calls are slow)
    for b in list(range(0, 65536, 97)) + [0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x8000]:
        s = np.float32(ggml.ggml_fp16_to_fp32(b))
        assert _same_or_both_nan(np.array([s]), want[b:b + 1]).all(), hex(b)


def test_every_half_round_trips(lib_path):
    f = ALL_HALF_BITS.view(np.float16).astype(np.float32)
    back = _fp32_to_fp16_row(f)
    finite = ~np.isnan(f)
    assert (back[finite] == ALL_HALF_BITS[finite]).all()
    nan_back = back[~finite]
    assert ((nan_back & 0x7C00) == 0x7C00).all() and ((nan_back & 0x03FF) != 0).all()


@pytest.mark.parametrize("lo_exp,hi_exp", [(-30, -14), (-14, 0), (0, 16), (-2, 17)])
def test_float32_to_half_rounds_like_numpy(lib_path, lo_exp, hi_exp):
    rng = np.random.default_rng((lo_exp + 100) * 1000 + hi_exp)
    n = 1 << 18
    mant = rng.random(n, dtype=np.float64) + 1.0
    exp = rng.integers(lo_exp, hi_exp, n)
    x = (mant * np.exp2(exp) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    # exact ties between neighbouring halves (the round-half-to-even cases)
    halves = ALL_HALF_BITS[:0x7BFF].view(np.float16).astype(np.float64)
    mids = ((halves[:-1] + halves[1:]) / 2).astype(np.float32)
    x = np.concatenate([x, mids, -mids, np.nextafter(mids, np.float32(np.inf))])
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    got = _fp32_to_fp16_row(x)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, f"{bad.size} mismatches, first x={x[bad[0]]!r} got {got[bad[0]]:#06x} want {want[bad[0]]:#06x}"
    # odd lengths take the scalar tail after the vector body
    tail = _fp32_to_fp16_row(x[:13])
    assert (tail == want[:13]).all()
    assert all(ggml.ggml_fp32_to_fp16(float(v)) == w for v, w in zip(x[:2000:7], want[:2000:7]))


def test_specials(lib_path):
    x = np.array([np.inf, -np.inf, 65504.0, 65519.99, 65520.0, 1e-8, -1e-8, 2.0 ** -24, 2.0 ** -25,
                  2.0 ** -25 * 1.0000001, 0.0, -0.0], dtype=np.float32)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    assert (_fp32_to_fp16_row(x) == want).all()


def test_bf16_matches_rounded_upper_half(lib_path):
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    out = np.empty(x.size, dtype=np.uint16)
    for i in range(0, x.size, 257):  # scalar entry point on a sample
        out[i] = ggml.ggml_fp32_to_bf16(float(x[i])).bits
    # round to nearest even on the dropped 16 bits, computed in integers
    lsb = (bits >> 16) & 1
    want = ((bits.astype(np.uint64) + 0x7FFF + lsb) >> 16).astype(np.uint16)
    sample = np.arange(0, x.size, 257)
    finite = ~np.isnan(x[sample])
    assert (out[sample][finite] == want[sample][finite]).all()
    nan_out = out[sample][~finite]
    assert (((nan_out & 0x7F80) == 0x7F80) & ((nan_out & 0x7F) != 0)).all()

    b = want[finite.nonzero()[0][:64]] if finite.any() else want[:64]
    f = np.empty(b.size, dtype=np.float32)
    ggml.ggml_bf16_to_fp32_row(_ptr(b), _ptr(f, ctypes.POINTER(ctypes.c_float)), b.size)
    assert (f.view(np.uint32) == (b.astype(np.uint32) << 16)).all()
