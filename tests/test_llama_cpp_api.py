"""llama_py.llama_cpp as a complete, checked mirror of llama.h.

- every function declared in include/llama.h is bound in llama_cpp, exported by the
  library, and bound with the header's parameter count;
- every function of llama-cpp-python 0.3.36's low-level module (names listed in
  tests/data/, taken from that package) exists here;
- every function accepts NULL / zero arguments without crashing the process (run in a child);
- the import-time layout check fails loudly when a field is reordered.
"""
from __future__ import annotations

import ctypes
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "include" / "llama.h"
PEER_LIST = ROOT / "tests" / "data" / "llama-cpp-python-0.3.36-functions.txt"


def header_functions():
    text = HEADER.read_text()
    text = re.sub(r"//[^\n]*", "", text)
    out = {}
    for m in re.finditer(r"LLAMA_API\s+[^;(]*?\b(llama_\w+)\s*\(([^)]*)\)\s*;", text, re.S):
        name, params = m.group(1), m.group(2).strip()
        n = 0 if params in ("", "void") else params.count(",") + 1
        out[name] = n
    return out


def test_header_parses():
    funcs = header_functions()
    assert len(funcs) > 240
    assert funcs["llama_decode"] == 2
    assert funcs["llama_tokenize"] == 7


def test_every_header_function_is_bound(lib_path):
    import llama_py.llama_cpp as L
    lib = ctypes.CDLL(str(lib_path))
    missing, unexported, arity = [], [], []
    for name, n in header_functions().items():
        f = getattr(L, name, None)
        if f is None:
            missing.append(name)
            continue
        if not hasattr(lib, name):
            unexported.append(name)
        argtypes = getattr(f, "argtypes", None)
        if argtypes is not None and len(argtypes) != n:
            arity.append(f"{name}: header {n}, bound {len(argtypes)}")
    assert not missing, f"not bound in llama_cpp: {missing}"
    assert not unexported, f"declared in llama.h but not exported: {unexported}"
    assert not arity, "parameter counts differ: " + "; ".join(arity)


def test_peer_module_functions_exist():
    import llama_py.llama_cpp as L
    names = [n.strip() for n in PEER_LIST.read_text().split() if n.strip()]
    assert len(names) == 253
    missing = [n for n in names if not callable(getattr(L, n, None))]
    assert not missing, f"functions of llama-cpp-python's low-level module missing here: {missing}"


def test_common_helpers_exist():
    import llama_py.llama_cpp as L
    for n in ("llama_batch_add", "llama_batch_clear", "llama_sampler_chain_add_top_k", "llama_sampler_chain_add_top_p",
              "llama_sampler_chain_add_min_p", "llama_sampler_chain_add_temp", "llama_sampler_chain_add_dist",
              "llama_sampler_chain_add_greedy", "llama_load_model_from_file", "llama_new_context_with_model",
              "llama_free_model", "llama_n_vocab", "llama_n_ctx_train", "llama_n_embd", "llama_token_bos",
              "llama_token_eos", "llama_token_nl", "llama_token_is_eog"):
        assert callable(getattr(L, n, None)), n
    assert L.LLAMA_DEFAULT_SEED == 0xFFFFFFFF and L.LLAMA_TOKEN_NULL == -1


_NULL_CALLS = r"""
import ctypes, sys, warnings
warnings.simplefilter("ignore")
import llama_py.llama_cpp as L
skip = set(sys.argv[1:])
done = 0
for name in sorted(n for n in dir(L) if n.startswith("llama_")):
    f = getattr(L, name)
    argtypes = getattr(f, "argtypes", None)
    if not hasattr(f, "c_name") or not isinstance(argtypes, (list, tuple)) or name in skip:
        continue
    args = []
    for t in argtypes:
        if isinstance(t, type) and issubclass(t, (ctypes.Structure, ctypes._CFuncPtr)):
            args.append(t())  # zeroed struct / NULL function pointer
        elif t in (ctypes.c_float, ctypes.c_double):
            args.append(0.0)
        elif t is ctypes.c_bool:
            args.append(False)
        elif t in (ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t,
                   ctypes.c_int8, ctypes.c_uint8):
            args.append(0)
        else:
            args.append(None)
    print(name, flush=True)
    f(*args)
    done += 1
print("DONE", done)
"""

# Functions whose C contract takes ownership of or writes through caller memory that a
# NULL/zero call cannot describe (none today: every function must survive NULL).
_NOT_NULL_SAFE = []


def test_every_function_survives_null_arguments(lib_path, tmp_path):
    env = dict(__import__("os").environ, LLAMA_PY_LIB=str(Path(lib_path).resolve()), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _NULL_CALLS] + _NOT_NULL_SAFE, capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0 and last.startswith("DONE"), \
        f"crashed (rc {proc.returncode}) in {last!r}\n{proc.stderr[-2000:]}"


def test_layout_check_catches_reordered_fields():
    import llama_py.llama_cpp as L
    fields = list(L.llama_context_params._fields_)
    fields[0], fields[1] = fields[1], fields[0]
    Broken = type("llama_context_params", (ctypes.Structure,), {"_fields_": fields})
    with pytest.raises(L.LayoutMismatch, match=r"llama_context_params\.n_batch: offset 0 in Python, 4 in the library"):
        L.check_struct_layout(Broken, "llama_context_params")
    # and the real ones pass
    L.check_abi()


def test_layout_check_catches_size_change():
    import llama_py.llama_cpp as L
    Bigger = type("llama_batch", (ctypes.Structure,), {"_fields_": list(L.llama_batch._fields_) + [("extra", ctypes.c_int)]})
    with pytest.raises(L.LayoutMismatch, match="llama_batch: size"):
        L.check_struct_layout(Bigger, "llama_batch")
