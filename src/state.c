// state.c — saving and restoring a context's state (the KV cache and the last outputs), whole or
// for one sequence, in memory or in session files.
//
// Layout (little-endian host order, all integers 32-bit):
//   full state:  "LSTD" | version | fingerprint | outputs | kv(all cells)
//   seq state:   "LSSQ" | version | fingerprint | kv(cells of the sequence)
//   fingerprint: n_layer, n_embd_k_gqa, n_embd_v_gqa, type_k, type_v, n_vocab, n_embd, window (1: swa_full off)
//   outputs:     flags (1 logits, 2 embd), n_outputs, n_batch_tokens, output_ids[n_batch_tokens],
//                logits[n_outputs * n_vocab] f32 (flag 1), embd[n_outputs * n_embd] f32 (flag 2)
//   kv:          n_cells, then per cell: index, pos, n_seq, seq ids; then per layer the K rows
//                of those cells, then per layer their V rows (raw bytes of the cache type); with
//                the window cache, the layers over the main cells, then a second kv section of
//                the window cells with the sliding-window layers' rows;
//                with recurrent layers (hybrid models) then: n_states, per state: sequence,
//                pos_min, pos_max, then per recurrent layer its conv row and its state row (f32)
//   session file:     u32 LLAMA_SESSION_MAGIC | u32 LLAMA_SESSION_VERSION | u32 n_tokens | tokens | full state
//   seq session file: u32 LLAMA_STATE_SEQ_MAGIC | u32 LLAMA_STATE_SEQ_VERSION | u32 n_tokens | tokens | seq state
// A restored cell keeps its cache index when it fits, so a restored context computes exactly
// what the saved one would have.
#include "llama-context.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_TAG_FULL 0x4454534cu // "LSTD"
#define STATE_TAG_SEQ  0x5153534cu // "LSSQ"
#define STATE_TAG_PART 0x5053534cu // "LSSP": a sequence's partial state (recurrent only)
#define STATE_VERSION  2u // 2: the window-cache flag in the fingerprint, the window cells after the others

struct st_writer {
    uint8_t * dst;     // NULL: only count
    size_t cap;
    size_t n;
    bool overflow;
};

static void st_write(struct st_writer * w, const void * p, size_t size) {
    if (size == 0) {
        return;
    }
    if (w->dst != NULL) {
        if (size > w->cap - w->n || w->n > w->cap) {
            w->overflow = true;
            return;
        }
        memcpy(w->dst + w->n, p, size);
    }
    w->n += size;
}

static void st_u32(struct st_writer * w, uint32_t v) { st_write(w, &v, sizeof(v)); }

struct st_reader {
    const uint8_t * src;
    size_t size;
    size_t n;
    bool err;
};

static bool st_read(struct st_reader * r, void * p, size_t size) {
    if (size == 0) {
        return !r->err;
    }
    if (r->err || size > r->size - r->n) {
        r->err = true;
        return false;
    }
    memcpy(p, r->src + r->n, size);
    r->n += size;
    return true;
}

static uint32_t st_r32(struct st_reader * r) {
    uint32_t v = 0;
    st_read(r, &v, sizeof(v));
    return v;
}

static void st_fingerprint(struct st_writer * w, const struct llama_context * ctx) {
    const struct llama_memory_i * kv = &ctx->kv;
    st_u32(w, kv->n_layer);
    st_u32(w, kv->n_embd_k_gqa);
    st_u32(w, kv->n_embd_v_gqa);
    st_u32(w, (uint32_t) kv->type_k);
    st_u32(w, (uint32_t) kv->type_v);
    st_u32(w, ctx->model->hparams.n_vocab);
    st_u32(w, ctx->model->hparams.n_embd);
    st_u32(w, kv->swa != NULL ? 1u : 0u);
}

static bool st_check_fingerprint(struct st_reader * r, const struct llama_context * ctx, const char * func) {
    const struct llama_memory_i * kv = &ctx->kv;
    const uint32_t want[8] = { kv->n_layer,
                               kv->n_embd_k_gqa,
                               kv->n_embd_v_gqa,
                               (uint32_t) kv->type_k,
                               (uint32_t) kv->type_v,
                               ctx->model->hparams.n_vocab,
                               ctx->model->hparams.n_embd,
                               kv->swa != NULL ? 1u : 0u };
    static const char * names[8] = { "n_layer", "n_embd_k_gqa", "n_embd_v_gqa", "type_k",
                                     "type_v",  "n_vocab",      "n_embd",       "window cache (1: swa_full off)" };
    for (int i = 0; i < 8; i++) {
        const uint32_t got = st_r32(r);
        if (r->err) {
            LLAMA_LOG_ERROR("%s: the state is truncated\n", func);
            return false;
        }
        if (got != want[i]) {
            LLAMA_LOG_ERROR("%s: the state was saved with %s = %u, this context has %u\n", func, names[i], got, want[i]);
            return false;
        }
    }
    return true;
}

