// ggml-cuda.cu — the CUDA backend's registry, devices, buffers and backend (the vtables of
// ggml-backend-impl.h), built as libggml-cuda.so and loaded by ggml_backend_load_all.
//
// ggml_backend_init() returns NULL after one log line when there is no driver or no device,
// so the same install runs on the CPU. Device memory is one cudaMalloc per buffer (not host
// visible); tensor data moves with cudaMemcpy. A backend owns a stream; graph_compute queues
// one kernel family per node (views need none), checks every launch, then synchronizes, so
// a failing kernel is GGML_STATUS_FAILED with its reason logged, never an abort.
//
// CUDA graphs: when the scheduler promises that the next graph is unchanged (graph_unchanged)
// and its signature (ops, shapes, strides, data addresses, op params) equals the previous
// one's, the node launches are captured once into a cudaGraphExec and replayed from then on:
// decoding a token becomes one launch. Any change of the signature drops the captured graph.
// GGML_CUDA_GRAPHS=0 turns this off.
#include "common.cuh"
#include "quants.cuh"
#include "../ggml-env.h"

#include <new>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- errors and the pool ----

bool cuda_ok(cudaError_t err, const char * what) {
    if (err == cudaSuccess) return true;
    if (err == cudaErrorCudartUnloading) {   // process exit: buffers freed after the runtime
        (void) cudaGetLastError();
        return false;
    }
    GGML_LOG_ERROR("CUDA error %d (%s) in %s", (int) err, cudaGetErrorString(err), what);
    (void) cudaGetLastError();
    return false;
}

void cuda_pool_reset(cuda_backend_ctx * ctx) { ctx->pool.used = 0; }

void * cuda_pool_alloc(cuda_backend_ctx * ctx, size_t size) {
    cuda_pool & p = ctx->pool;
    size = GGML_PAD(size ? size : 1, 256);
    if (p.used + size > p.cap) {
        if (p.frozen) {
            GGML_LOG_DEBUG("CUDA: scratch would grow during graph capture");
            return nullptr;
        }
        if (p.base) {
            if (p.n_retired == (int) (sizeof(p.retired) / sizeof(p.retired[0]))) {
                GGML_LOG_ERROR("CUDA: scratch pool outgrown too many times in one computation");
                return nullptr;
            }
            p.retired[p.n_retired++] = p.base;
        }
        const size_t cap = GGML_MAX(2 * p.cap, GGML_MAX((size_t) 16 << 20, 2 * (p.used + size)));
        void * base = nullptr;
        if (!cuda_ok(cudaMalloc(&base, cap), "cudaMalloc (scratch)")) {
            GGML_LOG_ERROR("CUDA: out of device memory for %zu bytes of scratch", cap);
            p.base = nullptr;
            p.cap = 0;
            p.used = 0;
            return nullptr;
        }
        p.base = (char *) base;
        p.cap = cap;
        p.used = 0;
    }
    void * r = p.base + p.used;
    p.used += size;
    return r;
}

void cuda_pool_release_retired(cuda_backend_ctx * ctx) {
    for (int i = 0; i < ctx->pool.n_retired; i++) cudaFree(ctx->pool.retired[i]);
    ctx->pool.n_retired = 0;
}

void cuda_pool_free(cuda_backend_ctx * ctx) {
    cuda_pool_release_retired(ctx);
    if (ctx->pool.base) cudaFree(ctx->pool.base);
    ctx->pool.base = nullptr;
    ctx->pool.cap = ctx->pool.used = 0;
}

// ---- devices ----

struct cuda_device_ctx {
    int device;
    char name[16];
    char description[320];
    int cc;
    int sm_count;
};

static cuda_device_ctx g_dev_ctx[CUDA_MAX_DEVICES];
static struct ggml_backend_device g_devs[CUDA_MAX_DEVICES];
static struct ggml_backend_buffer_type g_bufts[CUDA_MAX_DEVICES];
static int g_n_devices;

