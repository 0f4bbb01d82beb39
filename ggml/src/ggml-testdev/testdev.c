// testdev.c — a backend that behaves like a discrete GPU, for tests without one. Off unless
// GGML_TEST_DEVICE=1 or ggml_backend_test_device_enable(true).
//
// Its buffers are separate memory that only it touches: anonymous mappings kept PROT_NONE
// except while the device itself reads or writes them (tensor_set/get/memset/copy, compute),
// so any other code that reads device memory directly (a missing copy in the scheduler, the
// llama layer touching t->data) faults at once instead of passing by luck. It supports a
// subset of the ops (no GET_ROWS, ARGMAX, SUM_ROWS, CONCAT, DIAG_MASK_INF; no Q2_K / Q3_K
// matmuls), so that the scheduler's CPU fallback is exercised too, and computes with the CPU
// kernels on its own thread pool.
#include "../ggml-backend-impl.h"
#include "ggml-cpu.h"
#include "../ggml-core.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TESTDEV_MAX_BUFFERS 4096

struct testdev_buffer_ctx {
    void * mem;
    size_t mapped;   // bytes mapped (size rounded up to pages)
};

// Open/closed state of every live device buffer: open while the device is working (nested).
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct testdev_buffer_ctx * g_buffers[TESTDEV_MAX_BUFFERS];
static int g_n_buffers;
static int g_active;

static void testdev_protect(struct testdev_buffer_ctx * c, bool open) {
    if (c->mapped && mprotect(c->mem, c->mapped, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
        GGML_LOG_WARN("testdev: mprotect failed; device memory stays %s", open ? "closed" : "open");
    }
}

static void testdev_enter(void) {
    pthread_mutex_lock(&g_lock);
    if (g_active++ == 0) {
        for (int i = 0; i < g_n_buffers; i++) testdev_protect(g_buffers[i], true);
    }
    pthread_mutex_unlock(&g_lock);
}

static void testdev_leave(void) {
    pthread_mutex_lock(&g_lock);
    if (--g_active == 0) {
        for (int i = 0; i < g_n_buffers; i++) testdev_protect(g_buffers[i], false);
    }
    pthread_mutex_unlock(&g_lock);
}

// ---- buffers ----

static void testdev_buffer_free(ggml_backend_buffer_t b) {
    struct testdev_buffer_ctx * c = b->context;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_n_buffers; i++) {
        if (g_buffers[i] == c) {
            g_buffers[i] = g_buffers[--g_n_buffers];
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (c->mapped) munmap(c->mem, c->mapped);
    free(c);
}

static void * testdev_buffer_base(ggml_backend_buffer_t b) { return ((struct testdev_buffer_ctx *) b->context)->mem; }

static void testdev_buffer_memset(ggml_backend_buffer_t b, struct ggml_tensor * t, uint8_t v, size_t off, size_t n) {
    (void) b;
    testdev_enter();
    memset((char *) t->data + off, v, n);
    testdev_leave();
}

static void testdev_buffer_set(ggml_backend_buffer_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n) {
    (void) b;
    testdev_enter();
    memcpy((char *) t->data + off, d, n);
    testdev_leave();
}

static void testdev_buffer_get(ggml_backend_buffer_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n) {
    (void) b;
    testdev_enter();
    memcpy(d, (const char *) t->data + off, n);
    testdev_leave();
}

static bool testdev_buffer_cpy(ggml_backend_buffer_t b, const struct ggml_tensor * src, struct ggml_tensor * dst);

static void testdev_buffer_clear(ggml_backend_buffer_t b, uint8_t v) {
    testdev_enter();
    memset(testdev_buffer_base(b), v, b->size);
    testdev_leave();
}

static const struct ggml_backend_buffer_i g_testdev_buffer_i = {
    .free_buffer = testdev_buffer_free,
    .get_base = testdev_buffer_base,
    .init_tensor = NULL,
    .memset_tensor = testdev_buffer_memset,
    .set_tensor = testdev_buffer_set,
    .get_tensor = testdev_buffer_get,
    .cpy_tensor = testdev_buffer_cpy,
    .clear = testdev_buffer_clear,
};

// device to device only (the generic path handles host memory on either side)
static bool testdev_buffer_cpy(ggml_backend_buffer_t b, const struct ggml_tensor * src, struct ggml_tensor * dst) {
    (void) b;
    ggml_backend_buffer_t sb = src->view_src ? src->view_src->buffer : src->buffer;
    if (!sb || sb->iface.get_base != testdev_buffer_base) return false;
    testdev_enter();
    memcpy(dst->data, src->data, ggml_nbytes(src));
    testdev_leave();
    return true;
}

static const char * testdev_buft_name(ggml_backend_buffer_type_t t) {
    (void) t;
    return "TestDevice0";
}

static ggml_backend_buffer_t testdev_buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    const size_t page = (size_t) sysconf(_SC_PAGESIZE);
    const size_t mapped = GGML_PAD(size ? size : 1, page);
    struct testdev_buffer_ctx * c = GGML_CALLOC(1, sizeof(*c));
    if (!c) return NULL;
    c->mem = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->mem == MAP_FAILED) {
        GGML_LOG_ERROR("testdev: cannot allocate %zu bytes of device memory", size);
        free(c);
        return NULL;
    }
    c->mapped = mapped;
    ggml_backend_buffer_t b = ggml_backend_buffer_init(buft, g_testdev_buffer_i, c, size);
    if (!b) {
        munmap(c->mem, mapped);
        free(c);
        return NULL;
    }
    pthread_mutex_lock(&g_lock);
    if (g_n_buffers == TESTDEV_MAX_BUFFERS) {
        pthread_mutex_unlock(&g_lock);
        GGML_LOG_ERROR("testdev: more than %d live buffers", TESTDEV_MAX_BUFFERS);
        ggml_backend_buffer_free(b);
        return NULL;
    }
    g_buffers[g_n_buffers++] = c;
    if (g_active == 0) testdev_protect(c, false);
    pthread_mutex_unlock(&g_lock);
    return b;
}

