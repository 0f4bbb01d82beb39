// test_sampling.c — the sampler API from C: every sampler (and its clone) over adversarial
// candidate arrays, chains and ownership, NULL arguments, errors logged instead of aborts.
// Built with LLAMA_SANITIZE=ON this is the leak and memory-error check of sampling*.c
// (the Python suite compares the results with NumPy references).
#include "llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_fail = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            n_fail++;                                                                \
        }                                                                            \
    } while (0)

static int n_errors = 0;

static void count_errors(enum ggml_log_level level, const char * text, void * user_data) {
    (void) text;
    (void) user_data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        n_errors++;
    }
}

#define N_SETS 9
#define N_MAX  300

// Candidate sets: random, ties, NaN, +inf, -inf, all -inf, all NaN, empty, one.
static size_t make_set(int which, llama_token_data * d, unsigned * seed) {
    size_t n = which == 7 ? 0 : (which == 8 ? 1 : N_MAX);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        float r = (float) ((*seed >> 8) & 0xffff) / 6553.6f - 5.0f;
        float l = r;
        switch (which) {
            case 1: l = (float) ((*seed >> 12) & 3); break;
            case 2: l = (i % 7 == 0) ? NAN : r; break;
            case 3: l = (i % 50 == 3) ? INFINITY : r; break;
            case 4: l = (i % 2) ? -INFINITY : r; break;
            case 5: l = -INFINITY; break;
            case 6: l = NAN; break;
            default: break;
        }
        d[i].id = (llama_token) i;
        d[i].logit = l;
        d[i].p = 0.0f;
    }
    return n;
}

typedef struct llama_sampler * (*make_fn)(void);

