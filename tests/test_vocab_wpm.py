"""WordPiece (WPM, tokenizer.ggml.model "bert") against independent references.

- llama.cpp's own test cases for ggml-vocab-bert-bge.gguf (.inp / .out from the
  llama-cpp-python 0.3.36 sdist, fetched by llama_py.pull_vocab): every case tokenizes to the
  listed ids.
- Hugging Face `tokenizers`' BertWordPiece pipeline (BertNormalizer, BertPreTokenizer,
  WordPiece) built from the GGUF's vocabulary (read with the `gguf` package: "▁x" is the
  word-initial token "x", any other normal token "y" is the continuation "##y"), over the
  shared tokenizer corpus; [CLS] ... [SEP] with add_special.
"""
from __future__ import annotations

import unicodedata

import pytest

from resources import vocab_cases, vocab_file
from test_tokenizer import Ours
from tokenizer_corpus import CORPUS, HARD

gguf = pytest.importorskip("gguf")
tokenizers = pytest.importorskip("tokenizers")

@pytest.fixture(scope="module")
def bge():
    path = vocab_file("bert-bge")
    ours = Ours(path)
    yield path, ours
    ours.close()


@pytest.fixture(scope="module")
def hf(bge):
    r = gguf.GGUFReader(str(bge[0]))
    f = r.fields["tokenizer.ggml.tokens"]
    toks = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    ft = r.fields["tokenizer.ggml.token_type"]
    types = [int(ft.parts[i][0]) for i in ft.data]
    vocab = {}
    for i, (t, ty) in enumerate(zip(toks, types)):
        if ty != 1:
            name = t
        elif t.startswith("\u2581"):
            name = t[1:]
        else:
            name = "##" + t
        vocab.setdefault(name, i)
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=10**6))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.BertProcessing(("[SEP]", 102), ("[CLS]", 101))
    tok.decoder = decoders.WordPiece()
    return tok


def test_llama_cpp_cases(bge):
    _, ours = bge
    cases = vocab_cases("bert-bge")
    assert len(cases) >= 40
    for text, ids in cases:
        assert ours.tokenize(text) == ids, repr(text)


def _hf_comparable(text: str) -> bool:
    # Unassigned code points (HF drops them as controls, llama.cpp keeps them) and spacing /
    # enclosing marks (llama.cpp strips every mark, HF only nonspacing ones) tokenize
    # differently by design of the two references, and so do U+000B, U+000C, U+0085 (controls
    # HF drops, spaces llama.cpp splits at); our tokenizer follows llama.cpp.
    return not any(c in text for c in "\x0b\x0c\x85") and all(unicodedata.category(c) not in ("Cn", "Mc", "Me")
               for c in unicodedata.normalize("NFD", text))


def test_matches_hf_bert_wordpiece(bge, hf):
    _, ours = bge
    n = 0
    for text in CORPUS:
        if not _hf_comparable(text):
            continue
        assert ours.tokenize(text) == hf.encode(text, add_special_tokens=False).ids, repr(text)
        n += 1
    assert n > len(CORPUS) // 2


def test_add_special_cls_sep(bge, hf):
    _, ours = bge
    for text in HARD[:20] + ["Hello world", ""]:
        if _hf_comparable(text):
            assert ours.tokenize(text, add_special=True) == hf.encode(text).ids, repr(text)


def test_parse_special(bge):
    _, ours = bge
    ids = ours.tokenize("[CLS] hello [SEP]", parse_special=True)
    assert ids[0] == 101 and ids[-1] == 102
    assert ours.tokenize("[CLS]", parse_special=False) != [101]


def test_detokenize_words(bge, hf):
    _, ours = bge
    for text in ["hello world", "the quick brown fox jumps over the lazy dog", "tokenization matters"]:
        ids = ours.tokenize(text)
        assert ours.detokenize(ids).decode() == hf.decode(ids), text
