"""Shared bits of the examples: finding the model (argument, $LLAMA_PY_MODEL or the demo model)."""
import os
import sys


def model_path(argv_path=None):
    path = argv_path or os.environ.get("LLAMA_PY_MODEL")
    if path:
        return path
    from llama_py.pull import pull_demo_model
    return str(pull_demo_model(quiet=True))


def quiet_logs(llama_cpp):
    """Silences the library's log (returns the callback, which must be kept alive)."""
    cb = llama_cpp.llama_log_callback(lambda level, text, ud: None)
    llama_cpp.llama_log_set(cb, None)
    return cb


def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)