// Bytes (and elements, when ne_max is set) of the longest K or V row over the cache's slots
// (layers may differ in width).
static size_t st_kv_row_max(const struct llama_memory_i * kv, int64_t * ne_max) {
    size_t nb = 0;
    for (uint32_t il = 0; il < kv->n_layer; il++) {
        for (int kind = 0; kind < 2; kind++) {
            const struct ggml_tensor * t = kind == 0 ? kv->k_l[il] : kv->v_l[il];
            if (t == NULL) {
                continue;
            }
            nb = t->nb[1] > nb ? t->nb[1] : nb;
            if (ne_max != NULL && t->ne[0] > *ne_max) {
                *ne_max = t->ne[0];
            }
        }
    }
    return nb;
}

// Writes the cells holding seq (seq < 0: every non-empty cell) and their K/V rows.
static void st_write_kv(struct st_writer * w, const struct llama_memory_i * kv, const struct llama_memory_i * cells,
                        llama_seq_id seq) {
    const bool win = cells != kv; // the window cells: the sliding layers' slots
    uint32_t n = 0;
    for (uint32_t i = 0; i < cells->size; i++) {
        n += cells->pos[i] >= 0 && (seq < 0 || llama_kv_cache_seq_has(cells, i, seq));
    }
    st_u32(w, n);
    for (uint32_t i = 0; i < cells->size; i++) {
        if (cells->pos[i] < 0 || (seq >= 0 && !llama_kv_cache_seq_has(cells, i, seq))) {
            continue;
        }
        st_u32(w, i);
        st_u32(w, (uint32_t) cells->pos[i]);
        if (seq >= 0) {
            st_u32(w, 1);
            st_u32(w, (uint32_t) seq);
        } else {
            uint32_t ns = 0;
            for (uint32_t s = 0; s < cells->n_seq_max; s++) {
                ns += llama_kv_cache_seq_has(cells, i, (llama_seq_id) s);
            }
            st_u32(w, ns);
            for (uint32_t s = 0; s < cells->n_seq_max; s++) {
                if (llama_kv_cache_seq_has(cells, i, (llama_seq_id) s)) {
                    st_u32(w, s);
                }
            }
        }
    }
    // rows of a device's cache are read through the backend into a host row first
    const size_t row_max = st_kv_row_max(kv, NULL);
    uint8_t * staged = NULL;
    for (int kind = 0; kind < 2; kind++) {
        for (uint32_t il = 0; il < kv->n_layer; il++) {
            const struct ggml_tensor * t = kind == 0 ? kv->k_l[il] : kv->v_l[il];
            if (t == NULL || (kv->slot_swa[il] != 0) != win) {
                continue; // a recurrent layer (no K/V rows), or a slot over the other cells
            }
            const bool host = llama_model_tensor_on_host(t);
            if (!host && w->dst != NULL && staged == NULL && (staged = GGML_MALLOC(row_max)) == NULL) {
                LLAMA_LOG_ERROR("llama_state: out of memory\n");
                w->overflow = true;
                return;
            }
            for (uint32_t i = 0; i < cells->size; i++) {
                if (cells->pos[i] >= 0 && (seq < 0 || llama_kv_cache_seq_has(cells, i, seq))) {
                    const size_t off = (size_t) i * t->nb[1];
                    if (host || w->dst == NULL) {
                        st_write(w, host ? (const uint8_t *) t->data + off : NULL, t->nb[1]);
                    } else {
                        ggml_backend_tensor_get(t, staged, off, t->nb[1]);
                        st_write(w, staged, t->nb[1]);
                    }
                }
            }
        }
    }
    free(staged);
}

