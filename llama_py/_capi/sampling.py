"""ctypes mirror of the samplers section of llama.h (re-exported by llama_py.llama_cpp).

Structs (`llama_token_data`, `llama_token_data_array`, `llama_logit_bias`,
`llama_sampler_chain_params`, `llama_sampler_i` and its callback types, `llama_sampler`,
`llama_perf_sampler_data`) and every sampler function, with the names and argument order of
llama-cpp-python 0.3.36's low-level module. Sampler handles are `c_void_p`: functions return
a plain int address (None for NULL) and accept ints, `c_void_p` or `ctypes.pointer(llama_sampler)`.

Two additions on top of the C API:

* `PythonSampler`: a sampler written in Python. It works alone or inside a chain, and its
  ctypes callbacks stay alive for exactly as long as the C sampler exists (a registry holds
  the Python object until the library frees the sampler).
* `TokenDataArray`: a `llama_token_data_array` over a NumPy buffer, for applying samplers to
  logits directly (`apply`, `ids`, `logits`, `probs`).

Example:

    chain = llama_sampler_chain_init(llama_sampler_chain_default_params())
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(40))
    llama_sampler_chain_add(chain, llama_sampler_init_temp(0.8))
    llama_sampler_chain_add(chain, llama_sampler_init_dist(1234))
    cand = TokenDataArray(logits)            # a 1-D float array
    cand.apply(chain)
    token = cand.selected_token
    llama_sampler_accept(chain, token)
    llama_sampler_free(chain)
"""
from __future__ import annotations

import copy
import ctypes
import threading
import warnings
from ctypes import (POINTER, Structure, c_bool, c_char_p, c_double, c_float, c_int32, c_int64,
                    c_size_t, c_uint32, c_void_p)
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .._lib import ctypes_function

__all__ = [
    # structs and types
    "llama_token_data", "llama_token_data_p", "llama_token_data_array", "llama_token_data_array_p",
    "llama_logit_bias", "llama_logit_bias_p", "llama_sampler_chain_params",
    "llama_sampler_context_t", "llama_sampler_data", "llama_sampler_i", "llama_sampler",
    "llama_sampler_p", "llama_sampler_p_ctypes",
    "llama_sampler_i_name", "llama_sampler_i_accept", "llama_sampler_i_apply",
    "llama_sampler_i_reset", "llama_sampler_i_clone", "llama_sampler_i_free",
    "llama_sampler_i_backend_init", "llama_sampler_i_backend_accept",
    "llama_sampler_i_backend_apply", "llama_sampler_i_backend_set_input",
    "llama_sampler_i_backend_reset", "llama_sampler_i_copy_state",
    "llama_perf_sampler_data",
    # functions
    "llama_sampler_chain_default_params",
    "llama_sampler_init", "llama_sampler_name", "llama_sampler_accept", "llama_sampler_apply",
    "llama_sampler_reset", "llama_sampler_clone", "llama_sampler_copy", "llama_sampler_free",
    "llama_sampler_chain_init", "llama_sampler_chain_add", "llama_sampler_chain_get",
    "llama_sampler_chain_n", "llama_sampler_chain_remove",
    "llama_sampler_init_greedy", "llama_sampler_init_dist", "llama_sampler_init_top_k",
    "llama_sampler_init_top_p", "llama_sampler_init_min_p", "llama_sampler_init_typical",
    "llama_sampler_init_temp", "llama_sampler_init_temp_ext", "llama_sampler_init_xtc",
    "llama_sampler_init_top_n_sigma", "llama_sampler_init_mirostat",
    "llama_sampler_init_mirostat_v2", "llama_sampler_init_grammar",
    "llama_sampler_init_grammar_lazy", "llama_sampler_init_grammar_lazy_patterns",
    "llama_sampler_init_penalties", "llama_sampler_init_dry", "llama_sampler_init_adaptive_p",
    "llama_sampler_init_logit_bias", "llama_sampler_init_infill", "llama_sampler_get_seed",
    "llama_sampler_sample",
    "llama_perf_sampler", "llama_perf_sampler_print", "llama_perf_sampler_reset",
    # Python helpers
    "PythonSampler", "TokenDataArray", "SAMPLING_ABI_STRUCTS",
]

