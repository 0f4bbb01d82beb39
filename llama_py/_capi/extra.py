"""llama.h mirror: quantization, chat templates, and the entry points of features this engine
does not implement (LoRA, control vectors, encoders, training, backend sampling, models from
FILE pointers or user callbacks). Those exist and return llama.h's failure value.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_bool, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p

from .._lib import ctypes_function
from .common import (
    gguf_context_p_ctypes, llama_adapter_lora_p_ctypes, llama_context_p_ctypes, llama_model_p_ctypes,
    llama_model_set_tensor_data_t, llama_pos, llama_seq_id, llama_token,
)


class llama_model_kv_override_value(ctypes.Union):
    _fields_ = [
        ("val_i64", c_int64),
        ("val_f64", ctypes.c_double),
        ("val_bool", c_bool),
        ("val_str", ctypes.c_char * 128),
    ]


class llama_model_kv_override(Structure):
    _fields_ = [
        ("tag", c_int),
        ("key", ctypes.c_char * 128),
        ("value", llama_model_kv_override_value),
    ]


class llama_model_tensor_override(Structure):
    _fields_ = [("pattern", c_char_p), ("type", c_int)]


class llama_model_imatrix_data(Structure):
    _fields_ = [("name", c_char_p), ("data", POINTER(c_float)), ("size", c_size_t)]


class llama_model_quantize_params(Structure):
    """Quantization options; start from llama_model_quantize_default_params()."""
    _fields_ = [
        ("nthread", c_int32),
        ("ftype", c_int),
        ("output_tensor_type", c_int),
        ("token_embedding_type", c_int),
        ("allow_requantize", c_bool),
        ("quantize_output_tensor", c_bool),
        ("only_copy", c_bool),
        ("pure", c_bool),
        ("keep_split", c_bool),
        ("dry_run", c_bool),
        ("imatrix", POINTER(llama_model_imatrix_data)),
        ("kv_overrides", POINTER(llama_model_kv_override)),
        ("tt_overrides", POINTER(llama_model_tensor_override)),
        ("prune_layers", POINTER(c_int32)),
        ("max_buf_size", c_size_t),
    ]


class llama_chat_message(Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


class llama_embd(Structure):
    _fields_ = [("data", POINTER(c_float)), ("n_rows", c_size_t), ("n_embd", c_size_t)]


class llama_opt_params(Structure):
    _fields_ = [
        ("n_ctx_train", c_uint32),
        ("param_filter", c_void_p),
        ("param_filter_ud", c_void_p),
        ("get_opt_pars_ud", c_void_p),
    ]


# struct llama_model_quantize_params llama_model_quantize_default_params(void);
@ctypes_function("llama_model_quantize_default_params", [], llama_model_quantize_params)
def llama_model_quantize_default_params() -> llama_model_quantize_params:
    """Default quantization parameters (Q5_1)."""


# uint32_t llama_model_quantize(const char * fname_inp, const char * fname_out, const llama_model_quantize_params * params);
@ctypes_function("llama_model_quantize", [c_char_p, c_char_p, POINTER(llama_model_quantize_params)], c_uint32)
def llama_model_quantize(fname_inp: bytes, fname_out: bytes, params, /) -> int:
    """Quantizes a GGUF file; 0 on success."""


# int32_t llama_chat_apply_template(const char * tmpl, const struct llama_chat_message * chat, size_t n_msg, bool add_ass, char * buf, int32_t length);
@ctypes_function("llama_chat_apply_template", [c_char_p, POINTER(llama_chat_message), c_size_t, c_bool, c_char_p, c_int32], c_int32)
def llama_chat_apply_template(tmpl: bytes, chat, n_msg: int, add_ass: bool, buf, length: int, /) -> int:
    """Formats a chat; returns the length written or needed, -1 if the template is unknown."""


# int32_t llama_chat_builtin_templates(const char ** output, size_t len);
@ctypes_function("llama_chat_builtin_templates", [POINTER(c_char_p), c_size_t], c_int32)
def llama_chat_builtin_templates(output, len: int, /) -> int:
    """Names of the built-in templates; returns their count."""


# ---- not supported by this engine: each returns its documented failure value ----

# void llama_model_save_to_file(const struct llama_model * model, const char * path_model);
@ctypes_function("llama_model_save_to_file", [llama_model_p_ctypes, c_char_p], None)
def llama_model_save_to_file(model, path_model: bytes, /):
    """Writes the model as a GGUF file."""


# struct llama_adapter_lora * llama_adapter_lora_init(struct llama_model * model, const char * path_lora);
@ctypes_function("llama_adapter_lora_init", [llama_model_p_ctypes, c_char_p], llama_adapter_lora_p_ctypes)
def llama_adapter_lora_init(model, path_lora: bytes, /):
    """Not supported: returns None."""


# struct llama_adapter_lora * llama_adapter_lora_init_from_file_ptr(struct llama_model * model, FILE * file);
@ctypes_function("llama_adapter_lora_init_from_file_ptr", [llama_model_p_ctypes, c_void_p], llama_adapter_lora_p_ctypes)
def llama_adapter_lora_init_from_file_ptr(model, file, /):
    """Not supported: returns None."""


# int32_t llama_adapter_meta_val_str(const struct llama_adapter_lora *, const char * key, char * buf, size_t buf_size);
@ctypes_function("llama_adapter_meta_val_str", [llama_adapter_lora_p_ctypes, c_char_p, c_char_p, c_size_t], c_int32)
def llama_adapter_meta_val_str(adapter, key: bytes, buf, buf_size: int, /) -> int:
    """Not supported: returns -1."""


# int32_t llama_adapter_meta_count(const struct llama_adapter_lora *);
@ctypes_function("llama_adapter_meta_count", [llama_adapter_lora_p_ctypes], c_int32)
def llama_adapter_meta_count(adapter, /) -> int:
    """Not supported: returns 0."""


# int32_t llama_adapter_meta_key_by_index(const struct llama_adapter_lora *, int32_t i, char * buf, size_t buf_size);
@ctypes_function("llama_adapter_meta_key_by_index", [llama_adapter_lora_p_ctypes, c_int32, c_char_p, c_size_t], c_int32)
def llama_adapter_meta_key_by_index(adapter, i: int, buf, buf_size: int, /) -> int:
    """Not supported: returns -1."""


# int32_t llama_adapter_meta_val_str_by_index(const struct llama_adapter_lora *, int32_t i, char * buf, size_t buf_size);
@ctypes_function("llama_adapter_meta_val_str_by_index", [llama_adapter_lora_p_ctypes, c_int32, c_char_p, c_size_t], c_int32)
def llama_adapter_meta_val_str_by_index(adapter, i: int, buf, buf_size: int, /) -> int:
    """Not supported: returns -1."""


# void llama_adapter_lora_free(struct llama_adapter_lora * adapter);
@ctypes_function("llama_adapter_lora_free", [llama_adapter_lora_p_ctypes], None)
def llama_adapter_lora_free(adapter, /):
    """NULL-safe no-op."""


# uint64_t llama_adapter_get_alora_n_invocation_tokens(const struct llama_adapter_lora *);
@ctypes_function("llama_adapter_get_alora_n_invocation_tokens", [llama_adapter_lora_p_ctypes], c_uint64)
def llama_adapter_get_alora_n_invocation_tokens(adapter, /) -> int:
    """Number of aLoRA invocation tokens (0 for a plain LoRA)."""


# const llama_token * llama_adapter_get_alora_invocation_tokens(const struct llama_adapter_lora *);
@ctypes_function("llama_adapter_get_alora_invocation_tokens", [llama_adapter_lora_p_ctypes], POINTER(llama_token))
def llama_adapter_get_alora_invocation_tokens(adapter, /):
    """The aLoRA invocation tokens, or NULL."""


# int32_t llama_set_adapters_lora(struct llama_context *, struct llama_adapter_lora ** adapters, size_t n_adapters, float * scales);
@ctypes_function("llama_set_adapters_lora", [llama_context_p_ctypes, POINTER(llama_adapter_lora_p_ctypes), c_size_t, POINTER(c_float)], c_int32)
def llama_set_adapters_lora(ctx, adapters, n_adapters: int, scales, /) -> int:
    """Sets the context's adapters with their scales (n_adapters 0 clears); 0, or -1 (logged)."""


