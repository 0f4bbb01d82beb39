// llama-model.h — internal layout of a loaded model (model.c) shared with the context, the
// graph builder, the KV cache and the tokenizer / sampler / state code. Not installed.
//
// A model owns: its GGUF metadata (kv_overrides applied), its vocabulary, a ggml context of
// weight-tensor headers whose data points into the memory-mapped file (or into one buffer the
// file was read into), and the hyperparameters below. Contexts never own model memory, so a
// context freed after its model is still freed safely.
#ifndef LLAMA_MODEL_H
#define LLAMA_MODEL_H

#include "llama-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama-arch.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

// Most layers a model may declare (sanity bound on llama.block_count).
#define LLAMA_MAX_LAYERS 1024

// Hyperparameters of a model, from the <arch>.* GGUF keys (the names below say llama.*; every
// architecture uses the same suffixes) and the architecture's own (arch.c).
struct llama_hparams {
    uint32_t n_ctx_train;     // llama.context_length
    uint32_t n_embd;          // llama.embedding_length
    uint32_t n_layer;         // llama.block_count
    uint32_t n_ff;            // llama.feed_forward_length
    uint32_t n_head;          // llama.attention.head_count
    uint32_t n_head_kv;       // llama.attention.head_count_kv (default n_head)
    uint32_t n_embd_head_k;   // llama.attention.key_length (default n_embd / n_head)
    uint32_t n_embd_head_v;   // llama.attention.value_length (default n_embd / n_head)
    uint32_t n_rot;           // llama.rope.dimension_count (default n_embd_head_k)
    uint32_t n_vocab;         // rows of token_embd (== vocab size)
    float f_norm_rms_eps;  // llama.attention.layer_norm_rms_epsilon
    float rope_freq_base_train;   // llama.rope.freq_base (default 10000)
    float rope_freq_scale_train;  // 1 / llama.rope.scaling.factor (default 1)
    enum llama_rope_scaling_type rope_scaling_type_train; // llama.rope.scaling.type
    uint32_t n_ctx_orig_yarn; // llama.rope.scaling.original_context_length (default n_ctx_train)
    // architecture-specific (arch.c); 0 means "not used" unless said otherwise
    uint32_t n_swa;           // attention.sliding_window: tokens a sliding-window layer sees
    uint32_t swa_period;      // attention.sliding_window_pattern: every swa_period-th layer is
                              // global, the others slide (0: all layers slide when n_swa > 0)
    float rope_freq_base_swa;  // rope.freq_base_swa: base of the sliding-window layers
    float rope_attn_factor;    // rope.scaling.attn_factor: cos/sin magnitude (LongRoPE)
    float f_attn_scale;    // softmax scale of QK^T (0: 1/sqrt(n_embd_head_k))
    float f_embd_scale;    // token embeddings multiplied by this (0: not scaled)
    float f_attn_softcap;  // attn_logit_softcapping: scaled QK^T scores become c*tanh(s/c) (0: none)
    float f_final_softcap; // final_logit_softcapping: logits become c*tanh(x/c) (0: none)
    float f_residual_scale; // residual_scale: each block's attention and FFN outputs times this (0: not scaled)
    float f_logit_scale;   // logit_scale: logits divided by this (0: not scaled)
    // mixture of experts (0 experts: a dense FFN)
    uint32_t n_expert;        // expert_count
    uint32_t n_expert_used;   // expert_used_count: experts each token goes through (1..n_expert)
    uint32_t n_ff_exp;        // expert_feed_forward_length (0: n_ff)
    uint32_t n_ff_shexp;      // expert_shared_feed_forward_length (0: n_ff_exp)
    uint32_t expert_gating;   // expert_gating_func: enum llm_expert_gating (0: softmax)
    uint32_t expert_weights_norm; // expert_weights_norm: the chosen experts' weights are divided by their sum
    float expert_weights_scale; // expert_weights_scale: the weights are multiplied by it (0: not)
    // encoders and embedders (model.c reads these for every architecture, as llama.cpp does)
    float f_norm_eps;      // attention.layer_norm_epsilon: LayerNorm's (0: none given)
    uint32_t pooling_type;    // pooling_type: the enum llama_pooling_type the file asks for (0: none)
    bool causal_attn;     // attention.causal (default true)
    bool encoder_only;    // no KV cache kept between calls: llama_decode runs llama_encode (set by finish)
    bool swa_symmetric;   // sliding-window layers see |p - p'| <= n_swa / 2 both ways (gemma-embedding)
    uint32_t n_token_types;   // tokenizer.ggml.token_type_count: rows of token_types
    uint32_t n_cls_out;       // classifier.output_labels count: rows of cls.output (default 1)
    uint32_t n_dense_2_out;   // dense_2_feat_out: rows of dense_2 (gemma-embedding's projections)
    uint32_t n_dense_3_in;    // dense_3_feat_in: columns of dense_3
    float expert_swiglu_limit;  // > 0: gpt-oss's clamped SwiGLU, (clamp(up) + 1) * g * sigmoid(alpha g), g = min(gate, limit)
    float expert_swiglu_alpha;  // its alpha
    bool swa_layers[LLAMA_MAX_LAYERS]; // layer uses the sliding window (derived at load)
    // recurrent layers (state-space / linear attention: ssm.* keys, Gated DeltaNet names)
    uint32_t ssm_d_conv;      // ssm.conv_kernel: taps of the causal convolution
    uint32_t ssm_d_inner;     // ssm.inner_size: value width (value heads x head size)
    uint32_t ssm_d_state;     // ssm.state_size: head size of the recurrence (keys and values)
    uint32_t ssm_dt_rank;     // ssm.time_step_rank: value heads
    uint32_t ssm_n_group;     // ssm.group_count: key heads
    uint32_t full_attn_interval; // full_attention_interval: every n-th layer attends (default 4)
    uint32_t n_nextn;         // nextn_predict_layers: multi-token-prediction blocks after the trunk (not run)
    bool attn_gated;      // attention output times sigmoid(gate), gate projected with Q (Q rows doubled)
    bool recurrent_layers[LLAMA_MAX_LAYERS]; // layer carries recurrent state, no KV (derived at load)
    // Per-layer shape (model-layers.c): the shared values above, or the keys' per-layer arrays
    // (head_count_kv, feed_forward_length), or the sliding layers' own head size (key_length_swa).
    uint32_t n_embd_head_k_swa, n_embd_head_v_swa, n_rot_swa; // attention.key_length_swa, ... (0: as the others)
    uint32_t n_kv_shared;     // attention.shared_kv_layers: the last ones attend over earlier layers' KV
    uint32_t n_embd_per_layer;// embedding_length_per_layer_input: per-layer embeddings (gemma4 PLE; 0: none)
    bool attn_v_norm;     // V heads are RMS-normed without a weight (gemma4)
    uint32_t n_head_kv_l[LLAMA_MAX_LAYERS];
    uint32_t n_embd_head_k_l[LLAMA_MAX_LAYERS];
    uint32_t n_embd_head_v_l[LLAMA_MAX_LAYERS];
    uint32_t n_ff_l[LLAMA_MAX_LAYERS];
    uint32_t n_rot_l[LLAMA_MAX_LAYERS];
    uint16_t kv_layer[LLAMA_MAX_LAYERS]; // layer whose K/V layer il attends over (il: its own)
};

