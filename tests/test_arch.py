"""The architectures beside Llama (src/arch.c), each checked on a tiny random-weight model built
with `transformers` (Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM,
Gemma2ForCausalLM, Gemma4ForCausalLM; tests/test_gemma4.py checks more of the last),
converted by our converter (llama_py/convert.py) and run by the engine:

  - our F32 logits within 1e-3 relative of transformers', for batch prompts and for
    token-by-token decoding through the KV cache, over more positions than the sliding window
    (the tiny configs use a window of 8 and prompts of ~40 tokens);
  - the float64 NumPy reference (tests/llama_ref.py) agreeing with transformers on those models;
  - our tokens equal the Hugging Face tokenizer's encode() on the converted model (BOS included);
  - GGUF keys and tensor names as gguf-py's published constants list them for the architecture;
  - strict loading: missing tensors / keys and wrong shapes are refused, naming them.
"""
from __future__ import annotations

import ctypes
import json
import shutil
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (test-only dependency, see requirements-test.txt)")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (test-only dependency, see requirements-test.txt)")
gguf = pytest.importorskip("gguf")
pytest.importorskip("sentencepiece")
pytest.importorskip("tokenizers")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_util import Ctx, LogCapture, Model  # noqa: E402
from llama_ref import LlamaRef, rel_err  # noqa: E402
import test_convert as TC  # noqa: E402  (tokenizer trainers, prompts)

import llama_py.llama_cpp as L  # noqa: E402
from llama_py import convert as C  # noqa: E402

transformers.utils.logging.disable_progress_bar()
transformers.utils.logging.set_verbosity_error()

WINDOW = 8
SOFTCAP_ATTN, SOFTCAP_FINAL = 2.0, 3.0   # gemma2's tiny model: scores and logits well into tanh's bend
GEMMA4_LAYERS = ["sliding_attention", "sliding_attention", "full_attention"] * 2
LONG = TC.PROMPTS[1]   # 20-60 tokens with the tiny tokenizers: > 2 WINDOW, within phi3's original 64


def _config(arch: str, n_vocab: int, bos: int, eos: int):
    common = dict(vocab_size=n_vocab, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-6,
                  bos_token_id=bos, eos_token_id=eos, pad_token_id=None)
    if arch == "qwen2":
        return transformers.Qwen2Config(num_hidden_layers=2, tie_word_embeddings=False,
                                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **common)
    if arch == "qwen3":
        # head_dim 32 != 64 / 4: the head size must come from metadata
        return transformers.Qwen3Config(num_hidden_layers=2, head_dim=32, tie_word_embeddings=True,
                                        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, **common)
    if arch == "gemma3":
        return transformers.Gemma3TextConfig(
            num_hidden_layers=6, head_dim=32, query_pre_attn_scalar=32, sliding_window=WINDOW,
            tie_word_embeddings=True, final_logit_softcapping=None, attn_logit_softcapping=None,
            rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}, **common)
    if arch == "gemma2":
        # caps small enough that tanh bends the random model's scores and logits (checked below)
        return transformers.Gemma2Config(
            num_hidden_layers=4, head_dim=32, query_pre_attn_scalar=32, sliding_window=WINDOW,
            tie_word_embeddings=True, attn_logit_softcapping=SOFTCAP_ATTN, final_logit_softcapping=SOFTCAP_FINAL,
            hidden_activation="gelu_pytorch_tanh", attn_implementation="eager",   # eager: soft-caps scores
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **common)
    if arch == "phi3":
        half = 16 // 2
        rng = np.random.default_rng(5)
        rope = {"rope_type": "longrope", "rope_theta": 10000.0,
                "long_factor": [float(x) for x in 1.0 + 3.0 * rng.random(half)],
                "short_factor": [float(x) for x in 1.0 + 0.5 * rng.random(half)]}
        c = dict(common, max_position_embeddings=256)
        return transformers.Phi3Config(num_hidden_layers=2, tie_word_embeddings=False, sliding_window=WINDOW,
                                       original_max_position_embeddings=64, rope_parameters=rope, **c)
    if arch == "gemma4":
        # both layer kinds with their own head sizes and KV heads, K = V on the full layers, the
        # last two layers (one of each kind) reading earlier layers' KV with a double-wide MLP,
        # per-layer embeddings, proportional rope on the full layers, a final soft-cap that bends
        return transformers.Gemma4TextConfig(
            num_hidden_layers=6, head_dim=16, global_head_dim=32, num_global_key_value_heads=1,
            attention_k_eq_v=True, layer_types=GEMMA4_LAYERS, sliding_window=WINDOW, num_kv_shared_layers=2,
            use_double_wide_mlp=True, hidden_size_per_layer_input=8, vocab_size_per_layer_input=n_vocab,
            final_logit_softcapping=SOFTCAP_FINAL, tie_word_embeddings=True,
            rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                "rope_theta": 1000000.0},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}, **common)
    raise ValueError(arch)


