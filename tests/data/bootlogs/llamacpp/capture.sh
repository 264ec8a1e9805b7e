#!/usr/bin/env bash
# Re-capture the real llama-server boot logs in this directory from the pinned build.
#
# Every NAME.log here was produced by the command recorded in NAME.cmd (written by this script,
# with the exact argv, limits and payload it used). NAME.expect holds what the parser must read
# from it: the failure class/phase/payload kind and the printed numbers, checked by hand against
# the log (tests/unit/test_bootlog_llamacpp.c reads them).
#
# Usage: tests/data/bootlogs/llamacpp/capture.sh [CASE...]     (default: every case)
# Env:   LLAMA_BIN   dir holding llama-server (default: $(scripts/llama-build.sh --print-dir)/bin)
#        ARCHS       dir of test-llama-archs models (default: /tmp/archs/all)
#        SLIPWAY     a slipway binary with `gguf synth` (default: build/slipway), for the cases
#                    that need a chat-capable model
#        PORT        first port to use (default: 18460)
# Nothing here needs the network; the OOM cases cap the address space with `ulimit -v` (a real
# allocation failure, not a simulated one) except oom_kv_ram, which asks for a KV cache twice
# the size of this machine's RAM and is refused by the kernel's overcommit heuristic.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
BIN=${LLAMA_BIN:-$("$repo/scripts/llama-build.sh" --print-dir)/bin}
ARCHS=${ARCHS:-/tmp/archs/all}
PORT=${PORT:-18460}
SERVER=$BIN/llama-server
work=$(mktemp -d /tmp/sw-capture.XXXXXX)
trap 'rm -rf "$work"' EXIT

[ -x "$SERVER" ] || { echo "capture: no llama-server at $SERVER" >&2; exit 2; }

# run NAME LIMIT_KB ARGV...: a boot that is expected to end by itself (a failure).
run() {
    local name=$1 limit=$2
    shift 2
    {
        printf 'cwd: %s\n' "$work"
        [ "$limit" != - ] && printf 'ulimit -v %s\n' "$limit"
        printf '%q ' "$@"
        printf '\n'
    } >"$here/$name.cmd"
    (
        cd "$work" || exit 1
        [ "$limit" != - ] && ulimit -v "$limit"
        exec timeout -s KILL 120 "$@"
    ) >"$here/$name.log" 2>&1
    echo "capture: $name exit $?" >&2
}

# serve NAME REQUEST ARGV...: a boot that succeeds; once /health is 200, optionally POST REQUEST
# to /completion, then SIGTERM.
serve() {
    local name=$1 req=$2 port=$PORT
    shift 2
    PORT=$((PORT + 1))
    printf 'cwd: %s\n%s\n' "$work" "$(printf '%q ' "$@" --host 127.0.0.1 --port "$port")" \
        >"$here/$name.cmd"
    (cd "$work" && exec "$@" --host 127.0.0.1 --port "$port") >"$here/$name.log" 2>&1 &
    local pid=$! i code
    for i in $(seq 1 600); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" || true)
        [ "$code" = 200 ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -n "$req" ]; then
        printf 'then: curl -s http://127.0.0.1:%s/completion -d %q\n' "$port" "$req" \
            >>"$here/$name.cmd"
        curl -s -m 30 "http://127.0.0.1:$port/completion" -d "$req" >/dev/null || true
    fi
    printf 'then: kill -TERM %s\n' '$PID' >>"$here/$name.cmd"
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    echo "capture: $name exit $?" >&2
}

