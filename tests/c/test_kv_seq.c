// test_kv_seq.c — attention per sequence (issue #37): with several sequences in one context,
// the flash-attention work of one sequence's step (the cells of K it scores, counted by
// ggml_cpu_fa_cells_scored) does not grow with the other sequences' lengths, whether they were
// decoded before it or step by step beside it as a server's slots are. The KV cache gives each
// sequence its own pages of cells (LLAMA_KV_PAGE), so one sequence's cells never share a flash
// attention block with another's. Deterministic: counts, not timings.
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkstemp
#endif

#include "llama.h"
#include "llama-context.h"
#include "ggml-cpu/attn.h"
#include "../../fuzz/tiny_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int g_cases, g_failed;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        g_cases++;                                                          \
        if (!(cond)) {                                                      \
            g_failed++;                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

static void quiet(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) text;
    (void) user_data;
}

// Decodes one token of each sequence in seqs[0..n) at position pos[seq] (then advanced); returns
// the cells flash attention scored, or -1 if the decode failed.
static int64_t step(struct llama_context * ctx, const llama_seq_id * seqs, int n, llama_pos * pos) {
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = 3 + (seqs[i] * 7 + pos[seqs[i]]) % 200;
        b.pos[i] = pos[seqs[i]]++;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seqs[i];
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    ggml_cpu_fa_cells_reset();
    const int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc == 0 ? ggml_cpu_fa_cells_scored() : -1;
}

// A prompt of n tokens for sequence s.
static bool prompt(struct llama_context * ctx, llama_seq_id s, int n, llama_pos * pos) {
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = 3 + (s * 11 + i) % 200;
        b.pos[i] = pos[s]++;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = s;
        b.logits[i] = i == n - 1;
    }
    b.n_tokens = n;
    const int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc == 0;
}

// The work of a step of sequence 0 alone after sequence 1 (and 2, 3) got `other` prompt tokens and
// then `steps` steps side by side with sequence 0 (its cells interleaved with 0's, as a server's).
static int64_t seq0_work(struct llama_model * m, int other, int steps, int64_t * batched) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_seq_max = 4;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
    struct llama_context * ctx = llama_init_from_model(m, cp);
    if (ctx == NULL) return -1;
    llama_pos pos[4] = { 0, 0, 0, 0 };
    int64_t w = -1;
    if (prompt(ctx, 0, 20, pos) && prompt(ctx, 1, other, pos) && prompt(ctx, 2, 5, pos) && prompt(ctx, 3, other / 2 + 1, pos)) {
        const llama_seq_id all[4] = { 0, 1, 2, 3 };
        bool ok = true;
        for (int k = 0; k < steps && ok; k++) ok = step(ctx, all, 4, pos) >= 0;
        const llama_seq_id one = 0;
        w = ok ? step(ctx, &one, 1, pos) : -1;
        // one step of every sequence: each sequence's cells are scored by the tiles of its rows
        // only, so the total follows the sum of the lengths, not sequences x all cells
        *batched = ok ? step(ctx, all, 4, pos) : -1;
    }
    llama_free(ctx);
    return w;
}

// Without flash attention: the cells the plain path's product covers for sequence 0's step alone
// (the graph's group width, attn-seq.c) after sequence 1 got `other` prompt tokens, and its logits
// (n_vocab floats into lg); *batched: the width of a step of both sequences. -1 if a decode failed.
static int64_t plain_work(struct llama_model * m, int other, int64_t * batched, float * lg) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_seq_max = other > 0 ? 2 : 1;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context * ctx = llama_init_from_model(m, cp);
    if (ctx == NULL) return -1;
    llama_pos pos[2] = { 0, 0 };
    int64_t w = -1;
    *batched = -1;
    if (prompt(ctx, 0, 20, pos) && (other == 0 || prompt(ctx, 1, other, pos))) {
        const llama_seq_id one = 0;
        if (step(ctx, &one, 1, pos) >= 0) {
            // the product is [grp_cells, grp_len, n_head, grp_n]; 0 groups: over [0, n_kv)
            w = ctx->graph_key.grp_n > 0 ? (int64_t) ctx->graph_key.grp_cells : (int64_t) ctx->graph_key.n_kv;
            const float * l = llama_get_logits_ith(ctx, 0);
            const int32_t nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
            for (int32_t i = 0; l != NULL && i < nv; i++) lg[i] = l[i];
        }
        const llama_seq_id both[2] = { 0, 1 };
        if (other > 0 && step(ctx, both, 2, pos) >= 0) {
            *batched = ctx->graph_key.grp_n > 0 ? (int64_t) ctx->graph_key.grp_cells * ctx->graph_key.grp_n : -1;
        }
    }
    llama_free(ctx);
    return w;
}

