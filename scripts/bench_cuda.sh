#!/usr/bin/env bash
# bench_cuda.sh — the one prepared run of the CUDA backend on a GPU machine: build, tests,
# benchmark against llama.cpp (GGML_CUDA=ON, from the llama-cpp-python 0.3.36 sdist). Every
# result goes under $OUT (default build/bench-cuda-out).
#
#   bash scripts/bench_cuda.sh prepare   # here, with network, no GPU: fills build/carry/
#   bash scripts/bench_cuda.sh all       # on the GPU machine: build+test+bench; with the device
#                                        # tool: run(command="bash scripts/bench_cuda.sh all",
#                                        #           carry=["build/carry"], timeout_s=590)
#   bash scripts/bench_cuda.sh peer-bench # second call if `all` ran out of time for llama.cpp
#   bash scripts/bench_cuda.sh build|test|models|peer|bench   # one phase (state kept in build/)
#
# `all` keeps to DEADLINE seconds (default 540, under the device tool's 600 s per command):
# llama.cpp's build runs in the background and is stopped at the deadline if unfinished (its
# build folder stays; `peer-bench` resumes it, then benchmarks both sides).
#
# prepare: build/carry/ gets a trimmed llama.cpp source tarball (CMake, ggml, src, include,
# common, tools, vendor: ~8 MB instead of the sdist's 77), the Llama-2 vocab GGUF that
# scripts/make_synthetic_model.py copies, and the pure-Python gguf package — what the device
# machine (no network) needs besides this tree. A real SmolLM2 file (98 MB) exceeds what may
# be carried: without one there (LLAMA_PY_TEST_MODEL, ~/.cache/llama_py, build/carry) a
# SmolLM2-shaped Q4_1 with random weights stands in, for tests and benchmark alike (the tests
# compare the GPU with the CPU, so random weights still judge them; the summary says which).
#
# all: (1) libllama + libggml-cuda for CUDA_ARCH (default 90) with JOBS (default 16) cores,
# test_cuda_host; (2) llama.cpp's llama-bench built in the background meanwhile; (3)
# tests/test_cuda.py; (4) SmolLM2 Q4_1, TinyLlama-shaped Q4_0 and Q4_K_M models; (5) pp512 /
# tg128 for each, ours and llama.cpp alternately (scripts/ab_bench.py, all layers offloaded),
# with tg's share of the H200's 4.8 TB/s HBM bandwidth. Phases log their times in summary.txt.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
OUT="${OUT:-$ROOT/build/bench-cuda-out}"
ARCH="${CUDA_ARCH:-90}"
JOBS="${JOBS:-16}"
CARRY="$ROOT/build/carry"
MODELS="$ROOT/build/bench-models"
PEER="$ROOT/build/peer"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
BW_GBS="${GPU_BW_GBS:-4800}"   # H200 HBM3e
mkdir -p "$OUT" "$MODELS"
export PYTHONPATH="$ROOT:$CARRY/py${PYTHONPATH:+:$PYTHONPATH}"

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }

phase_prepare() {
    mkdir -p "$CARRY/py" "$CARRY/vocab"
    local sdist="${LLAMA_CPP_SDIST:-$HOME/.cache/llama_py/llama_cpp_python-0.3.36.tar.gz}"
    if [ ! -f "$sdist" ]; then
        mkdir -p "$HOME/.cache/llama_py"
        "$PY" -m pip download --no-deps --no-binary llama-cpp-python llama-cpp-python==0.3.36 -d "$HOME/.cache/llama_py" \
            || { log "prepare: cannot download the llama-cpp-python 0.3.36 sdist"; return 1; }
    fi
    local tmp
    tmp=$(mktemp -d)
    tar xzf "$sdist" -C "$tmp"
    (cd "$tmp"/llama_cpp_python-0.3.36/vendor && tar cf - llama.cpp/CMakeLists.txt llama.cpp/LICENSE llama.cpp/cmake \
        llama.cpp/common llama.cpp/ggml llama.cpp/src llama.cpp/include llama.cpp/vendor llama.cpp/tools llama.cpp/licenses \
        | xz -6 -T0 > "$CARRY/llama.cpp-0.3.36-min.tar.xz")
    rm -rf "$tmp"
    cp "${LLAMA_SPM_VOCAB:-/work/shared/vocab/llama-spm.gguf}" "$CARRY/vocab/llama-spm.gguf"
    local gg
    gg=$("$PY" -c 'import gguf, os; print(os.path.dirname(gguf.__file__))') && rm -rf "$CARRY/py/gguf" && cp -r "$gg" "$CARRY/py/gguf"
    find "$CARRY/py" -name __pycache__ -prune -exec rm -rf {} +
    log "prepare: $(du -sh "$CARRY" | cut -f1) in $CARRY (pass it as carry: [\"build/carry\"])"
}

