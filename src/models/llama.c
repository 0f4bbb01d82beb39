// models/llama.c — the pre-norm decoder with SwiGLU, as a ggml graph per ubatch:
//
//   x = token_embd[tokens]
//   per layer:  h = x + attn(rms_norm(x) * attn_norm)
//               x = h + Wdown · (silu(Wgate·m) * (Wup·m))             m = rms_norm(h) * ffn_norm
//   logits = output · (rms_norm(x) * output_norm)
//   (granitemoe: embeddings, attention scores, both residual branches and logits scaled by keys)
//
// Rows llama, qwen2, qwen3, phi3 and qwen35 (Gated DeltaNet in 3 of 4 layers) (arch.c) share it: their differences (Q/K/V biases, QK-norm,
// fused QKV and gate/up, NeoX rope, LongRoPE factors, a sliding window) are tensors and
// hyperparameters the shared blocks (graph-blocks.c) act on when present.
#include "../llama-adapter.h"
#include "../llama-graph.h"

// A block's attention or FFN output times residual_scale before it joins the residual stream
// (granitemoe's residual_multiplier); x itself without the key.
static struct ggml_tensor * llama_residual_scale(struct llm_graph * g, struct ggml_tensor * x) {
    const float s = g->hp->f_residual_scale;
    return s != 0.0f && s != 1.0f ? ggml_scale(g->c, x, s) : x;
}

bool llm_build_llama(struct llm_graph * g) {
    const struct llama_model * model = g->model;
    struct ggml_context * c = g->c;
    struct ggml_tensor *x, *cur, *h;
    if ((x = llm_graph_inp_embd(g)) == NULL) {
        return false;
    }
    for (uint32_t il = 0; il < g->hp->n_layer; il++) {
        const struct llama_layer * L = &model->layers[il];
        if ((cur = llm_graph_norm(g, x, L->attn_norm)) == NULL) {
            return false;
        }
        // hybrid models (qwen35): a recurrent layer mixes tokens through its state instead
        if (!(g->hp->recurrent_layers[il] ? llm_graph_delta_net(g, il, cur, &cur) : llm_graph_attn(g, il, cur, &cur))) {
            return false;
        }
        if (cur == NULL) {
            break; // last layer, no rows out
        }
        if (!llm_graph_out_rows(g, il, &cur, &x) || (cur = llama_residual_scale(g, cur)) == NULL ||
            (h = ggml_add(c, cur, x)) == NULL || (cur = llm_graph_norm(g, h, L->ffn_norm)) == NULL ||
            (cur = llm_graph_ffn(g, il, cur, LLM_FFN_SWIGLU)) == NULL || (cur = llama_residual_scale(g, cur)) == NULL ||
            (x = ggml_add(c, cur, h)) == NULL || (x = llm_graph_cvec(g, il, x)) == NULL) {
            return false;
        }
    }
    return llm_graph_output(g, x);
}
