// llama-adapter.h — LoRA adapters and control vectors (adapter-lora.c, adapter-cvec.c), as the
// graph builders see them. Not installed.
//
// A LoRA adapter is a GGUF (general.type "adapter", adapter.type "lora") holding, for some of
// the model's matrices W [n_in, n_out], two tensors "<W's name>.lora_a" [n_in, r] and
// "<W's name>.lora_b" [r, n_out]; with the adapter set on a context at scale s, every product
// W·x becomes W·x + s·(alpha/r)·B·(A·x) (alpha: adapter.lora.alpha; 0 means alpha = r), one
// ggml_lora_add node per adapted product.
//
// Storage: whatever the file's type (F32, F16, BF16, Q8_0, ...), A and B are held in the type
// and layout ggml_lora_add reads (B transposed in panels): F16 where the adapted matrix is quantized, F32 where it is
// a float matrix. Generation reads the adapter once per token, and over a quantized model F32
// would cost about 7% more bytes per token for a rank-16 adapter on every projection of a 0.5B
// Q4_K_M model, F16 half that; F16's rounding (2^-11 relative per element of A and B, the
// activations staying F32) is small next to the quantized base matrix's own (2^-8 for Q8_0
// and coarser below), while over an F32 / F16 / BF16 model it would not be, so there the
// adapter keeps F32. F16 copies are the values times a power of two that puts the largest
// magnitude in [2^14, 2^15) (so none overflows and small ones stay normal), the inverse folded
// into the node's scale exactly.
#ifndef LLAMA_ADAPTER_H
#define LLAMA_ADAPTER_H

#include "llama-impl.h"
#include "ggml-backend.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct llama_context;

// One adapted matrix: w is the model's tensor; a ([n_in, r]) and bt (B transposed in panels of 64
// outputs, [64, r, ceil(n_out/64)]: ggml_lora_add's layout), both F16 or both F32, live in the
// adapter's CPU buffer, their values times 1/unscale.
struct llama_adapter_lora_pair {
    const struct ggml_tensor * w;
    struct ggml_tensor *a, *bt;
    float unscale;                      // a power of two: the true B·A is unscale·(bt^T·a)
};

struct llama_adapter_lora {
    uint32_t magic;                     // LLAMA_MAGIC_ADAPTER; dead once freed
    struct llama_model * model;         // the model it was loaded for (which lists it)
    struct gguf_context * gguf;         // metadata (owned)
    struct ggml_context * ctx;          // the file's tensor headers (owned; no data)
    struct ggml_context * ctx_rt;       // headers of every pair's a and bt (owned)
    ggml_backend_buffer_t buf;          // their data (owned)
    struct llama_adapter_lora_pair * pairs; // [n_pairs], sorted by nothing (owned)
    int32_t n_pairs;
    float alpha;                        // adapter.lora.alpha, 0 when absent
    llama_token * alora_tokens;         // aLoRA invocation tokens (owned), or NULL
    uint64_t n_alora_tokens;
};

// An adapter set on a context with its user scale.
struct llama_lora_slot {
    struct llama_adapter_lora * adapter;
    float scale;
};

// An adapter set on some sequences (llama_set_adapters_lora_seq): each sequence's user scale,
// 0 where it is not set. Its A·x is computed for every row of a ubatch and multiplied by the
// row's sequence's scale (an input tensor per adapter, found by name), so rows of other sequences gain exactly 0.
struct llama_lora_seq {
    struct llama_adapter_lora * adapter;
    float * scales;                     // [n_seq_max] (owned)
};

// y + the deltas of every adapter set on g's context that adapts w, for input x (y = w·x);
// y itself when none does; NULL if an op was refused.
struct llm_graph;
struct ggml_tensor * llm_graph_lora(struct llm_graph * g, const struct ggml_tensor * w, struct ggml_tensor * x,
                                    struct ggml_tensor * y);
// w·x with the context's adapters applied (llm_graph_lora of ggml_mul_mat).
struct ggml_tensor * llm_graph_mm(struct llm_graph * g, struct ggml_tensor * w, struct ggml_tensor * x);
// x plus the context's control vector for layer il (x itself when none applies).
struct ggml_tensor * llm_graph_cvec(struct llm_graph * g, uint32_t il, struct ggml_tensor * x);
// Fills the per-sequence adapter scales of ub's rows into res's inputs (after allocation).
struct llama_ubatch;
void llama_adapter_lora_set_inputs(struct llama_context * ctx, const struct llama_ubatch * ub, struct ggml_cgraph * gf);
// Frees every adapter still loaded for model (at llama_model_free).
void llama_adapter_lora_free_all(struct llama_model * model);
// Frees the context's adapter list and control vector (at llama_free).
void llama_context_adapters_free(struct llama_context * ctx);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_ADAPTER_H
