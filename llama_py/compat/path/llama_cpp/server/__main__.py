"""python -m llama_cpp.server: llama_py's server with llama-cpp-python's command line."""
from llama_py.server.lcp import main

raise SystemExit(main())
