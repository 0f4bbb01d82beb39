"""LoRA adapters in the server: `--lora`, a request's `lora` field, GET/POST /lora-adapters, and
requests with DIFFERENT adapters decoded in the same step, each giving what the Llama class
gives with that adapter alone (greedy, token for token).

The adapters are random rank-8 LoRA GGUFs for SmolLM2-135M on every attention and MLP
projection, written with the gguf package from NumPy arrays (the model's shapes read back by
gguf's reader)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llama_py.server.engine import Engine, GenRequest, Model, SamplingParams

GREEDY = SamplingParams(temperature=0)
PROMPTS = ["The capital of France is", "Once upon a time", "def fibonacci(n):", "The quick brown fox"]
TARGETS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def write_random_lora(model_path: Path, out: Path, seed: int, rank: int = 8, alpha: float = 16.0,
                      strength: float = 1.0, alora=None) -> Path:
    """A LoRA GGUF (llama.cpp's format) adapting every attention and MLP projection of the model
    at model_path with random A [r, n_in] and B [n_out, r] (NumPy shapes); alora: its invocation
    tokens (an activated LoRA)."""
    import gguf
    rd = gguf.GGUFReader(str(model_path))
    arch = bytes(rd.fields["general.architecture"].parts[-1]).decode()
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(out), arch)
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", alpha)
    if alora:
        w.add_array("adapter.alora.invocation_tokens", list(alora))
    for t in rd.tensors:
        base = t.name.rsplit(".", 1)[0]          # blk.N.attn_q
        if not t.name.endswith(".weight") or base.split(".")[-1] not in TARGETS:
            continue
        n_in, n_out = int(t.shape[0]), int(t.shape[1])   # gguf shape order: ne0 (inputs) first
        a = (rng.standard_normal((rank, n_in)) / np.sqrt(n_in)).astype(np.float32)
        b = (rng.standard_normal((n_out, rank)) * strength / rank).astype(np.float32)
        w.add_tensor(t.name + ".lora_a", a)
        w.add_tensor(t.name + ".lora_b", b)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


@pytest.fixture(scope="module")
def adapters(smollm2_path, tmp_path_factory):
    pytest.importorskip("gguf")
    d = tmp_path_factory.mktemp("server-lora")
    return [write_random_lora(smollm2_path, d / f"lora{i}.gguf", seed=i) for i in range(2)]


@pytest.fixture(scope="module")
def model(smollm2_path):
    m = Model(str(smollm2_path))
    yield m
    m.close()


def _llama_ref(smollm2_path, prompts, n, lora=None):
    """Greedy completions of the Llama class with one adapter (path, scale) or none."""
    from llama_py import Llama
    kw = dict(lora_path=str(lora[0]), lora_scale=lora[1]) if lora else {}
    with Llama(str(smollm2_path), n_ctx=512, flash_attn=True, verbose=False, **kw) as llm:
        out = []
        for p in prompts:
            out.append(llm.create_completion(p, max_tokens=n, temperature=0)["choices"][0]["text"])
            llm.reset()
        return out


def test_different_adapters_in_one_step_match_single_requests(model, smollm2_path, adapters):
    a0, a1 = adapters
    n = 12
    cases = [({0: 1.0}, (a0, 1.0)), ({1: 0.5}, (a1, 0.5)), ({}, None), (None, (a0, 0.7))]
    with Engine(model, n_slots=4, n_ctx=2048, loras=[(str(a0), 1.0), (str(a1), 1.0)]) as eng:
        eng.loras.set_scales({0: 0.7})           # the server-wide scales a request without `lora` gets
        steps0 = eng.metrics.steps
        reqs = [eng.submit(GenRequest(model.tokenize(p), max_tokens=n, sampling=GREEDY, lora=lo))
                for p, (lo, _) in zip(PROMPTS, cases)]
        got = [r.result(timeout=120)[0] for r in reqs]
        # all four decoded together: a prompt step or two and one step per token, not 4 x 12
        assert eng.metrics.steps - steps0 <= n + 3
        # a free slot's cells computed with one adapter are not reused for a request with another
        same_prompt = [eng.submit(GenRequest(model.tokenize(PROMPTS[0]), max_tokens=n, sampling=GREEDY, lora=lo))
                       for lo in ({1: 0.5}, {0: 1.0})]
        again = [r.result(timeout=120)[0] for r in same_prompt]
        assert eng.wait_idle(30)
        # idle slots keep what their cells were computed with, but no adapter stays set (an
        # adapter set on any sequence is computed for every row of every step)
        assert all(s.lora_set == () for s in eng._slots) and any(s.lora for s in eng._slots)
    for (p, (_, ref)), text in zip(zip(PROMPTS, cases), got):
        assert text == _llama_ref(smollm2_path, [p], n, ref)[0], (p, ref)
    assert again[1] == got[0]
    assert again[0] == _llama_ref(smollm2_path, [PROMPTS[0]], n, (a1, 0.5))[0]
    assert len({*got[:3]}) == 3    # the adapters do change the text


def test_alora_requests(model, smollm2_path, adapters, tmp_path):
    """An activated LoRA served next to a plain request in the same steps: each gives the Llama
    class's text (the aLoRA from the last occurrence of its invocation tokens in the prompt on);
    the aLoRA's text differs from the base's and from the adapter applied everywhere; two aLoRAs in
    one request are refused, as llama-server does."""
    prompt = PROMPTS[1] + " there was a fox. Once upon a time"
    toks = model.tokenize(prompt)
    inv = model.tokenize(" upon a")[-2:] if len(model.tokenize(" upon a")) > 2 else model.tokenize(" upon a")
    al = write_random_lora(smollm2_path, tmp_path / "alora.gguf", seed=5, alora=inv)
    al2 = write_random_lora(smollm2_path, tmp_path / "alora2.gguf", seed=6, alora=inv)
    n = 10
    with Engine(model, n_slots=2, n_ctx=1024, loras=[(str(al), 0.0), (str(adapters[0]), 0.0), (str(al2), 0.0)]) as eng:
        reqs = [eng.submit(GenRequest(toks, max_tokens=n, sampling=GREEDY, lora=lo)) for lo in ({0: 1.0}, {})]
        got = [r.result(timeout=120)[0] for r in reqs]
        with pytest.raises(ValueError, match="multiple aLoRAs"):
            eng.submit(GenRequest(toks, max_tokens=2, lora={0: 1.0, 2: 1.0}))
        again = eng.submit(GenRequest(toks, max_tokens=n, sampling=GREEDY, lora={0: 1.0})).result(timeout=120)[0]
    want = _llama_ref(smollm2_path, [prompt], n, (al, 1.0))[0]
    assert got[0] == want and again == want
    assert got[1] == _llama_ref(smollm2_path, [prompt], n)[0]
    plain = tmp_path / "everywhere.gguf"
    write_random_lora(smollm2_path, plain, seed=5)              # the same matrices, no invocation tokens
    assert got[0] != got[1] and got[0] != _llama_ref(smollm2_path, [prompt], n, (plain, 1.0))[0]


def test_bad_adapter_ids_and_files(model, adapters, tmp_path):
    from llama_py._lib import LlamaError
    with Engine(model, n_slots=2, n_ctx=512, loras=[(str(adapters[0]), 1.0)]) as eng:
        with pytest.raises(ValueError, match="lora: no LoRA adapter has id 3"):
            eng.submit(GenRequest(model.tokenize("Hi"), max_tokens=2, lora={3: 1.0}))
        assert eng.loras.info() == [{"id": 0, "path": str(adapters[0]), "scale": 1.0, "task_name": "",
                                     "prompt_prefix": ""}]
    with pytest.raises(LlamaError, match="does not exist"):
        Engine(model, n_slots=2, n_ctx=512, loras=[(str(tmp_path / "missing.gguf"), 1.0)])
    with pytest.raises(LlamaError, match="failed to load the LoRA adapter"):
        Engine(model, n_slots=2, n_ctx=512, loras=[(str(model.path), 1.0)])     # a model, not an adapter
    import gguf
    f64 = tmp_path / "f64.gguf"                                                 # F64 matrices: refused at load
    w = gguf.GGUFWriter(str(f64), "llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_tensor("blk.0.attn_q.weight.lora_a", np.zeros((8, model.n_embd)))
    w.add_tensor("blk.0.attn_q.weight.lora_b", np.zeros((model.n_embd, 8)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(LlamaError, match="failed to load the LoRA adapter"):
        Engine(model, n_slots=2, n_ctx=512, loras=[(str(f64), 1.0)])


def test_lora_arguments():
    from llama_py.server.cli import _parser, lora_specs
    from llama_py.server.lora import parse_lora_arg
    assert parse_lora_arg("a.gguf") == ("a.gguf", 1.0)
    assert parse_lora_arg("dir/a.gguf:0.25") == ("dir/a.gguf", 0.25)
    assert parse_lora_arg("C:/x.gguf") == ("C:/x.gguf", 1.0)
    a = _parser().parse_args(["--lora", "a.gguf", "--lora", "b.gguf:0.5,c.gguf", "--lora-scaled", "d.gguf:2"])
    assert lora_specs(a.lora + a.lora_scaled) == [("a.gguf", 1.0), ("b.gguf", 0.5), ("c.gguf", 1.0), ("d.gguf", 2.0)]
    assert lora_specs(["a.gguf:3"], scale0=True) == [("a.gguf", 0.0)]


def test_http_lora_field_and_lora_adapters_route(smollm2_path, adapters):
    from server_util import need_server_packages, running_server
    need_server_packages()
    import httpx
    from llama_py.server.app import ModelEntry
    a0, a1 = adapters
    entry = ModelEntry.load("smol", str(smollm2_path), n_slots=2, n_ctx=1024, loras=[(str(a0), 1.0), (str(a1), 0.0)])
    with running_server([entry]) as (url, app):
        with httpx.Client(base_url=url, timeout=120) as c:
            info = c.get("/lora-adapters").json()
            assert [(x["id"], x["path"], x["scale"]) for x in info] == [(0, str(a0), 1.0), (1, str(a1), 0.0)]

            def complete(**kw):
                r = c.post("/v1/completions", json={"prompt": PROMPTS[1], "max_tokens": 10, "temperature": 0, **kw})
                assert r.status_code == 200, r.text
                return r.json()["choices"][0]["text"]
            want0, want1 = (_llama_ref(smollm2_path, [PROMPTS[1]], 10, x)[0] for x in ((a0, 1.0), (a1, 1.0)))
            assert complete() == want0                                  # the server-wide scales
            assert complete(lora=[{"id": 1, "scale": 1.0}]) == want1    # the request's own
            assert c.post("/lora-adapters", json=[{"id": 1, "scale": 1.0}]).json() == {"success": True}
            assert [x["scale"] for x in c.get("/lora-adapters").json()] == [0.0, 1.0]
            assert complete() == want1
            r = c.post("/v1/completions", json={"prompt": "x", "max_tokens": 2, "lora": [{"id": 9, "scale": 1}]})
            assert r.status_code == 400 and r.json()["error"]["param"] == "lora"
            r = c.post("/v1/completions", json={"prompt": "x", "max_tokens": 2, "lora": {"id": 0}})
            assert r.status_code == 400 and r.json()["error"]["param"] == "lora"
            assert c.post("/lora-adapters", json={"id": 0}).status_code == 400
            assert c.post("/lora-adapters", json=[{"id": 5, "scale": 1}]).status_code == 400
