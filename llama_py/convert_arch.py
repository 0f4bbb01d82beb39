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

import numpy as np
from . import convert_gemma4

# Symbolic sizes resolved from the hyperparameters (see shape()).
EMBD, FF, FF2, Q, KV, QKV, HEAD = "embd", "ff", "ff2", "q", "kv", "qkv", "head"
EXP, FF_EXP = "exp", "ff_exp"   # expert count, one expert's feed-forward width
FF_SHEXP = "ff_shexp"           # the shared expert's width (qwen35moe)
Q2, ONE = "q2", "one"                                          # gated attention: Q and gate rows
SSM_CH, SSM_INNER, SSM_HEADS, SSM_STATE, SSM_CONV = "ssm_ch", "ssm_inner", "ssm_heads", "ssm_state", "ssm_conv"


@dataclass
class LayerTensor:
    gguf: str                       # GGUF name after "blk.N."
    shape: Tuple[str, ...]          # NumPy order (rows, cols) or (n,)
    perm: str = ""                  # "q" / "k": per-head row permutation for NORMAL rope
    add: float = 0.0                # added to every value (Gemma's norms store w for (1 + w))
    fn: Optional[Callable[[np.ndarray, "object"], np.ndarray]] = None  # (f32 array, hp) -> GGUF values
    src_shape: Optional[Tuple[str, ...]] = None  # checkpoint shape when fn reshapes (default: shape)


@dataclass
class ArchSpec:
    gguf: str                                   # general.architecture
    hf_archs: Tuple[str, ...]                   # config.json "architectures" accepted
    layer: Dict[str, LayerTensor]               # checkpoint name after "layers.N." -> GGUF
    final_norm_add: float = 0.0
    write_head_dim: bool = False                # always write attention.key_length / value_length
    activations: Tuple[str, ...] = ("silu",)
    check: Optional[Callable[[dict, "object"], None]] = None     # config checks (raise ConvertError)
    # (suffix, type, value); type "u32", "f32", "bool", or "u32[]" / "bool[]" for one value per layer
    keys: Optional[Callable[[dict, "object"], List[Tuple[str, str, object]]]] = None
    # experts: checkpoint name after "layers.N." with "{e}" for the expert -> GGUF tensor of one
    # expert's shape; the converter stacks the n_expert of them into [n_expert, rows, cols]
    experts: Dict[str, LayerTensor] = field(default_factory=dict)
    layer_for: Optional[Callable[["object", int], Dict[str, LayerTensor]]] = None  # per-layer sets (hybrids)
    # checkpoint tensors beyond `layer` (per-layer shapes, model-wide extras) as plan_tensors'
    # entries {src: (gguf name, shape, perm heads, value added)} (None: present, not used), and
    # tensors computed from the config [(gguf name, float32 array)]; called with (hp, prefix)
    tensors: Optional[Callable[["object", str], Tuple[Dict[str, tuple], List[Tuple[str, "object"]]]]] = None
    # encoders (convert_encoder.py): their own tensor plan and metadata writer
    plan: Optional[Callable] = None             # (hp, ck, ftype) -> [TensorJob]
    meta: Optional[Callable] = None             # (writers: dict of s/u32/f32/b/arr_str, hp) -> None
    normalize: Optional[Callable[[dict], dict]] = None  # config.json in another spelling -> transformers'
    # tensors the checkpoint stores in a ggml block type: (hp, checkpoint, prefix) -> (TensorJobs
    # with a raw reader, the checkpoint names they consume)
    raw: Optional[Callable] = None


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


def _n_expert(config: dict) -> int:
    return int(config.get("num_local_experts") or config.get("num_experts") or 0)


