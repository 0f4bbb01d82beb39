// ggml.c — logging, the abort hook, ABI self-description, the context arena, tensor and view
// creation, and graph construction. Op constructors live in ggml-ops.c.
#include "ggml-core.h"
#include "gguf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>

#if defined(_WIN32)
#include <malloc.h>
#endif

// ---------------------------------------------------------------------------------------------
// logging and abort hook

static void ggml_log_default(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
        fflush(stderr);
    }
}

static ggml_log_callback g_log_callback = ggml_log_default;
static void * g_log_user_data = NULL;

void ggml_log_set(ggml_log_callback callback, void * user_data) {
    g_log_callback = callback ? callback : ggml_log_default;
    g_log_user_data = callback ? user_data : NULL;
}

void ggml_log_get(ggml_log_callback * callback, void ** user_data) {
    if (callback) *callback = g_log_callback;
    if (user_data) *user_data = g_log_user_data;
}

void ggml_log_internal(enum ggml_log_level level, const char * fmt, ...) {
    char stack_buf[512];
    va_list args;
    va_start(args, fmt);
    va_list args2;
    va_copy(args2, args);
    const int len = vsnprintf(stack_buf, sizeof(stack_buf) - 1, fmt, args);
    va_end(args);
    char * text = stack_buf;
    char * heap = NULL;
    if (len < 0) {
        va_end(args2);
        return;
    }
    if ((size_t) len >= sizeof(stack_buf) - 1) {
        heap = GGML_MALLOC((size_t) len + 2);
        if (heap) {
            vsnprintf(heap, (size_t) len + 1, fmt, args2);
            text = heap;
        }
    }
    va_end(args2);
    // The callback contract says each text ends with a newline.
    size_t n = strlen(text);
    if (n == 0 || text[n - 1] != '\n') {
        text[n] = '\n';
        text[n + 1] = '\0';
    }
    g_log_callback(level, text, g_log_user_data);
    free(heap);
}

static void ggml_abort_default(const char * file, int line, const char * message) {
    fprintf(stderr, "%s:%d: GGML_ASSERT(%s) failed\n", file, line, message);
    fflush(stderr);
}

static ggml_abort_hook g_abort_hook = ggml_abort_default;

void ggml_set_abort_hook(ggml_abort_hook hook) { g_abort_hook = hook ? hook : ggml_abort_default; }

void ggml_abort(const char * file, int line, const char * message) {
    g_abort_hook(file, line, message);
    // A broken invariant leaves no state worth continuing from; a hook that wants to survive
    // must not return (e.g. longjmp in a test harness).
    abort();
}

// ---------------------------------------------------------------------------------------------
// ABI self-description: Python checks its ctypes mirrors against these at import.

#define ABI_FIELD(s, f) { #s, #f, offsetof(struct s, f) }

static const struct ggml_abi_struct g_abi_structs[] = {
    { "ggml_tensor", sizeof(struct ggml_tensor) },
    { "ggml_init_params", sizeof(struct ggml_init_params) },
    { "ggml_type_traits", sizeof(struct ggml_type_traits) },
    { "gguf_init_params", sizeof(struct gguf_init_params) },
};

static const struct ggml_abi_field g_abi_fields[] = {
    ABI_FIELD(ggml_tensor, type),
    ABI_FIELD(ggml_tensor, buffer),
    ABI_FIELD(ggml_tensor, ne),
    ABI_FIELD(ggml_tensor, nb),
    ABI_FIELD(ggml_tensor, op),
    ABI_FIELD(ggml_tensor, op_params),
    ABI_FIELD(ggml_tensor, flags),
    ABI_FIELD(ggml_tensor, src),
    ABI_FIELD(ggml_tensor, view_src),
    ABI_FIELD(ggml_tensor, view_offs),
    ABI_FIELD(ggml_tensor, data),
    ABI_FIELD(ggml_tensor, name),
    ABI_FIELD(ggml_tensor, extra),
    ABI_FIELD(ggml_tensor, padding),
    ABI_FIELD(ggml_init_params, mem_size),
    ABI_FIELD(ggml_init_params, mem_buffer),
    ABI_FIELD(ggml_init_params, no_alloc),
    ABI_FIELD(ggml_type_traits, type_name),
    ABI_FIELD(ggml_type_traits, blck_size),
    ABI_FIELD(ggml_type_traits, type_size),
    ABI_FIELD(ggml_type_traits, is_quantized),
    ABI_FIELD(ggml_type_traits, to_float),
    ABI_FIELD(ggml_type_traits, from_float_ref),
    ABI_FIELD(gguf_init_params, no_alloc),
    ABI_FIELD(gguf_init_params, ctx),
};

#undef ABI_FIELD

int ggml_abi_version(void) { return GGML_ABI_VERSION; }

size_t ggml_abi_struct_size(const char * struct_name) {
    if (!struct_name) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(g_abi_structs) / sizeof(g_abi_structs[0]); i++) {
        if (strcmp(g_abi_structs[i].struct_name, struct_name) == 0) {
            return g_abi_structs[i].size;
        }
    }
    return 0;
}

size_t ggml_abi_field_offset(const char * struct_name, const char * field_name) {
    if (!struct_name || !field_name) {
        return (size_t) -1;
    }
    for (size_t i = 0; i < sizeof(g_abi_fields) / sizeof(g_abi_fields[0]); i++) {
        if (strcmp(g_abi_fields[i].struct_name, struct_name) == 0 && strcmp(g_abi_fields[i].field_name, field_name) == 0) {
            return g_abi_fields[i].offset;
        }
    }
    return (size_t) -1;
}

// ---------------------------------------------------------------------------------------------
// types and ops

const char * ggml_type_name(enum ggml_type type) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    return tt && tt->type_name ? tt->type_name : "NONE";
}

size_t ggml_type_size(enum ggml_type type) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    return tt ? tt->type_size : 0;
}

