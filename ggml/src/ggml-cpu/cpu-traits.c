// cpu-traits.c — picks the dot-product kernels and activation quantizers for this CPU.
//
// One table per kernel set, built once: the portable table, then the ISA file overrides what
// it accelerates (avx512 builds on avx2, which covers the types avx512 leaves alone).
// GGML_CPU_VARIANT=portable|avx2|avxvnni|avx512|neon can only lower the choice: asking for a set the
// CPU cannot run logs a warning and keeps the best available one.
#include "quants.h"
#include "gemm.h"
#include "../ggml-env.h"

#include <pthread.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdlib.h>
#include <string.h>

// one entry past the types: the all-zero answer for ids outside the enum (every id below
// GGML_TYPE_COUNT may be a real type)
static struct ggml_type_traits_cpu variant_tables[GGML_CPU_KERNELS_COUNT][GGML_TYPE_COUNT + 1];
static struct ggml_gemm_traits gemm_tables[GGML_CPU_KERNELS_COUNT][GGML_TYPE_COUNT];
static bool variant_ok[GGML_CPU_KERNELS_COUNT];
static enum ggml_cpu_kernel_variant variant_selected = GGML_CPU_KERNELS_PORTABLE;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static const char * const variant_names[GGML_CPU_KERNELS_COUNT] = {
    "portable", "avx2", "avxvnni", "avx512", "neon",
};

#if defined(__x86_64__) || defined(__i386__)
static bool cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2") &&
        __builtin_cpu_supports("f16c");
}
static bool cpu_has_avxvnni(void) {
#if defined(GGML_CPU_EMULATE_AVXVNNI)
    return cpu_has_avx2(); // test builds: vpdpbusd is emulated with AVX2
#elif defined(GGML_CPU_HAVE_AVXVNNI)
    return cpu_has_avx2() && __builtin_cpu_supports("avxvnni");
#else
    return false; // the compiler had no -mavxvnni: the set is not built
#endif
}
static bool cpu_has_avx512(void) {
    // the set uses VNNI (vpdpbusd) throughout, so plain AVX-512F is not enough
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}
#endif

#if defined(__x86_64__) || defined(__i386__)
// cpuid's vendor string is "GenuineIntel".
static bool cpu_is_intel(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu; // "Genu" "ineI" "ntel"
}
#endif

static void tables_init(void) {
    for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
        ggml_cpu_quants_init_generic(variant_tables[v]);
        ggml_gemm_init_generic(gemm_tables[v]);
    }
    variant_ok[GGML_CPU_KERNELS_PORTABLE] = true;
#if defined(__x86_64__) || defined(__i386__)
    if (cpu_has_avx2()) {
        ggml_cpu_quants_init_avx2(variant_tables[GGML_CPU_KERNELS_AVX2]);
        ggml_gemm_init_avx2(gemm_tables[GGML_CPU_KERNELS_AVX2]);
        variant_ok[GGML_CPU_KERNELS_AVX2] = true;
    }
    if (cpu_has_avxvnni()) {
        ggml_cpu_quants_init_avx2(variant_tables[GGML_CPU_KERNELS_AVXVNNI]);
        ggml_gemm_init_avx2(gemm_tables[GGML_CPU_KERNELS_AVXVNNI]);
#if defined(GGML_CPU_HAVE_AVXVNNI)
        ggml_gemm_init_avxvnni(gemm_tables[GGML_CPU_KERNELS_AVXVNNI]);
#endif
        variant_ok[GGML_CPU_KERNELS_AVXVNNI] = true;
    }
    if (cpu_has_avx512()) {
        ggml_cpu_quants_init_avx2(variant_tables[GGML_CPU_KERNELS_AVX512]);
        ggml_cpu_quants_init_avx512(variant_tables[GGML_CPU_KERNELS_AVX512]);
        ggml_gemm_init_avx2(gemm_tables[GGML_CPU_KERNELS_AVX512]);
        ggml_gemm_init_avx512(gemm_tables[GGML_CPU_KERNELS_AVX512]);
        if (cpu_is_intel() && variant_ok[GGML_CPU_KERNELS_AVX2]) {
            // Token generation streams each repacked weight once against one column. Intel's
            // AVX-512 cores do that faster with the 256-bit one-column kernel for the types
            // whose levels are unpacked from nibbles (a Sapphire Rapids-class Xeon, TinyLlama
            // Q4_0, 2 threads: 21.9 against 27.4 ms of q4_0 matmuls per token; q8_0's byte
            // levels load straight into 512-bit vectors, and stay: SmolLM2 Q8_0 tg 145-149
            // against 159-176 t/s with the 256-bit one); prompts keep the 512-bit tiles. Same
            // layouts and float order: the same bits.
            for (int i = 0; i < GGML_TYPE_COUNT; i++) {
                if (i == GGML_TYPE_Q8_0) continue;
                struct ggml_gemm_traits * t5 = &gemm_tables[GGML_CPU_KERNELS_AVX512][i];
                const struct ggml_gemm_traits * t2 = &gemm_tables[GGML_CPU_KERNELS_AVX2][i];
                if (t5->kernel_repacked1 && t2->kernel_repacked1) t5->kernel_repacked1 = t2->kernel_repacked1;
            }
        }
        variant_ok[GGML_CPU_KERNELS_AVX512] = true;
    }
