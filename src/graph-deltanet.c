// graph-deltanet.c — the Gated DeltaNet token mixer (Yang et al., 2024, as Qwen3-Next and
// Qwen3.5 use it) for one recurrent layer of a ubatch of n_s sequences x n_t tokens:
//
//   qkv = Wqkv·x   z = Wz·x   b = Wb·x   a = Wa·x
//   qkv = silu(causal depthwise conv over [conv state | qkv])      (the state keeps the last
//                                                                    d_conv - 1 inputs, channel-fastest)
//   q, k, v = split(qkv); q, k = l2_norm per head
//   beta = sigmoid(b);  g = ssm_a * softplus(a + dt_bias)          (ssm_a = -exp(A_log): log decay)
//   o, state = gated_delta_net(q, k, v, g, beta, state)           (ggml.h: o = M^T q / sqrt(S);
//                                                                    chunked for prompt ubatches)
//   out = Wout · (rms_norm(o per head) * ssm_norm * silu(z))
//
// The conv and recurrence states of the ubatch's sequences are read from the recurrent memory
// with get_rows (slot ids: inp_s_ids) and written back with set_rows.
#include "llama-graph.h"

// Tokens per chunk of the chunked scan used for prompts.
#define LLM_DELTA_NET_CHUNK 64

#define GB(expr)              \
    do {                      \
        if ((expr) == NULL) { \
            return false;     \
        }                     \
    } while (0)

static bool dn_weights_ok(const struct llama_layer * L, uint32_t il) {
    const struct {
        const struct ggml_tensor * t;
        const char * name;
    } w[] = {
        { L->wqkv, "attn_qkv" },       { L->ssm_gate, "attn_gate" },    { L->ssm_beta, "ssm_beta" },
        { L->ssm_alpha, "ssm_alpha" }, { L->ssm_conv1d, "ssm_conv1d" }, { L->ssm_dt, "ssm_dt.bias" },
        { L->ssm_a, "ssm_a" },         { L->ssm_norm, "ssm_norm" },     { L->ssm_out, "ssm_out" },
    };
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
        if (w[i].t == NULL) {
            LLAMA_LOG_ERROR("llama_decode: recurrent layer %u has no blk.%u.%s tensor\n", il, il, w[i].name);
            return false;
        }
    }
    return true;
}

