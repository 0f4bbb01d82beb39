"""python -m llama_py quantize IN OUT TYPE: rewrites a GGUF model in another type.

A progress bar follows the library's per-tensor log lines; sizes before and after are printed.
"""
from __future__ import annotations

import os
import re
import sys

import numpy as np

from . import llama_cpp as C

FTYPES = {
    "F32": C.LLAMA_FTYPE_ALL_F32, "F16": C.LLAMA_FTYPE_MOSTLY_F16, "BF16": C.LLAMA_FTYPE_MOSTLY_BF16,
    "Q4_0": C.LLAMA_FTYPE_MOSTLY_Q4_0, "Q4_1": C.LLAMA_FTYPE_MOSTLY_Q4_1, "Q5_0": C.LLAMA_FTYPE_MOSTLY_Q5_0,
    "Q5_1": C.LLAMA_FTYPE_MOSTLY_Q5_1, "Q8_0": C.LLAMA_FTYPE_MOSTLY_Q8_0, "Q2_K": C.LLAMA_FTYPE_MOSTLY_Q2_K,
    "Q2_K_S": C.LLAMA_FTYPE_MOSTLY_Q2_K_S, "Q3_K_S": C.LLAMA_FTYPE_MOSTLY_Q3_K_S,
    "Q3_K_M": C.LLAMA_FTYPE_MOSTLY_Q3_K_M, "Q3_K_L": C.LLAMA_FTYPE_MOSTLY_Q3_K_L,
    "Q4_K_S": C.LLAMA_FTYPE_MOSTLY_Q4_K_S, "Q4_K_M": C.LLAMA_FTYPE_MOSTLY_Q4_K_M,
    "Q5_K_S": C.LLAMA_FTYPE_MOSTLY_Q5_K_S, "Q5_K_M": C.LLAMA_FTYPE_MOSTLY_Q5_K_M,
    "Q6_K": C.LLAMA_FTYPE_MOSTLY_Q6_K, "IQ4_NL": C.LLAMA_FTYPE_MOSTLY_IQ4_NL,
    "IQ4_XS": C.LLAMA_FTYPE_MOSTLY_IQ4_XS, "MXFP4_MOE": C.LLAMA_FTYPE_MOSTLY_MXFP4_MOE,
    "TQ1_0": C.LLAMA_FTYPE_MOSTLY_TQ1_0, "TQ2_0": C.LLAMA_FTYPE_MOSTLY_TQ2_0,
    # these need an importance matrix (llama_model_quantize refuses them without one, naming it)
    "IQ3_M": C.LLAMA_FTYPE_MOSTLY_IQ3_M, "IQ3_S": C.LLAMA_FTYPE_MOSTLY_IQ3_S,
    "IQ3_XS": C.LLAMA_FTYPE_MOSTLY_IQ3_XS, "IQ3_XXS": C.LLAMA_FTYPE_MOSTLY_IQ3_XXS,
    "IQ2_M": C.LLAMA_FTYPE_MOSTLY_IQ2_M, "IQ2_S": C.LLAMA_FTYPE_MOSTLY_IQ2_S,
    "IQ2_XS": C.LLAMA_FTYPE_MOSTLY_IQ2_XS, "IQ2_XXS": C.LLAMA_FTYPE_MOSTLY_IQ2_XXS,
    "IQ1_M": C.LLAMA_FTYPE_MOSTLY_IQ1_M, "IQ1_S": C.LLAMA_FTYPE_MOSTLY_IQ1_S,
}
FTYPES["Q3_K"] = FTYPES["Q3_K_M"]
FTYPES["Q4_K"] = FTYPES["Q4_K_M"]
FTYPES["Q5_K"] = FTYPES["Q5_K_M"]

_LOG_ERROR = 4  # GGML_LOG_LEVEL_ERROR
_PROGRESS = re.compile(rb"^\[\s*(\d+)/\s*(\d+)\]")


def _imatrix_params(path: str):
    """The llama_model_imatrix_data array (NULL-terminated) of an imatrix file, and what keeps it alive."""
    from .imatrix import read
    entries = read(path)
    arr = (C.llama_model_imatrix_data * (len(entries) + 1))()
    keep = []
    for i, (name, vals) in enumerate(sorted(entries.items())):
        v = np.ascontiguousarray(vals, dtype=np.float32)
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{path}: entry {name} has non-finite values")
        nm = name.encode()
        keep += [v, nm]
        arr[i].name = nm
        arr[i].data = v.ctypes.data_as(C.ctypes.POINTER(C.ctypes.c_float))
        arr[i].size = v.size
    return arr, keep


