// gemm-neon.c — the GEMM tiles of gemm.h with AArch64 NEON (tile in gemm-neon-tile.h, compiled
// with and without sdot), on the panel layout and on every repacked layout (repack.h): q4_0,
// q4_1, q5_0, q5_1, q8_0, q2_K .. q6_K, iq4_nl and iq4_xs take mul_mat's GEMM path for every N
// (prompts: the tile; generation: the one-column tile on repacked weights, or for q4_0, q4_1,
// q8_0, q2_K, q3_K and the iq4 types on 16 stored rows written in the repacked layout first).
// CMake builds this file only for aarch64.
#if defined(__aarch64__)

#include "gemm.h"

#include "neon-dotprod.h"

#include <arm_neon.h>
#include <string.h>

// Weight layouts the tile reads.
enum {
    GN_PANEL = 0, // gemm.h's panel: u8 levels, float d (and m)
    GN_NIBBLES = 1, // repacked q4_0 / q4_1: per block 4 x 64 bytes of nibbles, d (and m) fp16[16]
    GN_BYTES = 2, // repacked q8_0: per block 8 x 64 bytes of levels q + 128, d fp16[16]
    GN_Q2_K = 3, // gemm.h: GGML_GEMM_RP_Q2_K
    GN_Q3_K = 4, // gemm.h: GGML_GEMM_RP_Q3_K
    GN_IQ4_NL = 5, // gemm.h: GGML_GEMM_RP_IQ4_NL
    GN_IQ4_XS = 6, // gemm.h: GGML_GEMM_RP_IQ4_XS
    GN_NIB5 = 7, // repacked q5_0 / q5_1: as GN_NIBBLES, with 64 bytes of fifth bits before d (and m)
    GN_Q4_K = 8, // repacked q4_K: d, dmin fp16[16], sc[8][16], mn[8][16], then 8 blocks of nibbles
    GN_Q5_K = 9, // repacked q5_K: q4_K's header, then 8 blocks of nibbles and fifth bits
    GN_Q6_K = 10, // repacked q6_K: sc[16][16], d fp16[16], then per block 2 x 64 bytes of nibbles, 64 of tops
};

// One weight block of 16 rows decoded: signed levels (level - 128 for the types with off 128,
// else the level) as w[4-level group][4-row quarter], and per row its scale d and minimum m.
struct gn_block {
    int8x16_t w[8][4];
    float d[16];
    float m[16];
};

// Bytes of a repacked superblock's header before its blocks.
static inline int gn_header_bytes(int pk) {
    switch (pk) {
        case GN_Q2_K: return 64 + 256;
        case GN_Q3_K:
        case GN_Q6_K: return 256 + 32;
        case GN_IQ4_XS: return 32 + 128;
        case GN_Q4_K:
        case GN_Q5_K: return 64 + 2 * 128;
        default: return 0;
    }
}

static inline void gn_f16x16(const uint8_t * p, float * out) {
    for (int q = 0; q < 4; q++)
        vst1q_f32(out + 4 * q, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *) (const void *) (p + 8 * q)))));
}

// 16 int8 (s8) or uint8 (!s8) scale bytes as floats.
static inline void gn_bytes_to_f32(const uint8_t * p, bool s8, float * out) {
    const uint8x16_t v = vld1q_u8(p);
    int16x8_t h[2];
    if (s8) {
        h[0] = vmovl_s8(vget_low_s8(vreinterpretq_s8_u8(v)));
        h[1] = vmovl_high_s8(vreinterpretq_s8_u8(v));
    } else {
        h[0] = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v)));
        h[1] = vreinterpretq_s16_u16(vmovl_high_u8(v));
    }
    for (int k = 0; k < 2; k++) {
        vst1q_f32(out + 8 * k, vcvtq_f32_s32(vmovl_s16(vget_low_s16(h[k]))));
        vst1q_f32(out + 8 * k + 4, vcvtq_f32_s32(vmovl_high_s16(h[k])));
    }
}

