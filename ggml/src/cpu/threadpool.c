// threadpool.c — the CPU graph executor: a persistent pool of worker threads that run every
// node of a graph in order, meeting at a spin barrier between nodes.
//
// Idle workers sleep on a condition variable; a computation wakes them by bumping a generation
// counter. Within a computation the caller is thread 0 and nobody sleeps: barriers spin (with a
// pause instruction, then yielding) because a node takes microseconds and a futex wake-up
// costs as much as the node.
#include "cpu-impl.h"
#include "../ggml-core.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(_WIN32) && !defined(__MINGW32__)
// Minimal pthread shim over Win32 primitives: the pool needs nothing more.
#include <windows.h>
typedef HANDLE             pthread_t;
typedef CRITICAL_SECTION   pthread_mutex_t;
typedef CONDITION_VARIABLE pthread_cond_t;
static int pthread_mutex_init(pthread_mutex_t * m, void * a) { (void) a; InitializeCriticalSection(m); return 0; }
static int pthread_mutex_destroy(pthread_mutex_t * m) { DeleteCriticalSection(m); return 0; }
static int pthread_mutex_lock(pthread_mutex_t * m) { EnterCriticalSection(m); return 0; }
static int pthread_mutex_unlock(pthread_mutex_t * m) { LeaveCriticalSection(m); return 0; }
static int pthread_cond_init(pthread_cond_t * c, void * a) { (void) a; InitializeConditionVariable(c); return 0; }
static int pthread_cond_destroy(pthread_cond_t * c) { (void) c; return 0; }
static int pthread_cond_wait(pthread_cond_t * c, pthread_mutex_t * m) { SleepConditionVariableCS(c, m, INFINITE); return 0; }
static int pthread_cond_broadcast(pthread_cond_t * c) { WakeAllConditionVariable(c); return 0; }
struct ggml_win_thread { void * (*fn)(void *); void * arg; };
static DWORD WINAPI ggml_win_thread_main(LPVOID p) {
    struct ggml_win_thread t = *(struct ggml_win_thread *) p;
    free(p);
    t.fn(t.arg);
    return 0;
}
static int pthread_create(pthread_t * th, void * attr, void * (*fn)(void *), void * arg) {
    (void) attr;
    struct ggml_win_thread * t = malloc(sizeof(*t));
    if (!t) return -1;
    t->fn = fn; t->arg = arg;
    *th = CreateThread(NULL, 0, ggml_win_thread_main, t, 0, NULL);
    if (!*th) { free(t); return -1; }
    return 0;
}
static int pthread_join(pthread_t th, void ** ret) {
    (void) ret;
    WaitForSingleObject(th, INFINITE);
    CloseHandle(th);
    return 0;
}
static void ggml_thread_yield(void) { SwitchToThread(); }
#else
#include <pthread.h>
#include <sched.h>
static void ggml_thread_yield(void) { sched_yield(); }
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void ggml_cpu_relax(void) { _mm_pause(); }
#elif defined(__aarch64__)
static inline void ggml_cpu_relax(void) { __asm__ volatile("yield" ::: "memory"); }
#else
static inline void ggml_cpu_relax(void) { }
#endif

// Pause-spins before a waiter starts yielding its core (other processes may need it).
#ifndef GGML_SPIN_BEFORE_YIELD
#define GGML_SPIN_BEFORE_YIELD 1024
#endif
// Pause-spins an idle worker does before sleeping: catches back-to-back computations.
#ifndef GGML_SPIN_BEFORE_SLEEP
#define GGML_SPIN_BEFORE_SLEEP 4096
#endif
#define GGML_CACHE_LINE 64
#define GGML_START_SHIFT 10 // n_threads <= 512 fits below

// ---------------------------------------------------------------------------------------------
// GGML_PROFILE=1: every thread times each node's kernel and the barrier wait after it, per op
// (mul_mat per weight type); ggml_graph_compute times its own set-up and the gap since the
// previous computation (graph build, allocation and the caller's work). A table goes to stderr
// at exit. Off, the cost is one predictable branch per node.

#define GGML_PROF_THREADS 8
#define GGML_PROF_KEYS (GGML_OP_COUNT + GGML_TYPE_COUNT)

