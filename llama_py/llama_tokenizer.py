"""Tokenizers for `Llama(tokenizer=...)` and `Llama.tokenizer()`, as llama-cpp-python's
`llama_cpp.llama_tokenizer`: the model's own (LlamaTokenizer) or a Hugging Face one
(LlamaHFTokenizer, which needs the `transformers` package)."""
from __future__ import annotations

import abc
from typing import Any, List, Optional


class BaseLlamaTokenizer(abc.ABC):
    """What Llama needs from a tokenizer: bytes -> ids and ids -> bytes."""

    @abc.abstractmethod
    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = True) -> List[int]:
        """UTF-8 text to token ids; add_bos adds the model's leading special tokens."""

    @abc.abstractmethod
    def detokenize(self, tokens: List[int], prev_tokens: Optional[List[int]] = None,
                   special: bool = False) -> bytes:
        """Token ids to UTF-8 bytes (prev_tokens: the ids before them, for tokenizers whose
        rendering of a token depends on what precedes it)."""


class LlamaTokenizer(BaseLlamaTokenizer):
    """The model's vocabulary, through the Llama object it belongs to."""

    def __init__(self, llama: Any):
        self._llama = llama

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = True) -> List[int]:
        return self._llama._tokenize_vocab(text, add_bos, special)

    def detokenize(self, tokens: List[int], prev_tokens: Optional[List[int]] = None,
                   special: bool = False) -> bytes:
        return self._llama._detokenize_vocab(tokens, special)

    def encode(self, text: str, add_bos: bool = True, special: bool = True) -> List[int]:
        return self.tokenize(text.encode("utf-8", errors="ignore"), add_bos=add_bos, special=special)

    def decode(self, tokens: List[int]) -> str:
        return self.detokenize(tokens).decode("utf-8", errors="ignore")

    @classmethod
    def from_ggml_file(cls, path: str) -> "LlamaTokenizer":
        """The tokenizer of a GGUF file, loading its vocabulary only."""
        from .llama import Llama
        return cls(Llama(model_path=path, vocab_only=True, verbose=False))


class LlamaHFTokenizer(BaseLlamaTokenizer):
    """A Hugging Face tokenizer (anything with encode/decode) in place of the model's."""

    def __init__(self, hf_tokenizer: Any):
        self.hf_tokenizer = hf_tokenizer

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = True) -> List[int]:
        return list(self.hf_tokenizer.encode(text.decode("utf-8", errors="ignore"), add_special_tokens=special))

    def detokenize(self, tokens: List[int], prev_tokens: Optional[List[int]] = None,
                   special: bool = False) -> bytes:
        skip = not special
        if prev_tokens is not None:
            # decode with the context and cut it off: tokenizers that drop a leading space
            # from the first token would otherwise lose it here
            whole = self.hf_tokenizer.decode(list(prev_tokens) + list(tokens), skip_special_tokens=skip)
            head = self.hf_tokenizer.decode(list(prev_tokens), skip_special_tokens=skip)
            return whole[len(head):].encode("utf-8", errors="ignore")
        return self.hf_tokenizer.decode(list(tokens), skip_special_tokens=skip).encode("utf-8", errors="ignore")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str) -> "LlamaHFTokenizer":
        """A local tokenizer folder (no hub is reachable from llama_py's tests)."""
        try:
            from transformers import AutoTokenizer
        except ImportError as e:
            raise ImportError("LlamaHFTokenizer.from_pretrained needs the `transformers` package") from e
        return cls(AutoTokenizer.from_pretrained(pretrained_model_name_or_path))
