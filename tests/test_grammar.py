"""The GBNF engine (src/grammar*.c) through llama.h and llama_py.grammar, without a model run:
llama.cpp's published grammars compile; malformed grammars and schemas are refused naming the
problem; the allowed-token mask equals a brute-force check of every token's text with an
Earley recognizer written in the tests; end of generation only where the grammar is complete;
dead ends end generation; lazy grammars start exactly at their trigger."""
from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest

import llama_py.llama_cpp as L
from llama_py.grammar import JSON_GBNF, LlamaGrammar, json_schema_to_gbnf, sampler_from_grammar

from grammar_util import Earley, parse_gbnf, partial_utf8_ok, published_grammars
from model_util import LogCapture, Model


@pytest.fixture(scope="module")
def vocab_model(smollm2_path):
    with Model(smollm2_path, vocab_only=True) as m:
        yield m


@pytest.fixture(scope="module")
def grammars():
    return published_grammars()


def pieces_of(model):
    out = []
    buf = ctypes.create_string_buffer(512)
    for t in range(model.n_vocab):
        attr = L.llama_vocab_get_attr(model.vocab, t)
        if L.llama_vocab_is_eog(model.vocab, t) or attr & L.LLAMA_TOKEN_ATTR_CONTROL:
            out.append(b"")
            continue
        k = L.llama_token_to_piece(model.vocab, t, buf, 512, 0, False)
        out.append(buf.raw[:k])
    return out


