"""llama_py.Llama as a drop-in for llama-cpp-python 0.3.36's class, on SmolLM2-135M-Instruct.

Oracles: llama-cpp-python's documented defaults and return shapes, NumPy (log-softmax of logits
read through the low-level API, L2 norms), the openai package's response models, and
properties of the outputs (a processor that bans a token means the token never appears, ...).
"""
from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest

import llama_py
import llama_py.llama_cpp as C
from llama_py.llama import (Llama, LlamaState, LogitsProcessorList, MinTokensLogitsProcessor,
                            StoppingCriteriaList)
from llama_py.llama_cache import LlamaDiskCache, LlamaRAMCache

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def llm(smollm2_path, lib_path):
    with Llama(str(smollm2_path), n_ctx=512, verbose=False) as m:
        yield m


def _log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


# ---- constructor ----

def test_constructor_defaults_are_llama_cpp_pythons():
    sig = inspect.signature(Llama.__init__)
    expect = {"n_ctx": 512, "n_batch": 512, "n_ubatch": 512, "n_gpu_layers": 0, "seed": C.LLAMA_DEFAULT_SEED,
              "verbose": True, "flash_attn": False, "logits_all": False, "embedding": False, "use_mmap": True,
              "last_n_tokens_size": 64, "yarn_ext_factor": -1.0, "yarn_beta_fast": 32.0, "lora_path": None,
              "chat_format": None, "spm_infill": False, "numa": False}
    for name, value in expect.items():
        assert sig.parameters[name].default == value, name
    assert any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def test_constructor_keywords(smollm2_path, lib_path):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = Llama(str(smollm2_path), n_ctx=300, n_gpu_layers=-1, use_mlock=True, f16_kv=True, n_parts=-1,
                  offload_kqv=False, numa=True, verbose=False)
    text = " ".join(str(x.message) for x in w)
    assert "f16_kv" in text and "n_parts" in text       # unknown keywords: accepted with a warning
    assert m.n_ctx() == 512                              # rounded up to a multiple of 256
    m.close()
    with pytest.raises(ValueError, match="LoRA adapter path does not exist"):   # tests/test_adapters.py: real ones
        Llama(str(smollm2_path), lora_path="adapter.gguf", verbose=False)
    with pytest.raises(ValueError, match="does not exist"):
        Llama("/nonexistent/model.gguf", verbose=False)
    with Llama(str(smollm2_path), n_ctx=0, verbose=False, vocab_only=True) as v:  # 0: the training context
        assert v.n_ctx() == C.llama_model_n_ctx_train(v.model)
        assert v.tokenize(b"Hello") and v.detokenize(v.tokenize(b"Hello", add_bos=False)) == b"Hello"
    with Llama(str(smollm2_path), n_ctx=64, verbose=False, kv_overrides={"general.name": "renamed"}) as k:
        assert k.metadata["general.name"] == "renamed"


def test_properties(llm):
    assert llm.token_nl() == llm.tokenize(b"\n", add_bos=False)[0]
    assert llm.token_bos() == C.llama_vocab_bos(C.llama_model_get_vocab(llm.model))
    assert llm.pooling_type() == C.llama_pooling_type(llm.ctx)
    tok = llm.tokenizer()
    assert tok.encode("Hello world", add_bos=False) == llm.tokenize(b"Hello world", add_bos=False)
    assert tok.decode(tok.encode("Hello world", add_bos=False)) == "Hello world"


# ---- completion ----

def test_completion_logprobs_against_numpy(llm, smollm2_path):
    llm.reset()
    out = llm.create_completion(PROMPT, max_tokens=4, temperature=0, logprobs=3)
    lp = out["choices"][0]["logprobs"]
    text = out["choices"][0]["text"]
    assert len(lp["tokens"]) == 4 == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(lp["text_offset"])
    assert "".join(lp["tokens"]) == text
    # offsets count from the start of prompt + completion (OpenAI's convention)
    assert lp["text_offset"][0] == len(PROMPT)
    for off, t in zip(lp["text_offset"], lp["tokens"]):
        assert (PROMPT + text)[off:off + len(t)] == t
    # oracle: NumPy log-softmax of the logits at the position before each token, from a fresh context
    toks = llm.tokenize(PROMPT, special=True)
    gen = [llm.tokenize(t.encode(), add_bos=False)[0] for t in lp["tokens"]]
    with Llama(str(smollm2_path), n_ctx=512, verbose=False, logits_all=True) as ref:
        ref.eval(toks + gen)
        rows = ref.scores[:len(toks) + len(gen)]
    for i, t in enumerate(gen):
        want = _log_softmax(rows[len(toks) + i - 1])
        assert lp["token_logprobs"][i] == pytest.approx(want[t], abs=2e-3)
        top = lp["top_logprobs"][i]
        best = np.argsort(-want)[:3]
        assert llm.detokenize([int(best[0])]).decode() in top
        assert max(top.values()) == pytest.approx(want[best[0]], abs=2e-3)
        assert int(np.argmax(want)) == t   # greedy: the chosen token is the likeliest


