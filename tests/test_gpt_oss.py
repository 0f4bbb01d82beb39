"""gpt-oss (GptOssForCausalLM) on a tiny random-weight transformers model (fp32, eager attention):
attention sinks, Q/K/V/O biases, sliding-window (even) and full (odd) layers with a small window
of 8, YaRN rope, a router with a bias and softmax over the chosen top-4 logits, experts with
biases and the clamped SwiGLU. Converted by our converter and by llama.cpp's (0.3.36 sdist):

  - our F32 logits within 1e-3 relative of transformers', for a batch prompt (flash attention
    off and on: the sinks join the softmax path's and flash attention's denominators alike, and
    the two paths agree within 1e-5) and token by token through the KV cache, over more
    positions than the window;
  - a bad expert count refused at load, naming the field.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (test-only dependency, see requirements-test.txt)")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (test-only dependency, see requirements-test.txt)")
gguf = pytest.importorskip("gguf")
pytest.importorskip("sentencepiece")
pytest.importorskip("tokenizers")
if not hasattr(transformers, "GptOssForCausalLM"):
    pytest.skip("this transformers has no GptOssForCausalLM", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_arch as TA  # noqa: E402
import test_convert as TC  # noqa: E402
import test_moe_arch as TM  # noqa: E402
from llama_ref import LlamaRef, rel_err  # noqa: E402

WINDOW = 8


def _config(n_vocab, bos, eos):
    return transformers.GptOssConfig(
        vocab_size=n_vocab, hidden_size=64, intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_local_experts=8, num_experts_per_tok=4, sliding_window=WINDOW,
        max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=bos,
        eos_token_id=eos, pad_token_id=None, attn_implementation="eager",
        rope_parameters={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "truncate": TRUNCATE, "original_max_position_embeddings": 4096, "rope_theta": 150000.0})


# transformers' gpt-oss YaRN leaves the ramp's ends unrounded (truncate False); ggml rounds them
# (floor / ceil, as llama.cpp does): the tiny model uses the rounded form both sides agree on
TRUNCATE = True


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, lib_path):
    root = tmp_path_factory.mktemp("gptoss")
    sp_model = TC._train_spm(root)
    return TA._build(root, "gpt-oss", sp_model, seed=61, config=_config, model_class="GptOssForCausalLM",
                     tokenizer="bpe")


def _prompts(t):
    return [t.ids(p)[:40] for p in (TC.PROMPTS[0], TA.LONG)]


def test_logits_match_transformers(tiny):
    toks = _prompts(tiny)
    assert len(toks[1]) > 3 * WINDOW
    ref = [TA.hf_logits(tiny.model, x) for x in toks]
    errs = []
    for fa in (0, 1):
        ours = TA.our_batch(tiny.gguf, toks, flash_attn_type=fa)
        errs.append(max(rel_err(a, b) for a, b in zip(ours, ref)))
        if fa == 0:
            softmax_path = ours
    paths = max(rel_err(a, b) for a, b in zip(ours, softmax_path))
    errs.append(rel_err(TA.our_stepwise(tiny.gguf, toks[1]), ref[1]))
    print(f"\ngpt-oss: batch {errs[0]:.2e} (flash {errs[1]:.2e}, flash vs softmax {paths:.2e}), "
          f"token by token {errs[2]:.2e}", end="")
    assert max(errs) < 1e-3, errs
    assert paths < 1e-5, paths


def test_numpy_reference_matches_transformers(tiny):
    toks = _prompts(tiny)[1]
    err = rel_err(LlamaRef(str(tiny.gguf)).forward(toks), TA.hf_logits(tiny.model, toks))
    print(f"\ngpt-oss: numpy float64 vs transformers {err:.2e}", end="")
    assert err < 1e-4, err


def test_sinks_and_window_matter(tiny):
    """The tiny model is not blind to the features: zeroing the sinks or widening the window in
    transformers moves its logits well past the tolerance."""
    toks = _prompts(tiny)[1]
    ref = TA.hf_logits(tiny.model, toks)
    m = tiny.model
    saved = [layer.self_attn.sinks.detach().clone() for layer in m.model.layers]
    with torch.no_grad():
        for layer in m.model.layers:
            layer.self_attn.sinks.fill_(-1e9)
    try:
        assert rel_err(TA.hf_logits(m, toks), ref) > 1e-2
    finally:
        with torch.no_grad():
            for layer, s in zip(m.model.layers, saved):
                layer.self_attn.sinks.copy_(s)


def test_llama_cpp_converter_file_matches_transformers(tiny, tmp_path):
    from upstream_convert import convert_with_llama_cpp
    path = convert_with_llama_cpp(tiny.path, tmp_path / "upstream.gguf", "f32", pre="qwen2")
    toks = _prompts(tiny)
    ref = [TA.hf_logits(tiny.model, x) for x in toks]
    err = max(rel_err(a, b) for a, b in zip(TA.our_batch(path, toks), ref))
    step = rel_err(TA.our_stepwise(path, toks[1]), ref[1])
    print(f"\ngpt-oss (llama.cpp's converter): batch {err:.2e}, token by token {step:.2e}", end="")
    assert max(err, step) < 1e-3, (err, step)


def test_bad_expert_count_refused(tiny, tmp_path):
    bad = tmp_path / "bad.gguf"
    TM._rewrite(tiny.gguf, bad, keys={"gpt-oss.expert_used_count": (9, gguf.GGUFValueType.UINT32)})
    assert "expert_used_count" in TA._load_error(bad)
    bad2 = tmp_path / "bad2.gguf"
    TM._rewrite(tiny.gguf, bad2, keys={"gpt-oss.expert_count": (6, gguf.GGUFValueType.UINT32)})
    assert "ffn_gate_inp" in TA._load_error(bad2)


def _hf_with_gguf_weights(model, path):
    """A copy of the transformers model holding the file's weights, dequantized by the gguf
    package (independent of our kernels): the reference for a quantized file."""
    import copy
    from gguf.quants import dequantize
    m = copy.deepcopy(model)
    w = {t.name: torch.tensor(dequantize(t.data, t.tensor_type).reshape([int(x) for x in reversed(t.shape)]).copy(),
                              dtype=torch.float32)
         for t in gguf.GGUFReader(str(path)).tensors}
    with torch.no_grad():
        m.model.embed_tokens.weight.copy_(w["token_embd.weight"])
        m.lm_head.weight.copy_(w["output.weight"])
        for il, layer in enumerate(m.model.layers):
            b, a, x = f"blk.{il}.", layer.self_attn, layer.mlp.experts
            for n, mod in (("q", a.q_proj), ("k", a.k_proj), ("v", a.v_proj), ("output", a.o_proj)):
                mod.weight.copy_(w[f"{b}attn_{n}.weight"])
            gate_up = torch.empty_like(x.gate_up_proj)
            gate_up[..., ::2] = w[b + "ffn_gate_exps.weight"].transpose(1, 2)
            gate_up[..., 1::2] = w[b + "ffn_up_exps.weight"].transpose(1, 2)
            x.gate_up_proj.copy_(gate_up)
            x.down_proj.copy_(w[b + "ffn_down_exps.weight"].transpose(1, 2))
            layer.mlp.router.weight.copy_(w[b + "ffn_gate_inp.weight"])
    return m


def test_mxfp4_moe_quantized_matches_dequantized_reference(tiny, tmp_path):
    """`quantize ... MXFP4_MOE` (llama.cpp's mix): the experts become MXFP4, the rest Q8_0 (the
    router, biases, sinks and norms as stored). Our logits on that file follow transformers run
    on the gguf package's dequantization of the very same blocks (Q8_0 activations in the
    quantized dots: 2e-2); the F32 model's logits are much further away (the rounding is real)."""
    from llama_py.quantize import quantize
    out = tmp_path / "mxfp4.gguf"
    quantize(str(tiny.gguf), str(out), "MXFP4_MOE")
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(out)).tensors}
    assert types["blk.0.ffn_gate_exps.weight"] == "MXFP4" and types["blk.1.ffn_down_exps.weight"] == "MXFP4"
    assert types["blk.0.attn_q.weight"] == "Q8_0" and types["blk.0.ffn_gate_inp.weight"] == "F32"
    assert types["blk.0.attn_sinks.weight"] == "F32" and types["blk.0.ffn_up_exps.bias"] == "F32"
    toks = _prompts(tiny)[1]
    ours = TA.our_batch(out, [toks])[0]
    same = TA.hf_logits(_hf_with_gguf_weights(tiny.model, out), toks)
    f32 = TA.hf_logits(tiny.model, toks)
    per = np.array([rel_err(ours[i:i + 1], same[i:i + 1]) for i in range(len(toks))])
    print(f"\ngpt-oss MXFP4_MOE: median {np.median(per):.2e} vs the dequantized weights, "
          f"{rel_err(ours, f32):.2e} vs F32", end="")
    assert np.median(per) < 2e-2 and rel_err(ours, f32) > 5 * np.median(per), per



