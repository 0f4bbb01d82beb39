"""Test-side references for the grammar engine, independent of src/grammar*.c:

- published_grammars(): llama.cpp's grammars/*.gbnf, taken at test time from the
  llama-cpp-python 0.3.36 sdist (`pip download --no-deps --no-binary :all:`), cached in the
  user cache (never committed); skips naming the resource when it cannot be had.
- parse_gbnf(): a GBNF parser written here from grammars/README.md.
- Earley: a character-level Earley recognizer over that parse (prefix viability and complete
  membership): a different algorithm from the engine's stack sets.
- to_lark(): the same grammar written as a lark grammar, parsed by lark's Earley parser.
"""
from __future__ import annotations

import ctypes
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

SDIST = "llama-cpp-python==0.3.36"
GRAMMAR_NAMES = ["json", "json_arr", "arithmetic", "list", "chess", "c", "english", "japanese"]


def _cache() -> Path:
    from llama_py.pull import cache_dir
    return cache_dir() / "llama-cpp-python-0.3.36-grammars"


def published_grammars() -> Dict[str, str]:
    """name -> GBNF text of llama.cpp's published grammars (from the sdist, cached)."""
    d = _cache()
    if not all((d / f"{n}.gbnf").is_file() for n in GRAMMAR_NAMES):
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d.parent) as tmp:
            base = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    "--disable-pip-version-check", "-d", tmp, SDIST]
            ok = False
            # without build isolation pip needs the sdist's build backend installed; with it, pip
            # installs the backend first (slow, but works on a bare machine)
            for extra in (["--no-build-isolation"], []):
                try:
                    subprocess.run(base[:4] + extra + base[4:], check=True, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
                    ok = True
                    break
                except (OSError, subprocess.SubprocessError):
                    continue
            tars = list(Path(tmp).glob("llama_cpp_python-0.3.36*.tar.gz"))
            if not ok or not tars:
                pytest.skip(f"llama.cpp's grammars unavailable: could not download the {SDIST} sdist with pip")
            with tarfile.open(tars[0]) as tf:
                for m in tf.getmembers():
                    p = Path(m.name)
                    if p.parent.name == "grammars" and p.suffix == ".gbnf" and "vendor" in p.parts:
                        data = tf.extractfile(m).read()
                        (d / p.name).write_bytes(data)
    return {n: (d / f"{n}.gbnf").read_text(encoding="utf-8") for n in GRAMMAR_NAMES}


# ------------------------------------------------------------------------------------------
# GBNF -> AST. Nodes: ("alt", [seq]), ("seq", [node]), ("chars", negated, [(lo, hi)]),
# ("ref", name), ("rep", node, min, max|None), ("tok", id|text, negated)

class GbnfError(ValueError):
    pass


def parse_gbnf(text: str) -> Dict[str, tuple]:
    i = 0
    n = len(text)
    rules: Dict[str, tuple] = {}

    def space(nl: bool):
        nonlocal i
        while i < n:
            c = text[i]
            if c in " \t" or (nl and c in "\r\n"):
                i += 1
            elif c == "#":
                while i < n and text[i] != "\n":
                    i += 1
            else:
                break

    def name():
        nonlocal i
        s = i
        while i < n and (text[i].isalnum() or text[i] in "-_"):
            i += 1
        if s == i:
            raise GbnfError(f"name expected at {i}")
        return text[s:i]

    def char():
        nonlocal i
        c = text[i]
        if c != "\\":
            i += 1
            return ord(c)
        e = text[i + 1]
        hexn = {"x": 2, "u": 4, "U": 8}.get(e)
        if hexn:
            v = int(text[i + 2:i + 2 + hexn], 16)
            i += 2 + hexn
            return v
        i += 2
        return ord({"n": "\n", "r": "\r", "t": "\t"}.get(e, e))

    def alternates(nested: bool):
        nonlocal i
        alts = [sequence(nested)]
        while True:
            if not nested:
                save = i
                space(True)
                if i >= n or text[i] != "|":
                    i = save
            if i < n and text[i] == "|":
                i += 1
                space(True)
                alts.append(sequence(nested))
            else:
                break
        return ("alt", alts)

    def sequence(nested: bool):
        nonlocal i
        items: List[tuple] = []
        while i < n:
            c = text[i]
            if c == '"':
                i += 1
                chars = []
                while text[i] != '"':
                    chars.append(char())
                i += 1
                items.append(("seq", [("chars", False, [(x, x)]) for x in chars]))
            elif c == "[":
                i += 1
                neg = text[i] == "^"
                if neg:
                    i += 1
                ranges = []
                while text[i] != "]":
                    lo = char()
                    hi = lo
                    if text[i] == "-" and text[i + 1] != "]":
                        i += 1
                        hi = char()
                    ranges.append((lo, hi))
                i += 1
                items.append(("chars", neg, ranges))
            elif c == ".":
                i += 1
                items.append(("chars", True, []))
            elif c == "(":
                i += 1
                space(True)
                items.append(alternates(True))
                assert text[i] == ")"
                i += 1
            elif c == "<" or (c == "!" and text[i + 1] == "<"):
                neg = c == "!"
                i += 1 + neg
                j = text.index(">", i)
                body = text[i:j]
                i = j + 1
                items.append(("tok", int(body[1:-1]) if body.startswith("[") else "<" + body + ">", neg))
            elif c.isalnum() or c in "-_":
                items.append(("ref", name()))
            elif c in "*+?":
                i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                items[-1] = ("rep", items[-1], lo, hi)
            elif c == "{":
                j = text.index("}", i)
                body = text[i + 1:j].replace(" ", "")
                i = j + 1
                if "," in body:
                    a, b = body.split(",")
                    lo, hi = int(a or 0), (int(b) if b else None)
                else:
                    lo = hi = int(body)
                items[-1] = ("rep", items[-1], lo, hi)
            else:
                break
            space(nested)
        return ("seq", items)

    space(True)
    while i < n:
        r = name()
        space(False)
        assert text.startswith("::=", i), f"::= expected at {i}"
        i += 3
        space(True)
        rules[r] = alternates(False)
        space(True)
    return rules


# ------------------------------------------------------------------------------------------
# Earley recognizer (characters as code points)

class Earley:
    """CFG from the AST: nonterminals are ints, terminals are ("chars", neg, ranges) tuples."""

    def __init__(self, rules: Dict[str, tuple], root: str = "root"):
        self.prods: List[Tuple[int, tuple]] = []   # (lhs, rhs symbols)
        self.by_lhs: Dict[int, List[int]] = {}
        self.nt_of: Dict[str, int] = {}
        self.n_nt = 0
        for r in rules:
            self.nt_of[r] = self._new()
        for r, body in rules.items():
            self._define(self.nt_of[r], body)
        self.start = self._new()
        self._prod(self.start, (self.nt_of[root],))
        self._nullable()

    def _new(self) -> int:
        self.n_nt += 1
        return self.n_nt - 1

    def _prod(self, lhs: int, rhs: tuple):
        self.by_lhs.setdefault(lhs, []).append(len(self.prods))
        self.prods.append((lhs, rhs))

    def _sym(self, node) -> object:
        k = node[0]
        if k == "chars":
            return ("chars", node[1], tuple(node[2]))
        if k == "ref":
            return self.nt_of[node[1]]
        if k == "tok":
            raise NotImplementedError("token references have no text")
        nt = self._new()
        self._define(nt, node)
        return nt

    def _define(self, nt: int, node):
        k = node[0]
        if k == "alt":
            for s in node[1]:
                self._prod(nt, tuple(self._sym(x) for x in s[1]))
        elif k == "seq":
            self._prod(nt, tuple(self._sym(x) for x in node[1]))
        elif k == "rep":
            _, x, lo, hi = node
            xs = self._sym(x)
            if hi is None:
                star = self._new()
                self._prod(star, ())
                self._prod(star, (xs, star))
                self._prod(nt, tuple([xs] * lo) + (star,))
            else:
                for c in range(lo, hi + 1):
                    self._prod(nt, tuple([xs] * c))
        else:
            self._prod(nt, (self._sym(node),))

    def _nullable(self):
        self.null = set()
        changed = True
        while changed:
            changed = False
            for lhs, rhs in self.prods:
                if lhs not in self.null and all(isinstance(s, int) and s in self.null for s in rhs):
                    self.null.add(lhs)
                    changed = True

    @staticmethod
    def match(term, cp: int) -> bool:
        inside = any(lo <= cp <= hi for lo, hi in term[2])
        return inside != term[1]

    def closure(self, items: set, sets: List[set]) -> set:
        """Predict and complete within the newest set (items: (prod, dot, origin))."""
        agenda = list(items)
        k = len(sets)  # index this set will have
        while agenda:
            p, d, o = agenda.pop()
            lhs, rhs = self.prods[p]
            if d == len(rhs):
                src = items if o == k else sets[o]
                for (p2, d2, o2) in list(src):
                    r2 = self.prods[p2][1]
                    if d2 < len(r2) and r2[d2] == lhs:
                        it = (p2, d2 + 1, o2)
                        if it not in items:
                            items.add(it)
                            agenda.append(it)
            else:
                s = rhs[d]
                if isinstance(s, int):
                    for q in self.by_lhs.get(s, []):
                        it = (q, 0, k)
                        if it not in items:
                            items.add(it)
                            agenda.append(it)
                    if s in self.null:
                        it = (p, d + 1, o)
                        if it not in items:
                            items.add(it)
                            agenda.append(it)
        return items

    def initial(self) -> List[set]:
        sets: List[set] = []
        sets.append(self.closure({(q, 0, 0) for q in self.by_lhs[self.start]}, sets))
        return sets

    def step(self, sets: List[set], cp: int) -> Optional[List[set]]:
        """The chart after one more code point, or None if no parse continues."""
        nxt = set()
        for (p, d, o) in sets[-1]:
            rhs = self.prods[p][1]
            if d < len(rhs) and not isinstance(rhs[d], int) and self.match(rhs[d], cp):
                nxt.add((p, d + 1, o))
        if not nxt:
            return None
        out = sets + [None]
        out[-1] = self.closure(nxt, sets)
        return out

    def accepts(self, sets: List[set]) -> bool:
        return any(p in self.by_lhs[self.start] and d == len(self.prods[p][1]) and o == 0 for (p, d, o) in sets[-1])

    def terminals(self, sets: List[set]):
        for (p, d, o) in sets[-1]:
            rhs = self.prods[p][1]
            if d < len(rhs) and not isinstance(rhs[d], int):
                yield rhs[d]

    def run(self, text: str) -> Optional[List[set]]:
        sets = self.initial()
        for ch in text:
            sets = self.step(sets, ord(ch))
            if sets is None:
                return None
        return sets


def partial_utf8_ok(ear: Earley, sets, tail: bytes) -> bool:
    """Whether a trailing incomplete UTF-8 sequence can still become an allowed code point."""
    b0 = tail[0]
    need = 2 if b0 >> 5 == 6 else 3 if b0 >> 4 == 14 else 4 if b0 >> 3 == 30 else 0
    if not need or len(tail) >= need:
        return False
    # all code points whose encoding starts with tail: try both ends of the range and terminals' ranges
    lo_b = tail + b"\x80" * (need - len(tail))
    hi_b = tail + b"\xbf" * (need - len(tail))
    try:
        lo, hi = ord(lo_b.decode("utf-8")), ord(hi_b.decode("utf-8"))
    except UnicodeDecodeError:
        # the lower end may be overlong / surrogate: scan continuation bytes for valid ones
        cps = []
        for x in range(0x80, 0xC0):
            try:
                cps.append(ord((tail + bytes([x]) + b"\x80" * (need - len(tail) - 1)).decode("utf-8")))
            except UnicodeDecodeError:
                pass
        if not cps:
            return False
        lo = min(cps)
        hi = None
        for x in range(0xBF, 0x7F, -1):
            try:
                hi = ord((tail + bytes([x]) + b"\xbf" * (need - len(tail) - 1)).decode("utf-8"))
                break
            except UnicodeDecodeError:
                pass
        if hi is None:
            return False
    for term in ear.terminals(sets):
        _, neg, ranges = term
        if not neg:
            if any(a <= hi and b >= lo for a, b in ranges):
                return True
        else:
            if not any(a <= lo and b >= hi for a, b in ranges):
                return True
    return False


# ------------------------------------------------------------------------------------------
# AST -> lark grammar (lark's own Earley parser then judges complete outputs)

def _lark_char_regex(neg: bool, ranges) -> str:
    def esc(cp):
        if cp < 0x80:
            ch = chr(cp)
            if ch.isalnum():
                return ch
            if 0x20 < cp < 0x7F:
                return "\\" + ch
            return {10: "\\n", 9: "\\t", 13: "\\r"}.get(cp, f"\\x{cp:02x}")
        return f"\\U{cp:08x}" if cp > 0xFFFF else f"\\u{cp:04x}"
    if not ranges:
        return "/[\\s\\S]/" if neg else "/(?!)/"
    body = "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges)
    return f"/[{'^' if neg else ''}{body}]/"


def to_lark(rules: Dict[str, tuple]) -> str:
    names = {r: "r_" + r.replace("-", "_").lower() for r in rules}

    def ex(node) -> str:
        """lark text for node; "" when it matches only the empty string (lark has no empty terminal)."""
        k = node[0]
        if k == "alt":
            alts = [ex(s) for s in node[1]]
            full = [a for a in alts if a]
            if not full:
                return ""
            body = "(" + " | ".join(full) + ")"
            return f"[{body}]" if len(full) < len(alts) else body
        if k == "seq":
            return " ".join(x for x in (ex(y) for y in node[1]) if x)
        if k == "chars":
            return _lark_char_regex(node[1], node[2])
        if k == "ref":
            return names[node[1]]
        if k == "rep":
            _, x, lo, hi = node
            inner = ex(x)
            if not inner or hi == 0:
                return ""
            if hi is None:
                if lo == 0:
                    return f"({inner})*"
                if lo == 1:
                    return f"({inner})+"
                return f"({inner}) ~ {lo} ({inner})*"
            if lo == hi:
                return f"({inner}) ~ {lo}"
            if lo == 0:
                return f"[({inner}) ~ 1..{hi}]" if hi > 1 else f"[{inner}]"
            return f"({inner}) ~ {lo}..{hi}"
        raise NotImplementedError(k)

    lines = []
    for r, body in rules.items():
        e = ex(body)
        lines.append(f"{names[r]}: {e}" if e else f"{names[r]}:")
    lines.append(f"start: {names['root']}")
    return "\n".join(lines) + "\n"


def lark_parser(gbnf: str):
    lark = pytest.importorskip("lark", reason="lark (the independent parser for grammar outputs) is not installed")
    return lark.Lark(to_lark(parse_gbnf(gbnf)), start="start", parser="earley", lexer="dynamic")


# ------------------------------------------------------------------------------------------
# generation with the low-level API

def generate(model, ctx, prompt: str, sampler, n_max: int = 64) -> Tuple[str, bool]:
    """Greedy-or-sampled generation through `sampler` (a chain); returns (text, ended_with_eog)."""
    import llama_py.llama_cpp as L
    L.llama_memory_clear(L.llama_get_memory(ctx.ptr), True)
    data = prompt.encode()
    buf = (L.llama_token * (len(data) + 8))()
    n = L.llama_tokenize(model.vocab, data, len(data), buf, len(buf), True, True)
    toks = list(buf[:n])
    arr = (L.llama_token * len(toks))(*toks)
    assert L.llama_decode(ctx.ptr, L.llama_batch_get_one(arr, len(toks))) == 0
    out = b""
    piece = ctypes.create_string_buffer(256)
    for _ in range(n_max):
        t = L.llama_sampler_sample(sampler, ctx.ptr, -1)
        if L.llama_vocab_is_eog(model.vocab, t):
            return out.decode("utf-8"), True  # a finished output is whole UTF-8, or this raises
        k = L.llama_token_to_piece(model.vocab, t, piece, 256, 0, False)
        out += piece.raw[:k]
        one = (L.llama_token * 1)(t)
        assert L.llama_decode(ctx.ptr, L.llama_batch_get_one(one, 1)) == 0
    # cut at the budget: the last token may end inside a character; drop that partial tail only
    for cut in range(len(out), max(len(out) - 4, -1), -1):
        try:
            return out[:cut].decode("utf-8"), False
        except UnicodeDecodeError:
            continue
    raise AssertionError(f"invalid UTF-8 in the output: {out!r}")


def chain_with(grammar_sampler, seed: int, temp: float = 0.8):
    import llama_py.llama_cpp as L
    ch = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
    L.llama_sampler_chain_add(ch, grammar_sampler)
    L.llama_sampler_chain_add(ch, L.llama_sampler_init_top_k(40))
    L.llama_sampler_chain_add(ch, L.llama_sampler_init_temp(temp))
    L.llama_sampler_chain_add(ch, L.llama_sampler_init_dist(seed))
    return ch