class Cands:
    """A full-vocabulary candidate array with all logits 0 (NumPy memory in llama_token_data layout)."""

    def __init__(self, n):
        self.n = n
        self.arr = np.zeros(n, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
        assert self.arr.itemsize == ctypes.sizeof(L.llama_token_data)

    def allowed(self, smpl):
        self.arr["id"] = np.arange(self.n)
        self.arr["logit"] = 0.0
        self.arr["p"] = 0.0
        ptr = self.arr.ctypes.data_as(ctypes.POINTER(L.llama_token_data))
        da = L.llama_token_data_array(ptr, self.n, -1, False)
        L.llama_sampler_apply(smpl, ctypes.byref(da))
        return set(np.nonzero(self.arr["logit"] != -np.inf)[0].tolist())

    def logit(self, t):
        return float(self.arr["logit"][t])


# ------------------------------------------------------------------------------------------

def test_published_grammars_compile(grammars, vocab_model):
    for name, text in grammars.items():
        LlamaGrammar.from_string(text, verbose=False)
        smpl = L.llama_sampler_init_grammar(vocab_model.vocab, text.encode(), b"root")
        assert smpl, name
        L.llama_sampler_free(smpl)


MALFORMED = [
    ('root ::= "abc', "line 1, column 10: unterminated string literal"),
    ("root ::= [a-z", "line 1, column 10: unterminated character class"),
    ("root ::= foo", "line 1, column 10: undefined rule 'foo'"),
    ('start ::= "a"', "missing root rule 'root'"),
    ("", "empty grammar"),
    ("# only a comment\n", "empty grammar"),
    ('root ::= root "a"', "left recursion: rule 'root'"),
    ('root ::= a\na ::= b "x"\nb ::= a | "y"', "left recursion"),
    ('root ::= ("a"?)*', "left recursion"),
    ('root ::= "a" )', "line 1, column 14: unexpected ')'"),
    ('root ::= ("a" | "b"', "line 1, column 10: unclosed '('"),
    ('root ::= "a"{3,1}', "max below min"),
    ('root ::= "a"{x}', "malformed repetition"),
    ('root ::= *"a"', "without a preceding item"),
    ('root ::= "\\q"', "unknown escape '\\q'"),
    ('root ::= "\\x4"', "needs 2 hex digits"),
    ("root ::= [z-a]", "character range is reversed"),
    ("root ::= []", "empty character class"),
    ('root "a"', "expected '::='"),
    ('root ::= "a"\nroot ::= "b"', "line 2, column 1: rule 'root' is defined twice"),
    ('root ::= "a" b ::= "c"', "missing newline"),
    ("root ::= <[12]", "token id reference must look like <[123]>"),
    ("root ::= <abc", "unterminated token reference"),
    ('root ::= "\\UFFFFFFFF"', "past U+10FFFF"),
    ('root ::= "ok"\n\nx ::= "a"\n  y', "line 4, column 4: expected '::='"),
]


@pytest.mark.parametrize("text,expected", MALFORMED)
def test_malformed_grammar_named(text, expected):
    with pytest.raises(ValueError) as e:
        LlamaGrammar.from_string(text, verbose=False)
    assert expected in str(e.value), str(e.value)


def test_malformed_grammar_null_from_c(vocab_model):
    for text, expected in MALFORMED:
        with LogCapture() as log:
            smpl = L.llama_sampler_init_grammar(vocab_model.vocab, text.encode(), b"root")
        assert not smpl, text
        assert expected in log.text(), (text, log.text())
    # a <token> reference that is not one token of this vocabulary only fails with a vocab
    LlamaGrammar.from_string("root ::= <notatoken-xyz>", verbose=False)
    with LogCapture() as log:
        assert not L.llama_sampler_init_grammar(vocab_model.vocab, b"root ::= <notatoken-xyz>", b"root")
    assert "not a single token" in log.text()
    with pytest.raises(ValueError, match="not a single token"):
        sampler_from_grammar(vocab_model.vocab, LlamaGrammar(_grammar="root ::= <notatoken-xyz>"))
    with pytest.raises(ValueError, match="out of range"):
        sampler_from_grammar(vocab_model.vocab, LlamaGrammar(_grammar="root ::= <[99999999]>"))


MALFORMED_SCHEMAS = [
    ({"not": {"type": "string"}}, "'not'"),
    ({"if": {"type": "string"}, "then": {}}, "'if'"),
    ({"$ref": "#/$defs/missing"}, "does not resolve"),
    ({"$ref": "http://example.com/s.json"}, "only references into the same document"),
    ({"type": "string", "pattern": "(a)\\1"}, "'pattern'"),
    ({"type": "string", "pattern": "(?=a)b"}, "lookaround"),
    ({"type": "integer", "minimum": 5, "maximum": 2}, "minimum 5 > maximum 2"),
    ({"type": "tuple"}, "unsupported 'type' 'tuple'"),
    ({"type": "array", "contains": {"type": "string"}}, "'contains'"),
    ({"dependentSchemas": {"a": {}}}, "'dependentSchemas'"),
    ({"type": "object", "unevaluatedProperties": False}, "'unevaluatedProperties'"),
    ({"type": "string", "pattern": "^a+$", "maxLength": 0}, "allows no string"),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "conflicting 'type'"),
    ({"type": "string", "minLength": 5, "maxLength": 2}, "minLength"),
    ("{not json", "not valid JSON"),
    ({"enum": []}, "'enum'"),
    ({"anyOf": []}, "'anyOf'"),
    ({"type": "number", "minimum": 0.2, "maximum": 0.7}, "contain no integer"),
]


@pytest.mark.parametrize("schema,expected", MALFORMED_SCHEMAS)
def test_unsupported_schema_named(schema, expected):
    with pytest.raises(ValueError) as e:
        json_schema_to_gbnf(schema)
    assert expected in str(e.value), str(e.value)
    with pytest.raises(ValueError):
        LlamaGrammar.from_json_schema(schema if isinstance(schema, str) else __import__("json").dumps(schema), verbose=False)


def test_null_args_refused(vocab_model):
    assert not L.llama_sampler_init_grammar(None, b'root ::= "a"', b"root")
    assert not L.llama_sampler_init_grammar(vocab_model.vocab, None, b"root")
    assert not L.llama_sampler_init_grammar_lazy_patterns(vocab_model.vocab, b'root ::= "a"', b"root",
                                                          (ctypes.c_char_p * 1)(b"(unclosed"), 1, None, 0)


# ------------------------------------------------------------------------------------------
# the mask against a brute-force check of every token

