// gemm-avx512.c — the 16 x 8 GEMM micro-kernel with AVX-512 VNNI (formats in gemm.h).
//
// One 512-bit vector holds 4 levels of each of 16 weight rows; vpdpbusd multiplies it by 4
// activation values of one column, broadcast from memory (the instruction's embedded broadcast),
// and adds the 4 products into each row's int32 lane. Eight columns keep eight integer
// accumulators, so each weight vector is loaded once per 8 vpdpbusd. Per block the integer sums
// become floats scaled by the row scales (and the column scale, once per superblock).
#include "gemm.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

static inline int32_t ld_i32(const void * p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline float ld_f32(const void * p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}

// The tile for one (qb, sb, has_min, has_corr) combination; constants fold after inlining.
// PK: 0 = panel of gemm.h (u8 levels, float scales); 1 / 2 = repacked weights (repack.h:
// nibble / byte levels, fp16 scales). Only the loads differ: the arithmetic, and so the bits of
// the result, are the same for the three. GNR: columns of the group layout (8, or 1 for the
// compact one-column group of gemm.h).
static inline __attribute__((always_inline)) void tile_g(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst,
                                                         int64_t ldc, int nr, int nc, const int QB, const int SB, const int SA,
                                                         const bool MIN, const bool CORR, const int NRT, const int PK,
                                                         const int GNR) {
    // level bytes per block; PK 3 / 4 / 6 (repacked q4_K / q6_K / q5_K) keep their scales in a
    // header per superblock, q6_K its levels as two nibble vectors and one vector of 2-bit tops
    // per block; PK 5 / 6 (repacked q5_0, q5_1 / q5_K) a vector of fifth bits after the nibbles
    // PK 9 / 10 (repacked iq4_nl / iq4_xs): nibbles as PK 1's, levels by a table shuffle; iq4_xs
    // d[16] (fp16) and sc[8][16] (int8) per superblock
    const bool LUT = PK == 9 || PK == 10;
    const bool NIB = PK == 1 || PK == 3 || PK == 5 || PK == 6 || LUT;
    const bool H5 = PK == 5 || PK == 6, KH = PK == 3 || PK == 6;
    const size_t lvb = PK == 1 || PK == 3 || LUT ? (size_t) QB * GGML_GEMM_MR / 2
        : H5                                     ? (size_t) QB * GGML_GEMM_MR / 2 + 64
        : PK == 4                                ? (size_t) 192
                                                 : (size_t) QB * GGML_GEMM_MR;
    const size_t scb = PK ? 32 : 64;                                                      // bytes per scale vector
    // PK 7 / 8: repacked q2_K / q3_K (gemm.h: GGML_GEMM_RP_Q2_K): a header per superblock, then
    // 64 bytes of 2-bit levels per block; q3_K: per pair of blocks, their levels and third bits
    const bool LOW = PK == 7 || PK == 8;
    const size_t pbb = LOW ? 64 : KH || PK == 4 || PK == 10 ? lvb : lvb + scb + (MIN ? scb : 0);
    const __m512i m3 = _mm512_set1_epi8(0x03), m04 = _mm512_set1_epi8(0x04);
    const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char) 129, (char) 141, (char) 153,
                                                             (char) 166, (char) 181, (char) 197, (char) 217,
                                                             (char) 241)); // kvalues_iq4nl + 128
    const __m512i m10 = _mm512_set1_epi8(0x10);
    const __m512i m30 = _mm512_set1_epi8(0x30);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m4h = _mm512_set1_epi8((char) 0xF0);
    const size_t gbb = (size_t) (QB + 8) * GNR;
    const int NA = SB / SA;                                                                 // activation scales per superblock
    const size_t sbb = (size_t) 4 * GNR * NA + (size_t) SB * gbb;
    const int64_t nsb = K / (QB * SB);
    __m512 acc[GGML_GEMM_NR];
    for (int c = 0; c < NRT; c++) acc[c] = _mm512_setzero_ps();
    const uint8_t * pb = panel;
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * sbp = group + (size_t) i * sbb;
        const uint8_t * ab = sbp + 4 * GNR * NA;
        __m512 t[GGML_GEMM_NR];
        for (int c = 0; c < NRT; c++) t[c] = _mm512_setzero_ps(); // set at each scale's first block
        // repacked q4_K: d[16], dmin[16] (fp16), then sc[8][16], mn[8][16] (u8), then the levels
        const uint8_t * hd = pb;
        __m512 dsb = _mm512_setzero_ps(), ndsb = _mm512_setzero_ps();
        if (KH) {
            dsb = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) hd));
            ndsb = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (hd + 32))));
            pb += 64 + 2 * 8 * GGML_GEMM_MR;
        }
        // repacked q6_K: sc[16][16] (int8), then d[16] (fp16), then the levels
        if (PK == 4) {
            dsb = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (hd + 256)));
            pb += 256 + 32;
        }
        // repacked q2_K: d[16], dmin[16] (fp16), sc[16][16]; q3_K: d[16], sc[16][16] (int8)
        if (PK == 10) {
            dsb = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) hd));
            pb += 32 + 128;
        }
        if (LOW) {
            dsb = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) hd));
            if (PK == 7)
                ndsb = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (hd + 32))));
            pb += PK == 7 ? 64 + 256 : 32 + 256;
        }
        // blocks in runs of one activation scale: the run (1 or 2 blocks for q8_1) unrolls, so
        // whether a block opens or closes its run is known at compile time
        for (int ja = 0; ja < NA; ja++) {
#pragma GCC unroll 2
            for (int jr = 0; jr < SA; jr++) {
                const int j = ja * SA + jr;
                if (PK) {
                    // repacked panels in a decode step stream from DRAM once: the lines 2 KiB ahead
                    // are asked for now, so that memory and the vpdpbusd overlap (TinyLlama Q4_0, 8
                    // sequences x 1 token, one thread: 1.5x faster; the hardware prefetcher alone
                    // left the tiles waiting). A prompt's tiles meet those lines in cache: the
                    // prefetches take load-port slots only, which these tiles have to spare.
                    for (size_t o = 0; o < pbb; o += 64) _mm_prefetch((const char *) pb + 2048 + o, _MM_HINT_T0);
                }
                // With one or two columns the vpdpbusd of a block would form one long dependent
                // chain: part of them go to a second chain (ib), added at the end. Integer sums, so
                // the bits are those of one chain.
                const bool two = NRT <= 2;
                __m512i ia[GGML_GEMM_NR], ib[GGML_GEMM_NR];
                for (int c = 0; c < NRT; c++) {
                    ia[c] = CORR ? _mm512_set1_epi32(ld_i32(ab + QB * GNR + 4 * c)) : _mm512_setzero_si512();
                    ib[c] = _mm512_setzero_si512();
                }
                // Packed vectors that two or more level vectors come from: with one or two columns
                // each is loaded once and stays in a register (the empty asm keeps the compiler from
                // folding another load of it into a shift: 512-bit loads are what limits those
                // tiles); with more columns the loads are few per vpdpbusd and the registers scarce.
                __m512i pkv[5];
                if (NIB || PK == 4) {
                    for (int h = 0; h < (PK == 4 ? 3 : QB / 8 + H5); h++) {
                        pkv[h] = _mm512_loadu_si512((const void *) (pb + 64 * h));
                        if (two) __asm__("" : "+v"(pkv[h]));
                    }
                }
                if (LOW) {
                    pkv[0] = _mm512_loadu_si512((const void *) pb);
                    if (PK == 8) {
                        // the pair's third bits (128 bytes past its first block, 64 past its
                        // second), the second block's moved down to bits 0-3
                        const __m512i hv = _mm512_loadu_si512((const void *) (pb + ((j & 1) ? 64 : 128)));
                        pkv[1] = (j & 1) ? _mm512_srli_epi16(hv, 4) : hv;
                    }
                    if (two) __asm__("" : "+v"(pkv[0]));
                }
                for (int g = 0; g < QB / 4; g++) {
                    __m512i w;
                    if ((PK == 1 || PK == 3) && two) {
                        // high nibbles in place (16 times the level) into the second chain, which is
                        // divided by 16 at the end: exact, and no shift per vector
                        w = _mm512_and_si512(pkv[g % (QB / 8)], g < QB / 8 ? m4 : m4h);
                    } else if (NIB) {
                        const __m512i pk = pkv[g % (QB / 8)];
                        w = _mm512_and_si512(g < QB / 8 ? pk : _mm512_srli_epi16(pk, 4), m4);
                        if (H5) {
                            // bit g of the fifth-bit vector to bit 4 (16-bit shifts: no bit from the
                            // neighbour byte reaches bit 4); 0xF8: w | (hb & m10)
                            const __m512i hv = pkv[QB / 8];
                            const __m512i hb = g < 4 ? _mm512_slli_epi16(hv, 4 - g) : g == 4 ? hv : _mm512_srli_epi16(hv, g - 4);
                            w = _mm512_ternarylogic_epi32(w, hb, m10, 0xF8);
                        }
                        if (LUT) w = _mm512_shuffle_epi8(lut, w);
                    } else if (LOW) {
                        // 2-bit levels at bits 2g (16-bit shifts: what crosses from the neighbour
                        // byte falls outside the mask); q3_K: third bit g to bit 2, 0xF8: w | (hb & m04)
                        w = _mm512_and_si512(g == 0 ? pkv[0] : _mm512_srli_epi16(pkv[0], 2 * g), m3);
                        if (PK == 8) {
                            const __m512i hv = pkv[1];
                            const __m512i hb = g == 0 ? _mm512_slli_epi16(hv, 2)
                                : g == 1              ? _mm512_slli_epi16(hv, 1)
                                : g == 2              ? hv
                                                      : _mm512_srli_epi16(hv, 1);
                            w = _mm512_ternarylogic_epi32(w, hb, m04, 0xF8);
                        }
                    } else if (PK == 4) {
                        // the low nibble from nibble vector g % 2 (its high nibble for g >= 2), bits 4-5
                        // from the tops' pair g moved there; 16-bit shifts: bits that cross into the
                        // neighbour byte fall outside the masks. 0xD8: m4 ? lo : hi (hi is the
                        // destination: a temporary, so no copy of a live operand is made)
                        const __m512i nv = pkv[g % 2];
                        const __m512i tv = pkv[2];
                        const __m512i lo = g < 2 ? nv : _mm512_srli_epi16(nv, 4);
                        const __m512i th = g == 0 ? _mm512_slli_epi16(tv, 4)
                            : g == 1              ? _mm512_slli_epi16(tv, 2)
                            : g == 2              ? tv
                                                  : _mm512_srli_epi16(tv, 2);
                        w = _mm512_ternarylogic_epi32(_mm512_and_si512(th, m30), lo, m4, 0xD8);
                    } else {
                        w = _mm512_loadu_si512((const void *) (pb + 64 * g));
                    }
                    for (int c = 0; c < NRT; c++) {
                        const __m512i av = _mm512_set1_epi32(ld_i32(ab + 4 * GNR * g + 4 * c));
                        // nibble types: the high nibbles' groups form the second chain; others: odd g
                        const bool second = two && ((PK == 1 || PK == 3) ? g >= QB / 8 : g % 2);
                        if (second)
                            ib[c] = _mm512_dpbusd_epi32(ib[c], w, av);
                        else
                            ia[c] = _mm512_dpbusd_epi32(ia[c], w, av);
                    }
                }
                for (int c = 0; c < NRT && two; c++) {
                    ia[c] = _mm512_add_epi32(ia[c], PK == 1 || PK == 3 ? _mm512_srai_epi32(ib[c], 4) : ib[c]);
                }
                // the packer's d * sc and -dmin * mn, the same float products
                const __m512 d = KH
                    ? _mm512_mul_ps(
                          dsb, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (hd + 64 + 16 * j)))))
                    : PK == 4
                    ? _mm512_mul_ps(dsb,
                                    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (hd + 16 * j)))))
                    : PK == 7 ? _mm512_mul_ps(dsb,
                                              _mm512_cvtepi32_ps(_mm512_and_si512(
                                                  _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (hd + 64 + 16 * j))),
                                                  _mm512_set1_epi32(15))))
                    : PK == 8 || PK == 10
                    ? _mm512_mul_ps(
                          dsb, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (hd + 32 + 16 * j)))))
                    : PK ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (pb + lvb)))
                         : _mm512_loadu_ps((const float *) (pb + lvb));
                if (SB == 1) {
                    for (int c = 0; c < NRT; c++) {
                        const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(ld_f32(sbp + 4 * c)));
                        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[c]), dd, acc[c]);
                    }
                } else {
                    // t sums the blocks of one activation scale (gemm.h: the float order)
                    for (int c = 0; c < NRT; c++) {
                        t[c] = jr == 0 ? _mm512_mul_ps(_mm512_cvtepi32_ps(ia[c]), d)
                                       : _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[c]), d, t[c]);
                    }
                }
                if (MIN) {
                    const __m512 m = KH ? _mm512_mul_ps(ndsb,
                                                        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                                            _mm_loadu_si128((const __m128i *) (hd + 64 + 128 + 16 * j)))))
                        : PK == 7
                        ? _mm512_mul_ps(ndsb,
                                        _mm512_cvtepi32_ps(_mm512_srli_epi32(
                                            _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (hd + 64 + 16 * j))), 4)))
                        : PK ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (pb + lvb + scb)))
                             : _mm512_loadu_ps((const float *) (pb + lvb + scb));
                    for (int c = 0; c < NRT; c++) {
                        acc[c] = _mm512_fmadd_ps(m, _mm512_set1_ps(ld_f32(ab + QB * GNR + 4 * GNR + 4 * c)), acc[c]);
                    }
                }
                if (SB > 1 && jr == SA - 1) {
                    for (int c = 0; c < NRT; c++) {
                        acc[c] = _mm512_fmadd_ps(t[c], _mm512_set1_ps(ld_f32(sbp + 4 * GNR * ja + 4 * c)), acc[c]);
                    }
                }
                pb += PK == 8 ? ((j & 1) ? 128 : 64) : pbb;
                ab += gbb;
            }
        }
    }
    const __mmask16 mask = (__mmask16) ((1u << nr) - 1);
    for (int c = 0; c < nc; c++) {
        _mm512_mask_storeu_ps(dst + c * ldc, mask, acc[c]);
    }
}

