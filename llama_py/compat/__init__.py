"""A folder holding a `llama_cpp` package that is llama_py, for command lines written for
llama-cpp-python (`python -m llama_cpp.server --model m.gguf ...`) where it is not installed:

    PYTHONPATH="$(python -m llama_py.compat)" python -m llama_cpp.server --model m.gguf --n_ctx 4096

Only where it is put on the path: an installed llama-cpp-python is never shadowed otherwise.
"""
import os

#: the folder to put on PYTHONPATH / sys.path
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "path")
