// ops-attention.c — fused attention: out = softmax(scale * q.k^T (+ softcap) + slope*mask) . v,
// (with sinks, src[4] F32 [H]: head h's sink logit joins each row's max and denominator only),
// one pass over the KV entries with an online softmax (running max M and sum S; when a new
// score exceeds M, the accumulator and S are rescaled by exp(M_old - M_new)).
//
// q [D, n_q, H, ne3] F32/F16/BF16; k [D, n_kv, H_kv, *] and v [Dv, n_kv, H_kv, *] float types
// (any element stride) or quantized (unit stride), rows otherwise at any strides (KV-cache
// views); mask [n_kv, >= n_q, *, *] F32/F16 or NULL, dims 2-3 broadcast by modulo; head h reads
// KV head h / (H / H_kv) (dim 3 likewise). Output [Dv, H, n_q, ne3] F32.
//
// Work is cut into tiles: up to 16 query rows that read the same KV head (the heads of a GQA
// group at consecutive positions, or a slice of a large group at one position). The tile walks
// the KV cells twice in blocks of GGML_FA_BLOCK (attn.h): K blocks for the scores of the keys
// each row's mask leaves visible, then V blocks for the weighted sums; each block is converted
// to F32 once for the whole tile (used in place when it already is F32), and only the span of
// its cells that some row sees: blocks hidden from every row (causal: past the diagonal) are
// not touched, nor the masked cells at a block's ends (decoding: the padding of n_kv past the
// sequence's end). Where a tile is one of several positions of its KV head (prompts), the
// thread keeps the head's converted K and V rows across its tiles of that head (a cache of up to
// FA_CACHE_MAX bytes in its scratch): each cell is converted about once per thread and head
// instead of once per tile. A row's result depends only on its own
// visible keys, so batched and one-token decoding, or a sequence in other cells, agree bit for
// bit. Tiles are dealt to threads round-robin, which keeps causal work balanced without a
// barrier; each thread has its own scratch slice of wdata.
#include "ops-util.h"
#include "attn.h"

#include <stdatomic.h>

#define FA_TILE_ROWS GGML_FA_ROWS

static _Atomic int64_t fa_cells_scored;

int64_t ggml_cpu_fa_cells_scored(void) { return atomic_load(&fa_cells_scored); }
void ggml_cpu_fa_cells_reset(void) { atomic_store(&fa_cells_scored, 0); }

struct fa_plan {
    int64_t rows;         // query rows per tile
    int64_t lds;          // list entries per row: every cell
    size_t qf_bytes;      // tile's q rows as F32, transposed (qt), and one row as read
    size_t o_bytes;       // tile's accumulators (o and o2)
    size_t kv_bytes;      // one block of K and V rows as F32
    size_t mask_bytes;    // tile's mask rows for one block (F16 masks converted)
    size_t list_bytes;    // tile's lists of visible keys: scores and cells
    size_t span_bytes;    // per block: the cells some row sees, [lo, hi) relative to the block
    size_t cache_bytes;   // several positions per KV head (prompts): every K and V row of the head
                          // as F32, kept across the thread's tiles of that head (0: none)
    size_t conv_bytes;    // per block: the rows held in the cache, K [lo, hi) then V [lo, hi)
    size_t run_bytes;     // several positions per tile: each tile's first position (and the end), cells seen
};

// At most this many bytes of F32 K and V rows cached per thread (about L2 size): longer
// caches convert block by block, as one-position tiles (decoding) always do.
#define FA_CACHE_MAX (768u * 1024u)

