"""Samplers (src/sampling*.c) against the NumPy references in sampling_ref.py, over
random and adversarial logits (ties, NaN, +/-inf, all equal, empty) and degenerate parameters;
chains, clone/reset/copy, seeds across processes, samplers written in Python, timings, and
llama_sampler_sample / DRY on the real model and vocabulary when they are available."""
from __future__ import annotations

import ctypes
import gc
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import sampling_ref as R  # noqa: E402

from llama_py._capi import sampling as S  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NaN, INF = float("nan"), float("inf")


# ---- helpers ----

def run(smpl, logits, ids=None):
    """Applies smpl to a fresh candidate array; returns the TokenDataArray."""
    return S.TokenDataArray(logits, ids).apply(smpl)


def same_logits(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a) & np.isnan(b)
    eq = (a == b) | both_nan
    close = np.isclose(a, b, rtol=2e-6, atol=1e-30)
    return bool(np.all(eq | close))


def check(out, ref: R.Cand, probs=False, sel=False, sorted_=None):
    assert out.ids.tolist() == ref.ids.tolist()
    assert same_logits(out.logits, ref.logits), (out.logits, ref.logits)
    if probs:
        np.testing.assert_allclose(out.probs, ref.p, rtol=1e-4, atol=1e-6)
    if sel:
        assert out.selected == ref.selected
    if sorted_ is not None:
        assert bool(out.arr.sorted) == sorted_


def matches_any(out, refs):
    return any(out.ids.tolist() == r.ids.tolist() and same_logits(out.logits, r.logits) for r in refs)


def owned(smpl):
    """Frees smpl after the test."""
    assert smpl, "sampler init returned NULL"
    _to_free.append(smpl)
    return smpl


_to_free = []


@pytest.fixture(autouse=True)
def _free_samplers():
    yield
    while _to_free:
        S.llama_sampler_free(_to_free.pop())


_rng = np.random.default_rng(1234)


def random_sets():
    out = []
    for n in (1, 2, 7, 100, 1000):
        out.append(_rng.normal(0, 2, n).astype(np.float32))
    out.append(_rng.normal(0, 3, 49152).astype(np.float32))
    return out


def adversarial_sets():
    n = 50
    ties = _rng.integers(0, 4, n).astype(np.float32)
    with_nan = _rng.normal(0, 1, n).astype(np.float32)
    with_nan[[3, 10, 11]] = NaN
    pinf = _rng.normal(0, 1, n).astype(np.float32)
    pinf[[5, 20]] = INF
    ninf = _rng.normal(0, 1, n).astype(np.float32)
    ninf[::2] = -INF
    mixed = np.array([NaN, INF, -INF, 0.0, -0.0, 1.0, 1.0, -1e30, 1e30, NaN], dtype=np.float32)
    return [
        np.zeros(n, dtype=np.float32),                    # all equal
        ties,
        with_nan,
        pinf,
        ninf,
        np.full(n, -INF, dtype=np.float32),               # all -inf
        np.full(n, NaN, dtype=np.float32),                # all NaN
        mixed,
        np.array([1e30, -1e30, 3e38, -3e38], dtype=np.float32),  # huge
        np.linspace(0, 1e-6, 40).astype(np.float32),      # nearly equal
    ]


ALL_SETS = random_sets() + adversarial_sets()
SMALL_SETS = random_sets()[:5] + adversarial_sets()


def F32(x):  # what the C side receives for a float parameter
    return float(np.float32(x))


# ---- empty arrays and NULLs: never a crash ----

EMPTY_FACTORIES = [
    lambda: S.llama_sampler_init_greedy(), lambda: S.llama_sampler_init_dist(1),
    lambda: S.llama_sampler_init_top_k(5), lambda: S.llama_sampler_init_top_p(0.5, 1),
    lambda: S.llama_sampler_init_min_p(0.5, 1), lambda: S.llama_sampler_init_typical(0.5, 1),
    lambda: S.llama_sampler_init_temp(0.5), lambda: S.llama_sampler_init_temp(0),
    lambda: S.llama_sampler_init_temp_ext(1, 0.5, 1), lambda: S.llama_sampler_init_xtc(1, 0.1, 1, 1),
    lambda: S.llama_sampler_init_top_n_sigma(1), lambda: S.llama_sampler_init_mirostat(100, 1, 5, 0.1, 100),
    lambda: S.llama_sampler_init_mirostat_v2(1, 5, 0.1), lambda: S.llama_sampler_init_penalties(100, 64, 1.1, 0.1, 0.1),
    lambda: S.llama_sampler_init_logit_bias(100, 1, [(3, 1.0)]), lambda: S.llama_sampler_init_adaptive_p(0.5, 0.9, 1),
]


@pytest.mark.parametrize("make", EMPTY_FACTORIES)
def test_empty_candidates(make):
    smpl = owned(make())
    S.llama_sampler_accept(smpl, 3)
    out = run(smpl, np.zeros(0, dtype=np.float32))
    assert out.size == 0
    assert out.selected == -1


def test_null_safety():
    S.llama_sampler_free(None)
    S.llama_sampler_accept(None, 1)
    S.llama_sampler_reset(None)
    assert S.llama_sampler_name(None) == b"(null)"
    assert S.llama_sampler_clone(None) is None
    S.llama_sampler_apply(None, ctypes.byref(S.TokenDataArray([1.0, 2.0]).arr))
    g = owned(S.llama_sampler_init_greedy())
    S.llama_sampler_apply(g, None)
    bad = S.llama_token_data_array(data=None, size=5, selected=-1, sorted=False)
    S.llama_sampler_apply(g, ctypes.byref(bad))  # data NULL with size 5: refused
    assert bad.selected == -1
    assert S.llama_sampler_get_seed(None) == R.DEFAULT_SEED
    assert S.llama_sampler_chain_n(g) == 0            # not a chain: logged, 0
    assert S.llama_sampler_chain_get(g, 0) is None
    assert S.llama_sampler_chain_remove(g, 0) is None
    S.llama_sampler_chain_add(g, None)
    assert S.llama_perf_sampler(g).n_sample == 0
    assert S.llama_sampler_sample(g, None, 0) == -1
    assert S.llama_sampler_init(None, None) is None


