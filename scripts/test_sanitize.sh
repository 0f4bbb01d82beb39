#!/usr/bin/env bash
# Issue #9's proof: everything under AddressSanitizer + UndefinedBehaviorSanitizer, then the
# fuzzers for a bounded time.
#
#   bash scripts/test_sanitize.sh
#
# Stages:
#   1. build/asan (-DLLAMA_SANITIZE=ON -DLLAMA_BUILD_TESTS=ON) and ctest there: every C test,
#      with test_robustness (issue #9 cases, allocation-failure loop with LeakSanitizer),
#      test_fuzz_replay (fuzz seeds + saved crashes) and test_gguf (the malformed-GGUF corpus);
#   2. tests/test_robustness.py and tests/test_gguf.py against build/asan/libllama.so, with the
#      sanitizer runtimes preloaded into Python (leak detection off: CPython keeps memory on
#      purpose; the C tests check leaks);
#   3. scripts/fuzz.sh: each libFuzzer target for FUZZ_SECONDS (default 60, at most 120 in CI).
# Environment: PYTHON, JOBS (default 2), SANITIZE_BUILD_DIR (default build/asan), FUZZ_BUILD_DIR
# (default build/fuzz), FUZZ_SECONDS, LLAMA_PY_SKIP_FUZZ=1 (skip stage 3),
# LLAMA_PY_SKIP_ASAN_PYTEST=1 (skip stage 2). A missing clang fails stage 3 with the package
# to install (Debian: clang-19 libclang-rt-19-dev), unless LLAMA_PY_SKIP_FUZZ=1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${PYTHON:-$(command -v python3 || command -v python)}"
JOBS="${JOBS:-2}"
BUILD="${SANITIZE_BUILD_DIR:-build/asan}"
stage() { printf '\n==== %s ====\n' "$*"; }
t0=$SECONDS

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

stage "C tests under ASan + UBSan ($BUILD)"
mkdir -p "$(dirname "$BUILD")"
cmake -S . -B "$BUILD" -DLLAMA_SANITIZE=ON -DLLAMA_BUILD_TESTS=ON -DLLAMA_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" -j "$JOBS"
(cd "$BUILD" && ctest --output-on-failure --no-tests=error -j "$JOBS")

if [ "${LLAMA_PY_SKIP_ASAN_PYTEST:-0}" = "1" ]; then
    stage "Python robustness tests under ASan: skipped (LLAMA_PY_SKIP_ASAN_PYTEST=1)"
else
    stage "Python robustness tests against the ASan + UBSan library"
    CC_RT="${CC:-cc}"
    preload="$("$CC_RT" -print-file-name=libasan.so):$("$CC_RT" -print-file-name=libubsan.so)"
    LD_PRELOAD="$preload" ASAN_OPTIONS="detect_leaks=0:abort_on_error=0" \
        LLAMA_PY_LIB="$PWD/$BUILD/libllama.so" \
        "$PY" -m pytest -q -p no:cacheprovider tests/test_robustness.py tests/test_gguf.py
fi

if [ "${LLAMA_PY_SKIP_FUZZ:-0}" = "1" ]; then
    stage "fuzzing skipped (LLAMA_PY_SKIP_FUZZ=1)"
else
    stage "fuzzing (scripts/fuzz.sh, ${FUZZ_SECONDS:-60} s per target)"
    FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-build/fuzz}" bash scripts/fuzz.sh
fi

stage "sanitizer and fuzzing stages passed in $((SECONDS - t0)) s"
