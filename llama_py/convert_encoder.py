"""Encoder parts of the HF -> GGUF converter: BERT (`BertModel`, `BertForSequenceClassification`)
and Nomic BERT (`NomicBertModel`), written as llama.cpp's `bert` and `nomic-bert` GGUF
architectures (names from gguf-py's constants), with a WordPiece vocabulary
(tokenizer.ggml.model "bert": "##x" stored as "x", any other normal token "y" as "▁y").

- pooling_type comes from a sentence-transformers modules.json (mean / cls / lasttoken), as
  llama.cpp's converter reads it; a sequence-classification model gets RANK;
- a BertForSequenceClassification head is HF's: cls = the pooler's dense (tanh), cls.output =
  the classifier, so the RANK score is the model's logit (llama.cpp's converter drops the
  pooler; a file made by it scores with the classifier alone);
- nomic-bert is read in Nomic's own checkpoint layout (emb_ln, Wqkv, fc11 / fc12 / fc2, norm1 / norm2),
  which transformers' NomicBertModel also saves.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from .convert_arch import ArchSpec

POOLING = {"none": 0, "mean": 1, "cls": 2, "last": 3, "rank": 4}


def _err(msg: str):
    from .convert import ConvertError
    raise ConvertError(msg)


def _prefix(ck) -> str:
    return "bert." if "bert.embeddings.word_embeddings.weight" in ck else ""


def _bert_layer(il: int, nomic: bool) -> Dict[str, Tuple[str, str]]:
    """checkpoint name -> (GGUF name, shape kind) of block il."""
    b = f"blk.{il}."
    if nomic:
        # Nomic's checkpoint layout (what transformers' NomicBertModel saves, and the published
        # nomic-embed-text weights): fused Wqkv, fc11 (up), fc12 (gate), fc2 (down)
        p = f"encoder.layers.{il}."
        return {
            p + "attn.Wqkv.weight": (b + "attn_qkv.weight", "QE"),
            p + "attn.out_proj.weight": (b + "attn_output.weight", "EE"),
            p + "norm1.weight": (b + "attn_output_norm.weight", "E"),
            p + "norm1.bias": (b + "attn_output_norm.bias", "E"),
            p + "mlp.fc11.weight": (b + "ffn_up.weight", "FE"),
            p + "mlp.fc12.weight": (b + "ffn_gate.weight", "FE"),
            p + "mlp.fc2.weight": (b + "ffn_down.weight", "EF"),
            p + "norm2.weight": (b + "layer_output_norm.weight", "E"),
            p + "norm2.bias": (b + "layer_output_norm.bias", "E"),
        }
    p = f"encoder.layer.{il}."
    out = {}
    for hf, gg in (("attention.self.query", "attn_q"), ("attention.self.key", "attn_k"),
                   ("attention.self.value", "attn_v"), ("attention.output.dense", "attn_output")):
        out[p + hf + ".weight"] = (b + gg + ".weight", "EE")
        out[p + hf + ".bias"] = (b + gg + ".bias", "E")
    out[p + "attention.output.LayerNorm.weight"] = (b + "attn_output_norm.weight", "E")
    out[p + "attention.output.LayerNorm.bias"] = (b + "attn_output_norm.bias", "E")
    out[p + "intermediate.dense.weight"] = (b + "ffn_up.weight", "FE")
    out[p + "intermediate.dense.bias"] = (b + "ffn_up.bias", "F")
    out[p + "output.dense.weight"] = (b + "ffn_down.weight", "EF")
    out[p + "output.dense.bias"] = (b + "ffn_down.bias", "E")
    out[p + "output.LayerNorm.weight"] = (b + "layer_output_norm.weight", "E")
    out[p + "output.LayerNorm.bias"] = (b + "layer_output_norm.bias", "E")
    return out


def _n_labels(hp) -> int:
    return len(hp.config.get("id2label") or {}) or int(hp.config.get("num_labels") or 0) or 1


def _is_classifier(hp) -> bool:
    return any(a.endswith("ForSequenceClassification") for a in hp.config.get("architectures") or [])


def _plan(hp, ck, ftype, nomic: bool):
    from .convert import jobs_for
    pre = _prefix(ck)
    E, F, V = hp.n_embd, hp.n_ff, hp.n_vocab
    dims = {"E": E, "F": F, "Q": 3 * E}
    want: Dict[str, Tuple[str, Tuple[int, ...], int, float]] = {}

    def put(src, name, shape):
        want[pre + src] = (name, shape, 0, 0.0)

    put("embeddings.word_embeddings.weight", "token_embd.weight", (V, E))
    put("embeddings.token_type_embeddings.weight", "token_types.weight", (int(hp.config.get("type_vocab_size") or 2), E))
    ln = "emb_ln" if nomic else "embeddings.LayerNorm"
    put(ln + ".weight", "token_embd_norm.weight", (E,))
    put(ln + ".bias", "token_embd_norm.bias", (E,))
    if not nomic:
        put("embeddings.position_embeddings.weight", "position_embd.weight", (hp.n_ctx, E))
    for il in range(hp.n_layer):
        for src, (name, kind) in _bert_layer(il, nomic).items():
            want[pre + src] = (name, tuple(dims[k] for k in kind), 0, 0.0)
    ignored = {pre + "embeddings.position_ids"}
    if _is_classifier(hp):
        put("pooler.dense.weight", "cls.weight", (E, E))
        put("pooler.dense.bias", "cls.bias", (E,))
        want["classifier.weight"] = ("cls.output.weight", (_n_labels(hp), E), 0, 0.0)
        want["classifier.bias"] = ("cls.output.bias", (_n_labels(hp),), 0, 0.0)
    else:
        ignored |= {pre + "pooler.dense.weight", pre + "pooler.dense.bias"}
    unknown = [n for n in ck.names() if n not in want and n not in ignored
               and not n.startswith("cls.predictions") and not n.startswith("cls.seq_relationship")]
    return jobs_for(want, unknown, ck, ftype, hp.arch)


def _pooling(hp, model_dir: Optional[Path]) -> Optional[int]:
    if _is_classifier(hp):
        return POOLING["rank"]
    if model_dir is None:
        return None
    mods = model_dir / "modules.json"
    if not mods.is_file():
        return None
    for mod in json.loads(mods.read_text(encoding="utf-8")):
        if str(mod.get("type", "")).endswith("Pooling"):
            cfg = json.loads((model_dir / mod["path"] / "config.json").read_text(encoding="utf-8"))
            if cfg.get("pooling_mode_mean_tokens"):
                return POOLING["mean"]
            if cfg.get("pooling_mode_cls_token"):
                return POOLING["cls"]
            if cfg.get("pooling_mode_lasttoken"):
                return POOLING["last"]
            mode = {"mean": "mean", "cls": "cls", "lasttoken": "last"}.get(cfg.get("pooling_mode"))
            if mode:
                return POOLING[mode]
            _err(f"{mods}: pooling {cfg} is not supported (mean, cls, lasttoken)")
    return None


def _meta(w, hp) -> None:
    a = hp.arch
    w["f32"](f"{a}.attention.layer_norm_epsilon", float(hp.config.get("layer_norm_eps") or 1e-12))
    w["b"](f"{a}.attention.causal", False)
    w["u32"]("tokenizer.ggml.token_type_count", int(hp.config.get("type_vocab_size") or 2))
    pt = _pooling(hp, hp.model_dir)
    if pt is not None:
        w["u32"](f"{a}.pooling_type", pt)
    if _is_classifier(hp):
        labels = hp.config.get("id2label") or {}
        names = [str(labels[k]) for k in sorted(labels, key=lambda k: int(k))] or ["LABEL_0"]
        w["arr_str"](f"{a}.classifier.output_labels", names)


def load_wpm(model_dir: Path, n_vocab: int, tok_json: dict, tok_cfg: Optional[dict]):
    """A WordPiece tokenizer.json as a GGUF "bert" vocabulary."""
    from .convert import Vocab, TOKEN_NORMAL, TOKEN_CONTROL, ConvertError
    model = tok_json.get("model") or {}
    vocab = model.get("vocab") or {}
    if not vocab:
        raise ConvertError(f"{model_dir}/tokenizer.json: WordPiece model without a vocab")
    cont = model.get("continuing_subword_prefix", "##")
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise ConvertError(f"{model_dir}/tokenizer.json: WordPiece ids are not 0..n-1")
    special = {t.get("content") for t in tok_json.get("added_tokens") or [] if t.get("special")}
    tokens, types = [], []
    for text, _ in by_id:
        if text in special:
            tokens.append(text)
            types.append(TOKEN_CONTROL)
        elif text.startswith(cont):
            tokens.append(text[len(cont):])
            types.append(TOKEN_NORMAL)
        else:
            tokens.append("\u2581" + text)
            types.append(TOKEN_NORMAL)
    v = Vocab(model="bert", pre="default", tokens=tokens, types=types, source=str(model_dir / "tokenizer.json"))
    index = {t: i for t, i in vocab.items()}
    for kind, name in (("unk", "[UNK]"), ("pad", "[PAD]"), ("cls", "[CLS]"), ("sep", "[SEP]"), ("mask", "[MASK]")):
        content = (tok_cfg or {}).get(f"{kind}_token")
        content = content.get("content") if isinstance(content, dict) else content
        tid = index.get(content if isinstance(content, str) else name)
        if tid is not None:
            v.special[kind] = tid
    if "cls" in v.special:
        v.special["bos"] = v.special["cls"]   # [CLS] opens a text, as llama.cpp's WPM vocab has it
    norm = tok_json.get("normalizer") or {}
    if norm.get("type") == "BertNormalizer":
        lower = bool(norm.get("lowercase", True))
        v.flags["tokenizer.ggml.normalizer.lowercase"] = lower
        sa = norm.get("strip_accents")
        v.flags["tokenizer.ggml.normalizer.strip_accents"] = lower if sa is None else bool(sa)
    return v


def _nomic_config(config: dict) -> dict:
    """Nomic's own config.json (the published nomic-embed-text models: n_embd, n_head, ...) in
    transformers' spelling; a transformers-style one is returned as it is."""
    if "n_embd" not in config:
        return config
    for k, want in (("causal", False), ("prenorm", False), ("qkv_proj_bias", False), ("mlp_fc1_bias", False),
                    ("mlp_fc2_bias", False), ("rotary_emb_interleaved", False), ("rotary_emb_scale_base", None)):
        if config.get(k, want) != want:
            _err(f"config.json: nomic_bert with {k} = {config.get(k)!r} is not supported")
    if float(config.get("rotary_emb_fraction", 1.0)) != 1.0:
        _err("config.json: nomic_bert with a partial rotary_emb_fraction is not supported")
    npos, mtp = int(config["n_positions"]), int(config.get("max_trained_positions", 2048))
    out = dict(config)
    out.update(hidden_size=config["n_embd"], num_attention_heads=config["n_head"],
               num_hidden_layers=config["n_layer"], intermediate_size=config["n_inner"],
               # trained for max_trained_positions tokens (2048 for v1 / v1.5, as llama.cpp reads them)
               max_position_embeddings=min(npos, mtp), rope_theta=float(config.get("rotary_emb_base", 10000.0)),
               layer_norm_eps=float(config.get("layer_norm_epsilon", 1e-12)),
               hidden_act="silu" if config.get("activation_function") == "swiglu" else config.get("activation_function"))
    return out


