// test_ops.c — every CPU kernel against a naive double-precision reference written here:
// small odd shapes, strided / permuted inputs, broadcasting, inplace variants, and 1, 2 and 3
// threads (shapes are large enough that the executor really splits the nodes).
#include "ggml.h"
#include "ggml-impl.h"
#include "ggml-cpu/cpu-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int g_fail = 0;
static int g_checks = 0;

#define EXPECT(cond, ...)                                        \
    do {                                                         \
        g_checks++;                                              \
        if (!(cond)) {                                           \
            g_fail++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
        }                                                        \
    } while (0)

// ---- random numbers ----

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { // uniform in [-1, 1)
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float) ((double) (g_rng >> 11) / (double) (1ull << 53) * 2.0 - 1.0);
}

// ---- element access honoring nb ----

static void * elem(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

static float get(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    void * p = elem(t, i0, i1, i2, i3);
    switch (t->type) {
        case GGML_TYPE_F32: return *(float *) p;
        case GGML_TYPE_F16: return ggml_fp16_to_fp32(*(ggml_fp16_t *) p);
        case GGML_TYPE_BF16: return ggml_bf16_to_fp32(*(ggml_bf16_t *) p);
        case GGML_TYPE_I32: return (float) *(int32_t *) p;
        default: return NAN;
    }
}

static void set(struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v) {
    void * p = elem(t, i0, i1, i2, i3);
    switch (t->type) {
        case GGML_TYPE_F32: *(float *) p = v; break;
        case GGML_TYPE_F16: *(ggml_fp16_t *) p = ggml_fp32_to_fp16(v); break;
        case GGML_TYPE_BF16: *(ggml_bf16_t *) p = ggml_fp32_to_bf16(v); break;
        case GGML_TYPE_I32: *(int32_t *) p = (int32_t) v; break;
        default: break;
    }
}

#define FOR4(t)                                         \
    for (int64_t i3 = 0; i3 < (t)->ne[3]; i3++)         \
        for (int64_t i2 = 0; i2 < (t)->ne[2]; i2++)     \
            for (int64_t i1 = 0; i1 < (t)->ne[1]; i1++) \
                for (int64_t i0 = 0; i0 < (t)->ne[0]; i0++)

static void fill(struct ggml_tensor * t, float lo, float hi) {
    FOR4(t) set(t, i0, i1, i2, i3, lo + (hi - lo) * 0.5f * (frand() + 1.0f));
}

// Float copy of t in logical order (ne0 fastest).
static float * snapshot(const struct ggml_tensor * t) {
    float * out = malloc((size_t) ggml_nelements(t) * sizeof(float));
    int64_t k = 0;
    FOR4(t) out[k++] = get(t, i0, i1, i2, i3);
    return out;
}

// Compares t (logical order) with ref; |got - ref| <= atol + rtol*|ref|; inf/-inf must match.
static void compare(const char * what, int nth, const struct ggml_tensor * t, const double * ref, double atol, double rtol) {
    int64_t k = 0, bad = 0;
    double worst = 0.0;
    int64_t worst_k = -1;
    FOR4(t) {
        const double g = get(t, i0, i1, i2, i3), r = ref[k];
        bool ok;
        if (isinf(r) || isnan(r))
            ok = (isnan(r) && isnan(g)) || g == r;
        else
            ok = fabs(g - r) <= atol + rtol * fabs(r);
        if (!ok) {
            bad++;
            const double e = fabs(g - r);
            if (!(e <= worst)) {
                worst = e;
                worst_k = k;
            }
        }
        k++;
    }
    g_checks++;
    if (bad) {
        g_fail++;
        fprintf(stderr, "FAIL %s (nth=%d): %lld/%lld elements off; worst at %lld: diff %g (ref %g)\n", what, nth, (long long) bad,
                (long long) k, (long long) worst_k, worst, worst_k >= 0 ? ref[worst_k] : 0.0);
    }
}

static struct ggml_context * new_ctx(void) {
    struct ggml_init_params p = { 96u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    if (!ctx) {
        fprintf(stderr, "ggml_init failed\n");
        exit(1);
    }
    return ctx;
}

static bool run(struct ggml_context * ctx, struct ggml_tensor * out, int nth) {
    if (!out) return false;
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS;
}

// A tensor of logical shape ne stored permuted: dims 1 and 2 swapped in memory (a strided view).
static struct ggml_tensor * new_permuted(struct ggml_context * ctx, enum ggml_type type, const int64_t ne[4]) {
    struct ggml_tensor * base = ggml_new_tensor_4d(ctx, type, ne[0], ne[2], ne[1], ne[3]);
    return ggml_permute(ctx, base, 0, 2, 1, 3);
}

// A tensor of shape ne whose rows are padded (row stride larger than the row) and whose
// elements are F32 with stride 2 floats when type is F32 (non-unit nb[0]).
static struct ggml_tensor * new_strided(struct ggml_context * ctx, enum ggml_type type, const int64_t ne[4]) {
    struct ggml_tensor * base = ggml_new_tensor_4d(ctx, type, 2 * ne[0] + 3, ne[1], ne[2], ne[3]);
    struct ggml_tensor * v = ggml_view_4d(ctx, base, ne[0], ne[1], ne[2], ne[3], base->nb[1], base->nb[2], base->nb[3], 0);
    v->nb[0] = 2 * ggml_type_size(type); // every other element
    return v;
}

enum layout {
    L_CONT,
    L_PERM,
    L_STRIDED
};
static const char * layout_name[] = { "cont", "perm", "strided" };

static struct ggml_tensor * new_input(struct ggml_context * ctx, enum ggml_type type, const int64_t ne[4], enum layout l) {
    struct ggml_tensor * t;
    switch (l) {
        case L_PERM: t = new_permuted(ctx, type, ne); break;
        case L_STRIDED: t = new_strided(ctx, type, ne); break;
        default: t = ggml_new_tensor_4d(ctx, type, ne[0], ne[1], ne[2], ne[3]); break;
    }
    return t;
}

static double type_tol(enum ggml_type t) { return t == GGML_TYPE_F16 ? 2e-3 : t == GGML_TYPE_BF16 ? 1e-2 : 1e-5; }

static void quiet_log(enum ggml_log_level level, const char * text, void * user) {
    (void) level;
    (void) text;
    (void) user;
}

// ---- binary ----

static void test_binary(void) {
    typedef struct ggml_tensor * (*binop)(struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *);
    const binop ops[4] = { ggml_add, ggml_sub, ggml_mul, ggml_div };
    const binop ipl[4] = { ggml_add_inplace, ggml_sub_inplace, ggml_mul_inplace, ggml_div_inplace };
    const char * names[4] = { "add", "sub", "mul", "div" };
    const int64_t ne0[4] = { 48, 17, 5, 3 };   // 12240 elements: 2 and 3 tasks
    const int64_t bshapes[][4] = { { 48, 17, 5, 3 }, { 16, 1, 5, 1 }, { 1, 17, 1, 3 }, { 48, 1, 1, 1 }, { 24, 17, 1, 3 } };
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int op = 0; op < 4; op++)
        for (int ti = 0; ti < 3; ti++)
            for (int l = 0; l < 3; l++)
                for (size_t bs = 0; bs < sizeof(bshapes) / sizeof(bshapes[0]); bs++)
                    for (int inplace = 0; inplace < 2; inplace++)
                        for (int nth = 1; nth <= 3; nth++) {
                            if (inplace && (l != L_CONT || nth == 2)) continue;
                            struct ggml_context * ctx = new_ctx();
                            struct ggml_tensor * a = new_input(ctx, types[ti], ne0, (enum layout) l);
        // b's type cycles with the shape, so mixed a/b types are covered too
                            struct ggml_tensor * b =
                                new_input(ctx, types[(ti + bs) % 3], bshapes[bs], bs % 2 ? L_STRIDED : L_CONT);
                            fill(a, -2, 2);
                            fill(b, 0.5f, 2); // away from 0 for div
                            float * av = snapshot(a);
                            struct ggml_tensor * out = (inplace ? ipl : ops)[op](ctx, a, b);
                            EXPECT(out != NULL && out->type == a->type, "%s constructor (result of a's type)", names[op]);
                            if (!out) {
                                free(av);
                                ggml_free(ctx);
                                continue;
                            }
                            double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                            int64_t k = 0;
                            FOR4(a) {
                                const double x = av[k], y = get(b, i0 % b->ne[0], i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
                                ref[k++] = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
                            }
                            if (run(ctx, out, nth)) {
                                char what[96];
                                snprintf(what, sizeof(what), "%s %s %s b%zu%s", names[op], ggml_type_name(types[ti]),
                                         layout_name[l], bs, inplace ? " inplace" : "");
            // b's own rounding is in its values (get), only the result's rounding is tolerated
                                compare(what, nth, out, ref, type_tol(types[ti]) * 2, type_tol(types[ti]));
                                if (inplace) compare(what, nth, a, ref, type_tol(types[ti]) * 2, type_tol(types[ti]));
                            } else {
                                EXPECT(false, "%s compute", names[op]);
                            }
                            free(ref);
                            free(av);
                            ggml_free(ctx);
                        }
}

// ---- unary ----

static double ref_silu(double x) { return x / (1.0 + exp(-x)); }
static double ref_gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static double ref_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static void test_unary(void) {
    const int64_t ne[4] = { 61, 67, 3, 1 }; // 12261
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int op = 0; op < 4; op++)
        for (int ti = 0; ti < 3; ti++)
            for (int l = 0; l < 3; l++)
                for (int inplace = 0; inplace < 2; inplace++)
                    for (int nth = 1; nth <= 3; nth++) {
                        if (inplace && (l != L_CONT || op == 3)) continue; // gelu_erf has no inplace form
                        struct ggml_context * ctx = new_ctx();
                        struct ggml_tensor * a = new_input(ctx, types[ti], ne, (enum layout) l);
                        fill(a, -12, 12);
                        if (l == L_CONT && ti == 0) { // extremes: exp over/underflow paths
                            set(a, 0, 0, 0, 0, -100.0f);
                            set(a, 1, 0, 0, 0, 100.0f);
                            set(a, 2, 0, 0, 0, -INFINITY);
                            set(a, 3, 0, 0, 0, INFINITY);
                            set(a, 4, 0, 0, 0, 0.0f);
                            set(a, 5, 0, 0, 0, -88.0f);
                        }
                        float * av = snapshot(a);
                        struct ggml_tensor * out = op == 0 ? (inplace ? ggml_scale_inplace : ggml_scale)(ctx, a, 0.37f)
                            : op == 1                      ? (inplace ? ggml_silu_inplace : ggml_silu)(ctx, a)
                            : op == 2                      ? (inplace ? ggml_gelu_inplace : ggml_gelu)(ctx, a)
                                                           : ggml_gelu_erf(ctx, a);
                        EXPECT(out != NULL && out->type == a->type, "unary constructor (result of a's type)");
                        if (!out) {
                            free(av);
                            ggml_free(ctx);
                            continue;
                        }
                        double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                        for (int64_t k = 0; k < ggml_nelements(a); k++) {
                            const double x = av[k];
                            ref[k] = op == 0 ? x * 0.37f
                                : op == 1    ? (isinf(x) ? (x > 0 ? x : -0.0) : ref_silu(x))
                                             : (isinf(x)      ? (x > 0 ? x : -0.0)
                                                    : op == 2 ? ref_gelu(x)
                                                              : ref_gelu_erf(x));
                        }
                        EXPECT(run(ctx, out, nth), "unary compute");
                        const char * names[4] = { "scale", "silu", "gelu", "gelu_erf" };
                        char what[64];
                        snprintf(what, sizeof(what), "%s %s %s%s", names[op], ggml_type_name(types[ti]), layout_name[l],
                                 inplace ? " inplace" : "");
                        compare(what, nth, out, ref, type_tol(types[ti]), 2 * type_tol(types[ti]));
                        free(ref);
                        free(av);
                        ggml_free(ctx);
                    }
}

static void test_swiglu(void) {
    const int64_t ne[4] = { 128, 33, 3, 1 };
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int split = 0; split < 2; split++)
        for (int ti = 0; ti < 3; ti++)
            for (int nth = 1; nth <= 3; nth++) {
                const enum ggml_type type = types[ti];
                struct ggml_context * ctx = new_ctx();
                struct ggml_tensor * a = new_input(ctx, type, ne, split ? L_PERM : L_CONT);
        // up of another float type than the gate: the result still takes the gate's type
                struct ggml_tensor * b = ggml_new_tensor_4d(ctx, types[(ti + nth) % 3], ne[0], ne[1], ne[2], ne[3]);
                fill(a, -6, 6);
                fill(b, -2, 2);
                struct ggml_tensor * out = split ? ggml_swiglu_split(ctx, a, b) : ggml_swiglu(ctx, a);
                EXPECT(out != NULL && out->type == type, "swiglu constructor (result of a's type)");
                if (!out) {
                    ggml_free(ctx);
                    continue;
                }
                double * ref = malloc((size_t) ggml_nelements(out) * sizeof(double));
                int64_t k = 0;
                FOR4(out) {
                    const double g = get(a, i0, i1, i2, i3);
                    const double u = split ? get(b, i0, i1, i2, i3) : get(a, i0 + out->ne[0], i1, i2, i3);
                    ref[k++] = ref_silu(g) * u;
                }
                EXPECT(run(ctx, out, nth), "swiglu compute");
                compare(split ? "swiglu_split" : "swiglu", nth, out, ref, type_tol(type), 2 * type_tol(type));
                free(ref);
                ggml_free(ctx);
            }
}

