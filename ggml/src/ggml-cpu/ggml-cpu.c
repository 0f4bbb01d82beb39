// ggml-cpu.c — the CPU behind ggml-backend.h: host buffers, the repacked-weights buffer type,
// the backend (today's thread pool, kernels and fusion) and its device and registry.
#include "../ggml-backend-impl.h"
#include "ggml-cpu.h"
#include "../ggml-core.h"
#include "cpu-impl.h"
#include "repack.h"
#include "threadpool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ---- host buffers ----

struct cpu_buffer_ctx {
    void * data;
    bool owned;
};

static void cpu_buffer_free(ggml_backend_buffer_t b) {
    struct cpu_buffer_ctx * c = b->context;
    if (c->owned) {
        ggml_aligned_free(c->data);
    }
    free(c);
}

static void * cpu_buffer_get_base(ggml_backend_buffer_t b) { return ((struct cpu_buffer_ctx *) b->context)->data; }

static void cpu_buffer_memset_tensor(ggml_backend_buffer_t b, struct ggml_tensor * t, uint8_t v, size_t off, size_t n) {
    (void) b;
    memset((char *) t->data + off, v, n);
}

static void cpu_buffer_set_tensor(ggml_backend_buffer_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n) {
    (void) b;
    memcpy((char *) t->data + off, d, n);
}

static void cpu_buffer_get_tensor(ggml_backend_buffer_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n) {
    (void) b;
    memcpy(d, (const char *) t->data + off, n);
}

static bool cpu_buffer_cpy_tensor(ggml_backend_buffer_t b, const struct ggml_tensor * src, struct ggml_tensor * dst) {
    (void) b;
    ggml_backend_buffer_t sb = src->view_src ? src->view_src->buffer : src->buffer;
    if (ggml_backend_buffer_is_host(sb)) {
        memcpy(dst->data, src->data, ggml_nbytes(src));
        return true;
    }
    return false;
}

static void cpu_buffer_clear(ggml_backend_buffer_t b, uint8_t v) { memset(cpu_buffer_get_base(b), v, b->size); }

static const struct ggml_backend_buffer_i g_cpu_buffer_i = {
    .free_buffer = cpu_buffer_free,
    .get_base = cpu_buffer_get_base,
    .init_tensor = NULL,
    .memset_tensor = cpu_buffer_memset_tensor,
    .set_tensor = cpu_buffer_set_tensor,
    .get_tensor = cpu_buffer_get_tensor,
    .cpy_tensor = cpu_buffer_cpy_tensor,
    .clear = cpu_buffer_clear,
};

static const char * cpu_buft_name(ggml_backend_buffer_type_t t) {
    (void) t;
    return "CPU";
}

static ggml_backend_buffer_t cpu_buffer_make(ggml_backend_buffer_type_t buft, void * data, size_t size, bool owned) {
    struct cpu_buffer_ctx * c = GGML_MALLOC(sizeof(*c));
    if (!c) {
        if (owned) ggml_aligned_free(data);
        GGML_LOG_ERROR("ggml_backend_cpu: out of memory");
        return NULL;
    }
    c->data = data;
    c->owned = owned;
    ggml_backend_buffer_t b = ggml_backend_buffer_init(buft, g_cpu_buffer_i, c, size);
    if (!b) {
        if (owned) ggml_aligned_free(data);
        free(c);
    }
    return b;
}

static ggml_backend_buffer_t cpu_buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    void * data = ggml_aligned_malloc(size ? size : 1);
    if (!data) {
        GGML_LOG_ERROR("ggml_backend_cpu: cannot allocate a buffer of %zu bytes", size);
        return NULL;
    }
    return cpu_buffer_make(buft, data, size, true);
}

static size_t cpu_buft_alignment(ggml_backend_buffer_type_t t) {
    (void) t;
    return GGML_MEM_ALIGN;
}

static bool cpu_buft_is_host(ggml_backend_buffer_type_t t) {
    (void) t;
    return true;
}

static struct ggml_backend_buffer_type g_cpu_buft = {
    .iface = { cpu_buft_name, cpu_buft_alloc, cpu_buft_alignment, NULL, NULL, cpu_buft_is_host },
    .device = NULL,   // set when the registry is first used
    .context = NULL,
};

ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void) { return &g_cpu_buft; }

ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void * ptr, size_t size) {
    if (!ptr && size) {
        GGML_LOG_ERROR("ggml_backend_cpu_buffer_from_ptr: NULL pointer");
        return NULL;
    }
    return cpu_buffer_make(&g_cpu_buft, ptr, size, false);
}

