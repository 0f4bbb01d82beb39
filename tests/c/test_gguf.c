// test_gguf.c — the GGUF reader against the crafted corpus (tests/data/gguf-corpus, or the
// directory in $GGUF_CORPUS_DIR), plus writer round trips and the mmap helpers. Meant to
// run under the LLAMA_SANITIZE=ON build: every refusal must come back as NULL with a logged
// reason, never as a crash, an out-of-bounds read or a leak.
//
// Corpus naming (see scripts/gen_gguf_corpus.py): bad-*.gguf must be refused with a log
// line containing the MANIFEST.tsv text; ok-*.gguf must load; every proper prefix of an
// ok-strict-*.gguf must be refused.
#define _POSIX_C_SOURCE 200809L

#include "gguf.h"
#include "ggml.h"
#include "gguf-impl.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        g_checks++;                                                         \
        if (!(cond)) {                                                      \
            g_failures++;                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

// ---- log capture ----

static char g_log[8192];
static size_t g_log_len = 0;
static int g_log_errors = 0;
static bool g_log_echo = false;

static void log_cb(enum ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    if (level == GGML_LOG_LEVEL_ERROR) {
        g_log_errors++;
    }
    const size_t n = strlen(text);
    if (g_log_len + n < sizeof(g_log)) {
        memcpy(g_log + g_log_len, text, n + 1);
        g_log_len += n;
    }
    if (g_log_echo) {
        fputs(text, stderr);
    }
}

static void log_reset(void) {
    g_log[0] = '\0';
    g_log_len = 0;
    g_log_errors = 0;
}

// ---- files ----

static uint8_t * read_file(const char * path, size_t * size) {
    FILE * f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 4096, n = 0;
    uint8_t * buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            uint8_t * nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    *size = n;
    return buf;
}

static bool write_file(const char * path, const void * data, size_t size) {
    FILE * f = fopen(path, "wb");
    if (f == NULL) {
        return false;
    }
    const bool ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

// A copy in a buffer of exactly size bytes, so ASan sees any read past the end.
static uint8_t * exact_copy(const uint8_t * data, size_t size) {
    uint8_t * p = malloc(size > 0 ? size : 1);
    if (p != NULL && size > 0) {
        memcpy(p, data, size);
    }
    return p;
}

static char g_tmp_path[256];

static void make_tmp_path(void) {
    const char * dir = getenv("TMPDIR");
    snprintf(g_tmp_path, sizeof(g_tmp_path), "%s/test_gguf_XXXXXX", dir != NULL ? dir : "/tmp");
    const int fd = mkstemp(g_tmp_path);
    if (fd < 0) {
        fprintf(stderr, "cannot create a temporary file\n");
        exit(1);
    }
    close(fd);
}

// ---- checks ----

// Loads a valid file every way and checks the views agree with the bytes.
static void check_valid(const char * name, const char * path, const uint8_t * bytes, size_t size) {
    struct ggml_context * meta = NULL;
    struct ggml_context * full = NULL;
    uint8_t * copy = exact_copy(bytes, size);

    log_reset();
    struct gguf_context * g_buf = gguf_init_from_buffer(copy, size, (struct gguf_init_params) { true, NULL });
    struct gguf_context * g_meta = gguf_init_from_file(path, (struct gguf_init_params) { true, &meta });
    struct gguf_context * g_full = gguf_init_from_file(path, (struct gguf_init_params) { false, &full });
    CHECK(g_buf != NULL && g_meta != NULL && g_full != NULL, "%s: valid file refused: %s", name, g_log);
    if (g_buf == NULL || g_meta == NULL || g_full == NULL) {
        gguf_free(g_buf);
        gguf_free(g_meta);
        gguf_free(g_full);
        ggml_free(meta);
        ggml_free(full);
        free(copy);
        return;
    }
    CHECK(g_log_errors == 0, "%s: errors logged for a valid file: %s", name, g_log);
    const int64_t n_t = gguf_get_n_tensors(g_buf);
    CHECK(gguf_get_n_tensors(g_meta) == n_t && gguf_get_n_tensors(g_full) == n_t, "%s: tensor counts differ", name);
    CHECK(gguf_get_n_kv(g_meta) == gguf_get_n_kv(g_buf), "%s: kv counts differ", name);
    const size_t data_offset = gguf_get_data_offset(g_buf);
    CHECK(data_offset % gguf_get_alignment(g_buf) == 0, "%s: data offset %zu unaligned", name, data_offset);

    struct ggml_tensor * tm = ggml_get_first_tensor(meta);
    struct ggml_tensor * tf = ggml_get_first_tensor(full);
    for (int64_t i = 0; i < n_t; i++) {
        const char * tname = gguf_get_tensor_name(g_buf, i);
        CHECK(tm != NULL && tf != NULL, "%s: ggml context lacks tensor %lld", name, (long long) i);
        if (tm == NULL || tf == NULL) {
            break;
        }
        CHECK(strcmp(tm->name, tname) == 0 && strcmp(tf->name, tname) == 0, "%s: tensor %lld name", name, (long long) i);
        CHECK(tm->type == gguf_get_tensor_type(g_buf, i) && tf->type == tm->type, "%s: tensor %s type", name, tname);
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            CHECK(tm->ne[d] == gguf_get_tensor_ne(g_buf, i, d) && tf->ne[d] == tm->ne[d], "%s: tensor %s ne[%d]", name, tname, d);
        }
        CHECK(tm->data == NULL, "%s: no_alloc tensor %s has data", name, tname);
        const size_t off = data_offset + gguf_get_tensor_offset(g_buf, i);
        const size_t sz = gguf_get_tensor_size(g_buf, i);
        CHECK(off + sz <= size, "%s: tensor %s outside the file", name, tname);
        CHECK(ggml_nbytes(tf) == sz, "%s: tensor %s nbytes %zu vs %zu", name, tname, ggml_nbytes(tf), sz);
        CHECK(sz == 0 || (tf->data != NULL && memcmp(tf->data, bytes + off, sz) == 0), "%s: tensor %s data differs", name, tname);
        tm = ggml_get_next_tensor(meta, tm);
        tf = ggml_get_next_tensor(full, tf);
    }
    CHECK(tm == NULL && tf == NULL, "%s: ggml context has extra tensors", name);

    // Round trip: writing what was read and reading it back gives the same bytes again.
    size_t n1 = 0, n2 = 0;
    void * w1 = gguf_write_to_buf(g_full, &n1, false);
    CHECK(w1 != NULL, "%s: write_to_buf failed: %s", name, g_log);
    if (w1 != NULL) {
        struct ggml_context * c2 = NULL;
        struct gguf_context * g2 = gguf_init_from_buffer(w1, n1, (struct gguf_init_params) { false, &c2 });
        CHECK(g2 != NULL, "%s: re-reading our own output failed: %s", name, g_log);
        if (g2 != NULL) {
            void * w2 = gguf_write_to_buf(g2, &n2, false);
            CHECK(w2 != NULL && n1 == n2 && memcmp(w1, w2, n1) == 0, "%s: second write differs", name);
            CHECK(gguf_get_meta_size(g2) == gguf_get_data_offset(g2), "%s: meta size vs data offset", name);
            gguf_buf_free(w2);
        }
        gguf_free(g2);
        ggml_free(c2);
    }
    gguf_buf_free(w1);

    gguf_free(g_buf);
    gguf_free(g_meta);
    gguf_free(g_full);
    ggml_free(meta);
    ggml_free(full);
    free(copy);
}

// Every way of loading must refuse; the log must say why.
static void check_refused(const char * name, const char * path, const uint8_t * bytes, size_t size, const char * expect) {
    const bool no_alloc[3] = { true, true, false };
    for (int way = 0; way < 3; way++) {
        struct ggml_context * gctx = (struct ggml_context *) (uintptr_t) 1; // must be reset to NULL
        struct gguf_init_params p = { no_alloc[way], way == 0 ? NULL : &gctx };
        log_reset();
        struct gguf_context * g = gguf_init_from_file(path, p);
        CHECK(g == NULL, "%s: refused file loaded (way %d)", name, way);
        CHECK(way == 0 || gctx == NULL, "%s: *params.ctx not NULL after a refusal", name);
        CHECK(g_log_errors > 0, "%s: refused without an error message", name);
        CHECK(strstr(g_log, expect) != NULL, "%s: message lacks \"%s\": %s", name, expect, g_log);
        gguf_free(g);
    }
    uint8_t * copy = exact_copy(bytes, size);
    log_reset();
    struct gguf_context * g = gguf_init_from_buffer(copy, size, (struct gguf_init_params) { false, NULL });
    CHECK(g == NULL && g_log_errors > 0, "%s: buffer read not refused cleanly", name);
    CHECK(strstr(g_log, expect) != NULL, "%s: buffer message lacks \"%s\": %s", name, expect, g_log);
    gguf_free(g);
    free(copy);
}

// Every proper prefix of a strictly valid file must be refused (from a buffer and a file).
static int check_truncations(const char * name, const uint8_t * bytes, size_t size) {
    int n = 0;
    for (size_t len = 0; len < size; len++) {
        uint8_t * copy = exact_copy(bytes, len);
        struct ggml_context * gctx = NULL;
        log_reset();
        struct gguf_context * g = gguf_init_from_buffer(copy, len, (struct gguf_init_params) { false, &gctx });
        CHECK(g == NULL && gctx == NULL && g_log_errors > 0, "%s: prefix of %zu bytes accepted", name, len);
        gguf_free(g);
        ggml_free(gctx);
        free(copy);

        if (write_file(g_tmp_path, bytes, len)) {
            log_reset();
            g = gguf_init_from_file(g_tmp_path, (struct gguf_init_params) { true, &gctx });
            CHECK(g == NULL && gctx == NULL && g_log_errors > 0, "%s: file prefix of %zu bytes accepted", name, len);
            gguf_free(g);
            ggml_free(gctx);
        }
        n++;
    }
    return n;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

// Random corruption of a valid file: the reader may accept or refuse, but must stay in
// bounds (ASan) and consistent (every accepted tensor lies inside the input).
static int fuzz(const uint8_t * bytes, size_t size, int iters) {
    static const uint64_t interesting[] = { 0,
                                            1,
                                            2,
                                            31,
                                            32,
                                            33,
                                            63,
                                            64,
                                            0x7fffffffffffffffull,
                                            0x8000000000000000ull,
                                            0xffffffffffffffffull,
                                            0xffffffffull,
                                            0x100000000ull,
                                            1ull << 62,
                                            1ull << 61 };
    int accepted = 0;
    for (int it = 0; it < iters; it++) {
        uint8_t * copy = exact_copy(bytes, size);
        const int n_mut = 1 + (int) (rnd() % 4);
        for (int m = 0; m < n_mut; m++) {
            const size_t pos = (size_t) (rnd() % size);
            if (rnd() % 2 == 0 || pos + 8 > size) {
                copy[pos] = (uint8_t) rnd();
            } else {
                const uint64_t v = interesting[rnd() % (sizeof(interesting) / sizeof(interesting[0]))];
                for (int b = 0; b < 8; b++) {
                    copy[pos + (size_t) b] = (uint8_t) (v >> (8 * b));
                }
            }
        }
        size_t len = size;
        if (rnd() % 8 == 0) {
            len = (size_t) (rnd() % size); // also cut it short
        }
        struct ggml_context * gctx = NULL;
        log_reset();
        struct gguf_context * g = gguf_init_from_buffer(copy, len, (struct gguf_init_params) { rnd() % 2 == 0, &gctx });
        if (g != NULL) {
            accepted++;
            for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
                const size_t end = gguf_get_data_offset(g) + gguf_get_tensor_offset(g, i) + gguf_get_tensor_size(g, i);
                CHECK(end <= len, "fuzz: accepted tensor past the end");
            }
            for (int64_t k = 0; k < gguf_get_n_kv(g); k++) {
                if (gguf_get_kv_type(g, k) == GGUF_TYPE_STRING) {
                    CHECK(gguf_get_val_str(g, k) != NULL, "fuzz: string value missing");
                }
            }
        } else {
            CHECK(g_log_errors > 0, "fuzz: refusal without a message");
        }
        gguf_free(g);
        ggml_free(gctx);
        free(copy);
    }
    return accepted;
}

// ---- writer API ----

static void test_writer(void) {
    struct gguf_context * w = gguf_init_empty();
    CHECK(w != NULL, "gguf_init_empty");
    gguf_set_val_u8(w, "t.u8", 250);
    gguf_set_val_i8(w, "t.i8", -120);
    gguf_set_val_u16(w, "t.u16", 65000);
    gguf_set_val_i16(w, "t.i16", -32000);
    gguf_set_val_u32(w, "t.u32", 4000000000u);
    gguf_set_val_i32(w, "t.i32", -2000000000);
    gguf_set_val_f32(w, "t.f32", 0.25f);
    gguf_set_val_u64(w, "t.u64", UINT64_MAX - 1);
    gguf_set_val_i64(w, "t.i64", INT64_MIN + 1);
    gguf_set_val_f64(w, "t.f64", -1e300);
    gguf_set_val_bool(w, "t.bool", true);
    gguf_set_val_str(w, "t.str", "hello");
    gguf_set_val_str(w, "t.str", gguf_get_val_str(w, gguf_find_key(w, "t.str"))); // from itself
    const int32_t ints[4] = { 1, -2, 3, -4 };
    gguf_set_arr_data(w, "t.arr_i32", GGUF_TYPE_INT32, ints, 4);
    const char * strs[3] = { "a", "", "ünïcode" };
    gguf_set_arr_str(w, "t.arr_str", strs, 3);
    gguf_set_val_u32(w, "t.removed", 7);
    CHECK(gguf_remove_key(w, "t.removed") >= 0 && gguf_find_key(w, "t.removed") < 0, "remove_key");
    CHECK(gguf_remove_key(w, "t.absent") == -1, "remove_key of an absent key");
    gguf_set_val_u32(w, "t.u32", 5); // overwrite keeps the position
    CHECK(gguf_find_key(w, "t.u32") == 4 && gguf_get_val_u32(w, 4) == 5, "overwrite");

    // Refused inputs leave the context unchanged.
    const int64_t n_kv = gguf_get_n_kv(w);
    log_reset();
    gguf_set_val_u32(w, "", 1);
    gguf_set_val_u64(w, GGUF_KEY_GENERAL_ALIGNMENT, 64);
    gguf_set_val_u32(w, GGUF_KEY_GENERAL_ALIGNMENT, 48);
    gguf_set_arr_data(w, "t.bad", GGUF_TYPE_STRING, ints, 1);
    gguf_set_arr_data(w, "t.bad", GGUF_TYPE_ARRAY, ints, 1);
    CHECK(gguf_get_n_kv(w) == n_kv && g_log_errors == 5, "refused setters: %d errors", g_log_errors);
    CHECK(gguf_get_val_u8(w, gguf_find_key(w, "t.str")) == 0 && g_log_errors == 6, "wrong-type getter");
    CHECK(gguf_get_val_str(w, 999) == NULL && gguf_get_key(w, -1) == NULL, "out-of-range getters");

    // Tensors: offsets follow the alignment and are recomputed on type and alignment changes.
    struct ggml_context * gctx = ggml_init((struct ggml_init_params) { 1 << 20, NULL, false });
    struct ggml_tensor * a = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, 64, 3);
    struct ggml_tensor * b = ggml_new_tensor_1d(gctx, GGML_TYPE_Q8_0, 64);
    struct ggml_tensor * c = ggml_new_tensor_1d(gctx, GGML_TYPE_F16, 5);
    ggml_set_name(a, "a");
    ggml_set_name(b, "b");
    ggml_set_name(c, "c");
    for (size_t i = 0; i < ggml_nbytes(a); i++) ((uint8_t *) a->data)[i] = (uint8_t) i;
    for (size_t i = 0; i < ggml_nbytes(b); i++) ((uint8_t *) b->data)[i] = (uint8_t) (3 * i);
    for (size_t i = 0; i < ggml_nbytes(c); i++) ((uint8_t *) c->data)[i] = (uint8_t) (7 * i);
    gguf_add_tensor(w, a);
    gguf_add_tensor(w, b);
    gguf_add_tensor(w, c);
    log_reset();
    gguf_add_tensor(w, a); // duplicate
    CHECK(gguf_get_n_tensors(w) == 3 && g_log_errors == 1, "duplicate tensor refused");
    CHECK(gguf_get_tensor_offset(w, 1) == 768 && gguf_get_tensor_offset(w, 2) == 768 + 96, "offsets %zu %zu",
          gguf_get_tensor_offset(w, 1), gguf_get_tensor_offset(w, 2));
    CHECK(gguf_get_tensor_n_dims(w, 0) == 2 && gguf_get_tensor_n_dims(w, 1) == 1, "n_dims");
    gguf_set_tensor_type(w, "a", GGML_TYPE_Q8_0); // 64x3 -> 3 rows of 68 bytes
    CHECK(gguf_get_tensor_size(w, 0) == 204 && gguf_get_tensor_offset(w, 1) == 224, "set_tensor_type offsets");
    log_reset();
    gguf_set_tensor_type(w, "c", GGML_TYPE_Q8_0); // 5 is not a multiple of 32
    CHECK(g_log_errors == 1 && gguf_get_tensor_type(w, 2) == GGML_TYPE_F16, "bad set_tensor_type refused");
    gguf_set_tensor_type(w, "a", GGML_TYPE_F32);
    gguf_set_val_u32(w, GGUF_KEY_GENERAL_ALIGNMENT, 256);
    CHECK(gguf_get_alignment(w) == 256 && gguf_get_tensor_offset(w, 1) == 768 && gguf_get_tensor_offset(w, 2) == 1024,
          "alignment change: %zu %zu", gguf_get_tensor_offset(w, 1), gguf_get_tensor_offset(w, 2));

    size_t n = 0;
    void * buf = gguf_write_to_buf(w, &n, false);
    CHECK(buf != NULL && n == gguf_get_meta_size(w) + 1024 + 256, "write_to_buf size %zu", n);
    CHECK(gguf_get_data_offset(w) == gguf_get_meta_size(w), "writer data offset");
    uint8_t * meta = malloc(gguf_get_meta_size(w));
    gguf_get_meta_data(w, meta);
    CHECK(buf != NULL && memcmp(meta, buf, gguf_get_meta_size(w)) == 0, "meta data is the file's prefix");
    free(meta);

    // File and buffer outputs are identical; reading back gives the values set.
    CHECK(gguf_write_to_file(w, g_tmp_path, false), "write_to_file");
    size_t fsize = 0;
    uint8_t * fbytes = read_file(g_tmp_path, &fsize);
    CHECK(fbytes != NULL && buf != NULL && fsize == n && memcmp(fbytes, buf, n) == 0, "file output equals buffer output");
    free(fbytes);

    struct ggml_context * rctx = NULL;
    struct gguf_context * r = gguf_init_from_file(g_tmp_path, (struct gguf_init_params) { false, &rctx });
    CHECK(r != NULL, "re-read: %s", g_log);
    if (r != NULL) {
        CHECK(gguf_get_version(r) == 3 && gguf_get_alignment(r) == 256, "version/alignment");
        CHECK(gguf_get_val_u8(r, gguf_find_key(r, "t.u8")) == 250, "u8");
        CHECK(gguf_get_val_i8(r, gguf_find_key(r, "t.i8")) == -120, "i8");
        CHECK(gguf_get_val_u16(r, gguf_find_key(r, "t.u16")) == 65000, "u16");
        CHECK(gguf_get_val_i16(r, gguf_find_key(r, "t.i16")) == -32000, "i16");
        CHECK(gguf_get_val_u32(r, gguf_find_key(r, "t.u32")) == 5, "u32");
        CHECK(gguf_get_val_i32(r, gguf_find_key(r, "t.i32")) == -2000000000, "i32");
        CHECK(gguf_get_val_f32(r, gguf_find_key(r, "t.f32")) == 0.25f, "f32");
        CHECK(gguf_get_val_u64(r, gguf_find_key(r, "t.u64")) == UINT64_MAX - 1, "u64");
        CHECK(gguf_get_val_i64(r, gguf_find_key(r, "t.i64")) == INT64_MIN + 1, "i64");
        CHECK(gguf_get_val_f64(r, gguf_find_key(r, "t.f64")) == -1e300, "f64");
        CHECK(gguf_get_val_bool(r, gguf_find_key(r, "t.bool")), "bool");
        CHECK(strcmp(gguf_get_val_str(r, gguf_find_key(r, "t.str")), "hello") == 0, "str");
        const int64_t ka = gguf_find_key(r, "t.arr_i32");
        CHECK(gguf_get_kv_type(r, ka) == GGUF_TYPE_ARRAY && gguf_get_arr_type(r, ka) == GGUF_TYPE_INT32 &&
                  gguf_get_arr_n(r, ka) == 4 && memcmp(gguf_get_arr_data(r, ka), ints, sizeof(ints)) == 0,
              "arr_i32");
        const int64_t ks = gguf_find_key(r, "t.arr_str");
        CHECK(gguf_get_arr_n(r, ks) == 3 && strcmp(gguf_get_arr_str(r, ks, 2), strs[2]) == 0 &&
                  strcmp(gguf_get_arr_str(r, ks, 1), "") == 0 && gguf_get_arr_str(r, ks, 3) == NULL,
              "arr_str");
        CHECK(gguf_get_arr_str_len(r, ks, 2) == strlen(strs[2]), "arr_str_len");
        CHECK(gguf_get_arr_data(r, ks) == NULL, "arr_data of a string array is NULL");
        const int64_t kf = gguf_find_key(r, "t.f32");
        const void * vd = gguf_get_val_data(r, kf);
        CHECK(vd != NULL && *(const float *) vd == 0.25f, "val_data");
        struct ggml_tensor * ts[3] = { a, b, c };
        for (int i = 0; i < 3; i++) {
            struct ggml_tensor * t = ggml_get_tensor(rctx, ts[i]->name);
            CHECK(t != NULL && t->type == ts[i]->type && ggml_nbytes(t) == ggml_nbytes(ts[i]) &&
                      memcmp(t->data, ts[i]->data, ggml_nbytes(t)) == 0,
                  "tensor %s round trip", ts[i]->name);
        }
        // gguf_set_kv copies everything, including the alignment.
        struct gguf_context * w2 = gguf_init_empty();
        gguf_set_kv(w2, r);
        CHECK(gguf_get_n_kv(w2) == gguf_get_n_kv(r) && gguf_get_alignment(w2) == 256, "set_kv");
        gguf_set_kv(w2, w2); // self-copy is a no-op
        CHECK(gguf_get_n_kv(w2) == gguf_get_n_kv(r), "set_kv from itself");
        CHECK(gguf_remove_key(w2, gguf_get_key(w2, gguf_find_key(w2, GGUF_KEY_GENERAL_ALIGNMENT))) >= 0 &&
                  gguf_get_alignment(w2) == GGUF_DEFAULT_ALIGNMENT,
              "removing the alignment restores the default");
        gguf_free(w2);
    }
    gguf_free(r);
    ggml_free(rctx);

    // A tensor without data cannot be written with data, only as metadata.
    gguf_set_tensor_data(w, "b", NULL);
    log_reset();
    size_t n2 = 1;
    CHECK(gguf_write_to_buf(w, &n2, false) == NULL && n2 == 0 && g_log_errors == 1, "missing data refused");
    void * mbuf = gguf_write_to_buf(w, &n2, true);
    CHECK(mbuf != NULL && n2 == gguf_get_meta_size(w), "only_meta write");
    gguf_buf_free(mbuf);
    CHECK(!gguf_write_to_file(w, "/nonexistent-dir/x.gguf", true), "write to a bad path fails");

    gguf_buf_free(buf);
    gguf_free(w);
    ggml_free(gctx);
    gguf_free(NULL);
    gguf_buf_free(NULL);
}

