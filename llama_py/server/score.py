"""Prompt scoring for /v1/completions with echo and logprobs (how lm-eval-harness's
local-completions and other evaluation tools score text): a second context on the engine's
model whose decodes keep every position's logits, used by one caller at a time."""
from __future__ import annotations

import threading
from typing import List, Optional, Sequence, Tuple

from .. import llama_cpp as C
from .._lib import LlamaError
from .._runtime.logprobs import prompt_logprobs

_N_BATCH = 128  # positions per decode: their logits rows are n_batch x n_vocab floats


class Scorer:
    """Log-probabilities of prompt tokens (each given the ones before it)."""

    def __init__(self, model, n_ctx: int = 2048, n_threads=None):
        self.model = model
        p = C.llama_context_default_params()
        p.n_ctx = n_ctx
        p.n_batch = p.n_ubatch = _N_BATCH
        p.n_seq_max = 1
        if n_threads:
            p.n_threads = p.n_threads_batch = n_threads
        self._ctx = C.llama_init_from_model(model.handle, p)
        if not self._ctx:
            raise LlamaError("failed to create the scoring context")
        self.n_ctx = C.llama_n_ctx(self._ctx)
        self._batch = C.llama_batch_init(_N_BATCH, 0, 1)
        self._lock = threading.Lock()

    def score(self, tokens: Sequence[int], n_top: int) -> List[Tuple[Optional[float], List[Tuple[int, float]]]]:
        """Per token (log p, top n_top (id, log p)); (None, []) for the first. ValueError when
        the tokens do not fit the context."""
        if len(tokens) > self.n_ctx:
            raise ValueError(f"the prompt has {len(tokens)} tokens; scoring takes at most {self.n_ctx}")
        with self._lock:
            return prompt_logprobs(self._ctx, self._batch, tokens, _N_BATCH, self.model.n_vocab, n_top)

    def close(self) -> None:
        if self._ctx:
            C.llama_batch_free(self._batch)
            C.llama_free(self._ctx)
            self._ctx = None