static void fa_plan_make(const struct ggml_tensor * q, const struct ggml_tensor * k, const struct ggml_tensor * v,
                         struct fa_plan * p) {
    memset(p, 0, sizeof(*p));
    const int64_t D = q->ne[0], Dv = v->ne[0];
    const int64_t group = k->ne[2] > 0 && q->ne[2] % k->ne[2] == 0 ? q->ne[2] / k->ne[2] : 1;
    // whole GQA groups at consecutive positions, or a slice of one group's heads
    p->rows = group >= FA_TILE_ROWS ? FA_TILE_ROWS : GGML_MAX(1, FA_TILE_ROWS / group) * group;
    p->qf_bytes = GGML_PAD((size_t) ((FA_TILE_ROWS + 1) * D) * sizeof(float), 64);
    p->o_bytes = GGML_PAD((size_t) (2 * p->rows * Dv) * sizeof(float), 64);
    p->kv_bytes = GGML_PAD((size_t) (GGML_FA_BLOCK * (D + Dv)) * sizeof(float), 64);
    p->mask_bytes = GGML_PAD((size_t) (p->rows * GGML_FA_BLOCK) * sizeof(float), 64);
    p->lds = GGML_PAD(k->ne[1], 16);
    p->list_bytes = GGML_PAD((size_t) (p->rows * p->lds) * (sizeof(float) + sizeof(int32_t)), 64);
    p->span_bytes = GGML_PAD((size_t) (2 * ((k->ne[1] + GGML_FA_BLOCK - 1) / GGML_FA_BLOCK)) * sizeof(int32_t), 64);
    const size_t cache = (size_t) (k->ne[1] * (D + Dv)) * sizeof(float);
    const bool converted = !(k->type == GGML_TYPE_F32 && v->type == GGML_TYPE_F32);
    if (q->ne[1] > 1 && converted && cache <= FA_CACHE_MAX) {
        p->cache_bytes = GGML_PAD(cache, 64);
        p->conv_bytes = 2 * p->span_bytes;
    }
    if (group < FA_TILE_ROWS) p->run_bytes = GGML_PAD((size_t) (3 * q->ne[1] + 1) * sizeof(int32_t), 64);
}

static size_t fa_thread_bytes(const struct fa_plan * p) {
    return p->qf_bytes + p->o_bytes + p->kv_bytes + p->mask_bytes + p->list_bytes + p->span_bytes + p->cache_bytes +
        p->conv_bytes + p->run_bytes;
}

size_t ggml_cpu_work_size_flash_attn_ext(const struct ggml_tensor * dst, int n_threads) {
    struct fa_plan p;
    fa_plan_make(dst->src[0], dst->src[1], dst->src[2], &p);
    return (size_t) n_threads * fa_thread_bytes(&p);
}

// ALiBi slope of head h (see ops-softmax.c for the formula); 1 when max_bias is 0.
static float fa_alibi_slope(float max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0f) return 1.0f;
    int64_t n_head_log2 = 1;
    while (n_head_log2 * 2 <= n_head) n_head_log2 *= 2;
    const float m0 = powf(2.0f, -max_bias / (float) n_head_log2);
    const float m1 = powf(2.0f, -max_bias / 2.0f / (float) n_head_log2);
    return h < n_head_log2 ? powf(m0, (float) (h + 1)) : powf(m1, (float) (2 * (h - n_head_log2) + 1));
}

// n elements of a row of t (unit stride or not, any float/quantized type) as floats.
static void fa_row_to_f32(const struct ggml_tensor * t, const char * row, int64_t n, float * out) {
    const size_t ts = ggml_type_size(t->type);
    if (ggml_is_quantized(t->type)) {
        ggml_get_type_traits(t->type)->to_float(row, out, n);
    } else if (t->nb[0] == ts) {
        ggml_cpu_row_to_f32(row, t->type, out, n);
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = ggml_cpu_load_f(row + i * t->nb[0], t->type);
    }
}

// Element j of a mask row (F32 read in place, F16 converted).
static inline float fa_mask_at(const char * row, int j, const struct ggml_tensor * mask, bool m_f32) {
    return m_f32 ? ((const float *) row)[j] : ggml_cpu_load_f(row + j * mask->nb[0], mask->type);
}

// Whether the 4 floats at m all are -inf (compared as bits: one branch for the 4).
static inline bool fa_ninf4(const float * m) {
    uint64_t x[2];
    memcpy(x, m, sizeof(x));
    const uint64_t ninf2 = 0xFF800000FF800000ull;
    return ((x[0] ^ ninf2) | (x[1] ^ ninf2)) == 0;
}

// Prefetches the cache lines of n bytes at p.
static inline void fa_prefetch_row(const char * p, size_t n) {
    for (size_t b = 0; b < n; b += 64) __builtin_prefetch(p + b, 0, 3);
    __builtin_prefetch(p + n - 1, 0, 3);
}

