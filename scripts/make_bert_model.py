#!/usr/bin/env python3
"""Writes a BERT-architecture embedding GGUF (bge-small / all-MiniLM shapes) with random weights.

The vocabulary is llama.cpp's bert-bge.gguf (30,522 WordPiece tokens; found or fetched once by
llama_py.pull_vocab, as make_synthetic_model.py finds its vocabularies), so the model tokenizes
real text; the tensors and keys are the ones llama.cpp's converter writes for a BertModel, so
llama.cpp loads the file too. Weights are seeded normals scaled by 1/sqrt(fan_in), LayerNorms
1 and 0, mean pooling; they carry no knowledge (benchmarks only).

    python scripts/make_bert_model.py bge-small-f16.gguf --preset bge-small
    python scripts/make_bert_model.py minilm-f16.gguf --preset all-minilm --type f32
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import gguf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_synthetic_model import copy_vocab  # noqa: E402

PRESETS = {
    # BAAI/bge-small-en-v1.5: 12 layers, d 384, 12 heads, FFN 1536, 512 positions
    "bge-small": dict(n_layer=12, n_embd=384, n_head=12, n_ff=1536, n_ctx=512),
    # sentence-transformers/all-MiniLM-L6-v2: 6 layers of the same width
    "all-minilm": dict(n_layer=6, n_embd=384, n_head=12, n_ff=1536, n_ctx=512),
    # BAAI/bge-base-en-v1.5
    "bge-base": dict(n_layer=12, n_embd=768, n_head=12, n_ff=3072, n_ctx=512),
}


def write_model(out: Path, vocab: Path, *, n_layer: int, n_embd: int, n_head: int, n_ff: int, n_ctx: int,
                wtype: str = "f16", seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    wdt = np.float16 if wtype == "f16" else np.float32
    w = gguf.GGUFWriter(str(out), "bert")
    w.add_name("synthetic-bert")
    w.add_block_count(n_layer)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_layer_norm_eps(1e-12)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if wtype == "f16" else gguf.LlamaFileType.ALL_F32)
    n_vocab = copy_vocab(w, vocab, None)

    def mat(rows: int, cols: int) -> np.ndarray:  # [rows, cols] numpy = GGUF [cols, rows]
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(wdt)

    def f32(n: int, v: float) -> np.ndarray:
        return np.full(n, v, dtype=np.float32)

    w.add_tensor("token_embd.weight", mat(n_vocab, n_embd))
    w.add_tensor("token_types.weight", (rng.standard_normal((2, n_embd), dtype=np.float32) * 0.02))
    w.add_tensor("position_embd.weight", (rng.standard_normal((n_ctx, n_embd), dtype=np.float32) * 0.02))
    w.add_tensor("token_embd_norm.weight", f32(n_embd, 1.0))
    w.add_tensor("token_embd_norm.bias", f32(n_embd, 0.0))
    for i in range(n_layer):
        for name, rows, cols in (("attn_q", n_embd, n_embd), ("attn_k", n_embd, n_embd), ("attn_v", n_embd, n_embd),
                                 ("attn_output", n_embd, n_embd), ("ffn_up", n_ff, n_embd), ("ffn_down", n_embd, n_ff)):
            w.add_tensor(f"blk.{i}.{name}.weight", mat(rows, cols))
            w.add_tensor(f"blk.{i}.{name}.bias", (rng.standard_normal(rows, dtype=np.float32) * 0.02))
        for name in ("attn_output_norm", "layer_output_norm"):
            w.add_tensor(f"blk.{i}.{name}.weight", f32(n_embd, 1.0))
            w.add_tensor(f"blk.{i}.{name}.bias", f32(n_embd, 0.0))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="bge-small")
    ap.add_argument("--type", choices=["f16", "f32"], default="f16", help="matrix weights' type")
    ap.add_argument("--vocab", type=Path, help="vocab-only GGUF (default: bert-bge.gguf via llama_py.pull_vocab)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    vocab = a.vocab
    if vocab is None:
        from llama_py.pull_vocab import vocab_path
        vocab = vocab_path("bert-bge", quiet=False)
    write_model(a.out, vocab, **PRESETS[a.preset], wtype=a.type, seed=a.seed)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
