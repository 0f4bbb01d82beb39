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

static inline int32_t ld_i32(const void * p) { int32_t v; memcpy(&v, p, 4); return v; }
static inline float   ld_f32(const void * p) { float v;   memcpy(&v, p, 4); return v; }

// The tile for one (qb, sb, has_min, has_corr) combination; constants fold after inlining.
static inline __attribute__((always_inline)) void
tile(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc, int nr, int nc,
     const int QB, const int SB, const bool MIN, const bool CORR, const int NRT) {
    const size_t pbb = (size_t) QB*GGML_GEMM_MR + 64 + (MIN ? 64 : 0);
    const size_t gbb = (size_t) QB*GGML_GEMM_NR + 64;
    const size_t sbb = 32 + (size_t) SB*gbb;
    const int64_t nsb = K/(QB*SB);
    __m512 acc[GGML_GEMM_NR];
    for (int c = 0; c < NRT; c++) acc[c] = _mm512_setzero_ps();
    const uint8_t * pb = panel;
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * sbp = group + (size_t) i*sbb;
        const uint8_t * ab = sbp + 32;
        __m512 t[GGML_GEMM_NR];
        if (SB > 1) {
            for (int c = 0; c < NRT; c++) t[c] = _mm512_setzero_ps();
        }
        for (int j = 0; j < SB; j++) {
            __m512i ia[GGML_GEMM_NR];
            for (int c = 0; c < NRT; c++) {
                ia[c] = CORR ? _mm512_set1_epi32(ld_i32(ab + QB*GGML_GEMM_NR + 4*c)) : _mm512_setzero_si512();
            }
            for (int g = 0; g < QB/4; g++) {
                const __m512i w = _mm512_loadu_si512((const void *) (pb + 64*g));
                for (int c = 0; c < NRT; c++) {
                    ia[c] = _mm512_dpbusd_epi32(ia[c], w, _mm512_set1_epi32(ld_i32(ab + 32*g + 4*c)));
                }
            }
            const __m512 d = _mm512_loadu_ps((const float *) (pb + QB*GGML_GEMM_MR));
            if (SB == 1) {
                for (int c = 0; c < NRT; c++) {
                    const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(ld_f32(sbp + 4*c)));
                    acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[c]), dd, acc[c]);
                }
            } else {
                for (int c = 0; c < NRT; c++) {
                    t[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[c]), d, t[c]);
                }
            }
            if (MIN) {
                const __m512 m = _mm512_loadu_ps((const float *) (pb + QB*GGML_GEMM_MR + 64));
                for (int c = 0; c < NRT; c++) {
                    acc[c] = _mm512_fmadd_ps(m, _mm512_set1_ps(ld_f32(ab + QB*GGML_GEMM_NR + 32 + 4*c)), acc[c]);
                }
            }
            pb += pbb;
            ab += gbb;
        }
        if (SB > 1) {
            for (int c = 0; c < NRT; c++) {
                acc[c] = _mm512_fmadd_ps(t[c], _mm512_set1_ps(ld_f32(sbp + 4*c)), acc[c]);
            }
        }
    }
    const __mmask16 mask = (__mmask16) ((1u << nr) - 1);
    for (int c = 0; c < nc; c++) {
        _mm512_mask_storeu_ps(dst + c*ldc, mask, acc[c]);
    }
}

// One function per type family and column count (1, 2, 4 or 8: the group's first nc columns);
// a column's lanes see the same operations in every width, so results never depend on N.
#define TILE_FN(name, QB, SB, MIN, CORR)                                                              \
static void name(int64_t K, const uint8_t * panel, const uint8_t * group, float * dst, int64_t ldc,   \
                 int nr, int nc) {                                                                    \
    if (nc == 1)      tile(K, panel, group, dst, ldc, nr, nc, QB, SB, MIN, CORR, 1);                  \
    else if (nc == 2) tile(K, panel, group, dst, ldc, nr, nc, QB, SB, MIN, CORR, 2);                  \
    else if (nc <= 4) tile(K, panel, group, dst, ldc, nr, nc, QB, SB, MIN, CORR, 4);                  \
    else              tile(K, panel, group, dst, ldc, nr, nc, QB, SB, MIN, CORR, 8);                  \
}

