// ggml-impl.h — internal helpers shared by the core, the quant formats and the CPU backend.
// Not installed; not part of the ABI.
//
// op_params layouts (int32 slots of tensor->op_params; floats stored bit-wise):
//   SCALE          f32[0] = s
//   RMS_NORM, NORM, L2_NORM f32[0] = eps
//   SSM_CONV       src[0] = sx [d_conv-1+n_t, d_inner, n_s], src[1] = c [d_conv, d_inner]
//   GATED_DELTA_NET i32[0] = K (state snapshots), i32[1] = chunk (0: token by token);
//                  src[0..5] = q, k, v, g, beta, state
//   SOFT_MAX       f32[0] = scale, f32[1] = max_bias; src[1] = mask or NULL
//   ROPE           i32[1] = n_dims, i32[2] = mode, i32[4] = n_ctx_orig,
//                  f32[5] = freq_base, f32[6] = freq_scale, f32[7] = ext_factor,
//                  f32[8] = attn_factor, f32[9] = beta_fast, f32[10] = beta_slow;
//                  src[1] = positions (I32), src[2] = freq factors or NULL
//   GELU           i32[0] = 0: tanh approximation, 1: exact (x/2 (1 + erf(x/sqrt 2)), ggml_gelu_erf)
//   DIAG_MASK_INF  i32[0] = n_past
//   CONCAT         i32[0] = dim
//   SWIGLU         src[0] = gate, src[1] = up or NULL (NULL: halves of src[0])
//   GET_ROWS       src[0] = table, src[1] = I32 row ids
//   SET_ROWS       dst is a view of the destination; src[0] = rows (F32), src[1] = ids (I32/I64)
//   CPY            dst is a view of the destination; src[0] = source, src[1] = destination
//   FLASH_ATTN_EXT f32[0] = scale, f32[1] = max_bias, f32[2] = logit_softcap;
//                  src[0..3] = q, k, v, mask (or NULL)
//   ARGSORT        i32[0] = enum ggml_sort_order
//   TOP_K          i32[0] = k (dst->ne[0])
//   MUL_MAT_ID     src[0] = experts [K, M, n_as], src[1] = b [K, n_b, n_t], src[2] = ids I32 [n_used, n_t]
//   LORA_ADD       f32[0] = scale; src[0..4] = y, x, a, bt, rs (or NULL)
//   inplace ops    dst->view_src == src[0] (dst shares a's data)
#ifndef GGML_IMPL_H
#define GGML_IMPL_H

#include "ggml.h"
#include "ggml-mem.h"

#include <string.h>
#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

// ggml_log_internal (ggml.h) logs through the callback set by ggml_log_set.
#define GGML_LOG_DEBUG(...) ggml_log_internal(GGML_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define GGML_LOG_INFO(...)  ggml_log_internal(GGML_LOG_LEVEL_INFO, __VA_ARGS__)
#define GGML_LOG_WARN(...)  ggml_log_internal(GGML_LOG_LEVEL_WARN, __VA_ARGS__)
#define GGML_LOG_ERROR(...) ggml_log_internal(GGML_LOG_LEVEL_ERROR, __VA_ARGS__)

// GGML_ASSERT, GGML_PAD and GGML_UNUSED are in ggml.h; the allocation wrappers (GGML_MALLOC,
// ...) and the allocation-failure test hook in ggml-mem.h.

#define GGML_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GGML_MAX(a, b) ((a) > (b) ? (a) : (b))

static inline int32_t ggml_get_op_params_i32(const struct ggml_tensor * t, int i) { return t->op_params[i]; }
static inline float ggml_get_op_params_f32(const struct ggml_tensor * t, int i) {
    float v;
    memcpy(&v, &t->op_params[i], sizeof(v));
    return v;
}
static inline void ggml_set_op_params_i32(struct ggml_tensor * t, int i, int32_t v) { t->op_params[i] = v; }
static inline void ggml_set_op_params_f32(struct ggml_tensor * t, int i, float v) { memcpy(&t->op_params[i], &v, sizeof(v)); }

// Graph storage (arena-allocated): nodes in execution order plus the leaves they read.
struct ggml_cgraph {
    int size;                       // capacity of nodes and leafs
    int n_nodes;
    int n_leafs;
    struct ggml_tensor ** nodes;    // computed tensors, sources before users
    struct ggml_tensor ** leafs;    // inputs / weights / constants
    struct ggml_tensor ** visited;  // open-addressing hash set, capacity visited_size
    size_t visited_size;
    bool overflow;                  // a node did not fit (or was NULL): computing it fails
};

// True for ops that only reinterpret their source's data (no computation).
static inline bool ggml_op_is_view(enum ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_RESHAPE || op == GGML_OP_VIEW || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

// Fast inline half conversions (the exported functions call these).
static inline float ggml_compute_fp16_to_fp32(ggml_fp16_t h) {
    const uint32_t sign = (uint32_t) (h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { // subnormal: normalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400) == 0) {
                mant <<= 1;
                exp--;
            }
            mant &= 0x3FF;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static inline ggml_fp16_t ggml_compute_fp32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t absx = x & 0x7FFFFFFFu;
    if (absx > 0x7F800000u) return (ggml_fp16_t) (sign | 0x7E00); // NaN
    if (absx >= 0x477FF000u) {                                  // overflow -> inf
        return (ggml_fp16_t) (sign | 0x7C00);
    }
    if (absx < 0x38800000u) {                                   // subnormal or zero
        if (absx < 0x33000000u) return (ggml_fp16_t) sign;       // < 2^-25 rounds to 0
        const uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7FFFFF) | 0x800000;
        // value = m * 2^(e-150); half subnormal unit = 2^-24 -> q = m * 2^(e-126)
        const uint32_t sh = 126 - e;                            // right shift amount (>= 1)
        uint32_t q = m >> sh;
        const uint32_t rem = m & ((1u << sh) - 1);
        const uint32_t half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (ggml_fp16_t) (sign | q);
    }
    uint32_t h = ((absx >> 13) - (112u << 10));                 // rebias exponent
    const uint32_t rem = absx & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;        // round to nearest even
    return (ggml_fp16_t) (sign | h);
}

static inline float ggml_compute_bf16_to_fp32(ggml_bf16_t h) {
    uint32_t bits = (uint32_t) h.bits << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static inline ggml_bf16_t ggml_compute_fp32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    ggml_bf16_t r;
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
        r.bits = (uint16_t) ((x >> 16) | 64);
        return r;
    } // quiet NaN
    r.bits = (uint16_t) ((x + (0x7FFF + ((x >> 16) & 1))) >> 16);
    return r;
}

#define GGML_FP16_TO_FP32(x) ggml_compute_fp16_to_fp32(x)
#define GGML_FP32_TO_FP16(x) ggml_compute_fp32_to_fp16(x)

#ifdef __cplusplus
}
#endif

#endif // GGML_IMPL_H