def _openai_mxfp4_checkpoint(tiny, d: Path):
    """The tiny model as OpenAI ships gpt-oss: expert weights as MXFP4 blocks and scales (the
    gguf package's reference quantizer picks the codes, rewritten into OpenAI's nibble order:
    values 2j and 2j + 1 in byte j's low and high nibbles), everything else as saved, plus a
    quantization_config. -> (the ggml blocks per GGUF expert tensor, a transformers model holding
    the dequantized weights)."""
    import copy
    import shutil
    from gguf.quants import dequantize, quantize
    from safetensors import safe_open
    from safetensors.torch import save_file
    mx = gguf.GGMLQuantizationType.MXFP4
    shutil.copytree(tiny.path, d, ignore=shutil.ignore_patterns("*.gguf", "*.safetensors"))
    cfg = (d / "config.json").read_text()
    import json
    cfg = json.loads(cfg)
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (d / "config.json").write_text(json.dumps(cfg))
    tensors, ggml_blocks = {}, {}
    for f in sorted(tiny.path.glob("*.safetensors")):
        with safe_open(str(f), "pt") as st:
            tensors.update({k: st.get_tensor(k) for k in st.keys()})
    ref = copy.deepcopy(tiny.model)

    def to_mxfp4(w_rows: np.ndarray):
        """rows [E, n, k] -> (OpenAI blocks [E, n, k/32, 16], scales [E, n, k/32], ggml bytes, dequantized)."""
        q = quantize(w_rows.reshape(-1, w_rows.shape[-1]), mx).reshape(w_rows.shape[0], w_rows.shape[1], -1, 17)
        codes = np.concatenate([q[..., 1:] & 0x0F, q[..., 1:] >> 4], axis=-1)   # ggml: j and j + 16
        blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
        deq = dequantize(q.reshape(-1, q.shape[2] * 17), mx).reshape(w_rows.shape)
        return blocks, q[..., 0], q, deq

    for il, layer in enumerate(ref.model.layers):
        x = layer.mlp.experts
        p = f"model.layers.{il}.mlp.experts."
        gate_up = tensors.pop(p + "gate_up_proj").float().numpy()          # [E, n_embd, 2 n_ff] (x @ W)
        down = tensors.pop(p + "down_proj").float().numpy()                # [E, n_ff, n_embd]
        b, sc, q, deq = to_mxfp4(np.ascontiguousarray(gate_up.transpose(0, 2, 1)))
        tensors[p + "gate_up_proj_blocks"], tensors[p + "gate_up_proj_scales"] = torch.tensor(b), torch.tensor(sc)
        ggml_blocks[f"blk.{il}.ffn_gate_exps.weight"] = q[:, 0::2]
        ggml_blocks[f"blk.{il}.ffn_up_exps.weight"] = q[:, 1::2]
        b2, sc2, q2, deq2 = to_mxfp4(np.ascontiguousarray(down.transpose(0, 2, 1)))
        tensors[p + "down_proj_blocks"], tensors[p + "down_proj_scales"] = torch.tensor(b2), torch.tensor(sc2)
        ggml_blocks[f"blk.{il}.ffn_down_exps.weight"] = q2
        with torch.no_grad():
            x.gate_up_proj.copy_(torch.tensor(deq.transpose(0, 2, 1)))
            x.down_proj.copy_(torch.tensor(deq2.transpose(0, 2, 1)))
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(d / "model.safetensors"), metadata={"format": "pt"})
    return ggml_blocks, ref