def test_unsupported_return_null():
    assert S.llama_sampler_init_grammar(None, b"root ::= \"a\"", b"root") is None
    with pytest.warns(DeprecationWarning):
        assert S.llama_sampler_init_grammar_lazy(None, b"", b"root", None, 0, None, 0) is None
    assert S.llama_sampler_init_grammar_lazy_patterns(None, b"", b"root", None, 0, None, 0) is None
    assert S.llama_sampler_init_infill(None) is None


def test_names():
    cases = {
        S.llama_sampler_init_greedy(): b"greedy", S.llama_sampler_init_dist(1): b"dist",
        S.llama_sampler_init_top_k(1): b"top-k", S.llama_sampler_init_top_p(0.5, 1): b"top-p",
        S.llama_sampler_init_min_p(0.5, 1): b"min-p", S.llama_sampler_init_typical(0.5, 1): b"typical",
        S.llama_sampler_init_temp(1): b"temp", S.llama_sampler_init_temp_ext(1, 0, 1): b"temp-ext",
        S.llama_sampler_init_xtc(0.5, 0.1, 1, 1): b"xtc", S.llama_sampler_init_top_n_sigma(1): b"top-n-sigma",
        S.llama_sampler_init_mirostat(10, 1, 5, 0.1, 100): b"mirostat",
        S.llama_sampler_init_mirostat_v2(1, 5, 0.1): b"mirostat-v2",
        S.llama_sampler_init_penalties(10, 64, 1.1, 0, 0): b"penalties",
        S.llama_sampler_init_logit_bias(10, 0, None): b"logit-bias",
        S.llama_sampler_init_adaptive_p(0.5, 0.9, 1): b"adaptive-p",
        S.llama_sampler_chain_init(S.llama_sampler_chain_default_params()): b"chain",
    }
    for smpl, name in cases.items():
        owned(smpl)
        assert S.llama_sampler_name(smpl) == name


# ---- stateless samplers vs the reference ----

@pytest.mark.parametrize("li", range(len(ALL_SETS)))
def test_greedy(li):
    logits = ALL_SETS[li]
    out = run(owned(S.llama_sampler_init_greedy()), logits)
    check(out, R.greedy(R.Cand.of(logits)), sel=True)


@pytest.mark.parametrize("k", [-1, 0, 1, 3, 40, 49, 50, 51, 10 ** 6])
@pytest.mark.parametrize("li", range(len(ALL_SETS)))
def test_top_k(li, k):
    logits = ALL_SETS[li]
    out = run(owned(S.llama_sampler_init_top_k(k)), logits)
    ref = R.top_k(R.Cand.of(logits), k)
    check(out, ref)
    if 0 < k < len(logits):
        assert out.arr.sorted


def test_top_k_ids_not_positions():
    ids = np.array([100, 7, 55, 3, 9], dtype=np.int32)
    logits = np.array([0.5, 2.0, 2.0, -1.0, 1.0], dtype=np.float32)
    out = run(owned(S.llama_sampler_init_top_k(3)), logits, ids)
    assert out.ids.tolist() == [7, 55, 9]


def _eps_variants(x, eps=2e-5):
    return [x, x - eps, x + eps]


def assert_cut_within(out, ref_fn, p, eps=1e-6):
    """A cumulative-probability cut: the C result must be a prefix of the reference order with
    a length between the reference cuts at p - eps and p + eps (sums of thousands of float
    probabilities differ from double ones by ~1e-7)."""
    lo, hi = ref_fn(p - eps), ref_fn(p + eps)
    assert lo.size <= out.size <= hi.size, (lo.size, out.size, hi.size)
    assert out.ids.tolist() == hi.ids[:out.size].tolist()
    assert same_logits(out.logits, hi.logits[:out.size])


