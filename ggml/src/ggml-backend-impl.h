// ggml-backend-impl.h — the vtables a backend implements (CPU, the test device, CUDA). Not
// installed. A backend library built separately (libggml-cuda.so) includes this header and
// exports `ggml_backend_reg_t ggml_backend_init(void)`, which returns NULL (after one log
// line) when its runtime or device is missing.
#ifndef GGML_BACKEND_IMPL_H
#define GGML_BACKEND_IMPL_H

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// Version of these vtables; a loaded library reporting another one is refused.
#define GGML_BACKEND_API_VERSION 1

struct ggml_backend_buffer_type_i {
    const char * (*get_name)(ggml_backend_buffer_type_t buft);
    ggml_backend_buffer_t (*alloc_buffer)(ggml_backend_buffer_type_t buft, size_t size);  // NULL (logged) on failure
    size_t (*get_alignment)(ggml_backend_buffer_type_t buft);
    size_t (*get_max_size)(ggml_backend_buffer_type_t buft);                // optional: SIZE_MAX
    size_t (*get_alloc_size)(ggml_backend_buffer_type_t buft, const struct ggml_tensor * t); // optional: ggml_nbytes
    bool (*is_host)(ggml_backend_buffer_type_t buft);                // optional: false
};

struct ggml_backend_buffer_type {
    struct ggml_backend_buffer_type_i iface;
    ggml_backend_dev_t device;   // NULL for host-only types
    void * context;
};

struct ggml_backend_buffer_i {
    void (*free_buffer)(ggml_backend_buffer_t buffer);                      // optional
    void * (*get_base)(ggml_backend_buffer_t buffer);
    enum ggml_status (*init_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor * t); // optional
    void (*memset_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor * t, uint8_t value, size_t offset, size_t size);
    void (*set_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor * t, const void * data, size_t offset, size_t size);
    void (*get_tensor)(ggml_backend_buffer_t buffer, const struct ggml_tensor * t, void * data, size_t offset, size_t size);
    // optional: copies src (in any buffer) into dst (in this buffer); false when it cannot
    bool (*cpy_tensor)(ggml_backend_buffer_t buffer, const struct ggml_tensor * src, struct ggml_tensor * dst);
    void (*clear)(ggml_backend_buffer_t buffer, uint8_t value);
};

struct ggml_backend_buffer {
    struct ggml_backend_buffer_i iface;
    ggml_backend_buffer_type_t buft;
    void * context;
    size_t size;
    enum ggml_backend_buffer_usage usage;
};

// A buffer object (free with ggml_backend_buffer_free); NULL on out of memory.
GGML_API ggml_backend_buffer_t ggml_backend_buffer_init(ggml_backend_buffer_type_t buft, struct ggml_backend_buffer_i iface,
                                                        void * context, size_t size);

struct ggml_backend_i {
    const char * (*get_name)(ggml_backend_t backend);
    void (*free)(ggml_backend_t backend);
    void (*synchronize)(ggml_backend_t backend);                                      // optional
    enum ggml_status (*graph_compute)(ggml_backend_t backend, struct ggml_cgraph * cgraph);
    // optional: the promise of ggml_backend_sched_graph_unchanged for the next graph_compute
    void (*graph_unchanged)(ggml_backend_t backend, struct ggml_cgraph * cgraph);
    // optional: copies src (in this backend's memory) into dst (in any buffer); false when it cannot
    bool (*cpy_tensor_out)(ggml_backend_t backend, const struct ggml_tensor * src, struct ggml_tensor * dst);
};

struct ggml_backend {
    struct ggml_backend_i iface;
    ggml_backend_dev_t device;
    void * context;
};

struct ggml_backend_device_i {
    const char * (*get_name)(ggml_backend_dev_t dev);
    const char * (*get_description)(ggml_backend_dev_t dev);
    void (*get_memory)(ggml_backend_dev_t dev, size_t * free, size_t * total);
    enum ggml_backend_dev_type (*get_type)(ggml_backend_dev_t dev);
    ggml_backend_t (*init_backend)(ggml_backend_dev_t dev, const char * params);
    ggml_backend_buffer_type_t (*get_buffer_type)(ggml_backend_dev_t dev);
    bool (*supports_op)(ggml_backend_dev_t dev, const struct ggml_tensor * op);
    bool (*supports_buft)(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft);
};

struct ggml_backend_device {
    struct ggml_backend_device_i iface;
    ggml_backend_reg_t reg;
    void * context;
    bool is_test;   // the built-in test device
};

struct ggml_backend_reg_i {
    const char * (*get_name)(ggml_backend_reg_t reg);
    size_t (*get_device_count)(ggml_backend_reg_t reg);
    ggml_backend_dev_t (*get_device)(ggml_backend_reg_t reg, size_t index);
};

struct ggml_backend_reg {
    int api_version;   // GGML_BACKEND_API_VERSION
    struct ggml_backend_reg_i iface;
    void * context;
};

// Adds a registry (and its devices) to the global list; a second registration of the same one is ignored.
void ggml_backend_register(ggml_backend_reg_t reg);
// Removes a registry from the global list (the test device when disabled).
void ggml_backend_unregister(ggml_backend_reg_t reg);

// The built-in test device's registry (ggml-testdev/), or NULL if not built.
ggml_backend_reg_t ggml_backend_testdev_reg(void);

// Entry point a backend library exports.
typedef ggml_backend_reg_t (*ggml_backend_init_t)(void);

#ifdef __cplusplus
}
#endif

#endif // GGML_BACKEND_IMPL_H
