"""The expert ops beyond the op table (tests/test_ggml_ops.py has their NumPy cases):
mul_mat_id gives the same bits whatever the thread count and however the tokens are split into
batches (as mul_mat does), an expert id outside the experts fails the computation with a logged
reason instead of reading outside them, the constructors refuse bad shapes, and argsort_top_k
(a view of a descending argsort) agrees with top_k."""
from __future__ import annotations

import numpy as np
import pytest

from llama_py import ggml
from test_ggml_ops import I32, MB, Q4_0, Q8_0, F16, F32, ids_tensor, np_argsort, quantized_input, sort_input, val


@pytest.fixture
def ctx(lib_path):
    c = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * MB, mem_buffer=None, no_alloc=False))
    assert c
    yield c
    ggml.ggml_free(c)


def _compute(ctx, node, n_threads):
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, node)
    return ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads)


def _mmid_bytes(ctx, a, bv, ids, n_threads):
    """mul_mat_id of experts a with b values bv (n_t, n_b, K) and ids (n_t, n_used), as bytes per token."""
    b = ggml.tensor_from_numpy(ctx, np.ascontiguousarray(bv, dtype=np.float32), F32)
    out = ggml.ggml_mul_mat_id(ctx, a, b, ids_tensor(ctx, ids))
    assert out
    assert _compute(ctx, out, n_threads) == ggml.GGML_STATUS_SUCCESS
    res = np.array(ggml.tensor_to_numpy(out), dtype=np.float32).reshape(ids.shape[0], ids.shape[1], -1)
    return [res[t].tobytes() for t in range(ids.shape[0])]


@pytest.mark.parametrize("type", [F32, F16, Q8_0, Q4_0])
@pytest.mark.parametrize("n_b", [1, 4])
def test_mul_mat_id_bits_threads_and_splits(ctx, type, n_b):
    """Every token's columns are the same bits on 1, 2 and 3 threads, for the whole batch, token by
    token and in two uneven parts (other tokens change which expert holds how many pairs)."""
    rng = np.random.default_rng(5)
    K, M, n_as, n_used, n_t = 256, 96, 8, 4, 23
    a, _ = quantized_input(ctx, rng.uniform(-1, 1, (n_as, M, K)).astype(np.float32), type)
    bv = rng.uniform(-1, 1, (n_t, n_b, K))
    ids = np.stack([rng.permutation(n_as)[:n_used] for _ in range(n_t)])
    ref = _mmid_bytes(ctx, a, bv, ids, 1)
    for n_threads in (1, 2, 3):
        assert _mmid_bytes(ctx, a, bv, ids, n_threads) == ref, f"whole batch, {n_threads} threads"
        one = [_mmid_bytes(ctx, a, bv[t:t + 1], ids[t:t + 1], n_threads)[0] for t in range(n_t)]
        assert one == ref, f"token by token, {n_threads} threads"
        split = _mmid_bytes(ctx, a, bv[:9], ids[:9], n_threads) + _mmid_bytes(ctx, a, bv[9:], ids[9:], n_threads)
        assert split == ref, f"9 + 14 tokens, {n_threads} threads"


@pytest.mark.parametrize("bad", [-1, 6, 1 << 30])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_mul_mat_id_bad_id_fails_cleanly(ctx, bad, n_threads):
    rng = np.random.default_rng(1)
    a, _ = quantized_input(ctx, rng.uniform(-1, 1, (6, 64, 128)).astype(np.float32), Q8_0)
    b = ggml.tensor_from_numpy(ctx, rng.uniform(-1, 1, (40, 1, 128)).astype(np.float32), F32)
    ids = np.tile(np.array([[0, 1]]), (40, 1))
    ids[17, 1] = bad
    out = ggml.ggml_mul_mat_id(ctx, a, b, ids_tensor(ctx, ids))
    assert out
    assert _compute(ctx, out, n_threads) == ggml.GGML_STATUS_FAILED


def test_mul_mat_id_refuses_bad_shapes(ctx):
    a = ggml.ggml_new_tensor_3d(ctx, F32, 64, 32, 4)
    b = ggml.ggml_new_tensor_3d(ctx, F32, 64, 1, 5)
    ids = ggml.ggml_new_tensor_2d(ctx, I32, 2, 5)
    assert ggml.ggml_mul_mat_id(ctx, a, b, ids)
    assert not ggml.ggml_mul_mat_id(ctx, a, ggml.ggml_new_tensor_3d(ctx, F32, 63, 1, 5), ids)      # K differs
    assert not ggml.ggml_mul_mat_id(ctx, a, ggml.ggml_new_tensor_3d(ctx, F32, 64, 3, 5), ids)      # n_b not 1 or n_used
    assert not ggml.ggml_mul_mat_id(ctx, a, ggml.ggml_new_tensor_3d(ctx, F32, 64, 1, 4), ids)      # tokens differ
    assert not ggml.ggml_mul_mat_id(ctx, a, b, ggml.ggml_new_tensor_2d(ctx, F32, 2, 5))            # ids not I32
    assert not ggml.ggml_mul_mat_id(ctx, a, ggml.ggml_new_tensor_3d(ctx, F32, 64, 1, 5),
                                    ggml.ggml_new_tensor_2d(ctx, I32, 5, 5))                       # 5 of 4 experts
    assert not ggml.ggml_mul_mat_id(ctx, a, ggml.ggml_new_tensor_3d(ctx, F16, 64, 1, 5), ids)      # b not F32


def test_top_k_refuses_bad_k(ctx):
    a = ggml.ggml_new_tensor_2d(ctx, F32, 16, 3)
    assert ggml.ggml_top_k(ctx, a, 16) and ggml.ggml_argsort_top_k(ctx, a, 1)
    for k in (0, -1, 17):
        assert not ggml.ggml_top_k(ctx, a, k)
        assert not ggml.ggml_argsort_top_k(ctx, a, k)
    assert not ggml.ggml_argsort(ctx, a, 2)
    assert not ggml.ggml_argsort(ctx, ggml.ggml_new_tensor_2d(ctx, I32, 16, 3), ggml.GGML_SORT_ORDER_ASC)


@pytest.mark.parametrize("n_threads", [1, 3])
def test_argsort_top_k_view(ctx, n_threads):
    """argsort_top_k is the first k columns of a descending argsort: top_k's indices."""
    rng = np.random.default_rng(3)
    x = sort_input(rng, (60, 64))
    a = ggml.tensor_from_numpy(ctx, x.astype(np.float32), F32)
    v = ggml.ggml_cont(ctx, ggml.ggml_argsort_top_k(ctx, a, 8))
    t = ggml.ggml_top_k(ctx, a, 8)
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, v)
    ggml.ggml_build_forward_expand(gf, t)
    assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
    want = np_argsort(x, True)[:, :8]
    np.testing.assert_array_equal(val(v)[0, 0], want)
    np.testing.assert_array_equal(val(t)[0, 0], want)
