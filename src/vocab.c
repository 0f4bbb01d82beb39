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

#if defined(__GNUC__) || defined(__clang__)
#define VOCAB_PREFETCH(p, rw) __builtin_prefetch((p), (rw))
#else
#define VOCAB_PREFETCH(p, rw) ((void) (p))
#endif

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
static uint64_t vocab_hash_bytes(const char * s, size_t n) {
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

static uint64_t vocab_hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
}

// Smallest power of two >= 2 * n (load factor <= 1/2).
static uint64_t vocab_table_size(uint64_t n) {
    uint64_t size = 16;
    while (size < 2 * n) {
        size *= 2;
    }
    return size;
}

llama_token llama_vocab_find(const struct llama_vocab * vocab, const char * text, size_t len) {
    const uint64_t h = vocab_hash_bytes(text, len);
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

bool llama_vocab_merge_find(const struct llama_vocab * vocab, llama_token left, llama_token right,
                            int32_t * rank, llama_token * result) {
    if (vocab->merges == NULL) {
        return false;
    }
    const uint64_t key = (uint64_t) (uint32_t) left << 32 | (uint32_t) right;
    uint64_t i = vocab_hash_u64(key) & vocab->merges_mask;
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

static bool vocab_token_valid(const struct llama_vocab * v, llama_token id) {
    return id >= 0 && id < v->n_tokens;
}

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
// loading

// Texts of tokens that end a turn; they join the end-of-generation set whenever present.
static const char * const VOCAB_EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<|return|>", "<|call|>",   // o200k_harmony (gpt-oss): the reply's end, a tool call's end
};

// Integer metadata of any integer type; false if absent (a wrong type is logged).
static bool vocab_get_int(const struct gguf_context * g, const char * key, int64_t * out) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        return false;
    }
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_UINT8:  *out = gguf_get_val_u8(g, id);  return true;
        case GGUF_TYPE_INT8:   *out = gguf_get_val_i8(g, id);  return true;
        case GGUF_TYPE_UINT16: *out = gguf_get_val_u16(g, id); return true;
        case GGUF_TYPE_INT16:  *out = gguf_get_val_i16(g, id); return true;
        case GGUF_TYPE_UINT32: *out = gguf_get_val_u32(g, id); return true;
        case GGUF_TYPE_INT32:  *out = gguf_get_val_i32(g, id); return true;
        case GGUF_TYPE_UINT64: {
            const uint64_t u = gguf_get_val_u64(g, id);
            *out = u > INT64_MAX ? -1 : (int64_t) u;
            return true;
        }
        case GGUF_TYPE_INT64:  *out = gguf_get_val_i64(g, id); return true;
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
            LLAMA_LOG_ERROR("llama_vocab_load: %s = token id %" PRId64 " is not in the vocabulary (%d tokens)\n",
                            key, x, v->n_tokens);
            return false;
        }
        *id = LLAMA_TOKEN_NULL;
        return true;
    }
    *id = (llama_token) x;
    return true;
}

static bool vocab_is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}

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
        LLAMA_LOG_ERROR("llama_vocab_load: token %zu has type BYTE but its text '%.*s' is not <0xHH>\n",
                        id, (int) (len < 32 ? len : 32), text);
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
        case LLAMA_TOKEN_TYPE_NORMAL:       return LLAMA_TOKEN_ATTR_NORMAL;
        case LLAMA_TOKEN_TYPE_UNKNOWN:      return LLAMA_TOKEN_ATTR_UNKNOWN;
        case LLAMA_TOKEN_TYPE_CONTROL:      return LLAMA_TOKEN_ATTR_CONTROL;
        case LLAMA_TOKEN_TYPE_USER_DEFINED: return LLAMA_TOKEN_ATTR_USER_DEFINED;
        case LLAMA_TOKEN_TYPE_UNUSED:       return LLAMA_TOKEN_ATTR_UNUSED;
        case LLAMA_TOKEN_TYPE_BYTE:         return LLAMA_TOKEN_ATTR_BYTE;
        default:                            return LLAMA_TOKEN_ATTR_UNDEFINED;
    }
}

