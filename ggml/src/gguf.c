// gguf.c — GGUF reader and accessors.
//
// The input comes from strangers: every count, length, type, shape and offset is checked
// against the bytes that remain, with overflow-checked arithmetic, before anything is
// allocated from it, and a refusal names the field and the key or tensor it belongs to.
// Allocations are driven by bytes actually present in the input, never by its claims.
#include "gguf-impl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * const GGUF_TYPE_NAMES[GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64",
};
static const size_t GGUF_TYPE_SIZES[GGUF_TYPE_COUNT] = {
    1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8,
};

// Bytes a key/value pair needs at least: key length, a 1-byte key, value type, a 1-byte value.
#define GGUF_MIN_KV_BYTES     (8 + 1 + 4 + 1)
// Bytes a tensor info needs at least: name length, a 1-byte name, n_dims, one ne, type, offset.
#define GGUF_MIN_TENSOR_BYTES (8 + 1 + 4 + 8 + 4 + 8)

const char * gguf_type_name(enum gguf_type type) { return (unsigned) type < GGUF_TYPE_COUNT ? GGUF_TYPE_NAMES[type] : "unknown"; }

size_t gguf_type_size(enum gguf_type type) { return (unsigned) type < GGUF_TYPE_COUNT ? GGUF_TYPE_SIZES[type] : 0; }

bool gguf_alignment_is_valid(uint64_t a) { return a != 0 && (a & (a - 1)) == 0 && a <= GGUF_MAX_ALIGNMENT; }

static bool gguf_host_is_little_endian(void) {
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 1;
}

// Reverses each of n elements of esz bytes in place (little-endian file <-> big-endian host).
static void gguf_bswap_elems(void * data, size_t n, size_t esz) {
    uint8_t * p = data;
    for (size_t i = 0; i < n; i++, p += esz) {
        for (size_t a = 0, b = esz - 1; a < b; a++, b--) {
            const uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
}

void gguf_kv_clear(struct gguf_kv * kv) {
    free(kv->key);
    free(kv->data);
    free(kv->strs);
    free(kv->str_offs);
    memset(kv, 0, sizeof(*kv));
}

bool gguf_tensor_nbytes(enum ggml_type type, const int64_t ne[GGML_MAX_DIMS], size_t * out) {
    const struct ggml_type_traits * tr = (unsigned) type < GGML_TYPE_COUNT ? ggml_get_type_traits(type) : NULL;
    if (tr == NULL || tr->blck_size <= 0 || tr->type_size == 0) {
        return false;
    }
    uint64_t nel = 1;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (ne[i] < 0) {
            return false;
        }
        if (ne[i] != 0 && nel > (uint64_t) INT64_MAX / (uint64_t) ne[i]) {
            return false; // element count must fit int64_t, as ggml counts elements in it
        }
        nel *= (uint64_t) ne[i];
    }
    if (ne[0] % tr->blck_size != 0) {
        return false;
    }
    size_t bytes;
    if ((uint64_t) (ne[0] / tr->blck_size) > SIZE_MAX ||
        !ggml_size_mul_ok((size_t) (ne[0] / tr->blck_size), tr->type_size, &bytes)) {
        return false;
    }
    for (int i = 1; i < GGML_MAX_DIMS; i++) {
        if ((uint64_t) ne[i] > SIZE_MAX || !ggml_size_mul_ok(bytes, (size_t) ne[i], &bytes)) {
            return false;
        }
    }
    *out = bytes;
    return true;
}

// ---- cursor over the input ----

struct gguf_reader {
    const uint8_t * data;
    size_t size;
    size_t pos;
    const char * src; // file name or "<buffer>", for messages
};

static size_t gguf_rd_left(const struct gguf_reader * r) { return r->size - r->pos; }

static bool gguf_rd_raw(struct gguf_reader * r, void * dst, size_t n) {
    if (n > gguf_rd_left(r)) {
        return false;
    }
    if (n > 0) {
        memcpy(dst, r->data + r->pos, n);
    }
    r->pos += n;
    return true;
}

static bool gguf_rd_u32(struct gguf_reader * r, uint32_t * v) {
    uint8_t b[4];
    if (!gguf_rd_raw(r, b, sizeof(b))) {
        return false;
    }
    *v = (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
    return true;
}

static bool gguf_rd_u64(struct gguf_reader * r, uint64_t * v) {
    uint8_t b[8];
    if (!gguf_rd_raw(r, b, sizeof(b))) {
        return false;
    }
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) {
        x = x << 8 | b[i];
    }
    *v = x;
    return true;
}

static void gguf_refuse(const struct gguf_reader * r, const char * fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

// Logs why the input is refused, prefixed with its name and the byte position reached.
static void gguf_refuse(const struct gguf_reader * r, const char * fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    GGML_LOG_ERROR("gguf: refusing '%s' (at byte %zu): %s\n", r->src, r->pos, msg);
}

// A printable, bounded copy of s for messages (names come from the input).
#define GGUF_PRINTABLE_MAX 80
static const char * gguf_printable(const char * s, char out[GGUF_PRINTABLE_MAX]) {
    size_t o = 0;
    for (size_t i = 0; s[i] != '\0'; i++) {
        const unsigned char c = (unsigned char) s[i];
        // Room for the widest step (a 4-byte escape) plus "..." and the NUL after it.
        if (o + 8 > GGUF_PRINTABLE_MAX) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f) {
            out[o++] = (char) c;
        } else {
            o += (size_t) snprintf(out + o, GGUF_PRINTABLE_MAX - o, "\\x%02x", c);
        }
    }
    out[o] = '\0';
    return out;
}

// ---- a set of strings, to find duplicate keys and tensor names in linear time ----

struct gguf_strset {
    const char ** slots;
    size_t mask;
};

static bool gguf_strset_init(struct gguf_strset * s, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) {
        cap *= 2; // n is bounded by the input size, so this cannot overflow
    }
    s->slots = GGML_CALLOC(cap, sizeof(*s->slots));
    s->mask = cap - 1;
    return s->slots != NULL;
}