phase_preflight() {
    {
        echo "python: $("$PY" --version 2>&1)"
        echo "cmake: $(cmake --version 2>/dev/null | head -n1 || echo missing)"
        echo "nvcc: $(nvcc --version 2>/dev/null | tail -n1 || echo missing)"
        echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo none)"
        "$PY" -c 'import numpy, pytest, gguf; print("numpy", numpy.__version__, "pytest", pytest.__version__, "gguf ok")' 2>&1
        echo "cores: $(nproc)"
    } | tee -a "$OUT/summary.txt"
    command -v cmake >/dev/null && command -v nvcc >/dev/null || { log "preflight: cmake or nvcc missing"; return 1; }
}

phase_build() {
    log "build: ours for sm_$ARCH with $JOBS jobs"
    nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
    nvcc --version > "$OUT/nvcc.txt" 2>&1
    local t0=$SECONDS
    cmake -S . -B build/py -DCMAKE_BUILD_TYPE=Release -DLLAMA_CUDA=ON -DLLAMA_BUILD_TESTS=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" > "$OUT/build.log" 2>&1 &&
    cmake --build build/py --target llama ggml-cuda test_cuda_host -j "$JOBS" >> "$OUT/build.log" 2>&1
    local rc=$?
    log "build: rc $rc in $((SECONDS - t0)) s"
    [ $rc -eq 0 ] || { tail -40 "$OUT/build.log"; return $rc; }
    build/py/test_cuda_host > "$OUT/test_cuda_host.txt" 2>&1
    log "test_cuda_host: rc $? ($(tail -n1 "$OUT/test_cuda_host.txt"))"
}

phase_peer() {   # llama.cpp's llama-bench with CUDA (runs in the background under `all`)
    local tarball="$CARRY/llama.cpp-0.3.36-min.tar.xz"
    if [ ! -f "$tarball" ]; then
        log "peer: $tarball missing (run 'prepare' where there is network); no llama.cpp numbers"
        return 1
    fi
    local t0=$SECONDS
    # an interrupted build resumes: the sources are unpacked once
    [ -d "$PEER/llama.cpp" ] || { mkdir -p "$PEER" && tar xJf "$tarball" -C "$PEER"; }
    cmake -S "$PEER/llama.cpp" -B "$PEER/build" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF > "$OUT/peer_build.log" 2>&1 &&
    cmake --build "$PEER/build" --target llama-bench -j "$JOBS" >> "$OUT/peer_build.log" 2>&1
    local rc=$?
    log "peer: llama-bench build rc $rc in $((SECONDS - t0)) s"
    return $rc
}

phase_test() {
    local t0=$SECONDS
    local model
    model=$(find_smollm2)
    log "test: tests/test_cuda.py with ${model:-no SmolLM2 file}"
    LLAMA_PY_TEST_MODEL="$model" "$PY" -m pytest -q -rs tests/test_cuda.py > "$OUT/test_cuda.txt" 2>&1
    local rc=$?
    log "test: rc $rc in $((SECONDS - t0)) s: $(tail -n1 "$OUT/test_cuda.txt")"
    return $rc
}

