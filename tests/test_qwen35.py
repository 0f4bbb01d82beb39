"""qwen35 (Qwen3.5 / 3.6 dense): three Gated DeltaNet layers to one gated-attention layer, the
recurrent memory beside the KV cache (src/memory-recurrent.c), on a tiny random-weight
`Qwen3_5ForCausalLM` from transformers (fp32, 2 key heads under 4 value heads so that the value
heads' tiled order matters):

  - converted by our converter and by llama.cpp's convert_hf_to_gguf.py (0.3.36 sdist): logits
    within 1e-3 relative of transformers' for a batch prompt, token by token, and a prompt cut
    into several ubatches;
  - several sequences in one batch (rows interleaved, different lengths) give each sequence's
    single-sequence logits, read back by batch index;
  - seq_rm that would cut a recurrent state mid-way returns false and changes nothing; removing
    the whole sequence works; seq_cp then diverging continuations match separate runs;
  - a state saved mid-generation and loaded into a fresh context continues bit-identically.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path
from typing import List

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (test-only dependency, see requirements-test.txt)")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (test-only dependency, see requirements-test.txt)")
if not hasattr(transformers, "Qwen3_5ForCausalLM"):
    pytest.skip("this transformers has no Qwen3_5ForCausalLM (added in 5.x)", allow_module_level=True)
pytest.importorskip("tokenizers")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_util import Ctx, Model  # noqa: E402
from llama_ref import rel_err  # noqa: E402
import test_convert as TC  # noqa: E402  (tokenizer trainer, prompts)

import llama_py.llama_cpp as L  # noqa: E402
from llama_py import convert as C  # noqa: E402

transformers.utils.logging.disable_progress_bar()
transformers.utils.logging.set_verbosity_error()


class Tiny:
    def __init__(self, d: Path, model, tok):
        self.path, self.model, self.tok = d, model, tok
        self.gguf = d / "model-f32.gguf"
        C.convert(d, self.gguf, "f32", progress=None)

    def ids(self, text: str, n: int = 40) -> List[int]:
        return list(self.tok(text)["input_ids"])[:n]


def _build(d: Path, moe: bool) -> Tiny:
    tk, specials = TC._train_bpe("qwen2")
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token=specials[0], bos_token=None)
    tok.save_pretrained(str(d))
    common = dict(
        vocab_size=len(tok), hidden_size=64, num_hidden_layers=8, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4, max_position_embeddings=512,
        rms_norm_eps=1e-6, eos_token_id=tok.eos_token_id, tie_word_embeddings=False,
        mtp_num_hidden_layers=1)   # as the released checkpoints declare: llama.cpp's converter adds the block count
    if moe:
        cfg = transformers.Qwen3_5MoeTextConfig(num_experts=8, num_experts_per_tok=3, moe_intermediate_size=32,
                                                shared_expert_intermediate_size=48, **common)
        model = transformers.Qwen3_5MoeForCausalLM(cfg)
    else:
        model = transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(intermediate_size=128, **common))
    torch.manual_seed(36 if moe else 35)
    model = model.eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "linear_attn.norm" in name:
                p.uniform_(0.5, 1.5)          # plain weight
            elif "norm" in name:
                p.uniform_(-0.5, 0.5)         # the others scale by (1 + w)
            elif "A_log" in name:
                p.uniform_(-1.0, 1.0)
            elif "dt_bias" in name:
                p.normal_(0.0, 0.5)
            else:
                p.normal_(0.0, 1.0 / np.sqrt(p.shape[-1]))
    model.save_pretrained(str(d))
    return Tiny(d, model, tok)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, lib_path) -> Tiny:
    return _build(tmp_path_factory.mktemp("qwen35"), moe=False)


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory, lib_path) -> Tiny:
    if not hasattr(transformers, "Qwen3_5MoeForCausalLM"):
        pytest.skip("this transformers has no Qwen3_5MoeForCausalLM")
    return _build(tmp_path_factory.mktemp("qwen35moe"), moe=True)


def hf_logits(model, toks: List[int]) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor([toks])).logits[0].double().numpy()


def ctx_for(m, **cp):
    p = dict(n_ctx=256, n_batch=256, n_ubatch=256, type_k=0, type_v=0, n_seq_max=4)
    p.update(cp)
    return Ctx(m, **p)


def batch_logits(path: Path, toks: List[int], **cp) -> np.ndarray:
    with Model(path) as m, ctx_for(m, **cp) as c:
        assert c.decode_seq(toks) == 0
        return c.all_logits(len(toks))


def stepwise_logits(path: Path, toks: List[int]) -> np.ndarray:
    with Model(path) as m, ctx_for(m) as c:
        assert c.decode_seq(toks[:3]) == 0
        rows = [c.logits(i) for i in range(3)]
        for i in range(3, len(toks)):
            assert c.decode_seq([toks[i]], start=i) == 0
            rows.append(c.logits(0))
        return np.stack(rows)


def test_batch_token_by_token_and_ubatches_match_transformers(tiny):
    toks = tiny.ids(TC.PROMPTS[1])
    ref = hf_logits(tiny.model, toks)
    batch = rel_err(batch_logits(tiny.gguf, toks), ref)
    step = rel_err(stepwise_logits(tiny.gguf, toks), ref)
    split = rel_err(batch_logits(tiny.gguf, toks, n_ubatch=7), ref)   # the states carried across ubatches
    print(f"\nqwen35: batch {batch:.2e}, token by token {step:.2e}, ubatches of 7 {split:.2e}", end="")
    assert max(batch, step, split) < 1e-3, (batch, step, split)


@pytest.mark.parametrize("n_ubatch", [5, 64, 100, 256])
def test_long_prompt_in_ubatches_of_several_sizes_matches_transformers(tiny, n_ubatch):
    """A prompt of several chunks of 64 (the chunked scan runs within each ubatch and its state
    carries to the next): partial chunks, exact chunks and ubatches that cut chunks."""
    toks = (tiny.ids(" ".join(TC.PROMPTS)) * 8)[:200]
    assert len(toks) == 200
    ref = hf_logits(tiny.model, toks)
    err = rel_err(batch_logits(tiny.gguf, toks, n_ubatch=n_ubatch), ref)
    print(f"\nqwen35: 200-token prompt in ubatches of {n_ubatch}: {err:.2e}", end="")
    assert err < 1e-3


def test_llama_cpp_converter_file_matches_transformers(tiny, tmp_path):
    """The file llama.cpp's own converter writes (real Qwen3.5 GGUFs come from it) runs alike."""
    from upstream_convert import convert_with_llama_cpp
    path = convert_with_llama_cpp(tiny.path, tmp_path / "upstream.gguf", "f32", pre="qwen2")
    toks = tiny.ids(TC.PROMPTS[1])
    ref = hf_logits(tiny.model, toks)
    batch = rel_err(batch_logits(path, toks), ref)
    step = rel_err(stepwise_logits(path, toks), ref)
    print(f"\nqwen35 (llama.cpp's converter): batch {batch:.2e}, token by token {step:.2e}", end="")
    assert max(batch, step) < 1e-3, (batch, step)


