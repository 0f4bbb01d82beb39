// vocab-load.c — building a llama_vocab from the tokenizer.* keys of a GGUF: the vocabulary
// type, the token table and its text index, the merges, the per-type tables (unigram, RWKV,
// PLaMo-2), the special-token trie, the special ids and the end-of-generation set; and freeing it.
#include "llama-vocab.h"
#include "grammar.h"
#include "unicode.h"
#include "gguf.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// ---------------------------------------------------------------------------------------------
// loading

// Texts of tokens that end a turn; they join the end-of-generation set whenever present.
static const char * const VOCAB_EOG_TEXTS[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<|return|>",
    "<|call|>",   // o200k_harmony (gpt-oss): the reply's end, a tool call's end
};

// Integer metadata of any integer type; false if absent (a wrong type is logged).
static bool vocab_get_int(const struct gguf_context * g, const char * key, int64_t * out) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        return false;
    }
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_UINT8: *out = gguf_get_val_u8(g, id); return true;
        case GGUF_TYPE_INT8: *out = gguf_get_val_i8(g, id); return true;
        case GGUF_TYPE_UINT16: *out = gguf_get_val_u16(g, id); return true;
        case GGUF_TYPE_INT16: *out = gguf_get_val_i16(g, id); return true;
        case GGUF_TYPE_UINT32: *out = gguf_get_val_u32(g, id); return true;
        case GGUF_TYPE_INT32: *out = gguf_get_val_i32(g, id); return true;
        case GGUF_TYPE_UINT64: {
            const uint64_t u = gguf_get_val_u64(g, id);
            *out = u > INT64_MAX ? -1 : (int64_t) u;
            return true;
        }
        case GGUF_TYPE_INT64: *out = gguf_get_val_i64(g, id); return true;
        default:
            LLAMA_LOG_WARN("llama_vocab_load: %s has type %s, expected an integer; ignored\n", key,
                           gguf_type_name(gguf_get_kv_type(g, id)));
            return false;
    }
}

// Bool metadata (a bool, or an integer read as != 0); false if absent.
static bool vocab_get_bool(const struct gguf_context * g, const char * key, bool * out) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        return false;
    }
    if (gguf_get_kv_type(g, id) == GGUF_TYPE_BOOL) {
        *out = gguf_get_val_bool(g, id);
        return true;
    }
    int64_t v;
    if (vocab_get_int(g, key, &v)) {
        *out = v != 0;
        return true;
    }
    return false;
}

// String metadata, NULL if absent or not a string.
static const char * vocab_get_str(const struct gguf_context * g, const char * key) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0 || gguf_get_kv_type(g, id) != GGUF_TYPE_STRING) {
        return NULL;
    }
    return gguf_get_val_str(g, id);
}

// Reads a special-token id key into *id when present and valid.
// Reads a special-token id; false (logged, naming the id) when it lies outside the vocabulary.
static bool vocab_read_id(struct llama_vocab * v, const struct gguf_context * g, const char * key, llama_token * id) {
    int64_t x;
    if (!vocab_get_int(g, key, &x)) {
        return true;
    }
    if (x < 0 || x >= v->n_tokens) {
        // -1 (and some converters' UINT32_MAX) mean "none"; anything else out of range is a mistake.
        if (x != -1 && x != (int64_t) UINT32_MAX) {
            LLAMA_LOG_ERROR("llama_vocab_load: %s = token id %" PRId64 " is not in the vocabulary (%d tokens)\n", key, x,
                            v->n_tokens);
            return false;
        }
        *id = LLAMA_TOKEN_NULL;
        return true;
    }
    *id = (llama_token) x;
    return true;
}

static bool vocab_is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }

// A token's text as the tokenizer needs it: valid UTF-8, and BYTE tokens spelled <0xHH>;
// false (logged, naming the token id) otherwise.
static bool vocab_check_token(size_t id, const char * text, size_t len, int32_t type) {
    for (size_t i = 0; i < len;) {
        size_t n;
        if (unicode_utf8_decode((const uint8_t *) text + i, len - i, &n) == UNICODE_INVALID) {
            LLAMA_LOG_ERROR("llama_vocab_load: token %zu is not valid UTF-8 (byte %zu of its text)\n", id, i);
            return false;
        }
        i += n;
    }
    if (type == LLAMA_TOKEN_TYPE_BYTE &&
        !(len == 6 && memcmp(text, "<0x", 3) == 0 && vocab_is_hex(text[3]) && vocab_is_hex(text[4]) && text[5] == '>')) {
        LLAMA_LOG_ERROR("llama_vocab_load: token %zu has type BYTE but its text '%.*s' is not <0xHH>\n", id,
                        (int) (len < 32 ? len : 32), text);
        return false;
    }
    return true;
}

// First token whose text is one of texts, or LLAMA_TOKEN_NULL.
static llama_token vocab_find_any(const struct llama_vocab * v, const char * const * texts, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const llama_token id = llama_vocab_find(v, texts[i], strlen(texts[i]));
        if (id >= 0) {
            return id;
        }
    }
    return LLAMA_TOKEN_NULL;
}

