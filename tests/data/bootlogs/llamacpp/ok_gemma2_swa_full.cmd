cwd: /tmp/sw-capture.DQvFD3
/root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m /tmp/archs/all/gemma2-dense.gguf -c 8192 -np 2 --swa-full -kvu -lv 4 --host 127.0.0.1 --port 18462 
then: kill -TERM $PID
