"""The OpenAI-compatible server through the real `openai` client (sync, async, streaming) and
httpx for malformed bodies, on SmolLM2. References: the openai package's own parsing of every
response, prometheus_client's parser for /metrics, json for bodies, and the Llama class for
greedy text generated one request at a time."""
from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import time

import pytest

from server_util import need_server_packages, running_server

need_server_packages()
import httpx  # noqa: E402
import openai  # noqa: E402

N_SLOTS = 4
N_CTX = 4096  # 1024 cells per slot


@pytest.fixture(scope="module")
def served(smollm2_path):
    from llama_py.server.app import ModelEntry
    entry = ModelEntry.load("smollm2", str(smollm2_path), n_slots=N_SLOTS, n_ctx=N_CTX, max_queue=64)
    with running_server([entry]) as (url, app):
        yield url, app.llama, entry


@pytest.fixture()
def client(served):
    return openai.OpenAI(base_url=served[0] + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def llama_ref(smollm2_path):
    from llama_py import Llama
    # flash attention on, as the server's contexts have it (llama.cpp's default; Llama's, like
    # llama-cpp-python's, is off: another kernel, so another greedy text at a close call)
    with Llama(str(smollm2_path), n_ctx=1024, verbose=False, flash_attn=True) as llm:
        yield llm


def _metrics(url):
    from prometheus_client.parser import text_string_to_metric_families
    text = httpx.get(url + "/metrics").text
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _metric(m, name, **labels):
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


# ---- completions ----

def test_completion_greedy_matches_llama_class(client, llama_ref):
    prompt = "The capital of France is"
    r = client.completions.create(model="smollm2", prompt=prompt, max_tokens=12, temperature=0)
    ref = llama_ref.create_completion(prompt, max_tokens=12, temperature=0)
    llama_ref.reset()
    assert r.object == "text_completion"
    assert r.choices[0].text == ref["choices"][0]["text"]
    assert r.choices[0].finish_reason == "length"
    assert r.usage.prompt_tokens == len(llama_ref.tokenize(prompt, add_bos=True, special=True))
    assert r.usage.completion_tokens == 12


def test_completion_stream_equals_non_stream(client):
    kw = dict(model="smollm2", prompt="Once upon a time", max_tokens=16, temperature=0)
    whole = client.completions.create(**kw).choices[0].text
    parts, finish = [], None
    for ch in client.completions.create(stream=True, **kw):
        parts.append(ch.choices[0].text)
        finish = ch.choices[0].finish_reason or finish
    assert "".join(parts) == whole
    assert finish == "length"


def test_sse_ends_with_done(served):
    body = {"model": "smollm2", "prompt": "Hi", "max_tokens": 4, "stream": True}
    with httpx.stream("POST", served[0] + "/v1/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [ln for ln in r.iter_lines() if ln]
    assert lines[-1] == "data: [DONE]"
    for ln in lines[:-1]:
        assert ln.startswith("data: ")
        json.loads(ln[6:])


def test_stop_string_cuts_the_text(client):
    kw = dict(model="smollm2", prompt="1, 2, 3, 4,", max_tokens=24, temperature=0)
    free = client.completions.create(**kw).choices[0].text
    assert " 7" in free
    r = client.completions.create(stop=[" 7"], **kw)
    assert r.choices[0].text == free[:free.index(" 7")]
    assert r.choices[0].finish_reason == "stop"


def test_logprobs_are_a_distribution(client):
    r = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=5,
                                  temperature=0, logprobs=5)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 5
    assert "".join(lp.tokens) == r.choices[0].text
    for tok, l, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert l <= 0
        vals = list(top.values())
        assert vals == sorted(vals, reverse=True)
        assert sum(math.exp(v) for v in vals) <= 1 + 1e-6
        assert math.isclose(max(vals), l, abs_tol=1e-6)  # greedy: the chosen token is the most likely


def test_seed_reproduces_sampling(client):
    kw = dict(model="smollm2", prompt="My favourite animal is", max_tokens=16, temperature=1.0, top_p=1.0,
              extra_body={"top_k": 0, "min_p": 0.0})
    a = client.completions.create(seed=42, **kw).choices[0].text
    b = client.completions.create(seed=42, **kw).choices[0].text
    others = {client.completions.create(seed=s, **kw).choices[0].text for s in (1, 2, 3)}
    assert a == b
    assert len(others | {a}) > 1


def test_n_choices_and_prompt_lists(client, served):
    r = client.completions.create(model="smollm2", prompt=["Hello", "Goodbye"], max_tokens=3, n=2, seed=7,
                                  extra_body={"ignore_eos": True})
    assert sorted(c.index for c in r.choices) == [0, 1, 2, 3]
    assert all(c.finish_reason == "length" for c in r.choices)
    assert r.usage.completion_tokens == 12
    count = [httpx.post(served[0] + "/extras/tokenize/count", json={"input": p}).json()["count"]
             for p in ("Hello", "Goodbye")]
    assert r.usage.prompt_tokens == sum(count)


def test_stream_with_n_choices(client):
    texts, finishes = {}, {}
    usage = None
    for ch in client.completions.create(model="smollm2", prompt="Colours:", max_tokens=5, n=2, seed=3,
                                        stream=True, stream_options={"include_usage": True}):
        usage = ch.usage or usage
        for c in ch.choices:
            texts[c.index] = texts.get(c.index, "") + c.text
            if c.finish_reason:
                finishes[c.index] = c.finish_reason
    assert sorted(texts) == [0, 1] and finishes == {0: "length", 1: "length"}
    assert usage.completion_tokens == 10


def test_echo_and_token_prompt(client, served):
    toks = httpx.post(served[0] + "/extras/tokenize", json={"input": "The sky is"}).json()["tokens"]
    r = client.completions.create(model="smollm2", prompt=toks, max_tokens=3, temperature=0, echo=True)
    assert r.choices[0].text.startswith("The sky is")


# ---- chat ----

def test_chat_and_stream(client):
    msgs = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}]
    r = client.chat.completions.create(model="smollm2", messages=msgs, max_tokens=20, temperature=0)
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    text = r.choices[0].message.content
    assert text
    parts, usage, finish = [], None, None
    for ch in client.chat.completions.create(model="smollm2", messages=msgs, max_tokens=20, temperature=0,
                                             stream=True, stream_options={"include_usage": True}):
        if ch.usage is not None:
            usage = ch.usage
        for c in ch.choices:
            parts.append(c.delta.content or "")
            finish = c.finish_reason or finish
    assert "".join(parts) == text
    assert usage.completion_tokens == r.usage.completion_tokens
    assert finish == r.choices[0].finish_reason


