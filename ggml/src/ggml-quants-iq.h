// ggml-quants-iq.h — the GGUF block formats of the non-linear and codebook types (IQ4_NL,
// IQ4_XS, the IQ3 / IQ2 / IQ1 codebook types, the ternary TQ types and MXFP4), byte-identical
// to the files llama.cpp and the `gguf` package read and write, and their reference row
// converters (ggml-quants-iq.c). Included by ggml-quants.h.
#ifndef GGML_QUANTS_IQ_H
#define GGML_QUANTS_IQ_H

#include "ggml-impl.h"

#include <assert.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QK4_NL   32
#define QK_MXFP4 32
#define QK_IQ    256 // the super-block of every type below that is not per-32 (QK_K)

// 4-bit non-linear: x = d * kvalues_iq4nl[q]; element j in the low nibble of qs[j], j+16 high.
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK4_NL / 2];
} block_iq4_nl;
static_assert(sizeof(block_iq4_nl) == 2 + QK4_NL / 2, "block_iq4_nl size");

// IQ4_NL levels in super-blocks of 256 with 6-bit sub-block scales per 32 (biased by 32):
// low 4 bits in the nibbles of scales_l, high 2 bits in scales_h (bits 2*ib).
typedef struct {
    ggml_fp16_t d;
    uint16_t scales_h;
    uint8_t scales_l[QK_IQ / 64];
    uint8_t qs[QK_IQ / 2];
} block_iq4_xs;
static_assert(sizeof(block_iq4_xs) == 2 + 2 + QK_IQ / 64 + QK_IQ / 2, "block_iq4_xs size");

// OCP microscaling FP4: 32 E2M1 values sharing the power-of-two scale 2^(e - 127); stored as
// doubled E2M1 levels (kvalues_mxfp4) times 2^(e - 128). Nibble layout as q4_0.
typedef struct {
    uint8_t e;
    uint8_t qs[QK_MXFP4 / 2];
} block_mxfp4;
static_assert(sizeof(block_mxfp4) == 1 + QK_MXFP4 / 2, "block_mxfp4 size");

// 2.06 bits: per 32 values two words: 4 grid indices (bytes), then 4 x 7 sign bits and a
// 4-bit scale in the top nibble; x = d * (0.5 + s) / 4 * grid * sign.
typedef struct {
    ggml_fp16_t d;
    uint16_t qs[QK_IQ / 8];
} block_iq2_xxs;
static_assert(sizeof(block_iq2_xxs) == 2 + QK_IQ / 4, "block_iq2_xxs size");

// 2.31 bits: per 8 values a 9-bit grid index and 7 sign bits; a 4-bit scale per 16.
typedef struct {
    ggml_fp16_t d;
    uint16_t qs[QK_IQ / 8];
    uint8_t scales[QK_IQ / 32];
} block_iq2_xs;
static_assert(sizeof(block_iq2_xs) == 2 + QK_IQ / 4 + QK_IQ / 32, "block_iq2_xs size");

// 2.56 bits: 10-bit grid indices (low bytes in qs[0..31], high 2 bits in qh), 8 explicit
// sign bits per 8 values (qs[32..63]), a 4-bit scale per 16.
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK_IQ / 4];
    uint8_t qh[QK_IQ / 32];
    uint8_t scales[QK_IQ / 32];
} block_iq2_s;
static_assert(sizeof(block_iq2_s) == 2 + QK_IQ / 4 + QK_IQ / 16, "block_iq2_s size");

// 3.06 bits: 64 grid indices of 4 values, then per 32 values a word of 4 x 7 sign bits and a
// 4-bit scale; x = d * (0.5 + s) / 2 * grid * sign.
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[3 * QK_IQ / 8];
} block_iq3_xxs;
static_assert(sizeof(block_iq3_xxs) == 2 + 3 * (QK_IQ / 8), "block_iq3_xxs size");

// 3.44 bits: 9-bit grid indices of 4 values, explicit sign bits, a 4-bit scale per 32;
// x = d * (1 + 2 s) * grid * sign.
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK_IQ / 4];
    uint8_t qh[QK_IQ / 32];
    uint8_t signs[QK_IQ / 8];
    uint8_t scales[QK_IQ / 64];
} block_iq3_s;
static_assert(sizeof(block_iq3_s) == 2 + 13 * (QK_IQ / 32) + QK_IQ / 64, "block_iq3_s size");

// 1.56 bits: 11-bit indices into a grid of {-1, 0, 1}; per 32 values qh holds the 4 high
// index parts (3 bits each), a 3-bit scale and the sign of the shift delta (bit 15);
// x = d * (2 s + 1) * (grid +- 1/8).
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK_IQ / 8];
    uint16_t qh[QK_IQ / 32];
} block_iq1_s;
static_assert(sizeof(block_iq1_s) == 2 + QK_IQ / 8 + QK_IQ / 16, "block_iq1_s size");

// 1.75 bits: as IQ1_S with a delta sign per 8 values (bit 3 of each qh nibble) and 3-bit
// scales per 16; the fp16 super-block scale is spread over the top nibbles of the scales.
typedef struct {
    uint8_t qs[QK_IQ / 8];
    uint8_t qh[QK_IQ / 16];
    uint8_t scales[QK_IQ / 32];
} block_iq1_m;
static_assert(sizeof(block_iq1_m) == QK_IQ / 8 + QK_IQ / 16 + QK_IQ / 32, "block_iq1_m size");

