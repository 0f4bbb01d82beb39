// cpu-features.c — CPU facts: the physical core count (sysfs, else the online CPU count) and the
// instruction-set features (cpuid and XCR0 on x86, getauxval on aarch64 Linux), detected once.
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
// physical cores

#if defined(__linux__)
// Counts distinct (package, core) pairs over the configured CPUs in sysfs; 0 if unavailable.
static int ggml_cpu_count_cores_sysfs(void) {
    enum {
        MAX_CPUS = 4096
    };
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
    const bool avx = (c >> 28) & 1;
    const bool fma = (c >> 12) & 1;
    const bool f16c = (c >> 29) & 1;
    const uint64_t xcr0 = osxsave ? ggml_cpu_xgetbv0() : 0;
    const bool os_ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
    const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0; // opmask + ZMM0-15 hi + ZMM16-31
    if (!avx || !os_ymm || max_leaf < 7) {
        return fs;
    }
    fs.fma = fma;
    fs.f16c = f16c;
    __cpuid_count(7, 0, a, b, c, d);
    fs.avx2 = (b >> 5) & 1;
    fs.bmi2 = (b >> 8) & 1;
    fs.avx512f = os_zmm && ((b >> 16) & 1);
    fs.avx512dq = fs.avx512f && ((b >> 17) & 1);
    fs.avx512bw = fs.avx512f && ((b >> 30) & 1);
    fs.avx512vl = fs.avx512f && ((b >> 31) & 1);
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
    const struct {
        bool on;
        const char * name;
    } list[] = {
        { fs.avx2, "avx2" },
        { fs.fma, "fma" },
        { fs.f16c, "f16c" },
        { fs.bmi2, "bmi2" },
        { fs.avx512f, "avx512f" },
        { fs.avx512bw, "avx512bw" },
        { fs.avx512vl, "avx512vl" },
        { fs.avx512dq, "avx512dq" },
        { fs.avx512vnni, "avx512vnni" },
        { fs.avx512bf16, "avx512bf16" },
        { fs.neon, "neon" },
        { fs.dotprod, "dotprod" },
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
    (void) once;
    (void) param;
    (void) ctx;
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

int ggml_cpu_has_avx2(void) {
    const struct ggml_cpu_feature_set * f = ggml_cpu_features_get();
    return f->avx2 && f->fma && f->f16c;
}
int ggml_cpu_has_f16c(void) { return ggml_cpu_features_get()->f16c; }

int ggml_cpu_has_avx512(void) {
    const struct ggml_cpu_feature_set * f = ggml_cpu_features_get();
    return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq;
}

const char * ggml_cpu_variant(void) { return ggml_cpu_kernel_variant_name(ggml_cpu_kernel_variant_selected()); }

const char * ggml_cpu_features(void) {
    ggml_cpu_features_get();
    return g_cpu_features_str;
}
