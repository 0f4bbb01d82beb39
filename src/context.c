// context.c — contexts: parameter defaults and resolution, the KV cache and compute resources
// allocated once at init, llama_decode (validate, split into ubatches, build, allocate, compute,
// copy the output rows out), logits / embeddings access, settings and performance counters.
#include "llama-adapter.h"
#include "llama-context.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <unistd.h>
#endif

struct llama_context_params llama_context_default_params(void) {
    struct llama_context_params p;
    memset(&p, 0, sizeof(p));
    const int cores = ggml_cpu_n_physical_cores();
    p.n_ctx = 4096;
    p.n_batch = 2048;
    p.n_ubatch = 512;
    p.n_seq_max = 1;
    p.n_rs_seq = 0;
    p.n_outputs_max = 0;
    p.n_outputs_max_per_seq = 0;
    p.n_threads = cores;
    p.n_threads_batch = cores;
    p.ctx_type = LLAMA_CONTEXT_TYPE_DEFAULT;
    p.rope_scaling_type = LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED;
    p.pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED;
    p.attention_type = LLAMA_ATTENTION_TYPE_UNSPECIFIED;
    p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    p.rope_freq_base = 0.0f;
    p.rope_freq_scale = 0.0f;
    p.yarn_ext_factor = -1.0f;
    p.yarn_attn_factor = 1.0f;
    p.yarn_beta_fast = 32.0f;
    p.yarn_beta_slow = 1.0f;
    p.yarn_orig_ctx = 0;
    p.defrag_thold = -1.0f;
    p.cb_eval = NULL;
    p.cb_eval_user_data = NULL;
    p.type_k = GGML_TYPE_F16;
    p.type_v = GGML_TYPE_F16;
    p.abort_callback = NULL;
    p.abort_callback_data = NULL;
    p.embeddings = false;
    p.offload_kqv = true;
    p.no_perf = true;
    p.op_offload = true;
    p.swa_full = true;
    p.kv_unified = false;
    p.samplers = NULL;
    p.n_samplers = 0;
    p.ctx_other = NULL;
    return p;
}

struct llama_context * llama_context_checked(const struct llama_context * ctx, const char * func) {
    if (ctx == NULL) {
        LLAMA_LOG_ERROR("%s: ctx is NULL\n", func);
        return NULL;
    }
    if (ctx->magic != LLAMA_MAGIC_CONTEXT) {
        LLAMA_LOG_ERROR("%s: not a live llama_context (freed or foreign pointer)\n", func);
        return NULL;
    }
    return (struct llama_context *) ctx;
}

// Bytes of memory the system can still give (MemAvailable), or 0 if unknown.
static uint64_t ctx_mem_available(void) {
    FILE * f = fopen("/proc/meminfo", "r");
    if (f != NULL) {
        char line[256];
        unsigned long long kb = 0;
        bool found = false;
        while (fgets(line, sizeof(line), f)) {
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                found = true;
                break;
            }
        }
        fclose(f);
        if (found) {
            return (uint64_t) kb * 1024u;
        }
    }
#if !defined(_WIN32) && defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    const long pages = sysconf(_SC_AVPHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        return (uint64_t) pages * (uint64_t) page;
    }
#endif
    return 0;
}

static int ctx_clamp_threads(int n) {
    const int cores = ggml_cpu_n_physical_cores();
    if (n <= 0) {
        return cores;
    }
    return n > cores ? cores : n;
}

static bool ctx_kv_type_ok(enum ggml_type t, uint32_t head_dim, const char * which) {
    if (t != GGML_TYPE_F32 && t != GGML_TYPE_F16 && t != GGML_TYPE_Q8_0) {
        LLAMA_LOG_ERROR("llama_init_from_model: %s = %s is not supported (use f16, f32 or q8_0)\n", which, ggml_type_name(t));
        return false;
    }
    if (head_dim % ggml_blck_size(t) != 0) {
        LLAMA_LOG_ERROR("llama_init_from_model: %s = %s needs a head size that is a multiple of %" PRId64 " (head size %u)\n",
                        which, ggml_type_name(t), ggml_blck_size(t), head_dim);
        return false;
    }
    return true;
}

// The backends and scheduler: the model's offload device (if any) first, the CPU last.
static bool ctx_init_backends(struct llama_context * ctx) {
    ctx->backend_cpu = ggml_backend_cpu_init();
    if (ctx->backend_cpu == NULL) {
        return false;
    }
    ggml_backend_cpu_set_n_threads(ctx->backend_cpu, ctx->n_threads_max);
    ggml_backend_cpu_set_abort_callback(ctx->backend_cpu, ctx->abort_cb, ctx->abort_data);
    ggml_backend_t backends[2];
    int n = 0;
    if (ctx->model->dev != NULL) {
        ctx->backend_dev = ggml_backend_dev_init(ctx->model->dev, NULL);
        if (ctx->backend_dev == NULL) {
            LLAMA_LOG_ERROR("llama_init_from_model: cannot start a backend on %s\n", ggml_backend_dev_name(ctx->model->dev));
            return false;
        }
        backends[n++] = ctx->backend_dev;
    }
    backends[n++] = ctx->backend_cpu;
    ctx->sched = ggml_backend_sched_new(backends, NULL, n, ctx->graph_size, false, true);
    if (ctx->sched != NULL && ctx->params.cb_eval != NULL) {
        // node-by-node evaluation with the caller looking at results (e.g. an importance matrix)
        ggml_backend_sched_set_eval_callback(ctx->sched, ctx->params.cb_eval, ctx->params.cb_eval_user_data);
    }
    return ctx->sched != NULL;
}

void llama_free(struct llama_context * ctx) {
    if (ctx == NULL) {
        return;
    }
    if (ctx->magic != LLAMA_MAGIC_CONTEXT) {
        LLAMA_LOG_ERROR("llama_free: not a live llama_context (double free?)\n");
        return;
    }
    ctx->magic = LLAMA_MAGIC_DEAD;
    llama_context_adapters_free(ctx);
    llama_kv_cache_free(&ctx->kv);
    ggml_backend_sched_free(ctx->sched);
    ggml_backend_free(ctx->backend_dev);
    ggml_backend_free(ctx->backend_cpu);
    free(ctx->inp_scratch[0]);
    free(ctx->inp_scratch[1]);
    ggml_free(ctx->ctx_compute);
    free(ctx->prep.pos);
    free(ctx->prep.n_seq_id);
    free(ctx->prep.seq_id);
    free(ctx->prep.output);
    free(ctx->cells);
    free(ctx->cells_swa);
    free(ctx->seq_next);
    free(ctx->seq_last);
    free(ctx->seq_count);
    free(ctx->enc_idx);
    free(ctx->logits);
    free(ctx->embd);
    free(ctx->embd_seq);
    free(ctx->embd_seq_n);
    free(ctx->output_ids);
    free(ctx);
}