def test_sequences_in_one_batch_keep_their_own_state(tiny):
    prompts = [tiny.ids(p, 30) for p in TC.PROMPTS[:3]]
    prompts[1] = prompts[1][:11]                      # unequal lengths: several equal-split ubatches
    refs = [hf_logits(tiny.model, t) for t in prompts]
    rows, where = [], []
    for i in range(max(len(t) for t in prompts)):     # rows interleaved across the sequences
        for s, t in enumerate(prompts):
            if i < len(t):
                where.append((s, i))
                rows.append((t[i], i, [s], True))
    with Model(tiny.gguf) as m, ctx_for(m, n_ubatch=16) as c:
        assert c.decode_rows(rows) == 0
        got = [np.zeros_like(r) for r in refs]
        for j, (s, i) in enumerate(where):
            got[s][i] = c.logits(j)
        # the whole logits array is in batch order too
        allp = L.llama_get_logits(c.ptr)
        flat = np.ctypeslib.as_array(allp, shape=(len(rows), m.n_vocab))
        for j, (s, i) in enumerate(where):
            np.testing.assert_array_equal(flat[j], got[s][i])
        # then one token each, the three sequences in one batch
        nxt = [int(np.argmax(g[-1])) for g in got]
        assert c.decode_rows([(nxt[s], len(prompts[s]), [s], True) for s in range(3)]) == 0
        step = [c.logits(s) for s in range(3)]
    errs = [rel_err(g, r) for g, r in zip(got, refs)]
    errs += [rel_err(step[s], hf_logits(tiny.model, prompts[s] + [nxt[s]])[-1]) for s in range(3)]
    assert max(errs) < 1e-3, errs


