"""Llama.embed / create_embedding (mixed into Llama; needs Llama(..., embedding=True)).

Each text is one decode of up to n_ctx tokens (an embedding context's batch is the whole
context, so a text is never split across decodes that would each pool separately). Pooling is
the context's: MEAN, CLS, LAST give one vector per text, NONE one vector per token.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from . import llama_cpp as C
from ._lib import LlamaError
from ._runtime import embed as E


class _EmbedMixin:
    def embed(self, input: Union[str, List[str]], normalize: bool = False, truncate: bool = True,
              return_count: bool = False):
        """Embedding(s) of input: a vector per text (pooled contexts) or a list of per-token
        vectors per text (pooling NONE); unit length when normalize. truncate cuts a text to
        n_ctx tokens, else a longer one raises ValueError. return_count also returns the number
        of tokens embedded."""
        self._check_open()
        if not self.context_params.embeddings:
            raise LlamaError("Llama model must be created with embedding=True to call this method")
        single = isinstance(input, str)
        texts = [input] if single else list(input)
        n_out = E.output_size(self._ctx, self._model)
        out: List[Any] = []
        total = 0
        batch = C.llama_batch_init(self.n_batch, 0, 1)
        try:
            for t in texts:
                toks = self.tokenize(t.encode("utf-8") if isinstance(t, str) else t, add_bos=True)
                if truncate:
                    toks = toks[:self.n_batch]
                if not toks:
                    raise ValueError("cannot embed an empty text")
                if len(toks) > self.n_batch:
                    raise ValueError(f"Requested tokens ({len(toks)}) exceed batch size of {self.n_batch}")
                total += len(toks)
                out += E.decode_embeddings(self._ctx, batch, [toks], n_out, normalize)
        finally:
            C.llama_batch_free(batch)
            C.llama_memory_clear(C.llama_get_memory(self._ctx), True)
            self._tokens = []
            self._logits_live = False
        result = out[0] if single else out
        return (result, total) if return_count else result

    def create_embedding(self, input: Union[str, List[str]], model: Optional[str] = None) -> Dict[str, Any]:
        """OpenAI-style embeddings response for one text or a list of texts."""
        texts = input if isinstance(input, list) else [input]
        vecs, n_tok = self.embed(texts, return_count=True)
        return {"object": "list", "model": model if model is not None else self.model_path,
                "data": [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vecs)],
                "usage": {"prompt_tokens": n_tok, "total_tokens": n_tok}}
