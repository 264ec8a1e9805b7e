#!/usr/bin/env bash
# The README's first command on a fresh Debian 12 machine: install what slipway needs, build it,
# build the pinned llama.cpp (cached), write the bundled example's tiny chat model, then run
# slipway's main job on examples/local.yaml:
#
#   plan   build/slipway plan --fleet examples/local.yaml            what llama-server will print
#   up     build/slipway up --fleet examples/local.yaml --detach     launch, /health, one-token
#                                                                    liveness, predicted vs printed
#   probe  build/slipway probe local --fleet examples/local.yaml     the live battery
#
# and leave llama-server answering on 127.0.0.1:18080 (stop it: build/slipway down --fleet
# examples/local.yaml). It does not build the ASan tree or run the tests: that is scripts/test.sh.
#
# Usage: scripts/setup.sh [--down] [--no-run]
#   --down     stop the endpoint again after the probe (leaves nothing running)
#   --no-run   only install, build and write the model
# Env:   SLIPWAY_CACHE (llama.cpp cache, default ~/.cache/slipway), SLIPWAY_JOBS (build jobs),
#        SLIPWAY_RUN_DIR (pid files and engine logs, see `slipway up --help`).
# Exit:  0 all done (probe: no check failed), 1 a step failed (its name is printed).
set -euo pipefail
cd "$(dirname "$0")/.."

down_after=0 run=1
for a in "$@"; do
    case $a in
    --down) down_after=1 ;;
    --no-run) run=0 ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option '$a' (see --help)" >&2; exit 2 ;;
    esac
done

step() { printf '\n== setup: %s\n' "$*"; }
die() { printf 'setup: FAILED: %s\n' "$*" >&2; exit 1; }
start=$(date +%s)

step "dependencies (apt-get, Debian 12)"
scripts/deps.sh || die "scripts/deps.sh"

step "build slipway (build/)"
scripts/build.sh || die "scripts/build.sh"

step "pinned llama.cpp (llama-server, test-llama-archs)"
scripts/llama-build.sh || die "scripts/llama-build.sh"
LLAMA=$(scripts/llama-build.sh --print-dir)

# The model examples/local.yaml serves: test-llama-archs' random-weight llama (seed 7) made
# chat-capable by `slipway gguf synth` with the llama SPM vocabulary and a ChatML template (seed
# 7). Both steps are deterministic, so the recipe plus the file's sha256 (kept beside it) say
# whether the file on disk is the one this recipe writes; a missing, truncated or stale file is
# written again. The llama/SPM pair is the one the real probe tests use: with a fixed seed its
# replies are valid UTF-8 that the pinned llama-server can return (random qwen3 weights with the
# qwen2 vocabulary make it answer 500 on chat).
step "example model (examples/local.yaml payload)"
MODELS=$HOME/.cache/slipway/models
MODEL=$MODELS/tiny-llama.gguf
VOCAB=$LLAMA/src/models/ggml-vocab-llama-spm.gguf
RECIPE="test-llama-archs@$(basename "$LLAMA") -a llama -s 7 | slipway gguf synth --vocab ggml-vocab-llama-spm.gguf --seed 7"
model_ok() {
    [ -f "$MODEL" ] && [ -f "$MODEL.recipe" ] || return 1
    [ "$(sed -n 1p "$MODEL.recipe")" = "$RECIPE" ] || return 1
    [ "$(sed -n 2p "$MODEL.recipe")" = "$(sha256sum "$MODEL" | cut -d' ' -f1)" ] || return 1
    build/slipway gguf inspect "$MODEL" >/dev/null 2>&1
}
if model_ok; then
    echo "$MODEL is present and matches its recipe: kept"
else
    mkdir -p "$MODELS"
    tmp=$(mktemp -d "$MODELS/.synth.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    "$LLAMA/bin/test-llama-archs" -a llama -s 7 -o "$tmp" >"$tmp/archs.log" 2>&1 \
        || { tail -20 "$tmp/archs.log" >&2; die "test-llama-archs -a llama"; }
    build/slipway gguf synth --in "$tmp/llama-dense.gguf" --vocab "$VOCAB" \
        --out "$tmp/tiny-llama.gguf" --seed 7 || die "slipway gguf synth"
    printf '%s\n%s\n' "$RECIPE" "$(sha256sum "$tmp/tiny-llama.gguf" | cut -d' ' -f1)" >"$tmp/recipe"
    mv "$tmp/tiny-llama.gguf" "$MODEL"
    mv "$tmp/recipe" "$MODEL.recipe"
    rm -rf "$tmp"
    trap - EXIT
    model_ok || die "$MODEL does not read back"
    echo "wrote $MODEL"
fi

if [ "$run" = 0 ]; then
    echo "setup: ready in $(($(date +%s) - start)) s (--no-run: nothing started)"
    exit 0
fi

FLEET=examples/local.yaml
# A previous run may have left the example running: stop it (only what our pid file names).
build/slipway down --fleet "$FLEET" >/dev/null || die "stopping the previous run (see: build/slipway down --fleet $FLEET)"

step "plan: build/slipway plan --fleet $FLEET"
build/slipway plan --fleet "$FLEET" || die "slipway plan"

step "up: build/slipway up --fleet $FLEET --detach"
build/slipway up --fleet "$FLEET" --detach || die "slipway up (the engine log is named above)"

step "probe: build/slipway probe local --fleet $FLEET"
probe_rc=0
build/slipway probe local --fleet "$FLEET" --quiet || probe_rc=$?

if [ "$down_after" = 1 ]; then
    step "down: build/slipway down --fleet $FLEET"
    build/slipway down --fleet "$FLEET"
fi
[ "$probe_rc" = 0 ] || die "slipway probe found a failing check (exit $probe_rc)"

echo
echo "setup: done in $(($(date +%s) - start)) s"
if [ "$down_after" = 0 ]; then
    echo "llama-server is answering on http://127.0.0.1:18080 (model local-tiny), e.g.:"
    echo "  curl -s http://127.0.0.1:18080/v1/chat/completions -H 'Content-Type: application/json' \\"
    echo "       -d '{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8}'"
    echo "stop it:  build/slipway down --fleet $FLEET"
fi
