// test_robustness.c — nothing a caller sends crashes the library (issue #9), at the C level:
// NULL handles, invalid batches, output getters, memory operations, tokenizer and sampler
// inputs, refused sizes, the replaceable abort hook, and the allocation-failure loop that
// makes each allocation of load -> context -> decode -> tokenize -> sample -> state fail in turn and
// checks that every one ends in a clean error and that a clean run works afterwards.
// Built like every tests/c/test_*.c, so ctest runs it in the ASan + UBSan build too, where
// LeakSanitizer checks the failure paths free what they took.
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkstemp, setjmp with signal masks off
#endif

#include "ggml-impl.h"
#include "gguf.h"
#include "llama.h"
#include "../../fuzz/tiny_model.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_cases, g_failed;
static char g_log[8192];   // text of the log lines since the last log_reset()
static size_t g_log_n;

static void on_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) user_data;
    const size_t n = strlen(text);
    if (g_log_n + n < sizeof(g_log)) {
        memcpy(g_log + g_log_n, text, n + 1);
        g_log_n += n;
    }
    if (getenv("ROBUSTNESS_VERBOSE")) {
        fputs(text, stderr);
    }
}

static void log_reset(void) {
    g_log[0] = '\0';
    g_log_n = 0;
}

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        g_cases++;                                                          \
        if (!(cond)) {                                                      \
            g_failed++;                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n   log: %s\n", g_log);                       \
        }                                                                   \
    } while (0)

// The call must have logged a reason containing `what`.
#define CHECK_LOGGED(what) CHECK(strstr(g_log, what) != NULL, "expected a log line with '%s'", what)

static char g_model_path[] = "/tmp/test-robustness-XXXXXX";

static struct llama_context * new_ctx(struct llama_model * m, uint32_t n_ctx, uint32_t n_batch, uint32_t n_seq) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_ubatch = n_batch < 8 ? n_batch : 8;
    cp.n_seq_max = n_seq;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    return llama_init_from_model(m, cp);
}

// One batch row per token: positions pos0.., sequence seq, output flag on the last row.
static struct llama_batch make_batch(const llama_token * toks, int n, llama_pos pos0, llama_seq_id seq) {
    struct llama_batch b = llama_batch_init(n > 0 ? n : 1, 0, 2);
    if (b.token == NULL) {  // allocation failed (the allocation-failure loop): an empty batch
        return b;
    }
    b.n_tokens = n;
    for (int i = 0; i < n; i++) {
        b.token[i] = toks[i];
        b.pos[i] = pos0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = i == n - 1;
    }
    return b;
}

static int decode_tokens(struct llama_context * ctx, const llama_token * toks, int n, llama_pos pos0, llama_seq_id seq) {
    struct llama_batch b = make_batch(toks, n, pos0, seq);
    const int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc;
}

// pos_min / pos_max of sequences 0 and 1, to compare the cache before and after a call.
struct cache_view {
    llama_pos v[4];
};

static struct cache_view cache_of(struct llama_context * ctx) {
    llama_memory_t mem = llama_get_memory(ctx);
    struct cache_view c = { { llama_memory_seq_pos_min(mem, 0), llama_memory_seq_pos_max(mem, 0),
                              llama_memory_seq_pos_min(mem, 1), llama_memory_seq_pos_max(mem, 1) } };
    return c;
}

static bool same_cache(struct cache_view a, struct cache_view b) { return memcmp(&a, &b, sizeof(a)) == 0; }

// ---------------------------------------------------------------------------------------------

