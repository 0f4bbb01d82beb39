// graph-blocks.c — the pieces the architecture builders (src/models/*.c) compose:
//
//   inp_embd   x = token_embd[tokens] (* f_embd_scale)
//   attn       q, k, v = Wq·n (+bq), Wk·n (+bk), Wv·n (+bv)        (or one fused Wqkv matmul)
//              q, k = rms_norm per head * q_norm / k_norm            (when the layer has them)
//              q, k = rope(q), rope(k)   NORMAL or NEOX, the layer's base (sliding-window layers
//                                        may have their own), LongRoPE factors by context size
//              K/V rows written into the cache cells, then softmax(scale·QK^T + mask)·V over
//              the first n_kv cells (mask: causal, or causal within the window), Wo; with
//              soft-capping (gemma2) the scaled scores s become c·tanh(s/c) before the mask;
//              gated (qwen35): Wq also projects a gate per head, output * sigmoid(gate) before Wo
//   ffn        down( silu(gate·m) * up·m )  or  gelu_tanh(gate·m) * up·m
//   output     logits = output · rms_norm(x) * output_norm, on the rows marked for output
//              (final soft-capping, gemma2: c·tanh(logits/c))
//
// With flash attention the whole softmax(QK^T)V runs as one op; otherwise as mul_mat +
// soft_max_ext + mul_mat. Quantized caches are dequantized first (get_rows of [0, n_kv)).
#include "llama-adapter.h"
#include "llama-graph.h"

#include <math.h>

#define G(expr)               \
    do {                      \
        if ((expr) == NULL) { \
            return NULL;      \
        }                     \
    } while (0)
#define GB(expr)              \
    do {                      \
        if ((expr) == NULL) { \
            return false;     \
        }                     \
    } while (0)

struct ggml_tensor * llm_graph_inp_embd(struct llm_graph * g) {
    struct ggml_context * c = g->c;
    struct llama_graph_result * res = g->res;
    struct ggml_tensor * x;
    if (g->ub->token != NULL) {
        G(res->inp_tokens = ggml_new_tensor_1d(c, GGML_TYPE_I32, g->n_tokens));
        ggml_set_name(res->inp_tokens, "inp_tokens");
        ggml_set_input(res->inp_tokens);
        G(x = ggml_get_rows(c, g->model->tok_embd, res->inp_tokens));
    } else {
        G(res->inp_embd = ggml_new_tensor_2d(c, GGML_TYPE_F32, g->hp->n_embd, g->n_tokens));
        ggml_set_name(res->inp_embd, "inp_embd");
        ggml_set_input(res->inp_embd);
        x = res->inp_embd;
    }
    if (g->hp->f_embd_scale != 0.0f) {
        G(x = ggml_scale(c, x, g->hp->f_embd_scale));
    }
    return x;
}

struct ggml_tensor * llm_graph_norm(struct llm_graph * g, struct ggml_tensor * x, struct ggml_tensor * w) {
    struct ggml_tensor * n = ggml_rms_norm(g->c, x, g->hp->f_norm_rms_eps);
    return n && w ? ggml_mul(g->c, n, w) : n;
}

struct ggml_tensor * llm_graph_rope(struct llm_graph * g, uint32_t il, struct ggml_tensor * x, struct ggml_tensor * pos,
                                    bool shift) {
    const struct llama_context * ctx = g->ctx;
    const struct llama_hparams * hp = g->hp;
    float base = ctx->rope_freq_base, scale = ctx->rope_freq_scale;
    struct ggml_tensor * factors = g->rope_factors;
    if (hp->swa_layers[il] && hp->rope_freq_base_swa > 0.0f) {
        base = hp->rope_freq_base_swa; // local layers keep their own, unscaled frequencies
        scale = 1.0f;
        factors = NULL;
    }
    float attn_factor = ctx->yarn_attn_factor;
    if (!shift && hp->rope_attn_factor > 0.0f) {
        attn_factor *= hp->rope_attn_factor;
    }
    return ggml_rope_ext(g->c, x, pos, factors, (int) hp->n_rot_l[il], g->model->arch_info->rope, (int) ctx->n_ctx_orig, base,
                         scale, ctx->yarn_ext_factor, attn_factor, ctx->yarn_beta_fast, ctx->yarn_beta_slow);
}

