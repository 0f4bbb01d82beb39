// sampling-extra.c — samplers that carry state between tokens: mirostat v1/v2, repetition
// penalties, DRY, logit bias, adaptive-p; and the infill sampler, which this engine does not
// support (NULL with a logged reason). The grammar samplers are in grammar-sampler.c.
#include "sampling-impl.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// token history: the last `limit` accepted tokens, oldest first once unrolled. Grows on demand
// so a huge limit costs memory only for tokens actually seen.

struct smpl_hist {
    llama_token * buf;
    size_t cap;   // allocated slots
    size_t limit; // most tokens kept
    size_t head;  // index of the oldest token once full
    size_t n;     // tokens held
};

// Appends a token; returns the evicted one, or -1 if none was evicted; -2 on memory exhaustion
// (token not stored).
static int64_t smpl_hist_push(struct smpl_hist * h, llama_token t) {
    if (h->limit == 0) {
        return -2;
    }
    if (h->n < h->limit) {
        if (h->n == h->cap) {
            size_t cap = h->cap ? h->cap * 2 : 64;
            if (cap > h->limit) {
                cap = h->limit;
            }
            llama_token * p = GGML_REALLOC(h->buf, cap * sizeof(*p));
            if (!p) {
                LLAMA_LOG_ERROR("%s: out of memory for the token history\n", __func__);
                return -2;
            }
            h->buf = p;
            h->cap = cap;
        }
        h->buf[h->n++] = t; // head stays 0 until full
        return -1;
    }
    const llama_token old = h->buf[h->head];
    h->buf[h->head] = t;
    h->head = (h->head + 1) % h->n;
    return old;
}

// Token i of the history, 0 = oldest.
static inline llama_token smpl_hist_at(const struct smpl_hist * h, size_t i) { return h->buf[(h->head + i) % h->n]; }

static void smpl_hist_clear(struct smpl_hist * h) {
    h->head = 0;
    h->n = 0;
}

static void smpl_hist_free(struct smpl_hist * h) {
    free(h->buf);
    h->buf = NULL;
    h->cap = h->n = h->head = 0;
}

static bool smpl_hist_copy(struct smpl_hist * dst, const struct smpl_hist * src) {
    llama_token * p = NULL;
    if (src->n > 0) {
        p = GGML_MALLOC(src->n * sizeof(*p));
        if (!p) {
            LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
            return false;
        }
        for (size_t i = 0; i < src->n; i++) {
            p[i] = smpl_hist_at(src, i);
        }
    }
    free(dst->buf);
    dst->buf = p;
    dst->cap = src->n;
    dst->n = src->n;
    dst->head = 0;
    dst->limit = src->limit;
    return true;
}

// ---------------------------------------------------------------------------------------------
// mirostat v1 (Basu et al. 2021, Algorithm 1 with tokens for words)
//   s_hat = sum_i t_i b_i / sum_i t_i^2 over the m most probable tokens, t_i = log((i+2)/(i+1)),
//           b_i = log(p_i / p_{i+1});
//   k = ((s_hat - 1) * 2^mu / (1 - N^-(s_hat - 1)))^(1 / s_hat), clamped to [1, size];
//   keeps the k best (sorted descending), samples, mu -= eta * (-log2 p(selected) - tau).
//   mu starts at 2 tau.
// The estimate uses the m best tokens up to the first with probability 0; fewer than two such
// tokens, or a NaN k, mean k = size. N = n_vocab (size when n_vocab <= 0).
// mirostat v2: keeps the tokens with -log2 p <= mu (at least the best; sorted descending),
// renormalises, samples, and updates mu the same way.

struct smpl_mirostat {
    int32_t n_vocab;
    uint32_t seed, seed_cur;
    float tau, eta;
    int32_t m;
    float mu;
    struct smpl_rng rng;
    struct smpl_buf scratch; // not copied
};

static void smpl_mirostat_free_ctx(void * p) {
    struct smpl_mirostat * c = p;
    if (c) {
        smpl_buf_free(&c->scratch);
        free(c);
    }
}

static void smpl_mirostat_free(struct llama_sampler * smpl) { smpl_mirostat_free_ctx(smpl->ctx); }

static void smpl_mirostat_reset(struct llama_sampler * smpl) {
    struct smpl_mirostat * c = smpl->ctx;
    c->mu = 2.0f * c->tau;
    c->seed_cur = smpl_seed_resolve(c->seed);
    smpl_rng_seed(&c->rng, c->seed_cur);
}

SMPL_CLONE_COPY_SCRATCH(smpl_mirostat, struct smpl_mirostat, smpl_mirostat_free_ctx)

static void smpl_mirostat_update(struct smpl_mirostat * c, const llama_token_data_array * cur_p) {
    if (cur_p->selected < 0) {
        return;
    }
    const float p = cur_p->data[cur_p->selected].p;
    const float surprise = p > 0.0f ? -log2f(p) : 0.0f;
    const float mu = c->mu - c->eta * (surprise - c->tau);
    if (isfinite(mu)) {
        c->mu = mu; // a NaN tau/eta must not poison the state forever
    }
}

