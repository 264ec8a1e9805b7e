/*
 * slipway bench: decode and prefill numbers that do not depend on the client.
 *
 * Streams chat completions at an OpenAI-compatible endpoint (net.h's event loop, sse.h, openai.h:
 * no second HTTP or SSE stack) and measures every request on CLOCK_MONOTONIC where the bytes
 * arrive: the INTENDED send time (the schedule), the actual send, the first response byte, the
 * first token of any kind (reasoning or content), the first content token, every token-bearing
 * chunk, the end. Tokens are counted as tokens, never as chunks: from the engine's per-chunk
 * counters when it sends them (llama.cpp `timings_per_token`: timings.predicted_n in every chunk;
 * vLLM continuous usage: usage.completion_tokens in every chunk), and from the final usage /
 * timings otherwise; reasoning tokens count like content tokens. The engine's own figures
 * (llama.cpp timings, cache_n, usage.prompt_tokens_details.cached_tokens) are kept beside the
 * client's, per request, with the disagreement.
 *
 * Workloads: a depth sweep (prompt depth x generated tokens, repeated), a closed-loop concurrency
 * sweep (C streams kept in flight), and open-loop arrivals (constant, Poisson or gamma
 * inter-arrival times from a seeded generator, latency from the intended send beside the
 * uncorrected one, the achieved rate and the client's send lag; a run whose send lag exceeds a
 * bound is marked invalid). Prompts are synthetic with a per-request nonce at their START (a
 * prefix cache cannot serve any of them) or read from a JSONL file of chat requests.
 *
 * docs/bench.md defines every metric and the clock it is read on.
 *
 * The engine's /metrics are read before and after the points (token counters reconciled with the
 * client's, prefix-cache hits for the cache check, vLLM's spec-decode acceptance per position).
 *
 * What it deliberately does not do: judge a speed (it reports), retry a failed request (it is
 * counted as failed), or run an open-loop schedule on more than one event loop (a closed-loop
 * point's streams can be split over threads, one loop each: opts.threads).
 */
#ifndef SLIPWAY_BENCH_H
#define SLIPWAY_BENCH_H

#include <slipway/core.h>
#include <slipway/openai.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Fixed-bucket latency histogram (log-linear, HdrHistogram-style): values in nanoseconds from
 * 1 us to ~275 s at 1/32 relative resolution (about 3%); exact min, max, sum and count. No
 * allocation; merging is adding counts.
 */
#define SW_BENCH_HIST_SUB   32u
#define SW_BENCH_HIST_OCT   28u /* octaves above 1 us */
#define SW_BENCH_HIST_NBINS (SW_BENCH_HIST_SUB * SW_BENCH_HIST_OCT + 1u)

struct sw_bench_hist {
    uint64_t n;
    uint64_t min_ns, max_ns; /* exact */
    double sum_ns;
    uint32_t bins[SW_BENCH_HIST_NBINS];
};

void sw_bench_hist_init(struct sw_bench_hist *h);
void sw_bench_hist_add(struct sw_bench_hist *h, uint64_t ns);
void sw_bench_hist_merge(struct sw_bench_hist *to, const struct sw_bench_hist *from);
/* The value at quantile q (0..1) in ns: the upper edge of its bucket, clamped to [min, max].
 * 0 when empty. */
uint64_t sw_bench_hist_quantile(const struct sw_bench_hist *h, double q);
/* The CDF: for every non-empty bucket, its upper edge in ms (clamped to [min, max]) and the
 * fraction of values at or below it. Writes at most max points; returns how many. */
size_t sw_bench_hist_cdf(const struct sw_bench_hist *h, double *x_ms, double *y, size_t max);
/* {"n", "mean_ms", "min_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"}; new reference. */
json_t *sw_bench_hist_json(const struct sw_bench_hist *h);

/* Spread of a small set of repeats: median, min, max, quartiles (linear interpolation). NaN
 * values are left out; n counts the finite ones. */