def _dense_modules(hp) -> List[Tuple[str, int, int, Path]]:
    """sentence-transformers Dense modules beside the checkpoint: (GGUF name, in, out, file),
    2_Dense -> dense_2, 3_Dense -> dense_3 (llama.cpp's names)."""
    out = []
    d = hp.model_dir
    mods = d / "modules.json" if d is not None else None
    if mods is None or not mods.is_file():
        return out
    for mod in json.loads(mods.read_text(encoding="utf-8")):
        if not str(mod.get("type", "")).endswith("Dense"):
            continue
        path = d / mod["path"]
        cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
        if str(cfg.get("activation_function", "Identity")).split(".")[-1] != "Identity" or cfg.get("bias"):
            _err(f"{path}: only bias-free Dense modules with the identity activation are supported")
        name = {"2_Dense": "dense_2", "3_Dense": "dense_3"}.get(mod["path"])
        if name is None:
            _err(f"{mods}: Dense module {mod['path']!r} is not one llama.cpp names (2_Dense, 3_Dense)")
        out.append((name, int(cfg["in_features"]), int(cfg["out_features"]), path / "model.safetensors"))
    return out


def _dense_tensors(hp, prefix):
    """plan_tensors' extras: the Dense modules' weights, read from their own files."""
    from safetensors.numpy import load_file
    computed = []
    for name, n_in, n_out, f in _dense_modules(hp):
        w = np.asarray(load_file(str(f))["linear.weight"], dtype=np.float32)
        if w.shape != (n_out, n_in):
            _err(f"{f}: linear.weight has shape {list(w.shape)}, expected {[n_out, n_in]}")
        computed.append((f"{name}.weight", w))
    return {}, computed


