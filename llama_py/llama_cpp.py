"""ctypes mirror of llama.h, drop-in for llama-cpp-python's low-level `llama_cpp` module.

    import llama_py.llama_cpp as llama_cpp

Every function of llama.h is bound here with the argument order llama-cpp-python uses; the
sections live in the llama_py._capi modules and are re-exported. Older names that tutorials and
C++ examples use keep working with a DeprecationWarning, and wherever the old API took a model
where the new one takes a vocab, the model is accepted. The helpers C++ examples take from
llama.cpp's common library (llama_batch_add, llama_batch_clear, ...) are at the end.

At import, the layout of every Structure is checked against the library's own sizeof/offsetof
tables: a mismatch raises LayoutMismatch naming the struct and field, never a segfault later.
"""
from __future__ import annotations

import ctypes
import warnings
from typing import Iterable, Sequence

from . import _abi, _load_guard
from ._lib import LlamaError, LibraryNotFound, ctypes_function, load_library
from ._capi.common import *  # noqa: F401,F403
from ._capi.common import (llama_context_p_ctypes, llama_model_p_ctypes, llama_token)
from ._capi.extra import *  # noqa: F401,F403
from ._capi.model import *  # noqa: F401,F403
from ._capi.context import *  # noqa: F401,F403
from ._capi.vocab import *  # noqa: F401,F403
from ._capi.sampling import *  # noqa: F401,F403
from . import _capi

# The C structs and the Python modules that mirror them.
_STRUCT_MODULES = (_capi.common, _capi.extra, _capi.model, _capi.context, _capi.vocab, _capi.sampling)


# One exception type for every layout/ABI mismatch (llama_py._abi); the old name stays.
LayoutMismatch = _abi.ABIMismatch


def check_struct_layout(pystruct, c_name: str) -> None:
    """Raises LayoutMismatch if pystruct's size or any field offset differs from C's."""
    _abi.check_struct_layout(pystruct, c_name, llama_abi_struct_size, llama_abi_field_offset)


def _checked_structs():
    names = ("llama_token_data", "llama_token_data_array", "llama_batch", "llama_model_kv_override_value",
             "llama_model_kv_override", "llama_model_tensor_override", "llama_model_imatrix_data",
             "llama_model_params", "llama_sampler_seq_config", "llama_context_params",
             "llama_model_quantize_params", "llama_logit_bias", "llama_sampler_chain_params",
             "llama_chat_message", "llama_embd", "llama_sampler_i", "llama_sampler",
             "llama_perf_context_data", "llama_perf_sampler_data", "llama_opt_params")
    g = globals()
    return [(g[n], n) for n in names if n in g]


def check_abi() -> None:
    """Checks the library's ABI version and every struct layout; raises LayoutMismatch."""
    _abi.check_abi_version(LLAMA_PY_ABI_VERSION, llama_abi_version(), "llama ABI version")
    for pystruct, c_name in _checked_structs():
        check_struct_layout(pystruct, c_name)


LLAMA_PY_ABI_VERSION = 1

import logging as _logging

logger = _logging.getLogger("llama_py")
logger.addHandler(_logging.NullHandler())  # quiet unless the application configures logging
_LOG_LEVELS = {1: _logging.DEBUG, 2: _logging.INFO, 3: _logging.WARNING, 4: _logging.ERROR}
_last_level = [_logging.INFO]


def _route_log(level, text, user_data):
    _load_guard.note_log(level, text)  # a failed load's reason goes into its exception
    # CONT (5) continues the previous line at its level
    lvl = _last_level[0] if level == 5 else _LOG_LEVELS.get(level, _logging.INFO)
    _last_level[0] = lvl
    if text and logger.isEnabledFor(lvl):
        logger.log(lvl, text.decode("utf-8", "replace").rstrip("\n"))


# Kept alive for the life of the module: the library holds this pointer.
_log_callback = llama_log_callback(_route_log)


try:
    load_library()
except LibraryNotFound:
    pass  # the error comes at the first call, with the paths searched
else:
    check_abi()
    llama_log_set(_log_callback, None)


from ctypes import POINTER, c_char_p, c_int32, c_size_t, c_void_p
from ._capi.common import gguf_context_p_ctypes, llama_model_set_tensor_data_t


