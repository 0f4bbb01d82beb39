#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/fuzz_*.c: gguf, tokenizer, batch, model) with clang -fsanitize=fuzzer,address,undefined
# against the whole library, replays every saved regression input, then fuzzes each target
# for a bounded time and prints the executions per target.
#
#   bash scripts/fuzz.sh                      # all targets, FUZZ_SECONDS each (default 60)
#   FUZZ_SECONDS=10 bash scripts/fuzz.sh gguf # one target
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 60; capped at 120 when CI is set)
#   FUZZ_BUILD_DIR build folder (default build/fuzz)
#   FUZZ_JOBS      compile jobs (default 2)
#   CLANG          the compiler (default: the newest clang-NN found, else clang; 15 or newer)
#   LLAMA_FUZZ_VOCAB_DIR  vocab-only GGUFs for the tokenizer target (default: the folder
#                  `python -m llama_py.pull_vocab` finds or fetches once into the user cache)
#   PYTHON         the Python that runs llama_py.pull_vocab (default python3)
#
# Corpora: fuzz/corpus/<target>/ (seeds kept in the repository, read-only here); new inputs
# found go to $FUZZ_BUILD_DIR/corpus/<target>/. A crash leaves its input in
# $FUZZ_BUILD_DIR/crashes/<target>/ and fails the script; minimize it with
#   $FUZZ_BUILD_DIR/fuzz_<target> -minimize_crash=1 -runs=20000 -exact_artifact_path=fuzz/regressions/<target>/NAME CRASHFILE
# and commit it: every file in fuzz/regressions/<target>/ is replayed by this script and, without
# clang, by the ctest tests/c/test_fuzz_replay.c.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS_PER="${FUZZ_SECONDS:-60}"
if [ -n "${CI:-}" ] && [ "$SECONDS_PER" -gt 120 ]; then
    SECONDS_PER=120
fi
BUILD="${FUZZ_BUILD_DIR:-build/fuzz}"
JOBS="${FUZZ_JOBS:-2}"
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(gguf tokenizer batch model)
fi

find_clang() {
    if [ -n "${CLANG:-}" ]; then echo "$CLANG"; return; fi
    # Newest first: clang 14 lacks __builtin_cpu_supports("f16c"), which cpu-traits.c uses.
    for v in 22 21 20 19 18 17 16 15; do
        if command -v "clang-$v" >/dev/null; then echo "clang-$v"; return; fi
    done
    if command -v clang >/dev/null; then echo clang; return; fi
    echo "fuzz.sh: clang not found (Debian: apt-get install clang-19 libclang-rt-19-dev)" >&2
    exit 2
}
CC_FUZZ="$(find_clang)"

if [ -z "${LLAMA_FUZZ_VOCAB_DIR:-}" ] && [[ " ${TARGETS[*]} " == *" tokenizer "* ]]; then
    PY="${PYTHON:-$(command -v python3 || command -v python)}"
    LLAMA_FUZZ_VOCAB_DIR="$(PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m llama_py.pull_vocab)" \
        || { echo "fuzz.sh: no vocabularies for the tokenizer target (set LLAMA_FUZZ_VOCAB_DIR)" >&2; exit 1; }
    export LLAMA_FUZZ_VOCAB_DIR
fi
echo "fuzz.sh: $($CC_FUZZ --version | head -n1), $SECONDS_PER s per target, build in $BUILD"

# The library, instrumented for coverage (fuzzer-no-link) and checked by ASan + UBSan.
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
mkdir -p "$BUILD"
cmake -S . -B "$BUILD/lib" -DLLAMA_CUDA=OFF -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DLLAMA_BUILD_TESTS=ON -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link $SAN" > "$BUILD/configure.log" 2>&1 \
    || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD/lib" --target llama_static -j "$JOBS" > "$BUILD/build.log" 2>&1 \
    || { tail -n 50 "$BUILD/build.log"; exit 1; }

for t in "${TARGETS[@]}"; do
    "$CC_FUZZ" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer $SAN -Wall -Wextra -Werror -Wno-unused-function \
        -Iggml/include -Iinclude -Iggml/src -Isrc -Ifuzz "fuzz/fuzz_$t.c" "$BUILD/lib/libllama_static.a" \
        -lpthread -lm -o "$BUILD/fuzz_$t"
done

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
summary=()
for t in "${TARGETS[@]}"; do
    bin="$BUILD/fuzz_$t"
    # 1. saved crashes must stay fixed
    regs=(fuzz/regressions/"$t"/*)
    if [ -e "${regs[0]}" ]; then
        echo "fuzz.sh: replaying ${#regs[@]} regression input(s) of $t"
        "$bin" -runs=1 "${regs[@]}" > "$BUILD/replay_$t.log" 2>&1 \
            || { tail -n 40 "$BUILD/replay_$t.log"; echo "fuzz.sh: $t regression replay FAILED" >&2; status=1; }
    fi
    # 2. a bounded fuzzing run
    mkdir -p "$BUILD/corpus/$t" "$BUILD/crashes/$t"
    log="$BUILD/fuzz_$t.log"
    set +e
    max_len=4096
    [ "$t" = model ] && max_len=16384  # the seeds are whole (tiny) models
    "$bin" -max_total_time="$SECONDS_PER" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -max_len="$max_len" -artifact_prefix="$BUILD/crashes/$t/" \
        "$BUILD/corpus/$t" "fuzz/corpus/$t" > "$log" 2>&1
    rc=$?
    set -e
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)"
    cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | tr -d 'cov: ')"
    if [ "$rc" -ne 0 ]; then
        tail -n 60 "$log"
        echo "fuzz.sh: $t FOUND A CRASH (exit $rc); input in $BUILD/crashes/$t/" >&2
        # A new find is printed whole (base64) so CI's log carries it; under CI it does not
        # fail the run (a bounded random search must not decide whether a submission lands),
        # while saved regressions above always do. FUZZ_FINDS_FATAL=1 makes finds fatal.
        for f in "$BUILD/crashes/$t"/*; do
            [ -f "$f" ] && { echo "fuzz.sh: $(basename "$f") (base64):"; base64 -w0 "$f"; echo; }
        done
        if [ -z "${CI:-}" ] || [ "${FUZZ_FINDS_FATAL:-0}" = "1" ]; then status=1; fi
        summary+=("$(printf '%-10s %10s executions  %6s edges  CRASH' "$t" "${execs:-?}" "${cov:-?}")")
    else
        summary+=("$(printf '%-10s %10s executions  %6s edges  ok' "$t" "${execs:-?}" "${cov:-?}")")
    fi
done
echo
echo "fuzz.sh: ${SECONDS_PER} s per target"
printf '  %s\n' "${summary[@]}"
exit $status