@pytest.mark.parametrize("p", [-1.0, 0.0, 0.3, 0.9, 0.95, 0.999, 1.0, 1.5, NaN])
@pytest.mark.parametrize("min_keep", [0, 1, 5, 10 ** 6])
@pytest.mark.parametrize("li", range(len(ALL_SETS)))
def test_top_p(li, p, min_keep):
    logits = ALL_SETS[li]
    out = run(owned(S.llama_sampler_init_top_p(p, min_keep)), logits)
    if math.isnan(p) or p >= 1.0:
        check(out, R.Cand.of(logits))
        return
    assert_cut_within(out, lambda q: R.top_p(R.Cand.of(logits), q, min_keep), F32(p))
    np.testing.assert_allclose(out.probs, R.softmax(logits)[out.ids], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("p", [-1.0, 0.0, 0.05, 0.5, 1.0, 2.0, NaN])
@pytest.mark.parametrize("min_keep", [0, 1, 5, 10 ** 6])
@pytest.mark.parametrize("li", range(len(ALL_SETS)))
def test_min_p(li, p, min_keep):
    logits = ALL_SETS[li]
    out = run(owned(S.llama_sampler_init_min_p(p, min_keep)), logits)
    refs = [R.min_p(R.Cand.of(logits), q, min_keep) for q in _eps_variants(F32(p), 1e-6)] \
        if p == p else [R.Cand.of(logits)]
    assert matches_any(out, refs), (out.size, [r.size for r in refs])


@pytest.mark.parametrize("p", [-1.0, 0.0, 0.5, 0.95, 1.0, 2.0, NaN])
@pytest.mark.parametrize("min_keep", [0, 1, 5])
@pytest.mark.parametrize("li", range(len(SMALL_SETS)))
def test_typical(li, p, min_keep):
    logits = SMALL_SETS[li]
    out = run(owned(S.llama_sampler_init_typical(p, min_keep)), logits)
    if not (p < 1.0):
        check(out, R.Cand.of(logits))
        return
    ref_fn = lambda q: R.typical(R.Cand.of(logits), q, min_keep)  # noqa: E731
    try:
        assert_cut_within(out, ref_fn, F32(p))
    except AssertionError:
        # Typicality scores closer than float precision (nearly equal logits) may order
        # differently; then the chosen tokens must have the smallest scores up to 1e-6.
        probs = R.softmax(logits)
        h = R.entropy(probs)
        with np.errstate(divide="ignore"):
            score = np.abs(-np.log(probs) - h)
        lo, hi = ref_fn(F32(p) - 1e-6), ref_fn(F32(p) + 1e-6)
        assert lo.size - 1 <= out.size <= hi.size + 1
        np.testing.assert_allclose(np.sort(score[out.ids]), np.sort(score)[:out.size], atol=1e-6)
    assert not out.arr.sorted


@pytest.mark.parametrize("t", [-1.0, 0.0, 1e-30, 0.5, 0.8, 1.0, 2.0, INF, NaN])
@pytest.mark.parametrize("li", range(len(ALL_SETS)))
def test_temp(li, t):
    logits = ALL_SETS[li]
    out = run(owned(S.llama_sampler_init_temp(t)), logits)
    check(out, R.temp(R.Cand.of(logits), F32(t)))


def test_temp_zero_keeps_first_max_only():
    out = run(owned(S.llama_sampler_init_temp(0.0)), [1.0, 3.0, 3.0, NaN, 2.0])
    assert out.logits.tolist() == [-INF, 3.0, -INF, -INF, -INF]


@pytest.mark.parametrize("params", [(0.8, 0.0, 1.0), (0.8, 0.5, 1.0), (1.0, 1.0, 2.0), (0.5, 0.5, 0.0),
                                    (1.0, 2.0, 0.5), (0.0, 0.5, 1.0), (1.0, -1.0, 1.0), (1.0, NaN, 1.0)])
@pytest.mark.parametrize("li", range(len(SMALL_SETS)))
def test_temp_ext(li, params):
    logits = SMALL_SETS[li]
    t, delta, exponent = params
    out = run(owned(S.llama_sampler_init_temp_ext(t, delta, exponent)), logits)
    ref = R.temp_ext(R.Cand.of(logits), F32(t), F32(delta), F32(exponent))
    if delta > 0 and len(logits) > 1 and np.isfinite(R.key(logits)).any():
        # The dynamic temperature depends on an entropy computed in float: compare loosely.
        assert out.ids.tolist() == ref.ids.tolist()
        fin = np.isfinite(ref.logits)
        np.testing.assert_allclose(out.logits[fin], ref.logits[fin], rtol=1e-4, atol=1e-4)
        assert np.array_equal(np.isfinite(out.logits), fin)
    else:
        check(out, ref)


@pytest.mark.parametrize("n", [-1.0, 0.0, 0.5, 1.0, 3.0, INF, NaN])
@pytest.mark.parametrize("li", range(len(ALL_SETS)))
def test_top_n_sigma(li, n):
    logits = ALL_SETS[li]
    out = run(owned(S.llama_sampler_init_top_n_sigma(n)), logits)
    refs = [R.top_n_sigma(R.Cand.of(logits), q) for q in ([F32(n)] if not np.isfinite(n) else
                                                          _eps_variants(F32(n), 1e-5))]
    assert matches_any(out, refs)


@pytest.mark.parametrize("params", [(1.0, 0.1, 1), (0.5, 0.1, 1), (1.0, 0.0, 1), (1.0, 0.6, 1), (0.0, 0.1, 1),
                                    (1.0, 0.1, 10 ** 6), (1.0, -1.0, 1), (1.0, 0.02, 2), (NaN, 0.1, 1)])
@pytest.mark.parametrize("li", range(len(SMALL_SETS)))
def test_xtc(li, params):
    logits = SMALL_SETS[li]
    p, t, min_keep = params
    smpl = owned(S.llama_sampler_init_xtc(p, t, min_keep, 77))
    rng = R.PCG32(77)
    for _ in range(4):  # several draws of the sampler's own generator
        out = run(smpl, logits)
        ref = R.xtc(R.Cand.of(logits), F32(p), F32(t), min_keep, rng)
        check(out, ref)


@pytest.mark.parametrize("li", range(len(ALL_SETS)))
def test_dist_matches_reference_draws(li):
    logits = ALL_SETS[li]
    smpl = owned(S.llama_sampler_init_dist(42))
    rng = R.PCG32(42)
    for _ in range(20):
        out = run(smpl, logits)
        ref = R.dist(R.Cand.of(logits), rng)
        assert out.selected == ref.selected
        np.testing.assert_allclose(out.probs, ref.p, rtol=1e-4, atol=1e-6)


def test_dist_frequencies():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], dtype=np.float32))
    smpl = owned(S.llama_sampler_init_dist(7))
    counts = np.zeros(4)
    for _ in range(4000):
        counts[run(smpl, logits).selected] += 1
    np.testing.assert_allclose(counts / 4000, [0.5, 0.3, 0.15, 0.05], atol=0.03)


def test_pcg32_known_values():
    # The reference PCG32 demo (pcg32-demo.c, seed 42, sequence 54) prints these first outputs.
    rng = R.PCG32(42)
    assert [rng.next() for _ in range(6)] == [0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293,
                                              0xbfa4784b, 0xcbed606e]


# ---- stateful samplers vs the reference ----

def _steps(logits_list, smpl, ref, accept=True):
    for logits in logits_list:
        out = run(smpl, logits)
        r = ref.apply(R.Cand.of(logits))
        assert out.selected == r.selected
        assert out.ids.tolist() == r.ids.tolist()
        if accept and out.selected >= 0:
            tok = out.selected_token
            S.llama_sampler_accept(smpl, tok)
            if hasattr(ref, "accept"):
                ref.accept(tok)


