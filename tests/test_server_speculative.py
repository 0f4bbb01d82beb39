"""Speculative decoding in the server's engine (--draft-model PATH | ngram, --draft-n): several
slots speculate in the same step, and the text is the text without a draft, for greedy and
for seeded sampling (reference: the same engine without a draft, and the Llama class for
greedy); /metrics reports the acceptance rate; hybrid models refuse a draft."""
from __future__ import annotations

import pytest

from llama_py._lib import LlamaError
from llama_py.server.engine import Engine, GenRequest, Model, SamplingParams

GREEDY = SamplingParams(temperature=0)
PROMPTS = ["def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
           "The capital of France is", "1, 2, 3, 4, 5, 6, 7, 8,", "Once upon a time"]


@pytest.fixture(scope="module")
def model(smollm2_path):
    m = Model(str(smollm2_path))
    yield m
    m.close()


def _texts(eng, model, n, sampling, seeds=None, together=True):
    """The completions of PROMPTS, submitted at once (together) or one after the other."""
    reqs, out = [], []
    for i, p in enumerate(PROMPTS):
        sp = sampling if seeds is None else SamplingParams(temperature=sampling.temperature, seed=seeds[i])
        reqs.append(eng.submit(GenRequest(model.tokenize(p), max_tokens=n, sampling=sp)))
        if not together:
            out.append(reqs[-1].result(timeout=300)[0])
    return out or [r.result(timeout=300)[0] for r in reqs]


@pytest.fixture(scope="module")
def plain(model):
    """What the engine makes without a draft, requests one after the other on a fresh cache:
    greedy, and sampled with per-request seeds."""
    with Engine(model, n_slots=4, n_ctx=2048) as eng:
        greedy = _texts(eng, model, 24, GREEDY, together=False)
    with Engine(model, n_slots=4, n_ctx=2048) as eng:
        sampled = _texts(eng, model, 24, SamplingParams(temperature=0.9), seeds=[11, 12, 13, 14], together=False)
    return greedy, sampled


@pytest.mark.parametrize("draft", ["model", "ngram"])
def test_speculation_gives_the_text_without_it(model, smollm2_path, plain, draft):
    spec = str(smollm2_path) if draft == "model" else "ngram"
    for i, (sampling, seeds) in enumerate(((GREEDY, None), (SamplingParams(temperature=0.9), [11, 12, 13, 14]))):
        with Engine(model, n_slots=4, n_ctx=2048, draft=spec, n_draft=6) as eng:
            assert _texts(eng, model, 24, sampling, seeds, together=False) == plain[i]
            m = eng.metrics
            assert m.drafted > 0 and 0 < m.draft_accepted <= m.drafted and m.draft_failures == 0


@pytest.mark.parametrize("draft", ["model", "ngram"])
def test_several_streams_speculate_in_one_step(model, smollm2_path, plain, draft):
    """Four requests at once: each slot's drafts ride in the same steps, and each text (greedy,
    and sampled with seeds) is what it is alone without a draft. Exact because each sequence
    keeps its cells in position order (its own KV pages: a rejected draft's cells are refilled
    by the same sequence's next tokens). With the target itself as draft model almost every
    draft is accepted: far fewer steps than tokens."""
    spec = str(smollm2_path) if draft == "model" else "ngram"
    with Engine(model, n_slots=4, n_ctx=2048, draft=spec, n_draft=6) as eng:
        got = _texts(eng, model, 24, GREEDY)
        m = eng.metrics
        if draft == "model":
            assert m.steps <= 24 // 2 + 3, m.steps
            assert m.draft_accepted / m.drafted > 0.5
    assert got == plain[0]
    with Engine(model, n_slots=4, n_ctx=2048, draft=spec, n_draft=6) as eng:
        assert _texts(eng, model, 24, SamplingParams(temperature=0.9), seeds=[11, 12, 13, 14]) == plain[1]


def test_greedy_matches_the_llama_class(model, smollm2_path):
    from llama_py import Llama
    with Engine(model, n_slots=2, n_ctx=1024, draft="ngram", n_draft=8) as eng:
        got = eng.submit(GenRequest(model.tokenize(PROMPTS[0]), max_tokens=32, sampling=GREEDY)).result(timeout=120)
    with Llama(str(smollm2_path), n_ctx=512, flash_attn=True, verbose=False) as llm:
        want = llm.create_completion(PROMPTS[0], max_tokens=32, temperature=0)["choices"][0]["text"]
    assert got[0] == want
    assert got[1].usage["completion_tokens"] == 32