static void test_null_handles(void) {
    log_reset();
    llama_free(NULL);
    llama_model_free(NULL);
    llama_sampler_free(NULL);
    llama_batch_ext_free(NULL);
    llama_adapter_lora_free(NULL);
    gguf_free(NULL);
    ggml_free(NULL);
    struct llama_batch zero;
    memset(&zero, 0, sizeof(zero));
    llama_batch_free(zero);
    CHECK(true, "NULL frees");
    CHECK(llama_decode(NULL, zero) == -1, "decode(NULL)");
    CHECK(llama_get_logits(NULL) == NULL, "get_logits(NULL)");
    CHECK(llama_get_logits_ith(NULL, 0) == NULL, "get_logits_ith(NULL)");
    CHECK(llama_n_ctx(NULL) == 0, "n_ctx(NULL)");
    CHECK(llama_get_memory(NULL) == NULL, "get_memory(NULL)");
    CHECK(llama_model_get_vocab(NULL) == NULL, "get_vocab(NULL)");
    CHECK(llama_model_n_embd(NULL) == 0, "n_embd(NULL)");
    CHECK(llama_init_from_model(NULL, llama_context_default_params()) == NULL, "init_from_model(NULL)");
    CHECK(llama_model_load_from_file(NULL, llama_model_default_params()) == NULL, "load(NULL)");
    CHECK(llama_model_load_from_file("/nonexistent/model.gguf", llama_model_default_params()) == NULL, "load(missing)");
    llama_memory_clear(NULL, true);
    CHECK(!llama_memory_seq_rm(NULL, 0, 0, -1), "seq_rm(NULL)");
    llama_memory_seq_add(NULL, 0, 0, -1, 1);
    llama_memory_seq_div(NULL, 0, 0, -1, 2);
    llama_memory_seq_cp(NULL, 0, 1, 0, -1);
    llama_memory_seq_keep(NULL, 0);
    CHECK(llama_memory_seq_pos_max(NULL, 0) == -1, "pos_max(NULL)");
    llama_token t = 1;
    char buf[8];
    CHECK(llama_tokenize(NULL, "a", 1, &t, 1, false, false) <= 0, "tokenize(NULL vocab)");
    CHECK(llama_token_to_piece(NULL, 1, buf, sizeof(buf), 0, false) <= 0, "token_to_piece(NULL vocab)");
    CHECK(llama_detokenize(NULL, &t, 1, buf, sizeof(buf), false, false) <= 0, "detokenize(NULL vocab)");
    llama_sampler_apply(NULL, NULL);
    llama_sampler_accept(NULL, 0);
    llama_sampler_reset(NULL);
    CHECK(llama_sampler_clone(NULL) == NULL, "sampler_clone(NULL)");
    CHECK(llama_sampler_sample(NULL, NULL, 0) == LLAMA_TOKEN_NULL, "sampler_sample(NULL)");
    CHECK(gguf_init_from_file(NULL, (struct gguf_init_params) { true, NULL }) == NULL, "gguf_init_from_file(NULL)");
    CHECK(gguf_init_from_buffer(NULL, 10, (struct gguf_init_params) { true, NULL }) == NULL, "gguf_init_from_buffer(NULL)");
}

static void test_model_freed_before_context(void) {
    struct llama_model * m = llama_model_load_from_file(g_model_path, llama_model_default_params());
    CHECK(m != NULL, "load");
    if (m == NULL) return;
    struct llama_context * ctx = new_ctx(m, 32, 16, 1);
    CHECK(ctx != NULL, "context");
    llama_model_free(m);
    llama_free(ctx); // must not touch the freed model (ASan would say)
    CHECK(true, "model freed before its context");
}

