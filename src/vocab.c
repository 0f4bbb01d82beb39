// vocab.c — the vocabulary: loading from GGUF metadata, the lookups, special-token splitting,
// llama_tokenize / llama_token_to_piece / llama_detokenize and the getters of llama.h.
// The algorithms of one text fragment live in vocab-spm.c, vocab-bpe.c (with vocab-pre.c and
// vocab-regex.c for its pre-tokenizers) and vocab-ugm.c.
#include "llama-vocab.h"
#include "grammar.h"
#include "unicode.h"
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// small helpers

void llama_vocab_tokens_push(struct llama_vocab_tokens * list, llama_token id) {
    if (list->oom) {
        return;
    }
    if (list->n == list->cap) {
        const size_t cap = list->cap ? 2 * list->cap : 64;
        llama_token * d = GGML_REALLOC(list->data, cap * sizeof(llama_token));
        if (d == NULL) {
            list->oom = true;
            return;
        }
        list->data = d;
        list->cap = cap;
    }
    list->data[list->n++] = id;
}

// 64-bit hash of a byte string (8 bytes per step, then a final avalanche).
uint64_t llama_vocab_hash_bytes(const char * s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t) n * 0xFF51AFD7ED558CCDull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return h;
}

uint64_t llama_vocab_hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
}

// Smallest power of two >= 2 * n (load factor <= 1/2).
uint64_t llama_vocab_table_size(uint64_t n) {
    uint64_t size = 16;
    while (size < 2 * n) {
        size *= 2;
    }
    return size;
}

llama_token llama_vocab_find(const struct llama_vocab * vocab, const char * text, size_t len) {
    const uint64_t h = llama_vocab_hash_bytes(text, len);
    const uint32_t tag = (uint32_t) (h >> 32);
    uint64_t i = h & vocab->index_mask;
    for (;;) {
        const uint64_t slot = vocab->index[i];
        if (slot == 0) {
            return -1;
        }
        // The tag (high hash bits) rules out almost every other entry without touching its text.
        if ((uint32_t) (slot >> 32) == tag) {
            const uint32_t id = (uint32_t) slot - 1;
            const struct llama_vocab_token * t = &vocab->tokens[id];
            if (t->len == len && memcmp(vocab->text + t->off, text, len) == 0) {
                return (llama_token) id;
            }
        }
        i = (i + 1) & vocab->index_mask;
    }
}

bool llama_vocab_merge_find(const struct llama_vocab * vocab, llama_token left, llama_token right, int32_t * rank,
                            llama_token * result) {
    if (vocab->merges == NULL) {
        return false;
    }
    const uint64_t key = (uint64_t) (uint32_t) left << 32 | (uint32_t) right;
    uint64_t i = llama_vocab_hash_u64(key) & vocab->merges_mask;
    for (;;) {
        const struct llama_vocab_merge * m = &vocab->merges[i];
        if (m->key == key) {
            *rank = m->rank;
            *result = m->result;
            return true;
        }
        if (m->key == UINT64_MAX) {
            return false;
        }
        i = (i + 1) & vocab->merges_mask;
    }
}

static bool vocab_token_valid(const struct llama_vocab * v, llama_token id) { return id >= 0 && id < v->n_tokens; }

// ---------------------------------------------------------------------------------------------
// resolving a vocab-or-model argument

