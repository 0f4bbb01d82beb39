// vocab-plamo2.c — the PLaMo-2 tokenizer (tokenizer.ggml.model = "plamo2") and llama.cpp's TEST
// tokenizer.
//
// PLaMo-2 segments a text by dynamic programming over code points: every non-byte token whose
// text starts at a position is a candidate scoring round(score * 10^4); a code point no candidate
// covers costs 10^7 and is written as its UTF-8 byte tokens <0xXX>. The segmentation of least
// cost (sum of -scores) wins; among equal costs the longer first piece wins, and a token beats
// the byte fallback. A byte-order mark opening the text is dropped.
//
// The reference walks a table of "known suffixes" (every token text and each of its code-point
// suffixes) from the text's end: S(i), the longest known suffix starting at i, comes from
// S(i + 1) by trying c + P for the known prefixes P of S(i + 1), longest first, then c alone;
// the candidates at i are the tokens among S(i)'s prefixes. Rules that follow from the table's
// sentinel values are kept so results match: a token whose rounded score is at most -2*10^7 is
// never chosen; one whose rounded score is exactly -10^7 ends the candidate list of its position
// (shorter tokens and the byte fallback are not tried there) and, met as P while S(i) is sought,
// ends that search with no suffix (so position i has the byte fallback alone).
#include "llama-vocab.h"
#include "unicode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PLAMO2_INVALID_SCORE (-20000000)
#define PLAMO2_UNKNOWN_SCORE (-10000000)

// One known suffix: bytes [off, off + len) of token id's text.
struct plamo2_suffix {
    uint32_t tag;     // high hash bits
    uint32_t id1;     // token id + 1; 0 marks an empty slot
    uint32_t off, len;
};

struct llama_vocab_plamo2 {
    struct llama_vocab_trie trie;  // texts of the non-byte tokens
    int32_t * score;               // [n_tokens] round(score * 1e4), or PLAMO2_INVALID_SCORE
    struct plamo2_suffix * suffix; // open-addressing set of the known suffixes
    uint64_t suffix_mask;
};

// True if bytes s[0, n) are a known suffix (a non-byte token's text or one of its suffixes).
static bool plamo2_known(const struct llama_vocab * v, const uint8_t * s, size_t n) {
    const struct llama_vocab_plamo2 * p = v->plamo2;
    const uint64_t h = llama_vocab_hash_bytes((const char *) s, n);
    for (uint64_t i = h & p->suffix_mask;; i = (i + 1) & p->suffix_mask) {
        const struct plamo2_suffix * e = &p->suffix[i];
        if (e->id1 == 0) {
            return false;
        }
        if (e->tag == (uint32_t) (h >> 32) && e->len == n && memcmp(v->text + v->tokens[e->id1 - 1].off + e->off, s, n) == 0) {
            return true;
        }
    }
}

// Adds bytes [off, off + len) of token id's text to the known suffixes (once per content).
static void plamo2_suffix_add(struct llama_vocab * v, int32_t id, uint32_t off, uint32_t len) {
    struct llama_vocab_plamo2 * p = v->plamo2;
    const uint8_t * s = (const uint8_t *) v->text + v->tokens[id].off + off;
    const uint64_t h = llama_vocab_hash_bytes((const char *) s, len);
    for (uint64_t i = h & p->suffix_mask;; i = (i + 1) & p->suffix_mask) {
        struct plamo2_suffix * e = &p->suffix[i];
        if (e->id1 == 0) {
            *e = (struct plamo2_suffix) { (uint32_t) (h >> 32), (uint32_t) id + 1, off, len };
            return;
        }
        if (e->tag == (uint32_t) (h >> 32) && e->len == len &&
            memcmp(v->text + v->tokens[e->id1 - 1].off + e->off, s, len) == 0) {
            return;
        }
    }
}

