#!/usr/bin/env python3
"""Writes a mixture-of-experts GGUF of a real shape with random weights, for benchmarks: olmoe
(OLMoE-1B-7B: llama attention with an RMS norm over the whole Q and K vectors, softmax routing,
the chosen weights not renormalised), qwen3moe (Qwen3 attention with QK-norm, the chosen weights
renormalised) or llama with experts (Mixtral's layout): the same file for this engine and llama.cpp.

    python scripts/make_moe_model.py olmoe-q4_k_m.gguf --preset olmoe --quantize Q4_K_M
    python scripts/make_moe_model.py q3moe-small-q8_0.gguf --preset qwen3moe-small --quantize Q8_0
    python scripts/make_moe_model.py tiny-moe.gguf --preset tiny --type f32

The vocabulary is copied from a vocab-only GGUF (the preset's, else llama-spm), as
make_synthetic_model.py does. Router weights are drawn larger than the others (scale
4 / sqrt(n_embd)) so that each token prefers a few experts, as trained routers do, and the tokens
spread over all experts.

--quantize writes the quantized file directly, in seconds per GB. Quantizing billions of random
floats is what made the former F16-then-quantize route take hours on a shared machine (NumPy
draws ~50M normals/s, our Q4_K quantizer ~12M values/s per core, plus a 2-byte-per-parameter F16
file written and read back). Now (1) each tensor's type is the one this project's quantizer picks
for the mix (it quantizes a skeleton of the model: every tensor with its real name, row length
and expert count but one row), and (2) each quantized tensor's rows are drawn at random, with
replacement, from a pool of up to 16384 distinct random rows quantized by ggml_quantize_chunk
for that (type, row length, scale). Norms and routers are drawn in full, in F32, as the
quantizer keeps them. The values are random either way; only their distribution matters for
speed. Generation reads only the chosen experts: the "active" figure printed is what tokens/s
follows.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np
import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic_model import FTYPES, ROOT, copy_vocab, default_vocab, quantize  # noqa: E402

PRESETS = {
    # OLMoE-1B-7B (allenai/OLMoE-1B-7B-0924): 16 layers, d 2048, 16 heads of 128, 64 experts of
    # 1024, top-8, GPT-NeoX vocabulary of 50304; 6.9B parameters, 1.3B active; 4.2 GB at Q4_K_M
    "olmoe": dict(arch="olmoe", n_layer=16, n_embd=2048, n_head=16, n_head_kv=16, head_dim=128, n_expert=64,
                  n_expert_used=8, n_ff_exp=1024, n_ctx=4096, rope_base=10000.0, eps=1e-5,
                  vocab_name="gpt-neox", n_vocab=50304),
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

ARCHS = ("olmoe", "qwen3moe", "llama")
POOL_ROWS = 16384  # distinct quantized rows per (type, row length, scale) for --quantize


def _specs(arch: str, n_layer: int, n_embd: int, n_head: int, n_head_kv: int, hd: int, n_expert: int,
           n_ff_exp: int, nv: int) -> list:
    """(name, numpy shape (rows = out, last = in), std of the values, "mat" | "norm" | "router")
    of every tensor, in file order."""
    specs = []

    def mat(name: str, *shape: int, scale: float = 1.0, kind: str = "mat") -> None:
        specs.append((name, shape, scale / np.sqrt(shape[-1]), kind))

    def norm(name: str, n: int) -> None:
        specs.append((name, (n,), 0.1, "norm"))

    specs.append(("token_embd.weight", (nv, n_embd), 1.0, "mat"))
    norm("output_norm.weight", n_embd)
    mat("output.weight", nv, n_embd)
    for il in range(n_layer):
        p = f"blk.{il}."
        norm(p + "attn_norm.weight", n_embd)
        mat(p + "attn_q.weight", hd * n_head, n_embd)
        mat(p + "attn_k.weight", hd * n_head_kv, n_embd)
        mat(p + "attn_v.weight", hd * n_head_kv, n_embd)
        mat(p + "attn_output.weight", n_embd, hd * n_head)
        if arch == "qwen3moe":  # per head
            norm(p + "attn_q_norm.weight", hd)
            norm(p + "attn_k_norm.weight", hd)
        elif arch == "olmoe":   # over the whole Q and K vectors
            norm(p + "attn_q_norm.weight", hd * n_head)
            norm(p + "attn_k_norm.weight", hd * n_head_kv)
        norm(p + "ffn_norm.weight", n_embd)
        mat(p + "ffn_gate_inp.weight", n_expert, n_embd, scale=4.0, kind="router")
        mat(p + "ffn_gate_exps.weight", n_expert, n_ff_exp, n_embd)
        mat(p + "ffn_up_exps.weight", n_expert, n_ff_exp, n_embd)
        mat(p + "ffn_down_exps.weight", n_expert, n_embd, n_ff_exp)
    return specs


def _draw(rng: np.random.Generator, shape, std: float, kind: str) -> np.ndarray:
    x = rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
    return x + np.float32(1.0) if kind == "norm" else x


def _mix_types(write_meta, specs, qtype: str) -> Tuple[Dict[str, int], int]:
    """The type this project's quantizer gives each tensor for the mix qtype, and the file type:
    a skeleton (every tensor with its name, row length and expert count, one row each) is written
    and quantized; the choice depends on nothing else."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as td:
        src, dst = Path(td) / "skel-f16.gguf", Path(td) / "skel-q.gguf"
        w = gguf.GGUFWriter(str(src), write_meta.arch)
        write_meta(w, FTYPES["f16"][1])
        arrays = []
        for name, shape, _, kind in specs:
            sk = shape if len(shape) == 1 else shape[:-2] + (1, shape[-1])
            dt = np.float16 if kind == "mat" else np.float32
            arrays.append((name, np.zeros(sk, dtype=dt)))
        for name, a in arrays:
            w.add_tensor(name, a)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        quantize(src, dst, qtype)
        r = gguf.GGUFReader(str(dst))
        types = {t.name: int(t.tensor_type) for t in r.tensors}
        file_type = int(r.fields["general.file_type"].contents())
    return types, file_type


