// ggml-backend.c — the generic half of ggml-backend.h: buffer types, buffers, tensor data
// through buffers, backends, the device registry and the loading of optional backend
// libraries. The scheduler is in ggml-backend-sched.c; the CPU backend in ggml-cpu/ggml-cpu.c.
#include "ggml-backend-impl.h"
#include "ggml-core.h"
#include "ggml-env.h"
#include "ggml-cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(_WIN32)
#include <dlfcn.h>
#endif

// ---- buffer types ----

const char * ggml_backend_buft_name(ggml_backend_buffer_type_t buft) { return buft ? buft->iface.get_name(buft) : "NULL"; }

ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    if (!buft) {
        GGML_LOG_ERROR("ggml_backend_buft_alloc_buffer: NULL buffer type");
        return NULL;
    }
    return buft->iface.alloc_buffer(buft, size);
}

size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft) {
    return buft ? buft->iface.get_alignment(buft) : GGML_MEM_ALIGN;
}

size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft) {
    return buft && buft->iface.get_max_size ? buft->iface.get_max_size(buft) : SIZE_MAX;
}

size_t ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor * t) {
    if (!t) {
        return 0;
    }
    return buft && buft->iface.get_alloc_size ? buft->iface.get_alloc_size(buft, t) : ggml_nbytes(t);
}

bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft) {
    return buft && buft->iface.is_host ? buft->iface.is_host(buft) : false;
}

ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft) { return buft ? buft->device : NULL; }

// ---- buffers ----

ggml_backend_buffer_t ggml_backend_buffer_init(ggml_backend_buffer_type_t buft, struct ggml_backend_buffer_i iface,
                                               void * context, size_t size) {
    ggml_backend_buffer_t b = GGML_CALLOC(1, sizeof(*b));
    if (!b) {
        GGML_LOG_ERROR("ggml_backend_buffer_init: out of memory");
        return NULL;
    }
    b->iface = iface;
    b->buft = buft;
    b->context = context;
    b->size = size;
    b->usage = GGML_BACKEND_BUFFER_USAGE_ANY;
    return b;
}

const char * ggml_backend_buffer_name(ggml_backend_buffer_t buffer) {
    return buffer ? ggml_backend_buft_name(buffer->buft) : "NULL";
}

void ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
    if (!buffer) {
        return;
    }
    if (buffer->iface.free_buffer) {
        buffer->iface.free_buffer(buffer);
    }
    free(buffer);
}

void * ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer) {
    return buffer && buffer->size ? buffer->iface.get_base(buffer) : NULL;
}

size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer) { return buffer ? buffer->size : 0; }

size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer) {
    return buffer ? ggml_backend_buft_get_alignment(buffer->buft) : GGML_MEM_ALIGN;
}

void ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    if (buffer && buffer->size && buffer->iface.clear) {
        buffer->iface.clear(buffer, value);
    }
}

bool ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer) {
    return buffer ? ggml_backend_buft_is_host(buffer->buft) : false;
}

void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage) {
    if (buffer) {
        buffer->usage = usage;
    }
}

enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer) {
    return buffer ? buffer->usage : GGML_BACKEND_BUFFER_USAGE_ANY;
}

ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer) { return buffer ? buffer->buft : NULL; }

enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor * t, void * addr) {
    if (!buffer || !t) {
        GGML_LOG_ERROR("ggml_backend_tensor_alloc: NULL %s", buffer ? "tensor" : "buffer");
        return GGML_STATUS_FAILED;
    }
    const char * base = ggml_backend_buffer_get_base(buffer);
    const size_t need = ggml_backend_buft_get_alloc_size(buffer->buft, t);
    if ((const char *) addr < base || (const char *) addr + need > base + buffer->size) {
        GGML_LOG_ERROR("ggml_backend_tensor_alloc: tensor '%s' (%zu bytes) does not fit buffer %s of %zu bytes at that address",
                       t->name, need, ggml_backend_buffer_name(buffer), buffer->size);
        return GGML_STATUS_FAILED;
    }
    t->buffer = buffer;
    t->data = addr;
    return buffer->iface.init_tensor ? buffer->iface.init_tensor(buffer, t) : GGML_STATUS_SUCCESS;
}

// ---- tensor data ----

// A plain context's tensors (data, no buffer) are host memory: reached through this buffer.
static struct ggml_backend_buffer g_plain_host;

