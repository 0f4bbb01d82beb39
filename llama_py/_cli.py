"""What the subcommands of `python -m llama_py` share: one spelling per option (-m, -c/--ctx-size,
-t/--threads, -ngl/--n-gpu-layers, -v/--verbose), user errors as one line and exit code 1, the
"loading model" line, and Ctrl-C turned into a flag where a command stops work on its own terms.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional


class UserError(Exception):
    """A mistake in what the user asked for: printed as `error: MESSAGE`, exit code 1."""


class Parser(argparse.ArgumentParser):
    """argparse with llama.cpp's exit code for a bad option (1) and one line instead of the usage
    block; -h still prints the whole help. Every parser also answers --version."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from . import __version__
        self.add_argument("--version", action="version", version=f"llama_py {__version__}",
                          help="print the version and exit")

    def error(self, message):
        print(f"{self.prog}: error: {message} (-h lists the options)", file=sys.stderr)
        raise SystemExit(1)


def int_range(lo: Optional[int] = None, hi: Optional[int] = None, also: tuple = ()):
    """An argparse type: an integer in [lo, hi] (either bound open when None), or one of `also`."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
        if v in also or ((lo is None or v >= lo) and (hi is None or v <= hi)):
            return v
        allowed = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        extra = "".join(f" or {x}" for x in also)
        raise argparse.ArgumentTypeError(f"must be {allowed}{extra}, got {v}")
    parse.__name__ = "integer"
    return parse


def add_model_args(p: argparse.ArgumentParser, ctx_default: Optional[int] = 2048,
                   ctx_help: str = "context size in tokens, rounded up to a multiple of 256; 0: the model's "
                                   "training context") -> None:
    """-m, -c/--ctx-size, -t/--threads, -ngl/--n-gpu-layers, -v/--verbose, spelled alike in every command."""
    from .pull import known_names
    p.add_argument("-m", "--model", default=None,
                   help=f"GGUF file, or a name `pull` knows ({', '.join(known_names())}); default: the demo model, "
                        "pulled if needed")
    p.add_argument("-c", "--ctx-size", type=int_range(0), default=ctx_default, help=ctx_help)
    p.add_argument("-t", "--threads", type=int_range(1, 4096), default=None,
                   help="CPU threads (default: the physical cores)")
    p.add_argument("-ngl", "--n-gpu-layers", type=int_range(0, also=(-1,)), default=0,
                   help="blocks offloaded to a CUDA GPU (-1: all; default 0). serve and bench offload; run "
                        "and chat (the Llama class) run on the CPU and say so")
    p.add_argument("-v", "--verbose", action="store_true", help="show the library's log")


def model_path(arg: Optional[str], quiet: bool = False) -> str:
    """The GGUF file -m names: a path, a name `pull` knows (pulled if needed), or the demo model."""
    from .pull import resolve_model
    path = resolve_model(arg, quiet=quiet)
    if os.path.isdir(path):
        raise UserError(f"-m {arg}: is a folder; give a .gguf file (convert a Hugging Face folder with "
                        "`python -m llama_py convert`)")
    if not os.path.isfile(path):
        from .pull import known_names
        raise UserError(f"-m {arg}: no such file, nor a name `pull` knows ({', '.join(known_names())})")
    return path


def _mib(path: str) -> str:
    try:
        return f"{os.path.getsize(path) / 2**20:.0f} MiB"
    except OSError:
        return "?"


@contextmanager
def loading(path: str, verbose: bool = False) -> Iterator[None]:
    """On a terminal: `loading NAME (SIZE) ...`, then a percentage and the seconds while the load
    runs over a second (the library's calls free the interpreter, so a thread can draw), and
    `loaded in T s` at the end; elsewhere one line `loaded NAME (SIZE) in T s`. All on stderr."""
    from . import _load_guard
    name = os.path.basename(path)
    tty = sys.stderr.isatty() and not verbose
    t0 = time.monotonic()
    state = {"fraction": 0.0}
    done = threading.Event()
    head = f"loading {name} ({_mib(path)}) ..."
    if tty:
        print(head, end="", file=sys.stderr, flush=True)

    def draw():
        if done.wait(1.0):
            return
        while not done.wait(0.25):
            pct = int(100 * state["fraction"])
            sys.stderr.write(f"\r{head} {pct:3d}% {time.monotonic() - t0:4.0f} s")
            sys.stderr.flush()

    def hook(fraction: float) -> None:
        state["fraction"] = fraction

    drawer = threading.Thread(target=draw, daemon=True) if tty else None
    previous = _load_guard.progress_hook
    _load_guard.progress_hook = hook
    if drawer:
        drawer.start()
    ok = False
    try:
        yield
        ok = True
    finally:
        _load_guard.progress_hook = previous
        done.set()
        if drawer:
            drawer.join()
        took = time.monotonic() - t0
        end = f"loaded in {took:.2f} s" if ok else "not loaded"
        if tty:
            sys.stderr.write(f"\r{head} {end}\033[K\n")
        elif ok:
            sys.stderr.write(f"loaded {name} ({_mib(path)}) in {took:.2f} s\n")
        sys.stderr.flush()


class SigintFlag:
    """While entered (main thread only): the first Ctrl-C sets .hit instead of raising, so the
    command stops at a point of its choosing; a second one raises KeyboardInterrupt."""

    def __init__(self):
        self.hit = False
        self._previous = None

    def _on_sigint(self, signum, frame):
        if self.hit:
            raise KeyboardInterrupt
        self.hit = True

    def __enter__(self) -> "SigintFlag":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