// ---- buffers ----

struct cuda_buffer_ctx {
    int device;
    void * ptr;
};

static void cuda_buffer_free(ggml_backend_buffer_t b) {
    cuda_buffer_ctx * c = (cuda_buffer_ctx *) b->context;
    cudaSetDevice(c->device);
    cuda_ok(cudaFree(c->ptr), "cudaFree");
    free(c);
}

static void * cuda_buffer_base(ggml_backend_buffer_t b) { return ((cuda_buffer_ctx *) b->context)->ptr; }

static void cuda_buffer_memset(ggml_backend_buffer_t b, struct ggml_tensor * t, uint8_t v, size_t off, size_t n) {
    cuda_buffer_ctx * c = (cuda_buffer_ctx *) b->context;
    cudaSetDevice(c->device);
    if (!cuda_ok(cudaMemset((char *) t->data + off, v, n), "cudaMemset (tensor)")) {
        GGML_LOG_ERROR("CUDA: memset of tensor '%s' failed", t->name);
    }
}

static void cuda_buffer_set(ggml_backend_buffer_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n) {
    cuda_buffer_ctx * c = (cuda_buffer_ctx *) b->context;
    cudaSetDevice(c->device);
    if (!cuda_ok(cudaMemcpy((char *) t->data + off, d, n, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)")) {
        GGML_LOG_ERROR("CUDA: writing %zu bytes of tensor '%s' failed", n, t->name);
    }
}

static void cuda_buffer_get(ggml_backend_buffer_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n) {
    cuda_buffer_ctx * c = (cuda_buffer_ctx *) b->context;
    cudaSetDevice(c->device);
    if (!cuda_ok(cudaMemcpy(d, (const char *) t->data + off, n, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)")) {
        GGML_LOG_ERROR("CUDA: reading %zu bytes of tensor '%s' failed", n, t->name);
        memset(d, 0, n);
    }
}

static bool cuda_buffer_cpy(ggml_backend_buffer_t b, const struct ggml_tensor * src, struct ggml_tensor * dst);

static void cuda_buffer_clear(ggml_backend_buffer_t b, uint8_t v) {
    cuda_buffer_ctx * c = (cuda_buffer_ctx *) b->context;
    cudaSetDevice(c->device);
    cuda_ok(cudaMemset(c->ptr, v, b->size), "cudaMemset (buffer)");
}

static const struct ggml_backend_buffer_i g_cuda_buffer_i = {
    /* free_buffer   */ cuda_buffer_free,
    /* get_base      */ cuda_buffer_base,
    /* init_tensor   */ nullptr,
    /* memset_tensor */ cuda_buffer_memset,
    /* set_tensor    */ cuda_buffer_set,
    /* get_tensor    */ cuda_buffer_get,
    /* cpy_tensor    */ cuda_buffer_cpy,
    /* clear         */ cuda_buffer_clear,
};

// device to device (same or another CUDA device); the generic path handles host memory
static bool cuda_buffer_cpy(ggml_backend_buffer_t b, const struct ggml_tensor * src, struct ggml_tensor * dst) {
    ggml_backend_buffer_t sb = src->view_src ? src->view_src->buffer : src->buffer;
    if (!sb || sb->iface.get_base != cuda_buffer_base) return false;
    const int sdev = ((cuda_buffer_ctx *) sb->context)->device;
    const int ddev = ((cuda_buffer_ctx *) b->context)->device;
    cudaSetDevice(ddev);
    if (sdev == ddev) {
        return cuda_ok(cudaMemcpy(dst->data, src->data, ggml_nbytes(src), cudaMemcpyDeviceToDevice),
                       "cudaMemcpy (device to device)");
    }
    return cuda_ok(cudaMemcpyPeer(dst->data, ddev, src->data, sdev, ggml_nbytes(src)), "cudaMemcpyPeer");
}

static const char * cuda_buft_name(ggml_backend_buffer_type_t t) { return ((cuda_device_ctx *) t->context)->name; }

static ggml_backend_buffer_t cuda_buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    cuda_device_ctx * d = (cuda_device_ctx *) buft->context;
    cudaSetDevice(d->device);
    void * ptr = nullptr;
    const cudaError_t err = cudaMalloc(&ptr, size ? size : 1);
    if (err != cudaSuccess) {
        (void) cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        GGML_LOG_ERROR("CUDA: cannot allocate %.1f MiB on %s (%s; %.1f MiB free of %.1f MiB)", size / 1048576.0, d->name,
                       cudaGetErrorString(err), free_b / 1048576.0, total_b / 1048576.0);
        return nullptr;
    }
    cuda_buffer_ctx * c = (cuda_buffer_ctx *) calloc(1, sizeof(*c));
    if (!c) {
        cudaFree(ptr);
        return nullptr;
    }
    c->device = d->device;
    c->ptr = ptr;
    ggml_backend_buffer_t b = ggml_backend_buffer_init(buft, g_cuda_buffer_i, c, size);
    if (!b) {
        cudaFree(ptr);
        free(c);
    }
    return b;
}

static size_t cuda_buft_alignment(ggml_backend_buffer_type_t t) {
    (void) t;
    return 256;
}

static bool cuda_buft_is_host(ggml_backend_buffer_type_t t) {
    (void) t;
    return false;
}

// ---- graph compute ----

static bool cuda_compute_node(cuda_backend_ctx * ctx, struct ggml_tensor * n) {
    switch (n->op) {
        case GGML_OP_DUP:
        case GGML_OP_CONT: return cuda_op_cpy(ctx, n->src[0], n);
        case GGML_OP_CPY: return cuda_op_cpy(ctx, n->src[0], n);
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV: return cuda_op_binary(ctx, n);
        case GGML_OP_SCALE:
        case GGML_OP_SILU:
        case GGML_OP_GELU:
        case GGML_OP_TANH:
        case GGML_OP_SIGMOID:
        case GGML_OP_SOFTPLUS: return cuda_op_unary(ctx, n);
        case GGML_OP_CLAMP: return cuda_op_unary(ctx, n);
        case GGML_OP_L2_NORM: return cuda_op_norm(ctx, n, 2);
        case GGML_OP_SSM_CONV: return cuda_op_ssm_conv(ctx, n);
        case GGML_OP_GATED_DELTA_NET: return cuda_op_gated_delta_net(ctx, n);
        case GGML_OP_MUL_MAT_ID: return cuda_op_mul_mat_id(ctx, n);
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K: return cuda_op_sort(ctx, n);
        case GGML_OP_SWIGLU: return cuda_op_swiglu(ctx, n);
        case GGML_OP_RMS_NORM: return cuda_op_norm(ctx, n, 1);
        case GGML_OP_NORM: return cuda_op_norm(ctx, n, 0);
        case GGML_OP_MUL_MAT: return cuda_op_mul_mat(ctx, n);
        case GGML_OP_SOFT_MAX: return cuda_op_soft_max(ctx, n);
        case GGML_OP_ROPE: return cuda_op_rope(ctx, n);
        case GGML_OP_DIAG_MASK_INF: return cuda_op_diag_mask_inf(ctx, n);
        case GGML_OP_GET_ROWS: return cuda_op_get_rows(ctx, n);
        case GGML_OP_SET_ROWS: return cuda_op_set_rows(ctx, n);
        case GGML_OP_SUM_ROWS: return cuda_op_sum_rows(ctx, n);
        case GGML_OP_ARGMAX: return cuda_op_argmax(ctx, n);
        case GGML_OP_CONCAT: return cuda_op_concat(ctx, n);
        case GGML_OP_FLASH_ATTN_EXT: return cuda_op_flash_attn(ctx, n);
        default: GGML_LOG_ERROR("CUDA: op %s is not implemented", ggml_op_name(n->op)); return false;
    }
}

// Queues every node; false (logged, naming the node) at the first failure.
static bool cuda_queue_graph(cuda_backend_ctx * ctx, struct ggml_cgraph * gf) {
    for (int i = 0; i < gf->n_nodes; i++) {
        struct ggml_tensor * n = gf->nodes[i];
        if (ggml_op_is_view(n->op) || ggml_nelements(n) == 0) continue;
        if (!cuda_compute_node(ctx, n)) {
            GGML_LOG_ERROR("CUDA: node %d '%s' (%s) failed", i, n->name, ggml_op_name(n->op));
            return false;
        }
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) {
            GGML_LOG_ERROR("CUDA: launching node %d '%s' (%s) failed: %s", i, n->name, ggml_op_name(n->op),
                           cudaGetErrorString(err));
            return false;
        }
    }
    return true;
}