static const char * smpl_mirostat_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "mirostat";
}

static void smpl_mirostat_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_mirostat * c = smpl->ctx;
    const size_t n = cur_p->size;
    if (n == 0) {
        cur_p->selected = -1;
        return;
    }
    smpl_softmax(cur_p);
    const size_t m = c->m > 0 ? ((size_t) c->m < n ? (size_t) c->m : n) : 0;
    if (m >= 2 && !smpl_sort_top(cur_p, m, &c->scratch)) {
        return;
    }
    double sum_tb = 0.0, sum_tt = 0.0;
    size_t m_used = 0; // the estimate stops at the first zero probability
    for (size_t i = 0; i + 1 < m; i++) {
        if (!(cur_p->data[i + 1].p > 0.0f)) {
            break;
        }
        const double t = log((double) (i + 2) / (double) (i + 1));
        const double b = log((double) cur_p->data[i].p / (double) cur_p->data[i + 1].p);
        sum_tb += t * b;
        sum_tt += t * t;
        m_used = i + 2;
    }
    const double s_hat = sum_tb / sum_tt;
    const double eps = s_hat - 1.0;
    const double nv = c->n_vocab > 0 ? (double) c->n_vocab : (double) n;
    double k = pow(eps * pow(2.0, (double) c->mu) / (1.0 - pow(nv, -eps)), 1.0 / s_hat);
    if (isnan(k) || m_used < 2) {
        k = (double) n;
    }
    const size_t kk = k < 1.0 ? 1 : (k >= (double) n ? n : (size_t) k);
    if (kk >= n ? !smpl_sort(cur_p, &c->scratch) : (smpl_top_k_impl(cur_p, kk, &c->scratch), !cur_p->sorted)) {
        return; // out of memory (logged)
    }
    smpl_softmax(cur_p);
    cur_p->selected = smpl_sample_p(cur_p, &c->rng);
    smpl_mirostat_update(c, cur_p);
}

static const struct llama_sampler_i smpl_mirostat_i = {
    .name = smpl_mirostat_name,
    .apply = smpl_mirostat_apply,
    .reset = smpl_mirostat_reset,
    .clone = smpl_mirostat_clone,
    .free = smpl_mirostat_free,
    .copy_state = smpl_mirostat_copy_state,
};

static struct llama_sampler * smpl_mirostat_new(const struct llama_sampler_i * iface, int32_t n_vocab, uint32_t seed, float tau,
                                                float eta, int32_t m) {
    struct smpl_mirostat * c = GGML_CALLOC(1, sizeof(*c));
    if (c) {
        c->n_vocab = n_vocab;
        c->seed = seed;
        c->tau = tau;
        c->eta = eta;
        c->m = m;
        c->mu = 2.0f * tau;
        c->seed_cur = smpl_seed_resolve(seed);
        smpl_rng_seed(&c->rng, c->seed_cur);
    }
    return smpl_new(iface, c, smpl_mirostat_free_ctx);
}

struct llama_sampler * llama_sampler_init_mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m) {
    return smpl_mirostat_new(&smpl_mirostat_i, n_vocab, seed, tau, eta, m);
}

static const char * smpl_mirostat_v2_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "mirostat-v2";
}

static void smpl_mirostat_v2_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_mirostat * c = smpl->ctx;
    const size_t n = cur_p->size;
    if (n == 0) {
        cur_p->selected = -1;
        return;
    }
    smpl_softmax(cur_p);
    size_t keep = 0;
    for (size_t i = 0; i < n; i++) {
        const float p = cur_p->data[i].p;
        keep += p > 0.0f && -log2f(p) <= c->mu;
    }
    keep = keep > 0 ? keep : 1;
    if (keep >= n ? !smpl_sort(cur_p, &c->scratch) : (smpl_top_k_impl(cur_p, keep, &c->scratch), !cur_p->sorted)) {
        return; // out of memory (logged)
    }
    smpl_softmax(cur_p);
    cur_p->selected = smpl_sample_p(cur_p, &c->rng);
    smpl_mirostat_update(c, cur_p);
}

static const struct llama_sampler_i smpl_mirostat_v2_i = {
    .name = smpl_mirostat_v2_name,
    .apply = smpl_mirostat_v2_apply,
    .reset = smpl_mirostat_reset,
    .clone = smpl_mirostat_clone,
    .free = smpl_mirostat_free,
    .copy_state = smpl_mirostat_copy_state,
};

struct llama_sampler * llama_sampler_init_mirostat_v2(uint32_t seed, float tau, float eta) {
    return smpl_mirostat_new(&smpl_mirostat_v2_i, 0, seed, tau, eta, 0);
}

// ---------------------------------------------------------------------------------------------
// penalties: for each candidate whose token occurs c > 0 times among the last penalty_last_n
// accepted tokens: logit = logit <= 0 ? logit * repeat : logit / repeat, then
// logit -= c * freq + present. penalty_last_n <= 0 disables; repeat <= 0 or NaN counts as 1;
// a non-finite freq or present counts as 0. Token ids are counted in a dense array that grows
// with the largest id seen (ids < 0 or >= 2^24 are ignored).

