// threadpool.c — the CPU graph executor: a persistent pool of worker threads that run every
// node of a graph in order, meeting at a spin barrier between nodes.
//
// Idle workers sleep on a condition variable; a computation wakes them by bumping a generation
// counter. Within a computation the caller is thread 0 and nobody sleeps: barriers spin (with a
// pause instruction, then yielding) because a node takes microseconds and a futex wake-up
// costs as much as the node.
//
// This file: threads, barriers and the compute loop. Planning is in threadpool-plan.c,
// GGML_PROFILE in threadpool-prof.c, the adaptive thread count in threadpool-adapt.c; what
// they share in threadpool-impl.h.
#include "threadpool-impl.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
// Sleeps while *addr == val (returns at once if it already differs); wakes are spurious-safe.
static void ggml_futex_wait(atomic_int * addr, int val) {
    syscall(SYS_futex, (int *) addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void ggml_futex_wake_all(atomic_int * addr) {
    syscall(SYS_futex, (int *) addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
#define GGML_HAVE_FUTEX 1
#endif

// Returns the nanoseconds the caller slept after spinning in vain (the others were late), or 0.
// Every thread must pass the same sequence of barriers (kernels call ggml_cpu_barrier on all
// their threads).
static uint64_t ggml_barrier_wait_spin(struct ggml_barrier * b, int n, int max_spins) {
    if (n <= 1) {
        return 0;
    }
    const int gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) == n - 1) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        // seq_cst pairs with the sleeper's increment of sleepers: either it sees the new gen
        // (and does not sleep) or this sees it counted (and wakes it).
        atomic_fetch_add_explicit(&b->gen, 1, memory_order_seq_cst);
#if defined(GGML_HAVE_FUTEX)
        if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0) {
            ggml_futex_wake_all(&b->gen);
        }
#endif
        return 0;
    }
    for (int spins = 0; spins < max_spins; spins++) {
        if (atomic_load_explicit(&b->gen, memory_order_acquire) != gen) {
            return 0;
        }
        ggml_cpu_relax();
    }
    const uint64_t t0 = ggml_prof_now();
#if defined(GGML_HAVE_FUTEX)
    atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&b->gen, memory_order_seq_cst) == gen) {
        ggml_futex_wait(&b->gen, gen);
    }
    atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
#else
    while (atomic_load_explicit(&b->gen, memory_order_acquire) == gen) {
        ggml_thread_yield();
    }
#endif
    const uint64_t dt = ggml_prof_now() - t0;
    return dt ? dt : 1;
}

static uint64_t ggml_barrier_wait(struct ggml_barrier * b, int n) { return ggml_barrier_wait_spin(b, n, GGML_SPIN_BEFORE_YIELD); }

void ggml_cpu_kernel_failed(const struct ggml_compute_params * params) {
    if (params && params->tp) {
        atomic_store(&params->tp->kernel_failed, true);
    }
}

void ggml_cpu_barrier(const struct ggml_compute_params * params) {
    if (params->nth <= 1 || !params->tp) {
        return;
    }
    ggml_barrier_wait(&params->tp->op_barrier, params->nth);
}

// Records that the computation ends after node i with `status`; the earliest node wins.
static void ggml_threadpool_stop_at(struct ggml_threadpool * tp, int i, enum ggml_status status) {
    int cur = atomic_load(&tp->stop_node);
    while (i < cur && !atomic_compare_exchange_weak(&tp->stop_node, &cur, i)) {
    }
    int expected = GGML_STATUS_SUCCESS;
    atomic_compare_exchange_strong(&tp->status, &expected, status);
}

