"""Llama and the server on one runtime (llama_py._runtime): every sampling option Llama accepts
goes through the server too and, for the same seed, gives the same text as Llama (the reference:
the Llama class, one request at a time, with the server's flash attention); a forced tool call
streams in OpenAI's shape through the real `openai` client and in-process alike."""
from __future__ import annotations

import json

import pytest

from server_util import need_server_packages, running_server

need_server_packages()
import openai  # noqa: E402

N_CTX = 1024  # one slot: the server's slot and Llama's context hold the same number of cells


@pytest.fixture(scope="module")
def served(smollm2_path):
    from llama_py.server.app import ModelEntry
    entry = ModelEntry.load("smollm2", str(smollm2_path), n_slots=1, n_ctx=N_CTX, max_queue=8)
    with running_server([entry]) as (url, app):
        yield url


@pytest.fixture()
def client(served):
    return openai.OpenAI(base_url=served + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def llm(smollm2_path):
    from llama_py import Llama
    with Llama(str(smollm2_path), n_ctx=N_CTX, verbose=False, flash_attn=True) as m:
        yield m


PROMPT = "The old lighthouse keeper looked at the sea and said"

# (Llama's keyword arguments, the server's body fields, Llama's last_n_tokens_size)
OPTIONS = [
    ({"typical_p": 0.5}, {"typical_p": 0.5}, 64),
    ({"mirostat_mode": 1, "mirostat_tau": 4.0, "mirostat_eta": 0.2},
     {"mirostat": 1, "mirostat_tau": 4.0, "mirostat_eta": 0.2}, 64),
    ({"mirostat_mode": 2, "mirostat_tau": 3.0}, {"mirostat_mode": 2, "mirostat_tau": 3.0}, 64),
    ({"repeat_penalty": 1.5}, {"repeat_penalty": 1.5, "repeat_last_n": 4}, 4),
    ({"repeat_penalty": 1.5, "frequency_penalty": 0.8, "presence_penalty": 0.5},
     {"repeat_penalty": 1.5, "frequency_penalty": 0.8, "presence_penalty": 0.5, "repeat_last_n": -1}, -1),
    ({"repeat_penalty": 1.5}, {"repeat_penalty": 1.5, "last_n_tokens_size": 0}, 0),
    ({"top_k": 3, "top_p": 0.6, "min_p": 0.1}, {"top_k": 3, "top_p": 0.6, "min_p": 0.1}, 64),
    ({"logit_bias": {13: -100.0}}, {"logit_bias": {"13": -100}}, 64),
]


@pytest.mark.parametrize("llama_kw,body,last_n", OPTIONS, ids=[json.dumps(o[1]) for o in OPTIONS])
def test_sampling_option_same_text_through_llama_and_server(client, llm, llama_kw, body, last_n):
    old = llm.last_n_tokens_size
    llm.last_n_tokens_size = last_n
    try:
        ref = llm.create_completion(PROMPT, max_tokens=24, temperature=0.9, seed=1234, **llama_kw)
    finally:
        llm.last_n_tokens_size = old
        llm.reset()
    r = client.completions.create(model="smollm2", prompt=PROMPT, max_tokens=24, temperature=0.9, seed=1234,
                                  top_p=llama_kw.get("top_p", 0.95), extra_body=dict(
                                      {"top_k": 40, "min_p": 0.05}, **{k: v for k, v in body.items() if k != "top_p"}))
    assert r.choices[0].text == ref["choices"][0]["text"]


def test_sampling_options_change_the_text(client):
    # each option reaches the sampler: the same seed with and without it gives another text
    base = dict(model="smollm2", prompt=PROMPT, max_tokens=24, temperature=0.9, seed=1234)
    plain = client.completions.create(**base).choices[0].text
    for extra in ({"mirostat": 2, "mirostat_tau": 1.0}, {"typical_p": 0.2}, {"repeat_penalty": 3.0}):
        assert client.completions.create(**base, extra_body=extra).choices[0].text != plain, extra


@pytest.mark.parametrize("field,value", [("mirostat", 3), ("typical_p", 1.5), ("repeat_last_n", -2),
                                         ("mirostat_tau", -1)])
def test_bad_sampling_option_is_400_naming_it(client, field, value):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="smollm2", prompt="x", max_tokens=1, extra_body={field: value})
    assert e.value.body["param"] == field


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIME = {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["zone"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "parameters": TIME}}]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
CHOICES = [{"type": "function", "function": {"name": "get_weather"}}, "required"]


