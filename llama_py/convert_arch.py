"""Per-architecture parts of the HF -> GGUF converter (llama_py/convert.py): which Hugging Face
model types map to which GGUF architecture, the checkpoint tensors of one block and their GGUF
names (llama.cpp's names, as gguf-py's constants list them), and the architecture's own keys.

Adding an architecture here is one ArchSpec in ARCHS; the engine side is one row in src/arch.c
(see CONTRIBUTING.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

# Symbolic sizes resolved from the hyperparameters (see shape()).
EMBD, FF, FF2, Q, KV, QKV, HEAD = "embd", "ff", "ff2", "q", "kv", "qkv", "head"


@dataclass
class LayerTensor:
    gguf: str                       # GGUF name after "blk.N."
    shape: Tuple[str, ...]          # NumPy order (rows, cols) or (n,)
    perm: str = ""                  # "q" / "k": per-head row permutation for NORMAL rope
    add: float = 0.0                # added to every value (Gemma's norms store w for (1 + w))


@dataclass
class ArchSpec:
    gguf: str                                   # general.architecture
    hf_archs: Tuple[str, ...]                   # config.json "architectures" accepted
    layer: Dict[str, LayerTensor]               # checkpoint name after "layers.N." -> GGUF
    final_norm_add: float = 0.0
    write_head_dim: bool = False                # always write attention.key_length / value_length
    activations: Tuple[str, ...] = ("silu",)
    check: Optional[Callable[[dict, "object"], None]] = None     # config checks (raise ConvertError)
    keys: Optional[Callable[[dict, "object"], List[Tuple[str, str, object]]]] = None  # (suffix, type, value)
    # encoders (convert_encoder.py): their own tensor plan and metadata writer
    plan: Optional[Callable] = None             # (hp, ck, ftype) -> [TensorJob]
    meta: Optional[Callable] = None             # (writers: dict of s/u32/f32/b/arr_str, hp) -> None
    normalize: Optional[Callable[[dict], dict]] = None  # config.json in another spelling -> transformers'
    extra_jobs: Optional[Callable] = None       # (hp) -> [TensorJob] from beside the checkpoint


def _attn(q="self_attn.q_proj.weight", perm=True, bias=False) -> Dict[str, LayerTensor]:
    m = {
        "input_layernorm.weight": LayerTensor("attn_norm.weight", (EMBD,)),
        "self_attn.q_proj.weight": LayerTensor("attn_q.weight", (Q, EMBD), "q" if perm else ""),
        "self_attn.k_proj.weight": LayerTensor("attn_k.weight", (KV, EMBD), "k" if perm else ""),
        "self_attn.v_proj.weight": LayerTensor("attn_v.weight", (KV, EMBD)),
        "self_attn.o_proj.weight": LayerTensor("attn_output.weight", (EMBD, Q)),
    }
    if bias:
        m["self_attn.q_proj.bias"] = LayerTensor("attn_q.bias", (Q,))
        m["self_attn.k_proj.bias"] = LayerTensor("attn_k.bias", (KV,))
        m["self_attn.v_proj.bias"] = LayerTensor("attn_v.bias", (KV,))
    return m


_FFN = {
    "post_attention_layernorm.weight": LayerTensor("ffn_norm.weight", (EMBD,)),
    "mlp.gate_proj.weight": LayerTensor("ffn_gate.weight", (FF, EMBD)),
    "mlp.up_proj.weight": LayerTensor("ffn_up.weight", (FF, EMBD)),
    "mlp.down_proj.weight": LayerTensor("ffn_down.weight", (EMBD, FF)),
}
_QK_NORM = {
    "self_attn.q_norm.weight": LayerTensor("attn_q_norm.weight", (HEAD,)),
    "self_attn.k_norm.weight": LayerTensor("attn_k_norm.weight", (HEAD,)),
}


def _err(msg: str):
    from .convert import ConvertError
    raise ConvertError(msg)


def _no_sliding(config: dict, hp) -> None:
    lt = config.get("layer_types") or []
    if any(t != "full_attention" for t in lt) or config.get("use_sliding_window"):
        _err("config.json: sliding-window layers (use_sliding_window / layer_types) are not supported "
             f"for {config.get('model_type')}")


def _llama_check(config: dict, hp) -> None:
    if config.get("attention_bias") or config.get("mlp_bias"):
        _err("config.json: attention_bias / mlp_bias models are not supported by the llama architecture "
             "of this project")


def _gemma3_check(config: dict, hp) -> None:
    qs = config.get("query_pre_attn_scalar", hp.head_dim)
    if qs != hp.head_dim:
        _err(f"config.json: query_pre_attn_scalar {qs} differs from head_dim {hp.head_dim} "
             "(the gemma3 GGUF architecture scales queries by 1/sqrt(head_dim))")
    for k in ("final_logit_softcapping", "attn_logit_softcapping"):
        if config.get(k):
            _err(f"config.json: {k} is not supported for gemma3")
    n = hp.n_layer
    want = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]
    lt = config.get("layer_types")
    if lt is not None and list(lt) != want:
        _err("config.json: gemma3 layer_types must be five sliding-window layers then one global, repeated")
    if not config.get("sliding_window"):
        _err("config.json: gemma3 needs sliding_window")


def _gemma2_check(config: dict, hp) -> None:
    qs = config.get("query_pre_attn_scalar", hp.head_dim)
    # the GGUF does not store it: loaders take the head size, or n_embd / n_head with 46 layers
    want = hp.n_embd / hp.n_head if hp.n_layer == 46 else hp.head_dim
    if qs != want:
        _err(f"config.json: query_pre_attn_scalar {qs} differs from {want:g} (the gemma2 GGUF architecture "
             "scales queries by 1/sqrt(head_dim), or 1/sqrt(n_embd / n_head) with 46 layers)")
    lt = config.get("layer_types")
    want_lt = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(hp.n_layer)]
    if lt is not None and list(lt) != want_lt:
        _err("config.json: gemma2 layer_types must alternate sliding-window (even layers) and global")
    if not config.get("sliding_window"):
        _err("config.json: gemma2 needs sliding_window")


def _gemma2_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    # a cap of None / 0 is "none": written as 0, which the engine reads as no soft-capping
    return [("attention.sliding_window", "u32", int(config["sliding_window"])),
            ("attn_logit_softcapping", "f32", float(config.get("attn_logit_softcapping") or 0.0)),
            ("final_logit_softcapping", "f32", float(config.get("final_logit_softcapping") or 0.0))]


def _gemma3_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    rp = config.get("rope_parameters") or {}
    local = rp.get("sliding_attention", {}) if isinstance(rp, dict) else {}
    base_swa = local.get("rope_theta", config.get("rope_local_base_freq", 10000.0))
    return [("attention.sliding_window", "u32", int(config["sliding_window"])),
            ("rope.freq_base_swa", "f32", float(base_swa))]


def _phi3_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    out: List[Tuple[str, str, object]] = []
    if config.get("sliding_window"):
        out.append(("attention.sliding_window", "u32", int(config["sliding_window"])))
    if hp.rope.get("rope_type") == "longrope":
        orig = int(config.get("original_max_position_embeddings") or hp.rope.get("original_max_position_embeddings"))
        scale = hp.n_ctx / orig
        attn = hp.rope.get("attention_factor")
        if attn is None:
            attn = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0
        out.append(("rope.scaling.original_context_length", "u32", orig))
        out.append(("rope.scaling.attn_factor", "f32", float(attn)))
    return out


ARCHS: Dict[str, ArchSpec] = {
    "llama": ArchSpec("llama", ("LlamaForCausalLM", "LlamaModel"), {**_attn(), **_FFN}, check=_llama_check),
    "qwen2": ArchSpec("qwen2", ("Qwen2ForCausalLM",), {**_attn(perm=False, bias=True), **_FFN}, check=_no_sliding),
    "qwen3": ArchSpec("qwen3", ("Qwen3ForCausalLM",), {**_attn(perm=False), **_QK_NORM, **_FFN},
                      write_head_dim=True, check=_no_sliding),
    "gemma3_text": ArchSpec(
        "gemma3", ("Gemma3ForCausalLM",),
        {**_attn(perm=False),
         **{k: LayerTensor(v.gguf, v.shape, add=1.0) for k, v in _QK_NORM.items()},
         "input_layernorm.weight": LayerTensor("attn_norm.weight", (EMBD,), add=1.0),
         "post_attention_layernorm.weight": LayerTensor("post_attention_norm.weight", (EMBD,), add=1.0),
         "pre_feedforward_layernorm.weight": LayerTensor("ffn_norm.weight", (EMBD,), add=1.0),
         "post_feedforward_layernorm.weight": LayerTensor("post_ffw_norm.weight", (EMBD,), add=1.0),
         "mlp.gate_proj.weight": LayerTensor("ffn_gate.weight", (FF, EMBD)),
         "mlp.up_proj.weight": LayerTensor("ffn_up.weight", (FF, EMBD)),
         "mlp.down_proj.weight": LayerTensor("ffn_down.weight", (EMBD, FF))},
        final_norm_add=1.0, write_head_dim=True, activations=("gelu_pytorch_tanh",),
        check=_gemma3_check, keys=_gemma3_keys),
    "phi3": ArchSpec(
        "phi3", ("Phi3ForCausalLM",),
        {"input_layernorm.weight": LayerTensor("attn_norm.weight", (EMBD,)),
         "self_attn.qkv_proj.weight": LayerTensor("attn_qkv.weight", (QKV, EMBD)),
         "self_attn.o_proj.weight": LayerTensor("attn_output.weight", (EMBD, Q)),
         "post_attention_layernorm.weight": LayerTensor("ffn_norm.weight", (EMBD,)),
         "mlp.gate_up_proj.weight": LayerTensor("ffn_up.weight", (FF2, EMBD)),
         "mlp.down_proj.weight": LayerTensor("ffn_down.weight", (EMBD, FF))},
        keys=_phi3_keys),
}
ARCHS["gemma2"] = ArchSpec(
    "gemma2", ("Gemma2ForCausalLM",),
    {k: v for k, v in ARCHS["gemma3_text"].layer.items() if "_norm." not in k or "layernorm" in k},
    final_norm_add=1.0, write_head_dim=True, activations=("gelu_pytorch_tanh",),
    check=_gemma2_check, keys=_gemma2_keys)
# "gemma3" is also how a text-only Gemma 3 checkpoint may name itself
ARCHS["gemma3"] = ARCHS["gemma3_text"]


def _add_encoders() -> None:
    from .convert_encoder import ENCODER_ARCHS, add_gemma_embedding
    ARCHS.update(ENCODER_ARCHS)
    add_gemma_embedding(ARCHS)


_add_encoders()


def find(config: dict) -> Tuple[str, ArchSpec]:
    """(model_type, spec) of a config.json; ConvertError naming the supported ones otherwise."""
    mtype = config.get("model_type")
    archs = config.get("architectures") or []
    if mtype is None and any(a in ("LlamaForCausalLM", "LlamaModel") for a in archs):
        mtype = "llama"
    if mtype is None:
        mtype = "llama"
    spec = ARCHS.get(mtype)
    # a model class its model_type's spec does not take may have a spec of its own
    # (Gemma3TextModel, EmbeddingGemma, beside Gemma3ForCausalLM)
    own = next((s for s in ARCHS.values() if any(a in s.hf_archs for a in archs)), None)
    if spec is not None and own is not None and not any(a in spec.hf_archs for a in archs):
        return next(k for k, s in ARCHS.items() if s is own), own
    if spec is None:
        for k, s in ARCHS.items():
            if any(a in s.hf_archs for a in archs):
                return k, s
        names = ", ".join(sorted({s.hf_archs[0] for s in ARCHS.values()}))
        _err(f"config.json: model_type '{mtype}' / architectures {archs} is not supported "
             f"(this converter handles {names})")
    return mtype, spec


def shape(sym: Tuple[str, ...], hp) -> Tuple[int, ...]:
    n_q, n_kv = hp.n_head * hp.head_dim, hp.n_head_kv * hp.head_dim
    sizes = {EMBD: hp.n_embd, FF: hp.n_ff, FF2: 2 * hp.n_ff, Q: n_q, KV: n_kv, QKV: n_q + 2 * n_kv,
             HEAD: hp.head_dim}
    return tuple(sizes[s] for s in sym)
