"""FLASH_ATTN_EXT in the shapes of one-token decoding, against NumPy and against itself.

Decoding computes one query against an F16 KV cache read through a view: the n_kv cells the
graph reads are padded (to a multiple of 32) past the sequence's end, and the mask hides the
padding. The kernels take small tiles (a GQA group of 3, 4 or 8 rows) and skip the masked
cells at a block's edges, so these cases check:
- the values against a float64 reference, for n_kv from 1 to 300 (one block, several, ragged
  ends), GQA groups 3, 4 and 8, F32 and F16 masks, on 1, 2 and 3 threads;
- bit-for-bit agreement of a query's row whatever else is computed with it: decoded alone, in
  a batch of queries (larger tiles), with more masked padding cells after its keys, or on
  another number of threads. Batched prompt decoding and token-by-token decoding rely on it.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from llama_py import ggml

F32, F16 = ggml.GGML_TYPE_F32, ggml.GGML_TYPE_F16
MB = 1024 * 1024
D = 64


@pytest.fixture
def ctx(lib_path):
    c = ggml.ggml_init(ggml.ggml_init_params(mem_size=64 * MB, mem_buffer=None, no_alloc=False))
    assert c, "ggml_init failed"
    yield c
    ggml.ggml_free(c)


def cache(ctx, data):
    """An F16 cache [n_cells, H_kv*D] holding data (n_cells, H_kv, D); returns (tensor, values)."""
    n_cells, h_kv, d = data.shape
    t = ggml.ggml_new_tensor_2d(ctx, F16, d * h_kv, n_cells)
    ggml.tensor_to_numpy(t).reshape(n_cells, h_kv * d)[...] = data.reshape(n_cells, h_kv * d)
    vals = np.asarray(ggml.tensor_to_numpy(t), dtype=np.float64).reshape(n_cells, h_kv, d)
    return t, vals


def attend(ctx, qv, kc, vc, h_kv, n_kv, mask_rows, mask_type, n_threads):
    """Runs FLASH_ATTN_EXT of queries qv (n_q, H, D) over cells [0, n_kv) of the caches (as the
    model graph does: q permuted, K/V views, mask [n_kv, n_q]); returns out (n_q, H, D)."""
    n_q, h, d = qv.shape
    q = ggml.ggml_new_tensor_3d(ctx, F32, d, h, n_q)
    ggml.tensor_to_numpy(q).reshape(n_q, h, d)[...] = qv
    qp = ggml.ggml_permute(ctx, q, 0, 2, 1, 3)  # [D, n_q, H]
    ks = ggml.tensor_struct(kc)
    k = ggml.ggml_view_3d(ctx, kc, d, n_kv, h_kv, ks.nb[1], d * 2, 0)
    v = ggml.ggml_view_3d(ctx, vc, d, n_kv, h_kv, ks.nb[1], d * 2, 0)
    m = ggml.ggml_new_tensor_2d(ctx, mask_type, n_kv, n_q)
    ggml.tensor_to_numpy(m).reshape(n_q, n_kv)[...] = mask_rows[:, :n_kv]
    out = ggml.ggml_flash_attn_ext(ctx, qp, k, v, m, 1.0 / math.sqrt(d), 0.0, 0.0)
    assert out, "flash_attn_ext constructor returned NULL"
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, out)
    assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
    return np.array(ggml.tensor_to_numpy(out), dtype=np.float32).reshape(n_q, h, d)


def reference(qv, kv, vv, mask_rows, group):
    n_q, h, d = qv.shape
    ref = np.zeros((n_q, h, d))
    for iq in range(n_q):
        vis = np.isfinite(mask_rows[iq])
        for hh in range(h):
            s = kv[vis, hh // group] @ qv[iq, hh].astype(np.float64) / math.sqrt(d) + mask_rows[iq, vis]
            p = np.exp(s - s.max())
            ref[iq, hh] = p @ vv[vis, hh // group] / p.sum()
    return ref


def prefix_mask(n_q, n_cells, n_vis0, rng, f16):
    """Row iq sees cells [0, n_vis0 + iq) (a causal prompt after n_vis0 - 1 earlier tokens), with
    small random biases (exact in F16 when the mask is F16); the rest is -inf."""
    m = np.full((n_q, n_cells), -np.inf)
    for iq in range(n_q):
        b = rng.uniform(-0.5, 0.5, n_vis0 + iq)
        m[iq, :n_vis0 + iq] = b.astype(np.float16) if f16 else b.astype(np.float32)
    return m


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("h,h_kv", [(9, 3), (16, 4), (32, 4)])
@pytest.mark.parametrize("mask_type", [F32, F16])
def test_decode_against_numpy(ctx, h, h_kv, mask_type, n_threads):
    rng = np.random.default_rng(1000 * h + 10 * mask_type + n_threads)
    n_cells = 320
    kc, kv = cache(ctx, rng.uniform(-1, 1, (n_cells, h_kv, D)))
    vc, vv = cache(ctx, rng.uniform(-1, 1, (n_cells, h_kv, D)))
    for n_vis in (1, 2, 7, 16, 31, 32, 33, 64, 65, 100, 129, 300):
        n_kv = min(n_cells, (n_vis + 31) // 32 * 32)  # padded like the KV cache's n_kv
        qv = rng.uniform(-1, 1, (1, h, D)).astype(np.float32)
        mask = prefix_mask(1, n_cells, n_vis, rng, mask_type == F16)
        got = attend(ctx, qv, kc, vc, h_kv, n_kv, mask, mask_type, n_threads)
        want = reference(qv, kv[:n_kv], vv[:n_kv], mask[:, :n_kv], h // h_kv)
        np.testing.assert_allclose(got, want, atol=2e-6, rtol=1e-5, err_msg=f"n_vis={n_vis} n_kv={n_kv}")


def test_decode_unpadded_and_sparse_masks(ctx):
    """Masked cells inside the visible span (other sequences' cells) and n_kv not a multiple of
    the block, on 2 threads."""
    rng = np.random.default_rng(7)
    h, h_kv, n_cells = 12, 3, 300
    kc, kv = cache(ctx, rng.uniform(-2, 2, (n_cells, h_kv, D)))
    vc, vv = cache(ctx, rng.uniform(-2, 2, (n_cells, h_kv, D)))
    for n_kv in (1, 3, 63, 65, 130, 300):
        qv = rng.uniform(-1, 1, (1, h, D)).astype(np.float32)
        mask = np.where(rng.uniform(size=(1, n_cells)) < 0.4, -np.inf, 0.0)
        mask[0, rng.integers(n_kv)] = 0.0  # at least one visible cell
        got = attend(ctx, qv, kc, vc, h_kv, n_kv, mask, F32, 2)
        want = reference(qv, kv[:n_kv], vv[:n_kv], mask[:, :n_kv], h // h_kv)
        np.testing.assert_allclose(got, want, atol=2e-6, rtol=1e-5, err_msg=f"n_kv={n_kv}")


@pytest.mark.parametrize("h,h_kv", [(9, 3), (16, 4), (32, 4), (8, 8)])
def test_row_bits_do_not_depend_on_the_batch(ctx, h, h_kv):
    """Each query of a causal batch gets the same bits decoded alone (n_kv padded further, on
    another thread count) as in the batch."""
    rng = np.random.default_rng(h * 31 + h_kv)
    n_cells, n_q, n_vis0 = 320, 11, 60
    kc, _ = cache(ctx, rng.uniform(-1, 1, (n_cells, h_kv, D)))
    vc, _ = cache(ctx, rng.uniform(-1, 1, (n_cells, h_kv, D)))
    qv = rng.uniform(-1, 1, (n_q, h, D)).astype(np.float32)
    mask = prefix_mask(n_q, n_cells, n_vis0, rng, False)
    batch = attend(ctx, qv, kc, vc, h_kv, 96, mask, F32, 3)
    for iq in range(n_q):
        for n_kv, nth in ((96, 1), (128, 2), (n_vis0 + iq, 3), (320, 2)):
            one = attend(ctx, qv[iq:iq + 1], kc, vc, h_kv, n_kv, mask[iq:iq + 1], F32, nth)
            assert np.array_equal(one[0], batch[iq]), f"query {iq}: n_kv={n_kv} threads={nth}"


@pytest.mark.parametrize("h,h_kv", [(9, 3), (32, 4)])
@pytest.mark.parametrize("n_cells", [200, 1700])
def test_prompt_rows_match_decoding(ctx, h, h_kv, n_cells):
    """A prompt batch (many positions per KV head: each thread keeps the head's K/V rows converted
    across its tiles, or at 1700 cells, past that cache's size, converts them block by block) gets
    each query's bits decoded alone, and the NumPy values. The rows' masks differ in the first
    block (random holes: rows sharing a later block's cells reach it with list counts of either
    parity) and see every cell after it up to a causal end."""
    rng = np.random.default_rng(n_cells + h)
    n_q = 24
    kc, kv = cache(ctx, rng.uniform(-1, 1, (n_cells, h_kv, D)))
    vc, vv = cache(ctx, rng.uniform(-1, 1, (n_cells, h_kv, D)))
    qv = rng.uniform(-1, 1, (n_q, h, D)).astype(np.float32)
    mask = np.full((n_q, n_cells), -np.inf)
    for iq in range(n_q):
        end = n_cells - n_q + iq + 1
        mask[iq, :end] = 0.0
        mask[iq, :64][rng.uniform(size=64) < 0.3] = -np.inf
    batch = attend(ctx, qv, kc, vc, h_kv, n_cells, mask, F32, 2)
    want = reference(qv, kv, vv, mask, h // h_kv)
    np.testing.assert_allclose(batch, want, atol=2e-6, rtol=1e-5)
    for iq in (0, 1, 2, 7, n_q - 1):
        one = attend(ctx, qv[iq:iq + 1], kc, vc, h_kv, n_cells, mask[iq:iq + 1], F32, 1)
        assert np.array_equal(one[0], batch[iq]), f"query {iq}"
