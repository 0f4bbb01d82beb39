"""llama-bench-style measurements through the public API.

    python -m llama_py bench -m model.gguf -p 512 -n 128 -r 5 -t 2
    python -m llama_py bench -m model.gguf -p 128,512 -n 0 -t 1,2 -o json

pp<N>: an N-token prompt decoded from an empty cache (in n_batch pieces, like llama-bench).
tg<N>: N tokens decoded one at a time from an empty cache.
Each row gives t/s as mean +- sample standard deviation over -r repetitions, after one
warm-up run, with the model's size and parameter count, like llama-bench's markdown table.
"""
from __future__ import annotations

import ctypes
import json
import statistics
import sys
import time
from typing import Callable, List, Optional, Sequence

from . import llama_cpp as C

# The library keeps a pointer to the log callback: it must outlive every call that may log.
_QUIET_LOG = None


def _quiet() -> None:
    global _QUIET_LOG
    if _QUIET_LOG is None:
        _QUIET_LOG = C.llama_log_callback(lambda level, text, ud: None)
    C.llama_log_set(_QUIET_LOG, None)


def _decode(ctx, tokens: Sequence[int], n_batch: int) -> None:
    for i in range(0, len(tokens), n_batch):
        part = tokens[i:i + n_batch]
        arr = (C.llama_token * len(part))(*part)
        rc = C.llama_decode(ctx, C.llama_batch_get_one(arr, len(part)))
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")


def _fmt_size(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:.2f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.2f} MiB"


def _fmt_params(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.2f} M"


def run_bench(model_path: str, n_prompt: Sequence[int] = (512,), n_gen: Sequence[int] = (128,), reps: int = 5,
              threads: Sequence[Optional[int]] = (None,), flash_attn: bool = True, n_batch: int = 2048,
              out: Optional[Callable[[str], None]] = print, fmt: str = "md", repack: bool = True,
              n_gpu_layers: int = 0) -> List[dict]:
    """Runs the tests and returns one dict per row; prints the rows through `out` as they finish.
    repack=False loads the weights as stored (use_extra_bufts off: no CPU repacking);
    n_gpu_layers > 0 offloads that many blocks to the first GPU (when there is one)."""
    if isinstance(n_prompt, int):
        n_prompt = [n_prompt]
    if isinstance(n_gen, int):
        n_gen = [n_gen]
    if threads is None or isinstance(threads, int):
        threads = [threads]
    reps = max(1, reps)
    C.llama_backend_init()
    _quiet()
    mparams = C.llama_model_default_params()
    mparams.use_extra_bufts = repack
    mparams.n_gpu_layers = n_gpu_layers
    backend = "CUDA" if n_gpu_layers > 0 and C.llama_supports_gpu_offload() else "CPU"
    model = C.llama_model_load_from_file(model_path.encode(), mparams)
    if not model:
        raise RuntimeError(f"could not load {model_path}")
    rows: List[dict] = []
    try:
        desc = ctypes.create_string_buffer(128)
        C.llama_model_desc(model, desc, len(desc))
        size = C.llama_model_size(model)
        n_params = C.llama_model_n_params(model)
        n_vocab = C.llama_vocab_n_tokens(C.llama_model_get_vocab(model))
        tests = [("pp", n) for n in n_prompt if n > 0] + [("tg", n) for n in n_gen if n > 0]
        if out and fmt == "md":
            out("| model | size | params | backend | threads | test | t/s |")
            out("| ----- | ---: | -----: | ------- | ------: | ---: | --: |")
        for th in threads:
            for kind, n in tests:
                cp = C.llama_context_default_params()
                cp.n_ctx = max(n, 16)
                cp.n_batch = min(n_batch, max(n, 1))
                cp.n_ubatch = min(512, cp.n_batch)
                if th:
                    cp.n_threads = cp.n_threads_batch = th
                cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn else C.LLAMA_FLASH_ATTN_TYPE_DISABLED
                ctx = C.llama_init_from_model(model, cp)
                if not ctx:
                    raise RuntimeError("could not create a context")
                try:
                    mem = C.llama_get_memory(ctx)
                    n_threads = C.llama_n_threads(ctx)
                    # the same token stream every run, spread over the vocabulary
                    tokens = [(i * 7919 + 13) % n_vocab for i in range(n)]
                    speeds = []
                    # tg: one token array and one batch viewing it, refilled per token, so the
                    # loop costs one ctypes call per token (no per-token list, array and batch).
                    one = (C.llama_token * 1)()
                    batch1 = C.llama_batch_get_one(one, 1)
                    decode = C.llama_decode
                    for r in range(reps + 1):  # run 0 warms up caches and the thread pool
                        C.llama_memory_clear(mem, True)
                        t0 = time.perf_counter()
                        if kind == "pp":
                            _decode(ctx, tokens, cp.n_batch)
                        else:
                            for t in tokens:
                                one[0] = t
                                rc = decode(ctx, batch1)
                                if rc != 0:
                                    raise RuntimeError(f"llama_decode returned {rc}")
                        dt = time.perf_counter() - t0
                        if r > 0:
                            speeds.append(n / dt)
                finally:
                    C.llama_free(ctx)
                mean = statistics.fmean(speeds)
                sd = statistics.stdev(speeds) if len(speeds) > 1 else 0.0
                row = {"model": desc.value.decode(), "size": size, "params": n_params, "backend": backend, "n_gpu_layers": n_gpu_layers,
                       "threads": n_threads, "test": f"{kind}{n}", "t_s": mean, "sd": sd, "reps": reps,
                       "samples_ts": speeds}
                rows.append(row)
                if out and fmt == "md":
                    out(f"| {row['model']} | {_fmt_size(size)} | {_fmt_params(n_params)} | {backend} | {n_threads} | "
                        f"{row['test']} | {mean:.2f} ± {sd:.2f} |")
        if out and fmt == "json":
            out(json.dumps(rows, indent=2))
    finally:
        C.llama_model_free(model)
    return rows