// x (+ b when b is set); x may be a strided view (of a fused QKV product).
static struct ggml_tensor * graph_bias(struct ggml_context * c, struct ggml_tensor * x, struct ggml_tensor * b) {
    return b ? ggml_add(c, x, b) : x;
}

// Q, K ([hd, heads, n_tokens]) and V ([n_v, n_tokens]) of layer il from its normed input; with
// gated attention (hp->attn_gated) each Q head's rows are followed by its gate's, *gate. k and
// v are NULL for a layer that reads an earlier layer's KV. Without a V projection V is K's
// projection (before K's norm and rope); with attn_v_norm it is RMS-normed per head.
// RMS norm of x [hd, heads, n] by w: per head when w has hd elements (qwen3), over each token's
// whole vector when it has hd * heads (olmoe).
static struct ggml_tensor * graph_qk_norm(struct llm_graph * g, struct ggml_tensor * x, struct ggml_tensor * w) {
    struct ggml_context * c = g->c;
    const int64_t hd = x->ne[0], heads = x->ne[1], n = x->ne[2];
    if (w->ne[0] == hd || heads == 1) {
        return llm_graph_norm(g, x, w);
    }
    x = ggml_is_contiguous(x) ? x : ggml_cont(c, x);          // a view of a fused QKV product
    x = x ? ggml_reshape_2d(c, x, hd * heads, n) : NULL;
    x = x ? llm_graph_norm(g, x, w) : NULL;
    return x ? ggml_reshape_3d(c, x, hd, heads, n) : NULL;
}