def test_completion_echo_logprobs_cover_the_prompt(llm):
    llm.reset()
    out = llm.create_completion(PROMPT, max_tokens=2, temperature=0, logprobs=1, echo=True)
    lp = out["choices"][0]["logprobs"]
    toks = llm.tokenize(PROMPT, special=True)
    assert out["choices"][0]["text"].startswith(PROMPT)
    assert len(lp["tokens"]) == len(toks) + 2
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None  # nothing precedes it
    assert all(isinstance(v, float) and v <= 0 for v in lp["token_logprobs"][1:])
    assert lp["text_offset"][:2] == [0, len(llm.detokenize(toks[:1]).decode())]


def test_logits_processor_and_stopping_criteria(llm, greedy=None):
    llm.reset()
    base = llm.create_completion(PROMPT, max_tokens=6, temperature=0)["choices"][0]["text"]
    first = llm.tokenize(base.encode(), add_bos=False)[0]
    seen = []

    def ban(input_ids, scores):
        seen.append(len(input_ids))
        scores = scores.copy()
        scores[first] = -np.inf
        return scores
    llm.reset()
    out = llm.create_completion(PROMPT, max_tokens=6, temperature=0, logits_processor=LogitsProcessorList([ban]))
    assert first not in llm.tokenize(out["choices"][0]["text"].encode(), add_bos=False)
    n_prompt = len(llm.tokenize(PROMPT, special=True))
    assert seen[:3] == [n_prompt, n_prompt + 1, n_prompt + 2]   # the ids so far, growing by one
    # a stopping criterion ends generation with finish_reason "stop"
    llm.reset()
    out = llm.create_completion(PROMPT, max_tokens=20, temperature=0,
                                stopping_criteria=StoppingCriteriaList([lambda ids, logits: len(ids) >= n_prompt + 3]))
    assert out["choices"][0]["finish_reason"] == "stop" and out["usage"]["completion_tokens"] == 2
    # MinTokensLogitsProcessor keeps EOS away
    p = MinTokensLogitsProcessor(5, llm.token_eos())
    s = p(np.zeros(3, dtype=np.intc), np.zeros(llm.n_vocab(), dtype=np.single))
    assert s[llm.token_eos()] == -np.inf


def test_suffix_without_fim_tokens_is_appended(llm):
    llm.reset()
    out = llm.create_completion(PROMPT, max_tokens=3, temperature=0, suffix=" [end]")
    assert out["choices"][0]["text"].endswith(" [end]")
    assert C.llama_vocab_fim_pre(C.llama_model_get_vocab(llm.model)) < 0  # this vocabulary has no FIM tokens


def test_sampling_modes_and_seeds(llm):
    def run(**kw):
        llm.reset()
        return llm.create_completion(PROMPT, max_tokens=8, **kw)["choices"][0]["text"]
    assert run(temperature=0.9, seed=7, mirostat_mode=2) == run(temperature=0.9, seed=7, mirostat_mode=2)
    assert run(temperature=0.9, seed=7, mirostat_mode=1) == run(temperature=0.9, seed=7, mirostat_mode=1)
    assert run(temperature=0.9, seed=3, typical_p=0.5) == run(temperature=0.9, seed=3, typical_p=0.5)
    assert run(temperature=-1.0, seed=5) == run(temperature=-1.0, seed=5)
    llm.set_seed(1234)
    a = run(temperature=1.0)
    llm.set_seed(1234)
    assert run(temperature=1.0) == a


def test_generate_sample_eval(llm):
    llm.reset()
    toks = llm.tokenize(PROMPT, special=True)
    llm.eval(toks)
    assert llm.n_tokens == len(toks) and list(llm.input_ids[:len(toks)]) == toks
    t = llm.sample(temp=0)
    llm.reset()
    g = llm.generate(toks, temp=0)
    assert next(g) == t
    g.close()