@pytest.mark.parametrize("params", [(5.0, 0.1, 100), (3.0, 0.5, 10), (8.0, 1.0, 2), (5.0, 0.1, 1), (0.1, 0.1, 100)])
def test_mirostat(params):
    tau, eta, m = params
    n_vocab = 500
    seq = [_rng.normal(0, 2, n_vocab).astype(np.float32) for _ in range(12)]
    smpl = owned(S.llama_sampler_init_mirostat(n_vocab, 9, tau, eta, m))
    _steps(seq, smpl, R.Mirostat(n_vocab, 9, F32(tau), F32(eta), m))


@pytest.mark.parametrize("params", [(5.0, 0.1), (3.0, 0.5), (0.5, 1.0), (20.0, 0.1)])
def test_mirostat_v2(params):
    tau, eta = params
    seq = [_rng.normal(0, 2, 500).astype(np.float32) for _ in range(12)]
    smpl = owned(S.llama_sampler_init_mirostat_v2(11, tau, eta))
    _steps(seq, smpl, R.MirostatV2(11, F32(tau), F32(eta)))


@pytest.mark.parametrize("li", range(len(SMALL_SETS)))
def test_mirostat_adversarial(li):
    logits = SMALL_SETS[li]
    for smpl, ref in ((S.llama_sampler_init_mirostat(len(logits), 3, 5, 0.1, 100), R.Mirostat(len(logits), 3, 5, F32(0.1), 100)),
                      (S.llama_sampler_init_mirostat_v2(3, 5, 0.1), R.MirostatV2(3, 5, F32(0.1)))):
        owned(smpl)
        _steps([logits] * 3, smpl, ref)


@pytest.mark.parametrize("params", [(64, 1.1, 0.0, 0.0), (3, 1.3, 0.5, 0.2), (0, 1.5, 1.0, 1.0), (-1, 1.5, 1.0, 1.0),
                                    (64, 1.0, 0.0, 0.0), (64, 0.0, 0.1, 0.0), (64, NaN, INF, NaN), (10, 0.8, -0.5, -1.0)])
def test_penalties(params):
    last_n, rep, freq, pres = params
    n = 300
    smpl = owned(S.llama_sampler_init_penalties(n, last_n, rep, freq, pres))
    ref = R.Penalties(last_n, F32(rep), F32(freq), F32(pres))
    history = [int(t) for t in _rng.integers(0, 40, 30)] + [-5, 299]
    for t in history:
        S.llama_sampler_accept(smpl, t)
        ref.accept(t)
        logits = _rng.normal(0, 2, n).astype(np.float32)
        logits[[0, 1]] = [0.0, -0.0]
        check(run(smpl, logits), ref.apply(R.Cand.of(logits)))
    # candidates in another order, with ids beyond n_vocab
    ids = _rng.permutation(n + 20).astype(np.int32)[:150]
    logits = _rng.normal(0, 2, 150).astype(np.float32)
    check(run(smpl, logits, ids), ref.apply(R.Cand.of(logits, ids)))
    S.llama_sampler_reset(smpl)
    check(run(smpl, logits, ids), R.Cand.of(logits, ids))


def test_penalties_huge_last_n_and_ids():
    smpl = owned(S.llama_sampler_init_penalties(0, 2 ** 31 - 1, 2.0, 0.0, 0.0))
    for t in (5, 2 ** 31 - 1, -1, 1 << 24, 7):
        S.llama_sampler_accept(smpl, t)
    out = run(smpl, np.ones(10, dtype=np.float32))
    assert out.logits.tolist() == [1, 1, 1, 1, 1, 0.5, 1, 0.5, 1, 1]


@pytest.mark.parametrize("n_vocab", [0, 100])
def test_logit_bias(n_vocab):
    biases = [(3, 1.5), (3, 0.5), (99, -INF), (-1, 5.0), (100, 2.0), (50, NaN), (7, -2.25)]
    smpl = owned(S.llama_sampler_init_logit_bias(n_vocab, len(biases), biases))
    logits = _rng.normal(0, 1, 100).astype(np.float32)
    check(run(smpl, logits), R.logit_bias(R.Cand.of(logits), n_vocab, biases))
    ids = _rng.permutation(120).astype(np.int32)[:80]   # not the vocab in id order
    logits = _rng.normal(0, 1, 80).astype(np.float32)
    check(run(smpl, logits, ids), R.logit_bias(R.Cand.of(logits, ids), n_vocab, biases))
    clone = owned(S.llama_sampler_clone(smpl))
    check(run(clone, logits, ids), R.logit_bias(R.Cand.of(logits, ids), n_vocab, biases))


def test_logit_bias_ctypes_array_and_bad_args():
    arr = (S.llama_logit_bias * 2)(S.llama_logit_bias(1, 1.0), S.llama_logit_bias(2, -1.0))
    smpl = owned(S.llama_sampler_init_logit_bias(3, 2, arr))
    assert run(smpl, [0.0, 0.0, 0.0]).logits.tolist() == [0.0, 1.0, -1.0]
    assert S._llama_sampler_init_logit_bias(3, -1, None) is None
    assert S._llama_sampler_init_logit_bias(3, 2, None) is None


@pytest.mark.parametrize("params", [(0.5, 0.9), (0.1, 0.5), (0.9, 0.0), (-1.0, 0.9), (2.0, 1.5), (0.3, NaN)])
def test_adaptive_p(params):
    target, decay = params
    seq = [_rng.normal(0, 2, 200).astype(np.float32) for _ in range(10)] + SMALL_SETS[5:]
    smpl = owned(S.llama_sampler_init_adaptive_p(target, decay, 5))
    ref = R.AdaptiveP(F32(target), F32(decay), 5)
    for logits in seq:
        out = run(smpl, logits)
        r = ref.apply(R.Cand.of(logits))
        assert out.selected == r.selected
        np.testing.assert_allclose(out.probs, r.p, rtol=1e-4, atol=1e-6)


