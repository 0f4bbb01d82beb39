// vocab-ugm.c — unigram vocabularies (tokenizer.ggml.model "t5": T5, XLM-R and other
// sentencepiece unigram models), tokenized as sentencepiece encodes with a unigram model:
//
// 1. Normalize: at each position the longest user-defined token passes unchanged; else the
//    longest match in the precompiled charsmap (tokenizer.ggml.precompiled_charsmap, the
//    sentencepiece normalizer's table: a 4-byte size, a darts-clone double array of that many
//    bytes, then NUL-terminated replacement strings the array's values index) is replaced;
//    else one UTF-8 character is kept (a byte that starts none becomes U+FFFD). With
//    remove_extra_whitespaces, leading and trailing spaces go and runs of spaces become one; a
//    space starts the text when add_space_prefix is on; spaces become ▁ (U+2581).
// 2. Viterbi over the normalized text: the segmentation into normal and user-defined tokens
//    with the highest sum of scores (a user-defined token scores its length in characters
//    times the highest score, at least FLT_MIN, minus 0.1, so it nearly always wins; a character no token covers is the
//    unknown token at the lowest score minus 10); consecutive unknowns become one.
#include "llama-vocab.h"
#include "unicode.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct llama_vocab_ugm {
    // charsmap
    uint8_t * charsmap;       // the whole array, copied
    const uint32_t * units;   // darts-clone units (little-endian in the file)
    size_t n_units;
    const char * repl;        // replacement strings
    size_t repl_size;
    struct llama_vocab_trie trie;  // normal and user-defined tokens
    float min_score, max_score;
};

static bool ugm_token_in_trie(const struct llama_vocab_token * t) {
    return t->len > 0 &&
        (t->type == LLAMA_TOKEN_TYPE_NORMAL || t->type == LLAMA_TOKEN_TYPE_USER_DEFINED || t->type == LLAMA_TOKEN_TYPE_UNDEFINED);
}

bool llama_vocab_ugm_load(struct llama_vocab * v, const struct gguf_context * g) {
    struct llama_vocab_ugm * u = GGML_CALLOC(1, sizeof(*u));
    if (!u) {
        return false;
    }
    v->ugm = u;
    const int64_t k = gguf_find_key(g, "tokenizer.ggml.precompiled_charsmap");
    if (k >= 0) {
        if (gguf_get_kv_type(g, k) != GGUF_TYPE_ARRAY ||
            (gguf_get_arr_type(g, k) != GGUF_TYPE_UINT8 && gguf_get_arr_type(g, k) != GGUF_TYPE_INT8)) {
            LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.precompiled_charsmap must be an array of bytes\n");
            return false;
        }
        const size_t n = gguf_get_arr_n(g, k);
        uint32_t blob = 0;
        if (n >= 4) {
            const uint8_t * d = gguf_get_arr_data(g, k);
            blob = (uint32_t) d[0] | (uint32_t) d[1] << 8 | (uint32_t) d[2] << 16 | (uint32_t) d[3] << 24;
        }
        if (n < 4 || blob % 4 != 0 || (size_t) blob + 4 >= n) {
            LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.precompiled_charsmap is malformed (%zu bytes, "
                            "double array of %u)\n",
                            n, blob);
            return false;
        }
        u->charsmap = GGML_MALLOC(n);
        if (!u->charsmap) {
            return false;
        }
        memcpy(u->charsmap, gguf_get_arr_data(g, k), n);
        uint32_t * units = (uint32_t *) (void *) (u->charsmap + 4);  // 4-aligned: malloc'd, offset 4
        for (size_t i = 0; i < blob / 4; i++) {  // little-endian in the file
            const uint8_t * b = u->charsmap + 4 + 4 * i;
            units[i] = (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
        }
        u->units = units;
        u->n_units = blob / 4;
        u->repl = (const char *) u->charsmap + 4 + blob;
        u->repl_size = n - 4 - blob;
    }

    // sentencepiece starts the highest score at FLT_MIN (the smallest positive float), so with the
    // usual all-negative log probabilities a user-defined piece scores about -0.1.
    u->min_score = FLT_MAX;
    u->max_score = FLT_MIN;
    size_t total = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const struct llama_vocab_token * t = &v->tokens[id];
        if (t->type == LLAMA_TOKEN_TYPE_NORMAL) {
            u->min_score = fminf(u->min_score, t->score);
            u->max_score = fmaxf(u->max_score, t->score);
        }
        if (ugm_token_in_trie(t)) {
            total += t->len;
        }
    }
    if (u->min_score == FLT_MAX) {
        u->min_score = 0.0f;
    }
    if (!llama_vocab_trie_init(&u->trie, total)) {
        return false;
    }
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const struct llama_vocab_token * t = &v->tokens[id];
        if (ugm_token_in_trie(t) && !llama_vocab_trie_insert(&u->trie, (const uint8_t *) v->text + t->off, t->len, id)) {
            return false;
        }
    }
    return true;
}

