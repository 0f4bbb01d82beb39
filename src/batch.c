// batch.c — llama_batch allocation, the validation every llama_decode input goes through
// (each field checked, positions filled in for rows that give none, output flags resolved),
// and the extended batch API (llama_batch_ext_*, llama_process) on top of llama_decode.
#include "llama-context.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// llama_batch

struct llama_batch llama_batch_get_one(llama_token * tokens, int32_t n_tokens) {
    struct llama_batch b;
    memset(&b, 0, sizeof(b));
    b.n_tokens = n_tokens;
    b.token = tokens;
    return b;
}

struct llama_batch llama_batch_init(int32_t n_tokens, int32_t embd, int32_t n_seq_max) {
    struct llama_batch b;
    memset(&b, 0, sizeof(b));
    if (n_tokens <= 0 || embd < 0 || n_seq_max <= 0) {
        LLAMA_LOG_ERROR("llama_batch_init: invalid sizes n_tokens=%d embd=%d n_seq_max=%d\n", n_tokens, embd, n_seq_max);
        return b;
    }
    const size_t n = (size_t) n_tokens;
    if (embd > 0) {
        b.embd = GGML_MALLOC(sizeof(float) * n * (size_t) embd);
    } else {
        b.token = GGML_MALLOC(sizeof(llama_token) * n);
    }
    b.pos = GGML_MALLOC(sizeof(llama_pos) * n);
    b.n_seq_id = GGML_MALLOC(sizeof(int32_t) * n);
    // One extra NULL pointer marks the end for llama_batch_free.
    b.seq_id = GGML_CALLOC(n + 1, sizeof(llama_seq_id *));
    b.logits = GGML_CALLOC(n, sizeof(int8_t));
    bool ok = (b.embd != NULL || b.token != NULL) && b.pos && b.n_seq_id && b.seq_id && b.logits;
    for (size_t i = 0; ok && i < n; i++) {
        b.seq_id[i] = GGML_MALLOC(sizeof(llama_seq_id) * (size_t) n_seq_max);
        ok = b.seq_id[i] != NULL;
    }
    if (!ok) {
        LLAMA_LOG_ERROR("llama_batch_init: out of memory for %d tokens\n", n_tokens);
        llama_batch_free(b);
        memset(&b, 0, sizeof(b));
    }
    return b;
}

void llama_batch_free(struct llama_batch batch) {
    free(batch.token);
    free(batch.embd);
    free(batch.pos);
    free(batch.n_seq_id);
    if (batch.seq_id) {
        for (size_t i = 0; batch.seq_id[i] != NULL; i++) {
            free(batch.seq_id[i]);
        }
        free(batch.seq_id);
    }
    free(batch.logits);
}

// ---------------------------------------------------------------------------------------------
// validation

static bool prep_reserve(struct llama_context * ctx, size_t n) {
    struct llama_batch_prep * p = &ctx->prep;
    if (n <= p->cap) {
        return true;
    }
    llama_pos * pos = GGML_REALLOC(p->pos, n * sizeof(*pos));
    if (pos) p->pos = pos;
    int32_t * nsi = GGML_REALLOC(p->n_seq_id, n * sizeof(*nsi));
    if (nsi) p->n_seq_id = nsi;
    llama_seq_id ** si = GGML_REALLOC(p->seq_id, n * sizeof(*si));
    if (si) p->seq_id = si;
    int8_t * out = GGML_REALLOC(p->output, n * sizeof(*out));
    if (out) p->output = out;
    uint32_t * cells = GGML_REALLOC(ctx->cells, n * sizeof(*cells));
    if (cells) ctx->cells = cells;
    if (!pos || !nsi || !si || !out || !cells) {
        LLAMA_LOG_ERROR("llama_decode: out of memory for a batch of %zu tokens\n", n);
        return false;
    }
    p->cap = n;
    ctx->cells_cap = n;
    return true;
}

