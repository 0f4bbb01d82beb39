// attn-seq.c — attention without flash attention, per sequence (issue #37).
//
// The unified cache holds every sequence's cells in [0, n_kv); the plain path (mul_mat of K and
// Q, softmax with the mask, mul_mat with V) over all of them costs tokens x n_kv, masked, so one
// sequence's step grows with the other sequences' lengths. When the ubatch's tokens each belong
// to one sequence, they are laid out instead as groups (one per sequence) of grp_len token
// slots, each attending over grp_cells cells gathered from its own sequence's cells (get_rows
// of the cache rows): a [grp_cells, grp_len, n_head, grp_n] product, as an encode's groups
// (encode.c) and llama.cpp's per-sequence KV streams have. Short groups are padded: token slots
// repeat the group's first token (their rows are never read back), cells repeat its first cell,
// masked. The plan keeps the unified layout when it is not cheaper (one sequence alone in the
// cache, or a long prompt chunk beside one-token sequences).
#include "llama-context.h"
#include "llama-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Cells per group are rounded up to this, so that a decode step's graph keeps its shapes (and
// can be reused) while the sequences grow.
#define ATTN_SEQ_CELLS_ROUND 32

// The ubatch's distinct sequences in order of first appearance into seqs[] (at most n_seq_max),
// the tokens of each into ntok[] and each token's group into grp[]; 0 when a token has other
// than one valid sequence.
static uint32_t attn_seq_groups(const struct llama_context * ctx, const struct llama_ubatch * ub, llama_seq_id * seqs,
                                uint32_t * ntok, uint32_t * grp) {
    uint32_t n = 0;
    for (int32_t i = 0; i < ub->n_tokens; i++) {
        if (ub->n_seq_id[i] != 1) {
            return 0;
        }
        const llama_seq_id s = ub->seq_id[i][0];
        if (s < 0 || (uint32_t) s >= ctx->kv.n_seq_max) {
            return 0;
        }
        uint32_t g = 0;
        while (g < n && seqs[g] != s) g++;
        if (g == n) {
            seqs[n] = s;
            ntok[n++] = 0;
        }
        ntok[g]++;
        grp[i] = g;
    }
    return n;
}

// One walk over the cells [0, n_kv): each sequence a cell holds that is group g's (gof[s] = g,
// else -1) counts the cell in cnt[g] (zeroed by the caller) and, with cells, lists it at
// cells[g * C + k] while k < C. Bits of the cells' sequence sets, not groups x cells lookups.
static void attn_seq_cells(const struct llama_memory_i * kv, uint32_t n_kv, const int32_t * gof, uint32_t * cnt, int32_t * cells,
                           uint32_t C) {
    for (uint32_t j = 0; j < n_kv; j++) {
        for (uint32_t w = 0; w < kv->n_words; w++) {
            uint64_t b = kv->seq[(size_t) j * kv->n_words + w];
            while (b != 0) {
                const uint32_t s = w * 64 + (uint32_t) __builtin_ctzll(b);
                b &= b - 1;
                const int32_t g = s < kv->n_seq_max ? gof[s] : -1;
                if (g >= 0) {
                    if (cells != NULL && cnt[g] < C) cells[(size_t) g * C + cnt[g]] = (int32_t) j;
                    cnt[g]++;
                }
            }
        }
    }
}

// gof[s]: the group of sequence s among seqs[0..G), else -1.
static void attn_seq_gof(const struct llama_memory_i * kv, const llama_seq_id * seqs, uint32_t G, int32_t * gof) {
    for (uint32_t s = 0; s < kv->n_seq_max; s++) gof[s] = -1;
    for (uint32_t g = 0; g < G; g++) gof[seqs[g]] = (int32_t) g;
}

void llama_attn_seq_plan(const struct llama_context * ctx, struct llama_ubatch * ub) {
    ub->grp_n = ub->grp_len = ub->grp_cells = 0;
    const struct llama_memory_i * kv = &ctx->kv;
    // The window cache keeps the sliding layers' K/V in cells of its own, which the groups do not gather.
    if (ctx->flash_attn || ub->enc_len > 0 || kv->rs != NULL || kv->swa != NULL || ub->n_kv == 0 || ub->n_tokens <= 0 ||
        kv->n_seq_max < 1) {
        return;
    }
    const uint32_t n_seq = kv->n_seq_max;
    llama_seq_id * seqs = malloc(sizeof(llama_seq_id) * n_seq);
    uint32_t * ntok = malloc(sizeof(uint32_t) * n_seq);
    uint32_t * grp = malloc(sizeof(uint32_t) * (size_t) ub->n_tokens);
    int32_t * gof = malloc(sizeof(int32_t) * n_seq);
    uint32_t * cnt = calloc(n_seq, sizeof(uint32_t));
    const uint32_t G = seqs && ntok && grp && gof && cnt ? attn_seq_groups(ctx, ub, seqs, ntok, grp) : 0;
    uint32_t T = 0, C = 0;
    if (G > 0) {
        attn_seq_gof(kv, seqs, G, gof);
        attn_seq_cells(kv, ub->n_kv, gof, cnt, NULL, 0);
    }
    for (uint32_t g = 0; g < G; g++) {
        T = ntok[g] > T ? ntok[g] : T;
        C = cnt[g] > C ? cnt[g] : C;
    }
    C = (C + ATTN_SEQ_CELLS_ROUND - 1) / ATTN_SEQ_CELLS_ROUND * ATTN_SEQ_CELLS_ROUND;
    // the grouped product must be smaller than the unified one
    if (G > 0 && C > 0 && (uint64_t) C * T * G < (uint64_t) ub->n_kv * (uint64_t) ub->n_tokens) {
        ub->grp_n = G;
        ub->grp_len = T;
        ub->grp_cells = C;
    }
    free(seqs);
    free(ntok);
    free(grp);
    free(gof);
    free(cnt);
}

