"""Frameworks written for llama-cpp-python, run unchanged on llama_py through
`llama_py.install_as_llama_cpp()`: LangChain (LlamaCpp, ChatLlamaCpp with tools and
structured output, LlamaCppEmbeddings), LlamaIndex (LlamaCPP), outlines (from_llamacpp) and
guidance (models.LlamaCpp: gen, select, regex, json). Optional group: each test skips naming
the package when it is not installed (requirements-frameworks.txt installs them).

Oracles: the same request made directly on llama_py.Llama (greedy, from an empty context) must
give the text the framework returns; streamed pieces must add up to the whole; embeddings
must equal Llama.embed's; outlines' constrained choice must be one of the choices.
Each framework runs in a child process, so its `llama_cpp` module never leaks into other tests.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

PROMPT = "The capital of France is"
ASK = "Name the capital of France."


def _run(code: str, model, lib_path, *modules):
    for mod in modules:
        pytest.importorskip(mod, reason=f"{mod} is not installed (pip install -r requirements-frameworks.txt)")
    prelude = textwrap.dedent("""
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import llama_py
        llama_py.install_as_llama_cpp()
        M = sys.argv[1]
        out = {}
    """)
    env = dict(os.environ, LLAMA_PY_LIB=str(lib_path))
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code) + "\nprint(json.dumps(out))",
                           str(model)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _direct(model, lib_path):
    """What llama_py itself answers (greedy, empty context each time)."""
    return _run(f"""
        from llama_py import Llama
        llm = Llama(M, n_ctx=512, verbose=False)
        out["completion"] = llm.create_completion({PROMPT!r}, max_tokens=12, temperature=0)["choices"][0]["text"]
        llm.reset()
        out["completion_rp"] = llm.create_completion({PROMPT!r}, max_tokens=12, temperature=0,
                                                     repeat_penalty=1.1)["choices"][0]["text"]
        llm.reset()
        out["chat_rp"] = llm.create_chat_completion([{{"role": "user", "content": {ASK!r}}}], max_tokens=20,
                                                    temperature=0, repeat_penalty=1.1)["choices"][0]["message"]["content"]
        llm.reset()
        out["chat"] = llm.create_chat_completion([{{"role": "user", "content": {ASK!r}}}], max_tokens=20,
                                                 temperature=0)["choices"][0]["message"]["content"]
        llm.reset()
        out["chat_prompt_msg"] = llm.create_chat_completion([{{"role": "user", "content": {PROMPT!r}}}],
                                                            max_tokens=8, temperature=0)["choices"][0]["message"]["content"]
        e = Llama(M, n_ctx=512, verbose=False, embedding=True)
        out["embed"] = e.embed("hello")
    """, model, lib_path)


@pytest.fixture(scope="module")
def direct(smollm2_path, lib_path):
    return _direct(smollm2_path, lib_path)


def test_install_as_llama_cpp(lib_path):
    code = """
        import llama_cpp, llama_cpp.llama_cpp as low, llama_py.llama_cpp
        from llama_cpp import Llama, LlamaGrammar, LogitsProcessorList, llama_types, llama_chat_format
        from llama_cpp.llama_cache import LlamaRAMCache
        from llama_cpp.llama_tokenizer import LlamaTokenizer
        import llama_py.llama
        out["same"] = [Llama is llama_py.llama.Llama, low is llama_py.llama_cpp,
                       llama_cpp.llama_backend_init is llama_py.llama_cpp.llama_backend_init]
        out["version"] = llama_cpp.__version__
    """
    r = _run(code, "unused", lib_path)
    assert r["same"] == [True, True, True] and r["version"] == "0.3.36"
    r = _run("import llama_py.as_llama_cpp\nimport llama_cpp\nout['ok'] = llama_cpp.__llama_py__", "x", lib_path)
    assert r["ok"] is True


def test_langchain_llamacpp_and_chat(smollm2_path, lib_path, direct):
    code = f"""
        from langchain_community.llms import LlamaCpp
        from langchain_community.chat_models import ChatLlamaCpp
        # rope_freq_base=0: the model's own base (LangChain's default, 10000, overrides SmolLM2's
        # 100000, so the answer would match the direct one only where no near-tie flips)
        llm = LlamaCpp(model_path=M, n_ctx=512, temperature=0, max_tokens=12, verbose=False, rope_freq_base=0.0)
        out["invoke"] = llm.invoke({PROMPT!r})
        llm.client.reset()
        out["stream"] = list(llm.stream({PROMPT!r}))
        chat = ChatLlamaCpp(model_path=M, n_ctx=512, temperature=0, max_tokens=20, verbose=False, rope_freq_base=0.0)
        out["chat"] = chat.invoke({ASK!r}).content
        chat.client.reset()
        out["chat_stream"] = [c.content for c in chat.stream({ASK!r})]
    """
    r = _run(code, smollm2_path, lib_path, "langchain_community")
    # LangChain's defaults include repeat_penalty=1.1
    assert r["invoke"] == direct["completion_rp"] and "Paris" in r["invoke"]
    assert "".join(r["stream"]) == r["invoke"] and len(r["stream"]) > 3
    assert r["chat"] == direct["chat_rp"] and "Paris" in r["chat"]
    assert "".join(r["chat_stream"]) == r["chat"] and len(r["chat_stream"]) > 3


def test_langchain_embeddings(smollm2_path, lib_path, direct):
    code = """
        from langchain_community.embeddings import LlamaCppEmbeddings
        emb = LlamaCppEmbeddings(model_path=M, n_ctx=512, verbose=False)
        out["query"] = emb.embed_query("hello")
        out["docs"] = emb.embed_documents(["hello", "a cat"])
    """
    r = _run(code, smollm2_path, lib_path, "langchain_community")
    import numpy as np
    # SmolLM2 declares no pooling: llama.cpp's default is none, one vector per token; LangChain
    # returns the first of the query's and flattens the documents' token vectors
    assert np.allclose(r["query"], direct["embed"][0], atol=1e-5)
    assert len(r["docs"]) >= 2 and all(len(v) == 576 for v in r["docs"])
    assert np.allclose(r["docs"][0], direct["embed"][0], atol=1e-5)


def test_llamaindex_llamacpp(smollm2_path, lib_path, direct):
    code = f"""
        from llama_index.llms.llama_cpp import LlamaCPP
        li = LlamaCPP(model_path=M, temperature=0.0, max_new_tokens=12, context_window=512,
                      model_kwargs={{"n_ctx": 512}}, verbose=False)
        out["complete"] = li.complete({PROMPT!r}).text
        li._model.reset()
        out["stream"] = [r.delta for r in li.stream_complete({PROMPT!r})]
    """
    r = _run(code, smollm2_path, lib_path, "llama_index.core", "llama_index.llms.llama_cpp")
    assert r["complete"] == direct["completion"]
    assert "".join(r["stream"]) == r["complete"]


def test_outlines_llamacpp(smollm2_path, lib_path, direct):
    code = f"""
        import outlines
        from typing import Literal
        from llama_cpp import Llama
        llm = Llama(M, n_ctx=512, verbose=False)
        m = outlines.from_llamacpp(llm)
        out["text"] = m({PROMPT!r}, max_tokens=8, temperature=0)
        out["stream"] = list(m.stream({PROMPT!r}, max_tokens=8, temperature=0))
        out["choice"] = m("Is Paris in France? Answer yes or no.", Literal["yes", "no"], max_tokens=8, temperature=0)
    """
    r = _run(code, smollm2_path, lib_path, "outlines")
    assert r["text"] == direct["chat_prompt_msg"]   # outlines sends a text prompt as a user message
    assert "".join(r["stream"]) == r["text"]
    assert r["choice"] in ("yes", "no")              # the logits processor constrained every token


def test_langchain_chatllamacpp_tools_and_structured_output(smollm2_path, lib_path):
    """ChatLlamaCpp's bind_tools (invoke and stream) and with_structured_output: the forced call
    llama_py's own create_chat_completion makes for the same tools."""
    code = """
        from langchain_community.chat_models import ChatLlamaCpp
        from langchain_core.tools import tool
        from pydantic import BaseModel
        from llama_py import Llama

        class User(BaseModel):
            '''A person.'''
            name: str
            age: int

        @tool
        def get_weather(city: str) -> str:
            '''Current weather in a city.'''
            return "sunny"

        chat = ChatLlamaCpp(model_path=M, n_ctx=1024, temperature=0, max_tokens=60, verbose=False, rope_freq_base=0.0)
        out["user"] = chat.with_structured_output(User).invoke("Extract: John is 30 years old.").model_dump()
        choice = {"type": "function", "function": {"name": "get_weather"}}
        b = chat.bind_tools([get_weather], tool_choice=choice)
        out["invoke"] = [(c["name"], c["args"]) for c in b.invoke("What is the weather in Paris?").tool_calls]
        chunks = list(b.stream("What is the weather in Paris?"))
        full = chunks[0]
        for c in chunks[1:]:
            full = full + c
        out["stream"] = [(c["name"], c["args"]) for c in full.tool_calls]
        out["n_chunks"] = len(chunks)
        llm = Llama(M, n_ctx=1024, verbose=False)
        tools = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
        r = llm.create_chat_completion([{"role": "user", "content": "What is the weather in Paris?"}], tools=tools,
                                       tool_choice=choice, max_tokens=60, temperature=0, repeat_penalty=1.1)
        out["direct"] = json.loads(r["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    """
    r = _run(code, smollm2_path, lib_path, "langchain_community", "langchain_core")
    assert r["user"]["name"] == "John" and r["user"]["age"] == 30
    assert r["invoke"] == [["get_weather", r["direct"]]] and "city" in r["direct"]
    assert r["stream"] == r["invoke"] and r["n_chunks"] > 3


