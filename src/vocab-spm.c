// vocab-spm.c — SentencePiece-style BPE with byte fallback, as sentencepiece encodes with a BPE
// model: spaces become ▁ (U+2581), the text is split into characters, and adjacent symbols are
// merged greedily, the pair whose merged piece has the highest score first (leftmost on ties),
// as long as the merged piece is a normal, user-defined or unused token. Each final symbol is
// its token; a symbol that is no token falls back to the <0xXX> tokens of its bytes; an unused
// token is split back into the two symbols it was last proposed from.
#include "llama-vocab.h"
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

static const char SPM_SPACE[3] = { (char) 0xE2, (char) 0x96, (char) 0x81 };  // ▁ U+2581

struct spm_symbol {
    uint32_t start;  // byte offset in the escaped text
    uint32_t len;    // bytes; 0 once merged into the left neighbour
    int32_t prev;
    int32_t next;
};

// A candidate merge of symbols left and right (adjacent when queued).
struct spm_pair {
    float score;
    int32_t left;
    int32_t right;
    uint32_t size;  // bytes of the merged piece; a mismatch later means the pair is stale
};

// Record of an unused token proposed as a merge: it resegments into [0, left_len) + the rest.
struct spm_unused {
    llama_token id;
    uint32_t left_len;
};

struct spm_session {
    const struct llama_vocab * vocab;
    const char * text;        // escaped text
    struct spm_symbol * sym;
    struct spm_pair * heap;
    size_t heap_n;
    struct spm_unused * unused;
    size_t n_unused, cap_unused;
    bool oom;
};

// Max-heap order: higher score first, then the leftmost pair.
static inline bool spm_pair_before(const struct spm_pair * a, const struct spm_pair * b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void spm_heap_push(struct spm_session * s, struct spm_pair p) {
    size_t i = s->heap_n++;
    while (i > 0) {
        const size_t parent = (i - 1) / 2;
        if (!spm_pair_before(&p, &s->heap[parent])) {
            break;
        }
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = p;
}

static struct spm_pair spm_heap_pop(struct spm_session * s) {
    const struct spm_pair top = s->heap[0];
    const struct spm_pair v = s->heap[--s->heap_n];
    const size_t n = s->heap_n;
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && spm_pair_before(&s->heap[c + 1], &s->heap[c])) {
            c++;
        }
        if (!spm_pair_before(&s->heap[c], &v)) {
            break;
        }
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0) {
        s->heap[i] = v;
    }
    return top;
}

// Types a merge may produce (sentencepiece keeps control, unknown and byte pieces out of merges).
static bool spm_mergeable(const struct llama_vocab_token * t) {
    return t->type == LLAMA_TOKEN_TYPE_NORMAL || t->type == LLAMA_TOKEN_TYPE_USER_DEFINED || t->type == LLAMA_TOKEN_TYPE_UNUSED ||
        t->type == LLAMA_TOKEN_TYPE_UNDEFINED;
}

static void spm_try_pair(struct spm_session * s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) {
        return;
    }
    const struct spm_symbol * a = &s->sym[left];
    const struct spm_symbol * b = &s->sym[right];
    const uint32_t size = a->len + b->len;
    const llama_token id = llama_vocab_find(s->vocab, s->text + a->start, size);
    if (id < 0 || !spm_mergeable(&s->vocab->tokens[id])) {
        return;
    }
    if (s->vocab->tokens[id].type == LLAMA_TOKEN_TYPE_UNUSED) {
        if (s->n_unused == s->cap_unused) {
            const size_t cap = s->cap_unused ? 2 * s->cap_unused : 16;
            struct spm_unused * u = GGML_REALLOC(s->unused, cap * sizeof(*u));
            if (!u) {
                s->oom = true;
                return;
            }
            s->unused = u;
            s->cap_unused = cap;
        }
        s->unused[s->n_unused++] = (struct spm_unused) { id, a->len };
    }
    const struct spm_pair p = { s->vocab->tokens[id].score, left, right, size };
    spm_heap_push(s, p);
}

// Appends the tokens of bytes [start, start + len) of the escaped text.
static void spm_emit(struct spm_session * s, uint32_t start, uint32_t len, struct llama_vocab_tokens * out) {
    const struct llama_vocab * v = s->vocab;
    const llama_token id = llama_vocab_find(v, s->text + start, len);
    if (id >= 0) {
        if (v->tokens[id].type == LLAMA_TOKEN_TYPE_UNUSED) {
            // Split back into the two pieces it was (last) proposed from.
            for (size_t i = s->n_unused; i-- > 0;) {
                if (s->unused[i].id == id && s->unused[i].left_len > 0 && s->unused[i].left_len < len) {
                    const uint32_t l = s->unused[i].left_len;
                    spm_emit(s, start, l, out);
                    spm_emit(s, start + l, len - l, out);
                    return;
                }
            }
        }
        llama_vocab_tokens_push(out, id);
        return;
    }
    // Byte fallback; a byte without its <0xXX> token becomes the unknown token.
    for (uint32_t i = 0; i < len; i++) {
        const llama_token b = v->byte_token[(uint8_t) s->text[start + i]];
        if (b >= 0) {
            llama_vocab_tokens_push(out, b);
        } else if (v->unk >= 0) {
            llama_vocab_tokens_push(out, v->unk);
        }
    }
}