void llama_vocab_ugm_free(struct llama_vocab * v) {
    if (v->ugm) {
        free(v->ugm->charsmap);
        llama_vocab_trie_free(&v->ugm->trie);
        free(v->ugm);
        v->ugm = NULL;
    }
}

// ---- normalization ----

// Length of the longest charsmap key that prefixes s[0, n), and its replacement; 0 if none.
// The double array: unit u has a leaf flag (bit 8), a label (bits 0-7 and 31) and an offset
// (bits 10-30, shifted left by 8 when bit 9 is set); a child of node p by byte c is at
// p ^ offset(u_p) ^ c when its label is c; a leaf's value is at node ^ offset.
static size_t ugm_charsmap_match(const struct llama_vocab_ugm * u, const uint8_t * s, size_t n, const char ** repl,
                                 size_t * repl_len) {
    if (u->n_units == 0) {
        return 0;
    }
#define UNIT_OFFSET(x) (((x) >> 10) << (((x) & (1u << 9)) >> 6))
#define UNIT_LABEL(x)  ((x) & ((1u << 31) | 0xFFu))
#define UNIT_LEAF(x)   (((x) >> 8) & 1u)
#define UNIT_VALUE(x)  ((x) & ((1u << 31) - 1))
    size_t best = 0;
    uint32_t node = UNIT_OFFSET(u->units[0]);
    for (size_t i = 0; i < n && s[i] != 0; i++) {
        node ^= s[i];
        if (node >= u->n_units) {
            break;
        }
        const uint32_t unit = u->units[node];
        if (UNIT_LABEL(unit) != s[i]) {
            break;
        }
        node ^= UNIT_OFFSET(unit);
        if (node >= u->n_units) {
            break;
        }
        if (UNIT_LEAF(unit)) {
            const uint32_t value = UNIT_VALUE(u->units[node]);
            if (value < u->repl_size) {
                const char * r = u->repl + value;
                const char * end = memchr(r, 0, u->repl_size - value);
                if (end) {  // an unterminated replacement is no match
                    best = i + 1;
                    *repl = r;
                    *repl_len = (size_t) (end - r);
                }
            }
        }
    }
#undef UNIT_OFFSET
#undef UNIT_LABEL
#undef UNIT_LEAF
#undef UNIT_VALUE
    return best;
}

// Length of the longest user-defined token prefixing s[0, n); 0 if none.
static size_t ugm_user_defined_match(const struct llama_vocab * v, const uint8_t * s, size_t n) {
    const struct llama_vocab_ugm * u = v->ugm;
    size_t best = 0;
    uint32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        node = llama_vocab_trie_child(&u->trie, node, s[i]);
        if (node == 0) {
            break;
        }
        const int32_t id = u->trie.node_token[node];
        if (id >= 0 && v->tokens[id].type == LLAMA_TOKEN_TYPE_USER_DEFINED) {
            best = i + 1;
        }
    }
    return best;
}

struct ugm_buf {
    char * data;
    size_t n, cap;
    bool oom;
};

static void ugm_append(struct ugm_buf * b, const char * s, size_t n) {
    if (b->oom) {
        return;
    }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        while (cap < b->n + n) {
            cap *= 2;
        }
        char * d = GGML_REALLOC(b->data, cap);
        if (!d) {
            b->oom = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->n, s, n);
    b->n += n;
}

static const char UGM_SPACE[3] = { (char) 0xE2, (char) 0x96, (char) 0x81 };  // ▁

// Normalizes one prefix of s[0, n): its replacement text and the input bytes it consumes.
static size_t ugm_normalize_prefix(const struct llama_vocab * v, const uint8_t * s, size_t n, const char ** piece,
                                   size_t * piece_len) {
    size_t used = ugm_user_defined_match(v, s, n);
    if (used > 0) {
        *piece = (const char *) s;
        *piece_len = used;
        return used;
    }
    used = ugm_charsmap_match(v->ugm, s, n, piece, piece_len);
    if (used > 0) {
        return used;
    }
    if (unicode_utf8_decode(s, n, &used) == UNICODE_INVALID) {
        *piece = "\xEF\xBF\xBD";  // U+FFFD for a byte that starts no character
        *piece_len = 3;
    } else {
        *piece = (const char *) s;
        *piece_len = used;
    }
    return used;
}