_MODEL_CLASS = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "gemma3": "Gemma3ForCausalLM",
                "phi3": "Phi3ForCausalLM", "gemma2": "Gemma2ForCausalLM", "gemma4": "Gemma4ForCausalLM"}
# tokenizers: qwen2 / qwen3 byte-level BPE with the qwen2 pre-tokenizer; gemma2 / gemma3 / phi3 SentencePiece
_TOKENIZER = {"qwen2": "bpe", "qwen3": "bpe", "gemma3": "spm", "phi3": "spm", "gemma2": "spm", "gemma4": "spm"}


class Tiny:
    def __init__(self, d: Path, model, tok, arch: str):
        self.path, self.model, self.tok, self.arch = d, model, tok, arch
        self.gguf = d / "model-f32.gguf"
        C.convert(d, self.gguf, "f32", progress=None)

    def ids(self, text: str) -> List[int]:
        return list(self.tok(text)["input_ids"])


def _build(root: Path, arch: str, sp_model: Path, seed: int, config=None, model_class=None, tokenizer=None) -> Tiny:
    """config (n_vocab, bos, eos -> a transformers config), model_class and tokenizer ("spm" or "bpe")
    default to this file's tables for arch."""
    d = root / arch
    d.mkdir()
    tokenizer = tokenizer or _TOKENIZER[arch]
    if tokenizer == "spm":
        shutil.copy(sp_model, d / "tokenizer.model")
        tok = transformers.LlamaTokenizer.from_pretrained(str(d))
        tok.save_pretrained(str(d))
        # as many published checkpoints do: no add_bos_token in tokenizer_config.json (the
        # tokenizer's own default, LlamaTokenizer's BOS, must be kept by the converter)
        cfg_path = d / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg.pop("add_bos_token", None)
        cfg_path.write_text(json.dumps(cfg))
        bos, eos = 1, 2
    else:
        tk, specials = TC._train_bpe("qwen2")
        tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token=specials[0], bos_token=None)
        tok.save_pretrained(str(d))
        bos, eos = None, tok.convert_tokens_to_ids(specials[0])
    tok = transformers.AutoTokenizer.from_pretrained(str(d))
    cfg = (config or (lambda n, b, e: _config(arch, n, b, e)))(len(tok), bos, eos)
    torch.manual_seed(seed)
    model = getattr(transformers, model_class or _MODEL_CLASS[arch])(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                if arch in ("gemma3", "gemma2"):
                    p.uniform_(-0.5, 0.5)   # Gemma norms scale by (1 + w)
                elif arch == "gemma4" and ("q_norm" in name or "k_norm" in name):
                    # Gemma 4 does not scale QK^T: the norms' weights set the scores' size; at
                    # 1 the random model's softmax is near one-hot (and its logits chaotic)
                    p.uniform_(0.2, 0.5)
                else:
                    p.uniform_(0.5, 1.5)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.5)
            else:
                p.normal_(0.0, 1.0 / np.sqrt(p.shape[-1]))
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):   # gemma4's scale of each block's output (stored)
                b.uniform_(0.5, 1.5)
    model.save_pretrained(str(d))
    return Tiny(d, model, tok, arch)


ARCHS = ["qwen2", "qwen3", "gemma3", "phi3", "gemma2", "gemma4"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, lib_path) -> Dict[str, Tiny]:
    root = tmp_path_factory.mktemp("arch")
    sp_model = TC._train_spm(root)
    return {a: _build(root, a, sp_model, seed=20 + i) for i, a in enumerate(ARCHS)}


def hf_logits(model, toks: List[int]) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor([toks])).logits[0].double().numpy()


def our_batch(path: Path, token_lists: List[List[int]], n_ctx: int = 256, **cp) -> List[np.ndarray]:
    out = []
    with Model(path) as m, Ctx(m, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, type_k=0, type_v=0, **cp) as c:
        for toks in token_lists:
            L.llama_memory_clear(c.mem, True)
            assert c.decode_seq(toks) == 0
            out.append(c.all_logits(len(toks)))
    return out


