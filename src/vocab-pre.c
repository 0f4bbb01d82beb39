// vocab-pre.c — every BPE pre-tokenizer name (tokenizer.ggml.pre) llama.cpp's loader accepts
// (as of the llama.cpp vendored in llama-cpp-python 0.3.36), with its split regexes and
// family defaults. The common families keep their hand-written matchers (vocab-bpe.c); the
// others are compiled by vocab-regex.c when the vocabulary loads.
//
// The regexes are the patterns published in the models' tokenizer.json (a Sequence of Split
// steps, each splitting every piece of the previous one, matches and gaps both kept), written
// with (?i:'s|...) spelled as explicit [sS] classes (the same strings for the ASCII letters).
#include "llama-vocab.h"
#include "vocab-regex.h"

#include <stdlib.h>
#include <string.h>

// Family flags.
enum {
    PRE_IGNORE_MERGES = 1 << 0,  // a piece that is a whole token is emitted as it is
    PRE_NO_CLEAN = 1 << 1,  // detokenizing keeps the space before punctuation
    PRE_ADD_BOS = 1 << 2,  // tokenize with add_special puts BOS first (unless the file says otherwise)
    PRE_ADD_SEP = 1 << 3,  // ... and SEP last
    PRE_ESCAPE_WS = 1 << 4,  // spaces become U+2581 before BPE (SPM-style BPE), and back when detokenizing
    PRE_RAW_UTF8 = 1 << 5,  // BPE over UTF-8 characters with <0xXX> byte fallback, no byte alphabet
    PRE_NEWLINE_TOKEN = 1 << 6,  // a piece of newlines only that is a token is emitted as it is (Gemma 4)
    PRE_FORCE_BOS = 1 << 7,  // add_bos is on even when the file says false (Gemma 4)
    PRE_NO_MERGES_OK = 1 << 8,  // tokenizer.ggml.merges may be absent (Kimi-K2)
};

#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RX_GPT2      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_CASE_WORDS_TAIL(M, digits, punct_tail)                                                                           \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}" M "]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}" M "]+" CONTRACTIONS "?"  \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}" M "]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}" M "]*" CONTRACTIONS "?" \
    "|\\p{N}" digits "| ?[^\\s\\p{L}\\p{N}]+" punct_tail "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_CASE_WORDS(M, digits) RX_CASE_WORDS_TAIL(M, digits, "[\\r\\n/]*")
#define RX_DEEPSEEK3_WORDS(tail)                                                                        \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+" \
    "| ?[\\p{P}\\p{S}]+" tail "|\\s+(?!\\S)|\\s+"
#define RX_QWEN2 \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_BLOOM " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"

// A family: its hand-written matcher, or LLAMA_VOCAB_PRE_TYPE_REGEX and the regexes in order.
struct vocab_pre_family {
    enum llama_vocab_pre_type type;
    const char * regex[LLAMA_VOCAB_MAX_PRE_REGEX];
};

enum {
    FAM_DEFAULT,
    FAM_LLAMA3,
    FAM_QWEN2,
    FAM_GPT2,
    FAM_SMOLLM,
    FAM_FALCON,
    FAM_JAIS2,
    FAM_DEEPSEEK_LLM,
    FAM_DEEPSEEK3,
    FAM_SPARK2_5,
    FAM_YOUTU,
    FAM_DEEPSEEK_CODER,
    FAM_QWEN35,
    FAM_BLOOM,
    FAM_VIKING,
    FAM_TEKKEN,
    FAM_CHAMELEON,
    FAM_GPT4O,
    FAM_GRANITE_EMB_MULTI,
    FAM_TINY_AYA,
    FAM_KIMI_K2,
    FAM_SUPERBPE,
    FAM_BAILINGMOE,
    FAM_SEED_CODER,
    FAM_UFAKZEKA,
    FAM_AFMOE,
    FAM_LAGUNA,
    FAM_EXAONE_MOE,
    FAM_GEMMA4,
    FAM_MINICPM5,
    FAM_WHITESPACE,
};

