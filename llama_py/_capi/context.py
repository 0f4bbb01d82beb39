"""llama.h mirror, contexts section: llama_context_params, llama_batch, contexts, the KV-cache
memory API, state save/restore, batches and llama_decode, logits and embeddings, threads and
performance counters (src/context.c, kv-cache.c, batch.c, batch-ext.c, state.c).
llama_cpp.py re-exports everything here.
"""
from __future__ import annotations

import ctypes
from ctypes import (POINTER, Structure, c_bool, c_char_p, c_double, c_float, c_int, c_int8, c_int32,
                    c_size_t, c_uint8, c_uint32, c_void_p)
from typing import Optional

from .._lib import ctypes_function
from .common import (ggml_abort_callback, ggml_backend_sched_eval_callback, llama_batch_ext_p_ctypes,
                            llama_context_p_ctypes, llama_memory_t_ctypes, llama_model_p_ctypes, llama_pos,
                            llama_seq_id, llama_state_seq_flags, llama_token)
from .extra import llama_embd


class llama_sampler_seq_config(Structure):
    """A sampler attached to a sequence (not used by this engine)."""
    _fields_ = [("seq_id", llama_seq_id), ("sampler", c_void_p)]


class llama_context_params(Structure):
    """Context options; start from llama_context_default_params().

    n_ctx (0: the model's training context), n_batch (max tokens per llama_decode), n_ubatch
    (max tokens per graph), n_seq_max, n_threads / n_threads_batch (clamped to the physical
    cores), type_k / type_v (GGML_TYPE_F16 default; F32 and Q8_0 too), flash_attn_type
    (AUTO = enabled), embeddings, pooling_type, abort_callback (keep the object alive).
    """
    _fields_ = [
        ("n_ctx", c_uint32),
        ("n_batch", c_uint32),
        ("n_ubatch", c_uint32),
        ("n_seq_max", c_uint32),
        ("n_rs_seq", c_uint32),
        ("n_outputs_max", c_uint32),
        ("n_outputs_max_per_seq", c_uint32),
        ("n_threads", c_int32),
        ("n_threads_batch", c_int32),
        ("ctx_type", c_int),
        ("rope_scaling_type", c_int),
        ("pooling_type", c_int),
        ("attention_type", c_int),
        ("flash_attn_type", c_int),
        ("rope_freq_base", c_float),
        ("rope_freq_scale", c_float),
        ("yarn_ext_factor", c_float),
        ("yarn_attn_factor", c_float),
        ("yarn_beta_fast", c_float),
        ("yarn_beta_slow", c_float),
        ("yarn_orig_ctx", c_uint32),
        ("defrag_thold", c_float),
        ("cb_eval", ggml_backend_sched_eval_callback),
        ("cb_eval_user_data", c_void_p),
        ("type_k", c_int),
        ("type_v", c_int),
        ("abort_callback", ggml_abort_callback),
        ("abort_callback_data", c_void_p),
        ("embeddings", c_bool),
        ("offload_kqv", c_bool),
        ("no_perf", c_bool),
        ("op_offload", c_bool),
        ("swa_full", c_bool),
        ("kv_unified", c_bool),
        ("samplers", POINTER(llama_sampler_seq_config)),
        ("n_samplers", c_size_t),
        ("ctx_other", c_void_p),
    ]


class llama_batch(Structure):
    """Tokens to decode: n_tokens rows of token (or embd), pos, seq ids and an output flag.

    pos NULL continues each sequence; n_seq_id NULL puts every row in sequence 0; logits NULL
    returns only the last row's logits. Allocate with llama_batch_init, free with llama_batch_free.
    """
    _fields_ = [
        ("n_tokens", c_int32),
        ("token", POINTER(llama_token)),
        ("embd", POINTER(c_float)),
        ("pos", POINTER(llama_pos)),
        ("n_seq_id", POINTER(c_int32)),
        ("seq_id", POINTER(POINTER(llama_seq_id))),
        ("logits", POINTER(c_int8)),
    ]