def our_stepwise(path: Path, toks: List[int], n_ctx: int = 256, **cp) -> np.ndarray:
    """A 3-token prompt, then one token per llama_decode (the KV cache carries the rest)."""
    rows = []
    with Model(path) as m, Ctx(m, n_ctx=n_ctx, n_batch=n_ctx, type_k=0, type_v=0, **cp) as c:
        assert c.decode_seq(toks[:3]) == 0
        rows += [c.logits(i) for i in range(3)]
        for i in range(3, len(toks)):
            assert c.decode_seq([toks[i]], start=i) == 0
            rows.append(c.logits(0))
    return np.stack(rows)


def _n_ctx(arch: str) -> int:
    # phi3's LongRoPE: a context within the original 64 positions uses the short factors, as
    # transformers does for inputs that stay within them
    return 64 if arch == "phi3" else 256


@pytest.mark.parametrize("arch", ARCHS)
def test_logits_match_transformers(tiny, arch):
    t = tiny[arch]
    prompts = [TC.PROMPTS[0], LONG, TC.PROMPTS[2]]
    toks = [t.ids(p)[:60] for p in prompts]   # phi3: within the original context (short factors)
    assert len(toks[1]) > 2 * WINDOW, len(toks[1])
    ref = [hf_logits(t.model, x) for x in toks]
    errs = []
    for fa in (0, 1):   # flash attention off / on
        ours = our_batch(t.gguf, toks, n_ctx=_n_ctx(arch), flash_attn_type=fa)
        errs.append(max(rel_err(a, b) for a, b in zip(ours, ref)))
    step = our_stepwise(t.gguf, toks[1], n_ctx=_n_ctx(arch))
    errs.append(rel_err(step, ref[1]))
    print(f"\n{arch}: batch {errs[0]:.2e} (flash {errs[1]:.2e}), token by token {errs[2]:.2e}", end="")
    assert max(errs) < 1e-3, errs


def our_side_by_side(path: Path, token_lists: List[List[int]], k0: int = 3, **cp) -> List[np.ndarray]:
    """Sequences decoded side by side in one context, as a server's slots: sequence 1's first k0
    tokens, then the others' first k0 in one batch, then one token of every sequence per batch;
    each sequence's logits from position k0 on."""
    n = len(token_lists)
    out: List[List[np.ndarray]] = [[] for _ in range(n)]
    with Model(path) as m, Ctx(m, n_ctx=128 * n, n_batch=256, n_seq_max=n, type_k=0, type_v=0, **cp) as c:
        assert c.decode_seq(token_lists[1][:k0], seq=1, all_logits=False) == 0
        assert c.decode_rows([(t, i, [s], False) for s in range(n) if s != 1 for i, t in enumerate(token_lists[s][:k0])]) == 0
        for i in range(k0, max(len(x) for x in token_lists)):
            live = [s for s in range(n) if i < len(token_lists[s])]
            assert c.decode_rows([(token_lists[s][i], i, [s], True) for s in live]) == 0
            for r, s in enumerate(live):
                out[s].append(c.logits(r))
    return [np.stack(x) for x in out]


@pytest.mark.parametrize("arch", [a for a in ARCHS if a != "phi3"])  # phi3: LongRoPE follows n_ctx
def test_sequences_side_by_side(tiny, arch):
    """Three sequences of different lengths decoded side by side: each gets transformers' logits,
    with flash attention and without (the plain path then runs per sequence, each over its own
    cells: attn-seq.c), sliding windows and soft-capping included."""
    t = tiny[arch]
    toks = [t.ids(p)[:60] for p in (TC.PROMPTS[0], LONG, TC.PROMPTS[2])]
    ref = [hf_logits(t.model, x)[3:] for x in toks]
    errs = []
    for fa in (0, 1):
        ours = our_side_by_side(t.gguf, toks, flash_attn_type=fa)
        errs.append(max(rel_err(a, b) for a, b in zip(ours, ref)))
    print(f"\n{arch}: side by side {errs[0]:.2e} (flash {errs[1]:.2e})", end="")
    assert max(errs) < 1e-3, errs


