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
// Weight types mul_mat runs through the int8 GEMM tiles (gemm.h) take the same tiles here, for
// every number of tokens alike: b's rows are quantized once, each chosen expert's pairs are laid
// out as activation groups of 8 columns, and each work item (an expert, a run of its 16-row
// panels) runs the 16 x 8 micro-kernel over that expert's groups; an expert with one pair (token
// generation) goes through the one-column kernels on the compact column (repacked experts) or
// gemv straight from the rows, which give the bits of the 1-column tile. The experts' rows may be
// repacked at load (repack.h: one copy of all n_as * M rows). Other types: one vec_dot per output
// element, b converted to the dot's type; F16 / BF16 experts: the row widened to F32 and an F32
// dot with b as it is (unrounded activations, as mul_mat's float tiles). Either way an output
// does not depend on the batch.
//
// An id outside [0, n_as) fails the node before anything is read (logged by thread 0; every
// thread checks the ids itself, so all return without meeting at a barrier).
//
// wdata layout (vec_dot): [64 B: tile counter][converted b rows, each padded to 64 B, once or per
// thread][per thread: the pair lists (offs[n_as + 1], tile prefix[n_as + 1], pairs[n_pairs]) and
// a float row for gathering strided b rows].
// wdata layout (GEMM): [64 B: item counter][b rows quantized, then the activation groups, once or
// per thread][per thread: lists (offs, group prefix, active experts, pairs), one panel, a 16 x 8
// tile, a float row, the gemv column, the compact column, 8 quantized rows side by side].
#include "ops-util.h"
#include "gemm.h"
#include "repack.h"

#include <stdatomic.h>

#define MMID_HDR                  64
#define MMID_BM                   64  // expert rows per tile
#define MMID_BN                   16  // pairs per tile
// Largest b (elements) every thread converts for itself (no barrier), as mul_mat does.
#define MMID_PRIVATE_MAX_ELEMENTS 8192

struct mmid_plan {
    const struct ggml_type_traits_cpu * tc;
    ggml_from_float_t convert;
    bool direct;      // b rows used in place (F32 dot, unit stride)
    bool priv;        // each thread converts all of b
    size_t wrow;        // bytes per converted b row
    size_t conv_bytes;  // one copy of the converted rows
    size_t list_bytes;  // one thread's pair lists
    size_t frow_bytes;  // one thread's gather row
    bool float_rows;  // F16 / BF16 experts: each row widened to F32 once per tile, F32 dots
    size_t arow_bytes;  // one thread's widened expert row
};

// Decides how b reaches the dot kernel; false if the experts' type has no CPU dot product.
static bool mmid_plan_make(const struct ggml_tensor * dst, struct mmid_plan * p) {
    const struct ggml_tensor *as = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    memset(p, 0, sizeof(*p));
    p->tc = ggml_get_type_traits_cpu(as->type);
    if (!p->tc || !p->tc->vec_dot) return false;
    // F16 / BF16 experts meet unrounded activations, as mul_mat's float tiles give dense ones
    p->float_rows = as->type == GGML_TYPE_F16 || as->type == GGML_TYPE_BF16;
    const enum ggml_type vdt = p->float_rows ? GGML_TYPE_F32 : p->tc->vec_dot_type;
    p->convert = ggml_cpu_mm_converter(vdt);
    if (vdt != GGML_TYPE_F32 && !p->convert) return false;
    const int64_t K = as->ne[0], n_brows = b->ne[1] * b->ne[2];
    if (K % ggml_blck_size(as->type) != 0 || K % ggml_blck_size(vdt) != 0) return false;
    p->direct = vdt == GGML_TYPE_F32 && b->nb[0] == sizeof(float);
    if (!p->direct) {
        p->priv = n_brows * K <= MMID_PRIVATE_MAX_ELEMENTS;
        p->wrow = GGML_PAD(ggml_row_size(vdt, K), 64);
        p->conv_bytes = p->wrow * (size_t) n_brows;
        p->frow_bytes = b->nb[0] != sizeof(float) ? GGML_PAD((size_t) K * sizeof(float), 64) : 0;
    }
    const int64_t n_as = as->ne[2], n_pairs = ids->ne[0] * ids->ne[1];
    p->list_bytes = GGML_PAD((size_t) (2 * (n_as + 1) + n_pairs) * sizeof(int32_t), 64);
    p->arow_bytes = p->float_rows ? GGML_PAD((size_t) K * sizeof(float), 64) : 0;
    return true;
}

