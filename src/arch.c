// arch.c — the architecture table: per GGUF general.architecture, its own hyperparameter keys,
// its tensors (required / optional, shapes), its rope layout and its graph builder. Names of
// keys and tensors are the ones llama.cpp's converter writes (gguf-py's constants.py lists
// them: MODEL_TENSORS, Keys). model.c loads by the row; graph.c builds with row->build.
#include "llama-model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HP(field) (uint16_t) offsetof(struct llama_hparams, field)
#define ML(field) (uint16_t) offsetof(struct llama_model, field)
#define LY(field) (uint16_t) offsetof(struct llama_layer, field)

#define REQ     LLM_T_REQUIRED
#define LAY     LLM_T_LAYER
#define F32     LLM_T_F32
#define F32_F16 (LLM_T_F32 | LLM_T_F16_OK)

// Tensors every decoder here has around its blocks.
#define T_EMBD                                                                     \
    {                                                                              \
        "token_embd.weight", ML(tok_embd), REQ, 2, { LLM_DIM_EMBD, LLM_DIM_VOCAB } \
    }
#define T_OUT_NORM                                                            \
    {                                                                         \
        "output_norm.weight", ML(output_norm), REQ | F32, 1, { LLM_DIM_EMBD } \
    }
// absent: tied to token_embd (model.c)
#define T_OUTPUT                                                           \
    {                                                                      \
        "output.weight", ML(output), 0, 2, { LLM_DIM_EMBD, LLM_DIM_VOCAB } \
    }
#define T_ROPE_FREQS                                                  \
    {                                                                 \
        "rope_freqs.weight", ML(rope_freqs), F32, 1, { LLM_DIM_ROT2 } \
    }

#define B(name, field, flags, nd, d0, d1)                        \
    {                                                            \
        "blk.%u." name, LY(field), (flags) | LAY, nd, { d0, d1 } \
    }
#define B_ATTN_NORM B("attn_norm.weight", attn_norm, REQ | F32, 1, LLM_DIM_EMBD, 0)
#define B_Q         B("attn_q.weight", wq, REQ, 2, LLM_DIM_EMBD, LLM_DIM_Q)
#define B_K         B("attn_k.weight", wk, REQ, 2, LLM_DIM_EMBD, LLM_DIM_K)
#define B_V         B("attn_v.weight", wv, REQ, 2, LLM_DIM_EMBD, LLM_DIM_V)
#define B_O         B("attn_output.weight", wo, REQ, 2, LLM_DIM_O, LLM_DIM_EMBD)
#define B_FFN_NORM  B("ffn_norm.weight", ffn_norm, REQ | F32, 1, LLM_DIM_EMBD, 0)
#define B_GATE      B("ffn_gate.weight", ffn_gate, REQ, 2, LLM_DIM_EMBD, LLM_DIM_FF)
#define B_UP        B("ffn_up.weight", ffn_up, REQ, 2, LLM_DIM_EMBD, LLM_DIM_FF)
#define B_DOWN      B("ffn_down.weight", ffn_down, REQ, 2, LLM_DIM_FF, LLM_DIM_EMBD)
#define B_Q_NORM    B("attn_q_norm.weight", attn_q_norm, REQ | F32, 1, LLM_DIM_HEAD_K, 0)
#define B_K_NORM    B("attn_k_norm.weight", attn_k_norm, REQ | F32, 1, LLM_DIM_HEAD_K, 0)
#define T_END       { NULL, 0, 0, 0, { 0, 0, 0 } }

// Mixture of experts (graph-moe.c): a router and the experts stacked in dim 2, loaded when
// expert_count > 0 (LLM_T_MOE); the dense FFN of such rows only when it is 0 (LLM_T_DENSE).
#define B3(name, field, flags, d0, d1, d2)                          \
    {                                                               \
        "blk.%u." name, LY(field), (flags) | LAY, 3, { d0, d1, d2 } \
    }
#define B_MOE                                                                                               \
    B("ffn_gate_inp.weight", ffn_gate_inp, LLM_T_MOE, 2, LLM_DIM_EMBD, LLM_DIM_EXPERT),                     \
        B3("ffn_gate_exps.weight", ffn_gate_exps, LLM_T_MOE, LLM_DIM_EMBD, LLM_DIM_FF_EXP, LLM_DIM_EXPERT), \
        B3("ffn_up_exps.weight", ffn_up_exps, LLM_T_MOE, LLM_DIM_EMBD, LLM_DIM_FF_EXP, LLM_DIM_EXPERT),     \
        B3("ffn_down_exps.weight", ffn_down_exps, LLM_T_MOE, LLM_DIM_FF_EXP, LLM_DIM_EMBD, LLM_DIM_EXPERT)
#define B_DENSE_FFN                                                           \
    B("ffn_gate.weight", ffn_gate, LLM_T_DENSE, 2, LLM_DIM_EMBD, LLM_DIM_FF), \
        B("ffn_up.weight", ffn_up, LLM_T_DENSE, 2, LLM_DIM_EMBD, LLM_DIM_FF), \
        B("ffn_down.weight", ffn_down, LLM_T_DENSE, 2, LLM_DIM_FF, LLM_DIM_EMBD)