static inline __attribute__((always_inline)) void tile(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst,
                                                       int64_t ldc, int nr, int nc, const int QB, const int SB, const int SA,
                                                       const bool MIN, const bool CORR, const int NRT, const int PK) {
    tile_g(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, NRT, PK, GGML_GEMM_NR);
}

// One function per type family and column count (1 to 8: the group's first nc columns, each
// width its own instance, so a batched decode step of 3, 5, 6 or 7 sequences does no work for
// the group's empty columns); a column's lanes see the same operations in every width, so
// results never depend on N.
#define TILE_FN(name, QB, SB, SA, MIN, CORR, PK)                                                                          \
    static void name(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc, int nr, int nc) { \
        switch (nc) {                                                                                                     \
            case 1: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 1, PK); break;                         \
            case 2: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 2, PK); break;                         \
            case 3: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 3, PK); break;                         \
            case 4: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 4, PK); break;                         \
            case 5: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 5, PK); break;                         \
            case 6: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 6, PK); break;                         \
            case 7: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 7, PK); break;                         \
            default: tile(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, 8, PK); break;                        \
        }                                                                                                                 \
    }

TILE_FN(tile_32_1_off, 32, 1, 1, false, true, 0)    // q4_0, q5_0, q8_0
TILE_FN(tile_32_1_min, 32, 1, 1, true, false, 0)   // q4_1, q5_1
TILE_FN(tile_32_8_min, 32, 8, 1, true, false, 0)   // q4_K, q5_K
TILE_FN(tile_16_16_off2, 16, 16, 2, false, true, 0)   // q6_K
TILE_FN(tile_16_16_off, 16, 16, 16, false, true, 0)   // q3_K
TILE_FN(tile_16_16_min, 16, 16, 16, true, false, 0)  // q2_K
TILE_FN(tile_rp_q4_0, 32, 1, 1, false, true, 1)      // repacked q4_0
TILE_FN(tile_rp_q4_1, 32, 1, 1, true, false, 1)     // repacked q4_1
TILE_FN(tile_rp_q8_0, 32, 1, 1, false, true, 2)      // repacked q8_0
TILE_FN(tile_rp_q4_K, 32, 8, 1, true, false, 3)     // repacked q4_K
TILE_FN(tile_rp_q6_K, 16, 16, 2, false, true, 4)      // repacked q6_K
TILE_FN(tile_rp_q5_0, 32, 1, 1, false, true, 5)      // repacked q5_0
TILE_FN(tile_rp_q5_1, 32, 1, 1, true, false, 5)     // repacked q5_1
TILE_FN(tile_rp_q5_K, 32, 8, 1, true, false, 6)     // repacked q5_K
TILE_FN(tile_rp_q2_K, 16, 16, 16, true, false, 7)     // repacked q2_K
TILE_FN(tile_rp_q3_K, 16, 16, 16, false, true, 8)     // repacked q3_K
TILE_FN(tile_32_8_off, 32, 8, 1, false, true, 0)    // iq4_xs
TILE_FN(tile_rp_iq4_nl, 32, 1, 1, false, true, 9)    // repacked iq4_nl
TILE_FN(tile_rp_iq4_xs, 32, 8, 1, false, true, 10)   // repacked iq4_xs
TILE_FN(tile_32_8_8_off, 32, 8, 8, false, true, 0)    // iq2_xxs, iq3_xxs, iq3_s, iq1_s

