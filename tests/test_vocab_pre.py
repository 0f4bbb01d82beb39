"""Every BPE pre-tokenizer family without a conformance file, against Hugging Face `tokenizers`.

For each family a small byte-level BPE is trained with `tokenizers` over a multilingual corpus
(code, CJK, emoji, numbers, whitespace runs, marks), its pre-tokenizer being the family's
published regexes as tokenizer.json writes them (Split steps, behavior "isolated", with the
original (?i:...) groups, possessive quantifiers and class intersections). The trained vocab and
merges are written to a GGUF with the `gguf` package under the family's tokenizer.ggml.pre name;
our tokenizer must give the ids `tokenizers` gives on the corpus. Names that share a family's
regexes share its test (one name per family is enough: the name table is checked separately).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from llama_py import _llama_model as M
from llama_py import _llama_vocab as V

from tokenizer_corpus import CORPUS

tokenizers = pytest.importorskip("tokenizers")
gguf = pytest.importorskip("gguf")

C = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = C + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")


def case_words(m="", digits="", punct_tail=r"[\r\n/]*"):
    up = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}" + m + "]"
    lo = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}" + m + "]"
    return (r"[^\r\n\p{L}\p{N}]?" + up + "*" + lo + "+" + C + "?|[^\\r\\n\\p{L}\\p{N}]?" + up + "+" + lo + "*" + C
            + r"?|\p{N}" + digits + r"| ?[^\s\p{L}\p{N}]+" + punct_tail + r"|\s*[\r\n]+|\s+(?!\S)|\s+")


DS3_WORDS = (r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
             r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CJK_KANA = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
BLOOM = " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"

# pre name -> (regexes as tokenizer.json has them, ignore_merges)
FAMILIES = {
    "default": ([r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"], False),
    "llama3": ([LLAMA3], True),
    "smaug-bpe": ([LLAMA3], False),
    "qwen2": ([QWEN2], False),
    "gpt-2": ([GPT2], False),
    "starcoder": ([r"\p{N}", GPT2], False),
    "qwen35": ([C + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
               False),
    "jais-2": ([C + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)"
                r"|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)"
                r"|\s{1,2}(?!\S)|\s{1}"], False),
    "deepseek-v3": ([r"\p{N}{1,3}", CJK_KANA, DS3_WORDS], False),
    "spark2_5": ([r"\p{N}{1,3}", CJK_KANA, DS3_WORDS.replace(r"[\r\n]*|\s*[\r\n]+", r"|[\r\n]"), r"\p{N}"], False),
    "youtu": (["[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c\u3001-\u303f"
               "\ufe30-\ufe4f]+|[\u3105-\u312f]+|" + CJK_KANA, case_words()], True),
    "bloom": ([BLOOM], False),
    "viking": ([BLOOM, r"\p{N}"], False),
    "tekken": ([r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
                r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+"], True),
    "chameleon": (["<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", r"\p{N}",
                   r"[\p{P}!-/:-@\[-`{-~]", GPT2], False),
    "gpt-4o": ([case_words(digits="{1,3}")], False),
    "granite-embed-multi-97m": ([r"[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+" + C
                                 + r"?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*" + C
                                 + r"?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"], True),
    "tiny_aya": ([r"\d{1,3}(?=(?:\d{3})*\b)", case_words(digits="{1,3}")], False),
    "kimi-k2": ([r"[\p{Han}]+|" + case_words(m="&&[^\\p{Han}]", digits="{1,3}", punct_tail=r"[\r\n]*")], False),
    "superbpe": ([r"\p{N}+", r"(?=(\d{3})+(?!\d))"], False),
    "bailingmoe": ([r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]"
                    r"|\s+(?!\S)|\s+"], False),
    "seed-coder": ([C + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+"], False),
    "ufakzeka": ([r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"], False),
    "afmoe": ([r"\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))",
               "[\u4e00-\u9fff\u3400-\u4dbf\u8c48-\ufaff\u3040-\u309f\u30a0-\u30ff\uff65-\uff9f\u2f00-\u2fdf"
               "\u0e40-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f\uaa60-\uaa7f\ua9e0-\ua9ff\uac00-\ud7af"
               "\u1100-\u11ff]+", DS3_WORDS], False),
    "laguna": (["[^\\n]+|[\\n]+", QWEN2], False),
    "exaone-moe": ([C + r"|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?"
                    r"|\s*[\r\n]|\s+(?!\S)|\s+"], False),
    "minicpm5": ([r"\p{N}{1,3}", C + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                  r"|\s+(?!\S)|\s+"], True),
    "falcon": ([r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"], False),
    "deepseek-coder": (["[\\r\\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", r"\p{N}"],
                       False),
}

EXTRA = [
    "def f(x):\n    return x**2  # square\n\n\nclass A:\n\tpass\n",
    "价格是1234567元，日本語のテキスト、カタカナ。한국어 텍스트입니다. ㄅㄆㄇ",
    "Größe ÄÖÜ naïve café résumé e\u0301 a\u0300\u0301 ﬁ ℌ𝔢𝔩𝔩𝔬 ΚΑΛΗΜΕΡΑ καλημέρα Привет МИР",
    "हिन्दी भाषा का पाठ। বাংলা ভাষা। தமிழ் ภาษาไทย ພາສາລາວ ខ្មែរ မြန်မာ",
    "12 123 1234 12345 123456 1234567 ١٢٣٤ ۱۲۳ १२३ 3.5 1,000,000 0x1F 1e-9",
    "<sentinel:12> IMGIMGABCZ IMGIMGAAAAAZ tabs\t\tand  double  spaces    four",
    "I'M Don'T we'LL you'RE it'S THEY'VE  ſ 'ſ 'K",
    "😀👍🏽👨‍👩‍👧‍👦 emoji! ... ?? !! … 。，、।۔،",
    "camelCaseWords HTTPServer getHTTPResponse XMLHttpRequest iPhone eBay McDonald's",
    "   leading and trailing   \n\n  \r\n \t ",
    "path/to/file.txt https://example.com/a?b=c&d=e#frag user@example.org",
]


def _corpus():
    rng = random.Random(3)
    pool = list(CORPUS) + EXTRA
    mixes = ["".join(rng.choice(pool)[:40] for _ in range(4)) for _ in range(60)]
    return [t for t in pool + mixes if t]


def _train(regexes, ignore_merges):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    steps = [pre_tokenizers.Split(Regex(rx), behavior="isolated") for rx in regexes]
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    texts = _corpus()
    tok.train_from_iterator(texts * 2, trainer=trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = model["vocab"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    if ignore_merges:
        tok.model = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges], ignore_merges=True)
    return tok, vocab, merges


def _write_gguf(path: Path, pre: str, vocab: dict, merges):
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", pre)
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.merges", merges)
    w.add_array("tokenizer.ggml.token_type", [1] * len(tokens))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def _ours(path: Path):
    p = M.llama_model_default_params()
    p.vocab_only = True
    m = M.llama_model_load_from_file(str(path).encode(), p)
    assert m, f"{path} does not load"
    return m


def _tokenize(vocab, text: str):
    data = text.encode("utf-8")
    n = -V.llama_tokenize(vocab, data, len(data), None, 0, False, False)
    buf = (V.llama_token * max(n, 1))()
    assert V.llama_tokenize(vocab, data, len(data), buf, n, False, False) == n
    return list(buf[:n])


@pytest.mark.parametrize("pre", sorted(FAMILIES))
def test_family_matches_hf_tokenizers(tmp_path, lib_path, pre):
    regexes, ignore_merges = FAMILIES[pre]
    tok, vocab, merges = _train(regexes, ignore_merges)
    path = tmp_path / f"{pre}.gguf"
    _write_gguf(path, pre, vocab, merges)
    m = _ours(path)
    try:
        v = M.llama_model_get_vocab(m)
        bad = []
        for text in _corpus():
            want = tok.encode(text, add_special_tokens=False).ids
            got = _tokenize(v, text)
            if got != want:
                inv = {i: t for t, i in vocab.items()}
                bad.append((text, [inv.get(i) for i in got], [inv.get(i) for i in want]))
        assert not bad, f"{pre}: {len(bad)} texts differ; first: {bad[:2]}"
    finally:
        M.llama_model_free(m)


def test_unknown_pre_is_refused_by_name(tmp_path, lib_path):
    tok, vocab, merges = _train(FAMILIES["gpt-2"][0], False)
    path = tmp_path / "bad.gguf"
    _write_gguf(path, "no-such-pre-tokenizer", vocab, merges)
    p = M.llama_model_default_params()
    p.vocab_only = True
    assert not M.llama_model_load_from_file(str(path).encode(), p)


@pytest.mark.parametrize("pre", ["gpt-4o", "kimi-k2", "deepseek-v3", "exaone-moe", "tiny_aya", "chameleon", "bloom",
                                 "deepseek-coder", "qwen35", "jais-2"])
def test_family_random_text_matches_hf(tmp_path, lib_path, pre):
    """Random text over all of Unicode (no surrogates) and over a small alphabet of the
    characters the regexes treat specially."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import HealthCheck, given, settings, strategies as st
    regexes, ignore_merges = FAMILIES[pre]
    tok, vocab, merges = _train(regexes, ignore_merges)
    path = tmp_path / f"{pre}.gguf"
    _write_gguf(path, pre, vocab, merges)
    m = _ours(path)
    v = M.llama_model_get_vocab(m)
    tricky = " \t\n\r'sStTdD1234567890aAzZ_-.,!?/<>:IMGZ中日本ア한\u0301\u0308\u200dé😀\u3000\u2028\xa0"
    text = st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60),
                     st.text(alphabet=st.sampled_from(tricky), max_size=60))

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(text)
    def check(t):
        assert _tokenize(v, t) == tok.encode(t, add_special_tokens=False).ids

    try:
        check()
    finally:
        M.llama_model_free(m)