#define SMPL_MAX_TOKEN_ID (1 << 24)

struct smpl_penalties {
    float repeat, freq, present;
    struct smpl_hist hist;
    int32_t * counts;
    size_t n_counts;
};

static void smpl_penalties_free_ctx(void * p) {
    struct smpl_penalties * c = p;
    if (c) {
        smpl_hist_free(&c->hist);
        free(c->counts);
        free(c);
    }
}

static void smpl_penalties_free(struct llama_sampler * smpl) { smpl_penalties_free_ctx(smpl->ctx); }

static const char * smpl_penalties_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "penalties";
}

static bool smpl_counts_fit(int32_t ** counts, size_t * n_counts, llama_token t) {
    if ((size_t) t < *n_counts) {
        return true;
    }
    size_t n = *n_counts ? *n_counts : 1024;
    while (n <= (size_t) t) {
        n *= 2;
    }
    int32_t * p = GGML_REALLOC(*counts, n * sizeof(*p));
    if (!p) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        return false;
    }
    memset(p + *n_counts, 0, (n - *n_counts) * sizeof(*p));
    *counts = p;
    *n_counts = n;
    return true;
}

static void smpl_penalties_accept(struct llama_sampler * smpl, llama_token token) {
    struct smpl_penalties * c = smpl->ctx;
    if (c->hist.limit == 0 || token < 0 || token >= SMPL_MAX_TOKEN_ID) {
        return;
    }
    if (!smpl_counts_fit(&c->counts, &c->n_counts, token)) {
        return;
    }
    const int64_t old = smpl_hist_push(&c->hist, token);
    if (old == -2) {
        return;
    }
    c->counts[token]++;
    if (old >= 0) {
        c->counts[old]--;
    }
}

static void smpl_penalties_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_penalties * c = smpl->ctx;
    if (c->hist.n == 0 || (c->repeat == 1.0f && c->freq == 0.0f && c->present == 0.0f)) {
        return;
    }
    for (size_t i = 0; i < cur_p->size; i++) {
        const llama_token id = cur_p->data[i].id;
        if (id < 0 || (size_t) id >= c->n_counts || c->counts[id] == 0) {
            continue;
        }
        const int32_t cnt = c->counts[id];
        float l = cur_p->data[i].logit;
        l = l <= 0.0f ? l * c->repeat : l / c->repeat;
        l -= (float) cnt * c->freq + c->present;
        cur_p->data[i].logit = l;
    }
    cur_p->sorted = false;
}

static void smpl_penalties_reset(struct llama_sampler * smpl) {
    struct smpl_penalties * c = smpl->ctx;
    smpl_hist_clear(&c->hist);
    if (c->counts) {
        memset(c->counts, 0, c->n_counts * sizeof(*c->counts));
    }
}

static bool smpl_penalties_copy_into(struct smpl_penalties * d, const struct smpl_penalties * s) {
    int32_t * counts = NULL;
    if (s->n_counts) {
        counts = GGML_MALLOC(s->n_counts * sizeof(*counts));
        if (!counts) {
            LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
            return false;
        }
        memcpy(counts, s->counts, s->n_counts * sizeof(*counts));
    }
    if (!smpl_hist_copy(&d->hist, &s->hist)) {
        free(counts);
        return false;
    }
    free(d->counts);
    d->counts = counts;
    d->n_counts = s->n_counts;
    d->repeat = s->repeat;
    d->freq = s->freq;
    d->present = s->present;
    return true;
}

SMPL_CLONE_COPY_DEEP(smpl_penalties, struct smpl_penalties, smpl_penalties_copy_into, smpl_penalties_free_ctx)

static const struct llama_sampler_i smpl_penalties_i = {
    .name = smpl_penalties_name,
    .accept = smpl_penalties_accept,
    .apply = smpl_penalties_apply,
    .reset = smpl_penalties_reset,
    .clone = smpl_penalties_clone,
    .free = smpl_penalties_free,
    .copy_state = smpl_penalties_copy_state,
};

struct llama_sampler * llama_sampler_init_penalties(int32_t n_vocab, int32_t penalty_last_n, float penalty_repeat,
                                                    float penalty_freq, float penalty_present) {
    struct smpl_penalties * c = GGML_CALLOC(1, sizeof(*c));
    if (c) {
        c->repeat = penalty_repeat > 0.0f ? penalty_repeat : 1.0f;
        c->freq = isfinite(penalty_freq) ? penalty_freq : 0.0f;
        c->present = isfinite(penalty_present) ? penalty_present : 0.0f;
        c->hist.limit = penalty_last_n > 0 ? (size_t) penalty_last_n : 0;
        if (n_vocab > 0 && n_vocab <= SMPL_MAX_TOKEN_ID && !smpl_counts_fit(&c->counts, &c->n_counts, n_vocab - 1)) {
            smpl_penalties_free_ctx(c);
            return NULL;
        }
    }
    return smpl_new(&smpl_penalties_i, c, smpl_penalties_free_ctx);
}

