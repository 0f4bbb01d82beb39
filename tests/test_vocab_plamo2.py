"""The PLaMo-2 vocabulary type (tokenizer.ggml.model "plamo2"), llama.cpp's TEST type and the
NONE type ("none" / "no_vocab").

PLaMo-2: no PLaMo tokenizer can be fetched from PyPI, so the vocabulary is built here the way
llama.cpp's converter writes PLaMo's tokenizer.jsonl (pieces with literal spaces, float scores,
<0xXX> byte tokens of type BYTE, <|plamo:...|> control tokens) from the pieces and scores of a
real SentencePiece vocabulary (llama-spm from the llama-cpp-python sdist, ▁ turned into a
space). The reference below is the tokenizer's published rule written as plainly as possible:
the segmentation into vocabulary pieces (or single characters spelled as bytes, at a cost of
10^7 each) with the least total cost -round(score * 10^4), ties going to the longer first piece.
The candidates at a position are the pieces among the prefixes of its longest "known suffix"
(a piece's text or one of its suffixes), found from the next position's as the reference table
walk finds it; a piece scoring at most -2*10^7 is never used and one scoring exactly -10^7
stops the candidate list of its position and, met in that walk, ends it with no suffix. It works
on Python strings and sets, not on a trie or hash table, and recurses forward. (Checked once
against llama.cpp's llama-tokenize built from the sdist: 685 of 685 texts identical.)
"""
from __future__ import annotations

import functools
import random

import pytest

from resources import vocab_file
from test_tokenizer import Ours
from tokenizer_corpus import CORPUS

gguf = pytest.importorskip("gguf")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

UNKNOWN, INVALID = -10_000_000, -20_000_000
SPECIALS = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>", "<|plamo:op|>"]


def _plamo_vocab():
    """(tokens, scores, types) of a PLaMo-2-style vocabulary made from llama-spm's pieces."""
    r = gguf.GGUFReader(str(vocab_file("llama-spm")))
    f = r.fields
    toks = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8") for i in f["tokenizer.ggml.tokens"].data]
    scores = [float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    tokens, sc, ty = list(SPECIALS), [0.0] * len(SPECIALS), [2, 3, 3, 3, 3]
    seen = set(tokens)
    for t, s, k in zip(toks, scores, types):
        if k == 6:  # <0xXX>
            tokens.append(t), sc.append(0.0), ty.append(6)
        elif k == 1:
            t = t.replace("\u2581", " ")
            if t not in seen:
                seen.add(t)
                tokens.append(t), sc.append(s), ty.append(1)
    # pieces that exercise the sentinel rules: never used, and a search stopper
    tokens += ["xyzzy", "qqq"]
    sc += [-2500.0, -1000.0]
    ty += [1, 1]
    return tokens, sc, ty


def _write(path, tokens, scores, types, model="plamo2", arch="plamo2", extra=None):
    w = gguf.GGUFWriter(str(path), arch)
    w.add_string("tokenizer.ggml.model", model)
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_array("tokenizer.ggml.tokens", tokens)
    if scores is not None:
        w.add_key_value("tokenizer.ggml.scores", scores, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.FLOAT32)
    w.add_key_value("tokenizer.ggml.token_type", types, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.INT32)
    for k, v in (extra or {}).items():
        w.add_uint32(k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


class Reference:
    def __init__(self, tokens, scores, types):
        self.piece = {}
        self.byte = {}
        for i, (t, s, k) in enumerate(zip(tokens, scores, types)):
            if k == 6:
                self.byte[int(t[3:5], 16)] = i
            elif t:
                self.piece[t] = (i, round(s * 1e4))  # a repeated text keeps its last id
        self.known = set()
        for t in self.piece:
            self.known.update(t[k:] for k in range(len(t)))
        self.stopper = {t for t, (_, sc) in self.piece.items() if sc == UNKNOWN}

    def suffix_lengths(self, text: str):
        """Code-point length of the longest known suffix at each position, as the table walk finds it."""
        n = len(text)
        sl = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            new = None
            for m in range(sl[i + 1], 0, -1):
                p = text[i + 1:i + 1 + m]
                if p not in self.known:
                    continue
                if text[i] + p in self.known:
                    new = m + 1
                    break
                if p in self.stopper:
                    new = 0
                    break
            sl[i] = new if new is not None else (1 if text[i] in self.known else 0)
        return sl

    def encode(self, text: str):
        if text.startswith("\ufeff"):
            text = text[1:]
        n = len(text)
        sl = self.suffix_lengths(text)

        @functools.lru_cache(maxsize=None)
        def best(i):
            if i == n:
                return 0, ()
            cands = []  # longest piece first, then the character alone as bytes
            for j in range(i + sl[i], i, -1):
                hit = self.piece.get(text[i:j])
                if hit is not None:
                    cands.append((j, hit[0], hit[1]))
            cands.append((i + 1, None, UNKNOWN))
            choice = None
            for j, tid, score in cands:
                if score > INVALID:
                    cost = best(j)[0] - score
                    if choice is None or cost < choice[0]:
                        choice = (cost, j, tid)
                if score == UNKNOWN:
                    break
            cost, j, tid = choice
            ids = (tid,) if tid is not None else tuple(self.byte[b] for b in text[i].encode("utf-8"))
            return cost, ids + best(j)[1]

        import sys
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * n + 100))
        try:
            return list(best(0)[1])
        finally:
            sys.setrecursionlimit(old)


