#!/usr/bin/env python3
"""The server engine's speculative decoding and LoRA against plain decoding, alternating runs
(A/B/A/B), greedy code-completion prompts; optionally llama.cpp's llama-speculative and
llama-bench on the same files (not a test: numbers mean something only on a quiet machine).

    python scripts/bench_server_speculative.py -m TARGET.gguf --draft-model DRAFT.gguf --draft-n 8 \\
        [--lcpp /path/to/llama.cpp/bin] [-n 128] [-r 3] [-t 2] [--streams 1]
    python scripts/bench_server_speculative.py -m TARGET.gguf --draft-model ngram       # prompt lookup
    python scripts/bench_server_speculative.py -m TARGET.gguf --lora-rank 16 [--lora-type f16]   # LoRA vs base

Generation speed is the generated tokens after each stream's first, over the time from the
first stream's first token to the last stream's end (prompt reading excluded), as
llama-speculative's "decoded ... speed" line and llama-bench's tg test count it. With --lcpp,
each round also runs `llama-speculative` (same target, draft, draft length, threads, prompt,
greedy) and `llama-bench -p 0 -n N` (the target's plain generation): llama.cpp's speedup is the
first over the second. --lora-rank R writes a random rank-R LoRA on every attention and MLP
projection of the target (F32, with the gguf package) and compares the engine with it to the
engine without it. Prints each run, the median ratios and the load average.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llama_py.server.engine import Engine, GenRequest, Model, SamplingParams  # noqa: E402

PROMPTS = [
    "# Python: a binary search tree with insert, delete, search and an in-order iterator\n"
    "class Node:\n    def __init__(self, key):\n",
    "// C: a growable array of ints with push, pop, get and free\n#include <stdlib.h>\n\nstruct vec {\n",
    "# Python: parse a CSV file of (name, age, city) rows and print the average age per city\nimport csv\n\n",
    "// JavaScript: debounce and throttle helpers with tests\nfunction debounce(fn, ms) {\n",
]


def engine_run(eng, model, n: int, streams: int):
    """Generated tokens/s of `streams` concurrent greedy requests (see the module doc), and the texts."""
    firsts, ends, counts, texts = {}, {}, {}, {}
    lock = threading.Lock()
    reqs = []
    for i in range(streams):
        def sink(ev, i=i):
            with lock:
                now = time.perf_counter()
                if ev.kind == "token":
                    firsts.setdefault(i, now)
                    counts[i] = counts.get(i, 0) + 1
                    texts[i] = texts.get(i, "") + ev.text
                else:
                    ends[i] = now
        p = PROMPTS[i % len(PROMPTS)]
        reqs.append(eng.submit(GenRequest(model.tokenize(p), max_tokens=n, sampling=SamplingParams(temperature=0),
                                          sink=sink)))
    while len(ends) < streams:
        time.sleep(0.002)
    span = max(ends.values()) - min(firsts.values())
    return (sum(counts.values()) - streams) / span, [texts.get(i, "") for i in range(streams)]


def write_random_lora(model_path: str, out: str, rank: int, seed: int = 0, dtype: str = "f32") -> str:
    """A random LoRA GGUF (dtype f32 or f16) on every attention and MLP projection of model_path."""
    import gguf
    import numpy as np
    rd = gguf.GGUFReader(model_path)
    arch = bytes(rd.fields["general.architecture"].parts[-1]).decode()
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(out, arch)
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", float(rank))
    targets = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    for t in rd.tensors:
        base = t.name.rsplit(".", 1)[0]
        if t.name.endswith(".weight") and base.split(".")[-1] in targets:
            n_in, n_out = int(t.shape[0]), int(t.shape[1])
            dt = np.float16 if dtype == "f16" else np.float32
            w.add_tensor(t.name + ".lora_a", (rng.standard_normal((rank, n_in)) / np.sqrt(n_in)).astype(dt))
            w.add_tensor(t.name + ".lora_b", (rng.standard_normal((n_out, rank)) * 0.01).astype(dt))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def lcpp_speculative(a) -> tuple:
    cmd = [os.path.join(a.lcpp, "llama-speculative"), "-m", a.model, "-md", a.draft_model, "-p", PROMPTS[0],
           "-n", str(a.n), "--spec-draft-n-max", str(a.draft_n), "-t", str(a.threads), "-td", str(a.threads),
           "--temp", "0", "-c", "4096", "-s", "1"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    log = out.stdout + out.stderr
    m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", log)
    acc = re.search(r"accept\s+=\s+([\d.]+)%", log)
    if not m:
        raise RuntimeError(f"llama-speculative printed no speed line:\n{' '.join(cmd)}\n{log[-2000:]}")
    return float(m.group(3)), float(acc.group(1)) / 100 if acc else float("nan")


def lcpp_bench_tg(a) -> float:
    cmd = [os.path.join(a.lcpp, "llama-bench"), "-m", a.model, "-p", "0", "-n", str(a.n), "-t", str(a.threads),
           "-r", "1", "-o", "csv"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))  # the header is bare, the values quoted
    if not rows:
        raise RuntimeError(f"llama-bench printed no CSV row:\n{' '.join(cmd)}\n{out.stderr[-2000:]}")
    return float(rows[-1]["avg_ts"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--draft-model", default=None, help="a draft GGUF of the same vocabulary, or 'ngram'")
    ap.add_argument("--draft-n", type=int, default=8)
    ap.add_argument("--lora-rank", type=int, default=0, help="compare a random LoRA of this rank to the base")
    ap.add_argument("--lora-type", default="f32", choices=["f32", "f16"], help="the random LoRA's matrices")
    ap.add_argument("--lcpp", default=None, help="llama.cpp's bin folder (llama-speculative, llama-bench)")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--streams", type=int, default=1)
    a = ap.parse_args()
    if not a.draft_model and not a.lora_rank:
        ap.error("give --draft-model or --lora-rank")
    model = Model(a.model)
    n_ctx = 4096 * max(1, a.streams)
    kw = dict(n_slots=max(1, a.streams), n_ctx=n_ctx, n_threads=a.threads)
    tmp = tempfile.mkdtemp()
    if a.lora_rank:
        lora = write_random_lora(a.model, os.path.join(tmp, "lora.gguf"), a.lora_rank, dtype=a.lora_type)
        plain, other = Engine(model, **kw), Engine(model, loras=[(lora, 1.0)], **kw)
        label = f"LoRA rank {a.lora_rank} {a.lora_type}"
    else:
        plain, other = Engine(model, **kw), Engine(model, draft=a.draft_model, n_draft=a.draft_n, **kw)
        label = f"draft {os.path.basename(a.draft_model)} n={a.draft_n}"
    engine_run(plain, model, 8, a.streams)              # warm both (page in the weights)
    engine_run(other, model, 8, a.streams)
    ratios, lratios = [], []
    for r in range(a.repeats):
        s0, t0 = engine_run(plain, model, a.n, a.streams)
        m = other.metrics
        d0, acc0 = m.drafted, m.draft_accepted
        s1, t1 = engine_run(other, model, a.n, a.streams)
        acc = (m.draft_accepted - acc0) / max(1, m.drafted - d0)
        line = (f"run {r}: plain {s0:.2f} t/s, {label} {s1:.2f} t/s ({s1 / s0:.2f}x)"
                + (f", accepted {acc:.0%}, output {'same' if t0 == t1 else 'DIFFERENT'}" if a.draft_model else ""))
        ratios.append(s1 / s0)
        if a.lcpp and a.draft_model and a.draft_model != "ngram":
            ls, lacc = lcpp_speculative(a)
            lb = lcpp_bench_tg(a)
            lratios.append(ls / lb)
            line += f" | llama.cpp: plain {lb:.2f} t/s, speculative {ls:.2f} t/s ({ls / lb:.2f}x), accepted {lacc:.0%}"
        print(line + f" | load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"median: ours {statistics.median(ratios):.2f}x" +
          (f", llama.cpp {statistics.median(lratios):.2f}x" if lratios else ""))
    plain.close()
    other.close()
    model.close()


if __name__ == "__main__":
    main()
