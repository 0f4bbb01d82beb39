"""Encoders (bert, nomic-bert) and pooled embeddings against transformers.

Tiny random-weight `BertModel`, `BertForSequenceClassification` and `NomicBertModel` with a
small WordPiece tokenizer are converted by our `convert` (and BERT also by llama.cpp's
converter); their embeddings for every pooling type (NONE per token, MEAN, CLS, LAST, RANK)
for a batch of texts of different lengths in one llama_decode must match transformers'
last_hidden_state pooled the same way (fp32, 1e-4 relative).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

import llama_py.llama_cpp as L
from model_util import Ctx, Model

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

NONE, MEAN, CLS, LAST, RANK = 0, 1, 2, 3, 4
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "hello", "world", "token", "embedding",
         "model", "search", "query", "document", "answer", "question", "llama", "python"]
TEXTS = ["hello world", "the quick brown fox jumps over the lazy dog", "search query",
         "a document about llamas, embeddings and python!", "question"]


def _tokenizer(d: Path):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list(",.!?'")
    vocab = specials + letters + ["##" + c for c in letters[:26]] + WORDS + ["##s", "##ing", "##ed"]
    vocab = list(dict.fromkeys(vocab))
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(specials)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                                cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(d)
    return fast, len(vocab)


def _build(root: Path, kind: str, seed: int):
    d = root / kind
    d.mkdir()
    tok, n_vocab = _tokenizer(d)
    torch.manual_seed(seed)
    common = dict(vocab_size=n_vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=128, max_position_embeddings=64, type_vocab_size=2)
    if kind == "nomic":
        cfg = transformers.NomicBertConfig(**common)
        model = transformers.NomicBertModel(cfg)
    elif kind == "rerank":
        cfg = transformers.BertConfig(**common, num_labels=1)
        model = transformers.BertForSequenceClassification(cfg)
    else:
        cfg = transformers.BertConfig(**common)
        model = transformers.BertModel(cfg)
    with torch.no_grad():  # LayerNorms away from 1 / 0 so that their weights matter
        for n, p in model.named_parameters():
            if "LayerNorm" in n or "layernorm" in n:
                p.add_(torch.randn_like(p) * 0.2)
    model.eval()
    model.save_pretrained(d)
    if kind == "bert":  # a sentence-transformers model: its pooling is mean, as the file will say
        import json
        (d / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                                                    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
        (d / "1_Pooling").mkdir()
        (d / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 64, "pooling_mode_mean_tokens": True}))
    return d, model, tok


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, lib_path) -> Dict[str, tuple]:
    from llama_py.convert import convert
    root = tmp_path_factory.mktemp("enc")
    out = {}
    for i, kind in enumerate(["bert", "nomic", "rerank"]):
        d, model, tok = _build(root, kind, 100 + i)
        gguf_path = root / f"{kind}.gguf"
        convert(d, gguf_path, outtype="f32", progress=None)
        out[kind] = (d, model, tok, gguf_path)
    return out


def _hf_hidden(model, ids: List[int]) -> np.ndarray:
    with torch.no_grad():
        x = torch.tensor([ids])
        base = model.bert if hasattr(model, "bert") else model
        return base(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state[0].double().numpy()


def _hf_pool(h: np.ndarray, pooling: int) -> np.ndarray:
    return {NONE: h, MEAN: h.mean(axis=0), CLS: h[0], LAST: h[-1]}[pooling]


def _ours(path: Path, token_lists: List[List[int]], pooling: int, flash: int = 0, interleave: bool = False) -> List[np.ndarray]:
    with Model(path) as m, Ctx(m, n_ctx=256, n_batch=256, n_ubatch=256, n_seq_max=8, embeddings=True,
                               pooling_type=pooling, flash_attn_type=flash) as c:
        rows = [(t, i, [s], True) for s, toks in enumerate(token_lists) for i, t in enumerate(toks)]
        if interleave:  # the sequences' tokens alternate in the batch (rows keep their order per sequence)
            rows = sorted(rows, key=lambda r: (r[1], r[2][0]))
        assert c.decode_rows(rows) == 0
        if pooling == NONE:
            row_of = {(r[2][0], r[1]): k for k, r in enumerate(rows)}  # (sequence, position) -> batch row
            return [np.stack([c.embedding(row_of[(s, i)]) for i in range(len(toks))]) for s, toks in enumerate(token_lists)]
        if pooling == RANK:
            return [np.array([c.embedding_seq(s)[0]]) for s in range(len(token_lists))]
        return [c.embedding_seq(s) for s in range(len(token_lists))]


def _close(a, b, rtol=1e-4):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-6)
    assert err < rtol, f"max relative error {err:.2e}"


@pytest.mark.parametrize("kind", ["bert", "nomic"])
@pytest.mark.parametrize("pooling", [NONE, MEAN, CLS, LAST])
def test_embeddings_match_transformers(tiny, kind, pooling):
    d, model, tok, path = tiny[kind]
    lists = [tok(t)["input_ids"] for t in TEXTS]
    assert len({len(x) for x in lists}) > 2
    ours = _ours(path, lists, pooling)
    for ids, got in zip(lists, ours):
        _close(got, _hf_pool(_hf_hidden(model, ids), pooling))


# The encoder's attention runs per sequence (slots grouped by sequence, padded to the longest)
# when that costs less than one masked product over the whole batch: TEXTS take the grouped
# layout (5 x 6 x 6 slots against 22 x 22), one long text beside short ones the single group
# (4 x 38 x 38 against 49 x 49); both with and without flash attention, with the batch's rows in
# sequence order or interleaved.
SHORT = ["hello world", "search query", "question", "the quick brown fox", "lazy dog jumps"]
LONG = ["the quick brown fox jumps over the lazy dog " * 4, "question", "search query", "hello world"]


@pytest.mark.parametrize("texts", ["grouped", "single"])
@pytest.mark.parametrize("flash", [0, 1])
@pytest.mark.parametrize("interleave", [False, True])
def test_encode_layouts(tiny, texts, flash, interleave):
    d, model, tok, path = tiny["nomic"]
    lists = [tok(t)["input_ids"] for t in (SHORT if texts == "grouped" else LONG)]
    ours = _ours(path, lists, NONE, flash=flash, interleave=interleave)
    for ids, got in zip(lists, ours):
        _close(got, _hf_hidden(model, ids))


def test_tokens_equal_hf(tiny):
    d, model, tok, path = tiny["bert"]
    with Model(path, vocab_only=True) as m:
        for text in TEXTS:
            data = text.encode()
            buf = (L.llama_token * 256)()
            n = L.llama_tokenize(m.vocab, data, len(data), buf, 256, True, False)
            assert list(buf[:n]) == tok(text)["input_ids"], text


def test_rerank_score_matches_transformers(tiny):
    d, model, tok, path = tiny["rerank"]
    pairs = [("search query", "a document about llamas"), ("question", "the answer"), ("hello", "world!")]
    lists = [tok(q, p)["input_ids"] for q, p in pairs]
    with torch.no_grad():
        want = [model(input_ids=torch.tensor([ids])).logits[0, 0].item() for ids in lists]
    got = _ours(path, lists, RANK)
    _close(np.array([g[0] for g in got]), np.array(want))


def test_encoder_decode_is_encode_and_leaves_no_cache(tiny):
    d, model, tok, path = tiny["bert"]
    ids = tok("hello world")["input_ids"]
    with Model(path) as m, Ctx(m, n_ctx=64, n_batch=64, embeddings=True, pooling_type=MEAN) as c:
        rows = [(t, i, [0], True) for i, t in enumerate(ids)]
        assert c.decode_rows(rows) == 0
        first = c.embedding_seq(0)
        assert c.pos_max(0) == -1          # nothing kept between calls
        assert c.decode_rows(rows) == 0    # the same text again: the same embedding
        assert np.array_equal(first, c.embedding_seq(0))
        assert not L.llama_model_has_encoder(m.ptr)   # as llama.cpp: only T5-style models
        too_far = [(ids[0], 64, [0], True)]
        assert c.decode_rows(too_far) != 0  # past the learned position table


def test_rank_needs_a_head(tiny):
    d, model, tok, path = tiny["bert"]
    with Model(path) as m:
        cp = L.llama_context_default_params()
        cp.embeddings = True
        cp.pooling_type = RANK
        assert not L.llama_init_from_model(m.ptr, cp)


def _nomic_original(d: Path, dst: Path) -> Path:
    """d with Nomic's own config.json (the published models' spelling), which llama.cpp's
    converter requires for nomic-bert."""
    import json
    import shutil
    shutil.copytree(d, dst)
    c = json.loads((d / "config.json").read_text())
    orig = {"architectures": ["NomicBertModel"], "model_type": "nomic_bert", "n_embd": c["hidden_size"],
            "n_head": c["num_attention_heads"], "n_layer": c["num_hidden_layers"], "n_inner": c["intermediate_size"],
            "n_positions": 8192, "max_trained_positions": 2048, "activation_function": "swiglu", "causal": False,
            "qkv_proj_bias": False, "mlp_fc1_bias": False, "mlp_fc2_bias": False, "prenorm": False,
            "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False, "rotary_emb_scale_base": None,
            "rotary_emb_base": c["rope_parameters"]["rope_theta"], "layer_norm_epsilon": c["layer_norm_eps"],
            "vocab_size": c["vocab_size"], "type_vocab_size": c["type_vocab_size"]}
    # transformers 5 reads this model type itself (its defaults would fill in the rest)
    orig.update({k: c[k] for k in ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size",
                                   "layer_norm_eps", "rope_parameters")})
    (dst / "config.json").write_text(json.dumps(orig))
    return dst


@pytest.mark.parametrize("kind,converter", [("bert", "llama.cpp"), ("nomic", "ours"), ("nomic", "llama.cpp")])
def test_converted_files_match_transformers(tiny, kind, converter, tmp_path):
    """A GGUF written by llama.cpp's own convert_hf_to_gguf.py (0.3.36 sdist) gives transformers'
    embeddings too (real files come from that converter); nomic-bert from Nomic's own config.json
    spelling, by both converters."""
    from upstream_convert import convert_with_llama_cpp
    from llama_py.convert import convert
    d, model, tok, _ = tiny[kind]
    if kind == "nomic":
        d = _nomic_original(d, tmp_path / "orig")
    path = tmp_path / "m.gguf"
    if converter == "ours":
        convert(d, path, outtype="f32", progress=None)
    else:
        convert_with_llama_cpp(d, path, "f32", pre="default")
    lists = [tok(t)["input_ids"] for t in TEXTS]
    for pooling in (NONE, MEAN, CLS):
        for ids, got in zip(lists, _ours(path, lists, pooling)):
            _close(got, _hf_pool(_hf_hidden(model, ids), pooling))


def test_llama_embed_with_an_encoder(tiny):
    """Llama(embedding=True) takes the file's pooling (mean here), packs the texts into shared
    decodes, normalizes as llama-cpp-python's embed(normalize=True) does (unit L2 length)."""
    from llama_py import Llama
    d, model, tok, path = tiny["bert"]
    want = [_hf_hidden(model, tok(t)["input_ids"]).mean(axis=0) for t in TEXTS]
    with Llama(str(path), embedding=True, n_ctx=64, verbose=False) as llm:
        assert llm.pooling_type() == MEAN
        got = llm.embed(TEXTS)
        for g, w in zip(got, want):
            _close(g, w)
        unit = llm.embed(TEXTS[1], normalize=True)
        _close(unit, want[1] / np.linalg.norm(want[1]))
        r = llm.create_embedding(TEXTS[:2])
        assert [x["index"] for x in r["data"]] == [0, 1]
        _close(r["data"][1]["embedding"], want[1])
        assert r["usage"]["prompt_tokens"] == sum(len(tok(t)["input_ids"]) for t in TEXTS[:2])
        # dimensions (OpenAI's parameter): the first n components, renormalized
        r = llm.create_embedding(TEXTS[:2], dimensions=16)
        for d_, w in zip(r["data"], want[:2]):
            _close(d_["embedding"], w[:16] / np.linalg.norm(w[:16]))
        for bad in (65, 0):
            with pytest.raises(ValueError, match="dimensions"):
                llm.create_embedding(TEXTS[:1], dimensions=bad)