def _write_gguf_model(path: Path, model: str, pre: str, tokens, merges, types, lowercase=None):
    w = gguf.GGUFWriter(str(path), "llama")
    if lowercase is not None:
        w.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)
    w.add_string("tokenizer.ggml.model", model)
    w.add_string("tokenizer.ggml.pre", pre)
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.merges", merges)
    w.add_array("tokenizer.ggml.token_type", types)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


@pytest.mark.parametrize("lowercase", [False, True])
def test_whitespace_model_matches_hf(tmp_path, lib_path, lowercase):
    """tokenizer.ggml.model "whitespace" (pre "whitespace"): words between whitespace, BPE over
    characters (no byte alphabet); HF: WhitespaceSplit and a character-level BPE. With
    tokenizer.ggml.normalizer.lowercase (jina-embeddings-v2-base-zh), HF's Lowercase normalizer
    first; texts whose lowercase form changes length (the one-to-many mappings such as İ, which
    llama.cpp maps one code point to one) are left out."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    texts = _corpus()
    if lowercase:
        texts = [t for t in texts if all(len(c.lower()) == 1 for c in t)]
    tok.train_from_iterator(texts, trainer=trainers.BpeTrainer(vocab_size=3000, show_progress=False))
    model = json.loads(tok.to_str())["model"]
    vocab = model["vocab"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    path = tmp_path / "ws.gguf"
    _write_gguf_model(path, "whitespace", "whitespace", tokens, merges, [1] * len(tokens),
                      lowercase=lowercase if lowercase else None)
    m = _ours(path)
    try:
        v = M.llama_model_get_vocab(m)
        bad = [t for t in texts if _tokenize(v, t) != tok.encode(t, add_special_tokens=False).ids]
        assert not bad, f"{len(bad)} differ; first {bad[:2]!r}"
        if lowercase:
            assert _tokenize(v, "HELLO World") == _tokenize(v, "hello world")
    finally:
        M.llama_model_free(m)


def test_hybriddna_kmers(tmp_path, lib_path):
    """tokenizer.ggml.model "hybriddna": text outside <dna>...</dna> is byte-level BPE (as HF
    tokenizers gives it), the DNA inside is 6-base k-mers (upper-cased, the last padded with A,
    looked up as the bases followed by U+E000, else <oov>), as the converter's vocabulary lays them
    out; the k-mers read back as their bases."""
    import itertools
    tok, vocab, merges = _train(FAMILIES["gpt-2"][0], False)
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    types = [1] * len(tokens)
    base = len(tokens)
    tokens += ["<dna>", "</dna>", "<oov>"]
    types += [3, 3, 3]
    kmer_id = {}
    for k in itertools.product("ACGT", repeat=6):
        kmer_id["".join(k)] = len(tokens)
        tokens.append("".join(k) + "\ue000")
        types.append(1)
    path = tmp_path / "dna.gguf"
    _write_gguf_model(path, "hybriddna", "gpt-2", tokens, merges, types)

    def want(text):
        out = []
        while text:
            i = text.find("<dna>")
            if i < 0:
                return out + tok.encode(text, add_special_tokens=False).ids
            out += tok.encode(text[:i], add_special_tokens=False).ids if i else []
            out.append(base)
            j = text.find("</dna>", i + 5)
            body = text[i + 5:] if j < 0 else text[i + 5:j]
            for s in range(0, len(body), 6):
                k = body[s:s + 6].upper().ljust(6, "A")
                out.append(kmer_id.get(k, base + 2))
            if j < 0:
                return out
            out.append(base + 1)
            text = text[j + 6:]
        return out

    m = _ours(path)
    try:
        v = M.llama_model_get_vocab(m)
        for text in ["plain text only", "<dna>ACGTACGTAC</dna>", "gene <dna>acgtNNacgtac</dna> tail <dna>GG",
                     "<dna></dna><dna>A</dna>x", "a</dna>b<dna>CCCCCCCCCCCC</dna>"]:
            assert _tokenize(v, text) == want(text), text
        ids = _tokenize(v, "<dna>ACGTACGTAC</dna>")
        data = (V.llama_token * len(ids))(*ids)
        import ctypes
        buf = ctypes.create_string_buffer(64)
        n = V.llama_detokenize(v, data, len(ids), buf, 64, False, True)
        assert buf.raw[:n] == b"<dna>ACGTACGTACAA</dna>"
    finally:
        M.llama_model_free(m)


# Every tokenizer.ggml.pre name llama.cpp 0.3.36's loader accepts (src/llama-vocab.cpp), and
# whether the name's family turns add_bos on.
LLAMA_CPP_PRE_NAMES = {
    "default": False, "minicpm5": False, "llama3": True, "llama-v3": True, "llama-bpe": True, "falcon3": True,
    "falcon-h1": True, "pixtral": True, "midm-2.0": True, "lfm2": True, "jina-v5-nano": True,
    "deepseek-llm": False, "deepseek-coder": False, "deepseek-v3": False, "spark2_5": False, "youtu": False,
    "falcon": False, "mpt": False, "starcoder": False, "gpt-2": False, "phi-2": False, "jina-es": False,
    "jina-de": False, "gigachat": False, "jina-v2-es": False, "jina-v2-de": False, "a.x-4.0": False,
    "mellum": False, "modern-bert": False, "jais-2": False, "gemma4": True, "granite-embed-multi-311m": True,
    "sarvam-moe": False, "jina-v1-en": False, "jina-v2-code": False, "roberta-bpe": False, "whitespace": False,
    "refact": False, "command-r": False, "qwen2": False, "deepseek-r1-qwen": False, "kormo": False,
    "f2llmv2": False, "qwen35": False, "stablelm2": False, "olmo": False, "dbrx": False, "smaug-bpe": False,
    "poro-chat": False, "chatglm-bpe": False, "glm4": False, "glm5": False, "viking": False, "jais": False,
    "tekken": True, "smollm": False, "codeshell": False, "bloom": False, "gpt3-finnish": False, "exaone": False,
    "exaone4": False, "exaone-moe": False, "chameleon": True, "minerva-7b": False, "megrez": False,
    "gpt-4o": False, "llama4": False, "kanana2": False, "talkie": False, "granite-embed-multi-97m": False,
    "tiny_aya": False, "cohere2moe": False, "superbpe": False, "trillion": False, "granite-docling": False,
    "bailingmoe": False, "bailingmoe2": False, "llada-moe": False, "seed-coder": False, "hunyuan": False,
    "hunyuan-dense": False, "hy_v4": False, "joyai-llm": False, "kimi-k2": False, "ufakzeka": False,
    "grok-2": False, "afmoe": False, "laguna": False, "minimax-m2": False, "solar-open": False, "mellum2": False,
}


@pytest.fixture(scope="module")
def gpt2_trained():
    return _train(FAMILIES["gpt-2"][0], False)


@pytest.mark.parametrize("pre", sorted(LLAMA_CPP_PRE_NAMES))
def test_every_llama_cpp_pre_name_loads(tmp_path, lib_path, gpt2_trained, pre):
    tok, vocab, merges = gpt2_trained
    path = tmp_path / "v.gguf"
    _write_gguf(path, pre, vocab, merges)
    m = _ours(path)
    try:
        v = M.llama_model_get_vocab(m)
        assert V.llama_vocab_get_add_bos(v) == LLAMA_CPP_PRE_NAMES[pre]
        assert all(0 <= i < len(vocab) for i in _tokenize(v, "Hello, world! 123 中文 \n\n  x"))
    finally:
        M.llama_model_free(m)


def test_unknown_pre_name_is_logged(tmp_path, lib_path, gpt2_trained):
    from model_util import LogCapture
    tok, vocab, merges = gpt2_trained
    path = tmp_path / "bad.gguf"
    _write_gguf(path, "qwen99-not-a-name", vocab, merges)
    p = M.llama_model_default_params()
    p.vocab_only = True
    with LogCapture() as log:
        assert not M.llama_model_load_from_file(str(path).encode(), p)
    assert "unknown pre-tokenizer" in log.text() and "qwen99-not-a-name" in log.text()


# Families whose published tokenizer.json (Split steps, then ByteLevel) the converter maps to a
# GGUF pre name: family key -> the name it writes.
CONVERT_NAMES = {"llama3": "llama-bpe", "smaug-bpe": "llama-bpe", "qwen2": "qwen2", "gpt-2": "gpt-2",
                 "qwen35": "qwen35", "deepseek-v3": "deepseek-v3", "deepseek-coder": "deepseek-coder",
                 "gpt-4o": "gpt-4o", "tekken": "tekken", "kimi-k2": "kimi-k2", "seed-coder": "seed-coder",
                 "bailingmoe": "bailingmoe", "exaone-moe": "exaone-moe", "jais-2": "jais-2", "superbpe": "superbpe",
                 "minicpm5": "minicpm5", "laguna": "laguna", "youtu": "youtu", "tiny_aya": "tiny_aya", "bloom": "bloom"}


@pytest.mark.parametrize("family", sorted(CONVERT_NAMES))
def test_converter_names_the_pre_tokenizer(family):
    """llama_py.convert reads the pre-tokenizer of a tokenizer.json that HF tokenizers wrote with
    the family's published regexes."""
    from llama_py import convert as C
    tok, _, _ = _train(*FAMILIES[family])
    assert C.detect_bpe_pre(json.loads(tok.to_str())) == CONVERT_NAMES[family]


def test_converter_deepseek_llm_pre():
    """deepseek-llm's regexes as tokenizer.json writes them (llama.cpp lists the same ones)."""
    from llama_py import convert as C
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    letters = ("\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
               "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
               "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
               "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
               "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
               "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
               "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
               "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
               "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
               "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb"
               "\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+")
    regexes = ["[\\r\\n]", letters, "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", "\\s+$",
               "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", "\\p{N}+"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r), behavior="isolated") for r in regexes]
                                                + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    assert C.detect_bpe_pre(json.loads(tok.to_str())) == "deepseek-llm"
