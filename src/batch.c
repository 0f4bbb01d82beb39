// batch.c — llama_batch allocation and the validation every llama_decode input goes through
// (each field checked, positions filled in for rows that give none, output flags resolved).
// The extended batch API (llama_batch_ext_*, llama_process) is in batch-ext.c.
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
    uint32_t * cells_swa = GGML_REALLOC(ctx->cells_swa, n * sizeof(*cells_swa));
    if (cells_swa) ctx->cells_swa = cells_swa;
    if (!pos || !nsi || !si || !out || !cells || !cells_swa) {
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
                    LLAMA_LOG_ERROR("llama_decode: seq_id[%d][%d] = %d is out of range [0, n_seq_max = %d)\n", i, j, s,
                                    n_seq_max);
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
                                "(row %d has pos %d after pos %d)\n",
                                s, i, pos, ctx->seq_last[s]);
                return -1;
            }
            // Explicit positions must continue the sequence: one past its previous row in this
            // batch, else one past its last cached position (any start for an empty sequence).
            if (batch->pos != NULL) {
                const llama_pos prev = ctx->seq_last[s] >= 0 ? ctx->seq_last[s] : llama_memory_seq_pos_max(&ctx->kv, s);
                if (prev >= 0 && (prev == INT32_MAX || pos != prev + 1)) {
                    LLAMA_LOG_ERROR("llama_decode: pos[%d] = %d does not continue sequence %d (its last position is %d; "
                                    "expected %lld)\n",
                                    i, pos, s, prev, (long long) prev + 1);
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
