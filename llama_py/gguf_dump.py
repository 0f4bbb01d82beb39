"""`python -m llama_py gguf-dump FILE [--json]`: print a GGUF file's metadata and tensor table.

Text output follows the layout users know from the `gguf-dump` tool: one line per key
(index, value type, element count, key = value; long arrays abbreviated), then one line per
tensor (index, element count, shape padded to 4 dims, type, offset in the data section,
name). `--json` prints one JSON document with every value in full instead.

The file is read through this package's own GGUF reader (metadata only; tensor data is not
read), so a malformed file is refused with the reader's message on stderr and exit code 1.
"""
from __future__ import annotations

import json
import math
import struct
import sys
from typing import Any, Dict, List, Optional

from . import _gguf as g

# ggml type ids as GGUF stores them -> names (as gguf-dump prints them).
GGML_TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS",
    17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS",
    24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0",
    35: "TQ2_0", 39: "MXFP4",
}

# Value type names as gguf-dump prints them.
VALUE_TYPE_NAMES = {
    0: "UINT8", 1: "INT8", 2: "UINT16", 3: "INT16", 4: "UINT32", 5: "INT32", 6: "FLOAT32",
    7: "BOOL", 8: "STRING", 9: "ARRAY", 10: "UINT64", 11: "INT64", 12: "FLOAT64",
}

ARRAY_ITEMS_SHOWN = 8
STRING_IN_ARRAY_MAX = 60


def ggml_type_name(t: int) -> str:
    return GGML_TYPE_NAMES.get(t, f"TYPE_{t}")


def read_gguf(path: str) -> Optional[Dict[str, Any]]:
    """Metadata and tensor infos of path as plain Python data; None if the reader refused it."""
    ctx = g.gguf_init_from_file(path.encode(), g.gguf_init_params(True, None))
    if ctx is None:
        return None
    try:
        kvs: List[Dict[str, Any]] = []
        for i in range(g.gguf_get_n_kv(ctx)):
            t = g.gguf_get_kv_type(ctx, i)
            item: Dict[str, Any] = {
                "key": g.gguf_get_key(ctx, i).decode("utf-8", "replace"),
                "type": VALUE_TYPE_NAMES[t],
                "value": g.gguf_value(ctx, i),
            }
            if t == g.GGUF_TYPE_ARRAY:
                item["array_type"] = VALUE_TYPE_NAMES[g.gguf_get_arr_type(ctx, i)]
                item["count"] = g.gguf_get_arr_n(ctx, i)
            kvs.append(item)
        tensors = []
        for i in range(g.gguf_get_n_tensors(ctx)):
            n_dims = g.gguf_get_tensor_n_dims(ctx, i)
            shape = [g.gguf_get_tensor_ne(ctx, i, d) for d in range(n_dims)]
            n_el = 1
            for x in shape:
                n_el *= x
            tensors.append({
                "name": g.gguf_get_tensor_name(ctx, i).decode("utf-8", "replace"),
                "type": ggml_type_name(g.gguf_get_tensor_type(ctx, i)),
                "shape": shape,
                "n_elements": n_el,
                "offset": g.gguf_get_tensor_offset(ctx, i),
                "n_bytes": g.gguf_get_tensor_size(ctx, i),
            })
        return {
            "filename": path,
            "endian": "LITTLE",
            "version": g.gguf_get_version(ctx),
            "alignment": g.gguf_get_alignment(ctx),
            "data_offset": g.gguf_get_data_offset(ctx),
            "kv": kvs,
            "tensors": tensors,
        }
    finally:
        g.gguf_free(ctx)


def _f32_repr(x: float) -> str:
    """Shortest decimal that reads back as the same float32 (1e-05, not 9.999999747378752e-06)."""
    if not math.isfinite(x):
        return repr(x)
    for digits in range(1, 10):
        s = f"{x:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(s)))[0] == x:
            return repr(float(s))
    return repr(x)


