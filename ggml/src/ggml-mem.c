// ggml-mem.c — the allocation wrappers every library allocation goes through (GGML_MALLOC,
// GGML_CALLOC, GGML_REALLOC, GGML_STRDUP, GGML_ALIGNED_ALLOC in ggml-mem.h), and the test hook
// that makes one chosen allocation fail, so that tests can walk every out-of-memory path of
// loading, context creation and decoding and check each ends in a clean error without a leak.
#include "ggml-impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <malloc.h>
#endif

// Allocation index (0-based, counted from the last ggml_test_fail_alloc_after) that fails;
// -1: none. Relaxed atomics: the hook is used from one test thread, but worker threads may
// allocate concurrently and must not race on the counter.
static atomic_llong g_fail_at = -1;
static atomic_llong g_count = 0;

static bool mem_fail_now(void) {
    const long long at = atomic_load_explicit(&g_fail_at, memory_order_relaxed);
    if (at < 0) {
        return false;
    }
    return atomic_fetch_add_explicit(&g_count, 1, memory_order_relaxed) == at;
}

void * ggml_mem_malloc(size_t size) { return mem_fail_now() ? NULL : malloc(size); }

void * ggml_mem_calloc(size_t n, size_t size) { return mem_fail_now() ? NULL : calloc(n, size); }

void * ggml_mem_realloc(void * ptr, size_t size) {
    // A failed realloc leaves ptr allocated, as realloc does.
    return mem_fail_now() ? NULL : realloc(ptr, size);
}

char * ggml_mem_strdup(const char * s) {
    const size_t n = strlen(s) + 1;
    char * p = ggml_mem_malloc(n);
    if (p != NULL) {
        memcpy(p, s, n);
    }
    return p;
}

void * ggml_mem_aligned_alloc(size_t alignment, size_t size) {
    if (mem_fail_now()) {
        return NULL;
    }
#if defined(_WIN32)
    return _aligned_malloc(size ? size : 1, alignment);
#else
    void * p = NULL;
    return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
#endif
}

void ggml_mem_aligned_free(void * ptr) {
#if defined(_WIN32)
    _aligned_free(ptr);
#else
    free(ptr);
#endif
}

void ggml_test_fail_alloc_after(int64_t k) {
    atomic_store(&g_fail_at, -1);
    atomic_store(&g_count, 0);
    atomic_store(&g_fail_at, k < 0 ? -1 : (long long) k);
}

int64_t ggml_test_alloc_count(void) { return (int64_t) atomic_load(&g_count); }