// Reads cells written by st_write_kv into free cells (dest >= 0: all into that sequence).
// false (logged) on malformed input or too little room; cells placed so far are then cleared.
static bool st_read_kv(struct st_reader * r, struct llama_memory_i * kv, struct llama_memory_i * cset, llama_seq_id dest,
                       const char * func) {
    const bool win = cset != kv; // the window cells: the sliding layers' slots
    const uint32_t n = st_r32(r);
    if (r->err || n > cset->size - cset->n_used) {
        LLAMA_LOG_ERROR("%s: %s\n", func, r->err ? "the state is truncated" : "not enough free KV cells for the saved state");
        return false;
    }
    uint32_t * cells = GGML_MALLOC(sizeof(uint32_t) * (n + 1));
    uint32_t * free_cells = GGML_MALLOC(sizeof(uint32_t) * (n + 1));
    llama_seq_id * seqs = GGML_MALLOC(sizeof(llama_seq_id) * cset->n_seq_max);
    bool ok = cells && free_cells && seqs && llama_kv_cache_find_slot(cset, n, NULL, free_cells);
    uint32_t placed = 0;
    if (!ok) {
        LLAMA_LOG_ERROR("%s: out of memory or no free KV cells\n", func);
    }
    // A cell keeps its saved index when that cell is free; otherwise it takes the lowest free one.
    uint32_t next_free = 0;
    for (uint32_t k = 0; ok && k < n; k++) {
        const uint32_t idx = st_r32(r);
        const int32_t pos = (int32_t) st_r32(r);
        const uint32_t ns = st_r32(r);
        if (r->err || pos < 0 || ns == 0 || ns > cset->n_seq_max) {
            LLAMA_LOG_ERROR("%s: malformed cell %u in the state\n", func, k);
            ok = false;
            break;
        }
        for (uint32_t j = 0; j < ns; j++) {
            const uint32_t s = st_r32(r);
            if (s >= cset->n_seq_max) {
                LLAMA_LOG_ERROR("%s: the state holds seq_id %u, this context has n_seq_max = %u\n", func, s, cset->n_seq_max);
                ok = false;
            }
            seqs[j] = (llama_seq_id) s;
        }
        if (!ok || r->err) {
            ok = false;
            break;
        }
        uint32_t cell;
        if (idx < cset->size && cset->pos[idx] < 0) {
            cell = idx;
        } else {
            while (next_free < n && cset->pos[free_cells[next_free]] >= 0) {
                next_free++;
            }
            if (next_free >= n) {
                LLAMA_LOG_ERROR("%s: not enough free KV cells for the saved state\n", func);
                ok = false;
                break;
            }
            cell = free_cells[next_free];
        }
        if (dest >= 0) {
            seqs[0] = dest;
        }
        llama_kv_cache_cell_set(cset, cell, pos, dest >= 0 ? 1 : (int32_t) ns, seqs);
        cells[placed++] = cell;
    }
    // Restored keys and values must be finite: a NaN in one sequence's cells would reach the
    // other sequences' attention through masked-out (0 * NaN) products.
    int64_t ne_max = 0;
    const size_t row_max = st_kv_row_max(kv, &ne_max);
    float * row = ok ? GGML_MALLOC(sizeof(float) * (size_t) ne_max) : NULL;
    uint8_t * staged = ok ? GGML_MALLOC(row_max) : NULL;
    if (ok && (row == NULL || staged == NULL)) {
        LLAMA_LOG_ERROR("%s: out of memory\n", func);
        ok = false;
    }
    for (int kind = 0; ok && kind < 2; kind++) {
        for (uint32_t il = 0; ok && il < kv->n_layer; il++) {
            struct ggml_tensor * t = kind == 0 ? kv->k_l[il] : kv->v_l[il];
            if (t == NULL || (kv->slot_swa[il] != 0) != win) {
                continue;
            }
            const struct ggml_type_traits * tt = ggml_get_type_traits(t->type);
            const bool host = llama_model_tensor_on_host(t);
            for (uint32_t k = 0; k < placed; k++) {
                uint8_t * dst = host ? (uint8_t *) t->data + (size_t) cells[k] * t->nb[1] : staged;
                if (!st_read(r, dst, t->nb[1])) {
                    LLAMA_LOG_ERROR("%s: the state is truncated\n", func);
                    ok = false;
                    break;
                }
                tt->to_float(dst, row, t->ne[0]);
                for (int64_t e = 0; e < t->ne[0]; e++) {
                    if (!isfinite(row[e])) {
                        LLAMA_LOG_ERROR("%s: the state holds a non-finite %s value (layer %u)\n", func,
                                        kind == 0 ? "key" : "value", il);
                        ok = false;
                        break;
                    }
                }
                if (!ok) {
                    break;
                }
                if (!host) {
                    ggml_backend_tensor_set(t, staged, (size_t) cells[k] * t->nb[1], t->nb[1]);
                }
            }
        }
    }
    free(row);
    free(staged);
    if (!ok) {
        // Refused: free the cells and zero what was copied into them, so no rejected (possibly
        // non-finite) bytes stay in the buffer that the attention reads for masked cells.
        for (uint32_t k = 0; k < placed; k++) {
            llama_kv_cache_cell_clear(cset, cells[k]);
            for (uint32_t il = 0; il < kv->n_layer; il++) {
                if (kv->k_l[il] == NULL || (kv->slot_swa[il] != 0) != win) {
                    continue;
                }
                ggml_backend_tensor_memset(kv->k_l[il], 0, (size_t) cells[k] * kv->k_l[il]->nb[1], kv->k_l[il]->nb[1]);
                ggml_backend_tensor_memset(kv->v_l[il], 0, (size_t) cells[k] * kv->v_l[il]->nb[1], kv->v_l[il]->nb[1]);
            }
        }
    }
    free(cells);
    free(free_cells);
    free(seqs);
    return ok;
}

// ---------------------------------------------------------------------------------------------
// whole state

