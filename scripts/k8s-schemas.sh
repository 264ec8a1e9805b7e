#!/usr/bin/env bash
# The Kubernetes API schemas, offline: installs the npm package kubernetes-models (each API object
# as a class whose validate() holds it to the API's OpenAPI schema) into a cache directory once,
# so tests can validate rendered objects without a cluster or the network. Test-only: nothing in
# slipway itself uses it.
#
# Usage: scripts/k8s-schemas.sh              install (if missing) and print the node_modules dir
#        scripts/k8s-schemas.sh --print-dir  print the directory and exit 0 if installed, 1 if not
# Env:   SLIPWAY_CACHE (default ~/.cache/slipway)
set -euo pipefail

PKG=kubernetes-models
VER=4.5.1
CACHE=${SLIPWAY_CACHE:-$HOME/.cache/slipway}
DIR=$CACHE/npm/k8s-schemas-$VER

log() { echo "k8s-schemas: $*" >&2; }
installed() { [ -f "$DIR/node_modules/$PKG/package.json" ] && [ -f "$DIR/.done" ]; }

if [ "${1:-}" = "--print-dir" ]; then
    installed && { echo "$DIR/node_modules"; exit 0; }
    exit 1
fi
if ! installed; then
    command -v npm >/dev/null 2>&1 || { log "npm is missing (scripts/deps.sh installs it)"; exit 1; }
    log "installing $PKG@$VER into $DIR"
    mkdir -p "$DIR"
    tmpd=$(mktemp -d "$CACHE/npm/.k8s.XXXXXX")
    trap 'rm -rf "$tmpd"' EXIT
    (cd "$tmpd" && echo '{"private": true}' >package.json &&
        npm install --silent --no-audit --no-fund --ignore-scripts "$PKG@$VER" >/dev/null)
    rm -rf "$DIR"
    mv "$tmpd" "$DIR"
    trap - EXIT
    touch "$DIR/.done"
fi
echo "$DIR/node_modules"
