/*
 * sim: an engine stand-in that boots, schedules, streams and fails like the real ones, driven by
 * the same laws as `slipway plan`. A sim is made from a plan (sw_plan_endpoint for a fleet
 * endpoint or a verbatim llama-server command line; the vLLM law's plan object for `vllm serve`:
 * sw_sim_new_argv makes one from an engine's own command line, sw_sim_new_endpoint from a fleet
 * endpoint) and then run on one libevent loop:
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
 * Also: chunked prefill in a step's token budget, vLLM's pool in blocks, llama.cpp's unified
 * pool, the timing model fitted to measurements (sw_sim_fit, `slipway sim fit`), faults on
 * demand (POST /sim/fault) or from the start (--fault: jitter, stalls, resets mid-stream, a
 * crash after N requests...), firehose mode and emit timestamps, more loops (docs/sim.md).
 *
 * What it deliberately does not do (yet): a runtime OOM from a fitted headroom model (only a
 * declared threshold, runtime_oom_tokens), SGLang's speculative decoding or radix cache, one
 * scheduler across loops.
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
 *     max(0, decode_base_us
 *            + decode_per_seq_us * (sequences decoding a token in this step)
 *            + decode_per_kv_us * (KV tokens those sequences hold) / 1000)   when any decodes
 *     (the intercept may be negative: on a CPU a batch of 2 can cost more than twice one)
 *   + prefill_step_us when the step prefills anything
 *   + for each prompt (or prompt chunk) of n tokens prefilled in the step, at KV position k0:
 *       prefill_base_us + prefill_per_token_us * n + prefill_per_kv_us * (n*k0 + n*(n-1)/2) / 1000
 *     (the last term is attention over what is already in the cache: quadratic in a prompt's
 *     depth), the costliest prompt of the step in full and each other one times
 *     prefill_batch_share (prompts batched together share the weights' pass: on this CPU two
 *     prompts in one step cost the real llama-server ~1.6x one, not 2x; 1 when <= 0).
 * Defaults (sw_sim_config_init): 2000 us base, 200 us per sequence, 1 us per 1000 KV tokens,
 * 50 us per prompt token, no per-prompt or per-depth prefill cost, batched prompts at full
 * cost (share 1), a 3 ms batch window: a small
 * model on a CPU, in the order of the tiny test model here. `slipway sim fit` (sw_sim_fit) fits them to measurements.
 */
struct sw_sim_timing {
    double decode_base_us;
    double decode_per_seq_us;
    double decode_per_kv_us; /* per 1000 tokens of KV held by the decoding sequences */
    double prefill_per_token_us;
    double prefill_base_us;     /* per prompt (or chunk) prefilled in a step */
    double prefill_per_kv_us;   /* per prompt token, per 1000 tokens of KV before it */
    double prefill_step_us;     /* per step that prefills anything (shared by its prompts) */
    double prefill_batch_share; /* what a step's other prompts cost beside its costliest (1) */
    /* A step started by a request that arrives while the engine is idle begins this long after
     * it, so requests sent together are prefilled together (llama-server's loop wakes, takes
     * every task posted meanwhile, then decodes one batch). Not fitted; default 3000. */
    double batch_window_us;
};

/* The duration of one step of the batch (the formula above), microseconds. prefill_n[i] and
 * prefill_k0[i] are the tokens and KV position of the i-th prompt chunk prefilled in it. */
double sw_sim_step_us(const struct sw_sim_timing *t, int decoding, double kv_decoding,
                      size_t n_prefill, const double *prefill_n, const double *prefill_k0);

/*
 * A fault (docs/sim.md, "Faults"), on demand (POST /sim/fault) or from the start (--fault).
 */
enum sw_sim_fault_kind {
    SW_SIM_FAULT_NONE = 0,         /* clears every fault */
    SW_SIM_FAULT_DEAD_GENERATION,  /* /health 200, no step runs */
    SW_SIM_FAULT_HANG,             /* nothing is answered, not even /health */
    SW_SIM_FAULT_OOM_NEXT_REQUEST, /* the next generation request dies the runtime-OOM way */
    SW_SIM_FAULT_HTTP_500,         /* the next `count` generation requests get the engine's 500 */
    SW_SIM_FAULT_EXIT0,            /* the engine's last lines, exit 0 */
    SW_SIM_FAULT_JITTER,           /* every step lasts up to `ms` longer (seeded, uniform) */
    SW_SIM_FAULT_STALL,            /* the next step is held `ms` longer, once */
    SW_SIM_FAULT_RESET,            /* the next `count` requests' connections are reset (RST)
                                    * after `after` tokens of them were generated */
    SW_SIM_FAULT_CRASH,            /* `count` more generation requests complete, then the
                                    * engine crashes, cutting what is in flight */
};
struct sw_sim_fault {
    enum sw_sim_fault_kind kind;
    int64_t count; /* >= 1 (1 when not given) */
    int64_t ms;    /* jitter, stall: >= 1 */
    int64_t after; /* reset: >= 1 */
};

