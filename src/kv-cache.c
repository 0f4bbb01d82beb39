// kv-cache.c — the KV cache: one K and one V tensor per layer with a row per cell, and per
// cell a position and a set of sequence ids; the llama_memory_* API over it. Shifting
// positions (seq_add / seq_div) re-rotates the cached keys with a small RoPE graph, because
// RoPE rotations compose: R(p + d) = R(d) R(p).
#include "llama-context.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <malloc.h>
#endif

size_t llama_kv_cache_bytes(const struct llama_hparams * hp, uint32_t n_ctx, uint32_t n_ctx_swa, enum ggml_type type_k,
                            enum ggml_type type_v) {
    size_t total = 0;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->kv_layer[il] != il || hp->recurrent_layers[il]) {
            continue; // attends over an earlier layer's cells, or keeps recurrent state: no cells of its own
        }
        const uint32_t rows = hp->swa_layers[il] && n_ctx_swa > 0 ? n_ctx_swa : n_ctx;
        const size_t k_row = ggml_row_size(type_k, llama_hparams_n_embd_k_gqa_l(hp, il));
        const size_t v_row = ggml_row_size(type_v, llama_hparams_n_embd_v_gqa_l(hp, il));
        size_t k, v, per_layer;
        // SIZE_MAX stands for "does not fit in the address space"
        if (!ggml_size_mul_ok(k_row, rows, &k) || !ggml_size_pad_ok(k, GGML_MEM_ALIGN, &k) ||
            !ggml_size_mul_ok(v_row, rows, &v) || !ggml_size_pad_ok(v, GGML_MEM_ALIGN, &v) ||
            !ggml_size_add_ok(k, v, &per_layer) || !ggml_size_add_ok(total, per_layer, &total)) {
            return SIZE_MAX;
        }
    }
    return total;
}

// The cell bookkeeping of kv (or of its window part): size empty cells; false when out of memory.
static bool kv_cells_alloc(struct llama_memory_i * kv, uint32_t size, uint32_t n_seq_max) {
    kv->size = size;
    kv->n_seq_max = n_seq_max;
    kv->n_words = (n_seq_max + 63) / 64;
    kv->pos = GGML_MALLOC(sizeof(llama_pos) * size);
    kv->seq = GGML_CALLOC((size_t) size * kv->n_words, sizeof(uint64_t));
    kv->seq_page = GGML_MALLOC(sizeof(uint32_t) * n_seq_max);
    if (kv->pos == NULL || kv->seq == NULL || kv->seq_page == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < size; i++) {
        kv->pos[i] = -1;
    }
    for (uint32_t s = 0; s < n_seq_max; s++) {
        kv->seq_page[s] = UINT32_MAX;
    }
    return true;
}

static void kv_cells_free(struct llama_memory_i * kv) {
    free(kv->pos);
    free(kv->seq);
    free(kv->seq_page);
    kv->pos = NULL;
    kv->seq = NULL;
    kv->seq_page = NULL;
}

void llama_kv_cache_free(struct llama_memory_i * kv) {
    if (kv == NULL) {
        return;
    }
    kv->magic = LLAMA_MAGIC_DEAD;
    llama_memory_recurrent_free(kv->rs);
    kv->rs = NULL;
    if (kv->swa != NULL) {
        kv->swa->magic = LLAMA_MAGIC_DEAD;
        kv_cells_free(kv->swa);
        free(kv->swa);
        kv->swa = NULL;
    }
    free(kv->slot_swa);
    kv->slot_swa = NULL;
    kv_cells_free(kv);
    free(kv->k_l);
    free(kv->v_l);
    free(kv->slot_of_layer);
    free(kv->layer_of_slot);
    ggml_free(kv->ctx);
    for (int i = 0; i < kv->n_bufs; i++) {
        ggml_backend_buffer_free(kv->bufs[i]);
        kv->bufs[i] = NULL;
    }
    kv->n_bufs = 0;
    kv->k_l = kv->v_l = NULL;
    kv->slot_of_layer = kv->layer_of_slot = NULL;
    kv->ctx = NULL;
}