def _check_stream(chunks, tools):
    """OpenAI's shape: a header (index, id, type, name, arguments "") then argument fragments,
    then finish_reason tool_calls; returns (name, arguments)."""
    jsonschema = pytest.importorskip("jsonschema")
    calls = [(c.choices[0].delta.tool_calls or []) for c in chunks if c.choices]
    calls = [tc for cs in calls for tc in cs]
    assert calls, "no tool_calls deltas"
    head = calls[0]
    assert head.index == 0 and head.id and head.type == "function" and head.function.arguments == ""
    assert all(tc.id is None and tc.function.name is None for tc in calls[1:])
    args = "".join(tc.function.arguments for tc in calls[1:])
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert not any(c.choices[0].delta.content for c in chunks if c.choices)
    schema = {t["function"]["name"]: t["function"]["parameters"] for t in tools}[head.function.name]
    jsonschema.validate(json.loads(args), schema)
    return head.function.name, args


@pytest.mark.parametrize("choice", CHOICES, ids=["named", "required"])
def test_forced_tool_call_streams_in_openai_shape(client, choice):
    kw = dict(model="smollm2", max_tokens=60, temperature=0, messages=ASK, tools=TOOLS, tool_choice=choice)
    name, args = _check_stream(list(client.chat.completions.create(stream=True, **kw)), TOOLS)
    whole = client.chat.completions.create(**kw)
    assert whole.choices[0].finish_reason == "tool_calls"
    call = whole.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (name, json.loads(args))
    # the openai package's own stream helper assembles the same call
    with client.beta.chat.completions.stream(**{k: v for k, v in kw.items()}) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.tool_calls[0].function.name == name


@pytest.mark.parametrize("choice", CHOICES, ids=["named", "required"])
def test_forced_tool_call_streams_alike_in_process(llm, choice):
    from openai.types.chat import ChatCompletionChunk
    chunks = list(llm.create_chat_completion(ASK, tools=TOOLS, tool_choice=choice, max_tokens=60, temperature=0,
                                             stream=True))
    llm.reset()
    _check_stream([ChatCompletionChunk(**c) for c in chunks], TOOLS)


def test_legacy_functions_in_the_server(client):
    r = client.chat.completions.create(model="smollm2", max_tokens=60, temperature=0, messages=ASK,
                                       functions=[TOOLS[0]["function"]], function_call={"name": "get_weather"})
    assert r.choices[0].finish_reason == "tool_calls"
    assert r.choices[0].message.function_call.name == "get_weather"
    assert "city" in json.loads(r.choices[0].message.function_call.arguments)


# ---- tool_choice "auto": the model's own format parsed into OpenAI tool calls ----

AUTO_CASES = [  # (family, reply, content, [(name, arguments)])
    ("hermes", 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
               '<tool_call>{"name": "get_time", "arguments": {"zone": "UTC"}}</tool_call>',
     "Sure.", [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "UTC"})]),
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]', None,
     [("get_weather", {"city": "Paris"})]),
    ("llama3", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}', None,
     [("get_weather", {"city": "Paris"})]),
    ("llama3", '{"name": "get_time", "parameters": {"zone": "CET"}}', None, [("get_time", {"zone": "CET"})]),
    ("json", 'Here:\n```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```', "Here:",
     [("get_weather", {"city": "Oslo"})]),
    ("json", "The weather is {fine}.", "The weather is {fine}.", []),
    ("hermes", '<tool_call>{"name": "not_a_tool", "arguments": {}}</tool_call>',
     '<tool_call>{"name": "not_a_tool", "arguments": {}}</tool_call>', []),
]


