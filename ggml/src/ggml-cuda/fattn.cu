// fattn.cu — fused attention, out = softmax(scale * q.k (softcap: c * tanh(x / c)) + slope *
// mask) . v, with the semantics of ops-attention.c: KV head h / (H / H_kv), mask row = query
// row (dims 2-3 broadcast by modulo), -inf mask cells skipped, a row that sees no cell gives
// zeros; output [Dv, H, n_q, ne3] F32. Sinks (src[4], F32 [H], gpt-oss): head h's logit joins
// the max and the denominator at the merge, without a value of its own.
//
// One block of four warps per (query row, head, batch); the warps take interleaved KV cells,
// each keeping an online softmax (running max, sum, accumulator of up to 256 values spread
// over its lanes); the four partial results are merged in shared memory at the end. K and V
// may be F32, F16, BF16 (any element stride) or Q8_0 (unit stride).
#include "common.cuh"
#include "quants.cuh"

#define FA_WARPS    4
#define FA_DMAX     256
#define FA_PER_LANE (FA_DMAX / 32)

struct fa_args {
    cu_tensor q, k, v, m, d;
    bool has_mask;
    const float * sinks; // per head, or nullptr
    float scale, max_bias, softcap;
};

static __device__ __forceinline__ float fa_load(const char * row, int64_t i, int64_t nb0, int type) {
    if (type == GGML_TYPE_Q8_0) {
        const block_q8_0 * b = (const block_q8_0 *) row + i / QK8_0;
        return cu_h2f(b->d) * (float) b->qs[i % QK8_0];
    }
    return cu_load_f(row + i * nb0, type);
}

static __device__ float fa_slope(float max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0f) return 1.0f;
    int64_t nl2 = 1;
    while (nl2 * 2 <= n_head) nl2 *= 2;
    const float m0 = powf(2.0f, -max_bias / (float) nl2);
    const float m1 = powf(2.0f, -max_bias / 2.0f / (float) nl2);
    return h < nl2 ? powf(m0, (float) (h + 1)) : powf(m1, (float) (2 * (h - nl2) + 1));
}