static void gguf_strset_free(struct gguf_strset * s) {
    free(s->slots);
    s->slots = NULL;
}

// Inserts str (kept by pointer); false if an equal string is already present.
static bool gguf_strset_insert(struct gguf_strset * s, const char * str) {
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (const unsigned char * p = (const unsigned char *) str; *p; p++) {
        h = (h ^ *p) * 1099511628211ull;
    }
    for (size_t i = (size_t) h & s->mask;; i = (i + 1) & s->mask) {
        if (s->slots[i] == NULL) {
            s->slots[i] = str;
            return true;
        }
        if (strcmp(s->slots[i], str) == 0) {
            return false;
        }
    }
}

// ---- parsing ----

// Reads the string values of kv (n strings of element type str) into one blob.
static bool gguf_read_strings(struct gguf_reader * r, struct gguf_kv * kv, const char * key) {
    char pk[GGUF_PRINTABLE_MAX];
    const size_t n = kv->n;
    const bool is_arr = kv->type == GGUF_TYPE_ARRAY;
    if (n > gguf_rd_left(r) / 8) {
        if (is_arr) {
            gguf_refuse(r, "key '%s': array of %zu strings needs at least %zu bytes of lengths, but only %zu bytes remain",
                        gguf_printable(key, pk), n, (size_t) 8 * (gguf_rd_left(r) / 8 + 1), gguf_rd_left(r));
        } else {
            gguf_refuse(r, "key '%s': truncated before the string length", gguf_printable(key, pk));
        }
        return false;
    }
    // Pass 1: validate every length against the remaining bytes and total the blob size.
    const size_t start = r->pos;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t len;
        if (!gguf_rd_u64(r, &len)) {
            gguf_refuse(r, "key '%s': truncated before the length of string #%zu", gguf_printable(key, pk), i);
            return false;
        }
        if (len > gguf_rd_left(r)) {
            if (is_arr) {
                gguf_refuse(r, "key '%s': string #%zu has length %" PRIu64 " but only %zu bytes remain", gguf_printable(key, pk),
                            i, len, gguf_rd_left(r));
            } else {
                gguf_refuse(r, "key '%s': string value has length %" PRIu64 " but only %zu bytes remain", gguf_printable(key, pk),
                            len, gguf_rd_left(r));
            }
            return false;
        }
        r->pos += (size_t) len;
        if (!ggml_size_add_ok(total, (size_t) len + 1, &total)) {
            gguf_refuse(r, "key '%s': total string size overflows", gguf_printable(key, pk));
            return false;
        }
    }
    // Pass 2: copy. Both sizes are bounded by bytes present in the input.
    size_t offs_bytes;
    if (!ggml_size_mul_ok(n + 1, sizeof(size_t), &offs_bytes)) {
        gguf_refuse(r, "key '%s': string count overflows", gguf_printable(key, pk));
        return false;
    }
    kv->strs = GGML_MALLOC(total > 0 ? total : 1);
    kv->str_offs = GGML_MALLOC(offs_bytes);
    if (kv->strs == NULL || kv->str_offs == NULL) {
        gguf_refuse(r, "key '%s': out of memory for %zu bytes of strings", gguf_printable(key, pk), total);
        return false;
    }
    r->pos = start;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t len = 0;
        (void) gguf_rd_u64(r, &len); // validated in pass 1
        kv->str_offs[i] = o;
        (void) gguf_rd_raw(r, kv->strs + o, (size_t) len);
        o += (size_t) len;
        kv->strs[o++] = '\0';
    }
    kv->str_offs[n] = o;
    return true;
}

// Reads n elements of a fixed-size type into kv->data.
static bool gguf_read_scalars(struct gguf_reader * r, struct gguf_kv * kv, const char * key) {
    char pk[GGUF_PRINTABLE_MAX];
    const size_t esz = GGUF_TYPE_SIZES[kv->elem_type];
    const size_t n = kv->n;
    if (n > gguf_rd_left(r) / esz) {
        if (kv->type == GGUF_TYPE_ARRAY) {
            gguf_refuse(r, "key '%s': array of %zu x %s (%zu bytes each) does not fit in the %zu bytes that remain",
                        gguf_printable(key, pk), n, GGUF_TYPE_NAMES[kv->elem_type], esz, gguf_rd_left(r));
        } else {
            gguf_refuse(r, "key '%s': truncated %s value", gguf_printable(key, pk), GGUF_TYPE_NAMES[kv->elem_type]);
        }
        return false;
    }
    const size_t bytes = n * esz;
    kv->data = GGML_MALLOC(bytes > 0 ? bytes : 1);
    if (kv->data == NULL) {
        gguf_refuse(r, "key '%s': out of memory for %zu bytes", gguf_printable(key, pk), bytes);
        return false;
    }
    (void) gguf_rd_raw(r, kv->data, bytes);
    if (!gguf_host_is_little_endian() && esz > 1) {
        gguf_bswap_elems(kv->data, n, esz);
    }
    if (kv->elem_type == GGUF_TYPE_BOOL) {
        // Any other byte would be an invalid bool for consumers reading the array as bool[].
        const uint8_t * b = kv->data;
        for (size_t i = 0; i < n; i++) {
            if (b[i] > 1) {
                gguf_refuse(r, "key '%s': bool element #%zu has value %u (must be 0 or 1)", gguf_printable(key, pk), i, b[i]);
                return false;
            }
        }
    }
    return true;
}

