"""python -m llama_py imatrix and quantize --imatrix on a synthetic Llama: the file is the GGUF
imatrix format (read back with the gguf package: general.type, imatrix.* keys, <name>.in_sum2 /
<name>.counts), the first layer's attention input statistics equal a NumPy forward's (embedding
rows through the RMS norm), and an IQ4_XS file quantized with it loads and matches the NumPy
reference of its own weights."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_synthetic_model as msm  # noqa: E402
from llama_ref import LlamaRef, rel_err  # noqa: E402
from model_util import Ctx, Model  # noqa: E402

from llama_py import imatrix as IM  # noqa: E402
from llama_py import quantize as Q  # noqa: E402

N_CTX = 32
TEXT = ("The quick brown fox jumps over the lazy dog while the five boxing wizards jump quickly. " * 30)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, lib_path, spm_vocab):
    d = tmp_path_factory.mktemp("imatrix")
    src = d / "f16.gguf"
    msm.write_model(src, n_layer=2, n_embd=256, n_head=8, n_head_kv=2, n_ff=512, n_ctx=256,
                    n_vocab=2000, ftype="f16", seed=11, vocab=spm_vocab)
    text = d / "text.txt"
    text.write_text(TEXT)
    out = d / "imatrix.gguf"
    assert IM.main([str(src), "-f", str(text), "-o", str(out), "-c", str(N_CTX), "--chunks", "3", "-q"]) == 0
    return src, text, out


def test_imatrix_file_format_and_values(setup):
    src, text, out = setup
    r = gguf.GGUFReader(str(out))
    f = {k: r.fields[k] for k in r.fields}
    assert bytes(f["general.type"].parts[-1]).decode() == "imatrix"
    assert int(f["imatrix.chunk_count"].parts[-1][0]) == 3
    assert int(f["imatrix.chunk_size"].parts[-1][0]) == N_CTX
    assert "imatrix.datasets" in f
    t = {x.name: np.asarray(x.data, dtype=np.float64).ravel() for x in r.tensors}
    ref = LlamaRef(str(src))
    for il in range(2):
        for w in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
            name = f"blk.{il}.{w}.weight"
            assert f"{name}.in_sum2" in t and t[f"{name}.counts"][0] == 3 * N_CTX, name
    # the first layer's Q/K/V input: normed embedding rows of the chunks' tokens (each chunk
    # starts with BOS)
    from llama_py import llama_cpp as C
    mp = C.llama_model_default_params()
    m = C.llama_model_load_from_file(str(src).encode(), mp)
    vocab = C.llama_model_get_vocab(m)
    raw = TEXT.encode()
    buf = (C.llama_token * (len(raw) + 16))()
    n = C.llama_tokenize(vocab, raw, len(raw), buf, len(raw) + 16, True, False)
    bos = C.llama_vocab_bos(vocab)
    C.llama_model_free(m)
    toks = np.array(list(buf[:n]))[: 3 * N_CTX].reshape(3, N_CTX)
    toks[:, 0] = bos
    x = ref.w["token_embd.weight"][toks.ravel()]
    h = ref._rmsnorm(x, ref.w["blk.0.attn_norm.weight"])
    want = np.sum(h * h, axis=0)
    for w in ("attn_q", "attn_k", "attn_v"):
        got = t[f"blk.0.{w}.weight.in_sum2"]
        assert np.max(np.abs(got - want) / want.max()) < 1e-4, w


def test_quantize_with_imatrix_loads_and_matches(setup, tmp_path):
    src, _, im = setup
    entries = IM.read(str(im))
    assert entries["blk.0.attn_q.weight"].shape == (256,)
    dst = tmp_path / "iq4_xs.gguf"
    Q.quantize(str(src), str(dst), "IQ4_XS", show_progress=False, imatrix=str(im))
    plain = tmp_path / "iq4_xs_plain.gguf"
    Q.quantize(str(src), str(plain), "IQ4_XS", show_progress=False)
    assert dst.read_bytes() != plain.read_bytes()  # the weights changed the quantization
    ref = LlamaRef(str(dst))
    prompt = [1, 450, 1996, 1354, 1701, 432, 1704, 975]
    want = ref.forward(prompt)
    with Model(dst) as mdl, Ctx(mdl, n_ctx=64, n_batch=64, n_ubatch=64) as c:
        assert c.decode_seq(prompt) == 0
        got = c.all_logits(len(prompt))
    assert rel_err(got, want) < 3e-2


def test_codebook_types_need_an_imatrix(setup, tmp_path):
    """IQ1 / IQ2 / IQ3_XXS mixes refuse to run without an importance matrix, naming it."""
    src, _, im = setup
    with pytest.raises(RuntimeError, match="importance matrix"):
        Q.quantize(str(src), str(tmp_path / "x.gguf"), "IQ2_XXS", show_progress=False)
    with pytest.raises(RuntimeError, match="importance matrix"):
        Q.quantize(str(src), str(tmp_path / "y.gguf"), "IQ1_S", show_progress=False)


@pytest.mark.parametrize("ftype,base", [("IQ3_S", "IQ3_S"), ("IQ3_M", "IQ3_S"), ("IQ3_XS", "IQ3_S"),
                                        ("IQ3_XXS", "IQ3_XXS"), ("IQ2_M", "IQ2_S"), ("IQ2_S", "IQ2_XS"),
                                        ("IQ2_XS", "IQ2_XS"), ("IQ2_XXS", "IQ2_XXS"), ("IQ1_M", "IQ1_M"),
                                        ("IQ1_S", "IQ1_S")])
def test_codebook_mixes_load_and_match(setup, tmp_path, ftype, base):
    """The IQ3 / IQ2 mixes (with the importance matrix) hold their base type, load, and give the
    NumPy reference's logits of their own weights (the difference: int8 activations)."""
    src, _, im = setup
    dst = tmp_path / f"{ftype}.gguf"
    Q.quantize(str(src), str(dst), ftype, show_progress=False, imatrix=str(im))
    r = gguf.GGUFReader(str(dst))
    assert any(t.tensor_type.name == base for t in r.tensors), [t.tensor_type.name for t in r.tensors]
    ref = LlamaRef(str(dst))
    prompt = [1, 450, 1996, 1354, 1701, 432, 1704, 975]
    want = ref.forward(prompt)
    with Model(dst) as mdl, Ctx(mdl, n_ctx=64, n_batch=64, n_ubatch=64) as c:
        assert c.decode_seq(prompt) == 0
        got = c.all_logits(len(prompt))
    assert rel_err(got, want) < 3e-2, ftype


