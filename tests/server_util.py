"""Helpers for the server tests: a uvicorn server on a loopback port in a background thread."""
from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest


def need_server_packages():
    """Skips (naming the package) unless the [server] extra and the test clients are installed."""
    for mod in ("starlette", "uvicorn", "openai", "httpx"):
        pytest.importorskip(mod, reason=f"the server tests need {mod} (pip install -r requirements-server.txt)")


@contextlib.contextmanager
def running_server(entries, api_key=None):
    """Serves entries on 127.0.0.1:<free port>; yields the base URL ("http://127.0.0.1:PORT")."""
    import uvicorn
    from llama_py.server.app import create_app
    app = create_app(entries, api_key=api_key)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    th = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    th.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not th.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        th.join(timeout=30)
        sock.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_healthy(proc, port: int, what: str, log=lambda: "", timeout: float = 60):
    """Waits until a server process answers /health on port; fails naming what, with log()'s
    text, when the process ends or the time runs out."""
    import httpx
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} did not come up:\n{log()}")
        time.sleep(0.2)
