// ggml-backend-sched.c — one graph over several backends.
//
// Allocation of a graph: (1) every node gets a backend: a pinned one; else where its own data
// already lives (a write into the KV cache); a view goes with its source; else the backend of a
// weight it reads (if that backend supports the op); else that of its first source that
// supports the op; else the CPU (the last backend, which supports everything). A node whose
// chosen backend cannot compute it runs on the CPU instead (an error if its own data lives on
// the device): each such op, get_rows on a device among them, costs two splits and their copies.
// Graph inputs without data go where their first consumer runs. (2) Consecutive nodes of one backend form a split; a source that the
// split's backend cannot read gets a copy in that backend's memory (once per graph for
// tensors written once, per split for pre-allocated ones such as the KV cache), and the node
// reads the copy. (3) Each backend's nodes and copies are allocated by its own graph allocator;
// tensors that are copied out stay alive to the end. Computation runs the splits in order,
// copying each split's inputs first.
//
// With one backend (or everything on one backend and no copies) the graph itself is the one
// split: no copies, no sub-graphs, the CPU's plan reuse keeps working.
#include "ggml-backend-impl.h"
#include "ggml-core.h"
#include "ggml-cpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SCHED_MAX_BACKENDS 8
#define SCHED_MAX_INPUTS   64

struct sched_split {
    int backend;
    int i_start, i_end; // nodes [i_start, i_end) of the graph
    struct ggml_cgraph * gf; // those nodes (the graph itself on the fast path)
    int n_inputs;
    struct ggml_tensor * inputs[SCHED_MAX_INPUTS]; // sources (roots) in another backend's memory
    struct ggml_tensor * copies[SCHED_MAX_INPUTS]; // their copies in this backend's memory
};

// tensor -> int map (open addressing on the pointer)
struct sched_map {
    const struct ggml_tensor ** keys;
    int * vals;
    size_t cap;
};

struct ggml_backend_sched {
    int n_backends;
    ggml_backend_t backends[SCHED_MAX_BACKENDS];
    ggml_backend_buffer_type_t bufts[SCHED_MAX_BACKENDS];
    ggml_gallocr_t galloc[SCHED_MAX_BACKENDS];
    size_t graph_size;

    struct ggml_context * ctx; // copies and sub-graphs of the current graph
    size_t ctx_size;

    struct ggml_cgraph * graph; // the allocated graph, or NULL
    bool unchanged; // graph_unchanged promised for the next compute

    struct sched_map assign; // tensor -> backend of the current graph
    struct ggml_tensor ** pin_t; // tensors pinned by the caller ...
    int * pin_b; // ... to these backends
    int n_pins, pins_cap;
    struct sched_split * splits;
    int n_splits, splits_cap;
    int n_copies;

    ggml_backend_sched_eval_callback eval_cb;
    void * eval_data;
};

// ---- map ----

static size_t map_slot(const struct sched_map * m, const struct ggml_tensor * t) {
    size_t h = ((uintptr_t) t >> 4) * 0x9E3779B97F4A7C15ull;
    size_t i = h & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != t) {
        i = (i + 1) & (m->cap - 1);
    }
    return i;
}

static bool map_reset(struct sched_map * m, size_t n) {
    size_t cap = 64;
    while (cap < 2 * n + 2) cap <<= 1;
    if (cap > m->cap) {
        free(m->keys);
        free(m->vals);
        m->keys = GGML_CALLOC(cap, sizeof(*m->keys));
        m->vals = GGML_MALLOC(cap * sizeof(*m->vals));
        m->cap = (m->keys && m->vals) ? cap : 0;
        if (!m->cap) {
            free(m->keys);
            free(m->vals);
            m->keys = NULL;
            m->vals = NULL;
            return false;
        }
    } else if (m->cap) {
        memset(m->keys, 0, m->cap * sizeof(*m->keys));
    }
    return true;
}

