"""`python -m llama_py serve`: the OpenAI-compatible server under uvicorn.

    python -m llama_py serve                                  # the demo model, 127.0.0.1:8000
    python -m llama_py serve -m model.gguf --parallel 8 --ctx-size 16384 --api-key KEY
    python -m llama_py serve --config models.json             # several models by name
    python -m llama_py serve -m base.gguf --lora a.gguf --lora b.gguf:0.5   # LoRA adapters (ids 0, 1)
    python -m llama_py serve -m big.gguf --draft-model small.gguf --draft-n 8   # speculative decoding

A config file (JSON) names the models and, optionally, server options:
    {"host": "127.0.0.1", "port": 8000, "api_key": null,
     "models": [{"model": "a.gguf", "model_alias": "a", "parallel": 4, "n_ctx": 8192},
                {"model": "b.gguf", "model_alias": "b", "lora": ["x.gguf:0.5"], "draft_model": "ngram", "draft_n": 8}]}
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import socket
import sys
from typing import Any, Dict, List, Tuple

_MODEL_KEYS = {"model", "model_alias", "parallel", "n_ctx", "n_batch", "prefill_chunk", "n_threads", "max_queue",
               "chat_format", "n_gpu_layers", "lora", "draft_model", "draft_n", "swa_full"}


def _parser() -> argparse.ArgumentParser:
    from .. import _cli
    p = _cli.Parser(prog="python -m llama_py serve",
                    description="OpenAI-compatible HTTP server with continuous batching. Ctrl-C stops taking "
                                "requests and waits for open streams to end; a second Ctrl-C stops at once")
    _cli.add_model_args(p, ctx_default=None,
                        ctx_help="KV cells of the context, shared equally by the slots (default: 2048 per slot, "
                                 "or the model's training context if smaller)")
    p.add_argument("--n-ctx", dest="ctx_size", type=_cli.int_range(0), help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--model-alias", default=None,
                   help="name the model is served under (default: the file name without .gguf)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=_cli.int_range(0, 65535), default=8000, help="port to listen on (default 8000)")
    p.add_argument("-np", "--parallel", type=_cli.int_range(1, 64), default=4,
                   help="slots: requests decoded together (default 4)")
    p.add_argument("-b", "--n-batch", type=_cli.int_range(1), default=512, help="most tokens per decode step (default 512)")
    p.add_argument("--prefill-chunk", type=_cli.int_range(1), default=64,
                   help="most prompt tokens per step while other slots generate (default 64)")
    p.add_argument("--swa-full", action="store_true",
                   help="sliding-window layers keep a full-size cache (default: about a window per slot, as "
                        "llama-server; a reused prefix the window has left is decoded again)")
    p.add_argument("--max-queue", type=_cli.int_range(0), default=64,
                   help="requests waiting for a slot before 429 (default 64)")
    p.add_argument("--chat-format", default=None, help="force a built-in chat template by name")
    p.add_argument("--api-key", default=os.environ.get("LLAMA_PY_API_KEY"),
                   help="require Authorization: Bearer KEY (default: $LLAMA_PY_API_KEY, else none)")
    p.add_argument("--lora", action="append", default=[], metavar="PATH[:SCALE]",
                   help="a LoRA adapter (llama.cpp's LoRA GGUF) at SCALE (default 1); repeatable, or comma-separated. "
                        "Ids follow the order; requests pick their own with \"lora\": [{\"id\": 0, \"scale\": 1}]")
    p.add_argument("--lora-scaled", action="append", default=[], metavar="PATH:SCALE",
                   help="a LoRA adapter with its scale (llama.cpp's spelling); repeatable")
    p.add_argument("--lora-init-without-apply", action="store_true",
                   help="load the adapters at scale 0 (set scales later with POST /lora-adapters)")
    p.add_argument("-md", "--draft-model", "--model-draft", "--spec-draft-model", dest="draft_model", default=None,
                   metavar="PATH|ngram",
                   help="speculative decoding: a small model of the same vocabulary drafts tokens that every slot's "
                        "step verifies (output unchanged); 'ngram' drafts by prompt lookup instead")
    p.add_argument("--draft-n", "--draft-max", "--spec-draft-n-max", dest="draft_n", type=_cli.int_range(1, 64),
                   default=8, help="most tokens drafted per slot and step (default 8)")
    p.add_argument("--config", default=None, help="JSON file serving several models by name")
    p.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
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


def build_entries(specs: List[Dict[str, Any]], base_dir: str = ".", show: bool = False) -> list:
    """ModelEntry objects for specs (config-file model entries); show: a loading line for each."""
    from .._cli import loading, model_path
    from .app import ModelEntry
    out = []
    try:
        for m in specs:
            path = m.get("model")
            if path and not os.path.isabs(path) and not os.path.exists(path) \
                    and os.path.exists(os.path.join(base_dir, path)):  # relative to the config file
                path = os.path.join(base_dir, path)
            path = model_path(path, quiet=not show)
            name = m.get("model_alias") or os.path.splitext(os.path.basename(path))[0]
            with loading(path) if show else contextlib.nullcontext():
                out.append(ModelEntry.load(name, path, n_slots=m.get("parallel", 4), n_ctx=m.get("n_ctx"),
                                           n_batch=m.get("n_batch", 512), n_threads=m.get("n_threads"),
                                           prefill_chunk=m.get("prefill_chunk", 64),
                                           max_queue=m.get("max_queue", 64), chat_format=m.get("chat_format"),
                                           n_gpu_layers=m.get("n_gpu_layers", 0),
                                           loras=lora_specs(m.get("lora") or [], base_dir),
                                           draft=_draft_path(m.get("draft_model"), base_dir),
                                           n_draft=m.get("draft_n", 8), swa_full=bool(m.get("swa_full", False))))
    except BaseException:
        for e in out:
            e.close()
        raise
    return out


def _draft_path(draft, base_dir: str):
    if draft and draft != "ngram" and not os.path.isabs(draft) and not os.path.exists(draft) \
            and os.path.exists(os.path.join(base_dir, draft)):
        return os.path.join(base_dir, draft)
    return draft


def lora_specs(items: List[str], base_dir: str = ".", scale0: bool = False) -> List[Tuple[str, float]]:
    """(path, scale) of each `PATH[:SCALE]` item (comma-separated lists split; paths relative to
    base_dir when not found as given); scale0: every scale 0 (--lora-init-without-apply)."""
    from .lora import parse_lora_arg
    out = []
    for item in items:
        for spec in str(item).split(","):
            if not spec:
                continue
            path, scale = parse_lora_arg(spec)
            if not os.path.isabs(path) and not os.path.exists(path) and os.path.exists(os.path.join(base_dir, path)):
                path = os.path.join(base_dir, path)
            out.append((path, 0.0 if scale0 else scale))
    return out


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; raises UserError naming the address when it cannot bind."""
    from .._cli import UserError
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as e:
        raise UserError(f"cannot listen on {host}:{port}: {e}")
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as e:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror or e} (--port picks another)")
    sock.set_inheritable(True)
    return sock


