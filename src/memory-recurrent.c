// memory-recurrent.c — recurrent state beside the KV cache: for every recurrent layer of a
// hybrid model (Gated DeltaNet in qwen35), per sequence slot, the causal convolution's last
// d_conv - 1 inputs and the recurrence's state matrices, a fixed number of bytes whatever the
// context length. The KV cache (kv-cache.c) keeps the attention layers' rows and owns this
// part (llama_memory_i.rs); the llama_memory_* calls act on both.
//
// A state summarises every position it has consumed, so it can only be dropped whole: seq_rm
// that would cut it mid-way returns false and changes nothing (the caller re-decodes). Slot s
// belongs to sequence s; pos_min/pos_max say which positions its state has consumed.
//
// Decoding: the recurrent ops take a ubatch as n_seqs sequences of n_seq_tokens tokens each,
// sequence after sequence (llama.cpp's equal split). The batch's rows are grouped by sequence
// and given out in such groups; the output rows, computed in that order, are moved back to
// batch order at the end.
#include "llama-context.h"

#include <stdlib.h>
#include <string.h>

// Convolution channels: q and k of every key head, v of every value head.
static uint32_t rs_conv_channels(const struct llama_hparams * hp) {
    return 2 * hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner;
}

static uint32_t rs_n_embd_r(const struct llama_hparams * hp) {
    return (hp->ssm_d_conv > 0 ? hp->ssm_d_conv - 1 : 0) * rs_conv_channels(hp);
}

static uint32_t rs_n_embd_s(const struct llama_hparams * hp) { return hp->ssm_d_state * hp->ssm_d_state * hp->ssm_dt_rank; }

size_t llama_memory_recurrent_seq_bytes(const struct llama_hparams * hp) {
    size_t n = 0;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->recurrent_layers[il]) {
            n += ((size_t) rs_n_embd_r(hp) + rs_n_embd_s(hp)) * sizeof(float);
        }
    }
    return n;
}

void llama_memory_recurrent_free(struct llama_memory_recurrent * rs) {
    if (rs == NULL) {
        return;
    }
    for (int b = 0; b < rs->n_bufs; b++) {
        ggml_backend_buffer_free(rs->bufs[b]);
    }
    ggml_free(rs->ctx);
    free(rs->pos_min);
    free(rs->pos_max);
    free(rs->r_l);
    free(rs->s_l);
    free(rs->order);
    free(rs->seq_first);
    free(rs->seq_len);
    free(rs->seq_done);
    free(rs->seqs);
    free(rs->rows);
    free(rs->u_token);
    free(rs->u_embd);
    free(rs->u_pos);
    free(rs->u_n_seq_id);
    free(rs->u_seq_id);
    free(rs->u_output);
    free(rs->u_cells);
    free(rs->u_seqs);
    free(rs);
}

