// test_fuse_norm.c — the CPU plan's RMS_NORM + MUL(weight) fusion: the fused kernel's bits equal
// those of rms_norm then mul run one after the other (whichever side of the MUL the norm is on,
// in place or not, on 1..4 threads, with odd row lengths and many rows), the fused path is really
// taken (the norm's own output is never written), and a norm with another consumer, or one
// marked as a graph output, is not fused (its output is written and correct).
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200112L
#endif
#include "ggml.h"
#include "ggml-impl.h"
#include "ggml-cpu/cpu-impl.h"
#include "ggml-cpu/threadpool.h"

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

static void fill(struct ggml_tensor * t, uint32_t seed, float scale) {
    uint32_t x = seed * 2654435761u + 1;
    float * d = t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        x = x * 1664525u + 1013904223u;
        d[i] = ((float) (x >> 8) / (float) (1u << 24) - 0.5f) * scale;
    }
}

static const uint32_t SENTINEL = 0x7fc0beefu; // a NaN payload no kernel produces

static void fill_sentinel(struct ggml_tensor * t) {
    uint32_t * d = t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        d[i] = SENTINEL;
    }
}

static bool all_sentinel(const struct ggml_tensor * t) {
    const uint32_t * d = t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        if (d[i] != SENTINEL) {
            return false;
        }
    }
    return true;
}

// Reference: the two unfused kernels, single-threaded, into fresh tensors.
static void reference(struct ggml_context * c, const struct ggml_tensor * x, const struct ggml_tensor * w, float eps,
                      bool norm_left, float * out) {
    struct ggml_tensor * n = ggml_rms_norm(c, (struct ggml_tensor *) x, eps);
    struct ggml_tensor * m = norm_left ? ggml_mul(c, n, (struct ggml_tensor *) w) : ggml_mul(c, (struct ggml_tensor *) w, n);
    const struct ggml_compute_params p = { 0, 1, 0, NULL, NULL };
    ggml_compute_forward_rms_norm(&p, n);
    ggml_compute_forward_mul(&p, m);
    memcpy(out, m->data, ggml_nbytes(m));
}

static void test_fused_bits(int64_t ne0, int64_t rows, int nth, bool norm_left, bool inplace, uint32_t seed) {
    struct ggml_init_params ip = { 32u << 20, NULL, false };
    struct ggml_context * c = ggml_init(ip);
    CHECK(c != NULL);
    if (!c) {
        return;
    }
    struct ggml_tensor * x = ggml_new_tensor_2d(c, GGML_TYPE_F32, ne0, rows);
    struct ggml_tensor * w = ggml_new_tensor_1d(c, GGML_TYPE_F32, ne0);
    // Large and tiny magnitudes so the sum of squares and the scale are far from 1.
    fill(x, seed, seed % 2 ? 300.0f : 1e-3f);
    fill(w, seed + 7, 2.0f);
    const float eps = 1e-5f;
    float * want = malloc((size_t) ggml_nbytes(x));
    CHECK(want != NULL);
    reference(c, x, w, eps, norm_left, want);

    struct ggml_tensor * n = inplace ? ggml_rms_norm_inplace(c, x, eps) : ggml_rms_norm(c, x, eps);
    struct ggml_tensor * m = norm_left ? ggml_mul(c, n, w) : ggml_mul(c, w, n);
    struct ggml_cgraph * gf = ggml_new_graph(c);
    ggml_build_forward_expand(gf, m);
    if (!inplace) {
        fill_sentinel(n);
    }
    struct ggml_threadpool * tp = ggml_threadpool_new(nth);
    CHECK(tp != NULL);
    CHECK(ggml_graph_compute(gf, tp) == GGML_STATUS_SUCCESS);
    CHECK(memcmp(m->data, want, ggml_nbytes(m)) == 0);
    if (!inplace) {
        CHECK(all_sentinel(n)); // fused: the norm's own output was never written
    }
    // The planning marks must not leak into the graph: eps is all the norm carries.
    CHECK(ggml_get_op_params_i32(n, 15) == 0);
    // Again on the kept plan.
    ggml_threadpool_graph_unchanged(tp, gf);
    CHECK(ggml_graph_compute(gf, tp) == GGML_STATUS_SUCCESS);
    if (!inplace) {
        CHECK(memcmp(m->data, want, ggml_nbytes(m)) == 0);
    }
    ggml_threadpool_free(tp);
    free(want);
    ggml_free(c);
}

// A norm with a second consumer (or marked as an output) keeps its own step and its output.
static void test_not_fused(bool output_flag) {
    struct ggml_init_params ip = { 8u << 20, NULL, false };
    struct ggml_context * c = ggml_init(ip);
    CHECK(c != NULL);
    if (!c) {
        return;
    }
    const int64_t ne0 = 96, rows = 3;
    struct ggml_tensor * x = ggml_new_tensor_2d(c, GGML_TYPE_F32, ne0, rows);
    struct ggml_tensor * w = ggml_new_tensor_1d(c, GGML_TYPE_F32, ne0);
    fill(x, 11, 4.0f);
    fill(w, 12, 1.0f);
    struct ggml_tensor * n = ggml_rms_norm(c, x, 1e-6f);
    struct ggml_tensor * m = ggml_mul(c, n, w);
    struct ggml_cgraph * gf = ggml_new_graph(c);
    struct ggml_tensor * top = m;
    if (output_flag) {
        ggml_set_output(n);
    } else {
        top = ggml_add(c, m, n); // the norm is read again after the MUL
    }
    ggml_build_forward_expand(gf, top);
    fill_sentinel(n);
    struct ggml_threadpool * tp = ggml_threadpool_new(2);
    CHECK(ggml_graph_compute(gf, tp) == GGML_STATUS_SUCCESS);
    float * want = malloc((size_t) ggml_nbytes(x));
    reference(c, x, w, 1e-6f, true, want);
    CHECK(!all_sentinel(n));
    CHECK(memcmp(m->data, want, ggml_nbytes(m)) == 0);
    if (!output_flag) {
        const float * t = top->data;
        const float * nd = n->data;
        bool ok = true;
        for (int64_t i = 0; i < ne0 * rows; i++) {
            ok = ok && t[i] == want[i] + nd[i];
        }
        CHECK(ok);
    }
    free(want);
    ggml_threadpool_free(tp);
    ggml_free(c);
}

int main(void) {
    const int64_t shapes[][2] = { { 576, 1 }, { 576, 7 }, { 37, 5 }, { 1, 3 }, { 2048, 2 }, { 130, 64 } };
    uint32_t seed = 1;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        for (int nth = 1; nth <= 4; nth++) {
            for (int side = 0; side < 2; side++) {
                if (side == 1 && shapes[s][1] != 1) {
                    continue; // MUL broadcasts its second source only: weight first needs one row
                }
                for (int inplace = 0; inplace < 2; inplace++) {
                    test_fused_bits(shapes[s][0], shapes[s][1], nth, side == 0, inplace == 1, seed++);
                }
            }
        }
    }
    test_not_fused(false);
    test_not_fused(true);
    if (n_fail) {
        fprintf(stderr, "test_fuse_norm: %d check(s) failed\n", n_fail);
        return 1;
    }
    printf("test_fuse_norm: ok\n");
    return 0;
}