def test_chat_logprobs(client):
    r = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                                       temperature=0, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert "".join(c.token for c in content) == r.choices[0].message.content
    for c in content:
        assert len(c.top_logprobs) == 3
        assert bytes(c.bytes).decode() == c.token


def test_async_streaming_concurrent(served):
    async def main():
        ac = openai.AsyncOpenAI(base_url=served[0] + "/v1", api_key="unused", max_retries=0, timeout=120)

        async def one(i):
            n, text = 0, ""
            stream = await ac.chat.completions.create(model="smollm2", max_tokens=12, temperature=0.7, seed=i,
                                                      messages=[{"role": "user", "content": f"Count to {i + 3}"}],
                                                      stream=True)
            async for ch in stream:
                for c in ch.choices:
                    text += c.delta.content or ""
                    n += 1
            return text
        out = await asyncio.gather(*[one(i) for i in range(8)])
        await ac.close()
        return out
    before = _metrics(served[0])
    texts = asyncio.run(main())
    assert all(texts)
    after = _metrics(served[0])
    steps = _metric(after, "llama_py_decode_steps_total", model="smollm2") - \
        _metric(before, "llama_py_decode_steps_total", model="smollm2")
    gen = _metric(after, "llama_py_generated_tokens_total", model="smollm2") - \
        _metric(before, "llama_py_generated_tokens_total", model="smollm2")
    assert steps < gen  # continuous batching: several slots' tokens per llama_decode


# ---- embeddings, models, extras, health, metrics ----

def test_embeddings(client, served):
    entry = served[2]
    r = client.embeddings.create(model="smollm2", input=["hello world", "the cat sat", "hello world"])
    vecs = [d.embedding for d in r.data]
    assert [d.index for d in r.data] == [0, 1, 2]
    assert all(len(v) == entry.model.n_embd for v in vecs)
    for v in vecs:
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5)
    assert max(abs(a - b) for a, b in zip(vecs[0], vecs[2])) < 1e-5
    single = client.embeddings.create(model="smollm2", input="the cat sat").data[0].embedding
    assert max(abs(a - b) for a, b in zip(single, vecs[1])) < 1e-4
    b64 = client.embeddings.create(model="smollm2", input="the cat sat", encoding_format="base64").data[0].embedding
    import base64
    import numpy as np
    dec = np.frombuffer(base64.b64decode(b64), dtype="<f4")
    assert np.abs(dec - np.array(single)).max() < 1e-6


