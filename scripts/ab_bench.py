#!/usr/bin/env python3
"""Side-by-side speed against llama.cpp: our bench and llama-bench, run alternately (A/B/A/B).

    python scripts/ab_bench.py --llama-bench /path/to/llama-bench -m a.gguf -m b.gguf \\
        [-t 2] [-p 512] [-n 128] [-r 3] [--rounds 2] [--bandwidth 35]

For each model and round, `python -m llama_py bench` runs, then llama-bench with the same
threads / prompt / generation lengths / repetitions; per test the best round's mean of each side
is kept (the machine may be shared: a round disturbed by other work is slower, not faster).
Prints a Markdown table with the ratio, for generation the bandwidth each side draws (t/s x bytes
of weights one token reads), and, given the machine's read bandwidth (GB/s, or "auto":
measured with scripts/bench_bandwidth.py before every round, the best figure kept — on a shared
machine it moves as much as the speeds do), the share of the bandwidth roof each side reaches in
generation: t/s x bytes of weights one token reads / bandwidth. Benchmarks only; never a test.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# weights every generated token reads (token_embd only when it doubles as the output matrix)
MATMUL_WEIGHT = re.compile(r"^(blk\.\d+\.(attn_q|attn_k|attn_v|attn_qkv|attn_output|ffn_gate|ffn_up|ffn_down|"
                           r"ffn_gate_inp|ffn_gate_shexp|ffn_up_shexp|ffn_down_shexp|inp_gate|proj)|output|"
                           r"per_layer_model_proj)\.weight$")
# gemma4's per-layer embeddings (PLE): a token reads one row of the table, not the table
ROW_WEIGHT = ("per_layer_token_embd.weight",)
# stacked experts: a token reads expert_used_count of expert_count of them
EXPERT_WEIGHT = re.compile(r"^blk\.\d+\.ffn_(gate|up|down|gate_up)_exps\.weight$")


def token_bytes(path: str) -> int:
    """Bytes of the matmul weights one generated token reads (from the GGUF's tensor table): of
    stacked experts, the share a token chooses (expert_used_count / expert_count)."""
    from gguf import GGUFReader

    r = GGUFReader(path)
    names = {t.name: int(t.n_bytes) for t in r.tensors}
    total = sum(n for name, n in names.items() if MATMUL_WEIGHT.match(name))
    arch = str(bytes(r.fields["general.architecture"].parts[-1]), "utf-8")
    n_exp, n_used = r.fields.get(f"{arch}.expert_count"), r.fields.get(f"{arch}.expert_used_count")
    if n_exp is not None and n_used is not None:
        share = int(n_used.parts[-1][0]) / int(n_exp.parts[-1][0])
        total += int(sum(n for name, n in names.items() if EXPERT_WEIGHT.match(name)) * share)
    if "output.weight" not in names:
        total += names.get("token_embd.weight", 0)  # tied embeddings are the output matrix
    n_vocab = next((int(t.shape[-1]) for t in r.tensors if t.name == "token_embd.weight"), 0)
    for name in ROW_WEIGHT:
        if name in names and n_vocab:
            total += names[name] // n_vocab
    return total


def run_ours(model: str, a) -> dict:
    cmd = [sys.executable, "-m", "llama_py", "bench", "-m", model, "-t", str(a.threads), "-p", str(a.n_prompt),
           "-n", str(a.n_gen), "-r", str(a.reps), "-o", "json"] + (["-ngl", str(a.ngl)] if a.ngl else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return {row["test"]: row["t_s"] for row in json.loads(out)}


def run_theirs(model: str, a) -> dict:
    cmd = [a.llama_bench, "-m", model, "-t", str(a.threads), "-p", str(a.n_prompt), "-n", str(a.n_gen),
           "-r", str(a.reps), "-o", "json", "-ngl", str(a.ngl)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = {}
    for row in json.loads(out):
        kind = "pp" if row.get("n_prompt", 0) > 0 else "tg"
        n = row["n_prompt"] if kind == "pp" else row["n_gen"]
        rows[f"{kind}{n}"] = row["avg_ts"]
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-bench", required=True, help="path of llama.cpp's llama-bench")
    ap.add_argument("-m", "--model", action="append", required=True, help="GGUF file (repeat for more)")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="A/B rounds per model")
    ap.add_argument("--ngl", type=int, default=0, help="layers offloaded to the GPU on both sides (99: all)")
    ap.add_argument("--bandwidth", default="0", help="read bandwidth in GB/s for the roof column, or auto")
    a = ap.parse_args()
    auto_bw = a.bandwidth == "auto"
    bw_best = 0.0 if auto_bw else float(a.bandwidth)
    if auto_bw:
        sys.path.insert(0, str(ROOT / "scripts"))
        from bench_bandwidth import measure

    roof = auto_bw or bw_best > 0
    lines = ["| model | test | ours t/s | llama.cpp t/s | ratio | ours GB/s | llama.cpp GB/s |" +
             (" roof GB/s | ours % roof | llama.cpp % roof |" if roof else ""),
             "|---|---|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if roof else "")]
    for model in a.model:
        best_ours: dict = {}
        best_theirs: dict = {}
        bw = bw_best
        for _ in range(a.rounds):
            if auto_bw:
                bw = max(bw, measure(a.threads))
            for name, res in (("ours", run_ours(model, a)), ("theirs", run_theirs(model, a))):
                best = best_ours if name == "ours" else best_theirs
                for test, ts in res.items():
                    best[test] = max(best.get(test, 0.0), ts)
            print(f"{os.path.basename(model)}: ours {best_ours} llama.cpp {best_theirs} bandwidth {bw:.1f} GB/s",
                  file=sys.stderr, flush=True)
        tb = token_bytes(model)
        for test in sorted(best_ours, key=lambda s: (s[:2] != "pp", s)):
            ours, theirs = best_ours[test], best_theirs.get(test, 0.0)
            ratio = f"{ours / theirs:.2f}x" if theirs else "-"
            line = f"| {os.path.basename(model)} | {test} | {ours:.1f} | {theirs:.1f} | {ratio} |"
            if test.startswith("tg"):
                # the weights a token reads, times tokens per second: the bandwidth each side draws
                line += f" {ours * tb / 1e9:.1f} | {theirs * tb / 1e9:.1f} |"
                if roof:
                    line += f" {bw:.1f} | {100 * ours * tb / (bw * 1e9):.0f}% | {100 * theirs * tb / (bw * 1e9):.0f}% |"
            else:
                line += " | |" + (" | | |" if roof else "")
            lines.append(line)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