// Per-row products a[r] * b[r] (the scales the portable packer computes: same operands, same bits).
static inline void gn_mul16(float * a, const float * b) {
    for (int q = 0; q < 4; q++) vst1q_f32(a + 4 * q, vmulq_f32(vld1q_f32(a + 4 * q), vld1q_f32(b + 4 * q)));
}

// Levels of 4 x 64 nibble bytes: vector k holds level group k in its low nibbles and k + 4 in its
// high ones; lut (iq4) maps them to the signed values.
static inline void gn_nibbles(const uint8_t * p, const int8x16_t * lut, struct gn_block * b) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (int k = 0; k < 4; k++) {
        for (int q = 0; q < 4; q++) {
            const uint8x16_t v = vld1q_u8(p + 64 * k + 16 * q);
            const uint8x16_t lo = vandq_u8(v, m4), hi = vshrq_n_u8(v, 4);
            b->w[k][q] = lut ? vqtbl1q_s8(*lut, lo) : vreinterpretq_s8_u8(lo);
            b->w[k + 4][q] = lut ? vqtbl1q_s8(*lut, hi) : vreinterpretq_s8_u8(hi);
        }
    }
}

// Or-s the fifth bits (64 bytes at p; byte i, bit g: bit 4 of level group g's byte i) into the levels.
static inline void gn_fifth_bits(const uint8_t * p, struct gn_block * b) {
    const uint8x16_t b4 = vdupq_n_u8(0x10);
    for (int q = 0; q < 4; q++) {
        const uint8x16_t f = vld1q_u8(p + 16 * q);
        for (int g = 0; g < 8; g++) {
            const uint8x16_t h = vandq_u8(vshlq_u8(f, vdupq_n_s8((int8_t) (4 - g))), b4);
            b->w[g][q] = vreinterpretq_s8_u8(vorrq_u8(vreinterpretq_u8_s8(b->w[g][q]), h));
        }
    }
}

// The K-quant header's per-row d * sc and -dmin * mn of block j (sc, mn: u8[8][16] at hd + 64, + 192).
static inline void gn_k_scales(const uint8_t * hd, int j, struct gn_block * b) {
    float f[16], dmin[16];
    gn_f16x16(hd, b->d);
    gn_bytes_to_f32(hd + 64 + 16 * j, false, f);
    gn_mul16(b->d, f);
    gn_f16x16(hd + 32, dmin);
    for (int q = 0; q < 4; q++) vst1q_f32(b->m + 4 * q, vnegq_f32(vld1q_f32(dmin + 4 * q)));
    gn_bytes_to_f32(hd + 192 + 16 * j, false, f);
    gn_mul16(b->m, f);
}

