// model-repack.c — the model's matmul weights laid out for the CPU kernels at load time
// (ggml/src/ggml-cpu/repack.h): which weights are offered to the repacker, which of a layer's
// weights are fused into one matrix first (the table below: Q, K, V and gate, up), and the
// stored pages let go behind the copies. Weights placed on a device are left alone.
#include "llama-model.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef _WIN32
#include <sys/mman.h>
#include <unistd.h>
#endif

// Stored bytes of a repacked weight: faulted in with one call before the repacker reads them
// (page by page faults cost more than the copy), and dropped from this process once mul_mat
// reads only the copy (the file pages are clean: get_rows of tied embeddings reads them again
// from the page cache, only the rows it needs).
static void repack_stored_pages(struct ggml_tensor * t, bool done, void * data) {
    (void) data;
#if !defined(_WIN32) && defined(MADV_DONTNEED)
    const uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
    if (!done) {
#if defined(MADV_POPULATE_READ)
        const uintptr_t lo = (uintptr_t) t->data & ~(page - 1);
        const uintptr_t hi = ((uintptr_t) t->data + ggml_nbytes(t) + page - 1) & ~(page - 1);
        if (madvise((void *) lo, hi - lo, MADV_POPULATE_READ) != 0) {
            madvise((void *) lo, hi - lo, MADV_WILLNEED); // kernels before 5.14: read-ahead only
        }
#endif
        return;
    }
    const uintptr_t lo = ((uintptr_t) t->data + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t) t->data + ggml_nbytes(t)) & ~(page - 1);
    if (hi > lo) madvise((void *) lo, hi - lo, MADV_DONTNEED);
#else
    (void) t;
    (void) done;
#endif
}

// A fused weight: the rows of parts[0..n) (same type and row length) as one matrix, so that one
// matmul (one activation quantization, one barrier) does the work of n, bit for bit; or NULL if
// they cannot be repacked (the layer keeps its separate weights). Its data pointer only names a
// valid mapping: mul_mat reads a repacked weight's copy, never its stored rows.
static struct ggml_tensor * repack_fused_tensor(struct llama_model * m, const char * name, struct ggml_tensor * const * parts,
                                                int n) {
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        if (parts[i] == NULL || parts[i]->type != parts[0]->type || parts[i]->ne[0] != parts[0]->ne[0] ||
            !llama_model_tensor_on_host(parts[i]) || ggml_backend_cpu_repack_size(parts[i]) == 0) {
            return NULL;
        }
        rows += parts[i]->ne[1];
    }
    struct ggml_tensor * t = ggml_new_tensor_2d(m->ctx_fused, parts[0]->type, parts[0]->ne[0], rows);
    if (t == NULL) return NULL;
    ggml_set_name(t, name);
    t->data = parts[0]->data;
    return t;
}

// A [K, M * n_expert] header over the experts tensor e's rows (named as e), for the repacker:
// mul_mat_id reads the copy of all the experts' rows; NULL when e cannot be repacked so.
static struct ggml_tensor * repack_flat_experts(struct llama_model * m, const struct ggml_tensor * e) {
    if (e == NULL || !llama_model_tensor_on_host(e) || e->ne[3] != 1 || e->nb[2] != (size_t) e->ne[1] * e->nb[1]) {
        return NULL;
    }
    struct ggml_tensor * t = ggml_new_tensor_2d(m->ctx_fused, e->type, e->ne[0], e->ne[1] * e->ne[2]);
    if (t == NULL) return NULL;
    ggml_set_name(t, e->name);
    t->data = e->data;
    if (ggml_backend_cpu_repack_size(t) == 0) return NULL; // stays unused in ctx_fused
    return t;
}

// A layer's weights fused for the repacker when the file stores them apart: one matmul then
// reads one activation quantization for all of them. Offsets are into struct llama_layer.
struct repack_fusion {
    const char * name;          // the fused header's name (%u: the block)
    size_t fused;               // its field (set by the file when stored fused, as phi3 does)
    size_t parts[3];            // the fields it is made of, stacked by rows in this order
    int n_parts;
    bool last_optional;         // without the last part the others are fused alone
    size_t then;                // the weight offered next as it is (the one the graph reads next)
};

static const struct repack_fusion repack_fusions[] = {
    // without a V projection (gemma4's K = V layers) Q and K alone are fused
    { "blk.%u.attn_qkv.weight",
      offsetof(struct llama_layer, wqkv),
      { offsetof(struct llama_layer, wq), offsetof(struct llama_layer, wk), offsetof(struct llama_layer, wv) },
      3,
      true,
      offsetof(struct llama_layer, wo) },
    { "blk.%u.ffn_gate_up.weight",
      offsetof(struct llama_layer, ffn_gate_up),
      { offsetof(struct llama_layer, ffn_gate), offsetof(struct llama_layer, ffn_up) },
      2,
      false,
      offsetof(struct llama_layer, ffn_down) },
};

static struct ggml_tensor ** layer_field(struct llama_layer * L, size_t off) {
    return (struct ggml_tensor **) ((char *) L + off);
}

