// fuzz_tokenizer.c — libFuzzer target: llama_tokenize, llama_token_to_piece and
// llama_detokenize on arbitrary bytes against the real vocabularies (vocab-only GGUFs).
//
// Input: byte 0 picks the vocabulary and the flags, byte 1 the size of a deliberately small
// output buffer, the rest is the text (NUL bytes included: lengths are passed, never strlen).
// Checked: a count returned for a too-small buffer equals what a big enough buffer gets, no
// write lands outside the buffers (ASan), every returned token id is in the vocabulary, and
// detokenizing arbitrary ids (also -1, n_vocab, INT32_MAX) is refused or bounded.
//
// Vocabularies: every *.gguf in $LLAMA_FUZZ_VOCAB_DIR (default ../shared/vocab from the
// working directory), loaded once. scripts/fuzz.sh and scripts/test.sh set it to the folder
// `python -m llama_py.pull_vocab` finds or fetches (llama-cpp-python's sdist on PyPI).
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkstemp, opendir under strict C11
#endif
#include "fuzz_common.h"
#include "llama.h"

#include <dirent.h>

#define MAX_VOCABS 8

static struct llama_model * g_models[MAX_VOCABS];
static const struct llama_vocab * g_vocabs[MAX_VOCABS];
static int32_t g_n_vocab[MAX_VOCABS];
static int g_n;

static void load_dir(const char * dir) {
    DIR * d = opendir(dir);
    if (d == NULL) {
        return;
    }
    // Sorted names, so one input means the same vocabulary on every machine.
    char names[MAX_VOCABS][256];
    int n = 0;
    struct dirent * e;
    while ((e = readdir(d)) != NULL && n < MAX_VOCABS) {
        const size_t len = strlen(e->d_name);
        if (len > 5 && len < 200 && strcmp(e->d_name + len - 5, ".gguf") == 0) {
            snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
        }
    }
    closedir(d);
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char tmp[256];
            memcpy(tmp, names[j], sizeof(tmp));
            memcpy(names[j], names[j - 1], sizeof(tmp));
            memcpy(names[j - 1], tmp, sizeof(tmp));
        }
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int) sizeof(path)) {
            continue;
        }
        struct llama_model_params mp = llama_model_default_params();
        mp.vocab_only = true;
        struct llama_model * m = llama_model_load_from_file(path, mp);
        if (m == NULL) {
            fprintf(stderr, "fuzz_tokenizer: cannot load %s\n", path);
            continue;
        }
        g_models[g_n] = m;
        g_vocabs[g_n] = llama_model_get_vocab(m);
        g_n_vocab[g_n] = llama_vocab_n_tokens(g_vocabs[g_n]);
        fprintf(stderr, "fuzz_tokenizer: vocab %d = %s (%d tokens)\n", g_n, names[i], g_n_vocab[g_n]);
        g_n++;
    }
}

int LLVMFuzzerInitialize(int * argc, char *** argv) {
    (void) argc;
    (void) argv;
    fuzz_quiet_library();
    const char * env = getenv("LLAMA_FUZZ_VOCAB_DIR");
    if (env != NULL) {
        load_dir(env);
    } else {
        load_dir("../shared/vocab");
    }
    if (g_n == 0) {
        fprintf(stderr, "fuzz_tokenizer: no vocabulary found (set LLAMA_FUZZ_VOCAB_DIR=$(python -m llama_py.pull_vocab))\n");
        exit(1);
    }
    return 0;
}

