// bench_vec_dot.c — per type: bits per weight, round-trip error, dot-product error and
// vec_dot speed of every kernel set this CPU runs, relative to the portable one.
// Built and run by scripts/bench_vec_dot.py (links the static library of a build folder).
//
// Error figures use the smooth test signal x[i] = 0.1 + 2 cos(i + offset) over 32*128 values:
//   rmse  = sqrt(sum (x - dequant(quant(x)))^2) / n
//   dot   = |vec_dot(quant(x), quant_act(y)) - dot(x, y)| / n
// Speed (thread CPU time, so other load on the machine does not count): one thread, rows of 4096 weights, a weight matrix of `rows` rows (default sized to
// stay in L2, i.e. compute-bound) dotted with one activation row, best of several runs.
#include "ggml-cpu/quants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Thread CPU time: on a shared machine, time spent descheduled must not count.
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static const enum ggml_type types[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,    GGML_TYPE_BF16,   GGML_TYPE_Q8_0,  GGML_TYPE_Q6_K,  GGML_TYPE_Q5_1,
    GGML_TYPE_Q5_0, GGML_TYPE_Q5_K,   GGML_TYPE_Q4_1,   GGML_TYPE_Q4_0,  GGML_TYPE_Q4_K,  GGML_TYPE_Q3_K,
    GGML_TYPE_Q2_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_MXFP4, GGML_TYPE_TQ2_0, GGML_TYPE_TQ1_0,
};

