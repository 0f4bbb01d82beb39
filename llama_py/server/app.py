"""The OpenAI-compatible ASGI application (Starlette).

    from llama_py.server import ModelEntry, create_app
    app = create_app([ModelEntry.load("smollm2", "model.gguf", n_slots=4)], api_key=None)
    # uvicorn.run(app, host="127.0.0.1", port=8000)

Routes: /v1/completions, /v1/chat/completions (stream: server-sent events ending in [DONE]),
/v1/embeddings, /v1/models, /health, /metrics, /extras/tokenize, /extras/tokenize/count,
/extras/detokenize. Generation runs on each model's Engine (continuous batching); this layer
validates, submits, and turns engine events into OpenAI responses. A client that goes away
cancels its requests (the engine frees their slots at its next step).
"""
from __future__ import annotations

import asyncio
import base64
import collections
import hmac
import json
import logging
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from . import protocol as P
from .._runtime import chat as R
from .._runtime.embed import truncate
from .embed import Embedder
from .score import Scorer
from .tools import grammar_for
from .engine import ContextOverflow, Engine, EngineClosed, Event, GenRequest, Model, QueueFull, SamplingParams
from .metrics import ServerMetrics, render

log = logging.getLogger("llama_py.server")
MAX_BODY = 8 << 20


@dataclass
class ModelEntry:
    """A served model: its name, weights, generation engine and (lazily) an embedder."""
    name: str
    model: Model
    engine: Engine
    n_threads: Optional[int] = None
    created: int = field(default_factory=P.now)
    _embedder: Optional[Embedder] = None
    _scorer: Optional[Scorer] = None

    @classmethod
    def load(cls, name: str, path: str, n_slots: int = 4, n_ctx: Optional[int] = None, n_batch: int = 512,
             n_threads: Optional[int] = None, max_queue: int = 64, chat_format: Optional[str] = None,
             n_gpu_layers: int = 0, prefill_chunk: int = 64, loras: Sequence[Tuple[str, float]] = (),
             draft: Optional[str] = None, n_draft: int = 8, swa_full: bool = False) -> "ModelEntry":
        model = Model(path, n_gpu_layers=n_gpu_layers, chat_format=chat_format)
        try:
            engine = Engine(model, n_slots=n_slots, n_ctx=n_ctx, n_batch=n_batch, n_threads=n_threads,
                            max_queue=max_queue, name=name, prefill_chunk=prefill_chunk, loras=loras, draft=draft,
                            n_draft=n_draft, swa_full=swa_full)
        except BaseException:
            model.close()
            raise
        return cls(name, model, engine, n_threads)

    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.model, n_ctx=min(2048, self.model.n_ctx_train or 2048),
                                      n_threads=self.n_threads)
        return self._embedder

    def scorer(self) -> Scorer:
        if self._scorer is None:
            self._scorer = Scorer(self.model, n_ctx=self.engine.n_ctx_slot, n_threads=self.n_threads)
        return self._scorer

    def close(self) -> None:
        self.engine.close()
        for helper in (self._embedder, self._scorer):
            if helper is not None:
                helper.close()
        self.model.close()


# ---------------------------------------------------------------------------------------------
# bridging engine events (scheduler thread) to the event loop

def _call_soon(loop: asyncio.AbstractEventLoop, fn) -> None:
    """Schedules fn on loop from another thread; a closed loop has nobody listening: nothing."""
    try:
        loop.call_soon_threadsafe(fn)
    except RuntimeError:
        pass