static bool graph_qkv(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, struct ggml_tensor ** q,
                      struct ggml_tensor ** k, struct ggml_tensor ** v, struct ggml_tensor ** gate) {
    struct ggml_context * c = g->c;
    const struct llama_hparams * hp = g->hp;
    const struct llama_layer * L = &g->model->layers[il];
    const int64_t hd_k = hp->n_embd_head_k_l[il], n_head = hp->n_head, n_head_kv = hp->n_head_kv_l[il], n = g->n_tokens;
    const int64_t n_q = hd_k * n_head, n_k = hd_k * n_head_kv, n_v = (int64_t) hp->n_embd_head_v_l[il] * n_head_kv;
    *gate = NULL;
    *k = *v = NULL;
    if (hp->kv_layer[il] != il) {
        GB(*q = llm_graph_mm(g, L->wq, cur));
        GB(*q = graph_bias(c, *q, L->bq));
        GB(*q = ggml_reshape_3d(c, *q, hd_k, n_head, n));
        return (*q = L->attn_q_norm ? llm_graph_norm(g, *q, L->attn_q_norm) : *q) != NULL;
    }
    if (hp->attn_gated) {
        // q and gate interleaved per head: views with a doubled head stride
        struct ggml_tensor * qg = L->wqkv;
        GB(qg = ggml_mul_mat(c, L->wqkv != NULL ? L->wqkv : L->wq, cur));  // [2 n_q (+ n_k + n_v), n]
        const size_t es = ggml_type_size(qg->type);
        GB(*q = ggml_view_3d(c, qg, hd_k, n_head, n, 2 * hd_k * es, qg->nb[1], 0));
        GB(*gate = ggml_view_3d(c, qg, hd_k, n_head, n, 2 * hd_k * es, qg->nb[1], (size_t) hd_k * es));
        if (L->wqkv != NULL) {
            GB(*k = ggml_view_3d(c, qg, hd_k, n_head_kv, n, hd_k * es, qg->nb[1], (size_t) 2 * n_q * es));
            GB(*v = ggml_view_2d(c, qg, n_v, n, qg->nb[1], (size_t) (2 * n_q + n_k) * es));
        } else {
            GB(*k = ggml_mul_mat(c, L->wk, cur));
            GB(*k = ggml_reshape_3d(c, *k, hd_k, n_head_kv, n));
            GB(*v = ggml_mul_mat(c, L->wv, cur));
        }
    } else if (L->wqkv != NULL) {
        // one matmul for Q, K and V (stored fused, or fused by model.c): each is a view of its rows
        struct ggml_tensor * qkv;
        GB(qkv = llm_graph_mm(g, L->wqkv, cur));          // [n_q + n_k + n_v, n_tokens]
        const size_t es = ggml_type_size(qkv->type);
        // a fused product that model.c made: adapters of wq, wk, wv add to its views
        const bool adapted = L->wq != NULL && (g->ctx->n_loras > 0 || g->ctx->n_lora_seq > 0);
        const bool k_is_v = L->wq != NULL && L->wv == NULL;     // Q and K fused alone (gemma4)
        struct ggml_tensor * k2 = NULL;                          // K's rows [n_k, n]
        if (L->bq != NULL || L->bk != NULL || adapted) {
            GB(*q = ggml_view_2d(c, qkv, n_q, n, qkv->nb[1], 0));
            GB(*k = ggml_view_2d(c, qkv, n_k, n, qkv->nb[1], (size_t) n_q * es));
            if (adapted) {
                GB(*q = llm_graph_lora(g, L->wq, cur, *q));
                GB(*k = llm_graph_lora(g, L->wk, cur, *k));
            }
            k2 = *k;
            // the bias adds write contiguous results, which reshape into heads
            GB(*q = L->bq ? ggml_add(c, *q, L->bq) : ggml_is_contiguous(*q) ? *q : ggml_cont(c, *q));
            GB(*k = L->bk ? ggml_add(c, *k, L->bk) : ggml_is_contiguous(*k) ? *k : ggml_cont(c, *k));
            GB(*q = ggml_reshape_3d(c, *q, hd_k, n_head, n));
            GB(*k = ggml_reshape_3d(c, *k, hd_k, n_head_kv, n));
        } else {
            GB(*q = ggml_view_3d(c, qkv, hd_k, n_head, n, hd_k * es, qkv->nb[1], 0));
            GB(*k = ggml_view_3d(c, qkv, hd_k, n_head_kv, n, hd_k * es, qkv->nb[1], (size_t) n_q * es));
        }
        if (k_is_v) {
            GB(*v = k2 != NULL ? k2 : ggml_view_2d(c, qkv, n_k, n, qkv->nb[1], (size_t) n_q * es));
        } else {
            GB(*v = ggml_view_2d(c, qkv, n_v, n, qkv->nb[1], (size_t) (n_q + n_k) * es));
            if (adapted) {
                GB(*v = llm_graph_lora(g, L->wv, cur, *v));
            }
            GB(*v = graph_bias(c, *v, L->bv));
        }
    } else {
        GB(*q = llm_graph_mm(g, L->wq, cur));
        GB(*k = llm_graph_mm(g, L->wk, cur));
        GB(*v = L->wv ? llm_graph_mm(g, L->wv, cur) : *k);
        GB(*q = graph_bias(c, *q, L->bq));
        GB(*k = graph_bias(c, *k, L->bk));
        GB(*v = graph_bias(c, *v, L->bv));
        GB(*q = ggml_reshape_3d(c, *q, hd_k, n_head, n));
        GB(*k = ggml_reshape_3d(c, *k, hd_k, n_head_kv, n));
    }
    if (L->attn_q_norm != NULL) {
        GB(*q = graph_qk_norm(g, *q, L->attn_q_norm));
    }
    if (L->attn_k_norm != NULL) {
        GB(*k = graph_qk_norm(g, *k, L->attn_k_norm));
    }
    if (hp->attn_v_norm) {
        GB(*v = ggml_is_contiguous(*v) ? *v : ggml_cont(c, *v));   // a view of a fused QKV product
        GB(*v = ggml_reshape_3d(c, *v, hp->n_embd_head_v_l[il], n_head_kv, n));
        GB(*v = llm_graph_norm(g, *v, NULL));
        GB(*v = ggml_reshape_2d(c, *v, n_v, n));
    }
    return true;
}