int64_t ggml_blck_size(enum ggml_type type) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    return tt && tt->blck_size > 0 ? tt->blck_size : 1;
}

size_t ggml_row_size(enum ggml_type type, int64_t ne) { return ggml_type_size(type) * (size_t) (ne / ggml_blck_size(type)); }

bool ggml_is_quantized(enum ggml_type type) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    return tt ? tt->is_quantized : false;
}

static const char * const g_op_names[GGML_OP_COUNT] = {
    [GGML_OP_NONE] = "NONE",
    [GGML_OP_DUP] = "DUP",
    [GGML_OP_ADD] = "ADD",
    [GGML_OP_SUB] = "SUB",
    [GGML_OP_MUL] = "MUL",
    [GGML_OP_DIV] = "DIV",
    [GGML_OP_SCALE] = "SCALE",
    [GGML_OP_RMS_NORM] = "RMS_NORM",
    [GGML_OP_NORM] = "NORM",
    [GGML_OP_SILU] = "SILU",
    [GGML_OP_GELU] = "GELU",
    [GGML_OP_SWIGLU] = "SWIGLU",
    [GGML_OP_MUL_MAT] = "MUL_MAT",
    [GGML_OP_SOFT_MAX] = "SOFT_MAX",
    [GGML_OP_ROPE] = "ROPE",
    [GGML_OP_DIAG_MASK_INF] = "DIAG_MASK_INF",
    [GGML_OP_GET_ROWS] = "GET_ROWS",
    [GGML_OP_SET_ROWS] = "SET_ROWS",
    [GGML_OP_SUM_ROWS] = "SUM_ROWS",
    [GGML_OP_ARGMAX] = "ARGMAX",
    [GGML_OP_CONCAT] = "CONCAT",
    [GGML_OP_CPY] = "CPY",
    [GGML_OP_CONT] = "CONT",
    [GGML_OP_RESHAPE] = "RESHAPE",
    [GGML_OP_VIEW] = "VIEW",
    [GGML_OP_PERMUTE] = "PERMUTE",
    [GGML_OP_TRANSPOSE] = "TRANSPOSE",
    [GGML_OP_FLASH_ATTN_EXT] = "FLASH_ATTN_EXT",
    [GGML_OP_TANH] = "TANH",
    [GGML_OP_MUL_MAT_ID] = "MUL_MAT_ID",
    [GGML_OP_ARGSORT] = "ARGSORT",
    [GGML_OP_TOP_K] = "TOP_K",
    [GGML_OP_SIGMOID] = "SIGMOID",
    [GGML_OP_SOFTPLUS] = "SOFTPLUS",
    [GGML_OP_CLAMP] = "CLAMP",
    [GGML_OP_LORA_ADD] = "LORA_ADD",
    [GGML_OP_L2_NORM] = "L2_NORM",
    [GGML_OP_SSM_CONV] = "SSM_CONV",
    [GGML_OP_GATED_DELTA_NET] = "GATED_DELTA_NET",
};

const char * ggml_op_name(enum ggml_op op) {
    if ((int) op < 0 || op >= GGML_OP_COUNT || !g_op_names[op]) {
        return "UNKNOWN";
    }
    return g_op_names[op];
}

// ---------------------------------------------------------------------------------------------
// aligned heap memory

void * ggml_aligned_malloc(size_t size) {
    if (size == 0) {
        size = GGML_MEM_ALIGN;
    }
    return GGML_ALIGNED_ALLOC(GGML_MEM_ALIGN, size);
}

void ggml_aligned_free(void * ptr) { ggml_mem_aligned_free(ptr); }

// ---------------------------------------------------------------------------------------------
// context arena: [object header | payload] records bump-allocated and 64-byte aligned

enum ggml_object_type {
    GGML_OBJECT_TENSOR = 0,
    GGML_OBJECT_GRAPH = 1,
};

struct ggml_object {
    size_t offs;                // payload offset from the context's aligned base
    size_t size;                // payload bytes (padded)
    struct ggml_object * next;
    enum ggml_object_type type;
};

#define GGML_OBJECT_SIZE GGML_PAD(sizeof(struct ggml_object), GGML_MEM_ALIGN)
#define GGML_TENSOR_SIZE GGML_PAD(sizeof(struct ggml_tensor), GGML_MEM_ALIGN)

struct ggml_context {
    char * mem;           // aligned base of the usable arena
    size_t mem_size;      // usable bytes from mem
    void * mem_owned;     // buffer to free, or NULL when the caller owns it
    bool no_alloc;
    size_t used;          // bump offset from mem
    struct ggml_object * first;
    struct ggml_object * last;
};

struct ggml_context * ggml_init(struct ggml_init_params params) {
    struct ggml_context * ctx = GGML_CALLOC(1, sizeof(*ctx));
    if (!ctx) {
        GGML_LOG_ERROR("ggml_init: cannot allocate the context struct");
        return NULL;
    }
    char * buf;
    size_t size = params.mem_size;
    if (params.mem_buffer) {
        buf = params.mem_buffer;
    } else {
        buf = ggml_aligned_malloc(size);
        if (!buf) {
            GGML_LOG_ERROR("ggml_init: cannot allocate an arena of %zu bytes", size);
            free(ctx);
            return NULL;
        }
        ctx->mem_owned = buf;
    }
    // A caller's buffer may start unaligned: skip to the first aligned byte.
    const size_t skip = (size_t) (GGML_PAD((uintptr_t) buf, GGML_MEM_ALIGN) - (uintptr_t) buf);
    ctx->mem = buf + (skip <= size ? skip : size);
    ctx->mem_size = skip <= size ? size - skip : 0;
    ctx->no_alloc = params.no_alloc;
    return ctx;
}

