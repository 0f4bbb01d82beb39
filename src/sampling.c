// sampling.c — the sampler object, the chain, llama_sampler_sample, sampler timings, and the
// stateless / truncation samplers (greedy, dist, top-k, top-p, min-p, typical, temp, temp-ext,
// xtc, top-n-sigma). Stateful samplers live in sampling-extra.c.
//
// Cost model: a 49,152-token vocabulary goes through top-k first in the usual chains, so
// top-k selects with a bounded heap (one comparison per candidate in the common case) and
// never sorts the whole vocabulary; later samplers then see k candidates. Samplers that need
// an order over a large array use a stable radix sort (linear) rather than a comparison sort.
#include "sampling-impl.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// the sampler object

static bool smpl_array_ok(const llama_token_data_array * cur_p, const char * func) {
    if (!cur_p) {
        LLAMA_LOG_ERROR("%s: cur_p is NULL\n", func);
        return false;
    }
    if (!cur_p->data && cur_p->size > 0) {
        LLAMA_LOG_ERROR("%s: cur_p->data is NULL with size %zu\n", func, cur_p->size);
        return false;
    }
    if (cur_p->size > UINT32_MAX) {
        LLAMA_LOG_ERROR("%s: %zu candidates is more than this sampler supports\n", func, cur_p->size);
        return false;
    }
    return true;
}

struct llama_sampler * llama_sampler_init(const struct llama_sampler_i * iface, llama_sampler_context_t ctx) {
    if (!iface) {
        LLAMA_LOG_ERROR("%s: iface is NULL\n", __func__);
        return NULL;
    }
    if (!iface->apply) {
        LLAMA_LOG_ERROR("%s: iface->apply is required\n", __func__);
        return NULL;
    }
    struct llama_sampler * smpl = GGML_MALLOC(sizeof(*smpl));
    if (!smpl) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        return NULL;
    }
    smpl->iface = iface;
    smpl->ctx = ctx;
    return smpl;
}

struct llama_sampler * smpl_new(const struct llama_sampler_i * iface, void * ctx, void (*free_ctx)(void *)) {
    if (!ctx) {
        LLAMA_LOG_ERROR("%s: out of memory creating a sampler\n", __func__);
        return NULL;
    }
    struct llama_sampler * smpl = llama_sampler_init(iface, ctx);
    if (!smpl) {
        free_ctx(ctx);
    }
    return smpl;
}

const char * llama_sampler_name(const struct llama_sampler * smpl) {
    if (!smpl || !smpl->iface) {
        return "(null)";
    }
    if (!smpl->iface->name) {
        return "(unnamed)";
    }
    const char * name = smpl->iface->name(smpl);
    return name ? name : "(unnamed)";
}

void llama_sampler_accept(struct llama_sampler * smpl, llama_token token) {
    if (smpl && smpl->iface && smpl->iface->accept) {
        smpl->iface->accept(smpl, token);
    }
}

void llama_sampler_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    if (!smpl || !smpl->iface || !smpl->iface->apply) {
        LLAMA_LOG_ERROR("%s: sampler is NULL or has no apply function\n", __func__);
        return;
    }
    if (!smpl_array_ok(cur_p, __func__)) {
        return;
    }
    smpl->iface->apply(smpl, cur_p);
}

void llama_sampler_reset(struct llama_sampler * smpl) {
    if (smpl && smpl->iface && smpl->iface->reset) {
        smpl->iface->reset(smpl);
    }
}

struct llama_sampler * llama_sampler_clone(const struct llama_sampler * smpl) {
    if (!smpl || !smpl->iface) {
        LLAMA_LOG_ERROR("%s: sampler is NULL\n", __func__);
        return NULL;
    }
    if (smpl->iface->clone) {
        return smpl->iface->clone(smpl);
    }
    if (smpl->ctx == NULL) {
        // Stateless: a new object over the same interface is an exact copy.
        return llama_sampler_init(smpl->iface, NULL);
    }
    LLAMA_LOG_ERROR("%s: sampler '%s' cannot be cloned (its interface has no clone)\n", __func__, llama_sampler_name(smpl));
    return NULL;
}

void llama_sampler_copy(const struct llama_sampler * src, struct llama_sampler * dst) {
    if (!src || !dst || !src->iface || !dst->iface) {
        LLAMA_LOG_ERROR("%s: src or dst is NULL\n", __func__);
        return;
    }
    if (src == dst) {
        return;
    }
    if (src->iface != dst->iface) {
        LLAMA_LOG_ERROR("%s: samplers are of different types ('%s' -> '%s')\n", __func__, llama_sampler_name(src),
                        llama_sampler_name(dst));
        return;
    }
    if (!dst->iface->copy_state) {
        if (src->ctx != NULL) {
            LLAMA_LOG_ERROR("%s: sampler '%s' cannot copy its state\n", __func__, llama_sampler_name(src));
        }
        return;
    }
    dst->iface->copy_state(dst, src);
}

void llama_sampler_free(struct llama_sampler * smpl) {
    if (!smpl) {
        return;
    }
    if (smpl->iface && smpl->iface->free) {
        smpl->iface->free(smpl);
    }
    free(smpl);
}

// ---------------------------------------------------------------------------------------------
// the chain

