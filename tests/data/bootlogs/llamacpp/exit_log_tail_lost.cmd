cwd: /tmp/sw-capture.DQvFD3
/root/.cache/slipway/llama.cpp/80fb11ac73e66d89eae2c6a91d8a77428fa733ed/bin/llama-server -m lfs.gguf --host 127.0.0.1 --port 18469 -lv 4 
note: llama-server exited 1 before its logger thread wrote the error lines (a real, timing-dependent loss of the log's tail); the payload was the git-lfs pointer of bad_payload_lfs