CASES=("$@")
sel() { [ ${#CASES[@]} -eq 0 ] || [[ " ${CASES[*]} " == *" $1 "* ]]; }

M=$ARCHS
S=$SERVER

# ---- boots that work: the numbers -------------------------------------------------------------
sel ok_llama_dense && serve ok_llama_dense "" $S -m $M/llama-dense.gguf -c 4096 -np 4 -lv 4
sel ok_gemma2_swa && serve ok_gemma2_swa "" $S -m $M/gemma2-dense.gguf -c 8192 -np 2 -lv 4
sel ok_gemma2_swa_full && serve ok_gemma2_swa_full "" $S -m $M/gemma2-dense.gguf -c 8192 -np 2 \
    --swa-full -kvu -lv 4
sel ok_qwen3_q8 && serve ok_qwen3_q8 "" $S -m $M/qwen3-dense.gguf -c 16384 -np 3 -fa on \
    -ctk q8_0 -ctv q4_0 -ub 256 -lv 4
sel ok_mamba2 && serve ok_mamba2 "" $S -m $M/mamba2-dense.gguf -c 2048 -np 2 -lv 4
sel ok_qwen3next_hybrid && serve ok_qwen3next_hybrid "" $S -m $M/qwen3next-moe.gguf -c 8192 -np 3 \
    -lv 4
sel ok_jamba_hybrid && serve ok_jamba_hybrid "" $S -m $M/jamba-dense.gguf -c 4096 -np 1 -lv 4
sel ok_lv3 && serve ok_lv3 "" $S -m $M/llama-dense.gguf -c 4096 -np 1

# ---- a crash after boot: the random-weight model has no tokenizer (dummy vocab) ----------------
sel crash_runtime_tokenizer && serve crash_runtime_tokenizer '{"prompt":"hi","n_predict":1}' \
    $S -m $M/llama-dense.gguf -c 1024 -np 1 -lv 4

# ---- allocation failures ------------------------------------------------------------------------
# KV: 2,097,152 cells x 2 layers x 2 x 256 x f16 = 4 GiB under a 3 GB address-space cap.
sel oom_kv && run oom_kv 3000000 $S -m $M/llama-dense.gguf --host 127.0.0.1 --port $PORT \
    -c 2097152 -np 1 -lv 4
# KV twice the machine's RAM, no cap: the kernel refuses the allocation outright.
if sel oom_kv_ram; then
    memkb=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
    cells=$(((memkb * 1024 * 2 / 2048 + 255) / 256 * 256)) # 2 KiB of KV per cell
    run oom_kv_ram - $S -m $M/llama-dense.gguf --host 127.0.0.1 --port $PORT -c $cells -np 1 \
        -lv 4
fi
# compute: -ub 65536 without flash attention needs a 65536 x 65536 x 2 heads f32 KQ (48 GiB).
sel oom_compute && run oom_compute 3000000 $S -m $M/llama-dense.gguf --host 127.0.0.1 \
    --port $PORT -c 65536 -b 65536 -ub 65536 -fa off -np 1 -lv 4
# load: the 82 MiB weights buffer (--no-mmap) does not fit under a 200 MB cap.
sel oom_load && run oom_load 200000 $S -m $M/deepseek4-moe.gguf -fit off --no-mmap \
    --host 127.0.0.1 --port $PORT -c 512 -np 1 -lv 4
# compute, as an abort: ggml_init's metadata context cannot be allocated (GGML_ASSERT).
sel oom_compute_assert && run oom_compute_assert 300000 $S -m $M/deepseek4-moe.gguf -fit off \
    --no-mmap --host 127.0.0.1 --port $PORT -c 512 -np 1 -lv 4

# ---- an allocation failure while serving a request ----------------------------------------------
# A chat-capable hybrid (qwen3next + the phi-3 vocabulary, via slipway gguf synth) booted under an
# address-space cap just above what it needs idle, then an 800-token chat: the request's own
# allocations (context checkpoints, sampling) fail. llama-server catches the std::bad_alloc per
# task and answers 500; which allocation fails first depends on the layout, so a few margins are
# tried until one fails. The cmd file records the one that did.
if sel oom_runtime; then
    SW=${SLIPWAY:-$repo/build/slipway}
    VOCAB=$(dirname "$BIN")/src/models/ggml-vocab-phi-3.gguf
    "$SW" gguf synth --in $M/qwen3next-moe.gguf --vocab "$VOCAB" --out "$work/qwen3next.gguf" \
        --ctx 32768 >/dev/null
    body="$work/chat800.json"
    {
        printf '{"messages":[{"role":"user","content":"'
        for i in $(seq 1 400); do printf 'hello world '; done
        printf '"}],"max_tokens":2}'
    } >"$body"
    port=$PORT
    PORT=$((PORT + 1))
    # the idle size: boot once without a cap
    $S -m "$work/qwen3next.gguf" -c 8192 -np 1 --host 127.0.0.1 --port $port -lv 4 \
        >/dev/null 2>&1 &
    pid=$!
    for i in $(seq 1 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health)" = 200 ] && break
        sleep 0.1
    done
    base=$(awk '/VmPeak/ {print $2}' /proc/$pid/status)
    kill -TERM $pid
    wait $pid
    for margin in 100 150 200 250 300 350 400 500 600 800; do
        lim=$((base + margin))
        (cd "$work" && ulimit -v $lim && exec $S -m qwen3next.gguf -c 8192 -np 1 --host 127.0.0.1 \
            --port $port -lv 4) >"$here/oom_runtime.log" 2>&1 &
        pid=$!
        for i in $(seq 1 100); do
            [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health)" = 200 ] &&
                break
            sleep 0.1
        done
        code=$(curl -s -m 120 -o "$work/reply" -w '%{http_code}' \
            http://127.0.0.1:$port/v1/chat/completions -H 'Content-Type: application/json' \
            -d @"$body")
        kill -TERM $pid
        wait $pid
        if grep -q bad_alloc "$here/oom_runtime.log"; then
            {
                printf 'cwd: %s\nmodel: %s gguf synth --in %s/qwen3next-moe.gguf --vocab %s --out ' \
                    "$work" "$SW" "$M" "$VOCAB"
                printf 'qwen3next.gguf --ctx 32768\nidle VmPeak %s kB; ulimit -v %s (margin %s kB)\n' \
                    "$base" "$lim" "$margin"
                printf '%q ' $S -m qwen3next.gguf -c 8192 -np 1 --host 127.0.0.1 --port $port -lv 4
                printf '\nthen: curl http://127.0.0.1:%s/v1/chat/completions -d @chat800.json ' "$port"
                printf '(one user message: "hello world " x 400, max_tokens 2) -> HTTP %s: %s\n' \
                    "$code" "$(head -c 200 "$work/reply")"
                printf 'then: kill -TERM $PID\n'
            } >"$here/oom_runtime.cmd"
            echo "capture: oom_runtime at margin $margin kB (HTTP $code)" >&2
            break
        fi
    done
fi

# ---- payloads that are not models ----------------------------------------------------------------
mk() { printf '%b' "$2" >"$work/$1"; }
mk html.gguf '<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>\n<body><h1>Access denied</h1><p>You must accept the license to access this model.</p></body></html>\n'
mk lfs.gguf 'version https://git-lfs.github.com/spec/v1\noid sha256:4d5c1e4b0a3f5e1a6c8b2f7d9e0a1b2c3d4e5f60718293a4b5c6d7e8f9012345\nsize 4763872\n'
mk json.gguf '{"error":"Repository not found","status":404}\n'
mk empty.gguf ''
head -c 1000000 $M/llama-dense.gguf >"$work/trunc_data.gguf"
head -c 3000 $M/llama-dense.gguf >"$work/trunc_header.gguf"
{ printf '\177ELF\002\001\001'; head -c 4089 /dev/zero; } >"$work/elf.gguf"
# general.architecture's value "llama" sits at byte 64 of llama-dense.gguf: make it "zlama".
cp $M/llama-dense.gguf "$work/zlama.gguf"
[ "$(dd if="$work/zlama.gguf" bs=1 skip=64 count=5 status=none)" = llama ] &&
    printf 'z' | dd of="$work/zlama.gguf" bs=1 seek=64 conv=notrunc status=none

for c in html lfs json empty trunc_data trunc_header elf; do
    sel bad_payload_$c && run bad_payload_$c - $S -m $c.gguf --host 127.0.0.1 --port $PORT -lv 4
done
sel unsupported_arch && run unsupported_arch - $S -m zlama.gguf --host 127.0.0.1 --port $PORT \
    -lv 4
sel missing_payload && run missing_payload - $S -m /nonexistent/model.gguf --host 127.0.0.1 \
    --port $PORT -lv 4

# ---- the command line and the socket ---------------------------------------------------------------
sel bad_flag_unknown && run bad_flag_unknown - $S -m $M/llama-dense.gguf --no-such-flag
sel bad_flag_value && run bad_flag_value - $S -m $M/llama-dense.gguf -ctk q9_9
sel bad_flag_fa_quant_v && run bad_flag_fa_quant_v - $S -m $M/llama-dense.gguf --host 127.0.0.1 \
    --port $PORT -c 1024 -fa off -ctv q8_0 -lv 4
if sel port_in_use; then
    # something else listens on the port first: a second llama-server
    busy=$PORT
    PORT=$((PORT + 1))
    $S -m $M/llama-dense.gguf --host 127.0.0.1 --port $busy -c 512 >/dev/null 2>&1 &
    holder=$!
    for i in $(seq 1 100); do
        curl -s -o /dev/null "http://127.0.0.1:$busy/health" && break
        sleep 0.1
    done
    run port_in_use - $S -m $M/llama-dense.gguf --host 127.0.0.1 --port $busy -lv 4
    printf 'while: another llama-server listened on 127.0.0.1:%s\n' "$busy" >>"$here/port_in_use.cmd"
    kill -TERM $holder
    wait $holder
fi
exit 0
