// gemm-avx2-tile.h — the 256-bit GEMM tiles of gemm-avx2.c (AVX2) and gemm-avxvnni.c (AVX-VNNI),
// one template compiled twice: GEMM_X86_VNNI (0 or 1) is defined by the file that includes it.
//
// Without VNNI a 4-way byte dot is maddubs (u8 levels x s8 values -> s16 pairs) then madd with
// ones (-> s32 per row). maddubs saturates at 32767: a pair reaches 2 * level * 128, so the s16
// results of several level vectors are added before the madd only as far as they cannot
// overflow (levels < 16: a whole 32-element block; < 32: four vectors; < 64: two). q8_0's
// levels (q + 128) would saturate even alone: its tiles multiply the signed values |q| by the
// activations with q's sign (vpsignb), which gives sum(q*a) = sum(u*a) - 128*sum(a) directly.
// Integer sums are exact, so none of this changes a bit of the result. With AVX-VNNI one
// vpdpbusd does the 4-way dot into s32 without saturation, and q8_0 runs as the other types.
//
// A 256-bit vector holds 4 levels of 8 rows: the 16-row panel (and the repacked layout, whose
// 64-byte vectors are two such halves) is done as two halves. Passes of (half, column) pairs
// keep the registers busy: one column does both halves at once (token generation), two
// columns both halves, more columns one half x 4 columns per pass (AVX-VNNI) or one half x 8
// columns (AVX2: the accumulators of the int8 sums stay in registers, the float ones spill). Every column's lanes see
// the same float operations in every pass shape, in the order of gemm.h: results never depend
// on N, nor on whether the weights were repacked.
#ifndef GEMM_X86_VNNI
#error "define GEMM_X86_VNNI before including gemm-avx2-tile.h"
#endif

#include "gemm.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#if GEMM_X86_VNNI && defined(GGML_CPU_EMULATE_AVXVNNI)
// Test builds (LLAMA_EMULATE_AVXVNNI): vpdpbusd as exact AVX2 code, so the VNNI tiles run and
// are checked on CPUs without AVX-VNNI. Even and odd bytes widened to 16 bits (u8 levels, s8
// values): each vpmaddwd pair sum fits in 32 bits, nothing saturates.
static inline __m256i emu_dpbusd(__m256i acc, __m256i u, __m256i s) {
    const __m256i m = _mm256_set1_epi16(0x00FF);
    const __m256i ue = _mm256_and_si256(u, m), uo = _mm256_srli_epi16(u, 8);
    const __m256i se = _mm256_srai_epi16(_mm256_slli_epi16(s, 8), 8), so = _mm256_srai_epi16(s, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(ue, se), _mm256_madd_epi16(uo, so)));
}
#define _mm256_dpbusd_avx_epi32 emu_dpbusd
#endif

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

// A dword broadcast from memory: vbroadcastss is a plain load on Zen, vpbroadcastd also takes a
// shuffle slot from the vector pipes the maddubs need.
static inline __m256i bcast_i32(const void * p) { return _mm256_castps_si256(_mm256_broadcast_ss((const float *) p)); }

static inline __m256 neg_ps(__m256 x) { return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f)); }