struct sw_bench_spread {
    size_t n;
    double median, min, max, q1, q3;
};
void sw_bench_spread(const double *v, size_t n, struct sw_bench_spread *out);

/* ---------------------------------------------------------------------------------------------
 * Arrivals: inter-arrival gaps for open-loop runs. A seeded generator (splitmix64 / xoshiro256**)
 * so a run is repeatable.
 */
enum sw_bench_arrival {
    SW_BENCH_ARRIVAL_CONSTANT = 0,
    SW_BENCH_ARRIVAL_POISSON, /* exponential gaps */
    SW_BENCH_ARRIVAL_GAMMA    /* gamma gaps with a coefficient of variation cv (shape 1/cv^2) */
};

struct sw_bench_rng {
    uint64_t s[4];
};
void sw_bench_rng_seed(struct sw_bench_rng *r, uint64_t seed);
uint64_t sw_bench_rng_next(struct sw_bench_rng *r);
double sw_bench_rng_unit(struct sw_bench_rng *r); /* uniform in (0, 1) */

/* "constant", "poisson", "gamma:CV" (CV > 0). SW_EINVAL with the reason. */
int sw_bench_arrival_parse(const char *s, enum sw_bench_arrival *kind, double *cv,
                           struct sw_err *e);
/* The next gap in seconds for a mean rate of `rate` per second. */
double sw_bench_arrival_gap(enum sw_bench_arrival kind, double cv, double rate,
                            struct sw_bench_rng *r);

/* ---------------------------------------------------------------------------------------------
 * Synthetic prompts: `words` filler words drawn from a fixed list by a seeded generator, with
 * "[nonce N] " at the very start so no two requests share a prefix (a prefix cache can serve at
 * most the chat template's own tokens). sw_free the result.
 */
char *sw_bench_prompt(uint64_t nonce, size_t words, size_t *len);

/* ---------------------------------------------------------------------------------------------
 * One request as measured. Instants are sw_now_ns() (CLOCK_MONOTONIC); 0 when it did not happen.
 */
enum sw_bench_count_src {
    SW_BENCH_COUNT_NONE = 0,
    SW_BENCH_COUNT_PER_CHUNK, /* the engine's cumulative count in every chunk (exact per chunk) */
    SW_BENCH_COUNT_FINAL,     /* only a final usage / timings total */
    SW_BENCH_COUNT_CHUNKS     /* no count came at all: token-bearing chunks (a lower bound) */
};
const char *sw_bench_count_src_name(enum sw_bench_count_src s);

