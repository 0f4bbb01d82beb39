// quants-iq-avx2.c — AVX2 dot products of IQ4_NL, IQ4_XS, MXFP4 (against Q8_0), the IQ3 / IQ2 /
// IQ1 codebook types and TQ1_0 / TQ2_0 (against Q8_K). The avxvnni and avx512 sets take these as well
// (cpu-traits.c builds them on the avx2 table).
//
// Non-linear levels come from one byte shuffle of the 16-entry level table; codebook entries
// are gathered (vpgather) as 64- (IQ2, IQ1) or 32-bit (IQ3) words, their signs (a table of sign
// bytes per ksigns pattern, or explicit bits expanded to bytes) applied to the activations (the
// magnitudes stay unsigned for maddubs: at most 62 * 127 * 2 per s16 pair), and the sub-block
// scale multiplied in the widening vpmaddwd (one instruction where a vpmulld took three uops:
// TinyLlama ffn_up rows, one thread, IQ2_XXS 196 -> 126 ns per row, IQ3_S 290 -> 148).
// Integer sums per sub-block as the portable kernels form them, so results agree with them
// within float rounding.
#include "quants-avx2.h"
#include "gemm.h"

#include <math.h>

// ---- 32-granular types against Q8_0 ----

// 32 signed levels dotted with 32 activations.
static inline __m256i level_dot32(__m256i lv, const int8_t * q8) {
    return dot_i8_32(lv, _mm256_loadu_si256((const __m256i *) q8));
}

#include "quants-iq-lut.h"

// ---- codebook types against Q8_K ----

// Sign bytes of the ggml_iq2_ksigns patterns, 8 per pattern: 0xFF (-1) where bit j is set, else
// 0x01 (vpsignb multiplies the activations by them). Filled by ggml_cpu_quants_init_iq_avx2: one
// 64-bit load per 8 values replaces expanding the bits in registers.
static uint64_t ksigns64[128];

// The sign bytes of four 7-bit ksigns indices (bits 0-6, 7-13, 14-20, 21-27 of w).
static inline __m256i ksigns_vec(uint32_t w) {
    return _mm256_set_epi64x((long long) ksigns64[(w >> 21) & 127], (long long) ksigns64[(w >> 14) & 127],
                             (long long) ksigns64[(w >> 7) & 127], (long long) ksigns64[w & 127]);
}

// Sign bytes (+-1) of 32 explicit sign bits.
// (p: the 4 bytes of bits; broadcast straight from memory, a load without a shuffle-port uop)
static inline __m256i bits_to_signs_32(const uint8_t * p) {
    const __m256i shuf =
        _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_castps_si256(_mm256_broadcast_ss((const float *) p)), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long) 0x8040201008040201ULL);
    return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(1));
}

// Dot of 32 unsigned grid magnitudes with 32 activations times sign bytes sgn, as 8 int32 lanes
// (lane k: values 4k..4k+3) each times its int16 scale in sc16: the widening vpmaddwd applies the
// sub-block scale (pairs of at most 2 * 62 * 127, times a scale below 64: no overflow), so the
// integer sums are those of a multiply after the widening.
static inline __m256i grid_dot32(__m256i mag, __m256i sgn, const int8_t * q8, __m256i sc16) {
    const __m256i y = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *) q8), sgn);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(mag, y), sc16);
}

// The 2 s + 1 of the 16 scale nibbles of an IQ2_XS / IQ2_S super-block (8 bytes), in value order.
static inline void nibble_scales_table(const uint8_t * scales, int16_t * sct) {
    const __m128i b8 = _mm_loadl_epi64((const __m128i *) scales), m4 = _mm_set1_epi8(0xF);
    const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(b8, m4), _mm_and_si128(_mm_srli_epi16(b8, 4), m4));
    const __m256i v = _mm256_add_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(nib), 1), _mm256_set1_epi16(1));
    _mm256_storeu_si256((__m256i *) sct, v);
}

// The 32 10-bit grid indices of an IQ2_S super-block: index k is qs[k] | bits 2 (k % 4), +1 of
// qh[k / 4] at bits 8-9 (each qh byte spread to its 4 lanes, moved there by a multiply).
static inline void iq2_s_index_table(const block_iq2_s * a, uint16_t * ixt) {
    const __m256i mul = _mm256_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4);
    const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *) a->qh));
    // 16-bit lane k of half h: qh[4 h + k / 4] (a byte shuffle within each 128-bit lane; 0x80: zero)
    const __m256i spread[2] = {
        _mm256_setr_epi8(0, -128, 0, -128, 0, -128, 0, -128, 1, -128, 1, -128, 1, -128, 1, -128, 2, -128, 2, -128, 2, -128, 2,
                         -128, 3, -128, 3, -128, 3, -128, 3, -128),
        _mm256_setr_epi8(4, -128, 4, -128, 4, -128, 4, -128, 5, -128, 5, -128, 5, -128, 5, -128, 6, -128, 6, -128, 6, -128, 6,
                         -128, 7, -128, 7, -128, 7, -128, 7, -128),
    };
    for (int h = 0; h < 2; h++) {
        const __m256i hb =
            _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, spread[h]), mul), _mm256_set1_epi16(0x300));
        const __m256i q = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) (a->qs + 16 * h)));
        _mm256_storeu_si256((__m256i *) (ixt + 16 * h), _mm256_or_si256(q, hb));
    }
}

// Sub-block ib's two per-16 scales from that table as [first x8 | second x8] int16: one dword
// broadcast from memory and one byte shuffle (building them from the nibble took five vector ops).
static inline __m256i pair_scales_16(const int16_t * sct, int ib) {
    int32_t w;
    memcpy(&w, sct + 2 * ib, sizeof(w));
    const __m256i spread =
        _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    return _mm256_shuffle_epi8(_mm256_set1_epi32(w), spread);
}

