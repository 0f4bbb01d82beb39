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
#include "vocab-regex.h"

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
#define F_M  UNICODE_FLAG_M

// Neither whitespace, letter nor number: [^\s\p{L}\p{N}] (an invalid byte counts here).
static inline bool bpe_is_other(uint32_t flags) { return (flags & (F_WS | F_L | F_N)) == 0; }

// The same, with marks excluded too when the letter class includes them (qwen35).
static inline bool bpe_is_other_m(uint32_t flags, uint32_t letters) { return (flags & (F_WS | F_N | letters)) == 0; }

// End of the run of code points from pos whose flags include any of mask.
static size_t bpe_scan(const struct bpe_text * t, size_t pos, uint32_t mask) {
    while (pos < t->end) {
        size_t len;
        uint32_t fl;
        bpe_at(t, pos, &len, &fl);
        if (!(fl & mask)) {
            break;
        }
        pos += len;
    }
    return pos;
}

// End of the run of "other" code points from pos (letters: the flags that count as letters).
static size_t bpe_scan_other_m(const struct bpe_text * t, size_t pos, uint32_t letters) {
    while (pos < t->end) {
        size_t len;
        uint32_t fl;
        bpe_at(t, pos, &len, &fl);
        if (!bpe_is_other_m(fl, letters)) {
            break;
        }
        pos += len;
    }
    return pos;
}

// End of the run of "other" code points from pos.
static size_t bpe_scan_other(const struct bpe_text * t, size_t pos) { return bpe_scan_other_m(t, pos, F_L); }

