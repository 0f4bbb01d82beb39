#!/usr/bin/env bash
# Fails (exit 1) when a tracked file breaks the project's style: a C / CUDA file that
# clang-format (.clang-format) would change, or a ruff finding (pyproject.toml) in a Python
# file. A stage of scripts/test.sh; scripts/format.sh fixes the first kind and most of the second.
#
#   bash scripts/lint.sh              # the whole tree
#   bash scripts/lint.sh FILE...      # only these files
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/style-files.sh

for tool in clang-format ruff; do
    command -v "$tool" >/dev/null || { echo "lint: $tool is missing (pip install -r requirements-test.txt)" >&2; exit 1; }
done
want="$(sed -n 's/^clang-format==//p' requirements-test.txt)"
have="$(clang-format --version | sed -n 's/.*version \([0-9.]*\).*/\1/p')"
if [ -n "$want" ] && [ "$have" != "$want" ]; then
    # another version lays some constructs out differently: the result would not be comparable
    echo "lint: clang-format $have found, requirements-test.txt pins $want" >&2
    exit 1
fi

mapfile -t c_files < <(style_c_files "$@")
mapfile -t py_files < <(style_py_files "$@")
rc=0
if [ "${#c_files[@]}" -gt 0 ]; then
    # one run over all files; each file it would change is named in its "error:" lines
    mapfile -t bad < <(clang-format --style=file --dry-run --Werror "${c_files[@]}" 2>&1 \
        | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
    if [ "${#bad[@]}" -gt 0 ]; then
        printf 'lint: clang-format would change %s\n' "${bad[@]}" >&2
        echo "lint: run bash scripts/format.sh (${#bad[@]} C files)" >&2
        rc=1
    fi
fi
if [ "${#py_files[@]}" -gt 0 ]; then
    ruff check --quiet "${py_files[@]}" || rc=1
fi
[ "$rc" -eq 0 ] && echo "lint: ${#c_files[@]} C files and ${#py_files[@]} Python files clean"
exit "$rc"
