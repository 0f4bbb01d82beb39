// test_core.c — the ggml core: arena, tensors, views, op validation, graph order, the memory
// planner, the thread pool, ABI self-description and half-precision conversion.
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-impl.h"
#include "ggml-cpu/cpu-impl.h"

#include <math.h>
#include <stdint.h>
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

// ---- log capture ----

static int n_errors = 0;
static char last_error[1024];

static void capture_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        n_errors++;
        snprintf(last_error, sizeof(last_error), "%s", text);
    }
}

// True if an error was logged since the last call and its text contains `needle`.
static bool logged_error(const char * needle) {
    const bool ok = n_errors > 0 && strstr(last_error, needle) != NULL;
    if (!ok) {
        fprintf(stderr, "  expected an error containing '%s', got %d errors, last: %s", needle, n_errors, last_error);
    }
    n_errors = 0;
    last_error[0] = '\0';
    return ok;
}

static struct ggml_context * new_ctx(size_t size, bool no_alloc) {
    struct ggml_init_params p = { size, NULL, no_alloc };
    return ggml_init(p);
}

static void fill(struct ggml_tensor * t, float base) {
    float * d = t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        d[i] = base + 0.25f * (float) (i % 17) - 0.01f * (float) (i % 5);
    }
}

// ---- arena ----

static void test_arena(void) {
    // Exhaustion returns NULL with a logged reason, never aborts.
    struct ggml_context * ctx = new_ctx(4096, false);
    CHECK(ctx != NULL);
    int made = 0;
    struct ggml_tensor * t;
    while ((t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 37)) != NULL) {
        CHECK(((uintptr_t) t->data % GGML_MEM_ALIGN) == 0);
        CHECK(((uintptr_t) t % GGML_MEM_ALIGN) == 0);
        made++;
        CHECK(made < 100);
        if (made >= 100) break;
    }
    CHECK(made >= 1);
    CHECK(logged_error("exhausted"));
    CHECK(ggml_used_mem(ctx) <= 4096);
    CHECK(ggml_new_graph(ctx) == NULL);
    CHECK(logged_error("exhausted"));
    ggml_reset(ctx);
    CHECK(ggml_used_mem(ctx) == 0);
    CHECK(ggml_get_first_tensor(ctx) == NULL);
    ggml_free(ctx);

    // A caller's buffer that starts unaligned still yields aligned tensors and data.
    static char buf[64 * 1024];
    struct ggml_init_params p = { sizeof(buf) - 3, buf + 3, false };
    ctx = ggml_init(p);
    CHECK(ctx != NULL);
    for (int i = 1; i < 20; i++) {
        t = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, i * 7);
        CHECK(t && ((uintptr_t) t->data % GGML_MEM_ALIGN) == 0);
        CHECK(t && (char *) t->data >= buf && (char *) t->data + ggml_nbytes(t) <= buf + sizeof(buf));
    }
    ggml_free(ctx);

    // Overhead figures are enough for what they promise.
    const int n = 10;
    ctx = new_ctx((size_t) n * ggml_tensor_overhead() + ggml_graph_overhead(), true);
    for (int i = 0; i < n; i++) {
        CHECK(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 5, 6, 7, 8) != NULL);
    }
    CHECK(ggml_new_graph(ctx) != NULL);
    ggml_free(ctx);

    // Bad arguments.
    ctx = new_ctx(1 << 20, false);
    CHECK(ggml_new_tensor_1d(ctx, GGML_TYPE_Q4_0, 33) == NULL); // not a multiple of the block
    CHECK(logged_error("block"));
    CHECK(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, -1, 2) == NULL);
    CHECK(logged_error("negative"));
    CHECK(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, INT64_MAX / 2, 4, 4, 4) == NULL);
    CHECK(logged_error("overflow"));
    CHECK(ggml_new_tensor_1d(ctx, (enum ggml_type) 4, 8) == NULL); // removed Q4_2 id
    CHECK(logged_error("type"));

    // Iteration in creation order, lookup by name; graphs are not tensors.
    struct ggml_tensor * a = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), "a");
    CHECK(ggml_new_graph_custom(ctx, 16, false) != NULL);
    struct ggml_tensor * b = ggml_format_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), "b%d", 2);
    CHECK(ggml_get_first_tensor(ctx) == a);
    CHECK(ggml_get_next_tensor(ctx, a) == b);
    CHECK(ggml_get_next_tensor(ctx, b) == NULL);
    CHECK(ggml_get_tensor(ctx, "b2") == b);
    CHECK(ggml_get_tensor(ctx, "zz") == NULL);
    char long_name[200];
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    ggml_set_name(a, long_name);
    CHECK(strlen(ggml_get_name(a)) == GGML_MAX_NAME - 1);

    // Scalars and element access.
    struct ggml_tensor * s = ggml_new_f32(ctx, 2.5f);
    CHECK(s && ggml_get_f32_1d(s, 0) == 2.5f);
    struct ggml_tensor * h = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 8);
    ggml_set_f32(h, 0.5f);
    ggml_set_f32_1d(h, 3, -2.0f);
    CHECK(ggml_get_f32_1d(h, 0) == 0.5f && ggml_get_f32_1d(h, 3) == -2.0f);
    CHECK(isnan(ggml_get_f32_1d(h, 8)));
    CHECK(logged_error("out of range"));
    struct ggml_tensor * q = ggml_new_tensor_1d(ctx, GGML_TYPE_Q8_0, 32);
    CHECK(isnan(ggml_get_f32_1d(q, 0)));
    CHECK(logged_error("quantized"));
    CHECK(ggml_new_i32(ctx, -7) && ggml_get_f32_1d(ggml_get_first_tensor(ctx), 0) != 12345.0f);
    ggml_free(ctx);
    ggml_free(NULL);
}

