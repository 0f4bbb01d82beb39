// ops-rope.c — rotary position embedding with NTK/linear scaling and YaRN.
//
// a is [head_dim, n_head, n_tokens, ne3]; token i2 has position pos[i2]. Pair k (k < n_dims/2)
// rotates by theta_k = pos * freq_base^(-2k/n_dims) / freq_factor[k]; NORMAL mode pairs
// (x[2k], x[2k+1]), NEOX pairs (x[k], x[k + n_dims/2]). Dims >= n_dims are copied.
//
// YaRN (Peng et al. 2023): theta_interp = freq_scale * theta_extrap; with ext_factor != 0 the
// two are mixed by a ramp over the pair index between corr_dims [low, high], where
// corr_dim(beta) = n_dims * ln(n_ctx_orig / (2 pi beta)) / (2 ln(freq_base)), and the
// magnitude is scaled by mscale = attn_factor * (1 + 0.1 ln(1/freq_scale)).
#include "ops-util.h"

// Pairs whose cos/sin are cached per token on the stack (head_dim up to 1024).
#define ROPE_MAX_PAIRS 512

struct rope_cfg {
    int n_dims;
    int mode;
    float freq_scale;
    float ext_factor;
    float attn_factor;
    float theta_scale;  // freq_base^(-2/n_dims)
    float corr_low;
    float corr_high;
    const float * freq_factors; // n_dims/2 divisors or NULL
};

static float rope_corr_dim(int n_dims, int n_ctx_orig, float beta, float base) {
    return (float) n_dims * logf((float) n_ctx_orig / (beta * 2.0f * 3.14159265358979323846f)) / (2.0f * logf(base));
}

// 1 below low, 0 above high, linear in between (over the pair index k).
static float rope_yarn_ramp(float low, float high, int k) {
    const float y = ((float) k - low) / GGML_MAX(0.001f, high - low);
    return 1.0f - GGML_MIN(1.0f, GGML_MAX(0.0f, y));
}

// cos/sin (magnitude included) of pair k for extrapolated angle theta_extrap.
static void rope_yarn(const struct rope_cfg * c, float theta_extrap, int k, float * cos_out, float * sin_out) {
    const float theta_interp = c->freq_scale * theta_extrap;
    float theta = theta_interp;
    float mscale = c->attn_factor;
    if (c->ext_factor != 0.0f) {
        const float mix = rope_yarn_ramp(c->corr_low, c->corr_high, k) * c->ext_factor;
        theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
        mscale *= 1.0f + 0.1f * logf(1.0f / c->freq_scale);
    }
    *cos_out = cosf(theta) * mscale;
    *sin_out = sinf(theta) * mscale;
}

// cos/sin of pair k at position p, computed directly (used beyond the stack cache).
static void rope_pair(const struct rope_cfg * c, float p, int k, float * cs, float * sn) {
    float theta = p * powf(c->theta_scale, (float) k);
    if (c->freq_factors) theta /= c->freq_factors[k];
    rope_yarn(c, theta, k, cs, sn);
}

// Rotates one row; cache holds (cos, sin) per pair or is NULL (then computed per pair).
static void rope_row(const struct rope_cfg * c, const float * cache, float p, const char * x, size_t nbx, enum ggml_type tx,
                     char * y, size_t nby, enum ggml_type ty, int64_t ne0) {
    const int half = c->n_dims / 2;
    const bool neox = c->mode & GGML_ROPE_TYPE_NEOX;
    for (int k = 0; k < half; k++) {
        float cs, sn;
        if (cache) {
            cs = cache[2 * k];
            sn = cache[2 * k + 1];
        } else {
            rope_pair(c, p, k, &cs, &sn);
        }
        const int64_t j0 = neox ? k : 2 * k;
        const int64_t j1 = neox ? k + half : 2 * k + 1;
        const float x0 = ggml_cpu_load_f(x + j0 * nbx, tx);
        const float x1 = ggml_cpu_load_f(x + j1 * nbx, tx);
        ggml_cpu_store_f(y + j0 * nby, ty, x0 * cs - x1 * sn);
        ggml_cpu_store_f(y + j1 * nby, ty, x0 * sn + x1 * cs);
    }
    for (int64_t j = c->n_dims; j < ne0; j++) {
        ggml_cpu_store_f(y + j * nby, ty, ggml_cpu_load_f(x + j * nbx, tx));
    }
}

