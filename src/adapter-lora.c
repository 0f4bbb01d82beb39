// adapter-lora.c — LoRA adapters: loading llama.cpp's LoRA GGUF format against a model, the
// metadata accessors, setting adapters on a context, and the graph term each adapted product
// gains (llama-adapter.h states the arithmetic).
//
// The whole file is read into memory (adapters are small next to their models) and parsed
// there; A and B go to a CPU buffer as F16 or F32 (llama-adapter.h says which and why), from
// any type that converts to F32. Every pair is checked against the model's matrix at load, so a bad
// adapter is refused before it can reach a graph.
#include "llama-adapter.h"
#include "llama-context.h"
#include "llama-graph.h"
#include "llama-model.h"

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLAMA_MAGIC_ADAPTER 0x4c4c4f52u  // "LLOR"

static const struct llama_adapter_lora * adapter_checked(const struct llama_adapter_lora * a, const char * func) {
    if (a == NULL || a->magic != LLAMA_MAGIC_ADAPTER) {
        LLAMA_LOG_ERROR("%s: not a live llama_adapter_lora\n", func);
        return NULL;
    }
    return a;
}

static void adapter_free(struct llama_adapter_lora * a) {
    if (a == NULL) {
        return;
    }
    a->magic = LLAMA_MAGIC_DEAD;
    ggml_backend_buffer_free(a->buf);
    ggml_free(a->ctx_rt);
    ggml_free(a->ctx);
    gguf_free(a->gguf);
    free(a->pairs);
    free(a->alora_tokens);
    free(a);
}

// The string value of key, or NULL when absent or not a string.
static const char * adapter_str(const struct gguf_context * g, const char * key) {
    const int64_t id = gguf_find_key(g, key);
    return id >= 0 && gguf_get_kv_type(g, id) == GGUF_TYPE_STRING ? gguf_get_val_str(g, id) : NULL;
}

// The model's tensor called name (a weight the file holds), or NULL.
static const struct ggml_tensor * adapter_model_tensor(const struct llama_model * m, const char * name) {
    return ggml_get_tensor(m->ctx_w, name);
}

// Checks the metadata against the model: an adapter of another architecture is refused.
static bool adapter_check_meta(struct llama_adapter_lora * a, const struct llama_model * m) {
    const char * type = adapter_str(a->gguf, "general.type");
    const char * atype = adapter_str(a->gguf, "adapter.type");
    const char * arch = adapter_str(a->gguf, "general.architecture");
    if (type == NULL || strcmp(type, "adapter") != 0 || atype == NULL || strcmp(atype, "lora") != 0) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: not a LoRA adapter (general.type '%s', adapter.type '%s'; "
                        "expected 'adapter' and 'lora')\n",
                        type ? type : "(none)", atype ? atype : "(none)");
        return false;
    }
    if (arch == NULL || strcmp(arch, m->arch) != 0) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: the adapter is for architecture '%s', the model is '%s'\n",
                        arch ? arch : "(none)", m->arch);
        return false;
    }
    const int64_t ka = gguf_find_key(a->gguf, "adapter.lora.alpha");
    if (ka >= 0) {
        const enum gguf_type t = gguf_get_kv_type(a->gguf, ka);
        a->alpha = t == GGUF_TYPE_FLOAT32 ? gguf_get_val_f32(a->gguf, ka)
            : t == GGUF_TYPE_FLOAT64      ? (float) gguf_get_val_f64(a->gguf, ka)
                                          : -1.0f;
        if (!(a->alpha >= 0.0f)) {
            LLAMA_LOG_ERROR("llama_adapter_lora_init: adapter.lora.alpha must be a non-negative float\n");
            return false;
        }
    }
    const int64_t kt = gguf_find_key(a->gguf, "adapter.alora.invocation_tokens");
    if (kt >= 0) {
        const enum gguf_type et =
            gguf_get_kv_type(a->gguf, kt) == GGUF_TYPE_ARRAY ? gguf_get_arr_type(a->gguf, kt) : GGUF_TYPE_COUNT;
        if (et != GGUF_TYPE_INT32 && et != GGUF_TYPE_UINT32) {
            LLAMA_LOG_ERROR("llama_adapter_lora_init: adapter.alora.invocation_tokens must be an int32 array\n");
            return false;
        }
        const size_t n = gguf_get_arr_n(a->gguf, kt);
        if (n > 0) {
            if ((a->alora_tokens = GGML_MALLOC(n * sizeof(llama_token))) == NULL) {
                return false;
            }
            memcpy(a->alora_tokens, gguf_get_arr_data(a->gguf, kt), n * sizeof(llama_token));
            a->n_alora_tokens = n;
        }
    }
    return true;
}

