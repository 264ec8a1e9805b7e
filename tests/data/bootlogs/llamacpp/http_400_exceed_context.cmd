cwd: /tmp/dep
server: /root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m /tmp/dep/syn/qwen3.gguf -c 8192 -np 2 --port 18530 --host 127.0.0.1 -lv 4
then: curl -s http://127.0.0.1:18530/v1/chat/completions -H "Content-Type: application/json" -d @long.json
long.json: {"messages":[{"role":"user","content":"hello world " x 3000}],"max_tokens":4}
model: slipway gguf synth --in qwen3-dense.gguf (test-llama-archs) --vocab ggml-vocab-qwen2.gguf --ctx 32768
