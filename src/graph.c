// graph.c — the forward graph of one ubatch: its inputs (tokens or embeddings, positions,
// KV cells to write, masks, output rows), then the model's architecture builder (arch.c row,
// src/models/<arch>.c) composing the shared blocks of graph-blocks.c; and the graph that
// re-rotates cached keys when positions move (seq_add / seq_div).
//
// K and V of the ubatch are written into their KV-cache cells (set_rows) before attention
// reads the first n_kv cells; a mask gives each token the cells of its sequence at positions
// <= its own (and, for sliding-window layers, a second one: within the window). An encode
// (ub->enc_len > 0) keeps K and V in the graph instead, and its masks are per slot group
// (encode.c).
#include "llama-graph.h"

#include <math.h>
#include <string.h>

// Builds ggml ops with NULL checks folded in: any NULL makes the whole build fail.
#define G(expr)               \
    do {                      \
        if ((expr) == NULL) { \
            goto fail;        \
        }                     \
    } while (0)

static struct ggml_tensor * graph_input(struct ggml_context * c, enum ggml_type t, int64_t ne0, int64_t ne1, const char * name) {
    struct ggml_tensor * x = ne1 > 0 ? ggml_new_tensor_2d(c, t, ne0, ne1) : ggml_new_tensor_1d(c, t, ne0);
    if (x != NULL) {
        ggml_set_name(x, name);
        ggml_set_input(x);
    }
    return x;
}

// The rope frequency divisors of this context: rope_freqs, or LongRoPE's long / short factors
// by whether a sequence may run past the original context.
static struct ggml_tensor * graph_rope_factors(const struct llama_context * ctx) {
    const struct llama_model * m = ctx->model;
    if (m->rope_long != NULL || m->rope_short != NULL) {
        const uint32_t n_ctx_seq = ctx->n_ctx / (ctx->n_seq_max > 0 ? ctx->n_seq_max : 1);
        struct ggml_tensor * f = n_ctx_seq > m->hparams.n_ctx_orig_yarn ? m->rope_long : m->rope_short;
        return f != NULL ? f : (m->rope_long != NULL ? m->rope_long : m->rope_short);
    }
    return m->rope_freqs;
}

static bool graph_has_swa(const struct llama_hparams * hp) {
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->swa_layers[il]) {
            return true;
        }
    }
    return false;
}