// 64-bit words mixed multiplicatively (tensor fields are 8-byte multiples)
static inline uint64_t mix(uint64_t h, const void * p, size_t n) {
    const uint64_t * w = (const uint64_t *) p;
    for (size_t i = 0; i < n / 8; i++) h = (h ^ w[i]) * 0x100000001b3ull + (h >> 29);
    return h;
}

// What a captured graph depends on: per node its op, params, type, shape, strides and the
// addresses of it and its sources.
static uint64_t cuda_graph_signature(const struct ggml_cgraph * gf) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t) gf->n_nodes;
    for (int i = 0; i < gf->n_nodes; i++) {
        const struct ggml_tensor * n = gf->nodes[i];
        const uint64_t head[3] = { (uint64_t) n->op | ((uint64_t) n->type << 32), (uint64_t) (uintptr_t) n->data, (uint64_t) i };
        h = mix(h, head, sizeof(head));
        h = mix(h, n->ne, sizeof(n->ne));
        h = mix(h, n->nb, sizeof(n->nb));
        h = mix(h, n->op_params, sizeof(n->op_params));
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const struct ggml_tensor * s = n->src[j];
            if (!s) continue;
            const uint64_t sh[2] = { (uint64_t) (uintptr_t) s->data, (uint64_t) s->type | ((uint64_t) j << 32) };
            h = mix(h, sh, sizeof(sh));
            h = mix(h, s->ne, sizeof(s->ne));
            h = mix(h, s->nb, sizeof(s->nb));
        }
    }
    return h ? h : 1;
}