/* "KIND[:ARG]" as --fault takes it: none, dead_generation, hang, oom_next_request, exit0;
 * http_500[:COUNT], crash[:COUNT] (COUNT requests served first, default 1); jitter:DURATION,
 * stall:DURATION (e.g. 5ms, 2s); reset:TOKENS[xCOUNT]. Errors quote the spec. */
int sw_sim_fault_parse(const char *spec, struct sw_sim_fault *out, struct sw_err *e);
/* The same from POST /sim/fault's {"kind": K, "count": N, "ms": N, "after": N}. */
int sw_sim_fault_from_json(const json_t *o, struct sw_sim_fault *out, struct sw_err *e);
/* The kind's name as both forms spell it ("http_500"). */
const char *sw_sim_fault_name(enum sw_sim_fault_kind k);

#define SW_SIM_MAX_FAULTS 8
#define SW_SIM_SPEC_MAX   8

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
    /* A step's token budget (chunked prefill: a prompt past what is left of it is prefilled
     * in chunks over several steps, its first token with the last): vLLM's
     * max_num_batched_tokens. 0: the engine's (llama.cpp: the plan's n_batch; vLLM: 2048). */
    int64_t batch_tokens;
    struct sw_sim_timing timing;
    FILE *log;          /* the engine's log (stderr when NULL) */
    FILE *out;          /* the bound port as the first line (stdout when NULL) */
    bool announce_json; /* that line as {"port": N, "url": "http://HOST:N"} */
    /* Firehose: no pacing, every step takes no time (tokens go out as fast as the loop writes
     * them); for measuring clients. */
    bool firehose;
    /* Every streamed chunk carries "sim_emit_ns": the CLOCK_MONOTONIC instant it was written
     * (the same clock a client on this host reads), for a client's timing-error check. */
    bool emit_stamps;
    /* Event loops (one per core): threads - 1 more loops, each on its own thread with its own
     * listener on the same port (SO_REUSEPORT: the kernel spreads the connections) and its own
     * scheduler (its own slots: N loops serve like N engines behind one port). They start
     * serving when the first one has booted; faults and /metrics are per loop. 0 or 1: one. */
    int threads;
    /* Speculative decoding (--spec-accept R0,R1,...): each decode step of a sequence drafts
     * n_spec tokens and keeps the first a of them, P(a > k) = spec_accept[k] (non-increasing),
     * drawn from the seed: 1 + a tokens in that step's one chunk. The engine's counters follow
     * (vLLM's per-position counters, SGLang's accept-length and rate gauges, llama.cpp's
     * timings draft_n / draft_n_accepted). n_spec 0: none. */
    double spec_accept[SW_SIM_SPEC_MAX];
    int n_spec;
    /* Faults set when the engine is ready to serve (--fault), in order. */
    struct sw_sim_fault faults[SW_SIM_MAX_FAULTS];
    int n_faults;
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

/*
 * An SGLang sim from the law's plan object ({engine, report, lines}: sw_engine_plan_argv("sglang")
 * or a fleet plan's engine_plan) and the model directory. plan may be NULL when the payload does
 * not resolve. context_len: the request window (--context-length, else the model's
 * max_position_embeddings; required); max_running: --max-running-requests (0: the law's, else
 * 256); metrics: --enable-metrics (SGLang serves /metrics only then).
 */
int sw_sim_new_sglang(const json_t *plan, const char *model_dir, int64_t context_len,
                      int64_t max_running, bool metrics, const struct sw_sim_config *c,
                      struct sw_sim **out, struct sw_err *e);

/* sw_sim_new_vllm with a boot that ends as `boot` says (NULL: as the plan says). */
int sw_sim_new_vllm_boot(const json_t *plan, const char *model_dir, int64_t max_num_seqs,
                         const struct sw_sim_vllm_boot *boot, const struct sw_sim_config *c,
                         struct sw_sim **out, struct sw_err *e);

