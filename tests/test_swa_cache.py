"""The window-sized KV cache of sliding-window layers (llama_context_params.swa_full = false, as
llama-server runs): on tiny random gemma3 / gemma4 models from transformers with a window of 8
and a window cache of 256 cells, sequences run hundreds of positions past it, so cells are reused
many times over. Checked against transformers and against the full-size cache (swa_full = true):

  - one sequence, a prompt in several ubatches then token by token: the same logits;
  - three sequences interleaved in batches: each one's logits;
  - a sequence's state saved from a window cache and restored into a fresh one continues right;
  - llama_memory_seq_rm: a range behind the window goes (true), a cut that would need window
    cells already reused is refused (false, nothing removed); seq_pos_min gives the oldest
    position the window cells hold; Llama(swa_full=False) decodes such a prefix again;
  - KV bytes: the state of a long sequence holds the window cells only.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (test-only dependency, see requirements-test.txt)")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (test-only dependency, see requirements-test.txt)")
pytest.importorskip("gguf")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_arch as T  # noqa: E402
import test_convert as TC  # noqa: E402
from llama_ref import rel_err  # noqa: E402
from model_util import Ctx, LogCapture, Model  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402

N_UBATCH = 16   # window cells: PAD(8 * n_seq + 16, 256) = 256 of n_ctx 512 / 1024


@pytest.fixture(scope="module", params=["gemma3", "gemma4"])
def tiny(request, tmp_path_factory, lib_path):
    if request.param == "gemma4" and not hasattr(transformers, "Gemma4ForCausalLM"):
        pytest.skip("this transformers has no Gemma4ForCausalLM")
    root = tmp_path_factory.mktemp(request.param)
    return T._build(root, request.param, TC._train_spm(root), seed=25)


def _toks(tiny, n: int, seed: int):
    rng = np.random.default_rng(seed)
    return [int(t) for t in rng.integers(3, tiny.model.config.vocab_size, size=n)]


def _params(swa_full: bool, n_ctx: int = 512, n_seq_max: int = 1, n_batch: int = 512):
    return dict(n_ctx=n_ctx, n_batch=n_batch, n_ubatch=N_UBATCH, n_seq_max=n_seq_max, type_k=0, type_v=0,
                swa_full=swa_full)


def _run_one(m, toks, n_prompt, swa_full, **over):
    """Logits of every position: the prompt in one decode (several ubatches), then one by one."""
    with Ctx(m, **dict(_params(swa_full), **over)) as c:
        assert c.decode_seq(toks[:n_prompt]) == 0
        rows = [c.logits(i) for i in range(n_prompt)]
        for i in range(n_prompt, len(toks)):
            assert c.decode_seq([toks[i]], start=i) == 0
            rows.append(c.logits(0))
        return np.stack(rows), c.pos_min(0), c.pos_max(0)


def test_window_cache_matches_full_and_transformers(tiny):
    toks = _toks(tiny, 480, 1)
    with Model(tiny.gguf) as m:
        with LogCapture() as log:
            win, pmin, pmax = _run_one(m, toks, 100, False)
        assert "keep 256 cells" in log.text(), log.text()
        full, pmin_full, _ = _run_one(m, toks, 100, True)
    assert pmax == len(toks) - 1 and pmin_full == 0
    assert pmin >= len(toks) - 256, pmin   # the window cells hold the last positions only
    ref = T.hf_logits(tiny.model, toks)
    e_full, e_ref = rel_err(win, full), rel_err(win, ref)
    print(f"\n{tiny.arch}: window cache vs full {e_full:.2e}, vs transformers {e_ref:.2e}", end="")
    assert e_full < 1e-5 and e_ref < 1e-3, (e_full, e_ref)


def test_sequences_interleaved_in_batches(tiny):
    seqs = [_toks(tiny, n, 10 + s) for s, n in enumerate((300, 260, 220))]
    rows, where = [], []
    for i in range(max(map(len, seqs))):
        for s, toks in enumerate(seqs):
            if i < len(toks):
                where.append((s, i))
                rows.append((toks[i], i, [s], True))
    got = [np.zeros((len(t), tiny.model.config.vocab_size)) for t in seqs]
    with Model(tiny.gguf) as m, Ctx(m, **_params(False, n_ctx=1024, n_seq_max=3, n_batch=48)) as c:
        for b in range(0, len(rows), 48):   # 16 batches of 3 ubatches: 780 positions over 256 window cells
            assert c.decode_rows(rows[b:b + 48]) == 0
            for r, (s, i) in enumerate(where[b:b + 48]):
                got[s][i] = c.logits(r)
        assert all(c.pos_min(s) > 0 for s in range(3))
    err = max(rel_err(got[s], T.hf_logits(tiny.model, seqs[s])) for s in range(3))
    print(f"\n{tiny.arch}: three sequences through the window cache: {err:.2e}", end="")
    assert err < 1e-3, err


def _seq_state(c, s=0):
    size = L.llama_state_seq_get_size(c.ptr, s)
    buf = (ctypes.c_uint8 * size)()
    assert L.llama_state_seq_get_data(c.ptr, buf, size, s) == size
    return buf, size


def test_state_save_restore_with_window_cache(tiny):
    toks = _toks(tiny, 340, 3)
    n0 = 300
    ref = T.hf_logits(tiny.model, toks)
    with Model(tiny.gguf) as m:
        with Ctx(m, **_params(True)) as c:
            assert c.decode_seq(toks[:n0], all_logits=False) == 0
            _, size_full = _seq_state(c)
        with Ctx(m, **_params(False)) as c:
            assert c.decode_seq(toks[:n0], all_logits=False) == 0
            buf, size = _seq_state(c)
            whole = (ctypes.c_uint8 * L.llama_state_get_size(c.ptr))()
            assert L.llama_state_get_data(c.ptr, whole, len(whole)) == len(whole)
        # the window cells hold the sliding layers' rows of at most 256 positions, not 300
        assert size < size_full, (size, size_full)
        with Ctx(m, **_params(True)) as c:   # another cache layout: refused, said why
            with LogCapture() as log:
                assert L.llama_state_seq_set_data(c.ptr, buf, size, 0) == 0
            assert "window cache" in log.text()
        for whole_state in (False, True):
            with Ctx(m, **_params(False)) as c:
                if whole_state:
                    assert L.llama_state_set_data(c.ptr, whole, len(whole)) == len(whole)
                else:
                    assert L.llama_state_seq_set_data(c.ptr, buf, size, 0) == size
                rows = []
                for i in range(n0, len(toks)):
                    assert c.decode_seq([toks[i]], start=i) == 0
                    rows.append(c.logits(0))
            err = rel_err(np.stack(rows), ref[n0:])
            print(f"\n{tiny.arch}: window cache restored ({'whole' if whole_state else 'sequence'}), "
                  f"then token by token: {err:.2e}", end="")
            assert err < 1e-3, err


def test_seq_rm_and_pos_min(tiny):
    toks = _toks(tiny, 400, 4)
    n = 300
    ref = T.hf_logits(tiny.model, toks)
    with Model(tiny.gguf) as m, Ctx(m, **_params(False)) as c:
        assert c.decode_seq(toks[:n], all_logits=False) == 0
        lo = c.pos_min(0)
        assert 0 < lo <= n - 8 and c.pos_max(0) == n - 1
        # a cut needing positions the window cells let go: refused, nothing removed
        with LogCapture() as log:
            assert not L.llama_memory_seq_rm(c.mem, 0, lo + 3, -1)
            assert not L.llama_memory_seq_rm(c.mem, -1, 50, -1)
        assert "without the window cells" in log.text()
        assert c.pos_min(0) == lo and c.pos_max(0) == n - 1
        # a tail whose window is held goes, and decoding goes on from there
        assert L.llama_memory_seq_rm(c.mem, 0, n - 30, -1)
        assert c.pos_max(0) == n - 31
        rows = []
        for i in range(n - 30, n + 20):
            assert c.decode_seq([toks[i]], start=i) == 0
            rows.append(c.logits(0))
        err = rel_err(np.stack(rows), ref[n - 30:n + 20])
        assert err < 1e-3, err
        # a range behind the window goes too (from the full layers' cells as well)
        lo = c.pos_min(0)
        assert L.llama_memory_seq_rm(c.mem, 0, 0, lo + 20)
        assert c.pos_min(0) == lo + 20 and c.pos_max(0) == n + 19
        assert L.llama_memory_seq_rm(c.mem, 0, -1, -1)
        assert c.pos_max(0) == -1 and c.pos_min(0) == -1


def test_llama_decodes_a_prefix_the_window_left_again(tiny):
    """Llama(swa_full=False) given a prompt sharing a long prefix with the last one, but diverging
    behind the window cells: the context is cut there, which the cache refuses, so the prompt
    is decoded again from the start; the logits are a fresh context's."""
    from llama_py import Llama
    a = _toks(tiny, 420, 5)
    b = a[:100] + _toks(tiny, 20, 6)
    kw = dict(n_ctx=512, n_batch=64, n_ubatch=N_UBATCH, logits_all=True, verbose=False)
    with Llama(str(tiny.gguf), swa_full=False, **kw) as llm:
        llm.eval(a)
        assert L.llama_memory_seq_pos_min(L.llama_get_memory(llm._ctx), 0) > 100
        llm.n_tokens = 100   # a shared prefix of 100 tokens: its window is gone
        assert llm.n_tokens == 0
        llm.eval(b)
        got = np.array(llm.scores[:len(b)])
    with Llama(str(tiny.gguf), swa_full=True, **kw) as llm:
        llm.eval(a)
        llm.n_tokens = 100   # the full cache keeps it
        assert llm.n_tokens == 100
        llm.eval(b[100:])
        want = np.array(llm.scores[:len(b)])
    assert rel_err(got, want) < 1e-5


