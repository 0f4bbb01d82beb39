// llama-vocab.h — internal API of the vocabulary (vocab.c, vocab-spm.c, vocab-bpe.c): loading
// from GGUF metadata, freeing, and the accessor the model implements so that every vocab
// function also accepts a model. Not installed.
//
// Ownership: the model owns its vocab. model.c calls llama_vocab_load() on the model's GGUF
// metadata while loading (also with vocab_only) and llama_vocab_free() when the model is freed;
// llama_model_get_vocab() returns the same pointer as llama_model_vocab_internal().
//
// A loaded vocab is immutable: tokenizing and detokenizing from several threads at once is safe.
#ifndef LLAMA_VOCAB_H
#define LLAMA_VOCAB_H

#include "llama-impl.h"
#include "gguf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct llama_vocab;
struct llama_model;

// Builds the vocabulary from the tokenizer.* keys of g; NULL with a logged reason on failure
// (unknown tokenizer.ggml.model or tokenizer.ggml.pre, missing tokens, arrays of the wrong type
// or length, merges of a BPE vocab missing). Special-token ids out of range are dropped with a
// warning. Copies everything it needs: g may be freed afterwards. Free with llama_vocab_free.
struct llama_vocab * llama_vocab_load(const struct gguf_context * g);

// Frees a vocab from llama_vocab_load; NULL-safe. Marks the magic dead so stale uses are refused.
void llama_vocab_free(struct llama_vocab * vocab);

// Implemented by model.c: the vocab owned by a model whose magic is LLAMA_MAGIC_MODEL (NULL if none).
const struct llama_vocab * llama_model_vocab_internal(const struct llama_model * model);

// llama_vocab_resolve() (declared in llama-impl.h) is defined in vocab.c.

// 64-bit hash of a byte string: the token-text index and the merge table's keys (vocab.c).
uint64_t llama_vocab_hash_bytes(const char * s, size_t n);

// 64-bit mix of an integer key (the merge table).
uint64_t llama_vocab_hash_u64(uint64_t x);

// Smallest power of two >= 2 * n: open-addressing tables at load factor <= 1/2.
uint64_t llama_vocab_table_size(uint64_t n);

#if defined(__GNUC__) || defined(__clang__)
#define VOCAB_PREFETCH(p, rw) __builtin_prefetch((p), (rw))
#else
#define VOCAB_PREFETCH(p, rw) ((void) (p))
#endif

// ---------------------------------------------------------------------------------------------
// Internals shared by vocab.c, vocab-spm.c, vocab-bpe.c and vocab-wpm.c only.

// Pre-tokenizer of a BPE vocab (regex sets of TOKENIZER-FACTS, matched by hand in vocab-bpe.c).
enum llama_vocab_pre_type {
    LLAMA_VOCAB_PRE_TYPE_DEFAULT = 0, // [\p{P}$+<=>^~|]+, then gpt-2, then \p{N}+, then [0-9]{3}
    LLAMA_VOCAB_PRE_TYPE_LLAMA3 = 1, // llama3: letters, \p{N}{1,3}, punctuation with trailing newlines
    LLAMA_VOCAB_PRE_TYPE_QWEN2 = 2, // llama3 with single digits
    LLAMA_VOCAB_PRE_TYPE_GPT2 = 3, // 's|'t|... | ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    LLAMA_VOCAB_PRE_TYPE_SMOLLM = 4, // \p{N} (each digit alone), then gpt-2
    LLAMA_VOCAB_PRE_TYPE_QWEN35 = 5, // qwen2 with marks (\p{M}) joining letters
    LLAMA_VOCAB_PRE_TYPE_REGEX = 6, // the vocab's compiled regexes (vocab-pre.c, vocab-regex.c)
};

// Most regexes one pre-tokenizer applies in sequence.
#define LLAMA_VOCAB_MAX_PRE_REGEX 8

struct vocab_regex;

