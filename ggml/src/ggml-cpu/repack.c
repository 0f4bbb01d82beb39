// repack.c — load-time repacking of weight matrices for the CPU GEMM (layout in repack.h).
//
// The copy is made with the selected kernel set's panel packer (the same unpacking mul_mat
// would do on every call), then squeezed back to about the stored size: levels to nibbles (q4_0,
// q4_1, q4_K) and scales to fp16, which is exact since they came from fp16 (q4_K: its stored
// d, dmin and decoded 6-bit sub-block scales, 2.8% more than stored).
#include "repack.h"
#include "gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define REPACK_MAGIC  0x4b435052u // "RPCK"
#define REPACK_HEADER 64

struct repack_header {
    uint32_t magic;
    int32_t type;
    int64_t ne0, ne1;
    uint64_t bytes;   // of the whole copy, header included
};

// Elements of one repacked unit (a block, or a q4_K superblock) and its bytes for 16 rows
// (0: no repacked layout for the type).
static int64_t repack_unit(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q8_0: return 32;
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1: return 32;
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K: return QK_K;
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_IQ4_XS: return QK_K;
        case GGML_TYPE_IQ4_NL: return 32;
        default: return 0;
    }
}
static size_t repack_unit_bytes(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0: return 16 * 32 / 2 + 32;
        case GGML_TYPE_Q4_1: return 16 * 32 / 2 + 64;
        case GGML_TYPE_Q8_0: return 16 * 32 + 32;
        case GGML_TYPE_Q5_0: return 16 * 32 / 2 + 64 + 32;         // nibbles, fifth bits, d
        case GGML_TYPE_Q5_1: return 16 * 32 / 2 + 64 + 64;         // nibbles, fifth bits, d, m
        case GGML_TYPE_Q5_K: return 64 + 2 * 8 * 16 + 8 * (16 * 32 / 2 + 64); // q4_K's, and per block the fifth bits
        case GGML_TYPE_Q4_K: return 64 + 2 * 8 * 16 + 8 * (16 * 32 / 2); // d, dmin; sc, mn; 8 blocks of nibbles
        case GGML_TYPE_Q6_K: return 16 * 16 + 32 + 16 * 192;        // sc; d; 16 blocks of 4+2-bit levels
        case GGML_TYPE_Q2_K: return GGML_GEMM_RP_Q2_K;          // written by repack_rows only (gemm.h)
        case GGML_TYPE_Q3_K: return GGML_GEMM_RP_Q3_K;
        case GGML_TYPE_IQ4_NL: return GGML_GEMM_RP_IQ4_NL;
        case GGML_TYPE_IQ4_XS: return GGML_GEMM_RP_IQ4_XS;
        default: return 0;
    }
}

static const struct ggml_gemm_traits * repack_traits(const struct ggml_tensor * t) {
    if (!t || repack_unit(t->type) == 0) return NULL;
    if (t->ne[2] != 1 || t->ne[3] != 1 || t->ne[0] % repack_unit(t->type) != 0 || t->ne[1] % GGML_GEMM_MR != 0 || t->ne[1] <= 0 ||
        t->nb[0] != ggml_type_size(t->type) || t->nb[1] < ggml_row_size(t->type, t->ne[0])) {
        return NULL;
    }
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(t->type);
    if (!gt || !gt->kernel_repacked || !gt->kernel_repacked1 || !gt->pack) return NULL;
    // q2_K, q3_K, iq4_nl, iq4_xs have no panel squeezer below: their layout comes from repack_rows alone
    if ((t->type == GGML_TYPE_Q2_K || t->type == GGML_TYPE_Q3_K || t->type == GGML_TYPE_IQ4_NL || t->type == GGML_TYPE_IQ4_XS) &&
        !gt->repack_rows)
        return NULL;
    return gt;
}

size_t ggml_cpu_repack_size(const struct ggml_tensor * t) {
    if (!ggml_gemm_enabled() || !repack_traits(t)) return 0; // GGML_CPU_GEMM=0: nothing to repack for
    return REPACK_HEADER +
        (size_t) (t->ne[1] / GGML_GEMM_MR) * (size_t) (t->ne[0] / repack_unit(t->type)) * repack_unit_bytes(t->type);
}