def test_server_engine_reuses_prefixes_the_window_still_holds(tiny):
    """The server's engine runs the window cache by default (as llama-server): a prompt whose
    shared prefix ends behind the window cells is decoded again, one whose prefix the window
    still holds reuses it; both generate what the full-size cache does."""
    from llama_py.server.engine import Engine, GenRequest, Model as EModel, SamplingParams
    a = _toks(tiny, 400, 7)
    b = a[:100] + _toks(tiny, 12, 8)
    prompts = [a, b, b + _toks(tiny, 5, 9)]   # the third continues b (its own tokens differ from b's output)
    outs = {}
    m = EModel(str(tiny.gguf))
    try:
        for swa_full in (False, True):
            with LogCapture() as log, Engine(m, n_slots=1, n_ctx=1024, n_batch=16, swa_full=swa_full) as eng:
                got = []
                for p in prompts:
                    req = eng.submit(GenRequest(list(p), max_tokens=6, sampling=SamplingParams(temperature=0)))
                    got.append(req.result(timeout=120)[0])
                outs[swa_full] = (got, eng.metrics.prefix_tokens_reused)
            assert ("keep 256 cells" in log.text()) != swa_full
    finally:
        m.close()
    assert outs[False][0] == outs[True][0]
    # full cache: 100 (b after a) + len(b) (the third after b); window cache: the second decoded again
    assert outs[True][1] == 100 + len(b) and outs[False][1] == len(b), outs


