"""A NumPy forward pass written from the math, used as the reference for our logits: Llama and
the architectures beside it (qwen2: Q/K/V biases; qwen3: per-head RMS norm of Q and K; gemma3:
embeddings * sqrt(n_embd), norms after attention and FFN too, GeGLU, sliding window on five of
six layers with their own rope base; gemma2: gemma3 without QK-norm, a window on even layers,
scaled scores soft-capped as c * tanh(s / c) before the mask, logits soft-capped likewise;
phi3: fused QKV and gate/up, LongRoPE factors; gemma4: gemma3's blocks with norms that
multiply by w as stored, no query scaling, V heads RMS-normed, V = K where a layer has no V
weight, sliding and full layers with their own head sizes / KV heads / rope (the full layers'
rope_freqs leave most pairs unrotated), the last attention.shared_kv_layers layers attending over
the KV of the last earlier layer of their kind, per-layer embeddings
    ple = (rmsnorm(x Wple^T / sqrt(n_embd) per layer) * w + Eple[tokens] * sqrt(n_pl)) / sqrt(2)
    after each block's FFN:  x = x + rmsnorm((gelu(x Wgate^T) * ple[layer]) Wproj^T) * w
and each block's output times its layer_output_scale (26B-A4B: experts beside the dense MLP,
_gemma4_moe); all of these rotate NeoX pairs
(i, i + n_rot/2); qwen3moe, and llama with expert_count > 0 (Mixtral): the FFN is a mixture of
experts, below).
The Llama case:

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

Mixture of experts: p = softmax(m Wrouter^T) (sigmoid with expert_gating_func 2); per token the
expert_used_count largest p (ties: lower index), their weights divided by their sum unless
expert_weights_norm is false; the FFN is sum_j w_j (silu(m G_j^T) * (m U_j^T)) D_j^T over the
chosen experts' matrices (ffn_{gate,up,down}_exps: the experts stacked in the first axis), the
weights times expert_weights_scale when set; qwen2moe (weights not renormalised by default) adds a
shared expert's SwiGLU FFN times sigmoid(m w_shexp_gate) (granitemoe's shared expert: ungated).
granitemoe: embeddings times embedding_scale, QK^T times attention.scale, each block's attention
and FFN outputs times residual_scale before the residual add, logits divided by logit_scale.

gpt-oss: Q/K/V/O biases; each head's sink logit s_h joins its softmax denominator
(a_ij = exp(z_ij) / (sum_j exp(z_ij) + exp(s_h))); a window on even layers; the FFN norm is
stored as post_attention_norm; router logits l = m Wr^T + br, the top-k of l, w = softmax over
those k; expert j: g = min(m G_j^T + bg_j, 7), u = clip(m U_j^T + bu_j, -7, 7),
y_j = ((u + 1) * g * sigmoid(1.702 g)) D_j^T + bd_j. YaRN rope (rope.scaling.type yarn): per pair
i, the frequency base^(-2i/d) blends with it / factor by a ramp between the correction dims
floor(d ln(L / (32 2 pi)) / (2 ln base)) and ceil(d ln(L / (2 pi)) / (2 ln base)) (L the original
context), cos and sin times 0.1 ln(factor) + 1.

RoPE is the GGUF "normal" layout: adjacent pairs (x[2i], x[2i+1]) rotate by
pos * freq_scale * base^(-2i / n_rot) for i < n_rot / 2; dims past n_rot are left alone.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np
import gguf
from gguf import quants as gguf_quants


ARCHS = ("llama", "qwen2", "qwen3", "gemma3", "phi3", "gemma2", "qwen3moe", "gemma4", "qwen2moe", "gpt-oss", "granitemoe",
         "olmoe")


def _field(reader: gguf.GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


class LlamaRef:
    """Loads a GGUF of a supported architecture; forward(tokens) gives float64 logits for every
    position. n_ctx (LongRoPE only) picks the long or short factors as a context of that size
    would."""

    def __init__(self, path: str, n_ctx: Optional[int] = None, storage=np.float64):
        r = gguf.GGUFReader(path)
        arch = _field(r, "general.architecture")
        assert arch in ARCHS, arch
        self.arch = arch
        g = lambda k, d=None: _field(r, f"{arch}.{k}", d)  # noqa: E731
        self.n_embd = int(g("embedding_length"))
        self.n_layer = int(g("block_count"))
        self.n_head = int(g("attention.head_count"))
        nkv = g("attention.head_count_kv", self.n_head)
        self.n_head_kv = int(nkv[0] if isinstance(nkv, list) else nkv)
        self.head_dim = int(g("attention.key_length", self.n_embd // self.n_head))
        self.n_rot = int(g("rope.dimension_count", self.head_dim))
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.rope_base = float(g("rope.freq_base", 10000.0))
        factor = g("rope.scaling.factor", None)
        self.freq_scale = 1.0 / float(factor) if factor else 1.0
        n_ctx_train = int(g("context_length"))
        self.neox = arch not in ("llama", "granitemoe")
        # sliding window: gemma3 five local layers of six, gemma2 the even ones, phi3 all layers
        # when set
        self.n_swa = int(g("attention.sliding_window", 4096 if arch == "gemma2" else 0) or 0)
        period = {"gemma3": lambda: int(g("attention.sliding_window_pattern", 6)), "gemma2": lambda: 2,
                  "gpt-oss": lambda: 2}.get(arch, lambda: 0)()
        self.swa = [self.n_swa > 0 and (period == 0 or (il + 1) % period != 0) for il in range(self.n_layer)]
        self.rope_base_swa = float(g("rope.freq_base_swa", 10000.0)) if arch in ("gemma3", "gemma4") else None
        # Gemma 2 27B (46 layers) scales queries by (n_embd / n_head)^-1/2, the others by head size
        qs = self.n_embd / self.n_head if arch == "gemma2" and self.n_layer == 46 else self.head_dim
        self.attn_scale = 1.0 if arch == "gemma4" else 1.0 / np.sqrt(qs)
        self.embd_scale = np.sqrt(self.n_embd) if arch in ("gemma3", "gemma2", "gemma4") else 1.0
        # granitemoe's multipliers: embeddings, QK^T (in place of 1/sqrt(head size)), both residual
        # branches, and the logits (divided)
        self.resid_scale, self.logit_div = 1.0, 1.0
        if arch == "granitemoe":
            self.attn_scale = float(g("attention.scale", 0.0) or 0.0) or self.attn_scale
            self.embd_scale = float(g("embedding_scale", 0.0) or 0.0) or 1.0
            self.resid_scale = float(g("residual_scale", 0.0) or 0.0) or 1.0
            self.logit_div = float(g("logit_scale"))
        self.attn_softcap = float(g("attn_logit_softcapping", 50.0)) if arch == "gemma2" else 0.0
        self.final_softcap = float(g("final_logit_softcapping", 30.0 if arch == "gemma2" else 0.0)) \
            if arch in ("gemma2", "gemma4") else 0.0
        # per layer: KV heads (a number or one per layer), head size and rope dims (gemma4's
        # sliding layers have their own), the layer whose KV each attends over
        self.nkv_l = [int(v) for v in nkv] if isinstance(nkv, list) else [int(nkv)] * self.n_layer
        self.hd_l, self.rot_l = [self.head_dim] * self.n_layer, [self.n_rot] * self.n_layer
        self.kv_src = list(range(self.n_layer))
        self.n_pl = 0
        if arch == "gemma4":
            self.swa = [self.n_swa > 0 and bool(b) for b in g("attention.sliding_window_pattern")]
            hd_swa = int(g("attention.key_length_swa", self.head_dim))
            rot_swa = int(g("rope.dimension_count_swa", hd_swa))
            self.hd_l = [hd_swa if s else self.head_dim for s in self.swa]
            self.rot_l = [rot_swa if s else self.n_rot for s in self.swa]
            first = self.n_layer - int(g("attention.shared_kv_layers", 0))
            for il in range(first, self.n_layer):
                self.kv_src[il] = max(j for j in range(first) if self.swa[j] == self.swa[il])
            self.n_pl = int(g("embedding_length_per_layer_input", 0))
        self.n_expert_used = int(g("expert_used_count", 0) or 0)
        self.expert_norm = bool(g("expert_weights_norm", arch not in ("qwen2moe", "olmoe")))
        self.expert_sigmoid = int(g("expert_gating_func", 1) or 1) == 2
        self.expert_scale = float(g("expert_weights_scale", 0.0) or 0.0) or 1.0
        self.w: Dict[str, np.ndarray] = {}
        # storage float32 halves the memory of big models and loses nothing (dequantized and F16
        # values are float32 numbers); products still run in float64 (NumPy promotes per matmul)
        for t in r.tensors:
            self.w[t.name] = self._to_f64(t).astype(storage, copy=False)
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])
        self.n_vocab = self.w["token_embd.weight"].shape[0]
        self.freq_factors = self.w.get("rope_freqs.weight")
        self.mscale = 1.0
        self.yarn_ramp = None
        if g("rope.scaling.type", None) == "yarn" and factor:
            orig = int(g("rope.scaling.original_context_length", n_ctx_train))
            d = self.n_rot

            def corr(beta):
                return d * np.log(orig / (beta * 2 * np.pi)) / (2 * np.log(self.rope_base))
            lo, hi = max(0.0, np.floor(corr(32.0))), min(d - 1.0, np.ceil(corr(1.0)))
            # 1: the pair keeps its own frequency (fast pairs), 0: divided by factor
            self.yarn_ramp = 1.0 - np.clip((np.arange(d // 2) - lo) / max(hi - lo, 0.001), 0.0, 1.0)
            self.mscale = 0.1 * np.log(float(factor)) + 1.0
        if "rope_factors_long.weight" in self.w:
            orig = int(g("rope.scaling.original_context_length", n_ctx_train))
            long = (n_ctx if n_ctx is not None else n_ctx_train) > orig
            self.freq_factors = self.w["rope_factors_long.weight" if long else "rope_factors_short.weight"]
            s = n_ctx_train / orig
            self.mscale = float(g("rope.scaling.attn_factor",
                                  np.sqrt(1 + np.log(s) / np.log(orig)) if s > 1 else 1.0))

    @staticmethod
    def _to_f64(t) -> np.ndarray:
        shape = tuple(int(x) for x in reversed(t.shape))  # numpy order: outermost first
        qt = t.tensor_type
        if qt in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            a = np.asarray(t.data)
        else:
            a = gguf_quants.dequantize(np.asarray(t.data), qt)
        return a.astype(np.float64).reshape(shape)

    def _rmsnorm(self, x: np.ndarray, w: Optional[np.ndarray]) -> np.ndarray:
        n = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return n if w is None else n * w

    def _rope(self, x: np.ndarray, pos: np.ndarray, il: int = 0, shift: bool = False) -> np.ndarray:
        # x: [n_tokens, n_heads, head_dim]
        n_rot = self.rot_l[il]
        half = n_rot // 2
        base, fscale, factors = self.rope_base, self.freq_scale, self.freq_factors
        if self.swa[il] and self.rope_base_swa is not None:
            base, fscale, factors = self.rope_base_swa, 1.0, None   # local layers: their own base only
        inv = base ** (-2.0 * np.arange(half) / n_rot)
        if factors is not None:
            inv = inv / factors
        if self.yarn_ramp is not None:
            inv = inv * (self.yarn_ramp + (1.0 - self.yarn_ramp) * fscale)
            fscale = 1.0
        theta = (pos.astype(np.float64) * fscale)[:, None] * inv[None, :]  # [n, half]
        m = 1.0 if shift else self.mscale
        cos = np.cos(theta)[:, None, :] * m
        sin = np.sin(theta)[:, None, :] * m
        out = x.copy()
        if self.neox:    # pairs (i, i + n_rot/2)
            x0, x1 = x[:, :, 0:half], x[:, :, half:n_rot]
            out[:, :, 0:half] = x0 * cos - x1 * sin
            out[:, :, half:n_rot] = x0 * sin + x1 * cos
        else:            # adjacent pairs (2i, 2i+1)
            x0 = x[:, :, 0:n_rot:2]
            x1 = x[:, :, 1:n_rot:2]
            out[:, :, 0:n_rot:2] = x0 * cos - x1 * sin
            out[:, :, 1:n_rot:2] = x0 * sin + x1 * cos
        return out

    def new_cache(self) -> "RefCache":
        """An empty per-sequence KV cache for step()."""
        return RefCache(self)

    def _qkv(self, p: str, h: np.ndarray, il: int = 0):
        """q, k, v of layer il ([n, heads, head size]); k and v None where the layer reads an
        earlier layer's KV (gemma4)."""
        w = self.w
        n = len(h)
        hd, nkv_h = self.hd_l[il], self.nkv_l[il]
        nq, nkv = self.n_head * hd, nkv_h * hd
        if self.kv_src[il] != il:
            q = (h @ w[p + "attn_q.weight"].T).reshape(n, self.n_head, hd)
            return self._rmsnorm(q, w[p + "attn_q_norm.weight"]), None, None
        if p + "attn_qkv.weight" in w:
            qkv = h @ w[p + "attn_qkv.weight"].T
            q, k, v = qkv[:, :nq], qkv[:, nq:nq + nkv], qkv[:, nq + nkv:]
        else:
            q, k = (h @ w[p + f"attn_{x}.weight"].T for x in "qk")
            v = h @ w[p + "attn_v.weight"].T if p + "attn_v.weight" in w else k   # gemma4: V = K
        q = q + w.get(p + "attn_q.bias", 0.0)
        k = k + w.get(p + "attn_k.bias", 0.0)
        v = v + w.get(p + "attn_v.bias", 0.0)
        if p + "attn_q_norm.weight" in w and w[p + "attn_q_norm.weight"].size == nq != hd:
            # olmoe: over each token's whole Q and K vectors, before the split into heads
            q = self._rmsnorm(q, w[p + "attn_q_norm.weight"])
            k = self._rmsnorm(k, w[p + "attn_k_norm.weight"])
        q = q.reshape(n, self.n_head, hd)
        k = k.reshape(n, nkv_h, hd)
        v = v.reshape(n, nkv_h, hd)
        if p + "attn_q_norm.weight" in w and w[p + "attn_q_norm.weight"].size == hd:
            q = self._rmsnorm(q, w[p + "attn_q_norm.weight"])
            k = self._rmsnorm(k, w[p + "attn_k_norm.weight"])
        if self.arch == "gemma4":
            v = self._rmsnorm(v, None)
        return q, k, v

    @staticmethod
    def _gelu(x: np.ndarray) -> np.ndarray:   # tanh approximation
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))

    def _ple_inputs(self, toks: np.ndarray, x: np.ndarray) -> np.ndarray:
        """gemma4's per-layer inputs [n, n_layer, n_pl] from the tokens and scaled embeddings x."""
        w, n, npl = self.w, len(toks), self.n_pl
        tok = w["per_layer_token_embd.weight"][toks].reshape(n, self.n_layer, npl) * np.sqrt(npl)
        proj = (x @ w["per_layer_model_proj.weight"].T / np.sqrt(self.n_embd)).reshape(n, self.n_layer, npl)
        return (self._rmsnorm(proj, w["per_layer_proj_norm.weight"]) + tok) / np.sqrt(2.0)

    def _moe(self, p: str, m: np.ndarray) -> np.ndarray:
        w = self.w
        logits = m @ w[p + "ffn_gate_inp.weight"].T                     # [n, n_expert]
        if self.expert_sigmoid:
            probs = 1.0 / (1.0 + np.exp(-logits))
        else:
            e = np.exp(logits - logits.max(axis=-1, keepdims=True))
            probs = e / e.sum(axis=-1, keepdims=True)
        out = np.zeros_like(m)
        for t in range(m.shape[0]):
            chosen = np.argsort(-probs[t], kind="stable")[:self.n_expert_used]
            wt = probs[t, chosen]
            if self.expert_norm:
                wt = wt / wt.sum()
            wt = wt * self.expert_scale
            for e_id, we in zip(chosen, wt):
                gate = m[t] @ w[p + "ffn_gate_exps.weight"][e_id].T
                up = m[t] @ w[p + "ffn_up_exps.weight"][e_id].T
                out[t] += we * (((gate / (1.0 + np.exp(-gate))) * up) @ w[p + "ffn_down_exps.weight"][e_id].T)
        if p + "ffn_up_shexp.weight" in w:   # the shared expert, scaled by sigmoid(its gate) if any
            gate, up = m @ w[p + "ffn_gate_shexp.weight"].T, m @ w[p + "ffn_up_shexp.weight"].T
            sh = ((gate / (1.0 + np.exp(-gate))) * up) @ w[p + "ffn_down_shexp.weight"].T
            if p + "ffn_gate_inp_shexp.weight" in w:
                sh = sh / (1.0 + np.exp(-(m @ w[p + "ffn_gate_inp_shexp.weight"].reshape(-1))))[:, None]
            out += sh
        return out

    def _gemma4_moe(self, p: str, h: np.ndarray, d: np.ndarray) -> np.ndarray:
        """gemma4 26B-A4B: the experts on the attention output h beside the dense MLP's output d:
        p = softmax(Wr (rmsnorm(h) * scale / sqrt(n_embd))), the top-k renormalized and times the
        per-expert scale; experts gelu(gate) * up on rmsnorm(h) * w_pre2; post-norms on both."""
        w = self.w
        r = self._rmsnorm(h, None) * w[p + "ffn_gate_inp.scale"] / np.sqrt(self.n_embd)
        logits = r @ w[p + "ffn_gate_inp.weight"].T
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = e / e.sum(axis=-1, keepdims=True)
        m = self._rmsnorm(h, w[p + "pre_ffw_norm_2.weight"])
        gu_w, down_w = w[p + "ffn_gate_up_exps.weight"], w[p + "ffn_down_exps.weight"]
        ff = gu_w.shape[1] // 2
        y = np.zeros_like(h)
        for t in range(h.shape[0]):
            chosen = np.argsort(-probs[t], kind="stable")[:self.n_expert_used]
            wt = probs[t, chosen] / probs[t, chosen].sum() * w[p + "ffn_down_exps.scale"][chosen]
            for e_id, we in zip(chosen, wt):
                gu = m[t] @ gu_w[e_id].T
                y[t] += we * ((self._gelu(gu[:ff]) * gu[ff:]) @ down_w[e_id].T)
        return self._rmsnorm(d, w[p + "post_ffw_norm_1.weight"]) + self._rmsnorm(y, w[p + "post_ffw_norm_2.weight"])

    def _gpt_oss_moe(self, p: str, m: np.ndarray) -> np.ndarray:
        w = self.w
        logits = m @ w[p + "ffn_gate_inp.weight"].T + w[p + "ffn_gate_inp.bias"]
        out = np.zeros_like(m)
        for t in range(m.shape[0]):
            chosen = np.argsort(-logits[t], kind="stable")[:self.n_expert_used]
            e = np.exp(logits[t, chosen] - logits[t, chosen].max())
            for e_id, we in zip(chosen, e / e.sum()):
                g = np.minimum(m[t] @ w[p + "ffn_gate_exps.weight"][e_id].T + w[p + "ffn_gate_exps.bias"][e_id], 7.0)
                u = np.clip(m[t] @ w[p + "ffn_up_exps.weight"][e_id].T + w[p + "ffn_up_exps.bias"][e_id], -7.0, 7.0)
                y = ((u + 1.0) * g / (1.0 + np.exp(-1.702 * g))) @ w[p + "ffn_down_exps.weight"][e_id].T
                out[t] += we * (y + w[p + "ffn_down_exps.bias"][e_id])
        return out

    def _ffn(self, p: str, m: np.ndarray) -> np.ndarray:
        w = self.w
        if self.arch == "gpt-oss":
            return self._gpt_oss_moe(p, m)
        if p + "ffn_gate_inp.weight" in w and self.arch != "gemma4":
            return self._moe(p, m)
        if p + "ffn_gate.weight" in w:
            gate, up = m @ w[p + "ffn_gate.weight"].T, m @ w[p + "ffn_up.weight"].T
        else:   # phi3: gate and up rows in one tensor, gate first
            gu = m @ w[p + "ffn_up.weight"].T
            gate, up = gu[:, :gu.shape[1] // 2], gu[:, gu.shape[1] // 2:]
        if self.arch in ("gemma3", "gemma2", "gemma4"):
            act = self._gelu(gate)
        else:
            act = gate / (1.0 + np.exp(-gate))
        return (act * up) @ w[p + "ffn_down.weight"].T

    def step(self, cache: "RefCache", tokens: Sequence[int], positions: Sequence[int],
             causal: bool = True, return_hidden: bool = False) -> np.ndarray:
        """Runs new tokens of one sequence against its cache (then appends them to it).

        Each new token attends to every cached and new entry at a position <= its own (and,
        in sliding-window layers, less than n_swa positions back)."""
        toks = np.asarray(tokens, dtype=np.int64)
        pos = np.asarray(positions, dtype=np.int64)
        n = len(toks)
        nh = self.n_head
        all_pos = np.concatenate([cache.pos, pos])
        mask = np.zeros((n, len(all_pos)))
        if causal:
            mask[all_pos[None, :] > pos[:, None]] = -np.inf
        mask_swa = mask.copy()
        if self.n_swa:
            mask_swa[np.abs(pos[:, None] - all_pos[None, :]) >= self.n_swa] = -np.inf
        x = self.w["token_embd.weight"][toks].astype(np.float64) * self.embd_scale
        w = self.w
        ple = self._ple_inputs(toks, x) if self.n_pl else None
        for il in range(self.n_layer):
            p = f"blk.{il}."
            hd, nkv = self.hd_l[il], self.nkv_l[il]
            h = self._rmsnorm(x, w[p + "attn_norm.weight"])
            q, k, v = self._qkv(p, h, il)
            q = self._rope(q, pos, il)
            if k is None:   # the source layer ran earlier in this step: its cache holds these tokens
                K, V = cache.k[self.kv_src[il]], cache.v[self.kv_src[il]]
            else:
                K = np.concatenate([cache.k[il], self._rope(k, pos, il)])
                V = np.concatenate([cache.v[il], v])
            cache.k[il], cache.v[il] = K, V
            o = np.empty((n, nh, hd))
            group = nh // nkv
            msk = mask_swa if self.swa[il] else mask
            for hh in range(nh):
                kh = hh // group
                s = q[:, hh, :] @ K[:, kh, :].T * self.attn_scale
                if self.attn_softcap:
                    s = self.attn_softcap * np.tanh(s / self.attn_softcap)
                s = s + msk
                sink = w[p + "attn_sinks.weight"][hh] if p + "attn_sinks.weight" in w else -np.inf
                top = np.maximum(s.max(axis=-1, keepdims=True), sink)
                a = np.exp(s - top)
                a /= a.sum(axis=-1, keepdims=True) + np.exp(sink - top)
                o[:, hh, :] = a @ V[:, kh, :]
            att = o.reshape(n, nh * hd) @ w[p + "attn_output.weight"].T + w.get(p + "attn_output.bias", 0.0)
            if p + "post_attention_norm.weight" in w and self.arch != "gpt-oss":
                att = self._rmsnorm(att, w[p + "post_attention_norm.weight"])
            x = x + att * self.resid_scale
            ffn_norm = w[p + ("post_attention_norm.weight" if self.arch == "gpt-oss" else "ffn_norm.weight")]
            f = self._ffn(p, self._rmsnorm(x, ffn_norm))
            if self.arch == "gemma4" and p + "ffn_gate_inp.weight" in w:
                f = self._gemma4_moe(p, x, f)
            if p + "post_ffw_norm.weight" in w:
                f = self._rmsnorm(f, w[p + "post_ffw_norm.weight"])
            x = x + f * self.resid_scale
            if ple is not None:
                t = (self._gelu(x @ w[p + "inp_gate.weight"].T) * ple[:, il, :]) @ w[p + "proj.weight"].T
                x = x + self._rmsnorm(t, w[p + "post_norm.weight"])
            if p + "layer_output_scale.weight" in w:
                x = x * w[p + "layer_output_scale.weight"][0]
        cache.pos = all_pos
        hidden = self._rmsnorm(x, w["output_norm.weight"])
        if return_hidden:
            return hidden
        logits = hidden @ self.out.T / self.logit_div
        if self.final_softcap:
            logits = self.final_softcap * np.tanh(logits / self.final_softcap)
        return logits

    def forward(self, tokens: Sequence[int], positions: Optional[Sequence[int]] = None,
                causal: bool = True, return_hidden: bool = False) -> np.ndarray:
        """Logits [n_tokens, n_vocab] of one sequence from an empty cache (or the final-norm
        hidden states with return_hidden)."""
        pos = np.arange(len(tokens)) if positions is None else positions
        return self.step(self.new_cache(), tokens, pos, causal=causal, return_hidden=return_hidden)


ModelRef = LlamaRef


class RefCache:
    """The KV cache of one sequence: per layer the rotated keys and the values, and positions.

    rm / add / div follow llama_memory_seq_rm / _seq_add / _seq_div: moving an entry by delta
    positions rotates its key by delta more (rotations compose), and entries moved below 0 go."""

    def __init__(self, model: LlamaRef):
        self.model = model
        self.k: List[np.ndarray] = [np.zeros((0, model.nkv_l[il], model.hd_l[il])) for il in range(model.n_layer)]
        self.v: List[np.ndarray] = [a.copy() for a in self.k]
        self.pos = np.zeros(0, dtype=np.int64)

    def copy(self) -> "RefCache":
        c = RefCache(self.model)
        c.k = [a.copy() for a in self.k]
        c.v = [a.copy() for a in self.v]
        c.pos = self.pos.copy()
        return c

    def _keep(self, sel: np.ndarray) -> None:
        self.k = [a[sel] for a in self.k]
        self.v = [a[sel] for a in self.v]
        self.pos = self.pos[sel]

    @staticmethod
    def _range(p0: int, p1: int):
        return (0 if p0 < 0 else p0), (np.iinfo(np.int64).max if p1 < 0 else p1)

    def rm(self, p0: int, p1: int) -> None:
        p0, p1 = self._range(p0, p1)
        self._keep(~((self.pos >= p0) & (self.pos < p1)))

    def _move(self, sel: np.ndarray, new_pos: np.ndarray) -> None:
        delta = np.where(sel, new_pos - self.pos, 0)
        self.k = [self.model._rope(a, delta, il, shift=True) for il, a in enumerate(self.k)]
        self.pos = np.where(sel, new_pos, self.pos)
        self._keep(self.pos >= 0)

    def add(self, p0: int, p1: int, delta: int) -> None:
        p0, p1 = self._range(p0, p1)
        sel = (self.pos >= p0) & (self.pos < p1)
        self._move(sel, self.pos + delta)

    def div(self, p0: int, p1: int, d: int) -> None:
        p0, p1 = self._range(p0, p1)
        sel = (self.pos >= p0) & (self.pos < p1)
        self._move(sel, self.pos // d)


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