// ---- norms ----

static void test_norm(void) {
    const int64_t ne[4] = { 257, 17, 3, 1 };
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int rms = 0; rms < 2; rms++)
        for (int ti = 0; ti < 3; ti++)
            for (int l = 0; l < 3; l++)
                for (int nth = 1; nth <= 3; nth++) {
                    const enum ggml_type type = types[ti];
                    struct ggml_context * ctx = new_ctx();
                    struct ggml_tensor * a = new_input(ctx, type, ne, (enum layout) l);
                    fill(a, -3, 5); // non-zero mean
                    const float eps = 1e-5f;
                    struct ggml_tensor * out = rms ? ggml_rms_norm(ctx, a, eps) : ggml_norm(ctx, a, eps);
                    EXPECT(out != NULL && out->type == type, "norm constructor (result of a's type)");
                    if (!out) {
                        ggml_free(ctx);
                        continue;
                    }
                    double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                    int64_t k = 0;
                    for (int64_t i3 = 0; i3 < ne[3]; i3++)
                        for (int64_t i2 = 0; i2 < ne[2]; i2++)
                            for (int64_t i1 = 0; i1 < ne[1]; i1++) {
                                double mean = 0, sq = 0;
                                if (!rms) {
                                    for (int64_t i0 = 0; i0 < ne[0]; i0++) mean += get(a, i0, i1, i2, i3);
                                    mean /= ne[0];
                                }
                                for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                                    const double d = get(a, i0, i1, i2, i3) - mean;
                                    sq += d * d;
                                }
                                const double s = 1.0 / sqrt(sq / ne[0] + eps);
                                for (int64_t i0 = 0; i0 < ne[0]; i0++) ref[k++] = (get(a, i0, i1, i2, i3) - mean) * s;
                            }
                    EXPECT(run(ctx, out, nth), "norm compute");
                    compare(rms ? "rms_norm" : "norm", nth, out, ref, 2 * type_tol(type), 2 * type_tol(type));
                    free(ref);
                    ggml_free(ctx);
                }
    // inplace rms_norm, every float type
    for (int ti = 0; ti < 3; ti++) {
        struct ggml_context * ctx = new_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, types[ti], 100, 3);
        fill(a, -1, 1);
        float * av = snapshot(a);
        struct ggml_tensor * out = ggml_rms_norm_inplace(ctx, a, 1e-6f);
        double ref[300];
        for (int r = 0; r < 3; r++) {
            double sq = 0;
            for (int i = 0; i < 100; i++) sq += (double) av[r * 100 + i] * av[r * 100 + i];
            for (int i = 0; i < 100; i++) ref[r * 100 + i] = av[r * 100 + i] / sqrt(sq / 100 + 1e-6);
        }
        EXPECT(run(ctx, out, 2), "rms_norm_inplace compute");
        compare("rms_norm_inplace", 2, a, ref, 1e-5, ti ? type_tol(types[ti]) : 1e-5);
        free(av);
        ggml_free(ctx);
    }
}

