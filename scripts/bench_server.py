#!/usr/bin/env python3
"""Server benchmark: C concurrent streaming clients, T tokens each; aggregate generated tokens/s
and time to first token (not a test: numbers mean something only on a quiet machine).

    python scripts/bench_server.py                          # starts `python -m llama_py serve` itself
    python scripts/bench_server.py --url http://127.0.0.1:8080 --clients 8 --tokens 128
    python scripts/bench_server.py --clients 1              # single-client tokens/s

Against another server (llama-cpp-python's, llama.cpp's llama-server -np 8) pass --url; every
request asks for exactly T tokens (ignore_eos, which llama-server and llama_py honour; others
may stop early, so generated tokens are counted from the stream, never assumed).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import httpx

PROMPT = "Write a long story about a lighthouse keeper who finds a map in a bottle. Chapter 1:"


async def one_stream(client: httpx.AsyncClient, url: str, args, i: int):
    body = {"model": args.model_name, "prompt": f"{PROMPT} ({i})", "max_tokens": args.tokens, "stream": True,
            "temperature": args.temp, "seed": i, "ignore_eos": True,
            "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    ttft, chunks, usage = None, 0, None
    async with client.stream("POST", url + "/v1/completions", json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            d = json.loads(line[6:])
            if d.get("usage"):
                usage = d["usage"]
            if d.get("choices") and d["choices"][0].get("text"):
                if ttft is None:
                    ttft = time.perf_counter() - t0
                chunks += 1
    n = usage["completion_tokens"] if usage else chunks
    return {"ttft": ttft or float("nan"), "tokens": n, "seconds": time.perf_counter() - t0}


async def run_round(url: str, args):
    limits = httpx.Limits(max_connections=args.clients + 4)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        t0 = time.perf_counter()
        res = await asyncio.gather(*[one_stream(client, url, args, i) for i in range(args.clients)])
        wall = time.perf_counter() - t0
    total = sum(r["tokens"] for r in res)
    return {"wall": wall, "tokens": total, "agg_tps": total / wall,
            "ttft_mean": statistics.mean(r["ttft"] for r in res), "ttft_max": max(r["ttft"] for r in res),
            "per_client_tps": statistics.mean(r["tokens"] / r["seconds"] for r in res)}


def _start_own_server(args):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cmd = [sys.executable, "-m", "llama_py", "serve", "--port", str(port), "--parallel", str(args.parallel),
           "--n-ctx", str(args.parallel * max(512, args.tokens + 128))]
    if args.model:
        cmd += ["-m", args.model]
    if args.threads:
        cmd += ["-t", str(args.threads)]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server exited during startup")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("the server did not start")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=None, help="benchmark this server instead of starting ours")
    ap.add_argument("-m", "--model", default=None, help="GGUF for our server (default: the demo model)")
    ap.add_argument("--model-name", default="bench", help="the model field sent")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--parallel", type=int, default=8, help="slots of our server")
    ap.add_argument("-t", "--threads", type=int, default=None)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON line per round")
    args = ap.parse_args()
    proc = None
    url = args.url
    if url is None:
        proc, url = _start_own_server(args)
    try:
        asyncio.run(run_round(url, argparse.Namespace(**{**vars(args), "clients": 1, "tokens": 8})))  # warm-up
        for k in range(args.rounds):
            r = asyncio.run(run_round(url, args))
            if args.json:
                print(json.dumps(dict(r, round=k, clients=args.clients, url=url)))
            else:
                print(f"round {k}: {args.clients} clients x {args.tokens} tokens: {r['tokens']} tokens in "
                      f"{r['wall']:.2f} s = {r['agg_tps']:.1f} tok/s aggregate, {r['per_client_tps']:.1f} tok/s "
                      f"per client, TTFT mean {r['ttft_mean'] * 1000:.0f} ms max {r['ttft_max'] * 1000:.0f} ms",
                      flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