static void test_batches(struct llama_model * m) {
    struct llama_context * ctx = new_ctx(m, 32, 16, 2);
    CHECK(ctx != NULL, "context");
    if (ctx == NULL) return;
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    llama_memory_t mem = llama_get_memory(ctx);

    log_reset();
    CHECK(llama_get_logits_ith(ctx, 0) == NULL, "logits before any decode");
    CHECK_LOGGED("no logits");
    CHECK(llama_get_logits(ctx) == NULL, "llama_get_logits before any decode");

    const llama_token good[4] = { 1, 262, 263, 264 };
    CHECK(decode_tokens(ctx, good, 4, 0, 0) == 0, "a good decode");
    struct cache_view before = cache_of(ctx);
    float ref[TINY_N_VOCAB];
    memcpy(ref, llama_get_logits_ith(ctx, 3), sizeof(ref));

    // Each bad batch: -1, a logged reason, the cache unchanged, no logits afterwards.
    const llama_token bad_ids[5] = { -1, n_vocab, INT32_MAX, INT32_MIN, n_vocab + 1 };
    for (int i = 0; i < 5; i++) {
        log_reset();
        CHECK(decode_tokens(ctx, &bad_ids[i], 1, 4, 0) == -1, "token %d", bad_ids[i]);
        CHECK_LOGGED("vocabulary");
        CHECK(same_cache(before, cache_of(ctx)), "cache changed by token %d", bad_ids[i]);
        CHECK(llama_get_logits_ith(ctx, 0) == NULL, "logits after a failed decode");
    }
    const llama_pos bad_pos[3] = { -1, INT32_MIN, -1000 };
    for (int i = 0; i < 3; i++) {
        log_reset();
        CHECK(decode_tokens(ctx, good, 1, bad_pos[i], 0) == -1, "pos %d", bad_pos[i]);
        CHECK(same_cache(before, cache_of(ctx)), "cache changed by pos %d", bad_pos[i]);
    }
    // positions duplicated inside the batch
    struct llama_batch b = make_batch(good, 3, 4, 0);
    b.pos[2] = 5;
    log_reset();
    CHECK(llama_decode(ctx, b) == -1, "duplicated positions in a batch");
    b.pos[2] = 6;
    // seq ids out of range, n_seq_id 0 or too large, a NULL seq_id row
    const llama_seq_id bad_seq[4] = { -1, 2, INT32_MAX, INT32_MIN };
    for (int i = 0; i < 4; i++) {
        b.seq_id[1][0] = bad_seq[i];
        log_reset();
        CHECK(llama_decode(ctx, b) == -1, "seq_id %d", bad_seq[i]);
        CHECK_LOGGED("seq_id");
    }
    b.seq_id[1][0] = 0;
    const int32_t bad_nseq[4] = { 0, -1, 3, INT32_MAX };
    for (int i = 0; i < 4; i++) {
        b.n_seq_id[1] = bad_nseq[i];
        log_reset();
        CHECK(llama_decode(ctx, b) == -1, "n_seq_id %d", bad_nseq[i]);
    }
    b.n_seq_id[1] = 1;
    llama_seq_id * keep = b.seq_id[1];
    b.seq_id[1] = NULL;
    log_reset();
    CHECK(llama_decode(ctx, b) == -1, "NULL seq_id row");
    b.seq_id[1] = keep;
    // n_tokens 0, negative, above n_batch
    const int32_t bad_n[4] = { 0, -1, 17, INT32_MAX };
    for (int i = 0; i < 4; i++) {
        struct llama_batch c = b;
        c.n_tokens = bad_n[i];
        log_reset();
        CHECK(llama_decode(ctx, c) == -1, "n_tokens %d", bad_n[i]);
    }
    // token and embd both set / both NULL
    float embd[3 * TINY_N_EMBD] = { 0 };
    struct llama_batch c = b;
    c.embd = embd;
    log_reset();
    CHECK(llama_decode(ctx, c) == -1, "token and embd both set");
    c.embd = NULL;
    c.token = NULL;
    log_reset();
    CHECK(llama_decode(ctx, c) == -1, "token and embd both NULL");
    // non-finite embeddings
    c.embd = embd;
    embd[5] = NAN;
    log_reset();
    CHECK(llama_decode(ctx, c) == -1, "NaN embedding");
    embd[5] = INFINITY;
    CHECK(llama_decode(ctx, c) == -1, "inf embedding");
    CHECK(same_cache(before, cache_of(ctx)), "cache changed by the invalid batches");
    // pos NULL continues the sequence; explicit positions that skip or repeat are refused
    struct llama_batch d = make_batch(good, 1, 10, 0);
    log_reset();
    CHECK(llama_decode(ctx, d) == -1, "position 10 does not continue sequence 0 (last 3)");
    CHECK(same_cache(before, cache_of(ctx)), "cache changed by a gap");
    d.pos[0] = 2;
    log_reset();
    CHECK(llama_decode(ctx, d) == -1, "position 2 repeats sequence 0's cached position");
    CHECK(same_cache(before, cache_of(ctx)), "cache changed by a repeated position");
    llama_batch_free(d);
    llama_batch_free(b);

    // The context still works: decoding the same prompt again gives the same logits.
    llama_memory_clear(mem, true);
    CHECK(decode_tokens(ctx, good, 4, 0, 0) == 0, "decode after the invalid batches");
    const float * l = llama_get_logits_ith(ctx, -1);
    CHECK(l != NULL && memcmp(l, ref, sizeof(ref)) == 0, "same logits as before the invalid batches");

    // output getters: non-output row, out of range either way
    log_reset();
    CHECK(llama_get_logits_ith(ctx, 0) == NULL, "row 0 was not an output");
    CHECK_LOGGED("not marked for output");
    const int32_t bad_rows[5] = { 4, -2, INT32_MAX, INT32_MIN, 1000 };
    for (int i = 0; i < 5; i++) {
        log_reset();
        CHECK(llama_get_logits_ith(ctx, bad_rows[i]) == NULL, "row %d", bad_rows[i]);
        CHECK_LOGGED("out of range");
        CHECK(llama_get_embeddings_ith(ctx, bad_rows[i]) == NULL, "embeddings row %d", bad_rows[i]);
    }
    CHECK(llama_get_embeddings_seq(ctx, -1) == NULL && llama_get_embeddings_seq(ctx, 99) == NULL, "embeddings_seq");

    // memory operations with bad arguments change nothing
    struct cache_view now = cache_of(ctx);
    log_reset();
    CHECK(llama_memory_seq_rm(mem, 0, 3, 1), "seq_rm p0 > p1 is an empty range");
    CHECK(same_cache(now, cache_of(ctx)), "seq_rm p0 > p1 removed something");
    CHECK(!llama_memory_seq_rm(mem, 2, 0, -1) && !llama_memory_seq_rm(mem, INT32_MAX, 0, -1), "seq_rm bad seq");
    llama_memory_seq_cp(mem, 0, 5, 0, -1);
    llama_memory_seq_cp(mem, -7, 1, 0, -1);
    llama_memory_seq_keep(mem, 9);
    llama_memory_seq_keep(mem, -2);
    llama_memory_seq_add(mem, 7, 0, -1, 1);
    llama_memory_seq_div(mem, 0, 0, -1, 0);
    llama_memory_seq_div(mem, 0, 0, -1, -3);
    llama_memory_seq_div(mem, 0, 0, -1, INT32_MIN);
    llama_memory_seq_add(mem, 0, 5, 2, 10);
    CHECK(same_cache(now, cache_of(ctx)), "a refused memory operation changed the cache");
    CHECK(llama_memory_seq_pos_min(mem, 99) == -1 && llama_memory_seq_pos_max(mem, -5) == -1, "pos of bad seq");
    // huge shifts: no overflow (UBSan), positions never negative
    llama_memory_seq_add(mem, 0, -1, -1, INT32_MAX);
    CHECK(llama_memory_seq_pos_max(mem, 0) >= 0, "seq_add INT32_MAX");
    llama_memory_seq_add(mem, 0, -1, -1, INT32_MIN);
    CHECK(llama_memory_seq_pos_min(mem, 0) >= -1, "seq_add INT32_MIN");
    llama_memory_clear(mem, false);
    CHECK(decode_tokens(ctx, good, 4, 0, 0) == 0, "decode after the memory operations");

    // the full cache: 1, cache unchanged, works again after seq_rm
    llama_memory_clear(mem, true);
    llama_token many[16];
    for (int i = 0; i < 16; i++) many[i] = 262 + i % 20;
    CHECK(decode_tokens(ctx, many, 16, 0, 0) == 0, "16 tokens");
    CHECK(decode_tokens(ctx, many, 16, 16, 0) == 0, "32 tokens: full");
    now = cache_of(ctx);
    log_reset();
    CHECK(decode_tokens(ctx, many, 1, 32, 0) == 1, "no KV slot");
    CHECK(same_cache(now, cache_of(ctx)), "a refused decode changed the cache");
    CHECK(llama_memory_seq_rm(mem, 0, 24, -1), "seq_rm");
    CHECK(decode_tokens(ctx, many, 4, 24, 0) == 0, "decode again after seq_rm");
    CHECK(llama_get_logits_ith(ctx, -1) != NULL, "logits again");
    llama_free(ctx);
}