static int map_get(const struct sched_map * m, const struct ggml_tensor * t) {
    if (!m->cap || !t) return -1;
    const size_t i = map_slot(m, t);
    return m->keys[i] ? m->vals[i] : -1;
}

static void map_set(struct sched_map * m, const struct ggml_tensor * t, int v) {
    if (!m->cap) return;
    const size_t i = map_slot(m, t);
    m->keys[i] = t;
    m->vals[i] = v;
}

// ---- creation ----

ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t * backends, ggml_backend_buffer_type_t * bufts, int n_backends,
                                            size_t graph_size, bool parallel, bool op_offload) {
    (void) parallel;
    (void) op_offload;
    if (!backends || n_backends < 1 || n_backends > SCHED_MAX_BACKENDS) {
        GGML_LOG_ERROR("ggml_backend_sched_new: need 1..%d backends (got %d)", SCHED_MAX_BACKENDS, n_backends);
        return NULL;
    }
    for (int i = 0; i < n_backends; i++) {
        if (!backends[i]) {
            GGML_LOG_ERROR("ggml_backend_sched_new: backend %d is NULL", i);
            return NULL;
        }
    }
    if (!ggml_backend_is_cpu(backends[n_backends - 1])) {
        GGML_LOG_ERROR("ggml_backend_sched_new: the last backend must be the CPU (got %s)",
                       ggml_backend_name(backends[n_backends - 1]));
        return NULL;
    }
    struct ggml_backend_sched * s = GGML_CALLOC(1, sizeof(*s));
    if (!s) {
        GGML_LOG_ERROR("ggml_backend_sched_new: out of memory");
        return NULL;
    }
    s->n_backends = n_backends;
    s->graph_size = graph_size ? graph_size : GGML_DEFAULT_GRAPH_SIZE;
    for (int i = 0; i < n_backends; i++) {
        s->backends[i] = backends[i];
        s->bufts[i] = bufts && bufts[i] ? bufts[i] : ggml_backend_get_default_buffer_type(backends[i]);
        s->galloc[i] = ggml_gallocr_new(s->bufts[i]);
        if (!s->galloc[i]) {
            ggml_backend_sched_free(s);
            return NULL;
        }
    }
    return s;
}

void ggml_backend_sched_free(ggml_backend_sched_t s) {
    if (!s) return;
    for (int i = 0; i < s->n_backends; i++) {
        ggml_gallocr_free(s->galloc[i]);
    }
    ggml_free(s->ctx);
    free(s->assign.keys);
    free(s->assign.vals);
    free(s->pin_t);
    free(s->pin_b);
    free(s->splits);
    free(s);
}

void ggml_backend_sched_reset(ggml_backend_sched_t s) {
    if (!s) return;
    s->graph = NULL;
    s->unchanged = false;
    s->n_splits = 0;
    s->n_copies = 0;
    s->n_pins = 0;
}

// ---- assignment ----

static ggml_backend_buffer_t tensor_buf(const struct ggml_tensor * t) { return t->view_src ? t->view_src->buffer : t->buffer; }

// The first backend that computes on buf's memory, or -1.
static int sched_buffer_backend(ggml_backend_sched_t s, ggml_backend_buffer_t buf) {
    for (int i = 0; i < s->n_backends; i++) {
        if (ggml_backend_supports_buft(s->backends[i], buf->buft)) return i;
    }
    return -1;
}

// Where t's existing data lives: a backend id, -1 if t has no data yet, -2 if no backend can use it.
static int sched_data_backend(ggml_backend_sched_t s, const struct ggml_tensor * t) {
    ggml_backend_buffer_t buf = tensor_buf(t);
    if (buf) {
        const int b = sched_buffer_backend(s, buf);
        return b >= 0 ? b : -2;
    }
    const struct ggml_tensor * r = t->view_src ? t->view_src : t;
    return r->data ? s->n_backends - 1 : -1; // plain host memory: the CPU
}