static int32_t vocab_attr_of_type(int32_t type) {
    switch (type) {
        case LLAMA_TOKEN_TYPE_NORMAL: return LLAMA_TOKEN_ATTR_NORMAL;
        case LLAMA_TOKEN_TYPE_UNKNOWN: return LLAMA_TOKEN_ATTR_UNKNOWN;
        case LLAMA_TOKEN_TYPE_CONTROL: return LLAMA_TOKEN_ATTR_CONTROL;
        case LLAMA_TOKEN_TYPE_USER_DEFINED: return LLAMA_TOKEN_ATTR_USER_DEFINED;
        case LLAMA_TOKEN_TYPE_UNUSED: return LLAMA_TOKEN_ATTR_UNUSED;
        case LLAMA_TOKEN_TYPE_BYTE: return LLAMA_TOKEN_ATTR_BYTE;
        default: return LLAMA_TOKEN_ATTR_UNDEFINED;
    }
}

// Tokens whose text is matched in the input before tokenizing (always for user-defined ones,
// with parse_special for control and unknown ones). A unigram vocab's user-defined tokens are
// not: its normalizer keeps them whole inside the text, as sentencepiece does.
static bool vocab_is_special_text(const struct llama_vocab * v, const struct llama_vocab_token * t) {
    if (t->type == LLAMA_TOKEN_TYPE_USER_DEFINED && v->type == LLAMA_VOCAB_TYPE_UGM) {
        return false;
    }
    return t->len > 0 &&
        (t->type == LLAMA_TOKEN_TYPE_CONTROL || t->type == LLAMA_TOKEN_TYPE_USER_DEFINED || t->type == LLAMA_TOKEN_TYPE_UNKNOWN);
}

static bool vocab_build_trie(struct llama_vocab * v) {
    int32_t n_nodes = 1;
    int64_t total = 1;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (vocab_is_special_text(v, &v->tokens[i])) {
            total += v->tokens[i].len;
        }
    }
    if (total > INT32_MAX) {
        LLAMA_LOG_ERROR("llama_vocab_load: special token texts too long\n");
        return false;
    }
    v->trie = GGML_MALLOC((size_t) total * sizeof(struct llama_vocab_trie_node));
    if (v->trie == NULL) {
        return false;
    }
    v->trie[0] = (struct llama_vocab_trie_node) { -1, -1, -1, 0 };
    for (int b = 0; b < 256; b++) {
        v->trie_root_child[b] = -1;
    }
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const struct llama_vocab_token * t = &v->tokens[id];
        if (!vocab_is_special_text(v, t)) {
            continue;
        }
        const uint8_t * s = (const uint8_t *) v->text + t->off;
        v->first_byte[s[0]] |= 2;
        if (t->type == LLAMA_TOKEN_TYPE_USER_DEFINED) {
            v->first_byte[s[0]] |= 1;
        }
        int32_t node = 0;
        for (uint32_t k = 0; k < t->len; k++) {
            int32_t c = node == 0 ? v->trie_root_child[s[k]] : v->trie[node].child;
            if (node != 0) {
                while (c >= 0 && v->trie[c].byte != s[k]) {
                    c = v->trie[c].sibling;
                }
            }
            if (c < 0) {
                c = n_nodes++;
                v->trie[c] = (struct llama_vocab_trie_node) { -1, -1, -1, s[k] };
                if (node == 0) {
                    v->trie_root_child[s[k]] = c;
                } else {
                    v->trie[c].sibling = v->trie[node].child;
                    v->trie[node].child = c;
                }
            }
            node = c;
        }
        v->trie[node].token = id;  // a later duplicate text wins, as in the text index
    }
    v->n_trie = n_nodes;
    return true;
}