void ggml_free(struct ggml_context * ctx) {
    if (!ctx) {
        return;
    }
    ggml_aligned_free(ctx->mem_owned);
    free(ctx);
}

void ggml_reset(struct ggml_context * ctx) {
    if (!ctx) {
        return;
    }
    ctx->used = 0;
    ctx->first = NULL;
    ctx->last = NULL;
}

size_t ggml_used_mem(const struct ggml_context * ctx) { return ctx ? ctx->used : 0; }

size_t ggml_tensor_overhead(void) { return GGML_OBJECT_SIZE + GGML_TENSOR_SIZE; }

bool ggml_get_no_alloc(struct ggml_context * ctx) { return ctx ? ctx->no_alloc : false; }

void ggml_set_no_alloc(struct ggml_context * ctx, bool no_alloc) {
    if (ctx) {
        ctx->no_alloc = no_alloc;
    }
}

// Reserves an object with `size` payload bytes; NULL (logged) when the arena is full.
static struct ggml_object * ggml_new_object(struct ggml_context * ctx, enum ggml_object_type type, size_t size) {
    const size_t obj_offs = ctx->used;
    const size_t pay_offs = obj_offs + GGML_OBJECT_SIZE;
    if (size > SIZE_MAX - GGML_MEM_ALIGN - pay_offs) {
        GGML_LOG_ERROR("ggml_new_object: object of %zu bytes is too large", size);
        return NULL;
    }
    const size_t end = pay_offs + GGML_PAD(size, GGML_MEM_ALIGN);
    if (end > ctx->mem_size) {
        GGML_LOG_ERROR("ggml_new_object: context arena exhausted: need %zu more bytes, %zu of %zu in use", end - ctx->used,
                       ctx->used, ctx->mem_size);
        return NULL;
    }
    struct ggml_object * obj = (struct ggml_object *) (ctx->mem + obj_offs);
    obj->offs = pay_offs;
    obj->size = end - pay_offs;
    obj->next = NULL;
    obj->type = type;
    if (ctx->last) {
        ctx->last->next = obj;
    } else {
        ctx->first = obj;
    }
    ctx->last = obj;
    ctx->used = end;
    return obj;
}

// a * b into *r; false on overflow.
static bool ggml_mul_ok(size_t a, size_t b, size_t * r) {
    if (a != 0 && b > SIZE_MAX / a) {
        return false;
    }
    *r = a * b;
    return true;
}

static inline struct ggml_object * ggml_tensor_object(const struct ggml_tensor * t) {
    return (struct ggml_object *) ((char *) t - GGML_OBJECT_SIZE);
}

const char * ggml_tensor_desc(const struct ggml_tensor * t, char * buf, size_t size) {
    if (!t) {
        snprintf(buf, size, "NULL");
    } else {
        snprintf(buf, size, "%s [%lld, %lld, %lld, %lld]%s%s%s", ggml_type_name(t->type), (long long) t->ne[0],
                 (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3], t->name[0] ? " '" : "", t->name,
                 t->name[0] ? "'" : "");
    }
    return buf;
}

struct ggml_tensor * ggml_new_tensor_impl(struct ggml_context * ctx, enum ggml_type type, int n_dims, const int64_t * ne,
                                          struct ggml_tensor * view_src, size_t view_offs) {
    if (!ctx) {
        GGML_LOG_ERROR("ggml_new_tensor: NULL context");
        return NULL;
    }
    if (n_dims < 1 || n_dims > GGML_MAX_DIMS || !ne) {
        GGML_LOG_ERROR("ggml_new_tensor: n_dims %d is not in 1..%d", n_dims, GGML_MAX_DIMS);
        return NULL;
    }
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    if (!tt || tt->type_size == 0) {
        GGML_LOG_ERROR("ggml_new_tensor: unsupported type id %d", (int) type);
        return NULL;
    }
    int64_t shape[GGML_MAX_DIMS] = { 1, 1, 1, 1 };
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 0) {
            GGML_LOG_ERROR("ggml_new_tensor: ne[%d] = %lld is negative", i, (long long) ne[i]);
            return NULL;
        }
        shape[i] = ne[i];
    }
    const int64_t blck = tt->blck_size > 0 ? tt->blck_size : 1;
    if (shape[0] % blck != 0) {
        GGML_LOG_ERROR("ggml_new_tensor: ne[0] = %lld is not a multiple of the %s block size %lld", (long long) shape[0],
                       tt->type_name, (long long) blck);
        return NULL;
    }
    // Contiguous strides; the product doubles as the data size and must not overflow.
    size_t nb[GGML_MAX_DIMS];
    size_t total;
    bool ok = ggml_mul_ok(tt->type_size, (size_t) (shape[0] / blck), &total);
    nb[0] = tt->type_size;
    nb[1] = total;
    for (int i = 2; ok && i < GGML_MAX_DIMS; i++) {
        ok = ggml_mul_ok(nb[i - 1], (size_t) shape[i - 1], &nb[i]);
    }
    ok = ok && ggml_mul_ok(nb[3], (size_t) shape[3], &total);
    if (!ok || total > (size_t) INT64_MAX / 2) {
        GGML_LOG_ERROR("ggml_new_tensor: shape [%lld, %lld, %lld, %lld] overflows the size", (long long) shape[0],
                       (long long) shape[1], (long long) shape[2], (long long) shape[3]);
        return NULL;
    }

    if (view_src) {
        view_offs += view_src->view_src ? view_src->view_offs : 0;
        view_src = ggml_tensor_root(view_src);
        const size_t src_bytes = ggml_nbytes(view_src);
        if (view_offs > src_bytes || total > src_bytes - view_offs) {
            char d[GGML_TENSOR_DESC_SIZE];
            GGML_LOG_ERROR("ggml_new_tensor: view of %zu bytes at offset %zu exceeds its source %s (%zu bytes)", total, view_offs,
                           ggml_tensor_desc(view_src, d, sizeof(d)), src_bytes);
            return NULL;
        }
    }

    const bool own_data = !view_src && !ctx->no_alloc;
    const size_t payload = GGML_TENSOR_SIZE + (own_data ? total : 0);
    if (own_data && payload < total) {
        GGML_LOG_ERROR("ggml_new_tensor: %zu bytes of data is too large", total);
        return NULL;
    }
    struct ggml_object * obj = ggml_new_object(ctx, GGML_OBJECT_TENSOR, payload);
    if (!obj) {
        return NULL;
    }
    struct ggml_tensor * t = (struct ggml_tensor *) (ctx->mem + obj->offs);
    memset(t, 0, sizeof(*t));
    t->type = type;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->ne[i] = shape[i];
        t->nb[i] = nb[i];
    }
    t->op = GGML_OP_NONE;
    t->view_src = view_src;
    t->view_offs = view_src ? view_offs : 0;
    if (view_src) {
        t->data = view_src->data ? (char *) view_src->data + view_offs : NULL;
        t->buffer = view_src->buffer;
    } else if (own_data) {
        t->data = (char *) t + GGML_TENSOR_SIZE;
    }
    return t;
}