// Id j of token t.
static inline int32_t mmid_id(const struct ggml_tensor * ids, int64_t j, int64_t t) {
    return *(const int32_t *) ((const char *) ids->data + j * ids->nb[0] + t * ids->nb[1]);
}

// Groups the pairs (flat index j + t*n_used) per expert, in token order: pairs[offs[e] ..
// offs[e + 1]) chose expert e.
static void mmid_group(const struct ggml_tensor * ids, int64_t n_as, int32_t * offs, int32_t * pairs) {
    const int64_t n_used = ids->ne[0], n_t = ids->ne[1];
    memset(offs, 0, (size_t) (n_as + 1) * sizeof(int32_t));
    for (int64_t t = 0; t < n_t; t++) {
        for (int64_t j = 0; j < n_used; j++) offs[mmid_id(ids, j, t) + 1]++;
    }
    for (int64_t e = 0; e < n_as; e++) offs[e + 1] += offs[e];
    for (int64_t t = 0; t < n_t; t++) {
        for (int64_t j = 0; j < n_used; j++) {
            const int32_t e = mmid_id(ids, j, t);
            // offs[e] is moved forward while filling and moved back below
            pairs[offs[e]++] = (int32_t) (j + t * n_used);
        }
    }
    for (int64_t e = n_as; e > 0; e--) offs[e] = offs[e - 1];
    offs[0] = 0;
}

// Converts b rows [r0, r1) (flat over n_b x n_t) to the dot's type, one row every wrow bytes.
static void mmid_convert_rows(const struct ggml_tensor * b, const struct mmid_plan * p, int64_t r0, int64_t r1, char * out,
                              float * frow) {
    const int64_t K = b->ne[0], n_b = b->ne[1];
    for (int64_t r = r0; r < r1; r++) {
        const char * src = ggml_cpu_ptr(b, 0, r % n_b, r / n_b, 0);
        const float * row = (const float *) src;
        if (frow) {
            for (int64_t k = 0; k < K; k++) frow[k] = *(const float *) (src + k * b->nb[0]);
            row = frow;
        }
        char * o = out + (size_t) r * p->wrow;
        if (p->convert)
            p->convert(row, o, K);
        else
            memcpy(o, row, (size_t) K * sizeof(float));
    }
}

// True if every id is in [0, n_as); else thread 0 logs the first bad one.
static bool mmid_ids_valid(const struct ggml_compute_params * params, const struct ggml_tensor * ids, int64_t n_as) {
    for (int64_t t = 0; t < ids->ne[1]; t++) {
        for (int64_t j = 0; j < ids->ne[0]; j++) {
            const int32_t e = mmid_id(ids, j, t);
            if (e < 0 || e >= n_as) {
                if (params->ith == 0) {
                    GGML_LOG_ERROR("MUL_MAT_ID: ids[%lld, %lld] = %d is outside the experts [0, %lld) of '%s'\n", (long long) j,
                                   (long long) t, (int) e, (long long) n_as, ids->name);
                }
                return false;
            }
        }
    }
    return true;
}

// ---- GEMM path ----

#define MMID_GEMM_PACKED_ITEMS 16 // items per thread on repacked experts (balance, as mul_mat)

struct mmid_gemm_plan {
    const struct ggml_gemm_traits * gt;
    ggml_from_float_t quantize;  // F32 row -> act_type row
    const uint8_t * packed;      // repacked panels of all experts' rows, or NULL
    size_t packed_panel_bytes;
    int64_t panels_m;            // 16-row panels per expert
    size_t qrow_bytes, group_bytes, panel_bytes;
    int64_t max_groups;          // groups of 8 pairs: at most n_pairs / 8 plus one partial per expert
    bool priv;                   // b is small: every thread quantizes all of it (no barrier)
    bool gemv, compact;          // one-column experts: gemv from the rows / compact column on panels
    size_t qrows_bytes, act_bytes, list_bytes, frow_bytes, gv_bytes, compact_bytes, thread_bytes;
};