struct smpl_chain {
    struct llama_sampler_chain_params params;
    struct llama_sampler ** samplers;
    int32_t n;
    int32_t cap;
    int64_t t_sample_ns;
    int32_t n_sample;
    // Candidate buffer reused by llama_sampler_sample so a token costs no allocation.
    llama_token_data * cand;
    size_t cand_cap;
};

static const char * smpl_chain_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "chain";
}

static void smpl_chain_accept(struct llama_sampler * smpl, llama_token token) {
    struct smpl_chain * c = smpl->ctx;
    for (int32_t i = 0; i < c->n; i++) {
        llama_sampler_accept(c->samplers[i], token);
    }
    if (!c->params.no_perf) {
        c->n_sample++;
    }
}

static void smpl_chain_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_chain * c = smpl->ctx;
    const int64_t t0 = c->params.no_perf ? 0 : smpl_time_ns();
    for (int32_t i = 0; i < c->n; i++) {
        llama_sampler_apply(c->samplers[i], cur_p);
    }
    if (!c->params.no_perf) {
        c->t_sample_ns += smpl_time_ns() - t0;
    }
}

static void smpl_chain_reset(struct llama_sampler * smpl) {
    struct smpl_chain * c = smpl->ctx;
    for (int32_t i = 0; i < c->n; i++) {
        llama_sampler_reset(c->samplers[i]);
    }
}

static void smpl_chain_free_ctx(void * p) {
    struct smpl_chain * c = p;
    if (!c) {
        return;
    }
    for (int32_t i = 0; i < c->n; i++) {
        llama_sampler_free(c->samplers[i]);
    }
    free(c->samplers);
    free(c->cand);
    free(c);
}

static void smpl_chain_free(struct llama_sampler * smpl) {
    smpl_chain_free_ctx(smpl->ctx);
    smpl->ctx = NULL;
}

static bool smpl_chain_push(struct smpl_chain * c, struct llama_sampler * s) {
    if (c->n == c->cap) {
        const int32_t cap = c->cap ? c->cap * 2 : 8;
        struct llama_sampler ** p = GGML_REALLOC(c->samplers, (size_t) cap * sizeof(*p));
        if (!p) {
            LLAMA_LOG_ERROR("llama_sampler_chain_add: out of memory\n");
            return false;
        }
        c->samplers = p;
        c->cap = cap;
    }
    c->samplers[c->n++] = s;
    return true;
}

static struct llama_sampler * smpl_chain_clone(const struct llama_sampler * smpl);

static void smpl_chain_copy_state(struct llama_sampler * dst, const struct llama_sampler * src) {
    struct smpl_chain * d = dst->ctx;
    const struct smpl_chain * s = src->ctx;
    if (d->n != s->n) {
        LLAMA_LOG_ERROR("llama_sampler_copy: chains have %d and %d samplers\n", s->n, d->n);
        return;
    }
    for (int32_t i = 0; i < s->n; i++) {
        llama_sampler_copy(s->samplers[i], d->samplers[i]);
    }
    d->t_sample_ns = s->t_sample_ns;
    d->n_sample = s->n_sample;
}

static const struct llama_sampler_i smpl_chain_i = {
    .name = smpl_chain_name,
    .accept = smpl_chain_accept,
    .apply = smpl_chain_apply,
    .reset = smpl_chain_reset,
    .clone = smpl_chain_clone,
    .free = smpl_chain_free,
    .copy_state = smpl_chain_copy_state,
};

static bool smpl_is_chain(const struct llama_sampler * smpl, const char * func) {
    if (!smpl || smpl->iface != &smpl_chain_i || !smpl->ctx) {
        LLAMA_LOG_ERROR("%s: not a sampler chain (%s)\n", func, smpl ? llama_sampler_name(smpl) : "NULL");
        return false;
    }
    return true;
}

struct llama_sampler * llama_sampler_chain_init(struct llama_sampler_chain_params params) {
    struct smpl_chain * c = GGML_CALLOC(1, sizeof(*c));
    if (c) {
        c->params = params;
    }
    return smpl_new(&smpl_chain_i, c, smpl_chain_free_ctx);
}

static struct llama_sampler * smpl_chain_clone(const struct llama_sampler * smpl) {
    const struct smpl_chain * s = smpl->ctx;
    struct llama_sampler * dst = llama_sampler_chain_init(s->params);
    if (!dst) {
        return NULL;
    }
    struct smpl_chain * d = dst->ctx;
    for (int32_t i = 0; i < s->n; i++) {
        struct llama_sampler * cl = llama_sampler_clone(s->samplers[i]);
        if (!cl || !smpl_chain_push(d, cl)) {
            llama_sampler_free(cl);
            llama_sampler_free(dst);
            return NULL;
        }
    }
    d->t_sample_ns = s->t_sample_ns;
    d->n_sample = s->n_sample;
    return dst;
}

void llama_sampler_chain_add(struct llama_sampler * chain, struct llama_sampler * smpl) {
    if (!smpl_is_chain(chain, __func__)) {
        return; // the caller keeps ownership of smpl
    }
    if (!smpl) {
        LLAMA_LOG_ERROR("%s: sampler is NULL\n", __func__);
        return;
    }
    if (smpl == chain) {
        LLAMA_LOG_ERROR("%s: cannot add a chain to itself\n", __func__);
        return;
    }
    if (!smpl_chain_push(chain->ctx, smpl)) {
        llama_sampler_free(smpl); // the chain took ownership; the caller cannot see the failure
    }
}