struct ggml_tensor * ggml_new_tensor(struct ggml_context * ctx, enum ggml_type type, int n_dims, const int64_t * ne) {
    return ggml_new_tensor_impl(ctx, type, n_dims, ne, NULL, 0);
}

struct ggml_tensor * ggml_new_tensor_1d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0) {
    const int64_t ne[1] = { ne0 };
    return ggml_new_tensor_impl(ctx, type, 1, ne, NULL, 0);
}

struct ggml_tensor * ggml_new_tensor_2d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = { ne0, ne1 };
    return ggml_new_tensor_impl(ctx, type, 2, ne, NULL, 0);
}

struct ggml_tensor * ggml_new_tensor_3d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = { ne0, ne1, ne2 };
    return ggml_new_tensor_impl(ctx, type, 3, ne, NULL, 0);
}

struct ggml_tensor * ggml_new_tensor_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                                        int64_t ne3) {
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    return ggml_new_tensor_impl(ctx, type, 4, ne, NULL, 0);
}

struct ggml_tensor * ggml_new_f32(struct ggml_context * ctx, float value) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    if (t && t->data) {
        *(float *) t->data = value;
    } else if (t) {
        GGML_LOG_WARN("ggml_new_f32: context has no_alloc set; the value is not stored");
    }
    return t;
}

struct ggml_tensor * ggml_new_i32(struct ggml_context * ctx, int32_t value) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    if (t && t->data) {
        *(int32_t *) t->data = value;
    } else if (t) {
        GGML_LOG_WARN("ggml_new_i32: context has no_alloc set; the value is not stored");
    }
    return t;
}

struct ggml_tensor * ggml_dup_tensor(struct ggml_context * ctx, const struct ggml_tensor * src) {
    if (!src) {
        GGML_LOG_ERROR("ggml_dup_tensor: NULL source");
        return NULL;
    }
    return ggml_new_tensor_impl(ctx, src->type, GGML_MAX_DIMS, src->ne, NULL, 0);
}

struct ggml_tensor * ggml_view_tensor(struct ggml_context * ctx, struct ggml_tensor * src) {
    if (!src) {
        GGML_LOG_ERROR("ggml_view_tensor: NULL source");
        return NULL;
    }
    // Created over one block, then given src's shape and strides: src's span is in bounds.
    const int64_t one[1] = { ggml_blck_size(src->type) };
    struct ggml_tensor * t = ggml_new_tensor_impl(ctx, src->type, 1, one, src, 0);
    if (!t) {
        return NULL;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->ne[i] = src->ne[i];
        t->nb[i] = src->nb[i];
    }
    t->op = GGML_OP_VIEW;
    t->src[0] = src;
    ggml_format_name(t, "%s (view)", src->name);
    return t;
}

struct ggml_tensor * ggml_get_first_tensor(const struct ggml_context * ctx) {
    if (!ctx) {
        return NULL;
    }
    for (struct ggml_object * obj = ctx->first; obj; obj = obj->next) {
        if (obj->type == GGML_OBJECT_TENSOR) {
            return (struct ggml_tensor *) (ctx->mem + obj->offs);
        }
    }
    return NULL;
}

struct ggml_tensor * ggml_get_next_tensor(const struct ggml_context * ctx, struct ggml_tensor * tensor) {
    if (!ctx || !tensor) {
        return NULL;
    }
    for (struct ggml_object * obj = ggml_tensor_object(tensor)->next; obj; obj = obj->next) {
        if (obj->type == GGML_OBJECT_TENSOR) {
            return (struct ggml_tensor *) (ctx->mem + obj->offs);
        }
    }
    return NULL;
}

