// gemm-neon-tile.h — the NEON GEMM tile of gemm-neon.c, one template compiled twice: with the
// ARMv8.2 dot product (sdot) and without it. The includer defines GN_NAME(name) (suffixes the
// function names) and GN_DOT4(acc, w, a) (lane i of acc += the dot of bytes 4i..4i+3 of w with
// bytes 4i..4i+3 of a). Not a public header: include only there.
//
// A 128-bit vector holds 4 levels of 4 rows, so a 16-row block is 4 vectors per 4-level group.
// Each weight block is first decoded into signed levels and float scales (and minimums) of its
// 16 rows, whatever the layout it comes in (the panel of gemm.h, or a repacked one, repack.h),
// then dotted with the block's activations column by column: a column's 4 x 4 row lanes see
// the float operations of gemm.h in its order whatever the layout, the tile width or the
// number of columns, so stored and repacked weights, a batch and a column alone give the same bits.

// The 16 rows' integer block sums with column c (its activation dwords at a, GNR apart), from corr.
static inline __attribute__((always_inline)) void GN_NAME(block_isum)(const struct gn_block * b, const uint8_t * a, int32_t corr,
                                                                      const int QB, const int GNR, int32x4_t ia[4]) {
    for (int q = 0; q < 4; q++) ia[q] = vdupq_n_s32(corr);
    for (int g = 0; g < QB / 4; g++) {
        const int8x16_t av = vreinterpretq_s8_s32(vld1q_dup_s32((const int32_t *) (const void *) (a + 4 * GNR * g)));
        for (int q = 0; q < 4; q++) ia[q] = GN_DOT4(ia[q], b->w[g][q], av);
    }
}

// Columns [0, nc) of the group (GNR 1: the compact column) against 16 rows in layout PK (gemm-neon.c).
static inline __attribute__((always_inline)) void GN_NAME(tile)(const struct ggml_gemm_traits * gt, int64_t K,
                                                                const uint8_t * panel, const uint8_t * group, float * dst,
                                                                int64_t ldc, int nr, int nc, const int PK, const int GNR) {
    const int QB = gt->qb, SB = gt->sb, SA = gt->sa, NA = SB / SA;
    const bool S8 = gt->off == 128, MIN = gt->has_min;
    const size_t gbb = (size_t) (QB + 8) * GNR, sbb = (size_t) 4 * GNR * NA + (size_t) SB * gbb;
    const int64_t nsb = K / (QB * SB);
    float32x4_t acc[GGML_GEMM_NR][4], t[GGML_GEMM_NR][4];
    for (int c = 0; c < nc; c++)
        for (int q = 0; q < 4; q++) acc[c][q] = t[c][q] = vdupq_n_f32(0.0f);
    const uint8_t * pb = panel;
    struct gn_block blk;
    memset(&blk, 0, sizeof(blk)); // (the compiler cannot see that the decoder writes what is read)
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t * sbp = group + (size_t) i * sbb;
        const uint8_t * ab = sbp + 4 * GNR * NA;
        const uint8_t * hd = pb; // a repacked superblock's header (the K-quants, iq4_xs)
        pb += gn_header_bytes(PK);
        for (int j = 0; j < SB; j++) {
            pb = gn_decode(gt, PK, pb, hd, j, S8, &blk);
            const int jr = j % SA;
            for (int c = 0; c < nc; c++) {
                int32_t corr;
                memcpy(&corr, ab + QB * GNR + 4 * c, 4);
                int32x4_t ia[4];
                // levels u - 128 (off 128) make the sum of u * a - 128 * sum(a) without corr
                GN_NAME(block_isum)(&blk, ab + 4 * c, S8 ? 0 : corr, QB, GNR, ia);
                float da, s;
                memcpy(&da, sbp + 4 * GNR * (j / SA) + 4 * c, 4);
                memcpy(&s, ab + QB * GNR + 4 * GNR + 4 * c, 4);
                for (int q = 0; q < 4; q++) {
                    const float32x4_t d = vld1q_f32(blk.d + 4 * q), fi = vcvtq_f32_s32(ia[q]);
                    if (SB == 1) {
                        acc[c][q] = vfmaq_f32(acc[c][q], fi, vmulq_n_f32(d, da));
                    } else {
                        t[c][q] = jr == 0 ? vmulq_f32(fi, d) : vfmaq_f32(t[c][q], fi, d);
                    }
                    if (MIN) acc[c][q] = vfmaq_f32(acc[c][q], vld1q_f32(blk.m + 4 * q), vdupq_n_f32(s));
                    if (SB > 1 && jr == SA - 1) acc[c][q] = vfmaq_f32(acc[c][q], t[c][q], vdupq_n_f32(da));
                }
            }
            ab += gbb;
        }
    }
    for (int c = 0; c < nc; c++) {
        float out[16];
        for (int q = 0; q < 4; q++) vst1q_f32(out + 4 * q, acc[c][q]);
        memcpy(dst + c * ldc, out, (size_t) nr * sizeof(float));
    }
}

static void GN_NAME(kernel)(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group, float * dst,
                            int64_t ldc, int nr, int nc) {
    GN_NAME(tile)(gt, K, (const uint8_t *) panel, (const uint8_t *) group, dst, ldc, nr, nc, GN_PANEL, GGML_GEMM_NR);
}

#define GN_REPACKED_CASES(GNR, NC)                                                                  \
    switch (gt->type) {                                                                             \
        case GGML_TYPE_Q4_0:                                                                        \
        case GGML_TYPE_Q4_1: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_NIBBLES, GNR); break;  \
        case GGML_TYPE_Q8_0: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_BYTES, GNR); break;    \
        case GGML_TYPE_Q2_K: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_Q2_K, GNR); break;     \
        case GGML_TYPE_Q3_K: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_Q3_K, GNR); break;     \
        case GGML_TYPE_IQ4_NL: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_IQ4_NL, GNR); break; \
        case GGML_TYPE_IQ4_XS: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_IQ4_XS, GNR); break; \
        case GGML_TYPE_Q5_0:                                                                        \
        case GGML_TYPE_Q5_1: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_NIB5, GNR); break;     \
        case GGML_TYPE_Q4_K: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_Q4_K, GNR); break;     \
        case GGML_TYPE_Q5_K: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_Q5_K, GNR); break;     \
        case GGML_TYPE_Q6_K: GN_NAME(tile)(gt, K, p, g, dst, ldc, nr, NC, GN_Q6_K, GNR); break;     \
        default: break; /* gemm-neon.c installs these for no other type */                          \
    }

static void GN_NAME(kernel_repacked)(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                                     float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t *p = (const uint8_t *) panel, *g = (const uint8_t *) group;
    GN_REPACKED_CASES(GGML_GEMM_NR, nc)
}

// Repacked weights against one column in the compact layout (gemm.h: ggml_gemm_act_compact).
static void GN_NAME(kernel_repacked1)(const struct ggml_gemm_traits * gt, int64_t K, const void * panel, const void * group,
                                      float * dst, int64_t ldc, int nr, int nc) {
    const uint8_t *p = (const uint8_t *) panel, *g = (const uint8_t *) group;
    (void) nc;
    GN_REPACKED_CASES(1, 1)
}

#undef GN_REPACKED_CASES

// Installs this compilation's tiles.
static void GN_NAME(install)(struct ggml_gemm_traits * t) {
    gn_install(t, GN_NAME(kernel), GN_NAME(kernel_repacked), GN_NAME(kernel_repacked1));
}
