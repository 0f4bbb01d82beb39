// ggml-backend.h — where tensors live and who computes them: buffer types, buffers, backends,
// devices and the scheduler that splits one graph across several backends. Names and
// semantics follow ggml's, so ggml code ports line by line.
//
// Usage (ggml's "simple-backend"):
//
//   ggml_backend_load_all();
//   ggml_backend_t be = ggml_backend_cpu_init();             // or ggml_backend_dev_init(dev, NULL)
//   struct ggml_context * ctx = ggml_init((struct ggml_init_params){ 2 * ggml_tensor_overhead(), NULL, true });
//   struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
//   struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
//   ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);  // a and b get memory
//   ggml_backend_tensor_set(a, a_host, 0, ggml_nbytes(a));                // never a->data directly
//   ... build gf = ggml_mul_mat(ctx2, a, b) in a second no_alloc context ...
//   ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
//   ggml_gallocr_alloc_graph(ga, gf);
//   ggml_backend_graph_compute(be, gf);
//   ggml_backend_tensor_get(out, host, 0, ggml_nbytes(out));
//   ggml_gallocr_free(ga); ggml_backend_buffer_free(buf); ggml_backend_free(be);
//
// Every function is NULL-safe and never aborts on misuse: a wrong buffer, a tensor without
// data, an op no backend supports give an error value and a logged reason.
#ifndef GGML_BACKEND_H
#define GGML_BACKEND_H

#include "ggml.h"
#include "ggml-alloc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggml_backend_buffer_type * ggml_backend_buffer_type_t;
typedef struct ggml_backend_buffer * ggml_backend_buffer_t;
typedef struct ggml_backend * ggml_backend_t;
typedef struct ggml_backend_device * ggml_backend_dev_t;
typedef struct ggml_backend_reg * ggml_backend_reg_t;
typedef struct ggml_backend_sched * ggml_backend_sched_t;

// ---- buffer types: allocators of buffers of one kind of memory ----

// Name of the buffer type ("CPU", "CPU_REPACK", "TestDevice0", ...).
GGML_API const char * ggml_backend_buft_name(ggml_backend_buffer_type_t buft);
// A new buffer of size bytes (NULL, logged, when it cannot be had). Free with ggml_backend_buffer_free.
GGML_API ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
// Alignment of tensor data in its buffers, in bytes.
GGML_API size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft);
// Largest buffer it can allocate (SIZE_MAX when unlimited).
GGML_API size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft);
// Bytes t takes in a buffer of this type (ggml_nbytes unless the type pads or repacks).
GGML_API size_t ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor * t);
// True if the host may read and write its buffers' memory directly.
GGML_API bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft);
// The device whose memory it allocates (NULL for host-only types).
GGML_API ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft);

// ---- buffers: one allocation holding tensors ----

// What a buffer holds (the scheduler places nodes on the backend of their weights).
enum ggml_backend_buffer_usage {
    GGML_BACKEND_BUFFER_USAGE_ANY = 0,
    GGML_BACKEND_BUFFER_USAGE_WEIGHTS = 1,
    GGML_BACKEND_BUFFER_USAGE_COMPUTE = 2,
};

// Name of the buffer's type.
GGML_API const char * ggml_backend_buffer_name(ggml_backend_buffer_t buffer);
// Frees the buffer's memory (tensors in it keep dangling pointers); NULL-safe.
GGML_API void ggml_backend_buffer_free(ggml_backend_buffer_t buffer);
// Start of the buffer's memory (an address in the device's space; not host-readable unless is_host).
GGML_API void * ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer);
// Size in bytes.
GGML_API size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer);
// Alignment of tensor data in it.
GGML_API size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer);
// Sets every byte of the buffer to value.
GGML_API void ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value);
// True if the host may read and write its memory directly.
GGML_API bool ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer);
// Marks what the buffer holds.
GGML_API void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage);
// What the buffer holds.
GGML_API enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer);
// The buffer's type.
GGML_API ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer);
// Places t at address addr inside buffer (t->buffer, t->data set); GGML_STATUS_FAILED (logged) if it does not fit.
GGML_API enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor * t, void * addr);

// ---- tensor data, through the buffer that holds it ----

