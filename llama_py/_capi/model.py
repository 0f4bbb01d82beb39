"""llama.h mirror, models section: llama_model_params, loading and freeing, the accessors and
the metadata functions (src/model.c). llama_cpp.py re-exports everything here.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_bool, c_char_p, c_float, c_int, c_int32, c_size_t, c_uint32, c_uint64, c_void_p
from typing import Optional

from .._lib import ctypes_function
from .common import (llama_model_p_ctypes, llama_progress_callback, llama_token, llama_vocab_p_ctypes)
from .extra import llama_model_kv_override


class llama_model_params(Structure):
    """Model loading options; start from llama_model_default_params().

    Fields, in llama.h order: devices, tensor_buft_overrides, n_gpu_layers, split_mode,
    load_mode (AUTO = mmap, NONE = read into memory, MLOCK variants lock the pages), lazy_mode,
    main_gpu, tensor_split, progress_callback (return False to cancel the load),
    progress_callback_user_data, kv_overrides (array ended by an entry with an empty key),
    vocab_only, check_tensors (scan weights for NaN/inf), use_extra_bufts, no_host, no_alloc,
    load_mtp. Keep the callback object and the kv_overrides array alive while loading.
    """
    _fields_ = [
        ("devices", c_void_p),
        ("tensor_buft_overrides", c_void_p),
        ("n_gpu_layers", c_int32),
        ("split_mode", c_int),
        ("load_mode", c_int),
        ("lazy_mode", c_int),
        ("main_gpu", c_int32),
        ("tensor_split", POINTER(c_float)),
        ("progress_callback", llama_progress_callback),
        ("progress_callback_user_data", c_void_p),
        ("kv_overrides", POINTER(llama_model_kv_override)),
        ("vocab_only", c_bool),
        ("check_tensors", c_bool),
        ("use_extra_bufts", c_bool),
        ("no_host", c_bool),
        ("no_alloc", c_bool),
        ("load_mtp", c_bool),
    ]


# struct llama_model_params llama_model_default_params(void);
@ctypes_function("llama_model_default_params", [], llama_model_params)
def llama_model_default_params() -> llama_model_params:
    """Default model parameters (mmap, all layers, no callbacks)."""


# struct llama_model * llama_model_load_from_file(const char * path_model, struct llama_model_params params);
@ctypes_function("llama_model_load_from_file", [c_char_p, llama_model_params], llama_model_p_ctypes)
def llama_model_load_from_file(path_model: bytes, params: llama_model_params, /) -> Optional[int]:
    """Loads a GGUF model; None (reason logged) on failure. Free with llama_model_free."""


# void llama_model_free(struct llama_model * model);
@ctypes_function("llama_model_free", [llama_model_p_ctypes], None)
def llama_model_free(model, /):
    """Frees the model; NULL-safe. Free its contexts first."""


# const struct llama_vocab * llama_model_get_vocab(const struct llama_model * model);
@ctypes_function("llama_model_get_vocab", [llama_model_p_ctypes], llama_vocab_p_ctypes)
def llama_model_get_vocab(model, /) -> Optional[int]:
    """The model's vocabulary (owned by the model)."""


# enum llama_rope_type llama_model_rope_type(const struct llama_model * model);
@ctypes_function("llama_model_rope_type", [llama_model_p_ctypes], c_int)
def llama_model_rope_type(model, /) -> int:
    """RoPE layout (LLAMA_ROPE_TYPE_NORM for llama)."""


# int32_t llama_model_n_ctx_train(const struct llama_model * model);
@ctypes_function("llama_model_n_ctx_train", [llama_model_p_ctypes], c_int32)
def llama_model_n_ctx_train(model, /) -> int:
    """Training context length."""


# int32_t llama_model_n_embd(const struct llama_model * model);
@ctypes_function("llama_model_n_embd", [llama_model_p_ctypes], c_int32)
def llama_model_n_embd(model, /) -> int:
    """Embedding width."""


# int32_t llama_model_n_embd_inp(const struct llama_model * model);
@ctypes_function("llama_model_n_embd_inp", [llama_model_p_ctypes], c_int32)
def llama_model_n_embd_inp(model, /) -> int:
    """Input embedding width."""