@pytest.mark.parametrize("family,reply,content,calls", AUTO_CASES)
def test_auto_tool_calls_parse_whole_and_streamed(family, reply, content, calls):
    from llama_py._runtime import chat as R
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    mode = R.AutoTools(family, ["get_weather", "get_time"])
    msg, finish = R.chat_message(reply, "stop", mode, "call_1")
    whole = ChatCompletion(id="x", object="chat.completion", created=0, model="m",
                           choices=[{"index": 0, "message": msg, "finish_reason": finish}])
    m = whole.choices[0].message
    assert m.content == content
    assert [(c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls or []] == calls
    assert finish == ("tool_calls" if calls else "stop")
    # streamed in pieces of 1, 3 and 7 characters: the same content and calls, in OpenAI's chunk shape
    for step in (1, 3, 7):
        d = R.ChatDeltas(mode, "call_1")
        deltas = [d.opening()] + [x for i in range(0, len(reply), step) for x in d.text(reply[i:i + step])]
        tail, sfinish = d.finish("stop")
        chunks = [ChatCompletionChunk(id="x", object="chat.completion.chunk", created=0, model="m",
                                      choices=[{"index": 0, "delta": x, "finish_reason": None}]) for x in deltas + tail]
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        assert text.strip() == (content or ""), step
        got, args = [], {}
        for c in chunks:
            for tc in c.choices[0].delta.tool_calls or []:
                if tc.function.name:
                    got.append(tc.function.name)
                args[tc.index] = args.get(tc.index, "") + (tc.function.arguments or "")
        assert [(n, json.loads(args[i])) for i, n in enumerate(got)] == calls, step
        assert sfinish == finish


MORE_AUTO_CASES = [  # replies the streamed parser must take apart too
    ("hermes", '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```', None,
     [("get_weather", {"city": "Paris"})]),                       # Qwen 2.5 0.5B's habit
    ("hermes", '{"name": "get_time", "arguments": {"zone": "UTC"}}', None, [("get_time", {"zone": "UTC"})]),
    ("hermes", 'See {this} and ```code```', 'See {this} and ```code```', []),
    ("hermes", '```python\nprint(1)\n```', '```python\nprint(1)\n```', []),
    ("hermes", '<tool_call>{"arguments": {"city": "Rome"}, "name": "get_weather"}</tool_call>', None,
     [("get_weather", {"city": "Rome"})]),                        # keys in the other order: parsed whole
    ("hermes", '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>', None,
     [("get_weather", {"city": "Rome"})]),                        # arguments as a JSON string
    ("mistral", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "A"}}, '
                '{"name": "get_time", "arguments": {"zone": "B"}}]', None,
     [("get_weather", {"city": "A"}), ("get_time", {"zone": "B"})]),
    ("llama3", '<|python_tag|>{"name": "get_time", "parameters": {"zone": "X"}}; '
               '{"name": "get_weather", "parameters": {"city": "Y"}}', None,
     [("get_time", {"zone": "X"}), ("get_weather", {"city": "Y"})]),
]


@pytest.mark.parametrize("family,reply,content,calls", MORE_AUTO_CASES)
def test_auto_tool_calls_more_formats(family, reply, content, calls):
    test_auto_tool_calls_parse_whole_and_streamed(family, reply, content, calls)