def test_openai_mxfp4_checkpoint(tiny, tmp_path):
    """A checkpoint in OpenAI's MXFP4 layout (gate_up_proj_blocks / _scales, ...): our convert
    writes its experts as MXFP4 without requantizing: the blocks equal the reference quantizer's
    byte for byte, as llama.cpp's converter's do, so both files give the same logits. Those follow
    transformers run on the dequantized weights as MXFP4_MOE files do (the MXFP4 dots take Q8_0
    activations: per-position median 2e-2, not 1e-3). transformers' own loader of such
    checkpoints (Mxfp4Config(dequantize=True)) reads the test's layout as the same weights."""
    from upstream_convert import convert_with_llama_cpp
    from llama_py import convert as C
    d = tmp_path / "openai"
    ggml_blocks, ref_model = _openai_mxfp4_checkpoint(tiny, d)
    toks = _prompts(tiny)[1]
    ref = TA.hf_logits(ref_model, toks)
    hf = transformers.GptOssForCausalLM.from_pretrained(
        str(d), quantization_config=transformers.Mxfp4Config(dequantize=True), dtype=torch.float32).eval()
    hf_err = rel_err(TA.hf_logits(hf, toks), ref)
    ours = tmp_path / "ours.gguf"
    C.convert(d, ours, "f32", progress=None)
    theirs = convert_with_llama_cpp(d, tmp_path / "upstream.gguf", "f32", pre="qwen2")
    logits = {}
    for label, path in (("ours", ours), ("llama.cpp's converter", theirs)):
        by_name = {t.name: t for t in gguf.GGUFReader(str(path)).tensors}
        for name, q in ggml_blocks.items():
            t = by_name[name]
            assert t.tensor_type == gguf.GGMLQuantizationType.MXFP4, (label, name, t.tensor_type)
            assert np.array_equal(np.asarray(t.data).reshape(-1), np.ascontiguousarray(q).reshape(-1)), (label, name)
        logits[label] = (TA.our_batch(path, [toks])[0], TA.our_stepwise(path, toks))
    (batch, step), (batch2, step2) = logits.values()
    assert np.array_equal(batch, batch2) and np.array_equal(step, step2)
    per = np.array([rel_err(batch[i:i + 1], ref[i:i + 1]) for i in range(len(toks))])
    per_step = np.array([rel_err(step[i:i + 1], ref[i:i + 1]) for i in range(len(toks))])
    f32 = rel_err(batch, TA.hf_logits(tiny.model, toks))
    print(f"\nOpenAI MXFP4 checkpoint: transformers' dequantizing loader {hf_err:.2e}; ours vs the dequantized "
          f"weights: median {np.median(per):.2e} batch, {np.median(per_step):.2e} token by token; {f32:.2e} vs F32",
          end="")
    assert hf_err < 1e-5, hf_err
    assert max(np.median(per), np.median(per_step)) < 2e-2 and f32 > 5 * np.median(per), (per, per_step)
    # a checkpoint that says mxfp4 but lacks one layer's scales, or has them in another shape: refused
    from safetensors.torch import load_file, save_file
    good = load_file(str(d / "model.safetensors"))
    name = "model.layers.1.mlp.experts.down_proj_scales"
    for bad, msg in ((None, f"checkpoint has no tensor '{name}'"),
                     (good[name][:, :-1], f"checkpoint tensor '{name}' is U8")):
        t = dict(good)
        if bad is None:
            del t[name]
        else:
            t[name] = bad.contiguous()
        save_file(t, str(d / "model.safetensors"), metadata={"format": "pt"})
        with pytest.raises(C.ConvertError, match=msg):
            C.convert(d, tmp_path / "bad.gguf", "f32", progress=None)