enum {
    G_IQ2_XXS,
    G_IQ2_XS,
    G_IQ2_S,
    G_IQ3_XXS,
    G_IQ3_S
};

// Sub-block ib (32 values) of one super-block of grid type T: magnitudes, sign bytes and int16
// scales (what grid_dot32 takes); sct: IQ2_XS / IQ2_S's scale table (nibble_scales_table), ixt:
// IQ2_S's grid indices (iq2_s_index_table).
static inline __attribute__((always_inline)) void grid_decode(const int T, const void * blk, int ib, const int16_t * sct,
                                                              const uint16_t * ixt, __m256i * mag, __m256i * sgn, __m256i * sc) {
    if (T == G_IQ2_XXS) {
        const block_iq2_xxs * a = (const block_iq2_xxs *) blk;
        uint32_t w[2];
        memcpy(w, a->qs + 4 * ib, sizeof(w));
        *mag = _mm256_i32gather_epi64((const long long *) ggml_iq2xxs_grid, _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int) w[0])), 8);
        *sgn = ksigns_vec(w[1]);
        *sc = _mm256_set1_epi16((short) (2 * (w[1] >> 28) + 1));
    } else if (T == G_IQ2_XS) {
        const block_iq2_xs * a = (const block_iq2_xs *) blk;
        const uint16_t * q = a->qs + 4 * ib;
        const __m128i qv = _mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *) q));
        *mag = _mm256_i32gather_epi64((const long long *) ggml_iq2xs_grid, _mm_and_si128(qv, _mm_set1_epi32(511)), 8);
        *sgn = _mm256_set_epi64x((long long) ksigns64[q[3] >> 9], (long long) ksigns64[q[2] >> 9],
                                 (long long) ksigns64[q[1] >> 9], (long long) ksigns64[q[0] >> 9]);
        *sc = pair_scales_16(sct, ib);
    } else if (T == G_IQ2_S) {
        const block_iq2_s * a = (const block_iq2_s *) blk;
        *mag = _mm256_i32gather_epi64((const long long *) ggml_iq2s_grid,
                                      _mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *) (ixt + 4 * ib))), 8);
        *sgn = bits_to_signs_32(a->qs + QK_IQ / 8 + 4 * ib);
        *sc = pair_scales_16(sct, ib);
    } else if (T == G_IQ3_XXS) {
        const block_iq3_xxs * a = (const block_iq3_xxs *) blk;
        uint32_t w;
        memcpy(&w, a->qs + QK_IQ / 4 + 4 * ib, sizeof(w));
        *mag = _mm256_i32gather_epi32((const int *) ggml_iq3xxs_grid,
                                      _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (a->qs + 8 * ib))), 4);
        *sgn = ksigns_vec(w);
        *sc = _mm256_set1_epi16((short) (2 * (w >> 28) + 1));
    } else {
        const block_iq3_s * a = (const block_iq3_s *) blk;
        // index l: q[l] | bit l of qh at bit 8
        const __m256i hb =
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(a->qh[ib] << 8), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                             _mm256_set1_epi32(0x100));
        const __m256i idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (a->qs + 8 * ib))), hb);
        *mag = _mm256_i32gather_epi32((const int *) ggml_iq3s_grid, idx, 4);
        *sc = _mm256_set1_epi16((short) (2 * ((a->scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1));
        *sgn = bits_to_signs_32(a->signs + 4 * ib);
    }
}

// One row of grid type T against NC (1 or 4) q8_K columns (column c at y + c by, its result at
// s + c bs bytes): each sub-block is decoded once for the NC columns, and every column sees the
// operations of NC = 1, so vec_dot_x4 gives vec_dot's bits.
static inline __attribute__((always_inline)) void grid_dot(const int T, int n, float * s, size_t bs, const void * x,
                                                           const void * y, size_t by, const int NC) {
    const size_t tsz = T == G_IQ2_XXS ? sizeof(block_iq2_xxs)
        : T == G_IQ2_XS               ? sizeof(block_iq2_xs)
        : T == G_IQ2_S                ? sizeof(block_iq2_s)
        : T == G_IQ3_XXS              ? sizeof(block_iq3_xxs)
                                      : sizeof(block_iq3_s);
    const float mul = T == G_IQ3_S ? 1.0f : T == G_IQ3_XXS ? 0.25f : 0.125f;
    __m256 acc[4]; // per-lane float sums: one horizontal sum per row
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_IQ; i++) {
        const uint8_t * blk = (const uint8_t *) x + (size_t) i * tsz;
        const block_q8_K * b[4];
        __m256i isum[4];
        for (int c = 0; c < NC; c++) {
            b[c] = (const block_q8_K *) ((const char *) y + (size_t) c * by) + i;
            isum[c] = _mm256_setzero_si256();
        }
        int16_t sct[16];
        uint16_t ixt[32];
        if (T == G_IQ2_XS) nibble_scales_table(((const block_iq2_xs *) blk)->scales, sct);
        if (T == G_IQ2_S) {
            nibble_scales_table(((const block_iq2_s *) blk)->scales, sct);
            iq2_s_index_table((const block_iq2_s *) blk, ixt);
        }
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            __m256i mag, sgn, sc;
            grid_decode(T, blk, ib, sct, ixt, &mag, &sgn, &sc);
            for (int c = 0; c < NC; c++) isum[c] = _mm256_add_epi32(isum[c], grid_dot32(mag, sgn, b[c]->qs + 32 * ib, sc));
        }
        ggml_fp16_t dh;
        memcpy(&dh, blk, sizeof(dh)); // every grid type starts with its fp16 d
        const float d = FP16_TO_FP32(dh);
        for (int c = 0; c < NC; c++) {
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(mul * (d * b[c]->d)), _mm256_cvtepi32_ps(isum[c]), acc[c]);
        }
    }
    for (int c = 0; c < NC; c++) *(float *) ((char *) s + (size_t) c * bs) = hsum_f32_8(acc[c]);
}