// The expert keys (llama.cpp's names); expert_weights_norm's default is what llama.cpp's graph
// for the architecture does (llama, qwen3moe: renormalise the chosen experts' weights; qwen2moe: not).
#define K_MOE(count_required, norm_default)                                                   \
    { "expert_count", HP(n_expert), LLM_KEY_U32, count_required, 0 },                         \
        { "expert_used_count", HP(n_expert_used), LLM_KEY_U32, count_required, 0 },           \
        { "expert_feed_forward_length", HP(n_ff_exp), LLM_KEY_U32, false, 0 },                \
        { "expert_shared_feed_forward_length", HP(n_ff_shexp), LLM_KEY_U32, false, 0 },       \
        { "expert_gating_func", HP(expert_gating), LLM_KEY_U32, false, 0 },                   \
        { "expert_weights_norm", HP(expert_weights_norm), LLM_KEY_U32, false, norm_default }, \
        { "expert_weights_scale", HP(expert_weights_scale), LLM_KEY_F32, false, 0 }

// ---- llama: TinyLlama, SmolLM, Llama 2/3, Mistral-style; Mixtral with expert_count > 0 ----
static const struct llm_tensor_spec LLAMA_TENSORS[] = {
    T_EMBD, T_OUT_NORM, T_OUTPUT, T_ROPE_FREQS, B_ATTN_NORM, B_Q, B_K, B_V, B_O, B_FFN_NORM, B_DENSE_FFN, B_MOE, T_END,
};

static const struct llm_key_spec LLAMA_KEYS[] = {
    K_MOE(false, 1),
    { NULL, 0, 0, false, 0 },
};

// ---- qwen2: Q/K/V biases, NeoX rope ----
static const struct llm_tensor_spec QWEN2_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    T_ROPE_FREQS,
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_GATE,
    B_UP,
    B_DOWN,
    B("attn_q.bias", bq, REQ | F32, 1, LLM_DIM_Q, 0),
    B("attn_k.bias", bk, REQ | F32, 1, LLM_DIM_K, 0),
    B("attn_v.bias", bv, REQ | F32, 1, LLM_DIM_V, 0),
    T_END,
};

// ---- qwen3: RMS norm of each Q and K head before rope, head size from metadata ----
// (Qwen3-Reranker files add cls.output: the lm head's "yes" and "no" rows, for RANK pooling)
static const struct llm_tensor_spec QWEN3_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    T_ROPE_FREQS,
    { "cls.output.weight", ML(cls_out), 0, 2, { LLM_DIM_EMBD, LLM_DIM_CLS_OUT } },
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_GATE,
    B_UP,
    B_DOWN,
    B_Q_NORM,
    B_K_NORM,
    T_END,
};

// ---- qwen3moe: qwen3's attention, every FFN a mixture of experts (softmax routing) ----
static const struct llm_tensor_spec QWEN3MOE_TENSORS[] = {
    T_EMBD, T_OUT_NORM, T_OUTPUT, T_ROPE_FREQS, B_ATTN_NORM, B_Q, B_K, B_V, B_O, B_FFN_NORM, B_Q_NORM, B_K_NORM, B_MOE, T_END,
};

static const struct llm_key_spec QWEN3MOE_KEYS[] = {
    K_MOE(true, 1),
    { NULL, 0, 0, false, 0 },
};

// Rows whose every layer is a mixture of experts need some.
static bool moe_finish(struct llama_hparams * hp) {
    if (hp->n_expert == 0) {
        LLAMA_LOG_ERROR("llama_model_load: expert_count must be > 0 for this architecture\n");
        return false;
    }
    return true;
}

// ---- qwen2moe: qwen2's attention (Q/K/V biases), experts plus a shared expert whose output a
// sigmoid gate scales; the chosen experts' softmax weights are not renormalised ----
static const struct llm_tensor_spec QWEN2MOE_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    T_ROPE_FREQS,
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_MOE,
    B("attn_q.bias", bq, REQ | F32, 1, LLM_DIM_Q, 0),
    B("attn_k.bias", bk, REQ | F32, 1, LLM_DIM_K, 0),
    B("attn_v.bias", bv, REQ | F32, 1, LLM_DIM_V, 0),
    B("ffn_gate_inp_shexp.weight", ffn_gate_inp_shexp, REQ, 1, LLM_DIM_EMBD, 0),
    B("ffn_gate_shexp.weight", ffn_gate_shexp, REQ, 2, LLM_DIM_EMBD, LLM_DIM_FF_SHEXP),
    B("ffn_up_shexp.weight", ffn_up_shexp, REQ, 2, LLM_DIM_EMBD, LLM_DIM_FF_SHEXP),
    B("ffn_down_shexp.weight", ffn_down_shexp, REQ, 2, LLM_DIM_FF_SHEXP, LLM_DIM_EMBD),
    T_END,
};

static const struct llm_key_spec QWEN2MOE_KEYS[] = {
    K_MOE(true, 0),
    { NULL, 0, 0, false, 0 },
};

// ---- olmoe (OLMoE-1B-7B): llama attention with an RMS norm over the whole Q and K vectors (not
// per head) before rope, NeoX rope, every FFN a mixture of experts whose softmax weights are not
// renormalised ----
static const struct llm_tensor_spec OLMOE_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    T_ROPE_FREQS,
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_MOE,
    B("attn_q_norm.weight", attn_q_norm, REQ | F32, 1, LLM_DIM_Q, 0),
    B("attn_k_norm.weight", attn_k_norm, REQ | F32, 1, LLM_DIM_K, 0),
    T_END,
};

