#!/usr/bin/env python3
"""Writes a Llama-architecture GGUF of any shape with random weights.

The vocabulary (every tokenizer.* key) is copied from a vocab-only GGUF, by default the
Llama-2 SentencePiece vocab llama-spm.gguf (found or fetched once by llama_py.pull_vocab:
$LLAMA_PY_VOCAB_DIR, ../shared/vocab, the user cache, or llama-cpp-python's sdist on PyPI),
so the model tokenizes real text.
Weights are drawn from a seeded normal distribution scaled by 1/sqrt(fan_in), which keeps
activations near unit size through any number of layers; they carry no knowledge.

    python scripts/make_synthetic_model.py out.gguf --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128
    python scripts/make_synthetic_model.py tinyllama-f16.gguf --preset tinyllama --type f16
    python scripts/make_synthetic_model.py tinyllama-q4_0.gguf --preset tinyllama --quantize Q4_0

--quantize writes an F16 model first and converts it with this project's quantizer
(llama_model_quantize through llama_py), so the library must be built for that option.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
import gguf

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VOCAB_NAME = "llama-spm"

PRESETS = {
    # TinyLlama-1.1B: 22 layers, d 2048, 32 heads, 4 KV heads, FFN 5632, context 2048
    "tinyllama": dict(n_layer=22, n_embd=2048, n_head=32, n_head_kv=4, n_ff=5632, n_ctx=2048, rope_base=10000.0),
    # SmolLM2-135M shape (GQA 9/3, tied embeddings)
    "smollm2": dict(n_layer=30, n_embd=576, n_head=9, n_head_kv=3, n_ff=1536, n_ctx=8192, rope_base=100000.0),
    # small shapes for tests
    "tiny": dict(n_layer=2, n_embd=64, n_head=4, n_head_kv=2, n_ff=128, n_ctx=256, rope_base=10000.0),
}

FTYPES = {"f32": (gguf.GGMLQuantizationType.F32, 0), "f16": (gguf.GGMLQuantizationType.F16, 1)}


def default_vocab() -> Path:
    """llama-spm.gguf from llama_py.pull_vocab (downloaded into the user cache the first time)."""
    sys.path.insert(0, str(ROOT))
    from llama_py.pull_vocab import vocab_path  # noqa: E402  (pure Python, no library needed)
    return vocab_path(DEFAULT_VOCAB_NAME, quiet=False)


@functools.lru_cache(maxsize=8)
def _read_vocab(vocab_path: str):
    """(key, types, value) of every tokenizer.* field; parsing a GGUF takes seconds, so cached."""
    reader = gguf.GGUFReader(vocab_path)
    return [(k, list(f.types), f.contents()) for k, f in reader.fields.items() if k.startswith("tokenizer.")]


def copy_vocab(writer: gguf.GGUFWriter, vocab_path: Path, n_vocab: Optional[int]) -> int:
    """Copies every tokenizer.* key of vocab_path into writer; returns the token count.

    With n_vocab set, the token-indexed arrays are cut to their first n_vocab entries (merges
    that use a dropped token stay; they can simply never apply)."""
    fields = _read_vocab(str(vocab_path))
    tokens = next(v for k, _, v in fields if k == "tokenizer.ggml.tokens")
    total = len(tokens)
    keep = total if n_vocab is None else min(n_vocab, total)
    per_token = {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}
    for key, types, value in fields:
        if types[0] == gguf.GGUFValueType.ARRAY:
            if key in per_token:
                value = value[:keep]
            writer.add_key_value(key, value, gguf.GGUFValueType.ARRAY, sub_type=types[1])
        else:
            if key.endswith("_token_id") and isinstance(value, int) and value >= keep:
                continue  # special token cut away with the vocabulary
            writer.add_key_value(key, value, types[0])
    return keep


def write_model(out: Path, *, n_layer: int, n_embd: int, n_head: int, n_head_kv: int, n_ff: int,
                n_ctx: int = 2048, rope_base: float = 10000.0, ftype: str = "f32", seed: int = 0,
                vocab: Optional[Path] = None, n_vocab: Optional[int] = None, tied: bool = False,
                eps: float = 1e-5, head_dim: Optional[int] = None, n_rot: Optional[int] = None,
                name: str = "synthetic") -> Path:
    """Writes the model to out and returns out; vocab None means default_vocab()."""
    if ftype not in FTYPES:
        raise ValueError(f"ftype must be one of {sorted(FTYPES)}")
    if n_head % n_head_kv != 0:
        raise ValueError("n_head must be a multiple of n_head_kv")
    hd = head_dim if head_dim is not None else n_embd // n_head
    rot = n_rot if n_rot is not None else hd
    qtype, file_type = FTYPES[ftype]
    dtype = np.float32 if ftype == "f32" else np.float16
    rng = np.random.default_rng(seed)

    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name(name)
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_rope_dimension_count(rot)
    writer.add_rope_freq_base(rope_base)
    writer.add_layer_norm_rms_eps(eps)
    writer.add_file_type(file_type)
    if head_dim is not None:
        writer.add_key_length(hd)
        writer.add_value_length(hd)
    nv = copy_vocab(writer, vocab if vocab is not None else default_vocab(), n_vocab)
    writer.add_vocab_size(nv)

    def mat(rows: int, cols: int) -> np.ndarray:
        # numpy shape (rows=out, cols=in) is ggml ne [in, out]
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(dtype)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    writer.add_tensor("token_embd.weight", rng.standard_normal((nv, n_embd), dtype=np.float32).astype(dtype))
    writer.add_tensor("output_norm.weight", norm(n_embd))
    if not tied:
        writer.add_tensor("output.weight", mat(nv, n_embd))
    for il in range(n_layer):
        p = f"blk.{il}."
        writer.add_tensor(p + "attn_norm.weight", norm(n_embd))
        writer.add_tensor(p + "attn_q.weight", mat(hd * n_head, n_embd))
        writer.add_tensor(p + "attn_k.weight", mat(hd * n_head_kv, n_embd))
        writer.add_tensor(p + "attn_v.weight", mat(hd * n_head_kv, n_embd))
        writer.add_tensor(p + "attn_output.weight", mat(n_embd, hd * n_head))
        writer.add_tensor(p + "ffn_norm.weight", norm(n_embd))
        writer.add_tensor(p + "ffn_gate.weight", mat(n_ff, n_embd))
        writer.add_tensor(p + "ffn_up.weight", mat(n_ff, n_embd))
        writer.add_tensor(p + "ffn_down.weight", mat(n_embd, n_ff))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def quantize(src: Path, dst: Path, qtype: str, pure: bool = False) -> None:
    """Converts src to dst with this project's quantizer (pure: every weight to the type's base)."""
    sys.path.insert(0, str(ROOT))
    from llama_py import llama_cpp as L  # noqa: E402  (needs the built library)
    ftype = getattr(L, f"LLAMA_FTYPE_MOSTLY_{qtype.upper()}")
    params = L.llama_model_quantize_default_params()
    params.ftype = ftype
    params.pure = pure
    rc = L.llama_model_quantize(str(src).encode(), str(dst).encode(), params)
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize failed with {rc}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--n-layer", type=int)
    ap.add_argument("--n-embd", type=int)
    ap.add_argument("--n-head", type=int)
    ap.add_argument("--n-head-kv", type=int)
    ap.add_argument("--n-ff", type=int)
    ap.add_argument("--n-ctx", type=int)
    ap.add_argument("--head-dim", type=int, help="per-head width when not n_embd / n_head")
    ap.add_argument("--n-rot", type=int, help="rotated dims per head (default: all)")
    ap.add_argument("--rope-base", type=float)
    ap.add_argument("--type", default="f32", choices=sorted(FTYPES), help="weight type (default f32)")
    ap.add_argument("--quantize", metavar="TYPE", help="then quantize with llama_model_quantize: Q4_0, Q8_0, Q4_K_M, ...")
    ap.add_argument("--vocab", type=Path, help="vocab-only GGUF to copy (default llama-spm, see default_vocab)")
    ap.add_argument("--n-vocab", type=int, help="keep only the first N tokens of the vocabulary")
    ap.add_argument("--tied", action="store_true", help="no output.weight: the head reuses token_embd")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)

    shape = dict(PRESETS.get(a.preset, PRESETS["tiny"]))
    for k in ("n_layer", "n_embd", "n_head", "n_head_kv", "n_ff", "n_ctx", "rope_base"):
        v = getattr(a, k)
        if v is not None:
            shape[k] = v
    kw = dict(shape, seed=a.seed, vocab=a.vocab, n_vocab=a.n_vocab, tied=a.tied,
              head_dim=a.head_dim, n_rot=a.n_rot, name=a.preset or "synthetic")
    if a.quantize:
        with tempfile.TemporaryDirectory() as td:
            tmp = Path(td) / "f16.gguf"
            write_model(tmp, ftype="f16", **kw)
            quantize(tmp, a.out, a.quantize)
    else:
        write_model(a.out, ftype=a.type, **kw)
    print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