class llama_perf_context_data(Structure):
    """Timings of a context in milliseconds, and token counts."""
    _fields_ = [
        ("t_start_ms", c_double),
        ("t_load_ms", c_double),
        ("t_p_eval_ms", c_double),
        ("t_eval_ms", c_double),
        ("n_p_eval", c_int32),
        ("n_eval", c_int32),
        ("n_reused", c_int32),
    ]


# ---- contexts ----

# struct llama_context_params llama_context_default_params(void);
@ctypes_function("llama_context_default_params", [], llama_context_params)
def llama_context_default_params() -> llama_context_params:
    """Default context parameters (threads = physical cores)."""


# struct llama_context * llama_init_from_model(struct llama_model * model, struct llama_context_params params);
@ctypes_function("llama_init_from_model", [llama_model_p_ctypes, llama_context_params], llama_context_p_ctypes)
def llama_init_from_model(model, params: llama_context_params, /) -> Optional[int]:
    """Creates a context (KV cache allocated once); None (reason logged) on failure."""


# void llama_free(struct llama_context * ctx);
@ctypes_function("llama_free", [llama_context_p_ctypes], None)
def llama_free(ctx, /):
    """Frees the context; NULL-safe."""


# uint32_t llama_n_ctx(const struct llama_context * ctx);
@ctypes_function("llama_n_ctx", [llama_context_p_ctypes], c_uint32)
def llama_n_ctx(ctx, /) -> int:
    """KV cache size in tokens."""


# uint32_t llama_n_ctx_seq(const struct llama_context * ctx);
@ctypes_function("llama_n_ctx_seq", [llama_context_p_ctypes], c_uint32)
def llama_n_ctx_seq(ctx, /) -> int:
    """KV cache size available to one sequence."""


# uint32_t llama_n_batch(const struct llama_context * ctx);
@ctypes_function("llama_n_batch", [llama_context_p_ctypes], c_uint32)
def llama_n_batch(ctx, /) -> int:
    """Max tokens per llama_decode."""


# uint32_t llama_n_ubatch(const struct llama_context * ctx);
@ctypes_function("llama_n_ubatch", [llama_context_p_ctypes], c_uint32)
def llama_n_ubatch(ctx, /) -> int:
    """Max tokens per graph computation."""


# uint32_t llama_n_seq_max(const struct llama_context * ctx);
@ctypes_function("llama_n_seq_max", [llama_context_p_ctypes], c_uint32)
def llama_n_seq_max(ctx, /) -> int:
    """Max sequences."""


# uint32_t llama_n_rs_seq(const struct llama_context * ctx);
@ctypes_function("llama_n_rs_seq", [llama_context_p_ctypes], c_uint32)
def llama_n_rs_seq(ctx, /) -> int:
    """Recurrent-state sequences (0)."""


# const struct llama_model * llama_get_model(const struct llama_context * ctx);
@ctypes_function("llama_get_model", [llama_context_p_ctypes], llama_model_p_ctypes)
def llama_get_model(ctx, /) -> Optional[int]:
    """The context's model."""


# llama_memory_t llama_get_memory(const struct llama_context * ctx);
@ctypes_function("llama_get_memory", [llama_context_p_ctypes], llama_memory_t_ctypes)
def llama_get_memory(ctx, /) -> Optional[int]:
    """The context's KV cache handle."""


# enum llama_pooling_type llama_pooling_type(const struct llama_context * ctx);
@ctypes_function("llama_pooling_type", [llama_context_p_ctypes], c_int)
def llama_pooling_type(ctx, /) -> int:
    """Pooling type in use."""


# void llama_set_n_threads(struct llama_context * ctx, int32_t n_threads, int32_t n_threads_batch);
@ctypes_function("llama_set_n_threads", [llama_context_p_ctypes, c_int32, c_int32], None)
def llama_set_n_threads(ctx, n_threads: int, n_threads_batch: int, /):
    """Sets threads for single tokens and for batches (clamped to 1..cores)."""


# int32_t llama_n_threads(struct llama_context * ctx);
@ctypes_function("llama_n_threads", [llama_context_p_ctypes], c_int32)
def llama_n_threads(ctx, /) -> int:
    """Threads for single-token decoding."""


