// llama.c — process-wide functions of the llama layer: version, defaults that belong to no
// single component, system info, logging, the ABI tables the Python layer checks at import,
// and the entry points of features this engine does not implement (each returns its
// documented failure value and logs why).
#include "llama-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LLAMA_PY_VERSION "0.1.0"

const char * llama_version(void) { return LLAMA_PY_VERSION; }

int llama_abi_version(void) { return LLAMA_ABI_VERSION; }

// ---- ABI tables: sizes and field offsets of every public struct, by name ----

struct llama_abi_field {
    const char * strct;
    const char * field;
    size_t offset;
};

#define F(S, T, FLD) { #S, #FLD, offsetof(T, FLD) }
static const struct llama_abi_field llama_abi_fields[] = {
    F(llama_token_data, llama_token_data, id),
    F(llama_token_data, llama_token_data, logit),
    F(llama_token_data, llama_token_data, p),
    F(llama_token_data_array, llama_token_data_array, data),
    F(llama_token_data_array, llama_token_data_array, size),
    F(llama_token_data_array, llama_token_data_array, selected),
    F(llama_token_data_array, llama_token_data_array, sorted),
    F(llama_batch, llama_batch, n_tokens),
    F(llama_batch, llama_batch, token),
    F(llama_batch, llama_batch, embd),
    F(llama_batch, llama_batch, pos),
    F(llama_batch, llama_batch, n_seq_id),
    F(llama_batch, llama_batch, seq_id),
    F(llama_batch, llama_batch, logits),
    F(llama_model_kv_override, struct llama_model_kv_override, tag),
    F(llama_model_kv_override, struct llama_model_kv_override, key),
    F(llama_model_kv_override, struct llama_model_kv_override, value),
    F(llama_model_tensor_override, struct llama_model_tensor_override, pattern),
    F(llama_model_tensor_override, struct llama_model_tensor_override, type),
    F(llama_model_imatrix_data, struct llama_model_imatrix_data, name),
    F(llama_model_imatrix_data, struct llama_model_imatrix_data, data),
    F(llama_model_imatrix_data, struct llama_model_imatrix_data, size),
    F(llama_model_params, struct llama_model_params, devices),
    F(llama_model_params, struct llama_model_params, tensor_buft_overrides),
    F(llama_model_params, struct llama_model_params, n_gpu_layers),
    F(llama_model_params, struct llama_model_params, split_mode),
    F(llama_model_params, struct llama_model_params, load_mode),
    F(llama_model_params, struct llama_model_params, lazy_mode),
    F(llama_model_params, struct llama_model_params, main_gpu),
    F(llama_model_params, struct llama_model_params, tensor_split),
    F(llama_model_params, struct llama_model_params, progress_callback),
    F(llama_model_params, struct llama_model_params, progress_callback_user_data),
    F(llama_model_params, struct llama_model_params, kv_overrides),
    F(llama_model_params, struct llama_model_params, vocab_only),
    F(llama_model_params, struct llama_model_params, check_tensors),
    F(llama_model_params, struct llama_model_params, use_extra_bufts),
    F(llama_model_params, struct llama_model_params, no_host),
    F(llama_model_params, struct llama_model_params, no_alloc),
    F(llama_model_params, struct llama_model_params, load_mtp),
    F(llama_sampler_seq_config, struct llama_sampler_seq_config, seq_id),
    F(llama_sampler_seq_config, struct llama_sampler_seq_config, sampler),
    F(llama_context_params, struct llama_context_params, n_ctx),
    F(llama_context_params, struct llama_context_params, n_batch),
    F(llama_context_params, struct llama_context_params, n_ubatch),
    F(llama_context_params, struct llama_context_params, n_seq_max),
    F(llama_context_params, struct llama_context_params, n_rs_seq),
    F(llama_context_params, struct llama_context_params, n_outputs_max),
    F(llama_context_params, struct llama_context_params, n_outputs_max_per_seq),
    F(llama_context_params, struct llama_context_params, n_threads),
    F(llama_context_params, struct llama_context_params, n_threads_batch),
    F(llama_context_params, struct llama_context_params, ctx_type),
    F(llama_context_params, struct llama_context_params, rope_scaling_type),
    F(llama_context_params, struct llama_context_params, pooling_type),
    F(llama_context_params, struct llama_context_params, attention_type),
    F(llama_context_params, struct llama_context_params, flash_attn_type),
    F(llama_context_params, struct llama_context_params, rope_freq_base),
    F(llama_context_params, struct llama_context_params, rope_freq_scale),
    F(llama_context_params, struct llama_context_params, yarn_ext_factor),
    F(llama_context_params, struct llama_context_params, yarn_attn_factor),
    F(llama_context_params, struct llama_context_params, yarn_beta_fast),
    F(llama_context_params, struct llama_context_params, yarn_beta_slow),
    F(llama_context_params, struct llama_context_params, yarn_orig_ctx),
    F(llama_context_params, struct llama_context_params, defrag_thold),
    F(llama_context_params, struct llama_context_params, cb_eval),
    F(llama_context_params, struct llama_context_params, cb_eval_user_data),
    F(llama_context_params, struct llama_context_params, type_k),
    F(llama_context_params, struct llama_context_params, type_v),
    F(llama_context_params, struct llama_context_params, abort_callback),
    F(llama_context_params, struct llama_context_params, abort_callback_data),
    F(llama_context_params, struct llama_context_params, embeddings),
    F(llama_context_params, struct llama_context_params, offload_kqv),
    F(llama_context_params, struct llama_context_params, no_perf),
    F(llama_context_params, struct llama_context_params, op_offload),
    F(llama_context_params, struct llama_context_params, swa_full),
    F(llama_context_params, struct llama_context_params, kv_unified),
    F(llama_context_params, struct llama_context_params, samplers),
    F(llama_context_params, struct llama_context_params, n_samplers),
    F(llama_context_params, struct llama_context_params, ctx_other),
    F(llama_model_quantize_params, llama_model_quantize_params, nthread),
    F(llama_model_quantize_params, llama_model_quantize_params, ftype),
    F(llama_model_quantize_params, llama_model_quantize_params, output_tensor_type),
    F(llama_model_quantize_params, llama_model_quantize_params, token_embedding_type),
    F(llama_model_quantize_params, llama_model_quantize_params, allow_requantize),
    F(llama_model_quantize_params, llama_model_quantize_params, quantize_output_tensor),
    F(llama_model_quantize_params, llama_model_quantize_params, only_copy),
    F(llama_model_quantize_params, llama_model_quantize_params, pure),
    F(llama_model_quantize_params, llama_model_quantize_params, keep_split),
    F(llama_model_quantize_params, llama_model_quantize_params, dry_run),
    F(llama_model_quantize_params, llama_model_quantize_params, imatrix),
    F(llama_model_quantize_params, llama_model_quantize_params, kv_overrides),
    F(llama_model_quantize_params, llama_model_quantize_params, tt_overrides),
    F(llama_model_quantize_params, llama_model_quantize_params, prune_layers),
    F(llama_model_quantize_params, llama_model_quantize_params, max_buf_size),
    F(llama_logit_bias, llama_logit_bias, token),
    F(llama_logit_bias, llama_logit_bias, bias),
    F(llama_sampler_chain_params, llama_sampler_chain_params, no_perf),
    F(llama_chat_message, llama_chat_message, role),
    F(llama_chat_message, llama_chat_message, content),
    F(llama_embd, struct llama_embd, data),
    F(llama_embd, struct llama_embd, n_rows),
    F(llama_embd, struct llama_embd, n_embd),
    F(llama_sampler_data, struct llama_sampler_data, logits),
    F(llama_sampler_data, struct llama_sampler_data, probs),
    F(llama_sampler_data, struct llama_sampler_data, sampled),
    F(llama_sampler_data, struct llama_sampler_data, candidates),
    F(llama_sampler_i, struct llama_sampler_i, name),
    F(llama_sampler_i, struct llama_sampler_i, accept),
    F(llama_sampler_i, struct llama_sampler_i, apply),
    F(llama_sampler_i, struct llama_sampler_i, reset),
    F(llama_sampler_i, struct llama_sampler_i, clone),
    F(llama_sampler_i, struct llama_sampler_i, free),
    F(llama_sampler_i, struct llama_sampler_i, backend_init),
    F(llama_sampler_i, struct llama_sampler_i, backend_accept),
    F(llama_sampler_i, struct llama_sampler_i, backend_apply),
    F(llama_sampler_i, struct llama_sampler_i, backend_set_input),
    F(llama_sampler_i, struct llama_sampler_i, backend_reset),
    F(llama_sampler_i, struct llama_sampler_i, copy_state),
    F(llama_sampler, struct llama_sampler, iface),
    F(llama_sampler, struct llama_sampler, ctx),
    F(llama_perf_context_data, struct llama_perf_context_data, t_start_ms),
    F(llama_perf_context_data, struct llama_perf_context_data, t_load_ms),
    F(llama_perf_context_data, struct llama_perf_context_data, t_p_eval_ms),
    F(llama_perf_context_data, struct llama_perf_context_data, t_eval_ms),
    F(llama_perf_context_data, struct llama_perf_context_data, n_p_eval),
    F(llama_perf_context_data, struct llama_perf_context_data, n_eval),
    F(llama_perf_context_data, struct llama_perf_context_data, n_reused),
    F(llama_perf_sampler_data, struct llama_perf_sampler_data, t_sample_ms),
    F(llama_perf_sampler_data, struct llama_perf_sampler_data, n_sample),
    F(llama_opt_params, struct llama_opt_params, n_ctx_train),
    F(llama_opt_params, struct llama_opt_params, param_filter),
    F(llama_opt_params, struct llama_opt_params, param_filter_ud),
    F(llama_opt_params, struct llama_opt_params, get_opt_pars_ud),
};
#undef F

