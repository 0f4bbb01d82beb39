#!/usr/bin/env python3
"""Shows that a gemma4 model's per-layer embedding (PLE) table stays memory-mapped and that only
the rows the tokens need are read: after loading the model (mmap, the default) and generating
N tokens, counts the pages of the table's range of the file mapping that this process has in
its page tables (/proc/self/pagemap's present bit; a page never touched is not there, even when
the page cache holds it), beside the pages the used tokens' rows span. Linux only.

    python scripts/ple_resident.py /work/scratch/models/gemma4-e4b-q4_0.gguf [-n 32] [--prompt TEXT]

A table that was repacked, converted or copied at load would show all its pages touched (or none
of the mapping's, the copy living elsewhere); read row by row, about the rows' pages are there
(plus the kernel's fault-around: up to 16 neighbouring pages already cached, per fault).
"""
from __future__ import annotations

import argparse
import mmap
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = "per_layer_token_embd.weight"


def tensor_span(path: str, name: str = TABLE):
    """(file offset, bytes, rows) of tensor name in the GGUF at path."""
    from gguf import GGUFReader
    r = GGUFReader(path)
    for t in r.tensors:
        if t.name == name:
            return int(t.data_offset), int(t.n_bytes), int(t.shape[-1])
    raise KeyError(f"{path} has no tensor {name}")


def mapped_range(path: str, offset: int, size: int):
    """(virtual address, size) of file bytes [offset, offset + size) in this process's mapping of path."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or parts[5].strip() != real:
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            foff = int(parts[2], 16)
            if foff <= offset and offset + size <= foff + (hi - lo):
                return lo + offset - foff, size
    raise LookupError(f"{path} is not mapped in this process (loaded without mmap?)")


def present_pages(addr: int, size: int) -> tuple:
    """(pages present in this process's page tables, pages) over [addr, addr + size)."""
    page = mmap.PAGESIZE
    first, last = addr // page, (addr + size - 1) // page
    n = last - first + 1
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(first * 8)
        raw = f.read(n * 8)
    present = sum(1 for i in range(n) if raw[i * 8 + 7] & 0x80)   # bit 63, little-endian
    return present, n


def ple_residency(model_path: str, prompt: str = "The capital of France is", n_gen: int = 32) -> dict:
    """Loads model_path, generates n_gen tokens greedily after prompt, and reports the PLE table's
    pages present in this process against the pages the tokens' rows span."""
    sys.path.insert(0, str(ROOT))
    from llama_py import Llama
    off, nbytes, rows = tensor_span(model_path)
    row_bytes = nbytes // rows
    llm = Llama(model_path, n_ctx=256, verbose=False)
    try:
        addr, _ = mapped_range(model_path, off, nbytes)
        after_load = present_pages(addr, nbytes)[0]
        toks = llm.tokenize(prompt.encode())
        out = llm.create_completion(prompt, max_tokens=n_gen, temperature=0)
        toks += llm.tokenize(out["choices"][0]["text"].encode(), add_bos=False)
        present, total = present_pages(addr, nbytes)
        page = mmap.PAGESIZE
        row_pages = set()
        for t in set(toks):
            a = addr + t * row_bytes
            row_pages.update(range(a // page, (a + row_bytes - 1) // page + 1))
    finally:
        llm.close()
    return dict(table_bytes=nbytes, pages=total, present_after_load=after_load, present=present,
                distinct_tokens=len(set(toks)), row_bytes=row_bytes, row_pages=len(row_pages))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("-n", "--n-gen", type=int, default=32)
    ap.add_argument("--prompt", default="The capital of France is")
    a = ap.parse_args(argv)
    r = ple_residency(a.model, a.prompt, a.n_gen)
    print(f"PLE table {r['table_bytes'] / 2**20:.1f} MiB = {r['pages']} pages; present in this process after load: "
          f"{r['present_after_load']}, after {a.n_gen} tokens: {r['present']} "
          f"({100 * r['present'] / r['pages']:.2f}%); the {r['distinct_tokens']} distinct tokens' rows "
          f"({r['row_bytes']} bytes each) span {r['row_pages']} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