PROPERTY_GRAMMARS = {
    "unicode": 'root ::= ("é" | [α-ω]+ | "日本" [語人]? | "x" [^a-z]{2,3})+ "!"\n',
    "schema": json_schema_to_gbnf({"type": "object", "properties": {
        "id": {"type": "integer", "minimum": -20, "maximum": 300}, "tag": {"enum": ["a b", "c\"d"]},
        "when": {"type": "string", "format": "date"}, "xs": {"type": "array", "items": {"type": "boolean"},
                                                                 "maxItems": 2}}, "required": ["id"]}),
}


def piece_trie(pieces):
    """Tokens grouped by text: a dict trie over code points; node[None] lists (token, tail),
    tail being an unfinished UTF-8 sequence at the token's end."""
    root = {}
    for t, pc in enumerate(pieces):
        if not pc:
            continue
        cut = len(pc)
        while cut > 0:
            try:
                text = pc[:cut].decode("utf-8")
                break
            except UnicodeDecodeError:
                cut -= 1
        else:
            text = ""
        tail = pc[cut:]
        if len(tail) > 3:
            continue  # invalid UTF-8 inside the token: never allowed
        node = root
        for ch in text:
            node = node.setdefault(ch, {})
        node.setdefault(None, []).append((t, tail))
    return root


def brute_allowed(ear, sets, trie, eog_ids):
    """Tokens whose text continues the Earley chart `sets` (each token's text checked by the
    recognizer; tokens sharing a prefix share its chart)."""
    allowed = set()
    stack = [(trie, sets)]
    while stack:
        node, chart = stack.pop()
        for t, tail in node.get(None, []):
            if node is trie and not tail:
                continue  # empty text
            if not tail or partial_utf8_ok(ear, chart, tail):
                allowed.add(t)
        for ch, child in node.items():
            if ch is None:
                continue
            nxt = ear.step(chart, ord(ch))
            if nxt is not None:
                stack.append((child, nxt))
    if ear.accepts(sets):
        allowed |= eog_ids
    return allowed


@pytest.mark.parametrize("gname", ["chess", "arithmetic", "json", "unicode", "schema"])
def test_mask_equals_bruteforce(gname, grammars, vocab_model):
    text = PROPERTY_GRAMMARS.get(gname) or grammars[gname]
    ear = Earley(parse_gbnf(text))
    pieces = pieces_of(vocab_model)
    trie = piece_trie(pieces)
    eog_ids = {t for t in range(vocab_model.n_vocab) if L.llama_vocab_is_eog(vocab_model.vocab, t)}
    smpl = L.llama_sampler_init_grammar(vocab_model.vocab, text.encode(), b"root")
    assert smpl
    cands = Cands(vocab_model.n_vocab)
    rng = random.Random(hash(gname) & 0xFFFF)
    sets = ear.initial()
    consumed = ""
    pending = b""
    for step in range(3 if gname in ("json", "arithmetic") else 6):
        got = cands.allowed(smpl)
        want = brute_allowed(ear, sets, trie, eog_ids) if not pending else None
        if want is not None:
            extra, missing = got - want, want - got
            assert not extra and not missing, (gname, consumed, [pieces[t] for t in list(extra)[:5]],
                                               [pieces[t] for t in list(missing)[:5]])
        choices = sorted(t for t in got if t not in eog_ids and pieces[t])
        if not choices:
            break
        # prefer tokens that end on a character boundary so the next check runs
        t = rng.choice(choices)
        L.llama_sampler_accept(smpl, t)
        pending += pieces[t]
        try:
            s = pending.decode("utf-8")
            pending = b""
        except UnicodeDecodeError:
            continue
        for ch in s:
            sets = ear.step(sets, ord(ch))
            assert sets is not None, (gname, consumed + s)
        consumed += s
    L.llama_sampler_free(smpl)


# ------------------------------------------------------------------------------------------

def tok(model, text):
    data = text.encode()
    buf = (L.llama_token * (len(data) + 8))()
    n = L.llama_tokenize(model.vocab, data, len(data), buf, len(buf), False, True)
    return list(buf[:n])