// The norm weight of a fused step is a few KiB read once per token from memory that the
// layer's matmuls have long since evicted: asking for it one step early (the residual add,
// typically) overlaps the misses with that step instead of stalling the norm on them.
#ifndef GGML_FUSE_PREFETCH_AHEAD
#define GGML_FUSE_PREFETCH_AHEAD 2
#endif
static void ggml_fuse_prefetch_weight(const struct ggml_tensor * norm, const struct ggml_tensor * mul) {
#if defined(__GNUC__) || defined(__clang__)
    const struct ggml_tensor * w = mul->src[0] == norm ? mul->src[1] : mul->src[0];
    const char * p = (const char *) w->data;
    const size_t nb = (size_t) w->ne[0] * sizeof(float);
    for (size_t o = 0; o < nb; o += GGML_CACHE_LINE) {
        __builtin_prefetch(p + o, 0, 3);
    }
#else
    (void) norm;
    (void) mul;
#endif
}

// Runs thread ith's share of every step of the current computation's plan.
static void ggml_threadpool_run(struct ggml_threadpool * tp, int ith, int nth) {
    const struct ggml_plan_step * plan = tp->plan->steps;
    const int n = tp->plan->n;
    bool stopping = false;
    const bool prof = g_prof.on && ith < GGML_PROF_THREADS;
    uint64_t t_prof = prof ? ggml_prof_now() : 0;
    for (int i = 0; i < n; i++) {
        struct ggml_tensor * node = plan[i].node;
        const int n_tasks = plan[i].n_tasks;
        const bool sync = plan[i].sync;
        // Once this thread knows of a stop it only walks on to the barrier where everyone
        // leaves. It learns of stops it made itself, and of others' at barriers, so all
        // threads of a multi-threaded node agree on running it (kernels may barrier inside).
        if (ith == 0 && i + GGML_FUSE_PREFETCH_AHEAD < n && plan[i + GGML_FUSE_PREFETCH_AHEAD].fused) {
            ggml_fuse_prefetch_weight(plan[i + GGML_FUSE_PREFETCH_AHEAD].node, plan[i + GGML_FUSE_PREFETCH_AHEAD].fused);
        }
        if (ith < n_tasks && !stopping) {
            const struct ggml_compute_params params = { ith, n_tasks, tp->wsize, tp->wdata, tp };
            if (plan[i].fused) {
                ggml_compute_forward_rms_norm_mul(&params, node, plan[i].fused);
            } else if (!ggml_cpu_compute_forward(&params, node) ||
                       atomic_load_explicit(&tp->kernel_failed, memory_order_relaxed)) {
                ggml_threadpool_stop_at(tp, i, GGML_STATUS_FAILED);
                stopping = true;
            }
        }
        if (ith == 0 && !stopping && tp->abort_cb && tp->abort_cb(tp->abort_data)) {
            ggml_threadpool_stop_at(tp, i, GGML_STATUS_ABORTED);
            stopping = true;
        }
        if (prof) {
            const uint64_t t1 = ggml_prof_now();
            struct ggml_prof_slot * sl = &g_prof.slot[ith][ggml_prof_key(node)];
            sl->calls++;
            sl->ns_run += t1 - t_prof;
            if (sync) {
                const uint64_t y = ggml_barrier_wait(&tp->node_barrier, nth);
                if (ith == 0) {
                    tp->blocked0 += y;
                }
            }
            t_prof = ggml_prof_now();
            sl->ns_wait += t_prof - t1;
            if (ith == 0) {
                g_prof.n_barriers += sync;
            }
        } else if (sync) {
            const uint64_t y = ggml_barrier_wait(&tp->node_barrier, nth);
            if (ith == 0) {
                tp->blocked0 += y;
            }
        }
        // Stops decided up to here were made before this barrier, so every thread sees them at
        // the same barrier and leaves at the same step.
        // (A stop at a later step, made by a thread already past this barrier, waits for the
        // next barrier: only stops at steps <= i are sure to be seen by everyone here.)
        if ((sync || nth == 1) && atomic_load_explicit(&tp->stop_node, memory_order_relaxed) <= i) {
            break;
        }
    }
    // Everyone leaves together: the caller may change or free the graph once it returns.
    if (nth > 1) {
        const uint64_t t0 = prof && ith == 0 ? ggml_prof_now() : 0;
        const uint64_t y = ggml_barrier_wait_spin(&tp->node_barrier, nth, ith == 0 ? GGML_SPIN_JOIN : GGML_SPIN_BEFORE_YIELD);
        if (ith == 0) {
            tp->blocked0 += y;
            if (prof) {
                g_prof.ns_join += ggml_prof_now() - t0;
            }
        }
    }
}

