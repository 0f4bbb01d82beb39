"""The serving engine alone (no HTTP): continuous batching, cancellation, prefix reuse, KV
bookkeeping against the C cache's own, and several contexts on one model from several
threads giving what they give one at a time. Reference for greedy text: the Llama class."""
from __future__ import annotations

import threading
import time

import pytest

from llama_py.server.engine import ContextOverflow, Engine, GenRequest, Model, QueueFull, SamplingParams

GREEDY = SamplingParams(temperature=0)
PROMPTS = ["The capital of France is", "Once upon a time", "1, 2, 3, 4,", "def fibonacci(n):",
           "The quick brown fox", "Water boils at"]


@pytest.fixture(scope="module")
def model(smollm2_path):
    m = Model(str(smollm2_path))
    yield m
    m.close()


def _run(engine, model, prompt, n=16, sampling=GREEDY, **kw):
    req = engine.submit(GenRequest(model.tokenize(prompt), max_tokens=n, sampling=sampling, **kw))
    return req.result(timeout=120)


def test_single_request_matches_llama_class(model, smollm2_path):
    from llama_py import Llama
    # flash attention on in both (the engine's contexts use llama.cpp's default)
    with Engine(model, n_slots=2, n_ctx=1024) as eng, Llama(str(smollm2_path), n_ctx=512, flash_attn=True) as llm:
        for p in PROMPTS[:3]:
            text, last = _run(eng, model, p, 12)
            ref = llm.create_completion(p, max_tokens=12, temperature=0)["choices"][0]["text"]
            llm.reset()
            assert text == ref
            assert last.finish_reason == "length" and last.usage["completion_tokens"] == 12


def test_continuous_batching_one_decode_for_all_slots(model):
    with Engine(model, n_slots=4, n_ctx=2048) as eng:
        reqs = [eng.submit(GenRequest(model.tokenize(p), max_tokens=20, sampling=GREEDY)) for p in PROMPTS[:4]]
        outs = [r.result(timeout=120) for r in reqs]
        assert all(last.usage["completion_tokens"] == 20 for _, last in outs)
        # 4 x 20 tokens: at most a few prompt steps + 20 generation steps, not 80
        assert eng.metrics.steps <= 24
        # a request arriving while others generate joins the running batch
        long = eng.submit(GenRequest(model.tokenize(PROMPTS[4]), max_tokens=60, sampling=GREEDY))
        while eng.metrics.generated < 80 + 5:
            time.sleep(0.005)
        short = eng.submit(GenRequest(model.tokenize(PROMPTS[5]), max_tokens=5, sampling=GREEDY))
        short.result(timeout=60)
        assert eng.stats()["slots_busy"] == 1  # the long one is still running
        long.result(timeout=60)


def test_notify_once_per_step_before_the_decode(model):
    """GenRequest.notify: called once per step for every request that step fed (one call for a
    callable shared by several requests), before the next llama_decode, and before the engine
    goes idle: no event is left behind a last notify."""
    log = []  # ("ev", kind) and ("notify",) in the order the scheduler thread made them
    shared = lambda: log.append(("notify",))  # noqa: E731
    with Engine(model, n_slots=2, n_ctx=1024) as eng:
        reqs = [eng.submit(GenRequest(model.tokenize(p), max_tokens=6, sampling=GREEDY,
                                      sink=lambda ev: log.append(("ev", ev.kind)), notify=shared))
                for p in PROMPTS[:2]]
        assert eng.wait_idle(60)
    kinds = [e for e in log if e[0] == "ev"]
    assert len(kinds) == 2 * 6 + 2 and sum(1 for e in kinds if e[1] == "done") == 2
    assert log[-1] == ("notify",)  # nothing left undelivered
    # both requests decode in the same steps: their events share one notify per step
    runs, n = [], 0
    for e in log:
        if e[0] == "ev":
            n += 1
        else:
            runs.append(n)
            n = 0
    assert all(k > 0 for k in runs)  # never a notify without an event before it
    assert len(runs) < len(kinds) and max(runs) >= 2


