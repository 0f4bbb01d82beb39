// unsupported.c — llama.h entry points for features this engine does not implement:
// training, backend sampling, models built
// from user callbacks or FILE pointers. Each returns the failure value its doc line names
// and logs why, so callers get an answer instead of a missing symbol.
#include "llama-impl.h"

#define LLAMA_NOT_SUPPORTED(what) LLAMA_LOG_ERROR("%s: %s is not supported by this engine\n", __func__, what)

bool llama_set_sampler(struct llama_context * ctx, llama_seq_id seq_id, struct llama_sampler * smpl) {
    (void) ctx;
    (void) seq_id;
    (void) smpl;
    LLAMA_NOT_SUPPORTED("samplers attached to a context (use llama_sampler_sample)");
    return false;
}

llama_token llama_get_sampled_token_ith(struct llama_context * ctx, int32_t i) {
    (void) ctx;
    (void) i;
    return LLAMA_TOKEN_NULL;
}

float * llama_get_sampled_probs_ith(struct llama_context * ctx, int32_t i) {
    (void) ctx;
    (void) i;
    return NULL;
}

uint32_t llama_get_sampled_probs_count_ith(struct llama_context * ctx, int32_t i) {
    (void) ctx;
    (void) i;
    return 0;
}

float * llama_get_sampled_logits_ith(struct llama_context * ctx, int32_t i) {
    (void) ctx;
    (void) i;
    return NULL;
}

uint32_t llama_get_sampled_logits_count_ith(struct llama_context * ctx, int32_t i) {
    (void) ctx;
    (void) i;
    return 0;
}

llama_token * llama_get_sampled_candidates_ith(struct llama_context * ctx, int32_t i) {
    (void) ctx;
    (void) i;
    return NULL;
}

uint32_t llama_get_sampled_candidates_count_ith(struct llama_context * ctx, int32_t i) {
    (void) ctx;
    (void) i;
    return 0;
}

bool llama_opt_param_filter_all(const struct ggml_tensor * tensor, void * userdata) {
    (void) tensor;
    (void) userdata;
    return true;
}

void llama_opt_init(struct llama_context * lctx, struct llama_model * model, struct llama_opt_params lopt_params) {
    (void) lctx;
    (void) model;
    (void) lopt_params;
    LLAMA_NOT_SUPPORTED("training");
}

void llama_opt_epoch(struct llama_context * lctx, void * dataset, void * result_train, void * result_eval, int64_t idata_split,
                     void * callback_train, void * callback_eval) {
    (void) lctx;
    (void) dataset;
    (void) result_train;
    (void) result_eval;
    (void) idata_split;
    (void) callback_train;
    (void) callback_eval;
    LLAMA_NOT_SUPPORTED("training");
}
