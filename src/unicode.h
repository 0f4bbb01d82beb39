// unicode.h — what the tokenizers need from Unicode: UTF-8 decoding that never fails, the
// general category and White_Space property of a code point (tables generated into
// unicode-data.c by scripts/gen_unicode_tables.py), and GPT-2's byte <-> code point alphabet.
// Not installed.
#ifndef LLAMA_UNICODE_H
#define LLAMA_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// General categories, in the order of the generator's CATEGORIES list.
enum unicode_gc {
    UNICODE_GC_CN,
    UNICODE_GC_CC,
    UNICODE_GC_CF,
    UNICODE_GC_CO,
    UNICODE_GC_CS,
    UNICODE_GC_LU,
    UNICODE_GC_LL,
    UNICODE_GC_LT,
    UNICODE_GC_LM,
    UNICODE_GC_LO,
    UNICODE_GC_MN,
    UNICODE_GC_MC,
    UNICODE_GC_ME,
    UNICODE_GC_ND,
    UNICODE_GC_NL,
    UNICODE_GC_NO,
    UNICODE_GC_PC,
    UNICODE_GC_PD,
    UNICODE_GC_PS,
    UNICODE_GC_PE,
    UNICODE_GC_PI,
    UNICODE_GC_PF,
    UNICODE_GC_PO,
    UNICODE_GC_SM,
    UNICODE_GC_SC,
    UNICODE_GC_SK,
    UNICODE_GC_SO,
    UNICODE_GC_ZS,
    UNICODE_GC_ZL,
    UNICODE_GC_ZP,
    UNICODE_GC_COUNT,
};

// Bit 5 of a table value: the code point has the White_Space property (what \s matches).
#define UNICODE_WS_BIT 0x20u

// Returned by unicode_utf8_decode for a byte that does not start a valid UTF-8 sequence.
#define UNICODE_INVALID 0xFFFFFFFFu

// Class flags of a code point, as the pre-tokenizer regexes see it.
#define UNICODE_FLAG_L  0x01u  // \p{L}
#define UNICODE_FLAG_N  0x02u  // \p{N}
#define UNICODE_FLAG_P  0x04u  // \p{P}
#define UNICODE_FLAG_WS 0x08u  // \s (White_Space)
#define UNICODE_FLAG_M  0x10u  // \p{M}

// Generated tables (unicode-data.c).
extern const uint32_t unicode_direct_limit;
extern const uint8_t unicode_direct[];
extern const uint32_t unicode_n_ranges;
extern const uint32_t unicode_range_start[];
extern const uint8_t unicode_range_value[];

// Table value of cp (enum unicode_gc | UNICODE_WS_BIT); Cn for values past U+10FFFF.
uint8_t unicode_cpt_value(uint32_t cp);

// UNICODE_FLAG_* bits of cp; 0 for UNICODE_INVALID (an invalid byte counts as "other").
uint32_t unicode_cpt_flags(uint32_t cp);

// UNICODE_FLAG_* bits of each table value (general category | White_Space bit).
extern const uint8_t unicode_value_flags[64];

// unicode_cpt_flags for cp < 0x80, inlined for the tokenizers' ASCII fast paths.
static inline uint32_t unicode_cpt_flags_fast(uint32_t cp) { return unicode_value_flags[unicode_direct[cp]]; }

// Decodes the code point at s (n > 0 bytes available) and stores its byte length in *len.
// A byte that does not start a well-formed sequence (overlong, surrogate, > U+10FFFF,
// truncated) yields UNICODE_INVALID with *len = 1, so every input decodes and no byte is lost.
uint32_t unicode_utf8_decode(const uint8_t * s, size_t n, size_t * len);

// Writes cp as UTF-8 into out; returns the length (1..4).
size_t unicode_utf8_encode(uint32_t cp, char out[4]);

// Generated tables of unicode-case-data.c (scripts/gen_unicode_case_tables.py).
extern const uint32_t unicode_n_lower;
extern const uint32_t unicode_lower_from[];
extern const uint32_t unicode_lower_to[];
extern const uint32_t unicode_n_nfd;
extern const uint32_t unicode_nfd_from[];
extern const uint32_t unicode_nfd_at[];
extern const uint32_t unicode_nfd_seq[];

// Most code points one code point decomposes into (NFD).
#define UNICODE_NFD_MAX 4

// The simple lowercase form of cp (cp itself when it has none of one code point).
uint32_t unicode_tolower(uint32_t cp);

// Writes the canonical decomposition (NFD) of cp into out; returns its length (1 when cp
// does not decompose: out[0] = cp). Marks are not reordered.
size_t unicode_nfd(uint32_t cp, uint32_t out[UNICODE_NFD_MAX]);

// GPT-2 byte-level alphabet: the code point that stands for byte b.
uint32_t unicode_byte_to_cpt(uint8_t b);

// The byte that code point cp stands for in the GPT-2 alphabet, or -1 if cp is not in it.
int unicode_cpt_to_byte(uint32_t cp);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_UNICODE_H
