// grammar.c — the GBNF matcher behind the grammar sampler.
//
// Why it is fast: a position in the grammar is a stack of element positions, interned as a
// persistent linked list (node = (position, parent node)), so pushing and popping allocate
// nothing once seen and a stack is one integer. A matcher state is the interned, sorted set of
// the stacks alive after the text so far, plus any unfinished UTF-8 sequence; its byte
// transitions are computed once and kept in a 256-entry table. The vocabulary's token texts
// form one byte trie in preorder (shared by every state and sampler): the allowed-token mask
// of a state is one walk of the trie where a dead byte skips the whole subtree, so all tokens
// sharing a prefix are pruned together, and the mask is cached per state. During generation
// states repeat (inside a JSON string every character leads back to the same state), so most
// tokens cost a table lookup, a cached mask and one pass over the logits.
#include "grammar.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define GR_UNSET      UINT32_MAX
#define GR_INPROG     (UINT32_MAX - 1)
#define GR_DEAD       (-1)
#define GR_MAX_DEPTH  4000           // closure recursion (nested rules expanded at once)
#define GR_MAX_STATES (1u << 21)
#define GR_MAX_NODES  (1u << 24)
#define GR_MASK_BYTES ((size_t) 128 << 20) // cached masks beyond this are dropped and recomputed

// ---------------------------------------------------------------------------------------------
// vocabulary trie

struct gr_vocab {
    int refs;
    int32_t n_tokens;
    uint32_t n_nodes;
    uint8_t * byte;       // [n_nodes] byte consumed entering the node
    uint16_t * depth;     // [n_nodes] 1 for children of the root
    uint32_t * skip;      // [n_nodes] first node after the subtree
    uint32_t * tok_off;   // [n_nodes + 1] tokens whose text ends at the node: toks[tok_off[i]..]
    llama_token * toks;
    uint32_t * piece_off; // [n_tokens + 1] text of each token in pieces (empty: no text)
    char * pieces;
    uint8_t * eog;        // [n_tokens]
};

static const struct gr_vocab * gr_sort_vocab; // qsort has no context argument