def test_seq_rm_cannot_cut_a_recurrent_state(tiny):
    toks = tiny.ids(TC.PROMPTS[0], 20)
    with Model(tiny.gguf) as m, ctx_for(m) as c:
        assert c.decode_seq(toks) == 0
        assert not L.llama_memory_seq_rm(c.mem, 0, 10, -1)          # mid-way: refused
        assert not L.llama_memory_seq_rm(c.mem, -1, 5, 8)
        assert c.pos_max(0) == len(toks) - 1                           # nothing changed
        assert L.llama_memory_seq_rm(c.mem, 0, len(toks), -1)        # past the end: nothing to cut
        # a batch that does not continue the state is refused
        assert c.decode_seq(toks[:2], start=3) != 0
        # the whole sequence goes, then decodes afresh as the first time
        assert L.llama_memory_seq_rm(c.mem, 0, -1, -1)
        assert c.pos_max(0) == -1
        assert c.decode_seq(toks) == 0
        again = c.all_logits(len(toks))
    assert rel_err(again, hf_logits(tiny.model, toks)) < 1e-3


def test_llama_encode_is_refused_and_changes_nothing(tiny):
    """llama_encode on a hybrid model returns -1 (a recurrent state cannot be borrowed and given
    back); the sequence decodes afterwards as if it had not been called."""
    toks = tiny.ids(TC.PROMPTS[0], 12)
    with Model(tiny.gguf) as m, ctx_for(m) as c:
        b = L.llama_batch_init(len(toks), 0, 1)
        try:
            for i, t in enumerate(toks):
                L.llama_batch_add(b, t, i, [0], True)
            assert L.llama_encode(c.ptr, b) == -1
        finally:
            L.llama_batch_free(b)
        assert c.pos_max(0) == -1
        assert c.decode_seq(toks) == 0
        got = c.all_logits(len(toks))
    assert rel_err(got, hf_logits(tiny.model, toks)) < 1e-3


def test_seq_cp_then_diverging_continuations(tiny):
    toks = tiny.ids(TC.PROMPTS[2], 16)
    a, b = toks[:12], [toks[12], toks[13]]
    with Model(tiny.gguf) as m, ctx_for(m) as c:
        assert c.decode_seq(a, all_logits=False) == 0
        L.llama_memory_seq_cp(c.mem, 0, 1, -1, -1)
        assert c.pos_max(1) == len(a) - 1
        assert c.decode_rows([(b[0], len(a), [0], True), (b[1], len(a), [1], True)]) == 0
        got = [c.logits(0), c.logits(1)]
        L.llama_memory_seq_keep(c.mem, 1)
        assert c.pos_max(0) == -1 and c.pos_max(1) == len(a)
    for x, g in zip(b, got):
        assert rel_err(g, hf_logits(tiny.model, a + [x])[-1]) < 1e-3


def test_state_save_load_continues_bit_identically(tiny):
    toks = tiny.ids(TC.PROMPTS[1], 20)
    with Model(tiny.gguf) as m:
        with ctx_for(m) as c:
            assert c.decode_seq(toks[:12], all_logits=False) == 0
            n = L.llama_state_get_size(c.ptr)
            buf = (ctypes.c_uint8 * n)()
            assert L.llama_state_get_data(c.ptr, buf, n) == n
            for i in range(12, 20):
                assert c.decode_seq([toks[i]], start=i) == 0
            want = c.logits(0)
            # one sequence's state into another sequence of a fresh context
            ns = L.llama_state_seq_get_size(c.ptr, 0)
            sbuf = (ctypes.c_uint8 * ns)()
            assert L.llama_state_seq_get_data(c.ptr, sbuf, ns, 0) == ns
        with ctx_for(m) as c2:
            assert L.llama_state_set_data(c2.ptr, buf, n) == n
            for i in range(12, 20):
                assert c2.decode_seq([toks[i]], start=i) == 0
            np.testing.assert_array_equal(c2.logits(0), want)
        with ctx_for(m) as c3:
            assert L.llama_state_seq_set_data(c3.ptr, sbuf, ns, 2) == ns
            assert c3.pos_max(2) == 19
            assert c3.decode_seq([toks[0]], start=20, seq=2) == 0
            ref = hf_logits(tiny.model, toks + [toks[0]])[-1]
            assert rel_err(c3.logits(0), ref) < 1e-3