struct sw_bench_sample {
    int rc;          /* 0, or the failure (transport, HTTP status, in-stream error, SW_ERANGE
                      * for figures that cannot be) */
    long status;     /* HTTP status, 0 when none */
    char error[240]; /* why it failed: valid UTF-8, the API key never in it */
    bool invalid;    /* the server's figures cannot be (sw_bench_check): rc is SW_ERANGE, error
                      * says which bound, and every figure of the request is dropped */
    int64_t depth;   /* the depth asked (tokens), -1 for file prompts */
    int64_t tg;      /* max_tokens asked */
    int concurrency; /* streams in flight by design (closed loop); 0 in open loop */
    uint64_t index;  /* order of sending within its run */
    /* instants */
    uint64_t t_intended, t_issued, t_sent, t_first_byte, t_first_token, t_first_content,
        t_last_token, t_end;
    /* counts */
    int64_t prompt_tokens;      /* usage.prompt_tokens, else timings prompt_n + cache_n; -1 */
    int64_t completion_tokens;  /* usage.completion_tokens, else timings.predicted_n; -1 */
    int64_t reasoning_tokens;   /* tokens in reasoning-bearing chunks (per-chunk counts), or
                                * usage.completion_tokens_details.reasoning_tokens; -1 unknown */
    int64_t cached_tokens;      /* timings.cache_n, else usage...cached_tokens; -1 unknown */
    int64_t first_chunk_tokens; /* tokens in the first token-bearing chunk (per-chunk counts) */
    enum sw_bench_count_src count_src;
    uint64_t chunks;       /* chunk events parsed (the [DONE] sentinel is not one) */
    uint64_t token_chunks; /* chunks that brought tokens (text or a count increment) */
    uint64_t multi_chunks; /* chunks that brought more than one token */
    /* derived, seconds (NaN when undefined) */
    double ttft_s;        /* first token - intended send */
    double ttft_sent_s;   /* first token - actual send (the uncorrected figure) */
    double ttfc_s;        /* first content token - intended send */
    double e2e_s;         /* end - intended send */
    double e2e_sent_s;    /* end - actual send */
    double send_lag_s;    /* issued - intended: how late the client's own loop was */
    double queue_s;       /* sent - issued: waiting for a connection (--connections) */
    double decode_span_s; /* last token - first token */
    double tpot_s;        /* decode_span / (completion_tokens - first_chunk_tokens) */
    double decode_tps;    /* (completion_tokens - first_chunk_tokens) / decode_span */
    double prefill_tps;   /* prompt_tokens processed (prompt - cached) / (first token - sent) */
    /* the engine's own figures (llama.cpp timings), NaN / -1 when it sent none */
    bool srv;
    int64_t srv_prompt_n, srv_cache_n, srv_predicted_n;
    int64_t srv_draft_n, srv_draft_accepted; /* speculative decoding; -1 when not reported */
    double srv_prompt_ms, srv_predicted_ms, srv_prompt_tps, srv_decode_tps;
    /* reconciliation: the client's figures against the engine's, on the same definitions */
    double span_diff_ms;       /* decode_span - srv_predicted_ms (the same interval, two clocks) */
    double decode_diff_pct;    /* 100 * (decode_tps - srv_decode_tps) / srv_decode_tps */
    double prefill_diff_pct;   /* 100 * (prefill_tps - srv_prompt_tps) / srv_prompt_tps: the
                                * client's includes the network, queueing and the first sample */
    double delivery_spread_ms; /* spread of (arrival - server's own emission time) over the
                                * token chunks, when the engine timed every chunk; NaN else */
    bool counts_agree;         /* completion_tokens == srv_predicted_n (when both known) */
    bool good;                 /* within every declared SLO (set by the runner) */
    /* the emitter's own send instants (opts.emit_stamps): tokens whose chunk carried
     * "sim_emit_ns", token-bearing chunks without one, and stamps that cannot be this chunk's
     * (later than its arrival, or earlier than the previous chunk's stamp); 0 when not asked */
    int64_t emit_matched, emit_missing, emit_bad;
};

/* The per-request statistics of a sample's chunk records, for callers that fold a stream
 * themselves (tests; bench's own runner). `cum` holds, per chunk record of r, the engine's
 * cumulative completion-token count after that chunk (-1 where the chunk carried none); `srv_ms`
 * the engine's cumulative predicted_ms after it (NaN where none); both may be NULL. ITLs go into
 * itl_tok (one value per token after the first: 0 for the later tokens of a multi-token chunk)
 * and itl_chunk (one per token-bearing chunk after the first); either may be NULL. */
void sw_bench_measure(struct sw_bench_sample *s, const struct sw_openai_result *r,
                      const int64_t *cum, const double *srv_ms, struct sw_bench_hist *itl_tok,
                      struct sw_bench_hist *itl_chunk);

/* ---------------------------------------------------------------------------------------------
 * Figures that cannot be (src/bench/bounds.c, docs/bench.md "Figures that cannot be"). A
 * server's counts and timings are its claims; a request whose claims break one of these bounds
 * is invalid: it counts as failed with the bound it broke, none of its figures enters a point,
 * and a run with one is not recorded in a ledger.
 */