# ---- state and caches ----

def test_save_load_state(llm):
    llm.reset()
    toks = llm.tokenize(PROMPT, special=True)
    llm.eval(toks)
    state = llm.save_state()
    assert isinstance(state, LlamaState) and state.n_tokens == len(toks) and state.llama_state_size > 0
    after = llm.create_completion(toks, max_tokens=6, temperature=0)["choices"][0]["text"]
    llm.reset()
    llm.load_state(state)
    assert llm.n_tokens == len(toks)
    assert llm.create_completion(toks, max_tokens=6, temperature=0)["choices"][0]["text"] == after
    assert pickle.loads(pickle.dumps(state)).llama_state == state.llama_state


@pytest.mark.parametrize("kind", ["ram", "disk"])
def test_prompt_cache_reuses_longest_prefix(llm, tmp_path, kind):
    cache = LlamaRAMCache(capacity_bytes=1 << 30) if kind == "ram" else LlamaDiskCache(str(tmp_path / "c"))
    llm.set_cache(cache)
    try:
        llm.reset()
        first = llm.create_completion(PROMPT, max_tokens=4, temperature=0)["choices"][0]["text"]
        key = tuple(llm.tokenize(PROMPT, special=True))
        assert key in cache and cache.cache_size > 0
        longer = PROMPT + first + " It"
        llm.reset()   # the live context is empty: only the cache can supply the prefix
        before = C.llama_perf_context(llm.ctx).n_p_eval
        llm.create_completion(longer, max_tokens=2, temperature=0)
        decoded = C.llama_perf_context(llm.ctx).n_p_eval - before
        assert decoded < len(llm.tokenize(longer, special=True)) - len(key) + 2
        with pytest.raises(KeyError):
            cache[[999999]]
    finally:
        llm.set_cache(None)


def test_ram_cache_capacity_drops_oldest():
    c = LlamaRAMCache(capacity_bytes=250)
    for i in range(3):
        c[(i, 1, 2)] = LlamaState(np.zeros(3), np.zeros((0, 1)), 3, b"x" * 100, 100, 0)
    assert (0, 1, 2) not in c and (2, 1, 2) in c and c.cache_size == 200
    assert c[(1, 1, 9, 9)].llama_state == b"x" * 100  # longest prefix (1, 1)


# ---- embeddings ----

@pytest.mark.parametrize("pooling", [C.LLAMA_POOLING_TYPE_MEAN, C.LLAMA_POOLING_TYPE_CLS, C.LLAMA_POOLING_TYPE_LAST])
def test_embed_every_pooling_many_inputs_long_text(smollm2_path, lib_path, pooling):
    texts = ["short", "a somewhat longer sentence about cats", "word " * 700]
    with Llama(str(smollm2_path), n_ctx=1024, embedding=True, pooling_type=pooling, verbose=False) as e:
        vecs, n = e.embed(texts, return_count=True)
        toks = e.tokenize(texts[2].encode())
        assert len(toks) > 512 and n == sum(len(e.tokenize(t.encode())) for t in texts)
        unit = e.embed(texts, normalize=True)
    with Llama(str(smollm2_path), n_ctx=1024, embedding=True, pooling_type=C.LLAMA_POOLING_TYPE_NONE,
               verbose=False) as raw:
        rows = [np.array(r) for r in raw.embed(texts)]
    for v, u, r in zip(vecs, unit, rows):
        ref = {C.LLAMA_POOLING_TYPE_MEAN: r.mean(axis=0), C.LLAMA_POOLING_TYPE_CLS: r[0],
               C.LLAMA_POOLING_TYPE_LAST: r[-1]}[pooling]
        assert np.allclose(v, ref, atol=2e-4)
        assert np.allclose(u, ref / np.linalg.norm(ref), atol=2e-5)


# ---- chat ----

ASK = [{"role": "user", "content": "Name the capital of France."}]


