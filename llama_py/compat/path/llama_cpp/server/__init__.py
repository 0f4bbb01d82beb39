"""llama-cpp-python's `llama_cpp.server` package: llama_py's server (llama_py.server.lcp)."""
from llama_py.server.lcp import (ConfigFileSettings, ModelSettings, ServerSettings, Settings,  # noqa: F401
                                 create_app, main)
