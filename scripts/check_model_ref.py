#!/usr/bin/env python3
"""Checks a real GGUF against the float64 NumPy reference (tests/llama_ref.py) and prints greedy
continuations: numbers for a closing note, not a pass/fail test (the reference of a 0.5B model
needs a few GB of memory and minutes of CPU).

    python scripts/check_model_ref.py -m ~/.cache/llama_py/gemma-3-270m-q4_k_m.gguf --n-tokens 128

Prints, over the first n tokens of the text (default: tests/data/alice-chapter1.txt):
  top-1 agreement  the fraction of positions where our argmax equals the reference's
  max rel          max |ours - ref| / max |ref| over all logits
and then each prompt's greedy continuation (ours).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import llama_py.llama_cpp as L  # noqa: E402
from llama_ref import LlamaRef  # noqa: E402
from model_util import Ctx, Model, piece_of, tokens_of  # noqa: E402

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
           "The three primary colors are"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", "-m", required=True)
    ap.add_argument("--text", type=Path, default=ROOT / "tests" / "data" / "alice-chapter1.txt")
    ap.add_argument("--n-tokens", type=int, default=128)
    ap.add_argument("--n-gen", type=int, default=24)
    ap.add_argument("--no-ref", action="store_true", help="only the greedy continuations")
    a = ap.parse_args()
    with Model(a.model) as m:
        toks = tokens_of(m, a.text.read_text(encoding="utf-8"))[:a.n_tokens]
        with Ctx(m, n_ctx=max(512, a.n_tokens), n_batch=max(512, a.n_tokens), type_k=0, type_v=0) as c:
            assert c.decode_seq(toks) == 0
            ours = c.all_logits(len(toks))
            for p in PROMPTS:
                L.llama_memory_clear(c.mem, True)
                pt = tokens_of(m, p)
                assert c.decode_seq(pt, all_logits=False) == 0
                out, n = [], len(pt)
                for _ in range(a.n_gen):
                    t = int(np.argmax(c.logits(-1)))
                    if L.llama_vocab_is_eog(m.vocab, t):
                        break
                    out.append(t)
                    assert c.decode_seq([t], start=n) == 0
                    n += 1
                text = "".join(piece_of(m, t) for t in out)
                print(f"greedy: {p!r} -> {text!r}")
    if a.no_ref:
        return 0
    t0 = time.time()
    ref = LlamaRef(a.model, storage=np.float32).forward(toks)
    agree = float(np.mean(ours.argmax(-1) == ref.argmax(-1)))
    rel = float(np.abs(ours - ref).max() / np.abs(ref).max())
    # where the choices differ: how far (in the reference's logits) ours is from its best
    ours_top = ours.argmax(-1)
    diff = np.nonzero(ours_top != ref.argmax(-1))[0]
    gaps = [float(ref[i].max() - ref[i, ours_top[i]]) for i in diff]
    spread = float(np.median(ref.max(-1) - np.sort(ref, -1)[:, -2]))
    print(f"{Path(a.model).name}: top-1 agreement with the float64 reference {agree:.4f} over {len(toks)} "
          f"positions, max rel {rel:.3e} (reference {time.time() - t0:.0f} s); where they differ the "
          f"reference prefers its choice by {', '.join(f'{g:.3f}' for g in gaps) or '-'} "
          f"(median top-1/top-2 gap {spread:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