// How a BPE vocab cuts text before its pre-tokenizer (tokenizer.ggml.model).
enum llama_vocab_bpe_session {
    LLAMA_VOCAB_BPE_PLAIN = 0, // gpt2, gemma4: the whole text
    LLAMA_VOCAB_BPE_WORDS = 1, // whitespace: words between whitespace (dropped), each on its own
    LLAMA_VOCAB_BPE_DNA = 2, // hybriddna: <dna>...</dna> as k-mer tokens (vocab-dna.c), BPE around
};

// Byte trie of token texts (vocab-trie.c): node 0 is the root; edges hashed by (node, byte).
struct llama_vocab_trie {
    uint64_t * edges;       // ((node << 8 | byte) + 1) << 32 | child; 0 empty
    uint64_t edges_mask;
    int32_t * node_token;   // token whose text ends at each node, -1 if none
    uint32_t n_nodes, cap_nodes;
};

// One vocabulary entry.
struct llama_vocab_token {
    uint32_t off;    // text offset into vocab->text (NUL-terminated there)
    uint32_t len;    // text length in bytes
    float score;  // SPM merge priority (higher merges first)
    int32_t attr;   // enum llama_token_attr bits
    int32_t type;   // enum llama_token_type as stored in the file
};

// One BPE merge: the pair (left, right) packed in key, its rank (lower merges first), the result.
struct llama_vocab_merge {
    uint64_t key;      // (uint64_t) left << 32 | right; UINT64_MAX marks an empty slot
    int32_t rank;
    int32_t result;
};

// Node of the byte trie over the texts of control, user-defined and unknown tokens.
struct llama_vocab_trie_node {
    int32_t child;    // first child node, -1 if none
    int32_t sibling;  // next sibling node, -1 if none
    int32_t token;    // token whose text ends here, -1 if none
    uint8_t byte;
};

struct llama_vocab {
    uint32_t magic;                          // LLAMA_MAGIC_VOCAB; LLAMA_MAGIC_DEAD once freed
    enum llama_vocab_type type;              // SPM, BPE, WPM, UGM, RWKV, PLAMO2, TEST or NONE
    enum llama_vocab_pre_type pre_type;      // BPE only
    struct vocab_regex * pre_regex[LLAMA_VOCAB_MAX_PRE_REGEX]; // LLAMA_VOCAB_PRE_TYPE_REGEX: applied in order
    int n_pre_regex;
    char pre_name[64];                       // tokenizer.ggml.pre as given ("" if absent)

    int32_t n_tokens;
    struct llama_vocab_token * tokens;       // [n_tokens]
    char * text;                             // all token texts, each NUL-terminated
    uint8_t * eog;                           // [n_tokens] 1 for end-of-generation tokens

    uint64_t * index;                        // open-addressing hash: text -> (hash tag << 32 | token id + 1), 0 empty
    uint32_t index_mask;                     // slots - 1

    struct llama_vocab_merge * merges;       // open-addressing hash of BPE merges
    uint64_t merges_mask;                    // slots - 1
    int32_t n_merges;

    // Special-token matching (parse_special): trie, and which first bytes can start a match
    // (bit 0: some user-defined token, matched always; bit 1: any matchable token).
    struct llama_vocab_trie_node * trie;     // node 0 is the root
    int32_t n_trie;
    int32_t trie_root_child[256];            // root's child per byte, -1 if none
    uint8_t first_byte[256];

    // SPM: the <0xXX> token of each byte; BPE: the token of each byte's alphabet character. -1 if absent.
    llama_token byte_token[256];

    llama_token bos, eos, eot, eom, unk, sep, pad, nl, cls, mask;
    llama_token fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;