def _moe(router: str, experts: str, gate: str, up: str, down: str):
    """(layer tensors, expert tensors) of a sparse-MoE block: the router [n_expert, n_embd] and the
    experts' gate / up [n_ff_exp, n_embd] and down [n_embd, n_ff_exp] (llama.cpp's names)."""
    layer = {"post_attention_layernorm.weight": LayerTensor("ffn_norm.weight", (EMBD,)),
             router: LayerTensor("ffn_gate_inp.weight", (EXP, EMBD))}
    exps = {f"{experts}.{{e}}.{gate}": LayerTensor("ffn_gate_exps.weight", (FF_EXP, EMBD)),
            f"{experts}.{{e}}.{up}": LayerTensor("ffn_up_exps.weight", (FF_EXP, EMBD)),
            f"{experts}.{{e}}.{down}": LayerTensor("ffn_down_exps.weight", (EMBD, FF_EXP))}
    return layer, exps


def _moe_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    out = [("expert_count", "u32", _n_expert(config)),
           ("expert_used_count", "u32", int(config["num_experts_per_tok"]))]
    if config.get("moe_intermediate_size"):
        out.append(("expert_feed_forward_length", "u32", int(config["moe_intermediate_size"])))
    if "norm_topk_prob" in config:
        out.append(("expert_weights_norm", "bool", bool(config["norm_topk_prob"])))
    return out


def _moe_check(config: dict, hp) -> None:
    n, k = _n_expert(config), config.get("num_experts_per_tok")
    if n <= 0 or not isinstance(k, int) or not 0 < k <= n:
        _err(f"config.json: num_experts_per_tok {k!r} must be in 1..num_experts {n}")
    if config.get("mlp_only_layers") or int(config.get("decoder_sparse_step") or 1) != 1:
        _err("config.json: dense layers among the expert ones (mlp_only_layers / decoder_sparse_step) are not "
             "supported: every layer must be a mixture of experts")
    if config.get("router_jitter_noise"):
        _err("config.json: router_jitter_noise is a training-time setting; set it to 0")


def _qwen3moe_check(config: dict, hp) -> None:
    _no_sliding(config, hp)
    _moe_check(config, hp)


def _qwen2moe_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    return _moe_keys(config, hp) + [("expert_shared_feed_forward_length", "u32",
                                     int(config["shared_expert_intermediate_size"]))]


def _mixtral_check(config: dict, hp) -> None:
    _llama_check(config, hp)
    _moe_check(config, hp)
    sw = config.get("sliding_window")
    if sw is not None and sw < hp.n_ctx:
        _err(f"config.json: sliding_window {sw} is not supported for mixtral (the llama GGUF architecture "
             "attends to every position)")


def expert_tensors(spec: ArchSpec, hp, prefix: str) -> List[Tuple[str, List[str], Tuple[int, ...]]]:
    """(GGUF name, checkpoint names in expert order, stacked shape) of every expert tensor."""
    n = _n_expert(hp.config)
    out = []
    for il in range(hp.n_layer if spec.experts else 0):
        for pat, lt in spec.experts.items():
            srcs = [f"{prefix}layers.{il}.{pat.format(e=e)}" for e in range(n)]
            out.append((f"blk.{il}.{lt.gguf}", srcs, (n,) + shape(lt.shape, hp)))
    return out


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


# ---- qwen35 (Qwen3.5 / 3.6 dense): Gated DeltaNet layers and gated attention layers ----
# llama.cpp's converter stores the value heads of a DeltaNet layer tiled over the key heads
# ([v0 of k0, v0 of k1, ..., v1 of k0, ...]) rather than grouped by key head as the checkpoint
# has them, so that value head h reads key head h % n_k_heads; the engine's op follows it.