static bool sched_is_weight(const struct ggml_tensor * t) {
    ggml_backend_buffer_t buf = tensor_buf(t);
    return buf && buf->usage == GGML_BACKEND_BUFFER_USAGE_WEIGHTS;
}

static int sched_pin_of(ggml_backend_sched_t s, const struct ggml_tensor * t) {
    for (int i = 0; i < s->n_pins; i++) {
        if (s->pin_t[i] == t) return s->pin_b[i];
    }
    return -1;
}

static int sched_pick_node(ggml_backend_sched_t s, struct ggml_tensor * n) {
    const int pin = sched_pin_of(s, n);
    if (pin >= 0) return pin;
    const int own = sched_data_backend(s, n);
    if (own != -1) return own;
    if (n->view_src) {
        return map_get(&s->assign, n->view_src);
    }
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        struct ggml_tensor * w = n->src[j];
        if (w && sched_is_weight(w)) {
            const int b = sched_data_backend(s, w);
            if (b >= 0 && ggml_backend_supports_op(s->backends[b], n)) return b;
        }
    }
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (!n->src[j]) continue;
        const int b = map_get(&s->assign, n->src[j]);
        if (b >= 0 && ggml_backend_supports_op(s->backends[b], n)) return b;
    }
    return s->n_backends - 1;
}

// True if backend b can read t (a root) where it is or will be allocated.
static bool sched_readable(ggml_backend_sched_t s, int b, const struct ggml_tensor * t) {
    ggml_backend_buffer_t buf = tensor_buf(t);
    if (buf) return ggml_backend_supports_buft(s->backends[b], buf->buft);
    if (t->data) return b == s->n_backends - 1;
    return map_get(&s->assign, t) == b;
}

static struct sched_split * sched_new_split(ggml_backend_sched_t s, int backend, int i_start) {
    if (s->n_splits == s->splits_cap) {
        const int cap = s->splits_cap ? 2 * s->splits_cap : 16;
        struct sched_split * p = GGML_REALLOC(s->splits, (size_t) cap * sizeof(*p));
        if (!p) return NULL;
        s->splits = p;
        s->splits_cap = cap;
    }
    struct sched_split * sp = &s->splits[s->n_splits++];
    memset(sp, 0, sizeof(*sp));
    sp->backend = backend;
    sp->i_start = sp->i_end = i_start;
    return sp;
}

static struct ggml_cgraph * sched_graph_of(ggml_backend_sched_t s, int n_nodes, int n_leafs) {
    const int size = n_nodes > n_leafs ? n_nodes : n_leafs;
    struct ggml_cgraph * g = ggml_new_graph_custom(s->ctx, (size_t) (size > 0 ? size : 1), false);
    return g;
}

static bool sched_ensure_ctx(ggml_backend_sched_t s, const struct ggml_cgraph * g) {
    const size_t n = (size_t) g->n_nodes + (size_t) g->n_leafs;
    // copies and views of copies, one split graph per node at most, one graph per backend
    const size_t need = 2 * n * ggml_tensor_overhead() + (n + 2 * SCHED_MAX_BACKENDS) * ggml_graph_overhead_custom(1, false) +
        (size_t) (2 * SCHED_MAX_BACKENDS + 4) * ggml_graph_overhead_custom(n + 1, false);
    if (s->ctx && s->ctx_size >= need) {
        ggml_reset(s->ctx);
        return true;
    }
    ggml_free(s->ctx);
    s->ctx = ggml_init((struct ggml_init_params) { need, NULL, true });
    s->ctx_size = s->ctx ? need : 0;
    if (!s->ctx) {
        GGML_LOG_ERROR("ggml_backend_sched: out of memory for the split metadata (%zu bytes)", need);
    }
    return s->ctx != NULL;
}

