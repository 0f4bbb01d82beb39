// tiny_model.h — writes a tiny Llama GGUF with random F32 weights and a self-contained
// SentencePiece-style vocabulary (<unk> <s> </s>, the 256 byte tokens, a few words), using only
// this project's gguf writer. Used by fuzz_batch.c and tests/c/test_robustness.c, so neither
// needs Python or files outside the repository.
#ifndef TINY_MODEL_H
#define TINY_MODEL_H

#include "ggml.h"
#include "gguf.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TINY_N_LAYER   2
#define TINY_N_EMBD    64
#define TINY_N_HEAD    2     // head size 32: Q8_0 caches work
#define TINY_N_HEAD_KV 1
#define TINY_N_FF      96
#define TINY_N_CTX     256

#define TINY_SP "\xe2\x96\x81" // U+2581, SentencePiece's space
static const char * const tiny_words[] = {
    TINY_SP,
    TINY_SP "the",
    TINY_SP "a",
    TINY_SP "of",
    TINY_SP "and",
    TINY_SP "to",
    TINY_SP "in",
    TINY_SP "is",
    TINY_SP "Hello",
    TINY_SP "world",
    "e",
    "t",
    "a",
    "o",
    "n",
    "s",
    "th",
    "he",
    "in",
    "er",
    "an",
    "re",
    "on",
    "at",
};
#define TINY_N_WORDS ((int) (sizeof(tiny_words) / sizeof(tiny_words[0])))
#define TINY_N_VOCAB (3 + 256 + TINY_N_WORDS)

// Deterministic uniform numbers in [-1, 1) (xorshift), so the model is the same on every run.
static inline float tiny_rand(uint64_t * s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float) ((*s >> 40) & 0xFFFFFF) / (float) 0x800000 - 1.0f;
}

// Adds an F32 tensor [ne0, ne1] of values scale * U(-1, 1) (+ offset) to both contexts.
static inline bool tiny_add(struct gguf_context * g, struct ggml_context * c, const char * name, int64_t ne0, int64_t ne1,
                            float scale, float offset, uint64_t * seed) {
    struct ggml_tensor * t = ne1 > 1 ? ggml_new_tensor_2d(c, GGML_TYPE_F32, ne0, ne1) : ggml_new_tensor_1d(c, GGML_TYPE_F32, ne0);
    if (t == NULL) {
        return false;
    }
    ggml_set_name(t, name);
    float * d = t->data;
    for (int64_t i = 0; i < ne0 * ne1; i++) {
        d[i] = offset + scale * tiny_rand(seed);
    }
    gguf_add_tensor(g, t);
    return true;
}

