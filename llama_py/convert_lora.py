"""PEFT LoRA adapter -> llama.cpp's LoRA GGUF format.

    python -m llama_py convert --lora PEFT_DIR --base HF_DIR --outfile adapter.gguf [--outtype f32|f16|bf16|q8_0]

PEFT_DIR holds adapter_config.json and adapter_model.safetensors (what `save_pretrained` of a
PEFT model writes); HF_DIR the base model's config.json (its weights are not read). For each
adapted matrix W (torch shape [n_out, n_in]) PEFT stores lora_A [r, n_in] and lora_B [n_out, r];
the GGUF holds them as "<W's GGUF name>.lora_a" / ".lora_b" with the same row order transforms
the base conversion applies to W (the per-head Q/K permutation acts on B's rows, the outputs).
Metadata: general.type "adapter", adapter.type "lora", adapter.lora.alpha, the base's
general.architecture, and for an activated LoRA (aLoRA: PEFT's alora_invocation_tokens)
adapter.alora.invocation_tokens. rsLoRA (scale alpha/sqrt(r)) is written as the alpha that gives the same
scale under the engine's alpha/r.
"""
from __future__ import annotations

import ctypes
import math
import re
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from .convert import (GGML_F32, OUTTYPES, ConvertError, SafetensorsFile, _as_f32, _Encoder, _read_json,
                      qk_row_permutation, read_hparams)

# "base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight" -> ("model.layers.3.self_attn.q_proj", "A")
_PEFT_NAME = re.compile(r"^(?:base_model\.model\.)?(.+)\.lora_([AB])(?:\.default)?\.weight$")


def _gguf_names(hp) -> Dict[str, Tuple[str, int]]:
    """Checkpoint matrix name (without ".weight") -> (GGUF name, heads of its row permutation)."""
    from . import convert_arch
    spec = convert_arch.ARCHS[hp.model_type]
    perm_of = {"q": hp.n_head, "k": hp.n_head_kv, "": 0}
    out: Dict[str, Tuple[str, int]] = {}
    for il in range(hp.n_layer):
        for hf, lt in spec.layer.items():
            if hf.endswith(".weight") and len(lt.shape) == 2:
                for prefix in ("model.", ""):
                    out[f"{prefix}layers.{il}.{hf[:-7]}"] = (f"blk.{il}.{lt.gguf}", perm_of[lt.perm])
    if not hp.tied:
        out["lm_head"] = ("output.weight", 0)
    return out


def _pairs(peft_dir: Path, names: Dict[str, Tuple[str, int]]) -> List[Tuple[str, int, np.ndarray, np.ndarray]]:
    path = peft_dir / "adapter_model.safetensors"
    if not path.exists():
        raise ConvertError(f"{peft_dir}: no adapter_model.safetensors (save the PEFT model with safetensors)")
    st = SafetensorsFile(path)
    try:
        parts: Dict[str, Dict[str, np.ndarray]] = {}
        for t in st.tensors:
            if t.endswith(".base_layer.weight"):
                # PEFT saves the frozen base matrix of an adapted lm_head / embedding by default
                # (save_embedding_layers); the base GGUF has it already
                print(f"note: {t} (a copy of a base weight) is not written", file=sys.stderr)
                continue
            m = _PEFT_NAME.match(t)
            if m is None:
                raise ConvertError(f"{path.name}: tensor '{t}' is not a LoRA A/B matrix "
                                   "(trained embeddings or other modules are not supported)")
            info = st.tensors[t]
            parts.setdefault(m.group(1), {})[m.group(2)] = _as_f32(st.array(t), info.dtype).copy()
    finally:
        st.close()
    out = []
    for module, ab in sorted(parts.items()):
        if set(ab) != {"A", "B"}:
            raise ConvertError(f"{path.name}: '{module}' has lora_{'A' if 'B' in ab else 'B'} missing")
        if module not in names:
            raise ConvertError(f"{path.name}: '{module}' adapts no matrix the GGUF of this model holds")
        name, heads = names[module]
        a, b = ab["A"], ab["B"]
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
            raise ConvertError(f"{path.name}: '{module}' has lora_A {list(a.shape)} and lora_B {list(b.shape)}")
        if heads:
            b = b[qk_row_permutation(b.shape[0], heads)]
        out.append((name, heads, a, b))
    return out