struct ggml_prof_slot {
    uint64_t calls;   // nodes this thread ran (or skipped as extra thread)
    uint64_t ns_run;  // inside the kernel
    uint64_t ns_wait; // at the node barrier after it
};

static struct {
    bool on;
    uint64_t n_graphs, n_nodes, n_work_nodes, n_barriers;
    uint64_t ns_total, ns_setup, ns_gap, ns_join, ns_last_end;
    int max_threads;
    struct ggml_prof_slot slot[GGML_PROF_THREADS][GGML_PROF_KEYS];
} g_prof;

static uint64_t ggml_prof_now(void) {
#if defined(_WIN32)
    LARGE_INTEGER c, f;
    QueryPerformanceCounter(&c);
    QueryPerformanceFrequency(&f);
    return (uint64_t) ((double) c.QuadPart * 1e9 / (double) f.QuadPart);
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
#endif
}

static int ggml_prof_key(const struct ggml_tensor * node) {
    if (node->op == GGML_OP_MUL_MAT && node->src[0]) {
        return GGML_OP_COUNT + (int) node->src[0]->type;
    }
    return (int) node->op;
}

static void ggml_prof_key_name(int key, char * buf, size_t n) {
    if (key >= GGML_OP_COUNT) {
        snprintf(buf, n, "MUL_MAT %s", ggml_type_name((enum ggml_type) (key - GGML_OP_COUNT)));
    } else {
        snprintf(buf, n, "%s", ggml_op_name((enum ggml_op) key));
    }
}

static void ggml_prof_print(void) {
    if (g_prof.n_graphs == 0) {
        return;
    }
    const double ng = (double) g_prof.n_graphs;
    const int nt = g_prof.max_threads < GGML_PROF_THREADS ? g_prof.max_threads : GGML_PROF_THREADS;
    double run0 = 0.0;
    for (int k = 0; k < GGML_PROF_KEYS; k++) {
        run0 += (double) g_prof.slot[0][k].ns_run;
    }
    fprintf(stderr, "\nGGML_PROFILE: %llu graph computes, per compute: %.0f nodes (%.0f with work), %.0f node barriers, up to %d threads\n",
            (unsigned long long) g_prof.n_graphs, g_prof.n_nodes / ng, g_prof.n_work_nodes / ng, g_prof.n_barriers / ng, nt);
    fprintf(stderr, "per compute (us): %.1f in ggml_graph_compute = set-up %.1f + nodes + final join %.1f; "
                    "%.1f between computes (graph build, allocation, caller)\n",
            g_prof.ns_total / ng / 1e3, g_prof.ns_setup / ng / 1e3, g_prof.ns_join / ng / 1e3,
            g_prof.n_graphs > 1 ? g_prof.ns_gap / (ng - 1) / 1e3 : 0.0);
    fprintf(stderr, "%-16s %8s", "op", "nodes/g");
    for (int t = 0; t < nt; t++) {
        fprintf(stderr, "  t%d run us  wait us", t);
    }
    fprintf(stderr, "  %%run(t0)\n");
    for (int k = 0; k < GGML_PROF_KEYS; k++) {
        if (g_prof.slot[0][k].calls == 0) {
            continue;
        }
        char name[48];
        ggml_prof_key_name(k, name, sizeof(name));
        fprintf(stderr, "%-16s %8.1f", name, g_prof.slot[0][k].calls / ng);
        for (int t = 0; t < nt; t++) {
            fprintf(stderr, "  %9.1f %8.1f", g_prof.slot[t][k].ns_run / ng / 1e3, g_prof.slot[t][k].ns_wait / ng / 1e3);
        }
        fprintf(stderr, "  %7.1f\n", run0 > 0 ? 100.0 * g_prof.slot[0][k].ns_run / run0 : 0.0);
    }
}

static void ggml_prof_init(void) {
    const char * env = getenv("GGML_PROFILE");
    if (env && env[0] && strcmp(env, "0") != 0) {
        g_prof.on = true;
        atexit(ggml_prof_print);
    }
}

// Counter barrier for n threads; gen moves on each time everyone arrived.
struct ggml_barrier {
    _Alignas(GGML_CACHE_LINE) atomic_int count;
    _Alignas(GGML_CACHE_LINE) atomic_int gen;
};

struct ggml_worker {
    struct ggml_threadpool * tp;
    int ith;
};

