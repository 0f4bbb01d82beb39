#!/usr/bin/env python3
"""Writes a mixture-of-experts GGUF of a real shape with random weights, for benchmarks: the
qwen3moe architecture (Qwen3 attention with QK-norm, softmax routing, the chosen experts'
weights renormalised) or llama with experts (Mixtral's layout), the same file for this engine
and for llama.cpp.

    python scripts/make_moe_model.py olmoe-q4_k_m.gguf --preset olmoe --quantize Q4_K_M
    python scripts/make_moe_model.py q3moe-small-q8_0.gguf --preset qwen3moe-small --quantize Q8_0
    python scripts/make_moe_model.py tiny-moe.gguf --preset tiny --type f32

The vocabulary is copied from a vocab-only GGUF (llama-spm by default), as make_synthetic_model.py
does. Router weights are drawn larger than the others (scale 4 / sqrt(n_embd)) so that each token
prefers a few experts, as trained routers do, and the tokens spread over all experts. --quantize
writes an F16 model first (about 2 bytes per parameter of temporary disk: 13 GB for olmoe) and
converts it with this project's quantizer, which keeps the routers in F32 as llama.cpp's does.
Generation reads only the chosen experts: the "active" figure printed is what tokens/s follows.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic_model import FTYPES, copy_vocab, default_vocab, quantize  # noqa: E402

PRESETS = {
    # OLMoE-1B-7B's shape (16 layers, d 2048, 64 experts of 1024, top-8), written as qwen3moe:
    # 6.9B parameters, 1.3B active; about 4 GB at Q4_K_M
    "olmoe": dict(arch="qwen3moe", n_layer=16, n_embd=2048, n_head=16, n_head_kv=16, head_dim=128, n_expert=64,
                  n_expert_used=8, n_ff_exp=1024, n_ctx=4096, rope_base=10000.0),
    # Qwen3-30B-A3B scaled to a third of its width and half its depth: 24 layers, d 1024, 128
    # experts of 384, top-8; 3.9B parameters, 0.4B active
    "qwen3moe-small": dict(arch="qwen3moe", n_layer=24, n_embd=1024, n_head=16, n_head_kv=4, head_dim=128,
                           n_expert=128, n_expert_used=8, n_ff_exp=384, n_ctx=4096, rope_base=1000000.0),
    # Mixtral's layout (llama with 8 experts, top-2) at a small width
    "mixtral-small": dict(arch="llama", n_layer=16, n_embd=1024, n_head=16, n_head_kv=4, head_dim=None, n_expert=8,
                          n_expert_used=2, n_ff_exp=3584, n_ctx=4096, rope_base=1000000.0),
    "tiny": dict(arch="qwen3moe", n_layer=2, n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_expert=8,
                 n_expert_used=2, n_ff_exp=32, n_ctx=256, rope_base=10000.0),
}


def write_moe_model(out: Path, *, arch: str, n_layer: int, n_embd: int, n_head: int, n_head_kv: int,
                    head_dim: Optional[int], n_expert: int, n_expert_used: int, n_ff_exp: int, n_ctx: int = 4096,
                    rope_base: float = 10000.0, ftype: str = "f32", seed: int = 0, vocab: Optional[Path] = None,
                    n_vocab: Optional[int] = None, eps: float = 1e-6, name: str = "synthetic-moe") -> dict:
    """Writes the model; returns its parameter counts (total, active per token)."""
    if arch not in ("qwen3moe", "llama"):
        raise ValueError("arch must be qwen3moe or llama")
    if not 0 < n_expert_used <= n_expert:
        raise ValueError("n_expert_used must be in 1..n_expert")
    hd = head_dim or n_embd // n_head
    qtype, file_type = FTYPES[ftype]
    dtype = np.float32 if ftype == "f32" else np.float16
    rng = np.random.default_rng(seed)

    w = gguf.GGUFWriter(str(out), arch)
    w.add_name(name)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff_exp)
    w.add_expert_feed_forward_length(n_ff_exp)
    w.add_expert_count(n_expert)
    w.add_expert_used_count(n_expert_used)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(rope_base)
    w.add_layer_norm_rms_eps(eps)
    w.add_file_type(file_type)
    nv = copy_vocab(w, vocab if vocab is not None else default_vocab(), n_vocab)
    w.add_vocab_size(nv)

    # The tensors are announced first and drawn one at a time while being written, so that the
    # script holds one tensor in memory, not the whole model (13 GB of F16 for olmoe).
    specs = []  # (name, shape (numpy order: out, in last), dtype, draw)

    def mat(name: str, *shape: int, scale: float = 1.0, dt=None) -> None:
        # numpy shape (..., rows=out, cols=in) is ggml ne [in, out, ...]
        specs.append((name, shape, dt or dtype,
                      lambda: rng.standard_normal(shape, dtype=np.float32) * (scale / np.sqrt(shape[-1]))))

    def norm(name: str, n: int) -> None:
        specs.append((name, (n,), np.float32, lambda: 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)))

    specs.append(("token_embd.weight", (nv, n_embd), dtype, lambda: rng.standard_normal((nv, n_embd), dtype=np.float32)))
    norm("output_norm.weight", n_embd)
    mat("output.weight", nv, n_embd)
    for il in range(n_layer):
        p = f"blk.{il}."
        norm(p + "attn_norm.weight", n_embd)
        mat(p + "attn_q.weight", hd * n_head, n_embd)
        mat(p + "attn_k.weight", hd * n_head_kv, n_embd)
        mat(p + "attn_v.weight", hd * n_head_kv, n_embd)
        mat(p + "attn_output.weight", n_embd, hd * n_head)
        if arch == "qwen3moe":
            norm(p + "attn_q_norm.weight", hd)
            norm(p + "attn_k_norm.weight", hd)
        norm(p + "ffn_norm.weight", n_embd)
        mat(p + "ffn_gate_inp.weight", n_expert, n_embd, scale=4.0, dt=np.float32)
        mat(p + "ffn_gate_exps.weight", n_expert, n_ff_exp, n_embd)
        mat(p + "ffn_up_exps.weight", n_expert, n_ff_exp, n_embd)
        mat(p + "ffn_down_exps.weight", n_expert, n_embd, n_ff_exp)
    for name, shape, dt, _ in specs:
        w.add_tensor_info(name, shape, np.dtype(dt), int(np.prod(shape)) * np.dtype(dt).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for _, _, dt, draw in specs:
        w.write_tensor_data(draw().astype(dt))
    w.close()
    attn = n_embd * hd * (2 * n_head + 2 * n_head_kv)
    expert = 3 * n_embd * n_ff_exp
    total = n_layer * (attn + n_expert * expert + n_expert * n_embd) + 2 * nv * n_embd
    active = n_layer * (attn + n_expert_used * expert + n_expert * n_embd) + nv * n_embd
    return {"params": total, "active": active}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    for k in ("n_layer", "n_embd", "n_head", "n_head_kv", "head_dim", "n_expert", "n_expert_used", "n_ff_exp", "n_ctx"):
        ap.add_argument("--" + k.replace("_", "-"), type=int)
    ap.add_argument("--arch", choices=("qwen3moe", "llama"))
    ap.add_argument("--type", default="f32", choices=sorted(FTYPES), help="weight type (default f32)")
    ap.add_argument("--quantize", metavar="TYPE", help="then quantize with llama_model_quantize: Q4_0, Q8_0, Q4_K_M, ...")
    ap.add_argument("--vocab", type=Path, help="vocab-only GGUF to copy (default llama-spm)")
    ap.add_argument("--n-vocab", type=int, help="keep only the first N tokens of the vocabulary")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    shape = dict(PRESETS[a.preset])
    for k in ("arch", "n_layer", "n_embd", "n_head", "n_head_kv", "head_dim", "n_expert", "n_expert_used", "n_ff_exp",
              "n_ctx"):
        if getattr(a, k) is not None:
            shape[k] = getattr(a, k)
    kw = dict(shape, seed=a.seed, vocab=a.vocab, n_vocab=a.n_vocab, name=f"{a.preset}-moe")
    if a.quantize:
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as td:
            tmp = Path(td) / "f16.gguf"
            n = write_moe_model(tmp, ftype="f16", **kw)
            quantize(tmp, a.out, a.quantize)
    else:
        n = write_moe_model(a.out, ftype=a.type, **kw)
    print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB): {n['params'] / 1e9:.2f}B parameters, "
          f"{n['active'] / 1e9:.2f}B active per token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