# ---- loaders and entry points whose argument structs live in several sections ----

# struct llama_model * llama_model_load_from_splits(const char ** paths, size_t n_paths, struct llama_model_params params);
@ctypes_function("llama_model_load_from_splits", [POINTER(c_char_p), c_size_t, llama_model_params], llama_model_p_ctypes)
def llama_model_load_from_splits(paths, n_paths: int, params, /):
    """Loads a model given as split files (one file only is supported)."""


# struct llama_model * llama_model_load_from_file_ptr(FILE * file, struct llama_model_params params);
@ctypes_function("llama_model_load_from_file_ptr", [c_void_p, llama_model_params], llama_model_p_ctypes)
def llama_model_load_from_file_ptr(file, params, /):
    """Not supported: returns None."""


# struct llama_model * llama_model_init_from_user(struct gguf_context *, llama_model_set_tensor_data_t, void *, struct llama_model_params);
@ctypes_function("llama_model_init_from_user",
                 [gguf_context_p_ctypes, llama_model_set_tensor_data_t, c_void_p, llama_model_params], llama_model_p_ctypes)
def llama_model_init_from_user(metadata, set_tensor_data, set_tensor_data_ud, params, /):
    """Not supported: returns None."""


# int32_t llama_encode(struct llama_context * ctx, struct llama_batch batch);
@ctypes_function("llama_encode", [llama_context_p_ctypes, llama_batch], c_int32)
def llama_encode(ctx, batch, /) -> int:
    """Encoder models are not supported: returns -1."""


# ---- older names: each works, with a DeprecationWarning ----

def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)


# the ctypes library object, under llama-cpp-python's name (guidance / llguidance read
# llama_cpp.llama_cpp._lib.llama_tokenize and pass its C pointer on)
_lib = load_library()


# Model handles handed out by the loaders: the vocab functions that older code calls with a
# model still work (the library accepts either), and warn that the model form is deprecated.
_model_handles = set()


def _addr(handle):
    return handle.value if isinstance(handle, ctypes.c_void_p) else handle


def _track_loader(raw):
    def load(*args):
        model = raw(*args)
        if model:
            _model_handles.add(_addr(model))
        return model
    load.__name__ = raw.__name__
    load.__doc__ = raw.__doc__
    load.c_name = getattr(raw, "c_name", raw.__name__)
    return load


llama_model_load_from_file = _track_loader(llama_model_load_from_file)
llama_model_load_from_splits = _track_loader(llama_model_load_from_splits)
_raw_model_free = llama_model_free


def llama_model_free(model, /):
    """Frees the model; NULL-safe. Contexts made from it should be freed first."""
    _model_handles.discard(_addr(model))
    return _raw_model_free(model)


llama_model_free.c_name = "llama_model_free"


def _accepts_model(raw, new_name: str):
    def f(vocab, *args):
        if _addr(vocab) in _model_handles:
            _deprecated(f"{new_name}(model, ...)", f"{new_name}(llama_model_get_vocab(model), ...)")
        return raw(vocab, *args)
    f.__name__ = raw.__name__
    f.__doc__ = raw.__doc__
    f.c_name = getattr(raw, "c_name", new_name)
    return f


llama_tokenize = _accepts_model(llama_tokenize, "llama_tokenize")
llama_token_to_piece = _accepts_model(llama_token_to_piece, "llama_token_to_piece")
llama_detokenize = _accepts_model(llama_detokenize, "llama_detokenize")
llama_sampler_init_dry = _accepts_model(llama_sampler_init_dry, "llama_sampler_init_dry")


def llama_load_model_from_file(path_model: bytes, params, /):
    """Deprecated: llama_model_load_from_file."""
    _deprecated("llama_load_model_from_file", "llama_model_load_from_file")
    return llama_model_load_from_file(path_model, params)


def llama_new_context_with_model(model, params, /):
    """Deprecated: llama_init_from_model."""
    _deprecated("llama_new_context_with_model", "llama_init_from_model")
    return llama_init_from_model(model, params)


def llama_free_model(model, /):
    """Deprecated: llama_model_free."""
    _deprecated("llama_free_model", "llama_model_free")
    return llama_model_free(model)


