"""llama-cpp-python's `llama_cpp._utils`: suppress_stdout_stderr and the Singleton helpers."""
from __future__ import annotations

import os
import sys


class suppress_stdout_stderr:
    """Sends file descriptors 1 and 2 to /dev/null inside the block (C code's prints too);
    disable=True leaves them alone."""

    def __init__(self, disable: bool = True):
        self.disable = disable

    def __enter__(self):
        if self.disable:
            return self
        sys.stdout.flush()
        sys.stderr.flush()
        self._null = os.open(os.devnull, os.O_WRONLY)
        self._saved = (os.dup(1), os.dup(2))
        os.dup2(self._null, 1)
        os.dup2(self._null, 2)
        return self

    def __exit__(self, *exc):
        if self.disable:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in (*self._saved, self._null):
            os.close(fd)


class MetaSingleton(type):
    """A metaclass whose classes have one instance each."""
    _instances: dict = {}

    def __call__(cls, *args, **kwargs):
        if cls not in cls._instances:
            cls._instances[cls] = super().__call__(*args, **kwargs)
        return cls._instances[cls]


class Singleton(metaclass=MetaSingleton):
    """Base of classes with one instance."""
