// gemm.h — multi-column quantized matrix multiplication: mul_mat's path for the weight types a
// kernel set accelerates (prompt processing, and token generation with one column).
//
// A batch of activation columns is quantized once, as the weight type's vec_dot_type would be,
// and laid out for the micro-kernel; weight rows are unpacked on the fly, 16 at a time, into one
// "panel" format shared by every quantized type (or were repacked at load, repack.h). The
// micro-kernel then computes a tile of 16 weight rows x 8 columns, reusing each loaded weight
// vector across the 8 columns (AVX-512 VNNI: one vpdpbusd per 16 rows x 1 column x 4 elements).
// Each column's lanes see the same operations whatever the tile width, and the one-column
// paths (gemv, compact column) reproduce them: results never depend on N.
//
// Every weight element is a level u in 0..255 with value  d_blk * (u - off) + m_blk  (or, for the
// K-quants, sub-block scales and mins folded into d_blk and m_blk), so one kernel serves all types:
//
//   weight block (qb = 16 or 32 elements): u8 levels, a float scale d and (has_min) a float m
//   activation block: s8 values q; one float scale da per sa consecutive weight blocks (32
//   values: q8_0 / q8_1 activations, sa = 1, or 2 for the 16-element blocks of q6_K) or per
//   256 (q8_K activations of q2_K / q3_K, sa = 16); sb weight blocks make one superblock (1
//   for the legacy types, 8 or 16 for the K-quants: their 256-element storage unit)
//
//   dot(row, col) = sum over activation scales of da * sum over their blocks of d * (sum(u*q) - off*sum(q))
//                 + sum over blocks of m * da * sum(q)
//
// The integer sums are exactly those of the vec_dot kernels; only the float rounding differs.
// Float order per column, shared by every kernel set (so every set gives the same bits):
// legacy (sb = 1): acc = fma(isum, d*da, acc), then acc = fma(m, s, acc); K-quants: t = 0 at
// each activation scale's first block, t = fma(isum, d, t) per block, then acc = fma(m, s, acc),
// and after the scale's last block acc = fma(t, da, acc).

// Panel (16 rows, all K): per weight block, qb*16 bytes of levels interleaved as
// [qb/4][16 rows][4 levels] (one 512-bit vector holds 4 levels of each of the 16 rows), then
// d[16], then m[16] if has_min. Rows past the matrix' end are zero.
//
// Activation group (8 columns, all K): per superblock, da[sb/sa][8], then per block: q interleaved as
// [qb/4][8 columns][4 values], corr[8] (int32: -off*sum(q)), s[8] (float: da*sum(q)). Columns
// past the batch's end are zero.
#ifndef GGML_CPU_GEMM_H
#define GGML_CPU_GEMM_H

#include "quants.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGML_GEMM_MR    16   // weight rows per panel
#define GGML_GEMM_NR    8    // activation columns per group
// Fewest columns for which mul_mat takes the GEMM path. Every N takes it (token generation
// too, with the 1-column kernel): a column's result must not depend on the batch it came in.
#define GGML_GEMM_MIN_N 1

struct ggml_gemm_traits;

// Unpacks nr (<= 16) weight rows, row i at rows + i*row_stride, of K elements into a panel.
typedef void (*ggml_gemm_pack_t)(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K,
                                 void * panel);
// dst[c*ldc + r] = dot(panel row r, group column c) for r < nr (<= 16), c < nc (<= 8).
typedef void (*ggml_gemm_kernel_t)(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                                   float * dst, int64_t ldc, int nr, int nc);
// Fills column c (0..7) of an activation group from one row quantized to act_type.
typedef void (*ggml_gemm_act_t)(const struct ggml_gemm_traits * gt, const void * qrow, int64_t K, int c, void * group);

// Fills columns [0, nc) of a group from nc rows quantized to act_type (row c at qrows + c*qstride);
// the caller zeroes the group first when nc < 8.
typedef void (*ggml_gemm_act_group_t)(const struct ggml_gemm_traits * gt, const void * qrows, size_t qstride, int nc, int64_t K,
                                      void * group);

// One column (token generation) straight from 16 whole weight rows, without a panel: integer
// block sums row by row (the rows are read in memory order), then the same float arithmetic as
// the kernel's 1-column tile, so the outputs are the same bits. gv is the column prepared by
// gemv_prep (gemv_bytes(K) bytes, the end of which gemv uses as scratch: not shared between
// threads) from its quantized row and its activation group.
typedef void (*ggml_gemm_gemv_t)(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * gv,
                                 float * dst);
typedef void (*ggml_gemm_gemv_prep_t)(const struct ggml_gemm_traits * gt, const void * qrow, const void * group, int64_t K,
                                      void * gv);

