"""A NumPy Llama forward pass written from the math, used as the reference for our logits.

Weights are read with the `gguf` package's GGUFReader (quantized tensors dequantized with
gguf.quants), and everything is computed in float64:

    x = E[tokens]
    per layer:  n = rmsnorm(x) * w_attn_norm
                q, k, v = n Wq^T, n Wk^T, n Wv^T            (per head, GQA: n_head / n_head_kv
                q, k = rope(q, pos), rope(k, pos)             query heads share a KV head)
                x = x + softmax(q k^T / sqrt(d) + causal mask) v Wo^T
                m = rmsnorm(x) * w_ffn_norm
                x = x + (silu(m Wgate^T) * (m Wup^T)) Wdown^T
    logits = (rmsnorm(x) * w_out_norm) Wout^T         (Wout = E when output.weight is absent)

RoPE is the GGUF "normal" layout: adjacent pairs (x[2i], x[2i+1]) rotate by
pos * freq_scale * base^(-2i / n_rot) for i < n_rot / 2; dims past n_rot are left alone.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np
import gguf
from gguf import quants as gguf_quants


def _field(reader: gguf.GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


class LlamaRef:
    """Loads a llama GGUF; forward(tokens) gives float64 logits for every position."""

    def __init__(self, path: str):
        r = gguf.GGUFReader(path)
        arch = _field(r, "general.architecture")
        assert arch == "llama", arch
        g = lambda k, d=None: _field(r, f"llama.{k}", d)  # noqa: E731
        self.n_embd = int(g("embedding_length"))
        self.n_layer = int(g("block_count"))
        self.n_head = int(g("attention.head_count"))
        self.n_head_kv = int(g("attention.head_count_kv", self.n_head))
        self.head_dim = int(g("attention.key_length", self.n_embd // self.n_head))
        self.n_rot = int(g("rope.dimension_count", self.head_dim))
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.rope_base = float(g("rope.freq_base", 10000.0))
        factor = g("rope.scaling.factor", None)
        self.freq_scale = 1.0 / float(factor) if factor else 1.0
        self.w: Dict[str, np.ndarray] = {}
        for t in r.tensors:
            self.w[t.name] = self._to_f64(t)
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])
        self.n_vocab = self.w["token_embd.weight"].shape[0]

    @staticmethod
    def _to_f64(t) -> np.ndarray:
        shape = tuple(int(x) for x in reversed(t.shape))  # numpy order: outermost first
        qt = t.tensor_type
        if qt in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            a = np.asarray(t.data)
        else:
            a = gguf_quants.dequantize(np.asarray(t.data), qt)
        return a.astype(np.float64).reshape(shape)

    def _rmsnorm(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def _rope(self, x: np.ndarray, pos: np.ndarray) -> np.ndarray:
        # x: [n_tokens, n_heads, head_dim]
        half = self.n_rot // 2
        inv = self.rope_base ** (-2.0 * np.arange(half) / self.n_rot)
        theta = (pos.astype(np.float64) * self.freq_scale)[:, None] * inv[None, :]  # [n, half]
        cos = np.cos(theta)[:, None, :]
        sin = np.sin(theta)[:, None, :]
        out = x.copy()
        x0 = x[:, :, 0:self.n_rot:2]
        x1 = x[:, :, 1:self.n_rot:2]
        out[:, :, 0:self.n_rot:2] = x0 * cos - x1 * sin
        out[:, :, 1:self.n_rot:2] = x0 * sin + x1 * cos
        return out

    def forward(self, tokens: Sequence[int], positions: Optional[Sequence[int]] = None,
                causal: bool = True, return_hidden: bool = False) -> np.ndarray:
        """Logits [n_tokens, n_vocab] of one sequence (or the final-norm hidden states)."""
        toks = np.asarray(tokens, dtype=np.int64)
        n = len(toks)
        pos = np.arange(n) if positions is None else np.asarray(positions, dtype=np.int64)
        hd, nh, nkv = self.head_dim, self.n_head, self.n_head_kv
        x = self.w["token_embd.weight"][toks]
        mask = np.zeros((n, n))
        if causal:
            mask[pos[None, :] > pos[:, None]] = -np.inf
        for il in range(self.n_layer):
            p = f"blk.{il}."
            h = self._rmsnorm(x, self.w[p + "attn_norm.weight"])
            q = (h @ self.w[p + "attn_q.weight"].T).reshape(n, nh, hd)
            k = (h @ self.w[p + "attn_k.weight"].T).reshape(n, nkv, hd)
            v = (h @ self.w[p + "attn_v.weight"].T).reshape(n, nkv, hd)
            q = self._rope(q, pos)
            k = self._rope(k, pos)
            o = np.empty((n, nh, hd))
            group = nh // nkv
            for hh in range(nh):
                kh = hh // group
                s = q[:, hh, :] @ k[:, kh, :].T / np.sqrt(hd) + mask
                s = s - s.max(axis=-1, keepdims=True)
                a = np.exp(s)
                a /= a.sum(axis=-1, keepdims=True)
                o[:, hh, :] = a @ v[:, kh, :]
            x = x + o.reshape(n, nh * hd) @ self.w[p + "attn_output.weight"].T
            m = self._rmsnorm(x, self.w[p + "ffn_norm.weight"])
            gate = m @ self.w[p + "ffn_gate.weight"].T
            up = m @ self.w[p + "ffn_up.weight"].T
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ self.w[p + "ffn_down.weight"].T
        hidden = self._rmsnorm(x, self.w["output_norm.weight"])
        if return_hidden:
            return hidden
        return hidden @ self.out.T


def rel_err(ours: np.ndarray, ref: np.ndarray) -> float:
    """max |ours - ref| relative to max |ref|."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1e-30))


if __name__ == "__main__":
    import sys
    m = LlamaRef(sys.argv[1])
    toks: List[int] = [int(t) for t in sys.argv[2:]] or [1, 2, 3]
    print(m.forward(toks)[-1][:10])