static inline int bpe_lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

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
        size_t len;
        uint32_t fl;
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
    size_t len0;
    uint32_t f0;
    const uint32_t c0 = bpe_at(t, pos, &len0, &f0);
    size_t start = pos;
    uint32_t f = f0;
    if (c0 == ' ' && pos + 1 < t->end) {
        size_t len1;
        uint32_t f1;
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

// llama3 / qwen2 (max_digits 3 / 1, letters F_L):
//   (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// qwen35 (max_digits 1, letters F_L | F_M): \p{L} in the letter run is [\p{L}\p{M}], and the
// punctuation class is [^\s\p{L}\p{M}\p{N}]. A mark may start the optional prefix too, which
// gives the same pieces as starting the run with it.
static size_t bpe_match_llama3(const struct bpe_text * t, size_t pos, int max_digits, uint32_t letters) {
    size_t e = bpe_contraction(t, pos, true);
    if (e) {
        return e;
    }
    size_t len0;
    uint32_t f0;
    const uint32_t c0 = bpe_at(t, pos, &len0, &f0);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (f0 & letters) {
        return bpe_scan(t, pos, letters);
    }
    if (c0 != '\r' && c0 != '\n' && !(f0 & F_N) && pos + len0 < t->end) {
        size_t len1;
        uint32_t f1;
        bpe_at(t, pos + len0, &len1, &f1);
        if (f1 & letters) {
            return bpe_scan(t, pos + len0, letters);
        }
    }
    // \p{N}{1,3}
    if (f0 & F_N) {
        size_t p = pos;
        for (int i = 0; i < max_digits && p < t->end; i++) {
            size_t len;
            uint32_t fl;
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
            size_t len1;
            uint32_t f1;
            bpe_at(t, pos + 1, &len1, &f1);
            if (bpe_is_other_m(f1, letters)) {
                start = pos + 1;
                f = f1;
            }
        }
        if (bpe_is_other_m(f, letters)) {
            size_t p = bpe_scan_other_m(t, start, letters);
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
        size_t len;
        uint32_t fl;
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
        size_t len;
        uint32_t fl;
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
    size_t len;
    uint32_t fl;
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
    BPE_PAT_GPT2,
    BPE_PAT_LLAMA3,
    BPE_PAT_QWEN2,
    BPE_PAT_QWEN35,
    BPE_PAT_PUNCT,
    BPE_PAT_N_ALL,
    BPE_PAT_N_ONE,
    BPE_PAT_3DIGITS,
};

static size_t bpe_match(enum bpe_pattern pat, const struct bpe_text * t, size_t pos) {
    switch (pat) {
        case BPE_PAT_GPT2: return bpe_match_gpt2(t, pos);
        case BPE_PAT_LLAMA3: return bpe_match_llama3(t, pos, 3, F_L);
        case BPE_PAT_QWEN2: return bpe_match_llama3(t, pos, 1, F_L);
        case BPE_PAT_QWEN35: return bpe_match_llama3(t, pos, 1, F_L | F_M);
        case BPE_PAT_PUNCT: return bpe_match_punct(t, pos);
        case BPE_PAT_N_ALL: return bpe_match_digits(t, pos, true);
        case BPE_PAT_N_ONE: return bpe_match_digits(t, pos, false);
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
            size_t len;
            uint32_t fl;
            bpe_at(&t, pos, &len, &fl);
            pos += len;
        }
    }
    if (gap < t.end) {
        bpe_split_level(sp, level + 1, start + gap, end);
    }
}

// ---- the regex pre-tokenizers ----

struct rx_split {
    const struct llama_vocab * vocab;
    struct vocab_regex_text t;
    const size_t * off;  // byte offset of each code point, [n + 1]
    struct vocab_regex_scratch scratch;
    void (*emit)(void * user, size_t start, size_t end);
    void * user;
};

// Splits code points [start, end) by regex `level`, handing each piece to the next level. As
// Hugging Face's Split (an Oniguruma find-iter): matches and the gaps between them are pieces;
// an empty match splits the text where it is, except right after the previous match.
static void rx_split_level(struct rx_split * sp, int level, size_t start, size_t end) {
    if (level == sp->vocab->n_pre_regex) {
        sp->emit(sp->user, sp->off[start], sp->off[end]);
        return;
    }
    const struct vocab_regex * re = sp->vocab->pre_regex[level];
    size_t pos = start, gap = start, last_end = SIZE_MAX;
    while (pos < end) {
        const int64_t e = vocab_regex_match_at(re, &sp->t, start, end, pos, &sp->scratch);
        if (e < 0) {
            pos++;
            continue;
        }
        if ((size_t) e == pos) {
            if (last_end != pos && gap < pos) {
                rx_split_level(sp, level + 1, gap, pos);
                gap = pos;
            }
            last_end = pos;
            pos++;
            continue;
        }
        if (gap < pos) {
            rx_split_level(sp, level + 1, gap, pos);
        }
        rx_split_level(sp, level + 1, pos, (size_t) e);
        pos = gap = last_end = (size_t) e;
    }
    if (gap < end) {
        rx_split_level(sp, level + 1, gap, end);
    }
}

static bool bpe_regex_pretokenize(const struct llama_vocab * vocab, const char * text, size_t len,
                                  void (*emit)(void * user, size_t start, size_t end), void * user) {
    uint32_t * cp = GGML_MALLOC(len * sizeof(uint32_t));
    uint8_t * val = GGML_MALLOC(len);
    size_t * off = GGML_MALLOC((len + 1) * sizeof(size_t));
    if (!cp || !val || !off) {
        free(cp);
        free(val);
        free(off);
        return false;
    }
    size_t n = 0;
    for (size_t pos = 0; pos < len; n++) {
        size_t clen;
        cp[n] = unicode_utf8_decode((const uint8_t *) text + pos, len - pos, &clen);
        val[n] = cp[n] == UNICODE_INVALID ? VOCAB_REGEX_VAL_INVALID : unicode_cpt_value(cp[n]);
        off[n] = pos;
        pos += clen;
    }
    off[n] = len;
    struct rx_split sp = { vocab, { cp, val }, off, { NULL, 0 }, emit, user };
    rx_split_level(&sp, 0, 0, n);
    vocab_regex_scratch_free(&sp.scratch);
    free(cp);
    free(val);
    free(off);
    return true;
}

bool llama_vocab_bpe_pretokenize(const struct llama_vocab * vocab, const char * text, size_t len,
                                 void (*emit)(void * user, size_t start, size_t end), void * user) {
    static const enum bpe_pattern pats_default[] = { BPE_PAT_PUNCT, BPE_PAT_GPT2, BPE_PAT_N_ALL, BPE_PAT_3DIGITS };
    static const enum bpe_pattern pats_llama3[] = { BPE_PAT_LLAMA3 };
    static const enum bpe_pattern pats_qwen2[] = { BPE_PAT_QWEN2 };
    static const enum bpe_pattern pats_qwen35[] = { BPE_PAT_QWEN35 };
    static const enum bpe_pattern pats_gpt2[] = { BPE_PAT_GPT2 };
    static const enum bpe_pattern pats_smollm[] = { BPE_PAT_N_ONE, BPE_PAT_GPT2 };
    if (len == 0) {
        return true;
    }
    struct bpe_split sp = { NULL, 0, (const uint8_t *) text, emit, user };
    switch (vocab->pre_type) {
        case LLAMA_VOCAB_PRE_TYPE_DEFAULT:
            sp.pats = pats_default;
            sp.n_pats = 4;
            break;
        case LLAMA_VOCAB_PRE_TYPE_LLAMA3:
            sp.pats = pats_llama3;
            sp.n_pats = 1;
            break;
        case LLAMA_VOCAB_PRE_TYPE_QWEN2:
            sp.pats = pats_qwen2;
            sp.n_pats = 1;
            break;
        case LLAMA_VOCAB_PRE_TYPE_QWEN35:
            sp.pats = pats_qwen35;
            sp.n_pats = 1;
            break;
        case LLAMA_VOCAB_PRE_TYPE_GPT2:
            sp.pats = pats_gpt2;
            sp.n_pats = 1;
            break;
        case LLAMA_VOCAB_PRE_TYPE_SMOLLM:
            sp.pats = pats_smollm;
            sp.n_pats = 2;
            break;
        case LLAMA_VOCAB_PRE_TYPE_REGEX: return bpe_regex_pretokenize(vocab, text, len, emit, user);
    }
    bpe_split_level(&sp, 0, 0, len);
    return true;
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

static void bpe_sym_push(struct bpe_session * s, int32_t * n_sym, llama_token id) {
    const int32_t i = (*n_sym)++;
    s->sym_id[i] = id;
    s->sym_prev[i] = i - 1;
    s->sym_next[i] = i + 1;
    s->sym_dead[i] = 0;
}

static bool bpe_all_newlines(const uint8_t * bytes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] != '\n') {
            return false;
        }
    }
    return true;
}

