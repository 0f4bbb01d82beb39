// ops-matmul.c — dst[M, N, B2, B3] = a[K, M, A2, A3] . b[K, N, B2, B3] over K, a broadcast over
// dims 2-3 (B2 % A2 == 0: batch i2 uses a's i2 / (B2/A2), as grouped-query attention needs).
//
// Two paths, chosen per weight type for every N alike (a column's result must be bit for bit
// the same whatever batch it came in: a prompt decoded at once and token by token agree), and
// before them the float tiles of matmul-float.h: float weights, and Q8_0 weights of a node that
// asks for F32 precision (the lm head, ggml_mul_mat_set_prec), dequantized into those tiles.
//
// GEMM (quantized a whose type the selected kernel set accelerates; see gemm.h): b's columns
// are quantized once into groups of 8, split over threads, then a barrier (small b, as in token
// generation: every thread converts all of it, no barrier). Work items are blocks of a's rows
// (a few 16-row panels) of one batch, taken from an atomic counter (small b: fixed ranges); a
// thread unpacks its item's rows into panels in its own scratch (or finds them ready: weights
// repacked at load, repack.h), then runs the 16 x 8 micro-kernel over every column group,
// column chunk by column chunk so that the chunk and the panels stay in L2. One column (token
// generation) goes through the kernel set's gemv straight from the rows, or through the
// 1-column kernel on repacked panels with the column in a compact layout; both give the bits
// of the 1-column tile.
//
// vec_dot (everything else): b's rows are fed to the dot kernel in its
// vec_dot_type (e.g. F32 -> Q8_0 for Q4_0 weights), in one of three ways:
//   direct  b already is vec_dot_type with unit stride: used in place;
//   private b is small (token generation: one row of K): every thread converts all of it into
//           its own slice of wdata, so no thread ever waits for another;
//   shared  b's rows are converted once, split across threads, then a barrier.
// The M x N x batch outputs are cut into tiles of bm a-rows x bn b-columns; inside a tile
// each block of a-rows is reused across the tile's columns while it is in cache, and where the
// kernel set has a 4-column dot (vec_dot_x4: q2_K, q3_K) each a-row is decoded once for 4
// columns (the same bits as 4 vec_dot calls). For N == 1
// tiles are runs of a-rows. After a shared conversion, which already paid for a barrier,
// threads take tiles from an atomic counter (cores that finish early take more); otherwise
// each thread takes a fixed contiguous range of tiles.
//
// wdata layout (vec_dot): [64 B: tile counter][converted b rows, each padded to 64 B, once or per
// thread][per-thread float row for gathering strided b rows].
// wdata layout (GEMM): [64 B: item counter][activation groups of every batch, once or per
// thread][per thread: panels of one item, 8 quantized b rows, a float row for gathering, the
// gemv column, the compact column].
#include "ops-util.h"
#include "gemm.h"
#include "repack.h"
#include "matmul-float.h"
#include "../ggml-env.h"

#include <stdatomic.h>
#include <stdlib.h>

#define MM_HDR                  64   // bytes reserved for the tile counter (one cache line)
#define MM_BM                   64   // a-rows per tile when N > 1
#define MM_BN                   16   // b-columns per tile
#define MM_PREFETCH_ROWS        4 // rows ahead a one-column product asks for (about 2-7 KiB)
// Largest b (elements) that every thread converts for itself: converting it costs about as
// much as a barrier, which on a busy machine can cost far more.
#define MM_PRIVATE_MAX_ELEMENTS 8192

struct mm_plan {
    const struct ggml_type_traits_cpu * tc;
    enum ggml_type vdt;
    bool direct;        // b used in place (no conversion)
    bool priv;          // each thread converts all of b into its own slice
    bool gather;        // b rows are strided: gather into a float row first
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
    const int64_t rows = b->ne[1] * b->ne[2] * b->ne[3];
    p->direct = b->type == p->vdt && !ggml_is_quantized(b->type) && b->nb[0] == ggml_type_size(b->type);
    p->gather = b->type != GGML_TYPE_F32 || b->nb[0] != sizeof(float);
    if (!p->direct) {
        p->priv = rows * K <= MM_PRIVATE_MAX_ELEMENTS;
        p->wrow = GGML_PAD(ggml_row_size(p->vdt, K), 64);
        p->conv_bytes = p->wrow * (size_t) rows;
        p->gather_bytes = p->gather ? GGML_PAD((size_t) K * sizeof(float), 64) : 0;
    }
    return true;
}