static int gr_cmp_piece(const void * a, const void * b) {
    const struct gr_vocab * v = gr_sort_vocab;
    llama_token x = *(const llama_token *) a, y = *(const llama_token *) b;
    uint32_t lx = v->piece_off[x + 1] - v->piece_off[x], ly = v->piece_off[y + 1] - v->piece_off[y];
    int c = memcmp(v->pieces + v->piece_off[x], v->pieces + v->piece_off[y], lx < ly ? lx : ly);
    if (c) return c;
    if (lx != ly) return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

struct gr_vocab * gr_vocab_build(const struct llama_vocab * vocab) {
    int32_t n = llama_vocab_n_tokens(vocab);
    if (n <= 0) {
        LLAMA_LOG_ERROR("grammar: the vocabulary is empty or invalid\n");
        return NULL;
    }
    struct gr_vocab * v = GGML_CALLOC(1, sizeof(*v));
    if (!v) goto oom;
    v->refs = 1;
    v->n_tokens = n;
    v->piece_off = GGML_MALLOC(((size_t) n + 1) * sizeof(uint32_t));
    v->eog = GGML_CALLOC((size_t) n, 1);
    size_t cap = (size_t) n * 8 + 256, used = 0;
    v->pieces = GGML_MALLOC(cap);
    if (!v->piece_off || !v->eog || !v->pieces) goto oom;
    for (int32_t t = 0; t < n; t++) {
        v->piece_off[t] = (uint32_t) used;
        v->eog[t] = llama_vocab_is_eog(vocab, t);
        if (v->eog[t] || (llama_vocab_get_attr(vocab, t) & LLAMA_TOKEN_ATTR_CONTROL)) continue;
        for (;;) {
            int32_t k = llama_token_to_piece(vocab, t, v->pieces + used,
                                             (int32_t) (cap - used > INT32_MAX ? INT32_MAX : cap - used), 0, false);
            if (k >= 0) {
                used += (size_t) k;
                break;
            }
            size_t ncap = cap * 2 + (size_t) -k;
            char * p = GGML_REALLOC(v->pieces, ncap);
            if (!p) goto oom;
            v->pieces = p;
            cap = ncap;
        }
    }
    v->piece_off[n] = (uint32_t) used;

    llama_token * order = GGML_MALLOC((size_t) n * sizeof(llama_token));
    v->toks = GGML_MALLOC((size_t) n * sizeof(llama_token) + 1);
    size_t node_cap = used + 1; // at most one node per byte of text
    v->byte = GGML_MALLOC(node_cap);
    v->depth = GGML_MALLOC(node_cap * sizeof(uint16_t));
    v->skip = GGML_MALLOC(node_cap * sizeof(uint32_t));
    v->tok_off = GGML_MALLOC((node_cap + 1) * sizeof(uint32_t));
    uint32_t * open = GGML_MALLOC(65536 * sizeof(uint32_t)); // open[d]: latest node at depth d+1
    if (!order || !v->toks || !v->byte || !v->depth || !v->skip || !v->tok_off || !open) {
        free(order);
        free(open);
        goto oom;
    }
    int32_t m = 0;
    for (int32_t t = 0; t < n; t++) {
        uint32_t len = v->piece_off[t + 1] - v->piece_off[t];
        if (len > 0 && len < 65535) order[m++] = t;
    }
    gr_sort_vocab = v;
    qsort(order, (size_t) m, sizeof(llama_token), gr_cmp_piece);
    uint32_t nn = 0, nt = 0, n_open = 0;
    const char * prev = NULL;
    uint32_t prev_len = 0;
    for (int32_t i = 0; i < m; i++) {
        llama_token t = order[i];
        const char * s = v->pieces + v->piece_off[t];
        uint32_t len = v->piece_off[t + 1] - v->piece_off[t];
        uint32_t lcp = 0;
        while (prev && lcp < len && lcp < prev_len && s[lcp] == prev[lcp]) lcp++;
        while (n_open > lcp) v->skip[open[--n_open]] = nn; // subtrees that end here
        for (uint32_t d = lcp; d < len; d++) {
            v->byte[nn] = (uint8_t) s[d];
            v->depth[nn] = (uint16_t) (d + 1);
            v->tok_off[nn] = nt;
            open[n_open++] = nn++;
        }
        v->toks[nt++] = t; // attaches to open[len - 1], the newest node: tok_off stays sorted
        prev = s;
        prev_len = len;
    }
    while (n_open > 0) v->skip[open[--n_open]] = nn;
    // tok_off[i] was set when node i was created; tokens attached later belong to the newest
    // node, so the counts fall out of the next node's start.
    v->tok_off[nn] = nt;
    v->n_nodes = nn;
    free(order);
    free(open);
    return v;
oom:
    LLAMA_LOG_ERROR("grammar: out of memory building the vocabulary trie\n");
    gr_vocab_unref(v);
    return NULL;
}

struct gr_vocab * gr_vocab_ref(struct gr_vocab * v) {
    if (v) __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
    return v;
}

void gr_vocab_unref(struct gr_vocab * v) {
    if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    free(v->byte);
    free(v->depth);
    free(v->skip);
    free(v->tok_off);
    free(v->toks);
    free(v->piece_off);
    free(v->pieces);
    free(v->eog);
    free(v);
}

int32_t gr_vocab_n_tokens(const struct gr_vocab * v) { return v->n_tokens; }

const uint8_t * gr_vocab_eog(const struct gr_vocab * v) { return v->eog; }

// Tries of the last few vocabularies used: building one walks every token's text and sorts
// them (tens of ms on a 150k vocabulary), while a server makes a sampler per request. A tiny
// spin lock guards the table; llama_vocab_free drops its entry (gr_vocab_forget), so a new
// vocab at a recycled address never finds a stale trie.
#define GR_CACHE_SLOTS 4
static struct {
    const struct llama_vocab * key;
    struct gr_vocab * v;
} gr_cache[GR_CACHE_SLOTS];
static unsigned gr_cache_next;
static atomic_flag gr_cache_lock = ATOMIC_FLAG_INIT;

static void gr_cache_acquire(void) {
    while (atomic_flag_test_and_set_explicit(&gr_cache_lock, memory_order_acquire)) {
    }
}
static void gr_cache_release(void) { atomic_flag_clear_explicit(&gr_cache_lock, memory_order_release); }

struct gr_vocab * gr_vocab_get(const struct llama_vocab * vocab) {
    gr_cache_acquire();
    for (int i = 0; i < GR_CACHE_SLOTS; i++) {
        if (gr_cache[i].key == vocab && gr_cache[i].v) {
            struct gr_vocab * v = gr_vocab_ref(gr_cache[i].v);
            gr_cache_release();
            return v;
        }
    }
    gr_cache_release();
    struct gr_vocab * v = gr_vocab_build(vocab);
    if (!v) return NULL;
    gr_cache_acquire();
    struct gr_vocab * old = NULL;
    int slot = -1;
    for (int i = 0; i < GR_CACHE_SLOTS && slot < 0; i++)
        if (gr_cache[i].key == vocab) slot = i;
    if (slot < 0) {
        slot = (int) (gr_cache_next++ % GR_CACHE_SLOTS);
        old = gr_cache[slot].v;
        gr_cache[slot].key = vocab;
        gr_cache[slot].v = gr_vocab_ref(v);
    }
    gr_cache_release();
    gr_vocab_unref(old);
    return v;
}

void gr_vocab_forget(const struct llama_vocab * vocab) {
    struct gr_vocab * drop[GR_CACHE_SLOTS];
    int n = 0;
    gr_cache_acquire();
    for (int i = 0; i < GR_CACHE_SLOTS; i++) {
        if (gr_cache[i].key == vocab && gr_cache[i].v) {
            drop[n++] = gr_cache[i].v;
            gr_cache[i].v = NULL;
            gr_cache[i].key = NULL;
        }
    }
    gr_cache_release();
    for (int i = 0; i < n; i++) gr_vocab_unref(drop[i]);
}

// ---------------------------------------------------------------------------------------------
// matcher tables

struct gr_node {
    uint32_t pos;    // element position of the stack's top (UINT32_MAX for node 0: empty stack)
    uint32_t parent; // node below
    uint32_t clo_off, clo_n; // closure: the stacks with a terminal on top (or empty) it expands to
};

struct gr_state {
    uint32_t off, n;   // sorted node ids in set_pool
    uint32_t utf8;     // pending UTF-8 (see gr_step); 0 if none
    uint32_t mask;     // index into the mask pool, GR_UNSET if not cached
    int32_t * next;    // [256] lazily: next state per byte (GR_DEAD, or -2 unknown)
    uint8_t can_end;   // the empty stack is in the set and no UTF-8 is pending
};

struct gr_matcher {
    struct gr_grammar * g;
    struct gr_vocab * v;
    struct gr_node * nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t * node_hash;
    uint32_t node_hash_cap;   // -> node id + 1
    uint32_t * clo_pool;
    uint32_t n_clo, cap_clo;
    struct gr_state * states;
    uint32_t n_states, cap_states;
    uint32_t * state_hash;
    uint32_t state_hash_cap; // -> state id + 1
    uint32_t * set_pool;
    uint32_t n_set, cap_set;
    uint64_t * masks;
    uint32_t n_masks, cap_masks;
    uint32_t mask_words;
    uint32_t * scratch;
    uint32_t n_scratch, cap_scratch;
    int32_t * walk;      // per trie depth
    int32_t start;       // initial state
    int32_t cur;         // current state (GR_DEAD once dead)
    int depth;           // closure recursion depth
    bool failed;         // a limit or memory ran out: the state went dead (logged once)
};

static bool gr_grow(void ** p, uint32_t * cap, uint64_t need, size_t elem) {
    if (need <= *cap) return true;
    if (need > UINT32_MAX / 2) return false;
    uint64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void * d = GGML_REALLOC(*p, (size_t) c * elem);
    if (!d) return false;
    *p = d;
    *cap = (uint32_t) c;
    return true;
}

static void gr_fail(struct gr_matcher * m, const char * why) {
    if (!m->failed) LLAMA_LOG_ERROR("grammar: %s; the grammar allows nothing further\n", why);
    m->failed = true;
}

static inline uint32_t gr_mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (uint32_t) h;
}