// Reads a string field (key or tensor name) of at most max_len bytes into a fresh buffer.
// what/idx name the field for messages. Returns NULL (refused) on any problem.
static char * gguf_read_name(struct gguf_reader * r, const char * what, int64_t idx, uint64_t max_len) {
    uint64_t len;
    if (!gguf_rd_u64(r, &len)) {
        gguf_refuse(r, "%s #%" PRId64 ": truncated before its name length", what, idx);
        return NULL;
    }
    if (len == 0) {
        gguf_refuse(r, "%s #%" PRId64 ": empty name", what, idx);
        return NULL;
    }
    if (len > max_len) {
        gguf_refuse(r, "%s #%" PRId64 ": name length %" PRIu64 " exceeds the maximum of %" PRIu64, what, idx, len, max_len);
        return NULL;
    }
    if (len > gguf_rd_left(r)) {
        gguf_refuse(r, "%s #%" PRId64 ": name length %" PRIu64 " but only %zu bytes remain", what, idx, len, gguf_rd_left(r));
        return NULL;
    }
    if (memchr(r->data + r->pos, '\0', (size_t) len) != NULL) {
        gguf_refuse(r, "%s #%" PRId64 ": name contains a NUL byte", what, idx);
        return NULL;
    }
    char * s = GGML_MALLOC((size_t) len + 1);
    if (s == NULL) {
        gguf_refuse(r, "%s #%" PRId64 ": out of memory", what, idx);
        return NULL;
    }
    (void) gguf_rd_raw(r, s, (size_t) len);
    s[len] = '\0';
    return s;
}

static bool gguf_read_kv(struct gguf_reader * r, struct gguf_context * ctx, struct gguf_strset * keys) {
    char pk[GGUF_PRINTABLE_MAX];
    const int64_t i = ctx->n_kv;
    struct gguf_kv * kv = &ctx->kv[i];
    kv->key = gguf_read_name(r, "key", i, UINT64_MAX);
    if (kv->key == NULL) {
        return false;
    }
    ctx->n_kv++; // from here on gguf_free releases this kv
    if (!gguf_strset_insert(keys, kv->key)) {
        gguf_refuse(r, "key #%" PRId64 " '%s': duplicate key", i, gguf_printable(kv->key, pk));
        return false;
    }
    uint32_t type;
    if (!gguf_rd_u32(r, &type)) {
        gguf_refuse(r, "key '%s': truncated before its value type", gguf_printable(kv->key, pk));
        return false;
    }
    if (type >= GGUF_TYPE_COUNT) {
        gguf_refuse(r, "key '%s': invalid value type %" PRIu32 " (valid: 0..%d)", gguf_printable(kv->key, pk), type,
                    GGUF_TYPE_COUNT - 1);
        return false;
    }
    kv->type = (enum gguf_type) type;
    kv->elem_type = kv->type;
    kv->n = 1;
    if (kv->type == GGUF_TYPE_ARRAY) {
        uint32_t et;
        uint64_t n;
        if (!gguf_rd_u32(r, &et)) {
            gguf_refuse(r, "key '%s': truncated before the array element type", gguf_printable(kv->key, pk));
            return false;
        }
        if (et == GGUF_TYPE_ARRAY) {
            gguf_refuse(r, "key '%s': nested arrays (array of arrays) are not supported", gguf_printable(kv->key, pk));
            return false;
        }
        if (et >= GGUF_TYPE_COUNT) {
            gguf_refuse(r, "key '%s': invalid array element type %" PRIu32 " (valid: 0..%d)", gguf_printable(kv->key, pk), et,
                        GGUF_TYPE_COUNT - 1);
            return false;
        }
        if (!gguf_rd_u64(r, &n)) {
            gguf_refuse(r, "key '%s': truncated before the array count", gguf_printable(kv->key, pk));
            return false;
        }
        if (n > gguf_rd_left(r)) { // every element takes at least one byte
            gguf_refuse(r, "key '%s': array count %" PRIu64 " exceeds the %zu bytes that remain", gguf_printable(kv->key, pk), n,
                        gguf_rd_left(r));
            return false;
        }
        kv->elem_type = (enum gguf_type) et;
        kv->n = (size_t) n;
    }
    if (kv->elem_type == GGUF_TYPE_STRING) {
        return gguf_read_strings(r, kv, kv->key);
    }
    return gguf_read_scalars(r, kv, kv->key);
}

