// threadpool-impl.h — what the parts of the CPU graph executor share (not installed):
// threadpool.c (threads, barriers, the compute loop), threadpool-plan.c (planning and fusion),
// threadpool-prof.c (GGML_PROFILE), threadpool-adapt.c (the adaptive thread count).
#ifndef GGML_CPU_THREADPOOL_IMPL_H
#define GGML_CPU_THREADPOOL_IMPL_H

#include "cpu-impl.h"
#include "threadpool.h"
#include "../ggml-core.h"
#include "../ggml-env.h"

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
typedef HANDLE pthread_t;
typedef CRITICAL_SECTION pthread_mutex_t;
typedef CONDITION_VARIABLE pthread_cond_t;
static inline int pthread_mutex_init(pthread_mutex_t * m, void * a) {
    (void) a;
    InitializeCriticalSection(m);
    return 0;
}
static inline int pthread_mutex_destroy(pthread_mutex_t * m) {
    DeleteCriticalSection(m);
    return 0;
}
static inline int pthread_mutex_lock(pthread_mutex_t * m) {
    EnterCriticalSection(m);
    return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t * m) {
    LeaveCriticalSection(m);
    return 0;
}
static inline int pthread_cond_init(pthread_cond_t * c, void * a) {
    (void) a;
    InitializeConditionVariable(c);
    return 0;
}
static inline int pthread_cond_destroy(pthread_cond_t * c) {
    (void) c;
    return 0;
}
static inline int pthread_cond_wait(pthread_cond_t * c, pthread_mutex_t * m) {
    SleepConditionVariableCS(c, m, INFINITE);
    return 0;
}
static inline int pthread_cond_broadcast(pthread_cond_t * c) {
    WakeAllConditionVariable(c);
    return 0;
}
struct ggml_win_thread {
    void * (*fn)(void *);
    void * arg;
};
static inline DWORD WINAPI ggml_win_thread_main(LPVOID p) {
    struct ggml_win_thread t = *(struct ggml_win_thread *) p;
    free(p);
    t.fn(t.arg);
    return 0;
}
static inline int pthread_create(pthread_t * th, void * attr, void * (*fn)(void *), void * arg) {
    (void) attr;
    struct ggml_win_thread * t = malloc(sizeof(*t));
    if (!t) return -1;
    t->fn = fn;
    t->arg = arg;
    *th = CreateThread(NULL, 0, ggml_win_thread_main, t, 0, NULL);
    if (!*th) {
        free(t);
        return -1;
    }
    return 0;
}
static inline int pthread_join(pthread_t th, void ** ret) {
    (void) ret;
    WaitForSingleObject(th, INFINITE);
    CloseHandle(th);
    return 0;
}
static inline void ggml_thread_yield(void) { SwitchToThread(); }
#else
#include <pthread.h>
#include <sched.h>
static inline void ggml_thread_yield(void) { sched_yield(); }
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void ggml_cpu_relax(void) { _mm_pause(); }
#elif defined(__aarch64__)
static inline void ggml_cpu_relax(void) { __asm__ volatile("yield" ::: "memory"); }
#else
static inline void ggml_cpu_relax(void) {}
#endif

// Pause-spins before a waiter at a barrier sleeps (other processes may need the core). About
// 0.2 ms (26 ns a pause on Zen 3, about as much on Zen 5): a bandwidth-bound matmul often
// leaves one thread tens of microseconds behind, and a futex wake-up in a VM guest costs as
// much again, then delays the next node too (1024 spins: TinyLlama Q4_K_M tg on 2 Zen 3 cores,
// median 24.9 t/s; 8192: 29.8, alternating).
#ifndef GGML_SPIN_BEFORE_YIELD
#define GGML_SPIN_BEFORE_YIELD 8192
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
#define GGML_CACHE_LINE  64
#define GGML_START_SHIFT 10 // n_threads <= 512 fits below

// ---------------------------------------------------------------------------------------------
// GGML_PROFILE=1: every thread times each node's kernel and the barrier wait after it, per op
// (mul_mat per weight type); ggml_graph_compute times its own set-up and the gap since the
// previous computation (graph build, allocation and the caller's work). A table goes to stderr
// at exit. Off, the cost is one predictable branch per node.

#define GGML_PROF_THREADS 8
#define GGML_PROF_KEYS    (GGML_OP_COUNT + GGML_TYPE_COUNT)

