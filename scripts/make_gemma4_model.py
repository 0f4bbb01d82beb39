#!/usr/bin/env python3
"""Writes a gemma4 GGUF of a given shape with random weights, for benchmarks: per-layer
embeddings, KV-shared layers, K = V on the full layers, sliding and full layers of their own
head sizes, optionally the 26B-A4B experts; the same file for this engine and for llama.cpp.

    python scripts/make_gemma4_model.py g4-tiny.gguf --preset tiny --type f32
    python scripts/make_gemma4_model.py g4.gguf --config path/to/config.json --quantize Q4_0

The shape comes from a Hugging Face Gemma4 text config (config.json, or its "text_config") or
a preset; tensor names, shapes and keys are the converter's (llama_py/convert_gemma4.py), so the
file is what `convert` writes for a real checkpoint of that config. The vocabulary is copied
from a vocab-only GGUF: gemma-4 (262144 tokens, the real one's size, fetched with
llama_py.pull_vocab) by default. Matrices are drawn from N(0, 1/fan_in), norm weights and scales
are 1; tensors are written one at a time, big ones in blocks of rows (memory stays small).
--type q4_0 writes every matrix in Q4_0 straight away (Google's QAT files are Q4_0 throughout,
the PLE table included): the E4B-shaped file in minutes. --quantize writes an F16 model first
(2 bytes per parameter of temporary disk) and converts it with this project's quantizer.

    python scripts/make_gemma4_model.py /work/scratch/models/gemma4-e4b-q4_0.gguf --preset e4b-like --type q4_0 The presets are not Google's published shapes:
pass the real config.json for those.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import numpy as np
import gguf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic_model import FTYPES, copy_vocab, quantize  # noqa: E402
from llama_py import convert_gemma4 as CG  # noqa: E402  (pure Python)

_SLIDE, _FULL = CG.SLIDING, CG.FULL
PRESETS = {
    # the test models' shape: every feature, tiny
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, global_head_dim=32, num_global_key_value_heads=1,
                 attention_k_eq_v=True, layer_types=[_SLIDE, _SLIDE, _FULL] * 2, sliding_window=8,
                 num_kv_shared_layers=2, use_double_wide_mlp=True, hidden_size_per_layer_input=8),
    # 42 layers (llama.cpp names that depth E4B), 5 sliding : 1 full, the last 18 reading earlier
    # layers' KV, PLE 256 wide; the widths are assumptions of this script
    "e4b-like": dict(hidden_size=2560, intermediate_size=10240, num_hidden_layers=42, num_attention_heads=8,
                     num_key_value_heads=2, head_dim=256, global_head_dim=512, num_global_key_value_heads=2,
                     attention_k_eq_v=False, layer_types=[_SLIDE] * 5 + [_FULL], sliding_window=512,
                     num_kv_shared_layers=18, hidden_size_per_layer_input=256),
}
_BASE = dict(rms_norm_eps=1e-6, max_position_embeddings=131072, final_logit_softcapping=30.0,
             rope_parameters={_FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6},
                              _SLIDE: {"rope_type": "default", "rope_theta": 10000.0}})


class _DrawnRows:
    """A matrix of N(0, 1/fan_in) values drawn and written in blocks of rows (GGUFWriter calls
    tofile with the file when its turn comes)."""

    BLOCK = 1 << 22   # values per block

    def __init__(self, shape, dtype: np.dtype, rng):
        self.shape, self.dtype, self.rng = tuple(shape), dtype, rng
        self.nbytes = int(np.prod(shape)) * dtype.itemsize

    def tofile(self, f) -> None:
        rows, cols = int(np.prod(self.shape[:-1])), self.shape[-1]
        step = max(1, self.BLOCK // cols)
        for r in range(0, rows, step):
            n = min(step, rows - r)
            (self.rng.standard_normal((n, cols), dtype=np.float32) / np.sqrt(cols)).astype(self.dtype).tofile(f)


class _Q4Rows:
    """A Q4_0 matrix (as QAT files store every matrix, the PLE table included) of N(0, 1/fan_in)
    values: blocks quantized once from a pool of draws, laid out from a random offset per block
    of rows. The values repeat with the pool's period (8 MiB), which a speed benchmark cannot
    see: every byte of the file is still read from memory."""

    POOL = 1 << 23   # values in the pool
    _pools: dict = {}

    def __init__(self, shape, rng):
        self.shape, self.rng = tuple(shape), rng
        if self.shape[-1] % 32:
            raise ValueError(f"Q4_0 rows must be multiples of 32 values, got {self.shape}")
        self.row_bytes = self.shape[-1] // 32 * 18
        self.rows = int(np.prod(self.shape[:-1]))
        self.nbytes = self.rows * self.row_bytes
        self.dtype = np.dtype(np.uint8)

    def _pool(self) -> np.ndarray:
        cols = self.shape[-1]
        if cols not in self._pools:
            x = self.rng.standard_normal(self.POOL, dtype=np.float32) / np.sqrt(cols)
            self._pools[cols] = gguf.quants.quantize(x.reshape(-1, 32), gguf.GGMLQuantizationType.Q4_0).reshape(-1)
        return self._pools[cols]

    def tofile(self, f) -> None:
        pool = self._pool()
        left = self.nbytes
        while left > 0:
            off = int(self.rng.integers(0, pool.size // 18)) * 18   # whole 18-byte blocks
            n = min(left, pool.size - off)
            pool[off:off + n].tofile(f)
            left -= n


def write_gemma4_model(out: Path, config: dict, ftype: str = "f32", seed: int = 0, vocab: Optional[Path] = None,
                       n_vocab: Optional[int] = None) -> int:
    """Writes the model of config (HF Gemma4TextConfig fields) to out; returns its parameter count."""
    cfg = dict(_BASE, **config)
    n = int(cfg["num_hidden_layers"])
    lt = cfg.get("layer_types") or [_SLIDE if (i + 1) % 6 else _FULL for i in range(n)]
    cfg["layer_types"] = (lt * n)[:n] if len(lt) < n else lt
    file_type = 2 if ftype == "q4_0" else FTYPES[ftype][1]   # LLAMA_FTYPE_MOSTLY_Q4_0 = 2
    dtype = np.float32 if ftype == "f32" else np.float16
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(out), "gemma4")
    w.add_name("synthetic-gemma4")
    w.add_file_type(file_type)
    if vocab is None:
        from llama_py.pull_vocab import vocab_path
        vocab = vocab_path("gemma-4", quiet=False)
    nv = copy_vocab(w, vocab, n_vocab)
    hp = SimpleNamespace(n_embd=int(cfg["hidden_size"]), n_head=int(cfg["num_attention_heads"]), n_vocab=nv,
                         n_layer=n, config=cfg)
    CG.check(cfg, SimpleNamespace(n_vocab=nv, rope={}))
    a = "gemma4."
    w.add_uint32(a + "context_length", int(cfg["max_position_embeddings"]))
    w.add_uint32(a + "embedding_length", hp.n_embd)
    w.add_uint32(a + "block_count", n)
    w.add_uint32(a + "attention.head_count", hp.n_head)
    w.add_float32(a + "rope.freq_base", float(cfg["rope_parameters"][_FULL]["rope_theta"]))
    w.add_float32(a + "attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"]))
    w.add_uint32(a + "vocab_size", nv)
    keys = CG.keys(cfg, hp)
    if not any(k[0] == "feed_forward_length" for k in keys):   # one width for all layers
        w.add_uint32(a + "feed_forward_length", int(cfg["intermediate_size"]))
    for suffix, kind, val in keys:
        key = a + suffix
        if kind == "u32[]":   # as llama.cpp's converter writes them
            w.add_key_value(key, [int(v) for v in val], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.UINT32)
        elif kind == "bool[]":
            w.add_array(key, [bool(v) for v in val])
        elif kind == "f32":
            w.add_float32(key, float(val))
        else:
            w.add_uint32(key, int(val))
    want, computed = CG.tensors(hp, "model.")
    shapes = {"token_embd.weight": (nv, hp.n_embd), "output_norm.weight": (hp.n_embd,)}
    shapes.update({e[0]: e[1] for e in want.values() if e is not None})
    # Announced first, then drawn and written one tensor at a time (a big one in row blocks):
    # the script holds a block, never the model (the 262k-token PLE table alone is 2.8B values).
    q4 = ftype == "q4_0"
    specs = []   # (name, object with nbytes / tofile)
    n_params = 0
    for name, shape in shapes.items():
        n_params += int(np.prod(shape))
        if len(shape) == 1:   # norm weights, router and output scales: 1 (F32)
            specs.append((name, np.ones(shape, dtype=np.float32)))
        elif q4 and shape[-1] % 32 == 0:
            specs.append((name, _Q4Rows(shape, rng)))
        elif q4:   # rows Q4_0 cannot split into blocks (a tiny preset's): F16, as quantizers fall back
            specs.append((name, _DrawnRows(shape, np.dtype(np.float16), rng)))
        else:
            specs.append((name, _DrawnRows(shape, np.dtype(dtype), rng)))
    specs += list(computed)
    for name, t in specs:
        if isinstance(t, _Q4Rows):
            w.add_tensor_info(name, t.shape[:-1] + (t.row_bytes,), np.dtype(np.uint8), t.nbytes,
                              raw_dtype=gguf.GGMLQuantizationType.Q4_0)   # byte shape, as gguf wants it
        else:
            w.add_tensor_info(name, t.shape, t.dtype, t.nbytes)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for _, t in specs:
        w.write_tensor_data(t)
    w.close()
    return n_params


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--config", type=Path, help="a Gemma4 config.json (its text_config when nested); overrides --preset")
    ap.add_argument("--type", default="f32", choices=sorted(FTYPES) + ["q4_0"],
                    help="weight type (default f32); q4_0: every matrix Q4_0 written directly, as QAT files")
    ap.add_argument("--quantize", metavar="TYPE", help="then quantize with llama_model_quantize: Q4_0, Q8_0, ...")
    ap.add_argument("--vocab", type=Path, help="vocab-only GGUF to copy (default gemma-4)")
    ap.add_argument("--n-vocab", type=int, help="keep only the first N tokens of the vocabulary")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    config = dict(PRESETS[a.preset])
    if a.config is not None:
        c = json.loads(a.config.read_text())
        config = c.get("text_config", c)
    kw = dict(seed=a.seed, vocab=a.vocab, n_vocab=a.n_vocab)
    if a.quantize:
        with tempfile.TemporaryDirectory() as td:
            tmp = Path(td) / "f16.gguf"
            n = write_gemma4_model(tmp, config, ftype="f16", **kw)
            quantize(tmp, a.out, a.quantize)
    else:
        n = write_gemma4_model(a.out, config, ftype=a.type, **kw)
    print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB, {n / 1e9:.2f}B parameters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