// 1.69 bits ternary: five trits per byte (qs), four per byte (qh), stored as ceil(v * 256 / 243)
// so that trit n is ((byte * 3^n) mod 256 * 3) >> 8; x = d * (trit - 1).
typedef struct {
    uint8_t qs[(QK_IQ - 4 * QK_IQ / 64) / 5];
    uint8_t qh[QK_IQ / 64];
    ggml_fp16_t d;
} block_tq1_0;
static_assert(sizeof(block_tq1_0) == 2 + QK_IQ / 64 + (QK_IQ - 4 * QK_IQ / 64) / 5, "block_tq1_0 size");

// 2.06 bits ternary: four 2-bit trits per byte (element 32 n + j of each 128 at bits 2n of
// byte j); x = d * (q - 1).
typedef struct {
    uint8_t qs[QK_IQ / 4];
    ggml_fp16_t d;
} block_tq2_0;
static_assert(sizeof(block_tq2_0) == 2 + QK_IQ / 4, "block_tq2_0 size");

// The 16 IQ4_NL levels and the 16 doubled E2M1 values of MXFP4.
extern const int8_t ggml_kvalues_iq4nl[16];
extern const int8_t ggml_kvalues_mxfp4[16];

// Codebooks (ggml-quants-iq-grids.c): entry i is a little-endian word of its byte values.
extern const uint64_t ggml_iq2xxs_grid[256];
extern const uint64_t ggml_iq2xs_grid[512];
extern const uint64_t ggml_iq2s_grid[1024];
extern const uint32_t ggml_iq3xxs_grid[256];
extern const uint32_t ggml_iq3s_grid[512];
extern const uint64_t ggml_iq1s_grid[2048];
// 7 sign bits -> the 8 sign bits of 8 values (bit 7 keeps the count of minus signs even).
extern const uint8_t ggml_iq2_ksigns[128];

#define IQ1S_DELTA 0.125f

// The MXFP4 scale 2^(e - 128) (half the E8M0 value, since the levels are doubled).
static inline float ggml_e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

// ---- reference quantizers (x: k floats -> y: k/QK blocks). IQ2_XXS, IQ2_XS, IQ1_S and IQ1_M
// have none: they need an importance matrix (the _imat forms below). ----

void quantize_row_iq4_nl_ref(const float * x, block_iq4_nl * y, int64_t k);
void quantize_row_iq4_xs_ref(const float * x, block_iq4_xs * y, int64_t k);
void quantize_row_mxfp4_ref(const float * x, block_mxfp4 * y, int64_t k);
void quantize_row_tq1_0_ref(const float * x, block_tq1_0 * y, int64_t k);
void quantize_row_tq2_0_ref(const float * x, block_tq2_0 * y, int64_t k);

// IQ4_NL / IQ4_XS with per-column importance weights qw (k floats, NULL: weights x^2).
void quantize_row_iq4_nl_imat(const float * x, block_iq4_nl * y, int64_t k, const float * qw);
void quantize_row_iq4_xs_imat(const float * x, block_iq4_xs * y, int64_t k, const float * qw);

// The codebook types (ggml-quants-iq-search.c), weights as above; false if the grid tables
// could not be built (out of memory).
bool quantize_row_iq3_s_imat(const float * x, block_iq3_s * y, int64_t k, const float * qw);
bool quantize_row_iq3_xxs_imat(const float * x, block_iq3_xxs * y, int64_t k, const float * qw);
bool quantize_row_iq2_s_imat(const float * x, block_iq2_s * y, int64_t k, const float * qw);
bool quantize_row_iq2_xs_imat(const float * x, block_iq2_xs * y, int64_t k, const float * qw);
bool quantize_row_iq2_xxs_imat(const float * x, block_iq2_xxs * y, int64_t k, const float * qw);
bool quantize_row_iq1_s_imat(const float * x, block_iq1_s * y, int64_t k, const float * qw);
bool quantize_row_iq1_m_imat(const float * x, block_iq1_m * y, int64_t k, const float * qw);

// ---- dequantizers (x: k/QK blocks -> y: k floats) ----

void dequantize_row_iq4_nl(const block_iq4_nl * x, float * y, int64_t k);
void dequantize_row_iq4_xs(const block_iq4_xs * x, float * y, int64_t k);
void dequantize_row_mxfp4(const block_mxfp4 * x, float * y, int64_t k);
void dequantize_row_iq2_xxs(const block_iq2_xxs * x, float * y, int64_t k);
void dequantize_row_iq2_xs(const block_iq2_xs * x, float * y, int64_t k);
void dequantize_row_iq2_s(const block_iq2_s * x, float * y, int64_t k);
void dequantize_row_iq3_xxs(const block_iq3_xxs * x, float * y, int64_t k);
void dequantize_row_iq3_s(const block_iq3_s * x, float * y, int64_t k);
void dequantize_row_iq1_s(const block_iq1_s * x, float * y, int64_t k);
void dequantize_row_iq1_m(const block_iq1_m * x, float * y, int64_t k);
void dequantize_row_tq1_0(const block_tq1_0 * x, float * y, int64_t k);
void dequantize_row_tq2_0(const block_tq2_0 * x, float * y, int64_t k);

// The fp16 super-block scale of an IQ1_M block (spread over the top nibbles of its scales).
static inline float ggml_iq1_m_scale(const block_iq1_m * b) {
    uint16_t sc[4];
    memcpy(sc, b->scales, sizeof(sc));
    const ggml_fp16_t h = (ggml_fp16_t) ((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
    return GGML_FP16_TO_FP32(h);
}

// Trit n (0..4) of a stored TQ1_0 byte q, in {0, 1, 2}.
static inline int ggml_tq1_trit(uint8_t q, int n) {
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t v = (uint8_t) (q * pow3[n]);
    return (int) (((uint16_t) v * 3) >> 8);
}

#ifdef __cplusplus
}
#endif

#endif // GGML_QUANTS_IQ_H