// Phase 1: the parameters checked against the model (pooling_type UNSPECIFIED resolved to the
// file's); false (logged) when one cannot be honoured.
static bool ctx_params_check(const struct llama_model * model, struct llama_context_params * pparams) {
    struct llama_context_params params = *pparams;
    const struct llama_hparams * hp = &model->hparams;
    if (params.ctx_type != LLAMA_CONTEXT_TYPE_DEFAULT) {
        LLAMA_LOG_ERROR("llama_init_from_model: ctx_type %d is not supported\n", (int) params.ctx_type);
        return false;
    }
    if (params.n_seq_max == 0 || params.n_seq_max > LLAMA_MAX_SEQ) {
        LLAMA_LOG_ERROR("llama_init_from_model: n_seq_max = %u must be in [1, %d]\n", params.n_seq_max, LLAMA_MAX_SEQ);
        return false;
    }
    if (params.pooling_type == LLAMA_POOLING_TYPE_UNSPECIFIED) {
        params.pooling_type = (enum llama_pooling_type) hp->pooling_type; // the file's (0: none)
    }
    if (params.pooling_type < LLAMA_POOLING_TYPE_NONE || params.pooling_type > LLAMA_POOLING_TYPE_RANK) {
        LLAMA_LOG_ERROR("llama_init_from_model: pooling_type %d is not supported\n", (int) params.pooling_type);
        return false;
    }
    if (!llama_pool_check(model, params.pooling_type)) {
        return false;
    }
    if (!ctx_kv_type_ok(params.type_k, hp->n_embd_head_k, "type_k") ||
        !ctx_kv_type_ok(params.type_v, hp->n_embd_head_v, "type_v")) {
        return false;
    }
    // sliding layers with a head size of their own (gemma4)
    if ((hp->n_embd_head_k_swa && !ctx_kv_type_ok(params.type_k, hp->n_embd_head_k_swa, "type_k")) ||
        (hp->n_embd_head_v_swa && !ctx_kv_type_ok(params.type_v, hp->n_embd_head_v_swa, "type_v"))) {
        return false;
    }
    const bool flash = params.flash_attn_type != LLAMA_FLASH_ATTN_TYPE_DISABLED;
    if (!flash && ggml_is_quantized(params.type_v)) {
        LLAMA_LOG_ERROR("llama_init_from_model: a quantized V cache (%s) needs flash attention\n", ggml_type_name(params.type_v));
        return false;
    }
    if (params.n_samplers > 0) {
        LLAMA_LOG_WARN("llama_init_from_model: backend samplers are not supported; ignoring %zu\n", params.n_samplers);
    }
    *pparams = params;
    return true;
}

// Phase 2: the context size. n_ctx 0 asks for the training context, halved until its cache fits
// in half the available memory; 0 (logged) when the cache cannot fit at all.
static uint32_t ctx_choose_n_ctx(const struct llama_model * model, const struct llama_context_params * pp,
                                 size_t * kv_bytes_out) {
    const struct llama_hparams * hp = &model->hparams;
    const struct llama_context_params params = *pp;
    // the window cache's cells for a context of n (n_ubatch as ctx_init_fields resolves it, near enough)
#define CTX_SWA_CELLS(n) \
    llama_kv_cache_swa_cells(model, params.swa_full, (n), params.n_seq_max, params.n_ubatch ? params.n_ubatch : (n))
    const uint64_t avail = ctx_mem_available();
    uint32_t n_ctx = params.n_ctx;
    if (n_ctx == 0) {
        n_ctx = hp->n_ctx_train;
        while (avail > 0 && n_ctx > 512 &&
               llama_kv_cache_bytes(hp, n_ctx, CTX_SWA_CELLS(n_ctx), params.type_k, params.type_v) > avail / 2) {
            n_ctx /= 2;
        }
        if (n_ctx != hp->n_ctx_train) {
            LLAMA_LOG_WARN("llama_init_from_model: n_ctx = 0: the training context %u does not fit in memory; using %u\n",
                           hp->n_ctx_train, n_ctx);
        }
    }
    if (n_ctx > hp->n_ctx_train) {
        LLAMA_LOG_WARN("llama_init_from_model: n_ctx = %u exceeds the training context %u\n", n_ctx, hp->n_ctx_train);
    }
    const size_t kv_bytes = llama_kv_cache_bytes(hp, n_ctx, CTX_SWA_CELLS(n_ctx), params.type_k, params.type_v);
#undef CTX_SWA_CELLS
    if (kv_bytes == SIZE_MAX) {
        LLAMA_LOG_ERROR("llama_init_from_model: n_ctx = %u: the KV cache would not fit in the address space\n", n_ctx);
        return 0;
    }
    if (avail > 0 && kv_bytes > avail) {
        LLAMA_LOG_ERROR("llama_init_from_model: n_ctx = %u needs %zu bytes for the KV cache but only %" PRIu64
                        " bytes of memory are available; use a smaller n_ctx\n",
                        n_ctx, kv_bytes, avail);
        return 0;
    }
    *kv_bytes_out = kv_bytes;
    return n_ctx;
}

// Phase 3: the context's fields from the checked parameters and the model's defaults; the
// resolved values are written back into ctx->params, so readers of it see what is in use.
static void ctx_init_fields(struct llama_context * ctx, struct llama_model * model, struct llama_context_params params,
                            uint32_t n_ctx) {
    const struct llama_hparams * hp = &model->hparams;
    const bool flash = params.flash_attn_type != LLAMA_FLASH_ATTN_TYPE_DISABLED;
    ctx->magic = LLAMA_MAGIC_CONTEXT;
    ctx->model = model;
    ctx->params = params;
    ctx->n_ctx = n_ctx;
    ctx->n_seq_max = params.n_seq_max;
    ctx->causal_attn = params.attention_type == LLAMA_ATTENTION_TYPE_UNSPECIFIED
        ? hp->causal_attn
        : params.attention_type != LLAMA_ATTENTION_TYPE_NON_CAUSAL;
    uint32_t n_batch = params.n_batch == 0 ? n_ctx : params.n_batch;
    if (ctx->causal_attn && n_batch > n_ctx) {
        n_batch = n_ctx; // a causal batch can never hold more tokens than the cache
    }
    ctx->n_batch = n_batch;
    ctx->n_ubatch = params.n_ubatch == 0 || params.n_ubatch > n_batch ? n_batch : params.n_ubatch;
    ctx->n_threads = ctx_clamp_threads(params.n_threads);
    ctx->n_threads_batch = ctx_clamp_threads(params.n_threads_batch);
    ctx->n_threads_max = ctx->n_threads > ctx->n_threads_batch ? ctx->n_threads : ctx->n_threads_batch;
    ctx->flash_attn = flash;
    ctx->embeddings = params.embeddings;
    ctx->pooling = params.pooling_type == LLAMA_POOLING_TYPE_UNSPECIFIED ? LLAMA_POOLING_TYPE_NONE : params.pooling_type;
    ctx->abort_cb = params.abort_callback;
    ctx->abort_data = params.abort_callback_data;

    const enum llama_rope_scaling_type rst =
        params.rope_scaling_type == LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED ? hp->rope_scaling_type_train : params.rope_scaling_type;
    ctx->rope_freq_base = params.rope_freq_base != 0.0f ? params.rope_freq_base : hp->rope_freq_base_train;
    ctx->rope_freq_scale = params.rope_freq_scale != 0.0f ? params.rope_freq_scale : hp->rope_freq_scale_train;
    if (rst == LLAMA_ROPE_SCALING_TYPE_NONE && params.rope_freq_scale == 0.0f) {
        ctx->rope_freq_scale = 1.0f;
    }
    ctx->yarn_ext_factor =
        params.yarn_ext_factor >= 0.0f ? params.yarn_ext_factor : (rst == LLAMA_ROPE_SCALING_TYPE_YARN ? 1.0f : 0.0f);
    ctx->yarn_attn_factor = params.yarn_attn_factor > 0.0f ? params.yarn_attn_factor : 1.0f;
    ctx->yarn_beta_fast = params.yarn_beta_fast > 0.0f ? params.yarn_beta_fast : 32.0f;
    ctx->yarn_beta_slow = params.yarn_beta_slow > 0.0f ? params.yarn_beta_slow : 1.0f;
    ctx->n_ctx_orig = params.yarn_orig_ctx != 0 ? params.yarn_orig_ctx : hp->n_ctx_orig_yarn;
    ctx->params.n_ctx = n_ctx;
    ctx->params.n_batch = ctx->n_batch;
    ctx->params.n_ubatch = ctx->n_ubatch;
    ctx->params.n_threads = ctx->n_threads;
    ctx->params.n_threads_batch = ctx->n_threads_batch;
    ctx->params.flash_attn_type = flash ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    ctx->params.pooling_type = ctx->pooling;
}