static bool gguf_read_tensor_info(struct gguf_reader * r, struct gguf_context * ctx, struct gguf_strset * names) {
    char pn[GGUF_PRINTABLE_MAX];
    const int64_t i = ctx->n_ti;
    struct gguf_tensor_info * ti = &ctx->ti[i];
    char * name = gguf_read_name(r, "tensor", i, GGML_MAX_NAME - 1);
    if (name == NULL) {
        return false;
    }
    memcpy(ti->name, name, strlen(name) + 1);
    free(name);
    ctx->n_ti++;
    if (!gguf_strset_insert(names, ti->name)) {
        gguf_refuse(r, "tensor #%" PRId64 " '%s': duplicate tensor name", i, gguf_printable(ti->name, pn));
        return false;
    }
    gguf_printable(ti->name, pn);

    uint32_t n_dims;
    if (!gguf_rd_u32(r, &n_dims)) {
        gguf_refuse(r, "tensor '%s': truncated before n_dims", pn);
        return false;
    }
    if (n_dims < 1 || n_dims > GGML_MAX_DIMS) {
        gguf_refuse(r, "tensor '%s': n_dims = %" PRIu32 " (must be 1..%d)", pn, n_dims, GGML_MAX_DIMS);
        return false;
    }
    ti->n_dims = (int) n_dims;
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        ti->ne[d] = 1;
    }
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t v;
        if (!gguf_rd_u64(r, &v)) {
            gguf_refuse(r, "tensor '%s': truncated in ne[%" PRIu32 "]", pn, d);
            return false;
        }
        if (v > (uint64_t) INT64_MAX) {
            gguf_refuse(r, "tensor '%s': ne[%" PRIu32 "] = %" PRId64 " is negative", pn, d, -(int64_t) (UINT64_MAX - v) - 1);
            return false;
        }
        ti->ne[d] = (int64_t) v;
    }
    uint32_t type;
    if (!gguf_rd_u32(r, &type)) {
        gguf_refuse(r, "tensor '%s': truncated before its type", pn);
        return false;
    }
    const struct ggml_type_traits * tr = type < GGML_TYPE_COUNT ? ggml_get_type_traits((enum ggml_type) type) : NULL;
    if (tr == NULL || tr->blck_size <= 0 || tr->type_size == 0) {
        if (type == 4 || type == 5) {
            gguf_refuse(r, "tensor '%s': type %" PRIu32 " (Q4_%c) was removed from the format", pn, type, type == 4 ? '2' : '3');
        } else if ((type >= 31 && type <= 33) || (type >= 36 && type <= 38)) {
            // Q4_0_4_4 / Q4_0_4_8 / Q4_0_8_8 and IQ4_NL_4_4 / _4_8 / _8_8: interleaved layouts
            // that llama.cpp now makes at load time from Q4_0 / IQ4_NL
            gguf_refuse(r,
                        "tensor '%s': type %" PRIu32 " (a %s layout) was removed from the format; "
                        "convert from the %s file",
                        pn, type, type <= 33 ? "repacked Q4_0" : "repacked IQ4_NL", type <= 33 ? "Q4_0" : "IQ4_NL");
        } else {
            gguf_refuse(r, "tensor '%s': unknown or unsupported tensor type %" PRIu32, pn, type);
        }
        return false;
    }
    ti->type = (enum ggml_type) type;
    if (ti->ne[0] % tr->blck_size != 0) {
        gguf_refuse(r, "tensor '%s': ne[0] = %" PRId64 " is not a multiple of the block size %" PRId64 " of type %s", pn,
                    ti->ne[0], tr->blck_size, tr->type_name ? tr->type_name : "?");
        return false;
    }
    if (!gguf_tensor_nbytes(ti->type, ti->ne, &ti->size)) {
        gguf_refuse(
            r, "tensor '%s': shape [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "] overflows the element count or byte size",
            pn, ti->ne[0], ti->ne[1], ti->ne[2], ti->ne[3]);
        return false;
    }
    uint64_t offset;
    if (!gguf_rd_u64(r, &offset)) {
        gguf_refuse(r, "tensor '%s': truncated before its data offset", pn);
        return false;
    }
    if (offset % ctx->alignment != 0) {
        gguf_refuse(r, "tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %zu", pn, offset, ctx->alignment);
        return false;
    }
    if (offset > UINT64_MAX - ti->size) {
        gguf_refuse(r, "tensor '%s': data offset %" PRIu64 " + size %zu wraps around", pn, offset, ti->size);
        return false;
    }
    if (offset > SIZE_MAX) {
        gguf_refuse(r, "tensor '%s': data offset %" PRIu64 " does not fit this address space", pn, offset);
        return false;
    }
    ti->offset = (size_t) offset;
    return true;
}

// Applies general.alignment if present (it must be a u32 power of two <= 1 MiB).
static bool gguf_read_alignment(struct gguf_reader * r, struct gguf_context * ctx) {
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    const int64_t k = gguf_find_key(ctx, GGUF_KEY_GENERAL_ALIGNMENT);
    if (k < 0) {
        return true;
    }
    const struct gguf_kv * kv = &ctx->kv[k];
    if (kv->type != GGUF_TYPE_UINT32) {
        gguf_refuse(r, "key '" GGUF_KEY_GENERAL_ALIGNMENT "': type is %s, must be u32", gguf_type_name(kv->type));
        return false;
    }
    uint32_t a;
    memcpy(&a, kv->data, sizeof(a));
    if (!gguf_alignment_is_valid(a)) {
        gguf_refuse(r, "key '" GGUF_KEY_GENERAL_ALIGNMENT "': value %" PRIu32 " is not a power of two in 1..%zu", a,
                    GGUF_MAX_ALIGNMENT);
        return false;
    }
    ctx->alignment = a;
    return true;
}

