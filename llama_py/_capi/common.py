"""Shared part of the llama.h mirror: typedefs, enums, constants, callback types, and the
process-wide functions (version, ABI, defaults, system info, logging, split paths, the
entry points of unsupported features). llama_cpp.py re-exports everything here.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_bool, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32, c_void_p

from .._lib import ctypes_function

# ---- ggml types used by llama.h ----
GGML_TYPE_F32 = 0
GGML_TYPE_F16 = 1
GGML_TYPE_Q4_0 = 2
GGML_TYPE_Q4_1 = 3
GGML_TYPE_Q5_0 = 6
GGML_TYPE_Q5_1 = 7
GGML_TYPE_Q8_0 = 8
GGML_TYPE_Q8_1 = 9
GGML_TYPE_Q2_K = 10
GGML_TYPE_Q3_K = 11
GGML_TYPE_Q4_K = 12
GGML_TYPE_Q5_K = 13
GGML_TYPE_Q6_K = 14
GGML_TYPE_Q8_K = 15
GGML_TYPE_IQ2_XXS = 16
GGML_TYPE_IQ2_XS = 17
GGML_TYPE_IQ3_XXS = 18
GGML_TYPE_IQ1_S = 19
GGML_TYPE_IQ4_NL = 20
GGML_TYPE_IQ3_S = 21
GGML_TYPE_IQ2_S = 22
GGML_TYPE_IQ4_XS = 23
GGML_TYPE_I8 = 24
GGML_TYPE_I16 = 25
GGML_TYPE_I32 = 26
GGML_TYPE_I64 = 27
GGML_TYPE_F64 = 28
GGML_TYPE_IQ1_M = 29
GGML_TYPE_BF16 = 30
GGML_TYPE_TQ1_0 = 34
GGML_TYPE_TQ2_0 = 35
GGML_TYPE_MXFP4 = 39
GGML_TYPE_COUNT = 40

GGML_ROPE_TYPE_NEOX = 2

# bool (*)(void * data): polled during decode; returning True aborts.
ggml_abort_callback = ctypes.CFUNCTYPE(c_bool, c_void_p)
# bool (*)(struct ggml_tensor *, bool ask, void *): unused by this engine.
ggml_backend_sched_eval_callback = ctypes.CFUNCTYPE(c_bool, c_void_p, c_bool, c_void_p)
# void (*)(enum ggml_log_level, const char * text, void * user_data)
llama_log_callback = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_void_p)
# bool (*)(float progress, void * user_data): returning False cancels the load.
llama_progress_callback = ctypes.CFUNCTYPE(c_bool, c_float, c_void_p)
# void (*)(struct ggml_tensor *, void *)
llama_model_set_tensor_data_t = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)

# ---- typedefs and handles ----
llama_token = c_int32
llama_token_p = POINTER(llama_token)
llama_pos = c_int32
llama_seq_id = c_int32
llama_state_seq_flags = c_uint32

llama_vocab_p = c_void_p
llama_vocab_p_ctypes = c_void_p
llama_model_p = c_void_p
llama_model_p_ctypes = c_void_p
llama_context_p = c_void_p
llama_context_p_ctypes = c_void_p
llama_memory_t = c_void_p
llama_memory_t_ctypes = c_void_p
llama_adapter_lora_p = c_void_p
llama_adapter_lora_p_ctypes = c_void_p
llama_batch_ext_p = c_void_p
llama_batch_ext_p_ctypes = c_void_p
gguf_context_p = c_void_p
gguf_context_p_ctypes = c_void_p

# ---- constants ----
LLAMA_DEFAULT_SEED = 0xFFFFFFFF
LLAMA_TOKEN_NULL = -1
LLAMA_FILE_MAGIC_GGLA = 0x67676C61
LLAMA_FILE_MAGIC_GGSN = 0x6767736E
LLAMA_FILE_MAGIC_GGSQ = 0x67677371
LLAMA_SESSION_MAGIC = LLAMA_FILE_MAGIC_GGSN
LLAMA_SESSION_VERSION = 10
LLAMA_STATE_SEQ_MAGIC = LLAMA_FILE_MAGIC_GGSQ
LLAMA_STATE_SEQ_VERSION = 3
LLAMA_STATE_SEQ_FLAGS_NONE = 0
LLAMA_STATE_SEQ_FLAGS_SWA_ONLY = 1
LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY = 1
LLAMA_STATE_SEQ_FLAGS_ON_DEVICE = 2
LLAMA_MAX_DEVICES = 1

# enum llama_vocab_type
LLAMA_VOCAB_TYPE_NONE = 0
LLAMA_VOCAB_TYPE_SPM = 1
LLAMA_VOCAB_TYPE_BPE = 2
LLAMA_VOCAB_TYPE_WPM = 3
LLAMA_VOCAB_TYPE_UGM = 4
LLAMA_VOCAB_TYPE_RWKV = 5

# enum llama_rope_type
LLAMA_ROPE_TYPE_NONE = -1
LLAMA_ROPE_TYPE_NORM = 0
LLAMA_ROPE_TYPE_NEOX = GGML_ROPE_TYPE_NEOX

# enum llama_token_type
LLAMA_TOKEN_TYPE_UNDEFINED = 0
LLAMA_TOKEN_TYPE_NORMAL = 1
LLAMA_TOKEN_TYPE_UNKNOWN = 2
LLAMA_TOKEN_TYPE_CONTROL = 3
LLAMA_TOKEN_TYPE_USER_DEFINED = 4
LLAMA_TOKEN_TYPE_UNUSED = 5
LLAMA_TOKEN_TYPE_BYTE = 6

# enum llama_token_attr
LLAMA_TOKEN_ATTR_UNDEFINED = 0
LLAMA_TOKEN_ATTR_UNKNOWN = 1 << 0
LLAMA_TOKEN_ATTR_UNUSED = 1 << 1
LLAMA_TOKEN_ATTR_NORMAL = 1 << 2
LLAMA_TOKEN_ATTR_CONTROL = 1 << 3
LLAMA_TOKEN_ATTR_USER_DEFINED = 1 << 4
LLAMA_TOKEN_ATTR_BYTE = 1 << 5
LLAMA_TOKEN_ATTR_NORMALIZED = 1 << 6
LLAMA_TOKEN_ATTR_LSTRIP = 1 << 7
LLAMA_TOKEN_ATTR_RSTRIP = 1 << 8
LLAMA_TOKEN_ATTR_SINGLE_WORD = 1 << 9

# enum llama_ftype
LLAMA_FTYPE_ALL_F32 = 0
LLAMA_FTYPE_MOSTLY_F16 = 1
LLAMA_FTYPE_MOSTLY_Q4_0 = 2
LLAMA_FTYPE_MOSTLY_Q4_1 = 3
LLAMA_FTYPE_MOSTLY_Q8_0 = 7
LLAMA_FTYPE_MOSTLY_Q5_0 = 8
LLAMA_FTYPE_MOSTLY_Q5_1 = 9
LLAMA_FTYPE_MOSTLY_Q2_K = 10
LLAMA_FTYPE_MOSTLY_Q3_K_S = 11
LLAMA_FTYPE_MOSTLY_Q3_K_M = 12
LLAMA_FTYPE_MOSTLY_Q3_K_L = 13
LLAMA_FTYPE_MOSTLY_Q4_K_S = 14
LLAMA_FTYPE_MOSTLY_Q4_K_M = 15
LLAMA_FTYPE_MOSTLY_Q5_K_S = 16
LLAMA_FTYPE_MOSTLY_Q5_K_M = 17
LLAMA_FTYPE_MOSTLY_Q6_K = 18
LLAMA_FTYPE_MOSTLY_IQ2_XXS = 19
LLAMA_FTYPE_MOSTLY_IQ2_XS = 20
LLAMA_FTYPE_MOSTLY_Q2_K_S = 21
LLAMA_FTYPE_MOSTLY_IQ3_XS = 22
LLAMA_FTYPE_MOSTLY_IQ3_XXS = 23
LLAMA_FTYPE_MOSTLY_IQ1_S = 24
LLAMA_FTYPE_MOSTLY_IQ4_NL = 25
LLAMA_FTYPE_MOSTLY_IQ3_S = 26
LLAMA_FTYPE_MOSTLY_IQ3_M = 27
LLAMA_FTYPE_MOSTLY_IQ2_S = 28
LLAMA_FTYPE_MOSTLY_IQ2_M = 29
LLAMA_FTYPE_MOSTLY_IQ4_XS = 30
LLAMA_FTYPE_MOSTLY_IQ1_M = 31
LLAMA_FTYPE_MOSTLY_BF16 = 32
LLAMA_FTYPE_MOSTLY_TQ1_0 = 36
LLAMA_FTYPE_MOSTLY_TQ2_0 = 37
LLAMA_FTYPE_MOSTLY_MXFP4_MOE = 38
LLAMA_FTYPE_GUESSED = 1024

# enum llama_rope_scaling_type
LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED = -1
LLAMA_ROPE_SCALING_TYPE_NONE = 0
LLAMA_ROPE_SCALING_TYPE_LINEAR = 1
LLAMA_ROPE_SCALING_TYPE_YARN = 2
LLAMA_ROPE_SCALING_TYPE_LONGROPE = 3
LLAMA_ROPE_SCALING_TYPE_MAX_VALUE = LLAMA_ROPE_SCALING_TYPE_LONGROPE

# enum llama_pooling_type
LLAMA_POOLING_TYPE_UNSPECIFIED = -1
LLAMA_POOLING_TYPE_NONE = 0
LLAMA_POOLING_TYPE_MEAN = 1
LLAMA_POOLING_TYPE_CLS = 2
LLAMA_POOLING_TYPE_LAST = 3
LLAMA_POOLING_TYPE_RANK = 4

# enum llama_attention_type
LLAMA_ATTENTION_TYPE_UNSPECIFIED = -1
LLAMA_ATTENTION_TYPE_CAUSAL = 0
LLAMA_ATTENTION_TYPE_NON_CAUSAL = 1

# enum llama_flash_attn_type
LLAMA_FLASH_ATTN_TYPE_AUTO = -1
LLAMA_FLASH_ATTN_TYPE_DISABLED = 0
LLAMA_FLASH_ATTN_TYPE_ENABLED = 1

# enum llama_split_mode
LLAMA_SPLIT_MODE_NONE = 0
LLAMA_SPLIT_MODE_LAYER = 1
LLAMA_SPLIT_MODE_ROW = 2
LLAMA_SPLIT_MODE_TENSOR = 3

# enum llama_load_mode
LLAMA_LOAD_MODE_AUTO = -1
LLAMA_LOAD_MODE_NONE = 0
LLAMA_LOAD_MODE_MMAP = 1
LLAMA_LOAD_MODE_MLOCK = 2
LLAMA_LOAD_MODE_MMAP_MLOCK = 3
LLAMA_LOAD_MODE_DIRECT_IO = 4

# enum llama_lazy_mode
LLAMA_LAZY_MODE_OFF = 0
LLAMA_LAZY_MODE_AUTO = 1
LLAMA_LAZY_MODE_ON = 2

# enum llama_context_type
LLAMA_CONTEXT_TYPE_DEFAULT = 0
LLAMA_CONTEXT_TYPE_MTP = 1

# enum llama_model_kv_override_type
LLAMA_KV_OVERRIDE_TYPE_INT = 0
LLAMA_KV_OVERRIDE_TYPE_FLOAT = 1
LLAMA_KV_OVERRIDE_TYPE_BOOL = 2
LLAMA_KV_OVERRIDE_TYPE_STR = 3

# enum llama_model_meta_key
LLAMA_MODEL_META_KEY_SAMPLING_SEQUENCE = 0
LLAMA_MODEL_META_KEY_SAMPLING_TOP_K = 1
LLAMA_MODEL_META_KEY_SAMPLING_TOP_P = 2
LLAMA_MODEL_META_KEY_SAMPLING_MIN_P = 3
LLAMA_MODEL_META_KEY_SAMPLING_XTC_PROBABILITY = 4
LLAMA_MODEL_META_KEY_SAMPLING_XTC_THRESHOLD = 5
LLAMA_MODEL_META_KEY_SAMPLING_TEMP = 6
LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_LAST_N = 7
LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_REPEAT = 8
LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT = 9
LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_TAU = 10
LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_ETA = 11

# enum llama_process_type
LLAMA_PROCESS_TYPE_ENCODE = 0
LLAMA_PROCESS_TYPE_DECODE = 1

# enum ggml_numa_strategy
GGML_NUMA_STRATEGY_DISABLED = 0
GGML_NUMA_STRATEGY_DISTRIBUTE = 1
GGML_NUMA_STRATEGY_ISOLATE = 2
GGML_NUMA_STRATEGY_NUMACTL = 3
GGML_NUMA_STRATEGY_MIRROR = 4
GGML_NUMA_STRATEGY_COUNT = 5


# ---- process-wide functions (src/llama.c) ----

# const char * llama_version(void);
@ctypes_function("llama_version", [], c_char_p)
def llama_version() -> bytes:
    """Library version string."""


# int llama_abi_version(void);
@ctypes_function("llama_abi_version", [], c_int)
def llama_abi_version() -> int:
    """ABI version of the loaded library."""


# size_t llama_abi_struct_size(const char * struct_name);
@ctypes_function("llama_abi_struct_size", [c_char_p], c_size_t)
def llama_abi_struct_size(struct_name: bytes, /) -> int:
    """sizeof a public llama struct; 0 if unknown."""


# size_t llama_abi_field_offset(const char * struct_name, const char * field_name);
@ctypes_function("llama_abi_field_offset", [c_char_p, c_char_p], c_size_t)
def llama_abi_field_offset(struct_name: bytes, field_name: bytes, /) -> int:
    """offsetof a field of a public llama struct; SIZE_MAX if unknown."""


# const char * llama_flash_attn_type_name(enum llama_flash_attn_type);
@ctypes_function("llama_flash_attn_type_name", [c_int], c_char_p)
def llama_flash_attn_type_name(flash_attn_type: int, /) -> bytes:
    """'auto', 'disabled' or 'enabled'."""


# const char * llama_load_mode_name(enum llama_load_mode);
@ctypes_function("llama_load_mode_name", [c_int], c_char_p)
def llama_load_mode_name(load_mode: int, /) -> bytes:
    """Name of a load mode."""


# enum llama_load_mode llama_load_mode_from_str(const char *);
@ctypes_function("llama_load_mode_from_str", [c_char_p], c_int)
def llama_load_mode_from_str(value: bytes, /) -> int:
    """Load mode from its name (AUTO if unknown)."""


# const char * llama_ftype_name(enum llama_ftype);
@ctypes_function("llama_ftype_name", [c_int], c_char_p)
def llama_ftype_name(ftype: int, /) -> bytes:
    """Name of a file type."""


# void llama_backend_init(void);
@ctypes_function("llama_backend_init", [], None)
def llama_backend_init():
    """Initialises global state (idempotent)."""


# void llama_backend_free(void);
@ctypes_function("llama_backend_free", [], None)
def llama_backend_free():
    """Releases global state."""


# void llama_numa_init(enum ggml_numa_strategy numa);
@ctypes_function("llama_numa_init", [c_int], None)
def llama_numa_init(numa: int, /):
    """NUMA placement (no-op here)."""


# int64_t llama_time_us(void);
@ctypes_function("llama_time_us", [], c_int64)
def llama_time_us() -> int:
    """Microseconds from a monotonic clock."""


# size_t llama_max_devices(void);
@ctypes_function("llama_max_devices", [], c_size_t)
def llama_max_devices() -> int:
    """Max devices (1: CPU)."""


# size_t llama_max_parallel_sequences(void);
@ctypes_function("llama_max_parallel_sequences", [], c_size_t)
def llama_max_parallel_sequences() -> int:
    """Max sequences per context."""


# size_t llama_max_tensor_buft_overrides(void);
@ctypes_function("llama_max_tensor_buft_overrides", [], c_size_t)
def llama_max_tensor_buft_overrides() -> int:
    """0: not supported."""


# bool llama_supports_mmap(void);
@ctypes_function("llama_supports_mmap", [], c_bool)
def llama_supports_mmap() -> bool:
    """True: models are memory-mapped."""


# bool llama_supports_mlock(void);
@ctypes_function("llama_supports_mlock", [], c_bool)
def llama_supports_mlock() -> bool:
    """True where mlock is available."""


# bool llama_supports_gpu_offload(void);
@ctypes_function("llama_supports_gpu_offload", [], c_bool)
def llama_supports_gpu_offload() -> bool:
    """False: CPU only in this build."""


# bool llama_supports_rpc(void);
@ctypes_function("llama_supports_rpc", [], c_bool)
def llama_supports_rpc() -> bool:
    """False: RPC is not supported."""


# const char * llama_print_system_info(void);
@ctypes_function("llama_print_system_info", [], c_char_p)
def llama_print_system_info() -> bytes:
    """CPU features and the kernel variant in use."""


# void llama_log_set(ggml_log_callback log_callback, void * user_data);
@ctypes_function("llama_log_set", [llama_log_callback, c_void_p], None)
def llama_log_set(log_callback, user_data, /):
    """Sets the log callback (keep a reference to the callback object while it is set)."""


# void llama_log_get(ggml_log_callback * log_callback, void ** user_data);
@ctypes_function("llama_log_get", [POINTER(llama_log_callback), POINTER(c_void_p)], None)
def llama_log_get(log_callback, user_data, /):
    """Current log callback and user data."""


# int llama_split_path(char * split_path, size_t maxlen, const char * path_prefix, int split_no, int split_count);
@ctypes_function("llama_split_path", [c_char_p, c_size_t, c_char_p, c_int, c_int], c_int)
def llama_split_path(split_path, maxlen: int, path_prefix: bytes, split_no: int, split_count: int, /) -> int:
    """Builds '<prefix>-%05d-of-%05d.gguf'; returns its length."""


# int llama_split_prefix(char * split_prefix, size_t maxlen, const char * split_path, int split_no, int split_count);
@ctypes_function("llama_split_prefix", [c_char_p, c_size_t, c_char_p, c_int, c_int], c_int)
def llama_split_prefix(split_prefix, maxlen: int, split_path: bytes, split_no: int, split_count: int, /) -> int:
    """Extracts the prefix of a split path; returns its length or 0."""


# ---- values llama.h / ggml.h define for features this engine does not implement ----
# (the numbers are the headers'; a file or call using one gets the documented "not supported"
# error from the library, never a wrong reading)
# GGML_TYPE_*
GGML_TYPE_NVFP4 = 40
GGML_TYPE_Q1_0 = 41
GGML_TYPE_Q2_0 = 42
# LLAMA_VOCAB_TYPE_*
LLAMA_VOCAB_TYPE_PLAMO2 = 6
LLAMA_VOCAB_TYPE_TEST = 7
# LLAMA_VOCAB_PRE_TYPE_*
LLAMA_VOCAB_PRE_TYPE_DEFAULT = 0
LLAMA_VOCAB_PRE_TYPE_LLAMA3 = 1
LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM = 2
LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER = 3
LLAMA_VOCAB_PRE_TYPE_FALCON = 4
LLAMA_VOCAB_PRE_TYPE_MPT = 5
LLAMA_VOCAB_PRE_TYPE_STARCODER = 6
LLAMA_VOCAB_PRE_TYPE_GPT2 = 7
LLAMA_VOCAB_PRE_TYPE_REFACT = 8
LLAMA_VOCAB_PRE_TYPE_COMMAND_R = 9
LLAMA_VOCAB_PRE_TYPE_STABLELM2 = 10
LLAMA_VOCAB_PRE_TYPE_QWEN2 = 11
LLAMA_VOCAB_PRE_TYPE_OLMO = 12
LLAMA_VOCAB_PRE_TYPE_DBRX = 13
LLAMA_VOCAB_PRE_TYPE_SMAUG = 14
LLAMA_VOCAB_PRE_TYPE_PORO = 15
LLAMA_VOCAB_PRE_TYPE_CHATGLM3 = 16
LLAMA_VOCAB_PRE_TYPE_CHATGLM4 = 17
LLAMA_VOCAB_PRE_TYPE_VIKING = 18
LLAMA_VOCAB_PRE_TYPE_JAIS = 19
LLAMA_VOCAB_PRE_TYPE_TEKKEN = 20
LLAMA_VOCAB_PRE_TYPE_SMOLLM = 21
LLAMA_VOCAB_PRE_TYPE_CODESHELL = 22
LLAMA_VOCAB_PRE_TYPE_BLOOM = 23
LLAMA_VOCAB_PRE_TYPE_GPT3_FINNISH = 24
LLAMA_VOCAB_PRE_TYPE_EXAONE = 25
LLAMA_VOCAB_PRE_TYPE_CHAMELEON = 26
LLAMA_VOCAB_PRE_TYPE_MINERVA = 27
LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM = 28
LLAMA_VOCAB_PRE_TYPE_GPT4O = 29
LLAMA_VOCAB_PRE_TYPE_SUPERBPE = 30
LLAMA_VOCAB_PRE_TYPE_TRILLION = 31
LLAMA_VOCAB_PRE_TYPE_BAILINGMOE = 32
LLAMA_VOCAB_PRE_TYPE_LLAMA4 = 33
LLAMA_VOCAB_PRE_TYPE_PIXTRAL = 34
LLAMA_VOCAB_PRE_TYPE_SEED_CODER = 35
# LLAMA_FTYPE_*
LLAMA_FTYPE_MOSTLY_NVFP4 = 39
LLAMA_FTYPE_MOSTLY_Q1_0 = 40
LLAMA_FTYPE_MOSTLY_Q2_0 = 41

# struct llama_kv_cache (deprecated in llama.h; the memory API replaced it)
llama_kv_cache_p = c_void_p
llama_kv_cache_p_ctypes = c_void_p