bool llama_kv_cache_init(struct llama_memory_i * kv, struct llama_context * lctx, const struct llama_model * model,
                         uint32_t n_ctx, uint32_t n_ctx_swa, uint32_t n_seq_max, enum ggml_type type_k, enum ggml_type type_v) {
    const struct llama_hparams * hp = &model->hparams;
    memset(kv, 0, sizeof(*kv));
    kv->lctx = lctx;
    kv->type_k = type_k;
    kv->type_v = type_v;
    kv->n_embd_head_k = hp->n_embd_head_k;
    kv->n_embd_head_v = hp->n_embd_head_v;
    kv->n_head_kv = hp->n_head_kv;

    // One slot (a K and a V tensor) per layer that owns its KV; a layer sharing an earlier
    // layer's KV reads that layer's slot.
    kv->slot_of_layer = GGML_CALLOC(hp->n_layer, sizeof(uint32_t));
    kv->layer_of_slot = GGML_CALLOC(hp->n_layer, sizeof(uint32_t));
    if (kv->slot_of_layer == NULL || kv->layer_of_slot == NULL) {
        LLAMA_LOG_ERROR("llama_kv_cache_init: out of memory\n");
        llama_kv_cache_free(kv);
        return false;
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->recurrent_layers[il]) {
            kv->slot_of_layer[il] = UINT32_MAX; // its state lives in the recurrent memory (kv->rs)
        } else if (hp->kv_layer[il] == il) {
            kv->layer_of_slot[kv->n_layer] = il;
            kv->slot_of_layer[il] = kv->n_layer++;
            // the widest layer's width stands for the cache in the state fingerprint
            const uint32_t wk = llama_hparams_n_embd_k_gqa_l(hp, il), wv = llama_hparams_n_embd_v_gqa_l(hp, il);
            kv->n_embd_k_gqa = wk > kv->n_embd_k_gqa ? wk : kv->n_embd_k_gqa;
            kv->n_embd_v_gqa = wv > kv->n_embd_v_gqa ? wv : kv->n_embd_v_gqa;
        } else {
            kv->slot_of_layer[il] = kv->slot_of_layer[hp->kv_layer[il]];
        }
    }
    const uint32_t n_slot = kv->n_layer;
    if (hp->n_kv_shared > 0) {
        LLAMA_LOG_INFO("llama_kv_cache_init: %u of %u layers hold KV; the last %u read earlier layers' cells\n", n_slot,
                       hp->n_layer, hp->n_kv_shared);
    }

    const bool cells_ok = kv_cells_alloc(kv, n_ctx, n_seq_max);
    kv->k_l = GGML_CALLOC(n_slot, sizeof(struct ggml_tensor *));
    kv->v_l = GGML_CALLOC(n_slot, sizeof(struct ggml_tensor *));
    kv->slot_swa = GGML_CALLOC(n_slot > 0 ? n_slot : 1, sizeof(uint8_t));
    kv->ctx = ggml_init((struct ggml_init_params) {
        .mem_size = (size_t) (2 * n_slot + 2) * ggml_tensor_overhead(), .mem_buffer = NULL, .no_alloc = true });
    if (!cells_ok || kv->k_l == NULL || kv->v_l == NULL || kv->slot_swa == NULL || kv->ctx == NULL) {
        LLAMA_LOG_ERROR("llama_kv_cache_init: out of memory\n");
        llama_kv_cache_free(kv);
        return false;
    }
    if (n_ctx_swa > 0) {
        // the window part: cells only (its rows live in the sliding layers' slots below)
        kv->swa = GGML_CALLOC(1, sizeof(struct llama_memory_i));
        if (kv->swa == NULL || !kv_cells_alloc(kv->swa, n_ctx_swa, n_seq_max)) {
            LLAMA_LOG_ERROR("llama_kv_cache_init: out of memory\n");
            llama_kv_cache_free(kv);
            return false;
        }
        kv->swa->magic = LLAMA_MAGIC_MEMORY;
        kv->swa->lctx = lctx;
        kv->swa->n_swa = hp->n_swa;
        kv->swa->type_k = type_k;
        kv->swa->type_v = type_v;
        LLAMA_LOG_INFO("llama_kv_cache_init: sliding-window layers keep %u cells (window %u), the others %u\n", n_ctx_swa,
                       hp->n_swa, n_ctx);
    }
    for (uint32_t s = 0; s < n_slot; s++) {
        const uint32_t il = kv->layer_of_slot[s];
        kv->slot_swa[s] = n_ctx_swa > 0 && hp->swa_layers[il];
        const uint32_t rows = kv->slot_swa[s] ? n_ctx_swa : n_ctx;
        kv->k_l[s] = ggml_new_tensor_2d(kv->ctx, type_k, llama_hparams_n_embd_k_gqa_l(hp, il), rows);
        kv->v_l[s] = ggml_new_tensor_2d(kv->ctx, type_v, llama_hparams_n_embd_v_gqa_l(hp, il), rows);
        if (kv->k_l[s] == NULL || kv->v_l[s] == NULL) {
            LLAMA_LOG_ERROR("llama_kv_cache_init: cannot create the cache tensors of layer %u\n", il);
            llama_kv_cache_free(kv);
            return false;
        }
        ggml_format_name(kv->k_l[s], "cache_k_l%u", il);
        ggml_format_name(kv->v_l[s], "cache_v_l%u", il);
    }
    // One buffer per kind of memory (the CPU's blocks, an offloaded device's), each block's K
    // and V rows starting on an aligned boundary.
    ggml_backend_buffer_type_t bufts[2] = { NULL, NULL };
    size_t sizes[2] = { 0, 0 };
    for (uint32_t s = 0; s < n_slot; s++) {
        ggml_backend_buffer_type_t bt = llama_model_layer_buft(model, kv->layer_of_slot[s]);
        int b = bufts[0] == NULL || bufts[0] == bt ? 0 : 1;
        bufts[b] = bt;
        const size_t align = ggml_backend_buft_get_alignment(bt);
        sizes[b] += GGML_PAD(ggml_nbytes(kv->k_l[s]), align) + GGML_PAD(ggml_nbytes(kv->v_l[s]), align);
    }
    char * base[2] = { NULL, NULL };
    for (int b = 0; b < 2 && bufts[b]; b++) {
        kv->bufs[b] = ggml_backend_buft_alloc_buffer(bufts[b], sizes[b]);
        if (kv->bufs[b] == NULL) {
            LLAMA_LOG_ERROR("llama_kv_cache_init: cannot allocate the KV cache (%zu bytes of %s memory)\n", sizes[b],
                            ggml_backend_buft_name(bufts[b]));
            llama_kv_cache_free(kv);
            return false;
        }
        kv->n_bufs = b + 1;
        // Zeroed so that masked cells never hold NaN/inf (0 * NaN would poison attention).
        ggml_backend_buffer_clear(kv->bufs[b], 0);
        base[b] = ggml_backend_buffer_get_base(kv->bufs[b]);
    }
    for (uint32_t s = 0; s < n_slot; s++) {
        ggml_backend_buffer_type_t bt = llama_model_layer_buft(model, kv->layer_of_slot[s]);
        const int b = bufts[0] == bt ? 0 : 1;
        const size_t align = ggml_backend_buft_get_alignment(bt);
        if (ggml_backend_tensor_alloc(kv->bufs[b], kv->k_l[s], base[b]) != GGML_STATUS_SUCCESS) {
            llama_kv_cache_free(kv);
            return false;
        }
        base[b] += GGML_PAD(ggml_nbytes(kv->k_l[s]), align);
        if (ggml_backend_tensor_alloc(kv->bufs[b], kv->v_l[s], base[b]) != GGML_STATUS_SUCCESS) {
            llama_kv_cache_free(kv);
            return false;
        }
        base[b] += GGML_PAD(ggml_nbytes(kv->v_l[s]), align);
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->recurrent_layers[il]) {
            // a hybrid model: its recurrent layers keep their state beside the cache
            kv->rs = llama_memory_recurrent_init(model, n_seq_max);
            if (kv->rs == NULL) {
                llama_kv_cache_free(kv);
                return false;
            }
            break;
        }
    }
    kv->magic = LLAMA_MAGIC_MEMORY;
    return true;
}

