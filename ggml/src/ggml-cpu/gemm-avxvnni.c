// gemm-avxvnni.c — the GEMM tiles of gemm-avx2-tile.h with AVX-VNNI (256-bit vpdpbusd: Intel
// client CPUs since Alder Lake, AMD Zen 5). The set builds on the AVX2 one (activation groups,
// repacker, vec_dot) and replaces only the tiles: the same layouts, integer sums and float steps,
// so every path of the set gives the same bits as the others of the set.
#define GEMM_X86_VNNI 1
#include "gemm-avx2-tile.h"

void ggml_gemm_init_avxvnni(struct ggml_gemm_traits * t) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (t[i].qb == 0) continue;
        t[i].kernel = kernel_x86;
        if (t[i].kernel_repacked) {
            t[i].kernel_repacked = kernel_repacked_x86;
            t[i].kernel_repacked1 = kernel_repacked1_x86;
        }
    }
}
