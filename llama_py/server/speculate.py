"""Drafts for the engine's speculative decoding: a small model of the same vocabulary
(`--draft-model`), or prompt lookup (`--draft-model ngram`).

    python -m llama_py serve -m qwen2.5-coder-1.5b.gguf --draft-model qwen2.5-coder-0.5b.gguf --draft-n 8

Each step the engine asks the drafter for up to n tokens per generating slot, decodes every
slot's sampled token AND its drafts in the one llama_decode of the step, then samples each row
in order with the request's own sampler chain as if the tokens had come one by one: the first
sample that differs from its draft ends the slot's round, and the cells after it are dropped.
So the text is exactly what it is without drafts (greedy and seeded sampling alike), only with
fewer steps when drafts are good. Models whose memory is recurrent (hybrid) cannot drop cells,
so they refuse a draft.

The draft model keeps one sequence per slot in its own context: each step it decodes, for all
drafting slots at once, what their sequences lack of the target's tokens, then n greedy tokens
(one batched llama_decode per drafted position).
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from .. import llama_cpp as C
from .._lib import LlamaError


def vocab_mismatch(va, vb) -> Optional[str]:
    """None when vocabularies va and vb (llama_vocab handles) have the same tokens, else a
    message naming the first token that differs."""
    na, nb = C.llama_vocab_n_tokens(va), C.llama_vocab_n_tokens(vb)
    if na != nb:
        return f"the draft model's vocabulary has {na} tokens, the target's {nb}"
    for i in range(na):
        ta, tb = C.llama_vocab_get_text(va, i), C.llama_vocab_get_text(vb, i)
        if ta != tb:
            return f"the draft model's vocabulary differs from the target's at token {i}: {ta!r} vs {tb!r}"
    return None


def lookup_draft(ids: np.ndarray, max_ngram: int, n: int) -> List[int]:
    """Prompt lookup: the n tokens that followed the latest earlier occurrence of the last k
    tokens of ids (k from max_ngram down to 1); [] when none recurs. Vectorized: one compare per k."""
    m = len(ids)
    for k in range(min(max_ngram, m - 1), 0, -1):
        tail = ids[m - k:]
        # starts s < m - k with ids[s:s+k] == tail
        hit = ids[:m - k] == tail[0]
        for j in range(1, k):
            hit &= ids[j:m - k + j] == tail[j]
        starts = np.flatnonzero(hit)
        if len(starts):
            s = int(starts[-1]) + k
            follow = ids[s:s + n]
            if len(follow):
                return [int(t) for t in follow]
    return []


class LookupDrafter:
    """Prompt lookup decoding: drafts by repeating what followed the last n-gram earlier in the text."""

    kind = "ngram"

    def __init__(self, max_ngram: int = 3):
        self.max_ngram = max_ngram

    def propose(self, hist: Dict[int, List[int]], limit: Dict[int, int]) -> Dict[int, List[int]]:
        """Drafts for each slot id of hist (its tokens so far, the last one not yet decoded),
        at most limit[slot] tokens each."""
        return {sid: lookup_draft(np.asarray(toks, dtype=np.int32), self.max_ngram, limit[sid])
                for sid, toks in hist.items() if limit[sid] > 0}

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass


class ModelDrafter:
    """A draft model's context with one sequence per target slot (greedy drafts)."""

    kind = "model"

    def __init__(self, path: str, target, n_slots: int, n_ctx_slot: int, n_threads: Optional[int] = None,
                 n_gpu_layers: int = 0):
        from .engine import Model
        self.model = Model(path, n_gpu_layers=n_gpu_layers)
        self._ctx = None
        try:
            if C.llama_model_is_hybrid(self.model.handle) or C.llama_model_is_recurrent(self.model.handle):
                raise LlamaError(f"the draft model {path} has a recurrent state, whose rejected drafts cannot be "
                                 "dropped: use a transformer draft model")
            why = vocab_mismatch(self.model.vocab, target.vocab)
            if why is not None:
                raise LlamaError(f"--draft-model {path}: {why}")
            p = C.llama_context_default_params()
            p.n_ctx = n_ctx_slot * n_slots
            p.n_batch = p.n_ubatch = 512
            p.n_seq_max = n_slots
            if n_threads:
                p.n_threads = p.n_threads_batch = n_threads
            self._ctx = C.llama_init_from_model(self.model.handle, p)
            if not self._ctx:
                raise LlamaError(f"failed to create the draft model's context ({p.n_ctx} cells, {n_slots} sequences)")
        except BaseException:
            self.close()
            raise
        self._mem = C.llama_get_memory(self._ctx)
        self.n_batch = C.llama_n_batch(self._ctx)
        self.n_vocab = self.model.n_vocab
        self._batch = C.llama_batch_init(self.n_batch, 0, 1)
        self._tokens: Dict[int, List[int]] = {i: [] for i in range(n_slots)}  # what each draft sequence holds

    def close(self) -> None:
        if self._ctx:
            C.llama_batch_free(self._batch)
            C.llama_free(self._ctx)
            self._ctx = None
        if self.model is not None:
            self.model.close()
            self.model = None

    def reset(self) -> None:
        """Forgets every draft sequence (after a failed draft step)."""
        C.llama_memory_clear(self._mem, True)
        self._tokens = {i: [] for i in self._tokens}

    def _decode(self, rows) -> Dict[int, int]:
        """Decodes rows (slot, token, pos, wants logits) in batches of n_batch; returns the
        greedy next token of each slot that had a logits row."""
        out: Dict[int, int] = {}
        for i0 in range(0, len(rows), self.n_batch):
            chunk = rows[i0:i0 + self.n_batch]
            b = self._batch
            C.llama_batch_clear(b)
            for i, (sid, tok, pos, logits) in enumerate(chunk):
                b.token[i], b.pos[i], b.n_seq_id[i], b.seq_id[i][0] = tok, pos, 1, sid
                b.logits[i] = 1 if logits else 0
            b.n_tokens = len(chunk)
            if C.llama_decode(self._ctx, b) != 0:
                raise LlamaError("llama_decode of the draft model failed")
            for i, (sid, _, _, logits) in enumerate(chunk):
                if logits:
                    out[sid] = self._argmax(i)
        return out

    def _argmax(self, i: int) -> int:
        ptr = C.llama_get_logits_ith(self._ctx, i)
        return int(np.argmax(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))))

    def propose(self, hist: Dict[int, List[int]], limit: Dict[int, int]) -> Dict[int, List[int]]:
        """Greedy drafts of the draft model after each slot's tokens (see LookupDrafter.propose)."""
        want = {sid: toks for sid, toks in hist.items() if limit[sid] > 0}
        if not want:
            return {}
        rows = []
        for sid, toks in want.items():
            have = self._tokens[sid]
            keep = 0
            n = min(len(have), len(toks) - 1)        # decode at least the last token: its logits
            while keep < n and have[keep] == toks[keep]:
                keep += 1
            if keep < len(have):
                C.llama_memory_seq_rm(self._mem, sid, keep, -1)
            for pos in range(keep, len(toks)):
                rows.append((sid, toks[pos], pos, pos == len(toks) - 1))
            self._tokens[sid] = list(toks)
        nxt = self._decode(rows)
        drafts = {sid: [t] for sid, t in nxt.items()}
        for step in range(1, max(limit[sid] for sid in want)):
            rows = [(sid, d[-1], len(self._tokens[sid]), True) for sid, d in drafts.items() if len(d) < limit[sid]]
            if not rows:
                break
            for sid, tok, _, _ in rows:
                self._tokens[sid].append(tok)
            for sid, t in self._decode(rows).items():
                drafts[sid].append(t)
        return drafts
