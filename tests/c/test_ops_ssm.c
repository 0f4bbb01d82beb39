// test_ops_ssm.c — the recurrent-layer ops (ssm_conv, gated_delta_net) and their elementwise
// companions (sigmoid, softplus, l2_norm) against naive double-precision loops written here, on
// 1, 2 and 3 threads, with strided inputs; and the constructors' refusals.
#include "ggml.h"
#include "ggml-cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static uint64_t g_state = 0x2545F4914F6CDD1Dull;
static double urand(double lo, double hi) {
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return lo + (hi - lo) * (double) (g_state >> 11) / (double) (1ull << 53);
}

// Address of element (i0..i3) of an F32 tensor, by its strides.
static float * at(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (float *) ((char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}

static void randomize(struct ggml_tensor * t, double lo, double hi) {
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < t->ne[0]; i0++) {
                    *at(t, i0, i1, i2, i3) = (float) urand(lo, hi);
                }
}

static bool compute(struct ggml_context * ctx, struct ggml_tensor * out, int nth) {
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS;
}

// max |got - want| / max(1, |want|) over n contiguous floats of got
static double worst(const float * got, const double * want, int64_t n) {
    double w = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double e = fabs(got[i] - want[i]) / fmax(1.0, fabs(want[i]));
        w = e > w || isnan(e) ? e : w;
    }
    return w;
}

static void quiet(enum ggml_log_level level, const char * text, void * user) {
    (void) level;
    (void) text;
    (void) user;
}

static void test_ssm_conv(void) {
    const int64_t d_conv = 4, ch = 300, n_t = 5, n_s = 3;
    for (int nth = 1; nth <= 3; nth++) {
        struct ggml_context * ctx = ggml_init((struct ggml_init_params) { 16u << 20, NULL, false });
        // sx stored [ch, d_conv-1+n_t, n_s] and viewed transposed: a strided time axis, as the graph feeds it
        struct ggml_tensor * base = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, ch, d_conv - 1 + n_t, n_s);
        struct ggml_tensor * sx = ggml_permute(ctx, base, 1, 0, 2, 3);
        struct ggml_tensor * c = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d_conv, ch);
        randomize(base, -2, 2);
        randomize(c, -1, 1);
        struct ggml_tensor * y = ggml_ssm_conv(ctx, sx, c);
        EXPECT(y && compute(ctx, y, nth), "ssm_conv computes (nth %d)", nth);
        double * want = malloc(sizeof(double) * (size_t) (ch * n_t * n_s));
        for (int64_t s = 0; s < n_s; s++)
            for (int64_t t = 0; t < n_t; t++)
                for (int64_t k = 0; k < ch; k++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < d_conv; j++) acc += (double) *at(c, j, k, 0, 0) * *at(sx, t + j, k, s, 0);
                    want[(s * n_t + t) * ch + k] = acc;
                }
        EXPECT(y && worst(y->data, want, ch * n_t * n_s) < 1e-5, "ssm_conv matches the loop (nth %d)", nth);
        free(want);
        ggml_free(ctx);
    }
}

static void test_gated_delta_net(void) {
    const int64_t S = 16, H = 4, H_k = 2, n_t = 6, n_s = 2, K = 2;
    for (int nth = 1; nth <= 3; nth++) {
        struct ggml_context * ctx = ggml_init((struct ggml_init_params) { 16u << 20, NULL, false });
        struct ggml_tensor * q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, H_k, n_t, n_s);
        struct ggml_tensor * k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, H_k, n_t, n_s);
        struct ggml_tensor * v = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, H, n_t, n_s);
        struct ggml_tensor * g = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, H, n_t, n_s);
        struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, H, n_t, n_s);
        struct ggml_tensor * st = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, S, H, n_s);
        randomize(q, -0.3, 0.3);
        randomize(k, -0.3, 0.3);
        randomize(v, -1, 1);
        randomize(g, -1, -0.05);
        randomize(b, 0.1, 0.9);
        randomize(st, -0.5, 0.5);
        struct ggml_tensor * o = ggml_gated_delta_net(ctx, q, k, v, g, b, st, K);
        EXPECT(o && compute(ctx, o, nth), "gated_delta_net computes (nth %d)", nth);
        const int64_t n_out = S * H * n_t * n_s, n_st = S * S * H * n_s;
        double * want = calloc((size_t) (n_out + K * n_st), sizeof(double));
        double * M = malloc(sizeof(double) * (size_t) (S * S));  // M[i*S + j]: key i, value j
        for (int64_t s = 0; s < n_s; s++)
            for (int64_t h = 0; h < H; h++) {
                for (int64_t i = 0; i < S; i++)
                    for (int64_t j = 0; j < S; j++) M[i * S + j] = *at(st, i, j, h, s);
                for (int64_t t = 0; t < n_t; t++) {
                    const double decay = exp(*at(g, 0, h, t, s)), beta = *at(b, 0, h, t, s);
                    for (int64_t i = 0; i < S * S; i++) M[i] *= decay;
                    for (int64_t j = 0; j < S; j++) {
                        double pred = 0.0;
                        for (int64_t i = 0; i < S; i++) pred += M[i * S + j] * *at(k, i, h % H_k, t, s);
                        const double d = beta * (*at(v, j, h, t, s) - pred);
                        for (int64_t i = 0; i < S; i++) M[i * S + j] += *at(k, i, h % H_k, t, s) * d;
                    }
                    for (int64_t j = 0; j < S; j++) {
                        double y = 0.0;
                        for (int64_t i = 0; i < S; i++) y += M[i * S + j] * *at(q, i, h % H_k, t, s);
                        want[((s * n_t + t) * H + h) * S + j] = y / sqrt((double) S);
                    }
                    const int64_t back = n_t - 1 - t;
                    for (int64_t i = 0; back < K && i < S; i++)
                        for (int64_t j = 0; j < S; j++) {
                            want[n_out + back * n_st + ((s * H + h) * S + j) * S + i] = M[i * S + j];
                        }
                }
            }
        EXPECT(o && worst(o->data, want, n_out + K * n_st) < 1e-5, "gated_delta_net matches the loop (nth %d)", nth);
        free(M);
        free(want);
        ggml_free(ctx);
    }
}

