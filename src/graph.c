// graph.c — the Llama transformer as a ggml graph, one per ubatch:
//
//   x = token_embd[tokens]
//   per layer:  h = x + Wo · attn(rope(Wq·n), rope(Wk·n), Wv·n)      n = rms_norm(x) * attn_norm
//               x = h + Wdown · (silu(Wgate·m) * (Wup·m))             m = rms_norm(h) * ffn_norm
//   logits = output · (rms_norm(x) * output_norm)     on the rows marked for output only
//
// K and V of the ubatch are written into their KV-cache cells (set_rows) before attention
// reads the first n_kv cells; a mask gives each token the cells of its sequence at positions
// <= its own. With flash attention the whole softmax(QK^T)V runs as one op; otherwise as
// mul_mat + soft_max_ext + mul_mat.
#include "llama-context.h"

#include <math.h>

// Builds ggml ops with NULL checks folded in: any NULL makes the whole build fail.
#define G(expr) do { if ((expr) == NULL) { goto fail; } } while (0)

static struct ggml_tensor * graph_norm(struct ggml_context * c, struct ggml_tensor * x, struct ggml_tensor * w, float eps) {
    struct ggml_tensor * n = ggml_rms_norm(c, x, eps);
    return n ? ggml_mul(c, n, w) : NULL;
}

static struct ggml_tensor * graph_rope(struct llama_context * ctx, struct ggml_context * c, struct ggml_tensor * x,
                                       struct ggml_tensor * pos) {
    const struct llama_model * m = ctx->model;
    return ggml_rope_ext(c, x, pos, m->rope_freqs, (int) m->hparams.n_rot, GGML_ROPE_TYPE_NORMAL, (int) ctx->n_ctx_orig,
                         ctx->rope_freq_base, ctx->rope_freq_scale, ctx->yarn_ext_factor, ctx->yarn_attn_factor,
                         ctx->yarn_beta_fast, ctx->yarn_beta_slow);
}

