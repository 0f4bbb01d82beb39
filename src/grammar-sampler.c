// grammar-sampler.c — the grammar sampler (llama_sampler_init_grammar and its lazy forms).
//
// Never fails open: a grammar that does not compile makes the constructor return NULL with the
// reason logged (line and column); a state where the grammar allows no token (a dead end, or a
// token forced on it that it refused) leaves only the end-of-generation tokens, so generation
// stops, and says why in the log. End of generation is allowed only where the grammar is
// complete.
//
// Lazy grammars (llama.h): until triggered the sampler changes nothing. A trigger token starts
// the grammar with that token included; a trigger pattern is matched against the whole text
// generated so far, and the grammar is fed the text from the pattern's first capture group on
// (from the start if it has none).
#include "grammar.h"
#include "sampling-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// What clones share: immutable after construction.
struct gs_shared {
    int refs;
    struct gr_grammar * g;
    struct gr_vocab * v;
    const struct llama_vocab * vocab;
    struct gr_regex ** patterns;
    size_t n_patterns;
    llama_token * tokens;
    size_t n_tokens;
    bool lazy;
};

struct gs_ctx {
    struct gs_shared * sh;
    struct gr_matcher * m;
    bool triggered;
    bool reported;        // the dead end was logged once
    char * buf;
    size_t n_buf, cap_buf; // text awaiting a trigger pattern
};

static void gs_shared_unref(struct gs_shared * sh) {
    if (!sh || __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    gr_grammar_unref(sh->g);
    gr_vocab_unref(sh->v);
    for (size_t i = 0; i < sh->n_patterns; i++) gr_regex_free(sh->patterns[i]);
    free(sh->patterns);
    free(sh->tokens);
    free(sh);
}

static void gs_free_ctx(void * p) {
    struct gs_ctx * c = p;
    if (!c) return;
    gr_matcher_free(c->m);
    gs_shared_unref(c->sh);
    free(c->buf);
    free(c);
}

static const char * gs_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "grammar";
}

static void gs_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct gs_ctx * c = smpl->ctx;
    if (c->sh->lazy && !c->triggered) return;
    const struct gr_vocab * v = c->sh->v;
    const uint32_t nv = (uint32_t) gr_vocab_n_tokens(v);
    const uint8_t * eog = gr_vocab_eog(v);
    const uint64_t * mask = gr_matcher_mask(c->m);
    const uint8_t can_end = gr_matcher_can_end(c->m);
    size_t n_ok = 0;
    llama_token_data * d = cur_p->data;
    if (mask) {
        for (size_t i = 0; i < cur_p->size; i++) {
            const uint32_t t = (uint32_t) d[i].id;
            const bool ok = t < nv && (((mask[t >> 6] >> (t & 63)) & 1) | (can_end & eog[t]));
            n_ok += ok;
            d[i].logit = ok ? d[i].logit : -INFINITY;
        }
    } else { // out of memory (logged): nothing but the end
        for (size_t i = 0; i < cur_p->size; i++) d[i].logit = -INFINITY;
    }
    if (n_ok) return;
    if (!c->reported) {
        LLAMA_LOG_ERROR("grammar: %s; only end of generation is allowed now\n",
                        gr_matcher_dead(c->m) ? "the grammar cannot continue after the accepted text"
                                              : "no token of the vocabulary continues the grammar here");
        c->reported = true;
    }
    for (size_t i = 0; i < cur_p->size; i++) {
        const uint32_t t = (uint32_t) d[i].id;
        if (t < nv && eog[t]) d[i].logit = 0.0f;
    }
}

static bool gs_is_trigger_token(const struct gs_ctx * c, llama_token token) {
    for (size_t i = 0; i < c->sh->n_tokens; i++) {
        if (c->sh->tokens[i] == token) return true;
    }
    return false;
}

// Appends the token's text to the text awaiting a trigger; on a pattern match, feeds the
// grammar from the first capture group on.
static void gs_feed_patterns(struct gs_ctx * c, llama_token token) {
    char piece[512];
    int32_t n = llama_token_to_piece(c->sh->vocab, token, piece, sizeof piece, 0, true);
    if (n <= 0 || c->sh->n_patterns == 0) return;
    if (c->n_buf + (size_t) n > c->cap_buf) {
        size_t cap = c->cap_buf ? c->cap_buf * 2 : 256;
        while (cap < c->n_buf + (size_t) n) cap *= 2;
        char * b = GGML_REALLOC(c->buf, cap);
        if (!b) {
            LLAMA_LOG_ERROR("grammar: out of memory for the trigger text\n");
            return;
        }
        c->buf = b;
        c->cap_buf = cap;
    }
    memcpy(c->buf + c->n_buf, piece, (size_t) n);
    c->n_buf += (size_t) n;
    for (size_t i = 0; i < c->sh->n_patterns; i++) {
        size_t start = 0;
        if (gr_regex_match(c->sh->patterns[i], c->buf, c->n_buf, &start)) {
            c->triggered = true;
            if (!gr_matcher_accept_bytes(c->m, c->buf + start, c->n_buf - start)) {
                LLAMA_LOG_ERROR("grammar: the text from the trigger on (\"%.*s\") does not match the grammar; "
                                "only end of generation is allowed now\n",
                                (int) (c->n_buf - start), c->buf + start);
                gr_matcher_kill(c->m);
                c->reported = true;
            }
            c->n_buf = 0;
            return;
        }
    }
}