// Bytes from the first to the last element of a row of t.
static size_t fa_row_bytes(const struct ggml_tensor * t) {
    const size_t ts = ggml_type_size(t->type);
    return t->nb[0] == ts ? ggml_row_size(t->type, t->ne[0]) : (size_t) (t->ne[0] - 1) * t->nb[0] + ts;
}

static bool fa_type_ok(const struct ggml_tensor * t) {
    if (ggml_cpu_is_float_type(t->type)) return true;
    const struct ggml_type_traits * tt = ggml_get_type_traits(t->type);
    return tt && tt->is_quantized && tt->to_float && t->nb[0] == tt->type_size && t->ne[0] % tt->blck_size == 0;
}

// Rows [J0, J0 + nk) of head hk (batch i3) of t as F32 rows: in place (*ld = row stride in floats)
// when t already is unit-stride F32, else converted into buf (*ld = n).
static const float * fa_block_rows(const struct ggml_tensor * t, int64_t J0, int nk, int64_t hk, int64_t i3,
                                   const struct ggml_fa_kernels * kern, float * buf, int64_t * ld) {
    const int64_t n = t->ne[0];
    if (t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0) {
        *ld = (int64_t) (t->nb[1] / sizeof(float));
        return (const float *) ggml_cpu_ptr(t, 0, J0, hk, i3);
    }
    if (t->type == GGML_TYPE_F16 && t->nb[0] == sizeof(ggml_fp16_t)) {
        kern->f16_rows(ggml_cpu_ptr(t, 0, J0, hk, i3), t->nb[1], nk, n, buf);
        *ld = n;
        return buf;
    }
    for (int j = 0; j < nk; j++) fa_row_to_f32(t, ggml_cpu_ptr(t, 0, J0 + j, hk, i3), n, buf + j * n);
    *ld = n;
    return buf;
}

// Rows [j0 + lo, j0 + hi) of block b as F32 rows, through the thread's cache when there is one:
// rows held since an earlier tile of the same head are reused (the same conversion of the same
// bits), the others converted into the cache, which then holds the union of both ranges.
static const float * fa_block_rows_cached(const struct ggml_tensor * t, int64_t j0, int lo, int hi, int64_t hk, int64_t i3,
                                          const struct ggml_fa_kernels * kern, float * buf, float * cache, int32_t * conv,
                                          int64_t * ld) {
    if (!cache || (t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0)) {
        return fa_block_rows(t, j0 + lo, hi - lo, hk, i3, kern, buf, ld);
    }
    const int64_t n = t->ne[0];
    int clo = conv[0], chi = conv[1];
    if (clo >= chi) {
        fa_block_rows(t, j0 + lo, hi - lo, hk, i3, kern, cache + (j0 + lo) * n, ld);
        clo = lo;
        chi = hi;
    } else {
        // the rows missing below and above the held range (the union is contiguous: both
        // ranges are extended to cover the gap between them)
        if (lo < clo) fa_block_rows(t, j0 + lo, clo - lo, hk, i3, kern, cache + (j0 + lo) * n, ld);
        if (hi > chi) fa_block_rows(t, j0 + chi, hi - chi, hk, i3, kern, cache + (j0 + chi) * n, ld);
        clo = GGML_MIN(clo, lo);
        chi = GGML_MAX(chi, hi);
    }
    conv[0] = clo;
    conv[1] = chi;
    *ld = n;
    return cache + (j0 + lo) * n;
}

// The cells [*lo, *hi) from the first to the last visible cell of mask row r (empty: lo >= hi).
static void fa_row_range(const char * r, const struct ggml_tensor * mask, bool m_f32, int64_t n_kv, int64_t * lo, int64_t * hi) {
    int64_t a = 0, b = n_kv;
    if (m_f32) {
        while (a + 4 <= n_kv && fa_ninf4((const float *) r + a)) a += 4;
    }
    while (a < n_kv && fa_mask_at(r, (int) a, mask, m_f32) == -INFINITY) a++;
    if (m_f32) {
        while (b - 4 >= a && fa_ninf4((const float *) r + b - 4)) b -= 4;
    }
    while (b > a && fa_mask_at(r, (int) b - 1, mask, m_f32) == -INFINITY) b--;
    *lo = a;
    *hi = b;
}

