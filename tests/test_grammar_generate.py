"""Generation constrained by grammars (SmolLM2): outputs judged by checkers independent of the
engine — json.loads and jsonschema for JSON, lark grammars written from the grammar text for
llama.cpp's published grammars, the tests' own Earley recognizer for outputs cut at the token
budget (which must still be prefixes of the language)."""
from __future__ import annotations

import datetime
import json
import re
import uuid

import pytest

import llama_py.llama_cpp as L
from llama_py.grammar import (LlamaGrammar, json_schema_to_gbnf, parse_tool_calls, sampler_from_grammar,
                              tool_calls_grammar)

from grammar_util import Earley, chain_with, generate, lark_parser, parse_gbnf, published_grammars
from model_util import Ctx, Model


@pytest.fixture(scope="module")
def model(smollm2_path):
    with Model(smollm2_path) as m:
        with Ctx(m, n_ctx=1024, n_batch=512) as c:
            yield m, c


def chat(user: str) -> str:
    return f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


PROMPTS = {
    "json": "Describe a cat as a JSON object.",
    "json_arr": "List three fruits as a JSON array.",
    "arithmetic": "Write two arithmetic equations.",
    "list": "List three fruits.",
    "chess": "Write the first moves of a chess game.",
    "c": "Write a tiny C program.",
    "english": "Write one short English sentence.",
    "japanese": "日本語で短い文を書いてください。",
}


@pytest.mark.parametrize("name", list(PROMPTS))
def test_published_grammar_outputs_in_language(name, model):
    m, c = model
    text = published_grammars()[name]
    lk = lark_parser(text)
    ear = Earley(parse_gbnf(text))
    g = LlamaGrammar.from_string(text, verbose=False)
    for seed in (1, 2, 3):
        ch = chain_with(sampler_from_grammar(m.vocab, g), seed)
        out, done = generate(m, c, chat(PROMPTS[name]), ch, n_max=64)
        L.llama_sampler_free(ch)
        if done:
            if name in ("json", "json_arr"):
                v = json.loads(out)
                assert isinstance(v, dict if name == "json" else list), out
            lk.parse(out)  # raises if not in the language
        else:
            # cut at 64 tokens: a prefix of some sentence of the language
            assert ear.run(out) is not None, (name, seed, out)


# ------------------------------------------------------------------------------------------
# JSON schemas: every output run to completion validates with jsonschema

S = lambda **kw: {"type": "string", **kw}  # noqa: E731
OBJ = lambda props, req=None, **kw: {"type": "object", "properties": props,  # noqa: E731
                                     "required": list(props) if req is None else req, **kw}

