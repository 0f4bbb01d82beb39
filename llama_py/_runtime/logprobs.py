"""Log-probabilities from logits, once for Llama's logprobs, the server's and its prompt scoring.

A token's log-probability is read from the raw logits of the position that predicted it
(before samplers, biases and logits processors, as llama.cpp's server reports it); the first
token of a sequence, with nothing before it, has none.
"""
from __future__ import annotations

import math
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import llama_cpp as C
from .._lib import LlamaError


def token_logprob(logits: np.ndarray, token: int, n_top: int = 0) -> Tuple[float, List[Tuple[int, float]]]:
    """(log p(token), the n_top likeliest (id, log p), likeliest first) under softmax(logits)."""
    x = np.asarray(logits, dtype=np.float64)
    m = float(x.max())
    logz = m + math.log(float(np.exp(x - m).sum()))
    top: List[Tuple[int, float]] = []
    if n_top > 0:
        k = min(n_top, x.shape[0])
        ids = np.argpartition(-x, k - 1)[:k]
        ids = ids[np.argsort(-x[ids], kind="stable")]
        top = [(int(i), float(x[i] - logz)) for i in ids]
    return float(x[token] - logz), top


def decode_all_logits(ctx, batch, tokens: Sequence[int], n_batch: int, n_vocab: int, seq: int = 0,
                      pos0: int = 0) -> Iterator[Tuple[int, np.ndarray]]:
    """Decodes tokens (at positions pos0.. of sequence seq) in batches of n_batch, every
    position with logits; yields (index of the batch's first token, its rows [n, n_vocab]
    copied out). LlamaError when a decode fails."""
    for start in range(0, len(tokens), n_batch):
        chunk = tokens[start:start + n_batch]
        C.llama_batch_clear(batch)
        for i, t in enumerate(chunk):
            C.llama_batch_add(batch, int(t), pos0 + start + i, [seq], True)
        rc = C.llama_decode(ctx, batch)
        if rc != 0:
            raise LlamaError("llama_decode failed", rc)
        ptr = C.llama_get_logits(ctx)
        yield start, np.ctypeslib.as_array(ptr, shape=(len(chunk) * n_vocab,)).reshape(len(chunk), n_vocab).copy()


def prompt_logprobs(ctx, batch, tokens: Sequence[int], n_batch: int, n_vocab: int,
                    n_top: int = 0) -> List[Tuple[Optional[float], List[Tuple[int, float]]]]:
    """Per prompt token, (its log-probability given the tokens before it, the n_top likeliest
    alternatives there); (None, []) for the first. Clears the context's memory first."""
    C.llama_memory_clear(C.llama_get_memory(ctx), True)
    out: List[Tuple[Optional[float], List[Tuple[int, float]]]] = [(None, [])]
    prev = None
    for start, rows in decode_all_logits(ctx, batch, tokens, n_batch, n_vocab):
        for i in range(rows.shape[0]):
            j = start + i
            if j > 0:
                out.append(token_logprob(prev if i == 0 else rows[i - 1], int(tokens[j]), n_top))
        prev = rows[-1]
    return out[:len(tokens)]