// Repacked weights against one column in the compact layout (gemm.h: ggml_gemm_compact_bytes).
static void kernel_repacked1_avx512(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                                    float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t * p = (const uint8_t *) panel;
    const uint8_t * g = (const uint8_t *) group;
    (void) nc;
    switch (gt->type) {
        case GGML_TYPE_Q4_0: tile_g(K, p, g, dst, ldc, nr, 1, 32, 1, 1, false, true, 1, 1, 1); break;
        case GGML_TYPE_Q4_1: tile_g(K, p, g, dst, ldc, nr, 1, 32, 1, 1, true, false, 1, 1, 1); break;
        case GGML_TYPE_Q8_0: tile_g(K, p, g, dst, ldc, nr, 1, 32, 1, 1, false, true, 1, 2, 1); break;
        case GGML_TYPE_Q4_K: tile_g(K, p, g, dst, ldc, nr, 1, 32, 8, 1, true, false, 1, 3, 1); break;
        case GGML_TYPE_Q6_K: tile_g(K, p, g, dst, ldc, nr, 1, 16, 16, 2, false, true, 1, 4, 1); break;
        case GGML_TYPE_Q5_0: tile_g(K, p, g, dst, ldc, nr, 1, 32, 1, 1, false, true, 1, 5, 1); break;
        case GGML_TYPE_Q5_1: tile_g(K, p, g, dst, ldc, nr, 1, 32, 1, 1, true, false, 1, 5, 1); break;
        case GGML_TYPE_Q5_K: tile_g(K, p, g, dst, ldc, nr, 1, 32, 8, 1, true, false, 1, 6, 1); break;
        case GGML_TYPE_Q2_K: tile_g(K, p, g, dst, ldc, nr, 1, 16, 16, 16, true, false, 1, 7, 1); break;
        case GGML_TYPE_Q3_K: tile_g(K, p, g, dst, ldc, nr, 1, 16, 16, 16, false, true, 1, 8, 1); break;
        case GGML_TYPE_IQ4_NL: tile_g(K, p, g, dst, ldc, nr, 1, 32, 1, 1, false, true, 1, 9, 1); break;
        case GGML_TYPE_IQ4_XS: tile_g(K, p, g, dst, ldc, nr, 1, 32, 8, 1, false, true, 1, 10, 1); break;
        default: break;
    }
}

static void kernel_repacked_avx512(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                                   float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t * p = (const uint8_t *) panel;
    const uint8_t * g = (const uint8_t *) group;
    switch (gt->type) {
        case GGML_TYPE_Q4_0: tile_rp_q4_0(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q4_1: tile_rp_q4_1(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q8_0: tile_rp_q8_0(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q4_K: tile_rp_q4_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q6_K: tile_rp_q6_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q5_0: tile_rp_q5_0(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q5_1: tile_rp_q5_1(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q5_K: tile_rp_q5_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q2_K: tile_rp_q2_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q3_K: tile_rp_q3_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ4_NL: tile_rp_iq4_nl(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ4_XS: tile_rp_iq4_xs(K, p, g, dst, ldc, nr, nc); break;
        default: break; // repack.c makes no other layout
    }
}

static void kernel_avx512(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group, float * dst,
                          int64_t ldc, int nr, int nc) {
    const uint8_t * p = (const uint8_t *) panel;
    const uint8_t * g = (const uint8_t *) group;
    if (gt->qb == 32 && gt->sb == 1) {
        if (gt->has_min)
            tile_32_1_min(K, p, g, dst, ldc, nr, nc);
        else
            tile_32_1_off(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 32 && gt->sb == 8 && gt->sa == 1 && gt->has_min) {
        tile_32_8_min(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 32 && gt->sb == 8 && gt->sa == 1) {
        tile_32_8_off(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 32 && gt->sb == 8 && gt->sa == 8 && !gt->has_min) {
        tile_32_8_8_off(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 16 && gt->sb == 16 && gt->sa == 2 && !gt->has_min) {
        tile_16_16_off2(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 16 && gt->sb == 16 && gt->sa == 16) {
        if (gt->has_min)
            tile_16_16_min(K, p, g, dst, ldc, nr, nc);
        else
            tile_16_16_off(K, p, g, dst, ldc, nr, nc);
    } else {
        ggml_gemm_kernel_generic(gt, K, panel, group, dst, ldc, nr, nc);
    }
}

// ---- panel packers ----
//
// A block's bytes of 16 rows are transposed in 4-byte units so that one vector holds the same
// 4 bytes of every row; nibble and bit planes are then split with shifts and masks on the
// transposed vectors. The fast packers take whole panels (the last, partial panel of a matrix
// goes through the portable packer: same panel bytes). Row r's unit u is at
// base + r*stride + u*unit_bytes; per-row scalars are fetched with one gather.

// The hardware prefetchers do not follow 16 interleaved row streams, and token generation
// reads every weight once, from DRAM: while a panel is packed, the next one (the following 16
// rows, contiguous in memory for a weight matrix) is prefetched into L2, a share per unit.
static inline void prefetch_next_panel(const uint8_t * base, size_t stride, int64_t u, int64_t n_units) {
    const uint8_t * next = base + GGML_GEMM_MR * stride;
    const int64_t n_lines = (int64_t) (GGML_GEMM_MR * stride + 63) / 64;
    for (int64_t l = u * n_lines / n_units; l < (u + 1) * n_lines / n_units; l++) {
        _mm_prefetch((const char *) (next + 64 * l), _MM_HINT_T1);
    }
}

// t[j] = dword j of the 16 bytes at base + r*stride + off, for rows r = 0..15 in lane order.
static inline void transpose_16x4(const uint8_t * base, size_t stride, size_t off, __m512i t[4]) {
    __m512i z[4];
    for (int i = 0; i < 4; i++) {
        // lane L holds row i + 4L, so after the in-lane 4x4 transpose lane L holds rows 4L..4L+3
        const uint8_t * p = base + off + (size_t) i * stride;
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *) p));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (p + 4 * stride)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (p + 8 * stride)), 2);
        z[i] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (p + 12 * stride)), 3);
    }
    const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
    t[0] = _mm512_unpacklo_epi64(a0, a2);
    t[1] = _mm512_unpackhi_epi64(a0, a2);
    t[2] = _mm512_unpacklo_epi64(a1, a3);
    t[3] = _mm512_unpackhi_epi64(a1, a3);
}

// The 4 bytes at base + r*stride + off of each row (vidx = r*stride).
static inline __m512i gather_u32(const uint8_t * base, __m512i vidx, size_t off) {
    return _mm512_i32gather_epi32(vidx, (const void *) (base + off), 1);
}
// Low / high fp16 of such words as floats.
static inline __m512 f16_lo(__m512i w) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w)); }
static inline __m512 f16_hi(__m512i w) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16))); }