static void test_tokenizer(struct llama_model * m) {
    const struct llama_vocab * v = llama_model_get_vocab(m);
    const int32_t n_vocab = llama_vocab_n_tokens(v);
    llama_token toks[64];
    for (int i = 0; i < 64; i++) toks[i] = -77;
    // invalid UTF-8 of every kind, embedded NUL: tokens in range, nothing past the buffer
    const char * bad[] = { "\xe2\x82",         "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\x80\x80", "\xf8\x88\x80\x80\x80",
                           "\xf4\x90\x80\x80", "\xff\xfe", "a\xc3" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const int32_t n = llama_tokenize(v, bad[i], (int32_t) strlen(bad[i]), toks, 32, true, true);
        bool in_range = n > 0;
        for (int32_t j = 0; j < n; j++) in_range = in_range && toks[j] >= 0 && toks[j] < n_vocab;
        CHECK(in_range && toks[32] == -77, "invalid UTF-8 #%zu: %d tokens", i, n);
    }
    const char nul[] = "a\0b";
    const int32_t n3 = llama_tokenize(v, nul, 3, toks, 32, false, false);
    const int32_t n1 = llama_tokenize(v, nul, 1, toks + 32, 16, false, false);
    CHECK(n3 > n1 && n1 > 0, "embedded NUL counted (%d vs %d tokens)", n3, n1);
    // n_tokens_max negative / too small: minus the count, nothing written
    for (int i = 0; i < 64; i++) toks[i] = -77;
    const int32_t need = llama_tokenize(v, "Hello world", 11, toks, -5, true, false);
    CHECK(need < 0 && toks[0] == -77, "n_tokens_max -5 -> %d", need);
    const int32_t need2 = llama_tokenize(v, "Hello world", 11, toks, 1, true, false);
    CHECK(need2 == need && toks[1] == -77, "n_tokens_max 1 -> %d", need2);
    CHECK(llama_tokenize(v, "abc", -1, toks, 8, false, false) <= 0, "negative text_len");
    CHECK(llama_tokenize(v, NULL, 5, toks, 8, false, false) <= 0, "NULL text with a length");
    CHECK(llama_tokenize(v, NULL, 0, toks, 8, false, false) == 0, "empty text");
    // invalid ids to token_to_piece / detokenize
    char buf[64];
    memset(buf, 'x', sizeof(buf));
    const llama_token ids[5] = { -1, n_vocab, INT32_MAX, INT32_MIN, n_vocab + 100 };
    for (int i = 0; i < 5; i++) {
        log_reset();
        CHECK(llama_token_to_piece(v, ids[i], buf, sizeof(buf), 0, true) <= 0 && buf[0] == 'x', "piece of %d", ids[i]);
        CHECK_LOGGED("invalid token");
    }
    CHECK(llama_token_to_piece(v, 262, buf, -3, 0, false) <= 0, "negative length");
    CHECK(llama_token_to_piece(v, 262, buf, 8, INT32_MAX, false) >= 0, "huge lstrip");
    const int32_t d = llama_detokenize(v, ids, 5, buf, sizeof(buf), false, true);
    CHECK(d == 0, "detokenize of invalid ids only: %d", d);
    CHECK(llama_detokenize(v, ids, -5, buf, sizeof(buf), false, true) <= 0, "negative n_tokens");
    const llama_token ok_ids[3] = { 262, 263, 264 };
    memset(buf, 'x', sizeof(buf));
    const int32_t dn = llama_detokenize(v, ok_ids, 3, buf, 1, false, false);
    CHECK(dn < 0 && buf[1] == 'x', "detokenize into 1 byte: %d", dn);
    CHECK(llama_detokenize(v, ok_ids, 3, buf, -1, false, false) < 0, "text_len_max negative");
}

