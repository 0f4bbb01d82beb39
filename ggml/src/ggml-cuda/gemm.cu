// gemm.cu — matrix products for prompts (more than 8 columns) and the general case.
//
// No cuBLAS is linked (the toolkit here has none), so the prompt path is our own: the weights
// are dequantized (cu_deq8) into F16 rows padded with zeros to a multiple of 32, the
// activations split likewise into F16 high parts and F16 remainders (b = hi + lo to about 22
// bits: the CPU multiplies F16 weights by unrounded F32 activations, and F16 rounding of b alone
// would differ from it by ~1e-3 relative; an activation beyond F16's range, 65504, overflows
// the high part), and a tensor-core (WMMA 16x16x16, F32 accumulation)
// kernel multiplies 64x64 output tiles, four warps of 32x32 each, A times both parts, staging
// 64x32 slices of the operands in shared memory. Rows past M or N are read as zeros and never
// written.
//
// The general kernel takes any float src0 at any strides (KV-cache views, transposed V,
// F32 weights) and multiplies in F32 through 16x16 shared-memory tiles.
#include "common.cuh"
#include "quants.cuh"

#include <mma.h>

// ---- dequantization to F16 rows ----

template <int T> static __global__ void k_dequant_f16(cu_tensor s, __half * d, int64_t ld) {
    const int64_t r = blockIdx.y + (int64_t) gridDim.y * blockIdx.z;
    if (r >= s.ne[1] * s.ne[2] * s.ne[3]) return;
    const int64_t r1 = r % s.ne[1], r2 = (r / s.ne[1]) % s.ne[2], r3 = r / (s.ne[1] * s.ne[2]);
    const char * row = cu_ptr(s, 0, r1, r2, r3);
    __half * out = d + r * ld;
    const int64_t n8 = s.ne[0] / 8;
    for (int64_t c = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; c < ld / 8; c += (int64_t) gridDim.x * blockDim.x) {
        float v[8];
        if (c < n8) {
            cu_deq8<T>(row, c, v);
        } else {
            for (int i = 0; i < 8; i++) {
                const int64_t k = 8 * c + i;
                v[i] = k < s.ne[0] ? cu_load_f(row + k * cu_qtraits<T>::ts, T) : 0.0f;
            }
        }
        __align__(16) __half h[8];
        for (int i = 0; i < 8; i++) h[i] = __float2half_rn(v[i]);
        *(uint4 *) (out + 8 * c) = *(const uint4 *) h;
    }
}

struct dequant_launch {
    dim3 g;
    cudaStream_t st;
    cu_tensor s;
    __half * d;
    int64_t ld;
    template <int T> void operator()() { k_dequant_f16<T><<<g, 128, 0, st>>>(s, d, ld); }
};

bool cuda_dequant_rows_f16(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, __half * dst, int64_t ld) {
    const int64_t rows = ggml_nrows(src0);
    const int64_t gy = rows < 65535 ? (rows < 1 ? 1 : rows) : 65535;
    const int64_t gx = GGML_MIN(64, (ld / 8 + 127) / 128);
    dequant_launch l{ dim3((unsigned) GGML_MAX(1, gx), (unsigned) gy, (unsigned) ((rows + gy - 1) / gy)), ctx->stream,
                      cu_desc(src0), dst, ld };
    if (!cu_dispatch_type(src0->type, l)) {
        GGML_LOG_ERROR("CUDA: dequantizing %s is not supported", ggml_type_name(src0->type));
        return false;
    }
    return true;
}

// ---- tensor-core GEMM ----

#define GT_M   64
#define GT_N   64
#define GT_K   32
#define GT_LDS (GT_K + 8)      // halfs per staged row (keeps 32-byte fragment alignment)
#define GT_LDC (GT_N + 4)

// C[m, n] of slice z = sum_k A[m, k] * (B[n, k] + L[n, k]); A: rows of slice (i12 / r2, i13 / r3),
// B and L (high and low parts): rows of z
static __global__ void __launch_bounds__(128)
    k_gemm_f16(const __half * A, const __half * B, const __half * L, cu_tensor d, int64_t M, int64_t N, int64_t Kp, int64_t ne02,
               int64_t ne12, int64_t r2, int64_t r3) {
    using namespace nvcuda;
    __shared__ __align__(32) __half As[GT_M][GT_LDS];
    __shared__ __align__(32) __half Bs[GT_N][GT_LDS];
    __shared__ __align__(32) __half Ls[GT_N][GT_LDS];
    __shared__ __align__(32) float Cs[GT_M][GT_LDC];
    const int64_t z = blockIdx.z;
    const int64_t i12 = z % ne12, i13 = z / ne12;
    const __half * a = A + ((i13 / r3) * ne02 + i12 / r2) * M * Kp;
    const __half * b = B + z * N * Kp;
    const __half * l = L + z * N * Kp;
    const int64_t m0 = (int64_t) blockIdx.x * GT_M, n0 = (int64_t) blockIdx.y * GT_N;
    const int warp = threadIdx.x / 32;
    const int wm = (warp % 2) * 32, wn = (warp / 2) * 32;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int64_t k0 = 0; k0 < Kp; k0 += GT_K) {
        for (int t = threadIdx.x; t < GT_M * GT_K / 8; t += blockDim.x) {
            const int row = t / (GT_K / 8), col = (t % (GT_K / 8)) * 8;
            *(uint4 *) &As[row][col] = m0 + row < M ? *(const uint4 *) (a + (m0 + row) * Kp + k0 + col) : zero;
            *(uint4 *) &Bs[row][col] = n0 + row < N ? *(const uint4 *) (b + (n0 + row) * Kp + k0 + col) : zero;
            *(uint4 *) &Ls[row][col] = n0 + row < N ? *(const uint4 *) (l + (n0 + row) * Kp + k0 + col) : zero;
        }
        __syncthreads();
        for (int kk = 0; kk < GT_K; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[2], fl[2];
            for (int i = 0; i < 2; i++) wmma::load_matrix_sync(fa[i], &As[wm + 16 * i][kk], GT_LDS);
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(fb[j], &Bs[wn + 16 * j][kk], GT_LDS);
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(fl[j], &Ls[wn + 16 * j][kk], GT_LDS);
            // the small remainders first: they are added to the sum before the large parts grow it
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fl[j], acc[i][j]);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&Cs[wm + 16 * i][wn + 16 * j], acc[i][j], GT_LDC, wmma::mem_row_major);
    __syncthreads();
    for (int t = threadIdx.x; t < GT_M * GT_N; t += blockDim.x) {
        const int mm = t % GT_M, nn = t / GT_M;
        const int64_t m = m0 + mm, n = n0 + nn;
        if (m < M && n < N) *(float *) (d.data + m * d.nb[0] + n * d.nb[1] + i12 * d.nb[2] + i13 * d.nb[3]) = Cs[mm][nn];
    }
}