// Merges the symbols of esc[start, end) and appends their tokens.
static void spm_encode(struct spm_session * s, uint32_t start, uint32_t end, struct llama_vocab_tokens * out) {
    const char * esc = s->text;
    // One symbol per character (an invalid byte is a character of its own).
    int32_t n_sym = 0;
    for (uint32_t i = start; i < end;) {
        size_t clen;
        unicode_utf8_decode((const uint8_t *) esc + i, end - i, &clen);
        s->sym[n_sym] = (struct spm_symbol) { i, (uint32_t) clen, n_sym - 1, n_sym + 1 };
        n_sym++;
        i += (uint32_t) clen;
    }
    if (n_sym == 0) {
        return;
    }
    s->sym[n_sym - 1].next = -1;
    s->heap_n = 0;
    s->n_unused = 0;

    for (int32_t i = 0; i + 1 < n_sym; i++) {
        spm_try_pair(s, i, i + 1);
    }
    while (s->heap_n > 0) {
        const struct spm_pair p = spm_heap_pop(s);
        struct spm_symbol * a = &s->sym[p.left];
        struct spm_symbol * b = &s->sym[p.right];
        if (a->len == 0 || b->len == 0 || a->len + b->len != p.size) {
            continue;  // stale: one side has merged since
        }
        a->len += b->len;
        b->len = 0;
        a->next = b->next;
        if (b->next >= 0) {
            s->sym[b->next].prev = p.left;
        }
        spm_try_pair(s, a->prev, p.left);
        spm_try_pair(s, p.left, a->next);
    }
    for (int32_t i = 0; i >= 0; i = s->sym[i].next) {
        spm_emit(s, s->sym[i].start, s->sym[i].len, out);
    }
}

static inline bool spm_is_space_at(const char * t, size_t i) { return memcmp(t + i, SPM_SPACE, 3) == 0; }

bool llama_vocab_spm_words_independent(const char * text, size_t len) {
    for (size_t k = 1; k + 3 <= len; k++) {
        if (spm_is_space_at(text, k) && (k < 3 || !spm_is_space_at(text, k - 3))) {
            return false;
        }
    }
    return true;
}

void llama_vocab_spm_tokenize(const struct llama_vocab * vocab, const char * text, size_t len, bool prefix,
                              struct llama_vocab_tokens * out) {
    if (len == 0 && !prefix) {
        return;
    }
    // Escape: optional leading ▁, every ' ' becomes ▁.
    size_t n_spaces = 0;
    for (size_t i = 0; i < len; i++) {
        n_spaces += text[i] == ' ';
    }
    const size_t esc_len = len + 2 * n_spaces + (prefix ? 3 : 0);
    if (esc_len > UINT32_MAX / 4) {
        out->oom = true;  // offsets are 32-bit; llama_tokenize's int32 length keeps far below this
        return;
    }
    struct spm_session s;
    memset(&s, 0, sizeof(s));
    s.vocab = vocab;
    char * esc = GGML_MALLOC(esc_len ? esc_len : 1);
    if (esc == NULL) {
        out->oom = true;
        return;
    }
    size_t m = 0;
    if (prefix) {
        memcpy(esc, SPM_SPACE, 3);
        m = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(esc + m, SPM_SPACE, 3);
            m += 3;
        } else {
            esc[m++] = text[i];
        }
    }
    s.text = esc;

    // When no mergeable token holds a ▁ right after another character, no merge can cross the
    // start of a word (a ▁ after a non-▁), so words are encoded one by one: the same merges in
    // the same order, with a working set that stays in cache.
    size_t max_chunk = m;
    if (vocab->spm_words_independent) {
        max_chunk = 0;
        size_t c0 = 0;
        for (size_t k = 1; k + 3 <= m; k++) {
            if (spm_is_space_at(esc, k) && (k < 3 || !spm_is_space_at(esc, k - 3))) {
                max_chunk = k - c0 > max_chunk ? k - c0 : max_chunk;
                c0 = k;
            }
        }
        max_chunk = m - c0 > max_chunk ? m - c0 : max_chunk;
    }
    // At most one symbol per byte; each merge queues at most two pairs.
    s.sym = GGML_MALLOC((max_chunk ? max_chunk : 1) * sizeof(struct spm_symbol));
    s.heap = GGML_MALLOC((3 * max_chunk + 1) * sizeof(struct spm_pair));
    if (!s.sym || !s.heap) {
        out->oom = true;
        goto done;
    }
    if (vocab->spm_words_independent) {
        size_t c0 = 0;
        for (size_t k = 1; k + 3 <= m; k++) {
            if (spm_is_space_at(esc, k) && (k < 3 || !spm_is_space_at(esc, k - 3))) {
                spm_encode(&s, (uint32_t) c0, (uint32_t) k, out);
                c0 = k;
            }
        }
        spm_encode(&s, (uint32_t) c0, (uint32_t) m, out);
    } else {
        spm_encode(&s, 0, (uint32_t) m, out);
    }
    if (s.oom) {
        out->oom = true;
    }
done:
    free(esc);
    free(s.sym);
    free(s.heap);
    free(s.unused);
}