static bool gr_rehash_nodes(struct gr_matcher * m) {
    uint32_t cap = m->node_hash_cap ? m->node_hash_cap * 2 : 1024;
    uint32_t * h = GGML_CALLOC(cap, sizeof(uint32_t));
    if (!h) return false;
    for (uint32_t i = 1; i < m->n_nodes; i++) {
        uint32_t k = gr_mix((uint64_t) m->nodes[i].pos << 32 | m->nodes[i].parent) & (cap - 1);
        while (h[k]) k = (k + 1) & (cap - 1);
        h[k] = i + 1;
    }
    free(m->node_hash);
    m->node_hash = h;
    m->node_hash_cap = cap;
    return true;
}

// Interned stack (pos on top of parent); GR_UNSET on failure.
static uint32_t gr_node(struct gr_matcher * m, uint32_t pos, uint32_t parent) {
    if (m->n_nodes * 2 >= m->node_hash_cap && !gr_rehash_nodes(m)) {
        gr_fail(m, "out of memory");
        return GR_UNSET;
    }
    uint32_t k = gr_mix((uint64_t) pos << 32 | parent) & (m->node_hash_cap - 1);
    while (m->node_hash[k]) {
        const struct gr_node * n = &m->nodes[m->node_hash[k] - 1];
        if (n->pos == pos && n->parent == parent) return m->node_hash[k] - 1;
        k = (k + 1) & (m->node_hash_cap - 1);
    }
    if (m->n_nodes >= GR_MAX_NODES) {
        gr_fail(m, "too many grammar stacks");
        return GR_UNSET;
    }
    if (!gr_grow((void **) &m->nodes, &m->cap_nodes, m->n_nodes + 1, sizeof(struct gr_node))) {
        gr_fail(m, "out of memory");
        return GR_UNSET;
    }
    uint32_t id = m->n_nodes++;
    m->nodes[id].pos = pos;
    m->nodes[id].parent = parent;
    m->nodes[id].clo_off = 0;
    m->nodes[id].clo_n = GR_UNSET;
    m->node_hash[k] = id + 1;
    return id;
}

