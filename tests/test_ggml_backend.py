"""ggml-backend.h through llama_py.ggml: buffers, tensor data through backends, devices, the
scheduler's splits and copies, the test device's separate memory, and errors instead of
aborts on misuse. References: NumPy."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llama_py import ggml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def test_device():
    """The built-in test device, on for the test only."""
    ggml.ggml_backend_test_device_enable(True)
    try:
        dev = ggml.ggml_backend_dev_by_name(b"TestDevice0")
        assert dev, "the test device did not register"
        yield dev
    finally:
        ggml.ggml_backend_test_device_enable(False)


def _meta_ctx(n_tensors=16):
    return ggml.ggml_init(ggml.ggml_init_params(
        mem_size=n_tensors * ggml.ggml_tensor_overhead() + ggml.ggml_graph_overhead(), mem_buffer=None, no_alloc=True))


@pytest.mark.parametrize("header", ["ggml-backend.h", "ggml-cpu.h", "ggml-alloc.h", "ggml-mem.h"])
def test_every_backend_function_is_bound_with_its_arity(header, lib_path):
    import ctypes
    import re
    text = (ROOT / "ggml" / "include" / header).read_text()
    funcs = {}
    for m in re.finditer(r"^GGML_API\s+[^;]*?\b(ggml_\w+)\s*\(([^;]*?)\)\s*;", text, re.M | re.S):
        params = m.group(2).strip()
        funcs[m.group(1)] = 0 if params in ("", "void") else params.count(",") + 1
    assert len(funcs) >= 4
    lib = ctypes.CDLL(str(lib_path))
    problems = []
    for name, n_args in sorted(funcs.items()):
        py = getattr(ggml, name, None)
        if py is None or getattr(py, "c_name", None) != name:
            problems.append(f"{name}: not bound in llama_py.ggml")
        elif len(py.argtypes) != n_args:
            problems.append(f"{name}: {len(py.argtypes)} argtypes, header has {n_args}")
        if not hasattr(lib, name):
            problems.append(f"{name}: not exported")
    assert not problems, "\n".join(problems)


def test_cpu_device_is_always_first():
    ggml.ggml_backend_load_all()
    assert ggml.ggml_backend_dev_count() >= 1
    cpu = ggml.ggml_backend_dev_get(0)
    assert ggml.ggml_backend_dev_name(cpu) == b"CPU"
    assert ggml.ggml_backend_dev_type(cpu) == ggml.GGML_BACKEND_DEVICE_TYPE_CPU
    assert ggml.ggml_backend_reg_by_name(b"CPU")
    free, total = ggml.ggml_backend_dev_memory(cpu)
    assert total > 0 and 0 < free <= total
    buft = ggml.ggml_backend_dev_buffer_type(cpu)
    assert ggml.ggml_backend_buft_is_host(buft)
    assert ggml.ggml_backend_buft_name(buft) == b"CPU"
    assert ggml.ggml_backend_buft_get_alignment(buft) >= 32


def test_test_device_off_by_default_and_switchable(test_device):
    assert ggml.ggml_backend_dev_type(test_device) == ggml.GGML_BACKEND_DEVICE_TYPE_GPU
    assert ggml.ggml_backend_dev_is_test(test_device)
    buft = ggml.ggml_backend_dev_buffer_type(test_device)
    assert not ggml.ggml_backend_buft_is_host(buft)
    ggml.ggml_backend_test_device_enable(False)
    assert not ggml.ggml_backend_dev_by_name(b"TestDevice0")
    ggml.ggml_backend_test_device_enable(True)
    assert ggml.ggml_backend_dev_by_name(b"TestDevice0")


@pytest.mark.parametrize("device", ["CPU", "TestDevice0"])
def test_tensor_set_get_memset_copy(device, test_device):
    be = ggml.ggml_backend_init_by_name(device.encode(), None)
    assert be
    ctx = _meta_ctx()
    a = ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, 64)
    b = ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, 64)
    buf = ggml.ggml_backend_alloc_ctx_tensors(ctx, be)
    try:
        assert buf and ggml.ggml_backend_buffer_get_size(buf) >= 2 * 256
        x = np.arange(64, dtype=np.float32)
        ggml.backend_tensor_set_numpy(a, x)
        np.testing.assert_array_equal(ggml.backend_tensor_get_numpy(a, (64,)), x)
        ggml.ggml_backend_tensor_memset(a, 0, 16, 32)          # floats 4..11 -> 0
        want = x.copy()
        want[4:12] = 0
        np.testing.assert_array_equal(ggml.backend_tensor_get_numpy(a, (64,)), want)
        ggml.ggml_backend_tensor_copy(a, b)
        np.testing.assert_array_equal(ggml.backend_tensor_get_numpy(b, (64,)), want)
        ggml.ggml_backend_buffer_clear(buf, 0)
        assert not ggml.backend_tensor_get_numpy(b, (64,)).any()
    finally:
        ggml.ggml_backend_buffer_free(buf)
        ggml.ggml_free(ctx)
        ggml.ggml_backend_free(be)


def test_copy_between_cpu_and_device(test_device):
    cpu = ggml.ggml_backend_cpu_init()
    dev = ggml.ggml_backend_dev_init(test_device, None)
    c1, c2 = _meta_ctx(), _meta_ctx()
    h = ggml.ggml_new_tensor_2d(c1, ggml.GGML_TYPE_F16, 8, 4)
    d = ggml.ggml_new_tensor_2d(c2, ggml.GGML_TYPE_F16, 8, 4)
    bh = ggml.ggml_backend_alloc_ctx_tensors(c1, cpu)
    bd = ggml.ggml_backend_alloc_ctx_tensors(c2, dev)
    try:
        x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float16)
        ggml.backend_tensor_set_numpy(h, x)
        ggml.ggml_backend_tensor_copy(h, d)                     # host -> device
        np.testing.assert_array_equal(ggml.backend_tensor_get_numpy(d, (4, 8), np.float16), x)
        ggml.ggml_backend_tensor_memset(h, 0, 0, ggml.ggml_nbytes(h))
        ggml.ggml_backend_tensor_copy(d, h)                     # device -> host
        np.testing.assert_array_equal(ggml.backend_tensor_get_numpy(h, (4, 8), np.float16), x)
    finally:
        for b in (bh, bd):
            ggml.ggml_backend_buffer_free(b)
        for c in (c1, c2):
            ggml.ggml_free(c)
        ggml.ggml_backend_free(dev)
        ggml.ggml_backend_free(cpu)


def _graph_on_device(dev_backend, cpu_backend, pin_softmax_cpu: bool):
    """softmax(W x + b) with W, b on the device; x a graph input."""
    rng = np.random.default_rng(0)
    W = rng.standard_normal((6, 8)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    wctx = _meta_ctx()
    tw = ggml.ggml_new_tensor_2d(wctx, ggml.GGML_TYPE_F32, 8, 6)
    tb = ggml.ggml_new_tensor_1d(wctx, ggml.GGML_TYPE_F32, 6)
    wbuf = ggml.ggml_backend_alloc_ctx_tensors(wctx, dev_backend)
    ggml.ggml_backend_buffer_set_usage(wbuf, ggml.GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
    ggml.backend_tensor_set_numpy(tw, W)
    ggml.backend_tensor_set_numpy(tb, bias)
    gctx = _meta_ctx(32)
    tx = ggml.ggml_new_tensor_2d(gctx, ggml.GGML_TYPE_F32, 8, 3)
    ggml.ggml_set_input(tx)
    y = ggml.ggml_add(gctx, ggml.ggml_mul_mat(gctx, tw, tx), tb)
    sm = ggml.ggml_soft_max(gctx, y)
    s2 = ggml.ggml_sum_rows(gctx, sm)          # not supported by the test device: CPU fallback
    gf = ggml.ggml_new_graph(gctx)
    ggml.ggml_build_forward_expand(gf, s2)
    ggml.ggml_build_forward_expand(gf, sm)
    sched = ggml.ggml_backend_sched_new([dev_backend, cpu_backend], None, 2, 64, False, True)
    if pin_softmax_cpu:
        ggml.ggml_backend_sched_set_tensor_backend(sched, sm, cpu_backend)
    assert ggml.ggml_backend_sched_alloc_graph(sched, gf)
    ggml.backend_tensor_set_numpy(tx, x)
    assert ggml.ggml_backend_sched_graph_compute(sched, gf) == ggml.GGML_STATUS_SUCCESS
    got = ggml.backend_tensor_get_numpy(sm, (3, 6))
    sums = ggml.backend_tensor_get_numpy(s2, (3, 1))
    logits = x @ W.T + bias
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    info = (ggml.ggml_backend_sched_get_n_splits(sched), ggml.ggml_backend_sched_get_n_copies(sched),
            ggml.ggml_backend_sched_get_tensor_backend(sched, sm), ggml.ggml_backend_sched_get_tensor_backend(sched, s2))
    ggml.ggml_backend_sched_free(sched)
    ggml.ggml_free(gctx)
    ggml.ggml_backend_buffer_free(wbuf)
    ggml.ggml_free(wctx)
    return got, sums, e, info


@pytest.mark.parametrize("pin", [False, True])
def test_scheduler_splits_and_copies(test_device, pin):
    cpu = ggml.ggml_backend_cpu_init()
    dev = ggml.ggml_backend_dev_init(test_device, None)
    try:
        got, sums, want, (n_splits, n_copies, sm_be, s2_be) = _graph_on_device(dev, cpu, pin)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sums[:, 0], 1.0, rtol=1e-5)
        assert s2_be == cpu                                  # unsupported on the device
        assert sm_be == (cpu if pin else dev)                # weights' device unless pinned
        assert n_splits == 2 and n_copies == 1               # [mul_mat add (softmax)] on dev, the rest on CPU
    finally:
        ggml.ggml_backend_free(dev)
        ggml.ggml_backend_free(cpu)


def test_misuse_is_an_error_not_an_abort(test_device, caplog):
    cpu = ggml.ggml_backend_cpu_init()
    dev = ggml.ggml_backend_dev_init(test_device, None)
    ctx = _meta_ctx()
    t = ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, 4)
    x = np.zeros(4, dtype=np.float32)
    ggml.ggml_backend_tensor_set(t, x.ctypes.data, 0, 16)        # no buffer: logged, nothing written
    ggml.ggml_backend_tensor_get(None, x.ctypes.data, 0, 16)
    buf = ggml.ggml_backend_alloc_ctx_tensors(ctx, dev)
    ggml.ggml_backend_tensor_set(t, x.ctypes.data, 8, 16)        # out of range: logged
    # the last backend of a scheduler must be the CPU
    assert not ggml.ggml_backend_sched_new([cpu, dev], None, 2, 16, False, True)
    # a graph over device memory computed by a backend that cannot reach it
    gctx = _meta_ctx()
    y = ggml.ggml_scale(gctx, t, 2.0)
    gf = ggml.ggml_new_graph(gctx)
    ggml.ggml_build_forward_expand(gf, y)
    ga = ggml.ggml_gallocr_new(None)
    assert ggml.ggml_gallocr_alloc_graph(ga, gf)
    assert ggml.ggml_backend_graph_compute(cpu, gf) == ggml.GGML_STATUS_FAILED
    # an op the device does not support, computed on it directly
    g2 = _meta_ctx()
    r = ggml.ggml_sum_rows(g2, t)
    gf2 = ggml.ggml_new_graph(g2)
    ggml.ggml_build_forward_expand(gf2, r)
    ga2 = ggml.ggml_gallocr_new(ggml.ggml_backend_get_default_buffer_type(dev))
    assert ggml.ggml_gallocr_alloc_graph(ga2, gf2)
    assert ggml.ggml_backend_graph_compute(dev, gf2) == ggml.GGML_STATUS_FAILED
    assert not ggml.ggml_backend_buft_alloc_buffer(ggml.ggml_backend_cpu_repack_buffer_type(), 64)
    for a in (ga, ga2):
        ggml.ggml_gallocr_free(a)
    for c in (gctx, g2):
        ggml.ggml_free(c)
    ggml.ggml_backend_buffer_free(buf)
    ggml.ggml_free(ctx)
    ggml.ggml_backend_free(dev)
    ggml.ggml_backend_free(cpu)


def test_device_memory_is_private(test_device):
    """Reading a test-device tensor's data pointer from the host faults (in a child process):
    only the device's own operations may touch it."""
    code = (
        "import ctypes, sys\n"
        "from llama_py import ggml\n"
        "ggml.ggml_backend_test_device_enable(True)\n"
        "dev = ggml.ggml_backend_init_by_name(b'TestDevice0', None)\n"
        "buf = ggml.ggml_backend_alloc_buffer(dev, 4096)\n"
        "base = ggml.ggml_backend_buffer_get_base(buf)\n"
        "print('read', ctypes.c_float.from_address(base).value, flush=True)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode != 0 and "read" not in r.stdout


def test_example_runs_on_the_test_device(test_device):
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "ggml_backend.py")], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "GGML_TEST_DEVICE": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "TestDevice0" in r.stdout and "2 split(s)" in r.stdout and "all results equal NumPy" in r.stdout