def _v_tiled(a: np.ndarray, hp, axis: int, head: int) -> np.ndarray:
    c = hp.config
    nk, nv = int(c["linear_num_key_heads"]), int(c["linear_num_value_heads"])
    if nk == nv:
        return a
    a = np.moveaxis(a, axis, 0)
    rest = a.shape[1:]
    a = a.reshape(nk, nv // nk, head, *rest).swapaxes(0, 1).reshape(nv * head, *rest)
    return np.moveaxis(a, 0, axis)


def _dn_head(hp) -> int:
    return int(hp.config["linear_value_head_dim"])


def _qkv_rows(a: np.ndarray, hp) -> np.ndarray:
    key_dim = int(hp.config["linear_key_head_dim"]) * int(hp.config["linear_num_key_heads"])
    return np.concatenate([a[:2 * key_dim], _v_tiled(a[2 * key_dim:], hp, 0, _dn_head(hp))])


_QWEN35_DN = {
    "linear_attn.in_proj_qkv.weight": LayerTensor("attn_qkv.weight", (SSM_CH, EMBD), fn=_qkv_rows),
    "linear_attn.in_proj_z.weight": LayerTensor("attn_gate.weight", (SSM_INNER, EMBD),
                                                fn=lambda a, hp: _v_tiled(a, hp, 0, _dn_head(hp))),
    "linear_attn.in_proj_b.weight": LayerTensor("ssm_beta.weight", (SSM_HEADS, EMBD), fn=lambda a, hp: _v_tiled(a, hp, 0, 1)),
    "linear_attn.in_proj_a.weight": LayerTensor("ssm_alpha.weight", (SSM_HEADS, EMBD), fn=lambda a, hp: _v_tiled(a, hp, 0, 1)),
    "linear_attn.conv1d.weight": LayerTensor("ssm_conv1d.weight", (SSM_CH, SSM_CONV), src_shape=(SSM_CH, ONE, SSM_CONV),
                                             fn=lambda a, hp: _qkv_rows(a.reshape(a.shape[0], a.shape[2]), hp)),
    "linear_attn.dt_bias": LayerTensor("ssm_dt.bias", (SSM_HEADS,), fn=lambda a, hp: _v_tiled(a, hp, 0, 1)),
    "linear_attn.A_log": LayerTensor("ssm_a", (SSM_HEADS,), fn=lambda a, hp: -np.exp(_v_tiled(a, hp, 0, 1))),
    "linear_attn.norm.weight": LayerTensor("ssm_norm.weight", (SSM_STATE,)),
    "linear_attn.out_proj.weight": LayerTensor("ssm_out.weight", (EMBD, SSM_INNER),
                                               fn=lambda a, hp: _v_tiled(a, hp, 1, _dn_head(hp))),
}
# Qwen3.5's RMS norms scale by (1 + w); the GGUF stores 1 + w (the DeltaNet output norm is plain)
_QWEN35_COMMON = {
    "input_layernorm.weight": LayerTensor("attn_norm.weight", (EMBD,), add=1.0),
    "post_attention_layernorm.weight": LayerTensor("post_attention_norm.weight", (EMBD,), add=1.0),
    "mlp.gate_proj.weight": LayerTensor("ffn_gate.weight", (FF, EMBD)),
    "mlp.up_proj.weight": LayerTensor("ffn_up.weight", (FF, EMBD)),
    "mlp.down_proj.weight": LayerTensor("ffn_down.weight", (EMBD, FF)),
}
_QWEN35_ATTN = {
    "self_attn.q_proj.weight": LayerTensor("attn_q.weight", (Q2, EMBD)),
    "self_attn.k_proj.weight": LayerTensor("attn_k.weight", (KV, EMBD)),
    "self_attn.v_proj.weight": LayerTensor("attn_v.weight", (KV, EMBD)),
    "self_attn.o_proj.weight": LayerTensor("attn_output.weight", (EMBD, Q)),
    **{k: LayerTensor(v.gguf, v.shape, add=1.0) for k, v in _QK_NORM.items()},
}


def _qwen35_layer_types(config: dict, n_layer: int) -> List[str]:
    lt = config.get("layer_types")
    if lt is None:
        every = int(config.get("full_attention_interval") or 4)
        lt = ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n_layer)]
    return list(lt)


