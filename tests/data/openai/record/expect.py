#!/usr/bin/env python3
"""Write tests/data/openai case files for transcripts recorded by record.sh.

usage: expect.py RECDIR DESTDIR "PROVENANCE"

An oracle independent of slipway's C parser: it folds each recorded stream or reply with Python's
json module and writes what the C side must find into NAME.case.json, and copies the recorded
bytes (NAME.<ext>) and the request (NAME.request.json) next to it. The error and /metrics
expectations are read from the recorded JSON/text by the same plain means.
"""
import json, os, shutil, sys

rec, dest, prov = sys.argv[1:4]
os.makedirs(dest, exist_ok=True)

def think_split(content):
    s = content.lstrip(" \n\r\t")
    if s.startswith("<think>"):
        body = s[7:]
        i = body.find("</think>")
        if i < 0:
            return "", body, "unclosed"
        return body[i + 8:].lstrip("\n\r "), body[:i], "inline"
    i = content.find("</think>")
    if i >= 0:
        return content[i + 8:].lstrip("\n\r "), content[:i], "dangling"
    return content, "", "none"

def fold(objs, streamed):
    out = {"content": "", "reasoning": "", "fields": set(), "calls": {}, "finish": "",
           "usage": None, "timings": None, "chunks": 0, "text_chunks": 0}
    for o in objs:
        out["chunks"] += 1
        text = False
        for ch in o.get("choices", []):
            if ch.get("index", 0) != 0:
                continue
            m = ch.get("delta" if streamed else "message") or {}
            c = m.get("content")
            if isinstance(c, str) and c:
                out["content"] += c; text = True
            r1, r2 = m.get("reasoning"), m.get("reasoning_content")
            if isinstance(r1, str): out["fields"].add("reasoning")
            if isinstance(r2, str): out["fields"].add("reasoning_content")
            r = r1 if isinstance(r1, str) else r2
            if isinstance(r, str) and r:
                out["reasoning"] += r; text = True
            for k, tc in enumerate(m.get("tool_calls") or []):
                idx = tc.get("index", k)
                call = out["calls"].setdefault(idx, {"index": idx, "id": None, "name": None, "arguments": ""})
                if tc.get("id") and not call["id"]: call["id"] = tc["id"]
                fn = tc.get("function") or {}
                if fn.get("name") and not call["name"]: call["name"] = fn["name"]
                if isinstance(fn.get("arguments"), str): call["arguments"] += fn["arguments"]
            if isinstance(ch.get("finish_reason"), str):
                out["finish"] = ch["finish_reason"]
        if isinstance(o.get("usage"), dict): out["usage"] = o["usage"]
        if isinstance(o.get("timings"), dict): out["timings"] = o["timings"]
        if text: out["text_chunks"] += 1
    fields = out["fields"]
    rf = "both" if len(fields) == 2 else (fields.pop() if fields else "none")
    think = "none"
    content, reasoning = out["content"], out["reasoning"]
    if rf == "none":
        content, extra, think = think_split(content)
        reasoning += extra
    exp = {"rc": "ok", "content": content, "reasoning": reasoning, "reasoning_field": rf,
           "think": think, "finish_reason": out["finish"]}
    if streamed:
        exp["chunks"] = out["chunks"]; exp["text_chunks"] = out["text_chunks"]
    if out["usage"]:
        u = out["usage"]
        exp["usage"] = {k: u[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    if out["timings"]:
        t = out["timings"]
        exp["timings"] = {"prompt_n": t["prompt_n"], "predicted_n": t["predicted_n"],
                          "predicted_per_second": t["predicted_per_second"]}
    calls = []
    for idx in sorted(out["calls"]):
        c = out["calls"][idx]
        try:
            valid = isinstance(json.loads(c["arguments"]), dict)
        except ValueError:
            valid = False
        e = {"index": idx, "name": c["name"] or "", "arguments": c["arguments"], "valid": valid}
        if c["id"]: e["id"] = c["id"]
        calls.append(e)
    exp["tool_calls"] = calls
    return exp

def stream_objs(raw):
    objs, done = [], False
    for ev in raw.decode("utf-8").split("\n\n"):
        if not ev.strip():
            continue
        data = "\n".join(l[6:] if l.startswith("data: ") else l[5:] for l in ev.split("\n") if l.startswith("data:"))
        if data == "[DONE]":
            done = True
        else:
            objs.append(json.loads(data))
    return objs, done

NOTES = {
    "llama_think_stream": "The request's GBNF grammar forces a <think> block; llama-server's reasoning parser moves it to reasoning_content.",
    "llama_think_response": "The request's GBNF grammar forces a <think> block; llama-server's reasoning parser moves it to reasoning_content.",
    "llama_think_inline_stream": "Second server run with --reasoning-format none: the forced <think> block stays inline in content, its tags cut across chunks.",
    "llama_tool_stream": "tool_choice required, an enum-only schema, the assistant turn prefilled with <tool_call>: a complete first call, then a second call cut by max_tokens (neither parallel_tool_calls false nor an EOS logit_bias stopped it).",
    "llama_tool_response": "Same request not streamed: a complete call and a second one cut by max_tokens.",
    "llama_tool_cut_stream": "max_tokens 48, parallel calls allowed: one complete call, then finish length.",
    "llama_health_loading": "GET /health polled while the model loaded (HTTP 503).",
    "llama_exceed": "A prompt of ~1228 tokens against a 512-token slot window (-c 1024 -np 2).",
    "llama_exceed_stream": "The same with stream true: the error comes as a plain JSON body, not as events.",
    "llama_bad_json": "A request body that is not valid JSON.",
}

def write(name, ext, kind, exp, status=None, note=""):
    note = note or NOTES.get(name, "")
    shutil.copyfile(os.path.join(rec, name + "." + ext), os.path.join(dest, name + "." + ext))
    req = os.path.join(rec, name + ".request.json")
    if os.path.exists(req):
        shutil.copyfile(req, os.path.join(dest, name + ".request.json"))
    case = {"source": "recorded: " + prov + (" " + note if note else ""), "kind": kind}
    if status is not None: case["status"] = status
    case["expect"] = exp
    with open(os.path.join(dest, name + ".case.json"), "w") as f:
        f.write(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
    print(name, kind)

for fn in sorted(os.listdir(rec)):
    name, ext = os.path.splitext(fn)
    ext = ext[1:]
    if not name.startswith("llama_") or ext == "status" or name.endswith(".request"):
        continue
    raw = open(os.path.join(rec, fn), "rb").read()
    sp = os.path.join(rec, name + ".status")
    status = int(open(sp).read()) if os.path.exists(sp) else None
    if ext == "sse":
        objs, done = stream_objs(raw)
        exp = fold(objs, True); exp["done"] = done
        write(name, ext, "stream", exp)
    elif name == "llama_props":
        # no parser of its own: kept for the probe's replay tests
        shutil.copyfile(os.path.join(rec, fn), os.path.join(dest, fn))
        print(name, "copied")
    elif ext == "json" and name != "llama_models":
        exp = fold([json.loads(raw)], False)
        write(name, ext, "response", exp)
    elif ext == "json":
        d = json.loads(raw)["data"]
        ms = [{"id": m["id"], "owned_by": m["owned_by"], "n_ctx": m["meta"]["n_ctx"],
               "n_ctx_train": m["meta"]["n_ctx_train"], "max_model_len": -1,
               "alias": (m.get("aliases") or [m["id"]])[0]} for m in d]
        write(name, ext, "models", {"rc": "ok", "n": len(d), "models": ms})
    elif ext == "body":
        if status is None:
            status = 503  # the health body caught while loading
        e = json.loads(raw)["error"]
        kinds = {"exceed_context_size_error": "context", "invalid_request_error": "invalid",
                 "server_error": "server", "unavailable_error": "unavailable"}
        exp = {"shape": "llamacpp", "kind": kinds[e["type"]], "type": e["type"],
               "code": str(e["code"]), "message": e["message"]}
        if "n_ctx" in e:
            exp["n_ctx"] = e["n_ctx"]; exp["n_prompt_tokens"] = e["n_prompt_tokens"]
        write(name, ext, "error", exp, status)
    elif ext == "prom":
        samples = {}
        n = 0
        for line in raw.decode().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            n += 1
            k, v = line.rsplit(" ", 1)
            samples[k.split("{")[0]] = samples.get(k.split("{")[0], 0.0) + float(v)
        pick = {k: samples[k] for k in sorted(samples)[:4]}
        write(name, ext, "metrics", {"rc": "ok", "engine": "llamacpp", "n": n, "sum": pick,
                                     "spec_rc": "SW_ENOENT"})
