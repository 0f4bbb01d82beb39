#!/usr/bin/env python3
"""Converts a Hugging Face Llama checkpoint (safetensors + tokenizer) to GGUF.

    python scripts/convert_hf_to_gguf.py MODEL_DIR --outfile OUT.gguf --outtype f32|f16|bf16|q8_0

Same as `python -m llama_py convert`; the implementation is llama_py/convert.py. Needs the
built library (LLAMA_PY_LIB or an installed llama_py) for the GGUF writer and the q8_0 and
bf16 converters, and `sentencepiece` + `protobuf` for SentencePiece (tokenizer.model) models.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llama_py.convert import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
