#!/usr/bin/env python3
"""Tokenizer speed: ours (libllama, one llama_tokenize call) against the reference tokenizers
(sentencepiece for SPM vocabularies, HF tokenizers for byte-level BPE ones) on ~1 MB of English.

    python scripts/bench_tokenizer.py                      # every test vocab (+ SmolLM2 if cached)
    python scripts/bench_tokenizer.py --mb 4 --vocab gpt-2 # more text, one vocab
    python scripts/bench_tokenizer.py --scaling            # 1, 2, 4, 8 MB: time per MB stays flat

The text is the English prose of Python's own documentation (pydoc_data.topics), repeated to
size, so the benchmark needs no download. Both sides must produce identical tokens; the script
says so. A benchmark, not a test: the numbers depend on the machine and its load.
Vocabularies: --vocab-dir, else llama_py.pull_vocab ($LLAMA_PY_VOCAB_DIR, ../shared/vocab, the
user cache, or fetched once from llama-cpp-python's sdist); SmolLM2 from the user cache.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from llama_py._capi import model as M  # noqa: E402
from llama_py._capi import vocab as V  # noqa: E402
from llama_py.pull import demo_model_path  # noqa: E402
from llama_py.pull_vocab import ALL_VOCABS, CORE_VOCABS, pull_vocab  # noqa: E402
import test_tokenizer as T  # noqa: E402  (the reference builders)
import test_vocab_pre as P  # noqa: E402  (the published regexes of the other pre-tokenizer families)

# pre name -> the family whose regexes test_vocab_pre writes out, for names that share them
SAME_REGEXES = {"command-r": "starcoder", "refact": "starcoder", "mpt": "gpt-2"}


def reference_regexes(pre: str):
    """The regexes HF tokenizers applies for pre (None when the scripts know no reference)."""
    if pre in T.PRE_REGEXES:
        return T.PRE_REGEXES[pre]
    fam = P.FAMILIES.get(SAME_REGEXES.get(pre, pre))
    return fam[0] if fam and not fam[1] else None

SMOLLM2 = demo_model_path()  # `python -m llama_py pull` puts it there


def english_text(n_bytes: int) -> str:
    import pydoc_data.topics as topics
    base = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))
    out = (base * (n_bytes // len(base.encode()) + 1)).encode()[:n_bytes]
    return out.decode("utf-8", "ignore")


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def ours_tokenize(vocab, data: bytes):
    # One call into a buffer that is large enough (a token covers at least one byte), as a
    # caller that knows the text length does.
    cap = len(data) + 8
    buf = (V.llama_token * cap)()
    n = V.llama_tokenize(vocab, data, len(data), buf, cap, False, False)
    assert n >= 0
    return buf[:n]


def bench(name: str, path: Path, text: str, repeat: int):
    gv = T.GGUFVocab(path)
    gv.pre = gv.pre or "default"  # a gpt2 vocab without the key gets the default pre-tokenizer
    p = M.llama_model_default_params()
    p.vocab_only = True
    t = time.perf_counter()
    model = M.llama_model_load_from_file(str(path).encode(), p)
    load_ms = (time.perf_counter() - t) * 1e3
    vocab = M.llama_model_get_vocab(model)
    if gv.model == "llama":
        ref = T.build_sentencepiece(gv)
        ref_fn = lambda: ref.encode(text)  # noqa: E731
        ref_name = "sentencepiece"
    else:
        T.PRE_REGEXES.setdefault(gv.pre, reference_regexes(gv.pre))
        ref = T.build_hf(gv, gv.pre, False)
        ref_fn = lambda: ref.encode(text, add_special_tokens=False).ids  # noqa: E731
        ref_name = "HF tokenizers"
    data = text.encode()
    ours_ids = list(ours_tokenize(vocab, data))
    same = ours_ids == list(ref_fn())
    t_ours = best_of(lambda: ours_tokenize(vocab, data), repeat)
    t_ref = best_of(ref_fn, repeat)
    mb = len(data) / 1e6
    print(f"{name:10s} {len(data) / 1e6:5.2f} MB {len(ours_ids):8d} tokens  load {load_ms:6.1f} ms  "
          f"ours {mb / t_ours:6.2f} MB/s  {ref_name} {mb / t_ref:6.2f} MB/s  "
          f"x{t_ref / t_ours:5.2f}  {'identical' if same else 'DIFFERENT TOKENS'}")
    M.llama_model_free(model)
    return same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", action="append", help="vocab name (gpt-2, llama-bpe, qwen2, llama-spm, phi-3, smollm2)")
    ap.add_argument("--mb", type=float, default=1.0, help="megabytes of text")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scaling", action="store_true", help="time 1, 2, 4, 8 MB with ours only")
    ap.add_argument("--all", action="store_true", help="every vocabulary of the sdist, not only the five core ones")
    ap.add_argument("--vocab-dir", help="folder of vocab-only GGUFs (default: llama_py.pull_vocab)")
    args = ap.parse_args()
    vocab_dir = Path(args.vocab_dir) if args.vocab_dir else pull_vocab(names=ALL_VOCABS if args.all else CORE_VOCABS)
    paths = {p.stem: p for p in sorted(vocab_dir.glob("*.gguf"))}
    if SMOLLM2.exists():
        paths["smollm2"] = SMOLLM2
    # default: the vocabularies with a reference here (not WordPiece / unigram / Gemma 4's BPE)
    names = args.vocab or [n for n, p in paths.items()
                           if T.GGUFVocab(p).model == "llama"
                           or (T.GGUFVocab(p).model == "gpt2" and reference_regexes(T.GGUFVocab(p).pre or "default"))]
    if args.scaling:
        for name in names:
            p = M.llama_model_default_params()
            p.vocab_only = True
            model = M.llama_model_load_from_file(str(paths[name]).encode(), p)
            vocab = M.llama_model_get_vocab(model)
            for mb in (1, 2, 4, 8):
                data = english_text(int(mb * 1e6)).encode()
                t = best_of(lambda: ours_tokenize(vocab, data), 1)
                print(f"{name:10s} {mb:3d} MB  {t:7.3f} s  {t / mb * 1e3:7.1f} ms/MB")
            M.llama_model_free(model)
        return 0
    text = english_text(int(args.mb * 1e6))
    ok = True
    for name in names:
        ok &= bench(name, paths[name], text, args.repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