// Looks up n texts at once: every stage first issues the loads of all n lookups, so their cache
// misses overlap instead of following one another (a vocab of 100k+ tokens does not fit in cache
// and loading 300k merges means about a million lookups).
static void vocab_find_batch(const struct llama_vocab * v, const char * const * texts, const size_t * lens, llama_token * out,
                             int n) {
    uint64_t hash[256];
    uint32_t cand[256];  // candidate id + 1 (tag matched), 0 if none
    GGML_ASSERT(n <= 256);
    for (int i = 0; i < n; i++) {
        hash[i] = llama_vocab_hash_bytes(texts[i], lens[i]);
        VOCAB_PREFETCH(&v->index[hash[i] & v->index_mask], 0);
    }
    for (int i = 0; i < n; i++) {
        cand[i] = 0;
        const uint32_t tag = (uint32_t) (hash[i] >> 32);
        for (uint64_t h = hash[i] & v->index_mask;; h = (h + 1) & v->index_mask) {
            const uint64_t slot = v->index[h];
            if (slot == 0) {
                break;
            }
            if ((uint32_t) (slot >> 32) == tag) {
                cand[i] = (uint32_t) slot;
                VOCAB_PREFETCH(&v->tokens[(uint32_t) slot - 1], 0);
                break;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (cand[i]) {
            VOCAB_PREFETCH(v->text + v->tokens[cand[i] - 1].off, 0);
        }
    }
    for (int i = 0; i < n; i++) {
        out[i] = -1;
        if (cand[i]) {
            const struct llama_vocab_token * t = &v->tokens[cand[i] - 1];
            if (t->len == lens[i] && memcmp(v->text + t->off, texts[i], lens[i]) == 0) {
                out[i] = (llama_token) (cand[i] - 1);
                continue;
            }
            out[i] = llama_vocab_find(v, texts[i], lens[i]);  // a tag collision: probe on
        }
    }
}

static bool vocab_build_merges(struct llama_vocab * v, const struct gguf_context * g, int64_t key) {
    const size_t n = gguf_get_arr_n(g, key);
    if (n > INT32_MAX) {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.merges has %zu entries\n", n);
        return false;
    }
    const uint64_t size = llama_vocab_table_size(n);
    v->merges = GGML_MALLOC(size * sizeof(struct llama_vocab_merge));
    if (v->merges == NULL) {
        return false;
    }
    for (uint64_t i = 0; i < size; i++) {
        v->merges[i].key = UINT64_MAX;
    }
    v->merges_mask = size - 1;

    enum {
        BATCH = 64
    };
    const char * texts[3 * BATCH];
    size_t lens[3 * BATCH];
    llama_token ids[3 * BATCH];
    bool ok[BATCH];
    char * joined = NULL;  // the joined texts of one batch, back to back
    size_t joined_cap = 0;
    size_t n_bad = 0;
    for (size_t r0 = 0; r0 < n; r0 += BATCH) {
        const int nb = (int) (n - r0 < BATCH ? n - r0 : BATCH);
        size_t need = 0;
        for (int j = 0; j < nb; j++) {
            need += gguf_get_arr_str_len(g, key, r0 + j);
        }
        if (need > joined_cap) {
            char * p = GGML_REALLOC(joined, need);
            if (p == NULL) {
                free(joined);
                return false;
            }
            joined = p;
            joined_cap = need;
        }
        size_t jo = 0;
        for (int j = 0; j < nb; j++) {
            const char * s = gguf_get_arr_str(g, key, r0 + j);
            const size_t len = gguf_get_arr_str_len(g, key, r0 + j);
            // "left right": split at the first space after the first byte (a side is never empty).
            const char * sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
            ok[j] = sp != NULL;
            const size_t ll = sp ? (size_t) (sp - s) : 0, rl = sp ? len - ll - 1 : 0;
            texts[3 * j] = s;
            lens[3 * j] = ll;
            texts[3 * j + 1] = sp ? sp + 1 : s;
            lens[3 * j + 1] = rl;
            memcpy(joined + jo, s, ll);
            memcpy(joined + jo + ll, texts[3 * j + 1], rl);
            texts[3 * j + 2] = joined + jo;
            lens[3 * j + 2] = ll + rl;
            jo += ll + rl;
        }
        vocab_find_batch(v, texts, lens, ids, 3 * nb);
        uint64_t keys[BATCH], slots[BATCH];
        for (int j = 0; j < nb; j++) {
            keys[j] = (uint64_t) (uint32_t) ids[3 * j] << 32 | (uint32_t) ids[3 * j + 1];
            slots[j] = llama_vocab_hash_u64(keys[j]) & v->merges_mask;
            VOCAB_PREFETCH(&v->merges[slots[j]], 1);
        }
        for (int j = 0; j < nb; j++) {
            const llama_token a = ids[3 * j], b = ids[3 * j + 1], c = ids[3 * j + 2];
            if (!ok[j] || a < 0 || b < 0 || c < 0) {
                n_bad++;
                continue;
            }
            // A repeated pair takes the rank of its last occurrence, as the reference BPE's map does.
            const uint64_t k = keys[j];
            uint64_t i = slots[j];
            while (v->merges[i].key != UINT64_MAX && v->merges[i].key != k) {
                i = (i + 1) & v->merges_mask;
            }
            if (v->merges[i].key == UINT64_MAX) {
                v->n_merges++;
            }
            v->merges[i] = (struct llama_vocab_merge) { k, (int32_t) (r0 + j), c };
        }
    }
    free(joined);
    if (n_bad > 0) {
        LLAMA_LOG_WARN("llama_vocab_load: %zu of %zu merges name tokens not in the vocabulary; skipped\n", n_bad, n);
    }
    return true;
}

// The arrays of the vocabulary in g, checked for type and length.
struct vocab_arrays {
    int64_t k_tokens, k_merges;
    size_t n;
    const float * scores;   // NULL: every score 0
    const int32_t * types;  // NULL: every token NORMAL
    bool merges_optional;   // a BPE vocab that may lack merges (Kimi-K2)
};

// Phase 1: the vocabulary type from tokenizer.ggml.model, and the pre-tokenizer name of a BPE
// vocab (*pre_name: the file's, or the one the model name fixes). False (logged) if unknown.
static bool vocab_load_type(const struct gguf_context * g, const char * model, enum llama_vocab_type * type,
                            const char ** pre_name) {
    *pre_name = vocab_get_str(g, "tokenizer.ggml.pre");
    if (strcmp(model, "llama") == 0) {
        *type = LLAMA_VOCAB_TYPE_SPM;
    } else if (strcmp(model, "gpt2") == 0 || strcmp(model, "gemma4") == 0 || strcmp(model, "whitespace") == 0 ||
               strcmp(model, "hybriddna") == 0) {
        *type = LLAMA_VOCAB_TYPE_BPE;
        if (strcmp(model, "gemma4") == 0) {
            *pre_name = "gemma4";  // the model name fixes the pre-tokenizer
        }
    } else if (strcmp(model, "bert") == 0) {
        *type = LLAMA_VOCAB_TYPE_WPM;
    } else if (strcmp(model, "t5") == 0) {
        *type = LLAMA_VOCAB_TYPE_UGM;
    } else if (strcmp(model, "rwkv") == 0) {
        *type = LLAMA_VOCAB_TYPE_RWKV;
    } else if (strcmp(model, "plamo2") == 0) {
        *type = LLAMA_VOCAB_TYPE_PLAMO2;
    } else if (strcmp(model, "test") == 0) {
        *type = LLAMA_VOCAB_TYPE_TEST;
    } else if (strcmp(model, "none") == 0 || strcmp(model, "no_vocab") == 0) {
        *type = LLAMA_VOCAB_TYPE_NONE;
    } else {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.model '%s' is not supported (supported: 'llama' "
                        "SentencePiece, 'gpt2' byte-level BPE, 'gemma4' SentencePiece-style BPE, 'whitespace' and "
                        "'hybriddna' BPE, 't5' unigram, 'rwkv' RWKV world, 'bert' WordPiece, 'plamo2' PLaMo-2, "
                        "'test', 'none' / 'no_vocab')\n",
                        model);
        return false;
    }
    if (*type == LLAMA_VOCAB_TYPE_BPE) {
        if (*pre_name == NULL) {
            LLAMA_LOG_WARN("llama_vocab_load: tokenizer.ggml.pre is missing; using the 'default' pre-tokenizer, "
                           "tokenization may differ from the model's own\n");
            *pre_name = "default";
        } else if (!llama_vocab_pre_known(*pre_name)) {
            LLAMA_LOG_ERROR("llama_vocab_load: unknown pre-tokenizer tokenizer.ggml.pre = '%s'\n", *pre_name);
            return false;
        }
    }
    return true;
}

// Phase 2: finds and checks the token, score, type and merge arrays. False (logged) if malformed.
static bool vocab_load_arrays(const struct gguf_context * g, enum llama_vocab_type type, const char * pre_name,
                              struct vocab_arrays * a) {
    a->k_tokens = gguf_find_key(g, "tokenizer.ggml.tokens");
    if (a->k_tokens < 0 || gguf_get_kv_type(g, a->k_tokens) != GGUF_TYPE_ARRAY ||
        gguf_get_arr_type(g, a->k_tokens) != GGUF_TYPE_STRING) {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.tokens is missing or not an array of strings\n");
        return false;
    }
    a->n = gguf_get_arr_n(g, a->k_tokens);
    if (a->n == 0 || a->n > (size_t) INT32_MAX - 1) {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.tokens has %zu entries\n", a->n);
        return false;
    }
    const int64_t k_scores = gguf_find_key(g, "tokenizer.ggml.scores");
    a->scores = NULL;
    if (k_scores >= 0) {
        if (gguf_get_kv_type(g, k_scores) != GGUF_TYPE_ARRAY || gguf_get_arr_type(g, k_scores) != GGUF_TYPE_FLOAT32 ||
            gguf_get_arr_n(g, k_scores) != a->n) {
            LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.scores must be %zu float32 values\n", a->n);
            return false;
        }
        a->scores = gguf_get_arr_data(g, k_scores);
    }
    const int64_t k_types = gguf_find_key(g, "tokenizer.ggml.token_type");
    a->types = NULL;
    if (k_types >= 0) {
        if (gguf_get_kv_type(g, k_types) != GGUF_TYPE_ARRAY || gguf_get_arr_type(g, k_types) != GGUF_TYPE_INT32 ||
            gguf_get_arr_n(g, k_types) != a->n) {
            LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.token_type must be %zu int32 values\n", a->n);
            return false;
        }
        a->types = gguf_get_arr_data(g, k_types);
    }
    a->k_merges = gguf_find_key(g, "tokenizer.ggml.merges");
    a->merges_optional = type == LLAMA_VOCAB_TYPE_BPE && a->k_merges < 0 && llama_vocab_pre_merges_optional(pre_name);
    if (type == LLAMA_VOCAB_TYPE_BPE && !a->merges_optional) {
        if (a->k_merges < 0 || gguf_get_kv_type(g, a->k_merges) != GGUF_TYPE_ARRAY ||
            gguf_get_arr_type(g, a->k_merges) != GGUF_TYPE_STRING) {
            LLAMA_LOG_ERROR("llama_vocab_load: a gpt2 (BPE) vocabulary needs tokenizer.ggml.merges (array of strings)\n");
            return false;
        }
    }
    return true;
}

// Enters token i (its text at v->text + t->off) into the text index; a repeated text maps to its last id.
static void vocab_index_insert(struct llama_vocab * v, size_t i) {
    const struct llama_vocab_token * t = &v->tokens[i];
    const uint64_t hash = llama_vocab_hash_bytes(v->text + t->off, t->len);
    const uint64_t entry = (hash >> 32) << 32 | (uint64_t) (i + 1);
    uint64_t h = hash & v->index_mask;
    for (;;) {
        const uint64_t slot = v->index[h];
        if (slot == 0) {
            v->index[h] = entry;
            return;
        }
        const struct llama_vocab_token * o = &v->tokens[(uint32_t) slot - 1];
        if ((slot >> 32) == (hash >> 32) && o->len == t->len && memcmp(v->text + o->off, v->text + t->off, t->len) == 0) {
            v->index[h] = entry;
            return;
        }
        h = (h + 1) & v->index_mask;
    }
}

// Phase 3: copies the tokens' texts, scores and types (a->k_tokens < 0: a->n empty placeholder
// tokens) and builds the text index. False (logged) on a bad token or out of memory.
static bool vocab_load_tokens(struct llama_vocab * v, const struct gguf_context * g, const struct vocab_arrays * a) {
    const size_t n = a->n;
    size_t text_size = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t len = a->k_tokens >= 0 ? gguf_get_arr_str_len(g, a->k_tokens, i) : 0;
        if (len > UINT32_MAX / 2 || text_size + len + 1 > UINT32_MAX) {
            LLAMA_LOG_ERROR("llama_vocab_load: token texts too long\n");
            return false;
        }
        text_size += len + 1;
    }
    const uint64_t index_size = llama_vocab_table_size(n);
    v->n_tokens = (int32_t) n;
    v->tokens = GGML_MALLOC(n * sizeof(struct llama_vocab_token));
    v->text = GGML_MALLOC(text_size);
    v->eog = GGML_CALLOC(n, 1);
    v->index = GGML_CALLOC(index_size, sizeof(uint64_t));
    if (!v->tokens || !v->text || !v->eog || !v->index) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for %zu tokens\n", n);
        return false;
    }
    v->index_mask = (uint32_t) (index_size - 1);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t len = a->k_tokens >= 0 ? gguf_get_arr_str_len(g, a->k_tokens, i) : 0;
        if (a->k_tokens >= 0) {
            memcpy(v->text + off, gguf_get_arr_str(g, a->k_tokens, i), len + 1);
        } else {
            v->text[off] = '\0';
        }
        struct llama_vocab_token * t = &v->tokens[i];
        t->off = (uint32_t) off;
        t->len = (uint32_t) len;
        t->score = a->scores ? a->scores[i] : 0.0f;
        t->type = a->types ? a->types[i] : (a->k_tokens >= 0 ? LLAMA_TOKEN_TYPE_NORMAL : LLAMA_TOKEN_TYPE_UNDEFINED);
        if (t->type < LLAMA_TOKEN_TYPE_UNDEFINED || t->type > LLAMA_TOKEN_TYPE_BYTE) {
            LLAMA_LOG_ERROR("llama_vocab_load: token %zu has type %d (valid: 0..6)\n", i, t->type);
            return false;
        }
        if (!vocab_check_token(i, v->text + off, len, t->type)) {
            return false;
        }
        t->attr = vocab_attr_of_type(t->type);
        if (len > v->max_token_len) {
            v->max_token_len = (uint32_t) len;
        }
        off += len + 1;
        vocab_index_insert(v, i);
    }
    return true;
}