def test_llama_rerank(tiny):
    from llama_py import Llama
    d, model, tok, path = tiny["rerank"]
    q = "search query"
    docs = ["a document about llamas", "the answer", "hello world!", "question"]
    with torch.no_grad():
        want = [model(input_ids=torch.tensor([tok(q, x)["input_ids"]])).logits[0, 0].item() for x in docs]
    with Llama(str(path), embedding=True, n_ctx=64, verbose=False) as llm:
        assert llm.pooling_type() == RANK
        _close(np.array(llm.rerank(q, docs)), np.array(want))


def test_llama_rerank_llama_cpp_file(tiny, tmp_path):
    """A reranker converted by llama.cpp's converter (no add_* keys: WPM's defaults, BOS and SEP
    added) takes the pair as transformers does: [CLS] q [SEP] d [SEP]. That converter leaves
    BertForSequenceClassification's pooler (dense + tanh) out of the file, so the score is
    transformers' classifier on the [CLS] hidden state itself."""
    from upstream_convert import convert_with_llama_cpp
    from llama_py import Llama
    d, model, tok, _ = tiny["rerank"]
    path = tmp_path / "rr.gguf"
    convert_with_llama_cpp(d, path, "f32", pre="default")
    q, docs = "search query", ["a document about llamas", "the answer", "question"]
    want = [model.classifier(torch.tensor(_hf_hidden(model, tok(q, x)["input_ids"])[0], dtype=torch.float32)).item()
            for x in docs]
    # that converter writes no pooling type for a classifier: RANK is asked for
    with Llama(str(path), embedding=True, n_ctx=64, pooling_type=RANK, verbose=False) as llm:
        assert llm._rerank_tokens(q, docs[0]) == tok(q, docs[0])["input_ids"]
        _close(np.array(llm.rerank(q, docs)), np.array(want))


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_pair_tokens_follow_the_tokenizers_pair_template(kind):
    """pair_tokens from a vocabulary's add_bos / add_eos / add_sep, as llama.cpp's converter sets
    them for each post-processor (BERT: BOS and SEP; RoBERTa / XLM-R, the bge-rerankers: all
    three, EOS = SEP = </s>), equals the HF tokenizers' pair template."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from llama_py._runtime.embed import pair_tokens
    vocab = {"[PAD]": 0, "<s>": 1, "</s>": 2, "[CLS]": 3, "[SEP]": 4, "a": 5, "b": 6, "c": 7}
    t = Tokenizer(models.WordLevel(vocab, unk_token="[PAD]"))
    if kind == "bert":
        t.post_processor = processors.BertProcessing(("[SEP]", 4), ("[CLS]", 3))
        got = pair_tokens([5, 6], [7], bos=3, eos=-1, sep=4, add_bos=True, add_eos=False, add_sep=True)
    else:
        t.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 1))
        got = pair_tokens([5, 6], [7], bos=1, eos=2, sep=2, add_bos=True, add_eos=True, add_sep=True)
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    assert got == t.encode("a b", "c").ids


def test_langchain_embeddings_on_an_encoder(tiny, lib_path):
    pytest.importorskip("langchain_community", reason="langchain_community is not installed")
    import json
    import os
    import subprocess
    import sys
    import textwrap
    d, model, tok, path = tiny["bert"]
    code = textwrap.dedent("""
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import llama_py
        llama_py.install_as_llama_cpp()
        from langchain_community.embeddings import LlamaCppEmbeddings
        emb = LlamaCppEmbeddings(model_path=sys.argv[1], n_ctx=64, verbose=False)
        print(json.dumps({"query": emb.embed_query(sys.argv[2]), "docs": emb.embed_documents(sys.argv[3:])}))
    """)
    env = dict(os.environ, LLAMA_PY_LIB=str(lib_path))
    p = subprocess.run([sys.executable, "-c", code, str(path), TEXTS[0], *TEXTS[1:3]], capture_output=True,
                       text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    want = [_hf_hidden(model, tok(t)["input_ids"]).mean(axis=0) for t in TEXTS[:3]]
    unit = [w / np.linalg.norm(w) for w in want]
    # LangChain asks for normalized vectors (its default normalize_embeddings) or raw ones, by version
    q = np.asarray(r["query"])
    _close(q, unit[0] if abs(np.linalg.norm(q) - 1) < 1e-6 else want[0])
    assert len(r["docs"]) == 2
    for g, w, u in zip(r["docs"], want[1:], unit[1:]):
        _close(g, u if abs(np.linalg.norm(g) - 1) < 1e-6 else w)


def test_llamaindex_embeddings_through_the_server(tiny):
    """LlamaIndex's embedding class for OpenAI-compatible endpoints (llama-index-embeddings-
    openai-like) on our /v1/embeddings: its query, text and batch calls give the unit vectors of
    transformers' mean-pooled hidden states, and dimensions passes through."""
    pytest.importorskip("llama_index.embeddings.openai_like",
                        reason="llama-index-embeddings-openai-like is not installed (pip install -r requirements-frameworks.txt)")
    from server_util import need_server_packages, running_server
    need_server_packages()
    from llama_index.embeddings.openai_like import OpenAILikeEmbedding
    from llama_py.server.app import ModelEntry
    _, bert, btok, bpath = tiny["bert"]
    want = [_hf_hidden(bert, btok(t)["input_ids"]).mean(axis=0) for t in TEXTS]
    unit = [w / np.linalg.norm(w) for w in want]
    with running_server([ModelEntry.load("bert", str(bpath), n_slots=1, n_ctx=64)]) as (url, app):
        emb = OpenAILikeEmbedding(model_name="bert", api_base=url + "/v1", api_key="unused", embed_batch_size=2)
        _close(emb.get_query_embedding(TEXTS[0]), unit[0])
        _close(emb.get_text_embedding(TEXTS[1]), unit[1])
        got = emb.get_text_embedding_batch(TEXTS)  # three requests of at most 2 texts
        assert len(got) == len(TEXTS)
        for g, u in zip(got, unit):
            _close(g, u)
        short = OpenAILikeEmbedding(model_name="bert", api_base=url + "/v1", api_key="unused", dimensions=16)
        w = want[2][:16]
        _close(short.get_text_embedding(TEXTS[2]), w / np.linalg.norm(w))


