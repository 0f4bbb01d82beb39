"""`import llama_cpp` resolved to llama_py, for code and frameworks written for llama-cpp-python.

    import llama_py; llama_py.install_as_llama_cpp()    # or: import llama_py.as_llama_cpp
    from llama_cpp import Llama                         # llama_py's Llama
    import llama_cpp.llama_cpp                          # llama_py.llama_cpp, the low-level mirror

The package `llama_cpp` becomes a module holding both levels (as llama-cpp-python's package
re-exports both), and its submodules (llama, llama_cpp, llama_types, llama_chat_format,
llama_grammar, llama_cache, llama_tokenizer, llama_speculative, and with the [server] extra
server / server.app / server.settings) are llama_py's.
"""
from __future__ import annotations

import importlib
import sys
import types

# llama-cpp-python submodule -> llama_py module
_SUBMODULES = {
    "llama": "llama_py.llama", "llama_cpp": "llama_py.llama_cpp", "llama_types": "llama_py.llama_types",
    "llama_chat_format": "llama_py.llama_chat_format", "llama_cache": "llama_py.llama_cache",
    "llama_tokenizer": "llama_py.llama_tokenizer", "llama_speculative": "llama_py.llama_speculative",
    "_internals": "llama_py._internals", "_logger": "llama_py._logger", "_utils": "llama_py._utils",
}
_VERSION = "0.3.36"  # the llama-cpp-python release whose API this mirrors


def install_as_llama_cpp(force: bool = False) -> types.ModuleType:
    """Makes `import llama_cpp` (and its submodules) give llama_py; returns the module.
    A real llama-cpp-python already imported is replaced only with force=True."""
    current = sys.modules.get("llama_cpp")
    if current is not None and getattr(current, "__llama_py__", False):
        return current
    if current is not None and not force:
        raise RuntimeError("llama_cpp (llama-cpp-python) is already imported; call install_as_llama_cpp(force=True) "
                           "to replace it")
    low = importlib.import_module("llama_py.llama_cpp")
    high = importlib.import_module("llama_py.llama")
    pkg = types.ModuleType("llama_cpp", "llama_py standing in for llama-cpp-python's llama_cpp package")
    pkg.__dict__.update({k: v for k, v in vars(low).items() if not k.startswith("__")})
    pkg.__dict__.update({k: getattr(high, k) for k in high.__all__})
    # llama-cpp-python's __init__ re-exports llama_types' names too (ChatCompletionRequestUserMessage, ...)
    types_mod = importlib.import_module("llama_py.llama_types")
    pkg.__dict__.update({k: v for k, v in vars(types_mod).items() if not k.startswith("_") and k[0].isupper()})
    pkg.__version__ = _VERSION
    pkg.__path__ = []  # a package: `import llama_cpp.x` looks in sys.modules first
    pkg.__llama_py__ = True
    sys.modules["llama_cpp"] = pkg
    for sub, target in _SUBMODULES.items():
        mod = importlib.import_module(target)
        sys.modules[f"llama_cpp.{sub}"] = mod
        setattr(pkg, sub, mod)
    try:
        grammar = importlib.import_module("llama_py.grammar")
    except ImportError:
        grammar = types.ModuleType("llama_cpp.llama_grammar", "grammar support is absent from this llama_py build")
        grammar.LlamaGrammar = high.LlamaGrammar
    sys.modules["llama_cpp.llama_grammar"] = grammar
    pkg.llama_grammar = grammar
    try:  # the [server] extra: llama_cpp.server, .app and .settings are llama_py.server.lcp
        server = importlib.import_module("llama_py.server.lcp")
    except ImportError:
        server = None
    if server is not None:
        for name in ("llama_cpp.server", "llama_cpp.server.app", "llama_cpp.server.settings"):
            sys.modules[name] = server
        pkg.server = server
    return pkg
