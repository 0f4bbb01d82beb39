// models/gemma4.c — Gemma 4 (text, dense): Gemma 3's blocks (norms before and after attention
// and the FFN, QK-norm, GeGLU, embeddings scaled by sqrt(n_embd)) plus
//   - per-layer embeddings (PLE): a second token table holds one small vector per layer; with a
//     projection of the embeddings it feeds a gated residual branch at the end of every block;
//   - sliding and global layers of different head sizes and KV-head counts, global layers with
//     "proportional" rope (rope_freqs leaves all but the first quarter of the dims unrotated);
//   - the last layers reading an earlier layer's KV, V = K where a layer has no V projection,
//     V heads RMS-normed, no query scaling (graph-blocks.c, from the hyperparameters);
//   - a learned scale on each block's output.
//
//   x = token_embd[tokens] * sqrt(n_embd)
//   ple = (rms_norm(reshape(Wple · x / sqrt(n_embd))) * ple_norm + ple_tok[tokens] * sqrt(n_pl)) / sqrt(2)
//   per layer:  h = x + post_attention_norm(attn(attn_norm(x)))
//               x = h + post_ffw_norm(ffn(ffn_norm(h)))
//               x = x + post_norm(Wproj · (gelu(Wgate · x) * ple[layer]))
//               x = x * layer_output_scale
//   logits = token_embd · output_norm(x)  (soft-capped where set)
//
// Gemma 4's norms multiply by their weight as stored (no 1 + w). Layout and names: arch.c.
#include "../llama-adapter.h"
#include "../llama-graph.h"

#include <math.h>

#define G(expr) do { if ((expr) == NULL) { return NULL; } } while (0)

// The per-layer inputs of the ubatch, [n_pl, n_tokens, n_layer], from the token ids and the
// scaled embeddings x (transformers' get_per_layer_inputs + project_per_layer_inputs).
static struct ggml_tensor * gemma4_ple_inputs(struct llm_graph * g, struct ggml_tensor * x) {
    struct ggml_context * c = g->c;
    const struct llama_model * m = g->model;
    const struct llama_hparams * hp = g->hp;
    const int64_t n_pl = hp->n_embd_per_layer, n_layer = hp->n_layer, n = g->n_tokens;
    struct ggml_tensor * tok, * proj;
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
    struct ggml_tensor * x, * cur, * h, * ple = NULL;
    if ((x = llm_graph_inp_embd(g)) == NULL) {
        return false;
    }
    if (hp->n_embd_per_layer > 0 && (!gemma4_ple_ok(g) || (ple = gemma4_ple_inputs(g, x)) == NULL)) {
        return false;
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const struct llama_layer * L = &model->layers[il];
        if ((cur = llm_graph_norm(g, x, L->attn_norm)) == NULL || !llm_graph_attn(g, il, cur, &cur)) {
            return false;
        }
        if (cur == NULL) {
            break; // last layer, no rows out
        }
        if ((cur = llm_graph_norm(g, cur, L->attn_post_norm)) == NULL ||
            !llm_graph_out_rows(g, il, &cur, &x) ||
            (h = ggml_add(c, cur, x)) == NULL ||
            (cur = llm_graph_norm(g, h, L->ffn_norm)) == NULL ||
            (cur = llm_graph_ffn(g, il, cur, LLM_FFN_GEGLU)) == NULL ||
            (cur = llm_graph_norm(g, cur, L->ffn_post_norm)) == NULL ||
            (x = ggml_add(c, cur, h)) == NULL) {
            return false;
        }
        if (ple != NULL) {
            struct ggml_tensor * pl = ggml_view_2d(c, ple, ple->ne[0], ple->ne[1], ple->nb[1], (size_t) il * ple->nb[2]);
            if (pl != NULL && il == hp->n_layer - 1 && g->res->inp_out_ids != NULL) {
                pl = ggml_get_rows(c, pl, g->res->inp_out_ids); // the rows x kept (llm_graph_out_rows)
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
