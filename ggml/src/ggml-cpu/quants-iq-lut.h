// quants-iq-lut.h — IQ4_NL, IQ4_XS and MXFP4 against Q8_0 on x86 (256-bit lanes): one body for the
// kernel sets, each of which defines before including this
//   lut_dot32(lut, qs, q8): the int32x8 dot of 32 table levels (16 nibble bytes qs through the
//     16-entry table lut in both lanes) with 32 activations,
// and has quants-avx2.h's fold4_i32, fp16x4_to_f32, hsum_f32_8, FP16_TO_FP32, VEC_DOT_SYM (or
// its own with the same meaning).
// Four 32-value blocks per step: their dots fold into one vector, one FMA applies four scales.
#ifndef GGML_CPU_QUANTS_IQ_LUT_H
#define GGML_CPU_QUANTS_IQ_LUT_H

static inline __m256i lut16x2(const int8_t * v) {
    const __m128i t = _mm_loadu_si128((const __m128i *)v);
    return _mm256_set_m128i(t, t);
}

static inline __m256i block_dot_iq4_nl(const block_iq4_nl * a, const int8_t * q8) {
    return lut_dot32(lut16x2(ggml_kvalues_iq4nl), a->qs, q8);
}

VEC_DOT_SYM(vec_dot_iq4_nl_q8_0, block_iq4_nl, block_dot_iq4_nl)

static void vec_dot_mxfp4_q8_0(int n, float * s, const void * x, const void * y) {
    const block_mxfp4 * a = (const block_mxfp4 *)x;
    const block_q8_0 * b = (const block_q8_0 *)y;
    const int nb = n / QK_MXFP4;
    const __m256i lut = lut16x2(ggml_kvalues_mxfp4);
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 4 <= nb; i += 4) {
        const __m256 sums = fold4_i32(lut_dot32(lut, a[i].qs, b[i].qs), lut_dot32(lut, a[i + 1].qs, b[i + 1].qs),
                                      lut_dot32(lut, a[i + 2].qs, b[i + 2].qs), lut_dot32(lut, a[i + 3].qs, b[i + 3].qs));
        const __m128 da = _mm_setr_ps(ggml_e8m0_to_fp32_half(a[i].e), ggml_e8m0_to_fp32_half(a[i + 1].e),
                                      ggml_e8m0_to_fp32_half(a[i + 2].e), ggml_e8m0_to_fp32_half(a[i + 3].e));
        const __m128 dd = _mm_mul_ps(da, fp16x4_to_f32(b[i].d, b[i + 1].d, b[i + 2].d, b[i + 3].d));
        acc = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), sums, acc);
    }
    for (; i < nb; i++) {
        const __m256 d0 = _mm256_set1_ps(ggml_e8m0_to_fp32_half(a[i].e) * FP16_TO_FP32(b[i].d));
        acc = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(lut_dot32(lut, a[i].qs, b[i].qs)), acc);
    }
    *s = hsum_f32_8(acc);
}

// The signed 6-bit sub-block scale ib of an IQ4_XS block.
static inline int iq4_xs_scale(const block_iq4_xs * a, int ib) {
    return (((a->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((a->scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

static void vec_dot_iq4_xs_q8_0(int n, float * s, const void * x, const void * y) {
    const block_iq4_xs * a = (const block_iq4_xs *)x;
    const block_q8_0 * b = (const block_q8_0 *)y;
    const __m256i lut = lut16x2(ggml_kvalues_iq4nl);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_IQ; i++) {
        const block_q8_0 * bi = b + (size_t)i * 8;
        const float d = FP16_TO_FP32(a[i].d);
        for (int g = 0; g < 8; g += 4) {
            const __m256 sums = fold4_i32(lut_dot32(lut, a[i].qs + 16 * g, bi[g].qs),
                                          lut_dot32(lut, a[i].qs + 16 * (g + 1), bi[g + 1].qs),
                                          lut_dot32(lut, a[i].qs + 16 * (g + 2), bi[g + 2].qs),
                                          lut_dot32(lut, a[i].qs + 16 * (g + 3), bi[g + 3].qs));
            const __m128 ls = _mm_setr_ps((float)iq4_xs_scale(&a[i], g), (float)iq4_xs_scale(&a[i], g + 1),
                                          (float)iq4_xs_scale(&a[i], g + 2), (float)iq4_xs_scale(&a[i], g + 3));
            const __m128 db = fp16x4_to_f32(bi[g].d, bi[g + 1].d, bi[g + 2].d, bi[g + 3].d);
            const __m128 dd = _mm_mul_ps(_mm_mul_ps(_mm_set1_ps(d), db), ls);
            acc = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), sums, acc);
        }
    }
    *s = hsum_f32_8(acc);
}

#endif // GGML_CPU_QUANTS_IQ_LUT_H