static size_t testdev_buft_alignment(ggml_backend_buffer_type_t t) {
    (void) t;
    return 128;
}

static bool testdev_buft_is_host(ggml_backend_buffer_type_t t) {
    (void) t;
    return false;
}

static struct ggml_backend_device g_testdev_dev;

static struct ggml_backend_buffer_type g_testdev_buft = {
    .iface = { testdev_buft_name, testdev_buft_alloc, testdev_buft_alignment, NULL, NULL, testdev_buft_is_host },
    .device = &g_testdev_dev,
    .context = NULL,
};

// ---- backend ----

struct testdev_backend_ctx {
    struct ggml_threadpool * tp;
};

static const char * testdev_backend_name(ggml_backend_t be) {
    (void) be;
    return "TestDevice0";
}

static void testdev_backend_free(ggml_backend_t be) {
    struct testdev_backend_ctx * c = be->context;
    ggml_threadpool_free(c->tp);
    free(c);
    free(be);
}

static enum ggml_status testdev_graph_compute(ggml_backend_t be, struct ggml_cgraph * gf) {
    struct testdev_backend_ctx * c = be->context;
    testdev_enter();
    const enum ggml_status st = ggml_graph_compute(gf, c->tp);
    testdev_leave();
    return st;
}

static const struct ggml_backend_i g_testdev_backend_i = {
    .get_name = testdev_backend_name,
    .free = testdev_backend_free,
    .synchronize = NULL,
    .graph_compute = testdev_graph_compute,
    .graph_unchanged = NULL,
    .cpy_tensor_out = NULL,
};

// ---- device and registry ----

static const char * testdev_dev_name(ggml_backend_dev_t d) {
    (void) d;
    return "TestDevice0";
}

static const char * testdev_dev_description(ggml_backend_dev_t d) {
    (void) d;
    return "llama_py test device (separate memory, CPU kernels, an op subset)";
}

static void testdev_dev_memory(ggml_backend_dev_t d, size_t * free_mem, size_t * total) {
    (void) d;
    *total = (size_t) 16 << 30;
    *free_mem = *total;
}

static enum ggml_backend_dev_type testdev_dev_type(ggml_backend_dev_t d) {
    (void) d;
    return GGML_BACKEND_DEVICE_TYPE_GPU;
}

static ggml_backend_t testdev_dev_init(ggml_backend_dev_t d, const char * params) {
    (void) params;
    ggml_backend_t be = GGML_CALLOC(1, sizeof(*be));
    struct testdev_backend_ctx * c = GGML_CALLOC(1, sizeof(*c));
    if (be && c) c->tp = ggml_threadpool_new(ggml_cpu_n_physical_cores());
    if (!be || !c || !c->tp) {
        GGML_LOG_ERROR("testdev: cannot create the backend");
        free(be);
        free(c);
        return NULL;
    }
    be->iface = g_testdev_backend_i;
    be->device = d;
    be->context = c;
    return be;
}

static ggml_backend_buffer_type_t testdev_dev_buft(ggml_backend_dev_t d) {
    (void) d;
    return &g_testdev_buft;
}

static bool testdev_dev_supports_op(ggml_backend_dev_t d, const struct ggml_tensor * op) {
    (void) d;
    switch (op->op) {
        case GGML_OP_GET_ROWS:
        case GGML_OP_ARGMAX:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_CONCAT:
        case GGML_OP_DIAG_MASK_INF: return false;
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID: return op->src[0]->type != GGML_TYPE_Q2_K && op->src[0]->type != GGML_TYPE_Q3_K;
        default: return op->op < GGML_OP_COUNT;
    }
}

static bool testdev_dev_supports_buft(ggml_backend_dev_t d, ggml_backend_buffer_type_t buft) {
    (void) d;
    return buft == &g_testdev_buft;
}

static const char * testdev_reg_name(ggml_backend_reg_t r) {
    (void) r;
    return "TestDevice";
}

static size_t testdev_reg_dev_count(ggml_backend_reg_t r) {
    (void) r;
    return 1;
}

static ggml_backend_dev_t testdev_reg_dev_get(ggml_backend_reg_t r, size_t i) {
    (void) r;
    (void) i;
    return &g_testdev_dev;
}

static struct ggml_backend_reg g_testdev_reg = {
    .api_version = GGML_BACKEND_API_VERSION,
    .iface = { testdev_reg_name, testdev_reg_dev_count, testdev_reg_dev_get },
    .context = NULL,
};

static struct ggml_backend_device g_testdev_dev = {
    .iface = { testdev_dev_name, testdev_dev_description, testdev_dev_memory, testdev_dev_type, testdev_dev_init,
               testdev_dev_buft, testdev_dev_supports_op, testdev_dev_supports_buft },
    .reg = &g_testdev_reg,
    .context = NULL,
    .is_test = true,
};

ggml_backend_reg_t ggml_backend_testdev_reg(void) { return &g_testdev_reg; }
