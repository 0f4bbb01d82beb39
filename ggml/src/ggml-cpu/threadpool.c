// threadpool.c — the CPU graph executor: a persistent pool of worker threads that run every
// node of a graph in order, meeting at a spin barrier between nodes.
//
// Idle workers sleep on a condition variable; a computation wakes them by bumping a generation
// counter. Within a computation the caller is thread 0 and nobody sleeps: barriers spin (with a
// pause instruction, then yielding) because a node takes microseconds and a futex wake-up
// costs as much as the node.
#include "cpu-impl.h"
#include "threadpool.h"
#include "../ggml-core.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(_WIN32)
#include <windows.h> // QueryPerformanceCounter (MinGW's pthreads included)
#endif

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
// Pause-spins thread 0 does at the final join before sleeping: the last node (the lm-head in
// decoding, split statically) often leaves it tens of microseconds ahead, and a futex wake-up
// after that costs as much again. 8192 pauses: about 0.2 ms on this machine class.
#ifndef GGML_SPIN_JOIN
#define GGML_SPIN_JOIN 8192
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
    uint64_t n_adapt_single, n_adapt_multi; // computes the adaptive count ran with one / n_threads
    uint64_t ns_blocked0;                   // thread 0's sleep at barriers
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
    if (g_prof.n_adapt_single + g_prof.n_adapt_multi > 0) {
        fprintf(stderr, "adaptive thread count (GGML_THREADS_ADAPT): %llu computes with one thread, %llu with all "
                        "(thread 0 slept %.1f us per compute at barriers)\n",
                (unsigned long long) g_prof.n_adapt_single, (unsigned long long) g_prof.n_adapt_multi,
                (double) g_prof.ns_blocked0 / (double) g_prof.n_graphs / 1e3);
    }
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

// ---------------------------------------------------------------------------------------------
// Adaptive thread count. Threads that meet at a barrier after every node only make progress
// while all of them are on a CPU at once: on a machine with more runnable threads than cores
// they spend most of the time waiting for a descheduled partner (and one thread is 2-3x
// faster than two). So for each kind of graph that takes long enough to matter the pool
// times whole computations with n_threads and with one thread, keeps a running (geometric)
// mean of each, runs the faster, and now and then re-tries the other (less often while it
// keeps losing). GGML_THREADS_ADAPT=0 turns this off.

#define GGML_ADAPT_SLOTS 8
#define GGML_ADAPT_MIN_NS 300000.0   // graphs faster than this keep n_threads (tests, toys)
#define GGML_ADAPT_PROBE_MIN 4       // computes between re-tries of the losing count...
#define GGML_ADAPT_PROBE_MAX 32      // ...doubling up to this while it keeps losing
#define GGML_ADAPT_ALPHA 0.25        // weight of a new sample in the running mean of log(ns)
#define GGML_ADAPT_MARGIN 0.03       // the other count must be 3% faster to take over
#define GGML_ADAPT_QUIET 0.05         // thread 0 asleep at barriers for less than this share: "quiet"

struct ggml_adapt_entry {
    uint64_t key;       // graph kind (0: free slot)
    uint64_t last_use;  // for replacing the least recently used slot
    double lt[2];       // running mean of log(ns per compute): [0] one thread, [1] n_threads
    int n[2];           // samples behind lt
    int choice;         // 0 or 1: the faster so far
    bool quiet;         // in the last computation with n_threads, thread 0 hardly slept at barriers
    int interval;       // computes between re-tries of the other
    int countdown;      // computes until the next re-try
};

// One node of the computation's plan (views, which do no work, have no step).
struct ggml_plan_step {
    struct ggml_tensor * node;
    int n_tasks;                     // threads 0..n_tasks-1 run the kernel
    bool sync;                       // every thread meets at the node barrier after this step
    struct ggml_tensor * fused;      // non-NULL: node is an RMS_NORM run fused with this MUL
};

// The steps of a computation: kept, with what they were made for, so that an unchanged graph
// (ggml_threadpool_graph_unchanged) is not planned again.
struct ggml_plan {
    struct ggml_plan_step * steps;
    int n, cap;
    const struct ggml_cgraph * graph; // NULL: nothing valid
    int nth;
    bool fuse;                       // fusion was allowed when the plan was made
    size_t wsize;                    // scratch bytes the steps need
};

// Counter barrier for n threads; gen moves on each time everyone arrived. Waiters spin a
// while, then sleep on gen (a futex on Linux) so that a partner that was descheduled gets a
// CPU; the last to arrive wakes sleepers only if there are any.
struct ggml_barrier {
    _Alignas(GGML_CACHE_LINE) atomic_int count;
    _Alignas(GGML_CACHE_LINE) atomic_int gen;
    atomic_int sleepers;
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
    // Plans kept for reuse: [0] for one thread, [1] for more (the adaptive count alternates).
    struct ggml_plan plans[2];
    const struct ggml_plan * plan;   // the current computation's
    const struct ggml_cgraph * unchanged; // ggml_threadpool_graph_unchanged's promise
    const struct ggml_cgraph * data_checked; // graph whose tensors' data the last computation checked

    uint64_t blocked0;               // ns thread 0 slept at barriers in this computation
    bool adapt;                      // adaptive thread count (GGML_THREADS_ADAPT)
    bool fuse;                       // plans may fuse node pairs (GGML_FUSE=0 turns it off)
    int adapt_nth;                   // n_threads the entries were measured with
    uint64_t adapt_clock;
    struct ggml_adapt_entry adapt_slot[GGML_ADAPT_SLOTS];

