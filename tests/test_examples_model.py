"""What each model example prints on SmolLM2, checked (tests/test_examples.py checks that every
example runs; this file checks that its output is right).

Each example runs as a user runs it, in a subprocess from the examples folder. Oracles: the
high-level Llama class (greedy text, pooled embeddings) for the low-level ports, the model's
own unedited choice for the forbidden-token edit, and the GGUF header for the quantizer.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llama_py.llama import Llama
import llama_py.llama_cpp as C

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REPO = EXAMPLES.parent


def run_example(name, *args, env_lib, stdin="", timeout=180):
    env = dict(os.environ, LLAMA_PY_LIB=str(env_lib), PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO),
               PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    p = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], cwd=EXAMPLES, env=env, input=stdin,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{name} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p


@pytest.fixture(scope="module")
def llm(smollm2_path, lib_path):
    with Llama(str(smollm2_path), n_ctx=256) as m:
        yield m


def greedy(llm, prompt, n):
    llm.reset()  # the prompt decoded as one batch, as the examples do
    gen = llm.generate(llm.tokenize(prompt, special=True), temp=0)
    toks = [next(gen) for _ in range(n)]
    gen.close()
    return toks


def test_simple(smollm2_path, lib_path, llm):
    prompt = "The capital of France is"
    p = run_example("simple.py", "-m", smollm2_path, "-n", 16, prompt, env_lib=lib_path)
    n = int(re.search(r"decoded (\d+) tokens in [\d.]+ s, speed: [\d.]+ t/s", p.stderr).group(1))
    assert n >= 8
    toks = greedy(llm, prompt, n)
    assert p.stdout == prompt + llm.detokenize(toks).decode() + "\n"  # the low-level loop = the greedy text
    assert "Paris" in p.stdout


def test_simple_chat(smollm2_path, lib_path):
    p = run_example("simple_chat.py", "-m", smollm2_path, "-n", 24, "--temp", 0, env_lib=lib_path,
                    stdin="What is the capital of France?\nWhat is the capital of Germany?\n")
    turns = p.stdout.split("> ")[1:]
    assert len(turns) == 2
    assert turns[0].startswith("What is the capital of France?\n") and "Paris" in turns[0]
    assert turns[1].startswith("What is the capital of Germany?\n") and "Berlin" in turns[1]


def test_batched(smollm2_path, lib_path, llm):
    prompt = "Hello my name is"
    p = run_example("batched.py", "-m", smollm2_path, "-np", 3, "-n", 14, prompt, env_lib=lib_path)
    seqs = re.findall(r"sequence (\d+):\n(.*?)\n\n", p.stdout, re.S)
    assert [int(i) for i, _ in seqs] == [0, 1, 2]
    for _, text in seqs:
        assert text.startswith(prompt) and len(text) > len(prompt) + 3
    assert len({t for _, t in seqs}) > 1  # sampled independently per sequence (temp 0.4)
    m = re.search(r"decoded (\d+) tokens", p.stderr)
    n_prompt = len(llm.tokenize(prompt, special=True))
    assert m and 3 <= int(m.group(1)) <= 3 * (14 - n_prompt)  # -n is the total length, prompt included


def test_embedding(smollm2_path, lib_path):
    sents = ["The cat sat on the mat.", "A cat is sitting on a rug.", "Stock markets fell sharply today."]
    p = run_example("embedding.py", "-m", smollm2_path, *sents, env_lib=lib_path)
    heads = [[float(x) for x in m.split(", ")] for m in re.findall(r": \[(.*?), \.\.\.\] \(n_embd = 576\)", p.stdout)]
    assert len(heads) == 3
    rows = p.stdout.split("cosine similarity matrix:\n")[1].strip().splitlines()
    sim = np.array([[float(x) for x in r.split()] for r in rows])
    assert sim.shape == (3, 3)
    assert np.allclose(np.diag(sim), 1.0, atol=1e-3) and np.allclose(sim, sim.T, atol=1e-3)
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[1, 2]  # the two cat sentences are the closest pair
    with Llama(str(smollm2_path), n_ctx=128, embedding=True, pooling_type=C.LLAMA_POOLING_TYPE_MEAN,
               flash_attn=True, verbose=False) as e:  # the example's context uses flash attention (auto)  # the high-level mean-pooled embedding
        ref = np.array(e.embed(sents, normalize=True))
    assert np.allclose(np.array(heads), ref[:, :6], atol=1e-4)
    assert np.allclose(sim, ref @ ref.T, atol=2e-3)


def test_save_load_state(smollm2_path, lib_path):
    p = run_example("save_load_state.py", "-m", smollm2_path, "-n", 8, env_lib=lib_path)
    runs = dict(re.findall(r"^(first run|second run|third run \(sequence 1\)): (.*)$", p.stdout, re.M))
    assert len(runs) == 3 and len(set(runs.values())) == 1
    assert runs["first run"].startswith("The quick brown fox") and len(runs["first run"]) > 25
    assert "reproduced the first run" in p.stdout


def test_seed_example(smollm2_path, lib_path, llm):
    src = (EXAMPLES / "seed_example.py").read_text()
    for old in ("llama_load_model_from_file", "llama_new_context_with_model", "llama_tokenize(model",
                "llama_batch_add(", "llama_batch_clear(", "llama_token_is_eog(model", "llama_n_vocab(model)",
                "llama_token_to_piece(model", "llama_get_logits_ith", "llama_free_model", "n_gpu_layers = 35"):
        assert old in src
    prompt = "Shopping list:\n- eggs\n- milk\n- bread"
    forbidden = llm.tokenize("\n", add_bos=False)[0]
    assert greedy(llm, prompt, 1) == [forbidden]  # unedited, the model's first choice is the forbidden token
    p = run_example("seed_example.py", "-m", smollm2_path, prompt, env_lib=lib_path)
    assert p.stdout.startswith(prompt)
    m = re.search(r"generated (\d+) tokens; forbidden token (\d+) sampled (\d+) times", p.stderr)
    assert m, p.stderr
    assert int(m.group(1)) > 0 and int(m.group(2)) == forbidden and int(m.group(3)) == 0
    # seeded (dist 1234): the same text twice
    assert run_example("seed_example.py", "-m", smollm2_path, prompt, env_lib=lib_path).stdout == p.stdout


def test_quantize_example(smollm2_path, lib_path, tmp_path, llm):
    out = tmp_path / "q8.gguf"
    p = run_example("quantize.py", smollm2_path, out, "Q8_0", env_lib=lib_path)
    assert f"wrote {out}" in p.stdout
    assert out.read_bytes()[:4] == b"GGUF"
    prompt = "The capital of France is"
    with Llama(str(out), n_ctx=64) as q:
        assert C_ftype(q) == "Q8_0"
        text = q.create_completion(prompt, max_tokens=6, temperature=0)["choices"][0]["text"]
    assert "Paris" in text
    bad = subprocess.run([sys.executable, str(EXAMPLES / "quantize.py"), str(smollm2_path), str(out), "Q9"],
                         capture_output=True, text=True, env=dict(os.environ, LLAMA_PY_LIB=str(lib_path)))
    assert bad.returncode == 2 and "usage" in bad.stderr


def C_ftype(llm) -> str:
    import ctypes
    import llama_py.llama_cpp as C
    buf = ctypes.create_string_buffer(64)
    C.llama_model_desc(llm._model, buf, 64)
    return buf.value.decode().split()[-1]