// Level vector g of half h of a repacked block (pkv: its packed vectors of that half).
static inline __attribute__((always_inline)) __m256i level_vec(const uint8_t * pb, const __m256i * pkv, int g, int h,
                                                               const int QB, const int PK) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30), m10 = _mm256_set1_epi8(0x10);
    if (PK == 7 || PK == 8) {
        // 2-bit levels at bits 2g (16-bit shifts: bits from the neighbour byte fall outside the
        // mask); q3_K's third bit g (pkv[1], already moved down for an odd block) to bit 2
        const __m256i m3 = _mm256_set1_epi8(0x03);
        __m256i w = _mm256_and_si256(g == 0 ? pkv[0] : _mm256_srli_epi16(pkv[0], 2 * g), m3);
        if (PK == 8) {
            const __m256i hv = pkv[1];
            const __m256i hb = g == 0 ? _mm256_slli_epi16(hv, 2)
                : g == 1              ? _mm256_slli_epi16(hv, 1)
                : g == 2              ? hv
                                      : _mm256_srli_epi16(hv, 1);
            w = _mm256_or_si256(w, _mm256_and_si256(hb, _mm256_set1_epi8(0x04)));
        }
        return w;
    }
    if (PK == 4) {
        const __m256i nv = pkv[g % 2], tv = pkv[2];
        const __m256i lo = _mm256_and_si256(g < 2 ? nv : _mm256_srli_epi16(nv, 4), m4);
        const __m256i th = g == 0 ? _mm256_slli_epi16(tv, 4)
            : g == 1              ? _mm256_slli_epi16(tv, 2)
            : g == 2              ? tv
                                  : _mm256_srli_epi16(tv, 2);
        return _mm256_or_si256(lo, _mm256_and_si256(th, m30));
    }
    const __m256i pk = pkv[g % (QB / 8)];
    __m256i w = _mm256_and_si256(g < QB / 8 ? pk : _mm256_srli_epi16(pk, 4), m4);
    if (PK == 9 || PK == 10) {
        // iq4_nl / iq4_xs: kvalues_iq4nl + 128 by nibble
        const __m256i lut =
            _mm256_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char) 129, (char) 141, (char) 153, (char) 166, (char) 181,
                             (char) 197, (char) 217, (char) 241, 1, 24, 45, 63, 79, 93, 106, 118, (char) 129, (char) 141,
                             (char) 153, (char) 166, (char) 181, (char) 197, (char) 217, (char) 241);
        return _mm256_shuffle_epi8(lut, w);
    }
    if (PK == 5 || PK == 6) {
        const __m256i hv = pkv[QB / 8];
        const __m256i hb = g < 4 ? _mm256_slli_epi16(hv, 4 - g) : g == 4 ? hv : _mm256_srli_epi16(hv, g - 4);
        w = _mm256_or_si256(w, _mm256_and_si256(hb, m10));
    }
    (void) pb;
    (void) h;
    return w;
}

