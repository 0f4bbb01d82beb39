// quants-neon.c — AArch64 NEON dot products (quants-neon-kernels.h; the IQ / TQ / MXFP4 types in
// quants-iq-neon-kernels.h) and activation quantizers (CMake builds this file
// only for aarch64; the guard below keeps it empty anywhere else).
//
// The integer kernels (quants-neon-kernels.h) are compiled twice: with sdot (ARMv8.2 dot
// product) and without it. A build whose flags already enable dotprod keeps only the first;
// otherwise the CPU is asked at run time (Linux HWCAP, macOS sysctl).
#if defined(__aarch64__)

#include "quants.h"

#include "neon-dotprod.h"

#include <arm_neon.h>
#include <string.h>

#if defined(__linux__)
#include <sys/auxv.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

// One half to float with the hardware conversion.
static inline float neon_fp16_to_f32(ggml_fp16_t h) {
    __fp16 v;
    memcpy(&v, &h, sizeof(v));
    return (float) v;
}

// ---- float types ----

static void vec_dot_f32_f32(int n, float * s, const void * x, const void * y) {
    const float * a = (const float *) x;
    const float * b = (const float *) y;
    float32x4_t acc[4] = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; k++) acc[k] = vfmaq_f32(acc[k], vld1q_f32(a + i + 4 * k), vld1q_f32(b + i + 4 * k));
    }
    for (; i + 4 <= n; i += 4) acc[0] = vfmaq_f32(acc[0], vld1q_f32(a + i), vld1q_f32(b + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; i++) sum += a[i] * b[i];
    *s = sum;
}

static inline float32x4_t load_f16x4(const ggml_fp16_t * p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

static void vec_dot_f16_f16(int n, float * s, const void * x, const void * y) {
    const ggml_fp16_t * a = (const ggml_fp16_t *) x;
    const ggml_fp16_t * b = (const ggml_fp16_t *) y;
    float32x4_t acc[4] = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; k++) acc[k] = vfmaq_f32(acc[k], load_f16x4(a + i + 4 * k), load_f16x4(b + i + 4 * k));
    }
    for (; i + 4 <= n; i += 4) acc[0] = vfmaq_f32(acc[0], load_f16x4(a + i), load_f16x4(b + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; i++) sum += neon_fp16_to_f32(a[i]) * neon_fp16_to_f32(b[i]);
    *s = sum;
}

static inline float32x4_t load_bf16x4(const ggml_bf16_t * p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *) p), 16));
}

static void vec_dot_bf16_bf16(int n, float * s, const void * x, const void * y) {
    const ggml_bf16_t * a = (const ggml_bf16_t *) x;
    const ggml_bf16_t * b = (const ggml_bf16_t *) y;
    float32x4_t acc[4] = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; k++) acc[k] = vfmaq_f32(acc[k], load_bf16x4(a + i + 4 * k), load_bf16x4(b + i + 4 * k));
    }
    for (; i + 4 <= n; i += 4) acc[0] = vfmaq_f32(acc[0], load_bf16x4(a + i), load_bf16x4(b + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; i++) sum += ggml_compute_bf16_to_fp32(a[i]) * ggml_compute_bf16_to_fp32(b[i]);
    *s = sum;
}

// ---- activation quantizers (bit-exact with the reference ones) ----

static inline float amax_32(const float * x) {
    float32x4_t m = vabsq_f32(vld1q_f32(x));
    for (int j = 4; j < 32; j += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + j)));
    return vmaxvq_f32(m);
}

// 32 values times id, rounded half away from zero (fcvtas is exactly roundf), into q; returns sum.
static inline int quantize_32_away(const float * x, float id, int8_t * q) {
    int32x4_t sum = vdupq_n_s32(0);
    for (int j = 0; j < 32; j += 8) {
        const int32x4_t i0 = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + j), id));
        const int32x4_t i1 = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + j + 4), id));
        sum = vaddq_s32(sum, vaddq_s32(i0, i1));
        const int16x8_t h = vcombine_s16(vqmovn_s32(i0), vqmovn_s32(i1));
        vst1_s8(q + j, vqmovn_s16(h));
    }
    return vaddvq_s32(sum);
}

static void quantize_row_q8_0(const float * x, void * vy, int64_t k) {
    block_q8_0 * y = (block_q8_0 *) vy;
    const int64_t nb = k / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = amax_32(x + i * QK8_0) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = GGML_FP32_TO_FP16(d);
        quantize_32_away(x + i * QK8_0, id, y[i].qs);
    }
}

static void quantize_row_q8_1(const float * x, void * vy, int64_t k) {
    block_q8_1 * y = (block_q8_1 *) vy;
    const int64_t nb = k / QK8_1;
    for (int64_t i = 0; i < nb; i++) {
        const float d = amax_32(x + i * QK8_1) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const int sum = quantize_32_away(x + i * QK8_1, id, y[i].qs);
        y[i].d = d;
        y[i].s = d * (float) sum;
    }
}