# int32_t llama_n_threads_batch(struct llama_context * ctx);
@ctypes_function("llama_n_threads_batch", [llama_context_p_ctypes], c_int32)
def llama_n_threads_batch(ctx, /) -> int:
    """Threads for batches."""


# void llama_set_embeddings(struct llama_context * ctx, bool embeddings);
@ctypes_function("llama_set_embeddings", [llama_context_p_ctypes, c_bool], None)
def llama_set_embeddings(ctx, embeddings: bool, /):
    """Whether decode extracts embeddings."""


# void llama_set_causal_attn(struct llama_context * ctx, bool causal_attn);
@ctypes_function("llama_set_causal_attn", [llama_context_p_ctypes, c_bool], None)
def llama_set_causal_attn(ctx, causal_attn: bool, /):
    """Whether attention is causal."""


# bool llama_get_causal_attn(const struct llama_context * ctx);
@ctypes_function("llama_get_causal_attn", [llama_context_p_ctypes], c_bool)
def llama_get_causal_attn(ctx, /) -> bool:
    """Current causal-attention setting."""


# void llama_set_warmup(struct llama_context * ctx, bool warmup);
@ctypes_function("llama_set_warmup", [llama_context_p_ctypes, c_bool], None)
def llama_set_warmup(ctx, warmup: bool, /):
    """Warm-up mode (no effect on results)."""


# void llama_set_abort_callback(struct llama_context * ctx, ggml_abort_callback abort_callback, void * abort_callback_data);
@ctypes_function("llama_set_abort_callback", [llama_context_p_ctypes, ggml_abort_callback, c_void_p], None)
def llama_set_abort_callback(ctx, abort_callback, abort_callback_data, /):
    """Abort callback polled during decode; keep the callback object alive while it is set."""


# void llama_synchronize(struct llama_context * ctx);
@ctypes_function("llama_synchronize", [llama_context_p_ctypes], None)
def llama_synchronize(ctx, /):
    """Waits for pending work (decode is synchronous: no-op)."""


# ---- memory (KV cache) ----

# void llama_memory_clear(llama_memory_t mem, bool data);
@ctypes_function("llama_memory_clear", [llama_memory_t_ctypes, c_bool], None)
def llama_memory_clear(mem, data: bool, /):
    """Empties the cache (data: also zero the buffers)."""


# bool llama_memory_seq_rm(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1);
@ctypes_function("llama_memory_seq_rm", [llama_memory_t_ctypes, llama_seq_id, llama_pos, llama_pos], c_bool)
def llama_memory_seq_rm(mem, seq_id: int, p0: int, p1: int, /) -> bool:
    """Removes positions [p0, p1) of seq_id (seq_id < 0: all; p0/p1 < 0: open)."""


# void llama_memory_seq_cp(llama_memory_t mem, llama_seq_id seq_id_src, llama_seq_id seq_id_dst, llama_pos p0, llama_pos p1);
@ctypes_function("llama_memory_seq_cp", [llama_memory_t_ctypes, llama_seq_id, llama_seq_id, llama_pos, llama_pos], None)
def llama_memory_seq_cp(mem, seq_id_src: int, seq_id_dst: int, p0: int, p1: int, /):
    """Adds seq_id_dst to the cells of seq_id_src in [p0, p1)."""


# void llama_memory_seq_keep(llama_memory_t mem, llama_seq_id seq_id);
@ctypes_function("llama_memory_seq_keep", [llama_memory_t_ctypes, llama_seq_id], None)
def llama_memory_seq_keep(mem, seq_id: int, /):
    """Removes every sequence but seq_id."""


# void llama_memory_seq_add(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1, llama_pos delta);
@ctypes_function("llama_memory_seq_add", [llama_memory_t_ctypes, llama_seq_id, llama_pos, llama_pos, llama_pos], None)
def llama_memory_seq_add(mem, seq_id: int, p0: int, p1: int, delta: int, /):
    """Shifts positions [p0, p1) of seq_id by delta (cached keys are re-rotated)."""