@pytest.mark.parametrize("arch", ARCHS)
def test_q8_0_repacked_and_fused(tiny, arch):
    """Q8_0 weights: repacked (Q, K, V and gate, up fused, or phi3's stored fused ones) and as
    stored give the same logits bit for bit, and stay near transformers'."""
    t = tiny[arch]
    q8 = t.path / "model-q8_0.gguf"
    if not q8.exists():
        C.convert(t.path, q8, "q8_0", progress=None)
    toks = [t.ids(LONG)[:60]]
    rep = our_batch(q8, toks, n_ctx=_n_ctx(arch))[0]
    with Model(q8, use_extra_bufts=False) as m, Ctx(m, n_ctx=_n_ctx(arch), n_batch=64, type_k=0, type_v=0) as c:
        assert c.decode_seq(toks[0]) == 0
        plain = c.all_logits(len(toks[0]))
    assert np.array_equal(rep, plain), np.abs(rep - plain).max()
    err = rel_err(rep, hf_logits(t.model, toks[0]))
    print(f"\n{arch} q8_0: {err:.2e} vs transformers f32", end="")
    # the tiny random gemma4 is touchy: in transformers itself, weights changed by 1e-3 relative
    # noise move its logits by ~3% (20 times the noise; Q8_0's rounding is ~4e-3 of a value)
    assert err < (0.5 if arch == "gemma4" else 0.1), err


def test_phi3_long_rope_factors(tiny):
    """Past the original context, transformers switches to LongRoPE's long factors; so do we for a
    context larger than it; and the two factor sets give different logits."""
    t = tiny["phi3"]
    toks = t.ids(" ".join(TC.PROMPTS[:3]))[:200]
    assert len(toks) > 64, len(toks)
    ref = hf_logits(t.model, toks)
    ours = our_batch(t.gguf, [toks], n_ctx=256)[0]
    err = rel_err(ours, ref)
    short = our_batch(t.gguf, [toks[:60]], n_ctx=64)[0]
    off = rel_err(short, ref[:60])
    print(f"\nphi3 long factors: {err:.2e} (short factors against it: {off:.2e})", end="")
    assert err < 1e-3, err
    assert off > 1e-2, off


def test_sliding_window_matters(tiny):
    """Gemma 3's window changes the logits past it: transformers without it is far from us."""
    t = tiny["gemma3"]
    toks = t.ids(LONG)
    cfg = t.model.config.to_dict()
    cfg["sliding_window"] = 4096
    full = transformers.Gemma3ForCausalLM(transformers.Gemma3TextConfig(**cfg)).eval()
    full.load_state_dict(t.model.state_dict())
    off = rel_err(hf_logits(full, toks), our_batch(t.gguf, [toks])[0])
    assert off > 1e-2, off


@pytest.mark.parametrize("change", [{"attn_logit_softcapping": None}, {"final_logit_softcapping": None},
                                    {"sliding_window": 4096}])
def test_gemma2_soft_capping_and_window_matter(tiny, change):
    """Each of Gemma 2's soft-caps and its window changes the logits of the tiny model: transformers
    without it is far from us (so the match above checks them)."""
    t = tiny["gemma2"]
    toks = t.ids(LONG)
    cfg = dict(t.model.config.to_dict(), **change)
    other = transformers.Gemma2ForCausalLM(transformers.Gemma2Config(**cfg)).eval()
    other.load_state_dict(t.model.state_dict())
    for fa in (0, 1):
        off = rel_err(hf_logits(other, toks), our_batch(t.gguf, [toks], flash_attn_type=fa)[0])
        assert off > 1e-2, (change, fa, off)


@pytest.mark.parametrize("change, msg", [
    ({"query_pre_attn_scalar": 64}, "query_pre_attn_scalar 64 differs from 32"),
    ({"layer_types": ["full_attention", "sliding_attention"] * 2}, "gemma2 layer_types must alternate"),
])
def test_gemma2_converter_refuses_what_the_gguf_cannot_say(tiny, tmp_path, change, msg):
    """A GGUF gemma2 has no query_pre_attn_scalar nor layer pattern keys: other values are refused."""
    d = tmp_path / "g2"
    shutil.copytree(tiny["gemma2"].path, d, ignore=shutil.ignore_patterns("*.gguf"))
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(change)
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(C.ConvertError, match=msg):
        C.convert(d, tmp_path / "out.gguf", "f32", progress=None)


@pytest.mark.parametrize("arch", ARCHS)
def test_numpy_reference_matches_transformers(tiny, arch):
    t = tiny[arch]
    toks = t.ids(LONG)[:60]
    ref = LlamaRef(str(t.gguf), n_ctx=_n_ctx(arch)).forward(toks)
    err = rel_err(ref, hf_logits(t.model, toks))
    print(f"\n{arch}: numpy float64 vs transformers {err:.2e}", end="")
    assert err < 1e-4, err