struct llama_sampler * llama_sampler_chain_get(const struct llama_sampler * chain, int32_t i) {
    if (!smpl_is_chain(chain, __func__)) {
        return NULL;
    }
    const struct smpl_chain * c = chain->ctx;
    if (i < 0 || i >= c->n) {
        LLAMA_LOG_ERROR("%s: index %d out of range [0, %d)\n", __func__, i, c->n);
        return NULL;
    }
    return c->samplers[i];
}

int32_t llama_sampler_chain_n(const struct llama_sampler * chain) {
    if (!smpl_is_chain(chain, __func__)) {
        return 0;
    }
    return ((const struct smpl_chain *) chain->ctx)->n;
}

struct llama_sampler * llama_sampler_chain_remove(struct llama_sampler * chain, int32_t i) {
    if (!smpl_is_chain(chain, __func__)) {
        return NULL;
    }
    struct smpl_chain * c = chain->ctx;
    if (i < 0 || i >= c->n) {
        LLAMA_LOG_ERROR("%s: index %d out of range [0, %d)\n", __func__, i, c->n);
        return NULL;
    }
    struct llama_sampler * s = c->samplers[i];
    memmove(c->samplers + i, c->samplers + i + 1, (size_t) (c->n - i - 1) * sizeof(*c->samplers));
    c->n--;
    return s;
}

// ---------------------------------------------------------------------------------------------
// sampling from a context, seeds, timings

// Greedy alone, or top-k first, straight on the logits row (below the top-k sampler).
static bool smpl_chain_sample_row(struct smpl_chain * c, const float * logits, int32_t n_vocab, llama_token * out);

llama_token llama_sampler_sample(struct llama_sampler * smpl, struct llama_context * ctx, int32_t idx) {
    if (!smpl || !smpl->iface || !smpl->iface->apply) {
        LLAMA_LOG_ERROR("%s: sampler is NULL\n", __func__);
        return LLAMA_TOKEN_NULL;
    }
    if (!ctx) {
        LLAMA_LOG_ERROR("%s: context is NULL\n", __func__);
        return LLAMA_TOKEN_NULL;
    }
    const float * logits = llama_get_logits_ith(ctx, idx);
    if (!logits) {
        LLAMA_LOG_ERROR("%s: no logits for output %d (see the message above)\n", __func__, idx);
        return LLAMA_TOKEN_NULL;
    }
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)));
    if (n_vocab <= 0) {
        LLAMA_LOG_ERROR("%s: the context's model has no vocabulary\n", __func__);
        return LLAMA_TOKEN_NULL;
    }
    // A chain keeps the candidate buffer between calls; other samplers get a fresh one.
    struct smpl_chain * chain = smpl->iface == &smpl_chain_i ? smpl->ctx : NULL;
    llama_token fast = LLAMA_TOKEN_NULL;
    if (chain && smpl_chain_sample_row(chain, logits, n_vocab, &fast)) {
        if (fast != LLAMA_TOKEN_NULL) {
            llama_sampler_accept(smpl, fast);
        }
        return fast;
    }
    llama_token_data * cand = NULL;
    if (chain && chain->cand_cap >= (size_t) n_vocab) {
        cand = chain->cand;
    } else {
        cand = GGML_MALLOC((size_t) n_vocab * sizeof(*cand));
        if (!cand) {
            LLAMA_LOG_ERROR("%s: out of memory for %d candidates\n", __func__, n_vocab);
            return LLAMA_TOKEN_NULL;
        }
        if (chain) {
            free(chain->cand);
            chain->cand = cand;
            chain->cand_cap = (size_t) n_vocab;
        }
    }
    for (int32_t i = 0; i < n_vocab; i++) {
        cand[i].id = i;
        cand[i].logit = logits[i];
        cand[i].p = 0.0f;
    }
    llama_token_data_array cur_p = { .data = cand, .size = (size_t) n_vocab, .selected = -1, .sorted = false };
    smpl->iface->apply(smpl, &cur_p);

    llama_token token = LLAMA_TOKEN_NULL;
    if (cur_p.data && cur_p.selected >= 0 && (size_t) cur_p.selected < cur_p.size) {
        token = cur_p.data[cur_p.selected].id;
    } else {
        LLAMA_LOG_ERROR("%s: no token was selected (selected = %lld of %zu): end the chain with a "
                        "sampler that picks one (greedy, dist, mirostat, ...)\n",
                        __func__, (long long) cur_p.selected, cur_p.size);
    }
    if (!chain) {
        free(cand);
    }
    if (token != LLAMA_TOKEN_NULL) {
        llama_sampler_accept(smpl, token);
    }
    return token;
}

static uint32_t smpl_own_seed(const struct llama_sampler * smpl);

