#!/usr/bin/env python3
"""Port of llama.cpp's examples/save-load-state: generate, save the state, restore it into a
fresh context and check that the continuation is identical; then save only sequence 0 and
restore it as sequence 1 of a cleared context, which must continue the same way too.

    python examples/save_load_state.py [-m MODEL] [-n N_PREDICT]
"""
import argparse
import ctypes
import os
import sys
import tempfile

import llama_py.llama_cpp as llama_cpp
from _common import die, model_path, quiet_logs


def make_ctx(model):
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = 256
    cp.n_seq_max = 2  # the third run moves sequence 0 into sequence 1
    ctx = llama_cpp.llama_init_from_model(model, cp)
    if not ctx:
        die("failed to create a context")
    return ctx


def make_sampler(seed):
    smpl = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    llama_cpp.llama_sampler_chain_add(smpl, llama_cpp.llama_sampler_init_dist(seed))
    return smpl


def generate(ctx, smpl, vocab, n_past, n):
    out = b""
    buf = ctypes.create_string_buffer(128)
    tok = (llama_cpp.llama_token * 1)()
    for _ in range(n):
        t = llama_cpp.llama_sampler_sample(smpl, ctx, -1)
        k = llama_cpp.llama_token_to_piece(vocab, t, buf, len(buf), 0, True)
        out += buf.raw[:max(k, 0)]
        tok[0] = t
        if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(tok, 1)):
            die("decode failed")
        n_past += 1
    return out


def generate_seq(ctx, smpl, vocab, n_past, n, seq_id):
    """generate() on another sequence: each new token goes into a batch tagged with seq_id."""
    out = b""
    buf = ctypes.create_string_buffer(128)
    batch = llama_cpp.llama_batch_init(1, 0, 1)
    for _ in range(n):
        t = llama_cpp.llama_sampler_sample(smpl, ctx, -1)
        k = llama_cpp.llama_token_to_piece(vocab, t, buf, len(buf), 0, True)
        out += buf.raw[:max(k, 0)]
        llama_cpp.llama_batch_clear(batch)
        llama_cpp.llama_batch_add(batch, t, n_past, [seq_id], True)
        if llama_cpp.llama_decode(ctx, batch):
            die("decode failed")
        n_past += 1
    llama_cpp.llama_batch_free(batch)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("-n", "--n-predict", type=int, default=16)
    ap.add_argument("-p", "--prompt", default="The quick brown fox")
    args = ap.parse_args()
    _log = quiet_logs(llama_cpp)
    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(model_path(args.model).encode(), llama_cpp.llama_model_default_params())
    if not model:
        die("error: unable to load model")
    vocab = llama_cpp.llama_model_get_vocab(model)
    p = args.prompt.encode()
    n = -llama_cpp.llama_tokenize(vocab, p, len(p), None, 0, True, False)
    toks = (llama_cpp.llama_token * n)()
    llama_cpp.llama_tokenize(vocab, p, len(p), toks, n, True, False)

    # first run: prompt, save state, generate
    ctx = make_ctx(model)
    smpl = make_sampler(1234)
    if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(toks, n)):
        die("decode failed")
    size = llama_cpp.llama_state_get_size(ctx)
    state = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(ctx, state, size)
    path = os.path.join(tempfile.mkdtemp(), "dump_state.bin")
    with open(path, "wb") as f:
        f.write(bytes(state[:written]))
    first = generate(ctx, smpl, vocab, n, args.n_predict)
    print(f"first run: {args.prompt}{first.decode('utf-8', 'replace')}")
    llama_cpp.llama_sampler_free(smpl)
    llama_cpp.llama_free(ctx)

    # second run: fresh context, load the state, same sampler seed
    ctx2 = make_ctx(model)
    smpl2 = make_sampler(1234)
    data = open(path, "rb").read()
    buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_set_data(ctx2, buf, len(data)) != len(data):
        die("failed to restore the state")
    second = generate(ctx2, smpl2, vocab, n, args.n_predict)
    print(f"second run: {args.prompt}{second.decode('utf-8', 'replace')}")
    llama_cpp.llama_sampler_free(smpl2)
    if first != second:
        die("error: the restored state did not reproduce the first run")

    # third run: only sequence 0 of the restored context, copied into sequence 1 of a fresh one
    ctx3 = make_ctx(model)
    smpl3 = make_sampler(1234)
    if llama_cpp.llama_state_set_data(ctx3, buf, len(data)) != len(data):
        die("failed to restore the state")
    seq_size = llama_cpp.llama_state_seq_get_size(ctx3, 0)
    seq_store = (ctypes.c_uint8 * seq_size)()
    if llama_cpp.llama_state_seq_get_data(ctx3, seq_store, seq_size, 0) != seq_size:
        die("failed to save the sequence state")
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx3), True)
    if llama_cpp.llama_state_seq_set_data(ctx3, seq_store, seq_size, 1) != seq_size:
        die("failed to restore the sequence state into sequence 1")
    third = generate_seq(ctx3, smpl3, vocab, n, args.n_predict, 1)
    print(f"third run (sequence 1): {args.prompt}{third.decode('utf-8', 'replace')}")
    llama_cpp.llama_sampler_free(smpl3)
    llama_cpp.llama_free(ctx3)
    llama_cpp.llama_free(ctx2)
    llama_cpp.llama_model_free(model)
    if first != third:
        die("error: the restored sequence state did not reproduce the first run")
    print("the restored state reproduced the first run (whole context and single sequence)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