def test_max_tokens_and_stop_inside_a_round(model, plain):
    """A request ending inside a verified round stops there; the slot's cells are the kept
    tokens (a later request reusing the prefix gets the same text)."""
    with Engine(model, n_slots=1, n_ctx=1024, draft="ngram", n_draft=8) as eng:
        short, last = eng.submit(GenRequest(model.tokenize(PROMPTS[0]), max_tokens=5, sampling=GREEDY)).result(60)
        assert last.usage["completion_tokens"] == 5 and plain[0][0].startswith(short)
        assert eng.kv_cells_in_cache() == len(model.tokenize(PROMPTS[0])) + 4
        full = eng.submit(GenRequest(model.tokenize(PROMPTS[0]), max_tokens=24, sampling=GREEDY)).result(60)[0]
        assert full == plain[0][0]
        stop = plain[0][0][8:12]
        cut = eng.submit(GenRequest(model.tokenize(PROMPTS[0]), max_tokens=24, sampling=GREEDY, stop=[stop]))
        assert cut.result(60)[0] == plain[0][0][:plain[0][0].index(stop)]


def test_metrics_report_the_acceptance_rate(model):
    from llama_py.server.metrics import ServerMetrics, render
    with Engine(model, n_slots=2, n_ctx=1024, draft="ngram") as eng:
        eng.submit(GenRequest(model.tokenize(PROMPTS[0]), max_tokens=16, sampling=GREEDY)).result(60)
        text = render(ServerMetrics(), {"smol": eng})
        m = eng.metrics
    assert f'llama_py_draft_tokens_total{{model="smol"}} {m.drafted}' in text
    assert f'llama_py_draft_tokens_accepted_total{{model="smol"}} {m.draft_accepted}' in text
    assert f'llama_py_draft_acceptance_rate{{model="smol"}} {m.draft_accepted / m.drafted:.6g}' in text


def test_bad_drafts_refused(model, smollm2_path, vocab_dir, tmp_path):
    from llama_py.server.speculate import vocab_mismatch
    with pytest.raises(ValueError, match="n_draft"):
        Engine(model, n_slots=1, n_ctx=256, draft="ngram", n_draft=0)
    with pytest.raises(LlamaError, match="failed to load"):
        Engine(model, n_slots=1, n_ctx=256, draft=str(tmp_path / "missing.gguf"))
    other = Model(str(vocab_dir / "llama-spm.gguf"), vocab_only=True)
    try:
        assert "vocabulary" in vocab_mismatch(other.vocab, model.vocab)
        assert vocab_mismatch(model.vocab, model.vocab) is None
    finally:
        other.close()


def test_cli_arguments():
    from llama_py.server.cli import _parser
    a = _parser().parse_args(["-md", "d.gguf", "--draft-max", "12"])
    assert (a.draft_model, a.draft_n) == ("d.gguf", 12)
    a = _parser().parse_args(["--draft-model", "ngram"])
    assert (a.draft_model, a.draft_n) == ("ngram", 8)


def test_lookup_draft_against_a_plain_search():
    import numpy as np
    from llama_py.llama_speculative import LlamaPromptLookupDecoding
    from llama_py.server.speculate import lookup_draft
    rng = np.random.default_rng(0)
    for _ in range(300):
        ids = rng.integers(0, 5, size=int(rng.integers(1, 40))).astype(np.int32)
        want = LlamaPromptLookupDecoding.find_candidate_pred_tokens(ids, 3, 6).tolist()
        assert lookup_draft(ids, 3, 6) == want, ids


def test_hybrid_models_refuse_a_draft(tmp_path_factory, lib_path):
    pytest.importorskip("transformers")
    import test_qwen35 as Q
    tiny = Q._build(tmp_path_factory.mktemp("qwen35-spec"), moe=False)
    m = Model(str(tiny.gguf))
    try:
        with pytest.raises(ValueError, match="recurrent state"):
            Engine(m, n_slots=1, n_ctx=256, draft="ngram")
    finally:
        m.close()