#define GRID_DOT_FNS(name, T)                                                                                                 \
    static void vec_dot_##name##_q8_K(int n, float * s, const void * x, const void * y) { grid_dot(T, n, s, 0, x, y, 0, 1); } \
    static void vec_dot_x4_##name##_q8_K(int n, float * s, size_t bs, const void * x, const void * y, size_t by) {            \
        grid_dot(T, n, s, bs, x, y, by, 4);                                                                                   \
    }
GRID_DOT_FNS(iq2_xxs, G_IQ2_XXS)
GRID_DOT_FNS(iq2_xs, G_IQ2_XS)
GRID_DOT_FNS(iq2_s, G_IQ2_S)
GRID_DOT_FNS(iq3_xxs, G_IQ3_XXS)
GRID_DOT_FNS(iq3_s, G_IQ3_S)

// ---- IQ1_S / IQ1_M: 8 * (grid + delta) = 8 g +- 1, dotted as the unsigned 8 g + 9 +- 1 less 9 sum(y) ----

// IQ1_S: 8 g + 9 (1, 9 or 17) per grid byte, filled by ggml_cpu_quants_init_iq_avx2. With one
// delta per 32 values, sum((8 g + delta) y) = sum((8 g + 9) y) + (delta - 9) sum(y): unsigned levels
// go straight into maddubs, and the second term comes from the activations' 16-value sums.
static uint64_t iq1s_grid_u9[2048];

// The q8_K block i of column c (column c at y + c by).
static inline const block_q8_K * q8k_col(const void * y, size_t by, int c, int i) {
    return (const block_q8_K *) ((const char *) y + (size_t) c * by) + i;
}

// The row's dot with each of NC (1 or 4) columns stored at s + c bs bytes: one horizontal sum of
// the per-lane float sums each.
static inline __attribute__((always_inline)) void store_cols(float * s, size_t bs, const __m256 * acc, const int NC) {
    for (int c = 0; c < NC; c++) *(float *) ((char *) s + (size_t) c * bs) = hsum_f32_8(acc[c]);
}

// The 32 11-bit grid indices of an IQ1_S super-block: index k is qs[k] | bits 3 (k % 4) .. +2 of
// qh[k / 4] (16-bit) at bits 8-10 (each qh word spread to its 4 lanes, the 3 bits moved to the
// top by a multiply, then down).
static inline void iq1_s_index_table(const block_iq1_s * a, uint16_t * ixt) {
    const __m256i mul = _mm256_setr_epi16(8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16);
    const __m256i spread =
        _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7);
    for (int h = 0; h < 2; h++) {
        // words 4 h .. 4 h + 3 in both 128-bit lanes; lane k takes word 4 h + k / 4
        const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *) (a->qh + 4 * h)));
        const __m256i hb = _mm256_slli_epi16(_mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, spread), mul), 13), 8);
        const __m256i q = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) (a->qs + 16 * h)));
        _mm256_storeu_si256((__m256i *) (ixt + 16 * h), _mm256_or_si256(q, hb));
    }
}

// The kernels below take NC (1 or 4) columns; each column sees the operations of NC = 1, so
// vec_dot_x4 gives vec_dot's bits.
static inline __attribute__((always_inline)) void iq1_s_dot(int n, float * s, size_t bs, const void * x, const void * y,
                                                            size_t by, const int NC) {
    const block_iq1_s * a = (const block_iq1_s *) x;
    __m256 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_IQ; i++) {
        // per sub-block j: ls_j (delta_j - 9) = (2 s + 1) (-8 or -10), in both int16 lanes of int32 lane j
        const __m128i qh = _mm_loadu_si128((const __m128i *) a[i].qh);
        const __m128i ls = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(qh, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1));
        const __m128i dm9 = _mm_sub_epi16(_mm_set1_epi16(-8), _mm_and_si128(_mm_srli_epi16(qh, 14), _mm_set1_epi16(2)));
        const __m256i c32 = _mm256_cvtepu16_epi32(_mm_mullo_epi16(ls, dm9));
        const __m256i c16 = _mm256_or_si256(c32, _mm256_slli_epi32(c32, 16));
        __m256i isum[4];
        for (int c = 0; c < NC; c++)
            isum[c] = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *) q8k_col(y, by, c, i)->bsums), c16);
        uint16_t ixt[32];
        iq1_s_index_table(&a[i], ixt);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int h = a[i].qh[ib];
            const __m256i u = _mm256_i32gather_epi64((const long long *) iq1s_grid_u9,
                                                     _mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *) (ixt + 4 * ib))), 8);
            const __m256i sc = _mm256_set1_epi16((short) (2 * ((h >> 12) & 7) + 1));
            for (int c = 0; c < NC; c++) {
                const __m256i p =
                    _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *) (q8k_col(y, by, c, i)->qs + 32 * ib)));
                isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(p, sc));
            }
        }
        const float d = FP16_TO_FP32(a[i].d);
        for (int c = 0; c < NC; c++) {
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(0.125f * (d * q8k_col(y, by, c, i)->d)), _mm256_cvtepi32_ps(isum[c]), acc[c]);
        }
    }
    store_cols(s, bs, acc, NC);
}

// Delta bytes (+1, or -1 where bit k of the index is set) of four 8-value groups, filled by
// ggml_cpu_quants_init_iq_avx2.
static int8_t iq1_delta[16][32] __attribute__((aligned(32)));