// The recurrent states (all, or seq's) after the KV section; nothing for a model without them.
static void st_write_rs(struct st_writer * w, const struct llama_memory_recurrent * rs, llama_seq_id seq) {
    if (rs == NULL) {
        return;
    }
    uint32_t n = 0;
    for (uint32_t s = 0; s < rs->n_slots; s++) {
        n += rs->pos_max[s] >= 0 && (seq < 0 || (uint32_t) seq == s);
    }
    st_u32(w, n);
    const size_t row_max = ((size_t) (rs->n_embd_r > rs->n_embd_s ? rs->n_embd_r : rs->n_embd_s)) * sizeof(float);
    void * row = w->dst != NULL ? GGML_MALLOC(row_max) : NULL;
    if (w->dst != NULL && row == NULL) {
        w->overflow = true;
        return;
    }
    for (uint32_t s = 0; s < rs->n_slots; s++) {
        if (rs->pos_max[s] < 0 || (seq >= 0 && (uint32_t) seq != s)) {
            continue;
        }
        st_u32(w, s);
        st_u32(w, (uint32_t) rs->pos_min[s]);
        st_u32(w, (uint32_t) rs->pos_max[s]);
        for (uint32_t il = 0; il < rs->n_layer; il++) {
            const struct ggml_tensor * ts[2] = { rs->r_l[il], rs->s_l[il] };
            for (int k = 0; k < 2 && ts[0] != NULL; k++) {
                if (row != NULL) {
                    ggml_backend_tensor_get(ts[k], row, (size_t) s * ts[k]->nb[1], ts[k]->nb[1]);
                }
                st_write(w, row, ts[k]->nb[1]); // counts only when row is NULL (dst NULL)
            }
        }
    }
    free(row);
}

// Reads what st_write_rs wrote; dest >= 0 puts the one state into that sequence.
static bool st_read_rs(struct st_reader * r, struct llama_memory_recurrent * rs, llama_seq_id dest, const char * func) {
    if (rs == NULL) {
        return true;
    }
    const uint32_t n = st_r32(r);
    if (r->err || n > rs->n_slots || (dest >= 0 && n > 1)) {
        LLAMA_LOG_ERROR("%s: malformed recurrent-state section\n", func);
        return false;
    }
    const size_t row_max = ((size_t) (rs->n_embd_r > rs->n_embd_s ? rs->n_embd_r : rs->n_embd_s)) * sizeof(float);
    void * row = GGML_MALLOC(row_max);
    bool ok = row != NULL;
    for (uint32_t i = 0; ok && i < n; i++) {
        const uint32_t src = st_r32(r);
        const llama_pos p0 = (llama_pos) st_r32(r), p1 = (llama_pos) st_r32(r);
        const uint32_t s = dest >= 0 ? (uint32_t) dest : src;
        if (r->err || s >= rs->n_slots || p0 < 0 || p1 < p0) {
            LLAMA_LOG_ERROR("%s: malformed recurrent state (sequence %u of %u, positions %d..%d)\n", func, s, rs->n_slots, p0,
                            p1);
            ok = false;
            break;
        }
        for (uint32_t il = 0; ok && il < rs->n_layer; il++) {
            struct ggml_tensor * ts[2] = { rs->r_l[il], rs->s_l[il] };
            for (int k = 0; ok && k < 2 && ts[0] != NULL; k++) {
                ok = st_read(r, row, ts[k]->nb[1]);
                if (ok) {
                    ggml_backend_tensor_set(ts[k], row, (size_t) s * ts[k]->nb[1], ts[k]->nb[1]);
                }
            }
        }
        if (ok) {
            rs->pos_min[s] = p0;
            rs->pos_max[s] = p1;
        } else {
            LLAMA_LOG_ERROR("%s: the state is truncated (recurrent state)\n", func);
        }
    }
    free(row);
    return ok;
}

static size_t st_write_full(struct llama_context * ctx, uint8_t * dst, size_t cap) {
    struct st_writer w = { .dst = dst, .cap = cap };
    const size_t n_vocab = ctx->model->hparams.n_vocab, n_embd = ctx->model->hparams.n_embd;
    st_u32(&w, STATE_TAG_FULL);
    st_u32(&w, STATE_VERSION);
    st_fingerprint(&w, ctx);
    const uint32_t flags = (ctx->have_logits ? 1u : 0u) | (ctx->have_embd ? 2u : 0u);
    const uint32_t n_out = flags ? (uint32_t) ctx->n_outputs : 0;
    const uint32_t n_tok = flags ? (uint32_t) ctx->n_batch_tokens : 0;
    st_u32(&w, flags);
    st_u32(&w, n_out);
    st_u32(&w, n_tok);
    st_write(&w, ctx->output_ids, n_tok * sizeof(int32_t));
    if (flags & 1u) {
        st_write(&w, ctx->logits, (size_t) n_out * n_vocab * sizeof(float));
    }
    if (flags & 2u) {
        st_write(&w, ctx->embd, (size_t) n_out * n_embd * sizeof(float));
    }
    st_write_kv(&w, &ctx->kv, &ctx->kv, -1);
    if (ctx->kv.swa != NULL) {
        st_write_kv(&w, &ctx->kv, ctx->kv.swa, -1);
    }
    st_write_rs(&w, ctx->kv.rs, -1);
    return w.overflow ? 0 : w.n;
}

