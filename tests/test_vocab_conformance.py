"""llama.cpp's tokenizer conformance cases, over every vocabulary of llama-cpp-python 0.3.36's
sdist that carries them (models/ggml-vocab-NAME.gguf with .inp/.out, fetched at test time by
llama_py.pull_vocab): each text tokenized without special tokens (add_special=False,
parse_special=False) must give the ids Hugging Face's tokenizer of the model gave (the .out file
was written by the sdist's convert_hf_to_gguf_update.py with tokenizer.encode(text,
add_special_tokens=False)). The files are the independent reference; nothing here is ours.
"""
from __future__ import annotations

import ctypes

import pytest

from llama_py import _llama_model as M
from llama_py import _llama_vocab as V
from llama_py.pull_vocab import CONFORMANCE_VOCABS

from resources import vocab_cases, vocab_dir

# Vocabularies whose pre-tokenizer keeps the space before punctuation when detokenizing (llama.cpp's
# clean_spaces off); the others remove it as Hugging Face's clean_up_tokenization does.
NO_CLEAN_SPACES = {"command-r", "deepseek-coder", "deepseek-llm", "qwen2", "qwen35"}

# Cases whose text cannot come back from its ids: WordPiece (bert-bge) lowercases and strips
# accents, as BERT's uncased tokenizer does.
PENDING = {}
NOT_REVERSIBLE = {"bert-bge": "WordPiece lowercases and strips accents: the text does not come back"}


class VocabOnly:
    """A vocab_only model loaded from path; tokenize(text) -> ids."""

    def __init__(self, path):
        p = M.llama_model_default_params()
        p.vocab_only = True
        self.model = M.llama_model_load_from_file(str(path).encode(), p)
        self.vocab = M.llama_model_get_vocab(self.model) if self.model else None

    def tokenize(self, text: str):
        data = text.encode("utf-8")
        n = V.llama_tokenize(self.vocab, data, len(data), None, 0, False, False)
        n = -n if n < 0 else n
        buf = (V.llama_token * max(n, 1))()
        got = V.llama_tokenize(self.vocab, data, len(data), buf, n, False, False)
        assert got == n, (text, got, n)
        return list(buf[:n])

    def detokenize(self, ids) -> str:
        arr = (V.llama_token * max(len(ids), 1))(*ids)
        n = V.llama_detokenize(self.vocab, arr, len(ids), None, 0, False, False)
        n = -n if n < 0 else n
        buf = ctypes.create_string_buffer(n + 1)
        assert V.llama_detokenize(self.vocab, arr, len(ids), buf, n, False, False) == n
        return buf.raw[:n].decode("utf-8")

    def close(self):
        if self.model:
            M.llama_model_free(self.model)
            self.model = None


def check_vocab(name: str):
    """(failures, number of cases): each failure (text, ours, expected); ours is None when the
    vocabulary does not load."""
    cases = vocab_cases(name)
    ours = VocabOnly(vocab_dir(all_vocabs=True) / f"{name}.gguf")
    try:
        if ours.model is None:
            return [(t, None, want) for t, want in cases], len(cases)
        bad = []
        for text, want in cases:
            got = ours.tokenize(text)
            if got != want:
                bad.append((text, got, want))
        return bad, len(cases)
    finally:
        ours.close()


@pytest.mark.parametrize("name", CONFORMANCE_VOCABS)
def test_llama_cpp_vocab_cases(name):
    if name in PENDING:
        pytest.xfail(PENDING[name])
    bad, n = check_vocab(name)
    if bad and bad[0][1] is None:
        pytest.fail(f"{name}.gguf does not load (vocab_only): 0 of {n} cases")
    assert not bad, f"{name}: {len(bad)} of {n} cases differ; first: " + "; ".join(
        f"{t!r}: ours {g} want {w}" for t, g, w in bad[:3])


def clean_up_tokenization(s: str) -> str:
    """Hugging Face's clean_up_tokenization."""
    return (s.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",").replace(" ' ", "'")
            .replace(" n't", "n't").replace(" 'm", "'m").replace(" 's", "'s").replace(" 've", "'ve")
            .replace(" 're", "'re"))


@pytest.mark.parametrize("name", CONFORMANCE_VOCABS)
def test_llama_cpp_vocab_cases_detokenize(name):
    """The expected ids read back as the text (cleaned of the space before punctuation where the
    vocabulary's family does that)."""
    if name in PENDING:
        pytest.xfail(PENDING[name])
    if name in NOT_REVERSIBLE:
        pytest.skip(NOT_REVERSIBLE[name])
    ours = VocabOnly(vocab_dir(all_vocabs=True) / f"{name}.gguf")
    try:
        assert ours.model, f"{name}.gguf does not load"
        for text, ids in vocab_cases(name):
            want = text if name in NO_CLEAN_SPACES else clean_up_tokenization(text)
            assert ours.detokenize(ids) == want, (name, text)
    finally:
        ours.close()


def test_case_files_parse():
    """Every conformance file pairs each text with one id line (as llama.cpp's test-tokenizer-0
    requires); 46 texts per file, 50 for qwen35."""
    total = 0
    for name in CONFORMANCE_VOCABS:
        cases = vocab_cases(name)
        assert len(cases) >= 45, name
        total += len(cases)
    assert total == 694


if __name__ == "__main__":  # a summary: cases passing per vocabulary
    import sys
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    grand = ok_total = 0
    for name in CONFORMANCE_VOCABS:
        bad, n = check_vocab(name)
        ok = n - len(bad)
        grand += n
        ok_total += ok
        state = "does not load" if bad and bad[0][1] is None else f"{ok}/{n}"
        print(f"{name:16s} {state}")
        for t, g, w in bad[:2]:
            if g is not None:
                print(f"    {t!r}: ours {g} want {w}")
    print(f"total {ok_total}/{grand}")


@pytest.mark.parametrize("name", [n for n in __import__("llama_py.pull_vocab", fromlist=["x"]).ALL_VOCABS
                                  if n not in PENDING])
def test_every_sdist_vocab_takes_any_bytes(name):
    """Every vocabulary of the sdist loads and tokenizes arbitrary bytes (bad
    UTF-8, NULs, special-token texts) into ids of the vocabulary, with and without parse_special;
    detokenizing them never fails."""
    import random
    ours = VocabOnly(vocab_dir(all_vocabs=True) / f"{name}.gguf")
    try:
        assert ours.model, f"{name}.gguf does not load"
        n_vocab = V.llama_vocab_n_tokens(ours.vocab)
        rng = random.Random(11)
        samples = [b"\xff", b"a\xe2\x82", b"\xed\xa0\x80 x", b"\x00\x00", b"<s></s><|endoftext|><unk>",
                   "  \u2581 ▁▁ \t\n".encode()] + [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
                                                  for _ in range(150)]
        for data in samples:
            for special in (False, True):
                n = V.llama_tokenize(ours.vocab, data, len(data), None, 0, False, special)
                n = -n if n < 0 else n
                buf = (V.llama_token * max(n, 1))()
                assert V.llama_tokenize(ours.vocab, data, len(data), buf, n, False, special) == n
                ids = list(buf[:n])
                assert all(0 <= i < n_vocab for i in ids), (data, ids)
                arr = (V.llama_token * max(n, 1))(*ids)
                out = ctypes.create_string_buffer(8 * len(data) + 64)
                assert V.llama_detokenize(ours.vocab, arr, n, out, len(out), False, special) >= 0
    finally:
        ours.close()