// ---- repacked weights: a buffer made by the repacker, holding the layouts of many tensors ----

struct repack_buffer_ctx {
    void * mem;                     // ggml_cpu_repack_all's buffer
    struct ggml_tensor ** ts;       // the tensors it describes
    int n;
};

static void repack_buffer_free(ggml_backend_buffer_t b) {
    struct repack_buffer_ctx * c = b->context;
    ggml_cpu_repack_free(c->ts, c->n, c->mem);
    for (int i = 0; i < c->n; i++) {
        if (c->ts[i] && c->ts[i]->buffer == b) {
            c->ts[i]->buffer = NULL;
        }
    }
    free(c->ts);
    free(c);
}

static void * repack_buffer_get_base(ggml_backend_buffer_t b) { return ((struct repack_buffer_ctx *) b->context)->mem; }

// Only the CPU kernels understand the layout: the tensors' stored rows may be gone, so
// reading or writing them through the buffer is refused.
static void repack_buffer_memset_tensor(ggml_backend_buffer_t b, struct ggml_tensor * t, uint8_t v, size_t off, size_t n) {
    (void) b;
    (void) v;
    (void) off;
    (void) n;
    GGML_LOG_ERROR("ggml_backend_tensor_memset: '%s' is a repacked CPU weight (read-only)", t->name);
}

static void repack_buffer_set_tensor(ggml_backend_buffer_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n) {
    (void) b;
    (void) d;
    (void) off;
    (void) n;
    GGML_LOG_ERROR("ggml_backend_tensor_set: '%s' is a repacked CPU weight (read-only)", t->name);
}

static void repack_buffer_get_tensor(ggml_backend_buffer_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n) {
    (void) b;
    (void) d;
    (void) off;
    (void) n;
    GGML_LOG_ERROR("ggml_backend_tensor_get: '%s' is a repacked CPU weight: its stored layout is not kept", t->name);
}

static void repack_buffer_clear(ggml_backend_buffer_t b, uint8_t v) {
    (void) b;
    (void) v;
}

static const struct ggml_backend_buffer_i g_repack_buffer_i = {
    .free_buffer = repack_buffer_free,
    .get_base = repack_buffer_get_base,
    .init_tensor = NULL,
    .memset_tensor = repack_buffer_memset_tensor,
    .set_tensor = repack_buffer_set_tensor,
    .get_tensor = repack_buffer_get_tensor,
    .cpy_tensor = NULL,
    .clear = repack_buffer_clear,
};

static const char * repack_buft_name(ggml_backend_buffer_type_t t) {
    (void) t;
    return "CPU_REPACK";
}

static ggml_backend_buffer_t repack_buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    (void) buft;
    (void) size;
    GGML_LOG_ERROR("ggml_backend_buft_alloc_buffer: CPU_REPACK buffers are made by ggml_backend_cpu_repack_weights");
    return NULL;
}

static struct ggml_backend_buffer_type g_repack_buft = {
    .iface = { repack_buft_name, repack_buft_alloc, cpu_buft_alignment, NULL, NULL, NULL },
    .device = NULL,
    .context = NULL,
};

ggml_backend_buffer_type_t ggml_backend_cpu_repack_buffer_type(void) { return &g_repack_buft; }

size_t ggml_backend_cpu_repack_size(const struct ggml_tensor * t) { return ggml_cpu_repack_size(t); }

bool ggml_backend_cpu_is_repacked(const struct ggml_tensor * t) { return ggml_cpu_repack_panels(t) != NULL; }

