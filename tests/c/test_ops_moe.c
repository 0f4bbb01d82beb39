// test_ops_moe.c — the expert ops against naive double-precision loops written here:
// mul_mat_id (F32 experts, b shared by the chosen experts or one row each, strided ids), argsort
// and top_k (ties by lower index), sigmoid; on 1, 2 and 3 threads; plus the constructors'
// refusals and an out-of-range expert id failing the computation instead of reading past the experts.
#include "ggml.h"
#include "ggml-cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_fail = 0, g_checks = 0;
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

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static float frand(void) { // uniform in [-1, 1)
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float) ((double) (g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void quiet_log(enum ggml_log_level level, const char * text, void * user) {
    (void) level;
    (void) text;
    (void) user;
}

static struct ggml_context * new_ctx(void) {
    struct ggml_init_params p = { 32 * 1024 * 1024, NULL, false };
    return ggml_init(p);
}

static bool run(struct ggml_context * ctx, struct ggml_tensor * out, int nth) {
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS;
}

static float * f32_at(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2) {
    return (float *) ((char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2]);
}

static int32_t * i32_at(const struct ggml_tensor * t, int64_t i0, int64_t i1) {
    return (int32_t *) ((char *) t->data + i0 * t->nb[0] + i1 * t->nb[1]);
}

static void test_mul_mat_id(void) {
    const int64_t K = 96, M = 40, n_as = 5, n_used = 2, n_t = 9;
    for (int n_b = 1; n_b <= 2; n_b++)
        for (int nth = 1; nth <= 3; nth++) {
            struct ggml_context * ctx = new_ctx();
            struct ggml_tensor * as = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, M, n_as);
            struct ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, n_b, n_t);
        // ids as a strided view: every other column of a wider I32 tensor
            struct ggml_tensor * ids_base = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2 * n_used, n_t);
            struct ggml_tensor * ids = ggml_view_2d(ctx, ids_base, n_used, n_t, ids_base->nb[1], 0);
            for (int64_t i = 0; i < ggml_nelements(as); i++) ((float *) as->data)[i] = frand();
            for (int64_t i = 0; i < ggml_nelements(b); i++) ((float *) b->data)[i] = frand();
            for (int64_t t = 0; t < n_t; t++)
                for (int64_t j = 0; j < n_used; j++) {
                    *i32_at(ids, j, t) = (int32_t) ((t * 3 + j * 2) % (n_as - 1)); // expert n_as - 1 never chosen
                }
            struct ggml_tensor * out = ggml_mul_mat_id(ctx, as, b, ids);
            EXPECT(out && out->type == GGML_TYPE_F32 && out->ne[0] == M && out->ne[1] == n_used && out->ne[2] == n_t,
                   "mul_mat_id shape");
            EXPECT(out && run(ctx, out, nth), "mul_mat_id compute (n_b %d, %d threads)", n_b, nth);
            double worst = 0;
            for (int64_t t = 0; out && t < n_t; t++)
                for (int64_t j = 0; j < n_used; j++) {
                    const int e = *i32_at(ids, j, t);
                    for (int64_t m = 0; m < M; m++) {
                        double s = 0;
                        for (int64_t k = 0; k < K; k++) s += (double) *f32_at(as, k, m, e) * *f32_at(b, k, j % n_b, t);
                        worst = fmax(worst, fabs(s - *f32_at(out, m, j, t)));
                    }
                }
            EXPECT(worst < 1e-4, "mul_mat_id vs naive (n_b %d, %d threads): %g", n_b, nth, worst);
            ggml_free(ctx);
        }
}

// True if (a, i) sorts before (b, j) descending (ties by lower index).
static bool before_desc(float a, int i, float b, int j) { return a > b || (a == b && i < j); }

