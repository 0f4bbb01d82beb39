// llama.h — load Llama-family GGUF models, tokenize, decode batches, sample.
//
// Usage (the flow of llama.cpp's "simple" example):
//
//   llama_backend_init();
//   struct llama_model * model = llama_model_load_from_file("m.gguf", llama_model_default_params());
//   const struct llama_vocab * vocab = llama_model_get_vocab(model);
//   struct llama_context * ctx = llama_init_from_model(model, llama_context_default_params());
//   llama_token toks[64];
//   int n = llama_tokenize(vocab, "Hello", 5, toks, 64, true, false);   // < 0: -needed
//   struct llama_batch batch = llama_batch_get_one(toks, n);
//   struct llama_sampler * smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
//   llama_sampler_chain_add(smpl, llama_sampler_init_greedy());        // chain owns it
//   while (llama_decode(ctx, batch) == 0) {                             // 1: no KV slot, 2: aborted, <0: error
//       llama_token t = llama_sampler_sample(smpl, ctx, -1);
//       if (llama_vocab_is_eog(vocab, t)) break;
//       char piece[64]; llama_token_to_piece(vocab, t, piece, sizeof piece, 0, true);
//       batch = llama_batch_get_one(&t, 1);    // t must outlive the decode
//   }
//   llama_sampler_free(smpl); llama_free(ctx); llama_model_free(model);
//
// Nothing here aborts on bad input: functions return NULL / an error code and say why through
// the log callback (llama_log_set). Functions for features this engine does not implement
// (LoRA, training, encoders, RPC...) exist and return their documented failure value.
#ifndef LLAMA_H
#define LLAMA_H

#include "ggml.h"
#include "gguf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LLAMA_API GGML_API

