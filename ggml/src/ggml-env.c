// ggml-env.c — the only place the tensor library calls getenv: each switch's name, default and
// parsing rule is here, so README's table, ggml_env_summary() and the code cannot drift apart.
#include "ggml-env.h"
#include "ggml.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// On unless the value is exactly "0".
static bool env_on_unless_zero(const char * v) { return !(v && strcmp(v, "0") == 0); }

// Off unless set to something other than "" or "0".
static bool env_off_unless_set(const char * v) { return v && v[0] && strcmp(v, "0") != 0; }

void ggml_env_read(struct ggml_env * out) {
    const char * variant = getenv("GGML_CPU_VARIANT");
    snprintf(out->cpu_variant, sizeof(out->cpu_variant), "%s", variant ? variant : "");
    const char * gemm = getenv("GGML_CPU_GEMM");
    out->cpu_gemm = !(gemm && gemm[0] == '0');
    out->fuse = env_on_unless_zero(getenv("GGML_FUSE"));
    out->threads_adapt = env_on_unless_zero(getenv("GGML_THREADS_ADAPT"));
    out->profile = env_off_unless_set(getenv("GGML_PROFILE"));
    out->test_device = env_off_unless_set(getenv("GGML_TEST_DEVICE"));
    out->cuda_graphs = env_on_unless_zero(getenv("GGML_CUDA_GRAPHS"));
}

static struct ggml_env g_env;
static atomic_int g_env_state; // 0: not read, 1: being read, 2: ready

const struct ggml_env * ggml_env(void) {
    if (atomic_load_explicit(&g_env_state, memory_order_acquire) != 2) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&g_env_state, &expected, 1)) {
            ggml_env_read(&g_env);
            atomic_store_explicit(&g_env_state, 2, memory_order_release);
        } else {
            // another thread is parsing: a handful of getenv calls
            while (atomic_load_explicit(&g_env_state, memory_order_acquire) != 2) {
            }
        }
    }
    return &g_env;
}

const char * ggml_env_summary(void) {
    // per thread, so concurrent callers do not overwrite each other's string
    static _Thread_local char buf[192];
    const struct ggml_env * p = ggml_env();
    struct ggml_env now;
    ggml_env_read(&now);
    snprintf(buf, sizeof(buf),
             "GGML_CPU_VARIANT=%s GGML_CPU_GEMM=%d GGML_FUSE=%d GGML_THREADS_ADAPT=%d GGML_PROFILE=%d GGML_TEST_DEVICE=%d "
             "GGML_CUDA_GRAPHS=%d",
             p->cpu_variant[0] ? p->cpu_variant : "auto", p->cpu_gemm, now.fuse, now.threads_adapt, p->profile, p->test_device,
             p->cuda_graphs);
    return buf;
}