// Whole panels only, with row offsets that fit the gather's int32 indices.
static inline bool pack_fast_ok(int nr, size_t stride) {
    return nr == GGML_GEMM_MR && stride <= (size_t) INT32_MAX / GGML_GEMM_MR;
}

static inline __m512i row_offsets(size_t stride) {
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32((int) stride));
}

static inline void store_nibbles(uint8_t * pb, const __m512i t[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int g = 0; g < 4; g++) {
        _mm512_storeu_si512((void *) (pb + 64 * g), _mm512_and_si512(t[g], m4));
        _mm512_storeu_si512((void *) (pb + 64 * (g + 4)), _mm512_and_si512(_mm512_srli_epi32(t[g], 4), m4));
    }
}

// q4_0 / q4_1 / q8_0: one 32-element block per unit.
// A q8_0 block of 16 rows (block at byte uo of each row) as 8 level vectors q + 128 at o: the
// layout of a panel block's levels and of a repacked block's.
static inline void store_q8_0_levels(const uint8_t * base, size_t row_stride, size_t uo, uint8_t * o) {
    const __m512i bias = _mm512_set1_epi8((char) 0x80);
    __m512i t[4];
    for (int h = 0; h < 2; h++) {
        transpose_16x4(base, row_stride, uo + offsetof(block_q8_0, qs) + 16 * h, t);
        for (int g = 0; g < 4; g++) _mm512_storeu_si512((void *) (o + 64 * (4 * h + g)), _mm512_xor_si512(t[g], bias));
    }
}

static void pack_legacy(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K,
                        void * panel) {
    if (!pack_fast_ok(nr, row_stride)) {
        ggml_gemm_pack_generic(gt, rows, row_stride, nr, K, panel);
        return;
    }
    const size_t ub = ggml_type_size(gt->type), pbb = ggml_gemm_panel_block_bytes(gt);
    const uint8_t * base = (const uint8_t *) rows;
    const __m512i vidx = row_offsets(row_stride);
    for (int64_t u = 0; u < K / 32; u++) {
        uint8_t * pb = (uint8_t *) panel + (size_t) u * pbb;
        const size_t uo = (size_t) u * ub;
        prefetch_next_panel(base, row_stride, u, K / 32);
        __m512i t[4];
        switch (gt->type) {
            case GGML_TYPE_Q4_0:
                transpose_16x4(base, row_stride, uo + offsetof(block_q4_0, qs), t);
                store_nibbles(pb, t);
                _mm512_storeu_ps(pb + 32 * 16, f16_lo(gather_u32(base, vidx, uo + offsetof(block_q4_0, d))));
                break;
            case GGML_TYPE_Q4_1: {
                transpose_16x4(base, row_stride, uo + offsetof(block_q4_1, qs), t);
                store_nibbles(pb, t);
                const __m512i dm = gather_u32(base, vidx, uo + offsetof(block_q4_1, d)); // d low, m high
                _mm512_storeu_ps(pb + 32 * 16, f16_lo(dm));
                _mm512_storeu_ps(pb + 32 * 16 + 64, f16_hi(dm));
            } break;
            default: // q8_0
                store_q8_0_levels(base, row_stride, uo, pb);
                _mm512_storeu_ps(pb + 32 * 16, f16_lo(gather_u32(base, vidx, uo + offsetof(block_q8_0, d))));
                break;
        }
    }
}

// q4_0, q4_1, q8_0 rows straight in the repacked layout (repack.h), no panel in between (the copy
// into fresh pages is most of a load). Per block: q8_0 the 16 rows' levels q + 128 as the panel
// has them; q4_0 / q4_1 the transposed bytes as they are, since dword j of a block holds levels
// 4j..4j+3 in its low nibbles and 16+4j.. in its high ones, which is the nibble layout; then d
// (and m) as stored.
static bool repack_rows_legacy(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * out) {
    if (!pack_fast_ok(GGML_GEMM_MR, row_stride)) return false;
    const bool q8 = gt->type == GGML_TYPE_Q8_0, q41 = gt->type == GGML_TYPE_Q4_1;
    if (!q8 && !q41 && gt->type != GGML_TYPE_Q4_0) return false;
    const size_t lvb = q8 ? 16 * 32 : 16 * 32 / 2, ub = ggml_type_size(gt->type);
    const size_t qs_off = q41 ? offsetof(block_q4_1, qs) : offsetof(block_q4_0, qs);
    const uint8_t * base = (const uint8_t *) rows;
    const __m512i vidx = row_offsets(row_stride);
    for (int64_t u = 0; u < K / 32; u++) {
        uint8_t * o = (uint8_t *) out + (size_t) u * (lvb + (q41 ? 64 : 32));
        const size_t uo = (size_t) u * ub;
        prefetch_next_panel(base, row_stride, u, K / 32);
        if (q8) {
            store_q8_0_levels(base, row_stride, uo, o);
        } else {
            __m512i t[4];
            transpose_16x4(base, row_stride, uo + qs_off, t);
            for (int g = 0; g < 4; g++) _mm512_storeu_si512((void *) (o + 64 * g), t[g]);
        }
        const __m512i dm = gather_u32(base, vidx, uo); // d opens every block (q4_1: then m)
        _mm256_storeu_si256((__m256i *) (o + lvb), _mm512_cvtepi32_epi16(dm));
        if (q41) _mm256_storeu_si256((__m256i *) (o + lvb + 32), _mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
    }
    return true;
}

// q4_K: 8 blocks of 32 per unit; chunk c of qs holds block 2c (low nibbles) and 2c+1 (high).
static void pack_q4_K(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K, void * panel) {
    if (!pack_fast_ok(nr, row_stride)) {
        ggml_gemm_pack_generic(gt, rows, row_stride, nr, K, panel);
        return;
    }
    const size_t pbb = ggml_gemm_panel_block_bytes(gt);
    const uint8_t * base = (const uint8_t *) rows;
    const __m512i vidx = row_offsets(row_stride);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int64_t u = 0; u < K / QK_K; u++) {
        uint8_t * pu = (uint8_t *) panel + (size_t) u * 8 * pbb;
        const size_t uo = (size_t) u * sizeof(block_q4_K);
        prefetch_next_panel(base, row_stride, u, K / QK_K);
        for (int c = 0; c < 4; c++) {
            uint8_t *b0 = pu + (size_t) (2 * c) * pbb, *b1 = b0 + pbb;
            for (int h = 0; h < 2; h++) {
                __m512i t[4];
                transpose_16x4(base, row_stride, uo + offsetof(block_q4_K, qs) + 32 * c + 16 * h, t);
                for (int g = 0; g < 4; g++) {
                    _mm512_storeu_si512((void *) (b0 + 64 * (4 * h + g)), _mm512_and_si512(t[g], m4));
                    _mm512_storeu_si512((void *) (b1 + 64 * (4 * h + g)), _mm512_and_si512(_mm512_srli_epi32(t[g], 4), m4));
                }
            }
        }
        const __m512i dd = gather_u32(base, vidx, uo + offsetof(block_q4_K, d)); // d low, dmin high
        const __m512 d = f16_lo(dd), ndmin = _mm512_sub_ps(_mm512_setzero_ps(), f16_hi(dd));
        // the 12 scale bytes of the 16 rows as words w0, w1, w2 (ggml_quants_k4_scale_words, 16 rows at once)
        __m512i w[4];
        transpose_16x4(base, row_stride, uo + offsetof(block_q4_K, scales), w);
        const __m512i lo6 = _mm512_set1_epi8(0x3F), lo4 = _mm512_set1_epi8(0x0F), lo2 = _mm512_set1_epi8(0x03);
        const __m512i sc_lo = _mm512_and_si512(w[0], lo6);
        const __m512i mn_lo = _mm512_and_si512(w[1], lo6);
        const __m512i sc_hi =
            _mm512_or_si512(_mm512_and_si512(w[2], lo4), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w[0], 6), lo2), 4));
        const __m512i mn_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w[2], 4), lo4),
                                              _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w[1], 6), lo2), 4));
        const __m512i byte = _mm512_set1_epi32(0xFF);
        for (int j = 0; j < 8; j++) {
            uint8_t * pb = pu + (size_t) j * pbb;
            const int sh = 8 * (j % 4);
            const __m512i sc = _mm512_and_si512(_mm512_srli_epi32(j < 4 ? sc_lo : sc_hi, sh), byte);
            const __m512i mn = _mm512_and_si512(_mm512_srli_epi32(j < 4 ? mn_lo : mn_hi, sh), byte);
            _mm512_storeu_ps(pb + 32 * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
            _mm512_storeu_ps(pb + 32 * 16 + 64, _mm512_mul_ps(ndmin, _mm512_cvtepi32_ps(mn)));
        }
    }
}

