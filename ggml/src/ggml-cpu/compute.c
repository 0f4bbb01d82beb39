// compute.c — op dispatch for the CPU executor, per-node thread counts and scratch sizes, and
// CPU facts: physical core count and instruction-set features (cpuid / getauxval).
#include "cpu-impl.h"
#include "quants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

// ---------------------------------------------------------------------------------------------
// dispatch

bool ggml_cpu_compute_forward(const struct ggml_compute_params * params, struct ggml_tensor * node) {
    switch (node->op) {
        case GGML_OP_NONE:
        case GGML_OP_RESHAPE:
        case GGML_OP_VIEW:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE:
            return true; // metadata only
        case GGML_OP_DUP:            ggml_compute_forward_dup(params, node);            return true;
        case GGML_OP_CONT:           ggml_compute_forward_dup(params, node);            return true;
        case GGML_OP_CPY:            ggml_compute_forward_cpy(params, node);            return true;
        case GGML_OP_ADD:            ggml_compute_forward_add(params, node);            return true;
        case GGML_OP_SUB:            ggml_compute_forward_sub(params, node);            return true;
        case GGML_OP_MUL:            ggml_compute_forward_mul(params, node);            return true;
        case GGML_OP_DIV:            ggml_compute_forward_div(params, node);            return true;
        case GGML_OP_SCALE:          ggml_compute_forward_scale(params, node);          return true;
        case GGML_OP_RMS_NORM:       ggml_compute_forward_rms_norm(params, node);       return true;
        case GGML_OP_NORM:           ggml_compute_forward_norm(params, node);           return true;
        case GGML_OP_SILU:           ggml_compute_forward_silu(params, node);           return true;
        case GGML_OP_GELU:           ggml_compute_forward_gelu(params, node);           return true;
        case GGML_OP_TANH:           ggml_compute_forward_tanh(params, node);           return true;
        case GGML_OP_SIGMOID:        ggml_compute_forward_sigmoid(params, node);        return true;
        case GGML_OP_SOFTPLUS:       ggml_compute_forward_softplus(params, node);       return true;
        case GGML_OP_CLAMP:          ggml_compute_forward_clamp(params, node);          return true;
        case GGML_OP_L2_NORM:        ggml_compute_forward_l2_norm(params, node);        return true;
        case GGML_OP_SSM_CONV:       ggml_compute_forward_ssm_conv(params, node);       return true;
        case GGML_OP_GATED_DELTA_NET: ggml_compute_forward_gated_delta_net(params, node); return true;
        case GGML_OP_SWIGLU:         ggml_compute_forward_swiglu(params, node);         return true;
        case GGML_OP_MUL_MAT:        ggml_compute_forward_mul_mat(params, node);        return true;
        case GGML_OP_SOFT_MAX:       ggml_compute_forward_soft_max(params, node);       return true;
        case GGML_OP_ROPE:           ggml_compute_forward_rope(params, node);           return true;
        case GGML_OP_DIAG_MASK_INF:  ggml_compute_forward_diag_mask_inf(params, node);  return true;
        case GGML_OP_GET_ROWS:       ggml_compute_forward_get_rows(params, node);       return true;
        case GGML_OP_SET_ROWS:       ggml_compute_forward_set_rows(params, node);       return true;
        case GGML_OP_SUM_ROWS:       ggml_compute_forward_sum_rows(params, node);       return true;
        case GGML_OP_ARGMAX:         ggml_compute_forward_argmax(params, node);         return true;
        case GGML_OP_CONCAT:         ggml_compute_forward_concat(params, node);         return true;
        case GGML_OP_FLASH_ATTN_EXT: ggml_compute_forward_flash_attn_ext(params, node); return true;
        case GGML_OP_ARGSORT:        ggml_compute_forward_argsort(params, node);        return true;
        case GGML_OP_TOP_K:          ggml_compute_forward_top_k(params, node);          return true;
        case GGML_OP_MUL_MAT_ID:     ggml_compute_forward_mul_mat_id(params, node);     return true;
        case GGML_OP_COUNT:
            break;
    }
    if (params->ith == 0) {
        GGML_LOG_ERROR("ggml_graph_compute: op %s (%d) of node '%s' (%s) has no CPU kernel",
                       ggml_op_name(node->op), (int) node->op, node->name, ggml_type_name(node->type));
    }
    return false;
}