const struct llama_vocab * llama_vocab_resolve(const void * vocab_or_model, const char * func) {
    if (vocab_or_model == NULL) {
        LLAMA_LOG_ERROR("%s: vocab is NULL\n", func);
        return NULL;
    }
    uint32_t magic;
    memcpy(&magic, vocab_or_model, sizeof(magic));
    if (magic == LLAMA_MAGIC_VOCAB) {
        return vocab_or_model;
    }
    if (magic == LLAMA_MAGIC_MODEL) {
        const struct llama_vocab * v = llama_model_vocab_internal(vocab_or_model);
        if (v == NULL) {
            LLAMA_LOG_ERROR("%s: the model has no vocabulary\n", func);
        }
        return v;
    }
    LLAMA_LOG_ERROR("%s: not a live llama_vocab or llama_model (%s pointer)\n", func,
                    magic == LLAMA_MAGIC_DEAD ? "freed" : "foreign");
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// getters (each accepts a vocab or a model)

#define VOCAB_OR(ret)                                                    \
    const struct llama_vocab * v = llama_vocab_resolve(vocab, __func__); \
    if (v == NULL) {                                                     \
        return ret;                                                      \
    }

const char * llama_vocab_get_text(const struct llama_vocab * vocab, llama_token token) {
    VOCAB_OR(NULL)
    if (!vocab_token_valid(v, token)) {
        LLAMA_LOG_ERROR("%s: invalid token id %d (vocab has %d)\n", __func__, token, v->n_tokens);
        return NULL;
    }
    return v->text + v->tokens[token].off;
}

float llama_vocab_get_score(const struct llama_vocab * vocab, llama_token token) {
    VOCAB_OR(0.0f)
    if (!vocab_token_valid(v, token)) {
        LLAMA_LOG_ERROR("%s: invalid token id %d (vocab has %d)\n", __func__, token, v->n_tokens);
        return 0.0f;
    }
    return v->tokens[token].score;
}

enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab * vocab, llama_token token) {
    VOCAB_OR(LLAMA_TOKEN_ATTR_UNDEFINED)
    if (!vocab_token_valid(v, token)) {
        LLAMA_LOG_ERROR("%s: invalid token id %d (vocab has %d)\n", __func__, token, v->n_tokens);
        return LLAMA_TOKEN_ATTR_UNDEFINED;
    }
    return (enum llama_token_attr) v->tokens[token].attr;
}

bool llama_vocab_is_eog(const struct llama_vocab * vocab, llama_token token) {
    VOCAB_OR(false)
    return vocab_token_valid(v, token) && v->eog[token];
}

bool llama_vocab_is_control(const struct llama_vocab * vocab, llama_token token) {
    VOCAB_OR(false)
    return vocab_token_valid(v, token) && (v->tokens[token].attr & LLAMA_TOKEN_ATTR_CONTROL);
}

#define VOCAB_ID_GETTER(name, field) \
    llama_token name(const struct llama_vocab * vocab) { VOCAB_OR(LLAMA_TOKEN_NULL) return v->field; }

VOCAB_ID_GETTER(llama_vocab_bos, bos)
VOCAB_ID_GETTER(llama_vocab_eos, eos)
VOCAB_ID_GETTER(llama_vocab_eot, eot)
VOCAB_ID_GETTER(llama_vocab_sep, sep)
VOCAB_ID_GETTER(llama_vocab_nl, nl)
VOCAB_ID_GETTER(llama_vocab_pad, pad)
VOCAB_ID_GETTER(llama_vocab_mask, mask)
VOCAB_ID_GETTER(llama_vocab_cls, cls)
VOCAB_ID_GETTER(llama_vocab_fim_pre, fim_pre)
VOCAB_ID_GETTER(llama_vocab_fim_suf, fim_suf)
VOCAB_ID_GETTER(llama_vocab_fim_mid, fim_mid)
VOCAB_ID_GETTER(llama_vocab_fim_pad, fim_pad)
VOCAB_ID_GETTER(llama_vocab_fim_rep, fim_rep)
VOCAB_ID_GETTER(llama_vocab_fim_sep, fim_sep)

bool llama_vocab_get_add_bos(const struct llama_vocab * vocab) { VOCAB_OR(false) return v->add_bos; }
bool llama_vocab_get_add_eos(const struct llama_vocab * vocab) { VOCAB_OR(false) return v->add_eos; }
bool llama_vocab_get_add_sep(const struct llama_vocab * vocab) { VOCAB_OR(false) return v->add_sep; }

const llama_token * llama_vocab_get_suppress_tokens(const struct llama_vocab * vocab, int32_t * n_suppress_tokens) {
    if (n_suppress_tokens != NULL) {
        *n_suppress_tokens = 0;
    }
    llama_vocab_resolve(vocab, __func__);
    return NULL;
}

enum llama_vocab_type llama_vocab_type(const struct llama_vocab * vocab) {
    VOCAB_OR(LLAMA_VOCAB_TYPE_NONE)
    return v->type;
}

int32_t llama_vocab_n_tokens(const struct llama_vocab * vocab) {
    VOCAB_OR(0)
    return v->n_tokens;
}

int32_t llama_n_vocab(const struct llama_vocab * vocab) { return llama_vocab_n_tokens(vocab); }