// ---- tensors and views ----

static void test_views(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, false);
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 3, 4, 5);
    CHECK(ggml_nelements(a) == 120 && ggml_nrows(a) == 60 && ggml_n_dims(a) == 4);
    CHECK(ggml_nbytes(a) == 480 && ggml_is_contiguous(a));
    CHECK(a->nb[0] == 4 && a->nb[1] == 8 && a->nb[2] == 24 && a->nb[3] == 96);
    fill(a, 0.0f);

    // Permute moves dim i to position axis_i, with its stride; data is shared.
    struct ggml_tensor * p = ggml_permute(ctx, a, 1, 2, 0, 3);
    CHECK(p->ne[0] == 4 && p->ne[1] == 2 && p->ne[2] == 3 && p->ne[3] == 5);
    CHECK(p->nb[0] == 24 && p->nb[1] == 4 && p->nb[2] == 8 && p->nb[3] == 96);
    CHECK(p->data == a->data && p->view_src == a && p->op == GGML_OP_PERMUTE && p->src[0] == a);
    CHECK(!ggml_is_contiguous(p) && ggml_is_permuted(p) && ggml_is_transposed(p));
    CHECK(ggml_nbytes(p) == ggml_nbytes(a));
    CHECK(ggml_permute(ctx, a, 0, 0, 1, 2) == NULL);
    CHECK(logged_error("permutation"));

    struct ggml_tensor * tr = ggml_transpose(ctx, a);
    CHECK(tr->ne[0] == 3 && tr->ne[1] == 2 && tr->nb[0] == 8 && tr->nb[1] == 4 && tr->op == GGML_OP_TRANSPOSE);
    CHECK(ggml_is_transposed(tr) && !ggml_is_transposed(a));
    CHECK(ggml_reshape_1d(ctx, tr, 120) == NULL); // not contiguous
    CHECK(logged_error("contiguous"));
    CHECK(ggml_reshape_2d(ctx, a, 7, 3) == NULL);
    CHECK(logged_error("elements"));

    struct ggml_tensor * r = ggml_reshape_2d(ctx, a, 12, 10);
    CHECK(r && r->data == a->data && r->nb[1] == 48 && r->op == GGML_OP_RESHAPE && ggml_n_dims(r) == 2);

    // A view writes through to its source; views of views resolve to the root.
    struct ggml_tensor * v = ggml_view_2d(ctx, a, 2, 3, a->nb[1], a->nb[2]); // the second 2x3 plane
    CHECK(v && v->data == (char *) a->data + 24 && v->view_offs == 24 && v->view_src == a);
    ((float *) v->data)[1] = 42.0f;
    CHECK(((float *) a->data)[7] == 42.0f);
    struct ggml_tensor * vv = ggml_view_1d(ctx, v, 2, v->nb[1]);
    CHECK(vv && vv->view_src == a && vv->view_offs == 32 && vv->src[0] == v);
    CHECK(vv->data == (char *) a->data + 32);
    CHECK(ggml_view_1d(ctx, a, 121, 0) == NULL); // beyond the end
    CHECK(logged_error("beyond"));
    CHECK(ggml_view_1d(ctx, a, 1, 480) == NULL);
    CHECK(logged_error("beyond"));
    CHECK(ggml_view_1d(ctx, v, 1, 480 - 24) == NULL); // in bounds of a only from v's offset
    CHECK(logged_error("beyond"));
    CHECK(ggml_view_1d(ctx, v, 1, 480 - 28) != NULL);

    // A strided view's byte span counts its gaps.
    struct ggml_tensor * sv = ggml_view_2d(ctx, a, 1, 60, 8, 0);
    CHECK(ggml_nbytes(sv) == 59 * 8 + 4 && !ggml_is_contiguous(sv));

    // Broadcast and shape helpers.
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 1, 4, 1);
    CHECK(ggml_can_repeat(b, a) && !ggml_can_repeat(a, b));
    CHECK(ggml_are_same_shape(a, a) && !ggml_are_same_shape(a, b));
    struct ggml_tensor * d = ggml_dup_tensor(ctx, p);
    CHECK(ggml_are_same_shape(d, p) && ggml_is_contiguous(d) && d->data != a->data);

    // A no_alloc view gets data once its source has some.
    struct ggml_context * meta = new_ctx(1 << 16, true);
    struct ggml_tensor * m = ggml_new_tensor_2d(meta, GGML_TYPE_F32, 4, 4);
    struct ggml_tensor * mv = ggml_view_1d(meta, m, 4, 16);
    CHECK(m->data == NULL && mv->data == NULL && mv->view_offs == 16);
    ggml_free(meta);
    ggml_free(ctx);
}

// ---- op validation ----

