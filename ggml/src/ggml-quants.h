// ggml-quants.h — GGUF block formats (byte-identical to the files llama.cpp and the `gguf`
// package read and write) and the reference row converters of each type.
//
// A row of k elements of a block type is k/QK blocks laid end to end; k must be a multiple
// of the block size (callers check; these functions assume it). The reference quantizers
// are bit-exact with the `gguf` package's gguf.quants where it can quantize the type
// (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and follow the published K-quant algorithms
// (scale searches, 6-bit packed scales, fp16 super-block scales) elsewhere.
#ifndef GGML_QUANTS_H
#define GGML_QUANTS_H

#include "ggml-impl.h"
#include "ggml-quants-iq.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QK4_0        32
#define QK4_1        32
#define QK5_0        32
#define QK5_1        32
#define QK8_0        32
#define QK8_1        32
#define QK_K         256
#define K_SCALE_SIZE 12

// 4-bit, symmetric: x = d * (q - 8). Element j in the low nibble of qs[j], j+16 in the high.
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK4_0 / 2];
} block_q4_0;
static_assert(sizeof(block_q4_0) == 2 + QK4_0 / 2, "block_q4_0 size");

// 4-bit with minimum: x = d * q + m.
typedef struct {
    ggml_fp16_t d;
    ggml_fp16_t m;
    uint8_t qs[QK4_1 / 2];
} block_q4_1;
static_assert(sizeof(block_q4_1) == 4 + QK4_1 / 2, "block_q4_1 size");

// 5-bit, symmetric: x = d * (q - 16); bit 4 of element j is bit j of qh (little-endian u32).
typedef struct {
    ggml_fp16_t d;
    uint8_t qh[4];
    uint8_t qs[QK5_0 / 2];
} block_q5_0;
static_assert(sizeof(block_q5_0) == 2 + 4 + QK5_0 / 2, "block_q5_0 size");

// 5-bit with minimum: x = d * q + m.
typedef struct {
    ggml_fp16_t d;
    ggml_fp16_t m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
} block_q5_1;
static_assert(sizeof(block_q5_1) == 4 + 4 + QK5_1 / 2, "block_q5_1 size");

// 8-bit, symmetric: x = d * q.
typedef struct {
    ggml_fp16_t d;
    int8_t qs[QK8_0];
} block_q8_0;
static_assert(sizeof(block_q8_0) == 2 + QK8_0, "block_q8_0 size");

// 8-bit activations for the *_1 types: s = d * sum(qs) lets q4_1/q5_1 fold their minimum in.
// GGUF sizes this type at 40 bytes (float scales), so that is the layout here too.
typedef struct {
    float d;
    float s;
    int8_t qs[QK8_1];
} block_q8_1;
static_assert(sizeof(block_q8_1) == 8 + QK8_1, "block_q8_1 size");

// 2-bit K-quant: 16 sub-blocks of 16; scales[i] = 4-bit scale | 4-bit min << 4;
// x = d * (sc & 15) * q - dmin * (sc >> 4).
typedef struct {
    uint8_t scales[QK_K / 16];
    uint8_t qs[QK_K / 4];
    ggml_fp16_t d;
    ggml_fp16_t dmin;
} block_q2_K;
static_assert(sizeof(block_q2_K) == 2 * 2 + QK_K / 16 + QK_K / 4, "block_q2_K size");

// 3-bit K-quant: 16 sub-blocks of 16 with 6-bit signed scales (packed in 12 bytes);
// x = d * (scale - 32) * (q - (hmask bit ? 0 : 4)).
typedef struct {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    ggml_fp16_t d;
} block_q3_K;
static_assert(sizeof(block_q3_K) == 2 + QK_K / 4 + QK_K / 8 + 12, "block_q3_K size");