# void llama_memory_seq_div(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1, int d);
@ctypes_function("llama_memory_seq_div", [llama_memory_t_ctypes, llama_seq_id, llama_pos, llama_pos, c_int], None)
def llama_memory_seq_div(mem, seq_id: int, p0: int, p1: int, d: int, /):
    """Divides positions [p0, p1) of seq_id by d."""


# llama_pos llama_memory_seq_pos_min(llama_memory_t mem, llama_seq_id seq_id);
@ctypes_function("llama_memory_seq_pos_min", [llama_memory_t_ctypes, llama_seq_id], llama_pos)
def llama_memory_seq_pos_min(mem, seq_id: int, /) -> int:
    """Smallest position of seq_id, -1 if empty."""


# llama_pos llama_memory_seq_pos_max(llama_memory_t mem, llama_seq_id seq_id);
@ctypes_function("llama_memory_seq_pos_max", [llama_memory_t_ctypes, llama_seq_id], llama_pos)
def llama_memory_seq_pos_max(mem, seq_id: int, /) -> int:
    """Largest position of seq_id, -1 if empty."""


# bool llama_memory_can_shift(llama_memory_t mem);
@ctypes_function("llama_memory_can_shift", [llama_memory_t_ctypes], c_bool)
def llama_memory_can_shift(mem, /) -> bool:
    """True: positions can be shifted."""


# ---- state ----

# size_t llama_state_get_size(struct llama_context * ctx);
@ctypes_function("llama_state_get_size", [llama_context_p_ctypes], c_size_t)
def llama_state_get_size(ctx, /) -> int:
    """Bytes needed to save the context's state."""


# size_t llama_state_get_data(struct llama_context * ctx, uint8_t * dst, size_t size);
@ctypes_function("llama_state_get_data", [llama_context_p_ctypes, POINTER(c_uint8), c_size_t], c_size_t)
def llama_state_get_data(ctx, dst, size: int, /) -> int:
    """Writes the state into dst; bytes written, 0 on error."""


# size_t llama_state_set_data(struct llama_context * ctx, const uint8_t * src, size_t size);
@ctypes_function("llama_state_set_data", [llama_context_p_ctypes, POINTER(c_uint8), c_size_t], c_size_t)
def llama_state_set_data(ctx, src, size: int, /) -> int:
    """Restores a state; bytes read, 0 on error."""


# bool llama_state_load_file(struct llama_context * ctx, const char * path_session, llama_token * tokens_out, size_t n_token_capacity, size_t * n_token_count_out);
@ctypes_function("llama_state_load_file",
                 [llama_context_p_ctypes, c_char_p, POINTER(llama_token), c_size_t, POINTER(c_size_t)], c_bool)
def llama_state_load_file(ctx, path_session: bytes, tokens_out, n_token_capacity: int, n_token_count_out, /) -> bool:
    """Loads a session file: state plus the prompt tokens."""


# bool llama_state_save_file(struct llama_context * ctx, const char * path_session, const llama_token * tokens, size_t n_token_count);
@ctypes_function("llama_state_save_file", [llama_context_p_ctypes, c_char_p, POINTER(llama_token), c_size_t], c_bool)
def llama_state_save_file(ctx, path_session: bytes, tokens, n_token_count: int, /) -> bool:
    """Saves state plus the prompt tokens to a session file."""


# size_t llama_state_seq_get_size(struct llama_context * ctx, llama_seq_id seq_id);
@ctypes_function("llama_state_seq_get_size", [llama_context_p_ctypes, llama_seq_id], c_size_t)
def llama_state_seq_get_size(ctx, seq_id: int, /) -> int:
    """Bytes needed for one sequence's KV state."""


# size_t llama_state_seq_get_data(struct llama_context * ctx, uint8_t * dst, size_t size, llama_seq_id seq_id);
@ctypes_function("llama_state_seq_get_data", [llama_context_p_ctypes, POINTER(c_uint8), c_size_t, llama_seq_id], c_size_t)
def llama_state_seq_get_data(ctx, dst, size: int, seq_id: int, /) -> int:
    """Writes one sequence's KV state; bytes written, 0 on error."""


