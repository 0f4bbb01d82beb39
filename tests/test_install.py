"""What `pip install .` decides and declares, checked without building: CMake's CUDA decision
(cmake/cuda.cmake) by configuring alone (seconds) under each condition, the declared
dependencies from pyproject.toml, and the chat path's warning when jinja2 is missing.

Oracles: CMake's own cache (LLAMA_CUDA_ENABLED) and messages, Python's tomllib reading the
packaging file, the warnings module.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _cmake() -> str:
    try:
        import cmake
        exe = os.path.join(cmake.CMAKE_BIN_DIR, "cmake")
        if os.path.isfile(exe):
            return exe
    except (ImportError, AttributeError):
        pass
    exe = shutil.which("cmake")
    if exe is None:
        pytest.skip("no cmake")
    return exe


def configure(tmp_path, *args, path_env=None):
    """Runs CMake's configure step only; returns (exit code, output, LLAMA_CUDA_ENABLED)."""
    build = tmp_path / "b"
    env = dict(os.environ)
    env.pop("CUDACXX", None)
    if path_env is not None:
        env["PATH"] = path_env
    p = subprocess.run([_cmake(), "-S", str(REPO), "-B", str(build), *args], capture_output=True, text=True,
                       env=env, timeout=300)
    cache = build / "CMakeCache.txt"
    m = re.search(r"^LLAMA_CUDA_ENABLED:INTERNAL=(\w+)$", cache.read_text(), re.M) if cache.is_file() else None
    return p.returncode, p.stdout + p.stderr, (m.group(1) if m else None)


def _no_nvcc_path(tmp_path) -> str:
    """A PATH with the C compiler and the basics but no nvcc (a folder of links)."""
    d = tmp_path / "bin"
    d.mkdir()
    for tool in ("cc", "gcc", "c++", "g++", "ld", "as", "make", "ar", "ranlib", "sh", "uname"):
        found = shutil.which(tool)
        if found:
            (d / tool).symlink_to(found)
    return str(d)


def test_auto_without_a_driver_builds_for_the_cpu_even_with_nvcc(tmp_path):
    """The first-hour case: nvcc on PATH (or not), no NVIDIA driver: no CUDA build."""
    rc, out, enabled = configure(tmp_path, "-DLLAMA_CUDA_DRIVER_PROBES=" + str(tmp_path / "no-such-driver"))
    assert rc == 0, out
    assert enabled == "OFF"
    assert "CUDA backend: off, no NVIDIA driver here; building for the CPU only" in out
    assert "-DLLAMA_CUDA=ON builds it anyway" in out
    assert "Looking for a CUDA compiler" not in out  # the toolkit is not even probed


def test_auto_with_a_driver_and_no_compiler_says_so(tmp_path):
    driver = tmp_path / "version"
    driver.write_text("NVRM version: (a stand-in)")
    rc, out, enabled = configure(tmp_path, f"-DLLAMA_CUDA_DRIVER_PROBES={driver}", path_env=_no_nvcc_path(tmp_path))
    if "Looking for a CUDA compiler - NOTFOUND" not in out:
        pytest.skip("CMake finds a CUDA compiler outside PATH here")
    assert rc == 0, out
    assert enabled == "OFF"
    assert f"an NVIDIA driver is here ({driver}) but no CUDA compiler" in out


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_auto_with_a_driver_and_nvcc_builds_cuda(tmp_path):
    driver = tmp_path / "version"
    driver.write_text("NVRM version: (a stand-in)")
    rc, out, enabled = configure(tmp_path, f"-DLLAMA_CUDA_DRIVER_PROBES={driver}", "-DCMAKE_CUDA_ARCHITECTURES=80-real")
    assert rc == 0, out
    assert enabled == "ON", out
    assert "CUDA backend: ON (nvcc" in out and "architectures 80-real" in out


def test_on_without_a_compiler_fails_and_off_skips(tmp_path):
    rc, out, _ = configure(tmp_path / "on", "-DLLAMA_CUDA=ON", path_env=_no_nvcc_path(tmp_path))
    if "Looking for a CUDA compiler - NOTFOUND" not in out:
        pytest.skip("CMake finds a CUDA compiler outside PATH here")
    assert rc != 0 and "LLAMA_CUDA=ON but no CUDA compiler was found" in out
    driver = tmp_path / "version"
    driver.write_text("x")
    rc, out, enabled = configure(tmp_path / "off", "-DLLAMA_CUDA=OFF", f"-DLLAMA_CUDA_DRIVER_PROBES={driver}")
    assert rc == 0 and enabled == "OFF" and "CUDA backend: off (LLAMA_CUDA=OFF)" in out


def test_the_chat_path_dependency_is_declared():
    tomllib = pytest.importorskip("tomllib")
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    deps = {re.split(r"[<>=!~; \[]", d, 1)[0].lower() for d in meta["project"]["dependencies"]}
    assert {"numpy", "jinja2"} <= deps


def test_a_missing_jinja2_is_never_silent(smollm2_path, lib_path):
    """With jinja2 unimportable, the chat path warns that the model's template is replaced."""
    code = (
        "import sys\n"
        "sys.modules['jinja2'] = None\n"  # import jinja2 now raises ImportError
        "from llama_py.llama import Llama\n"
        f"llm = Llama({str(smollm2_path)!r}, n_ctx=256, verbose=False)\n"
        "llm.create_chat_completion([{'role': 'user', 'content': 'Hi'}], max_tokens=1)\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), LLAMA_PY_LIB=str(lib_path))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "jinja2 is not installed" in p.stderr and "pip install jinja2" in p.stderr, p.stderr
