#!/usr/bin/env python3
"""Port of llama.cpp's examples/batched: N parallel continuations of one prompt, decoded
together in one batch per step (the prompt's KV cells are shared by all sequences).

    python examples/batched.py [-m MODEL] [-np N_PARALLEL] [-n N_PREDICT] [PROMPT]
"""
import argparse
import ctypes
import sys
import time

import llama_py.llama_cpp as llama_cpp
from _common import die, model_path, quiet_logs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("-np", "--n-parallel", type=int, default=4)
    ap.add_argument("-n", "--n-predict", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("prompt", nargs="*", default=["Hello my name is"])
    args = ap.parse_args()
    prompt = " ".join(args.prompt).encode()
    n_parallel = args.n_parallel
    _log = quiet_logs(llama_cpp)

    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(model_path(args.model).encode(), llama_cpp.llama_model_default_params())
    if not model:
        die("error: unable to load model")
    vocab = llama_cpp.llama_model_get_vocab(model)

    n_prompt = -llama_cpp.llama_tokenize(vocab, prompt, len(prompt), None, 0, True, True)
    tokens = (llama_cpp.llama_token * n_prompt)()
    llama_cpp.llama_tokenize(vocab, prompt, len(prompt), tokens, n_prompt, True, True)

    n_kv_req = n_prompt + (args.n_predict - n_prompt) * n_parallel if args.n_predict > n_prompt else n_prompt + args.n_predict * n_parallel
    ctx_params = llama_cpp.llama_context_default_params()
    ctx_params.n_ctx = n_kv_req
    ctx_params.n_batch = max(args.n_predict, n_parallel, n_prompt)
    ctx_params.n_seq_max = n_parallel
    ctx = llama_cpp.llama_init_from_model(model, ctx_params)
    if not ctx:
        die("error: failed to create the llama_context")

    smpl = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_top_k(40))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_top_p(0.9, 1))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_temp(0.4))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_dist(args.seed))

    batch = llama_cpp.llama_batch_init(max(n_prompt, n_parallel), 0, n_parallel)
    # the prompt belongs to every sequence
    for i in range(n_prompt):
        llama_cpp.llama_batch_add(batch, tokens[i], i, list(range(n_parallel)), False)
    batch.logits[batch.n_tokens - 1] = True
    if llama_cpp.llama_decode(ctx, batch) != 0:
        die("llama_decode() failed")

    streams = [b""] * n_parallel
    i_batch = [batch.n_tokens - 1] * n_parallel
    n_cur = n_prompt
    n_decode = 0
    t0 = time.perf_counter()
    buf = ctypes.create_string_buffer(128)
    while n_cur <= args.n_predict:
        llama_cpp.llama_batch_clear(batch)
        for i in range(n_parallel):
            if i_batch[i] < 0:
                continue
            tok = llama_cpp.llama_sampler_sample(smpl, ctx, i_batch[i])
            if llama_cpp.llama_vocab_is_eog(vocab, tok) or n_cur == args.n_predict:
                i_batch[i] = -1
                continue
            n = llama_cpp.llama_token_to_piece(vocab, tok, buf, len(buf), 0, True)
            streams[i] += buf.raw[:max(n, 0)]
            i_batch[i] = batch.n_tokens
            llama_cpp.llama_batch_add(batch, tok, n_cur, [i], True)
            n_decode += 1
        if batch.n_tokens == 0:
            break
        n_cur += 1
        if llama_cpp.llama_decode(ctx, batch) != 0:
            die("llama_decode() failed")
    dt = time.perf_counter() - t0
    for i, s in enumerate(streams):
        print(f"sequence {i}:\n{prompt.decode()}{s.decode('utf-8', 'replace')}\n")
    print(f"decoded {n_decode} tokens in {dt:.2f} s, speed: {n_decode / max(dt, 1e-9):.2f} t/s", file=sys.stderr)

    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_sampler_free(smpl)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
