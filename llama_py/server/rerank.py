"""Encoder-model parts of the server: /v1/rerank (also /rerank, /reranking, /v1/reranking) and
the guard that answers generation requests sent to an embedding-only model with a 400.

Rerank takes llama-server's (and Jina's / Cohere's) request: `query`, `documents` (strings, or
objects with a `text`), optional `top_n` and `return_documents`; it answers
`{"model", "object": "list", "usage", "results": [{"index", "relevance_score"[, "document"]}]}`,
results by descending score. Each (query, document) pair is one sequence of a RANK-pooled
context on the served model (created on first use, several pairs per llama_decode).
"""
from __future__ import annotations

import asyncio
import ctypes
import json
import weakref
from typing import List

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .. import llama_cpp as C
from .._runtime.embed import Coalescer, embed_packed, rerank_tokens
from . import protocol as P

# GGUF architectures with no generation head: llama_decode on them only encodes.
EMBEDDING_ONLY_ARCHS = {"bert", "nomic-bert", "gemma-embedding"}


def model_arch(model) -> str:
    buf = ctypes.create_string_buffer(128)
    handle = getattr(model, "handle", None)  # a Ray replica proxy has none
    if handle is None:
        return ""
    n = C.llama_model_meta_val_str(handle, b"general.architecture", buf, len(buf))
    return buf.value.decode("utf-8", "replace") if n > 0 else ""


def embedding_only(model) -> bool:
    """True for an encoder model (it embeds or ranks; it cannot generate text)."""
    return model_arch(model) in EMBEDDING_ONLY_ARCHS


class Reranker:
    """Relevance scores of token lists through a RANK-pooled context (one caller at a time)."""

    def __init__(self, model, n_ctx: int = 2048, n_seq: int = 32, n_threads=None):
        self.model = model
        p = C.llama_context_default_params()
        p.n_ctx = n_ctx
        p.n_batch = p.n_ubatch = n_ctx  # a pair is pooled in one piece
        p.n_seq_max = n_seq
        p.embeddings = True
        p.pooling_type = C.LLAMA_POOLING_TYPE_RANK
        if n_threads:
            p.n_threads = p.n_threads_batch = n_threads
        self._ctx = C.llama_init_from_model(model.handle, p)
        if not self._ctx:
            raise P.RequestError(400, "this model does not rerank (it has no classification head)",
                                 code="model_not_supported")
        self.n_ctx = C.llama_n_ctx(self._ctx)
        self.n_seq = n_seq
        self._batch = C.llama_batch_init(self.n_ctx, 0, 1)
        self._run = Coalescer(lambda lists: [v[0] for v in embed_packed(self._ctx, self._batch, lists, 1, self.n_ctx)])
        self._fin = weakref.finalize(self, Reranker._free, self._ctx, self._batch)

    @staticmethod
    def _free(ctx, batch) -> None:
        C.llama_batch_free(batch)
        C.llama_free(ctx)

    def score(self, lists: List[List[int]]) -> List[float]:
        """The relevance score of each token list, several lists per llama_decode (concurrent
        requests' lists merged)."""
        return self._run(lists)

    def close(self) -> None:
        self._fin()


def _reranker(entry) -> Reranker:
    r = getattr(entry, "_reranker", None)
    if r is None:
        r = Reranker(entry.model, n_ctx=min(2048, entry.model.n_ctx_train or 2048), n_threads=entry.n_threads)
        entry._reranker = r
    return r


def _documents(body: dict) -> List[str]:
    docs = body.get("documents")
    if not isinstance(docs, list) or not docs:
        raise P.bad("documents", "must be a non-empty array of strings")
    out = []
    for i, d in enumerate(docs):
        if isinstance(d, dict) and isinstance(d.get("text"), str):
            d = d["text"]
        if not isinstance(d, str):
            raise P.bad("documents", f"documents[{i}] must be a string (or an object with a text)")
        out.append(d)
    return out


def rerank_route(app):
    """The /v1/rerank handler of app (the server's _App)."""
    async def rerank(request: Request) -> Response:
        body = await app.body(request)
        e = app.entry(body)
        query = body.get("query")
        if not isinstance(query, str):
            raise P.bad("query", "is required (a string)")
        docs = _documents(body)
        top_n = P.get_int(body, "top_n", len(docs), lo=1)
        ret_docs = P.get_bool(body, "return_documents", False)
        r = _reranker(e)
        lists = [rerank_tokens(e.model.handle, lambda b, add, sp: e.model.tokenize(b.decode("utf-8"), add, sp),
                               query, d) for d in docs]
        for i, t in enumerate(lists):
            if len(t) > r.n_ctx:
                raise P.RequestError(400, f"documents[{i}] with the query has {len(t)} tokens; the model takes "
                                     f"at most {r.n_ctx}", param="documents", code="context_length_exceeded")
        scores = await asyncio.to_thread(r.score, lists)
        order = sorted(range(len(docs)), key=lambda i: -scores[i])[:top_n]
        results = []
        for i in order:
            item = {"index": i, "relevance_score": scores[i]}
            if ret_docs:
                item["document"] = {"text": docs[i]}
            results.append(item)
        n = sum(len(t) for t in lists)
        return JSONResponse({"model": body.get("model") or e.name, "object": "list", "results": results,
                             "usage": {"prompt_tokens": n, "total_tokens": n}})
    return rerank


def generative_only(app, fn):
    """fn (a generation handler) behind a check: a request for an embedding-only model is a 400.
    The body is read (with the server's limits) and replayed to fn."""
    async def h(request: Request) -> Response:
        body = await app.body(request)
        e = app.entry(body) if isinstance(body, dict) else app.default
        if embedding_only(e.model):
            raise P.RequestError(400, f"model {e.name!r} is an embedding model ({model_arch(e.model)}); it does not "
                                 "generate text: use /v1/embeddings or /v1/rerank", code="model_not_supported")
        data = json.dumps(body).encode("utf-8")
        sent = False

        async def receive():
            nonlocal sent
            if sent:  # the body was read: what follows is the connection's (a disconnect, when it comes)
                return await request.receive()
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        return await fn(Request(request.scope, receive))
    return h
