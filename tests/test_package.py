"""The installed package: importable from anywhere, library shipped inside it, lazy imports."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import llama_py

REPO_ROOT = Path(__file__).resolve().parents[1]


NOT_INSTALLED = "llama_py is not installed for this Python (run `pip install -e .` or scripts/test.sh):\n"


def _run_elsewhere(code: str, cwd: Path, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("LLAMA_PY_LIB", "PYTHONPATH")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_import_from_another_directory_finds_library_inside_package(tmp_path):
    code = (
        "import llama_py, llama_py.ggml as g\n"
        "from llama_py import _lib\n"
        "from pathlib import Path\n"
        "lib = Path(_lib.load_library()._name).resolve()\n"
        "pkg = Path(llama_py.__file__).resolve().parent\n"
        "print(lib.parent == pkg, g.ggml_abi_version(), llama_py.__version__)\n"
    )
    proc = _run_elsewhere(code, tmp_path)
    assert proc.returncode == 0, NOT_INSTALLED + proc.stderr
    inside, abi, version = proc.stdout.split()
    assert inside == "True", "the library was not loaded from inside the package"
    assert int(abi) == llama_py.ggml.GGML_ABI_VERSION
    assert version == llama_py.__version__


def test_import_is_lazy_and_does_not_load_the_library(tmp_path):
    code = (
        "import sys, llama_py\n"
        "from llama_py import _lib\n"
        "print('llama_py.ggml' in sys.modules, _lib._lib is None)\n"
    )
    proc = _run_elsewhere(code, tmp_path)
    assert proc.returncode == 0, NOT_INSTALLED + proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_missing_library_fails_at_first_call_not_at_import(tmp_path):
    code = (
        "import llama_py.ggml as g\n"
        "try:\n"
        "    g.ggml_tensor_overhead()\n"
        "except g.LibraryNotFound as e:\n"
        "    print('LibraryNotFound', 'nowhere.so' in str(e))\n"
    )
    proc = _run_elsewhere(code, tmp_path, LLAMA_PY_LIB=str(tmp_path / "nowhere.so"))
    assert proc.returncode == 0, NOT_INSTALLED + proc.stderr
    assert proc.stdout.split() == ["LibraryNotFound", "True"]


def test_version_matches_pyproject():
    text = (REPO_ROOT / "pyproject.toml").read_text()
    assert f'version = "{llama_py.__version__}"' in text
