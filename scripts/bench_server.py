#!/usr/bin/env python3
"""Server benchmark: C concurrent streaming clients, T tokens each; aggregate generated tokens/s
and time to first token (not a test: numbers mean something only on a quiet machine).

    python scripts/bench_server.py                          # starts `python -m llama_py serve` itself
    python scripts/bench_server.py --url http://127.0.0.1:8080 --clients 8 --tokens 128
    python scripts/bench_server.py --clients 1              # single-client tokens/s

Against another server (llama-cpp-python's, llama.cpp's llama-server -np 8) pass --url; every
request asks for exactly T tokens (ignore_eos, which llama-server and llama_py honour; others
may stop early, so generated tokens are counted from the stream, never assumed).

The client runs on the same machine as the server, and on a 2-core machine every millisecond it
computes is taken from the server's compute threads. `--client httpx` (the default) reads the
streams the way Python applications do; `--client raw` reads them over plain asyncio sockets
(an HTTP/1.1 request, chunked or plain body, SSE events split on blank lines) and costs a
fraction of the CPU. Each round prints the client's own CPU time per generated token, and the time
between tokens (TBT: gaps between a stream's text chunks after its first, median and p99 over all
streams).

    python scripts/bench_server.py --clients 8 --late-prompt 2000   # a 2,000-token prompt arrives

--late-prompt N: once every stream has its first token, one more request with a prompt of about
N tokens (a repeated word) arrives (give the server a slot for it, --parallel clients + 1, and the
streams enough tokens to outlast the prompt); the round then also reports the running streams' largest gap
and their median gap while that prompt is read (from its send to its first token): what a long
prompt costs the streams already running.
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
from urllib.parse import urlsplit

PROMPT = "Write a long story about a lighthouse keeper who finds a map in a bottle. Chapter 1:"


def _body(args, i: int, prompt: str = None, max_tokens: int = None) -> dict:
    return {"model": args.model_name, "prompt": prompt or f"{PROMPT} ({i})", "max_tokens": max_tokens or args.tokens,
            "stream": True,
            "temperature": args.temp, "seed": i, "ignore_eos": True,
            "stream_options": {"include_usage": True}}


class _Tally:
    """Counts one stream's events: time to the first text, text chunks, the usage if sent."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.ttft, self.chunks, self.usage, self.t_last = None, 0, None, None
        self.times = []  # arrival of each text chunk

    def event(self, data: str) -> None:
        if data == "[DONE]":
            return
        d = json.loads(data)
        if d.get("usage"):
            self.usage = d["usage"]
        if d.get("choices") and d["choices"][0].get("text"):
            self.t_last = time.perf_counter()
            self.times.append(self.t_last)
            if self.ttft is None:
                self.ttft = self.t_last - self.t0
            self.chunks += 1

    def result(self):
        n = self.usage["completion_tokens"] if self.usage else self.chunks
        # after the first token, as `python -m llama_py run` counts its generation speed (the
        # prompt is TTFT's); chunks, not tokens: a chunk may carry several (or held-back) tokens
        gen = self.t_last - self.t0 - self.ttft if self.chunks > 1 else 0.0
        return {"ttft": self.ttft or float("nan"), "tokens": n, "seconds": time.perf_counter() - self.t0,
                "decode_tps": (n - 1) / gen if gen > 0 else float("nan"), "times": self.times}


async def one_stream(client: httpx.AsyncClient, url: str, args, i: int, tally=None, body=None):
    t = tally or _Tally()
    async with client.stream("POST", url + "/v1/completions", json=body or _body(args, i)) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                t.event(line[6:])
    return t.result()


async def one_stream_raw(url: str, args, i: int):
    """The same request over a bare asyncio connection (see the module's doc)."""
    u = urlsplit(url)
    body = json.dumps(_body(args, i)).encode()
    t = _Tally()
    reader, writer = await asyncio.open_connection(u.hostname, u.port or 80)
    try:
        writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (u.netloc.encode(), len(body)) + body)
        status = (await reader.readline()).split()
        if len(status) < 2 or status[1] != b"200":
            raise SystemExit(f"HTTP {b' '.join(status[1:]).decode(errors='replace')} from {url}")
        chunked = False
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.partition(b":")
            chunked |= k.strip().lower() == b"transfer-encoding" and b"chunked" in v.lower()
        buf = b""
        while True:
            if chunked:
                n = int((await reader.readline()).split(b";")[0], 16)
                if n == 0:
                    break
                data = (await reader.readexactly(n + 2))[:-2]
            else:
                data = await reader.read(65536)
                if not data:
                    break
            buf += data
            *events, buf = buf.replace(b"\r\n", b"\n").split(b"\n\n")
            for ev in events:
                for line in ev.split(b"\n"):
                    if line.startswith(b"data: "):
                        t.event(line[6:].decode())
    finally:
        writer.close()
    return t.result()


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


