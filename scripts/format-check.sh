#!/usr/bin/env bash
# Fails when a tracked C file differs from the project's .clang-format (run `scripts/format-check.sh
# --fix` to rewrite them). Part of scripts/test.sh, so an unformatted change cannot go green.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format-check: clang-format is not installed" >&2; exit 1; }
# Forty files per clang-format and two at a time (one process per file took most of its time).
if [ "${1:-}" = "--fix" ]; then
  git ls-files -z '*.c' '*.h' | xargs -0 -r -n 40 -P 2 clang-format -i
fi
out=$(git ls-files -z '*.c' '*.h' | xargs -0 -r -n 40 -P 2 clang-format --dry-run -Werror 2>&1) || true
mapfile -t bad < <(printf '%s\n' "$out" |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
# anything else clang-format said (a file it could not read or parse) is a failure too
other=$(printf '%s\n' "$out" | grep -E '^[^ ]+: error|^error' | grep -v 'code should be clang-formatted' || true)
if [ -n "$other" ]; then
  echo "format-check: clang-format failed:" >&2
  printf '%s\n' "$other" >&2
  exit 1
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "format-check: ${#bad[@]} file(s) differ from .clang-format (scripts/format-check.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format-check: clean"
