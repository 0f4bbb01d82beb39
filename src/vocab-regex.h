// vocab-regex.h — the regular expressions of the BPE pre-tokenizers that have no hand-written
// matcher (vocab-bpe.c has those of the common families): compiled once when a vocabulary
// loads, matched over decoded code points. Internal to vocab*.c; not installed.
//
// Syntax (the subset of Oniguruma's that the published pre-tokenizer patterns use): literals
// (UTF-8), escapes \r \n \t \f \v \\ and escaped punctuation, \s \S \d \D \w \W, \p{..} / \P{..}
// for L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp
// and Han, classes [..] / [^..] with ranges, nested classes and intersection (&&), groups ( )
// and (?: ), look-aheads (?= ) (?! ), | , * + ? {n} {n,} {n,m} (greedy), ^ $ (line
// anchors, as in Ruby syntax) and \b \B. Anything else is a compile error naming the offset.
// Matching is leftmost-first with backtracking, as Oniguruma matches.
#ifndef LLAMA_VOCAB_REGEX_H
#define LLAMA_VOCAB_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vocab_regex;

// A text decoded once: code point i is cp[i] with Unicode table value val[i] (unicode.h;
// VOCAB_REGEX_VAL_INVALID for a byte that is not valid UTF-8).
struct vocab_regex_text {
    const uint32_t * cp;
    const uint8_t * val;
};

// Table value given to an invalid byte: no category, not whitespace.
#define VOCAB_REGEX_VAL_INVALID 31

// Backtracking stack of a match, reused across calls; zero-initialise, free with vocab_regex_scratch_free.
struct vocab_regex_scratch {
    void * stack;
    size_t cap;
};

// Compiles pattern; NULL on a syntax error (logged with the offset and the pattern).
struct vocab_regex * vocab_regex_compile(const char * pattern);

// Frees a compiled pattern; NULL-safe.
void vocab_regex_free(struct vocab_regex * re);

// Frees the scratch's stack.
void vocab_regex_scratch_free(struct vocab_regex_scratch * s);

// Matches re at code point pos of the piece [start, end) of t (the piece's ends are the text's
// ends for anchors and look-aheads). Returns the end of the match (== pos for an empty match),
// or -1 when none starts at pos (or memory ran out).
int64_t vocab_regex_match_at(const struct vocab_regex * re, const struct vocab_regex_text * t, size_t start, size_t end,
                             size_t pos, struct vocab_regex_scratch * scratch);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_VOCAB_REGEX_H
