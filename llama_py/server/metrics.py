"""Counters, gauges and histograms of the server, rendered as Prometheus text (format 0.0.4).

Engines count from their scheduler thread and the HTTP layer from the event loop; each value
is a plain int/float updated under the GIL, and a scrape reads them without stopping anyone.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Dict, Iterable, List, Tuple

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Histogram:
    """Cumulative-bucket histogram (Prometheus semantics: each bucket counts values <= its bound)."""

    def __init__(self, buckets: Iterable[float] = LATENCY_BUCKETS):
        self.bounds = tuple(buckets)
        self.counts = [0] * len(self.bounds)
        self.sum = 0.0
        self.count = 0
        self._lock = threading.Lock()

    def observe(self, v: float) -> None:
        with self._lock:
            for i, b in enumerate(self.bounds):
                if v <= b:
                    self.counts[i] += 1
            self.sum += v
            self.count += 1

    def lines(self, name: str, labels: str) -> List[str]:
        sep = "," if labels else ""
        out = [f'{name}_bucket{{{labels}{sep}le="{b:g}"}} {c}' for b, c in zip(self.bounds, self.counts)]
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        out.append(f"{name}_sum{{{labels}}} {self.sum:.6f}")
        out.append(f"{name}_count{{{labels}}} {self.count}")
        return out


class EngineMetrics:
    """What one engine counts: tokens, steps, prefix-cache reuse, finishes, latencies."""

    def __init__(self):
        self.prompt_tokens = 0          # prompt tokens of finished requests
        self.prompt_tokens_decoded = 0  # prompt tokens actually decoded (the rest came from the cache)
        self.generated = 0
        self.steps = 0
        self.batch_tokens = 0
        self.decode_seconds = 0.0
        self.queue_depth = 0
        self.prefix_lookups = 0
        self.prefix_hits = 0
        self.prefix_tokens_reused = 0
        self.prefix_shared = 0          # hits served from a running request's cells
        self.checkpoints_restored = 0   # hybrid models: prefixes cut back to a recurrent-state checkpoint
        self.drafted = 0                # speculative decoding: draft tokens verified
        self.draft_accepted = 0         # ... and accepted
        self.draft_failures = 0         # steps whose drafting failed (they went on without drafts)
        self.finish: Dict[str, int] = collections.Counter()
        self.latency = Histogram()
        self.ttft = Histogram()
        self._recent: collections.deque = collections.deque()  # (time, generated tokens) per step
        self._lock = threading.Lock()

    def prefix_lookup(self, n_prompt: int, n_reused: int) -> None:
        self.prefix_lookups += 1
        if n_reused > 0:
            self.prefix_hits += 1
            self.prefix_tokens_reused += n_reused
        self.prompt_tokens_decoded += n_prompt - n_reused

    def step(self, n_tokens: int, n_gen: int, seconds: float) -> None:
        self.steps += 1
        self.batch_tokens += n_tokens
        self.decode_seconds += seconds
        now = time.monotonic()
        with self._lock:
            self._recent.append((now, n_gen))
            while self._recent and self._recent[0][0] < now - 10.0:
                self._recent.popleft()

    def first_token(self, seconds: float) -> None:
        self.ttft.observe(seconds)

    def finished(self, reason: str, seconds: float, n_prompt: int) -> None:
        self.finish[reason] += 1
        self.prompt_tokens += n_prompt
        self.latency.observe(seconds)

    def tokens_per_second(self) -> float:
        """Generated tokens per second over the last 10 seconds."""
        now = time.monotonic()
        with self._lock:
            recent = [(t, n) for t, n in self._recent if t >= now - 10.0]
        if not recent:
            return 0.0
        span = max(now - recent[0][0], 1e-3)
        return sum(n for _, n in recent) / span


class ServerMetrics:
    """HTTP-level counts: requests by endpoint and status, request latency by endpoint."""

    def __init__(self):
        self.requests: Dict[Tuple[str, int], int] = collections.Counter()
        self.latency: Dict[str, Histogram] = {}
        self.started = time.time()

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests[(endpoint, status)] += 1
        h = self.latency.get(endpoint)
        if h is None:
            h = self.latency[endpoint] = Histogram()
        h.observe(seconds)


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(server: ServerMetrics, engines: Dict[str, "object"]) -> str:
    """The Prometheus exposition text for the server and every engine (label model=NAME)."""
    out: List[str] = []

    def head(name: str, kind: str, doc: str) -> None:
        out.append(f"# HELP {name} {doc}")
        out.append(f"# TYPE {name} {kind}")

    head("llama_py_http_requests_total", "counter", "HTTP requests by endpoint and status code")
    for (ep, st), n in sorted(server.requests.items()):
        out.append(f'llama_py_http_requests_total{{endpoint="{_esc(ep)}",status="{st}"}} {n}')
    head("llama_py_http_request_duration_seconds", "histogram", "HTTP request latency by endpoint")
    for ep, h in sorted(server.latency.items()):
        out += h.lines("llama_py_http_request_duration_seconds", f'endpoint="{_esc(ep)}"')

    per_model = [(name, eng, eng.metrics, eng.stats()) for name, eng in engines.items()]

    def gauge_or_counter(name: str, kind: str, doc: str, value_of) -> None:
        head(name, kind, doc)
        for mname, eng, m, st in per_model:
            v = value_of(eng, m, st)
            out.append(f'{name}{{model="{_esc(mname)}"}} {v:.6g}' if isinstance(v, float)
                       else f'{name}{{model="{_esc(mname)}"}} {v}')

    gauge_or_counter("llama_py_prompt_tokens_total", "counter", "prompt tokens of finished requests",
                     lambda e, m, s: m.prompt_tokens)
    gauge_or_counter("llama_py_prompt_tokens_decoded_total", "counter",
                     "prompt tokens decoded (not taken from the prefix cache)", lambda e, m, s: m.prompt_tokens_decoded)
    gauge_or_counter("llama_py_generated_tokens_total", "counter", "generated tokens", lambda e, m, s: m.generated)
    gauge_or_counter("llama_py_tokens_per_second", "gauge", "generated tokens per second over the last 10 s",
                     lambda e, m, s: float(m.tokens_per_second()))
    gauge_or_counter("llama_py_decode_steps_total", "counter", "llama_decode calls of the scheduler",
                     lambda e, m, s: m.steps)
    gauge_or_counter("llama_py_batch_tokens_total", "counter", "tokens put into those llama_decode calls",
                     lambda e, m, s: m.batch_tokens)
    gauge_or_counter("llama_py_decode_seconds_total", "counter", "time spent in llama_decode",
                     lambda e, m, s: float(m.decode_seconds))
    gauge_or_counter("llama_py_draft_tokens_total", "counter", "speculative decoding: drafted tokens verified",
                     lambda e, m, s: m.drafted)
    gauge_or_counter("llama_py_draft_tokens_accepted_total", "counter", "drafted tokens the target's sampling accepted",
                     lambda e, m, s: m.draft_accepted)
    gauge_or_counter("llama_py_draft_acceptance_rate", "gauge", "accepted / drafted tokens",
                     lambda e, m, s: float(m.draft_accepted / m.drafted if m.drafted else 0.0))
    gauge_or_counter("llama_py_queue_depth", "gauge", "requests waiting for a slot", lambda e, m, s: s["queue_depth"])
    gauge_or_counter("llama_py_slots_busy", "gauge", "slots running a request", lambda e, m, s: s["slots_busy"])
    gauge_or_counter("llama_py_slots_total", "gauge", "slots of the context", lambda e, m, s: s["slots_total"])
    gauge_or_counter("llama_py_kv_cells_used", "gauge", "KV cells holding tokens, per sequence (running and cached prefixes; a shared cell counts once per sequence)",
                     lambda e, m, s: s["kv_cells_used"])
    gauge_or_counter("llama_py_kv_cells_active", "gauge", "KV cells of running requests",
                     lambda e, m, s: s["kv_cells_active"])
    gauge_or_counter("llama_py_kv_cells_total", "gauge", "KV cells of the context", lambda e, m, s: s["kv_cells_total"])
    gauge_or_counter("llama_py_prefix_cache_lookups_total", "counter", "requests matched against cached prefixes",
                     lambda e, m, s: m.prefix_lookups)
    gauge_or_counter("llama_py_prefix_cache_hits_total", "counter", "requests that reused cached tokens",
                     lambda e, m, s: m.prefix_hits)
    gauge_or_counter("llama_py_prefix_cache_shared_total", "counter",
                     "hits whose cells came from a running request (shared, not copied)",
                     lambda e, m, s: m.prefix_shared)
    gauge_or_counter("llama_py_prefix_cache_reused_tokens_total", "counter", "prompt tokens taken from the cache",
                     lambda e, m, s: m.prefix_tokens_reused)
    gauge_or_counter("llama_py_prefix_cache_hit_rate", "gauge", "hits / lookups",
                     lambda e, m, s: float(m.prefix_hits / m.prefix_lookups if m.prefix_lookups else 0.0))
    gauge_or_counter("llama_py_prefix_cache_token_hit_rate", "gauge", "reused prompt tokens / all prompt tokens",
                     lambda e, m, s: float(m.prefix_tokens_reused /
                                           max(1, m.prefix_tokens_reused + m.prompt_tokens_decoded)))
    head("llama_py_requests_finished_total", "counter", "generations by finish reason (stop, length, cancelled, error)")
    for mname, eng, m, st in per_model:
        for reason, n in sorted(m.finish.items()):
            out.append(f'llama_py_requests_finished_total{{model="{_esc(mname)}",reason="{_esc(reason)}"}} {n}')
    head("llama_py_request_duration_seconds", "histogram", "generation latency, submit to finish")
    for mname, eng, m, st in per_model:
        out += m.latency.lines("llama_py_request_duration_seconds", f'model="{_esc(mname)}"')
    head("llama_py_time_to_first_token_seconds", "histogram", "submit to first sampled token")
    for mname, eng, m, st in per_model:
        out += m.ttft.lines("llama_py_time_to_first_token_seconds", f'model="{_esc(mname)}"')
    return "\n".join(out) + "\n"
