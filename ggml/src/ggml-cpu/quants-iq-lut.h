// quants-iq-lut.h — IQ4_NL, IQ4_XS and MXFP4 against Q8_0 on x86 (256-bit lanes): one body for the
// kernel sets, each of which defines before including this
//   level_dot32(lv, q8): the int32x8 dot of 32 signed levels lv with the 32 activations at q8,
// and has quants-avx2.h's unpack_nibbles_32, fold4_i32, fp16x4_to_f32, hsum_f32_8 and
// FP16_TO_FP32 (or its own with the same meaning).
//
// Levels come from one byte shuffle of the 16-entry table. Four 32-value blocks per step: their
// dots fold into one vector and one FMA applies four scales. Each body serves 1 or 4 columns
// (GGML_VEC_DOT_COLS): a weight block's levels are unpacked once for the 4, and every column
// gets the 1-column instructions, so the same bits.
#ifndef GGML_CPU_QUANTS_IQ_LUT_H
#define GGML_CPU_QUANTS_IQ_LUT_H

static inline __m256i lut16x2(const int8_t * v) {
    const __m128i t = _mm_loadu_si128((const __m128i *) v);
    return _mm256_set_m128i(t, t);
}

// The 32 levels of 16 nibble bytes through the table lut.
static inline __m256i lut_levels32(__m256i lut, const uint8_t * qs) { return _mm256_shuffle_epi8(lut, unpack_nibbles_32(qs)); }

#define IQ_COL(p, c, stride) ((const void *) ((const char *) (p) + (size_t) (c) * (stride)))
#define IQ_OUT(s, c, bs)     (*(float *) ((char *) (s) + (size_t) (c) * (bs)))

// 32-value blocks with one scale each (IQ4_NL: fp16 d; MXFP4: E8M0 e): scale4 gives four blocks'.
#define IQ_DOT32_COLS(w, block_t, table, scale1, scale4)                                                          \
    static inline __attribute__((always_inline)) void dot_##w##_cols(int n, float * s, size_t bs, const void * x, \
                                                                     const void * y, size_t by, const int NC) {   \
        const block_t * a = (const block_t *) x;                                                                  \
        const int nb = n / 32;                                                                                    \
        const __m256i lut = lut16x2(table);                                                                       \
        __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };   \
        int i = 0;                                                                                                \
        for (; i + 4 <= nb; i += 4) {                                                                             \
            const __m256i l0 = lut_levels32(lut, a[i].qs), l1 = lut_levels32(lut, a[i + 1].qs);                   \
            const __m256i l2 = lut_levels32(lut, a[i + 2].qs), l3 = lut_levels32(lut, a[i + 3].qs);               \
            const __m128 da = scale4(a + i);                                                                      \
            for (int c = 0; c < NC; c++) {                                                                        \
                const block_q8_0 * b = (const block_q8_0 *) IQ_COL(y, c, by);                                     \
                const __m256 sums = fold4_i32(level_dot32(l0, b[i].qs), level_dot32(l1, b[i + 1].qs),             \
                                              level_dot32(l2, b[i + 2].qs), level_dot32(l3, b[i + 3].qs));        \
                const __m128 dd = _mm_mul_ps(da, fp16x4_to_f32(b[i].d, b[i + 1].d, b[i + 2].d, b[i + 3].d));      \
                acc[c] = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), sums, acc[c]);                                  \
            }                                                                                                     \
        }                                                                                                         \
        for (; i < nb; i++) {                                                                                     \
            const __m256i l0 = lut_levels32(lut, a[i].qs);                                                        \
            for (int c = 0; c < NC; c++) {                                                                        \
                const block_q8_0 * b = (const block_q8_0 *) IQ_COL(y, c, by);                                     \
                const __m256 d0 = _mm256_set1_ps(scale1(a + i) * FP16_TO_FP32(b[i].d));                           \
                acc[c] = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(level_dot32(l0, b[i].qs)), acc[c]);               \
            }                                                                                                     \
        }                                                                                                         \
        for (int c = 0; c < NC; c++) IQ_OUT(s, c, bs) = hsum_f32_8(acc[c]);                                       \
    }

