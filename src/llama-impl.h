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

// Formats a log line and hands it to ggml's current log callback (ggml_log_get), so the
// llama layer and ggml log through the one callback (llama_log_set sets ggml's too). A
// newline is appended when fmt's text does not end in one.
void llama_log_internal(enum ggml_log_level level, const char * fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#define LLAMA_LOG_DEBUG(...) llama_log_internal(GGML_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define LLAMA_LOG_INFO(...)  llama_log_internal(GGML_LOG_LEVEL_INFO,  __VA_ARGS__)
#define LLAMA_LOG_WARN(...)  llama_log_internal(GGML_LOG_LEVEL_WARN,  __VA_ARGS__)
#define LLAMA_LOG_ERROR(...) llama_log_internal(GGML_LOG_LEVEL_ERROR, __VA_ARGS__)

// a * b into *out; false (out untouched) if it overflows size_t.
static inline bool llama_size_mul_ok(size_t a, size_t b, size_t * out) {
    if (a != 0 && b > SIZE_MAX / a) {
        return false;
    }
    *out = a * b;
    return true;
}
// a + b into *out; false (out untouched) if it overflows size_t.
static inline bool llama_size_add_ok(size_t a, size_t b, size_t * out) {
    if (b > SIZE_MAX - a) {
        return false;
    }
    *out = a + b;
    return true;
}
// x rounded up to a multiple of align (a power of two) into *out; false on overflow.
static inline bool llama_size_pad_ok(size_t x, size_t align, size_t * out) {
    size_t t;
    if (!llama_size_add_ok(x, align - 1, &t)) {
        return false;
    }
    *out = t & ~(align - 1);
    return true;
}

// Every llama_model and llama_vocab starts with a magic word, so that the functions taking
// a vocab also accept the model that owns it (older code passes models), and so that a
// freed or foreign pointer is refused instead of being used.
#define LLAMA_MAGIC_MODEL 0x4c4d4f44u  // "LMOD"
#define LLAMA_MAGIC_VOCAB 0x4c564f43u  // "LVOC"
#define LLAMA_MAGIC_DEAD  0xdeadbeefu  // written by the free functions

// Resolves a vocab argument that may be a vocab or a model; NULL (logged) if neither.
const struct llama_vocab * llama_vocab_resolve(const void * vocab_or_model, const char * func);

#endif // LLAMA_IMPL_H
