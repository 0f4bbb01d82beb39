// encode.c — what llama_encode (context.c) checks and sets on a validated batch before running
// it: every token is an output row (pooling NONE returns each one's embedding), positions fit
// a model's learned position table, and the batch's sequences hold no cached tokens (a token
// must see exactly its batch's sequence, as llama.cpp's cache-less encoder does); then the slot
// layout of its attention and that attention's inputs. An encode never touches the cache: its
// K and V stay in the graph, in F32.
#include "llama-context.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

bool llama_encode_prepare(struct llama_context * ctx) {
    struct llama_batch_prep * p = &ctx->prep;
    const struct llama_model * model = ctx->model;
    const struct llama_memory_i * kv = &ctx->kv;
    const int64_t n_pos = model->pos_embd != NULL ? model->pos_embd->ne[1] : INT64_MAX;
    for (int32_t i = 0; i < p->n_tokens; i++) {
        p->output[i] = 1;
        if (p->pos[i] < 0 || p->pos[i] >= n_pos) {
            LLAMA_LOG_ERROR("llama_encode: token %d has position %d; this model's positions end at %" PRId64
                            " (its training context)\n",
                            i, p->pos[i], n_pos - 1);
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
                                    "(llama_memory_seq_rm)\n",
                                    p->seq_id[i][k]);
                    return false;
                }
            }
        }
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// slot layout
//
// An encode's tokens attend within their sequence only, so attention need not run over the
// whole batch: with every token in one sequence, the rows of sequence g take slots
// [g*len, g*len + count_g) of grp groups of len slots (len the longest sequence's count, the
// rest padding), and attention is grp products of len x len instead of one of n x n. Texts
// packed into one encode (Llama.embed: 16 sentences of 20-60 tokens) cost then about 1/16 of
// the one-group attention. When padding would cost more than it saves (one long sequence
// beside short ones), or a token belongs to several sequences, the batch stays one group:
// slot = token and a mask by sequence. ctx->enc_idx holds [n] slot of each token, then
// [len*grp] token of each slot (padding: token 0, masked out), then [n_seq_max] group of each
// sequence, then the mask's [len*len*grp] floats (one mask at a time is built there).

static bool enc_reserve(struct llama_context * ctx, size_t n) {
    if (n <= ctx->enc_idx_cap) {
        return true;
    }
    int32_t * p = GGML_REALLOC(ctx->enc_idx, n * sizeof(int32_t));
    if (p == NULL) {
        LLAMA_LOG_ERROR("llama_encode: out of memory for the slot layout of %zu rows\n", n);
        return false;
    }
    ctx->enc_idx = p;
    ctx->enc_idx_cap = n;
    return true;
}

bool llama_encode_layout(struct llama_context * ctx, uint32_t * len, uint32_t * grp) {
    const struct llama_batch_prep * p = &ctx->prep;
    const int32_t n = p->n_tokens;
    const uint32_t n_seq = ctx->n_seq_max;
    *len = (uint32_t) n;
    *grp = 1;
    int32_t * count = ctx->seq_count; // [n_seq_max] scratch
    memset(count, 0, n_seq * sizeof(int32_t));
    uint32_t n_grp = 0, max_len = 0;
    bool shared = false;
    for (int32_t i = 0; i < n && !shared; i++) {
        if (p->n_seq_id[i] != 1) {
            shared = true; // a token shared by sequences: one group, masked by sequence
            break;
        }
        const llama_seq_id s = p->seq_id[i][0];
        n_grp += count[s] == 0;
        count[s]++;
        max_len = (uint32_t) count[s] > max_len ? (uint32_t) count[s] : max_len;
    }
    // attention work ~ slots x slots per group; a single sequence is already one group
    if (shared || n_grp <= 1 || (uint64_t) n_grp * max_len * max_len >= (uint64_t) n * (uint64_t) n) {
        return enc_reserve(ctx, (size_t) n * n);
    }
    const size_t n_slots = (size_t) n_grp * max_len;
    if (!enc_reserve(ctx, (size_t) n + n_slots + n_seq + n_slots * max_len)) {
        return false;
    }
    int32_t *tok_slot = ctx->enc_idx, *slot_tok = tok_slot + n, *seq_grp = slot_tok + n_slots;
    for (uint32_t s = 0; s < n_seq; s++) {
        seq_grp[s] = -1;
        count[s] = 0; // now: rows placed so far
    }
    for (size_t k = 0; k < n_slots; k++) {
        slot_tok[k] = 0;
    }
    int32_t next = 0;
    for (int32_t i = 0; i < n; i++) {
        const llama_seq_id s = p->seq_id[i][0];
        if (seq_grp[s] < 0) {
            seq_grp[s] = next++;
        }
        const int32_t slot = seq_grp[s] * (int32_t) max_len + count[s]++;
        tok_slot[i] = slot;
        slot_tok[slot] = i;
    }
    *len = max_len;
    *grp = n_grp;
    return true;
}