struct ggml_tensor * ggml_get_tensor(struct ggml_context * ctx, const char * name) {
    if (!ctx || !name) {
        return NULL;
    }
    for (struct ggml_object * obj = ctx->first; obj; obj = obj->next) {
        if (obj->type == GGML_OBJECT_TENSOR) {
            struct ggml_tensor * t = (struct ggml_tensor *) (ctx->mem + obj->offs);
            if (strcmp(t->name, name) == 0) {
                return t;
            }
        }
    }
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// tensor properties

struct ggml_tensor * ggml_set_name(struct ggml_tensor * tensor, const char * name) {
    if (!tensor) {
        return NULL;
    }
    size_t i = 0;
    for (; name && name[i] && i < GGML_MAX_NAME - 1; i++) {
        tensor->name[i] = name[i];
    }
    tensor->name[i] = '\0';
    return tensor;
}

struct ggml_tensor * ggml_format_name(struct ggml_tensor * tensor, const char * fmt, ...) {
    if (!tensor) {
        return NULL;
    }
    va_list args;
    va_start(args, fmt);
    vsnprintf(tensor->name, sizeof(tensor->name), fmt, args);
    va_end(args);
    return tensor;
}

const char * ggml_get_name(const struct ggml_tensor * tensor) { return tensor ? tensor->name : NULL; }

void ggml_set_input(struct ggml_tensor * tensor) {
    if (tensor) {
        tensor->flags |= GGML_TENSOR_FLAG_INPUT;
    }
}

void ggml_set_output(struct ggml_tensor * tensor) {
    if (tensor) {
        tensor->flags |= GGML_TENSOR_FLAG_OUTPUT;
    }
}

size_t ggml_nbytes(const struct ggml_tensor * t) {
    if (!t) {
        return 0;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t->ne[i] <= 0) {
            return 0;
        }
    }
    const int64_t blck = ggml_blck_size(t->type);
    // Span from the first to one past the last byte: strides may be permuted or padded.
    size_t n;
    if (blck == 1) {
        n = ggml_type_size(t->type);
        for (int i = 0; i < GGML_MAX_DIMS; i++) {
            n += (size_t) (t->ne[i] - 1) * t->nb[i];
        }
    } else {
        // Quantized rows are whole blocks and dim 0 is never permuted.
        n = (size_t) (t->ne[0] / blck) * t->nb[0];
        for (int i = 1; i < GGML_MAX_DIMS; i++) {
            n += (size_t) (t->ne[i] - 1) * t->nb[i];
        }
    }
    return n;
}

int64_t ggml_nelements(const struct ggml_tensor * t) { return t ? t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] : 0; }

int64_t ggml_nrows(const struct ggml_tensor * t) { return t ? t->ne[1] * t->ne[2] * t->ne[3] : 0; }

int ggml_n_dims(const struct ggml_tensor * t) {
    if (!t) {
        return 0;
    }
    for (int i = GGML_MAX_DIMS - 1; i >= 1; i--) {
        if (t->ne[i] > 1) {
            return i + 1;
        }
    }
    return 1;
}

bool ggml_is_contiguous(const struct ggml_tensor * t) {
    if (!t) {
        return false;
    }
    // Strides of size-1 dims are never used to address data, so they do not matter.
    size_t next = ggml_type_size(t->type);
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != next) {
            return false;
        }
        next *= (size_t) (i == 0 ? t->ne[0] / ggml_blck_size(t->type) : t->ne[i]);
    }
    return true;
}

bool ggml_is_permuted(const struct ggml_tensor * t) {
    return t && (t->nb[0] > t->nb[1] || t->nb[1] > t->nb[2] || t->nb[2] > t->nb[3]);
}

bool ggml_is_transposed(const struct ggml_tensor * t) { return t && t->nb[0] > t->nb[1]; }

bool ggml_are_same_shape(const struct ggml_tensor * a, const struct ggml_tensor * b) {
    if (!a || !b) {
        return false;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (a->ne[i] != b->ne[i]) {
            return false;
        }
    }
    return true;
}

bool ggml_can_repeat(const struct ggml_tensor * b, const struct ggml_tensor * a) {
    if (!a || !b) {
        return false;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (b->ne[i] <= 0 ? a->ne[i] != 0 && b->ne[i] != 0 : a->ne[i] % b->ne[i] != 0) {
            return false;
        }
    }
    return true;
}

void * ggml_get_data(const struct ggml_tensor * tensor) { return tensor ? tensor->data : NULL; }

float * ggml_get_data_f32(const struct ggml_tensor * tensor) {
    if (!tensor || tensor->type != GGML_TYPE_F32) {
        GGML_LOG_ERROR("ggml_get_data_f32: tensor is %s, not F32", tensor ? ggml_type_name(tensor->type) : "NULL");
        return NULL;
    }
    return (float *) tensor->data;
}

// Address of element i of a contiguous, allocated, non-quantized tensor, or NULL (logged).
static void * ggml_element_ptr(const struct ggml_tensor * t, int64_t i, const char * fn) {
    if (!t || !t->data) {
        GGML_LOG_ERROR("%s: tensor is NULL or has no data", fn);
        return NULL;
    }
    if (ggml_is_quantized(t->type) || !ggml_is_contiguous(t)) {
        GGML_LOG_ERROR("%s: tensor '%s' must be contiguous and not quantized (%s)", fn, t->name, ggml_type_name(t->type));
        return NULL;
    }
    if (i < 0 || i >= ggml_nelements(t)) {
        GGML_LOG_ERROR("%s: index %lld out of range [0, %lld)", fn, (long long) i, (long long) ggml_nelements(t));
        return NULL;
    }
    return (char *) t->data + (size_t) i * ggml_type_size(t->type);
}

float ggml_get_f32_1d(const struct ggml_tensor * tensor, int64_t i) {
    const void * p = ggml_element_ptr(tensor, i, "ggml_get_f32_1d");
    if (!p) {
        return NAN;
    }
    switch (tensor->type) {
        case GGML_TYPE_F32: return *(const float *) p;
        case GGML_TYPE_F16: return ggml_compute_fp16_to_fp32(*(const ggml_fp16_t *) p);
        case GGML_TYPE_BF16: return ggml_compute_bf16_to_fp32(*(const ggml_bf16_t *) p);
        case GGML_TYPE_F64: return (float) *(const double *) p;
        case GGML_TYPE_I8: return (float) *(const int8_t *) p;
        case GGML_TYPE_I16: return (float) *(const int16_t *) p;
        case GGML_TYPE_I32: return (float) *(const int32_t *) p;
        case GGML_TYPE_I64: return (float) *(const int64_t *) p;
        default: GGML_LOG_ERROR("ggml_get_f32_1d: type %s is not supported", ggml_type_name(tensor->type)); return NAN;
    }
}