// Pairs every "<name>.lora_a" with its "<name>.lora_b" and the model's "<name>", checking shapes.
static bool adapter_pair_tensors(struct llama_adapter_lora * a, const struct llama_model * m) {
    const int64_t n = gguf_get_n_tensors(a->gguf);
    if ((a->pairs = GGML_CALLOC((size_t) n / 2 + 1, sizeof(*a->pairs))) == NULL) {
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        const char * name = gguf_get_tensor_name(a->gguf, i);
        const size_t len = strlen(name);
        const bool is_a = len > 7 && strcmp(name + len - 7, ".lora_a") == 0;
        const bool is_b = len > 7 && strcmp(name + len - 7, ".lora_b") == 0;
        if (!is_a && !is_b) {
            LLAMA_LOG_ERROR("llama_adapter_lora_init: tensor '%s' is neither a .lora_a nor a .lora_b\n", name);
            return false;
        }
        if (is_b) {
            continue; // found from its .lora_a
        }
        char base[GGML_MAX_NAME], bname[GGML_MAX_NAME + 8];
        snprintf(base, sizeof(base), "%.*s", (int) (len - 7), name);
        snprintf(bname, sizeof(bname), "%s.lora_b", base);
        struct ggml_tensor *ta = ggml_get_tensor(a->ctx, name), *tb = ggml_get_tensor(a->ctx, bname);
        const struct ggml_tensor * w = adapter_model_tensor(m, base);
        if (tb == NULL) {
            LLAMA_LOG_ERROR("llama_adapter_lora_init: '%s' has no '%s'\n", name, bname);
            return false;
        }
        if (w == NULL || ggml_n_dims(w) != 2) {
            LLAMA_LOG_ERROR("llama_adapter_lora_init: '%s' adapts '%s', which the model has no matrix of\n", name, base);
            return false;
        }
        // A [n_in, r], B [r, n_out] against W [n_in, n_out]
        if (ggml_n_dims(ta) > 2 || ggml_n_dims(tb) > 2 || ta->ne[0] != w->ne[0] || tb->ne[1] != w->ne[1] ||
            ta->ne[1] != tb->ne[0] || ta->ne[1] < 1) {
            LLAMA_LOG_ERROR("llama_adapter_lora_init: '%s' is [%lld, %lld] and '%s' [%lld, %lld]; '%s' [%lld, %lld] "
                            "needs [%lld, r] and [r, %lld]\n",
                            name, (long long) ta->ne[0], (long long) ta->ne[1], bname, (long long) tb->ne[0],
                            (long long) tb->ne[1], base, (long long) w->ne[0], (long long) w->ne[1], (long long) w->ne[0],
                            (long long) w->ne[1]);
            return false;
        }
        // every type that converts to F32 is read (llama-adapter.h: held as F16 or F32)
        for (int k = 0; k < 2; k++) {
            const struct ggml_tensor * t = k == 0 ? ta : tb;
            if (t->type != GGML_TYPE_F32 && ggml_get_type_traits(t->type)->to_float == NULL) {
                LLAMA_LOG_ERROR("llama_adapter_lora_init: '%s' is %s; adapters hold F32, F16, BF16 or quantized "
                                "matrices\n",
                                t->name, ggml_type_name(t->type));
                return false;
            }
        }
        // the file's headers for now; adapter_convert puts the held copies in their place
        a->pairs[a->n_pairs++] = (struct llama_adapter_lora_pair) { w, ta, tb, 1.0f };
    }
    if (a->n_pairs * 2 != n) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: %lld tensors, but %d .lora_a/.lora_b pairs\n", (long long) n, a->n_pairs);
        return false;
    }
    return true;
}

// The bytes of file tensor t inside data[0, size), or NULL (logged) when they lie past the end.
static const void * adapter_tensor_bytes(const struct llama_adapter_lora * a, const struct ggml_tensor * t, const void * data,
                                         size_t size) {
    const int64_t id = gguf_find_tensor(a->gguf, t->name);
    const size_t off = gguf_get_data_offset(a->gguf) + (id >= 0 ? gguf_get_tensor_offset(a->gguf, id) : 0);
    if (id < 0 || off > size || ggml_nbytes(t) > size - off) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: tensor '%s' lies past the end of the file\n", t->name);
        return NULL;
    }
    return (const char *) data + off;
}