def test_chat_logprobs_and_openai_v1(llm):
    pytest.importorskip("openai", reason="the openai package is not installed")
    llm.reset()
    out = llm.create_chat_completion(ASK, max_tokens=8, temperature=0, logprobs=True, top_logprobs=2)
    content = out["choices"][0]["logprobs"]["content"]
    assert "".join(c["token"] for c in content) == out["choices"][0]["message"]["content"]
    assert all(len(c["top_logprobs"]) >= 2 and c["logprob"] <= 0 for c in content)
    llm.reset()
    v1 = llm.create_chat_completion_openai_v1(messages=ASK, max_tokens=8, temperature=0)
    from openai.types.chat import ChatCompletion
    assert isinstance(v1, ChatCompletion) and v1.choices[0].message.content == out["choices"][0]["message"]["content"]
    llm.reset()
    chunks = list(llm.create_chat_completion_openai_v1(messages=ASK, max_tokens=8, temperature=0, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == v1.choices[0].message.content


def test_chat_handler_hook(smollm2_path, lib_path):
    calls = []

    def handler(*, llama, messages, **kwargs):
        calls.append((messages, kwargs["max_tokens"], kwargs["temperature"]))
        return {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [], "usage": {}}
    with Llama(str(smollm2_path), n_ctx=64, chat_handler=handler, verbose=False) as m:
        assert m.create_chat_completion(ASK, max_tokens=3)["id"] == "x"
    assert calls == [(ASK, 3, 0.2)]


def test_chat_format_names(llm):
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    from llama_py import llama_chat_format as F
    assert F.builtin_formatter("chatml")(messages=msgs).prompt == \
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    for name in ("chatml", "llama-2", "llama-3", "mistral-instruct", "zephyr", "gemma", "phi-3", "qwen"):
        assert "U" in F.get_chat_completion_handler(name).chat_formatter(messages=msgs).prompt
    assert F.guess_chat_format_from_gguf_metadata(llm.metadata) == "chatml"


def test_grammar_response_format_and_tools(llm):
    import json
    llm.reset()
    # A free-form object may nest on past any budget (a prefix-reused prompt decodes in other
    # batch sizes, so the greedy path depends on what ran before): a finished one must parse, a
    # cut one must at least be an object so far. The bounded schema below always finishes.
    out = llm.create_chat_completion([{"role": "user", "content": "Give a JSON object with a name."}],
                                     max_tokens=400, temperature=0, response_format={"type": "json_object"})
    text = out["choices"][0]["message"]["content"]
    if out["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(text), dict)
    else:
        assert text.lstrip().startswith("{"), text
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    llm.reset()
    out = llm.create_chat_completion(ASK, max_tokens=48, temperature=0, response_format={
        "type": "json_schema", "json_schema": {"name": "c", "schema": schema}})
    assert "city" in json.loads(out["choices"][0]["message"]["content"])
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": schema}}]
    llm.reset()
    out = llm.create_chat_completion(ASK, max_tokens=48, temperature=0, tools=tools,
                                     tool_choice={"type": "function", "function": {"name": "get_weather"}})
    call = out["choices"][0]["message"]["tool_calls"][0]
    assert out["choices"][0]["finish_reason"] == "tool_calls" and call["function"]["name"] == "get_weather"
    assert "city" in json.loads(call["function"]["arguments"])


# ---- from_pretrained, pickling, exports ----

def test_from_pretrained_local_only(smollm2_path, tmp_path, lib_path):
    with Llama.from_pretrained("HuggingFaceTB/SmolLM2-135M-Instruct", "*Q4_1.gguf",
                               local_dir=str(smollm2_path.parent), n_ctx=64, verbose=False) as m:
        assert m.n_vocab() == 49152
    with pytest.raises(FileNotFoundError, match="no model hub is reachable"):
        Llama.from_pretrained("nobody/nothing", "*.gguf", cache_dir=str(tmp_path))


def test_pickle_round_trip(smollm2_path, lib_path):
    with Llama(str(smollm2_path), n_ctx=64, verbose=False, seed=5) as m:
        m2 = pickle.loads(pickle.dumps(m))
        try:
            assert m2.n_ctx() == m.n_ctx() and m2._seed == 5 and m2.model_path == m.model_path
        finally:
            m2.close()


def test_package_exports():
    for name in ("Llama", "LlamaState", "LogitsProcessorList", "StoppingCriteriaList", "LlamaGrammar",
                 "LlamaTokenizer", "LlamaRAMCache", "LlamaDiskCache", "LlamaCache", "install_as_llama_cpp"):
        assert getattr(llama_py, name) is not None
    from llama_py import llama_types
    assert "choices" in llama_types.CreateCompletionResponse.__annotations__
    from llama_py.llama import LogitsProcessor, StoppingCriteria   # the callable type aliases
    import typing
    assert typing.get_origin(LogitsProcessor) is typing.get_origin(StoppingCriteria) is not None