uint32_t llama_sampler_get_seed(const struct llama_sampler * smpl) {
    if (!smpl || !smpl->iface || !smpl->ctx) {
        return LLAMA_DEFAULT_SEED;
    }
    if (smpl->iface == &smpl_chain_i) {
        const struct smpl_chain * c = smpl->ctx;
        for (int32_t i = c->n - 1; i >= 0; i--) {
            const uint32_t s = llama_sampler_get_seed(c->samplers[i]);
            if (s != LLAMA_DEFAULT_SEED) {
                return s;
            }
        }
        return LLAMA_DEFAULT_SEED;
    }
    const uint32_t s = smpl_own_seed(smpl);
    return s != LLAMA_DEFAULT_SEED ? s : smpl_extra_get_seed(smpl);
}

struct llama_perf_sampler_data llama_perf_sampler(const struct llama_sampler * chain) {
    struct llama_perf_sampler_data d = { 0.0, 0 };
    if (!smpl_is_chain(chain, __func__)) {
        return d;
    }
    const struct smpl_chain * c = chain->ctx;
    d.t_sample_ms = (double) c->t_sample_ns / 1e6;
    d.n_sample = c->n_sample;
    return d;
}

void llama_perf_sampler_print(const struct llama_sampler * chain) {
    if (!smpl_is_chain(chain, __func__)) {
        return;
    }
    const struct llama_perf_sampler_data d = llama_perf_sampler(chain);
    LLAMA_LOG_INFO("%s:    sampling time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per second)\n", __func__,
                   d.t_sample_ms, d.n_sample, d.n_sample > 0 ? d.t_sample_ms / d.n_sample : 0.0,
                   d.t_sample_ms > 0.0 ? 1e3 * d.n_sample / d.t_sample_ms : 0.0);
}

void llama_perf_sampler_reset(struct llama_sampler * chain) {
    if (!smpl_is_chain(chain, __func__)) {
        return;
    }
    struct smpl_chain * c = chain->ctx;
    c->t_sample_ns = 0;
    c->n_sample = 0;
}

// ---------------------------------------------------------------------------------------------
// greedy

static const char * smpl_greedy_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "greedy";
}

static void smpl_greedy_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    (void) smpl;
    cur_p->selected = smpl_argmax(cur_p);
}

static const struct llama_sampler_i smpl_greedy_i = {
    .name = smpl_greedy_name,
    .apply = smpl_greedy_apply,
};

struct llama_sampler * llama_sampler_init_greedy(void) { return llama_sampler_init(&smpl_greedy_i, NULL); }

// ---------------------------------------------------------------------------------------------
// dist: draws from softmax(logits) in array order with the sampler's PCG32 stream

struct smpl_dist {
    uint32_t seed;     // as given (may be LLAMA_DEFAULT_SEED)
    uint32_t seed_cur; // in use
    struct smpl_rng rng;
};

static const char * smpl_dist_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "dist";
}

static void smpl_dist_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_dist * c = smpl->ctx;
    if (cur_p->size == 0) {
        cur_p->selected = -1;
        return;
    }
    smpl_softmax(cur_p);
    cur_p->selected = smpl_sample_p(cur_p, &c->rng);
}

// A fixed seed restarts the same stream; LLAMA_DEFAULT_SEED draws a new random seed.
static void smpl_dist_reset(struct llama_sampler * smpl) {
    struct smpl_dist * c = smpl->ctx;
    c->seed_cur = smpl_seed_resolve(c->seed);
    smpl_rng_seed(&c->rng, c->seed_cur);
}

SMPL_CLONE_COPY_PLAIN(smpl_dist, struct smpl_dist, free)

static void smpl_dist_free(struct llama_sampler * smpl) { free(smpl->ctx); }

static const struct llama_sampler_i smpl_dist_i = {
    .name = smpl_dist_name,
    .apply = smpl_dist_apply,
    .reset = smpl_dist_reset,
    .clone = smpl_dist_clone,
    .free = smpl_dist_free,
    .copy_state = smpl_dist_copy_state,
};

struct llama_sampler * llama_sampler_init_dist(uint32_t seed) {
    struct smpl_dist * c = GGML_CALLOC(1, sizeof(*c));
    if (c) {
        c->seed = seed;
        c->seed_cur = smpl_seed_resolve(seed);
        smpl_rng_seed(&c->rng, c->seed_cur);
    }
    return smpl_new(&smpl_dist_i, c, free);
}

// ---------------------------------------------------------------------------------------------
// samplers with parameters and a scratch buffer (top-k, top-p, min-p, typical, xtc)

struct smpl_param {
    float p;           // top-p / min-p / typical: p; top-k: k; xtc: probability
    float t;           // xtc: threshold
    size_t min_keep;
    uint32_t seed, seed_cur;
    struct smpl_rng rng;
    struct smpl_buf scratch; // not copied by clone/copy
};

static void smpl_param_free_ctx(void * p) {
    struct smpl_param * c = p;
    if (c) {
        smpl_buf_free(&c->scratch);
        free(c);
    }
}

static void smpl_param_free(struct llama_sampler * smpl) { smpl_param_free_ctx(smpl->ctx); }

SMPL_CLONE_COPY_SCRATCH(smpl_param, struct smpl_param, smpl_param_free_ctx)

static struct llama_sampler * smpl_param_new(const struct llama_sampler_i * iface, float p, float t, size_t min_keep,
                                             uint32_t seed) {
    struct smpl_param * c = GGML_CALLOC(1, sizeof(*c));
    if (c) {
        c->p = p;
        c->t = t;
        c->min_keep = min_keep;
        c->seed = seed;
        c->seed_cur = smpl_seed_resolve(seed);
        smpl_rng_seed(&c->rng, c->seed_cur);
    }
    return smpl_new(iface, c, smpl_param_free_ctx);
}

