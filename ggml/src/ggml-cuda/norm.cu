// norm.cu — per-row reductions, one block of 256 threads per row (any strides, float types):
// rms_norm and norm (x - mean) / sqrt(mean((x - mean)^2) + eps), l2_norm x / max(|x|, eps), softmax(x * scale +
// slope * mask) with ALiBi slopes and all -inf rows giving zeros (as ops-softmax.c), sum_rows,
// and argmax (first index of the maximum; NaN never wins; an all-NaN row gives 0).
#include "common.cuh"

#define ROW_THREADS 256

static __device__ float block_sum(float v, float * sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    v = l < (int) (blockDim.x / 32) ? sh[l] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ float block_max(float v, float * sh) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    v = l < (int) (blockDim.x / 32) ? sh[l] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ __forceinline__ void row_of(const cu_tensor & t, int64_t r, int64_t & i1, int64_t & i2, int64_t & i3) {
    i1 = r % t.ne[1];
    i2 = (r / t.ne[1]) % t.ne[2];
    i3 = r / (t.ne[1] * t.ne[2]);
}

static __global__ void k_norm(cu_tensor a, cu_tensor d, float eps, int mode) {
    const bool rms = mode != 0;
    __shared__ float sh[32];
    const int64_t r = blockIdx.x + (int64_t) gridDim.x * blockIdx.y;
    if (r >= a.ne[1] * a.ne[2] * a.ne[3]) return;
    int64_t i1, i2, i3;
    row_of(a, r, i1, i2, i3);
    const char * x = cu_ptr(a, 0, i1, i2, i3);
    char * y = cu_ptr(d, 0, i1, i2, i3);
    const int64_t n = a.ne[0];
    float mean = 0.0f;
    if (!rms) {
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += cu_load_f(x + i * a.nb[0], a.type);
        mean = block_sum(s, sh) / (float) n;
    }
    float q = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = cu_load_f(x + i * a.nb[0], a.type) - mean;
        q += v * v;
    }
    const float ss = block_sum(q, sh);
    const float scale = mode == 2 ? 1.0f / fmaxf(sqrtf(ss), eps) : rsqrtf(ss / (float) n + eps);
    __syncthreads();   // inplace: every thread has read its elements
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = cu_load_f(x + i * a.nb[0], a.type);
        cu_store_f(y + i * d.nb[0], d.type, (v - mean) * scale);
    }
}

static dim3 rows_grid(int64_t n_rows) {
    const int64_t gx = n_rows < 65535 ? (n_rows < 1 ? 1 : n_rows) : 65535;
    return dim3((unsigned) gx, (unsigned) ((n_rows + gx - 1) / gx));
}

bool cuda_op_norm(cuda_backend_ctx * ctx, struct ggml_tensor * dst, int mode) {
    const struct ggml_tensor * a = dst->src[0];
    k_norm<<<rows_grid(ggml_nrows(a)), ROW_THREADS, 0, ctx->stream>>>(cu_desc(a), cu_desc(dst), ggml_get_op_params_f32(dst, 0),
                                                                      mode);
    return true;
}

// head h's ALiBi slope (1 without max_bias); n_head_log2 the largest power of two <= n_head
static __device__ float alibi_slope(float max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0f) return 1.0f;
    int64_t nl2 = 1;
    while (nl2 * 2 <= n_head) nl2 *= 2;
    const float m0 = powf(2.0f, -max_bias / (float) nl2);
    const float m1 = powf(2.0f, -max_bias / 2.0f / (float) nl2);
    return h < nl2 ? powf(m0, (float) (h + 1)) : powf(m1, (float) (2 * (h - nl2) + 1));
}