// Decides whether mul_mat_id runs on the GEMM tiles, and how; false: vec_dot. The choice depends
// on the weight type and the kernel set alone (never on the number of tokens).
static bool mmid_gemm_plan_make(const struct ggml_tensor * dst, int nth, struct mmid_gemm_plan * p) {
    const struct ggml_tensor *as = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    memset(p, 0, sizeof(*p));
    p->packed = (const uint8_t *) ggml_cpu_repack_panels(as);
    if (!ggml_gemm_enabled() && !p->packed) return false;
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(as->type);
    if (!gt || !(gt->accelerated || p->packed) || !gt->kernel || !gt->pack || !gt->act_group) return false;
    const struct ggml_type_traits_cpu * atc = ggml_get_type_traits_cpu(gt->act_type);
    const int64_t K = as->ne[0], M = as->ne[1], n_as = as->ne[2];
    if (!atc || !atc->from_float || K % (gt->qb * gt->sb) != 0 || K % ggml_blck_size(as->type) != 0 ||
        as->nb[0] != ggml_type_size(as->type) || dst->nb[0] != sizeof(float)) {
        return false;
    }
    if (p->packed && (!gt->kernel_repacked || !gt->kernel_repacked1)) return false;
    const int64_t n_pairs = ids->ne[0] * ids->ne[1], n_brows = b->ne[1] * b->ne[2];
    p->gt = gt;
    p->quantize = atc->from_float;
    p->panels_m = (M + GGML_GEMM_MR - 1) / GGML_GEMM_MR;
    p->packed_panel_bytes = p->packed ? ggml_cpu_repack_panel_bytes(as) : 0;
    p->qrow_bytes = GGML_PAD(ggml_row_size(gt->act_type, K), 64);
    p->group_bytes = ggml_gemm_group_bytes(gt, K);
    p->panel_bytes = p->packed ? 0 : GGML_PAD(ggml_gemm_panel_bytes(gt, K), 64);
    p->max_groups = n_pairs / GGML_GEMM_NR + GGML_MIN(n_as, n_pairs);
    p->priv = nth == 1 || n_brows * K <= MMID_PRIVATE_MAX_ELEMENTS;
    p->compact = p->packed != NULL;
    p->gemv = !p->packed && gt->gemv && gt->gemv_prep && as->nb[1] <= (size_t) INT32_MAX / GGML_GEMM_MR;
    p->qrows_bytes = GGML_PAD(p->qrow_bytes * (size_t) n_brows, 64);
    p->act_bytes = p->qrows_bytes + GGML_PAD(p->group_bytes * (size_t) p->max_groups, 64);
    p->list_bytes = GGML_PAD((size_t) (3 * n_as + 2 + n_pairs) * sizeof(int32_t), 64);
    p->frow_bytes = b->nb[0] != sizeof(float) ? GGML_PAD((size_t) K * sizeof(float), 64) : 0;
    p->gv_bytes = p->gemv ? GGML_PAD(ggml_gemm_gemv_bytes(K), 64) : 0;
    p->compact_bytes = p->compact ? GGML_PAD(ggml_gemm_compact_bytes(gt, K), 64) : 0;
    p->thread_bytes = p->list_bytes + p->panel_bytes + GGML_GEMM_MR * GGML_GEMM_NR * sizeof(float) + p->frow_bytes + p->gv_bytes +
        p->compact_bytes + GGML_GEMM_NR * p->qrow_bytes;
    return true;
}

static size_t mmid_gemm_work_size(const struct mmid_gemm_plan * p, int nth) {
    return MMID_HDR + (p->priv ? (size_t) nth : 1) * p->act_bytes + (size_t) nth * p->thread_bytes;
}