// Offers fusion f of layer il to the repacker: the stored fused weight when the file has one
// (its first part absent), else a fused header over the parts, else the parts one by one; then
// f->then. The copies are laid out in this order, the order the graph reads the weights in.
static int repack_offer_fusion(struct llama_model * m, uint32_t il, const struct repack_fusion * f,
                               struct ggml_backend_cpu_repack_parts * fused, int n) {
    struct llama_layer * L = &m->layers[il];
    struct ggml_tensor ** dst = layer_field(L, f->fused);
    if (*layer_field(L, f->parts[0]) == NULL) {
        m->repack_ts[n++] = *dst;
        m->repack_ts[n++] = *layer_field(L, f->then);
        return n;
    }
    struct ggml_tensor * parts[4] = { NULL, NULL, NULL, NULL };
    for (int i = 0; i < f->n_parts; i++) parts[i] = *layer_field(L, f->parts[i]);
    const int n_parts = f->last_optional && parts[f->n_parts - 1] == NULL ? f->n_parts - 1 : f->n_parts;
    char name[GGML_MAX_NAME];
    snprintf(name, sizeof(name), f->name, il);
    *dst = repack_fused_tensor(m, name, parts, n_parts);
    if (*dst != NULL) {
        fused[n] = (struct ggml_backend_cpu_repack_parts) { { parts[0], parts[1], parts[2], parts[3] }, n_parts };
        m->repack_ts[n++] = *dst;
    } else {
        for (int i = 0; i < f->n_parts; i++) m->repack_ts[n++] = parts[i];
    }
    m->repack_ts[n++] = *layer_field(L, f->then);
    return n;
}

// A fused weight is used only if its copy was made; experts read theirs through their own
// header (ggml_cpu_repack_panels of a [K, M, n_expert] tensor; both go when the model does).
static void repack_keep_made(struct llama_model * m) {
    for (uint32_t il = 0; il < m->hparams.n_layer; il++) {
        struct llama_layer * L = &m->layers[il];
        struct ggml_tensor * exps[3] = { L->ffn_gate_exps, L->ffn_up_exps, L->ffn_down_exps };
        for (int i = 0; i < 3; i++) {
            struct ggml_tensor * flat = exps[i] != NULL ? ggml_get_tensor(m->ctx_fused, exps[i]->name) : NULL;
            if (flat != NULL && ggml_backend_cpu_is_repacked(flat)) exps[i]->extra = flat->extra;
        }
        for (size_t k = 0; k < sizeof(repack_fusions) / sizeof(repack_fusions[0]); k++) {
            const struct repack_fusion * f = &repack_fusions[k];
            struct ggml_tensor ** dst = layer_field(L, f->fused);
            if (*layer_field(L, f->parts[0]) != NULL && *dst != NULL && !ggml_backend_cpu_is_repacked(*dst)) *dst = NULL;
        }
    }
}

void llama_model_repack_weights(struct llama_model * m, bool release_stored) {
    const uint32_t n_layer = m->hparams.n_layer;
    const size_t cap = (size_t) n_layer * 10 + 1;
    m->repack_ts = GGML_CALLOC(cap, sizeof(struct ggml_tensor *));
    struct ggml_backend_cpu_repack_parts * fused = GGML_CALLOC(cap, sizeof(struct ggml_backend_cpu_repack_parts));
    m->ctx_fused = ggml_init((struct ggml_init_params) {
        .mem_size = (size_t) (5 * n_layer + 1) * ggml_tensor_overhead(), .mem_buffer = NULL, .no_alloc = true });
    if (m->repack_ts == NULL || fused == NULL || m->ctx_fused == NULL) {
        free(fused);
        return;
    }
    int n = 0;
    for (uint32_t il = 0; il < n_layer; il++) {
        struct llama_layer * L = &m->layers[il];
        for (size_t k = 0; k < sizeof(repack_fusions) / sizeof(repack_fusions[0]); k++) {
            n = repack_offer_fusion(m, il, &repack_fusions[k], fused, n);
        }
        struct ggml_tensor * exps[3] = { L->ffn_gate_exps, L->ffn_up_exps, L->ffn_down_exps };
        for (int i = 0; i < 3; i++) {
            struct ggml_tensor * flat = repack_flat_experts(m, exps[i]);
            if (flat != NULL) m->repack_ts[n++] = flat;
        }
    }
    m->repack_ts[n++] = m->output;
    m->n_repack = n;
    // weights on a device stay as they are there
    for (int i = 0; i < n; i++) {
        if (!llama_model_tensor_on_host(m->repack_ts[i])) m->repack_ts[i] = NULL;
    }
    const int64_t t0 = llama_time_us();
    m->buf_repack = ggml_backend_cpu_repack_weights(m->repack_ts, n, ggml_cpu_n_physical_cores(), fused,
                                                    release_stored ? repack_stored_pages : NULL, m);
    free(fused);
    repack_keep_made(m);
    if (m->buf_repack != NULL) {
        LLAMA_LOG_INFO("llama_model_load: weights repacked for the CPU kernels in %.1f ms\n",
                       (double) (llama_time_us() - t0) / 1000.0);
    }
}
