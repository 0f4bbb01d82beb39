# Sourced by scripts/format.sh and scripts/lint.sh: the files each style applies to, from the
# given arguments or, with none, every tracked file. clang-format itself skips the files that
# .clang-format-ignore lists (generated tables); style_c_files leaves them out up front.
style_c_files() {
    local ignore
    ignore="$(grep -v '^\s*\(#\|$\)' .clang-format-ignore | grep -v '\*' || true)"
    if [ "$#" -gt 0 ]; then printf '%s\n' "$@"; else git ls-files; fi \
        | grep -E '\.(c|h|cu|cuh)$' | grep -vxF -f <(printf '%s\n' "$ignore") || true
}
style_py_files() {
    if [ "$#" -gt 0 ]; then printf '%s\n' "$@"; else git ls-files; fi | grep -E '\.py$' || true
}
