#!/usr/bin/env python3
"""Port of llama.cpp's examples/simple-chat: a chat loop using the model's chat template.

Reads user lines from stdin (one message per line) and streams the replies.

    echo "What is the capital of France?" | python examples/simple_chat.py [-m MODEL]
"""
import argparse
import ctypes
import sys

import llama_py.llama_cpp as llama_cpp
from _common import die, model_path, quiet_logs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("-c", "--ctx-size", type=int, default=2048)
    ap.add_argument("-n", "--n-predict", type=int, default=128)
    ap.add_argument("--temp", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=llama_cpp.LLAMA_DEFAULT_SEED)
    args = ap.parse_args()
    _log = quiet_logs(llama_cpp)
    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(model_path(args.model).encode(), llama_cpp.llama_model_default_params())
    if not model:
        die("error: unable to load model")
    vocab = llama_cpp.llama_model_get_vocab(model)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = args.ctx_size
    cp.n_batch = args.ctx_size
    ctx = llama_cpp.llama_init_from_model(model, cp)
    if not ctx:
        die("error: failed to create the llama_context")
    smpl = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_min_p(0.05, 1))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_temp(args.temp))
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_dist(args.seed))

    tmpl = llama_cpp.llama_model_chat_template(model, None)
    messages = []      # (role, content) as bytes, kept alive for the C array
    prev_len = 0
    buf = ctypes.create_string_buffer(256)

    def formatted(add_ass):
        arr = (llama_cpp.llama_chat_message * len(messages))()
        for i, (r, c) in enumerate(messages):
            arr[i].role, arr[i].content = r, c
        n = llama_cpp.llama_chat_apply_template(tmpl, arr, len(messages), add_ass, None, 0)
        if n < 0:
            die("failed to apply the chat template")
        out = ctypes.create_string_buffer(n + 1)
        llama_cpp.llama_chat_apply_template(tmpl, arr, len(messages), add_ass, out, n + 1)
        return out.raw[:n]

    for line in sys.stdin:
        user = line.rstrip("\n")
        if not user:
            continue
        print(f"> {user}")
        messages.append((b"user", user.encode()))
        text = formatted(True)
        prompt = text[prev_len:]
        is_first = llama_cpp.llama_memory_seq_pos_max(llama_cpp.llama_get_memory(ctx), 0) == -1
        n = -llama_cpp.llama_tokenize(vocab, prompt, len(prompt), None, 0, is_first, True)
        toks = (llama_cpp.llama_token * n)()
        llama_cpp.llama_tokenize(vocab, prompt, len(prompt), toks, n, is_first, True)
        batch = llama_cpp.llama_batch_get_one(toks, n)
        response = b""
        tok = (llama_cpp.llama_token * 1)()
        for _ in range(args.n_predict):
            n_ctx_used = llama_cpp.llama_memory_seq_pos_max(llama_cpp.llama_get_memory(ctx), 0) + 1
            if n_ctx_used + batch.n_tokens > llama_cpp.llama_n_ctx(ctx):
                print()
                die("context size exceeded")
            if llama_cpp.llama_decode(ctx, batch):
                die("failed to decode")
            t = llama_cpp.llama_sampler_sample(smpl, ctx, -1)
            if llama_cpp.llama_vocab_is_eog(vocab, t):
                break
            k = llama_cpp.llama_token_to_piece(vocab, t, buf, len(buf), 0, True)
            piece = buf.raw[:max(k, 0)]
            sys.stdout.buffer.write(piece)
            sys.stdout.flush()
            response += piece
            tok[0] = t
            batch = llama_cpp.llama_batch_get_one(tok, 1)
        print()
        messages.append((b"assistant", response))
        prev_len = len(formatted(False))

    llama_cpp.llama_sampler_free(smpl)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