static void test_samplers(void) {
    llama_token_data cand[6];
    const float logits[6] = { 1.0f, NAN, INFINITY, -INFINITY, 2.0f, NAN };
    struct llama_sampler * s[] = {
        llama_sampler_init_greedy(),
        llama_sampler_init_dist(1),
        llama_sampler_init_top_k(-5),
        llama_sampler_init_top_k(INT32_MAX),
        llama_sampler_init_top_p(-1.0f, 0),
        llama_sampler_init_top_p(NAN, 1),
        llama_sampler_init_min_p(2.0f, 0),
        llama_sampler_init_min_p(NAN, 0),
        llama_sampler_init_typical(-3.0f, 0),
        llama_sampler_init_temp(-1.0f),
        llama_sampler_init_temp(NAN),
        llama_sampler_init_temp(INFINITY),
        llama_sampler_init_temp_ext(1.0f, -5.0f, NAN),
        llama_sampler_init_xtc(2.0f, -1.0f, 0, 3),
        llama_sampler_init_top_n_sigma(-1.0f),
        llama_sampler_init_mirostat(6, 1, -1.0f, NAN, 0),
        llama_sampler_init_mirostat_v2(1, NAN, -2.0f),
        llama_sampler_init_penalties(6, -7, NAN, INFINITY, -1.0f),
        llama_sampler_init_logit_bias(6, -3, NULL),
        llama_sampler_init_adaptive_p(NAN, -1.0f, 2),
    };
    const int n_s = (int) (sizeof(s) / sizeof(s[0]));
    for (int i = 0; i < n_s; i++) {
        for (int empty = 0; empty < 2; empty++) {
            for (int j = 0; j < 6; j++) cand[j] = (llama_token_data) { j, logits[j], 0.0f };
            llama_token_data_array arr = { empty ? NULL : cand, empty ? 0 : 6, -1, false };
            if (s[i] == NULL) {
                continue; // a refused parameter set is a clean answer too
            }
            llama_sampler_apply(s[i], &arr);
            CHECK(arr.size <= 6 && arr.selected >= -1 && arr.selected < (int64_t) arr.size,
                  "sampler %s (%s): size %zu selected %lld", llama_sampler_name(s[i]), empty ? "empty" : "NaN/inf", arr.size,
                  (long long) arr.selected);
            if (!empty && arr.selected >= 0) {
                CHECK(!isnan(arr.data[arr.selected].logit), "sampler %s picked a NaN logit", llama_sampler_name(s[i]));
            }
            llama_sampler_accept(s[i], empty ? -1 : 2);
        }
        llama_sampler_free(s[i]);
    }
    // logit bias with ids outside the vocabulary
    const llama_logit_bias lb[3] = { { -1, 5.0f }, { 6, 1.0f }, { INT32_MAX, NAN } };
    struct llama_sampler * b = llama_sampler_init_logit_bias(6, 3, lb);
    if (b != NULL) {
        for (int j = 0; j < 6; j++) cand[j] = (llama_token_data) { j, 1.0f, 0.0f };
        llama_token_data_array arr = { cand, 6, -1, false };
        llama_sampler_apply(b, &arr);
        CHECK(true, "logit bias with bad ids");
        llama_sampler_free(b);
    }
    // chain accessors out of range
    struct llama_sampler * chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    CHECK(llama_sampler_chain_get(chain, 1) == NULL && llama_sampler_chain_get(chain, -1) == NULL, "chain_get");
    CHECK(llama_sampler_chain_remove(chain, 5) == NULL && llama_sampler_chain_remove(chain, -1) == NULL, "chain_remove");
    llama_sampler_chain_add(chain, NULL);
    CHECK(llama_sampler_chain_n(chain) == 1, "chain_add(NULL) adds nothing");
    llama_sampler_free(chain);
}

