"""GGUF reader/writer: the crafted-file corpus (refused cleanly, in a child process so a crash
fails the test instead of killing pytest), interop with the `gguf` PyPI package in both
directions, the mmap path, the Python bindings and `gguf-dump`."""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from llama_py import ggml  # noqa: E402
from llama_py import gguf_dump  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS_DIR = REPO / "tests" / "data" / "gguf-corpus"


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_gguf_corpus", REPO / "scripts" / "gen_gguf_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _load_generator()


def _child(code: str, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter (same library, same package path)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


# ---- the crafted corpus ----

def test_committed_corpus_matches_generator():
    """tests/data/gguf-corpus is exactly what scripts/gen_gguf_corpus.py produces."""
    c = gen.corpus()
    on_disk = {p.stem for p in CORPUS_DIR.glob("*.gguf")}
    assert on_disk == set(c), "regenerate with: python scripts/gen_gguf_corpus.py"
    for name, (data, _) in c.items():
        assert (CORPUS_DIR / f"{name}.gguf").read_bytes() == data, name
    manifest = dict(line.split("\t", 1) for line in (CORPUS_DIR / "MANIFEST.tsv").read_text().splitlines())
    assert manifest == {n: e for n, (_, e) in c.items()}
    assert sum(n.startswith("bad-") for n in c) >= 80


def test_gguf_package_agrees_with_corpus_controls():
    """The independent reader accepts our valid controls (so they are valid GGUF, not just
    files our reader happens to like) and reads the same values."""
    for name in ("ok-strict-small", "ok-v2", "ok-unknown-keys-trailing", "ok-alignment-64"):
        r = gguf.GGUFReader(CORPUS_DIR / f"{name}.gguf")
        assert r.fields["test.u64"].contents() == 2**63 + 5
        assert r.fields["test.arr_str"].contents() == ["a", "", "héllo"]
        assert [t.name for t in r.tensors] == ["a", "b", "c"]


CORPUS_CHILD = """
    import ctypes, json, sys
    from pathlib import Path
    from llama_py import ggml
    d = Path(sys.argv[1])
    manifest = dict(l.split("\\t", 1) for l in (d / "MANIFEST.tsv").read_text().splitlines())
    out = {}
    def load(path=None, data=None, no_alloc=True, want_ctx=True):
        meta = ctypes.c_void_p(12345)  # must come back NULL on refusal
        p = ggml.gguf_init_params(no_alloc, ctypes.pointer(meta) if want_ctx else None)
        with ggml.capture_log() as log:
            g = ggml.gguf_init_from_file(str(path).encode(), p) if path else ggml.gguf_init_from_buffer(data, len(data), p)
        ok = g is not None
        info = None
        if ok:
            info = [ggml.gguf_get_n_kv(g), ggml.gguf_get_n_tensors(g)]
        ggml.gguf_free(g)
        if want_ctx and meta.value not in (None, 12345):
            ggml.ggml_free(meta)
        return ok, (meta.value is None) if want_ctx else True, "".join(t for lv, t in log if lv == ggml.GGML_LOG_LEVEL_ERROR), info
    for name in manifest:
        data = (d / f"{name}.gguf").read_bytes()
        res = [load(path=d / f"{name}.gguf"), load(path=d / f"{name}.gguf", no_alloc=False),
               load(data=data, want_ctx=False), load(data=data, no_alloc=False)]
        out[name] = res
        if name.startswith("ok-strict-"):
            out[name + "/prefixes"] = [load(data=data[:n], no_alloc=False)[:3] for n in range(len(data))]
    print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def corpus_results(tmp_path_factory, lib_path):
    d = tmp_path_factory.mktemp("corpus")
    gen.write_corpus(d)
    r = _child(CORPUS_CHILD, str(d))
    assert r.returncode == 0, f"corpus child died (rc {r.returncode}): a malformed file crashed the reader\n{r.stderr[-4000:]}"
    return gen.corpus(), json.loads(r.stdout)


def test_corpus_bad_files_refused(corpus_results):
    c, res = corpus_results
    bad = [n for n in c if n.startswith("bad-")]
    assert len(bad) >= 80
    for name in bad:
        expect = c[name][1]
        for ok, ctx_null, log, _ in res[name]:
            assert not ok, f"{name}: malformed file accepted"
            assert ctx_null, f"{name}: *params.ctx not reset to NULL"
            assert log, f"{name}: refused without an error message"
            assert expect in log, f"{name}: message {log!r} lacks {expect!r}"
            assert "gguf" in log


def test_corpus_ok_files_load(corpus_results):
    c, res = corpus_results
    ok_names = [n for n in c if n.startswith("ok-")]
    assert "ok-unknown-keys-trailing" in ok_names  # unknown keys + trailing bytes: still loads
    for name in ok_names:
        infos = set()
        for ok, ctx_null, log, info in res[name]:
            assert ok, f"{name}: valid file refused: {log}"
            assert not log
            infos.add(tuple(info))
        assert len(infos) == 1, f"{name}: file and buffer reads disagree: {infos}"


def test_corpus_every_truncation_refused(corpus_results):
    c, res = corpus_results
    strict = [n for n in c if n.startswith("ok-strict-")]
    assert strict
    for name in strict:
        prefixes = res[name + "/prefixes"]
        assert len(prefixes) == len(c[name][0])
        for n, (ok, ctx_null, log) in enumerate(prefixes):
            assert not ok and ctx_null and log, f"{name} truncated to {n} bytes: accepted or silent"


def test_corpus_c_driver(lib_path):
    """The C driver (what CI runs under ASan + UBSan) passes on the committed corpus."""
    exe = Path(lib_path).parent / "test_gguf"
    if not exe.is_file():
        pytest.skip(f"{exe} not built (configure with -DLLAMA_BUILD_TESTS=ON)")
    r = subprocess.run([str(exe)], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, TEST_GGUF_FUZZ="1000"))
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert " 0 failures" in r.stdout


# ---- interop with the gguf package ----

SCALARS = [
    ("t.u8", gguf.GGUFValueType.UINT8, 255), ("t.i8", gguf.GGUFValueType.INT8, -128),
    ("t.u16", gguf.GGUFValueType.UINT16, 65535), ("t.i16", gguf.GGUFValueType.INT16, -32768),
    ("t.u32", gguf.GGUFValueType.UINT32, 2**32 - 1), ("t.i32", gguf.GGUFValueType.INT32, -2**31),
    ("t.f32", gguf.GGUFValueType.FLOAT32, 3.140625), ("t.bool", gguf.GGUFValueType.BOOL, True),
    ("t.bool0", gguf.GGUFValueType.BOOL, False), ("t.str", gguf.GGUFValueType.STRING, "héllo \u4e16\u754c"),
    ("t.str_empty", gguf.GGUFValueType.STRING, ""), ("t.u64", gguf.GGUFValueType.UINT64, 2**64 - 1),
    ("t.i64", gguf.GGUFValueType.INT64, -2**63), ("t.f64", gguf.GGUFValueType.FLOAT64, -1.5e300),
]
ARRAYS = [
    ("a.u8", gguf.GGUFValueType.UINT8, [0, 1, 255]), ("a.i8", gguf.GGUFValueType.INT8, [-1, 2]),
    ("a.u16", gguf.GGUFValueType.UINT16, [1, 65535]), ("a.i16", gguf.GGUFValueType.INT16, [-5, 5]),
    ("a.u32", gguf.GGUFValueType.UINT32, [7, 2**32 - 1]), ("a.i32", gguf.GGUFValueType.INT32, list(range(-50, 50))),
    ("a.f32", gguf.GGUFValueType.FLOAT32, [0.5, -2.25, 1e-3]), ("a.bool", gguf.GGUFValueType.BOOL, [True, False, True]),
    ("a.u64", gguf.GGUFValueType.UINT64, [2**63]), ("a.i64", gguf.GGUFValueType.INT64, [-(2**40), 3]),
    ("a.f64", gguf.GGUFValueType.FLOAT64, [1e-300, 2.5]), ("a.str", gguf.GGUFValueType.STRING, ["x", "", "ÿ", "tok " * 20]),
]
# The gguf package cannot write empty arrays, but reads them; our writer writes them.
EMPTY_ARRAYS = [("e.i32", gguf.GGUFValueType.INT32, []), ("e.str", gguf.GGUFValueType.STRING, [])]


def _expected_python(vtype, v):
    if vtype == gguf.GGUFValueType.FLOAT32:
        return [float(np.float32(x)) for x in v] if isinstance(v, list) else float(np.float32(v))
    return v


def _supported(qt) -> bool:
    return bool(ggml.ggml_get_type_traits(int(qt)))


def _gguf_package_file(path: Path, types, seed=0, alignment=None):
    """A file written by gguf.GGUFWriter with every value type and one tensor per type."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment:
        w.add_custom_alignment(alignment)
    for key, vt, v in SCALARS:
        w.add_key_value(key, v, vt)
    for key, vt, v in ARRAYS:
        w.add_key_value(key, v, gguf.GGUFValueType.ARRAY, sub_type=vt)
    expect = {}
    for qt in types:
        blck, tsize = gguf.GGML_QUANT_SIZES[qt]
        rows, blocks = 3, 2
        raw = rng.integers(0, 256, size=(rows, blocks * tsize), dtype=np.uint8)
        if qt in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.F64):
            dt = {gguf.GGMLQuantizationType.F32: np.float32, gguf.GGMLQuantizationType.F16: np.float16,
                  gguf.GGMLQuantizationType.F64: np.float64}[qt]
            arr = rng.standard_normal((rows, blocks)).astype(dt)
            w.add_tensor(f"t.{qt.name}", arr)
            expect[f"t.{qt.name}"] = (int(qt), [blocks, rows], arr.tobytes())
            continue
        w.add_tensor(f"t.{qt.name}", raw, raw_dtype=qt)
        expect[f"t.{qt.name}"] = (int(qt), [blocks * blck, rows], raw.tobytes())
    arr3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    w.add_tensor("t.3d", arr3)
    expect["t.3d"] = (0, [4, 3, 2], arr3.tobytes())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expect