// q6_K: 16 blocks of 16 per unit. Block j: half n = j/8, quarter quad = (j%8)/2, l = 16*(j%2) + 0..15;
// low 4 bits in ql[64n + l + 32*(quad&1)] (high nibble for quad >= 2), top 2 in qh[32n + l] >> 2*quad.
static void pack_q6_K(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K, void * panel) {
    if (!pack_fast_ok(nr, row_stride)) {
        ggml_gemm_pack_generic(gt, rows, row_stride, nr, K, panel);
        return;
    }
    const size_t pbb = ggml_gemm_panel_block_bytes(gt);
    const uint8_t * base = (const uint8_t *) rows;
    const __m512i vidx = row_offsets(row_stride);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
    for (int64_t u = 0; u < K / QK_K; u++) {
        uint8_t * pu = (uint8_t *) panel + (size_t) u * 16 * pbb;
        const size_t uo = (size_t) u * sizeof(block_q6_K);
        prefetch_next_panel(base, row_stride, u, K / QK_K);
        for (int n = 0; n < 2; n++) {
            __m512i ql[16], qh[8];
            for (int i = 0; i < 4; i++)
                transpose_16x4(base, row_stride, uo + offsetof(block_q6_K, ql) + 64 * n + 16 * i, ql + 4 * i);
            for (int i = 0; i < 2; i++)
                transpose_16x4(base, row_stride, uo + offsetof(block_q6_K, qh) + 32 * n + 16 * i, qh + 4 * i);
            for (int quad = 0; quad < 4; quad++) {
                for (int half = 0; half < 2; half++) {
                    uint8_t * pb = pu + (size_t) (8 * n + 2 * quad + half) * pbb;
                    for (int g = 0; g < 4; g++) {
                        const int k = 4 * half + g; // dword of l
                        const __m512i lo4 = quad >= 2 ? _mm512_srli_epi32(ql[8 * (quad & 1) + k], 4) : ql[8 * (quad & 1) + k];
                        const __m512i hi2 = _mm512_and_si512(_mm512_srli_epi32(qh[k], 2 * quad), m2);
                        _mm512_storeu_si512((void *) (pb + 64 * g),
                                            _mm512_or_si512(_mm512_and_si512(lo4, m4), _mm512_slli_epi32(hi2, 4)));
                    }
                }
            }
        }
        // d sits in the last 2 bytes of the block: gather the word that ends with it
        const __m512 d = f16_hi(gather_u32(base, vidx, uo + offsetof(block_q6_K, d) - 2));
        // scales: 16 int8 per row, transposed like the levels (t[j] byte e = scale 4j+e of the row)
        __m512i st[4];
        transpose_16x4(base, row_stride, uo + offsetof(block_q6_K, scales), st);
        for (int j = 0; j < 16; j++) {
            const __m512i sj = _mm512_srai_epi32(_mm512_slli_epi32(st[j / 4], 24 - 8 * (j % 4)), 24); // sign-extended byte
            _mm512_storeu_ps(pu + (size_t) j * pbb + 16 * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sj)));
        }
    }
}

// ---- one column straight from the weight rows (token generation) ----
//
// Integer block sums first, row by row in memory order: 4 blocks of a row per vpdpbusd pair
// (nibble types: low nibbles against elements 0-15 of each block, high against 16-31, one
// block per 128-bit lane), folded 4 rows at a time into [block][16 rows] sums. Then, block by
// block, the 1-column tile's float arithmetic on those sums (same operations, same order, same
// bits). The 16 rows are read as one stream in memory order (they are contiguous in a weight
// matrix) and the next 16 are prefetched meanwhile. gv: bytes (nibble types: the blocks'
// elements 0-15 then, after them all, 16-31; q8_0: the blocks' 32 elements), padded to 4
// blocks, then per block da, s and corr, then scratch for the row sums.

static inline size_t gemv_nbp(int64_t K) { return (size_t) GGML_PAD(K / 32, 4); }

static void gemv_prep_avx512(const struct ggml_gemm_traits * gt, const void * qrow, const void * group, int64_t K, void * gv) {
    const int64_t nb = K / 32;
    const size_t nbp = gemv_nbp(K), sbb = ggml_gemm_group_sblock_bytes(gt);
    uint8_t * bytes = (uint8_t *) gv;
    float *da = (float *) (bytes + 32 * nbp), *sv = da + nbp;
    int32_t * corr = (int32_t *) (sv + nbp);
    memset(gv, 0, 32 * nbp + 12 * nbp);
    const size_t ub = ggml_type_size(gt->act_type);
    const size_t qs_off = gt->act_type == GGML_TYPE_Q8_1 ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
    const bool nib = gt->type != GGML_TYPE_Q8_0;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t * q = (const uint8_t *) qrow + (size_t) b * ub + qs_off;
        if (nib) {
            memcpy(bytes + 16 * b, q, 16);
            memcpy(bytes + 16 * nbp + 16 * b, q + 16, 16);
        } else {
            memcpy(bytes + 32 * b, q, 32);
        }
        const uint8_t * sbp = (const uint8_t *) group + (size_t) b * sbb;
        memcpy(&da[b], sbp, 4);                      // column 0's scale
        memcpy(&corr[b], sbp + 32 + 32 * 8, 4);        // column 0's corr
        memcpy(&sv[b], sbp + 32 + 32 * 8 + 32, 4);     // column 0's s
    }
}

// The 4 int32 of each 128-bit lane of x[0..3] summed: lane L of the result holds
// [x0, x1, x2, x3] totals of 128-bit lane L (the rows of a quad, block L of a group).
static inline __m512i fold_4x4(__m512i x0, __m512i x1, __m512i x2, __m512i x3) {
    const __m512i b0 = _mm512_add_epi32(_mm512_unpacklo_epi32(x0, x1), _mm512_unpackhi_epi32(x0, x1));
    const __m512i b1 = _mm512_add_epi32(_mm512_unpacklo_epi32(x2, x3), _mm512_unpackhi_epi32(x2, x3));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(b0, b1), _mm512_unpackhi_epi64(b0, b1));
}