static size_t mm_work_size(const struct mm_plan * p, int n_threads) {
    return MM_HDR + (p->priv ? (size_t) n_threads : 1) * p->conv_bytes + (size_t) n_threads * p->gather_bytes;
}

// ---- GEMM path ----

// Scratch budgets that keep one item's panels and one column chunk in L2 together.
#define MM_GEMM_PANEL_BUDGET (192 * 1024)
#define MM_GEMM_CHUNK_BUDGET (256 * 1024)
// Items per thread on repacked weights (no per-item packing to amortize): the last item taken
// leaves the other threads idle for about half an item, so smaller ones balance better (TinyLlama
// Q8_0 pp512 on 2 Zen 3 cores: threads waiting 5% of the matmul time at 4 items, 1.9% at 16,
// the same kernel time).
// Runs of panels per thread in a one-column product (token generation).
#define MM_GEMV_CHUNKS       8
#ifndef MM_GEMM_PACKED_ITEMS
#define MM_GEMM_PACKED_ITEMS 16
#endif

static atomic_int mm_gemm_mode = -1; // -1: not decided yet, 0: off, 1: on

void ggml_gemm_set_enabled(bool on) { atomic_store(&mm_gemm_mode, on ? 1 : 0); }

bool ggml_gemm_enabled(void) {
    int mode = atomic_load_explicit(&mm_gemm_mode, memory_order_relaxed);
    if (mode < 0) {
        mode = ggml_env()->cpu_gemm ? 1 : 0;
        atomic_store(&mm_gemm_mode, mode);
    }
    return mode == 1;
}

struct mm_gemm_plan {
    const struct ggml_gemm_traits * gt;
    ggml_from_float_t quantize;  // F32 row -> act_type row
    int64_t ngroups;             // column groups per batch
    int64_t panels_m;            // 16-row panels of a
    int64_t ppi;                 // panels per work item
    int64_t items_m;             // work items per batch
    int64_t gpc;                 // column groups per chunk
    size_t group_bytes, panel_bytes;
    size_t act_bytes;           // every group of every batch
    bool priv;                // b is small: every thread converts all of it (no barrier)
    bool gemv;                // one column: whole panels go through gt->gemv
    const uint8_t * packed;      // a's repacked panels (repack.h), or NULL: panels are made here
    size_t packed_panel_bytes;
    bool compact;             // one column on repacked weights: the compact column layout
    size_t compact_bytes;
    size_t qrow_bytes, frow_bytes, gv_bytes, thread_bytes;
};