def _fmt_scalar(v: Any, vtype: str, in_array: bool = False) -> str:
    if isinstance(v, str):
        if in_array and len(v) > STRING_IN_ARRAY_MAX:
            v = v[:STRING_IN_ARRAY_MAX] + "..."
        return repr(v)
    if vtype == "FLOAT32":
        return _f32_repr(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _fmt_value(item: Dict[str, Any]) -> str:
    v = item["value"]
    if item["type"] != "ARRAY":
        return _fmt_scalar(v, item["type"])
    shown = ", ".join(_fmt_scalar(x, item["array_type"], True) for x in v[:ARRAY_ITEMS_SHOWN])
    if len(v) > ARRAY_ITEMS_SHOWN:
        shown += f", ... ({len(v) - ARRAY_ITEMS_SHOWN} more)"
    return f"[{shown}]"


def format_text(info: Dict[str, Any]) -> str:
    lines = [
        f"* File: {info['filename']}",
        f"* GGUF version {info['version']}, {info['endian'].lower()}-endian, alignment {info['alignment']}, "
        f"data section at byte {info['data_offset']}",
        "",
        f"* Dumping {len(info['kv']) + 3} key/value pair(s)",
    ]
    header = [("UINT32", 1, "GGUF.version", info["version"]),
              ("UINT64", 1, "GGUF.tensor_count", len(info["tensors"])),
              ("UINT64", 1, "GGUF.kv_count", len(info["kv"]))]
    for n, (t, cnt, key, val) in enumerate(header, 1):
        lines.append(f"{n:7}: {t:10} | {cnt:8} | {key} = {val}")
    for n, item in enumerate(info["kv"], len(header) + 1):
        t = f"[{item['array_type']}]" if item["type"] == "ARRAY" else item["type"]
        cnt = item.get("count", 1)
        lines.append(f"{n:7}: {t:10} | {cnt:8} | {item['key']} = {_fmt_value(item)}")
    lines += ["", f"* Dumping {len(info['tensors'])} tensor(s)"]
    for n, t in enumerate(info["tensors"], 1):
        shape = ", ".join(f"{x:5}" for x in (t["shape"] + [1] * 4)[:4])
        lines.append(f"{n:7}: {t['n_elements']:10} | {shape} | {t['type']:7} | {t['offset']:12} | {t['name']}")
    return "\n".join(lines) + "\n"


def _json_safe(v: Any) -> Any:
    """JSON has no NaN/Infinity: non-finite floats become the strings 'nan', 'inf', '-inf'."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


def to_json(info: Dict[str, Any]) -> Dict[str, Any]:
    metadata = {}
    for i, item in enumerate(info["kv"]):
        entry = {"index": i, "type": item["type"]}
        if item["type"] == "ARRAY":
            entry["array_type"] = item["array_type"]
            entry["count"] = item["count"]
        entry["value"] = _json_safe(item["value"])
        metadata[item["key"]] = entry
    tensors = {}
    for i, t in enumerate(info["tensors"]):
        tensors[t["name"]] = {
            "index": i, "type": t["type"], "shape": t["shape"], "n_elements": t["n_elements"],
            "offset": t["offset"], "offset_in_file": info["data_offset"] + t["offset"], "n_bytes": t["n_bytes"],
        }
    return {
        "filename": info["filename"], "endian": info["endian"], "version": info["version"],
        "alignment": info["alignment"], "data_offset": info["data_offset"],
        "metadata": metadata, "tensors": tensors,
    }


def main(argv: Optional[List[str]] = None) -> int:
    from ._cli import Parser
    p = Parser(prog="python -m llama_py gguf-dump", description="print a GGUF file's metadata and tensors")
    p.add_argument("file", help="GGUF file")
    p.add_argument("--json", action="store_true", help="print one JSON document (all values in full)")
    a = p.parse_args(argv)
    info = read_gguf(a.file)
    if info is None:
        print(f"gguf-dump: {a.file}: not a valid GGUF file (see the reason above)", file=sys.stderr)
        return 1
    try:
        if a.json:
            json.dump(to_json(info), sys.stdout, ensure_ascii=False, indent=1)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(format_text(info))
    except BrokenPipeError:  # `gguf-dump model.gguf | head`
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
