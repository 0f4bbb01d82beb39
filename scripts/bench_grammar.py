"""Grammar sampler cost per token: llama_sampler_apply over the full vocabulary's candidates,
then llama_sampler_accept, while a JSON document is produced token by token (teacher-forced:
the document's own tokens are accepted, so every grammar state of a real output is visited).

    PYTHONPATH=$PWD:$PWD/tests python scripts/bench_grammar.py [--smollm2 PATH] [--qwen PATH]

Grammars: llama.cpp's json.gbnf (from the llama-cpp-python 0.3.36 sdist, via tests/grammar_util)
and a nested JSON schema; vocabularies: SmolLM2 (49k) and Qwen2.5 (152k, vocab-only GGUF).
"first" is a fresh sampler (every state's mask computed on first sight, as in a new request);
"again" replays the same document after llama_sampler_reset (masks cached). Also: compile time
of a 50-property schema (GBNF text in Python, then the C sampler on an already-seen vocab) and
the one-off token-trie build per vocabulary. Timings include two ctypes calls (~1-2 us) and are
the calling thread's CPU time (wall time in brackets).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import llama_py.llama_cpp as L  # noqa: E402
from llama_py.grammar import json_schema_to_gbnf  # noqa: E402

NESTED_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9]+\\.[a-z]{2,4}$"},
        "address": {"type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"},
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            "geo": {"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                                     "lon": {"type": "number", "minimum": -180, "maximum": 180}},
                    "required": ["lat", "lon"]}},
            "required": ["street", "city", "zip", "geo"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 8},
        "orders": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1, "maximum": 99},
            "when": {"type": "string", "format": "date-time"}}, "required": ["sku", "qty", "when"]}},
        "active": {"type": "boolean"},
    },
    "required": ["id", "name", "age", "email", "address", "tags", "orders", "active"],
}

NESTED_DOC = {
    "id": "3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b", "name": "Ada Lovelace", "age": 36,
    "email": "ada.lovelace@analytical.org",
    "address": {"street": "12 St James's Square", "city": "London", "zip": "12345",
                "geo": {"lat": 51.5074, "lon": -0.1278}},
    "tags": ["math", "engines", "poetry", "notes"],
    "orders": [{"sku": "BERN-001", "qty": 2, "when": "1843-07-10T09:30:00Z"},
               {"sku": "DIFF-ENG", "qty": 1, "when": "1843-09-01T17:05:00+01:00"}],
    "active": True,
}

JSON_DOC = {"glossary": {"title": "example glossary", "GlossDiv": {"title": "S", "GlossList": {"GlossEntry": {
    "ID": "SGML", "SortAs": "SGML", "GlossTerm": "Standard Generalized Markup Language", "Acronym": "SGML",
    "Abbrev": "ISO 8879:1986", "GlossDef": {"para": "A meta-markup language, used to create markup languages.",
                                            "GlossSeeAlso": ["GML", "XML"]}, "GlossSee": "markup",
    "count": -12.5e3, "ok": [True, False, None, 0, 17]}}}}}


def fifty_property_schema():
    kinds = [{"type": "string", "maxLength": 30}, {"type": "integer", "minimum": 0, "maximum": 1000},
             {"type": "number"}, {"type": "boolean"}, {"enum": ["a", "b", "c"]},
             {"type": "string", "format": "date"}, {"type": "array", "items": {"type": "integer"}, "maxItems": 5},
             {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}]
    props = {f"field_{i}": kinds[i % len(kinds)] for i in range(50)}
    return {"type": "object", "properties": props, "required": [f"field_{i}" for i in range(0, 50, 2)]}


def tokens(vocab, text):
    data = text.encode()
    buf = (L.llama_token * (len(data) + 8))()
    n = L.llama_tokenize(vocab, data, len(data), buf, len(buf), False, False)
    return list(buf[:n])


def run(vocab, n_vocab, gbnf, toks, rng):
    arr = np.zeros(n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
    ptr = arr.ctypes.data_as(ctypes.POINTER(L.llama_token_data))
    logits = rng.standard_normal(n_vocab).astype(np.float32)
    smpl = L.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
    if not smpl:
        raise SystemExit("the grammar did not compile")
    out = {}
    for phase in ("first", "again"):
        times = []
        for t in toks:
            arr["id"] = np.arange(n_vocab)
            arr["logit"] = logits
            da = L.llama_token_data_array(ptr, n_vocab, -1, False)
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            L.llama_sampler_apply(smpl, ctypes.byref(da))
            L.llama_sampler_accept(smpl, t)
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            if arr["logit"][t] == -np.inf:
                raise SystemExit(f"document token {t} refused by the grammar")
            times.append(((c1 - c0) / 1e6, (t1 - t0) / 1e6))
        out[phase] = np.array(times)
        L.llama_sampler_reset(smpl)
    L.llama_sampler_free(smpl)
    return out


def main():
    from llama_py.pull import demo_model_path
    ap = argparse.ArgumentParser()
    ap.add_argument("--smollm2", default=str(demo_model_path()))
    ap.add_argument("--qwen", default=str(ROOT.parent / "shared" / "vocab" / "qwen2.gguf"))
    args = ap.parse_args()
    from grammar_util import published_grammars
    json_gbnf = published_grammars()["json"]
    schema_gbnf = json_schema_to_gbnf(NESTED_SCHEMA)
    rng = np.random.default_rng(0)
    print(f"machine: {os.cpu_count()} CPUs (shared: other jobs may run; figures are indicative)")
    print("per token, apply + accept; CPU time of the calling thread (wall-clock mean / p99 in brackets:")
    print("on a busy machine wall time also counts time the thread waited for a core)")
    print(f"{'vocab':>8} {'grammar':>14} {'tokens':>6} {'phase':>6} {'mean ms':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'max ms':>8}  {'wall mean / p99':>16}")
    for label, path in (("SmolLM2", args.smollm2), ("Qwen2.5", args.qwen)):
        p = L.llama_model_default_params()
        p.vocab_only = True
        model = L.llama_model_load_from_file(path.encode(), p)
        if not model:
            print(f"{label}: cannot load {path}")
            continue
        vocab = L.llama_model_get_vocab(model)
        n_vocab = L.llama_vocab_n_tokens(vocab)
        t0 = time.perf_counter()
        s = L.llama_sampler_init_grammar(vocab, b'root ::= "x"', b"root")  # builds and caches the token trie
        trie_ms = (time.perf_counter() - t0) * 1e3
        L.llama_sampler_free(s)
        for gname, gbnf, doc in (("json.gbnf", json_gbnf, JSON_DOC), ("nested schema", schema_gbnf, NESTED_DOC)):
            toks = tokens(vocab, json.dumps(doc, separators=(", ", ": ")))
            res = run(vocab, n_vocab, gbnf, toks, rng)
            for phase, both in res.items():
                t, w = both[:, 0], both[:, 1]
                print(f"{label:>8} {gname:>14} {len(toks):>6} {phase:>6} {t.mean():8.3f} {np.median(t):8.3f} "
                      f"{np.percentile(t, 99):8.3f} {t.max():8.3f}  ({w.mean():.3f} / {np.percentile(w, 99):.3f})")
        sch = fifty_property_schema()
        ts_py, ts_c = [], []
        for _ in range(20):
            t0 = time.perf_counter()
            g = json_schema_to_gbnf(sch)
            t1 = time.perf_counter()
            s = L.llama_sampler_init_grammar(vocab, g.encode(), b"root")
            t2 = time.perf_counter()
            assert s
            L.llama_sampler_free(s)
            ts_py.append((t1 - t0) * 1e3)
            ts_c.append((t2 - t1) * 1e3)
        print(f"{label:>8} 50-property schema compile: schema->GBNF {np.median(ts_py):.2f} ms + sampler "
              f"{np.median(ts_c):.2f} ms (median of 20; {len(g)} chars of GBNF); token trie build once per "
              f"vocabulary {trie_ms:.1f} ms")
        L.llama_model_free(model)


if __name__ == "__main__":
    main()
