// models/bert.c — post-norm bidirectional encoders, as a ggml graph per ubatch:
//
//   x = LN(token_embd[tokens] + token_types[0] + position_embd[pos])    (bert: learned positions)
//   per layer:  h = LN(x + Wo·attn(x) + bo)                               attn_output_norm
//               x = LN(h + ffn(h))                                        layer_output_norm
//   ffn: bert  Wdown·gelu(Wup·h + bup) + bdown   (exact, erf GELU)
//        nomic Wdown·(silu(Wgate·h) * Wup·h)     and rotary (NeoX) Q/K from one fused Wqkv
//   result: x per token (no final norm, no logits); pooling follows the graph (pooling.c)
//
// LN is LayerNorm with weight and bias (attention.layer_norm_epsilon). Every token sees every
// token of its sequence (llama_encode runs the batch with a non-causal mask).
#include "../llama-graph.h"

#define GB(expr)              \
    do {                      \
        if ((expr) == NULL) { \
            return false;     \
        }                     \
    } while (0)

// LayerNorm(x) * w + b.
static struct ggml_tensor * bert_norm(struct llm_graph * g, struct ggml_tensor * x, struct ggml_tensor * w,
                                      struct ggml_tensor * b) {
    struct ggml_tensor * n = ggml_norm(g->c, x, g->hp->f_norm_eps);
    n = n && w ? ggml_mul(g->c, n, w) : n;
    return n && b ? ggml_add(g->c, n, b) : n;
}

static struct ggml_tensor * bert_add(struct ggml_context * c, struct ggml_tensor * x, struct ggml_tensor * b) {
    return x && b ? ggml_add(c, x, b) : x;
}

bool llm_build_bert(struct llm_graph * g) {
    const struct llama_model * model = g->model;
    struct ggml_context * c = g->c;
    struct ggml_tensor *x, *cur, *h;
    GB(x = llm_graph_inp_embd(g));
    if (model->type_embd != NULL) {
        // every token is of type 0 ("sentence A"), as llama.cpp and its converters have it
        GB(x = ggml_add(c, x, ggml_view_1d(c, model->type_embd, model->type_embd->ne[0], 0)));
    }
    if (model->pos_embd != NULL) {
        GB(x = ggml_add(c, x, ggml_get_rows(c, model->pos_embd, g->res->inp_pos)));
    }
    GB(x = bert_norm(g, x, model->tok_norm, model->tok_norm_b));
    for (uint32_t il = 0; il < g->hp->n_layer; il++) {
        const struct llama_layer * L = &model->layers[il];
        if (!llm_graph_attn(g, il, x, &cur)) {
            return false;
        }
        if (cur == NULL) {
            break; // last layer, no rows out
        }
        // the attention output bias (bo) is added by llm_graph_attn
        if (!llm_graph_out_rows(g, il, &cur, &x)) {
            return false;
        }
        GB(h = bert_norm(g, ggml_add(c, cur, x), L->attn_out_norm, L->attn_out_norm_b));
        if (L->ffn_gate != NULL || L->ffn_gate_up != NULL) {
            GB(cur = llm_graph_ffn(g, il, h, LLM_FFN_SWIGLU));
        } else {
            GB(cur = bert_add(c, ggml_mul_mat(c, L->ffn_up, h), L->ffn_up_b));
            GB(cur = ggml_gelu_erf(c, cur));
            GB(cur = bert_add(c, ggml_mul_mat(c, L->ffn_down, cur), L->ffn_down_b));
        }
        GB(x = bert_norm(g, ggml_add(c, cur, h), L->layer_out_norm, L->layer_out_norm_b));
    }
    if (g->n_rows == 0) {
        return true;
    }
    g->res->t_embd = x;
    ggml_set_name(x, "result_embd");
    ggml_set_output(x);
    ggml_build_forward_expand(g->gf, x);
    return true;
}