// Phase 4: the compute arena, the per-sequence arrays, the KV cache and the backends; false
// (logged) on failure, the caller frees ctx.
static bool ctx_init_state(struct llama_context * ctx, struct llama_model * model, const struct llama_context_params * params) {
    const struct llama_hparams * hp = &model->hparams;
    const uint32_t n_ctx = ctx->n_ctx;
    // Graph capacity: ~40 nodes per layer plus inputs and the output head.
    ctx->graph_size = (size_t) hp->n_layer * 64 + 256;
    const size_t arena = ctx->graph_size * ggml_tensor_overhead() + ggml_graph_overhead_custom(ctx->graph_size, false);
    ctx->ctx_compute = ggml_init((struct ggml_init_params) { .mem_size = arena, .mem_buffer = NULL, .no_alloc = true });
    ctx->seq_next = GGML_CALLOC(ctx->n_seq_max, sizeof(llama_pos));
    ctx->seq_last = GGML_CALLOC(ctx->n_seq_max, sizeof(llama_pos));
    ctx->seq_count = GGML_CALLOC(ctx->n_seq_max, sizeof(int32_t));
    ctx->embd_seq = GGML_CALLOC((size_t) ctx->n_seq_max * hp->n_embd, sizeof(float));
    ctx->embd_seq_n = GGML_CALLOC(ctx->n_seq_max, sizeof(int32_t));
    if (!ctx->ctx_compute || !ctx->seq_next || !ctx->seq_last || !ctx->seq_count || !ctx->embd_seq || !ctx->embd_seq_n) {
        LLAMA_LOG_ERROR("llama_init_from_model: out of memory\n");
        return false;
    }
    const uint32_t n_ctx_swa = llama_kv_cache_swa_cells(model, params->swa_full, n_ctx, ctx->n_seq_max, ctx->n_ubatch);
    if (!llama_kv_cache_init(&ctx->kv, ctx, model, n_ctx, n_ctx_swa, ctx->n_seq_max, params->type_k, params->type_v)) {
        return false;
    }
    if (!ctx_init_backends(ctx)) {
        LLAMA_LOG_ERROR("llama_init_from_model: cannot create the compute backends\n");
        return false;
    }
    return true;
}

struct llama_context * llama_init_from_model(struct llama_model * model, struct llama_context_params params) {
    if (!llama_model_checked(model, "llama_init_from_model")) {
        return NULL;
    }
    if (model->vocab_only) {
        LLAMA_LOG_ERROR("llama_init_from_model: the model was loaded with vocab_only; it has no weights\n");
        return NULL;
    }
    if (!ctx_params_check(model, &params)) {
        return NULL;
    }
    size_t kv_bytes = 0;
    const uint32_t n_ctx = ctx_choose_n_ctx(model, &params, &kv_bytes);
    if (n_ctx == 0) {
        return NULL;
    }
    struct llama_context * ctx = GGML_CALLOC(1, sizeof(*ctx));
    if (ctx == NULL) {
        LLAMA_LOG_ERROR("llama_init_from_model: out of memory\n");
        return NULL;
    }
    ctx_init_fields(ctx, model, params, n_ctx);
    if (!ctx_init_state(ctx, model, &params)) {
        llama_free(ctx);
        return NULL;
    }
    ctx->t_start_us = llama_time_us();
    ctx->t_load_us = model->t_load_us;
    kv_bytes = llama_kv_cache_bytes(&model->hparams, n_ctx, ctx->kv.swa ? ctx->kv.swa->size : 0, params.type_k, params.type_v);
    LLAMA_LOG_INFO("llama_init_from_model: n_ctx = %u, n_batch = %u, n_ubatch = %u, flash_attn = %d, KV cache %.2f MiB (%s/%s), "
                   "threads %d/%d\n",
                   n_ctx, ctx->n_batch, ctx->n_ubatch, (int) ctx->flash_attn, kv_bytes / 1048576.0, ggml_type_name(params.type_k),
                   ggml_type_name(params.type_v), ctx->n_threads, ctx->n_threads_batch);
    return ctx;
}

struct llama_context * llama_new_context_with_model(struct llama_model * model, struct llama_context_params params) {
    return llama_init_from_model(model, params);
}

enum ggml_status llama_context_compute(struct llama_context * ctx, struct ggml_cgraph * gf, int n_threads) {
    ggml_backend_cpu_set_n_threads(ctx->backend_cpu,
                                   n_threads < 1 ? 1 : (n_threads > ctx->n_threads_max ? ctx->n_threads_max : n_threads));
    return ggml_backend_sched_graph_compute(ctx->sched, gf);
}

bool llama_context_alloc_graph(struct llama_context * ctx, struct ggml_cgraph * gf) {
    ggml_backend_sched_reset(ctx->sched);
    if (!ggml_backend_sched_alloc_graph(ctx->sched, gf)) {
        return false;
    }
    if (ggml_backend_sched_get_n_backends(ctx->sched) > 1) {
        LLAMA_LOG_DEBUG("llama_context: graph of %d nodes in %d splits with %d copies between backends\n", ggml_graph_n_nodes(gf),
                        ggml_backend_sched_get_n_splits(ctx->sched), ggml_backend_sched_get_n_copies(ctx->sched));
    }
    return true;
}

// Where to write input t's n bytes: its memory when the host can reach it, else a staging area
// (llama_context_set_input / ctx_input_done copy it over); NULL if t got no memory.
static void * ctx_input_begin(struct llama_context * ctx, struct ggml_tensor * t, size_t n, int slot) {
    if (t == NULL || t->data == NULL) {
        return NULL;
    }
    if (llama_model_tensor_on_host(t)) {
        return t->data;
    }
    if (n > ctx->inp_scratch_size[slot]) {
        void * p = GGML_REALLOC(ctx->inp_scratch[slot], n);
        if (p == NULL) {
            LLAMA_LOG_ERROR("llama_decode: out of memory staging %zu bytes of input '%s'\n", n, t->name);
            return NULL;
        }
        ctx->inp_scratch[slot] = p;
        ctx->inp_scratch_size[slot] = n;
    }
    return ctx->inp_scratch[slot];
}