_llama_token = c_int32
_DEFAULT_SEED = 0xFFFFFFFF


# ---- structs ----

# typedef struct llama_token_data { llama_token id; float logit; float p; } llama_token_data;
class llama_token_data(Structure):
    """One candidate token: id, logit (log-odds) and p (probability, filled by samplers that normalise)."""
    _fields_ = [
        ("id", _llama_token),
        ("logit", c_float),
        ("p", c_float),
    ]


llama_token_data_p = POINTER(llama_token_data)


# typedef struct llama_token_data_array { llama_token_data * data; size_t size;
#                                         int64_t selected; bool sorted; } llama_token_data_array;
class llama_token_data_array(Structure):
    """Candidates a sampler works on in place; selected is an index into data (-1: none yet)."""
    _fields_ = [
        ("data", llama_token_data_p),
        ("size", c_size_t),
        ("selected", c_int64),
        ("sorted", c_bool),
    ]


llama_token_data_array_p = POINTER(llama_token_data_array)


# typedef struct llama_logit_bias { llama_token token; float bias; } llama_logit_bias;
class llama_logit_bias(Structure):
    """Additive logit bias for one token."""
    _fields_ = [
        ("token", _llama_token),
        ("bias", c_float),
    ]


llama_logit_bias_p = POINTER(llama_logit_bias)


# typedef struct llama_sampler_chain_params { bool no_perf; } llama_sampler_chain_params;
class llama_sampler_chain_params(Structure):
    """Options of a sampler chain: no_perf disables timing."""
    _fields_ = [
        ("no_perf", c_bool),
    ]


# typedef void * llama_sampler_context_t;
llama_sampler_context_t = c_void_p


# struct llama_sampler_data { ggml_tensor * logits, * probs, * sampled, * candidates; };
class llama_sampler_data(Structure):
    """Backend tensors of a sampler (unused by this engine)."""
    _fields_ = [
        ("logits", c_void_p),
        ("probs", c_void_p),
        ("sampled", c_void_p),
        ("candidates", c_void_p),
    ]


class llama_sampler_i(Structure):
    """Interface of a sampler (fields set below, after the callback types)."""


# struct llama_sampler { const struct llama_sampler_i * iface; llama_sampler_context_t ctx; };
class llama_sampler(Structure):
    """A sampler: its interface and its state."""
    _fields_ = [
        ("iface", POINTER(llama_sampler_i)),
        ("ctx", llama_sampler_context_t),
    ]


llama_sampler_p_ctypes = POINTER(llama_sampler)
# Handles returned and taken by the functions below.
llama_sampler_p = c_void_p

# Callback types of llama_sampler_i (ctypes cannot build Python callbacks returning a pointer:
# PythonSampler casts c_void_p-returning callbacks into the name and clone slots).
llama_sampler_i_name = ctypes.CFUNCTYPE(c_char_p, llama_sampler_p_ctypes)
llama_sampler_i_accept = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes, _llama_token)
llama_sampler_i_apply = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes, llama_token_data_array_p)
llama_sampler_i_reset = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes)
llama_sampler_i_clone = ctypes.CFUNCTYPE(llama_sampler_p_ctypes, llama_sampler_p_ctypes)
llama_sampler_i_free = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes)
llama_sampler_i_backend_init = ctypes.CFUNCTYPE(c_bool, llama_sampler_p_ctypes, c_void_p, c_uint32)
llama_sampler_i_backend_accept = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes, c_void_p, c_void_p, c_void_p)
llama_sampler_i_backend_apply = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes, c_void_p, c_void_p,
                                                 POINTER(llama_sampler_data))
