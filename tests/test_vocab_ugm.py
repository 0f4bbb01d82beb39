"""Unigram vocabularies (tokenizer.ggml.model "t5") against sentencepiece.

The reference is a sentencepiece UNIGRAM ModelProto built from the GGUF (read by our plain
metadata reader, never by the library): its pieces, scores and types, and its normalizer spec
with the GGUF's precompiled charsmap, add_space_prefix (add_dummy_prefix) and
remove_extra_whitespaces. The vocabulary is nomic-bert-moe.gguf from llama-cpp-python's sdist
(XLM-R's 250k pieces with the nmt_nfkc charsmap); variants rewrite its flags and turn some pieces
into user-defined ones.
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

from resources import vocab_file
from test_tokenizer import Ours, read_gguf_metadata
from tokenizer_corpus import CORPUS

spm = pytest.importorskip("sentencepiece")
gguf = pytest.importorskip("gguf")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER, TT_UNUSED = 1, 2, 3, 4, 5

EXTRA = ["  leading", "trailing  ", "many     spaces\tand\ttabs", "\u3000ideographic\u3000space", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
         "ﬁ ligature ① circled ㍿ ℌ", "e\u0301 composed é", "<mask> in text", "zero\u200bwidth", "\x00nul", "   ", "",
         "Ünïcödé ÑÖRMÄLIZÄTIÖN", "中文字符和日本語のテキスト", "😀👍🏽 emoji", "\ufffd replacement", "a\u0308\u0301"]


@functools.lru_cache(maxsize=None)
def _kv():
    return read_gguf_metadata(vocab_file("nomic-bert-moe"))


def _reference(kv: dict):
    from sentencepiece import sentencepiece_model_pb2 as pb
    toks, scores, types = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.scores"], kv["tokenizer.ggml.token_type"]
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    m.trainer_spec.vocab_size = len(toks)
    unk = kv["tokenizer.ggml.unknown_token_id"]
    m.trainer_spec.unk_id = unk
    m.trainer_spec.bos_id = m.trainer_spec.eos_id = m.trainer_spec.pad_id = -1
    m.normalizer_spec.name = "nmt_nfkc"
    m.normalizer_spec.precompiled_charsmap = bytes(x & 0xFF for x in kv["tokenizer.ggml.precompiled_charsmap"])
    m.normalizer_spec.add_dummy_prefix = bool(kv.get("tokenizer.ggml.add_space_prefix", False))
    m.normalizer_spec.remove_extra_whitespaces = bool(kv.get("tokenizer.ggml.remove_extra_whitespaces", False))
    m.normalizer_spec.escape_whitespaces = True
    for i, (t, s, ty) in enumerate(zip(toks, scores, types)):
        p = m.pieces.add()
        p.piece = t
        p.score = s
        if i == unk:
            p.type = pb.ModelProto.SentencePiece.UNKNOWN
        elif ty in (TT_UNKNOWN, TT_CONTROL):
            p.type = pb.ModelProto.SentencePiece.CONTROL
        else:
            p.type = ty
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(m.SerializeToString())
    return sp


def _write(path: Path, kv: dict):
    """The tokenizer keys of kv as a vocab-only GGUF (the charsmap as an array of uint8)."""
    w = gguf.GGUFWriter(str(path), "t5")
    V = gguf.GGUFValueType
    w.add_string("tokenizer.ggml.model", "t5")
    w.add_array("tokenizer.ggml.tokens", kv["tokenizer.ggml.tokens"])
    w.add_key_value("tokenizer.ggml.scores", kv["tokenizer.ggml.scores"], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("tokenizer.ggml.token_type", kv["tokenizer.ggml.token_type"], V.ARRAY, sub_type=V.INT32)
    w.add_key_value("tokenizer.ggml.precompiled_charsmap", [x & 0xFF for x in kv["tokenizer.ggml.precompiled_charsmap"]],
                    V.ARRAY, sub_type=V.UINT8)
    w.add_uint32("tokenizer.ggml.unknown_token_id", kv["tokenizer.ggml.unknown_token_id"])
    w.add_bool("tokenizer.ggml.add_space_prefix", bool(kv.get("tokenizer.ggml.add_space_prefix")))
    w.add_bool("tokenizer.ggml.remove_extra_whitespaces", bool(kv.get("tokenizer.ggml.remove_extra_whitespaces")))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def _variant(tmp_path: Path, name: str, **changes):
    kv = dict(_kv())
    if changes.pop("user_defined", False):
        types = list(kv["tokenizer.ggml.token_type"])
        toks = kv["tokenizer.ggml.tokens"]
        for i, t in enumerate(toks):  # a few multi-character pieces become user-defined
            if t in ("▁the", "ing", "▁world", "tion", "中文", "ab"):
                types[i] = TT_USER
        kv["tokenizer.ggml.token_type"] = types
    kv.update(changes)
    path = tmp_path / f"{name}.gguf"
    _write(path, kv)
    return kv, path


def _check(kv, ours, texts):
    ref = _reference(kv)
    toks = kv["tokenizer.ggml.tokens"]
    bad = [(t, [toks[i] for i in ours.tokenize(t)], [toks[i] for i in ref.encode(t)])
           for t in texts if ours.tokenize(t) != ref.encode(t)]
    assert not bad, f"{len(bad)} of {len(texts)} differ; first: {bad[:2]}"


def test_nomic_bert_moe_matches_sentencepiece(lib_path):
    kv = _kv()
    ours = Ours(vocab_file("nomic-bert-moe"))
    try:
        _check(kv, ours, list(CORPUS) + EXTRA)
        ref = _reference(kv)
        for t in list(CORPUS)[:200] + EXTRA:  # decoding: sentencepiece's text of the ids
            ids = ours.tokenize(t)
            if kv["tokenizer.ggml.unknown_token_id"] in ids:
                continue  # unknown reads back as llama.cpp's ▅ here, sentencepiece's " ⁇ " there
            assert ours.detokenize(ids).decode("utf-8") == ref.decode(ids), t
    finally:
        ours.close()


@pytest.mark.parametrize("flags", [dict(), dict(add_space_prefix=False), dict(remove_extra_whitespaces=False),
                                   dict(add_space_prefix=False, remove_extra_whitespaces=False),
                                   dict(user_defined=True)])
def test_unigram_flags_and_user_defined_pieces(tmp_path, lib_path, flags):
    changes = {f"tokenizer.ggml.{k}" if k != "user_defined" else k: v for k, v in flags.items()}
    kv, path = _variant(tmp_path, "v", **changes)
    ours = Ours(path)
    try:
        _check(kv, ours, list(CORPUS)[:300] + EXTRA + ["the thing in the world", "abab ab"])
    finally:
        ours.close()


def test_unigram_random_text_matches_sentencepiece(lib_path):
    kv = _kv()
    ref = _reference(kv)
    ours = Ours(vocab_file("nomic-bert-moe"))

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
    def check(text):
        assert ours.tokenize(text) == ref.encode(text)

    try:
        check()
    finally:
        ours.close()


def test_unigram_defaults(lib_path):
    """add_special appends EOS and no BOS (the t5 family's defaults); the type reads as UGM."""
    from llama_py import _llama_vocab as V
    kv = _kv()
    ours = Ours(vocab_file("nomic-bert-moe"))
    try:
        assert V.llama_vocab_type(ours.vocab) == 4
        ids = ours.tokenize("hello", add_special=True)
        # the file says add_bos_token = true, add_eos_token = true
        assert ids[0] == kv["tokenizer.ggml.bos_token_id"] and ids[-1] == kv["tokenizer.ggml.eos_token_id"]
    finally:
        ours.close()


def test_bad_charsmap_is_refused(tmp_path, lib_path):
    kv = dict(_kv())
    kv["tokenizer.ggml.precompiled_charsmap"] = [0xFF, 0xFF, 0, 0, 1, 2, 3]
    path = tmp_path / "bad.gguf"
    _write(path, kv)
    from llama_py import _llama_model as M
    p = M.llama_model_default_params()
    p.vocab_only = True
    assert not M.llama_model_load_from_file(str(path).encode(), p)


def test_unigram_parse_special_segments(lib_path):
    """With parse_special, control tokens split the text and each stretch between them is
    encoded as sentencepiece encodes a text of its own."""
    import re
    kv = _kv()
    ref = _reference(kv)
    toks, types = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.token_type"]
    controls = {toks[i]: i for i, t in enumerate(types) if t in (TT_CONTROL, TT_UNKNOWN) and toks[i]}
    rx = re.compile("|".join(re.escape(c) for c in sorted(controls, key=len, reverse=True)))
    ours = Ours(vocab_file("nomic-bert-moe"))
    try:
        for text in ["<s>hello</s>", "a <mask> b", "</s></s>x  y<pad>", "<unk> z", "plain text", "<s> leading space"]:
            want, pos = [], 0
            for m in rx.finditer(text):
                want += ref.encode(text[pos:m.start()]) if m.start() > pos else []
                want.append(controls[m.group()])
                pos = m.end()
            want += ref.encode(text[pos:]) if pos < len(text) else []
            assert ours.tokenize(text, parse_special=True) == want, text
    finally:
        ours.close()