// Levels of a panel block (u8, 16 rows x 32) as nibbles: packed vector h holds level vector h in
// its low nibbles and h + 4 in its high ones.
static void repack_nibbles(const uint8_t * lv, uint8_t * o) {
    for (size_t i = 0; i < 16 * 32 / 2; i++) o[i] = (uint8_t) (lv[i] | (lv[i + 16 * 32 / 2] << 4));
}

// 5-bit levels of a panel block: their low 4 bits as repack_nibbles writes them, then one vector
// of fifth bits (byte i, bit g: bit 4 of level vector g's byte i).
static void repack_nibbles5(const uint8_t * lv, uint8_t * o) {
    for (size_t i = 0; i < 16 * 32 / 2; i++) o[i] = (uint8_t) ((lv[i] & 15) | ((lv[i + 16 * 32 / 2] & 15) << 4));
    for (size_t i = 0; i < 64; i++) {
        uint8_t b = 0;
        for (int g = 0; g < 8; g++) b |= (uint8_t) (((lv[64 * g + i] >> 4) & 1) << g);
        o[16 * 32 / 2 + i] = b;
    }
}

bool ggml_cpu_repack(struct ggml_tensor * t, void * buf) { return ggml_cpu_repack_parts(t, &t, 1, buf); }

// The traits to repack t from parts (their rows, in order, are t's), or NULL if it cannot be.
static const struct ggml_gemm_traits * repack_parts_check(const struct ggml_tensor * t, struct ggml_tensor * const * parts,
                                                          int n_parts, const void * buf) {
    const struct ggml_gemm_traits * gt = repack_traits(t);
    if (!gt || !buf || !parts || n_parts < 1 || !ggml_cpu_repack_size(t)) return NULL;
    int64_t rows = 0;
    for (int i = 0; i < n_parts; i++) {
        const struct ggml_tensor * pt = parts[i];
        if (!pt || !pt->data || pt->type != t->type || pt->ne[0] != t->ne[0] || !repack_traits(pt)) return NULL;
        rows += pt->ne[1];
    }
    return rows == t->ne[1] ? gt : NULL;
}