llama_sampler_i_backend_set_input = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes)
llama_sampler_i_backend_reset = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes)
llama_sampler_i_copy_state = ctypes.CFUNCTYPE(None, llama_sampler_p_ctypes, llama_sampler_p_ctypes)

llama_sampler_i._fields_ = [
    ("name", llama_sampler_i_name),
    ("accept", llama_sampler_i_accept),
    ("apply", llama_sampler_i_apply),
    ("reset", llama_sampler_i_reset),
    ("clone", llama_sampler_i_clone),
    ("free", llama_sampler_i_free),
    ("backend_init", llama_sampler_i_backend_init),
    ("backend_accept", llama_sampler_i_backend_accept),
    ("backend_apply", llama_sampler_i_backend_apply),
    ("backend_set_input", llama_sampler_i_backend_set_input),
    ("backend_reset", llama_sampler_i_backend_reset),
    ("copy_state", llama_sampler_i_copy_state),
]


# struct llama_perf_sampler_data { double t_sample_ms; int32_t n_sample; };
class llama_perf_sampler_data(Structure):
    """Timings of a sampler chain."""
    _fields_ = [
        ("t_sample_ms", c_double),
        ("n_sample", c_int32),
    ]


# (Python struct, C struct name) pairs whose layout the library describes (llama_abi_*).
SAMPLING_ABI_STRUCTS = [
    (llama_token_data, "llama_token_data"),
    (llama_token_data_array, "llama_token_data_array"),
    (llama_logit_bias, "llama_logit_bias"),
    (llama_sampler_chain_params, "llama_sampler_chain_params"),
    (llama_sampler_data, "llama_sampler_data"),
    (llama_sampler_i, "llama_sampler_i"),
    (llama_sampler, "llama_sampler"),
    (llama_perf_sampler_data, "llama_perf_sampler_data"),
]


# ---- core ----

# Default sampler-chain parameters.
@ctypes_function("llama_sampler_chain_default_params", [], llama_sampler_chain_params)
def llama_sampler_chain_default_params() -> llama_sampler_chain_params:
    ...


# Creates a sampler from an interface and state (iface must outlive it). Free with llama_sampler_free.
@ctypes_function("llama_sampler_init", [POINTER(llama_sampler_i), llama_sampler_context_t], llama_sampler_p)
def llama_sampler_init(iface, ctx, /) -> Optional[int]:
    ...


# The sampler's name ("greedy", "top-k", ...).
@ctypes_function("llama_sampler_name", [llama_sampler_p], c_char_p)
def llama_sampler_name(smpl, /) -> bytes:
    ...


# Tells the sampler which token was chosen.
@ctypes_function("llama_sampler_accept", [llama_sampler_p, _llama_token], None)
def llama_sampler_accept(smpl, token: int, /) -> None:
    ...


# Applies the sampler to the candidates in place.
@ctypes_function("llama_sampler_apply", [llama_sampler_p, llama_token_data_array_p], None)
def llama_sampler_apply(smpl, cur_p, /) -> None:
    ...


# Restores the initial state.
@ctypes_function("llama_sampler_reset", [llama_sampler_p], None)
def llama_sampler_reset(smpl, /) -> None:
    ...


# Copy with the same state; NULL if the sampler cannot be cloned.
@ctypes_function("llama_sampler_clone", [llama_sampler_p], llama_sampler_p)
def llama_sampler_clone(smpl, /) -> Optional[int]:
    ...


# Copies src's state into dst (same sampler type).
@ctypes_function("llama_sampler_copy", [llama_sampler_p, llama_sampler_p], None)
def llama_sampler_copy(src, dst, /) -> None:
    ...


# Frees the sampler; NULL-safe. Do not free a sampler owned by a chain.
@ctypes_function("llama_sampler_free", [llama_sampler_p], None)
def llama_sampler_free(smpl, /) -> None:
    ...


