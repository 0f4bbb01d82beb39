"""Gemma 4 (text; dense, and 26B-A4B with experts) for the HF -> GGUF converter: the hooks of
its ArchSpec in llama_py/convert_arch.py.

Its blocks differ from layer to layer, so the tensors are listed per layer here rather than in
the spec's uniform `layer` table:
  - sliding layers have `head_dim` and `num_key_value_heads`, full layers their own head size
    and KV-head count (transformers' `per_layer_config`, or `global_head_dim` /
    `num_global_key_value_heads` in a config.json that predates it);
  - the last `num_kv_shared_layers` layers have no K/V projections nor K norm (they read an
    earlier layer's KV); with `attention_k_eq_v` the full layers have no V projection (V = K);
  - with `use_double_wide_mlp` the KV-shared layers' MLP is twice as wide;
  - per-layer embeddings (PLE) add model-wide tensors and three per block;
  - with `enable_moe_block` (26B-A4B) every block has experts beside its dense MLP: a router
    (proj, input scale, per-expert output scale), stacked gate_up / down experts, three norms.
The GGUF names and keys are llama.cpp's (gguf-py's constants for MODEL_ARCH.GEMMA4): per-layer
values go into arrays (head_count_kv, feed_forward_length, sliding_window_pattern), sliding
layers' head size into key_length_swa, and the full layers' "proportional" rope into
rope_freqs.weight (divisor 1 for the rotated quarter of the frequencies, 1e30 for the rest).
Gemma 4's norms multiply by their weight as stored (no 1 + w).
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

SLIDING, FULL = "sliding_attention", "full_attention"


def _err(msg: str):
    from .convert import ConvertError
    raise ConvertError(msg)


def layer_types(config: dict) -> List[str]:
    n = int(config["num_hidden_layers"])
    lt = config.get("layer_types")
    if lt is None:   # transformers' default: five sliding layers, then a full one
        lt = [SLIDING if (i + 1) % 6 else FULL for i in range(n)]
    if len(lt) != n or any(t not in (SLIDING, FULL) for t in lt):
        _err(f"config.json: gemma4 layer_types must list {n} of {SLIDING!r} / {FULL!r}")
    return list(lt)


def _per_layer(config: dict, il: int, key: str):
    plc = config.get("per_layer_config") or {}
    return (plc.get(str(il)) or plc.get(il) or {}).get(key)


def layers(config: dict) -> List[dict]:
    """Per layer: kind, head size, KV heads, owns KV, has a V projection, FFN width."""
    lt = layer_types(config)
    n = len(lt)
    n_shared = int(config.get("num_kv_shared_layers") or 0)
    k_eq_v = bool(config.get("attention_k_eq_v"))
    out = []
    for il, kind in enumerate(lt):
        full = kind == FULL
        hd = _per_layer(config, il, "head_dim")
        if hd is None:
            hd = config.get("global_head_dim", 512) if full else config["head_dim"]
        kv = _per_layer(config, il, "num_key_value_heads")
        if kv is None:
            kv = config.get("num_global_key_value_heads") if full and config.get("attention_k_eq_v", True) else None
            kv = kv or config.get("num_key_value_heads") or config["num_attention_heads"]
        shared = il >= n - n_shared
        wide = 2 if config.get("use_double_wide_mlp") and shared else 1
        out.append(dict(kind=kind, head_dim=int(hd), n_kv=int(kv), owns_kv=not shared,
                        has_v=not (k_eq_v and full), n_ff=int(config["intermediate_size"]) * wide))
    return out


def _kind_value(ls: List[dict], kind: str, key: str):
    vals = {l[key] for l in ls if l["kind"] == kind}
    if len(vals) > 1:
        _err(f"config.json: gemma4 {kind} layers differ in {key} ({sorted(vals)}); the GGUF holds one per kind")
    return vals.pop() if vals else None


def check(config: dict, hp) -> None:
    """What the engine does not run is refused; the full layers' "proportional" rope is taken
    out of hp.rope (it becomes rope_freqs.weight, not a scaling type)."""
    if config.get("enable_moe_block") and not (config.get("num_experts") and config.get("top_k_experts")
                                               and config.get("moe_intermediate_size")):
        _err("config.json: gemma4 with enable_moe_block needs num_experts, top_k_experts and moe_intermediate_size")
    if config.get("use_bidirectional_attention") == "all":
        _err("config.json: gemma4 with use_bidirectional_attention='all' is not supported")
    if config.get("attention_bias"):
        _err("config.json: gemma4 with attention_bias is not supported")
    if not config.get("sliding_window"):
        _err("config.json: gemma4 needs sliding_window")
    pl = int(config.get("hidden_size_per_layer_input") or 0)
    if pl and int(config.get("vocab_size_per_layer_input") or hp.n_vocab) != hp.n_vocab:
        _err("config.json: gemma4 vocab_size_per_layer_input must equal vocab_size")
    ls = layers(config)
    n_shared = int(config.get("num_kv_shared_layers") or 0)
    if n_shared >= len(ls):
        _err("config.json: gemma4 num_kv_shared_layers leaves no layer owning KV")
    for kind in (SLIDING, FULL):
        _kind_value(ls, kind, "head_dim")
        _kind_value(ls, kind, "n_kv")
        if any(l["kind"] == kind and not l["owns_kv"] for l in ls) and \
                not any(l["kind"] == kind and l["owns_kv"] for l in ls):
            _err(f"config.json: gemma4 KV-shared {kind} layers have no earlier {kind} layer to share")
    rp = config.get("rope_parameters") or {}
    full = rp.get(FULL) or {}
    if full.get("rope_type", "proportional") not in ("proportional", "default") or full.get("factor", 1.0) != 1.0:
        _err(f"config.json: gemma4 full-attention rope {full} is not supported (proportional, factor 1)")
    slide = rp.get(SLIDING) or {}
    if slide.get("rope_type", "default") != "default" or slide.get("partial_rotary_factor", 1.0) != 1.0:
        _err(f"config.json: gemma4 sliding-attention rope {slide} is not supported (default, all dims)")
    hp.rope = {}


def _rope_freqs(config: dict, head_dim_full: int) -> np.ndarray:
    full = (config.get("rope_parameters") or {}).get(FULL) or {}
    partial = float(full.get("partial_rotary_factor", 0.25 if full.get("rope_type", "proportional") == "proportional" else 1.0))
    n_rot = int(head_dim_full * partial / 2)
    return np.array([1.0] * n_rot + [1e30] * (head_dim_full // 2 - n_rot), dtype=np.float32)


def keys(config: dict, hp) -> List[Tuple[str, str, object]]:
    ls = layers(config)
    hd_full = _kind_value(ls, FULL, "head_dim") or _kind_value(ls, SLIDING, "head_dim")
    hd_swa = _kind_value(ls, SLIDING, "head_dim") or hd_full
    rp = config.get("rope_parameters") or {}
    out = [("attention.sliding_window", "u32", int(config["sliding_window"])),
           ("attention.sliding_window_pattern", "bool[]", [l["kind"] == SLIDING for l in ls]),
           ("attention.key_length", "u32", hd_full), ("attention.value_length", "u32", hd_full),
           ("attention.key_length_swa", "u32", hd_swa), ("attention.value_length_swa", "u32", hd_swa),
           ("attention.head_count_kv", "u32[]", [l["n_kv"] for l in ls]),
           ("rope.dimension_count", "u32", hd_full), ("rope.dimension_count_swa", "u32", hd_swa),
           ("rope.freq_base_swa", "f32", float((rp.get(SLIDING) or {}).get("rope_theta", 10000.0))),
           ("attention.shared_kv_layers", "u32", int(config.get("num_kv_shared_layers") or 0)),
           ("embedding_length_per_layer_input", "u32", int(config.get("hidden_size_per_layer_input") or 0))]
    if len({l["n_ff"] for l in ls}) > 1:
        out.append(("feed_forward_length", "u32[]", [l["n_ff"] for l in ls]))
    if config.get("enable_moe_block"):
        out += [("expert_count", "u32", int(config["num_experts"])),
                ("expert_used_count", "u32", int(config["top_k_experts"])),
                ("expert_feed_forward_length", "u32", int(config["moe_intermediate_size"]))]
    if config.get("final_logit_softcapping"):
        out.append(("final_logit_softcapping", "f32", float(config["final_logit_softcapping"])))
    return out


def tensors(hp, prefix: str) -> Tuple[Dict[str, tuple], List[Tuple[str, np.ndarray]]]:
    """Checkpoint tensors -> (GGUF name, NumPy shape, 0, 0.0), and rope_freqs computed from the
    config; a shared layer's K/V weights, if the checkpoint has them, map to None (unused)."""
    config = hp.config
    ls = layers(config)
    E, H = hp.n_embd, hp.n_head
    pl = int(config.get("hidden_size_per_layer_input") or 0)
    want: Dict[str, tuple] = {}
    for il, l in enumerate(ls):
        p, b = f"{prefix}layers.{il}.", f"blk.{il}."
        hd, q, kv = l["head_dim"], H * l["head_dim"], l["n_kv"] * l["head_dim"]
        m = {"input_layernorm.weight": ("attn_norm.weight", (E,)),
             "self_attn.q_proj.weight": ("attn_q.weight", (q, E)),
             "self_attn.q_norm.weight": ("attn_q_norm.weight", (hd,)),
             "self_attn.o_proj.weight": ("attn_output.weight", (E, q)),
             "post_attention_layernorm.weight": ("post_attention_norm.weight", (E,)),
             "pre_feedforward_layernorm.weight": ("ffn_norm.weight", (E,)),
             "post_feedforward_layernorm.weight": ("post_ffw_norm.weight", (E,)),
             "mlp.gate_proj.weight": ("ffn_gate.weight", (l["n_ff"], E)),
             "mlp.up_proj.weight": ("ffn_up.weight", (l["n_ff"], E)),
             "mlp.down_proj.weight": ("ffn_down.weight", (E, l["n_ff"])),
             "layer_scalar": ("layer_output_scale.weight", (1,))}
        kv_names = {"self_attn.k_proj.weight": ("attn_k.weight", (kv, E)),
                    "self_attn.k_norm.weight": ("attn_k_norm.weight", (hd,))}
        if l["has_v"]:
            kv_names["self_attn.v_proj.weight"] = ("attn_v.weight", (kv, E))
        if l["owns_kv"]:
            m.update(kv_names)
        if config.get("enable_moe_block"):
            n_exp, ffe = int(config["num_experts"]), int(config["moe_intermediate_size"])
            m.update({"router.proj.weight": ("ffn_gate_inp.weight", (n_exp, E)),
                      "router.scale": ("ffn_gate_inp.scale", (E,)),
                      "router.per_expert_scale": ("ffn_down_exps.scale", (n_exp,)),
                      "experts.gate_up_proj": ("ffn_gate_up_exps.weight", (n_exp, 2 * ffe, E)),
                      "experts.down_proj": ("ffn_down_exps.weight", (n_exp, E, ffe)),
                      "pre_feedforward_layernorm_2.weight": ("pre_ffw_norm_2.weight", (E,)),
                      "post_feedforward_layernorm_1.weight": ("post_ffw_norm_1.weight", (E,)),
                      "post_feedforward_layernorm_2.weight": ("post_ffw_norm_2.weight", (E,))})
        if pl:
            m.update({"per_layer_input_gate.weight": ("inp_gate.weight", (pl, E)),
                      "per_layer_projection.weight": ("proj.weight", (E, pl)),
                      "post_per_layer_input_norm.weight": ("post_norm.weight", (E,))})
        for hf, (name, shape) in m.items():
            want[p + hf] = (b + name, shape, 0, 0.0)
        if not l["owns_kv"]:
            for hf in ("self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.k_norm.weight"):
                want[p + hf] = None
    if pl:
        want[prefix + "embed_tokens_per_layer.weight"] = ("per_layer_token_embd.weight", (hp.n_vocab, pl * len(ls)), 0, 0.0)
        want[prefix + "per_layer_model_projection.weight"] = ("per_layer_model_proj.weight", (pl * len(ls), E), 0, 0.0)
        want[prefix + "per_layer_projection_norm.weight"] = ("per_layer_proj_norm.weight", (pl,), 0, 0.0)
    computed = []
    if any(l["kind"] == FULL for l in ls):
        computed.append(("rope_freqs.weight", _rope_freqs(config, _kind_value(ls, FULL, "head_dim"))))
    return want, computed