// Phase 4: the tables of the vocabulary's tokenizer (merges, RWKV / unigram / PLaMo-2 tables, the
// special-token trie, SPM word independence). False (logged) on failure.
static bool vocab_load_tables(struct llama_vocab * v, const struct gguf_context * g, const struct vocab_arrays * a) {
    const enum llama_vocab_type type = v->type;
    if (type == LLAMA_VOCAB_TYPE_BPE && !a->merges_optional && !vocab_build_merges(v, g, a->k_merges)) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for the merges\n");
        return false;
    }
    if (type == LLAMA_VOCAB_TYPE_RWKV && !llama_vocab_rwkv_load(v)) {
        LLAMA_LOG_ERROR("llama_vocab_load: the RWKV token trie could not be built\n");
        return false;
    }
    if (type == LLAMA_VOCAB_TYPE_UGM && !llama_vocab_ugm_load(v, g)) {
        LLAMA_LOG_ERROR("llama_vocab_load: the unigram tables could not be built\n");
        return false;
    }
    if (!vocab_build_trie(v)) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for the special tokens\n");
        return false;
    }
    if (type == LLAMA_VOCAB_TYPE_SPM) {
        v->spm_words_independent = true;
        for (int32_t i = 0; i < v->n_tokens && v->spm_words_independent; i++) {
            const struct llama_vocab_token * t = &v->tokens[i];
            const bool mergeable = t->type == LLAMA_TOKEN_TYPE_NORMAL || t->type == LLAMA_TOKEN_TYPE_USER_DEFINED ||
                t->type == LLAMA_TOKEN_TYPE_UNUSED || t->type == LLAMA_TOKEN_TYPE_UNDEFINED;
            if (mergeable && !llama_vocab_spm_words_independent(v->text + t->off, t->len)) {
                v->spm_words_independent = false;
            }
            // Unused tokens are split back by the last proposal of their merge over the whole
            // text; encoding words one by one could see a different last proposal.
            if (t->type == LLAMA_TOKEN_TYPE_UNUSED) {
                v->spm_words_independent = false;
            }
        }
    }

    // Byte tokens: <0xXX> (SPM, UGM, PLaMo-2, raw-UTF-8 BPE), or the single character that
    // stands for the byte (byte-level BPE), or the RWKV trie's one-byte token.
    for (int b = 0; b < 256; b++) {
        char buf[8];
        size_t len;
        if (type == LLAMA_VOCAB_TYPE_RWKV) {
            const uint32_t node = llama_vocab_trie_child(&v->rwkv_trie, 0, (uint8_t) b);
            v->byte_token[b] = node ? v->rwkv_trie.node_token[node] : -1;
            continue;
        }
        if (type == LLAMA_VOCAB_TYPE_SPM || type == LLAMA_VOCAB_TYPE_UGM || type == LLAMA_VOCAB_TYPE_PLAMO2 || v->bpe_raw_utf8) {
            len = (size_t) snprintf(buf, sizeof(buf), "<0x%02X>", b);
        } else {
            len = unicode_utf8_encode(unicode_byte_to_cpt((uint8_t) b), buf);
        }
        v->byte_token[b] = llama_vocab_find(v, buf, len);
    }
    if (type == LLAMA_VOCAB_TYPE_PLAMO2 && !llama_vocab_plamo2_load(v)) {
        return false;
    }
    return true;
}

