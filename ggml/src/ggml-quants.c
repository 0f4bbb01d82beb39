// ggml-quants.c — reference quantize / dequantize for the 32-element block types and the
// half-precision rows. The K-quants live in ggml-quants-k.c.
//
// The quantizers are bit-exact with gguf.quants: every step is a single float32 operation
// in the same order as its NumPy code (no fused multiply-add: this file is compiled for the
// baseline ISA and ISO C forbids contraction across statements), and scales are rounded
// to fp16 with round-to-nearest-even exactly as NumPy's astype(float16).
#include "ggml-quants.h"

#include <math.h>
#include <string.h>

// ---- helpers ----

// Round half away from zero (C roundf; gguf's np_roundf gives the same result).
static inline int quants_round_away(float v) { return (int) roundf(v); }

// ---- q4_0 ----

void quantize_row_q4_0_ref(const float * x, block_q4_0 * y, int64_t k) {
    const int64_t nb = k / QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK4_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK4_0; j++) {
            // the first element of largest magnitude wins, like NumPy's argmax
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = GGML_FP32_TO_FP16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const float x0 = xb[j] * id + 8.5f;
            const float x1 = xb[j + QK4_0 / 2] * id + 8.5f;
            const int q0 = GGML_MIN(15, (int) x0);
            const int q1 = GGML_MIN(15, (int) x1);
            y[i].qs[j] = (uint8_t) (q0 | (q1 << 4));
        }
    }
}

void dequantize_row_q4_0(const block_q4_0 * x, float * y, int64_t k) {
    const int64_t nb = k / QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[i * QK4_0 + j] = d * (float) ((x[i].qs[j] & 0x0F) - 8);
            y[i * QK4_0 + j + QK4_0 / 2] = d * (float) ((x[i].qs[j] >> 4) - 8);
        }
    }
}

// ---- q4_1 ----

void quantize_row_q4_1_ref(const float * x, block_q4_1 * y, int64_t k) {
    const int64_t nb = k / QK4_1;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK4_1;
        float min = xb[0], max = xb[0];
        for (int j = 1; j < QK4_1; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = GGML_FP32_TO_FP16(d);
        y[i].m = GGML_FP32_TO_FP16(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const float x0 = (xb[j] - min) * id + 0.5f;
            const float x1 = (xb[j + QK4_1 / 2] - min) * id + 0.5f;
            const int q0 = GGML_MIN(15, (int) x0);
            const int q1 = GGML_MIN(15, (int) x1);
            y[i].qs[j] = (uint8_t) (q0 | (q1 << 4));
        }
    }
}

void dequantize_row_q4_1(const block_q4_1 * x, float * y, int64_t k) {
    const int64_t nb = k / QK4_1;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const float m = GGML_FP16_TO_FP32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const float v0 = d * (float) (x[i].qs[j] & 0x0F);
            const float v1 = d * (float) (x[i].qs[j] >> 4);
            y[i * QK4_1 + j] = v0 + m;
            y[i * QK4_1 + j + QK4_1 / 2] = v1 + m;
        }
    }
}

// ---- q5_0 ----

void quantize_row_q5_0_ref(const float * x, block_q5_0 * y, int64_t k) {
    const int64_t nb = k / QK5_0;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK5_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK5_0; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = GGML_FP32_TO_FP16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const float x0 = xb[j] * id + 16.5f;
            const float x1 = xb[j + QK5_0 / 2] * id + 16.5f;
            const uint32_t q0 = (uint32_t) GGML_MIN(31, (int) x0);
            const uint32_t q1 = (uint32_t) GGML_MIN(31, (int) x1);
            y[i].qs[j] = (uint8_t) ((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= ((q0 & 0x10) >> 4) << j;
            qh |= ((q1 & 0x10) >> 4) << (j + QK5_0 / 2);
        }
        memcpy(y[i].qh, &qh, sizeof(qh)); // the format is little-endian, like every host we build for
    }
}

void dequantize_row_q5_0(const block_q5_0 * x, float * y, int64_t k) {
    const int64_t nb = k / QK5_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof(qh));
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int h0 = (int) ((qh >> j) & 1) << 4;
            const int h1 = (int) ((qh >> (j + QK5_0 / 2)) & 1) << 4;
            y[i * QK5_0 + j] = d * (float) (((x[i].qs[j] & 0x0F) | h0) - 16);
            y[i * QK5_0 + j + QK5_0 / 2] = d * (float) (((x[i].qs[j] >> 4) | h1) - 16);
        }
    }
}

// ---- q5_1 ----