// ---- softmax ----

static double alibi_slope(double max_bias, int n_head, int h) {
    if (max_bias <= 0) return 1.0;
    int nl2 = 1;
    while (nl2 * 2 <= n_head) nl2 *= 2;
    const double m0 = pow(2.0, -max_bias / nl2), m1 = pow(2.0, -max_bias / 2.0 / nl2);
    return h < nl2 ? pow(m0, h + 1) : pow(m1, 2 * (h - nl2) + 1);
}

static void test_soft_max(void) {
    const int64_t ne[4] = { 67, 32, 6, 1 }; // 12864 -> 3 tasks
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int ti = 0; ti < 3; ti++)
        for (int mcase = 0; mcase < 4; mcase++)
            for (int alibi = 0; alibi < 2; alibi++)
                for (int l = 0; l < 2; l++)
                    for (int nth = 1; nth <= 3; nth++) {
                        // mcase: 0 none, 1 F32 [ne0, ne1+5], 2 F16 [ne0, ne1, 2] (dim 2 broadcast), 3 F32 causal with a -inf row
                        if (mcase == 0 && alibi) continue;
                        if (ti > 0 && nth == 2) continue; // keeps the run short; F32 covers every split
                        const enum ggml_type type = types[ti];
                        struct ggml_context * ctx = new_ctx();
                        struct ggml_tensor * a = new_input(ctx, type, ne, l ? L_PERM : L_CONT);
                        fill(a, -4, 4);
                        struct ggml_tensor * mask = NULL;
                        if (mcase == 1) {
                            mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne[0], ne[1] + 5);
                            fill(mask, -3, 1);
                        }
                        if (mcase == 2) {
                            mask = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, ne[0], ne[1], 2);
                            fill(mask, -2, 2);
                        }
                        if (mcase == 3) {
                            mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne[0], ne[1]);
                            FOR4(mask) set(mask, i0, i1, i2, i3, i0 > i1 + 30 || i1 == 5 ? -INFINITY : 0.0f);
                        }
                        const float scale = 0.7f, max_bias = alibi ? 8.0f : 0.0f;
                        struct ggml_tensor * out = ggml_soft_max_ext(ctx, a, mask, scale, max_bias);
                        EXPECT(out != NULL && out->type == type, "soft_max_ext constructor (mask case %d, result of a's type)",
                               mcase);
                        if (!out) {
                            ggml_free(ctx);
                            continue;
                        }
                        double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                        double * w = malloc((size_t) ne[0] * sizeof(double));
                        int64_t k = 0;
                        for (int64_t i3 = 0; i3 < ne[3]; i3++)
                            for (int64_t i2 = 0; i2 < ne[2]; i2++)
                                for (int64_t i1 = 0; i1 < ne[1]; i1++) {
                                    const double slope = alibi_slope(max_bias, (int) ne[2], (int) i2);
                                    double mx = -INFINITY;
                                    for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                                        w[i0] = scale * get(a, i0, i1, i2, i3) +
                                            (mask ? slope * get(mask, i0, i1, i2 % mask->ne[2], 0) : 0.0);
                                        if (w[i0] > mx) mx = w[i0];
                                    }
                                    double sum = 0;
                                    for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                                        w[i0] = mx == -INFINITY ? 0 : exp(w[i0] - mx);
                                        sum += w[i0];
                                    }
                                    for (int64_t i0 = 0; i0 < ne[0]; i0++) ref[k++] = sum > 0 ? w[i0] / sum : 0.0;
                                }
                        EXPECT(run(ctx, out, nth), "soft_max compute");
                        char what[64];
                        snprintf(what, sizeof(what), "soft_max %s mask%d alibi%d %s", ggml_type_name(type), mcase, alibi,
                                 layout_name[l]);
                        compare(what, nth, out, ref, 1e-6, type == GGML_TYPE_F32 ? 1e-5 : type_tol(type));
                        free(w);
                        free(ref);
                        ggml_free(ctx);
                    }
    // plain + inplace, every float type
    for (int ti = 0; ti < 3; ti++) {
        struct ggml_context * ctx = new_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, types[ti], 10, 2);
        fill(a, -1, 1);
        float * av = snapshot(a);
        double ref[20];
        for (int r = 0; r < 2; r++) {
            double s = 0;
            for (int i = 0; i < 10; i++) s += exp(av[r * 10 + i]);
            for (int i = 0; i < 10; i++) ref[r * 10 + i] = exp(av[r * 10 + i]) / s;
        }
        EXPECT(run(ctx, ggml_soft_max_inplace(ctx, a), 1), "soft_max_inplace compute");
        compare("soft_max_inplace", 1, a, ref, 1e-6, ti ? type_tol(types[ti]) : 1e-5);
        free(av);
        ggml_free(ctx);
    }
}

static void test_diag_mask_inf(void) {
    const int64_t ne[4] = { 70, 60, 3, 1 };
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int ti = 0; ti < 3; ti++)
        for (int inplace = 0; inplace < 2; inplace++)
            for (int n_past = 0; n_past < 15; n_past += 7)
                for (int nth = 1; nth <= 3; nth++) {
                    struct ggml_context * ctx = new_ctx();
                    // permuted (strided) input for the non-inplace F16/BF16 runs: the generic path
                    struct ggml_tensor * a = new_input(ctx, types[ti], ne, ti && !inplace ? L_PERM : L_CONT);
                    fill(a, -1, 1);
                    double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                    int64_t k = 0;
                    FOR4(a) ref[k++] = i0 > n_past + i1 ? -INFINITY : get(a, i0, i1, i2, i3);
                    struct ggml_tensor * out = (inplace ? ggml_diag_mask_inf_inplace : ggml_diag_mask_inf)(ctx, a, n_past);
                    EXPECT(out != NULL && out->type == types[ti], "diag_mask_inf constructor (result of a's type)");
                    EXPECT(run(ctx, out, nth), "diag_mask_inf compute");
                    compare("diag_mask_inf", nth, out, ref, 0, 0);
                    free(ref);
                    ggml_free(ctx);
                }
}

// ---- rope ----

static double yarn_corr_dim(int n_dims, int n_ctx_orig, double beta, double base) {
    return n_dims * log(n_ctx_orig / (beta * 2 * M_PI)) / (2 * log(base));
}

