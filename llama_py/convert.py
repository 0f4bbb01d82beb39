"""Hugging Face Llama checkpoint -> GGUF, written by this project's own GGUF writer.

    python scripts/convert_hf_to_gguf.py MODEL_DIR --outfile OUT.gguf --outtype f16
    python -m llama_py convert MODEL_DIR --outfile OUT.gguf --outtype q8_0

Reads MODEL_DIR/config.json, the safetensors weights (model.safetensors, or the shards named by
model.safetensors.index.json), the tokenizer (tokenizer.model through sentencepiece for
SentencePiece models, else tokenizer.json for byte-level BPE models), tokenizer_config.json
(special tokens, add_bos/add_eos, chat template; also chat_template.jinja / chat_template.json)
and generation_config.json.

Memory stays bounded by one chunk of rows, whatever the checkpoint's size: safetensors files
are parsed here (8-byte little-endian header length, JSON header, raw data) and memory-mapped;
each tensor is converted in row chunks, and mapped pages are released after each tensor. The
GGUF metadata section (keys and tensor infos, built with gguf_* through llama_py.ggml) is
written first, then each tensor's bytes at the offset the GGUF context assigned it.

Tensor layout. Hugging Face's LlamaAttention rotates the two halves of each head
(rotate_half); GGUF's Llama RoPE (GGML_ROPE_TYPE_NORMAL) rotates adjacent pairs. The rows of
q_proj and k_proj are therefore permuted per head: row h*hd + 2i + j of the GGUF tensor is row
h*hd + j*hd/2 + i of the checkpoint (j in {0, 1}, i < hd/2), which makes both forms compute
the same attention scores.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import mmap
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["ConvertError", "convert", "main", "SafetensorsFile", "Checkpoint", "Vocab", "load_vocab",
           "read_hparams", "detect_bpe_pre", "qk_row_permutation", "llama3_rope_factors"]


class ConvertError(Exception):
    """The checkpoint cannot be converted; the message says which file or value and why."""


# ---------------------------------------------------------------------------------------------
# safetensors

# safetensors dtype -> (NumPy dtype used to view the raw bytes, element size)
_ST_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # raw bits; widened to float32 by shifting 16 bits left
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("u1"),
}


@dataclass
class _StTensor:
    dtype: str
    shape: Tuple[int, ...]
    begin: int  # absolute file offsets
    end: int


class SafetensorsFile:
    """One .safetensors file, memory-mapped; tensors come out as read-only NumPy views."""

    def __init__(self, path: os.PathLike):
        self.path = Path(path)
        self._f = open(self.path, "rb")
        size = os.fstat(self._f.fileno()).st_size
        head = self._f.read(8)
        if len(head) != 8:
            raise ConvertError(f"{self.path}: not a safetensors file (shorter than 8 bytes)")
        n = int.from_bytes(head, "little")
        if n <= 0 or 8 + n > size:
            raise ConvertError(f"{self.path}: safetensors header length {n} does not fit the file ({size} bytes)")
        try:
            header = json.loads(self._f.read(n))
        except ValueError as e:
            raise ConvertError(f"{self.path}: safetensors header is not valid JSON: {e}") from None
        if not isinstance(header, dict):
            raise ConvertError(f"{self.path}: safetensors header is not a JSON object")
        data_start = 8 + n
        self.metadata = header.pop("__metadata__", None) or {}
        self.tensors: Dict[str, _StTensor] = {}
        for name, info in header.items():
            try:
                dtype, shape, (b, e) = info["dtype"], tuple(int(d) for d in info["shape"]), info["data_offsets"]
            except (KeyError, TypeError, ValueError):
                raise ConvertError(f"{self.path}: tensor '{name}' has a malformed header entry") from None
            if dtype not in _ST_DTYPES:
                raise ConvertError(f"{self.path}: tensor '{name}' has unsupported dtype {dtype}")
            want = _ST_DTYPES[dtype].itemsize * math.prod(shape)
            if not (0 <= b <= e) or e - b != want or data_start + e > size:
                raise ConvertError(f"{self.path}: tensor '{name}' ({dtype} {list(shape)}) has data offsets "
                                   f"[{b}, {e}) that do not match its size or the file")
            self.tensors[name] = _StTensor(dtype, shape, data_start + b, data_start + e)
        self._mm = mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_READ) if size > 0 else None

    def array(self, name: str) -> np.ndarray:
        """The tensor as a read-only view of the mapping (BF16 comes as its raw uint16 bits)."""
        t = self.tensors[name]
        if t.end == t.begin:
            return np.zeros(t.shape, _ST_DTYPES[t.dtype])
        return np.frombuffer(self._mm, dtype=_ST_DTYPES[t.dtype], count=math.prod(t.shape),
                             offset=t.begin).reshape(t.shape)

    def release(self, name: str, first_byte: int = 0, end_byte: Optional[int] = None) -> None:
        """Drops the mapped pages of a tensor (or of its bytes [first_byte, end_byte)) from this
        process; they stay in the page cache. Keeps resident memory independent of the
        checkpoint's size."""
        t = self.tensors[name]
        if self._mm is None or not hasattr(self._mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
            return
        page = mmap.PAGESIZE
        start = (t.begin + first_byte) // page * page
        end = t.end if end_byte is None else min(t.end, t.begin + end_byte)
        if end > start:
            try:
                self._mm.madvise(mmap.MADV_DONTNEED, start, end - start)
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass  # a view is still alive; the mapping goes when it does
            self._mm = None
        self._f.close()


class Checkpoint:
    """All safetensors shards of a model directory, as one name -> tensor map."""

    def __init__(self, model_dir: os.PathLike):
        d = Path(model_dir)
        index = d / "model.safetensors.index.json"
        if index.exists():
            try:
                weight_map = json.loads(index.read_text())["weight_map"]
            except (ValueError, KeyError) as e:
                raise ConvertError(f"{index}: no usable weight_map ({e})") from None
            files = sorted(set(weight_map.values()))
        elif (d / "model.safetensors").exists():
            files = ["model.safetensors"]
        else:
            files = sorted(p.name for p in d.glob("*.safetensors"))
        if not files:
            if list(d.glob("*.bin")) or list(d.glob("*.pt")) or list(d.glob("*.pth")):
                raise ConvertError(f"{d}: only PyTorch pickle weights (*.bin / *.pt) found; this converter reads "
                                   f"safetensors (re-save the model with save_pretrained(safe_serialization=True))")
            raise ConvertError(f"{d}: no safetensors weights (model.safetensors or model.safetensors.index.json)")
        self.files: List[SafetensorsFile] = []
        self.where: Dict[str, SafetensorsFile] = {}
        for name in files:
            if not (d / name).exists():
                raise ConvertError(f"{d / name}: shard listed in the index is missing")
            sf = SafetensorsFile(d / name)
            self.files.append(sf)
            for t in sf.tensors:
                self.where[t] = sf

    def __contains__(self, name: str) -> bool:
        return name in self.where

    def names(self) -> List[str]:
        return list(self.where)

    def info(self, name: str) -> _StTensor:
        return self.where[name].tensors[name]

    def array(self, name: str) -> np.ndarray:
        return self.where[name].array(name)

    def release(self, name: str, first_byte: int = 0, end_byte: Optional[int] = None) -> None:
        self.where[name].release(name, first_byte, end_byte)

    def close(self) -> None:
        for f in self.files:
            f.close()


def _as_f32(a: np.ndarray, st_dtype: str) -> np.ndarray:
    """A chunk of checkpoint values as float32 (BF16 bits widened exactly)."""
    if st_dtype == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32, copy=False)