struct llama_abi_size {
    const char * strct;
    size_t size;
};

#define S(N, T) { #N, sizeof(T) }
static const struct llama_abi_size llama_abi_sizes[] = {
    S(llama_token_data, llama_token_data),
    S(llama_token_data_array, llama_token_data_array),
    S(llama_batch, llama_batch),
    S(llama_model_kv_override_value, union llama_model_kv_override_value),
    S(llama_model_kv_override, struct llama_model_kv_override),
    S(llama_model_tensor_override, struct llama_model_tensor_override),
    S(llama_model_imatrix_data, struct llama_model_imatrix_data),
    S(llama_model_params, struct llama_model_params),
    S(llama_sampler_seq_config, struct llama_sampler_seq_config),
    S(llama_context_params, struct llama_context_params),
    S(llama_model_quantize_params, llama_model_quantize_params),
    S(llama_logit_bias, llama_logit_bias),
    S(llama_sampler_chain_params, llama_sampler_chain_params),
    S(llama_chat_message, llama_chat_message),
    S(llama_embd, struct llama_embd),
    S(llama_sampler_data, struct llama_sampler_data),
    S(llama_sampler_i, struct llama_sampler_i),
    S(llama_sampler, struct llama_sampler),
    S(llama_perf_context_data, struct llama_perf_context_data),
    S(llama_perf_sampler_data, struct llama_perf_sampler_data),
    S(llama_opt_params, struct llama_opt_params),
};
#undef S