static void test_rope(void) {
    const int64_t hd = 64, nh = 7, nt = 29; // 12992 elements
    struct {
        int mode, n_dims;
        bool ff;
        float scale, ext;
    } cases[] = {
        { GGML_ROPE_TYPE_NORMAL, 64, false, 1.0f, 0.0f },   { GGML_ROPE_TYPE_NEOX, 64, false, 1.0f, 0.0f },
        { GGML_ROPE_TYPE_NORMAL, 48, true, 0.5f, 0.0f },    { GGML_ROPE_TYPE_NEOX, 32, true, 0.25f, 1.0f },
        { GGML_ROPE_TYPE_NORMAL, 64, false, 0.125f, 0.5f },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int ti = 0; ti < 2; ti++)
            for (int l = 0; l < 2; l++)
                for (int nth = 1; nth <= 3; nth++) {
                    const enum ggml_type type = ti ? GGML_TYPE_F16 : GGML_TYPE_F32;
                    struct ggml_context * ctx = new_ctx();
                    const int64_t ne[4] = { hd, nh, nt, 1 };
                    struct ggml_tensor * a = new_input(ctx, type, ne, l ? L_PERM : L_CONT);
                    fill(a, -1, 1);
                    struct ggml_tensor * pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, nt);
                    for (int i = 0; i < nt; i++) ((int32_t *) pos->data)[i] = (i * 37) % 211 + (c == 4 ? 3000 : 0);
                    struct ggml_tensor * ff = NULL;
                    if (cases[c].ff) {
                        ff = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, cases[c].n_dims / 2);
                        for (int i = 0; i < cases[c].n_dims / 2; i++) ((float *) ff->data)[i] = 1.0f + 0.25f * i;
                    }
                    const float base = 10000.0f, attn = 0.9f, bf = 32.0f, bs = 1.0f;
                    const int n_ctx_orig = 512, n_dims = cases[c].n_dims, mode = cases[c].mode;
                    struct ggml_tensor * out = ggml_rope_ext(ctx, a, pos, ff, n_dims, mode, n_ctx_orig, base, cases[c].scale,
                                                             cases[c].ext, attn, bf, bs);
                    EXPECT(out != NULL, "rope constructor");
                    if (!out) {
                        ggml_free(ctx);
                        continue;
                    }
                    double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                    double lowc = 0, highc = 0;
                    if (cases[c].ext != 0) {
                        lowc = fmax(0.0, floor(yarn_corr_dim(n_dims, n_ctx_orig, bf, base)));
                        highc = fmin(n_dims - 1.0, ceil(yarn_corr_dim(n_dims, n_ctx_orig, bs, base)));
                    }
                    for (int64_t t = 0; t < nt; t++)
                        for (int64_t h = 0; h < nh; h++) {
                            double * r = ref + (t * nh + h) * hd;
                            for (int64_t i = 0; i < hd; i++) r[i] = get(a, i, h, t, 0);
                            for (int k = 0; k < n_dims / 2; k++) {
                                double th_e = ((int32_t *) pos->data)[t] * pow(base, -2.0 * k / n_dims);
                                if (ff) th_e /= ((float *) ff->data)[k];
                                const double th_i = cases[c].scale * th_e;
                                double th = th_i, ms = attn;
                                if (cases[c].ext != 0) {
                                    const double y = (k - lowc) / fmax(0.001, highc - lowc);
                                    const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * cases[c].ext;
                                    th = th_i * (1 - mix) + th_e * mix;
                                    ms *= 1.0 + 0.1 * log(1.0 / cases[c].scale);
                                }
                                const int j0 = mode == GGML_ROPE_TYPE_NEOX ? k : 2 * k;
                                const int j1 = mode == GGML_ROPE_TYPE_NEOX ? k + n_dims / 2 : 2 * k + 1;
                                const double x0 = get(a, j0, h, t, 0), x1 = get(a, j1, h, t, 0);
                                r[j0] = (x0 * cos(th) - x1 * sin(th)) * ms;
                                r[j1] = (x0 * sin(th) + x1 * cos(th)) * ms;
                            }
                        }
                    EXPECT(run(ctx, out, nth), "rope compute");
                    char what[64];
                    snprintf(what, sizeof(what), "rope case %zu %s %s", c, ggml_type_name(type), layout_name[l]);
                    // positions up to ~3200: float theta carries ~3200*6e-8 rad of error
                    compare(what, nth, out, ref, type == GGML_TYPE_F16 ? 4e-3 : 5e-4, type_tol(type));
                    free(ref);
                    ggml_free(ctx);
                }
    // inplace
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    fill(a, -1, 1);
    float * av = snapshot(a);
    struct ggml_tensor * pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    for (int i = 0; i < 3; i++) ((int32_t *) pos->data)[i] = i + 1;
    struct ggml_tensor * out = ggml_rope_ext_inplace(ctx, a, pos, NULL, 8, GGML_ROPE_TYPE_NORMAL, 0, 10000, 1, 0, 1, 32, 1);
    double ref[48];
    for (int t = 0; t < 3; t++)
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++) {
                const double th = (t + 1) * pow(10000.0, -2.0 * k / 8);
                const float * x = av + (t * 2 + h) * 8;
                ref[(t * 2 + h) * 8 + 2 * k] = x[2 * k] * cos(th) - x[2 * k + 1] * sin(th);
                ref[(t * 2 + h) * 8 + 2 * k + 1] = x[2 * k] * sin(th) + x[2 * k + 1] * cos(th);
            }
    EXPECT(run(ctx, out, 1), "rope inplace compute");
    compare("rope inplace", 1, a, ref, 1e-5, 1e-5);
    free(av);
    ggml_free(ctx);
}

// ---- copies ----