// The 32 11-bit grid indices of an IQ1_M super-block: index k is qs[k] | bits 4 (k % 2) .. +2 of
// qh[k / 2] at bits 8-10 (each qh byte spread to its 2 lanes, moved there by a multiply).
static inline void iq1_m_index_table(const block_iq1_m * a, uint16_t * ixt) {
    const __m256i mul = _mm256_setr_epi16(256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16);
    for (int h = 0; h < 2; h++) {
        // 16-bit lane k of half h: qh[8 h + k / 2] (0x80 in a shuffle index: zero)
        const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *) (a->qh + 8 * h)));
        const __m256i spread = _mm256_setr_epi8(0, -128, 0, -128, 1, -128, 1, -128, 2, -128, 2, -128, 3, -128, 3, -128, 4, -128,
                                                4, -128, 5, -128, 5, -128, 6, -128, 6, -128, 7, -128, 7, -128);
        const __m256i hb = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, spread), mul), _mm256_set1_epi16(0x700));
        const __m256i q = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) (a->qs + 16 * h)));
        _mm256_storeu_si256((__m256i *) (ixt + 16 * h), _mm256_or_si256(q, hb));
    }
}

// IQ1_M: unsigned levels 8 g + 9 + delta (0..18, delta +-1 per 8 values) straight into maddubs;
// the -9 sum(y) per 16 values (each 16 has its own scale) from the activations' 16-value sums.
static inline __attribute__((always_inline)) void iq1_m_dot(int n, float * s, size_t bs, const void * x, const void * y,
                                                            size_t by, const int NC) {
    const block_iq1_m * a = (const block_iq1_m *) x;
    // scale of 16-value group k: bits 3 (k % 4) .. + 2 of scale word k / 4 (moved to the top by a
    // multiply, then down by 13)
    const __m256i wsel =
        _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7);
    const __m256i wmul = _mm256_setr_epi16(8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16);
    __m256 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_IQ; i++) {
        const __m256i w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *) a[i].scales)), wsel);
        const __m256i ls =
            _mm256_or_si256(_mm256_slli_epi16(_mm256_srli_epi16(_mm256_mullo_epi16(w, wmul), 13), 1), _mm256_set1_epi16(1));
        int16_t sct[16];
        _mm256_storeu_si256((__m256i *) sct, ls);
        const __m256i c9 = _mm256_mullo_epi16(ls, _mm256_set1_epi16(-9));
        __m256i isum[4];
        for (int c = 0; c < NC; c++)
            isum[c] = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *) q8k_col(y, by, c, i)->bsums), c9);
        uint16_t ixt[32];
        iq1_m_index_table(&a[i], ixt);
        for (int ib = 0; ib < QK_IQ / 32; ib++) {
            const int h0 = a[i].qh[2 * ib], h1 = a[i].qh[2 * ib + 1];
            const int dn = ((h0 >> 3) & 1) | ((h0 >> 6) & 2) | ((h1 >> 1) & 4) | ((h1 >> 4) & 8);
            const __m256i g = _mm256_i32gather_epi64((const long long *) iq1s_grid_u9,
                                                     _mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *) (ixt + 4 * ib))), 8);
            const __m256i u = _mm256_add_epi8(g, _mm256_load_si256((const __m256i *) iq1_delta[dn]));
            const __m256i sc = pair_scales_16(sct, ib);
            for (int c = 0; c < NC; c++) {
                const __m256i p =
                    _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *) (q8k_col(y, by, c, i)->qs + 32 * ib)));
                isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(p, sc));
            }
        }
        const float d = ggml_iq1_m_scale(&a[i]);
        for (int c = 0; c < NC; c++) {
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(0.125f * (d * q8k_col(y, by, c, i)->d)), _mm256_cvtepi32_ps(isum[c]), acc[c]);
        }
    }
    store_cols(s, bs, acc, NC);
}

// ---- TQ2_0: four 2-bit planes per 32 bytes; sum((q - 1) y) = sum(q y) - sum(y) ----

// Trits and ternary 2-bit values are at most 2: a maddubs pair is at most 2 * 2 * 128, so the
// products of a whole block add in 16 bits; sum(y) comes from the 16-value sums.
static inline __m256i ternary_i32(__m256i s16, const block_q8_K * b) {
    const __m256i ones = _mm256_set1_epi16(1);
    return _mm256_sub_epi32(_mm256_madd_epi16(s16, ones),
                            _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *) b->bsums), ones));
}

static inline __attribute__((always_inline)) void tq2_0_dot(int n, float * s, size_t bs, const void * x, const void * y,
                                                            size_t by, const int NC) {
    const block_tq2_0 * a = (const block_tq2_0 *) x;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_IQ; i++) {
        __m256i s16[4];
        for (int c = 0; c < NC; c++) s16[c] = _mm256_setzero_si256();
        for (int k = 0; k < QK_IQ / 128; k++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *) (a[i].qs + 32 * k));
            for (int t = 0; t < 4; t++) {
                const __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * t), m3);
                for (int c = 0; c < NC; c++) {
                    const __m256i yv = _mm256_loadu_si256((const __m256i *) (q8k_col(y, by, c, i)->qs + 128 * k + 32 * t));
                    s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(u, yv));
                }
            }
        }
        const float d = FP16_TO_FP32(a[i].d);
        for (int c = 0; c < NC; c++) {
            const block_q8_K * b = q8k_col(y, by, c, i);
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * b->d), _mm256_cvtepi32_ps(ternary_i32(s16[c], b)), acc[c]);
        }
    }
    store_cols(s, bs, acc, NC);
}

// ---- TQ1_0: trit n of a byte is ((byte * 3^n) mod 256 * 3) >> 8, worked out in 16-bit lanes ----

// The trits (0..2) of the 32 bytes q; mul: 3^n per 16-bit lane (the two bytes of a lane share n).
// Each byte is multiplied in the high half of its 16-bit lane (bits below it are zero, carries
// out of the lane are lost: the product mod 256 lands in the high byte), then vpmulhuw by 3
// leaves (v * 3) >> 8 in the low byte.
static inline __m256i tq1_trits32(__m256i q, __m256i mul) {
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i even = _mm256_mulhi_epu16(_mm256_mullo_epi16(_mm256_slli_epi16(q, 8), mul), three);
    const __m256i odd =
        _mm256_mulhi_epu16(_mm256_mullo_epi16(_mm256_and_si256(q, _mm256_set1_epi16((short) 0xFF00)), mul), three);
    return _mm256_or_si256(even, _mm256_slli_epi16(odd, 8));
}

