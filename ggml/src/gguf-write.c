// gguf-write.c — building a GGUF context (setters, tensors) and serialising it.
//
// The writer always produces version 3, little-endian, with tensors packed back to back in
// the order they were added, each padded to the alignment. One serialiser serves three
// sinks (counting only, a caller's buffer, a FILE), so the sizes reported by
// gguf_get_meta_size and the bytes written can never disagree.
#include "gguf-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool gguf_host_le(void) {
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 1;
}

// ---- building values ----

// Fills kv (zeroed) with a copy of key and n elements of a fixed-size type.
static bool gguf_kv_make_scalars(struct gguf_kv * kv, const char * key, enum gguf_type type, bool is_array, const void * data,
                                 size_t n) {
    const size_t esz = gguf_type_size(type);
    size_t bytes;
    if (!ggml_size_mul_ok(n, esz, &bytes)) {
        return false;
    }
    kv->key = GGML_MALLOC(strlen(key) + 1);
    kv->data = GGML_MALLOC(bytes > 0 ? bytes : 1);
    if (kv->key == NULL || kv->data == NULL) {
        gguf_kv_clear(kv);
        return false;
    }
    strcpy(kv->key, key);
    if (bytes > 0) {
        memcpy(kv->data, data, bytes);
    }
    if (type == GGUF_TYPE_BOOL) { // store canonical 0/1 so the file is readable as bool[]
        uint8_t * b = kv->data;
        for (size_t i = 0; i < n; i++) {
            b[i] = b[i] != 0;
        }
    }
    kv->type = is_array ? GGUF_TYPE_ARRAY : type;
    kv->elem_type = type;
    kv->n = n;
    return true;
}

// Fills kv (zeroed) with a copy of key and n strings (lens NULL: NUL-terminated).
static bool gguf_kv_make_strings(struct gguf_kv * kv, const char * key, bool is_array, const char * const * strs,
                                 const size_t * lens, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t len = lens != NULL ? lens[i] : strlen(strs[i]);
        if (!ggml_size_add_ok(total, len, &total) || !ggml_size_add_ok(total, 1, &total)) {
            return false;
        }
    }
    size_t offs_bytes;
    if (!ggml_size_mul_ok(n + 1, sizeof(size_t), &offs_bytes)) {
        return false;
    }
    kv->key = GGML_MALLOC(strlen(key) + 1);
    kv->strs = GGML_MALLOC(total > 0 ? total : 1);
    kv->str_offs = GGML_MALLOC(offs_bytes);
    if (kv->key == NULL || kv->strs == NULL || kv->str_offs == NULL) {
        gguf_kv_clear(kv);
        return false;
    }
    strcpy(kv->key, key);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t len = lens != NULL ? lens[i] : strlen(strs[i]);
        kv->str_offs[i] = o;
        if (len > 0) {
            memcpy(kv->strs + o, strs[i], len);
        }
        o += len;
        kv->strs[o++] = '\0';
    }
    kv->str_offs[n] = o;
    kv->type = is_array ? GGUF_TYPE_ARRAY : GGUF_TYPE_STRING;
    kv->elem_type = GGUF_TYPE_STRING;
    kv->n = n;
    return true;
}

// Deep copy of src into dst (zeroed).
static bool gguf_kv_copy(struct gguf_kv * dst, const struct gguf_kv * src) {
    const bool is_array = src->type == GGUF_TYPE_ARRAY;
    if (src->elem_type != GGUF_TYPE_STRING) {
        return gguf_kv_make_scalars(dst, src->key, src->elem_type, is_array, src->data, src->n);
    }
    dst->key = GGML_MALLOC(strlen(src->key) + 1);
    dst->strs = GGML_MALLOC(src->str_offs[src->n] > 0 ? src->str_offs[src->n] : 1);
    dst->str_offs = GGML_MALLOC((src->n + 1) * sizeof(size_t));
    if (dst->key == NULL || dst->strs == NULL || dst->str_offs == NULL) {
        gguf_kv_clear(dst);
        return false;
    }
    strcpy(dst->key, src->key);
    memcpy(dst->strs, src->strs, src->str_offs[src->n]);
    memcpy(dst->str_offs, src->str_offs, (src->n + 1) * sizeof(size_t));
    dst->type = src->type;
    dst->elem_type = src->elem_type;
    dst->n = src->n;
    return true;
}

