"""CONTRIBUTING.md's "Adding a quant type" recipe, checked: every weight quant type of ggml's
type table (ggml/src/ggml-types.c, the TRAITS_QUANT rows) appears in every place the recipe
lists. A new type missing from one of them fails here, naming the file and what to add."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ACTIVATION_ONLY = {"Q8_1", "Q8_K"}  # vec_dot's activation blocks: no weights of these types, no ftype


def _weight_types():
    text = (ROOT / "ggml/src/ggml-types.c").read_text()
    names = re.findall(r"\[GGML_TYPE_(\w+)\]\s*=\s*TRAITS_QUANT\(", text)
    assert len(names) >= 10, "the TRAITS_QUANT rows moved: update this test and the recipe"
    return [n for n in names if n not in ACTIVATION_ONLY]


# (file or glob, pattern with {T} = the type's upper-case name, {t} = its lower-case ggml name); the recipe
# in CONTRIBUTING.md lists the same places in the same order
PLACES = [
    ("ggml/include/ggml.h", r"GGML_TYPE_{T}\s*="),
    ("ggml/src/ggml-quants*.h", r"\}} block_{t};"),
    # a type whose quantizer needs an importance matrix (IQ3 / IQ2 / IQ1 codebooks) has _imat instead of _ref
    ("ggml/src/ggml-quants*.h", r"\w+ quantize_row_{t}_(ref|imat)\s*\("),
    ("ggml/src/ggml-quants*.h", r"void dequantize_row_{t}\s*\("),
    ("ggml/src/ggml-quants*.c", r"\w+ quantize_row_{t}_(ref|imat)\s*\([^;]*\{{"),
    ("ggml/src/ggml-quants*.c", r"void dequantize_row_{t}\s*\([^;]*\{{"),
    ("ggml/src/ggml-types.c", r"(QUANT|SEARCH)_WRAPPERS\({t},"),
    ("ggml/src/ggml-cpu/quants-*.[ch]", r"t\[GGML_TYPE_{T}\]\.vec_dot\s*=|\{{ GGML_TYPE_{T},\s*\w*vec_dot"),
    ("include/llama.h", r"LLAMA_FTYPE_MOSTLY_{T}(_[SML]|_MOE)?\s*="),
    ("src/quantize.c", r"GGML_TYPE_{T}\b"),
    ("src/model.c", r"case GGML_TYPE_{T}:"),
    ("src/llama.c", r'return "{T}(";| )'),
    ("llama_py/_capi/common.py", r"^GGML_TYPE_{T} = \d+"),
    ("llama_py/_capi/common.py", r"^LLAMA_FTYPE_MOSTLY_{T}(_[SML]|_MOE)? = \d+"),
    ("llama_py/ggml.py", r"^\s+{T} = \d+"),
    ("llama_py/gguf_dump.py", r'\d+: "{T}"'),
    ("llama_py/quantize.py", r'"{T}(_[SML]|_MOE)?": C\.LLAMA_FTYPE_MOSTLY_{T}'),
    ("tests/test_quants*.py", r"\b{T}\b"),
]


@pytest.mark.parametrize("qtype", _weight_types())
def test_quant_type_is_in_every_place_the_recipe_lists(qtype):
    missing = []
    for rel, pat in PLACES:
        text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(ROOT.glob(rel)))
        if not re.search(pat.format(T=qtype, t=qtype.lower().replace("_k", "_K")), text, re.M):
            missing.append(f"{rel}: {pat.format(T=qtype, t=qtype.lower().replace('_k', '_K'))}")
    assert not missing, f"{qtype} is missing from (see CONTRIBUTING.md, Adding a quant type):\n" + "\n".join(missing)


def test_recipe_names_every_place():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    recipe = text[text.index("## Adding a quant type"):]
    for rel, _ in PLACES:
        assert f"`{rel}`" in recipe or f"`{rel.replace('*', '')}`" in recipe, f"the quant-type recipe does not name {rel}"
    assert "tests/test_quant_recipe.py" in recipe