bool llama_graph_build(struct llama_context * ctx, const struct llama_ubatch * ub, struct llama_graph_result * res) {
    const struct llama_model * model = ctx->model;
    const struct llama_hparams * hp = &model->hparams;
    const struct llama_memory_i * kv = &ctx->kv;
    const int64_t n_tokens = ub->n_tokens;
    const int64_t n_kv = ub->n_kv;
    const int64_t n_embd = hp->n_embd;
    const int64_t hd_k = hp->n_embd_head_k, hd_v = hp->n_embd_head_v;
    const int64_t n_head = hp->n_head, n_head_kv = hp->n_head_kv;
    const float eps = hp->f_norm_rms_eps;
    const float kq_scale = 1.0f / sqrtf((float) hd_k);
    // Rows that leave the last layer: all of them for pooling, else only the output rows.
    const int64_t n_rows = ub->all_rows ? n_tokens : ub->n_outputs;

    memset(res, 0, sizeof(*res));
    ggml_reset(ctx->ctx_compute);
    struct ggml_context * c = ctx->ctx_compute;
    struct ggml_cgraph * gf = ggml_new_graph_custom(c, ctx->graph_size, false);
    G(gf);
    res->gf = gf;

    struct ggml_tensor * x;
    if (ub->token != NULL) {
        G(res->inp_tokens = ggml_new_tensor_1d(c, GGML_TYPE_I32, n_tokens));
        ggml_set_name(res->inp_tokens, "inp_tokens");
        ggml_set_input(res->inp_tokens);
        G(x = ggml_get_rows(c, model->tok_embd, res->inp_tokens));
    } else {
        G(res->inp_embd = ggml_new_tensor_2d(c, GGML_TYPE_F32, n_embd, n_tokens));
        ggml_set_name(res->inp_embd, "inp_embd");
        ggml_set_input(res->inp_embd);
        x = res->inp_embd;
    }
    G(res->inp_pos = ggml_new_tensor_1d(c, GGML_TYPE_I32, n_tokens));
    ggml_set_name(res->inp_pos, "inp_pos");
    ggml_set_input(res->inp_pos);
    G(res->inp_kv_idx = ggml_new_tensor_1d(c, GGML_TYPE_I32, n_tokens));
    ggml_set_name(res->inp_kv_idx, "inp_kv_idx");
    ggml_set_input(res->inp_kv_idx);
    G(res->inp_mask = ggml_new_tensor_2d(c, GGML_TYPE_F32, n_kv, n_tokens));
    ggml_set_name(res->inp_mask, "inp_mask");
    ggml_set_input(res->inp_mask);
    // Attention reads F32/F16 caches in place; quantized ones are first dequantized (get_rows
    // of cells [0, n_kv)), since the attention kernels take F32/F16 K and V only.
    const bool k_quant = ggml_is_quantized(kv->type_k), v_quant = ggml_is_quantized(kv->type_v);
    struct ggml_tensor * inp_kv_range = NULL;
    if (k_quant || v_quant) {
        G(inp_kv_range = res->inp_kv_range = ggml_new_tensor_1d(c, GGML_TYPE_I32, n_kv));
        ggml_set_name(inp_kv_range, "inp_kv_range");
        ggml_set_input(inp_kv_range);
    }
    if (n_rows > 0 && n_rows < n_tokens) {
        G(res->inp_out_ids = ggml_new_tensor_1d(c, GGML_TYPE_I32, n_rows));
        ggml_set_name(res->inp_out_ids, "inp_out_ids");
        ggml_set_input(res->inp_out_ids);
    }

    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const struct llama_layer * L = &model->layers[il];
        const bool last = il == hp->n_layer - 1;
        struct ggml_tensor * cur, * q, * k, * v;

        G(cur = graph_norm(c, x, L->attn_norm, eps));
        if (L->wqkv != NULL) {
            // one matmul for Q, K and V (model.c fused them): each is a view of its rows
            struct ggml_tensor * qkv;
            G(qkv = ggml_mul_mat(c, L->wqkv, cur));          // [n_q + n_k + n_v, n_tokens]
            const size_t es = ggml_type_size(qkv->type);
            G(q = ggml_view_3d(c, qkv, hd_k, n_head, n_tokens, hd_k*es, qkv->nb[1], 0));
            G(k = ggml_view_3d(c, qkv, hd_k, n_head_kv, n_tokens, hd_k*es, qkv->nb[1], (size_t) L->wq->ne[1]*es));
            G(v = ggml_view_2d(c, qkv, L->wv->ne[1], n_tokens, qkv->nb[1], (size_t) (L->wq->ne[1] + L->wk->ne[1])*es));
        } else {
            G(q = ggml_mul_mat(c, L->wq, cur));
            G(k = ggml_mul_mat(c, L->wk, cur));
            G(v = ggml_mul_mat(c, L->wv, cur));
            G(q = ggml_reshape_3d(c, q, hd_k, n_head, n_tokens));
            G(k = ggml_reshape_3d(c, k, hd_k, n_head_kv, n_tokens));
        }
        G(q = graph_rope(ctx, c, q, res->inp_pos));
        G(k = graph_rope(ctx, c, k, res->inp_pos));

        // Write this ubatch's K and V rows into their cells; the views read below are made from
        // the set_rows results so that attention depends on (and runs after) the writes.
        struct ggml_tensor * k_all, * v_all;
        G(k = ggml_reshape_2d(c, k, hd_k * n_head_kv, n_tokens));
        G(k_all = ggml_set_rows(c, kv->k_l[il], k, res->inp_kv_idx));
        G(v_all = ggml_set_rows(c, kv->v_l[il], v, res->inp_kv_idx));
        ggml_build_forward_expand(gf, k_all);
        ggml_build_forward_expand(gf, v_all);
        if (last && n_rows == 0) {
            break; // nothing leaves the last layer: only its K/V were needed
        }

        struct ggml_tensor * K, * V, * Q, * o;
        if (k_quant) {
            G(k_all = ggml_get_rows(c, k_all, inp_kv_range));     // F32 [n_embd_k_gqa, n_kv]
        }
        if (v_quant) {
            G(v_all = ggml_get_rows(c, v_all, inp_kv_range));
        }
        G(K = ggml_view_3d(c, k_all, hd_k, n_kv, n_head_kv, k_all->nb[1], ggml_row_size(k_all->type, hd_k), 0));
        G(V = ggml_view_3d(c, v_all, hd_v, n_kv, n_head_kv, v_all->nb[1], ggml_row_size(v_all->type, hd_v), 0));
        G(Q = ggml_permute(c, q, 0, 2, 1, 3));                    // [hd, n_tokens, n_head]
        if (ctx->flash_attn) {
            G(o = ggml_flash_attn_ext(c, Q, K, V, res->inp_mask, kq_scale, 0.0f, 0.0f)); // [hd_v, n_head, n_tokens]
            G(o = ggml_reshape_2d(c, o, hd_v * n_head, n_tokens));
        } else {
            struct ggml_tensor * kq, * vt, * kqv;
            G(kq = ggml_mul_mat(c, K, Q));                        // [n_kv, n_tokens, n_head]
            G(kq = ggml_soft_max_ext(c, kq, res->inp_mask, kq_scale, 0.0f));
            G(vt = ggml_transpose(c, V));
            G(vt = ggml_cont(c, vt));                             // [n_kv, hd_v, n_head_kv]
            G(kqv = ggml_mul_mat(c, vt, kq));                     // [hd_v, n_tokens, n_head]
            G(o = ggml_permute(c, kqv, 0, 2, 1, 3));
            G(o = ggml_cont(c, o));                               // [hd_v, n_head, n_tokens]
            G(o = ggml_reshape_2d(c, o, hd_v * n_head, n_tokens));
        }
        G(cur = ggml_mul_mat(c, L->wo, o));

        if (last && res->inp_out_ids != NULL) {
            // The rest of the last layer only matters for the rows that are returned.
            G(cur = ggml_get_rows(c, cur, res->inp_out_ids));
            G(x = ggml_get_rows(c, x, res->inp_out_ids));
        }
        struct ggml_tensor * h, * gate, * up;
        G(h = ggml_add(c, cur, x));
        G(cur = graph_norm(c, h, L->ffn_norm, eps));
        if (L->ffn_gate_up != NULL) {
            // gate and up fused: swiglu of the two halves of each row
            G(gate = ggml_mul_mat(c, L->ffn_gate_up, cur));  // [2 n_ff, n_tokens]
            G(cur = ggml_swiglu(c, gate));
        } else {
            G(gate = ggml_mul_mat(c, L->ffn_gate, cur));
            G(up = ggml_mul_mat(c, L->ffn_up, cur));
            G(cur = ggml_swiglu_split(c, gate, up));
        }
        G(cur = ggml_mul_mat(c, L->ffn_down, cur));
        G(x = ggml_add(c, cur, h));
    }

    if (n_rows > 0) {
        G(res->t_embd = graph_norm(c, x, model->output_norm, eps));
        ggml_set_name(res->t_embd, "result_norm");
        ggml_set_output(res->t_embd);
        ggml_build_forward_expand(gf, res->t_embd);
        if (!ub->all_rows || !ctx->embeddings) {
            G(res->t_logits = ggml_mul_mat(c, model->output, res->t_embd));
            ggml_set_name(res->t_logits, "result_output");
            ggml_set_output(res->t_logits);
            ggml_build_forward_expand(gf, res->t_logits);
        }
    }
    return true;

