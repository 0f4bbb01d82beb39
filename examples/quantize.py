#!/usr/bin/env python3
"""Port of llama.cpp's examples/quantize: rewrite a GGUF model in another type.

    python examples/quantize.py IN.gguf OUT.gguf Q8_0
"""
import sys

import llama_py.llama_cpp as llama_cpp
from llama_py.quantize import FTYPES


def main():
    if len(sys.argv) != 4 or sys.argv[3].upper() not in FTYPES:
        print(f"usage: {sys.argv[0]} IN.gguf OUT.gguf TYPE   (TYPE: {', '.join(sorted(FTYPES))})", file=sys.stderr)
        return 2
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[sys.argv[3].upper()]
    params.allow_requantize = True
    rc = llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), llama_cpp.ctypes.byref(params))
    if rc != 0:
        print(f"quantization failed (code {rc})", file=sys.stderr)
        return 1
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
