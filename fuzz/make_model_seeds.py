#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_model: tiny Llama GGUFs (a few KB) that load and decode.

    python fuzz/make_model_seeds.py fuzz/corpus/model

Variants: SPM and GPT-2 BPE vocabularies, F32 and F16 weights, tied and separate output,
GQA, a chat template, RoPE scaling keys. Their bytes are what the fuzzer mutates.
"""
import sys
from pathlib import Path

import numpy as np
import gguf


def write(path: Path, *, vocab: str, ftype: str, tied: bool, n_embd=8, n_head=2, n_head_kv=1, n_ff=8,
          n_layer=2, extra=None) -> None:
    rng = np.random.default_rng(len(path.name))
    dt = np.float32 if ftype == "f32" else np.float16
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(32)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0 if ftype == "f32" else 1)
    if vocab == "spm":
        toks = ["<unk>", "<s>", "</s>", "\u2581", "\u2581a", "a", "b", "<0x0A>"]
        w.add_tokenizer_model("llama")
        w.add_token_list(toks)
        w.add_token_scores([0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -4.0, 0.0])
        w.add_token_types([2, 3, 3, 1, 1, 1, 1, 6])
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
    else:
        toks = ["<|endoftext|>", "H", "e", "l", "o", "\u0120", "He", "ll"]
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("gpt-2")
        w.add_token_list(toks)
        w.add_token_types([3, 1, 1, 1, 1, 1, 1, 1])
        w.add_token_merges(["H e", "l l"])
        w.add_bos_token_id(0)
        w.add_eos_token_id(0)
    for k, v in (extra or {}).items():
        if isinstance(v, str):
            w.add_string(k, v)
        elif isinstance(v, float):
            w.add_float32(k, v)
        else:
            w.add_uint32(k, v)
    nv, hd = len(toks), n_embd // n_head

    def mat(o, i):
        return (rng.standard_normal((o, i)) / np.sqrt(i)).astype(dt)

    w.add_tensor("token_embd.weight", mat(nv, n_embd))
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    if not tied:
        w.add_tensor("output.weight", mat(nv, n_embd))
    for il in range(n_layer):
        p = f"blk.{il}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "attn_q.weight", mat(hd * n_head, n_embd))
        w.add_tensor(p + "attn_k.weight", mat(hd * n_head_kv, n_embd))
        w.add_tensor(p + "attn_v.weight", mat(hd * n_head_kv, n_embd))
        w.add_tensor(p + "attn_output.weight", mat(n_embd, hd * n_head))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "ffn_gate.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", mat(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write(out / "seed-spm-f32", vocab="spm", ftype="f32", tied=False)
    write(out / "seed-spm-f16-tied", vocab="spm", ftype="f16", tied=True)
    write(out / "seed-bpe-f32-mha", vocab="bpe", ftype="f32", tied=False, n_head_kv=2)
    write(out / "seed-bpe-f16-3layers", vocab="bpe", ftype="f16", tied=True, n_layer=3)
    write(out / "seed-spm-template-rope", vocab="spm", ftype="f32", tied=True, extra={
        "tokenizer.chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
        "llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 2.0, "llama.rope.dimension_count": 2})


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus/model"))