// ---------------------------------------------------------------------------------------------
// cells

static inline void kv_seq_set(struct llama_memory_i * kv, uint32_t cell, llama_seq_id s) {
    kv->seq[(size_t) cell * kv->n_words + (uint32_t) s / 64] |= (uint64_t) 1 << ((uint32_t) s % 64);
}

static inline void kv_seq_unset(struct llama_memory_i * kv, uint32_t cell, llama_seq_id s) {
    kv->seq[(size_t) cell * kv->n_words + (uint32_t) s / 64] &= ~((uint64_t) 1 << ((uint32_t) s % 64));
}

static inline bool kv_seq_empty(const struct llama_memory_i * kv, uint32_t cell) {
    for (uint32_t w = 0; w < kv->n_words; w++) {
        if (kv->seq[(size_t) cell * kv->n_words + w] != 0) {
            return false;
        }
    }
    return true;
}

uint32_t llama_kv_cache_n_free(const struct llama_memory_i * kv) { return kv->size - kv->n_used; }

// A cell taken earlier in the same find_slot call: marked in pos while the call runs.
#define KV_POS_TAKEN (-2)

// The first empty cell of page pg if every used cell there holds s (a page another sequence
// also fills would mix them), else UINT32_MAX.
static uint32_t kv_page_cell(const struct llama_memory_i * kv, uint32_t pg, llama_seq_id s) {
    const uint32_t c0 = pg * LLAMA_KV_PAGE, c1 = c0 + LLAMA_KV_PAGE < kv->size ? c0 + LLAMA_KV_PAGE : kv->size;
    uint32_t found = UINT32_MAX;
    for (uint32_t c = c0; c < c1; c++) {
        if (kv->pos[c] >= 0 && !llama_kv_cache_seq_has(kv, c, s)) {
            return UINT32_MAX;
        }
        if (kv->pos[c] == -1 && found == UINT32_MAX) {
            found = c;
        }
    }
    return found;
}