static void ctx_input_done(struct ggml_tensor * t, const void * p, size_t n) {
    if (p != NULL && p != t->data) {
        ggml_backend_tensor_set(t, p, 0, n);
    }
}

void llama_context_set_input(struct llama_context * ctx, struct ggml_tensor * t, const void * data, size_t n) {
    void * p = ctx_input_begin(ctx, t, n, 0);
    if (p != NULL) {
        memcpy(p, data, n);
        ctx_input_done(t, p, n);
    }
}

// ---------------------------------------------------------------------------------------------
// decode

static bool ctx_reserve_outputs(struct llama_context * ctx, size_t n_tokens, size_t n_logit_rows, size_t n_embd_rows) {
    const size_t n_vocab = ctx->model->hparams.n_vocab;
    const size_t n_embd = ctx->model->hparams.n_embd;
    if (n_logit_rows > ctx->logits_cap) {
        float * p = GGML_REALLOC(ctx->logits, n_logit_rows * n_vocab * sizeof(float));
        if (p == NULL) {
            return false;
        }
        ctx->logits = p;
        ctx->logits_cap = n_logit_rows;
    }
    if (n_embd_rows > ctx->embd_cap) {
        float * p = GGML_REALLOC(ctx->embd, n_embd_rows * n_embd * sizeof(float));
        if (p == NULL) {
            return false;
        }
        ctx->embd = p;
        ctx->embd_cap = n_embd_rows;
    }
    if (n_tokens > ctx->output_ids_cap) {
        int32_t * p = GGML_REALLOC(ctx->output_ids, n_tokens * sizeof(int32_t));
        if (p == NULL) {
            return false;
        }
        ctx->output_ids = p;
        ctx->output_ids_cap = n_tokens;
    }
    return true;
}

static bool inp_ready(const struct ggml_tensor * t) { return t != NULL && t->data != NULL; }

// Token i sees cell j of cells (the main cells or the window cells) if j holds i's (first)
// sequence at a position <= i's (causal); in sliding-window layers (mask_swa) also only if
// p - pj < n_swa. Either row set may be NULL.
static void ctx_fill_masks(const struct llama_context * ctx, const struct llama_ubatch * ub, const struct llama_memory_i * cells,
                           uint32_t n_kv, float * mask, float * mask_swa) {
    const llama_pos n_swa = (llama_pos) ctx->model->hparams.n_swa;
    const bool swa_sym = ctx->model->hparams.swa_symmetric; // within n_swa / 2 either way
    for (int32_t i = 0; (mask || mask_swa) && i < ub->n_tokens; i++) {
        const llama_seq_id s = ub->seq_id[i][0];
        const llama_pos p = ub->pos[i];
        float * row = mask ? mask + (size_t) i * n_kv : NULL;
        float * row_swa = mask_swa ? mask_swa + (size_t) i * n_kv : NULL;
        for (uint32_t j = 0; j < n_kv; j++) {
            bool in_window = false;
            const bool vis = llama_kv_cache_seq_has(cells, j, s) &&
                llama_attn_visible(cells->pos[j], p, ctx->causal_attn, n_swa, swa_sym, &in_window);
            if (row) row[j] = vis ? 0.0f : -INFINITY;
            if (row_swa) row_swa[j] = vis && in_window ? 0.0f : -INFINITY;
        }
    }
}

// Fills t (when the graph has it) with 0..n-1: the cells a quantized cache dequantizes.
static void ctx_fill_range(struct llama_context * ctx, struct ggml_tensor * t, uint32_t n) {
    if (!inp_ready(t)) {
        return;
    }
    int32_t * r = ctx_input_begin(ctx, t, n * sizeof(int32_t), 0);
    for (uint32_t j = 0; r && j < n; j++) {
        r[j] = (int32_t) j;
    }
    ctx_input_done(t, r, n * sizeof(int32_t));
}

// Fills the graph inputs of ub (after allocation). An input the graph ended up not using (a
// one-layer model whose ubatch has no outputs never reaches attention) got no memory: skip it.
static bool ctx_set_inputs(struct llama_context * ctx, const struct llama_ubatch * ub, const struct llama_graph_result * res) {
    const struct llama_memory_i * kv = &ctx->kv;
    const int32_t n = ub->n_tokens;
    if (inp_ready(res->inp_tokens)) {
        llama_context_set_input(ctx, res->inp_tokens, ub->token, (size_t) n * sizeof(int32_t));
    }
    if (inp_ready(res->inp_embd)) {
        llama_context_set_input(ctx, res->inp_embd, ub->embd, (size_t) n * ctx->model->hparams.n_embd * sizeof(float));
    }
    if (inp_ready(res->inp_pos)) {
        llama_context_set_input(ctx, res->inp_pos, ub->pos, (size_t) n * sizeof(int32_t));
    }
    if (inp_ready(res->inp_kv_idx)) {
        int32_t * idx = ctx_input_begin(ctx, res->inp_kv_idx, (size_t) n * sizeof(int32_t), 0);
        for (int32_t i = 0; idx && i < n; i++) {
            idx[i] = (int32_t) ub->cells[i];
        }
        ctx_input_done(res->inp_kv_idx, idx, (size_t) n * sizeof(int32_t));
    }
    if (inp_ready(res->inp_kv_idx_swa)) {
        int32_t * idx = ctx_input_begin(ctx, res->inp_kv_idx_swa, (size_t) n * sizeof(int32_t), 0);
        for (int32_t i = 0; idx && i < n; i++) {
            idx[i] = (int32_t) ub->cells_swa[i];
        }
        ctx_input_done(res->inp_kv_idx_swa, idx, (size_t) n * sizeof(int32_t));
    }
    // Token i sees cell j if j holds i's (first) sequence at a position <= i's (causal); in
    // sliding-window layers also only if p - pj < n_swa.
    if (ub->enc_len > 0) {
        llama_encode_set_inputs(ctx, ub, res); // slot maps and per-group masks
        return true;
    }
    const uint32_t n_kv = ub->n_kv;
    const size_t mask_bytes = (size_t) n * n_kv * sizeof(float);
    float * mask = inp_ready(res->inp_mask) ? ctx_input_begin(ctx, res->inp_mask, mask_bytes, 0) : NULL;
    float * mask_swa = NULL;
    if (kv->swa != NULL) {
        // the window cache: the sliding layers' mask is over the window cells
        const size_t bytes_swa = (size_t) n * ub->n_kv_swa * sizeof(float);
        float * m = inp_ready(res->inp_mask_swa) ? ctx_input_begin(ctx, res->inp_mask_swa, bytes_swa, 1) : NULL;
        ctx_fill_masks(ctx, ub, kv->swa, ub->n_kv_swa, NULL, m);
        if (m) {
            ctx_input_done(res->inp_mask_swa, m, bytes_swa);
        }
    } else {
        mask_swa = inp_ready(res->inp_mask_swa) ? ctx_input_begin(ctx, res->inp_mask_swa, mask_bytes, 1) : NULL;
    }
    ctx_fill_masks(ctx, ub, kv, n_kv, mask, mask_swa);
    if (mask) {
        ctx_input_done(res->inp_mask, mask, mask_bytes);
    }
    if (mask_swa) {
        ctx_input_done(res->inp_mask_swa, mask_swa, mask_bytes);
    }
    if (res->inp_grp_cells != NULL && !llama_attn_seq_set_inputs(ctx, ub, res)) {
        return false;
    }
    ctx_fill_range(ctx, res->inp_kv_range, n_kv);
    ctx_fill_range(ctx, res->inp_kv_range_swa, ub->n_kv_swa);
    if (inp_ready(res->inp_s_ids)) {
        llama_context_set_input(ctx, res->inp_s_ids, ub->seqs, ub->n_seqs * sizeof(int32_t)); // slot s holds sequence s
    }
    if (inp_ready(res->inp_out_ids)) {
        const size_t bytes = ggml_nbytes(res->inp_out_ids);
        int32_t * o = ctx_input_begin(ctx, res->inp_out_ids, bytes, 0);
        int32_t k = 0;
        for (int32_t i = 0; o && i < n; i++) {
            if (ub->output[i]) {
                o[k++] = i;
            }
        }
        ctx_input_done(res->inp_out_ids, o, bytes);
    }
    llama_adapter_lora_set_inputs(ctx, ub, res->gf);
    if (inp_ready(res->inp_pos_out)) {
        const size_t bytes = ggml_nbytes(res->inp_pos_out);
        int32_t * o = ctx_input_begin(ctx, res->inp_pos_out, bytes, 0);
        int32_t k = 0;
        for (int32_t i = 0; o && i < n; i++) {
            if (ub->output[i]) {
                o[k++] = ub->pos[i];
            }
        }
        ctx_input_done(res->inp_pos_out, o, bytes);
    }
    return true;
}

