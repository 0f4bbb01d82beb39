// vocab-rwkv.c — RWKV "world" vocabularies (tokenizer.ggml.model "rwkv"): each token text is
// its bytes written as a Python bytes literal without the b'' (\t \n \r \\ \' and \xNN escapes,
// as convert_hf_to_gguf writes rwkv_vocab_v20230424.txt), and text is tokenized as the RWKV
// tokenizer does: at each position the longest token whose bytes start there.
#include "llama-vocab.h"

#include <stdlib.h>
#include <string.h>

static int rwkv_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

size_t llama_vocab_rwkv_unescape(const char * s, size_t n, char * out) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) {
            out[m++] = s[i];
            continue;
        }
        const char c = s[++i];
        if (c == 't') {
            out[m++] = '\t';
        } else if (c == 'n') {
            out[m++] = '\n';
        } else if (c == 'r') {
            out[m++] = '\r';
        } else if (c == 'x' && i + 2 < n && rwkv_hex(s[i + 1]) >= 0 && rwkv_hex(s[i + 2]) >= 0) {
            out[m++] = (char) (rwkv_hex(s[i + 1]) << 4 | rwkv_hex(s[i + 2]));
            i += 2;
        } else {
            out[m++] = c;  // \\ \' \" and anything else: the character itself
        }
    }
    return m;
}

bool llama_vocab_rwkv_load(struct llama_vocab * v) {
    size_t total = 0, longest = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        if (v->tokens[id].type == LLAMA_TOKEN_TYPE_NORMAL) {
            total += v->tokens[id].len;
            longest = v->tokens[id].len > longest ? v->tokens[id].len : longest;
        }
    }
    char * buf = GGML_MALLOC(longest + 1);
    if (!buf || !llama_vocab_trie_init(&v->rwkv_trie, total)) {
        free(buf);
        return false;
    }
    // Only normal tokens: the control and padding texts (<s>, [PAD...]) are no bytes of the text.
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const struct llama_vocab_token * t = &v->tokens[id];
        if (t->type != LLAMA_TOKEN_TYPE_NORMAL) {
            continue;
        }
        const size_t m = llama_vocab_rwkv_unescape(v->text + t->off, t->len, buf);
        if (m == 0 || !llama_vocab_trie_insert(&v->rwkv_trie, (const uint8_t *) buf, m, id)) {
            LLAMA_LOG_ERROR("llama_vocab_load: RWKV token %d '%.*s' stands for no bytes\n", id, (int) t->len, v->text + t->off);
            free(buf);
            return false;
        }
    }
    free(buf);
    return true;
}

void llama_vocab_rwkv_tokenize(const struct llama_vocab * v, const char * text, size_t len, struct llama_vocab_tokens * out) {
    const uint8_t * s = (const uint8_t *) text;
    const struct llama_vocab_trie * t = &v->rwkv_trie;
    for (size_t pos = 0; pos < len;) {
        int32_t best = -1;
        size_t best_end = pos + 1;
        uint32_t node = 0;
        for (size_t i = pos; i < len; i++) {
            node = llama_vocab_trie_child(t, node, s[i]);
            if (node == 0) {
                break;
            }
            if (t->node_token[node] >= 0) {
                best = t->node_token[node];
                best_end = i + 1;
            }
        }
        if (best >= 0) {
            llama_vocab_tokens_push(out, best);
        } else if (v->unk >= 0) {
            llama_vocab_tokens_push(out, v->unk);
        }
        pos = best_end;
    }
}
