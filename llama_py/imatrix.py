"""python -m llama_py imatrix MODEL -f TEXT [-o imatrix.gguf]: an importance matrix for quantization.

The model reads the text in chunks of --ctx-size tokens; for every matrix product with a layer
weight (blk.*) the squared activations entering it are summed per input column, with the number
of rows (tokens) seen. The file is the GGUF imatrix format llama.cpp's tools read and write:
general.type = "imatrix", imatrix.datasets / chunk_count / chunk_size, and per weight
"<name>.in_sum2" (F32, [n_columns, 1]) and "<name>.counts" (F32, [1, 1]). `quantize --imatrix`
reads it back as per-column mean squares (in_sum2 / counts), the weights the IQ quantizers'
scale searches use.

Weights the CPU backend fuses at load (blk.N.attn_qkv from attn_q/k/v, blk.N.ffn_gate_up from
ffn_gate/up) share their input, so their statistics are recorded under each stored part.
"""
from __future__ import annotations

import argparse
import ctypes
import sys
import time
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import ggml as G
from . import llama_cpp as C

_FUSED = {"attn_qkv.weight": ("attn_q.weight", "attn_k.weight", "attn_v.weight"),
          "ffn_gate_up.weight": ("ffn_gate.weight", "ffn_up.weight")}
_MIN_ROWS = 16  # products of fewer rows (single tokens) are skipped, as llama.cpp's tool does


class _Collector:
    """The eval callback: sums of squared activations per weight name."""

    def __init__(self, stored: set):
        self.stored = stored
        self.sums: Dict[str, np.ndarray] = {}
        self.counts: Dict[str, int] = {}
        self.cb = C.ggml_backend_sched_eval_callback(self._on_node)

    def _names(self, name: str) -> List[str]:
        if name in self.stored:
            return [name]
        for fused, parts in _FUSED.items():
            if name.endswith(fused):
                prefix = name[: -len(fused)]
                return [prefix + p for p in parts if prefix + p in self.stored]
        return []

    def _on_node(self, tp, ask, user_data):
        t = ctypes.cast(tp, G.ggml_tensor_p).contents
        if t.op != G.ggml_op.MUL_MAT:
            return False if ask else True
        w, x = t.src[0], t.src[1]
        if not w or not x:
            return False if ask else True
        w, x = w.contents, x.contents
        name = w.name.decode("utf-8", "replace")
        wanted = (name.startswith("blk.") and x.type == G.ggml_type.F32 and x.ne[1] >= _MIN_ROWS
                  and bool(self._names(name)) and bool(x.data))
        if ask or not wanted:
            # (the scheduler also reports a graph's last node without asking: skip it here)
            return wanted if ask else True
        # rows of x: ne[0] floats each, strided by nb[1..3]
        ne = [int(v) for v in x.ne]
        nb = [int(v) for v in x.nb]
        span = (ne[0] - 1) * nb[0] + sum((ne[i] - 1) * nb[i] for i in range(1, 4)) + 4
        buf = (ctypes.c_char * span).from_address(x.data)
        a = np.lib.stride_tricks.as_strided(np.frombuffer(buf, dtype=np.float32), shape=(ne[3], ne[2], ne[1], ne[0]),
                                            strides=(nb[3], nb[2], nb[1], nb[0]))
        sq = np.square(a.reshape(-1, ne[0]).astype(np.float64)).sum(axis=0)
        rows = ne[1] * ne[2] * ne[3]
        for n in self._names(name):
            if n in self.sums:
                self.sums[n] += sq
            else:
                self.sums[n] = sq.copy()
            self.counts[n] = self.counts.get(n, 0) + rows
        return True


def _stored_tensor_names(path: str) -> set:
    g = G.gguf_init_from_file(path.encode(), G.gguf_init_params(no_alloc=True, ctx=None))
    if not g:
        raise RuntimeError(f"cannot read {path}")
    try:
        return {G.gguf_get_tensor_name(g, i).decode() for i in range(G.gguf_get_n_tensors(g))}
    finally:
        G.gguf_free(g)


def collect(model_path: str, text: str, n_ctx: int = 512, n_chunks: int = 0, n_threads: int = 0,
            progress: bool = True) -> Tuple[Dict[str, np.ndarray], Dict[str, int], int]:
    """(sums, counts, chunks): squared activations per weight over the text's chunks."""
    col = _Collector(_stored_tensor_names(model_path))
    mp = C.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = C.llama_model_load_from_file(model_path.encode(), mp)
    if not model:
        raise RuntimeError(f"cannot load {model_path}")
    ctx = None
    try:
        cp = C.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = n_ctx
        if n_threads > 0:
            cp.n_threads = cp.n_threads_batch = n_threads
        cp.cb_eval = col.cb
        ctx = C.llama_init_from_model(model, cp)
        if not ctx:
            raise RuntimeError("cannot create a context")
        vocab = C.llama_model_get_vocab(model)
        raw = text.encode("utf-8")
        cap = len(raw) + 16
        toks = (C.llama_token * cap)()
        n = C.llama_tokenize(vocab, raw, len(raw), toks, cap, True, False)
        if n < 0:
            raise RuntimeError("tokenization failed")
        total = n // n_ctx
        if n_chunks > 0:
            total = min(total, n_chunks)
        if total == 0:
            raise RuntimeError(f"the text has {n} tokens: fewer than one chunk of {n_ctx}")
        bos = C.llama_vocab_bos(vocab)
        # logits for every token, so the last layer runs on every row (as for perplexity)
        batch = C.llama_batch_init(n_ctx, 0, 1)
        t0 = time.perf_counter()
        for c in range(total):
            chunk = list(toks[c * n_ctx:(c + 1) * n_ctx])
            if bos >= 0:
                chunk[0] = bos  # every chunk starts a sequence, as llama.cpp's tool does
            batch.n_tokens = n_ctx
            for i, tok in enumerate(chunk):
                batch.token[i] = tok
                batch.pos[i] = i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 1
            C.llama_memory_clear(C.llama_get_memory(ctx), True)
            if C.llama_decode(ctx, batch) != 0:
                C.llama_batch_free(batch)
                raise RuntimeError(f"decode failed at chunk {c}")
            if progress:
                sys.stderr.write(f"\rchunk {c + 1}/{total} ({time.perf_counter() - t0:.1f} s)")
                sys.stderr.flush()
        C.llama_batch_free(batch)
        if progress:
            sys.stderr.write("\n")
        return col.sums, col.counts, total
    finally:
        if ctx:
            C.llama_free(ctx)
        C.llama_model_free(model)