// Special ids the file may name, and where they go.
static const struct {
    const char * key;
    size_t off;
} VOCAB_ID_KEYS[] = {
    { "tokenizer.ggml.bos_token_id", offsetof(struct llama_vocab, bos) },
    { "tokenizer.ggml.eos_token_id", offsetof(struct llama_vocab, eos) },
    { "tokenizer.ggml.eot_token_id", offsetof(struct llama_vocab, eot) },
    { "tokenizer.ggml.eom_token_id", offsetof(struct llama_vocab, eom) },
    { "tokenizer.ggml.unknown_token_id", offsetof(struct llama_vocab, unk) },
    { "tokenizer.ggml.seperator_token_id", offsetof(struct llama_vocab, sep) },
    { "tokenizer.ggml.separator_token_id", offsetof(struct llama_vocab, sep) },
    { "tokenizer.ggml.padding_token_id", offsetof(struct llama_vocab, pad) },
    { "tokenizer.ggml.cls_token_id", offsetof(struct llama_vocab, cls) },
    { "tokenizer.ggml.mask_token_id", offsetof(struct llama_vocab, mask) },
    { "tokenizer.ggml.prefix_token_id", offsetof(struct llama_vocab, fim_pre) },
    { "tokenizer.ggml.suffix_token_id", offsetof(struct llama_vocab, fim_suf) },
    { "tokenizer.ggml.middle_token_id", offsetof(struct llama_vocab, fim_mid) },
    { "tokenizer.ggml.fim_pre_token_id", offsetof(struct llama_vocab, fim_pre) },
    { "tokenizer.ggml.fim_suf_token_id", offsetof(struct llama_vocab, fim_suf) },
    { "tokenizer.ggml.fim_mid_token_id", offsetof(struct llama_vocab, fim_mid) },
    { "tokenizer.ggml.fim_pad_token_id", offsetof(struct llama_vocab, fim_pad) },
    { "tokenizer.ggml.fim_rep_token_id", offsetof(struct llama_vocab, fim_rep) },
    { "tokenizer.ggml.fim_sep_token_id", offsetof(struct llama_vocab, fim_sep) },
};

