// threadpool.h — internal extras of the CPU graph executor (threadpool.c) for the llama layer.
#ifndef GGML_CPU_THREADPOOL_H
#define GGML_CPU_THREADPOOL_H

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

// Promises that gf is unchanged since its last computation on tp: the same nodes, ops, shapes
// and data addresses (only the contents of its input tensors were rewritten), as when a
// context reuses the graph of the previous token. The next ggml_graph_compute of gf on tp then
// skips re-checking every tensor's data and re-planning the nodes. Holds for one computation;
// a computation of any other graph, or of gf without this promise, re-plans from scratch.
void ggml_threadpool_graph_unchanged(struct ggml_threadpool * tp, const struct ggml_cgraph * gf);

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_THREADPOOL_H