// Key/value width of one token in one layer (all KV heads).
static inline uint32_t llama_hparams_n_embd_k_gqa(const struct llama_hparams * hp) { return hp->n_embd_head_k * hp->n_head_kv; }
static inline uint32_t llama_hparams_n_embd_v_gqa(const struct llama_hparams * hp) { return hp->n_embd_head_v * hp->n_head_kv; }

// Per-layer key/value width (all KV heads) of layer il.
static inline uint32_t llama_hparams_n_embd_k_gqa_l(const struct llama_hparams * hp, uint32_t il) {
    return hp->n_embd_head_k_l[il] * hp->n_head_kv_l[il];
}
static inline uint32_t llama_hparams_n_embd_v_gqa_l(const struct llama_hparams * hp, uint32_t il) {
    return hp->n_embd_head_v_l[il] * hp->n_head_kv_l[il];
}

// Weights of one transformer block (views into the model file).
struct llama_layer {
    struct ggml_tensor * attn_norm;  // [n_embd]
    struct ggml_tensor * wq;         // [n_embd, n_embd_head_k * n_head]
    struct ggml_tensor * wk;         // [n_embd, n_embd_k_gqa]
    struct ggml_tensor * wv;         // [n_embd, n_embd_v_gqa]
    struct ggml_tensor * wo;         // [n_embd_head_v * n_head, n_embd]
    struct ggml_tensor * ffn_norm;   // [n_embd]
    struct ggml_tensor * ffn_gate;   // [n_embd, n_ff]
    struct ggml_tensor * ffn_up;     // [n_embd, n_ff]
    struct ggml_tensor * ffn_down;   // [n_ff, n_embd]
    struct ggml_tensor * wqkv;       // wq, wk, wv fused: stored so (phi3) or repacked (model-repack.c), or NULL
    struct ggml_tensor * ffn_gate_up;// ffn_gate, ffn_up fused ([n_embd, 2 n_ff], gate first), or NULL
    // optional, by architecture (NULL when absent)
    struct ggml_tensor *bq, *bk, *bv;     // Q/K/V biases (qwen2)
    struct ggml_tensor * attn_q_norm;        // [n_embd_head_k] RMS norm of each Q head (qwen3, gemma3)
    struct ggml_tensor * attn_k_norm;        // [n_embd_head_k] ... of each K head
    struct ggml_tensor * attn_post_norm;     // [n_embd] norm of the attention output (gemma3)
    struct ggml_tensor * ffn_post_norm;      // [n_embd] norm of the FFN output (gemma3)
    // mixture of experts (graph-moe.c); NULL in dense layers
    struct ggml_tensor * ffn_gate_inp;       // [n_embd, n_expert] router
    struct ggml_tensor * ffn_gate_exps;      // [n_embd, n_ff_exp, n_expert]
    struct ggml_tensor * ffn_up_exps;        // [n_embd, n_ff_exp, n_expert]
    struct ggml_tensor * ffn_down_exps;      // [n_ff_exp, n_embd, n_expert]
    struct ggml_tensor * ffn_gate_inp_shexp; // [n_embd] sigmoid gate of the shared expert, or NULL
    struct ggml_tensor * ffn_gate_shexp;     // [n_embd, n_ff_shexp] shared expert, or NULL
    struct ggml_tensor * ffn_up_shexp;       // [n_embd, n_ff_shexp]
    struct ggml_tensor * ffn_down_shexp;     // [n_ff_shexp, n_embd]
    // Gated DeltaNet layers (qwen35): in-projections (wqkv: the convolved q, k, v), then
    struct ggml_tensor * ssm_gate;           // [n_embd, d_inner] z: gate of the output norm
    struct ggml_tensor * ssm_beta;           // [n_embd, dt_rank] b: write strength (sigmoid)
    struct ggml_tensor * ssm_alpha;          // [n_embd, dt_rank] a: decay input
    struct ggml_tensor * ssm_conv1d;         // [d_conv, conv channels] depthwise convolution
    struct ggml_tensor * ssm_dt;             // [dt_rank] decay bias
    struct ggml_tensor * ssm_a;              // [dt_rank] -exp(A_log)
    struct ggml_tensor * ssm_norm;           // [d_state] gated RMS norm of the output
    struct ggml_tensor * ssm_out;            // [d_inner, n_embd]
    struct ggml_tensor * ple_gate;           // [n_embd, n_embd_per_layer] per-layer embedding gate (gemma4)
    struct ggml_tensor * ple_proj;           // [n_embd_per_layer, n_embd] its projection back
    struct ggml_tensor * ple_post_norm;      // [n_embd] norm of that projection
    struct ggml_tensor * out_scale;          // [1] the block's output times this (gemma4 layer_scalar)
    // gemma4's experts beside its dense MLP (models/gemma4.c); NULL elsewhere
    struct ggml_tensor * ffn_gate_inp_s;     // [n_embd] router input scale
    struct ggml_tensor * ffn_gate_up_exps;   // [n_embd, 2 n_ff_exp, n_expert] gate rows, then up rows
    struct ggml_tensor * ffn_down_exps_s;    // [n_expert] per-expert output scale
    struct ggml_tensor * ffn_pre_norm_2;     // [n_embd] norm of the experts' input
    struct ggml_tensor * ffn_post_norm_1;    // [n_embd] norm of the dense MLP's output
    struct ggml_tensor * ffn_post_norm_2;    // [n_embd] norm of the experts' output
    // post-norm encoders (bert, nomic-bert): LayerNorms with biases after each residual add
    struct ggml_tensor * bo;                 // [n_embd] attention output bias
    struct ggml_tensor *attn_out_norm, *attn_out_norm_b;   // [n_embd] after attention + residual
    struct ggml_tensor *layer_out_norm, *layer_out_norm_b; // [n_embd] after FFN + residual
    struct ggml_tensor * ffn_up_b;           // [n_ff] FFN biases
    struct ggml_tensor * ffn_down_b;         // [n_embd]
    // gpt-oss (NULL elsewhere; bo above too): attention sinks, router and expert biases
    struct ggml_tensor * attn_sinks;         // [n_head] a logit per head joining the softmax denominator
    struct ggml_tensor * ffn_gate_inp_b;     // [n_expert]
    struct ggml_tensor * ffn_gate_exps_b;    // [n_ff_exp, n_expert]
    struct ggml_tensor * ffn_up_exps_b;      // [n_ff_exp, n_expert]
    struct ggml_tensor * ffn_down_exps_b;    // [n_embd, n_expert]
};