static void cuda_graph_drop(cuda_backend_ctx * ctx) {
    if (ctx->graph.exec) cudaGraphExecDestroy(ctx->graph.exec);
    ctx->graph.exec = nullptr;
    ctx->graph.signature = 0;
    ctx->graph.n_replays = 0;
}

// Captures the node launches into ctx->graph.exec; false (nothing kept) when capture fails.
static bool cuda_graph_capture(cuda_backend_ctx * ctx, struct ggml_cgraph * gf, uint64_t sig) {
    cuda_graph_drop(ctx);
    if (!CUDA_TRY(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeRelaxed))) return false;
    ctx->pool.frozen = true;
    const bool queued = cuda_queue_graph(ctx, gf);
    ctx->pool.frozen = false;
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(ctx->stream, &graph);
    if (!queued || end != cudaSuccess || !graph) {
        (void) cudaGetLastError();
        if (graph) cudaGraphDestroy(graph);
        return false;
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (inst != cudaSuccess) {
        (void) cudaGetLastError();
        return false;
    }
    ctx->graph.exec = exec;
    ctx->graph.signature = sig;
    GGML_LOG_DEBUG("CUDA: captured a graph of %d nodes; replaying it while the graph is unchanged", gf->n_nodes);
    return true;
}

static enum ggml_status cuda_backend_graph_compute(ggml_backend_t be, struct ggml_cgraph * gf) {
    cuda_backend_ctx * ctx = (cuda_backend_ctx *) be->context;
    if (!CUDA_TRY(cudaSetDevice(ctx->device))) return GGML_STATUS_FAILED;
    const bool promised = ctx->unchanged_next && ctx->unchanged_graph == gf;
    ctx->unchanged_next = false;
    cuda_pool_reset(ctx);
    if (ctx->err_host) *ctx->err_host = 0;   // the stream is idle: no kernel writes it now

