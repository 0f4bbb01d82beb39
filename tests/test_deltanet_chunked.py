"""The chunked form of the gated delta rule (ggml_gated_delta_net_chunked, used for prompt
ubatches) against transformers' own chunked reference (`torch_chunk_gated_delta_rule` of
Qwen3.5, chunks of 64) and against the token-by-token op, at the real head size (128), for
prompts of several lengths: shorter than a chunk, whole chunks, a partial last chunk.
Also the model-level check: a Qwen3.5 prompt decoded in ubatches of several sizes (so the
chunked scan runs with states carried between ubatches) gives the logits of token-by-token
decoding, whose recurrent form test_qwen35.py checks against transformers."""
from __future__ import annotations

import numpy as np
import pytest

from llama_py import ggml

torch = pytest.importorskip("torch")
q35 = pytest.importorskip("transformers.models.qwen3_5.modeling_qwen3_5")

MB = 1024 * 1024
F32 = ggml.GGML_TYPE_F32


def _tensor(ctx, arr):
    return ggml.tensor_from_numpy(ctx, np.ascontiguousarray(arr, dtype=np.float32), F32)


def _inputs(rng, n_s, n_t, H, H_k, S):
    def unit(shape):
        x = rng.normal(size=shape)
        return x / np.linalg.norm(x, axis=-1, keepdims=True)   # the model L2-normalises q and k
    q, k = unit((n_s, n_t, H_k, S)), unit((n_s, n_t, H_k, S))
    v = rng.normal(size=(n_s, n_t, H, S))
    # log decays as the model makes them: -exp(A_log) * softplus(a + dt_bias), here in [-3, -1e-3]
    g = -np.exp(rng.uniform(-7, 1, (n_s, n_t, H)))
    beta = rng.uniform(0.05, 0.95, (n_s, n_t, H))
    state = rng.normal(scale=0.3, size=(n_s, H, S, S))        # [s, h, value j, key i] as the op stores it
    return q, k, v, g, beta, state


def _op(q, k, v, g, beta, state, chunk, n_threads):  # noqa: PLR0913
    """(outputs [n_s, n_t, H, S], final state [n_s, H, S(j), S(i)]) of the op."""
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=256 * MB, mem_buffer=None, no_alloc=False))
    assert ctx
    try:
        n_s, n_t, H, S = v.shape
        tq, tk, tv = _tensor(ctx, q), _tensor(ctx, k), _tensor(ctx, v)
        tg, tb = _tensor(ctx, g[..., None]), _tensor(ctx, beta[..., None])
        ts = _tensor(ctx, state)
        if chunk:
            node = ggml.ggml_gated_delta_net_chunked(ctx, tq, tk, tv, tg, tb, ts, chunk)
        else:
            node = ggml.ggml_gated_delta_net(ctx, tq, tk, tv, tg, tb, ts, 1)
        assert node
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, node)
        assert ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads) == ggml.GGML_STATUS_SUCCESS
        flat = np.array(ggml.tensor_to_numpy(node), dtype=np.float64).reshape(-1)
        n_o = n_s * n_t * H * S
        return flat[:n_o].reshape(n_s, n_t, H, S), flat[n_o:].reshape(n_s, H, S, S)
    finally:
        ggml.ggml_free(ctx)


def _transformers(q, k, v, g, beta, state):
    """transformers' chunked rule (it computes in float32). The op's value head h reads key head
    h % H_k (llama.cpp's GGUF order); transformers groups consecutive heads, so the key heads
    are handed to it tiled to H."""
    H, H_k = v.shape[2], q.shape[2]
    rep = lambda x: torch.from_numpy(np.tile(x, (1, 1, H // H_k, 1)))  # noqa: E731
    o, st = q35.torch_chunk_gated_delta_rule(
        rep(q).double(), rep(k).double(), torch.from_numpy(v).double(), torch.from_numpy(g).double(),
        torch.from_numpy(beta).double(), chunk_size=64,
        initial_state=torch.from_numpy(state.transpose(0, 1, 3, 2).copy()).double(), output_final_state=True)
    return o.double().numpy(), st.double().numpy().transpose(0, 1, 3, 2)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("n_t", [1, 2, 37, 64, 128, 200])
def test_chunked_matches_transformers_and_the_recurrent_form(n_t):
    rng = np.random.default_rng(n_t)
    n_s, H, H_k, S = 2, 4, 2, 128
    q, k, v, g, beta, state = _inputs(rng, n_s, n_t, H, H_k, S)
    ref_o, ref_s = _transformers(q, k, v, g, beta, state)
    rec_o, rec_s = _op(q, k, v, g, beta, state, 0, 2)
    for n_threads in (1, 3):
        o, s = _op(q, k, v, g, beta, state, 64, n_threads)
        errs = (_rel(o, ref_o), _rel(s, ref_s), _rel(o, rec_o), _rel(s, rec_s))
        assert max(errs) < 1e-5, f"n_t {n_t}, {n_threads} threads: o/state vs transformers, o/state vs recurrent {errs}"
    # the recurrent form agrees with transformers too (the same definition)
    assert max(_rel(rec_o, ref_o), _rel(rec_s, ref_s)) < 1e-5


def test_chunked_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(7)
    q, k, v, g, beta, state = _inputs(rng, 1, 100, 3, 3, 64)
    one = _op(q, k, v, g, beta, state, 32, 1)
    for n_threads in (2, 3):
        other = _op(q, k, v, g, beta, state, 32, n_threads)
        assert np.array_equal(one[0], other[0]) and np.array_equal(one[1], other[1])


def test_chunk_out_of_range_is_refused(lib_path):
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=16 * MB, mem_buffer=None, no_alloc=False))
    try:
        q, k, v, g, beta, state = _inputs(np.random.default_rng(0), 1, 4, 2, 2, 16)
        args = [_tensor(ctx, x) for x in (q, k, v, g[..., None], beta[..., None], state)]
        assert not ggml.ggml_gated_delta_net_chunked(ctx, *args, 0)
        assert not ggml.ggml_gated_delta_net_chunked(ctx, *args, 257)
        assert ggml.ggml_gated_delta_net_chunked(ctx, *args, 64)
    finally:
        ggml.ggml_free(ctx)
