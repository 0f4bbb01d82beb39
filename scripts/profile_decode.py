#!/usr/bin/env python3
"""Where the time of one generated token goes: per-op kernel and barrier time, graph set-up,
and the time spent between graph computations (graph build, allocation, Python).

    python scripts/profile_decode.py -m model.gguf -n 64 -t 1
    python scripts/profile_decode.py -m model.gguf -n 64 -t 1,2

Each run is a child process with GGML_PROFILE=1 (threadpool.c times every node and prints a
table at exit); the parent prints the child's per-token times (wall and process CPU) and the
table. The prompt is one token, so every computation profiled is a batch-of-one decode.
Timing on a shared machine is noisy: compare runs made one after the other, best of several.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, time
sys.path.insert(0, {root!r})
from llama_py import llama_cpp as C
C.llama_backend_init()
cb = C.llama_log_callback(lambda l, t, u: None)
C.llama_log_set(cb, None)
model = C.llama_model_load_from_file({model!r}.encode(), C.llama_model_default_params())
assert model, "cannot load the model"
cp = C.llama_context_default_params()
cp.n_ctx = {n_ctx}
cp.n_threads = cp.n_threads_batch = {threads}
cp.flash_attn_type = {fa}
ctx = C.llama_init_from_model(model, cp)
assert ctx, "cannot create the context"
tok = (C.llama_token * 1)(1)
wall, cpu = [], []
for i in range({n}):
    w0, c0 = time.perf_counter(), time.process_time()
    assert C.llama_decode(ctx, C.llama_batch_get_one(tok, 1)) == 0
    wall.append(time.perf_counter() - w0)
    cpu.append(time.process_time() - c0)
wall.sort()
print(f"tokens {n}: wall per token best {{wall[0]*1e6:.0f}} us, median {{wall[len(wall)//2]*1e6:.0f}} us "
      f"({{1/wall[len(wall)//2]:.1f}} t/s); process CPU per token {{sum(cpu)/len(cpu)*1e6:.0f}} us", flush=True)
C.llama_free(ctx)
C.llama_model_free(model)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-n", type=int, default=64, help="tokens to generate (default 64)")
    ap.add_argument("-t", "--threads", default="1", help="comma-separated thread counts (default 1)")
    ap.add_argument("-c", "--ctx", type=int, default=512)
    ap.add_argument("--no-fa", action="store_true", help="flash attention off")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for th in [int(x) for x in a.threads.split(",")]:
        code = CHILD.format(root=root, model=os.path.abspath(a.model), n_ctx=a.ctx, threads=th, n=a.n,
                            fa=0 if a.no_fa else 1)
        env = dict(os.environ, GGML_PROFILE="1")
        print(f"== {os.path.basename(a.model)}, {th} thread(s)", flush=True)
        r = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        sys.stdout.write(r.stdout)
        sys.stdout.write(r.stderr)
        if r.returncode != 0:
            return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