// Phase 5: the family's default special ids and flags, then the file's explicit keys. False
// (logged) if the file names an id outside the vocabulary.
static bool vocab_load_specials(struct llama_vocab * v, const struct gguf_context * g) {
    const enum llama_vocab_type type = v->type;
    const int32_t n = v->n_tokens;
    v->bos = v->eos = v->eot = v->eom = v->unk = v->sep = v->pad = v->cls = v->mask = LLAMA_TOKEN_NULL;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = LLAMA_TOKEN_NULL;
    if (type == LLAMA_VOCAB_TYPE_SPM) {
        v->bos = n > 1 ? 1 : LLAMA_TOKEN_NULL;
        v->eos = n > 2 ? 2 : LLAMA_TOKEN_NULL;
        v->unk = 0;
        v->add_bos = true;
        v->add_space_prefix = true;
        v->clean_spaces = true;
    } else if (type == LLAMA_VOCAB_TYPE_UGM) {
        v->eos = n > 1 ? 1 : LLAMA_TOKEN_NULL;
        v->unk = n > 2 ? 2 : LLAMA_TOKEN_NULL;
        v->pad = 0;
        v->add_eos = true;
    } else if (type == LLAMA_VOCAB_TYPE_PLAMO2) {
        // <|plamo:unk|>, <|plamo:bos|>, <|plamo:eos|>, <|plamo:pad|> unless the file names others
        v->unk = 0;
        v->bos = n > 1 ? 1 : LLAMA_TOKEN_NULL;
        v->eos = n > 2 ? 2 : LLAMA_TOKEN_NULL;
        v->pad = n > 3 ? 3 : LLAMA_TOKEN_NULL;
    } else if (type == LLAMA_VOCAB_TYPE_WPM) {
        // BERT's [CLS] text [SEP] with its usual ids, unless the file names others
        v->bos = 101;
        v->unk = 100;
        v->sep = 102;
        v->pad = 0;
        v->mask = 103;
        v->add_bos = true;
        v->add_sep = true;
        v->clean_spaces = true;
        v->wpm_lowercase = true;
        vocab_get_bool(g, "tokenizer.ggml.normalizer.lowercase", &v->wpm_lowercase);
        v->wpm_strip_accents = v->wpm_lowercase;
        vocab_get_bool(g, "tokenizer.ggml.normalizer.strip_accents", &v->wpm_strip_accents);
        llama_token * const ids[] = { &v->bos, &v->unk, &v->sep, &v->pad, &v->mask };
        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
            if (*ids[i] >= v->n_tokens) {
                *ids[i] = LLAMA_TOKEN_NULL; // a small vocabulary without them
            }
        }
    }  // BPE: llama_vocab_pre_setup set the family's defaults
    for (size_t i = 0; i < sizeof(VOCAB_ID_KEYS) / sizeof(VOCAB_ID_KEYS[0]); i++) {
        if (!vocab_read_id(v, g, VOCAB_ID_KEYS[i].key, (llama_token *) ((char *) v + VOCAB_ID_KEYS[i].off))) {
            return false;
        }
    }
    if (v->unk >= 0 && v->unk >= v->n_tokens) {
        v->unk = LLAMA_TOKEN_NULL;
    }
    vocab_get_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos);
    vocab_get_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos);
    vocab_get_bool(g, "tokenizer.ggml.add_sep_token", &v->add_sep);
    if (v->force_bos && !v->add_bos) {
        LLAMA_LOG_WARN("llama_vocab_load: tokenizer.ggml.add_bos_token is false, but the '%s' pre-tokenizer's "
                       "model needs BOS: adding it\n",
                       v->pre_name);
        v->add_bos = true;
    }
    if (type == LLAMA_VOCAB_TYPE_UGM) {
        vocab_get_bool(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix);
        vocab_get_bool(g, "tokenizer.ggml.remove_extra_whitespaces", &v->remove_extra_whitespaces);
    }
    if (type == LLAMA_VOCAB_TYPE_SPM) {
        vocab_get_bool(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix);
        bool extra_ws = false;
        if (vocab_get_bool(g, "tokenizer.ggml.remove_extra_whitespaces", &extra_ws) && extra_ws) {
            LLAMA_LOG_WARN("llama_vocab_load: tokenizer.ggml.remove_extra_whitespaces is not applied\n");
        }
    }
    v->nl = v->byte_token['\n'];
    v->dna_open = v->dna_close = v->dna_oov = LLAMA_TOKEN_NULL;
    if (v->bpe_session == LLAMA_VOCAB_BPE_DNA) {
        v->dna_open = llama_vocab_find(v, "<dna>", 5);
        v->dna_close = llama_vocab_find(v, "</dna>", 6);
        v->dna_oov = llama_vocab_find(v, "<oov>", 5);
    }
    if (v->bpe_raw_utf8 || type == LLAMA_VOCAB_TYPE_PLAMO2) {
        const llama_token nl = llama_vocab_find(v, "\n", 1);
        if (nl >= 0) {
            v->nl = nl;
        }
    }
    return true;
}