struct gguf_span {
    size_t offset;
    size_t size;
    int64_t idx;
};

static int gguf_span_cmp(const void * a, const void * b) {
    const struct gguf_span * x = a;
    const struct gguf_span * y = b;
    if (x->offset != y->offset) {
        return x->offset < y->offset ? -1 : 1;
    }
    return x->idx < y->idx ? -1 : (x->idx > y->idx ? 1 : 0);
}

// Checks every tensor's data lies inside the data section and no two overlap.
static bool gguf_check_tensor_data(struct gguf_reader * r, struct gguf_context * ctx) {
    char pn[GGUF_PRINTABLE_MAX];
    char pm[GGUF_PRINTABLE_MAX];
    const size_t avail = r->size > ctx->data_offset ? r->size - ctx->data_offset : 0;
    ctx->data_end = 0;
    for (int64_t i = 0; i < ctx->n_ti; i++) {
        const struct gguf_tensor_info * ti = &ctx->ti[i];
        if (ti->offset > avail || ti->size > avail - ti->offset) {
            gguf_refuse(r,
                        "tensor '%s': data [%zu, +%zu bytes) extends past the end of the file "
                        "(the data section at byte %zu holds %zu bytes)",
                        gguf_printable(ti->name, pn), ti->offset, ti->size, ctx->data_offset, avail);
            return false;
        }
        ctx->data_end = GGML_MAX(ctx->data_end, ti->offset + ti->size);
    }
    if (ctx->n_ti < 2) {
        return true;
    }
    struct gguf_span * spans = GGML_MALLOC((size_t) ctx->n_ti * sizeof(*spans));
    if (spans == NULL) {
        gguf_refuse(r, "out of memory checking tensor offsets");
        return false;
    }
    for (int64_t i = 0; i < ctx->n_ti; i++) {
        spans[i] = (struct gguf_span) { ctx->ti[i].offset, ctx->ti[i].size, i };
    }
    qsort(spans, (size_t) ctx->n_ti, sizeof(*spans), gguf_span_cmp);
    size_t end = 0;       // furthest end of the non-empty tensors so far
    int64_t owner = -1;   // the tensor that reaches it
    bool ok = true;
    for (int64_t i = 0; i < ctx->n_ti && ok; i++) {
        const struct gguf_span * s = &spans[i];
        if (s->size == 0) {
            continue;
        }
        if (owner >= 0 && s->offset < end) {
            gguf_refuse(r, "tensor '%s': data at offset %zu overlaps tensor '%s' (which ends at %zu)",
                        gguf_printable(ctx->ti[s->idx].name, pn), s->offset, gguf_printable(ctx->ti[owner].name, pm), end);
            ok = false;
        }
        if (s->offset + s->size > end) {
            end = s->offset + s->size;
            owner = s->idx;
        }
    }
    free(spans);
    return ok;
}

// Creates the ggml context holding one tensor per GGUF tensor (data copied unless no_alloc).
static bool gguf_make_ggml_ctx(struct gguf_reader * r, struct gguf_context * ctx, struct gguf_init_params params) {
    char pn[GGUF_PRINTABLE_MAX];
    size_t mem;
    bool ok = ggml_size_mul_ok((size_t) ctx->n_ti + 1, ggml_tensor_overhead(), &mem);
    for (int64_t i = 0; ok && !params.no_alloc && i < ctx->n_ti; i++) {
        ok = ggml_size_add_ok(mem, ctx->ti[i].size, &mem) && ggml_size_add_ok(mem, GGML_MEM_ALIGN, &mem);
    }
    if (!ok) {
        gguf_refuse(r, "tensor memory size overflows");
        return false;
    }
    struct ggml_init_params ip = { mem, NULL, params.no_alloc };
    struct ggml_context * gctx = ggml_init(ip);
    if (gctx == NULL) {
        gguf_refuse(r, "cannot create a ggml context of %zu bytes", mem);
        return false;
    }
    for (int64_t i = 0; i < ctx->n_ti; i++) {
        struct gguf_tensor_info * ti = &ctx->ti[i];
        struct ggml_tensor * t = ggml_new_tensor(gctx, ti->type, ti->n_dims, ti->ne);
        if (t == NULL || (!params.no_alloc && (t->data == NULL || ggml_nbytes(t) != ti->size))) {
            gguf_refuse(r, "tensor '%s': cannot create its ggml tensor", gguf_printable(ti->name, pn));
            ggml_free(gctx);
            return false;
        }
        ggml_set_name(t, ti->name);
        if (!params.no_alloc) {
            if (ti->size > 0) {
                memcpy(t->data, r->data + ctx->data_offset + ti->offset, ti->size);
            }
            ti->data = t->data; // lets the context be written back while gctx lives
        }
    }
    *params.ctx = gctx;
    return true;
}

static struct gguf_context * gguf_parse(const uint8_t * data, size_t size, const char * src, struct gguf_init_params params) {
    struct gguf_reader rd = { data, size, 0, src };
    struct gguf_reader * r = &rd;
    struct gguf_strset names = { NULL, 0 };
    struct gguf_context * ctx = NULL;