// softmax(scale·kq + mask) over rows of kq, soft-capped first when the model says so (gemma2:
// c·tanh(scale·s/c), the softmax's own scale multiplying back by c), with the layer's sinks.
static struct ggml_tensor * graph_kq_softmax(struct llm_graph * g, const struct llama_layer * L, struct ggml_tensor * kq,
                                             struct ggml_tensor * mask, float kq_scale) {
    struct ggml_context * c = g->c;
    const float cap = g->hp->f_attn_softcap;
    if (cap > 0.0f) {
        G(kq = ggml_scale(c, kq, kq_scale / cap));
        G(kq = ggml_tanh(c, kq));
        G(kq = ggml_soft_max_ext(c, kq, mask, cap, 0.0f));
    } else {
        G(kq = ggml_soft_max_ext(c, kq, mask, kq_scale, 0.0f));
    }
    return L->attn_sinks != NULL ? ggml_soft_max_add_sinks(kq, L->attn_sinks) : kq;
}

// The attention output o [hd_v * n_head, n_tokens] gated (qwen35: o * sigmoid(gate)), then Wo (+bo).
static bool graph_attn_out(struct llm_graph * g, const struct llama_layer * L, struct ggml_tensor * o, struct ggml_tensor * gate,
                           struct ggml_tensor ** out) {
    struct ggml_context * c = g->c;
    if (gate != NULL) {
        GB(gate = ggml_sigmoid(c, gate));                      // [hd, n_head, n_tokens]
        GB(gate = ggml_reshape_2d(c, gate, ggml_nelements(o) / g->n_tokens, g->n_tokens));
        GB(o = ggml_mul(c, o, gate));
    }
    GB(*out = llm_graph_mm(g, L->wo, o));
    GB(*out = graph_bias(c, *out, L->bo));
    return true;
}

// x (hd * nh values per token, rows of hd contiguous) as [hd, len, nh, grp]: the tokens moved
// to their encode slots (encode.c) when the batch is grouped, else a view.
static struct ggml_tensor * graph_enc_slots(struct llm_graph * g, struct ggml_tensor * x, int64_t hd, int64_t nh) {
    struct ggml_context * c = g->c;
    const int64_t len = g->ub->enc_len, grp = g->ub->enc_grp;
    if (g->res->inp_enc_slots != NULL) {
        if (!ggml_is_contiguous(x)) {
            G(x = ggml_cont(c, x));
        }
        G(x = ggml_reshape_2d(c, x, hd * nh, g->n_tokens));
        G(x = ggml_get_rows(c, x, g->res->inp_enc_slots));     // [hd * nh, len * grp]
        G(x = ggml_reshape_4d(c, x, hd, nh, len, grp));
    } else {
        // x is [hd * nh, n] or [hd, nh, n], possibly a view of a fused QKV product with its
        // row stride: heads and tokens at x's own strides
        const bool flat = x->ne[0] == hd * nh && x->ne[1] == g->n_tokens && x->ne[2] == 1;
        const size_t head = flat ? ggml_row_size(x->type, hd) : x->nb[1], tok = flat ? x->nb[1] : x->nb[2];
        G(x = ggml_view_4d(c, x, hd, nh, len, 1, head, tok, tok * len, 0));
    }
    return ggml_permute(c, x, 0, 2, 1, 3);
}

