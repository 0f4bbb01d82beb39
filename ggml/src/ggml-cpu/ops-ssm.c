// ops-ssm.c — the recurrent ops of state-space and linear-attention layers: the causal
// depthwise convolution over a channel's state plus its new inputs (SSM_CONV) and the gated
// delta rule (GATED_DELTA_NET, Gated DeltaNet: Yang et al., 2024), token by token or, for
// prompts, chunk by chunk (the WY form of the paper's chunked algorithm; op param 1 = chunk).
//
// SSM_CONV splits (channel, sequence) pairs over threads; GATED_DELTA_NET splits (value head,
// sequence) pairs: each pair's recurrence is sequential in the tokens, pairs are independent.
// Every pair is computed by one thread in one fixed order, so results do not depend on the
// thread count. A state row's two passes per token (decay + prediction, write + read) are the
// kernel set's scale_dot / axpy_dot (vec.h: FMA on AVX2), so kernel sets differ in rounding.
#include "ops-util.h"
#include "vec.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define GDN_MXCSR 1
#endif

// Channels go to threads in blocks of SSM_CONV_BLOCK; within a block, token after token, the
// block's outputs are neighbours in dst (one cache line) while each channel reads its own window
// of sx (contiguous in time): neither side walks a whole row stride per element.
#define SSM_CONV_BLOCK    16
#define SSM_CONV_MAX_TAPS 8

void ggml_compute_forward_ssm_conv(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * sx = dst->src[0];
    const struct ggml_tensor * c = dst->src[1];
    const int64_t d_conv = c->ne[0], d_inner = dst->ne[0], n_t = dst->ne[1], n_s = dst->ne[2];
    const int64_t n_blk = (d_inner + SSM_CONV_BLOCK - 1) / SSM_CONV_BLOCK;
    int64_t r0, r1;
    ggml_cpu_split(n_blk * n_s, params->ith, params->nth, &r0, &r1);
    // channels adjacent in sx and dst (the graph's channel-fastest window): the block's taps
    // transposed once, then each token is d_conv vector multiply-adds over the block
    const bool rows = sx->nb[1] == sizeof(float) && dst->nb[0] == sizeof(float) && d_conv <= SSM_CONV_MAX_TAPS;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t s = r / n_blk, ch0 = (r % n_blk) * SSM_CONV_BLOCK;
        const int64_t ch1 = ch0 + SSM_CONV_BLOCK < d_inner ? ch0 + SSM_CONV_BLOCK : d_inner;
        if (rows) {
            const int64_t nb = ch1 - ch0;
            float wt[SSM_CONV_MAX_TAPS][SSM_CONV_BLOCK];
            for (int64_t k = 0; k < nb; k++) {
                const char * w = (const char *) c->data + (ch0 + k) * c->nb[1];
                for (int64_t j = 0; j < d_conv; j++) wt[j][k] = ggml_cpu_load_f(w + j * c->nb[0], c->type);
            }
            for (int64_t t = 0; t < n_t; t++) {
                float acc[SSM_CONV_BLOCK] = { 0 };
                for (int64_t j = 0; j < d_conv; j++) {
                    const float * x = (const float *) ((const char *) sx->data + (t + j) * sx->nb[0] + s * sx->nb[2]) + ch0;
                    for (int64_t k = 0; k < nb; k++) acc[k] += wt[j][k] * x[k];
                }
                memcpy(ggml_cpu_ptr(dst, ch0, t, s, 0), acc, (size_t) nb * sizeof(float));
            }
            continue;
        }
        for (int64_t t = 0; t < n_t; t++) {
            for (int64_t ch = ch0; ch < ch1; ch++) {
                const char * w = (const char *) c->data + ch * c->nb[1];
                const char * x = (const char *) sx->data + ch * sx->nb[1] + s * sx->nb[2] + t * sx->nb[0];
                float acc = 0.0f;
                for (int64_t j = 0; j < d_conv; j++) {
                    acc += ggml_cpu_load_f(w + j * c->nb[0], c->type) * *(const float *) (x + j * sx->nb[0]);
                }
                *(float *) ggml_cpu_ptr(dst, ch, t, s, 0) = acc;
            }
        }
    }
}