def _qwen35_layer(hp, il: int) -> Dict[str, LayerTensor]:
    kind = _qwen35_layer_types(hp.config, hp.n_layer)[il]
    return {**_QWEN35_COMMON, **(_QWEN35_ATTN if kind == "full_attention" else _QWEN35_DN)}


# qwen35moe: the FFN is routed experts (stacked by expert_tensors) plus a shared expert whose
# output is scaled by sigmoid(shared_expert_gate · x)
_QWEN35MOE_FFN = {
    "mlp.gate.weight": LayerTensor("ffn_gate_inp.weight", (EXP, EMBD)),
    "mlp.shared_expert.gate_proj.weight": LayerTensor("ffn_gate_shexp.weight", (FF_SHEXP, EMBD)),
    "mlp.shared_expert.up_proj.weight": LayerTensor("ffn_up_shexp.weight", (FF_SHEXP, EMBD)),
    "mlp.shared_expert.down_proj.weight": LayerTensor("ffn_down_shexp.weight", (EMBD, FF_SHEXP)),
    "mlp.shared_expert_gate.weight": LayerTensor("ffn_gate_inp_shexp.weight", (EMBD,), src_shape=(ONE, EMBD),
                                                 fn=lambda a, hp: a.reshape(-1)),
}


def _qwen35moe_layer(hp, il: int) -> Dict[str, LayerTensor]:
    dense = ("mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight")
    return {**{k: v for k, v in _qwen35_layer(hp, il).items() if k not in dense}, **_QWEN35MOE_FFN}


def _qwen35moe_check(config: dict, hp) -> None:
    _qwen35_check(config, hp)
    _moe_check(config, hp)
    if not config.get("shared_expert_intermediate_size"):
        _err("config.json: qwen35moe needs shared_expert_intermediate_size (the shared expert)")


def _qwen35moe_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    return _qwen35_keys(config, hp) + _moe_keys(config, hp) + [
        ("expert_shared_feed_forward_length", "u32", int(config["shared_expert_intermediate_size"]))]


def _qwen35_interval(config: dict, n_layer: int) -> int:
    return int(config.get("full_attention_interval") or 4)


def _qwen35_check(config: dict, hp) -> None:
    lt = _qwen35_layer_types(config, hp.n_layer)
    every = _qwen35_interval(config, hp.n_layer)
    want = ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(hp.n_layer)]
    if lt != want:
        _err(f"config.json: qwen35 layer_types must put full attention in every {every}-th layer, linear attention "
             "in the others")
    if config.get("attention_bias"):
        _err("config.json: attention_bias is not supported for qwen35")
    for k in ("linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads",
              "linear_num_value_heads"):
        if not config.get(k):
            _err(f"config.json: qwen35 needs {k}")
    if config["linear_key_head_dim"] != config["linear_value_head_dim"]:
        _err("config.json: linear_key_head_dim must equal linear_value_head_dim (one state size)")
    if config["linear_num_value_heads"] % config["linear_num_key_heads"] != 0:
        _err("config.json: linear_num_value_heads must be a multiple of linear_num_key_heads")


def _qwen35_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    return [("ssm.conv_kernel", "u32", int(config["linear_conv_kernel_dim"])),
            ("ssm.state_size", "u32", int(config["linear_key_head_dim"])),
            ("ssm.group_count", "u32", int(config["linear_num_key_heads"])),
            ("ssm.time_step_rank", "u32", int(config["linear_num_value_heads"])),
            ("ssm.inner_size", "u32", int(config["linear_value_head_dim"]) * int(config["linear_num_value_heads"])),
            ("full_attention_interval", "u32", _qwen35_interval(config, hp.n_layer))]


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
_QWEN3MOE_LAYER, _QWEN3MOE_EXPERTS = _moe("mlp.gate.weight", "mlp.experts", "gate_proj.weight", "up_proj.weight",
                                          "down_proj.weight")
