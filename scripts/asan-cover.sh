#!/usr/bin/env bash
# Which real tests the ASan+UBSan pass must run: every line of src/ that the real tier runs, run
# sanitized at least once, at the least test time. Writes tests/asan-cover.txt, which
# CMakeLists.txt reads to label the rest `plain_only` (scripts/test.sh leaves that label out of
# the sanitized pass).
#
# How: a coverage build (build-cov/, gcc --coverage, -O0) runs every test once, each with its own
# GCOV_PREFIX, so the counts of the test binary and of every slipway process it starts land in a
# directory of that test's own; gcov turns each into the set of src/ lines it ran. The unit and
# fuzz tests always run in both passes, so their lines are covered from the start; then, greedily,
# the real test that adds the most uncovered lines per second of its sanitized run (its cost, from
# the last ASan run's CTestCostData.txt, else tests/costs.txt) is taken, until no real test adds a
# line. What the others run is then run sanitized elsewhere, line for line; the file names, for
# each test left to the plain pass, how many lines it runs and which chosen tests run them.
#
# What it does not do: judge paths or data (a line run sanitized with other data can still hide a
# fault with this test's data; the plain pass still runs every test), or run in CI (it takes the
# whole suite's time again; rerun it when a real test is added or grows).
#
# Usage: scripts/asan-cover.sh [--reuse | --resume]
#   --reuse: keep build-cov/'s counts, only recompute; --resume: run only the tests not yet counted
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cov=$root/build-cov
out=$root/tests/asan-cover.txt
prefix=$cov/per-test

if [ "${1:-}" != "--reuse" ]; then
  cmake -S . -B "$cov" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O0 -g" \
        -DCMAKE_C_FLAGS="--coverage" -DCMAKE_EXE_LINKER_FLAGS="--coverage" >/dev/null
  ninja -C "$cov" >/dev/null
  [ "${1:-}" = "--resume" ] || rm -rf "$prefix"
  mkdir -p "$prefix"
  # Two at a time, as ctest -j2 runs them. A real test that boots test hosts takes the lock other
  # checkouts' real runs take (host names and addresses are fixed per test binary); --resume
  # keeps the tests already counted.
  ctest --test-dir "$cov" -N | sed -n 's/^ *Test *#[0-9]*: //p' |
    xargs -P 2 -I{} sh -c 'd="$1/$(echo "$2" | tr / _)"; [ -e "$d.done" ] && exit 0
      rm -rf "$d"; mkdir -p "$d"; echo "$2" >&2; lock=
      case "$2" in real/*) grep -qE "swthost.h|swrollout.h" "$4/tests/$2.c" &&
        lock="flock -o ${SW_REAL_LOCK:-/tmp/slipway-real.lock}";; esac
      GCOV_PREFIX="$d" GCOV_PREFIX_STRIP=0 $lock ctest --test-dir "$3" -R "^$2\$" \
        --timeout 1800 >"$d.log" 2>&1 || echo "  $2 failed: its lines still count (see $d.log)" >&2
      touch "$d.done"' sh "$prefix" {} "$cov" "$root"
fi

# One test's lines: "file:line" for every src/ line with a count, from its own .gcda files.
lines_of() {
  local d=$1 tmp
  tmp=$(mktemp -d)
  find "$d" -name '*.gcda' -path '*/src/*' | while read -r gcda; do
    local obj=${gcda#"$d"}
    cp "$gcda" "$tmp/x.gcda"
    cp "${obj%.gcda}.gcno" "$tmp/x.gcno" 2>/dev/null || continue
    (cd "$tmp" && gcov -t -o "$tmp" x.gcno 2>/dev/null || true) |
      awk -F: '
        /^ *-: *0:Source:/ { file = $4; sub(/^.*\/src\//, "src/", file); next }
        $1 ~ /^ *[0-9]+\*?$/ && file ~ /^src\// { gsub(/ /, "", $2); print file ":" $2 }'
  done
  rm -rf "$tmp"
}

# each test's lines stay in build-cov/lines/NAME.lines, for asking which lines a test alone runs
work=$cov/lines
rm -rf "$work"
mkdir -p "$work"
for d in "$prefix"/*/; do
  d=${d%/}
  name=$(basename "$d")
  lines_of "$d" | sort -u >"$work/$name.lines"
