#!/usr/bin/env bash
# Runs libFuzzer harnesses (fuzz/fuzz_*.c) under ASan+UBSan for a fixed time each and prints one
# line per harness: runs, seconds, new corpus entries, finding or not.
#   scripts/fuzz.sh [--seconds N] [--jobs J] [NAME...]      (default: every harness, 600 s, 1 job)
# The repo's corpus is the seed; what a run discovers goes to a scratch copy ($SLIPWAY_FUZZ_OUT,
# default build-fuzz/runs/NAME), so the tree is not touched. A finding (crash-*, leak-*, timeout-*,
# oom-*) is kept there and named, and the script exits 1. Nothing here runs under ctest: ctest
# replays fuzz/corpus/ in every build instead.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=600 jobs=1 names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) secs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n 2,8p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
[ ${#names[@]} -gt 0 ] || for f in fuzz/fuzz_*.c; do n=${f#fuzz/fuzz_}; names+=("${n%.c}"); done
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSW_FUZZ=ON \
      -DCMAKE_C_COMPILER=clang >/dev/null
ninja -C build-fuzz $(printf 'fuzz_%s ' "${names[@]}") >/dev/null
out=${SLIPWAY_FUZZ_OUT:-build-fuzz/runs}
run_one() {
  local n=$1 dir="$out/$1" env=()
  rm -rf "$dir"; mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -r "fuzz/corpus/$n/." "$dir/corpus/" 2>/dev/null || true
  local before; before=$(find "$dir/corpus" -type f | wc -l)
  [ "$n" = fleet ] && env=(LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan-libfyaml.supp)
  local t0=$SECONDS rc=0
  env "${env[@]}" "build-fuzz/fuzz/fuzz_$n" -max_total_time="$secs" -max_len=65536 \
      -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  local runs; runs=$(grep -oE 'Done [0-9]+ runs' "$dir/log" | grep -oE '[0-9]+' || true)
  [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$dir/log" | tail -1 | tr -d '#')
  local after; after=$(find "$dir/corpus" -type f | wc -l)
  local finding=none
  if [ $rc -ne 0 ] || ls "$dir/artifacts" | grep -q .; then
    finding="FOUND: $(ls "$dir/artifacts" | head -1) (log $dir/log)"
  fi
  printf '%-18s %10s runs %5d s  corpus %d -> %d  %s\n' "$n" "${runs:-?}" $((SECONDS - t0)) \
      "$before" "$after" "$finding"
  [ "$finding" = none ]
}
fail=0
if [ "$jobs" -le 1 ]; then
  for n in "${names[@]}"; do run_one "$n" || fail=1; done
else
  export -f run_one; export out secs
  printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} || fail=1
fi
exit $fail