size_t llama_abi_struct_size(const char * struct_name) {
    if (!struct_name) return 0;
    for (size_t i = 0; i < sizeof(llama_abi_sizes) / sizeof(llama_abi_sizes[0]); i++) {
        if (strcmp(llama_abi_sizes[i].strct, struct_name) == 0) return llama_abi_sizes[i].size;
    }
    return 0;
}

size_t llama_abi_field_offset(const char * struct_name, const char * field_name) {
    if (!struct_name || !field_name) return (size_t) -1;
    for (size_t i = 0; i < sizeof(llama_abi_fields) / sizeof(llama_abi_fields[0]); i++) {
        if (strcmp(llama_abi_fields[i].strct, struct_name) == 0 && strcmp(llama_abi_fields[i].field, field_name) == 0) {
            return llama_abi_fields[i].offset;
        }
    }
    return (size_t) -1;
}

// ---- defaults owned by no component ----

struct llama_sampler_chain_params llama_sampler_chain_default_params(void) {
    struct llama_sampler_chain_params p = { /*no_perf*/ true };
    return p;
}

struct llama_model_quantize_params llama_model_quantize_default_params(void) {
    struct llama_model_quantize_params p;
    memset(&p, 0, sizeof(p));
    p.nthread = 0;
    p.ftype = LLAMA_FTYPE_MOSTLY_Q5_1;
    p.output_tensor_type = GGML_TYPE_COUNT;
    p.token_embedding_type = GGML_TYPE_COUNT;
    p.quantize_output_tensor = true;
    return p;
}

