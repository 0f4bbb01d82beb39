// vocab-dna.c — tokenizer.ggml.model "hybriddna": byte-level BPE for text, and DNA between
// <dna> and </dna> as k-mers of 6 bases. A k-mer is upper-cased, the last one padded with 'A',
// and looked up as its text followed by the marker U+E000 (the converter adds it so that a
// k-mer keeps its own id beside a BPE token of the same letters); a k-mer not in the vocabulary
// is <oov>. An unclosed <dna> runs to the end of the text.
#include "llama-vocab.h"

#include <string.h>

#define DNA_K 6
static const char DNA_MARKER[3] = { (char) 0xEE, (char) 0x80, (char) 0x80 };  // U+E000

static const char * dna_find(const char * s, size_t n, const char * pat) {
    const size_t m = strlen(pat);
    for (size_t i = 0; i + m <= n; i++) {
        if (memcmp(s + i, pat, m) == 0) {
            return s + i;
        }
    }
    return NULL;
}

static void dna_kmers(const struct llama_vocab * v, const char * s, size_t n, struct llama_vocab_tokens * out) {
    for (size_t i = 0; i < n; i += DNA_K) {
        char kmer[DNA_K + sizeof(DNA_MARKER)];
        for (size_t k = 0; k < DNA_K; k++) {
            const char c = i + k < n ? s[i + k] : 'A';
            kmer[k] = (c >= 'a' && c <= 'z') ? (char) (c - 32) : c;
        }
        memcpy(kmer + DNA_K, DNA_MARKER, sizeof(DNA_MARKER));
        const llama_token id = llama_vocab_find(v, kmer, sizeof(kmer));
        llama_vocab_tokens_push(out, id >= 0 ? id : v->dna_oov);
    }
}

void llama_vocab_dna_tokenize(const struct llama_vocab * v, const char * text, size_t len,
                              void (*stretch)(const struct llama_vocab *, const char *, size_t, struct llama_vocab_tokens *),
                              struct llama_vocab_tokens * out) {
    if (v->dna_open < 0 || v->dna_close < 0 || v->dna_oov < 0) {
        stretch(v, text, len, out);
        return;
    }
    const char * p = text;
    const char * end = text + len;
    while (p < end) {
        const char * open = dna_find(p, (size_t) (end - p), "<dna>");
        if (open == NULL) {
            stretch(v, p, (size_t) (end - p), out);
            return;
        }
        if (open > p) {
            stretch(v, p, (size_t) (open - p), out);
        }
        llama_vocab_tokens_push(out, v->dna_open);
        const char * body = open + 5;
        const char * close = dna_find(body, (size_t) (end - body), "</dna>");
        dna_kmers(v, body, (size_t) ((close ? close : end) - body), out);
        if (close == NULL) {
            return;
        }
        llama_vocab_tokens_push(out, v->dna_close);
        p = close + 6;
    }
}

size_t llama_vocab_dna_text_len(const struct llama_vocab * v, llama_token id, const char * s, size_t n) {
    if (v->bpe_session != LLAMA_VOCAB_BPE_DNA || v->dna_oov < 0 || id <= v->dna_oov || n <= sizeof(DNA_MARKER) ||
        memcmp(s + n - sizeof(DNA_MARKER), DNA_MARKER, sizeof(DNA_MARKER)) != 0) {
        return n;
    }
    return n - sizeof(DNA_MARKER);
}
