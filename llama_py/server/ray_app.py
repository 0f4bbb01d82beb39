"""Ray Serve application: an OpenAI-compatible ingress and N replicas, each one Engine.

    serve run llama_py.server.ray_app:build_app model=/path/model.gguf replicas=2 parallel=4
    serve run llama_py.server.ray_app:build_app min_replicas=1 max_replicas=4     # autoscaling

The ingress runs the same Starlette app as `python -m llama_py serve` (validation, chat
templates, SSE, metrics) on a vocabulary-only copy of the model; generation goes to the
replicas as token ids through a streaming DeploymentHandle, which Ray routes to the least
loaded replica. A replica that dies mid-request costs its requests a clean error (500 or an
error event in the stream); Serve starts a replacement and later requests go to live ones.
Builder arguments (strings, as `serve run` passes them): model, name, replicas,
min_replicas / max_replicas (autoscaling on ongoing requests), parallel, n_ctx, threads,
num_cpus (per replica), api_key.
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import Any, Dict, Optional

from ray import serve

from .engine import ContextOverflow, EngineClosed, Event, GenRequest, QueueFull, SamplingParams


@serve.deployment(name="LlamaReplica", max_ongoing_requests=64, health_check_period_s=2,
                  health_check_timeout_s=10, graceful_shutdown_timeout_s=5)
class LlamaReplica:
    """One model and one Engine; streams events of the requests the ingress routes here."""

    def __init__(self, model_path: str, name: str, n_slots: int, n_ctx: Optional[int], n_threads: Optional[int]):
        from .app import ModelEntry
        self.entry = ModelEntry.load(name, model_path, n_slots=n_slots, n_ctx=n_ctx, n_threads=n_threads,
                                     max_queue=64)
        try:
            self.id = serve.get_replica_context().replica_id.unique_id
        except Exception:
            self.id = f"pid{os.getpid()}"

    def info(self) -> Dict[str, Any]:
        e = self.entry.engine
        return {"replica": self.id, "n_ctx": e.n_ctx, "n_ctx_slot": e.n_ctx_slot, "slots": e.n_slots,
                "stats": e.stats(), "generated": e.metrics.generated, "pid": os.getpid()}

    async def generate(self, payload: Dict[str, Any]):
        """Yields Event fields as dicts until done/error; stops the request if the caller goes away."""
        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()
        sp = SamplingParams(**payload["sampling"])
        if payload.get("grammar"):
            from ..grammar import LlamaGrammar
            text, root = payload["grammar"]
            try:
                sp.grammar = LlamaGrammar.from_string(text, verbose=False)
            except ValueError as e:
                yield dataclasses.asdict(Event("error", message=str(e), status=400, origin=self.id))
                return
            sp.grammar._root = root
        req = GenRequest(prompt_tokens=payload["prompt_tokens"], max_tokens=payload["max_tokens"], sampling=sp,
                         stop=payload["stop"], logprobs=payload["logprobs"],
                         sink=lambda ev: loop.call_soon_threadsafe(q.put_nowait, ev))
        try:
            self.entry.engine.submit(req)
        except QueueFull as e:
            yield dataclasses.asdict(Event("error", message=str(e), status=429, origin=self.id))
            return
        except (ContextOverflow, ValueError) as e:
            yield dataclasses.asdict(Event("error", message=str(e), status=400, origin=self.id))
            return
        except EngineClosed as e:
            yield dataclasses.asdict(Event("error", message=str(e), status=503, origin=self.id))
            return
        try:
            while True:
                ev = await q.get()
                ev.origin = self.id
                yield dataclasses.asdict(ev)
                if ev.kind != "token":
                    return
        finally:
            req.cancel()

    def embed(self, token_lists):
        return self.entry.embedder().embed(token_lists)

    def check_health(self) -> None:
        if self.entry.engine._ctx is None or not self.entry.engine._thread.is_alive():
            raise RuntimeError("the engine's scheduler is not running")


_ATTEMPTS = 3  # tries of a request that failed before its first event


class _RemoteEngine:
    """What the app needs of an Engine, backed by the replicas' handle."""

    def __init__(self, handle, n_slots: int, n_ctx_slot: int, n_replicas: int):
        from .metrics import EngineMetrics
        self.handle = handle
        self.n_slots = n_slots * n_replicas
        self.n_ctx_slot = n_ctx_slot
        self.n_ctx = n_ctx_slot * self.n_slots
        self.metrics = EngineMetrics()  # counted at the ingress from the replicas' events
        self._open = 0

    def limit_for(self, n_prompt: int) -> int:
        return max(0, self.n_ctx_slot - n_prompt)

    def stats(self) -> Dict[str, Any]:
        return {"slots_total": self.n_slots, "slots_busy": min(self._open, self.n_slots),
                "queue_depth": max(0, self._open - self.n_slots), "kv_cells_total": self.n_ctx,
                "kv_cells_used": 0, "kv_cells_active": 0}

    def submit(self, req: GenRequest) -> GenRequest:
        n = len(req.prompt_tokens)
        if n == 0:
            raise ContextOverflow("the prompt is empty (0 tokens)")
        if n >= self.n_ctx_slot or n + req.max_tokens > self.n_ctx_slot:
            raise ContextOverflow(f"the prompt ({n} tokens) and max_tokens ({req.max_tokens}) need "
                                  f"{n + req.max_tokens} tokens; a slot holds at most {self.n_ctx_slot}")
        payload = {"prompt_tokens": list(req.prompt_tokens), "max_tokens": req.max_tokens,
                   "sampling": {k: v for k, v in dataclasses.asdict(req.sampling).items() if k != "grammar"},
                   "stop": list(req.stop), "logprobs": req.logprobs}
        g = req.sampling.grammar
        if g is not None:  # GBNF text travels; the replica compiles it against its vocabulary
            payload["grammar"] = [g._grammar, getattr(g, "_root", "root")]
        asyncio.get_running_loop().create_task(self._pump(req, payload))
        return req

    async def _pump(self, req: GenRequest, payload: Dict[str, Any]) -> None:
        """Streams the replica's events into req.sink. A call that fails before its first event
        (a replica died or is being replaced) is retried on another one; after that, a failure
        is a clean error for this request."""
        self._open += 1
        delivered = ended = False
        try:
            for attempt in range(_ATTEMPTS):
                gen = None
                try:
                    gen = self.handle.options(stream=True).generate.remote(payload)
                    async for d in gen:
                        ev = Event(**d)
                        delivered = True
                        if ev.kind == "token":
                            self.metrics.generated += 1
                        else:
                            ended = True
                            self.metrics.finished(ev.finish_reason or "error", 0.0,
                                                  (ev.usage or {}).get("prompt_tokens", 0))
                        req.sink(ev)
                        if req.cancelled and not ended:
                            gen.cancel()
                            req.sink(Event("done", finish_reason="cancelled"))
                            ended = True
                        if ended:
                            return
                    if not ended:
                        raise RuntimeError("the replica's stream ended early")
                except Exception as e:
                    if delivered or req.cancelled or attempt == _ATTEMPTS - 1:
                        ended = True
                        self.metrics.finished("error", 0.0, 0)
                        req.sink(Event("error", message=f"replica failed: {type(e).__name__}: {e}", status=503))
                        return
                    await asyncio.sleep(0.5 * (attempt + 1))
        finally:
            self._open -= 1
            if not ended:
                req.sink(Event("error", message="the request ended without a result", status=503))