// Encoder attention of layer il: q [hd_k, n_head, n], k [hd_k, n_head_kv, n], v [n_v, n] (F32,
// possibly views) -> [hd_v * n_head, n] in token order; groups of slots attend within
// themselves under mask [len, len, 1, grp].
static struct ggml_tensor * graph_attn_enc(struct llm_graph * g, uint32_t il, struct ggml_tensor * q, struct ggml_tensor * k,
                                           struct ggml_tensor * v, struct ggml_tensor * mask, float kq_scale) {
    struct ggml_context * c = g->c;
    const struct llama_hparams * hp = g->hp;
    const struct llama_layer * L = &g->model->layers[il];
    const int64_t hd_k = hp->n_embd_head_k_l[il], hd_v = hp->n_embd_head_v_l[il];
    const int64_t n_head = hp->n_head, n_head_kv = hp->n_head_kv_l[il];
    const int64_t len = g->ub->enc_len, grp = g->ub->enc_grp;
    struct ggml_tensor *Q, *K, *V, *o;
    G(Q = graph_enc_slots(g, q, hd_k, n_head));                // [hd_k, len, n_head, grp]
    G(K = graph_enc_slots(g, k, hd_k, n_head_kv));
    G(V = graph_enc_slots(g, v, hd_v, n_head_kv));             // [hd_v, len, n_head_kv, grp]
    if (g->ctx->flash_attn && L->attn_sinks == NULL) {
        G(o = ggml_flash_attn_ext(c, Q, K, V, mask, kq_scale, 0.0f, hp->f_attn_softcap)); // [hd_v, n_head, len, grp]
    } else {
        struct ggml_tensor *kq, *vt;
        G(kq = ggml_mul_mat(c, K, Q));                          // [len, len, n_head, grp]
        G(kq = graph_kq_softmax(g, L, kq, mask, kq_scale));
        G(vt = ggml_cont(c, ggml_transpose(c, V)));             // [len, hd_v, n_head_kv, grp]
        G(o = ggml_mul_mat(c, vt, kq));                         // [hd_v, len, n_head, grp]
        G(o = ggml_cont(c, ggml_permute(c, o, 0, 2, 1, 3)));    // [hd_v, n_head, len, grp]
    }
    G(o = ggml_reshape_2d(c, o, hd_v * n_head, len * grp));
    return g->res->inp_enc_rows != NULL ? ggml_get_rows(c, o, g->res->inp_enc_rows) : o;
}

// Attention without flash attention per sequence (attn-seq.c): the tokens q [hd_k, n_head, n] in
// grp_n groups of grp_len slots, each over grp_cells rows of the cache k_all / v_all ([row, cells])
// gathered for its sequence, under mask [grp_cells, grp_len, 1, grp_n]; -> [hd_v * n_head, n].
static struct ggml_tensor * graph_attn_seq(struct llm_graph * g, const struct llama_layer * L, struct ggml_tensor * q,
                                           struct ggml_tensor * k_all, struct ggml_tensor * v_all, struct ggml_tensor * mask,
                                           int64_t hd_k, int64_t hd_v, int64_t n_head_kv, float kq_scale) {
    struct ggml_context * c = g->c;
    const struct llama_graph_result * res = g->res;
    const int64_t n_head = g->hp->n_head, C = g->ub->grp_cells, T = g->ub->grp_len, NG = g->ub->grp_n;
    struct ggml_tensor *Q, *K, *V, *kq, *o;
    G(Q = ggml_is_contiguous(q) ? q : ggml_cont(c, q));
    G(Q = ggml_reshape_2d(c, Q, hd_k * n_head, g->n_tokens));
    G(Q = ggml_get_rows(c, Q, res->inp_grp_toks));              // [hd_k * n_head, T * G]
    G(Q = ggml_permute(c, ggml_reshape_4d(c, Q, hd_k, n_head, T, NG), 0, 2, 1, 3)); // [hd_k, T, n_head, G]
    G(K = ggml_get_rows(c, k_all, res->inp_grp_cells));          // F32 [hd_k * n_head_kv, C * G]
    G(K = ggml_permute(c, ggml_reshape_4d(c, K, hd_k, n_head_kv, C, NG), 0, 2, 1, 3)); // [hd_k, C, n_head_kv, G]
    G(V = ggml_get_rows(c, v_all, res->inp_grp_cells));
    G(V = ggml_cont(c, ggml_permute(c, ggml_reshape_4d(c, V, hd_v, n_head_kv, C, NG), 1, 2, 0, 3))); // [C, hd_v, n_head_kv, G]
    G(kq = ggml_mul_mat(c, K, Q));                              // [C, T, n_head, G]
    G(kq = graph_kq_softmax(g, L, kq, mask, kq_scale));
    G(o = ggml_mul_mat(c, V, kq));                              // [hd_v, T, n_head, G]
    G(o = ggml_cont(c, ggml_permute(c, o, 0, 2, 1, 3)));        // [hd_v, n_head, T, G]
    G(o = ggml_reshape_2d(c, o, hd_v * n_head, T * NG));
    return ggml_get_rows(c, o, res->inp_grp_rows);              // [hd_v * n_head, n]
}