// The first page with every cell empty (from page pg0 on), or UINT32_MAX.
static uint32_t kv_empty_page(const struct llama_memory_i * kv, uint32_t pg0) {
    const uint32_t n_pages = kv->size / LLAMA_KV_PAGE;
    for (uint32_t pg = pg0; pg < n_pages; pg++) {
        uint32_t c = pg * LLAMA_KV_PAGE;
        while (c < (pg + 1) * LLAMA_KV_PAGE && kv->pos[c] == -1) {
            c++;
        }
        if (c == (pg + 1) * LLAMA_KV_PAGE) {
            return pg;
        }
    }
    return UINT32_MAX;
}

bool llama_kv_cache_find_slot(struct llama_memory_i * kv, uint32_t n, llama_seq_id * const * seq_id, uint32_t * cells) {
    if (n > kv->size - kv->n_used) {
        return false;
    }
    // One sequence (or a cache of a few pages): the lowest empty cells.
    const bool paged = seq_id != NULL && kv->n_seq_max > 1 && kv->size >= 2 * LLAMA_KV_PAGE;
    uint32_t k = 0, low = 0; // every cell below low is taken
    uint32_t empty_from = 0; // no empty page below this one
    for (; k < n; k++) {
        uint32_t c = UINT32_MAX;
        const llama_seq_id s = paged ? seq_id[k][0] : 0;
        if (paged && s >= 0 && (uint32_t) s < kv->n_seq_max) {
            const uint32_t pg = kv->seq_page[s];
            if (pg != UINT32_MAX && pg * LLAMA_KV_PAGE < kv->size) {
                c = kv_page_cell(kv, pg, s);
            }
            if (c == UINT32_MAX) {
                const uint32_t e = kv_empty_page(kv, empty_from);
                empty_from = e == UINT32_MAX ? kv->size : e + 1;
                if (e != UINT32_MAX) {
                    c = e * LLAMA_KV_PAGE;
                    kv->seq_page[s] = e;
                }
            }
        }
        if (c == UINT32_MAX) {
            // no page for it: the lowest empty cell, as without pages
            while (low < kv->size && kv->pos[low] != -1) {
                low++;
            }
            if (low == kv->size) {
                break;
            }
            c = low;
        }
        cells[k] = c;
        kv->pos[c] = KV_POS_TAKEN;
    }
    for (uint32_t i = 0; i < k; i++) {
        kv->pos[cells[i]] = -1;
    }
    return k == n;
}

