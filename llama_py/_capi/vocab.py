"""Vocabulary section of the llama.h mirror: token texts, scores, attributes, special tokens,
tokenize / token_to_piece / detokenize. llama_cpp.py re-exports everything here.

Every function that takes a vocab also accepts the model that owns it (the library tells them
apart by their magic word). The deprecated llama_token_* / llama_n_vocab aliases live in
llama_cpp.py.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_bool, c_char_p, c_float, c_int, c_int32, c_void_p

from .._lib import ctypes_function

llama_token = c_int32
llama_token_p = POINTER(llama_token)
llama_vocab_p_ctypes = c_void_p

__all__ = [
    "llama_vocab_get_text", "llama_vocab_get_score", "llama_vocab_get_attr", "llama_vocab_is_eog",
    "llama_vocab_is_control", "llama_vocab_bos", "llama_vocab_eos", "llama_vocab_eot", "llama_vocab_sep",
    "llama_vocab_nl", "llama_vocab_pad", "llama_vocab_mask", "llama_vocab_cls", "llama_vocab_get_add_bos",
    "llama_vocab_get_add_eos", "llama_vocab_get_add_sep", "llama_vocab_get_suppress_tokens",
    "llama_vocab_fim_pre", "llama_vocab_fim_suf", "llama_vocab_fim_mid", "llama_vocab_fim_pad",
    "llama_vocab_fim_rep", "llama_vocab_fim_sep", "llama_vocab_type", "llama_vocab_n_tokens",
    "llama_tokenize", "llama_token_to_piece", "llama_detokenize",
]


# const char * llama_vocab_get_text(const struct llama_vocab * vocab, llama_token token);
@ctypes_function("llama_vocab_get_text", [llama_vocab_p_ctypes, llama_token], c_char_p)
def llama_vocab_get_text(vocab, token: int, /) -> bytes:
    """Token text (None for an invalid id)."""


# float llama_vocab_get_score(const struct llama_vocab * vocab, llama_token token);
@ctypes_function("llama_vocab_get_score", [llama_vocab_p_ctypes, llama_token], c_float)
def llama_vocab_get_score(vocab, token: int, /) -> float:
    """Token score (0 for an invalid id)."""


# enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab * vocab, llama_token token);
@ctypes_function("llama_vocab_get_attr", [llama_vocab_p_ctypes, llama_token], c_int)
def llama_vocab_get_attr(vocab, token: int, /) -> int:
    """Token attributes (LLAMA_TOKEN_ATTR_* bits)."""


# bool llama_vocab_is_eog(const struct llama_vocab * vocab, llama_token token);
@ctypes_function("llama_vocab_is_eog", [llama_vocab_p_ctypes, llama_token], c_bool)
def llama_vocab_is_eog(vocab, token: int, /) -> bool:
    """True for end-of-generation tokens (eos, eot, eom and turn-end controls)."""


# bool llama_vocab_is_control(const struct llama_vocab * vocab, llama_token token);
@ctypes_function("llama_vocab_is_control", [llama_vocab_p_ctypes, llama_token], c_bool)
def llama_vocab_is_control(vocab, token: int, /) -> bool:
    """True for control tokens."""


# llama_token llama_vocab_bos(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_bos", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_bos(vocab, /) -> int:
    """Beginning-of-sentence token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_eos(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_eos", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_eos(vocab, /) -> int:
    """End-of-sentence token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_eot(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_eot", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_eot(vocab, /) -> int:
    """End-of-turn token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_sep(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_sep", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_sep(vocab, /) -> int:
    """Separator token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_nl(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_nl", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_nl(vocab, /) -> int:
    """Newline token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_pad(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_pad", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_pad(vocab, /) -> int:
    """Padding token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_mask(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_mask", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_mask(vocab, /) -> int:
    """Mask token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_cls(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_cls", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_cls(vocab, /) -> int:
    """Classification token (LLAMA_TOKEN_NULL if none)."""


# bool llama_vocab_get_add_bos(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_get_add_bos", [llama_vocab_p_ctypes], c_bool)
def llama_vocab_get_add_bos(vocab, /) -> bool:
    """Whether tokenize with add_special puts BOS first."""


# bool llama_vocab_get_add_eos(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_get_add_eos", [llama_vocab_p_ctypes], c_bool)
def llama_vocab_get_add_eos(vocab, /) -> bool:
    """Whether tokenize with add_special puts EOS last."""


# bool llama_vocab_get_add_sep(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_get_add_sep", [llama_vocab_p_ctypes], c_bool)
def llama_vocab_get_add_sep(vocab, /) -> bool:
    """Whether tokenize with add_special puts SEP last."""


# const llama_token * llama_vocab_get_suppress_tokens(const struct llama_vocab * vocab, int32_t * n_suppress_tokens);
@ctypes_function("llama_vocab_get_suppress_tokens", [llama_vocab_p_ctypes, POINTER(c_int32)], llama_token_p)
def llama_vocab_get_suppress_tokens(vocab, n_suppress_tokens, /):
    """Tokens to suppress (none: NULL with *n_suppress_tokens = 0)."""


# llama_token llama_vocab_fim_pre(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_fim_pre", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_fim_pre(vocab, /) -> int:
    """Fill-in-the-middle prefix token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_fim_suf(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_fim_suf", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_fim_suf(vocab, /) -> int:
    """Fill-in-the-middle suffix token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_fim_mid(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_fim_mid", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_fim_mid(vocab, /) -> int:
    """Fill-in-the-middle middle token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_fim_pad(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_fim_pad", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_fim_pad(vocab, /) -> int:
    """Fill-in-the-middle padding token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_fim_rep(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_fim_rep", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_fim_rep(vocab, /) -> int:
    """Fill-in-the-middle repository token (LLAMA_TOKEN_NULL if none)."""


# llama_token llama_vocab_fim_sep(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_fim_sep", [llama_vocab_p_ctypes], llama_token)
def llama_vocab_fim_sep(vocab, /) -> int:
    """Fill-in-the-middle file separator token (LLAMA_TOKEN_NULL if none)."""


# enum llama_vocab_type llama_vocab_type(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_type", [llama_vocab_p_ctypes], c_int)
def llama_vocab_type(vocab, /) -> int:
    """Vocabulary type (LLAMA_VOCAB_TYPE_SPM, LLAMA_VOCAB_TYPE_BPE)."""


# int32_t llama_vocab_n_tokens(const struct llama_vocab * vocab);
@ctypes_function("llama_vocab_n_tokens", [llama_vocab_p_ctypes], c_int32)
def llama_vocab_n_tokens(vocab, /) -> int:
    """Number of tokens."""


# int32_t llama_tokenize(const struct llama_vocab * vocab, const char * text, int32_t text_len,
#                        llama_token * tokens, int32_t n_tokens_max, bool add_special, bool parse_special);
@ctypes_function("llama_tokenize",
                 [llama_vocab_p_ctypes, c_char_p, c_int32, llama_token_p, c_int32, c_bool, c_bool], c_int32)
def llama_tokenize(vocab, text: bytes, text_len: int, tokens, n_tokens_max: int, add_special: bool,
                   parse_special: bool, /) -> int:
    """Tokenizes text_len bytes of text (NUL bytes allowed) into tokens; returns the count, or
    minus the count needed when n_tokens_max is too small (nothing written past n_tokens_max)."""


# int32_t llama_token_to_piece(const struct llama_vocab * vocab, llama_token token, char * buf,
#                              int32_t length, int32_t lstrip, bool special);
@ctypes_function("llama_token_to_piece",
                 [llama_vocab_p_ctypes, llama_token, c_char_p, c_int32, c_int32, c_bool], c_int32)
def llama_token_to_piece(vocab, token: int, buf, length: int, lstrip: int, special: bool, /) -> int:
    """Writes the token's text into buf (not NUL-terminated); returns its length or minus the
    length needed. lstrip: skip up to that many leading spaces; special: render control tokens."""


# int32_t llama_detokenize(const struct llama_vocab * vocab, const llama_token * tokens, int32_t n_tokens,
#                          char * text, int32_t text_len_max, bool remove_special, bool unparse_special);
@ctypes_function("llama_detokenize",
                 [llama_vocab_p_ctypes, llama_token_p, c_int32, c_char_p, c_int32, c_bool, c_bool], c_int32)
def llama_detokenize(vocab, tokens, n_tokens: int, text, text_len_max: int, remove_special: bool,
                     unparse_special: bool, /) -> int:
    """Joins tokens into text; returns its length or minus the length needed."""
