// graph-moe.c — the mixture-of-experts feed-forward block, from ordinary ops and mul_mat_id:
//
//   logits  = router · x                                  [n_expert, n_tokens]
//   probs   = softmax(logits)  (or sigmoid, expert_gating_func)
//   chosen  = top_k(probs, n_expert_used)                 I32 [n_used, n_tokens], largest first
//   w       = probs[chosen]                               (get_rows on [1, n_expert, n_tokens])
//   w      /= sum(w)   when expert_weights_norm           (softmax over the chosen: Mixtral, Qwen3-MoE)
//   w      *= expert_weights_scale when set
//   y_j     = down_e · (silu(gate_e · x) * (up_e · x))    e = chosen[j], each by mul_mat_id
//   out     = sum_j w_j y_j  (+ the shared expert, sigmoid-gated when it has a gate)
//
// gpt-oss's options: a router bias; gating SOFTMAX_WEIGHT (top-k of the logits, then softmax over
// the chosen); per-expert biases after each mul_mat_id (rows of [n, n_expert] by the chosen ids);
// and the clamped SwiGLU when expert_swiglu_limit > 0 (moe_swiglu_oai).
//
// Only the chosen experts' rows are read (mul_mat_id groups the tokens per expert).
#include "llama-graph.h"

#include <math.h>

#define G(expr)               \
    do {                      \
        if ((expr) == NULL) { \
            return NULL;      \
        }                     \
    } while (0)

// The shared expert's SwiGLU FFN, times sigmoid(gate_inp_shexp · x) when the layer has that gate.
static struct ggml_tensor * moe_shared_expert(struct llm_graph * g, const struct llama_layer * L, struct ggml_tensor * cur) {
    struct ggml_context * c = g->c;
    struct ggml_tensor *gate, *up, *y, *s;
    G(gate = ggml_mul_mat(c, L->ffn_gate_shexp, cur));
    G(up = ggml_mul_mat(c, L->ffn_up_shexp, cur));
    G(y = ggml_swiglu_split(c, gate, up));
    G(y = ggml_mul_mat(c, L->ffn_down_shexp, y));
    if (L->ffn_gate_inp_shexp != NULL) {
        G(s = ggml_mul_mat(c, L->ffn_gate_inp_shexp, cur)); // [1, n_tokens]
        G(s = ggml_sigmoid(c, s));
        G(y = ggml_mul(c, y, s));
    }
    return y;
}

// y [n, n_used, n_tokens] plus bias b [n, n_expert] row chosen[j, t] at (j, t); b NULL: y.
static struct ggml_tensor * moe_expert_bias(struct ggml_context * c, struct ggml_tensor * y, struct ggml_tensor * b,
                                            struct ggml_tensor * chosen) {
    struct ggml_tensor *ids, *rows;
    if (b == NULL) {
        return y;
    }
    G(ids = ggml_is_contiguous(chosen) ? chosen : ggml_cont(c, chosen));
    G(ids = ggml_reshape_1d(c, ids, ggml_nelements(chosen)));
    G(rows = ggml_get_rows(c, b, ids));                        // [n, n_used * n_tokens]
    G(rows = ggml_reshape_3d(c, rows, y->ne[0], y->ne[1], y->ne[2]));
    return ggml_add(c, y, rows);
}

// gpt-oss's SwiGLU: g = min(gate, limit), u = clamp(up, -limit, limit), (u + 1) * g * sigmoid(alpha g),
// formed as u*glu + glu.
static struct ggml_tensor * moe_swiglu_oai(struct ggml_context * c, const struct llama_hparams * hp, struct ggml_tensor * gate,
                                           struct ggml_tensor * up) {
    const float limit = hp->expert_swiglu_limit;
    struct ggml_tensor *s, *glu;
    G(gate = ggml_clamp(c, gate, -INFINITY, limit));
    G(up = ggml_clamp(c, up, -limit, limit));
    G(s = ggml_scale(c, gate, hp->expert_swiglu_alpha));
    G(s = ggml_sigmoid(c, s));
    G(glu = ggml_mul(c, gate, s));
    G(up = ggml_mul(c, up, glu));
    return ggml_add(c, up, glu);
}

