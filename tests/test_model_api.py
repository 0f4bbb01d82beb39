"""Model loading (validation of keys, tensors and shapes, overrides, progress, check_tensors,
vocab_only, load modes), context parameters, batch validation and llama_decode's return codes,
output access rules, the extended batch API, perf counters."""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import gguf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_synthetic_model as msm  # noqa: E402
from llama_ref import LlamaRef, rel_err  # noqa: E402
from model_util import Ctx, LogCapture, Model  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402

F32 = L.GGML_TYPE_F32
SHAPE = dict(n_layer=2, n_embd=64, n_head=4, n_head_kv=2, n_ff=128, n_ctx=512, n_vocab=1000)


@pytest.fixture(scope="module")
def base(tmp_path_factory, lib_path, spm_vocab):
    p = tmp_path_factory.mktemp("api") / "base.gguf"
    msm.write_model(p, ftype="f32", seed=5, vocab=spm_vocab, **SHAPE)
    return p


def rewrite(src: Path, dst: Path, drop=(), replace=None, kv=None, drop_kv=(), arch="llama") -> Path:
    """Copies src to dst with tensors dropped/replaced and metadata changed."""
    replace = replace or {}
    kv = kv or {}
    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst), arch)
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in drop_kv or key in kv:
            continue
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), f.types[0], sub_type=f.types[1])
        else:
            w.add_key_value(key, f.contents(), f.types[0])
    for key, (val, vtype) in kv.items():
        w.add_key_value(key, val, vtype)
    for t in r.tensors:
        if t.name in drop:
            continue
        data = replace.get(t.name, np.array(t.data))
        w.add_tensor(t.name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def load_fails(path, expect: str, **params):
    p = L.llama_model_default_params()
    for k, v in params.items():
        setattr(p, k, v)
    with LogCapture() as log:
        m = L.llama_model_load_from_file(str(path).encode(), p)
    if m:
        L.llama_model_free(m)
    assert not m, "load should have failed"
    assert expect in log.text(), log.text()


# ---------------------------------------------------------------------------------------------
# loading

def test_accessors(base):
    r = gguf.GGUFReader(str(base))
    with Model(base) as m:
        p = m.ptr
        assert L.llama_model_n_embd(p) == 64 and L.llama_model_n_layer(p) == 2
        assert L.llama_model_n_head(p) == 4 and L.llama_model_n_head_kv(p) == 2
        assert L.llama_model_n_ctx_train(p) == 512
        assert m.n_vocab == 1000
        assert L.llama_model_n_params(p) == sum(int(t.n_elements) for t in r.tensors)
        assert L.llama_model_size(p) == sum(int(t.n_bytes) for t in r.tensors)
        assert L.llama_model_ftype(p) == L.LLAMA_FTYPE_ALL_F32
        assert L.llama_model_rope_freq_scale_train(p) == 1.0
        assert L.llama_model_has_decoder(p) and not L.llama_model_has_encoder(p)
        assert not L.llama_model_is_recurrent(p)
        assert L.llama_model_chat_template(p, None) is None
        buf = ctypes.create_string_buffer(8)
        full = L.llama_model_meta_val_str(p, b"general.name", buf, 8)
        assert full == len("synthetic") and buf.value == b"synthet"   # truncated, full length returned
        assert L.llama_model_meta_val_str(p, b"no.such.key", buf, 8) == -1
        assert L.llama_model_meta_key_by_index(p, 10_000, buf, 8) == -1
        assert L.llama_model_meta_key_str(L.LLAMA_MODEL_META_KEY_SAMPLING_TOP_K) == b"general.sampling.top_k"


def test_vocab_only_any_architecture(vocab_dir, lib_path):
    for f in ("llama-spm.gguf", "gpt-2.gguf"):
        with Model(vocab_dir / f, vocab_only=True) as m:
            assert m.n_vocab > 1000
            with LogCapture() as log:
                c = L.llama_init_from_model(m.ptr, L.llama_context_default_params())
            assert not c and "vocab_only" in log.text()


@pytest.mark.parametrize("case,expect", [
    ("missing", "missing tensor 'blk.1.ffn_up.weight'"),
    ("shape", "tensor 'blk.0.attn_k.weight' has wrong shape"),
    ("heads", "is not a multiple of"),
    ("arch", "unsupported architecture 'gpt2'"),
    ("key", "missing required key 'llama.embedding_length'"),
])
def test_load_validation(base, tmp_path, case, expect):
    dst = tmp_path / f"{case}.gguf"
    if case == "missing":
        rewrite(base, dst, drop={"blk.1.ffn_up.weight"})
    elif case == "shape":
        rewrite(base, dst, replace={"blk.0.attn_k.weight": np.zeros((16, 64), np.float32)})
    elif case == "heads":
        rewrite(base, dst, kv={"llama.attention.head_count_kv": (3, gguf.GGUFValueType.UINT32)})
    elif case == "arch":
        rewrite(base, dst, arch="gpt2")
    elif case == "key":
        rewrite(base, dst, drop_kv={"llama.embedding_length"})
    load_fails(dst, expect)


def test_missing_file_and_not_gguf(tmp_path, lib_path):
    load_fails(tmp_path / "nope.gguf", "nope.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 10)
    load_fails(bad, "bad.gguf")


def test_tied_output_when_absent(base, tmp_path):
    dst = rewrite(base, tmp_path / "tied.gguf", drop={"output.weight"})
    ref = LlamaRef(str(dst))
    assert ref.out is ref.w["token_embd.weight"]
    with Model(dst) as m, Ctx(m, n_ctx=64, type_k=F32, type_v=F32) as c:
        assert c.decode_seq([1, 2, 3]) == 0
        assert rel_err(c.all_logits(3), ref.forward([1, 2, 3])) < 1e-4


def test_progress_callback_and_cancel(base):
    seen = []

    def cb(progress, user_data):
        seen.append(progress)
        return True

    f = L.llama_progress_callback(cb)
    with Model(base, progress_callback=f) as m:
        assert m.ptr
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    g = L.llama_progress_callback(lambda p, u: p < 0.5)
    load_fails(base, "cancelled", progress_callback=g)


def test_kv_overrides(base):
    ov = (L.llama_model_kv_override * 3)()
    ov[0].key = b"llama.context_length"
    ov[0].tag = L.LLAMA_KV_OVERRIDE_TYPE_INT
    ov[0].value.val_i64 = 1234
    ov[1].key = b"general.name"
    ov[1].tag = L.LLAMA_KV_OVERRIDE_TYPE_STR
    ov[1].value.val_str = b"renamed"
    with Model(base, kv_overrides=ctypes.cast(ov, ctypes.POINTER(L.llama_model_kv_override))) as m:
        assert L.llama_model_n_ctx_train(m.ptr) == 1234
        assert L.llama_model_meta_dict(m.ptr)["general.name"] == "renamed"
    bad = (L.llama_model_kv_override * 2)()
    bad[0].key = b"llama.block_count"
    bad[0].tag = L.LLAMA_KV_OVERRIDE_TYPE_BOOL
    bad[0].value.val_bool = True
    load_fails(base, "bool given", kv_overrides=ctypes.cast(bad, ctypes.POINTER(L.llama_model_kv_override)))


def test_check_tensors(base, tmp_path):
    r = gguf.GGUFReader(str(base))
    w = np.array(next(t for t in r.tensors if t.name == "blk.0.ffn_down.weight").data)
    w[3, 5] = np.nan
    dst = rewrite(base, tmp_path / "nan.gguf", replace={"blk.0.ffn_down.weight": w})
    with Model(dst) as m:      # not checked by default
        assert m.ptr
    load_fails(dst, "tensor 'blk.0.ffn_down.weight' has invalid data", check_tensors=True)
    with Model(base, check_tensors=True) as m:
        assert m.ptr


def test_save_to_file_round_trip(base, tmp_path):
    out = tmp_path / "saved.gguf"
    with Model(base) as m:
        L.llama_model_save_to_file(m.ptr, str(out).encode())
        with Ctx(m, n_ctx=64) as c:
            assert c.decode_seq([5, 6, 7]) == 0
            want = c.all_logits(3)
    with Model(out) as m2, Ctx(m2, n_ctx=64) as c:
        assert c.decode_seq([5, 6, 7]) == 0
        assert np.array_equal(c.all_logits(3), want)


def test_context_outlives_model_free_safely(base):
    m = Model(base)
    c = L.llama_init_from_model(m.ptr, L.llama_context_default_params())
    assert c
    m.close()
    L.llama_free(c)   # must not touch the freed model


# ---------------------------------------------------------------------------------------------
# context parameters

def test_context_defaults_and_threads(base):
    d = L.llama_context_default_params()
    assert d.n_ctx == 4096 and d.n_batch == 2048 and d.n_ubatch == 512
    assert d.type_k == L.GGML_TYPE_F16 and d.type_v == L.GGML_TYPE_F16
    assert d.flash_attn_type == L.LLAMA_FLASH_ATTN_TYPE_AUTO
    cores = d.n_threads
    assert 1 <= cores <= (os.cpu_count() or 1)
    with Model(base) as m:
        with Ctx(m, n_ctx=0) as c:
            assert L.llama_n_ctx(c.ptr) == 512     # n_ctx 0: the training context
            assert L.llama_n_batch(c.ptr) == 512   # n_batch capped to n_ctx
            L.llama_set_n_threads(c.ptr, 1000, 1000)
            assert L.llama_n_threads(c.ptr) == cores and L.llama_n_threads_batch(c.ptr) == cores
            L.llama_set_n_threads(c.ptr, 1, 1)
            assert L.llama_n_threads(c.ptr) == 1
            assert c.decode_seq([1, 2]) == 0
            assert L.llama_get_model(c.ptr) == m.ptr
            assert L.llama_n_seq_max(c.ptr) == 1


def test_context_refuses_impossible_sizes(base):
    with Model(base) as m:
        with LogCapture() as log:
            cp = L.llama_context_default_params()
            cp.n_ctx = 0xFFFFFF00
            cp.type_k = cp.type_v = F32
            assert not L.llama_init_from_model(m.ptr, cp)
        assert "bytes" in log.text()
        with LogCapture() as log:
            cp = L.llama_context_default_params()
            cp.n_seq_max = 0
            assert not L.llama_init_from_model(m.ptr, cp)
        assert "n_seq_max" in log.text()
        with LogCapture() as log:
            cp = L.llama_context_default_params()
            cp.type_k = L.GGML_TYPE_Q4_1
            assert not L.llama_init_from_model(m.ptr, cp)
        assert "type_k" in log.text()


# ---------------------------------------------------------------------------------------------
# batches and decode

@pytest.fixture()
def ctx2(base):
    with Model(base) as m, Ctx(m, n_ctx=32, n_batch=16, n_ubatch=8, n_seq_max=2, type_k=F32, type_v=F32) as c:
        yield c


def _expect(c, rows, code, msg):
    with LogCapture() as log:
        assert c.decode_rows(rows) == code
    assert msg in log.text(), log.text()


def test_batch_validation(ctx2):
    c = ctx2
    with LogCapture() as log:
        assert c.logits(-1) is None          # before any decode
    assert "no logits" in log.text()
    _expect(c, [(1000, 0, [0], True)], -1, "out of the vocabulary range")
    _expect(c, [(-3, 0, [0], True)], -1, "out of the vocabulary range")
    _expect(c, [(5, 0, [2], True)], -1, "out of range")
    _expect(c, [(5, -1, [0], True)], -1, "negative")
    _expect(c, [(5, 3, [0], True), (6, 2, [0], True)], -1, "must increase")
    _expect(c, [(5, i, [0], False) for i in range(17)], -1, "exceeds the context's n_batch")
    _expect(c, [], -1, "at least one token")
    _expect(c, [(5, 0, [], True)], -1, "n_seq_id[0] = 0")
    assert c.pos_max(0) == -1                # nothing reached the cache
    assert c.decode_rows([(5, 0, [0], True)]) == 0
    assert c.logits(0) is not None
    _expect(c, [(1000, 1, [0], True)], -1, "vocabulary")
    with LogCapture():
        assert c.logits(0) is None           # after a failed decode
    assert c.pos_max(0) == 0


def test_output_indexing(ctx2):
    c = ctx2
    rows = [(10 + i, i, [0], i in (1, 3, 4)) for i in range(6)]
    assert c.decode_rows(rows) == 0
    a1, a3, a4 = c.logits(1), c.logits(3), c.logits(4)
    assert np.array_equal(c.logits(-1), a4) and np.array_equal(c.logits(-3), a1)
    all_rows = np.ctypeslib.as_array(L.llama_get_logits(c.ptr), shape=(3, c.model.n_vocab))
    assert np.array_equal(all_rows[1], a3.astype(np.float32))
    with LogCapture() as log:
        assert c.logits(2) is None and c.logits(6) is None and c.logits(-4) is None
    assert "not marked for output" in log.text() and "out of range" in log.text()


def test_kv_full_returns_1_and_keeps_cache(ctx2):
    c = ctx2
    for start in (0, 8):
        assert c.decode_seq(list(range(10, 18)), start=start) == 0
    assert c.decode_seq(list(range(10, 18)), start=16, seq=1) == 0
    with LogCapture() as log:
        assert c.decode_seq(list(range(10, 19)), start=16) == 1   # 9 tokens, 8 cells free
    assert "no KV cache slot" in log.text()
    assert c.pos_max(0) == 15 and c.pos_max(1) == 23
    assert c.decode_seq(list(range(10, 18)), start=16) == 0       # 8 fit exactly (positions continue sequence 0)


def test_abort_returns_2_and_keeps_cache(base):
    with Model(base) as m, Ctx(m, n_ctx=64, n_batch=16, n_ubatch=4) as c:
        assert c.decode_seq([1, 2, 3]) == 0
        calls = []

        def stop(data):
            calls.append(1)
            return len(calls) > 40   # let the first ubatch finish, stop in a later one

        cb = L.ggml_abort_callback(stop)
        L.llama_set_abort_callback(c.ptr, cb, None)
        assert c.decode_seq(list(range(20, 36)), start=3) == 2
        assert c.pos_max(0) == 2      # the ubatches that ran were rolled back
        L.llama_set_abort_callback(c.ptr, L.ggml_abort_callback(), None)
        assert c.decode_seq([4], start=3) == 0


def test_embd_input_equals_tokens(base):
    r = gguf.GGUFReader(str(base))
    E = np.array(next(t for t in r.tensors if t.name == "token_embd.weight").data, dtype=np.float32)
    toks = [3, 7, 11]
    with Model(base) as m, Ctx(m, n_ctx=64, type_k=F32, type_v=F32) as c:
        assert c.decode_seq(toks) == 0
        want = c.all_logits(3)
        L.llama_memory_clear(c.mem, True)
        b = L.llama_batch_init(3, 64, 1)
        try:
            b.n_tokens = 3
            for i, t in enumerate(toks):
                for j in range(64):
                    b.embd[i * 64 + j] = float(E[t, j])
                b.pos[i] = i
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = 0
                b.logits[i] = 1
            assert L.llama_decode(c.ptr, b) == 0
            assert rel_err(c.all_logits(3), want) < 1e-6
            # a NaN row would poison the shared cache: refused
            L.llama_memory_clear(c.mem, True)
            b.embd[64 + 5] = float("nan")
            with LogCapture() as log:
                assert L.llama_decode(c.ptr, b) == -1
            assert "embd[1][5] is not finite" in log.text()
        finally:
            L.llama_batch_free(b)


def test_batch_ext(base):
    with Model(base) as m, Ctx(m, n_ctx=64, n_seq_max=2, type_k=F32, type_v=F32) as c:
        assert c.decode_seq([1, 2, 3, 4]) == 0
        want = c.all_logits(4)
        L.llama_memory_clear(c.mem, True)
        be = L.llama_batch_ext_init(c.ptr)
        try:
            for t in (1, 2, 3, 4):
                i = L.llama_batch_ext_add_token(be, 0, t)
                assert L.llama_batch_ext_set_output_logits(be, i, True)
            assert L.llama_process(c.ptr, L.LLAMA_PROCESS_TYPE_DECODE, be) == 0
            assert rel_err(c.all_logits(4), want) < 1e-6
            L.llama_batch_ext_clear(be)
            with LogCapture():
                assert L.llama_batch_ext_add_token(be, 0, 5000) == -2
                assert L.llama_batch_ext_add_token(be, 7, 5) == -3
                assert L.llama_process(c.ptr, L.LLAMA_PROCESS_TYPE_ENCODE, be) == -1
            i = L.llama_batch_ext_add_token(be, 0, 5)
            pos = L.llama_pos(4)
            assert L.llama_batch_ext_set_pos(be, i, ctypes.byref(pos))
            assert L.llama_process(c.ptr, L.LLAMA_PROCESS_TYPE_DECODE, be) == 0
            assert c.pos_max(0) == 4
        finally:
            L.llama_batch_ext_free(be)


def test_perf_counters(base):
    with Model(base) as m, Ctx(m, n_ctx=64) as c:
        assert c.decode_seq([1, 2, 3, 4]) == 0
        assert c.decode_seq([5], start=4) == 0
        assert c.decode_seq([6], start=5) == 0
        d = L.llama_perf_context(c.ptr)
        assert d.n_p_eval == 4 and d.n_eval == 2
        assert d.t_p_eval_ms > 0 and d.t_eval_ms > 0
        with LogCapture() as log:
            L.llama_perf_context_print(c.ptr)
        assert "prompt eval time" in log.text()
        L.llama_perf_context_reset(c.ptr)
        d = L.llama_perf_context(c.ptr)
        assert d.n_eval == 1 and d.t_eval_ms == 0   # llama.cpp reports at least 1


def test_perplexity_script_runs(base):
    import perplexity
    text = "The quick brown fox jumps over the lazy dog. " * 20
    ppl, scored, n = perplexity.perplexity(str(base), text, n_ctx=64, verbose=False)
    assert scored == n - 1 and np.isfinite(ppl) and ppl > 1


def test_linear_rope_scaling_from_metadata(base, tmp_path):
    dst = rewrite(base, tmp_path / "linear.gguf", kv={
        "llama.rope.scaling.type": ("linear", gguf.GGUFValueType.STRING),
        "llama.rope.scaling.factor": (4.0, gguf.GGUFValueType.FLOAT32)})
    ref = LlamaRef(str(dst))
    assert ref.freq_scale == 0.25
    with Model(dst) as m, Ctx(m, n_ctx=64, type_k=F32, type_v=F32) as c:
        assert L.llama_model_rope_freq_scale_train(m.ptr) == 0.25
        assert c.decode_seq([4, 5, 6, 7]) == 0
        assert rel_err(c.all_logits(4), ref.forward([4, 5, 6, 7])) < 1e-4


def test_memory_api_refuses_null_handle(lib_path):
    with LogCapture() as log:
        L.llama_memory_clear(None, False)
        assert not L.llama_memory_seq_rm(None, 0, -1, -1)
        assert L.llama_memory_seq_pos_max(None, 0) == -1
        assert not L.llama_memory_can_shift(None)
        assert L.llama_get_logits_ith(None, 0) is None or not L.llama_get_logits_ith(None, 0)
        assert L.llama_decode(None, L.llama_batch()) == -1
    assert "memory is NULL" in log.text() and "ctx is NULL" in log.text()