// PK (weight layout): 0 = panel of gemm.h (u8 levels, float scales); 1 = repacked nibbles
// (q4_0, q4_1); 2 = repacked bytes (q8_0); 3 = repacked q4_K; 4 = repacked q6_K; 5 = repacked
// nibbles and fifth bits (q5_0, q5_1); 6 = repacked q5_K; 7 / 8 = repacked q2_K / q3_K (gemm.h:
// GGML_GEMM_RP_Q2_K, a header per superblock, then 64 bytes per block; q3_K: 192 per pair of blocks);
// 9 / 10 = repacked iq4_nl / iq4_xs (nibbles as 1's, levels by table; iq4_xs: a header as q4_K's).
// LB: bits of the largest level (4, 5, 6, 7; 8 = q8_0, signed trick). GNR: columns of the group
// layout (8, or 1 for the compact column). NH x CW: halves x columns of one pass.
static inline __attribute__((always_inline)) void pass(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst,
                                                       int64_t ldc, int nr, int nc, int h0, int c0, const int QB, const int SB,
                                                       const int SA, const bool MIN, const bool CORR, const int PK, const int LB,
                                                       const int GNR, const int NH, const int CW) {
    const bool NIB = PK == 1 || PK == 3 || PK == 5 || PK == 6 || PK == 9 || PK == 10; // levels as nibbles (and fifth bits)
    const bool H5 = PK == 5 || PK == 6, KH = PK == 3 || PK == 6;  // fifth bits; q4_K-style header
    const size_t lvb = PK == 1 || PK == 3 || PK == 9 || PK == 10 ? (size_t) QB * GGML_GEMM_MR / 2
        : H5                                                     ? (size_t) QB * GGML_GEMM_MR / 2 + 64
        : PK == 4                                                ? (size_t) 192
                                                                 : (size_t) QB * GGML_GEMM_MR;
    const size_t scb = PK ? 32 : 64;
    const bool LOW = PK == 7 || PK == 8; // repacked q2_K / q3_K
    // (q3_K's blocks alternate 64 and 128 bytes: its pointer steps below)
    const size_t pbb = LOW ? (PK == 7 ? 64 : 96) : KH || PK == 4 || PK == 10 ? lvb : lvb + scb + (MIN ? scb : 0);
    const size_t gbb = (size_t) (QB + 8) * GNR;
    const int NA = SB / SA; // activation scales per superblock
    const size_t sbb = (size_t) 4 * GNR * NA + (size_t) SB * gbb;
    const int64_t nsb = K / (QB * SB);
    const bool S8 = LB == 8 && !GEMM_X86_VNNI; // q8_0 without VNNI: signed values, no corr
    // level vectors whose s16 products are summed before one madd
    const int G16m = LB <= 4 ? 8 : LB == 5 ? 4 : LB == 6 ? 2 : 1;
    const int G16 = G16m < QB / 4 ? G16m : QB / 4;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i bias = _mm256_set1_epi8((char) 0x80);
    __m256 acc[2][8], t[2][8];
    for (int hh = 0; hh < NH; hh++)
        for (int c = 0; c < CW; c++) acc[hh][c] = t[hh][c] = _mm256_setzero_ps();
    const uint8_t * pb = panel;
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * sbp = group + (size_t) i * sbb;
        const uint8_t * ab = sbp + 4 * GNR * NA;
        // repacked q4_K: d[16], dmin[16] (fp16), sc[8][16], mn[8][16]; q6_K: sc[16][16], d[16]
        const uint8_t * hd = pb;
        __m256 dsb[2], ndsb[2];
        for (int hh = 0; hh < NH; hh++) {
            const int h = h0 + hh;
            if (KH) {
                dsb[hh] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (hd + 16 * h)));
                ndsb[hh] = neg_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (hd + 32 + 16 * h))));
            } else if (PK == 4) {
                dsb[hh] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (hd + 256 + 16 * h)));
            } else if (LOW || PK == 10) {
                dsb[hh] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (hd + 16 * h)));
                if (PK == 7) ndsb[hh] = neg_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (hd + 32 + 16 * h))));
            }
        }
        if (KH) pb += 64 + 2 * 8 * GGML_GEMM_MR;
        if (PK == 4) pb += 256 + 32;
        if (PK == 7) pb += 64 + 256;
        if (PK == 8) pb += 32 + 256;
        if (PK == 10) pb += 32 + 128;
        // blocks in runs of one activation scale: the run (1 or 2 blocks for q8_1) unrolls, so
        // whether a block opens or closes its run is known at compile time
        for (int ja = 0; ja < NA; ja++) {
#pragma GCC unroll 2
            for (int jr = 0; jr < SA; jr++) {
                const int j = ja * SA + jr;
                if (GNR == 1 || PK) {
                    // token generation streams the weights from DRAM once: the lines 2 KiB ahead
                    // are asked for now (the hardware prefetcher alone left the 1-column kernel at
                    // 0.85x of what it reaches with them, single thread, weights beyond L3); so
                    // does a batched decode step's tile on repacked panels (a prompt's tiles meet
                    // the lines in cache: load-port slots only, which these tiles have to spare)
                    for (size_t o = 0; o < pbb; o += 64) _mm_prefetch((const char *) pb + 2048 + o, _MM_HINT_T0);
                }
                __m256i ia[2][8], s16[2][8];
                for (int hh = 0; hh < NH; hh++)
                    for (int c = 0; c < CW; c++) {
                    // without VNNI ia starts at the first madd (not live across the first group's
                    // products: with 8 columns the registers would not suffice)
                        ia[hh][c] = GEMM_X86_VNNI && CORR ? bcast_i32(ab + QB * GNR + 4 * c) : _mm256_setzero_si256();
                        s16[hh][c] = _mm256_setzero_si256();
                    }
                __m256i pkv[2][5];
                for (int hh = 0; hh < NH; hh++) {
                    const int h = h0 + hh;
                    if (NIB) {
                        for (int k = 0; k < QB / 8 + H5; k++)
                            pkv[hh][k] = _mm256_loadu_si256((const __m256i *) (pb + 64 * k + 32 * h));
                    } else if (PK == 4) {
                        for (int k = 0; k < 3; k++) pkv[hh][k] = _mm256_loadu_si256((const __m256i *) (pb + 64 * k + 32 * h));
                    } else if (LOW) {
                        pkv[hh][0] = _mm256_loadu_si256((const __m256i *) (pb + 32 * h));
                        if (PK == 8) {
                            // the pair's third bits: 128 bytes past its first block, 64 past its second
                            const __m256i hv = _mm256_loadu_si256((const __m256i *) (pb + ((j & 1) ? 64 : 128) + 32 * h));
                            pkv[hh][1] = (j & 1) ? _mm256_srli_epi16(hv, 4) : hv;
                        }
                    }
                }
                // Four columns of one half of a 5-bit type: the block's level vectors are decoded
                // first into L1 and loaded back in the column loop (the 5 packed vectors would
                // otherwise stay live across it, and with the 12 accumulators that spills: 0.6x)
                const bool STAGE = CW == 4 && H5;
                __m256i wst[8];
                for (int g = 0; g < (STAGE ? QB / 4 : 0); g++) wst[g] = level_vec(pb, pkv[0], g, h0, QB, PK);
                if (STAGE) __asm__ volatile("" : : "r"(wst) : "memory");
#pragma GCC unroll 8
                for (int g = 0; g < QB / 4; g++) {
#pragma GCC unroll 8
                    for (int hh = 0; hh < NH; hh++) {
                        const int h = h0 + hh;
                        __m256i w;
                        if (STAGE) {
                            w = _mm256_load_si256(&wst[g]);
                        } else if (NIB || PK == 4 || LOW) {
                            w = level_vec(pb, pkv[hh], g, h, QB, PK);
                        } else {
                            w = _mm256_loadu_si256((const __m256i *) (pb + 64 * g + 32 * h));
                        }
                        __m256i wabs = w;
                        if (S8) {
                            w = _mm256_xor_si256(w, bias); // q
                            wabs = _mm256_sign_epi8(w, w);
                        }
#pragma GCC unroll 8
                        for (int c = 0; c < CW; c++) {
                            const __m256i av = bcast_i32(ab + 4 * GNR * g + 4 * c);
#if GEMM_X86_VNNI
                            ia[hh][c] = _mm256_dpbusd_avx_epi32(ia[hh][c], w, av);
                            (void) wabs;
                            (void) s16;
                            (void) ones;
                            (void) G16;
#else
                            const __m256i p =
                                S8 ? _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(av, w)) : _mm256_maddubs_epi16(w, av);
                            // the add in asm keeps the chain in program order: re-associated, the
                            // compiler computes every product of a block first and spills them
                            // (store-bound: 0.7x); an empty asm tying s16 ("+x") instead costs a
                            // register move per add
                            if (g % G16 == 0) {
                                s16[hh][c] = p;
                            } else {
                                __asm__("vpaddw %2, %1, %0" : "=x"(s16[hh][c]) : "x"(s16[hh][c]), "x"(p));
                            }
                            if (g % G16 == G16 - 1) {
                                const __m256i s32 = _mm256_madd_epi16(s16[hh][c], ones);
                                ia[hh][c] = g >= G16 ? _mm256_add_epi32(ia[hh][c], s32)
                                    : CORR && !S8    ? _mm256_add_epi32(bcast_i32(ab + QB * GNR + 4 * c), s32)
                                                     : s32;
                                __asm__("" : "+x"(ia[hh][c]));
                            }
#endif
                        }
                    }
                }
                for (int hh = 0; hh < NH; hh++) {
                    const int h = h0 + hh;
                    const __m256 d = KH ? _mm256_mul_ps(dsb[hh],
                                                        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                                            _mm_loadl_epi64((const __m128i *) (hd + 64 + 16 * j + 8 * h)))))
                        : PK == 4
                        ? _mm256_mul_ps(
                              dsb[hh],
                              _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *) (hd + 16 * j + 8 * h)))))
                        : PK == 7
                        ? _mm256_mul_ps(dsb[hh],
                                        _mm256_cvtepi32_ps(_mm256_and_si256(
                                            _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (hd + 64 + 16 * j + 8 * h))),
                                            _mm256_set1_epi32(15))))
                        : PK == 8 || PK == 10 ? _mm256_mul_ps(dsb[hh],
                                                              _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                                  _mm_loadl_epi64((const __m128i *) (hd + 32 + 16 * j + 8 * h)))))
                        : PK                  ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (pb + lvb + 16 * h)))
                                              : _mm256_loadu_ps((const float *) (pb + lvb + 32 * h));
                    if (SB == 1) {
                        for (int c = 0; c < CW; c++) {
                            const __m256 dd = _mm256_mul_ps(d, _mm256_set1_ps(ld_f32(sbp + 4 * c)));
                            acc[hh][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[hh][c]), dd, acc[hh][c]);
                        }
                    } else {
                        // t sums the blocks of one activation scale (gemm.h: the float order)
                        for (int c = 0; c < CW; c++) {
                            t[hh][c] = jr == 0 ? _mm256_mul_ps(_mm256_cvtepi32_ps(ia[hh][c]), d)
                                               : _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[hh][c]), d, t[hh][c]);
                        }
                    }
                    if (MIN) {
                        const __m256 m = KH ? _mm256_mul_ps(ndsb[hh],
                                                            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(
                                                                (const __m128i *) (hd + 64 + 128 + 16 * j + 8 * h)))))
                            : PK == 7
                            ? _mm256_mul_ps(
                                  ndsb[hh],
                                  _mm256_cvtepi32_ps(_mm256_srli_epi32(
                                      _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (hd + 64 + 16 * j + 8 * h))), 4)))
                            : PK ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (pb + lvb + scb + 16 * h)))
                                 : _mm256_loadu_ps((const float *) (pb + lvb + scb + 32 * h));
                        for (int c = 0; c < CW; c++) {
                            acc[hh][c] = _mm256_fmadd_ps(m, _mm256_set1_ps(ld_f32(ab + QB * GNR + 4 * GNR + 4 * c)), acc[hh][c]);
                        }
                    }
                }
                if (SB > 1 && jr == SA - 1) {
                    for (int hh = 0; hh < NH; hh++)
                        for (int c = 0; c < CW; c++) {
                            acc[hh][c] =
                                _mm256_fmadd_ps(t[hh][c], _mm256_set1_ps(ld_f32(sbp + 4 * GNR * ja + 4 * c)), acc[hh][c]);
                        }
                }
                pb += PK == 8 ? ((j & 1) ? 128 : 64) : pbb;
                ab += gbb;
            }
        }
    }
    for (int hh = 0; hh < NH; hh++) {
        const int h = h0 + hh, rows = nr - 8 * h;
        if (rows <= 0) continue;
        for (int c = 0; c < CW && c0 + c < nc; c++) {
            float * out = dst + (c0 + c) * ldc + 8 * h;
            if (rows >= 8) {
                _mm256_storeu_ps(out, acc[hh][c]);
            } else {
                float tmp[8];
                _mm256_storeu_ps(tmp, acc[hh][c]);
                memcpy(out, tmp, (size_t) rows * sizeof(float));
            }
        }
    }
}