struct llama_memory_recurrent * llama_memory_recurrent_init(const struct llama_model * model, uint32_t n_seq_max) {
    const struct llama_hparams * hp = &model->hparams;
    struct llama_memory_recurrent * rs = GGML_CALLOC(1, sizeof(*rs));
    if (rs == NULL) {
        LLAMA_LOG_ERROR("llama_memory_recurrent_init: out of memory\n");
        return NULL;
    }
    rs->n_slots = n_seq_max;
    rs->n_layer = hp->n_layer;
    rs->n_embd_r = rs_n_embd_r(hp);
    rs->n_embd_s = rs_n_embd_s(hp);
    rs->pos_min = GGML_MALLOC(sizeof(llama_pos) * n_seq_max);
    rs->pos_max = GGML_MALLOC(sizeof(llama_pos) * n_seq_max);
    rs->seq_first = GGML_MALLOC(sizeof(int32_t) * n_seq_max);
    rs->seq_len = GGML_MALLOC(sizeof(int32_t) * n_seq_max);
    rs->seq_done = GGML_MALLOC(sizeof(int32_t) * n_seq_max);
    rs->seqs = GGML_MALLOC(sizeof(llama_seq_id) * n_seq_max);
    rs->u_seqs = GGML_MALLOC(sizeof(llama_seq_id) * n_seq_max);
    rs->r_l = GGML_CALLOC(hp->n_layer, sizeof(struct ggml_tensor *));
    rs->s_l = GGML_CALLOC(hp->n_layer, sizeof(struct ggml_tensor *));
    rs->ctx = ggml_init((struct ggml_init_params) {
        .mem_size = (size_t) (2 * hp->n_layer + 2) * ggml_tensor_overhead(), .mem_buffer = NULL, .no_alloc = true });
    if (!rs->pos_min || !rs->pos_max || !rs->seq_first || !rs->seq_len || !rs->seq_done || !rs->seqs || !rs->u_seqs || !rs->r_l ||
        !rs->s_l || !rs->ctx) {
        LLAMA_LOG_ERROR("llama_memory_recurrent_init: out of memory\n");
        llama_memory_recurrent_free(rs);
        return NULL;
    }
    for (uint32_t s = 0; s < n_seq_max; s++) {
        rs->pos_min[s] = rs->pos_max[s] = -1;
    }
    // One buffer per kind of memory (as the KV cache), each tensor on an aligned boundary.
    ggml_backend_buffer_type_t bufts[2] = { NULL, NULL };
    size_t sizes[2] = { 0, 0 };
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (!hp->recurrent_layers[il]) {
            continue;
        }
        rs->r_l[il] = ggml_new_tensor_2d(rs->ctx, GGML_TYPE_F32, rs->n_embd_r, n_seq_max);
        rs->s_l[il] = ggml_new_tensor_2d(rs->ctx, GGML_TYPE_F32, rs->n_embd_s, n_seq_max);
        if (rs->r_l[il] == NULL || rs->s_l[il] == NULL) {
            llama_memory_recurrent_free(rs);
            return NULL;
        }
        ggml_format_name(rs->r_l[il], "cache_r_l%u", il);
        ggml_format_name(rs->s_l[il], "cache_s_l%u", il);
        ggml_backend_buffer_type_t bt = llama_model_layer_buft(model, il);
        const int b = bufts[0] == NULL || bufts[0] == bt ? 0 : 1;
        bufts[b] = bt;
        const size_t align = ggml_backend_buft_get_alignment(bt);
        sizes[b] += GGML_PAD(ggml_nbytes(rs->r_l[il]), align) + GGML_PAD(ggml_nbytes(rs->s_l[il]), align);
    }
    char * base[2] = { NULL, NULL };
    for (int b = 0; b < 2 && bufts[b]; b++) {
        rs->bufs[b] = ggml_backend_buft_alloc_buffer(bufts[b], sizes[b]);
        if (rs->bufs[b] == NULL) {
            LLAMA_LOG_ERROR("llama_memory_recurrent_init: cannot allocate %zu bytes of %s memory for the recurrent state\n",
                            sizes[b], ggml_backend_buft_name(bufts[b]));
            llama_memory_recurrent_free(rs);
            return NULL;
        }
        rs->n_bufs = b + 1;
        ggml_backend_buffer_clear(rs->bufs[b], 0);
        base[b] = ggml_backend_buffer_get_base(rs->bufs[b]);
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (rs->r_l[il] == NULL) {
            continue;
        }
        ggml_backend_buffer_type_t bt = llama_model_layer_buft(model, il);
        const int b = bufts[0] == bt ? 0 : 1;
        const size_t align = ggml_backend_buft_get_alignment(bt);
        struct ggml_tensor * ts[2] = { rs->r_l[il], rs->s_l[il] };
        for (int i = 0; i < 2; i++) {
            if (ggml_backend_tensor_alloc(rs->bufs[b], ts[i], base[b]) != GGML_STATUS_SUCCESS) {
                llama_memory_recurrent_free(rs);
                return NULL;
            }
            base[b] += GGML_PAD(ggml_nbytes(ts[i]), align);
        }
    }
    LLAMA_LOG_INFO("llama_memory_recurrent_init: recurrent state %.2f MiB per sequence (any context length), "
                   "%u sequences\n",
                   llama_memory_recurrent_seq_bytes(hp) / 1048576.0, n_seq_max);
    return rs;
}

// ---------------------------------------------------------------------------------------------
// the llama_memory_* semantics

static bool rs_in_range(llama_pos p, llama_pos p0, llama_pos p1) {
    return p >= 0 && p >= (p0 < 0 ? 0 : p0) && (p1 < 0 || p < p1);
}