def test_partial_seq_cp_leaves_no_state_and_is_refused(tiny):
    toks = tiny.ids(TC.PROMPTS[0], 12)
    with Model(tiny.gguf) as m, ctx_for(m) as c:
        assert c.decode_seq(toks) == 0
        L.llama_memory_seq_cp(c.mem, 0, 1, 0, 6)          # half a state cannot be copied
        assert c.decode_seq([toks[6]], start=6, seq=1) != 0  # refused, never continued from nothing
        assert L.llama_memory_seq_rm(c.mem, 1, -1, -1)
        assert c.decode_seq(toks[:7], seq=1) == 0
        assert rel_err(c.logits(6), hf_logits(tiny.model, toks[:7])[-1]) < 1e-3


def test_llama_class_prompt_reuse_re_decodes(tiny):
    """Llama keeps a prompt prefix only where the state exists: on a hybrid model a new prompt
    sharing a prefix with the last one is decoded afresh, with the same greedy tokens."""
    from llama_py import Llama
    a, b = tiny.ids(TC.PROMPTS[1], 14), tiny.ids(TC.PROMPTS[1], 20)
    b = b[:10] + b[14:20]                               # shares 10 tokens with a, then differs

    def greedy(llm, prompt, n=5):
        out = []
        for t in llm.generate(prompt, temp=0.0, top_k=1):
            out.append(t)
            if len(out) == n:
                return out

    fresh = Llama(model_path=str(tiny.gguf), n_ctx=128, verbose=False)
    want = greedy(fresh, b)
    fresh.close()
    llm = Llama(model_path=str(tiny.gguf), n_ctx=128, verbose=False)
    greedy(llm, a)
    assert greedy(llm, b) == want
    # a follow-up that extends the last prompt continues from the checkpoint at its end
    c = b + tiny.ids(TC.PROMPTS[2], 6)
    fresh = Llama(model_path=str(tiny.gguf), n_ctx=128, verbose=False)
    want_c = greedy(fresh, c)
    fresh.close()
    before = L.llama_perf_context(llm.ctx).n_p_eval
    assert greedy(llm, c) == want_c
    assert L.llama_perf_context(llm.ctx).n_p_eval - before == len(c) - len(b)   # only the new tokens
    assert llm._ckpt is not None and llm._ckpt[0] == len(c)
    llm.close()


@pytest.fixture
def test_device(lib_path):
    from llama_py import ggml
    ggml.ggml_backend_test_device_enable(True)
    try:
        yield
    finally:
        ggml.ggml_backend_test_device_enable(False)


def test_offload_to_the_test_device_and_state_across_placements(tiny, test_device):
    """Recurrent state and KV rows in device memory (the test device faults on host reads): the
    same logits as on the CPU, and a state saved on one placement continues on another."""
    toks = tiny.ids(TC.PROMPTS[1], 24)
    want = batch_logits(tiny.gguf, toks)
    blobs = {}
    for ngl in (3, 99):
        with Model(tiny.gguf, n_gpu_layers=ngl) as m, ctx_for(m) as c:
            assert c.decode_seq(toks[:16]) == 0
            n = L.llama_state_get_size(c.ptr)
            buf = (ctypes.c_uint8 * n)()
            assert L.llama_state_get_data(c.ptr, buf, n) == n
            blobs[ngl] = buf
            assert c.decode_seq(toks[16:], start=16) == 0
            got = np.concatenate([np.zeros((16, m.n_vocab)), c.all_logits(8)])
            assert rel_err(got[16:], want[16:]) < 1e-5, ngl
    with Model(tiny.gguf, n_gpu_layers=0) as m, ctx_for(m) as c:
        buf = blobs[99]
        assert L.llama_state_set_data(c.ptr, buf, len(buf)) == len(buf)
        assert c.decode_seq(toks[16:], start=16) == 0
        assert rel_err(c.all_logits(8), want[16:]) < 1e-5


