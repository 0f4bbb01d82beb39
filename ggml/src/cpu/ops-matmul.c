// ops-matmul.c — dst[M, N, B2, B3] = a[K, M, A2, A3] . b[K, N, B2, B3] over K, a broadcast over
// dims 2-3 (B2 % A2 == 0: batch i2 uses a's i2 / (B2/A2), as grouped-query attention needs).
//
// b's rows are fed to the dot kernel in its vec_dot_type (e.g. F32 -> Q8_0 for Q4_0 weights),
// in one of three ways:
//   direct  b already is vec_dot_type with unit stride: used in place;
//   private b is small (token generation: one row of K): every thread converts all of it into
//           its own slice of wdata, so no thread ever waits for another;
//   shared  b's rows are converted once, split across threads, then a barrier.
// The M x N x batch outputs are cut into tiles of bm a-rows x bn b-columns; inside a tile
// each block of a-rows is reused across the tile's columns while it is in cache. For N == 1
// tiles are runs of a-rows. After a shared conversion, which already paid for a barrier,
// threads take tiles from an atomic counter (cores that finish early take more); otherwise
// each thread takes a fixed contiguous range of tiles.
//
// wdata layout: [64 B: tile counter][converted b rows, each padded to 64 B, once or per
// thread][per-thread float row for gathering strided b rows].
#include "ops-util.h"

#include <stdatomic.h>

#define MM_HDR   64   // bytes reserved for the tile counter (one cache line)
#define MM_BM    64   // a-rows per tile when N > 1
#define MM_BN    16   // b-columns per tile
// Largest b (elements) that every thread converts for itself: converting it costs about as
// much as a barrier, which on a busy machine can cost far more.
#define MM_PRIVATE_MAX_ELEMENTS 8192

struct mm_plan {
    const struct ggml_type_traits_cpu * tc;
    enum ggml_type vdt;
    bool   direct;        // b used in place (no conversion)
    bool   priv;          // each thread converts all of b into its own slice
    bool   gather;        // b rows are strided: gather into a float row first
    size_t wrow;          // bytes per converted b row in wdata
    size_t conv_bytes;    // bytes of one copy of the converted b rows
    size_t gather_bytes;  // bytes of one thread's gather row
};

// Decides how b is fed to the dot kernel; false if a's type has no CPU dot product.
static bool mm_plan_make(const struct ggml_tensor * a, const struct ggml_tensor * b, struct mm_plan * p) {
    memset(p, 0, sizeof(*p));
    p->tc = ggml_get_type_traits_cpu(a->type);
    if (!p->tc || !p->tc->vec_dot) return false;
    p->vdt = p->tc->vec_dot_type;
    const int64_t K = a->ne[0];
    const int64_t rows = b->ne[1]*b->ne[2]*b->ne[3];
    p->direct = b->type == p->vdt && !ggml_is_quantized(b->type) && b->nb[0] == ggml_type_size(b->type);
    p->gather = b->type != GGML_TYPE_F32 || b->nb[0] != sizeof(float);
    if (!p->direct) {
        p->priv = rows*K <= MM_PRIVATE_MAX_ELEMENTS;
        p->wrow = GGML_PAD(ggml_row_size(p->vdt, K), 64);
        p->conv_bytes = p->wrow*(size_t) rows;
        p->gather_bytes = p->gather ? GGML_PAD((size_t) K*sizeof(float), 64) : 0;
    }
    return true;
}

static size_t mm_work_size(const struct mm_plan * p, int n_threads) {
    return MM_HDR + (p->priv ? (size_t) n_threads : 1)*p->conv_bytes + (size_t) n_threads*p->gather_bytes;
}

size_t ggml_cpu_work_size_mul_mat(const struct ggml_tensor * dst, int n_threads) {
    struct mm_plan p;
    if (!mm_plan_make(dst->src[0], dst->src[1], &p)) return 0;
    return mm_work_size(&p, n_threads);
}

static void mm_to_f16(const float * x, void * y, int64_t n)  { ggml_cpu_row_from_f32(x, y, GGML_TYPE_F16, n); }
static void mm_to_bf16(const float * x, void * y, int64_t n) { ggml_cpu_row_from_f32(x, y, GGML_TYPE_BF16, n); }

// float -> vec_dot_type row converter (NULL for F32, which is a plain copy).
static ggml_from_float_t mm_converter(enum ggml_type vdt) {
    if (vdt == GGML_TYPE_F32) return NULL;
    const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(vdt);
    if (tc && tc->from_float) return tc->from_float;
    if (vdt == GGML_TYPE_F16)  return mm_to_f16;
    if (vdt == GGML_TYPE_BF16) return mm_to_bf16;
    const struct ggml_type_traits * tt = ggml_get_type_traits(vdt);
    return tt ? tt->from_float_ref : NULL;
}

