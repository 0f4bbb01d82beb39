// quants-avx512.c — AVX-512 (F/BW/VL/DQ + VNNI) dot products; entries not set here keep
// their AVX2 kernels (cpu-traits.c applies the AVX2 table first).
#include "quants.h"

#include <immintrin.h>

void ggml_cpu_quants_init_avx512(struct ggml_type_traits_cpu * t) {
    (void)t; // the AVX2 kernels stay in place until the AVX-512 ones land
}
