// ops-moe.c — mul_mat_id, the mixture-of-experts matmul: dst[:, j, t] = as[:, :, ids[j, t]] .
// b[:, j % n_b, t] (as: n_as experts [K, M] stacked in dim 2; ids: I32 [n_used, n_t]).
//
// The (j, t) pairs are first grouped per expert (a counting sort, in token order), so that an
// expert no token chose costs nothing and each chosen expert's rows are read once per tile
// of its pairs, whatever the number of tokens: for generation only the chosen experts' rows are
// read. Every output element is one vec_dot of an expert row and a converted b row (b's rows are
// converted to the weight type's vec_dot_type once, as mul_mat's vec_dot path does), so the
// result does not depend on the thread count, on how the pairs were grouped or on which other
// tokens came in the same batch.
//
// An id outside [0, n_as) fails the node before anything is read (logged by thread 0; every
// thread checks the ids itself, so all return without meeting at a barrier).
//
// wdata layout: [64 B: tile counter][converted b rows, each padded to 64 B, once or per thread]
// [per thread: the pair lists (offs[n_as + 1], tile prefix[n_as + 1], pairs[n_pairs]) and a
// float row for gathering strided b rows].
#include "ops-util.h"

#include <stdatomic.h>

#define MMID_HDR 64
#define MMID_BM  64  // expert rows per tile
#define MMID_BN  16  // pairs per tile
// Largest b (elements) every thread converts for itself (no barrier), as mul_mat does.
#define MMID_PRIVATE_MAX_ELEMENTS 8192

struct mmid_plan {
    const struct ggml_type_traits_cpu * tc;
    ggml_from_float_t convert;
    bool   direct;      // b rows used in place (F32 dot, unit stride)
    bool   priv;        // each thread converts all of b
    size_t wrow;        // bytes per converted b row
    size_t conv_bytes;  // one copy of the converted rows
    size_t list_bytes;  // one thread's pair lists
    size_t frow_bytes;  // one thread's gather row
};

// Decides how b reaches the dot kernel; false if the experts' type has no CPU dot product.
static bool mmid_plan_make(const struct ggml_tensor * dst, struct mmid_plan * p) {
    const struct ggml_tensor * as = dst->src[0], * b = dst->src[1], * ids = dst->src[2];
    memset(p, 0, sizeof(*p));
    p->tc = ggml_get_type_traits_cpu(as->type);
    if (!p->tc || !p->tc->vec_dot) return false;
    const enum ggml_type vdt = p->tc->vec_dot_type;
    p->convert = ggml_cpu_mm_converter(vdt);
    if (vdt != GGML_TYPE_F32 && !p->convert) return false;
    const int64_t K = as->ne[0], n_brows = b->ne[1]*b->ne[2];
    if (K % ggml_blck_size(as->type) != 0 || K % ggml_blck_size(vdt) != 0) return false;
    p->direct = vdt == GGML_TYPE_F32 && b->nb[0] == sizeof(float);
    if (!p->direct) {
        p->priv = n_brows*K <= MMID_PRIVATE_MAX_ELEMENTS;
        p->wrow = GGML_PAD(ggml_row_size(vdt, K), 64);
        p->conv_bytes = p->wrow*(size_t) n_brows;
        p->frow_bytes = b->nb[0] != sizeof(float) ? GGML_PAD((size_t) K*sizeof(float), 64) : 0;
    }
    const int64_t n_as = as->ne[2], n_pairs = ids->ne[0]*ids->ne[1];
    p->list_bytes = GGML_PAD((size_t) (2*(n_as + 1) + n_pairs)*sizeof(int32_t), 64);
    return true;
}

size_t ggml_cpu_work_size_mul_mat_id(const struct ggml_tensor * dst, int n_threads) {
    struct mmid_plan p;
    if (!mmid_plan_make(dst, &p)) return 0;
    return MMID_HDR + (p.priv ? (size_t) n_threads : 1)*p.conv_bytes + (size_t) n_threads*(p.list_bytes + p.frow_bytes);
}