def test_harmony_end_of_generation(tiny, tmp_path):
    """o200k_harmony's tokens: a reply ends at <|return|> or <|call|>; <|end|>, which closes the
    analysis message inside a reply, is then no end of generation (llama.cpp's rule). Three
    tokens of the tiny vocabulary renamed to them (control tokens)."""
    from model_util import Model
    import llama_py.llama_cpp as L
    r = gguf.GGUFReader(str(tiny.gguf))
    toks = list(r.fields["tokenizer.ggml.tokens"].contents())
    types = list(r.fields["tokenizer.ggml.token_type"].contents())
    ids = {"<|end|>": len(toks) - 3, "<|return|>": len(toks) - 2, "<|call|>": len(toks) - 1}
    for name, i in ids.items():
        toks[i], types[i] = name, 3
    A = gguf.GGUFValueType.ARRAY

    def write(names, path):
        new = list(toks)
        for i, name in enumerate(names):
            new[len(toks) - 3 + i] = name
        TM._rewrite(tiny.gguf, path, keys={
            "tokenizer.ggml.tokens": (new, A), "tokenizer.ggml.token_type": (types, A)},
            drop=("tokenizer.ggml.tokens", "tokenizer.ggml.token_type"))
        return path
    harmony = write(list(ids), tmp_path / "harmony.gguf")
    with Model(harmony) as m:
        eog = {n: bool(L.llama_vocab_is_eog(m.vocab, i)) for n, i in ids.items()}
    assert eog == {"<|end|>": False, "<|return|>": True, "<|call|>": True}, eog
    # the server's engine renders the control tokens of a request that asks (harmony chats)
    from llama_py.server.engine import Engine, GenRequest, Model as ServerModel, SamplingParams
    sm = ServerModel(str(harmony))
    try:
        with Engine(sm, n_slots=1, n_ctx=128) as eng:
            sp = SamplingParams(temperature=0.0, logit_bias={ids["<|end|>"]: 100.0})
            texts = [eng.submit(GenRequest(sm.tokenize("hello"), max_tokens=2, sampling=sp, special=special))
                     .result(timeout=120)[0] for special in (True, False)]
    finally:
        sm.close()
    assert texts == ["<|end|><|end|>", ""], texts
    # without the harmony pair <|end|> keeps ending a turn (Phi-3's <|end|>)
    with Model(write(["<|end|>", "<|x|>", "<|y|>"], tmp_path / "end.gguf")) as m:
        assert L.llama_vocab_is_eog(m.vocab, ids["<|end|>"])