ggml_backend_buffer_t ggml_backend_cpu_repack_weights(struct ggml_tensor * const * ts, int n, int n_threads,
                                                      const struct ggml_backend_cpu_repack_parts * parts,
                                                      ggml_backend_cpu_repack_cb cb, void * cb_data) {
    if (!ts || n <= 0) {
        return NULL;
    }
    struct ggml_cpu_repack_fused * fused = NULL;
    if (parts) {
        fused = GGML_CALLOC((size_t) n, sizeof(*fused));
        if (!fused) return NULL;
        for (int i = 0; i < n; i++) {
            fused[i].n_parts = parts[i].n_parts;
            memcpy(fused[i].parts, parts[i].parts, sizeof(fused[i].parts));
        }
    }
    struct repack_buffer_ctx * c = GGML_CALLOC(1, sizeof(*c));
    struct ggml_tensor ** copy = GGML_MALLOC((size_t) n * sizeof(*copy));
    if (!c || !copy) {
        free(fused);
        free(c);
        free(copy);
        return NULL;
    }
    void * mem = ggml_cpu_repack_all_cb(ts, n, n_threads, fused, (ggml_cpu_repack_done_t) cb, cb_data);
    free(fused);
    if (!mem) {
        free(c);
        free(copy);
        return NULL;
    }
    size_t total;
    memcpy(&total, mem, sizeof(total));   // the repacker's buffer opens with its size
    memcpy(copy, ts, (size_t) n * sizeof(*copy));
    c->mem = mem;
    c->ts = copy;
    c->n = n;
    ggml_backend_buffer_t b = ggml_backend_buffer_init(&g_repack_buft, g_repack_buffer_i, c, total);
    if (!b) {
        ggml_cpu_repack_free(copy, n, mem);
        free(c);
        free(copy);
        return NULL;
    }
    ggml_backend_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    for (int i = 0; i < n; i++) {
        if (ts[i] && ggml_cpu_repack_panels(ts[i])) {
            ts[i]->buffer = b;
        }
    }
    return b;
}

// ---- the backend ----

struct cpu_backend_ctx {
    struct ggml_threadpool * tp;
    int tp_size;            // threads the pool was created with
    int n_threads;          // threads the next computation uses
    int max_threads;        // most threads ever asked for: the pool's size
    ggml_abort_callback abort_cb;
    void * abort_data;
};

static const char * cpu_backend_name(ggml_backend_t be) {
    (void) be;
    return "CPU";
}

static void cpu_backend_free(ggml_backend_t be) {
    struct cpu_backend_ctx * c = be->context;
    ggml_threadpool_free(c->tp);
    free(c);
    free(be);
}

// (Re)creates the pool when more threads are wanted than it has.
static bool cpu_backend_ensure_pool(struct cpu_backend_ctx * c) {
    if (c->tp && c->tp_size >= c->n_threads) {
        return true;
    }
    const int want = c->max_threads > c->n_threads ? c->max_threads : c->n_threads;
    ggml_threadpool_free(c->tp);
    c->tp = ggml_threadpool_new(want);
    c->tp_size = c->tp ? want : 0;
    if (!c->tp) {
        GGML_LOG_ERROR("ggml_backend_cpu: cannot create a thread pool of %d threads", want);
        return false;
    }
    ggml_threadpool_set_abort_callback(c->tp, c->abort_cb, c->abort_data);
    return true;
}

static enum ggml_status cpu_backend_graph_compute(ggml_backend_t be, struct ggml_cgraph * gf) {
    struct cpu_backend_ctx * c = be->context;
    if (!cpu_backend_ensure_pool(c)) {
        return GGML_STATUS_ALLOC_FAILED;
    }
    ggml_threadpool_set_n_threads(c->tp, c->n_threads);
    return ggml_graph_compute(gf, c->tp);
}

static void cpu_backend_graph_unchanged(ggml_backend_t be, struct ggml_cgraph * gf) {
    struct cpu_backend_ctx * c = be->context;
    if (c->tp) {
        ggml_threadpool_graph_unchanged(c->tp, gf);
    }
}

static const struct ggml_backend_i g_cpu_backend_i = {
    .get_name = cpu_backend_name,
    .free = cpu_backend_free,
    .synchronize = NULL,
    .graph_compute = cpu_backend_graph_compute,
    .graph_unchanged = cpu_backend_graph_unchanged,
    .cpy_tensor_out = NULL,
};

bool ggml_backend_is_cpu(ggml_backend_t be) { return be && be->iface.graph_compute == cpu_backend_graph_compute; }

void ggml_backend_cpu_set_n_threads(ggml_backend_t be, int n_threads) {
    if (!ggml_backend_is_cpu(be)) {
        GGML_LOG_ERROR("ggml_backend_cpu_set_n_threads: not a CPU backend");
        return;
    }
    struct cpu_backend_ctx * c = be->context;
    c->n_threads = n_threads < 1 ? 1 : n_threads;
    if (c->n_threads > c->max_threads) c->max_threads = c->n_threads;
}