# Empty chain. Free with llama_sampler_free (frees its samplers).
@ctypes_function("llama_sampler_chain_init", [llama_sampler_chain_params], llama_sampler_p)
def llama_sampler_chain_init(params: llama_sampler_chain_params, /) -> Optional[int]:
    ...


# Appends smpl; the chain takes ownership of the sampler.
@ctypes_function("llama_sampler_chain_add", [llama_sampler_p, llama_sampler_p], None)
def llama_sampler_chain_add(chain, smpl, /) -> None:
    ...


# Sampler i of the chain (owned by the chain), NULL if out of range.
@ctypes_function("llama_sampler_chain_get", [llama_sampler_p, c_int32], llama_sampler_p)
def llama_sampler_chain_get(chain, i: int, /) -> Optional[int]:
    ...


# Number of samplers in the chain.
@ctypes_function("llama_sampler_chain_n", [llama_sampler_p], c_int32)
def llama_sampler_chain_n(chain, /) -> int:
    ...


# Removes sampler i and returns it; the caller owns it again. NULL if out of range.
@ctypes_function("llama_sampler_chain_remove", [llama_sampler_p, c_int32], llama_sampler_p)
def llama_sampler_chain_remove(chain, i: int, /) -> Optional[int]:
    ...


# ---- samplers ----

# Picks the highest logit.
@ctypes_function("llama_sampler_init_greedy", [], llama_sampler_p)
def llama_sampler_init_greedy() -> Optional[int]:
    ...


# Samples from the softmax; seed LLAMA_DEFAULT_SEED picks a random seed.
@ctypes_function("llama_sampler_init_dist", [c_uint32], llama_sampler_p)
def llama_sampler_init_dist(seed: int) -> Optional[int]:
    ...


# Keeps the k highest (k <= 0: no-op).
@ctypes_function("llama_sampler_init_top_k", [c_int32], llama_sampler_p)
def llama_sampler_init_top_k(k: int) -> Optional[int]:
    ...


# Nucleus: smallest set with cumulative probability >= p (at least min_keep).
@ctypes_function("llama_sampler_init_top_p", [c_float, c_size_t], llama_sampler_p)
def llama_sampler_init_top_p(p: float, min_keep: int) -> Optional[int]:
    ...


# Keeps tokens with p >= p_min * p_max (at least min_keep).
@ctypes_function("llama_sampler_init_min_p", [c_float, c_size_t], llama_sampler_p)
def llama_sampler_init_min_p(p: float, min_keep: int) -> Optional[int]:
    ...


# Locally typical sampling.
@ctypes_function("llama_sampler_init_typical", [c_float, c_size_t], llama_sampler_p)
def llama_sampler_init_typical(p: float, min_keep: int) -> Optional[int]:
    ...


# Divides logits by t (t <= 0: keep only the max).
@ctypes_function("llama_sampler_init_temp", [c_float], llama_sampler_p)
def llama_sampler_init_temp(t: float) -> Optional[int]:
    ...


# Dynamic temperature in [t - delta, t + delta] by entropy, with exponent.
@ctypes_function("llama_sampler_init_temp_ext", [c_float, c_float, c_float], llama_sampler_p)
def llama_sampler_init_temp_ext(t: float, delta: float, exponent: float) -> Optional[int]:
    ...


# Exclude-top-choices: with probability p removes tokens above threshold t but the last.
@ctypes_function("llama_sampler_init_xtc", [c_float, c_float, c_size_t, c_uint32], llama_sampler_p)
def llama_sampler_init_xtc(p: float, t: float, min_keep: int, seed: int, /) -> Optional[int]:
    ...


# Keeps logits within n standard deviations of the max.
@ctypes_function("llama_sampler_init_top_n_sigma", [c_float], llama_sampler_p)
def llama_sampler_init_top_n_sigma(n: float, /) -> Optional[int]:
    ...


# Mirostat v1 (tau target surprise, eta learning rate, m tokens to estimate s_hat).
@ctypes_function("llama_sampler_init_mirostat", [c_int32, c_uint32, c_float, c_float, c_int32], llama_sampler_p)
def llama_sampler_init_mirostat(n_vocab: int, seed: int, tau: float, eta: float, m: int, /) -> Optional[int]:
    ...


