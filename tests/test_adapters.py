"""LoRA adapters and control vectors against transformers + PEFT.

A tiny random LlamaForCausalLM gets random PEFT LoRA adapters (every projection, and the lm
head); `convert --lora` writes them in llama.cpp's LoRA GGUF format. References:
  - PEFT's own forward with the adapter at scale 1;
  - for other scales and for two adapters at once, transformers on weights merged in NumPy
    from PEFT's saved A/B (W + s * alpha/r * B A summed over adapters);
  - for control vectors, transformers with a forward hook adding the vector to the layer's output.
Bad adapters (another architecture, mismatched shapes, a missing B) are refused at load.
"""
from __future__ import annotations

import copy
import ctypes
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft", reason="peft (requirements-test.txt) is needed for the LoRA references")

import test_convert as TC  # noqa: E402
from model_util import Ctx, Model  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402
from llama_py.convert import convert  # noqa: E402
from llama_py.convert_lora import convert_lora  # noqa: E402

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]


def _peft_adapter(base, out: Path, seed: int, r: int, alpha: float):
    """A PEFT LoRA on every projection of base with random A and B; saved to out. Returns the
    adapter's {module name: (A, B)} as float64 NumPy arrays and the PEFT model."""
    torch.manual_seed(seed)
    cfg = peft.LoraConfig(r=r, lora_alpha=alpha, target_modules=TARGETS, init_lora_weights=False)
    pm = peft.get_peft_model(copy.deepcopy(base), cfg).eval()
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if "lora_" in name:
                p.normal_(0.0, 0.3)
    pm.save_pretrained(str(out))
    ab = {}
    for name, mod in pm.named_modules():
        if hasattr(mod, "lora_A") and "default" in getattr(mod, "lora_A", {}):
            ab[name.replace("base_model.model.", "")] = (mod.lora_A["default"].weight.detach().double().numpy(),
                                                        mod.lora_B["default"].weight.detach().double().numpy())
    return ab, pm


def _merged(base, adapters):
    """base with W += scale * alpha/r * B @ A for each (ab, alpha, r, scale) in adapters."""
    m = copy.deepcopy(base)
    mods = dict(m.named_modules())
    with torch.no_grad():
        for ab, alpha, r, scale in adapters:
            for name, (a, b) in ab.items():
                w = mods[name].weight
                w += torch.tensor(scale * alpha / r * (b @ a), dtype=w.dtype)
    return m


def _hf(model, toks):
    with torch.no_grad():
        return model(torch.tensor([toks])).logits[0].double().numpy()


def _ours(path: Path, toks, loras=(), cvec=None, **model_params):
    """Logits of every position with the adapters [(path, scale)] and control vector (data, il_start, il_end)."""
    with Model(path, **model_params) as m, Ctx(m, n_ctx=256, n_batch=256, n_ubatch=256, type_k=0, type_v=0) as c:
        handles = []
        for p, _ in loras:
            h = L.llama_adapter_lora_init(m.ptr, str(p).encode())
            assert h, p
            handles.append(h)
        if loras:
            arr = (L.llama_adapter_lora_p * len(handles))(*handles)
            sc = (ctypes.c_float * len(loras))(*[s for _, s in loras])
            assert L.llama_set_adapters_lora(c.ptr, arr, len(handles), sc) == 0
        if cvec is not None:
            data, il0, il1 = cvec
            buf = (ctypes.c_float * data.size)(*data.ravel().tolist())
            assert L.llama_set_adapter_cvec(c.ptr, buf, data.size, data.shape[1], il0, il1) == 0
        assert c.decode_seq(toks) == 0
        out = c.all_logits(len(toks))
        assert L.llama_set_adapters_lora(c.ptr, None, 0, None) == 0
        for h in handles:
            L.llama_adapter_lora_free(h)
        return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory, lib_path):
    root = tmp_path_factory.mktemp("lora")
    ck = TC._spm_checkpoint(root, TC._train_spm(root), "base", tied=False, seed=11)
    base_f32 = root / "base-f32.gguf"
    convert(ck.path, base_f32, "f32", progress=None)
    base_q8 = root / "base-q8_0.gguf"
    convert(ck.path, base_q8, "q8_0", progress=None)
    ad = {}
    for name, seed, r, alpha in (("one", 1, 4, 8.0), ("two", 2, 8, 4.0)):
        ab, pm = _peft_adapter(ck.model, root / f"peft-{name}", seed, r, alpha)
        out = root / f"lora-{name}.gguf"
        convert_lora(root / f"peft-{name}", ck.path, out, "f32")
        ad[name] = dict(ab=ab, pm=pm, r=r, alpha=alpha, gguf=out)
    toks = [1] + ck.sp.encode(TC.PROMPTS[0])[:40]
    return dict(ck=ck, f32=base_f32, q8=base_q8, ad=ad, toks=toks, root=root)


