#!/usr/bin/env python3
"""Speculative decoding against plain decoding, alternating runs, greedy.

    python scripts/bench_speculative.py -m TARGET.gguf [--draft-model DRAFT.gguf | --lookup] [-n 128] [-r 3]

Without --draft-model the draft is prompt lookup (LlamaPromptLookupDecoding) on a repetitive
editing prompt (a code file asked back with one change); with it, LlamaSpeculativeModel. Prints
tokens/s of each run, the median ratio and the acceptance rate, and checks both outputs agree.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llama_py import Llama  # noqa: E402
from llama_py.llama_speculative import LlamaPromptLookupDecoding, LlamaSpeculativeModel  # noqa: E402

CODE = "\n".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n" for i in range(12))
PROMPT = f"Here is a Python file:\n\n{CODE}\nThe same file with f3 renamed to g3:\n\n"


def run(llm, n):
    t0 = time.perf_counter()
    out = llm.create_completion(PROMPT, max_tokens=n, temperature=0.0)
    dt = time.perf_counter() - t0
    return out["choices"][0]["text"], out["usage"]["completion_tokens"] / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--draft-model", default=None)
    ap.add_argument("--n-draft", type=int, default=8)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=None)
    a = ap.parse_args()
    draft = (LlamaSpeculativeModel(a.draft_model, n_draft=a.n_draft, n_threads=a.threads) if a.draft_model
             else LlamaPromptLookupDecoding(max_ngram_size=3, num_pred_tokens=a.n_draft))
    kw = dict(n_ctx=2048, verbose=False, n_threads=a.threads, n_threads_batch=a.threads)
    plain, spec = Llama(a.model, **kw), Llama(a.model, draft_model=draft, **kw)
    ratios = []
    for r in range(a.repeats):
        t_plain, s_plain = run(plain, a.n)
        spec.n_drafted = spec.n_accepted = 0
        t_spec, s_spec = run(spec, a.n)
        same = "same" if t_plain == t_spec else "DIFFERENT"
        acc = spec.n_accepted / max(1, spec.n_drafted)
        print(f"run {r}: plain {s_plain:.1f} t/s, speculative {s_spec:.1f} t/s ({s_spec / s_plain:.2f}x), "
              f"accepted {spec.n_accepted}/{spec.n_drafted} ({acc:.0%}), output {same}")
        ratios.append(s_spec / s_plain)
    print(f"median speedup {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