size_t ggml_cpu_work_size(const struct ggml_tensor * node, int n_threads) {
    switch (node->op) {
        case GGML_OP_MUL_MAT:        return ggml_cpu_work_size_mul_mat(node, n_threads);
        case GGML_OP_SOFT_MAX:       return ggml_cpu_work_size_soft_max(node, n_threads);
        case GGML_OP_FLASH_ATTN_EXT: return ggml_cpu_work_size_flash_attn_ext(node, n_threads);
        case GGML_OP_ARGSORT:        return ggml_cpu_work_size_argsort(node, n_threads);
        case GGML_OP_MUL_MAT_ID:     return ggml_cpu_work_size_mul_mat_id(node, n_threads);
        case GGML_OP_GATED_DELTA_NET: return ggml_cpu_work_size_gated_delta_net(node, n_threads);
        default:                     return 0;
    }
}

// Below this much estimated work (about one element-op each, ~0.3-1 ns) a node runs on one
// thread: meeting the other threads at a barrier costs ~0.2-1 us on an idle machine and
// far more on a busy one.
#define GGML_CPU_MIN_WORK_PER_TASK 4096

// Fewest elements per thread of a split elementwise op (add, mul, silu, swiglu, ...).
#define GGML_CPU_EW_MIN_UNIT 512

// Independent pieces node's kernel splits its work into (rows, heads x queries, ...): more
// threads than this would only idle until the next barrier.
static int64_t ggml_cpu_n_units(const struct ggml_tensor * node) {
    switch (node->op) {
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID:
        case GGML_OP_DUP:
        case GGML_OP_CONT:
        case GGML_OP_CPY:
            return ggml_nelements(node); // tiles of rows x columns; contiguous copies split bytes
        case GGML_OP_GET_ROWS:
            return ggml_nelements(node->src[1]);
        case GGML_OP_SET_ROWS:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_ARGMAX:
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K:
        case GGML_OP_ROPE:
        case GGML_OP_SOFT_MAX:
            return ggml_nrows(node->src[0]);
        case GGML_OP_SSM_CONV:
            return (node->ne[0] + 15) / 16 * node->ne[2];  // blocks of 16 channels x sequences
        case GGML_OP_GATED_DELTA_NET:
            return node->src[2]->ne[1] * node->src[2]->ne[3]; // heads x sequences
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_SCALE:
        case GGML_OP_SILU:
        case GGML_OP_GELU:
        case GGML_OP_TANH:
        case GGML_OP_SIGMOID:
        case GGML_OP_SOFTPLUS:
        case GGML_OP_CLAMP:
        case GGML_OP_SWIGLU:
            // flat element ranges across rows (ggml_cpu_ew_split), so one long row splits too;
            // a share under GGML_CPU_EW_MIN_UNIT floats saves less than the barrier costs
            return ggml_nelements(node) / GGML_CPU_EW_MIN_UNIT;
        default:
            return ggml_nrows(node); // FLASH_ATTN_EXT: [Dv, heads, queries, seqs]: heads x queries
    }
}

int ggml_cpu_n_tasks_max(const struct ggml_tensor * node, int n_threads) {
    if (n_threads <= 1 || ggml_op_is_view(node->op)) {
        return 1;
    }
    const int64_t units = ggml_cpu_n_units(node);
    return units < 1 ? 1 : (units < n_threads ? (int) units : n_threads);
}

