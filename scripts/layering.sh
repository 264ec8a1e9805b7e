#!/usr/bin/env bash
# The layering check: reads every `#include "..."` and `#include <slipway/...>` in src/ and
# include/ and fails (exit 1) on an edge that points up the module order below, naming file:line
# and the edge. Also fails on an include of another module's *_internal.h (a module's internals are
# its own), on a module or public header the table does not place, and on an allowlist entry that
# no longer matches anything (so the list can only shrink). Run by scripts/test.sh before the build;
# docs/architecture.md draws the order and says why.
#
# It also holds README.md's layer block (between "<!-- layers" and "<!-- /layers -->") to the
# table: `scripts/layering.sh --readme` writes the block, and the check fails when it differs.
#
# Usage: scripts/layering.sh [--readme] [ROOT]   (ROOT defaults to the checkout holding this script)
#
# What it does not do: look at system or third-party includes, at symbols (a declaration copied by
# hand past the check is a reviewer's catch), or at tests/, fuzz/ and bench/ (they may use anything).
set -euo pipefail

# The module order. A module may include its own headers and those of modules on LOWER lines;
# modules on one line are peers and may not include each other. Read as "is built on".
LAYERS=(
  "core"                       # errors, allocation, buffers, units, JSON, charts
  "model fleet net ledger"     # what the payload is; the fleet file; HTTP/SSE/OpenAI; the store
  "memory payload host readings" # the engines' memory laws; manifests, verify, download; hosts; readings
  "calib"                      # the laws' free terms fitted from the ledger
  "engine"                     # per-engine adapter: argv/env, boot logs, diff
  "plan"                       # sw_plan_endpoint: the one plan of an endpoint (argv, law, shape)
  "unit"                       # systemd units: the render (from the plan) and the lint
  "import"                     # the fleet that already runs: units, env files, command lines
  "gate deploy"                # checks before a boot; the local supervisor and sw_deploy_endpoint
  "probe bench sim"            # the live battery; the benchmark client; the engine stand-in
  "rollout report"             # deploy on a host with rollback | the fleet as people and tools read it
  "serve"                      # one OpenAI-compatible front door admitting models by the plan's memory
  "tune apply"                 # ladder and tune: searches that boot, measure, journal | the fleet converges
  "watch"                      # keep the fleet serving: looks, restarts, rollbacks, alerts, jobs, logs
  "cli"                        # slipway <verb>
)

# Public headers (include/slipway/NAME.h) whose name is not their module's.
header_module() {
  case "$1" in
    arch | gguf | hf) echo model ;;
    vllm | sglang | profile) echo memory ;;
    sse | openai) echo net ;;
    fetch) echo payload ;;
    engine_*) echo engine ;;
    unit_lint | unit_k8s) echo unit ;;
    service) echo deploy ;;
    ladder) echo tune ;;
    *) echo "$1" ;;
  esac
}

# Backward edges tolerated for now, one "FROM -> TO" per entry, each with the reason and who
# removes it. Every entry must still match an edge in the tree, else the check fails.
ALLOW=(
)

readme=0
if [ "${1:-}" = "--readme" ]; then
  readme=1
  shift
fi
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"