static bool gr_push_scratch(struct gr_matcher * m, uint32_t x) {
    if (!gr_grow((void **) &m->scratch, &m->cap_scratch, m->n_scratch + 1, sizeof(uint32_t))) {
        gr_fail(m, "out of memory");
        return false;
    }
    m->scratch[m->n_scratch++] = x;
    return true;
}

static bool gr_closure(struct gr_matcher * m, uint32_t id);

// Appends closure(id) to scratch.
static bool gr_add_closure(struct gr_matcher * m, uint32_t id) {
    if (id == GR_UNSET || !gr_closure(m, id)) return false;
    if (m->nodes[id].clo_n == GR_INPROG) return true; // a cycle adds nothing
    const uint32_t off = m->nodes[id].clo_off, n = m->nodes[id].clo_n;
    if (!gr_grow((void **) &m->scratch, &m->cap_scratch, (uint64_t) m->n_scratch + n, sizeof(uint32_t))) {
        gr_fail(m, "out of memory");
        return false;
    }
    memcpy(m->scratch + m->n_scratch, m->clo_pool + off, n * sizeof(uint32_t));
    m->n_scratch += n;
    return true;
}

// Sorts and dedupes scratch[from..]; returns the new end.
static int gr_cmp_u32(const void * a, const void * b) {
    uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
    return x < y ? -1 : x > y;
}

static void gr_sort_unique(struct gr_matcher * m, uint32_t from) {
    uint32_t * s = m->scratch + from;
    uint32_t n = m->n_scratch - from;
    if (n < 2) return;
    if (n < 24) {
        for (uint32_t i = 1; i < n; i++) {
            uint32_t x = s[i], j = i;
            while (j > 0 && s[j - 1] > x) {
                s[j] = s[j - 1];
                j--;
            }
            s[j] = x;
        }
    } else {
        qsort(s, n, sizeof(uint32_t), gr_cmp_u32);
    }
    uint32_t k = 1;
    for (uint32_t i = 1; i < n; i++)
        if (s[i] != s[k - 1]) s[k++] = s[i];
    m->n_scratch = from + k;
}

// Computes (once) the stacks with a terminal on top that stack `id` expands to without
// consuming input: rule references are replaced by each alternative, finished rules pop.
static bool gr_closure(struct gr_matcher * m, uint32_t id) {
    struct gr_node * nd = &m->nodes[id];
    if (nd->clo_n < GR_INPROG) return true;
    if (nd->clo_n == GR_INPROG) return true; // a cycle adds nothing (left recursion is refused at parse time)
    if (m->depth >= GR_MAX_DEPTH) {
        gr_fail(m, "grammar nesting too deep");
        return false;
    }
    nd->clo_n = GR_INPROG;
    m->depth++;
    const uint32_t from = m->n_scratch;
    bool ok = true;
    const uint32_t pos = nd->pos, parent = nd->parent;
    if (id == 0) {
        ok = gr_push_scratch(m, 0);
    } else {
        const struct gr_elem e = m->g->elems[pos];
        if (e.type == GR_END || e.type == GR_ALT) {
            ok = gr_add_closure(m, parent);
        } else if (e.type == GR_REF) {
            const uint32_t nt = m->g->elems[pos + 1].type;
            uint32_t cont = (nt == GR_END || nt == GR_ALT) ? parent : gr_node(m, pos + 1, parent);
            ok = cont != GR_UNSET;
            const uint32_t a0 = m->g->rule_alts[e.value], na = m->g->rule_n_alts[e.value];
            for (uint32_t a = 0; ok && a < na; a++) {
                ok = gr_add_closure(m, gr_node(m, m->g->alts[a0 + a], cont));
            }
        } else {
            ok = gr_push_scratch(m, id);
        }
    }
    m->depth--;
    if (!ok) {
        m->nodes[id].clo_n = GR_UNSET;
        m->n_scratch = from;
        return false;
    }
    gr_sort_unique(m, from);
    const uint32_t n = m->n_scratch - from;
    if (!gr_grow((void **) &m->clo_pool, &m->cap_clo, (uint64_t) m->n_clo + n, sizeof(uint32_t))) {
        m->nodes[id].clo_n = GR_UNSET;
        m->n_scratch = from;
        gr_fail(m, "out of memory");
        return false;
    }
    memcpy(m->clo_pool + m->n_clo, m->scratch + from, n * sizeof(uint32_t));
    m->nodes[id].clo_off = m->n_clo;
    m->nodes[id].clo_n = n;
    m->n_clo += n;
    m->n_scratch = from;
    return true;
}

