"""The serving engine: one model, one context with N slots (sequences), continuous batching.

    model = Model("model.gguf")
    engine = Engine(model, n_slots=4, n_ctx=8192)
    req = engine.submit(GenRequest(prompt_tokens=model.tokenize("Hello"), max_tokens=16))
    for ev in req.events():          # Event(kind="token"|"done"|"error", ...)
        ...
    engine.close(); model.close()

A scheduler thread owns the context. Each step it puts every generating slot's next token and
chunks of the prompts being read into ONE llama_decode, then samples each slot's output row
with that request's own sampler chain. While slots generate, prompts get at most prefill_chunk
tokens per step, so a long prompt arriving delays the running streams' tokens by a small step
each time instead of stalling them for a whole n_batch chunk. A slot is freed the moment its request finishes or is
cancelled; it keeps its KV cells, and a later request whose prompt shares a prefix with a free
slot's cached tokens reuses them (only the rest of the prompt is decoded); a prefix that a
running request has decoded is shared into the new request's sequence (llama_memory_seq_cp).

Each slot owns n_ctx / n_slots cells of the (unified) cache, as llama-server does, so running
requests never compete for cells: a request that cannot fit its slot is refused at submit().
"""
from __future__ import annotations

import collections
import ctypes
import itertools
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _load_guard
from .. import llama_cpp as C
from .._lib import LlamaError
from .._runtime import text as T
from .._runtime.logprobs import token_logprob
from .._runtime.sampling import SamplingParams, build_chain
from .._runtime.text import TextStream
from .lora import LoraAdapters, LoraKey
from .metrics import EngineMetrics

_SHARE_MIN = 16       # prompt tokens worth waiting a step for, to share them instead of decoding them


class QueueFull(RuntimeError):
    """The engine's queue of waiting requests is full (the server answers 429)."""


class EngineClosed(RuntimeError):
    """The engine is shutting down or stopped (the server answers 503)."""


class ContextOverflow(ValueError):
    """The request cannot fit a slot's share of the context (the server answers 400)."""


# ---------------------------------------------------------------------------------------------
# the model: weights, vocabulary and text helpers shared by every engine on it

class Model:
    """A loaded GGUF model (weights + vocab), shareable by several engines (contexts)."""

    def __init__(self, path: str, n_gpu_layers: int = 0, chat_format: Optional[str] = None,
                 vocab_only: bool = False):
        self.path = str(path)
        self.chat_format = chat_format
        params = C.llama_model_default_params()
        params.n_gpu_layers = n_gpu_layers
        params.vocab_only = vocab_only
        with _load_guard.guarded_load(params) as load:  # Ctrl-C cancels the load
            self._model = C.llama_model_load_from_file(self.path.encode(), params)
        if load.interrupted:
            self.close()
            raise KeyboardInterrupt
        if not self._model:
            raise LlamaError(f"failed to load model from {self.path}: {_load_guard.reason()}")
        self.vocab = C.llama_model_get_vocab(self._model)
        self.n_vocab = C.llama_vocab_n_tokens(self.vocab)
        self.n_embd = C.llama_model_n_embd(self._model)
        self.n_ctx_train = C.llama_model_n_ctx_train(self._model)
        self._pieces: Dict[int, bytes] = {}
        self._pieces_special: Dict[int, bytes] = {}
        self._eog: Dict[int, bool] = {}
        self._eog_list: Optional[List[int]] = None
        self._formatter = None

    @property
    def handle(self):
        if not self._model:
            raise LlamaError("the model is closed")
        return self._model

    def close(self) -> None:
        """Frees the weights; engines made on this model must be closed first."""
        if self._model:
            C.llama_model_free(self._model)
            self._model = None

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> List[int]:
        """Text to token ids (add_special: BOS where the model wants one)."""
        return T.tokenize(self.vocab, text.encode("utf-8"), add_special, parse_special)

    def piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (control tokens render as empty, or as their text with special)."""
        cache = self._pieces_special if special else self._pieces
        p = cache.get(token)
        if p is None:
            p = cache[token] = T.token_piece(self.vocab, token, special)
        return p

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Token ids to text (invalid UTF-8 shown as U+FFFD)."""
        return b"".join(self.piece(int(t)) for t in tokens).decode("utf-8", errors="replace")

    def is_eog(self, token: int) -> bool:
        e = self._eog.get(token)
        if e is None:
            e = self._eog[token] = bool(C.llama_vocab_is_eog(self.vocab, token))
        return e

    def eog_tokens(self) -> List[int]:
        """Every end-of-generation token of the vocabulary (computed once)."""
        if self._eog_list is None:
            self._eog_list = [t for t in range(self.n_vocab) if C.llama_vocab_is_eog(self.vocab, t)]
        return self._eog_list

    def valid_token(self, token: int) -> bool:
        return 0 <= token < self.n_vocab

    def formatter(self):
        """The chat formatter of this model (llama_py._runtime.chat), chosen on first use."""
        if self._formatter is None:
            from .chat import model_formatter
            self._formatter = model_formatter(self)
        return self._formatter

    def chat_prompt(self, messages: List[Dict[str, Any]], tools: Optional[list] = None,
                    tool_choice: Any = None) -> Tuple[str, bool, List[str]]:
        """Renders messages with the model's chat template; returns (prompt, add_special, stops)
        where add_special says whether tokenizing should still add BOS (False when the template
        wrote it) and stops are the format's end-of-turn strings."""
        from .chat import render_chat
        return render_chat(self, messages, tools, tool_choice)


