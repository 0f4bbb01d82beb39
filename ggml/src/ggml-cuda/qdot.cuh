// qdot.cuh — quantized dot products that reproduce the CPU backend's arithmetic, so that
// offloaded layers give the CPU's results up to the order of float sums: activations are
// quantized exactly as the CPU quantizes them for each weight type (its vec_dot_type: Q8_0
// for q4_0 / q5_0 / q8_0, Q8_1 for q4_1 / q5_1 and the K-quants q4_K / q5_K / q6_K, Q8_K for
// q2_K / q3_K; byte-identical to quantize_row_q8_*_ref; for a Q8_0 product asked for F32
// precision, the lm head, the CPU's 16-bit activations), and each 32-element unit of a weight
// row is dotted with its activation unit in integers, then added to the running sum with the
// float operations of the CPU's GEMM tiles (ggml-cpu/gemm.h: legacy acc = fma(isum, d*da, acc),
// acc = fma(m, s, acc); K-quants t = fma(isum, d_blk, t) per weight block of the activation
// scale, acc = fma(m_blk, s, acc), acc = fma(t, da, acc)). Host-callable, so
// tests/cuda/test_cuda_host.cu checks the quantizers' bytes and the dots on machines without
// a GPU.
#pragma once

#include "quants.cuh"

#define CU_HD static __host__ __device__ __forceinline__

// ---- activation quantizers (one block per call) ----

CU_HD void cu_quantize_q8_1(const float * x, block_q8_1 * y) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_1; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < QK8_1; j++) {
        const int q = (int) roundf(x[j] * id);
        y->qs[j] = (int8_t) q;
        sum += q;
    }
    y->d = d;
    y->s = d * (float) sum;
}

CU_HD void cu_quantize_q8_K(const float * x, block_q8_K * y) {
    float amax = 0.0f;
    for (int j = 0; j < QK_K; j++) amax = fmaxf(amax, fabsf(x[j]));
    if (amax == 0.0f) {
        y->d = 0.0f;
        for (int j = 0; j < QK_K; j++) y->qs[j] = 0;
        for (int j = 0; j < QK_K / 16; j++) y->bsums[j] = 0;
        return;
    }
    const float iscale = 127.0f / amax;
    for (int j = 0; j < QK_K; j++) {
        const int v = (int) rintf(iscale * x[j]);   // nearest, ties to even (nearest_int)
        y->qs[j] = (int8_t) (v < -127 ? -127 : v > 127 ? 127 : v);
    }
    for (int j = 0; j < QK_K / 16; j++) {
        int sum = 0;
        for (int i = 0; i < 16; i++) sum += y->qs[j * 16 + i];
        y->bsums[j] = (int16_t) sum;
    }
    y->d = 1.0f / iscale;
}

// 16-bit activations of a Q8_0 product at F32 precision (ggml-cpu/matmul-float.h): per 32
// values da = amax / 32767 (F32) and q = round(x / da), half away from zero, as int16.
typedef struct {
    float d;
    int16_t q[32];
} cu_block_a16;

CU_HD void cu_quantize_a16(const float * x, cu_block_a16 * y) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 32767.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) {
        float v = roundf(x[j] * id);
        v = v > 32767.0f ? 32767.0f : v < -32767.0f ? -32767.0f : v == v ? v : 0.0f;   // NaN: 0, as the CPU
        y->q[j] = (int16_t) v;
    }
    y->d = d;
}

// Pseudo types after ggml's: Q8_0 weights (their bytes are Q8_0's) of a GGML_PREC_F32 product,
// and its 16-bit activations.
#define CU_TYPE_Q8_0_A16 (GGML_TYPE_COUNT + 1)
#define CU_ACT_A16       (GGML_TYPE_COUNT + 2)