struct ggml_threadpool {
    int n_threads_max;               // threads created, the caller's included
    int n_threads;                   // threads the next computation uses
    pthread_t * threads;             // n_threads_max - 1 workers
    struct ggml_worker * workers;

    pthread_mutex_t mutex;           // guards sleeping on cond
    pthread_cond_t  cond;
    // Starts a computation: (generation << GGML_START_SHIFT) | n_threads in one word, so a
    // worker that wakes late never pairs one computation's thread count with another's start.
    _Alignas(GGML_CACHE_LINE) atomic_uint start;
    atomic_bool stop;
    atomic_bool busy;                // a computation is running (pools are not reentrant)

    // The current computation; written before generation is bumped.
    struct ggml_cgraph * cgraph;
    int n_threads_cur;               // the caller's copy of the count in `start`
    void * wdata;
    size_t wsize;

    struct ggml_barrier node_barrier; // between nodes, all n_threads_cur threads
    struct ggml_barrier op_barrier;   // ggml_cpu_barrier, the node's n_tasks threads
    _Alignas(GGML_CACHE_LINE) atomic_int n_finished;
    atomic_int status;
    // First node after which every thread stops (INT_MAX: none). A node index rather than a
    // flag: a slow thread reading it after barrier i must not see a stop decided at node i+1.
    atomic_int stop_node;
    atomic_bool kernel_failed;       // set by ggml_cpu_kernel_failed

    ggml_abort_callback abort_cb;
    void * abort_data;
};

static void ggml_barrier_wait(struct ggml_barrier * b, int n) {
    if (n <= 1) {
        return;
    }
    const int gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) == n - 1) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&b->gen, 1, memory_order_release);
        return;
    }
    int spins = 0;
    while (atomic_load_explicit(&b->gen, memory_order_acquire) == gen) {
        if (++spins < GGML_SPIN_BEFORE_YIELD) {
            ggml_cpu_relax();
        } else {
            ggml_thread_yield();
        }
    }
}

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

// Runs thread ith's share of every node of the current computation.
// Index of the first node at or after i that does work (views do none), or n_nodes.
static int ggml_next_compute_node(const struct ggml_cgraph * g, int i) {
    while (i < g->n_nodes && ggml_op_is_view(g->nodes[i]->op)) {
        i++;
    }
    return i;
}