static bool gguf_check_key(const struct gguf_context * ctx, const char * key, const char * fn) {
    if (ctx == NULL || key == NULL) {
        GGML_LOG_ERROR("%s: ctx or key is NULL\n", fn);
        return false;
    }
    if (key[0] == '\0') {
        GGML_LOG_ERROR("%s: empty key\n", fn);
        return false;
    }
    return true;
}

// Puts nkv (built by the caller, owned) into ctx, replacing a kv of the same key; frees it
// on refusal. The value is built before the old one is freed, so setting a key from a value
// that lives in ctx itself is safe.
static void gguf_kv_install(struct gguf_context * ctx, struct gguf_kv * nkv, const char * fn) {
    const bool is_alignment = strcmp(nkv->key, GGUF_KEY_GENERAL_ALIGNMENT) == 0;
    if (is_alignment) {
        uint32_t a = 0;
        if (nkv->type == GGUF_TYPE_UINT32) {
            memcpy(&a, nkv->data, sizeof(a));
        }
        if (nkv->type != GGUF_TYPE_UINT32 || !gguf_alignment_is_valid(a)) {
            GGML_LOG_ERROR("%s: '" GGUF_KEY_GENERAL_ALIGNMENT "' must be a u32 power of two in 1..%zu\n", fn, GGUF_MAX_ALIGNMENT);
            gguf_kv_clear(nkv);
            return;
        }
    }
    const int64_t idx = gguf_find_key(ctx, nkv->key);
    if (idx >= 0) {
        gguf_kv_clear(&ctx->kv[idx]);
        ctx->kv[idx] = *nkv;
    } else {
        if (ctx->n_kv == ctx->cap_kv) {
            const int64_t cap = ctx->cap_kv > 0 ? 2 * ctx->cap_kv : 16;
            struct gguf_kv * kv = GGML_REALLOC(ctx->kv, (size_t) cap * sizeof(*kv));
            if (kv == NULL) {
                GGML_LOG_ERROR("%s: out of memory\n", fn);
                gguf_kv_clear(nkv);
                return;
            }
            ctx->kv = kv;
            ctx->cap_kv = cap;
        }
        ctx->kv[ctx->n_kv++] = *nkv;
    }
    if (is_alignment) {
        uint32_t a;
        memcpy(&a, nkv->data, sizeof(a));
        ctx->alignment = a;
        gguf_recompute_offsets(ctx);
    }
}

static void gguf_set_scalar(struct gguf_context * ctx, const char * key, enum gguf_type type, const void * val, const char * fn) {
    if (!gguf_check_key(ctx, key, fn)) {
        return;
    }
    struct gguf_kv nkv = { 0 };
    if (!gguf_kv_make_scalars(&nkv, key, type, false, val, 1)) {
        GGML_LOG_ERROR("%s: out of memory\n", fn);
        return;
    }
    gguf_kv_install(ctx, &nkv, fn);
}

#define GGUF_DEFINE_SETTER(suffix, ctype, gtype)                                         \
    void gguf_set_val_##suffix(struct gguf_context * ctx, const char * key, ctype val) { \
        gguf_set_scalar(ctx, key, gtype, &val, __func__);                                \
    }

GGUF_DEFINE_SETTER(u8, uint8_t, GGUF_TYPE_UINT8)
GGUF_DEFINE_SETTER(i8, int8_t, GGUF_TYPE_INT8)
GGUF_DEFINE_SETTER(u16, uint16_t, GGUF_TYPE_UINT16)
GGUF_DEFINE_SETTER(i16, int16_t, GGUF_TYPE_INT16)
GGUF_DEFINE_SETTER(u32, uint32_t, GGUF_TYPE_UINT32)
GGUF_DEFINE_SETTER(i32, int32_t, GGUF_TYPE_INT32)
GGUF_DEFINE_SETTER(f32, float, GGUF_TYPE_FLOAT32)
GGUF_DEFINE_SETTER(u64, uint64_t, GGUF_TYPE_UINT64)
GGUF_DEFINE_SETTER(i64, int64_t, GGUF_TYPE_INT64)
GGUF_DEFINE_SETTER(f64, double, GGUF_TYPE_FLOAT64)