def test_adaptive_p_steers_average():
    logits = np.log(np.array([0.6, 0.2, 0.1, 0.05, 0.05], dtype=np.float32))
    smpl = owned(S.llama_sampler_init_adaptive_p(0.15, 0.9, 3))
    picked = []
    for _ in range(400):
        out = run(smpl, logits)
        picked.append([0.6, 0.2, 0.1, 0.05, 0.05][out.selected])
    assert abs(np.mean(picked) - 0.15) < 0.1
    assert np.mean(picked) < 0.4  # plain sampling would average 0.6*0.6+... = 0.415


# ---- chains ----

def _chain(*samplers, no_perf=True):
    chain = owned(S.llama_sampler_chain_init(S.llama_sampler_chain_params(no_perf=no_perf)))
    for s in samplers:
        S.llama_sampler_chain_add(chain, s)
    return chain


def test_chain_applies_in_order():
    logits = _rng.normal(0, 2, 1000).astype(np.float32)
    chain = _chain(S.llama_sampler_init_top_k(40), S.llama_sampler_init_top_p(0.9, 1),
                   S.llama_sampler_init_temp(0.7), S.llama_sampler_init_dist(1234))
    rng = R.PCG32(1234)
    for _ in range(10):
        out = run(chain, logits)
        c = R.top_k(R.Cand.of(logits), 40)
        c = R.top_p(c, F32(0.9), 1)
        c = R.temp(c, F32(0.7))
        c = R.dist(c, rng)
        assert out.selected_token == int(c.ids[c.selected])
    # The order matters: temp before top-p keeps another set than top-p before temp.
    a = run(_chain(S.llama_sampler_init_top_p(0.5, 1), S.llama_sampler_init_temp(3.0)), logits)
    b = run(_chain(S.llama_sampler_init_temp(3.0), S.llama_sampler_init_top_p(0.5, 1)), logits)
    assert a.size != b.size
    assert a.size == R.top_p(R.Cand.of(logits), F32(0.5), 1).size
    assert b.size == R.top_p(R.temp(R.Cand.of(logits), 3.0), F32(0.5), 1).size


def test_chain_get_remove_ownership():
    chain = _chain()
    k = S.llama_sampler_init_top_k(3)
    t = S.llama_sampler_init_temp(0.5)
    S.llama_sampler_chain_add(chain, k)
    S.llama_sampler_chain_add(chain, t)
    S.llama_sampler_chain_add(chain, chain)        # refused, logged
    assert S.llama_sampler_chain_n(chain) == 2
    assert S.llama_sampler_chain_get(chain, 0) == k
    assert S.llama_sampler_chain_get(chain, 1) == t
    assert S.llama_sampler_chain_get(chain, 2) is None
    assert S.llama_sampler_chain_get(chain, -1) is None
    removed = S.llama_sampler_chain_remove(chain, 0)
    assert removed == k
    assert S.llama_sampler_chain_n(chain) == 1
    assert S.llama_sampler_chain_get(chain, 0) == t
    assert S.llama_sampler_chain_remove(chain, 5) is None
    owned(removed)  # ours again; the chain frees only t


def test_chain_accept_forwards_and_perf():
    chain = _chain(S.llama_sampler_init_penalties(10, 8, 2.0, 0, 0), S.llama_sampler_init_greedy(), no_perf=False)
    logits = np.array([1.0, 3.0, 2.0, 0.5], dtype=np.float32)
    picks = []
    for _ in range(3):
        out = run(chain, logits)
        picks.append(out.selected_token)
        S.llama_sampler_accept(chain, out.selected_token)
    assert picks == [1, 2, 1]   # 3 -> 3/2 after its pick, then 2 -> 1: each accept reaches the penalties
    run(chain, _rng.normal(0, 1, 49152).astype(np.float32))  # long enough for any clock
    perf = S.llama_perf_sampler(chain)
    assert perf.n_sample == 3 and perf.t_sample_ms > 0
    S.llama_perf_sampler_print(chain)
    S.llama_perf_sampler_reset(chain)
    perf = S.llama_perf_sampler(chain)
    assert perf.n_sample == 0 and perf.t_sample_ms == 0
    quiet = _chain(S.llama_sampler_init_greedy())
    run(quiet, logits)
    S.llama_sampler_accept(quiet, 1)
    assert S.llama_perf_sampler(quiet).n_sample == 0   # default params: no_perf


def test_chain_default_params():
    assert S.llama_sampler_chain_default_params().no_perf is True


def _stateful_chain(seed=99):
    return _chain(S.llama_sampler_init_penalties(100, 16, 1.2, 0.1, 0.1), S.llama_sampler_init_top_k(50),
                  S.llama_sampler_init_xtc(0.5, 0.05, 1, seed), S.llama_sampler_init_temp(0.9),
                  S.llama_sampler_init_dist(seed))


def _generate(smpl, seq):
    out = []
    for logits in seq:
        t = run(smpl, logits).selected_token
        S.llama_sampler_accept(smpl, t)
        out.append(t)
    return out


SEQ = [np.random.default_rng(i).normal(0, 2, 100).astype(np.float32) for i in range(30)]