// Deprecated aliases.
const char * llama_token_get_text(const struct llama_vocab * vocab, llama_token token) {
    return llama_vocab_get_text(vocab, token);
}
float llama_token_get_score(const struct llama_vocab * vocab, llama_token token) { return llama_vocab_get_score(vocab, token); }
enum llama_token_attr llama_token_get_attr(const struct llama_vocab * vocab, llama_token token) {
    return llama_vocab_get_attr(vocab, token);
}
bool llama_token_is_eog(const struct llama_vocab * vocab, llama_token token) { return llama_vocab_is_eog(vocab, token); }
bool llama_token_is_control(const struct llama_vocab * vocab, llama_token token) { return llama_vocab_is_control(vocab, token); }
llama_token llama_token_bos(const struct llama_vocab * vocab) { return llama_vocab_bos(vocab); }
llama_token llama_token_eos(const struct llama_vocab * vocab) { return llama_vocab_eos(vocab); }
llama_token llama_token_eot(const struct llama_vocab * vocab) { return llama_vocab_eot(vocab); }
llama_token llama_token_cls(const struct llama_vocab * vocab) { return llama_vocab_cls(vocab); }
llama_token llama_token_sep(const struct llama_vocab * vocab) { return llama_vocab_sep(vocab); }
llama_token llama_token_nl(const struct llama_vocab * vocab) { return llama_vocab_nl(vocab); }
llama_token llama_token_pad(const struct llama_vocab * vocab) { return llama_vocab_pad(vocab); }
bool llama_add_bos_token(const struct llama_vocab * vocab) { return llama_vocab_get_add_bos(vocab); }
bool llama_add_eos_token(const struct llama_vocab * vocab) { return llama_vocab_get_add_eos(vocab); }
llama_token llama_token_fim_pre(const struct llama_vocab * vocab) { return llama_vocab_fim_pre(vocab); }
llama_token llama_token_fim_suf(const struct llama_vocab * vocab) { return llama_vocab_fim_suf(vocab); }
llama_token llama_token_fim_mid(const struct llama_vocab * vocab) { return llama_vocab_fim_mid(vocab); }
llama_token llama_token_fim_pad(const struct llama_vocab * vocab) { return llama_vocab_fim_pad(vocab); }
llama_token llama_token_fim_rep(const struct llama_vocab * vocab) { return llama_vocab_fim_rep(vocab); }
llama_token llama_token_fim_sep(const struct llama_vocab * vocab) { return llama_vocab_fim_sep(vocab); }

// ---------------------------------------------------------------------------------------------
// tokenize

// Longest special token starting at s (n bytes) that may match: user-defined always, control
// and unknown with parse_special. Returns its id and stores its length, or -1.
static llama_token vocab_match_special(const struct llama_vocab * v, const uint8_t * s, size_t n, bool parse_special,
                                       size_t * match_len) {
    llama_token best = -1;
    int32_t node = v->trie_root_child[s[0]];
    size_t k = 1;
    while (node >= 0) {
        const int32_t id = v->trie[node].token;
        if (id >= 0 && (parse_special || v->tokens[id].type == LLAMA_TOKEN_TYPE_USER_DEFINED)) {
            best = id;
            *match_len = k;
        }
        if (k == n) {
            break;
        }
        int32_t c = v->trie[node].child;
        while (c >= 0 && v->trie[c].byte != s[k]) {
            c = v->trie[c].sibling;
        }
        node = c;
        k++;
    }
    return best;
}

