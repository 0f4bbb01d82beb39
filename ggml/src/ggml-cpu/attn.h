// attn.h — the kernels of CPU flash attention (ops-attention.c drives them).
//
// ops-attention.c gathers a tile of query rows that read the same KV head (the heads of a GQA
// group at a few consecutive positions) and walks the KV cells twice, in blocks of
// GGML_FA_BLOCK, converting each block of K (first pass) and V (second pass) rows to F32 once
// for the whole tile:
//   scores  q.k for every row and key at once, rows in vector lanes (the tile's queries are
//           held transposed, qt; each key element is broadcast against them, so a lane sees
//           the same operations whatever the other lanes hold, and a tile of up to 8 rows,
//           as in one-token decoding, may use 8-lane vectors); per row, the keys the mask
//           leaves visible get s = scale*q.k (softcap: softcap*tanh(s/softcap)) + slope*mask,
//           appended in cell order to the row's list of visible keys (score, cell); the
//           row's maximum m is kept exact;
//   probs   per row, p = exp(s - m) over the list and l = sum of p;
//   accum   per row, o += p * v over the list entries that fall in the block: even list
//           entries into o, odd ones into o2 (two independent chains of FMAs).
// The output is (o + o2) / l. Knowing the exact maximum before exponentiating needs no rescaling, and
// every row's arithmetic depends only on its own sequence of visible keys: not on the tile it
// shares, nor on the cells the keys sit in, nor on what other sequences or masked cells lie
// between them. A prompt decoded in one batch and token by token, or a sequence restored into
// other cells, gets bit-identical attention outputs.
#ifndef GGML_CPU_ATTN_H
#define GGML_CPU_ATTN_H

#include "quants.h"

#ifdef __cplusplus
extern "C" {
#endif

// Cells per block.
#define GGML_FA_BLOCK 64
// Rows per tile at most: the lanes of qt.
#define GGML_FA_ROWS  16

// The rows of one tile and their state.
struct ggml_fa_rows {
    int nr;                      // rows
    int D, Dv;                   // K and V row lengths
    const float * qt;            // the rows' q transposed: element d of row i at qt[d*GGML_FA_ROWS + i]
                                 // (lanes past nr zero)
    const float * const * mask;  // row i's additive mask for the current block's cells, or NULL
    const float * slope;         // per row: ALiBi slope the mask is multiplied by
    float scale, softcap;        // softcap 0: none
    float * s;                 // row i's visible keys: scores (then p) at s + i*lds,
    int32_t * cell;              //   their cells at cell + i*lds
    int64_t lds;
    int64_t * n;                 // per row: visible keys so far (0 at start)
    int64_t * next;              // per row: first list entry accum has not consumed (0 at start)
    float *m, *l;              // per row: maximum score (-inf at start), sum of p
    float *o, *o2;             // row i's accumulators (even / odd list entries) at o + i*ldo,
    int64_t ldo;                 //   o2 + i*ldo (0 at start)
};

struct ggml_fa_kernels {
    // Appends the visible keys among cells [j0, j0 + nk) (k rows at k + j*ldk, F32) to every row.
    void (*scores)(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * k, int64_t ldk);
    // Turns every row's scores into p = exp(s - m) and sets l.
    void (*probs)(const struct ggml_fa_rows * r);
    // Adds p * v for every row's list entries in cells [j0, j0 + nk) (v rows at v + j*ldv, F32).
    void (*accum)(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * v, int64_t ldv);
    // dst[j*n + e] = element e of F16 row j at src + j*stride bytes, for j < nk, e < n.
    void (*f16_rows)(const void * src, size_t stride, int nk, int64_t n, float * dst);
};

// Cells of K scored by flash attention since the last reset, summed over tiles and threads: the
// attention work, which tests read to see that a sequence's does not grow with other
// sequences' cells (each tile scores only the blocks its rows' masks leave visible).
int64_t ggml_cpu_fa_cells_scored(void);
// Sets that count to 0.
void ggml_cpu_fa_cells_reset(void);

// The kernels of kernel set v (the portable ones where v has none).
struct ggml_fa_kernels ggml_fa_kernels_get(enum ggml_cpu_kernel_variant v);

void ggml_fa_kernels_init_generic(struct ggml_fa_kernels * k);
void ggml_fa_kernels_init_avx2(struct ggml_fa_kernels * k);
void ggml_fa_kernels_init_avx512(struct ggml_fa_kernels * k);

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_ATTN_H