static void test_elementwise(void) {
    struct ggml_context * ctx = ggml_init((struct ggml_init_params) { 16u << 20, NULL, false });
    const float xs[] = { -INFINITY, -100.0f, -20.5f, -1.0f, 0.0f, 0.5f, 19.9f, 20.1f, 100.0f, INFINITY };
    const int n = (int) (sizeof(xs) / sizeof(xs[0]));
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    memcpy(x->data, xs, sizeof(xs));
    struct ggml_tensor *sg = ggml_sigmoid(ctx, x), *sp = ggml_softplus(ctx, x);
    EXPECT(compute(ctx, sg, 1) && compute(ctx, sp, 1), "sigmoid / softplus compute");
    double wsg[10], wsp[10];
    for (int i = 0; i < n; i++) {
        wsg[i] = 1.0 / (1.0 + exp(-(double) xs[i]));
        wsp[i] = xs[i] > 20.0f ? xs[i] : log1p(exp((double) xs[i]));
    }
    EXPECT(((float *) sg->data)[0] == 0.0f && ((float *) sg->data)[n - 1] == 1.0f, "sigmoid(-inf) = 0, sigmoid(inf) = 1");
    EXPECT(worst((float *) sg->data + 1, wsg + 1, n - 2) < 1e-6, "sigmoid matches");
    EXPECT(((float *) sp->data)[0] == 0.0f && isinf(((float *) sp->data)[n - 1]), "softplus(-inf) = 0, softplus(inf) = inf");
    EXPECT(worst((float *) sp->data + 1, wsp + 1, n - 2) < 1e-6, "softplus matches");
    // l2_norm: an all-zero row stays zero (eps), others get unit length
    struct ggml_tensor * r = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 37, 3);
    randomize(r, -2, 2);
    memset(r->data, 0, 37 * sizeof(float));
    struct ggml_tensor * l2 = ggml_l2_norm(ctx, r, 1e-6f);
    EXPECT(compute(ctx, l2, 2), "l2_norm computes");
    double len1 = 0.0, len0 = 0.0;
    for (int i = 0; i < 37; i++) {
        len0 += fabs(((float *) l2->data)[i]);
        len1 += pow(((float *) l2->data)[37 + i], 2);
    }
    EXPECT(len0 == 0.0 && fabs(len1 - 1.0) < 1e-6, "l2_norm: zero row %g, unit row %g", len0, len1);
    ggml_free(ctx);
}

static void test_refusals(void) {
    ggml_log_set(quiet, NULL);
    struct ggml_context * ctx = ggml_init((struct ggml_init_params) { 4u << 20, NULL, false });
    struct ggml_tensor * sx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 7, 8, 2);
    struct ggml_tensor * sx16 = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 7, 8, 2);
    struct ggml_tensor * c = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 8);
    struct ggml_tensor * c9 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 9);
    struct ggml_tensor * c_long = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 8);
    EXPECT(ggml_ssm_conv(ctx, sx16, c) == NULL, "ssm_conv refuses F16");
    EXPECT(ggml_ssm_conv(ctx, sx, c9) == NULL && ggml_ssm_conv(ctx, sx, c_long) == NULL, "ssm_conv refuses bad shapes");
    EXPECT(ggml_ssm_conv(ctx, NULL, c) == NULL, "ssm_conv refuses NULL");
    struct ggml_tensor * qk = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 3, 2, 1);   // 3 key heads under 4 value heads
    struct ggml_tensor * q2 = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 2, 2, 1);
    struct ggml_tensor * v = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 4, 2, 1);
    struct ggml_tensor * gb = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, 4, 2, 1);
    struct ggml_tensor * gbad = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 4, 2, 1);
    struct ggml_tensor * st = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 4, 1);
    struct ggml_tensor * st_t = ggml_transpose(ctx, st);
    EXPECT(ggml_gated_delta_net(ctx, q2, q2, v, gb, gb, st, 1) != NULL, "gated_delta_net takes good inputs");
    EXPECT(ggml_gated_delta_net(ctx, qk, qk, v, gb, gb, st, 1) == NULL, "H %% H_k != 0 refused");
    EXPECT(ggml_gated_delta_net(ctx, q2, q2, v, gbad, gb, st, 1) == NULL, "g of width 2 refused");
    EXPECT(ggml_gated_delta_net(ctx, q2, q2, v, gb, gb, st, 0) == NULL, "K = 0 refused");
    EXPECT(ggml_gated_delta_net(ctx, q2, q2, v, gb, gb, st_t, 1) == NULL, "a transposed state refused");
    EXPECT(ggml_sigmoid(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4)) == NULL && ggml_l2_norm(ctx, sx, -1.0f) == NULL,
           "sigmoid refuses I32, l2_norm a negative eps");
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

int main(void) {
    test_ssm_conv();
    test_gated_delta_net();
    test_elementwise();
    test_refusals();
    printf("test_ops_ssm: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
