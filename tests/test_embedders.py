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


@pytest.fixture(scope="module")
def gemma_emb(tmp_path_factory, lib_path):
    """A tiny EmbeddingGemma: Gemma3TextModel attending both ways, mean pooling and two Dense
    projections as sentence-transformers modules (64 -> 128 -> 64)."""
    import json
    from safetensors.numpy import save_file
    root = tmp_path_factory.mktemp("gemb")
    d = root / "embeddinggemma-tiny"
    d.mkdir()
    shutil.copy(TC._train_spm(root), d / "tokenizer.model")
    tok = transformers.LlamaTokenizer.from_pretrained(str(d))
    tok.save_pretrained(str(d))
    base = TA._config("gemma3", len(tok), 1, 2).to_dict()
    # made with the flag: the constructor turns sliding_window 8 into |distance| < 8 // 2 + 1
    cfg = transformers.Gemma3TextConfig(**{**base, "use_bidirectional_attention": True})
    assert cfg.sliding_window == 5
    torch.manual_seed(11)
    model = transformers.Gemma3TextModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.empty_like(p).uniform_(-0.5, 0.5) if "norm" in name
                    else torch.randn_like(p) / np.sqrt(p.shape[-1]))
    model.save_pretrained(str(d))
    rng = np.random.default_rng(3)
    dense = {"2_Dense": rng.normal(size=(128, 64)).astype(np.float32) / 8,
             "3_Dense": rng.normal(size=(64, 128)).astype(np.float32) / 11}
    mods = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (d / "1_Pooling").mkdir()
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    for i, (sub, w) in enumerate(dense.items()):
        (d / sub).mkdir()
        save_file({"linear.weight": w}, str(d / sub / "model.safetensors"))
        (d / sub / "config.json").write_text(json.dumps({"in_features": w.shape[1], "out_features": w.shape[0],
                                                         "bias": False,
                                                         "activation_function": "torch.nn.modules.linear.Identity"}))
        mods.append({"idx": 2 + i, "name": str(2 + i), "path": sub, "type": "sentence_transformers.models.Dense"})
    (d / "modules.json").write_text(json.dumps(mods))
    return d, model, tok, dense


def _gemma_ref(model, ids, dense=None):
    with torch.no_grad():
        h = model(input_ids=torch.tensor([ids])).last_hidden_state[0].double().numpy().mean(axis=0)
    if dense is not None:
        h = dense["3_Dense"].astype(np.float64) @ (dense["2_Dense"].astype(np.float64) @ h)
    return h


GEMMA_TEXTS = [TC.PROMPTS[1], "hello world", TC.PROMPTS[0] + " " + TC.PROMPTS[1]]


@pytest.mark.parametrize("converter", ["ours", "llama.cpp"])
def test_embeddinggemma(gemma_emb, tmp_path, converter):
    """Bidirectional attention (both ways within the sliding window of 8 on the sliding layers),
    mean pooling, then the dense projections (ours; llama.cpp's converter leaves them out unless
    asked): 3 texts of 20-60 tokens in one call, within 1e-4 of transformers."""
    from llama_py import Llama
    from llama_py.convert import convert
    from upstream_convert import convert_with_llama_cpp
    d, model, tok, dense = gemma_emb
    path = tmp_path / "g.gguf"
    if converter == "ours":
        convert(d, path, outtype="f32", progress=None)
    else:
        convert_with_llama_cpp(d, path, "f32")
        dense = None
    with Llama(str(path), embedding=True, n_ctx=256, type_k=0, type_v=0, verbose=False) as llm:
        assert llm.pooling_type() == 1
        lists = [llm.tokenize(t.encode(), add_bos=True) for t in GEMMA_TEXTS]
        assert max(len(x) for x in lists) > 3 * 8
        got = llm.embed(GEMMA_TEXTS)
    for ids, g in zip(lists, got):
        _close(g, _gemma_ref(model, ids, dense))


def test_llama_encode_on_a_decoder(qwen3, tmp_path):
    """llama_encode on a decoder model: the batch's tokens see their whole sequence and leave
    the cache as it was; a sequence that already holds decoded tokens is refused (an encode
    sees only its own batch)."""
    import llama_py.llama_cpp as L
    from llama_py.convert import convert
    from model_util import Ctx, Model
    d, model, tok = qwen3
    path = tmp_path / "q.gguf"
    convert(d, path, outtype="f32", progress=None)
    ids = tok("hello world again")["input_ids"]
    with Model(path) as m, Ctx(m, n_ctx=64, n_seq_max=2, embeddings=True, pooling_type=1, type_k=0, type_v=0) as c:
        def encode(seq):
            b = L.llama_batch_init(len(ids), 0, 1)
            try:
                for i, t in enumerate(ids):
                    L.llama_batch_add(b, t, i, [seq], True)
                return L.llama_encode(c.ptr, b)
            finally:
                L.llama_batch_free(b)
        assert encode(0) == 0
        assert c.pos_max(0) == -1
        with torch.no_grad():
            # both ways: transformers' Qwen3 with a full (non-causal) mask
            h = model.model(input_ids=torch.tensor([ids]),
                            attention_mask={"full_attention": torch.zeros(1, 1, len(ids), len(ids))}
                            ).last_hidden_state[0].double().numpy().mean(0)
        _close(c.embedding_seq(0), h)
        assert c.decode_rows([(t, i, [1], True) for i, t in enumerate(ids)]) == 0
        assert encode(1) != 0          # seq 1 holds decoded tokens
        assert encode(0) == 0          # seq 0 does not