// Tokenizes text[0, len) into out, splitting off special tokens first.
//
// SPM segments: the ▁ prefix (add_space_prefix) starts the text and every stretch after a
// control token, as if each were encoded on its own. User-defined tokens are part of the text,
// as sentencepiece treats them: one at the very start of a segment leaves the prefix as a
// token of its own ("▁" then the token), and no prefix follows it.
static void vocab_tokenize_text(const struct llama_vocab * v, const char * text, size_t len, bool parse_special,
                                struct llama_vocab_tokens * out) {
    const uint8_t need = parse_special ? 2 : 1;
    const bool spm = v->type == LLAMA_VOCAB_TYPE_SPM;
    bool segment_start = true;
    size_t frag = 0, pos = 0;
    while (pos <= len) {
        llama_token id = -1;
        size_t mlen = 0;
        if (pos < len && (v->first_byte[(uint8_t) text[pos]] & need)) {
            id = vocab_match_special(v, (const uint8_t *) text + pos, len - pos, parse_special, &mlen);
        }
        if (id < 0 && pos < len) {
            pos++;
            continue;
        }
        // Raw text before the special token (or before the end).
        if (pos > frag) {
            if (spm) {
                llama_vocab_spm_tokenize(v, text + frag, pos - frag, v->add_space_prefix && segment_start, out);
            } else if (v->type == LLAMA_VOCAB_TYPE_UGM) {
                llama_vocab_ugm_tokenize(v, text + frag, pos - frag, out);
            } else if (v->type == LLAMA_VOCAB_TYPE_RWKV) {
                llama_vocab_rwkv_tokenize(v, text + frag, pos - frag, out);
            } else if (v->type == LLAMA_VOCAB_TYPE_WPM) {
                llama_vocab_wpm_tokenize(v, text + frag, pos - frag, out);
            } else if (v->type == LLAMA_VOCAB_TYPE_PLAMO2) {
                llama_vocab_plamo2_tokenize(v, text + frag, pos - frag, out);
            } else if (v->type == LLAMA_VOCAB_TYPE_TEST) {
                llama_vocab_test_tokenize(v, text + frag, pos - frag, out);
            } else {
                llama_vocab_bpe_tokenize(v, text + frag, pos - frag, out);
            }
            segment_start = false;
        }
        if (id < 0) {
            break;  // pos == len
        }
        if (v->tokens[id].type == LLAMA_TOKEN_TYPE_USER_DEFINED) {
            if (spm && v->add_space_prefix && segment_start) {
                llama_vocab_spm_tokenize(v, "", 0, true, out);
            }
            segment_start = false;
        } else {
            segment_start = true;
        }
        llama_vocab_tokens_push(out, id);
        pos += mlen;
        frag = pos;
    }
}

int32_t llama_tokenize(const struct llama_vocab * vocab, const char * text, int32_t text_len, llama_token * tokens,
                       int32_t n_tokens_max, bool add_special, bool parse_special) {
    VOCAB_OR(0)
    if (text_len < 0 || (text == NULL && text_len > 0)) {
        LLAMA_LOG_ERROR("%s: invalid text (%p, %d bytes)\n", __func__, (const void *) text, text_len);
        return 0;
    }
    if (v->type == LLAMA_VOCAB_TYPE_NONE) {
        LLAMA_LOG_ERROR("%s: the model has no vocabulary (tokenizer.ggml.model = 'none'): tokenizing is not "
                        "supported; returning 0 tokens\n",
                        __func__);
        return 0;
    }
    if (n_tokens_max < 0 || tokens == NULL) {
        n_tokens_max = 0;
    }
    struct llama_vocab_tokens out = { NULL, 0, 0, false };
    if (add_special && v->add_bos && v->bos >= 0) {
        llama_vocab_tokens_push(&out, v->bos);
    }
    if (text_len > 0) {
        vocab_tokenize_text(v, text, (size_t) text_len, parse_special, &out);
    }
    if (add_special && v->add_eos && v->eos >= 0) {
        llama_vocab_tokens_push(&out, v->eos);
    }
    if (add_special && v->add_sep && v->sep >= 0) {
        llama_vocab_tokens_push(&out, v->sep);
    }
    if (out.oom || out.n > INT32_MAX) {
        LLAMA_LOG_ERROR("%s: out of memory tokenizing %d bytes\n", __func__, text_len);
        free(out.data);
        return 0;
    }
    const int32_t n = (int32_t) out.n;
    if (n > n_tokens_max) {
        free(out.data);
        return -n;
    }
    if (n > 0) {
        memcpy(tokens, out.data, (size_t) n * sizeof(llama_token));
    }
    free(out.data);
    return n;
}

// ---------------------------------------------------------------------------------------------
// detokenize