// Chunked form, per (head, sequence) and chunk of L tokens with in-chunk cumulative log decay
// G_t = g_1 + ... + g_t and the state M [key i][value j] (kept key-major while the chunk runs):
//   N[t][s] = -beta_t (k_t . k_s) exp(G_t - G_s) for s < t;  T = (I - N)^-1 (forward substitution)
//   U = T (beta v);  W = T (beta exp(G) k);  V' = U - W M          (the tokens' corrected values)
//   o_t = scale (exp(G_t) q_t M + sum_{s<=t} exp(G_t - G_s) (q_t . k_s) V'_s)
//   M <- exp(G_L) M + sum_t exp(G_L - G_t) k_t V'_t^T
// which equals the token-by-token rule to rounding; the products are gemm_acc calls on
// contiguous copies of the chunk. The scratch of one thread, in floats:
static int64_t gdn_chunk_floats(int64_t S, int64_t C) {
    return 8 * C * S + 2 * C * C + S * S + C + 16; // Q K KT VB KB U W VN O, T A, M, G (+ alignment)
}

size_t ggml_cpu_work_size_gated_delta_net(const struct ggml_tensor * dst, int n_threads) {
    const int32_t C = ggml_get_op_params_i32(dst, 1);
    if (C <= 0) return 0;
    return (size_t) n_threads * (size_t) gdn_chunk_floats(dst->src[2]->ne[0], C) * sizeof(float);
}