TILE_FN(tile_32_1_off, 32,  1, false, true)   // q4_0, q5_0, q8_0
TILE_FN(tile_32_1_min, 32,  1, true,  false)  // q4_1, q5_1
TILE_FN(tile_32_8_min, 32,  8, true,  false)  // q4_K, q5_K
TILE_FN(tile_16_16_off, 16, 16, false, true)  // q3_K, q6_K
TILE_FN(tile_16_16_min, 16, 16, true,  false) // q2_K

static void kernel_avx512(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                          float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t * p = (const uint8_t *) panel;
    const uint8_t * g = (const uint8_t *) group;
    if (gt->qb == 32 && gt->sb == 1) {
        if (gt->has_min) tile_32_1_min(K, p, g, dst, ldc, nr, nc);
        else             tile_32_1_off(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 32 && gt->sb == 8 && gt->has_min) {
        tile_32_8_min(K, p, g, dst, ldc, nr, nc);
    } else if (gt->qb == 16 && gt->sb == 16) {
        if (gt->has_min) tile_16_16_min(K, p, g, dst, ldc, nr, nc);
        else             tile_16_16_off(K, p, g, dst, ldc, nr, nc);
    } else {
        ggml_gemm_kernel_generic(gt, K, panel, group, dst, ldc, nr, nc);
    }
}

// ---- panel packers ----
//
// A block's bytes of 16 rows are transposed in 4-byte units so that one vector holds the same
// 4 bytes of every row; nibble and bit planes are then split with shifts and masks on the
// transposed vectors. Rows past the matrix' end read a zero block (levels 0, scales 0).

static const uint8_t zero_block[256 + 64] __attribute__((aligned(64)));

// The 16 rows' storage units u: rp[r] = row r's unit (or zero_block).
static inline void unit_ptrs(const void * rows, size_t row_stride, int nr, size_t unit_off, const uint8_t * rp[16]) {
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        rp[r] = r < nr ? (const uint8_t *) rows + (size_t) r*row_stride + unit_off : zero_block;
    }
}

// t[j] = dword j of the 16 bytes at rp[r] + off, for rows r = 0..15 in lane order.
static inline void transpose_16x4(const uint8_t * const rp[16], size_t off, __m512i t[4]) {
    __m512i z[4];
    for (int i = 0; i < 4; i++) {
        // lane L holds row i + 4L, so after the in-lane 4x4 transpose lane L holds rows 4L..4L+3
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *) (rp[i] + off)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (rp[i + 4] + off)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (rp[i + 8] + off)), 2);
        z[i] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (rp[i + 12] + off)), 3);
    }
    const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
    t[0] = _mm512_unpacklo_epi64(a0, a2);
    t[1] = _mm512_unpackhi_epi64(a0, a2);
    t[2] = _mm512_unpacklo_epi64(a1, a3);
    t[3] = _mm512_unpackhi_epi64(a1, a3);
}

// The fp16 at byte offset off of each row's unit, as 16 floats.
static inline __m512 gather_f16(const uint8_t * const rp[16], size_t off) {
    uint16_t h[16];
    for (int r = 0; r < 16; r++) memcpy(&h[r], rp[r] + off, 2);
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) h));
}

static inline void store_nibbles(uint8_t * pb, const __m512i t[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int g = 0; g < 4; g++) {
        _mm512_storeu_si512((void *) (pb + 64*g), _mm512_and_si512(t[g], m4));
        _mm512_storeu_si512((void *) (pb + 64*(g + 4)), _mm512_and_si512(_mm512_srli_epi32(t[g], 4), m4));
    }
}