# Mirostat v2.
@ctypes_function("llama_sampler_init_mirostat_v2", [c_uint32, c_float, c_float], llama_sampler_p)
def llama_sampler_init_mirostat_v2(seed: int, tau: float, eta: float, /) -> Optional[int]:
    ...


# GBNF-constrained sampling; NULL (reason logged, with line and column) if the grammar does not compile.
@ctypes_function("llama_sampler_init_grammar", [c_void_p, c_char_p, c_char_p], llama_sampler_p)
def llama_sampler_init_grammar(vocab, grammar_str: bytes, grammar_root: bytes, /) -> Optional[int]:
    ...


# Deprecated: lazy grammar started by a trigger word or token.
@ctypes_function("llama_sampler_init_grammar_lazy",
                 [c_void_p, c_char_p, c_char_p, POINTER(c_char_p), c_size_t, POINTER(_llama_token), c_size_t],
                 llama_sampler_p)
def _llama_sampler_init_grammar_lazy(vocab, grammar_str, grammar_root, trigger_words, num_trigger_words,
                                     trigger_tokens, num_trigger_tokens, /) -> Optional[int]:
    ...


def llama_sampler_init_grammar_lazy(vocab, grammar_str: bytes, grammar_root: bytes, trigger_words,
                                    num_trigger_words: int, trigger_tokens, num_trigger_tokens: int,
                                    /) -> Optional[int]:
    """Deprecated in llama.h (use llama_sampler_init_grammar_lazy_patterns)."""
    warnings.warn("llama_sampler_init_grammar_lazy is deprecated: use "
                  "llama_sampler_init_grammar_lazy_patterns instead", DeprecationWarning, stacklevel=2)
    return _llama_sampler_init_grammar_lazy(vocab, grammar_str, grammar_root, trigger_words,
                                            num_trigger_words, trigger_tokens, num_trigger_tokens)


llama_sampler_init_grammar_lazy.c_name = "llama_sampler_init_grammar_lazy"
llama_sampler_init_grammar_lazy.argtypes = _llama_sampler_init_grammar_lazy.argtypes
llama_sampler_init_grammar_lazy.restype = _llama_sampler_init_grammar_lazy.restype


# Lazy grammar: inactive until a trigger pattern (regex over the output so far) or trigger token.
@ctypes_function("llama_sampler_init_grammar_lazy_patterns",
                 [c_void_p, c_char_p, c_char_p, POINTER(c_char_p), c_size_t, POINTER(_llama_token), c_size_t],
                 llama_sampler_p)
def llama_sampler_init_grammar_lazy_patterns(vocab, grammar_str: bytes, grammar_root: bytes, trigger_patterns,
                                             num_trigger_patterns: int, trigger_tokens, num_trigger_tokens: int,
                                             /) -> Optional[int]:
    ...


# Repetition (divide/multiply), frequency and presence penalties over the last penalty_last_n tokens.
@ctypes_function("llama_sampler_init_penalties", [c_int32, c_int32, c_float, c_float, c_float], llama_sampler_p)
def llama_sampler_init_penalties(n_vocab: int, penalty_last_n: int, penalty_repeat: float, penalty_freq: float,
                                 penalty_present: float, /) -> Optional[int]:
    ...


# DRY (don't repeat yourself) penalty (dry_penalty_last_n -1: whole context, 0: off).
@ctypes_function("llama_sampler_init_dry", [c_void_p, c_float, c_float, c_int32, c_int32, POINTER(c_char_p), c_size_t],
                 llama_sampler_p)
def _llama_sampler_init_dry(vocab, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n,
                            seq_breakers, num_breakers, /) -> Optional[int]:
    ...