size_t llama_state_get_size(struct llama_context * ctx) {
    if (!llama_context_checked(ctx, __func__)) {
        return 0;
    }
    return st_write_full(ctx, NULL, 0);
}

size_t llama_get_state_size(struct llama_context * ctx) { return llama_state_get_size(ctx); }

size_t llama_state_get_data(struct llama_context * ctx, uint8_t * dst, size_t size) {
    if (!llama_context_checked(ctx, __func__)) {
        return 0;
    }
    if (dst == NULL) {
        LLAMA_LOG_ERROR("llama_state_get_data: dst is NULL\n");
        return 0;
    }
    const size_t n = st_write_full(ctx, dst, size);
    if (n == 0) {
        LLAMA_LOG_ERROR("llama_state_get_data: %zu bytes are not enough (need %zu)\n", size, st_write_full(ctx, NULL, 0));
    }
    return n;
}

size_t llama_copy_state_data(struct llama_context * ctx, uint8_t * dst) { return llama_state_get_data(ctx, dst, SIZE_MAX); }

size_t llama_state_set_data(struct llama_context * ctx, const uint8_t * src, size_t size) {
    if (!llama_context_checked(ctx, __func__)) {
        return 0;
    }
    const char * func = "llama_state_set_data";
    struct st_reader r = { .src = src, .size = src ? size : 0 };
    struct llama_memory_i * kv = &ctx->kv;
    const size_t n_vocab = ctx->model->hparams.n_vocab, n_embd = ctx->model->hparams.n_embd;
    llama_memory_clear(kv, false);
    ctx->have_logits = ctx->have_embd = ctx->have_embd_seq = false;
    ctx->n_outputs = ctx->n_batch_tokens = 0;

    if (st_r32(&r) != STATE_TAG_FULL || st_r32(&r) != STATE_VERSION) {
        LLAMA_LOG_ERROR("%s: not a llama_py context state (or another version)\n", func);
        return 0;
    }
    if (!st_check_fingerprint(&r, ctx, func)) {
        return 0;
    }
    const uint32_t flags = st_r32(&r), n_out = st_r32(&r), n_tok = st_r32(&r);
    if (r.err || flags > 3 || n_out > n_tok || (flags == 0 && n_tok != 0)) {
        LLAMA_LOG_ERROR("%s: malformed output section\n", func);
        return 0;
    }
    // Nothing is allocated for sizes the blob claims but does not hold.
    const size_t need = (size_t) n_tok * sizeof(int32_t) + ((flags & 1u) ? (size_t) n_out * n_vocab * sizeof(float) : 0) +
        ((flags & 2u) ? (size_t) n_out * n_embd * sizeof(float) : 0);
    if (need > r.size - r.n) {
        LLAMA_LOG_ERROR("%s: the state is truncated (its output section needs %zu bytes, %zu remain)\n", func, need,
                        r.size - r.n);
        return 0;
    }
    bool ok = true;
    if (n_tok > ctx->output_ids_cap) {
        int32_t * p = GGML_REALLOC(ctx->output_ids, n_tok * sizeof(int32_t));
        ok = p != NULL;
        if (p) {
            ctx->output_ids = p;
            ctx->output_ids_cap = n_tok;
        }
    }
    if (ok && (flags & 1u) && n_out > ctx->logits_cap) {
        float * p = GGML_REALLOC(ctx->logits, (size_t) n_out * n_vocab * sizeof(float));
        ok = p != NULL;
        if (p) {
            ctx->logits = p;
            ctx->logits_cap = n_out;
        }
    }
    if (ok && (flags & 2u) && n_out > ctx->embd_cap) {
        float * p = GGML_REALLOC(ctx->embd, (size_t) n_out * n_embd * sizeof(float));
        ok = p != NULL;
        if (p) {
            ctx->embd = p;
            ctx->embd_cap = n_out;
        }
    }
    if (!ok) {
        LLAMA_LOG_ERROR("%s: out of memory\n", func);
        return 0;
    }
    st_read(&r, ctx->output_ids, n_tok * sizeof(int32_t));
    for (uint32_t i = 0; i < n_tok && !r.err; i++) {
        if (ctx->output_ids[i] < -1 || ctx->output_ids[i] >= (int32_t) n_out) {
            LLAMA_LOG_ERROR("%s: malformed output ids\n", func);
            return 0;
        }
    }
    if (flags & 1u) {
        st_read(&r, ctx->logits, (size_t) n_out * n_vocab * sizeof(float));
    }
    if (flags & 2u) {
        st_read(&r, ctx->embd, (size_t) n_out * n_embd * sizeof(float));
    }
    if (r.err) {
        LLAMA_LOG_ERROR("%s: the state is truncated\n", func);
        return 0;
    }
    if (!st_read_kv(&r, kv, kv, -1, func) || (kv->swa != NULL && !st_read_kv(&r, kv, kv->swa, -1, func)) ||
        !st_read_rs(&r, kv->rs, -1, func)) {
        llama_memory_clear(kv, false);
        return 0;
    }
    ctx->n_outputs = (int32_t) n_out;
    ctx->n_batch_tokens = (int32_t) n_tok;
    ctx->have_logits = (flags & 1u) != 0;
    ctx->have_embd = (flags & 2u) != 0;
    return r.n;
}

