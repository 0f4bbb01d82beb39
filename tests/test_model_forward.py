"""Our transformer against a NumPy forward written from the math (tests/llama_ref.py), on small
random-weight Llama GGUFs made by scripts/make_synthetic_model.py; plus batching invariants and
the KV-cache sequence operations against a NumPy KV-cache model of their semantics."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_synthetic_model as msm  # noqa: E402
from llama_ref import LlamaRef, rel_err  # noqa: E402
from model_util import Ctx, LogCapture, Model  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402

F32 = L.GGML_TYPE_F32
F16 = L.GGML_TYPE_F16
Q8_0 = L.GGML_TYPE_Q8_0
N_VOCAB = 2000  # the first 2000 tokens of llama-spm keep the files small

PROMPT = [1, 450, 1996, 1354, 1701, 432, 1704, 975, 278, 1366, 1203, 889, 13, 869]


@pytest.fixture(scope="module")
def models(tmp_path_factory, lib_path, spm_vocab):
    """Synthetic models: name -> (path, LlamaRef)."""
    d = tmp_path_factory.mktemp("models")
    specs = {
        # GQA 4/2, untied output
        "f32": dict(n_layer=2, n_embd=64, n_head=4, n_head_kv=2, n_ff=128, ftype="f32", seed=1),
        # GQA 6/2, tied embeddings, partial rotary (n_rot 8 of head 16), rope base 1e5
        "f32_tied": dict(n_layer=3, n_embd=96, n_head=6, n_head_kv=2, n_ff=160, ftype="f32", seed=2,
                         tied=True, n_rot=8, rope_base=100000.0),
        # F16 weights, MHA
        "f16": dict(n_layer=2, n_embd=128, n_head=4, n_head_kv=4, n_ff=256, ftype="f16", seed=3),
    }
    out = {}
    for name, kw in specs.items():
        p = d / f"{name}.gguf"
        msm.write_model(p, n_ctx=512, n_vocab=N_VOCAB, vocab=spm_vocab, **kw)
        out[name] = (p, LlamaRef(str(p)))
    return out


def _ctx(model, **kw):
    params = dict(n_ctx=128, n_batch=64, n_ubatch=64, type_k=F32, type_v=F32, n_seq_max=4)
    params.update(kw)
    return Ctx(model, **params)


@pytest.mark.parametrize("name", ["f32", "f32_tied"])
@pytest.mark.parametrize("flash", [L.LLAMA_FLASH_ATTN_TYPE_ENABLED, L.LLAMA_FLASH_ATTN_TYPE_DISABLED])
def test_logits_match_numpy_f32(models, name, flash):
    path, ref = models[name]
    want = ref.forward(PROMPT)
    with Model(path) as m, _ctx(m, flash_attn_type=flash) as c:
        assert c.decode_seq(PROMPT) == 0
        got = c.all_logits(len(PROMPT))
    err = rel_err(got, want)
    print(f"{name} flash={flash}: max rel err {err:.2e}")
    assert err < 1e-4


@pytest.mark.parametrize("kv", [F16, F32])
def test_logits_match_numpy_f16(models, kv):
    path, ref = models["f16"]
    want = ref.forward(PROMPT)
    with Model(path) as m, _ctx(m, type_k=kv, type_v=kv) as c:
        assert c.decode_seq(PROMPT) == 0
        got = c.all_logits(len(PROMPT))
    err = rel_err(got, want)
    print(f"f16 model, kv {kv}: max rel err {err:.2e}")
    assert err < 1e-2
    assert np.argmax(got[-1]) == np.argmax(want[-1])


def test_q8_0_kv_cache(models):
    path, ref = models["f16"]
    want = ref.forward(PROMPT)
    with Model(path) as m, _ctx(m, type_k=Q8_0, type_v=Q8_0) as c:
        assert c.decode_seq(PROMPT) == 0
        got = c.all_logits(len(PROMPT))
    err = rel_err(got, want)
    print(f"q8_0 KV cache: max rel err {err:.2e}")
    assert err < 5e-2
    # a head size that is not a multiple of the block size is refused, naming the reason
    with Model(models["f32"][0]) as m, LogCapture() as log:
        with pytest.raises(RuntimeError):
            _ctx(m, type_k=Q8_0)
    assert "multiple of 32" in log.text()


def test_batch_equals_token_by_token(models):
    path, _ = models["f32"]
    with Model(path) as m:
        with _ctx(m) as c:
            assert c.decode_seq(PROMPT) == 0
            batch = c.all_logits(len(PROMPT))
        with _ctx(m) as c:
            single = []
            for i, t in enumerate(PROMPT):
                assert c.decode_seq([t], start=i) == 0
                single.append(c.logits(0))
                assert np.array_equal(c.logits(-1), single[-1])
        assert rel_err(np.stack(single), batch) < 1e-5


@pytest.mark.parametrize("n_ubatch", [1, 3, 5])
def test_ubatch_split_equals_one_graph(models, n_ubatch):
    path, ref = models["f32_tied"]
    want = ref.forward(PROMPT)
    with Model(path) as m, _ctx(m, n_ubatch=n_ubatch) as c:
        assert L.llama_n_ubatch(c.ptr) == n_ubatch
        assert c.decode_seq(PROMPT) == 0
        assert rel_err(c.all_logits(len(PROMPT)), want) < 1e-4


def test_pos_null_continues_sequences(models):
    path, ref = models["f32"]
    want = ref.forward(PROMPT)
    with Model(path) as m, _ctx(m) as c:
        toks = (L.llama_token * len(PROMPT))(*PROMPT)
        assert L.llama_decode(c.ptr, L.llama_batch_get_one(toks, 5)) == 0
        assert c.pos_max(0) == 4
        rest = (L.llama_token * len(PROMPT))(*PROMPT[5:])
        assert L.llama_decode(c.ptr, L.llama_batch_get_one(rest, len(PROMPT) - 5)) == 0
        assert c.pos_max(0) == len(PROMPT) - 1
        # logits NULL: only the last token has logits
        assert rel_err(c.logits(-1), want[-1]) < 1e-4
        assert c.logits(len(PROMPT) - 5 - 1) is not None
        with LogCapture() as log:
            assert c.logits(0) is None
        assert "not marked for output" in log.text()


def test_two_sequences_in_one_batch(models):
    path, ref = models["f32"]
    a = PROMPT[:9]
    b = [1, 306, 763, 1871, 1941, 889, 319]
    wa, wb = ref.forward(a), ref.forward(b)
    with Model(path) as m, _ctx(m) as c:
        rows = []
        for i in range(max(len(a), len(b))):  # interleaved
            if i < len(a):
                rows.append((a[i], i, [0], True))
            if i < len(b):
                rows.append((b[i], i, [1], True))
        assert c.decode_rows(rows) == 0
        ga = np.stack([c.logits(k) for k, r in enumerate(rows) if r[2] == [0]])
        gb = np.stack([c.logits(k) for k, r in enumerate(rows) if r[2] == [1]])
        assert rel_err(ga, wa) < 1e-4
        assert rel_err(gb, wb) < 1e-4
        # each alone in a fresh cache gives the same numbers
        L.llama_memory_clear(c.mem, True)
        assert c.decode_seq(b, seq=1) == 0
        assert rel_err(c.all_logits(len(b)), gb) < 1e-5


def test_shared_prefix_then_branches(models):
    """A prompt decoded once for two sequences (n_seq_id = 2), then each continues alone."""
    path, ref = models["f32"]
    prefix, ta, tb = PROMPT[:6], [2000 - 7, 42], [77, 1234]
    with Model(path) as m, _ctx(m) as c:
        assert c.decode_rows([(t, i, [0, 1], False) for i, t in enumerate(prefix)]) == 0
        n = len(prefix)
        rows = [(ta[0], n, [0], True), (tb[0], n, [1], True), (ta[1], n + 1, [0], True), (tb[1], n + 1, [1], True)]
        assert c.decode_rows(rows) == 0
        want_a = ref.forward(prefix + ta)[-2:]
        want_b = ref.forward(prefix + tb)[-2:]
        assert rel_err(np.stack([c.logits(0), c.logits(2)]), want_a) < 1e-4
        assert rel_err(np.stack([c.logits(1), c.logits(3)]), want_b) < 1e-4


def test_seq_rm_then_redecode(models):
    path, ref = models["f32"]
    with Model(path) as m, _ctx(m) as c:
        assert c.decode_seq(PROMPT) == 0
        assert L.llama_memory_seq_rm(c.mem, 0, 8, -1)
        assert c.pos_max(0) == 7
        new_tail = [99, 98, 97]
        assert c.decode_seq(new_tail, start=8) == 0
        want = ref.forward(PROMPT[:8] + new_tail)[-3:]
        assert rel_err(c.all_logits(3), want) < 1e-4
        # whole-sequence removal and a seq id out of range
        assert L.llama_memory_seq_rm(c.mem, 0, -1, -1)
        assert c.pos_max(0) == -1 and c.pos_min(0) == -1
        with LogCapture() as log:
            assert not L.llama_memory_seq_rm(c.mem, 99, -1, -1)
        assert "out of range" in log.text()


def test_seq_cp_and_keep(models):
    path, ref = models["f32"]
    with Model(path) as m, _ctx(m) as c:
        assert c.decode_seq(PROMPT[:7], seq=0) == 0
        L.llama_memory_seq_cp(c.mem, 0, 2, -1, -1)
        assert c.pos_max(2) == 6 and c.pos_min(2) == 0
        assert c.decode_seq([5, 6], start=7, seq=2) == 0
        assert rel_err(c.all_logits(2), ref.forward(PROMPT[:7] + [5, 6])[-2:]) < 1e-4
        L.llama_memory_seq_keep(c.mem, 2)
        assert c.pos_max(0) == -1
        assert c.pos_max(2) == 8
        assert c.decode_seq([7], start=9, seq=2) == 0
        assert rel_err(c.logits(0), ref.forward(PROMPT[:7] + [5, 6, 7])[-1]) < 1e-4


@pytest.mark.parametrize("kv", [F32, F16])
def test_seq_add_rerotates_keys(models, kv):
    """Shifting a whole sequence by delta must equal having decoded it delta positions later."""
    path, ref = models["f32_tied"]
    n = 8
    with Model(path) as m, _ctx(m, type_k=kv, type_v=kv) as c:
        assert c.decode_seq(PROMPT[:n]) == 0
        assert L.llama_memory_can_shift(c.mem)
        L.llama_memory_seq_add(c.mem, 0, -1, -1, 5)
        assert c.pos_min(0) == 5 and c.pos_max(0) == n + 4
        assert c.decode_seq([PROMPT[n]], start=n + 5) == 0
        want = ref.forward(PROMPT[:n + 1], positions=list(range(5, n + 6)))[-1]
        tol = 1e-4 if kv == F32 else 1e-2
        assert rel_err(c.logits(0), want) < tol


def test_context_shift_matches_reference_cache(models):
    """The classic context shift: drop [4, 8), move [8, end) back by 4, continue."""
    path, ref = models["f32"]
    toks = PROMPT[:12]
    with Model(path) as m, _ctx(m) as c:
        assert c.decode_seq(toks) == 0
        rc = ref.new_cache()
        ref.step(rc, toks, list(range(12)))
        assert L.llama_memory_seq_rm(c.mem, 0, 4, 8)
        L.llama_memory_seq_add(c.mem, 0, 8, -1, -4)
        rc.rm(4, 8)
        rc.add(8, -1, -4)
        assert c.pos_max(0) == 7
        assert c.decode_seq([31, 32], start=8) == 0
        want = ref.step(rc, [31, 32], [8, 9])
        assert rel_err(c.all_logits(2), want) < 1e-4


def test_seq_div_matches_reference_cache(models):
    path, ref = models["f32_tied"]
    toks = PROMPT[:10]
    with Model(path) as m, _ctx(m) as c:
        assert c.decode_seq(toks) == 0
        rc = ref.new_cache()
        ref.step(rc, toks, list(range(10)))
        L.llama_memory_seq_div(c.mem, 0, 4, -1, 2)   # 4..9 -> 2..4
        rc.div(4, -1, 2)
        assert c.pos_max(0) == 4
        assert c.decode_seq([55], start=5) == 0
        want = ref.step(rc, [55], [5])
        assert rel_err(c.logits(0), want[-1]) < 1e-4


def test_embeddings_pooling(models):
    path, ref = models["f32"]
    a, b = PROMPT[:6], PROMPT[6:11]
    ha = ref.forward(a, return_hidden=True)
    hb = ref.forward(b, return_hidden=True)
    with Model(path) as m:
        with _ctx(m, embeddings=True, pooling_type=L.LLAMA_POOLING_TYPE_NONE) as c:
            assert c.decode_seq(a) == 0
            got = np.stack([c.embedding(i) for i in range(len(a))])
            assert rel_err(got, ha) < 1e-4
            assert c.logits(-1) is not None  # logits too, with pooling NONE
        for pooling, fa, fb in [(L.LLAMA_POOLING_TYPE_MEAN, ha.mean(0), hb.mean(0)),
                                (L.LLAMA_POOLING_TYPE_CLS, ha[0], hb[0]),
                                (L.LLAMA_POOLING_TYPE_LAST, ha[-1], hb[-1])]:
            with _ctx(m, embeddings=True, pooling_type=pooling) as c:
                assert L.llama_pooling_type(c.ptr) == pooling
                rows = [(t, i, [0], False) for i, t in enumerate(a)] + [(t, i, [1], False) for i, t in enumerate(b)]
                assert c.decode_rows(rows) == 0
                assert rel_err(c.embedding_seq(0), fa) < 1e-4
                assert rel_err(c.embedding_seq(1), fb) < 1e-4
                with LogCapture():
                    assert c.embedding_seq(2) is None
                    assert c.embedding(0) is None


def test_non_causal_attention(models):
    path, ref = models["f32"]
    with Model(path) as m, _ctx(m) as c:
        L.llama_set_causal_attn(c.ptr, False)
        assert not L.llama_get_causal_attn(c.ptr)
        assert c.decode_seq(PROMPT[:6]) == 0
        assert rel_err(c.all_logits(6), ref.forward(PROMPT[:6], causal=False)) < 1e-4


def test_load_mode_none_gives_same_logits(models):
    path, ref = models["f32"]
    want = ref.forward(PROMPT[:5])
    with Model(path, load_mode=L.LLAMA_LOAD_MODE_NONE) as m, _ctx(m) as c:
        assert c.decode_seq(PROMPT[:5]) == 0
        assert rel_err(c.all_logits(5), want) < 1e-4


@pytest.fixture(scope="module")
def f16_256(tmp_path_factory, lib_path, spm_vocab):
    src = tmp_path_factory.mktemp("quant") / "f16.gguf"
    msm.write_model(src, n_layer=2, n_embd=256, n_head=8, n_head_kv=4, n_ff=512, n_ctx=256,
                    n_vocab=N_VOCAB, ftype="f16", seed=4, vocab=spm_vocab)
    return src


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_K_M", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0",
                                   "MXFP4_MOE", "MXFP4_MOE/pure", "IQ4_XS/pure"])
def test_quantized_model_matches_numpy(f16_256, tmp_path, qtype):
    """Weights through this project's quantizer; the reference dequantizes them with gguf.quants,
    so the difference is the int8 quantization of activations in the quantized matmuls.
    /pure: every weight (token embeddings and output too) in the ftype's base type."""
    src = f16_256
    name, _, pure = qtype.partition("/")
    dst = tmp_path / f"{name}.gguf"
    msm.quantize(src, dst, name, pure=bool(pure))
    ref = LlamaRef(str(dst))
    want = ref.forward(PROMPT)
    with Model(dst) as m, _ctx(m) as c:
        assert c.decode_seq(PROMPT) == 0
        got = c.all_logits(len(PROMPT))
    err = rel_err(got, want)
    agree = float(np.mean(np.argmax(got, 1) == np.argmax(want, 1)))
    print(f"{qtype}: max rel err {err:.2e}, argmax agreement {agree:.2f}")
    assert err < 3e-2 and agree >= 0.85


def test_rope_overrides_from_context_params(models):
    """rope_freq_base / rope_freq_scale given to the context replace the model's values."""
    path, ref = models["f32_tied"]
    base0, scale0 = ref.rope_base, ref.freq_scale
    try:
        ref.rope_base, ref.freq_scale = 5000.0, 0.25
        want = ref.forward(PROMPT[:8])
    finally:
        ref.rope_base, ref.freq_scale = base0, scale0
    with Model(path) as m, _ctx(m, rope_freq_base=5000.0, rope_freq_scale=0.25) as c:
        assert c.decode_seq(PROMPT[:8]) == 0
        assert rel_err(c.all_logits(8), want) < 1e-4
