"""Speculative decoding in `Llama.generate` (draft_model=): prompt lookup and a draft model.

Each row of a speculative batch is sampled by the same chain, in the same order, as it would be
decoding one token at a time, and a round ends at the first sample that differs from the guess:
so the output equals decoding without a draft token for token, greedy or not (same seed). The
reference is the same Llama without a draft; the counters say speculation really happened.
"""
from __future__ import annotations

import pytest

from llama_py import Llama
from llama_py.llama_speculative import LlamaPromptLookupDecoding, LlamaSpeculativeModel

# repetitive text: the prompt lookup finds its continuations
PROMPT = ("def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\n"
          "def mul(a, b):\n    return a * b\n\ndef div(a, b):\n")


def _complete(llm, **kw):
    return llm.create_completion(PROMPT, max_tokens=48, **kw)["choices"][0]["text"]


@pytest.fixture(scope="module")
def reference(smollm2_path):
    with Llama(str(smollm2_path), n_ctx=512, verbose=False, seed=7) as llm:
        return {"greedy": _complete(llm, temperature=0.0),
                "warm": _complete(llm, temperature=0.8, seed=1234)}


@pytest.mark.parametrize("mode", ["greedy", "warm"])
def test_prompt_lookup_same_output(smollm2_path, reference, mode):
    draft = LlamaPromptLookupDecoding(max_ngram_size=3, num_pred_tokens=8)
    with Llama(str(smollm2_path), n_ctx=512, verbose=False, seed=7, draft_model=draft) as llm:
        kw = dict(temperature=0.0) if mode == "greedy" else dict(temperature=0.8, seed=1234)
        assert _complete(llm, **kw) == reference[mode]
        assert llm.n_drafted > 0
        if mode == "greedy":
            assert llm.n_accepted > 0       # the repetitive prompt gives accepted guesses
        # the cache holds exactly the tokens: a second call continues correctly
        assert _complete(llm, **kw) == reference[mode]


def test_draft_model_same_output(smollm2_path, reference):
    # the model as its own draft: every greedy guess is accepted
    draft = LlamaSpeculativeModel(str(smollm2_path), n_draft=6, n_ctx=512)
    with Llama(str(smollm2_path), n_ctx=512, verbose=False, seed=7, draft_model=draft) as llm:
        assert _complete(llm, temperature=0.0) == reference["greedy"]
        assert llm.n_accepted > 0.8 * llm.n_drafted > 0
    draft.close()


def test_draft_model_vocabulary_checked(smollm2_path, vocab_dir):
    draft = LlamaSpeculativeModel(str(vocab_dir / "llama-spm.gguf"), n_draft=4, vocab_only=True)
    with pytest.raises(ValueError, match="vocabulary"):
        Llama(str(smollm2_path), n_ctx=256, verbose=False, draft_model=draft)
    draft.close()


def test_stop_inside_a_verified_round(smollm2_path, reference):
    """max_tokens ending inside a round: the output stops there and the cache is trimmed."""
    draft = LlamaPromptLookupDecoding(max_ngram_size=3, num_pred_tokens=8)
    with Llama(str(smollm2_path), n_ctx=512, verbose=False, seed=7, draft_model=draft) as llm:
        short = llm.create_completion(PROMPT, max_tokens=5, temperature=0.0)["choices"][0]["text"]
        assert reference["greedy"].startswith(short)
        assert len(llm.tokenize(PROMPT.encode())) + 5 >= llm.n_tokens
        assert _complete(llm, temperature=0.0) == reference["greedy"]


def test_draft_refused_where_it_cannot_be_honoured(smollm2_path):
    """logits_all keeps every decoded row: rejected guesses would stay in it, so a draft is an error."""
    with pytest.raises(ValueError, match="logits_all"):
        Llama(str(smollm2_path), n_ctx=256, verbose=False, logits_all=True,
              draft_model=LlamaPromptLookupDecoding())
