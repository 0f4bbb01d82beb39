// kv-cache-swa.c — the window cache (llama_context_params.swa_full off): the sliding-window
// layers keep only about a window of cells per sequence instead of n_ctx. Their K/V rows live
// in their slots of the main cache (kv-cache.c), sized to kv->swa->size rows; kv->swa keeps
// those cells' positions and sequences. A window cell is reused once every sequence it holds
// has moved n_swa positions past it: no later token of theirs can see it. When a cell is let
// go, the same sequence's older cells go with it, so the window cells of a sequence always
// hold a contiguous run of its positions and llama_memory_seq_pos_min says where it starts
// (llama-server reprocesses a prompt whose reused prefix starts before the window's oldest).
#include "llama-context.h"

#include <stdlib.h>
#include <string.h>

uint32_t llama_kv_cache_swa_cells(const struct llama_model * model, bool swa_full, uint32_t n_ctx, uint32_t n_seq_max,
                                  uint32_t n_ubatch) {
    const struct llama_hparams * hp = &model->hparams;
    if (swa_full || hp->n_swa == 0 || hp->swa_symmetric) {
        return 0; // a symmetric window (an encoder's) looks ahead: positions never fall out of it for good
    }
    bool any = false;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->recurrent_layers[il]) {
            return 0; // a hybrid's recurrent state and window cells are not planned together
        }
        if (hp->swa_layers[il] != hp->swa_layers[hp->kv_layer[il]]) {
            return 0; // a layer reading another kind of layer's KV would need both cell sets' masks
        }
        any = any || hp->swa_layers[il];
    }
    if (!any) {
        return 0;
    }
    uint64_t want = (uint64_t) hp->n_swa * n_seq_max + n_ubatch;
    want = want < n_ctx ? want : n_ctx;
    want = (want + 255) / 256 * 256;
    return want < n_ctx ? (uint32_t) want : 0; // no smaller than the context: nothing to gain
}

// The sequences cell c holds, into out (at most n_seq_max); their count.
static int swa_cell_seqs(const struct llama_memory_i * swa, uint32_t c, llama_seq_id * out) {
    int n = 0;
    for (uint32_t w = 0; w < swa->n_words; w++) {
        const uint64_t bits = swa->seq[(size_t) c * swa->n_words + w];
        for (uint32_t b = 0; bits != 0 && b < 64; b++) {
            if ((bits >> b) & 1u) {
                out[n++] = (llama_seq_id) (w * 64 + b);
            }
        }
    }
    return n;
}

// Lets go sequence s's window cells at positions <= p (all out of its window).
static void swa_purge(struct llama_memory_i * swa, llama_seq_id s, llama_pos p) {
    const uint32_t w = (uint32_t) s / 64;
    const uint64_t bit = (uint64_t) 1 << ((uint32_t) s % 64);
    for (uint32_t c = 0; c < swa->size; c++) {
        if (swa->pos[c] < 0 || swa->pos[c] > p || !(swa->seq[(size_t) c * swa->n_words + w] & bit)) {
            continue;
        }
        swa->seq[(size_t) c * swa->n_words + w] &= ~bit;
        bool empty = true;
        for (uint32_t k = 0; k < swa->n_words && empty; k++) {
            empty = swa->seq[(size_t) c * swa->n_words + k] == 0;
        }
        if (empty) {
            llama_kv_cache_cell_clear(swa, c);
        }
    }
}

struct swa_cand {
    llama_pos pos;
    uint32_t cell;
};

static int swa_cand_cmp(const void * a, const void * b) {
    const struct swa_cand *x = a, *y = b;
    return x->pos != y->pos ? (x->pos < y->pos ? -1 : 1) : (x->cell < y->cell ? -1 : x->cell > y->cell);
}

