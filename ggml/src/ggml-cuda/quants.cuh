// quants.cuh — device-side reading of the GGUF block formats (layouts in ../ggml-quants.h):
// cu_deq8<T>(row, c, v) writes elements [8c, 8c + 8) of a row of type T as floats. Every
// consumer (get_rows, the matrix-vector kernel, dequantization to F16 tiles) goes through it,
// so each format's bit layout is written once. Host-callable too: tests/cuda/test_cuda_host.cu checks
// every type against the CPU dequantizers without a GPU. Eight consecutive elements always share one
// scale (the smallest sub-block is 16), which keeps each call to one or two scale reads.
#pragma once

#include "common.cuh"
#include "../ggml-quants.h"

static __host__ __device__ __forceinline__ float cu_h2f(ggml_fp16_t h) { return __half2float(__ushort_as_half(h)); }

// 6-bit scale and min of sub-block j of a q4_K / q5_K block (the packing of get_scale_min_k4).
static __host__ __device__ __forceinline__ void cu_scale_min_k4(int j, const uint8_t * q, float & sc, float & m) {
    if (j < 4) {
        sc = (float) (q[j] & 63);
        m = (float) (q[j + 4] & 63);
    } else {
        sc = (float) ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = (float) ((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

template <int T> struct cu_qtraits;
template <> struct cu_qtraits<GGML_TYPE_F32> {
    static constexpr int qk = 1;
    static constexpr int ts = 4;
};
template <> struct cu_qtraits<GGML_TYPE_F16> {
    static constexpr int qk = 1;
    static constexpr int ts = 2;
};
template <> struct cu_qtraits<GGML_TYPE_BF16> {
    static constexpr int qk = 1;
    static constexpr int ts = 2;
};
template <> struct cu_qtraits<GGML_TYPE_Q4_0> {
    static constexpr int qk = 32;
    static constexpr int ts = sizeof(block_q4_0);
};
template <> struct cu_qtraits<GGML_TYPE_Q4_1> {
    static constexpr int qk = 32;
    static constexpr int ts = sizeof(block_q4_1);
};
template <> struct cu_qtraits<GGML_TYPE_Q5_0> {
    static constexpr int qk = 32;
    static constexpr int ts = sizeof(block_q5_0);
};
template <> struct cu_qtraits<GGML_TYPE_Q5_1> {
    static constexpr int qk = 32;
    static constexpr int ts = sizeof(block_q5_1);
};
template <> struct cu_qtraits<GGML_TYPE_Q8_0> {
    static constexpr int qk = 32;
    static constexpr int ts = sizeof(block_q8_0);
};
template <> struct cu_qtraits<GGML_TYPE_Q2_K> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_q2_K);
};
template <> struct cu_qtraits<GGML_TYPE_Q3_K> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_q3_K);
};
template <> struct cu_qtraits<GGML_TYPE_Q4_K> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_q4_K);
};
template <> struct cu_qtraits<GGML_TYPE_Q5_K> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_q5_K);
};
template <> struct cu_qtraits<GGML_TYPE_Q6_K> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_q6_K);
};
template <> struct cu_qtraits<GGML_TYPE_IQ4_NL> {
    static constexpr int qk = 32;
    static constexpr int ts = sizeof(block_iq4_nl);
};
template <> struct cu_qtraits<GGML_TYPE_IQ4_XS> {
    static constexpr int qk = 256;
    static constexpr int ts = sizeof(block_iq4_xs);
};
template <> struct cu_qtraits<GGML_TYPE_MXFP4> {
    static constexpr int qk = 32;
    static constexpr int ts = sizeof(block_mxfp4);
};

// The 16 levels of IQ4_NL and MXFP4 (the values of ggml-quants-iq.c's tables, which the library
// does not export): device code reads them from constant memory, host code from plain arrays.
#define CU_KVALUES_IQ4NL_INIT { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 }
#define CU_KVALUES_MXFP4_INIT { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 }
// (declared in both compilation passes: the host pass registers constant-memory variables)
static __constant__ int8_t cu_kvalues_iq4nl[16] = CU_KVALUES_IQ4NL_INIT;
static __constant__ int8_t cu_kvalues_mxfp4[16] = CU_KVALUES_MXFP4_INIT;
#if defined(__CUDA_ARCH__)
#define CU_KV_IQ4NL cu_kvalues_iq4nl
#define CU_KV_MXFP4 cu_kvalues_mxfp4
#else
static const int8_t cu_host_kvalues_iq4nl[16] = CU_KVALUES_IQ4NL_INIT;
static const int8_t cu_host_kvalues_mxfp4[16] = CU_KVALUES_MXFP4_INIT;
#define CU_KV_IQ4NL cu_host_kvalues_iq4nl
#define CU_KV_MXFP4 cu_host_kvalues_mxfp4
#endif