// The activation type the CPU pairs with weight type T: its type, values per block, block.
template <int T> struct cu_vdt;
struct cu_act_q8_0 {
    static constexpr int type = GGML_TYPE_Q8_0;
    static constexpr int qk = 32;
    typedef block_q8_0 block;
};
struct cu_act_q8_1 {
    static constexpr int type = GGML_TYPE_Q8_1;
    static constexpr int qk = 32;
    typedef block_q8_1 block;
};
struct cu_act_q8_K {
    static constexpr int type = GGML_TYPE_Q8_K;
    static constexpr int qk = QK_K;
    typedef block_q8_K block;
};
struct cu_act_a16 {
    static constexpr int type = CU_ACT_A16;
    static constexpr int qk = 32;
    typedef cu_block_a16 block;
};
template <> struct cu_vdt<GGML_TYPE_Q4_0> : cu_act_q8_0 {};
template <> struct cu_vdt<GGML_TYPE_Q5_0> : cu_act_q8_0 {};
template <> struct cu_vdt<GGML_TYPE_Q8_0> : cu_act_q8_0 {};
template <> struct cu_vdt<GGML_TYPE_Q4_1> : cu_act_q8_1 {};
template <> struct cu_vdt<GGML_TYPE_Q5_1> : cu_act_q8_1 {};
template <> struct cu_vdt<GGML_TYPE_Q2_K> : cu_act_q8_K {};
template <> struct cu_vdt<GGML_TYPE_Q3_K> : cu_act_q8_K {};
template <> struct cu_vdt<GGML_TYPE_Q4_K> : cu_act_q8_1 {};
template <> struct cu_vdt<GGML_TYPE_Q5_K> : cu_act_q8_1 {};
template <> struct cu_vdt<GGML_TYPE_Q6_K> : cu_act_q8_1 {};
template <> struct cu_vdt<CU_TYPE_Q8_0_A16> : cu_act_a16 {};
template <> struct cu_vdt<GGML_TYPE_IQ4_NL> : cu_act_q8_0 {};
template <> struct cu_vdt<GGML_TYPE_IQ4_XS> : cu_act_q8_0 {};
template <> struct cu_vdt<GGML_TYPE_MXFP4> : cu_act_q8_0 {};

// ---- integer helpers: 4 int8 products per instruction (dp4a), unaligned-safe word loads ----

CU_HD int cu_dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; i++) c += (int) (int8_t) (a >> (8 * i)) * (int) (int8_t) (b >> (8 * i));
    return c;
#endif
}

// 4 bytes at a 2-byte aligned address (block fields after an F16 scale)
CU_HD int cu_ld16x2(const uint8_t * p) {
    const uint16_t * h = (const uint16_t *) p;
    return (int) ((uint32_t) h[0] | ((uint32_t) h[1] << 16));
}

// 4 bytes at a 4-byte aligned address
CU_HD int cu_ld32(const void * p) { return *(const int *) p; }

// bits b..b+3 of v moved to bit 4 of bytes 0..3
CU_HD int cu_bits_to_b4(uint32_t v, int b) {
    const uint32_t x = (v >> b) & 0xF;
    return (int) (((x & 1) << 4) | ((x & 2) << 11) | ((x & 4) << 18) | ((x & 8) << 25));
}

#define CU_ONES 0x01010101

// ---- unit dots: weight row w, activation row a (in the activation type), unit u = elements
// [32u, 32u + 32): returns acc plus the unit's part. Integer sums are those of quants-generic.c
// (offsets such as q - 8 folded in as - 8 * sum(y), exact in integers). ----

