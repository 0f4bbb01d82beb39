"""GBNF grammars for constrained generation: `LlamaGrammar`, JSON schema -> GBNF, tool calls.

    from llama_py.grammar import LlamaGrammar, sampler_from_grammar
    g = LlamaGrammar.from_json_schema('{"type": "object", "properties": {"n": {"type": "integer"}}}')
    smpl = sampler_from_grammar(vocab, g)      # raises ValueError, never returns NULL

A grammar that does not compile raises ValueError naming the line and column. JSON schemas are
converted as llama.cpp's converter does where that is sound, so what pydantic emits goes
through: unknown string formats constrain to a string (email, uri, ipv4, hostname to a real
pattern, ipv6 to its characters), `discriminator` is an annotation (oneOf constrains), a
pattern with lengths is honoured, patternProperties / propertyNames constrain the extra keys.
What the grammar cannot enforce (uniqueItems, multipleOf, min/maxProperties, lengths beside a
format or a pattern that is not one repeated item) is relaxed and logged on the `llama_py`
logger; a keyword that would change which documents are valid in a way a grammar cannot
follow (not, if/then/else, contains, ...) still raises ValueError naming it. The grammars are compiled and matched by the C engine
(src/grammar*.c); this module only writes GBNF text.
"""
from __future__ import annotations

import ctypes
import json
import logging
import math
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__all__ = [
    "LlamaGrammar", "json_schema_to_gbnf", "JSON_GBNF", "JSON_ARR_GBNF", "sampler_from_grammar",
    "tools_to_json_schema", "tool_calls_grammar", "parse_tool_calls", "regex_to_gbnf", "SchemaConverter",
]

# ------------------------------------------------------------------------------------------
# the C side

_validate = None


def _validator():
    global _validate
    if _validate is None:
        from ._lib import load_library
        fn = load_library().llama_py_grammar_validate
        fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        fn.restype = ctypes.c_bool
        _validate = fn
    return _validate


def _check_gbnf(text: str, root: str = "root", vocab=None) -> None:
    """Raises ValueError with the engine's reason ("line L, column C: ...") if text does not compile."""
    err = ctypes.create_string_buffer(512)
    ok = _validator()(vocab, text.encode("utf-8"), root.encode("utf-8"), err, len(err))
    if not ok:
        raise ValueError(f"invalid grammar: {err.value.decode('utf-8', 'replace')}")


class LlamaGrammar:
    """A GBNF grammar (text and root rule), checked by the engine when it is made."""

    def __init__(self, *args, _grammar: str, _root: str = "root", **kwargs):
        self._grammar = _grammar
        self._root = _root
        self.triggers: List[str] = []  # lazy: patterns whose match starts the grammar (none: always on)

    def lazy(self, triggers: Sequence[str]) -> "LlamaGrammar":
        """A copy that constrains only from a trigger on: each trigger is a regex matched against
        the whole text generated so far; the grammar gets the text from its first capture group
        on (llama_sampler_init_grammar_lazy_patterns)."""
        g = LlamaGrammar(_grammar=self._grammar, _root=self._root)
        g.triggers = list(triggers)
        return g

    @classmethod
    def from_string(cls, grammar: str, verbose: bool = True) -> "LlamaGrammar":
        """Compiles grammar (without a vocabulary: token references are checked for syntax only);
        ValueError naming line:column if it does not."""
        if not isinstance(grammar, str):
            raise TypeError("grammar must be a str")
        _check_gbnf(grammar)
        return cls(_grammar=grammar)  # verbose: accepted for compatibility; nothing is printed

    @classmethod
    def from_file(cls, file: Union[str, Path], verbose: bool = True) -> "LlamaGrammar":
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"{cls.from_file.__qualname__}: error reading grammar file: {e}") from e
        if not text.strip():
            raise ValueError(f"{cls.from_file.__qualname__}: grammar file {file} is empty")
        return cls.from_string(text, verbose=verbose)

    @classmethod
    def from_json_schema(cls, json_schema: Union[str, Dict[str, Any]], verbose: bool = True) -> "LlamaGrammar":
        """The grammar of JSON documents valid against json_schema (a JSON string or a dict)."""
        return cls.from_string(json_schema_to_gbnf(json_schema), verbose=verbose)

    @property
    def grammar(self) -> str:
        return self._grammar

    @property
    def root(self) -> str:
        return self._root

    def __repr__(self) -> str:
        return f"LlamaGrammar(root={self._root!r}, {len(self._grammar)} chars)"