void gguf_set_val_bool(struct gguf_context * ctx, const char * key, bool val) {
    const uint8_t b = val ? 1 : 0;
    gguf_set_scalar(ctx, key, GGUF_TYPE_BOOL, &b, __func__);
}

void gguf_set_val_str(struct gguf_context * ctx, const char * key, const char * val) {
    if (!gguf_check_key(ctx, key, __func__)) {
        return;
    }
    if (val == NULL) {
        GGML_LOG_ERROR("%s: value of '%s' is NULL\n", __func__, key);
        return;
    }
    struct gguf_kv nkv = { 0 };
    if (!gguf_kv_make_strings(&nkv, key, false, &val, NULL, 1)) {
        GGML_LOG_ERROR("%s: out of memory\n", __func__);
        return;
    }
    gguf_kv_install(ctx, &nkv, __func__);
}

void gguf_set_arr_data(struct gguf_context * ctx, const char * key, enum gguf_type type, const void * data, size_t n) {
    if (!gguf_check_key(ctx, key, __func__)) {
        return;
    }
    if (gguf_type_size(type) == 0) {
        GGML_LOG_ERROR("%s: '%s': element type %s is not a fixed-size type (use gguf_set_arr_str for strings)\n", __func__, key,
                       gguf_type_name(type));
        return;
    }
    if (data == NULL && n > 0) {
        GGML_LOG_ERROR("%s: '%s': data is NULL\n", __func__, key);
        return;
    }
    struct gguf_kv nkv = { 0 };
    if (!gguf_kv_make_scalars(&nkv, key, type, true, data, n)) {
        GGML_LOG_ERROR("%s: '%s': out of memory for %zu elements\n", __func__, key, n);
        return;
    }
    gguf_kv_install(ctx, &nkv, __func__);
}

void gguf_set_arr_str(struct gguf_context * ctx, const char * key, const char ** data, size_t n) {
    if (!gguf_check_key(ctx, key, __func__)) {
        return;
    }
    if (data == NULL && n > 0) {
        GGML_LOG_ERROR("%s: '%s': data is NULL\n", __func__, key);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (data[i] == NULL) {
            GGML_LOG_ERROR("%s: '%s': string #%zu is NULL\n", __func__, key, i);
            return;
        }
    }
    struct gguf_kv nkv = { 0 };
    if (!gguf_kv_make_strings(&nkv, key, true, data, NULL, n)) {
        GGML_LOG_ERROR("%s: '%s': out of memory for %zu strings\n", __func__, key, n);
        return;
    }
    gguf_kv_install(ctx, &nkv, __func__);
}

void gguf_set_kv(struct gguf_context * ctx, const struct gguf_context * src) {
    if (ctx == NULL || src == NULL) {
        GGML_LOG_ERROR("%s: ctx or src is NULL\n", __func__);
        return;
    }
    const int64_t n = src->n_kv; // fixed up front: src may be ctx itself
    for (int64_t i = 0; i < n; i++) {
        struct gguf_kv nkv = { 0 };
        if (!gguf_kv_copy(&nkv, &src->kv[i])) {
            GGML_LOG_ERROR("%s: out of memory copying '%s'\n", __func__, src->kv[i].key);
            return;
        }
        gguf_kv_install(ctx, &nkv, __func__);
    }
}

int64_t gguf_remove_key(struct gguf_context * ctx, const char * key) {
    const int64_t idx = gguf_find_key(ctx, key);
    if (idx < 0) {
        return -1;
    }
    // Decided before the kv is freed: key may point at the kv's own copy.
    const bool is_alignment = strcmp(key, GGUF_KEY_GENERAL_ALIGNMENT) == 0;
    gguf_kv_clear(&ctx->kv[idx]);
    memmove(&ctx->kv[idx], &ctx->kv[idx + 1], (size_t) (ctx->n_kv - idx - 1) * sizeof(*ctx->kv));
    ctx->n_kv--;
    if (is_alignment) {
        ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
        gguf_recompute_offsets(ctx);
    }
    return idx;
}

// ---- tensors ----