def test_mixed_file_with_tensor_type_overrides(setup, tmp_path):
    """A "dynamic quant" style file: K-quants with IQ4_XS / IQ4_NL / MXFP4 tensors chosen by name
    patterns (llama-quantize's --tensor-type) loads and matches the NumPy reference."""
    src, _, im = setup
    dst = tmp_path / "mixed.gguf"
    tt = [(r"ffn_(gate|up)\.", "IQ4_XS"), (r"attn_(q|k)\.", "IQ4_NL"), (r"blk\.1\.ffn_down", "MXFP4"),
          (r"attn_output", "Q3_K")]
    Q.quantize(str(src), str(dst), "Q4_K_M", show_progress=False, imatrix=str(im), tensor_types=tt)
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(dst)).tensors}
    assert types["blk.0.ffn_gate.weight"] == "IQ4_XS" and types["blk.1.ffn_up.weight"] == "IQ4_XS"
    assert types["blk.0.attn_q.weight"] == "IQ4_NL" and types["blk.0.attn_k.weight"] == "IQ4_NL"
    assert types["blk.1.ffn_down.weight"] == "MXFP4" and types["blk.0.attn_output.weight"] == "Q3_K"
    assert types["blk.0.attn_v.weight"] in ("Q4_K", "Q6_K")
    ref = LlamaRef(str(dst))
    prompt = [1, 450, 1996, 1354, 1701, 432, 1704, 975]
    want = ref.forward(prompt)
    with Model(dst) as mdl, Ctx(mdl, n_ctx=64, n_batch=64, n_ubatch=64) as c:
        assert c.decode_seq(prompt) == 0
        got = c.all_logits(len(prompt))
    assert rel_err(got, want) < 3e-2
    assert np.mean(np.argmax(got, 1) == np.argmax(want, 1)) >= 0.85
    with pytest.raises(RuntimeError, match="override"):
        Q.quantize(str(src), str(tmp_path / "bad.gguf"), "Q4_K_M", show_progress=False, tensor_types=[("ffn_(", "Q6_K")])
