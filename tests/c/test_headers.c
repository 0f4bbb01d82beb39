// test_headers.c — every public header compiles on its own under strict C11 (-Wall -Wextra
// -Werror), and the struct layouts this compiler sees match what the library reports.
#include "ggml.h"
#include "gguf.h"
#include "ggml-mem.h"
#include "llama.h"
#if defined(__has_include)
#if __has_include("ggml-backend.h")
#include "ggml-backend.h"
#endif
#endif

#include <stddef.h>
#include <stdio.h>

static int n_fail = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            n_fail++;                                                                \
        }                                                                            \
    } while (0)

int main(void) {
    CHECK(ggml_abi_version() == GGML_ABI_VERSION);
    CHECK(ggml_abi_struct_size("ggml_tensor") == sizeof(struct ggml_tensor));
    CHECK(ggml_abi_struct_size("ggml_init_params") == sizeof(struct ggml_init_params));
    CHECK(ggml_abi_struct_size("gguf_init_params") == sizeof(struct gguf_init_params));
    CHECK(ggml_abi_field_offset("ggml_tensor", "data") == offsetof(struct ggml_tensor, data));
    CHECK(ggml_abi_field_offset("ggml_tensor", "name") == offsetof(struct ggml_tensor, name));
    CHECK(ggml_abi_field_offset("gguf_init_params", "ctx") == offsetof(struct gguf_init_params, ctx));
    if (n_fail) {
        fprintf(stderr, "test_headers: %d check(s) failed\n", n_fail);
        return 1;
    }
    printf("test_headers: ok\n");
    return 0;
}
