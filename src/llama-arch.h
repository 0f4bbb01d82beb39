// llama-arch.h — the architecture table (arch.c): one row per GGUF general.architecture,
// saying which hyperparameter keys the loader reads, which tensors a file must (or may) hold
// and with which shapes, the rope layout, and the graph builder (src/models/<arch>.c) that
// turns the loaded weights into a ggml graph. Not installed.
//
//   const struct llama_arch_info * a = llama_arch_find(gguf_arch_name);   // NULL: unsupported
//   model.c: a->keys, a->tensors -> llama_hparams, llama_layer;  a->finish(hp) for fixed values
//   graph.c: a->build(&g)  with the shared blocks of llama-graph.h
//
// Adding an architecture: a builder file in src/models/, one row in arch.c (CONTRIBUTING.md).
#ifndef LLAMA_ARCH_H
#define LLAMA_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct llama_hparams;
struct llm_graph;

// Symbolic tensor dimensions, resolved from the hyperparameters at load time.
enum llm_dim {
    LLM_DIM_NONE = 0,
    LLM_DIM_EMBD,      // n_embd
    LLM_DIM_VOCAB,     // n_vocab
    LLM_DIM_FF,        // n_ff
    LLM_DIM_FF2,       // 2 * n_ff (gate and up stored as one tensor)
    LLM_DIM_Q,         // n_embd_head_k * n_head
    LLM_DIM_K,         // n_embd_head_k * n_head_kv
    LLM_DIM_V,         // n_embd_head_v * n_head_kv
    LLM_DIM_O,         // n_embd_head_v * n_head (attention output rows)
    LLM_DIM_QKV,       // Q + K + V (one fused tensor)
    LLM_DIM_HEAD_K,    // n_embd_head_k (per-head norms)
    LLM_DIM_ROT2,      // n_rot / 2 (rope frequency factors)
    LLM_DIM_EXPERT,    // n_expert (expert_count)
    LLM_DIM_FF_EXP,    // n_ff_exp: one expert's feed-forward width (default n_ff)
    LLM_DIM_FF_SHEXP,  // n_ff_shexp: the shared expert's width (default n_ff_exp)
    LLM_DIM_Q2,        // 2 * n_embd_head_k * n_head (queries and their gates, gated attention)
    LLM_DIM_SSM_CONV_K,// ssm_d_conv (convolution taps)
    LLM_DIM_SSM_CONV_CH, // 2 * ssm_d_state * ssm_n_group + ssm_d_inner (convolved q, k, v)
    LLM_DIM_SSM_INNER, // ssm_d_inner
    LLM_DIM_SSM_HEADS, // ssm_dt_rank (value heads)
    LLM_DIM_SSM_STATE, // ssm_d_state
    LLM_DIM_FF_EXP2,   // 2 * n_ff_exp (an expert's gate and up stored as one)
    LLM_DIM_PLE,       // n_embd_per_layer (per-layer embeddings; 0 without them)
    LLM_DIM_PLE_ALL,   // n_embd_per_layer * n_layer
    LLM_DIM_CTX_TRAIN, // n_ctx_train (learned position embeddings)
    LLM_DIM_TOKEN_TYPES, // n_token_types (token type embeddings)
    LLM_DIM_CLS_OUT,   // n_cls_out (classifier output rows)
    LLM_DIM_DENSE_2_OUT, // n_dense_2_out
    LLM_DIM_DENSE_3_IN,  // n_dense_3_in
    LLM_DIM_HEAD,      // n_head (attention sinks)
    LLM_DIM_FF_SHEXP_KEY, // n_ff_shexp as the file gives it (0: no shared expert; LLM_T_IF_DIM)
};
// Per-layer dimensions (FF, Q, K, V, O, QKV, HEAD_K) are the layer's own (model-layers.c).