// 4-bit K-quant: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes;
// x = d * sc * q - dmin * m.
typedef struct {
    ggml_fp16_t d;
    ggml_fp16_t dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qs[QK_K / 2];
} block_q4_K;
static_assert(sizeof(block_q4_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2, "block_q4_K size");

// 5-bit K-quant: as q4_K plus one high bit per element in qh.
typedef struct {
    ggml_fp16_t d;
    ggml_fp16_t dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;
static_assert(sizeof(block_q5_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2 + QK_K / 8, "block_q5_K size");

// 6-bit K-quant: 16 sub-blocks of 16 with int8 scales; x = d * scales[i] * (q - 32).
typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    ggml_fp16_t d;
} block_q6_K;
static_assert(sizeof(block_q6_K) == 2 + QK_K / 16 + 3 * QK_K / 4, "block_q6_K size");

// 8-bit activations for the K-quants: float scale and per-16 sums of qs (for the mins).
typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;
static_assert(sizeof(block_q8_K) == 4 + QK_K + QK_K / 16 * 2, "block_q8_K size");

// ---- reference quantizers (x: k floats -> y: k/QK blocks) ----

void quantize_row_q4_0_ref(const float * x, block_q4_0 * y, int64_t k);
void quantize_row_q4_1_ref(const float * x, block_q4_1 * y, int64_t k);
void quantize_row_q5_0_ref(const float * x, block_q5_0 * y, int64_t k);
void quantize_row_q5_1_ref(const float * x, block_q5_1 * y, int64_t k);
void quantize_row_q8_0_ref(const float * x, block_q8_0 * y, int64_t k);
void quantize_row_q8_1_ref(const float * x, block_q8_1 * y, int64_t k);
void quantize_row_q2_K_ref(const float * x, block_q2_K * y, int64_t k);
void quantize_row_q3_K_ref(const float * x, block_q3_K * y, int64_t k);
void quantize_row_q4_K_ref(const float * x, block_q4_K * y, int64_t k);
void quantize_row_q5_K_ref(const float * x, block_q5_K * y, int64_t k);
void quantize_row_q6_K_ref(const float * x, block_q6_K * y, int64_t k);
void quantize_row_q8_K_ref(const float * x, block_q8_K * y, int64_t k);

// ---- importance-weighted quantizers (qw: one weight per column of the row, k of them; the
// weights are qw * sqrt(sigma^2 + x^2) as llama.cpp's published K-quant algorithms use, raw qw
// for q6_K). x is one whole row: q4_0..q5_1 take sigma^2 over the row. ----

void quantize_row_q4_0_imat(const float * x, block_q4_0 * y, int64_t k, const float * qw);
void quantize_row_q4_1_imat(const float * x, block_q4_1 * y, int64_t k, const float * qw);
void quantize_row_q5_0_imat(const float * x, block_q5_0 * y, int64_t k, const float * qw);
void quantize_row_q5_1_imat(const float * x, block_q5_1 * y, int64_t k, const float * qw);
void quantize_row_q2_K_imat(const float * x, block_q2_K * y, int64_t k, const float * qw);
void quantize_row_q3_K_imat(const float * x, block_q3_K * y, int64_t k, const float * qw);
void quantize_row_q4_K_imat(const float * x, block_q4_K * y, int64_t k, const float * qw);
void quantize_row_q5_K_imat(const float * x, block_q5_K * y, int64_t k, const float * qw);
void quantize_row_q6_K_imat(const float * x, block_q6_K * y, int64_t k, const float * qw);

// ---- K-quant building blocks shared by the reference and the weighted quantizers ----

// Signed levels in [-nmax, nmax-1] (stored + nmax in L) for n values and their least-squares
// scale; rmse_type 1 searches 19 inverse scales weighted by qw (x^2 when NULL), 0 rounds once.
float ggml_quants_fit_sym(int n, int nmax, const float * x, int8_t * L, int rmse_type, const float * qw);
// Levels in [0, nmax] with a minimum (x ~ scale * L - *the_min) under weights; sweeps nstep + 1
// inverse scales from (nmax + rmin) in steps rdelta, refitting scale and min each time.
float ggml_quants_fit_affine(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * the_min,
                             uint8_t * Laux, float rmin, float rdelta, int nstep, bool use_mad);
// Packs 256 2-bit levels as q2_K / q3_K store them (four 32-value stripes per byte).
void ggml_quants_pack_2bit(const uint8_t * L, uint8_t * qs);
// Packs 16 biased 6-bit q3_K scales (0..63) into the 12-byte layout.
void ggml_quants_pack_q3_K_scales(const int * ls, uint8_t * scales);
// Packs 256 q3_K levels (0..7; L is modified) into hmask (bit 2) and qs (bits 0-1).
void ggml_quants_pack_q3_K_levels(int8_t * L, uint8_t * hmask, uint8_t * qs);
// Packs the 6-bit scales ls / mins lm of a q4_K / q5_K block and re-quantizes x into L (0..nmax)
// against the stored scales d16 * ls and mins dmin16 * lm.
void ggml_quants_pack_k4(const float * x, int nmax, const uint8_t * ls, const uint8_t * lm, ggml_fp16_t d16, ggml_fp16_t dmin16,
                         uint8_t * packed, uint8_t * L);
// Packs 256 4-bit q4_K levels.
void ggml_quants_pack_q4_K_levels(const uint8_t * L, uint8_t * q);
// Packs 256 5-bit q5_K levels into qh (bit 4) and ql (bits 0-3).
void ggml_quants_pack_q5_K_levels(const uint8_t * L, uint8_t * qh, uint8_t * ql);
// Finishes a q6_K block from its 16 sub-block scales: 8-bit scales of d, levels re-quantized
// against them (L is scratch), packed.
void ggml_quants_finish_q6_K(const float * x, const float * scales, int8_t * L, block_q6_K * y);

// Round to nearest, ties to even (valid for |v| < 2^22): adding 1.5*2^23 pushes the
// fraction out of the mantissa, and the FPU rounds it for us.
static inline int ggml_quants_nearest_int(float v) {
    const float val = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &val, sizeof(i));
    return (i & 0x007FFFFF) - 0x00400000;
}

// ---- dequantizers (x: k/QK blocks -> y: k floats) ----

void dequantize_row_q4_0(const block_q4_0 * x, float * y, int64_t k);
void dequantize_row_q4_1(const block_q4_1 * x, float * y, int64_t k);
void dequantize_row_q5_0(const block_q5_0 * x, float * y, int64_t k);
void dequantize_row_q5_1(const block_q5_1 * x, float * y, int64_t k);
void dequantize_row_q8_0(const block_q8_0 * x, float * y, int64_t k);
void dequantize_row_q8_1(const block_q8_1 * x, float * y, int64_t k);
void dequantize_row_q2_K(const block_q2_K * x, float * y, int64_t k);
void dequantize_row_q3_K(const block_q3_K * x, float * y, int64_t k);
void dequantize_row_q4_K(const block_q4_K * x, float * y, int64_t k);
void dequantize_row_q5_K(const block_q5_K * x, float * y, int64_t k);
void dequantize_row_q6_K(const block_q6_K * x, float * y, int64_t k);
void dequantize_row_q8_K(const block_q8_K * x, float * y, int64_t k);

// ---- half-precision rows (type-erased signatures for the traits table) ----

void ggml_quants_f16_to_f32_row(const void * x, float * y, int64_t k);
void ggml_quants_f32_to_f16_row(const float * x, void * y, int64_t k);
void ggml_quants_bf16_to_f32_row(const void * x, float * y, int64_t k);
void ggml_quants_f32_to_bf16_row(const float * x, void * y, int64_t k);

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a q4_K / q5_K block.
static inline void ggml_quants_get_scale_min_k4(int j, const uint8_t * q, uint8_t * d, uint8_t * m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

// The 16 6-bit q3_K scales (still biased by 32) as four little-endian words of four bytes.
// Scale j keeps its low 4 bits in byte j % 8 (low nibble for j < 8, high nibble after) and
// its high 2 bits in byte 8 + j % 4 at bit 2 * (j / 4); word arithmetic handles four at once.
static inline void ggml_quants_q3_K_scale_words(const uint8_t * s, uint32_t out[4]) {
    uint32_t w0, w1, w2;
    memcpy(&w0, s, 4);
    memcpy(&w1, s + 4, 4);
    memcpy(&w2, s + 8, 4);
    const uint32_t lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
    out[0] = (w0 & lo4) | (((w2 >> 0) & lo2) << 4);
    out[1] = (w1 & lo4) | (((w2 >> 2) & lo2) << 4);
    out[2] = ((w0 >> 4) & lo4) | (((w2 >> 4) & lo2) << 4);
    out[3] = ((w1 >> 4) & lo4) | (((w2 >> 6) & lo2) << 4);
}

// Unpacks the 16 6-bit q3_K scales (still biased by 32) into aux.
static inline void ggml_quants_unpack_q3_K_scales(const uint8_t * s, int8_t * aux) {
    uint32_t out[4];
    ggml_quants_q3_K_scale_words(s, out);
    memcpy(aux, out, 16);
}

// The 8 scales and 8 mins of a q4_K / q5_K block as words (bytes 0-3 in *_lo, 4-7 in *_hi).
// Bytes 0-3 hold scales 0-3 (low 6 bits) and the top bits of scales 4-7; bytes 4-7 the same
// for the mins; bytes 8-11 the low nibbles of scales 4-7 (low) and mins 4-7 (high).
static inline void ggml_quants_k4_scale_words(const uint8_t * q, uint32_t * sc_lo, uint32_t * sc_hi, uint32_t * m_lo,
                                              uint32_t * m_hi) {
    uint32_t w0, w1, w2;
    memcpy(&w0, q, 4);
    memcpy(&w1, q + 4, 4);
    memcpy(&w2, q + 8, 4);
    const uint32_t lo6 = 0x3F3F3F3Fu, lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
    *sc_lo = w0 & lo6;
    *m_lo = w1 & lo6;
    *sc_hi = (w2 & lo4) | (((w0 >> 6) & lo2) << 4);
    *m_hi = ((w2 >> 4) & lo4) | (((w1 >> 6) & lo2) << 4);
}

#ifdef __cplusplus
}
#endif

#endif // GGML_QUANTS_H
