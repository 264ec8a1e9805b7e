/*
 * Internal to src/bench: the engine's /metrics around a run (counters.c), used by run.c. Not
 * public.
 */
#ifndef SW_BENCH_INTERNAL_H
#define SW_BENCH_INTERNAL_H

#include <slipway/bench.h>
#include <slipway/net.h>

/* GET base/metrics and parse it into *m (free with sw_openai_metrics_free). 0, or -1 with why
 * written (the run goes on without counters). */
int sw__bench_scrape(struct sw_net_loop *l, const char *base, const char *bearer,
                     struct sw_openai_metrics *m, char *why, size_t why_len);
/* The engine's prefix-cache reset (vLLM POST /reset_prefix_cache, SGLang POST /flush_cache);
 * what was done in done. SW_EHTTP / SW_ENET with e naming the call, SW_EINVAL for an engine
 * without one (llama.cpp: cache_prompt:false is its control). */
int sw__bench_reset_cache(struct sw_net_loop *l, const char *base, const char *engine,
                          const char *bearer, char *done, size_t done_len, struct sw_err *e);
/* rep->counters from the two pages and rep's samples. */
void sw__bench_counters(const struct sw_openai_metrics *before,
                        const struct sw_openai_metrics *after, struct sw_bench_report *rep);
/* The roof of a vLLM or SGLang plan (roof_hf.c): r->bandwidth already set by the caller. */
int sw__bench_roof_hf(const struct sw_plan *p, struct sw_bench_roof *r, struct sw_err *e);

#endif