volatile size_t fuzz_t_sink;

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 2) {
        return 0;
    }
    const uint8_t sel = data[0];
    const int32_t small = data[1] % 8;   // size of the deliberately small output buffers
    const char * text = (const char *) data + 2;
    const int32_t len = (int32_t) (size - 2);
    const int vi = (sel & 7) % g_n;
    const struct llama_vocab * v = g_vocabs[vi];
    const int32_t n_vocab = g_n_vocab[vi];
    const bool add_special = sel & 8, parse_special = sel & 16;
    const bool remove_special = sel & 32, unparse_special = sel & 64;

    // 1. a buffer that is usually too small: the return is minus the needed count
    llama_token * tiny = malloc(sizeof(llama_token) * (size_t) (small > 0 ? small : 1));
    const int32_t r0 = llama_tokenize(v, text, len, small > 0 ? tiny : NULL, small, add_special, parse_special);
    // 2. room for everything: a first guess, then exactly the count asked for
    int32_t cap = len + 4;
    llama_token * toks = malloc(sizeof(llama_token) * (size_t) cap);
    int32_t n = llama_tokenize(v, text, len, toks, cap, add_special, parse_special);
    if (n < 0) {
        cap = -n;
        free(toks);
        toks = malloc(sizeof(llama_token) * (size_t) cap);
        n = llama_tokenize(v, text, len, toks, cap, add_special, parse_special);
        if (n != cap) {
            fprintf(stderr, "fuzz_tokenizer: tokenize asked for %d slots, then returned %d\n", cap, n);
            abort();
        }
    }
    if (r0 != (n <= small ? n : -n)) {
        fprintf(stderr, "fuzz_tokenizer: with %d slots tokenize returned %d, with %d slots %d\n", small, r0, cap, n);
        abort();
    }
    if (r0 >= 0 && n > 0 && memcmp(tiny, toks, sizeof(llama_token) * (size_t) n) != 0) {
        abort();
    }
    for (int32_t i = 0; i < n; i++) {
        if (toks[i] < 0 || toks[i] >= n_vocab) {
            fprintf(stderr, "fuzz_tokenizer: token %d out of range [0, %d)\n", toks[i], n_vocab);
            abort();
        }
    }
    // negative n_tokens_max: refused without writing
    fuzz_t_sink += (size_t) llama_tokenize(v, text, len, tiny, -1 - small, add_special, parse_special);
    free(tiny);

    // 3. each piece, into a small buffer and then an exact one
    char piece[256];
    for (int32_t i = 0; i < n && i < 64; i++) {
        const int32_t a = llama_token_to_piece(v, toks[i], piece, small, small & 1, unparse_special);
        const int32_t b = llama_token_to_piece(v, toks[i], piece, (int32_t) sizeof(piece), small & 1, unparse_special);
        if (b >= 0 && a != (b <= small ? b : -b)) {
            fprintf(stderr, "fuzz_tokenizer: token_to_piece(%d) gave %d with %d bytes and %d with 256\n", toks[i], a, small, b);
            abort();
        }
    }

    // 4. detokenize: too small, then big enough; the needed length must be consistent
    char * tsmall = malloc((size_t) small + 1);
    const int32_t d0 = llama_detokenize(v, toks, n, tsmall, small, remove_special, unparse_special);
    const int32_t dcap = d0 < 0 ? -d0 : small;
    char * out = malloc((size_t) dcap + 1);
    const int32_t d1 = llama_detokenize(v, toks, n, out, dcap, remove_special, unparse_special);
    if (d0 < 0 && d1 != -d0) {
        fprintf(stderr, "fuzz_tokenizer: detokenize asked for %d bytes, then wrote %d\n", -d0, d1);
        abort();
    }
    free(out);

    // 5. the text's bytes reinterpreted as token ids (mostly invalid ones, plus the edges)
    const int32_t n_ids = len / 4 + 3;
    llama_token * ids = malloc(sizeof(llama_token) * (size_t) n_ids);
    memcpy(ids, text, (size_t) (len / 4) * 4);
    ids[n_ids - 3] = -1;
    ids[n_ids - 2] = n_vocab;
    ids[n_ids - 1] = INT32_MAX;
    for (int32_t i = 0; i < n_ids; i++) {
        if (sel & 128) ids[i] = (llama_token) ((uint32_t) ids[i] % (uint32_t) (n_vocab + 2)) - 1;
        fuzz_t_sink += (size_t) llama_token_to_piece(v, ids[i], piece, (int32_t) sizeof(piece), 0, unparse_special);
        fuzz_t_sink += (size_t) (llama_vocab_get_text(v, ids[i]) != NULL) + llama_vocab_get_attr(v, ids[i]);
    }
    fuzz_t_sink += (size_t) llama_detokenize(v, ids, n_ids, tsmall, small, remove_special, unparse_special);
    fuzz_t_sink += (size_t) llama_detokenize(v, ids, -n_ids, tsmall, small, remove_special, unparse_special);
    free(ids);
    free(tsmall);
    free(toks);
    return 0;
}
