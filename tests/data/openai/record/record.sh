#!/usr/bin/env bash
# Record real llama-server transcripts for tests/data/openai (the bytes are the server's, captured
# with curl; nothing is edited). Then run expect.py to write the case files from them.
#
# usage: record.sh OUTDIR [MODEL.gguf]
#   MODEL defaults to test-llama-archs' llama-dense with the qwen2 tokenizer grafted on
#   (graft.py); any chat-capable GGUF works (e.g. one from `slipway gguf synth`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
out=$1
mkdir -p "$out"
# ONLY=probe records just the probe-shaped requests and /props (one server run)
only=${ONLY:-}
llama=$("$repo/scripts/llama-build.sh" --print-dir)
bin=$llama/bin
tmpl=$llama/src/models/templates/Qwen-Qwen3-0.6B.jinja
model=${2:-}
if [ -z "$model" ]; then
  work=$(mktemp -d)
  "$bin/test-llama-archs" -a llama -o "$work" >/dev/null 2>&1
  model=$out/model.gguf
  python3 "$here/graft.py" "$work/llama-dense.gguf" "$llama/src/models/ggml-vocab-qwen2.gguf" "$model"
  rm -rf "$work"
fi
port=$((20000 + RANDOM % 20000))
url=http://127.0.0.1:$port
pid=

start() { # extra llama-server args...
  "$bin/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -c 1024 -np 2 --metrics \
    --alias frank-small --jinja --chat-template-file "$tmpl" "$@" >"$out/server.log" 2>&1 &
  pid=$!
  # catch /health while the model loads (llama-server answers 503 then)
  for _ in $(seq 1 2000); do
    code=$(curl -s -o "$out/.health" -w '%{http_code}' "$url/health" || true)
    if [ "$code" = 503 ] && [ ! -e "$out/llama_health_loading.body" ]; then
      cp "$out/.health" "$out/llama_health_loading.body"
    fi
    [ "$code" = 200 ] && break
    sleep 0.005
  done
  rm -f "$out/.health"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }

# rec NAME EXT PATH [BODY]: POST BODY (or GET when empty), body bytes to NAME.EXT, request to
# NAME.request.json, status to NAME.status
rec() {
  local name=$1 ext=$2 path=$3 body=${4:-}
  if [ -n "$body" ]; then
    printf '%s' "$body" >"$out/$name.request.json"
    curl -sN -o "$out/$name.$ext" -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary @"$out/$name.request.json" "$url$path" >"$out/$name.status"
  else
    curl -sN -o "$out/$name.$ext" -w '%{http_code}' "$url$path" >"$out/$name.status"
  fi
  echo "$name: HTTP $(cat "$out/$name.status"), $(wc -c <"$out/$name.$ext") bytes"
}

msg='"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}]'
# The tool: "city" is an enum so the grammar llama-server builds for tool_choice "required" fixes
# every byte of the call but the whitespace and the choices (a random-weight model would fill a free
# string forever). The assistant turn is prefilled with "<tool_call>\n" (llama-server continues a
# final assistant message), because the Qwen3 format lets free text come before the call and a
# random model never stops rambling otherwise. The EOS logit_bias and parallel_tool_calls:false
# were meant to stop it after one call; on the pinned build they did not (the recordings show a
# complete call, then a second one cut by max_tokens), and the requests are kept as recorded.
tools='"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo","Lima"]},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}}]'
prefill='"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":"<tool_call>\n"}]'
eos='"logit_bias":{"151643":100,"151645":100}'
think='"grammar":"root ::= \"<think>\" [a-z ]{8,40} \"</think>\" [a-z ]{4,30}"'
long=$(python3 -c 'print(" ".join(["lorem ipsum dolor sit amet"] * 200))')

start
if [ "$only" = probe ]; then
  rec llama_props json /props
  rec llama_probe_liveness json /v1/chat/completions '{"messages":[{"role":"user","content":"Say OK."}],"max_tokens":1,"temperature":0,"seed":42}'
  rec llama_probe_chat json /v1/chat/completions '{"messages":[{"role":"user","content":"Say hello in a few words."}],"max_tokens":16,"temperature":0,"seed":42}'
  rec llama_probe_stream sse /v1/chat/completions '{"messages":[{"role":"user","content":"Say hello in a few words."}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true},"temperature":0,"seed":42}'
  stop
  exit 0
fi
rec llama_stream_usage sse /v1/chat/completions "{$msg,\"max_tokens\":12,\"seed\":7,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
rec llama_stream_plain sse /v1/chat/completions "{$msg,\"max_tokens\":6,\"seed\":7,\"temperature\":0,\"stream\":true}"
rec llama_response json /v1/chat/completions "{$msg,\"max_tokens\":12,\"seed\":7,\"temperature\":0}"
rec llama_tool_stream sse /v1/chat/completions "{$prefill,$tools,$eos,\"tool_choice\":\"required\",\"parallel_tool_calls\":false,\"max_tokens\":96,\"seed\":3,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
rec llama_tool_response json /v1/chat/completions "{$prefill,$tools,$eos,\"tool_choice\":\"required\",\"parallel_tool_calls\":false,\"max_tokens\":96,\"seed\":3}"
# parallel calls allowed and max_tokens short (it happened to end right after one complete call)
rec llama_tool_cut_stream sse /v1/chat/completions "{$prefill,$tools,\"tool_choice\":\"required\",\"max_tokens\":48,\"seed\":3,\"stream\":true}"
rec llama_think_stream sse /v1/chat/completions "{$msg,$think,\"max_tokens\":64,\"seed\":5,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
rec llama_think_response json /v1/chat/completions "{$msg,$think,\"max_tokens\":64,\"seed\":5}"
rec llama_exceed body /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}],\"max_tokens\":8}"
rec llama_exceed_stream body /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}],\"max_tokens\":8,\"stream\":true}"
rec llama_bad_json body /v1/chat/completions '{"messages": [ {"role": "user", "content": "unterminated'
rec llama_no_messages body /v1/chat/completions '{"max_tokens":4}'
rec llama_models json /v1/models
rec llama_props json /props
# the requests `slipway probe` sends (src/probe: one user message, temperature 0, seed 42)
rec llama_probe_liveness json /v1/chat/completions '{"messages":[{"role":"user","content":"Say OK."}],"max_tokens":1,"temperature":0,"seed":42}'
rec llama_probe_chat json /v1/chat/completions '{"messages":[{"role":"user","content":"Say hello in a few words."}],"max_tokens":16,"temperature":0,"seed":42}'
rec llama_probe_stream sse /v1/chat/completions '{"messages":[{"role":"user","content":"Say hello in a few words."}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true},"temperature":0,"seed":42}'
rec llama_metrics prom /metrics
stop

start --reasoning-format none
rec llama_think_inline_stream sse /v1/chat/completions "{$msg,$think,\"max_tokens\":64,\"seed\":5,\"stream\":true}"
stop
echo "server: llama.cpp $(basename "$llama"), model $model"