void ggml_backend_cpu_set_abort_callback(ggml_backend_t be, ggml_abort_callback cb, void * data) {
    if (!ggml_backend_is_cpu(be)) {
        GGML_LOG_ERROR("ggml_backend_cpu_set_abort_callback: not a CPU backend");
        return;
    }
    struct cpu_backend_ctx * c = be->context;
    c->abort_cb = cb;
    c->abort_data = data;
    if (c->tp) {
        ggml_threadpool_set_abort_callback(c->tp, cb, data);
    }
}

// ---- device and registry ----

static struct ggml_backend_device g_cpu_dev;
static struct ggml_backend_reg g_cpu_reg;

static const char * cpu_dev_name(ggml_backend_dev_t d) {
    (void) d;
    return "CPU";
}

static const char * cpu_dev_description(ggml_backend_dev_t d) {
    (void) d;
    static char desc[192];
    snprintf(desc, sizeof(desc), "CPU (%s kernels: %s)", ggml_cpu_variant(), ggml_cpu_features());
    return desc;
}

static void cpu_dev_memory(ggml_backend_dev_t d, size_t * free_mem, size_t * total) {
    (void) d;
    *free_mem = *total = 0;
#if defined(_SC_PHYS_PAGES) && defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    const long page = sysconf(_SC_PAGESIZE);
    const long tot = sysconf(_SC_PHYS_PAGES), av = sysconf(_SC_AVPHYS_PAGES);
    if (page > 0 && tot > 0) *total = (size_t) tot * (size_t) page;
    if (page > 0 && av > 0) *free_mem = (size_t) av * (size_t) page;
#endif
}

static enum ggml_backend_dev_type cpu_dev_type(ggml_backend_dev_t d) {
    (void) d;
    return GGML_BACKEND_DEVICE_TYPE_CPU;
}

static ggml_backend_t cpu_dev_init(ggml_backend_dev_t d, const char * params) {
    (void) d;
    (void) params;
    return ggml_backend_cpu_init();
}

static ggml_backend_buffer_type_t cpu_dev_buft(ggml_backend_dev_t d) {
    (void) d;
    return &g_cpu_buft;
}

static bool cpu_dev_supports_op(ggml_backend_dev_t d, const struct ggml_tensor * op) {
    (void) d;
    // every op has a CPU kernel (sources elsewhere are copied in by the scheduler)
    return op->op < GGML_OP_COUNT;
}

static bool cpu_dev_supports_buft(ggml_backend_dev_t d, ggml_backend_buffer_type_t buft) {
    (void) d;
    return buft == &g_cpu_buft || buft == &g_repack_buft || ggml_backend_buft_is_host(buft);
}

static const char * cpu_reg_name(ggml_backend_reg_t r) {
    (void) r;
    return "CPU";
}

static size_t cpu_reg_dev_count(ggml_backend_reg_t r) {
    (void) r;
    return 1;
}

static ggml_backend_dev_t cpu_reg_dev_get(ggml_backend_reg_t r, size_t i) {
    (void) r;
    (void) i;
    return &g_cpu_dev;
}

static struct ggml_backend_device g_cpu_dev = {
    .iface = { cpu_dev_name, cpu_dev_description, cpu_dev_memory, cpu_dev_type, cpu_dev_init, cpu_dev_buft, cpu_dev_supports_op,
               cpu_dev_supports_buft },
    .reg = &g_cpu_reg,
    .context = NULL,
    .is_test = false,
};

static struct ggml_backend_reg g_cpu_reg = {
    .api_version = GGML_BACKEND_API_VERSION,
    .iface = { cpu_reg_name, cpu_reg_dev_count, cpu_reg_dev_get },
    .context = NULL,
};

ggml_backend_reg_t ggml_backend_cpu_reg(void) {
    g_cpu_buft.device = &g_cpu_dev;
    g_repack_buft.device = &g_cpu_dev;
    return &g_cpu_reg;
}

ggml_backend_t ggml_backend_cpu_init(void) {
    ggml_backend_cpu_reg();
    ggml_backend_t be = GGML_CALLOC(1, sizeof(*be));
    struct cpu_backend_ctx * c = GGML_CALLOC(1, sizeof(*c));
    if (!be || !c) {
        free(be);
        free(c);
        GGML_LOG_ERROR("ggml_backend_cpu_init: out of memory");
        return NULL;
    }
    c->n_threads = ggml_cpu_n_physical_cores();
    be->iface = g_cpu_backend_i;
    be->device = &g_cpu_dev;
    be->context = c;
    return be;
}