// Decides whether mul_mat(a, b) runs as a GEMM on nth threads, and how; false: use vec_dot.
static bool mm_gemm_plan_make(const struct ggml_tensor * a, const struct ggml_tensor * b, const struct ggml_tensor * dst, int nth,
                              struct mm_gemm_plan * p) {
    memset(p, 0, sizeof(*p));
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    // repacked weights always take this path: their loader may have let the stored bytes go
    if (N < GGML_GEMM_MIN_N || (!ggml_gemm_enabled() && !ggml_cpu_repack_panels(a))) return false;
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(a->type);
    // (repacked weights always: their loader may have let the stored bytes go)
    if (!gt || !(gt->accelerated || ggml_cpu_repack_panels(a)) || !gt->kernel || !gt->pack || !gt->act_group) return false;
    const struct ggml_type_traits_cpu * atc = ggml_get_type_traits_cpu(gt->act_type);
    if (!atc || !atc->from_float) return false;
    if (K % (gt->qb * gt->sb) != 0 || K % ggml_blck_size(a->type) != 0 || a->nb[0] != ggml_type_size(a->type) || b->ne[0] != K ||
        !ggml_cpu_is_float_type(b->type) || dst->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float) ||
        dst->nb[1] % sizeof(float) != 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) {
        return false;
    }
    p->gt = gt;
    p->quantize = atc->from_float;
    p->ngroups = (N + GGML_GEMM_NR - 1) / GGML_GEMM_NR;
    p->group_bytes = ggml_gemm_group_bytes(gt, K);
    p->panel_bytes = ggml_gemm_panel_bytes(gt, K);
    p->panels_m = (M + GGML_GEMM_MR - 1) / GGML_GEMM_MR;
    const int64_t nbatch = b->ne[2] * b->ne[3];
    const int64_t pmax = GGML_MAX(1, (int64_t) (MM_GEMM_PANEL_BUDGET / p->panel_bytes));
    // Enough items that threads finishing early can take more (the machine may be shared).
    const int64_t want = nth > 1 ? 4 * (int64_t) nth : 1;
    p->ppi = GGML_MAX(1, GGML_MIN(pmax, p->panels_m * nbatch / want));
    p->items_m = (p->panels_m + p->ppi - 1) / p->ppi;
    p->gpc = GGML_MAX(1, (int64_t) (MM_GEMM_CHUNK_BUDGET / p->group_bytes));
    p->act_bytes = GGML_PAD(p->group_bytes * (size_t) (p->ngroups * nbatch), 64);
    p->packed = (const uint8_t *) ggml_cpu_repack_panels(a);
    if (p->packed) {
        p->packed_panel_bytes = ggml_cpu_repack_panel_bytes(a);
        p->panel_bytes = 0; // nothing to unpack
        p->ppi = GGML_MAX(1, p->panels_m * nbatch / (MM_GEMM_PACKED_ITEMS * (int64_t) nth));
        p->items_m = (p->panels_m + p->ppi - 1) / p->ppi;
    }
    p->compact = p->packed && N == 1 && nbatch == 1 && gt->kernel_repacked1;
    p->compact_bytes = p->compact ? GGML_PAD(ggml_gemm_compact_bytes(gt, K), 64) : 0;
    p->gemv = !p->packed && N == 1 && nbatch == 1 && gt->gemv && gt->gemv_prep && a->nb[1] <= (size_t) INT32_MAX / GGML_GEMM_MR;
    p->priv = nth == 1 || N * nbatch * K <= MM_PRIVATE_MAX_ELEMENTS || p->gemv || p->compact;
    p->gv_bytes = p->gemv ? GGML_PAD(ggml_gemm_gemv_bytes(K), 64) : 0;
    p->qrow_bytes = GGML_PAD(ggml_row_size(gt->act_type, K), 64);
    p->frow_bytes = (b->type != GGML_TYPE_F32 || b->nb[0] != sizeof(float)) ? GGML_PAD((size_t) K * sizeof(float), 64) : 0;
    p->thread_bytes = GGML_PAD(p->panel_bytes * (size_t) p->ppi, 64) + GGML_GEMM_NR * p->qrow_bytes + p->frow_bytes +
        p->gv_bytes + p->compact_bytes;
    return true;
}

static size_t mm_gemm_work_size(const struct mm_gemm_plan * p, int nth) {
    return MM_HDR + (p->priv ? (size_t) nth : 1) * p->act_bytes + (size_t) nth * p->thread_bytes;
}

