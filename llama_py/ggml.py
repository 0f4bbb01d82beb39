"""ctypes mirror of ggml.h: structs, enums, callback types and every public function.

Handles (contexts, tensors, graphs, thread pools, allocators) are `c_void_p`: functions
return a plain int address, or None for NULL. Read a tensor's fields with
`tensor_struct(t)` and its data with `tensor_to_numpy(t)`.

At import, if the library can be loaded, its ABI version and the size and every field
offset of each struct below are compared with what the library reports about itself
(`ggml_abi_*`); any difference raises `ABIMismatch` naming the struct and field. If the
library cannot be found, the import still succeeds and the error comes at the first call.

The library's log goes to stderr (warnings and errors only) unless `log_set`,
`set_verbose` or `capture_log` route it elsewhere.

Example:

    from llama_py import ggml
    ctx = ggml.ggml_init(ggml.ggml_init_params(16 << 20, None, False))
    a = ggml.tensor_from_numpy(ctx, np.ones((3, 4), np.float32))   # ne = [4, 3]
    b = ggml.tensor_from_numpy(ctx, np.ones((2, 4), np.float32))   # ne = [4, 2]
    c = ggml.ggml_mul_mat(ctx, a, b)                                 # ne = [3, 2]
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, c)
    ggml.ggml_graph_compute_with_ctx(ctx, gf, 2)
    print(ggml.tensor_to_numpy(c))                                   # == b @ a.T
    ggml.ggml_free(ctx)
"""
from __future__ import annotations

import contextlib
import ctypes
import enum
import functools
import sys
from ctypes import (POINTER, Structure, c_bool, c_char, c_char_p, c_double, c_float, c_int,
                    c_int32, c_int64, c_size_t, c_uint16, c_void_p)
from typing import Any, Callable, Iterator, List, Optional, Tuple

from . import _abi
from ._lib import LibraryNotFound, LlamaError, ctypes_function, load_library

# ---- constants (ggml.h) ----

GGML_ABI_VERSION = 2
GGML_MAX_DIMS = 4
GGML_MAX_SRC = 10
GGML_MAX_OP_PARAMS = 64
GGML_MAX_NAME = 64
GGML_MEM_ALIGN = 64
GGML_DEFAULT_GRAPH_SIZE = 2048

GGML_ROPE_TYPE_NORMAL = 0
GGML_ROPE_TYPE_NEOX = 2
# enum ggml_sort_order
GGML_SORT_ORDER_ASC = 0
GGML_SORT_ORDER_DESC = 1


# ---- enums ----

class ggml_type(enum.IntEnum):
    """Element / block types; the numbers are the GGUF on-disk type ids."""
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    COUNT = 40


class ggml_op(enum.IntEnum):
    """The operation that produced a tensor (order as in ggml.h)."""
    NONE = 0
    DUP = enum.auto()
    ADD = enum.auto()
    SUB = enum.auto()
    MUL = enum.auto()
    DIV = enum.auto()
    SCALE = enum.auto()
    RMS_NORM = enum.auto()
    NORM = enum.auto()
    SILU = enum.auto()
    GELU = enum.auto()
    SWIGLU = enum.auto()
    MUL_MAT = enum.auto()
    SOFT_MAX = enum.auto()
    ROPE = enum.auto()
    DIAG_MASK_INF = enum.auto()
    GET_ROWS = enum.auto()
    SET_ROWS = enum.auto()
    SUM_ROWS = enum.auto()
    ARGMAX = enum.auto()
    CONCAT = enum.auto()
    CPY = enum.auto()
    CONT = enum.auto()
    RESHAPE = enum.auto()
    VIEW = enum.auto()
    PERMUTE = enum.auto()
    TRANSPOSE = enum.auto()
    FLASH_ATTN_EXT = enum.auto()
    TANH = enum.auto()
    MUL_MAT_ID = enum.auto()
    ARGSORT = enum.auto()
    TOP_K = enum.auto()
    SIGMOID = enum.auto()
    SOFTPLUS = enum.auto()
    L2_NORM = enum.auto()
    SSM_CONV = enum.auto()
    GATED_DELTA_NET = enum.auto()
    CLAMP = enum.auto()
    LORA_ADD = enum.auto()
    COUNT = enum.auto()


class ggml_status(enum.IntEnum):
    """Result of a graph computation."""
    ALLOC_FAILED = -2
    FAILED = -1
    SUCCESS = 0
    ABORTED = 1


class ggml_log_level(enum.IntEnum):
    """Severity passed to the log callback."""
    NONE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4
    CONT = 5


class ggml_tensor_flag(enum.IntFlag):
    """Tensor flag bits."""
    INPUT = 1
    OUTPUT = 2
    PARAM = 4


# The C spellings (GGML_TYPE_F32, GGML_OP_ADD, ...) as module constants.
for _enum, _prefix in ((ggml_type, "GGML_TYPE_"), (ggml_op, "GGML_OP_"), (ggml_status, "GGML_STATUS_"),
                       (ggml_log_level, "GGML_LOG_LEVEL_"), (ggml_tensor_flag, "GGML_TENSOR_FLAG_")):
    for _member in _enum:
        globals()[_prefix + _member.name] = _member
del _enum, _prefix, _member


# ---- callback types ----