// ---- names ----

const char * llama_flash_attn_type_name(enum llama_flash_attn_type t) {
    switch (t) {
        case LLAMA_FLASH_ATTN_TYPE_AUTO: return "auto";
        case LLAMA_FLASH_ATTN_TYPE_DISABLED: return "disabled";
        case LLAMA_FLASH_ATTN_TYPE_ENABLED: return "enabled";
    }
    return "unknown";
}

static const struct {
    enum llama_load_mode mode;
    const char * name;
} llama_load_modes[] = {
    { LLAMA_LOAD_MODE_AUTO, "auto" },
    { LLAMA_LOAD_MODE_NONE, "none" },
    { LLAMA_LOAD_MODE_MMAP, "mmap" },
    { LLAMA_LOAD_MODE_MLOCK, "mlock" },
    { LLAMA_LOAD_MODE_MMAP_MLOCK, "mmap+mlock" },
    { LLAMA_LOAD_MODE_DIRECT_IO, "direct-io" },
};

const char * llama_load_mode_name(enum llama_load_mode load_mode) {
    for (size_t i = 0; i < sizeof(llama_load_modes) / sizeof(llama_load_modes[0]); i++) {
        if (llama_load_modes[i].mode == load_mode) return llama_load_modes[i].name;
    }
    return "unknown";
}

enum llama_load_mode llama_load_mode_from_str(const char * value) {
    if (!value) return LLAMA_LOAD_MODE_AUTO;
    for (size_t i = 0; i < sizeof(llama_load_modes) / sizeof(llama_load_modes[0]); i++) {
        if (strcmp(llama_load_modes[i].name, value) == 0) return llama_load_modes[i].mode;
    }
    return LLAMA_LOAD_MODE_AUTO;
}

const char * llama_ftype_name(enum llama_ftype ftype) {
    switch ((int) ftype & ~LLAMA_FTYPE_GUESSED) {
        case LLAMA_FTYPE_ALL_F32: return "all F32";
        case LLAMA_FTYPE_MOSTLY_F16: return "F16";
        case LLAMA_FTYPE_MOSTLY_BF16: return "BF16";
        case LLAMA_FTYPE_MOSTLY_Q4_0: return "Q4_0";
        case LLAMA_FTYPE_MOSTLY_Q4_1: return "Q4_1";
        case LLAMA_FTYPE_MOSTLY_Q5_0: return "Q5_0";
        case LLAMA_FTYPE_MOSTLY_Q5_1: return "Q5_1";
        case LLAMA_FTYPE_MOSTLY_Q8_0: return "Q8_0";
        case LLAMA_FTYPE_MOSTLY_Q2_K: return "Q2_K - Medium";
        case LLAMA_FTYPE_MOSTLY_Q2_K_S: return "Q2_K - Small";
        case LLAMA_FTYPE_MOSTLY_Q3_K_S: return "Q3_K - Small";
        case LLAMA_FTYPE_MOSTLY_Q3_K_M: return "Q3_K - Medium";
        case LLAMA_FTYPE_MOSTLY_Q3_K_L: return "Q3_K - Large";
        case LLAMA_FTYPE_MOSTLY_Q4_K_S: return "Q4_K - Small";
        case LLAMA_FTYPE_MOSTLY_Q4_K_M: return "Q4_K - Medium";
        case LLAMA_FTYPE_MOSTLY_Q5_K_S: return "Q5_K - Small";
        case LLAMA_FTYPE_MOSTLY_Q5_K_M: return "Q5_K - Medium";
        case LLAMA_FTYPE_MOSTLY_Q6_K: return "Q6_K";
        case LLAMA_FTYPE_MOSTLY_TQ1_0: return "TQ1_0 - 1.69 bpw ternary";
        case LLAMA_FTYPE_MOSTLY_TQ2_0: return "TQ2_0 - 2.06 bpw ternary";
        case LLAMA_FTYPE_MOSTLY_MXFP4_MOE: return "MXFP4 MoE";
        case LLAMA_FTYPE_MOSTLY_IQ2_XXS: return "IQ2_XXS - 2.0625 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ2_XS: return "IQ2_XS - 2.3125 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ2_S: return "IQ2_S - 2.5 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ2_M: return "IQ2_M - 2.7 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ3_XS: return "IQ3_XS - 3.3 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ3_XXS: return "IQ3_XXS - 3.0625 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ1_S: return "IQ1_S - 1.5625 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ1_M: return "IQ1_M - 1.75 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ4_NL: return "IQ4_NL - 4.5 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ4_XS: return "IQ4_XS - 4.25 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ3_S: return "IQ3_S - 3.4375 bpw";
        case LLAMA_FTYPE_MOSTLY_IQ3_M: return "IQ3_S mix - 3.66 bpw";
        default: return "unknown, may not work";
    }
}