// Phase 6: the special tokens the file does not name, found by their usual texts, and the
// end-of-generation set (eos, eot, eom and every turn-ending token present).
static void vocab_load_by_text(struct llama_vocab * v) {
    static const char * const eot[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "_<EOT>"
    };
    static const char * const eom[] = { "<|eom_id|>" };
    static const char * const pre[] = { "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "\xe2\x96\x81<PRE>" };
    static const char * const suf[] = { "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "\xe2\x96\x81<SUF>" };
    static const char * const mid[] = { "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "\xe2\x96\x81<MID>" };
    static const char * const pad[] = { "<|fim_pad|>", "<fim-pad>", "<fim_pad>" };
    static const char * const rep[] = { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<reponame>" };
    static const char * const sep[] = { "<|file_sep|>", "<file_sep>" };
    const struct {
        llama_token * id;
        const char * const * texts;
        size_t n;
    } by_text[] = {
        { &v->eot, eot, sizeof(eot) / sizeof(eot[0]) },     { &v->eom, eom, 1 },
        { &v->fim_pre, pre, sizeof(pre) / sizeof(pre[0]) }, { &v->fim_suf, suf, sizeof(suf) / sizeof(suf[0]) },
        { &v->fim_mid, mid, sizeof(mid) / sizeof(mid[0]) }, { &v->fim_pad, pad, sizeof(pad) / sizeof(pad[0]) },
        { &v->fim_rep, rep, sizeof(rep) / sizeof(rep[0]) }, { &v->fim_sep, sep, sizeof(sep) / sizeof(sep[0]) },
    };
    for (size_t i = 0; i < sizeof(by_text) / sizeof(by_text[0]); i++) {
        if (*by_text[i].id < 0) {
            *by_text[i].id = vocab_find_any(v, by_text[i].texts, by_text[i].n);
        }
    }

    if (v->eos >= 0) v->eog[v->eos] = 1;
    if (v->eot >= 0) v->eog[v->eot] = 1;
    if (v->eom >= 0) v->eog[v->eom] = 1;
    for (size_t i = 0; i < sizeof(VOCAB_EOG_TEXTS) / sizeof(VOCAB_EOG_TEXTS[0]); i++) {
        const llama_token id = llama_vocab_find(v, VOCAB_EOG_TEXTS[i], strlen(VOCAB_EOG_TEXTS[i]));
        if (id >= 0) {
            v->eog[id] = 1;
        }
    }
    // harmony (gpt-oss): <|end|> closes one channel's message (the analysis) inside a reply that
    // goes on; the reply ends at <|return|> or <|call|> (llama.cpp's rule: both present, <|end|> is no EOG)
    const llama_token h_ret = llama_vocab_find(v, "<|return|>", 10), h_call = llama_vocab_find(v, "<|call|>", 8);
    const llama_token h_end = llama_vocab_find(v, "<|end|>", 7);
    if (h_ret >= 0 && h_call >= 0 && h_end >= 0) {
        v->eog[h_end] = 0;
    }
}

// A vocabulary of type NONE ('none' / 'no_vocab'): <arch>.vocab_size placeholder tokens with no
// text, so the model's logits keep their size; tokenizing is refused.
static bool vocab_load_none(struct llama_vocab * v, const struct gguf_context * g, struct vocab_arrays * a) {
    const char * arch = vocab_get_str(g, "general.architecture");
    char key[160];
    int64_t n = 0;
    snprintf(key, sizeof(key), "%s.vocab_size", arch ? arch : "");
    if (arch == NULL || !vocab_get_int(g, key, &n) || n <= 0 || n > INT32_MAX - 1) {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.model = 'none' needs %s (a positive token count)\n",
                        arch ? key : "general.architecture and <arch>.vocab_size");
        return false;
    }
    LLAMA_LOG_WARN("llama_vocab_load: no vocabulary: %" PRId64 " placeholder tokens; tokenizing is not supported\n", n);
    memset(a, 0, sizeof(*a));
    a->k_tokens = a->k_merges = -1;
    a->n = (size_t) n;
    if (!vocab_load_tokens(v, g, a)) {
        return false;
    }
    v->bos = v->eos = v->eot = v->eom = v->unk = v->sep = v->pad = v->cls = v->mask = v->nl = LLAMA_TOKEN_NULL;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = LLAMA_TOKEN_NULL;
    v->dna_open = v->dna_close = v->dna_oov = LLAMA_TOKEN_NULL;
    for (int b = 0; b < 256; b++) {
        v->byte_token[b] = LLAMA_TOKEN_NULL;
        v->trie_root_child[b] = -1;
    }
    return true;
}

struct llama_vocab * llama_vocab_load(const struct gguf_context * g) {
    if (g == NULL) {
        LLAMA_LOG_ERROR("llama_vocab_load: no metadata\n");
        return NULL;
    }
    const char * model = vocab_get_str(g, "tokenizer.ggml.model");
    if (model == NULL) {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.model is missing (or not a string)\n");
        return NULL;
    }
    enum llama_vocab_type type;
    const char * pre_name;
    if (!vocab_load_type(g, model, &type, &pre_name)) {
        return NULL;
    }
    struct vocab_arrays a;
    if (type != LLAMA_VOCAB_TYPE_NONE && !vocab_load_arrays(g, type, pre_name, &a)) {
        return NULL;
    }

    struct llama_vocab * v = GGML_CALLOC(1, sizeof(struct llama_vocab));
    if (v == NULL) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory\n");
        return NULL;
    }
    v->magic = LLAMA_MAGIC_VOCAB;
    v->type = type;
    snprintf(v->pre_name, sizeof(v->pre_name), "%s", pre_name ? pre_name : "");
    if (type == LLAMA_VOCAB_TYPE_NONE) {
        if (!vocab_load_none(v, g, &a)) {
            goto fail;
        }
        return v;
    }
    if (type == LLAMA_VOCAB_TYPE_BPE && !llama_vocab_pre_setup(v, pre_name)) {
        goto fail;
    }
    if (strcmp(model, "whitespace") == 0) {
        v->bpe_session = LLAMA_VOCAB_BPE_WORDS;
        vocab_get_bool(g, "tokenizer.ggml.normalizer.lowercase", &v->words_lowercase);
    } else if (strcmp(model, "hybriddna") == 0) {
        v->bpe_session = LLAMA_VOCAB_BPE_DNA;
    }
    if (!vocab_load_tokens(v, g, &a) || !vocab_load_tables(v, g, &a) || !vocab_load_specials(v, g)) {
        goto fail;
    }
    vocab_load_by_text(v);
    return v;

fail:
    llama_vocab_free(v);
    return NULL;
}

void llama_vocab_free(struct llama_vocab * vocab) {
    if (vocab == NULL) {
        return;
    }
    free(vocab->tokens);
    free(vocab->text);
    free(vocab->eog);
    free(vocab->index);
    free(vocab->merges);
    free(vocab->trie);
    llama_vocab_pre_free(vocab);
    llama_vocab_ugm_free(vocab);
    llama_vocab_trie_free(&vocab->rwkv_trie);
    llama_vocab_plamo2_free(vocab);
    gr_vocab_forget(vocab); // the grammar engine's cached token trie of this vocab
    vocab->magic = LLAMA_MAGIC_DEAD;
    free(vocab);
}