    if (params.ctx != NULL) {
        *params.ctx = NULL;
    }
    if (size == 0) {
        gguf_refuse(r, "the file is empty");
        return NULL;
    }
    if (data == NULL) {
        gguf_refuse(r, "data is NULL");
        return NULL;
    }
    char magic[4];
    if (!gguf_rd_raw(r, magic, sizeof(magic))) {
        gguf_refuse(r, "the file is too small (%zu bytes) to hold the GGUF magic", size);
        return NULL;
    }
    if (memcmp(magic, GGUF_MAGIC, 4) != 0) {
        gguf_refuse(r, "bad magic %02x %02x %02x %02x (expected \"GGUF\")", (unsigned char) magic[0], (unsigned char) magic[1],
                    (unsigned char) magic[2], (unsigned char) magic[3]);
        return NULL;
    }
    uint32_t version;
    if (!gguf_rd_u32(r, &version)) {
        gguf_refuse(r, "truncated before the version");
        return NULL;
    }
    if (version != 2 && version != 3) {
        const uint32_t swapped = (version >> 24) | ((version >> 8) & 0xff00u) | ((version << 8) & 0xff0000u) | (version << 24);
        if (swapped >= 1 && swapped <= 3 && version > 0xffff) {
            gguf_refuse(r,
                        "version field reads %" PRIu32 ": this is a big-endian (byte-swapped) GGUF v%" PRIu32
                        " file; only little-endian files are supported",
                        version, swapped);
        } else if (version == 1) {
            gguf_refuse(r, "GGUF version 1 is not supported (it used 32-bit counts); convert the file to version 3");
        } else {
            gguf_refuse(r, "unsupported GGUF version %" PRIu32 " (supported: 2 and 3)", version);
        }
        return NULL;
    }
    uint64_t n_tensors, n_kv;
    if (!gguf_rd_u64(r, &n_tensors)) {
        gguf_refuse(r, "truncated before the tensor count");
        return NULL;
    }
    if (!gguf_rd_u64(r, &n_kv)) {
        gguf_refuse(r, "truncated before the key/value count");
        return NULL;
    }
    const size_t left = gguf_rd_left(r);
    if (n_kv > left / GGUF_MIN_KV_BYTES) {
        gguf_refuse(r, "n_kv = %" PRIu64 ", but the %zu bytes that remain hold at most %zu key/value pairs", n_kv, left,
                    left / GGUF_MIN_KV_BYTES);
        return NULL;
    }
    if (n_tensors > left / GGUF_MIN_TENSOR_BYTES || n_kv * GGUF_MIN_KV_BYTES + n_tensors * GGUF_MIN_TENSOR_BYTES > left) {
        gguf_refuse(r, "n_tensors = %" PRIu64 " (with n_kv = %" PRIu64 "), but the %zu bytes that remain cannot hold that many",
                    n_tensors, n_kv, left);
        return NULL;
    }

    ctx = GGML_CALLOC(1, sizeof(*ctx));
    if (ctx == NULL) {
        gguf_refuse(r, "out of memory");
        return NULL;
    }
    ctx->version = version;
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    ctx->from_input = true;
    // Both counts were bounded by the bytes present above, so these allocations are too.
    ctx->kv = GGML_CALLOC(n_kv > 0 ? (size_t) n_kv : 1, sizeof(*ctx->kv));
    ctx->ti = GGML_CALLOC(n_tensors > 0 ? (size_t) n_tensors : 1, sizeof(*ctx->ti));
    ctx->cap_kv = (int64_t) n_kv;
    ctx->cap_ti = (int64_t) n_tensors;
    if (ctx->kv == NULL || ctx->ti == NULL) {
        gguf_refuse(r, "out of memory");
        goto fail;
    }

    if (!gguf_strset_init(&names, (size_t) n_kv)) {
        gguf_refuse(r, "out of memory");
        goto fail;
    }
    while ((uint64_t) ctx->n_kv < n_kv) {
        if (!gguf_read_kv(r, ctx, &names)) {
            goto fail;
        }
    }
    gguf_strset_free(&names);
    if (!gguf_read_alignment(r, ctx)) {
        goto fail;
    }

    if (!gguf_strset_init(&names, (size_t) n_tensors)) {
        gguf_refuse(r, "out of memory");
        goto fail;
    }
    while ((uint64_t) ctx->n_ti < n_tensors) {
        if (!gguf_read_tensor_info(r, ctx, &names)) {
            goto fail;
        }
    }
    gguf_strset_free(&names);

    if (!ggml_size_pad_ok(r->pos, ctx->alignment, &ctx->data_offset)) {
        gguf_refuse(r, "data section offset overflows");
        goto fail;
    }
    if (!gguf_check_tensor_data(r, ctx)) {
        goto fail;
    }
    if (params.ctx != NULL && !gguf_make_ggml_ctx(r, ctx, params)) {
        goto fail;
    }
    return ctx;

fail:
    gguf_strset_free(&names);
    gguf_free(ctx);
    return NULL;
}

// ---- construction and destruction ----

struct gguf_context * gguf_init_empty(void) {
    struct gguf_context * ctx = GGML_CALLOC(1, sizeof(*ctx));
    if (ctx == NULL) {
        GGML_LOG_ERROR("gguf_init_empty: out of memory\n");
        return NULL;
    }
    ctx->version = GGUF_VERSION;
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    return ctx;
}