void llama_kv_cache_cell_set(struct llama_memory_i * kv, uint32_t cell, llama_pos pos, int32_t n_seq, llama_seq_id * const seq) {
    GGML_ASSERT(cell < kv->size && kv->pos[cell] < 0);
    kv->pos[cell] = pos;
    for (int32_t j = 0; j < n_seq; j++) {
        kv_seq_set(kv, cell, seq[j]);
    }
    kv->n_used++;
}

void llama_kv_cache_cell_clear(struct llama_memory_i * kv, uint32_t cell) {
    if (kv->pos[cell] < 0) {
        return;
    }
    kv->pos[cell] = -1;
    memset(&kv->seq[(size_t) cell * kv->n_words], 0, kv->n_words * sizeof(uint64_t));
    kv->n_used--;
}

uint32_t llama_kv_cache_n_kv(const struct llama_memory_i * kv) {
    uint32_t hi = 0;
    for (uint32_t i = kv->size; i > 0; i--) {
        if (kv->pos[i - 1] >= 0) {
            hi = i;
            break;
        }
    }
    // Padding keeps the graph shapes (and the allocator's plan) stable across nearby calls.
    const uint32_t n = GGML_PAD(hi, 32);
    return n < kv->size ? n : kv->size;
}

// ---------------------------------------------------------------------------------------------
// the llama_memory_* API

static struct llama_memory_i * kv_checked(llama_memory_t mem, const char * func) {
    if (mem == NULL) {
        LLAMA_LOG_ERROR("%s: memory is NULL\n", func);
        return NULL;
    }
    if (mem->magic != LLAMA_MAGIC_MEMORY) {
        LLAMA_LOG_ERROR("%s: not a live llama memory (its context was freed?)\n", func);
        return NULL;
    }
    return mem;
}

static bool kv_seq_ok(const struct llama_memory_i * kv, llama_seq_id s, const char * func) {
    if (s < 0 || (uint32_t) s >= kv->n_seq_max) {
        LLAMA_LOG_ERROR("%s: seq_id %d is out of range [0, %u)\n", func, s, kv->n_seq_max);
        return false;
    }
    return true;
}

// A negative p0 means from the start; a negative p1 means no upper bound (so a cell at
// INT32_MAX is inside an open range too).
static void kv_range(llama_pos * p0, llama_pos * p1) {
    if (*p0 < 0) {
        *p0 = 0;
    }
    (void) p1;
}

static bool kv_in_range(llama_pos p, llama_pos p0, llama_pos p1) { return p >= 0 && p >= p0 && (p1 < 0 || p < p1); }

void llama_memory_clear(llama_memory_t mem, bool data) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv) {
        return;
    }
    for (uint32_t i = 0; i < kv->size; i++) {
        kv->pos[i] = -1;
    }
    memset(kv->seq, 0, (size_t) kv->size * kv->n_words * sizeof(uint64_t));
    kv->n_used = 0;
    if (kv->swa) {
        llama_memory_clear(kv->swa, false); // its rows are in kv's buffers, cleared below
    }
    if (kv->rs) {
        llama_memory_recurrent_clear(kv->rs, data);
    }
    if (data) {
        for (int b = 0; b < kv->n_bufs; b++) {
            ggml_backend_buffer_clear(kv->bufs[b], 0);
        }
    }
}

