#!/usr/bin/env python3
"""Aggregate tokens/s and time between tokens against the number of streams, for our server and
llama.cpp's llama-server (-np N), alternating the two at each N (not a test: on a shared machine
only the ratios of one alternating run mean something).

    python scripts/bench_server_curve.py -m model.gguf --llama-server /path/to/llama-server
    python scripts/bench_server_curve.py -m model.gguf -N 1,8 --tokens 64 -t 2 --rounds 2

For each N: our server with --parallel N, then llama-server -np N (same model, threads, context
per slot), each serving N concurrent streams of --tokens tokens (scripts/bench_server.py's
traffic: one prompt per stream, ignore_eos, greedy), --rounds rounds each; the best round's
aggregate tokens/s, and its median and p99 time between tokens, are printed, with the ratios
ours / one stream and ours / llama-server. Without --llama-server only ours runs.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_server  # noqa: E402  (scripts/bench_server.py: the traffic)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _start(cmd, url, env=None):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited during startup: {' '.join(cmd)}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    raise SystemExit(f"the server did not start: {' '.join(cmd)}")


def _measure(url, a, n):
    args = argparse.Namespace(model_name="bench", clients=n, tokens=a.tokens, temp=0.0, client="raw", late_prompt=0)
    asyncio.run(bench_server.run_round(url, argparse.Namespace(**{**vars(args), "clients": 1, "tokens": 8})))
    rounds = [asyncio.run(bench_server.run_round(url, args)) for _ in range(a.rounds)]
    return max(rounds, key=lambda r: r["agg_tps"])


def _run_server(kind, a, n):
    port = _port()
    url = f"http://127.0.0.1:{port}"
    n_ctx = n * a.ctx
    if kind == "ours":
        cmd = [sys.executable, "-m", "llama_py", "serve", "-m", a.model, "--port", str(port), "--parallel", str(n),
               "--ctx-size", str(n_ctx), "-t", str(a.threads)]
        env = dict(os.environ, PYTHONPATH=ROOT)
    else:
        cmd = [a.llama_server, "-m", a.model, "--port", str(port), "-np", str(n), "-c", str(n_ctx),
               "-t", str(a.threads), "-tb", str(a.threads), "--log-disable"]
        env = None
    proc = _start(cmd, url, env)
    try:
        return _measure(url, a, n)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--llama-server", default=None, help="llama.cpp's llama-server binary (omit: ours only)")
    ap.add_argument("-N", "--streams", default="1,2,4,8,16")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=512, help="context cells per slot")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    a.model = os.path.abspath(a.model)
    kinds = ["ours"] + (["llama-server"] if a.llama_server else [])
    print(f"# {os.path.basename(a.model)}, {a.threads} threads, {a.tokens} tokens per stream, best of {a.rounds}")
    print(f"{'N':>3} {'server':>13} {'tok/s':>8} {'TBT med ms':>11} {'TBT p99 ms':>11} {'x 1 stream':>11} "
          f"{'ours/lcpp':>10} {'load':>5}")
    one = {}
    for n in [int(x) for x in a.streams.split(",")]:
        res = {}
        for kind in kinds:
            r = res[kind] = _run_server(kind, a, n)
            one.setdefault(kind, r["agg_tps"] if n == 1 else None)
            x1 = r["agg_tps"] / one[kind] if one.get(kind) else float("nan")
            vs = res["ours"]["agg_tps"] / r["agg_tps"] if kind != "ours" else float("nan")
            print(f"{n:>3} {kind:>13} {r['agg_tps']:>8.1f} {r['tbt_median'] * 1e3:>11.1f} {r['tbt_p99'] * 1e3:>11.1f} "
                  f"{x1:>11.2f} {vs:>10.2f} {os.getloadavg()[0]:>5.1f}", flush=True)
            if a.json:
                print(json.dumps({"n": n, "server": kind, **{k: v for k, v in r.items() if k != "times"}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
