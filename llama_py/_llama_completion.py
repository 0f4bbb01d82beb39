"""Llama.create_completion / __call__: OpenAI-style text completions, streamed or whole.

Generation ends at an end-of-generation token (finish_reason "stop"), a stop string (never part
of the text, nor any piece of it ever streamed), a stopping criterion ("stop"), or max_tokens /
the context's end ("length"). Streamed chunks never split a UTF-8 character.

logprobs=N reports, per returned token, its log-probability under the model's raw logits at the
position that predicted it (log-softmax of the logits of the token before it, as llama.cpp's
server reports them: before samplers, biases and logits processors), the N likeliest
alternatives there, and its character offset in prompt + completion. With echo the prompt's
tokens are reported too; the first token of a sequence, with nothing before it, gets None.
"""
from __future__ import annotations

import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

from . import llama_cpp as C
from ._runtime.logprobs import decode_all_logits, token_logprob
from ._runtime.text import TextStream


class _Logprobs:
    """Per-token log-probability entries, handed out as the text they belong to is returned."""

    def __init__(self, llm, n_top: int):
        self.llm = llm
        self.n_top = max(0, int(n_top))
        self.entries: List[Tuple[int, str, Optional[float], Optional[Dict[str, float]]]] = []
        self.sent = 0

    def add(self, offset: int, token: int, raw_logits: Optional[np.ndarray]) -> None:
        text = self.llm.detokenize([token]).decode("utf-8", errors="ignore")
        if raw_logits is None:
            self.entries.append((offset, text, None, None))
            return
        lp, best = token_logprob(raw_logits, token, self.n_top)
        top: Dict[str, float] = {}
        for i, v in best:
            top.setdefault(self.llm.detokenize([i]).decode("utf-8", errors="ignore"), v)
        top[text] = lp
        self.entries.append((offset, text, lp, top))

    def take(self, upto_chars: Optional[int]) -> Optional[Dict[str, List[Any]]]:
        """The entries not yet handed out whose text starts before upto_chars (None: all)."""
        out = {"tokens": [], "text_offset": [], "token_logprobs": [], "top_logprobs": []}
        while self.sent < len(self.entries):
            off, text, lp, top = self.entries[self.sent]
            if upto_chars is not None and off >= upto_chars:
                break
            out["tokens"].append(text)
            out["text_offset"].append(off)
            out["token_logprobs"].append(lp)
            out["top_logprobs"].append(top)
            self.sent += 1
        return out

    def drop_rest(self) -> None:
        self.sent = len(self.entries)