// Writes t's copy of panels [p_begin, p_end) into buf (panel: one panel of scratch).
static void repack_panel_range(struct ggml_tensor * t, const struct ggml_gemm_traits * gt, struct ggml_tensor * const * parts,
                               void * buf, int64_t p_begin, int64_t p_end, uint8_t * panel) {
    const int64_t K = t->ne[0], unit = repack_unit(t->type), nu = K / unit;
    const size_t pbb = ggml_gemm_panel_block_bytes(gt), rub = repack_unit_bytes(t->type);
    uint8_t * out = (uint8_t *) buf + REPACK_HEADER;
    const size_t tsz = ggml_type_size(t->type);
    int part = 0;
    int64_t part_p0 = 0; // t's first panel in parts[part]
    while (p_begin - part_p0 >= parts[part]->ne[1] / GGML_GEMM_MR) {
        part_p0 += parts[part]->ne[1] / GGML_GEMM_MR;
        part++;
    }
    for (int64_t p = p_begin; p < p_end; p++) {
        if ((p - part_p0) * GGML_GEMM_MR >= parts[part]->ne[1]) {
            part_p0 += parts[part]->ne[1] / GGML_GEMM_MR;
            part++;
        }
        const struct ggml_tensor * src = parts[part];
        const char * rows = (const char *) src->data + (size_t) (p - part_p0) * GGML_GEMM_MR * src->nb[1];
        const size_t nb1 = src->nb[1];
        if (gt->repack_rows && gt->repack_rows(gt, rows, nb1, K, out + (size_t) p * nu * rub)) continue;
        gt->pack(gt, rows, nb1, GGML_GEMM_MR, K, panel);
        for (int64_t u = 0; u < nu; u++) {
            uint8_t * o = out + (size_t) (p * nu + u) * rub;
            if (t->type == GGML_TYPE_Q6_K) {
                // sc and d as stored; per 16-element block its 4 level vectors L0..L3 as two nibble
                // vectors (L0 | L2 << 4, L1 | L3 << 4) and one of 2-bit tops (L_g >> 4 at bits 2g)
                for (int r = 0; r < GGML_GEMM_MR; r++) {
                    const block_q6_K * b = (const block_q6_K *) (rows + (size_t) r * nb1) + u;
                    for (int j = 0; j < 16; j++) o[16 * j + r] = (uint8_t) b->scales[j];
                    memcpy(o + 256 + 2 * r, &b->d, 2);
                }
                for (int j = 0; j < 16; j++) {
                    const uint8_t * lv = panel + (size_t) (16 * u + j) * pbb;
                    uint8_t * ob = o + 288 + 192 * j;
                    for (int i = 0; i < 64; i++) {
                        ob[i] = (uint8_t) ((lv[i] & 15) | ((lv[128 + i] & 15) << 4));
                        ob[64 + i] = (uint8_t) ((lv[64 + i] & 15) | ((lv[192 + i] & 15) << 4));
                        ob[128 + i] = (uint8_t) ((lv[i] >> 4) | ((lv[64 + i] >> 4) << 2) | ((lv[128 + i] >> 4) << 4) |
                                                 ((lv[192 + i] >> 4) << 6));
                    }
                }
                continue;
            }
            if (t->type == GGML_TYPE_Q4_K || t->type == GGML_TYPE_Q5_K) {
                // the scales as stored (d, dmin) and decoded (6-bit sc, mn): the kernel forms
                // d*sc and -dmin*mn as the packer does (q5_K's d, dmin, scales lead as q4_K's)
                const bool k5 = t->type == GGML_TYPE_Q5_K;
                for (int r = 0; r < GGML_GEMM_MR; r++) {
                    const block_q4_K * b = (const block_q4_K *) (rows + (size_t) r * nb1 + (size_t) u * tsz);
                    memcpy(o + 2 * r, &b->d, 2);
                    memcpy(o + 32 + 2 * r, &b->dmin, 2);
                    for (int j = 0; j < 8; j++) {
                        uint8_t sc, mn;
                        ggml_quants_get_scale_min_k4(j, b->scales, &sc, &mn);
                        o[64 + 16 * j + r] = sc;
                        o[64 + 128 + 16 * j + r] = mn;
                    }
                }
                for (int j = 0; j < 8; j++) {
                    if (k5)
                        repack_nibbles5(panel + (size_t) (8 * u + j) * pbb, o + 64 + 256 + 320 * j);
                    else
                        repack_nibbles(panel + (size_t) (8 * u + j) * pbb, o + 64 + 256 + 256 * j);
                }
                continue;
            }
            const uint8_t * lv = panel + (size_t) u * pbb;
            size_t lvb;
            if (t->type == GGML_TYPE_Q8_0) {
                lvb = 16 * 32;
                memcpy(o, lv, lvb);
            } else if (t->type == GGML_TYPE_Q5_0 || t->type == GGML_TYPE_Q5_1) {
                lvb = 16 * 32 / 2 + 64;
                repack_nibbles5(lv, o);
            } else {
                lvb = 16 * 32 / 2;
                repack_nibbles(lv, o);
            }
            // d (and q4_1's m) as stored: the fp16 fields that open each block (the panel's
            // floats are their exact values, so this is what converting those back would give)
            for (int r = 0; r < GGML_GEMM_MR; r++) {
                const char * blk = rows + (size_t) r * nb1 + (size_t) u * tsz;
                memcpy(o + lvb + 2 * r, blk, 2);
                if (gt->has_min) memcpy(o + lvb + 32 + 2 * r, blk + 2, 2);
            }
        }
    }
}

// Marks buf as t's copy (its panels written).
static void repack_attach(struct ggml_tensor * t, void * buf) {
    struct repack_header h = { REPACK_MAGIC, (int32_t) t->type, t->ne[0], t->ne[1], (uint64_t) ggml_cpu_repack_size(t) };
    memcpy(buf, &h, sizeof(h));
    t->extra = buf;
}