find_smollm2() {
    for f in "${LLAMA_PY_TEST_MODEL:-}" "$HOME/.cache/llama_py/SmolLM2-135M-Instruct.Q4_1.gguf" \
             "$CARRY/SmolLM2-135M-Instruct.Q4_1.gguf" "$MODELS/smollm2-synthetic-q4_1.gguf"; do
        [ -n "$f" ] && [ -f "$f" ] && { echo "$f"; return 0; }
    done
    if make_model "$MODELS/smollm2-synthetic-q4_1.gguf" --preset smollm2 --quantize Q4_1 >&2; then
        echo "$MODELS/smollm2-synthetic-q4_1.gguf"
    fi
}

make_model() {   # out, args...
    local out="$1"; shift
    [ -f "$out" ] && return 0
    local vocab="$CARRY/vocab/llama-spm.gguf"
    [ -f "$vocab" ] || vocab=/work/shared/vocab/llama-spm.gguf
    local t0=$SECONDS
    "$PY" scripts/make_synthetic_model.py "$out" --vocab "$vocab" "$@" >> "$OUT/models.log" 2>&1
    local rc=$?
    log "models: $(basename "$out") rc $rc in $((SECONDS - t0)) s"
    return $rc
}

phase_models() {
    find_smollm2 > "$OUT/smollm2_path.txt"
    make_model "$MODELS/tinyllama-q4_0.gguf" --preset tinyllama --quantize Q4_0
    make_model "$MODELS/tinyllama-q4_k_m.gguf" --preset tinyllama --quantize Q4_K_M
}

phase_bench() {
    local lb="$PEER/build/bin/llama-bench"
    local models=()
    for m in "$(cat "$OUT/smollm2_path.txt" 2>/dev/null)" "$MODELS/tinyllama-q4_0.gguf" "$MODELS/tinyllama-q4_k_m.gguf"; do
        [ -n "$m" ] && [ -f "$m" ] && models+=(-m "$m")
    done
    [ ${#models[@]} -gt 0 ] || { log "bench: no models"; return 1; }
    local t0=$SECONDS
    if [ -x "$lb" ]; then
        # alternating ours / llama.cpp, every layer on the GPU, 2 rounds x 3 repetitions
        "$PY" scripts/ab_bench.py --llama-bench "$lb" "${models[@]}" -t 4 -p 512 -n 128 -r 3 --rounds 2 --ngl 99 \
            --bandwidth "$BW_GBS" > "$OUT/bench.md" 2> "$OUT/bench.log"
        log "bench: rc $? in $((SECONDS - t0)) s (ours vs llama.cpp; roof $BW_GBS GB/s)"
    else
        for ((i = 1; i < ${#models[@]}; i += 2)); do
            "$PY" -m llama_py bench -m "${models[$i]}" -p 512 -n 128 -r 3 -t 4 -ngl 99 >> "$OUT/bench.md" 2>> "$OUT/bench.log"
        done
        log "bench: ours only (no llama-bench) in $((SECONDS - t0)) s"
    fi
    cat "$OUT/bench.md" | tee -a "$OUT/summary.txt"
}

case "${1:-all}" in
    prepare) phase_prepare ;;
    build) phase_build ;;
    peer) phase_peer ;;
    test) phase_test ;;
    models) phase_models ;;
    bench) phase_bench ;;
    peer-bench)
        phase_peer
        phase_bench
        ;;
    all)
        DEADLINE="${DEADLINE:-540}"
        phase_preflight || exit 1
        phase_build || exit 1
        # llama.cpp builds meanwhile, in its own process group (stopped at the deadline)
        setsid bash "$0" peer > /dev/null 2>&1 &
        peer_pid=$!
        phase_test
        phase_models
        while kill -0 "$peer_pid" 2>/dev/null && [ "$SECONDS" -lt "$DEADLINE" ]; do sleep 5; done
        if kill -0 "$peer_pid" 2>/dev/null; then
            kill -- -"$peer_pid" 2>/dev/null
            log "all: llama.cpp build unfinished at ${DEADLINE} s: benchmarking ours only; run 'peer-bench' next"
        fi
        phase_bench
        ;;
    preflight) phase_preflight ;;
    *) echo "usage: $0 [prepare|all|peer-bench|preflight|build|peer|test|models|bench]" >&2; exit 2 ;;
esac
