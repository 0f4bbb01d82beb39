#!/usr/bin/env python3
"""llama-bench-style rows for any GGUF through the public API (see llama_py/bench.py).

    python scripts/bench.py -m model.gguf -p 512 -n 128 -r 5 -t 2
"""
import sys

from llama_py.bench import main

if __name__ == "__main__":
    sys.exit(main())