// Trit vector k (0..7) of a TQ1_0 block: the values 32 k .. 32 k + 31.
static inline __m256i tq1_trit_vec(const block_tq1_0 * a, int k) {
    if (k < 5)
        return tq1_trits32(_mm256_loadu_si256((const __m256i *) a->qs),
                           _mm256_set1_epi16((short) (k == 0       ? 1
                                                          : k == 1 ? 3
                                                          : k == 2 ? 9
                                                          : k == 3 ? 27
                                                                   : 81)));
    // values 160 + 16 n + j: trit n of qs[32 + j]; two trits per vector (the 16 bytes in both halves)
    const __m128i q16 = _mm_loadu_si128((const __m128i *) (a->qs + 32));
    if (k == 5) return tq1_trits32(_mm256_set_m128i(q16, q16), _mm256_set_m128i(_mm_set1_epi16(3), _mm_set1_epi16(1)));
    if (k == 6) return tq1_trits32(_mm256_set_m128i(q16, q16), _mm256_set_m128i(_mm_set1_epi16(27), _mm_set1_epi16(9)));
    // trit 4 of qs[32..47] (values 224..239), then qh[j] repeated for its 4 trits (240..255: lane l
    // of that half holds n = l / 2)
    uint32_t h4;
    memcpy(&h4, a->qh, sizeof(h4));
    return tq1_trits32(_mm256_set_m128i(_mm_set1_epi32((int) h4), q16),
                       _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27));
}

static inline __attribute__((always_inline)) void tq1_0_dot(int n, float * s, size_t bs, const void * x, const void * y,
                                                            size_t by, const int NC) {
    const block_tq1_0 * a = (const block_tq1_0 *) x;
    __m256 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_IQ; i++) {
        __m256i s16[4];
        for (int c = 0; c < NC; c++) s16[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i u = tq1_trit_vec(&a[i], k);
            for (int c = 0; c < NC; c++) {
                const __m256i yv = _mm256_loadu_si256((const __m256i *) (q8k_col(y, by, c, i)->qs + 32 * k));
                s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(u, yv));
            }
        }
        const float d = FP16_TO_FP32(a[i].d);
        for (int c = 0; c < NC; c++) {
            const block_q8_K * b = q8k_col(y, by, c, i);
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * b->d), _mm256_cvtepi32_ps(ternary_i32(s16[c], b)), acc[c]);
        }
    }
    store_cols(s, bs, acc, NC);
}

#define DOT_FNS(name, fn)                                                                                            \
    static void vec_dot_##name##_q8_K(int n, float * s, const void * x, const void * y) { fn(n, s, 0, x, y, 0, 1); } \
    static void vec_dot_x4_##name##_q8_K(int n, float * s, size_t bs, const void * x, const void * y, size_t by) {   \
        fn(n, s, bs, x, y, by, 4);                                                                                   \
    }
DOT_FNS(iq1_s, iq1_s_dot)
DOT_FNS(iq1_m, iq1_m_dot)
DOT_FNS(tq2_0, tq2_0_dot)
DOT_FNS(tq1_0, tq1_0_dot)

// ---- GEMM (gemm.h) of the codebook and IQ1 types: panels of signed values + off, and the one-column product ----

enum {
    G_IQ1_S = G_IQ3_S + 1,
    G_IQ1_M
};

// Per-super-block tables a sub-block decode reads (index tables of IQ2_S / IQ1_S / IQ1_M).
static inline __attribute__((always_inline)) void iq_tables(const int T, const void * blk, uint16_t * ixt) {
    if (T == G_IQ2_S) iq2_s_index_table((const block_iq2_s *) blk, ixt);
    if (T == G_IQ1_S) iq1_s_index_table((const block_iq1_s *) blk, ixt);
    if (T == G_IQ1_M) iq1_m_index_table((const block_iq1_m *) blk, ixt);
}

// IQ1 sub-block ib as unsigned levels 8 g + delta + 9 (0..18: one add to the table's 8 g + 9).
static inline __attribute__((always_inline)) __m256i iq1_u32(const int T, const void * blk, int ib, const uint16_t * ixt) {
    const __m256i u = _mm256_i32gather_epi64((const long long *) iq1s_grid_u9,
                                             _mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *) (ixt + 4 * ib))), 8);
    if (T == G_IQ1_S) {
        const block_iq1_s * a = (const block_iq1_s *) blk;
        return _mm256_add_epi8(u, _mm256_set1_epi8(a->qh[ib] & 0x8000 ? -1 : 1));
    }
    const block_iq1_m * a = (const block_iq1_m *) blk;
    const int h0 = a->qh[2 * ib], h1 = a->qh[2 * ib + 1];
    const int dn = ((h0 >> 3) & 1) | ((h0 >> 6) & 2) | ((h1 >> 1) & 4) | ((h1 >> 4) & 8);
    return _mm256_add_epi8(u, _mm256_load_si256((const __m256i *) iq1_delta[dn]));
}

// IQ1 sub-block ib: the signed values 8 g + delta (|v| <= 9).
static inline __attribute__((always_inline)) __m256i iq1_values32(const int T, const void * blk, int ib, const uint16_t * ixt) {
    return _mm256_sub_epi8(iq1_u32(T, blk, ib, ixt), _mm256_set1_epi8(9));
}

static const int16_t iq_no_scales[16]; // grid_decode's scales, unused here (the panel's are floats)