# int32_t llama_set_adapters_lora_seq(struct llama_context *, llama_seq_id seq_id, struct llama_adapter_lora ** adapters, size_t n_adapters, float * scales);
@ctypes_function("llama_set_adapters_lora_seq", [llama_context_p_ctypes, llama_seq_id, POINTER(llama_adapter_lora_p_ctypes), c_size_t, POINTER(c_float)], c_int32)
def llama_set_adapters_lora_seq(ctx, seq_id: int, adapters, n_adapters: int, scales, /) -> int:
    """llama_py extension: the adapters applied to sequence seq_id's tokens only, on top of the
    context's (n_adapters 0 clears them); one llama_decode then mixes sequences with different
    adapters. 0, or -1 (logged)."""


# int32_t llama_set_alora_start(struct llama_context *, llama_seq_id seq_id, llama_pos pos_start);
@ctypes_function("llama_set_alora_start", [llama_context_p_ctypes, llama_seq_id, llama_pos], c_int32)
def llama_set_alora_start(ctx, seq_id: int, pos_start: int, /) -> int:
    """llama_py extension: aLoRA adapters set on sequence seq_id (llama_set_adapters_lora_seq)
    apply to its tokens at positions >= pos_start only (< 0: to none); 0, or -1 (logged)."""


# int32_t llama_set_adapter_cvec(struct llama_context *, const float * data, size_t len, int32_t n_embd, int32_t il_start, int32_t il_end);
@ctypes_function("llama_set_adapter_cvec", [llama_context_p_ctypes, POINTER(c_float), c_size_t, c_int32, c_int32, c_int32], c_int32)
def llama_set_adapter_cvec(ctx, data, len: int, n_embd: int, il_start: int, il_end: int, /) -> int:
    """Not supported: -1 (0 when clearing with data NULL)."""