struct gguf_context * gguf_init_from_buffer(const void * data, size_t size, struct gguf_init_params params) {
    return gguf_parse(data, size, "<buffer>", params);
}

struct gguf_context * gguf_init_from_file(const char * fname, struct gguf_init_params params) {
    if (params.ctx != NULL) {
        *params.ctx = NULL;
    }
    if (fname == NULL) {
        GGML_LOG_ERROR("gguf_init_from_file: fname is NULL\n");
        return NULL;
    }
    struct gguf_mmap * map = gguf_mmap_open(fname);
    if (map == NULL) {
        return NULL;
    }
    // Parsing touches only the header pages; without no_alloc the tensor data is copied out,
    // so the mapping is not needed once this returns.
    struct gguf_context * ctx = gguf_parse(gguf_mmap_addr(map), gguf_mmap_size(map), fname, params);
    gguf_mmap_close(map);
    return ctx;
}

void gguf_free(struct gguf_context * ctx) {
    if (ctx == NULL) {
        return;
    }
    for (int64_t i = 0; i < ctx->n_kv; i++) {
        gguf_kv_clear(&ctx->kv[i]);
    }
    free(ctx->kv);
    free(ctx->ti);
    free(ctx);
}

// ---- accessors ----

uint32_t gguf_get_version(const struct gguf_context * ctx) { return ctx != NULL ? ctx->version : 0; }

size_t gguf_get_alignment(const struct gguf_context * ctx) { return ctx != NULL ? ctx->alignment : 0; }

size_t gguf_get_data_offset(const struct gguf_context * ctx) {
    if (ctx == NULL) {
        return 0;
    }
    return ctx->from_input ? ctx->data_offset : gguf_get_meta_size(ctx);
}

int64_t gguf_get_n_kv(const struct gguf_context * ctx) { return ctx != NULL ? ctx->n_kv : 0; }

int64_t gguf_find_key(const struct gguf_context * ctx, const char * key) {
    if (ctx == NULL || key == NULL) {
        return -1;
    }
    for (int64_t i = 0; i < ctx->n_kv; i++) {
        if (strcmp(ctx->kv[i].key, key) == 0) {
            return i;
        }
    }
    return -1;
}

static const struct gguf_kv * gguf_kv_at(const struct gguf_context * ctx, int64_t key_id, const char * fn) {
    if (ctx == NULL) {
        GGML_LOG_ERROR("%s: ctx is NULL\n", fn);
        return NULL;
    }
    if (key_id < 0 || key_id >= ctx->n_kv) {
        GGML_LOG_ERROR("%s: key id %" PRId64 " out of range [0, %" PRId64 ")\n", fn, key_id, ctx->n_kv);
        return NULL;
    }
    return &ctx->kv[key_id];
}

const char * gguf_get_key(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = gguf_kv_at(ctx, key_id, __func__);
    return kv != NULL ? kv->key : NULL;
}

enum gguf_type gguf_get_kv_type(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = gguf_kv_at(ctx, key_id, __func__);
    return kv != NULL ? kv->type : GGUF_TYPE_COUNT;
}

// The kv at key_id if it is an array; logged NULL otherwise.
static const struct gguf_kv * gguf_arr_at(const struct gguf_context * ctx, int64_t key_id, const char * fn) {
    const struct gguf_kv * kv = gguf_kv_at(ctx, key_id, fn);
    if (kv != NULL && kv->type != GGUF_TYPE_ARRAY) {
        GGML_LOG_ERROR("%s: key '%s' is a %s, not an array\n", fn, kv->key, GGUF_TYPE_NAMES[kv->type]);
        return NULL;
    }
    return kv;
}

enum gguf_type gguf_get_arr_type(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = gguf_arr_at(ctx, key_id, __func__);
    return kv != NULL ? kv->elem_type : GGUF_TYPE_COUNT;
}

// Pointer to the value of a scalar key of type want; logged NULL otherwise.
static const void * gguf_scalar_at(const struct gguf_context * ctx, int64_t key_id, enum gguf_type want, const char * fn) {
    const struct gguf_kv * kv = gguf_kv_at(ctx, key_id, fn);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->type != want) {
        GGML_LOG_ERROR("%s: key '%s' has type %s, not %s\n", fn, kv->key, GGUF_TYPE_NAMES[kv->type], GGUF_TYPE_NAMES[want]);
        return NULL;
    }
    return kv->data;
}

#define GGUF_DEFINE_GETTER(suffix, ctype, gtype)                                   \
    ctype gguf_get_val_##suffix(const struct gguf_context * ctx, int64_t key_id) { \
        const void * p = gguf_scalar_at(ctx, key_id, gtype, __func__);             \
        ctype v = 0;                                                               \
        if (p != NULL) {                                                           \
            memcpy(&v, p, sizeof(v));                                              \
        }                                                                          \
        return v;                                                                  \
    }