bool llm_graph_attn(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, struct ggml_tensor ** out) {
    struct llama_context * ctx = g->ctx;
    struct ggml_context * c = g->c;
    const struct llama_hparams * hp = g->hp;
    const struct llama_layer * L = &g->model->layers[il];
    const struct llama_memory_i * kv = &ctx->kv;
    struct llama_graph_result * res = g->res;
    const int64_t hd_k = hp->n_embd_head_k_l[il], hd_v = hp->n_embd_head_v_l[il];
    const float kq_scale = hp->f_attn_scale > 0.0f ? hp->f_attn_scale : 1.0f / sqrtf((float) hd_k);
    const bool last = il == hp->n_layer - 1;
    const uint32_t slot = kv->slot_of_layer[il];
    // a slot of the window cache (kv.swa) has its own cells: indices, count and dequant range
    const bool win = kv->swa != NULL && slot != UINT32_MAX && kv->slot_swa[slot];
    const int64_t n_head = hp->n_head, n_head_kv = hp->n_head_kv_l[il], n_tokens = g->n_tokens,
                  n_kv = win ? g->n_kv_swa : g->n_kv;
    struct ggml_tensor * kv_idx = win ? res->inp_kv_idx_swa : res->inp_kv_idx;
    struct ggml_tensor * kv_range = win ? res->inp_kv_range_swa : res->inp_kv_range;
    *out = NULL;

    struct ggml_tensor *q, *k, *v, *gate;
    if (!graph_qkv(g, il, cur, &q, &k, &v, &gate)) {
        return false;
    }
    const bool rope = hp->n_rot_l[il] > 0; // 0: positions come from elsewhere (bert's learned embeddings)
    if (rope) {
        GB(q = llm_graph_rope(g, il, q, g->pos ? g->pos : res->inp_pos, false));
    }

    if (g->ub->enc_len > 0) {
        // an encode: K and V straight from this graph (F32), attention per slot group
        if (k == NULL) {
            LLAMA_LOG_ERROR("llama_encode: layer %u reads another layer's KV, which an encode does not keep\n", il);
            return false;
        }
        if (last && g->n_rows == 0) {
            return true;
        }
        if (rope) {
            GB(k = llm_graph_rope(g, il, k, res->inp_pos, false));
        }
        struct ggml_tensor * mask = hp->swa_layers[il] && res->inp_mask_swa ? res->inp_mask_swa : res->inp_mask;
        struct ggml_tensor * o;
        GB(o = graph_attn_enc(g, il, q, k, v, mask, kq_scale));
        return graph_attn_out(g, L, o, gate, out);
    }

    // Write this ubatch's K and V rows into their cells; the views read below are made from
    // the set_rows results so that attention depends on (and runs after) the writes. A layer
    // sharing an earlier layer's KV reads the cells that layer wrote in this graph.
    struct ggml_tensor *k_all, *v_all;
    if (k != NULL) {
        if (rope) {
            GB(k = llm_graph_rope(g, il, k, res->inp_pos, false));
        }
        GB(k = ggml_reshape_2d(c, k, hd_k * n_head_kv, n_tokens));
        GB(k_all = ggml_set_rows(c, kv->k_l[slot], k, kv_idx));
        GB(v_all = ggml_set_rows(c, kv->v_l[slot], v, kv_idx));
        ggml_build_forward_expand(g->gf, k_all);
        ggml_build_forward_expand(g->gf, v_all);
        g->kv_written[slot][0] = k_all;
        g->kv_written[slot][1] = v_all;
        if (last && g->n_rows == 0) {
            return true; // nothing leaves the last layer: only its K/V were needed
        }
    } else if (last && g->n_rows == 0) {
        return true;
    } else if ((k_all = g->kv_written[slot][0]) == NULL || (v_all = g->kv_written[slot][1]) == NULL) {
        LLAMA_LOG_ERROR("llama_decode: layer %u reads the KV of layer %u, which this graph did not write\n", il,
                        kv->layer_of_slot[slot]);
        return false;
    }

    struct ggml_tensor *K, *V, *Q, *o;
    if (ggml_is_quantized(kv->type_k)) {
        GB(k_all = ggml_get_rows(c, k_all, kv_range));     // F32 [n_embd_k_gqa, n_kv]
    }
    if (ggml_is_quantized(kv->type_v)) {
        GB(v_all = ggml_get_rows(c, v_all, kv_range));
    }
    struct ggml_tensor *mask = g->mask ? g->mask : res->inp_mask, *mask_swa = g->mask ? g->mask_swa : res->inp_mask_swa;
    mask = (win || hp->swa_layers[il]) && mask_swa ? mask_swa : mask;
    GB(K = ggml_view_3d(c, k_all, hd_k, n_kv, n_head_kv, k_all->nb[1], ggml_row_size(k_all->type, hd_k), 0));
    GB(V = ggml_view_3d(c, v_all, hd_v, n_kv, n_head_kv, v_all->nb[1], ggml_row_size(v_all->type, hd_v), 0));
    GB(Q = ggml_permute(c, q, 0, 2, 1, 3));                    // [hd, n_tokens, n_head]
    if (ctx->flash_attn) {
        GB(o = ggml_flash_attn_ext(c, Q, K, V, mask, kq_scale, 0.0f, hp->f_attn_softcap)); // [hd_v, n_head, n_tokens]
        if (L->attn_sinks != NULL) {
            GB(o = ggml_flash_attn_ext_add_sinks(o, L->attn_sinks));
        }
        GB(o = ggml_reshape_2d(c, o, hd_v * n_head, n_tokens));
    } else if (res->inp_grp_cells != NULL && g->mask == NULL) {
        struct ggml_tensor * gmask = hp->swa_layers[il] && res->inp_grp_mask_swa ? res->inp_grp_mask_swa : res->inp_grp_mask;
        GB(o = graph_attn_seq(g, L, q, k_all, v_all, gmask, hd_k, hd_v, n_head_kv, kq_scale));
    } else {
        struct ggml_tensor *kq, *vt, *kqv;
        GB(kq = ggml_mul_mat(c, K, Q));                        // [n_kv, n_tokens, n_head]
        GB(kq = graph_kq_softmax(g, L, kq, mask, kq_scale));
        GB(vt = ggml_transpose(c, V));
        GB(vt = ggml_cont(c, vt));                             // [n_kv, hd_v, n_head_kv]
        GB(kqv = ggml_mul_mat(c, vt, kq));                     // [hd_v, n_tokens, n_head]
        GB(o = ggml_permute(c, kqv, 0, 2, 1, 3));
        GB(o = ggml_cont(c, o));                               // [hd_v, n_head, n_tokens]
        GB(o = ggml_reshape_2d(c, o, hd_v * n_head, n_tokens));
    }
    return graph_attn_out(g, L, o, gate, out);
}