void ggml_threadpool_graph_unchanged(struct ggml_threadpool * tp, const struct ggml_cgraph * gf) {
    if (tp) {
        tp->unchanged = gf;
    }
}

static void * ggml_worker_main(void * arg) {
    struct ggml_worker * w = arg;
    struct ggml_threadpool * tp = w->tp;
    unsigned seen = 0;
    for (;;) {
        int spins = 0;
        unsigned start;
        while ((start = atomic_load_explicit(&tp->start, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&tp->stop, memory_order_acquire)) {
            if (++spins < GGML_SPIN_BEFORE_SLEEP) {
                ggml_cpu_relax();
                continue;
            }
            pthread_mutex_lock(&tp->mutex);
            while (atomic_load(&tp->start) == seen && !atomic_load(&tp->stop)) {
                pthread_cond_wait(&tp->cond, &tp->mutex);
            }
            pthread_mutex_unlock(&tp->mutex);
        }
        if (atomic_load(&tp->stop)) {
            break;
        }
        seen = start;
        const int nth = (int) (start & ((1u << GGML_START_SHIFT) - 1));
        if (w->ith < nth) {
            // The caller meets every participant at the final barrier, so the computation
            // cannot change under us.
            ggml_threadpool_run(tp, w->ith, nth);
        }
    }
    return NULL;
}

struct ggml_threadpool * ggml_threadpool_new(int n_threads) {
    if (n_threads < 1 || n_threads > 512) {
        GGML_LOG_ERROR("ggml_threadpool_new: n_threads %d is not in 1..512", n_threads);
        return NULL;
    }
    static atomic_flag prof_once = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&prof_once)) {
        ggml_prof_init();
    }
    struct ggml_threadpool * tp = ggml_aligned_malloc(sizeof(*tp));
    if (!tp) {
        GGML_LOG_ERROR("ggml_threadpool_new: out of memory");
        return NULL;
    }
    memset(tp, 0, sizeof(*tp));
    atomic_init(&tp->start, 0u);
    atomic_init(&tp->stop, false);
    atomic_init(&tp->busy, false);
    atomic_init(&tp->node_barrier.count, 0);
    atomic_init(&tp->node_barrier.gen, 0);
    atomic_init(&tp->op_barrier.count, 0);
    atomic_init(&tp->op_barrier.gen, 0);
    atomic_init(&tp->node_barrier.sleepers, 0);
    atomic_init(&tp->op_barrier.sleepers, 0);
    atomic_init(&tp->status, GGML_STATUS_SUCCESS);
    atomic_init(&tp->stop_node, INT_MAX);
    atomic_init(&tp->kernel_failed, false);
    pthread_mutex_init(&tp->mutex, NULL);
    pthread_cond_init(&tp->cond, NULL);
    tp->threads = calloc((size_t) n_threads, sizeof(pthread_t));
    tp->workers = calloc((size_t) n_threads, sizeof(struct ggml_worker));
    if (!tp->threads || !tp->workers) {
        GGML_LOG_ERROR("ggml_threadpool_new: out of memory");
        ggml_threadpool_free(tp);
        return NULL;
    }
    tp->n_threads_max = 1;
    for (int i = 1; i < n_threads; i++) {
        tp->workers[i].tp = tp;
        tp->workers[i].ith = i;
        if (pthread_create(&tp->threads[i - 1], NULL, ggml_worker_main, &tp->workers[i]) != 0) {
            GGML_LOG_WARN("ggml_threadpool_new: could only start %d of %d threads", i, n_threads);
            break;
        }
        tp->n_threads_max = i + 1;
    }
    tp->n_threads = tp->n_threads_max;
    struct ggml_env env; // read per pool: a program may switch these between pools
    ggml_env_read(&env);
    tp->adapt = env.threads_adapt;
    tp->fuse = env.fuse;
    return tp;
}

