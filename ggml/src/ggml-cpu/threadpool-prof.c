// threadpool-prof.c — GGML_PROFILE: the counters the pool fills and the table printed at exit.
#include "threadpool-impl.h"

struct ggml_prof_state g_prof;

static void ggml_prof_key_name(int key, char * buf, size_t n) {
    if (key >= GGML_OP_COUNT) {
        snprintf(buf, n, "MUL_MAT %s", ggml_type_name((enum ggml_type)(key - GGML_OP_COUNT)));
    } else {
        snprintf(buf, n, "%s", ggml_op_name((enum ggml_op) key));
    }
}

static void ggml_prof_print(void) {
    if (g_prof.n_graphs == 0) {
        return;
    }
    const double ng = (double) g_prof.n_graphs;
    const int nt = g_prof.max_threads < GGML_PROF_THREADS ? g_prof.max_threads : GGML_PROF_THREADS;
    double run0 = 0.0;
    for (int k = 0; k < GGML_PROF_KEYS; k++) {
        run0 += (double) g_prof.slot[0][k].ns_run;
    }
    fprintf(
        stderr,
        "\nGGML_PROFILE: %llu graph computes, per compute: %.0f nodes (%.0f with work), %.0f node barriers, up to %d threads\n",
        (unsigned long long) g_prof.n_graphs, g_prof.n_nodes / ng, g_prof.n_work_nodes / ng, g_prof.n_barriers / ng, nt);
    fprintf(stderr,
            "per compute (us): %.1f in ggml_graph_compute = set-up %.1f + nodes + final join %.1f; "
            "%.1f between computes (graph build, allocation, caller)\n",
            g_prof.ns_total / ng / 1e3, g_prof.ns_setup / ng / 1e3, g_prof.ns_join / ng / 1e3,
            g_prof.n_graphs > 1 ? g_prof.ns_gap / (ng - 1) / 1e3 : 0.0);
    if (g_prof.n_adapt_single + g_prof.n_adapt_multi > 0) {
        fprintf(stderr,
                "adaptive thread count (GGML_THREADS_ADAPT): %llu computes with one thread, %llu with all "
                "(thread 0 slept %.1f us per compute at barriers)\n",
                (unsigned long long) g_prof.n_adapt_single, (unsigned long long) g_prof.n_adapt_multi,
                (double) g_prof.ns_blocked0 / (double) g_prof.n_graphs / 1e3);
    }
    fprintf(stderr, "%-16s %8s", "op", "nodes/g");
    for (int t = 0; t < nt; t++) {
        fprintf(stderr, "  t%d run us  wait us", t);
    }
    fprintf(stderr, "  %%run(t0)\n");
    for (int k = 0; k < GGML_PROF_KEYS; k++) {
        if (g_prof.slot[0][k].calls == 0) {
            continue;
        }
        char name[48];
        ggml_prof_key_name(k, name, sizeof(name));
        fprintf(stderr, "%-16s %8.1f", name, g_prof.slot[0][k].calls / ng);
        for (int t = 0; t < nt; t++) {
            fprintf(stderr, "  %9.1f %8.1f", g_prof.slot[t][k].ns_run / ng / 1e3, g_prof.slot[t][k].ns_wait / ng / 1e3);
        }
        fprintf(stderr, "  %7.1f\n", run0 > 0 ? 100.0 * g_prof.slot[0][k].ns_run / run0 : 0.0);
    }
}

void ggml_prof_init(void) {
    if (ggml_env()->profile) {
        g_prof.on = true;
        atexit(ggml_prof_print);
    }
}