bool llama_attn_seq_set_inputs(struct llama_context * ctx, const struct llama_ubatch * ub,
                               const struct llama_graph_result * res) {
    const struct llama_memory_i * kv = &ctx->kv;
    const uint32_t G = ub->grp_n, T = ub->grp_len, C = ub->grp_cells, n = (uint32_t) ub->n_tokens;
    const size_t n_slots = (size_t) G * T, n_cells = (size_t) G * C, n_mask = n_cells * T;
    llama_seq_id * seqs = malloc(sizeof(llama_seq_id) * kv->n_seq_max);
    uint32_t * ntok = malloc(sizeof(uint32_t) * kv->n_seq_max);
    uint32_t * grp = malloc(sizeof(uint32_t) * n);
    int32_t * toks = malloc(sizeof(int32_t) * n_slots);
    int32_t * rows = malloc(sizeof(int32_t) * n);
    int32_t * cells = malloc(sizeof(int32_t) * n_cells);
    uint32_t * ncell = calloc(G, sizeof(uint32_t));
    int32_t * gof = malloc(sizeof(int32_t) * kv->n_seq_max);
    float * mask = res->inp_grp_mask && res->inp_grp_mask->data ? malloc(sizeof(float) * n_mask) : NULL;
    float * mask_swa = res->inp_grp_mask_swa && res->inp_grp_mask_swa->data ? malloc(sizeof(float) * n_mask) : NULL;
    bool ok = seqs && ntok && grp && toks && rows && cells && ncell && gof &&
        (mask || !res->inp_grp_mask || !res->inp_grp_mask->data) &&
        (mask_swa || !res->inp_grp_mask_swa || !res->inp_grp_mask_swa->data);
    if (!ok) {
        LLAMA_LOG_ERROR("llama_decode: out of memory for the per-sequence attention inputs\n");
    } else if (attn_seq_groups(ctx, ub, seqs, ntok, grp) != G) {
        LLAMA_LOG_ERROR("llama_decode: the ubatch's sequences changed after its graph was planned\n");
        ok = false;
    }
    if (ok) {
        // token slots: the group's tokens in ubatch order, padded with its first token
        memset(ntok, 0, sizeof(uint32_t) * G);
        for (uint32_t i = 0; i < n; i++) {
            const uint32_t slot = grp[i] * T + ntok[grp[i]]++;
            toks[slot] = (int32_t) i;
            rows[i] = (int32_t) slot;
        }
        for (uint32_t g = 0; g < G; g++) {
            for (uint32_t t = ntok[g]; t < T; t++) toks[g * T + t] = toks[g * T];
        }
        // cells: the sequence's cells in [0, n_kv), padded with its first (masked)
        attn_seq_gof(kv, seqs, G, gof);
        attn_seq_cells(kv, ub->n_kv, gof, ncell, cells, C);
        for (uint32_t g = 0; g < G; g++) {
            ncell[g] = ncell[g] < C ? ncell[g] : C;
            for (uint32_t k = ncell[g]; k < C; k++) cells[(size_t) g * C + k] = ncell[g] > 0 ? cells[(size_t) g * C] : 0;
        }
        const llama_pos n_swa = (llama_pos) ctx->model->hparams.n_swa;
        const bool swa_sym = ctx->model->hparams.swa_symmetric;
        for (size_t slot = 0; slot < n_slots && (mask || mask_swa); slot++) {
            const uint32_t g = (uint32_t) (slot / T);
            const llama_pos p = ub->pos[toks[slot]];
            float * row = mask ? mask + slot * C : NULL;
            float * row_swa = mask_swa ? mask_swa + slot * C : NULL;
            for (uint32_t k = 0; k < C; k++) {
                bool in_window = false;
                const bool vis = k < ncell[g] &&
                    llama_attn_visible(kv->pos[cells[(size_t) g * C + k]], p, ctx->causal_attn, n_swa, swa_sym, &in_window);
                if (row) row[k] = vis ? 0.0f : -INFINITY;
                if (row_swa) row_swa[k] = in_window ? 0.0f : -INFINITY;
            }
        }
        llama_context_set_input(ctx, res->inp_grp_toks, toks, n_slots * sizeof(int32_t));
        llama_context_set_input(ctx, res->inp_grp_rows, rows, n * sizeof(int32_t));
        llama_context_set_input(ctx, res->inp_grp_cells, cells, n_cells * sizeof(int32_t));
        if (mask) llama_context_set_input(ctx, res->inp_grp_mask, mask, n_mask * sizeof(float));
        if (mask_swa) llama_context_set_input(ctx, res->inp_grp_mask_swa, mask_swa, n_mask * sizeof(float));
    }
    free(seqs);
    free(ntok);
    free(grp);
    free(toks);
    free(rows);
    free(cells);
    free(ncell);
    free(gof);
    free(mask);
    free(mask_swa);
    return ok;
}