// Writes the model with n_layer layers to path; false if anything failed.
static inline bool tiny_model_write_layers(const char * path, int n_layer) {
    struct gguf_context * g = gguf_init_empty();
    struct ggml_context * c =
        ggml_init((struct ggml_init_params) { .mem_size = 8u << 20, .mem_buffer = NULL, .no_alloc = false });
    if (g == NULL || c == NULL) {
        gguf_free(g);
        ggml_free(c);
        return false;
    }
    gguf_set_val_str(g, "general.architecture", "llama");
    gguf_set_val_str(g, "general.name", "tiny-robustness");
    gguf_set_val_u32(g, "general.file_type", 0);
    gguf_set_val_u32(g, "llama.context_length", TINY_N_CTX);
    gguf_set_val_u32(g, "llama.embedding_length", TINY_N_EMBD);
    gguf_set_val_u32(g, "llama.block_count", (uint32_t) n_layer);
    gguf_set_val_u32(g, "llama.feed_forward_length", TINY_N_FF);
    gguf_set_val_u32(g, "llama.attention.head_count", TINY_N_HEAD);
    gguf_set_val_u32(g, "llama.attention.head_count_kv", TINY_N_HEAD_KV);
    gguf_set_val_u32(g, "llama.rope.dimension_count", TINY_N_EMBD / TINY_N_HEAD);
    gguf_set_val_f32(g, "llama.rope.freq_base", 10000.0f);
    gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_set_val_u32(g, "llama.vocab_size", TINY_N_VOCAB);

    // vocabulary
    static char byte_names[256][8];
    const char * tokens[TINY_N_VOCAB];
    float scores[TINY_N_VOCAB];
    int32_t types[TINY_N_VOCAB];
    tokens[0] = "<unk>";
    types[0] = 2;
    scores[0] = 0.0f;
    tokens[1] = "<s>";
    types[1] = 3;
    scores[1] = 0.0f;
    tokens[2] = "</s>";
    types[2] = 3;
    scores[2] = 0.0f;
    for (int b = 0; b < 256; b++) {
        snprintf(byte_names[b], sizeof(byte_names[b]), "<0x%02X>", b);
        tokens[3 + b] = byte_names[b];
        types[3 + b] = 6;
        scores[3 + b] = 0.0f;
    }
    for (int w = 0; w < TINY_N_WORDS; w++) {
        tokens[259 + w] = tiny_words[w];
        types[259 + w] = 1;
        scores[259 + w] = -(float) w;
    }
    gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
    gguf_set_arr_str(g, "tokenizer.ggml.tokens", tokens, TINY_N_VOCAB);
    gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, TINY_N_VOCAB);
    gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, TINY_N_VOCAB);
    gguf_set_val_u32(g, "tokenizer.ggml.unknown_token_id", 0);
    gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", 1);
    gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", 2);

    // weights, scaled by 1/sqrt(fan_in) so activations stay near unit size
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    const float se = 1.0f / sqrtf((float) TINY_N_EMBD), sf = 1.0f / sqrtf((float) TINY_N_FF);
    const int64_t hd = TINY_N_EMBD / TINY_N_HEAD;
    bool ok = tiny_add(g, c, "token_embd.weight", TINY_N_EMBD, TINY_N_VOCAB, 1.0f, 0.0f, &seed) &&
        tiny_add(g, c, "output_norm.weight", TINY_N_EMBD, 1, 0.1f, 1.0f, &seed) &&
        tiny_add(g, c, "output.weight", TINY_N_EMBD, TINY_N_VOCAB, se, 0.0f, &seed);
    for (int il = 0; ok && il < n_layer; il++) {
        char n[64];
#define TINY_T(suffix, ne0, ne1, sc, off) \
    (snprintf(n, sizeof(n), "blk.%d." suffix ".weight", il), tiny_add(g, c, n, ne0, ne1, sc, off, &seed))
        ok = TINY_T("attn_norm", TINY_N_EMBD, 1, 0.1f, 1.0f) && TINY_T("attn_q", TINY_N_EMBD, hd * TINY_N_HEAD, se, 0.0f) &&
            TINY_T("attn_k", TINY_N_EMBD, hd * TINY_N_HEAD_KV, se, 0.0f) &&
            TINY_T("attn_v", TINY_N_EMBD, hd * TINY_N_HEAD_KV, se, 0.0f) &&
            TINY_T("attn_output", hd * TINY_N_HEAD, TINY_N_EMBD, se, 0.0f) && TINY_T("ffn_norm", TINY_N_EMBD, 1, 0.1f, 1.0f) &&
            TINY_T("ffn_gate", TINY_N_EMBD, TINY_N_FF, se, 0.0f) && TINY_T("ffn_up", TINY_N_EMBD, TINY_N_FF, se, 0.0f) &&
            TINY_T("ffn_down", TINY_N_FF, TINY_N_EMBD, sf, 0.0f);
#undef TINY_T
    }
    ok = ok && gguf_write_to_file(g, path, false);
    gguf_free(g);
    ggml_free(c);
    return ok;
}

// Writes the default (TINY_N_LAYER layers) model to path.
static inline bool tiny_model_write(const char * path) { return tiny_model_write_layers(path, TINY_N_LAYER); }

#endif // TINY_MODEL_H