def test_numpy_reference_matches_transformers(tiny):
    """The float64 reference (tests/qwen35_ref.py: a DeltaNet layer's recurrence token by token and
    a gated attention layer, from the GGUF) agrees with transformers (its chunked prompt form)."""
    from qwen35_ref import Qwen35Ref
    toks = tiny.ids(TC.PROMPTS[1], 30)
    ref = Qwen35Ref(str(tiny.gguf)).forward(toks)
    err = rel_err(ref, hf_logits(tiny.model, toks))
    ours = rel_err(batch_logits(tiny.gguf, toks), ref)
    print(f"\nqwen35 float64 reference: against transformers {err:.2e}, ours against it {ours:.2e}", end="")
    assert err < 1e-4 and ours < 1e-4, (err, ours)


def test_server_engine_on_a_hybrid_model(tiny):
    """The server's slots: a repeated prompt (prefix reuse) and identical prompts at once (no
    sharing of a state prefix between slots) give the text of a fresh engine."""
    from llama_py.server.engine import Engine, GenRequest, Model as EModel, SamplingParams
    greedy = SamplingParams(temperature=0)
    m = EModel(str(tiny.gguf))
    try:
        toks = tiny.ids(TC.PROMPTS[1], 24)
        with Engine(m, n_slots=1, n_ctx=256) as eng:
            want, _ = eng.submit(GenRequest(list(toks), max_tokens=6, sampling=greedy)).result(timeout=120)
        with Engine(m, n_slots=3, n_ctx=768) as eng:
            again = [eng.submit(GenRequest(list(toks), max_tokens=6, sampling=greedy)).result(timeout=120)[0]
                     for _ in range(2)]
            reqs = [eng.submit(GenRequest(list(toks), max_tokens=6, sampling=greedy)) for _ in range(3)]
            together = [r.result(timeout=120)[0] for r in reqs]
            assert eng.metrics.prefix_shared == 0
        assert again == [want] * 2 and together == [want] * 3
    finally:
        m.close()


def test_moe_matches_transformers_by_both_converters(tiny_moe, tmp_path):
    """qwen35moe: 8 experts, 3 used, renormalized, plus the sigmoid-gated shared expert."""
    from upstream_convert import convert_with_llama_cpp
    t = tiny_moe
    toks = t.ids(TC.PROMPTS[1])
    ref = hf_logits(t.model, toks)
    up = convert_with_llama_cpp(t.path, tmp_path / "upstream.gguf", "f32", pre="qwen2")
    errs = {}
    for name, path in (("ours", t.gguf), ("llama.cpp's", up)):
        errs[name] = (rel_err(batch_logits(path, toks), ref), rel_err(stepwise_logits(path, toks), ref),
                      rel_err(batch_logits(path, toks, n_ubatch=7), ref))
    print(f"\nqwen35moe (batch, token by token, ubatches of 7): {errs}", end="")
    assert max(max(e) for e in errs.values()) < 1e-3, errs


@pytest.mark.parametrize("which", ["dense", "moe"])
def test_gguf_names_follow_gguf_constants(tiny, tiny_moe, which):
    """Every tensor our converter writes is one gguf-py lists for the architecture, every key one
    of its Keys (the SSM group included)."""
    gguf = pytest.importorskip("gguf")
    from gguf.constants import MODEL_ARCH, MODEL_TENSORS, TENSOR_NAMES, Keys
    t, arch, a = (tiny, "qwen35", MODEL_ARCH.QWEN35) if which == "dense" else (tiny_moe, "qwen35moe", MODEL_ARCH.QWEN35MOE)
    r = gguf.GGUFReader(str(t.gguf))
    allowed = {TENSOR_NAMES[x] for x in MODEL_TENSORS[a]}
    for tensor in r.tensors:
        base = tensor.name if tensor.name.endswith(".ssm_a") else tensor.name.rsplit(".", 1)[0]   # no suffix
        parts = base.split(".")
        if parts[0] == "blk":
            base = "blk.{bid}." + ".".join(parts[2:])
        assert base in allowed, tensor.name
    known = {v.replace("{arch}", arch) for group in (Keys.General, Keys.LLM, Keys.Attention, Keys.Rope, Keys.SSM,
                                                     Keys.Tokenizer)
             for k, v in vars(group).items() if isinstance(v, str) and not k.startswith("_")}
    for key in r.fields:
        if not key.startswith("GGUF."):
            assert key in known or key.startswith("tokenizer.chat_template"), key