// q4_0 / q4_1 / q8_0: one 32-element block per unit.
static void pack_legacy(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K,
                        void * panel) {
    const size_t ub = ggml_type_size(gt->type), pbb = ggml_gemm_panel_block_bytes(gt);
    const uint8_t * rp[16];
    for (int64_t u = 0; u < K/32; u++) {
        uint8_t * pb = (uint8_t *) panel + (size_t) u*pbb;
        unit_ptrs(rows, row_stride, nr, (size_t) u*ub, rp);
        __m512i t[4];
        switch (gt->type) {
            case GGML_TYPE_Q4_0:
                transpose_16x4(rp, offsetof(block_q4_0, qs), t);
                store_nibbles(pb, t);
                _mm512_storeu_ps(pb + 32*16, gather_f16(rp, offsetof(block_q4_0, d)));
                break;
            case GGML_TYPE_Q4_1:
                transpose_16x4(rp, offsetof(block_q4_1, qs), t);
                store_nibbles(pb, t);
                _mm512_storeu_ps(pb + 32*16, gather_f16(rp, offsetof(block_q4_1, d)));
                _mm512_storeu_ps(pb + 32*16 + 64, gather_f16(rp, offsetof(block_q4_1, m)));
                break;
            default: { // q8_0: levels are q + 128
                const __m512i bias = _mm512_set1_epi8((char) 0x80);
                for (int h = 0; h < 2; h++) {
                    transpose_16x4(rp, offsetof(block_q8_0, qs) + 16*h, t);
                    for (int g = 0; g < 4; g++) {
                        _mm512_storeu_si512((void *) (pb + 64*(4*h + g)), _mm512_xor_si512(t[g], bias));
                    }
                }
                _mm512_storeu_ps(pb + 32*16, gather_f16(rp, offsetof(block_q8_0, d)));
            } break;
        }
    }
}

// q4_K: 8 blocks of 32 per unit; chunk c of qs holds block 2c (low nibbles) and 2c+1 (high).
static void pack_q4_K(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K,
                      void * panel) {
    const size_t pbb = ggml_gemm_panel_block_bytes(gt);
    const uint8_t * rp[16];
    for (int64_t u = 0; u < K/QK_K; u++) {
        uint8_t * pu = (uint8_t *) panel + (size_t) u*8*pbb;
        unit_ptrs(rows, row_stride, nr, (size_t) u*sizeof(block_q4_K), rp);
        const __m512i m4 = _mm512_set1_epi8(0x0F);
        for (int c = 0; c < 4; c++) {
            uint8_t * b0 = pu + (size_t) (2*c)*pbb, * b1 = b0 + pbb;
            for (int h = 0; h < 2; h++) {
                __m512i t[4];
                transpose_16x4(rp, offsetof(block_q4_K, qs) + 32*c + 16*h, t);
                for (int g = 0; g < 4; g++) {
                    _mm512_storeu_si512((void *) (b0 + 64*(4*h + g)), _mm512_and_si512(t[g], m4));
                    _mm512_storeu_si512((void *) (b1 + 64*(4*h + g)), _mm512_and_si512(_mm512_srli_epi32(t[g], 4), m4));
                }
            }
        }
        const __m512 d = gather_f16(rp, offsetof(block_q4_K, d)), dmin = gather_f16(rp, offsetof(block_q4_K, dmin));
        float sc[8][16], mn[8][16];
        for (int r = 0; r < 16; r++) {
            const uint8_t * s = rp[r] + offsetof(block_q4_K, scales);
            for (int j = 0; j < 8; j++) {
                uint8_t a, b;
                ggml_quants_get_scale_min_k4(j, s, &a, &b);
                sc[j][r] = (float) a;
                mn[j][r] = (float) b;
            }
        }
        for (int j = 0; j < 8; j++) {
            uint8_t * pb = pu + (size_t) j*pbb;
            _mm512_storeu_ps(pb + 32*16, _mm512_mul_ps(d, _mm512_loadu_ps(sc[j])));
            _mm512_storeu_ps(pb + 32*16 + 64, _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), dmin), _mm512_loadu_ps(mn[j])));
        }
    }
}

