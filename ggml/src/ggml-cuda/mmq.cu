// mmq.cu — matrix products of quantized weights as the CPU computes them (qdot.cuh): the
// activation columns are first quantized to the weight type's activation type (one thread per
// block, the CPU's bytes), then one warp per weight row walks its 32-element units, each lane
// dotting a unit with up to 8 columns in integers and adding the scaled result; a warp
// reduction per column gives dst. Columns beyond 8 are further blocks of the grid (grid.y),
// which re-read the row (from L2 for the matrices of small models).
#include "common.cuh"
#include "qdot.cuh"

#define MMQ_COLS  8
#define MMQ_WARPS 4

// x: src1 [K, N, B2, B3] F32 (any strides) -> y: per column (row_bytes apart), K / qk blocks of
// activation type A; one thread per block.
template <typename A>
static __global__ void k_quantize_act(cu_tensor x, char * y, int64_t row_bytes, int64_t nb_per_row, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        const int64_t b = i % nb_per_row, r = i / nb_per_row;
        const int64_t r1 = r % x.ne[1], r2 = (r / x.ne[1]) % x.ne[2], r3 = r / (x.ne[1] * x.ne[2]);
        const char * src = cu_ptr(x, b * A::qk, r1, r2, r3);
        float buf[A::qk];
        for (int j = 0; j < A::qk; j++) buf[j] = *(const float *) (src + j * x.nb[0]);
        cu_quantize_act<A::type>(buf, (typename A::block *) (y + r * row_bytes) + b);
    }
}

// Q8_K with one warp per 256-element super-block (a thread per block would serialize 256
// elements: the decode latency); the same operations per element as cu_quantize_q8_K and exact
// reductions (max, integer sums), hence the same bytes.
static __global__ void k_quantize_q8_K_warp(cu_tensor x, char * y, int64_t row_bytes, int64_t nb_per_row, int64_t n) {
    const int lane = threadIdx.x % 32;
    for (int64_t i = (blockIdx.x * (int64_t) blockDim.x + threadIdx.x) / 32; i < n; i += (int64_t) gridDim.x * blockDim.x / 32) {
        const int64_t b = i % nb_per_row, r = i / nb_per_row;
        const int64_t r1 = r % x.ne[1], r2 = (r / x.ne[1]) % x.ne[2], r3 = r / (x.ne[1] * x.ne[2]);
        const char * src = cu_ptr(x, b * QK_K + 8 * lane, r1, r2, r3);
        float v[8];
        float amax = 0.0f;
        for (int j = 0; j < 8; j++) {
            v[j] = *(const float *) (src + j * x.nb[0]);
            amax = fmaxf(amax, fabsf(v[j]));
        }
        for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        block_q8_K * out = (block_q8_K *) (y + r * row_bytes) + b;
        const float iscale = amax == 0.0f ? 0.0f : 127.0f / amax;
        int sum = 0;
        for (int j = 0; j < 8; j++) {
            int q = 0;
            if (amax != 0.0f) {
                q = (int) rintf(iscale * v[j]);
                q = q < -127 ? -127 : q > 127 ? 127 : q;
            }
            out->qs[8 * lane + j] = (int8_t) q;
            sum += q;
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);   // lanes 2g, 2g + 1 hold group g of 16
        if ((lane & 1) == 0) out->bsums[lane / 2] = (int16_t) sum;
        if (lane == 0) out->d = amax == 0.0f ? 0.0f : 1.0f / iscale;
    }
}

struct mmq_args {
    cu_tensor w, d;
    const char * act;
    int64_t act_row;      // bytes per activation column
    int64_t ne11, ne12;   // columns and dim-2 slices of src1
    int64_t r2, r3;
};