static void test_op_validation(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, false);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 4);
    struct ggml_tensor * i32 = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);

    CHECK(ggml_mul_mat(ctx, a, b) == NULL);
    CHECK(logged_error("ggml_mul_mat") && strstr(last_error, "") != NULL);
    CHECK(ggml_add(ctx, a, b) == NULL);
    CHECK(logged_error("ggml_add"));
    CHECK(ggml_add(ctx, NULL, b) == NULL);
    CHECK(logged_error("ggml_add"));
    CHECK(ggml_mul(ctx, a, NULL) == NULL);
    CHECK(logged_error("ggml_mul"));
    CHECK(ggml_silu(ctx, i32) == NULL);
    CHECK(logged_error("ggml_silu"));
    CHECK(ggml_swiglu(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 7)) == NULL);
    CHECK(logged_error("ggml_swiglu"));
    CHECK(ggml_concat(ctx, a, b, 1) == NULL);
    CHECK(logged_error("ggml_concat"));
    CHECK(ggml_concat(ctx, a, b, 4) == NULL);
    CHECK(logged_error("ggml_concat"));
    CHECK(ggml_get_rows(ctx, a, a) == NULL);
    CHECK(logged_error("ggml_get_rows"));
    CHECK(ggml_cpy(ctx, a, b) == NULL);
    CHECK(logged_error("ggml_cpy"));
    CHECK(ggml_soft_max_ext(ctx, a, b, 1.0f, 0.0f) == NULL);
    CHECK(logged_error("ggml_soft_max_ext"));
    CHECK(ggml_argmax(ctx, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 4, 2)) == NULL);
    CHECK(logged_error("ggml_argmax"));

    // The error names the shapes too.
    CHECK(ggml_mul_mat(ctx, a, b) == NULL);
    CHECK(strstr(last_error, "[8, 4, 1, 1]") && strstr(last_error, "[6, 4, 1, 1]"));
    n_errors = 0;

    struct ggml_tensor * x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 2, 4); // head_dim, heads, tokens
    struct ggml_tensor * pos3 = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    CHECK(ggml_rope(ctx, x, pos3, 64, 0) == NULL);
    CHECK(logged_error("ggml_rope"));
    CHECK(ggml_rope(ctx, x, i32, 63, 0) == NULL);
    CHECK(logged_error("n_dims"));
    CHECK(ggml_rope(ctx, x, i32, 64, 1) == NULL);
    CHECK(logged_error("mode"));

    // Valid ops: shapes, types and op_params as ggml-impl.h documents.
    struct ggml_tensor * w = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 8, 5, 2);
    struct ggml_tensor * act = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 3, 6);
    struct ggml_tensor * mm = ggml_mul_mat(ctx, w, act);
    CHECK(mm && mm->ne[0] == 5 && mm->ne[1] == 3 && mm->ne[2] == 6 && mm->type == GGML_TYPE_F32);
    CHECK(mm && mm->src[0] == w && mm->src[1] == act && mm->op == GGML_OP_MUL_MAT);

    struct ggml_tensor * ro =
        ggml_rope_ext(ctx, x, i32, NULL, 32, GGML_ROPE_TYPE_NEOX, 4096, 500000.0f, 0.5f, 0.0f, 1.0f, 32.0f, 1.0f);
    CHECK(ro && ggml_get_op_params_i32(ro, 1) == 32 && ggml_get_op_params_i32(ro, 2) == GGML_ROPE_TYPE_NEOX);
    CHECK(ro && ggml_get_op_params_i32(ro, 4) == 4096 && ggml_get_op_params_f32(ro, 5) == 500000.0f);
    CHECK(ro && ggml_get_op_params_f32(ro, 6) == 0.5f && ggml_get_op_params_f32(ro, 9) == 32.0f);
    CHECK(ro && ro->src[1] == i32 && ro->src[2] == NULL);

    struct ggml_tensor * sm = ggml_soft_max_ext(ctx, a, ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 6), 0.125f, 0.0f);
    CHECK(sm && ggml_get_op_params_f32(sm, 0) == 0.125f && sm->src[1] && sm->src[1]->type == GGML_TYPE_F16);
    struct ggml_tensor * rn = ggml_rms_norm(ctx, a, 1e-5f);
    CHECK(rn && ggml_get_op_params_f32(rn, 0) == 1e-5f);
    struct ggml_tensor * sw = ggml_swiglu(ctx, a);
    CHECK(sw && sw->ne[0] == 4 && sw->ne[1] == 4 && sw->src[1] == NULL);
    struct ggml_tensor * gr = ggml_get_rows(ctx, w, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 7, 2));
    CHECK(gr && gr->ne[0] == 8 && gr->ne[1] == 7 && gr->ne[2] == 2 && gr->type == GGML_TYPE_F32);
    struct ggml_tensor * am = ggml_argmax(ctx, a);
    CHECK(am && am->type == GGML_TYPE_I32 && am->ne[0] == 4);
    struct ggml_tensor * ct = ggml_concat(ctx, a, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3), 1);
    CHECK(ct && ct->ne[1] == 7 && ggml_get_op_params_i32(ct, 0) == 1);

    // Inplace: the result views a.
    struct ggml_tensor * ai = ggml_add_inplace(ctx, a, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8));
    CHECK(ai && ai->view_src == a && ai->data == a->data && ai->op == GGML_OP_ADD);
    struct ggml_tensor * si = ggml_scale_inplace(ctx, ai, 2.0f);
    CHECK(si && si->view_src == a && ggml_get_op_params_f32(si, 0) == 2.0f);

    // cpy / set_rows return views of the destination with the op recorded.
    struct ggml_tensor * dst = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 32);
    struct ggml_tensor * cp = ggml_cpy(ctx, a, dst);
    CHECK(cp && cp->view_src == dst && cp->data == dst->data && cp->op == GGML_OP_CPY);
    CHECK(cp && cp->src[0] == a && cp->src[1] == dst);
    struct ggml_tensor * cache = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 16);
    struct ggml_tensor * sr = ggml_set_rows(ctx, cache, a, i32);
    CHECK(sr && sr->view_src == cache && sr->op == GGML_OP_SET_ROWS && sr->src[0] == a && sr->src[1] == i32);
    CHECK(ggml_set_rows(ctx, cache, b, i32) == NULL);
    CHECK(logged_error("ggml_set_rows"));

    // Attention result is [Dv, H, n_q].
    struct ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 3, 6);
    struct ggml_tensor * k = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 16, 10, 2);
    struct ggml_tensor * vt = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 12, 10, 2);
    struct ggml_tensor * mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 10, 4);
    struct ggml_tensor * fa = ggml_flash_attn_ext(ctx, q, k, vt, mask, 0.25f, 0.0f, 0.0f);
    CHECK(fa && fa->ne[0] == 12 && fa->ne[1] == 6 && fa->ne[2] == 3 && fa->ne[3] == 1);
    CHECK(fa && fa->src[3] == mask && ggml_get_op_params_f32(fa, 0) == 0.25f);
    CHECK(ggml_flash_attn_ext(ctx, q, ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 16, 10, 4), vt, mask, 1, 0, 0) == NULL);
    CHECK(logged_error("ggml_flash_attn_ext"));
    ggml_free(ctx);
}