// Whether t (the logits node) may compute in place in the logits array: a node of its own (not
// a view into another's memory, which its producer would write) with n_out packed F32 rows.
static bool ctx_logits_direct_ok(const struct ggml_tensor * t, size_t n_vocab, int32_t n_out) {
    return t != NULL && t->data != NULL && t->view_src == NULL && t->type == GGML_TYPE_F32 && llama_model_tensor_on_host(t) &&
        (size_t) t->ne[0] == n_vocab && t->ne[1] == n_out && t->ne[2] == 1 && t->ne[3] == 1 && ggml_is_contiguous(t) &&
        t->op != GGML_OP_NONE;
}

// Graph reuse: consecutive batch-of-one decodes build identical graphs (same ops, shapes and
// allocation) until n_kv crosses a multiple of 32, so the last graph is kept, built and
// allocated, and only its inputs are rewritten. The key holds everything llama_graph_build
// reads to decide shapes or structure; the rest of ub only reaches the graph through
// ctx_set_inputs. Building another graph in ctx_compute (llama_graph_build_k_shift) clears
// graph_reusable.
static bool ctx_graph_get(struct llama_context * ctx, const struct llama_ubatch * ub, struct llama_graph_result * res) {
    const struct llama_graph_key key = {
        .n_tokens = ub->n_tokens,
        .n_outputs = ub->n_outputs,
        .n_kv = ub->n_kv,
        .n_kv_swa = ub->n_kv_swa,
        .n_seqs = ub->n_seqs,
        .enc_len = ub->enc_len,
        .enc_grp = ub->enc_grp,
        .grp_n = ub->grp_n,
        .grp_len = ub->grp_len,
        .grp_cells = ub->grp_cells,
        .embd_input = ub->token == NULL,
        .all_rows = ub->all_rows,
        .embeddings = ctx->embeddings,
    };
    const struct llama_graph_key * k = &ctx->graph_key;
    if (ctx->graph_reusable && k->n_tokens == key.n_tokens && k->n_outputs == key.n_outputs && k->n_kv == key.n_kv &&
        k->n_kv_swa == key.n_kv_swa && k->n_seqs == key.n_seqs && k->enc_len == key.enc_len && k->enc_grp == key.enc_grp &&
        k->grp_n == key.grp_n && k->grp_len == key.grp_len && k->grp_cells == key.grp_cells && k->embd_input == key.embd_input &&
        k->all_rows == key.all_rows && k->embeddings == key.embeddings) {
        *res = ctx->graph_res;
        ctx->n_reused++;
        // Same graph, same allocation: the backends may keep their plans too.
        ggml_backend_sched_graph_unchanged(ctx->sched, res->gf);
        return true;
    }
    ctx->graph_reusable = false;
    if (!llama_graph_build(ctx, ub, res)) {
        return false;
    }
    if (!llama_context_alloc_graph(ctx, res->gf)) {
        LLAMA_LOG_ERROR("llama_decode: cannot allocate the compute buffers\n");
        return false;
    }
    ctx->graph_res = *res;
    ctx->graph_key = key;
    ctx->graph_reusable = true;
    return true;
}

// Decode phase 2: the next ubatch of the prepared batch starting at row i0, its rows given KV
// cells (a recurrent model's rows come regrouped by sequence: the cells taken are not a prefix,
// and clearing a free one is a no-op). *n_assigned: the cells given out so far, rolled back on
// failure. False when the recurrent plan has no ubatch left, or (*swa_full set) when the window
// cache has no room for the ubatch. An encode (enc_len > 0: its
// attention layout, encode.c) takes no cells: its K and V stay in the graph.
static bool ctx_ubatch_next(struct llama_context * ctx, int32_t i0, int32_t n_ubatch, bool pooled, uint32_t enc_len,
                            uint32_t enc_grp, struct llama_ubatch * out, int32_t * n_assigned, bool * swa_full) {
    const struct llama_batch_prep * p = &ctx->prep;
    struct llama_memory_i * kv = &ctx->kv;
    const int32_t n = p->n_tokens;
    const size_t n_embd = ctx->model->hparams.n_embd;
    struct llama_ubatch ub;
    int32_t nu;
    if (kv->rs != NULL) {
        if (!llama_memory_recurrent_next_ubatch(ctx, &ub)) {
            return false;
        }
        nu = ub.n_tokens;
        *n_assigned = n;
        ub.all_rows = pooled;
    } else {
        nu = n - i0 < n_ubatch ? n - i0 : n_ubatch;
        // the window cells are taken ubatch by ubatch: those out of every window are let go as
        // the sequences move on (the window cache holds a window per sequence plus a ubatch)
        if (kv->swa != NULL && enc_len == 0 &&
            !llama_kv_cache_swa_find_slot(kv->swa, (uint32_t) nu, p->pos + i0, p->seq_id + i0, p->n_seq_id + i0,
                                          ctx->cells_swa + i0)) {
            LLAMA_LOG_WARN("llama_decode: no window cells for %d tokens (%u of %u free, none out of the window)\n", nu,
                           llama_kv_cache_n_free(kv->swa), kv->swa->size);
            *swa_full = true;
            return false;
        }
        for (int32_t i = i0; i < i0 + nu && enc_len == 0; i++) {
            llama_kv_cache_cell_set(kv, ctx->cells[i], p->pos[i], p->n_seq_id[i], p->seq_id[i]);
            if (kv->swa != NULL) {
                llama_kv_cache_cell_set(kv->swa, ctx->cells_swa[i], p->pos[i], p->n_seq_id[i], p->seq_id[i]);
            }
        }
        *n_assigned = enc_len > 0 ? 0 : i0 + nu;
        ub = (struct llama_ubatch) {
            .n_tokens = nu,
            .token = p->token ? p->token + i0 : NULL,
            .embd = p->embd ? p->embd + (size_t) i0 * n_embd : NULL,
            .pos = p->pos + i0,
            .n_seq_id = p->n_seq_id + i0,
            .seq_id = p->seq_id + i0,
            .output = p->output + i0,
            .n_outputs = 0,
            .all_rows = pooled,
            .cells = ctx->cells + i0,
            .n_kv = enc_len > 0 ? 0 : llama_kv_cache_n_kv(kv),
            .cells_swa = kv->swa != NULL ? ctx->cells_swa + i0 : NULL,
            .n_kv_swa = enc_len > 0 || kv->swa == NULL ? 0 : llama_kv_cache_n_kv(kv->swa),
            .enc_len = enc_len,
            .enc_grp = enc_grp,
        };
        llama_attn_seq_plan(ctx, &ub);
    }
    for (int32_t i = 0; i < nu; i++) {
        ub.n_outputs += ub.output[i] != 0;
    }
    *out = ub;
    return true;
}