static void mm_gemm_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst, const struct mm_gemm_plan * p) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const struct ggml_gemm_traits * gt = p->gt;
    const int ith = params->ith, nth = params->nth;
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1], B2 = b->ne[2], B3 = b->ne[3];
    const int64_t r2 = B2 / a->ne[2], r3 = B3 / a->ne[3];
    const int64_t nbatch = B2 * B3;

    char * wbase = (char *) params->wdata;
    atomic_int * counter = (atomic_int *) wbase;
    const size_t n_act = p->priv ? (size_t) nth : 1;
    char * act = wbase + MM_HDR + (p->priv ? (size_t) ith * p->act_bytes : 0);
    char * mine = wbase + MM_HDR + n_act * p->act_bytes + (size_t) ith * p->thread_bytes;
    char * panels = mine;
    char * qrow = mine + GGML_PAD(p->panel_bytes * (size_t) p->ppi, 64);
    float * frow = p->frow_bytes ? (float *) (qrow + GGML_GEMM_NR * p->qrow_bytes) : NULL;
    char * gv = qrow + GGML_GEMM_NR * p->qrow_bytes + p->frow_bytes;
    char * compact = gv + p->gv_bytes;

    // Phase 1: b's columns -> activation groups (group index = batch*ngroups + g), all of them
    // into this thread's copy, or this thread's share into the shared copy.
    int64_t g0 = 0, g1 = nbatch * p->ngroups;
    if (!p->priv) ggml_cpu_split(nbatch * p->ngroups, ith, nth, &g0, &g1);
    for (int64_t gi = g0; gi < g1; gi++) {
        const int64_t batch = gi / p->ngroups, g = gi - batch * p->ngroups;
        const int64_t i3 = batch / B2, i2 = batch - i3 * B2;
        char * group = act + (size_t) gi * p->group_bytes;
        const int nc = (int) GGML_MIN(GGML_GEMM_NR, N - g * GGML_GEMM_NR);
        if (nc < GGML_GEMM_NR && !p->compact) memset(group, 0, p->group_bytes);
        for (int c = 0; c < nc; c++) {
            const char * src = ggml_cpu_ptr(b, 0, g * GGML_GEMM_NR + c, i2, i3);
            const float * row = (const float *) src;
            if (frow) {
                if (b->nb[0] == ggml_type_size(b->type)) {
                    ggml_cpu_row_to_f32(src, b->type, frow, K);
                } else {
                    for (int64_t k = 0; k < K; k++) frow[k] = ggml_cpu_load_f(src + k * b->nb[0], b->type);
                }
                row = frow;
            }
            p->quantize(row, qrow + (size_t) c * p->qrow_bytes, K);
        }
        if (p->compact) {
            ggml_gemm_act_compact_row(gt, qrow, K, compact); // the one column, no group
        } else {
            gt->act_group(gt, qrow, p->qrow_bytes, nc, K, group);
        }
    }
    const int64_t n_items = p->items_m * nbatch;
    const bool dynamic = !p->priv && nth > 1;
    int64_t t = ith, t_end = n_items;
    if (dynamic) {
        if (ith == 0) atomic_store_explicit(counter, nth, memory_order_relaxed);
        ggml_cpu_barrier(params); // groups and counter ready
    } else {
        ggml_cpu_split(n_items, ith, nth, &t, &t_end);
    }

    // Phase 2: items (batch, block of ppi panels).
    const size_t a_row = a->nb[1];
    const int64_t ldc = (int64_t) (dst->nb[1] / sizeof(float));
    if (p->compact || p->gemv) {
        // One column: runs of contiguous panels (long enough for the prefetchers), claimed in
        // order, MM_GEMV_CHUNKS per thread. A static split ended the node with its slowest
        // thread: behind an HTTP server a partner preempted for a few ms stalled the other.
        const int64_t chunk = GGML_MAX(1, p->panels_m / (MM_GEMV_CHUNKS * (int64_t) nth));
        const int64_t n_chunks = (p->panels_m + chunk - 1) / chunk;
        if (nth > 1) {
            if (ith == 0) atomic_store_explicit(counter, nth, memory_order_relaxed);
            ggml_cpu_barrier(params); // counter ready
        }
        if (p->gemv) gt->gemv_prep(gt, qrow, act, K, gv);
        float * out = (float *) dst->data;
        for (int64_t c = ith; c < n_chunks; c = nth > 1 ? atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) : c + 1) {
            const int64_t pm_end = GGML_MIN(p->panels_m, (c + 1) * chunk);
            for (int64_t pm = c * chunk; pm < pm_end; pm++) {
                const int64_t m0 = pm * GGML_GEMM_MR;
                if (p->compact) {
                    // on repacked weights: every thread holds the column compactly
                    gt->kernel_repacked1(gt, K, p->packed + (size_t) pm * p->packed_panel_bytes, compact, out + m0, ldc,
                                         GGML_GEMM_MR, 1);
                    continue;
                }
                // whole panels straight from the rows, the last partial one through a panel
                const int nr = (int) GGML_MIN(GGML_GEMM_MR, M - m0);
                const char * rows = (const char *) a->data + m0 * a_row;
                if (nr == GGML_GEMM_MR) {
                    gt->gemv(gt, rows, a_row, K, gv, out + m0);
                } else {
                    gt->pack(gt, rows, a_row, nr, K, panels);
                    gt->kernel(gt, K, panels, act, out + m0, ldc, nr, 1);
                }
            }
        }
        return;
    }
    while (t < t_end) {
        const int64_t batch = t / p->items_m, im = t - batch * p->items_m;
        const int64_t i3 = batch / B2, i2 = batch - i3 * B2;
        const int64_t pm0 = im * p->ppi, pm1 = GGML_MIN(p->panels_m, pm0 + p->ppi);
        const char * abase = (const char *) a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3];
        for (int64_t pm = pm0; pm < pm1 && !p->packed; pm++) {
            const int64_t m0 = pm * GGML_GEMM_MR;
            gt->pack(gt, abase + m0 * a_row, a_row, (int) GGML_MIN(GGML_GEMM_MR, M - m0), K,
                     panels + (size_t) (pm - pm0) * p->panel_bytes);
        }
        const ggml_gemm_kernel_t kernel = p->packed ? gt->kernel_repacked : gt->kernel;
        const char * gbase = act + (size_t) (batch * p->ngroups) * p->group_bytes;
        float * obase = (float *) ggml_cpu_ptr(dst, 0, 0, i2, i3);
        for (int64_t c0 = 0; c0 < p->ngroups; c0 += p->gpc) {
            const int64_t c1 = GGML_MIN(p->ngroups, c0 + p->gpc);
            for (int64_t pm = pm0; pm < pm1; pm++) {
                const int64_t m0 = pm * GGML_GEMM_MR;
                const int nr = (int) GGML_MIN(GGML_GEMM_MR, M - m0);
                const char * panel = p->packed ? (const char *) p->packed + (size_t) pm * p->packed_panel_bytes
                                               : panels + (size_t) (pm - pm0) * p->panel_bytes;
                for (int64_t g = c0; g < c1; g++) {
                    const int nc = (int) GGML_MIN(GGML_GEMM_NR, N - g * GGML_GEMM_NR);
                    kernel(gt, K, panel, gbase + (size_t) g * p->group_bytes, obase + g * GGML_GEMM_NR * ldc + m0, ldc, nr, nc);
                }
            }
        }
        t = dynamic ? atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) : t + 1;
    }
}