// ---- graphs ----

static bool index_of(struct ggml_cgraph * g, struct ggml_tensor * t, int * idx) {
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        if (ggml_graph_node(g, i) == t) {
            *idx = i;
            return true;
        }
    }
    return false;
}

static void check_topological(struct ggml_cgraph * g) {
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        struct ggml_tensor * n = ggml_graph_node(g, i);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            int k;
            if (n->src[j] && index_of(g, n->src[j], &k)) {
                CHECK(k < i);
            }
        }
    }
}

static void test_graph(void) {
    struct ggml_context * ctx = new_ctx(1 << 22, false);
    // Diamond: b is read by c1 and c2. b scales its source in place, so running it twice would
    // show in the result (27x instead of 9x).
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1000);
    fill(a, 1.0f);
    float a0[1000];
    memcpy(a0, a->data, sizeof(a0));
    struct ggml_tensor * b = ggml_scale_inplace(ctx, a, 3.0f);
    struct ggml_tensor * c1 = ggml_scale(ctx, b, 1.0f);
    struct ggml_tensor * c2 = ggml_scale(ctx, b, 2.0f);
    struct ggml_tensor * d = ggml_add(ctx, c1, c2);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, d);
    ggml_build_forward_expand(g, d);  // idempotent
    ggml_build_forward_expand(g, c1); // already in
    CHECK(ggml_graph_n_nodes(g) == 4);
    CHECK(ggml_graph_n_leafs(g) == 1);
    CHECK(ggml_graph_node(g, -1) == d && ggml_graph_node(g, 3) == d);
    CHECK(ggml_graph_node(g, 4) == NULL && ggml_graph_node(g, -5) == NULL);
    int ib = -1, ic1 = -1, ic2 = -1, id = -1;
    CHECK(index_of(g, b, &ib) && index_of(g, c1, &ic1) && index_of(g, c2, &ic2) && index_of(g, d, &id));
    CHECK(ib < ic1 && ib < ic2 && ic1 < id && ic2 < id);
    check_topological(g);
    ggml_set_name(c2, "c2");
    CHECK(ggml_graph_get_tensor(g, "c2") == c2);

    CHECK(ggml_graph_compute_with_ctx(ctx, g, 2) == GGML_STATUS_SUCCESS);
    bool ok = true;
    for (int i = 0; i < 1000; i++) {
        ok = ok && fabsf(((float *) d->data)[i] - 9.0f * a0[i]) <= 1e-4f * fabsf(9.0f * a0[i]) + 1e-6f;
    }
    CHECK(ok);

    // Clearing allows a rebuild.
    ggml_graph_clear(g);
    CHECK(ggml_graph_n_nodes(g) == 0 && ggml_graph_n_leafs(g) == 0);
    ggml_build_forward_expand(g, c2);
    CHECK(ggml_graph_n_nodes(g) == 2);

    // Overflow and NULL tensors leave a graph that refuses to compute.
    struct ggml_cgraph * small = ggml_new_graph_custom(ctx, 2, false);
    struct ggml_tensor * x = a;
    for (int i = 0; i < 5; i++) {
        x = ggml_scale(ctx, x, 1.0f);
    }
    ggml_build_forward_expand(small, x);
    CHECK(logged_error("graph full"));
    CHECK(ggml_graph_compute_with_ctx(ctx, small, 1) == GGML_STATUS_FAILED);
    CHECK(logged_error("incomplete"));
    struct ggml_cgraph * gnull = ggml_new_graph(ctx);
    ggml_build_forward_expand(gnull, ggml_add(ctx, a, NULL));
    n_errors = 0;
    CHECK(ggml_graph_compute_with_ctx(ctx, gnull, 1) == GGML_STATUS_FAILED);
    CHECK(ggml_new_graph_custom(ctx, 16, true) == NULL);
    CHECK(logged_error("gradients"));

    // A deep chain (iterative traversal, no recursion limit).
    struct ggml_cgraph * deep = ggml_new_graph_custom(ctx, 6000, false);
    struct ggml_tensor * y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    for (int i = 0; i < 5000; i++) {
        y = ggml_view_1d(ctx, y, 1, 0);
    }
    ggml_build_forward_expand(deep, y);
    CHECK(ggml_graph_n_nodes(deep) == 5000 && ggml_graph_n_leafs(deep) == 1);
    ggml_free(ctx);
}