// How one weight type runs through the GEMM. qb == 0: the type has no GEMM path.
struct ggml_gemm_traits {
    enum ggml_type type;        // the weight type
    int qb;                    // elements per weight block (16 or 32)
    int sb;                    // weight blocks per superblock (1, 8 or 16)
    int sa;                    // weight blocks per activation scale (1, 2 or 16; divides sb)
    int off;                   // value = level - off (0 for the types with a minimum)
    bool has_min;               // blocks carry a float minimum m
    enum ggml_type act_type;    // the activations are first quantized to this (vec_dot_type)
    ggml_gemm_pack_t pack;    // weight rows -> panel
    ggml_gemm_kernel_t kernel;  // 16 x 8 tile
    ggml_gemm_act_t act;     // quantized activation row -> group column
    ggml_gemm_act_group_t act_group; // up to 8 quantized rows -> group
    // mul_mat takes the GEMM path for the type (stored and repacked weights alike: the same bits).
    bool accelerated;
    ggml_gemm_kernel_t kernel_repacked; // tile on repacked weights (repack.h), or NULL
    ggml_gemm_kernel_t kernel_repacked1; // the same, one column in the compact layout, or NULL
    ggml_gemm_gemv_t gemv;      // NULL: one column goes through pack + kernel
    ggml_gemm_gemv_prep_t gemv_prep;
    // Writes 16 weight rows straight in the repacked layout (repack.h), or returns false (type or
    // row stride not handled: the repacker goes through a panel). NULL: never.
    bool (*repack_rows)(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * out);
};

// Bytes of one weight block in a panel.
static inline size_t ggml_gemm_panel_block_bytes(const struct ggml_gemm_traits * gt) {
    return (size_t) gt->qb * GGML_GEMM_MR + 64 + (gt->has_min ? 64 : 0);
}
// Bytes of a panel of 16 rows of K elements.
static inline size_t ggml_gemm_panel_bytes(const struct ggml_gemm_traits * gt, int64_t K) {
    return (size_t) (K / gt->qb) * ggml_gemm_panel_block_bytes(gt);
}
// Bytes of one activation block (values, corr, s) in a group.
static inline size_t ggml_gemm_group_block_bytes(const struct ggml_gemm_traits * gt) {
    return (size_t) gt->qb * GGML_GEMM_NR + 64;
}
// Activation scales per superblock.
static inline int ggml_gemm_n_ascales(const struct ggml_gemm_traits * gt) { return gt->sb / gt->sa; }
// Bytes of one activation superblock (da[sb/sa][8], then sb blocks) in a group.
static inline size_t ggml_gemm_group_sblock_bytes(const struct ggml_gemm_traits * gt) {
    return 32 * (size_t) ggml_gemm_n_ascales(gt) + (size_t) gt->sb * ggml_gemm_group_block_bytes(gt);
}
// Bytes of a group of 8 columns of K elements.
static inline size_t ggml_gemm_group_bytes(const struct ggml_gemm_traits * gt, int64_t K) {
    return (size_t) (K / (gt->qb * gt->sb)) * ggml_gemm_group_sblock_bytes(gt);
}

// Turns the GEMM path of mul_mat on or off (tests and benchmarks; the environment variable
// GGML_CPU_GEMM=0 turns it off from the start).
void ggml_gemm_set_enabled(bool on);
// Whether mul_mat may take the GEMM path.
bool ggml_gemm_enabled(void);

// The compact layout of one column (what a group is with 8 columns narrowed to 1): per
// superblock da[sb/sa], then per block q (qb bytes), corr, s. Token generation on repacked weights
// reads it: a group's column would touch 8 times the cache lines.
static inline size_t ggml_gemm_compact_bytes(const struct ggml_gemm_traits * gt, int64_t K) {
    return (size_t) (K / (gt->qb * gt->sb)) * (4 * (size_t) ggml_gemm_n_ascales(gt) + (size_t) gt->sb * (gt->qb + 8));
}

// Bytes of a column prepared for gemv, with gemv's scratch after it (a bound for every type).
static inline size_t ggml_gemm_gemv_bytes(int64_t K) {
    const size_t nbp = (size_t) (K / 16 + 8);
    return (size_t) GGML_PAD(K, 128) + nbp * 12 + nbp * (16 * 16 + 64 + 64) + 128;
}

// GEMM traits of type under kernel set v (NULL if the type has no GEMM path or v is unavailable).
const struct ggml_gemm_traits * ggml_gemm_get_traits_variant(enum ggml_type type, enum ggml_cpu_kernel_variant v);
// GEMM traits of type under the selected kernel set (NULL if none).
const struct ggml_gemm_traits * ggml_gemm_get_traits(enum ggml_type type);

// Portable table (gemm-generic.c): every quantized type, scalar kernel, accelerated = false.
void ggml_gemm_init_generic(struct ggml_gemm_traits * table);
// ISA overrides (gemm-avx2.c, gemm-avxvnni.c, gemm-avx512.c, gemm-neon.c): kernels (and packers) they accelerate.
void ggml_gemm_init_avx2(struct ggml_gemm_traits * table);
void ggml_gemm_init_avxvnni(struct ggml_gemm_traits * table);
void ggml_gemm_init_avx512(struct ggml_gemm_traits * table);
void ggml_gemm_init_neon(struct ggml_gemm_traits * table); // gemm-neon.c (aarch64)

