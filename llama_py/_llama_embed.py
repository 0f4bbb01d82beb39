"""Llama.embed / create_embedding / rerank (mixed into Llama; needs Llama(..., embedding=True)).

A text is never split across decodes that would each pool separately (an embedding context's
batch is the whole context); texts are packed, one sequence each, into as few llama_decode calls
as the batch and the context's sequences allow (_runtime.embed.embed_packed). Pooling is the
context's (by default the model file's): MEAN, CLS, LAST give one vector per text, NONE one
vector per token, RANK one score.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from . import llama_cpp as C
from ._lib import LlamaError
from ._runtime import embed as E
from ._runtime.embed import rerank_tokens  # noqa: F401  (its former home; the server imports it from _runtime)


class _EmbedMixin:
    def _embed_tokens(self, token_lists: List[List[int]], n_out: int, normalize: bool = False) -> List[Any]:
        """Per token list its pooled vector (n_out floats) or, unpooled, its per-token vectors;
        the lists packed into shared decodes."""
        batch = C.llama_batch_init(self.n_batch, 0, 1)
        try:
            return E.embed_packed(self._ctx, batch, token_lists, n_out, self.n_batch, normalize)
        finally:
            C.llama_batch_free(batch)
            C.llama_memory_clear(C.llama_get_memory(self._ctx), True)
            self._tokens = []
            self._logits_live = False

    def _embed_check(self) -> None:
        self._check_open()
        if not self.context_params.embeddings:
            raise LlamaError("Llama model must be created with embedding=True to call this method")

    def embed(self, input: Union[str, List[str]], normalize: bool = False, truncate: bool = True,
              return_count: bool = False):
        """Embedding(s) of input: a vector per text (pooled contexts) or a list of per-token
        vectors per text (pooling NONE); unit length when normalize. truncate cuts a text to
        n_batch tokens, else a longer one raises ValueError. return_count also returns the number
        of tokens embedded. Several texts share a llama_decode when they fit."""
        self._embed_check()
        single = isinstance(input, str)
        texts = [input] if single else list(input)
        lists = []
        for t in texts:
            toks = self.tokenize(t.encode("utf-8") if isinstance(t, str) else t, add_bos=True)
            if truncate:
                toks = toks[:self.n_batch]
            if not toks:
                raise ValueError("cannot embed an empty text")
            if len(toks) > self.n_batch:
                raise ValueError(f"Requested tokens ({len(toks)}) exceed batch size of {self.n_batch}")
            lists.append(toks)
        vecs = self._embed_tokens(lists, E.output_size(self._ctx, self._model), normalize)
        result = vecs[0] if single else vecs
        total = sum(len(x) for x in lists)
        return (result, total) if return_count else result

    def _rerank_tokens(self, query: str, document: str) -> List[int]:
        return E.rerank_tokens(self._model, lambda b, bos, sp: self.tokenize(b, add_bos=bos, special=sp), query, document)

    def rerank(self, query: str, documents: List[str], truncate: bool = True) -> List[float]:
        """Relevance scores of documents for query, in document order (needs a reranking model
        and a context with RANK pooling: Llama(..., embedding=True, pooling_type=LLAMA_POOLING_TYPE_RANK),
        which a reranker's GGUF selects by itself)."""
        self._embed_check()
        if C.llama_pooling_type(self._ctx) != C.LLAMA_POOLING_TYPE_RANK:
            raise LlamaError("rerank needs RANK pooling (a reranking model, or pooling_type=LLAMA_POOLING_TYPE_RANK)")
        lists = []
        for doc in documents:
            toks = self._rerank_tokens(query, doc)
            if len(toks) > self.n_batch:
                if not truncate:
                    raise ValueError(f"Requested tokens ({len(toks)}) exceed batch size of {self.n_batch}")
                toks = toks[:self.n_batch]
            lists.append(toks)
        return [v[0] for v in self._embed_tokens(lists, 1)] if lists else []

    def create_embedding(self, input: Union[str, List[str]], model: Optional[str] = None, *,
                         dimensions: Optional[int] = None) -> Dict[str, Any]:
        """OpenAI-style embeddings response for one text or a list of texts. dimensions (as
        OpenAI's parameter): the first dimensions components of each pooled vector, renormalized
        (Matryoshka models such as nomic-embed-text-v1.5); ValueError beyond the model's size."""
        texts = input if isinstance(input, list) else [input]
        if dimensions is not None:
            self._embed_check()
            E.check_dimensions(dimensions, E.output_size(self._ctx, self._model))
            if C.llama_pooling_type(self._ctx) == C.LLAMA_POOLING_TYPE_NONE:
                raise ValueError("dimensions needs a pooled embedding (this context's pooling is NONE)")
        vecs, n_tok = self.embed(texts, return_count=True)
        if dimensions is not None:
            vecs = [E.truncate(v, dimensions) for v in vecs]
        return {"object": "list", "model": model if model is not None else self.model_path,
                "data": [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vecs)],
                "usage": {"prompt_tokens": n_tok, "total_tokens": n_tok}}