static bool gr_rehash_states(struct gr_matcher * m);

static uint32_t gr_state_hash(const uint32_t * s, uint32_t n, uint32_t utf8) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ utf8;
    for (uint32_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ull + (h >> 29);
    return gr_mix(h);
}

static bool gr_rehash_states(struct gr_matcher * m) {
    uint32_t cap = m->state_hash_cap ? m->state_hash_cap * 2 : 256;
    uint32_t * h = GGML_CALLOC(cap, sizeof(uint32_t));
    if (!h) return false;
    for (uint32_t i = 0; i < m->n_states; i++) {
        const struct gr_state * s = &m->states[i];
        uint32_t k = gr_state_hash(m->set_pool + s->off, s->n, s->utf8) & (cap - 1);
        while (h[k]) k = (k + 1) & (cap - 1);
        h[k] = i + 1;
    }
    free(m->state_hash);
    m->state_hash = h;
    m->state_hash_cap = cap;
    return true;
}

// Interns the sorted, unique set scratch[from..] with pending utf8; pops it from scratch.
static int32_t gr_intern_state(struct gr_matcher * m, uint32_t from, uint32_t utf8) {
    const uint32_t n = m->n_scratch - from;
    m->n_scratch = from;
    if (n == 0) return GR_DEAD;
    const uint32_t * s = m->scratch + from;
    if (m->n_states * 2 >= m->state_hash_cap && !gr_rehash_states(m)) {
        gr_fail(m, "out of memory");
        return GR_DEAD;
    }
    uint32_t k = gr_state_hash(s, n, utf8) & (m->state_hash_cap - 1);
    while (m->state_hash[k]) {
        const struct gr_state * st = &m->states[m->state_hash[k] - 1];
        if (st->n == n && st->utf8 == utf8 && memcmp(m->set_pool + st->off, s, n * sizeof(uint32_t)) == 0) {
            return (int32_t) (m->state_hash[k] - 1);
        }
        k = (k + 1) & (m->state_hash_cap - 1);
    }
    if (m->n_states >= GR_MAX_STATES) {
        gr_fail(m, "too many grammar states");
        return GR_DEAD;
    }
    if (!gr_grow((void **) &m->states, &m->cap_states, m->n_states + 1, sizeof(struct gr_state)) ||
        !gr_grow((void **) &m->set_pool, &m->cap_set, (uint64_t) m->n_set + n, sizeof(uint32_t))) {
        gr_fail(m, "out of memory");
        return GR_DEAD;
    }
    s = m->scratch + from; // scratch did not move, but keep the pointer honest
    struct gr_state * st = &m->states[m->n_states];
    st->off = m->n_set;
    st->n = n;
    st->utf8 = utf8;
    st->mask = GR_UNSET;
    st->next = NULL;
    st->can_end = utf8 == 0 && s[0] == 0; // node 0 (empty stack) sorts first
    memcpy(m->set_pool + m->n_set, s, n * sizeof(uint32_t));
    m->n_set += n;
    m->state_hash[k] = m->n_states + 1;
    return (int32_t) m->n_states++;
}

// Whether class c can match a code point in [lo, hi] (the completions of a partial UTF-8 sequence).
static bool gr_class_partial(const struct gr_grammar * g, uint32_t c, uint32_t lo, uint32_t hi) {
    const struct gr_class * k = &g->classes[c];
    const uint32_t * r = g->ranges + 2 * k->off;
    if (!k->negated) {
        for (uint32_t i = 0; i < k->n; i++)
            if (r[2 * i] <= hi && r[2 * i + 1] >= lo) return true;
        return false;
    }
    for (uint32_t i = 0; i < k->n; i++)
        if (r[2 * i] <= lo && r[2 * i + 1] >= hi) return false;
    return true;
}

