"""ggml's "simple-backend" example in Python: a matrix product computed on a backend, with
the tensors in that backend's memory. Runs on every device found (the CPU; the test device
with GGML_TEST_DEVICE=1; a GPU where its backend library and driver are present), then once
through the scheduler with the product on the first device and a softmax on the CPU, and
compares each result with NumPy. Exits non-zero on a mismatch.

    python examples/ggml_backend.py
"""
import sys

import numpy as np

from llama_py import ggml


def matmul_on(backend, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b.T computed by ggml_mul_mat on backend, tensors living in its buffers."""
    # 1. weights context: metadata only, data in one backend buffer
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=2 * ggml.ggml_tensor_overhead(), mem_buffer=None, no_alloc=True))
    ta = ggml.ggml_new_tensor_2d(ctx, ggml.GGML_TYPE_F32, a.shape[1], a.shape[0])
    tb = ggml.ggml_new_tensor_2d(ctx, ggml.GGML_TYPE_F32, b.shape[1], b.shape[0])
    buf = ggml.ggml_backend_alloc_ctx_tensors(ctx, backend)
    ggml.backend_tensor_set_numpy(ta, a)      # never ta.data: it may be device memory
    ggml.backend_tensor_set_numpy(tb, b)

    # 2. the graph in a second metadata-only context, its memory planned by gallocr
    gctx = ggml.ggml_init(ggml.ggml_init_params(
        mem_size=ggml.ggml_tensor_overhead() * 8 + ggml.ggml_graph_overhead(), mem_buffer=None, no_alloc=True))
    out = ggml.ggml_mul_mat(gctx, ta, tb)
    gf = ggml.ggml_new_graph(gctx)
    ggml.ggml_build_forward_expand(gf, out)
    galloc = ggml.ggml_gallocr_new(ggml.ggml_backend_get_default_buffer_type(backend))
    try:
        if not ggml.ggml_gallocr_alloc_graph(galloc, gf):
            raise RuntimeError("gallocr could not allocate the graph")
        status = ggml.ggml_backend_graph_compute(backend, gf)
        if status != ggml.GGML_STATUS_SUCCESS:
            raise RuntimeError(f"graph_compute failed with status {status}")
        return ggml.backend_tensor_get_numpy(out, (b.shape[0], a.shape[0]))
    finally:
        ggml.ggml_gallocr_free(galloc)
        ggml.ggml_free(gctx)
        ggml.ggml_backend_buffer_free(buf)
        ggml.ggml_free(ctx)


def softmax_matmul_sched(backends, a: np.ndarray, b: np.ndarray):
    """softmax(a @ b.T) through the scheduler: the product where a lives, the softmax pinned
    to the CPU. Returns (result, n_splits, n_copies)."""
    first = backends[0]
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=2 * ggml.ggml_tensor_overhead(), mem_buffer=None, no_alloc=True))
    ta = ggml.ggml_new_tensor_2d(ctx, ggml.GGML_TYPE_F32, a.shape[1], a.shape[0])
    buf = ggml.ggml_backend_alloc_ctx_tensors(ctx, first)
    ggml.ggml_backend_buffer_set_usage(buf, ggml.GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
    ggml.backend_tensor_set_numpy(ta, a)
    gctx = ggml.ggml_init(ggml.ggml_init_params(
        mem_size=ggml.ggml_tensor_overhead() * 8 + ggml.ggml_graph_overhead(), mem_buffer=None, no_alloc=True))
    tb = ggml.ggml_new_tensor_2d(gctx, ggml.GGML_TYPE_F32, b.shape[1], b.shape[0])
    ggml.ggml_set_input(tb)
    prod = ggml.ggml_mul_mat(gctx, ta, tb)
    sm = ggml.ggml_soft_max(gctx, prod)
    gf = ggml.ggml_new_graph(gctx)
    ggml.ggml_build_forward_expand(gf, sm)
    sched = ggml.ggml_backend_sched_new(backends, None, len(backends), 64, False, True)
    try:
        ggml.ggml_backend_sched_set_tensor_backend(sched, sm, backends[-1])
        if not ggml.ggml_backend_sched_alloc_graph(sched, gf):
            raise RuntimeError("the scheduler could not allocate the graph")
        ggml.backend_tensor_set_numpy(tb, b)
        status = ggml.ggml_backend_sched_graph_compute(sched, gf)
        if status != ggml.GGML_STATUS_SUCCESS:
            raise RuntimeError(f"sched_graph_compute failed with status {status}")
        res = ggml.backend_tensor_get_numpy(sm, (b.shape[0], a.shape[0]))
        return res, ggml.ggml_backend_sched_get_n_splits(sched), ggml.ggml_backend_sched_get_n_copies(sched)
    finally:
        ggml.ggml_backend_sched_free(sched)
        ggml.ggml_free(gctx)
        ggml.ggml_backend_buffer_free(buf)
        ggml.ggml_free(ctx)


def main() -> int:
    ggml.ggml_backend_load_all()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 2)).astype(np.float32)   # ggml_mul_mat(a, b): ne [4, 3]
    b = rng.standard_normal((3, 2)).astype(np.float32)
    expected = b @ a.T
    ok = True
    backends = []
    for i in range(ggml.ggml_backend_dev_count()):
        dev = ggml.ggml_backend_dev_get(i)
        name = ggml.ggml_backend_dev_name(dev).decode()
        be = ggml.ggml_backend_dev_init(dev, None)
        if not be:
            print(f"{name}: cannot start a backend (see the log)")
            continue
        backends.append(be)
        got = matmul_on(be, a, b)
        same = np.allclose(got, expected, rtol=1e-5, atol=1e-6)
        ok = ok and same
        print(f"{name} ({ggml.ggml_backend_dev_description(dev).decode()}): mul_mat {'OK' if same else 'MISMATCH'}")
        print(np.array2string(got, precision=4))
    cpu = [be for be in backends if ggml.ggml_backend_is_cpu(be)]
    others = [be for be in backends if not ggml.ggml_backend_is_cpu(be)]
    order = others[:1] + cpu[:1]
    res, n_splits, n_copies = softmax_matmul_sched(order, a, b)
    e = np.exp(expected - expected.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    same = np.allclose(res, e, rtol=1e-5, atol=1e-6)
    ok = ok and same
    names = " + ".join(ggml.ggml_backend_name(be).decode() for be in order)
    print(f"scheduler over {names}: softmax(mul_mat) {'OK' if same else 'MISMATCH'}, {n_splits} split(s), {n_copies} copies")
    for be in backends:
        ggml.ggml_backend_free(be)
    print("all results equal NumPy" if ok else "a result DIFFERS from NumPy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