void gguf_recompute_offsets(struct gguf_context * ctx) {
    size_t off = 0;
    ctx->data_end = 0;
    for (int64_t i = 0; i < ctx->n_ti; i++) {
        struct gguf_tensor_info * ti = &ctx->ti[i];
        ti->offset = off;
        // Sizes were overflow-checked one by one when the tensors were added; a total past
        // SIZE_MAX cannot exist in memory, and gguf_add_tensor refuses to reach it.
        ctx->data_end = off + ti->size;
        off = GGML_PAD(ctx->data_end, ctx->alignment);
    }
}

void gguf_add_tensor(struct gguf_context * ctx, const struct ggml_tensor * tensor) {
    if (ctx == NULL || tensor == NULL) {
        GGML_LOG_ERROR("%s: ctx or tensor is NULL\n", __func__);
        return;
    }
    if (memchr(tensor->name, '\0', GGML_MAX_NAME) == NULL || tensor->name[0] == '\0') {
        GGML_LOG_ERROR("%s: a tensor needs a non-empty name shorter than %d bytes\n", __func__, GGML_MAX_NAME);
        return;
    }
    if (gguf_find_tensor(ctx, tensor->name) >= 0) {
        GGML_LOG_ERROR("%s: duplicate tensor name '%s'\n", __func__, tensor->name);
        return;
    }
    size_t size;
    if (!gguf_tensor_nbytes(tensor->type, tensor->ne, &size)) {
        GGML_LOG_ERROR("%s: tensor '%s': type %d / shape [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "] is not valid\n",
                       __func__, tensor->name, (int) tensor->type, tensor->ne[0], tensor->ne[1], tensor->ne[2], tensor->ne[3]);
        return;
    }
    size_t offset, end;
    if (!ggml_size_pad_ok(ctx->data_end, ctx->alignment, &offset) || !ggml_size_add_ok(offset, size, &end) ||
        !ggml_size_pad_ok(end, GGUF_MAX_ALIGNMENT, &end)) {
        GGML_LOG_ERROR("%s: tensor '%s': total data size overflows\n", __func__, tensor->name);
        return;
    }
    if (ctx->n_ti == ctx->cap_ti) {
        const int64_t cap = ctx->cap_ti > 0 ? 2 * ctx->cap_ti : 16;
        struct gguf_tensor_info * ti = GGML_REALLOC(ctx->ti, (size_t) cap * sizeof(*ti));
        if (ti == NULL) {
            GGML_LOG_ERROR("%s: out of memory\n", __func__);
            return;
        }
        ctx->ti = ti;
        ctx->cap_ti = cap;
    }
    struct gguf_tensor_info * ti = &ctx->ti[ctx->n_ti++];
    memset(ti, 0, sizeof(*ti));
    strcpy(ti->name, tensor->name);
    ti->n_dims = 1; // trailing dims of size 1 are implicit, as in ggml
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        ti->ne[d] = tensor->ne[d];
        if (tensor->ne[d] != 1) {
            ti->n_dims = d + 1;
        }
    }
    ti->type = tensor->type;
    ti->size = size;
    ti->offset = offset;
    ti->data = tensor->data;
    ctx->data_end = offset + size;
}

static struct gguf_tensor_info * gguf_ti_named(struct gguf_context * ctx, const char * name, const char * fn) {
    const int64_t idx = gguf_find_tensor(ctx, name);
    if (idx < 0) {
        GGML_LOG_ERROR("%s: no tensor named '%s'\n", fn, name != NULL ? name : "(null)");
        return NULL;
    }
    return &ctx->ti[idx];
}

void gguf_set_tensor_type(struct gguf_context * ctx, const char * name, enum ggml_type type) {
    struct gguf_tensor_info * ti = gguf_ti_named(ctx, name, __func__);
    if (ti == NULL) {
        return;
    }
    size_t size;
    if (!gguf_tensor_nbytes(type, ti->ne, &size)) {
        GGML_LOG_ERROR("%s: tensor '%s': type %d is not valid for shape [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]\n",
                       __func__, name, (int) type, ti->ne[0], ti->ne[1], ti->ne[2], ti->ne[3]);
        return;
    }
    ti->type = type;
    ti->size = size;
    gguf_recompute_offsets(ctx);
}

void gguf_set_tensor_data(struct gguf_context * ctx, const char * name, const void * data) {
    struct gguf_tensor_info * ti = gguf_ti_named(ctx, name, __func__);
    if (ti != NULL) {
        ti->data = data;
    }
}

// ---- serialisation ----

