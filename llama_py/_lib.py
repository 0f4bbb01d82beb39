"""Finds and loads libllama, and the one decorator that binds a C function.

The library is looked up, in order: $LLAMA_PY_LIB (a file path), the package folder
(where `pip install` puts it), then build folders of a source checkout.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional

_PKG_DIR = Path(__file__).resolve().parent

if sys.platform == "win32":
    _LIB_NAMES = ["llama.dll"]
elif sys.platform == "darwin":
    _LIB_NAMES = ["libllama.dylib"]
else:
    _LIB_NAMES = ["libllama.so"]


class LibraryNotFound(OSError):
    """The shared library could not be found or loaded."""


def _candidates() -> List[Path]:
    env = os.environ.get("LLAMA_PY_LIB")
    if env:
        return [Path(env)]
    out = [_PKG_DIR / n for n in _LIB_NAMES]
    root = _PKG_DIR.parent
    for sub in ("build/py", "build"):
        out += [root / sub / n for n in _LIB_NAMES]
    return out


_lib: Optional[ctypes.CDLL] = None


def load_library() -> ctypes.CDLL:
    """Returns the loaded library, loading it on first use."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if not path.exists():
            continue
        if sys.platform == "win32":
            os.add_dll_directory(str(path.parent))
        try:
            _lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise LibraryNotFound(f"found {path} but could not load it: {e}") from e
        return _lib
    raise LibraryNotFound(
        "libllama not found; looked at: " + ", ".join(tried) +
        ". Install the package with `pip install .` or set LLAMA_PY_LIB to the library's path.")


def ctypes_function(name: str, argtypes: List[Any], restype: Any) -> Callable:
    """Binds the C function `name` to the decorated Python signature.

    Binding is lazy: the symbol is looked up on the first call, so a function missing
    from the library raises AttributeError naming it then, never at import.
    """
    def decorator(pyfunc: Callable) -> Callable:
        cfunc = None

        @functools.wraps(pyfunc)
        def wrapper(*args):
            nonlocal cfunc
            if cfunc is None:
                lib = load_library()
                try:
                    f = getattr(lib, name)
                except AttributeError:
                    raise AttributeError(f"{name} is not exported by {lib._name}") from None
                f.argtypes = argtypes
                f.restype = restype
                cfunc = f
            return cfunc(*args)

        wrapper.c_name = name
        wrapper.argtypes = argtypes
        wrapper.restype = restype
        return wrapper

    return decorator


class LlamaError(RuntimeError):
    """An error reported by the library; `code` carries the C return value when there is one."""

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message if code is None else f"{message} (code {code})")
        self.code = code