// Values of the row are recomputed from x and the mask in each pass (no scratch): three reads.
// sinks (or nullptr): head i2's logit joins the max and the denominator, without an output column.
static __global__ void k_soft_max(cu_tensor a, cu_tensor m, bool has_mask, const float * sinks, cu_tensor d, float scale,
                                  float max_bias) {
    __shared__ float sh[32];
    const int64_t r = blockIdx.x + (int64_t) gridDim.x * blockIdx.y;
    if (r >= a.ne[1] * a.ne[2] * a.ne[3]) return;
    int64_t i1, i2, i3;
    row_of(a, r, i1, i2, i3);
    const char * x = cu_ptr(a, 0, i1, i2, i3);
    char * y = cu_ptr(d, 0, i1, i2, i3);
    const char * mr = has_mask ? cu_ptr(m, 0, i1, i2 % m.ne[2], i3 % m.ne[3]) : nullptr;
    const float slope = has_mask ? alibi_slope(max_bias, a.ne[2], i2) : 1.0f;
    const int64_t n = a.ne[0];
    float mx = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float w = cu_load_f(x + i * a.nb[0], a.type) * scale;
        if (mr) w += slope * cu_load_f(mr + i * m.nb[0], m.type);
        mx = fmaxf(mx, w);
    }
    mx = block_max(mx, sh);
    const float sink = sinks ? sinks[i2] : -INFINITY;
    mx = fmaxf(mx, sink);
    float s = 0.0f;
    if (mx != -INFINITY) {
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            float w = cu_load_f(x + i * a.nb[0], a.type) * scale;
            if (mr) w += slope * cu_load_f(mr + i * m.nb[0], m.type);
            s += expf(w - mx);
        }
    }
    s = block_sum(s, sh);
    if (sink != -INFINITY) s += expf(sink - mx);
    const float inv = mx == -INFINITY || s <= 0.0f ? 0.0f : 1.0f / s;
    __syncthreads();   // inplace: all reads of x are done
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float w = cu_load_f(x + i * a.nb[0], a.type) * scale;
        if (mr) w += slope * cu_load_f(mr + i * m.nb[0], m.type);
        const float p = mx == -INFINITY ? 0.0f : expf(w - mx) * inv;
        cu_store_f(y + i * d.nb[0], d.type, p);
    }
}

bool cuda_op_soft_max(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * m = dst->src[1];
    const cu_tensor dm = m ? cu_desc(m) : cu_desc(a);
    k_soft_max<<<rows_grid(ggml_nrows(a)), ROW_THREADS, 0, ctx->stream>>>(
        cu_desc(a), dm, m != nullptr, dst->src[2] ? (const float *) dst->src[2]->data : nullptr, cu_desc(dst),
        ggml_get_op_params_f32(dst, 0), ggml_get_op_params_f32(dst, 1));
    return true;
}

static __global__ void k_sum_rows(cu_tensor a, cu_tensor d) {
    __shared__ float sh[32];
    const int64_t r = blockIdx.x + (int64_t) gridDim.x * blockIdx.y;
    if (r >= a.ne[1] * a.ne[2] * a.ne[3]) return;
    int64_t i1, i2, i3;
    row_of(a, r, i1, i2, i3);
    const char * x = cu_ptr(a, 0, i1, i2, i3);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < a.ne[0]; i += blockDim.x) s += cu_load_f(x + i * a.nb[0], a.type);
    s = block_sum(s, sh);
    if (threadIdx.x == 0) cu_store_f(cu_ptr(d, 0, i1, i2, i3), d.type, s);
}

bool cuda_op_sum_rows(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    k_sum_rows<<<rows_grid(ggml_nrows(a)), ROW_THREADS, 0, ctx->stream>>>(cu_desc(a), cu_desc(dst));
    return true;
}

// (value, index) pairs: larger value wins, equal values the smaller index; NaN never wins
static __device__ __forceinline__ void am_merge(float & v, int & i, float v2, int i2) {
    if (v2 > v || (v2 == v && i2 < i)) {
        v = v2;
        i = i2;
    }
}

static __global__ void k_argmax(cu_tensor a, cu_tensor d) {
    __shared__ float shv[32];
    __shared__ int shi[32];
    const int64_t r = blockIdx.x + (int64_t) gridDim.x * blockIdx.y;
    if (r >= a.ne[1] * a.ne[2] * a.ne[3]) return;
    int64_t i1, i2, i3;
    row_of(a, r, i1, i2, i3);
    const char * x = cu_ptr(a, 0, i1, i2, i3);
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int64_t i = threadIdx.x; i < a.ne[0]; i += blockDim.x) am_merge(bv, bi, cu_load_f(x + i * a.nb[0], a.type), (int) i);
    for (int o = 16; o > 0; o >>= 1) {
        const float v2 = __shfl_xor_sync(0xffffffffu, bv, o);
        const int i2x = __shfl_xor_sync(0xffffffffu, bi, o);
        am_merge(bv, bi, v2, i2x);
    }
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    if (l == 0) {
        shv[w] = bv;
        shi[w] = bi;
    }
    __syncthreads();
    if (w == 0) {
        bv = l < (int) (blockDim.x / 32) ? shv[l] : -INFINITY;
        bi = l < (int) (blockDim.x / 32) ? shi[l] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1) {
            const float v2 = __shfl_xor_sync(0xffffffffu, bv, o);
            const int i2x = __shfl_xor_sync(0xffffffffu, bi, o);
            am_merge(bv, bi, v2, i2x);
        }
        if (l == 0) *(int32_t *) cu_ptr(d, i1, i2, i3, 0) = bi == 0x7fffffff ? 0 : bi;
    }
}

bool cuda_op_argmax(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    k_argmax<<<rows_grid(ggml_nrows(a)), ROW_THREADS, 0, ctx->stream>>>(cu_desc(a), cu_desc(dst));
    return true;
}
