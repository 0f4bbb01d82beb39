// ggml-env.h — every environment switch of the tensor library, read in one place (ggml-env.c).
// Not installed; not part of the ABI. README's "Environment switches" table documents them.
#ifndef GGML_ENV_H
#define GGML_ENV_H

#include <stdbool.h>

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

// The switches as parsed from the environment. A switch that is unset has its default.
struct ggml_env {
    char cpu_variant[32]; // GGML_CPU_VARIANT: "" = the best kernel set; else a name to lower it to
    bool cpu_gemm;        // GGML_CPU_GEMM: batched GEMM path (default on; a value starting '0' = off)
    bool fuse;            // GGML_FUSE: op fusion in the CPU plans (default on; "0" = off)
    bool threads_adapt;   // GGML_THREADS_ADAPT: adaptive thread count (default on; "0" = off)
    bool profile;         // GGML_PROFILE: per-op timings printed at exit (default off; set, not "0" = on)
    bool test_device;     // GGML_TEST_DEVICE: registers the test backend device (default off; set, not "0" = on)
    bool cuda_graphs;     // GGML_CUDA_GRAPHS: the CUDA backend replays CUDA graphs (default on; "0" = off)
};

// The process's switches, read on the first call and then fixed (thread-safe). The kernel set
// (GGML_CPU_VARIANT), GGML_CPU_GEMM, GGML_PROFILE, GGML_TEST_DEVICE and GGML_CUDA_GRAPHS are
// taken from here (exported for the backend libraries, e.g. libggml-cuda).
GGML_API const struct ggml_env * ggml_env(void);
// Parses the environment as it is now into *out. Thread pools do this when they are made, so
// GGML_FUSE and GGML_THREADS_ADAPT may change between pools (tests switch them).
void ggml_env_read(struct ggml_env * out);

#ifdef __cplusplus
}
#endif

#endif // GGML_ENV_H