template <int T> static __global__ void __launch_bounds__(32 * MMQ_WARPS) k_mmq(mmq_args a) {
    const int64_t m = (int64_t) blockIdx.x * MMQ_WARPS + threadIdx.y;
    if (m >= a.w.ne[1]) return;
    const int64_t n0 = (int64_t) blockIdx.y * MMQ_COLS;
    const int ncols = (int) (a.ne11 - n0 < MMQ_COLS ? a.ne11 - n0 : MMQ_COLS);
    const int64_t z = blockIdx.z;
    const int64_t i12 = z % a.ne12, i13 = z / a.ne12;
    const char * row = a.w.data + m * a.w.nb[1] + (i12 / a.r2) * a.w.nb[2] + (i13 / a.r3) * a.w.nb[3];
    const char * act = a.act + (z * a.ne11 + n0) * a.act_row;
    const int64_t n_units = a.w.ne[0] / 32;
    float acc[MMQ_COLS];
#pragma unroll
    for (int j = 0; j < MMQ_COLS; j++) acc[j] = 0.0f;
    for (int64_t u = threadIdx.x; u < n_units; u += 32) {
#pragma unroll
        for (int j = 0; j < MMQ_COLS; j++) {
            if (j < ncols) acc[j] = cu_unit_dot<T>(row, act + j * a.act_row, u, acc[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < MMQ_COLS; j++) {
        if (j < ncols) {
            float s = acc[j];
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (threadIdx.x == 0) {
                *(float *) (a.d.data + m * a.d.nb[0] + (n0 + j) * a.d.nb[1] + i12 * a.d.nb[2] + i13 * a.d.nb[3]) = s;
            }
        }
    }
}

struct mmq_launch {
    cuda_backend_ctx * ctx;
    const struct ggml_tensor *src0, *src1;
    struct ggml_tensor * dst;
    bool ok;
    template <int T> void operator()() {
        typedef cu_vdt<T> A;
        typedef typename A::block VB;
        constexpr int V = A::type;
        constexpr int QK = A::qk;
        const int64_t K = src0->ne[0];
        const int64_t nb_per_row = K / QK;
        const int64_t row_bytes = nb_per_row * (int64_t) sizeof(VB);
        const int64_t n_rows = src1->ne[1] * src1->ne[2] * src1->ne[3];
        char * act = (char *) cuda_pool_alloc(ctx, (size_t) (row_bytes * n_rows));
        if (!act) {
            ok = false;
            return;
        }
        const int64_t n = nb_per_row * n_rows;
        if (V == GGML_TYPE_Q8_K) {
            const int64_t blocks = (n + 3) / 4;   // four warps per block
            k_quantize_q8_K_warp<<<(unsigned) (blocks > 65535 * 8 ? 65535 * 8 : blocks), 128, 0, ctx->stream>>>(
                cu_desc(src1), act, row_bytes, nb_per_row, n);
        } else {
            const int64_t blocks = (n + 127) / 128;
            k_quantize_act<A><<<(unsigned) (blocks > 65535 * 8 ? 65535 * 8 : blocks), 128, 0, ctx->stream>>>(
                cu_desc(src1), act, row_bytes, nb_per_row, n);
        }
        mmq_args a;
        a.w = cu_desc(src0);
        a.d = cu_desc(dst);
        a.act = act;
        a.act_row = row_bytes;
        a.ne11 = src1->ne[1];
        a.ne12 = src1->ne[2];
        a.r2 = src1->ne[2] / src0->ne[2];
        a.r3 = src1->ne[3] / src0->ne[3];
        const dim3 g((unsigned) ((src0->ne[1] + MMQ_WARPS - 1) / MMQ_WARPS), (unsigned) ((src1->ne[1] + MMQ_COLS - 1) / MMQ_COLS),
                     (unsigned) (src1->ne[2] * src1->ne[3]));
        k_mmq<T><<<g, dim3(32, MMQ_WARPS), 0, ctx->stream>>>(a);
        ok = true;
    }
};

// True when cuda_mul_mat_q computes this product (a quantized type with a unit dot whose
// rows hold whole activation blocks).
struct mmq_probe {
    int qk = 0;
    template <int T> void operator()() { qk = cu_vdt<T>::qk; }
};

// The type whose unit dot computes dst: Q8_0 weights of a node asking for F32 precision (the lm
// head) meet 16-bit activations, as on the CPU (ggml-cpu/matmul-float.h: 2D weight, F32
// activations and output, rows contiguous).
static int mmq_type(const struct ggml_tensor * src0, const struct ggml_tensor * src1, const struct ggml_tensor * dst) {
    const bool a16 = dst->op_params[0] == GGML_PREC_F32 && src0->type == GGML_TYPE_Q8_0 && src0->ne[2] == 1 && src0->ne[3] == 1 &&
        src1->ne[2] == 1 && src1->ne[3] == 1 && src1->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float);
    return a16 ? CU_TYPE_Q8_0_A16 : (int) src0->type;
}

bool cuda_mul_mat_q_supported(const struct ggml_tensor * src0, const struct ggml_tensor * src1) {
    mmq_probe p;
    if (!cu_dispatch_qtype(src0->type, p)) return false;
    const int64_t qk = p.qk;
    return src0->ne[0] % qk == 0 && src0->ne[0] % ggml_blck_size(src0->type) == 0 && src0->nb[0] == ggml_type_size(src0->type) &&
        src1->type == GGML_TYPE_F32 && (src1->ne[1] + MMQ_COLS - 1) / MMQ_COLS <= 65535 && src1->ne[2] * src1->ne[3] <= 65535;
}

bool cuda_mul_mat_q(cuda_backend_ctx * ctx, const struct ggml_tensor * src0, const struct ggml_tensor * src1,
                    struct ggml_tensor * dst) {
    mmq_launch l{ ctx, src0, src1, dst, false };
    if (!cu_dispatch_qtype(mmq_type(src0, src1, dst), l)) {
        GGML_LOG_ERROR("CUDA: quantized mul_mat of %s is not supported", ggml_type_name(src0->type));
        return false;
    }
    return l.ok;
}