static const struct vocab_pre_family FAMILIES[] = {
    [FAM_DEFAULT] = { LLAMA_VOCAB_PRE_TYPE_DEFAULT, { NULL } },
    [FAM_LLAMA3] = { LLAMA_VOCAB_PRE_TYPE_LLAMA3, { NULL } },
    [FAM_QWEN2] = { LLAMA_VOCAB_PRE_TYPE_QWEN2, { NULL } },
    [FAM_GPT2] = { LLAMA_VOCAB_PRE_TYPE_GPT2, { NULL } },
    [FAM_SMOLLM] = { LLAMA_VOCAB_PRE_TYPE_SMOLLM, { NULL } },
    [FAM_FALCON] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { "[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]" } },
    [FAM_JAIS2] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                    { CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
                                   "|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)"
                                   "|\\s{8}(?!\\S)"
                                   "|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}" } },
    [FAM_DEEPSEEK_LLM] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                           { "[\\r\\n]",
                             "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf\xc7\x84-"
                             "\xca\x93\xca\x95-\xca\xaf"
                             "\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf\xce\x86\xce\x88-"
                             "\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5"
                             "\xcf\xb7-\xd2\x81\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-"
                             "\xe1\x8f\xb5\xe1\x8f\xb8-\xe1\x8f\xbd"
                             "\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf\xe1\xb4\x80-\xe1\xb4\xab\xe1\xb5\xab-"
                             "\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a"
                             "\xe1\xb8\x80-\xe1\xbc\x95\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-"
                             "\xe1\xbd\x8d\xe1\xbd\x90-\xe1\xbd\x97"
                             "\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe\x80-\xe1\xbe\xb4\xe1\xbe\xb6-"
                             "\xe1\xbe\xbc\xe1\xbe\xbe"
                             "\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-"
                             "\xe1\xbf\x9b\xe1\xbf\xa0-\xe1\xbf\xac"
                             "\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87\xe2\x84\x8a-"
                             "\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d"
                             "\xe2\x84\xa4\xe2\x84\xa6\xe2\x84\xa8\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-"
                             "\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84\xbf"
                             "\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1\xbb\xe2\xb1\xbe-"
                             "\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae"
                             "\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-"
                             "\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e\x87"
                             "\xea\x9e\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac\x93-"
                             "\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba"
                             "\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91\x8f\xf0\x90\x92\xb0-"
                             "\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb"
                             "\xf0\x90\xb2\x80-\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-"
                             "\xf0\x91\xa3\x9f\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+",
                             "\\s?[!-/"
                             ":-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f\xe3\x80\x80-"
                             "\xe3\x80\x82]+",
                             "\\s+$", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+",
                             "\\p{N}+" } },
    [FAM_DEEPSEEK3] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                        { "\\p{N}{1,3}", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
                          RX_DEEPSEEK3_WORDS("[\\r\\n]*|\\s*[\\r\\n]+") } },
    [FAM_SPARK2_5] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                       { "\\p{N}{1,3}", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
                         RX_DEEPSEEK3_WORDS("|[\\r\\n]"), "\\p{N}" } },
    [FAM_YOUTU] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                    { "[\xea\xb0\x80-\xed\x9e\xa3\xe3\x84\xb1-\xe3\x86\x8e]+|["
                      "\xef\xbc\x81\xe2\x80\xa6\xe2\x80\x9c\xe2\x80\x9d\xe2\x80\x98\xe2\x80\x99"
                      "\xe2\x80\x94\xef\xbc\x9a\xef\xbc\x9b\xef\xbc\x8c\xe3\x80\x81-\xe3\x80\xbf\xef\xb8\xb0-\xef\xb9\x8f]+|["
                      "\xe3\x84\x85-\xe3\x84\xaf]+"
                      "|[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
                      RX_CASE_WORDS("", "") } },
    [FAM_DEEPSEEK_CODER] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                             { "[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
                               "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+", "\\p{N}" } },
    [FAM_QWEN35] = { LLAMA_VOCAB_PRE_TYPE_QWEN35, { NULL } },
    [FAM_BLOOM] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { RX_BLOOM } },
    [FAM_VIKING] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { RX_BLOOM, "\\p{N}" } },
    [FAM_TEKKEN] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                     { "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
                       "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
                       "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" } },
    [FAM_CHAMELEON] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                        { "<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
                          "[\\p{P}!-/:-@\\[-`{-~]", RX_GPT2 } },
    [FAM_GPT4O] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { RX_CASE_WORDS("", "{1,3}") } },
    [FAM_GRANITE_EMB_MULTI] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                                { "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+" CONTRACTIONS
                                  "?"
                                  "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*" CONTRACTIONS
                                  "?"
                                  "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" } },
    [FAM_TINY_AYA] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { "\\d{1,3}(?=(?:\\d{3})*\\b)", RX_CASE_WORDS("", "{1,3}") } },
    [FAM_KIMI_K2] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { "[\\p{Han}]+|" RX_CASE_WORDS_TAIL("&&[^\\p{Han}]", "{1,3}", "[\\r\\n]*") } },
    [FAM_SUPERBPE] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { "\\p{N}+", "(?=(\\d{3})+(?!\\d))" } },
    [FAM_BAILINGMOE] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                         { "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                           "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                           "|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+" } },
    [FAM_SEED_CODER] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                         { CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| "
                                        "?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" } },
    [FAM_UFAKZEKA] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                       { "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" } },
    // AFMoE's digit rule (runs of digits in groups of three from the right, the 1-2 left over
    // first) written as a regex.
    [FAM_AFMOE] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                    { "\\p{N}{1,3}(?=(?:\\p{N}{3})*(?!\\p{N}))",
                      "[\xe4\xb8\x80-\xe9\xbf\xbf\xe3\x90\x80-\xe4\xb6\xbf\xe8\xb1\x88-\xef\xab\xbf\xe3\x81\x80-"
                      "\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf"
                      "\xef\xbd\xa5-\xef\xbe\x9f\xe2\xbc\x80-\xe2\xbf\x9f\xe0\xb9\x80-\xe0\xb9\xbf\xe0\xba\x80-"
                      "\xe0\xbb\xbf\xe1\x9e\x80-\xe1\x9f\xbf"
                      "\xe1\x80\x80-\xe1\x82\x9f\xea\xa9\xa0-\xea\xa9\xbf\xea\xa7\xa0-\xea\xa7\xbf\xea\xb0\x80-"
                      "\xed\x9e\xaf\xe1\x84\x80-\xe1\x87\xbf]+",
                      RX_DEEPSEEK3_WORDS("[\\r\\n]*|\\s*[\\r\\n]+") } },
    [FAM_LAGUNA] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { "[^\\n]+|[\\n]+", RX_QWEN2 } },
    [FAM_EXAONE_MOE] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                         { CONTRACTIONS
                           "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?"
                           "|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+" } },
    [FAM_GEMMA4] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { "[^\\n]+|[\\n]+" } },
    [FAM_MINICPM5] = { LLAMA_VOCAB_PRE_TYPE_REGEX,
                       { "\\p{N}{1,3}",
                         CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| "
                                      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" } },
    [FAM_WHITESPACE] = { LLAMA_VOCAB_PRE_TYPE_REGEX, { "\\S+" } },
};

struct vocab_pre_name {
    const char * name;
    int family;
    int flags;
};

static const struct vocab_pre_name NAMES[] = {
    { "default", FAM_DEFAULT, 0 },
    { "minicpm5", FAM_MINICPM5, PRE_IGNORE_MERGES },
    { "llama3", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "llama-v3", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "llama-bpe", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "falcon3", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "falcon-h1", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "pixtral", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "midm-2.0", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "lfm2", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "jina-v5-nano", FAM_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "deepseek-llm", FAM_DEEPSEEK_LLM, PRE_NO_CLEAN },
    { "deepseek-coder", FAM_DEEPSEEK_CODER, PRE_NO_CLEAN },
    { "deepseek-v3", FAM_DEEPSEEK3, PRE_NO_CLEAN },
    { "spark2_5", FAM_SPARK2_5, PRE_NO_CLEAN },
    { "youtu", FAM_YOUTU, PRE_NO_CLEAN | PRE_IGNORE_MERGES },
    { "falcon", FAM_FALCON, 0 },
    { "mpt", FAM_GPT2, 0 },
    { "starcoder", FAM_SMOLLM, 0 },
    { "gpt-2", FAM_GPT2, 0 },
    { "phi-2", FAM_GPT2, 0 },
    { "jina-es", FAM_GPT2, 0 },
    { "jina-de", FAM_GPT2, 0 },
    { "gigachat", FAM_GPT2, 0 },
    { "jina-v2-es", FAM_GPT2, 0 },
    { "jina-v2-de", FAM_GPT2, 0 },
    { "a.x-4.0", FAM_GPT2, 0 },
    { "mellum", FAM_GPT2, 0 },
    { "modern-bert", FAM_GPT2, 0 },
    { "jais-2", FAM_JAIS2, 0 },
    { "gemma4", FAM_GEMMA4, PRE_ESCAPE_WS | PRE_RAW_UTF8 | PRE_NEWLINE_TOKEN | PRE_FORCE_BOS },
    { "granite-embed-multi-311m", FAM_GEMMA4, PRE_ESCAPE_WS | PRE_RAW_UTF8 | PRE_NEWLINE_TOKEN | PRE_FORCE_BOS },
    { "sarvam-moe", FAM_GEMMA4, PRE_ESCAPE_WS | PRE_RAW_UTF8 | PRE_NO_CLEAN },
    { "jina-v1-en", FAM_GPT2, PRE_ADD_SEP },
    { "jina-v2-code", FAM_GPT2, PRE_ADD_SEP },
    { "roberta-bpe", FAM_GPT2, PRE_ADD_SEP },
    { "whitespace", FAM_WHITESPACE, PRE_RAW_UTF8 },
    { "refact", FAM_SMOLLM, 0 },
    { "command-r", FAM_SMOLLM, PRE_NO_CLEAN },
    { "qwen2", FAM_QWEN2, PRE_NO_CLEAN },
    { "deepseek-r1-qwen", FAM_QWEN2, PRE_NO_CLEAN },
    { "kormo", FAM_QWEN2, PRE_NO_CLEAN },
    { "f2llmv2", FAM_QWEN2, PRE_NO_CLEAN },
    { "qwen35", FAM_QWEN35, PRE_NO_CLEAN },
    { "stablelm2", FAM_QWEN2, 0 },
    { "olmo", FAM_GPT2, 0 },
    { "dbrx", FAM_LLAMA3, 0 },
    { "smaug-bpe", FAM_LLAMA3, 0 },
    { "poro-chat", FAM_BLOOM, PRE_NO_CLEAN },
    { "chatglm-bpe", FAM_LLAMA3, 0 },
    { "glm4", FAM_LLAMA3, PRE_IGNORE_MERGES },
    { "glm5", FAM_LLAMA3, PRE_IGNORE_MERGES },
    { "viking", FAM_VIKING, PRE_NO_CLEAN },
    { "jais", FAM_GPT2, 0 },
    { "tekken", FAM_TEKKEN, PRE_NO_CLEAN | PRE_IGNORE_MERGES | PRE_ADD_BOS },
    { "smollm", FAM_SMOLLM, PRE_NO_CLEAN },
    { "codeshell", FAM_SMOLLM, 0 },
    { "bloom", FAM_BLOOM, 0 },
    { "gpt3-finnish", FAM_BLOOM, 0 },
    { "exaone", FAM_SMOLLM, 0 },
    { "exaone4", FAM_GPT2, 0 },
    { "exaone-moe", FAM_EXAONE_MOE, 0 },
    { "chameleon", FAM_CHAMELEON, PRE_ADD_BOS | PRE_NO_CLEAN },
    { "minerva-7b", FAM_SMOLLM, 0 },
    { "megrez", FAM_QWEN2, 0 },
    { "gpt-4o", FAM_GPT4O, PRE_NO_CLEAN },
    { "llama4", FAM_GPT4O, PRE_NO_CLEAN },
    { "kanana2", FAM_GPT4O, PRE_NO_CLEAN },
    { "talkie", FAM_GPT4O, PRE_NO_CLEAN },
    { "granite-embed-multi-97m", FAM_GRANITE_EMB_MULTI, PRE_NO_CLEAN | PRE_IGNORE_MERGES },
    { "tiny_aya", FAM_TINY_AYA, PRE_NO_CLEAN },
    { "cohere2moe", FAM_TINY_AYA, PRE_NO_CLEAN },
    { "superbpe", FAM_SUPERBPE, PRE_NO_CLEAN },
    { "trillion", FAM_GPT2, PRE_NO_CLEAN },
    { "granite-docling", FAM_GPT2, PRE_NO_CLEAN },
    { "bailingmoe", FAM_BAILINGMOE, PRE_NO_CLEAN },
    { "bailingmoe2", FAM_BAILINGMOE, PRE_NO_CLEAN },
    { "llada-moe", FAM_BAILINGMOE, PRE_NO_CLEAN },
    { "seed-coder", FAM_SEED_CODER, PRE_NO_CLEAN },
    { "hunyuan", FAM_QWEN2, PRE_NO_CLEAN },
    { "hunyuan-dense", FAM_DEEPSEEK3, PRE_NO_CLEAN },
    { "hy_v4", FAM_DEEPSEEK3, PRE_NO_CLEAN },
    { "joyai-llm", FAM_DEEPSEEK3, PRE_NO_CLEAN },
    { "kimi-k2", FAM_KIMI_K2, PRE_NO_CLEAN | PRE_NO_MERGES_OK },
    { "ufakzeka", FAM_UFAKZEKA, PRE_NO_CLEAN },
    { "grok-2", FAM_QWEN2, PRE_NO_CLEAN },
    { "afmoe", FAM_AFMOE, PRE_NO_CLEAN },
    { "laguna", FAM_LAGUNA, PRE_NO_CLEAN },
    { "minimax-m2", FAM_GPT4O, PRE_NO_CLEAN },
    { "solar-open", FAM_QWEN2, PRE_NO_CLEAN },
    { "mellum2", FAM_SMOLLM, 0 },
};

static const struct vocab_pre_name * vocab_pre_lookup(const char * name) {
    for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
        if (strcmp(NAMES[i].name, name) == 0) {
            return &NAMES[i];
        }
    }
    return NULL;
}

