#!/usr/bin/env bash
# The rooms check (docs/architecture.md "Rooms of one concept"): how the house is divided.
#
#   files      every src/**/*.c over MAX_FILE lines must say in its opening comment that it is
#              one concept ("One concept: ...") - a longer file that holds several is two files;
#   functions  at most MAX_LONG functions over MAX_FN lines in src/, and each of them says why in
#              the comment above it ("Long: ..."): a function that needs "and" is two functions;
#   cli        the CLI is thin: no src/cli/cmd_*.c over MAX_CMD lines, and the lines of cmd_*.c
#              that are logic (below) at most MAX_SHARE percent of all cmd_*.c lines.
#
# How the CLI's logic is counted: a function of src/cli/cmd_*.c is glue when it is a verb's entry
# (sw_cmd_* or sw__cmd_*), or when it prints (printf, fprintf, fputs, puts, putchar, sw_fput*,
# sw_cli_*, json_dumpf, sw_*_print*) or reads options (sw_args_*); any other function is logic
# that belongs in the library: it neither talks to the user nor reads what they typed. Its lines
# (signature to closing brace) are the logic count; tables and includes are glue.
#
# Usage: scripts/rooms.sh [--report]   (--report: print every measure, never fail)
# Exit: 0 within the limits, 1 a limit is passed (each named), 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_FILE=1000
MAX_FN=150
MAX_LONG=15
MAX_CMD=700
MAX_SHARE=10

report=0
case "${1:-}" in
"") ;;
--report) report=1 ;;
*) echo "usage: scripts/rooms.sh [--report]" >&2; exit 2 ;;
esac

fail=0
bad() { printf 'rooms: %s\n' "$*" >&2; fail=1; }

# Functions: clang-format puts a function's brace alone at column 0 and its closing brace at
# column 0; the signature is the last line at column 0 before it that names "(". Prints
# FILE:LINE NAME LENGTH REASON(0|1) for every function (REASON: a "Long:" comment above it).
functions() {
    awk '
    FNR == 1 { cmt = ""; sig = ""; start = 0 }
    /^\/\*/ { cmt = ""; incmt = 1 }
    incmt { cmt = cmt $0 "\n"; if ($0 ~ /\*\//) incmt = 0; next }
    /^[A-Za-z_].*\(/ && !start { sig = $0; sigline = FNR; sigcmt = cmt }
    /^\{$/ && sig != "" { start = FNR; next }
    /^\}/ && start {
        name = sig; sub(/\(.*/, "", name); n = split(name, a, /[ *]+/); name = a[n]
        reason = (sigcmt ~ /Long: /) ? 1 : 0
        printf "%s:%d %s %d %d\n", FILENAME, sigline, name, FNR - sigline + 1, reason
        start = 0; sig = ""; cmt = ""; next
    }
    /^$/ { if (!start) cmt = "" }
    ' "$@"
}

# 1. files
while IFS= read -r f; do
    n=$(wc -l <"$f")
    if [ "$n" -gt "$MAX_FILE" ]; then
        if sed -n '1,/\*\//p' "$f" | grep -q 'One concept:'; then
            [ "$report" = 0 ] || echo "file $f $n lines (one concept: $(sed -n '1,/\*\//p' "$f" | grep -o 'One concept:.*' | head -1 | cut -c14-70))"
        else
            [ "$report" = 1 ] && echo "file $f $n lines: NOT one concept" || bad "$f has $n lines (over $MAX_FILE) and its opening comment does not say 'One concept: ...'"
        fi
    fi
done < <(git ls-files 'src/*.c')

# 2. functions
mapfile -t all < <(functions $(git ls-files 'src/*.c'))
long=0
for row in "${all[@]}"; do
    read -r where name len reason <<<"$row"
    [ "$len" -gt "$MAX_FN" ] || continue
    long=$((long + 1))
    if [ "$report" = 1 ]; then
        echo "function $where $name $len lines$([ "$reason" = 1 ] && echo ' (Long: says why)')"
    elif [ "$reason" != 1 ]; then
        bad "$where $name is $len lines (over $MAX_FN) and the comment above it does not say why ('Long: ...')"
    fi
done
[ "$report" = 1 ] && echo "functions over $MAX_FN lines: $long (at most $MAX_LONG)"
[ "$long" -le "$MAX_LONG" ] || [ "$report" = 1 ] || bad "$long functions over $MAX_FN lines (at most $MAX_LONG)"

# 3. the CLI
cmds=$(git ls-files 'src/cli/cmd_*.c')
total=0
for f in $cmds; do
    n=$(wc -l <"$f")
    total=$((total + n))
    if [ "$n" -gt "$MAX_CMD" ]; then
        [ "$report" = 1 ] && echo "cli $f $n lines (over $MAX_CMD)" || bad "$f has $n lines (over $MAX_CMD): move its logic to the library"
    fi
done
logic=$(awk '
    FNR == 1 { sig = ""; start = 0 }
    /^[A-Za-z_].*\(/ && !start { sig = $0; sigline = FNR; body = "" }
    /^\{$/ && sig != "" { start = FNR; next }
    start { body = body $0 "\n" }
    /^\}/ && start {
        name = sig; sub(/\(.*/, "", name); n = split(name, a, /[ *]+/); name = a[n]
        glue = name ~ /^sw_+cmd_/ ||
               body ~ /(^|[^a-z_])(printf|fprintf|fputs|puts|putchar|fputc|sw_fput[a-z_]*|sw_cli_[a-z_]+|json_dumpf|sw_[a-z_]*print[a-z_]*|sw_args_[a-z_]+)\(/
        if (!glue) { lines += FNR - sigline + 1; if (REPORT) printf "logic %s:%d %s %d\n", FILENAME, sigline, name, FNR - sigline + 1 }
        start = 0; sig = ""; next
    }
    END { print "TOTAL " lines + 0 }' REPORT="$report" $cmds)
[ "$report" = 1 ] && echo "$logic" | grep -v '^TOTAL'
lines=$(echo "$logic" | awk '/^TOTAL/ {print $2}')
share=$((lines * 1000 / (total ? total : 1)))
printf 'rooms: cmd_*.c %d lines, %d of them logic (%d.%d%%, at most %d%%); %d functions over %d lines\n' \
    "$total" "$lines" $((share / 10)) $((share % 10)) "$MAX_SHARE" "$long" "$MAX_FN"
if [ "$share" -gt $((MAX_SHARE * 10)) ] && [ "$report" = 0 ]; then
    bad "the CLI's logic is $((share / 10)).$((share % 10))% of cmd_*.c (at most $MAX_SHARE%): move it to the library"
fi
exit "$fail"