// Decode phase 3, pooled: the ubatch's embedding rows (staged on the host when they live on a
// device) added into the per-sequence pools; the pooling math is in pooling.c.
static bool ctx_ubatch_pool(struct llama_context * ctx, const struct llama_ubatch * ub, struct ggml_tensor * t_embd) {
    const float * rows = t_embd->data;
    if (!llama_model_tensor_on_host(t_embd)) {
        float * staged = ctx_input_begin(ctx, t_embd, ggml_nbytes(t_embd), 0);
        if (staged == NULL) {
            return false;
        }
        ggml_backend_tensor_get(t_embd, staged, 0, ggml_nbytes(t_embd));
        rows = staged;
    }
    llama_pool_rows(ctx, ub, rows);
    return true;
}

// Decode phase 3: one ubatch's graph built (or reused), its inputs set, computed, and its output
// rows copied out from row *out_row on. 0, or the code llama_decode returns.
static int32_t ctx_ubatch_run(struct llama_context * ctx, const struct llama_ubatch * ub, bool pooled, int n_threads,
                              size_t * out_row) {
    struct llama_memory_i * kv = &ctx->kv;
    const size_t n_vocab = ctx->model->hparams.n_vocab;
    const size_t n_embd = ctx->model->hparams.n_embd;
    struct llama_graph_result res;
    if (!ctx_graph_get(ctx, ub, &res)) {
        return -3;
    }
    if (!ctx_set_inputs(ctx, ub, &res)) {
        return -2;
    }
    if (kv->rs != NULL) {
        llama_memory_recurrent_ubatch_begin(ctx, ub);
    }
    // The lm-head writes its rows straight into the logits array (no copy-out of n_vocab
    // floats per row afterwards). The graph's last node has no consumers, so moving its
    // data off the compute buffer changes nothing else; a reused graph gets it set again
    // here (the array may have moved).
    const bool logits_direct = !pooled && ub->n_outputs > 0 && ctx_logits_direct_ok(res.t_logits, n_vocab, ub->n_outputs);
    if (logits_direct) {
        res.t_logits->data = ctx->logits + *out_row * n_vocab;
    }
    const enum ggml_status st = llama_context_compute(ctx, res.gf, n_threads);
    if (st == GGML_STATUS_ABORTED) {
        LLAMA_LOG_INFO("llama_decode: aborted by the abort callback\n");
        return 2;
    }
    if (st != GGML_STATUS_SUCCESS) {
        LLAMA_LOG_ERROR("llama_decode: graph computation failed (status %d)\n", (int) st);
        return -3;
    }
    if (kv->rs != NULL) {
        llama_memory_recurrent_ubatch_done(ctx, ub);
    }
    if (!pooled && ub->n_outputs > 0) {
        if (res.t_logits && !logits_direct) {
            ggml_backend_tensor_get(res.t_logits, ctx->logits + *out_row * n_vocab, 0,
                                    (size_t) ub->n_outputs * n_vocab * sizeof(float));
        }
        if (ctx->embeddings && res.t_embd) {
            ggml_backend_tensor_get(res.t_embd, ctx->embd + *out_row * n_embd, 0,
                                    (size_t) ub->n_outputs * n_embd * sizeof(float));
        }
        *out_row += (size_t) ub->n_outputs;
    }
    if (pooled && res.t_embd && !ctx_ubatch_pool(ctx, ub, res.t_embd)) {
        return -3;
    }
    return 0;
}

// Decode phase 4, after a failure (ret != 0): the cache is left as it was, the cells this
// batch took freed. A recurrent sequence whose state moved part-way cannot move back, so it is
// removed.
static void ctx_decode_undo(struct llama_context * ctx, int32_t n_assigned) {
    struct llama_memory_i * kv = &ctx->kv;
    for (int32_t i = 0; i < n_assigned; i++) {
        llama_kv_cache_cell_clear(kv, ctx->cells[i]);
        if (kv->swa != NULL) {
            // (cells let go for this batch stay free: out of every window, no later position needs them)
            llama_kv_cache_cell_clear(kv->swa, ctx->cells_swa[i]);
        }
    }
    for (int32_t k = 0; kv->rs != NULL && k < kv->rs->n_seqs_batch; k++) {
        const llama_seq_id s = kv->rs->seqs[k];
        if (kv->rs->seq_done[s] > 0) {
            // its recurrent state moved on and cannot move back: the sequence must be decoded again
            LLAMA_LOG_WARN("llama_decode: sequence %d is removed (its recurrent state was part-way through the batch)\n", s);
            llama_memory_seq_rm(kv, s, -1, -1);
        }
    }
}

// Decode phase 5: the outputs published (batch row -> output row map, what the getters may
// return) and the perf counters. 0, or -2 when a recurrent model's rows cannot be put back in
// batch order.
static int32_t ctx_decode_finish(struct llama_context * ctx, size_t n_out, bool pooled, int64_t t0) {
    const struct llama_batch_prep * p = &ctx->prep;
    struct llama_memory_i * kv = &ctx->kv;
    const int32_t n = p->n_tokens;
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        ctx->output_ids[i] = (!pooled && p->output[i]) ? k++ : -1;
    }
    ctx->n_outputs = (int32_t) n_out;
    ctx->n_batch_tokens = n;
    ctx->have_logits = !pooled && !ctx->model->hparams.encoder_only; // encoders have no lm head
    ctx->have_embd = ctx->embeddings && !pooled;
    ctx->have_embd_seq = pooled;
    if (kv->rs != NULL && !pooled && !llama_memory_recurrent_outputs_to_batch_order(ctx)) {
        ctx->have_logits = ctx->have_embd = false;
        return -2;
    }

    if (n == 1) {
        ctx->n_eval++;
    } else {
        ctx->n_p_eval += n;
    }
    // Timed even with no_perf: two clock reads per call cost nothing measurable.
    const int64_t dt = llama_time_us() - t0;
    if (n == 1) {
        ctx->t_eval_us += dt;
    } else {
        ctx->t_p_eval_us += dt;
    }
    return 0;
}

