"""A float64 NumPy forward of a qwen35 GGUF (Qwen3.5 / 3.6 dense), read with the `gguf` package,
written from the published math rather than from the engine: Gated DeltaNet layers in their
token-by-token (recurrent) form, gated attention layers, SwiGLU FFNs. Used by test_qwen35.py
against transformers' Qwen3_5ForCausalLM.

  DeltaNet:  qkv = silu(causal depthwise conv_4(Wqkv x)); q, k = l2norm per head
             beta = sigmoid(Wb x); g = ssm_a * softplus(Wa x + dt_bias)      (ssm_a = -exp(A_log))
             per value head h (key head h % n_k: the GGUF tiles value heads over key heads):
             M <- exp(g) M;  M <- M + k (beta (v - M^T k))^T;  o = M^T q / sqrt(S)
             out = Wout (rms_norm(o) * ssm_norm * silu(Wz x))
  attention: q | gate = Wq x per head; q, k RMS-normed per head; NeoX rope on the first n_rot dims;
             causal softmax(q k^T / sqrt(hd)) v, times sigmoid(gate); Wo
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import gguf


class Qwen35Ref:
    def __init__(self, path: str):
        r = gguf.GGUFReader(path)
        arch = "qwen35"

        def key(name, default=None):
            f = r.fields.get(f"{arch}.{name}")
            return default if f is None else f.contents()

        self.n_layer = int(key("block_count")) - int(key("nextn_predict_layers", 0))
        self.n_head, self.n_head_kv = int(key("attention.head_count")), int(key("attention.head_count_kv"))
        self.hd = int(key("attention.key_length"))
        self.n_rot = int(key("rope.dimension_count"))
        self.base = float(key("rope.freq_base"))
        self.eps = float(key("attention.layer_norm_rms_epsilon"))
        self.S, self.H, self.Hk = int(key("ssm.state_size")), int(key("ssm.time_step_rank")), int(key("ssm.group_count"))
        self.d_conv = int(key("ssm.conv_kernel"))
        every = int(key("full_attention_interval", 4))
        self.recurrent = [(il + 1) % every != 0 for il in range(self.n_layer)]
        self.w = {t.name: np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float64)
                  .reshape([int(n) for n in reversed(t.shape)]) for t in r.tensors}

    def _rms(self, x, w=None):
        y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + self.eps)
        return y if w is None else y * w

    def _delta_net(self, p, h):
        S, H, Hk, T = self.S, self.H, self.Hk, h.shape[0]
        kd = S * Hk
        qkv = h @ self.w[p + "attn_qkv.weight"].T                       # [T, ch]
        z = (h @ self.w[p + "attn_gate.weight"].T).reshape(T, H, S)
        beta = 1.0 / (1.0 + np.exp(-(h @ self.w[p + "ssm_beta.weight"].T)))
        a = h @ self.w[p + "ssm_alpha.weight"].T + self.w[p + "ssm_dt.bias"]
        g = self.w[p + "ssm_a"] * np.log1p(np.exp(a))                    # [T, H] log decay
        cw = self.w[p + "ssm_conv1d.weight"]                              # [ch, d_conv]
        xc = np.concatenate([np.zeros((self.d_conv - 1, qkv.shape[1])), qkv])
        conv = np.stack([(xc[t:t + self.d_conv].T * cw).sum(axis=1) for t in range(T)])
        conv = conv / (1.0 + np.exp(-conv))                               # silu
        q = conv[:, :kd].reshape(T, Hk, S)
        k = conv[:, kd:2 * kd].reshape(T, Hk, S)
        v = conv[:, 2 * kd:].reshape(T, H, S)
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
        o = np.zeros((T, H, S))
        for hh in range(H):
            M = np.zeros((S, S))                                          # [key dim, value dim]
            for t in range(T):
                qt, kt = q[t, hh % Hk], k[t, hh % Hk]
                M = M * np.exp(g[t, hh])
                M = M + np.outer(kt, beta[t, hh] * (v[t, hh] - M.T @ kt))
                o[t, hh] = M.T @ qt / np.sqrt(S)
        y = self._rms(o, self.w[p + "ssm_norm.weight"]) * (z / (1.0 + np.exp(-z)))
        return y.reshape(T, H * S) @ self.w[p + "ssm_out.weight"].T

    def _rope(self, x, pos):
        n = self.n_rot // 2
        theta = pos[:, None] * self.base ** (-2.0 * np.arange(n) / self.n_rot)   # [T, n]
        c, s = np.cos(theta)[:, None], np.sin(theta)[:, None]
        y = x.copy()
        x0, x1 = x[..., :n], x[..., n:2 * n]
        y[..., :n], y[..., n:2 * n] = x0 * c - x1 * s, x0 * s + x1 * c
        return y

    def _attention(self, p, h, pos):
        T, hd, nh, nkv = h.shape[0], self.hd, self.n_head, self.n_head_kv
        qg = (h @ self.w[p + "attn_q.weight"].T).reshape(T, nh, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:].reshape(T, nh * hd)
        k = (h @ self.w[p + "attn_k.weight"].T).reshape(T, nkv, hd)
        v = (h @ self.w[p + "attn_v.weight"].T).reshape(T, nkv, hd)
        q = self._rope(self._rms(q, self.w[p + "attn_q_norm.weight"]), pos)
        k = self._rope(self._rms(k, self.w[p + "attn_k_norm.weight"]), pos)
        o = np.zeros((T, nh, hd))
        mask = np.triu(np.full((T, T), -np.inf), 1)
        for hh in range(nh):
            kh, vh = k[:, hh // (nh // nkv)], v[:, hh // (nh // nkv)]
            s = q[:, hh] @ kh.T / np.sqrt(hd) + mask
            e = np.exp(s - s.max(axis=1, keepdims=True))
            o[:, hh] = (e / e.sum(axis=1, keepdims=True)) @ vh
        o = o.reshape(T, nh * hd) / (1.0 + np.exp(-gate))
        return o @ self.w[p + "attn_output.weight"].T

    def forward(self, tokens: Sequence[int]) -> np.ndarray:
        """Logits [len(tokens), n_vocab] of one sequence starting at position 0."""
        x = self.w["token_embd.weight"][np.asarray(tokens)]
        pos = np.arange(len(tokens), dtype=np.float64)
        for il in range(self.n_layer):
            p = f"blk.{il}."
            h = self._rms(x, self.w[p + "attn_norm.weight"])
            x = x + (self._delta_net(p, h) if self.recurrent[il] else self._attention(p, h, pos))
            m = self._rms(x, self.w[p + "post_attention_norm.weight"])
            gt, up = m @ self.w[p + "ffn_gate.weight"].T, m @ self.w[p + "ffn_up.weight"].T
            x = x + (gt / (1.0 + np.exp(-gt)) * up) @ self.w[p + "ffn_down.weight"].T
        out = self.w.get("output.weight", self.w["token_embd.weight"])
        return self._rms(x, self.w["output_norm.weight"]) @ out.T