// ---- top-k: keeps the k highest logits, sorted; k <= 0 or k >= size: no change ----

static const char * smpl_top_k_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "top-k";
}

static void smpl_top_k_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_param * c = smpl->ctx;
    const int32_t k = (int32_t) c->min_keep; // k stored in min_keep (as size_t of a positive int)
    if (k <= 0) {
        return;
    }
    smpl_top_k_impl(cur_p, (size_t) k, &c->scratch);
}

static const struct llama_sampler_i smpl_top_k_i = {
    .name = smpl_top_k_name,
    .apply = smpl_top_k_apply,
    .clone = smpl_param_clone,
    .free = smpl_param_free,
    .copy_state = smpl_param_copy_state,
};

struct llama_sampler * llama_sampler_init_top_k(int32_t k) {
    return smpl_param_new(&smpl_top_k_i, 0.0f, 0.0f, k > 0 ? (size_t) k : 0, LLAMA_DEFAULT_SEED);
}

// ---- the chain on a bare logits row ----

// The chains most callers build start from the whole row with greedy alone or with top-k:
// both read only the logits, so they run on the row itself instead of on a candidate array
// built for the whole vocabulary (Gemma 3's 262144 entries: 0.4 ms a token), and hand the
// rest of the chain the k candidates top-k would have left, in the same order. False: the
// chain takes the general path (nothing done).
static bool smpl_chain_sample_row(struct smpl_chain * c, const float * logits, int32_t n_vocab, llama_token * out) {
    if (c->n == 0) {
        return false;
    }
    const struct llama_sampler * first = c->samplers[0];
    const bool greedy = first->iface == &smpl_greedy_i && c->n == 1;
    size_t k = 0;
    if (first->iface == &smpl_top_k_i && first->ctx) {
        const int32_t kk = (int32_t) ((const struct smpl_param *) first->ctx)->min_keep;
        k = kk > 0 ? (size_t) kk : 0;
    }
    const bool top_k = k > 0 && k < (size_t) n_vocab && smpl_use_heap(k, (size_t) n_vocab);
    if (!greedy && !top_k) {
        return false;
    }
    const int64_t t0 = c->params.no_perf ? 0 : smpl_time_ns();
    llama_token token = LLAMA_TOKEN_NULL;
    if (greedy) {
        token = (llama_token) smpl_argmax_row(logits, (size_t) n_vocab);
    } else {
        if (c->cand_cap < k) {
            llama_token_data * cand = GGML_MALLOC(k * sizeof(*cand));
            if (!cand) {
                return false; // the general path logs it
            }
            free(c->cand);
            c->cand = cand;
            c->cand_cap = k;
        }
        if (!smpl_top_k_row(logits, (size_t) n_vocab, k, c->cand, &((struct smpl_param *) first->ctx)->scratch)) {
            return false;
        }
        llama_token_data_array cur_p = { .data = c->cand, .size = k, .selected = -1, .sorted = true };
        for (int32_t i = 1; i < c->n; i++) {
            llama_sampler_apply(c->samplers[i], &cur_p);
        }
        if (cur_p.data && cur_p.selected >= 0 && (size_t) cur_p.selected < cur_p.size) {
            token = cur_p.data[cur_p.selected].id;
        } else {
            LLAMA_LOG_ERROR("llama_sampler_sample: no token was selected (selected = %lld of %zu): end the chain "
                            "with a sampler that picks one (greedy, dist, mirostat, ...)\n",
                            (long long) cur_p.selected, cur_p.size);
        }
    }
    if (!c->params.no_perf) {
        c->t_sample_ns += smpl_time_ns() - t0;
    }
    *out = token;
    return true;
}

// ---- top-p: the smallest prefix (by descending logit) whose probability reaches p ----
// p >= 1 or NaN: no change. p <= 0: keeps max(1, min_keep). min_keep >= size: keeps all.
// Fills p (softmax over the candidates before truncation) and leaves the kept prefix sorted.

static const char * smpl_top_p_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "top-p";
}

// First m >= max(1, min_keep) with sum(p[0..m)) >= p over the sorted prefix [0, n_sorted); 0 if none.
static size_t smpl_top_p_cut(const llama_token_data_array * cur_p, size_t n_sorted, float p, size_t min_keep) {
    double cum = 0.0;
    for (size_t i = 0; i < n_sorted; i++) {
        cum += cur_p->data[i].p;
        if (cum >= p && i + 1 >= min_keep) {
            return i + 1;
        }
    }
    return 0;
}

// Unsorted input: bucket the candidates by logit (256 buckets between the lowest finite and
// the highest logit), find the bucket where the running mass reaches p, and sort only the
// candidates above and in that bucket. Returns the cut m with data[0..m) the sorted top m, or
// 0 when the buckets cannot decide (degenerate logits, rounding, min_keep): then the caller
// sorts everything. Leaves the array untouched when it returns 0.
#define SMPL_TOP_P_BUCKETS 256

