"""JSON schemas as pydantic writes them (HttpUrl / AnyUrl, EmailStr's format, set[...],
discriminated unions, Field(pattern=..., min_length=...)) convert, and the grammar is sound:
documents valid for the schema (checked by jsonschema) are accepted and documents breaking an
enforced keyword are refused, by an Earley recognizer over the GBNF text (tests/grammar_util,
independent of the engine: its Earley recognizer). Relaxed keywords are logged; what cannot be expressed still raises."""
from __future__ import annotations

import json
import logging
from typing import Literal, Set, Union

import pytest

from grammar_util import Earley, parse_gbnf
from llama_py.grammar import json_schema_to_gbnf

jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")
from pydantic import AnyUrl, BaseModel, Field, HttpUrl  # noqa: E402


def _accepts(gbnf: str, doc) -> bool:
    """Whether the grammar derives the JSON text of doc (a str is a JSON string value)."""
    ear = Earley(parse_gbnf(gbnf))
    sets = ear.initial()
    for ch in json.dumps(doc):
        sets = ear.step(sets, ord(ch))
        if sets is None:
            return False
    return ear.accepts(sets)


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Page(BaseModel):
    url: HttpUrl
    home: AnyUrl
    tags: Set[str]
    code: str = Field(pattern=r"^[A-Z]+$", min_length=2, max_length=4)
    note: str = Field(pattern=r"^n-\d+$", max_length=8)
    pet: Union[Cat, Dog] = Field(discriminator="kind")


def test_pydantic_schema_converts_and_is_sound(caplog):
    schema = Page.model_json_schema()
    with caplog.at_level(logging.WARNING, logger="llama_py"):
        gbnf = json_schema_to_gbnf(schema)
    logged = caplog.text
    assert "uniqueItems" in logged and "lengths beside format 'uri'" in logged
    assert "lengths beside pattern '^n-\\\\d+$'" in logged or "lengths beside pattern" in logged
    good = {"url": "https://example.com/a", "home": "ftp://files.example.org", "tags": ["a", "b"],
            "code": "ABC", "note": "n-12", "pet": {"kind": "dog", "good": True}}
    jsonschema.validate(good, schema)
    Page.model_validate(good)
    assert _accepts(gbnf, good)
    for field, bad in [("code", "A"), ("code", "ABCDE"), ("code", "abc"), ("url", "not a url"),
                       ("pet", {"kind": "cow", "good": True}), ("pet", {"kind": "cat", "good": True}),
                       ("note", "x-1")]:
        doc = dict(good, **{field: bad})
        with pytest.raises(pydantic.ValidationError):
            Page.model_validate(doc)
        assert not _accepts(gbnf, doc), (field, bad)


@pytest.mark.parametrize("fmt,good,bad", [
    ("email", ["a.b+c@example.co.uk", "x@y.z"], ["a@b", "@b.c", "a b@c.d", "a@b..c"]),
    ("uri", ["http://example.com", "https://a.b:8080/x?y=1#z"], ["example.com", "http//x", "http://"]),
    ("ipv4", ["0.0.0.0", "192.168.1.255"], ["256.1.1.1", "1.2.3", "01.2.3.4"]),
    ("hostname", ["example", "a-b.example.com"], ["-a.com", "a_b.com", "a..b"]),
])
def test_formats_are_real_patterns(fmt, good, bad):
    checker = jsonschema.FormatChecker()
    gbnf = json_schema_to_gbnf({"type": "string", "format": fmt})
    for g in good:
        assert _accepts(gbnf, g), g
    for b in bad:
        assert not _accepts(gbnf, b), b
    # what the grammar accepts is valid for the format where jsonschema can check it
    for g in good:
        if fmt in checker.checkers:
            assert checker.conforms(g, fmt), g


def test_unknown_format_is_any_string_and_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="llama_py"):
        gbnf = json_schema_to_gbnf({"type": "string", "format": "color"})
    assert "'color'" in caplog.text
    assert _accepts(gbnf, "anything at all")


def test_pattern_and_property_names():
    schema = {"type": "object", "patternProperties": {"^x-[a-z]+$": {"type": "integer"}},
              "propertyNames": {"maxLength": 10}}
    gbnf = json_schema_to_gbnf(schema)
    assert _accepts(gbnf, {"x-ab": 1, "x-c": 2})
    assert not _accepts(gbnf, {"x-ab": "one"})   # a matching key gets its pattern's schema
    assert not _accepts(gbnf, {"y": 1})          # other keys: additionalProperties not given
    gbnf2 = json_schema_to_gbnf({"type": "object", "additionalProperties": {"type": "boolean"},
                                 "propertyNames": {"pattern": "^[a-z]{1,3}$"}})
    assert _accepts(gbnf2, {"ab": True}) and not _accepts(gbnf2, {"abcd": True}) and not _accepts(gbnf2, {"a": 1})


def test_relaxed_keywords_convert_and_log(caplog):
    with caplog.at_level(logging.WARNING, logger="llama_py"):
        for schema in ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
                       {"type": "integer", "multipleOf": 5}, {"type": "object", "minProperties": 1, "maxProperties": 3}):
            json_schema_to_gbnf(schema)
    for k in ("uniqueItems", "multipleOf", "minProperties", "maxProperties"):
        assert k in caplog.text


def test_pattern_with_lengths_folds_into_the_repetition():
    gbnf = json_schema_to_gbnf({"type": "string", "pattern": "^[a-z]*$", "minLength": 2, "maxLength": 3})
    assert [_accepts(gbnf, s) for s in ("a", "ab", "abc", "abcd", "AB")] == [False, True, True, False, False]


class Item(BaseModel):
    name: str = Field(min_length=1, max_length=20)
    tags: Set[str] = Field(max_length=3)
    site: AnyUrl
    code: str = Field(pattern=r"^[A-Z]+$", min_length=2, max_length=4)
    pet: Union[Cat, Dog] = Field(discriminator="kind")


def test_pydantic_model_through_the_server_parses(smollm2_path):
    """chat.completions.parse with a pydantic model: the reply validates with pydantic."""
    from server_util import need_server_packages, running_server
    need_server_packages()
    import openai
    from llama_py.server.app import ModelEntry
    entry = ModelEntry.load("smollm2", str(smollm2_path), n_slots=1, n_ctx=2048, max_queue=4)
    with running_server([entry]) as (url, _):
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=300)
        r = client.chat.completions.parse(
            model="smollm2", temperature=0, max_tokens=400, response_format=Item,
            messages=[{"role": "user", "content": "Describe the web page https://example.com as JSON: a short name, "
                                                  "two tags, its site, a code of capital letters and a pet."}])
    assert r.choices[0].finish_reason == "stop", r.choices[0].message.content
    assert isinstance(r.choices[0].message.parsed, Item)
