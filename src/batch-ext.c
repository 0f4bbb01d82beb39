// batch-ext.c — the extended batch API (llama_batch_ext_*, llama_process): a batch object sized
// for its context that fills in each row's next position from the batch and the cache, and
// hands a plain llama_batch to llama_decode; of the context it reads only its sizes and the cache positions.
#include "llama-context.h"

#include <stdint.h>
#include <stdlib.h>

struct llama_batch_ext {
    struct llama_context * ctx;
    int32_t n_max;              // rows
    int32_t n_seq_max;          // sequence ids per row
    int32_t n_tokens;
    llama_token * token;        // [n_max]
    llama_pos * pos;            // [n_max]
    bool * pos_set;             // [n_max]
    int32_t * n_seq_id;         // [n_max]
    llama_seq_id * seq_store;   // [n_max * n_seq_max]
    llama_seq_id ** seq_id;     // [n_max] -> rows of seq_store
    int8_t * logits;            // [n_max]
};

struct llama_batch_ext * llama_batch_ext_init(struct llama_context * ctx) {
    if (!llama_context_checked(ctx, __func__)) {
        return NULL;
    }
    struct llama_batch_ext * b = GGML_CALLOC(1, sizeof(*b));
    if (b == NULL) {
        LLAMA_LOG_ERROR("llama_batch_ext_init: out of memory\n");
        return NULL;
    }
    b->ctx = ctx;
    b->n_max = (int32_t) ctx->n_batch;
    b->n_seq_max = (int32_t) ctx->n_seq_max;
    const size_t n = (size_t) b->n_max;
    b->token = GGML_MALLOC(n * sizeof(llama_token));
    b->pos = GGML_MALLOC(n * sizeof(llama_pos));
    b->pos_set = GGML_CALLOC(n, sizeof(bool));
    b->n_seq_id = GGML_CALLOC(n, sizeof(int32_t));
    b->seq_store = GGML_MALLOC(n * (size_t) b->n_seq_max * sizeof(llama_seq_id));
    b->seq_id = GGML_MALLOC(n * sizeof(llama_seq_id *));
    b->logits = GGML_CALLOC(n, sizeof(int8_t));
    if (!b->token || !b->pos || !b->pos_set || !b->n_seq_id || !b->seq_store || !b->seq_id || !b->logits) {
        LLAMA_LOG_ERROR("llama_batch_ext_init: out of memory\n");
        llama_batch_ext_free(b);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        b->seq_id[i] = b->seq_store + i * (size_t) b->n_seq_max;
    }
    return b;
}

void llama_batch_ext_free(struct llama_batch_ext * b) {
    if (b == NULL) {
        return;
    }
    free(b->token);
    free(b->pos);
    free(b->pos_set);
    free(b->n_seq_id);
    free(b->seq_store);
    free(b->seq_id);
    free(b->logits);
    free(b);
}

void llama_batch_ext_clear(struct llama_batch_ext * b) {
    if (b == NULL) {
        return;
    }
    b->n_tokens = 0;
}

static int32_t batch_ext_append(struct llama_batch_ext * b, llama_seq_id seq_id, llama_token id) {
    if (b == NULL) {
        LLAMA_LOG_ERROR("llama_batch_ext_add: batch is NULL\n");
        return -1;
    }
    if (b->n_tokens >= b->n_max) {
        LLAMA_LOG_ERROR("llama_batch_ext_add: the batch is full (%d rows)\n", b->n_max);
        return -1;
    }
    if (seq_id < 0 || seq_id >= b->n_seq_max) {
        LLAMA_LOG_ERROR("llama_batch_ext_add: seq_id %d is out of range [0, %d)\n", seq_id, b->n_seq_max);
        return -3;
    }
    const int32_t i = b->n_tokens++;
    b->token[i] = id;
    b->pos_set[i] = false;
    b->pos[i] = 0;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = seq_id;
    b->logits[i] = 0;
    return i;
}

int32_t llama_batch_ext_add(struct llama_batch_ext * batch, llama_seq_id seq_id) {
    return batch_ext_append(batch, seq_id, LLAMA_TOKEN_NULL);
}

int32_t llama_batch_ext_add_token(struct llama_batch_ext * b, llama_seq_id seq_id, llama_token id) {
    if (b != NULL && (id < 0 || id >= (llama_token) b->ctx->model->hparams.n_vocab)) {
        LLAMA_LOG_ERROR("llama_batch_ext_add_token: token %d is out of the vocabulary range\n", id);
        return -2;
    }
    const int32_t i = batch_ext_append(b, seq_id, id);
    if (i < 0) {
        return i;
    }
    // The sequence's next position: after its rows already in this batch, else after the cache.
    llama_pos next = -1;
    for (int32_t r = i - 1; r >= 0 && next < 0; r--) {
        for (int32_t j = 0; j < b->n_seq_id[r]; j++) {
            if (b->seq_id[r][j] == seq_id && b->pos_set[r]) {
                next = b->pos[r] < INT32_MAX ? b->pos[r] + 1 : INT32_MAX;
                break;
            }
        }
    }
    if (next < 0) {
        const llama_pos last = llama_memory_seq_pos_max(&b->ctx->kv, seq_id);
        next = last < INT32_MAX ? last + 1 : INT32_MAX;
    }
    b->pos[i] = next;
    b->pos_set[i] = true;
    return i;
}