fail:
    LLAMA_LOG_ERROR("llama_decode: failed to build the graph (an op was refused; see above)\n");
    return false;
}

struct ggml_cgraph * llama_graph_build_k_shift(struct llama_context * ctx, uint32_t n,
                                               struct ggml_tensor ** inp_cells, struct ggml_tensor ** inp_delta) {
    const struct llama_model * model = ctx->model;
    const struct llama_hparams * hp = &model->hparams;
    const struct llama_memory_i * kv = &ctx->kv;

    ctx->graph_reusable = false; // the arena and the allocator now hold another graph
    ggml_reset(ctx->ctx_compute);
    struct ggml_context * c = ctx->ctx_compute;
    struct ggml_cgraph * gf;
    G(gf = ggml_new_graph_custom(c, ctx->graph_size, false));
    G(*inp_cells = ggml_new_tensor_1d(c, GGML_TYPE_I32, n));
    G(*inp_delta = ggml_new_tensor_1d(c, GGML_TYPE_I32, n));
    ggml_set_input(*inp_cells);
    ggml_set_input(*inp_delta);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        struct ggml_tensor * rows, * out;
        G(rows = ggml_get_rows(c, kv->k_l[il], *inp_cells));                  // F32 [n_embd_k_gqa, n]
        G(rows = ggml_reshape_3d(c, rows, hp->n_embd_head_k, hp->n_head_kv, n));
        G(rows = graph_rope(ctx, c, rows, *inp_delta));
        G(rows = ggml_reshape_2d(c, rows, (int64_t) hp->n_embd_head_k * hp->n_head_kv, n));
        G(out = ggml_set_rows(c, kv->k_l[il], rows, *inp_cells));
        ggml_build_forward_expand(gf, out);
    }
    return gf;

fail:
    LLAMA_LOG_ERROR("llama_memory_seq_add: failed to build the key re-rotation graph\n");
    return NULL;
}