// Writes the text of token id into out (capacity >= its stored length + 12: ▅, a byte, a hex id); returns the length.
static size_t vocab_piece(const struct llama_vocab * v, llama_token id, bool special, char * out) {
    const struct llama_vocab_token * t = &v->tokens[id];
    const char * s = v->text + t->off;
    // SPM, UGM and WPM: user-defined tokens are text like the others; ▁ stands for a space
    const bool spm = v->type == LLAMA_VOCAB_TYPE_SPM || v->type == LLAMA_VOCAB_TYPE_UGM || v->type == LLAMA_VOCAB_TYPE_WPM;
    const bool underscore_spaces = spm || v->escape_whitespaces;
    switch (t->type) {
        case LLAMA_TOKEN_TYPE_CONTROL:
        case LLAMA_TOKEN_TYPE_UNUSED:
            if (!special) {
                return 0;
            }
            memcpy(out, s, t->len);
            return t->len;
        case LLAMA_TOKEN_TYPE_UNKNOWN:
            if (special) {
                memcpy(out, s, t->len);
                return t->len;
            }
            memcpy(out, "\xe2\x96\x85", 3);  // ▅, what llama.cpp shows for unknown tokens
            return 3;
        case LLAMA_TOKEN_TYPE_BYTE: {
            unsigned b;
            if (t->len == 6 && sscanf(s, "<0x%2X>", &b) == 1) {
                out[0] = (char) b;
                return 1;
            }
            break;  // not of the <0xXX> form: shown as text
        }
        case LLAMA_TOKEN_TYPE_USER_DEFINED:
            if (!spm) {
                memcpy(out, s, t->len);
                return t->len;
            }
            break;
        default: break;
    }
    if (v->type == LLAMA_VOCAB_TYPE_TEST) {
        return (size_t) snprintf(out, 12, "%x", (unsigned) id);  // the id in hex, as llama.cpp's test vocab
    }
    if (v->type == LLAMA_VOCAB_TYPE_PLAMO2 || v->type == LLAMA_VOCAB_TYPE_NONE) {
        memcpy(out, s, t->len);  // the text as it stands
        return t->len;
    }
    if (underscore_spaces) {
        // ▁ is a space.
        size_t m = 0;
        for (uint32_t i = 0; i < t->len; i++) {
            if (i + 2 < t->len && (uint8_t) s[i] == 0xE2 && (uint8_t) s[i + 1] == 0x96 && (uint8_t) s[i + 2] == 0x81) {
                out[m++] = ' ';
                i += 2;
            } else {
                out[m++] = s[i];
            }
        }
        return m;
    }
    if (v->bpe_raw_utf8) {
        memcpy(out, s, t->len);
        return t->len;
    }
    if (v->bpe_session == LLAMA_VOCAB_BPE_DNA) {
        const size_t n = llama_vocab_dna_text_len(v, id, s, t->len);
        if (n < t->len) {  // a k-mer: its bases (ASCII letters, themselves in the byte alphabet)
            memcpy(out, s, n);
            return n;
        }
    }
    if (v->type == LLAMA_VOCAB_TYPE_RWKV) {
        return llama_vocab_rwkv_unescape(s, t->len, out);
    }
    // Byte-level: each character stands for a byte; a token with a character outside the
    // alphabet is shown as its text (as the reference ByteLevel decoder does).
    size_t m = 0;
    for (uint32_t i = 0; i < t->len;) {
        size_t clen;
        const uint32_t cp = unicode_utf8_decode((const uint8_t *) s + i, t->len - i, &clen);
        const int b = cp == UNICODE_INVALID ? -1 : unicode_cpt_to_byte(cp);
        if (b < 0) {
            memcpy(out, s, t->len);
            return t->len;
        }
        out[m++] = (char) b;
        i += (uint32_t) clen;
    }
    return m;
}

int32_t llama_token_to_piece(const struct llama_vocab * vocab, llama_token token, char * buf, int32_t length, int32_t lstrip,
                             bool special) {
    VOCAB_OR(0)
    if (!vocab_token_valid(v, token)) {
        LLAMA_LOG_ERROR("%s: invalid token id %d (vocab has %d)\n", __func__, token, v->n_tokens);
        return 0;
    }
    if (length < 0 || buf == NULL) {
        length = 0;
    }
    char small[256];
    const size_t cap = v->tokens[token].len + 12;
    char * tmp = cap <= sizeof(small) ? small : GGML_MALLOC(cap);
    if (tmp == NULL) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        return 0;
    }
    size_t n = vocab_piece(v, token, special, tmp);
    const char * p = tmp;
    while (lstrip > 0 && n > 0 && *p == ' ') {
        p++;
        n--;
        lstrip--;
    }
    int32_t ret;
    if (n > (size_t) length) {
        ret = -(int32_t) n;
    } else {
        if (n > 0) {
            memcpy(buf, p, n);
        }
        ret = (int32_t) n;
    }
    if (tmp != small) {
        free(tmp);
    }
    return ret;
}

