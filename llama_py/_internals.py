"""llama-cpp-python's `llama_cpp._internals` classes over llama_py's bindings: LlamaModel,
LlamaContext, LlamaBatch and LlamaSampler, thin owners of one C object each (close() frees it;
a model's close() first closes the contexts made on it, as the library needs), for code and
tests written against that module. Prefer `Llama` or `llama_py.llama_cpp` in new code.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

from . import llama_cpp as C
from ._runtime import text as T


class LlamaModel:
    """A loaded model (path_model, llama_model_params); .model and .vocab are the C handles."""

    def __init__(self, *, path_model: str, params: Any = None, verbose: bool = True):
        if not os.path.exists(path_model):
            raise ValueError(f"Model path does not exist: {path_model}")
        self.path_model, self.verbose = path_model, verbose
        self.params = params if params is not None else C.llama_model_default_params()
        self._owned: List[Any] = []  # contexts to close before the model
        self.model = C.llama_model_load_from_file(path_model.encode("utf-8"), self.params)
        if not self.model:
            self.model = None
            raise ValueError(f"Failed to load model from file: {path_model}")
        self.vocab = C.llama_model_get_vocab(self.model)

    def close(self) -> None:
        for ctx in reversed(self._owned):
            ctx.close()
        self._owned.clear()
        if self.model:
            C.llama_model_free(self.model)
        self.model = None

    def __del__(self):
        self.close()

    def vocab_type(self) -> int:
        return C.llama_vocab_type(self.vocab)

    def n_vocab(self) -> int:
        return C.llama_vocab_n_tokens(self.vocab)

    def n_ctx_train(self) -> int:
        return C.llama_model_n_ctx_train(self.model)

    def n_embd(self) -> int:
        return C.llama_model_n_embd(self.model)

    def rope_freq_scale_train(self) -> float:
        return C.llama_model_rope_freq_scale_train(self.model)

    def desc(self) -> str:
        buf = (C.ctypes.c_char * 1024)()
        C.llama_model_desc(self.model, buf, 1024)
        return buf.value.decode("utf-8", "replace")

    def size(self) -> int:
        return C.llama_model_size(self.model)

    def n_params(self) -> int:
        return C.llama_model_n_params(self.model)

    def token_get_text(self, token: int) -> str:
        return (C.llama_vocab_get_text(self.vocab, token) or b"").decode("utf-8", "replace")

    def token_get_score(self, token: int) -> float:
        return C.llama_vocab_get_score(self.vocab, token)

    def token_get_attr(self, token: int) -> int:
        return C.llama_vocab_get_attr(self.vocab, token)

    def token_bos(self) -> int:
        return C.llama_vocab_bos(self.vocab)

    def token_eos(self) -> int:
        return C.llama_vocab_eos(self.vocab)

    def token_cls(self) -> int:
        return C.llama_vocab_bos(self.vocab)  # llama.h: CLS is the BOS token

    def token_sep(self) -> int:
        return C.llama_vocab_sep(self.vocab)

    def token_nl(self) -> int:
        return C.llama_vocab_nl(self.vocab)

    def token_prefix(self) -> int:
        return C.llama_vocab_fim_pre(self.vocab)

    def token_middle(self) -> int:
        return C.llama_vocab_fim_mid(self.vocab)

    def token_suffix(self) -> int:
        return C.llama_vocab_fim_suf(self.vocab)

    def token_eot(self) -> int:
        return C.llama_vocab_eot(self.vocab)

    def add_bos_token(self) -> bool:
        return bool(C.llama_vocab_get_add_bos(self.vocab))

    def add_eos_token(self) -> bool:
        return bool(C.llama_vocab_get_add_eos(self.vocab))

    def tokenize(self, text: bytes, add_bos: bool, special: bool) -> List[int]:
        return T.tokenize(self.vocab, text, add_bos, special)

    def token_to_piece(self, token: int, special: bool = False) -> bytes:
        return T.token_piece(self.vocab, token, special)

    def detokenize(self, tokens: List[int], special: bool = False) -> bytes:
        return T.detokenize(self.vocab, tokens, special)

    def metadata(self) -> Dict[str, str]:
        out = {}
        buf = (C.ctypes.c_char * 1024)()
        for i in range(C.llama_model_meta_count(self.model)):
            n = C.llama_model_meta_key_by_index(self.model, i, buf, 1024)
            key = buf.value.decode("utf-8", "replace") if n >= 0 else ""
            n = C.llama_model_meta_val_str_by_index(self.model, i, None, 0)
            vbuf = (C.ctypes.c_char * (max(n, 0) + 1))()
            C.llama_model_meta_val_str_by_index(self.model, i, vbuf, max(n, 0) + 1)
            out[key] = vbuf.value.decode("utf-8", "replace")
        return out

    @staticmethod
    def default_params():
        return C.llama_model_default_params()


class LlamaContext:
    """A context on a LlamaModel (llama_context_params); .ctx is the C handle."""

    def __init__(self, *, model: LlamaModel, params: Any = None, verbose: bool = True):
        self.model, self.verbose = model, verbose
        self.params = params if params is not None else C.llama_context_default_params()
        self.ctx = C.llama_init_from_model(model.model, self.params)
        if not self.ctx:
            self.ctx = None
            raise ValueError("Failed to create llama_context")
        self.memory = C.llama_get_memory(self.ctx)
        model._owned.append(self)  # the native context must be freed before its model

    def close(self) -> None:
        if self.ctx:
            C.llama_free(self.ctx)
        self.ctx = None

    def __del__(self):
        self.close()

    def n_ctx(self) -> int:
        return C.llama_n_ctx(self.ctx)

    def pooling_type(self) -> int:
        return C.llama_pooling_type(self.ctx)

    def kv_cache_clear(self) -> None:
        if self.memory:
            C.llama_memory_clear(self.memory, True)

    def kv_cache_seq_rm(self, seq_id: int, p0: int, p1: int) -> bool:
        return bool(C.llama_memory_seq_rm(self.memory, seq_id, p0, p1))

    def kv_cache_seq_cp(self, seq_id_src: int, seq_id_dst: int, p0: int, p1: int) -> None:
        C.llama_memory_seq_cp(self.memory, seq_id_src, seq_id_dst, p0, p1)

    def kv_cache_seq_keep(self, seq_id: int) -> None:
        C.llama_memory_seq_keep(self.memory, seq_id)

    def kv_cache_seq_shift(self, seq_id: int, p0: int, p1: int, shift: int) -> None:
        C.llama_memory_seq_add(self.memory, seq_id, p0, p1, shift)

    def get_state_size(self) -> int:
        return C.llama_state_get_size(self.ctx)

    def decode(self, batch: "LlamaBatch") -> None:
        rc = C.llama_decode(self.ctx, batch.batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    def encode(self, batch: "LlamaBatch") -> None:
        rc = C.llama_encode(self.ctx, batch.batch)
        if rc != 0:
            raise RuntimeError(f"llama_encode returned {rc}")

    def set_n_threads(self, n_threads: int, n_threads_batch: int) -> None:
        C.llama_set_n_threads(self.ctx, n_threads, n_threads_batch)

    def get_logits(self):
        return C.llama_get_logits(self.ctx)

    def get_logits_ith(self, i: int):
        return C.llama_get_logits_ith(self.ctx, i)

    def get_embeddings(self):
        return C.llama_get_embeddings(self.ctx)

    def get_embeddings_ith(self, i: int):
        return C.llama_get_embeddings_ith(self.ctx, i)

    def get_embeddings_seq(self, seq_id: int):
        return C.llama_get_embeddings_seq(self.ctx, seq_id)

    def reset_timings(self) -> None:
        C.llama_perf_context_reset(self.ctx)

    def print_timings(self) -> None:
        C.llama_perf_context_print(self.ctx)

    @staticmethod
    def default_params():
        return C.llama_context_default_params()


class LlamaBatch:
    """A llama_batch of n_tokens (embd 0: token ids); .batch is the struct."""

    def __init__(self, *, n_tokens: int, embd: int, n_seq_max: int, verbose: bool = True):
        self._n_tokens, self.embd, self.n_seq_max, self.verbose = n_tokens, embd, n_seq_max, verbose
        self.batch = C.llama_batch_init(n_tokens, embd, n_seq_max)
        if not self.batch.token and not self.batch.embd:
            raise ValueError("Failed to create llama_batch")

    def close(self) -> None:
        if self.batch is not None:
            C.llama_batch_free(self.batch)
        self.batch = None

    def __del__(self):
        self.close()

    def n_tokens(self) -> int:
        return self.batch.n_tokens

    def reset(self) -> None:
        self.batch.n_tokens = 0

    def set_batch(self, batch: Sequence[int], n_past: int, logits_all: bool) -> None:
        """The batch becomes tokens at positions n_past.. of sequence 0 (the last with logits)."""
        self.reset()
        for i, t in enumerate(batch):
            C.llama_batch_add(self.batch, int(t), n_past + i, [0], logits_all or i == len(batch) - 1)

    def add_sequence(self, batch: Sequence[int], seq_id: int, logits_all: bool) -> None:
        """Appends tokens as sequence seq_id from position 0 (the last with logits)."""
        for i, t in enumerate(batch):
            C.llama_batch_add(self.batch, int(t), i, [seq_id], logits_all or i == len(batch) - 1)


class LlamaSampler:
    """A sampler chain built with add_* calls; sample(ctx, idx) draws and accepts a token."""

    def __init__(self):
        self.sampler = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())

    def close(self) -> None:
        if self.sampler:
            C.llama_sampler_free(self.sampler)
        self.sampler = None

    def __del__(self):
        self.close()

    def _add(self, smpl) -> None:
        C.llama_sampler_chain_add(self.sampler, smpl)

    def add_greedy(self):
        self._add(C.llama_sampler_init_greedy())

    def add_dist(self, seed: int):
        self._add(C.llama_sampler_init_dist(seed))

    def add_top_k(self, k: int):
        self._add(C.llama_sampler_init_top_k(k))

    def add_top_p(self, p: float, min_keep: int = 1):
        self._add(C.llama_sampler_init_top_p(p, min_keep))

    def add_min_p(self, p: float, min_keep: int = 1):
        self._add(C.llama_sampler_init_min_p(p, min_keep))

    def add_typical(self, p: float, min_keep: int = 1):
        self._add(C.llama_sampler_init_typical(p, min_keep))

    def add_temp(self, temp: float):
        self._add(C.llama_sampler_init_temp(temp))

    def add_temp_ext(self, t: float, delta: float, exponent: float):
        self._add(C.llama_sampler_init_temp_ext(t, delta, exponent))

    def add_xtc(self, p: float, t: float, min_keep: int, seed: int):
        self._add(C.llama_sampler_init_xtc(p, t, min_keep, seed))

    def add_top_n_sigma(self, n: float):
        self._add(C.llama_sampler_init_top_n_sigma(n))

    def add_mirostat(self, n_vocab: int, seed: int, tau: float, eta: float, m: int):
        self._add(C.llama_sampler_init_mirostat(n_vocab, seed, tau, eta, m))

    def add_mirostat_v2(self, seed: int, tau: float, eta: float):
        self._add(C.llama_sampler_init_mirostat_v2(seed, tau, eta))

    def add_grammar(self, model: LlamaModel, grammar: Any):
        from .grammar import sampler_from_grammar
        self._add(sampler_from_grammar(model.vocab, grammar))

    def add_penalties(self, n_vocab: int, penalty_last_n: int, penalty_repeat: float, penalty_freq: float,
                      penalty_present: float):
        self._add(C.llama_sampler_init_penalties(n_vocab, penalty_last_n, penalty_repeat, penalty_freq,
                                                 penalty_present))

    def get_seed(self) -> int:
        return C.llama_sampler_get_seed(self.sampler)

    def sample(self, ctx: LlamaContext, idx: int) -> int:
        return C.llama_sampler_sample(self.sampler, ctx.ctx, idx)

    def accept(self, token: int) -> None:
        C.llama_sampler_accept(self.sampler, token)

    def reset(self) -> None:
        C.llama_sampler_reset(self.sampler)
