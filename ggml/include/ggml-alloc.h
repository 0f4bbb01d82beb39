// ggml-alloc.h — graph memory planning: the intermediates of a graph placed in one buffer of a
// backend's buffer type, reusing the bytes of a tensor once its last consumer has run.
//
//   ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
//   ggml_gallocr_alloc_graph(ga, gf);   // every tensor without data gets some
//   ... compute gf ...; ggml_gallocr_free(ga);
#ifndef GGML_ALLOC_H
#define GGML_ALLOC_H

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggml_backend_buffer_type * ggml_backend_buffer_type_t;
typedef struct ggml_gallocr * ggml_gallocr_t;

// A graph allocator whose buffer is of type buft (NULL: host memory, the CPU buffer type).
// Free with ggml_gallocr_free.
GGML_API ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft);
// Frees the allocator and its buffer; NULL-safe.
GGML_API void ggml_gallocr_free(ggml_gallocr_t galloc);
// Sizes the buffer for graph without keeping its placement (later graphs up to that size do not grow it).
GGML_API bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph);
// Assigns data (and buffer) to every tensor of the graph that has none; grows the buffer if
// needed. Returns false (logged) if memory could not be allocated.
GGML_API bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph);
// Bytes of the allocator's buffer (buffer_id: 0, the only one).
GGML_API size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);

#ifdef __cplusplus
}
#endif

#endif // GGML_ALLOC_H