// ---- memory planner ----

// A small MLP-like chain; `inplace` ops exercise block reuse.
static struct ggml_tensor * build_net(struct ggml_context * ctx, struct ggml_tensor * w, struct ggml_tensor * x,
                                      struct ggml_tensor * bias) {
    struct ggml_tensor * h = ggml_mul_mat(ctx, w, x);          // [64, 16]
    for (int i = 0; i < 6; i++) {
        struct ggml_tensor * t = ggml_add(ctx, h, bias);
        t = ggml_silu(ctx, t);
        t = ggml_scale(ctx, t, 0.5f);
        struct ggml_tensor * u = ggml_mul(ctx, t, h);
        h = ggml_add(ctx, ggml_rms_norm(ctx, u, 1e-6f), t);
    }
    struct ggml_tensor * tr = ggml_cont(ctx, ggml_transpose(ctx, h));
    return ggml_sum_rows(ctx, tr);
}

static void test_gallocr(void) {
    // Weights and the input live in an allocated context; the graph in a no_alloc one.
    struct ggml_context * wctx = new_ctx(1 << 20, false);
    struct ggml_tensor * w = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 32, 64);
    struct ggml_tensor * x = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 32, 16);
    struct ggml_tensor * bias = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, 64);
    fill(w, -0.5f);
    fill(x, 0.1f);
    fill(bias, 0.2f);
    for (int i = 0; i < 64 * 32; i++) ((float *) w->data)[i] *= 0.05f;

    // Reference: everything allocated.
    struct ggml_context * rctx = new_ctx(1 << 22, false);
    struct ggml_tensor * ref = build_net(rctx, w, x, bias);
    struct ggml_cgraph * rg = ggml_new_graph(rctx);
    ggml_build_forward_expand(rg, ref);
    CHECK(ggml_graph_compute_with_ctx(rctx, rg, 2) == GGML_STATUS_SUCCESS);
    size_t all_bytes = 0;
    for (int i = 0; i < ggml_graph_n_nodes(rg); i++) {
        all_bytes += ggml_nbytes(ggml_graph_node(rg, i));
    }

    struct ggml_context * gctx = new_ctx(1 << 20, true);
    struct ggml_tensor * out = build_net(gctx, w, x, bias);
    struct ggml_cgraph * g = ggml_new_graph(gctx);
    ggml_build_forward_expand(g, out);
    // Computing before planning fails cleanly.
    CHECK(ggml_graph_compute_with_ctx(gctx, g, 1) == GGML_STATUS_ALLOC_FAILED);
    CHECK(logged_error("no data"));

    struct ggml_gallocr * ga = ggml_gallocr_new(NULL);
    CHECK(ggml_gallocr_alloc_graph(ga, g));
    const size_t size1 = ggml_gallocr_get_buffer_size(ga, 0);
    CHECK(size1 > 0 && size1 < all_bytes / 2); // memory is reused
    int n_shared = 0;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        struct ggml_tensor * n = ggml_graph_node(g, i);
        CHECK(n->data != NULL);
        CHECK(((uintptr_t) n->data % GGML_MEM_ALIGN) == 0 || n->view_src);
        if (n->src[0] && !n->view_src && n->data == n->src[0]->data) n_shared++;
    }
    CHECK(n_shared > 0); // some op reused its dying source in place
    CHECK(w->data != NULL && x->data != NULL);

    struct ggml_threadpool * tp = ggml_threadpool_new(2);
    for (int rep = 0; rep < 2; rep++) {
        CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_SUCCESS);
        bool ok = true;
        for (int64_t i = 0; i < ggml_nelements(ref); i++) {
            const float e = ((float *) ref->data)[i], o = ((float *) out->data)[i];
            ok = ok && fabsf(e - o) <= 1e-5f * fabsf(e) + 1e-6f;
        }
        CHECK(ok);
        // Planning the same graph again keeps the buffer and the layout.
        CHECK(ggml_gallocr_alloc_graph(ga, g));
        CHECK(ggml_gallocr_get_buffer_size(ga, 0) == size1);
    }

    // Inputs and outputs are never overwritten by intermediates.
    struct ggml_context * ictx = new_ctx(1 << 20, true);
    struct ggml_tensor * in = ggml_new_tensor_2d(ictx, GGML_TYPE_F32, 32, 16);
    ggml_set_input(in);
    struct ggml_tensor * mid = ggml_scale(ictx, in, 2.0f);
    ggml_set_output(mid);
    struct ggml_tensor * o2 = build_net(ictx, w, mid, bias);
    struct ggml_cgraph * g2 = ggml_new_graph(ictx);
    ggml_build_forward_expand(g2, o2);
    CHECK(ggml_gallocr_alloc_graph(ga, g2));
    CHECK(in->data != NULL && mid->data != NULL);
    for (int64_t i = 0; i < 32 * 16; i++) ((float *) in->data)[i] = ((float *) x->data)[i] * 0.5f;
    CHECK(ggml_graph_compute(g2, tp) == GGML_STATUS_SUCCESS);
    bool ok = true;
    for (int64_t i = 0; i < 32 * 16; i++) {
        ok = ok && ((float *) in->data)[i] == ((float *) x->data)[i] * 0.5f;
        ok = ok && fabsf(((float *) mid->data)[i] - ((float *) x->data)[i]) <= 1e-6f;
    }
    for (int64_t i = 0; i < ggml_nelements(ref); i++) {
        const float e = ((float *) ref->data)[i], o = ((float *) o2->data)[i];
        ok = ok && fabsf(e - o) <= 1e-5f * fabsf(e) + 1e-6f;
    }
    CHECK(ok);

    // A bigger graph grows (moves) the buffer; replanning the first graph must not keep
    // pointers into the old one.
    struct ggml_context * bctx = new_ctx(1 << 20, true);
    struct ggml_tensor * big = ggml_new_tensor_2d(bctx, GGML_TYPE_F32, 32, 4096);
    struct ggml_tensor * bo = ggml_scale(bctx, ggml_add(bctx, big, ggml_new_tensor_1d(bctx, GGML_TYPE_F32, 32)), 1.0f);
    struct ggml_cgraph * gb = ggml_new_graph(bctx);
    ggml_build_forward_expand(gb, bo);
    CHECK(ggml_gallocr_alloc_graph(ga, gb));
    CHECK(ggml_gallocr_get_buffer_size(ga, 0) > size1);
    // big is gb's first leaf, so it sits at the start of the (new) buffer.
    const char * buf = big->data;
    const size_t buf_size = ggml_gallocr_get_buffer_size(ga, 0);
    CHECK(ggml_gallocr_alloc_graph(ga, g));
    CHECK(ggml_gallocr_get_buffer_size(ga, 0) == buf_size);
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        const char * d = ggml_graph_node(g, i)->data;
        CHECK(d >= buf && d < buf + buf_size);
    }
    CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_SUCCESS);
    ok = true;
    for (int64_t i = 0; i < ggml_nelements(ref); i++) {
        const float e = ((float *) ref->data)[i], o = ((float *) out->data)[i];
        ok = ok && fabsf(e - o) <= 1e-5f * fabsf(e) + 1e-6f;
    }
    CHECK(ok);
    ggml_free(bctx);

    ggml_threadpool_free(tp);
    ggml_gallocr_free(ga);
    ggml_gallocr_free(NULL);
    ggml_free(ictx);
    ggml_free(gctx);
    ggml_free(rctx);
    ggml_free(wctx);
}

