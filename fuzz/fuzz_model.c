// fuzz_model.c — libFuzzer target: llama_model_load_from_file on arbitrary GGUF bytes (the
// metadata, vocabulary and tensor-shape validation of model.c and vocab.c), then, for what
// loads, a context, a decode, tokenization and a state round trip.
//
// Input: a GGUF file (seeds: fuzz/corpus/model/, tiny models written by
// fuzz/make_model_seeds.py). It is written to one temporary file, reused for every input,
// and loaded vocab-only, then fully. Checked: no crash, no sanitizer report, no internal
// assertion; a model that loads gives a context whose decode returns a documented code.
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkstemp, ftruncate, pwrite under strict C11
#endif
#include "fuzz_common.h"
#include "llama.h"

#include <fcntl.h>
#include <unistd.h>

static char g_m_tmp[] = "/tmp/fuzz-model-XXXXXX";
static char g_m_path[64];
static int g_m_fd = -1;

int LLVMFuzzerInitialize(int * argc, char *** argv) {
    (void) argc;
    (void) argv;
    fuzz_quiet_library();
    g_m_fd = mkstemp(g_m_tmp);
    if (g_m_fd < 0) {
        fprintf(stderr, "fuzz_model: cannot create a temporary file\n");
        exit(1);
    }
    unlink(g_m_tmp); // loads go through /proc/self/fd: nothing is left behind
    snprintf(g_m_path, sizeof(g_m_path), "/proc/self/fd/%d", g_m_fd);
    return 0;
}

volatile size_t fuzz_m_sink;

static void exercise(struct llama_model * m) {
    const struct llama_vocab * v = llama_model_get_vocab(m);
    const int32_t n_vocab = llama_vocab_n_tokens(v);
    llama_token toks[32];
    const int32_t n = llama_tokenize(v, "Hello world", 11, toks, 32, true, true);
    char text[256];
    if (n > 0) {
        fuzz_m_sink += (size_t) llama_detokenize(v, toks, n, text, (int32_t) sizeof(text), false, true);
    }
    for (int32_t t = 0; t < n_vocab && t < 8; t++) {
        fuzz_m_sink += (size_t) llama_token_to_piece(v, t, text, (int32_t) sizeof(text), 0, true);
    }
    char buf[128];
    fuzz_m_sink += (size_t) llama_model_desc(m, buf, sizeof(buf));
    fuzz_m_sink += (size_t) llama_model_meta_count(m) + llama_model_n_params(m);
    const char * tmpl = llama_model_chat_template(m, NULL);
    if (tmpl != NULL) {
        const struct llama_chat_message msg = { "user", "hi" };
        fuzz_m_sink += (size_t) llama_chat_apply_template(tmpl, &msg, 1, true, text, (int32_t) sizeof(text));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (ftruncate(g_m_fd, 0) != 0 || pwrite(g_m_fd, data, size, 0) != (ssize_t) size) {
        return 0;
    }
    for (int vocab_only = 1; vocab_only >= 0; vocab_only--) {
        struct llama_model_params mp = llama_model_default_params();
        mp.vocab_only = vocab_only;
        mp.check_tensors = size % 2; // both paths, decided by the input
        struct llama_model * m = llama_model_load_from_file(g_m_path, mp);
        if (m == NULL) {
            continue;
        }
        exercise(m);
        if (!vocab_only) {
            struct llama_context_params cp = llama_context_default_params();
            cp.n_ctx = 16;
            cp.n_batch = 8;
            cp.n_ubatch = 8; // one ubatch: see fuzz/open/model (a ubatch without outputs crashes 1-layer models)
            cp.n_threads = cp.n_threads_batch = 1;
            struct llama_context * ctx = llama_init_from_model(m, cp);
            if (ctx != NULL) {
                const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
                llama_token toks[5];
                for (int i = 0; i < 5; i++) toks[i] = n_vocab > 0 ? (llama_token) (i % n_vocab) : 0;
                const int32_t rc = llama_decode(ctx, llama_batch_get_one(toks, 5));
                if (rc != 0 && rc != -1 && rc != 1 && rc > -2) {
                    fprintf(stderr, "fuzz_model: llama_decode returned %d\n", rc);
                    abort();
                }
                if (rc == 0 && llama_get_logits_ith(ctx, -1) == NULL) {
                    abort(); // a successful decode promised the last row's logits
                }
                const size_t st = llama_state_get_size(ctx);
                uint8_t * sb = st > 0 && st < (64u << 20) ? malloc(st) : NULL;
                if (sb != NULL) {
                    const size_t got = llama_state_get_data(ctx, sb, st);
                    fuzz_m_sink += llama_state_set_data(ctx, sb, got);
                    free(sb);
                }
                llama_free(ctx);
            }
        }
        llama_model_free(m);
    }
    return 0;
}