def _quantized_pool(qt: int, ne0: int, std: float, rows: int, rng: np.random.Generator) -> np.ndarray:
    """rows random normal rows of ne0 values (times std) quantized to qt: [rows, row bytes]."""
    from llama_py import ggml  # needs the built library, as --quantize always did
    row_bytes = ggml.ggml_row_size(qt, ne0)
    src = rng.standard_normal((rows, ne0), dtype=np.float32) * np.float32(std)
    dst = np.empty((rows, row_bytes), dtype=np.uint8)
    nth = max(1, min(os.cpu_count() or 1, 8))
    per = (rows + nth - 1) // nth

    def part(i: int) -> int:  # ctypes drops the GIL: the parts run in parallel
        r0, r1 = i * per, min(rows, (i + 1) * per)
        if r0 >= r1:
            return 0
        return ggml.ggml_quantize_chunk(qt, src.ctypes.data, dst.ctypes.data, r0 * ne0, r1 - r0, ne0, None)

    with ThreadPoolExecutor(nth) as ex:
        done = sum(ex.map(part, range(nth)))
    if done != rows * row_bytes:
        raise RuntimeError(f"ggml_quantize_chunk wrote {done} bytes for type {qt}, expected {rows * row_bytes}")
    return dst


def write_moe_model(out: Path, *, arch: str, n_layer: int, n_embd: int, n_head: int, n_head_kv: int,
                    head_dim: Optional[int], n_expert: int, n_expert_used: int, n_ff_exp: int, n_ctx: int = 4096,
                    rope_base: float = 10000.0, ftype: str = "f32", seed: int = 0, vocab: Optional[Path] = None,
                    n_vocab: Optional[int] = None, eps: float = 1e-6, name: str = "synthetic-moe",
                    vocab_name: Optional[str] = None, quantize_mix: Optional[str] = None) -> dict:
    """Writes the model (quantize_mix: a mix such as Q4_K_M, written directly as described at the
    top; else every matrix in ftype); returns its parameter counts (total, active per token)."""
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}")
    if not 0 < n_expert_used <= n_expert:
        raise ValueError("n_expert_used must be in 1..n_expert")
    hd = head_dim or n_embd // n_head
    if vocab is None:
        if vocab_name:
            sys.path.insert(0, str(ROOT))
            from llama_py.pull_vocab import vocab_path  # noqa: E402  (pure Python)
            vocab = vocab_path(vocab_name, quiet=False)
        else:
            vocab = default_vocab()
    rng = np.random.default_rng(seed)

    def write_meta(w: gguf.GGUFWriter, file_type: int) -> int:
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
        nv = copy_vocab(w, vocab, n_vocab)
        w.add_vocab_size(nv)
        return nv

    write_meta.arch = arch
    w = gguf.GGUFWriter(str(out), arch)
    if quantize_mix:
        # the vocabulary size is needed for the skeleton's shapes: count it with a throwaway writer
        nv = write_meta(gguf.GGUFWriter(None, arch), 0)
        specs = _specs(arch, n_layer, n_embd, n_head, n_head_kv, hd, n_expert, n_ff_exp, nv)
        types, file_type = _mix_types(write_meta, specs, quantize_mix)
    else:
        qtype, file_type = FTYPES[ftype]
        nv = None
    nv = write_meta(w, file_type)
    specs = _specs(arch, n_layer, n_embd, n_head, n_head_kv, hd, n_expert, n_ff_exp, nv)
    if not quantize_mix:
        types = {s[0]: int(qtype) if s[3] == "mat" else int(gguf.GGMLQuantizationType.F32) for s in specs}

    # Tensors are announced first, then made and written one at a time: the script holds one
    # tensor (and the pools) in memory, never the model.
    float_np = {int(gguf.GGMLQuantizationType.F32): np.float32, int(gguf.GGMLQuantizationType.F16): np.float16}
    pool_rows: Dict[tuple, int] = {}
    for tname, shape, std, _ in specs:
        t = types[tname]
        if t in float_np:
            w.add_tensor_info(tname, shape, np.dtype(float_np[t]), int(np.prod(shape)) * np.dtype(float_np[t]).itemsize)
        else:
            bs, ts = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(t)]
            byte_shape = shape[:-1] + (shape[-1] // bs * ts,)
            w.add_tensor_info(tname, byte_shape, np.dtype(np.uint8), int(np.prod(byte_shape)),
                              raw_dtype=gguf.GGMLQuantizationType(t))
            key = (t, shape[-1], std)
            pool_rows[key] = min(POOL_ROWS, max(pool_rows.get(key, 0), int(np.prod(shape[:-1]))))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    pools: Dict[tuple, np.ndarray] = {}
    for tname, shape, std, kind in specs:
        t = types[tname]
        if t in float_np:
            w.write_tensor_data(_draw(rng, shape, std, kind).astype(float_np[t]))
            continue
        key = (t, shape[-1], std)
        if key not in pools:
            pools[key] = _quantized_pool(t, shape[-1], std, pool_rows[key], rng)
        pool = pools[key]
        w.write_tensor_data(pool[rng.integers(0, len(pool), size=int(np.prod(shape[:-1])))])
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
    ap.add_argument("--arch", choices=ARCHS)
    ap.add_argument("--type", default="f32", choices=sorted(FTYPES), help="weight type (default f32)")
    ap.add_argument("--quantize", metavar="MIX", help="write this quantization mix directly: Q4_0, Q8_0, Q4_K_M, ...")
    ap.add_argument("--vocab", type=Path, help="vocab-only GGUF to copy (default: the preset's, else llama-spm)")
    ap.add_argument("--n-vocab", type=int, help="keep only the first N tokens of the vocabulary")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    shape = dict(PRESETS[a.preset])
    for k in ("arch", "n_layer", "n_embd", "n_head", "n_head_kv", "head_dim", "n_expert", "n_expert_used", "n_ff_exp",
              "n_ctx", "n_vocab", "vocab"):
        if getattr(a, k) is not None:
            shape[k] = getattr(a, k)
    n = write_moe_model(a.out, ftype=a.type, quantize_mix=a.quantize, seed=a.seed, name=f"{a.preset}-moe", **shape)
    print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB): {n['params'] / 1e9:.2f}B parameters, "
          f"{n['active'] / 1e9:.2f}B active per token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
