"""Draft models for `Llama(draft_model=...)`, as llama-cpp-python's `llama_cpp.llama_speculative`.

A draft model proposes tokens that might follow; `Llama.generate` decodes them in the same batch
as the sampled token and keeps those the main model's own sampling agrees with, so the output
is the same as without a draft, only (when drafts are good) with fewer decode calls.
"""
from __future__ import annotations

import abc
from typing import Any

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