static size_t smpl_top_p_bucketed(llama_token_data_array * cur_p, float p, size_t min_keep, struct smpl_buf * scratch) {
    const size_t n = cur_p->size;
    llama_token_data * d = cur_p->data;
    float max = -INFINITY, min = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const float k = smpl_key(d[i].logit);
        if (isfinite(k)) {
            if (k > max) max = k;
            if (k < min) min = k;
        }
    }
    if (!(max > min) || !isfinite(max - min)) {
        return 0;
    }
    const float scale = (float) (SMPL_TOP_P_BUCKETS - 1) / (max - min);
    double mass[SMPL_TOP_P_BUCKETS] = { 0 };
    size_t count[SMPL_TOP_P_BUCKETS] = { 0 };
    uint8_t * bucket =
        smpl_buf_reserve(scratch, n + n * (sizeof(llama_token_data) + 2 * sizeof(smpl_kv) + sizeof(llama_token_data)));
    if (!bucket) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const float k = smpl_key(d[i].logit);
        // +inf (never here: softmax gave it all the mass and max would be inf) / -inf / NaN -> last
        int b = k >= min ? (int) ((max - k) * scale) : SMPL_TOP_P_BUCKETS - 1;
        b = b < 0 ? 0 : (b >= SMPL_TOP_P_BUCKETS ? SMPL_TOP_P_BUCKETS - 1 : b);
        bucket[i] = (uint8_t) b;
        mass[b] += d[i].p;
        count[b]++;
    }
    double cum = 0.0;
    size_t c = 0;
    int j = 0;
    for (; j < SMPL_TOP_P_BUCKETS; j++) {
        cum += mass[j];
        c += count[j];
        // A little slack: the sorted prefix sums in another order than the buckets.
        if (cum >= (double) p + 1e-6 && c >= min_keep) {
            break;
        }
    }
    if (j >= SMPL_TOP_P_BUCKETS - 1) {
        return 0; // nearly everything is needed: a full sort is as cheap
    }
    llama_token_data * sel = (llama_token_data *) (bucket + n);
    smpl_kv * kv = (smpl_kv *) (sel + c);
    llama_token_data * out = (llama_token_data *) (kv + 2 * c);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (bucket[i] <= j) {
            sel[m] = d[i];
            kv[m].key = smpl_desc_key(d[i].logit);
            kv[m].pos = (uint32_t) m;
            m++;
        }
    }
    const smpl_kv * sorted = smpl_radix_sort(kv, kv + c, c);
    for (size_t i = 0; i < c; i++) {
        out[i] = sel[sorted[i].pos];
    }
    llama_token_data_array pre = { out, c, -1, true };
    const size_t cut = smpl_top_p_cut(&pre, c, p, min_keep);
    if (cut == 0) {
        return 0;
    }
    memcpy(d, out, cut * sizeof(llama_token_data));
    return cut;
}

static void smpl_top_p_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_param * c = smpl->ctx;
    const size_t n = cur_p->size;
    if (n == 0 || !(c->p < 1.0f)) {
        return;
    }
    smpl_softmax(cur_p);
    if (!cur_p->sorted && c->min_keep < n && n > 1024) {
        const size_t m = smpl_top_p_bucketed(cur_p, c->p, c->min_keep, &c->scratch);
        if (m > 0) {
            cur_p->size = m;
            cur_p->sorted = true;
            return;
        }
    }
    if (!smpl_sort(cur_p, &c->scratch)) {
        return;
    }
    const size_t m = smpl_top_p_cut(cur_p, n, c->p, c->min_keep);
    if (m > 0) {
        cur_p->size = m; // else the sum never reached p (rounding) or min_keep >= size: keep all
    }
}

static const struct llama_sampler_i smpl_top_p_i = {
    .name = smpl_top_p_name,
    .apply = smpl_top_p_apply,
    .clone = smpl_param_clone,
    .free = smpl_param_free,
    .copy_state = smpl_param_copy_state,
};

struct llama_sampler * llama_sampler_init_top_p(float p, size_t min_keep) {
    return smpl_param_new(&smpl_top_p_i, p, 0.0f, min_keep, LLAMA_DEFAULT_SEED);
}

// ---- min-p: keeps logit >= max_logit + log(p), i.e. prob >= p * max_prob ----
// p <= 0 or NaN: no change. Too few kept (p > 1, or fewer than min_keep): keeps the
// max(1, min_keep) highest instead, sorted. Otherwise the kept candidates keep their order.

static const char * smpl_min_p_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "min-p";
}

static void smpl_min_p_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_param * c = smpl->ctx;
    const size_t n = cur_p->size;
    if (n == 0 || !(c->p > 0.0f)) {
        return;
    }
    const float max = smpl_max_logit(cur_p);
    if (max == -INFINITY) {
        return; // all equally (im)probable: every candidate has p == p_max
    }
    const float thr = max + logf(c->p);
    const size_t want = c->min_keep > 1 ? c->min_keep : 1;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        kept += cur_p->data[i].logit >= thr; // NaN: false, as for -inf
    }
    if (kept >= want) {
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
            if (cur_p->data[i].logit >= thr) {
                cur_p->data[j++] = cur_p->data[i];
            }
        }
        cur_p->size = j;
    } else {
        smpl_top_k_impl(cur_p, want, &c->scratch);
    }
}

