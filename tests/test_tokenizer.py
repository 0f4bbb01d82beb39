"""Tokenizers against independent references, over the real vocabularies.

SPM vocabularies (llama-spm, phi-3) are compared with `sentencepiece` running a ModelProto built
from the GGUF's pieces, scores and types; byte-level BPE vocabularies (gpt-2, llama-bpe, qwen2,
SmolLM2) with a Hugging Face `tokenizers` Tokenizer built from the GGUF's vocab, merges and the
pre type's regexes. The GGUF is read for the references by the `gguf` package, never by us.
Our side loads each vocabulary through llama_model_load_from_file(vocab_only=True).
"""
from __future__ import annotations

import ctypes
import functools
import random
import re
from pathlib import Path

import pytest

from llama_py._capi import model as M
from llama_py._capi import vocab as V

from resources import require_or_skip
from tokenizer_corpus import CORPUS, HARD, SPECIAL_CORPUS

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

gguf = pytest.importorskip("gguf")

SPM_VOCABS = ["llama-spm", "phi-3"]
BPE_VOCABS = ["gpt-2", "llama-bpe", "qwen2", "smollm2"]
ALL_VOCABS = SPM_VOCABS + BPE_VOCABS

# Pre-tokenizer regexes (TOKENIZER-FACTS), as the reference applies them, in order.
GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3_RE = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
             r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = LLAMA3_RE.replace(r"\p{N}{1,3}", r"\p{N}")
PRE_REGEXES = {
    "gpt-2": [GPT2_RE],
    "llama-bpe": [LLAMA3_RE],
    "qwen2": [QWEN2_RE],
    "smollm": [r"\p{N}", GPT2_RE],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2_RE, r"\p{N}+", r"[0-9][0-9][0-9]"],
}
# Vocabularies whose detokenizer applies HF's clean_up_tokenization (clean_spaces).
CLEAN_SPACES = {"llama-spm": True, "phi-3": True, "gpt-2": True, "llama-bpe": True, "qwen2": False, "smollm2": False}

TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER, TT_UNUSED, TT_BYTE = 1, 2, 3, 4, 5, 6


def clean_up_tokenization(s: str) -> str:
    """Hugging Face's clean_up_tokenization."""
    return (s.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",").replace(" ' ", "'")
            .replace(" n't", "n't").replace(" 'm", "'m").replace(" 's", "'s").replace(" 've", "'ve")
            .replace(" 're", "'re"))


# ---------------------------------------------------------------------------------------------
# the GGUF, read by the gguf package

def read_gguf_metadata(path: Path) -> dict:
    """The key/value section of a GGUF file (v2/v3, little-endian), parsed here in plain Python
    (the gguf package's reader takes tens of seconds on a 150k-token vocabulary)."""
    import struct
    data = path.read_bytes() if path.stat().st_size < (64 << 20) else _read_prefix(path, 64 << 20)
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n]
        pos += n
        return s.decode("utf-8")

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        nonlocal pos
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            if et == 8:
                return [string() for _ in range(n)]
            fmt = f"<{n}{scalar[et]}"
            out = list(struct.unpack_from(fmt, data, pos))
            pos += struct.calcsize(fmt)
            return out
        return take(scalar[t])

    assert data[:4] == b"GGUF", path
    pos = 4
    version, _n_tensors, n_kv = take("I"), take("Q"), take("Q")
    assert version in (2, 3)
    kv = {}
    for _ in range(n_kv):
        key = string()
        kv[key] = value(take("I"))
    return kv