// How [p0, p1) (p0 < 0: from 0, p1 < 0: no end) meets the positions [lo, hi] slot s consumed:
// 0 not at all, 1 partly, 2 wholly.
static int rs_slot_overlap(const struct llama_memory_recurrent * rs, uint32_t s, llama_pos p0, llama_pos p1) {
    const llama_pos lo = rs->pos_min[s], hi = rs->pos_max[s];
    const llama_pos a = p0 < 0 ? 0 : p0;
    if (hi < 0 || a > hi || (p1 >= 0 && p1 <= lo)) {
        return 0;
    }
    return a <= lo && (p1 < 0 || p1 > hi) ? 2 : 1;
}

static bool rs_slot_rm_ok(const struct llama_memory_recurrent * rs, uint32_t s, llama_pos p0, llama_pos p1) {
    return rs_slot_overlap(rs, s, p0, p1) != 1;
}

bool llama_memory_recurrent_seq_rm_ok(const struct llama_memory_recurrent * rs, llama_seq_id seq_id, llama_pos p0, llama_pos p1) {
    for (uint32_t s = 0; s < rs->n_slots; s++) {
        if ((seq_id < 0 || (uint32_t) seq_id == s) && !rs_slot_rm_ok(rs, s, p0, p1)) {
            LLAMA_LOG_WARN("llama_memory_seq_rm: the recurrent state of sequence %u covers positions %d..%d; removing "
                           "[%d, %d) would cut it mid-way (re-decode the sequence instead)\n",
                           s, rs->pos_min[s], rs->pos_max[s], p0, p1);
            return false;
        }
    }
    return true;
}

void llama_memory_recurrent_seq_rm(struct llama_memory_recurrent * rs, llama_seq_id seq_id, llama_pos p0, llama_pos p1) {
    for (uint32_t s = 0; s < rs->n_slots; s++) {
        if ((seq_id < 0 || (uint32_t) seq_id == s) && rs_slot_overlap(rs, s, p0, p1) == 2) {
            rs->pos_min[s] = rs->pos_max[s] = -1; // zeroed before its next use
        }
    }
}

void llama_memory_recurrent_clear(struct llama_memory_recurrent * rs, bool data) {
    for (uint32_t s = 0; s < rs->n_slots; s++) {
        rs->pos_min[s] = rs->pos_max[s] = -1;
    }
    for (int b = 0; data && b < rs->n_bufs; b++) {
        ggml_backend_buffer_clear(rs->bufs[b], 0);
    }
}

// Copies slot src's rows of t into slot dst's through the host (states are small).
static void rs_copy_row(struct ggml_tensor * t, uint32_t src, uint32_t dst) {
    const size_t row = t->nb[1];
    void * tmp = GGML_MALLOC(row);
    if (tmp == NULL) {
        LLAMA_LOG_ERROR("llama_memory_seq_cp: out of memory copying a recurrent state\n");
        return;
    }
    ggml_backend_tensor_get(t, tmp, (size_t) src * row, row);
    ggml_backend_tensor_set(t, tmp, (size_t) dst * row, row);
    free(tmp);
}

void llama_memory_recurrent_seq_cp(struct llama_memory_recurrent * rs, llama_seq_id src, llama_seq_id dst, llama_pos p0,
                                   llama_pos p1) {
    if (rs_slot_overlap(rs, (uint32_t) src, p0, p1) != 2) {
        // a state cannot be copied in part: dst has none (its next batch is refused, never wrong)
        if (rs->pos_max[src] >= 0) {
            LLAMA_LOG_WARN("llama_memory_seq_cp: positions [%d, %d) are part of sequence %d's recurrent state "
                           "(%d..%d): sequence %d gets no state and must be decoded again\n",
                           p0, p1, src, rs->pos_min[src], rs->pos_max[src], dst);
        }
        rs->pos_min[dst] = rs->pos_max[dst] = -1;
        return;
    }
    {
        for (uint32_t il = 0; il < rs->n_layer; il++) {
            if (rs->r_l[il] != NULL) {
                rs_copy_row(rs->r_l[il], (uint32_t) src, (uint32_t) dst);
                rs_copy_row(rs->s_l[il], (uint32_t) src, (uint32_t) dst);
            }
        }
    }
    rs->pos_min[dst] = rs->pos_min[src];
    rs->pos_max[dst] = rs->pos_max[src];
}