static const struct llama_sampler_i smpl_min_p_i = {
    .name = smpl_min_p_name,
    .apply = smpl_min_p_apply,
    .clone = smpl_param_clone,
    .free = smpl_param_free,
    .copy_state = smpl_param_copy_state,
};

struct llama_sampler * llama_sampler_init_min_p(float p, size_t min_keep) {
    return smpl_param_new(&smpl_min_p_i, p, 0.0f, min_keep, LLAMA_DEFAULT_SEED);
}

// ---- typical (Meister et al. 2022): orders by |-log p - H| ascending, keeps the smallest
// prefix of that order whose probability reaches p (at least max(1, min_keep)).
// p >= 1 or NaN: no change. Result is in typicality order (sorted = false), p filled.

static const char * smpl_typical_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "typical";
}

static void smpl_typical_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_param * c = smpl->ctx;
    const size_t n = cur_p->size;
    if (n == 0 || !(c->p < 1.0f)) {
        return;
    }
    smpl_softmax(cur_p);
    double h = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float p = cur_p->data[i].p;
        if (p > 0.0f) {
            h -= (double) p * log((double) p);
        }
    }
    smpl_kv * kv = smpl_buf_reserve(&c->scratch, 2 * n * sizeof(smpl_kv) + n * sizeof(llama_token_data));
    if (!kv) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const float p = cur_p->data[i].p;
        const float score = p > 0.0f ? (float) fabs(-log((double) p) - h) : INFINITY;
        kv[i].key = smpl_float_asc(score);
        kv[i].pos = (uint32_t) i;
    }
    smpl_sort_by_keys(cur_p, kv);
    const size_t m = smpl_top_p_cut(cur_p, n, c->p, c->min_keep);
    if (m > 0) {
        cur_p->size = m;
    }
    cur_p->sorted = false;
}

static const struct llama_sampler_i smpl_typical_i = {
    .name = smpl_typical_name,
    .apply = smpl_typical_apply,
    .clone = smpl_param_clone,
    .free = smpl_param_free,
    .copy_state = smpl_param_copy_state,
};

struct llama_sampler * llama_sampler_init_typical(float p, size_t min_keep) {
    return smpl_param_new(&smpl_typical_i, p, 0.0f, min_keep, LLAMA_DEFAULT_SEED);
}

// ---- xtc (exclude top choices): with probability p, removes every candidate whose
// probability is >= t except the least probable of them (on ties, the last in the array).
// Does nothing when fewer than two reach t, when fewer than min_keep would remain, when
// p <= 0, t > 0.5 or size < 2. The random draw is made only when those static conditions
// pass. One pass, no sort: the kept candidates keep their order (and sorted stays valid).

static const char * smpl_xtc_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "xtc";
}

static void smpl_xtc_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_param * c = smpl->ctx;
    const size_t n = cur_p->size;
    if (!(c->p > 0.0f) || !(c->t <= 0.5f) || n < 2) {
        return;
    }
    if (smpl_rng_uniform(&c->rng) >= (double) c->p) {
        return;
    }
    smpl_softmax(cur_p);
    llama_token_data * d = cur_p->data;
    size_t n_above = 0;
    size_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i].p >= c->t) {
            if (n_above == 0 || smpl_key(d[i].logit) <= smpl_key(d[last].logit)) {
                last = i;
            }
            n_above++;
        }
    }
    if (n_above < 2 || n - (n_above - 1) < c->min_keep) {
        return;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i].p < c->t || i == last) {
            d[j++] = d[i];
        }
    }
    cur_p->size = j;
}

static void smpl_param_reset(struct llama_sampler * smpl) {
    struct smpl_param * c = smpl->ctx;
    c->seed_cur = smpl_seed_resolve(c->seed);
    smpl_rng_seed(&c->rng, c->seed_cur);
}

static const struct llama_sampler_i smpl_xtc_i = {
    .name = smpl_xtc_name,
    .apply = smpl_xtc_apply,
    .reset = smpl_param_reset,
    .clone = smpl_param_clone,
    .free = smpl_param_free,
    .copy_state = smpl_param_copy_state,
};

struct llama_sampler * llama_sampler_init_xtc(float p, float t, size_t min_keep, uint32_t seed) {
    return smpl_param_new(&smpl_xtc_i, p, t, min_keep, seed);
}

static uint32_t smpl_own_seed(const struct llama_sampler * smpl) {
    if (smpl->iface == &smpl_dist_i) {
        return ((const struct smpl_dist *) smpl->ctx)->seed_cur;
    }
    if (smpl->iface == &smpl_xtc_i) {
        return ((const struct smpl_param *) smpl->ctx)->seed_cur;
    }
    return LLAMA_DEFAULT_SEED;
}

// ---------------------------------------------------------------------------------------------
// temperature samplers and top-n-sigma (no scratch)

struct smpl_temp {
    float t, delta, exponent;
};

// t > 0: logits /= t. t <= 0: the first highest logit stays, all others become -inf (so a
// following dist is deterministic, like greedy). NaN t: no change.
static void smpl_temp_impl(llama_token_data_array * cur_p, float t) {
    if (isnan(t) || cur_p->size == 0) {
        return;
    }
    if (t <= 0.0f) {
        const int64_t imax = smpl_argmax(cur_p);
        for (size_t i = 0; i < cur_p->size; i++) {
            if ((int64_t) i != imax) {
                cur_p->data[i].logit = -INFINITY;
            }
        }
        return;
    }
    const float inv = 1.0f / t;
    if (isinf(inv)) {
        for (size_t i = 0; i < cur_p->size; i++) {
            cur_p->data[i].logit /= t;
        }
        return;
    }
    for (size_t i = 0; i < cur_p->size; i++) {
        cur_p->data[i].logit *= inv;
    }
}