bool llama_vocab_pre_known(const char * name) { return vocab_pre_lookup(name) != NULL; }

bool llama_vocab_pre_merges_optional(const char * name) {
    const struct vocab_pre_name * n = vocab_pre_lookup(name);
    return n && (n->flags & PRE_NO_MERGES_OK);
}

bool llama_vocab_pre_setup(struct llama_vocab * v, const char * name) {
    const struct vocab_pre_name * n = vocab_pre_lookup(name);
    if (n == NULL) {
        LLAMA_LOG_ERROR("llama_vocab_load: unknown pre-tokenizer tokenizer.ggml.pre = '%s' (not one of the %zu names "
                        "llama.cpp accepts)\n",
                        name, sizeof(NAMES) / sizeof(NAMES[0]));
        return false;
    }
    const struct vocab_pre_family * f = &FAMILIES[n->family];
    v->pre_type = f->type;
    v->ignore_merges = (n->flags & PRE_IGNORE_MERGES) != 0;
    v->clean_spaces = !(n->flags & PRE_NO_CLEAN);
    v->add_bos = (n->flags & PRE_ADD_BOS) != 0;
    v->add_sep = (n->flags & PRE_ADD_SEP) != 0;
    v->escape_whitespaces = (n->flags & PRE_ESCAPE_WS) != 0;
    v->bpe_raw_utf8 = (n->flags & PRE_RAW_UTF8) != 0;
    v->newline_tokens = (n->flags & PRE_NEWLINE_TOKEN) != 0;
    v->force_bos = (n->flags & PRE_FORCE_BOS) != 0;
    for (int i = 0; i < LLAMA_VOCAB_MAX_PRE_REGEX && f->regex[i]; i++) {
        v->pre_regex[i] = vocab_regex_compile(f->regex[i]);
        if (v->pre_regex[i] == NULL) {
            LLAMA_LOG_ERROR("llama_vocab_load: regex %d of pre-tokenizer '%s' does not compile\n", i, name);
            return false;
        }
        v->n_pre_regex = i + 1;
    }
    return true;
}

void llama_vocab_pre_free(struct llama_vocab * v) {
    for (int i = 0; i < v->n_pre_regex; i++) {
        vocab_regex_free(v->pre_regex[i]);
        v->pre_regex[i] = NULL;
    }
    v->n_pre_regex = 0;
}
