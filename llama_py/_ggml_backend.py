"""ctypes mirror of ggml-backend.h and ggml-cpu.h (re-exported by llama_py.ggml).

Handles (buffer types, buffers, backends, devices, registries, schedulers) are opaque
pointers (ints or None). NumPy helpers move tensor data through the backend, never through
`tensor.data`, so they work for device memory too.
"""
from __future__ import annotations

import ctypes
import enum
from ctypes import POINTER, c_bool, c_char_p, c_int, c_size_t, c_uint8, c_void_p
from typing import Any, Optional, Sequence

from ._lib import ctypes_function

_buft = c_void_p     # ggml_backend_buffer_type_t
_buf = c_void_p      # ggml_backend_buffer_t
_be = c_void_p       # ggml_backend_t
_dev = c_void_p      # ggml_backend_dev_t
_reg = c_void_p      # ggml_backend_reg_t
_sched = c_void_p    # ggml_backend_sched_t
_t = c_void_p        # struct ggml_tensor *
_ctx = c_void_p      # struct ggml_context *
_graph = c_void_p    # struct ggml_cgraph *


class ggml_backend_buffer_usage(enum.IntEnum):
    """What a buffer holds."""
    GGML_BACKEND_BUFFER_USAGE_ANY = 0
    GGML_BACKEND_BUFFER_USAGE_WEIGHTS = 1
    GGML_BACKEND_BUFFER_USAGE_COMPUTE = 2


class ggml_backend_dev_type(enum.IntEnum):
    """Kind of device."""
    GGML_BACKEND_DEVICE_TYPE_CPU = 0
    GGML_BACKEND_DEVICE_TYPE_GPU = 1
    GGML_BACKEND_DEVICE_TYPE_ACCEL = 2
    GGML_BACKEND_DEVICE_TYPE_IGPU = 3


globals().update(ggml_backend_buffer_usage.__members__)
globals().update(ggml_backend_dev_type.__members__)

# ---- buffer types ----


# Name of the buffer type.
@ctypes_function("ggml_backend_buft_name", [_buft], c_char_p)
def ggml_backend_buft_name(buft) -> bytes: ...


# A new buffer of size bytes (None when it cannot be had). Free with ggml_backend_buffer_free.
@ctypes_function("ggml_backend_buft_alloc_buffer", [_buft, c_size_t], _buf)
def ggml_backend_buft_alloc_buffer(buft, size: int): ...


# Alignment of tensor data in its buffers.
@ctypes_function("ggml_backend_buft_get_alignment", [_buft], c_size_t)
def ggml_backend_buft_get_alignment(buft) -> int: ...


# Largest buffer it can allocate.
@ctypes_function("ggml_backend_buft_get_max_size", [_buft], c_size_t)
def ggml_backend_buft_get_max_size(buft) -> int: ...


# Bytes a tensor takes in a buffer of this type.
@ctypes_function("ggml_backend_buft_get_alloc_size", [_buft, _t], c_size_t)
def ggml_backend_buft_get_alloc_size(buft, tensor) -> int: ...


# True if the host may read and write its buffers directly.
@ctypes_function("ggml_backend_buft_is_host", [_buft], c_bool)
def ggml_backend_buft_is_host(buft) -> bool: ...


# The device whose memory it allocates.
@ctypes_function("ggml_backend_buft_get_device", [_buft], _dev)
def ggml_backend_buft_get_device(buft): ...


# ---- buffers ----


# Name of the buffer's type.
@ctypes_function("ggml_backend_buffer_name", [_buf], c_char_p)
def ggml_backend_buffer_name(buffer) -> bytes: ...


# Frees the buffer; None-safe.
@ctypes_function("ggml_backend_buffer_free", [_buf], None)
def ggml_backend_buffer_free(buffer) -> None: ...


# Start of the buffer's memory (a device address unless is_host).
@ctypes_function("ggml_backend_buffer_get_base", [_buf], c_void_p)
def ggml_backend_buffer_get_base(buffer): ...


# Size in bytes.
@ctypes_function("ggml_backend_buffer_get_size", [_buf], c_size_t)
def ggml_backend_buffer_get_size(buffer) -> int: ...


# Alignment of tensor data in it.
@ctypes_function("ggml_backend_buffer_get_alignment", [_buf], c_size_t)
def ggml_backend_buffer_get_alignment(buffer) -> int: ...


# Sets every byte to value.
@ctypes_function("ggml_backend_buffer_clear", [_buf, c_uint8], None)
def ggml_backend_buffer_clear(buffer, value: int) -> None: ...


