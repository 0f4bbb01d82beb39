"""llama-cpp-python's server entry points on llama_py's server, for code written for
`llama_cpp.server` (install_as_llama_cpp() maps llama_cpp.server, .app and .settings here):

    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings
    app = create_app(server_settings=ServerSettings(port=8000),
                     model_settings=[ModelSettings(model="m.gguf", model_alias="m", n_ctx=4096)])

Settings take llama-cpp-python's field names. What llama_py's server uses: model, model_alias,
n_ctx (one request's context: its server runs one request at a time, ours as many as
`n_parallel`, default 1 here, each with n_ctx cells), n_batch, n_threads, n_gpu_layers,
chat_format, api_key, host, port. Settings that ask for a capability this entry point does not
wire (lora_base / lora_path, draft_model, clip_model_path) are a ValueError naming them; llama_py's
own `serve` has `--lora` and `--draft-model`. The other fields are accepted and have no effect
(logged).
"""
from __future__ import annotations

import argparse
import logging
from typing import Any, Dict, List, Optional

log = logging.getLogger("llama_py.server")

_MODEL_DEFAULTS: Dict[str, Any] = {
    "model": None, "model_alias": None, "n_gpu_layers": 0, "split_mode": None, "main_gpu": 0, "tensor_split": None,
    "vocab_only": False, "use_mmap": True, "use_mlock": False, "kv_overrides": None, "rpc_servers": None,
    "seed": None, "n_ctx": 2048, "n_batch": 512, "n_ubatch": 512, "n_threads": None, "n_threads_batch": None,
    "rope_scaling_type": None, "rope_freq_base": 0.0, "rope_freq_scale": 0.0, "yarn_ext_factor": -1.0,
    "yarn_attn_factor": 1.0, "yarn_beta_fast": 32.0, "yarn_beta_slow": 1.0, "yarn_orig_ctx": 0, "mul_mat_q": True,
    "logits_all": True, "embedding": False, "offload_kqv": True, "flash_attn": False, "last_n_tokens_size": 64,
    "lora_base": None, "lora_path": None, "numa": False, "chat_format": None, "chat_template_kwargs": None,
    "clip_model_path": None, "cache": False, "cache_type": "ram", "cache_size": 2 << 30,
    "hf_tokenizer_config_path": None, "hf_pretrained_model_name_or_path": None, "hf_model_repo_id": None,
    "draft_model": None, "draft_model_num_pred_tokens": 10, "type_k": None, "type_v": None, "verbose": True,
    "n_parallel": 1,
}
_SERVER_DEFAULTS: Dict[str, Any] = {
    "host": "localhost", "port": 8000, "ssl_keyfile": None, "ssl_certfile": None, "api_key": None,
    "interrupt_requests": True, "disable_ping_events": False, "root_path": "",
}
# asking for these and silently not getting them would change what the model does
_REFUSED = {"lora_base", "lora_path", "draft_model", "clip_model_path"}
_USED = {"model", "model_alias", "n_gpu_layers", "n_ctx", "n_batch", "n_threads", "chat_format", "n_parallel",
         "host", "port", "api_key"}


class _Fields:
    _defaults: Dict[str, Any] = {}

    def __init__(self, **kwargs: Any):
        unknown = set(kwargs) - set(self._defaults)
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown settings {sorted(unknown)}")
        for k, v in self._defaults.items():
            setattr(self, k, kwargs.get(k, v))
        refused = sorted(k for k in kwargs if k in _REFUSED and kwargs[k] is not None)
        if refused:
            raise ValueError(f"{type(self).__name__}: {', '.join(refused)} not supported by the llama_cpp.server "
                             "entry point (use `python -m llama_py serve --lora PATH` / `--draft-model PATH`)")
        ignored = sorted(k for k in kwargs if k not in _USED and kwargs[k] != self._defaults[k])
        if ignored:
            log.warning("%s: %s have no effect on llama_py's server", type(self).__name__, ", ".join(ignored))

    def model_dump(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in self._defaults}


class ModelSettings(_Fields):
    """One model to serve (llama-cpp-python's field names)."""
    _defaults = _MODEL_DEFAULTS


class ServerSettings(_Fields):
    """Where and how to serve (llama-cpp-python's field names)."""
    _defaults = _SERVER_DEFAULTS


class Settings(_Fields):
    """ServerSettings and ModelSettings in one (one model)."""
    _defaults = {**_MODEL_DEFAULTS, **_SERVER_DEFAULTS}


class ConfigFileSettings(_Fields):
    """ServerSettings plus a list of models."""
    _defaults = {**_SERVER_DEFAULTS, "models": []}


def _entry(ms: Any):
    from .app import ModelEntry
    if not ms.model:
        raise ValueError("ModelSettings.model (the GGUF path) is required")
    return ModelEntry.load(ms.model_alias or ms.model, ms.model, n_slots=max(1, ms.n_parallel),
                           n_ctx=ms.n_ctx * max(1, ms.n_parallel) if ms.n_ctx else None, n_batch=ms.n_batch,
                           n_threads=ms.n_threads, chat_format=ms.chat_format, n_gpu_layers=ms.n_gpu_layers)


