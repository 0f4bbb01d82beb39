// models/gemma4.c — Gemma 4 (text, dense): Gemma 3's blocks (norms before and after attention
// and the FFN, QK-norm, GeGLU, embeddings scaled by sqrt(n_embd)) plus
//   - per-layer embeddings (PLE): a second token table holds one small vector per layer; with a
//     projection of the embeddings it feeds a gated residual branch at the end of every block;
//   - sliding and global layers of different head sizes and KV-head counts, global layers with
//     "proportional" rope (rope_freqs leaves all but the first quarter of the dims unrotated);
//   - the last layers reading an earlier layer's KV, V = K where a layer has no V projection,
//     V heads RMS-normed, no query scaling (graph-blocks.c, from the hyperparameters);
//   - a learned scale on each block's output;
//   - 26B-A4B: experts beside the dense MLP (gemma4_moe below);
//   - the KV-sharing tail runs for the output rows only (gemma4_keep_out_rows).
//
//   x = token_embd[tokens] * sqrt(n_embd)
//   ple = (rms_norm(reshape(Wple · x / sqrt(n_embd))) * ple_norm + ple_tok[tokens] * sqrt(n_pl)) / sqrt(2)
//   per layer:  h = x + post_attention_norm(attn(attn_norm(x)))
//               x = h + post_ffw_norm(ffn(ffn_norm(h)))         (+ experts: gemma4_moe)
//               x = x + post_norm(Wproj · (gelu(Wgate · x) * ple[layer]))
//               x = x * layer_output_scale
//   logits = token_embd · output_norm(x)  (soft-capped where set)
//
// Gemma 4's norms multiply by their weight as stored (no 1 + w). Layout and names: arch.c.
#include "../llama-adapter.h"
#include "../llama-graph.h"

#include <math.h>

#define G(expr)               \
    do {                      \
        if ((expr) == NULL) { \
            return NULL;      \
        }                     \
    } while (0)

// The per-layer inputs of the ubatch, [n_pl, n_tokens, n_layer], from the token ids and the
// scaled embeddings x (transformers' get_per_layer_inputs + project_per_layer_inputs).
static struct ggml_tensor * gemma4_ple_inputs(struct llm_graph * g, struct ggml_tensor * x) {
    struct ggml_context * c = g->c;
    const struct llama_model * m = g->model;
    const struct llama_hparams * hp = g->hp;
    const int64_t n_pl = hp->n_embd_per_layer, n_layer = hp->n_layer, n = g->n_tokens;
    struct ggml_tensor *tok, *proj;
    G(tok = ggml_get_rows(c, m->ple_tok_embd, g->res->inp_tokens));    // [n_pl * n_layer, n]
    G(tok = ggml_reshape_3d(c, tok, n_pl, n_layer, n));
    G(tok = ggml_scale(c, tok, sqrtf((float) n_pl)));
    G(proj = llm_graph_mm(g, m->ple_model_proj, x));
    G(proj = ggml_scale(c, proj, 1.0f / sqrtf((float) hp->n_embd)));
    G(proj = ggml_reshape_3d(c, proj, n_pl, n_layer, n));
    G(proj = llm_graph_norm(g, proj, m->ple_proj_norm));
    G(proj = ggml_add(c, proj, tok));
    G(proj = ggml_scale(c, proj, 1.0f / sqrtf(2.0f)));
    G(proj = ggml_permute(c, proj, 0, 2, 1, 3));                        // layer-major: one slice per layer
    return ggml_cont(c, proj);
}

// x + post_norm(Wproj · (gelu(Wgate · x) * pl)): the per-layer embedding branch of layer il.
static struct ggml_tensor * gemma4_ple_branch(struct llm_graph * g, const struct llama_layer * L, struct ggml_tensor * x,
                                              struct ggml_tensor * pl) {
    struct ggml_context * c = g->c;
    struct ggml_tensor * t;
    G(t = llm_graph_mm(g, L->ple_gate, x));
    G(t = ggml_gelu(c, t));
    G(t = ggml_mul(c, t, pl));
    G(t = llm_graph_mm(g, L->ple_proj, t));
    G(t = llm_graph_norm(g, t, L->ple_post_norm));
    return ggml_add(c, x, t);
}