def test_end_only_where_complete(vocab_model):
    m = vocab_model
    eos = L.llama_vocab_eos(m.vocab)
    smpl = L.llama_sampler_init_grammar(m.vocab, b'root ::= "ab" "c"?', b"root")
    cands = Cands(m.n_vocab)
    assert eos not in cands.allowed(smpl)
    for t in tok(m, "ab"):
        L.llama_sampler_accept(smpl, t)
    got = cands.allowed(smpl)
    assert eos in got and tok(m, "c")[0] in got
    L.llama_sampler_accept(smpl, tok(m, "c")[0])
    got = cands.allowed(smpl)
    assert got == {t for t in range(m.n_vocab) if L.llama_vocab_is_eog(m.vocab, t)}
    L.llama_sampler_free(smpl)


def test_dead_end_ends_generation(vocab_model):
    m = vocab_model
    smpl = L.llama_sampler_init_grammar(m.vocab, b'root ::= "a" "b"', b"root")
    cands = Cands(m.n_vocab)
    with LogCapture() as log:
        L.llama_sampler_accept(smpl, tok(m, "z")[0])  # forced on it: refused, logged
        got = cands.allowed(smpl)
    eogs = {t for t in range(m.n_vocab) if L.llama_vocab_is_eog(m.vocab, t)}
    assert got == eogs
    assert "not allowed by the grammar" in log.text()
    assert all(cands.logit(t) == 0.0 for t in eogs)
    L.llama_sampler_reset(smpl)
    assert tok(m, "a")[0] in cands.allowed(smpl)
    L.llama_sampler_free(smpl)


def test_clone_keeps_state(vocab_model):
    m = vocab_model
    smpl = L.llama_sampler_init_grammar(m.vocab, JSON_GBNF.encode(), b"root")
    for t in tok(m, '{"a": [1, 2'):
        L.llama_sampler_accept(smpl, t)
    c = L.llama_sampler_clone(smpl)
    cands = Cands(m.n_vocab)
    assert cands.allowed(c) == cands.allowed(smpl)
    assert tok(m, "]")[0] in cands.allowed(c) and tok(m, "}")[0] not in cands.allowed(c)
    L.llama_sampler_free(smpl)
    assert tok(m, "]")[0] in cands.allowed(c)
    L.llama_sampler_free(c)


def test_token_references(vocab_model):
    m = vocab_model
    im_start = tok(m, "<|im_start|>")
    assert len(im_start) == 1
    t = im_start[0]
    smpl = L.llama_sampler_init_grammar(m.vocab, b'root ::= <|im_start|> "x" !<[0]> "y"', b"root")
    assert smpl
    cands = Cands(m.n_vocab)
    assert cands.allowed(smpl) == {t}
    L.llama_sampler_accept(smpl, t)
    L.llama_sampler_accept(smpl, tok(m, "x")[0])
    got = cands.allowed(smpl)
    assert 0 not in got and len(got) > m.n_vocab - 10
    L.llama_sampler_free(smpl)