# README.md's layer block, top layer first, from the table and its comments.
layer_block() {
  echo "<!-- layers: written by scripts/layering.sh --readme from its LAYERS table -->"
  echo
  echo "    layer (top first)               what it holds"
  local i line names what
  line=$(grep -n '^LAYERS=(' "$0" | cut -d: -f1)
  for ((i = ${#LAYERS[@]} - 1; i >= 0; i--)); do
    names=${LAYERS[$i]}
    what=$(sed -n "$((line + 1 + i))p" "$0" | sed -E 's/^[^#]*# ?//')
    printf '    %-31s %s\n' "$names" "$what"
  done
  echo
  echo "<!-- /layers -->"
}
if [ "$readme" = 1 ]; then
  tmp=$(mktemp README.md.XXXXXX)
  awk -v block="$(layer_block)" '
    /^<!-- layers/ { print block; skip = 1; next }
    /^<!-- \/layers -->/ { skip = 0; next }
    !skip { print }' README.md >"$tmp"
  mv "$tmp" README.md
  echo "layering: README.md's layer block written"
  exit 0
fi

declare -A rank
for i in "${!LAYERS[@]}"; do
  for m in ${LAYERS[$i]}; do rank[$m]=$i; done
done

fail=0
declare -A used_allow
err() {
  echo "layering: $*" >&2
  fail=1
}

for d in src/*/; do
  m=$(basename "$d")
  [ -n "${rank[$m]+x}" ] || err "src/$m/: module '$m' is not in the LAYERS table of scripts/layering.sh"
done
for h in include/slipway/*.h; do
  [ -e "$h" ] || continue
  m=$(header_module "$(basename "$h" .h)")
  [ -n "${rank[$m]+x}" ] || err "$h: header of module '$m', which is not in the LAYERS table"
done

# file:line:text of every include directive (quoted or <slipway/...>) under src/ and include/.
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  text=${rest#*:}
  [[ "$text" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\<\"]([^\>\"]+)[\>\"] ]] || continue
  target=${BASH_REMATCH[1]}
  case "$file" in
    include/slipway/*)
      b=${file##*/}
      from=$(header_module "${b%.h}")
      ;;
    src/*/*)
      from=${file#src/}
      from=${from%%/*}
      ;;
    *) continue ;;
  esac
  case "$text" in
    *'<slipway/'*)
      b=${target##*/}
      to=$(header_module "${b%.h}")
      ;;
    *'"'*)
      rel=$target
      while [[ "$rel" == ./* || "$rel" == ../* ]]; do rel=${rel#*/}; done
      if [[ "$rel" == */* ]]; then to=${rel%%/*}; else to=$from; fi
      if [ "$to" != "$from" ] && [[ "$rel" == *_internal.h ]]; then
        err "$file:$line: $from -> $to reaches into $to's internals ($target); use include/slipway/$to.h"
        continue
      fi
      ;;
    *) continue ;;
  esac
  [ "$from" = "$to" ] && continue
  if [ -z "${rank[$to]+x}" ]; then
    err "$file:$line: $from -> $to: '$to' is not a module in the LAYERS table ($target)"
    continue
  fi
  if [ "${rank[$to]}" -ge "${rank[$from]}" ]; then
    edge="$from -> $to"
    allowed=0
    for a in "${ALLOW[@]+"${ALLOW[@]}"}"; do
      if [ "$a" = "$edge" ]; then
        allowed=1
        used_allow[$a]=1
      fi
    done
    [ "$allowed" = 1 ] && continue
    if [ "${rank[$to]}" -eq "${rank[$from]}" ]; then
      err "$file:$line: $edge: peers on one layer ('${LAYERS[${rank[$from]}]}') include each other ($target)"
    else
      err "$file:$line: $edge: backward edge, $to is above $from in the module order ($target)"
    fi
  fi
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*("|<slipway/)' src include \
  --include='*.c' --include='*.h' | sort)

for a in "${ALLOW[@]+"${ALLOW[@]}"}"; do
  [ -n "${used_allow[$a]+x}" ] || err "allowlist entry '$a' matches no include any more: delete it"
done

if [ -f README.md ]; then
  have=$(awk '/^<!-- layers/ { on = 1 } on { print } /^<!-- \/layers -->/ { on = 0 }' README.md)
  [ "$have" = "$(layer_block)" ] ||
    err "README.md's layer block differs from the LAYERS table: run scripts/layering.sh --readme"
fi

if [ "$fail" != 0 ]; then
  echo "layering: FAILED (module order: $(printf '%s | ' "${LAYERS[@]}" | sed 's/ | $//'))" >&2
  exit 1
fi
echo "layering: ok ($(grep -rlE '#[[:space:]]*include' src include --include='*.c' --include='*.h' | wc -l) files; order: $(printf '%s | ' "${LAYERS[@]}" | sed 's/ | $//'))"
