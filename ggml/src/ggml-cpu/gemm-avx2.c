// gemm-avx2.c — the GEMM micro-kernels with AVX2 (tiles in gemm-avx2-tile.h), the activation
// group filler and the straight repacker, shared by the AVX-VNNI and AVX-512 sets.
#define GEMM_X86_VNNI 0
#include "gemm-avx2-tile.h"
#include "quants-avx2.h"

// ---- activation groups ----

static const uint8_t zero_block[256 + 64] __attribute__((aligned(64)));

// Sum of the 4 signed bytes of each dword.
static inline __m256i dword_sums(__m256i v) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v), _mm256_set1_epi16(1));
}

// Columns [0, nc) of a group from nc quantized rows (the same bytes as the portable filler).
static void act_group_avx2(const struct ggml_gemm_traits * gt, const void * qrows, size_t qstride, int nc, int64_t K,
                           void * group) {
    const int QB = gt->qb;
    const size_t sbb = ggml_gemm_group_sblock_bytes(gt), gbb = ggml_gemm_group_block_bytes(gt);
    const size_t ub = ggml_type_size(gt->act_type);
    const uint8_t * cp[8];
    for (int c = 0; c < 8; c++) cp[c] = c < nc ? (const uint8_t *) qrows + (size_t) c * qstride : zero_block;
    const __m256i off = _mm256_set1_epi32(-gt->off);
    if (gt->act_type == GGML_TYPE_Q8_0 || gt->act_type == GGML_TYPE_Q8_1) {
        const bool q81 = gt->act_type == GGML_TYPE_Q8_1;
        const size_t qs_off = q81 ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
        // one q8_0 / q8_1 block of 32 per activation scale: QB == 32 / sa, so 32/QB weight blocks
        const int na = ggml_gemm_n_ascales(gt), bpa = 32 / QB;
        for (int64_t kb = 0; kb < K / 32; kb++) {
            const int a = (int) (kb % na);
            uint8_t * sbp = (uint8_t *) group + (size_t) (kb / na) * sbb;
            const size_t uo = (size_t) kb * ub;
            __m256i r[8];
            float da[8], s[8];
            for (int c = 0; c < 8; c++) {
                const uint8_t * b = c < nc ? cp[c] + uo : zero_block;
                r[c] = _mm256_loadu_si256((const __m256i *) (b + qs_off));
                if (q81) {
                    memcpy(&da[c], b + offsetof(block_q8_1, d), 4);
                    memcpy(&s[c], b + offsetof(block_q8_1, s), 4);
                } else {
                    ggml_fp16_t hv;
                    memcpy(&hv, b + offsetof(block_q8_0, d), 2);
                    da[c] = _cvtsh_ss(hv);
                }
            }
            transpose_8x8(r);
            const __m256 vda = _mm256_loadu_ps(da);
            _mm256_storeu_ps((float *) (sbp + 32 * a), vda);
            for (int h = 0; h < bpa; h++) {
                uint8_t * blk = sbp + 32 * na + (size_t) (a * bpa + h) * gbb;
                __m256i sum = _mm256_setzero_si256();
                for (int g = h * (QB / 4); g < (h + 1) * (QB / 4); g++) {
                    _mm256_storeu_si256((__m256i *) (blk + 32 * (g - h * (QB / 4))), r[g]);
                    sum = _mm256_add_epi32(sum, dword_sums(r[g]));
                }
                // q8_1's stored s where the block is its whole 32 values (what vec_dot uses)
                _mm256_storeu_si256((__m256i *) (blk + QB * 8), _mm256_mullo_epi32(sum, off));
                _mm256_storeu_ps((float *) (blk + QB * 8 + 32),
                                 q81 && QB == 32 ? _mm256_loadu_ps(s) : _mm256_mul_ps(vda, _mm256_cvtepi32_ps(sum)));
            }
        }
        return;
    }
    // q8_K: 256 per unit, one scale
    for (int64_t i = 0; i < K / QK_K; i++) {
        uint8_t * sbp = (uint8_t *) group + (size_t) i * sbb;
        const size_t uo = (size_t) i * sizeof(block_q8_K);
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
            for (int h = 0; h < 32 / QB; h++) {
                const int j = k0 / QB + h;
                uint8_t * blk = sbp + 32 + (size_t) j * gbb;
                __m256i sum = _mm256_setzero_si256();
                for (int g = 0; g < QB / 4; g++) {
                    const __m256i v = r[h * (QB / 4) + g];
                    _mm256_storeu_si256((__m256i *) (blk + 32 * g), v);
                    sum = _mm256_add_epi32(sum, dword_sums(v));
                }
                _mm256_storeu_si256((__m256i *) (blk + QB * 8), _mm256_mullo_epi32(sum, off));
                _mm256_storeu_ps((float *) (blk + QB * 8 + 32), _mm256_mul_ps(vda, _mm256_cvtepi32_ps(sum)));
            }
        }
    }
}