def test_server_embeddings_rerank_and_refused_generation(tiny):
    """/v1/embeddings with an encoder (the openai client, float and base64), /v1/rerank and
    /rerank in llama-server's shape, and a generation request to the encoder: a clear 400."""
    from server_util import need_server_packages, running_server
    need_server_packages()
    import base64
    import httpx
    import openai
    from llama_py.server.app import ModelEntry
    _, bert, btok, bpath = tiny["bert"]
    _, rr, rtok, rpath = tiny["rerank"]
    e1 = ModelEntry.load("bert", str(bpath), n_slots=1, n_ctx=64)
    e2 = ModelEntry.load("reranker", str(rpath), n_slots=1, n_ctx=64)
    with running_server([e1, e2]) as (url, app):
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
        r = client.embeddings.create(model="bert", input=TEXTS)
        assert len(r.data) == len(TEXTS)
        for d, t in zip(r.data, TEXTS):
            want = _hf_hidden(bert, btok(t)["input_ids"]).mean(axis=0)
            _close(d.embedding, want / np.linalg.norm(want))
        r16 = client.embeddings.create(model="bert", input=TEXTS[:2], dimensions=16)
        for d, t in zip(r16.data, TEXTS):
            want = _hf_hidden(bert, btok(t)["input_ids"]).mean(axis=0)[:16]
            _close(d.embedding, want / np.linalg.norm(want))
        too_many = httpx.post(url + "/v1/embeddings", json={"model": "bert", "input": "x", "dimensions": 65}, timeout=60)
        assert too_many.status_code == 400 and too_many.json()["error"]["param"] == "dimensions"
        # concurrent requests share decodes (their inputs merged); each still gets its own vectors
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda i: client.embeddings.create(model="bert", input=[TEXTS[i % 5], TEXTS[(i + 2) % 5]]),
                              range(16)))
        for i, res in enumerate(got):
            for d, t in zip(res.data, (TEXTS[i % 5], TEXTS[(i + 2) % 5])):
                _close(d.embedding, r.data[TEXTS.index(t)].embedding)
        raw = httpx.post(url + "/v1/embeddings", json={"model": "bert", "input": [btok(TEXTS[0])["input_ids"]],
                                                        "encoding_format": "base64"}, timeout=120).json()
        v = np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), dtype="<f4")
        _close(v, r.data[0].embedding)

        q, docs = "search query", ["a document about llamas", "the answer", "hello world!"]
        with torch.no_grad():
            want = [rr(input_ids=torch.tensor([rtok(q, x)["input_ids"]])).logits[0, 0].item() for x in docs]
        for path in ("/v1/rerank", "/rerank"):
            res = httpx.post(url + path, json={"model": "reranker", "query": q, "documents": docs, "top_n": 2,
                                               "return_documents": True}, timeout=120)
            assert res.status_code == 200, res.text
            body = res.json()
            order = sorted(range(3), key=lambda i: -want[i])[:2]
            assert [x["index"] for x in body["results"]] == order
            _close(np.array([x["relevance_score"] for x in body["results"]]), np.array([want[i] for i in order]))
            assert body["results"][0]["document"]["text"] == docs[order[0]]
            assert body["usage"]["prompt_tokens"] > 0
        bad = httpx.post(url + "/v1/rerank", json={"model": "reranker", "documents": docs}, timeout=60)
        assert bad.status_code == 400 and "query" in bad.json()["error"]["message"]
        no_head = httpx.post(url + "/v1/rerank", json={"model": "bert", "query": q, "documents": docs}, timeout=60)
        assert no_head.status_code == 400 and "rerank" in no_head.json()["error"]["message"]
        with pytest.raises(openai.BadRequestError) as ei:
            client.completions.create(model="bert", prompt="hello", max_tokens=4)
        assert "embedding model" in str(ei.value)
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="bert", messages=[{"role": "user", "content": "hi"}], max_tokens=4)


def test_coalescer_merges_concurrent_calls():
    """The server's embedder merges the inputs of concurrent requests into shared calls; each
    caller gets its own results in order, and an error reaches every caller of that call."""
    import threading
    import time
    from llama_py._runtime.embed import Coalescer
    calls = []

    def fn(items):
        calls.append(len(items))
        time.sleep(0.05)
        if "boom" in items:
            raise RuntimeError("boom")
        return [x * 2 for x in items]

    co = Coalescer(fn)
    out = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, co([i, i + 100]))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {i: [2 * i, 2 * (i + 100)] for i in range(8)}
    assert sum(calls) == 16 and len(calls) < 8
    with pytest.raises(RuntimeError, match="boom"):
        co(["boom"])
    assert co([1]) == [2]
