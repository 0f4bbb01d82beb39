// ggml-alloc.c — graph memory planner. Places every tensor of a graph that has no data in one
// buffer, reusing the bytes of an intermediate once its last consumer has run.
//
// Plan: walk the nodes in execution order on a virtual address space (a best-fit free list),
// which gives each tensor an offset and the peak size; grow the buffer to the peak (never
// shrink); then turn offsets into data pointers. Views never get memory of their own: they keep
// their view source alive and get data = view_src->data + view_offs. The buffer is of the
// allocator's buffer type (host memory by default, a device's memory for other backends).
#include "ggml-backend-impl.h"
#include "ggml-core.h"
#include "ggml-cpu.h"

#include <stdlib.h>

struct ggml_gallocr {
    ggml_backend_buffer_type_t buft;
    ggml_backend_buffer_t buf;
    char * buffer;          // base of buf (an address in the buffer type's memory)
    size_t buffer_size;
};

struct ggml_gallocr * ggml_gallocr_new(ggml_backend_buffer_type_t buft) {
    struct ggml_gallocr * ga = GGML_CALLOC(1, sizeof(*ga));
    if (!ga) {
        GGML_LOG_ERROR("ggml_gallocr_new: out of memory");
        return NULL;
    }
    ga->buft = buft ? buft : ggml_backend_cpu_buffer_type();
    return ga;
}

void ggml_gallocr_free(struct ggml_gallocr * ga) {
    if (!ga) {
        return;
    }
    ggml_backend_buffer_free(ga->buf);
    free(ga);
}

size_t ggml_gallocr_get_buffer_size(struct ggml_gallocr * ga, int buffer_id) {
    return ga && buffer_id == 0 ? ga->buffer_size : 0;
}

// ---- virtual address space: free blocks sorted by offset below a high-water mark ----

struct ggml_block {
    size_t offset;
    size_t size;
};

struct ggml_vspace {
    struct ggml_block * free_blocks;
    int n_free;
    size_t top;   // end of the highest block in use
    size_t peak;  // max top ever
};

static size_t ggml_vspace_alloc(struct ggml_vspace * vs, size_t size) {
    int best = -1;
    for (int i = 0; i < vs->n_free; i++) {
        if (vs->free_blocks[i].size >= size && (best < 0 || vs->free_blocks[i].size < vs->free_blocks[best].size)) {
            best = i;
        }
    }
    size_t offset;
    if (best >= 0) {
        struct ggml_block * b = &vs->free_blocks[best];
        offset = b->offset;
        b->offset += size;
        b->size -= size;
        if (b->size == 0) {
            memmove(b, b + 1, (size_t) (vs->n_free - best - 1) * sizeof(*b));
            vs->n_free--;
        }
        return offset;
    }
    // No hole fits: grow from the top, absorbing a free block that ends there.
    offset = vs->top;
    if (vs->n_free > 0) {
        struct ggml_block * last = &vs->free_blocks[vs->n_free - 1];
        if (last->offset + last->size == vs->top) {
            offset = last->offset;
            vs->n_free--;
        }
    }
    vs->top = offset + size;
    vs->peak = vs->top > vs->peak ? vs->top : vs->peak;
    return offset;
}

static void ggml_vspace_free(struct ggml_vspace * vs, size_t offset, size_t size) {
    int i = 0;
    while (i < vs->n_free && vs->free_blocks[i].offset < offset) {
        i++;
    }
    // The caller sized free_blocks for one block per tensor, so there is always room.
    memmove(&vs->free_blocks[i + 1], &vs->free_blocks[i], (size_t) (vs->n_free - i) * sizeof(struct ggml_block));
    vs->free_blocks[i] = (struct ggml_block) { offset, size };
    vs->n_free++;
    if (i + 1 < vs->n_free && offset + size == vs->free_blocks[i + 1].offset) {
        vs->free_blocks[i].size += vs->free_blocks[i + 1].size;
        memmove(&vs->free_blocks[i + 1], &vs->free_blocks[i + 2], (size_t) (vs->n_free - i - 2) * sizeof(struct ggml_block));
        vs->n_free--;
    }
    if (i > 0 && vs->free_blocks[i - 1].offset + vs->free_blocks[i - 1].size == offset) {
        vs->free_blocks[i - 1].size += vs->free_blocks[i].size;
        memmove(&vs->free_blocks[i], &vs->free_blocks[i + 1], (size_t) (vs->n_free - i - 1) * sizeof(struct ggml_block));
        vs->n_free--;
        i--;
    }
    // A free block at the top lowers the high-water mark.
    if (vs->free_blocks[i].offset + vs->free_blocks[i].size == vs->top && i == vs->n_free - 1) {
        vs->top = vs->free_blocks[i].offset;
        vs->n_free--;
    }
}

