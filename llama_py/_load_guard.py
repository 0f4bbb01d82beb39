"""What a model load needs beyond the C call: the reason of a failure in the exception (the
library logs it; the log is quiet unless verbose), Ctrl-C that stops the load, and a progress
hook for the command line.

A KeyboardInterrupt raised inside a ctypes callback is printed and dropped by ctypes, and the
library calls back (log lines, progress) all through a load, so a plain Ctrl-C was lost and the
load ran to the end. While a load runs in the main thread, SIGINT only sets a flag; the progress
callback then returns false, which cancels the load (llama_model_params.progress_callback), and
the caller raises KeyboardInterrupt once the C call has returned.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, List, Optional

_LEVEL_ERROR = 4
_LEVEL_CONT = 5
_MAX_ERRORS = 16

# Error lines logged since the last begin(): the reason of the failure that follows.
_errors: List[str] = []
_last_was_error = [False]
# Called with the load's fraction in [0, 1] (the command line's progress line); None: nothing shown.
progress_hook: Optional[Callable[[float], None]] = None


def note_log(level: int, text: bytes) -> None:
    """Keeps the library's error lines (a log callback calls this for every line, verbose or not)."""
    if level == _LEVEL_CONT:
        if _last_was_error[0] and _errors and text:
            _errors[-1] += text.decode("utf-8", "replace").rstrip("\n")
        return
    _last_was_error[0] = level == _LEVEL_ERROR
    if level == _LEVEL_ERROR and text and len(_errors) < _MAX_ERRORS:
        _errors.append(text.decode("utf-8", "replace").strip())


def reason(default: str = "no reason was logged") -> str:
    """The error lines logged since begin(), first (the root cause) to last, joined with '; '."""
    return "; ".join(dict.fromkeys(_errors)) or default


def begin() -> None:
    """Forgets earlier error lines: the next reason() is about what runs from here."""
    _errors.clear()
    _last_was_error[0] = False


class _Load:
    def __init__(self):
        from . import llama_cpp as C  # here: llama_cpp's log callback imports this module
        self.interrupted = False
        self._cb = C.llama_progress_callback(self._progress)
        self._null = C.llama_progress_callback()

    def _progress(self, fraction, user_data):
        hook = progress_hook
        if hook is not None and not self.interrupted:
            try:
                hook(float(fraction))
            except KeyboardInterrupt:
                self.interrupted = True
            except Exception:  # a display error never fails a load
                pass
        return not self.interrupted


@contextmanager
def guarded_load(mparams) -> Iterator[_Load]:
    """Within: mparams cancels the load on Ctrl-C (when run in the main thread with Python's
    default SIGINT handler) and the error lines are collected; .interrupted says whether to
    raise KeyboardInterrupt after the call."""
    load = _Load()
    mparams.progress_callback = load._cb
    begin()
    previous = None
    if threading.current_thread() is threading.main_thread():
        try:
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                def on_sigint(signum, frame):
                    load.interrupted = True
                previous = signal.signal(signal.SIGINT, on_sigint)
        except (ValueError, OSError):  # no signals here (an embedded interpreter)
            previous = None
    try:
        yield load
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        mparams.progress_callback = load._null