def _read_ours(path: Path, no_alloc=False):
    meta = ctypes.c_void_p()
    g = ggml.gguf_init_from_file(str(path).encode(), ggml.gguf_init_params(no_alloc, ctypes.pointer(meta)))
    assert g is not None, f"our reader refused {path}"
    return g, meta


def _check_values(g):
    for key, vt, v in SCALARS:
        k = ggml.gguf_find_key(g, key.encode())
        assert k >= 0, key
        assert ggml.gguf_get_kv_type(g, k) == int(vt), key
        assert ggml.gguf_value(g, k) == _expected_python(vt, v), key
    # the typed getters agree with the generic path
    assert ggml.gguf_get_val_u8(g, ggml.gguf_find_key(g, b"t.u8")) == 255
    assert ggml.gguf_get_val_i64(g, ggml.gguf_find_key(g, b"t.i64")) == -2**63
    assert ggml.gguf_get_val_u64(g, ggml.gguf_find_key(g, b"t.u64")) == 2**64 - 1
    assert ggml.gguf_get_val_f64(g, ggml.gguf_find_key(g, b"t.f64")) == -1.5e300
    assert ggml.gguf_get_val_bool(g, ggml.gguf_find_key(g, b"t.bool")) is True
    assert ggml.gguf_get_val_str(g, ggml.gguf_find_key(g, b"t.str")).decode() == "héllo \u4e16\u754c"
    for key, vt, v in ARRAYS:
        k = ggml.gguf_find_key(g, key.encode())
        assert ggml.gguf_get_kv_type(g, k) == ggml.GGUF_TYPE_ARRAY, key
        assert ggml.gguf_get_arr_type(g, k) == int(vt), key
        assert ggml.gguf_get_arr_n(g, k) == len(v), key
        assert ggml.gguf_value(g, k) == _expected_python(vt, v), key