// A byte sink: counting only (buf and f NULL), a fixed buffer, or a FILE.
struct gguf_out {
    uint8_t * buf;
    size_t cap;
    FILE * f;
    size_t pos;
    bool ok;
};

static void gguf_out_raw(struct gguf_out * o, const void * p, size_t n) {
    if (!o->ok || n == 0) {
        return;
    }
    if (n > SIZE_MAX - o->pos) {
        o->ok = false;
        return;
    }
    if (o->f != NULL) {
        if (fwrite(p, 1, n, o->f) != n) {
            o->ok = false;
            return;
        }
    } else if (o->buf != NULL) {
        if (n > o->cap - o->pos) {
            o->ok = false;
            return;
        }
        memcpy(o->buf + o->pos, p, n);
    }
    o->pos += n;
}

static void gguf_out_zeros(struct gguf_out * o, size_t n) {
    static const uint8_t zeros[4096];
    while (n > 0 && o->ok) {
        const size_t k = GGML_MIN(n, sizeof(zeros));
        gguf_out_raw(o, zeros, k);
        n -= k;
    }
}

static void gguf_out_pad(struct gguf_out * o, size_t align) { gguf_out_zeros(o, GGML_PAD(o->pos, align) - o->pos); }

static void gguf_out_u32(struct gguf_out * o, uint32_t v) {
    const uint8_t b[4] = { (uint8_t) v, (uint8_t) (v >> 8), (uint8_t) (v >> 16), (uint8_t) (v >> 24) };
    gguf_out_raw(o, b, sizeof(b));
}

static void gguf_out_u64(struct gguf_out * o, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t) (v >> (8 * i));
    }
    gguf_out_raw(o, b, sizeof(b));
}

static void gguf_out_str(struct gguf_out * o, const char * s, size_t len) {
    gguf_out_u64(o, len);
    gguf_out_raw(o, s, len);
}

static void gguf_out_kv(struct gguf_out * o, const struct gguf_kv * kv) {
    gguf_out_str(o, kv->key, strlen(kv->key));
    gguf_out_u32(o, (uint32_t) kv->type);
    if (kv->type == GGUF_TYPE_ARRAY) {
        gguf_out_u32(o, (uint32_t) kv->elem_type);
        gguf_out_u64(o, kv->n);
    }
    if (kv->elem_type == GGUF_TYPE_STRING) {
        for (size_t i = 0; i < kv->n; i++) {
            gguf_out_str(o, kv->strs + kv->str_offs[i], kv->str_offs[i + 1] - kv->str_offs[i] - 1);
        }
        return;
    }
    const size_t esz = gguf_type_size(kv->elem_type);
    if (gguf_host_le() || esz == 1) {
        gguf_out_raw(o, kv->data, kv->n * esz);
        return;
    }
    const uint8_t * p = kv->data;
    for (size_t i = 0; i < kv->n; i++, p += esz) { // big-endian host: reverse each element
        uint8_t tmp[8];
        for (size_t j = 0; j < esz; j++) {
            tmp[j] = p[esz - 1 - j];
        }
        gguf_out_raw(o, tmp, esz);
    }
}

// Header, key/values, tensor infos (offsets packed in order) and padding to the data.
static void gguf_out_meta(struct gguf_out * o, const struct gguf_context * ctx) {
    gguf_out_raw(o, GGUF_MAGIC, 4);
    gguf_out_u32(o, GGUF_VERSION);
    gguf_out_u64(o, (uint64_t) ctx->n_ti);
    gguf_out_u64(o, (uint64_t) ctx->n_kv);
    for (int64_t i = 0; i < ctx->n_kv; i++) {
        gguf_out_kv(o, &ctx->kv[i]);
    }
    size_t off = 0;
    for (int64_t i = 0; i < ctx->n_ti; i++) {
        const struct gguf_tensor_info * ti = &ctx->ti[i];
        gguf_out_str(o, ti->name, strlen(ti->name));
        gguf_out_u32(o, (uint32_t) ti->n_dims);
        for (int d = 0; d < ti->n_dims; d++) {
            gguf_out_u64(o, (uint64_t) ti->ne[d]);
        }
        gguf_out_u32(o, (uint32_t) ti->type);
        gguf_out_u64(o, off);
        off = GGML_PAD(off + ti->size, ctx->alignment);
    }
    gguf_out_pad(o, ctx->alignment);
}