// The type a pair of w is held in (llama-adapter.h): F16 over a quantized matrix, F32 otherwise.
static enum ggml_type adapter_rt_type(const struct ggml_tensor * w) {
    return ggml_is_quantized(w->type) ? GGML_TYPE_F16 : GGML_TYPE_F32;
}

// File tensor t (2-D, any type with to_float) into rt (held as rt's type, F32 or F16): as it is,
// or for B (panels) transposed into ggml_lora_add's panels of 64 outputs, zero past the last. F16
// is the values times the power of two 2^e that puts the largest magnitude in [2^14, 2^15)
// (llama-adapter.h); returns 2^-e (1 for F32), or 0 (logged) for a non-finite value. tmp holds
// nelements(t) + nelements(rt) floats, out nelements(rt) values.
static float adapter_to_rt(const struct ggml_tensor * t, const void * src, bool panels, const struct ggml_tensor * rt,
                           float * tmp, void * out) {
    const enum ggml_type type = rt->type;
    const int64_t n0 = t->ne[0], n1 = t->ne[1], n = n0 * n1, n_rt = ggml_nelements(rt);
    float * f = tmp;
    if (t->type == GGML_TYPE_F32) {
        memcpy(f, src, (size_t) n * sizeof(float));
    } else {
        ggml_get_type_traits(t->type)->to_float(src, f, n);
    }
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(f[i])) {
            LLAMA_LOG_ERROR("llama_adapter_lora_init: '%s' holds a non-finite value\n", t->name);
            return 0.0f;
        }
        amax = fmaxf(amax, fabsf(f[i]));
    }
    int e = 0;
    if (type == GGML_TYPE_F16 && amax > 0.0f) {
        int ex = 0;
        frexpf(amax, &ex); // amax in [2^(ex-1), 2^ex)
        // |e| <= 100 keeps 2^-e a normal float; a matrix so far from 1 is zero in effect anyway
        e = 15 - ex < -100 ? -100 : 15 - ex > 100 ? 100 : 15 - ex;
    }
    const float s = ldexpf(1.0f, e);
    float * g = type == GGML_TYPE_F32 ? (float *) out : tmp + n;
    memset(g, 0, (size_t) n_rt * sizeof(float));
    for (int64_t i = 0; i < n1; i++) {
        for (int64_t j = 0; j < n0; j++) {
            // B's row i (output i) element j (rank index) goes to panel i / 64, row j, place i % 64
            const int64_t at = panels ? (i / GGML_LORA_PANEL * n0 + j) * GGML_LORA_PANEL + i % GGML_LORA_PANEL : i * n0 + j;
            g[at] = f[i * n0 + j] * s;
        }
    }
    if (type == GGML_TYPE_F16) {
        ggml_fp32_to_fp16_row(g, (ggml_fp16_t *) out, n_rt);
    }
    return ldexpf(1.0f, -e);
}