// A whole tile: columns [0, nc) of the group (GNR 1: the compact column) against 16 rows.
static inline __attribute__((always_inline)) void tile_g(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst,
                                                         int64_t ldc, int nr, int nc, const int QB, const int SB, const int SA,
                                                         const bool MIN, const bool CORR, const int PK, const int LB,
                                                         const int GNR) {
    // the panel's column offset c0 moves the group pointer: one pass reads columns c0..c0+CW-1
    // without VNNI, 8 columns per pass for 6 columns or more: each decoded level vector serves
    // twice the maddubs (the float accumulators spill to L1, once per block: 1.05x on q8_0,
    // 1.1x on the 4-bit types, 1.25x on the 5-bit ones, single thread, in L2)
    // Passes are as wide as the columns there are (a batched decode step of 3, 5, 6 or 7
    // sequences computes no empty column of the group): up to 8 per pass without VNNI, 4 with
    // (the cases a set never takes are compiled out).
    const bool CW8 = !GEMM_X86_VNNI;
    if (GNR == 1 || nc == 1) {
        pass(K, panel, group, dst, ldc, nr, nc, 0, 0, QB, SB, SA, MIN, CORR, PK, LB, GNR, 2, 1);
    } else if (nc == 2) {
        pass(K, panel, group, dst, ldc, nr, nc, 0, 0, QB, SB, SA, MIN, CORR, PK, LB, GNR, 2, 2);
    } else {
        for (int c0 = 0; c0 < nc; c0 += CW8 ? 8 : 4) {
            const int w = nc - c0 < (CW8 ? 8 : 4) ? nc - c0 : (CW8 ? 8 : 4);
            const uint8_t * gc = group + 4 * c0;
            float * dc = dst + c0 * ldc;
            for (int h = 0; h < 2 && 8 * h < nr; h++) {
#define TILE_PASS(CWv) pass(K, panel, gc, dc, ldc, nr, w, h, 0, QB, SB, SA, MIN, CORR, PK, LB, GNR, 1, CWv)
                switch (w) {
                    case 1:
                        if (!CW8) TILE_PASS(1);
                        break;
                    case 2:
                        if (!CW8) TILE_PASS(2);
                        break;
                    case 3: TILE_PASS(3); break;
                    case 4: TILE_PASS(4); break;
                    case 5:
                        if (CW8) TILE_PASS(5);
                        break;
                    case 6:
                        if (CW8) TILE_PASS(6);
                        break;
                    case 7:
                        if (CW8) TILE_PASS(7);
                        break;
                    default:
                        if (CW8) TILE_PASS(8);
                        break;
                }
#undef TILE_PASS
            }
        }
    }
}