static void gs_accept(struct llama_sampler * smpl, llama_token token) {
    struct gs_ctx * c = smpl->ctx;
    if (c->sh->lazy && !c->triggered) {
        if (!gs_is_trigger_token(c, token)) {
            gs_feed_patterns(c, token);
            return;
        }
        c->triggered = true; // the grammar is fed from the trigger token on, included
        c->n_buf = 0;
    }
    if (llama_vocab_is_eog(c->sh->vocab, token) && gr_matcher_can_end(c->m)) return;
    if (!gr_matcher_accept_token(c->m, token)) {
        if (!gr_matcher_dead(c->m)) {
            char piece[64];
            int32_t n = llama_token_to_piece(c->sh->vocab, token, piece, sizeof piece, 0, true);
            LLAMA_LOG_ERROR(
                "grammar: token %d (\"%.*s\") is not allowed by the grammar here; only end of generation is allowed now\n", token,
                n > 0 ? (int) n : 0, piece);
            c->reported = true;
        }
        gr_matcher_kill(c->m);
    }
}

static void gs_reset(struct llama_sampler * smpl) {
    struct gs_ctx * c = smpl->ctx;
    gr_matcher_reset(c->m);
    c->triggered = false;
    c->reported = false;
    c->n_buf = 0;
}

static struct gs_ctx * gs_ctx_copy(const struct gs_ctx * src) {
    struct gs_ctx * c = GGML_CALLOC(1, sizeof(*c));
    if (!c) return NULL;
    c->m = gr_matcher_clone(src->m);
    if (src->n_buf) c->buf = GGML_MALLOC(src->n_buf);
    if (!c->m || (src->n_buf && !c->buf)) {
        gr_matcher_free(c->m);
        free(c->buf);
        free(c);
        return NULL;
    }
    memcpy(c->buf, src->buf, src->n_buf);
    c->n_buf = c->cap_buf = src->n_buf;
    c->sh = src->sh;
    __atomic_add_fetch(&c->sh->refs, 1, __ATOMIC_RELAXED);
    c->triggered = src->triggered;
    c->reported = src->reported;
    return c;
}

static const struct llama_sampler_i gs_iface;

static struct llama_sampler * gs_clone(const struct llama_sampler * smpl) {
    struct gs_ctx * c = gs_ctx_copy(smpl->ctx);
    if (!c) {
        LLAMA_LOG_ERROR("grammar: out of memory cloning the sampler\n");
        return NULL;
    }
    return smpl_new(&gs_iface, c, gs_free_ctx);
}

static void gs_free(struct llama_sampler * smpl) { gs_free_ctx(smpl->ctx); }

static void gs_copy_state(struct llama_sampler * dst, const struct llama_sampler * src) {
    struct gs_ctx * c = gs_ctx_copy(src->ctx);
    if (!c) {
        LLAMA_LOG_ERROR("grammar: out of memory copying the sampler state\n");
        return;
    }
    gs_free_ctx(dst->ctx);
    dst->ctx = c;
}

static const struct llama_sampler_i gs_iface = {
    .name = gs_name,
    .accept = gs_accept,
    .apply = gs_apply,
    .reset = gs_reset,
    .clone = gs_clone,
    .free = gs_free,
    .copy_state = gs_copy_state,
};