def test_read_files_written_by_gguf_package(tmp_path):
    types = [qt for qt in gguf.GGML_QUANT_SIZES if _supported(qt)]
    assert len(types) >= 20  # every type of ggml.h's enum
    path = tmp_path / "pkg.gguf"
    expect = _gguf_package_file(path, types)
    ref = gguf.GGUFReader(path)
    g, meta = _read_ours(path)
    try:
        assert ggml.gguf_get_version(g) == 3
        assert ggml.gguf_get_val_str(g, ggml.gguf_find_key(g, b"general.architecture")) == b"llama"
        _check_values(g)
        assert ggml.gguf_get_n_tensors(g) == len(expect) == len(ref.tensors)
        data_offset = ggml.gguf_get_data_offset(g)
        ref_by_name = {t.name: t for t in ref.tensors}
        t = ggml.ggml_get_first_tensor(meta)
        for i in range(ggml.gguf_get_n_tensors(g)):
            name = ggml.gguf_get_tensor_name(g, i).decode()
            qt, ne, data = expect[name]
            rt = ref_by_name[name]
            assert ggml.gguf_get_tensor_type(g, i) == qt == int(rt.tensor_type), name
            n_dims = ggml.gguf_get_tensor_n_dims(g, i)
            assert [ggml.gguf_get_tensor_ne(g, i, d) for d in range(n_dims)] == ne == [int(x) for x in rt.shape], name
            assert data_offset + ggml.gguf_get_tensor_offset(g, i) == rt.data_offset, name
            assert ggml.gguf_get_tensor_size(g, i) == len(data) == rt.n_bytes, name
            # the ggml context holds a copy of the data, in file order
            assert ggml.ggml_get_name(t).decode() == name
            assert ctypes.string_at(ggml.ggml_get_data(t), ggml.ggml_nbytes(t)) == data, name
            t = ggml.ggml_get_next_tensor(meta, t)
        assert t is None
    finally:
        ggml.gguf_free(g)
        ggml.ggml_free(meta)

    # the same bytes through gguf_init_from_buffer
    raw = path.read_bytes()
    g2 = ggml.gguf_init_from_buffer(raw, len(raw), ggml.gguf_init_params(True, None))
    assert g2 is not None
    _check_values(g2)
    ggml.gguf_free(g2)


