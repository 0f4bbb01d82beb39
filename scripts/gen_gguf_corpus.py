#!/usr/bin/env python3
"""Generates the GGUF robustness corpus: one crafted file per fault, plus valid controls.

Files are built byte by byte here (independently of the library under test), from the
GGUF format as published. Naming, which the test drivers rely on:
  bad-*.gguf        must be refused (NULL + a logged error containing the MANIFEST text)
  ok-*.gguf         must load
  ok-strict-*.gguf  must load, and every proper prefix of it must be refused
MANIFEST.tsv lists `name<TAB>expected substring of the error message` (empty for ok files).

    python scripts/gen_gguf_corpus.py [OUT_DIR]     # default tests/data/gguf-corpus
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "data" / "gguf-corpus"

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
# ggml tensor types used here: (id, block size, bytes per block)
T_F32, T_F16, T_Q8_0 = (0, 1, 4), (1, 1, 2), (8, 32, 34)

_SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
               F32: "<f", BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}


def gstr(s) -> bytes:
    b = s.encode() if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def val(t: int, v) -> bytes:
    """Encoded value (no type tag) of scalar type t."""
    if t == STR:
        return gstr(v)
    return struct.pack(_SCALAR_FMT[t], v)


def kv(key, t: int, v) -> bytes:
    return gstr(key) + struct.pack("<I", t) + val(t, v)


def kv_arr(key, et: int, items: Sequence) -> bytes:
    return (gstr(key) + struct.pack("<II", ARR, et) + struct.pack("<Q", len(items))
            + b"".join(val(et, x) for x in items))


def kv_raw(key, t: int, payload: bytes) -> bytes:
    return gstr(key) + struct.pack("<I", t) + payload


def tinfo(name, ne: Sequence[int], ttype: int, offset: int, n_dims: Optional[int] = None) -> bytes:
    n_dims = len(ne) if n_dims is None else n_dims
    return (gstr(name) + struct.pack("<I", n_dims) + b"".join(struct.pack("<Q", x & (2**64 - 1)) for x in ne)
            + struct.pack("<I", ttype & 0xFFFFFFFF) + struct.pack("<Q", offset & (2**64 - 1)))


def pad(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def build(kvs: List[bytes], tis: List[bytes], data: bytes = b"", *, version: int = 3,
          magic: bytes = b"GGUF", n_kv: Optional[int] = None, n_tensors: Optional[int] = None,
          alignment: int = 32, trailing: bytes = b"", version_raw: Optional[bytes] = None) -> bytes:
    """A GGUF file: header, kvs, tensor infos, padding to alignment, data, trailing bytes."""
    head = magic + (version_raw if version_raw is not None else struct.pack("<I", version))
    head += struct.pack("<QQ", (len(tis) if n_tensors is None else n_tensors) & (2**64 - 1),
                        (len(kvs) if n_kv is None else n_kv) & (2**64 - 1))
    meta = head + b"".join(kvs) + b"".join(tis)
    if tis or data:
        meta += bytes(pad(len(meta), alignment) - len(meta))
    return meta + data + trailing


# ---- the valid baseline ----

def _tensor_bytes() -> Tuple[bytes, bytes, bytes]:
    a = struct.pack("<8f", *[float(i) - 3.5 for i in range(8)])          # F32 [4, 2]
    b = struct.pack("<8H", *[0x3C00 + i for i in range(8)])              # F16 [8]
    c = struct.pack("<H", 0x3C00) + bytes(range(256 - 32, 256))           # Q8_0 [32]
    return a, b, c


def baseline_kvs() -> List[bytes]:
    return [
        kv("general.architecture", STR, "llama"),
        kv("test.u8", U8, 200), kv("test.i8", I8, -100), kv("test.u16", U16, 60000),
        kv("test.i16", I16, -30000), kv("test.u32", U32, 4000000000), kv("test.i32", I32, -2000000000),
        kv("test.f32", F32, 1.5), kv("test.bool", BOOL, 1), kv("test.u64", U64, 2**63 + 5),
        kv("test.i64", I64, -(2**62)), kv("test.f64", F64, -2.25),
        kv_arr("test.arr_i32", I32, [1, -2, 3]), kv_arr("test.arr_str", STR, ["a", "", "héllo"]),
        kv_arr("test.arr_empty", F32, []),
    ]


def baseline_tensors(alignment: int = 32) -> Tuple[List[bytes], bytes]:
    """Three tensors packed at aligned offsets; the last one ends exactly at the end of data."""
    a, b, c = _tensor_bytes()
    off_b = pad(len(a), alignment)
    off_c = pad(off_b + len(b), alignment)
    tis = [tinfo("a", [4, 2], T_F32[0], 0), tinfo("b", [8], T_F16[0], off_b),
           tinfo("c", [32], T_Q8_0[0], off_c)]
    data = a + bytes(off_b - len(a)) + b + bytes(off_c - off_b - len(b)) + c
    return tis, data


def valid(**kw) -> bytes:
    tis, data = baseline_tensors()
    return build(baseline_kvs(), tis, data, **kw)


def tensor_file(tis: List[bytes], data: bytes = bytes(64), kvs: Optional[List[bytes]] = None, **kw) -> bytes:
    return build([kv("general.architecture", STR, "llama")] if kvs is None else kvs, tis, data, **kw)


def corpus() -> Dict[str, Tuple[bytes, str]]:
    """name -> (file bytes, expected substring of the refusal message; '' for ok files)."""
    c: Dict[str, Tuple[bytes, str]] = {}
    v = valid()
    tis, data = baseline_tensors()
    kvs = baseline_kvs()
    big = 2**62

    def bad(name, b, expect):
        assert name not in c
        c["bad-" + name] = (b, expect)

    # header
    bad("empty", b"", "empty")
    bad("magic-short", b"GGU", "too small")
    bad("magic", b"GGML" + v[4:], "bad magic")
    bad("magic-lowercase", b"gguf" + v[4:], "bad magic")
    bad("header-truncated-version", b"GGUF\x03\x00", "version")
    for ver in (0, 1, 4, 99, 0xFFFFFFFF):
        bad(f"version-{ver}", build(kvs, tis, data, version=ver), "version")
    bad("version-3-byteswapped", build(kvs, tis, data, version_raw=struct.pack(">I", 3)), "big-endian")
    bad("version-2-byteswapped", build(kvs, tis, data, version_raw=struct.pack(">I", 2)), "big-endian")
    bad("header-truncated-n_tensors", v[:12], "tensor count")
    bad("header-truncated-n_kv", v[:16], "key/value count")
    bad("n_kv-2^63", build(kvs, tis, data, n_kv=2**63), "n_kv")
    bad("n_kv-2^64-1", build(kvs, tis, data, n_kv=2**64 - 1), "n_kv")
    bad("n_kv-too-many", build(kvs, [], n_kv=len(kvs) + 1), "key #15: truncated")
    bad("n_kv-exceeds-file", build(kvs, [], b"", n_kv=10**6), "n_kv")
    bad("n_tensors-2^63", build(kvs, tis, data, n_tensors=2**63), "n_tensors")
    bad("n_tensors-2^64-1", build(kvs, tis, data, n_tensors=2**64 - 1), "n_tensors")
    bad("n_tensors-too-many", tensor_file([tinfo("a", [4], T_F32[0], 0)], bytes(64), n_tensors=2), "tensor #1: empty name")
    bad("n_tensors-exceeds-file", build(kvs, tis, data, n_tensors=10**6), "n_tensors")

    # keys and values
    bad("key-len-2^62", build([struct.pack("<Q", big) + b"k" + struct.pack("<I", U8) + b"\0"], []),
        "name length 4611686018427387904")
    bad("key-len-past-end", build([struct.pack("<Q", 40) + b"general.architecture"], []), "only 20 bytes remain")
    bad("key-empty", build([kv("", U32, 1)] + kvs, tis, data), "key #0: empty name")
    bad("key-nul-byte", build([kv(b"gen\0eral", U32, 1)] + kvs, tis, data), "NUL byte")
    bad("key-duplicate", build(kvs + [kv("test.u8", U8, 1)], tis, data), "duplicate key")
    bad("key-duplicate-other-type", build(kvs + [kv("test.u8", STR, "x")], tis, data), "duplicate key")
    bad("value-type-13", build(kvs + [kv_raw("test.x", 13, b"\0" * 8)], tis, data), "invalid value type 13")
    bad("value-type-ffffffff", build(kvs + [kv_raw("test.x", 0xFFFFFFFF, b"\0" * 8)], tis, data), "invalid value type 4294967295")
    bad("value-truncated-type", build([gstr("test.x") + b"\x04\x00"], []), "truncated before its value type")
    bad("value-u64-truncated", build([kv_raw("test.x", U64, b"\1\2\3")], []), "truncated u64")
    bad("value-bool-2", build(kvs + [kv_raw("test.b", BOOL, b"\x02")], tis, data), "must be 0 or 1")
    bad("string-len-2^62", build(kvs + [kv_raw("test.s", STR, struct.pack("<Q", big) + b"abc")], tis, data),
        "string value has length 4611686018427387904")
    bad("string-len-past-end", build([kv_raw("test.s", STR, struct.pack("<Q", 9) + b"abcdefgh")], []),
        "string value has length 9")
    bad("string-truncated-len", build([kv_raw("test.s", STR, b"\x05\x00\x00\x00")], []), "truncated before the string length")
    bad("string-len-2^64-1", build(kvs + [kv_raw("test.s", STR, struct.pack("<Q", 2**64 - 1) + b"x")], tis, data),
        "string value has length")
    bad("array-nested", build(kvs + [kv_raw("test.a", ARR, struct.pack("<IIQ", ARR, U8, 1) + struct.pack("<Q", 0))], tis, data),
        "nested arrays")
    bad("array-type-13", build(kvs + [kv_raw("test.a", ARR, struct.pack("<IQ", 13, 1) + b"\0" * 8)], tis, data),
        "invalid array element type 13")
    bad("array-type-ffffffff", build(kvs + [kv_raw("test.a", ARR, struct.pack("<IQ", 0xFFFFFFFF, 1) + b"\0" * 8)], tis, data),
        "invalid array element type 4294967295")
    # counts whose byte size wraps a 64-bit product (2^61 x 8 = 2^64 -> 0)
    bad("array-count-2^61-u64", build(kvs + [kv_raw("test.a", ARR, struct.pack("<IQ", U64, 2**61) + b"\0" * 16)], tis, data),
        "array count 2305843009213693952")
    bad("array-count-2^63-u32", build(kvs + [kv_raw("test.a", ARR, struct.pack("<IQ", U32, 2**63) + b"\0" * 16)], tis, data),
        "array count")
    bad("array-count-2^64-1-u8", build(kvs + [kv_raw("test.a", ARR, struct.pack("<IQ", U8, 2**64 - 1) + b"\0" * 16)], tis, data),
        "array count")
    bad("array-count-past-end-f64", build([kv_raw("test.a", ARR, struct.pack("<IQ", F64, 3) + b"\0" * 17)], []),
        "does not fit")
    bad("array-str-count-2^61", build(kvs + [kv_raw("test.a", ARR, struct.pack("<IQ", STR, 2**61) + gstr("x"))], tis, data),
        "array count")
    bad("array-str-count-past-end", build([kv_raw("test.a", ARR, struct.pack("<IQ", STR, 4) + gstr("x") * 3)], []),
        "strings needs at least")
    bad("array-str-elem-len-2^62",
        build([kv_raw("test.a", ARR, struct.pack("<IQ", STR, 2) + gstr("x") + struct.pack("<Q", big) + b"y" * 16)], []),
        "string #1 has length 4611686018427387904")
    bad("array-bool-2", build([kv_raw("test.a", ARR, struct.pack("<IQ", BOOL, 3) + b"\x00\x01\x02")], []),
        "bool element #2 has value 2")

    # general.alignment
    for a in (0, 13, 2**31, 2**21, 3):
        bad(f"alignment-{a}", tensor_file([tinfo("a", [4], T_F32[0], 0)], bytes(16),
                                           [kv("general.alignment", U32, a)]), "general.alignment")
    bad("alignment-u64", tensor_file([], b"", [kv("general.alignment", U64, 32)]), "must be u32")
    bad("alignment-str", tensor_file([], b"", [kv("general.alignment", STR, "32")]), "must be u32")
    bad("alignment-i32", tensor_file([], b"", [kv("general.alignment", I32, 32)]), "must be u32")
    bad("alignment-array", tensor_file([], b"", [kv_arr("general.alignment", U32, [32])]), "must be u32")

    # tensor infos
    f32 = T_F32[0]
    bad("tensor-name-empty", tensor_file([tinfo("", [4], f32, 0)]), "tensor #0: empty name")
    bad("tensor-name-64", tensor_file([tinfo("n" * 64, [4], f32, 0)]), "exceeds the maximum of 63")
    bad("tensor-name-2^62", tensor_file([struct.pack("<Q", big) + b"abc"]), "name length 4611686018427387904")
    bad("tensor-name-past-end", build([], [struct.pack("<Q", 40) + b"x" * 32]), "only 32 bytes remain")
    bad("tensor-name-nul", tensor_file([tinfo(b"a\0b", [4], f32, 0)]), "NUL byte")
    bad("tensor-name-duplicate", tensor_file([tinfo("w", [4], f32, 0), tinfo("w", [4], f32, 32)]), "duplicate tensor name")
    bad("tensor-n_dims-0", tensor_file([tinfo("a", [], f32, 0)]), "n_dims = 0")
    bad("tensor-n_dims-5", tensor_file([tinfo("a", [1, 1, 1, 1, 4], f32, 0)]), "n_dims = 5")
    bad("tensor-n_dims-ffffffff", tensor_file([tinfo("a", [4], f32, 0, n_dims=0xFFFFFFFF)]), "n_dims = 4294967295")
    bad("tensor-ne-negative", tensor_file([tinfo("a", [4, -1], f32, 0)]), "ne[1] = -1 is negative")
    bad("tensor-ne-int64min", tensor_file([tinfo("a", [-(2**63)], f32, 0)]), "is negative")
    bad("tensor-ne-int64max-x2", tensor_file([tinfo("a", [2**63 - 1, 2], T_F32[0], 0)]), "overflows")
    bad("tensor-ne-product-overflow", tensor_file([tinfo("a", [2**32, 2**32], f32, 0)]), "overflows")
    bad("tensor-ne-bytes-overflow", tensor_file([tinfo("a", [2**62], 28, 0)]), "overflows")
    bad("tensor-ne-huge-past-end", tensor_file([tinfo("a", [2**40], f32, 0)]), "past the end")
    for t, what in ((4, "removed"), (5, "removed"), (99, "unknown"), (40, "unsupported"), (41, "unknown"), (31, "removed"),
                    (36, "removed"), (0xFFFFFFFF, "unknown")):
        bad(f"tensor-type-{t}", tensor_file([tinfo("a", [256], t, 0)], bytes(1024)), what)
    bad("tensor-q8_0-ne0-33", tensor_file([tinfo("a", [33], T_Q8_0[0], 0)], bytes(64)), "not a multiple of the block size 32")
    bad("tensor-q8_0-ne0-16", tensor_file([tinfo("a", [16, 2], T_Q8_0[0], 0)], bytes(64)), "not a multiple of the block size")
    bad("tensor-offset-unaligned", tensor_file([tinfo("a", [4], f32, 4)]), "not a multiple of the alignment 32")
    bad("tensor-offset-unaligned-64", tensor_file([tinfo("a", [4], f32, 32)], bytes(128),
                                                  [kv("general.alignment", U32, 64)], alignment=64), "alignment 64")
    bad("tensor-offset-overlap", tensor_file([tinfo("a", [16], f32, 0), tinfo("b", [4], f32, 32)], bytes(96)), "overlaps tensor 'a'")
    bad("tensor-offset-same", tensor_file([tinfo("a", [4], f32, 0), tinfo("b", [4], f32, 0)], bytes(64)), "overlaps")
    bad("tensor-offset-overlap-reordered", tensor_file([tinfo("b", [4], f32, 32), tinfo("a", [16], f32, 0)], bytes(96)), "overlaps")
    bad("tensor-offset-past-end", tensor_file([tinfo("a", [4], f32, 1024)]), "past the end")
    bad("tensor-offset-end-plus-1", tensor_file([tinfo("a", [4], f32, 32), tinfo("b", [4], f32, 0)], bytes(47)), "past the end")
    bad("tensor-offset-wrap", tensor_file([tinfo("a", [16], f32, 2**64 - 32)]), "wraps around")
    bad("tensor-offset-2^63", tensor_file([tinfo("a", [4], f32, 2**63)]), "past the end")
    bad("tensor-no-data-section", build([], [tinfo("a", [4], f32, 0)]), "past the end")
    bad("tensor-truncated-ne", b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + gstr("a") + struct.pack("<IQQI", 4, 4, 4, 0),
        "truncated in ne[2]")

    # positive controls
    c["ok-strict-small"] = (v, "")
    c["ok-v2"] = (valid(version=2), "")
    c["ok-unknown-keys-trailing"] = (build(kvs + [kv("zz.unknown.key", STR, "whatever"),
                                                  kv_arr("zz.unknown.arr", U16, [1, 2, 3])],
                                           tis, data, trailing=b"trailing bytes after the data\0\xff" * 3), "")
    tis64, data64 = baseline_tensors(64)
    c["ok-alignment-64"] = (build([kv("general.alignment", U32, 64)] + kvs, tis64, data64, alignment=64), "")
    c["ok-alignment-1"] = (build([kv("general.alignment", U32, 1)], [tinfo("a", [1], T_F16[0], 0), tinfo("b", [1], T_F16[0], 2)],
                                 b"\x00\x3c\x00\x40", alignment=1), "")
    c["ok-header-only"] = (build([], []), "")
    c["ok-no-tensors"] = (build(kvs, []), "")
    c["ok-name-63"] = (tensor_file([tinfo("n" * 63, [4], f32, 0)], bytes(16)), "")
    c["ok-zero-size-tensor"] = (tensor_file([tinfo("a", [0, 3], f32, 0), tinfo("b", [4], f32, 0)], bytes(16)), "")
    c["ok-offsets-gaps-reordered"] = (tensor_file([tinfo("b", [4], f32, 64), tinfo("a", [4], f32, 0)], bytes(80)), "")
    c["ok-4d"] = (tensor_file([tinfo("a", [2, 1, 3, 2], f32, 0)], bytes(48)), "")
    return c


def write_corpus(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    c = corpus()
    for old in out.glob("*.gguf"):
        if old.stem not in c:
            old.unlink()
    lines = []
    for name, (b, expect) in sorted(c.items()):
        (out / f"{name}.gguf").write_bytes(b)
        lines.append(f"{name}\t{expect}\n")
    (out / "MANIFEST.tsv").write_text("".join(lines))
    return len(c)


def main(argv: List[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    n = write_corpus(out)
    print(f"wrote {n} files to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