/*
 * A sim from an engine's own command line, verbatim (`slipway sim --engine E -- ARGV`), read through
 * the engine's flag table: llama.cpp's planned by sw_plan_endpoint (c->device_memory as a CPU
 * build's host memory), vLLM's and SGLang's by their law (sw_engine_plan_argv, with
 * c->device_memory and `weights`, the weights' bytes as loaded or 0: vLLM's budget term; SGLang's
 * free memory around the load, with c->device_memory). The sim serves where the line says
 * (--host, --port) unless c->listen is given, under the line's name (llama.cpp -a, vLLM and SGLang
 * --served-model-name) unless c->alias is; vLLM's --enable-auto-tool-choice makes "auto" tool
 * choice work, SGLang's --enable-metrics serves /metrics, SGLang's window is --context-length (else
 * the model's max_position_embeddings), and a step's budget is the line's (vLLM
 * --max-num-batched-tokens, SGLang --chunked-prefill-size) unless c->batch_tokens is set. A plan
 * the law cannot make for a payload that is there is an error; for one that is not, the sim boots
 * and fails as the engine does. engine: "llama.cpp" ("llamacpp", "llama-server"), "vllm" or
 * "sglang"; another is SW_EUNSUPPORTED. Free with sw_sim_free.
 */
int sw_sim_new_argv(const char *engine, int argc, char **argv, uint64_t weights,
                    const struct sw_sim_config *c, struct sw_sim **out, struct sw_err *e);

/*
 * A sim of a fleet endpoint, planned by sw_plan_endpoint (f may be NULL for llama.cpp): it serves
 * under the endpoint's alias unless c->alias is given, a step's budget is the shape's
 * max_num_batched_tokens unless c->batch_tokens is set. A vLLM endpoint's boot ends as its
 * declared compile constraint says, or, with `ledger` (a path; NULL: none) and a fork profile, as
 * the headroom model fitted on the endpoint's recorded boots says (docs/sim.md): an engine-sized
 * pool the model predicts is then pinned on ep (shape.kv_cache_bytes) so the law prints its
 * tokens. An SGLang endpoint's window is its max_model_len, else the model's. Free with
 * sw_sim_free.
 */
int sw_sim_new_endpoint(const struct sw_fleet *f, struct sw_fleet_endpoint *ep, const char *ledger,
                        const struct sw_sim_config *c, struct sw_sim **out, struct sw_err *e);

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

/* ---------------------------------------------------------------------------------------------
 * Calibration (`slipway sim fit`, docs/sim.md): the timing model fitted to measured points, those
 * of a closed-loop `slipway bench` sweep (depth x concurrency) or the operator's declared figures.
 */
struct sw_sim_point {
    int64_t depth;        /* the depth asked (shown; prompt_tokens is what counts) */
    int concurrency;      /* streams kept in flight (>= 1) */
    int repeat;           /* requests per stream (>= 1) */
    double prompt_tokens; /* per request */
    int64_t tg;           /* tokens generated per request */
    double decode_tps;    /* per-stream decode (median); <= 0 or NaN: not measured */
    double prefill_tps;   /* prompt tokens / (first token - sent) (median); <= 0 or NaN: not */
    char source[96];      /* "bench run 3", "fact decode_bf16_ctx166" */
};

/* What a closed-loop bench of p would measure against the sim's scheduler with timing t,
 * n_slots slots and a step budget of batch_tokens (0: none): the live scheduler's rules replayed
 * on a virtual clock (streams send their next request a round trip after the previous one ended;
 * a request that arrives during a step joins the next; decodes first, then prompts in chunks).
 * OUT: the medians over the point's requests, as bench computes them. */
void sw_sim_predict(const struct sw_sim_timing *t, int n_slots, int64_t batch_tokens,
                    const struct sw_sim_point *p, double *decode_tps, double *prefill_tps);

/* Bits of struct sw_sim_fit.fitted, in the order of struct sw_sim_timing's fields. */
enum {
    SW_SIM_FIT_DECODE_BASE = 1u << 0,
    SW_SIM_FIT_DECODE_SEQ = 1u << 1,
    SW_SIM_FIT_DECODE_KV = 1u << 2,
    SW_SIM_FIT_PREFILL_TOKEN = 1u << 3,
    SW_SIM_FIT_PREFILL_BASE = 1u << 4,
    SW_SIM_FIT_PREFILL_KV = 1u << 5,
    SW_SIM_FIT_PREFILL_STEP = 1u << 6,
    SW_SIM_FIT_PREFILL_SHARE = 1u << 7,
};