def test_auto_tool_call_streams_piece_by_piece():
    """The name is sent as soon as it is complete, before the arguments are; the arguments go
    out in the pieces the model writes them; text before the call is content as it comes."""
    from llama_py._runtime import chat as R
    d = R.ChatDeltas(R.AutoTools("hermes", ["get_weather"]), "call_1")
    pieces = ["Let me", " check.", "\n<tool", "_call>\n", '{"name": "get_', 'weather"', ', "arguments": ',
              '{"city"', ': "Par', 'is"}', "}\n</tool_call>"]
    got = [d.text(p) for p in pieces]
    assert got[0] == [{"content": "Let me"}] and got[1] == [{"content": " check."}]
    assert got[2] == [{"content": "\n"}] and got[3] == [] and got[4] == []     # a marker's prefix is held
    # the header as soon as the name's closing quote arrives
    assert got[5] == [{"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                       "function": {"name": "get_weather", "arguments": ""}}]}]
    assert got[6] == []
    frags = [tc["function"]["arguments"] for g in got[5:] for x in g for tc in x.get("tool_calls", [])]
    assert frags[1:] == ['{"city"', ': "Par', 'is"}'], frags
    tail, finish = d.finish("stop")
    assert tail == [] and finish == "tool_calls"
    # cut by max_tokens inside the arguments: the call as far as it went, finish_reason length
    d = R.ChatDeltas(R.AutoTools("hermes", ["get_weather"]), "c")
    out = d.text('<tool_call>{"name": "get_weather", "arguments": {"city": "Pa')
    assert [x["tool_calls"][0]["function"] for x in out] == [{"name": "get_weather", "arguments": ""},
                                                              {"arguments": '{"city": "Pa'}]
    assert d.finish("length") == ([], "length")


def test_auto_tool_call_in_process_and_server(client, llm):
    """A reply in the model's format (a grammar makes SmolLM2 write one) comes back as tool calls
    with tool_choice "auto", in process and through the server, streamed and not."""
    from llama_py import LlamaGrammar
    gbnf = r'root ::= "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" [A-Z] [a-z]{2,8} "\"}}"'
    out = llm.create_chat_completion(ASK, tools=TOOLS, tool_choice="auto", max_tokens=40, temperature=0,
                                     grammar=LlamaGrammar.from_string(gbnf, verbose=False))
    llm.reset()
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    call = out["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather" and "city" in json.loads(call["function"]["arguments"])
    kw = dict(model="smollm2", max_tokens=40, temperature=0, messages=ASK, tools=TOOLS, tool_choice="auto",
              extra_body={"grammar": gbnf})
    r = client.chat.completions.create(**kw)
    assert r.choices[0].finish_reason == "tool_calls"
    assert r.choices[0].message.tool_calls[0].function.arguments == call["function"]["arguments"]
    name, args = _check_stream(list(client.chat.completions.create(stream=True, **kw)), TOOLS)
    assert (name, args) == ("get_weather", call["function"]["arguments"])


def test_tool_call_history_reaches_the_template_as_an_object():
    """function.arguments arrives as a JSON string; a template writing it with tojson must see
    the object (else it is encoded twice), and tool messages keep their tool_call_id."""
    from llama_py._runtime.chat import format_chat
    tmpl = ("{% for m in messages %}{{ m.role }}:{% if m.tool_calls %}{% for c in m.tool_calls %}"
            "{{ c.function.arguments | tojson }}{% endfor %}{% else %}{{ m.content }}"
            "{% if m.tool_call_id %}#{{ m.tool_call_id }}{% endif %}{% endif %}\n{% endfor %}")
    msgs = [{"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    text = format_chat(msgs, tmpl, add_generation_prompt=False)
    assert 'assistant:{"city": "Paris"}' in text and "tool:sunny#c1" in text
    assert msgs[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'  # the caller's data untouched


# ---- scoring through the API ----

def test_echo_logprobs_max_tokens_0_scores_the_prompt(client, llm):
    """/v1/completions with echo, logprobs and max_tokens 0 returns the prompt's tokens with their
    log-probabilities (the first null), as Llama.create_completion(echo=True) reports them."""
    prompt = "The quick brown fox jumps over the lazy dog"
    r = client.completions.create(model="smollm2", prompt=prompt, echo=True, logprobs=3, max_tokens=0)
    ch = r.choices[0]
    assert ch.text == prompt and r.usage.completion_tokens == 0
    lp = ch.logprobs
    ref = llm.create_completion(prompt, echo=True, logprobs=3, max_tokens=1, temperature=0)["choices"][0]["logprobs"]
    llm.reset()
    n = len(lp.tokens)
    assert n == len(llm.tokenize(prompt.encode(), add_bos=True, special=True))
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert lp.tokens == ref["tokens"][:n]
    assert lp.text_offset == ref["text_offset"][:n]
    for a, b in zip(lp.token_logprobs[1:], ref["token_logprobs"][1:n]):
        assert a == pytest.approx(b, abs=2e-3)
    for a, b in zip(lp.top_logprobs[1:], ref["top_logprobs"][1:n]):
        assert set(a) == set(b) and all(a[k] == pytest.approx(b[k], abs=2e-3) for k in a)
    assert all(v <= 0 for v in lp.token_logprobs[1:])
    # the sum is the prompt's log-likelihood: a sensible sentence beats its shuffled words
    shuffled = client.completions.create(model="smollm2", prompt="dog lazy the over jumps fox brown quick The",
                                         echo=True, logprobs=0, max_tokens=0).choices[0].logprobs
    assert sum(lp.token_logprobs[1:]) > sum(shuffled.token_logprobs[1:])
    # with generation: the prompt's entries, then the completion's
    g = client.completions.create(model="smollm2", prompt=prompt, echo=True, logprobs=1, max_tokens=3,
                                  temperature=0).choices[0].logprobs
    assert g.tokens[:n] == lp.tokens and len(g.tokens) == n + 3 and g.token_logprobs[0] is None


def test_model_by_id_and_unknown_routes_answer_json(served, client):
    import httpx
    m = client.models.retrieve("smollm2")
    assert m.id == "smollm2" and m.object == "model"
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("nope")
    assert e.value.body["code"] == "model_not_found"
    for method, path in (("GET", "/v1/nothing"), ("POST", "/v2/completions")):
        r = httpx.request(method, served + path)
        assert r.status_code == 404 and r.json()["error"]["type"] == "invalid_request_error"


@pytest.fixture()
def lcp():
    """`import llama_cpp` resolved to llama_py (install_as_llama_cpp) for one test; the modules
    it replaced come back afterwards."""
    import importlib
    import sys
    from llama_py import install_as_llama_cpp

    def ours():
        return [k for k in sys.modules if k == "llama_cpp" or k.startswith("llama_cpp.")]
    saved = {k: sys.modules.pop(k) for k in ours()}
    try:
        install_as_llama_cpp()
        yield importlib.import_module("llama_cpp")
    finally:
        for k in ours():
            del sys.modules[k]
        sys.modules.update(saved)


def test_llama_cpp_namespace_top_level_names(lcp):
    """llama-cpp-python's package re-exports llama_types' names and its low-level module holds
    `_lib`; through install_as_llama_cpp() both resolve to llama_py's."""
    lc = lcp
    from llama_cpp import ChatCompletionRequestUserMessage, CreateCompletionResponse  # noqa: F401
    assert lc.llama_cpp._lib.llama_tokenize is not None
    assert lc.GGML_TYPE_IQ4_XS == 23 and lc.LLAMA_VOCAB_PRE_TYPE_SMOLLM == 21
    from llama_cpp.llama_chat_format import format_chatml, format_llama3
    msgs = [{"role": "user", "content": "hi"}]
    assert format_chatml(messages=msgs).prompt.startswith("<|im_start|>user\nhi<|im_end|>")
    assert "<|start_header_id|>user<|end_header_id|>" in format_llama3(messages=msgs).prompt
    from llama_cpp.llama_grammar import SchemaConverter
    conv = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    schema = conv.resolve_refs({"type": "object", "properties": {"a": {"type": "integer"}}}, "input")
    conv.visit(schema, "")
    assert "root ::=" in conv.format_grammar()


@pytest.mark.parametrize("family,prefix,opening", [("hermes", "Let me check. ", "<tool_call>"),
                                                   ("mistral", "", "[TOOL_CALLS]"),
                                                   ("llama3", "", "<|python_tag|>")])
def test_auto_tool_call_lazy_grammar(llm, family, prefix, opening):
    """tool_choice auto: the grammar changes nothing until the family's opening marker is
    written; from there only a call valid for the tools' schemas can follow (checked on the
    candidates of SmolLM2's vocabulary: a token the call cannot continue with is masked)."""
    import numpy as np
    from llama_py import llama_cpp as C
    from llama_py._capi.sampling import TokenDataArray
    from llama_py._runtime import chat as R
    from llama_py.grammar import sampler_from_grammar
    g = R.AutoTools(family, ["get_weather", "get_time"]).grammar(TOOLS)
    smpl = sampler_from_grammar(llm._vocab, g)
    n = llm.n_vocab()
    try:
        def allowed():
            cand = TokenDataArray(np.zeros(n, dtype=np.float32)).apply(smpl)
            return {int(i) for i, v in zip(cand.ids, cand.logits) if v != -np.inf}

        def tok(text):
            ids = llm.tokenize(text.encode(), add_bos=False, special=False)
            return ids

        assert len(allowed()) == n  # not triggered: nothing masked
        for t in tok(prefix + opening):
            C.llama_sampler_accept(smpl, t)
        ok = allowed()
        pieces = {t: llm.detokenize([t]).decode("utf-8", "ignore") for t in ok}
        assert 0 < len(ok) < n / 10, len(ok)
        body = '{"name": "get_weather", "arguments": {"city": "Paris"}}' if family != "llama3" else \
            '{"name": "get_weather", "parameters": {"city": "Paris"}}'
        if family == "mistral":
            body = "[" + body
        assert all(body.startswith(p.strip()) or not p.strip() for p in pieces.values()), sorted(pieces.values())[:20]
        # a name that is not a tool is refused where it starts to differ
        for t in tok((" [" if family == "mistral" else " ") + '{"name": "get_'):
            C.llama_sampler_accept(smpl, t)
        nxt = {llm.detokenize([t]).decode("utf-8", "ignore") for t in allowed()}
        assert any(p.startswith("w") or p.startswith("t") for p in nxt) and not any(p.startswith("x") for p in nxt)
    finally:
        C.llama_sampler_free(smpl)


def test_llama_cpp_server_entry_points(smollm2_path, lcp):
    """llama-cpp-python's `llama_cpp.server.app.create_app` with its settings names, through
    install_as_llama_cpp(), serves our server (checked with starlette's test client)."""
    import importlib
    from starlette.testclient import TestClient
    create_app = importlib.import_module("llama_cpp.server.app").create_app
    settings = importlib.import_module("llama_cpp.server.settings")
    app = create_app(server_settings=settings.ServerSettings(api_key="k"),
                     model_settings=[settings.ModelSettings(model=str(smollm2_path), model_alias="smol",
                                                            n_ctx=512, flash_attn=True)])
    with TestClient(app) as tc:
        h = {"Authorization": "Bearer k"}
        assert [m["id"] for m in tc.get("/v1/models", headers=h).json()["data"]] == ["smol"]
        assert tc.get("/v1/models").status_code == 401
        r = tc.post("/v1/completions", headers=h, json={"model": "smol", "prompt": "Hi", "max_tokens": 3,
                                                        "temperature": 0}).json()
        assert r["usage"]["completion_tokens"] == 3 and r["model"] == "smol"
    with pytest.raises(ValueError, match="unknown settings"):
        settings.ModelSettings(model="x", n_ctxx=1)
    for field in ("lora_path", "draft_model"):  # a capability not wired here is an error, never ignored
        with pytest.raises(ValueError, match=field):
            settings.ModelSettings(model="x", **{field: "adapter.gguf"})


def test_llama_cpp_internals_as_their_tests_use_them(smollm2_path, llm, lcp):
    """llama-cpp-python's tests/test_llama.py low-level flow (LlamaModel, LlamaContext,
    LlamaBatch, LlamaSampler) through `llama_cpp._internals`; greedy tokens equal Llama's."""
    import importlib
    llama_cpp = lcp
    internals = importlib.import_module("llama_cpp._internals")
    importlib.import_module("llama_cpp._logger").set_verbose(False)
    with importlib.import_module("llama_cpp._utils").suppress_stdout_stderr(disable=False):
        print("hidden")
    model = internals.LlamaModel(path_model=str(smollm2_path), params=llama_cpp.llama_model_default_params())
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_ctx = cparams.n_batch = cparams.n_ubatch = 64
    cparams.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
    context = internals.LlamaContext(model=model, params=cparams)
    tokens = model.tokenize(b"The quick brown fox jumps over the", add_bos=True, special=True)
    assert tokens == llm.tokenize(b"The quick brown fox jumps over the", add_bos=True, special=True)
    batch = internals.LlamaBatch(n_tokens=len(tokens), embd=0, n_seq_max=1)
    sampler = internals.LlamaSampler()
    sampler.add_greedy()
    result, n_eval, step = list(tokens), 0, tokens
    for _ in range(4):
        batch.set_batch(step, n_past=n_eval, logits_all=False)
        context.decode(batch)
        n_eval += len(step)
        step = [sampler.sample(context, -1)]
        result += step
    out = result[len(tokens):]
    ref = llm.create_completion(tokens, max_tokens=4, temperature=0)
    llm.reset()
    assert model.detokenize(out).decode() == ref["choices"][0]["text"]
    assert model.n_vocab() == llm.n_vocab() and "general.architecture" in model.metadata()
    sampler.close()
    batch.close()
    model.close()
    assert context.ctx is None and model.model is None


def _serve_llama_cpp_module(args, env_extra, tmp_path):
    """`python -m llama_cpp.server ARGS` with llama_py's compat folder on PYTHONPATH; yields the
    base URL once /health answers."""
    import os
    import subprocess
    import sys
    import llama_py
    from llama_py.compat import PATH
    from server_util import free_port, wait_healthy
    port = free_port()
    root = os.path.dirname(os.path.dirname(os.path.abspath(llama_py.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PATH, root, os.environ.get("PYTHONPATH", "")]),
               PORT=str(port), **env_extra)
    log = open(tmp_path / "server.log", "w+b")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", *args], stdout=log, stderr=subprocess.STDOUT,
                            env=env, cwd=tmp_path)

    def text():
        log.seek(0)
        return log.read().decode()[-3000:]
    try:
        wait_healthy(proc, port, "python -m llama_cpp.server", text)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_python_m_llama_cpp_server(smollm2_path, tmp_path, llm):
    """llama-cpp-python's command line on llama_py's server: --model/--model_alias/--n_ctx/
    bool and ignored options, a setting from its environment variable (N_CTX), PORT; then a
    --config_file with a models list; a bad value exits 1 naming it."""
    import subprocess
    import sys
    args = ["--model", str(smollm2_path), "--model_alias", "smol", "--host", "127.0.0.1", "--flash_attn", "true",
            "--n_threads", "2", "--use_mlock", "false", "--tensor_split", "0.5", "0.5"]
    for url in _serve_llama_cpp_module(args, {"N_CTX": "640"}, tmp_path):
        c = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        m = c.models.list().data
        assert [x.id for x in m] == ["smol"] and m[0].model_extra["meta"]["n_ctx_slot"] == 640
        r = c.completions.create(model="smol", prompt=PROMPT, max_tokens=6, temperature=0)
        ref = llm.create_completion(PROMPT, max_tokens=6, temperature=0)["choices"][0]["text"]
        llm.reset()
        assert r.choices[0].text == ref
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"host": "127.0.0.1", "api_key": "k", "models": [
        {"model": str(smollm2_path), "model_alias": "a", "n_ctx": 512}]}))
    for url in _serve_llama_cpp_module(["--config_file", str(cfg)], {}, tmp_path):
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0).models.list()
        assert [x.id for x in openai.OpenAI(base_url=url + "/v1", api_key="k").models.list().data] == ["a"]
    import os
    from llama_py.compat import PATH
    bad = subprocess.run([sys.executable, "-m", "llama_cpp.server", "--model", "m.gguf", "--n_ctx", "many"],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([PATH, os.environ.get("PYTHONPATH", "")])))
    assert bad.returncode != 0 and "--n_ctx" in bad.stderr


def test_text_parts_reach_a_string_template_as_text():
    """Content as a list of text parts (what guidance and others send) through a template that
    adds strings: the parts' text joined, as the same message with a string gives."""
    from llama_py._runtime.chat import format_chat
    tmpl = "{% for m in messages %}{{ '<' + m.role + '>' + m.content + '</>' }}{% endfor %}"
    parts = [{"role": "user", "content": [{"type": "text", "text": "Name the "}, {"type": "text", "text": "capital."}]}]
    assert format_chat(parts, tmpl) == format_chat([{"role": "user", "content": "Name the capital."}], tmpl) \
        == "<user>Name the capital.</>"