static void gdn_pair_chunked(const struct ggml_tensor * dst, int64_t h, int64_t s, int64_t C, float * ws,
                             const struct ggml_cpu_vec_kernels * vk) {
    const struct ggml_tensor *tq = dst->src[0], *tk = dst->src[1], *tv = dst->src[2];
    const struct ggml_tensor *tg = dst->src[3], *tb = dst->src[4], *ts = dst->src[5];
    const int64_t S = tv->ne[0], H = tv->ne[1], n_t = tv->ne[2], n_s = tv->ne[3], hk = h % tq->ne[1];
    const float scale = 1.0f / sqrtf((float) S);
    float *Q = ws, *K = Q + C * S, *KT = K + C * S, *VB = KT + S * C, *KB = VB + C * S;
    float *U = KB + C * S, *W = U + C * S, *O = W + C * S, *T = O + C * S, *A = T + C * C, *M = A + C * C;
    float *G = M + S * S, *VN = U; // V' = U + W M is built in U's place
    float * out = (float *) dst->data;
    float * st = out + S * H * n_t * n_s + (s * H + h) * S * S;   // st[j*S + i] = M[i][j]
    const float * st0 = (const float *) ((const char *) ts->data + (s * H + h) * S * S * sizeof(float));
    for (int64_t i = 0; i < S; i++) {
        for (int64_t j = 0; j < S; j++) M[i * S + j] = st0[j * S + i];
    }
    for (int64_t c0 = 0; c0 < n_t; c0 += C) {
        const int64_t L = n_t - c0 < C ? n_t - c0 : C;
        float gsum = 0.0f;
        for (int64_t t = 0; t < L; t++) {
            const float * q = (const float *) ggml_cpu_ptr(tq, 0, hk, c0 + t, s);
            const float * k = (const float *) ggml_cpu_ptr(tk, 0, hk, c0 + t, s);
            const float * v = (const float *) ggml_cpu_ptr(tv, 0, h, c0 + t, s);
            const float beta = *(const float *) ggml_cpu_ptr(tb, 0, h, c0 + t, s);
            gsum += *(const float *) ggml_cpu_ptr(tg, 0, h, c0 + t, s);
            G[t] = gsum;
            const float eg = expf(gsum);
            for (int64_t i = 0; i < S; i++) {
                Q[t * S + i] = q[i] * scale;
                K[t * S + i] = k[i];
                KT[i * C + t] = k[i];
                VB[t * S + i] = v[i] * beta;
                KB[t * S + i] = -k[i] * beta * eg;    // negated: W M is subtracted by accumulation
            }
        }
        // N, then T = (I - N)^-1 row by row; T is unit lower triangular
        memset(A, 0, (size_t) (L * C) * sizeof(float));
        vk->gemm_acc_f32(L, L, S, A, C, K, S, KT, C);
        memset(T, 0, (size_t) (L * C) * sizeof(float));
        for (int64_t t = 0; t < L; t++) {
            const float beta = *(const float *) ggml_cpu_ptr(tb, 0, h, c0 + t, s);
            float * row = T + t * C;
            for (int64_t m = 0; m < t; m++) row[m] = -beta * A[t * C + m] * expf(G[t] - G[m]);
            for (int64_t m = 1; m < t; m++) {
                const float nm = row[m]; // still N[t][m]: only the later m' > m change column m
                const float * tm = T + m * C;
                for (int64_t i = 0; i < m; i++) row[i] += nm * tm[i];
            }
            row[t] = 1.0f;
        }
        // V' = T VB + (T (-KB)) M;  o = (exp(G) Q) M + (mask(Q K^T) * decay) V'
        memset(U, 0, (size_t) (L * S) * sizeof(float));
        memset(W, 0, (size_t) (L * S) * sizeof(float));
        vk->gemm_acc_f32(L, S, L, U, S, T, C, VB, S);
        vk->gemm_acc_f32(L, S, L, W, S, T, C, KB, S);
        memset(A, 0, (size_t) (L * C) * sizeof(float));
        vk->gemm_acc_f32(L, L, S, A, C, Q, S, KT, C);
        for (int64_t t = 0; t < L; t++) {
            const float eg = expf(G[t]);
            for (int64_t i = 0; i < S; i++) Q[t * S + i] *= eg;
            for (int64_t m = 0; m <= t; m++) A[t * C + m] *= expf(G[t] - G[m]);
            for (int64_t m = t + 1; m < L; m++) A[t * C + m] = 0.0f;
        }
        memset(O, 0, (size_t) (L * S) * sizeof(float));
        vk->gemm_acc_f32(L, S, S, O, S, Q, S, M, S);
        vk->gemm_acc_f32(L, S, S, VN, S, W, S, M, S);
        vk->gemm_acc_f32(L, S, L, O, S, A, C, VN, S);
        for (int64_t t = 0; t < L; t++) {
            memcpy(out + ((s * n_t + c0 + t) * H + h) * S, O + t * S, (size_t) S * sizeof(float));
        }
        // M <- exp(G_L) M + (exp(G_L - G) K)^T V'
        const float gl = G[L - 1], el = expf(gl);
        for (int64_t i = 0; i < S * S; i++) M[i] *= el;
        for (int64_t t = 0; t < L; t++) {
            const float e = expf(gl - G[t]);
            for (int64_t i = 0; i < S; i++) KT[i * C + t] *= e;
        }
        vk->gemm_acc_f32(S, S, L, M, S, KT, C, VN, S);
    }
    for (int64_t j = 0; j < S; j++) {
        for (int64_t i = 0; i < S; i++) st[j * S + i] = M[i * S + j];
    }
}

// The state of (head h, sequence s) lives in the output's snapshot slot 0 while the tokens are
// processed (the final state ends there); slot kk >= 1 gets a copy of the state kk tokens
// before the last, for as many tokens as there are.
static void gdn_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst);

