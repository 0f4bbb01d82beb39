"""`import llama_cpp` found on the path llama_py.compat.PATH: llama_py standing in for
llama-cpp-python. install_as_llama_cpp replaces this module in sys.modules with the shim (which
the import then returns); the shim looks in this folder for what it does not map itself, so
llama_cpp.server is the package here (llama_py's server with llama-cpp-python's settings, and a
__main__ for `python -m llama_cpp.server`)."""
import os
import sys

import llama_py

_pkg = llama_py.install_as_llama_cpp(force=True)
_pkg.__path__ = [os.path.dirname(os.path.abspath(__file__))]
if "llama_cpp.server" in sys.modules:  # the server extra is installed: the package here wraps it
    del sys.modules["llama_cpp.server"]