def convert_lora(peft_dir, base_dir, outfile, outtype: str = "f32") -> Dict[str, object]:
    """Writes the PEFT adapter in peft_dir (for the Hugging Face model in base_dir) as a LoRA GGUF;
    returns a summary. Raises ConvertError for anything it cannot convert."""
    from . import ggml as G
    peft_dir, base_dir = Path(peft_dir), Path(base_dir)
    acfg = _read_json(peft_dir / "adapter_config.json")
    if acfg is None:
        raise ConvertError(f"{peft_dir}: no adapter_config.json")
    if str(acfg.get("peft_type", "LORA")).upper() != "LORA":
        raise ConvertError(f"adapter_config.json: peft_type {acfg.get('peft_type')!r} is not LORA")
    if (base_dir / "config.json").exists() is False:
        raise ConvertError(f"--base {base_dir}: no config.json (give the base model's Hugging Face folder)")
    for key in ("use_dora", "layer_replication"):
        if acfg.get(key):
            raise ConvertError(f"adapter_config.json: {key} is not supported by llama.cpp's LoRA format")
    if acfg.get("alpha_pattern") or acfg.get("rank_pattern"):
        raise ConvertError("adapter_config.json: per-module alpha_pattern / rank_pattern cannot be written "
                           "(the format has one alpha)")
    alora = acfg.get("alora_invocation_tokens") or []
    if not isinstance(alora, list) or not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**31
                                              for t in alora):
        raise ConvertError("adapter_config.json: alora_invocation_tokens must be a list of token ids")
    if outtype not in OUTTYPES:
        raise ConvertError(f"--outtype {outtype!r} is not one of {', '.join(OUTTYPES)}")
    hp = read_hparams(_read_json(base_dir / "config.json"), base_dir)
    pairs = _pairs(peft_dir, _gguf_names(hp))
    r = int(acfg.get("r", pairs[0][2].shape[0] if pairs else 0))
    alpha = float(acfg.get("lora_alpha", r))
    if acfg.get("use_rslora"):
        alpha *= math.sqrt(r)   # scale alpha/sqrt(r) written as alpha'/r
    ftype = OUTTYPES[outtype][0]
    enc = _Encoder()
    g = G.gguf_init_empty()
    mctx = G.ggml_init(G.ggml_init_params(mem_size=(2 * len(pairs) + 1) * G.ggml_tensor_overhead(),
                                          mem_buffer=None, no_alloc=True))
    keep = []
    try:
        G.gguf_set_val_str(g, b"general.architecture", hp.arch.encode())
        G.gguf_set_val_str(g, b"general.type", b"adapter")
        G.gguf_set_val_str(g, b"adapter.type", b"lora")
        G.gguf_set_val_f32(g, b"adapter.lora.alpha", alpha)
        if alora:
            # an activated LoRA: applies from the last occurrence of these tokens on (llama.cpp's key)
            arr = np.ascontiguousarray(alora, dtype=np.int32)
            keep.append(arr)
            G.gguf_set_arr_data(g, b"adapter.alora.invocation_tokens", G.GGUF_TYPE_INT32, arr.ctypes.data, arr.size)
        for name, _, a, b in pairs:
            for suffix, x in (("lora_a", a), ("lora_b", b)):
                t_type = ftype if x.shape[-1] % 32 == 0 else GGML_F32   # q8_0 needs rows of 32
                data = enc.encode(x, t_type)
                keep.append(data)
                ne = list(reversed(x.shape))
                t = G.ggml_new_tensor(mctx, t_type, 2, (ctypes.c_int64 * 2)(*ne))
                G.ggml_set_name(t, f"{name}.{suffix}".encode())
                G.gguf_add_tensor(g, t)
                G.gguf_set_tensor_data(g, f"{name}.{suffix}".encode(), data.ctypes.data)
        if G.gguf_get_n_tensors(g) != 2 * len(pairs):
            raise ConvertError("gguf_add_tensor refused a tensor (see the log)")
        if not G.gguf_write_to_file(g, str(outfile).encode(), False):
            raise ConvertError(f"could not write {outfile}")
    finally:
        G.gguf_free(g)
        G.ggml_free(mctx)
    return {"matrices": len(pairs), "rank": r, "alpha": alpha, "arch": hp.arch, "alora_invocation_tokens": list(alora)}