bool llm_graph_delta_net(struct llm_graph * g, uint32_t il, struct ggml_tensor * cur, struct ggml_tensor ** out) {
    struct ggml_context * c = g->c;
    const struct llama_hparams * hp = g->hp;
    const struct llama_layer * L = &g->model->layers[il];
    const struct llama_memory_recurrent * rs = g->ctx->kv.rs;
    const struct llama_graph_result * res = g->res;
    const int64_t S = hp->ssm_d_state, H = hp->ssm_dt_rank, H_k = hp->ssm_n_group, d_conv = hp->ssm_d_conv;
    const int64_t key_dim = S * H_k, value_dim = S * H, ch = 2 * key_dim + value_dim;
    const int64_t n_s = g->ub->n_seqs, n_t = g->ub->n_seq_tokens, n = g->n_tokens;
    const float eps = hp->f_norm_rms_eps;
    *out = NULL;
    if (rs == NULL || rs->r_l[il] == NULL || n_s == 0 || res->inp_s_ids == NULL) {
        LLAMA_LOG_ERROR("llama_decode: recurrent layer %u has no state for this ubatch\n", il);
        return false;
    }
    if (!dn_weights_ok(L, il)) {
        return false;
    }
    const size_t fs = sizeof(float);
    struct ggml_tensor *qkv, *z, *b, *a, *beta, *gl, *t;
    GB(qkv = ggml_mul_mat(c, L->wqkv, cur));                    // [ch, n]
    GB(z = ggml_mul_mat(c, L->ssm_gate, cur));                  // [value_dim, n]
    GB(b = ggml_mul_mat(c, L->ssm_beta, cur));                  // [H, n]
    GB(a = ggml_mul_mat(c, L->ssm_alpha, cur));                 // [H, n]
    GB(beta = ggml_sigmoid(c, b));
    GB(beta = ggml_reshape_4d(c, beta, 1, H, n_t, n_s));
    GB(gl = ggml_add(c, a, L->ssm_dt));
    GB(gl = ggml_softplus(c, gl));
    GB(gl = ggml_mul(c, gl, L->ssm_a));
    GB(gl = ggml_reshape_4d(c, gl, 1, H, n_t, n_s));

    // convolution over each sequence's last d_conv - 1 inputs followed by its new ones; the
    // window is built channel-fastest (the state is kept so: both concat inputs contiguous) and
    // handed to ssm_conv as a transposed view, [d_conv - 1 + n_t, ch, n_s] with a strided time axis
    struct ggml_tensor *conv_state, *sx, *x;
    GB(conv_state = ggml_get_rows(c, rs->r_l[il], res->inp_s_ids));                // [n_embd_r, n_s]
    GB(conv_state = ggml_reshape_3d(c, conv_state, ch, d_conv - 1, n_s));
    GB(x = ggml_reshape_3d(c, qkv, ch, n_t, n_s));
    GB(sx = ggml_concat(c, conv_state, x, 1));                                     // [ch, d_conv - 1 + n_t, n_s]
    GB(t = ggml_view_3d(c, sx, ch, d_conv - 1, n_s, sx->nb[1], sx->nb[2], (size_t) n_t * sx->nb[1]));
    GB(t = ggml_cont(c, t));
    GB(t = ggml_reshape_2d(c, t, (d_conv - 1) * ch, n_s));
    GB(t = ggml_set_rows(c, rs->r_l[il], t, res->inp_s_ids));
    ggml_build_forward_expand(g->gf, t);
    GB(sx = ggml_permute(c, sx, 1, 0, 2, 3));
    GB(x = ggml_ssm_conv(c, sx, L->ssm_conv1d));                                  // [ch, n_t, n_s]
    GB(x = ggml_silu(c, x));

    struct ggml_tensor *q, *k, *v, *state, *o;
    GB(q = ggml_view_4d(c, x, S, H_k, n_t, n_s, S * fs, x->nb[1], x->nb[2], 0));
    GB(k = ggml_view_4d(c, x, S, H_k, n_t, n_s, S * fs, x->nb[1], x->nb[2], (size_t) key_dim * fs));
    GB(v = ggml_view_4d(c, x, S, H, n_t, n_s, S * fs, x->nb[1], x->nb[2], (size_t) 2 * key_dim * fs));
    GB(q = ggml_l2_norm(c, q, eps));
    GB(k = ggml_l2_norm(c, k, eps));
    GB(state = ggml_get_rows(c, rs->s_l[il], res->inp_s_ids));                     // [S*S*H, n_s]
    GB(state = ggml_reshape_4d(c, state, S, S, H, n_s));
    // prompt ubatches (several tokens per sequence) take the chunked form, chunks of 64 as in
    // the paper and transformers' chunk_gated_delta_rule; generation steps the recurrence
    GB(o = n_t > 1 ? ggml_gated_delta_net_chunked(c, q, k, v, gl, beta, state, LLM_DELTA_NET_CHUNK)
                   : ggml_gated_delta_net(c, q, k, v, gl, beta, state, 1));
    GB(t = ggml_view_2d(c, o, S * S * H, n_s, S * S * H * fs, (size_t) (S * H * n) * fs));
    GB(t = ggml_set_rows(c, rs->s_l[il], t, res->inp_s_ids));
    ggml_build_forward_expand(g->gf, t);
    if (il == hp->n_layer - 1 && g->n_rows == 0) {
        return true; // nothing leaves the last layer: only its state was needed
    }

    // gated RMS norm per head, then the out projection
    struct ggml_tensor * y;
    GB(y = ggml_view_3d(c, o, S, H, n, S * fs, S * H * fs, 0));
    GB(y = llm_graph_norm(g, y, L->ssm_norm));
    GB(z = ggml_reshape_3d(c, z, S, H, n));
    GB(z = ggml_silu(c, z));
    GB(y = ggml_mul(c, y, z));
    GB(y = ggml_reshape_2d(c, y, value_dim, n));
    GB(*out = ggml_mul_mat(c, L->ssm_out, y));
    return true;
}