@pytest.mark.parametrize("make", [
    lambda: S.llama_sampler_init_dist(5),
    lambda: S.llama_sampler_init_mirostat(100, 5, 4.0, 0.2, 50),
    lambda: S.llama_sampler_init_mirostat_v2(5, 4.0, 0.2),
    lambda: S.llama_sampler_init_adaptive_p(0.3, 0.8, 5),
    lambda: _stateful_chain(),
])
def test_clone_continues_identically_and_reset_restores(make):
    smpl = make()
    if S.llama_sampler_name(smpl) != b"chain":
        owned(smpl)
    first = _generate(smpl, SEQ[:10])
    clone = owned(S.llama_sampler_clone(smpl))
    assert _generate(smpl, SEQ[10:]) == _generate(clone, SEQ[10:])
    S.llama_sampler_reset(smpl)
    assert _generate(smpl, SEQ[:10]) == first
    # copy: a fresh sampler takes over the state of another
    other = make()
    if S.llama_sampler_name(other) != b"chain":
        owned(other)
    S.llama_sampler_reset(smpl)
    _generate(smpl, SEQ[:7])
    S.llama_sampler_copy(smpl, other)
    assert _generate(smpl, SEQ[7:20]) == _generate(other, SEQ[7:20])


def test_copy_between_different_types_is_refused():
    a = owned(S.llama_sampler_init_dist(1))
    b = owned(S.llama_sampler_init_temp(1))
    S.llama_sampler_copy(a, b)  # logged, nothing happens
    assert run(b, [1.0, 2.0]).logits.tolist() == [1.0, 2.0]


# ---- seeds ----

def test_seeds():
    assert S.llama_sampler_get_seed(owned(S.llama_sampler_init_dist(123))) == 123
    assert S.llama_sampler_get_seed(owned(S.llama_sampler_init_greedy())) == R.DEFAULT_SEED
    assert S.llama_sampler_get_seed(owned(S.llama_sampler_init_xtc(0.5, 0.1, 1, 77))) == 77
    assert S.llama_sampler_get_seed(owned(S.llama_sampler_init_mirostat_v2(78, 5, 0.1))) == 78
    r1 = S.llama_sampler_get_seed(owned(S.llama_sampler_init_dist(R.DEFAULT_SEED)))
    r2 = S.llama_sampler_get_seed(owned(S.llama_sampler_init_dist(R.DEFAULT_SEED)))
    assert r1 != R.DEFAULT_SEED and r2 != R.DEFAULT_SEED and r1 != r2
    chain = _chain(S.llama_sampler_init_dist(5), S.llama_sampler_init_top_k(3), S.llama_sampler_init_xtc(0.1, 0.1, 1, 6),
                   S.llama_sampler_init_temp(1))
    assert S.llama_sampler_get_seed(chain) == 6
    assert S.llama_sampler_get_seed(_chain(S.llama_sampler_init_greedy())) == R.DEFAULT_SEED


_CHILD = r"""
import sys, numpy as np
sys.path.insert(0, {tests!r})
from llama_py._capi import sampling as S
chain = S.llama_sampler_chain_init(S.llama_sampler_chain_default_params())
for s in (S.llama_sampler_init_top_k(40), S.llama_sampler_init_top_p(0.95, 1), S.llama_sampler_init_temp(0.8),
          S.llama_sampler_init_dist(31337)):
    S.llama_sampler_chain_add(chain, s)
out = []
for i in range(50):
    logits = np.random.default_rng(i).normal(0, 2, 49152).astype(np.float32)
    t = S.TokenDataArray(logits).apply(chain).selected_token
    S.llama_sampler_accept(chain, t)
    out.append(t)
print(",".join(map(str, out)))
"""


def test_seeded_dist_same_across_processes():
    code = _CHILD.format(tests=str(Path(__file__).parent))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout == runs[1].stdout
    # ... and equal to this process and to the reference generator
    chain = _chain(S.llama_sampler_init_top_k(40), S.llama_sampler_init_top_p(0.95, 1),
                   S.llama_sampler_init_temp(0.8), S.llama_sampler_init_dist(31337))
    rng = R.PCG32(31337)
    here, ref = [], []
    for i in range(50):
        logits = np.random.default_rng(i).normal(0, 2, 49152).astype(np.float32)
        t = run(chain, logits).selected_token
        S.llama_sampler_accept(chain, t)
        here.append(t)
        c = R.dist(R.temp(R.top_p(R.top_k(R.Cand.of(logits), 40), F32(0.95), 1), F32(0.8)), rng)
        ref.append(int(c.ids[c.selected]))
    assert runs[0].stdout.strip() == ",".join(map(str, here))
    assert here == ref


# ---- samplers written in Python ----

class EvenOnly(S.PythonSampler):
    name = "even-only"

    def __init__(self):
        self.accepted = []
        self.resets = 0
        super().__init__()

    def apply(self, cur_p):
        for i in range(cur_p.size):
            if cur_p.data[i].id % 2:
                cur_p.data[i].logit = -INF

    def accept(self, token):
        self.accepted.append(token)

    def reset(self):
        self.resets += 1


def test_python_sampler_in_chain_stays_alive():
    py = EvenOnly()
    chain = _chain()
    S.llama_sampler_chain_add(chain, py.sampler)
    S.llama_sampler_chain_add(chain, S.llama_sampler_init_greedy())
    handle = py.sampler
    del py
    gc.collect()   # the registry, not the caller, keeps the callbacks alive
    assert S.llama_sampler_name(S.llama_sampler_chain_get(chain, 0)) == b"even-only"
    logits = np.array([0.0, 5.0, 1.0, 4.0, 2.0], dtype=np.float32)
    out = run(chain, logits)
    assert out.selected_token == 4
    S.llama_sampler_accept(chain, 4)
    S.llama_sampler_reset(chain)
    obj = S._live[handle]
    assert obj.accepted == [4] and obj.resets == 1
    # clone through the Python callback: an independent Python object
    clone = owned(S.llama_sampler_clone(chain))
    assert run(clone, logits).selected_token == 4
    assert len([o for o in S._live.values() if isinstance(o, EvenOnly)]) == 2
    S.llama_sampler_free(_to_free.pop())   # the clone
    S.llama_sampler_free(_to_free.pop())   # the chain frees the Python sampler too
    gc.collect()
    assert not [o for o in S._live.values() if isinstance(o, EvenOnly)]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_python_sampler_functional_and_exceptions():
    calls = []

    def apply(cur_p):
        calls.append(cur_p.size)
        cur_p.selected = 0

    py = S.PythonSampler(apply=apply, name="first")
    assert S.llama_sampler_name(py.sampler) == b"first"
    assert run(py.sampler, [1.0, 2.0, 3.0]).selected == 0
    assert calls == [3]

    def boom(cur_p):
        raise RuntimeError("expected in this test")

    bad = S.PythonSampler(apply=boom)
    out = run(bad.sampler, [1.0, 2.0])   # reported via sys.unraisablehook; candidates untouched
    assert out.logits.tolist() == [1.0, 2.0] and out.selected == -1
    py.close()
    bad.close()
    assert py.sampler is None and bad.sampler is None