// Where a loaded tensor goes and what may be absent.
enum llm_tensor_flags {
    LLM_T_REQUIRED = 1,   // absence is an error naming it
    LLM_T_LAYER = 2,   // one per block: the name has a %u for the block index
    LLM_T_F32 = 4,   // must be stored as f32 (norm weights, biases, rope factors: elementwise ops)
    LLM_T_DENSE = 8,   // required when the model has no experts (expert_count 0); not loaded otherwise
    LLM_T_MOE = 16,  // required when expert_count > 0; not loaded otherwise
    LLM_T_KV = 32,   // required in the layers that own their KV (absent where it is shared)
    LLM_T_IF_DIM = 64,  // required when its dimensions are all > 0 (a feature the keys switch on)
    LLM_T_F16_OK = 128, // with LLM_T_F32: f16 accepted too (an op that reads it as floats: conv taps)
};

// One tensor of a row: GGUF name (printf pattern with %u for LLM_T_LAYER), shape, and the byte
// offset of its ggml_tensor * field in struct llama_layer (LLM_T_LAYER) or struct llama_model.
struct llm_tensor_spec {
    const char * name;
    uint16_t offset;
    uint8_t flags;
    uint8_t n_dims;
    uint8_t ne[3];          // enum llm_dim
};

enum llm_key_type {
    LLM_KEY_U32,
    LLM_KEY_F32
};

// Expert gating functions (the values of <arch>.expert_gating_func, as llama.cpp writes them).
// SOFTMAX_WEIGHT (gpt-oss): top-k of the raw logits, then a softmax over the chosen ones.
enum llm_expert_gating {
    LLM_EXPERT_GATING_SOFTMAX = 1,
    LLM_EXPERT_GATING_SIGMOID = 2,
    LLM_EXPERT_GATING_SOFTMAX_WEIGHT = 3
};

// One architecture-specific hyperparameter: <arch>.<suffix> into a field of llama_hparams.
// Keys every architecture shares (context_length, embedding_length, ...) are read by model.c.
struct llm_key_spec {
    const char * suffix;
    uint16_t offset;        // offsetof(struct llama_hparams, field)
    uint8_t type;           // enum llm_key_type
    bool required;
    double def;             // value when absent and not required
};

// Rope layouts (the GGML_ROPE_TYPE_* of ggml_rope_ext's mode).
enum llm_rope_layout {
    LLM_ROPE_NORMAL = 0,
    LLM_ROPE_NEOX = 2
};

struct llama_arch_info {
    const char * name;                        // general.architecture
    int rope;                                 // enum llm_rope_layout
    const struct llm_key_spec * keys;         // terminated by a NULL suffix (may be NULL)
    const struct llm_tensor_spec * tensors;   // terminated by a NULL name
    // Values the architecture fixes or derives (after the keys were read); false (logged) if
    // the hyperparameters do not fit it. May be NULL.
    bool (*finish)(struct llama_hparams * hp);
    // Builds the forward graph of one ubatch (llama-graph.h); false (logged) on failure.
    bool (*build)(struct llm_graph * g);
};

// The row of GGUF architecture `name`, or NULL.
const struct llama_arch_info * llama_arch_find(const char * name);
// The supported names, comma-separated, written into buf (for error messages); returns buf.
const char * llama_arch_list(char * buf, size_t size);

// Builders (src/models/*.c).
// Pre-norm blocks with SwiGLU: llama, qwen2 (Q/K/V biases), qwen3 (QK-norm), phi3 (fused
// weights, LongRoPE, sliding window): what differs lies in the tensors the blocks find.
bool llm_build_llama(struct llm_graph * g);
// Norms before and after attention and FFN, GeGLU, scaled embeddings: gemma3, gemma2.
bool llm_build_gemma3(struct llm_graph * g);
// gemma3's blocks plus per-layer embeddings and a scale per block: gemma4 (dense).
bool llm_build_gemma4(struct llm_graph * g);
// Post-norm bidirectional encoders: bert (learned positions, GELU), nomic-bert (rotary, SwiGLU).
bool llm_build_bert(struct llm_graph * g);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_ARCH_H