// The 32 signed values of sub-block ib.
static inline __attribute__((always_inline)) __m256i iq_values32(const int T, const void * blk, int ib, const uint16_t * ixt) {
    if (T == G_IQ1_S || T == G_IQ1_M) return iq1_values32(T, blk, ib, ixt);
    __m256i mag, sgn, sc;
    grid_decode(T, blk, ib, iq_no_scales, ixt, &mag, &sgn, &sc);
    (void) sc;
    return _mm256_sign_epi8(mag, sgn);
}

// Sub-block ib dotted with 32 q8_K values, as 8 int32 lanes (lane k: values 4k..4k+3); IQ1:
// its unsigned levels' dot, 9 times the values' sum over (the caller takes that off per block).
static inline __attribute__((always_inline)) __m256i iq_dot32(const int T, const void * blk, int ib, const uint16_t * ixt,
                                                              const int8_t * q) {
    if (T == G_IQ1_S || T == G_IQ1_M) return dot_u8_i8_32(iq1_u32(T, blk, ib, ixt), _mm256_loadu_si256((const __m256i *) q));
    __m256i mag, sgn, sc;
    grid_decode(T, blk, ib, iq_no_scales, ixt, &mag, &sgn, &sc);
    (void) sc;
    return dot_u8_i8_32(mag, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *) q), sgn));
}

// The GEMM blocks' scales of one super-block (8 of 32 values, or 16 of 16) into d: the float
// operations of ggml_gemm_iq_scales in the same order, so the same bits, a vector at a time.
static inline __attribute__((always_inline)) void iq_scales(const int T, const void * blk, float * d) {
    const uint8_t * b = (const uint8_t *) blk;
    if (T == G_IQ1_M) {
        const block_iq1_m * a = (const block_iq1_m *) blk;
        // 3-bit scale k: bits 3 (k % 4) .. of word k / 4 (moved to the top by a multiply, then down)
        const __m256i wsel =
            _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7);
        const __m256i wmul =
            _mm256_setr_epi16(8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16);
        const __m256i w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *) a->scales)), wsel);
        const __m256i ls =
            _mm256_or_si256(_mm256_slli_epi16(_mm256_srli_epi16(_mm256_mullo_epi16(w, wmul), 13), 1), _mm256_set1_epi16(1));
        const __m256 dd = _mm256_set1_ps(ggml_iq1_m_scale(a)), e = _mm256_set1_ps(0.125f);
        for (int h = 0; h < 2; h++) {
            const __m256 f =
                _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(h ? _mm256_extracti128_si256(ls, 1) : _mm256_castsi256_si128(ls)));
            _mm256_storeu_ps(d + 8 * h, _mm256_mul_ps(_mm256_mul_ps(dd, f), e));
        }
        return;
    }
    ggml_fp16_t hd;
    memcpy(&hd, b, sizeof(hd)); // the other types start with their fp16 d
    const __m256 dd = _mm256_set1_ps(FP16_TO_FP32(hd));
    if (T == G_IQ2_XS || T == G_IQ2_S) {
        const uint8_t * sc = T == G_IQ2_XS ? ((const block_iq2_xs *) blk)->scales : ((const block_iq2_s *) blk)->scales;
        const __m128i b8 = _mm_loadl_epi64((const __m128i *) sc), m4 = _mm_set1_epi8(0xF);
        const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(b8, m4), _mm_and_si128(_mm_srli_epi16(b8, 4), m4));
        for (int h = 0; h < 2; h++) {
            const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(h ? _mm_srli_si128(nib, 8) : nib));
            _mm256_storeu_ps(d + 8 * h,
                             _mm256_mul_ps(_mm256_mul_ps(dd, _mm256_add_ps(_mm256_set1_ps(0.5f), f)), _mm256_set1_ps(0.25f)));
        }
        return;
    }
    __m256 r;
    if (T == G_IQ2_XXS || T == G_IQ3_XXS) {
        // the top 4 bits of the sub-blocks' sign words: every second word of qs (IQ2_XXS), or the
        // 8 words after the 64 index bytes (IQ3_XXS)
        const __m256i w = T == G_IQ2_XXS
            ? _mm256_i32gather_epi32((const int *) (b + 6), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), 4)
            : _mm256_loadu_si256((const __m256i *) (b + 2 + QK_IQ / 4));
        const __m256 f = _mm256_add_ps(_mm256_set1_ps(0.5f), _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 28)));
        r = _mm256_mul_ps(_mm256_mul_ps(dd, f), _mm256_set1_ps(T == G_IQ2_XXS ? 0.25f : 0.5f));
    } else if (T == G_IQ3_S) {
        uint32_t w;
        memcpy(&w, ((const block_iq3_s *) blk)->scales, sizeof(w));
        const __m256i s4 = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int) w), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)), _mm256_set1_epi32(15));
        r = _mm256_mul_ps(dd, _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_slli_epi32(s4, 1), _mm256_set1_epi32(1))));
    } else { // IQ1_S: bits 12-14 of each qh word
        const __m256i qh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *) ((const block_iq1_s *) blk)->qh));
        const __m256i s3 = _mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7));
        r = _mm256_mul_ps(_mm256_mul_ps(dd, _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_slli_epi32(s3, 1), _mm256_set1_epi32(1)))),
                          _mm256_set1_ps(0.125f));
    }
    _mm256_storeu_ps(d, r);
}

