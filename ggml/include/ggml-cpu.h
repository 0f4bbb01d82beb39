// ggml-cpu.h — CPU graph execution (a thread pool computing a whole graph, the CPU's kernel
// variant and features) and the CPU backend of ggml-backend.h: always present, the fallback of
// the scheduler.
//
//   ggml_graph_compute_with_ctx(ctx, gf, 4);   // a graph on 4 threads, no backend involved
//
//   ggml_backend_t cpu = ggml_backend_cpu_init();
//   ggml_backend_cpu_set_n_threads(cpu, 4);
//   ggml_backend_graph_compute(cpu, gf);
//   ggml_backend_free(cpu);
#ifndef GGML_CPU_H
#define GGML_CPU_H

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- CPU computation ----

// Persistent pool of n_threads (the caller's thread is one of them). Free with ggml_threadpool_free.
GGML_API struct ggml_threadpool * ggml_threadpool_new(int n_threads);
// Stops and joins the pool's threads; NULL-safe.
GGML_API void ggml_threadpool_free(struct ggml_threadpool * tp);
// Threads in the pool.
GGML_API int ggml_threadpool_get_n_threads(const struct ggml_threadpool * tp);
// Changes how many of the pool's threads the next computations use (1..created count).
GGML_API void ggml_threadpool_set_n_threads(struct ggml_threadpool * tp, int n_threads);
// Callback polled between nodes; returning true aborts the computation.
GGML_API void ggml_threadpool_set_abort_callback(struct ggml_threadpool * tp, ggml_abort_callback cb, void * data);
// Computes every node in order on the pool. Scratch memory is kept by the pool across calls.
GGML_API enum ggml_status ggml_graph_compute(struct ggml_cgraph * cgraph, struct ggml_threadpool * tp);
// One-shot: computes with a temporary pool of n_threads (ctx is unused but kept for the classic signature).
GGML_API enum ggml_status ggml_graph_compute_with_ctx(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int n_threads);
// Number of physical CPU cores (at least 1).
GGML_API int ggml_cpu_n_physical_cores(void);
// Names the CPU kernel variant in use ("avx512", "avx2", "portable", "neon").
GGML_API const char * ggml_cpu_variant(void);
// Comma-separated CPU features the library detected and uses.
GGML_API const char * ggml_cpu_features(void);

// ---- CPU backend ----

// A CPU backend (its own thread pool, the CPU kernels, op fusion); free with ggml_backend_free.
GGML_API ggml_backend_t ggml_backend_cpu_init(void);
// True if backend is a CPU backend.
GGML_API bool ggml_backend_is_cpu(ggml_backend_t backend);
// Threads its computations use (the pool grows when needed).
GGML_API void ggml_backend_cpu_set_n_threads(ggml_backend_t backend_cpu, int n_threads);
// Callback polled between nodes; returning true aborts (GGML_STATUS_ABORTED).
GGML_API void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend_cpu, ggml_abort_callback abort_callback,
                                                  void * abort_callback_data);
// Host memory, 64-byte aligned.
GGML_API ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void);
// A CPU buffer over size bytes at ptr owned by the caller (freeing the buffer leaves ptr alone).
GGML_API ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void * ptr, size_t size);
// The CPU's extra buffer type: matmul weights laid out for the int8 kernels (filled by the repacker).
GGML_API ggml_backend_buffer_type_t ggml_backend_cpu_repack_buffer_type(void);
// The CPU registry.
GGML_API ggml_backend_reg_t ggml_backend_cpu_reg(void);

// Bytes of the repacked layout of weight t, or 0 if the CPU kernels have none for it here.
GGML_API size_t ggml_backend_cpu_repack_size(const struct ggml_tensor * t);
// True if mul_mat reads t from a repacked copy.
GGML_API bool ggml_backend_cpu_is_repacked(const struct ggml_tensor * t);
// The weights a fused weight is made of, stacked by rows (n_parts 0: the tensor stands for itself).
struct ggml_backend_cpu_repack_parts {
    struct ggml_tensor * parts[4];
    int n_parts;
};
// Called from a worker for each tensor whose stored rows are read, before (done false) and
// after (done true) its copy is written: a loader can fault its pages in, then let them go.
// Big tensors come chunk by chunk: t then describes a run of the tensor's rows.
typedef void (*ggml_backend_cpu_repack_cb)(struct ggml_tensor * t, bool done, void * data);
// Repacks every weight of ts[0..n) that can be (ts[i] made of parts[i] where parts, which may be
// NULL, says so) on n_threads threads into one CPU_REPACK buffer (their buffer from then on);
// NULL if nothing was repacked. Freeing the buffer detaches the copies.
GGML_API ggml_backend_buffer_t ggml_backend_cpu_repack_weights(struct ggml_tensor * const * ts, int n, int n_threads,
                                                               const struct ggml_backend_cpu_repack_parts * parts,
                                                               ggml_backend_cpu_repack_cb cb, void * cb_data);

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_H
