"""llama-bench-style measurements through the public API.

pp<N>: an N-token prompt decoded in one batch from an empty cache.
tg<N>: N tokens decoded one at a time after an empty cache.
Rows report t/s as mean +- standard deviation over repetitions, like llama-bench.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import time
from typing import List, Optional

from . import llama_cpp as C


def _decode_tokens(ctx, tokens: List[int]) -> None:
    arr = (C.llama_token * len(tokens))(*tokens)
    rc = C.llama_decode(ctx, C.llama_batch_get_one(arr, len(tokens)))
    if rc != 0:
        raise RuntimeError(f"llama_decode returned {rc}")


def run_bench(model_path: str, n_prompt: int = 512, n_gen: int = 128, reps: int = 5, threads: Optional[int] = None,
              flash_attn: bool = True, out=print) -> List[dict]:
    C.llama_backend_init()
    quiet = C.llama_log_callback(lambda level, text, ud: None)
    C.llama_log_set(quiet, None)
    mp = C.llama_model_default_params()
    model = C.llama_model_load_from_file(model_path.encode(), mp)
    if not model:
        raise RuntimeError(f"could not load {model_path}")
    cp = C.llama_context_default_params()
    cp.n_ctx = max(n_prompt + n_gen, 256)
    cp.n_batch = max(n_prompt, 1)
    cp.n_ubatch = max(n_prompt, 1)
    if threads:
        cp.n_threads = threads
        cp.n_threads_batch = threads
    cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn else C.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = C.llama_init_from_model(model, cp)
    if not ctx:
        C.llama_model_free(model)
        raise RuntimeError("could not create a context")
    vocab = C.llama_model_get_vocab(model)
    n_vocab = C.llama_vocab_n_tokens(vocab)
    mem = C.llama_get_memory(ctx)
    desc = ctypes.create_string_buffer(128)
    C.llama_model_desc(model, desc, len(desc))
    size_gib = C.llama_model_size(model) / 1024 ** 3
    params_b = C.llama_model_n_params(model) / 1e9
    n_threads = C.llama_n_threads(ctx)
    rows = []
    tokens = [(i * 7919 + 13) % n_vocab for i in range(max(n_prompt, n_gen))]

    # warm-up: one small batch and one token
    _decode_tokens(ctx, tokens[:min(16, len(tokens))])
    C.llama_memory_clear(mem, True)

    out(f"| model | size | params | threads | test | t/s |")
    out(f"| ----- | ---: | -----: | ------: | ---: | --: |")
    for test, n in (("pp", n_prompt), ("tg", n_gen)):
        if n <= 0:
            continue
        speeds = []
        for _ in range(reps):
            C.llama_memory_clear(mem, True)
            t0 = time.perf_counter()
            if test == "pp":
                _decode_tokens(ctx, tokens[:n])
            else:
                for i in range(n):
                    _decode_tokens(ctx, [tokens[i]])
            dt = time.perf_counter() - t0
            speeds.append(n / dt)
        mean = statistics.fmean(speeds)
        sd = statistics.stdev(speeds) if len(speeds) > 1 else 0.0
        row = {"model": desc.value.decode(), "size_gib": size_gib, "params_b": params_b, "threads": n_threads,
               "test": f"{test}{n}", "t_s": mean, "sd": sd}
        rows.append(row)
        out(f"| {row['model']} | {size_gib:.2f} GiB | {params_b:.2f} B | {n_threads} | {row['test']} | "
            f"{mean:.2f} ± {sd:.2f} |")
    C.llama_free(ctx)
    C.llama_model_free(model)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="llama_py bench", description="llama-bench-style speed rows")
    p.add_argument("-m", "--model", default=None, help="GGUF file (default: the demo model)")
    p.add_argument("-p", "--n-prompt", type=int, default=512)
    p.add_argument("-n", "--n-gen", type=int, default=128)
    p.add_argument("-r", "--repetitions", type=int, default=5)
    p.add_argument("-t", "--threads", type=int, default=None)
    p.add_argument("-fa", "--flash-attn", type=int, default=1)
    a = p.parse_args(argv)
    from .pull import resolve_model
    run_bench(resolve_model(a.model), a.n_prompt, a.n_gen, a.repetitions, a.threads, bool(a.flash_attn))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