// The MXFP4 block scale 2^(e - 128) (as ggml_e8m0_to_fp32_half).
static __host__ __device__ __forceinline__ float cu_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
#endif
}

// The signed 6-bit scale of sub-block ib of an IQ4_XS block.
static __host__ __device__ __forceinline__ int cu_iq4_xs_scale(const block_iq4_xs * b, int ib) {
    return (((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b->scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

template <int T> static __host__ __device__ __forceinline__ void cu_deq8(const char * row, int64_t c, float * v);

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_F32>(const char * row, int64_t c, float * v) {
    const float4 * p = (const float4 *) (row + c * 32);
    if (((uintptr_t) p & 15) == 0) {
        const float4 a = p[0], b = p[1];
        v[0] = a.x;
        v[1] = a.y;
        v[2] = a.z;
        v[3] = a.w;
        v[4] = b.x;
        v[5] = b.y;
        v[6] = b.z;
        v[7] = b.w;
    } else {
        const float * f = (const float *) p;
        for (int i = 0; i < 8; i++) v[i] = f[i];
    }
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_F16>(const char * row, int64_t c, float * v) {
    const __half * h = (const __half *) (row + c * 16);
    for (int i = 0; i < 8; i++) v[i] = __half2float(h[i]);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_BF16>(const char * row, int64_t c, float * v) {
    const __nv_bfloat16 * h = (const __nv_bfloat16 *) (row + c * 16);
    for (int i = 0; i < 8; i++) v[i] = __bfloat162float(h[i]);
}

// q4_0: chunk p (0..3) of a block: p < 2 low nibbles of qs[8p..], else high nibbles of qs[8(p-2)..].
template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q4_0>(const char * row, int64_t c, float * v) {
    const block_q4_0 * b = (const block_q4_0 *) row + c / 4;
    const int p = (int) (c % 4);
    const float d = cu_h2f(b->d);
    const uint8_t * q = b->qs + 8 * (p & 1);
    const int sh = p >= 2 ? 4 : 0;
    for (int i = 0; i < 8; i++) v[i] = d * (float) (((q[i] >> sh) & 0xF) - 8);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q4_1>(const char * row, int64_t c, float * v) {
    const block_q4_1 * b = (const block_q4_1 *) row + c / 4;
    const int p = (int) (c % 4);
    const float d = cu_h2f(b->d), m = cu_h2f(b->m);
    const uint8_t * q = b->qs + 8 * (p & 1);
    const int sh = p >= 2 ? 4 : 0;
    for (int i = 0; i < 8; i++) v[i] = d * (float) ((q[i] >> sh) & 0xF) + m;
}

// q5_0: bit 4 of element j is bit j of qh.
template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q5_0>(const char * row, int64_t c, float * v) {
    const block_q5_0 * b = (const block_q5_0 *) row + c / 4;
    const int p = (int) (c % 4);
    const float d = cu_h2f(b->d);
    const uint32_t qh =
        (uint32_t) b->qh[0] | ((uint32_t) b->qh[1] << 8) | ((uint32_t) b->qh[2] << 16) | ((uint32_t) b->qh[3] << 24);
    const uint8_t * q = b->qs + 8 * (p & 1);
    const int sh = p >= 2 ? 4 : 0;
    for (int i = 0; i < 8; i++) {
        const int j = 8 * p + i;
        const int h = (int) ((qh >> j) & 1) << 4;
        v[i] = d * (float) ((((q[i] >> sh) & 0xF) | h) - 16);
    }
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q5_1>(const char * row, int64_t c, float * v) {
    const block_q5_1 * b = (const block_q5_1 *) row + c / 4;
    const int p = (int) (c % 4);
    const float d = cu_h2f(b->d), m = cu_h2f(b->m);
    const uint32_t qh =
        (uint32_t) b->qh[0] | ((uint32_t) b->qh[1] << 8) | ((uint32_t) b->qh[2] << 16) | ((uint32_t) b->qh[3] << 24);
    const uint8_t * q = b->qs + 8 * (p & 1);
    const int sh = p >= 2 ? 4 : 0;
    for (int i = 0; i < 8; i++) {
        const int j = 8 * p + i;
        const int h = (int) ((qh >> j) & 1) << 4;
        v[i] = d * (float) (((q[i] >> sh) & 0xF) | h) + m;
    }
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q8_0>(const char * row, int64_t c, float * v) {
    const block_q8_0 * b = (const block_q8_0 *) row + c / 4;
    const int p = (int) (c % 4);
    const float d = cu_h2f(b->d);
    const int8_t * q = b->qs + 8 * p;
    for (int i = 0; i < 8; i++) v[i] = d * (float) q[i];
}

// q2_K: element e of the block: half n = e/128, s = (e%128)/32 (shift 2s), l = e%32 -> qs[32n + l];
// scale byte (e/16).
template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q2_K>(const char * row, int64_t c, float * v) {
    const block_q2_K * b = (const block_q2_K *) row + c / 32;
    const int e = 8 * (int) (c % 32);
    const float d = cu_h2f(b->d), dmin = cu_h2f(b->dmin);
    const uint8_t sc = b->scales[e / 16];
    const float dl = d * (float) (sc & 0xF), ml = dmin * (float) (sc >> 4);
    const uint8_t * q = b->qs + 32 * (e / 128) + (e % 32);
    const int sh = 2 * ((e % 128) / 32);
    for (int i = 0; i < 8; i++) v[i] = dl * (float) ((q[i] >> sh) & 3) - ml;
}

// q3_K: low 2 bits as q2_K's, high bit (set: no -4) in hmask[e%32] bit e/32; 6-bit scales biased by 32.
template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q3_K>(const char * row, int64_t c, float * v) {
    const block_q3_K * b = (const block_q3_K *) row + c / 32;
    const int e = 8 * (int) (c % 32);
    const int j = e / 16;   // scale index
    const uint8_t * s = b->scales;
    const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    const float dl = cu_h2f(b->d) * (float) ((lo | (hi << 4)) - 32);
    const uint8_t * q = b->qs + 32 * (e / 128) + (e % 32);
    const int sh = 2 * ((e % 128) / 32);
    const uint8_t * hm = b->hmask + (e % 32);
    const int hb = e / 32;
    for (int i = 0; i < 8; i++) {
        const int qv = (q[i] >> sh) & 3;
        const int high = (hm[i] >> hb) & 1;
        v[i] = dl * (float) (qv - (high ? 0 : 4));
    }
}

// q4_K: sub-block sb = e/32 uses qs[32(e/64) + e%32], low nibble for even sb, high for odd.
template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q4_K>(const char * row, int64_t c, float * v) {
    const block_q4_K * b = (const block_q4_K *) row + c / 32;
    const int e = 8 * (int) (c % 32);
    const int sb = e / 32;
    float sc, m;
    cu_scale_min_k4(sb, b->scales, sc, m);
    const float d1 = cu_h2f(b->d) * sc, m1 = cu_h2f(b->dmin) * m;
    const uint8_t * q = b->qs + 32 * (e / 64) + (e % 32);
    const int sh = (sb & 1) ? 4 : 0;
    for (int i = 0; i < 8; i++) v[i] = d1 * (float) ((q[i] >> sh) & 0xF) - m1;
}

// q5_K: as q4_K plus bit sb of qh[e%32].
template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q5_K>(const char * row, int64_t c, float * v) {
    const block_q5_K * b = (const block_q5_K *) row + c / 32;
    const int e = 8 * (int) (c % 32);
    const int sb = e / 32;
    float sc, m;
    cu_scale_min_k4(sb, b->scales, sc, m);
    const float d1 = cu_h2f(b->d) * sc, m1 = cu_h2f(b->dmin) * m;
    const uint8_t * q = b->qs + 32 * (e / 64) + (e % 32);
    const uint8_t * qh = b->qh + (e % 32);
    const int sh = (sb & 1) ? 4 : 0;
    for (int i = 0; i < 8; i++) {
        const int h = ((qh[i] >> sb) & 1) << 4;
        v[i] = d1 * (float) (((q[i] >> sh) & 0xF) + h) - m1;
    }
}

// q6_K: half n = e/128; quarter t = (e%128)/32, l = e%32: low 4 bits from ql[64n + l + 32(t&1)]
// (high nibble for t >= 2), high 2 bits from qh[32n + l] >> 2t; scale sc[8n + l/16 + 2t].
template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_Q6_K>(const char * row, int64_t c, float * v) {
    const block_q6_K * b = (const block_q6_K *) row + c / 32;
    const int e = 8 * (int) (c % 32);
    const int n = e / 128, t = (e % 128) / 32, l = e % 32;
    const uint8_t * ql = b->ql + 64 * n + l + 32 * (t & 1);
    const uint8_t * qh = b->qh + 32 * n + l;
    const float dl = cu_h2f(b->d) * (float) b->scales[8 * n + l / 16 + 2 * t];
    const int shl = t >= 2 ? 4 : 0, shh = 2 * t;
    for (int i = 0; i < 8; i++) {
        const int q = (((ql[i] >> shl) & 0xF) | (((qh[i] >> shh) & 3) << 4)) - 32;
        v[i] = dl * (float) q;
    }
}

// Non-linear 4-bit blocks: chunk p of 32 values reads nibbles as q4_0 does, through a level table.
static __host__ __device__ __forceinline__ void cu_deq8_lut(const uint8_t * qs, int p, float d, const int8_t * lut, float * v) {
    const uint8_t * q = qs + 8 * (p & 1);
    const int sh = p >= 2 ? 4 : 0;
    for (int i = 0; i < 8; i++) v[i] = d * (float) lut[(q[i] >> sh) & 0xF];
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ4_NL>(const char * row, int64_t c, float * v) {
    const block_iq4_nl * b = (const block_iq4_nl *) row + c / 4;
    cu_deq8_lut(b->qs, (int) (c % 4), cu_h2f(b->d), CU_KV_IQ4NL, v);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_MXFP4>(const char * row, int64_t c, float * v) {
    const block_mxfp4 * b = (const block_mxfp4 *) row + c / 4;
    cu_deq8_lut(b->qs, (int) (c % 4), cu_e8m0_half(b->e), CU_KV_MXFP4, v);
}

template <> __host__ __device__ __forceinline__ void cu_deq8<GGML_TYPE_IQ4_XS>(const char * row, int64_t c, float * v) {
    const block_iq4_xs * b = (const block_iq4_xs *) row + c / 32;
    const int e = 8 * (int) (c % 32), ib = e / 32;
    const float dl = cu_h2f(b->d) * (float) cu_iq4_xs_scale(b, ib);
    cu_deq8_lut(b->qs + 16 * ib, (e % 32) / 8, dl, CU_KV_IQ4NL, v);
}

#include "quants-iq.cuh"

// One Q8_0 block from 32 floats, as quantize_row_q8_0_ref: d = amax / 127, q = round(x / d)
// (half away from zero), d stored as F16.
static __host__ __device__ __forceinline__ void cu_quantize_q8_0(const float * x, block_q8_0 * y) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y->d = __half_as_ushort(__float2half_rn(d));
    for (int j = 0; j < QK8_0; j++) y->qs[j] = (int8_t) roundf(x[j] * id);
}

// Calls F.template operator()<T>() for the runtime type t; false for a type without cu_deq8.
template <typename F> static bool cu_dispatch_type(int t, F && f) {
    switch (t) {
        case GGML_TYPE_F32: f.template operator()<GGML_TYPE_F32>(); return true;
        case GGML_TYPE_F16: f.template operator()<GGML_TYPE_F16>(); return true;
        case GGML_TYPE_BF16: f.template operator()<GGML_TYPE_BF16>(); return true;
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
        case GGML_TYPE_IQ2_XXS: f.template operator()<GGML_TYPE_IQ2_XXS>(); return true;
        case GGML_TYPE_IQ2_XS: f.template operator()<GGML_TYPE_IQ2_XS>(); return true;
        case GGML_TYPE_IQ2_S: f.template operator()<GGML_TYPE_IQ2_S>(); return true;
        case GGML_TYPE_IQ3_XXS: f.template operator()<GGML_TYPE_IQ3_XXS>(); return true;
        case GGML_TYPE_IQ3_S: f.template operator()<GGML_TYPE_IQ3_S>(); return true;
        case GGML_TYPE_IQ1_S: f.template operator()<GGML_TYPE_IQ1_S>(); return true;
        case GGML_TYPE_IQ1_M: f.template operator()<GGML_TYPE_IQ1_M>(); return true;
        case GGML_TYPE_TQ1_0: f.template operator()<GGML_TYPE_TQ1_0>(); return true;
        case GGML_TYPE_TQ2_0: f.template operator()<GGML_TYPE_TQ2_0>(); return true;
        default: return false;
    }
}

// True for the types cu_deq8 reads.
static inline bool cu_type_has_deq8(enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_F32:
        case GGML_TYPE_F16:
        case GGML_TYPE_BF16:
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1:
        case GGML_TYPE_Q8_0:
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K:
        case GGML_TYPE_IQ4_NL:
        case GGML_TYPE_IQ4_XS:
        case GGML_TYPE_MXFP4:
        case GGML_TYPE_IQ2_XXS:
        case GGML_TYPE_IQ2_XS:
        case GGML_TYPE_IQ2_S:
        case GGML_TYPE_IQ3_XXS:
        case GGML_TYPE_IQ3_S:
        case GGML_TYPE_IQ1_S:
        case GGML_TYPE_IQ1_M:
        case GGML_TYPE_TQ1_0:
        case GGML_TYPE_TQ2_0: return true;
        default: return false;
    }
}