#define TILE_FN(name, QB, SB, SA, MIN, CORR, PK, LB)                                                                             \
    static inline void name(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc, int nr, int nc) { \
        tile_g(K, panel, group, dst, ldc, nr, nc, QB, SB, SA, MIN, CORR, PK, LB, GGML_GEMM_NR);                                  \
    }                                                                                                                            \
    static inline void name##_1(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc, int nr) {     \
        tile_g(K, panel, group, dst, ldc, nr, 1, QB, SB, SA, MIN, CORR, PK, LB, 1);                                              \
    }

TILE_FN(tile_q4_0, 32, 1, 1, false, true, 0, 4)
TILE_FN(tile_q4_1, 32, 1, 1, true, false, 0, 4)
TILE_FN(tile_q5_0, 32, 1, 1, false, true, 0, 5)
TILE_FN(tile_q5_1, 32, 1, 1, true, false, 0, 5)
TILE_FN(tile_q8_0, 32, 1, 1, false, true, 0, 8)
TILE_FN(tile_q2_K, 16, 16, 16, true, false, 0, 4)
TILE_FN(tile_q3_K, 16, 16, 16, false, true, 0, 4)
TILE_FN(tile_q4_K, 32, 8, 1, true, false, 0, 4)
TILE_FN(tile_q5_K, 32, 8, 1, true, false, 0, 5)
TILE_FN(tile_q6_K, 16, 16, 2, false, true, 0, 6)
TILE_FN(tile_rp_q4_0, 32, 1, 1, false, true, 1, 4)
TILE_FN(tile_rp_q4_1, 32, 1, 1, true, false, 1, 4)
TILE_FN(tile_rp_q8_0, 32, 1, 1, false, true, 2, 8)
TILE_FN(tile_rp_q4_K, 32, 8, 1, true, false, 3, 4)
TILE_FN(tile_rp_q6_K, 16, 16, 2, false, true, 4, 6)
TILE_FN(tile_rp_q5_0, 32, 1, 1, false, true, 5, 5)
TILE_FN(tile_rp_q5_1, 32, 1, 1, true, false, 5, 5)
TILE_FN(tile_rp_q5_K, 32, 8, 1, true, false, 6, 5)
TILE_FN(tile_rp_q2_K, 16, 16, 16, true, false, 7, 4)
TILE_FN(tile_rp_q3_K, 16, 16, 16, false, true, 8, 4)
TILE_FN(tile_iq4_nl, 32, 1, 1, false, true, 0, 8)
TILE_FN(tile_iq4_xs, 32, 8, 1, false, true, 0, 8)
TILE_FN(tile_rp_iq4_nl, 32, 1, 1, false, true, 9, 8)
TILE_FN(tile_rp_iq4_xs, 32, 8, 1, false, true, 10, 8)
// the codebook and IQ1 types (levels v + ggml_gemm_iq_off, q8_K): below 128 or 32
TILE_FN(tile_iq_32_7, 32, 8, 8, false, true, 0, 7) // iq2_xxs, iq3_xxs
TILE_FN(tile_iq_32_5, 32, 8, 8, false, true, 0, 5) // iq3_s, iq1_s
TILE_FN(tile_iq_16_7, 16, 16, 16, false, true, 0, 7) // iq2_xs, iq2_s
TILE_FN(tile_iq_16_5, 16, 16, 16, false, true, 0, 5) // iq1_m

