// models/gemma3.c — Gemma 3: embeddings scaled by sqrt(n_embd), RMS norms before and after both
// attention and the FFN, QK-norm, GeGLU (tanh GELU), NeoX rope; five of every six layers
// attend within a sliding window with their own rope base (hyperparameters: arch.c).
//
//   x = token_embd[tokens] * sqrt(n_embd)
//   per layer:  h = x + post_attention_norm(attn(attn_norm(x)))
//               x = h + post_ffw_norm(Wdown · (gelu(Wgate·m) * (Wup·m)))      m = ffn_norm(h)
//   logits = token_embd · output_norm(x)                                      (tied)
//
// The GGUF norm weights already hold Gemma's (1 + w) (the converter adds the one).
// Gemma 2 (row gemma2) is the same graph: it has no QK-norm tensors, its window is on every
// other layer, and the blocks soft-cap its attention scores and logits (hparams).
#include "../llama-adapter.h"
#include "../llama-graph.h"

bool llm_build_gemma3(struct llm_graph * g) {
    const struct llama_model * model = g->model;
    struct ggml_context * c = g->c;
    struct ggml_tensor *x, *cur, *h;
    if ((x = llm_graph_inp_embd(g)) == NULL) {
        return false;
    }
    for (uint32_t il = 0; il < g->hp->n_layer; il++) {
        const struct llama_layer * L = &model->layers[il];
        if ((cur = llm_graph_norm(g, x, L->attn_norm)) == NULL || !llm_graph_attn(g, il, cur, &cur)) {
            return false;
        }
        if (cur == NULL) {
            break; // last layer, no rows out
        }
        if ((cur = llm_graph_norm(g, cur, L->attn_post_norm)) == NULL || !llm_graph_out_rows(g, il, &cur, &x) ||
            (h = ggml_add(c, cur, x)) == NULL || (cur = llm_graph_norm(g, h, L->ffn_norm)) == NULL ||
            (cur = llm_graph_ffn(g, il, cur, LLM_FFN_GEGLU)) == NULL ||
            (cur = llm_graph_norm(g, cur, L->ffn_post_norm)) == NULL || (x = ggml_add(c, cur, h)) == NULL ||
            (x = llm_graph_cvec(g, il, x)) == NULL) {
            return false;
        }
    }
    return llm_graph_output(g, x);
}