static void mmid_gemm_compute(const struct ggml_compute_params * params, struct ggml_tensor * dst,
                              const struct mmid_gemm_plan * p) {
    const struct ggml_tensor *as = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    const struct ggml_gemm_traits * gt = p->gt;
    const int ith = params->ith, nth = params->nth;
    const int64_t K = as->ne[0], M = as->ne[1], n_as = as->ne[2], n_b = b->ne[1], n_used = ids->ne[0];
    const int64_t n_brows = n_b * b->ne[2];

    char * wbase = (char *) params->wdata;
    atomic_int * counter = (atomic_int *) wbase;
    const size_t n_act = p->priv ? (size_t) nth : 1;
    char * qrows = wbase + MMID_HDR + (p->priv ? (size_t) ith * p->act_bytes : 0);
    char * groups = qrows + p->qrows_bytes;
    char * mine = wbase + MMID_HDR + n_act * p->act_bytes + (size_t) ith * p->thread_bytes;
    int32_t * offs = (int32_t *) mine;       // n_as + 1
    int32_t * gpre = offs + (n_as + 1);      // n_as + 1: first group of each expert
    int32_t * active = gpre + (n_as + 1);    // n_as: the chosen experts in order
    int32_t * pairs = active + n_as;
    char * panel = mine + p->list_bytes;
    float * tile = (float *) (panel + p->panel_bytes);
    float * frow = p->frow_bytes ? (float *) ((char *) tile + GGML_GEMM_MR * GGML_GEMM_NR * sizeof(float)) : NULL;
    char * gv = (char *) tile + GGML_GEMM_MR * GGML_GEMM_NR * sizeof(float) + p->frow_bytes;
    char * compact = gv + p->gv_bytes;
    char * stage = compact + p->compact_bytes; // a group's quantized rows side by side

    mmid_group(ids, n_as, offs, pairs);
    int64_t n_active = 0;
    gpre[0] = 0;
    for (int64_t e = 0; e < n_as; e++) {
        const int32_t c = offs[e + 1] - offs[e];
        gpre[e + 1] = gpre[e] + (c + GGML_GEMM_NR - 1) / GGML_GEMM_NR;
        if (c > 0) active[n_active++] = (int32_t) e;
    }
    const int64_t n_groups = gpre[n_as];

    // Phase 1: b's rows quantized (each once, whatever the number of experts that read it) ...
    int64_t r0 = 0, r1 = n_brows;
    if (!p->priv) ggml_cpu_split(n_brows, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const char * src = ggml_cpu_ptr(b, 0, r % n_b, r / n_b, 0);
        const float * row = (const float *) src;
        if (frow) {
            for (int64_t k = 0; k < K; k++) frow[k] = *(const float *) (src + k * b->nb[0]);
            row = frow;
        }
        p->quantize(row, qrows + (size_t) r * p->qrow_bytes, K);
    }
    if (!p->priv) ggml_cpu_barrier(params);
    // ... then laid out per expert in groups of 8 of its pairs
    int64_t g0 = 0, g1 = n_groups;
    if (!p->priv) ggml_cpu_split(n_groups, ith, nth, &g0, &g1);
    for (int64_t gi = g0, e = 0; gi < g1; gi++) {
        while (gpre[e + 1] <= gi) e++;
        const int64_t c0 = offs[e] + (gi - gpre[e]) * GGML_GEMM_NR;
        const int nc = (int) GGML_MIN(GGML_GEMM_NR, offs[e + 1] - c0);
        // a one-pair expert on repacked panels reads its compact column, made from the row itself
        if (p->compact && offs[e + 1] - offs[e] == 1) continue;
        char * group = groups + (size_t) gi * p->group_bytes;
        if (nc < GGML_GEMM_NR) memset(group, 0, p->group_bytes);
        // the pairs' rows are scattered over b: side by side first, for the set's group filler
        for (int c = 0; c < nc; c++) {
            const int64_t pr = pairs[c0 + c], j = pr % n_used, t = pr / n_used;
            memcpy(stage + (size_t) c * p->qrow_bytes, qrows + (size_t) (j % n_b + t * n_b) * p->qrow_bytes, p->qrow_bytes);
        }
        gt->act_group(gt, stage, p->qrow_bytes, nc, K, group);
    }

    // Phase 2: items (a chosen expert, a run of ppi of its panels)
    const int64_t per_thread = p->packed ? MMID_GEMM_PACKED_ITEMS : 4;
    const int64_t ppi = GGML_MAX(1, p->panels_m * n_active / (per_thread * (int64_t) nth));
    const int64_t items_e = (p->panels_m + ppi - 1) / ppi;
    const int64_t n_items = items_e * n_active;
    const bool dynamic = nth > 1;
    int64_t t = ith, t_end = n_items;
    if (dynamic) {
        if (ith == 0) atomic_store_explicit(counter, nth, memory_order_relaxed);
        ggml_cpu_barrier(params); // groups and counter ready
    }
    int64_t prepared = -1; // expert whose single column is in gv / compact
    while (t < t_end) {
        const int64_t e = active[t / items_e], blk = t % items_e;
        const int64_t pm0 = blk * ppi, pm1 = GGML_MIN(p->panels_m, pm0 + ppi);
        const int64_t n_pe = offs[e + 1] - offs[e];
        const char * arows = (const char *) as->data + e * as->nb[2];
        const char * g_e = groups + (size_t) gpre[e] * p->group_bytes;
        if (n_pe == 1 && (p->compact || p->gemv)) {
            const int64_t pr = pairs[offs[e]], j = pr % n_used, tok = pr / n_used;
            float * out = (float *) ggml_cpu_ptr(dst, 0, j, tok, 0);
            if (prepared != e) {
                if (p->compact) {
                    ggml_gemm_act_compact_row(gt, qrows + (size_t) (j % n_b + tok * n_b) * p->qrow_bytes, K, compact);
                } else {
                    gt->gemv_prep(gt, qrows + (size_t) (j % n_b + tok * n_b) * p->qrow_bytes, g_e, K, gv);
                }
                prepared = e;
            }
            for (int64_t pm = pm0; pm < pm1; pm++) {
                const int64_t m0 = pm * GGML_GEMM_MR;
                const int nr = (int) GGML_MIN(GGML_GEMM_MR, M - m0);
                if (p->compact) {
                    gt->kernel_repacked1(gt, K, p->packed + (size_t) (e * p->panels_m + pm) * p->packed_panel_bytes, compact,
                                         out + m0, GGML_GEMM_MR, nr, 1);
                } else if (nr == GGML_GEMM_MR) {
                    gt->gemv(gt, arows + m0 * as->nb[1], as->nb[1], K, gv, out + m0);
                } else {
                    gt->pack(gt, arows + m0 * as->nb[1], as->nb[1], nr, K, panel);
                    gt->kernel(gt, K, panel, g_e, out + m0, GGML_GEMM_MR, nr, 1);
                }
            }
        } else {
            const ggml_gemm_kernel_t kernel = p->packed ? gt->kernel_repacked : gt->kernel;
            const int64_t n_g = gpre[e + 1] - gpre[e];
            for (int64_t pm = pm0; pm < pm1; pm++) {
                const int64_t m0 = pm * GGML_GEMM_MR;
                const int nr = (int) GGML_MIN(GGML_GEMM_MR, M - m0);
                const char * pan = panel;
                if (p->packed) {
                    pan = (const char *) p->packed + (size_t) (e * p->panels_m + pm) * p->packed_panel_bytes;
                } else {
                    gt->pack(gt, arows + m0 * as->nb[1], as->nb[1], nr, K, panel);
                }
                for (int64_t g = 0; g < n_g; g++) {
                    const int64_t c0 = offs[e] + g * GGML_GEMM_NR;
                    const int nc = (int) GGML_MIN(GGML_GEMM_NR, offs[e + 1] - c0);
                    kernel(gt, K, pan, g_e + (size_t) g * p->group_bytes, tile, GGML_GEMM_MR, nr, nc);
                    for (int c = 0; c < nc; c++) {
                        const int64_t pr = pairs[c0 + c];
                        memcpy(ggml_cpu_ptr(dst, m0, pr % n_used, pr / n_used, 0), tile + c * GGML_GEMM_MR,
                               (size_t) nr * sizeof(float));
                    }
                }
            }
        }
        t = dynamic ? atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) : t + 1;
    }
}