GGUF_DEFINE_GETTER(u8, uint8_t, GGUF_TYPE_UINT8)
GGUF_DEFINE_GETTER(i8, int8_t, GGUF_TYPE_INT8)
GGUF_DEFINE_GETTER(u16, uint16_t, GGUF_TYPE_UINT16)
GGUF_DEFINE_GETTER(i16, int16_t, GGUF_TYPE_INT16)
GGUF_DEFINE_GETTER(u32, uint32_t, GGUF_TYPE_UINT32)
GGUF_DEFINE_GETTER(i32, int32_t, GGUF_TYPE_INT32)
GGUF_DEFINE_GETTER(f32, float, GGUF_TYPE_FLOAT32)
GGUF_DEFINE_GETTER(u64, uint64_t, GGUF_TYPE_UINT64)
GGUF_DEFINE_GETTER(i64, int64_t, GGUF_TYPE_INT64)
GGUF_DEFINE_GETTER(f64, double, GGUF_TYPE_FLOAT64)

bool gguf_get_val_bool(const struct gguf_context * ctx, int64_t key_id) {
    const uint8_t * p = gguf_scalar_at(ctx, key_id, GGUF_TYPE_BOOL, __func__);
    return p != NULL && *p != 0;
}

const char * gguf_get_val_str(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = gguf_kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->type != GGUF_TYPE_STRING) {
        GGML_LOG_ERROR("%s: key '%s' has type %s, not str\n", __func__, kv->key, GGUF_TYPE_NAMES[kv->type]);
        return NULL;
    }
    return kv->strs;
}

const void * gguf_get_val_data(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = gguf_kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->type == GGUF_TYPE_STRING || kv->type == GGUF_TYPE_ARRAY) {
        GGML_LOG_ERROR("%s: key '%s' has type %s; use the str/arr getters\n", __func__, kv->key, GGUF_TYPE_NAMES[kv->type]);
        return NULL;
    }
    return kv->data;
}

size_t gguf_get_arr_n(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = gguf_arr_at(ctx, key_id, __func__);
    return kv != NULL ? kv->n : 0;
}

const void * gguf_get_arr_data(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = gguf_arr_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->elem_type == GGUF_TYPE_STRING) {
        GGML_LOG_ERROR("%s: key '%s' is an array of strings; use gguf_get_arr_str\n", __func__, kv->key);
        return NULL;
    }
    return kv->data;
}

const char * gguf_get_arr_str(const struct gguf_context * ctx, int64_t key_id, size_t i) {
    const struct gguf_kv * kv = gguf_arr_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->elem_type != GGUF_TYPE_STRING) {
        GGML_LOG_ERROR("%s: key '%s' is an array of %s, not of strings\n", __func__, kv->key, GGUF_TYPE_NAMES[kv->elem_type]);
        return NULL;
    }
    if (i >= kv->n) {
        GGML_LOG_ERROR("%s: key '%s': index %zu out of range [0, %zu)\n", __func__, kv->key, i, kv->n);
        return NULL;
    }
    return kv->strs + kv->str_offs[i];
}

size_t gguf_get_arr_str_len(const struct gguf_context * ctx, int64_t key_id, size_t i) {
    const struct gguf_kv * kv = gguf_kv_at(ctx, key_id, __func__);
    if (kv == NULL || kv->elem_type != GGUF_TYPE_STRING || i >= kv->n) {
        return 0;
    }
    return kv->str_offs[i + 1] - kv->str_offs[i] - 1;
}

int64_t gguf_get_n_tensors(const struct gguf_context * ctx) { return ctx != NULL ? ctx->n_ti : 0; }

int64_t gguf_find_tensor(const struct gguf_context * ctx, const char * name) {
    if (ctx == NULL || name == NULL) {
        return -1;
    }
    for (int64_t i = 0; i < ctx->n_ti; i++) {
        if (strcmp(ctx->ti[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

static const struct gguf_tensor_info * gguf_ti_at(const struct gguf_context * ctx, int64_t tensor_id, const char * fn) {
    if (ctx == NULL) {
        GGML_LOG_ERROR("%s: ctx is NULL\n", fn);
        return NULL;
    }
    if (tensor_id < 0 || tensor_id >= ctx->n_ti) {
        GGML_LOG_ERROR("%s: tensor id %" PRId64 " out of range [0, %" PRId64 ")\n", fn, tensor_id, ctx->n_ti);
        return NULL;
    }
    return &ctx->ti[tensor_id];
}

size_t gguf_get_tensor_offset(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * ti = gguf_ti_at(ctx, tensor_id, __func__);
    return ti != NULL ? ti->offset : 0;
}

const char * gguf_get_tensor_name(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * ti = gguf_ti_at(ctx, tensor_id, __func__);
    return ti != NULL ? ti->name : NULL;
}

enum ggml_type gguf_get_tensor_type(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * ti = gguf_ti_at(ctx, tensor_id, __func__);
    return ti != NULL ? ti->type : GGML_TYPE_COUNT;
}

size_t gguf_get_tensor_size(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * ti = gguf_ti_at(ctx, tensor_id, __func__);
    return ti != NULL ? ti->size : 0;
}

int gguf_get_tensor_n_dims(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * ti = gguf_ti_at(ctx, tensor_id, __func__);
    return ti != NULL ? ti->n_dims : 0;
}

int64_t gguf_get_tensor_ne(const struct gguf_context * ctx, int64_t tensor_id, int i) {
    const struct gguf_tensor_info * ti = gguf_ti_at(ctx, tensor_id, __func__);
    if (ti == NULL) {
        return 0;
    }
    if (i < 0 || i >= GGML_MAX_DIMS) {
        GGML_LOG_ERROR("%s: dim %d out of range [0, %d)\n", __func__, i, GGML_MAX_DIMS);
        return 0;
    }
    return ti->ne[i];
}