bool llama_vocab_plamo2_load(struct llama_vocab * v) {
    for (int b = 0; b < 256; b++) {
        const llama_token id = v->byte_token[b];
        if (id < 0 || v->tokens[id].type != LLAMA_TOKEN_TYPE_BYTE) {
            LLAMA_LOG_ERROR("llama_vocab_load: a PLaMo-2 vocabulary needs the byte token <0x%02X> (type BYTE)\n", b);
            return false;
        }
    }
    struct llama_vocab_plamo2 * p = GGML_CALLOC(1, sizeof(*p));
    if (p == NULL) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for the PLaMo-2 tables\n");
        return false;
    }
    v->plamo2 = p;
    size_t bytes = 0;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        bytes += v->tokens[i].type == LLAMA_TOKEN_TYPE_BYTE ? 0 : v->tokens[i].len;
    }
    // every known suffix starts at a code point of some token: at most `bytes` of them
    const uint64_t n_slots = llama_vocab_table_size(bytes);
    p->suffix = GGML_CALLOC(n_slots, sizeof(struct plamo2_suffix));
    p->suffix_mask = n_slots - 1;
    p->score = GGML_MALLOC((size_t) v->n_tokens * sizeof(int32_t));
    if (p->score == NULL || p->suffix == NULL || !llama_vocab_trie_init(&p->trie, bytes)) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for the PLaMo-2 tables\n");
        return false;
    }
    for (int32_t i = 0; i < v->n_tokens; i++) {
        const struct llama_vocab_token * t = &v->tokens[i];
        // rounded in double as the reference does; the clamp only keeps the cast defined
        const double s = round((double) t->score * 1e4);
        p->score[i] = isfinite(s) && s > PLAMO2_INVALID_SCORE ? (int32_t) (s < INT32_MAX ? s : INT32_MAX) : PLAMO2_INVALID_SCORE;
        if (t->type == LLAMA_TOKEN_TYPE_BYTE || t->len == 0) {
            continue;
        }
        if (!llama_vocab_trie_insert(&p->trie, (const uint8_t *) v->text + t->off, t->len, i)) {
            LLAMA_LOG_ERROR("llama_vocab_load: the PLaMo-2 token trie could not be built\n");
            return false;
        }
        for (uint32_t o = 0; o < t->len; o++) {
            if (((uint8_t) v->text[t->off + o] & 0xC0) != 0x80) {  // each code point's start
                plamo2_suffix_add(v, i, o, t->len - o);
            }
        }
    }
    return true;
}

void llama_vocab_plamo2_free(struct llama_vocab * v) {
    if (v->plamo2 == NULL) {
        return;
    }
    llama_vocab_trie_free(&v->plamo2->trie);
    free(v->plamo2->score);
    free(v->plamo2->suffix);
    free(v->plamo2);
    v->plamo2 = NULL;
}

// Byte length of the unit starting at s[0, n): one UTF-8 code point, or 1 for an invalid byte
// (which no token can match and which falls back to its own byte token).
static size_t plamo2_unit_len(const uint8_t * s, size_t n) {
    size_t len;
    const uint32_t cp = unicode_utf8_decode(s, n, &len);
    return cp == UNICODE_INVALID || len == 0 ? 1 : len;
}

// Byte length of S(i), the longest known suffix starting at i, from sl = that of S(i + cl)
// (cl: the unit at i), as the reference's table walk finds it (see the file's header).
static size_t plamo2_next_suffix(const struct llama_vocab * v, const uint8_t * s, size_t i, size_t cl, size_t sl,
                                 const uint8_t * start) {
    const uint8_t * rest = s + i + cl;
    for (size_t n = sl; n > 0; n--) {
        if (!start[i + cl + n] || !plamo2_known(v, rest, n)) {
            continue;  // not a row of S(i + cl)'s table
        }
        if (plamo2_known(v, s + i, cl + n)) {
            return cl + n;
        }
        const llama_token id = llama_vocab_find(v, (const char *) rest, n);
        if (id >= 0 && v->tokens[id].type != LLAMA_TOKEN_TYPE_BYTE && v->plamo2->score[id] == PLAMO2_UNKNOWN_SCORE) {
            return 0;
        }
    }
    return plamo2_known(v, s + i, cl) ? cl : 0;
}