// The experts of a 26B-A4B block beside its dense MLP's output d, on the attention output h
// (transformers' Gemma4TextRouter / Gemma4TextExperts):
//   p = softmax(Wr · (rms_norm(h) * scale / sqrt(n_embd)))       chosen = top_k(p)
//   w_j = p_j / sum(p_chosen) * per_expert_scale_j
//   y = sum_j w_j down_j · (gelu(gate_j · m) * (up_j · m))          m = pre_ffw_norm_2(h)
//   returns post_ffw_norm_1(d) + post_ffw_norm_2(y)
static struct ggml_tensor * gemma4_moe(struct llm_graph * g, const struct llama_layer * L, struct ggml_tensor * h,
                                       struct ggml_tensor * d) {
    struct ggml_context * c = g->c;
    const int64_t n_embd = h->ne[0], n_tokens = h->ne[1], n_expert = g->hp->n_expert, n_used = g->hp->n_expert_used;
    struct ggml_tensor *r, *p, *chosen, *w, *ws, *sum, *m, *gu, *gate, *up, *y;
    G(r = llm_graph_norm(g, h, NULL));
    G(r = ggml_scale(c, r, 1.0f / sqrtf((float) n_embd)));
    G(r = ggml_mul(c, r, L->ffn_gate_inp_s));
    G(r = llm_graph_mm(g, L->ffn_gate_inp, r));                        // [n_expert, n_tokens]
    G(p = ggml_soft_max(c, r));
    G(chosen = ggml_top_k(c, p, (int) n_used));                         // I32 [n_used, n_tokens]
    G(w = ggml_get_rows(c, ggml_reshape_3d(c, p, 1, n_expert, n_tokens), chosen));
    G(sum = ggml_sum_rows(c, ggml_reshape_2d(c, w, n_used, n_tokens))); // [1, n_tokens]
    // the per-expert scale goes onto the probabilities before they are picked out
    G(ws = ggml_mul(c, p, L->ffn_down_exps_s));
    G(ws = ggml_get_rows(c, ggml_reshape_3d(c, ws, 1, n_expert, n_tokens), chosen));
    G(ws = ggml_div(c, ggml_reshape_2d(c, ws, n_used, n_tokens), sum));
    G(m = llm_graph_norm(g, h, L->ffn_pre_norm_2));
    G(gu = ggml_mul_mat_id(c, L->ffn_gate_up_exps, ggml_reshape_3d(c, m, n_embd, 1, n_tokens), chosen));
    const int64_t n_ff = gu->ne[0] / 2;                                 // [2 n_ff, n_used, n_tokens]
    G(gate = ggml_view_3d(c, gu, n_ff, n_used, n_tokens, gu->nb[1], gu->nb[2], 0));
    G(up = ggml_view_3d(c, gu, n_ff, n_used, n_tokens, gu->nb[1], gu->nb[2], (size_t) n_ff * ggml_type_size(gu->type)));
    G(y = ggml_mul(c, ggml_gelu(c, gate), up));
    G(y = ggml_mul_mat_id(c, L->ffn_down_exps, y, chosen));             // [n_embd, n_used, n_tokens]
    G(y = ggml_mul(c, y, ggml_reshape_3d(c, ws, 1, n_used, n_tokens)));
    G(y = llm_graph_moe_sum(g, y));
    G(y = llm_graph_norm(g, y, L->ffn_post_norm_2));
    G(d = llm_graph_norm(g, d, L->ffn_post_norm_1));
    return ggml_add(c, d, y);
}