# int32_t llama_model_n_embd_out(const struct llama_model * model);
@ctypes_function("llama_model_n_embd_out", [llama_model_p_ctypes], c_int32)
def llama_model_n_embd_out(model, /) -> int:
    """Output embedding width."""


# int32_t llama_model_n_layer(const struct llama_model * model);
@ctypes_function("llama_model_n_layer", [llama_model_p_ctypes], c_int32)
def llama_model_n_layer(model, /) -> int:
    """Number of layers."""


# int32_t llama_model_n_layer_nextn(const struct llama_model * model);
@ctypes_function("llama_model_n_layer_nextn", [llama_model_p_ctypes], c_int32)
def llama_model_n_layer_nextn(model, /) -> int:
    """Next-token-prediction layers (0)."""


# int32_t llama_model_n_head(const struct llama_model * model);
@ctypes_function("llama_model_n_head", [llama_model_p_ctypes], c_int32)
def llama_model_n_head(model, /) -> int:
    """Attention heads."""


# int32_t llama_model_n_head_kv(const struct llama_model * model);
@ctypes_function("llama_model_n_head_kv", [llama_model_p_ctypes], c_int32)
def llama_model_n_head_kv(model, /) -> int:
    """Key/value heads."""


# int32_t llama_model_n_swa(const struct llama_model * model);
@ctypes_function("llama_model_n_swa", [llama_model_p_ctypes], c_int32)
def llama_model_n_swa(model, /) -> int:
    """Sliding-window size (0: none)."""


# float llama_model_rope_freq_scale_train(const struct llama_model * model);
@ctypes_function("llama_model_rope_freq_scale_train", [llama_model_p_ctypes], c_float)
def llama_model_rope_freq_scale_train(model, /) -> float:
    """RoPE frequency scale the model was trained with."""


# uint32_t llama_model_n_cls_out(const struct llama_model * model);
@ctypes_function("llama_model_n_cls_out", [llama_model_p_ctypes], c_uint32)
def llama_model_n_cls_out(model, /) -> int:
    """Classifier outputs (0)."""


# const char * llama_model_cls_label(const struct llama_model * model, uint32_t i);
@ctypes_function("llama_model_cls_label", [llama_model_p_ctypes, c_uint32], c_char_p)
def llama_model_cls_label(model, i: int, /) -> Optional[bytes]:
    """Classifier label i (None)."""


# int32_t llama_model_meta_val_str(const struct llama_model * model, const char * key, char * buf, size_t buf_size);
@ctypes_function("llama_model_meta_val_str", [llama_model_p_ctypes, c_char_p, c_char_p, c_size_t], c_int32)
def llama_model_meta_val_str(model, key: bytes, buf, buf_size: int, /) -> int:
    """Metadata value of key as a string into buf; its full length, or -1 if absent."""


# int32_t llama_model_meta_count(const struct llama_model * model);
@ctypes_function("llama_model_meta_count", [llama_model_p_ctypes], c_int32)
def llama_model_meta_count(model, /) -> int:
    """Number of (non-array) metadata pairs."""


# const char * llama_model_meta_key_str(enum llama_model_meta_key key);
@ctypes_function("llama_model_meta_key_str", [c_int], c_char_p)
def llama_model_meta_key_str(key: int, /) -> Optional[bytes]:
    """GGUF key name of a llama_model_meta_key."""


# int32_t llama_model_meta_key_by_index(const struct llama_model * model, int32_t i, char * buf, size_t buf_size);
@ctypes_function("llama_model_meta_key_by_index", [llama_model_p_ctypes, c_int32, c_char_p, c_size_t], c_int32)
def llama_model_meta_key_by_index(model, i: int, buf, buf_size: int, /) -> int:
    """Metadata key i into buf; its length, or -1."""


# int32_t llama_model_meta_val_str_by_index(const struct llama_model * model, int32_t i, char * buf, size_t buf_size);
@ctypes_function("llama_model_meta_val_str_by_index", [llama_model_p_ctypes, c_int32, c_char_p, c_size_t], c_int32)
def llama_model_meta_val_str_by_index(model, i: int, buf, buf_size: int, /) -> int:
    """Metadata value i as a string into buf; its length, or -1."""


