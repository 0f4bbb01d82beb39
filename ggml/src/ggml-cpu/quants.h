// quants.h — per-ISA dot-product kernels and activation quantizers of the CPU backend.
//
// quants-generic.c has a portable kernel for every (type, vec_dot_type) pair; each ISA file
// (quants-avx2.c, quants-avx512.c, quants-neon.c) overrides the entries it accelerates in a
// table that starts as a copy of the generic one. cpu-traits.c picks the table by cpuid
// (GGML_CPU_VARIANT=portable|avx2|avx512 forces a lower one).
//
// The bit contract between kernel sets (what a new kernel must keep; the tests that hold it):
//   - Within a set, a column's result never depends on the batch it came in: every path of
//     mul_mat (GEMM tiles of any width, gemv, repacked or stored weights, the vec_dot path and
//     its 4-column dot) gives the same bits (ops-matmul.c, gemm.h; test_gemm, test_matmul_prec.py).
//   - The 4-column dot vec_dot_x4 (q2_K, q3_K on AVX2 and AVX-512) is one always-inline body
//     with the 1-column vec_dot (GGML_VEC_DOT_COLS below), so each of its columns runs the
//     1-column instructions: the same bits as 4 vec_dot calls
//     (test_matmul_prec.py::test_q2_K_q3_K_four_column_kernels_keep_the_bits).
//   - Across sets, the GEMM tiles follow one float order per column (gemm.h), so quantized
//     matmuls on that path give the same bits on portable, avx2, avxvnni and avx512 (test_gemm).
//   - NEON: its GEMM tiles (gemm-neon.c) keep the first rule within the set, and its IQ / TQ /
//     MXFP4 dots are the portable kernels bit for bit (test_quants_simd, test_gemm under
//     qemu-aarch64: scripts/test_neon_qemu.sh).
//   - AVX-VNNI is AVX2 bit for bit for whole models (its vec_dot, attention and vector kernels
//     are AVX2's; tests/test_avxvnni_emulated.py on SmolLM2, Qwen2.5, Gemma 3).
//   - Not promised: flash attention and the vec_dot kernels across AVX-512, AVX2 and portable.
//     Their float sums run in other orders: a vec_dot agrees with the portable one within 1e-4
//     relative (test_quants.py::test_cpu_variant_env_lowers_and_kernels_agree), and whole-model
//     logits of avx512 and avx2 differ at rounding level (up to 0.76 on SmolLM2's prompt after
//     its first 16 positions, where flash attention's sums start to differ), top-1 alike.
#ifndef GGML_CPU_QUANTS_H
#define GGML_CPU_QUANTS_H

#include "cpu-impl.h"
#include "../ggml-quants.h"

#ifdef __cplusplus
extern "C" {
#endif

// Kernel sets, best last. The numeric order is the preference order on x86.
enum ggml_cpu_kernel_variant {
    GGML_CPU_KERNELS_PORTABLE = 0,
    GGML_CPU_KERNELS_AVX2 = 1,
    GGML_CPU_KERNELS_AVXVNNI = 2, // AVX2 plus 256-bit VNNI (the GEMM tiles; vec_dot as avx2)
    GGML_CPU_KERNELS_AVX512 = 3,
    GGML_CPU_KERNELS_NEON = 4,
    GGML_CPU_KERNELS_COUNT,
};

// Name of a kernel set ("portable", "avx2", "avxvnni", "avx512", "neon").
const char * ggml_cpu_kernel_variant_name(enum ggml_cpu_kernel_variant v);
// True if this build has the set and this CPU can run it.
bool ggml_cpu_kernel_variant_available(enum ggml_cpu_kernel_variant v);
// The set cpu traits use: the best available, lowered by GGML_CPU_VARIANT.
enum ggml_cpu_kernel_variant ggml_cpu_kernel_variant_selected(void);
// CPU traits of type under set v (for tests and benchmarks); NULL if v is not available.
const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu_variant(enum ggml_type type, enum ggml_cpu_kernel_variant v);

// ---- portable kernels (quants-generic.c) ----

void ggml_vec_dot_f32_f32_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_f16_f16_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_bf16_bf16_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q4_0_q8_0_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q4_1_q8_1_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q5_0_q8_0_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q5_1_q8_1_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q8_0_q8_0_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q2_K_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q3_K_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q4_K_q8_1_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q5_K_q8_1_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_q6_K_q8_1_generic(int n, float * s, const void * x, const void * y);

void ggml_vec_dot_iq4_nl_q8_0_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq4_xs_q8_0_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_mxfp4_q8_0_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq2_xxs_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq2_xs_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq2_s_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq3_xxs_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq3_s_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq1_s_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_iq1_m_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_tq1_0_q8_K_generic(int n, float * s, const void * x, const void * y);
void ggml_vec_dot_tq2_0_q8_K_generic(int n, float * s, const void * x, const void * y);

void ggml_quantize_row_q8_0_generic(const float * x, void * y, int64_t k);
void ggml_quantize_row_q8_1_generic(const float * x, void * y, int64_t k);
void ggml_quantize_row_q8_K_generic(const float * x, void * y, int64_t k);

// Fills table[GGML_TYPE_COUNT] with the portable traits.
void ggml_cpu_quants_init_generic(struct ggml_type_traits_cpu * table);
// The portable IQ / TQ / MXFP4 entries (quants-iq-generic.c; called by the above).
void ggml_cpu_quants_init_iq_generic(struct ggml_type_traits_cpu * table);

// Overrides table entries with the ISA's kernels (defined only where the file is compiled).
void ggml_cpu_quants_init_avx2(struct ggml_type_traits_cpu * table);
void ggml_cpu_quants_init_iq_avx2(struct ggml_type_traits_cpu * table); // quants-iq-avx2.c, called by the above
void ggml_cpu_quants_init_avx512(struct ggml_type_traits_cpu * table);
void ggml_cpu_quants_init_neon(struct ggml_type_traits_cpu * table);
// Whether this CPU has the ARMv8.2 dot product (sdot; quants-neon.c, aarch64 builds only).
bool ggml_cpu_neon_has_dotprod(void);

// vec_dot_<w>_<a> (one column) and vec_dot_x4_<w>_<a> (four, ggml_vec_dot_x4_t) of an ISA file,
// both from its always-inline dot_<w>_cols(n, s, bs, x, y, by, NC): one body, so the four
// columns get the one column's instructions and bits.
#define GGML_VEC_DOT_COLS(w, a)                                                                                              \
    static void vec_dot_##w##_##a(int n, float * s, const void * x, const void * y) { dot_##w##_cols(n, s, 0, x, y, 0, 1); } \
    static void vec_dot_x4_##w##_##a(int n, float * s, size_t bs, const void * x, const void * y, size_t by) {               \
        dot_##w##_cols(n, s, bs, x, y, by, 4);                                                                               \
    }

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_QUANTS_H
