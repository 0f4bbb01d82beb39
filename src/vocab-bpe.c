// vocab-bpe.c — byte-level BPE: the pre-tokenizer regexes of each pre type, matched by hand over
// code points (no regex engine), then merges by rank with a priority queue per piece.
//
// Each pattern is a list of alternatives tried in order at a position, the first that matches
// wins (leftmost-first, as Oniguruma and PCRE do), each alternative greedy with the backtracking
// spelled out where it matters. The text between matches is kept as a piece too (Split with
// behavior "isolated"), and a pattern applied after another splits each piece on its own, so a
// look-ahead never sees past the end of its piece.
#include "llama-vocab.h"
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

// ---- code point access ----

// The text a pattern looks at: bytes [0, end).
struct bpe_text {
    const uint8_t * s;
    size_t end;
};

// Decodes the code point at pos (< end): its value (UNICODE_INVALID for a bad byte), byte
// length and class flags.
static inline uint32_t bpe_at(const struct bpe_text * t, size_t pos, size_t * len, uint32_t * flags) {
    const uint8_t b = t->s[pos];
    if (b < 0x80) {
        *len = 1;
        *flags = unicode_cpt_flags_fast(b);
        return b;
    }
    const uint32_t cp = unicode_utf8_decode(t->s + pos, t->end - pos, len);
    *flags = unicode_cpt_flags(cp);
    return cp;
}

#define F_L  UNICODE_FLAG_L
#define F_N  UNICODE_FLAG_N
#define F_P  UNICODE_FLAG_P
#define F_WS UNICODE_FLAG_WS

// Neither whitespace, letter nor number: [^\s\p{L}\p{N}] (an invalid byte counts here).
static inline bool bpe_is_other(uint32_t flags) {
    return (flags & (F_WS | F_L | F_N)) == 0;
}

// End of the run of code points from pos whose flags include any of mask.
static size_t bpe_scan(const struct bpe_text * t, size_t pos, uint32_t mask) {
    while (pos < t->end) {
        size_t len; uint32_t fl;
        bpe_at(t, pos, &len, &fl);
        if (!(fl & mask)) {
            break;
        }
        pos += len;
    }
    return pos;
}

// End of the run of "other" code points from pos.
static size_t bpe_scan_other(const struct bpe_text * t, size_t pos) {
    while (pos < t->end) {
        size_t len; uint32_t fl;
        bpe_at(t, pos, &len, &fl);
        if (!bpe_is_other(fl)) {
            break;
        }
        pos += len;
    }
    return pos;
}

static inline int bpe_lower(uint8_t c) {
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

// Contractions after an apostrophe at pos: 's 't 'm 'd (2 bytes), 're 've 'll (3 bytes).
// Case-insensitive for ASCII letters when icase (llama3's [sS] classes), else exact.
static size_t bpe_contraction(const struct bpe_text * t, size_t pos, bool icase) {
    if (t->s[pos] != '\'' || pos + 1 >= t->end) {
        return 0;
    }
    const int c1 = icase ? bpe_lower(t->s[pos + 1]) : t->s[pos + 1];
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        return pos + 2;
    }
    if (pos + 2 < t->end) {
        const int c2 = icase ? bpe_lower(t->s[pos + 2]) : t->s[pos + 2];
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
            return pos + 3;
        }
    }
    return 0;
}

// \s+(?!\S) from pos (a whitespace code point): the whole run if it reaches the end, else the
// run minus its last code point (which is then followed by whitespace), else no match.
static size_t bpe_ws_not_before_nonspace(const struct bpe_text * t, size_t pos) {
    size_t p = pos, last = pos;
    while (p < t->end) {
        size_t len; uint32_t fl;
        bpe_at(t, p, &len, &fl);
        if (!(fl & F_WS)) {
            break;
        }
        last = p;
        p += len;
    }
    if (p == t->end) {
        return p;
    }
    return last > pos ? last : 0;
}

// gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
// Returns the end of the match at pos, or 0.
static size_t bpe_match_gpt2(const struct bpe_text * t, size_t pos) {
    size_t e = bpe_contraction(t, pos, false);
    if (e) {
        return e;
    }
    size_t len0; uint32_t f0;
    const uint32_t c0 = bpe_at(t, pos, &len0, &f0);
    size_t start = pos;
    uint32_t f = f0;
    if (c0 == ' ' && pos + 1 < t->end) {
        size_t len1; uint32_t f1;
        bpe_at(t, pos + 1, &len1, &f1);
        if (!(f1 & F_WS)) {  // the optional space is taken only if a class run follows
            start = pos + 1;
            f = f1;
        }
    }
    if (f & F_L) {
        return bpe_scan(t, start, F_L);
    }
    if (f & F_N) {
        return bpe_scan(t, start, F_N);
    }
    if (bpe_is_other(f)) {
        return bpe_scan_other(t, start);
    }
    return bpe_ws_not_before_nonspace(t, pos);  // c0 is whitespace here
}

