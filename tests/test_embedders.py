"""Decoder models used as embedders and rerankers, on a tiny random-weight Qwen3ForCausalLM:

- Qwen3-Embedding: LAST pooling (the final-norm hidden state of each text's last token) for a
  batch of texts of different lengths packed into one decode, against transformers' Qwen3Model;
- Qwen3-Reranker: a GGUF written by llama.cpp's own converter (which recognises the reranker by
  its name and keeps the lm head's "yes" / "no" rows as cls.output, RANK pooling and a "rerank"
  prompt template): Llama.rerank's score is transformers' softmax over the yes / no logits of the
  filled-in template's last token.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_arch as TA  # noqa: E402
import test_convert as TC  # noqa: E402

LAST, RANK = 3, 4
TEXTS = ["hello world", "The quick brown fox jumps over the lazy dog.", "What is the capital of France?",
         "Embeddings map text to vectors"]


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory, lib_path):
    """A tiny Qwen3 whose vocabulary has "yes" and "no" (what a reranker's head reads)."""
    d = tmp_path_factory.mktemp("emb") / "qwen3-reranker-tiny"
    d.mkdir()
    tk, specials = TC._train_bpe("qwen2")
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token=specials[0], bos_token=None)
    tok.add_tokens(["yes", "no"])
    tok.save_pretrained(str(d))
    tok = transformers.AutoTokenizer.from_pretrained(str(d))
    cfg = TA._config("qwen3", len(tok), None, tok.convert_tokens_to_ids(specials[0]))
    torch.manual_seed(7)
    model = transformers.Qwen3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.empty_like(p).uniform_(0.5, 1.5) if "norm" in name
                    else torch.randn_like(p) / np.sqrt(p.shape[-1]))
    model.save_pretrained(str(d))
    return d, model, tok


def _close(a, b, rtol=1e-4):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-6)
    assert err < rtol, f"max relative error {err:.2e}"


def test_qwen3_embedding_last_pooling(qwen3, tmp_path):
    from llama_py import Llama
    from llama_py.convert import convert
    d, model, tok = qwen3
    path = tmp_path / "emb.gguf"
    convert(d, path, outtype="f32", progress=None)
    # F32 cache: the default F16 one rounds K and V (5.7e-4 here), as llama.cpp's does
    with Llama(str(path), embedding=True, pooling_type=LAST, n_ctx=256, type_k=0, type_v=0, verbose=False) as llm:
        lists = [llm.tokenize(t.encode(), add_bos=True) for t in TEXTS]
        got = llm.embed(TEXTS, normalize=True)
    for ids, g in zip(lists, got):
        with torch.no_grad():
            h = model.model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1].double().numpy()
        _close(g, h / np.linalg.norm(h))


def test_qwen3_reranker_from_llama_cpp_converter(qwen3, tmp_path):
    from upstream_convert import convert_with_llama_cpp
    from llama_py import Llama
    d, model, tok = qwen3
    path = convert_with_llama_cpp(d, tmp_path / "rerank.gguf", "f32", pre="qwen2")
    q = "capital of France"
    docs = ["Paris is the capital of France.", "The fox jumps.", "hello world"]
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    with Llama(str(path), embedding=True, n_ctx=512, type_k=0, type_v=0, verbose=False) as llm:
        assert llm.pooling_type() == RANK
        got = llm.rerank(q, docs)
        lists = [llm._rerank_tokens(q, x) for x in docs]
    assert all(len(x) > 20 for x in lists)   # the template, filled in
    for ids, g in zip(lists, got):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
        want = torch.softmax(torch.stack([logits[yes], logits[no]]), 0)[0].item()
        assert abs(g - want) < 1e-4, (g, want)