def _read_prefix(path: Path, n: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


class GGUFVocab:
    def __init__(self, path: Path):
        kv = read_gguf_metadata(path)
        self.path = path
        self.model = kv.get("tokenizer.ggml.model")
        self.pre = kv.get("tokenizer.ggml.pre")
        self.tokens = kv["tokenizer.ggml.tokens"]
        n = len(self.tokens)
        self.scores = kv.get("tokenizer.ggml.scores", [0.0] * n)
        self.types = kv.get("tokenizer.ggml.token_type", [TT_NORMAL] * n)
        self.merges = kv.get("tokenizer.ggml.merges", [])
        self.bos = kv.get("tokenizer.ggml.bos_token_id", -1)
        self.eos = kv.get("tokenizer.ggml.eos_token_id", -1)
        self.unk = kv.get("tokenizer.ggml.unknown_token_id", -1)
        self.add_bos = kv.get("tokenizer.ggml.add_bos_token")
        self.add_eos = kv.get("tokenizer.ggml.add_eos_token")
        # BPE: bytes whose alphabet character is not a token are dropped by the model (as by the
        # reference), so text holding them cannot come back.
        self.missing_bytes = set()
        if self.model == "gpt2":
            have = set(self.tokens)
            self.missing_bytes = {b for b in range(256) if byte_char(b) not in have}

    def ids_of_type(self, *types):
        return [i for i, t in enumerate(self.types) if t in types]

    def representable(self, data: bytes) -> bool:
        return not self.missing_bytes or not (set(data) & self.missing_bytes)


_NON_PRINTABLE = [b for b in range(256) if not (0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF)]


def byte_char(b: int) -> str:
    """GPT-2's byte-level alphabet."""
    return chr(b) if b not in _NON_PRINTABLE else chr(0x100 + _NON_PRINTABLE.index(b))


# ---------------------------------------------------------------------------------------------
# references

def build_sentencepiece(gv: GGUFVocab):
    """A sentencepiece BPE model with byte fallback over the GGUF's pieces (TOKENIZER-FACTS)."""
    spm = pytest.importorskip("sentencepiece")
    from sentencepiece import sentencepiece_model_pb2 as pb
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.vocab_size = len(gv.tokens)
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.unk_id = gv.unk if gv.unk >= 0 else 0
    m.trainer_spec.bos_id = gv.bos
    m.trainer_spec.eos_id = gv.eos
    m.trainer_spec.pad_id = -1
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = True
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    unk = m.trainer_spec.unk_id
    for i, (text, score, typ) in enumerate(zip(gv.tokens, gv.scores, gv.types)):
        p = m.pieces.add()
        p.piece = text
        p.score = score
        # sentencepiece wants exactly one unknown piece: the unk id; other "unknown" tokens (phi-3's
        # padding) are never produced from text, as control pieces are not.
        if i == unk:
            p.type = pb.ModelProto.SentencePiece.UNKNOWN
        elif typ == TT_UNKNOWN:
            p.type = pb.ModelProto.SentencePiece.CONTROL
        else:
            p.type = typ
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(m.SerializeToString())
    return sp


def build_hf(gv: GGUFVocab, pre: str, specials: bool):
    """HF tokenizers Tokenizer over the GGUF's vocab and merges (TOKENIZER-FACTS). User-defined
    tokens are added tokens (always split off); with specials, control and unknown ones too."""
    pytest.importorskip("tokenizers")
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    vocab = {t: i for i, t in enumerate(gv.tokens)}
    merges = [tuple(m.split(" ", 1)) for m in gv.merges]
    bpe = models.BPE(vocab=vocab, merges=merges, ignore_merges=(pre == "llama-bpe"))
    tok = Tokenizer(bpe)
    steps = [pre_tokenizers.Split(Regex(rx), behavior="isolated") for rx in PRE_REGEXES[pre]]
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tok.decoder = decoders.ByteLevel()
    user = [gv.tokens[i] for i in gv.ids_of_type(TT_USER)]
    if user:
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in user])
    if specials:
        ctrl = [gv.tokens[i] for i in gv.ids_of_type(TT_CONTROL, TT_UNKNOWN) if gv.tokens[i]]
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ctrl])
    return tok


# ---------------------------------------------------------------------------------------------
# our side

class Ours:
    def __init__(self, path: Path):
        p = M.llama_model_default_params()
        p.vocab_only = True
        self.model = M.llama_model_load_from_file(str(path).encode(), p)
        assert self.model, f"vocab_only load of {path} failed"
        self.vocab = M.llama_model_get_vocab(self.model)
        assert self.vocab

    def close(self):
        if self.model:
            M.llama_model_free(self.model)
            self.model = None

    def tokenize(self, text, add_special=False, parse_special=False, vocab=None):
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        v = vocab or self.vocab
        n = V.llama_tokenize(v, data, len(data), None, 0, add_special, parse_special)
        if n <= 0:
            n = -n
        buf = (V.llama_token * max(n, 1))()
        got = V.llama_tokenize(v, data, len(data), buf, n, add_special, parse_special)
        assert got == n
        return list(buf[:n])

    def detokenize(self, ids, remove_special=False, unparse_special=False) -> bytes:
        arr = (V.llama_token * max(len(ids), 1))(*ids)
        n = V.llama_detokenize(self.vocab, arr, len(ids), None, 0, remove_special, unparse_special)
        if n <= 0:
            n = -n
        buf = ctypes.create_string_buffer(n + 1)
        got = V.llama_detokenize(self.vocab, arr, len(ids), buf, n, remove_special, unparse_special)
        assert got == n
        return buf.raw[:n]

    def piece(self, tok, lstrip=0, special=False) -> bytes:
        n = V.llama_token_to_piece(self.vocab, tok, None, 0, lstrip, special)
        if n <= 0:
            n = -n
        buf = ctypes.create_string_buffer(n + 1)
        got = V.llama_token_to_piece(self.vocab, tok, buf, n, lstrip, special)
        assert got == n
        return buf.raw[:n]