int main(void) {
    llama_log_set(quiet, NULL);
    char path[] = "/tmp/test-kv-seq-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0 || close(fd) != 0 || !tiny_model_write(path)) {
        fprintf(stderr, "cannot write the tiny model to %s\n", path);
        return 1;
    }
    struct llama_model * m = llama_model_load_from_file(path, llama_model_default_params());
    CHECK(m != NULL, "load the tiny model");
    if (m != NULL) {
        int64_t b_short = 0, b_long = 0, b_longer = 0;
        const int64_t w_short = seq0_work(m, 8, 30, &b_short);
        const int64_t w_long = seq0_work(m, 300, 30, &b_long);
        const int64_t w_longer = seq0_work(m, 500, 100, &b_longer);
        CHECK(w_short > 0 && b_short > 0, "the steps ran (%lld, %lld)", (long long) w_short, (long long) b_short);
        // sequence 0 holds 20 + 30 (+ 1) cells, 20 + 100 (+ 1) in the last case: per layer and KV
        // head it scores exactly those (the tiny model: 2 layers, 1 KV head)
        CHECK(w_short == 2 * (20 + 30 + 1), "seq 0 alone scores its own cells: %lld", (long long) w_short);
        CHECK(w_long == w_short, "seq 0's work does not grow with seq 1's 300 cells: %lld vs %lld", (long long) w_long,
              (long long) w_short);
        CHECK(w_longer == 2 * (20 + 100 + 1), "seq 0's work with 500-cell neighbours: %lld", (long long) w_longer);
        // the batched step: every sequence in one tile (the tiny model's 2 heads per KV head: 8
        // positions per tile), which scores the union of their cells, each once
        const int64_t cells_short = (20 + 31 + 1) + (8 + 30 + 1) + (5 + 30 + 1) + (5 + 30 + 1);
        CHECK(b_short == 2 * cells_short, "batched step scores each cell once: %lld vs %lld", (long long) b_short,
              (long long) (2 * cells_short));
        CHECK(b_long - b_short == 2 * ((300 - 8) + (151 - 5)), "batched step grows by the longer sequences' own cells: %lld",
              (long long) (b_long - b_short));

        // the plain path (flash attention off): sequence 0's step covers its own 21 cells (in a
        // group of 32), whether sequence 1 holds 0, 300 or 500 cells, and gives the logits it
        // gives alone in the cache; a step of both covers each sequence's cells in one group
        const int32_t nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
        float *l_alone = calloc((size_t) nv, sizeof(float)), *l_300 = calloc((size_t) nv, sizeof(float)),
              *l_500 = calloc((size_t) nv, sizeof(float));
        int64_t pb0 = 0, pb300 = 0, pb500 = 0;
        const int64_t p0 = plain_work(m, 0, &pb0, l_alone);
        const int64_t p300 = plain_work(m, 300, &pb300, l_300);
        const int64_t p500 = plain_work(m, 500, &pb500, l_500);
        CHECK(p0 > 0 && p300 > 0 && p500 > 0, "the plain steps ran (%lld, %lld, %lld)", (long long) p0, (long long) p300,
              (long long) p500);
        CHECK(p300 == 32 && p500 == 32, "seq 0's plain step covers its own cells: %lld, %lld (alone: %lld)", (long long) p300,
              (long long) p500, (long long) p0);
        CHECK(pb300 == 2 * 320 && pb500 == 2 * 512, "a step of both: 2 groups of the longer one's cells: %lld, %lld",
              (long long) pb300, (long long) pb500);
        float d300 = 0.0f, d500 = 0.0f;
        for (int32_t i = 0; i < nv; i++) {
            d300 = fmaxf(d300, fabsf(l_300[i] - l_alone[i]));
            d500 = fmaxf(d500, fabsf(l_500[i] - l_alone[i]));
        }
        CHECK(d300 <= 1e-5f && d500 <= 1e-5f, "seq 0's logits as alone: max diff %g, %g", (double) d300, (double) d500);
        free(l_alone);
        free(l_300);
        free(l_500);
        llama_model_free(m);
    }
    unlink(path);
    printf("test_kv_seq: %d cases, %d failed\n", g_cases, g_failed);
    return g_failed != 0;
}