struct ggml_prof_slot {
    uint64_t calls;   // nodes this thread ran (or skipped as extra thread)
    uint64_t ns_run;  // inside the kernel
    uint64_t ns_wait; // at the node barrier after it
};

struct ggml_prof_state {
    bool on;
    uint64_t n_graphs, n_nodes, n_work_nodes, n_barriers;
    uint64_t n_adapt_single, n_adapt_multi; // computes the adaptive count ran with one / n_threads
    uint64_t ns_blocked0;                   // thread 0's sleep at barriers
    uint64_t ns_total, ns_setup, ns_gap, ns_join, ns_last_end;
    int max_threads;
    struct ggml_prof_slot slot[GGML_PROF_THREADS][GGML_PROF_KEYS];
};

// threadpool-prof.c. Hidden (as the library's other internals are) so that the node loop reads
// it PC-relative, as when it was static, instead of through the GOT.
#if defined(__GNUC__) && !defined(_WIN32)
__attribute__((visibility("hidden")))
#endif
extern struct ggml_prof_state g_prof;

static inline uint64_t ggml_prof_now(void) {
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

static inline int ggml_prof_key(const struct ggml_tensor * node) {
    if (node->op == GGML_OP_MUL_MAT && node->src[0]) {
        return GGML_OP_COUNT + (int) node->src[0]->type;
    }
    return (int) node->op;
}

// Starts the profile (and its table at exit) if GGML_PROFILE asks for it; called once.
void ggml_prof_init(void);

// ---------------------------------------------------------------------------------------------
// Adaptive thread count. Threads that meet at a barrier after every node only make progress
// while all of them are on a CPU at once: on a machine with more runnable threads than cores
// they spend most of the time waiting for a descheduled partner (and one thread is 2-3x
// faster than two). So for each kind of graph that takes long enough to matter the pool
// times whole computations with n_threads and with one thread, keeps a running (geometric)
// mean of each, runs the faster, and now and then re-tries the other (less often while it
// keeps losing). GGML_THREADS_ADAPT=0 turns this off.

#define GGML_ADAPT_SLOTS     8
#define GGML_ADAPT_MIN_NS    300000.0   // graphs faster than this keep n_threads (tests, toys)
#define GGML_ADAPT_PROBE_MIN 4       // computes between re-tries of the losing count...
#define GGML_ADAPT_PROBE_MAX 32      // ...doubling up to this while it keeps losing
#define GGML_ADAPT_ALPHA     0.25        // weight of a new sample in the running mean of log(ns)
#define GGML_ADAPT_MARGIN    0.03       // the other count must be 3% faster to take over
#define GGML_ADAPT_CLIP      0.405        // log(1.5): a sample counts as at most 1.5x off the mean
#define GGML_ADAPT_QUIET     0.05         // thread 0 asleep at barriers for less than this share: "quiet"

struct ggml_adapt_entry {
    uint64_t key;       // graph kind (0: free slot)
    uint64_t last_use;  // for replacing the least recently used slot
    double lt[2];       // running mean of log(ns per compute): [0] one thread, [1] n_threads
    int n[2];           // samples behind lt
    int last_arm;       // the count of the previous computation (-1: none yet)
    int retry;          // computations of a re-try still to run after this one
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
    pthread_cond_t cond;
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

// Plans the computation of g on nth threads into pl (threadpool-plan.c); false if the step
// array cannot grow.
bool ggml_threadpool_plan(struct ggml_plan * pl, const struct ggml_cgraph * g, int nth, bool fuse);
// Gives views their data and checks every tensor of g has data; false (logged) otherwise.
bool ggml_graph_prepare_data(struct ggml_cgraph * g);

// The adaptive thread count (threadpool-adapt.c): the entry of g's kind, which count to run
// it with (0: one thread, 1: n_threads), and the time it took.
struct ggml_adapt_entry * ggml_adapt_lookup(struct ggml_threadpool * tp, const struct ggml_cgraph * g, int nth);
int ggml_adapt_arm(struct ggml_adapt_entry * e);
// A fresh entry for a kind (n_threads first, no samples).
void ggml_adapt_entry_init(struct ggml_adapt_entry * e, uint64_t key);
void ggml_adapt_record(struct ggml_adapt_entry * e, int arm, uint64_t ns, uint64_t blocked);

#endif // GGML_CPU_THREADPOOL_IMPL_H
