"""Prompt caches for `Llama.set_cache`: saved context states keyed by the tokens they hold.

A lookup with a token sequence returns the stored state whose key shares the longest common
prefix with it (KeyError when none shares even one token); `Llama.create_completion` loads
that state when it covers more of the prompt than the live context does, so only the rest of
the prompt is decoded. Both caches drop their oldest entries once they exceed capacity_bytes.

    llm.set_cache(LlamaRAMCache(capacity_bytes=1 << 30))
    llm.set_cache(LlamaDiskCache(cache_dir="~/.cache/llama_py/prompts"))
"""
from __future__ import annotations

import hashlib
import os
import pickle
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .llama import LlamaState


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _best_key(keys: Iterable[Tuple[int, ...]], key: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
    """The key sharing the longest (non-empty) prefix with key; the first of equals wins."""
    best, best_n = None, 0
    for k in keys:
        n = _common_prefix(k, key)
        if n > best_n:
            best, best_n = k, n
    return best


class BaseLlamaCache(ABC):
    """Interface of a prompt cache: mapping from token sequences to LlamaState by longest prefix."""

    def __init__(self, capacity_bytes: int = (2 << 30)):
        self.capacity_bytes = capacity_bytes

    @property
    @abstractmethod
    def cache_size(self) -> int:
        """Bytes of context state held."""

    def _find_longest_prefix_key(self, key: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
        return None

    @abstractmethod
    def __getitem__(self, key: Sequence[int]) -> "LlamaState":
        ...

    @abstractmethod
    def __contains__(self, key: Sequence[int]) -> bool:
        ...

    @abstractmethod
    def __setitem__(self, key: Sequence[int], value: "LlamaState") -> None:
        ...


class LlamaRAMCache(BaseLlamaCache):
    """States held in memory, least recently used dropped first."""

    def __init__(self, capacity_bytes: int = (2 << 30)):
        super().__init__(capacity_bytes)
        self.cache_state: "OrderedDict[Tuple[int, ...], LlamaState]" = OrderedDict()

    @property
    def cache_size(self) -> int:
        return sum(s.llama_state_size for s in self.cache_state.values())

    def _find_longest_prefix_key(self, key: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
        return _best_key(self.cache_state.keys(), key)

    def __getitem__(self, key: Sequence[int]) -> "LlamaState":
        k = self._find_longest_prefix_key(tuple(key))
        if k is None:
            raise KeyError("no cached state shares a prefix with these tokens")
        self.cache_state.move_to_end(k)
        return self.cache_state[k]

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._find_longest_prefix_key(tuple(key)) is not None

    def __setitem__(self, key: Sequence[int], value: "LlamaState") -> None:
        key = tuple(key)
        self.cache_state.pop(key, None)
        self.cache_state[key] = value
        while self.cache_state and self.cache_size > self.capacity_bytes:
            self.cache_state.popitem(last=False)


LlamaCache = LlamaRAMCache  # the older name


class LlamaDiskCache(BaseLlamaCache):
    """States pickled into files under cache_dir (one file per key, an index of the keys),
    oldest written dropped first; survives the process, so a later run reuses a prompt."""

    def __init__(self, cache_dir: str = ".cache/llama_cache", capacity_bytes: int = (2 << 30)):
        super().__init__(capacity_bytes)
        self.cache_dir = os.path.expanduser(cache_dir)
        os.makedirs(self.cache_dir, exist_ok=True)
        self._index_path = os.path.join(self.cache_dir, "index.pkl")

    # the index: key tuple -> (file name, state bytes), in insertion order
    def _index(self) -> "OrderedDict[Tuple[int, ...], Tuple[str, int]]":
        try:
            with open(self._index_path, "rb") as f:
                return pickle.load(f)
        except (FileNotFoundError, EOFError, pickle.UnpicklingError):
            return OrderedDict()

    def _write_index(self, index) -> None:
        tmp = self._index_path + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump(index, f)
        os.replace(tmp, self._index_path)

    @property
    def cache_size(self) -> int:
        return sum(size for _, size in self._index().values())

    def _find_longest_prefix_key(self, key: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
        return _best_key(self._index().keys(), key)

    def __getitem__(self, key: Sequence[int]) -> "LlamaState":
        index = self._index()
        k = _best_key(index.keys(), tuple(key))
        if k is None:
            raise KeyError("no cached state shares a prefix with these tokens")
        with open(os.path.join(self.cache_dir, index[k][0]), "rb") as f:
            return pickle.load(f)

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._find_longest_prefix_key(tuple(key)) is not None

    def __setitem__(self, key: Sequence[int], value: "LlamaState") -> None:
        key = tuple(key)
        index = self._index()
        name = hashlib.sha256(repr(key).encode()).hexdigest()[:32] + ".state"
        tmp = os.path.join(self.cache_dir, name + ".tmp")
        with open(tmp, "wb") as f:
            pickle.dump(value, f)
        os.replace(tmp, os.path.join(self.cache_dir, name))
        index.pop(key, None)
        index[key] = (name, int(value.llama_state_size))
        while index and sum(s for _, s in index.values()) > self.capacity_bytes:
            _, (old, _) = index.popitem(last=False)
            try:
                os.remove(os.path.join(self.cache_dir, old))
            except FileNotFoundError:
                pass
        self._write_index(index)
