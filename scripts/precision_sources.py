#!/usr/bin/env python3
"""Where do quantized-engine logits lose top-1 agreement with the float64 reference? Emulates, in
NumPy on top of tests/llama_ref.py, one rounding source of an int8 engine at a time and counts the
positions whose argmax it flips (numbers for a closing note, not a test):

  lm     the lm head's activations quantized as its weight type's vec_dot_type (Q8_0 weights:
         Q8_0, blocks of 32, scale amax/127 as F16), everything else exact
  lm16   the same with int16 activations (blocks of 32, scale amax/32767 as F16)
  lmf16  the lm head's activations rounded to F16
  mm     every layer matmul's activations quantized as the engine does (Q8_0 for the legacy
         types; since session 7 Q8_1 - blocks of 32, F32 scale - for Q4_K / Q5_K / Q6_K, Q8_K for
         Q2_K / Q3_K; mm_k256: the K-quants at Q8_K as before), lm head exact; mm_down only ffn_down's, mm_rest all but ffn_down's;
         mm16 every layer matmul's activations at 16 bits per 32-block (the ceiling of that fix);
         mm_down32 / mm_down16: mm with ffn_down's activations per 32-block at 8 / 16 bits
  kv     K and V rounded to F16 (the F16 KV cache), Q too (kvq)
  all    mm + kvq + lm

    nice python scripts/precision_sources.py -m ~/.cache/llama_py/gemma-3-270m-q4_k_m.gguf --n-tokens 1024
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

LEGACY = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"}


def q8_0(x: np.ndarray, qmax: int = 127, qb: int = 32, f16_scale: bool = True) -> np.ndarray:
    """Dequantized blockwise symmetric quantization along the last axis (scale stored as F16,
    or kept F32: an F16 scale of amax/32767 would often be subnormal)."""
    s = x.shape
    b = x.reshape(-1, s[-1] // qb, qb).astype(np.float32)
    amax = np.abs(b).max(-1, keepdims=True)
    d = amax / qmax
    idv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1), 0).astype(np.float32)
    q = np.rint(b * idv)
    ds = d.astype(np.float16).astype(np.float32) if f16_scale else d
    return (q * ds).reshape(s).astype(np.float64)


def q8_k(x: np.ndarray) -> np.ndarray:
    """Q8_K: blocks of 256, scale from the signed extreme (-127/max), float32 scale."""
    s = x.shape
    b = x.reshape(-1, s[-1] // 256, 256).astype(np.float32)
    idx = np.abs(b).argmax(-1)[..., None]
    mx = np.take_along_axis(b, idx, -1)
    iscale = np.where(mx != 0, -127.0 / np.where(mx != 0, mx, 1), 0).astype(np.float32)
    q = np.minimum(127, np.rint(iscale * b))
    d = np.where(iscale != 0, 1.0 / np.where(iscale != 0, iscale, 1), 0).astype(np.float32)
    return (q * d).reshape(s).astype(np.float64)


def f16(x):
    return x.astype(np.float16).astype(np.float64)


class Emu:
    def __init__(self, path: str):
        import gguf
        from llama_ref import LlamaRef
        self.ref = LlamaRef(path, storage=np.float32)
        r = gguf.GGUFReader(path)
        self.types = {t.name: t.tensor_type.name for t in r.tensors}
        self.only = None
        self.out_name = "output.weight" if "output.weight" in self.types else "token_embd.weight"

    def actq(self, x: np.ndarray, name: str) -> np.ndarray:
        t = self.types[name]
        if self.only == "down" and "ffn_down" not in name or self.only == "rest" and "ffn_down" in name:
            return x
        if self.only == "16" or self.only == "down16" and "ffn_down" in name:
            return q8_0(x, 32767, f16_scale=False)
        if self.only == "down32" and "ffn_down" in name:
            return q8_0(x)
        if t in LEGACY:
            return q8_0(x)
        if t in ("Q4_K", "Q5_K", "Q6_K") and self.only != "k256":
            return q8_0(x, f16_scale=False)  # Q8_1: the engine's per-32 float scale
        if t.endswith("_K"):
            return q8_k(x)
        return x

    def hidden(self, toks, mm=False, kv=False, q=False) -> np.ndarray:
        """A copy of LlamaRef.step (one sequence, causal) with optional rounding hooks."""
        R = self.ref
        w = R.w
        A = (lambda x, nm: self.actq(x, nm)) if mm else (lambda x, nm: x)
        toks = np.asarray(toks)
        n = len(toks)
        pos = np.arange(n)
        hd, nh, nkv = R.head_dim, R.n_head, R.n_head_kv
        mask = np.zeros((n, n))
        mask[pos[None, :] > pos[:, None]] = -np.inf
        mask_swa = mask.copy()
        if R.n_swa:
            mask_swa[np.abs(pos[:, None] - pos[None, :]) >= R.n_swa] = -np.inf
        x = w["token_embd.weight"][toks].astype(np.float64) * R.embd_scale
        for il in range(R.n_layer):
            p = f"blk.{il}."
            h = R._rmsnorm(x, w[p + "attn_norm.weight"])
            qq, k, v = [A(h, p + f"attn_{c}.weight") @ w[p + f"attn_{c}.weight"].T for c in "qkv"]
            qq = qq + w.get(p + "attn_q.bias", 0.0)
            k = k + w.get(p + "attn_k.bias", 0.0)
            v = v + w.get(p + "attn_v.bias", 0.0)
            qq = qq.reshape(n, nh, hd)
            k = k.reshape(n, nkv, hd)
            v = v.reshape(n, nkv, hd)
            if p + "attn_q_norm.weight" in w:
                qq = R._rmsnorm(qq, w[p + "attn_q_norm.weight"])
                k = R._rmsnorm(k, w[p + "attn_k_norm.weight"])
            qq = R._rope(qq, pos, il)
            k = R._rope(k, pos, il)
            if kv:
                k, v = f16(k), f16(v)
            if q:
                qq = f16(qq)
            o = np.empty((n, nh, hd))
            group = nh // nkv
            msk = mask_swa if R.swa[il] else mask
            for hh in range(nh):
                kh = hh // group
                s = qq[:, hh, :] @ k[:, kh, :].T * R.attn_scale + msk
                s = s - s.max(axis=-1, keepdims=True)
                a = np.exp(s)
                a /= a.sum(axis=-1, keepdims=True)
                o[:, hh, :] = a @ v[:, kh, :]
            o = o.reshape(n, nh * hd)
            att = A(o, p + "attn_output.weight") @ w[p + "attn_output.weight"].T
            if p + "post_attention_norm.weight" in w:
                att = R._rmsnorm(att, w[p + "post_attention_norm.weight"])
            x = x + att
            m = R._rmsnorm(x, w[p + "ffn_norm.weight"])
            gate = A(m, p + "ffn_gate.weight") @ w[p + "ffn_gate.weight"].T
            up = A(m, p + "ffn_up.weight") @ w[p + "ffn_up.weight"].T
            if R.arch in ("gemma3", "gemma2"):
                act = 0.5 * gate * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (gate + 0.044715 * gate ** 3)))
            else:
                act = gate / (1.0 + np.exp(-gate))
            f = A(act * up, p + "ffn_down.weight") @ w[p + "ffn_down.weight"].T
            if p + "post_ffw_norm.weight" in w:
                f = R._rmsnorm(f, w[p + "post_ffw_norm.weight"])
            x = x + f
        return R._rmsnorm(x, w["output_norm.weight"])

    def logits_stats(self, hid: np.ndarray, ref_top: np.ndarray, ref_lsm=None):
        """Argmax (and KL to the reference, when given its log-softmax blocks) in float64."""
        W = self.ref.out
        top, kl = [], []
        for i in range(0, len(hid), 128):
            lg = hid[i:i + 128] @ W.T.astype(np.float64) if False else (hid[i:i + 128] @ W.T)
            top.append(lg.argmax(-1))
            if ref_lsm is not None:
                ls = lg - lg.max(-1, keepdims=True)
                ls = ls - np.log(np.exp(ls).sum(-1, keepdims=True))
                lr = ref_lsm[i // 128]
                kl.append(np.sum(np.exp(lr) * (lr - ls), -1))
        top = np.concatenate(top)
        return top, (float(np.concatenate(kl).mean()) if kl else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", "-m", required=True)
    ap.add_argument("--text", type=Path, default=ROOT / "tests" / "data" / "alice-chapter1.txt")
    ap.add_argument("--n-tokens", type=int, default=1024)
    ap.add_argument("--cases", default="lm,lm16,lmf16,kv,kvq,mm,all")
    a = ap.parse_args()
    from model_util import Model, tokens_of
    with Model(a.model) as m:
        toks = tokens_of(m, a.text.read_text(encoding="utf-8"))[:a.n_tokens]
    e = Emu(a.model)
    t0 = time.time()
    h0 = e.hidden(toks)
    W = e.ref.out.astype(np.float64)
    e.ref.out = W
    ref_top, ref_lsm = [], []
    for i in range(0, len(h0), 128):
        lg = h0[i:i + 128] @ W.T
        ref_top.append(lg.argmax(-1))
        ls = lg - lg.max(-1, keepdims=True)
        ref_lsm.append(ls - np.log(np.exp(ls).sum(-1, keepdims=True)))
    ref_top = np.concatenate(ref_top)
    print(f"{Path(a.model).name}: {len(toks)} positions, exact forward {time.time() - t0:.0f} s "
          f"(lm head {e.types[e.out_name]})", flush=True)
    hid = {}
    for case in a.cases.split(","):
        t0 = time.time()
        if case in ("lm", "lm16", "lmf16"):
            h = {"lm": q8_0, "lm16": lambda x: q8_0(x, 32767, f16_scale=False), "lmf16": f16}[case](h0)
        elif case == "kv":
            h = hid.setdefault("kv", e.hidden(toks, kv=True))
        elif case == "kvq":
            h = hid.setdefault("kvq", e.hidden(toks, kv=True, q=True))
        elif case == "mm":
            h = hid.setdefault("mm", e.hidden(toks, mm=True))
        elif case in ("mm_down", "mm_rest", "mm16", "mm_down32", "mm_down16", "mm_k256"):
            e.only = {"mm_down": "down", "mm_rest": "rest", "mm16": "16", "mm_down32": "down32",
                      "mm_down16": "down16", "mm_k256": "k256"}[case]
            h = e.hidden(toks, mm=True)
            e.only = None
        elif case == "all":
            h = q8_0(e.hidden(toks, mm=True, kv=True, q=True))
        else:
            raise SystemExit(f"unknown case {case}")
        top, kl = e.logits_stats(h, ref_top, ref_lsm)
        flips = int((top != ref_top).sum())
        print(f"  {case:6} flips {flips:4}/{len(toks)} (top1 {1 - flips / len(toks):.4f}) KL {kl:.2e} "
              f"[{time.time() - t0:.0f} s]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