// The buffer of t (a view's is its source's; plain host memory: g_plain_host); NULL, logged as
// func's error, if t cannot be accessed over [offset, offset + size).
static ggml_backend_buffer_t tensor_buffer_checked(const struct ggml_tensor * t, size_t offset, size_t size, const char * func) {
    if (!t) {
        GGML_LOG_ERROR("%s: NULL tensor", func);
        return NULL;
    }
    ggml_backend_buffer_t buf = t->view_src ? t->view_src->buffer : t->buffer;
    if (!t->data) {
        GGML_LOG_ERROR("%s: tensor '%s' has no data (allocate it in a backend buffer first)", func, t->name);
        return NULL;
    }
    if (!buf) {
        if (!g_plain_host.buft) {
            ggml_backend_buffer_t cpu = ggml_backend_cpu_buffer_from_ptr((void *) 1, 0);
            if (!cpu) return NULL;
            g_plain_host = *cpu;    // the CPU buffer's functions, never freed
            free(cpu);
        }
        buf = &g_plain_host;
    }
    if (offset > ggml_nbytes(t) || size > ggml_nbytes(t) - offset) {
        GGML_LOG_ERROR("%s: range [%zu, %zu) is outside tensor '%s' (%zu bytes)", func, offset, offset + size, t->name,
                       ggml_nbytes(t));
        return NULL;
    }
    return buf;
}

void ggml_backend_tensor_set(struct ggml_tensor * t, const void * data, size_t offset, size_t size) {
    ggml_backend_buffer_t buf = tensor_buffer_checked(t, offset, size, __func__);
    if (buf && size) {
        buf->iface.set_tensor(buf, t, data, offset, size);
    }
}

void ggml_backend_tensor_get(const struct ggml_tensor * t, void * data, size_t offset, size_t size) {
    ggml_backend_buffer_t buf = tensor_buffer_checked(t, offset, size, __func__);
    if (buf && size) {
        buf->iface.get_tensor(buf, t, data, offset, size);
    }
}

void ggml_backend_tensor_memset(struct ggml_tensor * t, uint8_t value, size_t offset, size_t size) {
    ggml_backend_buffer_t buf = tensor_buffer_checked(t, offset, size, __func__);
    if (buf && size) {
        buf->iface.memset_tensor(buf, t, value, offset, size);
    }
}

void ggml_backend_tensor_copy(struct ggml_tensor * src, struct ggml_tensor * dst) {
    ggml_backend_buffer_t bs = tensor_buffer_checked(src, 0, 0, __func__);
    ggml_backend_buffer_t bd = tensor_buffer_checked(dst, 0, 0, __func__);
    if (!bs || !bd) {
        return;
    }
    if (src == dst) {
        return;
    }
    const size_t n = ggml_nbytes(src);
    if (n != ggml_nbytes(dst) || src->type != dst->type || !ggml_is_contiguous(src) || !ggml_is_contiguous(dst)) {
        GGML_LOG_ERROR("ggml_backend_tensor_copy: '%s' and '%s' differ in type or size, or are not contiguous", src->name,
                       dst->name);
        return;
    }
    if (ggml_backend_buffer_is_host(bs)) {
        ggml_backend_tensor_set(dst, src->data, 0, n);
    } else if (ggml_backend_buffer_is_host(bd)) {
        ggml_backend_tensor_get(src, dst->data, 0, n);
    } else if (!(bd->iface.cpy_tensor && bd->iface.cpy_tensor(bd, src, dst))) {
        // device to device through host memory
        void * tmp = GGML_MALLOC(n ? n : 1);
        if (!tmp) {
            GGML_LOG_ERROR("ggml_backend_tensor_copy: out of memory for %zu bytes", n);
            return;
        }
        ggml_backend_tensor_get(src, tmp, 0, n);
        ggml_backend_tensor_set(dst, tmp, 0, n);
        free(tmp);
    }
}

// ---- backends ----

const char * ggml_backend_name(ggml_backend_t backend) { return backend ? backend->iface.get_name(backend) : "NULL"; }

void ggml_backend_free(ggml_backend_t backend) {
    if (backend) {
        backend->iface.free(backend);
    }
}

ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend) {
    return backend ? ggml_backend_dev_buffer_type(backend->device) : NULL;
}

ggml_backend_buffer_t ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size) {
    return ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(backend), size);
}

size_t ggml_backend_get_alignment(ggml_backend_t backend) {
    return ggml_backend_buft_get_alignment(ggml_backend_get_default_buffer_type(backend));
}

bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor * op) {
    return backend && op && ggml_backend_dev_supports_op(backend->device, op);
}

bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft) {
    return backend && ggml_backend_dev_supports_buft(backend->device, buft);
}

