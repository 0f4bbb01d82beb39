// llama-impl.h — internal definitions shared by the llama layer's files (model, vocab,
// context, sampling, chat, quantize). Not installed.
#ifndef LLAMA_IMPL_H
#define LLAMA_IMPL_H

// The llama layer sees ggml only through its public headers (ggml/include); CMake gives src/
// no other ggml include directory.
#include "llama.h"
#include "ggml.h"
#include "ggml-mem.h" // GGML_MALLOC & co.: allocations the robustness tests can make fail

#include <stdint.h>

// The llama layer logs through ggml_log_internal (ggml.h): one callback for both layers
// (llama_log_set sets ggml's too).
#define LLAMA_LOG_DEBUG(...) ggml_log_internal(GGML_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define LLAMA_LOG_INFO(...)  ggml_log_internal(GGML_LOG_LEVEL_INFO, __VA_ARGS__)
#define LLAMA_LOG_WARN(...)  ggml_log_internal(GGML_LOG_LEVEL_WARN, __VA_ARGS__)
#define LLAMA_LOG_ERROR(...) ggml_log_internal(GGML_LOG_LEVEL_ERROR, __VA_ARGS__)

// Every llama_model and llama_vocab starts with a magic word, so that the functions taking
// a vocab also accept the model that owns it (older code passes models), and so that a
// freed or foreign pointer is refused instead of being used.
#define LLAMA_MAGIC_MODEL 0x4c4d4f44u  // "LMOD"
#define LLAMA_MAGIC_VOCAB 0x4c564f43u  // "LVOC"
#define LLAMA_MAGIC_DEAD  0xdeadbeefu  // written by the free functions

// Resolves a vocab argument that may be a vocab or a model; NULL (logged) if neither.
const struct llama_vocab * llama_vocab_resolve(const void * vocab_or_model, const char * func);

#endif // LLAMA_IMPL_H