// llama3 / qwen2 (max_digits 3 / 1):
//   (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
static size_t bpe_match_llama3(const struct bpe_text * t, size_t pos, int max_digits) {
    size_t e = bpe_contraction(t, pos, true);
    if (e) {
        return e;
    }
    size_t len0; uint32_t f0;
    const uint32_t c0 = bpe_at(t, pos, &len0, &f0);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (f0 & F_L) {
        return bpe_scan(t, pos, F_L);
    }
    if (c0 != '\r' && c0 != '\n' && !(f0 & F_N) && pos + len0 < t->end) {
        size_t len1; uint32_t f1;
        bpe_at(t, pos + len0, &len1, &f1);
        if (f1 & F_L) {
            return bpe_scan(t, pos + len0, F_L);
        }
    }
    // \p{N}{1,3}
    if (f0 & F_N) {
        size_t p = pos;
        for (int i = 0; i < max_digits && p < t->end; i++) {
            size_t len; uint32_t fl;
            bpe_at(t, p, &len, &fl);
            if (!(fl & F_N)) {
                break;
            }
            p += len;
        }
        return p;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    {
        size_t start = pos;
        uint32_t f = f0;
        if (c0 == ' ' && pos + 1 < t->end) {
            size_t len1; uint32_t f1;
            bpe_at(t, pos + 1, &len1, &f1);
            if (bpe_is_other(f1)) {
                start = pos + 1;
                f = f1;
            }
        }
        if (bpe_is_other(f)) {
            size_t p = bpe_scan_other(t, start);
            while (p < t->end && (t->s[p] == '\r' || t->s[p] == '\n')) {
                p++;
            }
            return p;
        }
    }
    // c0 is whitespace from here on.
    // \s*[\r\n]+ : up to the last \r or \n of the whitespace run.
    size_t p = pos, after_nl = 0;
    while (p < t->end) {
        size_t len; uint32_t fl;
        const uint32_t c = bpe_at(t, p, &len, &fl);
        if (!(fl & F_WS)) {
            break;
        }
        p += len;
        if (c == '\r' || c == '\n') {
            after_nl = p;
        }
    }
    if (after_nl) {
        return after_nl;
    }
    // \s+(?!\S), then \s+
    e = bpe_ws_not_before_nonspace(t, pos);
    return e ? e : p;
}

// [\p{P}\$\+<=>\^~\|]+
static size_t bpe_match_punct(const struct bpe_text * t, size_t pos) {
    size_t p = pos;
    while (p < t->end) {
        size_t len; uint32_t fl;
        const uint32_t c = bpe_at(t, p, &len, &fl);
        if (!(fl & F_P) && !(c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|')) {
            break;
        }
        p += len;
    }
    return p > pos ? p : 0;
}

// \p{N}+ (all) or \p{N} (one code point).
static size_t bpe_match_digits(const struct bpe_text * t, size_t pos, bool all) {
    size_t len; uint32_t fl;
    bpe_at(t, pos, &len, &fl);
    if (!(fl & F_N)) {
        return 0;
    }
    return all ? bpe_scan(t, pos, F_N) : pos + len;
}

// [0-9][0-9][0-9]
static size_t bpe_match_3digits(const struct bpe_text * t, size_t pos) {
    if (pos + 3 > t->end) {
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        if (t->s[pos + i] < '0' || t->s[pos + i] > '9') {
            return 0;
        }
    }
    return pos + 3;
}

enum bpe_pattern {
    BPE_PAT_GPT2, BPE_PAT_LLAMA3, BPE_PAT_QWEN2, BPE_PAT_PUNCT, BPE_PAT_N_ALL, BPE_PAT_N_ONE, BPE_PAT_3DIGITS,
};

static size_t bpe_match(enum bpe_pattern pat, const struct bpe_text * t, size_t pos) {
    switch (pat) {
        case BPE_PAT_GPT2:    return bpe_match_gpt2(t, pos);
        case BPE_PAT_LLAMA3:  return bpe_match_llama3(t, pos, 3);
        case BPE_PAT_QWEN2:   return bpe_match_llama3(t, pos, 1);
        case BPE_PAT_PUNCT:   return bpe_match_punct(t, pos);
        case BPE_PAT_N_ALL:   return bpe_match_digits(t, pos, true);
        case BPE_PAT_N_ONE:   return bpe_match_digits(t, pos, false);
        case BPE_PAT_3DIGITS: return bpe_match_3digits(t, pos);
    }
    return 0;
}

struct bpe_split {
    const enum bpe_pattern * pats;
    int n_pats;
    const uint8_t * s;
    void (*emit)(void * user, size_t start, size_t end);
    void * user;
};

// Splits [start, end) by pattern `level`, handing each piece to the next level.
static void bpe_split_level(const struct bpe_split * sp, int level, size_t start, size_t end) {
    if (level == sp->n_pats) {
        sp->emit(sp->user, start, end);
        return;
    }
    // The pattern sees only this piece: its end is the end of the text for look-aheads.
    const struct bpe_text t = { sp->s + start, end - start };
    const enum bpe_pattern pat = sp->pats[level];
    size_t pos = 0, gap = 0;
    while (pos < t.end) {
        const size_t e = bpe_match(pat, &t, pos);
        if (e > pos) {
            if (gap < pos) {
                bpe_split_level(sp, level + 1, start + gap, start + pos);
            }
            bpe_split_level(sp, level + 1, start + pos, start + e);
            pos = gap = e;
        } else {
            size_t len; uint32_t fl;
            bpe_at(&t, pos, &len, &fl);
            pos += len;
        }
    }
    if (gap < t.end) {
        bpe_split_level(sp, level + 1, start + gap, end);
    }
}

void llama_vocab_bpe_pretokenize(enum llama_vocab_pre_type pre, const char * text, size_t len,
                                 void (*emit)(void * user, size_t start, size_t end), void * user) {
    static const enum bpe_pattern pats_default[] = { BPE_PAT_PUNCT, BPE_PAT_GPT2, BPE_PAT_N_ALL, BPE_PAT_3DIGITS };
    static const enum bpe_pattern pats_llama3[]  = { BPE_PAT_LLAMA3 };
    static const enum bpe_pattern pats_qwen2[]   = { BPE_PAT_QWEN2 };
    static const enum bpe_pattern pats_gpt2[]    = { BPE_PAT_GPT2 };
    static const enum bpe_pattern pats_smollm[]  = { BPE_PAT_N_ONE, BPE_PAT_GPT2 };
    if (len == 0) {
        return;
    }
    struct bpe_split sp = { NULL, 0, (const uint8_t *) text, emit, user };
    switch (pre) {
        case LLAMA_VOCAB_PRE_TYPE_DEFAULT: sp.pats = pats_default; sp.n_pats = 4; break;
        case LLAMA_VOCAB_PRE_TYPE_LLAMA3:  sp.pats = pats_llama3;  sp.n_pats = 1; break;
        case LLAMA_VOCAB_PRE_TYPE_QWEN2:   sp.pats = pats_qwen2;   sp.n_pats = 1; break;
        case LLAMA_VOCAB_PRE_TYPE_GPT2:    sp.pats = pats_gpt2;    sp.n_pats = 1; break;
        case LLAMA_VOCAB_PRE_TYPE_SMOLLM:  sp.pats = pats_smollm;  sp.n_pats = 2; break;
    }
    bpe_split_level(&sp, 0, 0, len);
}

// ---- merges ----

// Scratch of one tokenize call: symbols of the current piece and the merge queue.
struct bpe_session {
    const struct llama_vocab * vocab;
    const char * text;
    struct llama_vocab_tokens * out;
    llama_token * sym_id;   // token of each symbol
    int32_t * sym_next;     // next live symbol, -1 at the end
    int32_t * sym_prev;     // previous live symbol, -1 at the start
    uint8_t * sym_dead;     // merged into its left neighbour
    uint64_t * heap;        // (rank << 32 | left symbol) min-heap: lowest rank, then leftmost
    size_t heap_n;
    size_t cap;             // symbols the arrays hold (heap: 3x)
    char * mapped;          // piece in the byte alphabet (ignore_merges lookups)
    size_t mapped_cap;
};

static bool bpe_reserve(struct bpe_session * s, size_t n) {
    if (n <= s->cap) {
        return true;
    }
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n) {
        cap *= 2;
    }
    void * a = GGML_REALLOC(s->sym_id, cap * sizeof(llama_token));
    if (a) s->sym_id = a;
    void * b = GGML_REALLOC(s->sym_next, cap * sizeof(int32_t));
    if (b) s->sym_next = b;
    void * c = GGML_REALLOC(s->sym_prev, cap * sizeof(int32_t));
    if (c) s->sym_prev = c;
    void * d = GGML_REALLOC(s->sym_dead, cap);
    if (d) s->sym_dead = d;
    // Each merge pushes at most two pairs: initial n - 1 plus 2 per merge stays under 3n.
    void * h = GGML_REALLOC(s->heap, 3 * cap * sizeof(uint64_t));
    if (h) s->heap = h;
    if (!a || !b || !c || !d || !h) {
        return false;
    }
    s->cap = cap;
    return true;
}

static void bpe_heap_push(struct bpe_session * s, uint64_t v) {
    size_t i = s->heap_n++;
    while (i > 0) {
        const size_t parent = (i - 1) / 2;
        if (s->heap[parent] <= v) {
            break;
        }
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = v;
}

static uint64_t bpe_heap_pop(struct bpe_session * s) {
    const uint64_t top = s->heap[0];
    const uint64_t v = s->heap[--s->heap_n];
    size_t i = 0;
    const size_t n = s->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && s->heap[c + 1] < s->heap[c]) {
            c++;
        }
        if (v <= s->heap[c]) {
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

// Queues the merge of symbol `left` with its right neighbour, if that pair merges.
static void bpe_try_pair(struct bpe_session * s, int32_t left) {
    if (left < 0 || s->sym_next[left] < 0) {
        return;
    }
    int32_t rank;
    llama_token result;
    if (llama_vocab_merge_find(s->vocab, s->sym_id[left], s->sym_id[s->sym_next[left]], &rank, &result)) {
        bpe_heap_push(s, (uint64_t) (uint32_t) rank << 32 | (uint32_t) left);
    }
}

// Tokens of one pre-tokenized piece (bytes [start, end) of the text).
static void bpe_piece(void * user, size_t start, size_t end) {
    struct bpe_session * s = user;
    const struct llama_vocab * v = s->vocab;
    const uint8_t * bytes = (const uint8_t *) s->text + start;
    const size_t n = end - start;

    if (v->ignore_merges) {
        // The piece in the byte alphabet is at most 2 bytes per byte.
        if (s->mapped_cap < 2 * n) {
            char * m = GGML_REALLOC(s->mapped, 2 * n);
            if (!m) {
                s->out->oom = true;
                return;
            }
            s->mapped = m;
            s->mapped_cap = 2 * n;
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            char buf[4];
            const size_t k = unicode_utf8_encode(unicode_byte_to_cpt(bytes[i]), buf);
            memcpy(s->mapped + m, buf, k);
            m += k;
        }
        const llama_token id = llama_vocab_find(v, s->mapped, m);
        if (id >= 0) {
            llama_vocab_tokens_push(s->out, id);
            return;
        }
    }

    if (!bpe_reserve(s, n)) {
        s->out->oom = true;
        return;
    }
    // One symbol per byte; a byte whose alphabet character is not in the vocabulary is dropped,
    // as the reference BPE model without an unknown token does.
    int32_t n_sym = 0;
    for (size_t i = 0; i < n; i++) {
        const llama_token id = v->byte_token[bytes[i]];
        if (id < 0) {
            continue;
        }
        s->sym_id[n_sym] = id;
        s->sym_prev[n_sym] = n_sym - 1;
        s->sym_next[n_sym] = n_sym + 1;
        s->sym_dead[n_sym] = 0;
        n_sym++;
    }
    if (n_sym == 0) {
        return;
    }
    s->sym_next[n_sym - 1] = -1;

    s->heap_n = 0;
    for (int32_t i = 0; i + 1 < n_sym; i++) {
        bpe_try_pair(s, i);
    }
    while (s->heap_n > 0) {
        const uint64_t top = bpe_heap_pop(s);
        const int32_t left = (int32_t) (uint32_t) top;
        const int32_t rank = (int32_t) (top >> 32);
        if (s->sym_dead[left] || s->sym_next[left] < 0) {
            continue;
        }
        const int32_t right = s->sym_next[left];
        int32_t cur_rank;
        llama_token result;
        // A queued pair is stale once either side has merged with something else.
        if (!llama_vocab_merge_find(v, s->sym_id[left], s->sym_id[right], &cur_rank, &result) || cur_rank != rank) {
            continue;
        }
        s->sym_id[left] = result;
        s->sym_dead[right] = 1;
        s->sym_next[left] = s->sym_next[right];
        if (s->sym_next[right] >= 0) {
            s->sym_prev[s->sym_next[right]] = left;
        }
        bpe_try_pair(s, s->sym_prev[left]);
        bpe_try_pair(s, left);
    }
    for (int32_t i = 0; i >= 0; i = s->sym_next[i]) {
        llama_vocab_tokens_push(s->out, s->sym_id[i]);
    }
}

void llama_vocab_bpe_tokenize(const struct llama_vocab * vocab, const char * text, size_t len,
                              struct llama_vocab_tokens * out) {
    struct bpe_session s;
    memset(&s, 0, sizeof(s));
    s.vocab = vocab;
    s.text = text;
    s.out = out;
    llama_vocab_bpe_pretokenize(vocab->pre_type, text, len, bpe_piece, &s);
    free(s.sym_id);
    free(s.sym_next);
    free(s.sym_prev);
    free(s.sym_dead);
    free(s.heap);
    free(s.mapped);
}