# int32_t llama_model_desc(const struct llama_model * model, char * buf, size_t buf_size);
@ctypes_function("llama_model_desc", [llama_model_p_ctypes, c_char_p, c_size_t], c_int32)
def llama_model_desc(model, buf, buf_size: int, /) -> int:
    """Short description ('llama 135M Q4_1') into buf; returns its length."""


# enum llama_ftype llama_model_ftype(const struct llama_model * model);
@ctypes_function("llama_model_ftype", [llama_model_p_ctypes], c_int)
def llama_model_ftype(model, /) -> int:
    """File type (general.file_type, or guessed with LLAMA_FTYPE_GUESSED)."""


# uint64_t llama_model_size(const struct llama_model * model);
@ctypes_function("llama_model_size", [llama_model_p_ctypes], c_uint64)
def llama_model_size(model, /) -> int:
    """Bytes of all weights."""


# const char * llama_model_chat_template(const struct llama_model * model, const char * name);
@ctypes_function("llama_model_chat_template", [llama_model_p_ctypes, c_char_p], c_char_p)
def llama_model_chat_template(model, name: Optional[bytes], /) -> Optional[bytes]:
    """Chat template text (name None: the default one), or None."""


# uint64_t llama_model_n_params(const struct llama_model * model);
@ctypes_function("llama_model_n_params", [llama_model_p_ctypes], c_uint64)
def llama_model_n_params(model, /) -> int:
    """Number of parameters."""


# bool llama_model_has_encoder(const struct llama_model * model);
@ctypes_function("llama_model_has_encoder", [llama_model_p_ctypes], c_bool)
def llama_model_has_encoder(model, /) -> bool:
    """False: encoder models are not supported."""


# bool llama_model_has_decoder(const struct llama_model * model);
@ctypes_function("llama_model_has_decoder", [llama_model_p_ctypes], c_bool)
def llama_model_has_decoder(model, /) -> bool:
    """True for decoder models."""


# llama_token llama_model_decoder_start_token(const struct llama_model * model);
@ctypes_function("llama_model_decoder_start_token", [llama_model_p_ctypes], llama_token)
def llama_model_decoder_start_token(model, /) -> int:
    """LLAMA_TOKEN_NULL (no encoder-decoder models)."""


# bool llama_model_is_recurrent(const struct llama_model * model);
@ctypes_function("llama_model_is_recurrent", [llama_model_p_ctypes], c_bool)
def llama_model_is_recurrent(model, /) -> bool:
    """False."""


# bool llama_model_is_hybrid(const struct llama_model * model);
@ctypes_function("llama_model_is_hybrid", [llama_model_p_ctypes], c_bool)
def llama_model_is_hybrid(model, /) -> bool:
    """False."""


# bool llama_model_is_diffusion(const struct llama_model * model);
@ctypes_function("llama_model_is_diffusion", [llama_model_p_ctypes], c_bool)
def llama_model_is_diffusion(model, /) -> bool:
    """False."""


def llama_model_meta_dict(model) -> dict:
    """Every (non-array) metadata pair as {key: value-string} (helper, not in llama.h)."""
    out = {}
    n = llama_model_meta_count(model)
    for i in range(max(n, 0)):
        klen = llama_model_meta_key_by_index(model, i, None, 0)
        vlen = llama_model_meta_val_str_by_index(model, i, None, 0)
        if klen < 0 or vlen < 0:
            continue
        kbuf = ctypes.create_string_buffer(klen + 1)
        vbuf = ctypes.create_string_buffer(vlen + 1)
        llama_model_meta_key_by_index(model, i, kbuf, klen + 1)
        llama_model_meta_val_str_by_index(model, i, vbuf, vlen + 1)
        out[kbuf.value.decode("utf-8", "replace")] = vbuf.raw[:vlen].decode("utf-8", "replace")
    return out


__all__ = [n for n in dir() if n.startswith(("llama_", "LLAMA_"))]