static __global__ void __launch_bounds__(32 * FA_WARPS) k_flash_attn(fa_args a) {
    __shared__ float sh_m[FA_WARPS], sh_l[FA_WARPS];
    __shared__ float sh_acc[FA_WARPS][FA_DMAX];
    const int64_t iq = blockIdx.x, h = blockIdx.y, i3 = blockIdx.z;
    const int lane = threadIdx.x, w = threadIdx.y;
    const int64_t D = a.q.ne[0], Dv = a.v.ne[0], n_kv = a.k.ne[1], H = a.q.ne[2];
    const int64_t hk = h / (H / a.k.ne[2]);
    const int64_t k3 = i3 / (a.q.ne[3] / a.k.ne[3]), v3 = i3 / (a.q.ne[3] / a.v.ne[3]);

    float qr[FA_PER_LANE], acc[FA_PER_LANE];
    const char * qrow = cu_ptr(a.q, 0, iq, h, i3);
#pragma unroll
    for (int i = 0; i < FA_PER_LANE; i++) {
        const int64_t dd = lane + 32 * i;
        qr[i] = dd < D ? cu_load_f(qrow + dd * a.q.nb[0], a.q.type) : 0.0f;
        acc[i] = 0.0f;
    }
    const char * mrow = a.has_mask ? cu_ptr(a.m, 0, iq, h % a.m.ne[2], i3 % a.m.ne[3]) : nullptr;
    const float slope = a.has_mask ? fa_slope(a.max_bias, H, h) : 1.0f;
    float M = -INFINITY, L = 0.0f;
    for (int64_t j = w; j < n_kv; j += FA_WARPS) {
        const float mv = mrow ? cu_load_f(mrow + j * a.m.nb[0], a.m.type) : 0.0f;
        if (mv == -INFINITY) continue;
        const char * krow = cu_ptr(a.k, 0, j, hk, k3);
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < FA_PER_LANE; i++) {
            const int64_t dd = lane + 32 * i;
            if (dd < D) s += qr[i] * fa_load(krow, dd, a.k.nb[0], a.k.type);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        float x = s * a.scale;
        if (a.softcap != 0.0f) x = a.softcap * tanhf(x / a.softcap);
        x += slope * mv;
        const float mn = fmaxf(M, x);
        const float corr = expf(M - mn);
        const float p = expf(x - mn);
        L = L * corr + p;
        const char * vrow = cu_ptr(a.v, 0, j, hk, v3);
#pragma unroll
        for (int i = 0; i < FA_PER_LANE; i++) {
            const int64_t dd = lane + 32 * i;
            if (dd < Dv) acc[i] = acc[i] * corr + p * fa_load(vrow, dd, a.v.nb[0], a.v.type);
        }
        M = mn;
    }
    if (lane == 0) {
        sh_m[w] = M;
        sh_l[w] = L;
    }
#pragma unroll
    for (int i = 0; i < FA_PER_LANE; i++) {
        const int64_t dd = lane + 32 * i;
        if (dd < Dv) sh_acc[w][dd] = acc[i];
    }
    __syncthreads();
    const float sink = a.sinks ? a.sinks[h] : -INFINITY;
    float mx = sink;
    for (int t = 0; t < FA_WARPS; t++) mx = fmaxf(mx, sh_m[t]);
    float f[FA_WARPS];
    float l = sink == -INFINITY ? 0.0f : expf(sink - mx);
    for (int t = 0; t < FA_WARPS; t++) {
        f[t] = mx == -INFINITY || sh_m[t] == -INFINITY ? 0.0f : expf(sh_m[t] - mx);
        l += sh_l[t] * f[t];
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    char * out = cu_ptr(a.d, 0, h, iq, i3);
    for (int64_t dd = w * 32 + lane; dd < Dv; dd += 32 * FA_WARPS) {
        float o = 0.0f;
        for (int t = 0; t < FA_WARPS; t++) o += sh_acc[t][dd] * f[t];
        *(float *) (out + dd * a.d.nb[0]) = o * inv;
    }
}

static bool fa_kv_ok(const struct ggml_tensor * t) {
    return cu_is_float(t->type) || (t->type == GGML_TYPE_Q8_0 && t->nb[0] == ggml_type_size(t->type));
}

bool cuda_supports_flash_attn(const struct ggml_tensor * dst) {
    const struct ggml_tensor * q = dst->src[0];
    const struct ggml_tensor * k = dst->src[1];
    const struct ggml_tensor * v = dst->src[2];
    const struct ggml_tensor * m = dst->src[3];
    if (!q || !k || !v || dst->type != GGML_TYPE_F32 || !cu_is_float(q->type) || !fa_kv_ok(k) || !fa_kv_ok(v)) return false;
    const int64_t D = q->ne[0], Dv = v->ne[0], n_kv = k->ne[1], H = q->ne[2], H_kv = k->ne[2];
    if (D > FA_DMAX || Dv > FA_DMAX || k->ne[0] != D || v->ne[1] != n_kv || v->ne[2] != H_kv || H_kv <= 0 || H % H_kv != 0)
        return false;
    if (k->ne[3] <= 0 || v->ne[3] <= 0 || q->ne[3] % k->ne[3] != 0 || q->ne[3] % v->ne[3] != 0) return false;
    if (H > 65535 || q->ne[3] > 65535 || q->ne[1] > 0x7fffffff) return false;
    if (m && ((m->type != GGML_TYPE_F32 && m->type != GGML_TYPE_F16) || m->ne[0] < n_kv || m->ne[1] < q->ne[1])) return false;
    const struct ggml_tensor * sk = dst->src[4];
    if (sk && (sk->type != GGML_TYPE_F32 || ggml_nelements(sk) != H || !ggml_is_contiguous(sk))) return false;
    return true;
}

bool cuda_op_flash_attn(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    fa_args a;
    a.q = cu_desc(dst->src[0]);
    a.k = cu_desc(dst->src[1]);
    a.v = cu_desc(dst->src[2]);
    a.has_mask = dst->src[3] != nullptr;
    a.m = a.has_mask ? cu_desc(dst->src[3]) : a.q;
    a.d = cu_desc(dst);
    a.sinks = dst->src[4] ? (const float *) dst->src[4]->data : nullptr;
    a.scale = ggml_get_op_params_f32(dst, 0);
    a.max_bias = ggml_get_op_params_f32(dst, 1);
    const float softcap = ggml_get_op_params_f32(dst, 2);
    a.softcap = softcap > 0.0f ? softcap : 0.0f;
    const dim3 g((unsigned) a.q.ne[1], (unsigned) a.q.ne[2], (unsigned) a.q.ne[3]);
    k_flash_attn<<<g, dim3(32, FA_WARPS), 0, ctx->stream>>>(a);
    return true;
}