#define SW_BENCH_DECODE_TPS_MAX  1e6  /* tok/s one stream is decoded at (the server's figure) */
#define SW_BENCH_PREFILL_TPS_MAX 1e8  /* tok/s a prompt is prefilled at (the server's figure) */
#define SW_BENCH_TEMPLATE_TOKENS 4096 /* prompt tokens a chat template may add to the body's */
#define SW_BENCH_CLOCK_SLACK_MS  1.0  /* the server's time may pass the client's by this ... */
#define SW_BENCH_CLOCK_SLACK     0.01 /* ... plus this share of it (rounding, two clocks) */

/* What the client asked and saw of one request, for sw_bench_check. */
struct sw_bench_seen {
    int64_t max_tokens; /* the ceiling the body asked: the largest of max_tokens,
                         * max_completion_tokens, n_predict; -1 none (or one not positive) */
    size_t body_bytes;  /* the request body's bytes */
    bool text_only;     /* no part but text (an image or audio part by URL has tokens its bytes
                         * do not bound) */
    double elapsed_ms;  /* the client's time from the request's send to its end (NaN unknown) */
    const int64_t *cum; /* per chunk record, the engine's cumulative count (-1 none); may be
                         * NULL */
    size_t ncum;
};

/* The bounds a server's claims must keep, checked on the folded stream r (its raw usage and
 * timings, negative numbers included, and the per-chunk counts): counts and times neither
 * negative nor infinite; completion tokens (final, or in any chunk) at most the ceiling asked,
 * or, with none asked, what SW_BENCH_DECODE_TPS_MAX allows over elapsed_ms; prompt tokens at
 * most body_bytes + SW_BENCH_TEMPLATE_TOKENS for a text-only body (a text token covers at least
 * one byte); cached at most the prompt, reasoning at most the completion, accepted drafts at most
 * the drafts; the server's decode rate over two tokens or more and its prefill rate within their
 * ceilings; its prompt_ms + predicted_ms within elapsed_ms (+ slack). Run it before
 * sw_bench_measure: a chunk's count sizes the measure's per-token loops. 0, or SW_ERANGE with the
 * first bound broken (the figure, its value and the bound) in e. */
