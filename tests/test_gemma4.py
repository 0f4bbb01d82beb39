"""Gemma 4 (text, dense) beyond what tests/test_arch.py checks for every architecture, on the
same tiny random Gemma4ForCausalLM (PLE, two KV-shared layers, K = V on the full layers,
sliding and full layers of different head sizes and KV-head counts):

  - the KV cache holds only the layers that own KV: a sequence's saved state grows per token
    by those layers' K and V rows, sized per layer from the GGUF's own keys;
  - several sequences interleaved in one batch each give transformers' logits;
  - a sequence's state saved after a prompt and restored into a fresh context continues with
    transformers' logits past the sliding window;
  - llama.cpp's converter writes the same keys and tensors, and its file gives the same logits;
  - the 26B-A4B form (experts beside each block's dense MLP) on a tiny model with 4 experts, 2
    per token: batch, flash attention, token by token, the NumPy reference, llama.cpp's file.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (test-only dependency, see requirements-test.txt)")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (test-only dependency, see requirements-test.txt)")
gguf = pytest.importorskip("gguf")
if not hasattr(transformers, "Gemma4ForCausalLM"):
    pytest.skip("this transformers has no Gemma4ForCausalLM", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_arch as T  # noqa: E402
import test_convert as TC  # noqa: E402
from llama_ref import rel_err  # noqa: E402
from model_util import Ctx, Model  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402


@pytest.fixture(scope="module")
def g4(tmp_path_factory, lib_path):
    root = tmp_path_factory.mktemp("gemma4")
    return T._build(root, "gemma4", TC._train_spm(root), seed=25)


def _kv_row_bytes(path: Path, elt: int = 4):
    """(bytes of one token's K and V rows in the layers owning KV, the same over all layers)."""
    r = gguf.GGUFReader(str(path))
    f = lambda k: r.fields[f"gemma4.{k}"].contents()  # noqa: E731
    n_layer, shared = f("block_count"), f("attention.shared_kv_layers")
    swa, n_kv = f("attention.sliding_window_pattern"), f("attention.head_count_kv")
    hd, hd_swa = f("attention.key_length"), f("attention.key_length_swa")
    rows = [2 * elt * n_kv[il] * (hd_swa if swa[il] else hd) for il in range(n_layer)]
    assert 0 < shared < n_layer
    return sum(rows[:n_layer - shared]), sum(rows)


def test_kv_cache_holds_only_owning_layers(g4):
    own, unshared = _kv_row_bytes(g4.gguf)
    toks = g4.ids(T.LONG)[:40]
    with Model(g4.gguf) as m, Ctx(m, n_ctx=64, n_batch=64, type_k=0, type_v=0) as c:
        assert c.decode_seq(toks[:10]) == 0
        s1 = L.llama_state_seq_get_size(c.ptr, 0)
        assert c.decode_seq(toks[10:30], start=10) == 0
        s2 = L.llama_state_seq_get_size(c.ptr, 0)
    # per cell: index, position, sequence count and id (4 bytes each), then its K/V rows
    per_token = (s2 - s1) / 20
    print(f"\ngemma4 tiny: KV {own} bytes/token (F32) with sharing, {unshared} without", end="")
    assert per_token == 16 + own, (per_token, own, unshared)


def test_sequences_in_one_batch(g4):
    seqs = [g4.ids(p)[:40] for p in (TC.PROMPTS[0], T.LONG, TC.PROMPTS[2])]
    assert len(seqs[1]) > 2 * T.WINDOW
    rows, where = [], []
    for i in range(max(map(len, seqs))):
        for s, toks in enumerate(seqs):
            if i < len(toks):
                where.append((s, i))
                rows.append((toks[i], i, [s], True))
    with Model(g4.gguf) as m, Ctx(m, n_ctx=256, n_batch=256, n_ubatch=256, n_seq_max=3, type_k=0, type_v=0) as c:
        assert c.decode_rows(rows) == 0
        got = [np.zeros((len(t), c.model.n_vocab)) for t in seqs]
        for r, (s, i) in enumerate(where):
            got[s][i] = c.logits(r)
    err = max(rel_err(got[s], T.hf_logits(g4.model, seqs[s])) for s in range(3))
    print(f"\ngemma4 three sequences in one batch: {err:.2e}", end="")
    assert err < 1e-3, err


def test_state_restore_continues(g4):
    toks = g4.ids(T.LONG)[:40]
    ref = T.hf_logits(g4.model, toks)
    n0 = 12
    with Model(g4.gguf) as m:
        with Ctx(m, n_ctx=64, n_batch=64, type_k=0, type_v=0) as c:
            assert c.decode_seq(toks[:n0]) == 0
            size = L.llama_state_seq_get_size(c.ptr, 0)
            buf = (ctypes.c_uint8 * size)()
            assert L.llama_state_seq_get_data(c.ptr, buf, size, 0) == size
        with Ctx(m, n_ctx=64, n_batch=64, type_k=0, type_v=0) as c:
            assert L.llama_state_seq_set_data(c.ptr, buf, size, 0) == size
            rows = []
            for i in range(n0, len(toks)):
                assert c.decode_seq([toks[i]], start=i) == 0
                rows.append(c.logits(0))
    err = rel_err(np.stack(rows), ref[n0:])
    print(f"\ngemma4 restored state, then token by token: {err:.2e}", end="")
    assert err < 1e-3, err


def test_llama_cpp_converter_file(g4, tmp_path):
    """llama.cpp's own converter (0.3.36 sdist) writes the same keys and tensors as ours, and its
    file (tokenizer.ggml.model 'gemma4') loads and gives transformers' logits. (Its tokenizer
    is the gemma4 type written over this tiny SentencePiece vocabulary, which segments text its
    own way; the real gemma-4 vocabulary's conformance is tested with the vocabularies.)"""
    from upstream_convert import convert_with_llama_cpp
    up = convert_with_llama_cpp(g4.path, tmp_path / "upstream.gguf", "f32")
    r_up, r_us = gguf.GGUFReader(str(up)), gguf.GGUFReader(str(g4.gguf))
    assert {t.name for t in r_up.tensors} == {t.name for t in r_us.tensors}
    for k, f in r_up.fields.items():
        if k.startswith("gemma4."):
            a, b = f.contents(), r_us.fields[k].contents()
            assert (np.allclose(a, b) if isinstance(a, float) else a == b), (k, a, b)
    fixed = up
    toks = g4.ids(T.LONG)[:60]
    ref = T.hf_logits(g4.model, toks)
    err = max(rel_err(T.our_batch(fixed, [toks])[0], ref), rel_err(T.our_stepwise(fixed, toks), ref))
    print(f"\ngemma4 (llama.cpp's converter): {err:.2e}", end="")
    assert err < 1e-3, err


@pytest.fixture(scope="module")
def g4moe(tmp_path_factory, lib_path):
    """The 26B-A4B form: experts beside every block's dense MLP (4 experts, 2 per token)."""
    root = tmp_path_factory.mktemp("gemma4moe")
    sp = TC._train_spm(root)
    orig = T._config

    def config(arch, n_vocab, bos, eos):
        c = orig(arch, n_vocab, bos, eos)
        c.enable_moe_block, c.num_experts, c.top_k_experts, c.moe_intermediate_size = True, 4, 2, 32
        c.hidden_size_per_layer_input = 0   # as the 26B-A4B model: no per-layer embeddings
        c.num_kv_shared_layers, c.use_double_wide_mlp = 0, False
        return c
    T._config = config
    try:
        t = T._build(root, "gemma4", sp, seed=26)
    finally:
        T._config = orig
    with torch.no_grad():   # the router's scales are ones at init: make them count
        for name, p in t.model.named_parameters():
            if name.endswith(("router.scale", "router.per_expert_scale")):
                p.uniform_(0.5, 1.5)
    t.model.save_pretrained(str(t.path))
    from llama_py import convert as C
    C.convert(t.path, t.gguf, "f32", progress=None)
    return t


def test_experts_match_transformers(g4moe):
    from llama_ref import LlamaRef
    from upstream_convert import convert_with_llama_cpp
    t = g4moe
    toks = t.ids(T.LONG)[:60]
    ref = T.hf_logits(t.model, toks)
    errs = {"batch": rel_err(T.our_batch(t.gguf, [toks])[0], ref),
            "flash": rel_err(T.our_batch(t.gguf, [toks], flash_attn_type=1)[0], ref),
            "token by token": rel_err(T.our_stepwise(t.gguf, toks), ref),
            "numpy": rel_err(LlamaRef(str(t.gguf)).forward(toks), ref)}
    up = convert_with_llama_cpp(t.path, t.path / "upstream.gguf", "f32")
    assert {x.name for x in gguf.GGUFReader(str(up)).tensors} == {x.name for x in gguf.GGUFReader(str(t.gguf)).tensors}
    errs["llama.cpp's converter"] = rel_err(T.our_batch(up, [toks])[0], ref)
    print("\ngemma4 experts: " + ", ".join(f"{k} {v:.2e}" for k, v in errs.items()), end="")
    assert max(errs.values()) < 1e-3, errs


@pytest.mark.parametrize("flash", [0, 1])
def test_shared_tail_runs_the_output_rows_only(g4, flash):
    """From the first KV-sharing layer on only the returned rows are computed: a prompt with
    every third row returned, then one with no row returned (its shared layers are not run)
    followed by decoding, give transformers' logits."""
    toks = g4.ids(T.LONG)[:40]
    ref = T.hf_logits(g4.model, toks)
    keep = [i for i in range(len(toks)) if i % 3 == 2 or i == len(toks) - 1]
    with Model(g4.gguf) as m, Ctx(m, n_ctx=64, n_batch=64, n_ubatch=64, type_k=0, type_v=0, flash_attn_type=flash) as c:
        assert c.decode_rows([(t, i, [0], i in keep) for i, t in enumerate(toks)]) == 0
        rows = np.stack([c.logits(k) for k in keep])
        L.llama_memory_clear(c.mem, True)
        n0 = 25
        assert c.decode_seq(toks[:n0], all_logits=False) == 0   # the last row only
        steps = [c.logits(n0 - 1)]
        L.llama_memory_clear(c.mem, True)
        assert c.decode_rows([(t, i, [0], False) for i, t in enumerate(toks[:n0])]) == 0   # no row
        for i in range(n0, len(toks)):
            assert c.decode_seq([toks[i]], start=i) == 0
            steps.append(c.logits(0))
    err = max(rel_err(rows, ref[keep]), rel_err(np.stack(steps), ref[n0 - 1:]))
    print(f"\ngemma4 output rows only (flash {flash}): {err:.2e}", end="")
    assert err < 1e-3, err


def _rewrite(src: Path, dst: Path, drop_tensor: str = None, key: str = None, value=None, vtype=None, sub=None):
    """A copy of src with one tensor dropped or one key replaced (value None: dropped)."""
    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst), "gemma4")
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture":
            continue
        if k == key:
            if value is not None:
                w.add_key_value(k, value, vtype, sub_type=sub)
            continue
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_key_value(k, f.contents(), f.types[0], sub_type=f.types[-1])
        else:
            w.add_key_value(k, f.contents(), f.types[0])
    for t in r.tensors:
        if t.name != drop_tensor:
            w.add_tensor(t.name, np.ascontiguousarray(np.asarray(t.data).reshape([int(x) for x in reversed(t.shape)])))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def test_bad_files_are_refused(g4, tmp_path):
    """Per-layer keys of the wrong length or type, sharing that leaves no owner, a missing
    K in a layer that owns KV or a missing PLE tensor: refused at load, naming the cause; a
    shared layer may lack K, V and its K norm."""
    A = gguf.GGUFValueType.ARRAY
    U32 = gguf.GGUFValueType.UINT32
    cases = [
        (dict(key="gemma4.attention.head_count_kv", value=[2, 2, 1], vtype=A, sub=U32),
         "must be a (u)int32 array of 6 values"),
        (dict(key="gemma4.attention.sliding_window_pattern", value=[1, 1, 0, 1, 1, 0], vtype=A, sub=U32),
         "must be a bool array of 6 values"),
        (dict(key="gemma4.attention.shared_kv_layers", value=6, vtype=U32), "leaves no layer owning KV"),
        (dict(key="gemma4.attention.shared_kv_layers", value=4, vtype=U32), "layer 2 shares KV, but no earlier layer"),
        (dict(drop_tensor="blk.3.attn_k.weight"), "missing tensor 'blk.3.attn_k.weight'"),
        (dict(drop_tensor="per_layer_model_proj.weight"), "missing tensor 'per_layer_model_proj.weight'"),
    ]
    for i, (change, msg) in enumerate(cases):
        bad = _rewrite(g4.gguf, tmp_path / f"bad{i}.gguf", **change)
        err = T._load_error(bad)
        assert msg in err, (change, err)
    # blk.4 and blk.5 share KV: they have no K / V / K norm, and load
    r = gguf.GGUFReader(str(g4.gguf))
    names = {t.name for t in r.tensors}
    assert "blk.4.attn_k.weight" not in names and "blk.3.attn_k.weight" in names
    assert "blk.2.attn_v.weight" not in names and "blk.1.attn_v.weight" in names   # K = V on full layers


