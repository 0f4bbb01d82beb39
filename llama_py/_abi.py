"""The one layout check: a ctypes Structure against the library's sizeof/offsetof tables.

The library describes its public structs by name (`ggml_abi_struct_size`,
`ggml_abi_field_offset`, and the llama layer's `llama_abi_*` twins). Every mirror module
(llama_py.ggml, its gguf part, llama_py.llama_cpp) checks its Structures with
`check_struct_layout` and its ABI version with `check_abi_version`; a difference raises
ABIMismatch naming the struct and the field, at import, instead of a segfault later.

ABIMismatch is both a LlamaError and an ImportError, so the `except` clauses written for the
older per-module exceptions (ggml.ABIMismatch, llama_cpp.LayoutMismatch, the LlamaError the
GGUF check raised) keep catching it; those names are aliases of this one class.
"""
from __future__ import annotations

import ctypes
from typing import Callable

from ._lib import LibraryNotFound, LlamaError, load_library

_SIZE_MAX = ctypes.c_size_t(-1).value


class ABIMismatch(LlamaError, ImportError):
    """The Python mirror and the loaded library disagree about the ABI or a struct layout."""


def library_name() -> str:
    """The loaded library's path (for messages), or "libllama" if it is not loaded."""
    try:
        return load_library()._name
    except LibraryNotFound:
        return "libllama"


def check_abi_version(expected: int, actual: int, what: str = "ABI version") -> None:
    """Raises ABIMismatch unless the library's `actual` version equals the `expected` one."""
    if actual != expected:
        raise ABIMismatch(f"{what} mismatch: {library_name()} has {what} {actual}, "
                          f"llama_py expects {what} {expected}; reinstall llama_py so that the "
                          f"library and the Python package come from the same source")


def check_struct_layout(pystruct: type, c_name: str,
                        struct_size: Callable[[bytes], int],
                        field_offset: Callable[[bytes, bytes], int]) -> None:
    """Compares a ctypes Structure (or Union) with the C struct `c_name` as the library describes it.

    `struct_size(name)` / `field_offset(name, field)` are the library's tables; they return 0 /
    SIZE_MAX for names it does not know. The checks, most precise first: a known field at the
    wrong offset; the total size (which catches missing, extra or mis-sized fields); a field
    the library does not know. The first difference raises ABIMismatch naming struct and
    field. Of a Union only the size is compared (the tables describe unions by size).
    """
    cname = c_name.encode()
    c_size = struct_size(cname)
    if c_size == 0:
        raise ABIMismatch(f"struct {c_name}: {library_name()} does not describe this struct "
                          f"(its abi_struct_size returned 0)")
    py_size = ctypes.sizeof(pystruct)
    is_union = issubclass(pystruct, ctypes.Union)
    fields = [] if is_union else [f[0] for f in pystruct._fields_]
    unknown = []
    for fname in fields:
        py_off = getattr(pystruct, fname).offset
        c_off = field_offset(cname, fname.encode())
        if c_off == _SIZE_MAX:
            unknown.append((fname, py_off))
        elif c_off != py_off:
            raise ABIMismatch(f"{c_name}.{fname}: offset {py_off} in Python, {c_off} in the library "
                              f"(field '{fname}' of Python {pystruct.__name__} is misplaced)")
    if c_size != py_size:
        last = pystruct._fields_[-1][0] if pystruct._fields_ else "?"
        extra = f"; fields unknown to the library: {[u[0] for u in unknown]}" if unknown else ""
        raise ABIMismatch(f"{c_name}: size {py_size} in Python, {c_size} in the library "
                          f"(fields missing or mis-sized in Python {pystruct.__name__}, "
                          f"last field '{last}'{extra})")
    if unknown:
        fname, py_off = unknown[0]
        raise ABIMismatch(f"{c_name}: field '{fname}' (offset {py_off} in Python {pystruct.__name__}) "
                          f"is unknown to {library_name()}")