def quantize(inp: str, out: str, ftype: str, nthread: int = 0, pure: bool = False, allow_requantize: bool = False,
             only_copy: bool = False, show_progress: bool = True, imatrix: str | None = None,
             tensor_types: list | None = None) -> None:
    """Quantizes inp into out (imatrix: a GGUF imatrix file; tensor_types: (regex, type name) pairs
    that override the mix for matching tensor names); raises RuntimeError naming the failure."""
    key = ftype.upper()
    if key not in FTYPES:
        raise ValueError(f"unknown type {ftype!r}; one of: {', '.join(sorted(FTYPES))}")
    errors = []

    def on_log(level, text, user_data):
        m = _PROGRESS.match(text or b"")
        if m and show_progress:
            i, n = int(m.group(1)), int(m.group(2))
            bar = "#" * (30 * i // max(n, 1))
            sys.stderr.write(f"\r[{bar:<30}] {i}/{n} tensors")
            sys.stderr.flush()
        elif level == _LOG_ERROR and text:
            errors.append(text.decode("utf-8", "replace").strip())

    cb = C.llama_log_callback(on_log)
    C.llama_log_set(cb, None)
    try:
        p = C.llama_model_quantize_default_params()
        p.ftype = FTYPES[key]
        p.nthread = nthread
        p.pure = pure
        p.allow_requantize = allow_requantize
        p.only_copy = only_copy
        if imatrix:
            im, im_keep = _imatrix_params(imatrix)
            p.imatrix = C.ctypes.cast(im, C.ctypes.POINTER(C.llama_model_imatrix_data))
        if tensor_types:
            ov = (C.llama_model_tensor_override * (len(tensor_types) + 1))()
            for i, (pattern, tname) in enumerate(tensor_types):
                t = getattr(C, f"GGML_TYPE_{tname.upper()}", None)
                if t is None:
                    raise ValueError(f"unknown tensor type {tname!r}")
                ov[i].pattern = pattern.encode()
                ov[i].type = t
            p.tt_overrides = C.ctypes.cast(ov, C.ctypes.POINTER(C.llama_model_tensor_override))
        rc = C.llama_model_quantize(inp.encode(), out.encode(), C.ctypes.byref(p))
    finally:
        quiet = C.llama_log_callback(lambda *a: None)
        C.llama_log_set(quiet, None)
        _keep.append(quiet)
        _keep.append(cb)
    if show_progress:
        sys.stderr.write("\n")
    if rc != 0:
        msg = "; ".join(errors) or f"code {rc}"
        if "allow_requantize" in msg:
            msg += " (pass --allow-requantize to quantize an already quantized model again)"
        raise RuntimeError("quantization failed: " + msg)


_keep = []


def main(argv=None) -> int:
    from ._cli import Parser, int_range
    ap = Parser(prog="python -m llama_py quantize", description="quantize a GGUF model")
    ap.add_argument("input", help="the GGUF model to read")
    ap.add_argument("output", help="the GGUF file to write")
    ap.add_argument("type", help=", ".join(sorted(FTYPES)))
    ap.add_argument("-t", "--threads", type=int_range(0), default=0, help="threads; 0: the physical cores (default)")
    ap.add_argument("--pure", action="store_true", help="every tensor to TYPE, no mixes")
    ap.add_argument("--allow-requantize", action="store_true",
                    help="accept an already quantized input (quality suffers; quantize from F16/F32 when you can)")
    ap.add_argument("--only-copy", action="store_true", help="copy the tensors as they are (a rewrite of the file)")
    ap.add_argument("--imatrix", metavar="FILE", help="importance matrix (python -m llama_py imatrix)")
    ap.add_argument("--tensor-type", action="append", default=[], metavar="REGEX=TYPE",
                    help="tensors whose name matches REGEX (POSIX extended) get TYPE, e.g. ffn_down=q6_k")
    a = ap.parse_args(argv)
    if not os.path.isfile(a.input):
        print(f"error: {a.input}: no such file", file=sys.stderr)
        return 1
    size_in = os.path.getsize(a.input)
    try:
        tt = []
        for spec in a.tensor_type:
            pattern, sep, tname = spec.rpartition("=")
            if not sep or not pattern:
                raise ValueError(f"--tensor-type {spec!r}: expected REGEX=TYPE")
            tt.append((pattern, tname))
        quantize(a.input, a.output, a.type, a.threads, a.pure, a.allow_requantize, a.only_copy, imatrix=a.imatrix,
                 tensor_types=tt)
    except (RuntimeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    size_out = os.path.getsize(a.output)
    print(f"{a.input}: {size_in / 2**20:.2f} MiB -> {a.output}: {size_out / 2**20:.2f} MiB "
          f"({a.type.upper()})")
    return 0
