// ops-reduce.c — per-row reductions: sum_rows ([ne0, ...] -> [1, ...]) and argmax (-> I32).
#include "ops-util.h"

void ggml_compute_forward_sum_rows(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    if (!ggml_cpu_is_float_type(src0->type) || !ggml_cpu_is_float_type(dst->type)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("SUM_ROWS: unsupported types %s -> %s\n", ggml_type_name(src0->type), ggml_type_name(dst->type));
        }
        return;
    }
    const int64_t ne0 = src0->ne[0];
    const bool fast = src0->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float);
    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(src0, ir, &i1, &i2, &i3);
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        float s;
        if (fast) {
            s = ggml_cpu_vec_sum(ne0, (const float *) x);
        } else {
            double acc = 0.0;
            for (int64_t i = 0; i < ne0; i++) acc += ggml_cpu_load_f(x + i * src0->nb[0], src0->type);
            s = (float) acc;
        }
        ggml_cpu_store_f(ggml_cpu_ptr(dst, 0, i1, i2, i3), dst->type, s);
    }
}

// First index of the largest value of each row (NaN entries never win; an all-NaN row gives 0).
void ggml_compute_forward_argmax(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    if (!ggml_cpu_is_float_type(src0->type) || dst->type != GGML_TYPE_I32) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("ARGMAX: unsupported types %s -> %s\n", ggml_type_name(src0->type), ggml_type_name(dst->type));
        }
        return;
    }
    const int64_t ne0 = src0->ne[0];
    const bool fast = src0->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float);
    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(src0, ir, &i1, &i2, &i3);
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        int64_t best = 0;
        if (fast) {
            // Vectorized max first, then the first position holding it.
            const float * xf = (const float *) x;
            const float m = ggml_cpu_vec_max(ne0, xf);
            for (int64_t i = 0; i < ne0; i++) {
                if (xf[i] == m) {
                    best = i;
                    break;
                }
            }
        } else {
            float m = -INFINITY;
            for (int64_t i = 0; i < ne0; i++) {
                const float v = ggml_cpu_load_f(x + i * src0->nb[0], src0->type);
                if (v > m) {
                    m = v;
                    best = i;
                }
            }
        }
        *(int32_t *) ggml_cpu_ptr(dst, i1, i2, i3, 0) = (int32_t) best;
    }
}
