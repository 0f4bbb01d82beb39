// grammar.h — internal API of the GBNF engine: grammar-parse.c (GBNF text -> compiled rules),
// grammar.c (the matcher: states as interned sets of stacks, a byte trie over the vocabulary,
// masks cached per state), grammar-regex.c (the small regex engine of lazy-grammar triggers)
// and grammar-sampler.c (the llama_sampler). Not installed.
//
// Compiled form: one flat array of elements. A rule is a list of alternatives, each a run of
// elements ended by GR_ALT (another alternative follows) or GR_END (last alternative). A
// terminal is one element (a character class, or a token reference); repetition and groups
// become synthesized rules during parsing. A stack is a chain of element positions (the top is
// the next terminal to match, the entries below are where each enclosing rule continues).
#ifndef LLAMA_GRAMMAR_H
#define LLAMA_GRAMMAR_H

#include "llama-impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gr_type {
    GR_END = 0, // end of the rule's last alternative
    GR_ALT = 1, // end of an alternative; another follows
    GR_REF = 2, // value: rule id
    GR_CLASS = 3, // value: character class id (literals are one-character classes)
    GR_TOKEN = 4, // value: token id; matches that token only
    GR_TOKEN_NOT = 5, // value: token id; matches any one non-EOG token but this one
};

struct gr_elem {
    uint32_t type;
    uint32_t value;
};

// A set of code points: sorted, disjoint [lo, hi] ranges, optionally negated.
struct gr_class {
    uint32_t off;      // first range in gr_grammar.ranges
    uint32_t n;        // number of ranges
    uint32_t negated;
    uint32_t ascii[4]; // bit c set: code point c < 128 is in the class (negation applied)
};

// An immutable compiled grammar; shared (reference-counted) by samplers and their clones.
struct gr_grammar {
    int refs;
    struct gr_elem * elems;
    uint32_t n_elems;
    uint32_t * ranges;
    uint32_t n_ranges; // pairs lo, hi
    struct gr_class * classes;
    uint32_t n_classes;
    uint32_t * rule_alts;    // per rule: offset into alts
    uint32_t * rule_n_alts;  // per rule: number of alternatives
    uint32_t * alts;         // start position of each alternative
    uint32_t n_rules;
    uint32_t root;           // root rule id
    bool has_tokens;         // some GR_TOKEN / GR_TOKEN_NOT element exists
};

// Parses and checks GBNF text. vocab (may be NULL) resolves <token> references; without one
// they are only checked for syntax. Returns NULL and writes the reason ("line L, column C:
// ...") into err (err_size bytes, may be 0) on any error.
struct gr_grammar * gr_grammar_parse(const char * text, const char * root, const struct llama_vocab * vocab, char * err,
                                     size_t err_size);
// Takes one more reference.
struct gr_grammar * gr_grammar_ref(struct gr_grammar * g);
// Drops a reference, freeing the grammar with the last; NULL-safe.
void gr_grammar_unref(struct gr_grammar * g);
// Whether code point cp is in class c.
bool gr_class_match(const struct gr_grammar * g, uint32_t c, uint32_t cp);

// ---- matcher (grammar.c) ----

// Token texts of a vocabulary as a byte trie in preorder; built once, shared (refcounted).
struct gr_vocab;
// Builds the trie from the vocab's pieces (control tokens and EOG tokens take no text);
// NULL (logged) on memory exhaustion.
struct gr_vocab * gr_vocab_build(const struct llama_vocab * vocab);
struct gr_vocab * gr_vocab_ref(struct gr_vocab * v);
void gr_vocab_unref(struct gr_vocab * v);
// Number of tokens.
int32_t gr_vocab_n_tokens(const struct gr_vocab * v);
// Per token: 1 if it ends generation.
const uint8_t * gr_vocab_eog(const struct gr_vocab * v);
// The trie of vocab from a small process-wide cache (built on a miss); one reference for the caller.
struct gr_vocab * gr_vocab_get(const struct llama_vocab * vocab);
// Drops vocab's cached trie (llama_vocab_free calls this; samplers holding it keep their reference).
void gr_vocab_forget(const struct llama_vocab * vocab);

// A matcher: the current state of one generation plus the caches (interned stacks and states,
// transitions, masks). Not thread-safe; clones are independent.
struct gr_matcher;
// New matcher at the grammar's start; NULL (logged) on memory exhaustion. v may be NULL (then
// only gr_matcher_accept_bytes works; used by the checker).
struct gr_matcher * gr_matcher_new(struct gr_grammar * g, struct gr_vocab * v);
// Independent copy (same state); NULL on memory exhaustion.
struct gr_matcher * gr_matcher_clone(const struct gr_matcher * m);
void gr_matcher_free(struct gr_matcher * m);
// Back to the start state.
void gr_matcher_reset(struct gr_matcher * m);
// Whether the current state accepts end of generation (the grammar is complete here).
bool gr_matcher_can_end(const struct gr_matcher * m);
// Whether the current state is dead (nothing can follow).
bool gr_matcher_dead(const struct gr_matcher * m);
// Makes the state dead (after a token the grammar refused was forced on it).
void gr_matcher_kill(struct gr_matcher * m);
// Bit mask of the allowed non-EOG tokens in the current state (gr_vocab_n_tokens bits);
// NULL on memory exhaustion. Owned by the matcher, valid until its next call.
const uint64_t * gr_matcher_mask(struct gr_matcher * m);
// Advances by one token; false (state unchanged) if the token is not allowed here.
bool gr_matcher_accept_token(struct gr_matcher * m, llama_token token);
// Advances by raw bytes; false (state unchanged) if they are not allowed here.
bool gr_matcher_accept_bytes(struct gr_matcher * m, const char * bytes, size_t n);

// ---- regex (grammar-regex.c), for lazy-grammar trigger patterns (ECMAScript subset) ----

struct gr_regex;
// Compiles pattern; NULL and a reason in err on a syntax error or an unsupported feature.
struct gr_regex * gr_regex_compile(const char * pattern, char * err, size_t err_size);
void gr_regex_free(struct gr_regex * re);
// Whether the whole of s[0..n) matches; *group1 gets the start of the first capture group
// (0 if the pattern has none). A pathological pattern that exceeds the step budget reports no
// match (logged).
bool gr_regex_match(const struct gr_regex * re, const char * s, size_t n, size_t * group1);

// ---- exported for llama_py.grammar (not part of llama.h) ----

// Checks GBNF text as llama_sampler_init_grammar would (vocab may be NULL: token references
// are then checked for syntax only). Returns true if it compiles; otherwise false with the
// reason ("line L, column C: ...") in err.
LLAMA_API bool llama_py_grammar_validate(const struct llama_vocab * vocab, const char * grammar_str, const char * grammar_root,
                                         char * err, size_t err_size);

#endif // LLAMA_GRAMMAR_H