// Cuts positions [0, n_q) into tiles of at most per_pos consecutive positions whose mask rows
// (plane 0) open at the same block: positions of different sequences (a batched decode step,
// each sequence in its own pages) get tiles of their own instead of one tile walking the union
// of their cells. Writes each tile's first position to start[] (n_q after the last) and the
// cells its rows see, from the first to the last, to range[2t], range[2t + 1] (what the tile
// before it prefetches); returns the tile count. Without a mask (or with one per head or
// batch), tiles of per_pos positions over every cell.
static int64_t fa_position_tiles(const struct ggml_tensor * mask, bool m_f32, int64_t n_q, int64_t n_kv, int64_t per_pos,
                                 int32_t * start, int32_t * range) {
    const bool split = mask && mask->ne[2] == 1 && mask->ne[3] == 1 && n_q > 1;
    int64_t n = 0, prev = -1, in_tile = per_pos;
    for (int64_t i = 0; i < n_q; i++) {
        int64_t lo = 0, hi = n_kv;
        if (split) fa_row_range((const char *) mask->data + i * mask->nb[1], mask, m_f32, n_kv, &lo, &hi);
        const int64_t b = lo / GGML_FA_BLOCK;
        if (in_tile == per_pos || b != prev) {
            start[n] = (int32_t) i;
            range[2 * n] = (int32_t) lo;
            range[2 * n + 1] = (int32_t) hi;
            n++;
            in_tile = 0;
        } else {
            range[2 * n - 2] = (int32_t) GGML_MIN(range[2 * n - 2], lo);
            range[2 * n - 1] = (int32_t) GGML_MAX(range[2 * n - 1], hi);
        }
        in_tile++;
        prev = b;
    }
    start[n] = (int32_t) n_q;
    return n;
}

