#!/usr/bin/env python3
"""Top-1 agreement with the float64 NumPy reference (tests/llama_ref.py), ours beside llama.cpp's:
numbers for a closing note, not a pass/fail test (minutes of CPU, a few GB per model).

    nice python scripts/top1_agreement.py -m ~/.cache/llama_py/gemma-3-270m-q4_k_m.gguf \\
        -m ~/.cache/llama_py/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --n-tokens 512 --flash-attn both

Per model, over the first n tokens of the text (default tests/data/alice-chapter1.txt, tokenized by
our vocabulary; the same ids go to llama.cpp so that the rows compare position for position):
  - the reference forward (weights dequantized with gguf.quants, products in float64);
  - our logits for every position, one batch prompt (llama_py, this checkout's build);
  - llama.cpp's, from llama-cpp-python in a separate process (its own libllama, never
    installed): Llama(model, logits_all=True, n_ctx=n, n_batch=n, n_threads=...).eval(tokens).
Both sides run with the same n_ctx / n_batch / n_ubatch (512) / threads / KV cache type (--kv:
F16, both libraries' default, or F32) and flash-attention setting. Printed per side and setting:
  top1   the fraction of positions where the side's argmax equals the reference's
  maxabs the mean over positions of max |side - ref| over the vocabulary
  KL     the mean over positions of KL(softmax(ref) || softmax(side)), nats

llama-cpp-python is found through --lcpp-python (a Python with numpy), --lcpp-pythonpath (the
unpacked sdist, holding the llama_cpp package) and --lcpp-lib (the folder of its built
libllama.so, passed as LLAMA_CPP_LIB_PATH); defaults are this machine's scratch build.
The reference's logits are cached (--cache-dir) per model and token list (float32: they are
float32 numbers after the float64 forward; 2 GB for 2048 positions of a 256k vocabulary).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

LCPP_PYTHON = "/work/scratch/lcpp-venv/bin/python"
LCPP_PYTHONPATH = "/tmp/lcp_avx2/llama_cpp_python-0.3.36"
LCPP_LIB = "/work/scratch/arch-llamacpp/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin"
KV_TYPES = {"f16": 1, "f32": 0}   # ggml_type, the same numbers in both libraries


def _lcpp_worker(args_json: str) -> int:
    """Runs inside llama-cpp-python's interpreter: evaluates the tokens, saves all logits."""
    a = json.loads(args_json)
    from llama_cpp import Llama
    kv = {"type_k": a["type_kv"], "type_v": a["type_kv"]} if a.get("type_kv") is not None else {}
    llm = Llama(a["model"], logits_all=True, n_ctx=a["n_ctx"], n_batch=a["n_ctx"], n_ubatch=512,
                n_threads=a["threads"], n_threads_batch=a["threads"], flash_attn=a["flash_attn"],
                verbose=False, **kv)
    toks = a["tokens"]
    llm.eval(toks)
    np.save(a["out"], np.asarray(llm.scores[:len(toks)], dtype=np.float32))
    return 0


def lcpp_logits(a, model: str, toks, fa: bool) -> np.ndarray:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "logits.npy")
        job = json.dumps({"model": model, "tokens": [int(t) for t in toks], "n_ctx": max(512, len(toks)),
                          "threads": a.threads, "flash_attn": fa, "out": out, "type_kv": KV_TYPES[a.kv]})
        env = dict(os.environ, LLAMA_CPP_LIB_PATH=a.lcpp_lib, PYTHONPATH=a.lcpp_pythonpath)
        subprocess.run([a.lcpp_python, str(Path(__file__).resolve()), "--lcpp-worker", job], env=env, check=True,
                       cwd=d)
        return np.load(out)