// The state after byte b (computed on first use).
static int32_t gr_step(struct gr_matcher * m, int32_t s, uint8_t b) {
    if (!m->states[s].next) {
        int32_t * t = GGML_MALLOC(256 * sizeof(int32_t));
        if (!t) {
            gr_fail(m, "out of memory");
            return GR_DEAD;
        }
        for (int i = 0; i < 256; i++) t[i] = -2;
        m->states[s].next = t;
    }
    int32_t r = m->states[s].next[b];
    if (r != -2) return r;
    // pending UTF-8: total length << 26 | remaining bytes << 24 | value so far. Overlong forms,
    // surrogates and code points past U+10FFFF are refused byte by byte, as soon as they show.
    const uint32_t pend = m->states[s].utf8;
    uint32_t len = pend >> 26, remain = (pend >> 24) & 3, value = pend & 0xFFFFFF;
    bool complete = false, bad = false;
    if (remain == 0) {
        if (b < 0x80) {
            value = b;
            complete = true;
        } else if (b >= 0xC2 && b <= 0xDF) {
            value = b & 0x1F;
            remain = 1;
            len = 2;
        } else if ((b >> 4) == 14) {
            value = b & 0x0F;
            remain = 2;
            len = 3;
        } else if (b >= 0xF0 && b <= 0xF4) {
            value = b & 0x07;
            remain = 3;
            len = 4;
        } else
            bad = true;
    } else if ((b & 0xC0) != 0x80) {
        bad = true;
    } else {
        if (len - remain == 1) { // first continuation byte: the lead's range checks
            if (len == 3 && value == 0 && b < 0xA0) bad = true;      // overlong
            if (len == 3 && value == 0xD && b > 0x9F) bad = true;    // surrogate
            if (len == 4 && value == 0 && b < 0x90) bad = true;      // overlong
            if (len == 4 && value == 4 && b > 0x8F) bad = true;      // past U+10FFFF
        }
        value = value << 6 | (b & 0x3F);
        if (--remain == 0) complete = true;
    }
    if (bad) {
        m->states[s].next[b] = GR_DEAD;
        return GR_DEAD;
    }
    const uint32_t from = m->n_scratch;
    const uint32_t n = m->states[s].n;
    bool ok = true;
    if (complete) {
        for (uint32_t i = 0; i < n && ok; i++) {
            const uint32_t id = m->set_pool[m->states[s].off + i];
            if (id == 0) continue;
            const uint32_t pos = m->nodes[id].pos;
            const struct gr_elem e = m->g->elems[pos];
            if (e.type != GR_CLASS || !gr_class_match(m->g, e.value, value)) continue;
            ok = gr_add_closure(m, gr_node(m, pos + 1, m->nodes[id].parent));
        }
        if (ok) gr_sort_unique(m, from);
    } else {
        static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 }; // shortest form per length
        uint32_t lo = value << (6 * remain);
        const uint32_t hi = lo | ((1u << (6 * remain)) - 1);
        if (lo < min_cp[len]) lo = min_cp[len];
        for (uint32_t i = 0; i < n && ok; i++) {
            const uint32_t id = m->set_pool[m->states[s].off + i];
            if (id == 0) continue;
            const struct gr_elem e = m->g->elems[m->nodes[id].pos];
            if (e.type == GR_CLASS && gr_class_partial(m->g, e.value, lo, hi)) ok = gr_push_scratch(m, id);
        }
    }
    if (!ok) {
        m->n_scratch = from;
        return GR_DEAD;
    } // failed: not cached, logged
    r = gr_intern_state(m, from, complete ? 0 : (len << 26 | remain << 24 | value));
    m->states[s].next[b] = r;
    return r;
}

// ---------------------------------------------------------------------------------------------
// public matcher API

static bool gr_matcher_init_start(struct gr_matcher * m) {
    if (gr_node(m, UINT32_MAX, 0) != 0) return false; // node 0: the empty stack
    const uint32_t from = m->n_scratch;
    const uint32_t a0 = m->g->rule_alts[m->g->root], na = m->g->rule_n_alts[m->g->root];
    for (uint32_t a = 0; a < na; a++) {
        if (!gr_add_closure(m, gr_node(m, m->g->alts[a0 + a], 0))) return false;
    }
    gr_sort_unique(m, from);
    m->start = gr_intern_state(m, from, 0);
    m->cur = m->start;
    return m->start != GR_DEAD;
}