// ---------------------------------------------------------------------------------------------
// DRY ("don't repeat yourself", p-e-w, text-generation-webui PR 5677).
// If the last L accepted tokens also occur earlier, followed there by token x, then sampling x
// would extend a verbatim repeat; for L >= allowed_length its logit drops by
//   multiplier * base^(L - allowed_length)    (the exponent capped so the penalty stays finite).
// L is the longest such match (found for all positions at once with the Z-algorithm on the
// reversed history) and never reaches back past the latest sequence breaker: a string such as
// "\n" or ":" given at init, recognised as any token whose text contains it, or as a token whose
// text ends with a prefix of it followed by the tokens of the rest.
// Only the last penalty_last_n tokens are looked at (-1: up to SMPL_DRY_MAX_HISTORY; 0: off).
// multiplier <= 0, base < 1 (or NaN) disables; allowed_length < 1 counts as 1.

#define SMPL_DRY_MAX_HISTORY 65536
#define SMPL_DRY_MAX_BREAKER 64   // bytes of a breaker string looked at
#define SMPL_DRY_MAX_TAIL    32   // tokens after the head token of a multi-token breaker

struct smpl_dry_breaker {
    llama_token head;
    int32_t tail_off; // into tails
    int32_t tail_len;
};

struct smpl_dry {
    int32_t n_vocab;
    float multiplier, base;
    int32_t allowed_length;
    int32_t penalty_last_n; // as given
    struct smpl_dry_breaker * breakers; // sorted by head
    size_t n_breakers;
    llama_token * tails;
    size_t n_tails;
    struct smpl_hist hist;
    struct smpl_buf scratch;   // not copied
    int32_t * max_len;         // [n_vocab], zero between applies; not copied
};

static void smpl_dry_free_ctx(void * p) {
    struct smpl_dry * c = p;
    if (c) {
        free(c->breakers);
        free(c->tails);
        smpl_hist_free(&c->hist);
        smpl_buf_free(&c->scratch);
        free(c->max_len);
        free(c);
    }
}

static void smpl_dry_free(struct llama_sampler * smpl) { smpl_dry_free_ctx(smpl->ctx); }

static const char * smpl_dry_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "dry";
}

static bool smpl_dry_enabled(const struct smpl_dry * c) { return c->multiplier > 0.0f && c->base >= 1.0f && c->hist.limit > 0; }

static void smpl_dry_accept(struct llama_sampler * smpl, llama_token token) {
    struct smpl_dry * c = smpl->ctx;
    if (smpl_dry_enabled(c)) {
        smpl_hist_push(&c->hist, token);
    }
}

// First breaker entry with this head (breakers sorted by head), or n_breakers.
static size_t smpl_dry_find(const struct smpl_dry * c, llama_token head) {
    size_t lo = 0, hi = c->n_breakers;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (c->breakers[mid].head < head)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Tokens after the latest breaker in the history h[0..n), i.e. how far back a match may reach.
static size_t smpl_dry_rep_limit(const struct smpl_dry * c, const llama_token * h, size_t n) {
    for (size_t p = n; p-- > 0;) {
        for (size_t b = smpl_dry_find(c, h[p]); b < c->n_breakers && c->breakers[b].head == h[p]; b++) {
            const size_t m = (size_t) c->breakers[b].tail_len;
            if (p + m > n - 1) {
                continue;
            }
            if (m == 0 || memcmp(h + p + 1, c->tails + c->breakers[b].tail_off, m * sizeof(llama_token)) == 0) {
                return n - 1 - (p + m);
            }
        }
    }
    return n;
}

static void smpl_dry_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_dry * c = smpl->ctx;
    const size_t n = c->hist.n;
    if (!smpl_dry_enabled(c) || n < 2 || cur_p->size == 0) {
        return;
    }
    const size_t allowed = (size_t) c->allowed_length;
    int32_t * mem = smpl_buf_reserve(&c->scratch, 2 * n * sizeof(int32_t));
    if (!mem) {
        return;
    }
    llama_token * h = mem;      // history, oldest first
    int32_t * z = mem + n;      // Z-array of the reversed history
    for (size_t i = 0; i < n; i++) {
        h[i] = smpl_hist_at(&c->hist, i);
    }
    const size_t rep_limit = smpl_dry_rep_limit(c, h, n);
    if (rep_limit < allowed) {
        return;
    }
    // Z-algorithm over r[i] = h[n-1-i]: z[i] = longest common prefix of r and r[i..].
    z[0] = (int32_t) n;
    size_t l = 0, r = 0;
    for (size_t i = 1; i < n; i++) {
        size_t zi = 0;
        if (i < r) {
            zi = (size_t) z[i - l] < r - i ? (size_t) z[i - l] : r - i;
        }
        while (i + zi < n && h[n - 1 - zi] == h[n - 1 - i - zi]) {
            zi++;
        }
        z[i] = (int32_t) zi;
        if (i + zi > r) {
            l = i;
            r = i + zi;
        }
    }
    // z[i]: the suffix of length z[i] also ends at position n-1-i, so h[n-i] would repeat it.
    bool any = false;
    for (size_t i = 1; i < n; i++) {
        size_t len = (size_t) z[i] < rep_limit ? (size_t) z[i] : rep_limit;
        const llama_token next = h[n - i];
        if (len < allowed || next < 0 || next >= c->n_vocab) {
            continue;
        }
        if ((int32_t) len > c->max_len[next]) {
            c->max_len[next] = (int32_t) len;
            any = true;
        }
    }
    if (!any) {
        return;
    }
    // Cap the exponent so base^e stays below FLT_MAX (base == 1 never overflows).
    const double max_exp = c->base > 1.0f ? floor(log((double) FLT_MAX) / log((double) c->base)) : INFINITY;
    for (size_t i = 0; i < cur_p->size; i++) {
        const llama_token id = cur_p->data[i].id;
        if (id < 0 || id >= c->n_vocab || c->max_len[id] == 0) {
            continue;
        }
        double e = (double) (c->max_len[id] - (int32_t) allowed);
        if (e > max_exp) {
            e = max_exp;
        }
        cur_p->data[i].logit -= (float) ((double) c->multiplier * pow((double) c->base, e));
        cur_p->sorted = false;
    }
    // Clear only what this call set.
    for (size_t i = 1; i < n; i++) {
        const llama_token next = h[n - i];
        if (next >= 0 && next < c->n_vocab) {
            c->max_len[next] = 0;
        }
    }
}