// ---- both ----

size_t ggml_cpu_work_size_mul_mat(const struct ggml_tensor * dst, int n_threads) {
    if (ggml_cpu_mm_deq_applies(dst)) return ggml_cpu_mm_deq_work_size(dst, n_threads);
    if (ggml_cpu_mm_float_applies(dst)) return 0; // float weights: dot tiles, no scratch
    struct mm_gemm_plan gp;
    if (mm_gemm_plan_make(dst->src[0], dst->src[1], dst, n_threads, &gp)) return mm_gemm_work_size(&gp, n_threads);
    struct mm_plan p;
    if (!mm_plan_make(dst->src[0], dst->src[1], &p)) return 0;
    return mm_work_size(&p, n_threads);
}

static void mm_to_f16(const float * x, void * y, int64_t n) { ggml_cpu_row_from_f32(x, y, GGML_TYPE_F16, n); }
static void mm_to_bf16(const float * x, void * y, int64_t n) { ggml_cpu_row_from_f32(x, y, GGML_TYPE_BF16, n); }

// float -> vec_dot_type row converter (NULL for F32, which is a plain copy); declared in cpu-impl.h.
ggml_from_float_t ggml_cpu_mm_converter(enum ggml_type vdt) {
    if (vdt == GGML_TYPE_F32) return NULL;
    const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(vdt);
    if (tc && tc->from_float) return tc->from_float;
    if (vdt == GGML_TYPE_F16) return mm_to_f16;
    if (vdt == GGML_TYPE_BF16) return mm_to_bf16;
    const struct ggml_type_traits * tt = ggml_get_type_traits(vdt);
    return tt ? tt->from_float_ref : NULL;
}