def sampler_from_grammar(vocab, grammar: LlamaGrammar) -> int:
    """A grammar sampler for vocab (a llama_vocab pointer); raises ValueError if the engine
    refuses the grammar (e.g. a <token> reference that is not one token of this vocabulary)."""
    from . import llama_cpp as C
    triggers = getattr(grammar, "triggers", None)
    if triggers:
        pats = (ctypes.c_char_p * len(triggers))(*[t.encode("utf-8") for t in triggers])
        smpl = C.llama_sampler_init_grammar_lazy_patterns(vocab, grammar._grammar.encode("utf-8"),
                                                          grammar._root.encode("utf-8"), pats, len(triggers), None, 0)
    else:
        smpl = C.llama_sampler_init_grammar(vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
    if not smpl:
        err = ctypes.create_string_buffer(512)
        _validator()(vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"), err, len(err))
        raise ValueError("llama_sampler_init_grammar refused the grammar: "
                         + (err.value.decode("utf-8", "replace") or "see the log"))
    return smpl


# ------------------------------------------------------------------------------------------
# JSON

_JSON_RULES = r'''ws ::= ([ \t] | "\n" [ \t]{0,24})?
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
'''

#: Any JSON object, for response_format={"type": "json_object"}.
JSON_GBNF = "root ::= object\n" + _JSON_RULES
#: Any JSON array.
JSON_ARR_GBNF = "root ::= array\n" + _JSON_RULES


def _lit(s: str) -> str:
    """A GBNF string literal for s."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _json_lit(value: Any) -> str:
    """The GBNF literal of one JSON value in its compact form."""
    return _lit(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


# ---- integer ranges (exact) ----

_MAX_DIGITS = 16  # unbounded integers stop at 16 digits (beyond exact doubles anyway)


def _same_len_range(lo: str, hi: str) -> List[str]:
    """Alternatives matching the decimal strings of equal length n between lo and hi (inclusive)."""
    n = len(lo)
    if n == 0:
        return [""]
    if lo == hi:
        return [_lit(lo)]
    if n == 1:
        return [f"[{lo}-{hi}]"]
    if lo[0] == hi[0]:
        return [f"{_lit(lo[0])} ({' | '.join(_same_len_range(lo[1:], hi[1:]))})"]
    out = []
    rest = n - 1
    if lo[1:] == "0" * rest:
        first_full = int(lo[0])
    else:
        out.append(f"{_lit(lo[0])} ({' | '.join(_same_len_range(lo[1:], '9' * rest))})")
        first_full = int(lo[0]) + 1
    if hi[1:] == "9" * rest:
        last_full = int(hi[0])
        tail = None
    else:
        last_full = int(hi[0]) - 1
        tail = f"{_lit(hi[0])} ({' | '.join(_same_len_range('0' * rest, hi[1:]))})"
    if first_full <= last_full:
        out.append(f"[{first_full}-{last_full}] [0-9]{{{rest}}}")
    if tail:
        out.append(tail)
    return out


def _nonneg_range(lo: int, hi: Optional[int]) -> str:
    """GBNF for the non-negative integers in [lo, hi] (hi None: unbounded), no leading zeros."""
    alts = []
    if lo == 0:
        alts.append('"0"')
        lo = 1
    if hi is not None and hi < lo:
        return " | ".join(alts) if alts else ""
    top = len(str(hi)) if hi is not None else _MAX_DIGITS
    for n in range(len(str(lo)), top + 1):
        a = max(lo, 10 ** (n - 1))
        b = 10 ** n - 1 if hi is None else min(hi, 10 ** n - 1)
        if a > b:
            continue
        alts.extend(_same_len_range(str(a), str(b)))
    return " | ".join(alts)


def _int_range(lo: Optional[int], hi: Optional[int]) -> str:
    """GBNF for the integers in [lo, hi] written as JSON integers (either bound None: unbounded)."""
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"integer bounds are empty: minimum {lo} > maximum {hi}")
    alts = []
    if hi is None or hi >= 0:
        pos = _nonneg_range(max(lo, 0) if lo is not None else 0, hi)
        if pos:
            alts.append(f"({pos})")
    if lo is None or lo < 0:
        # negative numbers: "-" followed by their magnitude in [max(1, -hi), -lo]
        neg = _nonneg_range(max(1, -hi) if hi is not None else 1, -lo if lo is not None else None)
        if neg:
            alts.append(f'"-" ({neg})')
    return " | ".join(alts)


# ---- regex (ECMAScript subset) -> GBNF over JSON string content ----

_SAFE = r'[^"\\\x00-\x1F]'


class _Regex:
    """Parses a JSON-schema `pattern` and writes GBNF matching the JSON-escaped text of the
    strings it accepts. Sound by construction: characters that JSON must escape are produced only
    as their escapes; a class that includes them allows the escaped forms of \\n \\t \\r, \" and \\\\."""

    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0

    def fail(self, why: str):
        raise ValueError(f"unsupported 'pattern' {self.p!r}: {why} (at offset {self.i})")

    def parse(self) -> str:
        anchored_start = self.p.startswith("^")
        if anchored_start:
            self.i = 1
        body = self.alt(top=True)
        if self.i != len(self.p):
            self.fail("unmatched ')'")
        pre = "" if anchored_start else "jchar* "
        post = "" if self.anchored_end else " jchar*"
        return f"{pre}({body}){post}"

    anchored_end = False

    def alt(self, top=False) -> str:
        alts = [self.seq(top)]
        while self.i < len(self.p) and self.p[self.i] == "|":
            if top and (self.p.startswith("^") or self.anchored_end):
                self.fail("alternation at the top level together with anchors")
            self.i += 1
            alts.append(self.seq(top))
        return " | ".join(a if a else '""' for a in alts)

    def seq(self, top) -> str:
        items = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            if self.p[self.i] == "$":
                if not (top and self.i == len(self.p) - 1):
                    self.fail("'$' is supported only at the end")
                self.anchored_end = True
                self.i += 1
                continue
            if self.p[self.i] == "^":
                self.fail("'^' is supported only at the start")
            atom = self.atom()
            items.append(self.quant(atom))
        return " ".join(items)

    def quant(self, atom: str) -> str:
        if self.i >= len(self.p):
            return atom
        c = self.p[self.i]
        if c in "*+?":
            self.i += 1
            out = f"({atom}){c}"
        elif c == "{" and re.match(r"\{\d+(,\d*)?\}", self.p[self.i:]):
            m = re.match(r"\{(\d+)(,(\d*))?\}", self.p[self.i:])
            self.i += m.end()
            lo = int(m.group(1))
            hi = m.group(3)
            if m.group(2) is None:
                out = f"({atom}){{{lo}}}"
            elif hi == "":
                out = f"({atom}){{{lo},}}"
            else:
                if int(hi) < lo:
                    self.fail("{m,n} with n < m")
                out = f"({atom}){{{lo},{int(hi)}}}"
        else:
            return atom
        if self.i < len(self.p) and self.p[self.i] == "?":
            self.i += 1  # lazy: the same language
        return out

    def char_expr(self, ch: str) -> str:
        """GBNF for one character as it appears escaped in JSON text."""
        o = ord(ch)
        if ch == '"':
            return r'"\\\""'
        if ch == "\\":
            return r'"\\\\"'
        esc = {"\n": "n", "\t": "t", "\r": "r", "\b": "b", "\f": "f"}
        if ch in esc:
            return _lit("\\" + esc[ch])
        if o < 0x20:
            return _lit(f"\\u{o:04x}")
        return _lit(ch)

    def escape(self, in_class: bool):
        """After a backslash: ('set', ranges, negated) for shorthands, or ('char', c)."""
        if self.i >= len(self.p):
            self.fail("pattern ends with '\\'")
        c = self.p[self.i]
        self.i += 1
        sets = {"d": [("0", "9")], "w": [("0", "9"), ("A", "Z"), ("_", "_"), ("a", "z")],
                "s": [(" ", " "), ("\t", "\t"), ("\n", "\n"), ("\r", "\r"), ("\f", "\f"), ("\v", "\v")]}
        if c in "dws":
            return ("set", sets[c], False)
        if c in "DWS":
            return ("set", sets[c.lower()], True)
        simple = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
        if c in simple:
            return ("char", simple[c])
        if c in "xu":
            n = 2 if c == "x" else 4
            h = self.p[self.i:self.i + n]
            if len(h) != n or not all(x in "0123456789abcdefABCDEF" for x in h):
                self.fail("bad hex escape")
            self.i += n
            return ("char", chr(int(h, 16)))
        if c.isalnum():
            self.fail(f"escape '\\{c}' is not supported")
        return ("char", c)

    def set_expr(self, ranges: List[Tuple[str, str]], negated: bool) -> str:
        """GBNF for a character set: safe characters as a class, plus escaped forms."""
        def has(ch):
            inside = any(a <= ch <= b for a, b in ranges)
            return inside != negated
        parts = []
        body = []
        for a, b in ranges:
            body.append(self.cls_char(a) + ("" if a == b else "-" + self.cls_char(b)))
        excl = '"\\\\\\x00-\\x1F'
        if negated:
            parts.append(f"[^{''.join(body)}{excl}]")
        elif body:
            # intersect with the safe set: a class with the unsafe characters removed, then
            # minus them (GBNF has no intersection, so split ranges around them)
            safe = []
            for a, b in ranges:
                for lo, hi in self.split_safe(a, b):
                    safe.append(self.cls_char(lo) + ("" if lo == hi else "-" + self.cls_char(hi)))
            if safe:
                parts.append(f"[{''.join(safe)}]")
        for ch in ['"', "\\", "\n", "\t", "\r"]:
            if has(ch):
                parts.append(self.char_expr(ch))
        if not parts:
            self.fail("character set with no character JSON can hold unescaped")
        return parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"

    @staticmethod
    def split_safe(a: str, b: str):
        lo, hi = ord(a), ord(b)
        out = []
        cur = lo
        for bad_lo, bad_hi in ((0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)):
            if cur > hi:
                break
            if bad_hi < cur:
                continue
            if bad_lo > cur:
                out.append((chr(cur), chr(min(hi, bad_lo - 1))))
            cur = max(cur, bad_hi + 1)
        if cur <= hi:
            out.append((chr(cur), chr(hi)))
        return out

    @staticmethod
    def cls_char(ch: str) -> str:
        o = ord(ch)
        if ch in "]\\^-[\"":
            return "\\" + ch
        if o < 0x20 or o == 0x7F:
            return f"\\x{o:02X}"
        return ch

    def atom(self) -> str:
        c = self.p[self.i]
        if c == "(":
            self.i += 1
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.p.startswith("?", self.i):
                self.fail("lookaround and named groups are not supported")
            body = self.alt()
            if self.i >= len(self.p) or self.p[self.i] != ")":
                self.fail("missing ')'")
            self.i += 1
            return f"({body})"
        if c == ".":
            self.i += 1
            return "jchar-nonl"
        if c == "[":
            self.i += 1
            neg = self.p.startswith("^", self.i)
            if neg:
                self.i += 1
            ranges: List[Tuple[str, str]] = []
            extra_neg: List[List[Tuple[str, str]]] = []
            first = True
            while first or (self.i < len(self.p) and self.p[self.i] != "]"):
                first = False
                if self.i >= len(self.p):
                    self.fail("missing ']'")
                ch = self.p[self.i]
                if ch == "\\":
                    self.i += 1
                    e = self.escape(True)
                    if e[0] == "set":
                        if e[2]:
                            extra_neg.append(e[1])
                        else:
                            ranges.extend(e[1])
                        continue
                    lo = e[1]
                else:
                    lo = ch
                    self.i += 1
                hi = lo
                if self.p.startswith("-", self.i) and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]":
                    self.i += 1
                    if self.p[self.i] == "\\":
                        self.i += 1
                        e = self.escape(True)
                        if e[0] == "set":
                            self.fail("a shorthand class cannot end a range")
                        hi = e[1]
                    else:
                        hi = self.p[self.i]
                        self.i += 1
                    if hi < lo:
                        self.fail("reversed range")
                ranges.append((lo, hi))
            if self.i >= len(self.p):
                self.fail("missing ']'")
            self.i += 1
            if extra_neg:
                if neg or ranges or len(extra_neg) > 1:
                    self.fail("negated shorthand mixed with other class members")
                return self.set_expr(extra_neg[0], True)
            return self.set_expr(ranges, neg)
        if c == "\\":
            self.i += 1
            e = self.escape(False)
            if e[0] == "set":
                return self.set_expr(e[1], e[2])
            return self.char_expr(e[1])
        if c in "*+?{":
            self.fail("quantifier without a preceding item")
        self.i += 1
        return self.char_expr(c)


def regex_to_gbnf(pattern: str) -> str:
    """A GBNF expression for the JSON string content (between the quotes) of the strings that
    `pattern` matches (JSON-schema semantics: unanchored sides match anything). Uses the rules
    jchar and jchar-nonl, which json_schema_to_gbnf defines."""
    return _Regex(pattern).parse()


# ---- the converter ----

log = logging.getLogger("llama_py")

_ANNOTATIONS = {"title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
                "readOnly", "writeOnly", "$anchor", "contentMediaType", "contentEncoding", "discriminator"}
_SUPPORTED = {"type", "properties", "required", "additionalProperties", "enum", "const", "items", "prefixItems",
              "minItems", "maxItems", "$ref", "$defs", "definitions", "anyOf", "oneOf", "allOf", "format",
              "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
              "nullable", "patternProperties", "propertyNames"}
# accepted, not enforced by the grammar (logged): the generated document may break them
_RELAXED = {"uniqueItems", "multipleOf", "minProperties", "maxProperties"}

_FORMATS = {
    "date": "jdate",
    "time": "jtime",
    "date-time": 'jdate "T" jtime',
    "uuid": "hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}",
    # patterns for the formats pydantic emits (HttpUrl / AnyUrl, EmailStr, IPvAnyAddress):
    # each a subset of the format's strings, so what is generated is valid
    "uri": "juri", "email": "jemail", "ipv4": "jipv4", "hostname": "jhost",
}
# formats with only a character-level pattern: strings of the format's characters (logged)
_LOOSE_FORMATS = {"ipv6": "jipv6"}

_FORMAT_RULES = r'''jdate ::= [0-9]{4} "-" ( ("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8]) )
jtime ::= ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])
hex ::= [0-9a-fA-F]
jlabel ::= [a-zA-Z0-9] ([a-zA-Z0-9-]* [a-zA-Z0-9])?
jhost ::= jlabel ("." jlabel)*
jemail ::= [a-zA-Z0-9_%+-] [a-zA-Z0-9._%+-]* "@" jlabel ("." jlabel)+
juri ::= [a-zA-Z] [a-zA-Z0-9+.-]* "://" jhost (":" [0-9]{1,5})? ("/" [^"\\\x00-\x20]*)?
jdec-octet ::= "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]
jipv4 ::= jdec-octet "." jdec-octet "." jdec-octet "." jdec-octet
jipv6 ::= [0-9a-fA-F:] [0-9a-fA-F:.]{1,44}
'''


# ^ITEM+$ / ^ITEM*$ with ITEM one character, class or escape: lengths apply to its repetition
_ONE_ITEM_REPEAT = re.compile(r"\^((?:\[(?:\\.|[^\]\\])*\])|\\[dDwWsS]|\.|[^\\\[\](){}|*+?^$])([*+])\$")


def _with_lengths(pattern: str, lo: int, hi: Optional[int]) -> Optional[str]:
    """pattern with minLength lo / maxLength hi folded into its one repetition, or None when
    the pattern is not an anchored repetition of one item (the lengths cannot be merged)."""
    m = _ONE_ITEM_REPEAT.fullmatch(pattern)
    if m is None:
        return None
    lo = max(lo, 1 if m.group(2) == "+" else 0)
    if hi is not None and hi < lo:
        raise ValueError(f"pattern {pattern!r} with maxLength {hi} allows no string")
    return f"^{m.group(1)}{{{lo},{'' if hi is None else hi}}}$"


class _Converter:
    def __init__(self, root_schema: Any):
        self.root = root_schema
        self.rules: Dict[str, str] = {}
        self.by_body: Dict[str, str] = {}
        self.refs: Dict[str, str] = {}
        self.used_formats = False
        self.used_regex = False

    def add(self, name: str, body: str) -> str:
        """Adds rule name ::= body (reusing an identical rule); returns the rule's name."""
        if body in self.by_body:
            return self.by_body[body]
        base = re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-") or "r"
        n, i = base, 1
        while n in self.rules or n in ("root", "ws", "string", "char", "number", "boolean", "null", "value",
                                       "object", "array", "jdate", "jtime", "hex", "jchar", "jchar-nonl", "jchar-len",
                                       "jlabel", "jhost", "jemail", "juri", "jdec-octet", "jipv4", "jipv6"):
            i += 1
            n = f"{base}-{i}"
        self.rules[n] = body
        self.by_body[body] = n
        return n

    def resolve(self, ref: str, path: str) -> Tuple[str, Any]:
        if not ref.startswith("#"):
            raise ValueError(f"unsupported '$ref' {ref!r} at {path}: only references into the same document (#/...)")
        node = self.root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise ValueError(f"'$ref' {ref!r} at {path} does not resolve")
        return ref, node

    def visit(self, s: Any, name: str, path: str) -> str:
        """Returns a GBNF expression for the JSON values valid against schema s."""
        if s is True or s == {}:
            return "value"
        if s is False:
            raise ValueError(f"schema false at {path} allows no value")
        if not isinstance(s, dict):
            raise ValueError(f"schema at {path} must be an object or a boolean, not {type(s).__name__}")
        for k in s:
            if k in _RELAXED:
                log.warning("JSON schema: %r at %s is not enforced by the grammar (relaxed)", k, path)
            elif k not in _SUPPORTED and k not in _ANNOTATIONS:
                raise ValueError(f"unsupported JSON schema keyword {k!r} at {path}")
        if "$ref" in s:
            others = set(s) - {"$ref", "$defs", "definitions"} - _ANNOTATIONS
            if others:
                raise ValueError(f"'$ref' with sibling keywords {sorted(others)} at {path} is not supported")
            ref, target = self.resolve(s["$ref"], path)
            if ref not in self.refs:
                rule = self.add("ref-" + ref.split("/")[-1], f"<pending {ref}>")
                self.refs[ref] = rule
                body = self.visit(target, rule, ref)
                del self.by_body[f"<pending {ref}>"]
                self.rules[rule] = body
            return self.refs[ref]
        if "allOf" in s:
            return self.visit(self.merge_all_of(s, path), name, path)
        if "anyOf" in s or "oneOf" in s:
            key = "anyOf" if "anyOf" in s else "oneOf"
            if "anyOf" in s and "oneOf" in s:
                raise ValueError(f"'anyOf' together with 'oneOf' at {path} is not supported")
            subs = s[key]
            if not isinstance(subs, list) or not subs:
                raise ValueError(f"'{key}' at {path} must be a non-empty list")
            rest = {k: v for k, v in s.items() if k != key and k not in _ANNOTATIONS and k not in ("$defs", "definitions")}
            alts = []
            for i, sub in enumerate(subs):
                merged = self.merge_all_of({"allOf": [rest, sub]}, path) if rest else sub
                alts.append(self.visit(merged, f"{name}-{i}", f"{path}/{key}/{i}"))
            return self.add(name, " | ".join(alts))
        if "const" in s:
            return self.add(name, _json_lit(s["const"]))
        if "enum" in s:
            if not isinstance(s["enum"], list) or not s["enum"]:
                raise ValueError(f"'enum' at {path} must be a non-empty list")
            return self.add(name, " | ".join(_json_lit(v) for v in s["enum"]))
        t = s.get("type")
        if isinstance(t, list):
            if not t:
                raise ValueError(f"'type' at {path} is an empty list")
            alts = [self.visit({**s, "type": x}, f"{name}-{x}", path) for x in t]
            return self.add(name, " | ".join(alts))
        if s.get("nullable") is True and t is not None:
            return self.add(name, self.visit({**s, "nullable": False}, name, path) + " | null")
        if t is None:
            if any(k in s for k in ("properties", "additionalProperties", "required", "patternProperties",
                                    "propertyNames", "minProperties", "maxProperties")):
                t = "object"
            elif any(k in s for k in ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")):
                t = "array"
            elif "pattern" in s or "format" in s or "minLength" in s or "maxLength" in s:
                t = "string"
            elif any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
                t = "number"
            else:
                return "value"
        self.check_applicable(s, t, path)
        if t == "string":
            return self.string(s, name, path)
        if t == "integer":
            return self.integer(s, name, path)
        if t == "number":
            return self.number(s, name, path)
        if t == "boolean":
            return "boolean"
        if t == "null":
            return "null"
        if t == "object":
            return self.object(s, name, path)
        if t == "array":
            return self.array(s, name, path)
        raise ValueError(f"unsupported 'type' {t!r} at {path}")

    _BY_TYPE = {
        "string": {"pattern", "format", "minLength", "maxLength"},
        "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
        "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
        "object": {"properties", "required", "additionalProperties"},
        "array": {"items", "prefixItems", "minItems", "maxItems"},
        "boolean": set(), "null": set(),
    }

    def check_applicable(self, s, t, path):
        if t not in self._BY_TYPE:
            raise ValueError(f"unsupported 'type' {t!r} at {path}")
        # keywords of another type are ignored by JSON schema for this type: harmless, allowed

    def merge_all_of(self, s: Dict[str, Any], path: str) -> Dict[str, Any]:
        out: Dict[str, Any] = {k: v for k, v in s.items() if k != "allOf"}
        subs = s["allOf"]
        if not isinstance(subs, list) or not subs:
            raise ValueError(f"'allOf' at {path} must be a non-empty list")
        for i, sub in enumerate(subs):
            while isinstance(sub, dict) and "$ref" in sub:
                _, target = self.resolve(sub["$ref"], path)
                sub = {**{k: v for k, v in sub.items() if k != "$ref"}, **target} if isinstance(target, dict) else target
            if sub is True or sub == {}:
                continue
            if not isinstance(sub, dict):
                raise ValueError(f"'allOf' item {i} at {path} must be an object schema")
            if "allOf" in sub:
                sub = self.merge_all_of(sub, f"{path}/allOf/{i}")
            for k, v in sub.items():
                if k in _ANNOTATIONS or k in ("$defs", "definitions"):
                    continue
                if k not in out:
                    out[k] = v
                elif k == "properties":
                    props = dict(out[k])
                    for pk, pv in v.items():
                        if pk in props and props[pk] != pv:
                            props[pk] = {"allOf": [props[pk], pv]}
                        else:
                            props[pk] = pv
                    out[k] = props
                elif k == "required":
                    out[k] = list(dict.fromkeys(list(out[k]) + list(v)))
                elif k in ("minimum", "exclusiveMinimum", "minLength", "minItems"):
                    out[k] = max(out[k], v)
                elif k in ("maximum", "exclusiveMaximum", "maxLength", "maxItems"):
                    out[k] = min(out[k], v)
                elif k == "additionalProperties":
                    if out[k] is False or v is False:
                        out[k] = False
                    elif out[k] != v:
                        raise ValueError(f"'allOf' with differing 'additionalProperties' at {path} is not supported")
                elif out[k] != v:
                    raise ValueError(f"'allOf' with conflicting {k!r} at {path} is not supported")
        return out

    def string(self, s, name, path) -> str:
        fmt = s.get("format")
        pat = s.get("pattern")
        lo, hi = s.get("minLength", 0), s.get("maxLength")
        if not isinstance(lo, int) or lo < 0 or (hi is not None and (not isinstance(hi, int) or hi < lo)):
            raise ValueError(f"bad 'minLength'/'maxLength' at {path}")
        has_len = "minLength" in s or "maxLength" in s
        if fmt is not None and pat is None:
            body = _FORMATS.get(fmt) or _LOOSE_FORMATS.get(fmt)
            if body is None:
                log.warning("JSON schema: string format %r at %s is not known: any string (relaxed)", fmt, path)
            else:
                if fmt in _LOOSE_FORMATS:
                    log.warning("JSON schema: format %r at %s constrains the characters only (relaxed)", fmt, path)
                if has_len:
                    log.warning("JSON schema: lengths beside format %r at %s are not enforced (relaxed)", fmt, path)
                self.used_formats = True
                return self.add(name, f'"\\"" {body} "\\""')
        elif fmt is not None:
            log.warning("JSON schema: format %r beside a pattern at %s: the pattern constrains", fmt, path)
        if pat is not None:
            if has_len:
                exact = _with_lengths(pat, lo, hi)
                if exact is None:
                    log.warning("JSON schema: lengths beside pattern %r at %s are not enforced (relaxed)", pat, path)
                else:
                    pat = exact
            self.used_regex = True
            return self.add(name, f'"\\"" {regex_to_gbnf(pat)} "\\""')
        if lo == 0 and hi is None:
            return "string"
        self.used_regex = True
        rep = f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
        return self.add(name, f'"\\"" jchar-len{rep} "\\""')

    @staticmethod
    def bounds(s, path, integer: bool):
        """Integer bounds [lo, hi] implied by minimum/maximum/exclusive* (None: unbounded)."""
        lo = hi = None
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            v = s.get(k)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{k!r} at {path} must be a finite number (draft-4 boolean exclusive* is not supported)")
        if "minimum" in s:
            lo = math.ceil(s["minimum"])
        if "exclusiveMinimum" in s:
            e = math.floor(s["exclusiveMinimum"]) + 1
            lo = e if lo is None else max(lo, e)
        if "maximum" in s:
            hi = math.floor(s["maximum"])
        if "exclusiveMaximum" in s:
            e = math.ceil(s["exclusiveMaximum"]) - 1
            hi = e if hi is None else min(hi, e)
        return lo, hi

    def integer(self, s, name, path) -> str:
        lo, hi = self.bounds(s, path, True)
        if lo is None and hi is None:
            return self.add("integer", _int_range(None, None))
        return self.add(name, _int_range(lo, hi))

    def number(self, s, name, path) -> str:
        if not any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            return "number"
        lo, hi = self.bounds(s, path, False)
        if lo is not None and hi is not None and lo > hi:
            # no integer in range: fractions only (e.g. 0.2 .. 0.7) are not expressible exactly
            raise ValueError(f"number bounds at {path} contain no integer; such bounds are not supported")
        alts = [f"({_int_range(lo, hi)})"]
        # fractions: n.ddd for integer parts whose whole unit interval lies inside the bounds
        flo = None if "minimum" not in s and "exclusiveMinimum" not in s else s.get("minimum", s.get("exclusiveMinimum"))
        fhi = None if "maximum" not in s and "exclusiveMaximum" not in s else s.get("maximum", s.get("exclusiveMaximum"))
        if "minimum" in s and "exclusiveMinimum" in s:
            flo = max(s["minimum"], s["exclusiveMinimum"])
        if "maximum" in s and "exclusiveMaximum" in s:
            fhi = min(s["maximum"], s["exclusiveMaximum"])
        excl_lo = "exclusiveMinimum" in s and flo == s["exclusiveMinimum"]
        excl_hi = "exclusiveMaximum" in s and fhi == s["exclusiveMaximum"]
        # non-negative n: n.f in [n, n+1): needs n >= lo (> if exclusive) and n + 1 <= hi
        p_lo = 0 if flo is None else max(0, math.floor(flo) + 1 if excl_lo and flo == math.floor(flo) else math.ceil(flo))
        p_hi = None if fhi is None else math.ceil(fhi) - 1 if fhi != math.floor(fhi) else int(fhi) - 1
        if fhi is not None and fhi != math.floor(fhi):
            p_hi = math.floor(fhi) - 1  # n + 1 <= hi
        frac = '"." [0-9]{1,16}'
        if p_hi is None or p_lo <= p_hi:
            alts.append(f"({_nonneg_range(p_lo, p_hi)}) {frac}")
        # negative n >= 1: -n.f in (-(n+1), -n]: needs -n <= hi and -(n+1) >= lo
        n_lo = 1 if fhi is None else max(1, math.ceil(-fhi) if not excl_hi else math.floor(-fhi) + 1)
        n_hi = None if flo is None else math.floor(-flo) - 1
        if n_hi is None or n_lo <= n_hi:
            alts.append(f'"-" ({_nonneg_range(n_lo, n_hi)}) {frac}')
        # -0.f in (-1, 0]
        if (flo is None or flo <= -1) and (fhi is None or fhi > 0 or (fhi == 0 and not excl_hi)):
            alts.append(f'"-0" {frac}')
        return self.add(name, " | ".join(alts))

    def object(self, s, name, path) -> str:
        props = s.get("properties", {}) or {}
        if not isinstance(props, dict):
            raise ValueError(f"'properties' at {path} must be an object")
        required = s.get("required", [])
        if not isinstance(required, list):
            raise ValueError(f"'required' at {path} must be a list")
        for r in required:
            if r not in props:
                props = {**props, r: True}
        pprops = s.get("patternProperties") or {}
        if not isinstance(pprops, dict):
            raise ValueError(f"'patternProperties' at {path} must be an object")
        # with patternProperties, other keys only where additionalProperties says so: a key that
        # matches a pattern must not get any value through the catch-all
        extra = s.get("additionalProperties", None if props or pprops else True)
        kvs = []
        for k, sub in props.items():
            v = self.visit(sub, f"{name}-{k}", f"{path}/properties/{k}")
            kvs.append((f'{_json_lit(k)} ws ":" ws {v}', k in required))
        names = s.get("propertyNames")
        key = "string"
        if names not in (None, True) and names != {}:
            key = self.visit({"type": "string", **names} if isinstance(names, dict) else names, f"{name}-key",
                             f"{path}/propertyNames")
        extra_alts = []
        for i, (kp, sub) in enumerate(pprops.items()):
            self.used_regex = True
            kr = self.add(f"{name}-pkey{i}", f'"\\"" {regex_to_gbnf(kp)} "\\""')
            v = self.visit(sub, f"{name}-pval{i}", f"{path}/patternProperties/{kp}")
            extra_alts.append(f'{kr} ws ":" ws {v}')
        if extra not in (None, False):
            ev = "value" if extra is True else self.visit(extra, f"{name}-additional", f"{path}/additionalProperties")
            extra_alts.append(f'{key} ws ":" ws {ev}')
        extra_kv = self.add(f"{name}-kv", " | ".join(extra_alts)) if extra_alts else None
        n = len(kvs)
        # H_i: nothing written yet, at property i; T_i: something written, at property i
        tail_extra = f' ( "," ws {extra_kv} ws )*' if extra_kv else ""
        t_next = self.add(f"{name}-t{n}", tail_extra.strip() or '""') if n else None
        h_next = (self.add(f"{name}-h{n}", f'( {extra_kv} ws ( "," ws {extra_kv} ws )* )?') if extra_kv else '""') if n else None
        for i in range(n - 1, -1, -1):
            kv, req = kvs[i]
            t_body = f'"," ws {kv} ws {t_next}'
            h_body = f"{kv} ws {t_next}"
            if not req:
                t_body += f" | {t_next}"
                h_body += f" | {h_next}"
            t_next = self.add(f"{name}-t{i}", t_body)
            h_next = self.add(f"{name}-h{i}", h_body)
        if n:
            return self.add(name, f'"{{" ws {h_next} "}}"')
        if extra_kv:
            return self.add(name, f'"{{" ws ( {extra_kv} ws ( "," ws {extra_kv} ws )* )? "}}"')
        return self.add(name, '"{" ws "}"')

    def array(self, s, name, path) -> str:
        lo, hi = s.get("minItems", 0), s.get("maxItems")
        if not isinstance(lo, int) or lo < 0 or (hi is not None and (not isinstance(hi, int) or hi < lo)):
            raise ValueError(f"bad 'minItems'/'maxItems' at {path}")
        prefix = s.get("prefixItems")
        items = s.get("items", True)
        if isinstance(items, list):
            raise ValueError(f"array-form 'items' at {path} is not supported (use 'prefixItems')")
        if prefix is not None:
            if not isinstance(prefix, list):
                raise ValueError(f"'prefixItems' at {path} must be a list")
            elems = [self.visit(p, f"{name}-{i}", f"{path}/prefixItems/{i}") for i, p in enumerate(prefix)]
            if lo > len(elems) or (hi is not None and hi < len(elems)) or ("items" in s and s["items"] is not False):
                raise ValueError(f"'prefixItems' with 'items' or item counts at {path} is not supported")
            # a tuple: all prefix items in order (a shorter array would also be valid; we emit full tuples)
            body = ' "," ws '.join(f"{e} ws" for e in elems)
            return self.add(name, f'"[" ws {body} "]"' if elems else '"[" ws "]"')
        item = self.visit(items, f"{name}-item", f"{path}/items")
        if hi == 0:
            return self.add(name, '"[" ws "]"')
        more_lo = max(lo - 1, 0)
        more = f"{{{more_lo},}}" if hi is None else f"{{{more_lo},{hi - 1}}}"
        list_body = f'{item} ws ( "," ws {item} ws ){more}'
        if lo == 0:
            return self.add(name, f'"[" ws ( {list_body} )? "]"')
        return self.add(name, f'"[" ws {list_body} "]"')

    def gbnf(self, schema) -> str:
        top = self.visit(schema, "root-value", "#")
        lines = [f"root ::= {top}"]
        lines += [f"{k} ::= {v}" for k, v in self.rules.items()]
        text = "\n".join(lines) + "\n" + _JSON_RULES
        if self.used_formats:
            text += _FORMAT_RULES
        if self.used_regex:
            text += ('jchar ::= [^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})\n'
                     'jchar-nonl ::= [^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bft] | "u" [0-9a-fA-F]{4})\n'
                     # one code point per jchar-len (no \u escapes: a surrogate pair would count twice)
                     'jchar-len ::= [^"\\\\\\x00-\\x1F] | "\\\\" ["\\\\/bfnrt]\n')
        return text


def json_schema_to_gbnf(schema: Union[str, Dict[str, Any], bool]) -> str:
    """GBNF text for the JSON documents valid against schema (dict, bool or JSON text).
    Raises ValueError naming any keyword, format or combination it cannot enforce exactly."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise ValueError(f"the JSON schema is not valid JSON: {e}") from e
    return _Converter(schema).gbnf(schema)


class SchemaConverter:
    """llama-cpp-python's `llama_grammar.SchemaConverter` interface over json_schema_to_gbnf:
    visit(schema, name) takes the schema, format_grammar() returns its GBNF. prop_order, dotall
    and raw_pattern are accepted (properties keep the schema's order); allow_fetch must be
    False (no remote $ref)."""

    def __init__(self, *, prop_order=None, allow_fetch=False, dotall=False, raw_pattern=False):
        if allow_fetch:
            raise ValueError("SchemaConverter(allow_fetch=True): remote $ref are not fetched by llama_py")
        self._schema: Any = None

    def resolve_refs(self, schema: dict, url: str) -> dict:
        """The schema itself: only references into the same document are supported (resolved when converted)."""
        return schema

    def visit(self, schema, name) -> str:
        """Takes the schema to convert; returns the root rule's name."""
        self._schema = schema
        return "root"

    def format_grammar(self) -> str:
        """The GBNF of the visited schema (ValueError naming what cannot be expressed)."""
        return json_schema_to_gbnf(self._schema if self._schema is not None else True)


# ------------------------------------------------------------------------------------------
# tool calls (OpenAI `tools` / `tool_choice`)

def _tool_functions(tools: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for t in tools:
        if not isinstance(t, dict) or t.get("type", "function") != "function" or "function" not in t:
            raise ValueError(f"unsupported tool {t!r}: expected {{'type': 'function', 'function': {{...}}}}")
        f = t["function"]
        if "name" not in f:
            raise ValueError(f"tool without a name: {t!r}")
        out.append(f)
    return out


def tools_to_json_schema(tools: Sequence[Dict[str, Any]], tool_choice: Any = "required") -> Dict[str, Any]:
    """The schema of one tool call {"name": ..., "arguments": {...}}: any of the tools
    (tool_choice "required"/"auto"), or the one named by tool_choice={"type": "function",
    "function": {"name": ...}}; each tool's arguments follow its `parameters` schema."""
    funcs = _tool_functions(tools)
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        funcs = [f for f in funcs if f["name"] == name]
        if not funcs:
            raise ValueError(f"tool_choice names {name!r}, which is not among the tools")
    elif tool_choice not in ("required", "auto", None):
        raise ValueError(f"unsupported tool_choice {tool_choice!r}")
    if not funcs:
        raise ValueError("no tools given")
    alts = []
    for f in funcs:
        params = f.get("parameters") or {"type": "object", "properties": {}}
        alts.append({"type": "object", "properties": {"name": {"const": f["name"]}, "arguments": params},
                     "required": ["name", "arguments"], "additionalProperties": False})
    return alts[0] if len(alts) == 1 else {"anyOf": alts}


def tool_calls_grammar(tools: Sequence[Dict[str, Any]], tool_choice: Any = "required", parallel: bool = False) -> LlamaGrammar:
    """A grammar for one tool call (or, with parallel=True, a JSON array of one or more)."""
    schema = tools_to_json_schema(tools, tool_choice)
    if parallel:
        schema = {"type": "array", "items": schema, "minItems": 1}
    return LlamaGrammar.from_json_schema(schema, verbose=False)


def parse_tool_calls(text: str, call_id_prefix: str = "call_") -> List[Dict[str, Any]]:
    """OpenAI-style tool_calls entries from the text a tool_calls_grammar constrained."""
    data = json.loads(text)
    calls = data if isinstance(data, list) else [data]
    out = []
    for i, c in enumerate(calls):
        out.append({"id": f"{call_id_prefix}{i}", "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}})
    return out