def _gemma_emb_meta(w, hp) -> None:
    a = hp.arch
    w["b"](f"{a}.attention.causal", False)
    pt = _pooling(hp, hp.model_dir)
    if pt is not None:
        w["u32"](f"{a}.pooling_type", pt)
    for name, n_in, n_out, _ in _dense_modules(hp):
        w["u32"](f"{a}.{name}_feat_in", n_in)
        w["u32"](f"{a}.{name}_feat_out", n_out)


def _gemma_emb_check(config: dict, hp) -> None:
    from .convert_arch import _gemma3_check
    if not config.get("use_bidirectional_attention"):
        _err("config.json: a Gemma3TextModel is converted as EmbeddingGemma, which attends both ways "
             "(use_bidirectional_attention)")
    _gemma3_check(config, hp)


def _gemma_embedding() -> ArchSpec:
    from .convert_arch import ARCHS, _gemma3_keys
    g = ARCHS["gemma3_text"]
    return ArchSpec("gemma-embedding", ("Gemma3TextModel",), dict(g.layer), final_norm_add=g.final_norm_add,
                    write_head_dim=True, activations=g.activations, check=_gemma_emb_check, keys=_gemma3_keys,
                    meta=_gemma_emb_meta, tensors=_dense_tensors)


ENCODER_ARCHS: Dict[str, ArchSpec] = {
    "bert": ArchSpec("bert", ("BertModel", "BertForSequenceClassification"), {}, activations=("gelu",),
                     plan=lambda hp, ck, ft: _plan(hp, ck, ft, False), meta=_meta),
    "nomic_bert": ArchSpec("nomic-bert", ("NomicBertModel",), {}, activations=("silu", "swiglu"),
                           plan=lambda hp, ck, ft: _plan(hp, ck, ft, True), meta=_meta, normalize=_nomic_config),
}


def add_gemma_embedding(archs: Dict[str, ArchSpec]) -> None:
    """Adds EmbeddingGemma's spec (it reuses gemma3's, so it is made once that one exists)."""
    archs["gemma_embedding"] = _gemma_embedding()
