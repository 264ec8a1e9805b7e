/*
 * Internal to src/bench: one run's state (struct run) and the steps of a run, shared by the files
 * that hold them: request.c (one request: its body, its flight, its figures), point.c (a point's
 * summaries), loops.c (the loops that keep a point's requests in flight), prompts.c (the
 * calibration and the prompts file), verdicts.c (what the points say together) and run.c (the
 * run). Not public.
 */
#ifndef SW_BENCH_RUN_INTERNAL_H
#define SW_BENCH_RUN_INTERNAL_H

#include "bench_internal.h"

struct event;
struct event_base;
struct run;

struct flight {
    struct sw_net_xfer x;
    struct sw_openai_result res;
    char *body;
    int64_t *cum;
    double *srv_ms;
    uint64_t *emit; /* opts.emit_stamps: the chunk's "sim_emit_ns", 0 when it carried none */
    size_t cap;
    struct sw_bench_sample *s;
    struct run *run;
    struct flight *next_free;
    int64_t words;              /* the filler words of its prompt (0: a file's request) */
    struct sw_bench_seen asked; /* its ceiling, body bytes, text only (sw_bench_check) */
};

struct run {
    const struct sw_bench_opts *o;
    struct sw_bench_report *rep;
    struct sw_net_loop loop;
    char url[700];  /* the chat completions URL */
    char root[700]; /* the base URL (/metrics, the cache reset) */
    bool llama;
    /* prompts */
    double tok_per_word;
    int64_t overhead; /* prompt tokens of a prompt with no filler words */
    /* every answered prompt's filler words and tokens, the calibration's among them: the ratio
     * one random prompt gives is ~4% off, so depths drift between runs unless refined */
    double cal_words, cal_tokens;
    json_t **file; /* requests read from --prompts */
    size_t nfile;
    uint64_t nonce;
    /* the point being run */
    struct sw_bench_point *pt;
    size_t next, done, cap;
    uint64_t shared_nonce;
    /* open loop */
    struct event *tick;
    struct sw_bench_rng rng;
    uint64_t t0;
    double next_at_s;
    bool sending_over;
    bool truncated; /* the schedule outgrew the samples' room (10 sigma: never expected) */
    /* --threads N: every thread walks the one schedule and sends the arrivals i with
     * i % stride == phase (stride 1: all of them) */
    uint64_t sched_i;
    int stride, phase;
    /* pool */
    struct flight *free_list;
    struct flight **all;
    size_t nall;
    /* progress */
    struct sw_progress prog;
    uint64_t prog_done;
    /* the first failure, for a run where nothing succeeded */
    int first_rc;
    char first_err[240];
};

/* request.c: a chunk of a streamed reply into f's records (the engine's counters beside it). */
int sw__bench_on_event(void *ud, const struct sw_sse_event *ev);
/* One more answered prompt of `words` filler words and `tokens` prompt tokens: the ratio over
 * every prompt so far, so later requests meet their depth closer than the first did. */
void sw__bench_learn_words(struct run *r, int64_t words, int64_t tokens);
/* The body of one request; sw_free it. *asked (may be NULL) gets what it asks. */
char *sw__bench_make_body(struct run *r, int64_t words, int64_t max_tokens, uint64_t nonce,
                          size_t file_i, struct sw_bench_seen *asked);
/* Start the point's next request (intended at `intended`); false when the point's samples are
 * all taken. A request that cannot start is counted done, with its error. */
bool sw__bench_start_one(struct run *r, uint64_t intended);
/* Free every flight of r's pool. */
void sw__bench_pool_free(struct run *r);

/* point.c */
int sw__bench_point_init(struct sw_bench_point *pt, int64_t depth, int conc, size_t cap);
/* Summaries of a point whose samples are in. */
void sw__bench_point_close(struct sw_bench_point *pt);
/* The client's own cost over a point: the loop thread's CPU and the wall time it ran in. */
void sw__bench_cost_begin(struct sw_bench_point *pt);
void sw__bench_cost_end(struct sw_bench_point *pt);

/* loops.c: r's event loop on a base of its own (*base: the caller frees it after the loop). */
int sw__bench_loop_open(struct run *r, struct event_base **base, struct sw_err *e);
/* One point, closed loop (its streams over threads with opts.threads) / open loop (r->cap: room
 * for the schedule). */
int sw__bench_run_closed(struct run *r, struct sw_bench_point *pt);
int sw__bench_run_open(struct run *r, struct sw_bench_point *pt);

/* prompts.c: the prompt's template overhead and tokens per filler word, from two short
 * requests; or the requests of a JSONL file. */
int sw__bench_calibrate(struct run *r, struct sw_err *e);
int sw__bench_load_file(struct run *r, const char *path, struct sw_err *e);

/* verdicts.c: the cache check and parity; each point against the roofline; the open loop's
 * rate and validity; the engine's counters after the points (the second scrape). */
void sw__bench_verdicts(const struct sw_bench_opts *o, struct sw_bench_report *rep);
void sw__bench_roofline(const struct sw_bench_opts *o, struct sw_bench_report *rep);
void sw__bench_open_verdict(const struct run *r, struct sw_bench_report *rep);
void sw__bench_engine_counters(struct run *r, const char *base,
                               const struct sw_openai_metrics *before,
                               struct sw_openai_metrics *after, bool *have_after);

#endif