def _server_class(uvicorn):
    class Server(uvicorn.Server):
        """uvicorn's server, saying on the first Ctrl-C what it waits for and how to stop at once."""

        def handle_exit(self, sig, frame):
            if not self.should_exit and sig == signal.SIGINT:
                n = len(getattr(self.server_state, "connections", ()) or ())
                try:
                    print(f"stopping: no new requests; waiting for {n} open connection(s) and their streams to "
                          "finish (Ctrl-C again stops at once)", file=sys.stderr, flush=True)
                except OSError:  # stderr gone (a closed pipe): stopping matters more than saying so
                    pass
            super().handle_exit(sig, frame)
    return Server


def main(argv=None) -> int:
    from .._cli import UserError
    a = _parser().parse_args(argv)
    try:
        import uvicorn
        from .app import create_app
    except ImportError as e:
        raise UserError(f"the server needs the [server] extra: pip install \"llama_py[server]\" ({e})")
    if a.verbose:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    host, port, api_key = a.host, a.port, a.api_key
    if a.config:
        try:
            cfg = load_config(a.config)
        except (OSError, ValueError) as e:
            raise UserError(str(e))
        host = cfg.get("host", host)
        port = cfg.get("port", port)
        api_key = cfg.get("api_key", api_key)
        specs = cfg["models"]
        base = os.path.dirname(os.path.abspath(a.config))
    else:
        specs = [{"model": a.model, "model_alias": a.model_alias, "parallel": a.parallel, "n_ctx": a.ctx_size,
                  "n_batch": a.n_batch, "prefill_chunk": a.prefill_chunk,
                  "n_threads": a.threads, "max_queue": a.max_queue,
                  "chat_format": a.chat_format, "n_gpu_layers": 999 if a.n_gpu_layers < 0 else a.n_gpu_layers,
                  "lora": a.lora + a.lora_scaled, "draft_model": a.draft_model, "draft_n": a.draft_n,
                  "swa_full": a.swa_full}]
        base = "."
    entries = build_entries(specs, base, show=True)
    if a.lora_init_without_apply:
        for e in entries:
            e.engine.loras.set_scales({})   # every adapter at 0 until POST /lora-adapters
    try:
        sock = _listen(host, port)
    except BaseException:
        for e in entries:
            e.close()
        raise
    for e in entries:
        eng = e.engine
        if eng.n_ctx_slot < 256:
            print(f"warning: {e.name}: each of the {eng.n_slots} slots holds {eng.n_ctx_slot} tokens "
                  f"({eng.n_ctx} cells / {eng.n_slots} slots): a longer prompt plus reply is refused; raise "
                  "-c/--ctx-size or lower -np/--parallel", file=sys.stderr)
    app = create_app(entries, api_key=api_key)
    names = ", ".join(e.name for e in entries)
    shown = f"[{host}]" if ":" in host else host
    print(f"llama_py server: {names} on http://{shown}:{sock.getsockname()[1]}/v1 "
          f"({entries[0].engine.n_slots} slots x {entries[0].engine.n_ctx_slot} tokens); Ctrl-C stops",
          file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level=a.log_level)
    _server_class(uvicorn)(config).run(sockets=[sock])
    return 0
