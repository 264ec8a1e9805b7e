#!/usr/bin/env bash
# Obtain and build the pinned real llama.cpp that slipway's real tier runs against.
#
# The source comes from the npm package node-llama-cpp@3.21.1, which ships the llama.cpp source
# release as llama/gitRelease.bundle. The tarball is checked against the integrity hash pinned here
# (and the registry's own), the bundle is cloned, and llama-server + test-llama-archs are built with
# the CPU backend into a cache keyed by the release commit, so later runs reuse it.
#
# Nothing of llama.cpp is written inside the slipway checkout.
#
# Usage: scripts/llama-build.sh [--print-dir]
#   --print-dir   print the cache directory (bin/ holds the binaries) and exit 0 if it is built
# Env:   SLIPWAY_CACHE (default ~/.cache/slipway), SLIPWAY_JOBS (default nproc)
set -euo pipefail

PKG=node-llama-cpp
VER=3.21.1
# sha512 of the registry tarball (npm view node-llama-cpp@3.21.1 dist.integrity)
INTEGRITY='sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg=='
COMMIT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed

CACHE=${SLIPWAY_CACHE:-$HOME/.cache/slipway}
DIR=$CACHE/llama.cpp/$COMMIT
JOBS=${SLIPWAY_JOBS:-$(nproc)}

built() { [ -x "$DIR/bin/llama-server" ] && [ -x "$DIR/bin/test-llama-archs" ] && [ -f "$DIR/src/models/ggml-vocab-qwen2.gguf" ]; }

if [ "${1:-}" = "--print-dir" ]; then
    echo "$DIR"
    built
    exit $?
fi

if built; then
    echo "llama.cpp $COMMIT already built in $DIR"
    exit 0
fi

log() { printf 'llama-build: %s\n' "$*" >&2; }

mkdir -p "$CACHE/npm" "$DIR"
tgz=$CACHE/npm/$PKG-$VER.tgz
if [ ! -f "$tgz" ]; then
    log "fetching $PKG@$VER from the npm registry"
    tmpd=$(mktemp -d "$CACHE/npm/.pack.XXXXXX")
    (cd "$tmpd" && npm pack --silent "$PKG@$VER" >/dev/null)
    mv "$tmpd/$PKG-$VER.tgz" "$tgz.part"
    rmdir "$tmpd"
    mv "$tgz.part" "$tgz"
fi
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
    log "integrity mismatch for $tgz: got $got, pinned $INTEGRITY"
    rm -f "$tgz"
    exit 1
fi
reg=$(npm view "$PKG@$VER" dist.integrity 2>/dev/null || true)
if [ -n "$reg" ] && [ "$reg" != "$INTEGRITY" ]; then
    log "the registry now reports $reg for $PKG@$VER, pinned $INTEGRITY: refusing"
    exit 1
fi
log "tarball integrity ok ($INTEGRITY)"

if [ ! -d "$DIR/src/.git" ]; then
    rm -rf "$DIR/src" "$DIR/unpack"
    mkdir -p "$DIR/unpack"
    tar -xzf "$tgz" -C "$DIR/unpack" package/llama/gitRelease.bundle
    git clone -q "$DIR/unpack/package/llama/gitRelease.bundle" "$DIR/src.part"
    head=$(git -C "$DIR/src.part" rev-parse HEAD)
    if [ "$head" != "$COMMIT" ]; then
        log "bundle HEAD is $head, expected $COMMIT"
        rm -rf "$DIR/src.part"
        exit 1
    fi
    mv "$DIR/src.part" "$DIR/src"
    rm -rf "$DIR/unpack"
fi

launcher=()
if command -v ccache >/dev/null 2>&1; then
    export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

log "configuring (CPU backend) in $DIR/build"
cmake -S "$DIR/src" -B "$DIR/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_CCACHE=OFF \
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_APP=OFF \
    "${launcher[@]}" >"$DIR/configure.log" 2>&1 || { tail -30 "$DIR/configure.log" >&2; exit 1; }

log "building llama-server and test-llama-archs with $JOBS jobs (about 10 minutes on 2 cores)"
start=$(date +%s)
cmake --build "$DIR/build" -j "$JOBS" --target llama-server test-llama-archs >"$DIR/build.log" 2>&1 \
    || { tail -40 "$DIR/build.log" >&2; exit 1; }
log "built in $(( $(date +%s) - start )) s"

mkdir -p "$DIR/bin.part"
cp "$DIR/build/bin/llama-server" "$DIR/build/bin/test-llama-archs" "$DIR/bin.part/"
rm -rf "$DIR/bin"
mv "$DIR/bin.part" "$DIR/bin"
echo "llama.cpp $COMMIT built in $DIR"