# ---------------------------------------------------------------------------------------------
# hyperparameters

@dataclass
class HParams:
    n_vocab: int
    n_embd: int
    n_layer: int
    n_ff: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ctx: int
    rms_eps: float
    rope_theta: float
    rope: Dict[str, object]   # rope scaling parameters ({} when none); "rope_type" names it
    tied: bool
    name: str
    arch: str = "llama"             # GGUF general.architecture
    model_type: str = "llama"       # config.json model_type (key of convert_arch.ARCHS)
    n_rot: int = 0                  # rotary dimensions (partial_rotary_factor * head_dim)
    config: Dict[str, object] = field(default_factory=dict)
    model_dir: Optional[Path] = None  # where config.json was read (sentence-transformers modules.json beside it)


def _read_json(path: Path) -> Optional[dict]:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ConvertError(f"{path}: not valid JSON: {e}") from None


def read_hparams(config: dict, model_dir: Path) -> HParams:
    """The hyperparameters of config.json (transformers 4 and 5 spellings)."""
    from . import convert_arch
    mtype, spec = convert_arch.find(config)
    if spec.normalize is not None:
        config = spec.normalize(config)
    act = config.get("hidden_act") or config.get("hidden_activation") or spec.activations[0]
    if act not in spec.activations:
        raise ConvertError(f"config.json: hidden_act '{act}' is not supported ({spec.gguf} uses "
                           f"{', '.join(spec.activations)})")

    def need(key):
        if key not in config or config[key] is None:
            raise ConvertError(f"config.json: missing '{key}'")
        return config[key]

    n_embd = int(need("hidden_size"))
    n_head = int(need("num_attention_heads"))
    n_head_kv = int(config.get("num_key_value_heads") or n_head)
    head_dim = int(config.get("head_dim") or n_embd // n_head)
    if n_head % n_head_kv != 0:
        raise ConvertError(f"config.json: num_attention_heads {n_head} is not a multiple of "
                           f"num_key_value_heads {n_head_kv}")
    if head_dim % 2 != 0:
        raise ConvertError(f"config.json: head size {head_dim} is odd; RoPE needs pairs")
    # transformers 5 folds rope_theta and rope_scaling into rope_parameters
    rp = config.get("rope_parameters")
    rope: Dict[str, object] = {}
    theta = config.get("rope_theta")
    if isinstance(rp, dict) and isinstance(rp.get("full_attention"), dict):
        rp = rp["full_attention"]   # per layer type (gemma3): the global layers' parameters
    if isinstance(rp, dict):
        if "rope_theta" in rp:
            theta = rp["rope_theta"]
        rope = dict(rp)
    if isinstance(config.get("rope_scaling"), dict):
        rope.update(config["rope_scaling"])
    if "type" in rope and "rope_type" not in rope:
        rope["rope_type"] = rope["type"]
    rope.pop("rope_theta", None)
    partial = float(rope.pop("partial_rotary_factor", config.get("partial_rotary_factor") or 1.0))
    if rope.get("rope_type") in (None, "default"):
        rope = {}
    hp = HParams(
        n_vocab=int(need("vocab_size")), n_embd=n_embd, n_layer=int(need("num_hidden_layers")),
        n_ff=int(config.get("intermediate_size") or config.get("moe_intermediate_size") or need("intermediate_size")), n_head=n_head, n_head_kv=n_head_kv, head_dim=head_dim,
        n_ctx=int(config.get("max_position_embeddings") or 2048),
        rms_eps=float(config.get("rms_norm_eps") or 1e-6),
        rope_theta=float(theta if theta is not None else 10000.0), rope=rope,
        tied=bool(config.get("tie_word_embeddings", False)),
        name=str(config.get("_name_or_path") or "") or model_dir.resolve().name,
        arch=spec.gguf, model_type=mtype, n_rot=int(head_dim * partial), config=config, model_dir=model_dir,
    )
    if hp.n_rot % 2 != 0:
        raise ConvertError(f"config.json: {hp.n_rot} rotary dimensions (partial_rotary_factor) is odd")
    if spec.check is not None:
        spec.check(config, hp)
    return hp


def llama3_rope_factors(hp: HParams) -> np.ndarray:
    """Per-frequency divisors of Llama 3.1's "llama3" RoPE scaling (rope_freqs.weight):
    wavelengths shorter than original_context/high_freq_factor stay, longer than
    original_context/low_freq_factor are divided by factor, and the band between is a
    linear blend in original_context/wavelength."""
    r = hp.rope
    factor = float(r.get("factor", 8.0))
    low = float(r.get("low_freq_factor", 1.0))
    high = float(r.get("high_freq_factor", 4.0))
    old_ctx = float(r.get("original_max_position_embeddings", 8192))
    dim = hp.head_dim
    inv_freq = 1.0 / (hp.rope_theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    wavelen = 2 * math.pi / inv_freq
    out = np.empty_like(inv_freq)
    for i, w in enumerate(wavelen):
        if w < old_ctx / high:
            out[i] = 1.0
        elif w > old_ctx / low:
            out[i] = factor
        else:
            smooth = (old_ctx / w - low) / (high - low)
            out[i] = 1.0 / ((1 - smooth) / factor + smooth)
    return out.astype(np.float32)


# ---------------------------------------------------------------------------------------------
# vocabulary

# GGUF token types (the sentencepiece piece types use the same numbers)
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6


@dataclass
class Vocab:
    model: str                      # "llama" (SentencePiece BPE), "t5" (SentencePiece unigram) or "gpt2" (byte-level BPE)
    pre: str                        # tokenizer.ggml.pre
    tokens: List[str]
    types: List[int]
    scores: Optional[List[float]] = None
    merges: Optional[List[str]] = None
    add_space_prefix: Optional[bool] = None
    remove_extra_whitespaces: Optional[bool] = None
    special: Dict[str, int] = field(default_factory=dict)   # "bos" -> id, ...
    add_bos: Optional[bool] = None
    add_eos: Optional[bool] = None
    chat_templates: Dict[str, str] = field(default_factory=dict)  # "" is the default template
    source: str = ""
    flags: Dict[str, bool] = field(default_factory=dict)   # further boolean tokenizer.* keys
    charsmap: Optional[bytes] = None  # unigram: the normalizer's precompiled charsmap


def _token_content(v) -> Optional[str]:
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("content"), str):
        return v["content"]
    return None


def _added_tokens(model_dir: Path, tok_json: Optional[dict], tok_cfg: Optional[dict]) -> Dict[int, Tuple[str, bool]]:
    """id -> (content, special) from tokenizer.json, tokenizer_config.json and added_tokens.json."""
    out: Dict[int, Tuple[str, bool]] = {}
    extra = _read_json(model_dir / "added_tokens.json") or {}
    for content, i in extra.items():
        out[int(i)] = (content, True)
    if tok_cfg and isinstance(tok_cfg.get("added_tokens_decoder"), dict):
        for i, t in tok_cfg["added_tokens_decoder"].items():
            c = _token_content(t)
            if c is not None:
                out[int(i)] = (c, bool(t.get("special", True)) if isinstance(t, dict) else True)
    if tok_json and isinstance(tok_json.get("added_tokens"), list):
        for t in tok_json["added_tokens"]:
            if isinstance(t, dict) and "id" in t and isinstance(t.get("content"), str):
                out[int(t["id"])] = (t["content"], bool(t.get("special", False)))
    return out


def _load_spm(model_dir: Path, n_vocab: int, tok_json, tok_cfg) -> Vocab:
    path = model_dir / "tokenizer.model"
    try:
        from sentencepiece import sentencepiece_model_pb2 as pb2
    except ImportError as e:
        raise ConvertError(f"{path}: reading a SentencePiece model needs the 'sentencepiece' and 'protobuf' "
                           f"packages ({e})") from None
    proto = pb2.ModelProto()
    try:
        proto.ParseFromString(path.read_bytes())
    except Exception as e:  # protobuf's DecodeError
        raise ConvertError(f"{path}: not a SentencePiece model ({e})") from None
    if proto.trainer_spec.model_type not in (pb2.TrainerSpec.BPE, pb2.TrainerSpec.UNIGRAM):
        raise ConvertError(f"{path}: SentencePiece model type {proto.trainer_spec.model_type} is not supported")
    unigram = proto.trainer_spec.model_type == pb2.TrainerSpec.UNIGRAM
    tokens, scores, types = [], [], []
    for p in proto.pieces:
        tokens.append(p.piece)
        scores.append(float(p.score))
        types.append(int(p.type) if 1 <= int(p.type) <= 6 else TOKEN_NORMAL)
    for i, (content, special) in sorted(_added_tokens(model_dir, tok_json, tok_cfg).items()):
        if i < len(tokens):
            if tokens[i] != content:
                tokens[i] = content
                types[i] = TOKEN_CONTROL if special else TOKEN_USER_DEFINED
            continue
        while len(tokens) < i:
            tokens.append(f"[PAD{len(tokens)}]")
            scores.append(-1000.0)
            types.append(TOKEN_UNUSED)
        tokens.append(content)
        scores.append(-1000.0)
        types.append(TOKEN_CONTROL if special else TOKEN_USER_DEFINED)
    ns = proto.normalizer_spec
    if not unigram and ns.name not in ("identity", "") and ns.precompiled_charsmap:
        print(f"warning: {path} normalizes with '{ns.name}'; the GGUF tokenizer does not normalize",
              file=sys.stderr)
    # A unigram model is the "t5" vocabulary type: Viterbi over its scores after its own
    # normalizer (the precompiled charsmap), as sentencepiece encodes.
    return Vocab(model="t5" if unigram else "llama", pre="default", tokens=tokens, scores=scores, types=types,
                 add_space_prefix=bool(ns.add_dummy_prefix),
                 remove_extra_whitespaces=bool(ns.remove_extra_whitespaces), source=str(path),
                 charsmap=bytes(ns.precompiled_charsmap) if unigram and ns.precompiled_charsmap else None)


# Published pre-tokenizer regexes of tokenizer.json files, by GGUF pre type.
_LLAMA3_RE = [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
              r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]
_QWEN2_RE = [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
             r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]
_GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"

SUPPORTED_PRE = ("gpt-2", "llama-bpe", "qwen2", "smollm", "qwen35", "deepseek-v3", "deepseek-llm",
                 "deepseek-coder", "gpt-4o", "tekken", "kimi-k2", "seed-coder", "bailingmoe", "exaone-moe",
                 "jais-2", "superbpe", "minicpm5", "laguna", "youtu", "tiny_aya", "bloom")

def _canon_regex(rx: Optional[str]) -> Optional[str]:
    """A regex with its tab, CR and LF characters written as escapes (tokenizer.json files carry
    both spellings of the same pattern)."""
    return rx.replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n") if rx is not None else None


_C = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_UP, _LO = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_CASE_WORDS = (r"[^\r\n\p{L}\p{N}]?" + _UP + "*" + _LO + "+" + _C + r"?|[^\r\n\p{L}\p{N}]?" + _UP + "+" + _LO + "*"
               + _C + r"?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_DS3_WORDS = (r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
              r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
# The Split regexes (behavior "isolated", in order, then ByteLevel without its own regex) that
# published tokenizer.json files carry, by the GGUF pre name llama.cpp gives them.
_SPLIT_PRE_LIST: Dict[Tuple[str, ...], str] = {
    (_C + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",):
        "qwen35",
    (r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", _DS3_WORDS): "deepseek-v3",
    ("[\r\n]", "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
     "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
     "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
     "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
     "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
     "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
     "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
     "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
     "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
     "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb"
     "\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
     "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", r"\s+$", _CJK, r"\p{N}+"):
        "deepseek-llm",
    ("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK, r"\p{N}"): "deepseek-coder",
    (_CASE_WORDS,): "gpt-4o",
    (r"[^\r\n\p{L}\p{N}]?" + _UP + "*" + _LO + r"+|[^\r\n\p{L}\p{N}]?" + _UP + "+" + _LO
     + r"*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",): "tekken",
    (r"[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
     + _C + r"?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
     + _C + r"?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",): "kimi-k2",
    (_C + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+",): "seed-coder",
    (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",):
        "bailingmoe",
    (_C + r"|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]"
     r"|\s+(?!\S)|\s+",): "exaone-moe",
    (_C + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)"
     r"|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}",):
        "jais-2",
    (r"\p{N}+", r"(?=(\d{3})+(?!\d))"): "superbpe",
    (r"\p{N}{1,3}", _C + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"):
        "minicpm5",
    ("[^\\n]+|[\\n]+", _QWEN2_RE[0]): "laguna",
    ("[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c\u3001-\u303f"
     "\ufe30-\ufe4f]+|[\u3105-\u312f]+|[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
     _CASE_WORDS.replace(r"\p{N}{1,3}", r"\p{N}")): "youtu",
    (r"\d{1,3}(?=(?:\d{3})*\b)", _CASE_WORDS): "tiny_aya",
    (" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+",): "bloom",
}
_SPLIT_PRE = {tuple(_canon_regex(r) for r in k): v for k, v in _SPLIT_PRE_LIST.items()}


def _flatten_pre(pre) -> List[dict]:
    if pre is None:
        return []
    if pre.get("type") == "Sequence":
        out = []
        for p in pre.get("pretokenizers", []):
            out.extend(_flatten_pre(p))
        return out
    return [pre]


def _split_regex(step: dict) -> Optional[str]:
    if step.get("type") != "Split" or step.get("invert", False):
        return None
    if str(step.get("behavior", "")).lower() != "isolated":
        return None
    pat = step.get("pattern") or {}
    return pat.get("Regex") if isinstance(pat, dict) else None


def _byte_level(step: dict, use_regex: bool) -> bool:
    return (step.get("type") == "ByteLevel" and not step.get("add_prefix_space", False)
            and bool(step.get("use_regex", True)) == use_regex)


def detect_bpe_pre(tok_json: dict) -> str:
    """The GGUF pre-tokenizer name of a byte-level BPE tokenizer.json, from its pre_tokenizer
    steps; ConvertError naming the steps when they match no supported type."""
    steps = _flatten_pre(tok_json.get("pre_tokenizer"))
    pre = None
    if len(steps) == 1 and _byte_level(steps[0], True):
        pre = "gpt-2"
    elif (len(steps) == 2 and steps[0].get("type") == "Digits" and steps[0].get("individual_digits")
          and _byte_level(steps[1], True)):
        pre = "smollm"
    elif (len(steps) >= 2 and _byte_level(steps[-1], False)
          and tuple(_canon_regex(_split_regex(s)) for s in steps[:-1]) in _SPLIT_PRE):
        pre = _SPLIT_PRE[tuple(_canon_regex(_split_regex(s)) for s in steps[:-1])]
    elif len(steps) == 2 and _byte_level(steps[1], False):
        rx = _split_regex(steps[0])
        if rx in _LLAMA3_RE:
            pre = "llama-bpe"
        elif rx in _QWEN2_RE:
            pre = "qwen2"
        elif rx == _GPT2_RE:
            pre = "gpt-2"
    elif (len(steps) == 3 and steps[0].get("type") == "Digits" and steps[0].get("individual_digits")
          and _split_regex(steps[1]) == _GPT2_RE and _byte_level(steps[2], False)):
        pre = "smollm"
    if pre is None:
        desc = json.dumps(tok_json.get("pre_tokenizer"), ensure_ascii=False)
        if len(desc) > 600:
            desc = desc[:600] + "..."
        raise ConvertError(f"tokenizer.json: unknown pre-tokenizer {desc}; supported: {', '.join(SUPPORTED_PRE)} "
                           f"(ByteLevel without a prefix space, optionally after a Llama-3 / Qwen2 Split regex "
                           f"or single-digit Digits)")
    norm = tok_json.get("normalizer")
    if norm is not None and not (pre in ("qwen2", "qwen35") and norm.get("type") == "NFC"):
        raise ConvertError(f"tokenizer.json: normalizer {json.dumps(norm)} is not supported for a byte-level BPE "
                           f"vocabulary (the GGUF tokenizer does not normalize)")
    return pre


def _load_bpe(model_dir: Path, n_vocab: int, tok_json: dict, tok_cfg) -> Vocab:
    path = model_dir / "tokenizer.json"
    model = tok_json.get("model") or {}
    if model.get("type") != "BPE":
        raise ConvertError(f"{path}: model type '{model.get('type')}' is not supported (BPE only; "
                           f"SentencePiece models need their tokenizer.model)")
    if model.get("byte_fallback"):
        raise ConvertError(f"{path}: a byte-fallback (SentencePiece-style) BPE needs its tokenizer.model "
                           f"next to it; byte-level BPE is read from tokenizer.json")
    pre = detect_bpe_pre(tok_json)
    vocab = model.get("vocab") or {}
    size = max([n_vocab - 1] + list(vocab.values()))
    added = _added_tokens(model_dir, tok_json, tok_cfg)
    if added:
        size = max(size, max(added))
    tokens: List[Optional[str]] = [None] * (size + 1)
    types = [TOKEN_NORMAL] * (size + 1)
    for tok, i in vocab.items():
        tokens[i] = tok
    for i, (content, special) in added.items():
        tokens[i] = content
        types[i] = TOKEN_CONTROL if special else TOKEN_USER_DEFINED
    for i, t in enumerate(tokens):
        if t is None:
            tokens[i] = f"[PAD{i}]"
            types[i] = TOKEN_UNUSED
    merges = []
    for m in model.get("merges") or []:
        if isinstance(m, str):
            merges.append(m)
        elif isinstance(m, (list, tuple)) and len(m) == 2:
            if " " in m[0] or " " in m[1]:
                raise ConvertError(f"{path}: merge {m} contains a space, which GGUF merges cannot express")
            merges.append(f"{m[0]} {m[1]}")
        else:
            raise ConvertError(f"{path}: malformed merge entry {m!r}")
    return Vocab(model="gpt2", pre=pre, tokens=tokens, types=types, merges=merges, source=str(path))


def _post_processor_special(tok_json: Optional[dict]) -> Tuple[Optional[bool], Optional[bool], Dict[str, int]]:
    """(add_bos, add_eos, {"bos"/"eos": id}) from a TemplateProcessing post-processor; Nones when
    tokenizer.json has no post-processor."""
    if not tok_json or tok_json.get("post_processor") is None:
        return None, None, {}
    pp = tok_json["post_processor"]
    procs = pp.get("processors", []) if pp.get("type") == "Sequence" else [pp]
    for p in procs:
        if p.get("type") != "TemplateProcessing":
            continue
        single = p.get("single") or []
        ids = {}
        specials = p.get("special_tokens") or {}

        def sid(item):
            name = item["SpecialToken"]["id"]
            got = (specials.get(name) or {}).get("ids") or []
            return got[0] if len(got) == 1 else None
        bos = bool(single) and "SpecialToken" in single[0]
        eos = len(single) > 1 and "SpecialToken" in single[-1]
        if bos and sid(single[0]) is not None:
            ids["bos"] = sid(single[0])
        if eos and sid(single[-1]) is not None:
            ids["eos"] = sid(single[-1])
        return bos, eos, ids
    # a post-processor that adds no template (ByteLevel offsets, ...) says nothing about BOS:
    # the tokenizer class's own default decides (load_vocab)
    return None, None, {}


def _chat_templates(model_dir: Path, tok_cfg: Optional[dict]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    ct = (tok_cfg or {}).get("chat_template")
    cj = _read_json(model_dir / "chat_template.json")
    if cj and cj.get("chat_template") is not None:
        ct = cj["chat_template"]
    if isinstance(ct, str):
        out[""] = ct
    elif isinstance(ct, list):
        for t in ct:
            if isinstance(t, dict) and isinstance(t.get("template"), str):
                out["" if t.get("name") == "default" else str(t.get("name"))] = t["template"]
    jinja = model_dir / "chat_template.jinja"
    if jinja.exists():
        out[""] = jinja.read_text(encoding="utf-8")
    templates_dir = model_dir / "additional_chat_templates"
    if templates_dir.is_dir():
        for p in sorted(templates_dir.glob("*.jinja")):
            out[p.stem] = p.read_text(encoding="utf-8")
    return out


def load_vocab(model_dir: os.PathLike, n_vocab: int, config: Optional[dict] = None) -> Vocab:
    """The GGUF vocabulary of a model directory, padded with [PADi] to n_vocab entries."""
    d = Path(model_dir)
    tok_json = _read_json(d / "tokenizer.json")
    tok_cfg = _read_json(d / "tokenizer_config.json")
    if tok_json is not None and (tok_json.get("model") or {}).get("type") == "WordPiece":
        from .convert_encoder import load_wpm
        v = load_wpm(d, n_vocab, tok_json, tok_cfg)
        if len(v.tokens) != n_vocab:
            raise ConvertError(f"{v.source}: the tokenizer has {len(v.tokens)} tokens but the model's embedding "
                               f"has {n_vocab} rows (config.json vocab_size)")
        return v
    if (d / "tokenizer.model").exists():
        v = _load_spm(d, n_vocab, tok_json, tok_cfg)
    elif tok_json is not None:
        v = _load_bpe(d, n_vocab, tok_json, tok_cfg)
    else:
        raise ConvertError(f"{d}: no tokenizer (tokenizer.model for SentencePiece, tokenizer.json for BPE)")
    if len(v.tokens) > n_vocab:
        raise ConvertError(f"{v.source}: the tokenizer has {len(v.tokens)} tokens but the model's embedding "
                           f"has {n_vocab} rows (config.json vocab_size)")
    while len(v.tokens) < n_vocab:
        v.tokens.append(f"[PAD{len(v.tokens)}]")
        v.types.append(TOKEN_UNUSED)
        if v.scores is not None:
            v.scores.append(-1000.0)

    # special tokens: tokenizer_config.json strings, then the post-processor, then the model configs
    index = {t: i for i, t in enumerate(v.tokens)}
    pp_bos, pp_eos, pp_ids = _post_processor_special(tok_json)
    gen = _read_json(d / "generation_config.json") or {}
    for kind in ("bos", "eos", "unk", "pad"):
        content = _token_content((tok_cfg or {}).get(f"{kind}_token"))
        tid = index.get(content) if content is not None else None
        if tid is None:
            tid = pp_ids.get(kind)
        if tid is None:
            for src in (gen, config or {}):
                val = src.get(f"{kind}_token_id")
                if isinstance(val, list) and val:
                    val = val[0]
                if isinstance(val, int) and 0 <= val < n_vocab:
                    tid = val
                    break
        if tid is None and kind == "unk" and v.model in ("llama", "t5"):
            tid = next((i for i, t in enumerate(v.types) if t == TOKEN_UNKNOWN), None)
        if tid is not None:
            v.special[kind] = int(tid)
    cfg_bos = (tok_cfg or {}).get("add_bos_token")
    cfg_eos = (tok_cfg or {}).get("add_eos_token")
    v.add_bos = cfg_bos if isinstance(cfg_bos, bool) else pp_bos
    v.add_eos = cfg_eos if isinstance(cfg_eos, bool) else pp_eos
    if v.add_bos is None and v.model == "llama":
        v.add_bos = True   # sentencepiece Llama tokenizers prepend BOS unless told otherwise
    if v.add_eos is None and v.model == "llama":
        v.add_eos = False
    v.chat_templates = _chat_templates(d, tok_cfg)
    return v


# ---------------------------------------------------------------------------------------------
# tensor plan

# GGUF tensor types (ggml_type ids) and file types (llama_ftype)
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16, GGML_MXFP4 = 0, 1, 8, 30, 39
OUTTYPES = {"f32": (GGML_F32, 0), "f16": (GGML_F16, 1), "bf16": (GGML_BF16, 32), "q8_0": (GGML_Q8_0, 7)}
_TYPE_NAMES = {GGML_F32: "f32", GGML_F16: "f16", GGML_Q8_0: "q8_0", GGML_BF16: "bf16", GGML_MXFP4: "mxfp4"}


@dataclass
class TensorJob:
    name: str                       # GGUF name
    src: Optional[str]              # checkpoint name (None: computed, see data)
    shape: Tuple[int, ...]          # NumPy shape (rows, cols) or (n,)
    type: int                       # ggml type written
    perm_heads: int = 0             # > 0: permute rows per head for GGUF RoPE (q: n_head, k: n_head_kv)
    data: Optional[np.ndarray] = None
    add: float = 0.0                # added to every value (Gemma's norms: the GGUF holds 1 + w)
    srcs: Tuple[str, ...] = ()      # experts: these checkpoint tensors stacked along a new first axis
    fn: Optional[Callable[[np.ndarray], np.ndarray]] = None  # whole f32 tensor -> GGUF values (qwen35)
    # checkpoint data already in a ggml block type (gpt-oss's MXFP4 experts): (checkpoint) -> the
    # tensor's bytes in chunks, written unchanged (no requantization)
    raw: Optional[Callable[["Checkpoint"], Iterable[np.ndarray]]] = None


def qk_row_permutation(n_rows: int, n_heads: int) -> np.ndarray:
    """perm such that gguf_rows = hf_rows[perm]: each head's two rotary halves interleaved into pairs."""
    hd = n_rows // n_heads
    return np.arange(n_rows).reshape(n_heads, 2, hd // 2).swapaxes(1, 2).reshape(-1)


_LAYER_MAP = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
# checkpoint entries that carry no weights the GGUF needs
_IGNORED = re.compile(r"(^|\.)rotary_emb\.inv_freq$|(^|\.)masked_bias$")


def jobs_for(want: Dict[str, Optional[Tuple[str, Tuple[int, ...], int, float]]], unknown: List[str], ck: Checkpoint,
             ftype: int, arch: str, fns: Optional[Dict[str, Tuple[Callable, Tuple[int, ...]]]] = None) -> List[TensorJob]:
    """The jobs of want (checkpoint name -> (GGUF name, shape, perm heads, value added), or None
    for a tensor present but not used), each checked against the checkpoint; fns: checkpoint name
    -> (transform, checkpoint shape) for tensors written transformed; unknown: checkpoint tensors
    nothing uses (an error). A key "name::tag" is checkpoint tensor name giving one of several
    GGUF tensors (gpt-oss's fused experts)."""
    fns = fns or {}
    if unknown:
        more = f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""
        raise ConvertError(f"checkpoint tensors not used by the {arch} architecture: {', '.join(unknown[:8])}{more}")
    jobs: List[TensorJob] = []
    for src, entry in want.items():
        if entry is None:
            continue   # present in some checkpoints, not used (the architecture's tensors hook says so)
        name, shape, perm, add = entry
        key, src = src, src.split("::", 1)[0]
        if src not in ck:
            if src == "lm_head.weight":
                continue
            raise ConvertError(f"checkpoint has no tensor '{src}' (needed for {name})")
        got = ck.info(src).shape
        if tuple(got) != (fns[key][1] if key in fns else shape):
            raise ConvertError(f"checkpoint tensor '{src}' has shape {list(got)}, expected {list(shape)} from config.json")
        if len(shape) == 1 or name.endswith(("ssm_conv1d.weight", "_exps.bias")):
            t = GGML_F32   # read by elementwise ops (the convolution taps, expert biases too)
        elif ftype == GGML_Q8_0 and shape[-1] % 32 != 0:
            print(f"note: {name} has rows of {shape[-1]} (not a multiple of 32); written as f16", file=sys.stderr)
            t = GGML_F16
        else:
            t = ftype
        jobs.append(TensorJob(name, src, shape, t, perm, add=add, fn=fns[key][0] if key in fns else None))
    return jobs


def plan_tensors(hp: HParams, ck: Checkpoint, ftype: int) -> List[TensorJob]:
    from . import convert_arch
    spec = convert_arch.ARCHS[hp.model_type]
    if spec.plan is not None:
        return spec.plan(hp, ck, ftype)   # encoders (convert_encoder.py)
    prefix = "model." if "model.embed_tokens.weight" in ck else ""
    # src -> (gguf name, shape, perm heads, value added), or None: a tensor not used
    want: Dict[str, Optional[Tuple[str, Tuple[int, ...], int, float]]] = {}
    fns: Dict[str, Tuple[Callable, Tuple[int, ...]]] = {}   # src -> (transform, checkpoint shape)
    want[prefix + "embed_tokens.weight"] = ("token_embd.weight", (hp.n_vocab, hp.n_embd), 0, 0.0)
    perm_of = {"q": hp.n_head, "k": hp.n_head_kv, "": 0}
    for il in range(hp.n_layer):
        for hf, lt in (spec.layer_for(hp, il) if spec.layer_for else spec.layer).items():
            src = f"{prefix}layers.{il}.{hf}"
            want[src] = (f"blk.{il}.{lt.gguf}", convert_arch.shape(lt.shape, hp), perm_of[lt.perm], lt.add)
            if lt.fn is not None:
                fns[src] = (lambda a, f=lt.fn: f(a, hp), convert_arch.shape(lt.src_shape or lt.shape, hp))
    computed = []
    if spec.tensors is not None:
        more, computed = spec.tensors(hp, prefix)
        want.update(more)
    want[prefix + "norm.weight"] = ("output_norm.weight", (hp.n_embd,), 0, spec.final_norm_add)
    has_head = "lm_head.weight" in ck
    if has_head and not hp.tied:
        want["lm_head.weight"] = ("output.weight", (hp.n_vocab, hp.n_embd), 0, 0.0)

    experts = convert_arch.expert_tensors(spec, hp, prefix)
    stacked = {src for _, srcs, _ in experts for src in srcs}
    # "name::tag" keys: one checkpoint tensor giving several GGUF ones (gpt-oss's fused experts)
    used = {k.split("::", 1)[0] for k in want}
    unknown = [n for n in ck.names() if n not in used and n not in stacked and not _IGNORED.search(n)
               and not (n == "lm_head.weight" and hp.tied)]
    raw_jobs, raw_used = spec.raw(hp, ck, prefix) if spec.raw is not None else ([], set())
    unknown = [n for n in unknown if n not in raw_used]
    jobs = jobs_for(want, unknown, ck, ftype, hp.arch, fns) + raw_jobs
    for name, srcs, shape in experts:
        for src in srcs:
            if src not in ck:
                raise ConvertError(f"checkpoint has no tensor '{src}' (needed for {name})")
            if tuple(ck.info(src).shape) != shape[1:]:
                raise ConvertError(f"checkpoint tensor '{src}' has shape {list(ck.info(src).shape)}, "
                                   f"expected {list(shape[1:])} from config.json")
        t = GGML_F16 if ftype == GGML_Q8_0 and shape[-1] % 32 != 0 else ftype
        jobs.append(TensorJob(name, None, shape, t, srcs=tuple(srcs)))
    for name, data in computed:
        jobs.append(TensorJob(name, None, data.shape, GGML_F32, data=data))
    if hp.rope.get("rope_type") == "llama3":
        jobs.append(TensorJob("rope_freqs.weight", None, (hp.head_dim // 2,), GGML_F32,
                              data=llama3_rope_factors(hp)))
    if hp.rope.get("rope_type") == "longrope":
        for kind in ("long", "short"):
            f = np.asarray(hp.rope.get(f"{kind}_factor") or [], dtype=np.float32)
            if f.shape != (hp.n_rot // 2,):
                raise ConvertError(f"config.json: longrope {kind}_factor has {f.size} values, expected {hp.n_rot // 2}")
            jobs.append(TensorJob(f"rope_factors_{kind}.weight", None, f.shape, GGML_F32, data=f))
    return jobs


# ---------------------------------------------------------------------------------------------
# GGUF writing

def _row_bytes(ggml_type: int, n: int) -> int:
    if ggml_type == GGML_F32:
        return 4 * n
    if ggml_type in (GGML_F16, GGML_BF16):
        return 2 * n
    if ggml_type == GGML_Q8_0:
        return n // 32 * 34
    raise AssertionError(ggml_type)


class _Encoder:
    """Float32 row chunks -> bytes of a ggml type, through the library's converters."""

    def __init__(self):
        from . import ggml as G
        self.G = G
        traits = G.ggml_get_type_traits(GGML_Q8_0)
        if not traits or not traits.contents.from_float_ref:
            raise ConvertError("the library has no q8_0 quantizer (ggml_get_type_traits(Q8_0).from_float_ref)")
        self.q8_0 = traits.contents.from_float_ref
        if G.ggml_row_size(GGML_Q8_0, 32) != 34:
            raise ConvertError("the library's q8_0 block is not 34 bytes per 32 values")

    def encode(self, x: np.ndarray, ggml_type: int) -> np.ndarray:
        """The bytes of x in ggml_type, as a flat uint8 array (written without another copy)."""
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        if ggml_type == GGML_F32:
            return x.view(np.uint8)
        if ggml_type == GGML_F16:
            return x.astype("<f2").view(np.uint8)
        out = np.empty(_row_bytes(ggml_type, x.size), np.uint8)
        # plain addresses: ctypes.cast of a ctypes buffer makes a reference cycle per call,
        # and the buffers then pile up until the cycle collector runs
        src = ctypes.cast(x.ctypes.data, ctypes.POINTER(ctypes.c_float))
        if ggml_type == GGML_BF16:
            self.G.ggml_fp32_to_bf16_row(src, out.ctypes.data, x.size)
        else:
            self.q8_0(src, out.ctypes.data, x.size)
        return out


def _set_metadata(G, g, hp: HParams, vocab: Vocab, file_type: int, name: str) -> None:
    def s(key, val):
        G.gguf_set_val_str(g, key.encode(), val.encode("utf-8"))

    def u32(key, val):
        G.gguf_set_val_u32(g, key.encode(), int(val))

    def f32(key, val):
        G.gguf_set_val_f32(g, key.encode(), float(val))

    def b(key, val):
        G.gguf_set_val_bool(g, key.encode(), bool(val))

    def arr_str(key, vals: Sequence[str]):
        enc = [v.encode("utf-8", "surrogatepass") for v in vals]
        G.gguf_set_arr_str(g, key.encode(), (ctypes.c_char_p * len(enc))(*enc), len(enc))

    def arr_num(key, vals, gtype, dtype):
        a = np.ascontiguousarray(np.asarray(vals, dtype=dtype))
        G.gguf_set_arr_data(g, key.encode(), gtype, a.ctypes.data, a.size)

    from . import convert_arch
    spec = convert_arch.ARCHS[hp.model_type]
    a = hp.arch
    s("general.architecture", a)
    s("general.name", name)
    u32("general.file_type", file_type)
    u32("general.quantization_version", 2)
    u32(f"{a}.context_length", hp.n_ctx)
    u32(f"{a}.embedding_length", hp.n_embd)
    u32(f"{a}.block_count", hp.n_layer)
    u32(f"{a}.feed_forward_length", hp.n_ff)
    u32(f"{a}.attention.head_count", hp.n_head)
    u32(f"{a}.attention.head_count_kv", hp.n_head_kv)
    if spec.write_head_dim or hp.head_dim != hp.n_embd // hp.n_head:
        u32(f"{a}.attention.key_length", hp.head_dim)
        u32(f"{a}.attention.value_length", hp.head_dim)
    u32(f"{a}.rope.dimension_count", hp.n_rot or hp.head_dim)
    f32(f"{a}.rope.freq_base", hp.rope_theta)
    f32(f"{a}.attention.layer_norm_rms_epsilon", hp.rms_eps)
    u32(f"{a}.vocab_size", hp.n_vocab)
    rt = hp.rope.get("rope_type")
    if rt in ("linear", "yarn"):
        factor = hp.rope.get("factor")
        if not isinstance(factor, (int, float)) or factor <= 0:
            raise ConvertError(f"config.json: rope scaling '{rt}' needs a positive factor, got {factor!r}")
        s(f"{a}.rope.scaling.type", rt)
        f32(f"{a}.rope.scaling.factor", factor)
        orig = hp.rope.get("original_max_position_embeddings")
        if rt == "yarn" and orig:
            u32(f"{a}.rope.scaling.original_context_length", orig)
    elif rt == "longrope" and a == "phi3":
        pass  # factors as tensors, the rest in the architecture's keys
    elif rt not in (None, "llama3"):
        raise ConvertError(f"config.json: rope scaling type '{rt}' is not supported for {a} (linear, yarn, llama3"
                           f"{', longrope' if a == 'phi3' else ''})")
    for suffix, kind, val in (spec.keys(hp.config, hp) if spec.keys else []):
        if kind == "u32[]":
            arr_num(f"{a}.{suffix}", val, G.GGUF_TYPE_UINT32, np.uint32)
        elif kind == "bool[]":
            arr_num(f"{a}.{suffix}", val, G.GGUF_TYPE_BOOL, np.uint8)
        else:
            {"u32": u32, "f32": f32, "bool": b}[kind](f"{a}.{suffix}", val)

    s("tokenizer.ggml.model", vocab.model)
    s("tokenizer.ggml.pre", vocab.pre)
    arr_str("tokenizer.ggml.tokens", vocab.tokens)
    if vocab.scores is not None:
        arr_num("tokenizer.ggml.scores", vocab.scores, G.GGUF_TYPE_FLOAT32, np.float32)
    arr_num("tokenizer.ggml.token_type", vocab.types, G.GGUF_TYPE_INT32, np.int32)
    if vocab.charsmap:
        arr_num("tokenizer.ggml.precompiled_charsmap", np.frombuffer(vocab.charsmap, np.uint8), G.GGUF_TYPE_UINT8,
                np.uint8)
    if vocab.merges is not None:
        arr_str("tokenizer.ggml.merges", vocab.merges)
    keys = {"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id", "pad": "padding_token_id",
            "cls": "cls_token_id", "sep": "seperator_token_id", "mask": "mask_token_id"}
    for kind, tid in vocab.special.items():
        u32(f"tokenizer.ggml.{keys[kind]}", tid)
    if vocab.add_bos is not None:
        b("tokenizer.ggml.add_bos_token", vocab.add_bos)
    if vocab.add_eos is not None:
        b("tokenizer.ggml.add_eos_token", vocab.add_eos)
    if vocab.add_space_prefix is not None:
        b("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix)
    if vocab.remove_extra_whitespaces:
        b("tokenizer.ggml.remove_extra_whitespaces", True)
    for key, val in vocab.flags.items():
        b(key, val)
    if spec.meta is not None:
        spec.meta({"s": s, "u32": u32, "f32": f32, "b": b, "arr_str": arr_str}, hp)
    for tname, text in vocab.chat_templates.items():
        s("tokenizer.chat_template" + (f".{tname}" if tname else ""), text)


Progress = Callable[[int, int, TensorJob, float], None]


def _print_progress(i: int, n: int, job: TensorJob, seconds: float) -> None:
    shape = "x".join(str(d) for d in job.shape)
    print(f"[{i + 1:>4}/{n}] {job.name:<32} {shape:<14} -> {_TYPE_NAMES[job.type]:<5} {seconds * 1000:7.1f} ms",
          flush=True)


def convert(model_dir: os.PathLike, outfile: os.PathLike, outtype: str = "f16",
            progress: Optional[Progress] = _print_progress, chunk_bytes: int = 16 << 20) -> Dict[str, object]:
    """Converts a Hugging Face Llama directory into a GGUF file; returns a summary dict
    (tensors, bytes, seconds). Raises ConvertError for anything it cannot convert."""
    from . import ggml as G
    t0 = time.perf_counter()
    d = Path(model_dir)
    if outtype not in OUTTYPES:
        raise ConvertError(f"--outtype {outtype!r} is not one of {', '.join(OUTTYPES)}")
    ftype, file_type = OUTTYPES[outtype]
    config = _read_json(d / "config.json")
    if config is None:
        raise ConvertError(f"{d}: no config.json")
    hp = read_hparams(config, d)
    vocab = load_vocab(d, hp.n_vocab, config)
    ck = Checkpoint(d)
    tmp = Path(str(outfile) + ".part")
    g = mctx = None
    try:
        jobs = plan_tensors(hp, ck, ftype)
        enc = _Encoder()
        g = G.gguf_init_empty()
        if not g:
            raise ConvertError("gguf_init_empty failed")
        _set_metadata(G, g, hp, vocab, file_type, hp.name)
        # tensor descriptions only (no data): the GGUF context takes name, type and shape
        mctx = G.ggml_init(G.ggml_init_params(mem_size=(len(jobs) + 1) * G.ggml_tensor_overhead(),
                                              mem_buffer=None, no_alloc=True))
        if not mctx:
            raise ConvertError("ggml_init failed")
        for job in jobs:
            ne = list(reversed(job.shape))
            t = G.ggml_new_tensor(mctx, job.type, len(ne), (ctypes.c_int64 * len(ne))(*ne))
            if not t:
                raise ConvertError(f"ggml_new_tensor failed for {job.name}")
            G.ggml_set_name(t, job.name.encode())
            G.gguf_add_tensor(g, t)
        if G.gguf_get_n_tensors(g) != len(jobs):
            raise ConvertError("gguf_add_tensor refused a tensor (see the log above)")
        meta_size = G.gguf_get_meta_size(g)
        meta = ctypes.create_string_buffer(meta_size)
        G.gguf_get_meta_data(g, meta)
        alignment = G.gguf_get_alignment(g)
        total = meta_size
        with open(tmp, "wb") as f:
            f.write(meta.raw)
            for i, job in enumerate(jobs):
                t1 = time.perf_counter()
                tid = G.gguf_find_tensor(g, job.name.encode())
                want_at = meta_size + G.gguf_get_tensor_offset(g, tid)
                if f.tell() > want_at:
                    raise ConvertError(f"internal: {job.name} offset {want_at} is behind the file position {f.tell()}")
                f.write(b"\0" * (want_at - f.tell()))
                n_written = _write_tensor(f, job, ck, enc, chunk_bytes)
                if n_written != G.gguf_get_tensor_size(g, tid):
                    raise ConvertError(f"internal: wrote {n_written} bytes for {job.name}, "
                                       f"GGUF expects {G.gguf_get_tensor_size(g, tid)}")
                if job.src is not None:
                    ck.release(job.src)
                if progress is not None:
                    progress(i, len(jobs), job, time.perf_counter() - t1)
            f.write(b"\0" * (-f.tell() % alignment))
            total = f.tell()
        os.replace(tmp, outfile)
    finally:
        if g:
            G.gguf_free(g)
        if mctx:
            G.ggml_free(mctx)
        ck.close()
        if tmp.exists():
            tmp.unlink()
    return {"tensors": len(jobs), "bytes": total, "seconds": time.perf_counter() - t0,
            "vocab": vocab.model, "pre": vocab.pre, "n_vocab": hp.n_vocab}


def _write_tensor(f, job: TensorJob, ck: Checkpoint, enc: _Encoder, chunk_bytes: int) -> int:
    if job.raw is not None:
        n = 0
        for chunk in job.raw(ck):
            f.write(chunk)
            n += chunk.nbytes
        return n
    if job.data is not None:
        data = enc.encode(job.data, job.type)
        f.write(data)
        return data.nbytes
    if job.srcs:
        # experts stacked in GGUF dim 2: expert after expert, each one's rows in order
        n = 0
        for src in job.srcs:
            n += _write_rows(f, src, job, ck, enc, chunk_bytes)
            ck.release(src)
        return n
    return _write_rows(f, job.src, job, ck, enc, chunk_bytes)


def _write_rows(f, name: str, job: TensorJob, ck: Checkpoint, enc: _Encoder, chunk_bytes: int) -> int:
    src = ck.array(name)
    st_dtype = ck.info(name).dtype
    if job.fn is not None:  # reordered or recomputed as a whole (small DeltaNet tensors, a few MB at most)
        data = enc.encode(np.ascontiguousarray(job.fn(_as_f32(src, st_dtype)) + np.float32(job.add), dtype=np.float32),
                          job.type)
        f.write(data)
        return data.nbytes
    if src.ndim == 1:
        data = enc.encode(_as_f32(src, st_dtype) + np.float32(job.add), job.type)
        f.write(data)
        return data.nbytes
    if src.ndim > 2:   # stacked experts stored as one 3-D tensor (gemma4): expert after expert
        src = src.reshape(-1, src.shape[-1])
    rows, cols = src.shape
    perm = qk_row_permutation(rows, job.perm_heads) if job.perm_heads else None
    step = max(1, chunk_bytes // max(1, cols * 4))
    n = 0
    for r0 in range(0, rows, step):
        idx = slice(r0, min(rows, r0 + step)) if perm is None else perm[r0:r0 + step]
        chunk = src[idx]
        if job.type == GGML_BF16 and st_dtype == "BF16":
            data = np.ascontiguousarray(chunk).reshape(-1).view(np.uint8)   # same bits: no rounding twice
        else:
            data = enc.encode(_as_f32(chunk, st_dtype), job.type)
        f.write(data)
        n += data.nbytes
        if perm is None:  # rows done with: let their pages go (the kernel would keep them resident)
            ck.release(name, r0 * cols * src.itemsize, min(rows, r0 + step) * cols * src.itemsize)
    return n


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import Parser
    p = Parser(prog="python -m llama_py convert",
                                description="convert a Hugging Face Llama checkpoint (safetensors) to GGUF")
    p.add_argument("model_dir", nargs="?", help="directory with config.json, *.safetensors and the tokenizer files")
    p.add_argument("--lora", metavar="PEFT_DIR", default=None,
                   help="convert this PEFT LoRA adapter instead (llama.cpp's LoRA GGUF); needs --base")
    p.add_argument("--base", metavar="HF_DIR", default=None, help="with --lora: the base model's Hugging Face folder")
    p.add_argument("--outfile", default=None, help="output GGUF (default: MODEL_DIR/<name>-<outtype>.gguf)")
    p.add_argument("--outtype", default="f16", choices=list(OUTTYPES), help="type of 2-D weights (default f16)")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-tensor progress")
    a = p.parse_args(argv)
    if a.lora is not None:
        return _main_lora(p, a)
    if a.model_dir is None:
        p.error("MODEL_DIR is required (or --lora PEFT_DIR --base HF_DIR)")
    out = a.outfile or str(Path(a.model_dir) / f"{Path(a.model_dir).resolve().name}-{a.outtype}.gguf")
    try:
        r = convert(a.model_dir, out, a.outtype, progress=None if a.quiet else _print_progress)
    except ConvertError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}: {r['tensors']} tensors, {r['bytes'] / 2**20:.1f} MiB, vocab {r['vocab']}/{r['pre']} "
          f"({r['n_vocab']} tokens), {r['seconds']:.1f} s", file=sys.stderr)
    return 0


def _main_lora(p: argparse.ArgumentParser, a) -> int:
    from .convert_lora import convert_lora
    if a.base is None:
        p.error("--lora needs --base HF_DIR (the base model's folder, for its architecture and shapes)")
    out = a.outfile or str(Path(a.lora) / f"{Path(a.lora).resolve().name}-{a.outtype}.gguf")
    try:
        r = convert_lora(a.lora, a.base, out, a.outtype)
    except ConvertError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}: LoRA for {r['arch']}, {r['matrices']} matrices, rank {r['rank']}, alpha {r['alpha']:g}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