class _CompletionMixin:
    """create_completion and __call__ (mixed into Llama)."""

    def create_completion(self, prompt: Union[str, List[int]], suffix: Optional[str] = None,
                          max_tokens: Optional[int] = 16, temperature: float = 0.8, top_p: float = 0.95,
                          min_p: float = 0.05, typical_p: float = 1.0, logprobs: Optional[int] = None,
                          echo: bool = False, stop: Optional[Union[str, List[str]]] = [],
                          frequency_penalty: float = 0.0, presence_penalty: float = 0.0, repeat_penalty: float = 1.0,
                          top_k: int = 40, stream: bool = False, seed: Optional[int] = None, tfs_z: float = 1.0,
                          mirostat_mode: int = 0, mirostat_tau: float = 5.0, mirostat_eta: float = 0.1,
                          model: Optional[str] = None, stopping_criteria: Optional[Any] = None,
                          logits_processor: Optional[Any] = None, grammar: Optional[Any] = None,
                          logit_bias: Optional[Dict[int, float]] = None):
        """OpenAI-style completion of prompt (text, or token ids used as they are); with
        stream=True an iterator of chunks, the last carrying finish_reason and usage.

        max_tokens None or <= 0: until the context is full. temperature 0: greedy; below 0:
        sampling from the plain distribution. suffix: with a model that has fill-in-the-middle
        tokens the text between prompt and suffix is generated; otherwise suffix is appended to
        the result. The part of the context that matches the prompt is reused (only the rest is
        decoded); decoding the last prompt token alone rounds slightly differently from decoding
        it in a batch, so call reset() first for bit-identical results from identical calls.
        """
        gen = self._completion_chunks(prompt, suffix, max_tokens, dict(
            temp=temperature, top_p=top_p, min_p=min_p, typical_p=typical_p, top_k=top_k,
            repeat_penalty=repeat_penalty, frequency_penalty=frequency_penalty, presence_penalty=presence_penalty,
            mirostat_mode=mirostat_mode, mirostat_tau=mirostat_tau, mirostat_eta=mirostat_eta, grammar=grammar),
            logprobs, echo, stop, seed, model, stopping_criteria, logits_processor, logit_bias)
        if stream:
            return gen
        text, finish, usage, head, lps = "", None, None, None, None
        for chunk in gen:
            head = chunk
            choice = chunk["choices"][0]
            text += choice["text"]
            finish = choice["finish_reason"] or finish
            usage = chunk.get("usage", usage)
            if choice["logprobs"] is not None:
                lps = lps or {"tokens": [], "text_offset": [], "token_logprobs": [], "top_logprobs": []}
                for k in lps:
                    lps[k].extend(choice["logprobs"][k])
        return {"id": head["id"], "object": "text_completion", "created": head["created"], "model": head["model"],
                "choices": [{"text": text, "index": 0, "logprobs": lps, "finish_reason": finish}], "usage": usage}

    def __call__(self, prompt: str, suffix: Optional[str] = None, max_tokens: Optional[int] = 16,
                 temperature: float = 0.8, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
                 logprobs: Optional[int] = None, echo: bool = False, stop: Optional[Union[str, List[str]]] = [],
                 frequency_penalty: float = 0.0, presence_penalty: float = 0.0, repeat_penalty: float = 1.0,
                 top_k: int = 40, stream: bool = False, seed: Optional[int] = None, tfs_z: float = 1.0,
                 mirostat_mode: int = 0, mirostat_tau: float = 5.0, mirostat_eta: float = 0.1,
                 model: Optional[str] = None, stopping_criteria: Optional[Any] = None,
                 logits_processor: Optional[Any] = None, grammar: Optional[Any] = None,
                 logit_bias: Optional[Dict[int, float]] = None):
        """create_completion with the same arguments."""
        return self.create_completion(prompt=prompt, suffix=suffix, max_tokens=max_tokens, temperature=temperature,
                                      top_p=top_p, min_p=min_p, typical_p=typical_p, logprobs=logprobs, echo=echo,
                                      stop=stop, frequency_penalty=frequency_penalty,
                                      presence_penalty=presence_penalty, repeat_penalty=repeat_penalty, top_k=top_k,
                                      stream=stream, seed=seed, tfs_z=tfs_z, mirostat_mode=mirostat_mode,
                                      mirostat_tau=mirostat_tau, mirostat_eta=mirostat_eta, model=model,
                                      stopping_criteria=stopping_criteria, logits_processor=logits_processor,
                                      grammar=grammar, logit_bias=logit_bias)

    # ---- the work ----

    def _prompt_tokens(self, prompt, suffix) -> Tuple[List[int], bool]:
        """The tokens to decode, and whether they form a fill-in-the-middle prompt."""
        if isinstance(prompt, (str, bytes)):
            text = prompt.encode("utf-8") if isinstance(prompt, str) else prompt
        else:
            text = None
        v = self._vocab
        fim = [C.llama_vocab_fim_pre(v), C.llama_vocab_fim_suf(v), C.llama_vocab_fim_mid(v)]
        if suffix is not None and min(fim) >= 0:
            pre = self.tokenize(text, add_bos=False, special=False) if text is not None else [int(t) for t in prompt]
            suf = self.tokenize(suffix.encode("utf-8"), add_bos=False, special=False)
            body = ([fim[1]] + suf + [fim[0]] + pre) if self.spm_infill else ([fim[0]] + pre + [fim[1]] + suf)
            bos = C.llama_vocab_bos(v)
            head = [bos] if bos >= 0 and C.llama_vocab_get_add_bos(v) else []
            return head + body + [fim[2]], True
        if text is not None:
            toks = self.tokenize(text, add_bos=True, special=True)
        else:
            toks = [int(t) for t in prompt]
        if not toks:
            bos = C.llama_vocab_bos(v)
            toks = [bos if bos >= 0 else C.llama_vocab_eos(v)]
        return toks, False

    def _decode_prompt_all_logits(self, tokens: List[int]) -> np.ndarray:
        """Decodes tokens into an emptied context keeping every position's logits (for echo's logprobs)."""
        self.reset()
        rows = np.zeros((len(tokens), self._n_vocab), dtype=np.single)
        batch = C.llama_batch_init(self.n_batch, 0, 1)
        try:
            for start, chunk_rows in decode_all_logits(self._ctx, batch, tokens, self.n_batch, self._n_vocab):
                rows[start:start + len(chunk_rows)] = chunk_rows
                self._tokens.extend(tokens[start:start + len(chunk_rows)])
            self._logits_live = True
        except C.LlamaError:
            self._logits_live = False
            raise
        finally:
            C.llama_batch_free(batch)
        if self._logits_all:
            self.scores[:len(tokens)] = rows
        return rows

    def _completion_chunks(self, prompt, suffix, max_tokens, sampling, logprobs, echo, stop, seed, model,
                           stopping_criteria, logits_processor, logit_bias) -> Iterator[Dict[str, Any]]:
        self._check_open()
        if suffix is not None and not isinstance(suffix, str):
            raise TypeError(f"suffix must be a str or None, got {type(suffix).__name__}")
        cid = f"cmpl-{uuid.uuid4()}"
        created = int(time.time())
        model_name = model if model is not None else self.model_path
        prompt_tokens, infill = self._prompt_tokens(prompt, suffix)
        if len(prompt_tokens) >= self._n_ctx:
            raise ValueError(f"Requested tokens ({len(prompt_tokens)}) exceed context window of {self._n_ctx}")
        limit = self._n_ctx - len(prompt_tokens)
        if max_tokens is not None and max_tokens > 0:
            limit = min(limit, max_tokens)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        if isinstance(prompt, str):
            prompt_text = prompt
        elif isinstance(prompt, bytes):
            prompt_text = prompt.decode("utf-8", errors="ignore")
        else:
            prompt_text = self.detokenize(prompt_tokens).decode("utf-8", errors="ignore")
        lp = _Logprobs(self, logprobs) if logprobs is not None else None

        def chunk(text: str, finish=None, usage=None, upto=None):
            d = {"id": cid, "object": "text_completion", "created": created, "model": model_name,
                 "choices": [{"text": text, "index": 0, "logprobs": lp.take(upto) if lp else None,
                              "finish_reason": finish}]}
            if usage is not None:
                d["usage"] = usage
            return d

        if self.cache is not None and not (echo and lp):
            try:
                state = self.cache[prompt_tokens]
            except KeyError:
                state = None
            if state is not None:
                cached = [int(t) for t in np.asarray(state.input_ids)[:state.n_tokens]]
                if self.longest_token_prefix(cached, prompt_tokens) > \
                        self.longest_token_prefix(self._tokens, prompt_tokens):
                    self.load_state(state)

        base = 0  # character offset of the completion in the text logprobs' offsets count in
        if echo and lp:
            rows = self._decode_prompt_all_logits(prompt_tokens)
            bos = C.llama_vocab_bos(self._vocab)
            done = b""
            for i, t in enumerate(prompt_tokens):
                if i == 0 and t == bos:
                    continue
                lp.add(len(done.decode("utf-8", errors="ignore")), t, rows[i - 1] if i > 0 else None)
                done += self.detokenize([t])
        base = len(prompt_text)
        if echo:
            yield chunk(prompt_text, upto=None)

        n_gen = 0
        finish = "length"
        out = TextStream(stops)
        emitted = 0          # characters of completion text handed out
        gen_bytes = b""
        gen = self._generate(prompt_tokens, sampling, True, logits_processor, stopping_criteria, seed, logit_bias)
        try:
            for tok in gen:
                if C.llama_vocab_is_eog(self._vocab, tok):
                    finish = "stop"
                    break
                n_gen += 1
                if lp:
                    lp.add(base + len(gen_bytes.decode("utf-8", errors="ignore")), tok, self._last_raw_logits)
                # harmony chats (chat.py) read the channel markers, which are control tokens
                piece = self.detokenize([tok], prev_tokens=prompt_tokens, special=getattr(self, "_render_special", False))
                gen_bytes += piece
                text, stopped = out.push(piece)
                if text:
                    emitted += len(text)
                    yield chunk(text, upto=base + emitted)
                if stopped:
                    finish = "stop"
                    break
                if n_gen >= limit:
                    break
            else:
                finish = "stop"  # the generator ended: a stopping criterion held
        finally:
            gen.close()
        text = out.flush()
        if text:
            emitted += len(text)
            yield chunk(text, upto=base + emitted)
        if lp:
            lp.drop_rest()  # tokens of a stop string or of a cut-off character
        if suffix is not None and not infill:
            yield chunk(suffix)
        if self.cache is not None:
            self.cache[tuple(self._tokens)] = self.save_state()
        usage = {"prompt_tokens": len(prompt_tokens), "completion_tokens": n_gen,
                 "total_tokens": len(prompt_tokens) + n_gen}
        yield chunk("", finish, usage)