void ggml_compute_forward_flash_attn_ext(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * q = dst->src[0];
    const struct ggml_tensor * k = dst->src[1];
    const struct ggml_tensor * v = dst->src[2];
    const struct ggml_tensor * mask = dst->src[3];
    const float * sinks = dst->src[4] ? (const float *) dst->src[4]->data : NULL; // F32 [H], or none

    struct fa_plan p;
    fa_plan_make(q, k, v, &p);
    const int64_t D = q->ne[0], n_q = q->ne[1], H = q->ne[2], Dv = v->ne[0], n_kv = k->ne[1];
    const int64_t H_kv = k->ne[2];
    if (!ggml_cpu_is_float_type(q->type) || !fa_type_ok(k) || !fa_type_ok(v) || dst->type != GGML_TYPE_F32 || k->ne[0] != D ||
        v->ne[1] != n_kv || v->ne[2] != H_kv || H_kv <= 0 || H % H_kv != 0 || k->ne[3] <= 0 || v->ne[3] <= 0 ||
        q->ne[3] % k->ne[3] != 0 || q->ne[3] % v->ne[3] != 0 || D > INT32_MAX || Dv > INT32_MAX || n_kv > INT32_MAX ||
        (mask && ((mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) || mask->ne[0] < n_kv || mask->ne[1] < n_q)) ||
        (dst->src[4] && (dst->src[4]->type != GGML_TYPE_F32 || ggml_nelements(dst->src[4]) != H)) ||
        params->wsize < (size_t) params->nth * fa_thread_bytes(&p)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("FLASH_ATTN_EXT: unsupported shapes/types (q %s D=%lld, k %s, v %s, H=%lld, H_kv=%lld)\n",
                           ggml_type_name(q->type), (long long) D, ggml_type_name(k->type), ggml_type_name(v->type),
                           (long long) H, (long long) H_kv);
        }
        return;
    }
    const float max_bias = ggml_get_op_params_f32(dst, 1);
    const float softcap = ggml_get_op_params_f32(dst, 2);
    const int64_t group = H / H_kv, R = p.rows;
    const struct ggml_fa_kernels kern = ggml_fa_kernels_get(ggml_cpu_kernel_variant_selected());

    char * ws = (char *) params->wdata + (size_t) params->ith * fa_thread_bytes(&p);
    float * qt = (float *) ws;
    float * qf = qt + FA_TILE_ROWS * D;
    ws += p.qf_bytes;
    float * o = (float *) ws;
    float * o2 = o + R * Dv;
    ws += p.o_bytes;
    float * kb = (float *) ws;
    float * vb = kb + GGML_FA_BLOCK * D;
    ws += p.kv_bytes;
    float * mbuf = (float *) ws;
    ws += p.mask_bytes;
    float * ls = (float *) ws;
    int32_t * lc = (int32_t *) (ls + R * p.lds);
    ws += p.list_bytes;
    int32_t * span = (int32_t *) ws;
    ws += p.span_bytes;
    float * cache = p.cache_bytes ? (float *) ws : NULL;
    float *kcache = cache, *vcache = cache ? cache + n_kv * D : NULL;
    ws += p.cache_bytes;
    int32_t *kconv = (int32_t *) ws, *vconv = kconv + p.span_bytes / sizeof(int32_t);
    ws += p.conv_bytes;
    int32_t * run = (int32_t *) ws;
    int32_t * run_cells = run + n_q + 1;
    int64_t cached_hk = -1, cached_k3 = -1, cached_v3 = -1;

    const size_t k_row_bytes = fa_row_bytes(k), v_row_bytes = fa_row_bytes(v);
    const bool m_f32 = mask && mask->type == GGML_TYPE_F32 && mask->nb[0] == sizeof(float);

    // tiles per (batch, KV head): positions in steps of R/group, or (group >= R) slices of heads
    const int64_t slices = group >= R ? (group + R - 1) / R : 1;
    const int64_t per_pos = group >= R ? 1 : R / group;
    const int64_t tiles_per_head = group >= R ? n_q * slices : fa_position_tiles(mask, m_f32, n_q, n_kv, per_pos, run, run_cells);
    const int64_t n_tiles = q->ne[3] * H_kv * tiles_per_head;

    int64_t hs[FA_TILE_ROWS], iqs[FA_TILE_ROWS];
    const char * mrows[FA_TILE_ROWS];
    const float * mblk[FA_TILE_ROWS];
    float slopes[FA_TILE_ROWS], mv[FA_TILE_ROWS], lv[FA_TILE_ROWS];
    int64_t nv[FA_TILE_ROWS], next[FA_TILE_ROWS];
    for (int64_t t = params->ith; t < n_tiles; t += params->nth) {
        const int64_t i3 = t / (H_kv * tiles_per_head);
        const int64_t hk = (t - i3 * H_kv * tiles_per_head) / tiles_per_head;
        const int64_t ti = t - (i3 * H_kv + hk) * tiles_per_head;
        const int64_t k3 = i3 / (q->ne[3] / k->ne[3]), v3 = i3 / (q->ne[3] / v->ne[3]);
        const int64_t n_blk = (n_kv + GGML_FA_BLOCK - 1) / GGML_FA_BLOCK;
        if (cache && (hk != cached_hk || k3 != cached_k3 || v3 != cached_v3)) { // another head: nothing held yet
            memset(kconv, 0, (size_t) (2 * n_blk) * sizeof(int32_t));
            memset(vconv, 0, (size_t) (2 * n_blk) * sizeof(int32_t));
            cached_hk = hk;
            cached_k3 = k3;
            cached_v3 = v3;
        }
        int nr = 0;
        if (group >= R) {
            const int64_t iq = ti / slices, h0 = hk * group + (ti % slices) * R;
            for (int64_t i = 0; i < R && h0 + i < (hk + 1) * group; i++, nr++) {
                hs[nr] = h0 + i;
                iqs[nr] = iq;
            }
        } else {
            for (int64_t i = 0; i < R && run[ti] + i / group < run[ti + 1]; i++, nr++) {
                hs[nr] = hk * group + i % group;
                iqs[nr] = run[ti] + i / group;
            }
        }
        memset(qt, 0, (size_t) (FA_TILE_ROWS * D) * sizeof(float));
        for (int i = 0; i < nr; i++) {
            fa_row_to_f32(q, ggml_cpu_ptr(q, 0, iqs[i], hs[i], i3), D, qf);
            for (int64_t d = 0; d < D; d++) qt[d * FA_TILE_ROWS + i] = qf[d];
            mrows[i] = mask ? ggml_cpu_ptr(mask, 0, iqs[i], hs[i] % mask->ne[2], i3 % mask->ne[3]) : NULL;
            slopes[i] = fa_alibi_slope(max_bias, H, hs[i]);
            mv[i] = -INFINITY;
            lv[i] = 0.0f;
            nv[i] = next[i] = 0;
        }
        memset(o, 0, (size_t) (nr * Dv) * sizeof(float));
        memset(o2, 0, (size_t) (nr * Dv) * sizeof(float));
        const struct ggml_fa_rows rows = { nr,
                                           (int) D,
                                           (int) Dv,
                                           qt,
                                           mask ? mblk : NULL,
                                           slopes,
                                           ggml_get_op_params_f32(dst, 0),
                                           softcap > 0.0f ? softcap : 0.0f,
                                           ls,
                                           lc,
                                           p.lds,
                                           nv,
                                           next,
                                           mv,
                                           lv,
                                           o,
                                           o2,
                                           Dv };

        int64_t vlo = n_kv, vhi = 0; // the cells of the first and last spans
        // the span of each block's cells some row sees ([lo, hi), relative to the block; empty
        // where every row's mask hides the block, as past the diagonal of a causal mask, and
        // without the masked cells at its ends, as the padding of n_kv past a sequence's end)
        for (int64_t j0 = 0; j0 < n_kv; j0 += GGML_FA_BLOCK) {
            const int nk = (int) GGML_MIN(GGML_FA_BLOCK, n_kv - j0);
            int32_t * sp = span + 2 * (j0 / GGML_FA_BLOCK);
            int lo = mask ? nk : 0, hi = mask ? 0 : nk;
            for (int i = 0; mask && i < nr; i++) {
                if (i > 0 && mrows[i] == mrows[i - 1]) continue; // same mask row as the previous
                const char * mr = mrows[i] + j0 * mask->nb[0];
                int a = 0, b = nk;
                if (m_f32) { // 4 cells at a time first: the blocks past a causal diagonal are all -inf
                    while (a + 4 <= lo && fa_ninf4((const float *) mr + a)) a += 4;
                    while (b - 4 >= GGML_MAX(a, hi) && fa_ninf4((const float *) mr + b - 4)) b -= 4;
                }
                while (a < lo && fa_mask_at(mr, a, mask, m_f32) == -INFINITY) a++;
                while (b > GGML_MAX(a, hi) && fa_mask_at(mr, b - 1, mask, m_f32) == -INFINITY) b--;
                if (a < b) {
                    lo = GGML_MIN(lo, a);
                    hi = GGML_MAX(hi, b);
                }
            }
            sp[0] = lo;
            sp[1] = hi;
            if (lo < hi) {
                vlo = GGML_MIN(vlo, j0 + lo);
                vhi = j0 + hi;
            }
            // the K and V rows are likely cold (decoding: the weights of the layers between two
            // uses of a layer's cache evict it): ask for all of them at once, so their misses
            // overlap instead of stalling the conversions one after the other (with a cache, most
            // rows were converted by an earlier tile and the others are warm from it)
            for (int j = lo; !cache && j < hi; j++) {
                fa_prefetch_row(ggml_cpu_ptr(k, 0, j0 + j, hk, k3), k_row_bytes);
                fa_prefetch_row(ggml_cpu_ptr(v, 0, j0 + j, hk, v3), v_row_bytes);
            }
        }
        // decoding: the thread's next tile's rows are asked for now, to arrive while this tile
        // computes; another KV head at the same position most likely sees the same cells, and a
        // tile of another sequence (batched decoding) sees the cells its mask rows open
        const int64_t tn = t + params->nth;
        if (!cache && tn < n_tiles && (tiles_per_head == slices || group < R)) {
            const int64_t i3n = tn / (H_kv * tiles_per_head);
            const int64_t hkn = (tn - i3n * H_kv * tiles_per_head) / tiles_per_head;
            const int64_t k3n = i3n / (q->ne[3] / k->ne[3]), v3n = i3n / (q->ne[3] / v->ne[3]);
            int64_t plo = vlo, phi = vhi;
            bool same = tiles_per_head == slices;
            if (!same) {
                const int64_t tin = tn - (i3n * H_kv + hkn) * tiles_per_head;
                plo = run_cells[2 * tin];
                phi = GGML_MIN(run_cells[2 * tin + 1], plo + 4 * GGML_FA_BLOCK); // its first cells: enough to overlap
                same = tin == ti;
            }
            if (!same || hkn != hk || k3n != k3) {
                for (int64_t j = plo; j < phi; j++) fa_prefetch_row(ggml_cpu_ptr(k, 0, j, hkn, k3n), k_row_bytes);
            }
            if (!same || hkn != hk || v3n != v3) {
                for (int64_t j = plo; j < phi; j++) fa_prefetch_row(ggml_cpu_ptr(v, 0, j, hkn, v3n), v_row_bytes);
            }
        }
        // pass 1: scores of the visible keys, K block by K block, only the span of cells some row sees
        int64_t scored = 0;
        for (int64_t j0 = 0; j0 < n_kv; j0 += GGML_FA_BLOCK) {
            const int32_t * sp = span + 2 * (j0 / GGML_FA_BLOCK);
            const int lo = sp[0], hi = sp[1];
            if (lo >= hi) continue;
            scored += hi - lo;
            for (int i = 0; mask && i < nr; i++) {
                if (i > 0 && mrows[i] == mrows[i - 1]) { // same mask row as the previous
                    mblk[i] = mblk[i - 1];
                    continue;
                }
                if (m_f32) {
                    mblk[i] = (const float *) mrows[i] + j0 + lo;
                } else {
                    float * mb = mbuf + i * GGML_FA_BLOCK;
                    for (int j = lo; j < hi; j++) mb[j - lo] = ggml_cpu_load_f(mrows[i] + (j0 + j) * mask->nb[0], mask->type);
                    mblk[i] = mb;
                }
            }
            int64_t ldk;
            const float * kp =
                fa_block_rows_cached(k, j0, lo, hi, hk, k3, &kern, kb, kcache, kconv + 2 * (j0 / GGML_FA_BLOCK), &ldk);
            kern.scores(&rows, j0 + lo, hi - lo, kp, ldk);
        }
        atomic_fetch_add_explicit(&fa_cells_scored, scored, memory_order_relaxed);
        // a sink (gpt-oss) joins the row's maximum before the exponentials and adds exp(sink - m)
        // to the denominator, with no value of its own
        for (int i = 0; sinks && i < nr; i++) mv[i] = GGML_MAX(mv[i], sinks[hs[i]]);
        kern.probs(&rows);
        for (int i = 0; sinks && i < nr; i++) {
            if (sinks[hs[i]] != -INFINITY) lv[i] += ggml_cpu_expf(sinks[hs[i]] - mv[i]);
        }
        // pass 2: p * v, V block by V block, only where some row has a visible key
        for (int64_t j0 = 0; j0 < n_kv; j0 += GGML_FA_BLOCK) {
            const int nk = (int) GGML_MIN(GGML_FA_BLOCK, n_kv - j0);
            const int32_t * sp = span + 2 * (j0 / GGML_FA_BLOCK);
            bool used = false;
            for (int i = 0; i < nr && !used; i++) used = next[i] < nv[i] && lc[i * p.lds + next[i]] < j0 + nk;
            if (!used) continue;
            // every list entry in the block lies in the block's span
            int64_t ldv;
            const float * vp =
                fa_block_rows_cached(v, j0, sp[0], sp[1], hk, v3, &kern, vb, vcache, vconv + 2 * (j0 / GGML_FA_BLOCK), &ldv);
            kern.accum(&rows, j0 + sp[0], sp[1] - sp[0], vp, ldv);
        }

        for (int i = 0; i < nr; i++) {
            float * out = (float *) ggml_cpu_ptr(dst, 0, hs[i], iqs[i], i3);
            const float inv = lv[i] > 0.0f ? 1.0f / lv[i] : 0.0f;
            for (int64_t c = 0; c < Dv; c++) out[c] = (o[i * Dv + c] + o2[i * Dv + c]) * inv;
        }
    }
}
