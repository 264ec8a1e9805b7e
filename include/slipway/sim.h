/*
 * sim: an engine stand-in that boots, schedules, streams and fails like the real ones, driven by
 * the same laws as `slipway plan`. A sim is made from a plan (sw_plan_endpoint for a fleet
 * endpoint or a verbatim llama-server command line; the vLLM law's plan object for `vllm serve`)
 * and then run on one libevent loop:
 *   - boot: the engine's own boot-log lines carrying the law's numbers (llama-server's
 *     llama_context / llama_kv_cache / buffer lines; vLLM's "GPU KV cache size" and "Maximum
 *     concurrency" lines), so `slipway bootlog parse` reads them and `bootlog diff` matches them
 *     to the plan; a load time (declared, or the payload's bytes over a load rate); the engine's
 *     failure lines and exit status for a payload that does not resolve and for a shape past the
 *     declared device memory (llama.cpp: weights, KV or compute buffer allocation; vLLM: the KV
 *     pool too small for one request);
 *   - HTTP: /health (llama.cpp: 503 "Loading model" while loading; vLLM: nothing listens until
 *     the engine is up), /v1/models, /v1/chat/completions and /v1/completions (streamed or not,
 *     usage, llama.cpp's `timings`, `reasoning_content`, tool-call deltas), the engine's 400 past
 *     the per-slot window, /metrics with the engine's names, llama.cpp's /props and /slots;
 *   - a scheduler: slots (llama.cpp -np, vLLM max_num_seqs) with an admission queue, vLLM's KV
 *     pool (the law's tokens) gating admission with recompute preemption, and continuous
 *     batching in steps whose duration is the timing model's (struct sw_sim_timing).
 *
 * Text is deterministic: a function of the seed, the request's prompt and the token index.
 * Tokens are counted the sim's way (one token per 4 bytes of prompt, rounded up, plus a fixed
 * chat-template cost per message): consistent between usage, timings, metrics and the window.
 *
 * What it deliberately does not do (yet): chunked prefill, a pool in blocks, a runtime OOM from a
 * fitted headroom model (only a declared threshold, runtime_oom_tokens), faults on demand,
 * calibration (`slipway sim fit`), SGLang, one loop per core.
 */
#ifndef SLIPWAY_SIM_H
#define SLIPWAY_SIM_H

#include <slipway/core.h>
#include <slipway/plan.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The timing model, microseconds. A step of the batch takes
 *     decode_base_us + decode_per_seq_us * running + decode_per_kv_us * (sum of KV depths) / 1000
 *   + prefill_per_token_us * (prompt tokens admitted in this step).
 * Defaults (sw_sim_config_init): 2000 us base, 200 us per sequence, 1 us per 1000 KV tokens,
 * 50 us per prompt token: a small model on a CPU, in the order of the tiny test model here.
 */
struct sw_sim_timing {
    double decode_base_us;
    double decode_per_seq_us;
    double decode_per_kv_us; /* per 1000 tokens of KV held by the running sequences */
    double prefill_per_token_us;
};

struct sw_sim_config {
    const char *listen;         /* "HOST:PORT"; NULL: 127.0.0.1:0 (the bound port is announced) */
    const char *ready_file;     /* when set, "PORT\n" is written there (temp + rename) once bound */
    const char *alias;          /* the served model name; NULL: the engine's default */
    uint64_t seed;              /* the text's seed */
    int64_t load_ms;            /* -1: payload bytes / load_rate */
    uint64_t load_rate;         /* bytes per second; default 2 GiB/s */
    uint64_t device_memory;     /* 0: as the plan declares; else the device's capacity in bytes */
    int64_t max_tokens_default; /* a request without max_tokens: default 16 */
    bool reasoning; /* the model thinks: the first half of each chat reply is reasoning_content */
    bool tools;     /* the model calls tools: a chat request declaring tools gets a call */
    /* A declared runtime headroom: the first request whose prompt + max_tokens exceeds it dies
     * the engine's way (llama-server: HTTP 500 std::bad_alloc, then its GGML_ASSERT abort, exit
     * 134; vLLM: torch.OutOfMemoryError in the engine core, EngineDeadError, HTTP 500, and the
     * API server exits 0). 0: none. */
    int64_t runtime_oom_tokens;
    struct sw_sim_timing timing;
    FILE *log;          /* the engine's log (stderr when NULL) */
    FILE *out;          /* the bound port as the first line (stdout when NULL) */
    bool announce_json; /* that line as {"port": N, "url": "http://HOST:N"} */
};