ARCHS["qwen3_moe"] = ArchSpec("qwen3moe", ("Qwen3MoeForCausalLM",),
                              {**_attn(perm=False), **_QK_NORM, **_QWEN3MOE_LAYER}, write_head_dim=True,
                              check=_qwen3moe_check, keys=_moe_keys, experts=_QWEN3MOE_EXPERTS)
# Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): qwen2 attention, experts and a sigmoid-gated shared expert
ARCHS["qwen2_moe"] = ArchSpec(
    "qwen2moe", ("Qwen2MoeForCausalLM",),
    {**_attn(perm=False, bias=True), **_QWEN3MOE_LAYER, **_QWEN35MOE_FFN},
    check=_qwen3moe_check, keys=_qwen2moe_keys, experts=_QWEN3MOE_EXPERTS)
# OLMoE: llama attention with RMS norms over the whole Q and K vectors, experts as Qwen3-MoE's whose
# softmax weights are not renormalised (norm_topk_prob false)
ARCHS["olmoe"] = ArchSpec(
    "olmoe", ("OlmoeForCausalLM",),
    {**_attn(perm=False), "self_attn.q_norm.weight": LayerTensor("attn_q_norm.weight", (Q,)),
     "self_attn.k_norm.weight": LayerTensor("attn_k_norm.weight", (KV,)), **_QWEN3MOE_LAYER},
    check=_qwen3moe_check, keys=_moe_keys, experts=_QWEN3MOE_EXPERTS)
# Mixtral is llama with experts (w1 gate, w3 up, w2 down), softmax over the chosen two
_MIXTRAL_LAYER, _MIXTRAL_EXPERTS = _moe("block_sparse_moe.gate.weight", "block_sparse_moe.experts", "w1.weight",
                                        "w3.weight", "w2.weight")
ARCHS["mixtral"] = ArchSpec("llama", ("MixtralForCausalLM",), {**_attn(), **_MIXTRAL_LAYER},
                            check=_mixtral_check, keys=_moe_keys, experts=_MIXTRAL_EXPERTS)
ARCHS["gemma4_text"] = ArchSpec(
    "gemma4", ("Gemma4ForCausalLM",), {}, write_head_dim=True, activations=("gelu_pytorch_tanh",),
    check=convert_gemma4.check, keys=convert_gemma4.keys, tensors=convert_gemma4.tensors)
ARCHS["gemma2"] = ArchSpec(
    "gemma2", ("Gemma2ForCausalLM",),
    {k: v for k, v in ARCHS["gemma3_text"].layer.items() if "_norm." not in k or "layernorm" in k},
    final_norm_add=1.0, write_head_dim=True, activations=("gelu_pytorch_tanh",),
    check=_gemma2_check, keys=_gemma2_keys)
ARCHS["qwen3_5_text"] = ArchSpec(
    "qwen35", ("Qwen3_5ForCausalLM",), {}, final_norm_add=1.0, write_head_dim=True,
    check=_qwen35_check, keys=_qwen35_keys, layer_for=_qwen35_layer)
_QWEN35MOE_EXPERTS = _moe("mlp.gate.weight", "mlp.experts", "gate_proj.weight", "up_proj.weight", "down_proj.weight")[1]
ARCHS["qwen3_5_moe_text"] = ArchSpec(
    "qwen35moe", ("Qwen3_5MoeForCausalLM",), {}, final_norm_add=1.0, write_head_dim=True,
    check=_qwen35moe_check, keys=_qwen35moe_keys, layer_for=_qwen35moe_layer, experts=_QWEN35MOE_EXPERTS)
# "gemma3" is also how a text-only Gemma 3 checkpoint may name itself
ARCHS["gemma3"] = ARCHS["gemma3_text"]


