"""High-level API: the `Llama` class, a drop-in for llama-cpp-python's (0.3.36).

    from llama_py import Llama
    with Llama("model.gguf", n_ctx=2048) as llm:
        out = llm.create_completion("The capital of France is", max_tokens=16)
        print(out["choices"][0]["text"])

The constructor takes every keyword of llama-cpp-python's, with its defaults; keywords whose
feature this engine lacks are ignored with one warning when ignoring them cannot change the
output (GPU placement, NUMA, mlock, ...) and raise NotImplementedError naming them when it would
(lora_path). Unknown keywords (obsolete ones frameworks still pass: f16_kv, n_parts) warn.

The model, context and sampler are C objects owned by this object: `close()` (or the context
manager, or garbage collection) frees them in dependency order (sampler, context, model).
Per-token work stays in C: one decode call and one sample call per generated token.
Completions live in _llama_completion.py, chat in _llama_chat.py, embeddings in _llama_embed.py.
"""
from __future__ import annotations

import ctypes
import fnmatch
import glob
import os
import sys
import warnings
from typing import Any, Callable, Dict, Generator, List, Optional, Sequence, Union

import numpy as np

from . import _load_guard
from . import llama_cpp as C
from ._lib import LlamaError
from ._llama_chat import _ChatMixin
from ._llama_completion import _CompletionMixin
from ._runtime import text as T
from ._runtime.sampling import SamplingParams, build_chain
from ._runtime.text import TextStream as _TextStream  # noqa: F401 (the old private name)
from ._llama_embed import _EmbedMixin
from .llama_cache import BaseLlamaCache, LlamaCache, LlamaDiskCache, LlamaRAMCache  # noqa: F401
from .llama_speculative import LlamaDraftModel
from .llama_tokenizer import BaseLlamaTokenizer, LlamaTokenizer
from .grammar import LlamaGrammar
from .llama_types import *  # noqa: F401,F403

__all__ = ["Llama", "LlamaState", "LogitsProcessorList", "StoppingCriteriaList", "MinTokensLogitsProcessor",
           "LlamaGrammar", "LlamaTokenizer", "BaseLlamaTokenizer", "LlamaRAMCache", "LlamaDiskCache", "LlamaCache",
           "BaseLlamaCache", "LogitsProcessor", "StoppingCriteria"]

_PAD_CTX = 256  # llama.cpp rounds the context up to a multiple of this


class ModelPathError(FileNotFoundError, ValueError):
    """The model file does not exist (a ValueError as in llama-cpp-python, and a FileNotFoundError)."""


