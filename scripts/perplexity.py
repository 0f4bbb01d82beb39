#!/usr/bin/env python3
"""Perplexity of a model over a text, computed with this project's engine.

The text is tokenized whole, then read through windows of n_ctx tokens that advance by half a
window; every token is scored exactly once (each window scores the tokens the previous one did
not), so all but the first half-window see at least n_ctx/2 tokens of context:

    ppl = exp( mean over scored tokens t_i of -log softmax(logits_{i-1})[t_i] )

    python scripts/perplexity.py --model SmolLM2-135M-Instruct.Q4_1.gguf
    python scripts/perplexity.py --model m.gguf --text tests/data/alice-chapter1.txt --n-ctx 512
    python scripts/perplexity.py --model m.gguf --chunks     # scored as llama-perplexity scores

The default text is the opening chapter of Lewis Carroll's "Alice's Adventures in Wonderland"
(1865, public domain), about 2,600 tokens.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import llama_py.llama_cpp as L  # noqa: E402

DEFAULT_TEXT = ROOT / "tests" / "data" / "alice-chapter1.txt"


def tokenize(vocab, text: str) -> list:
    data = text.encode("utf-8")
    cap = len(data) + 16
    buf = (L.llama_token * cap)()
    n = L.llama_tokenize(vocab, data, len(data), buf, cap, True, False)
    if n < 0:
        raise RuntimeError(f"tokenize failed ({n})")
    return list(buf[:n])


def perplexity(model_path: str, text: str, n_ctx: int = 512, n_threads: int = 0, verbose: bool = True,
               chunks: bool = False):
    """Returns (perplexity, tokens scored, tokens in the text). chunks: llama.cpp's scheme
    (llama-perplexity) instead: the text cut into whole windows of n_ctx tokens, the first token
    of each replaced by BOS when the vocabulary adds one, and only the tokens of each window's
    second half scored, so that the numbers compare with llama-perplexity's."""
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(str(model_path).encode(), mp)
    if not model:
        raise RuntimeError(f"cannot load {model_path}")
    ctx = None
    batch = None
    try:
        vocab = L.llama_model_get_vocab(model)
        n_vocab = L.llama_vocab_n_tokens(vocab)
        tokens = tokenize(vocab, text)
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_ctx
        if n_threads > 0:
            cp.n_threads = cp.n_threads_batch = n_threads
        ctx = L.llama_init_from_model(model, cp)
        if not ctx:
            raise RuntimeError("cannot create a context")
        mem = L.llama_get_memory(ctx)
        batch = L.llama_batch_init(n_ctx, 0, 1)
        stride = max(1, n_ctx // 2)
        nll = 0.0
        scored = 0
        if chunks:
            return _perplexity_chunks(ctx, mem, batch, vocab, tokens, n_ctx, n_vocab, verbose)
        done = 1  # tokens [0, done) are scored or cannot be (the first has no context)
        start = 0
        t0 = time.time()
        while done < len(tokens):
            chunk = tokens[start:start + n_ctx]
            L.llama_memory_clear(mem, False)
            batch.n_tokens = len(chunk)
            for i, t in enumerate(chunk):
                batch.token[i] = t
                batch.pos[i] = i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 1 if start + i + 1 >= done else 0  # predicts token start+i+1
            rc = L.llama_decode(ctx, batch)
            if rc != 0:
                raise RuntimeError(f"llama_decode returned {rc}")
            for j in range(max(done, start + 1), start + len(chunk)):
                row = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, j - 1 - start), shape=(n_vocab,))
                row = row.astype(np.float64)
                mx = row.max()
                lse = mx + math.log(np.exp(row - mx).sum())
                nll += lse - row[tokens[j]]
                scored += 1
            done = start + len(chunk)
            if verbose:
                print(f"  [{done}/{len(tokens)}] running ppl {math.exp(nll / max(scored, 1)):.3f}", file=sys.stderr)
            start += stride
        if verbose:
            print(f"  {time.time() - t0:.1f} s", file=sys.stderr)
        return math.exp(nll / scored), scored, len(tokens)
    finally:
        if batch is not None:
            L.llama_batch_free(batch)
        if ctx:
            L.llama_free(ctx)
        L.llama_model_free(model)


def _perplexity_chunks(ctx, mem, batch, vocab, tokens, n_ctx, n_vocab, verbose):
    nll, scored = 0.0, 0
    first = n_ctx // 2
    n_chunks = len(tokens) // n_ctx
    if n_chunks == 0:
        raise RuntimeError(f"the text has {len(tokens)} tokens, fewer than n_ctx = {n_ctx}")
    bos = L.llama_vocab_bos(vocab) if L.llama_vocab_get_add_bos(vocab) else -1
    for c in range(n_chunks):
        chunk = tokens[c * n_ctx:(c + 1) * n_ctx]
        if bos >= 0:
            chunk = [bos] + chunk[1:]
        L.llama_memory_clear(mem, False)
        batch.n_tokens = n_ctx
        for i, t in enumerate(chunk):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = t, i, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1 if i >= first else 0
        if L.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        for j in range(first, n_ctx - 1):
            row = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, j), shape=(n_vocab,)).astype(np.float64)
            mx = row.max()
            nll += mx + math.log(np.exp(row - mx).sum()) - row[tokens[c * n_ctx + j + 1]]
            scored += 1
        if verbose:
            print(f"  [{c + 1}/{n_chunks}] running ppl {math.exp(nll / scored):.4f}", file=sys.stderr)
    return math.exp(nll / scored), scored, len(tokens)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", "-m", required=True)
    ap.add_argument("--text", type=Path, default=DEFAULT_TEXT)
    ap.add_argument("--n-ctx", type=int, default=512)
    ap.add_argument("--threads", "-t", type=int, default=0)
    ap.add_argument("--quiet", "-q", action="store_true")
    ap.add_argument("--chunks", action="store_true",
                    help="llama-perplexity's scheme (whole windows, second halves scored), to compare with it")
    a = ap.parse_args(argv)
    text = a.text.read_text(encoding="utf-8")
    ppl, scored, n = perplexity(a.model, text, n_ctx=a.n_ctx, n_threads=a.threads, verbose=not a.quiet,
                                chunks=a.chunks)
    scheme = ", llama.cpp chunks" if a.chunks else ""
    print(f"perplexity: {ppl:.4f} over {scored} scored tokens ({n} tokens, n_ctx {a.n_ctx}{scheme}, {a.text.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
