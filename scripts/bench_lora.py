#!/usr/bin/env python3
"""Generation speed with a LoRA adapter against the base model: one model, one context,
alternating runs (base, adapter, base, adapter, ...), greedy, batch-of-one decodes (not a test:
numbers mean something only on a quiet machine).

    python scripts/bench_lora.py -m MODEL.gguf [--rank 16] [--type f32|f16] [--seq] [-n 64] [-r 4] [-t 2]
    python scripts/bench_lora.py -m MODEL.gguf --lora ADAPTER.gguf ...      # a given adapter
    GGML_PROFILE=1 python scripts/bench_lora.py -m MODEL.gguf --only lora   # per-op table of the adapter's decodes

Without --lora, a random rank-R adapter on every attention and MLP projection (q, k, v, o, gate,
up, down) is written the way `python -m llama_py convert --lora` writes a PEFT adapter (GGUF
names, A [r, n_in] and B [n_out, r], alpha = r) into a temporary folder. --seq sets it with
llama_set_adapters_lora_seq on sequence 0 (the server's per-request path) instead of
llama_set_adapters_lora. Each run clears the KV cache, reads a 16-token prompt and generates n
tokens; tokens/s counts the generated tokens over their time (prompt excluded). Prints each
pair, the median ratio and the load average.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llama_py import llama_cpp as C  # noqa: E402

TARGETS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def write_random_lora(model_path: str, out: str, rank: int, seed: int = 0, dtype: str = "f32") -> str:
    """A random LoRA GGUF (dtype f32 or f16) on every attention and MLP projection of model_path."""
    import gguf
    import numpy as np
    rd = gguf.GGUFReader(model_path)
    arch = bytes(rd.fields["general.architecture"].parts[-1]).decode()
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(out, arch)
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", float(rank))
    dt = np.float16 if dtype == "f16" else np.float32
    for t in rd.tensors:
        base = t.name.rsplit(".", 1)[0]
        if t.name.endswith(".weight") and base.split(".")[-1] in TARGETS:
            n_in, n_out = int(t.shape[0]), int(t.shape[1])
            w.add_tensor(t.name + ".lora_a", (rng.standard_normal((rank, n_in)) / np.sqrt(n_in)).astype(dt))
            w.add_tensor(t.name + ".lora_b", (rng.standard_normal((n_out, rank)) * 0.01).astype(dt))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def run(ctx, smpl, n: int) -> float:
    """Generated tokens/s of one greedy run from a cleared cache."""
    C.llama_memory_clear(C.llama_get_memory(ctx), True)
    prompt = (C.llama_token * 16)(*range(1000, 1016))
    assert C.llama_decode(ctx, C.llama_batch_get_one(prompt, 16)) == 0
    tok = (C.llama_token * 1)(C.llama_sampler_sample(smpl, ctx, -1))
    t0 = time.perf_counter()
    for _ in range(n):
        assert C.llama_decode(ctx, C.llama_batch_get_one(tok, 1)) == 0
        tok[0] = C.llama_sampler_sample(smpl, ctx, -1)
    return n / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--lora", default=None, help="an adapter GGUF (default: a random one, see --rank/--type)")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--type", default="f32", choices=["f32", "f16"], help="the random adapter's matrices")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seq", action="store_true", help="per-sequence adapter (llama_set_adapters_lora_seq)")
    ap.add_argument("--only", choices=["base", "lora"], default=None, help="run one side only (for GGML_PROFILE)")
    ap.add_argument("-n", type=int, default=64, help="generated tokens per run")
    ap.add_argument("-r", "--repeats", type=int, default=4, help="base/adapter pairs")
    ap.add_argument("-t", "--threads", type=int, default=2)
    a = ap.parse_args()
    C.llama_backend_init()
    cb = C.llama_log_callback(lambda lvl, text, ud: None)
    C.llama_log_set(cb, None)
    path = a.lora
    if path is None:
        path = write_random_lora(a.model, os.path.join(tempfile.mkdtemp(), "lora.gguf"), a.rank, dtype=a.type)
    model = C.llama_model_load_from_file(a.model.encode(), C.llama_model_default_params())
    assert model, a.model
    cp = C.llama_context_default_params()
    cp.n_ctx = 1024
    cp.n_threads = cp.n_threads_batch = a.threads
    ctx = C.llama_init_from_model(model, cp)
    adapter = C.llama_adapter_lora_init(model, path.encode())
    assert ctx and adapter, "cannot create the context or load the adapter"
    smpl = C.llama_sampler_init_greedy()
    arr = (C.llama_adapter_lora_p * 1)(adapter)
    sc = (ctypes.c_float * 1)(a.scale)

    def use(on: bool):
        if a.seq:
            assert C.llama_set_adapters_lora_seq(ctx, 0, arr, 1 if on else 0, sc) == 0
        else:
            assert C.llama_set_adapters_lora(ctx, arr if on else None, 1 if on else 0, sc if on else None) == 0

    sides = [s for s in ("base", "lora") if a.only in (None, s)]
    for s in sides:                                       # warm (page in the weights)
        use(s == "lora")
        run(ctx, smpl, 8)
    ratios = []
    for r in range(a.repeats):
        got = {}
        for s in sides:
            use(s == "lora")
            got[s] = run(ctx, smpl, a.n)
        line = " ".join(f"{s} {v:.2f} t/s" for s, v in got.items())
        if len(got) == 2:
            ratios.append(got["lora"] / got["base"])
            line += f" ({ratios[-1]:.3f}x)"
        print(f"run {r}: {line} | load {os.getloadavg()[0]:.2f}", flush=True)
    if ratios:
        print(f"median: {statistics.median(ratios):.3f}x (rank {a.rank} {a.type if a.lora is None else ''}"
              f"{' per-sequence' if a.seq else ''}, {a.threads} threads)")
    C.llama_sampler_free(smpl)
    C.llama_adapter_lora_free(adapter)
    C.llama_free(ctx)
    C.llama_model_free(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
