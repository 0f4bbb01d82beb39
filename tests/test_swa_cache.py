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


def _run_one(m, toks, n_prompt, swa_full):
    """Logits of every position: the prompt in one decode (several ubatches), then one by one."""
    with Ctx(m, **_params(swa_full)) as c:
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