void ggml_backend_synchronize(ggml_backend_t backend) {
    if (backend && backend->iface.synchronize) {
        backend->iface.synchronize(backend);
    }
}

enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph * graph) {
    if (!backend || !graph) {
        GGML_LOG_ERROR("ggml_backend_graph_compute: NULL %s", backend ? "graph" : "backend");
        return GGML_STATUS_FAILED;
    }
    // Every tensor must live where this backend can reach it.
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        for (int j = -1; j < GGML_MAX_SRC; j++) {
            const struct ggml_tensor * t = j < 0 ? node : node->src[j];
            if (!t) {
                continue;
            }
            ggml_backend_buffer_t buf = t->view_src ? t->view_src->buffer : t->buffer;
            if (buf && !ggml_backend_supports_buft(backend, buf->buft)) {
                GGML_LOG_ERROR(
                    "ggml_backend_graph_compute: tensor '%s' of node %d is in a %s buffer, which backend %s cannot use", t->name,
                    i, ggml_backend_buffer_name(buf), ggml_backend_name(backend));
                return GGML_STATUS_FAILED;
            }
            if (!buf && t->data && !ggml_backend_is_cpu(backend)) {
                GGML_LOG_ERROR("ggml_backend_graph_compute: tensor '%s' of node %d is host memory outside any buffer; backend %s "
                               "cannot use it",
                               t->name, i, ggml_backend_name(backend));
                return GGML_STATUS_FAILED;
            }
        }
        if (!ggml_op_is_view(node->op) && !ggml_backend_supports_op(backend, node)) {
            GGML_LOG_ERROR("ggml_backend_graph_compute: backend %s does not support node %d '%s' (%s)",
                           ggml_backend_name(backend), i, node->name, ggml_op_name(node->op));
            return GGML_STATUS_FAILED;
        }
    }
    return backend->iface.graph_compute(backend, graph);
}

ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend) { return backend ? backend->device : NULL; }

// ---- devices ----

const char * ggml_backend_dev_name(ggml_backend_dev_t dev) { return dev ? dev->iface.get_name(dev) : "NULL"; }

const char * ggml_backend_dev_description(ggml_backend_dev_t dev) { return dev ? dev->iface.get_description(dev) : "NULL"; }

void ggml_backend_dev_memory(ggml_backend_dev_t dev, size_t * free_mem, size_t * total) {
    size_t f = 0, t = 0;
    if (dev) {
        dev->iface.get_memory(dev, &f, &t);
    }
    if (free_mem) *free_mem = f;
    if (total) *total = t;
}

enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t dev) {
    return dev ? dev->iface.get_type(dev) : GGML_BACKEND_DEVICE_TYPE_CPU;
}

ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t dev, const char * params) {
    if (!dev) {
        GGML_LOG_ERROR("ggml_backend_dev_init: NULL device");
        return NULL;
    }
    return dev->iface.init_backend(dev, params);
}

ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t dev) {
    return dev ? dev->iface.get_buffer_type(dev) : NULL;
}

bool ggml_backend_dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    return dev && op && dev->iface.supports_op(dev, op);
}

bool ggml_backend_dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return dev && buft && dev->iface.supports_buft(dev, buft);
}

bool ggml_backend_dev_is_test(ggml_backend_dev_t dev) { return dev && dev->is_test; }

// ---- the registry ----

#define GGML_MAX_BACKEND_REGS 16

static ggml_backend_reg_t g_regs[GGML_MAX_BACKEND_REGS];
static size_t g_n_regs;
static bool g_builtin_done;
static int g_test_device = -1;   // -1: not decided yet (GGML_TEST_DEVICE read once)

void ggml_backend_register(ggml_backend_reg_t reg) {
    if (!reg) {
        return;
    }
    for (size_t i = 0; i < g_n_regs; i++) {
        if (g_regs[i] == reg) {
            return;
        }
    }
    if (g_n_regs == GGML_MAX_BACKEND_REGS) {
        GGML_LOG_ERROR("ggml_backend_register: too many backend registries (%d)", GGML_MAX_BACKEND_REGS);
        return;
    }
    g_regs[g_n_regs++] = reg;
}

void ggml_backend_unregister(ggml_backend_reg_t reg) {
    for (size_t i = 0; i < g_n_regs; i++) {
        if (g_regs[i] == reg) {
            memmove(&g_regs[i], &g_regs[i + 1], (g_n_regs - i - 1) * sizeof(g_regs[0]));
            g_n_regs--;
            return;
        }
    }
}

