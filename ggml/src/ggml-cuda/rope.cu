// rope.cu — rotary position embedding, NORMAL (adjacent pairs) and NEOX (halves) modes, with
// frequency factors and YaRN, following ops-rope.c: pair k of a token at position p turns by
// theta = p * base^(-2k/n_dims) / ff[k]; YaRN mixes interpolated (freq_scale * theta) and
// extrapolated angles by a ramp over k between the correction dims and scales the magnitude.
// One thread per pair (dims >= n_dims are copied by the threads of the first pairs).
#include "common.cuh"

struct rope_params {
    int n_dims, mode;
    float freq_scale, ext_factor, attn_factor, theta_scale, corr_low, corr_high;
};

static __device__ __forceinline__ float yarn_ramp(float low, float high, int k) {
    const float y = ((float) k - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

static __global__ void k_rope(cu_tensor a, const int32_t * pos, const float * ff, cu_tensor d, rope_params p) {
    const int64_t r = blockIdx.y + (int64_t) gridDim.y * blockIdx.z;   // row (head, token, batch)
    if (r >= a.ne[1] * a.ne[2] * a.ne[3]) return;
    const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
    const char * x = cu_ptr(a, 0, i1, i2, i3);
    char * y = cu_ptr(d, 0, i1, i2, i3);
    const int half = p.n_dims / 2;
    const bool neox = p.mode & GGML_ROPE_TYPE_NEOX;
    const float fp = (float) pos[i2];
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < half; k += gridDim.x * blockDim.x) {
        float theta_e = fp * powf(p.theta_scale, (float) k);
        if (ff) theta_e /= ff[k];
        const float theta_i = p.freq_scale * theta_e;
        float theta = theta_i, mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float mix = yarn_ramp(p.corr_low, p.corr_high, k) * p.ext_factor;
            theta = theta_i * (1.0f - mix) + theta_e * mix;
            mscale *= 1.0f + 0.1f * logf(1.0f / p.freq_scale);
        }
        float sn, cs;
        sincosf(theta, &sn, &cs);
        cs *= mscale;
        sn *= mscale;
        const int64_t j0 = neox ? k : 2 * k;
        const int64_t j1 = neox ? k + half : 2 * k + 1;
        const float x0 = cu_load_f(x + j0 * a.nb[0], a.type);
        const float x1 = cu_load_f(x + j1 * a.nb[0], a.type);
        cu_store_f(y + j0 * d.nb[0], d.type, x0 * cs - x1 * sn);
        cu_store_f(y + j1 * d.nb[0], d.type, x0 * sn + x1 * cs);
    }
    for (int64_t j = p.n_dims + blockIdx.x * blockDim.x + threadIdx.x; j < a.ne[0]; j += gridDim.x * blockDim.x) {
        cu_store_f(y + j * d.nb[0], d.type, cu_load_f(x + j * a.nb[0], a.type));
    }
}

static float rope_corr_dim(int n_dims, int n_ctx_orig, float beta, float base) {
    return (float) n_dims * logf((float) n_ctx_orig / (beta * 2.0f * 3.14159265358979323846f)) / (2.0f * logf(base));
}

bool cuda_op_rope(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * pos = dst->src[1];
    const struct ggml_tensor * ff = dst->src[2];
    rope_params p;
    p.n_dims = ggml_get_op_params_i32(dst, 1);
    p.mode = ggml_get_op_params_i32(dst, 2);
    const int n_ctx_orig = ggml_get_op_params_i32(dst, 4);
    const float base = ggml_get_op_params_f32(dst, 5);
    p.freq_scale = ggml_get_op_params_f32(dst, 6);
    p.ext_factor = ggml_get_op_params_f32(dst, 7);
    p.attn_factor = ggml_get_op_params_f32(dst, 8);
    const float beta_fast = ggml_get_op_params_f32(dst, 9);
    const float beta_slow = ggml_get_op_params_f32(dst, 10);
    // the CPU's float theta_scale, so both share its rounding
    p.theta_scale = powf(base, -2.0f / (float) p.n_dims);
    p.corr_low = p.corr_high = 0.0f;
    if (p.ext_factor != 0.0f) {
        p.corr_low = fmaxf(0.0f, floorf(rope_corr_dim(p.n_dims, n_ctx_orig, beta_fast, base)));
        p.corr_high = fminf((float) (p.n_dims - 1), ceilf(rope_corr_dim(p.n_dims, n_ctx_orig, beta_slow, base)));
    }
    const int64_t n_rows = ggml_nrows(a);
    const int64_t gy = n_rows < 65535 ? (n_rows < 1 ? 1 : n_rows) : 65535;
    const int threads = 64;
    const int64_t per = GGML_MAX(p.n_dims / 2, a->ne[0] - p.n_dims);
    const dim3 g((unsigned) GGML_MAX(1, (per + threads - 1) / threads), (unsigned) gy, (unsigned) ((n_rows + gy - 1) / gy));
    k_rope<<<g, threads, 0, ctx->stream>>>(cu_desc(a), (const int32_t *) pos->data, ff ? (const float *) ff->data : nullptr,
                                           cu_desc(dst), p);
    return true;
}
