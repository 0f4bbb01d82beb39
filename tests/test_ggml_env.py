"""The environment switches: read in one file (ggml/src/ggml-env.c), documented in README,
reported by ggml_env_summary() and llama_print_system_info(), and taking effect."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWITCHES = ["GGML_CPU_VARIANT", "GGML_CPU_GEMM", "GGML_FUSE", "GGML_THREADS_ADAPT", "GGML_PROFILE",
            "GGML_TEST_DEVICE", "GGML_CUDA_GRAPHS"]


def _c_sources():
    for d in ("ggml", "src", "include"):
        yield from (p for p in (ROOT / d).rglob("*") if p.suffix in (".c", ".h", ".cu", ".m"))


def test_getenv_is_called_only_in_ggml_env_c():
    callers = sorted(str(p.relative_to(ROOT)) for p in _c_sources() if re.search(r"\bgetenv\s*\(", p.read_text()))
    assert callers == ["ggml/src/ggml-env.c"], callers
    read = set(re.findall(r'getenv\("(\w+)"\)', (ROOT / "ggml/src/ggml-env.c").read_text()))
    assert read == set(SWITCHES)


def test_readme_table_lists_every_switch():
    rows = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `")]
    for name in SWITCHES:
        assert any(row.startswith(f"| `{name}`") for row in rows), f"README's switch table lacks {name}"


def _run(code: str, **env_extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env.update(env_extra)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


SUMMARY = "import llama_py.ggml as g; print(g.ggml_env_summary().decode())"


def test_defaults_reported(lib_path):
    got = dict(kv.split("=") for kv in _run(SUMMARY).split())
    assert got == {"GGML_CPU_VARIANT": "auto", "GGML_CPU_GEMM": "1", "GGML_FUSE": "1",
                   "GGML_THREADS_ADAPT": "1", "GGML_PROFILE": "0", "GGML_TEST_DEVICE": "0", "GGML_CUDA_GRAPHS": "1"}


def test_set_values_reported_and_in_system_info(lib_path):
    code = ("import llama_py.ggml as g, llama_py.llama_cpp as L\n"
            "print(g.ggml_env_summary().decode()); print(L.llama_print_system_info().decode())\n"
            "print(g.ggml_cpu_variant().decode())")
    summary, info, variant = _run(code, GGML_CPU_VARIANT="portable", GGML_CPU_GEMM="0", GGML_FUSE="0",
                                  GGML_THREADS_ADAPT="0", GGML_TEST_DEVICE="1", GGML_CUDA_GRAPHS="0").splitlines()
    got = dict(kv.split("=") for kv in summary.split())
    assert got == {"GGML_CPU_VARIANT": "portable", "GGML_CPU_GEMM": "0", "GGML_FUSE": "0",
                   "GGML_THREADS_ADAPT": "0", "GGML_PROFILE": "0", "GGML_TEST_DEVICE": "1", "GGML_CUDA_GRAPHS": "0"}
    assert summary in info
    assert variant == "portable"  # and it took effect


def test_parsing_rules(lib_path):
    # "0" turns a default-on switch off; anything else (even empty) leaves it on; GGML_CPU_GEMM
    # looks at the first character only; GGML_PROFILE needs a value other than "" and "0"
    got = dict(kv.split("=") for kv in _run(SUMMARY, GGML_FUSE="", GGML_THREADS_ADAPT="00",
                                            GGML_CPU_GEMM="0x", GGML_PROFILE="").split())
    assert (got["GGML_FUSE"], got["GGML_THREADS_ADAPT"], got["GGML_CPU_GEMM"], got["GGML_PROFILE"]) == ("1", "1", "0", "0")


def test_profile_prints_at_exit(lib_path):
    code = ("import numpy as np, llama_py.ggml as g\n"
            "c = g.ggml_init(g.ggml_init_params(mem_size=1 << 20, mem_buffer=None, no_alloc=False))\n"
            "a = g.ggml_new_tensor_1d(c, g.GGML_TYPE_F32, 8)\n"
            "gf = g.ggml_new_graph(c); g.ggml_build_forward_expand(gf, g.ggml_add(c, a, a))\n"
            "assert g.ggml_graph_compute_with_ctx(c, gf, 1) == 0\n")
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env["PYTHONPATH"] = str(ROOT)
    on = subprocess.run([sys.executable, "-c", code], env=dict(env, GGML_PROFILE="1"), capture_output=True, text=True,
                        timeout=120)
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    assert "GGML_PROFILE:" in on.stderr and "GGML_PROFILE:" not in off.stderr
