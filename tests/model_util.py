"""Small helpers the model tests share: load a model, make a context, decode rows, read logits."""
from __future__ import annotations

import ctypes
from typing import List, Optional, Sequence, Tuple

import numpy as np

import llama_py.llama_cpp as L

# One batch row: (token, pos or None, seq ids, output flag)
Row = Tuple[int, Optional[int], Sequence[int], bool]


class Model:
    """A loaded model (freed on close / exit)."""

    def __init__(self, path, **params):
        p = L.llama_model_default_params()
        for k, v in params.items():
            setattr(p, k, v)
        self.params = p
        self.ptr = L.llama_model_load_from_file(str(path).encode(), p)
        if not self.ptr:
            raise RuntimeError(f"cannot load {path}")
        self.vocab = L.llama_model_get_vocab(self.ptr)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        self.n_embd = L.llama_model_n_embd(self.ptr)

    def close(self):
        if self.ptr:
            L.llama_model_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Ctx:
    """A context on a Model; decode() takes rows, logits() returns copies as NumPy arrays."""

    def __init__(self, model: Model, **params):
        cp = L.llama_context_default_params()
        for k, v in params.items():
            setattr(cp, k, v)
        self.model = model
        self.ptr = L.llama_init_from_model(model.ptr, cp)
        if not self.ptr:
            raise RuntimeError("cannot create the context")
        self.mem = L.llama_get_memory(self.ptr)
        self.n_seq_max = L.llama_n_seq_max(self.ptr)

    def close(self):
        if self.ptr:
            L.llama_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def decode_rows(self, rows: Sequence[Row], with_pos: bool = True) -> int:
        """Decodes rows in one llama_batch; returns llama_decode's code."""
        n = len(rows)
        b = L.llama_batch_init(max(n, 1), 0, max(self.n_seq_max, 1))
        try:
            b.n_tokens = n
            for i, (tok, pos, seqs, out) in enumerate(rows):
                b.token[i] = tok
                b.pos[i] = 0 if pos is None else pos
                b.n_seq_id[i] = len(seqs)
                for j, s in enumerate(seqs):
                    b.seq_id[i][j] = s
                b.logits[i] = 1 if out else 0
            if not with_pos:
                b2 = L.llama_batch(b.n_tokens, b.token, b.embd, None, b.n_seq_id, b.seq_id, b.logits)
                return L.llama_decode(self.ptr, b2)
            return L.llama_decode(self.ptr, b)
        finally:
            L.llama_batch_free(b)

    def decode_seq(self, tokens: Sequence[int], start: int = 0, seq: int = 0, all_logits: bool = True) -> int:
        """Decodes tokens of one sequence at positions start, start+1, ..."""
        rows = [(t, start + i, [seq], all_logits or i == len(tokens) - 1) for i, t in enumerate(tokens)]
        return self.decode_rows(rows)

    def logits(self, i: int) -> Optional[np.ndarray]:
        p = L.llama_get_logits_ith(self.ptr, i)
        if not p:
            return None
        return np.ctypeslib.as_array(p, shape=(self.model.n_vocab,)).astype(np.float64)

    def embedding(self, i: int) -> Optional[np.ndarray]:
        p = L.llama_get_embeddings_ith(self.ptr, i)
        if not p:
            return None
        return np.ctypeslib.as_array(p, shape=(self.model.n_embd,)).astype(np.float64)

    def embedding_seq(self, s: int) -> Optional[np.ndarray]:
        p = L.llama_get_embeddings_seq(self.ptr, s)
        if not p:
            return None
        return np.ctypeslib.as_array(p, shape=(self.model.n_embd,)).astype(np.float64)

    def all_logits(self, n: int) -> np.ndarray:
        return np.stack([self.logits(i) for i in range(n)])

    def pos_max(self, s: int = 0) -> int:
        return L.llama_memory_seq_pos_max(self.mem, s)

    def pos_min(self, s: int = 0) -> int:
        return L.llama_memory_seq_pos_min(self.mem, s)


class LogCapture:
    """Collects library log lines while active (restores the default logger on exit)."""

    def __init__(self):
        self.lines: List[str] = []
        self._cb = L.llama_log_callback(self._on_log)

    def _on_log(self, level, text, user_data):
        self.lines.append(text.decode("utf-8", "replace"))

    def __enter__(self):
        L.llama_log_set(self._cb, None)
        return self

    def __exit__(self, *exc):
        L.llama_log_set(L.llama_log_callback(), None)

    def text(self) -> str:
        return "".join(self.lines)


def tokens_of(model: Model, text: str, add_special: bool = True) -> List[int]:
    """Tokenizes text with the model's vocabulary."""
    data = text.encode("utf-8")
    buf = (L.llama_token * (len(data) + 8))()
    n = L.llama_tokenize(model.vocab, data, len(data), buf, len(buf), add_special, False)
    assert n >= 0, n
    return list(buf[:n])


def piece_of(model: Model, tok: int) -> str:
    buf = ctypes.create_string_buffer(256)
    n = L.llama_token_to_piece(model.vocab, tok, buf, 256, 0, False)
    return buf.raw[:max(n, 0)].decode("utf-8", "replace")