def test_cancel_frees_the_slot_at_once(model):
    with Engine(model, n_slots=1, n_ctx=1024) as eng:
        req = eng.submit(GenRequest(model.tokenize("Tell a long story:"), max_tokens=900, sampling=GREEDY))
        evs = req.events(timeout=60)
        for _ in range(3):
            next(evs)
        steps = eng.metrics.steps
        req.cancel()
        last = [ev for ev in evs][-1]
        assert last.kind == "done" and last.finish_reason == "cancelled"
        assert eng.metrics.steps - steps <= 2
        assert eng.stats()["slots_busy"] == 0
        # the slot serves the next request
        assert _run(eng, model, "Hi", 3)[1].usage["completion_tokens"] == 3


def test_prefix_reuse_and_kv_bookkeeping(model):
    with Engine(model, n_slots=2, n_ctx=1024) as eng:
        p = "The history of the Roman roads is long and complicated, and it begins"
        a, _ = _run(eng, model, p, 8)
        n = len(model.tokenize(p))
        b, _ = _run(eng, model, p, 8)
        assert eng.metrics.prefix_hits == 1 and eng.metrics.prefix_tokens_reused == n - 1
        assert a == b
        assert eng.kv_cells_in_cache() == eng.stats()["kv_cells_used"] > 0
        eng.clear_cache()
        assert eng.kv_cells_in_cache() == 0 == eng.stats()["kv_cells_used"]


def test_limits_and_errors_never_stop_the_engine(model):
    with Engine(model, n_slots=2, n_ctx=256, max_queue=1) as eng:
        with pytest.raises(ContextOverflow, match="128"):
            eng.submit(GenRequest(list(range(1, 200)), max_tokens=4))
        with pytest.raises(ContextOverflow, match="128"):
            eng.submit(GenRequest([1, 2, 3], max_tokens=200))
        with pytest.raises(ValueError, match="out of range"):
            eng.submit(GenRequest([1, 10 ** 7], max_tokens=2))
        running = []
        for i in range(2):
            running.append(eng.submit(GenRequest(model.tokenize(f"Story {i}"), max_tokens=60)))
            while eng.stats()["queue_depth"]:
                time.sleep(0.001)
        running.append(eng.submit(GenRequest(model.tokenize("Waiting"), max_tokens=30)))  # both slots busy: queued
        with pytest.raises(QueueFull, match="queue limit 1"):
            eng.submit(GenRequest(model.tokenize("One too many"), max_tokens=30))
        for r in running:
            r.cancel()
        assert eng.wait_idle(30)
        assert _run(eng, model, "Hi", 2)[1].usage["completion_tokens"] == 2


def test_seeded_sampling_is_per_request(model):
    sp = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=1234)
    with Engine(model, n_slots=3, n_ctx=1536) as eng:
        alone, _ = _run(eng, model, "My favourite colour is", 12, sp)
        # the same request, seeded alike, next to two other sampled requests
        reqs = [eng.submit(GenRequest(model.tokenize(p), max_tokens=12, sampling=s)) for p, s in
                [("Hello there", SamplingParams(temperature=1.0, seed=9)), ("My favourite colour is", sp),
                 ("Numbers:", SamplingParams(temperature=1.0, seed=5))]]
        outs = [r.result(timeout=60)[0] for r in reqs]
        assert outs[1] == alone