SCHEMAS = [
    {"type": "string", "maxLength": 20},
    {"type": "integer"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": "integer", "minimum": 1, "maximum": 12},
    {"type": "integer", "minimum": -50, "maximum": -3},
    {"type": "integer", "exclusiveMinimum": 99, "exclusiveMaximum": 1000},
    {"type": "integer", "minimum": 1900},
    {"type": "integer", "maximum": 7},
    {"type": "number", "minimum": 0, "maximum": 1},
    {"type": "number", "minimum": -2.5, "maximum": 10.25},
    {"type": "number", "exclusiveMinimum": 0, "maximum": 100},
    {"enum": ["red", "green", "blue"]},
    {"enum": [1, "two", None, True, {"x": 3}]},
    {"const": "fixed"},
    {"const": {"a": [1, 2]}},
    S(minLength=3, maxLength=8),
    S(format="date"),
    S(format="time"),
    S(format="date-time"),
    S(format="uuid"),
    S(pattern="^[A-Z]{3}-[0-9]{2,4}$"),
    S(pattern="^(cat|dog)s?$"),
    S(pattern="^\\d{3}\\.\\d$"),
    S(pattern="^[a-z]+@[a-z]+\\.(com|org)$"),
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4},
    {"type": "array", "items": S(maxLength=10), "maxItems": 3},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 1},
    {"type": "array", "prefixItems": [{"type": "integer"}, S(maxLength=5)]},
    {"type": ["integer", "null"]},
    {"type": ["string", "boolean"], "maxLength": 6},
    OBJ({"name": S(maxLength=20), "age": {"type": "integer", "minimum": 0, "maximum": 120}}),
    OBJ({"name": S(maxLength=20), "nick": S(maxLength=10), "age": {"type": "integer"}}, req=["name"]),
    OBJ({"a": {"type": "boolean"}}, additionalProperties=False),
    {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}},
    {"type": "object", "additionalProperties": False},
    OBJ({"point": OBJ({"x": {"type": "integer"}, "y": {"type": "integer"}}),
         "label": S(maxLength=12)}),
    OBJ({"user": OBJ({"id": S(format="uuid"), "roles": {"type": "array", "items": {"enum": ["admin", "dev"]},
                                                         "maxItems": 2}}),
         "created": S(format="date-time")}),
    {"$defs": {"pt": OBJ({"x": {"type": "number", "minimum": -10, "maximum": 10}})},
     "type": "object", "properties": {"a": {"$ref": "#/$defs/pt"}, "b": {"$ref": "#/$defs/pt"}},
     "required": ["a", "b"]},
    {"definitions": {"color": {"enum": ["r", "g"]}}, "type": "array", "items": {"$ref": "#/definitions/color"},
     "maxItems": 3},
    {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9},
                                                         "next": {"anyOf": [{"$ref": "#/$defs/node"},
                                                                            {"type": "null"}]}},
                        "required": ["v", "next"]}},
     "$ref": "#/$defs/node"},
    {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, S(maxLength=4)]},
    {"oneOf": [OBJ({"kind": {"const": "a"}, "n": {"type": "integer"}}),
               OBJ({"kind": {"const": "b"}, "s": S(maxLength=6)})]},
    {"allOf": [OBJ({"a": {"type": "integer"}}), OBJ({"b": S(maxLength=5)})]},
    {"allOf": [{"type": "integer", "minimum": 3}, {"maximum": 8}]},
    OBJ({"date": S(format="date"), "time": S(format="time"), "id": S(pattern="^id[0-9]{3}$")}),
    OBJ({"tags": {"type": "array", "items": S(minLength=1, maxLength=8), "minItems": 1, "maxItems": 3},
         "score": {"type": "number", "minimum": 0, "maximum": 5}}),
    OBJ({"ok": {"type": "boolean"}, "err": {"type": ["string", "null"], "maxLength": 10}}),
    OBJ({"x": {"const": 1}, "y": {"enum": ["a", "b"]}, "z": {"type": "null"}}),
    {"type": "array", "items": OBJ({"k": S(maxLength=5), "v": {"type": "integer", "minimum": -5, "maximum": 5}}),
     "minItems": 1, "maxItems": 2},
    OBJ({"title": S(maxLength=30), "year": {"type": "integer", "minimum": 1950, "maximum": 2025},
         "genre": {"enum": ["drama", "comedy", "horror"]}}, description="a film"),
    {"type": "object", "properties": {"a": S(maxLength=8)}, "additionalProperties": {"type": "boolean"},
     "required": ["a"]},
]


def _check_formats(value, schema):
    """Formats the jsonschema package checks only with optional extras: checked here directly."""
    if isinstance(schema, dict):
        f = schema.get("format")
        if f and isinstance(value, str):
            if f == "date":
                datetime.date.fromisoformat(value)
            elif f == "time":
                datetime.time.fromisoformat(value.replace("Z", "+00:00"))
            elif f == "date-time":
                datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            elif f == "uuid":
                uuid.UUID(value)
                assert re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", value)


def _walk_formats(value, schema, root):
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        node = root
        for p in schema["$ref"][2:].split("/"):
            node = node[p]
        return _walk_formats(value, node, root)
    _check_formats(value, schema)
    for k in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(k, []):
            try:
                _walk_formats(value, sub, root)
            except Exception:
                if k == "allOf":
                    raise
    if isinstance(value, dict):
        for pk, pv in value.items():
            if pk in schema.get("properties", {}):
                _walk_formats(pv, schema["properties"][pk], root)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for x in value:
            _walk_formats(x, schema["items"], root)