static inline float iq4_nl_scale1(const block_iq4_nl * a) { return FP16_TO_FP32(a->d); }
static inline __m128 iq4_nl_scale4(const block_iq4_nl * a) { return fp16x4_to_f32(a[0].d, a[1].d, a[2].d, a[3].d); }
static inline float mxfp4_scale1(const block_mxfp4 * a) { return ggml_e8m0_to_fp32_half(a->e); }
static inline __m128 mxfp4_scale4(const block_mxfp4 * a) {
    return _mm_setr_ps(ggml_e8m0_to_fp32_half(a[0].e), ggml_e8m0_to_fp32_half(a[1].e), ggml_e8m0_to_fp32_half(a[2].e),
                       ggml_e8m0_to_fp32_half(a[3].e));
}

IQ_DOT32_COLS(iq4_nl, block_iq4_nl, ggml_kvalues_iq4nl, iq4_nl_scale1, iq4_nl_scale4)
IQ_DOT32_COLS(mxfp4, block_mxfp4, ggml_kvalues_mxfp4, mxfp4_scale1, mxfp4_scale4)
GGML_VEC_DOT_COLS(iq4_nl, q8_0)
GGML_VEC_DOT_COLS(mxfp4, q8_0)

// The signed 6-bit sub-block scale ib of an IQ4_XS block.
static inline int iq4_xs_scale(const block_iq4_xs * a, int ib) {
    return (((a->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((a->scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

static inline __attribute__((always_inline)) void dot_iq4_xs_cols(int n, float * s, size_t bs, const void * x, const void * y,
                                                                  size_t by, const int NC) {
    const block_iq4_xs * a = (const block_iq4_xs *) x;
    const __m256i lut = lut16x2(ggml_kvalues_iq4nl);
    __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (int i = 0; i < n / QK_IQ; i++) {
        const __m128 d = _mm_set1_ps(FP16_TO_FP32(a[i].d));
        for (int g = 0; g < 8; g += 4) {
            const __m256i l0 = lut_levels32(lut, a[i].qs + 16 * g), l1 = lut_levels32(lut, a[i].qs + 16 * (g + 1));
            const __m256i l2 = lut_levels32(lut, a[i].qs + 16 * (g + 2)), l3 = lut_levels32(lut, a[i].qs + 16 * (g + 3));
            const __m128 ls = _mm_setr_ps((float) iq4_xs_scale(&a[i], g), (float) iq4_xs_scale(&a[i], g + 1),
                                          (float) iq4_xs_scale(&a[i], g + 2), (float) iq4_xs_scale(&a[i], g + 3));
            for (int c = 0; c < NC; c++) {
                const block_q8_0 * bi = (const block_q8_0 *) IQ_COL(y, c, by) + (size_t) i * 8 + g;
                const __m256 sums = fold4_i32(level_dot32(l0, bi[0].qs), level_dot32(l1, bi[1].qs), level_dot32(l2, bi[2].qs),
                                              level_dot32(l3, bi[3].qs));
                const __m128 db = fp16x4_to_f32(bi[0].d, bi[1].d, bi[2].d, bi[3].d);
                const __m128 dd = _mm_mul_ps(_mm_mul_ps(d, db), ls);
                acc[c] = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), sums, acc[c]);
            }
        }
    }
    for (int c = 0; c < NC; c++) IQ_OUT(s, c, bs) = hsum_f32_8(acc[c]);
}

GGML_VEC_DOT_COLS(iq4_xs, q8_0)

// Installs the three (1- and 4-column) in a kernel set's table.
static inline void iq_lut_install(struct ggml_type_traits_cpu * t) {
    t[GGML_TYPE_IQ4_NL].vec_dot = vec_dot_iq4_nl_q8_0;
    t[GGML_TYPE_IQ4_NL].vec_dot_x4 = vec_dot_x4_iq4_nl_q8_0;
    t[GGML_TYPE_IQ4_XS].vec_dot = vec_dot_iq4_xs_q8_0;
    t[GGML_TYPE_IQ4_XS].vec_dot_x4 = vec_dot_x4_iq4_xs_q8_0;
    t[GGML_TYPE_MXFP4].vec_dot = vec_dot_mxfp4_q8_0;
    t[GGML_TYPE_MXFP4].vec_dot_x4 = vec_dot_x4_mxfp4_q8_0;
}

#endif // GGML_CPU_QUANTS_IQ_LUT_H