# bool llama_set_sampler(struct llama_context *, llama_seq_id, struct llama_sampler *);
@ctypes_function("llama_set_sampler", [llama_context_p_ctypes, llama_seq_id, c_void_p], c_bool)
def llama_set_sampler(ctx, seq_id: int, smpl, /) -> bool:
    """Not supported: returns False."""


# llama_token llama_get_sampled_token_ith(struct llama_context *, int32_t i);
@ctypes_function("llama_get_sampled_token_ith", [llama_context_p_ctypes, c_int32], llama_token)
def llama_get_sampled_token_ith(ctx, i: int, /) -> int:
    """Not supported: LLAMA_TOKEN_NULL."""


# float * llama_get_sampled_probs_ith(struct llama_context *, int32_t i);
@ctypes_function("llama_get_sampled_probs_ith", [llama_context_p_ctypes, c_int32], POINTER(c_float))
def llama_get_sampled_probs_ith(ctx, i: int, /):
    """Not supported: NULL."""


# uint32_t llama_get_sampled_probs_count_ith(struct llama_context *, int32_t i);
@ctypes_function("llama_get_sampled_probs_count_ith", [llama_context_p_ctypes, c_int32], c_uint32)
def llama_get_sampled_probs_count_ith(ctx, i: int, /) -> int:
    """Not supported: 0."""


# float * llama_get_sampled_logits_ith(struct llama_context *, int32_t i);
@ctypes_function("llama_get_sampled_logits_ith", [llama_context_p_ctypes, c_int32], POINTER(c_float))
def llama_get_sampled_logits_ith(ctx, i: int, /):
    """Not supported: NULL."""


# uint32_t llama_get_sampled_logits_count_ith(struct llama_context *, int32_t i);
@ctypes_function("llama_get_sampled_logits_count_ith", [llama_context_p_ctypes, c_int32], c_uint32)
def llama_get_sampled_logits_count_ith(ctx, i: int, /) -> int:
    """Not supported: 0."""


# llama_token * llama_get_sampled_candidates_ith(struct llama_context *, int32_t i);
@ctypes_function("llama_get_sampled_candidates_ith", [llama_context_p_ctypes, c_int32], POINTER(llama_token))
def llama_get_sampled_candidates_ith(ctx, i: int, /):
    """Not supported: NULL."""


# uint32_t llama_get_sampled_candidates_count_ith(struct llama_context *, int32_t i);
@ctypes_function("llama_get_sampled_candidates_count_ith", [llama_context_p_ctypes, c_int32], c_uint32)
def llama_get_sampled_candidates_count_ith(ctx, i: int, /) -> int:
    """Not supported: 0."""


# bool llama_opt_param_filter_all(const struct ggml_tensor * tensor, void * userdata);
@ctypes_function("llama_opt_param_filter_all", [c_void_p, c_void_p], c_bool)
def llama_opt_param_filter_all(tensor, userdata, /) -> bool:
    """Returns True."""


# void llama_opt_init(struct llama_context *, struct llama_model *, struct llama_opt_params);
@ctypes_function("llama_opt_init", [llama_context_p_ctypes, llama_model_p_ctypes, llama_opt_params], None)
def llama_opt_init(lctx, model, lopt_params, /):
    """Training is not supported: logs an error."""


# void llama_opt_epoch(struct llama_context *, ggml_opt_dataset_t, ggml_opt_result_t, ggml_opt_result_t, int64_t, ...);
@ctypes_function("llama_opt_epoch", [llama_context_p_ctypes, c_void_p, c_void_p, c_void_p, c_int64, c_void_p, c_void_p], None)
def llama_opt_epoch(lctx, dataset, result_train, result_eval, idata_split: int, callback_train, callback_eval, /):
    """Training is not supported: logs an error."""