static bool test_device_wanted(void) {
    if (g_test_device < 0) {
        g_test_device = ggml_env()->test_device;
    }
    return g_test_device == 1;
}

// The CPU first, always; the test device when enabled.
static void registry_init_builtin(void) {
    if (!g_builtin_done) {
        g_builtin_done = true;
        ggml_backend_register(ggml_backend_cpu_reg());
    }
    if (test_device_wanted()) {
        ggml_backend_register(ggml_backend_testdev_reg());
    }
}

void ggml_backend_test_device_enable(bool enable) {
    g_test_device = enable ? 1 : 0;
    registry_init_builtin();
    if (!enable) {
        ggml_backend_unregister(ggml_backend_testdev_reg());
    }
}

size_t ggml_backend_reg_count(void) {
    registry_init_builtin();
    return g_n_regs;
}

ggml_backend_reg_t ggml_backend_reg_get(size_t index) {
    registry_init_builtin();
    if (index >= g_n_regs) {
        GGML_LOG_ERROR("ggml_backend_reg_get: index %zu out of range (%zu registries)", index, g_n_regs);
        return NULL;
    }
    return g_regs[index];
}

ggml_backend_reg_t ggml_backend_reg_by_name(const char * name) {
    registry_init_builtin();
    for (size_t i = 0; name && i < g_n_regs; i++) {
        if (strcmp(ggml_backend_reg_name(g_regs[i]), name) == 0) {
            return g_regs[i];
        }
    }
    return NULL;
}

const char * ggml_backend_reg_name(ggml_backend_reg_t reg) { return reg ? reg->iface.get_name(reg) : "NULL"; }

size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg) { return reg ? reg->iface.get_device_count(reg) : 0; }

ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index) {
    if (!reg || index >= ggml_backend_reg_dev_count(reg)) {
        return NULL;
    }
    return reg->iface.get_device(reg, index);
}

size_t ggml_backend_dev_count(void) {
    registry_init_builtin();
    size_t n = 0;
    for (size_t i = 0; i < g_n_regs; i++) {
        n += ggml_backend_reg_dev_count(g_regs[i]);
    }
    return n;
}

ggml_backend_dev_t ggml_backend_dev_get(size_t index) {
    registry_init_builtin();
    for (size_t i = 0; i < g_n_regs; i++) {
        const size_t n = ggml_backend_reg_dev_count(g_regs[i]);
        if (index < n) {
            return ggml_backend_reg_dev_get(g_regs[i], index);
        }
        index -= n;
    }
    GGML_LOG_ERROR("ggml_backend_dev_get: device index out of range (%zu devices)", ggml_backend_dev_count());
    return NULL;
}

ggml_backend_dev_t ggml_backend_dev_by_name(const char * name) {
    const size_t n = ggml_backend_dev_count();
    for (size_t i = 0; name && i < n; i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (strcmp(ggml_backend_dev_name(d), name) == 0) {
            return d;
        }
    }
    return NULL;
}

ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type) {
    const size_t n = ggml_backend_dev_count();
    for (size_t i = 0; i < n; i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) == type) {
            return d;
        }
    }
    return NULL;
}

ggml_backend_t ggml_backend_init_by_name(const char * name, const char * params) {
    ggml_backend_dev_t d = ggml_backend_dev_by_name(name);
    if (!d) {
        ggml_backend_reg_t r = ggml_backend_reg_by_name(name);
        d = ggml_backend_reg_dev_get(r, 0);
    }
    if (!d) {
        GGML_LOG_ERROR("ggml_backend_init_by_name: no device or registry named '%s'", name ? name : "(null)");
        return NULL;
    }
    return ggml_backend_dev_init(d, params);
}

ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char * params) {
    ggml_backend_dev_t d = ggml_backend_dev_by_type(type);
    return d ? ggml_backend_dev_init(d, params) : NULL;
}

ggml_backend_t ggml_backend_init_best(void) {
    ggml_backend_dev_t d = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    if (!d) {
        d = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    }
    return d ? ggml_backend_dev_init(d, NULL) : NULL;
}

// ---- optional backend libraries ----

