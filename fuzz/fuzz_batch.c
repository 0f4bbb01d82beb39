// fuzz_batch.c — libFuzzer target: llama_decode with arbitrary llama_batch contents, mixed
// with the llama_memory_* operations and the output getters, on a tiny random-weight model.
//
// The input is a little program (decodes, memory operations, output getters, state saved,
// corrupted and restored): byte 0 picks one of two contexts (F16 cache without flash
// attention, Q8_0/F16 cache with it), the cache is cleared, then each op byte runs one call
// with arguments drawn from the following bytes. Checked after every call:
//   - a decode that does not return 0 leaves every sequence's [pos_min, pos_max] unchanged;
//   - a decode of token ids that returns 0 gives finite logits for every output row, unless
//     non-finite embeddings went into the cache earlier in the same input and no
//     llama_memory_clear came since (a cleared cache must not remember them);
//   - pos_min <= pos_max for every sequence (both -1 when it is empty);
//   - the getters answer NULL or a row inside the outputs (ASan checks the read).
// Array sizes always match the counts the batch claims when those counts are plausible; an
// absurd count gets a one-row array, which the library must refuse before reading past it.
//
// Model: $LLAMA_FUZZ_MODEL if set, else the tiny model of tiny_model.h written to a temporary
// file at start-up (2 layers, d 64, 2 heads / 1 KV head, 283 tokens).
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkstemp, opendir under strict C11
#endif
#include "fuzz_common.h"
#include "llama.h"
#include "tiny_model.h"

#include <unistd.h>

#include <math.h>

#define N_CTX    64
#define N_BATCH  32
#define N_UBATCH 8
#define N_SEQ    4
#define MAX_OPS  12

static struct llama_model * g_b_model;
static struct llama_context * g_b_ctx[2];
static int32_t g_b_n_vocab, g_b_n_embd;

int LLVMFuzzerInitialize(int * argc, char *** argv) {
    (void) argc;
    (void) argv;
    fuzz_quiet_library();
    const char * path = getenv("LLAMA_FUZZ_MODEL");
    char tmp[] = "/tmp/fuzz-batch-model-XXXXXX";
    if (path == NULL) {
        const int fd = mkstemp(tmp);
        if (fd < 0 || close(fd) != 0 || !tiny_model_write(tmp)) {
            fprintf(stderr, "fuzz_batch: cannot write the tiny model to %s\n", tmp);
            exit(1);
        }
        path = tmp;
    }
    g_b_model = llama_model_load_from_file(path, llama_model_default_params());
    if (path == tmp) {
        unlink(tmp); // the mapping stays valid
    }
    if (g_b_model == NULL) {
        fprintf(stderr, "fuzz_batch: cannot load %s\n", path);
        exit(1);
    }
    g_b_n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(g_b_model));
    g_b_n_embd = llama_model_n_embd(g_b_model);
    for (int i = 0; i < 2; i++) {
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = N_CTX;
        cp.n_batch = N_BATCH;
        cp.n_ubatch = N_UBATCH;
        cp.n_seq_max = N_SEQ;
        cp.n_threads = cp.n_threads_batch = 1;
        cp.flash_attn_type = i == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_ENABLED;
        cp.type_k = i == 0 ? GGML_TYPE_F16 : GGML_TYPE_Q8_0;
        cp.embeddings = i == 1;
        g_b_ctx[i] = llama_init_from_model(g_b_model, cp);
        if (g_b_ctx[i] == NULL) {
            fprintf(stderr, "fuzz_batch: cannot create context %d\n", i);
            exit(1);
        }
    }
    return 0;
}

struct seq_range {
    llama_pos lo[N_SEQ], hi[N_SEQ];
};

static void snapshot(llama_memory_t mem, struct seq_range * r) {
    for (int s = 0; s < N_SEQ; s++) {
        r->lo[s] = llama_memory_seq_pos_min(mem, s);
        r->hi[s] = llama_memory_seq_pos_max(mem, s);
        if ((r->lo[s] < 0) != (r->hi[s] < 0) || r->lo[s] > r->hi[s]) {
            fprintf(stderr, "fuzz_batch: sequence %d has pos_min %d, pos_max %d\n", s, r->lo[s], r->hi[s]);
            abort();
        }
    }
}

volatile float fuzz_b_sink;
static bool g_b_poisoned; // NaN/inf embeddings were decoded since the last llama_memory_clear
static int g_b_trace = -1; // $FUZZ_TRACE: print each call (to read a crash input)

#define TRACE(...)                                   \
    do {                                             \
        if (g_b_trace) fprintf(stderr, __VA_ARGS__); \
    } while (0)