// ---- thread pool ----

static int abort_after;
static bool abort_cb(void * data) {
    int * calls = data;
    return ++*calls >= abort_after;
}

static void test_threadpool(void) {
    struct ggml_context * ctx = new_ctx(1 << 24, false);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 192);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, 24);
    fill(w, -1.0f);
    fill(x, 0.5f);
    struct ggml_tensor * h = ggml_mul_mat(ctx, w, x);
    for (int i = 0; i < 20; i++) {
        h = ggml_add(ctx, ggml_silu(ctx, h), ggml_scale(ctx, h, 0.01f));
    }
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, h);

    float * want = malloc((size_t) ggml_nbytes(h));
    CHECK(ggml_graph_compute_with_ctx(ctx, g, 1) == GGML_STATUS_SUCCESS);
    memcpy(want, h->data, ggml_nbytes(h));

    struct ggml_threadpool * tp = ggml_threadpool_new(4);
    CHECK(ggml_threadpool_get_n_threads(tp) == 4);
    for (int nth = 1; nth <= 4; nth++) {
        ggml_threadpool_set_n_threads(tp, nth);
        for (int rep = 0; rep < 25; rep++) {
            memset(h->data, 0, ggml_nbytes(h));
            CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_SUCCESS);
            CHECK(memcmp(h->data, want, ggml_nbytes(h)) == 0 || fabsf(((float *) h->data)[0] - want[0]) < 1e-3f);
        }
    }
    ggml_threadpool_set_n_threads(tp, 9);
    CHECK(ggml_threadpool_get_n_threads(tp) == 4);

    // Abort between nodes.
    int calls = 0;
    abort_after = 3;
    ggml_threadpool_set_abort_callback(tp, abort_cb, &calls);
    CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_ABORTED);
    CHECK(calls == 3);
    ggml_threadpool_set_abort_callback(tp, NULL, NULL);
    CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_SUCCESS);

    // Aborts at every node, under every thread count: never a hang, always ABORTED, and the
    // pool stays usable.
    for (int nth = 1; nth <= 4; nth++) {
        ggml_threadpool_set_n_threads(tp, nth);
        for (abort_after = 1; abort_after <= 42; abort_after += 1 + (nth > 2)) {
            calls = 0;
            ggml_threadpool_set_abort_callback(tp, abort_cb, &calls);
            CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_ABORTED);
            CHECK(calls == abort_after);
        }
        ggml_threadpool_set_abort_callback(tp, NULL, NULL);
        memset(h->data, 0, ggml_nbytes(h));
        CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_SUCCESS);
        CHECK(fabsf(((float *) h->data)[0] - want[0]) <= 1e-5f * fabsf(want[0]));
    }

    // A node without a kernel fails the computation, naming the op, at any thread count.
    struct ggml_tensor * bogus = ggml_scale(ctx, h, 1.0f);
    bogus->op = GGML_OP_COUNT;
    struct ggml_tensor * after = ggml_scale(ctx, bogus, 1.0f);
    struct ggml_cgraph * gb = ggml_new_graph(ctx);
    ggml_build_forward_expand(gb, after);
    for (int nth = 1; nth <= 4; nth++) {
        ggml_threadpool_set_n_threads(tp, nth);
        CHECK(ggml_graph_compute(gb, tp) == GGML_STATUS_FAILED);
        CHECK(logged_error("no CPU kernel"));
    }
    CHECK(ggml_graph_compute(g, tp) == GGML_STATUS_SUCCESS);

    CHECK(ggml_graph_compute(NULL, tp) == GGML_STATUS_FAILED);
    CHECK(ggml_threadpool_new(0) == NULL);
    CHECK(logged_error("n_threads"));
    ggml_threadpool_free(tp);
    ggml_threadpool_free(NULL);
    free(want);
    ggml_free(ctx);

    CHECK(ggml_cpu_n_physical_cores() >= 1);
    const char * v = ggml_cpu_variant();
    CHECK(v && (!strcmp(v, "portable") || !strcmp(v, "avx2") || !strcmp(v, "avx512") || !strcmp(v, "neon")));
    CHECK(ggml_cpu_features() != NULL);
    if (!strcmp(v, "avx512")) {
        CHECK(ggml_cpu_has_avx512() && ggml_cpu_has_avx2() && strstr(ggml_cpu_features(), "avx512f"));
    }
    if (!strcmp(v, "portable")) {
        CHECK(!ggml_cpu_has_avx2() && !ggml_cpu_has_avx512());
    }
}