@pytest.mark.parametrize("arch", ARCHS)
def test_tokens_equal_hf(tiny, arch):
    t = tiny[arch]
    with Model(t.gguf, vocab_only=True) as m:
        for p in TC.PROMPTS:
            assert TC.our_tokens(m, p) == t.ids(p), (arch, p)


@pytest.mark.parametrize("arch", ARCHS)
def test_gguf_names_follow_gguf_constants(tiny, arch):
    """Every tensor we write is one gguf-py lists for the architecture, every key one of its Keys."""
    from gguf.constants import MODEL_ARCH_NAMES, MODEL_TENSORS, TENSOR_NAMES, Keys
    r = gguf.GGUFReader(str(tiny[arch].gguf))
    a = {v: k for k, v in MODEL_ARCH_NAMES.items()}[arch]
    allowed = {TENSOR_NAMES[x] for x in MODEL_TENSORS[a]}
    for tensor in r.tensors:
        base = tensor.name.rsplit(".", 1)[0]
        parts = base.split(".")
        if parts[0] == "blk":
            base = "blk.{bid}." + ".".join(parts[2:])
        assert base in allowed, (arch, tensor.name)
    known = set()
    for group in (Keys.General, Keys.LLM, Keys.Attention, Keys.Rope, Keys.Tokenizer):
        for k, v in vars(group).items():
            if isinstance(v, str) and not k.startswith("_"):
                known.add(v.replace("{arch}", arch))
    for key in r.fields:
        if key.startswith("GGUF."):
            continue
        assert key in known or key.startswith("tokenizer.chat_template"), (arch, key)
    assert r.fields["general.architecture"].contents() == arch