// ---- straight to the repacked layout (repack.h) ----

// q4_0, q4_1, q8_0 rows in the repacked layout without a panel: per block, dword g of the 16
// rows' qs side by side (q4_0 / q4_1: already the nibble layout, since a block's dword g holds
// levels 4g.. in its low nibbles and 16+4g.. in its high ones; q8_0: xor 0x80 gives the levels
// q + 128), then d (and m) as stored.
static bool repack_rows_legacy(const struct ggml_gemm_traits * gt, const void * rows, size_t row_stride, int64_t K, void * out) {
    const bool q8 = gt->type == GGML_TYPE_Q8_0, q41 = gt->type == GGML_TYPE_Q4_1;
    if (!q8 && !q41 && gt->type != GGML_TYPE_Q4_0) return false;
    const size_t lvb = q8 ? 16 * 32 : 16 * 32 / 2, ub = ggml_type_size(gt->type);
    const size_t qs_off = q8 ? offsetof(block_q8_0, qs) : q41 ? offsetof(block_q4_1, qs) : offsetof(block_q4_0, qs);
    const uint8_t * base = (const uint8_t *) rows;
    const __m128i bias = _mm_set1_epi8(q8 ? (char) 0x80 : 0);
    for (int64_t u = 0; u < K / 32; u++) {
        uint8_t * o = (uint8_t *) out + (size_t) u * (lvb + (q41 ? 64 : 32));
        const size_t uo = (size_t) u * ub;
        // 4 rows x 4 dwords at a time: a 4x4 transpose puts dword g of the 4 rows side by side
        for (int h = 0; h < (q8 ? 2 : 1); h++) {
            for (int r0 = 0; r0 < GGML_GEMM_MR; r0 += 4) {
                __m128i x[4];
                for (int i = 0; i < 4; i++) {
                    x[i] = _mm_xor_si128(
                        _mm_loadu_si128((const __m128i *) (base + (size_t) (r0 + i) * row_stride + uo + qs_off + 16 * h)), bias);
                }
                const __m128i a0 = _mm_unpacklo_epi32(x[0], x[1]), a1 = _mm_unpackhi_epi32(x[0], x[1]);
                const __m128i a2 = _mm_unpacklo_epi32(x[2], x[3]), a3 = _mm_unpackhi_epi32(x[2], x[3]);
                uint8_t * oo = o + 256 * h + 4 * r0;
                _mm_storeu_si128((__m128i *) (oo + 0), _mm_unpacklo_epi64(a0, a2));
                _mm_storeu_si128((__m128i *) (oo + 64), _mm_unpackhi_epi64(a0, a2));
                _mm_storeu_si128((__m128i *) (oo + 128), _mm_unpacklo_epi64(a1, a3));
                _mm_storeu_si128((__m128i *) (oo + 192), _mm_unpackhi_epi64(a1, a3));
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

// One column on stored q4_0 / q4_1 / q8_0 rows (weights not repacked): the 16 rows repacked
// into gemv's scratch, then the set's one-column kernel on them, against the column in the
// compact layout: the bits of the 1-column tile, at about the cost of a vec_dot pass.
static void gemv_rp(const struct ggml_gemm_traits * gt, const void * rows, size_t stride, int64_t K, void * gv, float * dst) {
    uint8_t * scratch = (uint8_t *) gv + GGML_PAD(ggml_gemm_compact_bytes(gt, K), 64);
    // row by row, in memory order (16 interleaved streams defeat the prefetchers), the next 16
    // rows prefetched meanwhile; the scattered stores stay in L1
    // (q8_0: the transposing repacker measured faster, 13 vs 10 GOP/s)
    const bool q8 = gt->type == GGML_TYPE_Q8_0, q41 = gt->type == GGML_TYPE_Q4_1;
    if (q8) {
        repack_rows_legacy(gt, rows, stride, K, scratch);
        gt->kernel_repacked1(gt, K, scratch, gv, dst, GGML_GEMM_MR, GGML_GEMM_MR, 1);
        return;
    }
    const size_t lvb = q8 ? 16 * 32 : 16 * 32 / 2, ub = ggml_type_size(gt->type), rub = lvb + (q41 ? 64 : 32);
    const size_t qs_off = q8 ? offsetof(block_q8_0, qs) : q41 ? offsetof(block_q4_1, qs) : offsetof(block_q4_0, qs);
    const int nd = q8 ? 8 : 4;
    const uint8_t * base = (const uint8_t *) rows;
    const int64_t n_lines = (int64_t) (GGML_GEMM_MR * stride + 63) / 64;
    for (int r = 0; r < GGML_GEMM_MR; r++) {
        const uint8_t * row = base + (size_t) r * stride;
        for (int64_t l = r * n_lines / GGML_GEMM_MR; l < (r + 1) * n_lines / GGML_GEMM_MR; l++) {
            _mm_prefetch((const char *) (base + GGML_GEMM_MR * stride + 64 * l), _MM_HINT_T1);
        }
        for (int64_t u = 0; u < K / 32; u++) {
            const uint8_t * blk = row + (size_t) u * ub;
            uint8_t * o = scratch + (size_t) u * rub;
            for (int g = 0; g < nd; g++) {
                uint32_t v;
                memcpy(&v, blk + qs_off + 4 * g, 4);
                if (q8) v ^= 0x80808080u;
                memcpy(o + 64 * g + 4 * r, &v, 4);
            }
            memcpy(o + lvb + 2 * r, blk, 2);
            if (q41) memcpy(o + lvb + 32 + 2 * r, blk + 2, 2);
        }
    }
    gt->kernel_repacked1(gt, K, scratch, gv, dst, GGML_GEMM_MR, GGML_GEMM_MR, 1);
}

void ggml_gemm_init_avx2(struct ggml_gemm_traits * t) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        if (t[i].qb == 0) continue;
        t[i].kernel = kernel_x86;
        t[i].act_group = act_group_avx2;
        // mul_mat takes the GEMM path for every N or for none (a column's bits must not depend
        // on its batch, nor on whether its weights were repacked): the types with a repacked
        // layout take it (the model loader repacks every matmul weight); stored weights of
        // those types go through the portable packer (no AVX2 packer or gemv yet: slow, but
        // only without repacking; q2_K / q3_K: one column through gemv_repacked). The others
        // stay on vec_dot; their tiles are tested.
        t[i].accelerated = i == GGML_TYPE_Q4_0 || i == GGML_TYPE_Q4_1 || i == GGML_TYPE_Q8_0 || i == GGML_TYPE_Q5_0 ||
            i == GGML_TYPE_Q5_1 || i == GGML_TYPE_Q4_K || i == GGML_TYPE_Q5_K || i == GGML_TYPE_Q6_K || i == GGML_TYPE_Q2_K ||
            i == GGML_TYPE_Q3_K || i == GGML_TYPE_IQ4_NL || i == GGML_TYPE_IQ4_XS;
    }
    // the codebook and IQ1 types (quants-iq-avx2.c): their packer and one-column product
    ggml_gemm_init_iq_avx2(t);
    const enum ggml_type rp[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q8_0,   GGML_TYPE_Q5_0,
                                  GGML_TYPE_Q5_1, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,   GGML_TYPE_Q6_K,
                                  GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS };
    for (size_t k = 0; k < sizeof(rp) / sizeof(rp[0]); k++) {
        t[rp[k]].kernel_repacked = kernel_repacked_x86;
        t[rp[k]].kernel_repacked1 = kernel_repacked1_x86;
    }
    t[GGML_TYPE_Q4_0].repack_rows = repack_rows_legacy;
    t[GGML_TYPE_Q4_1].repack_rows = repack_rows_legacy;
    t[GGML_TYPE_Q8_0].repack_rows = repack_rows_legacy;
    // the scratch (a repacked panel, at most 17 K bytes after the compact column's 1.4 K) fits
    // in ggml_gemm_gemv_bytes(K) (over 25 K)
    const enum ggml_type gvt[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q8_0 };
    for (size_t k = 0; k < sizeof(gvt) / sizeof(gvt[0]); k++) {
        t[gvt[k]].gemv = gemv_rp;
        t[gvt[k]].gemv_prep = ggml_gemm_gemv_prep_compact;
    }
    // q2_K / q3_K / iq4_nl / iq4_xs: written straight in the repacked layout (at load, and for
    // one column on stored rows: a repacked panel of 1824 bytes per 256 of K at most, well inside
    // the scratch)
    const enum ggml_type lowk[] = { GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS };
    for (size_t k = 0; k < 4; k++) {
        t[lowk[k]].repack_rows = k < 2 ? ggml_gemm_repack_rows_q2_K_q3_K : ggml_gemm_repack_rows_iq4;
        t[lowk[k]].gemv = ggml_gemm_gemv_repacked;
        t[lowk[k]].gemv_prep = ggml_gemm_gemv_prep_compact;
    }
}