ggml_backend_reg_t ggml_backend_load(const char * path) {
#if defined(_WIN32)
    GGML_LOG_ERROR("ggml_backend_load: loading backend libraries is not supported on this platform (%s)", path ? path : "(null)");
    return NULL;
#else
    if (!path) {
        GGML_LOG_ERROR("ggml_backend_load: NULL path");
        return NULL;
    }
    void * h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        GGML_LOG_INFO("ggml_backend_load: cannot load %s: %s", path, dlerror());
        return NULL;
    }
    ggml_backend_init_t init = (ggml_backend_init_t) dlsym(h, "ggml_backend_init");
    if (!init) {
        GGML_LOG_ERROR("ggml_backend_load: %s does not export ggml_backend_init", path);
        dlclose(h);
        return NULL;
    }
    ggml_backend_reg_t reg = init();
    if (!reg) {
        // the library said why (no driver, no device); keep running on what is here
        dlclose(h);
        return NULL;
    }
    if (reg->api_version != GGML_BACKEND_API_VERSION) {
        GGML_LOG_ERROR("ggml_backend_load: %s has backend API version %d, this library %d", path, reg->api_version,
                       GGML_BACKEND_API_VERSION);
        dlclose(h);
        return NULL;
    }
    registry_init_builtin();
    ggml_backend_register(reg);
    GGML_LOG_INFO("ggml_backend_load: loaded %s (%s, %zu devices)", path, ggml_backend_reg_name(reg),
                  ggml_backend_reg_dev_count(reg));
    return reg;   // the handle stays open for the life of the process
#endif
}

// Optional backend libraries, looked for next to this library.
static const char * const g_optional_libs[] = { "libggml-cuda.so" };
static bool g_optional_tried;

void ggml_backend_load_all_from_path(const char * dir_path) {
    registry_init_builtin();
#if !defined(_WIN32)
    char dir[4096] = ".";
    if (dir_path) {
        snprintf(dir, sizeof(dir), "%s", dir_path);
    } else {
        Dl_info info;
        if (dladdr((void *) ggml_backend_load_all_from_path, &info) && info.dli_fname) {
            snprintf(dir, sizeof(dir), "%s", info.dli_fname);
            char * slash = strrchr(dir, '/');
            if (slash) {
                *slash = '\0';
            } else {
                snprintf(dir, sizeof(dir), ".");
            }
        }
    }
    for (size_t i = 0; i < sizeof(g_optional_libs) / sizeof(g_optional_libs[0]); i++) {
        char path[4352];
        snprintf(path, sizeof(path), "%s/%s", dir, g_optional_libs[i]);
        FILE * f = fopen(path, "rb");
        if (!f) {
            continue;   // not built into this install
        }
        fclose(f);
        bool have = false;
        for (size_t r = 0; r < g_n_regs; r++) {
            have |= strcmp(ggml_backend_reg_name(g_regs[r]), "CUDA") == 0;
        }
        if (!have) {
            // a library that cannot run here has logged its one line of why (no driver, no
            // device, a missing dependency); the CPU does the work without a second line
            (void) ggml_backend_load(path);
        }
    }
#else
    (void) dir_path;
#endif
}

void ggml_backend_load_all(void) {
    if (g_optional_tried) {
        registry_init_builtin();
        return;
    }
    g_optional_tried = true;
    ggml_backend_load_all_from_path(NULL);
}

// ---- utilities ----

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    if (!ctx || !buft) {
        GGML_LOG_ERROR("ggml_backend_alloc_ctx_tensors_from_buft: NULL %s", ctx ? "buffer type" : "context");
        return NULL;
    }
    const size_t align = ggml_backend_buft_get_alignment(buft);
    size_t total = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (!t->data && !t->view_src) {
            total += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, t), align);
        }
    }
    if (total == 0) {
        GGML_LOG_WARN("ggml_backend_alloc_ctx_tensors_from_buft: every tensor of the context already has data");
        return NULL;
    }
    if (total > ggml_backend_buft_get_max_size(buft)) {
        GGML_LOG_ERROR("ggml_backend_alloc_ctx_tensors_from_buft: %zu bytes exceed the %s buffer type's maximum", total,
                       ggml_backend_buft_name(buft));
        return NULL;
    }
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, total);
    if (!buf) {
        return NULL;
    }
    char * p = ggml_backend_buffer_get_base(buf);
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (!t->data && !t->view_src) {
            if (ggml_backend_tensor_alloc(buf, t, p) != GGML_STATUS_SUCCESS) {
                ggml_backend_buffer_free(buf);
                return NULL;
            }
            p += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, t), align);
        }
    }
    // views of the new tensors follow their sources
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src && t->view_src->buffer == buf && !t->data) {
            t->buffer = buf;
            t->data = (char *) t->view_src->data + t->view_offs;
        }
    }
    return buf;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context * ctx, ggml_backend_t backend) {
    return ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_get_default_buffer_type(backend));
}
