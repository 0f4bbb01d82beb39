"""High-level API: the `Llama` class, shaped like llama-cpp-python's.

    from llama_py import Llama
    with Llama("model.gguf", n_ctx=2048) as llm:
        out = llm.create_completion("The capital of France is", max_tokens=16)
        print(out["choices"][0]["text"])

The model, context and sampler are C objects owned by this object: `close()` (or the context
manager, or garbage collection) frees them in dependency order (sampler, context, model).
Per-token work stays in C: one decode call and one sample call per generated token.
"""
from __future__ import annotations

import ctypes
import os
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import llama_cpp as C
from ._lib import LlamaError

_DEFAULT_CHAT_TEMPLATE = b"chatml"


def _physical_cores() -> int:
    try:
        from . import ggml
        return max(1, int(ggml.ggml_cpu_n_physical_cores()))
    except Exception:
        return max(1, (os.cpu_count() or 2) // 2)


class _Logger:
    """Routes library logs to stderr only when verbose, and keeps the callback alive."""

    def __init__(self, verbose: bool):
        import sys

        def cb(level, text, user_data):
            if verbose and text:
                sys.stderr.write(text.decode("utf-8", errors="replace"))

        self.cb = C.llama_log_callback(cb)
        C.llama_log_set(self.cb, None)


_loggers: List[_Logger] = []  # keeps every installed callback alive for the process


class Llama:
    """A loaded model with one context and one sampler chain."""

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 2048,
        n_batch: int = 512,
        n_ubatch: int = 512,
        n_threads: Optional[int] = None,
        n_threads_batch: Optional[int] = None,
        n_seq_max: int = 1,
        seed: int = C.LLAMA_DEFAULT_SEED,
        embedding: bool = False,
        pooling_type: int = C.LLAMA_POOLING_TYPE_UNSPECIFIED,
        flash_attn: Optional[bool] = None,
        type_k: Optional[int] = None,
        type_v: Optional[int] = None,
        use_mmap: bool = True,
        vocab_only: bool = False,
        chat_format: Optional[str] = None,
        verbose: bool = False,
        n_gpu_layers: int = 0,
    ):
        self._model = None
        self._ctx = None
        self._smpl = None
        self.verbose = verbose
        _loggers.append(_Logger(verbose))
        self.model_path = str(model_path)
        if not os.path.exists(self.model_path):
            raise FileNotFoundError(f"model file not found: {self.model_path}")

        mparams = C.llama_model_default_params()
        mparams.n_gpu_layers = n_gpu_layers
        mparams.load_mode = C.LLAMA_LOAD_MODE_MMAP if use_mmap else C.LLAMA_LOAD_MODE_NONE
        mparams.vocab_only = vocab_only
        model = C.llama_model_load_from_file(self.model_path.encode(), mparams)
        if not model:
            raise LlamaError(f"failed to load model from {self.model_path} (set verbose=True to see why)")
        self._model = model
        self._vocab = C.llama_model_get_vocab(model)
        self.n_threads = n_threads if n_threads else _physical_cores()
        self.n_threads_batch = n_threads_batch if n_threads_batch else self.n_threads
        self.seed = seed
        self.chat_format = chat_format
        self._n_vocab = C.llama_vocab_n_tokens(self._vocab)
        self.context_params = None
        if vocab_only:
            return

        cparams = C.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = min(n_batch, n_ctx) if n_ctx else n_batch
        cparams.n_ubatch = min(n_ubatch, cparams.n_batch)
        cparams.n_seq_max = n_seq_max
        cparams.n_threads = self.n_threads
        cparams.n_threads_batch = self.n_threads_batch
        cparams.embeddings = embedding
        cparams.pooling_type = pooling_type
        if flash_attn is not None:
            cparams.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn else C.LLAMA_FLASH_ATTN_TYPE_DISABLED
        if type_k is not None:
            cparams.type_k = type_k
        if type_v is not None:
            cparams.type_v = type_v
        ctx = C.llama_init_from_model(model, cparams)
        if not ctx:
            self.close()
            raise LlamaError("failed to create a context (set verbose=True to see why)")
        self._ctx = ctx
        self.context_params = cparams
        self._n_ctx = C.llama_n_ctx(ctx)
        self._n_batch = C.llama_n_batch(ctx)
        self._tokens: List[int] = []  # what the KV cache holds for sequence 0

    # ---- lifetime ----

    def close(self) -> None:
        """Frees sampler, context and model, in that order. Safe to call twice."""
        if self._smpl:
            C.llama_sampler_free(self._smpl)
            self._smpl = None
        if self._ctx:
            C.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            C.llama_model_free(self._model)
            self._model = None

    def __enter__(self) -> "Llama":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _check_open(self, need_ctx: bool = True) -> None:
        if not self._model or (need_ctx and not self._ctx):
            raise LlamaError("this Llama object is closed" if not self._model else "this Llama object has no context (vocab_only)")

    # ---- properties ----

    def n_ctx(self) -> int:
        return self._n_ctx

    def n_vocab(self) -> int:
        return self._n_vocab

    def n_embd(self) -> int:
        return C.llama_model_n_embd(self._model)

    def token_bos(self) -> int:
        return C.llama_vocab_bos(self._vocab)

    def token_eos(self) -> int:
        return C.llama_vocab_eos(self._vocab)

    @property
    def metadata(self) -> Dict[str, str]:
        self._check_open(need_ctx=False)
        out = {}
        buf = ctypes.create_string_buffer(1 << 16)
        for i in range(C.llama_model_meta_count(self._model)):
            if C.llama_model_meta_key_by_index(self._model, i, buf, len(buf)) < 0:
                continue
            key = buf.value.decode("utf-8", errors="replace")
            if C.llama_model_meta_val_str_by_index(self._model, i, buf, len(buf)) < 0:
                continue
            out[key] = buf.value.decode("utf-8", errors="replace")
        return out

    # ---- tokens ----

    def tokenize(self, text: Union[str, bytes], add_bos: bool = True, special: bool = False) -> List[int]:
        """Text (str or UTF-8 bytes) to token ids; add_bos adds the vocab's special tokens."""
        self._check_open(need_ctx=False)
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        n_max = len(data) + 8
        buf = (C.llama_token * n_max)()
        n = C.llama_tokenize(self._vocab, data, len(data), buf, n_max, add_bos, special)
        if n < 0:
            n_max = -n
            buf = (C.llama_token * n_max)()
            n = C.llama_tokenize(self._vocab, data, len(data), buf, n_max, add_bos, special)
        if n < 0:
            raise LlamaError("tokenization failed", n)
        return list(buf[:n])

    def token_to_piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (may be part of a UTF-8 character)."""
        buf = ctypes.create_string_buffer(64)
        n = C.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = C.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        return buf.raw[:max(n, 0)]

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> bytes:
        """Token ids to UTF-8 bytes."""
        self._check_open(need_ctx=False)
        arr = (C.llama_token * max(1, len(tokens)))(*tokens)
        cap = max(16, len(tokens) * 8)
        buf = ctypes.create_string_buffer(cap)
        n = C.llama_detokenize(self._vocab, arr, len(tokens), buf, cap, False, special)
        if n < 0:
            cap = -n
            buf = ctypes.create_string_buffer(cap)
            n = C.llama_detokenize(self._vocab, arr, len(tokens), buf, cap, False, special)
        return buf.raw[:max(n, 0)]

    # ---- decoding ----

    def reset(self) -> None:
        """Empties the KV cache."""
        self._check_open()
        C.llama_memory_clear(C.llama_get_memory(self._ctx), True)
        self._tokens = []

    def eval(self, tokens: Sequence[int]) -> None:
        """Decodes tokens after what the cache holds, in batches of n_batch; logits of the last."""
        self._check_open()
        tokens = list(tokens)
        if len(self._tokens) + len(tokens) > self._n_ctx:
            raise LlamaError(f"context full: {len(self._tokens)} + {len(tokens)} tokens > n_ctx {self._n_ctx}")
        for start in range(0, len(tokens), self._n_batch):
            chunk = tokens[start:start + self._n_batch]
            arr = (C.llama_token * len(chunk))(*chunk)
            batch = C.llama_batch_get_one(arr, len(chunk))
            rc = C.llama_decode(self._ctx, batch)
            if rc != 0:
                raise LlamaError("llama_decode failed" + (" (aborted)" if rc == 2 else ""), rc)
            self._tokens.extend(chunk)

    def _make_sampler(self, temperature: float, top_k: int, top_p: float, min_p: float,
                      repeat_penalty: float, seed: Optional[int]):
        chain = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
        if repeat_penalty and repeat_penalty != 1.0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_penalties(self._n_vocab, 64, repeat_penalty, 0.0, 0.0))
        if temperature is None or temperature <= 0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
        else:
            if top_k and top_k > 0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_k(top_k))
            if top_p is not None and top_p < 1.0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(top_p, 1))
            if min_p and min_p > 0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_min_p(min_p, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temperature))
            s = self.seed if seed is None else seed
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(s & 0xFFFFFFFF))
        return chain

    def generate(self, tokens: Sequence[int], *, temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95,
                 min_p: float = 0.05, repeat_penalty: float = 1.0, seed: Optional[int] = None,
                 reset: bool = True) -> Iterator[int]:
        """Yields sampled tokens forever (stop by breaking out); the prompt is `tokens`."""
        self._check_open()
        tokens = list(tokens)
        if reset:
            # keep the longest common prefix of the cache and the new prompt
            n_keep = 0
            for a, b in zip(self._tokens, tokens):
                if a != b:
                    break
                n_keep += 1
            if n_keep == len(tokens):
                n_keep = max(0, n_keep - 1)  # decode at least one token to get logits
            mem = C.llama_get_memory(self._ctx)
            C.llama_memory_seq_rm(mem, -1, n_keep, -1)
            self._tokens = self._tokens[:n_keep]
            tokens = tokens[n_keep:]
        if self._smpl:
            C.llama_sampler_free(self._smpl)
        self._smpl = self._make_sampler(temperature, top_k, top_p, min_p, repeat_penalty, seed)
        self.eval(tokens)
        while True:
            tok = C.llama_sampler_sample(self._smpl, self._ctx, -1)
            yield tok
            self.eval([tok])

    def create_completion(self, prompt: Union[str, List[int]], max_tokens: Optional[int] = 16,
                          temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                          repeat_penalty: float = 1.0, seed: Optional[int] = None,
                          stop: Optional[Union[str, List[str]]] = None, stream: bool = False,
                          echo: bool = False) -> Union[Dict[str, Any], Iterator[Dict[str, Any]]]:
        """OpenAI-style completion; with stream=True an iterator of chunks."""
        gen = self._completion(prompt, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed, stop, echo)
        if stream:
            return gen
        text, finish, usage, cid, created = "", None, None, None, None
        for chunk in gen:
            cid, created = chunk["id"], chunk["created"]
            text += chunk["choices"][0]["text"]
            finish = chunk["choices"][0]["finish_reason"] or finish
            usage = chunk.get("usage", usage)
        return {"id": cid, "object": "text_completion", "created": created, "model": self.model_path,
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
                "usage": usage}

    def __call__(self, prompt, **kwargs):
        return self.create_completion(prompt, **kwargs)

    def _completion(self, prompt, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed, stop, echo):
        self._check_open()
        cid = f"cmpl-{uuid.uuid4()}"
        created = int(time.time())
        prompt_tokens = self.tokenize(prompt, add_bos=True, special=True) if isinstance(prompt, str) else list(prompt)
        if not prompt_tokens:
            prompt_tokens = [self.token_bos()] if self.token_bos() >= 0 else []
        if len(prompt_tokens) >= self._n_ctx:
            raise ValueError(f"prompt has {len(prompt_tokens)} tokens, n_ctx is {self._n_ctx}")
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        stops_b = [s.encode("utf-8") for s in stops if s]
        limit = self._n_ctx - len(prompt_tokens)
        if max_tokens is not None and max_tokens > 0:
            limit = min(limit, max_tokens)

        def chunk(text: str, finish=None, usage=None):
            d = {"id": cid, "object": "text_completion", "created": created, "model": self.model_path,
                 "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}]}
            if usage is not None:
                d["usage"] = usage
            return d

        if echo:
            yield chunk(self.detokenize(prompt_tokens).decode("utf-8", errors="replace"))
        pending = b""   # generated bytes not yet emitted: an incomplete UTF-8 char or a possible stop prefix
        n_gen = 0
        finish = "length"
        gen = self.generate(prompt_tokens, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                            repeat_penalty=repeat_penalty, seed=seed)
        for tok in gen:
            if C.llama_vocab_is_eog(self._vocab, tok):
                finish = "stop"
                break
            n_gen += 1
            pending += self.token_to_piece(tok)
            hit = min((i for i in (pending.find(s) for s in stops_b) if i >= 0), default=-1)
            if hit >= 0:
                text = _decode_complete(pending[:hit], final=True)
                if text:
                    yield chunk(text)
                pending = b""
                finish = "stop"
                break
            # hold back any tail that could start a stop string, and any incomplete character
            hold = max((_overlap(pending, s) for s in stops_b), default=0)
            emit_upto = len(pending) - hold
            emit_upto = _utf8_boundary(pending, emit_upto)
            if emit_upto > 0:
                yield chunk(pending[:emit_upto].decode("utf-8", errors="replace"))
                pending = pending[emit_upto:]
            if n_gen >= limit:
                break
        gen.close()
        if pending:
            yield chunk(pending.decode("utf-8", errors="replace"))
        usage = {"prompt_tokens": len(prompt_tokens), "completion_tokens": n_gen,
                 "total_tokens": len(prompt_tokens) + n_gen}
        yield chunk("", finish, usage)

    # ---- chat ----

    def _chat_template(self) -> bytes:
        if self.chat_format:
            return self.chat_format.encode()
        t = C.llama_model_chat_template(self._model, None)
        return t if t else _DEFAULT_CHAT_TEMPLATE

    def apply_chat_template(self, messages: List[Dict[str, str]], add_generation_prompt: bool = True) -> str:
        """Formats messages with the model's template (detected, never executed)."""
        arr = (C.llama_chat_message * max(1, len(messages)))()
        keep = []
        for i, m in enumerate(messages):
            role, content = m["role"].encode(), (m.get("content") or "").encode()
            keep += [role, content]
            arr[i].role, arr[i].content = role, content
        tmpl = self._chat_template()
        n = C.llama_chat_apply_template(tmpl, arr, len(messages), add_generation_prompt, None, 0)
        if n < 0:
            raise LlamaError("the model's chat template is not one of the built-in formats; pass chat_format=")
        buf = ctypes.create_string_buffer(n + 1)
        C.llama_chat_apply_template(tmpl, arr, len(messages), add_generation_prompt, buf, n + 1)
        return buf.raw[:n].decode("utf-8")

    def create_chat_completion(self, messages: List[Dict[str, str]], max_tokens: Optional[int] = None,
                               temperature: float = 0.2, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                               repeat_penalty: float = 1.0, seed: Optional[int] = None,
                               stop: Optional[Union[str, List[str]]] = None, stream: bool = False):
        """OpenAI-style chat completion; with stream=True an iterator of delta chunks."""
        prompt = self.apply_chat_template(messages)
        gen = self._completion(prompt, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed, stop, False)
        cid = f"chatcmpl-{uuid.uuid4()}"
        created = int(time.time())
        if stream:
            def chunks():
                yield {"id": cid, "object": "chat.completion.chunk", "created": created, "model": self.model_path,
                       "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
                for c in gen:
                    ch = c["choices"][0]
                    delta = {"content": ch["text"]} if ch["text"] else {}
                    yield {"id": cid, "object": "chat.completion.chunk", "created": created, "model": self.model_path,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": ch["finish_reason"]}]}
            return chunks()
        text, finish, usage = "", None, None
        for c in gen:
            text += c["choices"][0]["text"]
            finish = c["choices"][0]["finish_reason"] or finish
            usage = c.get("usage", usage)
        return {"id": cid, "object": "chat.completion", "created": created, "model": self.model_path,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                             "finish_reason": finish}],
                "usage": usage}

    # ---- embeddings ----

    def embed(self, text: Union[str, List[str]], normalize: bool = True) -> Union[List[float], List[List[float]]]:
        """Mean-pooled embedding(s) of text; needs Llama(..., embedding=True)."""
        self._check_open()
        if not self.context_params.embeddings:
            raise LlamaError("create the Llama with embedding=True to use embed()")
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        n_embd = self.n_embd()
        out = []
        for t in texts:
            self.reset()
            toks = self.tokenize(t, add_bos=True)
            self.eval(toks)
            ptr = C.llama_get_embeddings_seq(self._ctx, 0)
            if not ptr:
                ptr = C.llama_get_embeddings_ith(self._ctx, -1)
            if not ptr:
                raise LlamaError("no embeddings were produced")
            vec = [ptr[i] for i in range(n_embd)]
            if normalize:
                norm = sum(v * v for v in vec) ** 0.5 or 1.0
                vec = [v / norm for v in vec]
            out.append(vec)
        self.reset()
        return out[0] if single else out


def _overlap(data: bytes, stop: bytes) -> int:
    """Length of the longest tail of data that is a proper prefix of stop."""
    for k in range(min(len(data), len(stop) - 1), 0, -1):
        if data.endswith(stop[:k]):
            return k
    return 0


def _utf8_boundary(data: bytes, upto: int) -> int:
    """Largest n <= upto such that data[:n] does not end inside a UTF-8 character."""
    n = max(0, upto)
    i = n - 1
    back = 0
    while i >= 0 and back < 4 and (data[i] & 0xC0) == 0x80:
        i -= 1
        back += 1
    if i < 0:
        return n
    lead = data[i]
    need = 1 if lead < 0x80 else 2 if lead >> 5 == 0x6 else 3 if lead >> 4 == 0xE else 4 if lead >> 3 == 0x1E else 1
    return n if (n - i) >= need else i


def _decode_complete(data: bytes, final: bool = False) -> str:
    return data.decode("utf-8", errors="replace")