// 16 whole rows into a panel (gemm.h), 8 rows x one sub-block at a time: their value vectors
// turned into levels (v + off) and transposed, so that dword g of the 8 rows is one
// store; the scales from iq_scales (the portable packer's floats).
static inline __attribute__((always_inline)) void iq_pack(const int T, const struct ggml_gemm_traits * gt, const void * rows,
                                                          size_t stride, int nr, int64_t K, void * panel) {
    if (nr < GGML_GEMM_MR) {
        ggml_gemm_pack_generic(gt, rows, stride, nr, K, panel);
        return;
    }
    const int QB = T == G_IQ2_XS || T == G_IQ2_S || T == G_IQ1_M ? 16 : 32, bpu = QK_IQ / QB; // = gt->qb
    const size_t pbb = ggml_gemm_panel_block_bytes(gt), ub = ggml_type_size(gt->type);
    const __m256i bias = _mm256_set1_epi8((char) gt->off);
    for (int64_t u = 0; u < K / QK_IQ; u++) {
        uint8_t * pu = (uint8_t *) panel + (size_t) u * bpu * pbb;
        for (int h = 0; h < 2; h++) {
            const uint8_t * blk[8];
            uint16_t ixt[8][32];
            for (int r = 0; r < 8; r++) {
                blk[r] = (const uint8_t *) rows + (size_t) (8 * h + r) * stride + (size_t) u * ub;
                iq_tables(T, blk[r], ixt[r]);
                float d[16];
                iq_scales(T, blk[r], d);
                for (int j = 0; j < bpu; j++)
                    memcpy(pu + (size_t) j * pbb + (size_t) QB * GGML_GEMM_MR + 4 * (8 * h + r), &d[j], 4);
            }
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                __m256i v[8];
                for (int r = 0; r < 8; r++) v[r] = _mm256_add_epi8(iq_values32(T, blk[r], ib, ixt[r]), bias);
                transpose_8x8(v);
                for (int g = 0; g < 8; g++) {
                    uint8_t * o =
                        QB == 32 ? pu + (size_t) ib * pbb + 64 * g : pu + (size_t) (2 * ib + g / 4) * pbb + 64 * (g % 4);
                    _mm256_storeu_si256((__m256i *) (o + 32 * h), v[g]);
                }
            }
        }
    }
}

// gemv_prep: the column's q8_K row itself.
static void iq_gemv_prep(const struct ggml_gemm_traits * gt, const void * qrow, const void * group, int64_t K, void * gv) {
    (void) group;
    memcpy(gv, qrow, ggml_row_size(gt->act_type, K));
}

// One column against 16 whole rows, 8 rows at a time with a row per lane (as the tile): per
// sub-block the 8 rows' dot vectors reduce to one vector of their block sums (one add tree),
// and the 1-column tile's float steps run on those lanes (gemm.h: t = isum_0 d_0,
// t = fma(isum_j, d_j, t), acc = fma(t, da, acc) per super-block), so the bits are the tile's.
// (Row by row, the per-block float chain of each row left the cores waiting: 0.7x vec_dot.)
static inline __attribute__((always_inline)) void iq_gemv(const int T, const struct ggml_gemm_traits * gt, const void * rows,
                                                          size_t stride, int64_t K, void * gv, float * dst) {
    const int QB = T == G_IQ2_XS || T == G_IQ2_S || T == G_IQ1_M ? 16 : 32, bpu = QK_IQ / QB; // = gt->qb
    const size_t ub = ggml_type_size(gt->type);
    const block_q8_K * y = (const block_q8_K *) gv;
    const uint8_t * base = (const uint8_t *) rows;
    // the next 16 rows into L2 meanwhile: 16 streams at once defeat the hardware prefetchers
    const int64_t n_lines = (int64_t) (GGML_GEMM_MR * stride + 63) / 64, nsb = K / QK_IQ;
    for (int h = 0; h < 2; h++) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t i = 0; i < nsb; i++) {
            const int64_t l0 = (h * nsb + i) * n_lines / (2 * nsb), l1 = (h * nsb + i + 1) * n_lines / (2 * nsb);
            for (int64_t l = l0; l < l1; l++) _mm_prefetch((const char *) (base + GGML_GEMM_MR * stride + 64 * l), _MM_HINT_T1);
            const uint8_t * blk[8];
            uint16_t ixt[8][32];
            float dv[8][16];
            for (int r = 0; r < 8; r++) {
                blk[r] = base + (size_t) (8 * h + r) * stride + (size_t) i * ub;
                iq_tables(T, blk[r], ixt[r]);
                iq_scales(T, blk[r], dv[r]);
            }
            // dT[j]: block j's scale of the 8 rows
            __m256i dT[16];
            for (int k = 0; k < bpu / 8; k++) {
                for (int r = 0; r < 8; r++) dT[8 * k + r] = _mm256_castps_si256(_mm256_loadu_ps(dv[r] + 8 * k));
                transpose_8x8(dT + 8 * k);
            }
            __m256 t = _mm256_setzero_ps();
            for (int ib = 0; ib < QK_IQ / 32; ib++) {
                __m256i p[8];
                for (int r = 0; r < 8; r++) p[r] = iq_dot32(T, blk[r], ib, ixt[r], y[i].qs + 32 * ib);
                // lanes 0-3: the low 16 values of rows 0-3 (q0) / 4-7 (q1), lanes 4-7: their high 16
                const __m256i q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
                const __m256i q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
                __m256i lo = _mm256_permute2x128_si256(q0, q1, 0x20), hi = _mm256_permute2x128_si256(q0, q1, 0x31);
                if (T == G_IQ1_S || T == G_IQ1_M) {
                    // the same for every row: 9 times the activations' sum of each 16 values
                    lo = _mm256_sub_epi32(lo, _mm256_set1_epi32(9 * y[i].bsums[2 * ib]));
                    hi = _mm256_sub_epi32(hi, _mm256_set1_epi32(9 * y[i].bsums[2 * ib + 1]));
                }
                if (QB == 32) {
                    const __m256 is = _mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi));
                    const __m256 d = _mm256_castsi256_ps(dT[ib]);
                    t = ib == 0 ? _mm256_mul_ps(is, d) : _mm256_fmadd_ps(is, d, t);
                } else {
                    const __m256 d0 = _mm256_castsi256_ps(dT[2 * ib]), d1 = _mm256_castsi256_ps(dT[2 * ib + 1]);
                    t = ib == 0 ? _mm256_mul_ps(_mm256_cvtepi32_ps(lo), d0) : _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), d0, t);
                    t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), d1, t);
                }
            }
            acc = _mm256_fmadd_ps(t, _mm256_set1_ps(y[i].d), acc);
        }
        _mm256_storeu_ps(dst + 8 * h, acc);
    }
}