static struct llama_sampler * mk_greedy(void) { return llama_sampler_init_greedy(); }
static struct llama_sampler * mk_dist(void) { return llama_sampler_init_dist(7); }
static struct llama_sampler * mk_dist_rand(void) { return llama_sampler_init_dist(LLAMA_DEFAULT_SEED); }
static struct llama_sampler * mk_top_k(void) { return llama_sampler_init_top_k(40); }
static struct llama_sampler * mk_top_k_big(void) { return llama_sampler_init_top_k(1 << 30); }
static struct llama_sampler * mk_top_p(void) { return llama_sampler_init_top_p(0.9f, 1); }
static struct llama_sampler * mk_top_p_0(void) { return llama_sampler_init_top_p(0.0f, 1000000); }
static struct llama_sampler * mk_min_p(void) { return llama_sampler_init_min_p(0.05f, 1); }
static struct llama_sampler * mk_min_p_2(void) { return llama_sampler_init_min_p(2.0f, 3); }
static struct llama_sampler * mk_typical(void) { return llama_sampler_init_typical(0.9f, 1); }
static struct llama_sampler * mk_temp(void) { return llama_sampler_init_temp(0.7f); }
static struct llama_sampler * mk_temp_0(void) { return llama_sampler_init_temp(-1.0f); }
static struct llama_sampler * mk_temp_ext(void) { return llama_sampler_init_temp_ext(0.8f, 0.5f, 1.0f); }
static struct llama_sampler * mk_xtc(void) { return llama_sampler_init_xtc(1.0f, 0.01f, 1, 3); }
static struct llama_sampler * mk_sigma(void) { return llama_sampler_init_top_n_sigma(1.0f); }
static struct llama_sampler * mk_miro(void) { return llama_sampler_init_mirostat(N_MAX, 3, 5.0f, 0.1f, 100); }
static struct llama_sampler * mk_miro2(void) { return llama_sampler_init_mirostat_v2(3, 5.0f, 0.1f); }
static struct llama_sampler * mk_pen(void) { return llama_sampler_init_penalties(N_MAX, 64, 1.2f, 0.1f, 0.1f); }
static struct llama_sampler * mk_adaptive(void) { return llama_sampler_init_adaptive_p(0.3f, 0.9f, 3); }
static struct llama_sampler * mk_bias(void) {
    const llama_logit_bias b[3] = { { 1, 2.0f }, { 5, -INFINITY }, { 100000, 1.0f } };
    return llama_sampler_init_logit_bias(N_MAX, 3, b);
}
static struct llama_sampler * mk_chain(void) {
    struct llama_sampler_chain_params p = llama_sampler_chain_default_params();
    p.no_perf = false;
    struct llama_sampler * c = llama_sampler_chain_init(p);
    llama_sampler_chain_add(c, llama_sampler_init_penalties(N_MAX, 32, 1.1f, 0.0f, 0.0f));
    llama_sampler_chain_add(c, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(c, llama_sampler_init_top_p(0.95f, 1));
    llama_sampler_chain_add(c, llama_sampler_init_temp(0.8f));
    llama_sampler_chain_add(c, llama_sampler_init_dist(11));
    return c;
}

static const make_fn makers[] = {
    mk_greedy, mk_dist,    mk_dist_rand, mk_top_k, mk_top_k_big, mk_top_p,    mk_top_p_0,
    mk_min_p,  mk_min_p_2, mk_typical,   mk_temp,  mk_temp_0,    mk_temp_ext, mk_xtc,
    mk_sigma,  mk_miro,    mk_miro2,     mk_pen,   mk_adaptive,  mk_bias,     mk_chain,
};

// Picks a token if the sampler is a final one; checks the array stays consistent.
static void apply_and_check(struct llama_sampler * s, int which, unsigned * seed) {
    static llama_token_data d[N_MAX];
    const size_t n = make_set(which, d, seed);
    llama_token_data_array a = { d, n, -1, false };
    llama_sampler_apply(s, &a);
    CHECK(a.size <= n);
    CHECK(a.selected >= -1 && (a.selected < 0 || (size_t) a.selected < a.size));
    if (n == 0) {
        CHECK(a.selected == -1);
    }
    if (a.selected >= 0) {
        llama_sampler_accept(s, a.data[a.selected].id);
    }
}

static void test_every_sampler(void) {
    unsigned seed = 1;
    for (size_t m = 0; m < sizeof(makers) / sizeof(makers[0]); m++) {
        struct llama_sampler * s = makers[m]();
        CHECK(s != NULL);
        if (!s) continue;
        CHECK(strlen(llama_sampler_name(s)) > 0);
        for (int round = 0; round < 2; round++) {
            for (int w = 0; w < N_SETS; w++) {
                apply_and_check(s, w, &seed);
            }
        }
        struct llama_sampler * c = llama_sampler_clone(s);
        CHECK(c != NULL);
        for (int w = 0; w < N_SETS; w++) {
            apply_and_check(c, w, &seed);
        }
        llama_sampler_copy(s, c);
        llama_sampler_reset(s);
        llama_sampler_accept(s, -5);        // invalid tokens are ignored
        llama_sampler_accept(s, 1 << 30);
        apply_and_check(s, 0, &seed);
        llama_sampler_free(c);
        llama_sampler_free(s);
    }
}

static void test_chain_ownership(void) {
    struct llama_sampler * chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    struct llama_sampler * k = llama_sampler_init_top_k(3);
    llama_sampler_chain_add(chain, k);
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    CHECK(llama_sampler_chain_n(chain) == 2);
    CHECK(llama_sampler_chain_get(chain, 0) == k);
    struct llama_sampler * r = llama_sampler_chain_remove(chain, 0);
    CHECK(r == k);
    CHECK(llama_sampler_chain_n(chain) == 1);
    llama_sampler_free(r);                   // ours again
    n_errors = 0;
    CHECK(llama_sampler_chain_remove(chain, 3) == NULL);
    CHECK(llama_sampler_chain_get(chain, -1) == NULL);
    CHECK(n_errors == 2);
    llama_sampler_free(chain);               // frees the greedy sampler
}

static void test_nulls(void) {
    n_errors = 0;
    llama_sampler_free(NULL);
    llama_sampler_accept(NULL, 0);
    llama_sampler_reset(NULL);
    llama_sampler_apply(NULL, NULL);
    CHECK(llama_sampler_clone(NULL) == NULL);
    CHECK(llama_sampler_init(NULL, NULL) == NULL);
    CHECK(llama_sampler_sample(NULL, NULL, 0) == LLAMA_TOKEN_NULL);
    CHECK(llama_sampler_get_seed(NULL) == LLAMA_DEFAULT_SEED);
    struct llama_sampler * g = llama_sampler_init_greedy();
    llama_token_data_array bad = { NULL, 10, -1, false };
    llama_sampler_apply(g, &bad);
    CHECK(bad.selected == -1);
    CHECK(llama_sampler_sample(g, NULL, 0) == LLAMA_TOKEN_NULL);
    CHECK(llama_perf_sampler(g).n_sample == 0);
    CHECK(llama_sampler_init_logit_bias(10, 3, NULL) == NULL);
    CHECK(llama_sampler_init_grammar(NULL, "root ::= \"a\"", "root") == NULL);
    CHECK(llama_sampler_init_infill(NULL) == NULL);
    CHECK(llama_sampler_init_dry(NULL, 0.8f, 1.75f, 2, -1, NULL, 0) == NULL);
    llama_sampler_free(g);
    CHECK(n_errors >= 8);
}

// A sampler defined by user code through llama_sampler_init.
struct counter {
    int applies, accepts, frees;
};

static const char * cnt_name(const struct llama_sampler * s) {
    (void) s;
    return "counter";
}
static void cnt_apply(struct llama_sampler * s, llama_token_data_array * a) {
    (void) a;
    ((struct counter *) s->ctx)->applies++;
}
static void cnt_accept(struct llama_sampler * s, llama_token t) {
    (void) t;
    ((struct counter *) s->ctx)->accepts++;
}
static void cnt_free(struct llama_sampler * s) { ((struct counter *) s->ctx)->frees++; }

static void test_user_sampler(void) {
    static const struct llama_sampler_i iface = { .name = cnt_name, .apply = cnt_apply, .accept = cnt_accept, .free = cnt_free };
    struct counter cnt = { 0, 0, 0 };
    struct llama_sampler * chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, llama_sampler_init(&iface, &cnt));
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    llama_token_data d[3] = { { 0, 1.0f, 0 }, { 1, 3.0f, 0 }, { 2, 2.0f, 0 } };
    llama_token_data_array a = { d, 3, -1, false };
    llama_sampler_apply(chain, &a);
    CHECK(a.selected == 1);
    llama_sampler_accept(chain, 1);
    CHECK(strcmp(llama_sampler_name(llama_sampler_chain_get(chain, 0)), "counter") == 0);
    n_errors = 0;
    CHECK(llama_sampler_clone(chain) == NULL);   // the user sampler has state but no clone
    CHECK(n_errors >= 1);
    llama_sampler_free(chain);
    CHECK(cnt.applies == 1 && cnt.accepts == 1 && cnt.frees == 1);
}

int main(void) {
    llama_log_set(count_errors, NULL);
    test_every_sampler();
    test_chain_ownership();
    test_nulls();
    test_user_sampler();
    if (n_fail) {
        fprintf(stderr, "test_sampling: %d checks failed\n", n_fail);
        return 1;
    }
    printf("test_sampling: ok\n");
    return 0;
}
