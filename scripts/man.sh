#!/usr/bin/env bash
# Man pages and shell completion from the CLI's own tables: `slipway completion scdoc` writes one
# scdoc source per verb (and slipway.1.scd), scdoc(1) turns each into a man page; `slipway
# completion bash|zsh` writes the completion scripts. Run by the build's `man` target (when scdoc
# is installed; scripts/deps.sh installs it) and installed by `cmake --install`.
#
# Usage: scripts/man.sh SLIPWAY_BINARY OUTDIR
#   OUTDIR/scd/*.scd   the generated sources
#   OUTDIR/man1/*.1    the man pages of the verbs, slipway(1)
#   OUTDIR/man5/slipway-fleet.5  the fleet file format: docs/fleet.md itself (scripts/md2scd.awk)
#   OUTDIR/completion/slipway (bash), OUTDIR/completion/_slipway (zsh)
# Exit 0 written; 1 a step failed (its tool's message on stderr); 2 usage.
#
# What it does not do: render or check the pages (tests/real/test_completion.c runs `man -l`).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/man.sh SLIPWAY_BINARY OUTDIR" >&2; exit 2; }
bin=$1
out=$2
command -v scdoc >/dev/null 2>&1 || { echo "man.sh: scdoc is missing (scripts/deps.sh installs it)" >&2; exit 1; }
mkdir -p "$out/man1" "$out/completion"
tmp=$(mktemp -d "$out/.man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$bin" completion scdoc --out "$tmp/scd" >/dev/null
mkdir -p "$tmp/man1"
for src in "$tmp"/scd/*.scd; do
  page=$(basename "$src" .scd)
  scdoc <"$src" >"$tmp/man1/$page" || { echo "man.sh: scdoc refused $src" >&2; exit 1; }
done
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$tmp/man5"
awk -v name=slipway-fleet -v section=5 \
  -v what="the fleet file (fleet.yaml): hosts, endpoints, shapes, what is known" \
  -v stop="For code" -f "$src/scripts/md2scd.awk" "$src/docs/fleet.md" >"$tmp/scd/slipway-fleet.5.scd"
scdoc <"$tmp/scd/slipway-fleet.5.scd" >"$tmp/man5/slipway-fleet.5" ||
  { echo "man.sh: scdoc refused the page made from docs/fleet.md" >&2; exit 1; }
"$bin" completion bash --out "$tmp/slipway" >/dev/null
"$bin" completion zsh --out "$tmp/_slipway" >/dev/null
# replace the previous output whole: a verb that went away leaves no stale page behind
rm -rf "$out/scd" "$out/man1" "$out/man5"
mv "$tmp/scd" "$out/scd"
mv "$tmp/man1" "$out/man1"
mv "$tmp/man5" "$out/man5"
mv "$tmp/slipway" "$tmp/_slipway" "$out/completion/"
touch "$out/.stamp"