void ggml_threadpool_free(struct ggml_threadpool * tp) {
    if (!tp) {
        return;
    }
    pthread_mutex_lock(&tp->mutex);
    atomic_store(&tp->stop, true);
    pthread_cond_broadcast(&tp->cond);
    pthread_mutex_unlock(&tp->mutex);
    for (int i = 1; i < tp->n_threads_max; i++) {
        pthread_join(tp->threads[i - 1], NULL);
    }
    pthread_cond_destroy(&tp->cond);
    pthread_mutex_destroy(&tp->mutex);
    free(tp->threads);
    free(tp->workers);
    ggml_aligned_free(tp->wdata);
    ggml_aligned_free(tp->plans[0].steps);
    ggml_aligned_free(tp->plans[1].steps);
    ggml_aligned_free(tp);
}

int ggml_threadpool_get_n_threads(const struct ggml_threadpool * tp) { return tp ? tp->n_threads : 0; }

void ggml_threadpool_set_n_threads(struct ggml_threadpool * tp, int n_threads) {
    if (!tp) {
        return;
    }
    if (n_threads < 1 || n_threads > tp->n_threads_max) {
        GGML_LOG_WARN("ggml_threadpool_set_n_threads: %d is not in 1..%d; clamped", n_threads, tp->n_threads_max);
        n_threads = n_threads < 1 ? 1 : tp->n_threads_max;
    }
    tp->n_threads = n_threads;
}

void ggml_threadpool_set_abort_callback(struct ggml_threadpool * tp, ggml_abort_callback cb, void * data) {
    if (tp) {
        tp->abort_cb = cb;
        tp->abort_data = data;
    }
}

enum ggml_status ggml_graph_compute(struct ggml_cgraph * cgraph, struct ggml_threadpool * tp) {
    if (!cgraph || !tp) {
        GGML_LOG_ERROR("ggml_graph_compute: NULL %s", cgraph ? "threadpool" : "graph");
        return GGML_STATUS_FAILED;
    }
    if (cgraph->overflow) {
        GGML_LOG_ERROR("ggml_graph_compute: the graph is incomplete (it overflowed or was given a NULL tensor)");
        tp->unchanged = NULL; // a promise holds for one computation, even a refused one
        return GGML_STATUS_FAILED;
    }
    const uint64_t t_prof0 = g_prof.on ? ggml_prof_now() : 0;
    bool expected = false;
    if (!atomic_compare_exchange_strong(&tp->busy, &expected, true)) {
        GGML_LOG_ERROR("ggml_graph_compute: the threadpool is already computing a graph");
        return GGML_STATUS_FAILED;
    }
    // The caller's promise that nothing changed since the last computation of this graph lets
    // it skip the walk over every tensor (after a token's worth of weights went through the
    // caches, that walk is mostly cache misses) and the planning.
    const bool unchanged = tp->unchanged == cgraph;
    tp->unchanged = NULL;
    if (!unchanged) {
        tp->plans[0].graph = tp->plans[1].graph = NULL;
        tp->data_checked = NULL;
    }
    if (tp->data_checked != cgraph) {
        if (!ggml_graph_prepare_data(cgraph)) {
            atomic_store(&tp->busy, false);
            return GGML_STATUS_ALLOC_FAILED;
        }
        tp->data_checked = cgraph;
    }