struct sw_sim_fit {
    struct sw_sim_timing timing; /* OUT */
    double max_err_pct;          /* OUT: the worst 100 * |predicted - measured| / measured */
    double rms_err_pct;          /* OUT */
    size_t n_targets;            /* OUT: figures fitted */
    unsigned fitted;             /* OUT: SW_SIM_FIT_* of the terms fitted (the rest: start's) */
};

/*
 * Fit the timing model to the points: the terms minimising the squared log error of
 * sw_sim_predict against every measured figure (Nelder-Mead on the logs of the terms, from a
 * linear first guess). A term the points cannot tell apart is kept from start (NULL: the
 * defaults): with single-stream points only, decode_per_seq_us; with no prefill figure, the
 * prefill terms; with one depth only, the per-KV terms. SW_EINVAL when no point has a figure.
 */
int sw_sim_fit(const struct sw_sim_point *pts, size_t n, int n_slots, int64_t batch_tokens,
               const struct sw_sim_timing *start, struct sw_sim_fit *out, struct sw_err *e);

/* Merges the points of one workload measured in several runs (same depth, concurrency and tg,
 * prompt tokens within 5%) into one whose decode and prefill figures are the medians over the
 * runs (repeat: one run's); *n shrinks. The fit then weighs each workload once, at its typical
 * figure. Points of distinct workloads (an operator's declared figures) are left as they are. */
void sw_sim_points_pool(struct sw_sim_point *pts, size_t *n);

/* The closed-loop points of a `slipway bench --json` document, appended to *pts (grown with
 * sw_realloc; sw_free it). An open-loop run or a point with no successful request adds none. */
int sw_sim_points_from_bench(const json_t *doc, const char *source, struct sw_sim_point **pts,
                             size_t *n, struct sw_err *e);

struct sw_fleet_endpoint;
/* The operator's declared figures of an endpoint (its `measured:` facts in tok/s): a fact named
 * decode*ctxN (decode at context N) or prefill*ctxN, with `_cM` for M concurrent streams (1
 * when absent). Appended to *pts. */
int sw_sim_points_from_fleet(const struct sw_fleet_endpoint *ep, struct sw_sim_point **pts,
                             size_t *n, struct sw_err *e);

/* Where `slipway sim fit FLEET --endpoint E` writes its fit: E.sim-fit.json beside FLEET. */
void sw_sim_fit_path(const char *fleet, const char *endpoint, char *out, size_t n);
/* The timing of E.sim-fit.json beside FLEET over *t when the file is there (0 and *t as it was
 * when it is not), then *t's own terms that `keep` names (SW_SIM_FIT_* bits: the ones given on
 * the command line) over the fit's. */
int sw_sim_timing_beside(const char *fleet, const char *endpoint, unsigned keep,
                         struct sw_sim_timing *t, struct sw_err *e);

/* `slipway sim fit`: what to fit on. */
struct sw_sim_fit_req {
    const char *fleet;        /* a fleet file: the endpoint's declared figures (NULL: none) */
    const char *endpoint;     /* the endpoint (required with fleet; with ledger: its runs only) */
    const char *ledger;       /* a ledger's `slipway bench` runs (NULL: none) */
    const char *const *bench; /* `slipway bench --json` files */
    size_t n_bench;
    int64_t slots;        /* the engine's slots; 0: the highest concurrency measured */
    int64_t batch_tokens; /* a step's token budget */
    const char *out;      /* where the fit is written; NULL: beside the fleet (with fleet), else
                             nowhere */
};
/*
 * Gather the points (the fleet's declared figures, the ledger's closed-loop bench runs, the bench
 * files), pool each workload's runs, fit the timing model, and write the fit file. *doc: {timing,
 * fitted, slots, max_batched_tokens, figures, max_err_pct, rms_err_pct, points[...], out} (docs/sim.md
 * "Calibration"), "out" only when written. SW_ENOENT when no figure is there to fit.
 */
int sw_sim_fit_run(const struct sw_sim_fit_req *q, json_t **doc, struct sw_err *e);

/* {"decode_base_us": ..., ...}: new reference, NULL on OOM. */
json_t *sw_sim_timing_json(const struct sw_sim_timing *t);
/* Read those keys (each optional: a missing one keeps t's value); errors name `where`. */
int sw_sim_timing_from_json(const json_t *j, const char *where, struct sw_sim_timing *t,
                            struct sw_err *e);
/* A fit file as `slipway sim fit --out` writes it ({"timing": {...}, "points": [...], ...}). */
int sw_sim_timing_load(const char *path, struct sw_sim_timing *t, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