    bool ok = false;
    bool done = false;
    if (!ctx->graph.disabled && !promised) {
        cuda_graph_drop(ctx);   // a new or rebuilt graph: nothing to replay
    } else if (!ctx->graph.disabled) {
        const uint64_t sig = cuda_graph_signature(gf);
        if (promised && ctx->graph.exec && ctx->graph.signature == sig) {
            ok = CUDA_TRY(cudaGraphLaunch(ctx->graph.exec, ctx->stream));
            ctx->graph.n_replays++;
            done = true;
        } else if (promised && ctx->graph.signature == sig) {
            // second computation of the same graph: capture it (the first one sized the pool)
            if (cuda_graph_capture(ctx, gf, sig)) {
                ok = CUDA_TRY(cudaGraphLaunch(ctx->graph.exec, ctx->stream));
                done = true;
            } else {
                if (++ctx->graph.n_failures >= 3) {
                    ctx->graph.disabled = true;   // e.g. the scratch pool keeps growing
                    GGML_LOG_INFO("CUDA: graph capture failed %d times; CUDA graphs are off for %s", ctx->graph.n_failures,
                                  ctx->name);
                } else {
                    GGML_LOG_DEBUG("CUDA: graph capture failed; computing node by node");
                }
                cuda_graph_drop(ctx);
                cuda_pool_reset(ctx);
            }
        } else {
            cuda_graph_drop(ctx);
            ctx->graph.signature = sig;   // remembered: a promise next time may capture
        }
    }
    if (!done) {
        ok = cuda_queue_graph(ctx, gf);
    }
    const cudaError_t sync = cudaStreamSynchronize(ctx->stream);
    if (sync != cudaSuccess) {
        GGML_LOG_ERROR("CUDA: computing the graph (%d nodes) on %s failed: %s", gf->n_nodes, ctx->name, cudaGetErrorString(sync));
        (void) cudaGetLastError();
        ok = false;
    }
    if (ok && ctx->err_host && *(volatile int *) ctx->err_host) {
        GGML_LOG_ERROR("CUDA: MUL_MAT_ID met an expert id outside [0, n_expert) on %s; the graph's result is invalid", ctx->name);
        ok = false;
    }
    cuda_pool_release_retired(ctx);
    if (!ok) cuda_graph_drop(ctx);
    return ok ? GGML_STATUS_SUCCESS : GGML_STATUS_FAILED;
}

static void cuda_backend_graph_unchanged(ggml_backend_t be, struct ggml_cgraph * gf) {
    cuda_backend_ctx * ctx = (cuda_backend_ctx *) be->context;
    ctx->unchanged_next = true;
    ctx->unchanged_graph = gf;
}

static const char * cuda_backend_name(ggml_backend_t be) { return ((cuda_backend_ctx *) be->context)->name; }

static void cuda_backend_free(ggml_backend_t be) {
    cuda_backend_ctx * ctx = (cuda_backend_ctx *) be->context;
    cudaSetDevice(ctx->device);
    cudaStreamSynchronize(ctx->stream);
    cuda_graph_drop(ctx);
    cuda_pool_free(ctx);
    if (ctx->err_host) cudaFreeHost(ctx->err_host);
    cudaStreamDestroy(ctx->stream);
    delete ctx;
    free(be);
}

static void cuda_backend_synchronize(ggml_backend_t be) {
    cuda_backend_ctx * ctx = (cuda_backend_ctx *) be->context;
    cudaSetDevice(ctx->device);
    CUDA_TRY(cudaStreamSynchronize(ctx->stream));
}