// Replaces every pair's file headers by copies of A and of B (in ggml_lora_add's transposed panels)
// in their held type, in a's own buffer.
static bool adapter_convert(struct llama_adapter_lora * a, const void * data, size_t size) {
    const size_t mem = (size_t) (2 * a->n_pairs + 1) * ggml_tensor_overhead();
    if ((a->ctx_rt = ggml_init((struct ggml_init_params) { .mem_size = mem, .mem_buffer = NULL, .no_alloc = true })) == NULL) {
        return false;
    }
    int64_t most = 1;
    struct ggml_tensor ** rt = GGML_MALLOC((size_t) (2 * a->n_pairs + 1) * sizeof(*rt));
    for (int32_t i = 0; rt != NULL && i < a->n_pairs; i++) {
        const struct ggml_tensor *ta = a->pairs[i].a, *tb = a->pairs[i].bt;
        const enum ggml_type type = adapter_rt_type(a->pairs[i].w);
        rt[2 * i] = ggml_new_tensor_2d(a->ctx_rt, type, ta->ne[0], ta->ne[1]);
        rt[2 * i + 1] =
            ggml_new_tensor_3d(a->ctx_rt, type, GGML_LORA_PANEL, tb->ne[0], (tb->ne[1] + GGML_LORA_PANEL - 1) / GGML_LORA_PANEL);
        if (rt[2 * i] == NULL || rt[2 * i + 1] == NULL) {
            free(rt);
            return false;
        }
        ggml_set_name(rt[2 * i], ta->name);
        ggml_set_name(rt[2 * i + 1], tb->name);
        most = ggml_nelements(ta) > most ? ggml_nelements(ta) : most;
        most = ggml_nelements(rt[2 * i + 1]) > most ? ggml_nelements(rt[2 * i + 1]) : most; // >= B's
    }
    float * tmp = rt ? GGML_MALLOC((size_t) most * 2 * sizeof(float)) : NULL;
    void * held = tmp ? GGML_MALLOC((size_t) most * sizeof(float)) : NULL;
    if (held == NULL ||
        ((a->buf = ggml_backend_alloc_ctx_tensors_from_buft(a->ctx_rt, ggml_backend_cpu_buffer_type())) == NULL &&
         a->n_pairs > 0)) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: out of memory for the adapter's tensors\n");
        free(rt);
        free(tmp);
        free(held);
        return false;
    }
    bool ok = true;
    for (int32_t i = 0; ok && i < a->n_pairs; i++) {
        struct llama_adapter_lora_pair * p = &a->pairs[i];
        float unscale = 1.0f;
        for (int k = 0; ok && k < 2; k++) {
            const struct ggml_tensor * t = k == 0 ? p->a : p->bt;
            const void * src = adapter_tensor_bytes(a, t, data, size);
            const float u = src ? adapter_to_rt(t, src, k == 1, rt[2 * i + k], tmp, held) : 0.0f;
            ok = u > 0.0f;
            if (ok) {
                ggml_backend_tensor_set(rt[2 * i + k], held, 0, ggml_nbytes(rt[2 * i + k]));
                unscale *= u;
            }
        }
        if (ok) {
            *p = (struct llama_adapter_lora_pair) { p->w, rt[2 * i], rt[2 * i + 1], unscale };
        }
    }
    free(rt);
    free(tmp);
    free(held);
    return ok;
}

// Parses the file's bytes into a; false (logged) if anything is wrong.
static bool adapter_load(struct llama_adapter_lora * a, struct llama_model * m, const void * data, size_t size) {
    struct ggml_context * meta = NULL;
    if ((a->gguf = gguf_init_from_buffer(data, size, (struct gguf_init_params) { .no_alloc = true, .ctx = &meta })) == NULL) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: not a readable GGUF file\n");
        return false;
    }
    a->ctx = meta;
    return adapter_check_meta(a, m) && adapter_pair_tensors(a, m) && adapter_convert(a, data, size);
}

// Reads all of f; NULL (logged) on failure. *size receives the length.
static void * adapter_read_all(FILE * f, size_t * size) {
    size_t cap = 1u << 20, n = 0;
    char * buf = GGML_MALLOC(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) {
            break;
        }
        char * more = GGML_REALLOC(buf, cap * 2);
        if (more == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = more;
        cap *= 2;
    }
    if (buf == NULL || ferror(f)) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: could not read the adapter file\n");
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

static struct llama_adapter_lora * adapter_init(struct llama_model * model, FILE * f, const char * what) {
    if (llama_model_checked(model, "llama_adapter_lora_init") == NULL) {
        return NULL;
    }
    if (model->vocab_only) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: the model was loaded with vocab_only; it has no weights\n");
        return NULL;
    }
    size_t size = 0;
    void * data = adapter_read_all(f, &size);
    struct llama_adapter_lora * a = data ? GGML_CALLOC(1, sizeof(*a)) : NULL;
    struct llama_adapter_lora ** list = a ? GGML_REALLOC(model->loras, (size_t) (model->n_loras + 1) * sizeof(*list)) : NULL;
    if (list != NULL) {
        model->loras = list;
    }
    if (list == NULL || !adapter_load(a, model, data, size)) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: %s refused\n", what);
        adapter_free(a);
        free(data);
        return NULL;
    }
    free(data);
    a->magic = LLAMA_MAGIC_ADAPTER;
    a->model = model;
    model->loras[model->n_loras++] = a;
    LLAMA_LOG_INFO("llama_adapter_lora_init: %s: %d matrices adapted, alpha %.3g\n", what, a->n_pairs, (double) a->alpha);
    return a;
}

struct llama_adapter_lora * llama_adapter_lora_init(struct llama_model * model, const char * path_lora) {
    if (path_lora == NULL) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: path is NULL\n");
        return NULL;
    }
    FILE * f = fopen(path_lora, "rb");
    if (f == NULL) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init: cannot open '%s'\n", path_lora);
        return NULL;
    }
    struct llama_adapter_lora * a = adapter_init(model, f, path_lora);
    fclose(f);
    return a;
}