// ---- granitemoe (IBM Granite 3.x MoE): llama attention and NORMAL rope, Mixtral-style experts
// (softmax over the chosen top-k), and four multipliers: embeddings times embedding_scale, QK^T
// times attention.scale (not 1/sqrt(head size)), each block's attention and FFN outputs times
// residual_scale, logits divided by logit_scale. GraniteMoeShared adds an ungated shared expert
// (expert_shared_feed_forward_length > 0) ----
static const struct llm_tensor_spec GRANITEMOE_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    T_ROPE_FREQS,
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_MOE,
    B("ffn_gate_shexp.weight", ffn_gate_shexp, LLM_T_IF_DIM, 2, LLM_DIM_EMBD, LLM_DIM_FF_SHEXP_KEY),
    B("ffn_up_shexp.weight", ffn_up_shexp, LLM_T_IF_DIM, 2, LLM_DIM_EMBD, LLM_DIM_FF_SHEXP_KEY),
    B("ffn_down_shexp.weight", ffn_down_shexp, LLM_T_IF_DIM, 2, LLM_DIM_FF_SHEXP_KEY, LLM_DIM_EMBD),
    T_END,
};

static const struct llm_key_spec GRANITEMOE_KEYS[] = {
    K_MOE(true, 1),
    { "attention.scale", HP(f_attn_scale), LLM_KEY_F32, false, 0 },
    { "embedding_scale", HP(f_embd_scale), LLM_KEY_F32, false, 0 },
    { "residual_scale", HP(f_residual_scale), LLM_KEY_F32, false, 0 },
    { "logit_scale", HP(f_logit_scale), LLM_KEY_F32, true, 0 },
    { NULL, 0, 0, false, 0 },
};

// The multipliers must be finite; logits are divided by logit_scale, so it must not be 0.
static bool granitemoe_finish(struct llama_hparams * hp) {
    const struct {
        const char * key;
        float v;
    } scales[] = { { "attention.scale", hp->f_attn_scale },
                   { "embedding_scale", hp->f_embd_scale },
                   { "residual_scale", hp->f_residual_scale },
                   { "logit_scale", hp->f_logit_scale } };
    for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) {
        if (!isfinite(scales[i].v) || (i == 3 && scales[i].v == 0.0f)) {
            LLAMA_LOG_ERROR("llama_model_load: granitemoe.%s = %g must be finite%s\n", scales[i].key, scales[i].v,
                            i == 3 ? " and not 0" : "");
            return false;
        }
    }
    return moe_finish(hp);
}

// ---- gpt-oss: attention with Q/K/V/O biases and per-head sinks, sliding-window and full layers
// alternating (even layers slide), every FFN experts with biases: router with a bias, softmax over
// the chosen top-k logits, the clamped SwiGLU (graph-moe.c). The FFN's norm is stored as
// post_attention_norm. ----
static const struct llm_tensor_spec GPT_OSS_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_MOE,
    B("attn_q.bias", bq, REQ | F32, 1, LLM_DIM_Q, 0),
    B("attn_k.bias", bk, REQ | F32, 1, LLM_DIM_K, 0),
    B("attn_v.bias", bv, REQ | F32, 1, LLM_DIM_V, 0),
    B("attn_output.bias", bo, REQ | F32, 1, LLM_DIM_EMBD, 0),
    B("attn_sinks.weight", attn_sinks, REQ | F32, 1, LLM_DIM_HEAD, 0),
    B("post_attention_norm.weight", ffn_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    B("ffn_gate_inp.bias", ffn_gate_inp_b, REQ | F32, 1, LLM_DIM_EXPERT, 0),
    B("ffn_gate_exps.bias", ffn_gate_exps_b, REQ | F32, 2, LLM_DIM_FF_EXP, LLM_DIM_EXPERT),
    B("ffn_up_exps.bias", ffn_up_exps_b, REQ | F32, 2, LLM_DIM_FF_EXP, LLM_DIM_EXPERT),
    B("ffn_down_exps.bias", ffn_down_exps_b, REQ | F32, 2, LLM_DIM_EMBD, LLM_DIM_EXPERT),
    T_END,
};

static const struct llm_key_spec GPT_OSS_KEYS[] = {
    K_MOE(true, 0),
    { "attention.sliding_window", HP(n_swa), LLM_KEY_U32, true, 0 },
    { NULL, 0, 0, false, 0 },
};

// gpt-oss's fixed choices (llama.cpp's graph for the architecture, transformers' GptOss).
static bool gpt_oss_finish(struct llama_hparams * hp) {
    if (!moe_finish(hp)) {
        return false;
    }
    hp->swa_period = 2;
    hp->expert_gating = LLM_EXPERT_GATING_SOFTMAX_WEIGHT;
    hp->expert_swiglu_limit = 7.0f;
    hp->expert_swiglu_alpha = 1.702f;
    return true;
}

