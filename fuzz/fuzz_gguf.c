// fuzz_gguf.c — libFuzzer target: gguf_init_from_buffer on arbitrary bytes.
//
// Every input must either be refused (NULL, with a logged reason) or parse into a context whose
// every getter answers within bounds; a parsed file is written back out and must parse again
// with the same keys and tensors (the writer and the reader agree).
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkstemp, opendir under strict C11
#endif
#include "fuzz_common.h"
#include "gguf.h"

int LLVMFuzzerInitialize(int * argc, char *** argv) {
    (void) argc;
    (void) argv;
    fuzz_quiet_library();
    return 0;
}

// Reads every key, value and tensor through the public getters (ASan checks each access).
static size_t walk(const struct gguf_context * g) {
    size_t sum = gguf_get_version(g) + gguf_get_alignment(g) + gguf_get_data_offset(g);
    const int64_t n_kv = gguf_get_n_kv(g);
    for (int64_t i = 0; i < n_kv; i++) {
        const char * key = gguf_get_key(g, i);
        if (key == NULL || gguf_find_key(g, key) < 0) {
            abort(); // a listed key must be found by name
        }
        sum += strlen(key);
        const enum gguf_type t = gguf_get_kv_type(g, i);
        sum += strlen(gguf_type_name(t));
        if (t == GGUF_TYPE_ARRAY) {
            const enum gguf_type at = gguf_get_arr_type(g, i);
            const size_t n = gguf_get_arr_n(g, i);
            if (at == GGUF_TYPE_STRING) {
                for (size_t j = 0; j < n && j < 4096; j++) {
                    const char * s = gguf_get_arr_str(g, i, j);
                    sum += s ? strlen(s) : 0;
                }
                sum += gguf_get_arr_str(g, i, n) != NULL; // one past the end: NULL
            } else {
                const uint8_t * d = gguf_get_arr_data(g, i);
                if (d != NULL && n > 0) {
                    sum += d[0]; // first element readable
                }
            }
        } else if (t == GGUF_TYPE_STRING) {
            const char * s = gguf_get_val_str(g, i);
            sum += s ? strlen(s) : 0;
        } else {
            sum += gguf_get_val_data(g, i) != NULL;
            sum += gguf_get_val_u8(g, i) + (size_t) gguf_get_val_u32(g, i) + (size_t) gguf_get_val_i64(g, i);
        }
    }
    sum += gguf_get_key(g, n_kv) != NULL;      // out of range: NULL
    sum += gguf_get_val_u32(g, -1);            // out of range: 0
    const int64_t n_t = gguf_get_n_tensors(g);
    for (int64_t i = 0; i < n_t; i++) {
        const char * name = gguf_get_tensor_name(g, i);
        if (name == NULL || gguf_find_tensor(g, name) < 0) {
            abort();
        }
        sum += gguf_get_tensor_offset(g, i) + gguf_get_tensor_size(g, i) + (size_t) gguf_get_tensor_type(g, i);
        const int nd = gguf_get_tensor_n_dims(g, i);
        for (int d = 0; d < nd; d++) {
            sum += (size_t) gguf_get_tensor_ne(g, i, d);
        }
    }
    sum += gguf_get_tensor_name(g, n_t) != NULL;
    return sum;
}

// Sums the bytes of every tensor of a loaded metadata context (their data must be readable).
static size_t touch_tensors(struct ggml_context * meta) {
    size_t sum = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(meta); t != NULL; t = ggml_get_next_tensor(meta, t)) {
        const size_t nb = ggml_nbytes(t);
        const uint8_t * d = t->data;
        if (d != NULL && nb > 0) {
            sum += d[0] + d[nb - 1];
        }
    }
    return sum;
}

volatile size_t fuzz_g_sink;

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    // 1. metadata only
    struct gguf_context * g = gguf_init_from_buffer(data, size, (struct gguf_init_params) { .no_alloc = true, .ctx = NULL });
    if (g == NULL) {
        return 0;
    }
    fuzz_g_sink = walk(g);
    const int64_t n_kv = gguf_get_n_kv(g), n_t = gguf_get_n_tensors(g);

    // 2. written back out and parsed again: same shape
    size_t out_size = 0;
    void * out = gguf_write_to_buf(g, &out_size, true);
    if (out != NULL) {
        struct gguf_context * g2 =
            gguf_init_from_buffer(out, out_size, (struct gguf_init_params) { .no_alloc = true, .ctx = NULL });
        if (g2 != NULL) {
            if (gguf_get_n_kv(g2) != n_kv || gguf_get_n_tensors(g2) != n_t) {
                fprintf(stderr, "fuzz_gguf: round trip changed the file: %lld kv / %lld tensors -> %lld / %lld\n",
                        (long long) n_kv, (long long) n_t, (long long) gguf_get_n_kv(g2), (long long) gguf_get_n_tensors(g2));
                abort();
            }
            fuzz_g_sink += walk(g2);
            gguf_free(g2);
        }
        gguf_buf_free(out);
    }
    gguf_free(g);

    // 3. with tensors loaded into a ggml context (the data section is bounds-checked)
    struct ggml_context * meta = NULL;
    g = gguf_init_from_buffer(data, size, (struct gguf_init_params) { .no_alloc = false, .ctx = &meta });
    if (g != NULL) {
        if (meta == NULL && n_t > 0) {
            abort(); // success promised a context holding the tensors
        }
        fuzz_g_sink += touch_tensors(meta);
        gguf_free(g);
    }
    ggml_free(meta);
    return 0;
}