// Strong decays drive exp(G), the decayed keys and the state through the subnormal range, where
// each x86 multiply-add takes a microcode assist (measured in a Qwen3.5-shaped model: the
// chunked scan 3.5x slower than without); values under 1e-38 are flushed to 0 (FTZ + DAZ) for
// this kernel only, and the thread's mode is restored after.
void ggml_compute_forward_gated_delta_net(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
#ifdef GDN_MXCSR
    const unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u);
#endif
    gdn_compute(params, dst);
#ifdef GDN_MXCSR
    _mm_setcsr(csr);
#endif
}

static void gdn_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor *tq = dst->src[0], *tk = dst->src[1], *tv = dst->src[2];
    const struct ggml_tensor *tg = dst->src[3], *tb = dst->src[4], *ts = dst->src[5];
    const int64_t S = tv->ne[0], H = tv->ne[1], n_t = tv->ne[2], n_s = tv->ne[3], H_k = tq->ne[1];
    const int64_t K = ggml_get_op_params_i32(dst, 0);
    const bool g_vec = tg->ne[0] == S && S > 1;
    const float scale = 1.0f / sqrtf((float) S);
    float * out = (float *) dst->data;
    float * states = out + S * H * n_t * n_s;
    const int64_t slot_floats = S * S * H * n_s;
    const struct ggml_cpu_vec_kernels * vk = ggml_cpu_vec_kernels_selected();

    int64_t r0, r1;
    ggml_cpu_split(H * n_s, params->ith, params->nth, &r0, &r1);
    // chunked where asked for, one snapshot (the chunks skip the states between) and a scalar decay
    const int64_t C = ggml_get_op_params_i32(dst, 1);
    if (C > 0 && K == 1 && !g_vec && n_t > 1) {
        const size_t per = (size_t) gdn_chunk_floats(S, C);
        if (params->wsize < (size_t) params->nth * per * sizeof(float)) {
            if (params->ith == 0) GGML_LOG_ERROR("GATED_DELTA_NET: no scratch for the chunked form\n");
            return;
        }
        // 64-byte aligned slice of this thread
        float * ws = (float *) params->wdata + (size_t) params->ith * per;
        ws = (float *) (((uintptr_t) ws + 63) & ~(uintptr_t) 63);
        for (int64_t r = r0; r < r1; r++) {
            gdn_pair_chunked(dst, r % H, r / H, C, ws, vk);
        }
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        const int64_t h = r % H, s = r / H, hk = h % H_k;
        float * m = states + (s * H + h) * S * S;   // m[j*S + i] = M[i][j]: row j holds value dim j
        memcpy(m, (const char *) ts->data + (s * H + h) * S * S * sizeof(float), (size_t) (S * S) * sizeof(float));
        for (int64_t t = 0; t < n_t; t++) {
            const float * q = (const float *) ggml_cpu_ptr(tq, 0, hk, t, s);
            const float * k = (const float *) ggml_cpu_ptr(tk, 0, hk, t, s);
            const float * v = (const float *) ggml_cpu_ptr(tv, 0, h, t, s);
            const float * g = (const float *) ggml_cpu_ptr(tg, 0, h, t, s);
            const float beta = *(const float *) ggml_cpu_ptr(tb, 0, h, t, s);
            float * o = out + ((s * n_t + t) * H + h) * S;
            const float decay = expf(g[0]);
            for (int64_t j = 0; j < S; j++) {
                float * row = m + j * S;
                if (g_vec) {
                    for (int64_t i = 0; i < S; i++) row[i] *= expf(g[i]);
                }
                // delta rule: the value the state predicts for k moves toward v by beta
                const float d = (v[j] - vk->scale_dot_f32(S, row, g_vec ? 1.0f : decay, k)) * beta;
                o[j] = vk->axpy_dot_f32(S, row, d, k, q) * scale;
            }
            const int64_t back = n_t - 1 - t;
            if (back >= 1 && back < K) {
                memcpy(m + back * slot_floats, m, (size_t) (S * S) * sizeof(float));
            }
        }
    }
}