def test_guidance_llamacpp(smollm2_path, lib_path):
    """guidance's models.LlamaCpp on llama_py (llguidance reads llama_cpp.llama_cpp._lib's
    llama_tokenize): gen equals llama_py's greedy text, select picks a choice, a regex and a
    pydantic schema constrain what comes out."""
    code = f"""
        import re
        from guidance import models, gen, select, json as gjson
        from pydantic import BaseModel
        from llama_py import Llama

        class P(BaseModel):
            name: str
            age: int

        lm = models.LlamaCpp(M, n_ctx=512, echo=False)
        out["gen"] = (lm + {PROMPT!r} + gen("c", max_tokens=6, temperature=0))["c"]
        out["select"] = (lm + "Is Paris in France? Answer: " + select(["yes", "no"], name="a"))["a"]
        out["regex"] = (lm + "A year: " + gen("y", regex=r"[0-9]{{4}}"))["y"]
        out["json"] = (lm + "A person as JSON: " + gjson("p", schema=P, max_tokens=40))["p"]
        llm = Llama(M, n_ctx=512, verbose=False)
        out["direct"] = llm.create_completion({PROMPT!r}, max_tokens=6, temperature=0)["choices"][0]["text"]
    """
    r = _run(code, smollm2_path, lib_path, "guidance", "llguidance")
    import re
    from pydantic import BaseModel

    class P(BaseModel):
        name: str
        age: int
    # guidance re-tokenizes the text it has so far at each step (token healing), so tokens may
    # split differently from llama_py's one greedy run after a while: the first line agrees
    assert r["gen"].split("\n")[0] == r["direct"].split("\n")[0] and "Paris" in r["gen"]
    assert r["select"] in ("yes", "no")
    assert re.fullmatch(r"[0-9]{4}", r["regex"])
    P.model_validate_json(r["json"])
