#!/bin/sh
# The NEON kernel sets checked from an x86 machine: cross-builds the library and the C tests that
# exercise the kernels (cmake/aarch64-linux-gnu.cmake) and runs them under qemu-aarch64, on a core
# without the dot-product extension (cortex-a57) and on one with it (max), so both builds of the
# NEON kernels (quants-neon.c, gemm-neon.c: with and without sdot) are tested.
#   test_quants_simd: every type's NEON dot against the portable one (the IQ types: same bits)
#   test_gemm: the NEON tiles against the portable one; stored and repacked weights, a batch and
#              one column give the same bits
#   test_ops, test_ops_moe: the ops on the NEON set (max only: they reach the kernels above)
# Needs cmake, gcc-aarch64-linux-gnu and qemu-user (Debian: apt-get install gcc-aarch64-linux-gnu
# qemu-user). Environment: JOBS (default 2), LLAMA_NEON_BUILD (build folder, default build/arm64).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LLAMA_NEON_BUILD:-$ROOT/build/arm64}
JOBS=${JOBS:-2}
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_CUDA=OFF > "$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$JOBS" --target test_quants_simd test_gemm test_ops test_ops_moe
cd "$ROOT" # the tests' working directory, as ctest's
run() { # cpu test: its last lines, or all of its output when it fails
    echo "== qemu-aarch64 -cpu $1 $2"
    log="$BUILD/$2.$1.log"
    if qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "$1" "$BUILD/$2" > "$log" 2>&1; then
        tail -n 2 "$log"
    else
        cat "$log"
        echo "$2 failed under qemu-aarch64 -cpu $1" >&2
        exit 1
    fi
}
for cpu in cortex-a57 max; do
    run "$cpu" test_quants_simd
    run "$cpu" test_gemm
done
run max test_ops
run max test_ops_moe