static uint8_t * repack_panel_alloc(const struct ggml_tensor * t, const struct ggml_gemm_traits * gt) {
    uint8_t * panel = malloc(ggml_gemm_panel_bytes(gt, t->ne[0]));
    if (!panel) GGML_LOG_ERROR("ggml_cpu_repack: out of memory for a panel of '%s'\n", t->name);
    return panel;
}

bool ggml_cpu_repack_parts(struct ggml_tensor * t, struct ggml_tensor * const * parts, int n_parts, void * buf) {
    const struct ggml_gemm_traits * gt = repack_parts_check(t, parts, n_parts, buf);
    uint8_t * panel = gt ? repack_panel_alloc(t, gt) : NULL;
    if (!panel) return false;
    repack_panel_range(t, gt, parts, buf, 0, t->ne[1] / GGML_GEMM_MR, panel);
    free(panel);
    repack_attach(t, buf);
    return true;
}

// Stored bytes above which a tensor is repacked chunk by chunk, each chunk's stored rows handed
// to the done callback on their own: a loader that lets them go keeps the peak memory within
// about one chunk per thread of a single copy of the model, even for a big tied embedding.
#define REPACK_CHUNK_BYTES (8u << 20)

// The rows [r0, r1) of part as a tensor of their own (for the done callback).
static struct ggml_tensor repack_rows_view(const struct ggml_tensor * part, int64_t r0, int64_t r1) {
    struct ggml_tensor v = *part;
    v.data = (char *) part->data + (size_t) r0 * part->nb[1];
    v.ne[1] = r1 - r0;
    v.ne[2] = v.ne[3] = 1;
    v.nb[2] = v.nb[3] = (size_t) v.ne[1] * v.nb[1];
    return v;
}

// ggml_cpu_repack_parts in chunks of panels, calling done around each chunk for the stored
// rows it reads (as row views of the parts).
static bool repack_parts_chunked(struct ggml_tensor * t, struct ggml_tensor * const * parts, int n_parts, void * buf,
                                 ggml_cpu_repack_done_t done, void * done_data) {
    const struct ggml_gemm_traits * gt = repack_parts_check(t, parts, n_parts, buf);
    uint8_t * panel = gt ? repack_panel_alloc(t, gt) : NULL;
    if (!panel) return false;
    const int64_t n_panels = t->ne[1] / GGML_GEMM_MR;
    const size_t panel_stored = (size_t) GGML_GEMM_MR * parts[0]->nb[1];
    const int64_t step = GGML_MAX(1, (int64_t) (REPACK_CHUNK_BYTES / (panel_stored ? panel_stored : 1)));
    for (int64_t p0 = 0; p0 < n_panels; p0 += step) {
        const int64_t p1 = GGML_MIN(n_panels, p0 + step);
        struct ggml_tensor views[4];
        int n_views = 0;
        int64_t first = 0; // t's first row in parts[i]
        for (int i = 0; i < n_parts && n_views < 4; first += parts[i]->ne[1], i++) {
            const int64_t r0 = GGML_MAX(p0 * GGML_GEMM_MR, first), r1 = GGML_MIN(p1 * GGML_GEMM_MR, first + parts[i]->ne[1]);
            if (r1 > r0) views[n_views++] = repack_rows_view(parts[i], r0 - first, r1 - first);
        }
        for (int k = 0; k < n_views; k++) done(&views[k], false, done_data);
        repack_panel_range(t, gt, parts, buf, p0, p1, panel);
        for (int k = 0; k < n_views; k++) done(&views[k], true, done_data);
    }
    free(panel);
    repack_attach(t, buf);
    return true;
}

// t's copy if t->extra is one and describes t (extra may belong to someone else otherwise).
static const struct repack_header * repack_header_of(const struct ggml_tensor * t) {
    if (!t || !t->extra || repack_unit(t->type) == 0) return NULL;
    const struct repack_header * h = (const struct repack_header *) t->extra;
    // experts stacked in dim 2 (mul_mat_id) were repacked as one matrix of all their rows
    if (h->magic != REPACK_MAGIC || h->type != (int32_t) t->type || h->ne0 != t->ne[0] || h->ne1 != t->ne[1] * t->ne[2]) {
        return NULL;
    }
    return h;
}