// F32 unit-stride version of rope_row with the cache (the common case).
static void rope_row_f32(const struct rope_cfg * c, const float * restrict cache, const float * x, float * y, int64_t ne0) {
    const int half = c->n_dims / 2;
    if (c->mode & GGML_ROPE_TYPE_NEOX) {
        for (int k = 0; k < half; k++) {
            const float x0 = x[k], x1 = x[k + half];
            y[k] = x0 * cache[2 * k] - x1 * cache[2 * k + 1];
            y[k + half] = x0 * cache[2 * k + 1] + x1 * cache[2 * k];
        }
    } else {
        for (int k = 0; k < half; k++) {
            const float x0 = x[2 * k], x1 = x[2 * k + 1];
            y[2 * k] = x0 * cache[2 * k] - x1 * cache[2 * k + 1];
            y[2 * k + 1] = x0 * cache[2 * k + 1] + x1 * cache[2 * k];
        }
    }
    if (x != y) {
        for (int64_t j = c->n_dims; j < ne0; j++) y[j] = x[j];
    }
}

void ggml_compute_forward_rope(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * pos = dst->src[1];
    const struct ggml_tensor * ff = dst->src[2];
    const int n_dims = ggml_get_op_params_i32(dst, 1);
    if (!ggml_cpu_is_float_type(src0->type) || !ggml_cpu_is_float_type(dst->type) || !pos || pos->type != GGML_TYPE_I32 ||
        pos->ne[0] < src0->ne[2] || n_dims <= 0 || n_dims % 2 != 0 || n_dims > src0->ne[0] ||
        (ff && (ff->type != GGML_TYPE_F32 || ff->ne[0] < n_dims / 2 || !ggml_is_contiguous(ff)))) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("ROPE: unsupported arguments (type %s, n_dims %d, head_dim %lld)\n", ggml_type_name(src0->type),
                           n_dims, (long long) src0->ne[0]);
        }
        return;
    }

    struct rope_cfg c;
    c.n_dims = n_dims;
    c.mode = ggml_get_op_params_i32(dst, 2);
    const int n_ctx_orig = ggml_get_op_params_i32(dst, 4);
    const float freq_base = ggml_get_op_params_f32(dst, 5);
    c.freq_scale = ggml_get_op_params_f32(dst, 6);
    c.ext_factor = ggml_get_op_params_f32(dst, 7);
    c.attn_factor = ggml_get_op_params_f32(dst, 8);
    const float beta_fast = ggml_get_op_params_f32(dst, 9);
    const float beta_slow = ggml_get_op_params_f32(dst, 10);
    c.theta_scale = powf(freq_base, -2.0f / (float) n_dims);
    c.freq_factors = ff ? (const float *) ff->data : NULL;
    c.corr_low = 0.0f;
    c.corr_high = 0.0f;
    if (c.ext_factor != 0.0f) {
        c.corr_low = GGML_MAX(0.0f, floorf(rope_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base)));
        c.corr_high = GGML_MIN((float) (n_dims - 1), ceilf(rope_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base)));
    }

    const int half = n_dims / 2;
    const bool use_cache = half <= ROPE_MAX_PAIRS;
    float cache[2 * ROPE_MAX_PAIRS];
    const int64_t ne0 = src0->ne[0];
    const bool fast = src0->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float) &&
        dst->nb[0] == sizeof(float) && use_cache;
    const int32_t * positions = (const int32_t *) pos->data;

    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    int64_t cached_token = -1;
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(src0, ir, &i1, &i2, &i3);
        const float p = (float) positions[i2];
        if (use_cache && i2 != cached_token) {
            // theta_k = p * theta_scale^k by repeated multiplication, as the published
            // formulation does; the heads of one token share it.
            float theta = p;
            for (int k = 0; k < half; k++) {
                const float t = c.freq_factors ? theta / c.freq_factors[k] : theta;
                rope_yarn(&c, t, k, &cache[2 * k], &cache[2 * k + 1]);
                theta *= c.theta_scale;
            }
            cached_token = i2;
        }
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        char * y = ggml_cpu_ptr(dst, 0, i1, i2, i3);
        if (fast) {
            rope_row_f32(&c, cache, (const float *) x, (float *) y, ne0);
        } else {
            rope_row(&c, use_cache ? cache : NULL, p, x, src0->nb[0], src0->type, y, dst->nb[0], dst->type, ne0);
        }
    }
}
