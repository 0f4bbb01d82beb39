#!/usr/bin/env python3
"""The C++ program of the tutorial "A Complete Guide to llama.cpp and Customization with C++",
ported line by line to llama_py's low-level API (older names included, as the tutorial uses
them): load, tokenize, batch, decode, a top-k / top-p / temperature / seeded-dist chain, and a
forbidden token whose logit is edited before sampling.

    python examples/seed_example.py [-m MODEL] [PROMPT]
"""
import ctypes
import os
import sys
import warnings

import llama_py.llama_cpp as llama_cpp
from _common import model_path, quiet_logs

warnings.simplefilter("ignore", DeprecationWarning)  # the tutorial uses the older names on purpose


def main():
    args = [a for a in sys.argv[1:]]
    mpath = None
    if len(args) >= 2 and args[0] == "-m":
        mpath = args[1]
        args = args[2:]
    prompt = " ".join(args) if args else "Once upon a time"
    _log = quiet_logs(llama_cpp)

    llama_cpp.llama_backend_init()

    model_params = llama_cpp.llama_model_default_params()
    model_params.n_gpu_layers = 35
    model = llama_cpp.llama_load_model_from_file(model_path(mpath).encode(), model_params)
    if not model:
        print("Failed to load model", file=sys.stderr)
        return 1

    ctx_params = llama_cpp.llama_context_default_params()
    ctx_params.n_ctx = 2048
    ctx_params.n_threads = os.cpu_count() or 1
    ctx = llama_cpp.llama_new_context_with_model(model, ctx_params)
    if not ctx:
        print("Failed to create context", file=sys.stderr)
        return 1

    # tokenize the prompt
    text = prompt.encode()
    n_max = len(text) + 16
    tokens = (llama_cpp.llama_token * n_max)()
    n_tokens = llama_cpp.llama_tokenize(model, text, len(text), tokens, n_max, True, False)
    if n_tokens < 0:
        print("Failed to tokenize", file=sys.stderr)
        return 1

    batch = llama_cpp.llama_batch_init(512, 0, 1)
    for i in range(n_tokens):
        llama_cpp.llama_batch_add(batch, tokens[i], i, [0], False)
    batch.logits[batch.n_tokens - 1] = True
    if llama_cpp.llama_decode(ctx, batch) != 0:
        print("llama_decode failed", file=sys.stderr)
        return 1

    smpl = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_top_k(40))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_top_p(0.9, 1))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_temp(0.7))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_dist(1234))

    # the tutorial's customization: a forbidden token can never be generated
    forbidden = llama_cpp.llama_token_nl(model)
    n_vocab = llama_cpp.llama_n_vocab(model)

    n_cur = batch.n_tokens
    n_len = n_cur + 32
    out = b""
    generated = []
    buf = ctypes.create_string_buffer(128)
    while n_cur <= n_len:
        logits = llama_cpp.llama_get_logits_ith(ctx, batch.n_tokens - 1)
        if 0 <= forbidden < n_vocab:
            logits[forbidden] = -float("inf")
        new_token_id = llama_cpp.llama_sampler_sample(smpl, ctx, -1)
        if llama_cpp.llama_token_is_eog(model, new_token_id) or n_cur == n_len:
            break
        n = llama_cpp.llama_token_to_piece(model, new_token_id, buf, 128, 0, False)
        out += buf.raw[:max(n, 0)]
        generated.append(new_token_id)
        llama_cpp.llama_batch_clear(batch)
        llama_cpp.llama_batch_add(batch, new_token_id, n_cur, [0], True)
        n_cur += 1
        if llama_cpp.llama_decode(ctx, batch) != 0:
            print("llama_decode failed", file=sys.stderr)
            return 1
    print(prompt + out.decode("utf-8", "replace"))
    print(f"generated {len(generated)} tokens; forbidden token {forbidden} sampled {generated.count(forbidden)} times",
          file=sys.stderr)

    llama_cpp.llama_sampler_free(smpl)
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_free_model(model)
    llama_cpp.llama_backend_free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