def _char_p_array(items) -> Any:
    """A `char **` argument from a list of str/bytes (None and ctypes arrays/pointers pass through)."""
    if items is None or isinstance(items, (ctypes.Array, ctypes._Pointer)):
        return items
    if isinstance(items, (str, bytes)):
        items = [items]
    enc = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in items]
    return (c_char_p * max(len(enc), 1))(*enc)


def llama_sampler_init_dry(vocab, *args) -> Optional[int]:
    """DRY sampler. Takes llama.h's arguments
    `(vocab, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, seq_breakers, num_breakers)`
    or the older form with `n_ctx_train` after `vocab` (then dry_penalty_last_n == -1 means the
    last n_ctx_train tokens). seq_breakers may be a ctypes `char **` or a list of str/bytes;
    num_breakers None means len(seq_breakers).
    """
    if len(args) == 7:
        n_ctx_train, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, seq_breakers, num_breakers = args
        if dry_penalty_last_n == -1 and n_ctx_train is not None and n_ctx_train > 0:
            dry_penalty_last_n = n_ctx_train
    elif len(args) == 6:
        dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, seq_breakers, num_breakers = args
    else:
        raise TypeError("llama_sampler_init_dry takes (vocab, dry_multiplier, dry_base, dry_allowed_length, "
                        "dry_penalty_last_n, seq_breakers, num_breakers) or the older form with n_ctx_train "
                        f"after vocab; got {len(args) + 1} arguments")
    arr = _char_p_array(seq_breakers)
    if num_breakers is None:
        num_breakers = 0 if seq_breakers is None else len(seq_breakers)
    return _llama_sampler_init_dry(vocab, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n,
                                   arr, num_breakers)


llama_sampler_init_dry.c_name = "llama_sampler_init_dry"
llama_sampler_init_dry.argtypes = _llama_sampler_init_dry.argtypes
llama_sampler_init_dry.restype = _llama_sampler_init_dry.restype


# Adaptive-p sampling.
@ctypes_function("llama_sampler_init_adaptive_p", [c_float, c_float, c_uint32], llama_sampler_p)
def llama_sampler_init_adaptive_p(target: float, decay: float, seed: int, /) -> Optional[int]:
    ...


# Adds fixed biases to logits.
@ctypes_function("llama_sampler_init_logit_bias", [c_int32, c_int32, llama_logit_bias_p], llama_sampler_p)
def _llama_sampler_init_logit_bias(n_vocab, n_logit_bias, logit_bias, /) -> Optional[int]:
    ...


def llama_sampler_init_logit_bias(n_vocab: int, n_logit_bias: int, logit_bias, /) -> Optional[int]:
    """Adds fixed biases to logits. logit_bias: a ctypes array/pointer of llama_logit_bias, or a
    dict {token: bias} / a sequence of (token, bias) pairs (n_logit_bias None: all of them)."""
    if isinstance(logit_bias, dict):
        logit_bias = list(logit_bias.items())
    if logit_bias is not None and not isinstance(logit_bias, (ctypes.Array, ctypes._Pointer, llama_logit_bias)):
        pairs = [(int(t), float(b)) for t, b in logit_bias]
        if n_logit_bias is None:
            n_logit_bias = len(pairs)
        logit_bias = (llama_logit_bias * max(len(pairs), 1))(*[llama_logit_bias(t, b) for t, b in pairs])
    if n_logit_bias is None:
        n_logit_bias = 0
    return _llama_sampler_init_logit_bias(n_vocab, n_logit_bias, logit_bias)


llama_sampler_init_logit_bias.c_name = "llama_sampler_init_logit_bias"
llama_sampler_init_logit_bias.argtypes = _llama_sampler_init_logit_bias.argtypes
llama_sampler_init_logit_bias.restype = _llama_sampler_init_logit_bias.restype


# Infill sampler (not supported: returns NULL).
@ctypes_function("llama_sampler_init_infill", [c_void_p], llama_sampler_p)
def llama_sampler_init_infill(vocab, /) -> Optional[int]:
    ...