async def _late_request(client, url, args, tallies, out):
    """Waits until every stream has its first token, then sends the --late-prompt request."""
    while not all(t.times for t in tallies):
        await asyncio.sleep(0.005)
    # a first word of its own each time: no prefix of an earlier round's prompt to reuse
    body = _body(args, 999, prompt=f"{time.time_ns() % 99991} " + " ".join(["the"] * args.late_prompt), max_tokens=4)
    t = _Tally()
    out["sent"] = t.t0
    r = await one_stream(client, url, args, 999, tally=t, body=body)
    if not t.times:
        raise SystemExit(f"the --late-prompt request got no text ({r['tokens']} tokens): prompt too long for a slot?")
    out["first"] = t.times[0]
    out["prompt_tokens"] = (t.usage or {}).get("prompt_tokens")


async def run_round(url: str, args):
    limits = httpx.Limits(max_connections=args.clients + 4)
    late = {}
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        t0, c0 = time.perf_counter(), time.process_time()
        if args.client == "raw":
            res = await asyncio.gather(*[one_stream_raw(url, args, i) for i in range(args.clients)])
        else:
            tallies = [_Tally() for _ in range(args.clients)]
            jobs = [one_stream(client, url, args, i, tally=tallies[i]) for i in range(args.clients)]
            if args.late_prompt:
                jobs.append(_late_request(client, url, args, tallies, late))
            res = (await asyncio.gather(*jobs))[:args.clients]
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    total = sum(r["tokens"] for r in res)
    gaps = [(b - a, a) for r in res for a, b in zip(r["times"], r["times"][1:])]
    out = {"wall": wall, "tokens": total, "agg_tps": total / wall, "client_cpu_ms_per_token": 1e3 * cpu / max(total, 1),
           "ttft_mean": statistics.mean(r["ttft"] for r in res), "ttft_max": max(r["ttft"] for r in res),
           "per_client_tps": statistics.mean(r["tokens"] / r["seconds"] for r in res),
           "decode_tps": statistics.mean(r["decode_tps"] for r in res),
           "tbt_median": _pct([g for g, _ in gaps], 0.5), "tbt_p99": _pct([g for g, _ in gaps], 0.99)}
    if late:
        # gaps that end while the late prompt is read (a gap ending after its first token
        # overlapped the prompt's last step)
        during = [g for g, a in gaps if late["sent"] <= a + g and a <= late["first"]]
        out.update(late_ttft=late["first"] - late["sent"], late_prompt_tokens=late.get("prompt_tokens"), late_gap_max=max(during, default=float("nan")),
                   late_gap_median=_pct(during, 0.5))
    return out


def _start_own_server(args):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cmd = [sys.executable, "-m", "llama_py", "serve", "--port", str(port), "--parallel", str(args.parallel),
           "--n-ctx", str(args.parallel * max(512, args.tokens + 128, args.late_prompt + 128))]
    if args.model:
        cmd += ["-m", args.model]
    if args.threads:
        cmd += ["-t", str(args.threads)]
    if args.prefill_chunk:
        cmd += ["--prefill-chunk", str(args.prefill_chunk)]
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
    ap.add_argument("--client", choices=("httpx", "raw"), default="httpx",
                    help="how the streams are read (raw: bare asyncio sockets, least client CPU)")
    ap.add_argument("--json", action="store_true", help="one JSON line per round")
    ap.add_argument("--late-prompt", type=int, default=0, metavar="N",
                    help="a request with a prompt of about N tokens arrives once the streams run (httpx client)")
    ap.add_argument("--prefill-chunk", type=int, default=None, help="our server's --prefill-chunk")
    args = ap.parse_args()
    proc = None
    url = args.url
    if url is None:
        proc, url = _start_own_server(args)
    try:
        asyncio.run(run_round(url, argparse.Namespace(**{**vars(args), "clients": 1, "tokens": 8, "late_prompt": 0})))  # warm-up
        for k in range(args.rounds):
            r = asyncio.run(run_round(url, args))
            if args.json:
                print(json.dumps(dict(r, round=k, clients=args.clients, url=url, load=os.getloadavg()[0])))
            else:
                print(f"round {k}: {args.clients} clients x {args.tokens} tokens: {r['tokens']} tokens in "
                      f"{r['wall']:.2f} s = {r['agg_tps']:.1f} tok/s aggregate, {r['per_client_tps']:.1f} tok/s "
                      f"per client ({r['decode_tps']:.1f} after the first token), TTFT mean {r['ttft_mean'] * 1000:.0f} ms max {r['ttft_max'] * 1000:.0f} ms, "
                      f"TBT median {r['tbt_median'] * 1000:.0f} ms p99 {r['tbt_p99'] * 1000:.0f} ms, "
                      f"client CPU {r['client_cpu_ms_per_token']:.3f} ms/token ({args.client})" +
                      (f"; late {r.get('late_prompt_tokens')}-token prompt: TTFT {r['late_ttft'] * 1000:.0f} ms, running streams' "
                       f"gaps meanwhile median {r['late_gap_median'] * 1000:.0f} ms max {r['late_gap_max'] * 1000:.0f} ms"
                       if 'late_ttft' in r else "") + f", load {os.getloadavg()[0]:.1f}",
                      flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