def llama_n_ctx_train(model, /) -> int:
    """Deprecated: llama_model_n_ctx_train."""
    _deprecated("llama_n_ctx_train", "llama_model_n_ctx_train")
    return llama_model_n_ctx_train(model)


def llama_n_embd(model, /) -> int:
    """Deprecated: llama_model_n_embd."""
    _deprecated("llama_n_embd", "llama_model_n_embd")
    return llama_model_n_embd(model)


def llama_n_layer(model, /) -> int:
    """Deprecated: llama_model_n_layer."""
    _deprecated("llama_n_layer", "llama_model_n_layer")
    return llama_model_n_layer(model)


def llama_n_head(model, /) -> int:
    """Deprecated: llama_model_n_head."""
    _deprecated("llama_n_head", "llama_model_n_head")
    return llama_model_n_head(model)


def llama_set_adapter_lora(ctx, adapter, scale: float, /) -> int:
    """Deprecated: llama_set_adapters_lora with this one adapter (replacing the context's set)."""
    _deprecated("llama_set_adapter_lora", "llama_set_adapters_lora")
    return llama_set_adapters_lora(ctx, (ctypes.c_void_p * 1)(adapter), 1, (ctypes.c_float * 1)(scale))


def llama_apply_adapter_cvec(ctx, data, len: int, n_embd: int, il_start: int, il_end: int, /) -> int:
    """Deprecated: llama_set_adapter_cvec."""
    _deprecated("llama_apply_adapter_cvec", "llama_set_adapter_cvec")
    return llama_set_adapter_cvec(ctx, data, len, n_embd, il_start, il_end)


def llama_n_vocab(vocab_or_model, /) -> int:
    """Deprecated: llama_vocab_n_tokens (a model is accepted too)."""
    _deprecated("llama_n_vocab", "llama_vocab_n_tokens")
    return llama_vocab_n_tokens(vocab_or_model)


def _vocab_alias(old: str, new_func):
    def f(vocab_or_model, /):
        _deprecated(old, new_func.__name__)
        return new_func(vocab_or_model)
    f.__name__ = old
    f.__doc__ = f"Deprecated: {new_func.__name__} (a model is accepted too)."
    return f


llama_token_bos = _vocab_alias("llama_token_bos", llama_vocab_bos)
llama_token_eos = _vocab_alias("llama_token_eos", llama_vocab_eos)
llama_token_eot = _vocab_alias("llama_token_eot", llama_vocab_eot)
llama_token_cls = _vocab_alias("llama_token_cls", llama_vocab_cls)
llama_token_sep = _vocab_alias("llama_token_sep", llama_vocab_sep)
llama_token_nl = _vocab_alias("llama_token_nl", llama_vocab_nl)
llama_token_pad = _vocab_alias("llama_token_pad", llama_vocab_pad)
llama_add_bos_token = _vocab_alias("llama_add_bos_token", llama_vocab_get_add_bos)
llama_add_eos_token = _vocab_alias("llama_add_eos_token", llama_vocab_get_add_eos)
llama_token_fim_pre = _vocab_alias("llama_token_fim_pre", llama_vocab_fim_pre)
llama_token_fim_suf = _vocab_alias("llama_token_fim_suf", llama_vocab_fim_suf)
llama_token_fim_mid = _vocab_alias("llama_token_fim_mid", llama_vocab_fim_mid)
llama_token_fim_pad = _vocab_alias("llama_token_fim_pad", llama_vocab_fim_pad)
llama_token_fim_rep = _vocab_alias("llama_token_fim_rep", llama_vocab_fim_rep)
llama_token_fim_sep = _vocab_alias("llama_token_fim_sep", llama_vocab_fim_sep)


def llama_token_get_text(vocab, token: int, /):
    """Deprecated: llama_vocab_get_text."""
    _deprecated("llama_token_get_text", "llama_vocab_get_text")
    return llama_vocab_get_text(vocab, token)


def llama_token_get_score(vocab, token: int, /) -> float:
    """Deprecated: llama_vocab_get_score."""
    _deprecated("llama_token_get_score", "llama_vocab_get_score")
    return llama_vocab_get_score(vocab, token)