size_t llama_set_state_data(struct llama_context * ctx, const uint8_t * src) { return llama_state_set_data(ctx, src, SIZE_MAX); }

// ---------------------------------------------------------------------------------------------
// one sequence

static size_t st_write_seq(struct llama_context * ctx, uint8_t * dst, size_t cap, llama_seq_id seq) {
    struct st_writer w = { .dst = dst, .cap = cap };
    st_u32(&w, STATE_TAG_SEQ);
    st_u32(&w, STATE_VERSION);
    st_fingerprint(&w, ctx);
    st_write_kv(&w, &ctx->kv, &ctx->kv, seq);
    if (ctx->kv.swa != NULL) {
        st_write_kv(&w, &ctx->kv, ctx->kv.swa, seq);
    }
    st_write_rs(&w, ctx->kv.rs, seq);
    return w.overflow ? 0 : w.n;
}

static bool st_seq_ok(const struct llama_context * ctx, llama_seq_id s, const char * func) {
    if (s < 0 || (uint32_t) s >= ctx->n_seq_max) {
        LLAMA_LOG_ERROR("%s: seq_id %d is out of range [0, %u)\n", func, s, ctx->n_seq_max);
        return false;
    }
    return true;
}

size_t llama_state_seq_get_size(struct llama_context * ctx, llama_seq_id seq_id) {
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, seq_id, __func__)) {
        return 0;
    }
    return st_write_seq(ctx, NULL, 0, seq_id);
}

size_t llama_state_seq_get_data(struct llama_context * ctx, uint8_t * dst, size_t size, llama_seq_id seq_id) {
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, seq_id, __func__)) {
        return 0;
    }
    if (dst == NULL) {
        LLAMA_LOG_ERROR("llama_state_seq_get_data: dst is NULL\n");
        return 0;
    }
    const size_t n = st_write_seq(ctx, dst, size, seq_id);
    if (n == 0) {
        LLAMA_LOG_ERROR("llama_state_seq_get_data: %zu bytes are not enough\n", size);
    }
    return n;
}

size_t llama_state_seq_set_data(struct llama_context * ctx, const uint8_t * src, size_t size, llama_seq_id dest_seq_id) {
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, dest_seq_id, __func__)) {
        return 0;
    }
    const char * func = "llama_state_seq_set_data";
    struct st_reader r = { .src = src, .size = src ? size : 0 };
    // The destination sequence is replaced by the saved one.
    llama_memory_seq_rm(&ctx->kv, dest_seq_id, -1, -1);
    if (st_r32(&r) != STATE_TAG_SEQ || st_r32(&r) != STATE_VERSION) {
        LLAMA_LOG_ERROR("%s: not a llama_py sequence state (or another version)\n", func);
        return 0;
    }
    if (!st_check_fingerprint(&r, ctx, func) || !st_read_kv(&r, &ctx->kv, &ctx->kv, dest_seq_id, func) ||
        (ctx->kv.swa != NULL && !st_read_kv(&r, &ctx->kv, ctx->kv.swa, dest_seq_id, func)) ||
        !st_read_rs(&r, ctx->kv.rs, dest_seq_id, func)) {
        llama_memory_seq_rm(&ctx->kv, dest_seq_id, -1, -1);
        return 0;
    }
    return r.n;
}

// LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY: only what cannot be cut back (a hybrid model's recurrent
// state of the sequence), as llama-server's context checkpoints keep it: restored over a
// sequence whose KV rows go further, it lets seq_rm then drop the rows after it.
static size_t st_write_partial(struct llama_context * ctx, uint8_t * dst, size_t cap, llama_seq_id seq) {
    struct st_writer w = { .dst = dst, .cap = cap };
    st_u32(&w, STATE_TAG_PART);
    st_u32(&w, STATE_VERSION);
    st_fingerprint(&w, ctx);
    st_write_rs(&w, ctx->kv.rs, seq);
    return w.overflow ? 0 : w.n;
}

size_t llama_state_seq_get_size_ext(struct llama_context * ctx, llama_seq_id seq_id, llama_state_seq_flags flags) {
    if (!(flags & LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)) {
        return llama_state_seq_get_size(ctx, seq_id);
    }
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, seq_id, __func__)) {
        return 0;
    }
    return st_write_partial(ctx, NULL, 0, seq_id);
}

