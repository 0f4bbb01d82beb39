#!/usr/bin/env python3
"""Writes a qwen35 (Qwen3.5 / 3.6 dense) GGUF of any shape with random weights, for benchmarks.

Three of every four layers are Gated DeltaNet (fused q/k/v in-projection, z gate, beta / alpha
projections, depthwise convolution taps, decay parameters, gated output norm), every fourth one
gated attention (Q rows doubled for the output gate, QK-norm, partial rope); SwiGLU FFNs. Keys
and tensor names are those llama.cpp's converter writes. The vocabulary is copied from a
vocab-only GGUF as scripts/make_synthetic_model.py does (llama-spm by default: 32000 tokens, so
the embedding and the head are smaller than Qwen3.5's 248k-token ones).

    python scripts/make_synthetic_qwen35.py q35-2b.gguf --preset 2b --quantize Q4_K_M
    python scripts/make_synthetic_qwen35.py q35-tiny.gguf --preset tiny

Weights are seeded normals scaled by 1/sqrt(fan_in); decays in exp(-[0.01, 16] * softplus(.))
as the model's initialisation draws them; they carry no knowledge.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic_model import copy_vocab, default_vocab, quantize  # noqa: E402

PRESETS = {
    # Qwen3.5-2B-like: 24 layers, d 2048, FFN 6144, 8 query / 2 KV heads of 256 (64 rotated),
    # DeltaNet 16 key and 16 value heads of 128, 4 taps
    "2b": dict(n_layer=24, n_embd=2048, n_ff=6144, n_head=8, n_head_kv=2, head_dim=256, n_rot=64,
               n_k_heads=16, n_v_heads=16, d_state=128, d_conv=4),
    # Qwen3.5-0.8B-like: d 1024, FFN 3584
    "0.8b": dict(n_layer=24, n_embd=1024, n_ff=3584, n_head=8, n_head_kv=2, head_dim=256, n_rot=64,
                 n_k_heads=16, n_v_heads=16, d_state=128, d_conv=4),
    "tiny": dict(n_layer=4, n_embd=64, n_ff=128, n_head=4, n_head_kv=2, head_dim=32, n_rot=8,
                 n_k_heads=2, n_v_heads=4, d_state=16, d_conv=4),
}


def write_model(out: Path, *, n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot, n_k_heads, n_v_heads,
                d_state, d_conv, n_ctx=32768, ftype="f16", seed=0, vocab=None, n_vocab=None, interval=4) -> Path:
    rng = np.random.default_rng(seed)
    dtype = np.float16 if ftype == "f16" else np.float32
    a = "qwen35"
    w = gguf.GGUFWriter(str(out), a)
    w.add_name("synthetic-qwen35")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(n_rot)
    # mRoPE sections over the n_rot / 2 rotated pairs (Qwen3.5: [11, 11, 10, 0] of 32), which
    # llama.cpp requires; for text all sections see the same position
    third, rem = divmod(n_rot // 2, 3)
    w.add_rope_dimension_sections([third + (rem > 0), third + (rem > 1), third, 0])
    w.add_rope_freq_base(10000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(1 if ftype == "f16" else 0)
    w.add_uint32(f"{a}.ssm.conv_kernel", d_conv)
    w.add_uint32(f"{a}.ssm.state_size", d_state)
    w.add_uint32(f"{a}.ssm.group_count", n_k_heads)
    w.add_uint32(f"{a}.ssm.time_step_rank", n_v_heads)
    w.add_uint32(f"{a}.ssm.inner_size", d_state * n_v_heads)
    w.add_uint32(f"{a}.full_attention_interval", interval)
    nv = copy_vocab(w, vocab if vocab is not None else default_vocab(), n_vocab)
    w.add_vocab_size(nv)

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(dtype)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    key_dim, value_dim = d_state * n_k_heads, d_state * n_v_heads
    conv_ch = 2 * key_dim + value_dim
    w.add_tensor("token_embd.weight", rng.standard_normal((nv, n_embd), dtype=np.float32).astype(dtype))
    w.add_tensor("output_norm.weight", norm(n_embd))
    w.add_tensor("output.weight", mat(nv, n_embd))
    for il in range(n_layer):
        p = f"blk.{il}."
        w.add_tensor(p + "attn_norm.weight", norm(n_embd))
        w.add_tensor(p + "post_attention_norm.weight", norm(n_embd))
        if (il + 1) % interval == 0:
            w.add_tensor(p + "attn_q.weight", mat(2 * head_dim * n_head, n_embd))
            w.add_tensor(p + "attn_k.weight", mat(head_dim * n_head_kv, n_embd))
            w.add_tensor(p + "attn_v.weight", mat(head_dim * n_head_kv, n_embd))
            w.add_tensor(p + "attn_output.weight", mat(n_embd, head_dim * n_head))
            w.add_tensor(p + "attn_q_norm.weight", norm(head_dim))
            w.add_tensor(p + "attn_k_norm.weight", norm(head_dim))
        else:
            w.add_tensor(p + "attn_qkv.weight", mat(conv_ch, n_embd))
            w.add_tensor(p + "attn_gate.weight", mat(value_dim, n_embd))
            w.add_tensor(p + "ssm_beta.weight", mat(n_v_heads, n_embd))
            w.add_tensor(p + "ssm_alpha.weight", mat(n_v_heads, n_embd))
            w.add_tensor(p + "ssm_conv1d.weight", (rng.standard_normal((conv_ch, d_conv), dtype=np.float32) / 2))
            w.add_tensor(p + "ssm_dt.bias", rng.standard_normal(n_v_heads, dtype=np.float32))
            w.add_tensor(p + "ssm_a", -rng.uniform(0.01, 16, n_v_heads).astype(np.float32))
            w.add_tensor(p + "ssm_norm.weight", norm(d_state))
            w.add_tensor(p + "ssm_out.weight", mat(n_embd, value_dim))
        w.add_tensor(p + "ffn_gate.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", mat(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--n-layer", type=int, help="override the preset's layer count")
    ap.add_argument("--type", default="f16", choices=("f16", "f32"))
    ap.add_argument("--quantize", metavar="TYPE", help="then quantize with llama_model_quantize: Q4_K_M, Q8_0, ...")
    ap.add_argument("--vocab", type=Path, help="vocab-only GGUF to copy (default llama-spm)")
    ap.add_argument("--n-vocab", type=int)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    shape = dict(PRESETS[a.preset])
    if a.n_layer:
        shape["n_layer"] = a.n_layer
    kw = dict(shape, seed=a.seed, vocab=a.vocab, n_vocab=a.n_vocab)
    if a.quantize:
        with tempfile.TemporaryDirectory(dir=a.out.parent) as td:
            tmp = Path(td) / "f16.gguf"
            write_model(tmp, ftype="f16", **kw)
            quantize(tmp, a.out, a.quantize)
    else:
        write_model(a.out, ftype=a.type, **kw)
    print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