#elif defined(__aarch64__)
    ggml_cpu_quants_init_neon(variant_tables[GGML_CPU_KERNELS_NEON]);
    ggml_gemm_init_neon(gemm_tables[GGML_CPU_KERNELS_NEON]);
    variant_ok[GGML_CPU_KERNELS_NEON] = true;
#endif

    enum ggml_cpu_kernel_variant best = GGML_CPU_KERNELS_PORTABLE;
    for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
        if (variant_ok[v]) best = (enum ggml_cpu_kernel_variant) v;
    }
    variant_selected = best;

    const char * env = ggml_env()->cpu_variant;
    if (env && *env) {
        int want = -1;
        for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
            if (strcmp(env, variant_names[v]) == 0) want = v;
        }
        if (want < 0) {
            GGML_LOG_WARN("GGML_CPU_VARIANT=%s is not one of portable, avx2, avxvnni, avx512, neon; using %s\n", env,
                          variant_names[best]);
        } else if (!variant_ok[want] || want > (int) best) {
            GGML_LOG_WARN("GGML_CPU_VARIANT=%s is not available on this CPU/build; using %s\n", env, variant_names[best]);
        } else {
            variant_selected = (enum ggml_cpu_kernel_variant) want;
        }
    }
}

const char * ggml_cpu_kernel_variant_name(enum ggml_cpu_kernel_variant v) {
    if ((int) v < 0 || v >= GGML_CPU_KERNELS_COUNT) return "unknown";
    return variant_names[v];
}

bool ggml_cpu_kernel_variant_available(enum ggml_cpu_kernel_variant v) {
    pthread_once(&tables_once, tables_init);
    if ((int) v < 0 || v >= GGML_CPU_KERNELS_COUNT) return false;
    return variant_ok[v];
}

enum ggml_cpu_kernel_variant ggml_cpu_kernel_variant_selected(void) {
    pthread_once(&tables_once, tables_init);
    return variant_selected;
}

const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu_variant(enum ggml_type type, enum ggml_cpu_kernel_variant v) {
    pthread_once(&tables_once, tables_init);
    if ((int) v < 0 || v >= GGML_CPU_KERNELS_COUNT || !variant_ok[v]) return NULL;
    if ((int) type < 0 || type >= GGML_TYPE_COUNT) type = GGML_TYPE_COUNT; // the all-zero entry
    return &variant_tables[v][type];
}

const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type) {
    pthread_once(&tables_once, tables_init);
    if ((int) type < 0 || type >= GGML_TYPE_COUNT) type = GGML_TYPE_COUNT;
    return &variant_tables[variant_selected][type];
}

const struct ggml_gemm_traits * ggml_gemm_get_traits_variant(enum ggml_type type, enum ggml_cpu_kernel_variant v) {
    pthread_once(&tables_once, tables_init);
    if ((int) v < 0 || v >= GGML_CPU_KERNELS_COUNT || !variant_ok[v]) return NULL;
    if ((int) type < 0 || type >= GGML_TYPE_COUNT || gemm_tables[v][type].qb == 0) return NULL;
    return &gemm_tables[v][type];
}

const struct ggml_gemm_traits * ggml_gemm_get_traits(enum ggml_type type) {
    pthread_once(&tables_once, tables_init);
    return ggml_gemm_get_traits_variant(type, variant_selected);
}
