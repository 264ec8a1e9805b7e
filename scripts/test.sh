#!/usr/bin/env bash
# The test command: installs what is missing, builds slipway (plain and ASan+UBSan), obtains the
# pinned real llama.cpp (cached under ~/.cache/slipway), and runs every test under ctest in both
# builds, in one ctest run: unit tests, fuzz corpus replays and the real tier (real llama-server,
# nginx, HTTP servers); the ASan+UBSan copies leave out the label plain_only (CMakeLists.txt says
# which and why).
# Before the build: the format check, the layering check (scripts/layering.sh) and the rooms
# check (scripts/rooms.sh: file and function sizes, the CLI's logic share), so none regresses.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Each step's seconds on one line at the end (and as it goes), so a slow CI run says where.
times=()
step() {
  local t0=$SECONDS
  "$@"
  times+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$*")")
  echo "== ${times[-1]}"
}
step scripts/deps.sh
step scripts/format-check.sh
step scripts/layering.sh
step scripts/rooms.sh
SW_WERROR=ON step scripts/build.sh --sanitize
step scripts/llama-build.sh
# The real tier's test hosts (tests/real/test_testhost.c): their root filesystem and the llama-server
# container image, each built once and cached (scripts/testhost.sh).
step scripts/testhost.sh rootfs
step scripts/testhost.sh base >/dev/null
step scripts/testhost.sh image
# The Kubernetes API schemas the k8s render is validated against (npm kubernetes-models, cached).
step scripts/k8s-schemas.sh >/dev/null
# Both builds' tests in one ctest run (build-all/ names build/ and build-asan/), longest first across
# both (tests/costs.txt), four at a time: most real tests wait on test hosts and engines (a third
# of the machine idle at three at a time, a fifth at four; a test took 3 % longer at four than at
# three, the run 22 % less), the timing comparisons take two slots each, and a test's
# two builds never overlap (CMakeLists.txt: RESOURCE_LOCK). The sanitized copies are named asan/...
# plain_only: real tests whose time is spent in uninstrumented engines or test hosts and whose
# slipway code other tests run sanitized (CMakeLists.txt says which and why): plain build only.
jobs=${SLIPWAY_TEST_JOBS:-4}
mkdir -p build-all
printf 'subdirs("%s")\nsubdirs("%s")\n' "$PWD/build" "$PWD/build-asan" >build-all/CTestTestfile.cmake
echo "== ctest: plain and ASan+UBSan builds"
step ctest --test-dir build-all --output-on-failure -j "$jobs" -LE plain_only
printf '%s\n' "${times[@]}"
echo "== all tests passed in $(( $(date +%s) - start )) s"