static void smpl_dry_reset(struct llama_sampler * smpl) { smpl_hist_clear(&((struct smpl_dry *) smpl->ctx)->hist); }

static bool smpl_dry_copy_into(struct smpl_dry * d, const struct smpl_dry * s) {
    struct smpl_dry_breaker * br = NULL;
    llama_token * tails = NULL;
    int32_t * max_len = GGML_CALLOC((size_t) s->n_vocab, sizeof(int32_t));
    if (s->n_breakers) br = GGML_MALLOC(s->n_breakers * sizeof(*br));
    if (s->n_tails) tails = GGML_MALLOC(s->n_tails * sizeof(*tails));
    if (!max_len || (s->n_breakers && !br) || (s->n_tails && !tails) || !smpl_hist_copy(&d->hist, &s->hist)) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        free(br);
        free(tails);
        free(max_len);
        return false;
    }
    if (br) memcpy(br, s->breakers, s->n_breakers * sizeof(*br));
    if (tails) memcpy(tails, s->tails, s->n_tails * sizeof(*tails));
    free(d->breakers);
    free(d->tails);
    free(d->max_len);
    d->breakers = br;
    d->n_breakers = s->n_breakers;
    d->tails = tails;
    d->n_tails = s->n_tails;
    d->max_len = max_len;
    d->n_vocab = s->n_vocab;
    d->multiplier = s->multiplier;
    d->base = s->base;
    d->allowed_length = s->allowed_length;
    d->penalty_last_n = s->penalty_last_n;
    return true;
}

SMPL_CLONE_COPY_DEEP(smpl_dry, struct smpl_dry, smpl_dry_copy_into, smpl_dry_free_ctx)

static const struct llama_sampler_i smpl_dry_i = {
    .name = smpl_dry_name,
    .accept = smpl_dry_accept,
    .apply = smpl_dry_apply,
    .reset = smpl_dry_reset,
    .clone = smpl_dry_clone,
    .free = smpl_dry_free,
    .copy_state = smpl_dry_copy_state,
};

static bool smpl_dry_add(struct smpl_dry * c, size_t * cap_b, size_t * cap_t, llama_token head, const llama_token * tail,
                         size_t tail_len) {
    if (c->n_breakers == *cap_b) {
        const size_t cap = *cap_b ? *cap_b * 2 : 16;
        struct smpl_dry_breaker * p = GGML_REALLOC(c->breakers, cap * sizeof(*p));
        if (!p) return false;
        c->breakers = p;
        *cap_b = cap;
    }
    while (c->n_tails + tail_len > *cap_t) {
        const size_t cap = *cap_t ? *cap_t * 2 : 64;
        llama_token * p = GGML_REALLOC(c->tails, cap * sizeof(*p));
        if (!p) return false;
        c->tails = p;
        *cap_t = cap;
    }
    struct smpl_dry_breaker * b = &c->breakers[c->n_breakers++];
    b->head = head;
    b->tail_off = (int32_t) c->n_tails;
    b->tail_len = (int32_t) tail_len;
    if (tail_len) {
        memcpy(c->tails + c->n_tails, tail, tail_len * sizeof(*tail));
    }
    c->n_tails += tail_len;
    return true;
}

static int smpl_dry_cmp(const void * a, const void * b) {
    const struct smpl_dry_breaker *x = a, *y = b;
    if (x->head != y->head) return x->head < y->head ? -1 : 1;
    if (x->tail_off != y->tail_off) return x->tail_off < y->tail_off ? -1 : 1;
    return 0;
}

static bool smpl_mem_contains(const char * hay, size_t n_hay, const char * needle, size_t n_needle) {
    if (n_needle > n_hay) return false;
    for (size_t i = 0; i + n_needle <= n_hay; i++) {
        if (memcmp(hay + i, needle, n_needle) == 0) return true;
    }
    return false;
}