static inline __attribute__((always_inline)) void gemv_impl(const struct ggml_gemm_traits * gt, const void * rows, size_t stride,
                                                            int64_t K, void * gv, float * dst, const enum ggml_type T) {
    const int64_t nb = K / 32;
    const size_t nbp = gemv_nbp(K);
    const int ng = (int) (nbp / 4);
    uint8_t * bytes = (uint8_t *) gv;
    const float *da = (const float *) (bytes + 32 * nbp), *sv = da + nbp;
    const int32_t * corr = (const int32_t *) (sv + nbp);
    __m512i * vs = (__m512i *) (bytes + GGML_PAD(32 * nbp + 12 * nbp, 64)); // [16 rows][ng]
    int32_t * isum = (int32_t *) (vs + GGML_GEMM_MR * ng);                 // [nbp][16 rows]
    uint32_t * dm = (uint32_t *) (isum + GGML_GEMM_MR * nbp);              // [nbp][16 rows]: a block's first word
    const size_t ub = T == GGML_TYPE_Q4_0 ? sizeof(block_q4_0) : T == GGML_TYPE_Q4_1 ? sizeof(block_q4_1) : sizeof(block_q8_0);
    const size_t qs_off = T == GGML_TYPE_Q4_0 ? offsetof(block_q4_0, qs)
        : T == GGML_TYPE_Q4_1                 ? offsetof(block_q4_1, qs)
                                              : offsetof(block_q8_0, qs);
    const uint8_t * base = (const uint8_t *) rows;
    const __m512i m4 = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8((char) 0x80);
    const __m512i fold_lo = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    const __m512i fold_hi = _mm512_add_epi32(fold_lo, _mm512_set1_epi32(4));
    const int64_t n_lines = (int64_t) (GGML_GEMM_MR * stride + 63) / 64;
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        const uint8_t * row = base + (size_t) r * stride + qs_off;
        // the next panel into L2, a sixteenth per row (the stream itself passes through L1 once)
        for (int64_t l = r * n_lines / GGML_GEMM_MR; l < (r + 1) * n_lines / GGML_GEMM_MR; l++) {
            _mm_prefetch((const char *) (base + GGML_GEMM_MR * stride + 64 * l), _MM_HINT_T1);
        }
        // the scales (q4_1: and minimums) while the row is in L1: d is each block's first word
        for (int64_t b = 0; b < nb; b++) memcpy(&dm[b * GGML_GEMM_MR + r], row - qs_off + b * ub, 4);
        for (int g = 0; g < ng; g++) {
            const int64_t b0 = 4 * g;
            if (T == GGML_TYPE_Q8_0) {
                __m512i x[2];
                for (int h = 0; h < 2; h++) {
                    const int64_t b = b0 + 2 * h;
                    const __m256i lo = b < nb ? _mm256_loadu_si256((const __m256i *) (row + b * ub)) : _mm256_setzero_si256();
                    const __m256i hi =
                        b + 1 < nb ? _mm256_loadu_si256((const __m256i *) (row + (b + 1) * ub)) : _mm256_setzero_si256();
                    x[h] = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), bias);
                }
                // blocks past nb have level 128 against zero activations: no contribution
                const __m512i v0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), x[0], _mm512_loadu_si512(bytes + 32 * b0));
                const __m512i v1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), x[1], _mm512_loadu_si512(bytes + 32 * b0 + 64));
                vs[r * ng + g] =
                    _mm512_add_epi32(_mm512_permutex2var_epi32(v0, fold_lo, v1), _mm512_permutex2var_epi32(v0, fold_hi, v1));
            } else {
                __m512i v;
                if (b0 + 3 < nb) {
                    v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *) (row + b0 * ub)));
                    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (row + (b0 + 1) * ub)), 1);
                    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (row + (b0 + 2) * ub)), 2);
                    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (row + (b0 + 3) * ub)), 3);
                } else {
                    uint8_t tmp[64] = { 0 };
                    for (int64_t b = b0; b < nb; b++) memcpy(tmp + 16 * (b - b0), row + b * ub, 16);
                    v = _mm512_loadu_si512(tmp);
                }
                const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                const __m512i x = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(bytes + 16 * b0));
                vs[r * ng + g] = _mm512_dpbusd_epi32(x, hi, _mm512_loadu_si512(bytes + 16 * nbp + 16 * b0));
            }
        }
    }
    for (int g = 0; g < ng; g++) {
        for (int p = 0; p < 4; p++) {
            const __m512i f =
                fold_4x4(vs[(4 * p) * ng + g], vs[(4 * p + 1) * ng + g], vs[(4 * p + 2) * ng + g], vs[(4 * p + 3) * ng + g]);
            _mm_storeu_si128((__m128i *) &isum[(4 * g + 0) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 0));
            _mm_storeu_si128((__m128i *) &isum[(4 * g + 1) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 1));
            _mm_storeu_si128((__m128i *) &isum[(4 * g + 2) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 2));
            _mm_storeu_si128((__m128i *) &isum[(4 * g + 3) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 3));
        }
    }
    // the 1-column tile's float steps, block by block
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m512i ia = _mm512_loadu_si512(isum + b * GGML_GEMM_MR);
        if (T != GGML_TYPE_Q4_1) ia = _mm512_add_epi32(ia, _mm512_set1_epi32(corr[b]));
        const __m512i w = _mm512_loadu_si512(dm + b * GGML_GEMM_MR); // d (q4_1: and m) of 16 rows
        const __m512 dd = _mm512_mul_ps(f16_lo(w), _mm512_set1_ps(da[b]));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia), dd, acc);
        if (T == GGML_TYPE_Q4_1) acc = _mm512_fmadd_ps(f16_hi(w), _mm512_set1_ps(sv[b]), acc);
    }
    _mm512_storeu_ps(dst, acc);
}

static void gemv_avx512(const struct ggml_gemm_traits * gt, const void * rows, size_t stride, int64_t K, void * gv, float * dst) {
    switch (gt->type) {
        case GGML_TYPE_Q4_0: gemv_impl(gt, rows, stride, K, gv, dst, GGML_TYPE_Q4_0); break;
        case GGML_TYPE_Q4_1: gemv_impl(gt, rows, stride, K, gv, dst, GGML_TYPE_Q4_1); break;
        default: gemv_impl(gt, rows, stride, K, gv, dst, GGML_TYPE_Q8_0); break;
    }
}

// q4_K, one column: as gemv_impl, per superblock of a row two loads give the 8 sub-blocks'
// levels (chunk c of qs: sub-block 2c in the low nibbles, 2c+1 in the high), 4 vpdpbusd against
// the column's values rearranged to match, folded to 4 partial lanes per sub-block; the rows'
// scale bytes are kept and decoded for 16 rows at once as the packer does, and the float steps
// are the 1-column tile's (per sub-block t = isum * d, the min's fma, then da * t).
// gv: per superblock 256 rearranged values ([sb0|sb2], [sb1|sb3], [sb4|sb6], [sb5|sb7]), then
// per superblock the 8 sub-blocks' da and s, then scratch.

// Sub-block held in 128-bit lane L of the folded vector h (0: sub-blocks 0-3, 1: 4-7).
static const int q4k_lane_sb[2][4] = { { 0, 2, 1, 3 }, { 4, 6, 5, 7 } };

static void gemv_prep_q4_K(const struct ggml_gemm_traits * gt, const void * qrow, const void * group, int64_t K, void * gv) {
    const int64_t nsb = K / QK_K;
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    uint8_t * bytes = (uint8_t *) gv;
    float * sc = (float *) (bytes + (size_t) K); // per superblock: da[8], s[8]
    for (int64_t i = 0; i < nsb; i++) {
        const block_q8_1 * b = (const block_q8_1 *) qrow + 8 * i;
        uint8_t * o = bytes + (size_t) i * QK_K;
        static const int order[8] = { 0, 2, 1, 3, 4, 6, 5, 7 };
        for (int k = 0; k < 8; k++) memcpy(o + 32 * k, b[order[k]].qs, 32);
        const uint8_t * sbp = (const uint8_t *) group + (size_t) i * sbb;
        for (int j = 0; j < 8; j++) {
            memcpy(&sc[16 * i + j], sbp + 32 * j, 4);                                         // column 0's da
            memcpy(&sc[16 * i + 8 + j], sbp + 32 * 8 + (size_t) j * gbb + 32 * 8 + 32, 4);         // its s
        }
    }
}

