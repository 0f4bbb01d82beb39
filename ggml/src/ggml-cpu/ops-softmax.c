// ops-softmax.c — softmax(a*scale + slope*mask) per row, and the causal -inf mask.
//
// Mask (F32 or F16): the row for a's row i1 is mask row i1 (mask->ne[1] >= a->ne[1]); dims
// 2 and 3 of the mask broadcast by modulo. ALiBi (max_bias > 0) gives head h = dim 2 the
// slope m0^(h+1) for h < n_head_log2, else m1^(2(h - n_head_log2) + 1), with
// n_head_log2 the largest power of two <= n_head, m0 = 2^(-max_bias/n_head_log2) and
// m1 = 2^(-max_bias/2/n_head_log2). A row that is entirely -inf gives zeros, never NaN.
// Sinks (src[2], F32 [n_head], gpt-oss): head h's sink logit joins the row's max and denominator
// (exp(sink - max)) but has no output column, so a row's outputs sum to less than 1.
#include "ops-util.h"

// Scratch: one row of floats per thread, cache-line padded, for rows that cannot be worked
// on in dst directly (non-F32 or strided dst).
size_t ggml_cpu_work_size_soft_max(const struct ggml_tensor * dst, int n_threads) {
    return (size_t) n_threads * GGML_PAD((size_t) dst->ne[0] * sizeof(float), 64);
}

// ALiBi slope of head h (1 when max_bias is 0).
static float softmax_alibi_slope(float max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0f) {
        return 1.0f;
    }
    int64_t n_head_log2 = 1;
    while (n_head_log2 * 2 <= n_head) n_head_log2 *= 2;
    const float m0 = powf(2.0f, -max_bias / (float) n_head_log2);
    const float m1 = powf(2.0f, -max_bias / 2.0f / (float) n_head_log2);
    return h < n_head_log2 ? powf(m0, (float) (h + 1)) : powf(m1, (float) (2 * (h - n_head_log2) + 1));
}

// w[i] = exp(w[i] - max(w, sink)) / (sum + exp(sink - max)); sink -inf: none. An all -inf row
// without a sink becomes zeros.
static void softmax_row_inplace(int64_t n, float * restrict w, float sink) {
    float max = ggml_cpu_vec_max(n, w);
    max = sink > max ? sink : max;
    if (max == -INFINITY) {
        memset(w, 0, (size_t) n * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < n; i++) w[i] = ggml_cpu_expf(w[i] - max);
    const float sum = ggml_cpu_vec_sum(n, w) + (sink == -INFINITY ? 0.0f : ggml_cpu_expf(sink - max));
    ggml_cpu_vec_scale(n, w, 1.0f / sum);
}

void ggml_compute_forward_soft_max(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * mask = dst->src[1];
    const float * sinks = dst->src[2] ? (const float *) dst->src[2]->data : NULL;
    if (!ggml_cpu_is_float_type(src0->type) || !ggml_cpu_is_float_type(dst->type) ||
        (mask && mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("SOFT_MAX: unsupported types %s (mask %s) -> %s\n", ggml_type_name(src0->type),
                           mask ? ggml_type_name(mask->type) : "none", ggml_type_name(dst->type));
        }
        return;
    }
    const float scale = ggml_get_op_params_f32(dst, 0);
    const float max_bias = ggml_get_op_params_f32(dst, 1);
    const int64_t ne0 = src0->ne[0];
    const int64_t n_head = src0->ne[2];

    const bool dst_direct = dst->type == GGML_TYPE_F32 && dst->nb[0] == sizeof(float);
    const bool src_f32 = src0->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float);
    const bool mask_f32 = mask && mask->type == GGML_TYPE_F32 && mask->nb[0] == sizeof(float);
    float * scratch = (float *) ((char *) params->wdata + params->ith * GGML_PAD((size_t) ne0 * sizeof(float), 64));

    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    int64_t slope_h = -1;
    float slope = 1.0f;
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(src0, ir, &i1, &i2, &i3);
        if (i2 != slope_h) {
            slope = softmax_alibi_slope(max_bias, n_head, i2);
            slope_h = i2;
        }
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        char * y = ggml_cpu_ptr(dst, 0, i1, i2, i3);
        float * w = dst_direct ? (float *) y : scratch; // w may alias x (inplace): read-before-write per element

        if (src_f32) {
            const float * xf = (const float *) x;
            for (int64_t i = 0; i < ne0; i++) w[i] = xf[i] * scale;
        } else {
            for (int64_t i = 0; i < ne0; i++) w[i] = ggml_cpu_load_f(x + i * src0->nb[0], src0->type) * scale;
        }
        if (mask) {
            const char * m = ggml_cpu_ptr(mask, 0, i1, i2 % mask->ne[2], i3 % mask->ne[3]);
            if (mask_f32) {
                const float * mf = (const float *) m;
                for (int64_t i = 0; i < ne0; i++) w[i] += slope * mf[i];
            } else {
                for (int64_t i = 0; i < ne0; i++) w[i] += slope * ggml_cpu_load_f(m + i * mask->nb[0], mask->type);
            }
        }
        softmax_row_inplace(ne0, w, sinks ? sinks[i2] : -INFINITY);
        if (!dst_direct) {
            for (int64_t i = 0; i < ne0; i++) ggml_cpu_store_f(y + i * dst->nb[0], dst->type, w[i]);
        }
    }
}

// dst = a with a[i0, i1, ...] = -inf where i0 > n_past + i1 (a token sees itself and earlier ones).
void ggml_compute_forward_diag_mask_inf(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    if (!ggml_cpu_is_float_type(src0->type) || !ggml_cpu_is_float_type(dst->type)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("DIAG_MASK_INF: unsupported types %s -> %s\n", ggml_type_name(src0->type), ggml_type_name(dst->type));
        }
        return;
    }
    const int64_t n_past = ggml_get_op_params_i32(dst, 0);
    const int64_t ne0 = src0->ne[0];
    const bool fast =
        src0->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float);

    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(src0, ir, &i1, &i2, &i3);
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        char * y = ggml_cpu_ptr(dst, 0, i1, i2, i3);
        // Columns [0, keep) are copied, the rest masked.
        const int64_t keep = GGML_MAX(0, GGML_MIN(ne0, n_past + i1 + 1));
        if (fast) {
            if (x != y) memmove(y, x, (size_t) keep * sizeof(float));
            float * yf = (float *) y;
            for (int64_t i = keep; i < ne0; i++) yf[i] = -INFINITY;
        } else {
            for (int64_t i = 0; i < ne0; i++) {
                const float v = i < keep ? ggml_cpu_load_f(x + i * src0->nb[0], src0->type) : -INFINITY;
                ggml_cpu_store_f(y + i * dst->nb[0], dst->type, v);
            }
        }
    }
}