static void test_copy(void) {
    const int64_t ne[4] = { 64, 13, 5, 3 }; // 12480
    const enum ggml_type ftypes[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    // cont of permuted / strided views, every float type
    for (int ti = 0; ti < 3; ti++)
        for (int l = 0; l < 3; l++)
            for (int nth = 1; nth <= 3; nth++) {
                struct ggml_context * ctx = new_ctx();
                struct ggml_tensor * a = new_input(ctx, ftypes[ti], ne, (enum layout) l);
                fill(a, -4, 4);
                float * av = snapshot(a);
                double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                for (int64_t k = 0; k < ggml_nelements(a); k++) ref[k] = av[k];
                struct ggml_tensor * out = ggml_cont(ctx, a);
                EXPECT(run(ctx, out, nth), "cont compute");
                EXPECT(ggml_is_contiguous(out), "cont result contiguous");
                compare("cont", nth, out, ref, 0, 0); // same type: exact
                free(ref);
                free(av);
                ggml_free(ctx);
            }
    // cpy between float types, strided both sides, and into a differently shaped destination
    for (int ts = 0; ts < 3; ts++)
        for (int td = 0; td < 3; td++)
            for (int l = 0; l < 3; l++)
                for (int nth = 1; nth <= 3; nth++) {
                    struct ggml_context * ctx = new_ctx();
                    struct ggml_tensor * a = new_input(ctx, ftypes[ts], ne, (enum layout) l);
                    fill(a, -4, 4);
                    struct ggml_tensor * b = l == L_STRIDED ? new_permuted(ctx, ftypes[td], ne)
                                                            : ggml_new_tensor_2d(ctx, ftypes[td], ne[0] * ne[1], ne[2] * ne[3]);
                    float * av = snapshot(a);
                    double * ref = malloc((size_t) ggml_nelements(a) * sizeof(double));
                    for (int64_t k = 0; k < ggml_nelements(a); k++) {
                        ref[k] = ftypes[td] == GGML_TYPE_F16 ? ggml_fp16_to_fp32(ggml_fp32_to_fp16(av[k]))
                            : ftypes[td] == GGML_TYPE_BF16   ? ggml_bf16_to_fp32(ggml_fp32_to_bf16(av[k]))
                                                             : av[k];
                    }
                    struct ggml_tensor * out = ggml_cpy(ctx, a, b);
                    EXPECT(run(ctx, out, nth), "cpy compute");
                    char what[64];
                    snprintf(what, sizeof(what), "cpy %s->%s %s", ggml_type_name(ftypes[ts]), ggml_type_name(ftypes[td]),
                             layout_name[l]);
                    compare(what, nth, b, ref, 0, 0); // one rounding, to the destination type: exact
                    free(ref);
                    free(av);
                    ggml_free(ctx);
                }
    // F32 -> quantized: bytes equal the reference quantizer's (or within its rounding) when dequantized
    const enum ggml_type qtypes[3] = { GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K };
    for (int q = 0; q < 3; q++)
        for (int l = 0; l < 2; l++)
            for (int nth = 1; nth <= 3; nth++) {
                const struct ggml_type_traits * tt = ggml_get_type_traits(qtypes[q]);
                if (!tt || !tt->from_float_ref || !tt->to_float) continue;
                struct ggml_context * ctx = new_ctx();
                const int64_t qne[4] = { 256, 24, 2, 1 };
                struct ggml_tensor * a = new_input(ctx, GGML_TYPE_F32, qne, l ? L_PERM : L_CONT);
                fill(a, -2, 2);
                struct ggml_tensor * b = ggml_new_tensor_4d(ctx, qtypes[q], qne[0], qne[1], qne[2], qne[3]);
                struct ggml_tensor * out = ggml_cpy(ctx, a, b);
                EXPECT(run(ctx, out, nth), "cpy to %s compute", ggml_type_name(qtypes[q]));
                float * av = snapshot(a);
                float * deq = malloc((size_t) qne[0] * sizeof(float));
                void * qb = malloc(ggml_row_size(qtypes[q], qne[0]));
                double maxerr = 0;
                for (int64_t r = 0; r < qne[1] * qne[2]; r++) {
                    // expected: dequantize(reference quantize(row)) vs dequantize(our row)
                    tt->from_float_ref(av + r * qne[0], qb, qne[0]);
                    float * e = malloc((size_t) qne[0] * sizeof(float));
                    tt->to_float(qb, e, qne[0]);
                    tt->to_float((char *) b->data + r * b->nb[1], deq, qne[0]);
                    for (int64_t i = 0; i < qne[0]; i++) maxerr = fmax(maxerr, fabs(e[i] - deq[i]));
                    free(e);
                }
                // The fast quantizer may round a few values differently than the reference one.
                EXPECT(maxerr <= (qtypes[q] == GGML_TYPE_Q8_0 ? 0.02 : 0.3), "cpy to %s: max diff vs reference %g",
                       ggml_type_name(qtypes[q]), maxerr);
                free(qb);
                free(deq);
                free(av);
                ggml_free(ctx);
            }
}

static void test_get_set_rows(void) {
    const enum ggml_type types[4] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_1 };
    for (int ti = 0; ti < 4; ti++)
        for (int nth = 1; nth <= 3; nth++) {
            const struct ggml_type_traits * tt = ggml_get_type_traits(types[ti]);
            if (!tt || !tt->to_float) continue;
            struct ggml_context * ctx = new_ctx();
            // table [64, 50, 2, 1], ids [40, 2]
            struct ggml_tensor * tf = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 50, 2);
            fill(tf, -1, 1);
            struct ggml_tensor * table = ggml_new_tensor_3d(ctx, types[ti], 64, 50, 2);
            for (int64_t r = 0; r < 100; r++) {
                const float * src = (const float *) tf->data + r * 64;
                char * dst = (char *) table->data + r * table->nb[1];
                if (types[ti] == GGML_TYPE_F32)
                    memcpy(dst, src, 64 * sizeof(float));
                else if (types[ti] == GGML_TYPE_F16)
                    ggml_fp32_to_fp16_row(src, (ggml_fp16_t *) dst, 64);
                else
                    tt->from_float_ref(src, dst, 64);
            }
            struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 200, 2);
            for (int i = 0; i < 400; i++) ((int32_t *) ids->data)[i] = (i * 7 + 3) % 50;
            struct ggml_tensor * out = ggml_get_rows(ctx, table, ids);
            EXPECT(out != NULL, "get_rows constructor %s", ggml_type_name(types[ti]));
            if (!out) {
                ggml_free(ctx);
                continue;
            }
            double * ref = malloc((size_t) ggml_nelements(out) * sizeof(double));
            float row[64];
            for (int64_t b2 = 0; b2 < 2; b2++)
                for (int64_t i = 0; i < 200; i++) {
                    const int32_t id = ((int32_t *) ids->data)[b2 * 200 + i];
                    tt->to_float((char *) table->data + id * table->nb[1] + b2 * table->nb[2], row, 64);
                    for (int j = 0; j < 64; j++) ref[(b2 * 200 + i) * 64 + j] = row[j];
                }
            EXPECT(run(ctx, out, nth), "get_rows compute");
            char what[64];
            snprintf(what, sizeof(what), "get_rows %s", ggml_type_name(types[ti]));
            compare(what, nth, out, ref, 0, 0);
            free(ref);
            ggml_free(ctx);
        }
    // set_rows into F32 / F16 / Q8_0 destinations, I32 and I64 ids, broadcast ids over dim 2
    const enum ggml_type dtypes[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0 };
    for (int ti = 0; ti < 3; ti++)
        for (int i64 = 0; i64 < 2; i64++)
            for (int nth = 1; nth <= 3; nth++) {
                struct ggml_context * ctx = new_ctx();
                struct ggml_tensor * dstt = ggml_new_tensor_3d(ctx, dtypes[ti], 64, 300, 4);
                memset(dstt->data, 0, ggml_nbytes(dstt));
                struct ggml_tensor * rows = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 50, 4);
                fill(rows, -1, 1);
                struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, i64 ? GGML_TYPE_I64 : GGML_TYPE_I32, 50, 2);
                for (int i = 0; i < 100; i++) {
                    const int64_t v = (i * 11 + 5) % 300; // distinct within each 50 (11 coprime with 300)
                    if (i64)
                        ((int64_t *) ids->data)[i] = v;
                    else
                        ((int32_t *) ids->data)[i] = (int32_t) v;
                }
                struct ggml_tensor * out = ggml_set_rows(ctx, dstt, rows, ids);
                EXPECT(out != NULL, "set_rows constructor");
                if (!out) {
                    ggml_free(ctx);
                    continue;
                }
                EXPECT(run(ctx, out, nth), "set_rows compute");
                const struct ggml_type_traits * tt = ggml_get_type_traits(dtypes[ti]);
                double maxerr = 0;
                float got[64];
                for (int64_t b2 = 0; b2 < 4; b2++)
                    for (int64_t i = 0; i < 50; i++) {
                        const int64_t k = (b2 % 2) * 50 + i;
                        const int64_t id = i64 ? ((int64_t *) ids->data)[k] : ((int32_t *) ids->data)[k];
                        tt->to_float((char *) dstt->data + id * dstt->nb[1] + b2 * dstt->nb[2], got, 64);
                        for (int j = 0; j < 64; j++) maxerr = fmax(maxerr, fabs(got[j] - get(rows, j, i, b2, 0)));
                    }
                const double tol = dtypes[ti] == GGML_TYPE_F32 ? 0 : dtypes[ti] == GGML_TYPE_F16 ? 1e-3 : 1e-2;
                EXPECT(maxerr <= tol, "set_rows %s ids %s: max err %g", ggml_type_name(dtypes[ti]), i64 ? "i64" : "i32", maxerr);
                ggml_free(ctx);
            }
}

