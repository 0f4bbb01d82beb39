"""RWKV "world" vocabularies (tokenizer.ggml.model "rwkv") against the RWKV tokenizer itself.

The rwkv wheel on PyPI (fetched at test time by tests/resources.py) carries the reference
tokenizer (rwkv_tokenizer.py, TRIE_TOKENIZER) and the world vocabulary (rwkv_vocab_v20230424.txt,
65,529 byte strings). The vocabulary is written to a GGUF here as llama.cpp's converter writes it
(token 0 the control <s>, then each line's bytes as a Python bytes literal without b'', then
[PADn] unused tokens up to 65,536); our tokenizer must give the reference's ids on the corpus and
on random text, and detokenizing must give the bytes back.
"""
from __future__ import annotations

import ast
import functools
import importlib.util

import pytest

from resources import rwkv_world_dir
from test_tokenizer import Ours
from tokenizer_corpus import CORPUS

gguf = pytest.importorskip("gguf")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

EXTRA = ["\\x00 escapes \\n \\t", "quote ' and \" and \\\\ backslash", "\x00\x01\x7f\x80", "中文 日本語 한국어 😀",
         "\n\n\n", "   spaces   ", "<s> not special", "[PAD65530]"]


@functools.lru_cache(maxsize=None)
def _reference():
    d = rwkv_world_dir()
    spec = importlib.util.spec_from_file_location("rwkv_tokenizer_ref", d / "rwkv_tokenizer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.TRIE_TOKENIZER(str(d / "rwkv_vocab_v20230424.txt"))


@pytest.fixture(scope="module")
def rwkv_gguf(tmp_path_factory, lib_path):
    d = rwkv_world_dir()
    tokens, types = ["<s>"], [3]
    for line in (d / "rwkv_vocab_v20230424.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split(" ")
        tok = ast.literal_eval(" ".join(parts[1:-1]))
        tok = tok.encode("utf-8") if isinstance(tok, str) else tok
        assert int(parts[0]) == len(tokens) and len(tok) == int(parts[-1])
        tokens.append(repr(tok)[2:-1])
        types.append(1)
    for i in range(len(tokens), 65536):
        tokens.append(f"[PAD{i}]")
        types.append(5)
    path = tmp_path_factory.mktemp("rwkv") / "rwkv-world.gguf"
    w = gguf.GGUFWriter(str(path), "rwkv7")
    w.add_string("tokenizer.ggml.model", "rwkv")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_key_value("tokenizer.ggml.token_type", types, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.INT32)
    w.add_uint32("tokenizer.ggml.bos_token_id", 0)
    w.add_uint32("tokenizer.ggml.eos_token_id", 0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    ours = Ours(path)
    yield ours
    ours.close()


def test_rwkv_world_matches_reference(rwkv_gguf):
    ref = _reference()
    bad = [t for t in list(CORPUS) + EXTRA if rwkv_gguf.tokenize(t) != ref.encode(t)]
    assert not bad, f"{len(bad)} texts differ; first: {bad[:3]!r}"


def test_rwkv_world_roundtrip(rwkv_gguf):
    ref = _reference()
    for t in list(CORPUS) + EXTRA:
        ids = rwkv_gguf.tokenize(t)
        assert rwkv_gguf.detokenize(ids) == ref.decodeBytes(ids) == t.encode("utf-8"), t


def test_rwkv_world_random_text(rwkv_gguf):
    ref = _reference()

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=50))
    def check(text):
        assert rwkv_gguf.tokenize(text) == ref.encode(text)

    check()


def test_rwkv_world_type_and_newline(rwkv_gguf):
    from llama_py import _llama_vocab as V
    assert V.llama_vocab_type(rwkv_gguf.vocab) == 5
    assert rwkv_gguf.detokenize([V.llama_vocab_nl(rwkv_gguf.vocab)]) == b"\n"
    assert rwkv_gguf.tokenize("hi", add_special=True) == rwkv_gguf.tokenize("hi")  # no BOS / EOS added
