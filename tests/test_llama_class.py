"""The high-level `Llama` class on SmolLM2-135M-Instruct: construction, tokens, generation,
completions (greedy, seeds, stop strings, UTF-8-safe streaming, usage), chat, embeddings,
lifetime, and chat-template metadata that must never be executed.

Oracles: NumPy (mean pooling of the per-token embeddings), jinja2's sandbox rendering of the
model's own chat template, the `gguf` package (to write a model with a hostile template), and
properties that any correct text stream must have (checked with hypothesis).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import llama_py.llama_cpp as C
from llama_py import ggml
from llama_py._lib import LlamaError
from llama_py.llama import Llama, _TextStream

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

PROMPT = "The capital of France is"
EMOJI_PROMPT = "Emojis: 😀 😃 😄 😁 😆 😅 😂 🤣"


@pytest.fixture(scope="module")
def llm(smollm2_path, lib_path):
    with Llama(str(smollm2_path), n_ctx=512, verbose=False) as m:
        yield m


@pytest.fixture(scope="module")
def greedy_tokens(llm):
    """The first 24 greedy tokens after PROMPT (the reference every completion test cuts from)."""
    gen = fresh(llm).generate(llm.tokenize(PROMPT), temp=0)
    toks = [next(gen) for _ in range(24)]
    gen.close()
    return toks


def fresh(llm):
    """Empties the cache. Texts compared across runs come from an empty cache each time: decoding
    the last prompt token alone (what prompt-cache reuse does) rounds differently from decoding it
    in the prompt batch, which can flip a greedy choice between near-tied tokens."""
    llm.reset()
    return llm


def _is_partial_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


# ---- construction ----

def test_threads_default_to_physical_cores(smollm2_path, lib_path):
    cores = ggml.ggml_cpu_n_physical_cores()
    assert 1 <= cores <= (os.cpu_count() or cores)
    with Llama(str(smollm2_path), n_ctx=64) as m:
        assert m.n_threads == cores and m.n_threads_batch == cores
        assert C.llama_n_threads(m._ctx) == cores and C.llama_n_threads_batch(m._ctx) == cores
    with Llama(str(smollm2_path), n_ctx=64, n_threads=cores + 7, n_threads_batch=1000) as m:
        assert m.n_threads == cores and m.n_threads_batch == cores   # never more than the cores
        assert C.llama_n_threads(m._ctx) == cores
    with Llama(str(smollm2_path), n_ctx=64, n_threads=1) as m:
        assert m.n_threads == 1 and C.llama_n_threads(m._ctx) == 1


def test_quiet_unless_verbose(smollm2_path, lib_path):
    code = ("import sys\nfrom llama_py import Llama\n"
            "with Llama(sys.argv[1], n_ctx=64, verbose=sys.argv[2] == '1') as m:\n"
            "    m.create_completion('Hi', max_tokens=2, temperature=0)\n")
    env = dict(os.environ, LLAMA_PY_LIB=str(lib_path))
    quiet = subprocess.run([sys.executable, "-c", code, str(smollm2_path), "0"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""
    loud = subprocess.run([sys.executable, "-c", code, str(smollm2_path), "1"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert loud.returncode == 0 and "llama" in loud.stderr


def test_construction_errors(tmp_path, lib_path):
    with pytest.raises(FileNotFoundError):
        Llama(str(tmp_path / "missing.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\xff" * 60)
    with pytest.raises(LlamaError):
        Llama(str(bad))


def test_properties(llm):
    assert llm.n_ctx() == 512
    assert llm.n_vocab() == 49152
    assert llm.n_embd() == 576
    assert llm.detokenize([llm.token_eos()], special=True) == b"<|im_end|>"
    meta = llm.metadata
    assert meta["general.architecture"] == "llama"
    assert meta["tokenizer.chat_template"].startswith("{% for message in messages %}")


# ---- tokens ----

@pytest.mark.parametrize("text", [PROMPT, " leading space", "multi\nline\ttext  ", "Ünïcödé ünd 中文 😀!",
                                  "<|im_start|>user"])
def test_tokenize_detokenize_round_trip(llm, text):
    toks = llm.tokenize(text, add_bos=False)
    assert toks and all(0 <= t < llm.n_vocab() for t in toks)
    assert llm.detokenize(toks) == text.encode("utf-8")
    assert b"".join(llm.token_to_piece(t) for t in toks) == text.encode("utf-8")
    assert llm.tokenize(text.encode("utf-8"), add_bos=False) == toks  # bytes in, same tokens


def test_tokenize_special(llm):
    as_text = llm.tokenize("<|im_start|>", add_bos=False, special=False)
    as_special = llm.tokenize("<|im_start|>", add_bos=False, special=True)
    assert len(as_special) == 1 and len(as_text) > 1
    assert llm.detokenize(as_special, special=True) == b"<|im_start|>"
    assert llm.detokenize(as_special, special=False) == b""  # control tokens render only when asked


# ---- generation ----

def test_generate_greedy(llm, greedy_tokens):
    text = llm.detokenize(greedy_tokens).decode("utf-8", "replace")
    assert "Paris" in text.split(".")[0], text
    # again, now reusing the cached prompt (only its last token is decoded again): the same tokens
    # (this prompt's greedy choices are far from ties, so the rounding of that path cannot flip one)
    gen = llm.generate(llm.tokenize(PROMPT), temp=0)
    again = [next(gen) for _ in range(8)]
    gen.close()
    assert again == greedy_tokens[:8]
    # and from an empty cache
    llm.reset()
    gen = llm.generate(llm.tokenize(PROMPT), temp=0)
    assert [next(gen) for _ in range(8)] == greedy_tokens[:8]
    gen.close()


def test_completion_greedy_is_deterministic(llm, greedy_tokens):
    a = fresh(llm).create_completion(PROMPT, max_tokens=12, temperature=0)
    b = fresh(llm).create_completion(PROMPT, max_tokens=12, temperature=0)
    assert a["choices"][0]["text"] == b["choices"][0]["text"]
    assert a["choices"][0]["text"].encode() == llm.detokenize(greedy_tokens[:12])
    assert a["object"] == "text_completion" and a["id"].startswith("cmpl-")
    assert a["choices"][0]["finish_reason"] == "length"
    n_prompt = len(llm.tokenize(PROMPT, special=True))
    assert a["usage"] == {"prompt_tokens": n_prompt, "completion_tokens": 12, "total_tokens": n_prompt + 12}
    assert fresh(llm)(PROMPT, max_tokens=3, temperature=0)["usage"]["completion_tokens"] == 3


def test_completion_echo_and_token_prompt(llm, greedy_tokens):
    out = fresh(llm).create_completion(PROMPT, max_tokens=4, temperature=0, echo=True)
    assert out["choices"][0]["text"] == PROMPT + llm.detokenize(greedy_tokens[:4]).decode()
    out = fresh(llm).create_completion(llm.tokenize(PROMPT), max_tokens=4, temperature=0)
    assert out["choices"][0]["text"].encode() == llm.detokenize(greedy_tokens[:4])


def test_seed_reproducibility(llm):
    def sample(seed, **kw):
        return fresh(llm).create_completion(PROMPT, max_tokens=10, temperature=1.2, top_k=0, top_p=1.0, min_p=0.0,
                                     seed=seed, **kw)["choices"][0]["text"]
    assert sample(1234) == sample(1234)
    outs = {sample(s) for s in (1, 2, 3, 4)}
    assert len(outs) > 1  # different seeds do draw differently at this temperature


def test_seed_from_constructor(smollm2_path, lib_path):
    def run():
        with Llama(str(smollm2_path), n_ctx=128, seed=99) as m:
            return m.create_completion(PROMPT, max_tokens=8, temperature=1.0)["choices"][0]["text"]
    assert run() == run()


def test_max_tokens_none_runs_to_eog_or_context(smollm2_path, lib_path):
    with Llama(str(smollm2_path), n_ctx=24, verbose=False) as m:
        assert m.n_ctx() == 256   # llama.cpp rounds the context up to a multiple of 256
        out = m.create_completion(PROMPT, max_tokens=None, temperature=0, repeat_penalty=1.3)
        n_prompt = out["usage"]["prompt_tokens"]
        if out["choices"][0]["finish_reason"] == "length":
            assert out["usage"]["completion_tokens"] == 256 - n_prompt
        else:
            assert out["usage"]["completion_tokens"] < 256 - n_prompt
        with pytest.raises(ValueError, match="exceed context window"):
            m.create_completion("word " * 300, max_tokens=4)


def test_logit_bias(llm, greedy_tokens):
    first = greedy_tokens[0]
    banned = fresh(llm).create_completion(PROMPT, max_tokens=2, temperature=0, logit_bias={first: -1e9})
    assert llm.tokenize(banned["choices"][0]["text"], add_bos=False)[0] != first
    london = llm.tokenize(" London", add_bos=False)
    assert len(london) == 1
    forced = fresh(llm).create_completion(PROMPT, max_tokens=3, temperature=0, logit_bias={london[0]: 100.0})
    assert forced["choices"][0]["text"] == " London" * 3


@pytest.mark.parametrize("repeat,freq,present", [(2.0, 0.0, 0.0), (1.0, 3.0, 0.0), (1.0, 0.0, 6.0), (1.5, 0.5, 0.5)])
def test_penalties_see_the_prompt(llm, repeat, freq, present):
    """The first greedy token under penalties equals the argmax of the raw logits penalised with
    NumPy over the prompt (the last 64 tokens), by the published repeat/frequency/presence rules."""
    prompt = "The capital of France is Paris. Paris is big. The capital of France is"
    toks = llm.tokenize(prompt)
    llm.reset()
    llm.eval(toks)
    logits = np.array(C.llama_get_logits_ith(llm._ctx, -1)[:llm.n_vocab()], dtype=np.float64)
    plain = int(np.argmax(logits))
    counts = np.bincount(np.array(toks[-64:]), minlength=llm.n_vocab())
    seen = counts > 0
    pen = logits.copy()
    pen[seen] = np.where(pen[seen] <= 0, pen[seen] * repeat, pen[seen] / repeat)
    pen -= counts * freq + seen * present
    expected = int(np.argmax(pen))
    gen = llm.generate(toks, temp=0, repeat_penalty=repeat, frequency_penalty=freq, presence_penalty=present)
    assert next(gen) == expected
    gen.close()
    if (repeat, freq, present) == (2.0, 0.0, 0.0):
        assert expected != plain  # the penalty really changes the choice here


# ---- stop strings ----

def _spanning_stop(llm, toks):
    """A stop string that starts inside one generated token and ends inside the next, and the
    character offset of its first occurrence in the generated text."""
    pieces = [llm.token_to_piece(t).decode("utf-8") for t in toks]
    text = "".join(pieces)
    pos = 0
    for a, b in zip(pieces, pieces[1:]):
        pos += len(a)
        if len(a.strip()) >= 2 and len(b.strip()) >= 2:
            stop = a[-2:] + b[:2]
            if text.find(stop) == pos - 2:
                return stop, pos - 2
    pytest.fail(f"no two adjacent word pieces in {pieces!r}")


def test_stop_string_spanning_tokens(llm, greedy_tokens):
    full = llm.detokenize(greedy_tokens).decode()
    stop, at = _spanning_stop(llm, greedy_tokens)
    out = fresh(llm).create_completion(PROMPT, max_tokens=24, temperature=0, stop=stop)
    assert out["choices"][0]["text"] == full[:at]
    assert out["choices"][0]["finish_reason"] == "stop"
    # streamed: the same text, and no chunk ever shows a piece of the stop string
    chunks = [c["choices"][0]["text"] for c in
              fresh(llm).create_completion(PROMPT, max_tokens=24, temperature=0, stop=[stop], stream=True)]
    assert "".join(chunks) == full[:at]
    emitted = ""
    for c in chunks:
        emitted += c
        assert full[:at].startswith(emitted)
    # the earliest of several stops wins; a stop whose prefix appears but which never completes
    # holds nothing back at the end
    later = full[at + len(stop):][:3]
    if later.strip():
        out = fresh(llm).create_completion(PROMPT, max_tokens=24, temperature=0, stop=[later, stop])
        assert out["choices"][0]["text"] == full[:min(at, full.find(later))]
    never = full[:6] + "\x00never"
    out = fresh(llm).create_completion(PROMPT, max_tokens=24, temperature=0, stop=never)
    assert out["choices"][0]["text"] == full and out["choices"][0]["finish_reason"] == "length"


def test_usage_with_stop(llm, greedy_tokens):
    stop, at = _spanning_stop(llm, greedy_tokens)
    out = fresh(llm).create_completion(PROMPT, max_tokens=24, temperature=0, stop=stop)
    # generation ran through the token that completed the stop string, and no further
    pieces = [llm.token_to_piece(t) for t in greedy_tokens]
    done, n = b"", 0
    while stop.encode() not in done:
        done += pieces[n]
        n += 1
    assert out["usage"]["completion_tokens"] == n


# ---- UTF-8 safe streaming ----

def test_stream_never_splits_utf8(llm):
    gen = fresh(llm).generate(llm.tokenize(EMOJI_PROMPT), temp=0)
    toks = [next(gen) for _ in range(15)]
    gen.close()
    # the model spells these emoji over several byte tokens: the test really crosses them
    assert any(_is_partial_utf8(llm.token_to_piece(t)) for t in toks)
    chunks = list(fresh(llm).create_completion(EMOJI_PROMPT, max_tokens=15, temperature=0, stream=True))
    texts = [c["choices"][0]["text"] for c in chunks]
    for t in texts:
        assert "\ufffd" not in t
        t.encode("utf-8")  # every chunk is whole characters
    joined = "".join(texts)
    assert joined == llm.detokenize(toks).decode("utf-8", "ignore")  # a character cut by max_tokens is dropped
    assert any(ord(ch) > 0xFFFF for ch in joined)  # four-byte characters went through
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["usage"]["completion_tokens"] == 15
    assert all(c["id"] == chunks[0]["id"] for c in chunks)
    # the non-streamed text is the same
    assert fresh(llm).create_completion(EMOJI_PROMPT, max_tokens=15, temperature=0)["choices"][0]["text"] == joined


def _utf8_splits(data: bytes, cuts):
    cuts = sorted({c for c in cuts if 0 < c < len(data)})
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab \n.") + ["é", "中", "😀", "ß"]), max_size=40),
       cuts=st.lists(st.integers(0, 200), max_size=30),
       stop_spans=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 5)), max_size=3),
       extra_stops=st.lists(st.text(alphabet=st.sampled_from(list("ab.") + ["é", "😀"]), min_size=1, max_size=4),
                            max_size=2))
def test_text_stream_properties(text, cuts, stop_spans, extra_stops):
    stops = [text[i:i + n] for i, n in stop_spans if text[i:i + n]] + extra_stops
    data = text.encode("utf-8")
    pieces = _utf8_splits(data, cuts)
    # oracle: generation halts at the first piece after which some stop string is in the text,
    # and the text is cut where the earliest stop string present then begins
    expected, hits, seen = text, [], b""
    for piece in pieces:
        seen += piece
        hits = [seen.find(s.encode()) for s in stops if s.encode() in seen]
        if hits:
            expected = seen[:min(hits)].decode()
            break
    s = _TextStream(stops)
    out = ""
    stopped = False
    for piece in pieces:
        chunk, stopped = s.push(piece)
        assert "\ufffd" not in chunk
        out += chunk
        assert expected.startswith(out)  # never a byte of a stop string, never a broken character
        if stopped:
            break
    if not stopped:
        out += s.flush()
    assert out == expected
    assert stopped == bool(hits)


def test_text_stream_truncated_character_dropped():
    s = _TextStream([])
    assert s.push("a😀".encode()[:3]) == ("a", False)
    assert s.flush() == ""
    s = _TextStream([])  # malformed bytes are not held forever: they come out as U+FFFD
    assert s.push(b"\xe4x") == ("\ufffdx", False)


# ---- chat ----

MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"}]


def test_apply_chat_template_matches_models_jinja(llm):
    pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    tmpl = llm.metadata["tokenizer.chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    conv = MESSAGES + [{"role": "assistant", "content": "Paris."}, {"role": "user", "content": "And Spain?"}]
    for msgs in (MESSAGES, conv):
        for add in (True, False):
            expected = env.from_string(tmpl).render(messages=msgs, add_generation_prompt=add)
            assert llm.apply_chat_template(msgs, add_generation_prompt=add) == expected


# A request alone: the template adds its default system message (SmolLM2's "You are a helpful AI
# assistant named SmolLM..."), with which this 135M model answers this wording with Paris.
ASK = [{"role": "user", "content": "Name the capital of France."}]


def test_chat_completion(llm):
    out = fresh(llm).create_chat_completion(ASK, max_tokens=32, temperature=0)
    assert out["object"] == "chat.completion" and out["id"].startswith("chatcmpl-")
    ch = out["choices"][0]
    assert ch["message"]["role"] == "assistant"
    assert "Paris" in ch["message"]["content"], ch
    assert ch["finish_reason"] == "stop"   # ended by <|im_end|>, which is not in the text
    assert "<|im_end|>" not in ch["message"]["content"]
    prompt = llm.apply_chat_template(ASK)
    assert prompt.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")  # template executed
    assert out["usage"]["prompt_tokens"] == len(llm.tokenize(prompt, special=True))
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + out["usage"]["completion_tokens"]
    # streamed deltas: role first, then content pieces that add up to the same message
    chunks = list(fresh(llm).create_chat_completion(ASK, max_tokens=32, temperature=0, stream=True))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == ch["message"]["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_chat_format_override(smollm2_path, lib_path):
    with Llama(str(smollm2_path), n_ctx=64, chat_format="llama-3", verbose=False) as m:
        assert m.apply_chat_template([{"role": "user", "content": "hi"}]) == \
            "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    with Llama(str(smollm2_path), n_ctx=64, chat_format="no-such-format", verbose=False) as m:
        with pytest.raises(ValueError, match="not supported"):
            m.apply_chat_template([{"role": "user", "content": "hi"}])


# ---- embeddings ----

def test_embed_needs_embedding_mode(llm):
    with pytest.raises(LlamaError, match="embedding=True"):
        llm.embed("hello")


def test_embed_mean_pooled_normalized(smollm2_path, lib_path):
    sentences = ["The cat sat on the mat.", "A cat is sitting on a rug.", "Stock markets fell sharply today."]
    with Llama(str(smollm2_path), n_ctx=128, embedding=True, pooling_type=C.LLAMA_POOLING_TYPE_MEAN,
               verbose=False) as e:
        vecs = np.array(e.embed(sentences, normalize=True))
        single = np.array(e.embed(sentences[0], normalize=True))
        resp = e.create_embedding(sentences[:2])
        assert np.allclose(resp["data"][1]["embedding"] / np.linalg.norm(resp["data"][1]["embedding"]), vecs[1],
                           atol=1e-6)   # create_embedding does not normalise (llama-cpp-python's default)
        with pytest.raises(LlamaError):  # a pooled context yields no logits to sample from
            e.create_completion(PROMPT, max_tokens=2)
        toks = e.tokenize(sentences[0])
    assert vecs.shape == (3, 576)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert np.allclose(single, vecs[0], atol=1e-6)
    sim = vecs @ vecs.T
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[1, 2]
    assert [d["index"] for d in resp["data"]] == [0, 1]
    # oracle: the mean of the per-token embeddings (pooling NONE), normalised with NumPy
    with Llama(str(smollm2_path), n_ctx=128, embedding=True, pooling_type=C.LLAMA_POOLING_TYPE_NONE,
               verbose=False) as raw:
        per_token = np.array(raw.embed(sentences[0]))
        batch = C.llama_batch_init(len(toks), 0, 1)
        for i, t in enumerate(toks):
            C.llama_batch_add(batch, t, i, [0], True)
        assert C.llama_decode(raw._ctx, batch) == 0
        rows = np.array([C.llama_get_embeddings_ith(raw._ctx, i)[:576] for i in range(len(toks))])
        C.llama_batch_free(batch)
    mean = rows.mean(axis=0)
    assert np.allclose(vecs[0], mean / np.linalg.norm(mean), atol=1e-5)
    assert per_token.shape == rows.shape and np.allclose(per_token, rows, atol=1e-6)


# ---- lifetime ----

def test_close_order_and_use_after_close(smollm2_path, lib_path, monkeypatch):
    calls = []
    for name, tag in (("llama_sampler_free", "sampler"), ("llama_free", "context"), ("llama_model_free", "model")):
        orig = getattr(C, name)

        def wrapped(ptr, _orig=orig, _tag=tag):
            calls.append(_tag)
            return _orig(ptr)
        monkeypatch.setattr(C, name, wrapped)
    m = Llama(str(smollm2_path), n_ctx=64)
    m.create_completion(PROMPT, max_tokens=2, temperature=0)   # makes a sampler
    calls.clear()
    m.close()
    assert calls == ["sampler", "context", "model"]
    m.close()
    assert calls == ["sampler", "context", "model"]  # twice is harmless
    for use in (lambda: m.tokenize("x"), lambda: m.detokenize([1]), lambda: m.token_to_piece(1),
                lambda: m.create_completion(PROMPT, max_tokens=2), lambda: next(m.generate([1])),
                lambda: m.create_chat_completion(MESSAGES), lambda: m.embed("x"), lambda: m.n_ctx(),
                lambda: m.n_embd(), lambda: m.token_eos(), lambda: m.metadata, lambda: m.reset(),
                lambda: m.eval([1])):
        with pytest.raises(LlamaError, match="closed"):
            use()
    calls.clear()
    with Llama(str(smollm2_path), n_ctx=64) as m2:
        next(m2.generate(m2.tokenize(PROMPT), temp=0))
    assert calls == ["sampler", "context", "model"]
    with pytest.raises(LlamaError, match="closed"):
        m2.tokenize("x")


# ---- metadata is data, never code ----

def _write_vocab_model(path: Path, template: str) -> None:
    """A vocab-only GGUF (a six-token SentencePiece-style vocabulary) carrying the given chat template."""
    import gguf
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>", "\u2581", "h", "i"]
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * len(tokens))
    w.add_token_types([2, 3, 3, 1, 1, 1])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_chat_template(template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


# CVE-2024-34359 ("Llama Drama") style payloads: a chat template in a GGUF file that reaches
# os through Python internals. Each is live in plain jinja2 (checked in a child process).
_PAYLOADS = [
    "{% for x in ().__class__.__base__.__subclasses__() %}{% if 'warning' in x.__name__ %}"
    "{{ x()._module.__builtins__['__import__']('os').popen('touch MARK') }}{% endif %}{% endfor %}",
    "{{ cycler.__init__.__globals__.os.system('touch MARK') }}",
    "{{ joiner.__init__.__globals__.os.popen('touch MARK').read() }}",
    "{{ namespace.__init__.__globals__.os.system('touch MARK') }}",
    "{{ lipsum.__globals__['os'].popen('touch MARK').read() }}",
    "{{ self.__init__.__globals__.__builtins__.__import__('os').system('touch MARK') }}",
]


@pytest.mark.parametrize("payload", _PAYLOADS)
def test_chat_template_sandbox_blocks_cve_2024_34359(tmp_path, lib_path, payload):
    pytest.importorskip("jinja2")
    marker = tmp_path / "pwned"
    payload = payload.replace("MARK", str(marker))
    probe = subprocess.run([sys.executable, "-c", "import jinja2,sys; jinja2.Template(sys.argv[1]).render()", payload],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and marker.exists(), probe.stderr   # the payload is live unsandboxed
    marker.unlink()
    hostile = tmp_path / "hostile.gguf"
    _write_vocab_model(hostile, payload + "{% for m in messages %}<|im_start|>{{ m['role'] }}{% endfor %}")
    code = (
        "import sys, jinja2\n"
        "from llama_py import Llama\n"
        "m = Llama(sys.argv[1], vocab_only=True, verbose=False)\n"
        "assert '__globals__' in m.metadata['tokenizer.chat_template'] or '__class__' in m.metadata['tokenizer.chat_template']\n"
        "assert m.chat_format == 'chat_template.default'\n"
        "try:\n"
        "    m.apply_chat_template([{'role': 'user', 'content': 'hi'}]); print('rendered')\n"
        "except jinja2.exceptions.SecurityError as e:\n"
        "    print('blocked:', e)\n"
    )
    env = dict(os.environ, LLAMA_PY_LIB=str(lib_path))
    proc = subprocess.run([sys.executable, "-c", code, str(hostile)], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("blocked:") and "unsafe" in proc.stdout, proc.stdout
    assert not marker.exists()


def test_chat_template_cannot_mutate_its_inputs(tmp_path, lib_path):
    pytest.importorskip("jinja2")
    import jinja2
    path = tmp_path / "mutating.gguf"
    _write_vocab_model(path, "{{ messages.append({'role': 'system', 'content': 'injected'}) }}{{ messages|length }}")
    msgs = [{"role": "user", "content": "hi"}]
    with Llama(str(path), vocab_only=True, verbose=False) as m:
        with pytest.raises(jinja2.exceptions.SecurityError):
            m.apply_chat_template(msgs)
    assert msgs == [{"role": "user", "content": "hi"}]
