// bench_load.c — load time and peak resident memory of a model through llama.h: load, create a
// 512-token context, decode one token. The same source builds against this project's llama.h
// or llama.cpp's, so the two can be compared on the same GGUF file:
//
//   cc -O2 scripts/bench_load.c -Iggml/include -Lbuild -lllama -Wl,-rpath,$PWD/build -o load_ours
//   cc -O2 scripts/bench_load.c -I$LCPP/include -I$LCPP/ggml/include -L$LCPP_BUILD/bin
//      -lllama -lggml -lggml-base -Wl,-rpath,$LCPP_BUILD/bin -o load_llamacpp     (one line)
//   ./load_ours model.gguf; ./load_llamacpp model.gguf      (run each a few times: page cache)
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

// Current resident set in KiB (Linux /proc), 0 if unknown.
static long bench_rss_kib(void) {
    FILE * f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "VmRSS: %ld", &v) == 1) break;
    }
    if (f) fclose(f);
    return v;
}

static void bench_quiet(enum ggml_log_level level, const char * text, void * user) {
    (void) level;
    (void) text;
    (void) user;
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s model.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(bench_quiet, NULL);
    llama_backend_init();
    const double t0 = bench_now();
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const double t1 = bench_now();
    const long rss_model = bench_rss_kib();
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    const double t2 = bench_now();
    llama_token tok = 1;
    const int rc = ctx ? llama_decode(ctx, llama_batch_get_one(&tok, 1)) : -1;
    const double t3 = bench_now();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("load %.3f s, context %.3f s, first decode %.3f s (rc %d); RSS after load %ld MiB, peak %ld MiB\n", t1 - t0, t2 - t1,
           t3 - t2, rc, rss_model / 1024, ru.ru_maxrss / 1024);
    llama_free(ctx);
    llama_model_free(model);
    return rc == 0 ? 0 : 1;
}
