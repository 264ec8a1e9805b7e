#!/usr/bin/env bash
# Fails when a tracked C file differs from the project's .clang-format (run `scripts/format-check.sh
# --fix` to rewrite them). Part of scripts/test.sh, so an unformatted change cannot go green.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format-check: clang-format is not installed" >&2; exit 1; }
bad=()
while IFS= read -r f; do
  [ -f "$f" ] || continue
  if [ "${1:-}" = "--fix" ]; then
    clang-format -i "$f"
  elif ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done < <(git ls-files '*.c' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
  echo "format-check: ${#bad[@]} file(s) differ from .clang-format (scripts/format-check.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format-check: clean"