// ---- per-tensor planning state, in an open-addressing map keyed by tensor pointer ----

struct ggml_alloc_info {
    struct ggml_tensor * t;
    size_t offset;
    size_t size;
    int last_use;      // index of the last node that reads t (through a view or directly); -1 none
    bool needs_alloc;  // no data yet (or data in our buffer from a previous plan), not a view
    bool allocated;
    bool owns_block;   // false once an inplace node took over the block
    bool is_leaf;
    bool has_consumer; // some node reads this tensor
};

struct ggml_alloc_map {
    struct ggml_alloc_info * slots;
    size_t cap; // power of two
};

static struct ggml_alloc_info * ggml_alloc_map_get(struct ggml_alloc_map * m, struct ggml_tensor * t) {
    size_t h = (size_t) (((uintptr_t) t >> 6) * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
    while (m->slots[h].t && m->slots[h].t != t) {
        h = (h + 1) & (m->cap - 1);
    }
    if (!m->slots[h].t) {
        m->slots[h].t = t;
        m->slots[h].last_use = -1;
    }
    return &m->slots[h];
}

// Ops whose kernels accept dst sharing src[0]'s memory (they all have _inplace constructors).
static bool ggml_op_can_inplace(enum ggml_op op) {
    switch (op) {
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_SCALE:
        case GGML_OP_RMS_NORM:
        case GGML_OP_SILU:
        case GGML_OP_GELU:
        case GGML_OP_TANH:
        case GGML_OP_SIGMOID:
        case GGML_OP_SOFTPLUS:
        case GGML_OP_CLAMP:
        case GGML_OP_L2_NORM:
        case GGML_OP_SOFT_MAX:
        case GGML_OP_ROPE:
        case GGML_OP_DIAG_MASK_INF: return true;
        default: return false;
    }
}

static bool ggml_same_layout(const struct ggml_tensor * a, const struct ggml_tensor * b) {
    if (a->type != b->type) {
        return false;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (a->ne[i] != b->ne[i] || a->nb[i] != b->nb[i]) {
            return false;
        }
    }
    return true;
}

// Dependency j of node (sources, then the view source), or NULL.
static struct ggml_tensor * ggml_alloc_dep(struct ggml_tensor * node, int j) {
    return j < GGML_MAX_SRC ? node->src[j] : node->view_src;
}

static void ggml_alloc_tensor(struct ggml_vspace * vs, struct ggml_alloc_info * info) {
    const size_t bytes = ggml_nbytes(info->t);
    info->size = GGML_PAD(bytes ? bytes : 1, GGML_MEM_ALIGN);
    info->offset = ggml_vspace_alloc(vs, info->size);
    info->allocated = true;
    info->owns_block = true;
}

static bool gallocr_plan(struct ggml_gallocr * ga, struct ggml_cgraph * g, bool keep);

bool ggml_gallocr_alloc_graph(struct ggml_gallocr * ga, struct ggml_cgraph * g) { return gallocr_plan(ga, g, true); }

bool ggml_gallocr_reserve(struct ggml_gallocr * ga, struct ggml_cgraph * g) { return gallocr_plan(ga, g, false); }

// Plans g's memory and grows the buffer to the peak; with keep, the tensors get their places
// (data, buffer), otherwise they are left without data as they came.
static bool gallocr_plan(struct ggml_gallocr * ga, struct ggml_cgraph * g, bool keep) {
    if (!ga || !g) {
        GGML_LOG_ERROR("ggml_gallocr_alloc_graph: NULL %s", ga ? "graph" : "allocator");
        return false;
    }
    if (g->overflow) {
        GGML_LOG_ERROR("ggml_gallocr_alloc_graph: the graph is incomplete (it overflowed or was given a NULL tensor)");
        return false;
    }
    const size_t n_tensors = (size_t) g->n_nodes + (size_t) g->n_leafs;
    struct ggml_alloc_map map = { NULL, 16 };
    while (map.cap < 2 * n_tensors + 2) {
        map.cap <<= 1;
    }
    struct ggml_vspace vs = { NULL, 0, 0, 0 };
    map.slots = GGML_CALLOC(map.cap, sizeof(*map.slots));
    vs.free_blocks = GGML_MALLOC((n_tensors + 2) * sizeof(*vs.free_blocks));
    if (!map.slots || !vs.free_blocks) {
        GGML_LOG_ERROR("ggml_gallocr_alloc_graph: out of memory while planning %zu tensors", n_tensors);
        free(map.slots);
        free(vs.free_blocks);
        return false;
    }

    const char * buf_lo = ga->buffer;
    const char * buf_hi = buf_lo ? buf_lo + ga->buffer_size : NULL;
    // Ours: placed by an earlier plan of this allocator (tagged in `extra`, which survives the
    // buffer moving when it grows) or pointing into the current buffer. Ours are placed again.
#define OURS(t) ((t)->extra == (void *) ga || (buf_lo && (const char *) (t)->data >= buf_lo && (const char *) (t)->data < buf_hi))

    // Pass 0: what needs memory.
    for (int i = 0; i < g->n_leafs; i++) {
        struct ggml_tensor * t = g->leafs[i];
        struct ggml_alloc_info * info = ggml_alloc_map_get(&map, t);
        info->is_leaf = true;
        info->needs_alloc = !t->view_src && (!t->data || OURS(t));
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * t = g->nodes[i];
        struct ggml_alloc_info * info = ggml_alloc_map_get(&map, t);
        info->needs_alloc = !t->view_src && (!t->data || OURS(t));
    }
#undef OURS

    // Pass 1: last use of every allocation root.
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        for (int j = 0; j <= GGML_MAX_SRC; j++) {
            struct ggml_tensor * d = ggml_alloc_dep(node, j);
            if (d) {
                ggml_alloc_map_get(&map, ggml_tensor_root(d))->last_use = i;
                ggml_alloc_map_get(&map, d)->has_consumer = true;
            }
        }
    }
    // A node nobody reads is a result: it and the block it views stay alive.
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        if (!ggml_alloc_map_get(&map, node)->has_consumer) {
            ggml_alloc_map_get(&map, ggml_tensor_root(node))->last_use = INT32_MAX;
        }
    }

    // Pass 2: simulate. Leafs (inputs) first and for good; then nodes in order, freeing a
    // root's block after the node that last reads it.
    for (int i = 0; i < g->n_leafs; i++) {
        struct ggml_alloc_info * info = ggml_alloc_map_get(&map, g->leafs[i]);
        if (info->needs_alloc && !info->allocated) {
            ggml_alloc_tensor(&vs, info);
            info->owns_block = false; // never freed
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        struct ggml_alloc_info * info = ggml_alloc_map_get(&map, node);
        if (info->needs_alloc && !info->allocated) {
            struct ggml_tensor * s0 = node->src[0];
            struct ggml_alloc_info * si = s0 ? ggml_alloc_map_get(&map, s0) : NULL;
            if (si && ggml_op_can_inplace(node->op) && !s0->view_src && si->allocated && si->owns_block && !si->is_leaf &&
                si->last_use == i && !(s0->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT)) &&
                ggml_same_layout(s0, node) && ggml_is_contiguous(node)) {
                // The source dies here: the node overwrites it in place.
                info->offset = si->offset;
                info->size = si->size;
                info->allocated = true;
                info->owns_block = true;
                si->owns_block = false;
            } else {
                ggml_alloc_tensor(&vs, info);
            }
            if (node->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT)) {
                info->owns_block = false; // kept for the caller to read or fill
            }
        }
        for (int j = 0; j <= GGML_MAX_SRC; j++) {
            struct ggml_tensor * d = ggml_alloc_dep(node, j);
            if (!d) {
                continue;
            }
            struct ggml_alloc_info * ri = ggml_alloc_map_get(&map, ggml_tensor_root(d));
            if (ri->last_use == i && ri->allocated && ri->owns_block &&
                !(ri->t->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT))) {
                ggml_vspace_free(&vs, ri->offset, ri->size);
                ri->owns_block = false;
            }
        }
    }

    // Pass 3: buffer (grow only), then data pointers.
    bool ok = true;
    if (vs.peak > ga->buffer_size) {
        ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ga->buft, vs.peak);
        if (!buf) {
            GGML_LOG_ERROR("ggml_gallocr_alloc_graph: cannot allocate a %s buffer of %zu bytes", ggml_backend_buft_name(ga->buft),
                           vs.peak);
            ok = false;
        } else {
            ggml_backend_buffer_free(ga->buf);
            ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
            ga->buf = buf;
            ga->buffer = ggml_backend_buffer_get_base(buf);
            ga->buffer_size = vs.peak;
        }
    }
    if (ok && keep) {
        for (size_t h = 0; h < map.cap; h++) {
            struct ggml_alloc_info * info = &map.slots[h];
            if (info->t && info->allocated) {
                info->t->data = ga->buffer + info->offset;
                info->t->buffer = ga->buf;
                if (info->t->extra == NULL) {
                    info->t->extra = ga;
                }
            }
        }
        for (int i = 0; i < g->n_nodes; i++) {
            struct ggml_tensor * node = g->nodes[i];
            for (int j = -1; j < GGML_MAX_SRC; j++) {
                struct ggml_tensor * t = j < 0 ? node : node->src[j];
                if (t && t->view_src && t->view_src->data) {
                    t->data = (char *) t->view_src->data + t->view_offs;
                    t->buffer = t->view_src->buffer;
                }
            }
        }
    }
    free(map.slots);
    free(vs.free_blocks);
    return ok;
}
