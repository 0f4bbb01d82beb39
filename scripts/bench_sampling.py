#!/usr/bin/env python3
"""Cost of sampling with a 49,152-token vocabulary (SmolLM2's), in microseconds per token.

    python scripts/bench_sampling.py [--model PATH] [--iters N] [--threads T]

Measures, with the chain top_k 40 -> top_p 0.95 -> temp 0.8 -> dist:
  * llama_sampler_sample on a real context (builds the candidate array from the logits,
    applies the chain, accepts the token), when the SmolLM2 GGUF is available; and a one-token
    llama_decode step on the same context, to give the sampling share of a generation step;
  * the chain alone on a candidate array (the library's own llama_perf_sampler timer);
  * each sampler alone on the full vocabulary, for reference.
Each figure is the best (min) and the median over single calls (--iters of them; --repeats is
kept for the decode loop): on a shared machine the best call is the closest to the code's own
cost, the median shows what contention adds.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llama_py._capi import sampling as S  # noqa: E402
from llama_py.pull import demo_model_path  # noqa: E402

N_VOCAB = 49152
DEFAULT_MODEL = demo_model_path()  # SmolLM2 in the user cache (`python -m llama_py pull`)


def make_chain():
    chain = S.llama_sampler_chain_init(S.llama_sampler_chain_params(no_perf=False))
    for s in (S.llama_sampler_init_top_k(40), S.llama_sampler_init_top_p(0.95, 1),
              S.llama_sampler_init_temp(0.8), S.llama_sampler_init_dist(1234)):
        S.llama_sampler_chain_add(chain, s)
    return chain


def stats(samples):
    """(best, median) of per-call times in microseconds."""
    return min(samples), statistics.median(samples)


def time_us(fn, iters):
    """(best, median) time of single calls, in microseconds."""
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return stats(out)


def c_time_us(smpl, cand, reset, iters, accept_token=None):
    """(best, median) of the chain's own timer (apply only) over single applications."""
    out = []
    for _ in range(iters):
        reset()
        S.llama_perf_sampler_reset(smpl)
        cand.apply(smpl)
        out.append(S.llama_perf_sampler(smpl).t_sample_ms * 1e3)
        S.llama_sampler_accept(smpl, cand.selected_token if accept_token is None else accept_token)
    return stats(out)


def bench_arrays(iters):
    rng = np.random.default_rng(0)
    logits = (rng.normal(0, 3, N_VOCAB)).astype(np.float32)
    cand = S.TokenDataArray(logits)
    fresh = cand.buf.copy()

    def reset():
        cand.buf[:] = fresh
        cand.arr.size = N_VOCAB
        cand.arr.selected = -1
        cand.arr.sorted = False

    results = {}
    chain = make_chain()
    results["chain (C timer, apply only)"] = c_time_us(chain, cand, reset, iters)
    S.llama_sampler_free(chain)

    singles = {
        "top_k 40": lambda: S.llama_sampler_init_top_k(40),
        "top_p 0.95": lambda: S.llama_sampler_init_top_p(0.95, 1),
        "min_p 0.05": lambda: S.llama_sampler_init_min_p(0.05, 1),
        "temp 0.8": lambda: S.llama_sampler_init_temp(0.8),
        "dist": lambda: S.llama_sampler_init_dist(1),
        "greedy": lambda: S.llama_sampler_init_greedy(),
        "typical 0.9": lambda: S.llama_sampler_init_typical(0.9, 1),
        "top_n_sigma 1": lambda: S.llama_sampler_init_top_n_sigma(1.0),
        "mirostat_v2": lambda: S.llama_sampler_init_mirostat_v2(1, 5.0, 0.1),
    }
    for name, make in singles.items():
        c = S.llama_sampler_chain_init(S.llama_sampler_chain_params(no_perf=False))
        S.llama_sampler_chain_add(c, make())
        results[f"{name} alone"] = c_time_us(c, cand, reset, max(iters // 4, 10), accept_token=0)
        S.llama_sampler_free(c)
    return results


def bench_model(path, iters, repeats, threads):
    from llama_py import llama_cpp as L
    model = L.llama_model_load_from_file(str(path).encode(), L.llama_model_default_params())
    if not model:
        return None
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    cparams = L.llama_context_default_params()
    cparams.n_ctx = 1024
    if threads:
        cparams.n_threads = cparams.n_threads_batch = threads
    ctx = L.llama_init_from_model(model, cparams)
    text = b"The quick brown fox jumps over the lazy dog."
    toks = (ctypes.c_int32 * 64)()
    n = L.llama_tokenize(vocab, text, len(text), toks, 64, True, False)
    assert L.llama_decode(ctx, L.llama_batch_get_one(toks, n)) == 0
    chain = make_chain()
    res = {"n_vocab": n_vocab}
    res["llama_sampler_sample (Python loop)"] = time_us(lambda: S.llama_sampler_sample(chain, ctx, -1), iters)
    # One-token decode steps (the KV cache grows by one each time; stay well inside n_ctx).
    tok = (ctypes.c_int32 * 1)(toks[n - 1])
    steps = min(iters, 60)
    decode_times = []
    for _ in range(max(repeats, 1)):
        L.llama_memory_seq_rm(L.llama_get_memory(ctx), 0, n, -1)
        for i in range(steps):
            t0 = time.perf_counter()
            rc = L.llama_decode(ctx, L.llama_batch_get_one(tok, 1))
            decode_times.append((time.perf_counter() - t0) * 1e6)
            assert rc == 0, rc
    res["llama_decode, one token"] = stats(decode_times)
    S.llama_sampler_free(chain)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()

    print(f"vocabulary: {N_VOCAB} tokens; chain: top_k 40 -> top_p 0.95 -> temp 0.8 -> dist")
    print(f"  {'':40s} {'best':>9s}    {'median':>9s}")
    for k, (b, m) in bench_arrays(args.iters).items():
        print(f"  {k:40s} {b:9.1f} us {m:9.1f} us")
    if args.model.exists():
        res = bench_model(args.model, args.iters, args.repeats, args.threads)
        if res is None:
            print(f"  (could not load {args.model})")
            return
        s = res["llama_sampler_sample (Python loop)"]
        d = res["llama_decode, one token"]
        print(f"  model vocabulary: {res['n_vocab']} tokens")
        print(f"  {'llama_sampler_sample (Python loop)':40s} {s[0]:9.1f} us {s[1]:9.1f} us")
        print(f"  {'llama_decode, one token':40s} {d[0]:9.1f} us {d[1]:9.1f} us")
        print(f"  sampling / decode step: {100 * s[0] / d[0]:.1f} % (best runs), {100 * s[1] / d[1]:.1f} % (medians)")
    else:
        print(f"  ({args.model} not found: no decode comparison)")


if __name__ == "__main__":
    main()
