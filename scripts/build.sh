#!/usr/bin/env bash
# Build slipway: build/ (release with debug info) and, with --sanitize, build-asan/ (ASan+UBSan).
# SW_WERROR=ON (set by scripts/test.sh) turns every warning into an error.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null 2>&1; then
  # The compiler cache lives beside the llama.cpp build cache (~/.cache/slipway), which CI keeps
  # between runs; paths are hashed relative to the checkout, so another clone of the same commit
  # hits too (src/ names no absolute path: CMakeLists.txt's sw_paths).
  export CCACHE_DIR=${CCACHE_DIR:-${SLIPWAY_CACHE:-$HOME/.cache/slipway}/ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSW_WERROR="${SW_WERROR:-OFF}" "${launcher[@]}" >/dev/null
ninja -C build
if [ "${1:-}" = "--sanitize" ]; then
  # -O1: the sanitizers' own advice (a usable speed, every report still exact)
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
        -DSW_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DSW_WERROR="${SW_WERROR:-OFF}" \
        "${launcher[@]}" >/dev/null
  ninja -C build-asan
fi