// Decodes block j of a superblock (header hd) at pb in layout pk; returns the next block.
static inline __attribute__((always_inline)) const uint8_t * gn_decode(const struct ggml_gemm_traits * gt, const int pk,
                                                                       const uint8_t * pb, const uint8_t * hd, int j, bool s8,
                                                                       struct gn_block * b) {
    const int QB = gt->qb;
    switch (pk) {
        case GN_PANEL: {
            const uint8x16_t x = vdupq_n_u8(s8 ? 0x80 : 0);
            for (int g = 0; g < QB / 4; g++)
                for (int q = 0; q < 4; q++) b->w[g][q] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(pb + 64 * g + 16 * q), x));
            memcpy(b->d, pb + QB * GGML_GEMM_MR, 64);
            if (gt->has_min) memcpy(b->m, pb + QB * GGML_GEMM_MR + 64, 64);
            return pb + ggml_gemm_panel_block_bytes(gt);
        }
        case GN_NIBBLES:
            gn_nibbles(pb, NULL, b);
            gn_f16x16(pb + 256, b->d);
            if (gt->has_min) gn_f16x16(pb + 288, b->m);
            return pb + 256 + (gt->has_min ? 64 : 32);
        case GN_NIB5:
            gn_nibbles(pb, NULL, b);
            gn_fifth_bits(pb + 256, b);
            gn_f16x16(pb + 320, b->d);
            if (gt->has_min) gn_f16x16(pb + 352, b->m);
            return pb + 320 + (gt->has_min ? 64 : 32);
        case GN_Q4_K:
        case GN_Q5_K:
            gn_nibbles(pb, NULL, b);
            if (pk == GN_Q5_K) gn_fifth_bits(pb + 256, b);
            gn_k_scales(hd, j, b);
            return pb + (pk == GN_Q5_K ? 320 : 256);
        case GN_Q6_K: {
            // L0 | L2 << 4, L1 | L3 << 4, then the tops of L_g at bits 2g
            const uint8x16_t m4 = vdupq_n_u8(0x0F), m30 = vdupq_n_u8(0x30);
            for (int q = 0; q < 4; q++) {
                const uint8x16_t v0 = vld1q_u8(pb + 16 * q), v1 = vld1q_u8(pb + 64 + 16 * q), t = vld1q_u8(pb + 128 + 16 * q);
                b->w[0][q] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v0, m4), vandq_u8(vshlq_n_u8(t, 4), m30)));
                b->w[1][q] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v1, m4), vandq_u8(vshlq_n_u8(t, 2), m30)));
                b->w[2][q] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v0, 4), vandq_u8(t, m30)));
                b->w[3][q] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v1, 4), vandq_u8(vshrq_n_u8(t, 2), m30)));
            }
            float sc[16];
            gn_f16x16(hd + 256, b->d);
            gn_bytes_to_f32(hd + 16 * j, true, sc);
            gn_mul16(b->d, sc);
            return pb + 192;
        }
        case GN_BYTES: {
            const uint8x16_t x = vdupq_n_u8(0x80);
            for (int g = 0; g < 8; g++)
                for (int q = 0; q < 4; q++) b->w[g][q] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(pb + 64 * g + 16 * q), x));
            gn_f16x16(pb + 512, b->d);
            return pb + 512 + 32;
        }
        case GN_IQ4_NL:
        case GN_IQ4_XS: {
            const int8x16_t lut = vld1q_s8(ggml_kvalues_iq4nl); // the levels kvalues + 128, less 128
            gn_nibbles(pb, &lut, b);
            if (pk == GN_IQ4_NL) {
                gn_f16x16(pb + 256, b->d);
                return pb + 256 + 32;
            }
            float sc[16];
            gn_f16x16(hd, b->d);
            gn_bytes_to_f32(hd + 32 + 16 * j, true, sc);
            gn_mul16(b->d, sc);
            return pb + 256;
        }
        case GN_Q2_K: {
            // level group g at bits 2g; d * (sc & 15), -dmin * (sc >> 4)
            const uint8x16_t m3 = vdupq_n_u8(3);
            for (int q = 0; q < 4; q++) {
                const uint8x16_t v = vld1q_u8(pb + 16 * q);
                b->w[0][q] = vreinterpretq_s8_u8(vandq_u8(v, m3));
                b->w[1][q] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(v, 2), m3));
                b->w[2][q] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(v, 4), m3));
                b->w[3][q] = vreinterpretq_s8_u8(vshrq_n_u8(v, 6));
            }
            const uint8x16_t sc = vld1q_u8(hd + 64 + 16 * j);
            uint8_t lo[16], hi[16];
            vst1q_u8(lo, vandq_u8(sc, vdupq_n_u8(15)));
            vst1q_u8(hi, vshrq_n_u8(sc, 4));
            float f[16], dmin[16];
            gn_f16x16(hd, b->d);
            gn_bytes_to_f32(lo, false, f);
            gn_mul16(b->d, f);
            gn_f16x16(hd + 32, dmin);
            for (int q = 0; q < 4; q++) vst1q_f32(b->m + 4 * q, vnegq_f32(vld1q_f32(dmin + 4 * q)));
            gn_bytes_to_f32(hi, false, f);
            gn_mul16(b->m, f);
            return pb + 64;
        }
        case GN_Q3_K: {
            // a pair of blocks: low levels of the first, of the second, then their third bits
            // (bit g: the first block's level group g, bit 4 + g: the second's)
            const uint8_t * pair = pb - 64 * (j & 1);
            const uint8x16_t m3 = vdupq_n_u8(3), b2 = vdupq_n_u8(4);
            for (int q = 0; q < 4; q++) {
                const uint8x16_t v = vld1q_u8(pb + 16 * q);
                uint8x16_t h = vld1q_u8(pair + 128 + 16 * q);
                if (j & 1) h = vshrq_n_u8(h, 4);
                b->w[0][q] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, m3), vandq_u8(vshlq_n_u8(h, 2), b2)));
                b->w[1][q] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(vshrq_n_u8(v, 2), m3), vandq_u8(vshlq_n_u8(h, 1), b2)));
                b->w[2][q] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(vshrq_n_u8(v, 4), m3), vandq_u8(h, b2)));
                b->w[3][q] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 6), vandq_u8(vshrq_n_u8(h, 1), b2)));
            }
            float sc[16];
            gn_f16x16(hd, b->d);
            gn_bytes_to_f32(hd + 32 + 16 * j, true, sc);
            gn_mul16(b->d, sc);
            return (j & 1) ? pair + 192 : pb + 64;
        }
        default: return pb;
    }
}

