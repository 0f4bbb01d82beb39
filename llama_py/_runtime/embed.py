"""Embeddings of token lists with the context's pooling, for Llama.embed and /v1/embeddings.

Every list is one sequence of ONE llama_decode (an embedding context decodes a pooled sequence
whole: split across decodes, each part would pool separately), so the batch must hold the sum
of their lengths and the context at least as many sequences as lists; embed_packed packs many
lists into as few such decodes as the batch and the context's sequences allow. rerank_tokens
builds the token list that scores a (query, document) pair.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, List, Sequence

import numpy as np

from .. import llama_cpp as C
from .._lib import LlamaError




def unit(v: Sequence[float]) -> List[float]:
    """v scaled to length 1 (a zero vector is returned as it is)."""
    a = np.asarray(v, dtype=np.float64)
    norm = float(np.linalg.norm(a))
    return (a / norm).tolist() if norm > 0 else a.tolist()


def truncate(v: Sequence[float], dims: int) -> List[float]:
    """The first dims components of v at unit length: a Matryoshka embedding's shorter form
    (nomic-embed-text-v1.5, OpenAI's text-embedding-3: truncate, then renormalize)."""
    return unit(list(v)[:dims])


def check_dimensions(dims, n_embd: int) -> None:
    """ValueError unless dims is None or 1 <= dims <= n_embd (the model's embedding size)."""
    if dims is None:
        return
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1 or dims > n_embd:
        raise ValueError(f"dimensions must be an integer in [1, {n_embd}] (this model's embedding size), got {dims!r}")


def pair_tokens(q: List[int], d: List[int], bos: int, eos: int, sep: int, add_bos: bool, add_eos: bool,
                add_sep: bool) -> List[int]:
    """A (query, document) pair as a cross-encoder was trained on it, from the vocabulary's
    flags: BOS? q EOS? SEP? d, then EOS if the vocabulary adds one, else SEP if it adds that.
    XLM-R rerankers (bge-reranker; BOS, EOS and SEP all added, SEP = EOS = </s>):
    <s> q </s></s> d </s>, which is llama-server's pair too; BERT ones (SEP only): [CLS] q [SEP]
    d [SEP], transformers' pair (llama-server leaves that last [SEP] out)."""
    start = [bos] if add_bos and bos >= 0 else []
    mid = ([eos] if add_eos and eos >= 0 else []) + ([sep] if add_sep and sep >= 0 else [])
    end = [eos] if add_eos and eos >= 0 else [sep] if add_sep and sep >= 0 else []
    return start + list(q) + mid + list(d) + end


def rerank_tokens(model, tokenize, query: str, document: str) -> List[int]:
    """The tokens scoring one (query, document) pair: the model's "rerank" chat template with
    {query} and {document} filled in (Qwen3-Reranker), else pair_tokens.
    tokenize(text_bytes, add_special, parse_special) -> ids."""
    tmpl = C.llama_model_chat_template(model, b"rerank")
    if tmpl:
        text = tmpl.decode("utf-8").replace("{query}", query).replace("{document}", document)
        return tokenize(text.encode("utf-8"), False, True)
    vocab = C.llama_model_get_vocab(model)
    q = tokenize(query.encode("utf-8"), False, False)
    d = tokenize(document.encode("utf-8"), False, False)
    return pair_tokens(q, d, C.llama_vocab_bos(vocab), C.llama_vocab_eos(vocab), C.llama_vocab_sep(vocab),
                       bool(C.llama_vocab_get_add_bos(vocab)), bool(C.llama_vocab_get_add_eos(vocab)),
                       bool(C.llama_vocab_get_add_sep(vocab)))


def pack(lengths: Sequence[int], n_tokens: int, n_seq: int) -> List[List[int]]:
    """Indices of lengths in order, grouped so that a group holds at most n_seq lists and
    n_tokens tokens (a longer list is alone in its group)."""
    groups: List[List[int]] = []
    total = 0
    for i, n in enumerate(lengths):
        if not groups or len(groups[-1]) >= max(1, n_seq) or total + n > n_tokens:
            groups.append([])
            total = 0
        groups[-1].append(i)
        total += n
    return groups


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


def embed_packed(ctx, batch, token_lists: Sequence[Sequence[int]], n_out: int, n_tokens: int,
                 normalize: bool = False) -> List[Any]:
    """decode_embeddings' results for every list, in order, from as few decodes as the context's
    sequences and the batch (n_tokens rows) allow; each list must fit the batch. The lists are
    packed in order of length: an encoder's attention runs per sequence padded to the longest
    of its decode (llama_encode), so lists of like length waste the least."""
    n_seq = max(1, int(C.llama_n_seq_max(ctx)))
    order = sorted(range(len(token_lists)), key=lambda i: len(token_lists[i]))
    out: List[Any] = [None] * len(token_lists)
    for group in pack([len(token_lists[i]) for i in order], n_tokens, n_seq):
        idx = [order[k] for k in group]
        for i, v in zip(idx, decode_embeddings(ctx, batch, [token_lists[i] for i in idx], n_out, normalize)):
            out[i] = v
    return out


class Coalescer:
    """Runs fn(items) -> results (one per item) for concurrent callers, one call at a time, with
    the items of every caller that arrived while the previous call ran merged into the next:
    eight clients sending one text each share one decode instead of queueing for eight. A
    caller's items stay together and in order; an exception reaches every caller of that call."""

    def __init__(self, fn: Callable[[List[Any]], List[Any]]):
        self._fn = fn
        self._run = threading.Lock()       # one fn call at a time
        self._queue = threading.Lock()     # guards _pending
        self._pending: List[dict] = []

    def __call__(self, items: Sequence[Any]) -> List[Any]:
        job = {"items": list(items), "done": False, "out": None, "err": None}
        with self._queue:
            self._pending.append(job)
        with self._run:
            # either an earlier holder took (and finished) this job, or it is still pending
            if not job["done"]:
                with self._queue:
                    jobs, self._pending = self._pending, []
                merged = [x for j in jobs for x in j["items"]]
                try:
                    out, err = self._fn(merged), None
                except Exception as e:  # every caller of this call sees it
                    out, err = None, e
                k = 0
                for j in jobs:
                    n = len(j["items"])
                    j["out"], j["err"], j["done"] = (out[k:k + n] if out is not None else None), err, True
                    k += n
        if job["err"] is not None:
            raise job["err"]
        return job["out"]
