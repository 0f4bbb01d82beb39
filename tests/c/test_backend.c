// test_backend.c — the backend interface in C (and so under ASan/UBSan): buffers and tensor
// data on the CPU and the test device, the scheduler's splits and copies for a graph whose
// weights live on the device, and misuse that must log instead of aborting.
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int n_fail = 0;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            n_fail++;                                                                \
        }                                                                            \
    } while (0)

static struct ggml_context * meta_ctx(int n) {
    struct ggml_init_params p = { (size_t) n * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    return ggml_init(p);
}

// y = relu-free softmax(W x) with W on `where`; returns the scheduler's split count.
static int run(ggml_backend_t where, ggml_backend_t cpu, float * out) {
    enum {
        K = 32,
        M = 16,
        N = 3
    };
    float w[M * K], x[N * K];
    for (int i = 0; i < M * K; i++) w[i] = sinf((float) i * 0.37f);
    for (int i = 0; i < N * K; i++) x[i] = cosf((float) i * 0.11f);
    struct ggml_context * wc = meta_ctx(2);
    struct ggml_tensor * tw = ggml_new_tensor_2d(wc, GGML_TYPE_F32, K, M);
    ggml_backend_buffer_t wb = ggml_backend_alloc_ctx_tensors(wc, where);
    ggml_backend_buffer_set_usage(wb, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_tensor_set(tw, w, 0, sizeof(w));
    struct ggml_context * gc = meta_ctx(16);
    struct ggml_tensor * tx = ggml_new_tensor_2d(gc, GGML_TYPE_F32, K, N);
    ggml_set_input(tx);
    struct ggml_tensor * y = ggml_soft_max(gc, ggml_mul_mat(gc, tw, tx));
    struct ggml_tensor * s = ggml_sum_rows(gc, y);   // not on the test device
    struct ggml_cgraph * gf = ggml_new_graph(gc);
    ggml_build_forward_expand(gf, s);
    ggml_build_forward_expand(gf, y);
    ggml_backend_t bes[2] = { where, cpu };
    const int n_be = where == cpu ? 1 : 2;
    ggml_backend_sched_t sched = ggml_backend_sched_new(where == cpu ? &bes[1] : bes, NULL, n_be, 64, false, true);
    CHECK(sched != NULL);
    CHECK(ggml_backend_sched_alloc_graph(sched, gf));
    ggml_backend_tensor_set(tx, x, 0, sizeof(x));
    CHECK(ggml_backend_sched_graph_compute(sched, gf) == GGML_STATUS_SUCCESS);
    // a second computation of the same graph reuses the split plan
    ggml_backend_sched_graph_unchanged(sched, gf);
    CHECK(ggml_backend_sched_graph_compute(sched, gf) == GGML_STATUS_SUCCESS);
    ggml_backend_tensor_get(y, out, 0, sizeof(float) * M * N);
    float sums[N];
    ggml_backend_tensor_get(s, sums, 0, sizeof(sums));
    for (int i = 0; i < N; i++) CHECK(fabsf(sums[i] - 1.0f) < 1e-5f);
    const int n_splits = ggml_backend_sched_get_n_splits(sched);
    ggml_backend_sched_free(sched);
    ggml_free(gc);
    ggml_backend_buffer_free(wb);
    ggml_free(wc);
    return n_splits;
}

int main(void) {
    ggml_backend_test_device_enable(true);
    ggml_backend_load_all();
    CHECK(ggml_backend_dev_count() >= 2);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_t dev = ggml_backend_init_by_name("TestDevice0", NULL);
    CHECK(cpu != NULL && dev != NULL);
    CHECK(ggml_backend_is_cpu(cpu) && !ggml_backend_is_cpu(dev));
    CHECK(!ggml_backend_buft_is_host(ggml_backend_get_default_buffer_type(dev)));

    float a[48], b[48];
    CHECK(run(cpu, cpu, a) == 1);
    CHECK(run(dev, cpu, b) == 2);
    CHECK(memcmp(a, b, sizeof(a)) == 0);   // same kernels, same bits

    // misuse: logged, no abort
    struct ggml_context * c = meta_ctx(2);
    struct ggml_tensor * t = ggml_new_tensor_1d(c, GGML_TYPE_F32, 4);
    float v[4] = { 1, 2, 3, 4 };
    ggml_backend_tensor_set(t, v, 0, sizeof(v));          // no data
    ggml_backend_tensor_get(NULL, v, 0, sizeof(v));
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(c, dev);
    ggml_backend_tensor_set(t, v, 8, sizeof(v));          // past the end
    ggml_backend_t wrong[2] = { cpu, dev };
    CHECK(ggml_backend_sched_new(wrong, NULL, 2, 16, false, true) == NULL);
    CHECK(ggml_backend_sched_new(NULL, NULL, 0, 16, false, true) == NULL);
    CHECK(ggml_backend_buft_alloc_buffer(ggml_backend_cpu_repack_buffer_type(), 64) == NULL);
    CHECK(ggml_backend_graph_compute(NULL, NULL) == GGML_STATUS_FAILED);
    ggml_backend_buffer_free(buf);
    ggml_backend_buffer_free(NULL);
    ggml_free(c);
    ggml_backend_free(dev);
    ggml_backend_free(cpu);
    ggml_backend_free(NULL);
    ggml_backend_test_device_enable(false);
    if (n_fail) {
        fprintf(stderr, "test_backend: %d check(s) failed\n", n_fail);
        return 1;
    }
    printf("test_backend: ok\n");
    return 0;
}