@pytest.fixture(scope="module")
def plamo(tmp_path_factory, lib_path):
    tokens, scores, types = _plamo_vocab()
    path = tmp_path_factory.mktemp("plamo2") / "plamo2.gguf"
    _write(path, tokens, scores, types, extra={"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
                                               "tokenizer.ggml.eot_token_id": 4})
    ours = Ours(path)
    yield ours, Reference(tokens, scores, types), tokens
    ours.close()


EXTRA = ["", " ", "  two  spaces ", "\ufeffBOM first", "a\ufeffBOM inside", "日本語のテキストです。", "emoji 😀🧪 here",
         "xyzzy never used", "qqq stops the search: aqqq qqqa", "tqqq sqqqs qqqqq", "<|plamo:bos|> literal control text",
         "tabs\tand\nnewlines\r\n", "ÀÉÎõü ß ﬁ", "12345 67890"]


def test_plamo2_matches_reference(plamo):
    ours, ref, _ = plamo
    texts = list(CORPUS) + EXTRA
    bad = [t for t in texts if ours.tokenize(t) != ref.encode(t)]
    assert not bad, f"{len(bad)} of {len(texts)} texts differ; first: {bad[:3]!r}"


def test_plamo2_random_text(plamo):
    ours, ref, _ = plamo

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
    def check(text):
        assert ours.tokenize(text) == ref.encode(text)

    check()


def test_plamo2_roundtrip_and_specials(plamo):
    from llama_py import _llama_vocab as V
    ours, _, tokens = plamo
    for t in list(CORPUS) + EXTRA:
        want = t[1:] if t.startswith("\ufeff") else t
        # a control token's text in plain text is matched like any piece (so read back with unparse_special)
        assert ours.detokenize(ours.tokenize(t), unparse_special=True) == want.encode("utf-8"), t
    assert V.llama_vocab_type(ours.vocab) == 6
    assert V.llama_vocab_bos(ours.vocab) == 1 and V.llama_vocab_eos(ours.vocab) == 2
    assert V.llama_vocab_is_eog(ours.vocab, 4)  # <|plamo:op|>, the converter's EOT
    assert ours.tokenize("<|plamo:eos|>", parse_special=True) == [2]
    # an unmatched character is its UTF-8 bytes as byte tokens, each reading back as the byte
    ids = ours.tokenize("\U0001F9EA")
    assert [tokens[i] for i in ids] == [f"<0x{b:02X}>" for b in "\U0001F9EA".encode("utf-8")]
    assert b"".join(ours.piece(i) for i in ids) == "\U0001F9EA".encode("utf-8")


