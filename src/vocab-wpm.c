// vocab-wpm.c — WordPiece tokenization (llama.cpp's WPM vocabulary type, tokenizer.ggml.model
// "bert"), as BERT's tokenizer does it:
//
//   normalize   NFD and drop accent marks (strip_accents), lowercase, drop NUL / U+FFFD /
//               control characters
//   split       on white space; each punctuation character, ASCII symbol and CJK ideograph is
//               a word of its own
//   match       per word, greedy longest match from the left: the first piece is looked up as
//               "▁" + piece (the converter stores word-initial tokens so), the later ones as
//               they are (BERT's "##" continuation prefix is dropped on conversion); a word
//               with a piece that matches nothing becomes one [UNK]
//
// The normalizer options come from tokenizer.ggml.normalizer.lowercase / strip_accents (both
// true when absent, strip_accents following lowercase), read by vocab.c.
#include "llama-vocab.h"
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

// BERT's CJK ideograph ranges (as Hugging Face's tokenizers and llama.cpp list them).
static bool wpm_is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
        (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
        (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Growable byte buffer of the current word; oom set when memory runs out.
struct wpm_word {
    char * data;
    size_t n, cap;
    bool oom;
};

static void wpm_word_add(struct wpm_word * w, const char * s, size_t n) {
    if (w->n + n > w->cap) {
        const size_t cap = (w->n + n) * 2 + 64;
        char * p = GGML_REALLOC(w->data, cap);
        if (p == NULL) {
            w->oom = true;
            return;
        }
        w->data = p;
        w->cap = cap;
    }
    memcpy(w->data + w->n, s, n);
    w->n += n;
}

// Appends the tokens of one normalized word (w->data[3..] after the "▁" prefix at [0, 3)).
static void wpm_match_word(const struct llama_vocab * v, const struct wpm_word * w, struct llama_vocab_tokens * out) {
    const size_t n = w->n, n0 = out->n;
    for (size_t i = 0; i < n;) {
        size_t j = i + v->max_token_len < n ? i + v->max_token_len : n;
        llama_token id = -1;
        for (; j > i; j--) {
            if ((id = llama_vocab_find(v, w->data + i, j - i)) >= 0) {
                break;
            }
        }
        if (id < 0) {
            out->n = n0; // the whole word is unknown
            break;
        }
        llama_vocab_tokens_push(out, id);
        i = j;
    }
    if (out->n == n0) {
        llama_vocab_tokens_push(out, v->unk);
    }
}

// Ends the current word (if any) and starts the next.
static void wpm_flush(const struct llama_vocab * v, struct wpm_word * w, struct llama_vocab_tokens * out) {
    if (w->n > 3) {
        wpm_match_word(v, w, out);
    }
    w->n = 3; // keep the "▁" prefix
}

void llama_vocab_wpm_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out) {
    struct wpm_word w = { NULL, 0, 0, false };
    wpm_word_add(&w, "\xe2\x96\x81", 3);
    for (size_t pos = 0; pos < len && !w.oom;) {
        size_t clen;
        const uint32_t cp0 = unicode_utf8_decode((const uint8_t *) text + pos, len - pos, &clen);
        pos += clen;
        if (cp0 == UNICODE_INVALID) {
            continue; // an invalid byte is dropped as U+FFFD is
        }
        uint32_t parts[UNICODE_NFD_MAX];
        const size_t np = v->wpm_strip_accents ? unicode_nfd(cp0, parts) : (parts[0] = cp0, 1);
        for (size_t k = 0; k < np; k++) {
            const uint32_t cp = parts[k];
            const uint8_t val = unicode_cpt_value(cp);
            const enum unicode_gc gc = (enum unicode_gc)(val & 0x1F);
            if (val & UNICODE_WS_BIT) {
                wpm_flush(v, &w, out);
                continue;
            }
            if (cp == 0 || cp == 0xFFFD || gc == UNICODE_GC_CC || gc == UNICODE_GC_CF || gc == UNICODE_GC_CO ||
                gc == UNICODE_GC_CS) {
                continue;
            }
            if (v->wpm_strip_accents && (gc == UNICODE_GC_MN || gc == UNICODE_GC_MC || gc == UNICODE_GC_ME)) {
                continue;
            }
            char buf[4];
            const size_t n = unicode_utf8_encode(v->wpm_lowercase ? unicode_tolower(cp) : cp, buf);
            const bool punct = gc >= UNICODE_GC_PC && gc <= UNICODE_GC_PO;
            const bool symbol = cp < 0x7F && gc >= UNICODE_GC_SM && gc <= UNICODE_GC_SO;
            if (punct || symbol || wpm_is_cjk(cp)) {
                wpm_flush(v, &w, out);
                wpm_word_add(&w, buf, n);
                wpm_flush(v, &w, out);
            } else {
                wpm_word_add(&w, buf, n);
            }
        }
    }
    if (!w.oom) {
        wpm_flush(v, &w, out);
    } else {
        out->oom = true;
    }
    free(w.data);
}
