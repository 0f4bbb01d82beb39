"""Draft models for `Llama(draft_model=...)`, as llama-cpp-python's `llama_cpp.llama_speculative`.

A draft model proposes tokens that might follow; `Llama.generate` decodes them in the same batch
as the sampled token and keeps those the main model's own sampling agrees with, so the output
is the same as without a draft, only (when drafts are good) with fewer decode calls.
"""
from __future__ import annotations

import abc
from typing import Any, Optional

import numpy as np


class LlamaDraftModel(abc.ABC):
    """Given the tokens so far, returns proposed next tokens (an int array, may be empty)."""

    @abc.abstractmethod
    def __call__(self, input_ids: np.ndarray, /, **kwargs: Any) -> np.ndarray:
        ...


class LlamaPromptLookupDecoding(LlamaDraftModel):
    """Prompt lookup decoding: find the latest earlier occurrence of the last n tokens
    (n from max_ngram_size down to 1) and propose the num_pred_tokens that followed it."""

    def __init__(self, max_ngram_size: int = 2, num_pred_tokens: int = 10):
        self.max_ngram_size = max_ngram_size
        self.num_pred_tokens = num_pred_tokens

    @staticmethod
    def find_candidate_pred_tokens(input_ids: np.ndarray, max_ngram_size: int, num_pred_tokens: int) -> np.ndarray:
        ids = np.asarray(input_ids, dtype=np.intc)
        n_ids = len(ids)
        for n in range(min(max_ngram_size, n_ids - 1), 0, -1):
            tail = ids[n_ids - n:]
            # every earlier start whose n tokens equal the tail (not the tail itself)
            for start in range(n_ids - n - 1, -1, -1):
                if np.array_equal(ids[start:start + n], tail):
                    follow = ids[start + n:start + n + num_pred_tokens]
                    if len(follow):
                        return follow.copy()
        return np.zeros(0, dtype=np.intc)

    def __call__(self, input_ids: np.ndarray, /, **kwargs: Any) -> np.ndarray:
        return self.find_candidate_pred_tokens(input_ids, self.max_ngram_size, self.num_pred_tokens)


class LlamaSpeculativeModel(LlamaDraftModel):
    """A smaller model of the same vocabulary as the draft: it proposes its n_draft greedy tokens
    after the text so far (its own context keeps the common prefix between calls, so each call
    decodes only what is new). `Llama(draft_model=...)` checks the vocabularies match.

        draft = LlamaSpeculativeModel("qwen2.5-coder-0.5b.gguf", n_draft=8)
        llm = Llama("qwen2.5-coder-1.5b.gguf", draft_model=draft)
    """

    def __init__(self, model_path: str, n_draft: int = 8, n_ctx: int = 4096, n_threads: Optional[int] = None,
                 **kwargs: Any):
        from .llama import Llama
        if n_draft < 1:
            raise ValueError(f"n_draft must be >= 1, got {n_draft}")
        kwargs.setdefault("verbose", False)
        self.n_draft = n_draft
        self.llm = Llama(model_path, n_ctx=n_ctx, n_threads=n_threads, n_batch=min(512, n_ctx), **kwargs)

    def check_vocab(self, target) -> None:
        """Raises ValueError naming the first token whose text differs from target's (a Llama)."""
        from . import llama_cpp as C
        a, b = self.llm, target
        if a.n_vocab() != b.n_vocab():
            raise ValueError(f"draft model vocabulary has {a.n_vocab()} tokens, the target's {b.n_vocab()}")
        va, vb = C.llama_model_get_vocab(a.model), C.llama_model_get_vocab(b.model)
        for i in range(a.n_vocab()):
            ta, tb = C.llama_vocab_get_text(va, i), C.llama_vocab_get_text(vb, i)
            if ta != tb:
                raise ValueError(f"draft model vocabulary differs from the target's at token {i}: {ta!r} vs {tb!r}")

    def __call__(self, input_ids: np.ndarray, /, **kwargs: Any) -> np.ndarray:
        llm = self.llm
        ids = [int(t) for t in input_ids]
        if len(ids) + self.n_draft > llm.n_ctx():
            return np.zeros(0, dtype=np.intc)
        keep = llm.longest_token_prefix(llm._tokens, ids)
        if keep == len(ids):
            keep -= 1                      # decode at least one token to have its logits
        llm.n_tokens = keep
        llm.eval(ids[keep:])
        out = []
        for _ in range(self.n_draft):
            t = int(np.argmax(llm._logits_row()))
            out.append(t)
            if len(out) == self.n_draft:
                break
            llm.eval([t])
        return np.array(out, dtype=np.intc)

    def close(self) -> None:
        self.llm.close()