def test_lazy_starts_exactly_at_trigger(vocab_model):
    m = vocab_model
    g = b'root ::= "<tool>" [0-9]+ "</tool>"'
    pats = (ctypes.c_char_p * 1)(b"[\\s\\S]*?(<tool>)[\\s\\S]*")
    smpl = L.llama_sampler_init_grammar_lazy_patterns(m.vocab, g, b"root", pats, 1, None, 0)
    assert smpl
    cands = Cands(m.n_vocab)
    text = "Sure, calling it now <tool>42</tool>"
    toks = tok(m, text)
    seen = ""
    buf = ctypes.create_string_buffer(64)
    triggered_at = None
    for t in toks:
        got = cands.allowed(smpl)
        if "<tool>" not in seen:
            assert len(got) == m.n_vocab, f"constrained before the trigger, after {seen!r}"
        else:
            if triggered_at is None:
                triggered_at = seen
            assert len(got) < 100 and t in got, seen
        L.llama_sampler_accept(smpl, t)
        k = L.llama_token_to_piece(m.vocab, t, buf, 64, 0, False)
        seen += buf.raw[:k].decode()
    assert triggered_at is not None and triggered_at.endswith("<tool>") or triggered_at.endswith("<tool>4")
    assert cands.allowed(smpl) == {t for t in range(m.n_vocab) if L.llama_vocab_is_eog(m.vocab, t)}
    L.llama_sampler_free(smpl)

    # a trigger token: the grammar is fed from the token on, included
    im_start = tok(m, "<|im_start|>")[0]
    trig = (L.llama_token * 1)(im_start)
    smpl = L.llama_sampler_init_grammar_lazy_patterns(m.vocab, b'root ::= <|im_start|> "ok"', b"root", None, 0, trig, 1)
    assert smpl
    L.llama_sampler_accept(smpl, tok(m, "hello")[0])
    assert len(cands.allowed(smpl)) == m.n_vocab
    L.llama_sampler_accept(smpl, im_start)
    got = cands.allowed(smpl)
    assert tok(m, "ok")[0] in got and len(got) < 10
    L.llama_sampler_free(smpl)

    # the deprecated trigger-word form
    words = (ctypes.c_char_p * 1)(b"CALL")
    with pytest.warns(DeprecationWarning):
        smpl = L.llama_sampler_init_grammar_lazy(m.vocab, b'root ::= "CALL" [a-z]+', b"root", words, 1, None, 0)
    assert smpl
    for t in tok(m, "ok "):
        L.llama_sampler_accept(smpl, t)
    assert len(cands.allowed(smpl)) == m.n_vocab
    for t in tok(m, "CALL"):
        L.llama_sampler_accept(smpl, t)
    got = cands.allowed(smpl)
    assert len(got) < m.n_vocab and tok(m, "x")[0] in got
    L.llama_sampler_free(smpl)


TRIGGER_CASES = [
    (r"[\s\S]*?(<tool>)[\s\S]*", "x <tool>", True),
    (r"^(?:ok|yes) (\d+)", "yes 12", True),
    (r"^(?:ok|yes) (\d+)", "no 12", False),
    (r"[^a]+(b)", "ccb", True),
    (r"a{2,3}(b)", "aaab", True),
    (r"a{2,3}(b)", "aaaab", False),
    (r"\s*(\{)[\s\S]*", "  {", True),
    (r"[\s\S]*(CALL)$", "do CALL", True),
    (r"[\s\S]*(CALL)$", "do CAL", False),
]


@pytest.mark.parametrize("pattern,text,fires", TRIGGER_CASES)
def test_trigger_pattern_semantics(pattern, text, fires, vocab_model):
    """Patterns are matched against the whole output so far (std::regex_match semantics)."""
    m = vocab_model
    pats = (ctypes.c_char_p * 1)(pattern.encode())
    smpl = L.llama_sampler_init_grammar_lazy_patterns(m.vocab, b"root ::= .*", b"root", pats, 1, None, 0)
    assert smpl
    cands = Cands(m.n_vocab)
    for t in tok(m, text):
        L.llama_sampler_accept(smpl, t)
    triggered = len(cands.allowed(smpl)) < m.n_vocab  # the grammar excludes control tokens
    assert triggered == fires
    L.llama_sampler_free(smpl)


def test_allocation_failures_never_crash(vocab_model):
    """Every allocation of parsing, matching, masks and clones may fail: NULL or a dead state, logged."""
    from llama_py import ggml
    fail = ggml.load_library().ggml_test_fail_alloc_after
    fail.argtypes = [ctypes.c_int64]
    m = vocab_model
    g = json_schema_to_gbnf({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 77},
                                                              "b": {"type": "string", "pattern": "^x+$"}}}).encode()
    L.llama_sampler_free(L.llama_sampler_init_grammar(m.vocab, g, b"root"))  # token trie built and cached
    toks = tok(m, '{"a": 42, "b": "xx')
    cands = Cands(m.n_vocab)
    nulls = 0
    with LogCapture():
        try:
            for k in range(0, 300, 7):
                fail(k)
                s = L.llama_sampler_init_grammar(m.vocab, g, b"root")
                if not s:
                    nulls += 1
                    continue
                for t in toks:
                    cands.allowed(s)
                    L.llama_sampler_accept(s, t)
                L.llama_sampler_free(L.llama_sampler_clone(s))
                L.llama_sampler_free(s)
        finally:
            fail(-1)
    assert nulls > 0
