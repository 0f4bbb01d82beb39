// llama-graph.h — the shared building blocks of the per-architecture graph builders
// (graph-blocks.c) and the state one build passes between them. Not installed.
//
// A builder (src/models/<arch>.c) composes them for one ubatch:
//
//   struct ggml_tensor * x = llm_graph_inp_embd(g), * cur;          // scaled when the arch says so
//   for (il...) { cur = llm_graph_norm(g, x, L->attn_norm);
//                 if (!llm_graph_attn(g, il, cur, &cur)) return false;  // QKV (+bias, QK-norm),
//                 if (cur == NULL) break;                              // rope, KV write, softmax, Wo
//                 if (!llm_graph_out_rows(g, il, &cur, &x)) return false;
//                 ... residual adds, llm_graph_ffn(g, il, cur, LLM_FFN_SWIGLU) ... }
//   return llm_graph_output(g, x);                                   // final norm + logits
//
// Each block returns NULL / false on a refused op (logged by ggml); the builder just stops.
#ifndef LLAMA_GRAPH_H
#define LLAMA_GRAPH_H

#include "llama-context.h"

#ifdef __cplusplus
extern "C" {
#endif

struct llm_graph {
    struct llama_context * ctx;
    const struct llama_model * model;
    const struct llama_hparams * hp;
    const struct llama_ubatch * ub;
    struct llama_graph_result * res;
    struct ggml_context * c;         // ctx->ctx_compute
    struct ggml_cgraph * gf;
    int64_t n_tokens, n_kv;
    int64_t n_kv_swa;                // window cells the sliding layers attend over (= n_kv without kv.swa)
    int64_t n_rows;                  // rows that leave the last layer (0: none)
    struct ggml_tensor * rope_factors; // frequency divisors for this context (or NULL)
    struct ggml_tensor * kv_written[LLAMA_MAX_LAYERS][2]; // per KV slot: its K and V after this graph's writes
    // once a builder kept only the output rows before the last layer (gemma4's KV-shared tail):
    // their positions and mask rows for llm_graph_attn (NULL: res->inp_pos, inp_mask, inp_mask_swa)
    struct ggml_tensor *pos, *mask, *mask_swa;
};

enum llm_ffn_kind {
    LLM_FFN_SWIGLU,
    LLM_FFN_GEGLU
};

// Token embeddings (or the caller's embeddings) of the ubatch, times hp->f_embd_scale if set.
struct ggml_tensor * llm_graph_inp_embd(struct llm_graph * g);
// rms_norm(x) * w (w NULL: the plain RMS norm).
struct ggml_tensor * llm_graph_norm(struct llm_graph * g, struct ggml_tensor * x, struct ggml_tensor * w);
// Attention of layer il on normed input cur -> *out [n_embd, n_tokens] (after Wo); *out NULL
// when nothing leaves the last layer (its K/V were written). False if an op was refused.
bool llm_graph_attn(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, struct ggml_tensor ** out);
// Gated DeltaNet of recurrent layer il on normed input cur -> *out [n_embd, n_tokens] (after the
// out projection); reads and writes the sequences' recurrent state (memory-recurrent.c). *out
// NULL when nothing leaves the last layer. False if an op was refused or a weight is missing.
bool llm_graph_delta_net(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, struct ggml_tensor ** out);
// On the last layer, keeps only the output rows of *cur and *x (no-op elsewhere).
bool llm_graph_out_rows(struct llm_graph * g, uint32_t il, struct ggml_tensor ** cur, struct ggml_tensor ** x);
// Feed-forward of layer il: down( act(gate·cur) * (up·cur) ), fused gate/up when present.
struct ggml_tensor * llm_graph_ffn(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, enum llm_ffn_kind kind);
// The layer's dense feed-forward alone, also in a layer that has experts beside it (gemma4).
struct ggml_tensor * llm_graph_ffn_dense(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, enum llm_ffn_kind kind);
// Mixture-of-experts FFN of layer il (graph-moe.c): router, top-k, weighted experts, optional
// shared expert; llm_graph_ffn takes it for layers that have a router.
struct ggml_tensor * llm_graph_moe_ffn(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur);
// sum_j y[:, j, :] of the weighted expert outputs y [n_embd, n_used, n_tokens], in top-k order.
struct ggml_tensor * llm_graph_moe_sum(struct llm_graph * g, struct ggml_tensor * y);
// Final norm and output projection of the rows that are returned; false if an op was refused.
bool llm_graph_output(struct llm_graph * g, struct ggml_tensor * x);
// Rope of layer il on x [head_dim, n_heads, n] at positions pos (I32 [n]); rotation only
// (shift: no cos/sin magnitude of the architecture: the keys already carry it).
struct ggml_tensor * llm_graph_rope(struct llm_graph * g, uint32_t il, struct ggml_tensor * x, struct ggml_tensor * pos,
                                    bool shift);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_GRAPH_H
