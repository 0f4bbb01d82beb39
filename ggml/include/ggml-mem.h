// ggml-mem.h — the library's allocation functions, and the test hook that makes one chosen
// allocation fail.
//
// Every allocation of the library (ggml and the llama layer) goes through these instead of
// malloc, so that a test can walk each out-of-memory path of loading, context creation and
// decoding and check that it ends in a clean error without a leak:
//
//   ggml_test_fail_alloc_after(k);   // allocation number k from now returns NULL
//   ... call the library, expect a clean error ...
//   ggml_test_fail_alloc_after(-1);  // off
//
// Memory from ggml_mem_malloc / _calloc / _realloc / _strdup is freed with free();
// from ggml_mem_aligned_alloc with ggml_mem_aligned_free.
#ifndef GGML_MEM_H
#define GGML_MEM_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// malloc(size), or NULL (also when the test hook fails this allocation).
GGML_API void * ggml_mem_malloc(size_t size);
// calloc(n, size), or NULL.
GGML_API void * ggml_mem_calloc(size_t n, size_t size);
// realloc(ptr, size), or NULL with ptr still allocated.
GGML_API void * ggml_mem_realloc(void * ptr, size_t size);
// A copy of the NUL-terminated s, or NULL.
GGML_API char * ggml_mem_strdup(const char * s);
// size bytes (at least 1) aligned to alignment (a power of two, a multiple of sizeof(void *)), or NULL.
GGML_API void * ggml_mem_aligned_alloc(size_t alignment, size_t size);
// Frees memory from ggml_mem_aligned_alloc; NULL-safe.
GGML_API void ggml_mem_aligned_free(void * ptr);

// Allocation number k (0-based, counted from this call) through the functions above returns
// NULL; k < 0 disables. For the C and Python robustness tests.
GGML_API void ggml_test_fail_alloc_after(int64_t k);
// Allocations through the functions above since the last ggml_test_fail_alloc_after (counted
// only while a failure is armed).
GGML_API int64_t ggml_test_alloc_count(void);

// Size arithmetic that refuses to wrap (allocation sizes from untrusted files).
// a * b into *out; false (out untouched) if it overflows size_t.
static inline bool ggml_size_mul_ok(size_t a, size_t b, size_t * out) {
    if (a != 0 && b > SIZE_MAX / a) {
        return false;
    }
    *out = a * b;
    return true;
}
// a + b into *out; false (out untouched) if it overflows size_t.
static inline bool ggml_size_add_ok(size_t a, size_t b, size_t * out) {
    if (b > SIZE_MAX - a) {
        return false;
    }
    *out = a + b;
    return true;
}
// x rounded up to a multiple of align (a power of two) into *out; false on overflow.
static inline bool ggml_size_pad_ok(size_t x, size_t align, size_t * out) {
    size_t t;
    if (!ggml_size_add_ok(x, align - 1, &t)) {
        return false;
    }
    *out = t & ~(align - 1);
    return true;
}

// The spellings library code uses.
#define GGML_MALLOC(size)               ggml_mem_malloc(size)
#define GGML_CALLOC(n, size)            ggml_mem_calloc(n, size)
#define GGML_REALLOC(ptr, size)         ggml_mem_realloc(ptr, size)
#define GGML_STRDUP(s)                  ggml_mem_strdup(s)
#define GGML_ALIGNED_ALLOC(align, size) ggml_mem_aligned_alloc(align, size)

#ifdef __cplusplus
}
#endif

#endif // GGML_MEM_H