static void gemv_q4_K(const struct ggml_gemm_traits * gt, const void * rows, size_t stride, int64_t K, void * gv, float * dst) {
    (void) gt;
    const int64_t nsb = K / QK_K;
    uint8_t * bytes = (uint8_t *) gv;
    const float * sc = (const float *) (bytes + (size_t) K);
    uint8_t * hdr = bytes + GGML_PAD((size_t) K + (size_t) nsb * 16 * sizeof(float), 64); // [16 rows][nsb][16 bytes]
    int32_t * isum = (int32_t *) (hdr + (size_t) GGML_GEMM_MR * nsb * 16);                 // [nsb][8 lanes][16 rows]
    const uint8_t * base = (const uint8_t *) rows;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i fold_lo = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    const __m512i fold_hi = _mm512_add_epi32(fold_lo, _mm512_set1_epi32(4));
    const int64_t n_lines = (int64_t) (GGML_GEMM_MR * stride + 63) / 64;
    // four rows at a time, folded at once: the partial sums never leave the registers
    for (int p = 0; p < 4; p++) {
        // the next panel into L2, a quarter per row quad (measured: 1.5x over the hardware
        // prefetchers alone, 1.2x over prefetching into L1)
        for (int64_t l = p * n_lines / 4; l < (p + 1) * n_lines / 4; l++) {
            _mm_prefetch((const char *) (base + GGML_GEMM_MR * stride + 64 * l), _MM_HINT_T1);
        }
        for (int64_t i = 0; i < nsb; i++) {
            const uint8_t * a = bytes + (size_t) i * QK_K;
            __m512i w[4][2];
            for (int q = 0; q < 4; q++) {
                const int r = 4 * p + q;
                const block_q4_K * b = (const block_q4_K *) (base + (size_t) r * stride) + i;
                memcpy(hdr + ((size_t) r * nsb + i) * 16, b, 16); // d, dmin, scales
                for (int h = 0; h < 2; h++) {
                    const __m512i qv = _mm512_loadu_si512(b->qs + 64 * h);
                    const __m512i lo = _mm512_and_si512(qv, m4), hi = _mm512_and_si512(_mm512_srli_epi16(qv, 4), m4);
                    const __m512i v0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(a + 128 * h));
                    const __m512i v1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, _mm512_loadu_si512(a + 128 * h + 64));
                    w[q][h] =
                        _mm512_add_epi32(_mm512_permutex2var_epi32(v0, fold_lo, v1), _mm512_permutex2var_epi32(v0, fold_hi, v1));
                }
            }
            for (int h = 0; h < 2; h++) {
                const __m512i f = fold_4x4(w[0][h], w[1][h], w[2][h], w[3][h]);
                // the lane index of the extract must be a constant (unoptimised builds do not unroll)
                _mm_storeu_si128((__m128i *) &isum[(i * 8 + q4k_lane_sb[h][0]) * GGML_GEMM_MR + 4 * p],
                                 _mm512_extracti32x4_epi32(f, 0));
                _mm_storeu_si128((__m128i *) &isum[(i * 8 + q4k_lane_sb[h][1]) * GGML_GEMM_MR + 4 * p],
                                 _mm512_extracti32x4_epi32(f, 1));
                _mm_storeu_si128((__m128i *) &isum[(i * 8 + q4k_lane_sb[h][2]) * GGML_GEMM_MR + 4 * p],
                                 _mm512_extracti32x4_epi32(f, 2));
                _mm_storeu_si128((__m128i *) &isum[(i * 8 + q4k_lane_sb[h][3]) * GGML_GEMM_MR + 4 * p],
                                 _mm512_extracti32x4_epi32(f, 3));
            }
        }
    }
    // the 1-column tile's float steps, with the packer's scale decoding
    const __m512i vidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int) (nsb * 16)));
    const __m512i lo6 = _mm512_set1_epi8(0x3F), lo4 = _mm512_set1_epi8(0x0F), lo2 = _mm512_set1_epi8(0x03);
    const __m512i byte = _mm512_set1_epi32(0xFF);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * hb = hdr + (size_t) i * 16;
        const __m512i w0 = gather_u32(hb, vidx, 0), w1 = gather_u32(hb, vidx, 4);
        const __m512i w2 = gather_u32(hb, vidx, 8), w3 = gather_u32(hb, vidx, 12);
        const __m512 d = f16_lo(w0), ndmin = _mm512_sub_ps(_mm512_setzero_ps(), f16_hi(w0));
        const __m512i sc_lo = _mm512_and_si512(w1, lo6);
        const __m512i mn_lo = _mm512_and_si512(w2, lo6);
        const __m512i sc_hi =
            _mm512_or_si512(_mm512_and_si512(w3, lo4), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w1, 6), lo2), 4));
        const __m512i mn_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w3, 4), lo4),
                                              _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w2, 6), lo2), 4));
        for (int j = 0; j < 8; j++) {
            const int sh = 8 * (j % 4);
            const __m512i scj = _mm512_and_si512(_mm512_srli_epi32(j < 4 ? sc_lo : sc_hi, sh), byte);
            const __m512i mnj = _mm512_and_si512(_mm512_srli_epi32(j < 4 ? mn_lo : mn_hi, sh), byte);
            const __m512i ia = _mm512_loadu_si512(isum + (i * 8 + j) * GGML_GEMM_MR);
            const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(ia), _mm512_mul_ps(d, _mm512_cvtepi32_ps(scj)));
            acc = _mm512_fmadd_ps(_mm512_mul_ps(ndmin, _mm512_cvtepi32_ps(mnj)), _mm512_set1_ps(sc[16 * i + 8 + j]), acc);
            acc = _mm512_fmadd_ps(t, _mm512_set1_ps(sc[16 * i + j]), acc);
        }
    }
    _mm512_storeu_ps(dst, acc);
}

// q6_K, one column: per row and half n of a superblock one 64-byte load of ql and the 32 qh
// bytes in both halves give 128 levels in element order (as the q6_K dot kernel builds them),
// so the column's values are used as stored; 2 vpdpbusd per half leave 4 partial lanes per
// 16-element sub-block. Scales: the rows' 16 int8 and d kept, decoded for 16 rows at once.
// gv: the column's values, then per superblock the 8 activation scales da and the 16 sub-blocks'
// corr, then scratch.

static void gemv_prep_q6_K(const struct ggml_gemm_traits * gt, const void * qrow, const void * group, int64_t K, void * gv) {
    const int64_t nsb = K / QK_K;
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    uint8_t * bytes = (uint8_t *) gv;
    float * sc = (float *) (bytes + (size_t) K); // per superblock: da[8], corr[16] (int32)
    for (int64_t i = 0; i < nsb; i++) {
        const block_q8_1 * b = (const block_q8_1 *) qrow + 8 * i;
        for (int k = 0; k < 8; k++) memcpy(bytes + (size_t) i * QK_K + 32 * k, b[k].qs, 32);
        const uint8_t * sbp = (const uint8_t *) group + (size_t) i * sbb;
        for (int k = 0; k < 8; k++) memcpy(&sc[24 * i + k], sbp + 32 * k, 4);
        for (int j = 0; j < 16; j++) memcpy(&sc[24 * i + 8 + j], sbp + 32 * 8 + (size_t) j * gbb + 16 * 8, 4);
    }
}

