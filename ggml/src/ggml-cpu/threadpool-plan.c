// threadpool-plan.c — turns a graph into the pool's plan: one step per node that does work,
// its thread count, the barriers it needs and the node pairs run fused; and the data check
// before a computation.
#include "threadpool-impl.h"

// ---------------------------------------------------------------------------------------------
// Fusion: RMS_NORM at node i whose one consumer is node i+1 = MUL(norm, 1-D weight) runs as one
// kernel (ops-norm.c) that writes the MUL's output and never the norm's. A norm consumed by
// anything else (another node, a view, a second source slot of the MUL) or marked as a graph
// output keeps its own step. Marks live in the norm's op_params past eps (the op reads only
// word 0) for the length of the planning pass, so no per-graph table is needed.

#define GGML_FUSE_WORD 15 // op_params int32 index used as scratch while planning
#define GGML_FUSE_TAG  0x465553 // "FUS" above the low byte, which counts uses

static bool ggml_fuse_marked(const struct ggml_tensor * t) {
    return (ggml_get_op_params_i32(t, GGML_FUSE_WORD) & ~0xff) == GGML_FUSE_TAG << 8 &&
        (ggml_get_op_params_i32(t, GGML_FUSE_WORD) & 0xff) == 1;
}

static void ggml_fuse_unmark(struct ggml_tensor * t) { ggml_set_op_params_i32(t, GGML_FUSE_WORD, 0); }

// Marks each fusable norm with its number of consumers; unmarks (and so keeps unfused) those
// with more than one. Returns the number left to fuse.
static int ggml_threadpool_mark_fusions(const struct ggml_cgraph * g) {
    int n_cand = 0;
    for (int i = 0; i + 1 < g->n_nodes; i++) {
        struct ggml_tensor * t = g->nodes[i];
        if (t->op == GGML_OP_RMS_NORM && !(t->flags & GGML_TENSOR_FLAG_OUTPUT) &&
            ggml_get_op_params_i32(t, GGML_FUSE_WORD) == 0 && ggml_cpu_rms_norm_mul_fusable(t, g->nodes[i + 1])) {
            ggml_set_op_params_i32(t, GGML_FUSE_WORD, (int32_t) (GGML_FUSE_TAG << 8));
            n_cand++;
        }
    }
    if (n_cand == 0) {
        return 0;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor * node = g->nodes[i];
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            // A source counts for itself and for what it views (an in-place norm is a view of
            // its input; a view of a norm reads the norm).
            struct ggml_tensor * src = node->src[s];
            for (int k = 0; src && k < 2; k++) {
                struct ggml_tensor * t = k == 0 ? src : src->view_src;
                if (t && t->op == GGML_OP_RMS_NORM) {
                    const int32_t v = ggml_get_op_params_i32(t, GGML_FUSE_WORD);
                    if ((v & ~0xff) == GGML_FUSE_TAG << 8 && (v & 0xff) < 0xff) {
                        ggml_set_op_params_i32(t, GGML_FUSE_WORD, v + 1);
                    }
                }
            }
        }
    }
    int n = 0;
    for (int i = 0; i + 1 < g->n_nodes; i++) {
        struct ggml_tensor * t = g->nodes[i];
        if (t->op != GGML_OP_RMS_NORM || (ggml_get_op_params_i32(t, GGML_FUSE_WORD) & ~0xff) != GGML_FUSE_TAG << 8) {
            continue;
        }
        if (ggml_fuse_marked(t)) {
            n++;
        } else {
            ggml_fuse_unmark(t);
        }
    }
    return n;
}

// Plans the computation of g on nth threads into pl: one step per node that does work, its
// thread count, and whether all threads must meet after it, plus the scratch the steps need.
// False if the step array cannot grow.
bool ggml_threadpool_plan(struct ggml_plan * pl, const struct ggml_cgraph * g, int nth, bool fuse) {
    pl->graph = NULL;
    if (g->n_nodes > pl->cap) {
        const int cap = g->n_nodes + g->n_nodes / 2;
        struct ggml_plan_step * p = ggml_aligned_malloc((size_t) cap * sizeof(*p));
        if (!p) {
            return false;
        }
        ggml_aligned_free(pl->steps);
        pl->steps = p;
        pl->cap = cap;
    }
    struct ggml_plan_step * plan = pl->steps;
    int n = 0;
    const int n_fused = fuse ? ggml_threadpool_mark_fusions(g) : 0;
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        if (!ggml_op_is_view(node->op)) {
            plan[n].node = node;
            plan[n].n_tasks = ggml_cpu_n_tasks(node, nth);
            plan[n].fused = NULL;
            if (n_fused > 0 && node->op == GGML_OP_RMS_NORM && ggml_fuse_marked(node)) {
                plan[n].fused = g->nodes[++i]; // the MUL: it gets no step of its own
                ggml_fuse_unmark(node);
            }
            n++;
        }
    }
    // A small node between two multi-threaded ones is met by barriers on both sides anyway:
    // splitting it too costs nothing extra and shortens the time the others wait.
    for (int i = 1; i + 1 < n; i++) {
        if (plan[i].n_tasks == 1 && plan[i - 1].n_tasks > 1 && plan[i + 1].n_tasks > 1) {
            plan[i].n_tasks = ggml_cpu_n_tasks_max(plan[i].node, nth);
        }
    }
    size_t w = 0;
    for (int i = 0; i < n; i++) {
        const size_t wi = ggml_cpu_work_size(plan[i].node, plan[i].n_tasks);
        w = wi > w ? wi : w;
        // When thread 0 alone runs this step and alone runs the next, nobody needs to wait:
        // the same thread sees its own writes.
        plan[i].sync = nth > 1 && i + 1 < n && !(plan[i].n_tasks == 1 && plan[i + 1].n_tasks == 1);
    }
    pl->n = n;
    pl->nth = nth;
    pl->fuse = fuse;
    pl->wsize = w;
    pl->graph = g;
    return true;
}

// Gives views their data from their view source and checks every tensor the graph touches has
// data; false (logged) otherwise.
bool ggml_graph_prepare_data(struct ggml_cgraph * g) {
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        for (int s = -1; s < GGML_MAX_SRC; s++) {
            struct ggml_tensor * t = s < 0 ? node : node->src[s];
            if (!t) {
                continue;
            }
            if (t->view_src && t->view_src->data) {
                t->data = (char *) t->view_src->data + t->view_offs;
            }
            if (!t->data && ggml_nbytes(t) > 0) {
                GGML_LOG_ERROR("ggml_graph_compute: tensor '%s' (%s, %s of node %d '%s') has no data; "
                               "allocate the graph (ggml_gallocr_alloc_graph) or use a context without no_alloc",
                               t->name, ggml_op_name(t->op), s < 0 ? "the node" : "a source", i, node->name);
                return false;
            }
        }
    }
    return true;
}
