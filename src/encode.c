// encode.c — what llama_encode (context.c) checks and sets on a validated batch before running
// it: every token is an output row (pooling NONE returns each one's embedding), positions fit
// a model's learned position table, and the batch's sequences hold no cached tokens (an encode
// borrows cache cells for its own K and V only, and a token must see exactly its batch's
// sequence, as llama.cpp's cache-less encoder does).
#include "llama-context.h"

#include <inttypes.h>

bool llama_encode_prepare(struct llama_context * ctx) {
    struct llama_batch_prep * p = &ctx->prep;
    const struct llama_model * model = ctx->model;
    const struct llama_memory_i * kv = &ctx->kv;
    const int64_t n_pos = model->pos_embd != NULL ? model->pos_embd->ne[1] : INT64_MAX;
    for (int32_t i = 0; i < p->n_tokens; i++) {
        p->output[i] = 1;
        if (p->pos[i] < 0 || p->pos[i] >= n_pos) {
            LLAMA_LOG_ERROR("llama_encode: token %d has position %d; this model's positions end at %" PRId64
                            " (its training context)\n", i, p->pos[i], n_pos - 1);
            return false;
        }
    }
    p->n_outputs = p->n_tokens;
    if (kv->n_used == 0) {
        return true;
    }
    for (uint32_t j = 0; j < kv->size; j++) {
        if (kv->pos[j] < 0) {
            continue;
        }
        for (int32_t i = 0; i < p->n_tokens; i++) {
            for (int32_t k = 0; k < p->n_seq_id[i]; k++) {
                if (llama_kv_cache_seq_has(kv, j, p->seq_id[i][k])) {
                    LLAMA_LOG_ERROR("llama_encode: sequence %d already holds decoded tokens; remove them first "
                                    "(llama_memory_seq_rm)\n", p->seq_id[i][k]);
                    return false;
                }
            }
        }
    }
    return true;
}