# size_t llama_state_seq_set_data(struct llama_context * ctx, const uint8_t * src, size_t size, llama_seq_id dest_seq_id);
@ctypes_function("llama_state_seq_set_data", [llama_context_p_ctypes, POINTER(c_uint8), c_size_t, llama_seq_id], c_size_t)
def llama_state_seq_set_data(ctx, src, size: int, dest_seq_id: int, /) -> int:
    """Restores a sequence's KV state into dest_seq_id; bytes read, 0 on error."""


# size_t llama_state_seq_save_file(struct llama_context * ctx, const char * filepath, llama_seq_id seq_id, const llama_token * tokens, size_t n_token_count);
@ctypes_function("llama_state_seq_save_file",
                 [llama_context_p_ctypes, c_char_p, llama_seq_id, POINTER(llama_token), c_size_t], c_size_t)
def llama_state_seq_save_file(ctx, filepath: bytes, seq_id: int, tokens, n_token_count: int, /) -> int:
    """Saves one sequence's state and tokens; bytes written, 0 on error."""


# size_t llama_state_seq_load_file(struct llama_context * ctx, const char * filepath, llama_seq_id dest_seq_id, llama_token * tokens_out, size_t n_token_capacity, size_t * n_token_count_out);
@ctypes_function("llama_state_seq_load_file",
                 [llama_context_p_ctypes, c_char_p, llama_seq_id, POINTER(llama_token), c_size_t, POINTER(c_size_t)], c_size_t)
def llama_state_seq_load_file(ctx, filepath: bytes, dest_seq_id: int, tokens_out, n_token_capacity: int,
                              n_token_count_out, /) -> int:
    """Loads one sequence's state and tokens; bytes read, 0 on error."""


# size_t llama_state_seq_get_size_ext(struct llama_context * ctx, llama_seq_id seq_id, llama_state_seq_flags flags);
@ctypes_function("llama_state_seq_get_size_ext", [llama_context_p_ctypes, llama_seq_id, llama_state_seq_flags], c_size_t)
def llama_state_seq_get_size_ext(ctx, seq_id: int, flags: int, /) -> int:
    """As llama_state_seq_get_size (flags accepted)."""


# size_t llama_state_seq_get_data_ext(struct llama_context * ctx, uint8_t * dst, size_t size, llama_seq_id seq_id, llama_state_seq_flags flags);
@ctypes_function("llama_state_seq_get_data_ext",
                 [llama_context_p_ctypes, POINTER(c_uint8), c_size_t, llama_seq_id, llama_state_seq_flags], c_size_t)
def llama_state_seq_get_data_ext(ctx, dst, size: int, seq_id: int, flags: int, /) -> int:
    """As llama_state_seq_get_data."""


# size_t llama_state_seq_set_data_ext(struct llama_context * ctx, const uint8_t * src, size_t size, llama_seq_id dest_seq_id, llama_state_seq_flags flags);
@ctypes_function("llama_state_seq_set_data_ext",
                 [llama_context_p_ctypes, POINTER(c_uint8), c_size_t, llama_seq_id, llama_state_seq_flags], c_size_t)
def llama_state_seq_set_data_ext(ctx, src, size: int, dest_seq_id: int, flags: int, /) -> int:
    """As llama_state_seq_set_data."""


# ---- batches and decoding ----

# struct llama_batch llama_batch_get_one(llama_token * tokens, int32_t n_tokens);
@ctypes_function("llama_batch_get_one", [POINTER(llama_token), c_int32], llama_batch)
def llama_batch_get_one(tokens, n_tokens: int, /) -> llama_batch:
    """A batch viewing tokens (which must outlive the decode): sequence 0, last token outputs."""


# struct llama_batch llama_batch_init(int32_t n_tokens, int32_t embd, int32_t n_seq_max);
@ctypes_function("llama_batch_init", [c_int32, c_int32, c_int32], llama_batch)
def llama_batch_init(n_tokens: int, embd: int, n_seq_max: int, /) -> llama_batch:
    """Allocates a batch of n_tokens rows (n_tokens field starts at 0). Free with llama_batch_free."""