// Tensor data in order, each padded to the alignment.
static void gguf_out_data(struct gguf_out * o, const struct gguf_context * ctx) {
    for (int64_t i = 0; i < ctx->n_ti && o->ok; i++) {
        const struct gguf_tensor_info * ti = &ctx->ti[i];
        gguf_out_raw(o, ti->data, ti->size);
        gguf_out_pad(o, ctx->alignment);
    }
}

// True if every non-empty tensor has data to write; logs the first one that has none.
static bool gguf_check_data_present(const struct gguf_context * ctx, const char * fn) {
    for (int64_t i = 0; i < ctx->n_ti; i++) {
        if (ctx->ti[i].data == NULL && ctx->ti[i].size > 0) {
            GGML_LOG_ERROR("%s: tensor '%s' has no data (use gguf_set_tensor_data, or write only the metadata)\n", fn,
                           ctx->ti[i].name);
            return false;
        }
    }
    return true;
}

size_t gguf_get_meta_size(const struct gguf_context * ctx) {
    if (ctx == NULL) {
        return 0;
    }
    struct gguf_out o = { NULL, 0, NULL, 0, true };
    gguf_out_meta(&o, ctx);
    return o.pos;
}

void gguf_get_meta_data(const struct gguf_context * ctx, void * data) {
    if (ctx == NULL || data == NULL) {
        GGML_LOG_ERROR("%s: ctx or data is NULL\n", __func__);
        return;
    }
    struct gguf_out o = { data, gguf_get_meta_size(ctx), NULL, 0, true };
    gguf_out_meta(&o, ctx);
}

void * gguf_write_to_buf(const struct gguf_context * ctx, size_t * size, bool only_meta) {
    if (size != NULL) {
        *size = 0;
    }
    if (ctx == NULL || size == NULL) {
        GGML_LOG_ERROR("%s: ctx or size is NULL\n", __func__);
        return NULL;
    }
    if (!only_meta && !gguf_check_data_present(ctx, __func__)) {
        return NULL;
    }
    struct gguf_out count = { NULL, 0, NULL, 0, true };
    gguf_out_meta(&count, ctx);
    if (!only_meta) {
        gguf_out_data(&count, ctx);
    }
    if (!count.ok) {
        GGML_LOG_ERROR("%s: the file size overflows\n", __func__);
        return NULL;
    }
    uint8_t * buf = GGML_MALLOC(count.pos);
    if (buf == NULL) {
        GGML_LOG_ERROR("%s: cannot allocate %zu bytes\n", __func__, count.pos);
        return NULL;
    }
    struct gguf_out o = { buf, count.pos, NULL, 0, true };
    gguf_out_meta(&o, ctx);
    if (!only_meta) {
        gguf_out_data(&o, ctx);
    }
    GGML_ASSERT(o.ok && o.pos == count.pos);
    *size = o.pos;
    return buf;
}

void gguf_buf_free(void * buf) { free(buf); }

bool gguf_write_to_file(const struct gguf_context * ctx, const char * fname, bool only_meta) {
    if (ctx == NULL || fname == NULL) {
        GGML_LOG_ERROR("%s: ctx or fname is NULL\n", __func__);
        return false;
    }
    if (!only_meta && !gguf_check_data_present(ctx, __func__)) {
        return false;
    }
    FILE * f = fopen(fname, "wb");
    if (f == NULL) {
        GGML_LOG_ERROR("%s: cannot open '%s' for writing: %s\n", __func__, fname, strerror(errno));
        return false;
    }
    // Streamed: metadata, then each tensor's bytes straight from its data pointer.
    struct gguf_out o = { NULL, 0, f, 0, true };
    gguf_out_meta(&o, ctx);
    if (!only_meta) {
        gguf_out_data(&o, ctx);
    }
    const int err = o.ok ? 0 : errno;
    if (fclose(f) != 0 && o.ok) {
        o.ok = false;
    }
    if (!o.ok) {
        GGML_LOG_ERROR("%s: writing '%s' failed after %zu bytes: %s\n", __func__, fname, o.pos,
                       err != 0 ? strerror(err) : "I/O error");
        remove(fname); // leave no truncated file that looks like a model
        return false;
    }
    return true;
}