int32_t llama_batch_ext_add_embd(struct llama_batch_ext * batch, llama_seq_id seq_id, struct llama_embd embd) {
    (void) batch;
    (void) seq_id;
    (void) embd;
    LLAMA_LOG_ERROR("llama_batch_ext_add_embd: embedding rows are not supported in extended batches\n");
    return -1;
}

static bool batch_ext_idx_ok(const struct llama_batch_ext * b, int32_t idx, const char * func) {
    if (b == NULL || idx < 0 || idx >= b->n_tokens) {
        LLAMA_LOG_ERROR("%s: row %d is out of range\n", func, idx);
        return false;
    }
    return true;
}

bool llama_batch_ext_add_seq(struct llama_batch_ext * b, int32_t idx, llama_seq_id seq_id) {
    if (!batch_ext_idx_ok(b, idx, __func__)) {
        return false;
    }
    if (seq_id < 0 || seq_id >= b->n_seq_max) {
        LLAMA_LOG_ERROR("%s: seq_id %d is out of range [0, %d)\n", __func__, seq_id, b->n_seq_max);
        return false;
    }
    for (int32_t j = 0; j < b->n_seq_id[idx]; j++) {
        if (b->seq_id[idx][j] == seq_id) {
            return true;
        }
    }
    if (b->n_seq_id[idx] >= b->n_seq_max) {
        return false;
    }
    b->seq_id[idx][b->n_seq_id[idx]++] = seq_id;
    return true;
}

bool llama_batch_ext_set_embd_token(struct llama_batch_ext * batch, int32_t idx, struct llama_embd embd) {
    (void) batch;
    (void) idx;
    (void) embd;
    LLAMA_LOG_ERROR("llama_batch_ext_set_embd_token: not supported\n");
    return false;
}

bool llama_batch_ext_set_embd_state(struct llama_batch_ext * batch, int32_t idx, struct llama_embd embd) {
    (void) batch;
    (void) idx;
    (void) embd;
    LLAMA_LOG_ERROR("llama_batch_ext_set_embd_state: not supported\n");
    return false;
}

bool llama_batch_ext_set_output_embd(struct llama_batch_ext * b, int32_t idx, bool value) {
    if (!batch_ext_idx_ok(b, idx, __func__)) {
        return false;
    }
    b->logits[idx] = value ? 1 : 0;
    return true;
}

bool llama_batch_ext_set_output_logits(struct llama_batch_ext * b, int32_t idx, bool value) {
    if (!batch_ext_idx_ok(b, idx, __func__)) {
        return false;
    }
    b->logits[idx] = value ? 1 : 0;
    return true;
}

bool llama_batch_ext_set_pos(struct llama_batch_ext * b, int32_t idx, const llama_pos * pos) {
    if (!batch_ext_idx_ok(b, idx, __func__)) {
        return false;
    }
    if (pos == NULL || *pos < 0) {
        LLAMA_LOG_ERROR("%s: position must be given and >= 0\n", __func__);
        return false;
    }
    b->pos[idx] = *pos;
    b->pos_set[idx] = true;
    return true;
}

int32_t llama_process(struct llama_context * ctx, enum llama_process_type type, struct llama_batch_ext * b) {
    if (!llama_context_checked(ctx, __func__)) {
        return -1;
    }
    if (type != LLAMA_PROCESS_TYPE_DECODE) {
        LLAMA_LOG_ERROR("llama_process: only LLAMA_PROCESS_TYPE_DECODE is supported\n");
        return -1;
    }
    if (b == NULL || b->ctx != ctx) {
        LLAMA_LOG_ERROR("llama_process: the batch is NULL or belongs to another context\n");
        return -1;
    }
    for (int32_t i = 0; i < b->n_tokens; i++) {
        if (b->token[i] == LLAMA_TOKEN_NULL) {
            LLAMA_LOG_ERROR("llama_process: row %d has no token\n", i);
            return -1;
        }
        if (!b->pos_set[i]) {
            LLAMA_LOG_ERROR("llama_process: row %d has no position (llama_batch_ext_set_pos)\n", i);
            return -1;
        }
    }
    struct llama_batch batch = {
        .n_tokens = b->n_tokens,
        .token = b->token,
        .embd = NULL,
        .pos = b->pos,
        .n_seq_id = b->n_seq_id,
        .seq_id = b->seq_id,
        .logits = b->logits,
    };
    return llama_decode(ctx, batch);
}