struct llama_model {
    uint32_t magic;                  // LLAMA_MAGIC_MODEL; LLAMA_MAGIC_DEAD once freed (first field)
    struct llama_vocab * vocab;      // owned
    struct llama_hparams hparams;
    char arch[64];                   // general.architecture
    const struct llama_arch_info * arch_info; // its table row (NULL for an unknown one, vocab_only)
    enum llama_ftype ftype;          // general.file_type, or guessed (| LLAMA_FTYPE_GUESSED)
    struct gguf_context * gguf;      // metadata, kv_overrides applied (owned)
    struct gguf_mmap * map;          // file mapping / read-in copy holding the weights (owned)
    bool mlocked;                    // map's pages are locked (unlocked on free)
    struct ggml_context * ctx_w;     // weight tensor headers (no data of their own)
    struct ggml_tensor * tok_embd;   // [n_embd, n_vocab]
    struct ggml_tensor * output_norm;// [n_embd]
    struct ggml_tensor * output;     // [n_embd, n_vocab]; == tok_embd when tied
    struct llama_layer * layers;     // [n_layer]
    struct ggml_tensor * rope_freqs; // [n_rot/2] frequency divisors, or NULL (rope_freqs.weight)
    struct ggml_tensor * rope_long;  // [n_rot/2] LongRoPE divisors past n_ctx_orig_yarn, or NULL
    struct ggml_tensor * rope_short; // [n_rot/2] LongRoPE divisors within it, or NULL
    struct ggml_tensor * ple_tok_embd;  // [n_embd_per_layer * n_layer, n_vocab] per-layer token embeddings, or NULL
    struct ggml_tensor * ple_model_proj;// [n_embd, n_embd_per_layer * n_layer] their hidden-state part
    struct ggml_tensor * ple_proj_norm; // [n_embd_per_layer] its norm
    // encoders (NULL when absent): input embeddings beside the tokens' and the classifier head
    struct ggml_tensor * type_embd;  // [n_embd, n_token_types] token_types (type 0 is added)
    struct ggml_tensor * pos_embd;   // [n_embd, n_ctx_train] learned absolute positions
    struct ggml_tensor *tok_norm, *tok_norm_b; // [n_embd] LayerNorm of the summed input embeddings
    struct ggml_tensor *cls, *cls_b;           // [n_embd, n_embd], [n_embd] RANK pooling: dense + tanh
    struct ggml_tensor *cls_out, *cls_out_b;   // [n_embd, n_cls_out], [n_cls_out] RANK scores
    struct ggml_tensor *dense_2, *dense_3;     // [n_embd, n_dense_2_out], [n_dense_3_in, n_embd] after pooling
    struct ggml_tensor ** repack_ts; // the matmul weights offered to the CPU repacker (owned)
    int n_repack;
    ggml_backend_buffer_t buf_host;  // the mapped file as a CPU buffer (owned; the map is not)
    ggml_backend_buffer_t buf_dev;   // offloaded weights on dev, or NULL (owned)
    ggml_backend_buffer_t buf_repack;// repacked CPU copies (CPU_REPACK), or NULL (owned)
    struct ggml_context * ctx_dev;   // header of a tied output head's device copy, or NULL
    ggml_backend_dev_t dev;          // device of the offloaded blocks, or NULL (CPU only)
    uint32_t i_layer_dev;            // first offloaded block (n_layer: none)
    bool output_dev;                 // the output head (norm + matrix) is on dev
    struct ggml_context * ctx_fused; // headers of the fused weights (layers' wqkv, ffn_gate_up)
    int64_t * meta_ids;              // GGUF key ids of the non-array metadata (what meta_* list)
    int32_t n_meta;
    uint64_t n_params;               // elements of all tensors in the file
    uint64_t n_bytes;                // bytes of all tensors in the file
    int64_t t_load_us;               // load time
    int64_t t_start_us;              // when loading began
    bool vocab_only;
    struct llama_adapter_lora ** loras; // adapters loaded for this model and not yet freed (owned)
    int32_t n_loras;
};

