#!/usr/bin/env python3
"""Port of llama.cpp's examples/embedding: mean-pooled, normalised sentence embeddings and
their cosine similarities.

    python examples/embedding.py [-m MODEL] [SENTENCE ...]
"""
import argparse
import math
import sys

import llama_py.llama_cpp as llama_cpp
from _common import die, model_path, quiet_logs


def embed(ctx, vocab, n_embd, text: bytes):
    n = -llama_cpp.llama_tokenize(vocab, text, len(text), None, 0, True, False)
    toks = (llama_cpp.llama_token * n)()
    llama_cpp.llama_tokenize(vocab, text, len(text), toks, n, True, False)
    batch = llama_cpp.llama_batch_init(n, 0, 1)
    for i in range(n):
        llama_cpp.llama_batch_add(batch, toks[i], i, [0], True)
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
    if llama_cpp.llama_decode(ctx, batch) != 0:
        die("llama_decode() failed")
    ptr = llama_cpp.llama_get_embeddings_seq(ctx, 0)
    if not ptr:
        die("no pooled embedding")
    vec = [ptr[i] for i in range(n_embd)]
    llama_cpp.llama_batch_free(batch)
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("sentences", nargs="*", default=["The cat sat on the mat.", "A cat is sitting on a rug.",
                                                      "Stock markets fell sharply today."])
    args = ap.parse_args()
    _log = quiet_logs(llama_cpp)
    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(model_path(args.model).encode(), llama_cpp.llama_model_default_params())
    if not model:
        die("error: unable to load model")
    vocab = llama_cpp.llama_model_get_vocab(model)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = 512
    cp.n_batch = 512
    cp.embeddings = True
    cp.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_MEAN
    ctx = llama_cpp.llama_init_from_model(model, cp)
    if not ctx:
        die("error: failed to create the llama_context")
    n_embd = llama_cpp.llama_model_n_embd(model)
    vecs = [embed(ctx, vocab, n_embd, s.encode()) for s in args.sentences]
    for s, v in zip(args.sentences, vecs):
        print(f"embedding of {s!r}: [{', '.join(f'{x:.4f}' for x in v[:6])}, ...] (n_embd = {n_embd})")
    print("cosine similarity matrix:")
    for i, a in enumerate(vecs):
        print(" ".join(f"{sum(x * y for x, y in zip(a, b)):6.3f}" for b in vecs))
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