// Allocation phase (1): backends of leafs with data, then of nodes in order, then of data-less
// leafs (their first consumer's). False (logged) when a tensor's memory or op fits no backend.
static bool sched_assign_backends(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    const int cpu = s->n_backends - 1;
    for (int i = 0; i < g->n_leafs; i++) {
        struct ggml_tensor * t = g->leafs[i];
        const int b = sched_data_backend(s, t);
        if (b == -2) {
            GGML_LOG_ERROR(
                "ggml_backend_sched_alloc_graph: tensor '%s' is in a %s buffer that no backend of the scheduler can use", t->name,
                ggml_backend_buffer_name(tensor_buf(t)));
            return false;
        }
        const int pin = sched_pin_of(s, t);
        map_set(&s->assign, t, pin >= 0 ? pin : b);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * n = g->nodes[i];
        const int b = sched_pick_node(s, n);
        if (b < 0) {
            GGML_LOG_ERROR(
                "ggml_backend_sched_alloc_graph: node '%s' (%s) is in a %s buffer that no backend of the scheduler can use",
                n->name, ggml_op_name(n->op), ggml_backend_buffer_name(tensor_buf(n)));
            return false;
        }
        if (!ggml_op_is_view(n->op) && !ggml_backend_supports_op(s->backends[b], n)) {
            if (!ggml_backend_supports_op(s->backends[cpu], n) || sched_data_backend(s, n) >= 0) {
                GGML_LOG_ERROR("ggml_backend_sched_alloc_graph: no backend can compute node '%s' (%s) where its data lives",
                               n->name, ggml_op_name(n->op));
                return false;
            }
            map_set(&s->assign, n, cpu);
        } else {
            map_set(&s->assign, n, b);
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            struct ggml_tensor * src = n->src[j];
            if (src && map_get(&s->assign, src) == -1) {
                map_set(&s->assign, src, map_get(&s->assign, n)); // a data-less input: its first consumer's
            }
        }
    }
    return true;
}

// The one backend that runs every node and can read every source where it lives (the fast
// path: the graph is its own split), or -1.
static int sched_single_backend(ggml_backend_sched_t s, const struct ggml_cgraph * g) {
    bool single = true;
    const int b0 = g->n_nodes ? map_get(&s->assign, g->nodes[0]) : s->n_backends - 1;
    for (int i = 0; i < g->n_nodes && single; i++) {
        struct ggml_tensor * n = g->nodes[i];
        if (!ggml_op_is_view(n->op) && map_get(&s->assign, n) != b0) single = false;
        for (int j = 0; j < GGML_MAX_SRC && single; j++) {
            if (n->src[j] && !ggml_op_is_view(n->op)) {
                single = sched_readable(s, b0, ggml_tensor_root(n->src[j]));
            }
        }
    }
    return single ? b0 : -1;
}

// Allocation phase (2), one node: each source the split's backend cannot read is read from a
// copy in its memory (one copy of a root per split, reused when another node reads it again;
// a view of the root becomes the same view of the copy).
static bool sched_copy_inputs(ggml_backend_sched_t s, struct sched_split * cur, struct ggml_tensor * n) {
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        struct ggml_tensor * src = n->src[j];
        if (!src) continue;
        struct ggml_tensor * root = ggml_tensor_root(src);
        if (sched_readable(s, cur->backend, root)) continue;
        // one copy of root in this split (reused when another node of it reads root again)
        struct ggml_tensor * copy = NULL;
        for (int k = 0; k < cur->n_inputs; k++) {
            if (cur->inputs[k] == root) copy = cur->copies[k];
        }
        if (!copy) {
            if (cur->n_inputs == SCHED_MAX_INPUTS) {
                GGML_LOG_ERROR("ggml_backend_sched_alloc_graph: split %d needs more than %d inputs", s->n_splits - 1,
                               SCHED_MAX_INPUTS);
                return false;
            }
            if (!ggml_is_contiguous(root)) {
                GGML_LOG_ERROR("ggml_backend_sched_alloc_graph: cannot copy non-contiguous '%s' between backends", root->name);
                return false;
            }
            copy = ggml_dup_tensor(s->ctx, root);
            if (!copy) return false;
            ggml_format_name(copy, "%.40s#%s", root->name, ggml_backend_name(s->backends[cur->backend]));
            copy->flags |= GGML_TENSOR_FLAG_INPUT;
            map_set(&s->assign, copy, cur->backend);
            cur->inputs[cur->n_inputs] = root;
            cur->copies[cur->n_inputs] = copy;
            cur->n_inputs++;
            s->n_copies++;
        }
        if (src == root) {
            n->src[j] = copy;
        } else {
            struct ggml_tensor * v = ggml_new_tensor_impl(s->ctx, src->type, GGML_MAX_DIMS, src->ne, copy, src->view_offs);
            if (!v) return false;
            memcpy(v->nb, src->nb, sizeof(v->nb));
            ggml_format_name(v, "%.40s#view", src->name);
            map_set(&s->assign, v, cur->backend);
            n->src[j] = v;
        }
    }
    return true;
}