// From the first KV-sharing layer on, no layer writes KV, so only the rows that leave the graph
// matter (transformers slices there too): x keeps the output rows, and the attention gets their
// positions and mask rows. A prompt whose last token alone is returned runs the shared tail
// (20 of E2B's 35 layers) for that token only.
static bool gemma4_keep_out_rows(struct llm_graph * g, struct ggml_tensor ** x) {
    struct ggml_context * c = g->c;
    struct llama_graph_result * res = g->res;
    struct ggml_tensor * ids = res->inp_out_ids;
    if ((res->inp_pos_out = ggml_new_tensor_1d(c, GGML_TYPE_I32, g->n_rows)) == NULL) {
        return false;
    }
    ggml_set_name(res->inp_pos_out, "inp_pos_out");
    ggml_set_input(res->inp_pos_out);
    g->pos = res->inp_pos_out;
    if ((*x = ggml_get_rows(c, *x, ids)) == NULL || (g->mask = ggml_get_rows(c, res->inp_mask, ids)) == NULL ||
        (res->inp_mask_swa != NULL && (g->mask_swa = ggml_get_rows(c, res->inp_mask_swa, ids)) == NULL)) {
        return false;
    }
    g->n_tokens = g->n_rows;
    return true;
}

// The PLE tensors a file with embedding_length_per_layer_input > 0 must hold beyond those the
// loader already requires (the blocks' post-norms have no dimension that says so).
static bool gemma4_ple_ok(const struct llm_graph * g) {
    if (g->ub->token == NULL) {
        LLAMA_LOG_ERROR("llama_decode: gemma4's per-layer embeddings need token ids; embeddings input is not supported\n");
        return false;
    }
    for (uint32_t il = 0; il < g->hp->n_layer; il++) {
        if (g->model->layers[il].ple_post_norm == NULL) {
            LLAMA_LOG_ERROR("llama_decode: gemma4 tensor 'blk.%u.post_norm.weight' is missing\n", il);
            return false;
        }
    }
    return true;
}

bool llm_build_gemma4(struct llm_graph * g) {
    const struct llama_model * model = g->model;
    const struct llama_hparams * hp = g->hp;
    struct ggml_context * c = g->c;
    struct ggml_tensor *x, *cur, *h, *ple = NULL;
    if ((x = llm_graph_inp_embd(g)) == NULL) {
        return false;
    }
    if (hp->n_embd_per_layer > 0 && (!gemma4_ple_ok(g) || (ple = gemma4_ple_inputs(g, x)) == NULL)) {
        return false;
    }
    bool kept = false; // only the output rows go on (see gemma4_keep_out_rows)
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const struct llama_layer * L = &model->layers[il];
        if (hp->n_kv_shared > 0 && il == hp->n_layer - hp->n_kv_shared) {
            if (g->n_rows == 0) {
                break; // the remaining layers write no KV and no row leaves the graph
            }
            if (g->res->inp_out_ids != NULL && !gemma4_keep_out_rows(g, &x)) {
                return false;
            }
            kept = g->res->inp_out_ids != NULL;
        }
        if ((cur = llm_graph_norm(g, x, L->attn_norm)) == NULL || !llm_graph_attn(g, il, cur, &cur)) {
            return false;
        }
        if (cur == NULL) {
            break; // last layer, no rows out
        }
        if ((cur = llm_graph_norm(g, cur, L->attn_post_norm)) == NULL || (!kept && !llm_graph_out_rows(g, il, &cur, &x)) ||
            (h = ggml_add(c, cur, x)) == NULL || (cur = llm_graph_norm(g, h, L->ffn_norm)) == NULL ||
            (cur = llm_graph_ffn_dense(g, il, cur, LLM_FFN_GEGLU)) == NULL ||
            (L->ffn_gate_inp != NULL && (cur = gemma4_moe(g, L, h, cur)) == NULL) ||
            (cur = llm_graph_norm(g, cur, L->ffn_post_norm)) == NULL || (x = ggml_add(c, cur, h)) == NULL) {
            return false;
        }
        if (ple != NULL) {
            struct ggml_tensor * pl = ggml_view_2d(c, ple, ple->ne[0], ple->ne[1], ple->nb[1], (size_t) il * ple->nb[2]);
            if (pl != NULL && (kept || il == hp->n_layer - 1) && g->res->inp_out_ids != NULL) {
                pl = ggml_get_rows(c, pl, g->res->inp_out_ids); // the rows x kept
            }
            if (pl == NULL || (x = gemma4_ple_branch(g, L, x, pl)) == NULL) {
                return false;
            }
        }
        if (L->out_scale != NULL && (x = ggml_mul(c, x, L->out_scale)) == NULL) {
            return false;
        }
    }
    return llm_graph_output(g, x);
}