def test_read_gguf_package_file_with_custom_alignment(tmp_path):
    path = tmp_path / "align.gguf"
    expect = _gguf_package_file(path, [gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.F32], alignment=256)
    ref = gguf.GGUFReader(path)
    g, meta = _read_ours(path)
    try:
        assert ggml.gguf_get_alignment(g) == 256
        assert ggml.gguf_get_data_offset(g) % 256 == 0
        for i in range(ggml.gguf_get_n_tensors(g)):
            name = ggml.gguf_get_tensor_name(g, i).decode()
            assert ggml.gguf_get_data_offset(g) + ggml.gguf_get_tensor_offset(g, i) == \
                next(t.data_offset for t in ref.tensors if t.name == name)
        assert len(expect) == ggml.gguf_get_n_tensors(g)
    finally:
        ggml.gguf_free(g)
        ggml.ggml_free(meta)


def test_unsupported_types_from_gguf_package_refused(tmp_path):
    """Types the gguf package knows but this library does not (IQ*, TQ*, ...) are refused
    with a message naming the tensor and the type, not misread."""
    unsupported = [qt for qt in gguf.GGML_QUANT_SIZES if not _supported(qt)]
    assert unsupported
    for qt in unsupported:
        path = tmp_path / f"{qt.name}.gguf"
        _gguf_package_file(path, [qt])
        with ggml.capture_log() as log:
            g = ggml.gguf_init_from_file(str(path).encode(), ggml.gguf_init_params(True, None))
        assert g is None, qt.name
        text = "".join(t for _, t in log)
        assert f"t.{qt.name}" in text and f"type {int(qt)}" in text, text