// Installs a compilation's tiles: the panel tile for every GEMM type, the repacked ones and the
// GEMM path for the types with a NEON repacked layout.
static void gn_install(struct ggml_gemm_traits * t, ggml_gemm_kernel_t kernel, ggml_gemm_kernel_t kernel_rp,
                       ggml_gemm_kernel_t kernel_rp1);

// 4-way byte dots per 32-bit lane without sdot: widening products, then pairwise sums.
static inline int32x4_t gn_dot4_emul(int32x4_t acc, int8x16_t w, int8x16_t a) {
    const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(a)));
    const int32x4_t hi = vpaddlq_s16(vmull_high_s8(w, a));
    return vaddq_s32(acc, vpaddq_s32(lo, hi));
}

#if !defined(NEON_DOTPROD_ALWAYS)
#define GN_NAME(name)      gn_##name##_nodot
#define GN_DOT4(acc, w, a) gn_dot4_emul(acc, w, a)
#include "gemm-neon-tile.h"
#undef GN_NAME
#undef GN_DOT4
#endif

NEON_DOTPROD_BEGIN

#define GN_NAME(name)      gn_##name##_dot
#define GN_DOT4(acc, w, a) vdotq_s32(acc, w, a)
#include "gemm-neon-tile.h"
#undef GN_NAME
#undef GN_DOT4

NEON_DOTPROD_END