# ---------------------------------------------------------------------------------------------
# requests and the events they produce

@dataclass
class Event:
    """What a request yields: a token (text may be empty while held back), then done or error."""
    kind: str                       # "token" | "done" | "error"
    text: str = ""
    token: int = -1
    logprob: Optional[float] = None
    top_logprobs: Optional[List[Tuple[int, float]]] = None
    finish_reason: Optional[str] = None
    usage: Optional[Dict[str, int]] = None
    message: str = ""
    status: int = 500               # for errors: the HTTP status that fits
    origin: str = ""                # who generated it (a Ray replica's id; empty when local)


_ids = itertools.count(1)


@dataclass
class GenRequest:
    """One generation. sink(event) is called from the scheduler thread; the default sink is a
    queue read by events(). notify(), when set, is called by the scheduler thread after a step
    sank events for this request, right before its next llama_decode (or before it goes idle):
    a sink that only buffers can then wake its consumer once per step, while the decode leaves
    it the GIL and the scheduler's own Python is done (one callable shared by many requests is
    called once)."""
    prompt_tokens: List[int]
    max_tokens: int = 16
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stop: List[str] = field(default_factory=list)
    logprobs: Optional[int] = None   # top-N alternatives to report per token (0: only the chosen one)
    special: bool = False            # control tokens rendered in the text (harmony chats)
    lora: Optional[Dict[int, float]] = None  # adapter id -> scale (unlisted: 0); None: the server's scales
    sink: Optional[Callable[[Event], None]] = None
    notify: Optional[Callable[[], None]] = None
    id: int = field(default_factory=lambda: next(_ids))

    def __post_init__(self):
        self.cancelled = False
        self.t_submit = time.perf_counter()
        self._queue: Optional[queue.Queue] = None
        if self.sink is None:
            self._queue = queue.Queue()
            self.sink = self._queue.put

    def cancel(self) -> None:
        """Asks the engine to drop this request; its slot is freed at the next step."""
        self.cancelled = True

    def events(self, timeout: Optional[float] = None):
        """Yields events until done/error (only with the default sink)."""
        if self._queue is None:
            raise RuntimeError("this request has its own sink")
        while True:
            ev = self._queue.get(timeout=timeout)
            yield ev
            if ev.kind != "token":
                return

    def result(self, timeout: Optional[float] = None) -> Tuple[str, Event]:
        """The whole text and the final event (default sink only)."""
        text, last = [], None
        for ev in self.events(timeout):
            text.append(ev.text)
            last = ev
        return "".join(text), last