bool llama_graph_build(struct llama_context * ctx, const struct llama_ubatch * ub, struct llama_graph_result * res) {
    const struct llama_model * model = ctx->model;
    const struct llama_hparams * hp = &model->hparams;
    const struct llama_memory_i * kv = &ctx->kv;
    const int64_t n_tokens = ub->n_tokens;
    const int64_t n_kv = ub->n_kv;
    const int64_t n_kv_swa = kv->swa != NULL ? ub->n_kv_swa : n_kv; // the sliding layers' cells

    memset(res, 0, sizeof(*res));
    ggml_reset(ctx->ctx_compute);
    struct ggml_context * c = ctx->ctx_compute;
    struct llm_graph g = {
        .ctx = ctx,
        .model = model,
        .hp = hp,
        .ub = ub,
        .res = res,
        .c = c,
        .n_tokens = n_tokens,
        .n_kv = n_kv,
        .n_kv_swa = n_kv_swa,
        // Rows that leave the last layer: all of them for pooling, else only the output rows.
        .n_rows = ub->all_rows ? n_tokens : ub->n_outputs,
        .rope_factors = graph_rope_factors(ctx),
    };
    G(g.gf = ggml_new_graph_custom(c, ctx->graph_size, false));
    res->gf = g.gf;

    G(res->inp_pos = graph_input(c, GGML_TYPE_I32, n_tokens, 0, "inp_pos"));
    if (ub->enc_len > 0) {
        // an encode: attention over enc_grp groups of enc_len slots, its K/V from the graph
        const int64_t len = ub->enc_len, grp = ub->enc_grp;
        if (grp > 1) { // else slot = token
            G(res->inp_enc_slots = graph_input(c, GGML_TYPE_I32, len * grp, 0, "inp_enc_slots"));
            G(res->inp_enc_rows = graph_input(c, GGML_TYPE_I32, n_tokens, 0, "inp_enc_rows"));
        }
        G(res->inp_mask = ggml_new_tensor_4d(c, GGML_TYPE_F32, len, len, 1, grp));
        ggml_set_name(res->inp_mask, "inp_mask");
        ggml_set_input(res->inp_mask);
        if (hp->n_swa > 0 && graph_has_swa(hp)) {
            G(res->inp_mask_swa = ggml_new_tensor_4d(c, GGML_TYPE_F32, len, len, 1, grp));
            ggml_set_name(res->inp_mask_swa, "inp_mask_swa");
            ggml_set_input(res->inp_mask_swa);
        }
    } else {
        G(res->inp_kv_idx = graph_input(c, GGML_TYPE_I32, n_tokens, 0, "inp_kv_idx"));
        G(res->inp_mask = graph_input(c, GGML_TYPE_F32, n_kv, n_tokens, "inp_mask"));
        if (hp->n_swa > 0 && graph_has_swa(hp)) {
            G(res->inp_mask_swa = graph_input(c, GGML_TYPE_F32, n_kv_swa, n_tokens, "inp_mask_swa"));
        }
        if (kv->swa != NULL) {
            G(res->inp_kv_idx_swa = graph_input(c, GGML_TYPE_I32, n_tokens, 0, "inp_kv_idx_swa"));
        }
        if (ub->grp_n > 0) { // attention per sequence without flash attention (attn-seq.c)
            const int64_t C = ub->grp_cells, T = ub->grp_len, NG = ub->grp_n;
            G(res->inp_grp_toks = graph_input(c, GGML_TYPE_I32, T * NG, 0, "inp_grp_toks"));
            G(res->inp_grp_rows = graph_input(c, GGML_TYPE_I32, n_tokens, 0, "inp_grp_rows"));
            G(res->inp_grp_cells = graph_input(c, GGML_TYPE_I32, C * NG, 0, "inp_grp_cells"));
            G(res->inp_grp_mask = ggml_new_tensor_4d(c, GGML_TYPE_F32, C, T, 1, NG));
            ggml_set_name(res->inp_grp_mask, "inp_grp_mask");
            ggml_set_input(res->inp_grp_mask);
            if (hp->n_swa > 0 && graph_has_swa(hp)) {
                G(res->inp_grp_mask_swa = ggml_new_tensor_4d(c, GGML_TYPE_F32, C, T, 1, NG));
                ggml_set_name(res->inp_grp_mask_swa, "inp_grp_mask_swa");
                ggml_set_input(res->inp_grp_mask_swa);
            }
        }
        // Attention reads F32/F16 caches in place; quantized ones are first dequantized (get_rows
        // of cells [0, n_kv)), since the attention kernels take F32/F16 K and V only.
        if (ggml_is_quantized(kv->type_k) || ggml_is_quantized(kv->type_v)) {
            G(res->inp_kv_range = graph_input(c, GGML_TYPE_I32, n_kv, 0, "inp_kv_range"));
            if (kv->swa != NULL) {
                G(res->inp_kv_range_swa = graph_input(c, GGML_TYPE_I32, n_kv_swa, 0, "inp_kv_range_swa"));
            }
        }
    }
    if (ub->n_seqs > 0) {
        G(res->inp_s_ids = graph_input(c, GGML_TYPE_I32, ub->n_seqs, 0, "inp_s_ids"));
    }
    if (g.n_rows > 0 && g.n_rows < n_tokens) {
        G(res->inp_out_ids = graph_input(c, GGML_TYPE_I32, g.n_rows, 0, "inp_out_ids"));
    }
    if (!model->arch_info->build(&g)) {
        goto fail;
    }
    return true;

fail:
    LLAMA_LOG_ERROR("llama_decode: failed to build the graph (an op was refused; see above)\n");
    return false;
}

struct ggml_cgraph * llama_graph_build_k_shift(struct llama_context * ctx, uint32_t n, bool swa, struct ggml_tensor ** inp_cells,
                                               struct ggml_tensor ** inp_delta) {
    const struct llama_model * model = ctx->model;
    const struct llama_hparams * hp = &model->hparams;
    const struct llama_memory_i * kv = &ctx->kv;

    ctx->graph_reusable = false; // the arena and the allocator now hold another graph
    ggml_reset(ctx->ctx_compute);
    struct ggml_context * c = ctx->ctx_compute;
    struct llm_graph g = { .ctx = ctx, .model = model, .hp = hp, .c = c, .rope_factors = graph_rope_factors(ctx) };
    struct ggml_cgraph * gf;
    G(gf = ggml_new_graph_custom(c, ctx->graph_size, false));
    G(*inp_cells = ggml_new_tensor_1d(c, GGML_TYPE_I32, n));
    G(*inp_delta = ggml_new_tensor_1d(c, GGML_TYPE_I32, n));
    ggml_set_input(*inp_cells);
    ggml_set_input(*inp_delta);
    for (uint32_t s = 0; s < kv->n_layer; s++) {
        const uint32_t il = kv->layer_of_slot[s]; // layers sharing this slot read the rotated keys
        if ((kv->slot_swa[s] != 0) != swa) {
            continue; // its rows are the other cells'
        }
        struct ggml_tensor *rows, *out;
        G(rows = ggml_get_rows(c, kv->k_l[s], *inp_cells));                   // F32 [n_embd_k_gqa, n]
        G(rows = ggml_reshape_3d(c, rows, hp->n_embd_head_k_l[il], hp->n_head_kv_l[il], n));
        G(rows = llm_graph_rope(&g, il, rows, *inp_delta, true));
        G(rows = ggml_reshape_2d(c, rows, (int64_t) llama_hparams_n_embd_k_gqa_l(hp, il), n));
        G(out = ggml_set_rows(c, kv->k_l[s], rows, *inp_cells));
        ggml_build_forward_expand(gf, out);
    }
    return gf;

fail:
    LLAMA_LOG_ERROR("llama_memory_seq_add: failed to build the key re-rotation graph\n");
    return NULL;
}
