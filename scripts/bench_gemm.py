#!/usr/bin/env python3
"""Builds scripts/bench_gemm.c against a build folder's static library and runs it.

Prints a Markdown table: per weight type and shape (K x M, times N activation columns) the bare
GEMM micro-kernel's GOP/s, then mul_mat's GOP/s through the graph with the GEMM path off ("old":
vec_dot per column) and on ("new"), on 1..T threads, by CPU time and by wall-clock time.

    python scripts/bench_gemm.py [--build build] [--types q4_0,q8_0] [--shapes 576x576,2048x5632]
                                 [--n 512] [--reps 3] [--threads 2]

The build folder must have been configured with -DLLAMA_BUILD_TESTS=ON (that builds
libllama_static.a, where the internal kernel tables are visible). GGML_CPU_VARIANT=avx2 or
portable measures a lower kernel set.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="CMake build folder (default: build)")
    ap.add_argument("--types", default="q4_0,q4_1,q8_0,q4_K,q6_K")
    ap.add_argument("--shapes", default="576x576,576x1536,1536x576,2048x2048,2048x5632,5632x2048",
                    help="comma-separated KxM weight shapes")
    ap.add_argument("--n", type=int, default=512, help="activation columns (tokens in the batch)")
    ap.add_argument("--reps", type=int, default=3, help="timed runs; the best counts")
    ap.add_argument("--threads", type=int, default=2, help="largest thread count (1..T)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = ap.parse_args()

    build = Path(args.build).resolve()
    lib = build / "libllama_static.a"
    if not lib.is_file():
        print(f"{lib} not found: configure with -DLLAMA_BUILD_TESTS=ON and build llama_static", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bench_gemm"
        cmd = [args.cc, "-O2", "-std=c11", "-D_GNU_SOURCE",
               "-I", str(ROOT / "ggml" / "include"), "-I", str(ROOT / "include"), "-I", str(ROOT / "ggml" / "src"),
               str(ROOT / "scripts" / "bench_gemm.c"), str(lib), "-lm", "-lpthread", "-o", str(exe)]
        subprocess.run(cmd, check=True)
        return subprocess.run([str(exe), args.types, args.shapes, str(args.n), str(args.reps),
                               str(args.threads)]).returncode


if __name__ == "__main__":
    sys.exit(main())