bool llama_memory_seq_rm(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv) {
        return false;
    }
    if (seq_id >= 0 && !kv_seq_ok(kv, seq_id, __func__)) {
        return false;
    }
    if (kv->swa) {
        // the window cells must still hold what the next position's window needs, or nothing changes
        if (!llama_kv_cache_swa_seq_rm_ok(kv, seq_id, p0, p1)) {
            return false;
        }
        llama_memory_seq_rm(kv->swa, seq_id, p0, p1);
    }
    if (kv->rs) {
        // a recurrent state is removed whole or not at all: check before touching anything
        if (!llama_memory_recurrent_seq_rm_ok(kv->rs, seq_id, p0, p1)) {
            return false;
        }
        llama_memory_recurrent_seq_rm(kv->rs, seq_id, p0, p1);
    }
    kv_range(&p0, &p1);
    for (uint32_t i = 0; i < kv->size; i++) {
        const llama_pos p = kv->pos[i];
        if (!kv_in_range(p, p0, p1)) {
            continue;
        }
        if (seq_id < 0) {
            llama_kv_cache_cell_clear(kv, i);
        } else if (llama_kv_cache_seq_has(kv, i, seq_id)) {
            kv_seq_unset(kv, i, seq_id);
            if (kv_seq_empty(kv, i)) {
                llama_kv_cache_cell_clear(kv, i);
            }
        }
    }
    return true;
}

void llama_memory_seq_cp(llama_memory_t mem, llama_seq_id seq_id_src, llama_seq_id seq_id_dst, llama_pos p0, llama_pos p1) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv || !kv_seq_ok(kv, seq_id_src, __func__) || !kv_seq_ok(kv, seq_id_dst, __func__) || seq_id_src == seq_id_dst) {
        return;
    }
    if (kv->rs) {
        llama_memory_recurrent_seq_cp(kv->rs, seq_id_src, seq_id_dst, p0, p1); // whole, or not at all
    }
    if (kv->swa) {
        llama_memory_seq_cp(kv->swa, seq_id_src, seq_id_dst, p0, p1);
    }
    kv_range(&p0, &p1);
    for (uint32_t i = 0; i < kv->size; i++) {
        const llama_pos p = kv->pos[i];
        if (kv_in_range(p, p0, p1) && llama_kv_cache_seq_has(kv, i, seq_id_src)) {
            kv_seq_set(kv, i, seq_id_dst);
        }
    }
}

void llama_memory_seq_keep(llama_memory_t mem, llama_seq_id seq_id) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv || !kv_seq_ok(kv, seq_id, __func__)) {
        return;
    }
    if (kv->rs) {
        llama_memory_recurrent_seq_keep(kv->rs, seq_id);
    }
    if (kv->swa) {
        llama_memory_seq_keep(kv->swa, seq_id);
    }
    for (uint32_t i = 0; i < kv->size; i++) {
        if (kv->pos[i] < 0) {
            continue;
        }
        if (llama_kv_cache_seq_has(kv, i, seq_id)) {
            memset(&kv->seq[(size_t) i * kv->n_words], 0, kv->n_words * sizeof(uint64_t));
            kv_seq_set(kv, i, seq_id);
        } else {
            llama_kv_cache_cell_clear(kv, i);
        }
    }
}

// Rotates the keys of cells[0..n) by delta[i] positions on the context's thread pool.
static void kv_rotate_keys(struct llama_memory_i * kv, const int32_t * cells, const int32_t * delta, uint32_t n) {
    if (n == 0) {
        return;
    }
    struct llama_context * ctx = kv->lctx;
    struct ggml_tensor *inp_cells = NULL, *inp_delta = NULL;
    // the window part (n_swa > 0) re-rotates the sliding layers' rows, the main part the others'
    struct ggml_cgraph * gf = llama_graph_build_k_shift(ctx, n, kv->n_swa > 0, &inp_cells, &inp_delta);
    if (gf == NULL || !llama_context_alloc_graph(ctx, gf)) {
        LLAMA_LOG_ERROR("llama_memory_seq_add: cannot build the key re-rotation graph; cached keys keep their old rotation\n");
        return;
    }
    llama_context_set_input(ctx, inp_cells, cells, n * sizeof(int32_t));
    llama_context_set_input(ctx, inp_delta, delta, n * sizeof(int32_t));
    const enum ggml_status st = llama_context_compute(ctx, gf, ctx->n_threads_batch);
    if (st != GGML_STATUS_SUCCESS) {
        LLAMA_LOG_ERROR("llama_memory_seq_add: key re-rotation failed (status %d)\n", (int) st);
    }
}