static const struct ggml_backend_i g_cuda_backend_i = {
    /* get_name        */ cuda_backend_name,
    /* free            */ cuda_backend_free,
    /* synchronize     */ cuda_backend_synchronize,
    /* graph_compute   */ cuda_backend_graph_compute,
    /* graph_unchanged */ cuda_backend_graph_unchanged,
    /* cpy_tensor_out  */ nullptr,
};

// ---- device interface ----

static const char * cuda_dev_name(ggml_backend_dev_t d) { return ((cuda_device_ctx *) d->context)->name; }

static const char * cuda_dev_description(ggml_backend_dev_t d) { return ((cuda_device_ctx *) d->context)->description; }

static void cuda_dev_memory(ggml_backend_dev_t d, size_t * free_b, size_t * total) {
    cudaSetDevice(((cuda_device_ctx *) d->context)->device);
    if (!CUDA_TRY(cudaMemGetInfo(free_b, total))) {
        *free_b = *total = 0;
    }
}

static enum ggml_backend_dev_type cuda_dev_type(ggml_backend_dev_t d) {
    (void) d;
    return GGML_BACKEND_DEVICE_TYPE_GPU;
}

static ggml_backend_t cuda_dev_init(ggml_backend_dev_t d, const char * params) {
    (void) params;
    cuda_device_ctx * dc = (cuda_device_ctx *) d->context;
    if (!CUDA_TRY(cudaSetDevice(dc->device))) return nullptr;
    cuda_backend_ctx * ctx = new (std::nothrow) cuda_backend_ctx();
    ggml_backend_t be = (ggml_backend_t) calloc(1, sizeof(*be));
    if (!ctx || !be) {
        GGML_LOG_ERROR("CUDA: out of host memory for the backend");
        delete ctx;
        free(be);
        return nullptr;
    }
    ctx->device = dc->device;
    snprintf(ctx->name, sizeof(ctx->name), "%s", dc->name);
    ctx->cc = dc->cc;
    ctx->sm_count = dc->sm_count;
    // a blocking stream: it waits for the legacy-stream copies of tensor_set / cpy_tensor
    // (cudaMemcpy from pageable memory may return before its DMA lands)
    if (!CUDA_TRY(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamDefault))) {
        delete ctx;
        free(be);
        return nullptr;
    }
    // the error word kernels raise on bad input (mul_mat_id ids); without it those ops refuse to run
    if (CUDA_TRY(cudaHostAlloc((void **) &ctx->err_host, sizeof(int), cudaHostAllocMapped)) &&
        !CUDA_TRY(cudaHostGetDevicePointer((void **) &ctx->err_dev, ctx->err_host, 0))) {
        cudaFreeHost(ctx->err_host);
        ctx->err_host = nullptr;
    }
    if (ctx->err_host) *ctx->err_host = 0;
    ctx->graph.disabled = !ggml_env()->cuda_graphs;
    be->iface = g_cuda_backend_i;
    be->device = d;
    be->context = ctx;
    return be;
}

static ggml_backend_buffer_type_t cuda_dev_buft(ggml_backend_dev_t d) {
    return &g_bufts[((cuda_device_ctx *) d->context)->device];
}

static bool cuda_float(const struct ggml_tensor * t) { return t && cu_is_float(t->type); }