static void gemv_q6_K(const struct ggml_gemm_traits * gt, const void * rows, size_t stride, int64_t K, void * gv, float * dst) {
    (void) gt;
    const int64_t nsb = K / QK_K;
    uint8_t * bytes = (uint8_t *) gv;
    const float * sc = (const float *) (bytes + (size_t) K);
    uint8_t * hdr = bytes + GGML_PAD((size_t) K + (size_t) nsb * 24 * sizeof(float), 64); // [16 rows][nsb][32 bytes]
    __m512i * vs = (__m512i *) (hdr + (size_t) GGML_GEMM_MR * nsb * 32);                  // [16 rows][nsb][4]
    int32_t * isum = (int32_t *) (vs + (size_t) GGML_GEMM_MR * nsb * 4);                   // [nsb][16][16 rows]
    const uint8_t * base = (const uint8_t *) rows;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    // per-half shifts that bring qh bit pairs (0-1 | 2-3) or (4-5 | 6-7) to bits 4-5
    const __m512i sh01 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i sh23 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const int64_t n_lines = (int64_t) (GGML_GEMM_MR * stride + 63) / 64;
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        const uint8_t * row = base + (size_t) r * stride;
        for (int64_t l = r * n_lines / GGML_GEMM_MR; l < (r + 1) * n_lines / GGML_GEMM_MR; l++) {
            _mm_prefetch((const char *) (base + GGML_GEMM_MR * stride + 64 * l), _MM_HINT_T1);
        }
        for (int64_t i = 0; i < nsb; i++) {
            const block_q6_K * b = (const block_q6_K *) row + i;
            uint8_t * h = hdr + ((size_t) r * nsb + i) * 32;
            memcpy(h, b->scales, 16);
            memcpy(h + 16, &b->d, 2);
            const uint8_t * a = bytes + (size_t) i * QK_K;
            for (int n = 0; n < 2; n++) {
                const __m512i ql = _mm512_loadu_si512(b->ql + 64 * n);
                const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) (b->qh + 32 * n)));
                // 16-bit shifts: bits that cross into the neighbour byte land outside the 0x30 mask
                const __m512i v01 = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(_mm512_sllv_epi16(qh, sh01), m30));
                const __m512i v23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                                    _mm512_and_si512(_mm512_srlv_epi16(qh, sh23), m30));
                vs[((size_t) r * nsb + i) * 4 + 2 * n] =
                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), v01, _mm512_loadu_si512(a + 128 * n));
                vs[((size_t) r * nsb + i) * 4 + 2 * n + 1] =
                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), v23, _mm512_loadu_si512(a + 128 * n + 64));
            }
        }
    }
    for (int64_t i = 0; i < nsb; i++) {
        for (int k = 0; k < 4; k++) { // vector k holds sub-blocks 4k..4k+3, one per 128-bit lane
            for (int p = 0; p < 4; p++) {
                const __m512i f =
                    fold_4x4(vs[((size_t) (4 * p) * nsb + i) * 4 + k], vs[((size_t) (4 * p + 1) * nsb + i) * 4 + k],
                             vs[((size_t) (4 * p + 2) * nsb + i) * 4 + k], vs[((size_t) (4 * p + 3) * nsb + i) * 4 + k]);
                _mm_storeu_si128((__m128i *) &isum[(i * 16 + 4 * k + 0) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 0));
                _mm_storeu_si128((__m128i *) &isum[(i * 16 + 4 * k + 1) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 1));
                _mm_storeu_si128((__m128i *) &isum[(i * 16 + 4 * k + 2) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 2));
                _mm_storeu_si128((__m128i *) &isum[(i * 16 + 4 * k + 3) * GGML_GEMM_MR + 4 * p], _mm512_extracti32x4_epi32(f, 3));
            }
        }
    }
    // the 1-column tile's float steps, with the packer's scale decoding
    __m512 acc = _mm512_setzero_ps();
    const __m512i vidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int) (nsb * 32)));
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * hb = hdr + (size_t) i * 32;
        __m512i st[4];
        transpose_16x4(hb, (size_t) nsb * 32, 0, st);
        const __m512 d = f16_lo(gather_u32(hb, vidx, 16));
        __m512 t = _mm512_setzero_ps();
        for (int j = 0; j < 16; j++) {
            const __m512i sj = _mm512_srai_epi32(_mm512_slli_epi32(st[j / 4], 24 - 8 * (j % 4)), 24); // sign-extended byte
            const __m512i ia = _mm512_add_epi32(_mm512_loadu_si512(isum + (i * 16 + j) * GGML_GEMM_MR),
                                                _mm512_set1_epi32(((const int32_t *) sc)[24 * i + 8 + j]));
            const __m512 dj = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sj));
            // two 16-element sub-blocks per activation scale (gemm.h: the float order)
            t = j % 2 == 0 ? _mm512_mul_ps(_mm512_cvtepi32_ps(ia), dj) : _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia), dj, t);
            if (j % 2 == 1) acc = _mm512_fmadd_ps(t, _mm512_set1_ps(sc[24 * i + j / 2]), acc);
        }
    }
    _mm512_storeu_ps(dst, acc);
}

void ggml_gemm_init_avx512(struct ggml_gemm_traits * t) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (t[i].qb == 0) continue;
        t[i].kernel = kernel_avx512;
        // act_group stays the AVX2 set's (the table is built on it): the same group bytes, and
        // filling groups is a small share of a prompt matmul
        // mul_mat takes the GEMM path for every N or for none (a column's bits must not depend
        // on its batch, nor on whether its weights were repacked): q5_0, q5_1 and q5_K have
        // repacked layouts but no fast packer or gemv yet (stored weights: the portable packer,
        // slow, but only without repacking); q2_K and q3_K one column through gemv_repacked.
        t[i].accelerated = i == GGML_TYPE_Q4_0 || i == GGML_TYPE_Q4_1 || i == GGML_TYPE_Q8_0 || i == GGML_TYPE_Q4_K ||
            i == GGML_TYPE_Q6_K || i == GGML_TYPE_Q5_0 || i == GGML_TYPE_Q5_1 || i == GGML_TYPE_Q5_K || i == GGML_TYPE_Q2_K ||
            i == GGML_TYPE_Q3_K || i == GGML_TYPE_IQ4_NL || i == GGML_TYPE_IQ4_XS || i == GGML_TYPE_IQ2_XXS ||
            i == GGML_TYPE_IQ2_XS || i == GGML_TYPE_IQ2_S || i == GGML_TYPE_IQ3_XXS || i == GGML_TYPE_IQ3_S ||
            i == GGML_TYPE_IQ1_S || i == GGML_TYPE_IQ1_M; // the last seven: the AVX2 set's packer and gemv
    }
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (i == GGML_TYPE_Q4_0 || i == GGML_TYPE_Q4_1 || i == GGML_TYPE_Q8_0) {
            t[i].gemv = gemv_avx512;
            t[i].gemv_prep = gemv_prep_avx512;
        }
    }
    if (GGML_GEMM_MR * sizeof(block_q4_K) <= (size_t) INT32_MAX) {
        t[GGML_TYPE_Q4_K].gemv = gemv_q4_K;
        t[GGML_TYPE_Q4_K].gemv_prep = gemv_prep_q4_K;
        t[GGML_TYPE_Q6_K].gemv = gemv_q6_K;
        t[GGML_TYPE_Q6_K].gemv_prep = gemv_prep_q6_K;
    }
    t[GGML_TYPE_Q4_0].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q4_1].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q8_0].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q4_K].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q6_K].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q6_K].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q4_K].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q4_0].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q4_1].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q8_0].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q5_0].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q5_1].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q5_K].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q5_0].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q5_1].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q5_K].kernel_repacked1 = kernel_repacked1_avx512;
    // q2_K / q3_K / iq4_nl / iq4_xs: the AVX2 set's repacker and gemv (gemm-avx2.c) with these tiles
    t[GGML_TYPE_Q2_K].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q3_K].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_Q2_K].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q3_K].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_IQ4_NL].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_IQ4_XS].kernel_repacked = kernel_repacked_avx512;
    t[GGML_TYPE_IQ4_NL].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_IQ4_XS].kernel_repacked1 = kernel_repacked1_avx512;
    t[GGML_TYPE_Q4_0].repack_rows = repack_rows_legacy;
    t[GGML_TYPE_Q4_1].repack_rows = repack_rows_legacy;
    t[GGML_TYPE_Q8_0].repack_rows = repack_rows_legacy;
    t[GGML_TYPE_Q4_0].pack = pack_legacy;
    t[GGML_TYPE_Q4_1].pack = pack_legacy;
    t[GGML_TYPE_Q8_0].pack = pack_legacy;
    t[GGML_TYPE_Q4_K].pack = pack_q4_K;
    t[GGML_TYPE_Q6_K].pack = pack_q6_K;
}
