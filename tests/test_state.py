"""Context state: a state restored into a fresh context continues with identical logits (whole
state, session files, one sequence); mismatched or damaged states are refused."""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_synthetic_model as msm  # noqa: E402
from model_util import Ctx, LogCapture, Model  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402

PROMPT = [1, 17, 99, 250, 3, 41, 77, 8]


@pytest.fixture(scope="module")
def model(tmp_path_factory, lib_path, spm_vocab):
    p = tmp_path_factory.mktemp("state") / "m.gguf"
    msm.write_model(p, n_layer=2, n_embd=64, n_head=4, n_head_kv=2, n_ff=128, n_ctx=256, n_vocab=500,
                    ftype="f32", seed=9, vocab=spm_vocab)
    with Model(p) as m:
        yield m


def _ctx(m, **kw):
    p = dict(n_ctx=64, n_seq_max=2)
    p.update(kw)
    return Ctx(m, **p)


def _get_state(c):
    n = L.llama_state_get_size(c.ptr)
    buf = (ctypes.c_uint8 * n)()
    assert L.llama_state_get_data(c.ptr, buf, n) == n
    return buf, n


def test_restore_into_fresh_context_continues_identically(model):
    with _ctx(model) as a:
        assert a.decode_seq(PROMPT, all_logits=False) == 0
        last = a.logits(-1)
        buf, n = _get_state(a)
        assert a.decode_seq([123], start=len(PROMPT)) == 0
        want = a.logits(-1)
    with _ctx(model) as b:
        assert L.llama_state_set_data(b.ptr, buf, n) == n
        assert b.pos_max(0) == len(PROMPT) - 1
        assert np.array_equal(b.logits(-1), last)          # the outputs come back too
        assert b.decode_seq([123], start=len(PROMPT)) == 0
        assert np.array_equal(b.logits(-1), want)
    with _ctx(model) as c:
        with LogCapture() as log:
            assert L.llama_state_get_data(c.ptr, buf, 10) == 0   # too small
        assert "not enough" in log.text()


def test_session_file(model, tmp_path):
    path = str(tmp_path / "s.bin").encode()
    toks = (L.llama_token * len(PROMPT))(*PROMPT)
    with _ctx(model) as a:
        assert a.decode_seq(PROMPT, all_logits=False) == 0
        assert L.llama_state_save_file(a.ptr, path, toks, len(PROMPT))
        assert a.decode_seq([5], start=len(PROMPT)) == 0
        want = a.logits(-1)
    with _ctx(model) as b:
        out = (L.llama_token * 16)()
        n = ctypes.c_size_t(0)
        assert L.llama_state_load_file(b.ptr, path, out, 16, ctypes.byref(n))
        assert list(out[:n.value]) == PROMPT
        assert b.decode_seq([5], start=len(PROMPT)) == 0
        assert np.array_equal(b.logits(-1), want)
        with LogCapture() as log:
            assert not L.llama_state_load_file(b.ptr, path, out, 4, ctypes.byref(n))
        assert "capacity" in log.text()


def test_sequence_state_into_other_sequence(model, tmp_path):
    with _ctx(model) as a:
        assert a.decode_seq(PROMPT, seq=0, all_logits=False) == 0
        assert a.decode_seq([9, 8, 7], seq=1, all_logits=False) == 0
        n = L.llama_state_seq_get_size(a.ptr, 0)
        buf = (ctypes.c_uint8 * n)()
        assert L.llama_state_seq_get_data(a.ptr, buf, n, 0) == n
        path = str(tmp_path / "seq.bin").encode()
        toks = (L.llama_token * len(PROMPT))(*PROMPT)
        assert L.llama_state_seq_save_file(a.ptr, path, 0, toks, len(PROMPT)) > n
        assert a.decode_seq([42], start=len(PROMPT), seq=0) == 0
        want = a.logits(-1)
    with _ctx(model) as b:
        assert b.decode_seq([3, 3], seq=1, all_logits=False) == 0     # replaced by the restore
        assert L.llama_state_seq_set_data(b.ptr, buf, n, 1) == n
        assert b.pos_max(1) == len(PROMPT) - 1 and b.pos_max(0) == -1
        assert b.decode_seq([42], start=len(PROMPT), seq=1) == 0
        assert np.array_equal(b.logits(-1), want)
    with _ctx(model) as c:
        out = (L.llama_token * 16)()
        cnt = ctypes.c_size_t(0)
        assert L.llama_state_seq_load_file(c.ptr, path, 0, out, 16, ctypes.byref(cnt)) > 0
        assert list(out[:cnt.value]) == PROMPT
        assert c.decode_seq([42], start=len(PROMPT)) == 0
        assert np.array_equal(c.logits(-1), want)


def test_mismatched_and_damaged_states_are_refused(model):
    with _ctx(model) as a:
        assert a.decode_seq(PROMPT) == 0
        buf, n = _get_state(a)
    with _ctx(model, type_k=L.GGML_TYPE_F32) as b:
        with LogCapture() as log:
            assert L.llama_state_set_data(b.ptr, buf, n) == 0
        assert "type_k" in log.text()
    with _ctx(model) as c:
        assert c.decode_seq([1, 2]) == 0
        with LogCapture() as log:
            assert L.llama_state_set_data(c.ptr, buf, n - 7) == 0
        assert "truncated" in log.text()
        assert c.pos_max(0) == -1          # left empty
        with LogCapture():
            assert c.logits(-1) is None
    with _ctx(model, n_ctx=4) as d:         # too small for the 8 saved cells
        with LogCapture() as log:
            assert L.llama_state_set_data(d.ptr, buf, n) == 0
        assert "free KV cells" in log.text()