@functools.lru_cache(maxsize=None)
def _gguf_vocab(path: str) -> GGUFVocab:
    return GGUFVocab(Path(path))


@pytest.fixture(scope="module")
def load(vocab_dir, request):
    """load(name) -> (GGUFVocab, Ours), cached for the module."""
    cache = {}

    def get(name):
        if name not in cache:
            if name == "smollm2":
                path = request.getfixturevalue("smollm2_path")
            else:
                path = vocab_dir / f"{name}.gguf"
                if not path.exists():
                    require_or_skip(f"vocabulary {path} not found")
            cache[name] = (_gguf_vocab(str(path)), Ours(path))
        return cache[name]

    yield get
    for _, ours in cache.values():
        ours.close()


@functools.lru_cache(maxsize=None)
def _reference(path: str, specials: bool):
    gv = _gguf_vocab(path)
    if gv.model == "llama":
        return build_sentencepiece(gv)
    pre = "llama-bpe" if gv.pre == "llama-bpe" else gv.pre
    return build_hf(gv, pre, specials)


def reference(gv: GGUFVocab, specials: bool = False):
    return _reference(str(gv.path), specials)


def ref_encode(gv, ref, text):
    if gv.model == "llama":
        return ref.encode(text)
    return ref.encode(text, add_special_tokens=False).ids


def ref_decode(gv, ref, ids) -> str:
    if gv.model == "llama":
        return ref.decode(ids)
    return ref.decode(ids, skip_special_tokens=False)


def show(gv, ids):
    return [gv.tokens[i] if 0 <= i < len(gv.tokens) else i for i in ids]


# ---------------------------------------------------------------------------------------------
# oracle comparisons

@pytest.mark.parametrize("name", ALL_VOCABS)
def test_matches_reference_tokenizer(load, name):
    gv, ours = load(name)
    ref = reference(gv)
    bad = []
    for text in CORPUS:
        want = ref_encode(gv, ref, text)
        got = ours.tokenize(text)
        if got != want:
            bad.append((text, show(gv, got), show(gv, want)))
    assert not bad, f"{len(bad)} of {len(CORPUS)} differ; first: {bad[:3]}"


@pytest.mark.parametrize("name", BPE_VOCABS)
def test_parse_special_matches_hf(load, name):
    gv, ours = load(name)
    ref = reference(gv, specials=True)
    bad = []
    for text in SPECIAL_CORPUS + HARD:
        want = ref_encode(gv, ref, text)
        got = ours.tokenize(text, parse_special=True)
        if got != want:
            bad.append((text, show(gv, got), show(gv, want)))
    assert not bad, f"{len(bad)} differ; first: {bad[:3]}"


def _split_controls(text: str, controls):
    """Leftmost-longest split of text at the control-token texts: [(is_token, str), ...]."""
    if not controls:
        return [(False, text)]
    rx = re.compile("|".join(re.escape(c) for c in sorted(controls, key=len, reverse=True)))
    out, pos = [], 0
    for m in rx.finditer(text):
        if m.start() > pos:
            out.append((False, text[pos:m.start()]))
        out.append((True, m.group()))
        pos = m.end()
    if pos < len(text):
        out.append((False, text[pos:]))
    return out


@pytest.mark.parametrize("name", SPM_VOCABS)
def test_spm_parse_special_segments(load, name):
    """SPM with parse_special: control tokens split the text, and each stretch between them is
    encoded as sentencepiece encodes a text of its own (with its ▁ prefix)."""
    gv, ours = load(name)
    ref = reference(gv)
    controls = {gv.tokens[i]: i for i in gv.ids_of_type(TT_CONTROL, TT_UNKNOWN)}
    for text in SPECIAL_CORPUS:
        want = []
        for is_tok, part in _split_controls(text, controls):
            want += [controls[part]] if is_tok else ref.encode(part)
        assert ours.tokenize(text, parse_special=True) == want, text