static void ggml_threadpool_run(struct ggml_threadpool * tp, int ith, int nth) {
    const struct ggml_cgraph * g = tp->cgraph;
    const int n = g->n_nodes;
    int i = ggml_next_compute_node(g, 0);
    int n_tasks = i < n ? ggml_cpu_n_tasks(g->nodes[i], nth) : 1;
    bool stopping = false;
    const bool prof = g_prof.on && ith < GGML_PROF_THREADS;
    uint64_t t_prof = prof ? ggml_prof_now() : 0;
    while (i < n) {
        struct ggml_tensor * node = g->nodes[i];
        // Once this thread knows of a stop it only walks on to the barrier where everyone
        // leaves. It learns of stops it made itself, and of others' at barriers, so all
        // threads of a multi-threaded node agree on running it (kernels may barrier inside).
        if (ith < n_tasks && !stopping) {
            const struct ggml_compute_params params = { ith, n_tasks, tp->wsize, tp->wdata, tp };
            if (!ggml_cpu_compute_forward(&params, node) ||
                atomic_load_explicit(&tp->kernel_failed, memory_order_relaxed)) {
                ggml_threadpool_stop_at(tp, i, GGML_STATUS_FAILED);
                stopping = true;
            }
        }
        if (ith == 0 && !stopping && tp->abort_cb && tp->abort_cb(tp->abort_data)) {
            ggml_threadpool_stop_at(tp, i, GGML_STATUS_ABORTED);
            stopping = true;
        }
        const int next = ggml_next_compute_node(g, i + 1);
        const int n_tasks_next = next < n ? ggml_cpu_n_tasks(g->nodes[next], nth) : 1;
        // When thread 0 alone ran this node and alone runs the next, nobody needs to wait:
        // the same thread sees its own writes. Every thread takes the same decision.
        const bool sync = nth > 1 && next < n && !(n_tasks == 1 && n_tasks_next == 1);
        if (prof) {
            const uint64_t t1 = ggml_prof_now();
            struct ggml_prof_slot * sl = &g_prof.slot[ith][ggml_prof_key(node)];
            sl->calls++;
            sl->ns_run += t1 - t_prof;
            if (sync) {
                ggml_barrier_wait(&tp->node_barrier, nth);
            }
            t_prof = ggml_prof_now();
            sl->ns_wait += t_prof - t1;
            if (ith == 0) {
                g_prof.n_work_nodes++;
                g_prof.n_barriers += sync;
            }
        } else if (sync) {
            ggml_barrier_wait(&tp->node_barrier, nth);
        }
        // Stops decided up to here were made before this barrier, so every thread sees them at
        // the same barrier and leaves at the same node.
        // (A stop at a later node, made by a thread already past this barrier, waits for the
        // next barrier: only stops at nodes <= i are sure to be seen by everyone here.)
        if ((sync || nth == 1) && atomic_load_explicit(&tp->stop_node, memory_order_relaxed) <= i) {
            break;
        }
        i = next;
        n_tasks = n_tasks_next;
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
            // The caller waits for every participant, so the computation cannot change under us.
            ggml_threadpool_run(tp, w->ith, nth);
            atomic_fetch_add_explicit(&tp->n_finished, 1, memory_order_release);
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
    atomic_init(&tp->n_finished, 0);
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
    ggml_aligned_free(tp);
}

int ggml_threadpool_get_n_threads(const struct ggml_threadpool * tp) {
    return tp ? tp->n_threads : 0;
}

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

// Gives views their data from their view source and checks every tensor the graph touches has
// data; false (logged) otherwise.
static bool ggml_graph_prepare_data(struct ggml_cgraph * g) {
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

enum ggml_status ggml_graph_compute(struct ggml_cgraph * cgraph, struct ggml_threadpool * tp) {
    if (!cgraph || !tp) {
        GGML_LOG_ERROR("ggml_graph_compute: NULL %s", cgraph ? "threadpool" : "graph");
        return GGML_STATUS_FAILED;
    }
    if (cgraph->overflow) {
        GGML_LOG_ERROR("ggml_graph_compute: the graph is incomplete (it overflowed or was given a NULL tensor)");
        return GGML_STATUS_FAILED;
    }
    const uint64_t t_prof0 = g_prof.on ? ggml_prof_now() : 0;
    bool expected = false;
    if (!atomic_compare_exchange_strong(&tp->busy, &expected, true)) {
        GGML_LOG_ERROR("ggml_graph_compute: the threadpool is already computing a graph");
        return GGML_STATUS_FAILED;
    }
    if (!ggml_graph_prepare_data(cgraph)) {
        atomic_store(&tp->busy, false);
        return GGML_STATUS_ALLOC_FAILED;
    }

    const int nth = tp->n_threads;
    size_t wsize = 0;
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const struct ggml_tensor * node = cgraph->nodes[i];
        if (!ggml_op_is_view(node->op)) {
            const size_t w = ggml_cpu_work_size(node, ggml_cpu_n_tasks(node, nth));
            wsize = w > wsize ? w : wsize;
        }
    }
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
    atomic_store(&tp->status, GGML_STATUS_SUCCESS);
    atomic_store(&tp->stop_node, INT_MAX);
    atomic_store(&tp->kernel_failed, false);
    atomic_store(&tp->n_finished, 0);
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
    const uint64_t t_prof2 = g_prof.on ? ggml_prof_now() : 0;
    // Wait until every worker has left the graph before the caller may change it.
    int spins = 0;
    while (atomic_load_explicit(&tp->n_finished, memory_order_acquire) < nth - 1) {
        if (++spins < GGML_SPIN_BEFORE_YIELD) {
            ggml_cpu_relax();
        } else {
            ggml_thread_yield();
        }
    }
    tp->cgraph = NULL;
    if (g_prof.on) {
        const uint64_t t_prof3 = ggml_prof_now();
        g_prof.ns_gap += g_prof.ns_last_end ? t_prof0 - g_prof.ns_last_end : 0;
        g_prof.ns_last_end = t_prof3;
        g_prof.ns_total += t_prof3 - t_prof0;
        g_prof.ns_setup += t_prof1 - t_prof0;
        g_prof.ns_join += t_prof3 - t_prof2;
        g_prof.n_graphs++;
        g_prof.n_nodes += (uint64_t) cgraph->n_nodes;
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