// Id j of token t.
static inline int32_t mmid_id(const struct ggml_tensor * ids, int64_t j, int64_t t) {
    return *(const int32_t *) ((const char *) ids->data + j*ids->nb[0] + t*ids->nb[1]);
}

// Groups the pairs (flat index j + t*n_used) per expert, in token order: pairs[offs[e] ..
// offs[e + 1]) chose expert e.
static void mmid_group(const struct ggml_tensor * ids, int64_t n_as, int32_t * offs, int32_t * pairs) {
    const int64_t n_used = ids->ne[0], n_t = ids->ne[1];
    memset(offs, 0, (size_t) (n_as + 1)*sizeof(int32_t));
    for (int64_t t = 0; t < n_t; t++) {
        for (int64_t j = 0; j < n_used; j++) offs[mmid_id(ids, j, t) + 1]++;
    }
    for (int64_t e = 0; e < n_as; e++) offs[e + 1] += offs[e];
    for (int64_t t = 0; t < n_t; t++) {
        for (int64_t j = 0; j < n_used; j++) {
            const int32_t e = mmid_id(ids, j, t);
            // offs[e] is moved forward while filling and moved back below
            pairs[offs[e]++] = (int32_t) (j + t*n_used);
        }
    }
    for (int64_t e = n_as; e > 0; e--) offs[e] = offs[e - 1];
    offs[0] = 0;
}

// Converts b rows [r0, r1) (flat over n_b x n_t) to the dot's type, one row every wrow bytes.
static void mmid_convert_rows(const struct ggml_tensor * b, const struct mmid_plan * p, int64_t r0, int64_t r1,
                              char * out, float * frow) {
    const int64_t K = b->ne[0], n_b = b->ne[1];
    for (int64_t r = r0; r < r1; r++) {
        const char * src = ggml_cpu_ptr(b, 0, r % n_b, r / n_b, 0);
        const float * row = (const float *) src;
        if (frow) {
            for (int64_t k = 0; k < K; k++) frow[k] = *(const float *) (src + k*b->nb[0]);
            row = frow;
        }
        char * o = out + (size_t) r*p->wrow;
        if (p->convert) p->convert(row, o, K); else memcpy(o, row, (size_t) K*sizeof(float));
    }
}

// True if every id is in [0, n_as); else thread 0 logs the first bad one.
static bool mmid_ids_valid(const struct ggml_compute_params * params, const struct ggml_tensor * ids, int64_t n_as) {
    for (int64_t t = 0; t < ids->ne[1]; t++) {
        for (int64_t j = 0; j < ids->ne[0]; j++) {
            const int32_t e = mmid_id(ids, j, t);
            if (e < 0 || e >= n_as) {
                if (params->ith == 0) {
                    GGML_LOG_ERROR("MUL_MAT_ID: ids[%lld, %lld] = %d is outside the experts [0, %lld) of '%s'\n",
                                   (long long) j, (long long) t, (int) e, (long long) n_as, ids->name);
                }
                return false;
            }
        }
    }
    return true;
}