# ---------------------------------------------------------------------------------------------
# slots

class _Slot:
    def __init__(self, sid: int):
        self.id = sid
        self.tokens: List[int] = []      # what the KV cache holds for this sequence, positions 0..
        self.req: Optional[GenRequest] = None
        self.todo: List[int] = []        # prompt tokens still to decode
        self.next_token: Optional[int] = None
        self.pending: List[int] = []     # tokens of this slot in the batch being decoded
        self.out_idx = -1                # its output row in that batch, -1 if none
        self.chain = None
        self.stream: Optional[TextStream] = None
        self.n_gen = 0
        self.n_prompt = 0
        self.t_first: Optional[float] = None
        self.last_used = 0.0
        self.admitted = 0
        self.lora: LoraKey = ()          # the adapters its cells were computed with
        self.lora_set: LoraKey = ()      # the adapters set on its sequence now (cleared when idle: no cost)
        self.alora: Optional[int] = None  # where its cells' aLoRA applied from (None: no aLoRA, -1: nowhere)
        self.draft: List[int] = []       # drafted tokens decoded after next_token in this step's batch
        # hybrid models: (n, bytes) the recurrent state after the first n tokens (the end of the
        # last prompt), a checkpoint to cut back to (a state cannot be cut mid-way)
        self.ckpt: Optional[Tuple[int, bytes]] = None