// ---- gemma3: norms before and after attention and FFN, QK-norm, GeGLU, sliding window ----
static const struct llm_tensor_spec GEMMA3_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_GATE,
    B_UP,
    B_DOWN,
    B_Q_NORM,
    B_K_NORM,
    B("post_attention_norm.weight", attn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    B("post_ffw_norm.weight", ffn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    T_END,
};

static const struct llm_key_spec GEMMA3_KEYS[] = {
    { "attention.sliding_window", HP(n_swa), LLM_KEY_U32, true, 0 },
    { "attention.sliding_window_pattern", HP(swa_period), LLM_KEY_U32, false, 6 },
    { "rope.freq_base_swa", HP(rope_freq_base_swa), LLM_KEY_F32, false, 10000.0 },
    { NULL, 0, 0, false, 0 },
};

// Gemma 3 scales the embeddings by sqrt(n_embd) and the queries by 1/sqrt(head size) (its
// query_pre_attn_scalar; the 27B model, which differs, is not among those checked here).
static bool gemma3_finish(struct llama_hparams * hp) {
    hp->f_embd_scale = sqrtf((float) hp->n_embd);
    hp->f_attn_scale = 1.0f / sqrtf((float) hp->n_embd_head_k);
    return true;
}

// ---- gemma2: gemma3's blocks without QK-norm, soft-capped attention scores and logits ----
static const struct llm_tensor_spec GEMMA2_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_GATE,
    B_UP,
    B_DOWN,
    B("post_attention_norm.weight", attn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    B("post_ffw_norm.weight", ffn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    T_END,
};

// Optional, with the values of the released Gemma 2 models (as llama.cpp's loader defaults them).
static const struct llm_key_spec GEMMA2_KEYS[] = {
    { "attention.sliding_window", HP(n_swa), LLM_KEY_U32, false, 4096 },
    { "attn_logit_softcapping", HP(f_attn_softcap), LLM_KEY_F32, false, 50.0 },
    { "final_logit_softcapping", HP(f_final_softcap), LLM_KEY_F32, false, 30.0 },
    { NULL, 0, 0, false, 0 },
};

// Even layers slide (layer 0 first), odd ones are global. Queries are scaled by
// query_pre_attn_scalar^-1/2, which the GGUF does not store: the head size for Gemma 2 2B and
// 9B, n_embd / n_head for 27B (46 layers), the rule llama.cpp's loader applies.
static bool gemma2_finish(struct llama_hparams * hp) {
    if (!(hp->f_attn_softcap >= 0.0f) || !isfinite(hp->f_attn_softcap) || !(hp->f_final_softcap >= 0.0f) ||
        !isfinite(hp->f_final_softcap)) {
        LLAMA_LOG_ERROR("llama_model_load: gemma2.attn_logit_softcapping / final_logit_softcapping must be finite and >= 0\n");
        return false;
    }
    hp->swa_period = 2;
    hp->f_embd_scale = sqrtf((float) hp->n_embd);
    const float qs = hp->n_layer == 46 && hp->n_head > 0 ? (float) hp->n_embd / (float) hp->n_head : (float) hp->n_embd_head_k;
    hp->f_attn_scale = 1.0f / sqrtf(qs);
    return true;
}

// ---- gemma-embedding (EmbeddingGemma): gemma3's blocks attending both ways (sliding layers
// within the window on either side), then optional dense projections of the pooled vector ----
static const struct llm_tensor_spec GEMMA_EMB_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    { "dense_2.weight", ML(dense_2), 0, 2, { LLM_DIM_EMBD, LLM_DIM_DENSE_2_OUT } },
    { "dense_3.weight", ML(dense_3), 0, 2, { LLM_DIM_DENSE_3_IN, LLM_DIM_EMBD } },
    B_ATTN_NORM,
    B_Q,
    B_K,
    B_V,
    B_O,
    B_FFN_NORM,
    B_GATE,
    B_UP,
    B_DOWN,
    B_Q_NORM,
    B_K_NORM,
    B("post_attention_norm.weight", attn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    B("post_ffw_norm.weight", ffn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    T_END,
};

static const struct llm_key_spec GEMMA_EMB_KEYS[] = {
    { "attention.sliding_window", HP(n_swa), LLM_KEY_U32, true, 0 },
    { "attention.sliding_window_pattern", HP(swa_period), LLM_KEY_U32, false, 6 },
    { "rope.freq_base_swa", HP(rope_freq_base_swa), LLM_KEY_F32, false, 10000.0 },
    { "dense_2_feat_out", HP(n_dense_2_out), LLM_KEY_U32, false, 0 },
    { "dense_3_feat_in", HP(n_dense_3_in), LLM_KEY_U32, false, 0 },
    { NULL, 0, 0, false, 0 },
};

// Gemma 3's scales; no cache between calls and both-way attention, as llama.cpp runs it.
static bool gemma_emb_finish(struct llama_hparams * hp) {
    hp->encoder_only = true;
    hp->swa_symmetric = true;
    hp->causal_attn = false;
    return gemma3_finish(hp);
}

// ---- phi3: fused QKV and gate/up, LongRoPE factors, sliding window where set ----
static const struct llm_tensor_spec PHI3_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    { "rope_factors_long.weight", ML(rope_long), F32, 1, { LLM_DIM_ROT2 } },
    { "rope_factors_short.weight", ML(rope_short), F32, 1, { LLM_DIM_ROT2 } },
    B_ATTN_NORM,
    B("attn_qkv.weight", wqkv, REQ, 2, LLM_DIM_EMBD, LLM_DIM_QKV),
    B_O,
    B_FFN_NORM,
    B("ffn_up.weight", ffn_gate_up, REQ, 2, LLM_DIM_EMBD, LLM_DIM_FF2),
    B_DOWN,
    T_END,
};

static const struct llm_key_spec PHI3_KEYS[] = {
    { "attention.sliding_window", HP(n_swa), LLM_KEY_U32, false, 0 },
    { "rope.scaling.attn_factor", HP(rope_attn_factor), LLM_KEY_F32, false, 0 },
    { NULL, 0, 0, false, 0 },
};

// A window, when set, applies to every layer. LongRoPE's cos/sin magnitude, when the file does
// not state it: sqrt(1 + ln(s) / ln(n_ctx_orig)) for the context extension s = n_ctx_train /
// n_ctx_orig (1 without one), as Phi-3's reference implementation computes it.
static bool phi3_finish(struct llama_hparams * hp) {
    hp->swa_period = 0;
    if (hp->rope_attn_factor <= 0.0f) {
        const double s = hp->n_ctx_orig_yarn > 0 ? (double) hp->n_ctx_train / hp->n_ctx_orig_yarn : 1.0;
        hp->rope_attn_factor = s > 1.0 ? (float) sqrt(1.0 + log(s) / log((double) hp->n_ctx_orig_yarn)) : 1.0f;
    }
    return true;
}

// ---- qwen35: Qwen3.5 / 3.6 dense, Gated DeltaNet in 3 of 4 layers, gated attention in the 4th ----
// A layer holds the attention tensors or the DeltaNet ones (hp->recurrent_layers says which;
// graph-deltanet.c names a missing one). Norm weights are stored as 1 + w by the converters.
// The token mixers: gated attention or Gated DeltaNet, and the norms around them.
#define T_QWEN35_MIXERS                                                                                                    \
    B_ATTN_NORM, B("post_attention_norm.weight", ffn_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),                                 \
        B("attn_q.weight", wq, 0, 2, LLM_DIM_EMBD, LLM_DIM_Q2), B("attn_k.weight", wk, 0, 2, LLM_DIM_EMBD, LLM_DIM_K),     \
        B("attn_v.weight", wv, 0, 2, LLM_DIM_EMBD, LLM_DIM_V), B("attn_output.weight", wo, 0, 2, LLM_DIM_O, LLM_DIM_EMBD), \
        B("attn_q_norm.weight", attn_q_norm, F32, 1, LLM_DIM_HEAD_K, 0),                                                   \
        B("attn_k_norm.weight", attn_k_norm, F32, 1, LLM_DIM_HEAD_K, 0),                                                   \
        B("attn_qkv.weight", wqkv, 0, 2, LLM_DIM_EMBD, LLM_DIM_SSM_CONV_CH),                                               \
        B("attn_gate.weight", ssm_gate, 0, 2, LLM_DIM_EMBD, LLM_DIM_SSM_INNER),                                            \
        B("ssm_beta.weight", ssm_beta, 0, 2, LLM_DIM_EMBD, LLM_DIM_SSM_HEADS),                                             \
        B("ssm_alpha.weight", ssm_alpha, 0, 2, LLM_DIM_EMBD, LLM_DIM_SSM_HEADS),                                           \
        B("ssm_conv1d.weight", ssm_conv1d, F32_F16, 2, LLM_DIM_SSM_CONV_K, LLM_DIM_SSM_CONV_CH),                           \
        B("ssm_dt.bias", ssm_dt, F32, 1, LLM_DIM_SSM_HEADS, 0), B("ssm_a", ssm_a, F32, 1, LLM_DIM_SSM_HEADS, 0),           \
        B("ssm_norm.weight", ssm_norm, F32, 1, LLM_DIM_SSM_STATE, 0),                                                      \
        B("ssm_out.weight", ssm_out, 0, 2, LLM_DIM_SSM_INNER, LLM_DIM_EMBD)

static const struct llm_tensor_spec QWEN35_TENSORS[] = {
    T_EMBD, T_OUT_NORM, T_OUTPUT, B_GATE, B_UP, B_DOWN, T_QWEN35_MIXERS, T_END,
};

#define K_QWEN35                                                                                                              \
    { "ssm.conv_kernel", HP(ssm_d_conv), LLM_KEY_U32, true, 0 }, { "ssm.inner_size", HP(ssm_d_inner), LLM_KEY_U32, true, 0 }, \
        { "ssm.state_size", HP(ssm_d_state), LLM_KEY_U32, true, 0 },                                                          \
        { "ssm.time_step_rank", HP(ssm_dt_rank), LLM_KEY_U32, true, 0 },                                                      \
        { "ssm.group_count", HP(ssm_n_group), LLM_KEY_U32, true, 0 },                                                         \
        { "full_attention_interval", HP(full_attn_interval), LLM_KEY_U32, false, 4 },                                         \
        { "nextn_predict_layers", HP(n_nextn), LLM_KEY_U32, false, 0 }

static const struct llm_key_spec QWEN35_KEYS[] = {
    K_QWEN35,
    { NULL, 0, 0, false, 0 },
};

// ---- qwen35moe: the same mixers, every FFN routed experts plus a sigmoid-gated shared expert ----
static const struct llm_tensor_spec QWEN35MOE_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    T_QWEN35_MIXERS,
    B_MOE,
    B("ffn_gate_inp_shexp.weight", ffn_gate_inp_shexp, REQ, 1, LLM_DIM_EMBD, 0),
    B("ffn_gate_shexp.weight", ffn_gate_shexp, REQ, 2, LLM_DIM_EMBD, LLM_DIM_FF_SHEXP),
    B("ffn_up_shexp.weight", ffn_up_shexp, REQ, 2, LLM_DIM_EMBD, LLM_DIM_FF_SHEXP),
    B("ffn_down_shexp.weight", ffn_down_shexp, REQ, 2, LLM_DIM_FF_SHEXP, LLM_DIM_EMBD),
    T_END,
};

static const struct llm_key_spec QWEN35MOE_KEYS[] = {
    K_QWEN35,
    K_MOE(true, 1),
    { NULL, 0, 0, false, 0 },
};

// The multi-token-prediction blocks after the trunk are not run (their tensors load as unused);
// every full_attention_interval-th layer attends, the others are recurrent (a file's
// attention.recurrent_layers array, read by model.c, overrides this).
static bool qwen35_finish(struct llama_hparams * hp) {
    if (hp->ssm_d_state == 0 || hp->ssm_n_group == 0 || hp->ssm_dt_rank % hp->ssm_n_group != 0 ||
        hp->ssm_d_inner != hp->ssm_d_state * hp->ssm_dt_rank || hp->ssm_d_conv < 1 || hp->full_attn_interval == 0) {
        LLAMA_LOG_ERROR("llama_model_load: qwen35 needs ssm.state_size > 0, ssm.time_step_rank a multiple of "
                        "ssm.group_count, ssm.inner_size = state_size * time_step_rank, ssm.conv_kernel >= 1 and "
                        "full_attention_interval >= 1\n");
        return false;
    }
    if (hp->n_nextn >= hp->n_layer || hp->n_layer - hp->n_nextn > LLAMA_MAX_LAYERS) {
        LLAMA_LOG_ERROR("llama_model_load: qwen35.nextn_predict_layers = %u leaves no trunk of at most %d layers\n", hp->n_nextn,
                        LLAMA_MAX_LAYERS);
        return false;
    }
    if (hp->n_nextn > 0) {
        LLAMA_LOG_INFO("llama_model_load: %u multi-token-prediction block(s) are not used\n", hp->n_nextn);
        hp->n_layer -= hp->n_nextn;
    }
    hp->attn_gated = true;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        hp->recurrent_layers[il] = (il + 1) % hp->full_attn_interval != 0;
    }
    return true;
}

