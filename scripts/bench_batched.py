#!/usr/bin/env python3
"""Batched decoding: the time of one llama_decode step of N sequences x 1 token, for several N.

    python scripts/bench_batched.py -m model.gguf                    # N = 1, 2, 4, 8, 16
    python scripts/bench_batched.py -m model.gguf -N 1,8 -t 2 --prompt 128 --steps 32
    GGML_CPU_VARIANT=avx2 python scripts/bench_batched.py -m model.gguf
    python scripts/bench_batched.py -m model.gguf --profile --prompt 1 --steps 64  # per-op table

Each N runs in a child process (so GGML_CPU_VARIANT / GGML_PROFILE apply per run): one context
with n_seq_max = N, every sequence first gets a prompt of --prompt tokens (its own cells, as a
server's slots have; all in one batch, which --profile's per-compute averages include: keep the
prompt short there), then --steps steps each decode one token of every sequence in one batch.
Printed per N: best and median step time, its ratio to N = 1's median, aggregate tokens/s, and
the median process CPU time per step (with one thread, less disturbed by a busy machine than
the wall time; with more, spinning threads add to it).
Timing on a shared machine is noisy: compare runs made one after the other (note `uptime`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import sys, time, json
sys.path.insert(0, {root!r})
from llama_py import llama_cpp as C
C.llama_backend_init()
cb = C.llama_log_callback(lambda l, t, u: None)
C.llama_log_set(cb, None)
model = C.llama_model_load_from_file({model!r}.encode(), C.llama_model_default_params())
assert model, "cannot load the model"
N, P, S = {n_seq}, {prompt}, {steps}
cp = C.llama_context_default_params()
cp.n_ctx = N*((P + S + 8 + 63)//64*64)  # whole 64-cell pages per sequence, as a server slot has
cp.n_batch = max(512, N*P)
cp.n_ubatch = max(512, N)
cp.n_seq_max = N
cp.n_threads = cp.n_threads_batch = {threads}
cp.flash_attn_type = {fa}
ctx = C.llama_init_from_model(model, cp)
assert ctx, "cannot create the context"
nv = C.llama_vocab_n_tokens(C.llama_model_get_vocab(model))
batch = C.llama_batch_init(max(P*N, N), 0, 1)
def fill(items):
    # items: (token, pos, seq, logits)
    for i, (tok, pos, seq, out) in enumerate(items):
        batch.token[i] = tok; batch.pos[i] = pos; batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq; batch.logits[i] = out
    batch.n_tokens = len(items)
    assert C.llama_decode(ctx, batch) == 0
# every sequence's prompt (distinct tokens, the last one's logits only) in one batch
fill([(1 + (s*131 + p*17) % (nv - 1), p, s, p == P - 1) for s in range(N) for p in range(P)])
steps, cpu = [], []
for k in range(S):
    items = [(1 + (s*7 + k*13) % (nv - 1), P + k, s, True) for s in range(N)]
    t0, c0 = time.perf_counter(), time.process_time()
    fill(items)
    steps.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
steps.sort(); cpu.sort()
print("RESULT " + json.dumps({{"n": N, "best": steps[0], "median": steps[len(steps)//2], "cpu": cpu[len(cpu)//2]}}), flush=True)
C.llama_batch_free(batch)
C.llama_free(ctx)
C.llama_model_free(model)
"""


def run_one(a, root: str, n: int, env: dict) -> dict:
    code = CHILD.format(root=root, model=os.path.abspath(a.model), n_seq=n, prompt=a.prompt, steps=a.steps,
                        threads=a.threads, fa=-1 if a.fa == "auto" else int(a.fa == "on"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit(f"N={n}: the child failed")
    res = None
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
    if a.profile:
        sys.stdout.write(r.stderr)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-N", "--n-seq", default="1,2,4,8,16", help="comma-separated sequence counts")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=64, help="prompt tokens per sequence before the steps")
    ap.add_argument("--steps", type=int, default=24, help="timed steps per N")
    ap.add_argument("--fa", choices=["auto", "on", "off"], default="auto", help="flash attention")
    ap.add_argument("--profile", action="store_true", help="GGML_PROFILE=1: print each child's per-op table")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON line too")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    if a.profile:
        env["GGML_PROFILE"] = "1"
    variant = env.get("GGML_CPU_VARIANT", "best")
    print(f"# {os.path.basename(a.model)}, {a.threads} threads, kernels {variant}, prompt {a.prompt}, "
          f"{a.steps} steps, load {os.getloadavg()[0]:.2f}")
    print(f"{'N':>3} {'best ms':>9} {'median ms':>10} {'x N=1':>7} {'tok/s':>8} {'cpu ms':>8} {'x N=1':>7}")
    base, cbase, out = None, None, []
    for n in [int(x) for x in a.n_seq.split(",")]:
        r = run_one(a, root, n, env)
        base = base or (r["median"] if n == 1 else None)
        cbase = cbase or (r["cpu"] if n == 1 else None)
        ratio = r["median"]/base if base else float("nan")
        cratio = r["cpu"]/cbase if cbase else float("nan")
        r["ratio"], r["cpu_ratio"] = ratio, cratio
        out.append(r)
        print(f"{n:>3} {r['best']*1e3:>9.2f} {r['median']*1e3:>10.2f} {ratio:>7.2f} {n/r['median']:>8.1f} "
              f"{r['cpu']*1e3:>8.2f} {cratio:>7.2f}", flush=True)
    if a.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