def _our_file(path: Path):
    """A file written by our writer: every value type, arrays, and tensors of several types."""
    types = [qt for qt in gguf.GGML_QUANT_SIZES if _supported(qt)]
    rng = np.random.default_rng(1)
    w = ggml.gguf_init_empty()
    ctx = ggml.ggml_init(ggml.ggml_init_params(4 << 20, None, False))
    setters = {
        gguf.GGUFValueType.UINT8: ggml.gguf_set_val_u8, gguf.GGUFValueType.INT8: ggml.gguf_set_val_i8,
        gguf.GGUFValueType.UINT16: ggml.gguf_set_val_u16, gguf.GGUFValueType.INT16: ggml.gguf_set_val_i16,
        gguf.GGUFValueType.UINT32: ggml.gguf_set_val_u32, gguf.GGUFValueType.INT32: ggml.gguf_set_val_i32,
        gguf.GGUFValueType.FLOAT32: ggml.gguf_set_val_f32, gguf.GGUFValueType.BOOL: ggml.gguf_set_val_bool,
        gguf.GGUFValueType.UINT64: ggml.gguf_set_val_u64, gguf.GGUFValueType.INT64: ggml.gguf_set_val_i64,
        gguf.GGUFValueType.FLOAT64: ggml.gguf_set_val_f64,
        gguf.GGUFValueType.STRING: lambda g, k, v: ggml.gguf_set_val_str(g, k, v.encode()),
    }
    ggml.gguf_set_val_str(w, b"general.architecture", b"llama")
    for key, vt, v in SCALARS:
        setters[vt](w, key.encode(), v)
    for key, vt, v in ARRAYS + EMPTY_ARRAYS:
        if vt == gguf.GGUFValueType.STRING:
            arr = (ctypes.c_char_p * len(v))(*[s.encode() for s in v])
            ggml.gguf_set_arr_str(w, key.encode(), arr, len(v))
        else:
            size, fmt = ggml.GGUF_TYPE_SIZES[ggml.gguf_type(int(vt))]
            buf = ctypes.create_string_buffer(struct.pack(f"<{len(v)}{fmt}", *v), max(1, size * len(v)))
            ggml.gguf_set_arr_data(w, key.encode(), int(vt), buf, len(v))
    expect = {}
    for qt in types:
        blck, tsize = gguf.GGML_QUANT_SIZES[qt]
        ne = [2 * blck, 3]
        t = ggml.ggml_new_tensor(ctx, int(qt), 2, (ctypes.c_int64 * 2)(*ne))
        ggml.ggml_set_name(t, f"t.{qt.name}".encode())
        data = rng.integers(0, 256, size=ggml.ggml_nbytes(t), dtype=np.uint8).tobytes()
        ctypes.memmove(ggml.ggml_get_data(t), data, len(data))
        ggml.gguf_add_tensor(w, t)
        expect[f"t.{qt.name}"] = (int(qt), ne, data)
    return w, ctx, expect


def test_files_written_by_us_read_by_gguf_package(tmp_path):
    w, ctx, expect = _our_file(tmp_path)
    path = tmp_path / "ours.gguf"
    try:
        assert ggml.gguf_write_to_file(w, str(path).encode(), False)
        size = ctypes.c_size_t()
        buf = ggml.gguf_write_to_buf(w, ctypes.byref(size), False)
        assert buf and ctypes.string_at(buf, size.value) == path.read_bytes()
        ggml.gguf_buf_free(buf)
        meta_size = ggml.gguf_get_meta_size(w)
        meta = ctypes.create_string_buffer(meta_size)
        ggml.gguf_get_meta_data(w, meta)
        assert meta.raw == path.read_bytes()[:meta_size]
    finally:
        ggml.gguf_free(w)
        ggml.ggml_free(ctx)

    r = gguf.GGUFReader(path)
    assert r.fields["GGUF.version"].contents() == 3
    assert r.fields["general.architecture"].contents() == "llama"
    for key, vt, v in SCALARS:
        f = r.fields[key]
        assert f.types == [vt], key
        assert f.contents() == _expected_python(vt, v), key
    for key, vt, v in ARRAYS + EMPTY_ARRAYS:
        f = r.fields[key]
        assert f.types[0] == gguf.GGUFValueType.ARRAY and (not v or f.types[-1] == vt), key
        assert (f.contents() or []) == _expected_python(vt, v), key
    assert len(r.tensors) == len(expect)
    for t in r.tensors:
        qt, ne, data = expect[t.name]
        assert int(t.tensor_type) == qt, t.name
        assert [int(x) for x in t.shape] == ne, t.name
        assert t.n_bytes == len(data) and np.asarray(t.data).tobytes() == data, t.name
        assert t.data_offset % 32 == 0