def test_models_health_extras(client, served, llama_ref):
    url = served[0]
    assert [m.id for m in client.models.list()] == ["smollm2"]
    h = httpx.get(url + "/health").json()
    assert h["status"] == "ok"
    text = "Hello, world! <|im_end|>"
    toks = httpx.post(url + "/extras/tokenize", json={"input": text}).json()["tokens"]
    assert toks == llama_ref.tokenize(text, add_bos=True, special=True)
    assert httpx.post(url + "/extras/tokenize/count", json={"input": text}).json()["count"] == len(toks)
    assert httpx.post(url + "/extras/detokenize", json={"tokens": toks}).json()["text"] == \
        llama_ref.detokenize(toks).decode()


def test_metrics_prometheus_and_prefix_reuse(client, served):
    url = served[0]
    prompt = "A long shared prefix about the history of the Roman empire and its roads: " * 3
    client.completions.create(model="smollm2", prompt=prompt, max_tokens=2, temperature=0)
    before = _metrics(url)
    client.completions.create(model="smollm2", prompt=prompt + "Rome", max_tokens=2, temperature=0)
    after = _metrics(url)
    assert _metric(after, "llama_py_prefix_cache_hits_total", model="smollm2") == \
        _metric(before, "llama_py_prefix_cache_hits_total", model="smollm2") + 1
    reused = _metric(after, "llama_py_prefix_cache_reused_tokens_total", model="smollm2") - \
        _metric(before, "llama_py_prefix_cache_reused_tokens_total", model="smollm2")
    assert reused >= len(prompt) // 8  # most of the prefix came from the cache
    assert _metric(after, "llama_py_http_requests_total", endpoint="/v1/completions", status="200") >= 2
    assert _metric(after, "llama_py_slots_total", model="smollm2") == N_SLOTS
    assert _metric(after, "llama_py_kv_cells_total", model="smollm2") == N_CTX
    assert _metric(after, "llama_py_time_to_first_token_seconds_count", model="smollm2") >= 2
    assert 0 < _metric(after, "llama_py_prefix_cache_hit_rate", model="smollm2") <= 1
    # the engine's own count of cells agrees with the C cache's
    assert served[2].engine.kv_cells_in_cache() == served[2].engine.stats()["kv_cells_used"]


# ---- errors ----

MALFORMED = [
    (b"{not json", None),
    (b"[1, 2]", None),
    (b"\xff\xfe", None),
    (b'{"prompt": "x", "max_tokens": NaN}', None),
    (b"[" * 100000, None),
    (b'{"a":' * 50000 + b"1" + b"}" * 50000, None),
    ({"prompt": "x", "max_tokens": -5}, "max_tokens"),
    ({"prompt": "x", "max_tokens": "10"}, "max_tokens"),
    ({"prompt": "x", "max_tokens": True}, "max_tokens"),
    ({"prompt": "x", "temperature": 3}, "temperature"),
    ({"prompt": "x", "temperature": "hot"}, "temperature"),
    ({"prompt": "x", "top_p": 1.5}, "top_p"),
    ({"prompt": "x", "n": 0}, "n"),
    ({"prompt": "x", "n": 1000}, "n"),
    ({"prompt": "x", "stop": 5}, "stop"),
    ({"prompt": "x", "logprobs": 50}, "logprobs"),
    ({"prompt": "x", "seed": "abc"}, "seed"),
    ({"prompt": "x", "stream": "yes"}, "stream"),
    ({"prompt": "x", "logit_bias": {"abc": 1}}, "logit_bias"),
    ({"prompt": "x", "logit_bias": {"1": 1000}}, "logit_bias"),
    ({"prompt": "x", "repeat_penalty": 0}, "repeat_penalty"),
    ({"max_tokens": 3}, "prompt"),
    ({"prompt": {"a": 1}}, "prompt"),
    ({"prompt": [1, 2, 10 ** 9]}, "prompt"),
    ({"prompt": []}, "prompt"),
    ({"prompt": "x", "model": 5}, "model"),
]