static bool cuda_dev_supports_op(ggml_backend_dev_t d, const struct ggml_tensor * op) {
    (void) d;
    const struct ggml_tensor * s0 = op->src[0];
    const struct ggml_tensor * s1 = op->src[1];
    switch (op->op) {
        case GGML_OP_NONE:
        case GGML_OP_RESHAPE:
        case GGML_OP_VIEW:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE: return true;
        case GGML_OP_DUP:
        case GGML_OP_CONT:
        case GGML_OP_CPY: return s0 && cuda_supports_cpy(s0, op);
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV: return cuda_float(s0) && cuda_float(s1) && cuda_float(op) && ggml_can_repeat(s1, s0);
        case GGML_OP_GELU:
            // the exact (erf) flavour has no kernel here: it stays on the CPU
            return op->op_params[0] == 0 && cuda_float(s0) && cuda_float(op);
        case GGML_OP_SCALE:
        case GGML_OP_SILU:
        case GGML_OP_TANH:
        case GGML_OP_SIGMOID:
        case GGML_OP_SOFTPLUS:
        case GGML_OP_CLAMP:
        case GGML_OP_L2_NORM:
        case GGML_OP_RMS_NORM:
        case GGML_OP_NORM:
        case GGML_OP_DIAG_MASK_INF:
        case GGML_OP_SUM_ROWS: return cuda_float(s0) && cuda_float(op);
        case GGML_OP_SWIGLU: return cuda_float(s0) && cuda_float(op) && (!s1 || cuda_float(s1));
        case GGML_OP_SSM_CONV:
        case GGML_OP_GATED_DELTA_NET: return cuda_supports_ssm(op);
        case GGML_OP_SOFT_MAX:
            return cuda_float(s0) && cuda_float(op) && (!s1 || s1->type == GGML_TYPE_F32 || s1->type == GGML_TYPE_F16) &&
                (!op->src[2] || op->src[2]->type == GGML_TYPE_F32);
        case GGML_OP_ROPE: {
            const int n_dims = ggml_get_op_params_i32(op, 1);
            const struct ggml_tensor * ff = op->src[2];
            return cuda_float(s0) && cuda_float(op) && s1 && s1->type == GGML_TYPE_I32 && s1->ne[0] >= s0->ne[2] && n_dims > 0 &&
                n_dims % 2 == 0 && n_dims <= s0->ne[0] &&
                (!ff || (ff->type == GGML_TYPE_F32 && ff->ne[0] >= n_dims / 2 && ggml_is_contiguous(ff)));
        }
        case GGML_OP_GET_ROWS:
            if (!s0 || !s1 || s1->type != GGML_TYPE_I32 || !cuda_float(op)) return false;
            if (s0->type == GGML_TYPE_I32 || cu_is_float(s0->type)) return true;
            return cu_type_has_deq8(s0->type) && s0->nb[0] == ggml_type_size(s0->type);
        case GGML_OP_SET_ROWS:
            if (!cuda_float(s0) || !s1 || (s1->type != GGML_TYPE_I32 && s1->type != GGML_TYPE_I64) || s0->ne[0] != op->ne[0])
                return false;
            if (cu_is_float(op->type)) return true;
            return op->type == GGML_TYPE_Q8_0 && op->ne[0] % QK8_0 == 0 && op->nb[0] == ggml_type_size(GGML_TYPE_Q8_0);
        case GGML_OP_ARGMAX: return cuda_float(s0) && op->type == GGML_TYPE_I32;
        case GGML_OP_CONCAT: {
            const int dim = ggml_get_op_params_i32(op, 0);
            if (dim < 0 || dim >= GGML_MAX_DIMS || !s0 || !s1) return false;
            const bool same = s0->type == op->type && s1->type == op->type && !ggml_is_quantized(op->type) &&
                ggml_blck_size(op->type) == 1 && ggml_type_size(op->type) <= 8;
            return same || (cuda_float(s0) && cuda_float(s1) && cuda_float(op));
        }
        case GGML_OP_MUL_MAT:
            if (!s0 || !s1 || s1->type != GGML_TYPE_F32 || op->type != GGML_TYPE_F32) return false;
            if (cu_is_float(s0->type)) return true;
            return cuda_supports_mul_mat_type(s0->type) && s0->nb[0] == ggml_type_size(s0->type) &&
                s0->ne[0] % ggml_blck_size(s0->type) == 0;
        case GGML_OP_FLASH_ATTN_EXT: return cuda_supports_flash_attn(op);
        case GGML_OP_MUL_MAT_ID: return cuda_supports_mul_mat_id(op);
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K: return cuda_supports_sort(op);
        default: return false;
    }
}