bool llm_graph_out_rows(struct llm_graph * g, uint32_t il, struct ggml_tensor ** cur, struct ggml_tensor ** x) {
    if (il == g->hp->n_layer - 1 && g->res->inp_out_ids != NULL) {
        // The rest of the last layer only matters for the rows that are returned.
        GB(*cur = ggml_get_rows(g->c, *cur, g->res->inp_out_ids));
        GB(*x = ggml_get_rows(g->c, *x, g->res->inp_out_ids));
    }
    return true;
}

struct ggml_tensor * llm_graph_ffn(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, enum llm_ffn_kind kind) {
    if (g->model->layers[il].ffn_gate_inp != NULL) {
        return llm_graph_moe_ffn(g, il, cur); // experts (SwiGLU)
    }
    return llm_graph_ffn_dense(g, il, cur, kind);
}

struct ggml_tensor * llm_graph_ffn_dense(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, enum llm_ffn_kind kind) {
    struct ggml_context * c = g->c;
    const struct llama_layer * L = &g->model->layers[il];
    struct ggml_tensor *gate, *up;
    if (L->ffn_gate_up != NULL) {
        G(gate = llm_graph_mm(g, L->ffn_gate_up, cur));      // [2 n_ff, n_tokens]: gate rows, then up rows
        if (L->ffn_gate != NULL && (g->ctx->n_loras > 0 || g->ctx->n_lora_seq > 0)) {
            // fused by model.c: adapters of ffn_gate and ffn_up add to the two halves
            const int64_t n_ff = gate->ne[0] / 2;
            G(up = ggml_view_2d(c, gate, n_ff, gate->ne[1], gate->nb[1], (size_t) n_ff * ggml_type_size(gate->type)));
            G(gate = ggml_view_2d(c, gate, n_ff, gate->ne[1], gate->nb[1], 0));
            G(gate = llm_graph_lora(g, L->ffn_gate, cur, gate));
            G(up = llm_graph_lora(g, L->ffn_up, cur, up));
            if (kind != LLM_FFN_SWIGLU) {
                G(gate = ggml_gelu(c, gate));
            }
            G(cur = kind == LLM_FFN_SWIGLU ? ggml_swiglu_split(c, gate, up) : ggml_mul(c, gate, up));
        } else if (kind == LLM_FFN_SWIGLU) {
            G(cur = ggml_swiglu(c, gate));
        } else {
            const int64_t n_ff = gate->ne[0] / 2;
            G(up = ggml_view_2d(c, gate, n_ff, gate->ne[1], gate->nb[1], (size_t) n_ff * ggml_type_size(gate->type)));
            G(gate = ggml_view_2d(c, gate, n_ff, gate->ne[1], gate->nb[1], 0));
            G(gate = ggml_gelu(c, gate));
            G(cur = ggml_mul(c, gate, up));
        }
    } else {
        G(gate = llm_graph_mm(g, L->ffn_gate, cur));
        G(up = llm_graph_mm(g, L->ffn_up, cur));
        if (kind == LLM_FFN_SWIGLU) {
            G(cur = ggml_swiglu_split(c, gate, up));
        } else {
            G(gate = ggml_gelu(c, gate));
            G(cur = ggml_mul(c, gate, up));
        }
    }
    return llm_graph_mm(g, L->ffn_down, cur);
}