# True if the host may read and write it directly.
@ctypes_function("ggml_backend_buffer_is_host", [_buf], c_bool)
def ggml_backend_buffer_is_host(buffer) -> bool: ...


# Marks what the buffer holds.
@ctypes_function("ggml_backend_buffer_set_usage", [_buf, c_int], None)
def ggml_backend_buffer_set_usage(buffer, usage: int) -> None: ...


# What the buffer holds.
@ctypes_function("ggml_backend_buffer_get_usage", [_buf], c_int)
def ggml_backend_buffer_get_usage(buffer) -> int: ...


# The buffer's type.
@ctypes_function("ggml_backend_buffer_get_type", [_buf], _buft)
def ggml_backend_buffer_get_type(buffer): ...


# Places a tensor at address addr inside buffer; GGML_STATUS_*.
@ctypes_function("ggml_backend_tensor_alloc", [_buf, _t, c_void_p], c_int)
def ggml_backend_tensor_alloc(buffer, tensor, addr) -> int: ...


# ---- tensor data ----


# Copies size bytes of host memory at data into the tensor at byte offset offset.
@ctypes_function("ggml_backend_tensor_set", [_t, c_void_p, c_size_t, c_size_t], None)
def ggml_backend_tensor_set(tensor, data, offset: int, size: int) -> None: ...


# Copies size bytes of the tensor at byte offset offset into host memory at data.
@ctypes_function("ggml_backend_tensor_get", [_t, c_void_p, c_size_t, c_size_t], None)
def ggml_backend_tensor_get(tensor, data, offset: int, size: int) -> None: ...


# Sets size bytes of the tensor from offset to value.
@ctypes_function("ggml_backend_tensor_memset", [_t, c_uint8, c_size_t, c_size_t], None)
def ggml_backend_tensor_memset(tensor, value: int, offset: int, size: int) -> None: ...


# Copies src's bytes into dst, across buffers of any kind.
@ctypes_function("ggml_backend_tensor_copy", [_t, _t], None)
def ggml_backend_tensor_copy(src, dst) -> None: ...


# ---- backends ----


# Name of the backend.
@ctypes_function("ggml_backend_name", [_be], c_char_p)
def ggml_backend_name(backend) -> bytes: ...


# Frees the backend; None-safe.
@ctypes_function("ggml_backend_free", [_be], None)
def ggml_backend_free(backend) -> None: ...


# The buffer type of the backend's own memory.
@ctypes_function("ggml_backend_get_default_buffer_type", [_be], _buft)
def ggml_backend_get_default_buffer_type(backend): ...


# A buffer of its default type.
@ctypes_function("ggml_backend_alloc_buffer", [_be, c_size_t], _buf)
def ggml_backend_alloc_buffer(backend, size: int): ...


# Alignment of its default buffer type.
@ctypes_function("ggml_backend_get_alignment", [_be], c_size_t)
def ggml_backend_get_alignment(backend) -> int: ...


# True if it can compute the op.
@ctypes_function("ggml_backend_supports_op", [_be, _t], c_bool)
def ggml_backend_supports_op(backend, op) -> bool: ...


# True if it computes on buffers of type buft.
@ctypes_function("ggml_backend_supports_buft", [_be, _buft], c_bool)
def ggml_backend_supports_buft(backend, buft) -> bool: ...


# Waits for its queued work.
@ctypes_function("ggml_backend_synchronize", [_be], None)
def ggml_backend_synchronize(backend) -> None: ...


# Computes every node of the graph; GGML_STATUS_*.
@ctypes_function("ggml_backend_graph_compute", [_be, _graph], c_int)
def ggml_backend_graph_compute(backend, graph) -> int: ...


# The device it runs on.
@ctypes_function("ggml_backend_get_device", [_be], _dev)
def ggml_backend_get_device(backend): ...


# ---- devices and registries ----


# Devices found.
@ctypes_function("ggml_backend_dev_count", [], c_size_t)
def ggml_backend_dev_count() -> int: ...


# Device i (None when out of range).
@ctypes_function("ggml_backend_dev_get", [c_size_t], _dev)
def ggml_backend_dev_get(index: int): ...


# The device named name, or None.
@ctypes_function("ggml_backend_dev_by_name", [c_char_p], _dev)
def ggml_backend_dev_by_name(name: bytes): ...