// Finds, for every breaker string, the tokens that contain it and the tokens that start it.
static bool smpl_dry_build_breakers(struct smpl_dry * c, const struct llama_vocab * vocab, const char ** seq_breakers,
                                    size_t num_breakers) {
    size_t cap_b = 0, cap_t = 0;
    char piece[256];
    llama_token tail[SMPL_DRY_MAX_TAIL];
    for (size_t bi = 0; bi < num_breakers; bi++) {
        const char * s = seq_breakers[bi];
        if (!s || !*s) {
            continue;
        }
        size_t len = strlen(s);
        if (len > SMPL_DRY_MAX_BREAKER) {
            LLAMA_LOG_WARN("llama_sampler_init_dry: sequence breaker %zu is %zu bytes; using its first %d\n", bi, len,
                           SMPL_DRY_MAX_BREAKER);
            len = SMPL_DRY_MAX_BREAKER;
        }
        // Tokens of each remainder s[o..] for o in 1..len-1, tokenized once.
        int32_t rest_n[SMPL_DRY_MAX_BREAKER];
        llama_token rest[SMPL_DRY_MAX_BREAKER][SMPL_DRY_MAX_TAIL];
        for (size_t o = 1; o < len; o++) {
            const int32_t nt = llama_tokenize(vocab, s + o, (int32_t) (len - o), rest[o], SMPL_DRY_MAX_TAIL, false, false);
            rest_n[o] = nt; // < 0: too many tokens; such overlaps are skipped
        }
        for (llama_token t = 0; t < c->n_vocab; t++) {
            const int32_t np = llama_token_to_piece(vocab, t, piece, (int32_t) sizeof(piece), 0, true);
            if (np <= 0) {
                continue;
            }
            if (smpl_mem_contains(piece, (size_t) np, s, len)) {
                if (!smpl_dry_add(c, &cap_b, &cap_t, t, NULL, 0)) return false;
                continue;
            }
            // The piece ends with s[0..o): the rest of the breaker must follow as tokens.
            const size_t max_o = (size_t) np < len - 1 ? (size_t) np : len - 1;
            for (size_t o = max_o; o >= 1; o--) {
                if (memcmp(piece + np - o, s, o) == 0 && rest_n[o] > 0) {
                    memcpy(tail, rest[o], (size_t) rest_n[o] * sizeof(llama_token));
                    if (!smpl_dry_add(c, &cap_b, &cap_t, t, tail, (size_t) rest_n[o])) return false;
                }
            }
        }
    }
    if (c->n_breakers > 1) {
        qsort(c->breakers, c->n_breakers, sizeof(*c->breakers), smpl_dry_cmp);
    }
    return true;
}

struct llama_sampler * llama_sampler_init_dry(const struct llama_vocab * vocab, float dry_multiplier, float dry_base,
                                              int32_t dry_allowed_length, int32_t dry_penalty_last_n, const char ** seq_breakers,
                                              size_t num_breakers) {
    const struct llama_vocab * v = llama_vocab_resolve(vocab, __func__);
    if (!v) {
        return NULL;
    }
    const int32_t n_vocab = llama_vocab_n_tokens(v);
    if (n_vocab <= 0) {
        LLAMA_LOG_ERROR("%s: the vocabulary is empty\n", __func__);
        return NULL;
    }
    if (num_breakers > 0 && !seq_breakers) {
        LLAMA_LOG_ERROR("%s: seq_breakers is NULL but num_breakers is %zu\n", __func__, num_breakers);
        return NULL;
    }
    struct smpl_dry * c = GGML_CALLOC(1, sizeof(*c));
    if (!c) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        return NULL;
    }
    c->n_vocab = n_vocab;
    c->multiplier = dry_multiplier;
    c->base = dry_base;
    c->allowed_length = dry_allowed_length >= 1 ? dry_allowed_length : 1;
    c->penalty_last_n = dry_penalty_last_n;
    c->hist.limit = dry_penalty_last_n < 0 ? SMPL_DRY_MAX_HISTORY : (size_t) dry_penalty_last_n;
    c->max_len = GGML_CALLOC((size_t) n_vocab, sizeof(int32_t));
    if (!c->max_len) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        smpl_dry_free_ctx(c);
        return NULL;
    }
    if (smpl_dry_enabled(c) && !smpl_dry_build_breakers(c, v, seq_breakers, num_breakers)) {
        LLAMA_LOG_ERROR("%s: out of memory for the sequence breakers\n", __func__);
        smpl_dry_free_ctx(c);
        return NULL;
    }
    return smpl_new(&smpl_dry_i, c, smpl_dry_free_ctx);
}

// ---------------------------------------------------------------------------------------------
// logit bias: adds each bias to its token's logit (duplicates add up; -inf bans the token).
// Entries with a token < 0 or >= n_vocab (when n_vocab > 0) or a NaN bias are dropped with a
// warning at init.