static const char * smpl_temp_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "temp";
}

static void smpl_temp_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    smpl_temp_impl(cur_p, ((const struct smpl_temp *) smpl->ctx)->t);
}

SMPL_CLONE_COPY_PLAIN(smpl_temp, struct smpl_temp, free)

static void smpl_temp_free(struct llama_sampler * smpl) { free(smpl->ctx); }

static const struct llama_sampler_i smpl_temp_i = {
    .name = smpl_temp_name,
    .apply = smpl_temp_apply,
    .clone = smpl_temp_clone,
    .free = smpl_temp_free,
    .copy_state = smpl_temp_copy_state,
};

static struct llama_sampler * smpl_temp_new(const struct llama_sampler_i * iface, float t, float delta, float exponent) {
    struct smpl_temp * c = GGML_MALLOC(sizeof(*c));
    if (c) {
        c->t = t;
        c->delta = delta;
        c->exponent = exponent;
    }
    return smpl_new(iface, c, free);
}

struct llama_sampler * llama_sampler_init_temp(float t) { return smpl_temp_new(&smpl_temp_i, t, 0.0f, 1.0f); }

// ---- temp-ext (DynaTemp, Zhu et al. 2023): delta > 0 picks
//   T = max(0, t - delta) + 2 * delta * (H / log(size))^exponent   (H: entropy of softmax)
// and applies it like temp (T <= 0 keeps only the max); then fills p with the new softmax.
// delta <= 0 (or NaN): plain temp(t). size <= 1: no change.

static const char * smpl_temp_ext_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "temp-ext";
}

static void smpl_temp_ext_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    const struct smpl_temp * c = smpl->ctx;
    if (!(c->delta > 0.0f)) {
        smpl_temp_impl(cur_p, c->t);
        return;
    }
    const size_t n = cur_p->size;
    if (n <= 1) {
        return;
    }
    const float min_t = c->t - c->delta > 0.0f ? c->t - c->delta : 0.0f;
    const float max_t = c->t + c->delta;
    smpl_softmax(cur_p);
    double h = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float p = cur_p->data[i].p;
        if (p > 0.0f) {
            h -= (double) p * log((double) p);
        }
    }
    const double h_max = log((double) n);
    const double norm = h / h_max;
    const float dyn_t = (float) (min_t + (max_t - min_t) * pow(norm, (double) c->exponent));
    smpl_temp_impl(cur_p, dyn_t);
    smpl_softmax(cur_p);
}

static const struct llama_sampler_i smpl_temp_ext_i = {
    .name = smpl_temp_ext_name,
    .apply = smpl_temp_ext_apply,
    .clone = smpl_temp_clone,
    .free = smpl_temp_free,
    .copy_state = smpl_temp_copy_state,
};

struct llama_sampler * llama_sampler_init_temp_ext(float t, float delta, float exponent) {
    return smpl_temp_new(&smpl_temp_ext_i, t, delta, exponent);
}

// ---- top-n-sigma (Tang et al. 2024): logits below max - n * sigma become -inf, where sigma
// is the population standard deviation of the finite logits. n <= 0 or NaN, or size <= 1: no
// change. No finite logit: no change.

static const char * smpl_top_n_sigma_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "top-n-sigma";
}

static void smpl_top_n_sigma_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    const float nsig = ((const struct smpl_temp *) smpl->ctx)->t;
    const size_t n = cur_p->size;
    if (!(nsig > 0.0f) || n <= 1) {
        return;
    }
    float max = -INFINITY;
    double sum = 0.0;
    size_t n_finite = 0;
    for (size_t i = 0; i < n; i++) {
        const float l = smpl_key(cur_p->data[i].logit);
        if (l > max) {
            max = l;
        }
        if (isfinite(l)) {
            sum += l;
            n_finite++;
        }
    }
    if (n_finite == 0) {
        return;
    }
    const double mean = sum / (double) n_finite;
    double var = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float l = cur_p->data[i].logit;
        if (isfinite(l)) {
            var += ((double) l - mean) * ((double) l - mean);
        }
    }
    const float sigma = (float) sqrt(var / (double) n_finite);
    const float thr = max - nsig * sigma;
    for (size_t i = 0; i < n; i++) {
        if (!(smpl_key(cur_p->data[i].logit) >= thr)) {
            cur_p->data[i].logit = -INFINITY;
        }
    }
}

static const struct llama_sampler_i smpl_top_n_sigma_i = {
    .name = smpl_top_n_sigma_name,
    .apply = smpl_top_n_sigma_apply,
    .clone = smpl_temp_clone,
    .free = smpl_temp_free,
    .copy_state = smpl_temp_copy_state,
};

struct llama_sampler * llama_sampler_init_top_n_sigma(float n) { return smpl_temp_new(&smpl_top_n_sigma_i, n, 0.0f, 0.0f); }