@pytest.mark.parametrize("name", ALL_VOCABS)
def test_detokenize_matches_reference(load, name):
    gv, ours = load(name)
    ref = reference(gv)
    for text in CORPUS:
        ids = ours.tokenize(text)
        want = ref_decode(gv, ref, ids)
        if CLEAN_SPACES[name]:
            want = clean_up_tokenization(want)
        assert ours.detokenize(ids).decode("utf-8") == want, text


# ---------------------------------------------------------------------------------------------
# round trips

def _roundtrip_expect(name, text):
    return clean_up_tokenization(text) if CLEAN_SPACES[name] else text


@pytest.mark.parametrize("name", ALL_VOCABS)
def test_roundtrip_corpus(load, name):
    gv, ours = load(name)
    for text in CORPUS:
        if gv.model == "llama" and "\u2581" in text:
            continue  # a literal ▁ reads back as a space, as in sentencepiece
        if not gv.representable(text.encode("utf-8")):
            continue  # checked by test_roundtrip_invalid_utf8_and_nul
        assert ours.detokenize(ours.tokenize(text)).decode("utf-8") == _roundtrip_expect(name, text), text


@pytest.mark.parametrize("name", ALL_VOCABS)
def test_roundtrip_random_text(load, name):
    gv, ours = load(name)
    # SPM reads ▁ as a space on the way back; everything else must come back unchanged.
    alphabet = st.characters(blacklist_categories=("Cs",),
                             blacklist_characters="\u2581" if gv.model == "llama" else "")

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=alphabet, max_size=60))
    def check(text):
        hypothesis.assume(gv.representable(text.encode("utf-8")))
        ids = ours.tokenize(text)
        assert ours.detokenize(ids).decode("utf-8") == _roundtrip_expect(name, text)

    check()


@pytest.mark.parametrize("name", ALL_VOCABS)
def test_roundtrip_invalid_utf8_and_nul(load, name):
    """Bad UTF-8 and NUL bytes are tokenized (as byte tokens), never dropped or crashed on."""
    gv, ours = load(name)
    rng = random.Random(7)
    samples = [b"\xff", b"\xc3", b"a\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
               b"ok\x00ok", b"\x00\x00", b"\x80\x81 x \xfe"]
    samples += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))) for _ in range(100)]
    for data in samples:
        ids = ours.tokenize(data)
        back = ours.detokenize(ids)
        want = bytes(b for b in data if b not in gv.missing_bytes)
        if CLEAN_SPACES[name]:
            want = clean_up_tokenization(want.decode("latin-1")).encode("latin-1")
        assert back == want, (data, ids)


@pytest.mark.parametrize("name", ALL_VOCABS)
def test_pieces_rejoin_split_characters(load, name):
    """token_to_piece of tokens that split a UTF-8 character: their bytes join back."""
    gv, ours = load(name)
    for text in ["😀👍🏽👨‍👩‍👧‍👦", "日本語のテキスト", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "a😀b", "\U0002a6d0\U00020000"]:
        ids = ours.tokenize(text)
        pieces = b"".join(ours.piece(t) for t in ids)
        if gv.model == "llama":
            pieces = pieces[1:] if pieces.startswith(b" ") else pieces  # the ▁ prefix
        assert pieces == text.encode("utf-8"), (text, ids)
        assert any(not _valid_utf8(ours.piece(t)) for t in ids) or name != "gpt-2"


def _valid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("name", BPE_VOCABS)
def test_roundtrip_parse_special(load, name):
    gv, ours = load(name)
    for text in SPECIAL_CORPUS:
        ids = ours.tokenize(text, parse_special=True)
        got = ours.detokenize(ids, unparse_special=True).decode("utf-8")
        assert got == _roundtrip_expect(name, text)


@pytest.mark.parametrize("name", SPM_VOCABS)
def test_spm_roundtrip_parse_special(load, name):
    gv, ours = load(name)
    for text in SPECIAL_CORPUS:
        ids = ours.tokenize(text, parse_special=True)
        assert ours.detokenize(ids, unparse_special=True).decode("utf-8") == _roundtrip_expect(name, text), text


# ---------------------------------------------------------------------------------------------
# long inputs

