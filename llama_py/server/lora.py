"""LoRA adapters of a served model, as llama-server exposes them.

    python -m llama_py serve -m base.gguf --lora style.gguf --lora code.gguf:0.5

Adapters load once, with the model, and are numbered in command-line order (their `id`). Each
has a server-wide scale (`--lora PATH:SCALE`, default 1; `--lora-init-without-apply` starts them
at 0; POST /lora-adapters `[{"id": 0, "scale": 0.5}]` changes them; GET /lora-adapters lists
them). A request's `"lora": [{"id": 1, "scale": 1.0}]` picks its own scales instead (adapters it
does not list: 0), as llama-server does. The set a request resolves to is fixed when it is
submitted; the engine sets it on the request's sequence only (llama_set_adapters_lora_seq), so
requests with different adapters still share one llama_decode per step. An activated LoRA
(aLoRA) applies from the start of the last occurrence of its invocation tokens in the prompt on
(llama_set_alora_start; the rows before are the base model's); one per request.
"""
from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import llama_cpp as C
from .._lib import LlamaError

# the adapters and scales a sequence is computed with: ((id, scale), ...) with scale != 0, by id
LoraKey = Tuple[Tuple[int, float], ...]


def parse_lora_arg(spec: str) -> Tuple[str, float]:
    """`PATH` or `PATH:SCALE` (a trailing number after the last ':') -> (path, scale)."""
    path, sep, tail = spec.rpartition(":")
    if sep and path:
        try:
            return path, float(tail)
        except ValueError:
            pass
    return spec, 1.0


@dataclass
class _Adapter:
    id: int
    path: str
    scale: float
    handle: Any
    alora_tokens: List[int]


class LoraAdapters:
    """The adapters loaded for one model; scales may change while requests run."""

    def __init__(self, model, specs: Sequence[Tuple[str, float]] = ()):
        self._lock = threading.Lock()
        self.items: List[_Adapter] = []
        try:
            for path, scale in specs:
                if not os.path.isfile(path):
                    raise LlamaError(f"LoRA adapter path does not exist: {path}")
                h = C.llama_adapter_lora_init(model.handle, path.encode())
                if not h:
                    raise LlamaError(f"failed to load the LoRA adapter {path} for {model.path} (see the log for why)")
                n = C.llama_adapter_get_alora_n_invocation_tokens(h)
                toks = C.llama_adapter_get_alora_invocation_tokens(h)
                self.items.append(_Adapter(len(self.items), path, float(scale), h, [toks[i] for i in range(n)]))
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.items)

    def close(self) -> None:
        """Frees the adapters (before the model; engines using them must be closed first)."""
        for a in self.items:
            if a.handle:
                C.llama_adapter_lora_free(a.handle)
                a.handle = None
        self.items = []

    def info(self) -> List[Dict[str, Any]]:
        """GET /lora-adapters: id, path and server-wide scale of each adapter."""
        with self._lock:
            return [{"id": a.id, "path": a.path, "scale": a.scale, "task_name": "", "prompt_prefix": ""}
                    for a in self.items]

    def check(self, scales: Dict[int, float], what: str = "lora") -> None:
        """Raises ValueError naming the first id that is not an adapter's."""
        for i in scales:
            if not 0 <= i < len(self.items):
                raise ValueError(f"{what}: no LoRA adapter has id {i} "
                                 f"({len(self.items)} loaded: ids 0..{len(self.items) - 1})" if self.items else
                                 f"{what}: no LoRA adapters are loaded (serve with --lora PATH)")

    def set_scales(self, scales: Dict[int, float]) -> None:
        """POST /lora-adapters: the listed adapters take the given scales, the others 0."""
        self.check(scales)
        with self._lock:
            for a in self.items:
                a.scale = float(scales.get(a.id, 0.0))

    def resolve(self, scales: Optional[Dict[int, float]]) -> LoraKey:
        """The key a request runs with: its own scales (unlisted ids 0), or the server's when None."""
        if scales is not None:
            self.check(scales)
            return tuple(sorted((i, float(s)) for i, s in scales.items() if s != 0.0))
        with self._lock:
            return tuple((a.id, a.scale) for a in self.items if a.scale != 0.0)

    def alora_start(self, key: LoraKey, prompt: Sequence[int]) -> Optional[int]:
        """None when key has no activated LoRA (aLoRA); else where it applies from: the start of the
        last occurrence of its invocation tokens in prompt (-1: absent, so nowhere), as PEFT and
        llama-server place it. ValueError for several aLoRAs in one request (as llama-server)."""
        inv = [self.items[i].alora_tokens for i, _ in key if self.items[i].alora_tokens]
        if not inv:
            return None
        if len(inv) > 1:
            raise ValueError("lora: cannot run multiple aLoRAs in a single request")
        t, n = inv[0], len(inv[0])
        for i in range(len(prompt) - n, -1, -1):
            if list(prompt[i:i + n]) == t:
                return i
        return -1

    def apply(self, ctx, seq: int, key: LoraKey) -> None:
        """Sets key's adapters on sequence seq of ctx (nothing else changes)."""
        n = len(key)
        arr = (C.llama_adapter_lora_p * max(n, 1))(*[self.items[i].handle for i, _ in key])
        sc = (ctypes.c_float * max(n, 1))(*[s for _, s in key])
        if C.llama_set_adapters_lora_seq(ctx, seq, arr, n, sc) != 0:
            raise LlamaError(f"could not set LoRA adapters {key} on sequence {seq} (see the log)")


def parse_lora_request(v: Any, param: str = "lora") -> Dict[int, float]:
    """A request's `lora` array [{"id": int, "scale": number}] -> {id: scale}; ValueError if malformed."""
    if not isinstance(v, list):
        raise ValueError(f"{param}: must be an array of objects with id and scale")
    out: Dict[int, float] = {}
    for j, e in enumerate(v):
        if not isinstance(e, dict):
            raise ValueError(f"{param}[{j}]: must be an object with id and scale")
        i, s = e.get("id"), e.get("scale", 0.0)
        if isinstance(i, bool) or not isinstance(i, int):
            raise ValueError(f"{param}[{j}].id: must be an integer")
        if isinstance(s, bool) or not isinstance(s, (int, float)) or s != s or abs(s) == float("inf"):
            raise ValueError(f"{param}[{j}].scale: must be a finite number")
        out[i] = float(s)
    return out