template <int T> CU_HD float cu_unit_dot(const char * w, const char * a, int64_t u, float acc);

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q4_0>(const char * w, const char * a, int64_t u, float acc) {
    const block_q4_0 * x = (const block_q4_0 *) w + u;
    const block_q8_0 * y = (const block_q8_0 *) a + u;
    int sumi = 0, sumy = 0;
    for (int k = 0; k < 4; k++) {
        const int q = cu_ld16x2(x->qs + 4 * k);
        const int y0 = cu_ld16x2((const uint8_t *) y->qs + 4 * k), y1 = cu_ld16x2((const uint8_t *) y->qs + 16 + 4 * k);
        sumi = cu_dp4a(q & 0x0F0F0F0F, y0, sumi);
        sumi = cu_dp4a((q >> 4) & 0x0F0F0F0F, y1, sumi);
        sumy = cu_dp4a(CU_ONES, y0, cu_dp4a(CU_ONES, y1, sumy));
    }
    return fmaf((float) (sumi - 8 * sumy), cu_h2f(x->d) * cu_h2f(y->d), acc);
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q4_1>(const char * w, const char * a, int64_t u, float acc) {
    const block_q4_1 * x = (const block_q4_1 *) w + u;
    const block_q8_1 * y = (const block_q8_1 *) a + u;
    int sumi = 0;
    for (int k = 0; k < 4; k++) {
        const int q = cu_ld32(x->qs + 4 * k);
        sumi = cu_dp4a(q & 0x0F0F0F0F, cu_ld32(y->qs + 4 * k), sumi);
        sumi = cu_dp4a((q >> 4) & 0x0F0F0F0F, cu_ld32(y->qs + 16 + 4 * k), sumi);
    }
    acc = fmaf((float) sumi, cu_h2f(x->d) * y->d, acc);
    return fmaf(cu_h2f(x->m), y->s, acc);
}

static __host__ __device__ __forceinline__ uint32_t cu_qh32(const uint8_t * qh) {
    return (uint32_t) qh[0] | ((uint32_t) qh[1] << 8) | ((uint32_t) qh[2] << 16) | ((uint32_t) qh[3] << 24);
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q5_0>(const char * w, const char * a, int64_t u, float acc) {
    const block_q5_0 * x = (const block_q5_0 *) w + u;
    const block_q8_0 * y = (const block_q8_0 *) a + u;
    const uint32_t qh = cu_qh32(x->qh);
    int sumi = 0, sumy = 0;
    for (int k = 0; k < 4; k++) {
        const int q = cu_ld16x2(x->qs + 4 * k);
        const int y0 = cu_ld16x2((const uint8_t *) y->qs + 4 * k), y1 = cu_ld16x2((const uint8_t *) y->qs + 16 + 4 * k);
        sumi = cu_dp4a((q & 0x0F0F0F0F) | cu_bits_to_b4(qh, 4 * k), y0, sumi);
        sumi = cu_dp4a(((q >> 4) & 0x0F0F0F0F) | cu_bits_to_b4(qh, 16 + 4 * k), y1, sumi);
        sumy = cu_dp4a(CU_ONES, y0, cu_dp4a(CU_ONES, y1, sumy));
    }
    return fmaf((float) (sumi - 16 * sumy), cu_h2f(x->d) * cu_h2f(y->d), acc);
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q5_1>(const char * w, const char * a, int64_t u, float acc) {
    const block_q5_1 * x = (const block_q5_1 *) w + u;
    const block_q8_1 * y = (const block_q8_1 *) a + u;
    const uint32_t qh = cu_qh32(x->qh);
    int sumi = 0;
    for (int k = 0; k < 4; k++) {
        const int q = cu_ld32(x->qs + 4 * k);
        sumi = cu_dp4a((q & 0x0F0F0F0F) | cu_bits_to_b4(qh, 4 * k), cu_ld32(y->qs + 4 * k), sumi);
        sumi = cu_dp4a(((q >> 4) & 0x0F0F0F0F) | cu_bits_to_b4(qh, 16 + 4 * k), cu_ld32(y->qs + 16 + 4 * k), sumi);
    }
    acc = fmaf((float) sumi, cu_h2f(x->d) * y->d, acc);
    return fmaf(cu_h2f(x->m), y->s, acc);
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q8_0>(const char * w, const char * a, int64_t u, float acc) {
    const block_q8_0 * x = (const block_q8_0 *) w + u;
    const block_q8_0 * y = (const block_q8_0 *) a + u;
    int sumi = 0;
    for (int k = 0; k < 8; k++) {
        sumi = cu_dp4a(cu_ld16x2((const uint8_t *) x->qs + 4 * k), cu_ld16x2((const uint8_t *) y->qs + 4 * k), sumi);
    }
    return fmaf((float) sumi, cu_h2f(x->d) * cu_h2f(y->d), acc);
}

// Q8_0 weights against 16-bit activations: acc = fma(d_w * da, isum, acc), as the CPU's chain.
template <>
__host__ __device__ __forceinline__ float cu_unit_dot<CU_TYPE_Q8_0_A16>(const char * w, const char * a, int64_t u, float acc) {
    const block_q8_0 * x = (const block_q8_0 *) w + u;
    const cu_block_a16 * y = (const cu_block_a16 *) a + u;
    int sumi = 0;
    for (int k = 0; k < 32; k++) sumi += (int) x->qs[k] * (int) y->q[k];
    return fmaf(cu_h2f(x->d) * y->d, (float) sumi, acc);
}

// K-quants: unit u is sub-range j = u % 8 of super-block u / 8. q8_K, q8_1, q2_K, q4_K and q5_K
// blocks keep 4-byte alignment; q3_K (110 bytes) and q6_K (210) only 2: read in halves.
// q2_K / q3_K meet Q8_K activations (one scale per 256): the unit's part of the CPU's block sum.
template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q2_K>(const char * w, const char * a, int64_t u, float acc) {
    const block_q2_K * x = (const block_q2_K *) w + u / 8;
    const block_q8_K * y = (const block_q8_K *) a + u / 8;
    const int j = (int) (u % 8), e0 = 32 * j;
    const uint8_t * q = x->qs + 32 * (e0 / 128);
    const int sh = 2 * ((e0 % 128) / 32);
    int isum = 0, summs = 0;
    for (int g = 0; g < 2; g++) {
        const uint8_t sc = x->scales[2 * j + g];
        int acc = 0;
        for (int k = 0; k < 4; k++) {
            acc = cu_dp4a((cu_ld32(q + 16 * g + 4 * k) >> sh) & 0x03030303, cu_ld32(y->qs + e0 + 16 * g + 4 * k), acc);
        }
        isum += (sc & 0xF) * acc;
        summs += y->bsums[2 * j + g] * (sc >> 4);
    }
    return acc + ((y->d * cu_h2f(x->d)) * (float) isum - (y->d * cu_h2f(x->dmin)) * (float) summs);
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q3_K>(const char * w, const char * a, int64_t u, float acc) {
    const block_q3_K * x = (const block_q3_K *) w + u / 8;
    const block_q8_K * y = (const block_q8_K *) a + u / 8;
    const int j = (int) (u % 8), e0 = 32 * j;
    const uint8_t * q = x->qs + 32 * (e0 / 128);
    const int sh = 2 * ((e0 % 128) / 32), hb = e0 / 32;
    const uint8_t * s = x->scales;
    int isum = 0;
    for (int g = 0; g < 2; g++) {
        const int k = 2 * j + g;   // scale index
        const int sc = ((k < 8 ? (s[k] & 0xF) : (s[k - 8] >> 4)) | (((s[8 + k % 4] >> (2 * (k / 4))) & 3) << 4)) - 32;
        int acc = 0, sumy = 0;
        for (int i = 0; i < 4; i++) {
            const int l = 16 * g + 4 * i;   // e % 32 of the four elements
            const int v = ((cu_ld16x2(q + l) >> sh) & 0x03030303) | (((cu_ld16x2(x->hmask + l) >> hb) & CU_ONES) << 2);
            const int yy = cu_ld32(y->qs + e0 + l);
            acc = cu_dp4a(v, yy, acc);
            sumy = cu_dp4a(CU_ONES, yy, sumy);
        }
        isum += sc * (acc - 4 * sumy);
    }
    return acc + cu_h2f(x->d) * y->d * (float) isum;
}

// q4_K / q5_K against Q8_1: the unit is one weight block of 32 (d_blk = d * sc, m_blk = -dmin * m,
// both exact in F32) under one activation scale.
template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q4_K>(const char * w, const char * a, int64_t u, float acc) {
    const block_q4_K * x = (const block_q4_K *) w + u / 8;
    const block_q8_1 * y = (const block_q8_1 *) a + u;
    const int j = (int) (u % 8);
    float sc, m;
    cu_scale_min_k4(j, x->scales, sc, m);
    const uint8_t * q = x->qs + 32 * (j / 2);
    const int sh = (j & 1) ? 4 : 0;
    int isum = 0;
    for (int k = 0; k < 8; k++) isum = cu_dp4a((cu_ld32(q + 4 * k) >> sh) & 0x0F0F0F0F, cu_ld32(y->qs + 4 * k), isum);
    const float t = (float) isum * (cu_h2f(x->d) * sc);
    acc = fmaf(-(cu_h2f(x->dmin) * m), y->s, acc);
    return fmaf(t, y->d, acc);
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q5_K>(const char * w, const char * a, int64_t u, float acc) {
    const block_q5_K * x = (const block_q5_K *) w + u / 8;
    const block_q8_1 * y = (const block_q8_1 *) a + u;
    const int j = (int) (u % 8);
    float sc, m;
    cu_scale_min_k4(j, x->scales, sc, m);
    const uint8_t * q = x->qs + 32 * (j / 2);
    const int sh = (j & 1) ? 4 : 0;
    int isum = 0;
    for (int k = 0; k < 8; k++) {
        const int v = ((cu_ld32(q + 4 * k) >> sh) & 0x0F0F0F0F) | (((cu_ld32(x->qh + 4 * k) >> j) & CU_ONES) << 4);
        isum = cu_dp4a(v, cu_ld32(y->qs + 4 * k), isum);
    }
    const float t = (float) isum * (cu_h2f(x->d) * sc);
    acc = fmaf(-(cu_h2f(x->dmin) * m), y->s, acc);
    return fmaf(t, y->d, acc);
}

// q6_K against Q8_1: two weight blocks of 16 (levels 0..63, offset 32; d_blk = d * scale) under
// one activation scale: t = isum0 * d0, t = fma(isum1, d1, t), acc = fma(t, da, acc).
template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_Q6_K>(const char * w, const char * a, int64_t u, float acc) {
    const block_q6_K * x = (const block_q6_K *) w + u / 8;
    const block_q8_1 * y = (const block_q8_1 *) a + u;
    const int j = (int) (u % 8);
    const int n = j / 4, t4 = j % 4;
    const uint8_t * ql = x->ql + 64 * n + 32 * (t4 & 1);
    const uint8_t * qh = x->qh + 32 * n;
    const int shl = t4 >= 2 ? 4 : 0, shh = 2 * t4;
    const float d = cu_h2f(x->d);
    float t = 0.0f;
    for (int g = 0; g < 2; g++) {
        int isum = 0, sumy = 0;
        for (int i = 0; i < 4; i++) {
            const int l = 16 * g + 4 * i;
            const int v = ((cu_ld16x2(ql + l) >> shl) & 0x0F0F0F0F) | (((cu_ld16x2(qh + l) >> shh) & 0x03030303) << 4);
            const int yy = cu_ld32(y->qs + l);
            isum = cu_dp4a(v, yy, isum);
            sumy = cu_dp4a(CU_ONES, yy, sumy);
        }
        t = fmaf((float) (isum - 32 * sumy), d * (float) x->scales[2 * j + g], t);
    }
    return fmaf(t, y->d, acc);
}

// Non-linear 4-bit types against Q8_0 (as quants-iq-generic.c): the integer dot of the 32 table
// levels with the activations, four levels packed per dp4a operand.
CU_HD int cu_lut_dot32(const uint8_t * qs, const int8_t * lut, const block_q8_0 * y) {
    int sumi = 0;
    for (int k = 0; k < 4; k++) {
        int lo = 0, hi = 0;
        for (int i = 0; i < 4; i++) {
            const uint8_t q = qs[4 * k + i];
            lo |= (int) (uint8_t) lut[q & 0xF] << (8 * i);
            hi |= (int) (uint8_t) lut[q >> 4] << (8 * i);
        }
        sumi = cu_dp4a(lo, cu_ld16x2((const uint8_t *) y->qs + 4 * k), sumi);
        sumi = cu_dp4a(hi, cu_ld16x2((const uint8_t *) y->qs + 16 + 4 * k), sumi);
    }
    return sumi;
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_IQ4_NL>(const char * w, const char * a, int64_t u, float acc) {
    const block_iq4_nl * x = (const block_iq4_nl *) w + u;
    const block_q8_0 * y = (const block_q8_0 *) a + u;
    return fmaf((float) cu_lut_dot32(x->qs, CU_KV_IQ4NL, y), cu_h2f(x->d) * cu_h2f(y->d), acc);
}

template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_MXFP4>(const char * w, const char * a, int64_t u, float acc) {
    const block_mxfp4 * x = (const block_mxfp4 *) w + u;
    const block_q8_0 * y = (const block_q8_0 *) a + u;
    return fmaf((float) cu_lut_dot32(x->qs, CU_KV_MXFP4, y), cu_e8m0_half(x->e) * cu_h2f(y->d), acc);
}

// IQ4_XS: unit u is sub-block u % 8 of super-block u / 8, under activation block u.
template <>
__host__ __device__ __forceinline__ float cu_unit_dot<GGML_TYPE_IQ4_XS>(const char * w, const char * a, int64_t u, float acc) {
    const block_iq4_xs * x = (const block_iq4_xs *) w + u / 8;
    const block_q8_0 * y = (const block_q8_0 *) a + u;
    const int j = (int) (u % 8);
    const int sumi = cu_iq4_xs_scale(x, j) * cu_lut_dot32(x->qs + 16 * j, CU_KV_IQ4NL, y);
    return fmaf((float) sumi, cu_h2f(x->d) * cu_h2f(y->d), acc);
}

// One activation block of type V from its QK floats x into *y.
template <int V> CU_HD void cu_quantize_act(const float * x, void * y);
template <> __host__ __device__ __forceinline__ void cu_quantize_act<GGML_TYPE_Q8_0>(const float * x, void * y) {
    cu_quantize_q8_0(x, (block_q8_0 *) y);
}
template <> __host__ __device__ __forceinline__ void cu_quantize_act<GGML_TYPE_Q8_1>(const float * x, void * y) {
    cu_quantize_q8_1(x, (block_q8_1 *) y);
}
template <> __host__ __device__ __forceinline__ void cu_quantize_act<GGML_TYPE_Q8_K>(const float * x, void * y) {
    cu_quantize_q8_K(x, (block_q8_K *) y);
}
template <> __host__ __device__ __forceinline__ void cu_quantize_act<CU_ACT_A16>(const float * x, void * y) {
    cu_quantize_a16(x, (cu_block_a16 *) y);
}

// Calls F.template operator()<T>() for the quantized weight types with a unit dot (and the
// pseudo type CU_TYPE_Q8_0_A16).
template <typename F> static bool cu_dispatch_qtype(int t, F && f) {
    switch (t) {
        case CU_TYPE_Q8_0_A16: f.template operator()<CU_TYPE_Q8_0_A16>(); return true;
        case GGML_TYPE_Q4_0: f.template operator()<GGML_TYPE_Q4_0>(); return true;
        case GGML_TYPE_Q4_1: f.template operator()<GGML_TYPE_Q4_1>(); return true;
        case GGML_TYPE_Q5_0: f.template operator()<GGML_TYPE_Q5_0>(); return true;
        case GGML_TYPE_Q5_1: f.template operator()<GGML_TYPE_Q5_1>(); return true;
        case GGML_TYPE_Q8_0: f.template operator()<GGML_TYPE_Q8_0>(); return true;
        case GGML_TYPE_Q2_K: f.template operator()<GGML_TYPE_Q2_K>(); return true;
        case GGML_TYPE_Q3_K: f.template operator()<GGML_TYPE_Q3_K>(); return true;
        case GGML_TYPE_Q4_K: f.template operator()<GGML_TYPE_Q4_K>(); return true;
        case GGML_TYPE_Q5_K: f.template operator()<GGML_TYPE_Q5_K>(); return true;
        case GGML_TYPE_Q6_K: f.template operator()<GGML_TYPE_Q6_K>(); return true;
        case GGML_TYPE_IQ4_NL: f.template operator()<GGML_TYPE_IQ4_NL>(); return true;
        case GGML_TYPE_IQ4_XS: f.template operator()<GGML_TYPE_IQ4_XS>(); return true;
        case GGML_TYPE_MXFP4: f.template operator()<GGML_TYPE_MXFP4>(); return true;
        default: return false;
    }
}