# harmony replies as OpenAI's harmony format guide spells them (the prompt ends in <|start|>assistant)
_REASONED = ("<|channel|>analysis<|message|>User asks for 2+2. Simple.<|end|>"
             "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.")
_TOOL = ("<|channel|>analysis<|message|>Need the weather: call the tool.<|end|>"
         "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
         "<|message|>{\"location\": \"Tokyo\"}")


def test_harmony_reply_to_chat_message():
    from llama_py._runtime import chat as R
    msg, finish = R.harmony_message(_REASONED, "stop", "call_1")
    assert msg == {"role": "assistant", "content": "2 + 2 = 4.", "reasoning_content": "User asks for 2+2. Simple."}
    assert finish == "stop"
    msg, finish = R.harmony_message(_TOOL, "stop", "call_1")
    assert finish == "tool_calls" and msg["content"] is None
    assert msg["reasoning_content"] == "Need the weather: call the tool."
    assert msg["tool_calls"] == [{"id": "call_1", "type": "function",
                                  "function": {"name": "get_weather", "arguments": "{\"location\": \"Tokyo\"}"}}]
    assert R.harmony_message("plain text", "length", "c")[0] == {"role": "assistant", "content": "plain text"}


_HANDLER_TEMPLATE = ("{% for m in messages %}<|start|>{{ m.role }}{% if m.role == 'assistant' %}<|channel|>final"
                     "{% endif %}<|message|>{{ m.content }}<|end|>{% endfor %}<|start|>assistant")


class _FakeHarmonyLlama:
    """What the chat handler needs of a Llama: its completion is _REASONED (whole, or streamed
    in 4-character chunks); seen records _render_special at each step of the completion."""
    _render_special = False

    def __init__(self):
        self.seen = []

    def tokenize(self, data, add_bos=True, special=False):
        return list(data)

    def create_completion(self, **kw):
        def chunk(text, finish):
            self.seen.append(self._render_special)
            return {"id": "x", "created": 0, "model": "m", "usage": {},
                    "choices": [{"text": text, "finish_reason": finish, "logprobs": None}]}
        if not kw.get("stream"):
            return chunk(_REASONED, "stop")
        return (chunk(_REASONED[i:i + 4], None) if i < len(_REASONED) else chunk("", "stop")
                for i in range(0, len(_REASONED) + 4, 4))


def test_harmony_chat_completion_handler():
    """create_chat_completion's handler with a harmony template: the reply's control tokens are
    rendered (the completion sees _render_special set) and split into channels."""
    from llama_py import llama_chat_format as F
    handler = F.chat_formatter_to_chat_completion_handler(F.Jinja2ChatFormatter(_HANDLER_TEMPLATE, eos_token="",
                                                                                 bos_token=""))
    llm = _FakeHarmonyLlama()
    out = handler(llama=llm, messages=[{"role": "user", "content": "2+2?"}])
    assert llm.seen == [True] and llm._render_special is False
    m = out["choices"][0]["message"]
    assert m["content"] == "2 + 2 = 4." and m["reasoning_content"] == "User asks for 2+2. Simple."


