// test_vec_simd.c — the activation row kernels of every kernel set (vec.h) against a double
// reference: silu and swiglu for every row length 0..80 and a long row, at unaligned starts,
// inplace, with -inf/+inf/NaN and values where exp over- or underflows; and each kernel run
// on a row cut into pieces gives the same bits as on the whole row (threads split rows).
// Kernel sets this CPU cannot run are skipped (and said so).
#include "ggml-cpu/vec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_fail = 0;
static int n_check = 0;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        n_check++;                                               \
        if (!(cond)) {                                           \
            n_fail++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float rng_uniform(float lo, float hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float) ((rng_state >> 40) & 0xFFFFFF) / (float) 0x1000000;
}

static double silu_ref(double x) {
    if (isnan(x)) return x;
    if (x == -INFINITY) return -0.0;
    if (x == INFINITY) return x;
    return x / (1.0 + exp(-x));
}

// got within 2e-6 relative (or 1e-30 absolute) of want; NaN only where want is NaN, infinities exact.
static int close_to(float got, double want) {
    if (isnan(want)) return isnan(got);
    if (isnan(got)) return 0;
    if (isinf(want)) return got == want;
    return fabs((double) got - want) <= 2e-6 * fabs(want) + 1e-30;
}

#define MAXN 6000
static float g[MAXN + 16], u[MAXN + 16], y[MAXN + 16], y2[MAXN + 16];

static void fill(int n) {
    static const float special[] = { -INFINITY, INFINITY, NAN,    0.0f,    -0.0f,  88.0f,   -88.0f, 90.0f, -90.0f,
                                     87.5f,     -87.5f,   1e-30f, -1e-30f, 200.0f, -200.0f, 1e30f,  -1e30f };
    for (int i = 0; i < n; i++) {
        g[i] = rng_uniform(-12.0f, 12.0f);
        u[i] = rng_uniform(-3.0f, 3.0f);
    }
    // sprinkle the special values over the row, some of them into the tail lanes
    for (int i = 0; i < n; i++) {
        if (i % 7 == 3 || i == n - 1) g[i] = special[(i / 7 + n) % (int) (sizeof(special) / sizeof(special[0]))];
    }
}

static void check_set(enum ggml_cpu_kernel_variant v) {
    const struct ggml_cpu_vec_kernels * k = ggml_cpu_vec_kernels_get(v);
    const char * name = ggml_cpu_kernel_variant_name(v);
    int lens[90], nl = 0;
    for (int n = 0; n <= 80; n++) lens[nl++] = n;
    lens[nl++] = 1000;
    lens[nl++] = 5632;
    lens[nl++] = 5637;
    for (int li = 0; li < nl; li++) {
        const int n = lens[li];
        for (int off = 0; off < 3; off += 2) { // aligned and unaligned starts
            fill(n + off);
            const float *gp = g + off, *up = u + off;
            // silu
            y[off + n] = 12345.0f; // the element past the row must stay untouched
            k->silu_f32(n, y + off, gp);
            CHECK(y[off + n] == 12345.0f, "%s silu n=%d wrote past the row", name, n);
            for (int i = 0; i < n; i++) {
                CHECK(close_to(y[off + i], silu_ref(gp[i])), "%s silu n=%d i=%d x=%g: %g want %g", name, n, i, gp[i], y[off + i],
                      silu_ref(gp[i]));
            }
            // swiglu
            y[off + n] = 12345.0f;
            k->swiglu_f32(n, y + off, gp, up);
            CHECK(y[off + n] == 12345.0f, "%s swiglu n=%d wrote past the row", name, n);
            for (int i = 0; i < n; i++) {
                const double want = silu_ref(gp[i]) * (double) up[i];
                CHECK(close_to(y[off + i], want), "%s swiglu n=%d i=%d g=%g u=%g: %g want %g", name, n, i, gp[i], up[i],
                      y[off + i], want);
            }
            // the same row in pieces (cut at 16-element boundaries and elsewhere): same bits
            memset(y2, 0, sizeof(y2));
            for (int s = 0; s < n;) {
                const int len = s % 3 == 0 ? 16 : 5 + s % 11;
                const int m = len < n - s ? len : n - s;
                k->swiglu_f32(m, y2 + off + s, gp + s, up + s);
                s += m;
            }
            CHECK(memcmp(y + off, y2 + off, (size_t) n * sizeof(float)) == 0, "%s swiglu n=%d in pieces differs", name, n);
            // inplace: y = silu(y), y = silu(y) * u
            memcpy(y2 + off, gp, (size_t) n * sizeof(float));
            k->silu_f32(n, y2 + off, y2 + off);
            k->silu_f32(n, y + off, gp);
            CHECK(memcmp(y + off, y2 + off, (size_t) n * sizeof(float)) == 0, "%s silu n=%d inplace differs", name, n);
            memcpy(y2 + off, gp, (size_t) n * sizeof(float));
            k->swiglu_f32(n, y2 + off, y2 + off, up);
            k->swiglu_f32(n, y + off, gp, up);
            CHECK(memcmp(y + off, y2 + off, (size_t) n * sizeof(float)) == 0, "%s swiglu n=%d inplace differs", name, n);
        }
    }
}

int main(void) {
    const enum ggml_cpu_kernel_variant sets[] = { GGML_CPU_KERNELS_PORTABLE, GGML_CPU_KERNELS_AVX2, GGML_CPU_KERNELS_AVX512 };
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        if (!ggml_cpu_kernel_variant_available(sets[i])) {
            printf("skip %s: not available on this CPU/build\n", ggml_cpu_kernel_variant_name(sets[i]));
            continue;
        }
        check_set(sets[i]);
        printf("%s: checked\n", ggml_cpu_kernel_variant_name(sets[i]));
    }
    // the selected set's table is one of the tables above
    CHECK(ggml_cpu_vec_kernels_selected() == ggml_cpu_vec_kernels_get(ggml_cpu_kernel_variant_selected()), "selected table");
    printf("%d checks, %d failures\n", n_check, n_fail);
    return n_fail ? 1 : 0;
}