size_t llama_state_seq_get_data_ext(struct llama_context * ctx, uint8_t * dst, size_t size, llama_seq_id seq_id,
                                    llama_state_seq_flags flags) {
    if (!(flags & LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)) {
        return llama_state_seq_get_data(ctx, dst, size, seq_id);
    }
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, seq_id, __func__)) {
        return 0;
    }
    if (dst == NULL) {
        LLAMA_LOG_ERROR("llama_state_seq_get_data_ext: dst is NULL\n");
        return 0;
    }
    const size_t n = st_write_partial(ctx, dst, size, seq_id);
    if (n == 0) {
        LLAMA_LOG_ERROR("llama_state_seq_get_data_ext: %zu bytes are not enough\n", size);
    }
    return n;
}

size_t llama_state_seq_set_data_ext(struct llama_context * ctx, const uint8_t * src, size_t size, llama_seq_id dest_seq_id,
                                    llama_state_seq_flags flags) {
    if (!(flags & LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)) {
        return llama_state_seq_set_data(ctx, src, size, dest_seq_id);
    }
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, dest_seq_id, __func__)) {
        return 0;
    }
    const char * func = "llama_state_seq_set_data_ext";
    struct st_reader r = { .src = src, .size = src ? size : 0 };
    if (st_r32(&r) != STATE_TAG_PART || st_r32(&r) != STATE_VERSION) {
        LLAMA_LOG_ERROR("%s: not a llama_py partial sequence state (or another version)\n", func);
        return 0;
    }
    if (!st_check_fingerprint(&r, ctx, func)) {
        return 0;
    }
    struct llama_memory_recurrent * rs = ctx->kv.rs;
    if (rs != NULL) {
        rs->pos_min[dest_seq_id] = rs->pos_max[dest_seq_id] = -1; // replaced by the saved state, or none
    }
    if (!st_read_rs(&r, rs, dest_seq_id, func)) {
        if (rs != NULL) {
            rs->pos_min[dest_seq_id] = rs->pos_max[dest_seq_id] = -1;
        }
        return 0;
    }
    return r.n;
}

// ---------------------------------------------------------------------------------------------
// files

// Writes magic, version, tokens and then the state produced by get (into a buffer of size n).
static size_t st_save(const char * path, uint32_t magic, uint32_t version, const llama_token * tokens, size_t n_tokens,
                      const uint8_t * state, size_t n_state, const char * func) {
    if (path == NULL || (tokens == NULL && n_tokens > 0) || n_tokens > UINT32_MAX) {
        LLAMA_LOG_ERROR("%s: invalid arguments\n", func);
        return 0;
    }
    FILE * f = fopen(path, "wb");
    if (f == NULL) {
        LLAMA_LOG_ERROR("%s: cannot open '%s' for writing\n", func, path);
        return 0;
    }
    const uint32_t hdr[3] = { magic, version, (uint32_t) n_tokens };
    bool ok = fwrite(hdr, sizeof(hdr), 1, f) == 1;
    ok = ok && (n_tokens == 0 || fwrite(tokens, sizeof(llama_token), n_tokens, f) == n_tokens);
    ok = ok && fwrite(state, 1, n_state, f) == n_state;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        LLAMA_LOG_ERROR("%s: write to '%s' failed\n", func, path);
        return 0;
    }
    return sizeof(hdr) + n_tokens * sizeof(llama_token) + n_state;
}

// Reads a whole file into memory; NULL (logged) on failure.
static uint8_t * st_read_file(const char * path, size_t * size, const char * func) {
    FILE * f = path ? fopen(path, "rb") : NULL;
    if (f == NULL) {
        LLAMA_LOG_ERROR("%s: cannot open '%s'\n", func, path ? path : "(null)");
        return NULL;
    }
    uint8_t * buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            uint8_t * p = GGML_REALLOC(buf, cap);
            if (p == NULL) {
                free(buf);
                fclose(f);
                LLAMA_LOG_ERROR("%s: out of memory reading '%s'\n", func, path);
                return NULL;
            }
            buf = p;
        }
        const size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    const bool err = ferror(f) != 0;
    fclose(f);
    if (err) {
        free(buf);
        LLAMA_LOG_ERROR("%s: read error on '%s'\n", func, path);
        return NULL;
    }
    *size = n;
    return buf;
}

// Parses the header and tokens of a session file; returns the offset of the state or 0.
static size_t st_parse_header(const uint8_t * buf, size_t size, uint32_t magic, uint32_t version, llama_token * tokens_out,
                              size_t capacity, size_t * n_out, const char * path, const char * func) {
    uint32_t hdr[3];
    if (size < sizeof(hdr)) {
        LLAMA_LOG_ERROR("%s: '%s' is too short\n", func, path);
        return 0;
    }
    memcpy(hdr, buf, sizeof(hdr));
    if (hdr[0] != magic || hdr[1] != version) {
        LLAMA_LOG_ERROR("%s: '%s' has magic 0x%08x version %u; expected 0x%08x version %u\n", func, path, hdr[0], hdr[1], magic,
                        version);
        return 0;
    }
    if (hdr[2] > capacity) {
        LLAMA_LOG_ERROR("%s: '%s' holds %u tokens, more than the capacity %zu\n", func, path, hdr[2], capacity);
        return 0;
    }
    const size_t tok_bytes = (size_t) hdr[2] * sizeof(llama_token);
    if (tok_bytes > size - sizeof(hdr)) {
        LLAMA_LOG_ERROR("%s: '%s' is truncated\n", func, path);
        return 0;
    }
    if (hdr[2] > 0 && tokens_out == NULL) {
        LLAMA_LOG_ERROR("%s: tokens_out is NULL\n", func);
        return 0;
    }
    if (tok_bytes > 0) {
        memcpy(tokens_out, buf + sizeof(hdr), tok_bytes);
    }
    if (n_out) {
        *n_out = hdr[2];
    }
    return sizeof(hdr) + tok_bytes;
}