static void ggml_store_f32(enum ggml_type type, void * p, float v) {
    switch (type) {
        case GGML_TYPE_F32: *(float *) p = v; break;
        case GGML_TYPE_F16: *(ggml_fp16_t *) p = ggml_compute_fp32_to_fp16(v); break;
        case GGML_TYPE_BF16: *(ggml_bf16_t *) p = ggml_compute_fp32_to_bf16(v); break;
        case GGML_TYPE_F64: *(double *) p = v; break;
        case GGML_TYPE_I8: *(int8_t *) p = (int8_t) v; break;
        case GGML_TYPE_I16: *(int16_t *) p = (int16_t) v; break;
        case GGML_TYPE_I32: *(int32_t *) p = (int32_t) v; break;
        case GGML_TYPE_I64: *(int64_t *) p = (int64_t) v; break;
        default: break;
    }
}

void ggml_set_f32_1d(struct ggml_tensor * tensor, int64_t i, float value) {
    void * p = ggml_element_ptr(tensor, i, "ggml_set_f32_1d");
    if (p) {
        ggml_store_f32(tensor->type, p, value);
    }
}

struct ggml_tensor * ggml_set_f32(struct ggml_tensor * tensor, float value) {
    const int64_t n = ggml_nelements(tensor);
    if (n == 0 || !ggml_element_ptr(tensor, 0, "ggml_set_f32")) {
        return tensor;
    }
    const size_t ts = ggml_type_size(tensor->type);
    char * p = tensor->data;
    if (tensor->type == GGML_TYPE_F32) {
        float * f = (float *) p;
        for (int64_t i = 0; i < n; i++) {
            f[i] = value;
        }
        return tensor;
    }
    for (int64_t i = 0; i < n; i++) {
        ggml_store_f32(tensor->type, p + (size_t) i * ts, value);
    }
    return tensor;
}

// ---------------------------------------------------------------------------------------------
// views: metadata over the source's data, never a copy

static struct ggml_tensor * ggml_view_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_dims, const int64_t * ne,
                                           const size_t * nb, size_t offset, const char * fn) {
    if (!a) {
        GGML_LOG_ERROR("%s: NULL source", fn);
        return NULL;
    }
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 0) {
            GGML_LOG_ERROR("%s: ne[%d] = %lld is negative", fn, i, (long long) ne[i]);
            return NULL;
        }
    }
    // Bounds: the strided span must stay inside the root tensor's data.
    struct ggml_tensor tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.type = a->type;
    int64_t shape[GGML_MAX_DIMS] = { 1, 1, 1, 1 };
    for (int i = 0; i < n_dims; i++) {
        shape[i] = ne[i];
    }
    const size_t ts = ggml_type_size(a->type);
    const int64_t blck = ggml_blck_size(a->type);
    if (ts == 0 || shape[0] % blck != 0) {
        GGML_LOG_ERROR("%s: ne[0] = %lld is not a multiple of the %s block size", fn, (long long) shape[0],
                       ggml_type_name(a->type));
        return NULL;
    }
    size_t strides[GGML_MAX_DIMS];
    strides[0] = ts;
    strides[1] = n_dims > 1 ? nb[0] : ts * (size_t) (shape[0] / blck);
    strides[2] = n_dims > 2 ? nb[1] : strides[1] * (size_t) shape[1];
    strides[3] = n_dims > 3 ? nb[2] : strides[2] * (size_t) shape[2];
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        tmp.ne[i] = shape[i];
        tmp.nb[i] = strides[i];
    }
    struct ggml_tensor * root = ggml_tensor_root(a);
    const size_t base = a->view_src ? a->view_offs : 0;
    const size_t span = ggml_nbytes(&tmp);
    const size_t root_bytes = ggml_nbytes(root);
    if (offset > root_bytes || base + offset > root_bytes || span > root_bytes - base - offset) {
        char d[GGML_TENSOR_DESC_SIZE];
        GGML_LOG_ERROR("%s: view [%lld, %lld, %lld, %lld] at offset %zu spans %zu bytes, beyond %s (%zu bytes)", fn,
                       (long long) shape[0], (long long) shape[1], (long long) shape[2], (long long) shape[3], base + offset,
                       span, ggml_tensor_desc(root, d, sizeof(d)), root_bytes);
        return NULL;
    }
    // Create as a 1-element-span view, then install the real shape and strides.
    const int64_t one[1] = { blck };
    struct ggml_tensor * t = ggml_new_tensor_impl(ctx, a->type, 1, one, a, offset);
    if (!t) {
        return NULL;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->ne[i] = shape[i];
        t->nb[i] = strides[i];
    }
    t->op = GGML_OP_VIEW;
    t->src[0] = a;
    memcpy(t->op_params, &offset, sizeof(offset));
    ggml_format_name(t, "%s (view)", a->name);
    return t;
}

struct ggml_tensor * ggml_view_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, size_t offset) {
    const int64_t ne[1] = { ne0 };
    return ggml_view_impl(ctx, a, 1, ne, NULL, offset, "ggml_view_1d");
}

struct ggml_tensor * ggml_view_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1, size_t nb1,
                                  size_t offset) {
    const int64_t ne[2] = { ne0, ne1 };
    const size_t nb[1] = { nb1 };
    return ggml_view_impl(ctx, a, 2, ne, nb, offset, "ggml_view_2d");
}

struct ggml_tensor * ggml_view_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                                  size_t nb1, size_t nb2, size_t offset) {
    const int64_t ne[3] = { ne0, ne1, ne2 };
    const size_t nb[2] = { nb1, nb2 };
    return ggml_view_impl(ctx, a, 3, ne, nb, offset, "ggml_view_3d");
}

struct ggml_tensor * ggml_view_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                                  int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    const size_t nb[3] = { nb1, nb2, nb3 };
    return ggml_view_impl(ctx, a, 4, ne, nb, offset, "ggml_view_4d");
}