#ifdef __cplusplus
extern "C" {
#endif

#define LLAMA_ABI_VERSION                  1
#define LLAMA_DEFAULT_SEED                 0xFFFFFFFF
#define LLAMA_TOKEN_NULL                   -1
#define LLAMA_FILE_MAGIC_GGLA              0x67676c61u
#define LLAMA_FILE_MAGIC_GGSN              0x6767736eu
#define LLAMA_FILE_MAGIC_GGSQ              0x67677371u
#define LLAMA_SESSION_MAGIC                LLAMA_FILE_MAGIC_GGSN
#define LLAMA_SESSION_VERSION              10
#define LLAMA_STATE_SEQ_MAGIC              LLAMA_FILE_MAGIC_GGSQ
#define LLAMA_STATE_SEQ_VERSION            3
#define LLAMA_STATE_SEQ_FLAGS_NONE         0
#define LLAMA_STATE_SEQ_FLAGS_SWA_ONLY     1
#define LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY 1
#define LLAMA_STATE_SEQ_FLAGS_ON_DEVICE    2

struct llama_vocab;
struct llama_model;
struct llama_context;
struct llama_sampler;
struct llama_adapter_lora;
struct llama_batch_ext;
struct llama_memory_i;
typedef struct llama_memory_i * llama_memory_t;

typedef int32_t llama_pos;
typedef int32_t llama_token;
typedef int32_t llama_seq_id;
typedef uint32_t llama_state_seq_flags;

enum llama_vocab_type {
    LLAMA_VOCAB_TYPE_NONE = 0, // no vocabulary
    LLAMA_VOCAB_TYPE_SPM = 1, // SentencePiece-style BPE with byte fallback
    LLAMA_VOCAB_TYPE_BPE = 2, // GPT-2 style byte-level BPE
    LLAMA_VOCAB_TYPE_WPM = 3, // WordPiece (BERT)
    LLAMA_VOCAB_TYPE_UGM = 4, // Unigram (sentencepiece unigram, T5 / XLM-R)
    LLAMA_VOCAB_TYPE_RWKV = 5, // RWKV world: greedy longest match over bytes
    LLAMA_VOCAB_TYPE_PLAMO2 = 6, // PLaMo-2: best-scoring segmentation by dynamic programming, byte fallback
    LLAMA_VOCAB_TYPE_TEST = 7, // llama.cpp's test vocabulary: 5-byte chunks hashed to ids, pieces are hex ids
};

enum llama_rope_type {
    LLAMA_ROPE_TYPE_NONE = -1,
    LLAMA_ROPE_TYPE_NORM = 0,
    LLAMA_ROPE_TYPE_NEOX = GGML_ROPE_TYPE_NEOX,
};

enum llama_token_type {
    LLAMA_TOKEN_TYPE_UNDEFINED = 0,
    LLAMA_TOKEN_TYPE_NORMAL = 1,
    LLAMA_TOKEN_TYPE_UNKNOWN = 2,
    LLAMA_TOKEN_TYPE_CONTROL = 3,
    LLAMA_TOKEN_TYPE_USER_DEFINED = 4,
    LLAMA_TOKEN_TYPE_UNUSED = 5,
    LLAMA_TOKEN_TYPE_BYTE = 6,
};

enum llama_token_attr {
    LLAMA_TOKEN_ATTR_UNDEFINED = 0,
    LLAMA_TOKEN_ATTR_UNKNOWN = 1 << 0,
    LLAMA_TOKEN_ATTR_UNUSED = 1 << 1,
    LLAMA_TOKEN_ATTR_NORMAL = 1 << 2,
    LLAMA_TOKEN_ATTR_CONTROL = 1 << 3,
    LLAMA_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    LLAMA_TOKEN_ATTR_BYTE = 1 << 5,
    LLAMA_TOKEN_ATTR_NORMALIZED = 1 << 6,
    LLAMA_TOKEN_ATTR_LSTRIP = 1 << 7,
    LLAMA_TOKEN_ATTR_RSTRIP = 1 << 8,
    LLAMA_TOKEN_ATTR_SINGLE_WORD = 1 << 9,
};

// Model file types (general.file_type): the dominant tensor type.
enum llama_ftype {
    LLAMA_FTYPE_ALL_F32 = 0,
    LLAMA_FTYPE_MOSTLY_F16 = 1,
    LLAMA_FTYPE_MOSTLY_Q4_0 = 2,
    LLAMA_FTYPE_MOSTLY_Q4_1 = 3,
    LLAMA_FTYPE_MOSTLY_Q8_0 = 7,
    LLAMA_FTYPE_MOSTLY_Q5_0 = 8,
    LLAMA_FTYPE_MOSTLY_Q5_1 = 9,
    LLAMA_FTYPE_MOSTLY_Q2_K = 10,
    LLAMA_FTYPE_MOSTLY_Q3_K_S = 11,
    LLAMA_FTYPE_MOSTLY_Q3_K_M = 12,
    LLAMA_FTYPE_MOSTLY_Q3_K_L = 13,
    LLAMA_FTYPE_MOSTLY_Q4_K_S = 14,
    LLAMA_FTYPE_MOSTLY_Q4_K_M = 15,
    LLAMA_FTYPE_MOSTLY_Q5_K_S = 16,
    LLAMA_FTYPE_MOSTLY_Q5_K_M = 17,
    LLAMA_FTYPE_MOSTLY_Q6_K = 18,
    LLAMA_FTYPE_MOSTLY_IQ2_XXS = 19,
    LLAMA_FTYPE_MOSTLY_IQ2_XS = 20,
    LLAMA_FTYPE_MOSTLY_Q2_K_S = 21,
    LLAMA_FTYPE_MOSTLY_IQ3_XS = 22,
    LLAMA_FTYPE_MOSTLY_IQ3_XXS = 23,
    LLAMA_FTYPE_MOSTLY_IQ1_S = 24,
    LLAMA_FTYPE_MOSTLY_IQ4_NL = 25,
    LLAMA_FTYPE_MOSTLY_IQ3_S = 26,
    LLAMA_FTYPE_MOSTLY_IQ3_M = 27,
    LLAMA_FTYPE_MOSTLY_IQ2_S = 28,
    LLAMA_FTYPE_MOSTLY_IQ2_M = 29,
    LLAMA_FTYPE_MOSTLY_IQ4_XS = 30,
    LLAMA_FTYPE_MOSTLY_IQ1_M = 31,
    LLAMA_FTYPE_MOSTLY_BF16 = 32,
    LLAMA_FTYPE_MOSTLY_TQ1_0 = 36,
    LLAMA_FTYPE_MOSTLY_TQ2_0 = 37,
    LLAMA_FTYPE_MOSTLY_MXFP4_MOE = 38,
    LLAMA_FTYPE_GUESSED = 1024,
};

enum llama_rope_scaling_type {
    LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED = -1,
    LLAMA_ROPE_SCALING_TYPE_NONE = 0,
    LLAMA_ROPE_SCALING_TYPE_LINEAR = 1,
    LLAMA_ROPE_SCALING_TYPE_YARN = 2,
    LLAMA_ROPE_SCALING_TYPE_LONGROPE = 3,
};

enum llama_pooling_type {
    LLAMA_POOLING_TYPE_UNSPECIFIED = -1,
    LLAMA_POOLING_TYPE_NONE = 0,
    LLAMA_POOLING_TYPE_MEAN = 1,
    LLAMA_POOLING_TYPE_CLS = 2,
    LLAMA_POOLING_TYPE_LAST = 3,
    LLAMA_POOLING_TYPE_RANK = 4, // not supported (needs a classification head)
};

enum llama_attention_type {
    LLAMA_ATTENTION_TYPE_UNSPECIFIED = -1,
    LLAMA_ATTENTION_TYPE_CAUSAL = 0,
    LLAMA_ATTENTION_TYPE_NON_CAUSAL = 1,
};

enum llama_flash_attn_type {
    LLAMA_FLASH_ATTN_TYPE_AUTO = -1,
    LLAMA_FLASH_ATTN_TYPE_DISABLED = 0,
    LLAMA_FLASH_ATTN_TYPE_ENABLED = 1,
};

enum llama_split_mode {
    LLAMA_SPLIT_MODE_NONE = 0,
    LLAMA_SPLIT_MODE_LAYER = 1,
    LLAMA_SPLIT_MODE_ROW = 2,
    LLAMA_SPLIT_MODE_TENSOR = 3,
};

// How weights are brought into memory.
enum llama_load_mode {
    LLAMA_LOAD_MODE_AUTO = -1, // mmap where supported
    LLAMA_LOAD_MODE_NONE = 0,  // read into memory
    LLAMA_LOAD_MODE_MMAP = 1,
    LLAMA_LOAD_MODE_MLOCK = 2,  // read and lock
    LLAMA_LOAD_MODE_MMAP_MLOCK = 3,
    LLAMA_LOAD_MODE_DIRECT_IO = 4,  // treated as NONE
};

enum llama_lazy_mode {
    LLAMA_LAZY_MODE_OFF = 0,
    LLAMA_LAZY_MODE_AUTO = 1,
    LLAMA_LAZY_MODE_ON = 2,
};

enum llama_context_type {
    LLAMA_CONTEXT_TYPE_DEFAULT = 0,
    LLAMA_CONTEXT_TYPE_MTP = 1, // not supported
};

enum llama_model_kv_override_type {
    LLAMA_KV_OVERRIDE_TYPE_INT,
    LLAMA_KV_OVERRIDE_TYPE_FLOAT,
    LLAMA_KV_OVERRIDE_TYPE_BOOL,
    LLAMA_KV_OVERRIDE_TYPE_STR,
};

enum llama_model_meta_key {
    LLAMA_MODEL_META_KEY_SAMPLING_SEQUENCE,
    LLAMA_MODEL_META_KEY_SAMPLING_TOP_K,
    LLAMA_MODEL_META_KEY_SAMPLING_TOP_P,
    LLAMA_MODEL_META_KEY_SAMPLING_MIN_P,
    LLAMA_MODEL_META_KEY_SAMPLING_XTC_PROBABILITY,
    LLAMA_MODEL_META_KEY_SAMPLING_XTC_THRESHOLD,
    LLAMA_MODEL_META_KEY_SAMPLING_TEMP,
    LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_LAST_N,
    LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_REPEAT,
    LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT,
    LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_TAU,
    LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_ETA,
};

enum llama_process_type {
    LLAMA_PROCESS_TYPE_ENCODE = 0,
    LLAMA_PROCESS_TYPE_DECODE = 1,
};

// One candidate token.
typedef struct llama_token_data {
    llama_token id; // token id
    float logit;    // log-odds
    float p;        // probability (filled by samplers that normalise)
} llama_token_data;

// Candidates a sampler works on, in place.
typedef struct llama_token_data_array {
    llama_token_data * data;
    size_t size;
    int64_t selected; // index into data of the chosen token, -1 if none yet
    bool sorted;      // data is sorted by logit, descending
} llama_token_data_array;

// Load progress in [0, 1]; returning false cancels the load.
typedef bool (*llama_progress_callback)(float progress, void * user_data);

// Tokens to decode. n_tokens rows; each row has a token (or an embedding of n_embd floats),
// a position, n_seq_id sequence ids and an output flag. Allocate with llama_batch_init.
typedef struct llama_batch {
    int32_t n_tokens;
    llama_token * token;    // [n_tokens] or NULL when embd is used
    float * embd;     // [n_tokens * n_embd] or NULL
    llama_pos * pos;      // [n_tokens] or NULL: continue each sequence
    int32_t * n_seq_id; // [n_tokens] or NULL: every token in sequence 0
    llama_seq_id ** seq_id;   // [n_tokens][n_seq_id[i]]
    int8_t * logits;   // [n_tokens] output flags, or NULL: only the last token
} llama_batch;

union llama_model_kv_override_value {
    int64_t val_i64;
    double val_f64;
    bool val_bool;
    char val_str[128];
};

// Overrides one metadata key at load time.
struct llama_model_kv_override {
    enum llama_model_kv_override_type tag;
    char key[128];
    union llama_model_kv_override_value value;
};

// Forces a tensor type for names matching pattern (quantization).
struct llama_model_tensor_override {
    const char * pattern;
    enum ggml_type type;
};

// Importance matrix of one tensor for llama_model_quantize: size column weights per matrix
// (mean squared activations; python -m llama_py imatrix), the array ended by a NULL name.
struct llama_model_imatrix_data {
    const char * name;
    const float * data;
    size_t size;
};

// Model loading options (see llama_model_default_params).
struct llama_model_params {
    void * devices;                   // device list (unused: the first GPU, or main_gpu, is used)
    const void * tensor_buft_overrides; // (unused)
    int32_t n_gpu_layers;             // last blocks to offload to the GPU (> n_layer: the output head too)
    enum llama_split_mode split_mode;
    enum llama_load_mode load_mode;   // AUTO: mmap
    enum llama_lazy_mode lazy_mode;
    int32_t main_gpu;
    const float * tensor_split;
    llama_progress_callback progress_callback; // called with progress in [0,1]; false cancels
    void * progress_callback_user_data;
    const struct llama_model_kv_override * kv_overrides; // terminated by an empty key
    bool vocab_only;     // load only the vocabulary
    bool check_tensors;  // validate tensor data (NaN/inf in float tensors)
    bool use_extra_bufts; // repack matmul weights at load for the CPU kernels (default true)
    bool no_host;
    bool no_alloc;
    bool load_mtp;
};

// Sampler attached to a sequence (unused by this engine).
struct llama_sampler_seq_config {
    llama_seq_id seq_id;
    struct llama_sampler * sampler;
};

// Called for each graph node when set (unused by this engine).
typedef bool (*ggml_backend_sched_eval_callback)(struct ggml_tensor * t, bool ask, void * user_data);

// Context options (see llama_context_default_params).
struct llama_context_params {
    uint32_t n_ctx;          // KV cache size in tokens; 0 = the model's training context
    uint32_t n_batch;        // max tokens per llama_decode call
    uint32_t n_ubatch;       // max tokens per graph computation
    uint32_t n_seq_max;      // max distinct sequences
    uint32_t n_rs_seq;
    uint32_t n_outputs_max;
    uint32_t n_outputs_max_per_seq;
    int32_t n_threads;      // threads for single-token decoding (default: physical cores)
    int32_t n_threads_batch;// threads for batches
    enum llama_context_type ctx_type;
    enum llama_rope_scaling_type rope_scaling_type;
    enum llama_pooling_type pooling_type;
    enum llama_attention_type attention_type;
    enum llama_flash_attn_type flash_attn_type;
    float rope_freq_base;    // 0 = from model
    float rope_freq_scale;   // 0 = from model
    float yarn_ext_factor;   // < 0 = from model
    float yarn_attn_factor;
    float yarn_beta_fast;
    float yarn_beta_slow;
    uint32_t yarn_orig_ctx;
    float defrag_thold;
    ggml_backend_sched_eval_callback cb_eval;
    void * cb_eval_user_data;
    enum ggml_type type_k;   // KV cache key type: F16 (default), F32 or Q8_0
    enum ggml_type type_v;   // KV cache value type
    ggml_abort_callback abort_callback; // polled during decode; true aborts (decode returns 2)
    void * abort_callback_data;
    bool embeddings;         // extract embeddings
    bool offload_kqv;
    bool no_perf;            // do not measure performance timings
    bool op_offload;
    bool swa_full;
    bool kv_unified;
    struct llama_sampler_seq_config * samplers;
    size_t n_samplers;
    struct llama_context * ctx_other;
};

// Quantization options (see llama_model_quantize_default_params).
typedef struct llama_model_quantize_params {
    int32_t nthread;                 // <= 0: physical cores
    enum llama_ftype ftype;          // target file type
    enum ggml_type output_tensor_type;   // GGML_TYPE_COUNT: default choice
    enum ggml_type token_embedding_type; // GGML_TYPE_COUNT: default choice
    bool allow_requantize;           // allow quantizing already-quantized tensors
    bool quantize_output_tensor;     // quantize output.weight
    bool only_copy;                  // copy tensors unchanged (rewrite metadata only)
    bool pure;                       // every tensor to the ftype's type (no mixes)
    bool keep_split;
    bool dry_run;
    const struct llama_model_imatrix_data * imatrix;
    const struct llama_model_kv_override * kv_overrides;
    const struct llama_model_tensor_override * tt_overrides;
    const int32_t * prune_layers;
    size_t max_buf_size;
} llama_model_quantize_params;

// Additive logit bias for one token.
typedef struct llama_logit_bias {
    llama_token token;
    float bias;
} llama_logit_bias;

// Options of a sampler chain.
typedef struct llama_sampler_chain_params {
    bool no_perf; // do not measure sampling time
} llama_sampler_chain_params;

// One chat message for llama_chat_apply_template.
typedef struct llama_chat_message {
    const char * role;
    const char * content;
} llama_chat_message;

// Embedding rows for llama_batch_ext.
struct llama_embd {
    const float * data;
    size_t n_rows;
    size_t n_embd;
};

// Backend tensors of a sampler (unused by this engine).
struct llama_sampler_data {
    struct ggml_tensor * logits;
    struct ggml_tensor * probs;
    struct ggml_tensor * sampled;
    struct ggml_tensor * candidates;
};

typedef void * llama_sampler_context_t;

// Interface of a sampler; user code may implement it (see llama_sampler_init).
struct llama_sampler_i {
    const char * (*name)(const struct llama_sampler * smpl);                   // may be NULL
    void (*accept)(struct llama_sampler * smpl, llama_token token); // may be NULL
    void (*apply)(struct llama_sampler * smpl, llama_token_data_array * cur_p); // required
    void (*reset)(struct llama_sampler * smpl);                   // may be NULL
    struct llama_sampler * (*clone)(const struct llama_sampler * smpl);                   // may be NULL if ctx is NULL
    void (*free)(struct llama_sampler * smpl);                   // may be NULL if ctx is NULL
    bool (*backend_init)(struct llama_sampler * smpl, void * backend, uint32_t n);         // unused, may be NULL
    void (*backend_accept)(struct llama_sampler * smpl, void * a, void * b, void * c);     // unused, may be NULL
    void (*backend_apply)(struct llama_sampler * smpl, void * a, void * b, struct llama_sampler_data * data); // unused
    void (*backend_set_input)(struct llama_sampler * smpl);                                // unused, may be NULL
    void (*backend_reset)(struct llama_sampler * smpl);                                    // unused, may be NULL
    void (*copy_state)(struct llama_sampler * dst, const struct llama_sampler * src);      // may be NULL
};

// A sampler: its interface and its state.
struct llama_sampler {
    const struct llama_sampler_i * iface;
    llama_sampler_context_t ctx;
};

// Timings of a context (milliseconds) and token counts.
struct llama_perf_context_data {
    double t_start_ms;
    double t_load_ms;
    double t_p_eval_ms;
    double t_eval_ms;
    int32_t n_p_eval;
    int32_t n_eval;
    int32_t n_reused;
};

// Timings of a sampler chain.
struct llama_perf_sampler_data {
    double t_sample_ms;
    int32_t n_sample;
};

// Training options (training is not supported).
typedef bool (*llama_opt_param_filter)(const struct ggml_tensor * tensor, void * userdata);
struct llama_opt_params {
    uint32_t n_ctx_train;
    llama_opt_param_filter param_filter;
    void * param_filter_ud;
    void * get_opt_pars_ud;
};

// Fills a tensor's data for llama_model_init_from_user.
typedef void (*llama_model_set_tensor_data_t)(struct ggml_tensor * tensor, void * user_data);

// ---- defaults, init, system ----

// Library version string.
LLAMA_API const char * llama_version(void);
// ABI version of this library (LLAMA_ABI_VERSION at build time).
LLAMA_API int llama_abi_version(void);
// sizeof a public llama struct by name; 0 if unknown.
LLAMA_API size_t llama_abi_struct_size(const char * struct_name);
// offsetof a field of a public llama struct; (size_t)-1 if unknown.
LLAMA_API size_t llama_abi_field_offset(const char * struct_name, const char * field_name);
// Default model parameters.
LLAMA_API struct llama_model_params llama_model_default_params(void);
// Default context parameters (threads = physical cores).
LLAMA_API struct llama_context_params llama_context_default_params(void);
// Default sampler-chain parameters.
LLAMA_API struct llama_sampler_chain_params llama_sampler_chain_default_params(void);
// Default quantization parameters (Q5_1, like llama.cpp).
LLAMA_API struct llama_model_quantize_params llama_model_quantize_default_params(void);
// "auto", "disabled", "enabled".
LLAMA_API const char * llama_flash_attn_type_name(enum llama_flash_attn_type flash_attn_type);
// Name of a load mode.
LLAMA_API const char * llama_load_mode_name(enum llama_load_mode load_mode);
// Load mode from its name; LLAMA_LOAD_MODE_AUTO if unknown.
LLAMA_API enum llama_load_mode llama_load_mode_from_str(const char * value);
// Name of a file type ("Q4_0", "Q4_K - Medium", ...).
LLAMA_API const char * llama_ftype_name(enum llama_ftype ftype);
// Initialises global state (idempotent).
LLAMA_API void llama_backend_init(void);
// Releases global state.
LLAMA_API void llama_backend_free(void);
// NUMA placement (no-op on this engine).
LLAMA_API void llama_numa_init(int numa);
// Microseconds from a monotonic clock.
LLAMA_API int64_t llama_time_us(void);
// Max devices a model may be split over (LLAMA_MAX_DEVICES, 16).
LLAMA_API size_t llama_max_devices(void);
// Max sequences a context supports.
LLAMA_API size_t llama_max_parallel_sequences(void);
// Max tensor buffer-type overrides (0: unsupported).
LLAMA_API size_t llama_max_tensor_buft_overrides(void);
// True: models can be memory-mapped.
LLAMA_API bool llama_supports_mmap(void);
// True where mlock is available.
LLAMA_API bool llama_supports_mlock(void);
// True when a GPU backend with a device is present (loaded by ggml_backend_load_all).
LLAMA_API bool llama_supports_gpu_offload(void);
// False: RPC is not supported.
LLAMA_API bool llama_supports_rpc(void);
// CPU features and kernel variant in use.
LLAMA_API const char * llama_print_system_info(void);
// Current log callback and user data.
LLAMA_API void llama_log_get(ggml_log_callback * log_callback, void ** user_data);
// Sets the log callback for the whole library (NULL: default, warnings and errors to stderr).
LLAMA_API void llama_log_set(ggml_log_callback log_callback, void * user_data);

// ---- models ----

// Deprecated: use llama_model_load_from_file.
LLAMA_API struct llama_model * llama_load_model_from_file(const char * path_model, struct llama_model_params params);
// Loads a GGUF model (weights memory-mapped by default); NULL with a logged reason on failure.
LLAMA_API struct llama_model * llama_model_load_from_file(const char * path_model, struct llama_model_params params);
// Loads a model split over several files (only n_paths == 1 is supported).
LLAMA_API struct llama_model * llama_model_load_from_splits(const char ** paths, size_t n_paths,
                                                            struct llama_model_params params);
// Loads from an open FILE* (not supported: returns NULL).
LLAMA_API struct llama_model * llama_model_load_from_file_ptr(FILE * file, struct llama_model_params params);
// Builds a model from metadata and a callback filling tensors (not supported: returns NULL).
LLAMA_API struct llama_model * llama_model_init_from_user(struct gguf_context * metadata,
                                                          llama_model_set_tensor_data_t set_tensor_data,
                                                          void * set_tensor_data_ud, struct llama_model_params params);
// Writes the model (metadata and weights) as a GGUF file; logs an error on failure.
LLAMA_API void llama_model_save_to_file(const struct llama_model * model, const char * path_model);
// Deprecated: use llama_model_free.
LLAMA_API void llama_free_model(struct llama_model * model);
// Frees the model; NULL-safe. Contexts made from it must be freed first (a later free of them is still safe).
LLAMA_API void llama_model_free(struct llama_model * model);

// The model's vocabulary (owned by the model).
LLAMA_API const struct llama_vocab * llama_model_get_vocab(const struct llama_model * model);
// RoPE layout (NORM for llama).
LLAMA_API enum llama_rope_type llama_model_rope_type(const struct llama_model * model);
// Training context length.
LLAMA_API int32_t llama_model_n_ctx_train(const struct llama_model * model);
// Embedding width.
LLAMA_API int32_t llama_model_n_embd(const struct llama_model * model);
// Input embedding width.
LLAMA_API int32_t llama_model_n_embd_inp(const struct llama_model * model);
// Output embedding width.
LLAMA_API int32_t llama_model_n_embd_out(const struct llama_model * model);
// Number of layers.
LLAMA_API int32_t llama_model_n_layer(const struct llama_model * model);
// Number of next-token-prediction layers (0).
LLAMA_API int32_t llama_model_n_layer_nextn(const struct llama_model * model);
// Number of attention heads.
LLAMA_API int32_t llama_model_n_head(const struct llama_model * model);
// Number of key/value heads.
LLAMA_API int32_t llama_model_n_head_kv(const struct llama_model * model);
// Sliding-window size (0: none).
LLAMA_API int32_t llama_model_n_swa(const struct llama_model * model);
// RoPE frequency scale the model was trained with.
LLAMA_API float llama_model_rope_freq_scale_train(const struct llama_model * model);
// Classifier outputs (0).
LLAMA_API uint32_t llama_model_n_cls_out(const struct llama_model * model);
// Classifier label i (NULL).
LLAMA_API const char * llama_model_cls_label(const struct llama_model * model, uint32_t i);
// Deprecated: llama_model_n_ctx_train.
LLAMA_API int32_t llama_n_ctx_train(const struct llama_model * model);
// Deprecated: llama_model_n_embd.
LLAMA_API int32_t llama_n_embd(const struct llama_model * model);
// Deprecated: llama_model_n_layer.
LLAMA_API int32_t llama_n_layer(const struct llama_model * model);
// Deprecated: llama_model_n_head.
LLAMA_API int32_t llama_n_head(const struct llama_model * model);
// Deprecated: llama_vocab_n_tokens (also accepts a model).
LLAMA_API int32_t llama_n_vocab(const struct llama_vocab * vocab);
// Metadata value of key as a string into buf; returns its length or -1 if absent.
LLAMA_API int32_t llama_model_meta_val_str(const struct llama_model * model, const char * key, char * buf, size_t buf_size);
// Number of metadata pairs.
LLAMA_API int32_t llama_model_meta_count(const struct llama_model * model);
// Metadata key name of a llama_model_meta_key.
LLAMA_API const char * llama_model_meta_key_str(enum llama_model_meta_key key);
// Metadata key i into buf; returns its length or -1.
LLAMA_API int32_t llama_model_meta_key_by_index(const struct llama_model * model, int32_t i, char * buf, size_t buf_size);
// Metadata value i as a string into buf; returns its length or -1.
LLAMA_API int32_t llama_model_meta_val_str_by_index(const struct llama_model * model, int32_t i, char * buf, size_t buf_size);
// Short description ("llama 135M Q4_1") into buf; returns its length.
LLAMA_API int32_t llama_model_desc(const struct llama_model * model, char * buf, size_t buf_size);
// File type of the model.
LLAMA_API enum llama_ftype llama_model_ftype(const struct llama_model * model);
// Bytes of all weights.
LLAMA_API uint64_t llama_model_size(const struct llama_model * model);
// Chat template text (name NULL: the default one), or NULL if the model has none.
LLAMA_API const char * llama_model_chat_template(const struct llama_model * model, const char * name);
// Number of parameters.
LLAMA_API uint64_t llama_model_n_params(const struct llama_model * model);
// False: encoder models are not supported.
LLAMA_API bool llama_model_has_encoder(const struct llama_model * model);
// True for decoder models.
LLAMA_API bool llama_model_has_decoder(const struct llama_model * model);
// Decoder start token of encoder-decoder models (LLAMA_TOKEN_NULL).
LLAMA_API llama_token llama_model_decoder_start_token(const struct llama_model * model);
// False: recurrent models are not supported.
LLAMA_API bool llama_model_is_recurrent(const struct llama_model * model);
// False.
LLAMA_API bool llama_model_is_hybrid(const struct llama_model * model);
// False.
LLAMA_API bool llama_model_is_diffusion(const struct llama_model * model);
// Quantizes a GGUF model file; returns 0 on success, non-zero (logged) on failure.
LLAMA_API uint32_t llama_model_quantize(const char * fname_inp, const char * fname_out,
                                        const llama_model_quantize_params * params);

// ---- LoRA adapters and control vectors ----
// A LoRA adapter is a GGUF in llama.cpp's format (general.type "adapter", adapter.type "lora",
// "<weight>.lora_a" / ".lora_b" pairs; `python -m llama_py convert --lora` writes one from PEFT).
// With it set on a context at scale s, each adapted product W·x becomes W·x + s·(alpha/r)·B·(A·x).

// Loads an adapter for model (checked against its architecture and matrix shapes); NULL (logged) on failure.
LLAMA_API struct llama_adapter_lora * llama_adapter_lora_init(struct llama_model * model, const char * path_lora);
// As llama_adapter_lora_init, reading the adapter from an open file.
LLAMA_API struct llama_adapter_lora * llama_adapter_lora_init_from_file_ptr(struct llama_model * model, FILE * file);
// The adapter's metadata value of key as a string into buf; its length, or -1 when absent.
LLAMA_API int32_t llama_adapter_meta_val_str(const struct llama_adapter_lora * adapter, const char * key, char * buf,
                                             size_t buf_size);
// Number of the adapter's (non-array) metadata keys.
LLAMA_API int32_t llama_adapter_meta_count(const struct llama_adapter_lora * adapter);
// Key i of the adapter's metadata into buf; its length, or -1 out of range.
LLAMA_API int32_t llama_adapter_meta_key_by_index(const struct llama_adapter_lora * adapter, int32_t i, char * buf,
                                                  size_t buf_size);
// Value i of the adapter's metadata as a string into buf; its length, or -1 out of range.
LLAMA_API int32_t llama_adapter_meta_val_str_by_index(const struct llama_adapter_lora * adapter, int32_t i, char * buf,
                                                      size_t buf_size);
// Frees an adapter (NULL-safe); adapters not freed are freed with their model. Unset it from contexts first.
LLAMA_API void llama_adapter_lora_free(struct llama_adapter_lora * adapter);
// Number of aLoRA invocation tokens (0 for a plain LoRA).
LLAMA_API uint64_t llama_adapter_get_alora_n_invocation_tokens(const struct llama_adapter_lora * adapter);
// The aLoRA invocation tokens, or NULL.
LLAMA_API const llama_token * llama_adapter_get_alora_invocation_tokens(const struct llama_adapter_lora * adapter);
// Sets the context's adapters with their scales (n_adapters 0 clears); 0, or -1 (logged) for a
// bad or foreign adapter. An aLoRA set here applies to every token, as in llama.cpp (set it with
// llama_set_adapters_lora_seq and llama_set_alora_start to apply it from its invocation on).
LLAMA_API int32_t llama_set_adapters_lora(struct llama_context * ctx, struct llama_adapter_lora ** adapters, size_t n_adapters,
                                          float * scales);
// llama_py extension: sets the adapters (with scales) applied to the tokens of sequence seq_id only,
// on top of the context's (n_adapters 0 clears them), so that one llama_decode serves sequences
// with different adapters; a token in several sequences takes its first one's. 0, or -1 (logged).
LLAMA_API int32_t llama_set_adapters_lora_seq(struct llama_context * ctx, llama_seq_id seq_id,
                                              struct llama_adapter_lora ** adapters, size_t n_adapters, float * scales);
// llama_py extension: the aLoRA adapters (those with invocation tokens) set on sequence seq_id by
// llama_set_adapters_lora_seq apply only to its tokens at positions >= pos_start (the start of the
// last occurrence of the invocation tokens in its prompt, as PEFT and llama-server place it;
// earlier tokens gain exactly 0, so their KV cells equal the base model's); pos_start < 0: to no
// token (the invocation is absent). Plain LoRAs are unaffected. Default 0. 0, or -1 (logged).
LLAMA_API int32_t llama_set_alora_start(struct llama_context * ctx, llama_seq_id seq_id, llama_pos pos_start);
// Sets a control vector: data holds n_embd floats per layer from layer 1 (len floats in all),
// added to the output of layers il_start..il_end; data NULL clears. 0, or -1 (logged).
LLAMA_API int32_t llama_set_adapter_cvec(struct llama_context * ctx, const float * data, size_t len, int32_t n_embd,
                                         int32_t il_start, int32_t il_end);

// ---- contexts ----

// Creates a context (KV cache allocated once for n_ctx); NULL with a logged reason on failure.
LLAMA_API struct llama_context * llama_init_from_model(struct llama_model * model, struct llama_context_params params);
// Deprecated: use llama_init_from_model.
LLAMA_API struct llama_context * llama_new_context_with_model(struct llama_model * model, struct llama_context_params params);
// Frees the context; NULL-safe.
LLAMA_API void llama_free(struct llama_context * ctx);
// KV cache size in tokens.
LLAMA_API uint32_t llama_n_ctx(const struct llama_context * ctx);
// KV cache size available to one sequence.
LLAMA_API uint32_t llama_n_ctx_seq(const struct llama_context * ctx);
// Max tokens per llama_decode.
LLAMA_API uint32_t llama_n_batch(const struct llama_context * ctx);
// Max tokens per graph computation.
LLAMA_API uint32_t llama_n_ubatch(const struct llama_context * ctx);
// Max sequences.
LLAMA_API uint32_t llama_n_seq_max(const struct llama_context * ctx);
// Recurrent-state sequences (0).
LLAMA_API uint32_t llama_n_rs_seq(const struct llama_context * ctx);
// The context's model.
LLAMA_API const struct llama_model * llama_get_model(const struct llama_context * ctx);
// The context's memory (KV cache) handle.
LLAMA_API llama_memory_t llama_get_memory(const struct llama_context * ctx);
// Pooling type in use.
LLAMA_API enum llama_pooling_type llama_pooling_type(const struct llama_context * ctx);
// Sets threads for single-token and batch decoding (clamped to 1..cores).
LLAMA_API void llama_set_n_threads(struct llama_context * ctx, int32_t n_threads, int32_t n_threads_batch);
// Threads for single-token decoding.
LLAMA_API int32_t llama_n_threads(struct llama_context * ctx);
// Threads for batches.
LLAMA_API int32_t llama_n_threads_batch(struct llama_context * ctx);
// Whether decode extracts embeddings.
LLAMA_API void llama_set_embeddings(struct llama_context * ctx, bool embeddings);
// Whether attention is causal.
LLAMA_API void llama_set_causal_attn(struct llama_context * ctx, bool causal_attn);
// Current causal-attention setting.
LLAMA_API bool llama_get_causal_attn(const struct llama_context * ctx);
// Warm-up mode (no effect on results).
LLAMA_API void llama_set_warmup(struct llama_context * ctx, bool warmup);
// Abort callback polled during decode (between graph nodes).
LLAMA_API void llama_set_abort_callback(struct llama_context * ctx, ggml_abort_callback abort_callback,
                                        void * abort_callback_data);
// Waits for pending work (decode is synchronous: no-op).
LLAMA_API void llama_synchronize(struct llama_context * ctx);
// Attaches a sampler to a sequence (not supported: returns false).
LLAMA_API bool llama_set_sampler(struct llama_context * ctx, llama_seq_id seq_id, struct llama_sampler * smpl);

// ---- memory (KV cache) ----

// Empties the cache (data: also zero the buffers).
LLAMA_API void llama_memory_clear(llama_memory_t mem, bool data);
// Removes positions [p0, p1) of seq_id (seq_id < 0: all sequences; p0/p1 < 0: open). False if refused.
LLAMA_API bool llama_memory_seq_rm(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1);
// Adds seq_id_dst to the cells of seq_id_src in [p0, p1).
LLAMA_API void llama_memory_seq_cp(llama_memory_t mem, llama_seq_id seq_id_src, llama_seq_id seq_id_dst, llama_pos p0,
                                   llama_pos p1);
// Removes every sequence but seq_id.
LLAMA_API void llama_memory_seq_keep(llama_memory_t mem, llama_seq_id seq_id);
// Shifts positions [p0, p1) of seq_id by delta (keys are re-rotated).
LLAMA_API void llama_memory_seq_add(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1, llama_pos delta);
// Divides positions [p0, p1) of seq_id by d (d > 1).
LLAMA_API void llama_memory_seq_div(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1, int d);
// Smallest position of seq_id in the cache, -1 if empty.
LLAMA_API llama_pos llama_memory_seq_pos_min(llama_memory_t mem, llama_seq_id seq_id);
// Largest position of seq_id in the cache, -1 if empty.
LLAMA_API llama_pos llama_memory_seq_pos_max(llama_memory_t mem, llama_seq_id seq_id);
// True: positions can be shifted.
LLAMA_API bool llama_memory_can_shift(llama_memory_t mem);

// ---- state ----

// Bytes needed to save the context's state (logits, embeddings, KV cache).
LLAMA_API size_t llama_state_get_size(struct llama_context * ctx);
// Deprecated: llama_state_get_size.
LLAMA_API size_t llama_get_state_size(struct llama_context * ctx);
// Writes the state into dst (size bytes); returns bytes written, 0 on error.
LLAMA_API size_t llama_state_get_data(struct llama_context * ctx, uint8_t * dst, size_t size);
// Deprecated: llama_state_get_data without a size.
LLAMA_API size_t llama_copy_state_data(struct llama_context * ctx, uint8_t * dst);
// Restores a state; returns bytes read, 0 on error (the context is then left empty).
LLAMA_API size_t llama_state_set_data(struct llama_context * ctx, const uint8_t * src, size_t size);
// Deprecated: llama_state_set_data without a size.
LLAMA_API size_t llama_set_state_data(struct llama_context * ctx, const uint8_t * src);
// Loads a session file: state plus the prompt tokens.
LLAMA_API bool llama_state_load_file(struct llama_context * ctx, const char * path_session, llama_token * tokens_out,
                                     size_t n_token_capacity, size_t * n_token_count_out);
// Deprecated: llama_state_load_file.
LLAMA_API bool llama_load_session_file(struct llama_context * ctx, const char * path_session, llama_token * tokens_out,
                                       size_t n_token_capacity, size_t * n_token_count_out);
// Saves state plus the prompt tokens to a session file.
LLAMA_API bool llama_state_save_file(struct llama_context * ctx, const char * path_session, const llama_token * tokens,
                                     size_t n_token_count);
// Deprecated: llama_state_save_file.
LLAMA_API bool llama_save_session_file(struct llama_context * ctx, const char * path_session, const llama_token * tokens,
                                       size_t n_token_count);
// Bytes needed for one sequence's KV state.
LLAMA_API size_t llama_state_seq_get_size(struct llama_context * ctx, llama_seq_id seq_id);
// Writes one sequence's KV state; returns bytes written, 0 on error.
LLAMA_API size_t llama_state_seq_get_data(struct llama_context * ctx, uint8_t * dst, size_t size, llama_seq_id seq_id);
// Restores a sequence's KV state into dest_seq_id; returns bytes read, 0 on error.
LLAMA_API size_t llama_state_seq_set_data(struct llama_context * ctx, const uint8_t * src, size_t size, llama_seq_id dest_seq_id);
// Saves one sequence's state and tokens to a file; returns bytes written, 0 on error.
LLAMA_API size_t llama_state_seq_save_file(struct llama_context * ctx, const char * filepath, llama_seq_id seq_id,
                                           const llama_token * tokens, size_t n_token_count);
// Loads one sequence's state and tokens; returns bytes read, 0 on error.
LLAMA_API size_t llama_state_seq_load_file(struct llama_context * ctx, const char * filepath, llama_seq_id dest_seq_id,
                                           llama_token * tokens_out, size_t n_token_capacity, size_t * n_token_count_out);
// As llama_state_seq_get_size (flags are accepted and ignored).
LLAMA_API size_t llama_state_seq_get_size_ext(struct llama_context * ctx, llama_seq_id seq_id, llama_state_seq_flags flags);
// As llama_state_seq_get_data.
LLAMA_API size_t llama_state_seq_get_data_ext(struct llama_context * ctx, uint8_t * dst, size_t size, llama_seq_id seq_id,
                                              llama_state_seq_flags flags);
// As llama_state_seq_set_data.
LLAMA_API size_t llama_state_seq_set_data_ext(struct llama_context * ctx, const uint8_t * src, size_t size,
                                              llama_seq_id dest_seq_id, llama_state_seq_flags flags);

// ---- batches and decoding ----

// A batch viewing tokens (positions continue sequence 0; the last token outputs logits).
LLAMA_API struct llama_batch llama_batch_get_one(llama_token * tokens, int32_t n_tokens);
// Allocates a batch of n_tokens rows (embd > 0: embeddings of that width instead of tokens),
// each with room for n_seq_max sequence ids. Free with llama_batch_free.
LLAMA_API struct llama_batch llama_batch_init(int32_t n_tokens, int32_t embd, int32_t n_seq_max);
// Frees a batch from llama_batch_init.
LLAMA_API void llama_batch_free(struct llama_batch batch);
// Encoder pass (not supported: returns -1).
LLAMA_API int32_t llama_encode(struct llama_context * ctx, struct llama_batch batch);
// Decodes a batch: 0 ok, 1 no KV slot (cache unchanged), 2 aborted, -1 invalid input, < -1 error.
LLAMA_API int32_t llama_decode(struct llama_context * ctx, struct llama_batch batch);
// New extended batch sized for ctx. Free with llama_batch_ext_free.
LLAMA_API struct llama_batch_ext * llama_batch_ext_init(struct llama_context * ctx);
// Frees an extended batch; NULL-safe.
LLAMA_API void llama_batch_ext_free(struct llama_batch_ext * batch);
// Empties an extended batch.
LLAMA_API void llama_batch_ext_clear(struct llama_batch_ext * batch);
// Appends a row for seq_id (token set later); returns its index or -1.
LLAMA_API int32_t llama_batch_ext_add(struct llama_batch_ext * batch, llama_seq_id seq_id);
// Appends token id for seq_id at the sequence's next position; returns the row index or -1.
LLAMA_API int32_t llama_batch_ext_add_token(struct llama_batch_ext * batch, llama_seq_id seq_id, llama_token id);
// Appends embedding rows (not supported: returns -1).
LLAMA_API int32_t llama_batch_ext_add_embd(struct llama_batch_ext * batch, llama_seq_id seq_id, struct llama_embd embd);
// Adds seq_id to row idx.
LLAMA_API bool llama_batch_ext_add_seq(struct llama_batch_ext * batch, int32_t idx, llama_seq_id seq_id);
// Not supported: returns false.
LLAMA_API bool llama_batch_ext_set_embd_token(struct llama_batch_ext * batch, int32_t idx, struct llama_embd embd);
// Not supported: returns false.
LLAMA_API bool llama_batch_ext_set_embd_state(struct llama_batch_ext * batch, int32_t idx, struct llama_embd embd);
// Marks row idx to output embeddings.
LLAMA_API bool llama_batch_ext_set_output_embd(struct llama_batch_ext * batch, int32_t idx, bool value);
// Marks row idx to output logits.
LLAMA_API bool llama_batch_ext_set_output_logits(struct llama_batch_ext * batch, int32_t idx, bool value);
// Sets the position of row idx.
LLAMA_API bool llama_batch_ext_set_pos(struct llama_batch_ext * batch, int32_t idx, const llama_pos * pos);
// Runs an extended batch (DECODE only; ENCODE returns -1); codes as llama_decode.
LLAMA_API int32_t llama_process(struct llama_context * ctx, enum llama_process_type type, struct llama_batch_ext * batch);
// Logits of the last decode, [n_outputs][n_vocab], rows in batch order of outputs.
LLAMA_API float * llama_get_logits(struct llama_context * ctx);
// Logits row of batch token i (negative: from the end of the outputs); NULL (logged) if not an output.
LLAMA_API float * llama_get_logits_ith(struct llama_context * ctx, int32_t i);
// Embeddings of the last decode, [n_outputs][n_embd] (pooling NONE).
LLAMA_API float * llama_get_embeddings(struct llama_context * ctx);
// Embedding of batch token i; NULL if not available.
LLAMA_API float * llama_get_embeddings_ith(struct llama_context * ctx, int32_t i);
// Pooled embedding of a sequence; NULL if pooling is NONE.
LLAMA_API float * llama_get_embeddings_seq(struct llama_context * ctx, llama_seq_id seq_id);
// Backend sampling results (not supported: LLAMA_TOKEN_NULL).
LLAMA_API llama_token llama_get_sampled_token_ith(struct llama_context * ctx, int32_t i);
// Not supported: NULL.
LLAMA_API float * llama_get_sampled_probs_ith(struct llama_context * ctx, int32_t i);
// Not supported: 0.
LLAMA_API uint32_t llama_get_sampled_probs_count_ith(struct llama_context * ctx, int32_t i);
// Not supported: NULL.
LLAMA_API float * llama_get_sampled_logits_ith(struct llama_context * ctx, int32_t i);
// Not supported: 0.
LLAMA_API uint32_t llama_get_sampled_logits_count_ith(struct llama_context * ctx, int32_t i);
// Not supported: NULL.
LLAMA_API llama_token * llama_get_sampled_candidates_ith(struct llama_context * ctx, int32_t i);
// Not supported: 0.
LLAMA_API uint32_t llama_get_sampled_candidates_count_ith(struct llama_context * ctx, int32_t i);

// ---- vocabulary (functions taking a vocab also accept the model that owns it) ----

// Token text (NULL for an invalid id).
LLAMA_API const char * llama_vocab_get_text(const struct llama_vocab * vocab, llama_token token);
// Token score (0 for an invalid id).
LLAMA_API float llama_vocab_get_score(const struct llama_vocab * vocab, llama_token token);
// Token attributes (llama_token_attr bits).
LLAMA_API enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab * vocab, llama_token token);
// True for end-of-generation tokens (eos, eot, eom and turn-end controls).
LLAMA_API bool llama_vocab_is_eog(const struct llama_vocab * vocab, llama_token token);
// True for control tokens.
LLAMA_API bool llama_vocab_is_control(const struct llama_vocab * vocab, llama_token token);
// Beginning-of-sentence token (LLAMA_TOKEN_NULL if none); same for the getters below.
LLAMA_API llama_token llama_vocab_bos(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_eos(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_eot(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_sep(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_nl(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_pad(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_mask(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_cls(const struct llama_vocab * vocab);
// Whether tokenize adds BOS / EOS / SEP when add_special is true.
LLAMA_API bool llama_vocab_get_add_bos(const struct llama_vocab * vocab);
LLAMA_API bool llama_vocab_get_add_eos(const struct llama_vocab * vocab);
LLAMA_API bool llama_vocab_get_add_sep(const struct llama_vocab * vocab);
// Tokens to suppress (none: NULL with *n_suppress_tokens = 0).
LLAMA_API const llama_token * llama_vocab_get_suppress_tokens(const struct llama_vocab * vocab, int32_t * n_suppress_tokens);
// Fill-in-the-middle tokens (LLAMA_TOKEN_NULL if none).
LLAMA_API llama_token llama_vocab_fim_pre(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_fim_suf(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_fim_mid(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_fim_pad(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_fim_rep(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_vocab_fim_sep(const struct llama_vocab * vocab);
// Vocabulary type.
LLAMA_API enum llama_vocab_type llama_vocab_type(const struct llama_vocab * vocab);
// Number of tokens.
LLAMA_API int32_t llama_vocab_n_tokens(const struct llama_vocab * vocab);
// Deprecated aliases of the llama_vocab_* functions above.
LLAMA_API const char * llama_token_get_text(const struct llama_vocab * vocab, llama_token token);
LLAMA_API float llama_token_get_score(const struct llama_vocab * vocab, llama_token token);
LLAMA_API enum llama_token_attr llama_token_get_attr(const struct llama_vocab * vocab, llama_token token);
LLAMA_API bool llama_token_is_eog(const struct llama_vocab * vocab, llama_token token);
LLAMA_API bool llama_token_is_control(const struct llama_vocab * vocab, llama_token token);
LLAMA_API llama_token llama_token_bos(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_eos(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_eot(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_cls(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_sep(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_nl(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_pad(const struct llama_vocab * vocab);
LLAMA_API bool llama_add_bos_token(const struct llama_vocab * vocab);
LLAMA_API bool llama_add_eos_token(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_fim_pre(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_fim_suf(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_fim_mid(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_fim_pad(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_fim_rep(const struct llama_vocab * vocab);
LLAMA_API llama_token llama_token_fim_sep(const struct llama_vocab * vocab);

// Tokenizes text_len bytes of text (NUL bytes allowed). Returns the token count, or minus the
// count needed when n_tokens_max is too small (nothing written past n_tokens_max).
// add_special: add BOS/EOS as the vocab says; parse_special: match control/user-defined token texts.
// A vocabulary of type LLAMA_VOCAB_TYPE_NONE cannot tokenize: 0, with the reason logged.
LLAMA_API int32_t llama_tokenize(const struct llama_vocab * vocab, const char * text, int32_t text_len, llama_token * tokens,
                                 int32_t n_tokens_max, bool add_special, bool parse_special);
// Writes the text of a token into buf (not NUL-terminated); returns its length or minus the
// length needed. lstrip: skip up to that many leading spaces; special: render control tokens.
LLAMA_API int32_t llama_token_to_piece(const struct llama_vocab * vocab, llama_token token, char * buf, int32_t length,
                                       int32_t lstrip, bool special);
// Joins tokens into text; returns its length or minus the length needed.
LLAMA_API int32_t llama_detokenize(const struct llama_vocab * vocab, const llama_token * tokens, int32_t n_tokens, char * text,
                                   int32_t text_len_max, bool remove_special, bool unparse_special);

// ---- chat templates ----

// Formats chat with the built-in template named or detected from tmpl (never executed);
// returns the length written or needed, -1 if the template is not recognised.
LLAMA_API int32_t llama_chat_apply_template(const char * tmpl, const struct llama_chat_message * chat, size_t n_msg, bool add_ass,
                                            char * buf, int32_t length);
// Names of the built-in templates; returns their count.
LLAMA_API int32_t llama_chat_builtin_templates(const char ** output, size_t len);

// ---- samplers ----

// Creates a sampler from an interface and state (iface must outlive it). Free with llama_sampler_free.
LLAMA_API struct llama_sampler * llama_sampler_init(const struct llama_sampler_i * iface, llama_sampler_context_t ctx);
// The sampler's name ("greedy", "top-k", ...).
LLAMA_API const char * llama_sampler_name(const struct llama_sampler * smpl);
// Tells the sampler which token was chosen.
LLAMA_API void llama_sampler_accept(struct llama_sampler * smpl, llama_token token);
// Applies the sampler to the candidates in place.
LLAMA_API void llama_sampler_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p);
// Restores the initial state.
LLAMA_API void llama_sampler_reset(struct llama_sampler * smpl);
// Copy with the same state; NULL if the sampler cannot be cloned.
LLAMA_API struct llama_sampler * llama_sampler_clone(const struct llama_sampler * smpl);
// Copies src's state into dst (same sampler type).
LLAMA_API void llama_sampler_copy(const struct llama_sampler * src, struct llama_sampler * dst);
// Frees the sampler; NULL-safe. Do not free a sampler owned by a chain.
LLAMA_API void llama_sampler_free(struct llama_sampler * smpl);
// Empty chain. Free with llama_sampler_free (frees its samplers).
LLAMA_API struct llama_sampler * llama_sampler_chain_init(struct llama_sampler_chain_params params);
// Appends smpl; the chain takes ownership of the sampler.
LLAMA_API void llama_sampler_chain_add(struct llama_sampler * chain, struct llama_sampler * smpl);
// Sampler i of the chain (owned by the chain), NULL if out of range.
LLAMA_API struct llama_sampler * llama_sampler_chain_get(const struct llama_sampler * chain, int32_t i);
// Number of samplers in the chain.
LLAMA_API int32_t llama_sampler_chain_n(const struct llama_sampler * chain);
// Removes sampler i and returns it; the caller owns it again. NULL if out of range.
LLAMA_API struct llama_sampler * llama_sampler_chain_remove(struct llama_sampler * chain, int32_t i);
// Picks the highest logit.
LLAMA_API struct llama_sampler * llama_sampler_init_greedy(void);
// Samples from the softmax; seed LLAMA_DEFAULT_SEED picks a random seed.
LLAMA_API struct llama_sampler * llama_sampler_init_dist(uint32_t seed);
// Keeps the k highest (k <= 0: no-op).
LLAMA_API struct llama_sampler * llama_sampler_init_top_k(int32_t k);
// Nucleus: smallest set with cumulative probability >= p (at least min_keep).
LLAMA_API struct llama_sampler * llama_sampler_init_top_p(float p, size_t min_keep);
// Keeps tokens with p >= p_min * p_max (at least min_keep).
LLAMA_API struct llama_sampler * llama_sampler_init_min_p(float p, size_t min_keep);
// Locally typical sampling.
LLAMA_API struct llama_sampler * llama_sampler_init_typical(float p, size_t min_keep);
// Divides logits by t (t <= 0: keep only the max).
LLAMA_API struct llama_sampler * llama_sampler_init_temp(float t);
// Dynamic temperature in [t - delta, t + delta] by entropy, with exponent.
LLAMA_API struct llama_sampler * llama_sampler_init_temp_ext(float t, float delta, float exponent);
// Exclude-top-choices: with probability p removes tokens above threshold t but the last.
LLAMA_API struct llama_sampler * llama_sampler_init_xtc(float p, float t, size_t min_keep, uint32_t seed);
// Keeps logits within n standard deviations of the max.
LLAMA_API struct llama_sampler * llama_sampler_init_top_n_sigma(float n);
// Mirostat v1 (tau target surprise, eta learning rate, m tokens to estimate s_hat).
LLAMA_API struct llama_sampler * llama_sampler_init_mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m);
// Mirostat v2.
LLAMA_API struct llama_sampler * llama_sampler_init_mirostat_v2(uint32_t seed, float tau, float eta);
// GBNF-constrained sampling (grammar_root NULL: "root"); NULL with the reason logged (line and
// column) if the grammar does not compile. End of generation is allowed only where it is complete.
LLAMA_API struct llama_sampler * llama_sampler_init_grammar(const struct llama_vocab * vocab, const char * grammar_str,
                                                            const char * grammar_root);
// Deprecated: lazy grammar started by a trigger word (anywhere in the output) or token.
LLAMA_API struct llama_sampler * llama_sampler_init_grammar_lazy(const struct llama_vocab * vocab, const char * grammar_str,
                                                                 const char * grammar_root, const char ** trigger_words,
                                                                 size_t num_trigger_words, const llama_token * trigger_tokens,
                                                                 size_t num_trigger_tokens);
// Lazy grammar: inactive until a trigger pattern (regex matched against the whole output so far;
// the grammar is fed from its first capture group) or a trigger token (fed from the token on).
LLAMA_API struct llama_sampler *
llama_sampler_init_grammar_lazy_patterns(const struct llama_vocab * vocab, const char * grammar_str, const char * grammar_root,
                                         const char ** trigger_patterns, size_t num_trigger_patterns,
                                         const llama_token * trigger_tokens, size_t num_trigger_tokens);
// Repetition (divide/multiply), frequency and presence penalties over the last penalty_last_n tokens.
LLAMA_API struct llama_sampler * llama_sampler_init_penalties(int32_t n_vocab, int32_t penalty_last_n, float penalty_repeat,
                                                              float penalty_freq, float penalty_present);
// DRY (don't repeat yourself) penalty (dry_penalty_last_n -1: whole context, 0: off).
LLAMA_API struct llama_sampler * llama_sampler_init_dry(const struct llama_vocab * vocab, float dry_multiplier, float dry_base,
                                                        int32_t dry_allowed_length, int32_t dry_penalty_last_n,
                                                        const char ** seq_breakers, size_t num_breakers);
// Adaptive-p sampling.
LLAMA_API struct llama_sampler * llama_sampler_init_adaptive_p(float target, float decay, uint32_t seed);
// Adds fixed biases to logits.
LLAMA_API struct llama_sampler * llama_sampler_init_logit_bias(int32_t n_vocab, int32_t n_logit_bias,
                                                               const llama_logit_bias * logit_bias);
// Infill sampler (not supported: returns NULL).
LLAMA_API struct llama_sampler * llama_sampler_init_infill(const struct llama_vocab * vocab);
// Seed of a dist/mirostat/xtc sampler (or of the chain's last seeded sampler); LLAMA_DEFAULT_SEED if none.
LLAMA_API uint32_t llama_sampler_get_seed(const struct llama_sampler * smpl);
// Samples from logits row idx of ctx's last decode, accepts the token and returns it.
LLAMA_API llama_token llama_sampler_sample(struct llama_sampler * smpl, struct llama_context * ctx, int32_t idx);

// ---- split files ----

// Builds "prefix-00001-of-00004.gguf"; returns its length.
LLAMA_API int llama_split_path(char * split_path, size_t maxlen, const char * path_prefix, int split_no, int split_count);
// Extracts the prefix of a split path; returns its length or 0.
LLAMA_API int llama_split_prefix(char * split_prefix, size_t maxlen, const char * split_path, int split_no, int split_count);

// ---- performance ----

// Timings of the context.
LLAMA_API struct llama_perf_context_data llama_perf_context(const struct llama_context * ctx);
// Logs the timings of the context.
LLAMA_API void llama_perf_context_print(const struct llama_context * ctx);
// Resets the timings of the context.
LLAMA_API void llama_perf_context_reset(struct llama_context * ctx);
// Timings of a sampler chain.
LLAMA_API struct llama_perf_sampler_data llama_perf_sampler(const struct llama_sampler * chain);
// Logs the timings of a sampler chain.
LLAMA_API void llama_perf_sampler_print(const struct llama_sampler * chain);
// Resets the timings of a sampler chain.
LLAMA_API void llama_perf_sampler_reset(struct llama_sampler * chain);

// ---- training (not supported) ----

// Returns true (every tensor would be trained).
LLAMA_API bool llama_opt_param_filter_all(const struct ggml_tensor * tensor, void * userdata);
// Not supported: logs an error.
LLAMA_API void llama_opt_init(struct llama_context * lctx, struct llama_model * model, struct llama_opt_params lopt_params);
// Not supported: logs an error.
LLAMA_API void llama_opt_epoch(struct llama_context * lctx, void * dataset, void * result_train, void * result_eval,
                               int64_t idata_split, void * callback_train, void * callback_eval);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_H