// Copies size bytes from host data into t at byte offset offset. Logged no-op on a tensor
// without a buffer or a range outside it.
GGML_API void ggml_backend_tensor_set(struct ggml_tensor * t, const void * data, size_t offset, size_t size);
// Copies size bytes of t at byte offset offset into host data (logged no-op as above).
GGML_API void ggml_backend_tensor_get(const struct ggml_tensor * t, void * data, size_t offset, size_t size);
// Sets size bytes of t from byte offset offset to value.
GGML_API void ggml_backend_tensor_memset(struct ggml_tensor * t, uint8_t value, size_t offset, size_t size);
// Copies src's bytes into dst (same type and shape, both contiguous), across buffers of any kind.
GGML_API void ggml_backend_tensor_copy(struct ggml_tensor * src, struct ggml_tensor * dst);

// ---- backends: a stream of computation on one device ----

// Name of the backend ("CPU", "TestDevice0", "CUDA0").
GGML_API const char * ggml_backend_name(ggml_backend_t backend);
// Frees the backend; NULL-safe.
GGML_API void ggml_backend_free(ggml_backend_t backend);
// The buffer type of the backend's own memory.
GGML_API ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend);
// A buffer of its default type.
GGML_API ggml_backend_buffer_t ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size);
// Alignment of its default buffer type.
GGML_API size_t ggml_backend_get_alignment(ggml_backend_t backend);
// True if it can compute op (given where op's sources live).
GGML_API bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor * op);
// True if it can compute on tensors in buffers of type buft.
GGML_API bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft);
// Waits for its queued work to finish.
GGML_API void ggml_backend_synchronize(ggml_backend_t backend);
// Computes every node of graph; every tensor must live in buffers it supports.
GGML_API enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph * graph);
// The device it runs on.
GGML_API ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend);

// ---- devices and their registries ----

// Kind of device.
enum ggml_backend_dev_type {
    GGML_BACKEND_DEVICE_TYPE_CPU = 0,
    GGML_BACKEND_DEVICE_TYPE_GPU = 1,  // discrete memory: full offload
    GGML_BACKEND_DEVICE_TYPE_ACCEL = 2,  // helps the CPU (e.g. BLAS); not offloaded to
    GGML_BACKEND_DEVICE_TYPE_IGPU = 3,
};

// Devices found (after ggml_backend_load_all: CPU first, then the others).
GGML_API size_t ggml_backend_dev_count(void);
// Device i (NULL, logged, when out of range).
GGML_API ggml_backend_dev_t ggml_backend_dev_get(size_t index);
// The device named name, or NULL.
GGML_API ggml_backend_dev_t ggml_backend_dev_by_name(const char * name);
// The first device of type type, or NULL.
GGML_API ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type);
// Short name ("CPU", "TestDevice0", "CUDA0").
GGML_API const char * ggml_backend_dev_name(ggml_backend_dev_t dev);
// Human description (CPU model, GPU name).
GGML_API const char * ggml_backend_dev_description(ggml_backend_dev_t dev);
// Free and total memory in bytes (0, 0 when unknown).
GGML_API void ggml_backend_dev_memory(ggml_backend_dev_t dev, size_t * free, size_t * total);
// Kind of device.
GGML_API enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t dev);
// A new backend on the device (params may be NULL); NULL (logged) on failure.
GGML_API ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t dev, const char * params);
// The device's own buffer type.
GGML_API ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t dev);
// True if the device can compute op.
GGML_API bool ggml_backend_dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op);
// True if the device computes on buffers of type buft.
GGML_API bool ggml_backend_dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft);
// True for the built-in test device (a stand-in for a GPU in tests, never a real accelerator).
GGML_API bool ggml_backend_dev_is_test(ggml_backend_dev_t dev);

// Registries (one per backend library).
GGML_API size_t ggml_backend_reg_count(void);
// Registry i, or NULL.
GGML_API ggml_backend_reg_t ggml_backend_reg_get(size_t index);
// The registry named name ("CPU", "TestDevice", "CUDA"), or NULL.
GGML_API ggml_backend_reg_t ggml_backend_reg_by_name(const char * name);
// Name of a registry.
GGML_API const char * ggml_backend_reg_name(ggml_backend_reg_t reg);
// Devices of a registry.
GGML_API size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg);
// Device i of a registry, or NULL.
GGML_API ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index);