def _alora_keep(n: int, a: Optional[int], b: Optional[int], n_ctx: int) -> int:
    """Cells of a prefix of n computed with aLoRA start a that serve a request with start b: those
    before the first position where the two activations differ."""
    ea, eb = (x if x is not None and x >= 0 else n_ctx for x in (a, b))
    return n if ea == eb else min(n, ea, eb)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Engine:
    """N slots of one context on a Model, driven by a scheduler thread."""

    calls_notify = True  # honours GenRequest.notify (an engine without this attribute may not)

    def __init__(self, model: Model, n_slots: int = 4, n_ctx: Optional[int] = None, n_batch: int = 512,
                 n_threads: Optional[int] = None, max_queue: int = 64, name: str = "model",
                 prefill_chunk: int = 64, loras: Sequence[Tuple[str, float]] = (), draft: Optional[str] = None,
                 n_draft: int = 8, swa_full: bool = False):
        if not isinstance(n_slots, int) or not 1 <= n_slots <= 64:
            raise ValueError(f"n_slots must be an integer in [1, 64], got {n_slots!r}")
        if not isinstance(prefill_chunk, int) or prefill_chunk < 1:
            raise ValueError(f"prefill_chunk must be a positive integer, got {prefill_chunk!r}")
        if n_ctx is None:
            n_ctx = min(2048, model.n_ctx_train or 2048) * n_slots
        if not isinstance(n_ctx, int) or n_ctx < 16 * n_slots:
            raise ValueError(f"n_ctx must be an integer >= 16 * n_slots ({16 * n_slots}), got {n_ctx!r}")
        self.model = model
        self.name = name
        self.max_queue = max_queue
        p = C.llama_context_default_params()
        p.n_ctx = n_ctx
        p.n_batch = max(n_batch, n_slots)
        p.n_ubatch = p.n_batch
        p.n_seq_max = n_slots
        # as llama-server: sliding-window layers keep about a window per slot, not n_ctx cells; a
        # reused prefix whose window cells are gone is decoded again (see _swa_prefix_ok)
        p.swa_full = swa_full
        if n_threads:
            p.n_threads = p.n_threads_batch = n_threads
        self.loras = LoraAdapters(model, loras)  # LoRA adapters, set per sequence (server/lora.py)
        self._ctx = C.llama_init_from_model(model.handle, p)
        if not self._ctx:
            self.loras.close()
            raise LlamaError(f"failed to create a context of {n_ctx} cells and {n_slots} sequences")
        self._mem = C.llama_get_memory(self._ctx)
        # recurrent state (hybrid models): a sequence's state is copied whole or not at all, so
        # slots do not share prompt prefixes
        self._recurrent = bool(C.llama_model_is_hybrid(model.handle) or C.llama_model_is_recurrent(model.handle))
        self._n_swa = int(C.llama_model_n_swa(model.handle)) if not swa_full else 0
        self.n_ctx = C.llama_n_ctx(self._ctx)
        self.n_batch = C.llama_n_batch(self._ctx)
        self.n_slots = n_slots
        # prompt tokens per step while other slots generate: a step costs about its tokens, so a
        # long prompt read n_batch tokens at a time would hold every running stream's next token
        # for that long; in chunks of this size it rides along (a slot alone gets n_batch)
        self.prefill_chunk = prefill_chunk
        self.n_ctx_slot = self.n_ctx // n_slots
        # speculative decoding (server/speculate.py): a draft model's path, or "ngram" (prompt lookup)
        self.drafter = None
        self.n_draft = n_draft
        if draft is not None:
            try:
                self.drafter = self._make_drafter(draft, n_draft, n_threads)
            except BaseException:
                C.llama_free(self._ctx)
                self.loras.close()
                raise
        self._batch = C.llama_batch_init(self.n_batch, 0, 1)
        self._slots = [_Slot(i) for i in range(n_slots)]
        self._pending: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._step_lock = threading.Lock()  # held while the scheduler touches the context
        self._closing = False
        self._admit_count = 0
        self._to_notify: Dict[Callable[[], None], None] = {}  # ordered, one entry per callable
        self.metrics = EngineMetrics()
        self._thread = threading.Thread(target=self._run, name=f"llama_py-engine-{name}", daemon=True)
        self._thread.start()

    # ---- public ----

    def submit(self, req: GenRequest) -> GenRequest:
        """Queues req; raises ContextOverflow, QueueFull or EngineClosed (nothing is queued then)."""
        n = len(req.prompt_tokens)
        if n == 0:
            raise ContextOverflow("the prompt is empty (0 tokens)")
        for t in req.prompt_tokens:
            if not self.model.valid_token(t):
                raise ValueError(f"token id {t} is out of range [0, {self.model.n_vocab})")
        if n >= self.n_ctx_slot:
            raise ContextOverflow(f"the prompt has {n} tokens; a slot holds at most {self.n_ctx_slot} tokens "
                                  f"(context {self.n_ctx} / {self.n_slots} slots), prompt and completion together")
        if n + req.max_tokens > self.n_ctx_slot:
            raise ContextOverflow(f"the prompt ({n} tokens) and max_tokens ({req.max_tokens}) need "
                                  f"{n + req.max_tokens} tokens; a slot holds at most {self.n_ctx_slot} "
                                  f"(context {self.n_ctx} / {self.n_slots} slots)")
        req._lora = self.loras.resolve(req.lora)  # ValueError for an unknown adapter id
        req._alora = self.loras.alora_start(req._lora, req.prompt_tokens)  # ValueError for two aLoRAs
        chain = self._make_chain(req)  # fails here (ValueError) on a bad grammar, before queuing
        with self._cv:
            if self._closing:
                C.llama_sampler_free(chain)
                raise EngineClosed("the engine is shutting down")
            if len(self._pending) >= self.max_queue:
                C.llama_sampler_free(chain)
                raise QueueFull(f"{len(self._pending)} requests are already waiting (queue limit {self.max_queue})")
            req._chain = chain
            self._pending.append(req)
            self.metrics.queue_depth = len(self._pending)
            self._cv.notify()
        return req

    def limit_for(self, n_prompt: int) -> int:
        """The most tokens a request with n_prompt prompt tokens may generate."""
        return max(0, self.n_ctx_slot - n_prompt)

    def stats(self) -> Dict[str, Any]:
        """Slots, queue and cache figures (read without stopping the scheduler)."""
        busy = sum(1 for s in self._slots if s.req is not None)
        return {"slots_total": self.n_slots, "slots_busy": busy, "queue_depth": len(self._pending),
                "kv_cells_total": self.n_ctx, "kv_cells_used": sum(len(s.tokens) for s in self._slots),
                "kv_cells_active": sum(len(s.tokens) for s in self._slots if s.req is not None)}

    def kv_cells_in_cache(self) -> int:
        """Cells the C cache holds per its own bookkeeping (pos_max - pos_min + 1 per sequence)."""
        with self._step_lock:
            n = 0
            for s in range(self.n_slots):
                hi = C.llama_memory_seq_pos_max(self._mem, s)
                if hi >= 0:
                    n += hi - C.llama_memory_seq_pos_min(self._mem, s) + 1
            return n

    def clear_cache(self) -> None:
        """Drops the cached tokens of every free slot (busy slots keep theirs)."""
        with self._step_lock, self._cv:
            for s in self._slots:
                if s.req is None:
                    C.llama_memory_seq_rm(self._mem, s.id, -1, -1)
                    s.tokens, s.ckpt = [], None

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """True once no request is queued or running."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = self.stats()
            if st["slots_busy"] == 0 and st["queue_depth"] == 0:
                return True
            time.sleep(0.01)
        return False

    def close(self) -> None:
        """Stops the scheduler (queued and running requests end with an error) and frees the context."""
        with self._cv:
            if self._closing and self._ctx is None:
                return
            self._closing = True
            self._cv.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()
        for req in list(self._pending):
            self._fail(req, "the engine was shut down")
        self._pending.clear()
        self._notify_all()
        if self._ctx:
            C.llama_batch_free(self._batch)
            C.llama_free(self._ctx)
            self._ctx = None
            self.loras.close()
            if self.drafter is not None:
                self.drafter.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _make_drafter(self, draft: str, n_draft: int, n_threads: Optional[int]):
        from .speculate import LookupDrafter, ModelDrafter
        if not isinstance(n_draft, int) or not 1 <= n_draft <= 64:
            raise ValueError(f"n_draft must be an integer in [1, 64], got {n_draft!r}")
        if self._recurrent:
            raise ValueError(f"{self.model.path} keeps a recurrent state (hybrid / recurrent model): rejected "
                             "drafts could not be cut from it, so it cannot speculate (drop --draft-model)")
        if draft == "ngram":
            return LookupDrafter()
        return ModelDrafter(draft, self.model, self.n_slots, self.n_ctx_slot, n_threads)

    def _drafts(self, gen: List[_Slot], budget: int) -> Dict[int, List[int]]:
        """Drafts for the generating slots gen, sharing budget batch rows; none if drafting fails."""
        if self.drafter is None or not gen:
            return {}
        per = budget // len(gen)
        limit = {s.id: max(0, min(self.n_draft, per, s.req.max_tokens - s.n_gen - 1,
                                  self.n_ctx_slot - len(s.tokens) - 2)) for s in gen}
        try:
            return self.drafter.propose({s.id: s.tokens + [s.next_token] for s in gen}, limit)
        except Exception as e:  # a draft is an optimization: the step goes on without one
            self.metrics.draft_failures += 1
            self.drafter.reset()
            self.last_draft_error = f"{type(e).__name__}: {e}"
            return {}

    # ---- sampler chains ----

    def _make_chain(self, req: GenRequest):
        return build_chain(self.model.vocab, self.model.n_vocab, req.sampling, req.prompt_tokens,
                           n_ctx=self.n_ctx_slot, eog_tokens=self.model.eog_tokens)

    # ---- the scheduler ----

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._closing and not self._pending and not any(s.req for s in self._slots):
                    self._notify_all()  # no decode to wait for: deliver what the last step made now
                    self._cv.wait()
                if self._closing:
                    break
                self._admit()
            try:
                with self._step_lock:
                    self._step()
            except Exception as e:  # never let one bad step stop the engine
                for s in self._slots:
                    if s.req is not None:
                        # what the cache holds for it is uncertain now: drop it
                        C.llama_memory_seq_rm(self._mem, s.id, -1, -1)
                        s.tokens, s.ckpt = [], None
                        self._finish(s, None, error=f"internal error: {type(e).__name__}: {e}")
        for s in self._slots:
            if s.req is not None:
                self._finish(s, None, error="the engine was shut down")
        self._notify_all()

    def _admit(self) -> None:
        """Moves waiting requests into free slots. A request reuses the longest prefix of its
        prompt found either in a free slot's own cache (that slot is taken) or in a running
        slot's decoded tokens (those cells are shared into the free slot, llama_memory_seq_cp).
        A request sharing much more with a prompt still being read waits for it to be read (a
        step or so) instead of reading the same tokens again: this is what makes n > 1 and
        bursts with one system prompt cheap."""
        deferred = []
        while self._pending:
            free = [s for s in self._slots if s.req is None]
            if not free:
                break
            req = self._pending.popleft()
            if req.cancelled:
                self._fail(req, None)
                continue
            prompt = req.prompt_tokens
            key = req._lora
            best, best_n = None, -1
            for s in free:
                # cells computed with other adapters hold other values: no prefix to reuse
                n = _common_prefix(s.tokens, prompt) if s.lora == key else 0
                n = _alora_keep(n, s.alora, req._alora, self.n_ctx)
                if n > best_n or (n == best_n and s.last_used < best.last_used):
                    best, best_n = s, n
            donor, donor_n, wait = None, 0, False
            for s in self._slots:
                if s.req is None or s.lora != key:
                    continue
                n = _alora_keep(_common_prefix(s.tokens, prompt), s.alora, req._alora, self.n_ctx)
                if n > donor_n:
                    donor, donor_n = s, n
                if s.todo and len(s.tokens) < len(prompt) and \
                        _common_prefix(s.req.prompt_tokens, prompt) >= max(best_n, n) + _SHARE_MIN:
                    wait = True
            if wait:
                deferred.append(req)
                continue
            keep_own = min(best_n, len(prompt) - 1)  # decode at least one token: its logits
            keep_shared = min(donor_n, len(prompt) - 1)
            if donor is not None and keep_shared > keep_own and not self._recurrent and \
                    self._swa_prefix_ok(donor.id, keep_shared):
                C.llama_memory_seq_rm(self._mem, best.id, -1, -1)
                C.llama_memory_seq_cp(self._mem, donor.id, best.id, 0, keep_shared)
                best.tokens = donor.tokens[:keep_shared]
                keep = keep_shared
                self.metrics.prefix_shared += 1
            else:
                keep = keep_own
                if not C.llama_memory_seq_rm(self._mem, best.id, keep, -1):
                    # a recurrent state (hybrid models) is kept whole or not at all: back to the
                    # checkpoint at the end of the last prompt when it is a prefix, else nothing
                    keep = self._restore_checkpoint(best, keep)
                best.tokens = best.tokens[:keep]
                if best.ckpt is not None and best.ckpt[0] > keep:
                    best.ckpt = None
            self.metrics.prefix_lookup(len(prompt), keep)
            if best.lora_set != key:
                try:
                    self.loras.apply(self._ctx, best.id, key)
                except LlamaError as e:
                    self._fail(req, str(e))
                    continue
                best.lora_set = key
            if req._alora is not None and C.llama_set_alora_start(self._ctx, best.id, req._alora) != 0:
                self._fail(req, "llama_set_alora_start failed (see the log)")
                continue
            best.lora = key
            best.alora = req._alora
            best.req = req
            best.todo = list(prompt[keep:])
            best.next_token = None
            best.chain = req._chain
            req._chain = None
            best.stream = TextStream(req.stop)
            best.n_gen = 0
            best.n_prompt = len(prompt)
            best.t_first = None
            self._admit_count += 1
            best.admitted = self._admit_count
        self._pending.extendleft(reversed(deferred))
        self.metrics.queue_depth = len(self._pending)

    def _step(self) -> None:
        for s in self._slots:
            if s.req is not None and s.req.cancelled:
                self._finish(s, "cancelled")
        active = [s for s in self._slots if s.req is not None]
        if not active:
            return
        batch = self._batch
        C.llama_batch_clear(batch)
        gen = [s for s in active if s.next_token is not None]
        # drafts take the rows the tokens leave, less a prompt chunk while prompts wait
        room = self.n_batch - len(gen)
        drafts = self._drafts(gen, room - min(room, self.prefill_chunk) if any(s.todo for s in active) else room)
        n = 0
        for s in active:
            s.pending, s.out_idx, s.draft = [], -1, []
            if s.next_token is not None:
                self._add(batch, n, s.next_token, len(s.tokens), s.id, True)
                s.pending.append(s.next_token)
                s.out_idx = n
                n += 1
                s.draft = drafts.get(s.id, [])
                for k, t in enumerate(s.draft):     # verified by the rows' samples after the decode
                    self._add(batch, n, t, len(s.tokens) + 1 + k, s.id, True)
                    n += 1
        n_gen = len(gen)
        budget = self.n_batch - n if n_gen == 0 else min(self.n_batch - n, self.prefill_chunk)
        for s in sorted((s for s in active if s.todo), key=lambda s: s.admitted):
            if budget <= 0:
                break
            take = s.todo[:budget]
            base = len(s.tokens)
            last = len(take) == len(s.todo)
            for k, t in enumerate(take):
                self._add(batch, n, t, base + k, s.id, last and k == len(take) - 1)
                n += 1
            if last:
                s.out_idx = n - 1
            s.pending = take
            budget -= len(take)
        batch.n_tokens = n
        self._notify_all()
        t0 = time.perf_counter()
        rc = C.llama_decode(self._ctx, batch)
        dt = time.perf_counter() - t0
        if rc != 0:
            for s in active:
                C.llama_memory_seq_rm(self._mem, s.id, -1, -1)
                s.tokens, s.ckpt = [], None
                self._finish(s, None, error=f"llama_decode failed ({rc})")
            return
        now = time.perf_counter()
        g0 = self.metrics.generated
        for s in active:
            s.tokens.extend(s.pending)
            if s.todo:
                del s.todo[:len(s.pending)]
                if not s.todo and self._recurrent:
                    self._save_checkpoint(s)
            s.pending = []
            if s.draft:
                self._verify(s, now)
            elif s.out_idx >= 0:
                self._sample(s, s.out_idx, now)
        # tokens made this step (with drafts, more than the slots that generated)
        self.metrics.step(n, max(n_gen, self.metrics.generated - g0), dt)

    def _verify(self, s: _Slot, now: float) -> None:
        """Samples s's rows in order as if decoded one by one: each sample equal to its draft is
        kept (its cell is already written) and the next row is sampled; the first that differs,
        or the request's end, ends the round, and the cells of the drafts after it are dropped."""
        d, s.draft = s.draft, []
        self.metrics.drafted += len(d)
        for i in range(len(d) + 1):
            self._sample(s, s.out_idx + i, now)
            if s.req is None or i == len(d) or s.next_token != d[i]:
                break
            s.tokens.append(d[i])
            s.next_token = None
            self.metrics.draft_accepted += 1
        C.llama_memory_seq_rm(self._mem, s.id, len(s.tokens), -1)

    def _swa_prefix_ok(self, sid: int, n: int) -> bool:
        """Whether sequence sid's cells still hold what decoding at position n needs: with the
        window cache, the window before n (llama-server's pos_min > n - n_swa test)."""
        return self._n_swa <= 0 or C.llama_memory_seq_pos_min(self._mem, sid) <= max(0, n - self._n_swa)

    def _save_checkpoint(self, s: _Slot) -> None:
        """Keeps the slot's recurrent state at the end of its prompt (llama-server's context checkpoint)."""
        flag = C.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
        n = C.llama_state_seq_get_size_ext(self._ctx, s.id, flag)
        buf = (ctypes.c_uint8 * max(n, 1))()
        ok = n > 0 and C.llama_state_seq_get_data_ext(self._ctx, buf, n, s.id, flag) == n
        s.ckpt = (len(s.tokens), bytes(buf)) if ok else None

    def _restore_checkpoint(self, s: _Slot, keep: int) -> int:
        """Cuts s back to its checkpoint when that is within the keep tokens wanted; else empties
        it. Returns how many tokens s keeps."""
        ck = s.ckpt
        if ck is not None and ck[0] <= keep:
            buf = (ctypes.c_uint8 * len(ck[1])).from_buffer_copy(ck[1])
            flag = C.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
            if C.llama_state_seq_set_data_ext(self._ctx, buf, len(ck[1]), s.id, flag) == len(ck[1]) and \
                    C.llama_memory_seq_rm(self._mem, s.id, ck[0], -1):
                self.metrics.checkpoints_restored += 1
                return ck[0]
        C.llama_memory_seq_rm(self._mem, s.id, -1, -1)
        s.ckpt = None
        return 0

    @staticmethod
    def _add(batch, i: int, token: int, pos: int, seq: int, out: bool) -> None:
        batch.token[i] = token
        batch.pos[i] = pos
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq
        batch.logits[i] = 1 if out else 0

    def _sample(self, s: _Slot, idx: int, now: float) -> None:
        req = s.req
        lp, top = None, None
        if req.logprobs is not None:
            ptr = C.llama_get_logits_ith(self._ctx, idx)
            logits = np.ctypeslib.as_array(ptr, shape=(self.model.n_vocab,)).copy()
        tok = C.llama_sampler_sample(s.chain, self._ctx, idx)
        if s.t_first is None:
            s.t_first = now
            self.metrics.first_token(now - req.t_submit)
        if req.logprobs is not None:
            lp, top = token_logprob(logits, tok, req.logprobs)
            top = top if req.logprobs > 0 else None
        if self.model.is_eog(tok):
            self._finish(s, "stop")
            return
        s.n_gen += 1
        self.metrics.generated += 1
        text, stopped = s.stream.push(self.model.piece(tok, True) if req.special else self.model.piece(tok))
        self._emit(req, Event("token", text=text, token=tok, logprob=lp, top_logprobs=top))
        if stopped:
            self._finish(s, "stop")
        elif s.n_gen >= req.max_tokens or len(s.tokens) + 1 >= self.n_ctx_slot:
            self._finish(s, "length")
        else:
            s.next_token = tok

    def _finish(self, s: _Slot, reason: Optional[str], error: Optional[str] = None) -> None:
        if s.lora_set:
            # an idle sequence's adapters would still be computed for every step's rows: unset
            # them (its cells keep what they were computed with: s.lora)
            try:
                self.loras.apply(self._ctx, s.id, ())
                s.lora_set = ()
            except LlamaError:
                pass
        req = s.req
        s.req = None
        s.todo, s.pending, s.next_token, s.draft = [], [], None, []
        s.last_used = time.perf_counter()
        if s.chain:
            C.llama_sampler_free(s.chain)
            s.chain = None
        usage = {"prompt_tokens": s.n_prompt, "completion_tokens": s.n_gen, "total_tokens": s.n_prompt + s.n_gen}
        self.metrics.finished(reason or "error", s.last_used - req.t_submit, s.n_prompt)
        try:
            if error is not None:
                self._emit(req, Event("error", message=error, usage=usage))
                return
            tail = s.stream.flush() if reason != "stop" else ""
            self._emit(req, Event("done", text=tail, finish_reason=reason, usage=usage))
        except Exception:
            pass  # a consumer gone away must not stop the engine
        finally:
            with self._cv:
                self._cv.notify_all()

    def _emit(self, req: GenRequest, ev: Event) -> None:
        req.sink(ev)
        if req.notify is not None:
            self._to_notify[req.notify] = None

    def _notify_all(self) -> None:
        if not self._to_notify:
            return
        fns = list(self._to_notify)
        self._to_notify.clear()
        for fn in fns:
            try:
                fn()
            except Exception:
                pass  # a consumer gone away must not stop the engine

    def _fail(self, req: GenRequest, message: Optional[str]) -> None:
        if getattr(req, "_chain", None):
            C.llama_sampler_free(req._chain)
            req._chain = None
        try:
            self._emit(req, Event("error", message=message or "cancelled before it started"))
        except Exception:
            pass