struct gr_matcher * gr_matcher_new(struct gr_grammar * g, struct gr_vocab * v) {
    struct gr_matcher * m = GGML_CALLOC(1, sizeof(*m));
    if (!m) {
        LLAMA_LOG_ERROR("grammar: out of memory\n");
        return NULL;
    }
    m->g = gr_grammar_ref(g);
    m->v = gr_vocab_ref(v);
    m->start = m->cur = GR_DEAD;
    if (v) {
        m->mask_words = (uint32_t) ((v->n_tokens + 63) / 64);
        uint32_t maxd = 0;
        for (uint32_t i = 0; i < v->n_nodes; i++)
            if (v->depth[i] > maxd) maxd = v->depth[i];
        m->walk = GGML_MALLOC(((size_t) maxd + 1) * sizeof(int32_t));
        if (!m->walk) {
            gr_matcher_free(m);
            LLAMA_LOG_ERROR("grammar: out of memory\n");
            return NULL;
        }
    }
    if (!gr_matcher_init_start(m)) {
        LLAMA_LOG_ERROR("grammar: could not build the start state\n");
        gr_matcher_free(m);
        return NULL;
    }
    return m;
}

struct gr_matcher * gr_matcher_clone(const struct gr_matcher * src) {
    // Rebuilding the tables is cheaper to get right than copying them: the copy starts with
    // empty caches and re-interns the current state's stacks.
    struct gr_matcher * m = gr_matcher_new(src->g, src->v);
    if (!m || src->cur == src->start) return m;
    if (src->cur == GR_DEAD) {
        m->cur = GR_DEAD;
        m->failed = src->failed;
        return m;
    }
    const struct gr_state * st = &src->states[src->cur];
    const uint32_t from = m->n_scratch;
    bool ok = true;
    for (uint32_t i = 0; i < st->n && ok; i++) {
        // copy the stack bottom-up: collect positions, then push in order
        uint32_t id = src->set_pool[st->off + i], depth = 0;
        for (uint32_t x = id; x != 0; x = src->nodes[x].parent) depth++;
        uint32_t * path = GGML_MALLOC(((size_t) depth + 1) * sizeof(uint32_t));
        if (!path) {
            ok = false;
            break;
        }
        uint32_t k = depth;
        for (uint32_t x = id; x != 0; x = src->nodes[x].parent) path[--k] = src->nodes[x].pos;
        uint32_t node = 0;
        for (uint32_t j = 0; j < depth && node != GR_UNSET; j++) node = gr_node(m, path[j], node);
        free(path);
        ok = node != GR_UNSET && gr_push_scratch(m, node);
    }
    if (!ok) {
        gr_matcher_free(m);
        LLAMA_LOG_ERROR("grammar: out of memory cloning\n");
        return NULL;
    }
    gr_sort_unique(m, from);
    m->cur = gr_intern_state(m, from, st->utf8);
    return m;
}

void gr_matcher_free(struct gr_matcher * m) {
    if (!m) return;
    for (uint32_t i = 0; i < m->n_states; i++) free(m->states[i].next);
    free(m->nodes);
    free(m->node_hash);
    free(m->clo_pool);
    free(m->states);
    free(m->state_hash);
    free(m->set_pool);
    free(m->masks);
    free(m->scratch);
    free(m->walk);
    gr_grammar_unref(m->g);
    gr_vocab_unref(m->v);
    free(m);
}

void gr_matcher_kill(struct gr_matcher * m) { m->cur = GR_DEAD; }

void gr_matcher_reset(struct gr_matcher * m) {
    m->cur = m->start;
    m->failed = false;
}

bool gr_matcher_can_end(const struct gr_matcher * m) { return m->cur != GR_DEAD && m->states[m->cur].can_end; }

bool gr_matcher_dead(const struct gr_matcher * m) { return m->cur == GR_DEAD; }