def test_several_contexts_on_one_model_from_threads(model):
    """Deployments may run several engines on one model: run the same greedy requests on three
    engines at once from three threads, and on one engine one request at a time."""
    prompts = PROMPTS[:4]
    with Engine(model, n_slots=1, n_ctx=512) as eng:
        expected = [_run(eng, model, p, 16)[0] for p in prompts]
    engines = [Engine(model, n_slots=1, n_ctx=512) for _ in range(3)]
    results = [[None] * len(prompts) for _ in engines]
    errors = []

    def worker(k):
        try:
            for i, p in enumerate(prompts):
                results[k][i] = _run(engines[k], model, p, 16)[0]
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(engines))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    for e in engines:
        e.close()
    assert not errors
    for r in results:
        assert r == expected


def test_a_failing_step_costs_its_requests_not_the_engine(model, monkeypatch):
    with Engine(model, n_slots=2, n_ctx=512) as eng:
        real = model.piece
        calls = {"n": 0}

        def flaky(tok):
            calls["n"] += 1
            if calls["n"] == 3:
                raise RuntimeError("injected fault")
            return real(tok)
        monkeypatch.setattr(model, "piece", flaky)
        text, last = _run(eng, model, "Hello there", 8)
        assert last.kind == "error" and "injected fault" in last.message
        assert eng.kv_cells_in_cache() == eng.stats()["kv_cells_used"]
        monkeypatch.setattr(model, "piece", real)
        assert _run(eng, model, "Hello there", 4)[1].finish_reason == "length"


def test_identical_prompts_share_cells_instead_of_decoding_twice(model):
    prompt = model.tokenize("You are a helpful assistant. Answer briefly and politely. " * 3 + "Question one:")
    with Engine(model, n_slots=3, n_ctx=1536) as eng:
        reqs = [eng.submit(GenRequest(list(prompt), max_tokens=4, sampling=GREEDY)) for _ in range(3)]
        outs = [r.result(timeout=120) for r in reqs]
        assert all(last.usage["completion_tokens"] == 4 for _, last in outs)
        m = eng.metrics
        assert m.prefix_shared == 2 and m.prefix_hits == 2
        assert m.prompt_tokens_decoded == len(prompt) + 2  # the others decode only their last prompt token
        # per-sequence bookkeeping still matches the C cache's, and clearing empties it
        assert eng.kv_cells_in_cache() == eng.stats()["kv_cells_used"]
        eng.clear_cache()
        assert eng.kv_cells_in_cache() == 0


def test_a_long_prompt_rides_along_without_stalling_running_streams(model):
    """While a slot generates, a new request's long prompt is read prefill_chunk tokens per step
    in the same llama_decode as the running stream's token: every step still gives the running
    stream its token, and both texts are those each request gets alone (issue #37)."""
    long_prompt = model.tokenize(" ".join(PROMPTS * 12))
    assert len(long_prompt) > 200
    with Engine(model, n_slots=2, n_ctx=2048, prefill_chunk=32) as eng:
        alone_run = _run(eng, model, PROMPTS[0], 40)[0]
        alone_long = eng.submit(GenRequest(long_prompt, max_tokens=4, sampling=GREEDY)).result(timeout=120)[0]
    with Engine(model, n_slots=2, n_ctx=2048, prefill_chunk=32) as eng:
        steps = []
        real = eng.metrics.step
        eng.metrics.step = lambda n, n_gen, dt: (steps.append((n, n_gen)), real(n, n_gen, dt))
        run = eng.submit(GenRequest(model.tokenize(PROMPTS[0]), max_tokens=40, sampling=GREEDY))
        while eng.metrics.generated < 3:
            time.sleep(0.002)
        mark = len(steps)
        late = eng.submit(GenRequest(long_prompt, max_tokens=4, sampling=GREEDY))
        text_run, text_late = run.result(timeout=120)[0], late.result(timeout=120)[0]
    assert text_run == alone_run and text_late == alone_long
    prompt_steps = [(n, g) for n, g in steps[mark:] if n > g]
    # the prompt went in chunks of at most 32 beside the running stream's token, never alone
    assert len(prompt_steps) >= len(long_prompt) // 32
    assert all(n - g <= 32 and g >= 1 for n, g in prompt_steps[:-1])