static void test_sort(void) {
    const int64_t n = 70, rows = 33;
    for (int nth = 1; nth <= 3; nth++) {
        struct ggml_context * ctx = new_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, rows);
        for (int64_t i = 0; i < n * rows; i++) ((float *) a->data)[i] = roundf(frand() * 6.0f) / 2.0f; // many ties
        struct ggml_tensor * asc = ggml_argsort(ctx, a, GGML_SORT_ORDER_ASC);
        struct ggml_tensor * desc = ggml_argsort(ctx, a, GGML_SORT_ORDER_DESC);
        struct ggml_tensor * top = ggml_top_k(ctx, a, 5);
        struct ggml_tensor * sig = ggml_sigmoid(ctx, a);
        EXPECT(asc && desc && top && sig && top->ne[0] == 5 && top->type == GGML_TYPE_I32, "sort constructors");
        struct ggml_cgraph * gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, asc);
        ggml_build_forward_expand(gf, desc);
        ggml_build_forward_expand(gf, top);
        ggml_build_forward_expand(gf, sig);
        EXPECT(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS, "sort compute");
        for (int64_t r = 0; r < rows; r++) {
            const float * x = (const float *) a->data + r * n;
            int order[70];
            for (int i = 0; i < n; i++) order[i] = i;
            // insertion sort: stable, so ties keep the lower index first
            for (int i = 1; i < n; i++) {
                const int v = order[i];
                int p = i;
                while (p > 0 && before_desc(x[v], v, x[order[p - 1]], order[p - 1])) {
                    order[p] = order[p - 1];
                    p--;
                }
                order[p] = v;
            }
            bool ok_desc = true, ok_top = true, ok_asc = true, ok_sig = true;
            for (int i = 0; i < n; i++) {
                ok_desc = ok_desc && *i32_at(desc, i, r) == order[i];
                if (i < 5) ok_top = ok_top && *i32_at(top, i, r) == order[i];
                ok_sig = ok_sig && fabs(*f32_at(sig, i, r, 0) - 1.0 / (1.0 + exp(-x[i]))) < 1e-6;
            }
            for (int i = 1; i < n; i++) {
                const int p = *i32_at(asc, i - 1, r), q = *i32_at(asc, i, r);
                ok_asc = ok_asc && (x[p] < x[q] || (x[p] == x[q] && p < q));
            }
            EXPECT(ok_desc && ok_top && ok_asc && ok_sig, "row %lld sorted (%d threads)", (long long) r, nth);
        }
        ggml_free(ctx);
    }
}

static void test_refusals_and_bad_ids(void) {
    struct ggml_context * ctx = new_ctx();
    ggml_log_set(quiet_log, NULL);
    struct ggml_tensor * as = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 32, 16, 4);
    struct ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 32, 1, 3);
    struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 3);
    EXPECT(ggml_mul_mat_id(ctx, as, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 31, 1, 3), ids) == NULL, "K mismatch refused");
    EXPECT(ggml_mul_mat_id(ctx, as, b, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 3)) == NULL, "F32 ids refused");
    EXPECT(ggml_mul_mat_id(ctx, as, b, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 5, 3)) == NULL, "5 of 4 experts refused");
    EXPECT(ggml_mul_mat_id(ctx, NULL, b, ids) == NULL, "NULL refused");
    EXPECT(ggml_top_k(ctx, b, 0) == NULL && ggml_top_k(ctx, ids, 1) == NULL, "top_k refuses k 0 and I32 rows");
    EXPECT(ggml_argsort(ctx, b, (enum ggml_sort_order) 3) == NULL, "argsort refuses an unknown order");
    memset(as->data, 0, ggml_nbytes(as));
    memset(b->data, 0, ggml_nbytes(b));
    const int32_t bad[6] = { 0, 1, 2, 4, 3, 0 }; // 4: one past the experts
    memcpy(ids->data, bad, sizeof(bad));
    struct ggml_tensor * out = ggml_mul_mat_id(ctx, as, b, ids);
    for (int nth = 1; nth <= 3; nth++) {
        EXPECT(out && !run(ctx, out, nth), "an id past the experts fails the computation (%d threads)", nth);
    }
    ggml_log_set(NULL, NULL);
    ggml_free(ctx);
}

int main(void) {
    test_mul_mat_id();
    test_sort();
    test_refusals_and_bad_ids();
    printf("test_ops_moe: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