// ---- process-wide state ----

void llama_backend_init(void) {
    // The CPU backend needs no global initialisation; fp16 conversion is table-free.
}

void llama_backend_free(void) {}

void llama_numa_init(int numa) {
    if (numa != 0) {
        LLAMA_LOG_WARN("llama_numa_init: NUMA strategies are not supported; ignoring %d\n", numa);
    }
}

int64_t llama_time_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

// As llama.h's LLAMA_MAX_DEVICES: the most devices a model may be split over.
size_t llama_max_devices(void) { return 16; }
size_t llama_max_parallel_sequences(void) { return 256; }
size_t llama_max_tensor_buft_overrides(void) { return 0; }
bool llama_supports_mmap(void) { return true; }
// True when a real GPU backend has a device here (the test device does not count).
bool llama_supports_gpu_offload(void) {
    ggml_backend_load_all();
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_GPU && !ggml_backend_dev_is_test(d)) {
            return true;
        }
    }
    return false;
}
bool llama_supports_rpc(void) { return false; }

bool llama_supports_mlock(void) {
#if defined(_WIN32) || defined(__unix__) || defined(__APPLE__)
    return true;
#else
    return false;
#endif
}

const char * llama_print_system_info(void) {
    static char buf[1536];
    int n = snprintf(buf, sizeof(buf), "CPU : variant = %s | features = %s | physical cores = %d | env : %s | llama_py %s",
                     ggml_cpu_variant(), ggml_cpu_features(), ggml_cpu_n_physical_cores(), ggml_env_summary(), LLAMA_PY_VERSION);
    ggml_backend_load_all();
    for (size_t i = 0; i < ggml_backend_dev_count() && n > 0 && (size_t) n < sizeof(buf); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU) {
            n += snprintf(buf + n, sizeof(buf) - (size_t) n, " | %s : %s", ggml_backend_dev_name(d),
                          ggml_backend_dev_description(d));
        }
    }
    return buf;
}

static ggml_log_callback llama_log_cb = NULL;
static void * llama_log_ud = NULL;

void llama_log_set(ggml_log_callback log_callback, void * user_data) {
    llama_log_cb = log_callback;
    llama_log_ud = user_data;
    ggml_log_set(log_callback, user_data);
}

void llama_log_get(ggml_log_callback * log_callback, void ** user_data) {
    if (log_callback) *log_callback = llama_log_cb;
    if (user_data) *user_data = llama_log_ud;
}

// ---- split file names: "<prefix>-%05d-of-%05d.gguf" ----

int llama_split_path(char * split_path, size_t maxlen, const char * path_prefix, int split_no, int split_count) {
    if (!split_path || !path_prefix || maxlen == 0) return 0;
    int n = snprintf(split_path, maxlen, "%s-%05d-of-%05d.gguf", path_prefix, split_no + 1, split_count);
    return n < 0 ? 0 : (n >= (int) maxlen ? (int) maxlen - 1 : n);
}

int llama_split_prefix(char * split_prefix, size_t maxlen, const char * split_path, int split_no, int split_count) {
    if (!split_prefix || !split_path || maxlen == 0) return 0;
    char suffix[64];
    snprintf(suffix, sizeof(suffix), "-%05d-of-%05d.gguf", split_no + 1, split_count);
    const size_t len = strlen(split_path), slen = strlen(suffix);
    if (len < slen || strcmp(split_path + len - slen, suffix) != 0) return 0;
    const size_t plen = len - slen;
    if (plen + 1 > maxlen) return 0;
    memcpy(split_prefix, split_path, plen);
    split_prefix[plen] = '\0';
    return (int) plen;
}
