// copy.cu — dup / cont / cpy, get_rows, set_rows, and float -> F16 panels for the GEMM.
//
// Copies follow the CPU's definition: element number i of the destination (row-major over
// its sizes) is element number i of the source, whatever either's strides. Same-type copies
// of contiguous tensors are one cudaMemcpyAsync; F32 -> Q8_0 quantizes each destination block
// of 32 consecutive elements as quantize_row_q8_0_ref does (d = amax / 127, q = round(x / d),
// d stored as F16).
#include "common.cuh"
#include "quants.cuh"

static __global__ void k_cpy_f(cu_tensor s, cu_tensor d, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        int64_t a0, a1, a2, a3, b0, b1, b2, b3;
        cu_unflatten(s, i, a0, a1, a2, a3);
        cu_unflatten(d, i, b0, b1, b2, b3);
        cu_store_f(cu_ptr(d, b0, b1, b2, b3), d.type, cu_load_f(cu_ptr(s, a0, a1, a2, a3), s.type));
    }
}

// same type, no blocks: move ts bytes per element
static __global__ void k_cpy_bytes(cu_tensor s, cu_tensor d, int ts, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        int64_t a0, a1, a2, a3, b0, b1, b2, b3;
        cu_unflatten(s, i, a0, a1, a2, a3);
        cu_unflatten(d, i, b0, b1, b2, b3);
        const char * ps = cu_ptr(s, a0, a1, a2, a3);
        char * pd = cu_ptr(d, b0, b1, b2, b3);
        for (int c = 0; c < ts; c++) pd[c] = ps[c];
    }
}

// one thread per destination block (dst contiguous)
static __global__ void k_cpy_to_q8_0(cu_tensor s, block_q8_0 * d, int64_t n_blocks) {
    for (int64_t b = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; b < n_blocks; b += (int64_t) gridDim.x * blockDim.x) {
        float x[QK8_0];
        for (int j = 0; j < QK8_0; j++) {
            int64_t a0, a1, a2, a3;
            cu_unflatten(s, b * QK8_0 + j, a0, a1, a2, a3);
            x[j] = cu_load_f(cu_ptr(s, a0, a1, a2, a3), s.type);
        }
        cu_quantize_q8_0(x, d + b);
    }
}

