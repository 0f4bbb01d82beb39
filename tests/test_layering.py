"""The llama layer (src/) on ggml's public API only: it includes no private ggml header, logs
through ggml's one log callback (ggml_log_get), and allocates through ggml-mem.h's wrappers,
so the allocation-failure hook reaches its allocations."""
from __future__ import annotations

import ctypes
import re
from pathlib import Path


from llama_py import ggml
import llama_py.llama_cpp as L

from model_util import Model

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = [ROOT / "include", ROOT / "ggml" / "include"]


def test_llama_layer_includes_only_public_ggml_headers():
    # The build enforces this too (llama_objs has no ggml/src include directory); this names
    # the offending line without a compiler.
    problems = []
    files = [p for p in (ROOT / "src").rglob("*") if p.suffix in (".c", ".h")]
    assert len(files) > 20
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
            if not m:
                continue
            name = m.group(1)
            here = (path.parent / name).resolve()
            ok = (here.is_file() and (ROOT / "src") in here.parents) or any((d / name).is_file() for d in PUBLIC)
            if not ok:
                problems.append(f"{path.relative_to(ROOT)}:{n}: #include \"{name}\" is not a public header")
    assert not problems, "\n".join(problems)


def test_ggml_log_get_returns_what_ggml_log_set_installed(lib_path):
    seen = []
    cb = ggml.ggml_log_callback(lambda level, text, ud: seen.append(text))
    marker = ctypes.c_int(7)
    got_cb, got_ud = ggml.ggml_log_callback(), ctypes.c_void_p()
    try:
        ggml.ggml_log_set(cb, ctypes.addressof(marker))
        ggml.ggml_log_get(ctypes.byref(got_cb), ctypes.byref(got_ud))
        assert ctypes.cast(got_cb, ctypes.c_void_p).value == ctypes.cast(cb, ctypes.c_void_p).value
        assert got_ud.value == ctypes.addressof(marker)
        ggml.ggml_log_get(None, None)  # either pointer may be NULL
    finally:
        ggml.ggml_log_set(None, None)
    # the default callback is reported, never NULL, with no user data
    ggml.ggml_log_get(ctypes.byref(got_cb), ctypes.byref(got_ud))
    assert ctypes.cast(got_cb, ctypes.c_void_p).value and not got_ud.value


def test_llama_layer_logs_through_ggml_callback(lib_path):
    # ggml_log_set alone (not llama_log_set) receives the llama layer's lines, one per call,
    # each ending in exactly one newline
    with ggml.capture_log() as lines:
        b = L.llama_batch_init(0, 0, 1)
    assert not b.token
    assert [t for _, t in lines] == ["llama_batch_init: invalid sizes n_tokens=0 embd=0 n_seq_max=1\n"]
    assert lines[0][0] == ggml.GGML_LOG_LEVEL_ERROR


def test_long_llama_log_line_arrives_whole(vocab_dir):
    # longer than the formatter's stack buffer (512 bytes): formatted on the heap, not cut
    pattern = "(" + "x" * 900
    pats = (ctypes.c_char_p * 1)(pattern.encode())
    with Model(vocab_dir / "llama-spm.gguf", vocab_only=True) as m, ggml.capture_log() as lines:
        assert not L.llama_sampler_init_grammar_lazy_patterns(m.vocab, b'root ::= "a"', b"root", pats, 1, None, 0)
    texts = [t for _, t in lines if "trigger pattern 0" in t]
    assert len(texts) == 1, lines
    text = texts[0]
    assert f'("{pattern}")' in text and len(text) > 900
    assert text.endswith("\n") and not text.endswith("\n\n") and text.count("\n") == 1


def test_failure_hook_fails_the_chosen_wrapper_allocation(lib_path):
    p = ggml.ggml_mem_malloc(64)
    assert p
    ggml.ggml_mem_aligned_free(None)  # NULL-safe
    q = ggml.ggml_mem_aligned_alloc(64, 100)
    assert q and q % 64 == 0
    ggml.ggml_mem_aligned_free(q)
    libc_free = ctypes.CDLL(None).free
    libc_free.argtypes = [ctypes.c_void_p]
    libc_free(p)
    try:
        ggml.ggml_test_fail_alloc_after(1)
        a = ggml.ggml_mem_calloc(4, 4)  # allocation 0 succeeds
        b = ggml.ggml_mem_strdup(b"abc")  # allocation 1 fails
        c = ggml.ggml_mem_malloc(8)  # later ones succeed again
        assert ggml.ggml_test_alloc_count() == 3
    finally:
        ggml.ggml_test_fail_alloc_after(-1)
    assert a and not b and c
    assert ctypes.string_at(a, 16) == bytes(16)
    r = ggml.ggml_mem_realloc(c, 32)
    assert r
    for ptr in (a, r):
        libc_free(ptr)


def test_llama_layer_allocations_reach_the_failure_hook(lib_path):
    # llama_batch_init (src/batch.c) allocates through GGML_MALLOC/GGML_CALLOC: each one made
    # to fail gives the documented empty batch and a logged reason, never a crash
    try:
        ggml.ggml_test_fail_alloc_after(1 << 40)
        b = L.llama_batch_init(3, 0, 2)
        total = ggml.ggml_test_alloc_count()
    finally:
        ggml.ggml_test_fail_alloc_after(-1)
    assert b.token and b.seq_id
    L.llama_batch_free(b)
    assert total >= 5
    for k in range(total):
        with ggml.capture_log() as lines:
            try:
                ggml.ggml_test_fail_alloc_after(k)
                b = L.llama_batch_init(3, 0, 2)
            finally:
                ggml.ggml_test_fail_alloc_after(-1)
        assert not b.token and not b.seq_id and not b.pos, k
        assert any("llama_batch_init: out of memory for 3 tokens" in t for _, t in lines), (k, lines)