// llama.cpp's converter writes no feed_forward_length for these (no dense FFN): the experts' width.
static bool qwen35moe_finish(struct llama_hparams * hp) {
    if (hp->n_expert == 0) {
        LLAMA_LOG_ERROR("llama_model_load: qwen35moe.expert_count must be > 0\n");
        return false;
    }
    if (hp->n_ff == 0) {
        hp->n_ff = hp->n_ff_exp;
        for (uint32_t il = 0; il < hp->n_layer && il < LLAMA_MAX_LAYERS; il++) {
            hp->n_ff_l[il] = hp->n_ff_exp; // the per-layer widths (model-layers.c) follow
        }
    }
    return qwen35_finish(hp);
}

// ---- gemma4: gemma3's blocks with per-layer embeddings (PLE), layers sharing earlier layers'
// KV, K = V projections, sliding and global layers of different head sizes (model-layers.c),
// V-norm, a learned scale per block ----
static const struct llm_tensor_spec GEMMA4_TENSORS[] = {
    T_EMBD,
    T_OUT_NORM,
    T_OUTPUT,
    T_ROPE_FREQS,
    { "per_layer_token_embd.weight", ML(ple_tok_embd), LLM_T_IF_DIM, 2, { LLM_DIM_PLE_ALL, LLM_DIM_VOCAB } },
    { "per_layer_model_proj.weight", ML(ple_model_proj), LLM_T_IF_DIM, 2, { LLM_DIM_EMBD, LLM_DIM_PLE_ALL } },
    { "per_layer_proj_norm.weight", ML(ple_proj_norm), LLM_T_IF_DIM | F32, 1, { LLM_DIM_PLE } },
    B_ATTN_NORM,
    B_Q,
    B_O,
    B_FFN_NORM,
    B_GATE,
    B_UP,
    B_DOWN,
    B_Q_NORM,
    B("attn_k.weight", wk, LLM_T_KV, 2, LLM_DIM_EMBD, LLM_DIM_K),
    B("attn_v.weight", wv, 0, 2, LLM_DIM_EMBD, LLM_DIM_V), // absent: V = K
    B("attn_k_norm.weight", attn_k_norm, LLM_T_KV | F32, 1, LLM_DIM_HEAD_K, 0),
    B("post_attention_norm.weight", attn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    B("post_ffw_norm.weight", ffn_post_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),
    B("layer_output_scale.weight", out_scale, F32, 1, LLM_DIM_NONE, 0),
    B("inp_gate.weight", ple_gate, LLM_T_IF_DIM, 2, LLM_DIM_EMBD, LLM_DIM_PLE),
    B("proj.weight", ple_proj, LLM_T_IF_DIM, 2, LLM_DIM_PLE, LLM_DIM_EMBD),
    B("post_norm.weight", ple_post_norm, F32, 1, LLM_DIM_EMBD, 0),
    // 26B-A4B: experts beside the dense MLP (expert_count > 0)
    B("ffn_gate_inp.weight", ffn_gate_inp, LLM_T_MOE, 2, LLM_DIM_EMBD, LLM_DIM_EXPERT),
    B("ffn_gate_inp.scale", ffn_gate_inp_s, LLM_T_MOE | F32, 1, LLM_DIM_EMBD, 0),
    B("ffn_down_exps.scale", ffn_down_exps_s, LLM_T_MOE | F32, 1, LLM_DIM_EXPERT, 0),
    B("pre_ffw_norm_2.weight", ffn_pre_norm_2, LLM_T_MOE | F32, 1, LLM_DIM_EMBD, 0),
    B("post_ffw_norm_1.weight", ffn_post_norm_1, LLM_T_MOE | F32, 1, LLM_DIM_EMBD, 0),
    B("post_ffw_norm_2.weight", ffn_post_norm_2, LLM_T_MOE | F32, 1, LLM_DIM_EMBD, 0),
    B3("ffn_gate_up_exps.weight", ffn_gate_up_exps, LLM_T_MOE, LLM_DIM_EMBD, LLM_DIM_FF_EXP2, LLM_DIM_EXPERT),
    B3("ffn_down_exps.weight", ffn_down_exps, LLM_T_MOE, LLM_DIM_FF_EXP, LLM_DIM_EMBD, LLM_DIM_EXPERT),
    T_END,
};

static const struct llm_key_spec GEMMA4_KEYS[] = {
    { "attention.sliding_window", HP(n_swa), LLM_KEY_U32, true, 0 },
    { "rope.freq_base_swa", HP(rope_freq_base_swa), LLM_KEY_F32, false, 10000.0 },
    { "attention.key_length_swa", HP(n_embd_head_k_swa), LLM_KEY_U32, false, 0 },
    { "attention.value_length_swa", HP(n_embd_head_v_swa), LLM_KEY_U32, false, 0 },
    { "rope.dimension_count_swa", HP(n_rot_swa), LLM_KEY_U32, false, 0 },
    { "attention.shared_kv_layers", HP(n_kv_shared), LLM_KEY_U32, false, 0 },
    { "embedding_length_per_layer_input", HP(n_embd_per_layer), LLM_KEY_U32, false, 0 },
    { "final_logit_softcapping", HP(f_final_softcap), LLM_KEY_F32, false, 0 },
    { "expert_count", HP(n_expert), LLM_KEY_U32, false, 0 },
    { "expert_used_count", HP(n_expert_used), LLM_KEY_U32, false, 0 },
    { "expert_feed_forward_length", HP(n_ff_exp), LLM_KEY_U32, false, 0 },
    { NULL, 0, 0, false, 0 },
};

// Embeddings scaled by sqrt(n_embd); no query scale (the Q/K norms set the magnitude); V heads
// RMS-normed. Which layers slide comes from the file's per-layer array (model-layers.c); the
// 5-of-6 pattern of transformers' default config stands in when it has none. With experts the
// router's softmax weights of the chosen ones are renormalized (models/gemma4.c).
static bool gemma4_finish(struct llama_hparams * hp) {
    if (!(hp->f_final_softcap >= 0.0f) || !isfinite(hp->f_final_softcap)) {
        LLAMA_LOG_ERROR("llama_model_load: gemma4.final_logit_softcapping must be finite and >= 0\n");
        return false;
    }
    hp->swa_period = 6;
    hp->f_embd_scale = sqrtf((float) hp->n_embd);
    hp->f_attn_scale = 1.0f;
    hp->attn_v_norm = true;
    return true;
}

// ---- bert: learned positions and token types, post-norm LayerNorms, GELU; bidirectional ----
#define T_ENC_INPUT                                                                       \
    { "token_types.weight", ML(type_embd), 0, 2, { LLM_DIM_EMBD, LLM_DIM_TOKEN_TYPES } }, \
        { "token_embd_norm.weight", ML(tok_norm), REQ | F32, 1, { LLM_DIM_EMBD } }, {     \
        "token_embd_norm.bias", ML(tok_norm_b), REQ | F32, 1, { LLM_DIM_EMBD }            \
    }
#define B_POST_NORMS                                                                  \
    B("attn_output_norm.weight", attn_out_norm, REQ | F32, 1, LLM_DIM_EMBD, 0),       \
        B("attn_output_norm.bias", attn_out_norm_b, REQ | F32, 1, LLM_DIM_EMBD, 0),   \
        B("layer_output_norm.weight", layer_out_norm, REQ | F32, 1, LLM_DIM_EMBD, 0), \
        B("layer_output_norm.bias", layer_out_norm_b, REQ | F32, 1, LLM_DIM_EMBD, 0)

static const struct llm_tensor_spec BERT_TENSORS[] = {
    T_EMBD,
    T_ENC_INPUT,
    { "position_embd.weight", ML(pos_embd), REQ, 2, { LLM_DIM_EMBD, LLM_DIM_CTX_TRAIN } },
    // classification head of rerankers (RANK pooling)
    { "cls.weight", ML(cls), 0, 2, { LLM_DIM_EMBD, LLM_DIM_EMBD } },
    { "cls.bias", ML(cls_b), F32, 1, { LLM_DIM_EMBD } },
    { "cls.output.weight", ML(cls_out), 0, 2, { LLM_DIM_EMBD, LLM_DIM_CLS_OUT } },
    { "cls.output.bias", ML(cls_out_b), F32, 1, { LLM_DIM_CLS_OUT } },
    B_Q,
    B_K,
    B_V,
    B_O,
    B("attn_q.bias", bq, F32, 1, LLM_DIM_Q, 0),
    B("attn_k.bias", bk, F32, 1, LLM_DIM_K, 0),
    B("attn_v.bias", bv, F32, 1, LLM_DIM_V, 0),
    B("attn_output.bias", bo, F32, 1, LLM_DIM_EMBD, 0),
    B_UP,
    B_DOWN,
    B("ffn_up.bias", ffn_up_b, F32, 1, LLM_DIM_FF, 0),
    B("ffn_down.bias", ffn_down_b, F32, 1, LLM_DIM_EMBD, 0),
    B_POST_NORMS,
    T_END,
};

// ---- nomic-bert: bert's post-norm blocks with rotary positions, fused QKV, SwiGLU ----
static const struct llm_tensor_spec NOMIC_BERT_TENSORS[] = {
    T_EMBD,       T_ENC_INPUT, B("attn_qkv.weight", wqkv, REQ, 2, LLM_DIM_EMBD, LLM_DIM_QKV), B_O, B_GATE, B_UP, B_DOWN,
    B_POST_NORMS, T_END,
};

// Encoders keep no cache between calls and attend both ways; LayerNorm needs its epsilon.
static bool bert_finish(struct llama_hparams * hp) {
    if (!(hp->f_norm_eps > 0.0f) || !isfinite(hp->f_norm_eps)) {
        LLAMA_LOG_ERROR("llama_model_load: attention.layer_norm_epsilon must be given and > 0 for an encoder\n");
        return false;
    }
    hp->encoder_only = true;
    hp->causal_attn = false;
    return true;
}

// bert: learned absolute positions, no rotary ones.
static bool bert_learned_pos_finish(struct llama_hparams * hp) {
    hp->n_rot = 0;
    return bert_finish(hp);
}

static const struct llama_arch_info ARCHS[] = {
    { "llama", LLM_ROPE_NORMAL, LLAMA_KEYS, LLAMA_TENSORS, NULL, llm_build_llama },
    { "qwen2", LLM_ROPE_NEOX, NULL, QWEN2_TENSORS, NULL, llm_build_llama },
    { "qwen3", LLM_ROPE_NEOX, NULL, QWEN3_TENSORS, NULL, llm_build_llama },
    { "gemma3", LLM_ROPE_NEOX, GEMMA3_KEYS, GEMMA3_TENSORS, gemma3_finish, llm_build_gemma3 },
    { "phi3", LLM_ROPE_NEOX, PHI3_KEYS, PHI3_TENSORS, phi3_finish, llm_build_llama },
    { "gemma2", LLM_ROPE_NEOX, GEMMA2_KEYS, GEMMA2_TENSORS, gemma2_finish, llm_build_gemma3 },
    { "qwen3moe", LLM_ROPE_NEOX, QWEN3MOE_KEYS, QWEN3MOE_TENSORS, moe_finish, llm_build_llama },
    { "qwen2moe", LLM_ROPE_NEOX, QWEN2MOE_KEYS, QWEN2MOE_TENSORS, moe_finish, llm_build_llama },
    { "olmoe", LLM_ROPE_NEOX, QWEN2MOE_KEYS, OLMOE_TENSORS, moe_finish, llm_build_llama },
    { "qwen35", LLM_ROPE_NEOX, QWEN35_KEYS, QWEN35_TENSORS, qwen35_finish, llm_build_llama },
    { "qwen35moe", LLM_ROPE_NEOX, QWEN35MOE_KEYS, QWEN35MOE_TENSORS, qwen35moe_finish, llm_build_llama },
    { "gemma4", LLM_ROPE_NEOX, GEMMA4_KEYS, GEMMA4_TENSORS, gemma4_finish, llm_build_gemma4 },
    { "gemma-embedding", LLM_ROPE_NEOX, GEMMA_EMB_KEYS, GEMMA_EMB_TENSORS, gemma_emb_finish, llm_build_gemma3 },
    { "bert", LLM_ROPE_NEOX, NULL, BERT_TENSORS, bert_learned_pos_finish, llm_build_bert },
    { "nomic-bert", LLM_ROPE_NEOX, NULL, NOMIC_BERT_TENSORS, bert_finish, llm_build_bert },
    { "gpt-oss", LLM_ROPE_NEOX, GPT_OSS_KEYS, GPT_OSS_TENSORS, gpt_oss_finish, llm_build_llama },
    { "granitemoe", LLM_ROPE_NORMAL, GRANITEMOE_KEYS, GRANITEMOE_TENSORS, granitemoe_finish, llm_build_llama },
};

const struct llama_arch_info * llama_arch_find(const char * name) {
    if (name == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof(ARCHS) / sizeof(ARCHS[0]); i++) {
        if (strcmp(ARCHS[i].name, name) == 0) {
            return &ARCHS[i];
        }
    }
    return NULL;
}

const char * llama_arch_list(char * buf, size_t size) {
    size_t off = 0;
    if (size > 0) {
        buf[0] = '\0';
    }
    for (size_t i = 0; i < sizeof(ARCHS) / sizeof(ARCHS[0]) && off < size; i++) {
        off += (size_t) snprintf(buf + off, size - off, "%s%s", i ? ", " : "", ARCHS[i].name);
    }
    return buf;
}