# Seed of a dist/mirostat/xtc sampler (or of the chain's last seeded sampler); LLAMA_DEFAULT_SEED if none.
@ctypes_function("llama_sampler_get_seed", [llama_sampler_p], c_uint32)
def llama_sampler_get_seed(smpl, /) -> int:
    ...


# Samples from logits row idx of ctx's last decode, accepts the token and returns it.
@ctypes_function("llama_sampler_sample", [llama_sampler_p, c_void_p, c_int32], _llama_token)
def llama_sampler_sample(smpl, ctx, idx: int, /) -> int:
    ...


# ---- performance ----

# Timings of a sampler chain.
@ctypes_function("llama_perf_sampler", [llama_sampler_p], llama_perf_sampler_data)
def llama_perf_sampler(chain, /) -> llama_perf_sampler_data:
    ...


# Logs the timings of a sampler chain.
@ctypes_function("llama_perf_sampler_print", [llama_sampler_p], None)
def llama_perf_sampler_print(chain, /) -> None:
    ...


# Resets the timings of a sampler chain.
@ctypes_function("llama_perf_sampler_reset", [llama_sampler_p], None)
def llama_perf_sampler_reset(chain, /) -> None:
    ...


# ---- samplers written in Python ----

# ctypes cannot create callbacks whose result is a pointer or a char * it must keep alive, so
# these return addresses (c_void_p) and are cast into the llama_sampler_i slots.
_name_cb_t = ctypes.CFUNCTYPE(c_void_p, llama_sampler_p_ctypes)
_clone_cb_t = ctypes.CFUNCTYPE(c_void_p, llama_sampler_p_ctypes)

# PythonSampler objects whose C sampler exists: address -> object. This is what keeps the
# callbacks alive while a chain owns the sampler, whatever happens to the caller's references.
_live: Dict[int, "PythonSampler"] = {}
# Objects whose C sampler was just freed: kept until the next free so that the callback that
# is running (the free callback itself) is never deallocated while it runs.
_released: List["PythonSampler"] = []
_live_lock = threading.Lock()


