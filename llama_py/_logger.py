"""llama-cpp-python's `llama_cpp._logger`: the `llama-cpp-python` logger and set_verbose. The
library's own lines go to the `llama_py` logger (llama_py.llama_cpp); set_verbose sets both."""
from __future__ import annotations

import logging

logger = logging.getLogger("llama-cpp-python")


def set_verbose(verbose: bool) -> None:
    """DEBUG on both loggers when verbose, else ERROR."""
    level = logging.DEBUG if verbose else logging.ERROR
    logger.setLevel(level)
    logging.getLogger("llama_py").setLevel(level)