// ---- model.c ----

// Metadata value id of g as llama.cpp prints it (ints decimal, floats %f, bools true/false,
// strings as stored; arrays: -1) into buf; returns the length as snprintf does.
int32_t llama_gguf_kv_to_str(const struct gguf_context * g, int64_t id, char * buf, size_t buf_size);
// ---- model-layers.c ----

// Reads <arch>.<name> as one unsigned value for every layer, or an array of one per layer, into
// out[0..n_layer); false (logged) on a wrong type, length or range; absent: out untouched, false.
bool llama_model_hp_layers(const struct gguf_context * g, const char * arch, const char * name, uint32_t n_layer, uint32_t * out,
                           bool * ok);
// Fills the rest of the per-layer shape (head sizes, rope dimensions, swa_layers, kv_layer; model.c
// read n_head_kv_l and n_ff_l) and checks it; false (logged) if it is inconsistent.
bool llama_model_layers_init(struct llama_hparams * hp, const struct gguf_context * g, const char * arch);

// ---- model-placement.c ----

// Wraps the mapping in a CPU buffer and moves the offloaded blocks (params->n_gpu_layers) to a
// device buffer; false (logged) on failure.
bool llama_model_place_weights(struct llama_model * m, const struct llama_model_params * params);
// True if the host may read t's data (a CPU buffer or plain memory).
bool llama_model_tensor_on_host(const struct ggml_tensor * t);
// Buffer type for block il's KV cache: the device's for an offloaded block, else the CPU's.
ggml_backend_buffer_type_t llama_model_layer_buft(const struct llama_model * m, uint32_t il);
// Frees the weight buffers (before the mapping is closed).
void llama_model_free_buffers(struct llama_model * m);

// ---- model-repack.c ----

// Lays the host's matmul weights out for the CPU kernels on every core (into m->buf_repack),
// fusing each layer's Q, K, V and gate, up where they are stored apart; with release_stored
// (the file mapped, not locked) their stored pages are let go tensor by tensor, so that the
// peak memory stays near one copy of the model. Failure only costs speed.
void llama_model_repack_weights(struct llama_model * m, bool release_stored);

// model if it is a live llama_model, else NULL (logged as func's error).
const struct llama_model * llama_model_checked(const struct llama_model * model, const char * func);

// Integer metadata of any integer GGUF type; false if absent or not an integer (logged as a
// wrong type when present).
bool llama_model_gguf_get_int(const struct gguf_context * g, const char * key, int64_t * out);
// Float metadata of any numeric GGUF type; false if absent or not a number.
bool llama_model_gguf_get_float(const struct gguf_context * g, const char * key, double * out);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_MODEL_H