// ---- ABI ----

static void test_abi(void) {
    CHECK(ggml_abi_version() == GGML_ABI_VERSION);
    CHECK(ggml_abi_struct_size("ggml_tensor") == sizeof(struct ggml_tensor));
    CHECK(ggml_abi_struct_size("ggml_type_traits") == sizeof(struct ggml_type_traits));
    CHECK(ggml_abi_struct_size("no_such_struct") == 0);
    CHECK(ggml_abi_struct_size(NULL) == 0);
    CHECK(ggml_abi_field_offset("ggml_tensor", "ne") == offsetof(struct ggml_tensor, ne));
    CHECK(ggml_abi_field_offset("ggml_tensor", "op_params") == offsetof(struct ggml_tensor, op_params));
    CHECK(ggml_abi_field_offset("ggml_tensor", "padding") == offsetof(struct ggml_tensor, padding));
    CHECK(ggml_abi_field_offset("ggml_init_params", "no_alloc") == offsetof(struct ggml_init_params, no_alloc));
    CHECK(ggml_abi_field_offset("ggml_tensor", "nope") == (size_t) -1);
    CHECK(!strcmp(ggml_op_name(GGML_OP_MUL_MAT), "MUL_MAT") && !strcmp(ggml_op_name(GGML_OP_COUNT), "UNKNOWN"));
    CHECK(!strcmp(ggml_type_name(GGML_TYPE_Q4_0), "q4_0") && !strcmp(ggml_type_name((enum ggml_type) 5), "NONE"));
    CHECK(ggml_row_size(GGML_TYPE_Q4_0, 64) == 36 && ggml_blck_size(GGML_TYPE_F16) == 1);
    CHECK(ggml_is_quantized(GGML_TYPE_Q8_0) && !ggml_is_quantized(GGML_TYPE_F16));
}

// ---- fp16 / bf16 ----

// Independent reference: the value of half bits h, by the IEEE definition.
static double ref_half_value(uint16_t h) {
    const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    const double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0) return s * ldexp((double) m, -24);
    if (e == 31) return m ? NAN : s * INFINITY;
    return s * ldexp(1024.0 + m, e - 25);
}