class PythonSampler:
    """A sampler implemented in Python, usable alone or inside a chain.

    Override `apply(cur_p)` (required; cur_p is the llama_token_data_array, modify it in
    place: logits, size, selected, sorted) and optionally `accept(token)`, `reset()`,
    `clone()`; or pass callables: `PythonSampler(apply=fn, accept=fn, reset=fn, name="mine")`.

    `.sampler` is the C handle. Pass it to llama_sampler_chain_add (the chain then owns it
    and frees it with itself) or free it with `close()` / llama_sampler_free. The Python
    object, and with it every callback, stays alive until the library frees the sampler.
    An exception raised in a callback is reported through sys.unraisablehook and leaves the
    candidates as they were.
    """

    name = "python"

    def __init__(self, apply: Optional[Callable[[llama_token_data_array], None]] = None,
                 accept: Optional[Callable[[int], None]] = None,
                 reset: Optional[Callable[[], None]] = None,
                 name: Optional[str] = None):
        if apply is not None:
            self.apply = apply
        if accept is not None:
            self.accept = accept
        if reset is not None:
            self.reset = reset
        if name is not None:
            self.name = name
        self._c_init()

    # -- to override --

    def apply(self, cur_p: llama_token_data_array) -> None:
        raise NotImplementedError("PythonSampler.apply must be overridden or passed to the constructor")

    def accept(self, token: int) -> None:
        pass

    def reset(self) -> None:
        pass

    def clone(self) -> "PythonSampler":
        """An independent copy (default: deep copy of the instance's public attributes)."""
        new = object.__new__(type(self))
        for k, v in self.__dict__.items():
            if not k.startswith("_c_"):
                new.__dict__[k] = copy.deepcopy(v)
        new._c_init()
        return new

    # -- C side --

    @property
    def sampler(self) -> Optional[int]:
        """The C handle (None once freed)."""
        return self._c_handle

    def close(self) -> None:
        """Frees the C sampler. Only for a sampler no chain owns (a chain frees its own)."""
        h = self._c_handle
        if h is not None:
            llama_sampler_free(h)

    def _c_init(self) -> None:
        self._c_name_buf = ctypes.create_string_buffer(str(self.name).encode("utf-8"))

        def name_cb(smpl):
            return ctypes.addressof(self._c_name_buf)

        def accept_cb(smpl, token):
            self.accept(int(token))

        def apply_cb(smpl, cur_p):
            self.apply(cur_p.contents)

        def reset_cb(smpl):
            self.reset()

        def clone_cb(smpl):
            return self.clone()._c_handle  # an exception is reported by ctypes and gives NULL

        def free_cb(smpl):
            addr = ctypes.cast(smpl, c_void_p).value or 0
            with _live_lock:
                _released.clear()
                obj = _live.pop(addr, None)
                if obj is not None:
                    _released.append(obj)
            self._c_handle = None

        self._c_callbacks = (_name_cb_t(name_cb), llama_sampler_i_accept(accept_cb),
                             llama_sampler_i_apply(apply_cb), llama_sampler_i_reset(reset_cb),
                             _clone_cb_t(clone_cb), llama_sampler_i_free(free_cb))
        iface = llama_sampler_i()
        iface.name = ctypes.cast(self._c_callbacks[0], llama_sampler_i_name)
        iface.accept = self._c_callbacks[1]
        iface.apply = self._c_callbacks[2]
        iface.reset = self._c_callbacks[3]
        iface.clone = ctypes.cast(self._c_callbacks[4], llama_sampler_i_clone)
        iface.free = self._c_callbacks[5]
        self._c_iface = iface
        self._c_handle = None
        handle = llama_sampler_init(ctypes.byref(iface), None)
        if not handle:
            raise MemoryError("llama_sampler_init failed")
        self._c_handle = handle
        with _live_lock:
            _live[handle] = self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} handle={self._c_handle!r}>"


# ---- candidates over NumPy ----

class TokenDataArray:
    """A llama_token_data_array over a NumPy buffer of (id, logit, p) records.

    `TokenDataArray(logits)` makes ids 0..n-1; `ids=` gives other ids. `.arr` is the struct to
    pass to llama_sampler_apply (or use `.apply(smpl)`); `.ids`, `.logits`, `.probs` are
    copies of the current candidates (first `size`), `.selected_token` the chosen id or None.
    """

    def __init__(self, logits, ids=None):
        import numpy as np
        logits = np.asarray(logits, dtype=np.float32).reshape(-1)
        n = logits.shape[0]
        self.dtype = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        self.buf = np.zeros(max(n, 1), dtype=self.dtype)
        self.buf["id"][:n] = np.arange(n, dtype=np.int32) if ids is None else np.asarray(ids, dtype=np.int32)
        self.buf["logit"][:n] = logits
        self.arr = llama_token_data_array(
            data=ctypes.cast(self.buf.ctypes.data, llama_token_data_p), size=n, selected=-1, sorted=False)

    def apply(self, smpl) -> "TokenDataArray":
        llama_sampler_apply(smpl, ctypes.byref(self.arr))
        return self

    def _view(self):
        import numpy as np
        size = self.arr.size
        if size == 0:
            return self.buf[:0]
        # Read through the pointer: a sampler may point data elsewhere.
        return np.ctypeslib.as_array(self.arr.data, shape=(size,))

    @property
    def size(self) -> int:
        return int(self.arr.size)

    @property
    def ids(self):
        return self._view()["id"].copy()

    @property
    def logits(self):
        return self._view()["logit"].copy()

    @property
    def probs(self):
        return self._view()["p"].copy()

    @property
    def selected(self) -> int:
        return int(self.arr.selected)

    @property
    def selected_token(self) -> Optional[int]:
        s = self.arr.selected
        if s < 0 or s >= self.arr.size:
            return None
        return int(self._view()["id"][s])
