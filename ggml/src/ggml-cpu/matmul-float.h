// matmul-float.h — MUL_MAT with F32 / F16 / BF16 weights and F32 activations as dot-product
// tiles (ops-matmul-float.c drives them; the kernels are per ISA, gemm-float-avx2.c).
//
// Every output is one chain, whatever tile computed it: an 8-lane accumulator takes
// acc[l] = fma(a[k], b[k], acc[l]) for k = l, l + 8, l + 16, ... in order, then the lanes are
// summed as ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)). So a column's result does not
// depend on the batch it came in, the tile shape or the thread count.
#ifndef GGML_CPU_MATMUL_FLOAT_H
#define GGML_CPU_MATMUL_FLOAT_H

#include "cpu-impl.h"

#include <stddef.h>
#include <stdint.h>

// Most rows and columns of one tile call (a kernel may take the columns in narrower steps:
// the AVX2 tiles 3 at a time, their registers' limit).
#define GGML_MM_FLOAT_MR 4
#define GGML_MM_FLOAT_NR 8

// out[c][r] = dot(row r of a, b[c]) over K (K % 8 == 0) for r < nr <= MR, c < nc <= NR; a's rows
// lie lda bytes apart, in the kernel's weight type.
typedef void (*ggml_mm_float_tile_t)(int64_t K, const char * a, size_t lda, int nr, const float * const * b, int nc,
                                     float * const * out);

// The tile kernel for weights of this type on the selected kernel set; NULL: none (vec_dot path).
ggml_mm_float_tile_t ggml_mm_float_tile_get(enum ggml_type type);

// Tile kernels of the AVX2 set (F32, F16, BF16 weights); NULL for other types.
ggml_mm_float_tile_t ggml_mm_float_tile_avx2(enum ggml_type type);
// The same tiles with AVX-512 (two weight rows per register, identical bits).
ggml_mm_float_tile_t ggml_mm_float_tile_avx512(enum ggml_type type);

// True when this MUL_MAT node takes the float tile path (decided from types and K only, never N).
bool ggml_cpu_mm_float_applies(const struct ggml_tensor * dst);

// Computes a MUL_MAT node for which ggml_cpu_mm_float_applies is true (no scratch needed).
void ggml_cpu_mm_float_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst);

// ---- Q8_0 weights at high precision (ggml_mul_mat_set_prec(node, GGML_PREC_F32)) ----
//
// Which nodes: MUL_MAT asking GGML_PREC_F32 with a 2D Q8_0 weight and F32 activations (the lm
// head). The rule is per weight type: Q8_0 is the one type whose own rounding is as fine as Q8_0
// activations' (8 bits each side, so rounding the activations doubles the error) and the type
// models use for their largest matrix, the output. Other types keep the int8 GEMM.
// How: each activation column is quantized to 16 bits per 32-element block (portable C, every
// kernel set alike): da = amax/32767 (F32), qa = nearest(x/da) (qa as int16). The product for
// weight row r is one chain over its blocks in order:
//     isum = sum q_w*qa (exact in int32);  acc = fmaf(d_w*da, (float) isum, acc)
// so the bits do not depend on N, the thread count, the kernel set, or whether the weights were
// repacked (the AVX2 kernel reads the repacked panels; the portable one either layout).
// 16-bit activations are what F16 rounding would give (2^-16 of the block's largest), at about
// the int8 path's instruction count per weight byte (vpmaddwd on widened weights).
bool ggml_cpu_mm_deq_applies(const struct ggml_tensor * dst);
// Scratch bytes of such a node on n_threads threads.
size_t ggml_cpu_mm_deq_work_size(const struct ggml_tensor * dst, int n_threads);
// Computes a node for which ggml_cpu_mm_deq_applies is true.
void ggml_cpu_mm_deq_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst);

// One activation column at 16 bits: K/32 blocks of qa[32], with da (F32) and sum(qa) per block.
struct ggml_mm_a16 {
    const int16_t * q;
    const float * d;
    const int32_t * s;
};
// 16 rows of a repacked q8_0 panel (repack.h) times one column: out[r] for r < 16 (AVX2).
void ggml_mm_q8_0_a16_panel_avx2(const uint8_t * panel, int64_t K, const struct ggml_mm_a16 * a, float * out);
// 16 rows of a repacked q8_0 panel times nc (1..8) columns a[0..nc): out[c][r] for r < 16 (AVX-512
// VNNI: each block's levels widened once for every column; the bits of the one-column kernels).
void ggml_mm_q8_0_a16_panel_cols_avx512(const uint8_t * panel, int64_t K, const struct ggml_mm_a16 * a, int nc,
                                        float * const * out);
// 8 stored q8_0 rows (row r at rows + r*row_stride) times one 16-bit column: out[r] for r < 8 (AVX2).
void ggml_mm_q8_0_a16_rows8_avx2(const char * rows, size_t row_stride, int64_t K, const struct ggml_mm_a16 * a, float * out);

#endif