def test_context_shift_matches_reference_cache(g4):
    """Drop [4, 8), move [8, end) back by 4 (keys re-rotated per KV-owning layer: sliding layers
    with their own base, full ones with the proportional rope's factors), continue: as the
    NumPy reference's cache does."""
    from llama_ref import LlamaRef
    ref = LlamaRef(str(g4.gguf))
    toks = g4.ids(T.LONG)[:24]
    with Model(g4.gguf) as m, Ctx(m, n_ctx=64, n_batch=64, type_k=0, type_v=0) as c:
        assert c.decode_seq(toks[:20]) == 0
        rc = ref.new_cache()
        ref.step(rc, toks[:20], list(range(20)))
        assert L.llama_memory_seq_rm(c.mem, 0, 4, 8)
        L.llama_memory_seq_add(c.mem, 0, 8, -1, -4)
        rc.rm(4, 8)
        rc.add(8, -1, -4)
        assert c.pos_max(0) == 15
        assert c.decode_seq(toks[20:24], start=16) == 0
        got = c.all_logits(4)
    err = rel_err(got, ref.step(rc, toks[20:24], [16, 17, 18, 19]))
    print(f"\ngemma4 context shift: {err:.2e}", end="")
    assert err < 1e-4, err


@pytest.fixture(scope="module")
def g4_real_vocab(tmp_path_factory):
    """The tiny gemma4 shape carrying the real gemma-4 vocabulary (262144 tokens)."""
    import resources
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import make_gemma4_model as MG
    vocab = resources.vocab_file("gemma-4")
    path = tmp_path_factory.mktemp("g4vocab") / "g4-chat.gguf"
    MG.write_gemma4_model(path, dict(MG.PRESETS["tiny"]), ftype="f32", vocab=vocab)
    return vocab, path