// One decode (encode: the whole batch in one ubatch, every row an output, non-causal, K and V
// kept in the graph, the cache untouched; see encode.c). Phase 1: the batch checked (batch.c) and given KV cells and
// output rows; then ubatch by ubatch (phases 2-3); then undone (4) or published (5).
static int32_t ctx_decode(struct llama_context * ctx, struct llama_batch batch, bool encode) {
    const int64_t t0 = llama_time_us();
    ctx->have_logits = ctx->have_embd = ctx->have_embd_seq = false;
    ctx->n_outputs = 0;
    ctx->n_batch_tokens = 0;

    int32_t r = llama_batch_prepare(ctx, &batch);
    if (r == 0 && ctx->kv.rs != NULL) {
        r = llama_memory_recurrent_batch_plan(ctx); // ubatches of equal-length sequences
    }
    if (r != 0) {
        return r;
    }
    uint32_t enc_len = 0, enc_grp = 0;
    if (encode && (!llama_encode_prepare(ctx) || !llama_encode_layout(ctx, &enc_len, &enc_grp))) {
        return -1;
    }
    const struct llama_batch_prep * p = &ctx->prep;
    struct llama_memory_i * kv = &ctx->kv;
    const int32_t n = p->n_tokens;
    const bool pooled = ctx->embeddings && ctx->pooling != LLAMA_POOLING_TYPE_NONE;

    // cells a page per sequence for generation (attention per sequence, kv-cache.c); a pooled
    // batch (several texts, one decode, cells let go after) takes them densely; an encode keeps
    // its K/V in the graph and takes none
    llama_seq_id * const * seq_pages = pooled ? NULL : p->seq_id;
    if (!encode && !llama_kv_cache_find_slot(kv, (uint32_t) n, seq_pages, ctx->cells)) {
        LLAMA_LOG_WARN("llama_decode: no KV cache slot for %d tokens (%u of %u cells free)\n", n, llama_kv_cache_n_free(kv),
                       kv->size);
        return 1;
    }
    const size_t n_out = pooled ? 0 : (size_t) p->n_outputs;
    if (!ctx_reserve_outputs(ctx, (size_t) n, n_out, ctx->embeddings ? n_out : 0)) {
        LLAMA_LOG_ERROR("llama_decode: out of memory for %zu output rows\n", n_out);
        return -2;
    }
    if (pooled) {
        llama_pool_begin(ctx);
    }

    int32_t ret = 0;
    int32_t n_assigned = 0;   // cells given out so far (rolled back on failure)
    size_t out_row = 0;
    // An encode runs the whole batch as one ubatch (every token sees its whole sequence).
    const int32_t n_ubatch = encode ? n : (int32_t) ctx->n_ubatch;
    const int n_threads = n == 1 ? ctx->n_threads : ctx->n_threads_batch;
    struct llama_ubatch ub;
    bool swa_full = false;
    for (int32_t i0 = 0;
         ret == 0 && i0 < n && ctx_ubatch_next(ctx, i0, n_ubatch, pooled, enc_len, enc_grp, &ub, &n_assigned, &swa_full);
         i0 += ub.n_tokens) {
        ret = ctx_ubatch_run(ctx, &ub, pooled, n_threads, &out_row);
    }
    if (ret == 0 && swa_full) {
        ret = 1; // as a full cache: no slot for the batch
    }
    if (ret == 0 && pooled && !llama_pool_finish(ctx)) {
        ret = -3;
    }
    if (ret != 0) {
        ctx_decode_undo(ctx, n_assigned);
        return ret;
    }
    return ctx_decode_finish(ctx, n_out, pooled, t0);
}

int32_t llama_decode(struct llama_context * ctx, struct llama_batch batch) {
    if (!llama_context_checked(ctx, __func__)) {
        return -1;
    }
    if (ctx->model->hparams.encoder_only) {
        return llama_encode(ctx, batch); // no cache to decode into, as llama.cpp does
    }
    return ctx_decode(ctx, batch, false);
}

int32_t llama_encode(struct llama_context * ctx, struct llama_batch batch) {
    if (!llama_context_checked(ctx, __func__)) {
        return -1;
    }
    if (ctx->kv.rs != NULL) {
        // a recurrent layer's state only moves forward: there is nothing to borrow and give back
        LLAMA_LOG_ERROR("llama_encode: not supported for a model with recurrent layers (use llama_decode)\n");
        return -1;
    }
    const bool causal = ctx->causal_attn;
    ctx->causal_attn = false; // an encoder's tokens see their whole sequence
    const int32_t r = ctx_decode(ctx, batch, true);
    ctx->causal_attn = causal;
    return r;
}

// ---------------------------------------------------------------------------------------------
// outputs

// Output row for batch index i (negative: from the end of the outputs), or -1 (logged).
static int32_t ctx_output_row(const struct llama_context * ctx, int32_t i, const char * func) {
    if (i < 0) {
        const int32_t j = ctx->n_outputs + i;
        if (j < 0) {
            LLAMA_LOG_ERROR("%s: index %d is out of range (%d outputs)\n", func, i, ctx->n_outputs);
            return -1;
        }
        return j;
    }
    if (i >= ctx->n_batch_tokens) {
        LLAMA_LOG_ERROR("%s: index %d is out of range (the last batch had %d tokens)\n", func, i, ctx->n_batch_tokens);
        return -1;
    }
    const int32_t r = ctx->output_ids[i];
    if (r < 0) {
        LLAMA_LOG_ERROR("%s: batch token %d was not marked for output\n", func, i);
    }
    return r;
}

float * llama_get_logits(struct llama_context * ctx) {
    if (!llama_context_checked(ctx, __func__)) {
        return NULL;
    }
    if (!ctx->have_logits) {
        LLAMA_LOG_ERROR("llama_get_logits: no logits (no successful llama_decode yet, the last one failed, pooled embeddings are "
                        "on, or the model is an encoder)\n");
        return NULL;
    }
    return ctx->logits;
}

float * llama_get_logits_ith(struct llama_context * ctx, int32_t i) {
    if (!llama_context_checked(ctx, __func__)) {
        return NULL;
    }
    if (!ctx->have_logits) {
        LLAMA_LOG_ERROR("llama_get_logits_ith: no logits (no successful llama_decode yet, the last one failed, pooled embeddings "
                        "are on, or the model is an encoder)\n");
        return NULL;
    }
    const int32_t r = ctx_output_row(ctx, i, __func__);
    return r < 0 ? NULL : ctx->logits + (size_t) r * ctx->model->hparams.n_vocab;
}

float * llama_get_embeddings(struct llama_context * ctx) {
    if (!llama_context_checked(ctx, __func__)) {
        return NULL;
    }
    if (!ctx->have_embd) {
        LLAMA_LOG_ERROR("llama_get_embeddings: no token embeddings (embeddings off, pooling on, or no successful decode)\n");
        return NULL;
    }
    return ctx->embd;
}

