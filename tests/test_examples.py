"""Runs every examples/*.py as a user would, in a subprocess, and checks it succeeds.

RUNS says how each example is invoked: `needs_model` examples get the SmolLM2 test model
(skipped with the fixture's reason when it cannot be had) through `{model}` in their
arguments and through $LLAMA_PY_MODEL; `{tmp}` is a scratch folder. An example missing from
RUNS runs without arguments (with the model in $LLAMA_PY_MODEL when its source mentions
model_path or carries the line `# test: needs-model`). Files starting with `_` are helpers.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
TIMEOUT_S = 300


def _check_ggml_matmul(out: str, tmp: Path) -> None:
    assert "result equals NumPy" in out
    assert len(re.findall(r"->\s+OK", out)) == 2  # once per thread count


def _check_quantize(out: str, tmp: Path) -> None:
    q = tmp / "out-q8_0.gguf"
    assert q.is_file() and q.read_bytes()[:4] == b"GGUF"


class Run:
    def __init__(self, args: Optional[List[str]] = None, needs_model: bool = False, stdin: str = "",
                 check: Optional[Callable[[str, Path], None]] = None):
        self.args, self.needs_model, self.stdin, self.check = args or [], needs_model, stdin, check


RUNS: Dict[str, Run] = {
    "ggml_matmul.py": Run(check=_check_ggml_matmul),
    "simple.py": Run(["-m", "{model}", "-n", "16"], needs_model=True),
    "simple_chat.py": Run(["-m", "{model}", "-n", "24"], needs_model=True,
                          stdin="What is the capital of France?\n"),
    "batched.py": Run(["-m", "{model}", "-n", "12"], needs_model=True),
    "embedding.py": Run(["-m", "{model}"], needs_model=True),
    "save_load_state.py": Run(["-m", "{model}", "-n", "8"], needs_model=True),
    "quantize.py": Run(["{model}", "{tmp}/out-q8_0.gguf", "Q8_0"], needs_model=True, check=_check_quantize),
    "seed_example.py": Run(["-m", "{model}"], needs_model=True),
}


def _default_run(script: Path) -> Run:
    src = script.read_text()
    return Run(needs_model="# test: needs-model" in src or "model_path(" in src)


def test_examples_exist():
    assert "ggml_matmul.py" in EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name, lib_path, request, tmp_path):
    script = EXAMPLES_DIR / name
    run = RUNS.get(name) or _default_run(script)
    env = dict(os.environ, LLAMA_PY_LIB=str(lib_path), PYTHONUNBUFFERED="1")
    model = ""
    if run.needs_model:
        model = str(request.getfixturevalue("smollm2_path"))
        env["LLAMA_PY_MODEL"] = model
    args = [a.format(model=model, tmp=tmp_path) for a in run.args]
    proc = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, env=env, input=run.stdin,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{name} {' '.join(args)} exited {proc.returncode}:\n{out[-4000:]}"
    assert proc.stdout.strip(), f"{name} printed nothing"
    if run.check:
        run.check(proc.stdout, tmp_path)