void llama_vocab_plamo2_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out) {
    const uint8_t * s = (const uint8_t *) text;
    if (len >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF) {
        s += 3;  // U+FEFF
        len -= 3;
    }
    if (len == 0) {
        return;
    }
    const struct llama_vocab_plamo2 * p = v->plamo2;
    // DP over byte offsets; only unit starts are ever reached. cost[i]: least cost of s[i, len);
    // next[i]: end of the first piece; tok[i]: its token, -1 for the byte fallback.
    int64_t * cost = GGML_MALLOC((len + 1) * sizeof(int64_t));
    size_t * next = GGML_MALLOC((len + 1) * sizeof(size_t));
    int32_t * tok = GGML_MALLOC((len + 1) * sizeof(int32_t));
    uint8_t * start = GGML_CALLOC(len + 1, 1);
    size_t * ends = GGML_MALLOC((v->max_token_len + 1) * sizeof(size_t));
    int32_t * ids = GGML_MALLOC((v->max_token_len + 1) * sizeof(int32_t));
    if (!cost || !next || !tok || !start || !ends || !ids) {
        out->oom = true;
        goto done;
    }
    for (size_t i = 0; i < len; i += plamo2_unit_len(s + i, len - i)) {
        start[i] = 1;
    }
    start[len] = 1;
    cost[len] = 0;
    size_t sl = 0;  // byte length of S(i + 1), the longest known suffix starting after i
    for (size_t i = len; i-- > 0;) {
        if (!start[i]) {
            continue;
        }
        const size_t cl = plamo2_unit_len(s + i, len - i);
        sl = plamo2_next_suffix(v, s, i, cl, sl, start);
        // Tokens starting at i within S(i), shortest first (the trie walk's order).
        size_t n_match = 0;
        uint32_t node = 0;
        for (size_t k = i; k < i + sl; k++) {
            node = llama_vocab_trie_child(&p->trie, node, s[k]);
            if (node == 0) {
                break;
            }
            const int32_t id = p->trie.node_token[node];
            if (id >= 0 && start[k + 1]) {  // a token ends on a unit boundary
                ends[n_match] = k + 1;
                ids[n_match] = id;
                n_match++;
            }
        }
        int64_t best = INT64_MAX;
        size_t best_end = i + plamo2_unit_len(s + i, len - i);
        int32_t best_tok = -1;
        bool fallback = true;
        for (size_t m = n_match; m-- > 0;) {  // longest first: ties keep the longer piece
            const int32_t sc = p->score[ids[m]];
            if (sc > PLAMO2_INVALID_SCORE) {
                const int64_t c = cost[ends[m]] - sc;
                if (c < best) {
                    best = c;
                    best_end = ends[m];
                    best_tok = ids[m];
                }
            }
            if (sc == PLAMO2_UNKNOWN_SCORE) {
                fallback = false;
                break;
            }
        }
        if (fallback) {
            const size_t e = i + plamo2_unit_len(s + i, len - i);
            const int64_t c = cost[e] - PLAMO2_UNKNOWN_SCORE;
            if (c < best) {
                best = c;
                best_end = e;
                best_tok = -1;
            }
        }
        cost[i] = best;
        next[i] = best_end;
        tok[i] = best_tok;
    }
    for (size_t i = 0; i < len; i = next[i]) {
        if (tok[i] >= 0) {
            llama_vocab_tokens_push(out, tok[i]);
        } else {
            for (size_t k = i; k < next[i]; k++) {
                llama_vocab_tokens_push(out, v->byte_token[s[k]]);
            }
        }
    }
done:
    free(cost);
    free(next);
    free(tok);
    free(start);
    free(ends);
    free(ids);
}

void llama_vocab_test_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out) {
    const uint32_t n_vocab = (uint32_t) v->n_tokens;
    for (size_t pos = 0; pos < len; pos += 5) {
        const size_t n = len - pos < 5 ? len - pos : 5;
        uint64_t h = 0;
        for (size_t i = 0; i < n; i++) {
            h = h * 31 + (uint8_t) text[pos + i];
        }
        llama_vocab_tokens_push(out, (llama_token) (h % n_vocab));
    }
}