# The first device of a type, or None.
@ctypes_function("ggml_backend_dev_by_type", [c_int], _dev)
def ggml_backend_dev_by_type(type: int): ...


# Short name of a device.
@ctypes_function("ggml_backend_dev_name", [_dev], c_char_p)
def ggml_backend_dev_name(dev) -> bytes: ...


# Description of a device.
@ctypes_function("ggml_backend_dev_description", [_dev], c_char_p)
def ggml_backend_dev_description(dev) -> bytes: ...


@ctypes_function("ggml_backend_dev_memory", [_dev, POINTER(c_size_t), POINTER(c_size_t)], None)
def _ggml_backend_dev_memory(dev, free, total) -> None: ...


def ggml_backend_dev_memory(dev, free=None, total=None):  # noqa: A002
    """Free and total memory of a device in bytes. With ctypes out-parameters (byref) it fills
    them as C does; without, it returns (free, total)."""
    if free is not None and total is not None:
        return _ggml_backend_dev_memory(dev, free, total)
    f, t = c_size_t(0), c_size_t(0)
    _ggml_backend_dev_memory(dev, ctypes.byref(f), ctypes.byref(t))
    return f.value, t.value


ggml_backend_dev_memory.c_name = "ggml_backend_dev_memory"
ggml_backend_dev_memory.argtypes = [_dev, POINTER(c_size_t), POINTER(c_size_t)]


# Kind of device.
@ctypes_function("ggml_backend_dev_type", [_dev], c_int)
def ggml_backend_dev_type(dev) -> int: ...


# A new backend on the device (params may be None); None on failure.
@ctypes_function("ggml_backend_dev_init", [_dev, c_char_p], _be)
def ggml_backend_dev_init(dev, params: Optional[bytes]): ...


# The device's own buffer type.
@ctypes_function("ggml_backend_dev_buffer_type", [_dev], _buft)
def ggml_backend_dev_buffer_type(dev): ...


# True if the device can compute the op.
@ctypes_function("ggml_backend_dev_supports_op", [_dev, _t], c_bool)
def ggml_backend_dev_supports_op(dev, op) -> bool: ...


# True if the device computes on buffers of type buft.
@ctypes_function("ggml_backend_dev_supports_buft", [_dev, _buft], c_bool)
def ggml_backend_dev_supports_buft(dev, buft) -> bool: ...


# True for the built-in test device.
@ctypes_function("ggml_backend_dev_is_test", [_dev], c_bool)
def ggml_backend_dev_is_test(dev) -> bool: ...


# Registries.
@ctypes_function("ggml_backend_reg_count", [], c_size_t)
def ggml_backend_reg_count() -> int: ...


# Registry i, or None.
@ctypes_function("ggml_backend_reg_get", [c_size_t], _reg)
def ggml_backend_reg_get(index: int): ...


# The registry named name, or None.
@ctypes_function("ggml_backend_reg_by_name", [c_char_p], _reg)
def ggml_backend_reg_by_name(name: bytes): ...


# Name of a registry.
@ctypes_function("ggml_backend_reg_name", [_reg], c_char_p)
def ggml_backend_reg_name(reg) -> bytes: ...


# Devices of a registry.
@ctypes_function("ggml_backend_reg_dev_count", [_reg], c_size_t)
def ggml_backend_reg_dev_count(reg) -> int: ...


# Device i of a registry, or None.
@ctypes_function("ggml_backend_reg_dev_get", [_reg, c_size_t], _dev)
def ggml_backend_reg_dev_get(reg, index: int): ...


# Registers the built-in backends and loads the optional backend libraries found.
@ctypes_function("ggml_backend_load_all", [], None)
def ggml_backend_load_all() -> None: ...


# Same, looking for optional libraries in dir_path.
@ctypes_function("ggml_backend_load_all_from_path", [c_char_p], None)
def ggml_backend_load_all_from_path(dir_path: Optional[bytes]) -> None: ...


# Loads one backend library; its registry, or None.
@ctypes_function("ggml_backend_load", [c_char_p], _reg)
def ggml_backend_load(path: bytes): ...


# Turns the built-in test device on or off.
@ctypes_function("ggml_backend_test_device_enable", [c_bool], None)
def ggml_backend_test_device_enable(enable: bool) -> None: ...


# A backend on the first device of the named registry or device; None when there is none.
@ctypes_function("ggml_backend_init_by_name", [c_char_p, c_char_p], _be)
def ggml_backend_init_by_name(name: bytes, params: Optional[bytes]): ...