def test_llama_cpp_python_style_custom_sampler():
    """llama-cpp-python's CustomSampler: a llama_sampler struct in Python memory added to a
    chain and removed before the chain is freed."""
    def apply_wrapper(smpl, cur_p):
        cur_p.contents.data[0].logit = 100.0

    iface = S.llama_sampler_i()
    iface.apply = S.llama_sampler_i_apply(apply_wrapper)
    iface.name = S.llama_sampler_i_name(0)
    iface.accept = S.llama_sampler_i_accept(0)
    iface.reset = S.llama_sampler_i_reset(0)
    iface.clone = S.llama_sampler_i_clone(0)
    iface.free = S.llama_sampler_i_free(0)
    sampler = S.llama_sampler()
    sampler.iface = ctypes.pointer(iface)
    sampler.ctx = None
    chain = S.llama_sampler_chain_init(S.llama_sampler_chain_default_params())
    S.llama_sampler_chain_add(chain, ctypes.pointer(sampler))
    S.llama_sampler_chain_add(chain, S.llama_sampler_init_greedy())
    assert S.llama_sampler_name(S.llama_sampler_chain_get(chain, 0)) == b"(unnamed)"
    assert run(chain, [1.0, 2.0, 3.0]).selected == 0
    S.llama_sampler_accept(chain, 0)
    S.llama_sampler_reset(chain)
    S.llama_sampler_chain_remove(chain, 0)
    S.llama_sampler_free(chain)


def test_struct_layouts():
    try:
        from llama_py import llama_cpp
        sz = llama_cpp.llama_abi_struct_size
        sz(b"llama_token_data")
    except (ImportError, AttributeError):
        pytest.skip("the library does not describe its structs")
    for pystruct, name in S.SAMPLING_ABI_STRUCTS:
        assert sz(name.encode()) == ctypes.sizeof(pystruct), name
        for fname, *_ in pystruct._fields_:
            assert llama_cpp.llama_abi_field_offset(name.encode(), fname.encode()) == getattr(pystruct, fname).offset


# ---- with a vocabulary: DRY ----

@pytest.fixture(scope="module")
def gpt2():
    from llama_py import llama_cpp as L
    from resources import vocab_file
    path = vocab_file("gpt-2")
    params = L.llama_model_default_params()
    params.vocab_only = True
    model = L.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        pytest.skip("vocab-only loading is not available")
    yield L, model, L.llama_model_get_vocab(model)
    L.llama_model_free(model)


def _piece(L, vocab, t):
    buf = ctypes.create_string_buffer(256)
    n = L.llama_token_to_piece(vocab, t, buf, 256, 0, True)
    return buf.raw[:max(n, 0)]


def _tokenize(L, vocab, text: bytes):
    toks = (ctypes.c_int32 * 64)()
    n = L.llama_tokenize(vocab, text, len(text), toks, 64, False, False)
    return list(toks[:n])


def _breaker_seqs(L, vocab, breakers):
    """Breakers as token sequences, by the documented rule: any token containing the string,
    or a token ending with a prefix of it followed by the tokens of the rest."""
    n_vocab = L.llama_vocab_n_tokens(vocab)
    pieces = [_piece(L, vocab, t) for t in range(n_vocab)]
    seqs = []
    for b in breakers:
        for t, pc in enumerate(pieces):
            if not pc:
                continue
            if b in pc:
                seqs.append([t])
                continue
            for o in range(min(len(pc), len(b) - 1), 0, -1):
                if pc.endswith(b[:o]):
                    rest = _tokenize(L, vocab, b[o:])
                    if rest:
                        seqs.append([t] + rest)
    return seqs


def test_dry_against_reference(gpt2):
    L, model, vocab = gpt2
    n_vocab = L.llama_vocab_n_tokens(vocab)
    breakers = [b"\n", b":", b"\"", b"*", b"<|end"]
    seqs = _breaker_seqs(L, vocab, breakers)
    text = (b"the cat sat on the mat. the cat sat on the mat. the cat sat: on the mat. the dog "
            b"ran <|endoftext|> the cat sat on the mat. the cat sat on")
    hist = _tokenize(L, vocab, text)
    assert len(hist) > 20
    for params in [(0.8, 1.75, 2, -1), (0.8, 1.75, 2, 12), (1.0, 2.0, 1, 64), (0.5, 1.1, 4, 0),
                   (0.0, 1.75, 2, -1), (0.8, 0.5, 2, -1), (2.0, 100.0, 0, -1)]:
        mult, base, allowed, last_n = params
        smpl = owned(S.llama_sampler_init_dry(vocab, mult, base, allowed, last_n, breakers, len(breakers)))
        ref = R.Dry(n_vocab, F32(mult), F32(base), allowed, last_n, seqs)
        logits = _rng.normal(0, 1, n_vocab).astype(np.float32)
        for i, t in enumerate(hist):
            S.llama_sampler_accept(smpl, t)
            ref.accept(t)
            if i % 5 == 4 or i == len(hist) - 1:
                out = run(smpl, logits)
                r = ref.apply(R.Cand.of(logits))
                check(out, r)
        if mult > 0 and base >= 1 and last_n != 0:
            assert not same_logits(out.logits, logits)   # the repeat was penalised
        clone = owned(S.llama_sampler_clone(smpl))
        check(run(clone, logits), ref.apply(R.Cand.of(logits)))
        S.llama_sampler_reset(smpl)
        check(run(smpl, logits), R.Cand.of(logits))