// q8_K rounds half to even (fcvtns), as the reference does.
static void quantize_row_q8_K(const float * x, void * vy, int64_t k) {
    block_q8_K * y = (block_q8_K *) vy;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j += 32) amax = GGML_MAX(amax, amax_32(x + j));
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        const float iscale = 127.0f / amax;
        for (int j = 0; j < QK_K; j += 16) {
            int32x4_t v[4];
            for (int u = 0; u < 4; u++) {
                v[u] = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + j + 4 * u), iscale));
                v[u] = vmaxq_s32(vdupq_n_s32(-127), vminq_s32(vdupq_n_s32(127), v[u]));
            }
            const int16x8_t h0 = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
            const int16x8_t h1 = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
            vst1q_s8(y[i].qs + j, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
            y[i].bsums[j / 16] = (int16_t) vaddvq_s32(vaddq_s32(vaddq_s32(v[0], v[1]), vaddq_s32(v[2], v[3])));
        }
        y[i].d = 1.0f / iscale;
    }
}

static void from_float_f16(const float * x, void * y, int64_t k) {
    ggml_fp16_t * h = (ggml_fp16_t *) y;
    int64_t i = 0;
    for (; i + 4 <= k; i += 4) vst1_u16(h + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < k; i++) h[i] = GGML_FP32_TO_FP16(x[i]);
}

// ---- integer dot kernels, without and with sdot ----

static inline int32x4_t neon_i8dot_emul(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

// ---- pieces of the IQ / TQ kernels (quants-iq-neon-kernels.h) that need no dot product ----

// Two 8-byte grid entries (little-endian words of their byte values) as one vector.
static inline int8x16_t neon_grid16(uint64_t g0, uint64_t g1) {
    return vreinterpretq_s8_u64(vcombine_u64(vcreate_u64(g0), vcreate_u64(g1)));
}

// All-ones bytes where bit j of s0 (bytes 0..7) or of s1 (bytes 8..15) is set.
static inline uint8x16_t neon_sign_mask16(uint8_t s0, uint8_t s1) {
    static const uint8_t bit_tab[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    return vtstq_u8(vcombine_u8(vdup_n_u8(s0), vdup_n_u8(s1)), vld1q_u8(bit_tab));
}

// Two 4-value IQ3 grid entries as one 8-value word (g0 values 0..3, g1 4..7).
static inline uint64_t neon_iq3_pair(uint32_t g0, uint32_t g1) { return (uint64_t) g0 | ((uint64_t) g1 << 32); }

// Sum of a q8_K block's 256 values from its 16 partial sums.
static inline int neon_bsums_total(const int16_t * bsums) {
    return vaddlvq_s16(vld1q_s16(bsums)) + vaddlvq_s16(vld1q_s16(bsums + 8));
}

// Trit n of 16 TQ1_0 bytes (m = 3^n): ((q * m) mod 256 * 3) >> 8, as ggml_tq1_trit.
static inline int8x16_t neon_tq1_trits16(uint8x16_t q, uint8_t m) {
    const uint8x16_t v = vmulq_u8(q, vdupq_n_u8(m));
    const uint16x8_t lo = vmull_u8(vget_low_u8(v), vdup_n_u8(3)), hi = vmull_high_u8(v, vdupq_n_u8(3));
    return vreinterpretq_s8_u8(vcombine_u8(vshrn_n_u16(lo, 8), vshrn_n_u16(hi, 8)));
}

#if !defined(NEON_DOTPROD_ALWAYS)
#define NEON_NAME(name)       name##_nodot
#define NEON_I8DOT(acc, a, b) neon_i8dot_emul(acc, a, b)
#include "quants-neon-kernels.h"
#include "quants-iq-neon-kernels.h"
#undef NEON_NAME
#undef NEON_I8DOT
#endif

NEON_DOTPROD_BEGIN

#define NEON_NAME(name)       name##_dot
#define NEON_I8DOT(acc, a, b) vdotq_s32(acc, a, b)
#include "quants-neon-kernels.h"
#include "quants-iq-neon-kernels.h"
#undef NEON_NAME
#undef NEON_I8DOT

NEON_DOTPROD_END

bool ggml_cpu_neon_has_dotprod(void) {
#if defined(NEON_DOTPROD_ALWAYS)
    return true;
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & (1UL << 20)) != 0; // HWCAP_ASIMDDP
#elif defined(__APPLE__)
    int v = 0;
    size_t len = sizeof(v);
    return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &len, NULL, 0) == 0 && v != 0;
#else
    return false;
#endif
}

void ggml_cpu_quants_init_neon(struct ggml_type_traits_cpu * t) {
    t[GGML_TYPE_F32].vec_dot = vec_dot_f32_f32;
    t[GGML_TYPE_F16].vec_dot = vec_dot_f16_f16;
    t[GGML_TYPE_F16].from_float = from_float_f16;
    t[GGML_TYPE_BF16].vec_dot = vec_dot_bf16_bf16;
    t[GGML_TYPE_Q8_0].from_float = quantize_row_q8_0;
    t[GGML_TYPE_Q8_1].from_float = quantize_row_q8_1;
    t[GGML_TYPE_Q8_K].from_float = quantize_row_q8_K;
    if (ggml_cpu_neon_has_dotprod()) {
        install_dot(t);
        install_iq_dot(t);
    } else {
#if !defined(NEON_DOTPROD_ALWAYS)
        install_nodot(t);
        install_iq_nodot(t);
#endif
    }
}

#endif // __aarch64__
