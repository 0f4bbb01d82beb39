// mmv.cu — matrix times a few vectors (batches up to 8 columns: decoding, small batches of
// sequences), reading the weights' blocks directly: one warp per weight row, each lane
// dequantizing 8 elements at a time (cu_deq8) and multiplying them into every column, F32
// accumulation, one warp reduction per column. Bound by reading the weights once. The columns
// are used as they are, also for F16 / BF16 weights: the CPU's float tiles (matmul-float.h) do
// not round them to the weight type either.
#include "common.cuh"
#include "quants.cuh"

#define MMV_MAX_COLS 8
#define MMV_WARPS    4

struct mmv_args {
    cu_tensor s0, s1, d;
    int64_t r2, r3;   // broadcast of src0 over dims 2, 3
    int ncols;
};

template <int T> static __global__ void __launch_bounds__(32 * MMV_WARPS) k_mmv(mmv_args a) {
    const int64_t m = (int64_t) blockIdx.x * MMV_WARPS + threadIdx.y;
    if (m >= a.s0.ne[1]) return;
    const int64_t z = blockIdx.y;
    const int64_t i12 = z % a.s1.ne[2], i13 = z / a.s1.ne[2];
    const char * row = a.s0.data + m * a.s0.nb[1] + (i12 / a.r2) * a.s0.nb[2] + (i13 / a.r3) * a.s0.nb[3];
    const char * ybase = a.s1.data + i12 * a.s1.nb[2] + i13 * a.s1.nb[3];
    const int lane = threadIdx.x;
    const int64_t K = a.s0.ne[0];
    const int64_t n8 = K / 8;
    float acc[MMV_MAX_COLS];
#pragma unroll
    for (int j = 0; j < MMV_MAX_COLS; j++) acc[j] = 0.0f;
    for (int64_t c = lane; c < n8; c += 32) {
        float v[8];
        cu_deq8<T>(row, c, v);
#pragma unroll
        for (int j = 0; j < MMV_MAX_COLS; j++) {
            if (j < a.ncols) {
                const float * y = (const float *) (ybase + j * a.s1.nb[1]) + 8 * c;
                float s = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; i++) s += v[i] * y[i];
                acc[j] += s;
            }
        }
    }
    if (cu_qtraits<T>::qk == 1) {
        // float weights whose row length is not a multiple of 8
        for (int64_t k = 8 * n8 + lane; k < K; k += 32) {
            const float w = cu_load_f(row + k * cu_qtraits<T>::ts, T);
            for (int j = 0; j < a.ncols; j++) acc[j] += w * ((const float *) (ybase + j * a.s1.nb[1]))[k];
        }
    }
#pragma unroll
    for (int j = 0; j < MMV_MAX_COLS; j++) {
        if (j < a.ncols) {
            float s = acc[j];
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0) *(float *) (a.d.data + m * a.d.nb[0] + j * a.d.nb[1] + i12 * a.d.nb[2] + i13 * a.d.nb[3]) = s;
        }
    }
}

struct mmv_launch {
    dim3 g, b;
    cudaStream_t st;
    mmv_args a;
    template <int T> void operator()() { k_mmv<T><<<g, b, 0, st>>>(a); }
};

bool cuda_mul_mat_vec(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                      struct ggml_tensor * dst) {
    mmv_args a;
    a.s0 = cu_desc(src0);
    a.s1 = cu_desc(src1);
    a.d = cu_desc(dst);
    a.r2 = src1->ne[2] / src0->ne[2];
    a.r3 = src1->ne[3] / src0->ne[3];
    a.ncols = (int) src1->ne[1];
    const int64_t slices = src1->ne[2] * src1->ne[3];
    if (a.ncols > MMV_MAX_COLS || slices > 65535) {
        GGML_LOG_ERROR("CUDA: mul_mat_vec: %d columns x %lld slices out of range", a.ncols, (long long) slices);
        return false;
    }
    mmv_launch l{ dim3((unsigned) ((src0->ne[1] + MMV_WARPS - 1) / MMV_WARPS), (unsigned) slices), dim3(32, MMV_WARPS),
                  ctx->stream, a };
    if (!cu_dispatch_type(src0->type, l)) {
        GGML_LOG_ERROR("CUDA: mul_mat_vec of %s is not supported", ggml_type_name(src0->type));
        return false;
    }
    return true;
}
