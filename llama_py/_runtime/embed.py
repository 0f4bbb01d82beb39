"""Embeddings of token lists with the context's pooling, for Llama.embed and /v1/embeddings.

Every list is one sequence of ONE llama_decode (an embedding context decodes a pooled sequence
whole: split across decodes, each part would pool separately), so the batch must hold the sum
of their lengths and the context at least as many sequences as lists.
"""
from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from .. import llama_cpp as C
from .._lib import LlamaError


def unit(v: Sequence[float]) -> List[float]:
    """v scaled to length 1 (a zero vector is returned as it is)."""
    a = np.asarray(v, dtype=np.float64)
    norm = float(np.linalg.norm(a))
    return (a / norm).tolist() if norm > 0 else a.tolist()


def output_size(ctx, model) -> int:
    """Floats per embedding: n_embd, or the classifier's outputs for RANK pooling."""
    if C.llama_pooling_type(ctx) == C.LLAMA_POOLING_TYPE_RANK:
        return max(1, C.llama_model_n_cls_out(model))
    return C.llama_model_n_embd(model)


def decode_embeddings(ctx, batch, token_lists: Sequence[Sequence[int]], n_out: int,
                      normalize: bool = False) -> List[Any]:
    """Clears the context's memory and decodes token_lists as sequences 0, 1, ... of one batch;
    per list, the pooled vector (pooling MEAN / CLS / LAST / RANK) or, with pooling NONE, one
    vector per token. LlamaError when the decode fails or produces no embedding."""
    C.llama_memory_clear(C.llama_get_memory(ctx), True)
    C.llama_batch_clear(batch)
    for seq, toks in enumerate(token_lists):
        for pos, t in enumerate(toks):
            C.llama_batch_add(batch, int(t), pos, [seq], True)
    rc = C.llama_decode(ctx, batch)
    if rc != 0:
        raise LlamaError(f"llama_decode failed ({rc}) for embeddings", rc)

    def vec(ptr) -> List[float]:
        v = np.ctypeslib.as_array(ptr, shape=(n_out,)).astype(np.float64)
        return unit(v) if normalize else v.tolist()

    out: List[Any] = []
    if C.llama_pooling_type(ctx) != C.LLAMA_POOLING_TYPE_NONE:
        for seq in range(len(token_lists)):
            ptr = C.llama_get_embeddings_seq(ctx, seq)
            if not ptr:
                raise LlamaError("no pooled embedding was produced")
            out.append(vec(ptr))
        return out
    row = 0
    for toks in token_lists:
        rows = []
        for _ in toks:
            ptr = C.llama_get_embeddings_ith(ctx, row)
            if not ptr:
                raise LlamaError(f"no embedding for token {row}")
            rows.append(vec(ptr))
            row += 1
        out.append(rows)
    return out