// Whether batch row j may be seen by a row of sequence s at position pos in a layer with the
// window n_swa (0: no window), as the decode masks have it but both ways.
static bool enc_visible(const struct llama_ubatch * ub, int32_t j, llama_seq_id s, llama_pos pos, llama_pos n_swa, bool sym) {
    bool has = false;
    for (int32_t k = 0; k < ub->n_seq_id[j] && !has; k++) {
        has = ub->seq_id[j][k] == s;
    }
    if (!has || n_swa <= 0) {
        return has;
    }
    const int64_t d = (int64_t) pos - ub->pos[j]; // in 64 bits: positions may reach INT32_MAX
    return sym ? d <= n_swa / 2 && -d <= n_swa / 2 : d < n_swa && -d < n_swa;
}

// One mask [len, len, 1, grp]: row (g, a) sees column (g, b) when both slots hold tokens and
// the column's token is visible to the row's; a padding row sees nothing (its output is dropped).
static void enc_mask_fill(const struct llama_ubatch * ub, const int32_t * slot_tok, const int32_t * tok_slot, float * m,
                          llama_pos n_swa, bool sym) {
    const int64_t len = ub->enc_len, grp = ub->enc_grp;
    for (int64_t g = 0; g < grp; g++) {
        for (int64_t a = 0; a < len; a++) {
            float * row = m + (g * len + a) * len;
            const int64_t sa = g * len + a;
            const int32_t i = slot_tok ? slot_tok[sa] : (int32_t) sa;
            const bool real_i = !slot_tok || tok_slot[i] == sa;
            for (int64_t b = 0; b < len; b++) {
                const int64_t sb = g * len + b;
                const int32_t j = slot_tok ? slot_tok[sb] : (int32_t) sb;
                const bool real_j = !slot_tok || tok_slot[j] == sb;
                const bool vis = real_i && real_j && enc_visible(ub, j, ub->seq_id[i][0], ub->pos[i], n_swa, sym);
                row[b] = vis ? 0.0f : -INFINITY;
            }
        }
    }
}

void llama_encode_set_inputs(struct llama_context * ctx, const struct llama_ubatch * ub, const struct llama_graph_result * res) {
    const int32_t n = ub->n_tokens;
    const size_t n_slots = (size_t) ub->enc_len * ub->enc_grp;
    const bool grouped = res->inp_enc_slots != NULL;
    const int32_t * tok_slot = grouped ? ctx->enc_idx : NULL;
    const int32_t * slot_tok = grouped ? ctx->enc_idx + n : NULL;
    if (grouped && res->inp_enc_slots->data != NULL) {
        llama_context_set_input(ctx, res->inp_enc_slots, slot_tok, n_slots * sizeof(int32_t));
    }
    if (grouped && res->inp_enc_rows != NULL && res->inp_enc_rows->data != NULL) {
        llama_context_set_input(ctx, res->inp_enc_rows, tok_slot, (size_t) n * sizeof(int32_t));
    }
    const struct llama_hparams * hp = &ctx->model->hparams;
    const size_t bytes = n_slots * ub->enc_len * sizeof(float);
    // after the maps (llama_encode_layout reserved it); nothing but floats is stored there
    float * m = (float *) (ctx->enc_idx + (grouped ? (size_t) n + n_slots + ctx->n_seq_max : 0));
    if (res->inp_mask != NULL && res->inp_mask->data != NULL) {
        enc_mask_fill(ub, slot_tok, tok_slot, m, 0, false);
        llama_context_set_input(ctx, res->inp_mask, m, bytes);
    }
    if (res->inp_mask_swa != NULL && res->inp_mask_swa->data != NULL) {
        enc_mask_fill(ub, slot_tok, tok_slot, m, (llama_pos) hp->n_swa, hp->swa_symmetric);
        llama_context_set_input(ctx, res->inp_mask_swa, m, bytes);
    }
}