static void test_sizes(struct llama_model * m) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 0x7FFFFFFF; // ~1 TB of KV cache for this model
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    log_reset();
    struct llama_context * ctx = llama_init_from_model(m, cp);
    CHECK(ctx == NULL, "n_ctx 2^31-1 must be refused");
    llama_free(ctx);
    // the message says how many bytes: 2 layers x (K + V) x 32 floats x n_ctx
    char want[64];
    snprintf(want, sizeof(want), "%llu bytes", 2ull * 2ull * 32ull * 4ull * 0x7FFFFFFFull);
    CHECK_LOGGED(want);
    const int32_t bad[3][3] = { { -1, 0, 1 }, { 1, -1, 1 }, { 1, 0, 0 } };
    for (int i = 0; i < 3; i++) {
        struct llama_batch b = llama_batch_init(bad[i][0], bad[i][1], bad[i][2]);
        CHECK(b.token == NULL && b.embd == NULL && b.seq_id == NULL, "batch_init(%d, %d, %d)", bad[i][0], bad[i][1], bad[i][2]);
        llama_batch_free(b);
    }
}

// A 1-layer model decoding a prompt that spans two ubatches, the first without output rows.
// Run in a child process: the bug this guards against was a SIGSEGV.
static void test_one_layer_model(void) {
    char path[] = "/tmp/test-robustness-1layer-XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0 && close(fd) == 0 && tiny_model_write_layers(path, 1), "write a 1-layer model");
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        struct llama_model * m = llama_model_load_from_file(path, llama_model_default_params());
        struct llama_context * ctx = m ? new_ctx(m, 32, 16, 1) : NULL; // n_ubatch 8
        const llama_token toks[10] = { 1, 262, 263, 264, 265, 266, 267, 268, 269, 270 };
        const int rc = ctx ? decode_tokens(ctx, toks, 10, 0, 0) : -100;
        const bool ok = rc == 0 && llama_get_logits_ith(ctx, -1) != NULL;
        llama_free(ctx);
        llama_model_free(m);
        _exit(ok ? 0 : 3);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "one-layer model, 10 tokens in ubatches of 8: %s %d (context.c ctx_set_inputs writes inp_mask, which has no memory "
          "when graph.c stops before attention)",
          WIFSIGNALED(st) ? "killed by signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    unlink(path);
}

