cwd: /tmp/sw-capture.DQvFD3
/root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m /tmp/archs/all/llama-dense.gguf --host 127.0.0.1 --port 18469 -c 24683776 -np 1 -lv 4 