// Tokens whose text is matched in the input before tokenizing (always for user-defined ones,
// with parse_special for control and unknown ones). A unigram vocab's user-defined tokens are
// not: its normalizer keeps them whole inside the text, as sentencepiece does.
static bool vocab_is_special_text(const struct llama_vocab * v, const struct llama_vocab_token * t) {
    if (t->type == LLAMA_TOKEN_TYPE_USER_DEFINED && v->type == LLAMA_VOCAB_TYPE_UGM) {
        return false;
    }
    return t->len > 0 && (t->type == LLAMA_TOKEN_TYPE_CONTROL || t->type == LLAMA_TOKEN_TYPE_USER_DEFINED ||
                          t->type == LLAMA_TOKEN_TYPE_UNKNOWN);
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
static void vocab_find_batch(const struct llama_vocab * v, const char * const * texts, const size_t * lens,
                             llama_token * out, int n) {
    uint64_t hash[256];
    uint32_t cand[256];  // candidate id + 1 (tag matched), 0 if none
    GGML_ASSERT(n <= 256);
    for (int i = 0; i < n; i++) {
        hash[i] = vocab_hash_bytes(texts[i], lens[i]);
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
    const uint64_t size = vocab_table_size(n);
    v->merges = GGML_MALLOC(size * sizeof(struct llama_vocab_merge));
    if (v->merges == NULL) {
        return false;
    }
    for (uint64_t i = 0; i < size; i++) {
        v->merges[i].key = UINT64_MAX;
    }
    v->merges_mask = size - 1;

    enum { BATCH = 64 };
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
            slots[j] = vocab_hash_u64(keys[j]) & v->merges_mask;
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
    const char * pre_name = vocab_get_str(g, "tokenizer.ggml.pre");
    if (strcmp(model, "llama") == 0) {
        type = LLAMA_VOCAB_TYPE_SPM;
    } else if (strcmp(model, "gpt2") == 0 || strcmp(model, "gemma4") == 0 || strcmp(model, "whitespace") == 0 ||
               strcmp(model, "hybriddna") == 0) {
        type = LLAMA_VOCAB_TYPE_BPE;
        if (strcmp(model, "gemma4") == 0) {
            pre_name = "gemma4";  // the model name fixes the pre-tokenizer
        }
    } else if (strcmp(model, "bert") == 0) {
        type = LLAMA_VOCAB_TYPE_WPM;
    } else if (strcmp(model, "t5") == 0) {
        type = LLAMA_VOCAB_TYPE_UGM;
    } else if (strcmp(model, "rwkv") == 0) {
        type = LLAMA_VOCAB_TYPE_RWKV;
    } else {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.model '%s' is not supported (supported: 'llama' "
                        "SentencePiece, 'gpt2' byte-level BPE, 'gemma4' SentencePiece-style BPE, 'whitespace' and "
                        "'hybriddna' BPE, 't5' unigram, 'rwkv' RWKV world, 'bert' WordPiece)\n", model);
        return NULL;
    }
    if (type == LLAMA_VOCAB_TYPE_BPE) {
        if (pre_name == NULL) {
            LLAMA_LOG_WARN("llama_vocab_load: tokenizer.ggml.pre is missing; using the 'default' pre-tokenizer, "
                           "tokenization may differ from the model's own\n");
            pre_name = "default";
        } else if (!llama_vocab_pre_known(pre_name)) {
            LLAMA_LOG_ERROR("llama_vocab_load: unknown pre-tokenizer tokenizer.ggml.pre = '%s'\n", pre_name);
            return NULL;
        }
    }

    const int64_t k_tokens = gguf_find_key(g, "tokenizer.ggml.tokens");
    if (k_tokens < 0 || gguf_get_kv_type(g, k_tokens) != GGUF_TYPE_ARRAY ||
        gguf_get_arr_type(g, k_tokens) != GGUF_TYPE_STRING) {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.tokens is missing or not an array of strings\n");
        return NULL;
    }
    const size_t n = gguf_get_arr_n(g, k_tokens);
    if (n == 0 || n > (size_t) INT32_MAX - 1) {
        LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.tokens has %zu entries\n", n);
        return NULL;
    }
    const int64_t k_scores = gguf_find_key(g, "tokenizer.ggml.scores");
    const float * scores = NULL;
    if (k_scores >= 0) {
        if (gguf_get_kv_type(g, k_scores) != GGUF_TYPE_ARRAY || gguf_get_arr_type(g, k_scores) != GGUF_TYPE_FLOAT32 ||
            gguf_get_arr_n(g, k_scores) != n) {
            LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.scores must be %zu float32 values\n", n);
            return NULL;
        }
        scores = gguf_get_arr_data(g, k_scores);
    }
    const int64_t k_types = gguf_find_key(g, "tokenizer.ggml.token_type");
    const int32_t * types = NULL;
    if (k_types >= 0) {
        if (gguf_get_kv_type(g, k_types) != GGUF_TYPE_ARRAY || gguf_get_arr_type(g, k_types) != GGUF_TYPE_INT32 ||
            gguf_get_arr_n(g, k_types) != n) {
            LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.token_type must be %zu int32 values\n", n);
            return NULL;
        }
        types = gguf_get_arr_data(g, k_types);
    }
    const int64_t k_merges = gguf_find_key(g, "tokenizer.ggml.merges");
    const bool merges_optional = type == LLAMA_VOCAB_TYPE_BPE && k_merges < 0 && llama_vocab_pre_merges_optional(pre_name);
    if (type == LLAMA_VOCAB_TYPE_BPE && !merges_optional) {
        if (k_merges < 0 || gguf_get_kv_type(g, k_merges) != GGUF_TYPE_ARRAY ||
            gguf_get_arr_type(g, k_merges) != GGUF_TYPE_STRING) {
            LLAMA_LOG_ERROR("llama_vocab_load: a gpt2 (BPE) vocabulary needs tokenizer.ggml.merges (array of strings)\n");
            return NULL;
        }
    }

    struct llama_vocab * v = GGML_CALLOC(1, sizeof(struct llama_vocab));
    if (v == NULL) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory\n");
        return NULL;
    }
    v->magic = LLAMA_MAGIC_VOCAB;
    v->type = type;
    if (type == LLAMA_VOCAB_TYPE_BPE && !llama_vocab_pre_setup(v, pre_name)) {
        goto fail;
    }
    if (strcmp(model, "whitespace") == 0) {
        bool lowercase = false;
        if (vocab_get_bool(g, "tokenizer.ggml.normalizer.lowercase", &lowercase) && lowercase) {
            LLAMA_LOG_ERROR("llama_vocab_load: tokenizer.ggml.normalizer.lowercase = true is not supported for the "
                            "'whitespace' tokenizer\n");
            goto fail;
        }
        v->bpe_session = LLAMA_VOCAB_BPE_WORDS;
    } else if (strcmp(model, "hybriddna") == 0) {
        v->bpe_session = LLAMA_VOCAB_BPE_DNA;
    }
    snprintf(v->pre_name, sizeof(v->pre_name), "%s", pre_name ? pre_name : "");
    v->n_tokens = (int32_t) n;

    size_t text_size = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t len = gguf_get_arr_str_len(g, k_tokens, i);
        if (len > UINT32_MAX / 2 || text_size + len + 1 > UINT32_MAX) {
            LLAMA_LOG_ERROR("llama_vocab_load: token texts too long\n");
            goto fail;
        }
        text_size += len + 1;
    }
    const uint64_t index_size = vocab_table_size(n);
    v->tokens = GGML_MALLOC(n * sizeof(struct llama_vocab_token));
    v->text = GGML_MALLOC(text_size);
    v->eog = GGML_CALLOC(n, 1);
    v->index = GGML_CALLOC(index_size, sizeof(uint64_t));
    if (!v->tokens || !v->text || !v->eog || !v->index) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for %zu tokens\n", n);
        goto fail;
    }
    v->index_mask = (uint32_t) (index_size - 1);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t len = gguf_get_arr_str_len(g, k_tokens, i);
        memcpy(v->text + off, gguf_get_arr_str(g, k_tokens, i), len + 1);
        struct llama_vocab_token * t = &v->tokens[i];
        t->off = (uint32_t) off;
        t->len = (uint32_t) len;
        t->score = scores ? scores[i] : 0.0f;
        t->type = types ? types[i] : LLAMA_TOKEN_TYPE_NORMAL;
        if (t->type < LLAMA_TOKEN_TYPE_UNDEFINED || t->type > LLAMA_TOKEN_TYPE_BYTE) {
            LLAMA_LOG_ERROR("llama_vocab_load: token %zu has type %d (valid: 0..6)\n", i, t->type);
            goto fail;
        }
        if (!vocab_check_token(i, v->text + off, len, t->type)) {
            goto fail;
        }
        t->attr = vocab_attr_of_type(t->type);
        if (len > v->max_token_len) {
            v->max_token_len = (uint32_t) len;
        }
        off += len + 1;
        // Insert into the index; a repeated text maps to its last id.
        const uint64_t hash = vocab_hash_bytes(v->text + t->off, len);
        const uint64_t entry = (hash >> 32) << 32 | (uint64_t) (i + 1);
        uint64_t h = hash & v->index_mask;
        for (;;) {
            const uint64_t slot = v->index[h];
            if (slot == 0) {
                v->index[h] = entry;
                break;
            }
            const struct llama_vocab_token * o = &v->tokens[(uint32_t) slot - 1];
            if ((slot >> 32) == (hash >> 32) && o->len == len && memcmp(v->text + o->off, v->text + t->off, len) == 0) {
                v->index[h] = entry;
                break;
            }
            h = (h + 1) & v->index_mask;
        }
    }

    if (type == LLAMA_VOCAB_TYPE_BPE && !merges_optional && !vocab_build_merges(v, g, k_merges)) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for the merges\n");
        goto fail;
    }
    if (type == LLAMA_VOCAB_TYPE_RWKV && !llama_vocab_rwkv_load(v)) {
        LLAMA_LOG_ERROR("llama_vocab_load: the RWKV token trie could not be built\n");
        goto fail;
    }
    if (type == LLAMA_VOCAB_TYPE_UGM && !llama_vocab_ugm_load(v, g)) {
        LLAMA_LOG_ERROR("llama_vocab_load: the unigram tables could not be built\n");
        goto fail;
    }
    if (!vocab_build_trie(v)) {
        LLAMA_LOG_ERROR("llama_vocab_load: out of memory for the special tokens\n");
        goto fail;
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

    // Byte tokens: SPM <0xXX>, BPE the single character that stands for the byte.
    for (int b = 0; b < 256; b++) {
        char buf[8];
        size_t len;
        if (type == LLAMA_VOCAB_TYPE_RWKV) {
            const uint32_t node = llama_vocab_trie_child(&v->rwkv_trie, 0, (uint8_t) b);
            v->byte_token[b] = node ? v->rwkv_trie.node_token[node] : -1;
            continue;
        }
        if (type == LLAMA_VOCAB_TYPE_SPM || type == LLAMA_VOCAB_TYPE_UGM || v->bpe_raw_utf8) {
            len = (size_t) snprintf(buf, sizeof(buf), "<0x%02X>", b);
        } else {
            len = unicode_utf8_encode(unicode_byte_to_cpt((uint8_t) b), buf);
        }
        v->byte_token[b] = llama_vocab_find(v, buf, len);
    }

    // Family defaults, then the file's explicit keys.
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
    {
        // Special ids named by the file must be tokens of the vocabulary.
        static const struct { const char * key; size_t off; } ids[] = {
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
        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
            if (!vocab_read_id(v, g, ids[i].key, (llama_token *) ((char *) v + ids[i].off))) {
                goto fail;
            }
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
                       "model needs BOS: adding it\n", v->pre_name);
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
    if (v->bpe_raw_utf8) {
        const llama_token nl = llama_vocab_find(v, "\n", 1);
        if (nl >= 0) {
            v->nl = nl;
        }
    }

    // Tokens found by their text when the file does not name them.
    if (v->eot < 0) {
        static const char * const t[] = { "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                          "<EOT>", "_<EOT>" };
        v->eot = vocab_find_any(v, t, sizeof(t) / sizeof(t[0]));
    }
    if (v->eom < 0) {
        static const char * const t[] = { "<|eom_id|>" };
        v->eom = vocab_find_any(v, t, 1);
    }
    if (v->fim_pre < 0) {
        static const char * const t[] = { "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "\xe2\x96\x81<PRE>" };
        v->fim_pre = vocab_find_any(v, t, sizeof(t) / sizeof(t[0]));
    }
    if (v->fim_suf < 0) {
        static const char * const t[] = { "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "\xe2\x96\x81<SUF>" };
        v->fim_suf = vocab_find_any(v, t, sizeof(t) / sizeof(t[0]));
    }
    if (v->fim_mid < 0) {
        static const char * const t[] = { "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "\xe2\x96\x81<MID>" };
        v->fim_mid = vocab_find_any(v, t, sizeof(t) / sizeof(t[0]));
    }
    if (v->fim_pad < 0) {
        static const char * const t[] = { "<|fim_pad|>", "<fim-pad>", "<fim_pad>" };
        v->fim_pad = vocab_find_any(v, t, sizeof(t) / sizeof(t[0]));
    }
    if (v->fim_rep < 0) {
        static const char * const t[] = { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<reponame>" };
        v->fim_rep = vocab_find_any(v, t, sizeof(t) / sizeof(t[0]));
    }
    if (v->fim_sep < 0) {
        static const char * const t[] = { "<|file_sep|>", "<file_sep>" };
        v->fim_sep = vocab_find_any(v, t, sizeof(t) / sizeof(t[0]));
    }

    // End of generation: eos, eot, eom and every turn-ending token present.
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
    gr_vocab_forget(vocab); // the grammar engine's cached token trie of this vocab
    vocab->magic = LLAMA_MAGIC_DEAD;
    free(vocab);
}

// ---------------------------------------------------------------------------------------------
// getters (each accepts a vocab or a model)

#define VOCAB_OR(ret) \
    const struct llama_vocab * v = llama_vocab_resolve(vocab, __func__); \
    if (v == NULL) { return ret; }

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
const char * llama_token_get_text(const struct llama_vocab * vocab, llama_token token) { return llama_vocab_get_text(vocab, token); }
float llama_token_get_score(const struct llama_vocab * vocab, llama_token token) { return llama_vocab_get_score(vocab, token); }
enum llama_token_attr llama_token_get_attr(const struct llama_vocab * vocab, llama_token token) { return llama_vocab_get_attr(vocab, token); }
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

// Writes the text of token id into out (capacity >= its stored length + 4); returns the length.
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
        default:
            break;
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

int32_t llama_token_to_piece(const struct llama_vocab * vocab, llama_token token, char * buf, int32_t length,
                             int32_t lstrip, bool special) {
    VOCAB_OR(0)
    if (!vocab_token_valid(v, token)) {
        LLAMA_LOG_ERROR("%s: invalid token id %d (vocab has %d)\n", __func__, token, v->n_tokens);
        return 0;
    }
    if (length < 0 || buf == NULL) {
        length = 0;
    }
    char small[256];
    const size_t cap = v->tokens[token].len + 4;
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
    // Upper bound of the output: stored text lengths (+4 for ▅ / bytes) of every token.
    size_t cap = 1;
    for (int32_t i = i0; i < i1; i++) {
        if (vocab_token_valid(v, tokens[i])) {
            cap += v->tokens[tokens[i]].len + 4;
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
            { " .", "." }, { " ?", "?" }, { " !", "!" }, { " ,", "," }, { " ' ", "'" },
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