struct llama_adapter_lora * llama_adapter_lora_init_from_file_ptr(struct llama_model * model, FILE * file) {
    if (file == NULL) {
        LLAMA_LOG_ERROR("llama_adapter_lora_init_from_file_ptr: file is NULL\n");
        return NULL;
    }
    return adapter_init(model, file, "adapter (FILE*)");
}

void llama_adapter_lora_free(struct llama_adapter_lora * adapter) {
    if (adapter == NULL || adapter_checked(adapter, "llama_adapter_lora_free") == NULL) {
        return;
    }
    struct llama_model * m = adapter->model;
    for (int32_t i = 0; i < m->n_loras; i++) {
        if (m->loras[i] == adapter) {
            m->loras[i] = m->loras[--m->n_loras];
            break;
        }
    }
    adapter_free(adapter);
}

void llama_adapter_lora_free_all(struct llama_model * model) {
    for (int32_t i = 0; i < model->n_loras; i++) {
        adapter_free(model->loras[i]);
    }
    free(model->loras);
    model->loras = NULL;
    model->n_loras = 0;
}

// ---------------------------------------------------------------------------------------------
// metadata: the adapter's non-array keys, formatted as the model's are

static int64_t adapter_meta_id(const struct llama_adapter_lora * a, int32_t i) {
    for (int64_t id = 0, k = 0; id < gguf_get_n_kv(a->gguf); id++) {
        if (gguf_get_kv_type(a->gguf, id) != GGUF_TYPE_ARRAY && k++ == i) {
            return id;
        }
    }
    return -1;
}

static int32_t adapter_no_value(char * buf, size_t buf_size) {
    if (buf != NULL && buf_size > 0) {
        buf[0] = '\0';
    }
    return -1;
}

int32_t llama_adapter_meta_val_str(const struct llama_adapter_lora * adapter, const char * key, char * buf, size_t buf_size) {
    if (adapter_checked(adapter, __func__) == NULL || key == NULL) {
        return adapter_no_value(buf, buf_size);
    }
    const int64_t id = gguf_find_key(adapter->gguf, key);
    return id < 0 ? adapter_no_value(buf, buf_size) : llama_gguf_kv_to_str(adapter->gguf, id, buf, buf_size);
}

int32_t llama_adapter_meta_count(const struct llama_adapter_lora * adapter) {
    if (adapter_checked(adapter, __func__) == NULL) {
        return -1;
    }
    int32_t n = 0;
    for (int64_t id = 0; id < gguf_get_n_kv(adapter->gguf); id++) {
        n += gguf_get_kv_type(adapter->gguf, id) != GGUF_TYPE_ARRAY;
    }
    return n;
}

int32_t llama_adapter_meta_key_by_index(const struct llama_adapter_lora * adapter, int32_t i, char * buf, size_t buf_size) {
    const int64_t id = adapter_checked(adapter, __func__) ? adapter_meta_id(adapter, i) : -1;
    if (id < 0) {
        return adapter_no_value(buf, buf_size);
    }
    const char * k = gguf_get_key(adapter->gguf, id);
    return buf == NULL || buf_size == 0 ? (int32_t) strlen(k) : snprintf(buf, buf_size, "%s", k);
}

int32_t llama_adapter_meta_val_str_by_index(const struct llama_adapter_lora * adapter, int32_t i, char * buf, size_t buf_size) {
    const int64_t id = adapter_checked(adapter, __func__) ? adapter_meta_id(adapter, i) : -1;
    return id < 0 ? adapter_no_value(buf, buf_size) : llama_gguf_kv_to_str(adapter->gguf, id, buf, buf_size);
}

uint64_t llama_adapter_get_alora_n_invocation_tokens(const struct llama_adapter_lora * adapter) {
    return adapter_checked(adapter, __func__) ? adapter->n_alora_tokens : 0;
}

const llama_token * llama_adapter_get_alora_invocation_tokens(const struct llama_adapter_lora * adapter) {
    return adapter_checked(adapter, __func__) ? adapter->alora_tokens : NULL;
}

// ---------------------------------------------------------------------------------------------
// on a context

