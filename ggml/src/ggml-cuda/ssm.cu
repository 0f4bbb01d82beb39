// ssm.cu — the recurrent-layer ops on the device, with ops-ssm.c's arithmetic:
// ssm_conv (one thread per output element: a d_conv-tap dot over the channel's window) and
// gated_delta_net (one block per (value head, sequence), one thread per value dim j holding
// row j of the state, M[.][j], in local memory, tokens in order; q and k of the token in shared
// memory). Both take any strides on their inputs as the CPU kernels do.
#include "common.cuh"

#define GDN_MAX_S 256

static __global__ void k_ssm_conv(cu_tensor sx, cu_tensor c, cu_tensor d, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; e < n; e += (int64_t) gridDim.x * blockDim.x) {
        const int64_t ch = e % d.ne[0], t = (e / d.ne[0]) % d.ne[1], s = e / (d.ne[0] * d.ne[1]);
        const float * w = (const float *) cu_ptr(c, 0, ch, 0, 0);
        float acc = 0.0f;
        for (int64_t j = 0; j < c.ne[0]; j++) {
            acc += w[j] * *(const float *) cu_ptr(sx, t + j, ch, s, 0);
        }
        *(float *) cu_ptr(d, ch, t, s, 0) = acc;
    }
}

bool cuda_op_ssm_conv(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const int64_t n = ggml_nelements(dst);
    k_ssm_conv<<<cu_blocks(n, 256), 256, 0, ctx->stream>>>(cu_desc(dst->src[0]), cu_desc(dst->src[1]), cu_desc(dst), n);
    return true;
}

static __device__ __forceinline__ float gdn_dot(const float * row, const float * x, int S) {
    // partial sums in GGML_CPU_RLANES (16) lanes, then added in lane order: ops-ssm.c's order
    float acc[16];
    for (int l = 0; l < 16; l++) acc[l] = 0.0f;
    int i = 0;
    for (; i + 16 <= S; i += 16) {
        for (int l = 0; l < 16; l++) acc[l] += row[i + l] * x[i + l];
    }
    float s = 0.0f;
    for (int l = 0; l < 16; l++) s += acc[l];
    for (; i < S; i++) s += row[i] * x[i];
    return s;
}

static __global__ void k_gated_delta_net(cu_tensor q, cu_tensor k, cu_tensor v, cu_tensor g, cu_tensor b, const float * state,
                                         float * out, int S, int64_t K) {
    __shared__ float sq[GDN_MAX_S], sk[GDN_MAX_S], sg[GDN_MAX_S];
    const int64_t H = v.ne[1], n_t = v.ne[2], n_s = v.ne[3], H_k = q.ne[1];
    const int64_t h = blockIdx.x % H, s = blockIdx.x / H, hk = h % H_k;
    const int j = threadIdx.x;
    const bool g_vec = g.ne[0] == S && S > 1;
    float * states = out + (int64_t) S * H * n_t * n_s;
    const int64_t slot = (int64_t) S * S * H * n_s;
    float * m = states + (s * H + h) * (int64_t) S * S;   // m[j*S + i] = M[i][j]
    float row[GDN_MAX_S];
    for (int i = 0; j < S && i < S; i++) row[i] = state[(s * H + h) * (int64_t) S * S + (int64_t) j * S + i];
    const float scale = 1.0f / sqrtf((float) S);
    for (int64_t t = 0; t < n_t; t++) {
        __syncthreads();
        for (int i = j; i < S; i += blockDim.x) {
            sq[i] = *(const float *) cu_ptr(q, i, hk, t, s);
            sk[i] = *(const float *) cu_ptr(k, i, hk, t, s);
            sg[i] = expf(*(const float *) cu_ptr(g, g_vec ? i : 0, h, t, s));
        }
        __syncthreads();
        if (j < S) {
            const float beta = *(const float *) cu_ptr(b, 0, h, t, s);
            const float vj = *(const float *) cu_ptr(v, j, h, t, s);
            for (int i = 0; i < S; i++) row[i] *= g_vec ? sg[i] : sg[0];
            const float d = (vj - gdn_dot(row, sk, S)) * beta;
            for (int i = 0; i < S; i++) row[i] += sk[i] * d;
            out[((s * n_t + t) * H + h) * S + j] = gdn_dot(row, sq, S) * scale;
            const int64_t back = n_t - 1 - t;
            if (back >= 1 && back < K) {
                for (int i = 0; i < S; i++) m[back * slot + (int64_t) j * S + i] = row[i];
            }
        }
    }
    for (int i = 0; j < S && i < S; i++) m[(int64_t) j * S + i] = row[i];
}

bool cuda_op_gated_delta_net(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * v = dst->src[2];
    const int S = (int) v->ne[0];
    const unsigned threads = (unsigned) ((S + 31) / 32 * 32);
    k_gated_delta_net<<<(unsigned) (v->ne[1] * v->ne[3]), threads, 0, ctx->stream>>>(
        cu_desc(dst->src[0]), cu_desc(dst->src[1]), cu_desc(v), cu_desc(dst->src[3]), cu_desc(dst->src[4]),
        (const float *) dst->src[5]->data, (float *) dst->data, S, (int64_t) ggml_get_op_params_i32(dst, 0));
    return true;
}

bool cuda_supports_ssm(const struct ggml_tensor * op) {
    for (int i = 0; i < GGML_MAX_SRC && op->src[i]; i++) {
        if (op->src[i]->type != GGML_TYPE_F32) return false;
    }
    if (op->op == GGML_OP_GATED_DELTA_NET) {
        return op->src[2]->ne[0] <= GDN_MAX_S;
    }
    return op->op == GGML_OP_SSM_CONV;
}