static void kernel_x86(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group, float * dst,
                       int64_t ldc, int nr, int nc) {
    const uint8_t *p = (const uint8_t *) panel, *g = (const uint8_t *) group;
    switch (gt->type) {
        case GGML_TYPE_Q4_0: tile_q4_0(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q4_1: tile_q4_1(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q5_0: tile_q5_0(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q5_1: tile_q5_1(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q8_0: tile_q8_0(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q2_K: tile_q2_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q3_K: tile_q3_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q4_K: tile_q4_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q5_K: tile_q5_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_Q6_K: tile_q6_K(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ4_NL: tile_iq4_nl(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ4_XS: tile_iq4_xs(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ2_XXS:
        case GGML_TYPE_IQ3_XXS: tile_iq_32_7(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ3_S:
        case GGML_TYPE_IQ1_S: tile_iq_32_5(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ2_XS:
        case GGML_TYPE_IQ2_S: tile_iq_16_7(K, p, g, dst, ldc, nr, nc); break;
        case GGML_TYPE_IQ1_M: tile_iq_16_5(K, p, g, dst, ldc, nr, nc); break;
        default: ggml_gemm_kernel_generic(gt, K, panel, group, dst, ldc, nr, nc); break;
    }
}

static void kernel_repacked_x86(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                                float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t *p = (const uint8_t *) panel, *g = (const uint8_t *) group;
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

// Repacked weights against one column in the compact layout (gemm.h: ggml_gemm_act_compact).
static void kernel_repacked1_x86(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                                 float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t *p = (const uint8_t *) panel, *g = (const uint8_t *) group;
    (void) nc;
    switch (gt->type) {
        case GGML_TYPE_Q4_0: tile_rp_q4_0_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q4_1: tile_rp_q4_1_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q8_0: tile_rp_q8_0_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q4_K: tile_rp_q4_K_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q6_K: tile_rp_q6_K_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q5_0: tile_rp_q5_0_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q5_1: tile_rp_q5_1_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q5_K: tile_rp_q5_K_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q2_K: tile_rp_q2_K_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_Q3_K: tile_rp_q3_K_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_IQ4_NL: tile_rp_iq4_nl_1(K, p, g, dst, ldc, nr); break;
        case GGML_TYPE_IQ4_XS: tile_rp_iq4_xs_1(K, p, g, dst, ldc, nr); break;
        default: break;
    }
}