// q4_0 / q4_1 / q8_0 rows straight in the repacked layout (what repack.c's squeezed panels hold):
// per block, dword g of the 16 rows' qs side by side (q4: a block's dword g holds levels 4g.. in
// its low nibbles and 16 + 4g.. in its high ones, the nibble layout; q8_0: xor 0x80 gives the
// levels q + 128), by 4 x 4 dword transposes, then d (and m) as stored.
static bool gn_repack_rows_legacy(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K,
                                  void * out) {
    const bool q8 = gt->type == GGML_TYPE_Q8_0, q41 = gt->type == GGML_TYPE_Q4_1;
    if (!q8 && !q41 && gt->type != GGML_TYPE_Q4_0) return false;
    const size_t lvb = q8 ? 16 * 32 : 16 * 32 / 2, ub = ggml_type_size(gt->type), rub = lvb + (q41 ? 64 : 32);
    const size_t qs_off = q8 ? offsetof(block_q8_0, qs) : q41 ? offsetof(block_q4_1, qs) : offsetof(block_q4_0, qs);
    const uint8x16_t bias = vdupq_n_u8(q8 ? 0x80 : 0);
    const uint8_t * base = (const uint8_t *) rows;
    for (int64_t u = 0; u < K / 32; u++) {
        uint8_t * o = (uint8_t *) out + (size_t) u * rub;
        const size_t uo = (size_t) u * ub;
        for (int h = 0; h < (q8 ? 2 : 1); h++) {
            for (int r0 = 0; r0 < GGML_GEMM_MR; r0 += 4) {
                uint32x4_t x[4];
                for (int i = 0; i < 4; i++) {
                    const uint8_t * p = base + (size_t) (r0 + i) * row_stride + uo + qs_off + 16 * h;
                    x[i] = vreinterpretq_u32_u8(veorq_u8(vld1q_u8(p), bias));
                }
                const uint32x4_t a0 = vtrn1q_u32(x[0], x[1]), a1 = vtrn2q_u32(x[0], x[1]);
                const uint32x4_t a2 = vtrn1q_u32(x[2], x[3]), a3 = vtrn2q_u32(x[2], x[3]);
                uint8_t * oo = o + 256 * h + 4 * r0;
                vst1q_u8(oo + 0, vreinterpretq_u8_u64(vtrn1q_u64(vreinterpretq_u64_u32(a0), vreinterpretq_u64_u32(a2))));
                vst1q_u8(oo + 64, vreinterpretq_u8_u64(vtrn1q_u64(vreinterpretq_u64_u32(a1), vreinterpretq_u64_u32(a3))));
                vst1q_u8(oo + 128, vreinterpretq_u8_u64(vtrn2q_u64(vreinterpretq_u64_u32(a0), vreinterpretq_u64_u32(a2))));
                vst1q_u8(oo + 192, vreinterpretq_u8_u64(vtrn2q_u64(vreinterpretq_u64_u32(a1), vreinterpretq_u64_u32(a3))));
            }
        }
        for (int r = 0; r < GGML_GEMM_MR; r++) {
            const uint8_t * blk = base + (size_t) r * row_stride + uo;
            memcpy(o + lvb + 2 * r, blk, 2);
            if (q41) memcpy(o + lvb + 32 + 2 * r, blk + 2, 2);
        }
    }
    return true;
}

static void gn_install(struct ggml_gemm_traits * t, ggml_gemm_kernel_t kernel, ggml_gemm_kernel_t kernel_rp,
                       ggml_gemm_kernel_t kernel_rp1) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (t[i].qb != 0) t[i].kernel = kernel;
    }
    // mul_mat takes the GEMM path for every N or for none (a column's bits must not depend on its
    // batch, nor on whether its weights were repacked): these types, which the model loader
    // repacks; one column on stored rows writes them in the repacked layout first (gemv)
    static const enum ggml_type rp[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,   GGML_TYPE_Q8_0,   GGML_TYPE_Q2_K,
                                         GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_Q5_0,
                                         GGML_TYPE_Q5_1, GGML_TYPE_Q4_K,   GGML_TYPE_Q5_K,   GGML_TYPE_Q6_K };
    for (size_t k = 0; k < sizeof(rp) / sizeof(rp[0]); k++) {
        struct ggml_gemm_traits * g = &t[rp[k]];
        g->accelerated = true;
        g->kernel_repacked = kernel_rp;
        g->kernel_repacked1 = kernel_rp1;
        if (k >= 7) continue; // the rest are repacked from panels (repack.c); one column on stored rows: pack + tile
        g->repack_rows = k < 3 ? gn_repack_rows_legacy : k < 5 ? ggml_gemm_repack_rows_q2_K_q3_K : ggml_gemm_repack_rows_iq4;
        // the scratch (a repacked panel, at most 17 K bytes after the compact column's 1.4 K)
        // fits in ggml_gemm_gemv_bytes(K) (over 25 K)
        g->gemv = ggml_gemm_gemv_repacked;
        g->gemv_prep = ggml_gemm_gemv_prep_compact;
    }
}

void ggml_gemm_init_neon(struct ggml_gemm_traits * t) {
    if (ggml_cpu_neon_has_dotprod()) {
        gn_install_dot(t);
    } else {
#if !defined(NEON_DOTPROD_ALWAYS)
        gn_install_nodot(t);
#endif
    }
}

#endif // __aarch64__