def test_plamo2_invalid_utf8_bytes_fall_back(plamo):
    ours, _, tokens = plamo
    ids = ours.tokenize(b"ok\xff\xfeok")
    assert ours.detokenize(ids) == b"ok\xff\xfeok"
    assert "<0xFF>" in [tokens[i] for i in ids]


def test_plamo2_missing_byte_token_is_refused(tmp_path, lib_path):
    from llama_py import _llama_model as M
    tokens, scores, types = _plamo_vocab()
    i = tokens.index("<0x41>")
    types[i] = 1  # no longer a BYTE token
    path = tmp_path / "bad.gguf"
    _write(path, tokens, scores, types)
    p = M.llama_model_default_params()
    p.vocab_only = True
    assert not M.llama_model_load_from_file(str(path).encode(), p)


def test_test_vocab_hashes_chunks(tmp_path, lib_path):
    """llama.cpp's TEST type: each 5-byte chunk is h = h*31 + byte (64-bit) modulo the vocabulary
    size; a token's piece is its id in hex."""
    n_vocab = 1009
    tokens = [f"t{i}" for i in range(n_vocab)] + ["<ctl>"]
    path = tmp_path / "test.gguf"
    _write(path, tokens, None, [1] * n_vocab + [3], model="test", arch="llama")
    ours = Ours(path)
    try:
        from llama_py import _llama_vocab as V
        assert V.llama_vocab_type(ours.vocab) == 7
        n = len(tokens)
        for text in ["hello world", "", "abcde", "ünïcödé 😀", "x" * 23]:
            data = text.encode("utf-8")
            want = []
            for k in range(0, len(data), 5):
                h = 0
                for b in data[k:k + 5]:
                    h = (h * 31 + b) % (1 << 64)
                want.append(h % n)
            assert ours.tokenize(text) == want, text
        assert ours.tokenize("ab<ctl>cd", parse_special=True) == ours.tokenize("ab") + [n_vocab] + ours.tokenize("cd")
        assert ours.piece(255) == b"ff" and ours.piece(1000) == b"3e8"
        rnd = random.Random(1)
        ids = [rnd.randrange(n_vocab) for _ in range(50)]
        assert ours.detokenize(ids) == "".join(f"{i:x}" for i in ids).encode()
    finally:
        ours.close()


def test_none_vocab_has_placeholders_and_refuses_tokenizing(tmp_path, lib_path):
    from llama_py import _llama_vocab as V
    path = tmp_path / "none.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("tokenizer.ggml.model", "none")
    w.add_uint32("llama.vocab_size", 300)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    ours = Ours(path)
    try:
        assert V.llama_vocab_type(ours.vocab) == 0
        assert V.llama_vocab_n_tokens(ours.vocab) == 300
        assert V.llama_vocab_bos(ours.vocab) == -1 and V.llama_vocab_eos(ours.vocab) == -1
        buf = (V.llama_token * 8)()
        assert V.llama_tokenize(ours.vocab, b"hello", 5, buf, 8, True, False) == 0
        assert ours.detokenize([1, 2, 3]) == b""
        from llama_py._lib import LlamaError
        from llama_py._runtime.text import tokenize
        with pytest.raises(LlamaError, match="no vocabulary"):
            tokenize(ours.vocab, b"hello")
    finally:
        ours.close()
    # without <arch>.vocab_size there is nothing to size the logits by: refused
    bad = tmp_path / "none-bad.gguf"
    w = gguf.GGUFWriter(str(bad), "llama")
    w.add_string("tokenizer.ggml.model", "no_vocab")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    from llama_py import _llama_model as M
    p = M.llama_model_default_params()
    p.vocab_only = True
    assert not M.llama_model_load_from_file(str(bad).encode(), p)
