cwd: /tmp/sw-capture.DQvFD3
/root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m /tmp/archs/all/llama-dense.gguf -c 1024 -np 1 -lv 4 --host 127.0.0.1 --port 18468 
then: curl -s http://127.0.0.1:18468/completion -d \{\"prompt\":\"hi\"\,\"n_predict\":1\}
then: kill -TERM $PID