def _physical_cores() -> int:
    try:
        from . import ggml
        return max(1, int(ggml.ggml_cpu_n_physical_cores()))
    except Exception:
        return max(1, (os.cpu_count() or 2) // 2)


# One log callback per verbosity, kept alive for the process: the library may call the one
# installed last at any time, and a Llama object may be collected before the next is made.
_log_callbacks: Dict[bool, Any] = {}


def _install_logger(verbose: bool) -> None:
    cb = _log_callbacks.get(verbose)
    if cb is None:
        def write(level, text, user_data):
            _load_guard.note_log(level, text)  # a failed load's reason goes into its exception
            if verbose and text:
                sys.stderr.write(text.decode("utf-8", errors="replace"))
        cb = _log_callbacks[verbose] = C.llama_log_callback(write)
    C.llama_log_set(cb, None)


_warned: set = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


# ---- callables applied while sampling (llama-cpp-python's names and calling conventions) ----

LogitsProcessor = Callable[[np.ndarray, np.ndarray], np.ndarray]
StoppingCriteria = Callable[[np.ndarray, np.ndarray], bool]


class LogitsProcessorList(List[LogitsProcessor]):
    """Processors applied in order: each gets (token ids so far, scores) and returns new scores."""

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class StoppingCriteriaList(List[StoppingCriteria]):
    """Generation stops when any criterion, given (token ids including the new one, its logits), is true."""

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> bool:
        return any(criterion(input_ids, logits) for criterion in self)


class MinTokensLogitsProcessor:
    """Forbids token_eos until min_tokens tokens follow the prompt (the ids seen on the first call)."""

    def __init__(self, min_tokens: int, token_eos: int):
        self.min_tokens = min_tokens
        self.token_eos = token_eos
        self.prompt_tokens: Optional[int] = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self.prompt_tokens is None:
            self.prompt_tokens = len(input_ids)
        if len(input_ids) - self.prompt_tokens < self.min_tokens:
            scores[self.token_eos] = -np.inf
        return scores


class LlamaState:
    """A saved context: the tokens it holds, their logits (rows kept), and the C state bytes."""

    def __init__(self, input_ids: np.ndarray, scores: np.ndarray, n_tokens: int, llama_state: bytes,
                 llama_state_size: int, seed: int):
        self.input_ids = input_ids
        self.scores = scores
        self.n_tokens = n_tokens
        self.llama_state = llama_state
        self.llama_state_size = llama_state_size
        self.seed = seed


# Keywords whose feature this engine lacks but whose absence cannot change any output: value the
# default means "not asked for"; anything else warns once and is ignored.
_HARMLESS = {
    "n_gpu_layers": 0, "split_mode": C.LLAMA_SPLIT_MODE_LAYER, "main_gpu": 0, "tensor_split": None,
    "use_mlock": False, "offload_kqv": True, "op_offload": None, "numa": False,
    "lora_base": None, "no_perf": False,
}
# Keywords llama_py adds (accepted through **kwargs so the signature stays llama-cpp-python's).
_EXTENSIONS = {"n_seq_max"}


class Llama(_CompletionMixin, _ChatMixin, _EmbedMixin):
    """A loaded model with one context and one sampler chain."""

    def __init__(
        self,
        model_path: str,
        *,
        n_gpu_layers: int = 0,
        split_mode: int = C.LLAMA_SPLIT_MODE_LAYER,
        main_gpu: int = 0,
        tensor_split: Optional[List[float]] = None,
        vocab_only: bool = False,
        use_mmap: bool = True,
        use_mlock: bool = False,
        kv_overrides: Optional[Dict[str, Union[bool, int, float, str]]] = None,
        seed: int = C.LLAMA_DEFAULT_SEED,
        n_ctx: int = 512,
        n_batch: int = 512,
        n_ubatch: int = 512,
        n_threads: Optional[int] = None,
        n_threads_batch: Optional[int] = None,
        rope_scaling_type: Optional[int] = C.LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED,
        pooling_type: int = C.LLAMA_POOLING_TYPE_UNSPECIFIED,
        attention_type: int = C.LLAMA_ATTENTION_TYPE_UNSPECIFIED,
        rope_freq_base: float = 0.0,
        rope_freq_scale: float = 0.0,
        yarn_ext_factor: float = -1.0,
        yarn_attn_factor: float = 1.0,
        yarn_beta_fast: float = 32.0,
        yarn_beta_slow: float = 1.0,
        yarn_orig_ctx: int = 0,
        logits_all: bool = False,
        embedding: bool = False,
        offload_kqv: bool = True,
        flash_attn: bool = False,
        op_offload: Optional[bool] = None,
        swa_full: Optional[bool] = None,
        no_perf: bool = False,
        last_n_tokens_size: int = 64,
        lora_base: Optional[str] = None,
        lora_scale: float = 1.0,
        lora_path: Optional[str] = None,
        numa: Union[bool, int] = False,
        chat_format: Optional[str] = None,
        chat_handler: Optional[Any] = None,
        draft_model: Optional[LlamaDraftModel] = None,
        tokenizer: Optional[BaseLlamaTokenizer] = None,
        type_k: Optional[int] = None,
        type_v: Optional[int] = None,
        spm_infill: bool = False,
        verbose: bool = True,
        **kwargs,
    ):
        """Loads model_path and makes a context (see llama-cpp-python's documentation for each
        keyword). n_ctx is rounded up to a multiple of 256, 0 meaning the model's training context;
        n_threads / n_threads_batch default to the physical cores (never more); embedding=True makes
        embed() available; chat_format names a format of llama_chat_format (chatml, llama-2, ...),
        else the model's own Jinja template is used (rendered in jinja2's sandbox)."""
        self._model = None
        self._ctx = None
        self._sampler = None
        self._batch = None
        self._init_kwargs = dict(locals())
        for k in ("self", "kwargs", "__class__"):
            self._init_kwargs.pop(k, None)
        self._init_kwargs.update(kwargs)
        n_seq_max = kwargs.pop("n_seq_max", 1)
        for key in kwargs:
            _warn_once(f"unknown:{key}", f"Llama: unknown keyword {key!r} ignored")
        given = dict(n_gpu_layers=n_gpu_layers, split_mode=split_mode, main_gpu=main_gpu, tensor_split=tensor_split,
                     use_mlock=use_mlock, offload_kqv=offload_kqv, op_offload=op_offload,
                     numa=numa, lora_base=lora_base, no_perf=no_perf)
        for key, default in _HARMLESS.items():
            if given[key] is not None and given[key] != default:
                _warn_once(f"harmless:{key}", f"Llama({key}=...): not supported by llama_py (CPU only); ignored, "
                                              "it does not change the output")
        for pname, value, lo in (("n_ctx", n_ctx, 0), ("n_batch", n_batch, 1), ("n_ubatch", n_ubatch, 1),
                                 ("n_seq_max", n_seq_max, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= 0xFFFFFFFF:
                raise ValueError(f"{pname} must be an integer in [{lo}, 4294967295], got {value!r}")
        for pname, value in (("n_threads", n_threads), ("n_threads_batch", n_threads_batch)):
            if value is not None and value != -1 and (not isinstance(value, int) or not 1 <= value <= 4096):
                raise ValueError(f"{pname} must be None or an integer in [1, 4096], got {value!r}")
        if not isinstance(last_n_tokens_size, int) or last_n_tokens_size < -1:
            raise ValueError(f"last_n_tokens_size must be an integer >= -1, got {last_n_tokens_size!r}")
        self.verbose = verbose
        _install_logger(verbose)
        self.model_path = str(model_path)
        if not os.path.exists(self.model_path):
            raise ModelPathError(f"Model path does not exist: {self.model_path}")
        if os.path.isdir(self.model_path):
            raise ValueError(f"Model path is a folder, not a GGUF file: {self.model_path}")

        mparams = C.llama_model_default_params()
        self.model_params = mparams
        mparams.load_mode = C.LLAMA_LOAD_MODE_MMAP if use_mmap else C.LLAMA_LOAD_MODE_NONE
        mparams.vocab_only = vocab_only
        self.kv_overrides = kv_overrides
        if kv_overrides:
            self._kv_overrides_array = _kv_override_array(kv_overrides)
            mparams.kv_overrides = self._kv_overrides_array
        with _load_guard.guarded_load(mparams) as load:  # Ctrl-C cancels the load
            model = C.llama_model_load_from_file(self.model_path.encode(), mparams)
        if load.interrupted:
            if model:
                C.llama_model_free(model)
            raise KeyboardInterrupt
        if not model:
            raise LlamaError(f"failed to load model from {self.model_path}: {_load_guard.reason()}")
        self._model = model
        self._vocab = C.llama_model_get_vocab(model)
        self._n_vocab = C.llama_vocab_n_tokens(self._vocab)
        # recurrent state (hybrid models): prefixes are kept whole or back to a checkpoint
        self._hybrid = bool(C.llama_model_is_hybrid(model) or C.llama_model_is_recurrent(model))
        self.tokenizer_ = tokenizer or LlamaTokenizer(self)
        cores = _physical_cores()
        self.n_threads = min(n_threads, cores) if n_threads and n_threads > 0 else cores
        self.n_threads_batch = min(n_threads_batch, cores) if n_threads_batch and n_threads_batch > 0 else cores
        self._seed = seed
        self.last_n_tokens_size = last_n_tokens_size
        self.lora_base, self.lora_scale, self.lora_path = lora_base, lora_scale, lora_path
        self.spm_infill = spm_infill
        self.draft_model = draft_model
        if draft_model is not None and (self._hybrid or logits_all):
            # a speculative round decodes guesses that may be rejected: a recurrent state cannot
            # drop them, and logits_all's scores would hold the rejected rows
            self.close()
            raise ValueError("Llama(draft_model=...): speculative decoding is not supported "
                             + ("for hybrid / recurrent models" if self._hybrid else "with logits_all=True"))
        if draft_model is not None and hasattr(draft_model, "check_vocab"):
            try:
                draft_model.check_vocab(self)   # a draft model must share the vocabulary
            except Exception:
                self.close()
                raise
        self.tensor_split = tensor_split
        self.numa = numa
        self.cache: Optional[BaseLlamaCache] = None
        self._logits_all = bool(logits_all)
        self._metadata: Optional[Dict[str, str]] = None

        # llama.cpp's context semantics: 0 = the training context, else rounded up to 256
        if n_ctx == 0:
            n_ctx = int(C.llama_model_n_ctx_train(model))
        n_ctx = -(-n_ctx // _PAD_CTX) * _PAD_CTX
        if n_ctx > 0xFFFFFFFF:
            self.close()
            raise ValueError(f"n_ctx must be at most 4294967295, got {n_ctx}")
        if embedding:
            # a pooled embedding is one decode of the whole text: let a text fill the context;
            # several texts share a decode, one sequence each (embed / rerank pack them)
            n_batch = n_ubatch = n_ctx
            n_seq_max = max(n_seq_max, 16)
        self.n_batch = min(n_ctx, n_batch)
        cparams = C.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = self.n_batch
        cparams.n_ubatch = min(self.n_batch, n_ubatch)
        cparams.n_seq_max = n_seq_max
        cparams.n_threads = self.n_threads
        cparams.n_threads_batch = self.n_threads_batch
        cparams.rope_scaling_type = (C.LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED if rope_scaling_type is None
                                     else rope_scaling_type)
        cparams.pooling_type = pooling_type
        cparams.attention_type = attention_type
        cparams.rope_freq_base = rope_freq_base
        cparams.rope_freq_scale = rope_freq_scale
        cparams.yarn_ext_factor = yarn_ext_factor
        cparams.yarn_attn_factor = yarn_attn_factor
        cparams.yarn_beta_fast = yarn_beta_fast
        cparams.yarn_beta_slow = yarn_beta_slow
        cparams.yarn_orig_ctx = yarn_orig_ctx
        cparams.embeddings = embedding
        cparams.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn else C.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cparams.no_perf = no_perf
        if swa_full is not None:
            # False: sliding-window layers keep a window-sized cache (a prefix the window has
            # left is decoded again: llama_memory_seq_rm says so); None keeps llama.cpp's full one
            cparams.swa_full = bool(swa_full)
        if type_k is not None:
            cparams.type_k = type_k
        if type_v is not None:
            cparams.type_v = type_v
        self.context_params = cparams
        self._n_ctx = n_ctx
        self._pooled = False
        self.chat_format = chat_format
        self.chat_handler = chat_handler
        self._tokens: List[int] = []      # what the KV cache holds for sequence 0
        self._logits_live = False         # the context's last output row belongs to _tokens[-1]
        self._ckpt = None                 # hybrid models: (n, bytes) recurrent state after _tokens[:n]
        self._alora_toks: List[int] = []   # the adapter's aLoRA invocation tokens ([]: not an aLoRA)
        self._alora_start: Optional[int] = None  # see _alora_find
        self._alora_fixed = False
        self.scores = np.zeros((n_ctx if self._logits_all else 1, self._n_vocab), dtype=np.single)
        if not vocab_only:
            _load_guard.begin()
            ctx = C.llama_init_from_model(model, cparams)
            if not ctx:
                self.close()
                raise LlamaError(f"failed to create a context: {_load_guard.reason()}")
            self._ctx = ctx
            self._n_ctx = C.llama_n_ctx(ctx)
            self.n_batch = C.llama_n_batch(ctx)
            self.n_threads = C.llama_n_threads(ctx)
            self.n_threads_batch = C.llama_n_threads_batch(ctx)
            self._pooled = bool(embedding) and C.llama_pooling_type(ctx) != C.LLAMA_POOLING_TYPE_NONE
            if self._logits_all:
                self._batch = C.llama_batch_init(self.n_batch, 0, 1)
            if lora_path is not None:
                try:
                    self.set_lora(lora_path, lora_scale)
                except Exception:
                    self.close()
                    raise
        self._init_chat()

    # ---- LoRA ----

    def set_lora(self, lora_path: Optional[str] = None, lora_scale: float = 1.0) -> None:
        """Applies the LoRA adapter at lora_path (llama.cpp's LoRA GGUF; `python -m llama_py convert
        --lora` makes one from PEFT) at lora_scale, replacing the current one, without reloading
        the model; None removes it. The KV cache is cleared: what it holds was computed without it."""
        if not self._ctx:
            raise LlamaError("set_lora needs a context (the model was loaded with vocab_only)")
        old = getattr(self, "_lora", None)
        new = None
        if lora_path is not None:
            if not os.path.isfile(str(lora_path)):
                raise ModelPathError(f"LoRA adapter path does not exist: {lora_path}")
            new = C.llama_adapter_lora_init(self._model, str(lora_path).encode())
            if not new:
                raise LlamaError(f"failed to load the LoRA adapter {lora_path} for this model "
                                 "(set verbose=True to see why)")
            arr = (C.llama_adapter_lora_p * 1)(new)
            sc = (ctypes.c_float * 1)(float(lora_scale))
            n_inv = C.llama_adapter_get_alora_n_invocation_tokens(new)
            if n_inv:
                # an activated LoRA: set on sequence 0, whose rows before the invocation get 0
                inv = C.llama_adapter_get_alora_invocation_tokens(new)
                alora = [int(inv[i]) for i in range(n_inv)]
                rc = C.llama_set_adapters_lora(self._ctx, None, 0, None) or \
                    C.llama_set_adapters_lora_seq(self._ctx, 0, arr, 1, sc) or C.llama_set_alora_start(self._ctx, 0, -1)
            else:
                alora = []
                rc = C.llama_set_adapters_lora_seq(self._ctx, 0, None, 0, None) or \
                    C.llama_set_adapters_lora(self._ctx, arr, 1, sc)
        else:
            alora = []
            rc = C.llama_set_adapters_lora_seq(self._ctx, 0, None, 0, None) or \
                C.llama_set_adapters_lora(self._ctx, None, 0, None)
        if rc != 0:
            if new:
                C.llama_adapter_lora_free(new)
            raise LlamaError(f"could not set the LoRA adapter {lora_path} (set verbose=True to see why)")
        if old:
            C.llama_adapter_lora_free(old)
        self._lora = new
        self.lora_path, self.lora_scale = lora_path, lora_scale
        self._alora_toks, self._alora_start, self._alora_fixed = alora, None, False
        C.llama_memory_clear(C.llama_get_memory(self._ctx), True)
        self._tokens = []
        self._logits_live = False

    # aLoRA (activated LoRA, PEFT's alora_invocation_tokens): the adapter applies from the start of
    # the last occurrence of its invocation tokens on, the rows before it are the base model's.
    # _alora_start: where the cells in the cache were computed from (-1: nowhere, decided), None
    # while nothing decided it (the C side then applies it nowhere). generate() decides it from
    # its prompt, as PEFT does, and fixes it (occurrences in the generated text do not move it);
    # eval() alone, until then, takes the last occurrence in what the context holds.

    def _alora_find(self, toks: Sequence[int]) -> int:
        """Start of the last occurrence of the invocation tokens in toks, or -1."""
        inv, n = self._alora_toks, len(self._alora_toks)
        for i in range(len(toks) - n, -1, -1):
            if list(toks[i:i + n]) == inv:
                return i
        return -1

    def _alora_set(self, start: Optional[int]) -> None:
        if C.llama_set_alora_start(self._ctx, 0, -1 if start is None else start) != 0:
            raise LlamaError("llama_set_alora_start failed (set verbose=True to see why)")
        self._alora_start = start

    # ---- lifetime ----

    def close(self) -> None:
        """Frees sampler, context and model, in that order. Safe to call twice."""
        if getattr(self, "_sampler", None):
            C.llama_sampler_free(self._sampler)
            self._sampler = None
        if getattr(self, "_batch", None) is not None:
            C.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "_spec_b", None) is not None:
            C.llama_batch_free(self._spec_b)
            self._spec_b = None
        if getattr(self, "_ctx", None):
            C.llama_free(self._ctx)
            self._ctx = None
        if getattr(self, "_lora", None):
            C.llama_adapter_lora_free(self._lora)
            self._lora = None
        if getattr(self, "_model", None):
            C.llama_model_free(self._model)
            self._model = None

    def __enter__(self) -> "Llama":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self) -> Dict[str, Any]:
        """Pickles as the constructor's arguments (the model is loaded again on unpickling)."""
        state = dict(self._init_kwargs)
        state["seed"] = self._seed
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(**state)

    def _check_open(self, need_ctx: bool = True) -> None:
        if not self._model:
            raise LlamaError("this Llama object is closed")
        if need_ctx and not self._ctx:
            raise LlamaError("this Llama object has no context (it was made with vocab_only=True)")

    # ---- properties ----

    @property
    def ctx(self):
        """The C context (llama_context pointer)."""
        return self._ctx

    @property
    def model(self):
        """The C model (llama_model pointer)."""
        return self._model

    @property
    def n_tokens(self) -> int:
        """How many tokens the context holds; assigning a smaller number forgets the rest."""
        return len(self._tokens)

    @n_tokens.setter
    def n_tokens(self, n: int) -> None:
        n = max(0, int(n))
        if n < len(self._tokens):
            if self._ctx and not C.llama_memory_seq_rm(C.llama_get_memory(self._ctx), -1, n, -1):
                # hybrid / recurrent models: a state cannot be cut mid-way: back to the checkpoint
                # at the end of the last prompt when it is within n, else nothing is kept
                n = self._restore_checkpoint(n)
            del self._tokens[n:]
            if self._ckpt is not None and self._ckpt[0] > n:
                self._ckpt = None
            self._logits_live = False
            if self._alora_start is not None and (self._alora_start < 0 or n <= self._alora_start):
                self._alora_set(None)   # the cells kept were all computed without the adapter

    _PARTIAL = C.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY

    def _save_checkpoint(self) -> None:
        """Keeps the recurrent state of a hybrid model after the prompt just decoded."""
        n = C.llama_state_seq_get_size_ext(self._ctx, 0, self._PARTIAL)
        buf = (ctypes.c_uint8 * max(n, 1))()
        ok = n > 0 and C.llama_state_seq_get_data_ext(self._ctx, buf, n, 0, self._PARTIAL) == n
        self._ckpt = (len(self._tokens), bytes(buf)) if ok else None

    def _restore_checkpoint(self, n: int) -> int:
        """Cuts the context back to the checkpoint if it is within n tokens (else empties it);
        returns the tokens kept."""
        mem, ck = C.llama_get_memory(self._ctx), self._ckpt
        if ck is not None and ck[0] <= n:
            buf = (ctypes.c_uint8 * len(ck[1])).from_buffer_copy(ck[1])
            if C.llama_state_seq_set_data_ext(self._ctx, buf, len(ck[1]), 0, self._PARTIAL) == len(ck[1]) and \
                    C.llama_memory_seq_rm(mem, -1, ck[0], -1):
                return ck[0]
        C.llama_memory_seq_rm(mem, -1, -1, -1)
        self._ckpt = None
        return 0

    @property
    def input_ids(self) -> np.ndarray:
        ids = np.zeros(self._n_ctx, dtype=np.intc)
        ids[:len(self._tokens)] = self._tokens
        return ids

    @property
    def _input_ids(self) -> np.ndarray:
        return np.array(self._tokens, dtype=np.intc)

    @property
    def _scores(self) -> np.ndarray:
        return self.scores[:len(self._tokens)] if self._logits_all else self.scores

    @property
    def eval_tokens(self):
        from collections import deque
        return deque(self._tokens, maxlen=self._n_ctx)

    @property
    def eval_logits(self):
        from collections import deque
        return deque(self._scores.tolist(), maxlen=self._n_ctx if self._logits_all else 1)

    def n_ctx(self) -> int:
        """The context size (after rounding; a vocab-only model reports the size it was asked for)."""
        self._check_open(need_ctx=False)
        return self._n_ctx

    def n_vocab(self) -> int:
        self._check_open(need_ctx=False)
        return self._n_vocab

    def n_embd(self) -> int:
        self._check_open(need_ctx=False)
        return C.llama_model_n_embd(self._model)

    def token_bos(self) -> int:
        self._check_open(need_ctx=False)
        return C.llama_vocab_bos(self._vocab)

    def token_eos(self) -> int:
        self._check_open(need_ctx=False)
        return C.llama_vocab_eos(self._vocab)

    def token_nl(self) -> int:
        self._check_open(need_ctx=False)
        return C.llama_vocab_nl(self._vocab)

    def pooling_type(self) -> int:
        """The context's pooling (llama_cpp.LLAMA_POOLING_TYPE_*)."""
        self._check_open(need_ctx=False)
        if not self._ctx:
            return int(self.context_params.pooling_type)
        return int(C.llama_pooling_type(self._ctx))

    def tokenizer(self) -> LlamaTokenizer:
        """The model's own tokenizer."""
        self._check_open(need_ctx=False)
        return LlamaTokenizer(self)

    @property
    def metadata(self) -> Dict[str, str]:
        """The model's GGUF key/value pairs as strings."""
        self._check_open(need_ctx=False)
        if self._metadata is None:
            self._metadata = _read_metadata(self._model)
        return dict(self._metadata)

    def perf(self) -> Dict[str, float]:
        """The context's timings since it was made or since reset_perf(): prompt tokens decoded in
        batches (n_p_eval, t_p_eval_ms) and tokens decoded one at a time (n_eval, t_eval_ms)."""
        self._check_open()
        d = C.llama_perf_context(self._ctx)
        return {"t_load_ms": d.t_load_ms, "t_p_eval_ms": d.t_p_eval_ms, "n_p_eval": d.n_p_eval,
                "t_eval_ms": d.t_eval_ms, "n_eval": d.n_eval}

    def reset_perf(self) -> None:
        self._check_open()
        C.llama_perf_context_reset(self._ctx)

    def set_cache(self, cache: Optional[BaseLlamaCache]) -> None:
        """Prompt cache used by create_completion (None: none)."""
        self.cache = cache

    def set_seed(self, seed: int) -> None:
        """Seed of the calls that pass none (LLAMA_DEFAULT_SEED: a fresh random seed each call)."""
        self._seed = seed

    # ---- tokens ----

    def tokenize(self, text: Union[bytes, str], add_bos: bool = True, special: bool = False) -> List[int]:
        """UTF-8 bytes (or str) to token ids; add_bos adds the vocab's special tokens (BOS where
        the model wants one); special parses control-token text like <|im_end|>."""
        self._check_open(need_ctx=False)
        if isinstance(text, str):
            text = text.encode("utf-8")
        return self.tokenizer_.tokenize(bytes(text), add_bos, special)

    def detokenize(self, tokens: List[int], prev_tokens: Optional[List[int]] = None, special: bool = False) -> bytes:
        """Token ids to UTF-8 bytes."""
        self._check_open(need_ctx=False)
        return self.tokenizer_.detokenize(list(tokens), prev_tokens=prev_tokens, special=special)

    def _tokenize_vocab(self, data: bytes, add_bos: bool, special: bool) -> List[int]:
        self._check_open(need_ctx=False)
        return T.tokenize(self._vocab, data, add_bos, special)

    def _detokenize_vocab(self, tokens: List[int], special: bool) -> bytes:
        self._check_open(need_ctx=False)
        return T.detokenize(self._vocab, tokens, special)

    def token_to_piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (may be part of a UTF-8 character)."""
        self._check_open(need_ctx=False)
        return T.token_piece(self._vocab, token, special)

    # ---- decoding ----

    def reset(self) -> None:
        """Empties the context."""
        self._check_open()
        C.llama_memory_clear(C.llama_get_memory(self._ctx), True)
        self._ckpt = None
        self._tokens = []
        self._logits_live = False
        if self._alora_toks:
            self._alora_set(None)
            self._alora_fixed = False

    def eval(self, tokens: Sequence[int]) -> None:
        """Decodes tokens after what the context holds, in batches of n_batch (with logits_all the
        logits of every token are kept in `scores`, else those of the last)."""
        self._check_open()
        if self._pooled:
            raise LlamaError("this Llama was made with embedding=True (pooled): it produces no logits to sample")
        tokens = [int(t) for t in tokens]
        if len(self._tokens) + len(tokens) > self._n_ctx:
            raise LlamaError(f"context full: {len(self._tokens)} + {len(tokens)} tokens > n_ctx {self._n_ctx}")
        if self._alora_toks and not self._alora_fixed:
            # the last occurrence in what the context will hold; cells from the first position
            # whose activation that changes are decoded again
            at = self._alora_find(self._tokens + tokens)
            eff = [x if x is not None and x >= 0 else self._n_ctx for x in (self._alora_start, at)]
            if eff[0] != eff[1] and min(eff) < len(self._tokens):
                cut = min(eff)
                tokens = self._tokens[cut:] + tokens
                self.n_tokens = cut
            self._alora_set(at if at >= 0 else None)
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start:start + self.n_batch]
            n_past = len(self._tokens)
            if self._logits_all:
                b = self._batch
                C.llama_batch_clear(b)
                for i, t in enumerate(chunk):
                    C.llama_batch_add(b, t, n_past + i, [0], True)
                rc = C.llama_decode(self._ctx, b)
            else:
                arr = (C.llama_token * len(chunk))(*chunk)
                rc = C.llama_decode(self._ctx, C.llama_batch_get_one(arr, len(chunk)))
            if rc != 0:
                self._logits_live = False
                raise LlamaError("llama_decode failed" + (" (aborted)" if rc == 2 else ""), rc)
            self._tokens.extend(chunk)
            if self._logits_all:
                ptr = C.llama_get_logits(self._ctx)
                rows = np.ctypeslib.as_array(ptr, shape=(len(chunk) * self._n_vocab,))
                self.scores[n_past:n_past + len(chunk)] = rows.reshape(len(chunk), self._n_vocab)
            self._logits_live = True

    def _logits_row(self, idx: int = -1) -> np.ndarray:
        """A writable view of the context's output row idx (default the last; what the sampler reads)."""
        ptr = C.llama_get_logits_ith(self._ctx, idx)
        if not ptr:
            raise LlamaError("no logits to sample from (decode a prompt first)")
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))

    def _build_sampler(self, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
                       temp: float = 0.80, repeat_penalty: float = 1.0, frequency_penalty: float = 0.0,
                       presence_penalty: float = 0.0, mirostat_mode: int = 0, mirostat_eta: float = 0.1,
                       mirostat_tau: float = 5.0, grammar: Optional[LlamaGrammar] = None, seed: Optional[int] = None,
                       logit_bias: Optional[Dict[int, float]] = None, history: Sequence[int] = ()):
        """The runtime's sampler chain (llama_py._runtime.sampling) for these options, the
        penalty window being last_n_tokens_size tokens of history."""
        sp = SamplingParams(temperature=temp, top_k=top_k, top_p=top_p, min_p=min_p, typical_p=typical_p,
                            repeat_penalty=repeat_penalty, frequency_penalty=frequency_penalty,
                            presence_penalty=presence_penalty, penalty_last_n=self.last_n_tokens_size,
                            mirostat_mode=mirostat_mode, mirostat_tau=mirostat_tau, mirostat_eta=mirostat_eta,
                            seed=seed, logit_bias=logit_bias, grammar=grammar)
        return build_chain(self._vocab, self._n_vocab, sp, history, n_ctx=self._n_ctx, default_seed=self._seed)

    def _sample_with(self, chain, logits_processor=None, new_ids: Sequence[int] = (), idx: int = -1) -> int:
        """Samples from output row idx (default the last): keeps a copy of the raw logits (logprobs
        read them), lets logits_processor rewrite the row in place, then runs the chain."""
        row = self._logits_row(idx)
        raw = row.copy()
        self._last_raw_logits = raw
        if logits_processor is not None:
            ids = np.array(list(self._tokens) + list(new_ids), dtype=np.intc)
            out = logits_processor(ids, row.copy())
            row[:] = np.asarray(out, dtype=np.single)
            self._logits_live = False  # the row no longer holds the model's logits
        if not self._logits_all:
            self.scores[0] = raw
        tok = C.llama_sampler_sample(chain, self._ctx, idx)
        if tok < 0:
            raise LlamaError("sampling failed (set verbose=True to see why)")
        return int(tok)

    def sample(self, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
               temp: float = 0.80, repeat_penalty: float = 1.0, frequency_penalty: float = 0.0,
               presence_penalty: float = 0.0, tfs_z: float = 1.0, mirostat_mode: int = 0, mirostat_eta: float = 0.1,
               mirostat_tau: float = 5.0, penalize_nl: bool = True,
               logits_processor: Optional[LogitsProcessorList] = None, grammar: Optional[LlamaGrammar] = None,
               idx: Optional[int] = None) -> int:
        """One token from the logits of the last decoded token (inside generate(), with its
        sampler). tfs_z and penalize_nl are accepted and ignored, as llama.cpp dropped them."""
        self._check_open()
        if not self._tokens or not self._logits_live:
            raise LlamaError("sample() needs logits: eval() some tokens first")
        if idx is not None and idx != len(self._tokens) - 1:
            raise ValueError(f"sample(idx={idx}): only the last decoded position ({len(self._tokens) - 1}) has logits")
        if self._sampler is not None:
            return self._sample_with(self._sampler, logits_processor)
        chain = self._build_sampler(top_k, top_p, min_p, typical_p, temp, repeat_penalty, frequency_penalty,
                                    presence_penalty, mirostat_mode, mirostat_eta, mirostat_tau, grammar,
                                    history=self._tokens)
        try:
            return self._sample_with(chain, logits_processor)
        finally:
            C.llama_sampler_free(chain)

    def generate(self, tokens: Sequence[int], top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                 typical_p: float = 1.0, temp: float = 0.80, repeat_penalty: float = 1.0, reset: bool = True,
                 frequency_penalty: float = 0.0, presence_penalty: float = 0.0, tfs_z: float = 1.0,
                 mirostat_mode: int = 0, mirostat_tau: float = 5.0, mirostat_eta: float = 0.1,
                 penalize_nl: bool = True, logits_processor: Optional[LogitsProcessorList] = None,
                 stopping_criteria: Optional[StoppingCriteriaList] = None,
                 grammar: Optional[LlamaGrammar] = None) -> Generator[int, Optional[Sequence[int]], None]:
        """Yields sampled tokens until a stopping criterion holds (or forever: stop by breaking out);
        the prompt is `tokens`. temp 0 is greedy. With reset, the part of the context that matches
        the start of the prompt is kept and only the rest is decoded (an identical prompt whose
        logits are still live is not decoded at all); without it the prompt continues the context.
        Sending a list of tokens into the generator decodes them after the yielded one."""
        return self._generate(tokens, dict(top_k=top_k, top_p=top_p, min_p=min_p, typical_p=typical_p, temp=temp,
                                           repeat_penalty=repeat_penalty, frequency_penalty=frequency_penalty,
                                           presence_penalty=presence_penalty, mirostat_mode=mirostat_mode,
                                           mirostat_tau=mirostat_tau, mirostat_eta=mirostat_eta, grammar=grammar),
                              reset, logits_processor, stopping_criteria)

    def _generate(self, tokens, sampling: Dict[str, Any], reset: bool = True, logits_processor=None,
                  stopping_criteria=None, seed: Optional[int] = None, logit_bias=None):
        self._check_open()
        if self._pooled:
            raise LlamaError("this Llama was made with embedding=True (pooled): it produces no logits to sample")
        tokens = [int(t) for t in tokens]
        if not tokens and not (self._tokens and self._logits_live and not reset):
            raise ValueError("generate() needs at least one prompt token")
        if reset:
            n_keep = 0
            for a, b in zip(self._tokens, tokens):
                if a != b:
                    break
                n_keep += 1
            at = self._alora_find(tokens) if self._alora_toks else -1
            if self._alora_toks:
                # cells past the first position whose activation differs were computed otherwise
                eff = [x if x is not None and x >= 0 else len(tokens) + len(self._tokens) for x in (self._alora_start, at)]
                if eff[0] != eff[1]:
                    n_keep = min(n_keep, min(eff))
            if n_keep == len(tokens) == len(self._tokens) and self._logits_live:
                tokens = []  # the whole prompt is decoded and its logits are current
            else:
                if n_keep == len(tokens):
                    n_keep -= 1  # decode at least one token to get logits
                self.n_tokens = n_keep
                if not self._tokens:   # nothing kept (a recurrent state is kept whole or not at all)
                    self.reset()
                tokens = tokens[len(self._tokens):]
            if self._alora_toks:
                self._alora_set(at)     # from the prompt, fixed for this generation (as PEFT)
                self._alora_fixed = True
        self._free_sampler()
        history = self._tokens + tokens
        self._sampler = self._build_sampler(seed=seed, logit_bias=logit_bias, history=history, **sampling)
        chain = self._sampler
        # hybrid models: rejected guesses could not be cut from a recurrent state, so no drafts
        draft = self.draft_model   # refused at construction where it cannot be honoured
        prompt = True
        try:
            while True:
                if tokens:
                    self.eval(tokens)
                    if prompt and self._hybrid:
                        self._save_checkpoint()
                prompt = False
                tok = self._sample_with(chain, logits_processor, ())
                if stopping_criteria is not None:
                    ids = np.array(self._tokens + [tok], dtype=np.intc)
                    if stopping_criteria(ids, self._last_raw_logits):
                        return
                sent = yield tok
                tokens = [tok] + [int(t) for t in (sent or [])]
                while draft is not None and len(tokens) == 1:
                    # speculation: decode tok and the draft's guesses at once, then sample each row
                    # in order as if decoded one by one; the first sample that differs from the
                    # guess ends the round (the cells after it are dropped)
                    tokens = yield from self._speculate(tokens[0], draft, chain, logits_processor, stopping_criteria)
                    if tokens is None:
                        return
        finally:
            # the cache holds exactly self._tokens (verified guesses past a stop are dropped)
            if self._ctx:
                C.llama_memory_seq_rm(C.llama_get_memory(self._ctx), 0, len(self._tokens), -1)

    def _speculate(self, tok: int, draft, chain, logits_processor, stopping_criteria):
        """One speculative round after the sampled token tok: yields the accepted tokens; returns the
        tokens to decode next ([last sampled] + any sent), or None when a stopping criterion held."""
        n_past = len(self._tokens)
        room = min(self._n_ctx - n_past, self.n_batch) - 1
        if room < 0:
            raise LlamaError(f"context full: {n_past} + 1 tokens > n_ctx {self._n_ctx}")
        guesses = [] if room == 0 else [int(t) for t in np.asarray(draft(np.array(self._tokens + [tok], dtype=np.intc)))[:room]]
        batch = self._spec_batch(len(guesses) + 1)
        C.llama_batch_clear(batch)
        for i, t in enumerate([tok] + guesses):
            C.llama_batch_add(batch, t, n_past + i, [0], True)
        rc = C.llama_decode(self._ctx, batch)
        if rc != 0:
            self._logits_live = False
            raise LlamaError("llama_decode failed" + (" (aborted)" if rc == 2 else ""), rc)
        self._tokens.append(tok)
        self._logits_live = True
        self.n_drafted = getattr(self, "n_drafted", 0) + len(guesses)
        for i in range(len(guesses) + 1):
            t = self._sample_with(chain, logits_processor, (), idx=i)
            if stopping_criteria is not None:
                if stopping_criteria(np.array(self._tokens + [t], dtype=np.intc), self._last_raw_logits):
                    return None
            sent = yield t
            accepted = i < len(guesses) and t == guesses[i]
            if accepted:
                self._tokens.append(t)       # already in the cache
                self.n_accepted = getattr(self, "n_accepted", 0) + 1
            if sent or not accepted:
                C.llama_memory_seq_rm(C.llama_get_memory(self._ctx), 0, len(self._tokens), -1)
                return ([] if accepted else [t]) + [int(x) for x in (sent or [])] or [t]
        return [t]

    def _spec_batch(self, n: int):
        """A batch of n rows, kept for the speculative rounds."""
        b = getattr(self, "_spec_b", None)
        if b is None or self._spec_b_n < n:
            if b is not None:
                C.llama_batch_free(b)
            self._spec_b, self._spec_b_n = C.llama_batch_init(max(n, 16), 0, 1), max(n, 16)
        return self._spec_b

    def _free_sampler(self) -> None:
        if self._sampler:
            C.llama_sampler_free(self._sampler)
            self._sampler = None

    # ---- state ----

    def save_state(self) -> LlamaState:
        """The context as a LlamaState (the C state bytes, the tokens, the kept logits)."""
        self._check_open()
        size = C.llama_state_get_size(self._ctx)
        buf = (ctypes.c_uint8 * size)()
        n = C.llama_state_get_data(self._ctx, buf, size)
        if n == 0 or n > size:
            raise LlamaError("llama_state_get_data failed")
        return LlamaState(input_ids=self.input_ids, scores=self._scores.copy(), n_tokens=len(self._tokens),
                          llama_state=bytes(buf)[:n], llama_state_size=int(n), seed=self._seed)

    def load_state(self, state: LlamaState) -> None:
        """Restores a LlamaState saved from a context of the same model and size."""
        self._check_open()
        data = bytes(state.llama_state)[:state.llama_state_size]
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if C.llama_state_set_data(self._ctx, buf, len(data)) != len(data):
            raise LlamaError("llama_state_set_data failed: the state is not from a context like this one")
        self._tokens = [int(t) for t in np.asarray(state.input_ids)[:state.n_tokens]]
        if self._logits_all and len(state.scores):
            self.scores[:len(state.scores)] = state.scores
        self._seed = state.seed
        self._logits_live = False  # the state holds logits, but re-decoding the last token is the safe path

    # ---- misc ----

    @staticmethod
    def logits_to_logprobs(logits: Union[np.ndarray, List], axis: int = -1) -> np.ndarray:
        """log-softmax along axis (float32), finite maxima subtracted first."""
        x = np.asarray(logits, dtype=np.single)
        m = np.amax(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0).astype(np.single)
        shifted = x - m
        with np.errstate(divide="ignore"):
            return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))

    @staticmethod
    def longest_token_prefix(a: Sequence[int], b: Sequence[int]) -> int:
        n = 0
        for x, y in zip(a, b):
            if x != y:
                break
            n += 1
        return n

    @classmethod
    def from_pretrained(cls, repo_id: str, filename: Optional[str], additional_files: Optional[List] = None,
                        local_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                        local_dir_use_symlinks: Union[bool, str] = "auto",
                        cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None, **kwargs: Any) -> "Llama":
        """Loads `filename` (a glob pattern) of repo_id from local_dir, from repo_id itself when it is
        a folder, or from a Hugging Face hub cache already on disk (cache_dir, $HF_HUB_CACHE,
        ~/.cache/huggingface/hub). Nothing is downloaded: llama_py reaches no hub."""
        pattern = filename or "*.gguf"
        folders = []
        if local_dir:
            folders.append(os.fspath(local_dir))
        if os.path.isdir(repo_id):
            folders.append(repo_id)
        hub_dirs = [os.fspath(cache_dir)] if cache_dir else []
        hub_dirs += [os.environ.get("HF_HUB_CACHE", ""),
                     os.path.join(os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub")]
        for hub in filter(None, hub_dirs):
            folders += sorted(glob.glob(os.path.join(hub, "models--" + repo_id.replace("/", "--"), "snapshots", "*")))
        for folder in folders:
            hits = sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs
                          if fnmatch.fnmatch(f, pattern) or fnmatch.fnmatch(os.path.relpath(os.path.join(d, f), folder),
                                                                           pattern))
            if len(hits) > 1:
                raise ValueError(f"from_pretrained: several files in {folder} match {pattern!r}: {hits}")
            if hits:
                return cls(model_path=os.path.join(folder, hits[0]), **kwargs)
        raise FileNotFoundError(
            f"from_pretrained({repo_id!r}, {pattern!r}): no such file in "
            f"{folders or 'local_dir / the hub cache'}; llama_py downloads nothing (no model hub is reachable): "
            "put the GGUF file in a folder and pass local_dir=, or use Llama(model_path=...)")


def _kv_override_array(kv_overrides: Dict[str, Union[bool, int, float, str]]):
    arr = (C.llama_model_kv_override * (len(kv_overrides) + 1))()
    for i, (key, value) in enumerate(kv_overrides.items()):
        kb = key.encode("utf-8")
        if len(kb) >= 128:
            raise ValueError(f"kv_overrides: key {key!r} is longer than 127 bytes")
        arr[i].key = kb
        if isinstance(value, bool):
            arr[i].tag, arr[i].value.val_bool = C.LLAMA_KV_OVERRIDE_TYPE_BOOL, value
        elif isinstance(value, int):
            arr[i].tag, arr[i].value.val_i64 = C.LLAMA_KV_OVERRIDE_TYPE_INT, value
        elif isinstance(value, float):
            arr[i].tag, arr[i].value.val_f64 = C.LLAMA_KV_OVERRIDE_TYPE_FLOAT, value
        elif isinstance(value, str):
            vb = value.encode("utf-8")
            if len(vb) >= 128:
                raise ValueError(f"kv_overrides: value for {key!r} is longer than 127 bytes")
            arr[i].tag, arr[i].value.val_str = C.LLAMA_KV_OVERRIDE_TYPE_STR, vb
        else:
            raise ValueError(f"kv_overrides: unsupported value type for {key!r}: {type(value).__name__}")
    return arr


def _read_metadata(model) -> Dict[str, str]:
    out = {}
    buf = ctypes.create_string_buffer(1 << 16)
    for i in range(C.llama_model_meta_count(model)):
        if C.llama_model_meta_key_by_index(model, i, buf, len(buf)) < 0:
            continue
        key = buf.value.decode("utf-8", errors="replace")
        n = C.llama_model_meta_val_str_by_index(model, i, buf, len(buf))
        if n < 0:
            continue
        if n >= len(buf):  # a long value (a chat template): ask again with room for all of it
            big = ctypes.create_string_buffer(n + 1)
            C.llama_model_meta_val_str_by_index(model, i, big, len(big))
            out[key] = big.value.decode("utf-8", errors="replace")
        else:
            out[key] = buf.value.decode("utf-8", errors="replace")
    return out