// q6_K: 16 blocks of 16 per unit. Block j: half n = j/8, quarter quad = (j%8)/2, l = 16*(j%2) + 0..15;
// low 4 bits in ql[64n + l + 32*(quad&1)] (high nibble for quad >= 2), top 2 in qh[32n + l] >> 2*quad.
static void pack_q6_K(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int nr, int64_t K,
                      void * panel) {
    const size_t pbb = ggml_gemm_panel_block_bytes(gt);
    const uint8_t * rp[16];
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
    for (int64_t u = 0; u < K/QK_K; u++) {
        uint8_t * pu = (uint8_t *) panel + (size_t) u*16*pbb;
        unit_ptrs(rows, row_stride, nr, (size_t) u*sizeof(block_q6_K), rp);
        for (int n = 0; n < 2; n++) {
            __m512i ql[16], qh[8];
            for (int i = 0; i < 4; i++) transpose_16x4(rp, offsetof(block_q6_K, ql) + 64*n + 16*i, ql + 4*i);
            for (int i = 0; i < 2; i++) transpose_16x4(rp, offsetof(block_q6_K, qh) + 32*n + 16*i, qh + 4*i);
            for (int quad = 0; quad < 4; quad++) {
                for (int half = 0; half < 2; half++) {
                    uint8_t * pb = pu + (size_t) (8*n + 2*quad + half)*pbb;
                    for (int g = 0; g < 4; g++) {
                        const int k = 4*half + g; // dword of l
                        const __m512i lo4 = quad >= 2 ? _mm512_srli_epi32(ql[8*(quad & 1) + k], 4) : ql[8*(quad & 1) + k];
                        const __m512i hi2 = _mm512_and_si512(_mm512_srli_epi32(qh[k], 2*quad), m2);
                        _mm512_storeu_si512((void *) (pb + 64*g),
                                            _mm512_or_si512(_mm512_and_si512(lo4, m4), _mm512_slli_epi32(hi2, 4)));
                    }
                }
            }
        }
        const __m512 d = gather_f16(rp, offsetof(block_q6_K, d));
        float sc[16][16];
        for (int r = 0; r < 16; r++) {
            const int8_t * s = (const int8_t *) (rp[r] + offsetof(block_q6_K, scales));
            for (int j = 0; j < 16; j++) sc[j][r] = (float) s[j];
        }
        for (int j = 0; j < 16; j++) {
            _mm512_storeu_ps(pu + (size_t) j*pbb + 16*16, _mm512_mul_ps(d, _mm512_loadu_ps(sc[j])));
        }
    }
}

// ---- activation groups ----