void quantize_row_q5_1_ref(const float * x, block_q5_1 * y, int64_t k) {
    const int64_t nb = k / QK5_1;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK5_1;
        float min = xb[0], max = xb[0];
        for (int j = 1; j < QK5_1; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = GGML_FP32_TO_FP16(d);
        y[i].m = GGML_FP32_TO_FP16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const float x0 = (xb[j] - min) * id + 0.5f;
            const float x1 = (xb[j + QK5_1 / 2] - min) * id + 0.5f;
            const uint32_t q0 = (uint32_t) GGML_MIN(31, (int) x0);
            const uint32_t q1 = (uint32_t) GGML_MIN(31, (int) x1);
            y[i].qs[j] = (uint8_t) ((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= ((q0 & 0x10) >> 4) << j;
            qh |= ((q1 & 0x10) >> 4) << (j + QK5_1 / 2);
        }
        memcpy(y[i].qh, &qh, sizeof(qh));
    }
}

void dequantize_row_q5_1(const block_q5_1 * x, float * y, int64_t k) {
    const int64_t nb = k / QK5_1;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        const float m = GGML_FP16_TO_FP32(x[i].m);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof(qh));
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int h0 = (int) ((qh >> j) & 1) << 4;
            const int h1 = (int) ((qh >> (j + QK5_1 / 2)) & 1) << 4;
            const float v0 = d * (float) ((x[i].qs[j] & 0x0F) | h0);
            const float v1 = d * (float) ((x[i].qs[j] >> 4) | h1);
            y[i * QK5_1 + j] = v0 + m;
            y[i * QK5_1 + j + QK5_1 / 2] = v1 + m;
        }
    }
}

// ---- q8_0 ----

void quantize_row_q8_0_ref(const float * x, block_q8_0 * y, int64_t k) {
    const int64_t nb = k / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) amax = GGML_MAX(amax, fabsf(xb[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = GGML_FP32_TO_FP16(d);
        for (int j = 0; j < QK8_0; j++) y[i].qs[j] = (int8_t) quants_round_away(xb[j] * id);
    }
}

void dequantize_row_q8_0(const block_q8_0 * x, float * y, int64_t k) {
    const int64_t nb = k / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = GGML_FP16_TO_FP32(x[i].d);
        for (int j = 0; j < QK8_0; j++) y[i * QK8_0 + j] = (float) x[i].qs[j] * d;
    }
}

// ---- q8_1 (activations only; same rounding as q8_0) ----

void quantize_row_q8_1_ref(const float * x, block_q8_1 * y, int64_t k) {
    const int64_t nb = k / QK8_1;
    for (int64_t i = 0; i < nb; i++) {
        const float * xb = x + i * QK8_1;
        float amax = 0.0f;
        for (int j = 0; j < QK8_1; j++) amax = GGML_MAX(amax, fabsf(xb[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            const int q = quants_round_away(xb[j] * id);
            y[i].qs[j] = (int8_t) q;
            sum += q;
        }
        y[i].d = d;
        y[i].s = d * (float) sum;
    }
}

void dequantize_row_q8_1(const block_q8_1 * x, float * y, int64_t k) {
    const int64_t nb = k / QK8_1;
    for (int64_t i = 0; i < nb; i++) {
        const float d = x[i].d;
        for (int j = 0; j < QK8_1; j++) y[i * QK8_1 + j] = (float) x[i].qs[j] * d;
    }
}

// ---- half-precision rows ----

void ggml_quants_f16_to_f32_row(const void * x, float * y, int64_t k) {
    const ggml_fp16_t * h = (const ggml_fp16_t *) x;
    for (int64_t i = 0; i < k; i++) y[i] = GGML_FP16_TO_FP32(h[i]);
}

void ggml_quants_f32_to_f16_row(const float * x, void * y, int64_t k) {
    ggml_fp16_t * h = (ggml_fp16_t *) y;
    for (int64_t i = 0; i < k; i++) h[i] = GGML_FP32_TO_FP16(x[i]);
}

void ggml_quants_bf16_to_f32_row(const void * x, float * y, int64_t k) {
    const ggml_bf16_t * h = (const ggml_bf16_t *) x;
    for (int64_t i = 0; i < k; i++) y[i] = ggml_compute_bf16_to_fp32(h[i]);
}

void ggml_quants_f32_to_bf16_row(const float * x, void * y, int64_t k) {
    ggml_bf16_t * h = (ggml_bf16_t *) y;
    for (int64_t i = 0; i < k; i++) h[i] = ggml_compute_fp32_to_bf16(x[i]);
}