done

# Costs: the last sanitized run's (its asan/ names; $SW_ASAN_COSTS, default that of scripts/test.sh's
# one run of both builds, build-all/), else tests/costs.txt's asan/ row, its plain row, else 1 s.
cost_of() {
  local t=$1 c
  c=$(awk -v t="asan/$t" '$1 == t { print $3 }' \
    "${SW_ASAN_COSTS:-build-all/Testing/Temporary/CTestCostData.txt}" 2>/dev/null)
  [ -n "$c" ] || c=$(awk -v t="asan/$t" '$1 == t { print $2 }' tests/costs.txt)
  [ -n "$c" ] || c=$(awk -v t="$t" '$1 == t { print $2 }' tests/costs.txt)
  echo "${c:-1}"
}

cat "$work"/unit_*.lines "$work"/fuzz_*.lines 2>/dev/null | sort -u >"$work/covered"
base=$(wc -l <"$work/covered")
# plain_only by their own reason (CMakeLists.txt): never candidates here
forced=" real_test_llamacpp_law real_test_testhost real_test_sim_fit "
# A test joins while it adds at least this many unsanitized lines per second of its sanitized run:
# the price in CI time of one more line sanitized (the lines it would add are listed below).
min_rate=${SW_ASAN_MIN_RATE:-1}
chosen=()
declare -A added
while :; do
  best= best_score=0 best_new=0
  for f in "$work"/real_*.lines; do
    name=$(basename "$f" .lines)
    case $forced in *" $name "*) continue ;; esac
    printf '%s\n' "${chosen[@]:-}" | grep -qx "$name" && continue
    new=$(comm -23 "$f" "$work/covered" | wc -l)
    [ "$new" -gt 0 ] || continue
    c=$(cost_of "${name/_//}")
    score=$(awk -v n="$new" -v c="$c" 'BEGIN { printf "%.6f", n / (c < 1 ? 1 : c) }')
    awk -v a="$score" -v r="$min_rate" 'BEGIN { exit !(a >= r) }' || continue
    if awk -v a="$score" -v b="$best_score" 'BEGIN { exit !(a > b) }'; then
      best=$name best_score=$score best_new=$new
    fi
  done
  [ -n "$best" ] || break
  chosen+=("$best")
  added[$best]=$best_new
  echo "chose ${best/_//}: +$best_new lines ($best_score per s)" >&2
  sort -u "$work/covered" "$work/$best.lines" -o "$work/covered"
done

{
  echo "# Written by scripts/asan-cover.sh on $(date -u +%Y-%m-%d) from a coverage run of every test:"
  echo "# the real tests the ASan+UBSan pass runs (asan) and those it leaves to the plain pass"
  echo "# (plain: every src/ line each runs is run sanitized by the unit and fuzz tests and the"
  echo "# asan rows). Lines of src/ the unit and fuzz tests run: $base; with the asan rows:"
  echo "# $(wc -l <"$work/covered"). A real test joins the sanitized pass while it adds at least"
  echo "# $min_rate unsanitized lines per second of its sanitized run (SW_ASAN_MIN_RATE)."
  echo "# Columns: test, pass, lines of src/ it runs, cost (s, sanitized), lines it adds (asan rows)"
  echo "# or would add (plain rows) to what the sanitized pass runs."
  cat "$work"/real_*.lines | sort -u | comm -23 - "$work/covered" >"$work/left"
  echo "# Lines of src/ only plain-pass tests run (never sanitized): $(wc -l <"$work/left"), by file:"
  cut -d: -f1 "$work/left" | uniq -c | sort -rn | awk '{ printf "#   %s %d\n", $2, $1 }'
  for f in "$work"/real_*.lines; do
    name=$(basename "$f" .lines)
    t=${name/_//}
    pass=plain
    printf '%s\n' "${chosen[@]}" | grep -qx "$name" && pass=asan
    add=$(comm -23 "$f" "$work/covered" | wc -l)
    [ "$pass" = plain ] || add=${added[$name]}
    printf '%s %s %d %s %d\n' "$t" "$pass" "$(wc -l <"$f")" "$(cost_of "$t")" "$add"
  done
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out: ${#chosen[@]} real tests in the sanitized pass" >&2
