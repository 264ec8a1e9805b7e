cwd: /tmp/dep
mkfifo f2.gguf  (nobody writes it: llama-server stays in its load)
/root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m /tmp/dep/f2.gguf --host 127.0.0.1 --port 18540
then: curl -s http://127.0.0.1:18540/health  (HTTP 503)