int32_t llama_batch_prepare(struct llama_context * ctx, const struct llama_batch * batch) {
    struct llama_batch_prep * p = &ctx->prep;
    const int32_t n = batch->n_tokens;
    const int32_t n_vocab = (int32_t) ctx->model->hparams.n_vocab;
    const int32_t n_seq_max = (int32_t) ctx->n_seq_max;

    if (n <= 0) {
        LLAMA_LOG_ERROR("llama_decode: n_tokens = %d; the batch must hold at least one token\n", n);
        return -1;
    }
    if ((uint32_t) n > ctx->n_batch) {
        LLAMA_LOG_ERROR("llama_decode: n_tokens = %d exceeds the context's n_batch = %u\n", n, ctx->n_batch);
        return -1;
    }
    if (batch->token == NULL && batch->embd == NULL) {
        LLAMA_LOG_ERROR("llama_decode: the batch has neither token nor embd\n");
        return -1;
    }
    if (batch->token != NULL && batch->embd != NULL) {
        LLAMA_LOG_ERROR("llama_decode: the batch has both token and embd; set only one\n");
        return -1;
    }
    if (batch->n_seq_id != NULL && batch->seq_id == NULL) {
        LLAMA_LOG_ERROR("llama_decode: batch.n_seq_id is set but batch.seq_id is NULL\n");
        return -1;
    }
    if (!prep_reserve(ctx, (size_t) n)) {
        return -2;
    }
    p->n_tokens = n;
    p->token = batch->token;
    p->embd = batch->embd;
    p->seq0 = 0;
    for (int32_t s = 0; s < n_seq_max; s++) {
        ctx->seq_next[s] = -1;  // -1: not computed yet
        ctx->seq_last[s] = -1;  // -1: no row of s seen yet
    }
    int32_t n_outputs = 0;
    for (int32_t i = 0; i < n; i++) {
        if (batch->token != NULL) {
            const llama_token t = batch->token[i];
            if (t < 0 || t >= n_vocab) {
                LLAMA_LOG_ERROR("llama_decode: token[%d] = %d is out of the vocabulary range [0, %d)\n", i, t, n_vocab);
                return -1;
            }
        }
        if (batch->embd != NULL) {
            // A NaN/inf row would reach the KV cache, and masked cells still enter attention as
            // 0 * value: one bad row would poison every sequence sharing the cache.
            const int64_t n_embd = ctx->model->hparams.n_embd;
            const float * e = batch->embd + (size_t) i * (size_t) n_embd;
            for (int64_t j = 0; j < n_embd; j++) {
                if (!isfinite(e[j])) {
                    LLAMA_LOG_ERROR("llama_decode: embd[%d][%" PRId64 "] is not finite\n", i, j);
                    return -1;
                }
            }
        }
        if (batch->n_seq_id == NULL) {
            p->n_seq_id[i] = 1;
            p->seq_id[i] = &p->seq0;
        } else {
            const int32_t ns = batch->n_seq_id[i];
            if (ns < 1 || ns > n_seq_max) {
                LLAMA_LOG_ERROR("llama_decode: n_seq_id[%d] = %d must be in [1, n_seq_max = %d]\n", i, ns, n_seq_max);
                return -1;
            }
            if (batch->seq_id[i] == NULL) {
                LLAMA_LOG_ERROR("llama_decode: seq_id[%d] is NULL\n", i);
                return -1;
            }
            for (int32_t j = 0; j < ns; j++) {
                const llama_seq_id s = batch->seq_id[i][j];
                if (s < 0 || s >= n_seq_max) {
                    LLAMA_LOG_ERROR("llama_decode: seq_id[%d][%d] = %d is out of range [0, n_seq_max = %d)\n", i, j, s, n_seq_max);
                    return -1;
                }
            }
            p->n_seq_id[i] = ns;
            p->seq_id[i] = batch->seq_id[i];
        }
        llama_pos pos;
        const llama_seq_id s0 = p->seq_id[i][0];
        if (batch->pos != NULL) {
            pos = batch->pos[i];
            if (pos < 0) {
                LLAMA_LOG_ERROR("llama_decode: pos[%d] = %d is negative\n", i, pos);
                return -1;
            }
        } else {
            // Continue the sequence: after its last cached position, then after its previous row.
            if (ctx->seq_next[s0] < 0) {
                const llama_pos last = llama_memory_seq_pos_max(&ctx->kv, s0);
                if (last == INT32_MAX) {
                    LLAMA_LOG_ERROR("llama_decode: sequence %d is at the largest position; it cannot continue\n", s0);
                    return -1;
                }
                ctx->seq_next[s0] = last + 1;
            }
            pos = ctx->seq_next[s0]; // saturates at INT32_MAX; a repeat is refused below
        }
        for (int32_t j = 0; j < p->n_seq_id[i]; j++) {
            const llama_seq_id s = p->seq_id[i][j];
            // Rows of a sequence are attended to in batch order; an out-of-order row would be
            // hidden from earlier positions processed in an earlier ubatch.
            if (ctx->seq_last[s] >= 0 && pos <= ctx->seq_last[s]) {
                LLAMA_LOG_ERROR("llama_decode: positions of sequence %d must increase within a batch "
                                "(row %d has pos %d after pos %d)\n", s, i, pos, ctx->seq_last[s]);
                return -1;
            }
            // Explicit positions must continue the sequence: one past its previous row in this
            // batch, else one past its last cached position (any start for an empty sequence).
            if (batch->pos != NULL) {
                const llama_pos prev = ctx->seq_last[s] >= 0 ? ctx->seq_last[s] : llama_memory_seq_pos_max(&ctx->kv, s);
                if (prev >= 0 && (prev == INT32_MAX || pos != prev + 1)) {
                    LLAMA_LOG_ERROR("llama_decode: pos[%d] = %d does not continue sequence %d (its last position is %d; "
                                    "expected %lld)\n", i, pos, s, prev, (long long) prev + 1);
                    return -1;
                }
            }
            ctx->seq_last[s] = pos;
            ctx->seq_next[s] = pos < INT32_MAX ? pos + 1 : INT32_MAX;
        }
        p->pos[i] = pos;
        const bool out = batch->logits != NULL ? batch->logits[i] != 0 : i == n - 1;
        p->output[i] = out ? 1 : 0;
        n_outputs += out;
    }
    p->n_outputs = n_outputs;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// extended batch

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
    (void) batch; (void) seq_id; (void) embd;
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
    (void) batch; (void) idx; (void) embd;
    LLAMA_LOG_ERROR("llama_batch_ext_set_embd_token: not supported\n");
    return false;
}

bool llama_batch_ext_set_embd_state(struct llama_batch_ext * batch, int32_t idx, struct llama_embd embd) {
    (void) batch; (void) idx; (void) embd;
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