void llama_memory_recurrent_seq_keep(struct llama_memory_recurrent * rs, llama_seq_id seq_id) {
    for (uint32_t s = 0; s < rs->n_slots; s++) {
        if (s != (uint32_t) seq_id) {
            rs->pos_min[s] = rs->pos_max[s] = -1;
        }
    }
}

void llama_memory_recurrent_seq_move(struct llama_memory_recurrent * rs, llama_seq_id seq_id, llama_pos p0, llama_pos p1,
                                     llama_pos delta, int d) {
    llama_pos * ends[2] = { &rs->pos_min[seq_id], &rs->pos_max[seq_id] };
    if (*ends[1] < 0) {
        return;
    }
    for (int i = 0; i < 2; i++) {
        if (rs_in_range(*ends[i], p0, p1)) {
            const int64_t np = d > 1 ? (int64_t) *ends[i] / d : (int64_t) *ends[i] + delta;
            *ends[i] = np < 0 ? -1 : (np > INT32_MAX ? INT32_MAX : (llama_pos) np);
        }
    }
    if (*ends[0] < 0 || *ends[1] < 0) {
        *ends[0] = *ends[1] = -1; // moved before position 0: the state is gone
    }
}

// ---------------------------------------------------------------------------------------------
// batches

static bool rs_reserve(struct llama_memory_recurrent * rs, size_t n_tokens, size_t n_ubatch, size_t n_embd) {
    if (n_tokens <= rs->cap_tokens) {
        return true;
    }
    free(rs->order);
    free(rs->rows);
    free(rs->u_token);
    free(rs->u_embd);
    free(rs->u_pos);
    free(rs->u_n_seq_id);
    free(rs->u_seq_id);
    free(rs->u_output);
    free(rs->u_cells);
    (void) n_ubatch;
    rs->order = GGML_MALLOC(sizeof(int32_t) * n_tokens);
    rs->rows = GGML_MALLOC(sizeof(int32_t) * n_tokens);
    rs->u_token = GGML_MALLOC(sizeof(llama_token) * n_tokens);
    rs->u_embd = GGML_MALLOC(sizeof(float) * n_tokens * n_embd);
    rs->u_pos = GGML_MALLOC(sizeof(llama_pos) * n_tokens);
    rs->u_n_seq_id = GGML_MALLOC(sizeof(int32_t) * n_tokens);
    rs->u_seq_id = GGML_MALLOC(sizeof(llama_seq_id *) * n_tokens);
    rs->u_output = GGML_MALLOC(n_tokens);
    rs->u_cells = GGML_MALLOC(sizeof(uint32_t) * n_tokens);
    rs->cap_tokens = n_tokens;
    if (!rs->order || !rs->rows || !rs->u_token || !rs->u_embd || !rs->u_pos || !rs->u_n_seq_id || !rs->u_seq_id ||
        !rs->u_output || !rs->u_cells) {
        rs->cap_tokens = 0;
        return false;
    }
    return true;
}