float * llama_get_embeddings_ith(struct llama_context * ctx, int32_t i) {
    if (!llama_context_checked(ctx, __func__)) {
        return NULL;
    }
    if (!ctx->have_embd) {
        LLAMA_LOG_ERROR("llama_get_embeddings_ith: no token embeddings (embeddings off, pooling on, or no successful decode)\n");
        return NULL;
    }
    const int32_t r = ctx_output_row(ctx, i, __func__);
    return r < 0 ? NULL : ctx->embd + (size_t) r * ctx->model->hparams.n_embd;
}

float * llama_get_embeddings_seq(struct llama_context * ctx, llama_seq_id seq_id) {
    if (!llama_context_checked(ctx, __func__)) {
        return NULL;
    }
    if (!ctx->have_embd_seq) {
        LLAMA_LOG_ERROR(
            "llama_get_embeddings_seq: no pooled embeddings (pooling NONE, embeddings off, or no successful decode)\n");
        return NULL;
    }
    if (seq_id < 0 || (uint32_t) seq_id >= ctx->n_seq_max || ctx->embd_seq_n[seq_id] == 0) {
        LLAMA_LOG_ERROR("llama_get_embeddings_seq: sequence %d was not in the last batch\n", seq_id);
        return NULL;
    }
    return ctx->embd_seq + (size_t) seq_id * ctx->model->hparams.n_embd;
}

// ---------------------------------------------------------------------------------------------
// accessors and settings

#define CTX_OR(ret)                              \
    if (!llama_context_checked(ctx, __func__)) { \
        return ret;                              \
    }

uint32_t llama_n_ctx(const struct llama_context * ctx) {
    CTX_OR(0);
    return ctx->n_ctx;
}
uint32_t llama_n_ctx_seq(const struct llama_context * ctx) {
    CTX_OR(0);
    return ctx->n_ctx;
}
uint32_t llama_n_batch(const struct llama_context * ctx) {
    CTX_OR(0);
    return ctx->n_batch;
}
uint32_t llama_n_ubatch(const struct llama_context * ctx) {
    CTX_OR(0);
    return ctx->n_ubatch;
}
uint32_t llama_n_seq_max(const struct llama_context * ctx) {
    CTX_OR(0);
    return ctx->n_seq_max;
}
uint32_t llama_n_rs_seq(const struct llama_context * ctx) {
    CTX_OR(0);
    return 0;
}
const struct llama_model * llama_get_model(const struct llama_context * ctx) {
    CTX_OR(NULL);
    return ctx->model;
}
llama_memory_t llama_get_memory(const struct llama_context * ctx) {
    CTX_OR(NULL);
    return (llama_memory_t) &ctx->kv;
}
enum llama_pooling_type llama_pooling_type(const struct llama_context * ctx) {
    CTX_OR(LLAMA_POOLING_TYPE_UNSPECIFIED);
    return ctx->pooling;
}
int32_t llama_n_threads(struct llama_context * ctx) {
    CTX_OR(0);
    return ctx->n_threads;
}
int32_t llama_n_threads_batch(struct llama_context * ctx) {
    CTX_OR(0);
    return ctx->n_threads_batch;
}
bool llama_get_causal_attn(const struct llama_context * ctx) {
    CTX_OR(false);
    return ctx->causal_attn;
}

void llama_set_n_threads(struct llama_context * ctx, int32_t n_threads, int32_t n_threads_batch) {
    CTX_OR();
    ctx->n_threads = ctx_clamp_threads(n_threads);
    ctx->n_threads_batch = ctx_clamp_threads(n_threads_batch);
    ctx->params.n_threads = ctx->n_threads;
    ctx->params.n_threads_batch = ctx->n_threads_batch;
    ctx->n_threads_max = ctx->n_threads > ctx->n_threads_batch ? ctx->n_threads : ctx->n_threads_batch;
    ggml_backend_cpu_set_n_threads(ctx->backend_cpu, ctx->n_threads_max);
}

void llama_set_embeddings(struct llama_context * ctx, bool embeddings) {
    CTX_OR();
    ctx->embeddings = embeddings;
    ctx->params.embeddings = embeddings;
}

void llama_set_causal_attn(struct llama_context * ctx, bool causal_attn) {
    CTX_OR();
    ctx->causal_attn = causal_attn;
}

void llama_set_warmup(struct llama_context * ctx, bool warmup) {
    CTX_OR();
    ctx->warmup = warmup;
}

void llama_set_abort_callback(struct llama_context * ctx, ggml_abort_callback abort_callback, void * abort_callback_data) {
    CTX_OR();
    ctx->abort_cb = abort_callback;
    ctx->abort_data = abort_callback_data;
    ggml_backend_cpu_set_abort_callback(ctx->backend_cpu, abort_callback, abort_callback_data);
}

void llama_synchronize(struct llama_context * ctx) { CTX_OR(); }

// ---------------------------------------------------------------------------------------------
// performance

struct llama_perf_context_data llama_perf_context(const struct llama_context * ctx) {
    struct llama_perf_context_data d;
    memset(&d, 0, sizeof(d));
    CTX_OR(d);
    d.t_start_ms = 1e-3 * (double) ctx->t_start_us;
    d.t_load_ms = 1e-3 * (double) ctx->t_load_us;
    d.t_p_eval_ms = 1e-3 * (double) ctx->t_p_eval_us;
    d.t_eval_ms = 1e-3 * (double) ctx->t_eval_us;
    d.n_p_eval = ctx->n_p_eval > 0 ? ctx->n_p_eval : 1;
    d.n_eval = ctx->n_eval > 0 ? ctx->n_eval : 1;
    d.n_reused = ctx->n_reused;
    return d;
}

void llama_perf_context_print(const struct llama_context * ctx) {
    CTX_OR();
    const struct llama_perf_context_data d = llama_perf_context(ctx);
    const double t_end_ms = 1e-3 * (double) llama_time_us();
    LLAMA_LOG_INFO("llama_perf_context_print:        load time = %10.2f ms\n", d.t_load_ms);
    LLAMA_LOG_INFO(
        "llama_perf_context_print: prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n",
        d.t_p_eval_ms, d.n_p_eval, d.t_p_eval_ms / d.n_p_eval, 1e3 / d.t_p_eval_ms * d.n_p_eval);
    LLAMA_LOG_INFO(
        "llama_perf_context_print:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per second)\n",
        d.t_eval_ms, d.n_eval, d.t_eval_ms / d.n_eval, 1e3 / d.t_eval_ms * d.n_eval);
    LLAMA_LOG_INFO("llama_perf_context_print:       total time = %10.2f ms / %5d tokens\n", t_end_ms - d.t_start_ms,
                   ctx->n_p_eval + ctx->n_eval);
}

void llama_perf_context_reset(struct llama_context * ctx) {
    CTX_OR();
    ctx->t_start_us = llama_time_us();
    ctx->t_p_eval_us = ctx->t_eval_us = 0;
    ctx->n_p_eval = ctx->n_eval = ctx->n_reused = 0;
}