    struct ggml_barrier node_barrier; // between nodes, all n_threads_cur threads
    struct ggml_barrier op_barrier;   // ggml_cpu_barrier, the node's n_tasks threads
    atomic_int status;
    // First node after which every thread stops (INT_MAX: none). A node index rather than a
    // flag: a slow thread reading it after barrier i must not see a stop decided at node i+1.
    atomic_int stop_node;
    atomic_bool kernel_failed;       // set by ggml_cpu_kernel_failed

    ggml_abort_callback abort_cb;
    void * abort_data;
};

// Returns the nanoseconds the caller slept after spinning in vain (the others were late), or 0.
// Every thread must pass the same sequence of barriers (kernels call ggml_cpu_barrier on all
// their threads).
static uint64_t ggml_prof_now(void);

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

static uint64_t ggml_barrier_wait(struct ggml_barrier * b, int n) {
    return ggml_barrier_wait_spin(b, n, GGML_SPIN_BEFORE_YIELD);
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

static void ggml_fuse_unmark(struct ggml_tensor * t) {
    ggml_set_op_params_i32(t, GGML_FUSE_WORD, 0);
}

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
static bool ggml_threadpool_plan(struct ggml_plan * pl, const struct ggml_cgraph * g, int nth, bool fuse) {
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
    const char * adapt = getenv("GGML_THREADS_ADAPT");
    tp->adapt = !(adapt && strcmp(adapt, "0") == 0);
    const char * fuse = getenv("GGML_FUSE");
    tp->fuse = !(fuse && strcmp(fuse, "0") == 0);
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

// A graph's kind: its size and the shapes of its first and last nodes (a token-generation
// step stays one kind while the KV cache grows; a prompt batch is another).
static uint64_t ggml_adapt_key(const struct ggml_cgraph * g) {
    uint64_t h = 1469598103934665603ull;
    const uint64_t v[] = {
        (uint64_t) g->n_nodes, (uint64_t) g->n_leafs,
        g->n_nodes ? (uint64_t) g->nodes[0]->ne[0] : 0, g->n_nodes ? (uint64_t) g->nodes[0]->ne[1] : 0,
        g->n_nodes ? (uint64_t) g->nodes[g->n_nodes - 1]->ne[0] : 0,
        g->n_nodes ? (uint64_t) g->nodes[g->n_nodes - 1]->ne[1] : 0,
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        h = (h ^ v[i]) * 1099511628211ull;
    }
    return h ? h : 1;
}

static struct ggml_adapt_entry * ggml_adapt_lookup(struct ggml_threadpool * tp, const struct ggml_cgraph * g, int nth) {
    if (tp->adapt_nth != nth) {
        memset(tp->adapt_slot, 0, sizeof(tp->adapt_slot)); // measured with another count
        tp->adapt_nth = nth;
    }
    const uint64_t key = ggml_adapt_key(g);
    struct ggml_adapt_entry * victim = &tp->adapt_slot[0];
    tp->adapt_clock++;
    for (int i = 0; i < GGML_ADAPT_SLOTS; i++) {
        struct ggml_adapt_entry * e = &tp->adapt_slot[i];
        if (e->key == key) {
            e->last_use = tp->adapt_clock;
            return e;
        }
        if (e->last_use < victim->last_use) {
            victim = e;
        }
    }
    memset(victim, 0, sizeof(*victim));
    victim->key = key;
    victim->last_use = tp->adapt_clock;
    victim->choice = 1;
    victim->interval = GGML_ADAPT_PROBE_MIN;
    victim->countdown = GGML_ADAPT_PROBE_MIN;
    return victim;
}

// Which count the next computation of e's kind runs with: 0 one thread, 1 n_threads.
static int ggml_adapt_arm(struct ggml_adapt_entry * e) {
    if (e->n[1] < 3) {
        return 1;
    }
    if (e->choice == 1 && (e->quiet || e->lt[1] < log(GGML_ADAPT_MIN_NS))) {
        // The threads kept meeting promptly, or the graph is too quick to matter.
        return 1;
    }
    if (e->n[0] < 2) {
        return 0;
    }
    return --e->countdown <= 0 ? !e->choice : e->choice;
}

static void ggml_adapt_record(struct ggml_adapt_entry * e, int arm, uint64_t ns, uint64_t blocked) {
    const double lx = log((double) (ns ? ns : 1));
    // The count not in use is only sampled by re-tries: weigh those more so a change in the
    // machine's load is noticed after one or two.
    const double alpha = arm == e->choice ? GGML_ADAPT_ALPHA : 2 * GGML_ADAPT_ALPHA;
    e->lt[arm] = e->n[arm] == 0 ? lx : e->lt[arm] + alpha * (lx - e->lt[arm]);
    e->n[arm]++;
    if (arm == 1) {
        // Threads that are on CPUs at the same time meet within microseconds; sleeping at
        // barriers means a partner was descheduled (or a node was badly unbalanced).
        e->quiet = (double) blocked <= GGML_ADAPT_QUIET * (double) ns;
    }
    if (e->n[0] < 2 || e->n[1] < 3) {
        return;
    }
    const int other = !e->choice;
    const bool flip = e->lt[other] < e->lt[e->choice] - GGML_ADAPT_MARGIN;
    if (arm == other || e->countdown <= 0) {
        // A re-try of the other count just ended: wait longer before the next one while it loses.
        e->interval = flip ? GGML_ADAPT_PROBE_MIN
                           : (e->interval * 2 > GGML_ADAPT_PROBE_MAX ? GGML_ADAPT_PROBE_MAX : e->interval * 2);
        e->countdown = e->interval;
    }
    if (flip) {
        e->choice = other;
        e->countdown = e->interval;
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
