#!/bin/sh
# Cross-builds tests/c/test_quants_simd.c for aarch64 and runs it under qemu, once on a core
# without the dot-product extension (cortex-a57) and once on one with it (max), so both NEON
# kernel builds in ggml/src/ggml-cpu/quants-neon.c are exercised from an x86 machine.
# Needs: gcc-aarch64-linux-gnu and qemu-user (apt-get install gcc-aarch64-linux-gnu qemu-user).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-aarch64-linux-gnu-gcc}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
S="$ROOT/ggml/src"
# the test needs only the quant formats and the CPU kernel tables (with the portable GEMM table
# they build), plus the two log hooks and two type facts
cat > "$OUT/hooks.c" <<'C'
#include "ggml-impl.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
void ggml_log_internal(enum ggml_log_level level, const char * fmt, ...) {
    va_list ap; va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap); (void) level;
}
// the two type facts gemm-generic.c asks ggml.c for (the test links no graph code)
int64_t ggml_blck_size(enum ggml_type type) { return ggml_get_type_traits(type)->blck_size; }
size_t ggml_type_size(enum ggml_type type) { return ggml_get_type_traits(type)->type_size; }
void ggml_abort(const char * file, int line, const char * message) {
    fprintf(stderr, "%s:%d: %s\n", file, line, message); abort();
}
C
$CC -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Wno-unused-function \
    -static -I"$ROOT/ggml/include" -I"$ROOT/include" -I"$S" \
    "$ROOT/tests/c/test_quants_simd.c" "$S/ggml-quants.c" "$S/ggml-quants-k.c" "$S/ggml-quants-iq.c" "$S/ggml-quants-iq-grids.c" "$S/ggml-quants-iq-search.c" "$S/ggml-types.c" \
    "$S/ggml-cpu/cpu-traits.c" "$S/ggml-cpu/quants-generic.c" "$S/ggml-cpu/quants-iq-generic.c" "$S/ggml-cpu/quants-neon.c" \
    "$S/ggml-cpu/gemm-generic.c" "$S/ggml-env.c" "$OUT/hooks.c" \
    -lm -lpthread -o "$OUT/test_quants_simd"
for cpu in cortex-a57 max; do
    echo "== qemu-aarch64 -cpu $cpu"
    qemu-aarch64 -cpu "$cpu" "$OUT/test_quants_simd"
done