CHAT_MALFORMED = [
    ({}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "user"}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3}, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}}, "response_format.type"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": "all"}, "tools"),
]


@pytest.mark.parametrize("body,param", MALFORMED)
def test_malformed_completion_is_400_naming_the_field(served, body, param):
    kw = {"content": body, "headers": {"content-type": "application/json"}} if isinstance(body, bytes) \
        else {"json": body}
    r = httpx.post(served[0] + "/v1/completions", timeout=30, **kw)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param
    if param:
        assert err["message"].startswith(param)


@pytest.mark.parametrize("body,param", CHAT_MALFORMED)
def test_malformed_chat_is_400_naming_the_field(served, body, param):
    r = httpx.post(served[0] + "/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


def test_oversized_body_is_413(served):
    r = httpx.post(served[0] + "/v1/completions", content=b" " * (9 << 20), headers={"content-type": "application/json"},
                   timeout=60)
    assert r.status_code == 413
    assert httpx.get(served[0] + "/health").status_code == 200


def test_malformed_extras(served):
    url = served[0]
    assert httpx.post(url + "/extras/tokenize", json={"input": 3}).json()["error"]["param"] == "input"
    assert httpx.post(url + "/extras/detokenize", json={"tokens": ["a"]}).status_code == 400
    assert httpx.post(url + "/v1/embeddings", json={"input": []}).json()["error"]["param"] == "input"
    # more dimensions than the model's embeddings have (fewer are a Matryoshka truncation)
    r = httpx.post(url + "/v1/embeddings", json={"input": "x", "dimensions": 100000})
    assert r.status_code == 400 and r.json()["error"]["param"] == "dimensions"


def test_context_overflow_is_400_naming_the_limit(client):
    long_prompt = "word " * 1500
    with pytest.raises(openai.BadRequestError) as ei:
        client.completions.create(model="smollm2", prompt=long_prompt, max_tokens=4)
    assert "1024" in str(ei.value) and ei.value.body["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as ei:
        client.completions.create(model="smollm2", prompt="Hello", max_tokens=5000)
    assert "1024" in str(ei.value) and ei.value.body["param"] == "max_tokens"
    # the server is still fine
    assert client.completions.create(model="smollm2", prompt="Hello", max_tokens=2).choices[0].text is not None


def test_run_wakes_the_loop_once_for_events_that_pile_up():
    """Events sunk while the loop is busy cost one call_soon_threadsafe and come out as one
    batch, each exactly once and in order; an event sunk while the loop waits wakes it."""
    import threading
    from llama_py.server.app import _Run
    from llama_py.server.engine import Event

    async def main():
        loop = asyncio.get_running_loop()
        calls = []
        real = loop.call_soon_threadsafe
        loop.call_soon_threadsafe = lambda *a: (calls.append(a[0]), real(*a))[1]
        run = _Run(loop)
        run.open = 2
        put0, put1 = run.sink(0), run.sink(1)

        def produce(n0, n1, end):
            for k in range(n0):
                put0(Event("token", text=f"a{k}"))
            for k in range(n1):
                put1(Event("token", text=f"b{k}"))
            if end:
                put0(Event("done"))
                put1(Event("done"))

        th = threading.Thread(target=produce, args=(5, 3, False))
        th.start()
        th.join()  # the loop is blocked meanwhile: everything piles up
        it = run.batches()
        first = await it.__anext__()
        assert [(i, ev.text) for i, ev in first] == [(0, f"a{k}") for k in range(5)] + [(1, f"b{k}") for k in range(3)]
        assert len(calls) == 1
        # now the loop waits first; the producer's event must wake it
        th = threading.Thread(target=lambda: (time.sleep(0.05), produce(1, 0, True)))
        th.start()
        rest = []
        async for b in it:
            rest.extend(b)
        th.join()
        assert [(i, ev.kind, ev.text) for i, ev in rest] == [(0, "token", "a0"), (0, "done", ""), (1, "done", "")]
        assert run.open == 0 and not run.buf

    asyncio.run(main())


def test_loop_waker_one_wake_up_per_step_for_every_stream():
    """Runs fed by one engine step are woken by one call_soon_threadsafe (the engine's notify),
    each run getting its own events in order."""
    import threading
    from llama_py.server.app import _LoopWaker, _Run
    from llama_py.server.engine import Event

    async def main():
        loop = asyncio.get_running_loop()
        calls = []
        real = loop.call_soon_threadsafe
        loop.call_soon_threadsafe = lambda *a: (calls.append(a[0]), real(*a))[1]
        waker = _LoopWaker(loop)
        runs = [_Run(loop, waker) for _ in range(3)]
        sinks = []
        for r in runs:
            r.open = 1
            sinks.append(r.sink(0))

        def step(k, end=False):
            for j, put in enumerate(sinks):
                put(Event("done") if end else Event("token", text=f"{j}:{k}"))
            waker.notify()
            waker.notify()  # the same step's callable twice still makes one wake-up

        th = threading.Thread(target=lambda: [step(k) for k in range(3)])
        th.start()
        th.join()
        assert len(calls) == 1  # the loop was busy: three steps, one wake-up
        outs = [[] for _ in runs]

        async def read(j):
            async for b in runs[j].batches():
                outs[j].extend((ev.kind, ev.text) for _, ev in b)
        tasks = [asyncio.ensure_future(read(j)) for j in range(3)]
        await asyncio.sleep(0)
        th = threading.Thread(target=lambda: (time.sleep(0.05), step(3, end=True)))
        th.start()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        th.join()
        for j in range(3):
            assert outs[j] == [("token", f"{j}:{k}") for k in range(3)] + [("done", "")]
        assert len(calls) == 2

    asyncio.run(main())


def test_stream_coalesced_while_the_loop_is_stalled(served, client, llama_ref, monkeypatch):
    """While the server's event loop is stalled the engine keeps generating; what piled up leaves
    in one write of several SSE events, which the openai client reads as separate chunks: every
    token exactly once and in order (the same tokens as the non-streamed request, the same
    greedy text as the Llama class)."""
    from llama_py.server import app as appmod
    url, app, entry = served
    loops, sizes = [], []
    real_init, real_batches = appmod._Run.__init__, appmod._Run.batches

    def init(self, loop, *a):
        real_init(self, loop, *a)
        loops.append(loop)

    async def batches(self):
        async for b in real_batches(self):
            sizes.append(len(b))
            yield b
    monkeypatch.setattr(appmod._Run, "__init__", init)
    monkeypatch.setattr(appmod._Run, "batches", batches)

    def stall():  # runs on the server's loop: blocks it until the engine has made 8 more tokens
        start, end = entry.engine.metrics.generated, time.monotonic() + 60
        while entry.engine.metrics.generated < start + 8 and time.monotonic() < end:
            time.sleep(0.002)

    prompt, n = "Write a long story about a lighthouse keeper.", 40
    kw = dict(model="smollm2", prompt=prompt, max_tokens=n, temperature=0, logprobs=0, extra_body={"ignore_eos": True})
    toks, text = [], []
    for k, ch in enumerate(client.completions.create(stream=True, **kw)):
        if k == 0:
            loops[-1].call_soon_threadsafe(stall)
        for c in ch.choices:
            text.append(c.text)
            if c.logprobs is not None:
                toks.extend(c.logprobs.tokens)
    assert max(sizes) >= 8, sizes
    whole = client.completions.create(**kw).choices[0]
    assert toks == whole.logprobs.tokens and len(toks) == n
    assert "".join(text) == "".join(toks) == whole.text
    ref = llama_ref.create_completion(prompt, max_tokens=n, temperature=0)["choices"][0]
    llama_ref.reset()
    assert whole.text.startswith(ref["text"]) if ref["finish_reason"] == "stop" else whole.text == ref["text"]


def test_client_disconnect_cancels_within_a_step(served):
    url, app, entry = served
    before = entry.engine.metrics.finish.get("cancelled", 0)
    # ignore_eos: a sampled end of text must not finish the request before the disconnect does
    body = {"model": "smollm2", "prompt": "Write a very long story.", "max_tokens": 800, "stream": True,
            "ignore_eos": True}
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=60) as r:
        it = r.iter_lines()
        seen = 0
        for ln in it:
            if ln.startswith("data: "):
                seen += 1
            if seen >= 3:
                break
    t0 = time.monotonic()
    while entry.engine.metrics.finish.get("cancelled", 0) == before and time.monotonic() - t0 < 10:
        time.sleep(0.01)
    assert entry.engine.metrics.finish.get("cancelled", 0) == before + 1
    assert entry.engine.wait_idle(10)


def test_non_streaming_disconnect_cancels(served):
    url, app, entry = served
    before = entry.engine.metrics.finish.get("cancelled", 0)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url + "/v1/completions", json={"prompt": "Tell me everything.", "max_tokens": 900, "ignore_eos": True},
                   timeout=0.5)
    t0 = time.monotonic()
    while entry.engine.metrics.finish.get("cancelled", 0) == before and time.monotonic() - t0 < 10:
        time.sleep(0.01)
    assert entry.engine.metrics.finish.get("cancelled", 0) == before + 1