static bool cuda_dev_supports_buft(ggml_backend_dev_t d, ggml_backend_buffer_type_t buft) {
    return buft == &g_bufts[((cuda_device_ctx *) d->context)->device];
}

static const struct ggml_backend_device_i g_cuda_dev_i = {
    /* get_name        */ cuda_dev_name,
    /* get_description */ cuda_dev_description,
    /* get_memory      */ cuda_dev_memory,
    /* get_type        */ cuda_dev_type,
    /* init_backend    */ cuda_dev_init,
    /* get_buffer_type */ cuda_dev_buft,
    /* supports_op     */ cuda_dev_supports_op,
    /* supports_buft   */ cuda_dev_supports_buft,
};

// ---- registry ----

static const char * cuda_reg_name(ggml_backend_reg_t r) {
    (void) r;
    return CUDA_NAME;
}

static size_t cuda_reg_dev_count(ggml_backend_reg_t r) {
    (void) r;
    return (size_t) g_n_devices;
}

static ggml_backend_dev_t cuda_reg_dev_get(ggml_backend_reg_t r, size_t i) {
    (void) r;
    return i < (size_t) g_n_devices ? &g_devs[i] : nullptr;
}

static struct ggml_backend_reg g_cuda_reg = {
    /* api_version */ GGML_BACKEND_API_VERSION,
    /* iface       */ { cuda_reg_name, cuda_reg_dev_count, cuda_reg_dev_get },
    /* context     */ nullptr,
};

// The registry of this library, or NULL (one log line) when CUDA cannot run here.
extern "C" __attribute__((visibility("default"))) ggml_backend_reg_t ggml_backend_init(void) {
    if (g_n_devices > 0) return &g_cuda_reg;
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n <= 0) {
        (void) cudaGetLastError();
        if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice || err == cudaSuccess) {
            GGML_LOG_INFO("CUDA: backend off: no NVIDIA driver or GPU usable here (%s); running on the CPU",
                          err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device found");
        } else {
            GGML_LOG_INFO("CUDA: backend off: %s; running on the CPU", cudaGetErrorString(err));
        }
        return nullptr;
    }
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (n > CUDA_MAX_DEVICES) n = CUDA_MAX_DEVICES;
    for (int i = 0; i < n; i++) {
        cudaDeviceProp prop;
        if (!CUDA_TRY(cudaGetDeviceProperties(&prop, i))) return nullptr;
        cuda_device_ctx * dc = &g_dev_ctx[i];
        dc->device = i;
        dc->cc = prop.major * 10 + prop.minor;
        dc->sm_count = prop.multiProcessorCount;
        snprintf(dc->name, sizeof(dc->name), "CUDA%d", i);
        snprintf(dc->description, sizeof(dc->description), "%s (sm_%d, %d SMs, %.1f GiB)", prop.name, dc->cc,
                 prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
        g_bufts[i].iface = { cuda_buft_name, cuda_buft_alloc, cuda_buft_alignment, nullptr, nullptr, cuda_buft_is_host };
        g_bufts[i].device = &g_devs[i];
        g_bufts[i].context = dc;
        g_devs[i].iface = g_cuda_dev_i;
        g_devs[i].reg = &g_cuda_reg;
        g_devs[i].context = dc;
        g_devs[i].is_test = false;
        if (dc->cc < 70) {
            GGML_LOG_WARN("CUDA: %s is sm_%d; this build needs sm_70 or newer for its tensor-core kernels", prop.name, dc->cc);
        }
    }
    g_n_devices = n;
    GGML_LOG_INFO("CUDA: %d device(s), driver %d.%d, runtime %d.%d; %s: %s", n, driver / 1000, (driver % 1000) / 10,
                  runtime / 1000, (runtime % 1000) / 10, g_dev_ctx[0].name, g_dev_ctx[0].description);
    return &g_cuda_reg;
}