def test_dry_old_signature_and_errors(gpt2):
    L, model, vocab = gpt2
    # llama-cpp-python's older form: n_ctx_train after vocab
    smpl = owned(S.llama_sampler_init_dry(vocab, 8192, 0.8, 1.75, 2, -1, [b"\n"], 1))
    assert S.llama_sampler_name(smpl) == b"dry"
    assert S.llama_sampler_init_dry(None, 0.8, 1.75, 2, -1, None, 0) is None
    assert S.llama_sampler_init_dry(vocab, 0.8, 1.75, 2, -1, None, 3) is None
    with pytest.raises(TypeError):
        S.llama_sampler_init_dry(vocab, 0.8, 1.75)
    # model instead of vocab is accepted
    owned(S.llama_sampler_init_dry(model, 0.8, 1.75, 2, -1, ["\n", ":"], None))


# ---- with a model: llama_sampler_sample ----

@pytest.fixture(scope="module")
def smol_ctx(smollm2_path):
    from llama_py import llama_cpp as L
    model = L.llama_model_load_from_file(str(smollm2_path).encode(), L.llama_model_default_params())
    if not model:
        pytest.skip("the model does not load yet")
    cparams = L.llama_context_default_params()
    cparams.n_ctx = 256
    ctx = L.llama_init_from_model(model, cparams)
    if not ctx:
        L.llama_model_free(model)
        pytest.skip("no context")
    vocab = L.llama_model_get_vocab(model)
    toks = _tokenize(L, vocab, b"The capital of France is")
    arr = (ctypes.c_int32 * len(toks))(*toks)
    if L.llama_decode(ctx, L.llama_batch_get_one(arr, len(toks))) != 0:
        pytest.skip("decode failed")
    yield L, ctx, L.llama_vocab_n_tokens(vocab)
    L.llama_free(ctx)
    L.llama_model_free(model)


def _same_draws_as_the_array(chain, ctx, logits, n):
    """n draws of llama_sampler_sample(chain) on the context's row equal those of a clone of the
    chain applied to a fresh candidate array of the same logits (accepted alike)."""
    twin = owned(S.llama_sampler_clone(chain))
    for _ in range(n):
        t = S.llama_sampler_sample(chain, ctx, -1)
        u = run(twin, logits).selected_token
        S.llama_sampler_accept(twin, u)
        assert t == u
    assert S.llama_perf_sampler(chain).n_sample == n


def test_sampler_sample_reads_context_logits(smol_ctx):
    L, ctx, n_vocab = smol_ctx
    ptr = L.llama_get_logits_ith(ctx, -1)
    logits = np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()
    greedy = owned(S.llama_sampler_init_greedy())
    assert S.llama_sampler_sample(greedy, ctx, -1) == int(np.argmax(logits))
    chain = _chain(S.llama_sampler_init_top_k(40), S.llama_sampler_init_top_p(0.95, 1),
                   S.llama_sampler_init_temp(0.8), S.llama_sampler_init_dist(4242), no_perf=False)
    _same_draws_as_the_array(chain, ctx, logits, 5)
    # a chain with no final sampler selects nothing: LLAMA_TOKEN_NULL, logged
    assert S.llama_sampler_sample(_chain(S.llama_sampler_init_top_k(5)), ctx, -1) == -1
    assert S.llama_sampler_sample(greedy, ctx, 10 ** 6) == -1   # no such output row


@pytest.mark.parametrize("k", [1, 2, 40, 1000, 6144, 7000, 10 ** 6])
def test_sampler_sample_on_the_row_matches_the_candidate_array(smol_ctx, k):
    """llama_sampler_sample runs greedy-alone and top-k-first chains on the logits row itself
    (no candidate array for the whole vocabulary): what they pick, and what top-k hands the
    rest of the chain, must be what the same chain picks from the full candidate array — with
    ties (first position wins), NaN (ranks as -inf) and -inf in the row. k = 7000 and above
    take the general path (no heap), the others the row path."""
    L, ctx, n_vocab = smol_ctx
    ptr = L.llama_get_logits_ith(ctx, -1)
    row = np.ctypeslib.as_array(ptr, shape=(n_vocab,))
    saved = row.copy()
    rng = np.random.default_rng(k)
    try:
        for trial in range(4):
            x = np.round(rng.normal(0, 2, n_vocab), 1).astype(np.float32)  # many exact ties
            x[rng.integers(0, n_vocab, 50)] = np.nan
            x[rng.integers(0, n_vocab, 50)] = -np.inf
            if trial % 2:
                x[rng.integers(0, n_vocab, 5)] = np.nanmax(x)  # the maximum tied at several positions
            row[:] = x
            greedy = owned(S.llama_sampler_init_greedy())
            assert S.llama_sampler_sample(greedy, ctx, -1) == run(owned(S.llama_sampler_init_greedy()), x).selected_token
            g_chain = _chain(S.llama_sampler_init_greedy())
            assert S.llama_sampler_sample(g_chain, ctx, -1) == int(np.nanargmax(x))
            chain = _chain(S.llama_sampler_init_top_k(k), S.llama_sampler_init_top_p(0.9, 1),
                           S.llama_sampler_init_temp(0.7), S.llama_sampler_init_dist(77 + trial), no_perf=False)
            _same_draws_as_the_array(chain, ctx, x, 6)
            # top-k then greedy: the row path's k candidates, in order
            tg = _chain(S.llama_sampler_init_top_k(k), S.llama_sampler_init_greedy())
            assert S.llama_sampler_sample(tg, ctx, -1) == int(np.nanargmax(x))
    finally:
        row[:] = saved