# A backend on the first device of a type.
@ctypes_function("ggml_backend_init_by_type", [c_int, c_char_p], _be)
def ggml_backend_init_by_type(type: int, params: Optional[bytes]): ...


# The best backend available: a GPU if there is one, else the CPU.
@ctypes_function("ggml_backend_init_best", [], _be)
def ggml_backend_init_best(): ...


# ---- the scheduler ----

ggml_backend_sched_eval_callback = ctypes.CFUNCTYPE(c_bool, c_void_p, c_bool, c_void_p)


@ctypes_function("ggml_backend_sched_new", [POINTER(c_void_p), POINTER(c_void_p), c_int, c_size_t, c_bool, c_bool], _sched)
def _ggml_backend_sched_new(backends, bufts, n_backends, graph_size, parallel, op_offload): ...


def ggml_backend_sched_new(backends: Sequence[Any], bufts: Optional[Sequence[Any]], n_backends: int,
                           graph_size: int, parallel: bool, op_offload: bool = True):
    """A scheduler over backends in priority order (the CPU last); bufts None: their defaults."""
    arr = (c_void_p * n_backends)(*backends[:n_backends])
    barr = (c_void_p * n_backends)(*(bufts[:n_backends] if bufts else [None] * n_backends))
    return _ggml_backend_sched_new(arr, barr, n_backends, graph_size, parallel, op_offload)


ggml_backend_sched_new.c_name = "ggml_backend_sched_new"
ggml_backend_sched_new.argtypes = [POINTER(c_void_p), POINTER(c_void_p), c_int, c_size_t, c_bool, c_bool]


# Frees the scheduler; None-safe.
@ctypes_function("ggml_backend_sched_free", [_sched], None)
def ggml_backend_sched_free(sched) -> None: ...


# Sizes the compute buffers for a worst-case graph.
@ctypes_function("ggml_backend_sched_reserve", [_sched, _graph], c_bool)
def ggml_backend_sched_reserve(sched, graph) -> bool: ...


# Assigns nodes to backends, inserts copies, allocates; False on failure.
@ctypes_function("ggml_backend_sched_alloc_graph", [_sched, _graph], c_bool)
def ggml_backend_sched_alloc_graph(sched, graph) -> bool: ...


# Allocates (unless already) and computes the splits in order; GGML_STATUS_*.
@ctypes_function("ggml_backend_sched_graph_compute", [_sched, _graph], c_int)
def ggml_backend_sched_graph_compute(sched, graph) -> int: ...


# Promises the graph is unchanged since its last computation.
@ctypes_function("ggml_backend_sched_graph_unchanged", [_sched, _graph], None)
def ggml_backend_sched_graph_unchanged(sched, graph) -> None: ...


# Waits for every backend.
@ctypes_function("ggml_backend_sched_synchronize", [_sched], None)
def ggml_backend_sched_synchronize(sched) -> None: ...


# Forgets the current graph's assignment.
@ctypes_function("ggml_backend_sched_reset", [_sched], None)
def ggml_backend_sched_reset(sched) -> None: ...


# Splits of the last allocated graph.
@ctypes_function("ggml_backend_sched_get_n_splits", [_sched], c_int)
def ggml_backend_sched_get_n_splits(sched) -> int: ...


# Copies between backends in the last allocated graph.
@ctypes_function("ggml_backend_sched_get_n_copies", [_sched], c_int)
def ggml_backend_sched_get_n_copies(sched) -> int: ...


# Backends of the scheduler.
@ctypes_function("ggml_backend_sched_get_n_backends", [_sched], c_int)
def ggml_backend_sched_get_n_backends(sched) -> int: ...


# Backend i, or None.
@ctypes_function("ggml_backend_sched_get_backend", [_sched, c_int], _be)
def ggml_backend_sched_get_backend(sched, i: int): ...


# Bytes of a backend's compute buffer.
@ctypes_function("ggml_backend_sched_get_buffer_size", [_sched, _be], c_size_t)
def ggml_backend_sched_get_buffer_size(sched, backend) -> int: ...


# Pins a node to a backend for the next allocation.
@ctypes_function("ggml_backend_sched_set_tensor_backend", [_sched, _t, _be], None)
def ggml_backend_sched_set_tensor_backend(sched, node, backend) -> None: ...


# The backend a node was assigned to, or None.
@ctypes_function("ggml_backend_sched_get_tensor_backend", [_sched, _t], _be)
def ggml_backend_sched_get_tensor_backend(sched, node): ...


