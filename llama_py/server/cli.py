"""`python -m llama_py serve`: the OpenAI-compatible server under uvicorn.

    python -m llama_py serve                                  # the demo model, 127.0.0.1:8000
    python -m llama_py serve -m model.gguf --parallel 8 --n-ctx 16384 --api-key KEY
    python -m llama_py serve --config models.json             # several models by name

A config file (JSON) names the models and, optionally, server options:
    {"host": "127.0.0.1", "port": 8000, "api_key": null,
     "models": [{"model": "a.gguf", "model_alias": "a", "parallel": 4, "n_ctx": 8192},
                {"model": "b.gguf", "model_alias": "b"}]}
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

_MODEL_KEYS = {"model", "model_alias", "parallel", "n_ctx", "n_batch", "n_threads", "max_queue", "chat_format",
               "n_gpu_layers"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m llama_py serve",
                                description="OpenAI-compatible HTTP server with continuous batching")
    p.add_argument("-m", "--model", default=None, help="GGUF file (default: the demo model, pulled if needed)")
    p.add_argument("--model-alias", default=None, help="name the model is served under (default: the file's stem)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("-np", "--parallel", type=int, default=4, help="slots: requests decoded together (default 4)")
    p.add_argument("-c", "--n-ctx", type=int, default=None,
                   help="KV cells of the context, shared equally by the slots (default 2048 per slot)")
    p.add_argument("-b", "--n-batch", type=int, default=512, help="most tokens per decode step")
    p.add_argument("-t", "--threads", type=int, default=None, help="default: the physical cores")
    p.add_argument("--max-queue", type=int, default=64, help="requests waiting for a slot before 429 (default 64)")
    p.add_argument("--chat-format", default=None, help="force a built-in chat template by name")
    p.add_argument("--api-key", default=os.environ.get("LLAMA_PY_API_KEY"),
                   help="require Authorization: Bearer KEY (default: $LLAMA_PY_API_KEY, else none)")
    p.add_argument("--config", default=None, help="JSON file serving several models by name")
    p.add_argument("--log-level", default="warning", help="uvicorn's log level")
    return p


def load_config(path: str) -> Dict[str, Any]:
    """The config file's contents, checked: raises ValueError naming the bad entry."""
    with open(path, encoding="utf-8") as f:
        try:
            cfg = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON: {e}")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("models"), list) or not cfg["models"]:
        raise ValueError(f"{path}: needs a non-empty \"models\" array")
    names = set()
    for i, m in enumerate(cfg["models"]):
        if not isinstance(m, dict) or not isinstance(m.get("model"), str):
            raise ValueError(f"{path}: models[{i}] needs a \"model\" path")
        unknown = set(m) - _MODEL_KEYS
        if unknown:
            raise ValueError(f"{path}: models[{i}]: unknown keys {sorted(unknown)} (known: {sorted(_MODEL_KEYS)})")
        name = m.get("model_alias") or os.path.splitext(os.path.basename(m["model"]))[0]
        if name in names:
            raise ValueError(f"{path}: models[{i}]: the name {name!r} is used twice")
        names.add(name)
    return cfg


def build_entries(specs: List[Dict[str, Any]], base_dir: str = ".") -> list:
    """ModelEntry objects for specs (config-file model entries)."""
    from ..pull import resolve_model
    from .app import ModelEntry
    out = []
    try:
        for m in specs:
            path = m.get("model")
            if path and not os.path.isabs(path) and not os.path.exists(path):
                path = os.path.join(base_dir, path)
            path = resolve_model(path, quiet=True)
            name = m.get("model_alias") or os.path.splitext(os.path.basename(path))[0]
            out.append(ModelEntry.load(name, path, n_slots=m.get("parallel", 4), n_ctx=m.get("n_ctx"),
                                       n_batch=m.get("n_batch", 512), n_threads=m.get("n_threads"),
                                       max_queue=m.get("max_queue", 64), chat_format=m.get("chat_format"),
                                       n_gpu_layers=m.get("n_gpu_layers", 0)))
    except BaseException:
        for e in out:
            e.close()
        raise
    return out


def main(argv=None) -> int:
    a = _parser().parse_args(argv)
    try:
        import uvicorn
        from .app import create_app
    except ImportError as e:
        print(f"error: the server needs the [server] extra: pip install \"llama_py[server]\" ({e})", file=sys.stderr)
        return 1
    host, port, api_key = a.host, a.port, a.api_key
    if a.config:
        try:
            cfg = load_config(a.config)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        host = cfg.get("host", host)
        port = cfg.get("port", port)
        api_key = cfg.get("api_key", api_key)
        specs = cfg["models"]
        base = os.path.dirname(os.path.abspath(a.config))
    else:
        specs = [{"model": a.model, "model_alias": a.model_alias, "parallel": a.parallel, "n_ctx": a.n_ctx,
                  "n_batch": a.n_batch, "n_threads": a.threads, "max_queue": a.max_queue,
                  "chat_format": a.chat_format}]
        base = "."
    entries = build_entries(specs, base)
    app = create_app(entries, api_key=api_key)
    names = ", ".join(e.name for e in entries)
    print(f"llama_py server: {names} on http://{host}:{port}/v1 "
          f"({entries[0].engine.n_slots} slots x {entries[0].engine.n_ctx_slot} tokens)", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level=a.log_level)
    return 0
