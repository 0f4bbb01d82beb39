"""ctypes mirror of gguf.h: read and write GGUF files (re-exported by llama_py.ggml).

Every function of gguf.h is bound here, once, with the C argument names. Handles
(`struct gguf_context *`, `struct gguf_mmap *`, `struct ggml_context *`) are `c_void_p`:
functions return a plain int address, or None for NULL. Strings go in and come out as
bytes (`gguf_find_key(ctx, b"general.architecture")`).

Example:

    from llama_py import ggml
    meta = ctypes.c_void_p()
    g = ggml.gguf_init_from_file(b"model.gguf", ggml.gguf_init_params(True, ctypes.pointer(meta)))
    if g is None: ...                                   # refused; the log says why
    arch = ggml.gguf_get_val_str(g, ggml.gguf_find_key(g, b"general.architecture"))
    values = ggml.gguf_kv_to_python(g)                  # {key: value} for all metadata
    ggml.gguf_free(g); ggml.ggml_free(meta)

The layout of `gguf_init_params` is compared with the library's own description
(ggml_abi_*, via llama_py._abi) before the first gguf_init_* call; a difference raises
ABIMismatch naming it.
"""
from __future__ import annotations

import ctypes
import enum
import struct
from ctypes import (POINTER, Structure, c_bool, c_char_p, c_double, c_float, c_int, c_int8,
                    c_int16, c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64,
                    c_void_p)
from typing import Any, Dict, Optional

from . import _abi
from ._lib import LlamaError, ctypes_function

__all__ = [
    "GGUF_MAGIC", "GGUF_VERSION", "GGUF_DEFAULT_ALIGNMENT", "GGUF_KEY_GENERAL_ALIGNMENT",
    "gguf_type", "gguf_init_params", "GGUF_TYPE_SIZES", "gguf_kv_to_python", "gguf_value",
]

# ---- constants ----

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
GGUF_DEFAULT_ALIGNMENT = 32
GGUF_KEY_GENERAL_ALIGNMENT = b"general.alignment"


class gguf_type(enum.IntEnum):
    """Value types of metadata."""
    GGUF_TYPE_UINT8 = 0
    GGUF_TYPE_INT8 = 1
    GGUF_TYPE_UINT16 = 2
    GGUF_TYPE_INT16 = 3
    GGUF_TYPE_UINT32 = 4
    GGUF_TYPE_INT32 = 5
    GGUF_TYPE_FLOAT32 = 6
    GGUF_TYPE_BOOL = 7
    GGUF_TYPE_STRING = 8
    GGUF_TYPE_ARRAY = 9
    GGUF_TYPE_UINT64 = 10
    GGUF_TYPE_INT64 = 11
    GGUF_TYPE_FLOAT64 = 12
    GGUF_TYPE_COUNT = 13


for _m in gguf_type:
    globals()[_m.name] = _m
    __all__.append(_m.name)
del _m

# Bytes per element and struct format of the fixed-size value types.
GGUF_TYPE_SIZES = {
    gguf_type.GGUF_TYPE_UINT8: (1, "B"), gguf_type.GGUF_TYPE_INT8: (1, "b"),
    gguf_type.GGUF_TYPE_UINT16: (2, "H"), gguf_type.GGUF_TYPE_INT16: (2, "h"),
    gguf_type.GGUF_TYPE_UINT32: (4, "I"), gguf_type.GGUF_TYPE_INT32: (4, "i"),
    gguf_type.GGUF_TYPE_FLOAT32: (4, "f"), gguf_type.GGUF_TYPE_BOOL: (1, "?"),
    gguf_type.GGUF_TYPE_UINT64: (8, "Q"), gguf_type.GGUF_TYPE_INT64: (8, "q"),
    gguf_type.GGUF_TYPE_FLOAT64: (8, "d"),
}


