#!/usr/bin/env python3
"""The machine's memory read bandwidth, the roof for token generation: a C loop (compiled here
with the system compiler) streams a buffer much larger than the caches with 1..T threads.

    python scripts/bench_bandwidth.py [--threads 2] [--mib 1024] [--reps 5]

Prints GB/s per thread count (best of reps), with 4 KiB and with 2 MiB (transparent huge) pages.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static size_t n_bytes; static const uint64_t * buf; static int nth;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec*1e-9; }
static void * reader(void * arg) {
    const size_t per = n_bytes/8/(size_t) nth, i0 = (size_t) (intptr_t) arg*per;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    for (size_t i = i0; i < i0 + per; i += 8) {  /* one cache line per step; xor keeps every load */
        a0 ^= buf[i]; a1 ^= buf[i + 1]; a2 ^= buf[i + 2]; a3 ^= buf[i + 3];
        a4 ^= buf[i + 4]; a5 ^= buf[i + 5]; a6 ^= buf[i + 6]; a7 ^= buf[i + 7];
    }
    return (void *) (intptr_t) (a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7);
}
int main(int argc, char ** argv) {
    const int max_threads = atoi(argv[1]), reps = atoi(argv[3]);
    n_bytes = (size_t) atol(argv[2]) << 20;
    for (int huge = 0; huge <= 1; huge++) {
        void * p = NULL;
        if (posix_memalign(&p, 2u << 20, n_bytes) != 0) return 1;
#ifdef MADV_HUGEPAGE
        madvise(p, n_bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
        memset(p, 1, n_bytes);
        buf = p;
        for (nth = 1; nth <= max_threads; nth++) {
            double best = 1e30;
            for (int r = 0; r < reps; r++) {
                pthread_t th[256];
                const double t0 = now();
                for (int t = 0; t < nth; t++) pthread_create(&th[t], NULL, reader, (void *) (intptr_t) t);
                for (int t = 0; t < nth; t++) pthread_join(th[t], NULL);
                const double dt = now() - t0;
                if (dt < best) best = dt;
            }
            printf("| %s | %d | %.1f |\n", huge ? "2 MiB" : "4 KiB", nth, (double) n_bytes/best/1e9);
        }
        free(p);
    }
    return 0;
}
"""


def measure(threads: int, mib: int = 512, reps: int = 3, cc: str = "cc") -> float:
    """Best read GB/s with `threads` threads on huge pages (compiles the C loop each call)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "bw.c", Path(tmp) / "bw"
        src.write_text(SRC)
        subprocess.run([cc, "-O2", "-march=native", str(src), "-lpthread", "-o", str(exe)], check=True)
        out = subprocess.run([str(exe), str(threads), str(mib), str(reps)], check=True, capture_output=True,
                             text=True).stdout
    rows = [line.strip("|").split("|") for line in out.splitlines()]
    return max(float(r[2]) for r in rows if int(r[1]) == threads)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--mib", type=int, default=1024, help="buffer size in MiB (default 1024)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "bw.c", Path(tmp) / "bw"
        src.write_text(SRC)
        subprocess.run([a.cc, "-O2", "-march=native", str(src), "-lpthread", "-o", str(exe)], check=True)
        print("| pages | threads | read GB/s |\n|---|---:|---:|", flush=True)
        return subprocess.run([str(exe), str(min(a.threads, 256)), str(a.mib), str(a.reps)]).returncode


if __name__ == "__main__":
    sys.exit(main())
