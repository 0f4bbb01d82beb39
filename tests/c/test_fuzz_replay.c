// test_fuzz_replay.c — replays every fuzzing seed (fuzz/corpus/<target>/) and every saved
// crash (fuzz/regressions/<target>/) through the libFuzzer targets, compiled here with
// the project's own compiler, so ctest (and its ASan + UBSan build) keeps them fixed without
// clang. Inputs of bugs not fixed yet (fuzz/open/<target>/) run in a child process each and
// are reported, not failed; one that passes is announced so that it moves to regressions/.
// Runs from the repository root (ctest's working directory).
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkstemp, opendir under strict C11
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// The four targets in one program: each entry point renamed.
#define LLVMFuzzerInitialize   fuzz_gguf_init
#define LLVMFuzzerTestOneInput fuzz_gguf_one
#include "../../fuzz/fuzz_gguf.c"
#undef LLVMFuzzerInitialize
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerInitialize   fuzz_tokenizer_init
#define LLVMFuzzerTestOneInput fuzz_tokenizer_one
#include "../../fuzz/fuzz_tokenizer.c"
#undef LLVMFuzzerInitialize
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerInitialize   fuzz_batch_init
#define LLVMFuzzerTestOneInput fuzz_batch_one
#include "../../fuzz/fuzz_batch.c"
#undef LLVMFuzzerInitialize
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerInitialize   fuzz_model_init
#define LLVMFuzzerTestOneInput fuzz_model_one
#include "../../fuzz/fuzz_model.c"
#undef LLVMFuzzerInitialize
#undef LLVMFuzzerTestOneInput

typedef int (*fuzz_one_fn)(const uint8_t * data, size_t size);

// Reads a whole file (NULL if it cannot); *size receives its length.
static uint8_t * read_all(const char * path, size_t * size) {
    FILE * f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t * buf = malloc(n > 0 ? (size_t) n : 1);
    *size = n > 0 ? fread(buf, 1, (size_t) n, f) : 0;
    fclose(f);
    return buf;
}

// Runs fn on every regular file of dir; returns the number of files (-1: no such folder).
// isolated: each input in a child process, whose failure is reported instead of fatal.
static int replay_dir(const char * dir, fuzz_one_fn fn, bool isolated) {
    DIR * d = opendir(dir);
    if (d == NULL) {
        return -1;
    }
    int n = 0;
    struct dirent * e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        size_t size = 0;
        uint8_t * buf = read_all(path, &size);
        if (buf == NULL) {
            continue;
        }
        if (!isolated) {
            fn(buf, size); // a failure aborts (and names itself on stderr)
        } else {
            fflush(NULL);
            const pid_t pid = fork();
            if (pid == 0) {
                freopen("/dev/null", "w", stderr);
                fn(buf, size);
                _exit(0);
            }
            int st = 0;
            waitpid(pid, &st, 0);
            const bool ok = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
#if defined(__SANITIZE_ADDRESS__)
            const char * passes = "PASSES NOW: the bug looks fixed; move the file to fuzz/regressions/";
#else
            const char * passes = "passes in this build (no sanitizers: undefined behaviour goes unseen; see the ASan build)";
#endif
            printf("    %s: %s\n", path, ok ? passes : "still fails (open bug, see fuzz/open/README.md)");
        }
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

static int replay(const char * target, fuzz_one_fn fn) {
    char dir[256];
    int total = 0;
    const char * kinds[3] = { "corpus", "regressions", "open" };
    for (int k = 0; k < 3; k++) {
        snprintf(dir, sizeof(dir), "fuzz/%s/%s", kinds[k], target);
        const int n = replay_dir(dir, fn, k == 2);
        if (n < 0 && k == 0) {
            fprintf(stderr, "test_fuzz_replay: %s not found (run from the repository root)\n", dir);
            exit(1);
        }
        printf("  %-10s %-12s %d input(s)\n", target, kinds[k], n < 0 ? 0 : n);
        total += n < 0 ? 0 : n;
    }
    return total;
}

int main(void) {
    int argc = 0;
    char ** argv = NULL;
    int total = 0;
    fuzz_gguf_init(&argc, &argv);
    total += replay("gguf", fuzz_gguf_one);

    struct stat st;
    const char * vdir = getenv("LLAMA_FUZZ_VOCAB_DIR") ? getenv("LLAMA_FUZZ_VOCAB_DIR") : "../shared/vocab";
    if (stat(vdir, &st) == 0) {
        fuzz_tokenizer_init(&argc, &argv);
        total += replay("tokenizer", fuzz_tokenizer_one);
        for (int i = 0; i < g_n; i++) {
            llama_model_free(g_models[i]);
        }
    } else {
        // scripts/test.sh points LLAMA_FUZZ_VOCAB_DIR at llama_py.pull_vocab's folder; CI
        // (LLAMA_PY_REQUIRE_RESOURCES=1) must not pass by leaving the tokenizer out.
        const char * req = getenv("LLAMA_PY_REQUIRE_RESOURCES");
        if (req != NULL && req[0] != '\0' && strcmp(req, "0") != 0) {
            fprintf(stderr, "test_fuzz_replay: no vocabulary folder (%s) and LLAMA_PY_REQUIRE_RESOURCES=%s\n", vdir, req);
            return 1;
        }
        printf("  tokenizer: no vocabulary folder (%s): not replayed (set LLAMA_FUZZ_VOCAB_DIR)\n", vdir);
    }

    fuzz_batch_init(&argc, &argv);
    total += replay("batch", fuzz_batch_one);
    llama_free(g_b_ctx[0]);
    llama_free(g_b_ctx[1]);
    llama_model_free(g_b_model);

    fuzz_model_init(&argc, &argv);
    total += replay("model", fuzz_model_one);
    close(g_m_fd);

    printf("test_fuzz_replay: %d inputs replayed, no failure\n", total);
    return 0;
}