int sw_bench_check(const struct sw_openai_result *r, const struct sw_bench_seen *seen,
                   struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * The decode roofline (src/bench/roof.c): one sequence's decode step reads its active weights
 * once, the KV of every context token and its recurrent state, so bandwidth / bytes per token
 * is the ceiling at a depth. docs/bench.md.
 */
struct sw_arch;
struct sw_plan;

struct sw_bench_roof {
    bool known;                    /* weights and bandwidth both known */
    double weight_bytes;           /* active weights read per token: all but the embedding table
                                    * (unless tied to the head), routed experts at
                                    * n_expert_used / n_expert */
    double total_weight_bytes;     /* every weight byte (informative) */
    double kv_bytes_per_token;     /* KV read per context token (full-attention caches) */
    double kv_swa_bytes_per_token; /* the same for sliding-window caches, up to swa_window */
    int64_t swa_window;
    double state_bytes;     /* recurrent state per sequence */
    double bandwidth;       /* bytes per second: llama.cpp, the devices' sum (its layers are split
                         * over them); vLLM/SGLang, one rank's device (the slowest) */
    int ranks;              /* vLLM/SGLang tensor parallel: the byte figures are one rank's share
                         * (weights / tp, KV and state per rank as the engine's law has them);
                         * 1 otherwise */
    char weights_from[300]; /* where the weights came from: "GGUF", "declared (...)",
                             * "checkpoint (...)" */
};

void sw_bench_roof_init(struct sw_bench_roof *r);
/* Bytes read per decoded token at `depth` tokens of context. */
double sw_bench_roof_bytes(const struct sw_bench_roof *r, int64_t depth);
/* The ceiling in tok/s at depth (NaN when not known). */
double sw_bench_roof_tps(const struct sw_bench_roof *r, int64_t depth);
/* r's weight_bytes / total_weight_bytes from an architecture's weights by role; SW_ENOENT when
 * it has none. Leaves the other fields. */
int sw_bench_roof_weights(const struct sw_arch *a, struct sw_bench_roof *r, struct sw_err *e);
/* The whole roof of a planned endpoint: bandwidth from its devices (fleet `bandwidth`).
 * llama.cpp: weights from the plan's architecture, KV per cell and recurrent state from the
 * plan's caches. vLLM / SGLang (src/bench/roof_hf.c): weights from the endpoint's `arch.weights`
 * or the checkpoint's safetensors headers, KV per token by the engine's law (vLLM's per-layer
 * specs, SGLang's cell), a sliding window capped, mamba state; per tensor-parallel rank.
 * SW_ENOENT (a device without bandwidth, no weights) or SW_EUNSUPPORTED (an engine without a
 * law), e saying which. */
int sw_bench_roof_from_plan(const struct sw_plan *p, struct sw_bench_roof *r, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * A run.
 */
enum sw_bench_mode {
    SW_BENCH_SWEEP = 0, /* depth x concurrency x repeat, closed loop */
    SW_BENCH_OPEN       /* open-loop arrivals */
};

#define SW_BENCH_MAX_POINTS 64

struct sw_bench_opts {
    const char *url; /* base URL, http://host:port (the /v1/chat/completions path is added) */
    const char *unix_socket; /* connect through it (a route through the endpoint's host,
                              * host/route); NULL: to the URL's host and port */
    const char *model;       /* NULL: left out of the request */
    const char *api_key;     /* bearer; never logged */
    const char *engine; /* "llama.cpp" (default: asks cache_prompt:false and timings_per_token),
                          * "vllm", "sglang", or "openai" (nothing engine-specific) */
    enum sw_bench_mode mode;
    int64_t depths[SW_BENCH_MAX_POINTS]; /* prompt depths in tokens (0: a minimal prompt) */
    size_t ndepths;
    int conc[SW_BENCH_MAX_POINTS]; /* closed-loop concurrency levels */
    size_t nconc;
    int64_t tg;        /* max_tokens (generated tokens asked) */
    int64_t pp;        /* prompt tokens when no --depth is given (the depth list is {pp}) */
    int repeat;        /* requests per stream per point (closed loop) */
    bool ignore_eos;   /* ask for exactly tg tokens */
    bool cache_prompt; /* do NOT ask the engine to skip its prompt cache (llama.cpp's
                        * cache_prompt:false is sent unless this is set) */
    bool reuse_prompt; /* one prompt (one nonce) for every request of a point */
    bool expect_hit;   /* the cache check expects hits (every request of a point after its
                        * first); default: it expects none */
    /* open loop */
    double rate; /* requests per second */
    enum sw_bench_arrival arrival;
    double cv;
    double duration_s;
    uint64_t seed;
    double max_lag_ms; /* p99 send lag above this: the run is invalid (0: 10 ms) */
    /* prompts from a file: a JSONL of chat request objects (messages, ...); NULL: synthetic */
    const char *prompts_file;
    const json_t *extra; /* an object whose keys are set in every request last (grammar,
                          * chat_template_kwargs, ...); may be NULL */
    /* declared SLOs for goodput, seconds (0: none): a request is good when it succeeded and each
     * declared figure, timed from the intended send, is within its bound */
    double slo_ttft_s, slo_tpot_s, slo_e2e_s;
    unsigned timeout_ms; /* per request (0: 600 s) */
    long connections;    /* at most this many connections (0: unlimited); requests past it wait
                          * in the client, which only the intended-send latency shows */
    FILE *progress;      /* a progress bar here (NULL: none) */
    /* the engine's /metrics read before and after the points (deltas reconciled with the
     * client's counts; sw_bench_counters). Default on; off: not read. */
    bool engine_metrics;
    /* reset the engine's prefix cache before the points: vLLM POST /reset_prefix_cache (served
     * with VLLM_SERVER_DEV_MODE=1), SGLang POST /flush_cache; a failure fails the run */
    bool reset_cache;
    /* read the emitter's send instant from every chunk ("sim_emit_ns", CLOCK_MONOTONIC on this
     * host: `slipway sim --emit-stamps`, bench/bench_timing.c's emitter) and histogram arrival -
     * emit per token: the client's own timing error (point.emit) */
    bool emit_stamps;
    /* the decode roofline to judge each point against (NULL: none); roof_why says why there is
     * none when it is NULL (printed, may be NULL) */
    const struct sw_bench_roof *roof;
    const char *roof_why;
    /* closed loop: a point's streams split over this many threads, one event loop each (0, 1:
     * one loop on the caller's thread); at most the point's concurrency */
    int threads;
};

void sw_bench_opts_init(struct sw_bench_opts *o);

/* One point of a sweep (or the one point of an open-loop run): its samples and summaries. */
struct sw_bench_point {
    int64_t depth;
    int concurrency;
    struct sw_bench_sample *samples;
    size_t nsamples;
    size_t failed;  /* requests that did not succeed (the invalid ones among them) */
    size_t invalid; /* requests whose figures cannot be (sample.invalid) */
    /* why they failed: each distinct error with its count, most frequent first, up to
     * SW_BENCH_REASONS of them; the requests whose error is none of those in reasons_other */
#define SW_BENCH_REASONS 4
    struct {
        char why[240];
        size_t n;
    } reasons[SW_BENCH_REASONS];
    size_t nreasons, reasons_other;
    struct sw_bench_hist ttft, ttft_sent, ttfc, e2e, e2e_sent, tpot, itl_tok, itl_chunk, lag;
    double wall_s;         /* first send to last end */
    double sum_decode_tps; /* summed decode across streams: total tokens / wall span of decode */
    struct sw_bench_spread decode, prefill, ttft_s, srv_decode, decode_diff, srv_prefill,
        prefill_diff; /* over samples */
    int64_t tokens_out, tokens_in, reasoning_tokens;
    bool cache_checked; /* every sample said how much of its prompt was cached */
    int64_t cached_max; /* the most cached prompt tokens in one sample */
    bool counts_agree;  /* every sample's token count agreed with the engine's */
    size_t good;        /* requests within every declared SLO (all successful ones if none) */
    double goodput_rps; /* good / wall_s */
    /* speculative decoding (llama.cpp timings.draft_n / draft_n_accepted, summed) */
    int64_t draft_n, draft_accepted;
    /* opts.emit_stamps: arrival - the emitter's stamp, one value per token, and the sums of the
     * samples' emit_matched / emit_missing / emit_bad */
    struct sw_bench_hist emit;
    int64_t emit_matched, emit_missing, emit_bad;
    /* the roofline (opts.roof): at the point's mean prompt tokens, the ceiling and the share of
     * it the median decode reached; NaN without a roof */
    double roof_depth, roof_bytes, roof_tps, roof_pct;
    /* the client's own cost over the point: the event loop's thread CPU (user + system) and the
     * wall time the point ran; utilisation = cpu / wall (1: the loop never waited for bytes, the
     * figures are the client's), CPU per token = cpu / completion tokens */
    double client_cpu_s, client_wall_s;
    int threads; /* event loops the point ran on (cpu is their sum, wall the longest) */
};

/* The engine's /metrics counters over the run's points: after minus before (NaN: not on the
 * page), beside the client's sums over the same requests. */
#define SW_BENCH_SPEC_POS_MAX 16
struct sw_bench_counters {
    bool present;    /* both scrapes parsed */
    char engine[16]; /* whose names the page used: llamacpp, vllm, sglang */
    char why[200];   /* when absent: why */
    char reset[200]; /* "" not asked; "ok: POST /reset_prefix_cache"; never a failure (the
                         * run fails instead) */
    double prompt_tokens, generation_tokens; /* the engine's counters' deltas */
    double prefix_queries, prefix_hits;      /* prompt tokens looked up / found in its cache */
    double spec_drafts, spec_draft_tokens, spec_accepted;
    double spec_accept_pos[SW_BENCH_SPEC_POS_MAX]; /* accepted at position k / drafts */
    size_t spec_npos;
    /* SGLang's gauges (the after page, mean over its ranks; NaN when absent or 0): tokens a
     * verify step keeps, and the share of draft tokens accepted, over its last decode log
     * interval. SGLang has no per-position counters. */
    double spec_accept_length, spec_accept_rate;
    int64_t client_prompt_tokens, client_completion_tokens; /* over every successful request */
    size_t client_failed;                                   /* requests that failed (their
                                                              * tokens the engine may count) */
    bool counts_agree; /* both token deltas equal the client's sums (and nothing failed) */
};

struct sw_bench_report {
    char url[512];
    char model[256];
    char engine[32];
    enum sw_bench_mode mode;
    int64_t started_at; /* unix seconds */
    struct sw_bench_point *points;
    size_t npoints;
    /* open loop */
    double rate_asked, rate_achieved, duration_s;
    char arrival[32];
    uint64_t seed;
    double max_lag_ms;
    bool invalid; /* the send lag exceeded the bound */
    char invalid_why[200];
    /* the cache check */
    bool cache_expect_hit; /* expect_hit was asked */
    bool cache_verified;   /* the engine's counters said what was expected */
    char cache_why[240];
    /* parity: summed decode at concurrency C below single-stream decode, per depth */
    char parity[1024];
    char slo[128]; /* the declared SLOs as text ("ttft<=2000ms tpot<=50ms"), "" when none */
    struct sw_bench_counters counters;
    bool roof_known; /* opts.roof was given */
    struct sw_bench_roof roof;
    char roof_why[300]; /* no roof: why */
};

/*
 * Run o. Fills rep (free with sw_bench_report_free). Returns 0 when the run ran (individual
 * request failures are counted in the points, not an error), SW_EINVAL for unusable options,
 * SW_ENOMEM, or the first transport error when NOT A SINGLE request succeeded.
 */
int sw_bench_run(const struct sw_bench_opts *o, struct sw_bench_report *rep, struct sw_err *e);
void sw_bench_report_free(struct sw_bench_report *rep);

/* The whole report as JSON (docs/bench.md names every field); per-request samples included when
 * samples is set. New reference, NULL on OOM. */
json_t *sw_bench_report_json(const struct sw_bench_report *rep, bool samples);
/* The human table. */
void sw_bench_report_print(FILE *f, const struct sw_bench_report *rep);
/* One row per request (every point), with a header line, written atomically to path. The
 * columns are the --json sample fields (docs/bench.md). */
int sw_bench_report_csv(const struct sw_bench_report *rep, const char *path, struct sw_err *e);
/* decode tok/s vs depth (one series per concurrency) and vs concurrency, as SVG. */
int sw_bench_report_svg(const struct sw_bench_report *rep, const char *path, struct sw_err *e);
/* One self-contained page (no script, nothing fetched): the table as the terminal shows it and
 * every panel of the SVG as an inline <svg>, written atomically to path. */
int sw_bench_report_html(const struct sw_bench_report *rep, const char *path, struct sw_err *e);

/* Did every check of the run hold: no request failed, the cache check held, every token count
 * agreed with the engine's, the open-loop schedule was kept, and with emit_stamps every token
 * matched its emitter's stamp. */
bool sw_bench_report_held(const struct sw_bench_report *rep, bool emit_stamps);
/* The requests whose figures cannot be (sw_bench_check), over every point. */
size_t sw_bench_report_invalid(const struct sw_bench_report *rep);

/* ---------------------------------------------------------------------------------------------
 * Declared SLOs (bench/slo.c).
 */
/* "ttft=2s,tpot=50ms,e2e=30s" (any of the three; each more than 0 and at most a day) into
 * o->slo_*_s. SW_EINVAL naming the item. */
int sw_bench_slo_parse(const char *s, struct sw_bench_opts *o, struct sw_err *e);
/* The declared SLOs as the report shows them ("ttft<=2000ms tpot<=50ms"), "" when none. */
void sw_bench_slo_text(const struct sw_bench_opts *o, char *out, size_t n);
/* A request that succeeded within every declared SLO (timed from the intended send). */
bool sw_bench_slo_good(const struct sw_bench_opts *o, const struct sw_bench_sample *s);

/* ---------------------------------------------------------------------------------------------
 * An endpoint of a fleet as bench measures it (bench/target.c): its route (through its host when
 * it listens on the host's loopback), served name, engine, API key (from where the fleet says),
 * and the decode roofline from its plan and its devices' bandwidth.
 */
struct sw_fleet;
struct sw_fleet_endpoint;
struct sw_service_target;
struct sw_bench_target {
    const struct sw_fleet *fleet;       /* loaded */
    const struct sw_fleet_endpoint *ep; /* the endpoint (in fleet) */
    struct sw_bench_roof roof;
    char roof_why[300];            /* no roofline: why */
    struct sw_service_target *svc; /* the fleet and the open route (deploy's); key wiped on close */
};
/* Load fleet_path (NULL: ./fleet.yaml), find endpoint `name` and open its route; o's url,
 * unix_socket, model, engine, api_key, roof and roof_why point into t. SW_ENOENT naming the fleet
 * file for an unknown endpoint, the fleet's, the route's or the secret's error. t is always safe
 * to close. */
int sw_bench_target_open(const char *fleet_path, const char *name, struct sw_bench_opts *o,
                         struct sw_bench_target *t, struct sw_err *e);
void sw_bench_target_close(struct sw_bench_target *t);

/* ---------------------------------------------------------------------------------------------
 * Runs in the ledger (bench/ledger.c).
 */
/* Record a run in the ledger at path: its parameters (o's workload; ep's canonical shape and its
 * hash when ep is given), doc (sw_bench_report_json), the chart at svg (may be NULL) and when it
 * started. *id gets the run's row. */
int sw_bench_record(const char *ledger, const char *endpoint, const struct sw_fleet_endpoint *ep,
                    const struct sw_bench_opts *o, const json_t *doc, const char *svg,
                    int64_t started, int64_t *id, struct sw_err *e);
/* Two recorded runs compared (`slipway bench compare`): each a bench id or a tag (the latest run
 * of the tag's endpoint and shape), from the ledger (NULL: beside fleet_path, NULL: ./fleet.yaml),
 * as sw_bench_compare documents them, with "a" and "b": {id, endpoint, shape, started_at}.
 * *out is a new reference. */
int sw_bench_compare_runs(const char *ledger, const char *fleet_path, const char *const runs[2],
                          json_t **out, struct sw_err *e);

/*
 * Compare two runs' --json documents (A then B): {points: [{depth, concurrency, metrics: [{metric,
 * better: higher|lower, a, b, diff (B - A), diff_pct, noise, exceeds_noise, verdict}]}], only_a,
 * only_b, better, worse}. A per-request metric's a/b are its spreads and its noise is half of
 * each run's range summed; its verdict is better / worse / within noise, or "no spread" with
 * fewer than two requests a side (and for point-level figures, which have no repeats). New
 * reference, or NULL with e set (a document with no points). docs/bench.md.
 */
json_t *sw_bench_compare(const json_t *a, const json_t *b, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