// True if name is one of the comma-separated names in list.
static bool type_listed(const char * list, const char * name) {
    const size_t len = strlen(name);
    for (const char * p = list; *p;) {
        const char * e = strchr(p, ',');
        const size_t l = e ? (size_t) (e - p) : strlen(p);
        if (l == len && strncmp(p, name, len) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

// Seconds per call of vec_dot over all rows (best of `reps` timed passes).
static double time_rows(ggml_vec_dot_t dot, int n, int rows, const char * w, size_t row_bytes, const void * act, int reps,
                        float * sink) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        for (int i = 0; i < rows; i++) {
            float s;
            dot(n, &s, w + (size_t) i * row_bytes, act);
            *sink += s;
        }
        const double t = now_s() - t0;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char ** argv) {
    const int n = 4096;
    const int rows = argc > 1 ? atoi(argv[1]) : 128;
    const int reps = argc > 2 ? atoi(argv[2]) : 5;
    const char * only = argc > 3 ? argv[3] : NULL; // comma-separated type names, e.g. "q4_0,q8_0"
    const int test_n = 32 * 128;
    float sink = 0.0f;

    float * xs = malloc(sizeof(float) * (size_t) test_n);
    float * ys = malloc(sizeof(float) * (size_t) test_n);
    float * back = malloc(sizeof(float) * (size_t) test_n);
    for (int i = 0; i < test_n; i++) {
        xs[i] = 0.1f + 2.0f * cosf((float) i);
        ys[i] = 0.1f + 2.0f * cosf((float) i + 1.0f);
    }
    double dot_ref = 0.0;
    for (int i = 0; i < test_n; i++) dot_ref += (double) xs[i] * (double) ys[i];

    printf("kernel sets:");
    for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
        if (ggml_cpu_kernel_variant_available((enum ggml_cpu_kernel_variant) v)) {
            printf(" %s", ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v));
        }
    }
    printf("; speed: %d rows x %d, 1 thread, best of %d\n\n", rows, n, reps);
    printf("| type | bits/weight | rmse | dot error | quantize_ref Mweights/s | portable GB/s |");
    for (int v = 1; v < GGML_CPU_KERNELS_COUNT; v++) {
        if (ggml_cpu_kernel_variant_available((enum ggml_cpu_kernel_variant) v)) {
            printf(" %s GB/s (x portable) |", ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v));
        }
    }
    printf("\n|---|---|---|---|---|---|");
    for (int v = 1; v < GGML_CPU_KERNELS_COUNT; v++) {
        if (ggml_cpu_kernel_variant_available((enum ggml_cpu_kernel_variant) v)) printf("---|");
    }
    printf("\n");

    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        const enum ggml_type t = types[ti];
        const struct ggml_type_traits * tt = ggml_get_type_traits(t);
        if (only && !type_listed(only, tt->type_name)) continue;
        const struct ggml_type_traits_cpu * gen = ggml_get_type_traits_cpu_variant(t, GGML_CPU_KERNELS_PORTABLE);
        const enum ggml_type vt = gen->vec_dot_type;
        const struct ggml_type_traits * vtt = ggml_get_type_traits(vt);
        const struct ggml_type_traits_cpu * vgen = ggml_get_type_traits_cpu_variant(vt, GGML_CPU_KERNELS_PORTABLE);
        const size_t row_bytes = (size_t) (n / tt->blck_size) * tt->type_size;
        const size_t act_bytes = (size_t) (n / vtt->blck_size) * vtt->type_size;
        const double bpw = 8.0 * (double) tt->type_size / (double) tt->blck_size;

        // accuracy on the smooth signal
        const size_t tq_bytes = (size_t) (test_n / tt->blck_size) * tt->type_size;
        const size_t ta_bytes = (size_t) (test_n / vtt->blck_size) * vtt->type_size;
        void * tq = malloc(tq_bytes);
        void * ta = malloc(ta_bytes);
        tt->from_float_ref(xs, tq, test_n);
        tt->to_float(tq, back, test_n);
        double se = 0.0;
        for (int i = 0; i < test_n; i++) se += ((double) xs[i] - back[i]) * ((double) xs[i] - back[i]);
        vgen->from_float(ys, ta, test_n);
        float dq;
        gen->vec_dot(test_n, &dq, tq, ta);
        const double rmse = sqrt(se) / test_n;
        const double dot_err = fabs((double) dq - dot_ref) / test_n;
        free(tq);
        free(ta);

        // speed
        char * w = malloc(row_bytes * (size_t) rows);
        void * act = malloc(act_bytes);
        float * rowf = malloc(sizeof(float) * (size_t) n);
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < n; i++) rowf[i] = sinf((float) (i * 7 + r * 13)) * 0.5f;
            tt->from_float_ref(rowf, w + (size_t) r * row_bytes, n);
        }
        for (int i = 0; i < n; i++) rowf[i] = cosf((float) i * 0.37f);
        vgen->from_float(rowf, act, n);

        // reference quantizer speed (what a model quantizer pays per weight)
        double tq_best = 1e30;
        for (int r = 0; r < 3; r++) {
            const double t0 = now_s();
            for (int rr = 0; rr < 16; rr++) tt->from_float_ref(rowf, w + (size_t) (rr % rows) * row_bytes, n);
            const double tq = now_s() - t0;
            if (tq < tq_best) tq_best = tq;
        }
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < n; i++) rowf[i] = sinf((float) (i * 7 + r * 13)) * 0.5f;
            tt->from_float_ref(rowf, w + (size_t) r * row_bytes, n);
        }
        printf("| %s | %.3g | %.6f | %.6f | %.0f |", tt->type_name, bpw, rmse, dot_err, 16.0 * n / tq_best / 1e6);
        double t_gen = 0.0;
        for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
            const struct ggml_type_traits_cpu * var = ggml_get_type_traits_cpu_variant(t, (enum ggml_cpu_kernel_variant) v);
            if (!var) continue;
            time_rows(var->vec_dot, n, rows, w, row_bytes, act, 1, &sink); // warm up
            const double tsec = time_rows(var->vec_dot, n, rows, w, row_bytes, act, reps, &sink);
            const double gbs = (double) row_bytes * rows / tsec / 1e9;
            if (v == 0) {
                t_gen = tsec;
                printf(" %.2f |", gbs);
            } else {
                printf(" %.2f (%.1fx) |", gbs, t_gen / tsec);
            }
        }
        printf("\n");
        free(w);
        free(act);
        free(rowf);
    }

    // activation quantizers, per 4096-element row
    printf("\n| activation quantizer | portable us/row |");
    for (int v = 1; v < GGML_CPU_KERNELS_COUNT; v++) {
        if (ggml_cpu_kernel_variant_available((enum ggml_cpu_kernel_variant) v)) {
            printf(" %s us/row |", ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v));
        }
    }
    printf("\n|---|---|");
    for (int v = 1; v < GGML_CPU_KERNELS_COUNT; v++) {
        if (ggml_cpu_kernel_variant_available((enum ggml_cpu_kernel_variant) v)) printf("---|");
    }
    printf("\n");
    const enum ggml_type acts[] = { GGML_TYPE_Q8_0, GGML_TYPE_Q8_1, GGML_TYPE_Q8_K, GGML_TYPE_F16, GGML_TYPE_BF16 };
    float * xrow = malloc(sizeof(float) * (size_t) n);
    for (int i = 0; i < n; i++) xrow[i] = sinf((float) i);
    void * out = malloc((size_t) n * 4);
    for (size_t ai = 0; ai < sizeof(acts) / sizeof(acts[0]); ai++) {
        if (only && !type_listed(only, ggml_get_type_traits(acts[ai])->type_name)) continue;
        printf("| %s |", ggml_get_type_traits(acts[ai])->type_name);
        for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
            const struct ggml_type_traits_cpu * var =
                ggml_get_type_traits_cpu_variant(acts[ai], (enum ggml_cpu_kernel_variant) v);
            if (!var) continue;
            double best = 1e30;
            for (int r = 0; r < reps; r++) {
                const double t0 = now_s();
                for (int k = 0; k < 64; k++) var->from_float(xrow, out, n);
                const double tt = (now_s() - t0) / 64;
                if (tt < best) best = tt;
            }
            printf(" %.2f |", best * 1e6);
        }
        printf("\n");
    }
    free(out);
    free(xrow);
    free(xs);
    free(ys);
    free(back);
    return sink == 12345.0f; // keeps the dots from being optimised away
}
