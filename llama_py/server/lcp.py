"""llama-cpp-python's server entry points on llama_py's server, for code written for
`llama_cpp.server` (install_as_llama_cpp() maps llama_cpp.server, .app and .settings here):

    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings
    app = create_app(server_settings=ServerSettings(port=8000),
                     model_settings=[ModelSettings(model="m.gguf", model_alias="m", n_ctx=4096)])

Settings take llama-cpp-python's field names. What llama_py's server uses: model, model_alias,
n_ctx (one request's context: its server runs one request at a time, ours as many as
`n_parallel`, default 1 here, each with n_ctx cells), n_batch, n_threads, n_gpu_layers,
chat_format, api_key, host, port. The other fields are accepted and have no effect (logged).
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


def main(argv: Optional[List[str]] = None) -> int:
    """`python -m llama_cpp.server`'s command line (--model, --n_ctx, --host, --port, ...)."""
    parser = argparse.ArgumentParser(prog="llama_cpp.server", description="llama_py's server, llama-cpp-python's options")
    for k, v in {**_MODEL_DEFAULTS, **_SERVER_DEFAULTS}.items():
        kind = type(v) if v is not None and not isinstance(v, bool) else str
        if isinstance(v, bool):
            parser.add_argument(f"--{k}", type=lambda s: s.lower() in ("1", "true", "yes"), default=v)
        else:
            parser.add_argument(f"--{k}", type=kind, default=v)
    ns = vars(parser.parse_args(argv))
    settings = Settings(**ns)
    import uvicorn
    uvicorn.run(create_app(settings=settings), host=settings.host, port=settings.port)
    return 0