def _rewrite(src: Path, dst: Path, drop_tensor: str = None, drop_key: str = None, reshape: str = None,
             to_f16: str = ""):
    """A copy of src with one tensor or key dropped, or one tensor's shape changed, or the
    tensors whose names end in to_f16 stored as F16."""
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch)
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture" or k == drop_key:
            continue
        v = f.contents()
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            w.add_key_value(k, v, vt, sub_type=f.types[-1])
        else:
            w.add_key_value(k, v, vt)
    for t in r.tensors:
        if t.name == drop_tensor:
            continue
        data = np.asarray(t.data).reshape([int(x) for x in reversed(t.shape)])
        if t.name == reshape:
            data = data[:-1]
        if to_f16 and t.name.endswith(to_f16):
            data = data.astype(np.float16)
        w.add_tensor(t.name, np.ascontiguousarray(data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _load_error(path: Path) -> str:
    with LogCapture() as log:
        p = L.llama_model_default_params()
        m = L.llama_model_load_from_file(str(path).encode(), p)
    assert not m
    return log.text()


def test_strict_loading(tiny, tmp_path):
    src = tiny["gemma3"].gguf
    bad = tmp_path / "bad.gguf"
    _rewrite(src, bad, drop_tensor="blk.3.post_ffw_norm.weight")
    assert "missing tensor 'blk.3.post_ffw_norm.weight'" in _load_error(bad)
    _rewrite(src, bad, drop_key="gemma3.attention.sliding_window")
    assert "missing required key 'gemma3.attention.sliding_window'" in _load_error(bad)
    _rewrite(src, bad, reshape="blk.1.attn_q.weight")
    assert "tensor 'blk.1.attn_q.weight' has wrong shape" in _load_error(bad)
    _rewrite(tiny["qwen2"].gguf, bad, drop_tensor="blk.0.attn_k.bias")
    assert "missing tensor 'blk.0.attn_k.bias'" in _load_error(bad)
    # optional tensors may be absent: qwen3 without output.weight is tied
    with Model(tiny["qwen3"].gguf) as m:
        assert L.llama_model_n_swa(m.ptr) == 0
    # an unknown architecture names itself and the supported ones
    r = gguf.GGUFReader(str(tiny["qwen3"].gguf))
    w = gguf.GGUFWriter(str(bad), "mamba9")
    w.add_uint32("mamba9.block_count", 1)
    for k in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
        w.add_string(k, r.fields[k].contents())
    w.add_array("tokenizer.ggml.tokens", r.fields["tokenizer.ggml.tokens"].contents())
    w.add_array("tokenizer.ggml.merges", r.fields["tokenizer.ggml.merges"].contents())
    w.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    err = _load_error(bad)
    assert "unsupported architecture 'mamba9' (supported: llama, qwen2, qwen3, gemma3, phi3, gemma2" in err, err
    assert all(f" {a}" in err for a in ("bert", "nomic-bert", "gemma-embedding")), err


def test_vocabulary_validation(tiny, tmp_path):
    """Broken vocabularies are refused at load, naming the token id."""
    src = tiny["phi3"].gguf
    r = gguf.GGUFReader(str(src))
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    byte_id = types.index(6)

    def variant(name, **change):
        out = tmp_path / f"{name}.gguf"
        w = gguf.GGUFWriter(str(out), "phi3")
        for k, f in r.fields.items():
            if k.startswith("GGUF.") or k == "general.architecture":
                continue
            v = change.get(k, f.contents())
            if f.types[0] == gguf.GGUFValueType.ARRAY:
                if k == "tokenizer.ggml.tokens":
                    w.add_array(k, v)   # bytes allowed: written as they are
                else:
                    w.add_key_value(k, v, f.types[0], sub_type=f.types[-1])
            else:
                w.add_key_value(k, v, f.types[0])
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.close()
        p = L.llama_model_default_params()
        p.vocab_only = True
        with LogCapture() as log:
            m = L.llama_model_load_from_file(str(out).encode(), p)
        assert not m, name
        return log.text()

    t = list(tokens)
    t[byte_id] = "<0xZZ>"
    assert f"token {byte_id} has type BYTE but its text '<0xZZ>' is not <0xHH>" in variant("byte", **{"tokenizer.ggml.tokens": t})
    t = list(tokens)
    t[300] = b"ab\xff"
    assert "token 300 is not valid UTF-8" in variant("utf8", **{"tokenizer.ggml.tokens": t})
    err = variant("eos", **{"tokenizer.ggml.eos_token_id": len(tokens) + 5})
    assert f"tokenizer.ggml.eos_token_id = token id {len(tokens) + 5} is not in the vocabulary" in err


@pytest.mark.parametrize("arch", ARCHS)
def test_model_accessors(tiny, arch):
    """desc, meta_*, rope type, sliding window and the chat template per architecture."""
    t = tiny[arch]
    kv = {k: f.contents() for k, f in gguf.GGUFReader(str(t.gguf)).fields.items()}
    with Model(t.gguf) as m:
        buf = ctypes.create_string_buffer(256)
        assert L.llama_model_desc(m.ptr, buf, 256) > 0 and buf.value.decode().startswith(arch + " ")
        assert L.llama_model_meta_val_str(m.ptr, b"general.architecture", buf, 256) == len(arch)
        assert buf.value.decode() == arch
        assert L.llama_model_rope_type(m.ptr) == L.LLAMA_ROPE_TYPE_NEOX
        assert L.llama_model_n_swa(m.ptr) == {"gemma3": WINDOW, "phi3": WINDOW, "gemma2": WINDOW, "gemma4": WINDOW}.get(arch, 0)
        assert L.llama_model_n_head_kv(m.ptr) == 2 and L.llama_model_n_layer(m.ptr) == kv[f"{arch}.block_count"]
        tmpl = L.llama_model_chat_template(m.ptr, None)
        assert (tmpl.decode() if tmpl else None) == kv.get("tokenizer.chat_template")


@pytest.mark.parametrize("arch", ARCHS)
def test_llama_cpp_converter_file_matches_transformers(tiny, arch, tmp_path):
    """A GGUF written by llama.cpp's own convert_hf_to_gguf.py (0.3.36 sdist) loads and gives
    transformers' logits, as ours does: real files come from that converter."""
    from upstream_convert import convert_with_llama_cpp
    t = tiny[arch]
    path = convert_with_llama_cpp(t.path, tmp_path / "upstream.gguf", "f32",
                                  pre="qwen2" if _TOKENIZER[arch] == "bpe" else None)
    toks = [t.ids(p)[:60] for p in (TC.PROMPTS[0], LONG)]
    ref = [hf_logits(t.model, x) for x in toks]
    ours = our_batch(path, toks, n_ctx=_n_ctx(arch))
    err = max(rel_err(a, b) for a, b in zip(ours, ref))
    step = rel_err(our_stepwise(path, toks[1], n_ctx=_n_ctx(arch)), ref[1])
    print(f"\n{arch} (llama.cpp's converter): batch {err:.2e}, token by token {step:.2e}", end="")
    assert max(err, step) < 1e-3, (err, step)
