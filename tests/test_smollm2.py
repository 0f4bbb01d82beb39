"""SmolLM2-135M-Instruct (Q4_1 + Q8_0, GQA 9/3, tied embeddings, GPT-2 style BPE): batching
invariants and a greedy continuation that must name Paris."""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from llama_ref import rel_err  # noqa: E402
from model_util import Ctx, Model, piece_of, tokens_of  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def smol(smollm2_path, lib_path):
    with Model(smollm2_path) as m:
        yield m


def test_model_metadata(smol):
    m = smol.ptr
    assert L.llama_model_n_layer(m) == 30
    assert L.llama_model_n_embd(m) == 576
    assert L.llama_model_n_head(m) == 9
    assert L.llama_model_n_head_kv(m) == 3
    assert L.llama_model_n_ctx_train(m) == 8192
    assert L.llama_model_rope_type(m) == L.LLAMA_ROPE_TYPE_NORM
    assert L.llama_model_ftype(m) == L.LLAMA_FTYPE_MOSTLY_Q4_1
    assert 130e6 < L.llama_model_n_params(m) < 140e6
    buf = ctypes.create_string_buffer(64)
    n = L.llama_model_desc(m, buf, 64)
    assert buf.value.decode() == "llama 135M Q4_1" and n == len(buf.value)
    tmpl = L.llama_model_chat_template(m, None)
    assert tmpl is not None and b"<|im_start|>" in tmpl
    assert L.llama_model_chat_template(m, b"no-such-template") is None
    meta = L.llama_model_meta_dict(m)
    assert meta["general.architecture"] == "llama"
    assert meta["llama.rope.freq_base"] == "100000.000000"
    assert "tokenizer.ggml.tokens" not in meta  # arrays are not listed
    assert L.llama_model_meta_count(m) == len(meta)


def test_batch_vs_token_by_token(smol):
    toks = tokens_of(smol, PROMPT)
    assert len(toks) >= 5
    with Ctx(smol, n_ctx=256, n_batch=64) as c:
        assert c.decode_seq(toks) == 0
        batch = c.all_logits(len(toks))
    with Ctx(smol, n_ctx=256, n_batch=64) as c:
        single = []
        for i, t in enumerate(toks):
            assert c.decode_seq([t], start=i) == 0
            single.append(c.logits(-1))
    err = rel_err(np.stack(single), batch)
    print(f"SmolLM2 batch vs token-by-token: max rel diff {err:.2e}")
    # Activations are re-quantized to int8 before every quantized matmul, so any difference in
    # float summation order between the batch (GEMM) and single-token (GEMV) kernels flips int8
    # roundings and grows through 30 layers: the kernels must agree bit for bit to pass.
    assert err < 1e-3, "batched and single-token matmul kernels disagree (compare GGML_CPU_GEMM=0)"


def test_two_sequences_in_one_batch(smol):
    a = tokens_of(smol, PROMPT)
    b = tokens_of(smol, "Once upon a time, there was a little")
    with Ctx(smol, n_ctx=256, n_batch=64, n_seq_max=2) as c:
        rows = [(t, i, [0], True) for i, t in enumerate(a)] + [(t, i, [1], True) for i, t in enumerate(b)]
        assert c.decode_rows(rows) == 0
        both_a = np.stack([c.logits(i) for i in range(len(a))])
        both_b = np.stack([c.logits(len(a) + i) for i in range(len(b))])
        L.llama_memory_clear(c.mem, True)
        assert c.decode_seq(a, seq=0) == 0
        alone_a = c.all_logits(len(a))
        L.llama_memory_clear(c.mem, True)
        assert c.decode_seq(b, seq=1) == 0
        alone_b = c.all_logits(len(b))
    ea, eb = rel_err(both_a, alone_a), rel_err(both_b, alone_b)
    print(f"SmolLM2 two sequences vs alone: {ea:.2e} {eb:.2e}")
    assert ea < 1e-3 and eb < 1e-3


@pytest.mark.parametrize("flash", [L.LLAMA_FLASH_ATTN_TYPE_AUTO, L.LLAMA_FLASH_ATTN_TYPE_DISABLED])
def test_greedy_names_paris(smol, flash):
    toks = tokens_of(smol, PROMPT)
    out = []
    with Ctx(smol, n_ctx=256, flash_attn_type=flash) as c:
        assert c.decode_seq(toks, all_logits=False) == 0
        pos = len(toks)
        for _ in range(6):
            t = int(np.argmax(c.logits(-1)))
            if L.llama_vocab_is_eog(smol.vocab, t):
                break
            out.append(t)
            assert c.decode_seq([t], start=pos) == 0
            pos += 1
    text = "".join(piece_of(smol, t) for t in out)
    print(f"greedy continuation: {PROMPT!r} -> {text!r}")
    assert "Paris" in text


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_repacked_weights_give_the_stored_layouts_bits(smollm2_path, lib_path):
    # use_extra_bufts repacks the matmul weights at load (ggml/src/ggml-cpu/repack.h); the repacked kernels
    # must reproduce the stored-layout kernels bit for bit, for a batch and for one token.
    toks = None
    results = {}
    for extra in (True, False):
        with Model(smollm2_path, use_extra_bufts=extra) as m:
            toks = tokens_of(m, PROMPT)
            with Ctx(m, n_ctx=256, n_batch=64) as c:
                assert c.decode_seq(toks) == 0
                batch = c.all_logits(len(toks))
                assert c.decode_seq([toks[-1]], start=len(toks)) == 0
                one = c.logits(-1)
            results[extra] = (batch, one)
    np.testing.assert_array_equal(results[True][0], results[False][0])
    np.testing.assert_array_equal(results[True][1], results[False][1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_repacking_does_not_double_resident_memory(smollm2_path, lib_path):
    # The stored pages of repacked weights are let go as each tensor is repacked, so a loaded
    # model costs about one copy of its weights, not the file plus the copy.
    size_kib = Path(smollm2_path).stat().st_size // 1024
    before = _rss_kib()
    with Model(smollm2_path) as m:
        grown = _rss_kib() - before
        assert L.llama_model_n_params(m.ptr) > 0
    print(f"SmolLM2 load: RSS +{grown} KiB for a {size_kib} KiB file")
    assert grown < 1.5*size_kib  # without letting them go: ~2x