// Nearest half to x, ties to even, by search over the ordered positive halves.
static uint16_t ref_to_half(float x) {
    if (isnan(x)) return 0x7E00;
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    const double a = fabs((double) x);
    if (a >= 65520.0) return sign | 0x7C00; // halfway to 2^16 rounds up (0x7BFF is odd)
    int lo = 0, hi = 0x7BFF; // largest h with value <= a
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (ref_half_value((uint16_t) mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    const double dlo = a - ref_half_value((uint16_t) lo), dhi = ref_half_value((uint16_t) (lo + 1)) - a;
    const int r = dlo < dhi ? lo : dhi < dlo ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
    return sign | (uint16_t) r;
}

static void test_fp16(void) {
    // Every half converts exactly; every non-NaN one round-trips; rows match scalars.
    static ggml_fp16_t all[65536];
    static float f[65536];
    static ggml_fp16_t back[65536];
    for (int i = 0; i < 65536; i++) all[i] = (ggml_fp16_t) i;
    ggml_fp16_to_fp32_row(all, f, 65536);
    ggml_fp32_to_fp16_row(f, back, 65536);
    int bad = 0;
    for (int i = 0; i < 65536; i++) {
        const double r = ref_half_value((uint16_t) i);
        const float s = ggml_fp16_to_fp32((ggml_fp16_t) i);
        if (isnan(r)) {
            bad += !isnan(s) || !isnan(f[i]) || (back[i] & 0x7C00) != 0x7C00 || (back[i] & 0x3FF) == 0;
        } else {
            bad += (double) s != r || f[i] != s || back[i] != i || ggml_fp32_to_fp16(s) != i;
            bad += (signbit(s) != 0) != ((i & 0x8000) != 0);
        }
    }
    CHECK(bad == 0);

    // Midpoints between neighbours round to the even one; a hair above rounds up.
    bad = 0;
    for (int i = 0; i < 0x7BFF; i++) {
        const double mid = (ref_half_value((uint16_t) i) + ref_half_value((uint16_t) (i + 1))) / 2;
        const float m = (float) mid; // exact: a half's midpoint needs 12 significant bits
        const uint16_t want = (i % 2 == 0) ? (uint16_t) i : (uint16_t) (i + 1);
        bad += ggml_fp32_to_fp16(m) != want || ggml_fp32_to_fp16(-m) != (want | 0x8000);
        const float above = nextafterf(m, INFINITY);
        bad += ggml_fp32_to_fp16(above) != i + 1;
    }
    CHECK(bad == 0);

    // Random floats across the whole range, scalar and row paths, against the reference.
    static float rnd[1 << 16];
    static ggml_fp16_t rows[1 << 16];
    uint32_t state = 12345;
    for (int i = 0; i < (1 << 16); i++) {
        state = state * 1664525u + 1013904223u;
        uint32_t bits = state;
        if (i % 2) bits = (bits & 0x80FFFFFFu) | ((uint32_t) (100 + (state >> 27)) << 23); // near half range
        memcpy(&rnd[i], &bits, sizeof(float));
    }
    ggml_fp32_to_fp16_row(rnd, rows, 1 << 16);
    bad = 0;
    for (int i = 0; i < (1 << 16); i++) {
        const uint16_t want = ref_to_half(rnd[i]);
        if (isnan(rnd[i])) {
            bad += (rows[i] & 0x7FFF) <= 0x7C00 || (ggml_fp32_to_fp16(rnd[i]) & 0x7FFF) <= 0x7C00;
        } else {
            bad += ggml_fp32_to_fp16(rnd[i]) != want || rows[i] != want;
        }
    }
    CHECK(bad == 0);

    // bf16: the upper half of a float, rounded to nearest even; NaN stays NaN.
    bad = 0;
    for (int i = 0; i < (1 << 16); i++) {
        uint32_t bits;
        memcpy(&bits, &rnd[i], 4);
        const ggml_bf16_t b = ggml_fp32_to_bf16(rnd[i]);
        if (isnan(rnd[i])) {
            bad += !isnan(ggml_bf16_to_fp32(b));
            continue;
        }
        const uint32_t lo = bits & 0xFFFF0000u;
        float flo, fhi;
        const uint32_t hi_bits = lo + 0x10000u;
        memcpy(&flo, &lo, 4);
        memcpy(&fhi, &hi_bits, 4);
        const double dlo = fabs((double) rnd[i] - flo);
        const double dhi = isinf(fhi) ? INFINITY : fabs((double) fhi - rnd[i]);
        uint16_t want = (uint16_t) (lo >> 16);
        if (dhi < dlo || (dhi == dlo && (want & 1))) want = (uint16_t) (hi_bits >> 16);
        if ((bits & 0x7FFFFFFFu) >= 0x7F7F8000u) want = (uint16_t) ((bits >> 16 & 0x8000) | 0x7F80); // rounds to inf
        bad += b.bits != want;
    }
    CHECK(bad == 0);
    ggml_bf16_t bb[3] = { { 0x3F80 }, { 0xC000 }, { 0x7F80 } };
    float fb[3];
    ggml_bf16_to_fp32_row(bb, fb, 3);
    CHECK(fb[0] == 1.0f && fb[1] == -2.0f && isinf(fb[2]));
}

int main(void) {
    ggml_log_set(capture_log, NULL);
    test_arena();
    test_views();
    test_op_validation();
    test_graph();
    test_gallocr();
    test_threadpool();
    test_abi();
    test_fp16();
    ggml_log_set(NULL, NULL);
    if (n_fail) {
        fprintf(stderr, "test_core: %d check(s) failed\n", n_fail);
        return 1;
    }
    printf("test_core: ok\n");
    return 0;
}