def test_rewrite_preserves_everything(tmp_path):
    """gguf package file -> our reader -> our writer -> gguf package reader: same content."""
    src = tmp_path / "src.gguf"
    _gguf_package_file(src, [gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0,
                             gguf.GGMLQuantizationType.F16])
    g, meta = _read_ours(src)
    dst = tmp_path / "dst.gguf"
    try:
        assert ggml.gguf_write_to_file(g, str(dst).encode(), False)  # data pointers: the ggml copies
    finally:
        ggml.gguf_free(g)
        ggml.ggml_free(meta)
    a, b = gguf.GGUFReader(src), gguf.GGUFReader(dst)
    assert [k for k in a.fields] == [k for k in b.fields]
    for k in a.fields:
        assert a.fields[k].contents() == b.fields[k].contents(), k
    for ta, tb in zip(a.tensors, b.tensors):
        assert (ta.name, ta.tensor_type, list(ta.shape), ta.data_offset) == (tb.name, tb.tensor_type, list(tb.shape), tb.data_offset)
        assert np.asarray(ta.data).tobytes() == np.asarray(tb.data).tobytes()


def test_writer_set_tensor_type_and_remove(tmp_path):
    w, ctx, expect = _our_file(tmp_path)
    try:
        n_kv = ggml.gguf_get_n_kv(w)
        assert ggml.gguf_remove_key(w, b"t.u8") >= 0 and ggml.gguf_get_n_kv(w) == n_kv - 1
        assert ggml.gguf_remove_key(w, b"t.u8") == -1
        # Q4_0 [64, 3] (108 bytes) -> F16 (384 bytes): the following offsets move up, stay packed
        i = ggml.gguf_find_tensor(w, b"t.Q4_0")
        before = ggml.gguf_get_tensor_offset(w, i + 1)
        ggml.gguf_set_tensor_type(w, b"t.Q4_0", int(gguf.GGMLQuantizationType.F16))
        assert ggml.gguf_get_tensor_type(w, i) == int(gguf.GGMLQuantizationType.F16)
        assert ggml.gguf_get_tensor_size(w, i) == 384
        assert ggml.gguf_get_tensor_offset(w, i + 1) == before + 384 - 128
        for j in range(1, ggml.gguf_get_n_tensors(w)):
            prev_end = ggml.gguf_get_tensor_offset(w, j - 1) + ggml.gguf_get_tensor_size(w, j - 1)
            assert ggml.gguf_get_tensor_offset(w, j) == (prev_end + 31) // 32 * 32
        # F32 [2, 3] cannot become Q8_0 (2 is not a multiple of 32): refused, unchanged
        k = ggml.gguf_find_tensor(w, b"t.F32")
        with ggml.capture_log() as log:
            ggml.gguf_set_tensor_type(w, b"t.F32", int(gguf.GGMLQuantizationType.Q8_0))
        assert log and ggml.gguf_get_tensor_type(w, k) == 0
        meta_only = tmp_path / "meta.gguf"
        assert ggml.gguf_write_to_file(w, str(meta_only).encode(), True)
        assert meta_only.stat().st_size == ggml.gguf_get_meta_size(w)
    finally:
        ggml.gguf_free(w)
        ggml.ggml_free(ctx)


# ---- bindings, mmap ----

def test_struct_layout_matches_library(lib_path):
    ggml.check_struct_layout(ggml.gguf_init_params, "gguf_init_params")


def test_every_gguf_h_function_is_bound(lib_path):
    header = (REPO / "ggml" / "include" / "gguf.h").read_text()
    import re
    declared = set(re.findall(r"GGML_API[^;(]*?\b(gguf_\w+)\s*\(", header))
    assert len(declared) > 60
    for name in declared:
        fn = getattr(ggml, name, None)
        assert fn is not None, f"{name} is not bound in llama_py"
        assert getattr(fn, "c_name", None) == name
        getattr(ggml.load_library(), name)  # exported by the library


