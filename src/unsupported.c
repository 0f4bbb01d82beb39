// unsupported.c — llama.h entry points for features this engine does not implement: LoRA
// adapters, control vectors, training, backend sampling, models built
// from user callbacks or FILE pointers. Each returns the failure value its doc line names
// and logs why, so callers get an answer instead of a missing symbol.
#include "llama-impl.h"

#define LLAMA_NOT_SUPPORTED(what) LLAMA_LOG_ERROR("%s: %s is not supported by this engine\n", __func__, what)

struct llama_adapter_lora * llama_adapter_lora_init(struct llama_model * model, const char * path_lora) {
    (void)model; (void)path_lora;
    LLAMA_NOT_SUPPORTED("LoRA adapters");
    return NULL;
}

struct llama_adapter_lora * llama_adapter_lora_init_from_file_ptr(struct llama_model * model, FILE * file) {
    (void)model; (void)file;
    LLAMA_NOT_SUPPORTED("LoRA adapters");
    return NULL;
}

int32_t llama_adapter_meta_val_str(const struct llama_adapter_lora * adapter, const char * key, char * buf, size_t buf_size) {
    (void)adapter; (void)key;
    if (buf && buf_size > 0) buf[0] = '\0';
    return -1;
}

int32_t llama_adapter_meta_count(const struct llama_adapter_lora * adapter) {
    (void)adapter;
    return 0;
}

int32_t llama_adapter_meta_key_by_index(const struct llama_adapter_lora * adapter, int32_t i, char * buf, size_t buf_size) {
    (void)adapter; (void)i;
    if (buf && buf_size > 0) buf[0] = '\0';
    return -1;
}

int32_t llama_adapter_meta_val_str_by_index(const struct llama_adapter_lora * adapter, int32_t i, char * buf, size_t buf_size) {
    (void)adapter; (void)i;
    if (buf && buf_size > 0) buf[0] = '\0';
    return -1;
}

void llama_adapter_lora_free(struct llama_adapter_lora * adapter) {
    (void)adapter;
}

uint64_t llama_adapter_get_alora_n_invocation_tokens(const struct llama_adapter_lora * adapter) {
    (void)adapter;
    return 0;
}

const llama_token * llama_adapter_get_alora_invocation_tokens(const struct llama_adapter_lora * adapter) {
    (void)adapter;
    return NULL;
}

int32_t llama_set_adapters_lora(struct llama_context * ctx, struct llama_adapter_lora ** adapters, size_t n_adapters, float * scales) {
    (void)ctx; (void)adapters; (void)scales;
    if (n_adapters == 0) return 0;
    LLAMA_NOT_SUPPORTED("LoRA adapters");
    return -1;
}

int32_t llama_set_adapter_cvec(struct llama_context * ctx, const float * data, size_t len, int32_t n_embd, int32_t il_start, int32_t il_end) {
    (void)ctx; (void)len; (void)n_embd; (void)il_start; (void)il_end;
    if (data == NULL) return 0;
    LLAMA_NOT_SUPPORTED("control vectors");
    return -1;
}

bool llama_set_sampler(struct llama_context * ctx, llama_seq_id seq_id, struct llama_sampler * smpl) {
    (void)ctx; (void)seq_id; (void)smpl;
    LLAMA_NOT_SUPPORTED("samplers attached to a context (use llama_sampler_sample)");
    return false;
}

llama_token llama_get_sampled_token_ith(struct llama_context * ctx, int32_t i) {
    (void)ctx; (void)i;
    return LLAMA_TOKEN_NULL;
}

float * llama_get_sampled_probs_ith(struct llama_context * ctx, int32_t i) {
    (void)ctx; (void)i;
    return NULL;
}

uint32_t llama_get_sampled_probs_count_ith(struct llama_context * ctx, int32_t i) {
    (void)ctx; (void)i;
    return 0;
}

float * llama_get_sampled_logits_ith(struct llama_context * ctx, int32_t i) {
    (void)ctx; (void)i;
    return NULL;
}

uint32_t llama_get_sampled_logits_count_ith(struct llama_context * ctx, int32_t i) {
    (void)ctx; (void)i;
    return 0;
}

llama_token * llama_get_sampled_candidates_ith(struct llama_context * ctx, int32_t i) {
    (void)ctx; (void)i;
    return NULL;
}

uint32_t llama_get_sampled_candidates_count_ith(struct llama_context * ctx, int32_t i) {
    (void)ctx; (void)i;
    return 0;
}

bool llama_opt_param_filter_all(const struct ggml_tensor * tensor, void * userdata) {
    (void)tensor; (void)userdata;
    return true;
}

void llama_opt_init(struct llama_context * lctx, struct llama_model * model, struct llama_opt_params lopt_params) {
    (void)lctx; (void)model; (void)lopt_params;
    LLAMA_NOT_SUPPORTED("training");
}

void llama_opt_epoch(struct llama_context * lctx, void * dataset, void * result_train, void * result_eval, int64_t idata_split,
                     void * callback_train, void * callback_eval) {
    (void)lctx; (void)dataset; (void)result_train; (void)result_eval; (void)idata_split;
    (void)callback_train; (void)callback_eval;
    LLAMA_NOT_SUPPORTED("training");
}