int ggml_cpu_n_tasks(const struct ggml_tensor * node, int n_threads) {
    const int max = ggml_cpu_n_tasks_max(node, n_threads);
    if (max <= 1) {
        return 1;
    }
    int64_t work;
    switch (node->op) {
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID: {
            // Multiply-adds: K * M * N (b's rows times a's rows); int8/SIMD dots do ~8 per element-op.
            const struct ggml_tensor * a = node->src[0];
            work = a->ne[0] * ggml_nelements(node) / 8;
            break;
        }
        case GGML_OP_FLASH_ATTN_EXT: {
            // Per query row and KV cell: a dot of D and an axpy of Dv, plus an exp and the
            // online-softmax bookkeeping: several element-ops per element, not 1/8.
            const struct ggml_tensor * k = node->src[1];
            work = 2 * ggml_nelements(node->src[0]) * k->ne[1];
            break;
        }
        case GGML_OP_SOFT_MAX:
        case GGML_OP_SILU:
        case GGML_OP_GELU:
        case GGML_OP_TANH:
        case GGML_OP_SIGMOID:
        case GGML_OP_SOFTPLUS:
        case GGML_OP_SWIGLU:
            work = 4 * ggml_nelements(node); // an exp or tanh per element
            break;
        case GGML_OP_ROPE:
            work = 2 * ggml_nelements(node);
            break;
        case GGML_OP_SSM_CONV:
            work = ggml_nelements(node) * node->src[1]->ne[0];
            break;
        case GGML_OP_GATED_DELTA_NET:
            // per token and value head: four passes over the S x S state
            work = 4 * ggml_nelements(node->src[2]) * node->src[2]->ne[0];
            break;
        case GGML_OP_ARGMAX:
        case GGML_OP_TOP_K:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_CPY:
        case GGML_OP_SET_ROWS:
            work = ggml_nelements(node->src[0]);
            break;
        case GGML_OP_ARGSORT:
            work = 8 * ggml_nelements(node->src[0]); // log2(n) merge passes
            break;
        default:
            work = ggml_nelements(node);
            break;
    }
    const int64_t n = work / GGML_CPU_MIN_WORK_PER_TASK;
    if (n <= 1) {
        return 1;
    }
    return n < max ? (int) n : max;
}

// ---------------------------------------------------------------------------------------------
// physical cores

#if defined(__linux__)
// Counts distinct (package, core) pairs over the configured CPUs in sysfs; 0 if unavailable.
static int ggml_cpu_count_cores_sysfs(void) {
    enum { MAX_CPUS = 4096 };
    long n_cpus = sysconf(_SC_NPROCESSORS_CONF);
    if (n_cpus <= 0 || n_cpus > MAX_CPUS) {
        n_cpus = MAX_CPUS;
    }
    long * keys = GGML_MALLOC((size_t) n_cpus * sizeof(long));
    if (!keys) {
        return 0;
    }
    int n_keys = 0;
    for (long cpu = 0; cpu < n_cpus; cpu++) {
        char path[128];
        long core = 0, pkg = 0;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/core_id", cpu);
        FILE * f = fopen(path, "r");
        if (!f) {
            continue; // offline CPU or a hole in the numbering
        }
        const bool ok = fscanf(f, "%ld", &core) == 1;
        fclose(f);
        if (!ok) {
            continue;
        }
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/physical_package_id", cpu);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%ld", &pkg) != 1) {
                pkg = 0;
            }
            fclose(f);
        }
        const long key = pkg * 1000003L + core;
        bool seen = false;
        for (int i = 0; i < n_keys && !seen; i++) {
            seen = keys[i] == key;
        }
        if (!seen) {
            keys[n_keys++] = key;
        }
    }
    free(keys);
    return n_keys;
}
#endif

int ggml_cpu_n_physical_cores(void) {
    static int cached = 0;
    if (cached > 0) {
        return cached;
    }
    int n = 0;
#if defined(__linux__)
    n = ggml_cpu_count_cores_sysfs();
#endif
#if defined(_WIN32)
    if (n <= 0) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        n = (int) si.dwNumberOfProcessors;
    }
#else
    if (n <= 0) {
        const long online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online > 0 ? (int) online : 1;
    }
#endif
    cached = n > 0 ? n : 1;
    return cached;
}

// ---------------------------------------------------------------------------------------------
// instruction-set features

struct ggml_cpu_feature_set {
    bool avx2, fma, f16c, bmi2;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
    bool neon, dotprod;
};

#if defined(__x86_64__) || defined(__i386__)
// XCR0: which register states the OS saves on context switch.
static uint64_t ggml_cpu_xgetbv0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t) edx << 32) | eax;
}
#endif