def _rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_lora_matches_peft_forward(setup):
    s = setup
    one = s["ad"]["one"]
    ref = _hf(one["pm"], s["toks"])
    assert _rel(_hf(s["ck"].model, s["toks"]), ref) > 0.05      # the adapter changes the output
    err = _rel(_ours(s["f32"], s["toks"], [(one["gguf"], 1.0)]), ref)
    assert err < 1e-3, err


@pytest.mark.parametrize("scale", [0.0, 0.5, 1.0])
def test_lora_scales(setup, scale):
    s = setup
    one = s["ad"]["one"]
    ref = _hf(_merged(s["ck"].model, [(one["ab"], one["alpha"], one["r"], scale)]), s["toks"])
    err = _rel(_ours(s["f32"], s["toks"], [(one["gguf"], scale)]), ref)
    assert err < 1e-3, (scale, err)


def test_two_adapters_sum(setup):
    s = setup
    a, b = s["ad"]["one"], s["ad"]["two"]
    ref = _hf(_merged(s["ck"].model, [(a["ab"], a["alpha"], a["r"], 0.7), (b["ab"], b["alpha"], b["r"], 0.4)]), s["toks"])
    err = _rel(_ours(s["f32"], s["toks"], [(a["gguf"], 0.7), (b["gguf"], 0.4)]), ref)
    assert err < 1e-3, err


def test_lora_on_quantized_fused_base(setup):
    """Q8_0 base: with repacking on, model.c fuses Q/K/V and gate/up and the adapters add to the
    fused product's parts; without it each matrix is its own product. The repacked kernels give
    the stored layout's bits, so the two must agree to float-summation order; and each must
    differ from the base (the adapters act)."""
    s = setup
    one = s["ad"]["one"]
    lora = [(one["gguf"], 1.0)]
    fused = _ours(s["q8"], s["toks"], lora)
    plain = _ours(s["q8"], s["toks"], lora, use_extra_bufts=False)
    err = _rel(fused, plain)
    assert err < 1e-4, err
    assert _rel(_ours(s["q8"], s["toks"]), plain) > 0.05


def test_adapter_held_f16_over_quantized_base(setup, tmp_path):
    """Over a quantized model the adapter is held as F16 (scaled by a power of two): an F32 file
    and an F16 file of the same adapter give the same logits to F16's rounding of the F32 values
    (the power-of-two scaling adds no error of its own), and both differ from the base."""
    s = setup
    one = s["ad"]["one"]
    f16 = tmp_path / "lora-one-f16.gguf"
    convert_lora(s["root"] / "peft-one", s["ck"].path, f16, "f16")
    got32 = _ours(s["q8"], s["toks"], [(one["gguf"], 1.0)])
    got16 = _ours(s["q8"], s["toks"], [(f16, 1.0)])
    assert _rel(got16, got32) < 1e-5, _rel(got16, got32)
    assert _rel(_ours(s["q8"], s["toks"]), got32) > 0.05


def test_control_vector(setup):
    s = setup
    ck = s["ck"]
    n_layer, n_embd = ck.model.config.num_hidden_layers, ck.model.config.hidden_size
    rng = np.random.default_rng(5)
    data = rng.normal(0, 0.5, size=(n_layer, n_embd)).astype(np.float32)   # rows: layers 1..n_layer
    il0, il1 = 1, n_layer - 1
    m = copy.deepcopy(ck.model)
    hooks = []
    for il in range(il0, il1 + 1):
        v = torch.tensor(data[il - 1])

        def add(mod, inp, out, v=v):
            return (out[0] + v,) + tuple(out[1:]) if isinstance(out, tuple) else out + v
        hooks.append(m.model.layers[il].register_forward_hook(add))
    ref = _hf(m, s["toks"])
    err = _rel(_ours(s["f32"], s["toks"], cvec=(data, il0, il1)), ref)
    assert err < 1e-3, err
    assert _rel(_hf(ck.model, s["toks"]), ref) > 0.01