static struct ggml_tensor * ggml_reshape_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_dims, const int64_t * ne) {
    if (!a) {
        GGML_LOG_ERROR("ggml_reshape: NULL source");
        return NULL;
    }
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) {
        n *= ne[i];
    }
    char d[GGML_TENSOR_DESC_SIZE];
    if (!ggml_is_contiguous(a)) {
        GGML_LOG_ERROR("ggml_reshape: source %s is not contiguous", ggml_tensor_desc(a, d, sizeof(d)));
        return NULL;
    }
    if (n != ggml_nelements(a)) {
        GGML_LOG_ERROR("ggml_reshape: %lld elements requested, source %s has %lld", (long long) n,
                       ggml_tensor_desc(a, d, sizeof(d)), (long long) ggml_nelements(a));
        return NULL;
    }
    struct ggml_tensor * t = ggml_new_tensor_impl(ctx, a->type, n_dims, ne, a, 0);
    if (!t) {
        return NULL;
    }
    t->op = GGML_OP_RESHAPE;
    t->src[0] = a;
    ggml_format_name(t, "%s (reshaped)", a->name);
    return t;
}

struct ggml_tensor * ggml_reshape(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    if (!b) {
        GGML_LOG_ERROR("ggml_reshape: NULL shape tensor");
        return NULL;
    }
    return ggml_reshape_impl(ctx, a, GGML_MAX_DIMS, b->ne);
}

struct ggml_tensor * ggml_reshape_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0) {
    const int64_t ne[1] = { ne0 };
    return ggml_reshape_impl(ctx, a, 1, ne);
}

struct ggml_tensor * ggml_reshape_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = { ne0, ne1 };
    return ggml_reshape_impl(ctx, a, 2, ne);
}

struct ggml_tensor * ggml_reshape_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = { ne0, ne1, ne2 };
    return ggml_reshape_impl(ctx, a, 3, ne);
}

struct ggml_tensor * ggml_reshape_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                                     int64_t ne3) {
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    return ggml_reshape_impl(ctx, a, 4, ne);
}

struct ggml_tensor * ggml_permute(struct ggml_context * ctx, struct ggml_tensor * a, int axis0, int axis1, int axis2, int axis3) {
    if (!a) {
        GGML_LOG_ERROR("ggml_permute: NULL source");
        return NULL;
    }
    const int axes[GGML_MAX_DIMS] = { axis0, axis1, axis2, axis3 };
    int seen = 0;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (axes[i] < 0 || axes[i] >= GGML_MAX_DIMS || (seen & (1 << axes[i]))) {
            GGML_LOG_ERROR("ggml_permute: (%d, %d, %d, %d) is not a permutation of 0..3", axis0, axis1, axis2, axis3);
            return NULL;
        }
        seen |= 1 << axes[i];
    }
    struct ggml_tensor * t = ggml_view_tensor(ctx, a);
    if (!t) {
        return NULL;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->ne[axes[i]] = a->ne[i];
        t->nb[axes[i]] = a->nb[i];
    }
    t->op = GGML_OP_PERMUTE;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->op_params[i] = axes[i];
    }
    ggml_format_name(t, "%s (permuted)", a->name);
    return t;
}

struct ggml_tensor * ggml_transpose(struct ggml_context * ctx, struct ggml_tensor * a) {
    struct ggml_tensor * t = ggml_permute(ctx, a, 1, 0, 2, 3);
    if (t) {
        t->op = GGML_OP_TRANSPOSE;
        ggml_format_name(t, "%s (transposed)", a->name);
    }
    return t;
}

// ---------------------------------------------------------------------------------------------
// graphs

// Visited-set capacity: a power of two at least twice the nodes + leafs it can hold.
static size_t ggml_graph_hash_size(size_t size) {
    size_t n = 16;
    while (n < 4 * size) {
        n <<= 1;
    }
    return n;
}

static size_t ggml_graph_nbytes(size_t size) {
    return GGML_PAD(sizeof(struct ggml_cgraph), sizeof(void *)) +
        (2 * size + ggml_graph_hash_size(size)) * sizeof(struct ggml_tensor *);
}

size_t ggml_graph_overhead_custom(size_t size, bool grads) {
    (void) grads;
    return GGML_OBJECT_SIZE + GGML_PAD(ggml_graph_nbytes(size), GGML_MEM_ALIGN);
}

size_t ggml_graph_overhead(void) { return ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, false); }

struct ggml_cgraph * ggml_new_graph_custom(struct ggml_context * ctx, size_t size, bool grads) {
    if (!ctx) {
        GGML_LOG_ERROR("ggml_new_graph: NULL context");
        return NULL;
    }
    if (grads) {
        GGML_LOG_ERROR("ggml_new_graph_custom: gradients are not supported");
        return NULL;
    }
    if (size == 0 || size > (size_t) INT32_MAX / 8) {
        GGML_LOG_ERROR("ggml_new_graph_custom: size %zu is out of range", size);
        return NULL;
    }
    struct ggml_object * obj = ggml_new_object(ctx, GGML_OBJECT_GRAPH, ggml_graph_nbytes(size));
    if (!obj) {
        return NULL;
    }
    struct ggml_cgraph * g = (struct ggml_cgraph *) (ctx->mem + obj->offs);
    struct ggml_tensor ** ptrs = (struct ggml_tensor **) ((char *) g + GGML_PAD(sizeof(struct ggml_cgraph), sizeof(void *)));
    memset(g, 0, sizeof(*g));
    g->size = (int) size;
    g->nodes = ptrs;
    g->leafs = ptrs + size;
    g->visited = ptrs + 2 * size;
    g->visited_size = ggml_graph_hash_size(size);
    memset(g->visited, 0, g->visited_size * sizeof(struct ggml_tensor *));
    return g;
}