def callback_type(restype: Any, *argtypes: Any) -> type:
    """A CFUNCTYPE whose instances are C function pointers and that also accepts None (NULL)
    where it is used as an argument type."""
    base = ctypes.CFUNCTYPE(restype, *argtypes)

    @classmethod
    def from_param(cls, obj):
        if obj is None:
            return cls()  # a NULL function pointer
        return base.from_param(obj)

    return type("callback", (base,), {
        "_flags_": base._flags_, "_argtypes_": base._argtypes_, "_restype_": base._restype_,
        "from_param": from_param,
    })


# Called with each log line; text ends with a newline.
ggml_log_callback = callback_type(None, c_int, c_char_p, c_void_p)
# Called when an internal invariant fails; the default prints and aborts.
ggml_abort_hook = callback_type(None, c_char_p, c_int, c_char_p)
# Polled between graph nodes; returning true stops the computation (GGML_STATUS_ABORTED).
ggml_abort_callback = callback_type(c_bool, c_void_p)
# Converts a row of k elements of a type to floats / from floats.
ggml_to_float_t = callback_type(None, c_void_p, POINTER(c_float), c_int64)
ggml_from_float_t = callback_type(None, POINTER(c_float), c_void_p, c_int64)


# ---- structs ----

ggml_fp16_t = c_uint16


class ggml_bf16_t(Structure):
    """bfloat16 storage: the upper 16 bits of a float32."""
    _fields_ = [("bits", c_uint16)]


class ggml_init_params(Structure):
    """Arena parameters: mem_buffer NULL means the context allocates (and frees) mem_size bytes."""
    _fields_ = [
        ("mem_size", c_size_t),    # bytes
        ("mem_buffer", c_void_p),  # caller-owned buffer or NULL
        ("no_alloc", c_bool),      # true: tensors get no data, only metadata
    ]


class ggml_tensor(Structure):
    """An n-dimensional strided tensor; a view shares its view_src's data."""


