"""Every public name of llama-cpp-python 0.3.36's `llama_cpp` package, against llama_py.

The reference is llama-cpp-python's own source: its sdist is fetched at test time (pip download,
cached in ~/.cache/llama_py; or $LLAMA_PY_LCP_SDIST) and parsed with `ast` (never imported, never
copied). For each module of the package, each public top-level function / class / constant must
exist in llama_py's counterpart (install_as_llama_cpp's mapping), and each function's and public
method's parameters must match: names, kinds and defaults for keyword-usable parameters, the
count for positional-only ones; ours may add keyword-only parameters with defaults at the end. Known gaps are listed below and asserted to stay exactly known.
`python tests/test_llama_cpp_python_surface.py` prints the table (present / same signature / tested).
"""
from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

VERSION = "0.3.36"
TESTS = Path(__file__).resolve().parent
# llama-cpp-python module -> llama_py module
MODULES = {"llama_cpp": "llama_py.llama_cpp", "llama": "llama_py.llama", "llama_types": "llama_py.llama_types",
           "llama_cache": "llama_py.llama_cache", "llama_tokenizer": "llama_py.llama_tokenizer",
           "llama_speculative": "llama_py.llama_speculative", "llama_chat_format": "llama_py.llama_chat_format"}

# Known, deliberate gaps: multimodal (llava / mtmd) handlers, the functionary and chatml-function-calling
# prompt formats of their own, and the other named formats llama_py lays out only through the
# engine's built-in templates (llama_chat_format.builtin_formatter names the supported ones).
KNOWN_MISSING = {
    # low level (llama_py.llama_cpp, another component's): what the engine does not have; its
    # constants are listed in the table but not asserted here
    "llama_cpp": {"llama_opt_param_filter"},
    "llama_chat_format": {
        "CHATML_CHAT_TEMPLATE", "CHATML_BOS_TOKEN", "CHATML_EOS_TOKEN", "MISTRAL_INSTRUCT_CHAT_TEMPLATE",
        "MISTRAL_INSTRUCT_BOS_TOKEN", "MISTRAL_INSTRUCT_EOS_TOKEN", "MIXTRAL_INSTRUCT_CHAT_TEMPLATE",
        "LLAMA3_INSTRUCT_CHAT_TEMPLATE", "format_alpaca",
        "format", "format_oasst_llama", "format_baichuan2", "format_baichuan", "format_openbuddy",
        "format_redpajama_incite", "format_snoozy", "format_phind", "format_intel", "format_open_orca",
        "format_mistrallite", "format_pygmalion",
        "format_chatglm3", "format_openchat", "format_saiga", "functionary_chat_handler",
        "functionary_v1_v2_chat_handler", "Llava15ChatHandler", "MTMDChatHandler", "Gemma4ChatHandler",
        "ObsidianChatHandler", "MoondreamChatHandler", "Llava16ChatHandler", "NanoLlavaChatHandler",
        "Llama3VisionAlphaChatHandler", "Llama3VisionAlpha", "MiniCPMv26ChatHandler", "Qwen25VLChatHandler",
        "chatml_function_calling",
    },
}


def _sdist() -> Path:
    env = os.environ.get("LLAMA_PY_LCP_SDIST")
    if env:
        return Path(env)
    cache = Path(os.environ.get("LLAMA_PY_CACHE", Path.home() / ".cache" / "llama_py"))
    path = cache / f"llama_cpp_python-{VERSION}.tar.gz"
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-python",
                        f"llama-cpp-python=={VERSION}", "-d", str(cache)], check=True, capture_output=True,
                       timeout=900)
    return path


def _reference_sources():
    try:
        path = _sdist()
        with tarfile.open(path) as tar:
            out = {}
            for mod in MODULES:
                f = tar.extractfile(f"llama_cpp_python-{VERSION}/llama_cpp/{mod}.py")
                out[mod] = f.read().decode("utf-8")
            return out
    except Exception as e:  # offline, no pip, ...
        return e


