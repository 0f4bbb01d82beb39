// ops-norm.c — per-row RMS norm, layer norm and L2 norm (no affine part: the graph multiplies by the
// weight and adds the bias as separate ops). eps comes from op_params f32[0]. The CPU plan
// (threadpool.c) may run RMS_NORM and the MUL by its weight that follows as one fused kernel.
#include "ops-util.h"

// Sum of (x[i] - c)^2 with independent partial sums (vectorizes without -ffast-math).
static float norm_sum_sq(int64_t n, const float * restrict x, float c) {
    float acc[GGML_CPU_RLANES] = { 0 };
    int64_t i = 0;
    for (; i + GGML_CPU_RLANES <= n; i += GGML_CPU_RLANES) {
        for (int j = 0; j < GGML_CPU_RLANES; j++) {
            const float d = x[i + j] - c;
            acc[j] += d * d;
        }
    }
    double s = 0.0;
    for (int j = 0; j < GGML_CPU_RLANES; j++) s += acc[j];
    for (; i < n; i++) s += (double) (x[i] - c) * (x[i] - c);
    return (float) s;
}

enum norm_kind {
    NORM_LAYER,
    NORM_RMS,
    NORM_L2
};

// Row scale from the sum of squares ss of n elements: 1/sqrt(ss/n + eps), or for L2
// 1/max(sqrt(ss), eps) (eps keeps an all-zero row finite).
static inline float norm_scale(enum norm_kind kind, double ss, int64_t n, float eps) {
    if (kind == NORM_L2) {
        return 1.0f / fmaxf(sqrtf((float) ss), eps);
    }
    return 1.0f / sqrtf((float) (ss / (double) n) + eps);
}

// Shared driver: RMS and L2 norms do not center.
static void norm_forward(const struct ggml_compute_params * params, struct ggml_tensor * dst, enum norm_kind kind) {
    const bool rms = kind != NORM_LAYER;
    const struct ggml_tensor * src0 = dst->src[0];
    if (!ggml_cpu_is_float_type(src0->type) || !ggml_cpu_is_float_type(dst->type)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("%s: unsupported types %s -> %s\n", ggml_op_name(dst->op), ggml_type_name(src0->type),
                           ggml_type_name(dst->type));
        }
        return;
    }
    const float eps = ggml_get_op_params_f32(dst, 0);
    const int64_t ne0 = src0->ne[0];
    const bool fast =
        src0->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float);

    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(dst), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(dst, ir, &i1, &i2, &i3);
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        char * y = ggml_cpu_ptr(dst, 0, i1, i2, i3);

        if (fast) {
            const float * xf = (const float *) x;
            float * yf = (float *) y; // may equal xf (inplace)
            const float mean = rms ? 0.0f : ggml_cpu_vec_sum(ne0, xf) / (float) ne0;
            const float s = kind == NORM_L2 ? norm_scale(kind, norm_sum_sq(ne0, xf, 0.0f), ne0, eps)
                                            : 1.0f / sqrtf(norm_sum_sq(ne0, xf, mean) / (float) ne0 + eps);
            for (int64_t i = 0; i < ne0; i++) yf[i] = (xf[i] - mean) * s;
            continue;
        }

        const size_t nb00 = src0->nb[0], nb0 = dst->nb[0];
        double sum = 0.0;
        if (!rms) {
            for (int64_t i = 0; i < ne0; i++) sum += ggml_cpu_load_f(x + i * nb00, src0->type);
        }
        const float mean = (float) (sum / (double) ne0);
        double sq = 0.0;
        for (int64_t i = 0; i < ne0; i++) {
            const float d = ggml_cpu_load_f(x + i * nb00, src0->type) - mean;
            sq += (double) d * d;
        }
        const float s = norm_scale(kind, sq, ne0, eps);
        for (int64_t i = 0; i < ne0; i++) {
            const float v = ggml_cpu_load_f(x + i * nb00, src0->type);
            ggml_cpu_store_f(y + i * nb0, dst->type, (v - mean) * s);
        }
    }
}

void ggml_compute_forward_rms_norm(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    norm_forward(params, dst, NORM_RMS);
}

void ggml_compute_forward_norm(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    norm_forward(params, dst, NORM_LAYER);
}

void ggml_compute_forward_l2_norm(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    norm_forward(params, dst, NORM_L2);
}

bool ggml_cpu_rms_norm_mul_fusable(const struct ggml_tensor * norm, const struct ggml_tensor * mul) {
    if (norm->op != GGML_OP_RMS_NORM || mul->op != GGML_OP_MUL) {
        return false;
    }
    const struct ggml_tensor * x = norm->src[0];
    const struct ggml_tensor * w = mul->src[0] == norm ? mul->src[1] : mul->src[0];
    if (!x || !w || (mul->src[0] != norm && mul->src[1] != norm) || w == norm) {
        return false;
    }
    // Only the fast path of norm_forward, and a weight that is one contiguous F32 row.
    if (x->type != GGML_TYPE_F32 || norm->type != GGML_TYPE_F32 || mul->type != GGML_TYPE_F32 || w->type != GGML_TYPE_F32 ||
        x->nb[0] != sizeof(float) || norm->nb[0] != sizeof(float) || mul->nb[0] != sizeof(float) || w->nb[0] != sizeof(float)) {
        return false;
    }
    if (w->ne[0] != norm->ne[0] || w->ne[1] != 1 || w->ne[2] != 1 || w->ne[3] != 1) {
        return false;
    }
    for (int d = 0; d < 4; d++) {
        if (mul->ne[d] != norm->ne[d]) {
            return false;
        }
    }
    return true;
}

// y = rms_norm(x) * w per row, written to mul (norm's own output is never written: the plan
// only fuses when mul is its one consumer). Each element goes through the same two roundings
// as the unfused pair: t = (x - 0)*s stored as float, then t*w (a product is commutative, so
// the bits do not depend on which side of the MUL the norm was).
void ggml_compute_forward_rms_norm_mul(const struct ggml_compute_params * params, struct ggml_tensor * norm,
                                       struct ggml_tensor * mul) {
    const struct ggml_tensor * x = norm->src[0];
    const struct ggml_tensor * w = mul->src[0] == norm ? mul->src[1] : mul->src[0];
    const float eps = ggml_get_op_params_f32(norm, 0);
    const int64_t ne0 = x->ne[0];
    const float * restrict wf = (const float *) w->data;
    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(mul), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(mul, ir, &i1, &i2, &i3);
        const float * xf = (const float *) ggml_cpu_ptr(x, 0, i1, i2, i3);
        float * yf = (float *) ggml_cpu_ptr(mul, 0, i1, i2, i3); // may equal xf (inplace)
        const float mean = 0.0f;
        const float var = norm_sum_sq(ne0, xf, mean) / (float) ne0;
        const float s = 1.0f / sqrtf(var + eps);
        for (int64_t i = 0; i < ne0; i++) {
            const float t = (xf[i] - mean) * s;
            yf[i] = t * wf[i];
        }
    }
}
