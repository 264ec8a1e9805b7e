cwd: /tmp/sw-capture.ltGP8Q
model: /tmp/dep/gsrc/b/slipway gguf synth --in /tmp/archs/all/qwen3next-moe.gguf --vocab /root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/src/models/ggml-vocab-phi-3.gguf --out qwen3next.gguf --ctx 32768
idle VmPeak 1041208 kB; ulimit -v 1041308 (margin 100 kB)
/root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m qwen3next.gguf -c 8192 -np 1 --host 127.0.0.1 --port 18460 -lv 4 
then: curl http://127.0.0.1:18460/v1/chat/completions -d @chat800.json (one user message: "hello world " x 400, max_tokens 2) -> HTTP 500: {"error":{"code":500,"message":"got exception: std::bad_alloc","type":"server_error"}}
then: kill -TERM $PID
