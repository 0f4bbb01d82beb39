#!/usr/bin/env python3
"""Port of llama.cpp's examples/simple: greedy generation through the low-level API.

    python examples/simple.py [-m MODEL] [-n N_PREDICT] [PROMPT]
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
    ap.add_argument("-n", "--n-predict", type=int, default=32)
    ap.add_argument("prompt", nargs="*", default=["Hello my name is"])
    args = ap.parse_args()
    prompt = " ".join(args.prompt)
    _log = quiet_logs(llama_cpp)

    llama_cpp.llama_backend_init()
    model_params = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(model_path(args.model).encode(), model_params)
    if not model:
        die("error: unable to load model")
    vocab = llama_cpp.llama_model_get_vocab(model)

    # find the number of tokens in the prompt, then tokenize it
    p = prompt.encode()
    n_prompt = -llama_cpp.llama_tokenize(vocab, p, len(p), None, 0, True, True)
    prompt_tokens = (llama_cpp.llama_token * n_prompt)()
    if llama_cpp.llama_tokenize(vocab, p, len(p), prompt_tokens, n_prompt, True, True) < 0:
        die("error: failed to tokenize the prompt")

    ctx_params = llama_cpp.llama_context_default_params()
    ctx_params.n_ctx = n_prompt + args.n_predict - 1
    ctx_params.n_batch = n_prompt
    ctx_params.no_perf = False
    ctx = llama_cpp.llama_init_from_model(model, ctx_params)
    if not ctx:
        die("error: failed to create the llama_context")

    sparams = llama_cpp.llama_sampler_chain_default_params()
    sparams.no_perf = False
    smpl = llama_cpp.llama_sampler_chain_init(sparams)
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_greedy())

    # print the prompt token by token
    buf = ctypes.create_string_buffer(128)
    for tok in prompt_tokens:
        n = llama_cpp.llama_token_to_piece(vocab, tok, buf, len(buf), 0, True)
        if n < 0:
            die("error: failed to convert token to piece")
        sys.stdout.buffer.write(buf.raw[:n])
    sys.stdout.flush()

    batch = llama_cpp.llama_batch_get_one(prompt_tokens, n_prompt)
    t_main_start = time.perf_counter()
    n_decode = 0
    n_pos = 0
    new_token = (llama_cpp.llama_token * 1)()
    while n_pos + batch.n_tokens < n_prompt + args.n_predict:
        if llama_cpp.llama_decode(ctx, batch):
            die("failed to eval")
        n_pos += batch.n_tokens
        new_token_id = llama_cpp.llama_sampler_sample(smpl, ctx, -1)
        if llama_cpp.llama_vocab_is_eog(vocab, new_token_id):
            break
        n = llama_cpp.llama_token_to_piece(vocab, new_token_id, buf, len(buf), 0, True)
        if n < 0:
            die("error: failed to convert token to piece")
        sys.stdout.buffer.write(buf.raw[:n])
        sys.stdout.flush()
        new_token[0] = new_token_id
        batch = llama_cpp.llama_batch_get_one(new_token, 1)
        n_decode += 1
    print()
    t = time.perf_counter() - t_main_start
    print(f"decoded {n_decode} tokens in {t:.2f} s, speed: {n_decode / max(t, 1e-9):.2f} t/s", file=sys.stderr)

    llama_cpp.llama_sampler_free(smpl)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