// t as one matrix of all its rows when its dims 1-2 are (experts stacked in dim 2, each a whole
// number of panels, rows evenly spaced); false otherwise.
static bool repack_flat(const struct ggml_tensor * t, struct ggml_tensor * flat) {
    if (t->ne[3] != 1 || t->nb[2] != (size_t) t->ne[1] * t->nb[1] || t->ne[1] % GGML_GEMM_MR != 0) return false;
    *flat = *t;
    flat->ne[1] = t->ne[1] * t->ne[2];
    flat->ne[2] = 1;
    flat->nb[2] = flat->nb[3] = (size_t) flat->ne[1] * flat->nb[1];
    return true;
}

void ggml_cpu_repack_clear(struct ggml_tensor * t) {
    if (repack_header_of(t)) t->extra = NULL;
}

const void * ggml_cpu_repack_panels(const struct ggml_tensor * t) {
    const struct repack_header * h = repack_header_of(t);
    struct ggml_tensor flat;
    if (!h || (t->ne[2] == 1 ? !repack_traits(t) : !repack_flat(t, &flat) || !repack_traits(&flat))) return NULL;
    return (const uint8_t *) h + REPACK_HEADER;
}

struct repack_job {
    struct ggml_tensor * const * ts;
    const struct ggml_cpu_repack_fused * fused; // per tensor (or NULL): the tensors it is made of
    const size_t * offs;      // per tensor: offset in buf, or SIZE_MAX (skip)
    const int * order;        // the tensors to repack, largest first
    int n_order;
    atomic_int * next;        // next entry of order to claim (shared by the workers)
    uint8_t * buf;
    ggml_cpu_repack_done_t done;
    void * done_data;
    bool ok;
};

// Claims tensors largest first until none is left: a layer's tensors differ in size by up to
// 5x, so a fixed split would leave one thread with most of the bytes.
static void * repack_worker(void * arg) {
    struct repack_job * j = (struct repack_job *) arg;
    for (int k; (k = atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed)) < j->n_order;) {
        const int i = j->order[k];
        // the tensors whose stored rows are read: t itself, or the parts it fuses
        const struct ggml_cpu_repack_fused * f = j->fused && j->fused[i].n_parts > 0 ? &j->fused[i] : NULL;
        struct ggml_tensor * const * src = f ? f->parts : &j->ts[i];
        const int n_src = f ? f->n_parts : 1;
        size_t stored = 0;
        for (int k = 0; k < n_src; k++) stored += src[k] ? ggml_nbytes(src[k]) : 0;
        if (j->done && n_src <= 4 && stored > REPACK_CHUNK_BYTES) {
            j->ok &= repack_parts_chunked(j->ts[i], src, n_src, j->buf + j->offs[i], j->done, j->done_data);
            continue;
        }
        for (int k = 0; k < n_src && j->done; k++) j->done(src[k], false, j->done_data);
        const bool ok = ggml_cpu_repack_parts(j->ts[i], src, n_src, j->buf + j->offs[i]);
        j->ok &= ok;
        for (int k = 0; k < n_src && ok && j->done; k++) j->done(src[k], true, j->done_data);
    }
    return NULL;
}

void * ggml_cpu_repack_all(struct ggml_tensor * const * ts, int n, int n_threads) {
    return ggml_cpu_repack_all_cb(ts, n, n_threads, NULL, NULL, NULL);
}

// Big copies are aligned to 2 MiB and asked to be backed by huge pages: token generation streams
// every weight once per token, and fewer TLB misses measurably raise the read bandwidth.
#define REPACK_HUGE (2u << 20)