    bool add_bos;           // tokenize with add_special puts BOS first
    bool add_eos;           // ... and EOS last
    bool add_sep;           // ... and SEP last
    bool add_space_prefix;  // SPM: a space (▁) starts each text segment
    bool ignore_merges;     // BPE (llama3): a piece that is a whole token is not merged
    bool clean_spaces;      // detokenize removes the space before . , ! ? 's ... (HF clean_up_tokenization)
    bool spm_words_independent; // SPM: no mergeable token has a ▁ right after another character
    bool escape_whitespaces; // BPE (Gemma 4 style): spaces are ▁ in the tokens
    bool bpe_raw_utf8;      // BPE over UTF-8 characters with <0xXX> byte fallback (no GPT-2 byte alphabet)
    bool newline_tokens;    // BPE (Gemma 4): a piece of newlines that is a token is emitted whole
    bool force_bos;         // add_bos stays on whatever the file says (Gemma 4)
    bool remove_extra_whitespaces; // UGM: leading / trailing spaces dropped, runs squeezed to one
    struct llama_vocab_ugm * ugm;  // UGM: charsmap and token trie (vocab-ugm.c)
    struct llama_vocab_trie rwkv_trie; // RWKV: the unescaped bytes of the normal tokens (vocab-rwkv.c)
    enum llama_vocab_bpe_session bpe_session;
    llama_token dna_open, dna_close, dna_oov; // hybriddna: <dna>, </dna>, <oov> (-1: plain BPE)
    bool wpm_lowercase;     // WPM: lowercase before matching (tokenizer.ggml.normalizer.lowercase)
    bool wpm_strip_accents; // WPM: NFD, then drop the marks (tokenizer.ggml.normalizer.strip_accents)
    bool words_lowercase;   // whitespace: each word lowercased, code point by code point (tokenizer.ggml.normalizer.lowercase)
    struct llama_vocab_plamo2 * plamo2; // PLaMo-2: token trie and integer scores (vocab-plamo2.c)
    uint32_t max_token_len; // longest token text in bytes
};

// Growable list of token ids; oom is set (and further pushes ignored) if memory runs out.
struct llama_vocab_tokens {
    llama_token * data;
    size_t n;
    size_t cap;
    bool oom;
};

// Appends id to list.
void llama_vocab_tokens_push(struct llama_vocab_tokens * list, llama_token id);

// Id of the token with exactly this text (len bytes), or -1.
llama_token llama_vocab_find(const struct llama_vocab * vocab, const char * text, size_t len);

// Rank and result of merging left and right; false if the pair does not merge.
bool llama_vocab_merge_find(const struct llama_vocab * vocab, llama_token left, llama_token right, int32_t * rank,
                            llama_token * result);

// SPM: appends the tokens of text (no special tokens inside); prefix: start with a ▁.
void llama_vocab_spm_tokenize(const struct llama_vocab * vocab, const char * text, size_t len, bool prefix,
                              struct llama_vocab_tokens * out);

// SPM: true if text (len bytes) has no ▁ right after another character (so no merge can cross
// the start of a word).
bool llama_vocab_spm_words_independent(const char * text, size_t len);

// BPE: appends the tokens of text (no special tokens inside): pre-tokenize, then merge each piece.
void llama_vocab_bpe_tokenize(const struct llama_vocab * vocab, const char * text, size_t len, struct llama_vocab_tokens * out);

// WPM: appends the WordPiece tokens of text (no special tokens inside): normalize, split into
// words, greedy longest match per word (vocab-wpm.c).
void llama_vocab_wpm_tokenize(const struct llama_vocab * vocab, const char * text, size_t len, struct llama_vocab_tokens * out);

// BPE pre-tokenizer of vocab: calls emit(user, start, end) for each piece of text[0, len) in order;
// false if memory ran out.
bool llama_vocab_bpe_pretokenize(const struct llama_vocab * vocab, const char * text, size_t len,
                                 void (*emit)(void * user, size_t start, size_t end), void * user);

// Byte trie: room for max_bytes bytes of token text (the sum of the texts' lengths); false
// (logged) if that is too many or memory runs out.
bool llama_vocab_trie_init(struct llama_vocab_trie * t, size_t max_bytes);

// Frees the trie's tables; safe on a zeroed or freed trie.
void llama_vocab_trie_free(struct llama_vocab_trie * t);

