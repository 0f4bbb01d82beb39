// quants-iq.cuh — cu_deq8 (quants.cuh) for the codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M and the ternary TQ1_0 / TQ2_0: elements [8c, 8c + 8) of a row, with the
// float products of the CPU dequantizers (ggml-quants-iq.c), so the same values. Included by
// quants.cuh after cu_h2f; the grids come from iq-grids.cuh. These types have no unit dot: their
// products run through dequantized F16 tiles (gemm.cu) or the matrix-vector kernel (mmv.cu).
#pragma once

#include "iq-grids.cuh"

template <> struct cu_qtraits<GGML_TYPE_IQ2_XXS> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq2_xxs);
};
template <> struct cu_qtraits<GGML_TYPE_IQ2_XS> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq2_xs);
};
template <> struct cu_qtraits<GGML_TYPE_IQ2_S> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq2_s);
};
template <> struct cu_qtraits<GGML_TYPE_IQ3_XXS> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq3_xxs);
};
template <> struct cu_qtraits<GGML_TYPE_IQ3_S> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq3_s);
};
template <> struct cu_qtraits<GGML_TYPE_IQ1_S> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq1_s);
};
template <> struct cu_qtraits<GGML_TYPE_IQ1_M> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq1_m);
};
template <> struct cu_qtraits<GGML_TYPE_TQ1_0> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_tq1_0);
};
template <> struct cu_qtraits<GGML_TYPE_TQ2_0> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_tq2_0);
};

// n values of a grid entry (its bytes, low first) times db, negated where sign bit j is set.
static __host__ __device__ __forceinline__ void cu_grid_put(uint64_t entry, int n, float db, unsigned signs, float * v) {
    for (int j = 0; j < n; j++) v[j] = db * (float) ((entry >> (8 * j)) & 0xFF) * ((signs >> j) & 1 ? -1.0f : 1.0f);
}