class _LoopWaker:
    """Wakes the runs of one event loop that have new events, on one call_soon_threadsafe per
    engine step however many streams that step fed. The engine calls notify() right before its
    next llama_decode: the loop then does its work while the decode has released the GIL,
    instead of taking it back and forth with the scheduler thread's sampling."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.runs: collections.deque = collections.deque()
        self.pending = False

    def notify(self) -> None:
        if self.pending:  # a drain is scheduled and has not started: it will see every run queued
            return
        self.pending = True
        _call_soon(self.loop, self._drain)

    def _drain(self) -> None:
        self.pending = False  # cleared first: a run queued from now on schedules another drain
        while self.runs:
            run = self.runs.popleft()
            run._queued = False
            run._wake()


class _Run:
    """The n generations of one HTTP request. The scheduler thread appends (index, event) to a
    deque. A call_soon_threadsafe (a write to the loop's self-pipe, a wake-up, and the GIL handed
    back and forth) costs more than the rest of a token's path, so the loop is woken once per
    engine step through the loop's _LoopWaker when the engine supports it (Engine.calls_notify),
    else at most once until it has taken what is there; the events that pile up while the loop
    is busy (other streams, a slow client) leave in one write."""

    def __init__(self, loop: asyncio.AbstractEventLoop, waker: Optional[_LoopWaker] = None):
        self.loop = loop
        self.buf: collections.deque = collections.deque()
        self.reqs: List[GenRequest] = []
        self.open = 0
        self.closed = False
        self._waiter: Optional[asyncio.Future] = None
        self._wake_pending = False
        self._queued = False
        self.waker = waker

    def sink(self, index: int):
        if self.waker is not None:
            def put_batched(ev: Event) -> None:
                self.buf.append((index, ev))
                # Appended before the flag is read: the drain clears the flag before it wakes
                # this run, so either it is still to come or this run is queued again.
                if not self._queued:
                    self._queued = True
                    self.waker.runs.append(self)
            return put_batched

        def put(ev: Event) -> None:
            self.buf.append((index, ev))
            # Appended before the flag is read: a pending wake-up clears the flag before it
            # resolves the waiter, so whatever it finds set, this event is seen.
            if self._wake_pending:
                return
            self._wake_pending = True
            _call_soon(self.loop, self._wake)
        return put

    def _wake(self) -> None:
        self._wake_pending = False
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def cancel(self) -> None:
        for r in self.reqs:
            r.cancel()

    def gone(self) -> None:
        """The client disconnected: cancel, and wake whoever waits for events."""
        self.cancel()
        self.closed = True
        self._wake()

    async def batches(self):
        """Lists of (index, event), each what had arrived when the loop got to it, until every
        generation is done; stops early if the client is gone."""
        while self.open and not self.closed:
            if not self.buf:
                self._waiter = self.loop.create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
                continue
            items = []
            while self.buf and self.open:
                i, ev = self.buf.popleft()
                if ev.kind != "token":
                    self.open -= 1
                items.append((i, ev))
            yield items

    async def events(self):
        """(index, event) one by one (see batches)."""
        async for items in self.batches():
            for item in items:
                yield item


async def _wait_disconnect(receive) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return


class _SSEResponse(StreamingResponse):
    """Server-sent events from an async generator; a disconnect (seen on receive or as a failed
    send) cancels the run at once, whatever ASGI version the server speaks."""

    def __init__(self, gen, run: _Run):
        super().__init__(gen, status_code=200, media_type="text/event-stream",
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.gen = gen
        self.run = run
        self.on_done = None

    async def __call__(self, scope, receive, send) -> None:
        async def watch():
            await _wait_disconnect(receive)
            self.run.gone()
        watcher = asyncio.ensure_future(watch())
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for chunk in self.gen:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-send
        finally:
            watcher.cancel()
            self.run.cancel()
            await self.gen.aclose()
            if self.on_done is not None:
                self.on_done()


async def _tokenize(e: ModelEntry, text: str, add_special: bool = True) -> List[int]:
    """Tokenizes on the event loop when short, in a worker thread when long (megabytes take
    long enough to stall every other stream)."""
    if len(text) < 16384:
        return e.model.tokenize(text, add_special=add_special)
    return await asyncio.to_thread(e.model.tokenize, text, add_special)


def _fingerprint(finals: Dict[int, Event]) -> str:
    """llama_py, plus the replica(s) that generated the choices when served by Ray."""
    origins = sorted({ev.origin for ev in finals.values() if ev.origin})
    return "llama_py" + "".join(f"-{o}" for o in origins)


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


async def _sse_batches(run: "_Run", finals: Dict[int, Event], render: Callable[[int, Event], List[bytes]]):
    """One SSE write per batch of engine events (the events that came together leave together):
    render(i, ev) gives the chunks of a token or done event; an error event becomes an error
    chunk. Done and error events are recorded in finals."""
    async for batch in run.batches():
        out: List[bytes] = []
        for i, ev in batch:
            if ev.kind == "error":
                out.append(_sse({"error": {"message": ev.message, "type": "server_error"}}))
                finals[i] = ev
                continue
            if ev.kind == "done":
                finals[i] = ev
            out.extend(render(i, ev))
        if out:
            yield b"".join(out)


# ---------------------------------------------------------------------------------------------
# the application

class _App:
    def __init__(self, entries: List[ModelEntry], api_key: Optional[str]):
        if not entries:
            raise ValueError("create_app needs at least one model")
        self.entries = {e.name: e for e in entries}
        self.default = entries[0]
        self.api_key = api_key
        self.metrics = ServerMetrics()
        self.wakers: Dict[asyncio.AbstractEventLoop, _LoopWaker] = {}  # one per loop serving (normally one)

    def entry(self, body: dict) -> ModelEntry:
        name = body.get("model")
        if name is not None and not isinstance(name, str):
            raise P.bad("model", f"must be a string, got {P._kind(name)}")
        if len(self.entries) == 1 or name is None:
            return self.default  # one model: any name reaches it, as clients hard-code names
        e = self.entries.get(name)
        if e is None:
            raise P.RequestError(404, f"model {name!r} is not served here (models: {', '.join(self.entries)})",
                                 param="model", code="model_not_found")
        return e

    # ---- plumbing ----

    async def body(self, request: Request) -> dict:
        return P.parse_json(await self.raw_body(request))

    async def raw_body(self, request: Request) -> bytes:
        cl = request.headers.get("content-length")
        if cl is not None and cl.isdigit() and int(cl) > MAX_BODY:
            raise P.RequestError(413, f"the body is {cl} bytes; the limit is {MAX_BODY}")
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > MAX_BODY:
                raise P.RequestError(413, f"the body is larger than {MAX_BODY} bytes")
        return bytes(data)

    def handler(self, endpoint: str, fn):
        async def h(request: Request) -> Response:
            t0 = time.perf_counter()
            try:
                resp = await fn(request)
            except P.RequestError as e:
                resp = JSONResponse(e.body(), status_code=e.status, headers=e.headers)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a bug must cost one request, never the server
                log.exception("error in %s", endpoint)
                resp = JSONResponse({"error": {"message": f"internal error: {type(e).__name__}: {e}",
                                               "type": "server_error", "param": None, "code": None}},
                                    status_code=500)
            if isinstance(resp, _SSEResponse):  # counted when the stream ends, with its whole duration
                resp.on_done = lambda: self.metrics.request(endpoint, 200, time.perf_counter() - t0)
            else:
                self.metrics.request(endpoint, resp.status_code, time.perf_counter() - t0)
            return resp
        return h

    def auth_ok(self, scope) -> bool:
        if not self.api_key or scope.get("path") == "/health":
            return True
        for k, v in scope.get("headers", []):
            if k == b"authorization":
                scheme, _, token = v.decode("latin-1").partition(" ")
                return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.api_key.encode())
        return False

    # ---- generation ----

    def _submit(self, e: ModelEntry, run: _Run, tokens: List[int], gp: P.GenParams, index: int,
                grammar=None) -> None:
        max_tokens = gp.max_tokens if gp.max_tokens is not None else e.engine.limit_for(len(tokens))
        seed = None if gp.seed is None else gp.seed + index
        sp = SamplingParams(temperature=gp.temperature, top_k=gp.top_k, top_p=gp.top_p, min_p=gp.min_p,
                            typical_p=gp.typical_p, repeat_penalty=gp.repeat_penalty,
                            frequency_penalty=gp.frequency_penalty, presence_penalty=gp.presence_penalty,
                            penalty_last_n=gp.penalty_last_n, mirostat_mode=gp.mirostat_mode,
                            mirostat_tau=gp.mirostat_tau, mirostat_eta=gp.mirostat_eta, seed=seed,
                            logit_bias=gp.logit_bias, grammar=grammar, ignore_eos=gp.ignore_eos)
        req = GenRequest(prompt_tokens=tokens, max_tokens=max(1, max_tokens), sampling=sp, stop=gp.stop,
                         logprobs=gp.logprobs, special=gp.special, lora=gp.lora, sink=run.sink(index),
                         notify=run.waker.notify if run.waker is not None else None)
        try:
            e.engine.submit(req)
        except ContextOverflow as err:
            raise P.RequestError(400, str(err), param="max_tokens" if gp.max_tokens is not None and
                                 len(tokens) < e.engine.n_ctx_slot else "prompt", code="context_length_exceeded")
        except QueueFull as err:
            raise P.RequestError(429, f"server busy: {err}; retry later", type="rate_limit_error",
                                 headers={"Retry-After": "1"})
        except EngineClosed as err:
            raise P.RequestError(503, str(err), type="server_error", headers={"Retry-After": "5"})
        except ValueError as err:  # a bad grammar, token or adapter id
            param = "lora" if str(err).startswith("lora:") else "response_format" if grammar is not None else "prompt"
            raise P.RequestError(400, str(err), param=param)
        run.reqs.append(req)
        run.open += 1

    def _start(self, e: ModelEntry, prompts: List[List[int]], gp: P.GenParams, grammar=None) -> _Run:
        loop = asyncio.get_running_loop()
        waker = None
        if getattr(e.engine, "calls_notify", False):
            waker = self.wakers.get(loop)
            if waker is None:
                waker = self.wakers[loop] = _LoopWaker(loop)
        run = _Run(loop, waker)
        try:
            for pi, toks in enumerate(prompts):
                for j in range(gp.n):
                    self._submit(e, run, toks, gp, pi * gp.n + j, grammar)
        except BaseException:
            run.cancel()
            raise
        return run

    async def _collect(self, request: Request, run: _Run):
        """Runs a non-streamed request to the end, watching for the client going away."""
        async def watch():
            await _wait_disconnect(request.receive)
            run.gone()
        watcher = asyncio.ensure_future(watch())
        texts: Dict[int, List[str]] = {}
        items: Dict[int, list] = {}
        finals: Dict[int, Event] = {}
        try:
            async for i, ev in run.events():
                if ev.text:
                    texts.setdefault(i, []).append(ev.text)
                if ev.kind == "token" and ev.logprob is not None:
                    items.setdefault(i, []).append(ev)
                if ev.kind != "token":
                    finals[i] = ev
        finally:
            watcher.cancel()
            run.cancel()
        if len(finals) < len(run.reqs):
            raise P.RequestError(499, "client closed the request")
        errors = [ev for ev in finals.values() if ev.kind == "error"]
        if errors:
            ev = errors[0]
            raise P.RequestError(ev.status, ev.message, type="server_error" if ev.status >= 500 else "rate_limit_error",
                                 headers={"Retry-After": "1"} if ev.status in (429, 503) else None)
        return texts, items, finals

    def _usage(self, finals: Dict[int, Event], n_prompts: List[int], n: int) -> Dict[str, int]:
        pt = sum(n_prompts)
        ct = sum(ev.usage["completion_tokens"] for ev in finals.values() if ev.usage)
        return {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}

    def _lp_items(self, e: ModelEntry, evs: List[Event]):
        out = []
        for ev in evs:
            top = None if ev.top_logprobs is None else [(e.model.detokenize([t]), lp) for t, lp in ev.top_logprobs]
            out.append((e.model.detokenize([ev.token]), ev.logprob, top))
        return out

    async def _score(self, e: ModelEntry, toks: List[int], n_top: int) -> Dict[str, Any]:
        """The completions logprobs object of a prompt's own tokens (offsets from 0)."""
        try:
            scored = await asyncio.to_thread(e.scorer().score, toks, n_top)
        except ValueError as err:
            raise P.RequestError(400, str(err), param="prompt", code="context_length_exceeded")
        # the alternatives include the token itself, as Llama.create_completion(echo=True) reports them
        items = [(e.model.detokenize([t]), lp,
                  [(e.model.detokenize([a]), v) for a, v in top] + [(e.model.detokenize([t]), lp)]
                  if n_top and lp is not None else None)
                 for t, (lp, top) in zip(toks, scored)]
        return P.completion_logprobs(items, 0)

    # ---- endpoints ----

    async def completions(self, request: Request) -> Response:
        body = await self.body(request)
        e = self.entry(body)
        gp = P.parse_gen_params(body, e.model.n_vocab, chat=False)
        echo = P.get_bool(body, "echo", False)
        prompts = P.get_prompts(body.get("prompt"), "prompt", e.model.n_vocab)
        if len(prompts) * gp.n > P.MAX_N:
            raise P.bad("n", f"prompts x n must be at most {P.MAX_N}, got {len(prompts) * gp.n}")
        toks = [await _tokenize(e, p) if isinstance(p, str) else list(p) for p in prompts]
        for i, t in enumerate(toks):
            if not t:
                raise P.bad("prompt", f"prompt {i} is empty")
        grammar = grammar_for({k: body[k] for k in ("grammar", "response_format") if k in body})[0]
        cid, created = P.new_id("cmpl"), P.now()
        echoes = [e.model.detokenize(t) if echo else "" for t in toks]
        # echo with logprobs: the prompt's tokens scored too (the first has none), as OpenAI's legacy API did
        prompt_lps = [None] * len(toks)
        if echo and gp.logprobs is not None:
            prompt_lps = [await self._score(e, t, gp.logprobs) for t in toks]

        def choice(i, text, finish, lp=None):
            return {"text": text, "index": i, "logprobs": lp, "finish_reason": finish}

        if gp.max_tokens == 0:  # scoring only: nothing is generated
            choices = [choice(i, echoes[i // gp.n], "length", prompt_lps[i // gp.n]) for i in range(len(toks) * gp.n)]
            n_prompt = sum(len(t) for t in toks) * gp.n
            return JSONResponse({"id": cid, "object": "text_completion", "created": created, "model": e.name,
                                 "choices": choices, "usage": {"prompt_tokens": n_prompt, "completion_tokens": 0,
                                                               "total_tokens": n_prompt}})
        run = self._start(e, toks, gp, grammar)

        if gp.stream:
            async def gen():
                for i in range(len(run.reqs)):
                    if echo:
                        yield _sse({"id": cid, "object": "text_completion", "created": created, "model": e.name,
                                    "choices": [choice(i, echoes[i // gp.n], None, prompt_lps[i // gp.n])]})
                finals = {}
                offs: Dict[int, int] = {}

                def render(i, ev):
                    lp = None
                    if ev.kind == "token" and ev.logprob is not None:
                        lp = P.completion_logprobs(self._lp_items(e, [ev]), offs.get(i, len(echoes[i // gp.n])))
                    offs[i] = offs.get(i, len(echoes[i // gp.n])) + len(ev.text)
                    if not (ev.text or lp is not None or ev.kind == "done"):
                        return []
                    return [_sse({"id": cid, "object": "text_completion", "created": created, "model": e.name,
                                  "choices": [choice(i, ev.text, ev.finish_reason, lp)]})]

                async for chunk in _sse_batches(run, finals, render):
                    yield chunk
                tail = []
                if gp.include_usage and len(finals) == len(run.reqs):
                    tail.append(_sse({"id": cid, "object": "text_completion", "created": created, "model": e.name,
                                      "choices": [], "usage": self._usage(finals, [len(t) for t in toks], gp.n)}))
                yield b"".join(tail) + b"data: [DONE]\n\n"
            return _SSEResponse(gen(), run)
        texts, items, finals = await self._collect(request, run)
        choices = []
        for i in range(len(run.reqs)):
            lp = P.completion_logprobs(self._lp_items(e, items.get(i, [])), len(echoes[i // gp.n])) \
                if gp.logprobs is not None else None
            if lp is not None and prompt_lps[i // gp.n] is not None:
                lp = {k: prompt_lps[i // gp.n][k] + lp[k] for k in lp}
            choices.append(choice(i, echoes[i // gp.n] + "".join(texts.get(i, [])), finals[i].finish_reason, lp))
        return JSONResponse({"id": cid, "object": "text_completion", "created": created, "model": e.name,
                             "system_fingerprint": _fingerprint(finals), "choices": choices, "usage": self._usage(finals, [len(t) for t in toks], gp.n)})

    async def chat(self, request: Request) -> Response:
        body = await self.body(request)
        e = self.entry(body)
        gp = P.parse_gen_params(body, e.model.n_vocab, chat=True)
        messages = P.parse_messages(body)
        grammar, tools, tool_choice, tool_mode = grammar_for(body, R.formatter_template(e.model.formatter()))
        try:
            prompt, add_special, fmt_stops = e.model.chat_prompt(messages, tools, tool_choice)
        except ValueError as err:
            raise P.RequestError(400, str(err), param="messages")
        gp.stop = gp.stop + [s for s in fmt_stops if s not in gp.stop]
        # harmony (gpt-oss): replies are read with their channel markers, streamed or whole
        harmony = R.is_harmony(R.formatter_template(e.model.formatter()))
        gp.special = harmony
        toks = await _tokenize(e, prompt, add_special)
        run = self._start(e, [toks], gp, grammar)
        cid, created = P.new_id("chatcmpl"), P.now()

        def call_id(i):
            return f"call_{cid[len('chatcmpl-'):]}_{i}"

        def base(choices):
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": e.name,
                    "choices": choices}

        if gp.stream:
            deltas = [R.HarmonyDeltas(call_id(i)) if harmony else R.ChatDeltas(tool_mode, call_id(i))
                      for i in range(len(run.reqs))]

            def chunk(i, delta, lp=None, finish=None):
                return _sse(base([{"index": i, "delta": delta, "logprobs": lp, "finish_reason": finish}]))

            async def gen():
                for i in range(len(run.reqs)):
                    # content "" as OpenAI's first delta has it (llama-cpp-python's has the role only)
                    opening = deltas[i].opening()
                    opening.setdefault("content", "")
                    yield chunk(i, opening)
                finals = {}

                def render(i, ev):
                    lp = R.chat_logprobs(self._lp_items(e, [ev])) if ev.kind == "token" and \
                        ev.logprob is not None else None
                    out = []
                    for d in deltas[i].text(ev.text):
                        out.append(chunk(i, d, lp))
                        lp = None
                    if lp is not None:  # a token whose text is held back still reports its logprob
                        out.append(chunk(i, {"content": ""} if deltas[i].mode is None else {}, lp))
                    if ev.kind == "done":
                        tail, finish = deltas[i].finish(ev.finish_reason)
                        out += [chunk(i, d) for d in tail]
                        out.append(chunk(i, {}, None, finish))
                    return out

                async for c in _sse_batches(run, finals, render):
                    yield c
                tail = []
                if gp.include_usage and len(finals) == len(run.reqs):
                    tail.append(_sse(dict(base([]), usage=self._usage(finals, [len(toks)], gp.n))))
                yield b"".join(tail) + b"data: [DONE]\n\n"
            return _SSEResponse(gen(), run)
        texts, items, finals = await self._collect(request, run)
        choices = []
        for i in range(len(run.reqs)):
            if harmony:
                message, finish = R.harmony_message("".join(texts.get(i, [])), finals[i].finish_reason, call_id(i))
            else:
                message, finish = R.chat_message("".join(texts.get(i, [])), finals[i].finish_reason, tool_mode,
                                                 call_id(i))
            lp = R.chat_logprobs(self._lp_items(e, items.get(i, []))) if gp.logprobs is not None else None
            choices.append({"index": i, "message": message, "logprobs": lp, "finish_reason": finish})
        return JSONResponse({"id": cid, "object": "chat.completion", "created": created, "model": e.name,
                             "system_fingerprint": _fingerprint(finals), "choices": choices, "usage": self._usage(finals, [len(toks)], gp.n)})

    async def embeddings(self, request: Request) -> Response:
        body = await self.body(request)
        e = self.entry(body)
        inputs = P.get_prompts(body.get("input"), "input", e.model.n_vocab)
        fmt = P.get_str(body, "encoding_format", "float")
        if fmt not in ("float", "base64"):
            raise P.bad("encoding_format", f"must be 'float' or 'base64', got {fmt!r}")
        dims = P.get_int(body, "dimensions", None, lo=1)
        if dims is not None and dims > e.model.n_embd:
            raise P.bad("dimensions", f"this model's embeddings have {e.model.n_embd} dimensions, got {dims}")
        toks = [await _tokenize(e, t) if isinstance(t, str) else list(t) for t in inputs]
        emb = e.embedder()
        for i, t in enumerate(toks):
            if not t:
                raise P.bad("input", f"input {i} is empty")
            if len(t) > emb.n_ctx:
                raise P.RequestError(400, f"input {i} has {len(t)} tokens; embeddings take at most {emb.n_ctx}",
                                     param="input", code="context_length_exceeded")
        vecs = await asyncio.to_thread(emb.embed, toks)
        if dims is not None and dims < e.model.n_embd:
            vecs = [truncate(v, dims) for v in vecs]  # Matryoshka: the first dims, renormalized
        data = []
        for i, v in enumerate(vecs):
            val: Any = v if fmt == "float" else base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
            data.append({"object": "embedding", "embedding": val, "index": i})
        n = sum(len(t) for t in toks)
        return JSONResponse({"object": "list", "data": data, "model": e.name,
                             "usage": {"prompt_tokens": n, "total_tokens": n}})

    def _model_card(self, n: str, m: ModelEntry) -> Dict[str, Any]:
        return {"id": n, "object": "model", "created": m.created, "owned_by": "llama_py",
                "meta": {"n_ctx": m.engine.n_ctx, "n_ctx_slot": m.engine.n_ctx_slot, "slots": m.engine.n_slots,
                         "n_vocab": m.model.n_vocab, "n_embd": m.model.n_embd}}  # no path: clients see names

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [self._model_card(n, m) for n, m in self.entries.items()]})

    async def model(self, request: Request) -> Response:
        name = request.path_params["model"]
        if name not in self.entries:
            raise P.RequestError(404, f"the model {name!r} does not exist (served: {', '.join(self.entries)})",
                                 param="model", code="model_not_found")
        return JSONResponse(self._model_card(name, self.entries[name]))

    async def not_found(self, request: Request) -> Response:
        raise P.RequestError(404, f"no route {request.method} {request.url.path}", code="not_found")

    async def health(self, request: Request) -> Response:
        slots = {n: m.engine.stats() for n, m in self.entries.items()}
        return JSONResponse({"status": "ok", "models": slots})

    async def prometheus(self, request: Request) -> Response:
        return PlainTextResponse(render(self.metrics, {n: m.engine for n, m in self.entries.items()}),
                                 media_type="text/plain; version=0.0.4")

    def _loras(self):
        loras = getattr(self.default.engine, "loras", None)
        if loras is None:
            raise P.RequestError(400, "this engine does not take LoRA adapters", code="not_supported")
        return loras

    async def lora_adapters(self, request: Request) -> Response:
        """GET /lora-adapters: the default model's adapters; POST [{id, scale}] sets their
        server-wide scales (unlisted: 0), as llama-server does."""
        loras = self._loras()
        if request.method == "GET":
            return JSONResponse(loras.info())
        data = await self.raw_body(request)
        try:
            body = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise P.RequestError(400, f"the body is not valid JSON: {e}")
        if not isinstance(body, list):
            raise P.RequestError(400, "the body must be an array of {\"id\", \"scale\"} objects")
        from .lora import parse_lora_request
        try:
            loras.set_scales(parse_lora_request(body, "body"))
        except ValueError as e:
            raise P.RequestError(400, str(e))
        return JSONResponse({"success": True})

    async def tokenize(self, request: Request) -> Response:
        body = await self.body(request)
        e = self.entry(body)
        text = P.get_str(body, "input")
        if text is None:
            raise P.bad("input", "is required (a string)")
        add_special = P.get_bool(body, "add_special", True)
        return JSONResponse({"tokens": await _tokenize(e, text, add_special)})

    async def tokenize_count(self, request: Request) -> Response:
        body = await self.body(request)
        e = self.entry(body)
        text = P.get_str(body, "input")
        if text is None:
            raise P.bad("input", "is required (a string)")
        return JSONResponse({"count": len(await _tokenize(e, text, P.get_bool(body, "add_special", True)))})

    async def detokenize(self, request: Request) -> Response:
        body = await self.body(request)
        e = self.entry(body)
        if "tokens" not in body:
            raise P.bad("tokens", "is required (an array of token ids)")
        toks = P.get_token_list(body["tokens"], "tokens", e.model.n_vocab)
        return JSONResponse({"text": e.model.detokenize(toks)})


def create_app(entries: List[ModelEntry], api_key: Optional[str] = None, close_on_shutdown: bool = True):
    """The ASGI application serving entries (the first is the default model): the Starlette
    routes behind an API-key check. close_on_shutdown closes the entries when the server stops.
    `.llama` is the object holding the entries and the HTTP metrics."""
    a = _App(entries, api_key)
    from .rerank import generative_only, rerank_route
    rerank = a.handler("/v1/rerank", rerank_route(a))
    routes = [
        Route("/v1/completions", a.handler("/v1/completions", generative_only(a, a.completions)), methods=["POST"]),
        Route("/v1/chat/completions", a.handler("/v1/chat/completions", generative_only(a, a.chat)), methods=["POST"]),
        *[Route(p, rerank, methods=["POST"]) for p in ("/v1/rerank", "/rerank", "/v1/reranking", "/reranking")],
        Route("/v1/embeddings", a.handler("/v1/embeddings", a.embeddings), methods=["POST"]),
        Route("/v1/models", a.handler("/v1/models", a.models), methods=["GET"]),
        Route("/v1/models/{model:path}", a.handler("/v1/models", a.model), methods=["GET"]),
        Route("/health", a.handler("/health", a.health), methods=["GET"]),
        Route("/metrics", a.handler("/metrics", a.prometheus), methods=["GET"]),
        Route("/lora-adapters", a.handler("/lora-adapters", a.lora_adapters), methods=["GET", "POST"]),
        Route("/extras/tokenize", a.handler("/extras/tokenize", a.tokenize), methods=["POST"]),
        Route("/extras/tokenize/count", a.handler("/extras/tokenize/count", a.tokenize_count), methods=["POST"]),
        Route("/extras/detokenize", a.handler("/extras/detokenize", a.detokenize), methods=["POST"]),
    ]
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app):
        yield
        if close_on_shutdown:
            for en in entries:
                en.close()

    # unknown routes and methods answer in the API's JSON error shape, not Starlette's plain text
    routes.append(Route("/{rest:path}", a.handler("other", a.not_found),
                        methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]))
    inner = Starlette(routes=routes, lifespan=lifespan)
    inner.state.llama = a

    async def app(scope, receive, send):
        if scope["type"] == "http" and not a.auth_ok(scope):
            resp = JSONResponse({"error": {"message": "invalid or missing API key (Authorization: Bearer KEY)",
                                           "type": "invalid_request_error", "param": None,
                                           "code": "invalid_api_key"}}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
            a.metrics.request(scope.get("path", "?") if scope.get("path") in ("/v1/completions",
                              "/v1/chat/completions", "/v1/embeddings", "/v1/models", "/metrics") else "other",
                              401, 0.0)
            await resp(scope, receive, send)
            return
        await inner(scope, receive, send)

    app.state = inner.state  # type: ignore[attr-defined]
    app.llama = a  # type: ignore[attr-defined]
    return app