_TWO_CALLS = ("<|channel|>analysis<|message|>Two lookups.<|end|>"
              "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
              "<|message|> {\"location\": \"Oslo\"} <|call|>"
              "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{\"zone\": \"CET\"}")


@pytest.mark.parametrize("reply", [_REASONED, _TOOL, _TWO_CALLS, "plain text, no channels"])
def test_harmony_streamed_deltas(reply):
    """Streamed in pieces of 1, 2, 5 and 11 characters: the analysis channel arrives as
    reasoning_content deltas, the final channel as content deltas, a to=functions.X message as a
    tool call header and argument fragments; put together they equal the whole reply's message."""
    from openai.types.chat import ChatCompletionChunk
    from llama_py._runtime import chat as R
    whole, wfinish = R.harmony_message(reply, "stop", "call_1")
    for step in (1, 2, 5, 11):
        d = R.HarmonyDeltas("call_1")
        deltas = [d.opening()] + [x for i in range(0, len(reply), step) for x in d.text(reply[i:i + step])]
        tail, finish = d.finish("stop")
        deltas += tail
        for x in deltas:  # each is a valid OpenAI chunk delta
            ChatCompletionChunk(id="x", object="chat.completion.chunk", created=0, model="m",
                                choices=[{"index": 0, "delta": x, "finish_reason": None}])
        assert finish == wfinish
        assert "".join(x.get("reasoning_content", "") for x in deltas) == whole.get("reasoning_content", "")
        assert "".join(x.get("content") or "" for x in deltas) == (whole["content"] or "")
        assert not any("<|" in (x.get("content") or "") + x.get("reasoning_content", "") for x in deltas) \
            or "<|" in reply and "<|message|>" not in reply
        calls = {}
        for x in deltas:
            for tc in x.get("tool_calls", []):
                c = calls.setdefault(tc["index"], ["", ""])
                c[0] += tc["function"].get("name") or ""
                c[1] += tc["function"]["arguments"]
        assert [tuple(c) for _, c in sorted(calls.items())] == \
            [(c["function"]["name"], c["function"]["arguments"]) for c in whole.get("tool_calls", [])]
        if step == 1 and reply is _REASONED:  # the text goes out as it comes, not at the end
            assert len([x for x in deltas if x.get("reasoning_content")]) > 10
    if reply is _TWO_CALLS:
        assert [c["function"]["name"] for c in whole["tool_calls"]] == ["get_weather", "get_time"]
        assert whole["tool_calls"][0]["function"]["arguments"] == '{"location": "Oslo"}'
        assert [c["id"] for c in whole["tool_calls"]] == ["call_1", "call_1_1"]


def test_harmony_chat_completion_handler_streams_channels():
    """create_chat_completion(stream=True) with a harmony template: the completion runs with its
    control tokens rendered (only while it runs) and its chunks come out split into channels."""
    from llama_py import llama_chat_format as F
    handler = F.chat_formatter_to_chat_completion_handler(F.Jinja2ChatFormatter(_HANDLER_TEMPLATE, eos_token="",
                                                                                 bos_token=""))
    llm = _FakeHarmonyLlama()
    chunks = list(handler(llama=llm, messages=[{"role": "user", "content": "2+2?"}], stream=True))
    assert llm.seen and all(llm.seen) and llm._render_special is False
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "User asks for 2+2. Simple."
    assert "".join(d.get("content") or "" for d in deltas) == "2 + 2 = 4."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


_HARMONY_TOKENS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>", "<|return|>", "<|call|>"]
_HARMONY_TEMPLATE = ("{% for m in messages %}<|start|>{{ m.role }}{% if m.role == 'assistant' %}<|channel|>final"
                     "{% endif %}<|message|>{{ m.content }}<|end|>{% endfor %}"
                     "{% if add_generation_prompt %}<|start|>assistant{% endif %}")
# what the replies are made to be (a GBNF grammar with token references picks every token)
_G_REASONED = ('root ::= <|channel|> "analysis" <|message|> "Think a bit." <|end|> <|start|> "assistant" '
               '<|channel|> "final" <|message|> "Yes it is." <|return|>')
