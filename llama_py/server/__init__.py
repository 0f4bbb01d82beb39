"""OpenAI-compatible server: an engine with continuous batching (engine.py), the ASGI app
(app.py, needs the [server] extra), the `serve` command (cli.py) and a Ray Serve application
(ray_app.py, needs the [ray] extra)."""
from .engine import ContextOverflow, Engine, EngineClosed, Event, GenRequest, Model, QueueFull, SamplingParams

__all__ = ["ContextOverflow", "Engine", "EngineClosed", "Event", "GenRequest", "Model", "QueueFull",
           "SamplingParams", "ModelEntry", "create_app"]


def __getattr__(name):
    # the ASGI parts import starlette: only when asked for
    if name in ("ModelEntry", "create_app"):
        from . import app
        return getattr(app, name)
    raise AttributeError(name)
