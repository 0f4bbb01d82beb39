"""Offload through the backend interface on the built-in test device (separate memory, an op
subset, CPU kernels): SmolLM2 at n_gpu_layers 0, some and all gives bit-identical logits and
the same greedy text; the KV cache of offloaded blocks lives on the device (state save/load
moves it across placements); several sequences in one batch; embeddings; the scheduler's
split counts. The reference is the same model on the CPU alone (the CPU path itself is checked
against NumPy/transformers elsewhere)."""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_util import Ctx, LogCapture, Model, tokens_of  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402
from llama_py import ggml  # noqa: E402

PROMPT = "The capital of France is Paris, and the capital of Italy is"
N_LAYER = 30  # SmolLM2-135M


@pytest.fixture
def test_device():
    ggml.ggml_backend_test_device_enable(True)
    try:
        yield
    finally:
        ggml.ggml_backend_test_device_enable(False)


def _run(path, ngl, n_gen=24, n_seq_max=1):
    """Prompt logits (every row) and the greedy continuation at n_gpu_layers = ngl."""
    with LogCapture() as log, Model(path, n_gpu_layers=ngl) as m, Ctx(m, n_ctx=256, n_batch=256, n_seq_max=n_seq_max) as c:
        toks = tokens_of(m, PROMPT)
        assert c.decode_seq(toks) == 0
        prompt_logits = c.all_logits(len(toks))
        gen = []
        pos = len(toks)
        for _ in range(n_gen):
            nxt = int(np.argmax(c.logits(-1)))
            gen.append(nxt)
            assert c.decode_seq([nxt], start=pos) == 0
            pos += 1
        return prompt_logits, gen, log.text()


def test_offload_is_bit_identical(smollm2_path, test_device):
    base_logits, base_gen, base_log = _run(smollm2_path, 0)
    assert "offloaded" not in base_log
    for ngl in (10, N_LAYER, 999):
        logits, gen, log = _run(smollm2_path, ngl)
        assert np.array_equal(logits, base_logits), f"n_gpu_layers={ngl}: logits differ"
        assert gen == base_gen, f"n_gpu_layers={ngl}: greedy text differs"
        assert f"offloaded {min(ngl, N_LAYER)} of {N_LAYER} blocks" in log
        assert ("and the output head" in log) == (ngl > N_LAYER)


def test_split_counts(smollm2_path, test_device):
    """n_gpu_layers 10: [embeddings, blocks 0-19] on the CPU, [blocks 20-29] on the device, the
    output head on the CPU: three splits for a token. A prompt whose last row alone is output
    selects that row with a get_rows in block 29, which the test device does not support: that
    node runs on the CPU, two splits more."""
    L.llama_log_set(L.llama_log_callback(), None)
    with LogCapture() as log, Model(smollm2_path, n_gpu_layers=10) as m, Ctx(m, n_ctx=128) as c:
        toks = tokens_of(m, PROMPT)
        assert c.decode_seq(toks, all_logits=False) == 0
        assert c.decode_seq([42], start=len(toks)) == 0
    lines = [ln for ln in log.lines if "splits with" in ln]
    assert len(lines) == 2, lines
    assert " in 5 splits" in lines[0] and " in 3 splits" in lines[1], lines


def test_state_moves_between_placements(smollm2_path, test_device):
    """A state saved from a fully offloaded context (KV read back from the device) restores into
    a CPU context, and the other way round, continuing with identical logits."""
    toks = None
    states, nexts = {}, {}
    for ngl in (999, 0):
        with Model(smollm2_path, n_gpu_layers=ngl) as m, Ctx(m, n_ctx=128) as c:
            toks = tokens_of(m, PROMPT)
            assert c.decode_seq(toks, all_logits=False) == 0
            n = L.llama_state_get_size(c.ptr)
            buf = (ctypes.c_uint8 * n)()
            assert L.llama_state_get_data(c.ptr, buf, n) == n
            states[ngl] = bytes(buf)
            assert c.decode_seq([42], start=len(toks)) == 0
            nexts[ngl] = c.logits(-1)
    assert states[999] == states[0]          # same cache bytes wherever they lived
    for src, dst in ((999, 0), (0, 999)):
        with Model(smollm2_path, n_gpu_layers=dst) as m, Ctx(m, n_ctx=128) as c:
            data = (ctypes.c_uint8 * len(states[src])).from_buffer_copy(states[src])
            assert L.llama_state_set_data(c.ptr, data, len(data)) == len(data)
            assert c.decode_seq([42], start=len(toks)) == 0
            assert np.array_equal(c.logits(-1), nexts[src])


def test_several_sequences_in_one_batch(smollm2_path, test_device):
    prompts = ["Hello, my name is", "The quick brown fox", "1, 2, 3, 4,"]
    out = {}
    for ngl in (0, 999):
        with Model(smollm2_path, n_gpu_layers=ngl) as m, Ctx(m, n_ctx=256, n_seq_max=3) as c:
            rows = []
            for s, p in enumerate(prompts):
                t = tokens_of(m, p)
                rows += [(tok, i, [s], i == len(t) - 1) for i, tok in enumerate(t)]
            assert c.decode_rows(rows) == 0
            out[ngl] = c.all_logits(3)
    assert np.array_equal(out[0], out[999])


def test_embeddings_come_back(smollm2_path, test_device):
    out = {}
    for ngl in (0, 999):
        with Model(smollm2_path, n_gpu_layers=ngl) as m, \
                Ctx(m, n_ctx=128, embeddings=True, pooling_type=L.LLAMA_POOLING_TYPE_MEAN) as c:
            assert c.decode_seq(tokens_of(m, PROMPT)) == 0
            out[ngl] = c.embedding_seq(0)
    assert out[0] is not None and np.array_equal(out[0], out[999])


def test_device_queries(test_device):
    assert L.llama_max_devices() == 16
    # the test device stands in for a GPU but is no GPU offload
    has_gpu = any(ggml.ggml_backend_dev_type(ggml.ggml_backend_dev_get(i)) == ggml.GGML_BACKEND_DEVICE_TYPE_GPU
                  and not ggml.ggml_backend_dev_is_test(ggml.ggml_backend_dev_get(i))
                  for i in range(ggml.ggml_backend_dev_count()))
    assert L.llama_supports_gpu_offload() == has_gpu
    assert b"TestDevice0" in L.llama_print_system_info()


def test_no_device_means_cpu(smollm2_path):
    """Without a device, n_gpu_layers is accepted and everything runs on the CPU."""
    with LogCapture() as log, Model(smollm2_path, n_gpu_layers=10) as m, Ctx(m, n_ctx=64) as c:
        assert c.decode_seq(tokens_of(m, "Hi")) == 0
    assert "offloaded" not in log.text()


def test_main_gpu_out_of_range_is_an_error(smollm2_path, test_device):
    """A device that does not exist is refused, never replaced by another."""
    p = L.llama_model_default_params()
    p.n_gpu_layers = 10
    p.main_gpu = 5
    with LogCapture() as log:
        m = L.llama_model_load_from_file(str(smollm2_path).encode(), p)
    assert not m
    assert "main_gpu = 5 is out of range" in log.text()