static void test_mmap(const char * path) {
    size_t size = 0;
    uint8_t * bytes = read_file(path, &size);
    struct gguf_mmap * m = gguf_mmap_open(path);
    struct gguf_mmap * r = gguf_file_read_all(path);
    CHECK(m != NULL && r != NULL && bytes != NULL, "mmap/read_all of %s", path);
    if (m != NULL && r != NULL && bytes != NULL) {
        CHECK(gguf_mmap_size(m) == size && memcmp(gguf_mmap_addr(m), bytes, size) == 0, "mmap contents");
        CHECK(gguf_mmap_size(r) == size && memcmp(gguf_mmap_addr(r), bytes, size) == 0, "read_all contents");
        CHECK(gguf_mmap_is_mapped(m) && !gguf_mmap_is_mapped(r), "is_mapped");
    }
    gguf_mmap_close(m);
    gguf_mmap_close(r);
    free(bytes);
    log_reset();
    CHECK(gguf_mmap_open("/nonexistent/file.gguf") == NULL && g_log_errors == 1, "mmap of a missing file");
    CHECK(gguf_file_read_all("/nonexistent/file.gguf") == NULL && g_log_errors == 2, "read_all of a missing file");
    CHECK(gguf_mmap_open("/") == NULL, "mmap of a directory");
    CHECK(gguf_init_from_file("/nonexistent/file.gguf", (struct gguf_init_params) { true, NULL }) == NULL, "missing file");
    CHECK(write_file(g_tmp_path, "", 0), "empty temp file");
    m = gguf_mmap_open(g_tmp_path);
    CHECK(m != NULL && gguf_mmap_size(m) == 0, "mmap of an empty file");
    gguf_mmap_close(m);
    gguf_mmap_close(NULL);
}