bool llama_kv_cache_swa_find_slot(struct llama_memory_i * swa, uint32_t n, const llama_pos * pos, llama_seq_id * const * seq_id,
                                  const int32_t * n_seq_id, uint32_t * cells) {
    const bool paged = swa->n_seq_max > 1;
    if (n <= llama_kv_cache_n_free(swa)) {
        return llama_kv_cache_find_slot(swa, n, paged ? seq_id : NULL, cells);
    }
    // lim[s]: the lowest position sequence s may still attend from: its next position, or the
    // lowest one this ubatch gives it. A cell at p with lim[s] - p >= n_swa for every sequence
    // it holds is out of all their windows, now and later.
    llama_pos * lim = GGML_MALLOC(sizeof(llama_pos) * swa->n_seq_max);
    struct swa_cand * cand = GGML_MALLOC(sizeof(struct swa_cand) * swa->size);
    if (lim == NULL || cand == NULL) {
        LLAMA_LOG_ERROR("llama_decode: out of memory\n");
        free(lim);
        free(cand);
        return false;
    }
    for (uint32_t s = 0; s < swa->n_seq_max; s++) {
        lim[s] = INT32_MIN;
    }
    llama_seq_id seqs[LLAMA_MAX_SEQ];
    for (uint32_t c = 0; c < swa->size; c++) {
        if (swa->pos[c] < 0) {
            continue;
        }
        for (int j = 0, ns = swa_cell_seqs(swa, c, seqs); j < ns; j++) {
            lim[seqs[j]] = swa->pos[c] + 1 > lim[seqs[j]] ? swa->pos[c] + 1 : lim[seqs[j]];
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        for (int32_t j = 0; j < n_seq_id[i]; j++) {
            const llama_seq_id s = seq_id[i][j];
            lim[s] = lim[s] == INT32_MIN || pos[i] < lim[s] ? pos[i] : lim[s];
        }
    }
    uint32_t n_cand = 0;
    for (uint32_t c = 0; c < swa->size; c++) {
        const llama_pos p = swa->pos[c];
        if (p < 0) {
            continue;
        }
        bool out = true;
        for (int j = 0, ns = swa_cell_seqs(swa, c, seqs); j < ns; j++) {
            out = out && (int64_t) lim[seqs[j]] - p >= (int64_t) swa->n_swa;
        }
        if (out) {
            cand[n_cand++] = (struct swa_cand) { p, c };
        }
    }
    // the oldest first; each with its sequences' older cells
    qsort(cand, n_cand, sizeof(*cand), swa_cand_cmp);
    for (uint32_t k = 0; k < n_cand && llama_kv_cache_n_free(swa) < n; k++) {
        const uint32_t c = cand[k].cell;
        if (swa->pos[c] != cand[k].pos) {
            continue; // already let go with an older sequence's purge
        }
        const int ns = swa_cell_seqs(swa, c, seqs);
        for (int j = 0; j < ns; j++) {
            swa_purge(swa, seqs[j], cand[k].pos);
        }
    }
    free(lim);
    free(cand);
    return llama_kv_cache_find_slot(swa, n, paged ? seq_id : NULL, cells);
}

// Whether sequence s keeps its window after [p0, p1) is removed (see the header).
static bool swa_seq_rm_ok_one(const struct llama_memory_i * kv, llama_seq_id s, llama_pos p0, llama_pos p1) {
    const struct llama_memory_i * swa = kv->swa;
    const llama_pos lo = p0 < 0 ? 0 : p0;
    // removed: lo <= p < p1 (p1 < 0: no upper bound)
#define SWA_REMOVED(p) ((p) >= lo && (p1 < 0 || (p) < p1))
    llama_pos pm = -1; // the sequence's last position afterwards
    for (uint32_t c = 0; c < kv->size; c++) {
        const llama_pos p = kv->pos[c];
        if (p > pm && !SWA_REMOVED(p) && llama_kv_cache_seq_has(kv, c, s)) {
            pm = p;
        }
    }
    if (pm < 0) {
        return true; // nothing left: it starts afresh
    }
    // positions (pm + 1 - n_swa, pm] are in the window of the next position pm + 1
    const int64_t first = (int64_t) pm + 1 - (int64_t) swa->n_swa + 1;
    const uint32_t n_win = swa->n_swa;
    uint8_t * held = GGML_CALLOC(n_win, 1);
    if (held == NULL) {
        return false;
    }
    for (uint32_t c = 0; c < swa->size; c++) {
        const llama_pos p = swa->pos[c];
        if (p >= 0 && p >= first && p <= pm && llama_kv_cache_seq_has(swa, c, s)) {
            held[p - first] = 1;
        }
    }
    bool ok = true;
    for (uint32_t c = 0; c < kv->size && ok; c++) {
        const llama_pos p = kv->pos[c];
        if (p >= 0 && p >= first && p <= pm && !SWA_REMOVED(p) && llama_kv_cache_seq_has(kv, c, s)) {
            ok = held[p - first] != 0;
        }
    }
#undef SWA_REMOVED
    free(held);
    return ok;
}

bool llama_kv_cache_swa_seq_rm_ok(const struct llama_memory_i * kv, llama_seq_id seq_id, llama_pos p0, llama_pos p1) {
    if (kv->swa == NULL || (p0 <= 0 && p1 < 0)) {
        return true; // no window cache, or the whole sequence goes
    }
    for (uint32_t s = seq_id < 0 ? 0 : (uint32_t) seq_id; s < (seq_id < 0 ? kv->n_seq_max : (uint32_t) seq_id + 1); s++) {
        if (!swa_seq_rm_ok_one(kv, (llama_seq_id) s, p0, p1)) {
            LLAMA_LOG_WARN("llama_memory_seq_rm: sequence %u: removing [%d, %d) would leave it without the window cells its "
                           "next position needs (they were reused, swa_full is off); nothing removed: clear the sequence "
                           "and decode it again\n",
                           s, p0, p1);
            return false;
        }
    }
    return true;
}