def test_schema_list_covers_every_keyword():
    text = json.dumps(SCHEMAS)
    for kw in ["type", "properties", "required", "additionalProperties", "enum", "const", "minItems", "maxItems",
               "$ref", "$defs", "anyOf", "oneOf", "allOf", "date", "time", "date-time", "uuid", "pattern",
               "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]:
        assert f'"{kw}"' in text, kw
    assert len(SCHEMAS) >= 50


FINISHED = {}


@pytest.mark.parametrize("i", range(len(SCHEMAS)))
def test_schema_outputs_validate(i, model):
    """Outputs that end (EOG) validate with jsonschema (draft 2020-12 format checker) and the
    format checks above; one cut at the budget (a model looping inside a free-form object or a
    recursive $ref) must still be a prefix of the grammar's language (the tests' Earley)."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the validator of outputs) is not installed")
    m, c = model
    schema = SCHEMAS[i]
    gbnf = json_schema_to_gbnf(schema)
    g = LlamaGrammar.from_string(gbnf, verbose=False)
    prompt = chat("Reply with JSON matching this schema: " + json.dumps(schema))
    V = jsonschema.Draft202012Validator
    for seed in (7,):
        ch = chain_with(sampler_from_grammar(m.vocab, g), seed, temp=0.6)
        out, done = generate(m, c, prompt, ch, n_max=256)
        L.llama_sampler_free(ch)
        FINISHED[i] = done
        if not done:
            assert Earley(parse_gbnf(gbnf)).run(out) is not None, out
            continue
        value = json.loads(out)
        V(schema, format_checker=V.FORMAT_CHECKER).validate(value)
        _walk_formats(value, schema, schema)


def test_most_schema_outputs_finished():
    """Most generations above ran to completion (so the validation is not vacuous)."""
    if len(FINISHED) < len(SCHEMAS):
        pytest.skip("runs only after every test_schema_outputs_validate case")
    assert sum(FINISHED.values()) >= len(SCHEMAS) - 5, {k: v for k, v in FINISHED.items() if not v}


def test_integer_bounds_exact():
    """Integer ranges are exact: every integer in range matches, the neighbours outside do not
    (checked with the tests' Earley recognizer on the grammar text)."""
    for lo, hi in [(0, 0), (1, 12), (-50, -3), (-7, 123), (99, 1001), (5, 5), (-1, 1), (0, 1000)]:
        ear = Earley(parse_gbnf(json_schema_to_gbnf({"type": "integer", "minimum": lo, "maximum": hi})))
        for v in range(lo - 15, hi + 16):
            res = ear.run(str(v))
            assert (res is not None and ear.accepts(res)) == (lo <= v <= hi), (lo, hi, v)
        assert ear.run("007") is None or not ear.accepts(ear.run("007"))


# ------------------------------------------------------------------------------------------
# tool calls

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
                                                        "unit": {"enum": ["celsius", "fahrenheit"]}},
                       "required": ["city", "unit"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two integers",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]}}},
]


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "add"}}])
def test_tool_calls_validate(choice, model):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the validator of outputs) is not installed")
    m, c = model
    g = tool_calls_grammar(TOOLS, choice)
    prompt = chat("Tools: " + json.dumps(TOOLS) + "\nWhat is the weather in Paris? Answer with a tool call as JSON.")
    for seed in (3, 4):
        ch = chain_with(sampler_from_grammar(m.vocab, g), seed, temp=0.6)
        out, done = generate(m, c, prompt, ch, n_max=200)
        L.llama_sampler_free(ch)
        assert done, out
        calls = parse_tool_calls(out)
        assert len(calls) == 1 and calls[0]["type"] == "function"
        fn = calls[0]["function"]
        tool = next(t["function"] for t in TOOLS if t["function"]["name"] == fn["name"])
        if isinstance(choice, dict):
            assert fn["name"] == "add"
        jsonschema.validate(json.loads(fn["arguments"]), tool["parameters"])