// Grows the graph capacity (and its arena) by the nodes the adapters now set on ctx add to a
// graph (a LORA_ADD node per adapted matrix, plus the views and copies of fused products'
// parts: 4 per matrix is ample); false if out of memory (the old capacity stays).
static bool adapters_reserve_graph(struct llama_context * ctx) {
    if (ctx->graph_size_base == 0) {
        ctx->graph_size_base = ctx->graph_size;
    }
    size_t pairs = 0;
    for (int32_t i = 0; i < ctx->n_loras; i++) {
        pairs += (size_t) ctx->loras[i].adapter->n_pairs;
    }
    for (int32_t e = 0; e < ctx->n_lora_seq; e++) {
        pairs += (size_t) ctx->lora_seq[e].adapter->n_pairs + 2;  // + its two scale inputs
    }
    const size_t need = ctx->graph_size_base + 4 * pairs;
    if (need <= ctx->graph_size) {
        return true;
    }
    const size_t arena = need * ggml_tensor_overhead() + ggml_graph_overhead_custom(need, false);
    struct ggml_context * c = ggml_init((struct ggml_init_params) { .mem_size = arena, .mem_buffer = NULL, .no_alloc = true });
    if (c == NULL) {
        LLAMA_LOG_ERROR("llama_set_adapters_lora: out of memory for a graph of %zu nodes\n", need);
        return false;
    }
    ggml_free(ctx->ctx_compute);
    ctx->ctx_compute = c;
    ctx->graph_size = need;
    ctx->graph_reusable = false; // the kept graph lived in the old arena
    return true;
}

// 0 when adapters[0..n) (with scales) may be set on ctx, else -1 (logged as func's error).
static int32_t adapters_check(const struct llama_context * ctx, struct llama_adapter_lora ** adapters, size_t n_adapters,
                              const float * scales, const char * func) {
    if (n_adapters > 0 && (adapters == NULL || scales == NULL)) {
        LLAMA_LOG_ERROR("%s: adapters and scales must be given for %zu adapters\n", func, n_adapters);
        return -1;
    }
    for (size_t i = 0; i < n_adapters; i++) {
        if (adapter_checked(adapters[i], func) == NULL) {
            return -1;
        }
        if (adapters[i]->model != ctx->model) {
            LLAMA_LOG_ERROR("%s: adapter %zu was loaded for another model\n", func, i);
            return -1;
        }
    }
    return 0;
}

int32_t llama_set_adapters_lora(struct llama_context * ctx, struct llama_adapter_lora ** adapters, size_t n_adapters,
                                float * scales) {
    if (llama_context_checked(ctx, __func__) == NULL) {
        return -1;
    }
    if (adapters_check(ctx, adapters, n_adapters, scales, __func__) != 0) {
        return -1;
    }
    bool same = (size_t) ctx->n_loras == n_adapters;
    for (size_t i = 0; same && i < n_adapters; i++) {
        same = ctx->loras[i].adapter == adapters[i] && ctx->loras[i].scale == scales[i];
    }
    if (same) {
        return 0;
    }
    struct llama_lora_slot * slots = NULL;
    if (n_adapters > 0 && (slots = GGML_MALLOC(n_adapters * sizeof(*slots))) == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n_adapters; i++) {
        slots[i] = (struct llama_lora_slot) { adapters[i], scales[i] };
    }
    struct llama_lora_slot * old = ctx->loras;
    const int32_t n_old = ctx->n_loras;
    ctx->loras = slots;
    ctx->n_loras = (int32_t) n_adapters;
    ctx->graph_reusable = false; // the graph's products change
    if (!adapters_reserve_graph(ctx)) {
        ctx->loras = old;
        ctx->n_loras = n_old;
        free(slots);
        return -1;
    }
    free(old);
    return 0;
}

// The pair of a that adapts w, or NULL.
static const struct llama_adapter_lora_pair * adapter_pair(const struct llama_adapter_lora * a, const struct ggml_tensor * w) {
    for (int32_t j = 0; j < a->n_pairs; j++) {
        if (a->pairs[j].w == w) {
            return &a->pairs[j];
        }
    }
    return NULL;
}

// The factor a user scale s becomes for pair p: s·alpha/r (s when alpha is absent).
static float adapter_pair_scale(const struct llama_adapter_lora * a, const struct llama_adapter_lora_pair * p, float s) {
    const float rank = (float) p->a->ne[1];
    return s * (a->alpha > 0.0f ? a->alpha / rank : 1.0f);
}