struct smpl_logit_bias {
    llama_logit_bias * biases;
    int32_t n;
    float * dense;  // [n_dense] sums of the biases by token id
    int32_t n_dense;
};

static void smpl_logit_bias_free_ctx(void * p) {
    struct smpl_logit_bias * c = p;
    if (c) {
        free(c->biases);
        free(c->dense);
        free(c);
    }
}

static void smpl_logit_bias_free(struct llama_sampler * smpl) { smpl_logit_bias_free_ctx(smpl->ctx); }

static const char * smpl_logit_bias_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "logit-bias";
}

static void smpl_logit_bias_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    const struct smpl_logit_bias * c = smpl->ctx;
    if (c->n == 0 || cur_p->size == 0) {
        return;
    }
    cur_p->sorted = false;
    // Common case: the full vocabulary in id order, so a token's position is its id.
    bool direct = true;
    for (int32_t i = 0; i < c->n && direct; i++) {
        const llama_token t = c->biases[i].token;
        direct = (size_t) t < cur_p->size && cur_p->data[t].id == t;
    }
    if (direct) {
        for (int32_t i = 0; i < c->n; i++) {
            cur_p->data[c->biases[i].token].logit += c->biases[i].bias;
        }
        return;
    }
    for (size_t i = 0; i < cur_p->size; i++) {
        const llama_token id = cur_p->data[i].id;
        if (id >= 0 && id < c->n_dense && c->dense[id] != 0.0f) {
            cur_p->data[i].logit += c->dense[id];
        }
    }
}

static struct llama_sampler * smpl_logit_bias_clone(const struct llama_sampler * smpl);

static const struct llama_sampler_i smpl_logit_bias_i = {
    .name = smpl_logit_bias_name,
    .apply = smpl_logit_bias_apply,
    .clone = smpl_logit_bias_clone,
    .free = smpl_logit_bias_free,
};

static struct llama_sampler * smpl_logit_bias_make(int32_t n_vocab, int32_t n_logit_bias, const llama_logit_bias * logit_bias,
                                                   bool quiet) {
    struct smpl_logit_bias * c = GGML_CALLOC(1, sizeof(*c));
    if (!c) {
        LLAMA_LOG_ERROR("llama_sampler_init_logit_bias: out of memory\n");
        return NULL;
    }
    if (n_logit_bias > 0) {
        c->biases = GGML_MALLOC((size_t) n_logit_bias * sizeof(*c->biases));
        if (!c->biases) {
            smpl_logit_bias_free_ctx(c);
            LLAMA_LOG_ERROR("llama_sampler_init_logit_bias: out of memory\n");
            return NULL;
        }
    }
    llama_token max_id = -1;
    for (int32_t i = 0; i < n_logit_bias; i++) {
        const llama_logit_bias b = logit_bias[i];
        if (b.token < 0 || (n_vocab > 0 && b.token >= n_vocab) || b.token >= SMPL_MAX_TOKEN_ID || isnan(b.bias)) {
            if (!quiet) {
                LLAMA_LOG_WARN("llama_sampler_init_logit_bias: ignoring entry %d (token %d, bias %g)\n", i, b.token,
                               (double) b.bias);
            }
            continue;
        }
        c->biases[c->n++] = b;
        if (b.token > max_id) max_id = b.token;
    }
    c->n_dense = max_id + 1;
    if (c->n_dense > 0) {
        c->dense = GGML_CALLOC((size_t) c->n_dense, sizeof(float));
        if (!c->dense) {
            smpl_logit_bias_free_ctx(c);
            LLAMA_LOG_ERROR("llama_sampler_init_logit_bias: out of memory\n");
            return NULL;
        }
        for (int32_t i = 0; i < c->n; i++) {
            c->dense[c->biases[i].token] += c->biases[i].bias;
        }
    }
    return smpl_new(&smpl_logit_bias_i, c, smpl_logit_bias_free_ctx);
}

static struct llama_sampler * smpl_logit_bias_clone(const struct llama_sampler * smpl) {
    const struct smpl_logit_bias * c = smpl->ctx;
    return smpl_logit_bias_make(0, c->n, c->biases, true);
}

struct llama_sampler * llama_sampler_init_logit_bias(int32_t n_vocab, int32_t n_logit_bias, const llama_logit_bias * logit_bias) {
    if (n_logit_bias < 0 || (n_logit_bias > 0 && !logit_bias)) {
        LLAMA_LOG_ERROR("%s: n_logit_bias is %d with logit_bias %s\n", __func__, n_logit_bias, logit_bias ? "set" : "NULL");
        return NULL;
    }
    return smpl_logit_bias_make(n_vocab, n_logit_bias, logit_bias, false);
}

// ---------------------------------------------------------------------------------------------
// adaptive-p (MrJackSpade / ddh0, llama.cpp PR 17927): a final sampler that favours tokens whose
// probability is near a target, steering the average probability of what it picks toward it.
// State: an exponential moving average of the original probability of each selected token,
//   avg = ws / tw,  ws <- decay * ws + p_sel,  tw <- decay * tw + 1   (updated when it selects).
// Each step: p = softmax(logits); adapted = clamp(2 * target - avg, 0, 1) (just target before any
// selection); every candidate with p > 0 gets the logit 5 - 10 * g(|p - adapted| / 0.3) with
// g(d) = d^2 for d < 1 and 2d - 1 beyond (quadratic near the target, linear in the tails);
// then it samples from the softmax of those logits with its own PCG32 stream.
// target < 0 or NaN: plain sampling from softmax(logits) (no state change). target > 1 counts
// as 1. decay is clamped to [0, 0.99] (NaN: 0).