// Portable pieces, shared by the ISA tables.
void ggml_gemm_pack_generic(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K,
                            void * panel);
void ggml_gemm_kernel_generic(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group, float * dst,
                              int64_t ldc, int nr, int nc);
void ggml_gemm_act_generic(const struct ggml_gemm_traits * gt, const void * qrow, int64_t K, int c, void * group);
void ggml_gemm_act_group_generic(const struct ggml_gemm_traits * gt, const void * qrows, size_t qstride, int nc, int64_t K,
                                 void * group);
// Column 0 of group (ggml_gemm_group_bytes) in the compact layout (ggml_gemm_compact_bytes).
void ggml_gemm_act_compact(const struct ggml_gemm_traits * gt, const void * group, int64_t K, void * out);
// One row quantized to act_type, in the compact layout (ggml_gemm_compact_bytes).
void ggml_gemm_act_compact_row(const struct ggml_gemm_traits * gt, const void * qrow, int64_t K, void * out);

// Repacked q2_K / q3_K (repack.h): bytes of one superblock of 16 rows, laid out as
//   q2_K: d[16], dmin[16] (fp16, as stored), sc[16 blocks][16 rows] (the stored scale bytes:
//         scale | min << 4), then per 16-element block one vector of 2-bit levels (byte i of
//         level vector g of the panel at bits 2g..2g+1): 64 + 256 + 16*64 = the stored size;
//   q3_K: d[16] (fp16), sc[16][16] (int8: the 6-bit scale - 32), then per pair of blocks the
//         2-bit low levels of each (as q2_K's) and one vector of third bits (bit g: the first
//         block's level vector g, bit 4 + g: the second's): 32 + 256 + 8*192 (3.6% over stored).
#define GGML_GEMM_RP_Q2_K 1344
#define GGML_GEMM_RP_Q3_K 1824
// Writes 16 q2_K / q3_K rows straight in that layout (any other type: false). Portable.
bool ggml_gemm_repack_rows_q2_K_q3_K(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K,
                                     void * out);
// Repacked iq4_nl (per 32-element block: the 16 rows' nibbles as repacked q4_0's, then d[16]
// fp16: the stored size) and iq4_xs (per superblock: d[16] fp16, sc[8][16] int8 (ls - 32), then
// 8 blocks of nibbles: 1.5% over stored). Levels are kvalues_iq4nl + 128, by a table shuffle.
#define GGML_GEMM_RP_IQ4_NL (16 * 32 / 2 + 32)
#define GGML_GEMM_RP_IQ4_XS (32 + 128 + 8 * 16 * 32 / 2)
// Writes 16 iq4_nl / iq4_xs rows straight in that layout (any other type: false). Portable.
bool ggml_gemm_repack_rows_iq4(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * out);
// The 6-bit scale ls of block ib of an iq4_xs superblock (x = d*(ls - 32)*kvalue).
static inline int ggml_gemm_iq4_xs_scale(const void * blk, int ib) {
    const uint8_t * b = (const uint8_t *) blk; // d, scales_h (u16), scales_l[4]
    const int sh = b[2] | (b[3] << 8);
    return ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
}
// The float scale of each GEMM block (8 of 32 or 16 of 16 values) of one super-block of an
// IQ2_XXS / IQ2_XS / IQ2_S / IQ3_XXS / IQ3_S / IQ1_S / IQ1_M row, whose levels are the signed
// values + ggml_gemm_iq_off (IQ1: 8 (grid + delta), the scale / 8). Portable; the panels of every set hold these.
void ggml_gemm_iq_scales(enum ggml_type type, const void * blk, float * d);
// Their level offset: the largest |v| (grid bytes up to 43 / 62 / 15, IQ1 9), so levels stay below
// 128 (IQ3_S, IQ1: 32), which the AVX2 tiles take without the sign trick of q8_0's (gemm-avx2-tile.h).
static inline int ggml_gemm_iq_off(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_IQ2_XXS:
        case GGML_TYPE_IQ2_XS:
        case GGML_TYPE_IQ2_S: return 43;
        case GGML_TYPE_IQ3_XXS: return 62;
        case GGML_TYPE_IQ3_S: return 15;
        case GGML_TYPE_IQ1_S:
        case GGML_TYPE_IQ1_M: return 9;
        default: return 0;
    }
}
// AVX2 packer and one-column product of those types (quants-iq-avx2.c), installed on an AVX2-based table.
void ggml_gemm_init_iq_avx2(struct ggml_gemm_traits * table);
// One column on stored rows of a type with repack_rows and kernel_repacked1: the 16 rows
// repacked into gemv's scratch, then the 1-column kernel (the bits of the repacked path).
void ggml_gemm_gemv_repacked(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * gv,
                             float * dst);
// gemv_prep of ggml_gemm_gemv_repacked: the column in the compact layout.
void ggml_gemm_gemv_prep_compact(const struct ggml_gemm_traits * gt, const void * qrow, const void * group, int64_t K, void * gv);

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_GEMM_H