// ---------------------------------------------------------------------------------------------
// the abort hook

static jmp_buf g_jmp;
static int g_hook_calls;

static void hook_longjmp(const char * file, int line, const char * message) {
    (void) file;
    (void) line;
    (void) message;
    g_hook_calls++;
    longjmp(g_jmp, 1);
}

static void test_abort_hook(void) {
    ggml_set_abort_hook(hook_longjmp);
    if (setjmp(g_jmp) == 0) {
        ggml_abort(__FILE__, __LINE__, "test invariant");
    }
    CHECK(g_hook_calls == 1, "the host's abort hook runs instead of abort()");
    ggml_set_abort_hook(NULL);
}

// ---------------------------------------------------------------------------------------------
// allocation failures

// Everything a host does once: read the GGUF, load, context, decode, shift, tokenize, sample,
// save and restore the state. Returns how far it got (0..9), 9 = everything succeeded. Frees everything in every case.
static int full_run(void) {
    int stage = 0;
    struct gguf_context * g = gguf_init_from_file(g_model_path, (struct gguf_init_params) { true, NULL });
    if (g == NULL) return stage;
    gguf_free(g);
    stage++;
    struct llama_model * m = llama_model_load_from_file(g_model_path, llama_model_default_params());
    if (m == NULL) return stage;
    stage++;
    struct llama_context * ctx = new_ctx(m, 32, 8, 2);
    struct llama_sampler * chain = NULL;
    if (ctx == NULL) goto done;
    stage++;
    const llama_token toks[5] = { 1, 262, 263, 264, 265 };
    if (decode_tokens(ctx, toks, 5, 0, 0) != 0) goto done;
    stage++;
    if (decode_tokens(ctx, toks, 2, 5, 0) != 0 || llama_get_logits_ith(ctx, -1) == NULL) goto done;
    stage++;
    llama_memory_seq_cp(llama_get_memory(ctx), 0, 1, -1, -1);
    llama_memory_seq_add(llama_get_memory(ctx), 1, 2, -1, 3);
    if (decode_tokens(ctx, toks, 2, 10, 1) != 0) goto done;
    stage++;
    llama_token out[32];
    const struct llama_vocab * v = llama_model_get_vocab(m);
    const int32_t n = llama_tokenize(v, "Hello the world", 15, out, 32, true, false);
    char text[64];
    if (n <= 0 || llama_detokenize(v, out, n, text, sizeof(text), false, false) <= 0) goto done;
    stage++;
    chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    if (chain == NULL) goto done;
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(10));
    llama_sampler_chain_add(chain, llama_sampler_init_temp(0.8f));
    llama_sampler_chain_add(chain, llama_sampler_init_dist(7));
    if (llama_sampler_chain_n(chain) != 3) goto done;
    const llama_token t = llama_sampler_sample(chain, ctx, -1);
    if (t < 0 || t >= TINY_N_VOCAB) goto done;
    stage++;
    {
        // state: whole context, then one sequence into another
        const size_t n_st = llama_state_get_size(ctx);
        uint8_t * st = n_st > 0 ? malloc(n_st) : NULL;
        const bool ok_full =
            st != NULL && llama_state_get_data(ctx, st, n_st) == n_st && llama_state_set_data(ctx, st, n_st) == n_st;
        free(st);
        if (!ok_full) goto done;
        const size_t n_seq = llama_state_seq_get_size(ctx, 0);
        st = n_seq > 0 ? malloc(n_seq) : NULL;
        const bool ok_seq = st != NULL && llama_state_seq_get_data(ctx, st, n_seq, 0) == n_seq &&
            llama_state_seq_set_data(ctx, st, n_seq, 1) == n_seq;
        free(st);
        if (!ok_seq) goto done;
    }
    stage++;