class gguf_init_params(Structure):
    """Reading options: with ctx non-NULL, *ctx receives a new ggml context holding one tensor
    per GGUF tensor (metadata only when no_alloc; otherwise data read into the context)."""
    _fields_ = [
        ("no_alloc", c_bool),
        ("ctx", POINTER(c_void_p)),  # struct ggml_context ** (or NULL)
    ]


_gctx = c_void_p   # struct gguf_context *
_mmap = c_void_p   # struct gguf_mmap *
_type = c_int      # enum gguf_type
_gtype = c_int     # enum ggml_type
_tensor = c_void_p  # const struct ggml_tensor *


# ---- layout check of gguf_init_params against the library ----

@ctypes_function("ggml_abi_struct_size", [c_char_p], c_size_t)
def _abi_struct_size(struct_name):
    ...


@ctypes_function("ggml_abi_field_offset", [c_char_p, c_char_p], c_size_t)
def _abi_field_offset(struct_name, field_name):
    ...


_layout_checked = False


def _check_layout() -> None:
    global _layout_checked
    if not _layout_checked:
        _abi.check_struct_layout(gguf_init_params, "gguf_init_params", _abi_struct_size, _abi_field_offset)
        _layout_checked = True


def _exported(fn):
    __all__.append(fn.__name__)
    return fn


# ---- construction and destruction ----

# Empty context for writing. Free with gguf_free.
@_exported
@ctypes_function("gguf_init_empty", [], _gctx)
def gguf_init_empty():
    ...


@ctypes_function("gguf_init_from_file", [c_char_p, gguf_init_params], _gctx)
def _gguf_init_from_file(fname, params):
    ...


# Parses a file; NULL (and a logged reason naming the bad field) if it is not a valid GGUF.
@_exported
def gguf_init_from_file(fname, params):
    _check_layout()
    if isinstance(fname, str):
        fname = fname.encode()
    return _gguf_init_from_file(fname, params)


gguf_init_from_file.c_name = "gguf_init_from_file"


@ctypes_function("gguf_init_from_buffer", [c_void_p, c_size_t, gguf_init_params], _gctx)
def _gguf_init_from_buffer(data, size, params):
    ...


# Parses a GGUF held in memory (size bytes); same checks as gguf_init_from_file.
# data may be an address, a ctypes buffer or bytes (copied into an exact-size buffer).
@_exported
def gguf_init_from_buffer(data, size, params):
    _check_layout()
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = (ctypes.c_char * len(data)).from_buffer_copy(bytes(data))
    return _gguf_init_from_buffer(data, size, params)


gguf_init_from_buffer.c_name = "gguf_init_from_buffer"


# Frees the context; NULL-safe.
@_exported
@ctypes_function("gguf_free", [_gctx], None)
def gguf_free(ctx):
    ...


# Name of a value type ("u32", "str", ...).
@_exported
@ctypes_function("gguf_type_name", [_type], c_char_p)
def gguf_type_name(type):
    ...


# File version (2 or 3).
@_exported
@ctypes_function("gguf_get_version", [_gctx], c_uint32)
def gguf_get_version(ctx):
    ...


# Alignment of tensor data in bytes.
@_exported
@ctypes_function("gguf_get_alignment", [_gctx], c_size_t)
def gguf_get_alignment(ctx):
    ...


# Byte offset of the tensor data section in the file.
@_exported
@ctypes_function("gguf_get_data_offset", [_gctx], c_size_t)
def gguf_get_data_offset(ctx):
    ...


# ---- metadata ----

# Number of metadata key/value pairs.
@_exported
@ctypes_function("gguf_get_n_kv", [_gctx], c_int64)
def gguf_get_n_kv(ctx):
    ...


# Index of key, or -1.
@_exported
@ctypes_function("gguf_find_key", [_gctx, c_char_p], c_int64)
def gguf_find_key(ctx, key):
    ...


# Key at index (NULL if out of range).
@_exported
@ctypes_function("gguf_get_key", [_gctx, c_int64], c_char_p)
def gguf_get_key(ctx, key_id):
    ...