ggml_tensor._fields_ = [
    ("type", c_int),                                   # enum ggml_type
    ("buffer", c_void_p),                              # ggml_backend_buffer_t holding data, or NULL
    ("ne", c_int64 * GGML_MAX_DIMS),                   # elements per dimension
    ("nb", c_size_t * GGML_MAX_DIMS),                  # stride in bytes per dimension
    ("op", c_int),                                     # enum ggml_op
    ("op_params", c_int32 * (GGML_MAX_OP_PARAMS // 4)),
    ("flags", c_int32),                                # enum ggml_tensor_flag bits
    ("src", POINTER(ggml_tensor) * GGML_MAX_SRC),
    ("view_src", POINTER(ggml_tensor)),                # tensor whose data this one views, or NULL
    ("view_offs", c_size_t),                           # byte offset into view_src's data
    ("data", c_void_p),
    ("name", c_char * GGML_MAX_NAME),
    ("extra", c_void_p),                               # backend-specific
    ("padding", c_char * 8),
]

ggml_tensor_p = POINTER(ggml_tensor)


class ggml_type_traits(Structure):
    """Static description of a type; to_float / from_float_ref are NULL where unsupported."""
    _fields_ = [
        ("type_name", c_char_p),
        ("blck_size", c_int64),         # elements per block
        ("type_size", c_size_t),        # bytes per block
        ("is_quantized", c_bool),
        ("to_float", ggml_to_float_t),
        ("from_float_ref", ggml_from_float_t),
    ]


# Structs whose layout is checked against the library at import: (Python struct, C name).
ABI_CHECKED_STRUCTS: List[Tuple[type, str]] = [
    (ggml_init_params, "ggml_init_params"),
    (ggml_tensor, "ggml_tensor"),
    (ggml_type_traits, "ggml_type_traits"),
]


# ---- ABI ----

# One exception type for every layout/ABI mismatch (llama_py._abi); the old name stays.
ABIMismatch = _abi.ABIMismatch


# ABI version of this library (GGML_ABI_VERSION at build time).
@ctypes_function("ggml_abi_version", [], c_int)
def ggml_abi_version() -> int:
    ...


# sizeof a public struct by name ("ggml_tensor", "ggml_init_params", ...); 0 if unknown.
@ctypes_function("ggml_abi_struct_size", [c_char_p], c_size_t)
def ggml_abi_struct_size(struct_name: bytes) -> int:
    ...


# offsetof a field of a public struct; (size_t)-1 if unknown.
@ctypes_function("ggml_abi_field_offset", [c_char_p, c_char_p], c_size_t)
def ggml_abi_field_offset(struct_name: bytes, field_name: bytes) -> int:
    ...


def check_abi_version(expected: int = GGML_ABI_VERSION, actual: Optional[int] = None) -> None:
    """Raises ABIMismatch unless the library's ABI version (or `actual`) equals `expected`."""
    if actual is None:
        try:
            actual = ggml_abi_version()
        except AttributeError:
            raise ABIMismatch(f"{_abi.library_name()} does not export ggml_abi_version: it predates "
                              f"ABI version {expected} that llama_py expects; rebuild it") from None
    _abi.check_abi_version(expected, actual)


def check_struct_layout(pystruct: type, c_name: str,
                        struct_size: Optional[Callable[[bytes], int]] = None,
                        field_offset: Optional[Callable[[bytes, bytes], int]] = None) -> None:
    """llama_py._abi.check_struct_layout with ggml's tables (ggml_abi_*) by default: raises
    ABIMismatch naming the struct and the field."""
    _abi.check_struct_layout(pystruct, c_name, struct_size or ggml_abi_struct_size,
                             field_offset or ggml_abi_field_offset)


_abi_checked = False


def check_abi() -> None:
    """Checks the ABI version and every struct in ABI_CHECKED_STRUCTS (once per process)."""
    global _abi_checked
    if _abi_checked:
        return
    check_abi_version()
    for pystruct, c_name in ABI_CHECKED_STRUCTS:
        check_struct_layout(pystruct, c_name)
    _abi_checked = True


# Lazily-but-early: check now if the library can be loaded; otherwise every function below
# checks on its first call (where the missing library then raises LibraryNotFound).
try:
    load_library()
except LibraryNotFound:
    pass
else:
    check_abi()


def _c(name: str, argtypes: List[Any], restype: Any) -> Callable:
    """ctypes_function, plus the ABI check before the first call when import could not do it."""
    bind = ctypes_function(name, argtypes, restype)

    def decorator(pyfunc: Callable) -> Callable:
        bound = bind(pyfunc)
        if _abi_checked:
            return bound

        @functools.wraps(bound)
        def checked(*args):
            if not _abi_checked:
                check_abi()
            return bound(*args)

        return checked

    return decorator


# Pointer types used below.
_ctx = c_void_p      # struct ggml_context *
_t = c_void_p        # struct ggml_tensor *
_graph = c_void_p    # struct ggml_cgraph *
_tp = c_void_p       # struct ggml_threadpool *
_galloc = c_void_p   # struct ggml_gallocr *
_type = c_int        # enum ggml_type
_op = c_int          # enum ggml_op


# ---- logging, abort hook ----

# Sets the log callback (NULL restores the default: warnings and errors to stderr).
@_c("ggml_log_set", [ggml_log_callback, c_void_p], None)
def ggml_log_set(callback, user_data):
    ...


# The current log callback (the default one if none is set) and its user data; either may be NULL.
@_c("ggml_log_get", [POINTER(ggml_log_callback), POINTER(c_void_p)], None)
def ggml_log_get(callback, user_data):
    ...


# Logs a message through the current callback (printf-style in C; from Python pass text with no
# % conversions, e.g. b"%s" is not supported: format in Python first).
@_c("ggml_log_internal", [c_int, c_char_p], None)
def ggml_log_internal(level, fmt):
    ...


# Replaces the hook called on internal invariant failures (NULL restores the default).
@_c("ggml_set_abort_hook", [ggml_abort_hook], None)
def ggml_set_abort_hook(hook):
    ...


# Calls the abort hook with file, line and the failed invariant, then aborts (GGML_ASSERT's target).
@_c("ggml_abort", [c_char_p, c_int, c_char_p], None)
def ggml_abort(file, line, message):
    ...


# ---- allocation functions and the allocation-failure test hook (ggml-mem.h) ----

# malloc(size), or NULL (also when the test hook fails this allocation).
@_c("ggml_mem_malloc", [c_size_t], c_void_p)
def ggml_mem_malloc(size):
    ...


# calloc(n, size), or NULL.
@_c("ggml_mem_calloc", [c_size_t, c_size_t], c_void_p)
def ggml_mem_calloc(n, size):
    ...


# realloc(ptr, size), or NULL with ptr still allocated.
@_c("ggml_mem_realloc", [c_void_p, c_size_t], c_void_p)
def ggml_mem_realloc(ptr, size):
    ...


# A copy of the NUL-terminated s, or NULL.
@_c("ggml_mem_strdup", [c_char_p], c_void_p)
def ggml_mem_strdup(s):
    ...


# size bytes (at least 1) aligned to alignment (a power of two, a multiple of sizeof(void *)), or NULL.
@_c("ggml_mem_aligned_alloc", [c_size_t, c_size_t], c_void_p)
def ggml_mem_aligned_alloc(alignment, size):
    ...


# Frees memory from ggml_mem_aligned_alloc; NULL-safe.
@_c("ggml_mem_aligned_free", [c_void_p], None)
def ggml_mem_aligned_free(ptr):
    ...


# Allocation number k (0-based, counted from this call) through the functions above returns
# NULL; k < 0 disables. For the C and Python robustness tests.
@_c("ggml_test_fail_alloc_after", [c_int64], None)
def ggml_test_fail_alloc_after(k):
    ...


# Allocations through the functions above since the last ggml_test_fail_alloc_after (counted
# only while a failure is armed).
@_c("ggml_test_alloc_count", [], c_int64)
def ggml_test_alloc_count():
    ...


# ---- types ----

# Traits of a type; NULL for an unknown or unsupported id.
@_c("ggml_get_type_traits", [_type], POINTER(ggml_type_traits))
def ggml_get_type_traits(type):
    ...


# "f32", "q4_0", ...; "NONE" for unknown ids.
@_c("ggml_type_name", [_type], c_char_p)
def ggml_type_name(type) -> bytes:
    ...


# Bytes per block (per element for non-block types).
@_c("ggml_type_size", [_type], c_size_t)
def ggml_type_size(type) -> int:
    ...


# Elements per block (1 for non-block types).
@_c("ggml_blck_size", [_type], c_int64)
def ggml_blck_size(type) -> int:
    ...


# Bytes of a row of ne elements (ne must be a multiple of the block size).
@_c("ggml_row_size", [_type, c_int64], c_size_t)
def ggml_row_size(type, ne) -> int:
    ...


# Quantizes nrows rows of n_per_row floats from src into dst as type (start: first element, a
# row boundary); imatrix (n_per_row column weights, or None) guides IQ4_NL / IQ4_XS; -> bytes written, 0 on error.
@_c("ggml_quantize_chunk", [_type, c_void_p, c_void_p, c_int64, c_int64, c_int64, c_void_p], c_size_t)
def ggml_quantize_chunk(type, src, dst, start, nrows, n_per_row, imatrix) -> int:
    ...


# True for the types whose quantizers need an importance matrix (IQ3 / IQ2 / IQ1 codebooks).
@_c("ggml_quantize_requires_imatrix", [_type], c_bool)
def ggml_quantize_requires_imatrix(type) -> bool:
    ...


# True for block-quantized types.
@_c("ggml_is_quantized", [_type], c_bool)
def ggml_is_quantized(type) -> bool:
    ...


# "ADD", "MUL_MAT", ...
@_c("ggml_op_name", [_op], c_char_p)
def ggml_op_name(op) -> bytes:
    ...


# ---- fp16 / bf16 ----

# Exact IEEE half -> float.
@_c("ggml_fp16_to_fp32", [ggml_fp16_t], c_float)
def ggml_fp16_to_fp32(x) -> float:
    ...


# float -> IEEE half, round to nearest even.
@_c("ggml_fp32_to_fp16", [c_float], ggml_fp16_t)
def ggml_fp32_to_fp16(x) -> int:
    ...


# Converts n halves to floats.
@_c("ggml_fp16_to_fp32_row", [c_void_p, POINTER(c_float), c_int64], None)
def ggml_fp16_to_fp32_row(x, y, n):
    ...


# Converts n floats to halves.
@_c("ggml_fp32_to_fp16_row", [POINTER(c_float), c_void_p, c_int64], None)
def ggml_fp32_to_fp16_row(x, y, n):
    ...


# bf16 -> float.
@_c("ggml_bf16_to_fp32", [ggml_bf16_t], c_float)
def ggml_bf16_to_fp32(x) -> float:
    ...


# float -> bf16, round to nearest even (NaN stays NaN).
@_c("ggml_fp32_to_bf16", [c_float], ggml_bf16_t)
def ggml_fp32_to_bf16(x) -> ggml_bf16_t:
    ...


# Converts n bf16 to floats.
@_c("ggml_bf16_to_fp32_row", [c_void_p, POINTER(c_float), c_int64], None)
def ggml_bf16_to_fp32_row(x, y, n):
    ...


# Converts n floats to bf16.
@_c("ggml_fp32_to_bf16_row", [POINTER(c_float), c_void_p, c_int64], None)
def ggml_fp32_to_bf16_row(x, y, n):
    ...


# ---- context ----

# Creates an arena; NULL (logged) if the buffer cannot be allocated. Free with ggml_free.
@_c("ggml_init", [ggml_init_params], _ctx)
def ggml_init(params):
    ...


# Frees the arena and everything in it; NULL-safe.
@_c("ggml_free", [_ctx], None)
def ggml_free(ctx):
    ...


# Forgets every object in the arena (memory is reused).
@_c("ggml_reset", [_ctx], None)
def ggml_reset(ctx):
    ...


# Bytes of the arena in use.
@_c("ggml_used_mem", [_ctx], c_size_t)
def ggml_used_mem(ctx) -> int:
    ...


# Bytes of arena needed per tensor object (excluding data).
@_c("ggml_tensor_overhead", [], c_size_t)
def ggml_tensor_overhead() -> int:
    ...


# Bytes of arena needed by a graph of the default size.
@_c("ggml_graph_overhead", [], c_size_t)
def ggml_graph_overhead() -> int:
    ...


# Bytes of arena needed by a graph of `size` nodes.
@_c("ggml_graph_overhead_custom", [c_size_t, c_bool], c_size_t)
def ggml_graph_overhead_custom(size, grads) -> int:
    ...


# Whether new tensors get data.
@_c("ggml_get_no_alloc", [_ctx], c_bool)
def ggml_get_no_alloc(ctx) -> bool:
    ...


# Changes whether new tensors get data.
@_c("ggml_set_no_alloc", [_ctx, c_bool], None)
def ggml_set_no_alloc(ctx, no_alloc):
    ...


# First tensor of the context (iteration order = creation order), or NULL.
@_c("ggml_get_first_tensor", [_ctx], _t)
def ggml_get_first_tensor(ctx):
    ...


# Next tensor after `tensor` in the same context, or NULL.
@_c("ggml_get_next_tensor", [_ctx, _t], _t)
def ggml_get_next_tensor(ctx, tensor):
    ...


# Tensor named `name` in ctx, or NULL.
@_c("ggml_get_tensor", [_ctx, c_char_p], _t)
def ggml_get_tensor(ctx, name):
    ...


# ---- tensors ----

# New tensor with n_dims dims of sizes ne[0..n_dims-1]; NULL on bad args or full arena.
@_c("ggml_new_tensor", [_ctx, _type, c_int, POINTER(c_int64)], _t)
def ggml_new_tensor(ctx, type, n_dims, ne):
    ...


# 1-D tensor.
@_c("ggml_new_tensor_1d", [_ctx, _type, c_int64], _t)
def ggml_new_tensor_1d(ctx, type, ne0):
    ...


# 2-D tensor.
@_c("ggml_new_tensor_2d", [_ctx, _type, c_int64, c_int64], _t)
def ggml_new_tensor_2d(ctx, type, ne0, ne1):
    ...


# 3-D tensor.
@_c("ggml_new_tensor_3d", [_ctx, _type, c_int64, c_int64, c_int64], _t)
def ggml_new_tensor_3d(ctx, type, ne0, ne1, ne2):
    ...


# 4-D tensor.
@_c("ggml_new_tensor_4d", [_ctx, _type, c_int64, c_int64, c_int64, c_int64], _t)
def ggml_new_tensor_4d(ctx, type, ne0, ne1, ne2, ne3):
    ...


# 1-element F32 tensor holding value.
@_c("ggml_new_f32", [_ctx, c_float], _t)
def ggml_new_f32(ctx, value):
    ...


# 1-element I32 tensor holding value.
@_c("ggml_new_i32", [_ctx, c_int32], _t)
def ggml_new_i32(ctx, value):
    ...


# Tensor with the same type and shape as src (new data).
@_c("ggml_dup_tensor", [_ctx, _t], _t)
def ggml_dup_tensor(ctx, src):
    ...


# Tensor viewing all of src's data with the same shape.
@_c("ggml_view_tensor", [_ctx, _t], _t)
def ggml_view_tensor(ctx, src):
    ...


# Sets the name (truncated to GGML_MAX_NAME-1); returns tensor.
@_c("ggml_set_name", [_t, c_char_p], _t)
def ggml_set_name(tensor, name):
    ...


# printf-style ggml_set_name. Variadic: pass only int (c_int/c_int64), bytes (%s) or
# c_double (%f) extra arguments, each wrapped in its ctypes type.
@_c("ggml_format_name", [_t, c_char_p], _t)
def ggml_format_name(tensor, fmt, *args):
    ...


# The tensor's name.
@_c("ggml_get_name", [_t], c_char_p)
def ggml_get_name(tensor) -> bytes:
    ...


# Marks a graph input (its data is never reused by the allocator).
@_c("ggml_set_input", [_t], None)
def ggml_set_input(tensor):
    ...


# Marks a graph output (its data is never reused by the allocator).
@_c("ggml_set_output", [_t], None)
def ggml_set_output(tensor):
    ...


# Bytes spanned by the tensor's data.
@_c("ggml_nbytes", [_t], c_size_t)
def ggml_nbytes(tensor) -> int:
    ...


# Element count.
@_c("ggml_nelements", [_t], c_int64)
def ggml_nelements(tensor) -> int:
    ...


# Rows = ne[1]*ne[2]*ne[3].
@_c("ggml_nrows", [_t], c_int64)
def ggml_nrows(tensor) -> int:
    ...


# Number of dims (trailing dims of size 1 do not count; at least 1).
@_c("ggml_n_dims", [_t], c_int)
def ggml_n_dims(tensor) -> int:
    ...


# True if rows are packed with no gaps, in order.
@_c("ggml_is_contiguous", [_t], c_bool)
def ggml_is_contiguous(tensor) -> bool:
    ...


# True if dims 1..3 were swapped/permuted.
@_c("ggml_is_permuted", [_t], c_bool)
def ggml_is_permuted(tensor) -> bool:
    ...


# True if dims 0 and 1 are swapped.
@_c("ggml_is_transposed", [_t], c_bool)
def ggml_is_transposed(tensor) -> bool:
    ...


# True if ne equal.
@_c("ggml_are_same_shape", [_t, _t], c_bool)
def ggml_are_same_shape(a, b) -> bool:
    ...


# True if b can be broadcast onto a (each a->ne[i] is a multiple of b->ne[i]).
@_c("ggml_can_repeat", [_t, _t], c_bool)
def ggml_can_repeat(b, a) -> bool:
    ...


# Pointer to the data (NULL for no_alloc tensors not yet allocated).
@_c("ggml_get_data", [_t], c_void_p)
def ggml_get_data(tensor):
    ...


# Data as float* (tensor must be F32).
@_c("ggml_get_data_f32", [_t], POINTER(c_float))
def ggml_get_data_f32(tensor):
    ...


# Element i of a contiguous tensor as float (any non-quantized type).
@_c("ggml_get_f32_1d", [_t, c_int64], c_float)
def ggml_get_f32_1d(tensor, i) -> float:
    ...


# Sets element i of a contiguous tensor.
@_c("ggml_set_f32_1d", [_t, c_int64, c_float], None)
def ggml_set_f32_1d(tensor, i, value):
    ...


# Sets every element of a contiguous tensor; returns tensor.
@_c("ggml_set_f32", [_t, c_float], _t)
def ggml_set_f32(tensor, value):
    ...


# ---- views (never copy) ----

# 1-D view of ne0 elements at byte offset.
@_c("ggml_view_1d", [_ctx, _t, c_int64, c_size_t], _t)
def ggml_view_1d(ctx, a, ne0, offset):
    ...


# 2-D view; nb1 is the row stride in bytes.
@_c("ggml_view_2d", [_ctx, _t, c_int64, c_int64, c_size_t, c_size_t], _t)
def ggml_view_2d(ctx, a, ne0, ne1, nb1, offset):
    ...


# 3-D view.
@_c("ggml_view_3d", [_ctx, _t, c_int64, c_int64, c_int64, c_size_t, c_size_t, c_size_t], _t)
def ggml_view_3d(ctx, a, ne0, ne1, ne2, nb1, nb2, offset):
    ...


# 4-D view.
@_c("ggml_view_4d", [_ctx, _t, c_int64, c_int64, c_int64, c_int64, c_size_t, c_size_t, c_size_t, c_size_t], _t)
def ggml_view_4d(ctx, a, ne0, ne1, ne2, ne3, nb1, nb2, nb3, offset):
    ...


# Reshape of a contiguous tensor (same element count) to b's shape.
@_c("ggml_reshape", [_ctx, _t, _t], _t)
def ggml_reshape(ctx, a, b):
    ...


# Reshape to 1-D.
@_c("ggml_reshape_1d", [_ctx, _t, c_int64], _t)
def ggml_reshape_1d(ctx, a, ne0):
    ...


# Reshape to 2-D.
@_c("ggml_reshape_2d", [_ctx, _t, c_int64, c_int64], _t)
def ggml_reshape_2d(ctx, a, ne0, ne1):
    ...


# Reshape to 3-D.
@_c("ggml_reshape_3d", [_ctx, _t, c_int64, c_int64, c_int64], _t)
def ggml_reshape_3d(ctx, a, ne0, ne1, ne2):
    ...


# Reshape to 4-D.
@_c("ggml_reshape_4d", [_ctx, _t, c_int64, c_int64, c_int64, c_int64], _t)
def ggml_reshape_4d(ctx, a, ne0, ne1, ne2, ne3):
    ...


# Moves dim i of a to position axis_i of the result.
@_c("ggml_permute", [_ctx, _t, c_int, c_int, c_int, c_int], _t)
def ggml_permute(ctx, a, axis0, axis1, axis2, axis3):
    ...


# Swaps dims 0 and 1.
@_c("ggml_transpose", [_ctx, _t], _t)
def ggml_transpose(ctx, a):
    ...


# ---- ops: llama_py/_ggml_ops.py (re-exported at the end of this module) ----

# ---- graphs ----

# Graph with room for GGML_DEFAULT_GRAPH_SIZE nodes, in ctx's arena; NULL if full.
@_c("ggml_new_graph", [_ctx], _graph)
def ggml_new_graph(ctx):
    ...


# Graph with room for `size` nodes (grads must be false).
@_c("ggml_new_graph_custom", [_ctx, c_size_t, c_bool], _graph)
def ggml_new_graph_custom(ctx, size, grads):
    ...


# Adds tensor and every node it depends on (each once, sources first).
@_c("ggml_build_forward_expand", [_graph, _t], None)
def ggml_build_forward_expand(cgraph, tensor):
    ...


# Number of compute nodes.
@_c("ggml_graph_n_nodes", [_graph], c_int)
def ggml_graph_n_nodes(cgraph) -> int:
    ...


# Node i in execution order (negative i counts from the end); NULL if out of range.
@_c("ggml_graph_node", [_graph, c_int], _t)
def ggml_graph_node(cgraph, i):
    ...


# Number of leaves (tensors the graph reads but does not compute).
@_c("ggml_graph_n_leafs", [_graph], c_int)
def ggml_graph_n_leafs(cgraph) -> int:
    ...


# Node named `name`, or NULL.
@_c("ggml_graph_get_tensor", [_graph, c_char_p], _t)
def ggml_graph_get_tensor(cgraph, name):
    ...


# Resets per-computation state.
@_c("ggml_graph_reset", [_graph], None)
def ggml_graph_reset(cgraph):
    ...


# Empties the graph so it can be rebuilt.
@_c("ggml_graph_clear", [_graph], None)
def ggml_graph_clear(cgraph):
    ...


# ---- CPU computation ----

# Persistent pool of n_threads (the caller's thread is one of them). Free with ggml_threadpool_free.
@_c("ggml_threadpool_new", [c_int], _tp)
def ggml_threadpool_new(n_threads):
    ...


# Stops and joins the pool's threads; NULL-safe.
@_c("ggml_threadpool_free", [_tp], None)
def ggml_threadpool_free(tp):
    ...


# Threads in the pool.
@_c("ggml_threadpool_get_n_threads", [_tp], c_int)
def ggml_threadpool_get_n_threads(tp) -> int:
    ...


# Changes how many of the pool's threads the next computations use (1..created count).
@_c("ggml_threadpool_set_n_threads", [_tp, c_int], None)
def ggml_threadpool_set_n_threads(tp, n_threads):
    ...


# Callback polled between nodes; returning true aborts. The caller keeps cb alive.
@_c("ggml_threadpool_set_abort_callback", [_tp, ggml_abort_callback, c_void_p], None)
def ggml_threadpool_set_abort_callback(tp, cb, data):
    ...


# Computes every node in order on the pool; returns an enum ggml_status.
@_c("ggml_graph_compute", [_graph, _tp], c_int)
def ggml_graph_compute(cgraph, tp) -> int:
    ...


# One-shot: computes with a temporary pool of n_threads; returns an enum ggml_status.
@_c("ggml_graph_compute_with_ctx", [_ctx, _graph, c_int], c_int)
def ggml_graph_compute_with_ctx(ctx, cgraph, n_threads) -> int:
    ...


# Number of physical CPU cores (at least 1).
@_c("ggml_cpu_n_physical_cores", [], c_int)
def ggml_cpu_n_physical_cores() -> int:
    ...


# Names the CPU kernel variant in use ("avx512", "avxvnni", "avx2", "portable", "neon").
@_c("ggml_cpu_variant", [], c_char_p)
def ggml_cpu_variant() -> bytes:
    ...


# Comma-separated CPU features the library detected and uses.
@_c("ggml_cpu_features", [], c_char_p)
def ggml_cpu_features() -> bytes:
    ...


# The environment switches and their values ("GGML_CPU_VARIANT=auto GGML_CPU_GEMM=1 ..."; README lists them).
@_c("ggml_env_summary", [], c_char_p)
def ggml_env_summary() -> bytes:
    ...


# ---- memory planning (ggml-alloc) ----

@_c("ggml_gallocr_new", [c_void_p], _galloc)
def _ggml_gallocr_new(buft):
    ...


def ggml_gallocr_new(buft=None):
    """A graph allocator placing no_alloc tensors in one reused buffer of type buft (None: host
    memory, the CPU buffer type). Free with ggml_gallocr_free."""
    return _ggml_gallocr_new(buft)


ggml_gallocr_new.c_name = "ggml_gallocr_new"
ggml_gallocr_new.argtypes = [c_void_p]


# Sizes the buffer for a graph without keeping its placement.
@_c("ggml_gallocr_reserve", [_galloc, _graph], c_bool)
def ggml_gallocr_reserve(galloc, graph) -> bool:
    ...


# Frees the allocator and its buffer; NULL-safe.
@_c("ggml_gallocr_free", [_galloc], None)
def ggml_gallocr_free(galloc):
    ...


# Assigns data to every tensor of the graph that has none; false (logged) if out of memory.
@_c("ggml_gallocr_alloc_graph", [_galloc, _graph], c_bool)
def ggml_gallocr_alloc_graph(galloc, graph) -> bool:
    ...


@_c("ggml_gallocr_get_buffer_size", [_galloc, c_int], c_size_t)
def _ggml_gallocr_get_buffer_size(galloc, buffer_id) -> int:
    ...


def ggml_gallocr_get_buffer_size(galloc, buffer_id: int = 0) -> int:
    """Bytes of the allocator's buffer (buffer_id 0: its only one)."""
    return _ggml_gallocr_get_buffer_size(galloc, buffer_id)


ggml_gallocr_get_buffer_size.c_name = "ggml_gallocr_get_buffer_size"
ggml_gallocr_get_buffer_size.argtypes = [c_void_p, c_int]


# ---- logging from Python ----

# The installed C trampoline; kept here so the library never calls a freed callback.
_log_callback_ref: Optional[Any] = None


def log_set(fn: Optional[Callable[[int, str], None]]) -> None:
    """Routes the library's log lines to fn(level, text); None restores the C default
    (warnings and errors to stderr). fn must not raise."""
    global _log_callback_ref
    if fn is None:
        ggml_log_set(None, None)
        _log_callback_ref = None
        return

    def trampoline(level, text, user_data):
        try:
            fn(level, text.decode("utf-8", "replace") if text else "")
        except Exception:  # an exception cannot cross into C
            pass

    cb = ggml_log_callback(trampoline)
    ggml_log_set(cb, None)
    _log_callback_ref = cb


def set_verbose(verbose: bool = True, min_level: int = GGML_LOG_LEVEL_DEBUG) -> None:
    """verbose: every log line at min_level or above goes to sys.stderr (via Python);
    not verbose: the C default (warnings and errors only)."""
    if not verbose:
        log_set(None)
        return

    def to_stderr(level, text):
        if level >= min_level or level == GGML_LOG_LEVEL_CONT:
            sys.stderr.write(text)

    log_set(to_stderr)


@contextlib.contextmanager
def capture_log() -> Iterator[List[Tuple[int, str]]]:
    """Collects (level, text) log lines instead of printing them; restores the C default
    (or whatever log_set installed before) on exit."""
    global _log_callback_ref
    lines: List[Tuple[int, str]] = []
    previous = _log_callback_ref
    log_set(lambda level, text: lines.append((level, text)))
    try:
        yield lines
    finally:
        if previous is None:
            log_set(None)
        else:
            ggml_log_set(previous, None)
            _log_callback_ref = previous


# ---- tensor helpers ----

def _tensor_address(t: Any) -> int:
    if t is None:
        raise ValueError("tensor is NULL")
    if isinstance(t, int):
        return t
    if isinstance(t, c_void_p):
        if not t.value:
            raise ValueError("tensor is NULL")
        return t.value
    if isinstance(t, ggml_tensor):
        return ctypes.addressof(t)
    if isinstance(t, ctypes._Pointer):
        addr = ctypes.cast(t, c_void_p).value
        if not addr:
            raise ValueError("tensor is NULL")
        return addr
    raise TypeError(f"expected a ggml_tensor handle, got {type(t).__name__}")


def tensor_struct(t: Any) -> ggml_tensor:
    """The ggml_tensor struct behind a handle (shares memory: fields read live)."""
    return ggml_tensor.from_address(_tensor_address(t))


def _n_dims(s: ggml_tensor) -> int:
    n = GGML_MAX_DIMS
    while n > 1 and s.ne[n - 1] == 1:
        n -= 1
    return n


def tensor_shape(t: Any) -> Tuple[int, ...]:
    """NumPy-order shape (ne[n-1], ..., ne[0]) trimmed to the tensor's number of dims."""
    s = tensor_struct(t)
    return tuple(s.ne[i] for i in reversed(range(_n_dims(s))))


def _numpy():
    import numpy as np
    return np


def _np_dtypes():
    np = _numpy()
    return {
        GGML_TYPE_F32: np.dtype(np.float32),
        GGML_TYPE_F16: np.dtype(np.float16),
        GGML_TYPE_F64: np.dtype(np.float64),
        GGML_TYPE_I8: np.dtype(np.int8),
        GGML_TYPE_I16: np.dtype(np.int16),
        GGML_TYPE_I32: np.dtype(np.int32),
        GGML_TYPE_I64: np.dtype(np.int64),
    }


def numpy_dtype(type: int):
    """The NumPy dtype of a ggml type, or None (BF16 and quantized types have none)."""
    return _np_dtypes().get(type)


def ggml_type_for_dtype(dtype: Any) -> ggml_type:
    """The ggml type of a NumPy dtype; TypeError for dtypes ggml has no type for."""
    np = _numpy()
    dtype = np.dtype(dtype)
    for t, d in _np_dtypes().items():
        if d == dtype:
            return ggml_type(t)
    raise TypeError(f"no ggml type for NumPy dtype {dtype} (supported: "
                    f"{', '.join(str(d) for d in _np_dtypes().values())})")


def tensor_to_numpy(t: Any, raw: bool = False):
    """A zero-copy NumPy view of a tensor's data, honouring ne and nb.

    The shape is (ne[3], ne[2], ne[1], ne[0]) trimmed to the tensor's dims, the strides are
    nb reversed, so views, permutes and transposes come out as NumPy would show them. The
    array is writable and valid only while the tensor's context lives. BF16 and quantized
    tensors raise TypeError, or with raw=True give their rows as uint8
    (..., ne[1], row bytes).
    """
    np = _numpy()
    s = tensor_struct(t)
    if not s.data:
        raise ValueError("tensor has no data (no_alloc context, or not allocated yet)")
    buf = s.view_src.contents.buffer if s.view_src else s.buffer
    if buf and not ggml_backend_buffer_is_host(buf):
        raise ValueError(f"tensor lives in {ggml_backend_buffer_name(buf).decode()} memory, which the host cannot "
                         f"read directly; use backend_tensor_get_numpy / ggml_backend_tensor_get")
    n = _n_dims(s)
    ne = [s.ne[i] for i in range(n)]
    nb = [s.nb[i] for i in range(n)]
    dtype = _np_dtypes().get(s.type)
    if dtype is not None:
        shape = tuple(reversed(ne))
        strides = tuple(reversed(nb))
    elif raw:
        dtype = np.dtype(np.uint8)
        row = ggml_row_size(s.type, ne[0])
        shape = tuple(reversed(ne[1:])) + (row,)
        strides = tuple(reversed(nb[1:])) + (1,)
    else:
        name = (ggml_type_name(s.type) or b"?").decode()
        raise TypeError(f"{name} tensors have no NumPy dtype; pass raw=True for the bytes of "
                        f"each row, or convert to F32 with ggml_cpy / ggml_get_rows first")
    if any(d == 0 for d in shape):
        return np.zeros(shape, dtype)
    span = dtype.itemsize + sum((d - 1) * st for d, st in zip(shape, strides))
    buf = (c_char * span).from_address(s.data)
    return np.ndarray(shape=shape, dtype=dtype, buffer=buf, strides=strides)


def tensor_from_numpy(ctx: Any, arr: Any, type: Optional[int] = None, name: Optional[str] = None):
    """A new tensor in ctx holding a copy of arr (NumPy shape reversed into ne).

    `type` defaults to the ggml type of arr's dtype; with a type given, arr is converted
    to that type's dtype. Raises LlamaError if the arena is full (ggml_new_tensor NULL).
    """
    np = _numpy()
    arr = np.asarray(arr)
    if type is None:
        type = ggml_type_for_dtype(arr.dtype)
    dtype = _np_dtypes().get(type)
    if dtype is None:
        raise TypeError(f"tensor_from_numpy cannot fill a {ggml_type(type).name} tensor from "
                        f"NumPy (only {', '.join(ggml_type(k).name for k in _np_dtypes())})")
    if arr.ndim > GGML_MAX_DIMS:
        raise ValueError(f"array has {arr.ndim} dims; ggml tensors have at most {GGML_MAX_DIMS}")
    arr = np.ascontiguousarray(arr, dtype=dtype)
    ne = list(reversed(arr.shape)) or [1]
    t = ggml_new_tensor(ctx, type, len(ne), (c_int64 * len(ne))(*ne))
    if not t:
        raise LlamaError(f"ggml_new_tensor({ggml_type(type).name}, ne={ne}) returned NULL "
                         f"(arena full or invalid shape; see the log)")
    data = ggml_get_data(t)
    if not data:
        raise ValueError("the context is no_alloc: its tensors have no data to fill")
    if arr.nbytes:
        ctypes.memmove(data, arr.ctypes.data, arr.nbytes)
    if name is not None:
        ggml_set_name(t, name.encode())
    return t


def _strip_leading_ones(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    i = 0
    while i < len(shape) - 1 and shape[i] == 1:
        i += 1
    return tuple(shape[i:])


def tensor_set_numpy(t: Any, arr: Any) -> None:
    """Writes arr into the tensor's data (through its strides), converting to its dtype.

    arr's shape must equal the tensor's NumPy shape, ignoring leading dims of size 1.
    """
    np = _numpy()
    view = tensor_to_numpy(t)
    arr = np.asarray(arr)
    if _strip_leading_ones(arr.shape) != _strip_leading_ones(view.shape):
        raise ValueError(f"shape mismatch: array {arr.shape}, tensor {view.shape}")
    view[...] = arr.reshape(view.shape)


# GGUF bindings (gguf.h), written separately; re-exported here once they exist.
try:
    from ._gguf import *  # noqa: F401,F403
except ModuleNotFoundError as _e:
    if _e.name != f"{__package__}._gguf":
        raise

# Op constructors (ggml.h), kept in their own file.
from ._ggml_ops import *  # noqa: F401,F403,E402
from ._ggml_ops import GGML_PREC_DEFAULT, GGML_PREC_F32  # noqa: F401,E402

# Backend bindings (ggml-backend.h, ggml-cpu.h).
from ._ggml_backend import *  # noqa: F401,F403,E402