def create_app(settings: Optional[Settings] = None, server_settings: Optional[ServerSettings] = None,
               model_settings: Optional[List[ModelSettings]] = None):
    """The ASGI app serving model_settings (or the model of settings) with llama_py's server."""
    if server_settings is None:
        server_settings = ServerSettings(**{k: getattr(settings, k) for k in _SERVER_DEFAULTS}) if settings \
            else ServerSettings()
    if model_settings is None:
        if settings is None:
            raise ValueError("create_app needs settings= or model_settings=")
        model_settings = [ModelSettings(**{k: getattr(settings, k) for k in _MODEL_DEFAULTS})]
    from .app import create_app as _create_app
    entries = []
    try:
        for ms in model_settings:
            entries.append(_entry(ms))
    except BaseException:
        for e in entries:
            e.close()
        raise
    return _create_app(entries, api_key=server_settings.api_key)


# fields whose default is None: the type their command-line value has
_TYPES: Dict[str, Any] = {
    "seed": int, "n_threads": int, "n_threads_batch": int, "rope_scaling_type": int, "split_mode": int,
    "type_k": int, "type_v": int, "tensor_split": float, "kv_overrides": "json", "chat_template_kwargs": "json",
}
_LISTS = {"tensor_split"}


def _bool(s: str) -> bool:
    v = str(s).strip().lower()
    if v in ("1", "true", "yes", "on", "y", "t"):
        return True
    if v in ("0", "false", "no", "off", "n", "f", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {s!r}")


def _json_object(s: str) -> Dict[str, Any]:
    import json
    try:
        v = json.loads(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected a JSON object: {e}")
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return v


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m llama_cpp.server",
                                     description="llama_py's server with llama-cpp-python's options (--model, "
                                                 "--n_ctx, --host, --port, ...; each also read from the environment "
                                                 "variable of its upper-case name, as pydantic-settings does)")
    for k, v in {**_MODEL_DEFAULTS, **_SERVER_DEFAULTS}.items():
        kind = _TYPES.get(k, type(v) if v is not None else str)
        if isinstance(v, bool):
            kind = _bool
        elif kind == "json":
            kind = _json_object
        parser.add_argument(f"--{k}", dest=k, type=kind, default=None, nargs="*" if k in _LISTS else None)
    parser.add_argument("--config_file", type=str, default=None,
                        help="JSON (or YAML, with PyYAML) file of server settings and a `models` list")
    return parser


def _from_env(parser: argparse.ArgumentParser, ns: Dict[str, Any]) -> Dict[str, Any]:
    """Fields not given on the command line, from their upper-case environment variables."""
    import os
    out = dict(ns)
    for action in parser._actions:
        k = action.dest
        if k in out and out[k] is None and k.upper() in os.environ and k != "config_file":
            raw = os.environ[k.upper()]
            out[k] = [action.type(x) for x in raw.split()] if action.nargs == "*" else action.type(raw)
    return {k: v for k, v in out.items() if v is not None}


def _config_file(path: str):
    """(ServerSettings, [ModelSettings]) of a llama-cpp-python config file."""
    import json
    import os
    if not os.path.exists(path):
        raise ValueError(f"Config file {path} not found!")
    with open(path, "rb") as f:
        if path.endswith((".yaml", ".yml")):
            import yaml
            data = yaml.safe_load(f)
        else:
            data = json.loads(f.read())
    models = data.pop("models", [])
    return ServerSettings(**data), [ModelSettings(**m) for m in models]


def main(argv: Optional[List[str]] = None) -> int:
    """`python -m llama_cpp.server`'s command line: every llama-cpp-python setting as --name VALUE
    (or the environment variable NAME), --config_file FILE (or CONFIG_FILE); HOST and PORT
    override the host and port, as llama-cpp-python's __main__ has it."""
    import os
    import sys
    parser = _parser()
    ns = vars(parser.parse_args(argv))
    try:
        config = os.environ.get("CONFIG_FILE", ns.pop("config_file"))
        if config:
            server, models = _config_file(config)
        else:
            given = _from_env(parser, ns)
            server = ServerSettings(**{k: v for k, v in given.items() if k in _SERVER_DEFAULTS})
            models = [ModelSettings(**{k: v for k, v in given.items() if k in _MODEL_DEFAULTS})]
        app = create_app(server_settings=server, model_settings=models)
    except Exception as e:  # a bad setting or file: said, with the options, as llama-cpp-python does
        print(e, file=sys.stderr)
        parser.print_help(sys.stderr)
        return 1
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", server.host), port=int(os.getenv("PORT", server.port)),
                ssl_keyfile=server.ssl_keyfile, ssl_certfile=server.ssl_certfile)
    return 0


if __name__ == "__main__":  # python -m llama_cpp.server (through the shim) runs this file as __main__
    raise SystemExit(main())