// 8x8 transpose of dwords: r[c] = 8 dwords of column c -> r[g] = dword g of the 8 columns.
static inline void transpose_8x8(__m256i r[8]) {
    __m256i a[8], b[8];
    for (int i = 0; i < 4; i++) {
        a[2*i]     = _mm256_unpacklo_epi32(r[2*i], r[2*i + 1]);
        a[2*i + 1] = _mm256_unpackhi_epi32(r[2*i], r[2*i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        b[4*i + 0] = _mm256_unpacklo_epi64(a[4*i + 0], a[4*i + 2]);
        b[4*i + 1] = _mm256_unpackhi_epi64(a[4*i + 0], a[4*i + 2]);
        b[4*i + 2] = _mm256_unpacklo_epi64(a[4*i + 1], a[4*i + 3]);
        b[4*i + 3] = _mm256_unpackhi_epi64(a[4*i + 1], a[4*i + 3]);
    }
    // b[0..3] hold dwords {0,4},{1,5},{2,6},{3,7} of columns 0-3 (lane 0: low dword), b[4..7] of 4-7
    for (int i = 0; i < 4; i++) {
        r[i]     = _mm256_permute2x128_si256(b[i], b[i + 4], 0x20);
        r[i + 4] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x31);
    }
}

// Columns [0, nc) of a group from nc quantized rows (qrows + c*qstride); the group is zeroed
// by the caller when nc < 8.
static void act_group_avx512(const struct ggml_gemm_traits * gt, const void * qrows, size_t qstride, int nc,
                             int64_t K, void * group) {
    const int QB = gt->qb;
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    const size_t ub = ggml_type_size(gt->act_type);
    const uint8_t * cp[8];
    for (int c = 0; c < 8; c++) cp[c] = c < nc ? (const uint8_t *) qrows + (size_t) c*qstride : zero_block;
    const __m256i ones = _mm256_set1_epi8(1);
    const __m256i off = _mm256_set1_epi32(-gt->off);
    if (gt->act_type == GGML_TYPE_Q8_0 || gt->act_type == GGML_TYPE_Q8_1) {
        const bool q81 = gt->act_type == GGML_TYPE_Q8_1;
        const size_t qs_off = q81 ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
        for (int64_t i = 0; i < K/32; i++) {
            uint8_t * sbp = (uint8_t *) group + (size_t) i*sbb;
            uint8_t * blk = sbp + 32;
            const size_t uo = (size_t) i*ub;
            __m256i r[8];
            float da[8], s[8];
            for (int c = 0; c < 8; c++) {
                const uint8_t * b = c < nc ? cp[c] + uo : zero_block;
                r[c] = _mm256_loadu_si256((const __m256i *) (b + qs_off));
                if (q81) {
                    memcpy(&da[c], b + offsetof(block_q8_1, d), 4);
                    memcpy(&s[c], b + offsetof(block_q8_1, s), 4);
                } else {
                    ggml_fp16_t h;
                    memcpy(&h, b + offsetof(block_q8_0, d), 2);
                    da[c] = _cvtsh_ss(h);
                }
            }
            transpose_8x8(r);
            __m256i sum = _mm256_setzero_si256();
            for (int g = 0; g < 8; g++) {
                _mm256_storeu_si256((__m256i *) (blk + 32*g), r[g]);
                sum = _mm256_dpbusd_epi32(sum, ones, r[g]);
            }
            const __m256 vda = _mm256_loadu_ps(da);
            _mm256_storeu_ps((float *) sbp, vda);
            _mm256_storeu_si256((__m256i *) (blk + 32*8), _mm256_mullo_epi32(sum, off));
            _mm256_storeu_ps((float *) (blk + 32*8 + 32), q81 ? _mm256_loadu_ps(s) : _mm256_mul_ps(vda, _mm256_cvtepi32_ps(sum)));
        }
        return;
    }
    // q8_K: 256 per unit, one scale; sums from bsums (per 16)
    for (int64_t i = 0; i < K/QK_K; i++) {
        uint8_t * sbp = (uint8_t *) group + (size_t) i*sbb;
        const size_t uo = (size_t) i*sizeof(block_q8_K);
        float da[8];
        for (int c = 0; c < 8; c++) memcpy(&da[c], (c < nc ? cp[c] + uo : zero_block) + offsetof(block_q8_K, d), 4);
        const __m256 vda = _mm256_loadu_ps(da);
        _mm256_storeu_ps((float *) sbp, vda);
        for (int k0 = 0; k0 < QK_K; k0 += 32) {
            __m256i r[8];
            for (int c = 0; c < 8; c++) {
                r[c] = _mm256_loadu_si256((const __m256i *) ((c < nc ? cp[c] + uo : zero_block) + offsetof(block_q8_K, qs) + k0));
            }
            transpose_8x8(r);
            // dwords 0..7 of these 32 values: block k0/QB (+1 when QB is 16)
            for (int h = 0; h < 32/QB; h++) {
                const int j = k0/QB + h;
                uint8_t * blk = sbp + 32 + (size_t) j*gbb;
                __m256i sum = _mm256_setzero_si256();
                for (int g = 0; g < QB/4; g++) {
                    const __m256i v = r[h*(QB/4) + g];
                    _mm256_storeu_si256((__m256i *) (blk + 32*g), v);
                    sum = _mm256_dpbusd_epi32(sum, ones, v);
                }
                _mm256_storeu_si256((__m256i *) (blk + QB*8), _mm256_mullo_epi32(sum, off));
                _mm256_storeu_ps((float *) (blk + QB*8 + 32), _mm256_mul_ps(vda, _mm256_cvtepi32_ps(sum)));
            }
        }
    }
}

void ggml_gemm_init_avx512(struct ggml_gemm_traits * t) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (t[i].qb == 0) continue;
        t[i].kernel = kernel_avx512;
        t[i].act_group = act_group_avx512;
        t[i].accelerated = true;
    }
    t[GGML_TYPE_Q4_0].pack = pack_legacy;
    t[GGML_TYPE_Q4_1].pack = pack_legacy;
    t[GGML_TYPE_Q8_0].pack = pack_legacy;
    t[GGML_TYPE_Q4_K].pack = pack_q4_K;
    t[GGML_TYPE_Q6_K].pack = pack_q6_K;
}