int32_t llama_memory_recurrent_batch_plan(struct llama_context * ctx) {
    struct llama_memory_recurrent * rs = ctx->kv.rs;
    const struct llama_batch_prep * p = &ctx->prep;
    const int32_t n = p->n_tokens;
    if (!rs_reserve(rs, (size_t) n, ctx->n_ubatch, p->embd ? ctx->model->hparams.n_embd : 0)) {
        LLAMA_LOG_ERROR("llama_decode: out of memory planning a batch of %d tokens\n", n);
        return -2;
    }
    for (uint32_t s = 0; s < rs->n_slots; s++) {
        rs->seq_len[s] = 0;
        rs->seq_done[s] = 0;
    }
    rs->n_seqs_batch = 0;
    rs->n_rows = 0;
    for (int32_t i = 0; i < n; i++) {
        if (p->n_seq_id[i] != 1) {
            // a shared row would need one state per sequence it belongs to
            LLAMA_LOG_ERROR("llama_decode: row %d belongs to %d sequences; a model with recurrent layers takes one "
                            "sequence per row (copy the state with llama_memory_seq_cp instead)\n",
                            i, p->n_seq_id[i]);
            return -1;
        }
        const llama_seq_id s = p->seq_id[i][0];
        if (rs->seq_len[s] == 0) {
            const llama_pos last = rs->pos_max[s];
            if (last < 0 && llama_memory_seq_pos_max(&ctx->kv, s) >= 0) {
                LLAMA_LOG_ERROR("llama_decode: sequence %d has cached positions but no recurrent state (a part of a "
                                "state cannot be kept or copied): remove it and decode it again\n",
                                s);
                return -1;
            }
            if (last >= 0 && p->pos[i] != last + 1) {
                LLAMA_LOG_ERROR("llama_decode: the recurrent state of sequence %d ends at position %d; the batch "
                                "continues it at %d (remove the sequence and decode it again)\n",
                                s, last, p->pos[i]);
                return -1;
            }
            rs->seqs[rs->n_seqs_batch++] = s;
        }
        rs->seq_len[s]++;
    }
    int32_t off = 0;
    for (int32_t k = 0; k < rs->n_seqs_batch; k++) {
        rs->seq_first[rs->seqs[k]] = off;
        off += rs->seq_len[rs->seqs[k]];
        rs->seq_len[rs->seqs[k]] = 0; // refilled below as the count placed so far
    }
    for (int32_t i = 0; i < n; i++) {
        const llama_seq_id s = p->seq_id[i][0];
        rs->order[rs->seq_first[s] + rs->seq_len[s]++] = i;
    }
    return 0;
}

bool llama_memory_recurrent_next_ubatch(struct llama_context * ctx, struct llama_ubatch * ub) {
    struct llama_memory_recurrent * rs = ctx->kv.rs;
    const struct llama_batch_prep * p = &ctx->prep;
    const size_t n_embd = ctx->model->hparams.n_embd;
    // the sequences with tokens left, each giving the same count
    uint32_t n_seqs = 0;
    int32_t left_min = INT32_MAX;
    for (int32_t k = 0; k < rs->n_seqs_batch && n_seqs < ctx->n_ubatch; k++) {
        const llama_seq_id s = rs->seqs[k];
        const int32_t left = rs->seq_len[s] - rs->seq_done[s];
        if (left > 0) {
            rs->u_seqs[n_seqs++] = s;
            left_min = left < left_min ? left : left_min;
        }
    }
    if (n_seqs == 0) {
        return false;
    }
    int32_t per = (int32_t) (ctx->n_ubatch / n_seqs);
    per = per < left_min ? per : left_min;
    int32_t j = 0;
    for (uint32_t k = 0; k < n_seqs; k++) {
        const llama_seq_id s = rs->u_seqs[k];
        for (int32_t t = 0; t < per; t++, j++) {
            const int32_t i = rs->order[rs->seq_first[s] + rs->seq_done[s] + t];
            rs->rows[rs->n_rows + j] = i;
            if (p->token) rs->u_token[j] = p->token[i];
            if (p->embd) memcpy(rs->u_embd + (size_t) j * n_embd, p->embd + (size_t) i * n_embd, n_embd * sizeof(float));
            rs->u_pos[j] = p->pos[i];
            rs->u_n_seq_id[j] = 1;
            rs->u_seq_id[j] = p->seq_id[i];
            rs->u_output[j] = p->output[i];
            rs->u_cells[j] = ctx->cells[i];
            llama_kv_cache_cell_set(&ctx->kv, ctx->cells[i], p->pos[i], 1, p->seq_id[i]);
        }
        rs->seq_done[s] += per;
    }
    rs->n_rows += j;
    *ub = (struct llama_ubatch) {
        .n_tokens = j,
        .token = p->token ? rs->u_token : NULL,
        .embd = p->embd ? rs->u_embd : NULL,
        .pos = rs->u_pos,
        .n_seq_id = rs->u_n_seq_id,
        .seq_id = rs->u_seq_id,
        .output = rs->u_output,
        .cells = rs->u_cells,
        .n_kv = llama_kv_cache_n_kv(&ctx->kv),
        .n_seqs = n_seqs,
        .n_seq_tokens = (uint32_t) per,
        .seqs = rs->u_seqs,
    };
    return true;
}