# gpt-oss: Q/K/V/O biases, per-head sinks, a router with a bias, and the experts stored fused:
# gate_up_proj [n_expert, n_embd, 2 n_ff_exp] with gate and up columns interleaved (gate = [..., ::2],
# up = [..., 1::2]) and down_proj [n_expert, n_ff_exp, n_embd], both x @ W (transposed for GGUF).
def _gpt_oss_layer(hp, il: int) -> Dict[str, LayerTensor]:
    E, F, X = EXP, FF_EXP, EMBD

    def part(k, bias=False):
        if bias:
            return lambda a, hp: np.ascontiguousarray(a[:, k::2])
        return lambda a, hp: np.ascontiguousarray(np.swapaxes(a, 1, 2)[:, k::2, :])
    m = _attn(perm=False, bias=True)
    if not _gpt_oss_mxfp4(hp.config):
        m.update({
            "mlp.experts.gate_up_proj::gate": LayerTensor("ffn_gate_exps.weight", (E, F, X), fn=part(0),
                                                          src_shape=(E, X, "ff_exp2")),
            "mlp.experts.gate_up_proj::up": LayerTensor("ffn_up_exps.weight", (E, F, X), fn=part(1),
                                                        src_shape=(E, X, "ff_exp2")),
            "mlp.experts.down_proj": LayerTensor("ffn_down_exps.weight", (E, X, F),
                                                 fn=lambda a, hp: np.ascontiguousarray(np.swapaxes(a, 1, 2)),
                                                 src_shape=(E, F, X)),
        })
    m.update({
        "self_attn.o_proj.bias": LayerTensor("attn_output.bias", (X,)),
        "self_attn.sinks": LayerTensor("attn_sinks.weight", ("nhead",)),
        "post_attention_layernorm.weight": LayerTensor("post_attention_norm.weight", (X,)),
        "mlp.router.weight": LayerTensor("ffn_gate_inp.weight", (E, X)),
        "mlp.router.bias": LayerTensor("ffn_gate_inp.bias", (E,)),
        "mlp.experts.gate_up_proj_bias::gate": LayerTensor("ffn_gate_exps.bias", (E, F), fn=part(0, True), src_shape=(E, "ff_exp2")),
        "mlp.experts.gate_up_proj_bias::up": LayerTensor("ffn_up_exps.bias", (E, F), fn=part(1, True), src_shape=(E, "ff_exp2")),
        "mlp.experts.down_proj_bias": LayerTensor("ffn_down_exps.bias", (E, X)),
    })
    return m


def _gpt_oss_mxfp4(config: dict) -> bool:
    """OpenAI's checkpoints: experts as MXFP4 blocks (quantization_config quant_method mxfp4)."""
    return (config.get("quantization_config") or {}).get("quant_method") == "mxfp4"