#define IQ_GEMM_FNS(name, T)                                                                                            \
    static void pack_##name(const struct ggml_gemm_traits * gt, const void * rows, size_t stride, int nr, int64_t K,    \
                            void * panel) {                                                                             \
        iq_pack(T, gt, rows, stride, nr, K, panel);                                                                     \
    }                                                                                                                   \
    static void gemv_##name(const struct ggml_gemm_traits * gt, const void * rows, size_t stride, int64_t K, void * gv, \
                            float * dst) {                                                                              \
        iq_gemv(T, gt, rows, stride, K, gv, dst);                                                                       \
    }
IQ_GEMM_FNS(iq2_xxs, G_IQ2_XXS)
IQ_GEMM_FNS(iq2_xs, G_IQ2_XS)
IQ_GEMM_FNS(iq2_s, G_IQ2_S)
IQ_GEMM_FNS(iq3_xxs, G_IQ3_XXS)
IQ_GEMM_FNS(iq3_s, G_IQ3_S)
IQ_GEMM_FNS(iq1_s, G_IQ1_S)
IQ_GEMM_FNS(iq1_m, G_IQ1_M)

void ggml_gemm_init_iq_avx2(struct ggml_gemm_traits * t) {
    static const struct {
        enum ggml_type type;
        ggml_gemm_pack_t pack;
        ggml_gemm_gemv_t gemv;
    } fns[] = {
        { GGML_TYPE_IQ2_XXS, pack_iq2_xxs, gemv_iq2_xxs }, { GGML_TYPE_IQ2_XS, pack_iq2_xs, gemv_iq2_xs },
        { GGML_TYPE_IQ2_S, pack_iq2_s, gemv_iq2_s },       { GGML_TYPE_IQ3_XXS, pack_iq3_xxs, gemv_iq3_xxs },
        { GGML_TYPE_IQ3_S, pack_iq3_s, gemv_iq3_s },       { GGML_TYPE_IQ1_S, pack_iq1_s, gemv_iq1_s },
        { GGML_TYPE_IQ1_M, pack_iq1_m, gemv_iq1_m },
    };
    for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
        struct ggml_gemm_traits * g = &t[fns[k].type];
        if (g->qb == 0) continue;
        g->pack = fns[k].pack;
        g->gemv = fns[k].gemv;
        g->gemv_prep = iq_gemv_prep;
        g->accelerated = true;
    }
}

void ggml_cpu_quants_init_iq_avx2(struct ggml_type_traits_cpu * t) {
    for (int i = 0; i < 128; i++) {
        uint64_t v = 0;
        for (int j = 0; j < 8; j++) v |= (uint64_t) ((ggml_iq2_ksigns[i] >> j) & 1 ? 0xFF : 0x01) << (8 * j);
        ksigns64[i] = v;
    }
    for (int i = 0; i < 2048; i++) {
        uint64_t v = 0;
        for (int j = 0; j < 8; j++) v |= (uint64_t) (uint8_t) (8 * (int8_t) (ggml_iq1s_grid[i] >> (8 * j)) + 9) << (8 * j);
        iq1s_grid_u9[i] = v;
    }
    for (int m = 0; m < 16; m++) {
        for (int j = 0; j < 32; j++) iq1_delta[m][j] = (int8_t) ((m >> (j / 8)) & 1 ? -1 : 1);
    }
    iq_lut_install(t);
    t[GGML_TYPE_IQ2_XXS].vec_dot = vec_dot_iq2_xxs_q8_K;
    t[GGML_TYPE_IQ2_XS].vec_dot = vec_dot_iq2_xs_q8_K;
    t[GGML_TYPE_IQ2_S].vec_dot = vec_dot_iq2_s_q8_K;
    t[GGML_TYPE_IQ3_XXS].vec_dot = vec_dot_iq3_xxs_q8_K;
    t[GGML_TYPE_IQ3_S].vec_dot = vec_dot_iq3_s_q8_K;
    t[GGML_TYPE_IQ2_XXS].vec_dot_x4 = vec_dot_x4_iq2_xxs_q8_K;
    t[GGML_TYPE_IQ2_XS].vec_dot_x4 = vec_dot_x4_iq2_xs_q8_K;
    t[GGML_TYPE_IQ2_S].vec_dot_x4 = vec_dot_x4_iq2_s_q8_K;
    t[GGML_TYPE_IQ3_XXS].vec_dot_x4 = vec_dot_x4_iq3_xxs_q8_K;
    t[GGML_TYPE_IQ3_S].vec_dot_x4 = vec_dot_x4_iq3_s_q8_K;
    t[GGML_TYPE_IQ1_S].vec_dot_x4 = vec_dot_x4_iq1_s_q8_K;
    t[GGML_TYPE_IQ1_M].vec_dot_x4 = vec_dot_x4_iq1_m_q8_K;
    t[GGML_TYPE_TQ2_0].vec_dot_x4 = vec_dot_x4_tq2_0_q8_K;
    t[GGML_TYPE_TQ1_0].vec_dot_x4 = vec_dot_x4_tq1_0_q8_K;
    t[GGML_TYPE_TQ2_0].vec_dot = vec_dot_tq2_0_q8_K;
    t[GGML_TYPE_TQ1_0].vec_dot = vec_dot_tq1_0_q8_K;
    t[GGML_TYPE_IQ1_S].vec_dot = vec_dot_iq1_s_q8_K;
    t[GGML_TYPE_IQ1_M].vec_dot = vec_dot_iq1_m_q8_K;
}
