// ggml-core.h — internals shared by the core's own files (ggml.c, ggml-ops.c, ggml-alloc.c).
// Not installed; not part of the ABI.
#ifndef GGML_CORE_H
#define GGML_CORE_H

#include "ggml-impl.h"

#ifdef __cplusplus
extern "C" {
#endif

// New tensor in ctx. With view_src non-NULL the tensor shares view_src's data at byte offset
// view_offs (view_src is resolved to its root, offsets accumulate); the caller sets nb for
// non-contiguous views. NULL (logged) on bad arguments or a full arena.
struct ggml_tensor * ggml_new_tensor_impl(struct ggml_context * ctx, enum ggml_type type, int n_dims, const int64_t * ne,
                                          struct ggml_tensor * view_src, size_t view_offs);

// Writes "f32 [4, 3, 1, 1]" (type and ne) of t into buf; returns buf. "NULL" for t == NULL.
const char * ggml_tensor_desc(const struct ggml_tensor * t, char * buf, size_t size);

// Size of the text ggml_tensor_desc needs at most.
#define GGML_TENSOR_DESC_SIZE 96

// Root of a view chain: the tensor that owns the data t sees.
static inline struct ggml_tensor * ggml_tensor_root(struct ggml_tensor * t) { return t->view_src ? t->view_src : t; }

// 64-byte aligned heap memory (NULL on failure); free with ggml_aligned_free (NULL-safe).
void * ggml_aligned_malloc(size_t size);
void ggml_aligned_free(void * ptr);

// One field of a public struct, for ggml_abi_field_offset.
struct ggml_abi_field {
    const char * struct_name;
    const char * field_name;
    size_t offset;
};

// One public struct, for ggml_abi_struct_size.
struct ggml_abi_struct {
    const char * struct_name;
    size_t size;
};

#ifdef __cplusplus
}
#endif

#endif // GGML_CORE_H