# void llama_batch_free(struct llama_batch batch);
@ctypes_function("llama_batch_free", [llama_batch], None)
def llama_batch_free(batch: llama_batch, /):
    """Frees a batch from llama_batch_init."""


# int32_t llama_decode(struct llama_context * ctx, struct llama_batch batch);
@ctypes_function("llama_decode", [llama_context_p_ctypes, llama_batch], c_int32)
def llama_decode(ctx, batch: llama_batch, /) -> int:
    """Decodes a batch: 0 ok, 1 no KV slot (cache unchanged), 2 aborted, -1 invalid input, < -1 error."""


# struct llama_batch_ext * llama_batch_ext_init(struct llama_context * ctx);
@ctypes_function("llama_batch_ext_init", [llama_context_p_ctypes], llama_batch_ext_p_ctypes)
def llama_batch_ext_init(ctx, /) -> Optional[int]:
    """New extended batch sized for ctx (n_batch rows). Free with llama_batch_ext_free."""


# void llama_batch_ext_free(struct llama_batch_ext * batch);
@ctypes_function("llama_batch_ext_free", [llama_batch_ext_p_ctypes], None)
def llama_batch_ext_free(batch, /):
    """Frees an extended batch; NULL-safe."""


# void llama_batch_ext_clear(struct llama_batch_ext * batch);
@ctypes_function("llama_batch_ext_clear", [llama_batch_ext_p_ctypes], None)
def llama_batch_ext_clear(batch, /):
    """Empties an extended batch."""


# int32_t llama_batch_ext_add(struct llama_batch_ext * batch, llama_seq_id seq_id);
@ctypes_function("llama_batch_ext_add", [llama_batch_ext_p_ctypes, llama_seq_id], c_int32)
def llama_batch_ext_add(batch, seq_id: int, /) -> int:
    """Appends a row without a token; its index, -1 full, -3 bad seq_id."""


# int32_t llama_batch_ext_add_token(struct llama_batch_ext * batch, llama_seq_id seq_id, llama_token id);
@ctypes_function("llama_batch_ext_add_token", [llama_batch_ext_p_ctypes, llama_seq_id, llama_token], c_int32)
def llama_batch_ext_add_token(batch, seq_id: int, id: int, /) -> int:
    """Appends token id at the sequence's next position; its index, -1 full, -2 bad token, -3 bad seq_id."""


# int32_t llama_batch_ext_add_embd(struct llama_batch_ext * batch, llama_seq_id seq_id, struct llama_embd embd);
@ctypes_function("llama_batch_ext_add_embd", [llama_batch_ext_p_ctypes, llama_seq_id, llama_embd], c_int32)
def llama_batch_ext_add_embd(batch, seq_id: int, embd: llama_embd, /) -> int:
    """Not supported: -1."""


# bool llama_batch_ext_add_seq(struct llama_batch_ext * batch, int32_t idx, llama_seq_id seq_id);
@ctypes_function("llama_batch_ext_add_seq", [llama_batch_ext_p_ctypes, c_int32, llama_seq_id], c_bool)
def llama_batch_ext_add_seq(batch, idx: int, seq_id: int, /) -> bool:
    """Adds seq_id to row idx."""


# bool llama_batch_ext_set_embd_token(struct llama_batch_ext * batch, int32_t idx, struct llama_embd embd);
@ctypes_function("llama_batch_ext_set_embd_token", [llama_batch_ext_p_ctypes, c_int32, llama_embd], c_bool)
def llama_batch_ext_set_embd_token(batch, idx: int, embd: llama_embd, /) -> bool:
    """Not supported: False."""


# bool llama_batch_ext_set_embd_state(struct llama_batch_ext * batch, int32_t idx, struct llama_embd embd);
@ctypes_function("llama_batch_ext_set_embd_state", [llama_batch_ext_p_ctypes, c_int32, llama_embd], c_bool)
def llama_batch_ext_set_embd_state(batch, idx: int, embd: llama_embd, /) -> bool:
    """Not supported: False."""