void ggml_compute_forward_mul_mat_id(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * as = dst->src[0], * b = dst->src[1], * ids = dst->src[2];
    const int ith = params->ith, nth = params->nth;
    struct mmid_plan p;
    const bool planned = mmid_plan_make(dst, &p);
    if (!planned || b->type != GGML_TYPE_F32 || ids->type != GGML_TYPE_I32 || dst->type != GGML_TYPE_F32 ||
        params->wsize < ggml_cpu_work_size_mul_mat_id(dst, nth)) {
        if (ith == 0) {
            GGML_LOG_ERROR("MUL_MAT_ID: unsupported experts %s [%lld x %lld x %lld] (or scratch too small)\n",
                           ggml_type_name(as->type), (long long) as->ne[0], (long long) as->ne[1], (long long) as->ne[2]);
        }
        ggml_cpu_kernel_failed(params);
        return;
    }
    const int64_t n_as = as->ne[2];
    if (!mmid_ids_valid(params, ids, n_as)) {
        ggml_cpu_kernel_failed(params);
        return;
    }
    const int64_t K = as->ne[0], M = as->ne[1], n_b = b->ne[1], n_used = ids->ne[0];
    const int64_t n_brows = n_b*b->ne[2];

    char * wbase = (char *) params->wdata;
    atomic_int * counter = (atomic_int *) wbase;
    const size_t n_conv = p.priv ? (size_t) nth : 1;
    char * conv = wbase + MMID_HDR + (p.priv ? (size_t) ith*p.conv_bytes : 0);
    char * mine = wbase + MMID_HDR + n_conv*p.conv_bytes + (size_t) ith*(p.list_bytes + p.frow_bytes);
    int32_t * offs = (int32_t *) mine;
    int32_t * tpre = offs + (n_as + 1);
    int32_t * pairs = tpre + (n_as + 1);
    float * frow = p.frow_bytes ? (float *) (mine + p.list_bytes) : NULL;

    // every thread groups the pairs itself (a few thousand ints at most): no barrier for it
    mmid_group(ids, n_as, offs, pairs);

    const bool dynamic = !p.direct && !p.priv && nth > 1;
    if (p.priv) {
        mmid_convert_rows(b, &p, 0, n_brows, conv, frow);
    } else if (!p.direct) {
        int64_t r0, r1;
        ggml_cpu_split(n_brows, ith, nth, &r0, &r1);
        mmid_convert_rows(b, &p, r0, r1, conv, frow);
    }

    // Tiles: per chosen expert, bm rows x up to MMID_BN of its pairs; enough of them for balance.
    int64_t col_tiles = 0;
    for (int64_t e = 0; e < n_as; e++) col_tiles += (offs[e + 1] - offs[e] + MMID_BN - 1)/MMID_BN;
    const int64_t want = (dynamic ? 4 : 1)*(int64_t) nth;
    int64_t tiles_m = (M + MMID_BM - 1)/MMID_BM;
    if (col_tiles > 0 && tiles_m*col_tiles < want) tiles_m = GGML_MIN(M, (want + col_tiles - 1)/col_tiles);
    const int64_t bm = (M + tiles_m - 1)/tiles_m;
    tiles_m = (M + bm - 1)/bm;
    tpre[0] = 0;
    for (int64_t e = 0; e < n_as; e++) {
        tpre[e + 1] = tpre[e] + (int32_t) (tiles_m*((offs[e + 1] - offs[e] + MMID_BN - 1)/MMID_BN));
    }
    const int64_t n_tiles = tpre[n_as];

    int64_t t = ith, t_end = n_tiles;
    if (dynamic) {
        if (ith == 0) atomic_store_explicit(counter, nth, memory_order_relaxed);
        ggml_cpu_barrier(params); // converted b and the counter are ready
    } else {
        ggml_cpu_split(n_tiles, ith, nth, &t, &t_end);
    }
    const ggml_vec_dot_t vec_dot = p.tc->vec_dot;
    int64_t e = 0;
    while (t < t_end) {
        if (t < tpre[e]) e = 0; // dynamic tiles only move forward, static ones too: rarely taken
        while (tpre[e + 1] <= t) e++;
        const int64_t rem = t - tpre[e];
        const int64_t tn = rem/tiles_m, tm = rem - tn*tiles_m;
        const int64_t m0 = tm*bm, m1 = GGML_MIN(M, m0 + bm);
        const int32_t * pe = pairs + offs[e] + tn*MMID_BN;
        const int64_t np = GGML_MIN(MMID_BN, offs[e + 1] - offs[e] - tn*MMID_BN);
        const char * abase = (const char *) as->data + e*as->nb[2];
        for (int64_t q = 0; q < np; q++) {
            const int64_t j = pe[q] % n_used, tok = pe[q] / n_used;
            const int64_t br = j % n_b + tok*n_b;
            const char * bj = p.direct ? ggml_cpu_ptr(b, 0, j % n_b, tok, 0) : conv + (size_t) br*p.wrow;
            char * out = ggml_cpu_ptr(dst, 0, j, tok, 0);
            for (int64_t i = m0; i < m1; i++) {
                vec_dot((int) K, (float *) (out + i*dst->nb[0]), abase + i*as->nb[1], bj);
            }
        }
        t = dynamic ? atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) : t + 1;
    }
}