// The per-row scales of sequence adapter e for x's columns: an F32 [1, n] input named
// "inp_lora_tok.e" (every row of the ubatch) or "inp_lora_out.e" (its output rows), made on
// first use; NULL when x has neither many columns.
static struct ggml_tensor * adapter_seq_scales(struct llm_graph * g, int32_t e, const struct ggml_tensor * x) {
    const bool tok = x->ne[1] == g->n_tokens;
    if (!tok && !(x->ne[1] == g->n_rows && g->n_rows > 0)) {
        LLAMA_LOG_ERROR("llama_decode: a per-sequence LoRA product has %lld columns, neither the ubatch's %lld rows "
                        "nor its %lld output rows\n",
                        (long long) x->ne[1], (long long) g->n_tokens, (long long) g->n_rows);
        return NULL;
    }
    char name[GGML_MAX_NAME];
    snprintf(name, sizeof(name), "%s.%d", tok ? "inp_lora_tok" : "inp_lora_out", (int) e);
    struct ggml_tensor * t = ggml_get_tensor(g->c, name);
    if (t == NULL && (t = ggml_new_tensor_2d(g->c, GGML_TYPE_F32, 1, x->ne[1])) != NULL) {
        ggml_set_name(t, name);
        ggml_set_input(t);
    }
    return t;
}

struct ggml_tensor * llm_graph_lora(struct llm_graph * g, const struct ggml_tensor * w, struct ggml_tensor * x,
                                    struct ggml_tensor * y) {
    const struct llama_context * ctx = g->ctx;
    for (int32_t i = 0; y != NULL && w != NULL && i < ctx->n_loras; i++) {
        const struct llama_adapter_lora * a = ctx->loras[i].adapter;
        const struct llama_adapter_lora_pair * p = adapter_pair(a, w);
        if (p != NULL) {
            // the pair's unscale is a power of two: the factor's bits are s·alpha/r's, shifted
            y = ggml_lora_add(g->c, y, x, p->a, p->bt, NULL, adapter_pair_scale(a, p, ctx->loras[i].scale) * p->unscale);
        }
    }
    // per-sequence adapters: each column's factor is its row's scale input (s·alpha/r of its
    // sequence, or 0: that column is y's exactly), the same product as the context-wide factor
    // above for the rows that use it
    for (int32_t e = 0; y != NULL && w != NULL && e < ctx->n_lora_seq; e++) {
        const struct llama_adapter_lora * a = ctx->lora_seq[e].adapter;
        const struct llama_adapter_lora_pair * p = adapter_pair(a, w);
        if (p != NULL) {
            struct ggml_tensor * s = adapter_seq_scales(g, e, x);
            // the inputs carry alpha/r of the first pair's rank; a pair of another rank corrects it
            const float f = p->a->ne[1] == a->pairs[0].a->ne[1]
                ? 1.0f
                : adapter_pair_scale(a, p, 1.0f) / adapter_pair_scale(a, &a->pairs[0], 1.0f);
            y = s ? ggml_lora_add(g->c, y, x, p->a, p->bt, s, f * p->unscale) : NULL;
        }
    }
    return y;
}

void llama_adapter_lora_set_inputs(struct llama_context * ctx, const struct llama_ubatch * ub, struct ggml_cgraph * gf) {
    for (int32_t e = 0; e < ctx->n_lora_seq; e++) {
        const struct llama_adapter_lora * a = ctx->lora_seq[e].adapter;
        for (int k = 0; k < 2; k++) {
            char name[GGML_MAX_NAME];
            snprintf(name, sizeof(name), "%s.%d", k == 0 ? "inp_lora_tok" : "inp_lora_out", (int) e);
            struct ggml_tensor * t = ggml_graph_get_tensor(gf, name);
            if (t == NULL || t->data == NULL) {
                continue;
            }
            const size_t n = (size_t) t->ne[1];
            if (n > ctx->lora_seq_scratch_n) {
                float * p = GGML_REALLOC(ctx->lora_seq_scratch, n * sizeof(float));
                if (p == NULL) {
                    LLAMA_LOG_ERROR("llama_decode: out of memory for the per-sequence LoRA scales\n");
                    continue;
                }
                ctx->lora_seq_scratch = p;
                ctx->lora_seq_scratch_n = n;
            }
            float * v = ctx->lora_seq_scratch;
            size_t r = 0;
            for (int32_t i = 0; i < ub->n_tokens && r < n; i++) {
                if (k == 1 && !ub->output[i]) {
                    continue;  // the output rows are the flagged ones, in order
                }
                const llama_seq_id s = ub->seq_id[i][0];
                float us = s >= 0 && (uint32_t) s < ctx->n_seq_max ? ctx->lora_seq[e].scales[s] : 0.0f;
                if (us != 0.0f && a->n_alora_tokens > 0 && ctx->alora_start != NULL &&
                    (ctx->alora_start[s] < 0 || ub->pos[i] < ctx->alora_start[s])) {
                    us = 0.0f; // an aLoRA before its invocation: the base model's row
                }
                v[r++] = us != 0.0f ? adapter_pair_scale(a, &a->pairs[0], us) : 0.0f;
            }
            llama_context_set_input(ctx, t, v, n * sizeof(float));
        }
    }
}