def test_full_queue_is_429_with_retry_after(smollm2_path):
    from llama_py.server.app import ModelEntry
    entry = ModelEntry.load("tiny", str(smollm2_path), n_slots=1, n_ctx=512, max_queue=1)
    with running_server([entry]) as (url, app):
        async def main():
            async with httpx.AsyncClient(timeout=60) as c:
                return await asyncio.gather(*[c.post(url + "/v1/completions",
                                                     json={"prompt": f"Story {i}:", "max_tokens": 40})
                                              for i in range(5)])
        rs = asyncio.run(main())
        codes = sorted(r.status_code for r in rs)
        assert 429 in codes and 200 in codes, codes
        for r in rs:
            if r.status_code == 429:
                assert int(r.headers["retry-after"]) >= 1
                assert r.json()["error"]["type"] == "rate_limit_error"
        ok = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        assert ok.completions.create(model="tiny", prompt="Hi", max_tokens=2).choices[0].text is not None


def test_api_key_and_several_models(smollm2_path, tmp_path):
    from llama_py.server.cli import build_entries, load_config
    cfg = tmp_path / "models.json"
    cfg.write_text(json.dumps({"models": [
        {"model": str(smollm2_path), "model_alias": "alpha", "parallel": 1, "n_ctx": 512},
        {"model": str(smollm2_path), "model_alias": "beta", "parallel": 2, "n_ctx": 1024}]}))
    entries = build_entries(load_config(str(cfg))["models"])
    with running_server(entries, api_key="sekret") as (url, app):
        bad = openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.models.list()
        assert httpx.post(url + "/v1/completions", json={"prompt": "x"}).status_code == 401
        assert httpx.get(url + "/health").status_code == 200
        good = openai.OpenAI(base_url=url + "/v1", api_key="sekret", max_retries=0)
        assert sorted(m.id for m in good.models.list()) == ["alpha", "beta"]
        r = good.completions.create(model="beta", prompt="Hello", max_tokens=3)
        assert r.model == "beta"
        assert entries[1].engine.metrics.generated >= 1 and entries[0].engine.metrics.generated == 0
        with pytest.raises(openai.NotFoundError):
            good.completions.create(model="gamma", prompt="Hello", max_tokens=3)