# Sets the per-node callback (keep a reference to it).
@ctypes_function("ggml_backend_sched_set_eval_callback", [_sched, ggml_backend_sched_eval_callback, c_void_p], None)
def ggml_backend_sched_set_eval_callback(sched, callback, user_data) -> None: ...


# ---- utilities ----


# One buffer of type buft holding every data-less tensor of ctx; None on failure.
@ctypes_function("ggml_backend_alloc_ctx_tensors_from_buft", [_ctx, _buft], _buf)
def ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft): ...


# The same in the backend's default buffer type.
@ctypes_function("ggml_backend_alloc_ctx_tensors", [_ctx, _be], _buf)
def ggml_backend_alloc_ctx_tensors(ctx, backend): ...


# ---- the CPU backend (ggml-cpu.h) ----


# A CPU backend; free with ggml_backend_free.
@ctypes_function("ggml_backend_cpu_init", [], _be)
def ggml_backend_cpu_init(): ...


# True if the backend is a CPU backend.
@ctypes_function("ggml_backend_is_cpu", [_be], c_bool)
def ggml_backend_is_cpu(backend) -> bool: ...


# Threads its computations use.
@ctypes_function("ggml_backend_cpu_set_n_threads", [_be, c_int], None)
def ggml_backend_cpu_set_n_threads(backend_cpu, n_threads: int) -> None: ...


# Callback polled between nodes; returning True aborts.
@ctypes_function("ggml_backend_cpu_set_abort_callback", [_be, c_void_p, c_void_p], None)
def ggml_backend_cpu_set_abort_callback(backend_cpu, abort_callback, abort_callback_data) -> None: ...


# Host memory.
@ctypes_function("ggml_backend_cpu_buffer_type", [], _buft)
def ggml_backend_cpu_buffer_type(): ...


# A CPU buffer over caller-owned memory.
@ctypes_function("ggml_backend_cpu_buffer_from_ptr", [c_void_p, c_size_t], _buf)
def ggml_backend_cpu_buffer_from_ptr(ptr, size: int): ...


# The CPU's repacked-weights buffer type.
@ctypes_function("ggml_backend_cpu_repack_buffer_type", [], _buft)
def ggml_backend_cpu_repack_buffer_type(): ...


# The CPU registry.
@ctypes_function("ggml_backend_cpu_reg", [], _reg)
def ggml_backend_cpu_reg(): ...


# ---- NumPy through the backend ----


def backend_tensor_set_numpy(tensor: Any, arr: Any) -> None:
    """Writes a C-contiguous array of the tensor's element type and size through ggml_backend_tensor_set."""
    import numpy as np
    a = np.ascontiguousarray(arr)
    ggml_backend_tensor_set(tensor, a.ctypes.data, 0, a.nbytes)


def backend_tensor_get_numpy(tensor: Any, shape: Sequence[int], dtype: Any = "float32") -> Any:
    """Reads the tensor through ggml_backend_tensor_get into a new array of shape and dtype."""
    import numpy as np
    out = np.empty(tuple(shape), dtype=dtype)
    ggml_backend_tensor_get(tensor, out.ctypes.data, 0, out.nbytes)
    return out


# The parts a fused weight is made of (struct ggml_backend_cpu_repack_parts).
class ggml_backend_cpu_repack_parts(ctypes.Structure):
    _fields_ = [("parts", c_void_p * 4), ("n_parts", c_int)]


ggml_backend_cpu_repack_cb = ctypes.CFUNCTYPE(None, c_void_p, c_bool, c_void_p)


# Bytes of the repacked layout of a weight, or 0 if the CPU kernels have none for it here.
@ctypes_function("ggml_backend_cpu_repack_size", [_t], c_size_t)
def ggml_backend_cpu_repack_size(tensor) -> int: ...


# True if mul_mat reads the tensor from a repacked copy.
@ctypes_function("ggml_backend_cpu_is_repacked", [_t], c_bool)
def ggml_backend_cpu_is_repacked(tensor) -> bool: ...


# Repacks the weights of ts[0..n) into one CPU_REPACK buffer (None if nothing was repacked).
@ctypes_function("ggml_backend_cpu_repack_weights",
                 [POINTER(c_void_p), c_int, c_int, POINTER(ggml_backend_cpu_repack_parts), ggml_backend_cpu_repack_cb, c_void_p],
                 _buf)
def ggml_backend_cpu_repack_weights(ts, n: int, n_threads: int, parts, cb, cb_data): ...
