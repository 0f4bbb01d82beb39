// vocab-trie.c — a byte trie of token texts for the tokenizers that walk the input byte by byte
// (unigram's Viterbi, RWKV's greedy longest match). Edges live in one open-addressing hash
// table keyed by (parent node, byte), so a node costs 4 bytes and a lookup one probe or two,
// whatever the fan-out (the root of a 250k vocabulary has thousands of children).
#include "llama-vocab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t trie_hash(uint32_t key) {
    const uint64_t x = key * 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

bool llama_vocab_trie_init(struct llama_vocab_trie * t, size_t max_bytes) {
    memset(t, 0, sizeof(*t));
    if (max_bytes + 1 >= (1u << 24)) {
        LLAMA_LOG_ERROR("llama_vocab_load: token texts too long for the byte trie (%zu bytes)\n", max_bytes);
        return false;
    }
    uint64_t size = 16;
    while (size < 2 * (max_bytes + 1)) {
        size *= 2;
    }
    t->edges = GGML_CALLOC(size, sizeof(uint64_t));
    t->node_token = GGML_MALLOC((max_bytes + 1) * sizeof(int32_t));
    if (!t->edges || !t->node_token) {
        llama_vocab_trie_free(t);
        return false;
    }
    t->edges_mask = size - 1;
    t->cap_nodes = (uint32_t) max_bytes + 1;
    t->node_token[0] = -1;
    t->n_nodes = 1;
    return true;
}

void llama_vocab_trie_free(struct llama_vocab_trie * t) {
    free(t->edges);
    free(t->node_token);
    memset(t, 0, sizeof(*t));
}

uint32_t llama_vocab_trie_child(const struct llama_vocab_trie * t, uint32_t node, uint8_t b) {
    const uint32_t key = (node << 8 | b) + 1;
    for (uint64_t i = trie_hash(key) & t->edges_mask;; i = (i + 1) & t->edges_mask) {
        const uint64_t e = t->edges[i];
        if (e == 0) {
            return 0;
        }
        if ((uint32_t) (e >> 32) == key) {
            return (uint32_t) e;
        }
    }
}

bool llama_vocab_trie_insert(struct llama_vocab_trie * t, const uint8_t * s, size_t n, int32_t id) {
    uint32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = llama_vocab_trie_child(t, node, s[i]);
        if (c == 0) {
            if (t->n_nodes == t->cap_nodes) {
                return false;  // more bytes than init was told
            }
            c = t->n_nodes++;
            t->node_token[c] = -1;
            const uint32_t key = (node << 8 | s[i]) + 1;
            uint64_t h = trie_hash(key) & t->edges_mask;
            while (t->edges[h] != 0) {
                h = (h + 1) & t->edges_mask;
            }
            t->edges[h] = (uint64_t) key << 32 | c;
        }
        node = c;
    }
    if (node != 0) {
        t->node_token[node] = id;  // a later duplicate text wins, as in the text index
    }
    return true;
}