struct ggml_tensor * llm_graph_moe_sum(struct llm_graph * g, struct ggml_tensor * y) {
    const int64_t n_embd = y->ne[0], n_used = y->ne[1], n_tokens = y->ne[2];
    struct ggml_tensor * out = NULL;
    // the chosen experts' outputs added in their top-k order
    for (int64_t j = 0; j < n_used; j++) {
        struct ggml_tensor * yj;
        G(yj = ggml_view_2d(g->c, y, n_embd, n_tokens, y->nb[2], (size_t) j * y->nb[1]));
        if (out == NULL) {
            G(out = n_used == 1 ? ggml_cont(g->c, yj) : yj);
        } else {
            G(out = ggml_add(g->c, out, yj));
        }
    }
    return out;
}

struct ggml_tensor * llm_graph_moe_ffn(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur) {
    struct ggml_context * c = g->c;
    const struct llama_hparams * hp = g->hp;
    const struct llama_layer * L = &g->model->layers[il];
    const int64_t n_embd = cur->ne[0], n_tokens = cur->ne[1];
    const int64_t n_expert = hp->n_expert, n_used = hp->n_expert_used;
    struct ggml_tensor *logits, *probs, *chosen, *w, *x3, *gate, *up, *y, *out = NULL;

    G(logits = ggml_mul_mat(c, L->ffn_gate_inp, cur));
    if (L->ffn_gate_inp_b != NULL) {
        G(logits = ggml_add(c, logits, L->ffn_gate_inp_b));
    }
    const bool weight_softmax = hp->expert_gating == LLM_EXPERT_GATING_SOFTMAX_WEIGHT;
    G(probs = weight_softmax                               ? logits
          : hp->expert_gating == LLM_EXPERT_GATING_SIGMOID ? ggml_sigmoid(c, logits)
                                                           : ggml_soft_max(c, logits));
    G(chosen = ggml_top_k(c, probs, (int) n_used));
    G(w = ggml_reshape_3d(c, probs, 1, n_expert, n_tokens));
    G(w = ggml_get_rows(c, w, chosen));                       // [1, n_used, n_tokens]
    if (weight_softmax) {
        G(w = ggml_reshape_2d(c, w, n_used, n_tokens));
        G(w = ggml_soft_max(c, w));
        G(w = ggml_reshape_3d(c, w, 1, n_used, n_tokens));
    }
    if (hp->expert_weights_norm) {
        struct ggml_tensor * sum;
        G(w = ggml_reshape_2d(c, w, n_used, n_tokens));
        G(sum = ggml_sum_rows(c, w));                          // [1, n_tokens]
        G(w = ggml_div(c, w, sum));
        G(w = ggml_reshape_3d(c, w, 1, n_used, n_tokens));
    }
    if (hp->expert_weights_scale != 0.0f && hp->expert_weights_scale != 1.0f) {
        G(w = ggml_scale(c, w, hp->expert_weights_scale));
    }

    G(x3 = ggml_reshape_3d(c, cur, n_embd, 1, n_tokens));
    G(gate = ggml_mul_mat_id(c, L->ffn_gate_exps, x3, chosen)); // [n_ff_exp, n_used, n_tokens]
    G(up = ggml_mul_mat_id(c, L->ffn_up_exps, x3, chosen));
    G(gate = moe_expert_bias(c, gate, L->ffn_gate_exps_b, chosen));
    G(up = moe_expert_bias(c, up, L->ffn_up_exps_b, chosen));
    G(y = hp->expert_swiglu_limit > 0.0f ? moe_swiglu_oai(c, hp, gate, up) : ggml_swiglu_split(c, gate, up));
    G(y = ggml_mul_mat_id(c, L->ffn_down_exps, y, chosen));   // [n_embd, n_used, n_tokens]
    G(y = moe_expert_bias(c, y, L->ffn_down_exps_b, chosen));
    G(y = ggml_mul(c, y, w));

    G(out = llm_graph_moe_sum(g, y));
    if (L->ffn_up_shexp != NULL) {
        struct ggml_tensor * s;
        G(s = moe_shared_expert(g, L, cur));
        G(out = ggml_add(c, out, s));
    }
    return out;
}