def ours_logits(a, model_path: str, toks, fa: bool) -> np.ndarray:
    import llama_py.llama_cpp as L
    from model_util import Ctx, Model
    n = max(512, len(toks))
    with Model(model_path) as m:
        fat = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if fa else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        with Ctx(m, n_ctx=n, n_batch=n, n_ubatch=512, n_threads=a.threads, n_threads_batch=a.threads,
                 flash_attn_type=fat, type_k=KV_TYPES[a.kv], type_v=KV_TYPES[a.kv]) as c:
            assert c.decode_seq(toks) == 0
            out = np.empty((len(toks), m.n_vocab), dtype=np.float32)   # float32: a 256k vocabulary is big
            for i in range(len(toks)):
                out[i] = np.ctypeslib.as_array(L.llama_get_logits_ith(c.ptr, i), shape=(m.n_vocab,))
            return out


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def stats(side: np.ndarray, ref: np.ndarray) -> dict:
    """In float64, a block of rows at a time (whole [n, 256k] float64 copies would take GBs)."""
    kl, maxabs, top = [], [], []
    for i in range(0, len(ref), 64):
        r, s = ref[i:i + 64].astype(np.float64), side[i:i + 64].astype(np.float64)
        lr, ls = _log_softmax(r), _log_softmax(s)
        kl.append(np.sum(np.exp(lr) * (lr - ls), -1))
        maxabs.append(np.abs(s - r).max(-1))
        top.append(s.argmax(-1) == r.argmax(-1))
    kl, maxabs, top = np.concatenate(kl), np.concatenate(maxabs), np.concatenate(top)
    return {"top1": float(top.mean()), "n_agree": int(top.sum()), "maxabs": float(maxabs.mean()), "kl": float(kl.mean())}


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--lcpp-worker":
        return _lcpp_worker(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", "-m", action="append", required=True)
    ap.add_argument("--text", type=Path, default=ROOT / "tests" / "data" / "alice-chapter1.txt")
    ap.add_argument("--n-tokens", type=int, default=512)
    ap.add_argument("--threads", "-t", type=int, default=2)
    ap.add_argument("--flash-attn", choices=["on", "off", "both"], default="both")
    ap.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "llama_py_top1")
    ap.add_argument("--lcpp-python", default=LCPP_PYTHON)
    ap.add_argument("--lcpp-pythonpath", default=LCPP_PYTHONPATH)
    ap.add_argument("--lcpp-lib", default=LCPP_LIB)
    ap.add_argument("--no-lcpp", action="store_true", help="ours only")
    ap.add_argument("--kv", choices=sorted(KV_TYPES), default="f16", help="KV cache type, both sides")
    ap.add_argument("--save-dir", type=Path, help="also save each side's logits there (.npy)")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from llama_ref import LlamaRef
    from model_util import Model, tokens_of
    fas = {"on": [True], "off": [False], "both": [True, False]}[a.flash_attn]
    text = a.text.read_text(encoding="utf-8")
    rows = []
    for path in a.model:
        name = Path(path).name
        with Model(path) as m:
            toks = tokens_of(m, text)[:a.n_tokens]
        key = hashlib.sha256(json.dumps([name, os.path.getsize(path), toks]).encode()).hexdigest()[:16]
        a.cache_dir.mkdir(parents=True, exist_ok=True)
        cached = a.cache_dir / f"ref-{key}.npy"
        if cached.exists():
            ref = np.load(cached).astype(np.float32)
        else:
            t0 = time.time()
            ref = LlamaRef(path, storage=np.float32).forward(toks).astype(np.float32)
            np.save(cached, ref)
            print(f"{name}: reference forward over {len(toks)} positions in {time.time() - t0:.0f} s",
                  file=sys.stderr)
        if a.save_dir:
            a.save_dir.mkdir(parents=True, exist_ok=True)
            np.save(a.save_dir / f"{name}.ref.npy", ref.astype(np.float32))
        gap = np.sort(ref, -1)
        gap = gap[:, -1] - gap[:, -2]
        print(f"{name}: {len(toks)} positions; reference top-1/top-2 gap median {np.median(gap):.3f}, "
              f"{int((gap < 0.05).sum())} positions under 0.05", file=sys.stderr)
        for fa in fas:
            sides = {"llama_py": ours_logits(a, path, toks, fa)}
            if not a.no_lcpp:
                sides["llama.cpp"] = lcpp_logits(a, path, toks, fa)
            for side, lg in sides.items():
                if a.save_dir:
                    a.save_dir.mkdir(parents=True, exist_ok=True)
                    np.save(a.save_dir / f"{name}.{side}.fa-{'on' if fa else 'off'}.kv-{a.kv}.npy",
                            lg.astype(np.float32))
                s = stats(lg, ref)
                rows.append((name, "on" if fa else "off", side, s, len(toks)))
                print(f"  {name} fa={'on' if fa else 'off'} {side}: top1 {s['top1']:.4f} ({s['n_agree']}/{len(toks)}) "
                      f"maxabs {s['maxabs']:.4f} KL {s['kl']:.2e}", file=sys.stderr)
            if len(sides) == 2:
                o, l = sides["llama_py"], sides["llama.cpp"]
                s = stats(o, l)
                print(f"  {name} fa={'on' if fa else 'off'} llama_py vs llama.cpp: same argmax {s['top1']:.4f}, "
                      f"mean maxabs {s['maxabs']:.4f}", file=sys.stderr)
            del sides
    print(f"{'model':44} {'FA':3} {'side':10} {'top-1':>14} {'mean maxabs':>11} {'mean KL':>9}")
    for name, fa, side, s, n in rows:
        print(f"{name:44} {fa:3} {side:10} {s['top1']:.4f} ({s['n_agree']:>3}/{n}) {s['maxabs']:11.4f} "
              f"{s['kl']:9.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