done:
    llama_sampler_free(chain);
    llama_free(ctx);
    llama_model_free(m);
    return stage;
}

static void test_alloc_failures(void) {
    ggml_test_fail_alloc_after(1LL << 40); // count only
    const int clean = full_run();
    const int64_t total = ggml_test_alloc_count();
    ggml_test_fail_alloc_after(-1);
    CHECK(clean == 9, "the clean run completes (stage %d)", clean);
    CHECK(total > 20, "the run allocates through the wrappers (%lld allocations)", (long long) total);
    int absorbed = 0, by_stage[10] = { 0 };
    int64_t k = 0;
    for (; k < total + 4; k++) {
        ggml_test_fail_alloc_after(k);
        const int got = full_run();
        const int64_t seen = ggml_test_alloc_count();
        ggml_test_fail_alloc_after(-1);
        by_stage[got]++;
        if (seen <= k) {
            break; // allocation k never happened: every one has been failed once
        }
        absorbed += got == 9; // the failure was survived (a fallback), not an error
    }
    CHECK(full_run() == 9, "a clean run after %lld failure runs", (long long) k);
    printf("  alloc failures: %lld runs (allocation k of %lld failed in run k); stopped at stage", (long long) k,
           (long long) total);
    for (int i = 0; i < 10; i++) printf(" %d:%d", i, by_stage[i]);
    printf("; %d failures absorbed\n", absorbed);
}

int main(void) {
    llama_log_set(on_log, NULL);
    const int fd = mkstemp(g_model_path);
    if (fd < 0 || close(fd) != 0 || !tiny_model_write(g_model_path)) {
        fprintf(stderr, "cannot write the tiny model to %s\n", g_model_path);
        return 1;
    }
    test_null_handles();
    test_model_freed_before_context();
    struct llama_model * m = llama_model_load_from_file(g_model_path, llama_model_default_params());
    CHECK(m != NULL, "load the tiny model");
    if (m != NULL) {
        test_batches(m);
        test_tokenizer(m);
        test_sizes(m);
        llama_model_free(m);
    }
    test_samplers();
    test_one_layer_model();
    test_abort_hook();
    test_alloc_failures();
    unlink(g_model_path);
    llama_log_set(NULL, NULL);
    printf("test_robustness: %d checks, %d failed\n", g_cases, g_failed);
    return g_failed == 0 ? 0 : 1;
}