def write(path: str, sums: Dict[str, np.ndarray], counts: Dict[str, int], datasets: List[str],
          chunk_count: int, chunk_size: int) -> None:
    """Writes the GGUF imatrix file."""
    names = sorted(sums)
    size = sum(G.ggml_tensor_overhead() * 2 + 4 * (sums[n].size + 1) + 256 for n in names) + 1024
    mctx = G.ggml_init(G.ggml_init_params(mem_size=size, mem_buffer=None, no_alloc=False))
    g = G.gguf_init_empty()
    if not mctx or not g:
        raise RuntimeError("out of memory")
    try:
        G.gguf_set_val_str(g, b"general.type", b"imatrix")
        enc = [d.encode() for d in datasets]
        G.gguf_set_arr_str(g, b"imatrix.datasets", (ctypes.c_char_p * len(enc))(*enc), len(enc))
        G.gguf_set_val_u32(g, b"imatrix.chunk_count", chunk_count)
        G.gguf_set_val_u32(g, b"imatrix.chunk_size", chunk_size)
        for n in names:
            for suffix, vals in ((".in_sum2", sums[n].astype(np.float32)),
                                 (".counts", np.array([counts[n]], dtype=np.float32))):
                t = G.ggml_new_tensor_2d(mctx, G.ggml_type.F32, vals.size, 1)
                G.ggml_set_name(t, (n + suffix).encode())
                ctypes.memmove(G.ggml_get_data(t), vals.ctypes.data, vals.nbytes)
                G.gguf_add_tensor(g, t)
        if not G.gguf_write_to_file(g, path.encode(), False):
            raise RuntimeError(f"cannot write {path}")
    finally:
        G.gguf_free(g)
        G.ggml_free(mctx)


def read(path: str) -> Dict[str, np.ndarray]:
    """Per weight name, the mean squared activation per input column (in_sum2 / counts)."""
    g = G.gguf_init_from_file(path.encode(), G.gguf_init_params(no_alloc=True, ctx=None))
    if not g:
        raise RuntimeError(f"cannot read {path}")
    try:
        k = G.gguf_find_key(g, b"general.type")
        if k < 0 or G.gguf_get_val_str(g, k) != b"imatrix":
            raise RuntimeError(f"{path}: not a GGUF imatrix file (general.type is not 'imatrix')")
        base = G.gguf_get_data_offset(g)
        raw = np.memmap(path, dtype=np.uint8, mode="r")
        arrays = {}
        for i in range(G.gguf_get_n_tensors(g)):
            if G.gguf_get_tensor_type(g, i) != G.ggml_type.F32:
                raise RuntimeError(f"{path}: tensor {i} is not F32")
            off = base + G.gguf_get_tensor_offset(g, i)
            nbytes = G.gguf_get_tensor_size(g, i)
            arrays[G.gguf_get_tensor_name(g, i).decode()] = np.frombuffer(raw[off:off + nbytes].tobytes(), np.float32)
    finally:
        G.gguf_free(g)
    out = {}
    for key, s in arrays.items():
        if not key.endswith(".in_sum2"):
            continue
        name = key[: -len(".in_sum2")]
        c = arrays.get(name + ".counts")
        if c is None or c.size == 0:
            raise RuntimeError(f"{path}: {name} has no counts")
        per = s.reshape(c.size, -1)
        out[name] = np.concatenate([per[j] / c[j] if c[j] > 0 else np.ones_like(per[j]) for j in range(c.size)])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m llama_py imatrix",
                                 description="compute an importance matrix (GGUF imatrix format) from a text")
    ap.add_argument("model")
    ap.add_argument("-f", "--file", required=True, help="text file to run through the model")
    ap.add_argument("-o", "--output", default="imatrix.gguf")
    ap.add_argument("-c", "--ctx-size", type=int, default=512, help="tokens per chunk (default 512)")
    ap.add_argument("--chunks", type=int, default=0, help="at most this many chunks (default: all)")
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    try:
        with open(a.file, encoding="utf-8", errors="replace") as f:
            text = f.read()
        sums, counts, chunks = collect(a.model, text, a.ctx_size, a.chunks, a.threads, not a.quiet)
        if not sums:
            raise RuntimeError("no layer weight products were seen")
        write(a.output, sums, counts, [a.file], chunks, a.ctx_size)
    except (OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{a.output}: {len(sums)} entries from {chunks} chunks of {a.ctx_size} tokens")
    return 0