def test_gemma4_chat_template_renders_in_the_sandbox_and_chats(g4_real_vocab):
    """The real gemma-4 vocabulary's chat template (llama-cpp-python's ggml-vocab-gemma-4.gguf):
    rendered in our jinja2 sandbox it gives jinja2's own rendering for plain turns, a system
    prompt and a tool call with its result; a tiny gemma4 model carrying that vocabulary answers
    create_chat_completion with a prompt of exactly the template's tokens."""
    import json
    import jinja2
    import jinja2.ext
    from llama_py import Llama
    from llama_py._runtime.chat import format_chat
    vocab, path = g4_real_vocab
    tmpl = gguf.GGUFReader(str(vocab)).fields["tokenizer.chat_template"].contents()
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather of a city",
        "parameters": {"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "description": "City"}, "unit": {"type": "string", "enum": ["c", "f"]}}}}}]
    convs = [
        dict(messages=[{"role": "user", "content": "Hello"}]),
        dict(messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                       {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Name a colour."}]),
        dict(messages=[{"role": "user", "content": "Weather in Paris?"},
                       {"role": "assistant", "content": None, "tool_calls": [
                           {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                       {"role": "tool", "name": "get_weather", "content": "{\"temp\": 21}"}], tools=tools),
    ]
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False, sort_keys=False: json.dumps(
        x, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
    for c in convs:
        want = env.from_string(tmpl).render(messages=c["messages"], tools=c.get("tools"), bos_token="<bos>",
                                            eos_token="<eos>", add_generation_prompt=True)
        got = format_chat(c["messages"], tmpl, bos_token="<bos>", eos_token="<eos>", tools=c.get("tools"))
        assert got == want
    assert "declaration:get_weather{" in want and '<|turn>tool\n{"temp": 21}<turn|>' in want

    llm = Llama(model_path=str(path), n_ctx=256, verbose=False)
    try:
        msgs = convs[1]["messages"]
        out = llm.create_chat_completion(messages=msgs, max_tokens=6, temperature=0)
        prompt = env.from_string(tmpl).render(messages=msgs, bos_token="<bos>", eos_token="<eos>",
                                              add_generation_prompt=True)
        assert out["usage"]["prompt_tokens"] == len(llm.tokenize(prompt.encode(), add_bos=False, special=True))
        assert out["choices"][0]["message"]["role"] == "assistant"
        assert isinstance(out["choices"][0]["message"]["content"], str)
    finally:
        llm.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/pagemap (Linux only)")
def test_ple_table_stays_mapped_and_only_used_rows_are_read(g4_real_vocab):
    """The PLE table (262144 rows here, 50 MB) is neither read nor copied at load: none of its
    pages is in this process's page tables after loading; decoding tokens whose rows all lie in
    the table's first MiB maps pages of that region only (the kernel maps a page-cache folio,
    up to 2 MiB, per fault), never the rest of the table. scripts/ple_resident.py reports the
    same on the E4B-shaped file."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import ple_resident as P
    _, path = g4_real_vocab
    off, nbytes, rows = P.tensor_span(str(path))
    row_bytes = nbytes // rows
    assert rows == 262144 and nbytes > 32 << 20
    toks = [int(t) for t in np.random.default_rng(0).integers(3, (1 << 20) // row_bytes, size=24)]
    with Model(path) as m:
        addr, _ = P.mapped_range(str(path), off, nbytes)
        assert P.present_pages(addr, nbytes)[0] == 0   # nothing read or copied at load
        with Ctx(m, n_ctx=64, n_batch=64) as c:
            assert c.decode_seq(toks, all_logits=False) == 0
            for i, t in enumerate(toks[:8]):
                assert c.decode_seq([t], start=len(toks) + i) == 0
        present, total = P.present_pages(addr, nbytes)
        # pages present: all within a folio (2 MiB) of the rows read, or of the table's end (a
        # folio shared with the next tensor, which every token reads whole)
        page = 4096
        first = addr // page
        near_rows = range(first, (addr + (3 << 20)) // page)
        near_end = range((addr + nbytes - (2 << 20)) // page, first + total)
        with open("/proc/self/pagemap", "rb") as f:
            f.seek(first * 8)
            raw = f.read(total * 8)
        outside = [first + i for i in range(total)
                   if raw[i * 8 + 7] & 0x80 and first + i not in near_rows and first + i not in near_end]
    print(f"\nPLE table {total} pages: {present} present after {len(toks) + 8} tokens, {len(outside)} outside the rows' "
          f"region", end="")
    assert 0 < present <= len(near_rows) + len(near_end) and not outside, (present, outside[:5])