def llama_token_get_attr(vocab, token: int, /) -> int:
    """Deprecated: llama_vocab_get_attr."""
    _deprecated("llama_token_get_attr", "llama_vocab_get_attr")
    return llama_vocab_get_attr(vocab, token)


def llama_token_is_eog(vocab_or_model, token: int, /) -> bool:
    """Deprecated: llama_vocab_is_eog (a model is accepted too)."""
    _deprecated("llama_token_is_eog", "llama_vocab_is_eog")
    return llama_vocab_is_eog(vocab_or_model, token)


def llama_token_is_control(vocab_or_model, token: int, /) -> bool:
    """Deprecated: llama_vocab_is_control (a model is accepted too)."""
    _deprecated("llama_token_is_control", "llama_vocab_is_control")
    return llama_vocab_is_control(vocab_or_model, token)


def llama_get_state_size(ctx, /) -> int:
    """Deprecated: llama_state_get_size."""
    _deprecated("llama_get_state_size", "llama_state_get_size")
    return llama_state_get_size(ctx)


def llama_copy_state_data(ctx, dst, /) -> int:
    """Deprecated: llama_state_get_data."""
    _deprecated("llama_copy_state_data", "llama_state_get_data")
    return llama_state_get_data(ctx, dst, llama_state_get_size(ctx))


def llama_set_state_data(ctx, src, /) -> int:
    """Deprecated: llama_state_set_data."""
    _deprecated("llama_set_state_data", "llama_state_set_data")
    return llama_state_set_data(ctx, src, len(src) if hasattr(src, "__len__") else llama_state_get_size(ctx))


def llama_load_session_file(ctx, path_session: bytes, tokens_out, n_token_capacity: int, n_token_count_out, /) -> bool:
    """Deprecated: llama_state_load_file."""
    _deprecated("llama_load_session_file", "llama_state_load_file")
    return llama_state_load_file(ctx, path_session, tokens_out, n_token_capacity, n_token_count_out)


def llama_save_session_file(ctx, path_session: bytes, tokens, n_token_count: int, /) -> bool:
    """Deprecated: llama_state_save_file."""
    _deprecated("llama_save_session_file", "llama_state_save_file")
    return llama_state_save_file(ctx, path_session, tokens, n_token_count)


# ---- helpers from llama.cpp's common library, as C++ examples use them ----

def llama_batch_add(batch, token: int, pos: int, seq_ids: Sequence[int], logits: bool) -> None:
    """Appends one token to a batch from llama_batch_init (common_batch_add)."""
    i = batch.n_tokens
    batch.token[i] = token
    batch.pos[i] = pos
    batch.n_seq_id[i] = len(seq_ids)
    for j, s in enumerate(seq_ids):
        batch.seq_id[i][j] = s
    batch.logits[i] = 1 if logits else 0
    batch.n_tokens = i + 1


def llama_batch_clear(batch) -> None:
    """Empties a batch (common_batch_clear)."""
    batch.n_tokens = 0


def llama_sampler_chain_add_top_k(chain, k: int) -> None:
    """Appends a top-k sampler to chain."""
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(k))


def llama_sampler_chain_add_top_p(chain, p: float, min_keep: int = 1) -> None:
    """Appends a top-p sampler to chain."""
    llama_sampler_chain_add(chain, llama_sampler_init_top_p(p, min_keep))


def llama_sampler_chain_add_min_p(chain, p: float, min_keep: int = 1) -> None:
    """Appends a min-p sampler to chain."""
    llama_sampler_chain_add(chain, llama_sampler_init_min_p(p, min_keep))


def llama_sampler_chain_add_temp(chain, t: float) -> None:
    """Appends a temperature sampler to chain."""
    llama_sampler_chain_add(chain, llama_sampler_init_temp(t))


def llama_sampler_chain_add_dist(chain, seed: int = LLAMA_DEFAULT_SEED) -> None:
    """Appends a dist sampler to chain."""
    llama_sampler_chain_add(chain, llama_sampler_init_dist(seed))


def llama_sampler_chain_add_greedy(chain) -> None:
    """Appends a greedy sampler to chain."""
    llama_sampler_chain_add(chain, llama_sampler_init_greedy())
