#!/usr/bin/env python3
"""Builds scripts/bench_vec_dot.c against a build folder's static library and runs it.

Prints a Markdown table per weight type: bits per weight, round-trip rmse and dot error on
the standard smooth signal, and vec_dot throughput of each kernel set (portable, avx2,
avx512 / neon) with the speed-up over portable. Then the activation quantizers' speed.

    python scripts/bench_vec_dot.py [--build build-quants] [--rows 128] [--reps 5] [--types q4_0,q8_0]

The build folder must have been configured with -DLLAMA_BUILD_TESTS=ON (that builds
libllama_static.a, where the internal kernel tables are visible).
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
    ap.add_argument("--rows", type=int, default=128, help="weight rows of 4096 (128 keeps Q8_0 in L2)")
    ap.add_argument("--reps", type=int, default=5, help="timed passes; the best counts")
    ap.add_argument("--types", default="", help="comma-separated type names to run (default: all)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = ap.parse_args()

    build = Path(args.build).resolve()
    lib = build / "libllama_static.a"
    if not lib.is_file():
        print(f"{lib} not found: configure with -DLLAMA_BUILD_TESTS=ON and build llama_static",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bench_vec_dot"
        cmd = [args.cc, "-O2", "-std=c11", "-D_GNU_SOURCE",
               "-I", str(ROOT / "ggml" / "include"), "-I", str(ROOT / "include"), "-I", str(ROOT / "ggml" / "src"),
               str(ROOT / "scripts" / "bench_vec_dot.c"), str(lib), "-lm", "-lpthread", "-o", str(exe)]
        subprocess.run(cmd, check=True)
        return subprocess.run([str(exe), str(args.rows), str(args.reps)] + ([args.types] if args.types else [])).returncode


if __name__ == "__main__":
    sys.exit(main())
