"""Mixture-of-experts architectures on tiny random-weight transformers models: Qwen3MoeForCausalLM
(GGUF qwen3moe: qwen3 attention, softmax routing, top-k weights renormalised),
Qwen2MoeForCausalLM (qwen2moe: Q/K/V biases, weights not renormalised, a sigmoid-gated shared
expert), MixtralForCausalLM (GGUF llama with expert_count > 0), OlmoeForCausalLM (olmoe: RMS norms
over the whole Q and K vectors, weights not renormalised) and GraniteMoe(Shared)ForCausalLM
(granitemoe: embedding / attention / residual / logit multipliers, fused experts split, an
ungated shared expert), converted by our converter and by
llama.cpp's (0.3.36 sdist), and run by the engine:

  - our F32 logits within 1e-3 relative of transformers', batch (flash attention off and on) and
    token by token through the KV cache; the float64 NumPy reference (llama_ref.py) likewise;
  - a MoE layer whose experts all hold the same weights gives the dense FFN's logits;
  - tied router logits: ties between equal experts give transformers' logits; other ties take
    the lower expert index (torch.topk has no tie rule: test_router_ties);
  - GGUF names as gguf-py's constants list them;
  - bad files (expert_used_count > expert_count, wrong expert tensor shapes, missing experts)
    refused at load, naming the field.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (test-only dependency, see requirements-test.txt)")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (test-only dependency, see requirements-test.txt)")
gguf = pytest.importorskip("gguf")
pytest.importorskip("sentencepiece")
pytest.importorskip("tokenizers")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_arch as TA  # noqa: E402
import test_convert as TC  # noqa: E402
from llama_ref import LlamaRef, rel_err  # noqa: E402
from model_util import Model  # noqa: E402

from llama_py import convert as C  # noqa: E402

N_EXPERT, N_USED = 8, 3


def _qwen3moe_config(n_vocab, bos, eos):
    return transformers.Qwen3MoeConfig(
        vocab_size=n_vocab, hidden_size=64, intermediate_size=128, moe_intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_experts=N_EXPERT, num_experts_per_tok=N_USED,
        norm_topk_prob=True, max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=None,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})


def _qwen2moe_config(n_vocab, bos, eos):
    return transformers.Qwen2MoeConfig(
        vocab_size=n_vocab, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
        shared_expert_intermediate_size=80, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        num_experts=N_EXPERT, num_experts_per_tok=N_USED, norm_topk_prob=False, max_position_embeddings=512,
        rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=None,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})


def _mixtral_config(n_vocab, bos, eos):
    return transformers.MixtralConfig(
        vocab_size=n_vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_local_experts=N_EXPERT, num_experts_per_tok=2, max_position_embeddings=512,
        rms_norm_eps=1e-6, tie_word_embeddings=False, sliding_window=None, bos_token_id=bos, eos_token_id=eos,
        pad_token_id=None, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def _olmoe_config(n_vocab, bos, eos):
    return transformers.OlmoeConfig(
        vocab_size=n_vocab, hidden_size=64, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_experts=N_EXPERT, num_experts_per_tok=N_USED, norm_topk_prob=False,
        max_position_embeddings=512, rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=bos,
        eos_token_id=eos, pad_token_id=None, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def _granitemoe_config(n_vocab, bos, eos, shared=0):
    # multipliers away from 1 (and from 1/sqrt(head size)) so each one shows if dropped
    kw = dict(shared_intermediate_size=shared) if shared else {}
    return (transformers.GraniteMoeSharedConfig if shared else transformers.GraniteMoeConfig)(
        vocab_size=n_vocab, hidden_size=64, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_local_experts=N_EXPERT, num_experts_per_tok=N_USED, max_position_embeddings=512,
        rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=None,
        embedding_multiplier=2.0, attention_multiplier=0.09, residual_multiplier=0.6, logits_scaling=3.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **kw)


# name -> (config, model class, tokenizer, GGUF architecture)
MODELS = {"qwen3moe": (_qwen3moe_config, "Qwen3MoeForCausalLM", "bpe", "qwen3moe"),
          "qwen2moe": (_qwen2moe_config, "Qwen2MoeForCausalLM", "bpe", "qwen2moe"),
          "mixtral": (_mixtral_config, "MixtralForCausalLM", "spm", "llama"),
          "olmoe": (_olmoe_config, "OlmoeForCausalLM", "bpe", "olmoe"),
          "granitemoe": (_granitemoe_config, "GraniteMoeForCausalLM", "bpe", "granitemoe"),
          "granitemoeshared": (lambda n, b, e: _granitemoe_config(n, b, e, shared=40), "GraniteMoeSharedForCausalLM",
                               "bpe", "granitemoe")}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, lib_path) -> Dict[str, TA.Tiny]:
    root = tmp_path_factory.mktemp("moe")
    sp_model = TC._train_spm(root)
    return {name: TA._build(root, name, sp_model, seed=40 + i, config=cfg, model_class=cls, tokenizer=tok)
            for i, (name, (cfg, cls, tok, _)) in enumerate(MODELS.items())}


def _prompts(t):
    return [t.ids(p)[:60] for p in (TC.PROMPTS[0], TA.LONG, TC.PROMPTS[2])]


@pytest.mark.parametrize("name", list(MODELS))
def test_logits_match_transformers(tiny, name):
    t = tiny[name]
    toks = _prompts(t)
    ref = [TA.hf_logits(t.model, x) for x in toks]
    errs = []
    for fa in (0, 1):
        ours = TA.our_batch(t.gguf, toks, flash_attn_type=fa)
        errs.append(max(rel_err(a, b) for a, b in zip(ours, ref)))
    errs.append(rel_err(TA.our_stepwise(t.gguf, toks[1]), ref[1]))
    print(f"\n{name}: batch {errs[0]:.2e} (flash {errs[1]:.2e}), token by token {errs[2]:.2e}", end="")
    assert max(errs) < 1e-3, errs


@pytest.mark.parametrize("name", list(MODELS))
def test_numpy_reference_matches_transformers(tiny, name):
    t = tiny[name]
    toks = t.ids(TA.LONG)[:60]
    err = rel_err(LlamaRef(str(t.gguf)).forward(toks), TA.hf_logits(t.model, toks))
    print(f"\n{name}: numpy float64 vs transformers {err:.2e}", end="")
    assert err < 1e-4, err


@pytest.mark.parametrize("name", list(MODELS))
def test_llama_cpp_converter_file_matches_transformers(tiny, name, tmp_path):
    from upstream_convert import convert_with_llama_cpp
    t = tiny[name]
    path = convert_with_llama_cpp(t.path, tmp_path / "upstream.gguf", "f32",
                                  pre="qwen2" if MODELS[name][2] == "bpe" else None)
    toks = _prompts(t)[:2]
    ref = [TA.hf_logits(t.model, x) for x in toks]
    err = max(rel_err(a, b) for a, b in zip(TA.our_batch(path, toks), ref))
    step = rel_err(TA.our_stepwise(path, toks[1]), ref[1])
    print(f"\n{name} (llama.cpp's converter): batch {err:.2e}, token by token {step:.2e}", end="")
    assert max(err, step) < 1e-3, (err, step)


@pytest.mark.parametrize("name", list(MODELS))
def test_q8_0_near_transformers(tiny, name):
    """Q8_0 weights: most positions stay near transformers' F32 logits. Rounding may flip a
    routing choice between two nearly equal experts (a discrete change: that position's logits
    move by tens of percent on these random weights), so the check is per position, on 80%."""
    t = tiny[name]
    q8 = t.path / "model-q8_0.gguf"
    C.convert(t.path, q8, "q8_0", progress=None)
    toks = t.ids(TA.LONG)[:60]
    ours, ref = TA.our_batch(q8, [toks])[0], TA.hf_logits(t.model, toks)
    per = np.array([rel_err(ours[i:i + 1], ref[i:i + 1]) for i in range(len(toks))])
    print(f"\n{name} q8_0: median {np.median(per):.2e}, {np.mean(per < 0.1):.0%} of positions within 0.1", end="")
    assert np.median(per) < 0.06 and np.mean(per < 0.1) >= 0.8, per
    # experts repacked at load and as stored: the same bits, for the prompt and token by token
    # (one pair per expert: the compact column on repacked panels, gemv from the stored rows)
    with Model(q8, use_extra_bufts=False) as m, TA.Ctx(m, n_ctx=256, n_batch=64, type_k=0, type_v=0) as c:
        assert c.decode_seq(toks) == 0
        plain = c.all_logits(len(toks))
    assert np.array_equal(ours, plain), np.abs(ours - plain).max()
    step = TA.our_stepwise(q8, toks[:12])
    with Model(q8, use_extra_bufts=False) as m, TA.Ctx(m, n_ctx=256, n_batch=64, type_k=0, type_v=0) as c:
        assert c.decode_seq(toks[:3]) == 0
        rows = [c.logits(i) for i in range(3)]
        for i in range(3, 12):
            assert c.decode_seq([toks[i]], start=i) == 0
            rows.append(c.logits(0))
    assert np.array_equal(step, np.stack(rows))
    assert np.array_equal(step, ours[:12]), "token by token differs from the prompt's bits"


@pytest.mark.parametrize("name", list(MODELS))
def test_f16_near_transformers(tiny, name):
    """F16 experts meet unrounded activations on every kernel set (dense F16 weights do where
    the kernel set has float tiles): against float64 on the very F16 weights we are as exact as F32."""
    t = tiny[name]
    f16 = t.path / "model-f16.gguf"
    C.convert(t.path, f16, "f16", progress=None)
    toks = t.ids(TA.LONG)[:60]
    ours, ref = TA.our_batch(f16, [toks])[0], TA.hf_logits(t.model, toks)
    same = LlamaRef(str(f16)).forward(toks)   # float64 on the very F16 weights
    err, err_same = rel_err(ours, ref), rel_err(ours, same)
    print(f"\n{name} f16: {err:.2e} vs transformers f32, {err_same:.2e} vs float64 on the same weights", end="")
    # portable / NEON kernels round the dense layers' activations to F16 (test_convert.py)
    assert err_same < (3e-3 if TC._float_weights_round_activations() else 1e-4), err_same


@pytest.mark.parametrize("name", list(MODELS))
def test_gguf_names_follow_gguf_constants(tiny, name):
    TA.test_gguf_names_follow_gguf_constants({MODELS[name][3]: tiny[name]}, MODELS[name][3])


def _rewrite(src: Path, dst: Path, arch: str = None, tensors=None, keys=None, drop=()):
    """A copy of src: general.architecture (and its key prefix) renamed to arch, tensors[name] =
    new array (None drops it), keys[key] = (value, GGUFValueType) (None drops it)."""
    r = gguf.GGUFReader(str(src))
    old = r.fields["general.architecture"].contents()
    arch = arch or old
    tensors, keys = tensors or {}, keys or {}
    w = gguf.GGUFWriter(str(dst), arch)
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture" or k in drop:
            continue
        nk = arch + k[len(old):] if k.startswith(old + ".") else k
        if k in keys:
            continue
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            w.add_key_value(nk, f.contents(), vt, sub_type=f.types[-1])
        else:
            w.add_key_value(nk, f.contents(), vt)
    for k, v in keys.items():
        if v is not None:
            w.add_key_value(k.replace(old + ".", arch + ".", 1), v[0], v[1])
    done = set()
    for t in r.tensors:
        if t.name in tensors:
            done.add(t.name)
            if tensors[t.name] is not None:
                w.add_tensor(t.name, np.ascontiguousarray(tensors[t.name], dtype=np.float32))
            continue
        w.add_tensor(t.name, np.ascontiguousarray(np.asarray(t.data).reshape([int(x) for x in reversed(t.shape)])))
    for name, a in tensors.items():
        if name not in done and a is not None:
            w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _tensor(r, name):
    t = next(x for x in r.tensors if x.name == name)
    return np.asarray(t.data).reshape([int(x) for x in reversed(t.shape)])


def test_identical_experts_equal_dense_ffn(tiny, tmp_path):
    """qwen3moe whose experts all hold expert 0's weights (weights renormalised: they sum to 1)
    gives the logits of the qwen3 model with that expert as its dense FFN."""
    src = tiny["qwen3moe"].gguf
    r = gguf.GGUFReader(str(src))
    n_layer = int(r.fields["qwen3moe.block_count"].contents())
    same, dense = {}, {}
    for il in range(n_layer):
        for kind in ("gate", "up", "down"):
            e = _tensor(r, f"blk.{il}.ffn_{kind}_exps.weight")
            same[f"blk.{il}.ffn_{kind}_exps.weight"] = np.repeat(e[:1], e.shape[0], axis=0)
            dense[f"blk.{il}.ffn_{kind}_exps.weight"] = None
            dense[f"blk.{il}.ffn_{kind}.weight"] = e[0]
        dense[f"blk.{il}.ffn_gate_inp.weight"] = None
    moe_path, dense_path = tmp_path / "same.gguf", tmp_path / "dense.gguf"
    _rewrite(src, moe_path, tensors=same)
    n_ff = int(r.fields["qwen3moe.expert_feed_forward_length"].contents())
    drop = {k for k in r.fields if k.startswith("qwen3moe.expert")}
    _rewrite(src, dense_path, arch="qwen3", tensors=dense, drop=drop,
             keys={"qwen3moe.feed_forward_length": (n_ff, gguf.GGUFValueType.UINT32)})
    toks = [tiny["qwen3moe"].ids(TA.LONG)[:40]]
    moe = TA.our_batch(moe_path, toks)[0]
    den = TA.our_batch(dense_path, toks)[0]
    err = rel_err(moe, den)
    print(f"\nidentical experts vs dense FFN: {err:.2e}", end="")
    assert err < 1e-5, err


def _tied_variant(t, tmp_path: Path, edit) -> TA.Tiny:
    """A copy of tiny model t (a transformers checkpoint) with edit(layer.mlp) applied to each
    layer, saved and converted by our converter."""
    import copy
    import shutil
    model = copy.deepcopy(t.model)
    with torch.no_grad():
        for layer in model.model.layers:
            edit(layer.mlp)
    d = tmp_path / "tied"
    shutil.copytree(t.path, d, ignore=shutil.ignore_patterns("*.gguf", "*.safetensors"))
    model.save_pretrained(str(d))
    return TA.Tiny(d, model, t.tok, t.arch)


def test_router_ties(tiny, tmp_path):
    """Exactly tied router logits. torch.topk has no rule for ties: its CPU kernel calls
    std::partial_sort when 64 * k <= n_expert, else std::nth_element then std::sort, so which of
    equal experts win depends on n_expert, k and where the ties sit (zero logits: 8 experts top-3
    -> 6, 5, 4; 64 top-8 -> 40..47; 128 top-8 -> 81..88; and C++ libraries differ). llama.cpp's
    CPU top-k (std::partial_sort) has none either. Ours takes the lower index first (a stable
    sort's order), always, as the float64 reference does. So:
      - experts paired with identical router rows and identical weights (ties between equals):
        transformers' logits, whichever of a pair either side picks;
      - a zero router (every expert tied, distinct experts): the float64 reference's choice,
        experts 0..k-1; transformers' logits then differ, as printed."""
    t = tiny["qwen3moe"]
    toks = t.ids(TA.LONG)[:40]

    def pair(mlp):
        for j in range(0, N_EXPERT, 2):
            mlp.gate.weight[j + 1] = mlp.gate.weight[j]
            mlp.experts.gate_up_proj[j + 1] = mlp.experts.gate_up_proj[j]
            mlp.experts.down_proj[j + 1] = mlp.experts.down_proj[j]

    paired = _tied_variant(t, tmp_path / "pair", pair)
    ref = TA.hf_logits(paired.model, toks)
    err = max(rel_err(TA.our_batch(paired.gguf, [toks])[0], ref), rel_err(TA.our_stepwise(paired.gguf, toks), ref))
    assert err < 1e-3, err

    zero = _tied_variant(t, tmp_path / "zero", lambda mlp: mlp.gate.weight.zero_())
    ours = TA.our_batch(zero.gguf, [toks])[0]
    err_ref = rel_err(ours, LlamaRef(str(zero.gguf)).forward(toks))
    err_step = rel_err(TA.our_stepwise(zero.gguf, toks), ours)
    hf_picks = torch.topk(torch.zeros(N_EXPERT), N_USED).indices.tolist()
    print(f"\npaired ties vs transformers {err:.2e}; zero router vs float64 {err_ref:.2e}, vs transformers "
          f"{rel_err(ours, TA.hf_logits(zero.model, toks)):.2e} (torch.topk picks {hf_picks}, ours "
          f"{list(range(N_USED))})", end="")
    assert err_ref < 1e-4 and err_step < 1e-4, (err_ref, err_step)


@pytest.mark.parametrize("keys", [
    {"expert_gating_func": (2, gguf.GGUFValueType.UINT32)},                       # sigmoid routing
    {"expert_weights_norm": (False, gguf.GGUFValueType.BOOL)},                    # raw softmax weights
    {"expert_weights_scale": (2.5, gguf.GGUFValueType.FLOAT32),
     "expert_gating_func": (2, gguf.GGUFValueType.UINT32)},
], ids=["sigmoid", "no-norm", "sigmoid-scale"])
def test_routing_variants_match_numpy(tiny, tmp_path, keys):
    """The routing keys other architectures set (sigmoid gating, no renormalisation, a weight
    scale) against the float64 reference, on a synthetic file from scripts/make_moe_model.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from make_moe_model import PRESETS, write_moe_model
    base = tmp_path / "base.gguf"
    vocab = tiny["qwen3moe"].gguf
    write_moe_model(base, **dict(PRESETS["tiny"], n_expert=6, n_expert_used=3), vocab=vocab, seed=3)
    path = tmp_path / "variant.gguf"
    _rewrite(base, path, keys={f"qwen3moe.{k}": v for k, v in keys.items()})
    toks = tiny["qwen3moe"].ids(TA.LONG)[:40]
    ref = LlamaRef(str(path)).forward(toks)
    err = rel_err(TA.our_batch(path, [toks])[0], ref)
    plain = rel_err(LlamaRef(str(base)).forward(toks), ref)
    print(f"\n{sorted(keys)}: {err:.2e} (the plain routing differs by {plain:.2e})", end="")
    assert err < 1e-4 and plain > 1e-3, (err, plain)


def _load_error(path: Path) -> str:
    return TA._load_error(path)


def test_bad_expert_files_are_refused(tiny, tmp_path):
    src = tiny["qwen3moe"].gguf
    r = gguf.GGUFReader(str(src))
    bad = tmp_path / "bad.gguf"
    u32 = gguf.GGUFValueType.UINT32
    _rewrite(src, bad, keys={"qwen3moe.expert_used_count": (N_EXPERT + 1, u32)})
    assert f"qwen3moe.expert_used_count = {N_EXPERT + 1} must be in 1..qwen3moe.expert_count = {N_EXPERT}" in _load_error(bad)
    _rewrite(src, bad, keys={"qwen3moe.expert_used_count": (0, u32)})
    assert "qwen3moe.expert_used_count = 0 must be in 1.." in _load_error(bad)
    _rewrite(src, bad, keys={"qwen3moe.expert_count": None})
    assert "missing required key 'qwen3moe.expert_count'" in _load_error(bad)
    _rewrite(src, bad, keys={"qwen3moe.expert_gating_func": (7, u32)})
    assert "qwen3moe.expert_gating_func = 7 is not supported" in _load_error(bad)
    up = _tensor(r, "blk.1.ffn_up_exps.weight")
    _rewrite(src, bad, tensors={"blk.1.ffn_up_exps.weight": up[:-1]})       # one expert short
    assert "tensor 'blk.1.ffn_up_exps.weight' has wrong shape" in _load_error(bad)
    _rewrite(src, bad, tensors={"blk.0.ffn_down_exps.weight": None})
    assert "missing tensor 'blk.0.ffn_down_exps.weight'" in _load_error(bad)
    # llama with experts (Mixtral) needs its router; without expert_count the experts are not read
    mx = tiny["mixtral"].gguf
    _rewrite(mx, bad, tensors={"blk.0.ffn_gate_inp.weight": None})
    assert "missing tensor 'blk.0.ffn_gate_inp.weight'" in _load_error(bad)
    _rewrite(mx, bad, keys={"llama.expert_count": None})
    assert "llama.expert_used_count = 2 without llama.expert_count" in _load_error(bad)



def test_granitemoe_bad_scales_are_refused(tiny, tmp_path):
    src, bad = tiny["granitemoe"].gguf, tmp_path / "bad.gguf"
    f32 = gguf.GGUFValueType.FLOAT32
    _rewrite(src, bad, keys={"granitemoe.logit_scale": (0.0, f32)})
    assert "granitemoe.logit_scale = 0 must be finite and not 0" in _load_error(bad)
    _rewrite(src, bad, keys={"granitemoe.residual_scale": (float("nan"), f32)})
    assert "granitemoe.residual_scale = nan must be finite" in _load_error(bad)
    _rewrite(src, bad, keys={"granitemoe.logit_scale": None})
    assert "missing required key 'granitemoe.logit_scale'" in _load_error(bad)

@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for VmHWM")
def test_repacked_experts_do_not_double_memory(tiny, tmp_path):
    """A Q8_0 MoE file whose experts are most of its bytes: loading repacks the experts (one copy
    of all their rows) and lets their stored pages go, so the peak resident memory stays near one
    copy of the file, as for dense weights (test_load_memory.py)."""
    import json
    import os
    import subprocess
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from make_moe_model import PRESETS, write_moe_model
    from make_synthetic_model import quantize
    from test_load_memory import PROBE, ROOT
    f16, q8 = tmp_path / "f16.gguf", tmp_path / "q8.gguf"
    write_moe_model(f16, **dict(PRESETS["tiny"], n_embd=512, n_head=8, head_dim=64, n_expert=16, n_ff_exp=1024),
                    ftype="f16", vocab=tiny["qwen3moe"].gguf)
    quantize(f16, q8, "Q8_0")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", PROBE, str(q8)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    size_kib = q8.stat().st_size // 1024
    grown, after = r["peak"] - r["base"], r["rss"] - r["base"]
    print(f"\nMoE Q8_0 load: peak +{grown} KiB, after load +{after} KiB, file {size_kib} KiB", end="")
    # each of two repacking threads holds at most one 8 MiB chunk of stored rows beside the copy;
    # the experts held twice would add ~50,000 KiB
    assert grown < size_kib + 32 * 1024 and after < size_kib + 8 * 1024, (grown, after, size_kib)


def _prompt_and_steps(path: Path, toks, ngl: int):
    """Every row of the prompt's logits, then the logits of each token decoded one by one after a
    3-token prompt, with ngl blocks on the device."""
    with TA.LogCapture() as log, Model(path, n_gpu_layers=ngl) as m, \
            TA.Ctx(m, n_ctx=128, n_batch=128, type_k=0, type_v=0) as c:
        assert c.decode_seq(toks) == 0
        prompt = c.all_logits(len(toks))
        TA.L.llama_memory_clear(c.mem, True)
        assert c.decode_seq(toks[:3]) == 0
        rows = [c.logits(i) for i in range(3)]
        for i in range(3, len(toks)):
            assert c.decode_seq([toks[i]], start=i) == 0
            rows.append(c.logits(0))
    assert ("offloaded" in log.text()) == (ngl > 0), log.text()
    return prompt, np.stack(rows)


@pytest.mark.parametrize("name", list(MODELS))
def test_offload_to_test_device_is_bit_identical(tiny, name):
    """Blocks on the test device (separate memory, CPU kernels: what a GPU backend sees, experts
    and router included) give the CPU's logits bit for bit, for the prompt and token by token."""
    from llama_py import ggml
    t = tiny[name]
    toks = t.ids(TA.LONG)[:30]
    base = _prompt_and_steps(t.gguf, toks, 0)
    ggml.ggml_backend_test_device_enable(True)
    try:
        for ngl in (1, 999):
            got = _prompt_and_steps(t.gguf, toks, ngl)
            assert np.array_equal(got[0], base[0]) and np.array_equal(got[1], base[1]), ngl
    finally:
        ggml.ggml_backend_test_device_enable(False)



def test_make_moe_model_writes_the_mix_directly(tiny, tmp_path):
    """scripts/make_moe_model.py --quantize (benchmark files of real shapes in seconds): every
    tensor gets the type our quantizer gives the F16 model of that shape, the quantized rows are
    whole, valid blocks (finite when the gguf package dequantizes them, near the drawn scale), and
    the file runs."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from make_moe_model import PRESETS, write_moe_model
    from make_synthetic_model import quantize
    from gguf.quants import dequantize
    shape = dict(PRESETS["tiny"], arch="olmoe", n_layer=3, n_embd=256, n_head=4, n_head_kv=4, head_dim=64,
                 n_expert=6, n_expert_used=2, n_ff_exp=256)
    direct, f16, q = tmp_path / "direct.gguf", tmp_path / "f16.gguf", tmp_path / "q.gguf"
    write_moe_model(direct, **shape, quantize_mix="Q4_K_M", vocab=tiny["olmoe"].gguf, seed=5)
    write_moe_model(f16, **shape, ftype="f16", vocab=tiny["olmoe"].gguf, seed=5)
    quantize(f16, q, "Q4_K_M")
    got = {t.name: t for t in gguf.GGUFReader(str(direct)).tensors}
    want = {t.name: t.tensor_type for t in gguf.GGUFReader(str(q)).tensors}
    assert {n: t.tensor_type for n, t in got.items()} == want
    assert {t.name for t in got.values() if t.tensor_type == gguf.GGMLQuantizationType.Q6_K} >= {
        "output.weight", "blk.2.attn_v.weight", "blk.2.ffn_down_exps.weight"}
    w = dequantize(got["blk.1.ffn_up_exps.weight"].data, gguf.GGMLQuantizationType.Q4_K)
    assert np.isfinite(w).all() and 0.5 < w.std() * np.sqrt(256) < 1.5, w.std()
    toks = tiny["olmoe"].ids(TA.LONG)[:16]
    logits = TA.our_batch(direct, [toks])[0]
    assert np.isfinite(logits).all() and logits.std() > 0

@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q2_K"])
def test_quantized_experts(tiny, tmp_path, qtype):
    """Experts in the K-quant and legacy types (our quantizer, make_moe_model.py file): repacked
    and stored give the same bits, the prompt and token by token too, and the logits stay near
    the float64 reference computed from the same quantized weights (gguf's dequantization)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from make_moe_model import PRESETS, write_moe_model
    from make_synthetic_model import quantize
    f16, q = tmp_path / "f16.gguf", tmp_path / f"{qtype}.gguf"
    write_moe_model(f16, **dict(PRESETS["tiny"], n_embd=256, n_head=4, head_dim=64, n_expert=6, n_expert_used=2,
                                n_ff_exp=256), ftype="f16", vocab=tiny["qwen3moe"].gguf, seed=7)
    quantize(f16, q, qtype)
    toks = tiny["qwen3moe"].ids(TA.LONG)[:24]
    rep = _prompt_and_steps(q, toks, 0)
    with Model(q, use_extra_bufts=False) as m, TA.Ctx(m, n_ctx=128, n_batch=128, type_k=0, type_v=0) as c:
        assert c.decode_seq(toks) == 0
        plain = c.all_logits(len(toks))
    assert np.array_equal(rep[0], plain), np.abs(rep[0] - plain).max()
    assert np.array_equal(rep[0], rep[1]), "token by token differs from the prompt's bits"
    ref = LlamaRef(str(q)).forward(toks)
    per = np.array([rel_err(rep[0][i:i + 1], ref[i:i + 1]) for i in range(len(toks))])
    print(f"\n{qtype}: median {np.median(per):.2e} vs float64 on the same weights", end="")
    assert np.median(per) < 0.05 and np.mean(per < 0.1) >= 0.8, per