def test_bad_config_names_the_entry(tmp_path):
    from llama_py.server.cli import load_config
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"models": [{"model": "a.gguf", "paralel": 2}]}))
    with pytest.raises(ValueError, match=r"models\[0\].*paralel"):
        load_config(str(p))


def test_response_format_json_object(client):
    r = client.chat.completions.create(model="smollm2", max_tokens=60, temperature=0,
                                       messages=[{"role": "user", "content": "Give me a JSON object about a cat."}],
                                       response_format={"type": "json_object"})
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)


def test_forced_tool_call(client):
    jsonschema = pytest.importorskip("jsonschema")
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    r = client.chat.completions.create(
        model="smollm2", max_tokens=60, temperature=0,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": params}}],
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    jsonschema.validate(json.loads(call.function.arguments), params)


def test_cli_serve_thin_path(smollm2_path):
    """`python -m llama_py serve` in a subprocess, one /v1/completions request through openai."""
    from server_util import free_port, wait_healthy
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_py", "serve", "-m", str(smollm2_path), "--port", str(port),
                             "--parallel", "2", "--n-ctx", "1024"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        wait_healthy(proc, port, "python -m llama_py serve",
                     lambda: proc.stderr.read().decode() if proc.poll() is not None else "")
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
        r = c.completions.create(model="anything", prompt="The capital of France is", max_tokens=4, temperature=0)
        assert r.choices[0].text and r.usage.completion_tokens == 4
    finally:
        proc.terminate()
        proc.wait(timeout=30)