def mxfp4_from_openai(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """ggml MXFP4 blocks (per 32 values: the E8M0 scale byte, then 16 bytes whose low nibbles hold
    values 0..15 and high nibbles 16..31) of OpenAI's layout: blocks [..., n_blocks, 16] with
    values 2j (low nibble) and 2j + 1 (high) in byte j, scales [..., n_blocks] (the same E8M0
    byte, bias 127). Only the nibbles move: the FP4 codes and scales stay bit for bit."""
    codes = np.empty(blocks.shape[:-1] + (32,), np.uint8)
    codes[..., 0::2] = blocks & 0x0F
    codes[..., 1::2] = blocks >> 4
    out = np.empty(blocks.shape[:-1] + (17,), np.uint8)
    out[..., 0] = scales
    out[..., 1:] = codes[..., :16] | (codes[..., 16:] << 4)
    return out.reshape(-1)


def _gpt_oss_raw(hp, ck, prefix: str):
    """The MXFP4 expert jobs of an OpenAI checkpoint: per layer gate_up_proj_blocks / _scales
    [n_expert, 2 n_ff_exp (gate and up rows interleaved), n_embd / 32, 16] / [..., n_embd / 32]
    give ffn_gate_exps (even rows) and ffn_up_exps (odd), down_proj_blocks / _scales
    [n_expert, n_embd, n_ff_exp / 32, 16] give ffn_down_exps: rows are output features, as GGUF
    stores them."""
    if not _gpt_oss_mxfp4(hp.config):
        return [], set()
    from .convert import GGML_MXFP4, TensorJob
    E, F, X = _n_expert(hp.config), int(hp.config["intermediate_size"]), hp.n_embd
    jobs, used = [], set()
    for il in range(hp.n_layer):
        p = f"{prefix}layers.{il}.mlp.experts."
        for fused, rows, cols, parts in (("gate_up_proj", 2 * F, X, (("ffn_gate_exps", 0), ("ffn_up_exps", 1))),
                                         ("down_proj", X, F, (("ffn_down_exps", None),))):
            blocks, scales = p + fused + "_blocks", p + fused + "_scales"
            if cols % 32 != 0:
                _err(f"config.json: MXFP4 rows of {cols} values are not whole blocks of 32")
            for name, want in ((blocks, (E, rows, cols // 32, 16)), (scales, (E, rows, cols // 32))):
                if name not in ck:
                    _err(f"checkpoint has no tensor '{name}' (quantization_config says mxfp4)")
                info = ck.info(name)
                if tuple(info.shape) != want or info.dtype != "U8":
                    _err(f"checkpoint tensor '{name}' is {info.dtype} {list(info.shape)}, expected U8 {list(want)}")
            used |= {blocks, scales}
            for gname, k in parts:
                def read(ck, blocks=blocks, scales=scales, k=k):
                    b, s = ck.array(blocks), ck.array(scales)
                    for e in range(E):   # one expert at a time: gpt-oss-120b's are 100 MB a layer
                        yield mxfp4_from_openai(b[e] if k is None else b[e, k::2], s[e] if k is None else s[e, k::2])
                    if k != 0:
                        ck.release(blocks)
                        ck.release(scales)
                shape = (E, rows // 2 if k is not None else rows, cols)
                jobs.append(TensorJob(f"blk.{il}.{gname}.weight", None, shape, GGML_MXFP4, raw=read))
    return jobs, used


def _gpt_oss_check(config: dict, hp) -> None:
    _moe_check(config, hp)
    lt = config.get("layer_types") or []
    want = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(hp.n_layer)]
    if lt and list(lt) != want:
        _err("config.json: gpt-oss layer_types must alternate sliding (even layers) and full attention")


def _gpt_oss_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    return [("expert_count", "u32", _n_expert(config)),
            ("expert_used_count", "u32", int(config["num_experts_per_tok"])),
            ("expert_feed_forward_length", "u32", int(config["intermediate_size"])),
            ("attention.sliding_window", "u32", int(config["sliding_window"]))]


ARCHS["gpt_oss"] = ArchSpec("gpt-oss", ("GptOssForCausalLM",), {}, write_head_dim=True,
                            check=_gpt_oss_check, keys=_gpt_oss_keys, layer_for=_gpt_oss_layer, raw=_gpt_oss_raw)


# granitemoe (Granite 3.x MoE; GraniteMoeShared adds an ungated shared expert): llama attention,
# the experts stored fused as JetMoE's parallel experts, input_linear [n_expert, 2 n_ff_exp, n_embd]
# (gate rows, then up rows) and output_linear [n_expert, n_embd, n_ff_exp]; split as llama.cpp does
def _granitemoe_layer(hp, il: int) -> Dict[str, LayerTensor]:
    E, F, X, S = EXP, FF_EXP, EMBD, FF_SHEXP

    def half(k, axis):
        def f(a, hp):
            n = a.shape[axis] // 2
            return np.ascontiguousarray(a[:, k * n:(k + 1) * n] if axis == 1 else a[k * n:(k + 1) * n])
        return f
    m = _attn()
    m.update({
        "post_attention_layernorm.weight": LayerTensor("ffn_norm.weight", (X,)),
        "block_sparse_moe.router.layer.weight": LayerTensor("ffn_gate_inp.weight", (E, X)),
        "block_sparse_moe.input_linear.weight::gate": LayerTensor("ffn_gate_exps.weight", (E, F, X), fn=half(0, 1),
                                                                  src_shape=(E, "ff_exp2", X)),
        "block_sparse_moe.input_linear.weight::up": LayerTensor("ffn_up_exps.weight", (E, F, X), fn=half(1, 1),
                                                                src_shape=(E, "ff_exp2", X)),
        "block_sparse_moe.output_linear.weight": LayerTensor("ffn_down_exps.weight", (E, X, F)),
    })
    if _granite_shared(hp.config):
        m.update({
            "shared_mlp.input_linear.weight::gate": LayerTensor("ffn_gate_shexp.weight", (S, X), fn=half(0, 0),
                                                                src_shape=("ff_shexp2", X)),
            "shared_mlp.input_linear.weight::up": LayerTensor("ffn_up_shexp.weight", (S, X), fn=half(1, 0),
                                                              src_shape=("ff_shexp2", X)),
            "shared_mlp.output_linear.weight": LayerTensor("ffn_down_shexp.weight", (X, S)),
        })
    return m


def _granite_shared(config: dict) -> int:
    return int(config.get("shared_intermediate_size") or 0)


def _granitemoe_check(config: dict, hp) -> None:
    _llama_check(config, hp)
    _moe_check(config, hp)
    if config.get("position_embedding_type", "rope") != "rope":
        _err("config.json: granitemoe without rope (position_embedding_type) is not supported")


def _granitemoe_keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    # transformers' defaults are 1.0 each; attention.scale replaces 1/sqrt(head size)
    out = _moe_keys(config, hp) + [
        ("attention.scale", "f32", float(config.get("attention_multiplier", 1.0))),
        ("embedding_scale", "f32", float(config.get("embedding_multiplier", 1.0))),
        ("residual_scale", "f32", float(config.get("residual_multiplier", 1.0))),
        ("logit_scale", "f32", float(config.get("logits_scaling", 1.0)))]
    if _granite_shared(config):
        out.append(("expert_shared_feed_forward_length", "u32", _granite_shared(config)))
    return out


ARCHS["granitemoe"] = ArchSpec("granitemoe", ("GraniteMoeForCausalLM",), {}, check=_granitemoe_check,
                               keys=_granitemoe_keys, layer_for=_granitemoe_layer)
ARCHS["granitemoeshared"] = ArchSpec("granitemoe", ("GraniteMoeSharedForCausalLM",), {}, check=_granitemoe_check,
                                     keys=_granitemoe_keys, layer_for=_granitemoe_layer)


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
             HEAD: hp.head_dim, EXP: _n_expert(hp.config),
             FF_EXP: int(hp.config.get("moe_intermediate_size") or hp.n_ff), Q2: 2 * n_q, ONE: 1,
             FF_SHEXP: int(hp.config.get("shared_expert_intermediate_size") or _granite_shared(hp.config)),
             "nhead": hp.n_head}
    sizes["ff_exp2"] = 2 * sizes[FF_EXP]
    sizes["ff_shexp2"] = 2 * sizes[FF_SHEXP]
    c = hp.config
    if c.get("linear_num_value_heads"):
        inner = int(c["linear_value_head_dim"]) * int(c["linear_num_value_heads"])
        sizes.update({SSM_INNER: inner, SSM_HEADS: int(c["linear_num_value_heads"]),
                      SSM_STATE: int(c["linear_key_head_dim"]), SSM_CONV: int(c["linear_conv_kernel_dim"]),
                      SSM_CH: 2 * int(c["linear_key_head_dim"]) * int(c["linear_num_key_heads"]) + inner})
    return tuple(sizes[s] for s in sym)
