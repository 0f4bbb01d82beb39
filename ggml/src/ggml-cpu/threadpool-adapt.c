// threadpool-adapt.c — the adaptive thread count (see threadpool-impl.h): per kind of graph,
// running means of one-thread and n_threads computations and the choice between them.
#include "threadpool-impl.h"

// A graph's kind: its size and the shapes of its first and last nodes (a token-generation
// step stays one kind while the KV cache grows; a prompt batch is another).
static uint64_t ggml_adapt_key(const struct ggml_cgraph * g) {
    uint64_t h = 1469598103934665603ull;
    const uint64_t v[] = {
        (uint64_t) g->n_nodes,
        (uint64_t) g->n_leafs,
        g->n_nodes ? (uint64_t) g->nodes[0]->ne[0] : 0,
        g->n_nodes ? (uint64_t) g->nodes[0]->ne[1] : 0,
        g->n_nodes ? (uint64_t) g->nodes[g->n_nodes - 1]->ne[0] : 0,
        g->n_nodes ? (uint64_t) g->nodes[g->n_nodes - 1]->ne[1] : 0,
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        h = (h ^ v[i]) * 1099511628211ull;
    }
    return h ? h : 1;
}

struct ggml_adapt_entry * ggml_adapt_lookup(struct ggml_threadpool * tp, const struct ggml_cgraph * g, int nth) {
    if (tp->adapt_nth != nth) {
        memset(tp->adapt_slot, 0, sizeof(tp->adapt_slot)); // measured with another count
        tp->adapt_nth = nth;
    }
    const uint64_t key = ggml_adapt_key(g);
    struct ggml_adapt_entry * victim = &tp->adapt_slot[0];
    tp->adapt_clock++;
    for (int i = 0; i < GGML_ADAPT_SLOTS; i++) {
        struct ggml_adapt_entry * e = &tp->adapt_slot[i];
        if (e->key == key) {
            e->last_use = tp->adapt_clock;
            return e;
        }
        if (e->last_use < victim->last_use) {
            victim = e;
        }
    }
    ggml_adapt_entry_init(victim, key);
    victim->last_use = tp->adapt_clock;
    return victim;
}

void ggml_adapt_entry_init(struct ggml_adapt_entry * e, uint64_t key) {
    memset(e, 0, sizeof(*e));
    e->key = key;
    e->choice = 1;
    e->last_arm = -1;
    e->interval = GGML_ADAPT_PROBE_MIN;
    e->countdown = GGML_ADAPT_PROBE_MIN;
}

// Which count the next computation of e's kind runs with: 0 one thread, 1 n_threads.
int ggml_adapt_arm(struct ggml_adapt_entry * e) {
    if (e->n[1] < 3) {
        return 1;
    }
    if (e->choice == 1 && (e->quiet || e->lt[1] < log(GGML_ADAPT_MIN_NS))) {
        // The threads kept meeting promptly, or the graph is too quick to matter.
        return 1;
    }
    if (e->n[0] < 2) {
        return 0;
    }
    if (e->retry > 0) {
        e->retry--;
        return !e->choice;
    }
    if (--e->countdown <= 0) {
        e->retry = 1; // two computations: the first after a switch is not counted
        return !e->choice;
    }
    return e->choice;
}

void ggml_adapt_record(struct ggml_adapt_entry * e, int arm, uint64_t ns, uint64_t blocked) {
    if (arm != e->last_arm) {
        // The first computation of a kind, or the first after a change of count, pays for
        // fresh pages, cold caches or a worker still waking up (2-5x a later one): counted,
        // such samples kept TinyLlama's decoding on one thread for most of 64 tokens, and a
        // server's on one thread after every re-try of two.
        e->last_arm = arm;
        return;
    }
    const double lx = log((double) (ns ? ns : 1));
    // The count not in use is only sampled by re-tries: weigh those more so a change in the
    // machine's load is noticed after one or two.
    const double alpha = arm == e->choice ? GGML_ADAPT_ALPHA : 2 * GGML_ADAPT_ALPHA;
    // One slow computation (a host hiccup, a burst of other work) moves the mean up by at most
    // alpha * log(1.5): unclipped, single 3x samples in a server's decoding flipped it to one
    // thread again and again (SmolLM2 behind an HTTP server: 233 of 408 tokens on one thread,
    // 147 t/s against 167 with the count fixed). A lasting change still moves it in a few; a
    // fast computation is never a fluke, and counts in full (the machine got quiet again).
    const double d = lx - e->lt[arm];
    e->lt[arm] = e->n[arm] == 0 ? lx : e->lt[arm] + alpha * (d > GGML_ADAPT_CLIP ? GGML_ADAPT_CLIP : d);
    e->n[arm]++;
    if (arm == 1) {
        // Threads that are on CPUs at the same time meet within microseconds; sleeping at
        // barriers means a partner was descheduled (or a node was badly unbalanced).
        e->quiet = (double) blocked <= GGML_ADAPT_QUIET * (double) ns;
    }
    if (e->n[0] < 2 || e->n[1] < 3) {
        return;
    }
    const int other = !e->choice;
    const bool flip = e->lt[other] < e->lt[e->choice] - GGML_ADAPT_MARGIN;
    if (arm == other || e->countdown <= 0) {
        // A re-try of the other count just ended: wait longer before the next one while it loses.
        e->interval =
            flip ? GGML_ADAPT_PROBE_MIN : (e->interval * 2 > GGML_ADAPT_PROBE_MAX ? GGML_ADAPT_PROBE_MAX : e->interval * 2);
        e->countdown = e->interval;
    }
    if (flip) {
        e->choice = other;
        e->countdown = e->interval;
    }
}