# bool llama_batch_ext_set_output_embd(struct llama_batch_ext * batch, int32_t idx, bool value);
@ctypes_function("llama_batch_ext_set_output_embd", [llama_batch_ext_p_ctypes, c_int32, c_bool], c_bool)
def llama_batch_ext_set_output_embd(batch, idx: int, value: bool, /) -> bool:
    """Marks row idx to output embeddings."""


# bool llama_batch_ext_set_output_logits(struct llama_batch_ext * batch, int32_t idx, bool value);
@ctypes_function("llama_batch_ext_set_output_logits", [llama_batch_ext_p_ctypes, c_int32, c_bool], c_bool)
def llama_batch_ext_set_output_logits(batch, idx: int, value: bool, /) -> bool:
    """Marks row idx to output logits."""


# bool llama_batch_ext_set_pos(struct llama_batch_ext * batch, int32_t idx, const llama_pos * pos);
@ctypes_function("llama_batch_ext_set_pos", [llama_batch_ext_p_ctypes, c_int32, POINTER(llama_pos)], c_bool)
def llama_batch_ext_set_pos(batch, idx: int, pos, /) -> bool:
    """Sets the position of row idx."""


# int32_t llama_process(struct llama_context * ctx, enum llama_process_type type, struct llama_batch_ext * batch);
@ctypes_function("llama_process", [llama_context_p_ctypes, c_int, llama_batch_ext_p_ctypes], c_int32)
def llama_process(ctx, type: int, batch, /) -> int:
    """Runs an extended batch (DECODE only); codes as llama_decode."""


# float * llama_get_logits(struct llama_context * ctx);
@ctypes_function("llama_get_logits", [llama_context_p_ctypes], POINTER(c_float))
def llama_get_logits(ctx, /):
    """Logits of the last decode, [n_outputs][n_vocab]; NULL if none."""


# float * llama_get_logits_ith(struct llama_context * ctx, int32_t i);
@ctypes_function("llama_get_logits_ith", [llama_context_p_ctypes, c_int32], POINTER(c_float))
def llama_get_logits_ith(ctx, i: int, /):
    """Logits row of batch token i (negative: from the end of the outputs); NULL if not an output."""


# float * llama_get_embeddings(struct llama_context * ctx);
@ctypes_function("llama_get_embeddings", [llama_context_p_ctypes], POINTER(c_float))
def llama_get_embeddings(ctx, /):
    """Token embeddings of the last decode, [n_outputs][n_embd] (pooling NONE)."""


# float * llama_get_embeddings_ith(struct llama_context * ctx, int32_t i);
@ctypes_function("llama_get_embeddings_ith", [llama_context_p_ctypes, c_int32], POINTER(c_float))
def llama_get_embeddings_ith(ctx, i: int, /):
    """Embedding of batch token i; NULL if not available."""


# float * llama_get_embeddings_seq(struct llama_context * ctx, llama_seq_id seq_id);
@ctypes_function("llama_get_embeddings_seq", [llama_context_p_ctypes, llama_seq_id], POINTER(c_float))
def llama_get_embeddings_seq(ctx, seq_id: int, /):
    """Pooled embedding of a sequence; NULL if pooling is NONE."""


# ---- performance ----

# struct llama_perf_context_data llama_perf_context(const struct llama_context * ctx);
@ctypes_function("llama_perf_context", [llama_context_p_ctypes], llama_perf_context_data)
def llama_perf_context(ctx, /) -> llama_perf_context_data:
    """Timings of the context."""


# void llama_perf_context_print(const struct llama_context * ctx);
@ctypes_function("llama_perf_context_print", [llama_context_p_ctypes], None)
def llama_perf_context_print(ctx, /):
    """Logs the timings of the context."""


# void llama_perf_context_reset(struct llama_context * ctx);
@ctypes_function("llama_perf_context_reset", [llama_context_p_ctypes], None)
def llama_perf_context_reset(ctx, /):
    """Resets the timings of the context."""


__all__ = [n for n in dir() if n.startswith(("llama_", "LLAMA_"))]