    int nth = tp->n_threads;
    struct ggml_adapt_entry * adapt = NULL;
    int arm = 1;
    uint64_t t_adapt = 0;
    if (tp->adapt && nth > 1 && cgraph->n_nodes > 0) {
        adapt = ggml_adapt_lookup(tp, cgraph, nth);
        arm = ggml_adapt_arm(adapt);
        nth = arm ? nth : 1;
        t_adapt = ggml_prof_now();
    }
    struct ggml_plan * plan = &tp->plans[nth > 1];
    if ((plan->graph != cgraph || plan->nth != nth || plan->fuse != tp->fuse) &&
        !ggml_threadpool_plan(plan, cgraph, nth, tp->fuse)) {
        GGML_LOG_ERROR("ggml_graph_compute: cannot allocate the plan of %d nodes", cgraph->n_nodes);
        tp->data_checked = NULL;
        atomic_store(&tp->busy, false);
        return GGML_STATUS_ALLOC_FAILED;
    }
    tp->plan = plan;
    const size_t wsize = plan->wsize;
    if (wsize > tp->wsize) {
        // Grow once, with slack so slowly growing graphs (a longer KV cache) do not regrow each call.
        const size_t want = GGML_PAD(wsize + wsize / 4, GGML_CACHE_LINE);
        void * w = ggml_aligned_malloc(want);
        if (!w) {
            GGML_LOG_ERROR("ggml_graph_compute: cannot allocate %zu bytes of scratch", want);
            atomic_store(&tp->busy, false);
            return GGML_STATUS_ALLOC_FAILED;
        }
        ggml_aligned_free(tp->wdata);
        tp->wdata = w;
        tp->wsize = want;
    }

    tp->cgraph = cgraph;
    tp->n_threads_cur = nth;
    tp->blocked0 = 0;
    atomic_store(&tp->status, GGML_STATUS_SUCCESS);
    atomic_store(&tp->stop_node, INT_MAX);
    atomic_store(&tp->kernel_failed, false);
    if (nth > 1) {
        pthread_mutex_lock(&tp->mutex);
        const unsigned prev = atomic_load_explicit(&tp->start, memory_order_relaxed);
        const unsigned gen = (prev >> GGML_START_SHIFT) + 1;
        atomic_store_explicit(&tp->start, (gen << GGML_START_SHIFT) | (unsigned) nth, memory_order_release);
        pthread_cond_broadcast(&tp->cond);
        pthread_mutex_unlock(&tp->mutex);
    }
    const uint64_t t_prof1 = g_prof.on ? ggml_prof_now() : 0;
    ggml_threadpool_run(tp, 0, nth);
    tp->cgraph = NULL;
    if (adapt) {
        ggml_adapt_record(adapt, arm, ggml_prof_now() - t_adapt, tp->blocked0);
        if (g_prof.on) {
            g_prof.ns_blocked0 += tp->blocked0;
            g_prof.n_adapt_single += arm == 0;
            g_prof.n_adapt_multi += arm == 1;
        }
    }
    if (g_prof.on) {
        const uint64_t t_prof3 = ggml_prof_now();
        g_prof.ns_gap += g_prof.ns_last_end ? t_prof0 - g_prof.ns_last_end : 0;
        g_prof.ns_last_end = t_prof3;
        g_prof.ns_total += t_prof3 - t_prof0;
        g_prof.ns_setup += t_prof1 - t_prof0;
        g_prof.n_graphs++;
        g_prof.n_nodes += (uint64_t) cgraph->n_nodes;
        g_prof.n_work_nodes += (uint64_t) tp->plan->n;
        g_prof.max_threads = nth > g_prof.max_threads ? nth : g_prof.max_threads;
    }
    const enum ggml_status status = (enum ggml_status) atomic_load(&tp->status);
    if (status == GGML_STATUS_ABORTED) {
        GGML_LOG_INFO("ggml_graph_compute: aborted by the abort callback");
    }
    atomic_store(&tp->busy, false);
    return status;
}

enum ggml_status ggml_graph_compute_with_ctx(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int n_threads) {
    (void) ctx;
    if (n_threads <= 0) {
        n_threads = ggml_cpu_n_physical_cores();
    }
    struct ggml_threadpool * tp = ggml_threadpool_new(n_threads);
    if (!tp) {
        return GGML_STATUS_ALLOC_FAILED;
    }
    const enum ggml_status status = ggml_graph_compute(cgraph, tp);
    ggml_threadpool_free(tp);
    return status;
}