// Converts b rows [r0, r1) (flat index over N x B2 x B3) into out, one row every wrow bytes.
static void mm_convert_rows(const struct ggml_tensor * b, const struct mm_plan * p, ggml_from_float_t convert, int64_t r0,
                            int64_t r1, char * out, float * grow) {
    const int64_t K = b->ne[0];
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(b, r, &i1, &i2, &i3);
        const char * src = ggml_cpu_ptr(b, 0, i1, i2, i3);
        const float * row = (const float *) src;
        if (grow) {
            for (int64_t k = 0; k < K; k++) grow[k] = ggml_cpu_load_f(src + k * b->nb[0], b->type);
            row = grow;
        }
        char * o = out + (size_t) r * p->wrow;
        if (convert)
            convert(row, o, K);
        else
            memcpy(o, row, (size_t) K * sizeof(float));
    }
}

void ggml_compute_forward_mul_mat(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int ith = params->ith, nth = params->nth;

    if (ggml_cpu_mm_deq_applies(dst) && params->wsize >= ggml_cpu_mm_deq_work_size(dst, nth)) {
        ggml_cpu_mm_deq_compute(params, dst); // asked for F32 precision (matmul-float.h)
        return;
    }
    if (ggml_cpu_mm_float_applies(dst)) {
        ggml_cpu_mm_float_compute(params, dst);
        return;
    }
    struct mm_gemm_plan gp;
    if (mm_gemm_plan_make(a, b, dst, nth, &gp) && params->wsize >= mm_gemm_work_size(&gp, nth)) {
        mm_gemm_compute(params, dst, &gp);
        return;
    }

    if (ggml_cpu_repack_panels(a) != NULL) {
        // a repacked weight may have no stored rows of its own (model.c fuses Q, K, V)
        if (ith == 0) {
            GGML_LOG_ERROR("MUL_MAT: repacked weight '%s' with %s [%lld x %lld] cannot take the GEMM path\n", a->name,
                           ggml_type_name(b->type), (long long) b->ne[0], (long long) b->ne[1]);
        }
        ggml_cpu_kernel_failed(params);
        return;
    }
    struct mm_plan p;
    const bool planned = mm_plan_make(a, b, &p);
    const int64_t K = a->ne[0];
    const ggml_from_float_t convert = planned ? ggml_cpu_mm_converter(p.vdt) : NULL;
    if (!planned || (p.vdt != GGML_TYPE_F32 && !convert) || !ggml_cpu_is_float_type(b->type) || dst->type != GGML_TYPE_F32 ||
        b->ne[0] != K || a->nb[0] != ggml_type_size(a->type) || K % ggml_blck_size(a->type) != 0 ||
        K % ggml_blck_size(p.vdt) != 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0 ||
        params->wsize < mm_work_size(&p, nth)) {
        if (ith == 0) {
            GGML_LOG_ERROR("MUL_MAT: unsupported %s [%lld x %lld] x %s [%lld x %lld] (or scratch too small)\n",
                           ggml_type_name(a->type), (long long) a->ne[0], (long long) a->ne[1], ggml_type_name(b->type),
                           (long long) b->ne[0], (long long) b->ne[1]);
        }
        return;
    }

    const int64_t M = a->ne[1], N = b->ne[1], B2 = b->ne[2], B3 = b->ne[3];
    const int64_t r2 = B2 / a->ne[2], r3 = B3 / a->ne[3];
    char * wbase = (char *) params->wdata;
    atomic_int * counter = (atomic_int *) wbase;
    const size_t n_conv = p.priv ? (size_t) nth : 1;
    float * grow = p.gather ? (float *) (wbase + MM_HDR + n_conv * p.conv_bytes + (size_t) ith * p.gather_bytes) : NULL;
    const char * wconv = wbase + MM_HDR + (p.priv ? (size_t) ith * p.conv_bytes : 0);

    const bool dynamic = !p.direct && !p.priv && nth > 1;
    if (p.priv) {
        mm_convert_rows(b, &p, convert, 0, N * B2 * B3, (char *) wconv, grow);
    } else if (!p.direct) {
        int64_t r0, r1;
        ggml_cpu_split(N * B2 * B3, ith, nth, &r0, &r1);
        mm_convert_rows(b, &p, convert, r0, r1, (char *) wconv, grow);
    }

    // Tiling: N == 1 -> runs of rows; otherwise bm x bn tiles. Enough tiles for balance.
    const int64_t nbatch = B2 * B3;
    const int64_t bn = N == 1 ? 1 : GGML_MIN(N, MM_BN);
    const int64_t tiles_n = (N + bn - 1) / bn;
    int64_t tiles_m = (M + MM_BM - 1) / MM_BM;
    const int64_t want = (dynamic ? 4 : 1) * (int64_t) nth;
    if (tiles_m * tiles_n * nbatch < want) {
        tiles_m = GGML_MIN(M, (want + tiles_n * nbatch - 1) / (tiles_n * nbatch));
    }
    const int64_t bm = (M + tiles_m - 1) / tiles_m;
    tiles_m = (M + bm - 1) / bm;
    const int64_t n_tiles = tiles_m * tiles_n * nbatch;

    int64_t t_end = n_tiles, t = ith;
    if (dynamic) {
        if (ith == 0) atomic_store_explicit(counter, nth, memory_order_relaxed);
        ggml_cpu_barrier(params); // converted b and the counter are ready
    } else {
        ggml_cpu_split(n_tiles, ith, nth, &t, &t_end);
    }

    const ggml_vec_dot_t vec_dot = p.tc->vec_dot;
    const ggml_vec_dot_x4_t vec_dot_x4 = p.tc->vec_dot_x4;
    const size_t by = p.direct ? b->nb[1] : p.wrow; // bytes from one converted b row to the next
    while (t < t_end) {
        const int64_t batch = t / (tiles_m * tiles_n);
        const int64_t rem = t - batch * tiles_m * tiles_n;
        const int64_t tn = rem / tiles_m;   // consecutive tiles share b columns
        const int64_t tm = rem - tn * tiles_m;
        const int64_t i3 = batch / B2, i2 = batch - i3 * B2;
        const int64_t m0 = tm * bm, m1 = GGML_MIN(M, m0 + bm);
        const int64_t n0 = tn * bn, n1 = GGML_MIN(N, n0 + bn);
        const char * abase = (const char *) a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3];
        for (int64_t j = n0; j < n1;) {
            const char * bj = p.direct ? ggml_cpu_ptr(b, 0, j, i2, i3) : wconv + (size_t) (j + (i2 + i3 * B2) * N) * p.wrow;
            char * out = ggml_cpu_ptr(dst, 0, j, i2, i3);
            // four columns per weight-row decode where the kernel set has it (the same bits)
            const int nj = vec_dot_x4 && j + 4 <= n1 ? 4 : 1;
            for (int64_t i = m0; i < m1; i++) {
                if (bn == 1 && i + MM_PREFETCH_ROWS < m1) {
                    // one column (token generation) streams the rows from memory once: the row
                    // MM_PREFETCH_ROWS ahead is asked for now (the hardware prefetcher alone
                    // left q2_K / q3_K decoding at a third of their in-cache speed)
                    const char * ahead = abase + (i + MM_PREFETCH_ROWS) * a->nb[1];
                    for (size_t o = 0; o < a->nb[1]; o += 64) __builtin_prefetch(ahead + o, 0, 3);
                }
                if (nj == 4) {
                    vec_dot_x4((int) K, (float *) (out + i * dst->nb[0]), dst->nb[1], abase + i * a->nb[1], bj, by);
                } else {
                    vec_dot((int) K, (float *) (out + i * dst->nb[0]), abase + i * a->nb[1], bj);
                }
            }
            j += nj;
        }
        t = dynamic ? atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) : t + 1;
    }
}