// In-place replacement of every non-overlapping pat (left to right) by rep (shorter); returns the new length.
static size_t vocab_replace(char * s, size_t n, const char * pat, const char * rep) {
    const size_t pl = strlen(pat), rl = strlen(rep);
    size_t r = 0, w = 0;
    while (r < n) {
        if (s[r] == pat[0] && r + pl <= n && memcmp(s + r, pat, pl) == 0) {
            memmove(s + w, rep, rl);
            w += rl;
            r += pl;
        } else {
            s[w++] = s[r++];
        }
    }
    return w;
}

int32_t llama_detokenize(const struct llama_vocab * vocab, const llama_token * tokens, int32_t n_tokens, char * text,
                         int32_t text_len_max, bool remove_special, bool unparse_special) {
    VOCAB_OR(0)
    if (n_tokens < 0 || (tokens == NULL && n_tokens > 0)) {
        LLAMA_LOG_ERROR("%s: invalid tokens (%p, %d)\n", __func__, (const void *) tokens, n_tokens);
        return 0;
    }
    if (text_len_max < 0 || text == NULL) {
        text_len_max = 0;
    }
    int32_t i0 = 0, i1 = n_tokens;
    if (remove_special && v->add_bos && i1 > i0 && tokens[i0] == v->bos) {
        i0++;
    }
    if (remove_special && v->add_eos && i1 > i0 && tokens[i1 - 1] == v->eos) {
        i1--;
    }
    // Upper bound of the output: stored text lengths (+12 for ▅, bytes, hex ids) of every token.
    size_t cap = 1;
    for (int32_t i = i0; i < i1; i++) {
        if (vocab_token_valid(v, tokens[i])) {
            cap += v->tokens[tokens[i]].len + 12;
        }
    }
    char * out = GGML_MALLOC(cap);
    if (out == NULL) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        return 0;
    }
    // SPM: the space of the ▁ prefix that tokenizing put at the start of the text and after each
    // control (or unknown) token is dropped from the first non-empty piece that follows.
    // WPM: each word's first token carries the ▁, so the text's first one is dropped the same way.
    const bool spm_prefix = ((v->type == LLAMA_VOCAB_TYPE_SPM || v->type == LLAMA_VOCAB_TYPE_UGM) && v->add_space_prefix) ||
        v->type == LLAMA_VOCAB_TYPE_WPM;
    bool strip = spm_prefix;
    size_t n = 0;
    for (int32_t i = i0; i < i1; i++) {
        const llama_token id = tokens[i];
        if (!vocab_token_valid(v, id)) {
            LLAMA_LOG_ERROR("%s: invalid token id %d at %d skipped (vocab has %d)\n", __func__, id, i, v->n_tokens);
            continue;
        }
        size_t m = vocab_piece(v, id, unparse_special, out + n);
        if (strip && m > 0) {
            if (out[n] == ' ') {
                memmove(out + n, out + n + 1, m - 1);
                m--;
            }
            strip = false;
        }
        if (spm_prefix && (v->tokens[id].type == LLAMA_TOKEN_TYPE_CONTROL || v->tokens[id].type == LLAMA_TOKEN_TYPE_UNKNOWN)) {
            strip = true;
        }
        n += m;
    }
    if (v->clean_spaces) {
        // Hugging Face's clean_up_tokenization, in its order.
        static const char * const rules[][2] = {
            { " .", "." },     { " ?", "?" },   { " !", "!" },   { " ,", "," },     { " ' ", "'" },
            { " n't", "n't" }, { " 'm", "'m" }, { " 's", "'s" }, { " 've", "'ve" }, { " 're", "'re" },
        };
        for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
            n = vocab_replace(out, n, rules[r][0], rules[r][1]);
        }
    }
    int32_t ret;
    if (n > INT32_MAX) {
        LLAMA_LOG_ERROR("%s: text too long\n", __func__);
        ret = 0;
    } else if (n > (size_t) text_len_max) {
        ret = -(int32_t) n;
    } else {
        if (n > 0) {
            memcpy(text, out, n);
        }
        ret = (int32_t) n;
    }
    free(out);
    return ret;
}