static unsigned grid_of(int64_t n) {
    const int64_t b = (n + 255) / 256;
    return (unsigned) (b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

bool cuda_supports_cpy(const struct ggml_tensor * src, const struct ggml_tensor * dst) {
    if (ggml_nelements(src) != ggml_nelements(dst)) return false;
    if (src->type == dst->type) {
        if (ggml_is_contiguous(src) && ggml_is_contiguous(dst)) return true;
        return ggml_blck_size(src->type) == 1 && ggml_type_size(src->type) <= 8;
    }
    if (cu_is_float(src->type) && cu_is_float(dst->type)) return true;
    return cu_is_float(src->type) && dst->type == GGML_TYPE_Q8_0 && ggml_is_contiguous(dst) && dst->ne[0] % QK8_0 == 0;
}

bool cuda_op_cpy(cuda_backend_ctx * ctx, const struct ggml_tensor * src, struct ggml_tensor * dst) {
    const int64_t n = ggml_nelements(dst);
    if (src->type == dst->type && ggml_is_contiguous(src) && ggml_is_contiguous(dst)) {
        if (src->data == dst->data) return true;
        return CUDA_TRY(cudaMemcpyAsync(dst->data, src->data, ggml_nbytes(dst), cudaMemcpyDeviceToDevice, ctx->stream));
    }
    if (src->type == dst->type && ggml_blck_size(src->type) == 1) {
        k_cpy_bytes<<<grid_of(n), 256, 0, ctx->stream>>>(cu_desc(src), cu_desc(dst), (int) ggml_type_size(src->type), n);
        return true;
    }
    if (cu_is_float(src->type) && cu_is_float(dst->type)) {
        k_cpy_f<<<grid_of(n), 256, 0, ctx->stream>>>(cu_desc(src), cu_desc(dst), n);
        return true;
    }
    if (cu_is_float(src->type) && dst->type == GGML_TYPE_Q8_0 && ggml_is_contiguous(dst)) {
        const int64_t nb = n / QK8_0;
        k_cpy_to_q8_0<<<grid_of(nb), 128, 0, ctx->stream>>>(cu_desc(src), (block_q8_0 *) dst->data, nb);
        return true;
    }
    GGML_LOG_ERROR("CUDA: copy %s -> %s is not supported", ggml_type_name(src->type), ggml_type_name(dst->type));
    return false;
}

// ---- get_rows ----

static __device__ __forceinline__ int64_t cu_row_id(const cu_tensor & ids, int64_t r, bool i64) {
    int64_t j0, j1, j2, j3;
    cu_unflatten(ids, r, j0, j1, j2, j3);
    const char * p = cu_ptr(ids, j0, j1, j2, j3);
    return i64 ? *(const int64_t *) p : (int64_t) *(const int32_t *) p;
}

// grid.y: one row of dst per id; x: chunks of 8 elements (quantized and float types alike)
template <int T> static __global__ void k_get_rows_q(cu_tensor s, cu_tensor ids, cu_tensor d) {
    const int64_t r = blockIdx.y + (int64_t) gridDim.y * blockIdx.z;
    if (r >= cu_nelements(ids)) return;
    const int64_t i10 = r % ids.ne[0], i11 = (r / ids.ne[0]) % ids.ne[1], i12 = r / (ids.ne[0] * ids.ne[1]);
    const int64_t row = cu_row_id(ids, r, false);
    char * pd = cu_ptr(d, 0, i10, i11, i12);
    const int64_t n8 = s.ne[0] / 8;
    for (int64_t c = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; c < n8; c += (int64_t) gridDim.x * blockDim.x) {
        float v[8];
        if (row < 0 || row >= s.ne[1]) {
            for (int i = 0; i < 8; i++) v[i] = 0.0f;
        } else {
            cu_deq8<T>(cu_ptr(s, 0, row, i11 % s.ne[2], i12 % s.ne[3]), c, v);
        }
        for (int i = 0; i < 8; i++) cu_store_f(pd + (8 * c + i) * d.nb[0], d.type, v[i]);
    }
}

// float / I32 tables at any strides: one element per thread
static __global__ void k_get_rows_f(cu_tensor s, cu_tensor ids, cu_tensor d) {
    const int64_t r = blockIdx.y + (int64_t) gridDim.y * blockIdx.z;
    if (r >= cu_nelements(ids)) return;
    const int64_t i10 = r % ids.ne[0], i11 = (r / ids.ne[0]) % ids.ne[1], i12 = r / (ids.ne[0] * ids.ne[1]);
    const int64_t row = cu_row_id(ids, r, false);
    char * pd = cu_ptr(d, 0, i10, i11, i12);
    const bool in = row >= 0 && row < s.ne[1];
    for (int64_t j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; j < s.ne[0]; j += (int64_t) gridDim.x * blockDim.x) {
        const float v = in ? cu_load_f(cu_ptr(s, j, row, i11 % s.ne[2], i12 % s.ne[3]), s.type) : 0.0f;
        cu_store_f(pd + j * d.nb[0], d.type, v);
    }
}

struct get_rows_launch {
    dim3 g;
    cudaStream_t st;
    cu_tensor ds, di, dd;
    template <int T> void operator()() { k_get_rows_q<T><<<g, 128, 0, st>>>(ds, di, dd); }
};

static void rows_grid(int64_t n_rows, dim3 & g, int64_t per_row, int threads) {
    int64_t gx = (per_row + threads - 1) / threads;
    if (gx < 1) gx = 1;
    if (gx > 1024) gx = 1024;
    const int64_t gy = n_rows < 65535 ? n_rows : 65535;
    const int64_t gz = (n_rows + gy - 1) / gy;
    g = dim3((unsigned) gx, (unsigned) (gy < 1 ? 1 : gy), (unsigned) (gz < 1 ? 1 : gz));
}

bool cuda_op_get_rows(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * s = dst->src[0];
    const struct ggml_tensor * ids = dst->src[1];
    const int64_t n_rows = ggml_nelements(ids);
    dim3 g;
    if (cu_is_float(s->type) || s->type == GGML_TYPE_I32) {
        rows_grid(n_rows, g, s->ne[0], 256);
        k_get_rows_f<<<g, 256, 0, ctx->stream>>>(cu_desc(s), cu_desc(ids), cu_desc(dst));
        return true;
    }
    rows_grid(n_rows, g, s->ne[0] / 8, 128);
    const cu_tensor ds = cu_desc(s), di = cu_desc(ids), dd = cu_desc(dst);
    get_rows_launch launch{ g, ctx->stream, ds, di, dd };
    if (!cu_dispatch_type(s->type, launch)) {
        GGML_LOG_ERROR("CUDA: get_rows of %s is not supported", ggml_type_name(s->type));
        return false;
    }
    return true;
}

// ---- set_rows ----

static __global__ void k_set_rows_f(cu_tensor s, cu_tensor ids, bool i64, cu_tensor d) {
    const int64_t r = blockIdx.y + (int64_t) gridDim.y * blockIdx.z;   // source row
    if (r >= s.ne[1] * s.ne[2] * s.ne[3]) return;
    const int64_t i01 = r % s.ne[1], i02 = (r / s.ne[1]) % s.ne[2], i03 = r / (s.ne[1] * s.ne[2]);
    const char * pi = cu_ptr(ids, i01, i02 % ids.ne[1], i03 % ids.ne[2], 0);
    const int64_t row = i64 ? *(const int64_t *) pi : (int64_t) *(const int32_t *) pi;
    if (row < 0 || row >= d.ne[1]) return;
    const char * ps = cu_ptr(s, 0, i01, i02, i03);
    char * pd = cu_ptr(d, 0, row, i02, i03);
    for (int64_t j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; j < s.ne[0]; j += (int64_t) gridDim.x * blockDim.x) {
        cu_store_f(pd + j * d.nb[0], d.type, cu_load_f(ps + j * s.nb[0], s.type));
    }
}

static __global__ void k_set_rows_q8_0(cu_tensor s, cu_tensor ids, bool i64, cu_tensor d) {
    const int64_t r = blockIdx.y + (int64_t) gridDim.y * blockIdx.z;
    if (r >= s.ne[1] * s.ne[2] * s.ne[3]) return;
    const int64_t i01 = r % s.ne[1], i02 = (r / s.ne[1]) % s.ne[2], i03 = r / (s.ne[1] * s.ne[2]);
    const char * pi = cu_ptr(ids, i01, i02 % ids.ne[1], i03 % ids.ne[2], 0);
    const int64_t row = i64 ? *(const int64_t *) pi : (int64_t) *(const int32_t *) pi;
    if (row < 0 || row >= d.ne[1]) return;
    const char * ps = cu_ptr(s, 0, i01, i02, i03);
    block_q8_0 * pd = (block_q8_0 *) (d.data + row * d.nb[1] + i02 * d.nb[2] + i03 * d.nb[3]);
    const int64_t nblk = s.ne[0] / QK8_0;
    for (int64_t b = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; b < nblk; b += (int64_t) gridDim.x * blockDim.x) {
        float x[QK8_0];
        for (int j = 0; j < QK8_0; j++) x[j] = cu_load_f(ps + (b * QK8_0 + j) * s.nb[0], s.type);
        cu_quantize_q8_0(x, pd + b);
    }
}

bool cuda_op_set_rows(cuda_backend_ctx * ctx, struct ggml_tensor * dst) {
    const struct ggml_tensor * s = dst->src[0];
    const struct ggml_tensor * ids = dst->src[1];
    const bool i64 = ids->type == GGML_TYPE_I64;
    const int64_t n_rows = ggml_nrows(s);
    dim3 g;
    if (dst->type == GGML_TYPE_Q8_0) {
        rows_grid(n_rows, g, s->ne[0] / QK8_0, 64);
        k_set_rows_q8_0<<<g, 64, 0, ctx->stream>>>(cu_desc(s), cu_desc(ids), i64, cu_desc(dst));
        return true;
    }
    rows_grid(n_rows, g, s->ne[0], 256);
    k_set_rows_f<<<g, 256, 0, ctx->stream>>>(cu_desc(s), cu_desc(ids), i64, cu_desc(dst));
    return true;
}

// ---- F16 panels for the GEMM ----

// hi[r * ld + k] = f16(src[k, r...]) for k < ne0, 0 for ne0 <= k < ld; r runs over ne1*ne2*ne3
// rows; lo (if any) gets f16(src - hi), so that hi + lo carries about 22 bits of src.
static __global__ void k_to_f16(cu_tensor s, __half * hi, __half * lo, int64_t ld, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += (int64_t) gridDim.x * blockDim.x) {
        const int64_t k = i % ld, r = i / ld;
        float v = 0.0f;
        if (k < s.ne[0]) {
            const int64_t r1 = r % s.ne[1], r2 = (r / s.ne[1]) % s.ne[2], r3 = r / (s.ne[1] * s.ne[2]);
            v = cu_load_f(cu_ptr(s, k, r1, r2, r3), s.type);
        }
        const __half h = __float2half_rn(v);
        hi[i] = h;
        if (lo) lo[i] = __float2half_rn(v - __half2float(h));
    }
}

bool cuda_convert_to_f16(cuda_backend_ctx * ctx, const cu_tensor & src, __half * hi, __half * lo, int64_t ld) {
    const int64_t n = ld * src.ne[1] * src.ne[2] * src.ne[3];
    k_to_f16<<<grid_of(n), 256, 0, ctx->stream>>>(src, hi, lo, ld, n);
    return true;
}
