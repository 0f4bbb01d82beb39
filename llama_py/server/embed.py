"""Pooled embeddings for /v1/embeddings: a second context (embeddings on, the file's pooling, else mean) on the
engine's model, one decode at a time; several inputs go into one llama_decode, one sequence each,
and the inputs of concurrent requests are merged into the same decodes (Coalescer)."""
from __future__ import annotations

from typing import List, Sequence

from .. import llama_cpp as C
from .._lib import LlamaError
from .._runtime.embed import Coalescer, embed_packed


class Embedder:
    """Mean-pooled, unit-length embeddings of token lists."""

    def __init__(self, model, n_ctx: int = 2048, n_seq: int = 32, n_threads=None):
        self.model = model
        p = C.llama_context_default_params()
        p.n_ctx = n_ctx
        p.n_batch = p.n_ubatch = n_ctx  # a pooled sequence must be decoded in one piece
        p.n_seq_max = n_seq
        p.embeddings = True
        p.pooling_type = C.LLAMA_POOLING_TYPE_UNSPECIFIED  # the file's (an embedding model names one)
        if n_threads:
            p.n_threads = p.n_threads_batch = n_threads
        self._ctx = C.llama_init_from_model(model.handle, p)
        if self._ctx and C.llama_pooling_type(self._ctx) not in (C.LLAMA_POOLING_TYPE_MEAN, C.LLAMA_POOLING_TYPE_CLS,
                                                                 C.LLAMA_POOLING_TYPE_LAST):
            C.llama_free(self._ctx)  # none (or a reranker's scores): mean pooling gives a vector
            p.pooling_type = C.LLAMA_POOLING_TYPE_MEAN
            self._ctx = C.llama_init_from_model(model.handle, p)
        if not self._ctx:
            raise LlamaError("failed to create the embedding context")
        self.n_ctx = C.llama_n_ctx(self._ctx)
        self.n_seq = n_seq
        self._batch = C.llama_batch_init(self.n_ctx, 0, 1)  # one sequence id per token
        self._run = Coalescer(lambda lists: embed_packed(self._ctx, self._batch, lists, self.model.n_embd, self.n_ctx,
                                                         normalize=True))

    def embed(self, inputs: Sequence[List[int]]) -> List[List[float]]:
        """One vector per token list; raises ValueError if one does not fit the context."""
        for i, toks in enumerate(inputs):
            if not toks:
                raise ValueError(f"input[{i}] is empty")
            if len(toks) > self.n_ctx:
                raise ValueError(f"input[{i}] has {len(toks)} tokens; embeddings take at most {self.n_ctx}")
        return self._run(inputs)

    def close(self) -> None:
        if self._ctx:
            C.llama_batch_free(self._batch)
            C.llama_free(self._ctx)
            self._ctx = None