// Drops sequence adapters no sequence uses any more; true if the list changed.
static bool lora_seq_compact(struct llama_context * ctx) {
    int32_t k = 0;
    for (int32_t e = 0; e < ctx->n_lora_seq; e++) {
        bool used = false;
        for (uint32_t s = 0; s < ctx->n_seq_max && !used; s++) {
            used = ctx->lora_seq[e].scales[s] != 0.0f;
        }
        if (used) {
            ctx->lora_seq[k++] = ctx->lora_seq[e];
        } else {
            free(ctx->lora_seq[e].scales);
        }
    }
    const bool changed = k != ctx->n_lora_seq;
    ctx->n_lora_seq = k;
    return changed;
}

int32_t llama_set_adapters_lora_seq(struct llama_context * ctx, llama_seq_id seq_id, struct llama_adapter_lora ** adapters,
                                    size_t n_adapters, float * scales) {
    if (llama_context_checked(ctx, __func__) == NULL) {
        return -1;
    }
    if (seq_id < 0 || (uint32_t) seq_id >= ctx->n_seq_max) {
        LLAMA_LOG_ERROR("%s: seq_id %d is outside [0, %u)\n", __func__, seq_id, ctx->n_seq_max);
        return -1;
    }
    if (adapters_check(ctx, adapters, n_adapters, scales, __func__) != 0) {
        return -1;
    }
    // room for every new adapter first, so that a failure changes nothing
    struct llama_lora_seq * list = GGML_REALLOC(ctx->lora_seq, (ctx->n_lora_seq + n_adapters + 1) * sizeof(*list));
    if (list == NULL) {
        return -1;
    }
    ctx->lora_seq = list;
    bool changed = false;
    for (int32_t e = 0; e < ctx->n_lora_seq; e++) {
        list[e].scales[seq_id] = 0.0f;
    }
    for (size_t i = 0; i < n_adapters; i++) {
        int32_t e = 0;
        while (e < ctx->n_lora_seq && list[e].adapter != adapters[i]) {
            e++;
        }
        if (e == ctx->n_lora_seq) {
            float * sc = GGML_CALLOC(ctx->n_seq_max, sizeof(float));
            if (sc == NULL) {
                lora_seq_compact(ctx);
                ctx->graph_reusable = false;
                return -1;
            }
            list[e] = (struct llama_lora_seq) { adapters[i], sc };
            ctx->n_lora_seq++;
            changed = true;
        }
        list[e].scales[seq_id] += scales[i];
    }
    if (lora_seq_compact(ctx) || changed) {
        ctx->graph_reusable = false; // the graph's products change (only scales: the inputs carry them)
    }
    if (!adapters_reserve_graph(ctx)) {
        // back to no adapters on this sequence rather than a graph that cannot be built
        for (int32_t e = 0; e < ctx->n_lora_seq; e++) {
            ctx->lora_seq[e].scales[seq_id] = 0.0f;
        }
        lora_seq_compact(ctx);
        return -1;
    }
    return 0;
}

int32_t llama_set_alora_start(struct llama_context * ctx, llama_seq_id seq_id, llama_pos pos_start) {
    if (llama_context_checked(ctx, __func__) == NULL) {
        return -1;
    }
    if (seq_id < 0 || (uint32_t) seq_id >= ctx->n_seq_max) {
        LLAMA_LOG_ERROR("%s: seq_id %d is outside [0, %u)\n", __func__, seq_id, ctx->n_seq_max);
        return -1;
    }
    if (ctx->alora_start == NULL && (ctx->alora_start = GGML_CALLOC(ctx->n_seq_max, sizeof(llama_pos))) == NULL) {
        LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
        return -1;
    }
    ctx->alora_start[seq_id] = pos_start < 0 ? -1 : pos_start; // the scales are inputs: the graph stays
    return 0;
}

struct ggml_tensor * llm_graph_mm(struct llm_graph * g, struct ggml_tensor * w, struct ggml_tensor * x) {
    return llm_graph_lora(g, w, x, ggml_mul_mat(g->c, w, x));
}