static void test_concat(void) {
    for (int dim = 0; dim < 4; dim++)
        for (int ti = 0; ti < 2; ti++)
            for (int l = 0; l < 2; l++)
                for (int nth = 1; nth <= 3; nth++) {
                    const enum ggml_type type = ti ? GGML_TYPE_F16 : GGML_TYPE_F32;
                    struct ggml_context * ctx = new_ctx();
                    int64_t nea[4] = { 24, 11, 7, 3 }, neb[4] = { 24, 11, 7, 3 };
                    nea[dim] = 9;
                    neb[dim] = 4 + dim;
                    struct ggml_tensor * a = new_input(ctx, type, nea, l ? L_PERM : L_CONT);
                    struct ggml_tensor * b = new_input(ctx, type, neb, l ? L_STRIDED : L_CONT);
                    fill(a, -1, 1);
                    fill(b, -1, 1);
                    struct ggml_tensor * out = ggml_concat(ctx, a, b, dim);
                    EXPECT(out != NULL, "concat constructor");
                    if (!out) {
                        ggml_free(ctx);
                        continue;
                    }
                    double * ref = malloc((size_t) ggml_nelements(out) * sizeof(double));
                    int64_t k = 0;
                    FOR4(out) {
                        int64_t i[4] = { i0, i1, i2, i3 };
                        if (i[dim] < nea[dim])
                            ref[k++] = get(a, i0, i1, i2, i3);
                        else {
                            i[dim] -= nea[dim];
                            ref[k++] = get(b, i[0], i[1], i[2], i[3]);
                        }
                    }
                    EXPECT(run(ctx, out, nth), "concat compute");
                    char what[48];
                    snprintf(what, sizeof(what), "concat dim %d %s %s", dim, ggml_type_name(type), layout_name[l]);
                    compare(what, nth, out, ref, 0, 0);
                    free(ref);
                    ggml_free(ctx);
                }
}

// ---- reductions ----

static void test_reduce(void) {
    const int64_t ne[4] = { 513, 25, 1, 1 };
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int ti = 0; ti < 3; ti++)
        for (int l = 0; l < 3; l++)
            for (int nth = 1; nth <= 3; nth++) {
                struct ggml_context * ctx = new_ctx();
                struct ggml_tensor * a = new_input(ctx, types[ti], ne, (enum layout) l);
                fill(a, -1, 1);
                set(a, 100, 3, 0, 0, 5.0f);
                set(a, 200, 3, 0, 0, 5.0f); // tie: first wins
                set(a, 512, 4, 0, 0, 7.0f);
                double sref[25], aref[25];
                for (int r = 0; r < 25; r++) {
                    double s = 0, m = -INFINITY;
                    int best = 0;
                    for (int i = 0; i < 513; i++) {
                        const double v = get(a, i, r, 0, 0);
                        s += v;
                        if (v > m) {
                            m = v;
                            best = i;
                        }
                    }
                    sref[r] = s;
                    aref[r] = best;
                }
                struct ggml_tensor * s = ggml_sum_rows(ctx, a);
                struct ggml_tensor * am = ggml_argmax(ctx, a);
                EXPECT(s && am && s->type == types[ti] && am->type == GGML_TYPE_I32,
                       "reduce constructors (sum of a's type, I32 index)");
                EXPECT(run(ctx, s, nth) && run(ctx, am, nth), "reduce compute");
                compare("sum_rows", nth, s, sref, 1e-4, ti ? type_tol(types[ti]) : 1e-5);
                compare("argmax", nth, am, aref, 0, 0);
                ggml_free(ctx);
            }
}

// ---- matmul ----

// Converts a float matrix into t (any type with a reference quantizer), row by row.
static void store_rows(struct ggml_tensor * t, const float * src) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(t->type);
    int64_t r = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++, r++) {
                char * p = elem(t, 0, i1, i2, i3);
                if (t->type == GGML_TYPE_F32)
                    memcpy(p, src + r * t->ne[0], (size_t) t->ne[0] * sizeof(float));
                else
                    tt->from_float_ref(src + r * t->ne[0], p, t->ne[0]);
            }
}

static void test_mul_mat(void) {
    const enum ggml_type types[6] = {
        GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q4_K
    };
    struct {
        int64_t K, M, N, A2, B2;
        int bl;
    } cases[] = {
        { 256, 37, 1, 1, 1, 0 }, // generation: N == 1
        { 256, 70, 19, 1, 1, 0 }, // several tiles
        { 256, 33, 5, 2, 6, 1 }, // broadcast a over dim 2 (GQA), b permuted
        { 512, 131, 40, 1, 1, 2 }, // b strided (gathered), > 1 tile both ways
    };
    for (int ti = 0; ti < 6; ti++)
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
            for (int nth = 1; nth <= 3; nth++) {
                const struct ggml_type_traits * tt = ggml_get_type_traits(types[ti]);
                const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(types[ti]);
                if (!tt || !tc || !tc->vec_dot || (types[ti] != GGML_TYPE_F32 && !tt->from_float_ref)) {
                    fprintf(stderr, "skip mul_mat %s: no CPU traits yet\n", ggml_type_name(types[ti]));
                    break;
                }
                const int64_t K = cases[c].K, M = cases[c].M, N = cases[c].N, A2 = cases[c].A2, B2 = cases[c].B2;
                struct ggml_context * ctx = new_ctx();
                struct ggml_tensor * a = ggml_new_tensor_3d(ctx, types[ti], K, M, A2);
                float * af = malloc((size_t) (K * M * A2) * sizeof(float));
                for (int64_t i = 0; i < K * M * A2; i++) af[i] = frand();
                store_rows(a, af);
                // reference uses a as stored (dequantized), so only b's conversion adds error
                for (int64_t r = 0; r < M * A2; r++) {
                    if (types[ti] == GGML_TYPE_F32) break;
                    tt->to_float((char *) a->data + r * a->nb[1], af + r * K, K);
                }
                const int64_t bne[4] = { K, N, B2, 1 };
                struct ggml_tensor * b = new_input(ctx, GGML_TYPE_F32, bne, (enum layout) cases[c].bl);
                fill(b, -1, 1);
                struct ggml_tensor * out = ggml_mul_mat(ctx, a, b);
                EXPECT(out != NULL, "mul_mat constructor");
                if (!out) {
                    free(af);
                    ggml_free(ctx);
                    continue;
                }
                double * ref = malloc((size_t) (M * N * B2) * sizeof(double));
                double scale = 0;
                for (int64_t i2 = 0; i2 < B2; i2++)
                    for (int64_t j = 0; j < N; j++)
                        for (int64_t i = 0; i < M; i++) {
                            double s = 0;
                            const float * ar = af + ((i2 / (B2 / A2)) * M + i) * K;
                            for (int64_t k = 0; k < K; k++) s += (double) ar[k] * get(b, k, j, i2, 0);
                            ref[(i2 * N + j) * M + i] = s;
                            scale = fmax(scale, fabs(s));
                        }
                EXPECT(run(ctx, out, nth), "mul_mat compute");
                char what[64];
                snprintf(what, sizeof(what), "mul_mat %s case %zu", ggml_type_name(types[ti]), c);
                // b is rounded to vec_dot_type (F16 or 8-bit): error ~ sqrt(K) * |a| * |b| * 2^-8 for Q8
                const enum ggml_type vdt = tc->vec_dot_type;
                const double tol = vdt == GGML_TYPE_F32 ? 1e-4 : vdt == GGML_TYPE_F16 || vdt == GGML_TYPE_BF16 ? 2e-2 : 0.15;
                compare(what, nth, out, ref, tol, 1e-3);
                free(ref);
                free(af);
                ggml_free(ctx);
            }
}