# Value type at index (GGUF_TYPE_COUNT if out of range).
@_exported
@ctypes_function("gguf_get_kv_type", [_gctx, c_int64], _type)
def gguf_get_kv_type(ctx, key_id):
    ...


# Element type of an array value.
@_exported
@ctypes_function("gguf_get_arr_type", [_gctx, c_int64], _type)
def gguf_get_arr_type(ctx, key_id):
    ...


# Scalar getters: return 0 / false / NULL (logged) on a wrong type or index.
@_exported
@ctypes_function("gguf_get_val_u8", [_gctx, c_int64], c_uint8)
def gguf_get_val_u8(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_i8", [_gctx, c_int64], c_int8)
def gguf_get_val_i8(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_u16", [_gctx, c_int64], c_uint16)
def gguf_get_val_u16(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_i16", [_gctx, c_int64], c_int16)
def gguf_get_val_i16(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_u32", [_gctx, c_int64], c_uint32)
def gguf_get_val_u32(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_i32", [_gctx, c_int64], c_int32)
def gguf_get_val_i32(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_f32", [_gctx, c_int64], c_float)
def gguf_get_val_f32(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_u64", [_gctx, c_int64], c_uint64)
def gguf_get_val_u64(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_i64", [_gctx, c_int64], c_int64)
def gguf_get_val_i64(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_f64", [_gctx, c_int64], c_double)
def gguf_get_val_f64(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_bool", [_gctx, c_int64], c_bool)
def gguf_get_val_bool(ctx, key_id):
    ...


@_exported
@ctypes_function("gguf_get_val_str", [_gctx, c_int64], c_char_p)
def gguf_get_val_str(ctx, key_id):
    ...


# Pointer to a non-array scalar value's bytes (NULL for strings/arrays).
@_exported
@ctypes_function("gguf_get_val_data", [_gctx, c_int64], c_void_p)
def gguf_get_val_data(ctx, key_id):
    ...


# Element count of an array value (0 if not an array).
@_exported
@ctypes_function("gguf_get_arr_n", [_gctx, c_int64], c_size_t)
def gguf_get_arr_n(ctx, key_id):
    ...


# Raw elements of a non-string array (NULL for string arrays).
@_exported
@ctypes_function("gguf_get_arr_data", [_gctx, c_int64], c_void_p)
def gguf_get_arr_data(ctx, key_id):
    ...


# Element i of a string array (NULL if not a string array or out of range).
@_exported
@ctypes_function("gguf_get_arr_str", [_gctx, c_int64, c_size_t], c_char_p)
def gguf_get_arr_str(ctx, key_id, i):
    ...


# Length in bytes of element i of a string array (or of a string value with i = 0); strings
# may hold NUL bytes, which gguf_get_arr_str cannot show. 0 if not a string.
@_exported
@ctypes_function("gguf_get_arr_str_len", [_gctx, c_int64, c_size_t], c_size_t)
def gguf_get_arr_str_len(ctx, key_id, i):
    ...


# ---- tensors ----

# Number of tensors.
@_exported
@ctypes_function("gguf_get_n_tensors", [_gctx], c_int64)
def gguf_get_n_tensors(ctx):
    ...


# Index of tensor name, or -1.
@_exported
@ctypes_function("gguf_find_tensor", [_gctx, c_char_p], c_int64)
def gguf_find_tensor(ctx, name):
    ...


# Offset of the tensor's data relative to the data section.
@_exported
@ctypes_function("gguf_get_tensor_offset", [_gctx, c_int64], c_size_t)
def gguf_get_tensor_offset(ctx, tensor_id):
    ...


# Tensor name.
@_exported
@ctypes_function("gguf_get_tensor_name", [_gctx, c_int64], c_char_p)
def gguf_get_tensor_name(ctx, tensor_id):
    ...


# Tensor type.
@_exported
@ctypes_function("gguf_get_tensor_type", [_gctx, c_int64], _gtype)
def gguf_get_tensor_type(ctx, tensor_id):
    ...


# Tensor data size in bytes.
@_exported
@ctypes_function("gguf_get_tensor_size", [_gctx, c_int64], c_size_t)
def gguf_get_tensor_size(ctx, tensor_id):
    ...


# Number of dims of the tensor (1..4).
@_exported
@ctypes_function("gguf_get_tensor_n_dims", [_gctx, c_int64], c_int)
def gguf_get_tensor_n_dims(ctx, tensor_id):
    ...


# Size of dim i of the tensor.
@_exported
@ctypes_function("gguf_get_tensor_ne", [_gctx, c_int64, c_int], c_int64)
def gguf_get_tensor_ne(ctx, tensor_id, i):
    ...


# ---- writing ----

# Removes key if present; returns its former index or -1.
@_exported
@ctypes_function("gguf_remove_key", [_gctx, c_char_p], c_int64)
def gguf_remove_key(ctx, key):
    ...


# Setters: add the key or overwrite its value (and type).
@_exported
@ctypes_function("gguf_set_val_u8", [_gctx, c_char_p, c_uint8], None)
def gguf_set_val_u8(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_i8", [_gctx, c_char_p, c_int8], None)
def gguf_set_val_i8(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_u16", [_gctx, c_char_p, c_uint16], None)
def gguf_set_val_u16(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_i16", [_gctx, c_char_p, c_int16], None)
def gguf_set_val_i16(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_u32", [_gctx, c_char_p, c_uint32], None)
def gguf_set_val_u32(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_i32", [_gctx, c_char_p, c_int32], None)
def gguf_set_val_i32(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_f32", [_gctx, c_char_p, c_float], None)
def gguf_set_val_f32(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_u64", [_gctx, c_char_p, c_uint64], None)
def gguf_set_val_u64(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_i64", [_gctx, c_char_p, c_int64], None)
def gguf_set_val_i64(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_f64", [_gctx, c_char_p, c_double], None)
def gguf_set_val_f64(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_bool", [_gctx, c_char_p, c_bool], None)
def gguf_set_val_bool(ctx, key, val):
    ...


@_exported
@ctypes_function("gguf_set_val_str", [_gctx, c_char_p, c_char_p], None)
def gguf_set_val_str(ctx, key, val):
    ...


# Array of n elements of a scalar type (copied).
@_exported
@ctypes_function("gguf_set_arr_data", [_gctx, c_char_p, _type, c_void_p, c_size_t], None)
def gguf_set_arr_data(ctx, key, type, data, n):
    ...


# Array of n strings (copied); data is a (c_char_p * n) array.
@_exported
@ctypes_function("gguf_set_arr_str", [_gctx, c_char_p, POINTER(c_char_p), c_size_t], None)
def gguf_set_arr_str(ctx, key, data, n):
    ...


# Copies every key/value of src into ctx.
@_exported
@ctypes_function("gguf_set_kv", [_gctx, _gctx], None)
def gguf_set_kv(ctx, src):
    ...


# Adds a tensor (name, type, shape taken from tensor; data pointer kept, not copied).
@_exported
@ctypes_function("gguf_add_tensor", [_gctx, _tensor], None)
def gguf_add_tensor(ctx, tensor):
    ...


# Changes a tensor's type (offsets of following tensors are recomputed).
@_exported
@ctypes_function("gguf_set_tensor_type", [_gctx, c_char_p, _gtype], None)
def gguf_set_tensor_type(ctx, name, type):
    ...


# Sets the data pointer written for a tensor (kept, not copied).
@_exported
@ctypes_function("gguf_set_tensor_data", [_gctx, c_char_p, c_void_p], None)
def gguf_set_tensor_data(ctx, name, data):
    ...


# Writes the whole file (only_meta: header, kv and tensor infos, no data). false on I/O error.
@_exported
@ctypes_function("gguf_write_to_file", [_gctx, c_char_p, c_bool], c_bool)
def gguf_write_to_file(ctx, fname, only_meta):
    ...


# Bytes of the metadata section including padding to the data section.
@_exported
@ctypes_function("gguf_get_meta_size", [_gctx], c_size_t)
def gguf_get_meta_size(ctx):
    ...


# Writes the metadata section into data (gguf_get_meta_size bytes).
@_exported
@ctypes_function("gguf_get_meta_data", [_gctx, c_void_p], None)
def gguf_get_meta_data(ctx, data):
    ...


# Serialises the whole file into a malloc'ed buffer (*size bytes); caller frees with gguf_buf_free.
@_exported
@ctypes_function("gguf_write_to_buf", [_gctx, POINTER(c_size_t), c_bool], c_void_p)
def gguf_write_to_buf(ctx, size, only_meta):
    ...


# Frees a buffer from gguf_write_to_buf; NULL-safe.
@_exported
@ctypes_function("gguf_buf_free", [c_void_p], None)
def gguf_buf_free(buf):
    ...


# ---- memory maps ----

# Maps the whole file; NULL (logged) on failure.
@_exported
@ctypes_function("gguf_mmap_open", [c_char_p], _mmap)
def gguf_mmap_open(fname):
    ...


# Unmaps; NULL-safe.
@_exported
@ctypes_function("gguf_mmap_close", [_mmap], None)
def gguf_mmap_close(map):
    ...


# Start of the mapped bytes.
@_exported
@ctypes_function("gguf_mmap_addr", [_mmap], c_void_p)
def gguf_mmap_addr(map):
    ...


# Size of the mapping in bytes.
@_exported
@ctypes_function("gguf_mmap_size", [_mmap], c_size_t)
def gguf_mmap_size(map):
    ...


# Reads the whole file into memory instead of mapping it (a loader's use_mmap = false); the
# result works with gguf_mmap_addr / gguf_mmap_size / gguf_mmap_close. NULL (logged) on failure.
@_exported
@ctypes_function("gguf_file_read_all", [c_char_p], _mmap)
def gguf_file_read_all(fname):
    ...


# ---- Python helpers ----

def gguf_value(ctx, key_id: int, max_items: Optional[int] = None) -> Any:
    """The value of key_id as Python: int/float/bool/str, or a list for arrays (strings are
    decoded as UTF-8 with replacement; at most max_items elements of an array when given)."""
    t = gguf_get_kv_type(ctx, key_id)
    if t == GGUF_TYPE_STRING:
        return (gguf_get_val_str(ctx, key_id) or b"").decode("utf-8", "replace")
    if t == GGUF_TYPE_ARRAY:
        et = gguf_get_arr_type(ctx, key_id)
        n = gguf_get_arr_n(ctx, key_id)
        k = n if max_items is None else min(n, max_items)
        if et == GGUF_TYPE_STRING:
            return [(gguf_get_arr_str(ctx, key_id, i) or b"").decode("utf-8", "replace") for i in range(k)]
        size, fmt = GGUF_TYPE_SIZES[gguf_type(et)]
        if k == 0:
            return []
        raw = ctypes.string_at(gguf_get_arr_data(ctx, key_id), k * size)
        return list(struct.unpack(f"<{k}{fmt}", raw))
    if t in GGUF_TYPE_SIZES:
        size, fmt = GGUF_TYPE_SIZES[gguf_type(t)]
        return struct.unpack(f"<{fmt}", ctypes.string_at(gguf_get_val_data(ctx, key_id), size))[0]
    raise LlamaError(f"key id {key_id}: unknown value type {t}")


def gguf_kv_to_python(ctx, max_items: Optional[int] = None) -> Dict[str, Any]:
    """Every metadata key (decoded) -> gguf_value, in file order."""
    out: Dict[str, Any] = {}
    for i in range(gguf_get_n_kv(ctx)):
        out[gguf_get_key(ctx, i).decode("utf-8", "replace")] = gguf_value(ctx, i, max_items)
    return out