bool llama_state_save_file(struct llama_context * ctx, const char * path_session, const llama_token * tokens,
                           size_t n_token_count) {
    if (!llama_context_checked(ctx, __func__)) {
        return false;
    }
    const size_t n = st_write_full(ctx, NULL, 0);
    uint8_t * buf = GGML_MALLOC(n ? n : 1);
    if (buf == NULL) {
        LLAMA_LOG_ERROR("llama_state_save_file: out of memory\n");
        return false;
    }
    const size_t got = st_write_full(ctx, buf, n);
    const size_t w = got ? st_save(path_session, LLAMA_SESSION_MAGIC, LLAMA_SESSION_VERSION, tokens, n_token_count, buf, got,
                                   "llama_state_save_file")
                         : 0;
    free(buf);
    return w != 0;
}

bool llama_save_session_file(struct llama_context * ctx, const char * path_session, const llama_token * tokens,
                             size_t n_token_count) {
    return llama_state_save_file(ctx, path_session, tokens, n_token_count);
}

bool llama_state_load_file(struct llama_context * ctx, const char * path_session, llama_token * tokens_out,
                           size_t n_token_capacity, size_t * n_token_count_out) {
    if (!llama_context_checked(ctx, __func__)) {
        return false;
    }
    const char * func = "llama_state_load_file";
    size_t size = 0;
    uint8_t * buf = st_read_file(path_session, &size, func);
    if (buf == NULL) {
        return false;
    }
    const size_t off = st_parse_header(buf, size, LLAMA_SESSION_MAGIC, LLAMA_SESSION_VERSION, tokens_out, n_token_capacity,
                                       n_token_count_out, path_session, func);
    bool ok = off != 0 && llama_state_set_data(ctx, buf + off, size - off) == size - off;
    if (off != 0 && !ok) {
        LLAMA_LOG_ERROR("%s: the state in '%s' could not be restored\n", func, path_session);
    }
    free(buf);
    return ok;
}

bool llama_load_session_file(struct llama_context * ctx, const char * path_session, llama_token * tokens_out,
                             size_t n_token_capacity, size_t * n_token_count_out) {
    return llama_state_load_file(ctx, path_session, tokens_out, n_token_capacity, n_token_count_out);
}

size_t llama_state_seq_save_file(struct llama_context * ctx, const char * filepath, llama_seq_id seq_id,
                                 const llama_token * tokens, size_t n_token_count) {
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, seq_id, __func__)) {
        return 0;
    }
    const size_t n = st_write_seq(ctx, NULL, 0, seq_id);
    uint8_t * buf = GGML_MALLOC(n ? n : 1);
    if (buf == NULL) {
        LLAMA_LOG_ERROR("llama_state_seq_save_file: out of memory\n");
        return 0;
    }
    const size_t got = st_write_seq(ctx, buf, n, seq_id);
    const size_t w = got ? st_save(filepath, LLAMA_STATE_SEQ_MAGIC, LLAMA_STATE_SEQ_VERSION, tokens, n_token_count, buf, got,
                                   "llama_state_seq_save_file")
                         : 0;
    free(buf);
    return w;
}

size_t llama_state_seq_load_file(struct llama_context * ctx, const char * filepath, llama_seq_id dest_seq_id,
                                 llama_token * tokens_out, size_t n_token_capacity, size_t * n_token_count_out) {
    if (!llama_context_checked(ctx, __func__) || !st_seq_ok(ctx, dest_seq_id, __func__)) {
        return 0;
    }
    const char * func = "llama_state_seq_load_file";
    size_t size = 0;
    uint8_t * buf = st_read_file(filepath, &size, func);
    if (buf == NULL) {
        return 0;
    }
    size_t total = 0;
    const size_t off = st_parse_header(buf, size, LLAMA_STATE_SEQ_MAGIC, LLAMA_STATE_SEQ_VERSION, tokens_out, n_token_capacity,
                                       n_token_count_out, filepath, func);
    if (off != 0) {
        const size_t n = llama_state_seq_set_data(ctx, buf + off, size - off, dest_seq_id);
        total = n == size - off ? size : 0;
        if (total == 0) {
            LLAMA_LOG_ERROR("%s: the state in '%s' could not be restored\n", func, filepath);
        }
    }
    free(buf);
    return total;
}
