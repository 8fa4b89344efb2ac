#!/usr/bin/env bash
# The C++ style check: clang-format-15 with the repository's .clang-format (Google style, 120
# columns) over every tracked C++ file (*.h, *.cpp, *.cc).
#
#   scripts/format.sh             check: exit 1 naming each file that clang-format would change
#   scripts/format.sh --fix [F..] format the given C++ files in place (default: every checked file);
#                                 any other file is refused (exit 2)
#   scripts/format.sh --self-test check that a misformatted file fails and a formatted one passes
#
# ctest runs the check (format/clang_format) and the self-test (format/self_test).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clang_format=clang-format-15
if ! command -v "$clang_format" >/dev/null; then
  echo "format.sh: $clang_format not found: install Debian's clang-format-15 (scripts/install-deps.sh)" >&2
  exit 1
fi

checked_files() {  # every tracked C++ file
  git ls-files -- '*.h' '*.cpp' '*.cc'
}

misformatted() {  # misformatted FILE...: prints each file clang-format would change
  # The files are copied (with .clang-format) into a scratch tree and formatted there in one
  # clang-format process, then compared with the originals: one process for the whole tree,
  # not one per file. Compared by content: --dry-run --Werror also flags a replacement by the
  # same text (clang-format-15 does, for a "// namespace ...::inline X" comment it wrote itself).
  (($# > 0)) || return 0
  local scratch file
  scratch=$(mktemp -d)
  cp .clang-format "$scratch/"
  for file in "$@"; do
    mkdir -p "$scratch/$(dirname "$file")"
    cp "$file" "$scratch/$file"
  done
  (cd "$scratch" && "$clang_format" --style=file -i "$@")
  for file in "$@"; do
    cmp -s "$scratch/$file" "$file" || echo "$file"
  done
  rm -rf "$scratch"
}

case "${1:-}" in
  --fix)
    shift
    if (($# == 0)); then mapfile -t files < <(checked_files); else files=("$@"); fi
    # Only C++: clang-format "formats" a shell script or Python file too, into something else.
    for file in "${files[@]}"; do
      case "$file" in
        *.h | *.cpp | *.cc) ;;
        *)
          echo "format.sh: $file is not a C++ file (.h, .cpp, .cc); nothing formatted" >&2
          exit 2
          ;;
      esac
    done
    "$clang_format" --style=file -i "${files[@]}"
    ;;
  --self-test)
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    cp .clang-format "$dir/"
    printf 'int  f( int x ){return x;}\n' >"$dir/bad.cpp"
    printf 'int f(int x) { return x; }\n' >"$dir/good.cpp"
    [[ "$(misformatted "$dir/bad.cpp" "$dir/good.cpp")" == "$dir/bad.cpp" ]] || {
      echo "format.sh self-test: the misformatted file was not found, or the formatted one was" >&2
      exit 1
    }
    printf 'for x in a b; do echo "$x"; done\n' >"$dir/script.sh"
    cp "$dir/script.sh" "$dir/script.sh.orig"
    if "${BASH_SOURCE[0]}" --fix "$dir/script.sh" 2>/dev/null || ! cmp -s "$dir/script.sh" "$dir/script.sh.orig"; then
      echo "format.sh self-test: --fix took a shell script" >&2
      exit 1
    fi
    echo "format.sh self-test: a misformatted file fails, a formatted one passes, --fix refuses a shell script"
    ;;
  "" | --check)
    mapfile -t files < <(checked_files)
    mapfile -t bad < <(misformatted "${files[@]}")
    for f in "${bad[@]}"; do echo "$f: not clang-formatted (scripts/format.sh --fix $f)"; done
    echo "format.sh: ${#files[@]} files checked, ${#bad[@]} misformatted"
    ((${#bad[@]} == 0))
    ;;
  *)
    echo "usage: scripts/format.sh [--check | --fix [FILE...] | --self-test]" >&2
    exit 2
    ;;
esac