// The normalized text, as sentencepiece's normalizer writes it: leading spaces skipped (when
// squeezing), the dummy ▁ prefix once the text is not empty, runs of spaces squeezed, trailing
// ▁ dropped (when squeezing: also a prefix left alone).
static void ugm_normalize(const struct llama_vocab * v, const uint8_t * s, size_t n, struct ugm_buf * out) {
    const bool squeeze = v->remove_extra_whitespaces;
    const char * piece;
    size_t piece_len, pos = 0;
    while (squeeze && pos < n) {
        const size_t used = ugm_normalize_prefix(v, s + pos, n - pos, &piece, &piece_len);
        if (piece_len != 1 || piece[0] != ' ') {
            break;
        }
        pos += used;
    }
    if (pos == n) {
        return;
    }
    if (v->add_space_prefix) {
        ugm_append(out, UGM_SPACE, 3);
    }
    bool prev_space = squeeze;
    while (pos < n && !out->oom) {
        pos += ugm_normalize_prefix(v, s + pos, n - pos, &piece, &piece_len);
        for (size_t i = 0; i < piece_len; i++) {
            const bool space = piece[i] == ' ';
            if (space && !(squeeze && prev_space)) {
                ugm_append(out, UGM_SPACE, 3);
            } else if (!space) {
                ugm_append(out, piece + i, 1);
            }
            prev_space = space;
        }
    }
    while (squeeze && out->n >= 3 && memcmp(out->data + out->n - 3, UGM_SPACE, 3) == 0) {
        out->n -= 3;
    }
}

// ---- Viterbi ----

void llama_vocab_ugm_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out) {
    const struct llama_vocab_ugm * u = v->ugm;
    struct ugm_buf norm = { NULL, 0, 0, false };
    ugm_normalize(v, (const uint8_t *) text, len, &norm);
    const size_t n = norm.n;
    if (norm.oom) {
        out->oom = true;
        free(norm.data);
        return;
    }
    if (n == 0) {
        free(norm.data);
        return;
    }
    double * score = GGML_MALLOC((n + 1) * sizeof(double));
    int32_t * tok = GGML_MALLOC((n + 1) * sizeof(int32_t));
    size_t * from = GGML_MALLOC((n + 1) * sizeof(size_t));
    if (!score || !tok || !from) {
        out->oom = true;
        goto done;
    }
    for (size_t i = 0; i <= n; i++) {
        score[i] = -DBL_MAX;
        tok[i] = -1;
        from[i] = 0;
    }
    score[0] = 0.0;
    const double unk_score = (double) u->min_score - 10.0;
    const uint8_t * s = (const uint8_t *) norm.data;
    for (size_t pos = 0; pos < n;) {
        size_t clen;
        unicode_utf8_decode(s + pos, n - pos, &clen);
        if (score[pos] == -DBL_MAX) {
            pos += clen;
            continue;
        }
        bool whole_char = false;
        uint32_t node = 0;
        for (size_t end = pos; end < n;) {
            node = llama_vocab_trie_child(&u->trie, node, s[end++]);
            if (node == 0) {
                break;
            }
            const int32_t id = u->trie.node_token[node];
            if (id < 0) {
                continue;
            }
            whole_char |= end - pos == clen;
            double ts = v->tokens[id].score;
            if (v->tokens[id].type == LLAMA_TOKEN_TYPE_USER_DEFINED) {
                // as long as it is in characters, times the highest score, minus 0.1
                size_t chars = 0;
                for (size_t k = pos; k < end; k++) {
                    chars += (s[k] & 0xC0) != 0x80;
                }
                ts = (double) chars * u->max_score - 0.1;
            }
            const double cand = score[pos] + ts;
            if (cand > score[end]) {
                score[end] = cand;
                tok[end] = id;
                from[end] = pos;
            }
        }
        if (!whole_char) {
            const double cand = score[pos] + unk_score;
            if (cand > score[pos + clen]) {
                score[pos + clen] = cand;
                tok[pos + clen] = v->unk;
                from[pos + clen] = pos;
            }
        }
        pos += clen;
    }
    {
        // Backtrack, then reverse; adjacent unknowns collapse into one.
        const size_t first = out->n;
        bool prev_unk = false;
        for (size_t end = n; end > 0; end = from[end]) {
            const bool unk = tok[end] == v->unk || tok[end] < 0;
            if (!(unk && prev_unk) && (tok[end] >= 0 || v->unk >= 0)) {  // without an unknown token: dropped
                llama_vocab_tokens_push(out, tok[end] < 0 ? v->unk : tok[end]);
            }
            prev_unk = unk;
        }
        if (!out->oom) {
            for (size_t i = first, j = out->n - 1; i < j; i++, j--) {
                const llama_token t = out->data[i];
                out->data[i] = out->data[j];
                out->data[j] = t;
            }
        }
    }
done:
    free(score);
    free(tok);
    free(from);
    free(norm.data);
}