// Registers the built-in backends (CPU; the test device when enabled), then loads each optional
// backend library found next to this library (libggml-cuda.so, ...) whose runtime is present.
// A missing driver or device is one log line, never an error. Safe to call more than once.
GGML_API void ggml_backend_load_all(void);
// Same, looking for optional libraries in dir_path (NULL: next to this library).
GGML_API void ggml_backend_load_all_from_path(const char * dir_path);
// Loads one backend library; its registry, or NULL (logged) when it cannot be used here.
GGML_API ggml_backend_reg_t ggml_backend_load(const char * path);
// Turns the built-in test device on or off (also GGML_TEST_DEVICE=1 in the environment, read
// once). Enabling registers it; disabling hides it from later enumerations.
GGML_API void ggml_backend_test_device_enable(bool enable);

// A backend on the first device of the named registry / of a type; NULL when there is none.
GGML_API ggml_backend_t ggml_backend_init_by_name(const char * name, const char * params);
GGML_API ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char * params);
// The best backend available: a GPU if there is one, else the CPU.
GGML_API ggml_backend_t ggml_backend_init_best(void);

// ---- the scheduler: one graph over several backends ----

// Called per node with ask=true ("do you want to see this one?"), then after its computation with
// ask=false; returning false from the second call stops the computation.
typedef bool (*ggml_backend_sched_eval_callback)(struct ggml_tensor * t, bool ask, void * user_data);

// A scheduler over n_backends backends in priority order; the last must be the CPU. bufts[i]
// (NULL or NULL entries: the backend's default) is where backend i's intermediates go;
// graph_size bounds the nodes of a graph. parallel and op_offload are accepted for ggml's
// signature (false / true behave the same here).
GGML_API ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t * backends, ggml_backend_buffer_type_t * bufts,
                                                     int n_backends, size_t graph_size, bool parallel, bool op_offload);
// Frees the scheduler and its compute buffers; NULL-safe.
GGML_API void ggml_backend_sched_free(ggml_backend_sched_t sched);
// Sizes the compute buffers for a worst-case graph (allocation of later graphs then does not grow them).
GGML_API bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph);
// Assigns every node to a backend (where its weights or data live, then supports_op, then the
// CPU), inserts the copies between backends, and allocates the intermediates; false (logged) on failure.
GGML_API bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
// Allocates (unless graph is the one last allocated) and computes the splits in order.
GGML_API enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
// Promises that graph is unchanged since its last computation here (same nodes and allocation;
// only input contents rewritten): backends may keep their plans for the next computation.
GGML_API void ggml_backend_sched_graph_unchanged(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
// Waits for every backend.
GGML_API void ggml_backend_sched_synchronize(ggml_backend_sched_t sched);
// Forgets the current graph's assignment (call before building a new graph on the same tensors).
GGML_API void ggml_backend_sched_reset(ggml_backend_sched_t sched);
// Splits (runs on one backend) of the last allocated graph.
GGML_API int ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched);
// Tensor copies between backends in the last allocated graph.
GGML_API int ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched);
// Backends of the scheduler.
GGML_API int ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched);
// Backend i, or NULL.
GGML_API ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i);
// Bytes of backend's compute buffer.
GGML_API size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);
// Pins node to backend for the next allocation.
GGML_API void ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node,
                                                    ggml_backend_t backend);
// The backend node was assigned to, or NULL.
GGML_API ggml_backend_t ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node);
// Sets the per-node callback (NULL: none).
GGML_API void ggml_backend_sched_set_eval_callback(ggml_backend_sched_t sched, ggml_backend_sched_eval_callback callback,
                                                   void * user_data);

// ---- utilities ----

// One buffer of type buft holding every tensor of ctx that has no data yet; NULL (logged) on failure.
GGML_API ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context * ctx,
                                                                        ggml_backend_buffer_type_t buft);
// The same in backend's default buffer type.
GGML_API ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context * ctx, ggml_backend_t backend);

#ifdef __cplusplus
}
#endif

#endif // GGML_BACKEND_H
