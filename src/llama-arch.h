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
    LLM_DIM_CTX_TRAIN, // n_ctx_train (learned position embeddings)
    LLM_DIM_TOKEN_TYPES, // n_token_types (token type embeddings)
    LLM_DIM_CLS_OUT,   // n_cls_out (classifier output rows)
    LLM_DIM_DENSE_2_OUT, // n_dense_2_out
    LLM_DIM_DENSE_3_IN,  // n_dense_3_in
};

// Where a loaded tensor goes and what may be absent.
enum llm_tensor_flags {
    LLM_T_REQUIRED = 1,   // absence is an error naming it
    LLM_T_LAYER    = 2,   // one per block: the name has a %u for the block index
    LLM_T_F32      = 4,   // must be stored as f32 (norm weights, biases, rope factors: elementwise ops)
};

// One tensor of a row: GGUF name (printf pattern with %u for LLM_T_LAYER), shape, and the byte
// offset of its ggml_tensor * field in struct llama_layer (LLM_T_LAYER) or struct llama_model.
struct llm_tensor_spec {
    const char * name;
    uint16_t offset;
    uint8_t flags;
    uint8_t n_dims;
    uint8_t ne[2];          // enum llm_dim
};

enum llm_key_type { LLM_KEY_U32, LLM_KEY_F32 };

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
enum llm_rope_layout { LLM_ROPE_NORMAL = 0, LLM_ROPE_NEOX = 2 };

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
// Post-norm bidirectional encoders: bert (learned positions, GELU), nomic-bert (rotary, SwiGLU).
bool llm_build_bert(struct llm_graph * g);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_ARCH_H