// ---- flash attention ----

static void test_flash_attn(void) {
    struct {
        int64_t D, Dv, nq, nkv, H, Hkv;
        int mask;
        float softcap, max_bias;
        enum ggml_type kvt;
        bool view;
    } cases[] = {
        { 64, 64, 1, 37, 6, 2, 0, 0.0f, 0.0f, GGML_TYPE_F32, false },
        { 64, 64, 7, 50, 6, 3, 1, 0.0f, 0.0f, GGML_TYPE_F16, true },
        { 32, 48, 9, 40, 4, 4, 2, 5.0f, 0.0f, GGML_TYPE_F32, true },
        { 64, 64, 12, 45, 8, 2, 1, 0.0f, 4.0f, GGML_TYPE_F16, false },
        { 64, 64, 5, 33, 6, 2, 3, 0.0f, 0.0f, GGML_TYPE_F16, false }, // causal mask with a fully masked row
        { 80, 48, 3, 150, 34, 1, 1, 0.0f, 0.0f, GGML_TYPE_F16, false }, // group > 16 rows (slices), D % 16 != 0, 3 blocks
        { 16, 16, 40, 70, 2, 2, 3, 0.0f, 0.0f, GGML_TYPE_F32, true }, // many positions per tile, causal, 2 blocks
        { 128, 128, 6, 70, 4, 2, 3, 0.0f, 0.0f, GGML_TYPE_F16, false }, // D = Dv = 128 (wide heads)
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int nth = 1; nth <= 3; nth++) {
            const int64_t D = cases[c].D, Dv = cases[c].Dv, nq = cases[c].nq, nkv = cases[c].nkv, H = cases[c].H,
                          Hkv = cases[c].Hkv;
            struct ggml_context * ctx = new_ctx();
            struct ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, nq, H);
            fill(q, -1, 1);
            struct ggml_tensor *k, *v;
            if (cases[c].view) {
                // KV cache layout [D, H_kv, n_ctx] viewed as [D, n_kv, H_kv] (permuted, strided)
                struct ggml_tensor * kc = ggml_new_tensor_3d(ctx, cases[c].kvt, D, Hkv, nkv + 10);
                struct ggml_tensor * vc = ggml_new_tensor_3d(ctx, cases[c].kvt, Dv, Hkv, nkv + 10);
                k = ggml_view_3d(ctx, kc, D, nkv, Hkv, kc->nb[2], kc->nb[1], 0);
                v = ggml_view_3d(ctx, vc, Dv, nkv, Hkv, vc->nb[2], vc->nb[1], 0);
            } else {
                k = ggml_new_tensor_3d(ctx, cases[c].kvt, D, nkv, Hkv);
                v = ggml_new_tensor_3d(ctx, cases[c].kvt, Dv, nkv, Hkv);
            }
            fill(k, -1, 1);
            fill(v, -1, 1);
            struct ggml_tensor * mask = NULL;
            if (cases[c].mask) {
                mask = ggml_new_tensor_2d(ctx, cases[c].mask == 2 ? GGML_TYPE_F32 : GGML_TYPE_F16, nkv, nq + 3);
                if (cases[c].mask == 3)
                    FOR4(mask) set(mask, i0, i1, i2, i3, i0 > i1 + nkv - nq || i1 == 2 ? -INFINITY : 0.0f);
                else
                    FOR4(mask) set(mask, i0, i1, i2, i3, (i0 * 3 + i1) % 7 == 0 ? -INFINITY : frand());
            }
            const float scale = 1.0f / sqrtf((float) D);
            struct ggml_tensor * out = ggml_flash_attn_ext(ctx, q, k, v, mask, scale, cases[c].max_bias, cases[c].softcap);
            EXPECT(out != NULL, "flash_attn_ext constructor case %zu", c);
            if (!out) {
                ggml_free(ctx);
                continue;
            }
            double * ref = malloc((size_t) (Dv * H * nq) * sizeof(double));
            double * w = malloc((size_t) nkv * sizeof(double));
            for (int64_t iq = 0; iq < nq; iq++)
                for (int64_t h = 0; h < H; h++) {
                    const int64_t hk = h / (H / Hkv);
                    const double slope = alibi_slope(cases[c].max_bias, (int) H, (int) h);
                    double mx = -INFINITY;
                    for (int64_t j = 0; j < nkv; j++) {
                        double s = 0;
                        for (int64_t d = 0; d < D; d++) s += (double) get(q, d, iq, h, 0) * get(k, d, j, hk, 0);
                        s *= scale;
                        if (cases[c].softcap > 0) s = cases[c].softcap * tanh(s / cases[c].softcap);
                        if (mask) s += slope * get(mask, j, iq, 0, 0);
                        w[j] = s;
                        if (s > mx) mx = s;
                    }
                    double sum = 0;
                    for (int64_t j = 0; j < nkv; j++) {
                        w[j] = mx == -INFINITY ? 0 : exp(w[j] - mx);
                        sum += w[j];
                    }
                    for (int64_t d = 0; d < Dv; d++) {
                        double o = 0;
                        for (int64_t j = 0; j < nkv; j++) o += w[j] * get(v, d, j, hk, 0);
                        ref[(iq * H + h) * Dv + d] = sum > 0 ? o / sum : 0.0;
                    }
                }
            EXPECT(run(ctx, out, nth), "flash_attn_ext compute");
            char what[48];
            snprintf(what, sizeof(what), "flash_attn_ext case %zu", c);
            // F16 K: q is rounded to F16 for the dot product
            compare(what, nth, out, ref, cases[c].kvt == GGML_TYPE_F16 ? 2e-3 : 1e-5, 1e-3);
            free(w);
            free(ref);
            ggml_free(ctx);
        }
}

// ---- direct kernel calls: uneven splits over 1..5 threads on tiny shapes ----

static void test_direct_splits(void) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 5, 3, 1);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    fill(a, -1, 1);
    fill(b, -1, 1);
    struct ggml_tensor * nodes[3] = { ggml_add(ctx, a, b), ggml_soft_max(ctx, a), ggml_rms_norm(ctx, a, 1e-5f) };
    for (int n = 0; n < 3; n++) {
        struct ggml_tensor * node = nodes[n];
        float want[15];
        struct ggml_compute_params p1 = { 0, 1, 0, NULL, NULL };
        size_t ws = ggml_cpu_work_size(node, 5);
        void * wd = ws ? malloc(ws) : NULL;
        p1.wsize = ws;
        p1.wdata = wd;
        ggml_cpu_compute_forward(&p1, node);
        memcpy(want, node->data, sizeof(want));
        for (int nth = 2; nth <= 5; nth++) {
            memset(node->data, 0, sizeof(want));
            for (int ith = 0; ith < nth; ith++) {
                struct ggml_compute_params p = { ith, nth, ws, wd, NULL };
                ggml_cpu_compute_forward(&p, node);
            }
            EXPECT(memcmp(want, node->data, sizeof(want)) == 0, "%s split over %d threads differs", ggml_op_name(node->op), nth);
        }
        free(wd);
    }
    ggml_free(ctx);
}

// Bad input to a kernel is logged, never fatal: out-of-range row ids.
// The constructors take F32/F16/BF16 for a (and b) and refuse other types with NULL.
// ---- low-rank update (LoRA) ----

