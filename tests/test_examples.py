"""Runs every examples/*.py as a user would, in a subprocess, and checks it succeeds.

An example that needs the SmolLM2 model says so with the line `# test: needs-model` and
receives `-m <model path>`; extra per-example checks live in CHECKS.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.py"))
TIMEOUT_S = 300


def _check_ggml_matmul(out: str) -> None:
    assert "result equals NumPy" in out
    assert out.count("-> OK") == 2  # once per thread count
    assert "thread(s)" in out


CHECKS = {"ggml_matmul.py": _check_ggml_matmul}


def test_examples_exist():
    assert "ggml_matmul.py" in EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name, lib_path, request, tmp_path):
    script = EXAMPLES_DIR / name
    args = [sys.executable, str(script)]
    if "# test: needs-model" in script.read_text():
        args += ["-m", str(request.getfixturevalue("smollm2_path"))]
    env = dict(os.environ, LLAMA_PY_LIB=str(lib_path), PYTHONUNBUFFERED="1")
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{out[-4000:]}"
    assert proc.stdout.strip(), f"{name} printed nothing"
    if name in CHECKS:
        CHECKS[name](proc.stdout)