// Allocation phase (2): consecutive nodes of one backend form a split (a view stays in the
// split it follows), each with the copies of its inputs.
static bool sched_make_splits(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    struct sched_split * cur = NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * n = g->nodes[i];
        const int b = map_get(&s->assign, n);
        if (!cur || (!ggml_op_is_view(n->op) && b != cur->backend)) {
            if (cur) cur->i_end = i;
            cur = sched_new_split(s, ggml_op_is_view(n->op) && cur ? cur->backend : b, i);
            if (!cur) return false;
        }
        if (ggml_op_is_view(n->op)) continue;
        if (!sched_copy_inputs(s, cur, n)) return false;
    }
    if (cur) cur->i_end = g->n_nodes;
    return true;
}

// Allocation phase (3): each backend's nodes, copies and leafs in one graph for its allocator;
// the sources that are copied out are marked outputs meanwhile so that they stay alive to the
// end (their flags restored afterwards).
static bool sched_alloc_backends(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    int32_t * saved_flags = GGML_MALLOC(((size_t) s->n_copies + 1) * sizeof(int32_t));
    struct ggml_tensor ** kept = GGML_MALLOC(((size_t) s->n_copies + 1) * sizeof(*kept));
    if (!saved_flags || !kept) {
        free(saved_flags);
        free(kept);
        return false;
    }
    int n_kept = 0;
    for (int k = 0; k < s->n_splits; k++) {
        for (int q = 0; q < s->splits[k].n_inputs; q++) {
            struct ggml_tensor * r = s->splits[k].inputs[q];
            saved_flags[n_kept] = r->flags;
            kept[n_kept++] = r;
            r->flags |= GGML_TENSOR_FLAG_OUTPUT;
        }
    }
    bool ok = true;
    for (int b = 0; b < s->n_backends && ok; b++) {
        int nn = 0, nl = 0;
        for (int k = 0; k < s->n_splits; k++) {
            if (s->splits[k].backend != b) continue;
            nn += s->splits[k].i_end - s->splits[k].i_start;
            nl += s->splits[k].n_inputs;
        }
        for (int i = 0; i < g->n_leafs; i++) nl += map_get(&s->assign, g->leafs[i]) == b;
        if (nn == 0 && nl == 0) continue;
        struct ggml_cgraph * bg = sched_graph_of(s, nn, nl);
        if (!bg) {
            ok = false;
            break;
        }
        for (int k = 0; k < s->n_splits; k++) {
            const struct sched_split * sp = &s->splits[k];
            if (sp->backend != b) continue;
            for (int i = sp->i_start; i < sp->i_end; i++) bg->nodes[bg->n_nodes++] = g->nodes[i];
            for (int q = 0; q < sp->n_inputs; q++) bg->leafs[bg->n_leafs++] = sp->copies[q];
        }
        for (int i = 0; i < g->n_leafs; i++) {
            if (map_get(&s->assign, g->leafs[i]) == b) bg->leafs[bg->n_leafs++] = g->leafs[i];
        }
        ok = ggml_gallocr_alloc_graph(s->galloc[b], bg);
    }
    for (int k = 0; k < n_kept; k++) kept[k]->flags = saved_flags[k];
    free(saved_flags);
    free(kept);
    return ok;
}