def _int_list(s: str) -> List[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def main(argv=None) -> int:
    from . import _cli
    p = _cli.Parser(prog="python -m llama_py bench", description="llama-bench-style speed rows")
    p.add_argument("-m", "--model", default=None,
                   help="GGUF file, or a name `pull` knows (default: the demo model, pulled if needed)")
    p.add_argument("-p", "--n-prompt", type=_int_list, default=[512], help="prompt lengths, comma separated")
    p.add_argument("-n", "--n-gen", type=_int_list, default=[128], help="generation lengths, comma separated")
    p.add_argument("-r", "--repetitions", type=_cli.int_range(1), default=5,
                   help="runs of each test; the row shows their mean and deviation (default 5)")
    p.add_argument("-t", "--threads", type=_int_list, default=None, help="thread counts, comma separated "
                                                                         "(default: the physical cores)")
    p.add_argument("-b", "--batch-size", type=_cli.int_range(1), default=2048,
                   help="most prompt tokens per decode call (default 2048)")
    p.add_argument("-fa", "--flash-attn", type=_cli.int_range(0, 1), default=1,
                   help="1: flash attention on (default), 0: off")
    p.add_argument("-o", "--output", choices=("md", "json"), default="md",
                   help="a Markdown table (default) or JSON lines")
    p.add_argument("-nr", "--no-repack", action="store_true",
                   help="keep the weights as stored (no repacking at load for the CPU kernels)")
    p.add_argument("-ngl", "--n-gpu-layers", type=_cli.int_range(0), default=0,
                   help="blocks offloaded to a CUDA GPU (999: all; default 0)")
    a = p.parse_args(argv)
    try:
        run_bench(_cli.model_path(a.model), a.n_prompt, a.n_gen, a.repetitions, a.threads or [None],
                  bool(a.flash_attn), a.batch_size, out=lambda s: print(s, flush=True), fmt=a.output,
                  repack=not a.no_repack, n_gpu_layers=a.n_gpu_layers)
    except (RuntimeError, _cli.UserError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