const uint64_t * gr_matcher_mask(struct gr_matcher * m) {
    if (!m->v) return NULL;
    const uint32_t W = m->mask_words;
    if (m->cur == GR_DEAD) {
        if (!gr_grow((void **) &m->masks, &m->cap_masks, (uint64_t) (m->n_masks + 1) * W, sizeof(uint64_t))) return NULL;
        memset(m->masks + (size_t) m->n_masks * W, 0, W * sizeof(uint64_t));
        return m->masks + (size_t) m->n_masks * W; // scratch slot past the cached masks
    }
    const int32_t s0 = m->cur;
    if (m->states[s0].mask != GR_UNSET) return m->masks + (size_t) m->states[s0].mask * W;
    if ((size_t) (m->n_masks + 1) * W * sizeof(uint64_t) > GR_MASK_BYTES) { // drop the cache
        for (uint32_t i = 0; i < m->n_states; i++) m->states[i].mask = GR_UNSET;
        m->n_masks = 0;
    }
    if (!gr_grow((void **) &m->masks, &m->cap_masks, (uint64_t) (m->n_masks + 1) * W, sizeof(uint64_t))) {
        gr_fail(m, "out of memory");
        return NULL;
    }
    const uint32_t idx = m->n_masks;
    uint64_t * bits = m->masks + (size_t) idx * W;
    memset(bits, 0, W * sizeof(uint64_t));
    const struct gr_vocab * v = m->v;
    int32_t * walk = m->walk;
    walk[0] = s0;
    const uint8_t * byte = v->byte;
    const uint16_t * depth = v->depth;
    for (uint32_t i = 0; i < v->n_nodes;) {
        const uint32_t d = depth[i];
        const int32_t p = walk[d - 1];
        const int32_t * nx = m->states[p].next;
        int32_t s = nx ? nx[byte[i]] : -2;
        if (s == -2) s = gr_step(m, p, byte[i]);
        if (s < 0) {
            i = v->skip[i];
            continue;
        }
        walk[d] = s;
        for (uint32_t k = v->tok_off[i]; k < v->tok_off[i + 1]; k++) {
            const llama_token t = v->toks[k];
            bits[t >> 6] |= 1ull << (t & 63);
        }
        i++;
    }
    bits = m->masks + (size_t) idx * W; // gr_step does not move masks, but be safe
    if (m->g->has_tokens && m->states[s0].utf8 == 0) {
        const struct gr_state * st = &m->states[s0];
        for (uint32_t i = 0; i < st->n; i++) {
            const uint32_t id = m->set_pool[st->off + i];
            if (id == 0) continue;
            const struct gr_elem e = m->g->elems[m->nodes[id].pos];
            if (e.type == GR_TOKEN && e.value < (uint32_t) v->n_tokens) {
                bits[e.value >> 6] |= 1ull << (e.value & 63);
            } else if (e.type == GR_TOKEN_NOT) {
                for (int32_t t = 0; t < v->n_tokens; t++) {
                    if (!v->eog[t] && (uint32_t) t != e.value) bits[t >> 6] |= 1ull << (t & 63);
                }
            }
        }
    }
    m->states[s0].mask = idx;
    m->n_masks++;
    return bits;
}

static int32_t gr_run_bytes(struct gr_matcher * m, int32_t s, const uint8_t * b, size_t n) {
    for (size_t i = 0; i < n && s >= 0; i++) {
        const int32_t * nx = m->states[s].next;
        int32_t r = nx ? nx[b[i]] : -2;
        s = r == -2 ? gr_step(m, s, b[i]) : r;
    }
    return s;
}

bool gr_matcher_accept_bytes(struct gr_matcher * m, const char * bytes, size_t n) {
    if (m->cur == GR_DEAD) return false;
    int32_t s = gr_run_bytes(m, m->cur, (const uint8_t *) bytes, n);
    if (s < 0) return false;
    m->cur = s;
    return true;
}

bool gr_matcher_accept_token(struct gr_matcher * m, llama_token t) {
    const struct gr_vocab * v = m->v;
    if (!v || m->cur == GR_DEAD || t < 0 || t >= v->n_tokens) return false;
    if (v->eog[t] && !m->g->has_tokens) return false; // end of generation is the caller's to handle
    const uint32_t off = v->piece_off[t], len = v->piece_off[t + 1] - off;
    int32_t s = len ? gr_run_bytes(m, m->cur, (const uint8_t *) v->pieces + off, len) : GR_DEAD;
    if (m->g->has_tokens && m->states[m->cur].utf8 == 0 && (s < 0 || m->states[s].utf8 == 0)) {
        const uint32_t from = m->n_scratch;
        bool ok = true;
        if (s >= 0) { // union with the text match
            const struct gr_state * st = &m->states[s];
            for (uint32_t i = 0; i < st->n && ok; i++) ok = gr_push_scratch(m, m->set_pool[st->off + i]);
        }
        const uint32_t base = m->n_scratch;
        const struct gr_state * cs = &m->states[m->cur];
        const uint32_t n = cs->n, coff = cs->off;
        for (uint32_t i = 0; i < n && ok; i++) {
            const uint32_t id = m->set_pool[coff + i];
            if (id == 0) continue;
            const struct gr_elem e = m->g->elems[m->nodes[id].pos];
            bool hit = (e.type == GR_TOKEN && e.value == (uint32_t) t) ||
                (e.type == GR_TOKEN_NOT && e.value != (uint32_t) t && !v->eog[t]);
            if (hit) ok = gr_add_closure(m, gr_node(m, m->nodes[id].pos + 1, m->nodes[id].parent));
        }
        if (!ok) {
            m->n_scratch = from;
            m->cur = GR_DEAD;
            return false;
        }
        if (m->n_scratch > base) {
            gr_sort_unique(m, from);
            s = gr_intern_state(m, from, 0);
        } else {
            m->n_scratch = from;
        }
    }
    if (s < 0) return false;
    m->cur = s;
    return true;
}