// After allocation: views anywhere see their sources' final places; each split gets its own graph.
static bool sched_finish_splits(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * n = g->nodes[i];
        for (int j = -1; j < GGML_MAX_SRC; j++) {
            struct ggml_tensor * t = j < 0 ? n : n->src[j];
            if (t && t->view_src && t->view_src->data) {
                t->data = (char *) t->view_src->data + t->view_offs;
                t->buffer = t->view_src->buffer;
            }
        }
    }
    for (int k = 0; k < s->n_splits; k++) {
        struct sched_split * sp = &s->splits[k];
        sp->gf = sched_graph_of(s, sp->i_end - sp->i_start, 0);
        if (!sp->gf) return false;
        for (int i = sp->i_start; i < sp->i_end; i++) sp->gf->nodes[sp->gf->n_nodes++] = g->nodes[i];
    }
    return true;
}

bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    if (!s || !g) {
        GGML_LOG_ERROR("ggml_backend_sched_alloc_graph: NULL %s", s ? "graph" : "scheduler");
        return false;
    }
    if (g->overflow) {
        GGML_LOG_ERROR("ggml_backend_sched_alloc_graph: the graph is incomplete (it overflowed or was given a NULL tensor)");
        return false;
    }
    s->graph = NULL;
    s->unchanged = false;
    s->n_splits = 0;
    s->n_copies = 0;
    if (!map_reset(&s->assign, (size_t) g->n_nodes + g->n_leafs) || !sched_ensure_ctx(s, g)) {
        GGML_LOG_ERROR("ggml_backend_sched_alloc_graph: out of memory");
        return false;
    }
    if (!sched_assign_backends(s, g)) {
        return false;
    }
    const int b0 = sched_single_backend(s, g);
    if (b0 >= 0) {
        if (!ggml_gallocr_alloc_graph(s->galloc[b0], g)) return false;
        struct sched_split * sp = sched_new_split(s, b0, 0);
        if (!sp) return false;
        sp->i_end = g->n_nodes;
        sp->gf = g;
        s->graph = g;
        return true;
    }
    if (!sched_make_splits(s, g) || !sched_alloc_backends(s, g) || !sched_finish_splits(s, g)) {
        return false;
    }
    s->graph = g;
    return true;
}

bool ggml_backend_sched_reserve(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    if (!ggml_backend_sched_alloc_graph(s, g)) return false;
    ggml_backend_sched_reset(s);
    return true;
}

// ---- computation ----

static enum ggml_status sched_compute_split(ggml_backend_sched_t s, struct sched_split * sp) {
    ggml_backend_t be = s->backends[sp->backend];
    for (int q = 0; q < sp->n_inputs; q++) {
        ggml_backend_tensor_copy(sp->inputs[q], sp->copies[q]);
    }
    if (!s->eval_cb) {
        if (s->unchanged && be->iface.graph_unchanged) be->iface.graph_unchanged(be, sp->gf);
        return be->iface.graph_compute(be, sp->gf);
    }
    // node by node, asking the callback which results it wants to see
    struct ggml_cgraph one = *sp->gf;
    int i0 = 0;
    for (int i = 0; i < sp->gf->n_nodes; i++) {
        struct ggml_tensor * t = sp->gf->nodes[i];
        if (!s->eval_cb(t, true, s->eval_data) && i + 1 < sp->gf->n_nodes) continue;
        one.nodes = sp->gf->nodes + i0;
        one.n_nodes = i + 1 - i0;
        const enum ggml_status st = be->iface.graph_compute(be, &one);
        if (st != GGML_STATUS_SUCCESS) return st;
        i0 = i + 1;
        if (!s->eval_cb(t, false, s->eval_data)) return GGML_STATUS_ABORTED;
    }
    return GGML_STATUS_SUCCESS;
}

enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    if (!s || !g) {
        GGML_LOG_ERROR("ggml_backend_sched_graph_compute: NULL %s", s ? "graph" : "scheduler");
        return GGML_STATUS_FAILED;
    }
    if (s->graph != g && !ggml_backend_sched_alloc_graph(s, g)) {
        return GGML_STATUS_ALLOC_FAILED;
    }
    for (int k = 0; k < s->n_splits; k++) {
        const enum ggml_status st = sched_compute_split(s, &s->splits[k]);
        if (st != GGML_STATUS_SUCCESS) {
            s->unchanged = false;
            return st;
        }
    }
    s->unchanged = false;
    return GGML_STATUS_SUCCESS;
}

void ggml_backend_sched_graph_unchanged(ggml_backend_sched_t s, struct ggml_cgraph * g) {
    if (s && s->graph == g) s->unchanged = true;
}

void ggml_backend_sched_synchronize(ggml_backend_sched_t s) {
    for (int i = 0; s && i < s->n_backends; i++) ggml_backend_synchronize(s->backends[i]);
}

// ---- queries ----

int ggml_backend_sched_get_n_splits(ggml_backend_sched_t s) { return s ? s->n_splits : 0; }

int ggml_backend_sched_get_n_copies(ggml_backend_sched_t s) { return s ? s->n_copies : 0; }

int ggml_backend_sched_get_n_backends(ggml_backend_sched_t s) { return s ? s->n_backends : 0; }

ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t s, int i) {
    return s && i >= 0 && i < s->n_backends ? s->backends[i] : NULL;
}

size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t s, ggml_backend_t backend) {
    for (int i = 0; s && i < s->n_backends; i++) {
        if (s->backends[i] == backend) return ggml_gallocr_get_buffer_size(s->galloc[i], 0);
    }
    return 0;
}

void ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t s, struct ggml_tensor * node, ggml_backend_t backend) {
    if (!s || !node) return;
    for (int i = 0; i < s->n_backends; i++) {
        if (s->backends[i] == backend) {
            for (int k = 0; k < s->n_pins; k++) {
                if (s->pin_t[k] == node) {
                    s->pin_b[k] = i;
                    return;
                }
            }
            if (s->n_pins == s->pins_cap) {
                const int cap = s->pins_cap ? 2 * s->pins_cap : 16;
                struct ggml_tensor ** t = GGML_REALLOC(s->pin_t, (size_t) cap * sizeof(*t));
                if (t) s->pin_t = t;
                int * b = t ? GGML_REALLOC(s->pin_b, (size_t) cap * sizeof(*b)) : NULL;
                if (!b) {
                    GGML_LOG_ERROR("ggml_backend_sched_set_tensor_backend: out of memory");
                    return;
                }
                s->pin_b = b;
                s->pins_cap = cap;
            }
            s->pin_t[s->n_pins] = node;
            s->pin_b[s->n_pins++] = i;
            return;
        }
    }
    GGML_LOG_ERROR("ggml_backend_sched_set_tensor_backend: backend %s is not one of the scheduler's", ggml_backend_name(backend));
}

ggml_backend_t ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t s, struct ggml_tensor * node) {
    if (!s || !s->graph) return NULL;
    const int b = map_get(&s->assign, node);
    return b >= 0 ? s->backends[b] : NULL;
}

void ggml_backend_sched_set_eval_callback(ggml_backend_sched_t s, ggml_backend_sched_eval_callback cb, void * data) {
    if (!s) return;
    s->eval_cb = cb;
    s->eval_data = data;
}
