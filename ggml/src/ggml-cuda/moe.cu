// moe.cu — the mixture-of-experts ops: mul_mat_id (one warp per expert row and chosen pair,
// reading only the chosen experts' rows, mmv.cu's per-lane dequantization and F32 accumulation),
// and the row sorts argsort / top_k (each element's place is its rank: the count of elements
// that sort before it, value first and then the lower index, NaN below every number, as the CPU
// orders them; the rank is exact for every row length and row sorts stay short: routing rows
// hold the experts' logits).
//
// An expert id outside [0, n_as) is never followed: the warp writes NaN and raises the backend's
// error flag (mapped host memory, read by graph_compute after the stream synchronizes, which
// then fails the computation with a logged reason).
#include "common.cuh"
#include "quants.cuh"

#define MMID_WARPS 4

struct mmid_args {
    cu_tensor as, b, ids, d;
    int n_used;
    int * err;
};

template <int T> static __global__ void __launch_bounds__(32 * MMID_WARPS) k_mmid(mmid_args a) {
    const int64_t m = (int64_t) blockIdx.x * MMID_WARPS + threadIdx.y;
    if (m >= a.as.ne[1]) return;
    const int64_t p = blockIdx.y;               // pair: j + t*n_used
    const int64_t j = p % a.n_used, t = p / a.n_used;
    const int32_t e = *(const int32_t *) (a.ids.data + j * a.ids.nb[0] + t * a.ids.nb[1]);
    float * out = (float *) (a.d.data + m * a.d.nb[0] + j * a.d.nb[1] + t * a.d.nb[2]);
    const int lane = threadIdx.x;
    if (e < 0 || e >= a.as.ne[2]) {
        if (lane == 0) {
            *out = __int_as_float(0x7fc00000);
            atomicExch(a.err, 1);
        }
        return;
    }
    const char * row = a.as.data + m * a.as.nb[1] + e * a.as.nb[2];
    const float * y = (const float *) (a.b.data + (j % a.b.ne[1]) * a.b.nb[1] + t * a.b.nb[2]);
    const int64_t K = a.as.ne[0], n8 = K / 8;
    float acc = 0.0f;
    for (int64_t c = lane; c < n8; c += 32) {
        float v[8];
        cu_deq8<T>(row, c, v);
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) s += v[i] * y[8 * c + i];
        acc += s;
    }
    if (cu_qtraits<T>::qk == 1) {
        for (int64_t k = 8 * n8 + lane; k < K; k += 32) acc += cu_load_f(row + k * cu_qtraits<T>::ts, T) * y[k];
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) *out = acc;
}

struct mmid_launch {
    dim3 g, bl;
    cudaStream_t st;
    mmid_args a;
    template <int T> void operator()() { k_mmid<T><<<g, bl, 0, st>>>(a); }
};

bool cuda_supports_mul_mat_id(const struct ggml_tensor * op) {
    const struct ggml_tensor *as = op->src[0], *b = op->src[1], *ids = op->src[2];
    return as && b && ids && cu_type_has_deq8(as->type) && b->type == GGML_TYPE_F32 && b->nb[0] == sizeof(float) &&
        ids->type == GGML_TYPE_I32 && op->type == GGML_TYPE_F32 && as->nb[0] == ggml_type_size(as->type) &&
        (as->type == GGML_TYPE_F32 || as->type == GGML_TYPE_F16 || as->type == GGML_TYPE_BF16 || as->ne[0] % 8 == 0) &&
        ids->ne[0] * ids->ne[1] <= 65535;
}

bool cuda_op_mul_mat_id(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    if (!cuda_supports_mul_mat_id(dst) || !ctx->err_dev) {
        GGML_LOG_ERROR("CUDA: mul_mat_id of %s experts is not supported here", ggml_type_name(dst->src[0]->type));
        return false;
    }
    mmid_args a;
    a.as = cu_desc(dst->src[0]);
    a.b = cu_desc(dst->src[1]);
    a.ids = cu_desc(dst->src[2]);
    a.d = cu_desc(dst);
    a.n_used = (int) dst->src[2]->ne[0];
    a.err = ctx->err_dev;
    const int64_t n_pairs = dst->src[2]->ne[0] * dst->src[2]->ne[1];
    mmid_launch l{ dim3(cu_blocks(dst->src[0]->ne[1], MMID_WARPS), (unsigned) n_pairs), dim3(32, MMID_WARPS), ctx->stream, a };
    return cu_dispatch_type(dst->src[0]->type, l);
}

// ---- argsort / top_k ----

// True if (a, ia) sorts before (b, ib) in descending order (NaN last, ties by lower index).
static __device__ __forceinline__ bool sort_before_desc(float a, int ia, float b, int ib) {
    const bool an = isnan(a), bn = isnan(b);
    if (an || bn) return (!an && bn) || (an && bn && ia < ib);
    return a > b || (a == b && ia < ib);
}

// True if (a, ia) sorts before (b, ib) in ascending order (NaN first, ties by lower index).
static __device__ __forceinline__ bool sort_before_asc(float a, int ia, float b, int ib) {
    const bool an = isnan(a), bn = isnan(b);
    if (an || bn) return (an && !bn) || (an && bn && ia < ib);
    return a < b || (a == b && ia < ib);
}

// dst row gets index i at position rank(i) when that is below k (k = row length: a full sort).
static __global__ void k_rank_sort(cu_tensor s, cu_tensor d, bool desc, int64_t k) {
    const int64_t r = blockIdx.x;
    const int64_t i1 = r % s.ne[1], i2 = (r / s.ne[1]) % s.ne[2], i3 = r / (s.ne[1] * s.ne[2]);
    const char * x = cu_ptr(s, 0, i1, i2, i3);
    int32_t * out = (int32_t *) cu_ptr(d, 0, i1, i2, i3);
    const int64_t n = s.ne[0];
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = cu_load_f(x + i * s.nb[0], s.type);
        int64_t rank = 0;
        for (int64_t q = 0; q < n; q++) {
            const float w = cu_load_f(x + q * s.nb[0], s.type);
            rank += desc ? sort_before_desc(w, (int) q, v, (int) i) : sort_before_asc(w, (int) q, v, (int) i);
        }
        if (rank < k) out[rank] = (int32_t) i;
    }
}

bool cuda_supports_sort(const struct ggml_tensor * op) {
    const struct ggml_tensor * s = op->src[0];
    // the rank is n^2 comparisons per row: long rows (a vocabulary) stay on the CPU
    return s && cu_is_float(s->type) && op->type == GGML_TYPE_I32 && op->nb[0] == sizeof(int32_t) && s->ne[0] <= 4096 &&
        ggml_nrows(s) <= 0x7fffffff;
}

bool cuda_op_sort(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * s = dst->src[0];
    const bool top = dst->op == GGML_OP_TOP_K;
    const bool desc = top || ggml_get_op_params_i32(dst, 0) == GGML_SORT_ORDER_DESC;
    k_rank_sort<<<(unsigned) ggml_nrows(s), 128, 0, ctx->stream>>>(cu_desc(s), cu_desc(dst), desc, dst->ne[0]);
    return true;
}