bool cuda_mul_mat_gemm_f16(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                           struct ggml_tensor * dst) {
    const int64_t K = src0->ne[0], M = src0->ne[1], N = src1->ne[1];
    const int64_t Kp = GGML_PAD(K, GT_K);
    const int64_t slices0 = src0->ne[2] * src0->ne[3], slices1 = src1->ne[2] * src1->ne[3];
    __half * A = (__half *) cuda_pool_alloc(ctx, (size_t) (M * Kp * slices0) * sizeof(__half));
    __half * B = A ? (__half *) cuda_pool_alloc(ctx, (size_t) (N * Kp * slices1) * sizeof(__half)) : nullptr;
    __half * L = B ? (__half *) cuda_pool_alloc(ctx, (size_t) (N * Kp * slices1) * sizeof(__half)) : nullptr;
    if (!A || !B || !L) return false;
    if (!cuda_dequant_rows_f16(ctx, src0, A, Kp)) return false;
    if (!cuda_convert_to_f16(ctx, cu_desc(src1), B, L, Kp)) return false;
    if (slices1 > 65535) {
        GGML_LOG_ERROR("CUDA: mul_mat: %lld slices are too many", (long long) slices1);
        return false;
    }
    const dim3 g((unsigned) ((M + GT_M - 1) / GT_M), (unsigned) ((N + GT_N - 1) / GT_N), (unsigned) slices1);
    k_gemm_f16<<<g, 128, 0, ctx->stream>>>(A, B, L, cu_desc(dst), M, N, Kp, src0->ne[2], src1->ne[2], src1->ne[2] / src0->ne[2],
                                           src1->ne[3] / src0->ne[3]);
    return true;
}

// ---- general F32 product ----

#define GG_T 16

static __global__ void k_gemm_generic(cu_tensor s0, cu_tensor s1, cu_tensor d, int64_t r2, int64_t r3) {
    __shared__ float As[GG_T][GG_T + 1];
    __shared__ float Bs[GG_T][GG_T + 1];
    const int64_t z = blockIdx.z;
    const int64_t i12 = z % s1.ne[2], i13 = z / s1.ne[2];
    const int64_t i02 = i12 / r2, i03 = i13 / r3;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t m = (int64_t) blockIdx.x * GG_T + tx;   // output row index (src0 row)
    const int64_t n = (int64_t) blockIdx.y * GG_T + ty;   // output column (src1 row)
    const int64_t K = s0.ne[0];
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += GG_T) {
        // As[ty][tx] = src0[k0 + tx, m_of_row(ty)]: row (blockIdx.x * T + ty), element k0 + tx
        const int64_t am = (int64_t) blockIdx.x * GG_T + ty, ak = k0 + tx;
        As[ty][tx] = am < s0.ne[1] && ak < K ? cu_load_f(cu_ptr(s0, ak, am, i02, i03), s0.type) : 0.0f;
        const int64_t bn = (int64_t) blockIdx.y * GG_T + ty;
        // b as it is, whatever the weight type (as the CPU's float tiles)
        Bs[ty][tx] = bn < s1.ne[1] && ak < K ? cu_load_f(cu_ptr(s1, ak, bn, i12, i13), s1.type) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < GG_T; k++) acc += As[tx][k] * Bs[ty][k];
        __syncthreads();
    }
    if (m < s0.ne[1] && n < s1.ne[1]) *(float *) cu_ptr(d, m, n, i12, i13) = acc;
}

bool cuda_mul_mat_generic(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                          struct ggml_tensor * dst) {
    const int64_t slices1 = src1->ne[2] * src1->ne[3];
    if (slices1 > 65535 || (src1->ne[1] + GG_T - 1) / GG_T > 65535) {
        GGML_LOG_ERROR("CUDA: mul_mat: shape out of range");
        return false;
    }
    const dim3 g((unsigned) ((src0->ne[1] + GG_T - 1) / GG_T), (unsigned) ((src1->ne[1] + GG_T - 1) / GG_T), (unsigned) slices1);
    k_gemm_generic<<<g, dim3(GG_T, GG_T), 0, ctx->stream>>>(cu_desc(src0), cu_desc(src1), cu_desc(dst), src1->ne[2] / src0->ne[2],
                                                            src1->ne[3] / src0->ne[3]);
    return true;
}