struct ggml_cgraph * ggml_new_graph(struct ggml_context * ctx) {
    return ggml_new_graph_custom(ctx, GGML_DEFAULT_GRAPH_SIZE, false);
}

// Inserts t into the visited set; false if it was already there.
static bool ggml_graph_visit(struct ggml_cgraph * g, struct ggml_tensor * t) {
    const size_t mask = g->visited_size - 1;
    size_t h = (size_t) (((uintptr_t) t >> 6) * 0x9E3779B97F4A7C15ull) & mask;
    for (size_t probe = 0; probe < g->visited_size; probe++) {
        struct ggml_tensor * cur = g->visited[h];
        if (cur == t) {
            return false;
        }
        if (cur == NULL) {
            g->visited[h] = t;
            return true;
        }
        h = (h + 1) & mask;
    }
    return false; // unreachable: the set is sized for every node and leaf the graph can hold
}

// Dependency i of t: its sources, then its view source (a view's data comes from there even
// when the op lists it nowhere else, as for SET_ROWS).
static struct ggml_tensor * ggml_graph_dep(struct ggml_tensor * t, int i) {
    if (i < GGML_MAX_SRC) {
        return t->src[i];
    }
    if (i == GGML_MAX_SRC && t->view_src) {
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (t->src[j] == t->view_src) {
                return NULL;
            }
        }
        return t->view_src;
    }
    return NULL;
}

static void ggml_graph_add(struct ggml_cgraph * g, struct ggml_tensor * t) {
    bool is_leaf = t->op == GGML_OP_NONE;
    for (int i = 0; is_leaf && i < GGML_MAX_SRC; i++) {
        is_leaf = t->src[i] == NULL;
    }
    if (is_leaf) {
        if (g->n_leafs >= g->size) {
            GGML_LOG_ERROR("ggml_build_forward_expand: graph full (%d leafs); use ggml_new_graph_custom", g->size);
            g->overflow = true;
            return;
        }
        g->leafs[g->n_leafs++] = t;
        if (t->name[0] == '\0') {
            ggml_format_name(t, "leaf_%d", g->n_leafs - 1);
        }
    } else {
        if (g->n_nodes >= g->size) {
            GGML_LOG_ERROR("ggml_build_forward_expand: graph full (%d nodes); use ggml_new_graph_custom", g->size);
            g->overflow = true;
            return;
        }
        g->nodes[g->n_nodes++] = t;
        if (t->name[0] == '\0') {
            ggml_format_name(t, "node_%d", g->n_nodes - 1);
        }
    }
}

void ggml_build_forward_expand(struct ggml_cgraph * g, struct ggml_tensor * tensor) {
    if (!g || !tensor) {
        GGML_LOG_ERROR("ggml_build_forward_expand: NULL %s", g ? "tensor" : "graph");
        if (g) {
            g->overflow = true; // a NULL from a failed constructor: the graph cannot be complete
        }
        return;
    }
    if (!ggml_graph_visit(g, tensor)) {
        return;
    }
    // Iterative DFS (deep transformer graphs would stress the C stack): each frame remembers
    // the next dependency to look at; a tensor is emitted once all its dependencies are.
    struct frame {
        struct ggml_tensor * t;
        int next;
    };
    struct frame local[64];
    struct frame * stack = local;
    size_t cap = sizeof(local) / sizeof(local[0]);
    size_t top = 0;
    stack[top++] = (struct frame) { tensor, 0 };
    while (top > 0) {
        struct frame * f = &stack[top - 1];
        struct ggml_tensor * dep = NULL;
        while (f->next <= GGML_MAX_SRC && dep == NULL) {
            dep = ggml_graph_dep(f->t, f->next++);
            if (dep && !ggml_graph_visit(g, dep)) {
                dep = NULL;
            }
        }
        if (dep == NULL) {
            ggml_graph_add(g, f->t);
            top--;
            continue;
        }
        if (top == cap) {
            const size_t new_cap = cap * 2;
            struct frame * grown = GGML_MALLOC(new_cap * sizeof(*grown));
            if (!grown) {
                GGML_LOG_ERROR("ggml_build_forward_expand: out of memory for the traversal stack");
                g->overflow = true;
                break;
            }
            memcpy(grown, stack, top * sizeof(*stack));
            if (stack != local) {
                free(stack);
            }
            stack = grown;
            cap = new_cap;
        }
        stack[top++] = (struct frame) { dep, 0 };
    }
    if (stack != local) {
        free(stack);
    }
}

int ggml_graph_n_nodes(const struct ggml_cgraph * g) { return g ? g->n_nodes : 0; }

struct ggml_tensor * ggml_graph_node(struct ggml_cgraph * g, int i) {
    if (!g) {
        return NULL;
    }
    if (i < 0) {
        i += g->n_nodes;
    }
    if (i < 0 || i >= g->n_nodes) {
        return NULL;
    }
    return g->nodes[i];
}

int ggml_graph_n_leafs(const struct ggml_cgraph * g) { return g ? g->n_leafs : 0; }

struct ggml_tensor * ggml_graph_get_tensor(const struct ggml_cgraph * g, const char * name) {
    if (!g || !name) {
        return NULL;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (strcmp(g->nodes[i]->name, name) == 0) {
            return g->nodes[i];
        }
    }
    for (int i = 0; i < g->n_leafs; i++) {
        if (strcmp(g->leafs[i]->name, name) == 0) {
            return g->leafs[i];
        }
    }
    return NULL;
}

void ggml_graph_reset(struct ggml_cgraph * g) {
    (void) g; // no gradients, so no per-computation state
}

void ggml_graph_clear(struct ggml_cgraph * g) {
    if (!g) {
        return;
    }
    g->n_nodes = 0;
    g->n_leafs = 0;
    g->overflow = false;
    memset(g->visited, 0, g->visited_size * sizeof(struct ggml_tensor *));
}