/* The defaults stated above. */
void sw_sim_config_init(struct sw_sim_config *c);

struct sw_sim; /* opaque */

/*
 * A llama.cpp sim from a plan of sw_plan_endpoint (fleet endpoint or verbatim argv). plan_rc is
 * what sw_plan_endpoint returned: a plan that failed because the payload is not there still
 * makes a sim, one whose boot fails as llama-server's does (the plan's argv names the model).
 * Free with sw_sim_free.
 */
int sw_sim_new_llamacpp(const struct sw_plan *p, int plan_rc, const struct sw_sim_config *c,
                        struct sw_sim **out, struct sw_err *e);

/*
 * A vLLM sim from the law's plan object ({engine, report, lines}: sw_engine_plan_argv's output, or
 * a fleet plan's engine_plan) and the model directory (payload). plan may be NULL when the payload
 * does not resolve (the boot then fails as vLLM's does). max_num_seqs 0: vLLM's default (256).
 */
int sw_sim_new_vllm(const json_t *plan, const char *model_dir, int64_t max_num_seqs,
                    const struct sw_sim_config *c, struct sw_sim **out, struct sw_err *e);

/*
 * How a vLLM fleet endpoint's boot ends when a model says it does not serve: a declared compile
 * constraint (the fleet's known_bad with failure compile_constraint), or the headroom model's
 * verdict (calib sw_calib_headroom_predict): the pool's allocation or CUDA-graph capture runs out
 * of memory. The sim prints the engine's own lines for it and exits 1.
 */
enum sw_sim_vllm_fault {
    SW_SIM_VLLM_BOOTS = 0,
    SW_SIM_VLLM_COMPILE,     /* torch.compile/dynamo "Constraints violated", in profile_run */
    SW_SIM_VLLM_KV_OOM,      /* torch OOM allocating the KV pool */
    SW_SIM_VLLM_CAPTURE_OOM, /* torch OOM capturing CUDA graphs */
};
struct sw_sim_vllm_boot {
    enum sw_sim_vllm_fault fault;
    const char *text;     /* COMPILE: the declared error (RuntimeError: Worker failed ...) */
    uint64_t tried_bytes; /* the allocation that fails */
    uint64_t free_bytes;  /* what is free then */
    uint64_t total_bytes; /* the device's capacity, as torch prints it */
};

/* sw_sim_new_vllm with a boot that ends as `boot` says (NULL: as the plan says). */
int sw_sim_new_vllm_boot(const json_t *plan, const char *model_dir, int64_t max_num_seqs,
                         const struct sw_sim_vllm_boot *boot, const struct sw_sim_config *c,
                         struct sw_sim **out, struct sw_err *e);

/*
 * Boot and serve until SIGTERM/SIGINT (handled on the loop) or a boot failure. *exit_status
 * receives what the engine would exit with (llama-server: 1 on a load failure; vLLM: 1 on a boot
 * failure; 0 after a clean shutdown). Returns 0, or an error the sim itself hit (cannot bind).
 */
int sw_sim_run(struct sw_sim *s, int *exit_status, struct sw_err *e);

void sw_sim_free(struct sw_sim *s);

/* True when a vLLM model directory (or path) is not there: no DIR/config.json. */
bool sw_sim_payload_missing(const char *model_dir);

/* The sim's token count of a text (the same rule the window and usage use). */
int64_t sw_sim_count_tokens(const char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