// Converts b rows [r0, r1) (flat index over N x B2 x B3) into out, one row every wrow bytes.
static void mm_convert_rows(const struct ggml_tensor * b, const struct mm_plan * p, ggml_from_float_t convert,
                            int64_t r0, int64_t r1, char * out, float * grow) {
    const int64_t K = b->ne[0];
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(b, r, &i1, &i2, &i3);
        const char * src = ggml_cpu_ptr(b, 0, i1, i2, i3);
        const float * row = (const float *) src;
        if (grow) {
            for (int64_t k = 0; k < K; k++) grow[k] = ggml_cpu_load_f(src + k*b->nb[0], b->type);
            row = grow;
        }
        char * o = out + (size_t) r*p->wrow;
        if (convert) convert(row, o, K); else memcpy(o, row, (size_t) K*sizeof(float));
    }
}

void ggml_compute_forward_mul_mat(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int ith = params->ith, nth = params->nth;

    struct mm_plan p;
    const bool planned = mm_plan_make(a, b, &p);
    const int64_t K = a->ne[0];
    const ggml_from_float_t convert = planned ? mm_converter(p.vdt) : NULL;
    if (!planned || (p.vdt != GGML_TYPE_F32 && !convert) || !ggml_cpu_is_float_type(b->type) ||
        dst->type != GGML_TYPE_F32 || b->ne[0] != K || a->nb[0] != ggml_type_size(a->type) ||
        K % ggml_blck_size(a->type) != 0 || K % ggml_blck_size(p.vdt) != 0 ||
        b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0 || params->wsize < mm_work_size(&p, nth)) {
        if (ith == 0) {
            GGML_LOG_ERROR("MUL_MAT: unsupported %s [%lld x %lld] x %s [%lld x %lld] (or scratch too small)\n",
                           ggml_type_name(a->type), (long long) a->ne[0], (long long) a->ne[1],
                           ggml_type_name(b->type), (long long) b->ne[0], (long long) b->ne[1]);
        }
        return;
    }

    const int64_t M = a->ne[1], N = b->ne[1], B2 = b->ne[2], B3 = b->ne[3];
    const int64_t r2 = B2/a->ne[2], r3 = B3/a->ne[3];
    char * wbase = (char *) params->wdata;
    atomic_int * counter = (atomic_int *) wbase;
    const size_t n_conv = p.priv ? (size_t) nth : 1;
    float * grow = p.gather ? (float *) (wbase + MM_HDR + n_conv*p.conv_bytes + (size_t) ith*p.gather_bytes) : NULL;
    const char * wconv = wbase + MM_HDR + (p.priv ? (size_t) ith*p.conv_bytes : 0);

    const bool dynamic = !p.direct && !p.priv && nth > 1;
    if (p.priv) {
        mm_convert_rows(b, &p, convert, 0, N*B2*B3, (char *) wconv, grow);
    } else if (!p.direct) {
        int64_t r0, r1;
        ggml_cpu_split(N*B2*B3, ith, nth, &r0, &r1);
        mm_convert_rows(b, &p, convert, r0, r1, (char *) wconv, grow);
    }

    // Tiling: N == 1 -> runs of rows; otherwise bm x bn tiles. Enough tiles for balance.
    const int64_t nbatch = B2*B3;
    const int64_t bn = N == 1 ? 1 : GGML_MIN(N, MM_BN);
    const int64_t tiles_n = (N + bn - 1)/bn;
    int64_t tiles_m = (M + MM_BM - 1)/MM_BM;
    const int64_t want = (dynamic ? 4 : 1)*(int64_t) nth;
    if (tiles_m*tiles_n*nbatch < want) {
        tiles_m = GGML_MIN(M, (want + tiles_n*nbatch - 1)/(tiles_n*nbatch));
    }
    const int64_t bm = (M + tiles_m - 1)/tiles_m;
    tiles_m = (M + bm - 1)/bm;
    const int64_t n_tiles = tiles_m*tiles_n*nbatch;

    int64_t t_end = n_tiles, t = ith;
    if (dynamic) {
        if (ith == 0) atomic_store_explicit(counter, nth, memory_order_relaxed);
        ggml_cpu_barrier(params); // converted b and the counter are ready
    } else {
        ggml_cpu_split(n_tiles, ith, nth, &t, &t_end);
    }

    const ggml_vec_dot_t vec_dot = p.tc->vec_dot;
    while (t < t_end) {
        const int64_t batch = t/(tiles_m*tiles_n);
        const int64_t rem   = t - batch*tiles_m*tiles_n;
        const int64_t tn    = rem/tiles_m;   // consecutive tiles share b columns
        const int64_t tm    = rem - tn*tiles_m;
        const int64_t i3 = batch/B2, i2 = batch - i3*B2;
        const int64_t m0 = tm*bm, m1 = GGML_MIN(M, m0 + bm);
        const int64_t n0 = tn*bn, n1 = GGML_MIN(N, n0 + bn);
        const char * abase = (const char *) a->data + (i2/r2)*a->nb[2] + (i3/r3)*a->nb[3];
        for (int64_t j = n0; j < n1; j++) {
            const char * bj = p.direct ? ggml_cpu_ptr(b, 0, j, i2, i3)
                                       : wconv + (size_t) (j + (i2 + i3*B2)*N)*p.wrow;
            char * out = ggml_cpu_ptr(dst, 0, j, i2, i3);
            for (int64_t i = m0; i < m1; i++) {
                vec_dot((int) K, (float *) (out + i*dst->nb[0]), abase + i*a->nb[1], bj);
            }
        }
        t = dynamic ? atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) : t + 1;
    }
}