void llama_memory_recurrent_ubatch_begin(struct llama_context * ctx, const struct llama_ubatch * ub) {
    struct llama_memory_recurrent * rs = ctx->kv.rs;
    for (uint32_t k = 0; k < ub->n_seqs; k++) {
        const llama_seq_id s = ub->seqs[k];
        if (rs->pos_max[s] >= 0) {
            continue;
        }
        for (uint32_t il = 0; il < rs->n_layer; il++) {
            if (rs->r_l[il] != NULL) {
                ggml_backend_tensor_memset(rs->r_l[il], 0, (size_t) s * rs->r_l[il]->nb[1], rs->r_l[il]->nb[1]);
                ggml_backend_tensor_memset(rs->s_l[il], 0, (size_t) s * rs->s_l[il]->nb[1], rs->s_l[il]->nb[1]);
            }
        }
    }
}

void llama_memory_recurrent_ubatch_done(struct llama_context * ctx, const struct llama_ubatch * ub) {
    struct llama_memory_recurrent * rs = ctx->kv.rs;
    for (uint32_t k = 0; k < ub->n_seqs; k++) {
        const llama_seq_id s = ub->seqs[k];
        const uint32_t first = k * ub->n_seq_tokens, last = first + ub->n_seq_tokens - 1;
        if (rs->pos_max[s] < 0) {
            rs->pos_min[s] = ub->pos[first];
        }
        rs->pos_max[s] = ub->pos[last];
    }
}

// Rows [0, n_out) of a (width floats each) moved so that row k lands at dest[k], cycle by cycle
// through one spare row (a batch's logits can be hundreds of MB: no second copy of them).
static bool rs_reorder_rows(float * a, size_t width, const int32_t * dest, int32_t n_out) {
    float * spare = GGML_MALLOC(sizeof(float) * width);
    uint8_t * done = GGML_CALLOC((size_t) n_out + 1, 1);
    if (spare == NULL || done == NULL) {
        free(spare);
        free(done);
        return false;
    }
    const size_t row = sizeof(float) * width;
    for (int32_t k0 = 0; k0 < n_out; k0++) {
        if (done[k0] || dest[k0] == k0) {
            continue;
        }
        // carry row k0 along its cycle: each step puts the carried row at its place and picks up
        // the row that was there
        memcpy(spare, a + (size_t) k0 * width, row);
        int32_t k = k0;
        do {
            const int32_t to = dest[k];
            float * slot = a + (size_t) to * width;
            for (size_t i = 0; i < width; i++) {
                const float t = slot[i];
                slot[i] = spare[i];
                spare[i] = t;
            }
            done[k] = 1;
            k = to;
        } while (k != k0);
    }
    free(spare);
    free(done);
    return true;
}

bool llama_memory_recurrent_outputs_to_batch_order(struct llama_context * ctx) {
    struct llama_memory_recurrent * rs = ctx->kv.rs;
    const struct llama_batch_prep * p = &ctx->prep;
    // dest[k]: the batch-order output row of the k-th output computed
    int32_t * dest = GGML_MALLOC(sizeof(int32_t) * ((size_t) p->n_outputs + 1));
    int32_t * out_of_row = GGML_MALLOC(sizeof(int32_t) * ((size_t) p->n_tokens + 1));
    bool ok = dest != NULL && out_of_row != NULL;
    int32_t k = 0, n_out = 0;
    bool identity = true;
    for (int32_t i = 0; ok && i < p->n_tokens; i++) {
        out_of_row[i] = p->output[i] ? n_out++ : -1;
    }
    for (int32_t j = 0; ok && j < rs->n_rows; j++) {
        const int32_t i = rs->rows[j];
        if (p->output[i]) {
            dest[k] = out_of_row[i];
            identity = identity && dest[k] == k;
            k++;
        }
    }
    if (ok && !identity && ctx->have_logits) {
        ok = rs_reorder_rows(ctx->logits, ctx->model->hparams.n_vocab, dest, k);
    }
    if (ok && !identity && ctx->have_embd) {
        ok = rs_reorder_rows(ctx->embd, ctx->model->hparams.n_embd, dest, k);
    }
    free(dest);
    free(out_of_row);
    if (!ok) {
        LLAMA_LOG_ERROR("llama_decode: out of memory ordering the output rows\n");
    }
    return ok;
}