static void op_decode(struct llama_context * ctx, struct fuzz_reader * r) {
    const uint8_t flags = fuzz_u8(r);
    const int32_t n_claim = fuzz_i32_near(r, 1, N_BATCH + 1);
    const bool plausible = n_claim >= 1 && n_claim <= 2 * N_BATCH;
    const int32_t n = plausible ? n_claim : 1;          // rows actually allocated

    llama_token * token = malloc(sizeof(llama_token) * (size_t) n);
    float * embd = malloc(sizeof(float) * (size_t) n * (size_t) g_b_n_embd);
    llama_pos * pos = malloc(sizeof(llama_pos) * (size_t) n);
    int32_t * n_seq_id = malloc(sizeof(int32_t) * (size_t) n);
    llama_seq_id ** seq_id = calloc((size_t) n, sizeof(llama_seq_id *));
    int8_t * logits = malloc((size_t) n);

    const bool sequential = flags & 32;                 // positions base, base+1, ... (mostly valid)
    const llama_pos base = fuzz_i32_near(r, 0, N_CTX);
    const float special[4] = { NAN, INFINITY, -INFINITY, 1e30f };
    for (int32_t i = 0; i < n; i++) {
        token[i] = fuzz_i32_near(r, 0, g_b_n_vocab);
        pos[i] = sequential ? (llama_pos) ((int64_t) base + i) : fuzz_i32_near(r, 0, N_CTX);
        const uint8_t b = fuzz_u8(r);
        n_seq_id[i] = (b & 3) == 3 ? fuzz_i32_near(r, 1, N_SEQ + 1) : 1 + (b & 3) % 2;
        const int32_t k = n_seq_id[i] >= 1 && n_seq_id[i] <= 8 ? n_seq_id[i] : 1;
        seq_id[i] = malloc(sizeof(llama_seq_id) * (size_t) k);
        for (int32_t j = 0; j < k; j++) {
            seq_id[i][j] = (b & 12) == 12 ? fuzz_i32_near(r, 0, N_SEQ) : (llama_seq_id) ((b >> 4) + j) % N_SEQ;
        }
        logits[i] = (int8_t) (b >> 7);
        for (int32_t e = 0; e < g_b_n_embd; e++) {
            embd[(size_t) i * g_b_n_embd + e] = (float) ((b * 31 + e * 7) % 17 - 8) * 0.125f;
        }
        if ((b & 0x70) == 0x70) {
            embd[(size_t) i * g_b_n_embd] = special[b & 3];
            g_b_poisoned |= (flags & 3) == 3; // embd alone reaches the cache
        }
    }

    struct llama_batch batch = {
        .n_tokens = n_claim,
        .token = (flags & 1) ? NULL : token,
        .embd = (flags & 2) ? embd : NULL,
        .pos = (flags & 4) ? NULL : pos,
        .n_seq_id = (flags & 8) ? NULL : n_seq_id,
        .seq_id = (flags & 8) ? NULL : seq_id,
        .logits = (flags & 16) ? NULL : logits,
    };
    llama_memory_t mem = llama_get_memory(ctx);
    struct seq_range before, after;
    snapshot(mem, &before);
    const int32_t rc = llama_decode(ctx, batch);
    if (g_b_trace) {
        TRACE("decode n_tokens=%d%s%s%s%s%s ->", n_claim, batch.token ? " token" : "", batch.embd ? " embd" : "",
              batch.pos ? "" : " pos=NULL", batch.seq_id ? "" : " seq=NULL", batch.logits ? "" : " logits=NULL");
        TRACE(" %d\n", rc);
        for (int32_t i = 0; i < n && n_claim == n; i++) {
            TRACE("   row %d: tok %d pos %d out %d seq", i, token[i], pos[i], logits[i]);
            for (int32_t j = 0; j < (n_seq_id[i] >= 1 && n_seq_id[i] <= 8 ? n_seq_id[i] : 1); j++) TRACE(" %d", seq_id[i][j]);
            TRACE(" (n_seq_id %d)\n", n_seq_id[i]);
        }
    }
    snapshot(mem, &after);
    if (rc != 0 && memcmp(&before, &after, sizeof(before)) != 0) {
        fprintf(stderr, "fuzz_batch: llama_decode returned %d but changed the cache\n", rc);
        abort();
    }
    if (rc == 0 && batch.token != NULL && !g_b_poisoned) {
        for (int32_t i = 0; i < n_claim; i++) {
            const bool out = batch.logits ? batch.logits[i] != 0 : i == n_claim - 1;
            const float * row = llama_get_logits_ith(ctx, i);
            if (out != (row != NULL)) {
                fprintf(stderr, "fuzz_batch: row %d output flag %d but logits %p\n", i, out, (const void *) row);
                abort();
            }
            for (int32_t t = 0; row != NULL && t < g_b_n_vocab; t++) {
                if (!isfinite(row[t])) {
                    fprintf(stderr, "fuzz_batch: logit [%d][%d] = %f\n", i, t, row[t]);
                    abort();
                }
            }
        }
    }
    if (rc != 0 && llama_get_logits(ctx) != NULL) {
        fprintf(stderr, "fuzz_batch: llama_get_logits is not NULL after a failed decode\n");
        abort();
    }
    for (int32_t i = 0; i < n; i++) {
        free(seq_id[i]);
    }
    free(token);
    free(embd);
    free(pos);
    free(n_seq_id);
    free(seq_id);
    free(logits);
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    struct fuzz_reader r = { data, size };
    if (g_b_trace < 0) {
        g_b_trace = getenv("FUZZ_TRACE") != NULL;
    }
    const int ci = fuzz_u8(&r) & 1;
    struct llama_context * ctx = g_b_ctx[ci];
    TRACE("context %d\n", ci);
    llama_memory_t mem = llama_get_memory(ctx);
    // Each input starts from an empty, zeroed cache, so that it replays alone.
    llama_memory_clear(mem, true);
    g_b_poisoned = false;
    struct seq_range s;
    for (int op = 0; op < MAX_OPS && r.n > 0; op++) {
        const uint8_t code = fuzz_u8(&r);
        const llama_seq_id sa = fuzz_i32_near(&r, -1, N_SEQ);
        switch (code % 14) {
            case 0:
            case 1:
            case 2:
            case 3:
            case 4: op_decode(ctx, &r); break;
            case 5: {
                const llama_pos p0 = fuzz_i32_near(&r, -1, N_CTX), p1 = fuzz_i32_near(&r, -1, N_CTX);
                TRACE("seq_rm(%d, %d, %d)\n", sa, p0, p1);
                llama_memory_seq_rm(mem, sa, p0, p1);
                break;
            }
            case 6: {
                const llama_seq_id dst = fuzz_i32_near(&r, 0, N_SEQ);
                const llama_pos p0 = fuzz_i32_near(&r, -1, N_CTX), p1 = fuzz_i32_near(&r, -1, N_CTX);
                TRACE("seq_cp(%d, %d, %d, %d)\n", sa, dst, p0, p1);
                llama_memory_seq_cp(mem, sa, dst, p0, p1);
                break;
            }
            case 7:
                TRACE("seq_keep(%d)\n", sa);
                llama_memory_seq_keep(mem, sa);
                break;
            case 8: {
                const llama_pos p0 = fuzz_i32_near(&r, -1, N_CTX), p1 = fuzz_i32_near(&r, -1, N_CTX);
                const llama_pos delta = fuzz_i32_near(&r, -N_CTX, N_CTX);
                TRACE("seq_add(%d, %d, %d, %d)\n", sa, p0, p1, delta);
                llama_memory_seq_add(mem, sa, p0, p1, delta);
                break;
            }
            case 9: {
                const llama_pos p0 = fuzz_i32_near(&r, -1, N_CTX), p1 = fuzz_i32_near(&r, -1, N_CTX);
                const int d = fuzz_i32_near(&r, -1, 5);
                TRACE("seq_div(%d, %d, %d, %d)\n", sa, p0, p1, d);
                llama_memory_seq_div(mem, sa, p0, p1, d);
                break;
            }
            case 10: {
                const int32_t i = fuzz_i32_near(&r, -N_BATCH, N_BATCH);
                TRACE("get outputs (%d, seq %d)\n", i, sa);
                const float * l = llama_get_logits_ith(ctx, i);
                const float * e = llama_get_embeddings_ith(ctx, i);
                const float * es = llama_get_embeddings_seq(ctx, sa);
                fuzz_b_sink = (l ? l[g_b_n_vocab - 1] : 0.0f) + (e ? e[g_b_n_embd - 1] : 0.0f) + (es ? es[0] : 0.0f);
                break;
            }
            case 12:
            case 13: {
                // A saved state with some bytes flipped, restored: state.c parses it as untrusted.
                const bool seq = code % 14 == 13;
                const llama_seq_id s_dst = seq ? fuzz_i32_near(&r, 0, N_SEQ) : 0;
                const size_t n = seq ? llama_state_seq_get_size(ctx, sa) : llama_state_get_size(ctx);
                uint8_t * st = n > 0 && n < (16u << 20) ? malloc(n) : NULL;
                if (st == NULL) {
                    break;
                }
                const size_t got = seq ? llama_state_seq_get_data(ctx, st, n, sa) : llama_state_get_data(ctx, st, n);
                const int flips = fuzz_u8(&r) % 8;
                for (int f = 0; f < flips && got > 0; f++) {
                    const size_t at = fuzz_u32(&r) % got;
                    st[at] ^= fuzz_u8(&r) | 1;
                }
                const size_t len = (size_t) fuzz_u16(&r) % 4 == 0 ? got / 2 : got; // sometimes truncated
                TRACE("state_%sset_data(%zu of %zu bytes, %d flips%s)\n", seq ? "seq_" : "", len, got, flips, seq ? "" : "");
                const size_t used = seq ? llama_state_seq_set_data(ctx, st, len, s_dst) : llama_state_set_data(ctx, st, len);
                if (used > len) {
                    fprintf(stderr, "fuzz_batch: state set_data read %zu of %zu bytes\n", used, len);
                    abort();
                }
                free(st);
                break;
            }
            case 11:
                TRACE("clear(data=%d)\n", code >> 7);
                llama_memory_clear(mem, code & 0x80);
                g_b_poisoned = false;
                break;
        }
        snapshot(mem, &s);
    }
    return 0;
}