def test_type_names_and_wrong_type_getters(lib_path):
    assert [ggml.gguf_type_name(t) for t in range(13)] == [
        b"u8", b"i8", b"u16", b"i16", b"u32", b"i32", b"f32", b"bool", b"str", b"arr", b"u64", b"i64", b"f64"]
    g = ggml.gguf_init_empty()
    try:
        ggml.gguf_set_val_str(g, b"s", b"x")
        with ggml.capture_log() as log:
            assert ggml.gguf_get_val_u32(g, 0) == 0
            assert ggml.gguf_get_val_str(g, 5) is None
            assert ggml.gguf_get_arr_n(g, 0) == 0
        assert len([1 for lv, _ in log if lv == ggml.GGML_LOG_LEVEL_ERROR]) == 3
        assert ggml.gguf_find_key(g, b"missing") == -1
        assert ggml.gguf_get_data_offset(g) == ggml.gguf_get_meta_size(g)
    finally:
        ggml.gguf_free(g)


def test_mmap_matches_file(tmp_path, lib_path):
    path = CORPUS_DIR / "ok-strict-small.gguf"
    m = ggml.gguf_mmap_open(str(path).encode())
    assert m
    try:
        assert ggml.gguf_mmap_size(m) == path.stat().st_size
        assert ctypes.string_at(ggml.gguf_mmap_addr(m), ggml.gguf_mmap_size(m)) == path.read_bytes()
    finally:
        ggml.gguf_mmap_close(m)
    with ggml.capture_log() as log:
        assert ggml.gguf_mmap_open(str(tmp_path / "missing.gguf").encode()) is None
    assert any("missing.gguf" in t for _, t in log)