static struct ggml_cpu_feature_set ggml_cpu_detect(void) {
    struct ggml_cpu_feature_set fs;
    memset(&fs, 0, sizeof(fs));
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) {
        return fs;
    }
    const unsigned max_leaf = a;
    __cpuid(1, a, b, c, d);
    const bool osxsave = (c >> 27) & 1;
    const bool avx     = (c >> 28) & 1;
    const bool fma     = (c >> 12) & 1;
    const bool f16c    = (c >> 29) & 1;
    const uint64_t xcr0 = osxsave ? ggml_cpu_xgetbv0() : 0;
    const bool os_ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
    const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0; // opmask + ZMM0-15 hi + ZMM16-31
    if (!avx || !os_ymm || max_leaf < 7) {
        return fs;
    }
    fs.fma  = fma;
    fs.f16c = f16c;
    __cpuid_count(7, 0, a, b, c, d);
    fs.avx2       = (b >> 5) & 1;
    fs.bmi2       = (b >> 8) & 1;
    fs.avx512f    = os_zmm && ((b >> 16) & 1);
    fs.avx512dq   = fs.avx512f && ((b >> 17) & 1);
    fs.avx512bw   = fs.avx512f && ((b >> 30) & 1);
    fs.avx512vl   = fs.avx512f && ((b >> 31) & 1);
    fs.avx512vnni = fs.avx512f && ((c >> 11) & 1);
    if (fs.avx512f && a >= 1) {
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        fs.avx512bf16 = (a1 >> 5) & 1;
    }
#elif defined(__aarch64__)
    fs.neon = true;
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
    fs.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__APPLE__)
    fs.dotprod = true; // every Apple silicon core has it
#endif
#endif
    return fs;
}

static struct ggml_cpu_feature_set g_cpu_features;
static char g_cpu_features_str[160];

// Features after GGML_CPU_VARIANT lowered the level: what the library actually uses.
static void ggml_cpu_features_init(void) {
    struct ggml_cpu_feature_set fs = ggml_cpu_detect();
    const enum ggml_cpu_kernel_variant v = ggml_cpu_kernel_variant_selected();
    if (v == GGML_CPU_KERNELS_PORTABLE) {
        memset(&fs, 0, sizeof(fs));
    } else if (v == GGML_CPU_KERNELS_AVX2 || v == GGML_CPU_KERNELS_AVXVNNI) {
        fs.avx512f = fs.avx512bw = fs.avx512vl = fs.avx512dq = fs.avx512vnni = fs.avx512bf16 = false;
    }
    g_cpu_features = fs;
    char * s = g_cpu_features_str;
    const size_t cap = sizeof(g_cpu_features_str);
    s[0] = '\0';
    const struct { bool on; const char * name; } list[] = {
        { fs.avx2, "avx2" }, { fs.fma, "fma" }, { fs.f16c, "f16c" }, { fs.bmi2, "bmi2" },
        { fs.avx512f, "avx512f" }, { fs.avx512bw, "avx512bw" }, { fs.avx512vl, "avx512vl" },
        { fs.avx512dq, "avx512dq" }, { fs.avx512vnni, "avx512vnni" }, { fs.avx512bf16, "avx512bf16" },
        { fs.neon, "neon" }, { fs.dotprod, "dotprod" },
    };
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
        if (list[i].on) {
            const size_t len = strlen(s);
            snprintf(s + len, cap - len, "%s%s", len ? "," : "", list[i].name);
        }
    }
}

#if defined(_WIN32)
static INIT_ONCE g_features_once = INIT_ONCE_STATIC_INIT;
static BOOL CALLBACK ggml_cpu_features_init_win(PINIT_ONCE once, PVOID param, PVOID * ctx) {
    (void) once; (void) param; (void) ctx;
    ggml_cpu_features_init();
    return TRUE;
}
static const struct ggml_cpu_feature_set * ggml_cpu_features_get(void) {
    InitOnceExecuteOnce(&g_features_once, ggml_cpu_features_init_win, NULL, NULL);
    return &g_cpu_features;
}
#else
static pthread_once_t g_features_once = PTHREAD_ONCE_INIT;
static const struct ggml_cpu_feature_set * ggml_cpu_features_get(void) {
    pthread_once(&g_features_once, ggml_cpu_features_init);
    return &g_cpu_features;
}
#endif

int ggml_cpu_has_avx2(void)        { const struct ggml_cpu_feature_set * f = ggml_cpu_features_get(); return f->avx2 && f->fma && f->f16c; }
int ggml_cpu_has_f16c(void)        { return ggml_cpu_features_get()->f16c; }

int ggml_cpu_has_avx512(void) {
    const struct ggml_cpu_feature_set * f = ggml_cpu_features_get();
    return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq;
}

const char * ggml_cpu_variant(void) {
    return ggml_cpu_kernel_variant_name(ggml_cpu_kernel_variant_selected());
}

const char * ggml_cpu_features(void) {
    ggml_cpu_features_get();
    return g_cpu_features_str;
}