// The 4-bit scale of 16-value group g of an IQ2_XS / IQ2_S block (nibble g of scales).
static __host__ __device__ __forceinline__ float cu_iq2_db(float d, const uint8_t * scales, int g) {
    return d * (0.5f + (float) ((scales[g / 2] >> (4 * (g % 2))) & 0xF)) * 0.25f;
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ2_XXS>(const char * row, int64_t c, float * v) {
    const block_iq2_xxs * b = (const block_iq2_xxs *) row + c / 32;
    const int e = (int) (c % 32), ib = e / 4, l = e % 4;
    const uint32_t w0 = (uint32_t) b->qs[4 * ib] | ((uint32_t) b->qs[4 * ib + 1] << 16);
    const uint32_t w1 = (uint32_t) b->qs[4 * ib + 2] | ((uint32_t) b->qs[4 * ib + 3] << 16);
    const float db = cu_h2f(b->d) * (0.5f + (float) (w1 >> 28)) * 0.25f;
    cu_grid_put(CU_GRID(iq2xxs_grid)[(w0 >> (8 * l)) & 255], 8, db, CU_GRID(iq2_ksigns)[(w1 >> (7 * l)) & 127], v);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ2_XS>(const char * row, int64_t c, float * v) {
    const block_iq2_xs * b = (const block_iq2_xs *) row + c / 32;
    const int e = (int) (c % 32);
    const uint16_t q = b->qs[e];
    cu_grid_put(CU_GRID(iq2xs_grid)[q & 511], 8, cu_iq2_db(cu_h2f(b->d), b->scales, e / 2), CU_GRID(iq2_ksigns)[q >> 9], v);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ2_S>(const char * row, int64_t c, float * v) {
    const block_iq2_s * b = (const block_iq2_s *) row + c / 32;
    const int e = (int) (c % 32);
    const int idx = b->qs[e] | (((b->qh[e / 4] >> (2 * (e % 4))) & 3) << 8);
    cu_grid_put(CU_GRID(iq2s_grid)[idx], 8, cu_iq2_db(cu_h2f(b->d), b->scales, e / 2), b->qs[QK_IQ / 8 + e], v);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ3_XXS>(const char * row, int64_t c, float * v) {
    const block_iq3_xxs * b = (const block_iq3_xxs *) row + c / 32;
    const int e = (int) (c % 32), ib = e / 4, l = e % 4;
    const uint8_t * sc = b->qs + QK_IQ / 4 + 4 * ib;
    const uint32_t w = (uint32_t) sc[0] | ((uint32_t) sc[1] << 8) | ((uint32_t) sc[2] << 16) | ((uint32_t) sc[3] << 24);
    const float db = cu_h2f(b->d) * (0.5f + (float) (w >> 28)) * 0.5f;
    const unsigned sg = CU_GRID(iq2_ksigns)[(w >> (7 * l)) & 127];
    cu_grid_put(CU_GRID(iq3xxs_grid)[b->qs[8 * ib + 2 * l]], 4, db, sg & 0xF, v);
    cu_grid_put(CU_GRID(iq3xxs_grid)[b->qs[8 * ib + 2 * l + 1]], 4, db, sg >> 4, v + 4);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ3_S>(const char * row, int64_t c, float * v) {
    const block_iq3_s * b = (const block_iq3_s *) row + c / 32;
    const int e = (int) (c % 32), ib = e / 4, p = e % 4;
    const float db = cu_h2f(b->d) * (float) (1 + 2 * ((b->scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
    const unsigned sg = b->signs[4 * ib + p];
    for (int h = 0; h < 2; h++) {
        const int l = 2 * p + h;
        const int idx = b->qs[8 * ib + l] | (((b->qh[ib] >> l) & 1) << 8);
        cu_grid_put(CU_GRID(iq3s_grid)[idx], 4, db, h ? sg >> 4 : sg & 0xF, v + 4 * h);
    }
}

// dl * (grid + delta) for the 8 values of an IQ1 grid entry (bytes are int8 -1, 0, 1).
static __host__ __device__ __forceinline__ void cu_iq1_put(int idx, float dl, float delta, float * v) {
    const uint64_t e = CU_GRID(iq1s_grid)[idx];
    for (int j = 0; j < 8; j++) v[j] = dl * ((float) (int8_t) ((e >> (8 * j)) & 0xFF) + delta);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ1_S>(const char * row, int64_t c, float * v) {
    const block_iq1_s * b = (const block_iq1_s *) row + c / 32;
    const int e = (int) (c % 32), ib = e / 4, l = e % 4;
    const unsigned qh = b->qh[ib];
    const float dl = cu_h2f(b->d) * (float) (2 * ((qh >> 12) & 7) + 1);
    cu_iq1_put(b->qs[e] | (((qh >> (3 * l)) & 7) << 8), dl, qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA, v);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ1_M>(const char * row, int64_t c, float * v) {
    const block_iq1_m * b = (const block_iq1_m *) row + c / 32;
    const int e = (int) (c % 32), ks = e / 2;
    const uint8_t * s8 = b->scales;
    uint16_t sc[4];
    for (int k = 0; k < 4; k++) sc[k] = (uint16_t) (s8[2 * k] | (s8[2 * k + 1] << 8));
    const ggml_fp16_t h = (ggml_fp16_t) ((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
    const float dl = cu_h2f(h) * (float) (2 * ((sc[ks / 4] >> (3 * (ks % 4))) & 7) + 1);
    const unsigned nib = (b->qh[e / 2] >> (4 * (e % 2))) & 0xF;
    cu_iq1_put(b->qs[e] | ((nib & 7) << 8), dl, nib & 8 ? -IQ1S_DELTA : IQ1S_DELTA, v);
}

// Trit n (0..4) of a stored TQ1_0 byte q.
static __host__ __device__ __forceinline__ int cu_tq1_trit(uint8_t q, int n) {
    int m = 1;
    for (int k = 0; k < n; k++) m *= 3;
    return (int) (((unsigned) (uint8_t) (q * m) * 3) >> 8);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_TQ1_0>(const char * row, int64_t c, float * v) {
    const block_tq1_0 * b = (const block_tq1_0 *) row + c / 32;
    const float d = cu_h2f(b->d);
    for (int i = 0; i < 8; i++) {
        const int e = 8 * (int) (c % 32) + i;
        const int t = e < 160 ? cu_tq1_trit(b->qs[e % 32], e / 32)
            : e < 240         ? cu_tq1_trit(b->qs[32 + (e - 160) % 16], (e - 160) / 16)
                              : cu_tq1_trit(b->qh[(e - 240) % 4], (e - 240) / 4);
        v[i] = d * (float) (t - 1);
    }
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_TQ2_0>(const char * row, int64_t c, float * v) {
    const block_tq2_0 * b = (const block_tq2_0 *) row + c / 32;
    const int e = 8 * (int) (c % 32), n = (e % 128) / 32;
    const uint8_t * q = b->qs + 32 * (e / 128) + (e % 32);
    const float d = cu_h2f(b->d);
    for (int i = 0; i < 8; i++) v[i] = d * (float) (((q[i] >> (2 * n)) & 3) - 1);
}