bool llm_graph_output(struct llm_graph * g, struct ggml_tensor * x) {
    struct llama_graph_result * res = g->res;
    if (g->n_rows == 0) {
        return true;
    }
    GB(res->t_embd = llm_graph_norm(g, x, g->model->output_norm));
    ggml_set_name(res->t_embd, "result_norm");
    ggml_set_output(res->t_embd);
    ggml_build_forward_expand(g->gf, res->t_embd);
    if (!g->ub->all_rows || !g->ctx->embeddings) {
        GB(res->t_logits = ggml_mul_mat(g->c, g->model->output, res->t_embd));
        // finer activations where the weights' type allows (ggml.h, Q8_0): rounding them to 8
        // bits lands on the logits unnormalized (alone, 1.5% of Gemma 3 270M's top-1 choices)
        ggml_mul_mat_set_prec(res->t_logits, GGML_PREC_F32);
        GB(res->t_logits = llm_graph_lora(g, g->model->output, res->t_embd, res->t_logits));
        const float ls = g->hp->f_logit_scale;
        if (ls != 0.0f && ls != 1.0f) {
            GB(res->t_logits = ggml_scale(g->c, res->t_logits, 1.0f / ls));
        }
        const float cap = g->hp->f_final_softcap;
        if (cap > 0.0f) {
            GB(res->t_logits = ggml_scale(g->c, res->t_logits, 1.0f / cap));
            GB(res->t_logits = ggml_tanh(g->c, res->t_logits));
            GB(res->t_logits = ggml_scale(g->c, res->t_logits, cap));
        }
        ggml_set_name(res->t_logits, "result_output");
        ggml_set_output(res->t_logits);
        ggml_build_forward_expand(g->gf, res->t_logits);
    }
    return true;
}