MMAP_CHILD = """
    import ctypes, sys
    from llama_py import ggml
    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    path = sys.argv[1].encode()
    before = rss()
    meta = ctypes.c_void_p()
    g = ggml.gguf_init_from_file(path, ggml.gguf_init_params(True, ctypes.pointer(meta)))
    assert g is not None
    m = ggml.gguf_mmap_open(path)
    base = ggml.gguf_mmap_addr(m)
    size = ggml.gguf_mmap_size(m)
    off = ggml.gguf_get_data_offset(g) + ggml.gguf_get_tensor_offset(g, 0)
    assert off + ggml.gguf_get_tensor_size(g, 0) <= size
    first = ctypes.string_at(base + off, 4096)        # touch one page of the tensor
    after = rss()
    print(size, after - before, first == bytes(4096))
    ggml.gguf_mmap_close(m); ggml.gguf_free(g); ggml.ggml_free(meta)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to read RSS")
def test_opening_a_2gb_file_does_not_read_it(tmp_path, lib_path):
    """A (sparse) 2 GiB model opens and maps with resident memory growing by a few MB at most."""
    n = 2**29  # F32 elements: 2 GiB
    head = gen.build([gen.kv("general.architecture", gen.STR, "llama")], [gen.tinfo("w", [n], 0, 0)])
    path = tmp_path / "big.gguf"
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + 4 * n)  # sparse: no disk space, no I/O
    r = _child(MMAP_CHILD, str(path))
    assert r.returncode == 0, r.stderr[-3000:]
    size, grew, zeros = r.stdout.split()
    assert int(size) == len(head) + 4 * n
    assert int(grew) < 64 << 20, f"RSS grew by {int(grew) >> 20} MiB"
    assert zeros == "True"


# ---- gguf-dump ----

def test_gguf_dump_text_and_json(tmp_path, capsys, lib_path):
    path = tmp_path / "pkg.gguf"
    _gguf_package_file(path, [gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.F32])
    assert gguf_dump.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "* Dumping" in out
    assert "general.architecture = 'llama'" in out
    assert "t.i32 = -2147483648" in out
    assert "[INT32]    |      100 | a.i32 = [-50, -49, -48, -47, -46, -45, -44, -43, ... (92 more)]" in out
    assert "| Q8_0    |" in out and "t.Q8_0" in out

    assert gguf_dump.main([str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ref = gguf.GGUFReader(path)
    fields = {k: f for k, f in ref.fields.items() if not k.startswith("GGUF.")}
    assert list(doc["metadata"]) == list(fields)
    for k, f in fields.items():
        assert doc["metadata"][k]["value"] == f.contents(), k
    assert list(doc["tensors"]) == [t.name for t in ref.tensors]
    for t in ref.tensors:
        d = doc["tensors"][t.name]
        assert d["type"] == t.tensor_type.name and d["shape"] == [int(x) for x in t.shape]
        assert d["offset_in_file"] == t.data_offset and d["n_bytes"] == t.n_bytes

    assert gguf_dump.main([str(CORPUS_DIR / "bad-magic.gguf")]) == 1


def test_gguf_dump_cli_on_smollm2(smollm2_path, lib_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "llama_py", "gguf-dump", str(smollm2_path), "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    ref = gguf.GGUFReader(smollm2_path)
    fields = {k: f for k, f in ref.fields.items() if not k.startswith("GGUF.")}
    assert list(doc["metadata"]) == list(fields)
    for k in ("general.architecture", "llama.block_count", "llama.attention.head_count_kv",
              "tokenizer.ggml.model", "tokenizer.ggml.bos_token_id", "llama.rope.freq_base"):
        assert doc["metadata"][k]["value"] == fields[k].contents(), k
    toks = doc["metadata"]["tokenizer.ggml.tokens"]
    assert toks["count"] == len(toks["value"]) == len(fields["tokenizer.ggml.tokens"].contents())
    assert toks["value"][:100] == fields["tokenizer.ggml.tokens"].contents(slice(0, 100))
    assert len(doc["tensors"]) == len(ref.tensors) == 272
    for t in ref.tensors:
        d = doc["tensors"][t.name]
        assert d["type"] == t.tensor_type.name, t.name
        assert d["shape"] == [int(x) for x in t.shape], t.name
        assert d["offset_in_file"] == t.data_offset, t.name

    r = subprocess.run([sys.executable, "-m", "llama_py", "gguf-dump", str(smollm2_path)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0
    assert "token_embd.weight" in r.stdout and "Q4_1" in r.stdout and "tokenizer.ggml.tokens" in r.stdout


def test_string_lengths_and_whole_file_read_of_a_gguf_package_file(tmp_path):
    # gguf_get_arr_str_len and gguf_file_read_all, public for the llama layer's vocab and loader
    path = tmp_path / "strs.gguf"
    strs = ["ab", "", "h\u00e9llo", "nul\x00inside"]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_key_value("t.strs", strs, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.STRING)
    w.add_key_value("t.one", "x\x00y", gguf.GGUFValueType.STRING)
    w.add_key_value("t.u32", 7, gguf.GGUFValueType.UINT32)
    w.add_tensor("w", np.arange(8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    g = ggml.gguf_init_from_file(str(path).encode(), ggml.gguf_init_params(True, None))
    assert g is not None
    try:
        k = ggml.gguf_find_key(g, b"t.strs")
        assert [ggml.gguf_get_arr_str_len(g, k, i) for i in range(len(strs))] == [len(s.encode()) for s in strs]
        assert ggml.gguf_get_arr_str_len(g, ggml.gguf_find_key(g, b"t.one"), 0) == 3
        assert ggml.gguf_get_arr_str_len(g, ggml.gguf_find_key(g, b"t.u32"), 0) == 0  # not a string
        m = ggml.gguf_file_read_all(str(path).encode())
        assert m is not None
        try:
            raw = path.read_bytes()
            assert ggml.gguf_mmap_size(m) == len(raw)
            assert ctypes.string_at(ggml.gguf_mmap_addr(m), len(raw)) == raw
            off = ggml.gguf_get_data_offset(g) + ggml.gguf_get_tensor_offset(g, 0)
            assert ctypes.string_at(ggml.gguf_mmap_addr(m) + off, 32) == np.arange(8, dtype=np.float32).tobytes()
        finally:
            ggml.gguf_mmap_close(m)
    finally:
        ggml.gguf_free(g)
    with ggml.capture_log() as lines:
        assert ggml.gguf_file_read_all(str(tmp_path / "missing.gguf").encode()) is None
    assert any("missing.gguf" in t for _, t in lines), lines
