"""llama_py: a from-scratch ggml-style inference engine, driven from Python through ctypes.

Submodules are imported lazily, on first attribute access, so `import llama_py` is cheap,
never loads the shared library, and works even while some parts are still being written:

    import llama_py
    llama_py.ggml          # ctypes mirror of ggml.h (+ gguf.h)
    llama_py.llama_cpp     # ctypes mirror of llama.h
    llama_py.Llama         # the high-level class (from llama_py.llama)
    llama_py.install_as_llama_cpp()   # `import llama_cpp` now gives llama_py (for frameworks)
"""
from __future__ import annotations

import importlib
from typing import Any, List

__version__ = "0.1.0"

# Public submodules, loaded on first access.
_SUBMODULES = ("ggml", "llama_cpp", "llama", "llama_types", "llama_chat_format", "llama_cache", "llama_tokenizer",
               "llama_speculative")

# Names re-exported from a submodule, loaded on first access: name -> submodule.
_EXPORTS = {
    "Llama": "llama",
    # llama-cpp-python's high-level names (issue 20)
    "LlamaState": "llama", "LogitsProcessorList": "llama", "StoppingCriteriaList": "llama", "LlamaGrammar": "llama",
    "LlamaTokenizer": "llama_tokenizer", "LlamaRAMCache": "llama_cache", "LlamaDiskCache": "llama_cache",
    "LlamaCache": "llama_cache", "install_as_llama_cpp": "_llama_cpp_shim",
    "LlamaError": "_lib",
    "LibraryNotFound": "_lib",
}

__all__ = ["__version__", *_SUBMODULES, *_EXPORTS]

# The binding modules' names before they moved into llama_py._capi (`from llama_py import
# _llama_sampling` keeps working).
_MOVED = {f"_llama_{m}": f"_capi.{m}" for m in ("common", "context", "extra", "model", "sampling", "vocab")}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    if name in _MOVED:
        return importlib.import_module(f".{_MOVED[name]}", __name__)
    if name in _EXPORTS:
        module = importlib.import_module(f".{_EXPORTS[name]}", __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'llama_py' has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))
