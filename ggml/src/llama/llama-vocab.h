// llama-vocab.h — internal API of the vocabulary (vocab.c): loading from GGUF metadata,
// freeing, and the accessor the model implements so vocab functions accept a model too.
// Not installed.
//
// Ownership: the model owns its vocab. model.c calls llama_vocab_load() on the model's GGUF
// metadata while loading (also with vocab_only) and llama_vocab_free() when the model is freed.
// llama_model_get_vocab() (model.c) returns the pointer from llama_model_vocab_internal().
#ifndef LLAMA_VOCAB_H
#define LLAMA_VOCAB_H

#include "llama-impl.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct llama_vocab;
struct llama_model;

// Builds the vocabulary from the tokenizer.* keys of g; NULL with a logged reason on failure
// (unknown tokenizer.ggml.model or tokenizer.ggml.pre, missing or malformed arrays, bad ids).
// Copies everything it needs: g may be freed afterwards. Free with llama_vocab_free.
struct llama_vocab * llama_vocab_load(const struct gguf_context * g);

// Frees a vocab from llama_vocab_load; NULL-safe. Marks the magic dead so stale uses are refused.
void llama_vocab_free(struct llama_vocab * vocab);

// Implemented by model.c: the vocab owned by a model whose magic is LLAMA_MAGIC_MODEL (NULL if none).
const struct llama_vocab * llama_model_vocab_internal(const struct llama_model * model);

// Resolves a vocab argument that may be a vocab or a model (declared in llama-impl.h; defined in vocab.c).
// const struct llama_vocab * llama_vocab_resolve(const void * vocab_or_model, const char * func);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_VOCAB_H