def test_adapter_metadata(setup):
    s = setup
    with Model(s["f32"]) as m:
        h = L.llama_adapter_lora_init(m.ptr, str(s["ad"]["one"]["gguf"]).encode())
        assert h
        buf = ctypes.create_string_buffer(64)
        assert L.llama_adapter_meta_val_str(h, b"adapter.type", buf, 64) == 4 and buf.value == b"lora"
        assert L.llama_adapter_meta_val_str(h, b"adapter.lora.alpha", buf, 64) > 0 and float(buf.value) == 8.0
        n = L.llama_adapter_meta_count(h)
        keys = set()
        for i in range(n):
            assert L.llama_adapter_meta_key_by_index(h, i, buf, 64) > 0
            keys.add(buf.value)
        assert {b"general.architecture", b"general.type", b"adapter.type", b"adapter.lora.alpha"} <= keys
        assert L.llama_adapter_get_alora_n_invocation_tokens(h) == 0
        L.llama_adapter_lora_free(h)


def _rewrite_adapter(src: Path, dst: Path, arch=None, drop=None, reshape=None):
    """A copy of the adapter GGUF with another architecture, a tensor dropped or one cut short."""
    import gguf
    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst), arch or "llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", 8.0)
    for t in r.tensors:
        if t.name == drop:
            continue
        a = np.array(t.data, dtype=np.float32).reshape(list(reversed([int(x) for x in t.shape])))
        if t.name == reshape:
            a = a[:, :-1].copy()
        w.add_tensor(t.name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


@pytest.mark.parametrize("change", ["arch", "drop", "reshape", "not-gguf"])
def test_bad_adapters_refused(setup, tmp_path, change):
    s = setup
    src = s["ad"]["one"]["gguf"]
    dst = tmp_path / "bad.gguf"
    if change == "arch":
        _rewrite_adapter(src, dst, arch="qwen2")
    elif change == "drop":
        _rewrite_adapter(src, dst, drop="blk.0.attn_q.weight.lora_b")
    elif change == "reshape":
        _rewrite_adapter(src, dst, reshape="blk.1.ffn_down.weight.lora_a")
    else:
        dst.write_bytes(b"not a gguf at all")
    with Model(s["f32"]) as m:
        assert not L.llama_adapter_lora_init(m.ptr, str(dst).encode())
        assert not L.llama_adapter_lora_init(m.ptr, str(tmp_path / "missing.gguf").encode())


def test_converter_refuses_unknown_module(setup, tmp_path):
    from llama_py.convert import ConvertError
    s = setup
    d = tmp_path / "peft"
    d.mkdir()
    src = s["root"] / "peft-one"
    for f in src.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((d / "adapter_config.json").read_text())
    cfg["use_dora"] = True
    (d / "adapter_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConvertError, match="use_dora"):
        convert_lora(d, s["ck"].path, tmp_path / "x.gguf")


@pytest.mark.parametrize("outputs", ["all", "last"])
def test_per_sequence_adapters_in_one_decode(setup, outputs):
    """llama_set_adapters_lora_seq: four sequences (adapter one, two, none, both) in ONE decode,
    two of them split by a second decode mid-way; each gets its own adapters' logits: within 1e-3
    of transformers with those adapters merged, and equal to our single-sequence run with the same
    adapters set on the whole context (the delta of a row of another sequence is exactly 0)."""
    s = setup
    a, b = s["ad"]["one"], s["ad"]["two"]
    toks = s["toks"][:24]
    n = len(toks)
    sets = [[(a, 0.7)], [(b, 0.4)], [], [(a, 0.5), (b, 1.0)]]
    with Model(s["f32"]) as m, Ctx(m, n_ctx=512, n_batch=256, n_ubatch=256, n_seq_max=4, type_k=0, type_v=0) as c:
        h = {id(ad): L.llama_adapter_lora_init(m.ptr, str(ad["gguf"]).encode()) for ad in (a, b)}
        for seq, st in enumerate(sets):
            arr = (L.llama_adapter_lora_p * max(len(st), 1))(*[h[id(ad)] for ad, _ in st])
            sc = (ctypes.c_float * max(len(st), 1))(*[x for _, x in st])
            assert L.llama_set_adapters_lora_seq(c.ptr, seq, arr, len(st), sc) == 0
        assert L.llama_set_adapters_lora_seq(c.ptr, 4, None, 0, None) == -1       # outside n_seq_max
        # every sequence's first 16 tokens in one batch, interleaved; then the rest
        cut = 16
        want_out = (lambda i, end: True) if outputs == "all" else (lambda i, end: i == end - 1)
        got = {q: {} for q in range(4)}
        for lo, hi in ((0, cut), (cut, n)):
            rows, where = [], []
            for i in range(lo, hi):
                for q in range(4):
                    out = want_out(i, hi)
                    rows.append((toks[i], i, [q], out))
                    where.append((q, i, out))
            assert c.decode_rows(rows) == 0
            for k, (q, i, out) in enumerate(where):
                if out:
                    got[q][i] = c.logits(k)
        for ad in h.values():
            L.llama_adapter_lora_free(ad)
    for q, st in enumerate(sets):
        loras = [(ad["gguf"], x) for ad, x in st]
        single = _ours(s["f32"], toks, loras)
        ref = _hf(_merged(s["ck"].model, [(ad["ab"], ad["alpha"], ad["r"], x) for ad, x in st]), toks)
        for i, row in got[q].items():
            np.testing.assert_array_equal(row, single[i], err_msg=f"sequence {q} position {i}")
            assert _rel(row, ref[i]) < 1e-3, (q, i)


def test_llama_class_lora_path_and_set_lora(setup):
    """`Llama(lora_path=, lora_scale=)` and `set_lora` swapping adapters without a reload."""
    from llama_py import Llama
    s = setup
    one, two = s["ad"]["one"], s["ad"]["two"]
    toks = s["toks"]

    def last_row(llm):
        llm.reset()
        llm.eval(toks)
        return np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)

    want_one = _ours(s["f32"], toks, [(one["gguf"], 0.5)])[-1]
    want_two = _ours(s["f32"], toks, [(two["gguf"], 1.0)])[-1]
    want_base = _ours(s["f32"], toks)[-1]
    with Llama(str(s["f32"]), lora_path=str(one["gguf"]), lora_scale=0.5, n_ctx=256, verbose=False, type_k=0, type_v=0,
               logits_all=True) as llm:
        assert _rel(last_row(llm), want_one) < 1e-5
        llm.set_lora(str(two["gguf"]), 1.0)
        assert _rel(last_row(llm), want_two) < 1e-5
        llm.set_lora(None)
        assert _rel(last_row(llm), want_base) < 1e-5
        with pytest.raises(Exception, match="LoRA"):
            llm.set_lora(str(s["f32"]))          # a model, not an adapter


def test_convert_lora_command_line(setup, tmp_path):
    import subprocess
    import sys
    s = setup
    out = tmp_path / "cli.gguf"
    p = subprocess.run([sys.executable, "-m", "llama_py", "convert", "--lora", str(s["root"] / "peft-one"),
                        "--base", str(s["ck"].path), "--outfile", str(out), "--outtype", "f32"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "rank 4" in p.stderr
    want = _ours(s["f32"], s["toks"], [(s["ad"]["one"]["gguf"], 1.0)])
    assert _rel(_ours(s["f32"], s["toks"], [(out, 1.0)]), want) < 1e-6
    p = subprocess.run([sys.executable, "-m", "llama_py", "convert", "--lora", str(s["root"] / "peft-one")],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "--base" in p.stderr


# ---- aLoRA (activated LoRA) ----

@pytest.fixture(scope="module")
def alora(setup):
    """A PEFT aLoRA (random A/B on every projection but lm_head, whose rows PEFT's aLoRA does not
    mask) whose invocation tokens occur twice in the prompt: the adapter applies from the start of
    the last occurrence. Returns the converted GGUF, the prompt, the start and PEFT's logits."""
    s = setup
    ck, root = s["ck"], s["root"]
    base = s["toks"]
    inv = base[5:8]
    toks = base[:20] + inv + base[20:30] + inv + base[30:38]
    start = 20 + 3 + 10
    torch.manual_seed(7)
    cfg = peft.LoraConfig(r=4, lora_alpha=8.0, target_modules=TARGETS[:-1], init_lora_weights=False,
                          alora_invocation_tokens=list(inv), task_type="CAUSAL_LM")
    pm = peft.get_peft_model(copy.deepcopy(ck.model), cfg).eval()
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if "lora_" in name:
                p.normal_(0.0, 0.3)
    pm.save_pretrained(str(root / "peft-alora"))
    out = root / "alora.gguf"
    info = convert_lora(root / "peft-alora", ck.path, out, "f32")
    assert info["alora_invocation_tokens"] == list(inv)
    return dict(gguf=out, toks=toks, inv=list(inv), start=start, ref=_hf(pm, toks))


def test_alora_metadata(setup, alora):
    with Model(setup["f32"]) as m:
        h = L.llama_adapter_lora_init(m.ptr, str(alora["gguf"]).encode())
        assert h
        n = L.llama_adapter_get_alora_n_invocation_tokens(h)
        p = L.llama_adapter_get_alora_invocation_tokens(h)
        assert [p[i] for i in range(n)] == alora["inv"]
        L.llama_adapter_lora_free(h)


def test_alora_matches_peft(setup, alora):
    """The Llama class with the converted aLoRA: every position's logits within 1e-3 of PEFT's
    aLoRA forward; positions before the invocation start are the base model's (their rows gain
    exactly 0; the graph's layout with adapter nodes moves float rounding only), later ones differ."""
    from llama_py import Llama
    s = setup
    toks, start, ref = alora["toks"], alora["start"], alora["ref"]
    base = _ours(s["f32"], toks)
    with Llama(str(s["f32"]), lora_path=str(alora["gguf"]), n_ctx=256, verbose=False, type_k=0, type_v=0,
               logits_all=True) as llm:
        llm.eval(toks)
        got = np.array(llm.scores[:len(toks)], dtype=np.float64)
    assert _rel(got[:start], base[:start]) < 1e-5
    assert _rel(got[start:], base[start:]) > 0.05
    err = _rel(got, ref)
    assert err < 1e-3, err


def test_alora_per_sequence_start(setup, alora):
    """C API: llama_set_adapters_lora_seq + llama_set_alora_start on two sequences in one decode
    (starts 33 and none); rows before the start and the other sequence's rows are the base's: the
    same bits in both sequences, and the base model's to float rounding."""
    s = setup
    toks, start, ref = alora["toks"], alora["start"], alora["ref"]
    n = len(toks)
    base = _ours(s["f32"], toks)
    with Model(s["f32"]) as m, Ctx(m, n_ctx=512, n_batch=256, n_ubatch=256, n_seq_max=2, type_k=0, type_v=0) as c:
        h = L.llama_adapter_lora_init(m.ptr, str(alora["gguf"]).encode())
        arr = (L.llama_adapter_lora_p * 1)(h)
        sc = (ctypes.c_float * 1)(1.0)
        for q in (0, 1):
            assert L.llama_set_adapters_lora_seq(c.ptr, q, arr, 1, sc) == 0
        assert L.llama_set_alora_start(c.ptr, 0, start) == 0
        assert L.llama_set_alora_start(c.ptr, 1, -1) == 0
        assert L.llama_set_alora_start(c.ptr, 2, 0) == -1                  # outside n_seq_max
        rows = [(toks[i], i, [q], True) for i in range(n) for q in (0, 1)]
        assert c.decode_rows(rows) == 0
        got = np.array([c.logits(k) for k in range(2 * n)], dtype=np.float64).reshape(n, 2, -1)
        L.llama_adapter_lora_free(h)
    np.testing.assert_array_equal(got[:start, 0], got[:start, 1])
    assert _rel(got[:, 1], base) < 1e-5
    assert _rel(got[:, 0], ref) < 1e-3


def test_alora_llama_prefix_reuse(setup, alora):
    """The Llama class decides the start from what it decodes: the prompt split by eval() inside
    the invocation tokens gives one-shot logits (the cells of the invocation's first part are
    decoded again), and generate() over a context computed with another start re-decodes from the
    first position whose activation differs (its logits equal a fresh context's)."""
    from llama_py import Llama
    s = setup
    toks, start = alora["toks"], alora["start"]
    kw = dict(lora_path=str(alora["gguf"]), n_ctx=256, verbose=False, type_k=0, type_v=0, logits_all=True)
    with Llama(str(s["f32"]), **kw) as llm:
        llm.eval(toks)
        whole = np.array(llm.scores[:len(toks)], dtype=np.float64)
        llm.reset()
        llm.eval(toks[:start + 1])
        llm.eval(toks[start + 1:])
        assert _rel(np.array(llm.scores[:len(toks)], dtype=np.float64), whole) < 1e-6
        # a context whose cells were computed without the invocation, then the full prompt
        llm.reset()
        llm.eval(toks[:start])
        gen = llm.generate(toks, temp=0.0)
        next(gen)
        gen.close()
        assert _rel(np.array(llm.scores[len(toks) - 1], dtype=np.float64), whole[-1]) < 1e-6
        # and the other way: cells with the adapter, then a prompt without the last invocation
        short = toks[:start] + toks[start + 3:]
        llm.reset()
        llm.eval(short)
        want = np.array(llm.scores[len(short) - 1], dtype=np.float64)
        llm.reset()
        llm.eval(toks)
        gen = llm.generate(short, temp=0.0)
        next(gen)
        gen.close()
        assert _rel(np.array(llm.scores[len(short) - 1], dtype=np.float64), want) < 1e-6