// ggml_lora_add against a double loop: a decode column and a batch with per-column factors (some
// zero: those columns must be y's bits), F32 and F16 A / B^T (B's panels: M = 300 leaves a partial
// last one, whatever its padding holds), 1..3 threads.
static void test_lora_add(void) {
    const int64_t K = 200, M = 300, r = 12;
    for (int ti = 0; ti < 2; ti++)
        for (int64_t N = 1; N <= 9; N += 8)
            for (int nth = 1; nth <= 3; nth++) {
                const enum ggml_type type = ti ? GGML_TYPE_F16 : GGML_TYPE_F32;
                struct ggml_context * ctx = new_ctx();
                struct ggml_tensor * a = ggml_new_tensor_2d(ctx, type, K, r);
                struct ggml_tensor * bt = ggml_new_tensor_3d(ctx, type, GGML_LORA_PANEL, r, (M + 63) / 64);
                struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
                struct ggml_tensor * y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, M, N);
                struct ggml_tensor * rs = N > 1 ? ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, N) : NULL;
                fill(a, -1, 1);
                fill(bt, -1, 1);
                fill(x, -1, 1);
                fill(y, -3, 3);
                for (int64_t j = 0; rs && j < N; j++) set(rs, 0, j, 0, 0, j % 3 == 1 ? 0.0f : frand());
                struct ggml_tensor * out = ggml_lora_add(ctx, y, x, a, bt, rs, 0.625f);
                EXPECT(out != NULL && out->type == GGML_TYPE_F32 && out->ne[0] == M && out->ne[1] == N, "lora_add constructor");
                if (!out) {
                    ggml_free(ctx);
                    continue;
                }
                double * ref = malloc((size_t) (M * N) * sizeof(double));
                for (int64_t j = 0; j < N; j++) {
                    const double s = 0.625 * (rs ? get(rs, 0, j, 0, 0) : 1.0);
                    for (int64_t m = 0; m < M; m++) {
                        double d = 0.0;
                        for (int64_t k = 0; k < r; k++) {
                            double ax = 0.0;
                            for (int64_t i = 0; i < K; i++) ax += (double) get(a, i, k, 0, 0) * get(x, i, j, 0, 0);
                            d += ax * get(bt, m % 64, k, m / 64, 0); // B[m][k] in its panel
                        }
                        ref[j * M + m] = get(y, m, j, 0, 0) + s * d;
                    }
                }
                EXPECT(run(ctx, out, nth), "lora_add compute");
                compare("lora_add", nth, out, ref, 1e-4, 1e-5);
                for (int64_t j = 0; rs && j < N; j++) {
                    if (get(rs, 0, j, 0, 0) == 0.0f) {
                        EXPECT(memcmp(elem(out, 0, j, 0, 0), elem(y, 0, j, 0, 0), (size_t) M * sizeof(float)) == 0,
                               "lora_add: a column of factor 0 is y's bits");
                    }
                }
                free(ref);
                ggml_free(ctx);
            }
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * f = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 4);
    struct ggml_tensor * h = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 64, 4);
    struct ggml_tensor * q = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 64, 4);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 3);
    struct ggml_tensor * y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 3);
    struct ggml_tensor * bad_rs = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, 2);
    ggml_log_set(quiet_log, NULL);
    EXPECT(ggml_lora_add(ctx, y, x, f, h, NULL, 1.0f) == NULL, "lora_add: a and bt of different types refused");
    EXPECT(ggml_lora_add(ctx, y, x, q, q, NULL, 1.0f) == NULL, "lora_add: quantized a refused");
    struct ggml_tensor * bt = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, GGML_LORA_PANEL, 4, 1);
    EXPECT(ggml_lora_add(ctx, y, x, f, bt, NULL, 1.0f) != NULL, "lora_add: good shapes accepted");
    struct ggml_tensor * bt2 = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, GGML_LORA_PANEL, 4, 2);
    EXPECT(ggml_lora_add(ctx, y, x, f, bt2, NULL, 1.0f) == NULL, "lora_add: bt with panels for another M refused");
    EXPECT(ggml_lora_add(ctx, y, x, f, bt, bad_rs, 1.0f) == NULL, "lora_add: rs of the wrong length refused");
    EXPECT(ggml_lora_add(ctx, y, f, f, bt, NULL, 1.0f) == NULL, "lora_add: y and x of different column counts refused");
    EXPECT(ggml_lora_add(ctx, NULL, x, f, bt, NULL, 1.0f) == NULL, "lora_add: NULL y refused");
    ggml_log_set(NULL, NULL);
    ggml_free(ctx);
}

static void test_type_validation(void) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * f = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 4);
    struct ggml_tensor * h = ggml_new_tensor_2d(ctx, GGML_TYPE_BF16, 64, 4);
    struct ggml_tensor * q = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 64, 4);
    struct ggml_tensor * i = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 64, 4);
    ggml_log_set(quiet_log, NULL);
    EXPECT(ggml_add(ctx, q, f) == NULL && ggml_mul(ctx, f, i) == NULL && ggml_sub(ctx, i, f) == NULL, "binary refuses non-float");
    EXPECT(ggml_scale(ctx, q, 2.0f) == NULL && ggml_silu(ctx, i) == NULL && ggml_gelu(ctx, q) == NULL, "unary refuses non-float");
    EXPECT(ggml_rms_norm(ctx, i, 1e-5f) == NULL && ggml_norm(ctx, q, 1e-5f) == NULL, "norms refuse non-float");
    EXPECT(ggml_swiglu(ctx, q) == NULL && ggml_swiglu_split(ctx, f, i) == NULL, "swiglu refuses non-float");
    EXPECT(ggml_soft_max(ctx, i) == NULL && ggml_diag_mask_inf(ctx, q, 0) == NULL, "soft_max/diag_mask refuse non-float");
    EXPECT(ggml_sum_rows(ctx, q) == NULL && ggml_argmax(ctx, i) == NULL, "reductions refuse non-float");
    ggml_log_set(NULL, NULL);
    struct ggml_tensor * r[6] = {
        ggml_div(ctx, h, f),   ggml_swiglu_split(ctx, h, f), ggml_soft_max_ext(ctx, h, NULL, 1.0f, 0.0f),
        ggml_sum_rows(ctx, h), ggml_concat(ctx, h, h, 1),    ggml_argmax(ctx, h)
    };
    for (int k = 0; k < 6; k++) {
        EXPECT(r[k] != NULL && r[k]->type == (k == 5 ? GGML_TYPE_I32 : GGML_TYPE_BF16), "BF16 a: result type (op %d)", k);
    }
    ggml_free(ctx);
}

static void test_bad_ids(void) {
    ggml_log_set(quiet_log, NULL);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * table = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    fill(table, -1, 1);
    struct ggml_tensor * ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
    ((int32_t *) ids->data)[0] = 7;
    ((int32_t *) ids->data)[1] = 1;
    struct ggml_tensor * out = ggml_get_rows(ctx, table, ids);
    run(ctx, out, 1);
    double ref[8] = {
        0, 0, 0, 0, get(table, 0, 1, 0, 0), get(table, 1, 1, 0, 0), get(table, 2, 1, 0, 0), get(table, 3, 1, 0, 0)
    };
    compare("get_rows out of range -> zeros", 1, out, ref, 0, 0);
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

int main(void) {
    test_binary();
    test_unary();
    test_swiglu();
    test_norm();
    test_soft_max();
    test_diag_mask_inf();
    test_rope();
    test_copy();
    test_get_set_rows();
    test_concat();
    test_reduce();
    test_mul_mat();
    test_flash_attn();
    test_direct_splits();
    test_bad_ids();
    test_lora_add();
    test_type_validation();
    printf("test_ops: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