// Moves positions of seq_id in [p0, p1) to f(pos) and re-rotates the moved keys; cells whose
// new position would be negative are removed.
static void kv_seq_move(struct llama_memory_i * kv, llama_seq_id seq_id, llama_pos p0, llama_pos p1, llama_pos delta, int d,
                        const char * func) {
    if (kv->rs) {
        llama_memory_recurrent_seq_move(kv->rs, seq_id, p0, p1, delta, d);
    }
    if (kv->swa) {
        kv_seq_move(kv->swa, seq_id, p0, p1, delta, d, func);
    }
    kv_range(&p0, &p1);
    int32_t * cells = GGML_MALLOC(sizeof(int32_t) * kv->size);
    int32_t * dpos = GGML_MALLOC(sizeof(int32_t) * kv->size);
    if (cells == NULL || dpos == NULL) {
        LLAMA_LOG_ERROR("%s: out of memory\n", func);
        free(cells);
        free(dpos);
        return;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < kv->size; i++) {
        const llama_pos p = kv->pos[i];
        if (!kv_in_range(p, p0, p1) || !llama_kv_cache_seq_has(kv, i, seq_id)) {
            continue;
        }
        const int64_t np = d > 1 ? (int64_t) p / d : (int64_t) p + delta;
        if (np < 0) {
            llama_kv_cache_cell_clear(kv, i);
            continue;
        }
        if (np > INT32_MAX) {
            LLAMA_LOG_ERROR("%s: position %d + %d overflows; cell left unchanged\n", func, p, delta);
            continue;
        }
        if (np == p) {
            continue;
        }
        kv->pos[i] = (llama_pos) np;
        cells[n] = (int32_t) i;
        dpos[n] = (int32_t) (np - p);
        n++;
    }
    kv_rotate_keys(kv, cells, dpos, n);
    free(cells);
    free(dpos);
}

void llama_memory_seq_add(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1, llama_pos delta) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv || !kv_seq_ok(kv, seq_id, __func__) || delta == 0) {
        return;
    }
    kv_seq_move(kv, seq_id, p0, p1, delta, 0, __func__);
}

void llama_memory_seq_div(llama_memory_t mem, llama_seq_id seq_id, llama_pos p0, llama_pos p1, int d) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv || !kv_seq_ok(kv, seq_id, __func__)) {
        return;
    }
    if (d < 1) {
        LLAMA_LOG_ERROR("%s: divisor %d must be >= 1\n", __func__, d);
        return;
    }
    if (d == 1) {
        return;
    }
    kv_seq_move(kv, seq_id, p0, p1, 0, d, __func__);
}

llama_pos llama_memory_seq_pos_min(llama_memory_t mem, llama_seq_id seq_id) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv || !kv_seq_ok(kv, seq_id, __func__)) {
        return -1;
    }
    if (kv->swa) {
        kv = kv->swa; // the oldest position every layer still holds is the window cells' oldest
    }
    llama_pos r = -1;
    for (uint32_t i = 0; i < kv->size; i++) {
        const llama_pos p = kv->pos[i];
        if (p >= 0 && (r < 0 || p < r) && llama_kv_cache_seq_has(kv, i, seq_id)) {
            r = p;
        }
    }
    return r;
}

llama_pos llama_memory_seq_pos_max(llama_memory_t mem, llama_seq_id seq_id) {
    struct llama_memory_i * kv = kv_checked(mem, __func__);
    if (!kv || !kv_seq_ok(kv, seq_id, __func__)) {
        return -1;
    }
    llama_pos r = -1;
    for (uint32_t i = 0; i < kv->size; i++) {
        const llama_pos p = kv->pos[i];
        if (p > r && llama_kv_cache_seq_has(kv, i, seq_id)) {
            r = p;
        }
    }
    return r;
}

bool llama_memory_can_shift(llama_memory_t mem) { return kv_checked(mem, __func__) != NULL; }
