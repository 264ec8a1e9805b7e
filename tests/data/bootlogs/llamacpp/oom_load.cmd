cwd: /tmp/sw-capture.DQvFD3
ulimit -v 200000
/root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m /tmp/archs/all/deepseek4-moe.gguf -fit off --no-mmap --host 127.0.0.1 --port 18469 -c 512 -np 1 -lv 4 
