#!/usr/bin/env bash
# Applies the project's style in place: clang-format (.clang-format; generated tables listed in
# .clang-format-ignore are left alone) on every tracked C / CUDA source and header, and ruff's
# safe lint fixes (pyproject.toml) on the Python files. scripts/lint.sh then passes.
#
#   bash scripts/format.sh            # the whole tree
#   bash scripts/format.sh FILE...    # only these files
#
# The tools are pinned in requirements-test.txt (pip install -r requirements-test.txt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/style-files.sh

mapfile -t c_files < <(style_c_files "$@")
mapfile -t py_files < <(style_py_files "$@")
if [ "${#c_files[@]}" -gt 0 ]; then
    clang-format -i --style=file "${c_files[@]}"
fi
if [ "${#py_files[@]}" -gt 0 ]; then
    ruff check --fix --quiet "${py_files[@]}" || true  # what it cannot fix, lint.sh names
fi
echo "formatted ${#c_files[@]} C files, checked ${#py_files[@]} Python files"
