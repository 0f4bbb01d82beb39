// vocab-plamo2.c — the PLaMo-2 tokenizer (tokenizer.ggml.model = "plamo2") and llama.cpp's TEST
// tokenizer.
//
// PLaMo-2 segments a text by dynamic programming over code points: every non-byte token whose
// text starts at a position is a candidate scoring round(score * 10^4); a code point no candidate
// covers costs 10^7 and is written as its UTF-8 byte tokens <0xXX>. The segmentation of least
// cost (sum of -scores) wins; among equal costs the longer first piece wins, and a token beats
// the byte fallback. Two rules of the reference table follow from its sentinel values and are
// kept so results match: a token whose rounded score is at most -2*10^7 is never chosen, and one
// whose rounded score is exactly -10^7 ends the candidate list of its position (shorter tokens
// and the byte fallback are then not tried there). A byte-order mark opening the text is dropped.
#include "llama-vocab.h"
#include "unicode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PLAMO2_INVALID_SCORE (-20000000)
#define PLAMO2_UNKNOWN_SCORE (-10000000)

struct llama_vocab_plamo2 {
    struct llama_vocab_trie trie; // texts of the non-byte tokens
    int32_t * score;              // [n_tokens] round(score * 1e4), or PLAMO2_INVALID_SCORE
};

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
    p->score = GGML_MALLOC((size_t) v->n_tokens * sizeof(int32_t));
    if (p->score == NULL || !llama_vocab_trie_init(&p->trie, bytes)) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for the PLaMo-2 tables\n");
        return false;
    }
    for (int32_t i = 0; i < v->n_tokens; i++) {
        const struct llama_vocab_token * t = &v->tokens[i];
        // rounded in double as the reference does; the clamp only keeps the cast defined
        const double s = round((double) t->score * 1e4);
        p->score[i] = isfinite(s) && s > PLAMO2_INVALID_SCORE ? (int32_t) (s < INT32_MAX ? s : INT32_MAX)
                                                               : PLAMO2_INVALID_SCORE;
        if (t->type == LLAMA_TOKEN_TYPE_BYTE || t->len == 0) {
            continue;
        }
        if (!llama_vocab_trie_insert(&p->trie, (const uint8_t *) v->text + t->off, t->len, i)) {
            LLAMA_LOG_ERROR("llama_vocab_load: the PLaMo-2 token trie could not be built\n");
            return false;
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

void llama_vocab_plamo2_tokenize(const struct llama_vocab * v, const char * text, size_t len,
                                 struct llama_vocab_tokens * out) {
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
    for (size_t i = len; i-- > 0;) {
        if (!start[i]) {
            continue;
        }
        // Tokens starting at i, shortest first (the trie walk's order).
        size_t n_match = 0;
        uint32_t node = 0;
        for (size_t k = i; k < len; k++) {
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

void llama_vocab_test_tokenize(const struct llama_vocab * v, const char * text, size_t len,
                               struct llama_vocab_tokens * out) {
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
