#!/usr/bin/env python3
"""Quantization quality against llama.cpp: per-tensor weighted error and perplexity, per type.

For each type, both sides quantize the same F16 file with the same importance matrix: ours with
`python -m llama_py quantize --imatrix`, llama.cpp's with the given `llama-quantize` binary. For
every tensor the weighted error sum(w_col * (x - deq(q))^2) against the F16 original is computed
for both files (w_col: the imatrix's column weights, 1 where the tensor has no entry;
dequantization by the `gguf` package, an independent reference), and the perplexity of both
files is scored by our engine on the same text (scripts/perplexity.py's scheme).

    python scripts/compare_quant_quality.py --f16 m-f16.gguf --imatrix m.imatrix.gguf \\
        --llama-quantize /path/to/llama-quantize --types IQ2_XS IQ3_S --out-dir /tmp/q

A tensor counts as worse when ours exceeds llama.cpp's by more than --tol (relative). The
summary line per type: tensors compared, type mismatches, tensors worse, total error ratio
(ours / theirs), and the perplexity pair. --no-ppl skips the perplexity (per-tensor errors only).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def _tensor_errors(f16: str, ours: str, theirs: str, imat: dict):
    """Rows (name, our type, their type, our error, their error) for every matrix of f16."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    rf, ro, rt = GGUFReader(f16), GGUFReader(ours), GGUFReader(theirs)
    to = {t.name: t for t in ro.tensors}
    tt = {t.name: t for t in rt.tensors}
    rows = []
    for t in rf.tensors:
        if len(t.shape) < 2 or t.name not in to or t.name not in tt:
            continue
        x = dequantize(t.data, t.tensor_type).astype(np.float32)
        w = imat.get(t.name)
        ne0 = x.shape[-1]
        if w is None:
            w = np.ones(ne0, np.float32)
        # a 3-D tensor's imatrix holds one row of column weights per matrix
        w = np.asarray(w, np.float64).reshape(-1, ne0)
        errs = []
        for q in (to[t.name], tt[t.name]):
            d = dequantize(q.data, q.tensor_type).astype(np.float32).reshape(x.shape) - x
            d2 = (d.astype(np.float64) ** 2).reshape(w.shape[0], -1, ne0)
            errs.append(float((d2 * w[:, None, :]).sum()))
        rows.append((t.name, to[t.name].tensor_type.name, tt[t.name].tensor_type.name, errs[0], errs[1]))
    return rows


def _quantize_ours(f16, out, qtype, imatrix, nthread):
    from llama_py.quantize import quantize
    quantize(f16, out, qtype, nthread=nthread, show_progress=False, imatrix=imatrix)


def _quantize_theirs(binary, f16, out, qtype, imatrix, nthread):
    with open(out + ".log", "w") as log:
        subprocess.run([binary, "--imatrix", imatrix, f16, out, qtype, str(nthread)], stdout=log,
                       stderr=subprocess.STDOUT, check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--f16", required=True, help="the F16 model both sides quantize")
    ap.add_argument("--imatrix", required=True, help="GGUF importance matrix both sides use")
    ap.add_argument("--llama-quantize", required=True, help="path of llama.cpp's llama-quantize")
    ap.add_argument("--types", nargs="+", required=True, help="mix names, e.g. IQ2_XS IQ3_M TQ1_0")
    ap.add_argument("--out-dir", required=True, help="where both sides' files and the tables go")
    ap.add_argument("--text", default=str(ROOT / "tests" / "data" / "alice-chapter1.txt"))
    ap.add_argument("--n-ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tol", type=float, default=1e-3, help="relative margin before a tensor counts as worse")
    ap.add_argument("--no-ppl", action="store_true", help="per-tensor errors only")
    ap.add_argument("--keep", action="store_true", help="keep the quantized files")
    a = ap.parse_args(argv)

    from llama_py.imatrix import read
    imat = read(a.imatrix)
    os.makedirs(a.out_dir, exist_ok=True)
    stem = Path(a.f16).name.replace(".gguf", "").replace("-f16", "")
    text = Path(a.text).read_text(encoding="utf-8")
    summary = []
    for qtype in a.types:
        ours = os.path.join(a.out_dir, f"{stem}-ours-{qtype.lower()}.gguf")
        theirs = os.path.join(a.out_dir, f"{stem}-lcpp-{qtype.lower()}.gguf")
        _quantize_ours(a.f16, ours, qtype, a.imatrix, a.threads)
        _quantize_theirs(a.llama_quantize, a.f16, theirs, qtype, a.imatrix, a.threads)
        rows = _tensor_errors(a.f16, ours, theirs, imat)
        table = os.path.join(a.out_dir, f"{stem}-{qtype.lower()}.tsv")
        with open(table, "w") as f:
            f.write("tensor\tours_type\tlcpp_type\tours_err\tlcpp_err\tratio\n")
            for name, ot, lt, eo, el in rows:
                f.write(f"{name}\t{ot}\t{lt}\t{eo:.6g}\t{el:.6g}\t{eo / el if el > 0 else float('nan'):.4f}\n")
        n = len(rows)
        mismatch = sum(ot != lt for _, ot, lt, _, _ in rows)
        worse = [r for r in rows if r[3] > r[4] * (1 + a.tol) + 1e-30]
        tot_o, tot_l = sum(r[3] for r in rows), sum(r[4] for r in rows)
        line = (f"{qtype:8s} tensors {n:4d}  type mismatches {mismatch:3d}  ours worse {len(worse):3d} "
                f"({100.0 * len(worse) / max(n, 1):5.1f}%)  total err ours/lcpp {tot_o / tot_l:6.4f}")
        if not a.no_ppl:
            from perplexity import perplexity
            po = perplexity(ours, text, a.n_ctx, a.threads, verbose=False)[0]
            pl = perplexity(theirs, text, a.n_ctx, a.threads, verbose=False)[0]
            line += f"  ppl ours {po:.4f} lcpp {pl:.4f} ({100.0 * (po / pl - 1):+.2f}%)"
        print(line, flush=True)
        for name, ot, lt, eo, el in sorted(worse, key=lambda r: -r[3] / max(r[4], 1e-30))[:5]:
            print(f"    worse: {name} {ot}/{lt} {eo:.5g} vs {el:.5g} ({eo / el:.3f}x)", flush=True)
        summary.append(line)
        if not a.keep:
            for p in (ours, theirs):
                os.remove(p)
    print("\n".join(["", "summary:"] + summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