def _public(tree: ast.Module):
    """name -> ast node of each public top-level definition (the last one wins, as at runtime)."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
    return {k: v for k, v in out.items() if not k.startswith("_")}


def _literal(node):
    try:
        return ("value", ast.literal_eval(node))
    except Exception:
        return ("expr", ast.unparse(node))


def _ref_params(fn: ast.FunctionDef):
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    params = []
    for i, p in enumerate(pos):
        kind = "posonly" if i < len(a.posonlyargs) else "pos"
        params.append((p.arg, kind, defaults[i]))
    if a.vararg:
        params.append((a.vararg.arg, "varargs", None))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append((p.arg, "kwonly", d))
    if a.kwarg:
        params.append((a.kwarg.arg, "varkw", None))
    return params


_KIND = {inspect.Parameter.POSITIONAL_ONLY: "posonly", inspect.Parameter.POSITIONAL_OR_KEYWORD: "pos",
         inspect.Parameter.VAR_POSITIONAL: "varargs", inspect.Parameter.KEYWORD_ONLY: "kwonly",
         inspect.Parameter.VAR_KEYWORD: "varkw"}


def _compare(ref: ast.FunctionDef, ours, constants) -> str:
    """'' when the signatures agree, else what differs."""
    try:
        sig = inspect.signature(ours)
    except (TypeError, ValueError):
        return "no signature"
    rp = _ref_params(ref)
    if rp and rp[0][0] in ("self", "cls") and rp[0][1] != "posonly":
        rp = rp[1:]
    op = [(n, _KIND[p.kind], p.default) for n, p in sig.parameters.items()]
    if op and op[0][0] in ("self", "cls") and op[0][1] != "posonly" and (not rp or rp[0][0] != op[0][0]):
        op = op[1:]
    # our extensions: keyword-only parameters with defaults after all of the reference's (no call
    # written for llama-cpp-python can reach them, e.g. create_embedding's dimensions)
    while len(op) > len(rp) and op[-1][1] == "kwonly" and op[-1][2] is not inspect.Parameter.empty \
            and not any(k == "varkw" for _, k, _ in rp):
        op = op[:-1]
    if [k for _, k, _ in rp] != [k for _, k, _ in op]:
        return f"kinds {[k for _, k, _ in rp]} vs {[k for _, k, _ in op]}"
    for (rn, kind, rd), (on, _, od) in zip(rp, op):
        if kind == "posonly":
            continue  # only the count matters
        if rn != on:
            return f"parameter {rn!r} is {on!r} here"
        if kind in ("varargs", "varkw"):
            continue
        if (rd is None) != (od is inspect.Parameter.empty):
            return f"{rn}: default presence differs"
        if rd is not None:
            how, val = _literal(rd)
            if how == "expr":
                val = constants.get(val.split(".")[-1], val)
                if isinstance(val, str) and val.startswith("llama_cpp."):
                    continue
            if how == "value" or not isinstance(val, str):
                if val != od and not (val == 2 << 30 and od == 2 << 30):
                    return f"{rn}: default {val!r} vs {od!r}"
    return ""


def surface_table():
    import importlib
    srcs = _reference_sources()
    if isinstance(srcs, Exception):
        return srcs
    low = importlib.import_module("llama_py.llama_cpp")
    constants = {k: v for k, v in vars(low).items() if k.isupper()}
    test_text = "\n".join(p.read_text(errors="ignore") for p in TESTS.glob("test_*.py")
                          if p.name != Path(__file__).name)
    rows = []
    for mod, ours_name in MODULES.items():
        ours = importlib.import_module(ours_name)
        for name, node in _public(ast.parse(srcs[mod])).items():
            obj = getattr(ours, name, None)
            present = obj is not None or name in vars(ours)
            same = ""
            if present and isinstance(node, ast.FunctionDef):
                same = _compare(node, obj, constants) or "same"
            elif present and isinstance(node, ast.ClassDef) and inspect.isclass(obj):
                diffs = []
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef) and (not sub.name.startswith("_") or sub.name in (
                            "__init__", "__call__", "__getitem__", "__setitem__", "__contains__")):
                        meth = getattr(obj, sub.name, None)
                        if meth is None:
                            diffs.append(f"{sub.name} missing")
                            continue
                        if any(ast.unparse(d) == "property" or ast.unparse(d).endswith(".setter")
                               for d in sub.decorator_list):
                            if not isinstance(inspect.getattr_static(obj, sub.name), property):
                                diffs.append(f"{sub.name}: not a property")
                            continue
                        if sub.name == "__init__" and "__init__" not in vars(obj) and not any(
                                "__init__" in vars(b) for b in obj.__mro__[1:-1]):
                            continue  # TypedDict / Protocol constructors
                        d = _compare(sub, meth, constants)
                        if d:
                            diffs.append(f"{sub.name}: {d}")
                same = "; ".join(diffs) or "same"
            elif present:
                same = "n/a"
            tested = bool(re.search(r"\b" + re.escape(name) + r"\b", test_text))
            rows.append((mod, name, present, same, tested))
    return rows


@pytest.fixture(scope="module")
def table(lib_path):
    rows = surface_table()
    if isinstance(rows, Exception):
        pytest.skip(f"llama-cpp-python {VERSION} sdist unavailable (pip download failed: {rows})")
    return rows


def test_every_public_name_is_present(table):
    missing = {}
    for mod, name, present, _, _ in table:
        if not present:
            missing.setdefault(mod, set()).add(name)
    for mod in MODULES:
        got = missing.get(mod, set())
        if mod == "llama_cpp":
            got = {n for n in got if not n.isupper()}
        assert got == KNOWN_MISSING.get(mod, set()), mod


# low-level functions whose Python wrapper (accepting a model where a vocab is meant, ...) hides
# the parameter list behind *args: the calls are the same, inspect cannot see it
LOW_LEVEL_WRAPPED = {"llama_model_load_from_file", "llama_model_load_from_splits", "llama_tokenize",
                     "llama_token_to_piece", "llama_detokenize", "llama_sampler_init_dry"}


def test_signatures_match(table):
    bad = [(mod, name, same) for mod, name, present, same, _ in table if present and same not in ("same", "n/a")
           and not (mod == "llama_cpp" and name in LOW_LEVEL_WRAPPED)]
    assert bad == []


def test_high_level_names_are_exercised(table):
    untested = [name for mod, name, present, _, tested in table if mod == "llama" and present and not tested]
    assert untested == [], untested


if __name__ == "__main__":
    rows = surface_table()
    if isinstance(rows, Exception):
        sys.exit(f"sdist unavailable: {rows}")
    for mod in MODULES:
        sub = [r for r in rows if r[0] == mod]
        print(f"{mod}: {len(sub)} names, present {sum(r[2] for r in sub)}, "
              f"same signature {sum(r[3] in ('same', 'n/a') for r in sub)}, tested {sum(r[4] for r in sub)}")
    for r in rows:
        if not r[2] or r[3] not in ("same", "n/a"):
            print("  ", r)