void * ggml_cpu_repack_all_cb(struct ggml_tensor * const * ts, int n, int n_threads, const struct ggml_cpu_repack_fused * fused,
                              ggml_cpu_repack_done_t done, void * done_data) {
    if (!ts || n <= 0) return NULL;
    size_t * offs = malloc(sizeof(size_t) * (size_t) n);
    if (!offs) return NULL;
    size_t total = REPACK_HEADER; // the buffer's own header: its size, for ggml_cpu_repack_free
    for (int i = 0; i < n; i++) {
        offs[i] = SIZE_MAX;
        const size_t sz = ggml_cpu_repack_size(ts[i]);
        bool seen = false;
        for (int k = 0; k < i && !seen; k++) seen = ts[k] == ts[i];
        if (sz == 0 || seen || ggml_cpu_repack_panels(ts[i])) continue;
        offs[i] = total;
        total += GGML_PAD(sz, 64);
    }
    if (total == REPACK_HEADER) {
        free(offs);
        return NULL;
    }
    uint8_t * buf = NULL;
    const bool huge = total >= REPACK_HUGE;
    if (huge) total = GGML_PAD(total, REPACK_HUGE);
    if (posix_memalign((void **) &buf, huge ? REPACK_HUGE : 64, total) != 0) {
        GGML_LOG_ERROR("ggml_cpu_repack_all: out of memory (%zu bytes); weights stay as stored\n", total);
        free(offs);
        return NULL;
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) madvise(buf, total, MADV_HUGEPAGE); // advice only: failure changes nothing
#endif
    memcpy(buf, &total, sizeof(total));
    int * order = malloc(sizeof(int) * (size_t) n);
    size_t * szs = malloc(sizeof(size_t) * (size_t) n);
    if (!order || !szs) {
        free(order);
        free(szs);
        free(buf);
        free(offs);
        return NULL;
    }
    int n_order = 0;
    for (int i = 0; i < n; i++) {
        if (offs[i] == SIZE_MAX) continue;
        // insertion by size, largest first (n is a few hundred)
        const size_t sz = ggml_cpu_repack_size(ts[i]);
        int k = n_order++;
        for (; k > 0 && szs[k - 1] < sz; k--) {
            order[k] = order[k - 1];
            szs[k] = szs[k - 1];
        }
        order[k] = i;
        szs[k] = sz;
    }
    free(szs);
    atomic_int next = 0;
    const int nth = n_threads < 1 ? 1 : n_threads > 64 ? 64 : n_threads;
    struct repack_job jobs[64];
    pthread_t th[64];
    bool started[64] = { false };
    for (int t = 0; t < nth; t++) {
        jobs[t] = (struct repack_job) { ts, fused, offs, order, n_order, &next, buf, done, done_data, true };
        if (t > 0) started[t] = pthread_create(&th[t], NULL, repack_worker, &jobs[t]) == 0;
    }
    // tensors of threads that could not start are done here
    for (int t = 0; t < nth; t++) {
        if (t == 0 || !started[t]) repack_worker(&jobs[t]);
    }
    bool ok = true;
    for (int t = 0; t < nth; t++) {
        if (started[t]) pthread_join(th[t], NULL);
        ok &= jobs[t].ok;
    }
    if (!ok) {
        GGML_LOG_ERROR("ggml_cpu_repack_all: a tensor could not be repacked; weights stay as stored\n");
        ggml_cpu_repack_free(ts, n, buf);
        buf = NULL;
    }
    free(order);
    free(offs);
    return buf;
}

void ggml_cpu_repack_free(struct ggml_tensor * const * ts, int n, void * buf) {
    if (!buf) return;
    size_t total;
    memcpy(&total, buf, sizeof(total));
    const uint8_t *lo = (const uint8_t *) buf, *hi = lo + total;
    for (int i = 0; ts && i < n; i++) {
        // only copies inside buf: a tensor may hold one made elsewhere
        if (ts[i] && repack_header_of(ts[i]) && (const uint8_t *) ts[i]->extra > lo && (const uint8_t *) ts[i]->extra < hi) {
            ggml_cpu_repack_clear(ts[i]);
        }
    }
    free(buf);
}

size_t ggml_cpu_repack_panel_bytes(const struct ggml_tensor * t) {
    if (!t || repack_unit(t->type) == 0) return 0;
    return (size_t) (t->ne[0] / repack_unit(t->type)) * repack_unit_bytes(t->type);
}