int main(void) {
    ggml_log_set(log_cb, NULL);
    g_log_echo = getenv("TEST_GGUF_VERBOSE") != NULL;
    make_tmp_path();

    const char * dir = getenv("GGUF_CORPUS_DIR");
    if (dir == NULL) {
        dir = "tests/data/gguf-corpus";
    }
    char path[2048];
    snprintf(path, sizeof(path), "%s/MANIFEST.tsv", dir);
    FILE * mf = fopen(path, "r");
    if (mf == NULL) {
        fprintf(stderr, "cannot open %s (run from the repository root or set GGUF_CORPUS_DIR)\n", path);
        return 1;
    }
    int n_bad = 0, n_ok = 0, n_trunc = 0, n_fuzz_ok = 0;
    char line[1024];
    char first_strict[2048] = "";
    while (fgets(line, sizeof(line), mf) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        char * tab = strchr(line, '\t');
        if (tab == NULL) {
            continue;
        }
        *tab = '\0';
        const char * name = line;
        const char * expect = tab + 1;
        snprintf(path, sizeof(path), "%s/%s.gguf", dir, name);
        size_t size = 0;
        uint8_t * bytes = read_file(path, &size);
        CHECK(bytes != NULL, "cannot read %s", path);
        if (bytes == NULL) {
            continue;
        }
        if (strncmp(name, "bad-", 4) == 0) {
            check_refused(name, path, bytes, size, expect);
            n_bad++;
        } else {
            check_valid(name, path, bytes, size);
            n_ok++;
            if (strncmp(name, "ok-strict-", 10) == 0) {
                n_trunc += check_truncations(name, bytes, size);
                const int iters = getenv("TEST_GGUF_FUZZ") != NULL ? atoi(getenv("TEST_GGUF_FUZZ")) : 3000;
                n_fuzz_ok += fuzz(bytes, size, iters);
                if (first_strict[0] == '\0') {
                    snprintf(first_strict, sizeof(first_strict), "%s", path);
                }
            }
        }
        free(bytes);
    }
    fclose(mf);
    CHECK(n_bad > 0 && n_ok > 0 && n_trunc > 0, "empty corpus");

    test_writer();
    if (first_strict[0] != '\0') {
        test_mmap(first_strict);
    }
    remove(g_tmp_path);
    ggml_log_set(NULL, NULL);

    printf("test_gguf: %d refused files, %d valid files, %d truncations, fuzz accepted %d; %d checks, %d failures\n", n_bad, n_ok,
           n_trunc, n_fuzz_ok, g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