static struct llama_sampler * gs_init(const char * func, const struct llama_vocab * vocab_in, const char * grammar_str,
                                      const char * grammar_root, bool lazy, const char ** patterns, size_t n_patterns,
                                      const char ** words, size_t n_words, const llama_token * tokens, size_t n_tokens) {
    const struct llama_vocab * vocab = llama_vocab_resolve(vocab_in, func);
    if (!vocab) return NULL;
    char err[512];
    if (!grammar_str || !*grammar_str) {
        LLAMA_LOG_ERROR("%s: empty grammar (no rules)\n", func);
        return NULL;
    }
    struct gr_grammar * g = gr_grammar_parse(grammar_str, grammar_root, vocab, err, sizeof err);
    if (!g) {
        LLAMA_LOG_ERROR("%s: invalid grammar: %s\n", func, err);
        return NULL;
    }
    struct gs_shared * sh = GGML_CALLOC(1, sizeof(*sh));
    struct gs_ctx * c = GGML_CALLOC(1, sizeof(*c));
    if (!sh || !c) goto oom;
    sh->refs = 1;
    sh->g = g;
    g = NULL;
    sh->vocab = vocab;
    sh->lazy = lazy;
    c->sh = sh;
    const size_t n_pat = (patterns ? n_patterns : 0) + (words ? n_words : 0);
    if (n_pat) {
        sh->patterns = GGML_CALLOC(n_pat, sizeof(*sh->patterns));
        if (!sh->patterns) goto oom;
    }
    for (size_t i = 0; patterns && i < n_patterns; i++) {
        if (!patterns[i]) {
            LLAMA_LOG_ERROR("%s: trigger pattern %zu is NULL\n", func, i);
            goto fail;
        }
        sh->patterns[sh->n_patterns] = gr_regex_compile(patterns[i], err, sizeof err);
        if (!sh->patterns[sh->n_patterns]) {
            LLAMA_LOG_ERROR("%s: trigger pattern %zu (\"%s\"): %s\n", func, i, patterns[i], err);
            goto fail;
        }
        sh->n_patterns++;
    }
    for (size_t i = 0; words && i < n_words; i++) {
        // a trigger word starts the grammar wherever it first appears: [\s\S]*?(word)[\s\S]*
        if (!words[i]) {
            LLAMA_LOG_ERROR("%s: trigger word %zu is NULL\n", func, i);
            goto fail;
        }
        size_t len = strlen(words[i]);
        char * pat = GGML_MALLOC(4 * len + 32);
        if (!pat) goto oom;
        size_t k = 0;
        k += (size_t) sprintf(pat, "[\\s\\S]*?(");
        for (size_t j = 0; j < len; j++) {
            unsigned char ch = (unsigned char) words[i][j];
            if (strchr("\\^$.|?*+()[]{}/-", ch) && ch) {
                pat[k++] = '\\';
                pat[k++] = (char) ch;
            } else
                pat[k++] = (char) ch;
        }
        k += (size_t) sprintf(pat + k, ")[\\s\\S]*");
        sh->patterns[sh->n_patterns] = gr_regex_compile(pat, err, sizeof err);
        free(pat);
        if (!sh->patterns[sh->n_patterns]) {
            LLAMA_LOG_ERROR("%s: trigger word %zu: %s\n", func, i, err);
            goto fail;
        }
        sh->n_patterns++;
    }
    if (tokens && n_tokens) {
        const int32_t nv = llama_vocab_n_tokens(vocab);
        sh->tokens = GGML_MALLOC(n_tokens * sizeof(llama_token));
        if (!sh->tokens) goto oom;
        for (size_t i = 0; i < n_tokens; i++) {
            if (tokens[i] < 0 || tokens[i] >= nv) {
                LLAMA_LOG_ERROR("%s: trigger token %d is out of range (vocabulary of %d tokens)\n", func, tokens[i], nv);
                goto fail;
            }
            sh->tokens[i] = tokens[i];
        }
        sh->n_tokens = n_tokens;
    }
    sh->v = gr_vocab_get(vocab);
    if (!sh->v) goto fail;
    c->m = gr_matcher_new(sh->g, sh->v);
    if (!c->m) goto fail;
    return smpl_new(&gs_iface, c, gs_free_ctx);
oom:
    LLAMA_LOG_ERROR("%s: out of memory\n", func);
fail:
    gr_grammar_unref(g);
    if (c) {
        c->sh = NULL;
        gs_free_ctx(c);
    }
    gs_shared_unref(sh);
    return NULL;
}

struct llama_sampler * llama_sampler_init_grammar(const struct llama_vocab * vocab, const char * grammar_str,
                                                  const char * grammar_root) {
    return gs_init(__func__, vocab, grammar_str, grammar_root, false, NULL, 0, NULL, 0, NULL, 0);
}

struct llama_sampler * llama_sampler_init_grammar_lazy(const struct llama_vocab * vocab, const char * grammar_str,
                                                       const char * grammar_root, const char ** trigger_words,
                                                       size_t num_trigger_words, const llama_token * trigger_tokens,
                                                       size_t num_trigger_tokens) {
    return gs_init(__func__, vocab, grammar_str, grammar_root, true, NULL, 0, trigger_words, num_trigger_words, trigger_tokens,
                   num_trigger_tokens);
}

struct llama_sampler * llama_sampler_init_grammar_lazy_patterns(const struct llama_vocab * vocab, const char * grammar_str,
                                                                const char * grammar_root, const char ** trigger_patterns,
                                                                size_t num_trigger_patterns, const llama_token * trigger_tokens,
                                                                size_t num_trigger_tokens) {
    return gs_init(__func__, vocab, grammar_str, grammar_root, true, trigger_patterns, num_trigger_patterns, NULL, 0,
                   trigger_tokens, num_trigger_tokens);
}

bool llama_py_grammar_validate(const struct llama_vocab * vocab, const char * grammar_str, const char * grammar_root, char * err,
                               size_t err_size) {
    if (vocab) {
        vocab = llama_vocab_resolve(vocab, __func__);
        if (!vocab) {
            if (err && err_size) snprintf(err, err_size, "invalid vocabulary");
            return false;
        }
    }
    if (!grammar_str || !*grammar_str) {
        if (err && err_size) snprintf(err, err_size, "line 1, column 1: empty grammar (no rules)");
        return false;
    }
    struct gr_grammar * g = gr_grammar_parse(grammar_str, grammar_root, vocab, err, err_size);
    if (!g) return false;
    gr_grammar_unref(g);
    return true;
}