// Tokens of one pre-tokenized piece (bytes [start, end) of the text).
static void bpe_piece(void * user, size_t start, size_t end) {
    struct bpe_session * s = user;
    const struct llama_vocab * v = s->vocab;
    const uint8_t * bytes = (const uint8_t *) s->text + start;
    const size_t n = end - start;

    if (v->bpe_raw_utf8 && (v->ignore_merges || (v->newline_tokens && bpe_all_newlines(bytes, n)))) {
        const llama_token id = llama_vocab_find(v, (const char *) bytes, n);
        if (id >= 0) {
            llama_vocab_tokens_push(s->out, id);
            return;
        }
    } else if (v->ignore_merges) {
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
    // One symbol per byte (per character over raw UTF-8, a character that is not a token
    // falling back to its <0xXX> byte tokens); a byte without a token is dropped, as the
    // reference BPE model without an unknown token does.
    int32_t n_sym = 0;
    for (size_t i = 0; i < n;) {
        size_t clen = 1;
        llama_token id = -1;
        if (v->bpe_raw_utf8) {
            unicode_utf8_decode(bytes + i, n - i, &clen);
            id = llama_vocab_find(v, (const char *) bytes + i, clen);
        }
        if (id < 0) {
            for (size_t k = 0; k < clen; k++) {
                if (v->byte_token[bytes[i + k]] >= 0) {
                    bpe_sym_push(s, &n_sym, v->byte_token[bytes[i + k]]);
                }
            }
        } else {
            bpe_sym_push(s, &n_sym, id);
        }
        i += clen;
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

// The BPE of one stretch of text: escape spaces if the family does, pre-tokenize, merge.
static void bpe_tokenize_stretch(const struct llama_vocab * vocab, const char * text, size_t len,
                                 struct llama_vocab_tokens * out) {
    struct bpe_session s;
    memset(&s, 0, sizeof(s));
    s.vocab = vocab;
    s.out = out;
    char * escaped = NULL;
    if (vocab->escape_whitespaces && memchr(text, ' ', len)) {
        // Spaces become ▁ (3 bytes each) before pre-tokenizing, as the model's normalizer does.
        size_t n_sp = 0;
        for (size_t i = 0; i < len; i++) {
            n_sp += text[i] == ' ';
        }
        escaped = GGML_MALLOC(len + 2 * n_sp);
        if (!escaped) {
            out->oom = true;
            return;
        }
        size_t m = 0;
        for (size_t i = 0; i < len; i++) {
            if (text[i] == ' ') {
                memcpy(escaped + m, "\xe2\x96\x81", 3);
                m += 3;
            } else {
                escaped[m++] = text[i];
            }
        }
        text = escaped;
        len = m;
    }
    s.text = text;
    if (!llama_vocab_bpe_pretokenize(vocab, text, len, bpe_piece, &s)) {
        out->oom = true;
    }
    free(escaped);
    free(s.sym_id);
    free(s.sym_next);
    free(s.sym_prev);
    free(s.sym_dead);
    free(s.heap);
    free(s.mapped);
}

// tokenizer.ggml.model "whitespace": the text is cut at whitespace, which is dropped, and each
// word is tokenized on its own.
// One word of a whitespace vocab, lowercased code point by code point first when the vocab says so.
static void bpe_tokenize_word(const struct llama_vocab * vocab, const char * text, size_t len, struct llama_vocab_tokens * out) {
    if (!vocab->words_lowercase) {
        bpe_tokenize_stretch(vocab, text, len, out);
        return;
    }
    char small[256];
    char * low = len * 2 <= sizeof(small) ? small : GGML_MALLOC(len * 2);  // a lowercase form is at most 2x longer (U+023A)
    if (low == NULL) {
        out->oom = true;
        return;
    }
    size_t n = 0;
    for (size_t pos = 0, clen; pos < len; pos += clen) {
        const uint32_t cp = unicode_utf8_decode((const uint8_t *) text + pos, len - pos, &clen);
        if (cp == UNICODE_INVALID) {
            memcpy(low + n, text + pos, clen);
            n += clen;
        } else {
            n += unicode_utf8_encode(unicode_tolower(cp), low + n);
        }
    }
    bpe_tokenize_stretch(vocab, low, n, out);
    if (low != small) {
        free(low);
    }
}

static void bpe_tokenize_words(const struct llama_vocab * vocab, const char * text, size_t len, struct llama_vocab_tokens * out) {
    size_t word = 0, pos = 0;
    while (pos < len) {
        size_t clen;
        const uint32_t cp = unicode_utf8_decode((const uint8_t *) text + pos, len - pos, &clen);
        if (cp != UNICODE_INVALID && (unicode_cpt_flags(cp) & F_WS)) {
            if (pos > word) {
                bpe_tokenize_word(vocab, text + word, pos - word, out);
            }
            word = pos + clen;
        }
        pos += clen;
    }
    if (len > word) {
        bpe_tokenize_word(vocab, text + word, len - word, out);
    }
}

void llama_vocab_bpe_tokenize(const struct llama_vocab * vocab, const char * text, size_t len, struct llama_vocab_tokens * out) {
    switch (vocab->bpe_session) {
        case LLAMA_VOCAB_BPE_WORDS: bpe_tokenize_words(vocab, text, len, out); break;
        case LLAMA_VOCAB_BPE_DNA: llama_vocab_dna_tokenize(vocab, text, len, bpe_tokenize_stretch, out); break;
        default: bpe_tokenize_stretch(vocab, text, len, out); break;
    }
}