_G_CALL = ('root ::= <|channel|> "analysis" <|message|> "Call it." <|end|> <|start|> "assistant" <|channel|> '
           '"commentary to=functions.get_weather " <|constrain|> "json" <|message|> "{\\"city\\": \\"Oslo\\"}" <|call|>')


@pytest.fixture(scope="module")
def harmony_gguf(tiny, tmp_path_factory):
    """The tiny model with its last tokens renamed to harmony's control tokens and a harmony
    chat template."""
    r = gguf.GGUFReader(str(tiny.gguf))
    toks = list(r.fields["tokenizer.ggml.tokens"].contents())
    types = list(r.fields["tokenizer.ggml.token_type"].contents())
    for k, name in enumerate(_HARMONY_TOKENS):
        i = len(toks) - len(_HARMONY_TOKENS) + k
        toks[i], types[i] = name, 3
    A = gguf.GGUFValueType.ARRAY
    out = tmp_path_factory.mktemp("harmony") / "harmony.gguf"
    TM._rewrite(tiny.gguf, out, keys={"tokenizer.ggml.tokens": (toks, A), "tokenizer.ggml.token_type": (types, A),
                                      "tokenizer.chat_template": (_HARMONY_TEMPLATE, gguf.GGUFValueType.STRING)},
                drop=("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.chat_template"))
    return out


def _joined(deltas):
    calls = {}
    for d in deltas:
        for tc in d.get("tool_calls") or []:
            c = calls.setdefault(tc["index"], ["", ""])
            c[0] += (tc.get("function") or {}).get("name") or ""
            c[1] += (tc.get("function") or {}).get("arguments") or ""
    return ("".join(d.get("reasoning_content") or "" for d in deltas), "".join(d.get("content") or "" for d in deltas),
            [tuple(c) for _, c in sorted(calls.items())])


@pytest.mark.parametrize("gbnf,want", [
    (_G_REASONED, ("Think a bit.", "Yes it is.", [], "stop")),
    (_G_CALL, ("Call it.", "", [("get_weather", '{"city": "Oslo"}')], "tool_calls"))], ids=["final", "call"])
def test_harmony_streamed_in_llama_and_server(harmony_gguf, gbnf, want):
    """A harmony reply streamed by create_chat_completion and by the server: reasoning_content
    deltas for the analysis channel, content deltas for the final one, a tool call for a
    to=functions message, as many deltas as the reply has tokens; the same as the whole reply."""
    from server_util import need_server_packages, running_server
    from llama_py import Llama, LlamaGrammar
    msgs = [{"role": "user", "content": "hi"}]
    with Llama(str(harmony_gguf), n_ctx=256, verbose=False) as llm:
        kw = dict(max_tokens=80, temperature=0)
        whole = llm.create_chat_completion(msgs, grammar=LlamaGrammar.from_string(gbnf, verbose=False), **kw)
        chunks = list(llm.create_chat_completion(msgs, grammar=LlamaGrammar.from_string(gbnf, verbose=False),
                                                 stream=True, **kw))
    m = whole["choices"][0]["message"]
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
    assert (m.get("reasoning_content"), m["content"] or "", calls, whole["choices"][0]["finish_reason"]) == want
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert _joined(deltas) == want[:3] and chunks[-1]["choices"][0]["finish_reason"] == want[3]
    assert len([d for d in deltas if d.get("reasoning_content")]) >= 4  # piece by piece
    need_server_packages()
    import openai
    from llama_py.server.app import ModelEntry
    with running_server([ModelEntry.load("h", str(harmony_gguf), n_slots=1, n_ctx=256)]) as (url, app):
        c = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        skw = dict(model="h", messages=msgs, max_tokens=80, temperature=0, extra_body={"grammar": gbnf})
        r = c.chat.completions.create(**skw).choices[0]
        got = [(t.function.name, t.function.arguments) for t in r.message.tool_calls or []]
        assert (r.message.reasoning_content, r.message.content or "", got, r.finish_reason) == want
        schunks = list(c.chat.completions.create(stream=True, **skw))
    sdeltas = [ch.choices[0].delta.model_dump(exclude_none=True) for ch in schunks if ch.choices]
    assert _joined(sdeltas) == want[:3] and schunks[-1].choices[0].finish_reason == want[3]
    assert len([d for d in sdeltas if d.get("reasoning_content")]) >= 4