// The child of node by byte b, or 0 when there is none.
uint32_t llama_vocab_trie_child(const struct llama_vocab_trie * t, uint32_t node, uint8_t b);

// Adds text s[0, n) for token id; false if the trie is full (more bytes than init allowed).
bool llama_vocab_trie_insert(struct llama_vocab_trie * t, const uint8_t * s, size_t n, int32_t id);

// RWKV (vocab-rwkv.c): builds the trie of the normal tokens' unescaped bytes; false (logged) on
// a token text that does not unescape or out of memory.
bool llama_vocab_rwkv_load(struct llama_vocab * v);

// RWKV: appends the tokens of text: at each position the longest token, a byte no token starts
// with dropped (the world vocabulary has every byte).
void llama_vocab_rwkv_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out);

// RWKV: the bytes token text s[0, n) stands for, written to out (room for n bytes); their count.
size_t llama_vocab_rwkv_unescape(const char * s, size_t n, char * out);

// UGM (vocab-ugm.c): reads the precompiled charsmap and builds the token trie of v (its tokens
// loaded); false (logged) on a malformed charsmap or out of memory.
bool llama_vocab_ugm_load(struct llama_vocab * v, const struct gguf_context * g);

// UGM: frees what llama_vocab_ugm_load built; NULL-safe on v->ugm.
void llama_vocab_ugm_free(struct llama_vocab * v);

// UGM: appends the tokens of text (no special tokens inside): normalize, then Viterbi.
void llama_vocab_ugm_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out);

// PLaMo-2 (vocab-plamo2.c): builds the trie of the non-byte tokens and their integer scores;
// false (logged) if a byte token <0x00>..<0xFF> is missing or memory runs out.
bool llama_vocab_plamo2_load(struct llama_vocab * v);

// PLaMo-2: frees what llama_vocab_plamo2_load built; NULL-safe on v->plamo2.
void llama_vocab_plamo2_free(struct llama_vocab * v);

// PLaMo-2: appends the tokens of text (no special tokens inside): the segmentation of highest
// total score, an unmatched character costing 10^7 and spelled by its UTF-8 byte tokens.
void llama_vocab_plamo2_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out);

// TEST vocabulary: appends one token per 5-byte chunk of text, a rolling hash of the chunk
// (h = h * 31 + byte) modulo the vocabulary size, as llama.cpp's test tokenizer does.
void llama_vocab_test_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out);

// hybriddna (vocab-dna.c): tokens of text, the stretches outside <dna>...</dna> given to
// stretch(); plain stretch() when the vocab lacks <dna>, </dna> or <oov>.
void llama_vocab_dna_tokenize(const struct llama_vocab * v, const char * text, size_t len,
                              void (*stretch)(const struct llama_vocab *, const char *, size_t, struct llama_vocab_tokens *),
                              struct llama_vocab_tokens * out);

// hybriddna: the length of token text s[0, n) without its k-mer marker (U+E000) when it has one.
size_t llama_vocab_dna_text_len(const struct llama_vocab * v, llama_token id, const char * s, size_t n);

// Pre-tokenizer names (vocab-pre.c): true if llama.cpp accepts name as tokenizer.ggml.pre.
bool llama_vocab_pre_known(const char * name);

// True if a vocab with pre-tokenizer name may lack tokenizer.ggml.merges (Kimi-K2).
bool llama_vocab_pre_merges_optional(const char * name);

// Sets the pre-tokenizer of BPE vocab v from its name: pre_type, the family's defaults
// (ignore_merges, clean_spaces, add_bos, add_sep, escape_whitespaces, bpe_raw_utf8, ...) and the
// compiled regexes; false (logged, naming it) for an unknown name or a regex that does not compile.
bool llama_vocab_pre_setup(struct llama_vocab * v, const char * name);

// Frees the compiled regexes of v.
void llama_vocab_pre_free(struct llama_vocab * v);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_VOCAB_H