def _kv_bytes_expected(cfg, n_ctx: int, n_win: int) -> int:
    """K and V bytes (F16) from the transformers config: the layers owning KV, each with its own
    head size and KV heads; the sliding ones n_win cells (n_ctx without the window cache)."""
    c = cfg.to_dict()   # the raw values (gemma4's per-layer fields are not read through the config)
    own = c["num_hidden_layers"] - (c.get("num_kv_shared_layers") or 0)
    total = 0
    for il in range(own):
        full = c["layer_types"][il] == "full_attention"
        hd = (c.get("global_head_dim") or c["head_dim"]) if full else c["head_dim"]
        n_kv = (c.get("num_global_key_value_heads") or c["num_key_value_heads"]) if full else c["num_key_value_heads"]
        total += 2 * 2 * hd * n_kv * (n_ctx if full else n_win)
    return total


def test_kv_memory_of_the_window_cache(tiny):
    """The cache a 4096-token context allocates, as the context reports it, is the owning layers'
    K/V: full layers for 4096 cells, sliding layers for 256 window cells (4096 with swa_full)."""
    import re
    got = {}
    with Model(tiny.gguf) as m:
        for swa_full in (True, False):
            with LogCapture() as log, Ctx(m, **dict(_params(swa_full, n_ctx=4096), type_k=1, type_v=1)):
                pass
            got[swa_full] = float(re.search(r"KV cache ([0-9.]+) MiB", log.text()).group(1))
    cfg = tiny.model.config
    for swa_full, n_win in ((True, 4096), (False, 256)):
        assert abs(got[swa_full] - _kv_bytes_expected(cfg, 4096, n_win) / 2**20) < 0.01, (swa_full, got)
    print(f"\n{tiny.arch}: KV for 4096 cells {got[True]:.2f} MiB, with the window cache {got[False]:.2f} MiB", end="")



@pytest.mark.parametrize("kind", ["no flash attention", "Q8_0 cache"])
def test_window_cache_other_attention_paths(tiny, kind):
    """The same with attention by mul_mat + softmax, and with a quantized cache (dequantized rows of
    the window cells): window cache and full cache agree."""
    if kind == "Q8_0 cache" and tiny.arch == "gemma4":
        pytest.skip("the tiny gemma4's sliding heads are 16 wide: a Q8_0 cache needs multiples of 32")
    over = dict(flash_attn_type=0) if kind == "no flash attention" else dict(type_k=8, type_v=8, flash_attn_type=1)
    toks = _toks(tiny, 360, 2)
    with Model(tiny.gguf) as m:
        win = _run_one(m, toks, 100, False, **over)[0]
        full = _run_one(m, toks, 100, True, **over)[0]
    err = rel_err(win, full)
    print(f"\n{tiny.arch}, {kind}: window cache vs full {err:.2e}", end="")
    assert err < 1e-4, err


def test_context_shift_with_the_window_cache(tiny):
    """llama-server's context shift: [10, 110) dropped (behind the window), the rest moved back by
    100 (the window cells' keys re-rotated too), then more tokens: as with the full-size cache."""
    toks = _toks(tiny, 420, 11)
    outs = {}
    with Model(tiny.gguf) as m:
        for swa_full in (False, True):
            with Ctx(m, **_params(swa_full)) as c:
                assert c.decode_seq(toks[:400], all_logits=False) == 0
                assert L.llama_memory_seq_rm(c.mem, 0, 10, 110)
                L.llama_memory_seq_add(c.mem, 0, 110, -1, -100)
                assert c.pos_max(0) == 299
                assert c.decode_seq(toks[400:], start=300) == 0
                outs[swa_full] = c.all_logits(20)
    err = rel_err(outs[False], outs[True])
    print(f"\n{tiny.arch}: context shift, window cache vs full {err:.2e}", end="")
    assert err < 1e-5, err