struct smpl_adaptive_p {
    float target, decay;
    uint32_t seed, seed_cur;
    struct smpl_rng rng;
    double weighted_sum, total_weight;
    struct smpl_buf scratch; // not copied
};

static void smpl_adaptive_p_free_ctx(void * p) {
    struct smpl_adaptive_p * c = p;
    if (c) {
        smpl_buf_free(&c->scratch);
        free(c);
    }
}

static void smpl_adaptive_p_free(struct llama_sampler * smpl) { smpl_adaptive_p_free_ctx(smpl->ctx); }

static const char * smpl_adaptive_p_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "adaptive-p";
}

static void smpl_adaptive_p_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct smpl_adaptive_p * c = smpl->ctx;
    const size_t n = cur_p->size;
    if (n == 0) {
        cur_p->selected = -1;
        return;
    }
    smpl_softmax(cur_p);
    if (!(c->target >= 0.0f)) {
        cur_p->selected = smpl_sample_p(cur_p, &c->rng);
        return;
    }
    float * orig = smpl_buf_reserve(&c->scratch, n * sizeof(float));
    if (!orig) {
        cur_p->selected = smpl_sample_p(cur_p, &c->rng);
        return;
    }
    const double target = c->target > 1.0f ? 1.0 : (double) c->target;
    double adapted = c->total_weight > 0.0 ? 2.0 * target - c->weighted_sum / c->total_weight : target;
    adapted = adapted < 0.0 ? 0.0 : (adapted > 1.0 ? 1.0 : adapted);
    for (size_t i = 0; i < n; i++) {
        const float p = cur_p->data[i].p;
        orig[i] = p;
        if (p > 0.0f) {
            const double d = fabs((double) p - adapted) / 0.3;
            const double g = d < 1.0 ? d * d : 2.0 * d - 1.0;
            cur_p->data[i].logit = (float) (5.0 - 10.0 * g);
        } else {
            cur_p->data[i].logit = -INFINITY;
        }
    }
    cur_p->sorted = false;
    smpl_softmax(cur_p);
    cur_p->selected = smpl_sample_p(cur_p, &c->rng);
    c->weighted_sum = (double) c->decay * c->weighted_sum + (double) orig[cur_p->selected];
    c->total_weight = (double) c->decay * c->total_weight + 1.0;
}

static void smpl_adaptive_p_reset(struct llama_sampler * smpl) {
    struct smpl_adaptive_p * c = smpl->ctx;
    c->weighted_sum = 0.0;
    c->total_weight = 0.0;
    c->seed_cur = smpl_seed_resolve(c->seed);
    smpl_rng_seed(&c->rng, c->seed_cur);
}

SMPL_CLONE_COPY_SCRATCH(smpl_adaptive_p, struct smpl_adaptive_p, smpl_adaptive_p_free_ctx)

static const struct llama_sampler_i smpl_adaptive_p_i = {
    .name = smpl_adaptive_p_name,
    .apply = smpl_adaptive_p_apply,
    .reset = smpl_adaptive_p_reset,
    .clone = smpl_adaptive_p_clone,
    .free = smpl_adaptive_p_free,
    .copy_state = smpl_adaptive_p_copy_state,
};

struct llama_sampler * llama_sampler_init_adaptive_p(float target, float decay, uint32_t seed) {
    struct smpl_adaptive_p * c = GGML_CALLOC(1, sizeof(*c));
    if (c) {
        c->target = target;
        c->decay = decay >= 0.0f ? (decay > 0.99f ? 0.99f : decay) : 0.0f;
        c->seed = seed;
        c->seed_cur = smpl_seed_resolve(seed);
        smpl_rng_seed(&c->rng, c->seed_cur);
    }
    return smpl_new(&smpl_adaptive_p_i, c, smpl_adaptive_p_free_ctx);
}

uint32_t smpl_extra_get_seed(const struct llama_sampler * smpl) {
    if (smpl->iface == &smpl_mirostat_i || smpl->iface == &smpl_mirostat_v2_i) {
        return ((const struct smpl_mirostat *) smpl->ctx)->seed_cur;
    }
    if (smpl->iface == &smpl_adaptive_p_i) {
        return ((const struct smpl_adaptive_p *) smpl->ctx)->seed_cur;
    }
    return LLAMA_DEFAULT_SEED;
}

// ---------------------------------------------------------------------------------------------
// not supported

struct llama_sampler * llama_sampler_init_infill(const struct llama_vocab * vocab) {
    (void) vocab;
    LLAMA_LOG_ERROR("%s: the infill sampler is not supported by this engine\n", __func__);
    return NULL;
}