// ---- both ----

size_t ggml_cpu_work_size_mul_mat_id(const struct ggml_tensor * dst, int n_threads) {
    struct mmid_gemm_plan gp;
    if (mmid_gemm_plan_make(dst, n_threads, &gp)) return mmid_gemm_work_size(&gp, n_threads);
    struct mmid_plan p;
    if (!mmid_plan_make(dst, &p)) return 0;
    return MMID_HDR + (p.priv ? (size_t) n_threads : 1) * p.conv_bytes +
        (size_t) n_threads * (p.list_bytes + p.frow_bytes + p.arow_bytes);
}

void ggml_compute_forward_mul_mat_id(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor *as = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    const int ith = params->ith, nth = params->nth;
    if (b->type == GGML_TYPE_F32 && ids->type == GGML_TYPE_I32 && dst->type == GGML_TYPE_F32) {
        struct mmid_gemm_plan gp;
        if (mmid_gemm_plan_make(dst, nth, &gp) && params->wsize >= mmid_gemm_work_size(&gp, nth)) {
            if (!mmid_ids_valid(params, ids, as->ne[2])) {
                ggml_cpu_kernel_failed(params);
                return;
            }
            mmid_gemm_compute(params, dst, &gp);
            return;
        }
        if (ggml_cpu_repack_panels(as) != NULL) {
            if (ith == 0) GGML_LOG_ERROR("MUL_MAT_ID: repacked experts '%s' cannot take the GEMM path\n", as->name);
            ggml_cpu_kernel_failed(params);
            return;
        }
    }
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
    const int64_t n_brows = n_b * b->ne[2];

    char * wbase = (char *) params->wdata;
    atomic_int * counter = (atomic_int *) wbase;
    const size_t n_conv = p.priv ? (size_t) nth : 1;
    char * conv = wbase + MMID_HDR + (p.priv ? (size_t) ith * p.conv_bytes : 0);
    char * mine = wbase + MMID_HDR + n_conv * p.conv_bytes + (size_t) ith * (p.list_bytes + p.frow_bytes + p.arow_bytes);
    int32_t * offs = (int32_t *) mine;
    int32_t * tpre = offs + (n_as + 1);
    int32_t * pairs = tpre + (n_as + 1);
    float * frow = p.frow_bytes ? (float *) (mine + p.list_bytes) : NULL;
    float * arow_f32 = p.arow_bytes ? (float *) (mine + p.list_bytes + p.frow_bytes) : NULL;

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
    for (int64_t e = 0; e < n_as; e++) col_tiles += (offs[e + 1] - offs[e] + MMID_BN - 1) / MMID_BN;
    const int64_t want = (dynamic ? 4 : 1) * (int64_t) nth;
    int64_t tiles_m = (M + MMID_BM - 1) / MMID_BM;
    if (col_tiles > 0 && tiles_m * col_tiles < want) tiles_m = GGML_MIN(M, (want + col_tiles - 1) / col_tiles);
    const int64_t bm = (M + tiles_m - 1) / tiles_m;
    tiles_m = (M + bm - 1) / bm;
    tpre[0] = 0;
    for (int64_t e = 0; e < n_as; e++) {
        tpre[e + 1] = tpre[e] + (int32_t) (tiles_m * ((offs[e + 1] - offs[e] + MMID_BN - 1) / MMID_BN));
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
        const int64_t tn = rem / tiles_m, tm = rem - tn * tiles_m;
        const int64_t m0 = tm * bm, m1 = GGML_MIN(M, m0 + bm);
        const int32_t * pe = pairs + offs[e] + tn * MMID_BN;
        const int64_t np = GGML_MIN(MMID_BN, offs[e + 1] - offs[e] - tn * MMID_BN);
        const char * abase = (const char *) as->data + e * as->nb[2];
        // each expert row is read once per tile, for all of the tile's pairs
        for (int64_t i = m0; i < m1; i++) {
            const char * arow = abase + i * as->nb[1];
            if (arow_f32) {
                ggml_cpu_row_to_f32(arow, as->type, arow_f32, K);
            }
            for (int64_t q = 0; q < np; q++) {
                const int64_t j = pe[q] % n_used, tok = pe[q] / n_used;
                const int64_t br = j % n_b + tok * n_b;
                const char * bj = p.direct ? ggml_cpu_ptr(b, 0, j % n_b, tok, 0) : conv + (size_t) br * p.wrow;
                float * out = (float *) (ggml_cpu_ptr(dst, 0, j, tok, 0) + i * dst->nb[0]);
                if (arow_f32) {
                    *out = ggml_cpu_vec_dot(K, arow_f32, (const float *) bj);
                } else {
                    vec_dot((int) K, out, arow, bj);
                }
            }
        }
        t = dynamic ? atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) : t + 1;
    }
}