def test_quantized_model_keeps_its_convolution_taps(tiny, tmp_path):
    """llama_model_quantize leaves ssm_conv1d as stored (F32: the convolution reads it
    elementwise) and the Q8_0 model runs. (Its logits are not compared: in this tiny random
    model, rounding the weights to 8 bits alone moves the float64 reference's logits by ~70%.)"""
    gguf = pytest.importorskip("gguf")
    out = tmp_path / "q8_0.gguf"
    p = L.llama_model_quantize_default_params()
    p.ftype = L.LLAMA_FTYPE_MOSTLY_Q8_0
    assert L.llama_model_quantize(str(tiny.gguf).encode(), str(out).encode(), ctypes.byref(p)) == 0
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(str(out)).tensors}
    assert types["blk.0.ssm_conv1d.weight"] == gguf.GGMLQuantizationType.F32
    assert types["blk.0.attn_qkv.weight"] == gguf.GGMLQuantizationType.Q8_0
    logits = batch_logits(out, tiny.ids(TC.PROMPTS[1], 24))
    assert np.isfinite(logits).all()


def test_convolution_taps_stored_as_f16_are_accepted(tiny, tmp_path):
    """A GGUF whose ssm_conv1d taps are F16 loads and runs: logits within 1e-3 of transformers'
    with the same taps rounded to float16."""
    import copy
    from test_arch import _rewrite
    out = tmp_path / "taps_f16.gguf"
    _rewrite(tiny.gguf, out, to_f16="ssm_conv1d.weight")
    model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "conv1d" in name:
                p.copy_(p.half().float())
    toks = tiny.ids(TC.PROMPTS[1])
    err = rel_err(batch_logits(out, toks), hf_logits(model, toks))
    assert err < 1e-3, err


def test_server_continues_a_conversation_from_its_checkpoint(tiny):
    """A follow-up prompt that extends the last prompt (plus some of the answer) restores the
    recurrent state saved at the end of that prompt and decodes only the rest, with the text of a
    fresh engine (llama-server's context checkpoints)."""
    from llama_py.server.engine import Engine, GenRequest, Model as EModel, SamplingParams
    greedy = SamplingParams(temperature=0)
    m = EModel(str(tiny.gguf))
    try:
        first = tiny.ids(TC.PROMPTS[1], 20)
        with Engine(m, n_slots=1, n_ctx=256) as eng:
            eng.submit(GenRequest(list(first), max_tokens=4, sampling=greedy)).result(timeout=120)
            follow = first + tiny.ids(TC.PROMPTS[2], 10)
            got, _ = eng.submit(GenRequest(list(follow), max_tokens=6, sampling=greedy)).result(timeout=120)
            assert eng.metrics.checkpoints_restored == 1
            assert eng.metrics.prompt_tokens_decoded == len(first) + 10
        with Engine(m, n_slots=1, n_ctx=256) as eng:
            want, _ = eng.submit(GenRequest(list(follow), max_tokens=6, sampling=greedy)).result(timeout=120)
        assert got == want
    finally:
        m.close()


def test_partial_state_holds_only_the_recurrent_state(tiny):
    """LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY: the recurrent state alone, restored over a longer
    sequence so that seq_rm can then cut the KV rows back to it."""
    toks = tiny.ids(TC.PROMPTS[1], 20)
    flag = L.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
    with Model(tiny.gguf) as m, ctx_for(m) as c:
        assert c.decode_seq(toks[:12], all_logits=False) == 0
        n = L.llama_state_seq_get_size_ext(c.ptr, 0, flag)
        assert 0 < n < L.llama_state_seq_get_size(c.ptr, 0)
        buf = (ctypes.c_uint8 * n)()
        assert L.llama_state_seq_get_data_ext(c.ptr, buf, n, 0, flag) == n
        assert c.decode_seq(toks[12:], start=12) == 0
        assert not L.llama_memory_seq_rm(c.mem, 0, 12, -1)
        assert L.llama_state_seq_set_data_ext(c.ptr, buf, n, 0, flag) == n
        assert L.llama_memory_seq_rm(c.mem, 0, 12, -1) and c.pos_max(0) == 11
        assert c.decode_seq(toks[12:], start=12) == 0
        assert rel_err(c.all_logits(8), hf_logits(tiny.model, toks)[12:]) < 1e-3