@pytest.mark.parametrize("name", ["gpt-2", "llama-bpe", "llama-spm"])
def test_long_runs_match_reference(load, name):
    gv, ours = load(name)
    ref = reference(gv)
    for text in [" " * 20000, "a" * 20000, "\n" * 5000 + "x", "ab " * 5000, "😀" * 2000]:
        assert ours.tokenize(text) == ref_encode(gv, ref, text), (name, text[:10], len(text))


@pytest.mark.parametrize("name", ["gpt-2", "llama-bpe", "llama-spm"])
def test_a_million_spaces(load, name):
    """One pre-tokenizer piece of 10^6 spaces: merged by the priority queue (the quadratic
    textbook loop would not finish here)."""
    gv, ours = load(name)
    ids = ours.tokenize(" " * 1_000_000)
    assert ours.detokenize(ids) == b" " * 1_000_000
    if name != "gpt-2":  # GPT-2 has no token of several spaces
        assert len(ids) < 1_000_000 // 4


# ---------------------------------------------------------------------------------------------
# vocabulary metadata and getters

@pytest.mark.parametrize("name", ALL_VOCABS)
def test_getters_match_gguf(load, name):
    gv, ours = load(name)
    v = ours.vocab
    n = len(gv.tokens)
    assert V.llama_vocab_n_tokens(v) == n
    assert V.llama_vocab_type(v) == (1 if gv.model == "llama" else 2)
    assert V.llama_vocab_bos(v) == gv.bos
    assert V.llama_vocab_eos(v) == gv.eos
    attr_of = {0: 0, 1: 1 << 2, 2: 1 << 0, 3: 1 << 3, 4: 1 << 4, 5: 1 << 1, 6: 1 << 5}
    for i in list(range(0, n, max(1, n // 2000))) + [n - 1] + gv.ids_of_type(TT_CONTROL, TT_USER, TT_UNKNOWN):
        assert V.llama_vocab_get_text(v, i) == gv.tokens[i].encode()
        assert V.llama_vocab_get_score(v, i) == pytest.approx(gv.scores[i])
        assert V.llama_vocab_get_attr(v, i) == attr_of[gv.types[i]]
        assert V.llama_vocab_is_control(v, i) == (gv.types[i] == TT_CONTROL)
    # the newline token
    nl = V.llama_vocab_nl(v)
    assert gv.tokens[nl] == ("<0x0A>" if gv.model == "llama" else "\u010a")
    # add_bos: explicit keys win, else the family default (SPM and llama3 add BOS)
    default_bos = gv.model == "llama" or gv.pre == "llama-bpe"
    assert V.llama_vocab_get_add_bos(v) == (gv.add_bos if gv.add_bos is not None else default_bos)
    assert V.llama_vocab_get_add_eos(v) == bool(gv.add_eos)
    # the model pointer is accepted wherever a vocab is
    assert V.llama_vocab_n_tokens(ours.model) == n
    assert V.llama_vocab_bos(ours.model) == gv.bos
    assert ours.tokenize("Hello world", vocab=ours.model) == ours.tokenize("Hello world")


@pytest.mark.parametrize("name,eog_texts", [
    ("gpt-2", ["<|endoftext|>"]),
    ("llama-bpe", ["<|end_of_text|>", "<|eot_id|>"]),
    ("qwen2", ["<|endoftext|>", "<|im_end|>"]),
    ("phi-3", ["<|endoftext|>", "<|end|>"]),
    ("llama-spm", ["</s>"]),
    ("smollm2", ["<|im_end|>", "<|endoftext|>"]),
])
def test_end_of_generation(load, name, eog_texts):
    gv, ours = load(name)
    v = ours.vocab
    eog = [i for i in range(len(gv.tokens)) if V.llama_vocab_is_eog(v, i)]
    assert sorted(gv.tokens[i] for i in eog) == sorted(eog_texts)
    assert not V.llama_vocab_is_eog(v, -1) and not V.llama_vocab_is_eog(v, len(gv.tokens))
    eot = V.llama_vocab_eot(v)
    if name == "llama-bpe":
        assert gv.tokens[eot] == "<|eot_id|>"
    if name == "qwen2":
        assert gv.tokens[eot] == "<|im_end|>"


def test_add_special(load):
    gv, ours = load("llama-spm")
    assert ours.tokenize("hi", add_special=True) == [gv.bos] + ours.tokenize("hi")
    assert ours.tokenize("", add_special=True) == [gv.bos]
    assert ours.tokenize("") == []
    ids = ours.tokenize("hi", add_special=True)
    assert ours.detokenize(ids) == b"hi"
    assert ours.detokenize(ids, unparse_special=True) == b"<s>hi"
    assert ours.detokenize(ids, remove_special=True, unparse_special=True) == b"hi"
    gv, ours = load("gpt-2")
    assert ours.tokenize("hi", add_special=True) == ours.tokenize("hi")  # gpt-2 adds no BOS
    gv, ours = load("llama-bpe")
    assert ours.tokenize("hi", add_special=True)[0] == 128000


# ---------------------------------------------------------------------------------------------
# API semantics

def test_tokenize_buffer_contract(load):
    gv, ours = load("llama-bpe")
    v = ours.vocab
    data = "Hello world, this is a test.".encode()
    n = len(ours.tokenize(data))
    assert n > 3
    sentinel = -7
    buf = (V.llama_token * (n + 4))(*([sentinel] * (n + 4)))
    # too small: minus the count needed, nothing written at all
    assert V.llama_tokenize(v, data, len(data), buf, n - 1, False, False) == -n
    assert list(buf) == [sentinel] * (n + 4)
    assert V.llama_tokenize(v, data, len(data), buf, 0, False, False) == -n
    assert V.llama_tokenize(v, data, len(data), buf, -5, False, False) == -n
    assert V.llama_tokenize(v, data, len(data), None, 100, False, False) == -n
    # exact fit: written, and not one past
    assert V.llama_tokenize(v, data, len(data), buf, n, False, False) == n
    assert buf[n] == sentinel
    # text_len counts bytes: NULs inside are text, never an end
    z = b"a\x00b"
    assert ours.tokenize(z) != ours.tokenize(b"a")
    assert ours.detokenize(ours.tokenize(z)) == z
    # a shorter text_len reads only that prefix
    assert V.llama_tokenize(v, b"Hello world", 5, buf, n, False, False) == len(ours.tokenize("Hello"))


def test_token_to_piece_contract(load):
    gv, ours = load("llama-spm")
    v = ours.vocab
    hello = gv.tokens.index("\u2581Hello")
    assert ours.piece(hello) == b" Hello"
    assert ours.piece(hello, lstrip=1) == b"Hello"
    buf = ctypes.create_string_buffer(16)
    assert V.llama_token_to_piece(v, hello, buf, 3, 0, False) == -6
    assert V.llama_token_to_piece(v, hello, buf, 6, 0, False) == 6
    assert V.llama_token_to_piece(v, hello, buf, -1, 0, False) == -6
    # control tokens only with special
    assert ours.piece(gv.bos) == b""
    assert ours.piece(gv.bos, special=True) == b"<s>"
    # byte tokens render their byte
    assert ours.piece(gv.tokens.index("<0x0A>")) == b"\n"
    assert ours.piece(gv.tokens.index("<0xE2>")) == b"\xe2"
    # invalid ids: 0, no crash
    for bad in (-1, len(gv.tokens), 1 << 30, -(1 << 30)):
        assert V.llama_token_to_piece(v, bad, buf, 16, 0, True) == 0
        assert V.llama_vocab_get_text(v, bad) is None
        assert V.llama_vocab_get_score(v, bad) == 0.0
        assert V.llama_vocab_get_attr(v, bad) == 0
    gv, ours = load("gpt-2")
    assert ours.piece(gv.tokens.index("\u0120world")) == b" world"
    assert ours.piece(gv.tokens.index("\u010a")) == b"\n"
    assert ours.piece(gv.eos) == b""
    assert ours.piece(gv.eos, special=True) == b"<|endoftext|>"


def test_detokenize_buffer_contract(load):
    gv, ours = load("gpt-2")
    v = ours.vocab
    ids = ours.tokenize("Hello world")
    arr = (V.llama_token * len(ids))(*ids)
    buf = ctypes.create_string_buffer(b"\x01" * 32, 32)
    assert V.llama_detokenize(v, arr, len(ids), buf, 5, False, False) == -11
    assert buf.raw[:6] == b"\x01" * 6
    assert V.llama_detokenize(v, arr, len(ids), buf, 11, False, False) == 11
    assert buf.raw[:12] == b"Hello world\x01"
    # invalid ids are skipped, never crash
    bad = (V.llama_token * 3)(ids[0], 10 ** 9, ids[1])
    assert V.llama_detokenize(v, bad, 3, buf, 32, False, False) == 11


def test_null_and_foreign_handles_are_refused(load):
    gv, ours = load("gpt-2")
    assert V.llama_vocab_n_tokens(None) == 0
    assert V.llama_tokenize(None, b"x", 1, None, 0, False, False) == 0
    junk = ctypes.create_string_buffer(b"\x00" * 64)
    assert V.llama_vocab_n_tokens(ctypes.addressof(junk)) == 0
    assert V.llama_vocab_bos(ctypes.addressof(junk)) == -1


# ---------------------------------------------------------------------------------------------
# loading failures: crafted vocab files (written with the gguf package)

def _write_vocab(path: Path, model="gpt2", pre="gpt-2", tokens=None, merges=None, scores=None, types=None):
    w = gguf.GGUFWriter(str(path), "llama")
    if model is not None:
        w.add_string("tokenizer.ggml.model", model)
    if pre is not None:
        w.add_string("tokenizer.ggml.pre", pre)
    if tokens is not None:
        w.add_array("tokenizer.ggml.tokens", tokens)
    if merges is not None:
        w.add_array("tokenizer.ggml.merges", merges)
    if scores is not None:
        w.add_array("tokenizer.ggml.scores", scores)
    if types is not None:
        w.add_array("tokenizer.ggml.token_type", types)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def _load_vocab_only(path: Path):
    p = M.llama_model_default_params()
    p.vocab_only = True
    return M.llama_model_load_from_file(str(path).encode(), p)


BYTE_CHARS = [byte_char(b) for b in range(256)]


@pytest.mark.parametrize("case", ["unknown_pre", "unknown_model", "no_tokens", "no_merges", "bad_scores",
                                  "bad_types", "ok"])
def test_crafted_vocab_loading(tmp_path, lib_path, case):
    toks = BYTE_CHARS + ["ab", "abc"]
    kw = dict(tokens=toks, merges=["a b", "ab c"])
    if case == "unknown_pre":
        kw["pre"] = "no-such-pre"
    elif case == "unknown_model":
        kw["model"] = "plamo2"  # llama.cpp's PLaMo-2 tokenizer: not supported here
    elif case == "no_tokens":
        kw["tokens"] = None
    elif case == "no_merges":
        kw["merges"] = None
    elif case == "bad_scores":
        kw["scores"] = [0.0] * 3
    elif case == "bad_types":
        kw["types"] = [1] * (len(toks) - 1) + [9]
    path = tmp_path / f"{case}.gguf"
    _write_vocab(path, **kw)
    m = _load_vocab_only(path)
    if case == "ok":
        assert m
        try:
            v = M.llama_model_get_vocab(m)
            data = b"abcab"
            buf = (V.llama_token * 8)()
            n = V.llama_tokenize(v, data, len(data), buf, 8, False, False)
            assert [toks[i] for i in buf[:n]] == ["abc", "ab"]
        finally:
            M.llama_model_free(m)
    else:
        assert not m, case


# ---------------------------------------------------------------------------------------------
# small crafted vocabularies: many merge candidates, score ties, unused pieces, repeated merges

def _spm_crafted(tmp_path: Path, seed: int):
    rng = random.Random(seed)
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [TT_UNKNOWN, TT_CONTROL, TT_CONTROL]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(TT_BYTE)
    alphabet = ["a", "b", "\u2581"]
    pieces = set()
    for n in range(1, 5):
        for _ in range(12 * n):
            pieces.add("".join(rng.choice(alphabet) for _ in range(n)))
    for p in sorted(pieces):
        tokens.append(p)
        scores.append(float(rng.randint(-3, 0)))  # few distinct scores: ties are common
        types.append(TT_UNUSED if len(p) > 1 and rng.random() < 0.15 else TT_NORMAL)
    path = tmp_path / f"spm-{seed}.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.scores", scores)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    return path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_crafted_spm_matches_sentencepiece(tmp_path, lib_path, seed):
    path = _spm_crafted(tmp_path, seed)
    gv = GGUFVocab(path)
    sp = build_sentencepiece(gv)
    ours = Ours(path)
    try:
        rng = random.Random(seed)
        for _ in range(400):
            text = "".join(rng.choice("ab  c") for _ in range(rng.randint(0, 40)))
            assert ours.tokenize(text) == sp.encode(text), (text, show(gv, ours.tokenize(text)), show(gv, sp.encode(text)))
    finally:
        ours.close()


def _bpe_crafted(tmp_path: Path, seed: int):
    rng = random.Random(seed)
    tokens = [byte_char(b) for b in range(256)]
    have = set(tokens)
    base = ["a", "b", "\u0120"]
    merges = []
    pool = list(base)
    while len(merges) < 60:
        a, b = rng.choice(pool), rng.choice(pool)
        if len(a) + len(b) > 6:
            continue
        merges.append(f"{a} {b}")  # repeats and second routes to one result are allowed
        if a + b not in have:
            have.add(a + b)
            tokens.append(a + b)
            pool.append(a + b)
    path = tmp_path / f"bpe-{seed}.gguf"
    _write_vocab(path, model="gpt2", pre="gpt-2", tokens=tokens, merges=merges)
    return path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_crafted_bpe_matches_hf(tmp_path, lib_path, seed):
    path = _bpe_crafted(tmp_path, seed)
    gv = GGUFVocab(path)
    hf = build_hf(gv, "gpt-2", False)
    ours = Ours(path)
    try:
        rng = random.Random(seed)
        for _ in range(400):
            text = "".join(rng.choice("aab b  ") for _ in range(rng.randint(0, 40)))
            want = hf.encode(text, add_special_tokens=False).ids
            assert ours.tokenize(text) == want, (text, show(gv, ours.tokenize(text)), show(gv, want))
    finally:
        ours.close()


# ---------------------------------------------------------------------------------------------
# the generated Unicode tables, as committed, against the reference's regex engine

def test_unicode_tables_match_oniguruma():
    """\\p{L}, \\p{N}, \\p{P} and \\s of every code point, read from the committed
    unicode-data.c, agree with the classes of the Oniguruma engine inside HF tokenizers."""
    tokenizers = pytest.importorskip("tokenizers")
    src = (Path(__file__).resolve().parents[1] / "src" / "unicode-data.c").read_text()

    def array(name):
        body = re.search(name + r"\[[^\]]*\] = \{(.*?)\};", src, re.S).group(1)
        return [int(x, 0) for x in re.findall(r"0x[0-9A-Fa-f]+|\d+", body)]

    direct, starts, values = array("unicode_direct"), array("unicode_range_start"), array("unicode_range_value")
    table = bytearray(0x110000)
    for i, (a, v) in enumerate(zip(starts, values)):
        b = starts[i + 1] if i + 1 < len(starts) else 0x110000
        table[a:b] = bytes([v]) * (b - a)
    assert bytes(table[:len(direct)]) == bytes(direct)
    cps = [cp for cp in range(1, 0x110000) if not 0xD800 <= cp < 0xE000]
    tests = {r"\p{L}": lambda v: 5 <= (v & 31) <= 9, r"\p{N}": lambda v: 13 <= (v & 31) <= 15,
             r"\p{P}": lambda v: 16 <= (v & 31) <= 22, r"\s": lambda v: bool(v & 0x20)}
    for pattern, ours in tests.items():
        split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="removed")
        inside = "".join(chr(cp) for cp in cps if ours(table[cp]))
        outside = "".join(chr(cp) for cp in cps if not ours(table[cp]))
        # every code point we class in is removed by the engine; every other one is kept
        left = "".join(piece for piece, _ in split.pre_tokenize_str(inside))
        assert left == "", f"{pattern}: Oniguruma does not match {[hex(ord(c)) for c in left[:8]]}"
        kept = "".join(piece for piece, _ in split.pre_tokenize_str(outside))
        if kept != outside:
            missing = sorted(set(outside) - set(kept))
            pytest.fail(f"{pattern}: Oniguruma matches {[hex(ord(c)) for c in missing[:8]]}")


def test_default_pre_tokenizer_matches_hf(tmp_path, load):
    """The 'default' pre type (punctuation runs, gpt-2, digit runs, digit triples) on GPT-2's
    vocabulary and merges, against HF with the same four Split steps."""
    gv, _ = load("gpt-2")
    path = tmp_path / "gpt2-default.gguf"
    _write_vocab(path, model="gpt2", pre="default", tokens=gv.tokens, merges=gv.merges)
    gd = GGUFVocab(path)
    hf = build_hf(gd, "default", False)
    ours = Ours(path)
    try:
        bad = [t for t in CORPUS if ours.tokenize(t) != hf.encode(t, add_special_tokens=False).ids]
        assert not bad, bad[:5]
    finally:
        ours.close()
