"""Importing this module makes `import llama_cpp` resolve to llama_py (for frameworks that are
configured by import path): `import llama_py.as_llama_cpp` then `from llama_cpp import Llama`."""
from ._llama_cpp_shim import install_as_llama_cpp

llama_cpp = install_as_llama_cpp()
