"""Finds and loads libllama, and the one decorator that binds a C function.

The library is looked up, in order: $LLAMA_PY_LIB (a file path), the package folder
(where `pip install` puts it), then build folders of a source checkout.
"""
from __future__ import annotations

import ctypes
import functools
import inspect
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


_INT_RANGES = {}
for _t in (ctypes.c_int8, ctypes.c_int16, ctypes.c_int32, ctypes.c_int64, ctypes.c_int, ctypes.c_long):
    _bits = ctypes.sizeof(_t) * 8
    _INT_RANGES[_t] = (-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1)
for _t in (ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint, ctypes.c_ulong,
           ctypes.c_size_t):
    _INT_RANGES[_t] = (0, (1 << (ctypes.sizeof(_t) * 8)) - 1)


def ctypes_function(name: str, argtypes: List[Any], restype: Any) -> Callable:
    """Binds the C function `name` to the decorated Python signature.

    Binding is lazy: the symbol is looked up on the first call, so a function missing
    from the library raises AttributeError naming it then, never at import. Integer
    arguments out of their C type's range raise OverflowError and wrongly typed arguments
    raise TypeError, both naming the parameter (plain ctypes would truncate silently or
    say only "argument 2").
    """
    def decorator(pyfunc: Callable) -> Callable:
        cfunc = None
        try:
            params = [p.name for p in inspect.signature(pyfunc).parameters.values()]
        except (TypeError, ValueError):
            params = []
        pnames = [params[i] if i < len(params) else f"#{i + 1}" for i in range(len(argtypes))]
        checks = [(i, _INT_RANGES[t]) for i, t in enumerate(argtypes) if t in _INT_RANGES]

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
            for i, (lo, hi) in checks:
                if i < len(args):
                    v = args[i]
                    if type(v) is int and not lo <= v <= hi:
                        raise OverflowError(f"{name}: {pnames[i]} = {v} is out of range [{lo}, {hi}]")
            try:
                return cfunc(*args)
            except ctypes.ArgumentError as e:
                msg = str(e)
                idx = None
                if msg.startswith("argument "):
                    try:
                        idx = int(msg.split()[1].rstrip(":")) - 1
                    except ValueError:
                        idx = None
                pname = pnames[idx] if idx is not None and 0 <= idx < len(pnames) else "?"
                raise TypeError(f"{name}: bad argument {pname!r}: {msg}") from None

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