class _RemoteEmbedder:
    def __init__(self, handle, n_ctx: int):
        self.handle = handle
        self.n_ctx = n_ctx

    def embed(self, token_lists):
        return self.handle.embed.remote(token_lists).result()


@serve.deployment(name="OpenAIIngress", max_ongoing_requests=256)
@serve.ingress()
class OpenAIIngress:
    """The OpenAI-compatible HTTP front: the local server's app on a vocabulary-only model."""

    def __init__(self, replicas, model_path: str, name: str, n_slots: int, n_ctx_slot: int, n_replicas: int,
                 api_key: Optional[str]):
        from .app import ModelEntry
        from .engine import Model
        self._handle = replicas
        model = Model(model_path, vocab_only=True)
        self.entry = ModelEntry(name, model, _RemoteEngine(replicas, n_slots, n_ctx_slot, n_replicas))
        self.entry._embedder = _RemoteEmbedder(replicas, min(2048, model.n_ctx_train or 2048))
        self.api_key = api_key

    def __serve_build_asgi_app__(self):
        from .app import create_app
        return create_app([self.entry], api_key=self.api_key, close_on_shutdown=False)


def _int(args: Dict[str, Any], key: str, default: Optional[int]) -> Optional[int]:
    v = args.get(key)
    return default if v in (None, "") else int(v)


def build_app(args: Dict[str, Any]):
    """The application for `serve run llama_py.server.ray_app:build_app key=value ...`."""
    from ..pull import resolve_model
    model_path = resolve_model(args.get("model"), quiet=True)
    name = args.get("name") or os.path.splitext(os.path.basename(model_path))[0]
    n_slots = _int(args, "parallel", 4)
    n_ctx = _int(args, "n_ctx", None) or 2048 * n_slots
    threads = _int(args, "threads", None)
    num_cpus = float(args.get("num_cpus", 1))
    lo, hi = _int(args, "min_replicas", None), _int(args, "max_replicas", None)
    opts: Dict[str, Any] = {"ray_actor_options": {"num_cpus": num_cpus}}
    if lo is not None or hi is not None:
        opts["autoscaling_config"] = {"min_replicas": lo or 1, "max_replicas": hi or max(lo or 1, 1),
                                      "target_ongoing_requests": n_slots}
        n_replicas = hi or lo or 1
    else:
        n_replicas = _int(args, "replicas", 1)
        opts["num_replicas"] = n_replicas
    replicas = LlamaReplica.options(**opts).bind(model_path, name, n_slots, n_ctx, threads)
    return OpenAIIngress.options(ray_actor_options={"num_cpus": 0}).bind(
        replicas, model_path, name, n_slots, n_ctx // n_slots, n_replicas, args.get("api_key"))
