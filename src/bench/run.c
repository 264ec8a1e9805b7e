/*
 * bench/run: a run, step by step: the options checked, the run's own event loop opened, the
 * prompts learned (calibration) or read (a file), the engine's cache reset and its /metrics read
 * before the points, the grid of points (depth x concurrency, or the one open-loop point) each
 * run in turn (loops.c), then the verdicts (verdicts.c) and the counters after.
 *
 * One run is one net.h event loop on the caller's thread (a point may spread over more:
 * opts.threads); every request's intended send is the schedule's instant (closed loop: the
 * moment a stream's previous request ended), its actual send the moment its connection was
 * ready.
 *
 * What it deliberately does not do: retry, or go on after a step fails (a failed request is a
 * counted sample, not a failed step).
 */
#include "run_internal.h"

#include <event2/event.h>

#include <math.h>
#include <string.h>

void sw_bench_opts_init(struct sw_bench_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->tg = 128;
    o->pp = 512;
    o->repeat = 3;
    o->ignore_eos = true;
    o->arrival = SW_BENCH_ARRIVAL_POISSON;
    o->cv = 1.0;
    o->engine_metrics = true;
    o->duration_s = 30;
    o->seed = 1;
}

static int check_opts(const struct sw_bench_opts *o, struct sw_err *e)
{
    if (!o->url || strncmp(o->url, "http", 4))
        return sw_err_set(e, SW_EINVAL, "bench: a URL http(s)://HOST:PORT is needed");
    if (o->tg < 1 || o->tg > 1000000)
        return sw_err_set(e, SW_EINVAL, "bench: --tg must be 1..1000000 (got %lld)",
                          (long long)o->tg);
    if (o->mode == SW_BENCH_SWEEP) {
        if (o->repeat < 1 || o->repeat > 100000)
            return sw_err_set(e, SW_EINVAL, "bench: --repeat must be 1..100000");
        for (size_t i = 0; i < o->nconc; i++)
            if (o->conc[i] < 1 || o->conc[i] > 4096)
                return sw_err_set(e, SW_EINVAL, "bench: --concurrency must be 1..4096 (got %d)",
                                  o->conc[i]);
    } else {
        if (!(o->rate > 0) || o->rate > 100000)
            return sw_err_set(e, SW_EINVAL, "bench: --rate must be in (0, 100000]");
        if (!(o->duration_s > 0) || o->duration_s > 86400)
            return sw_err_set(e, SW_EINVAL, "bench: --duration must be in (0, 1 day]");
        if (o->rate * o->duration_s > 200000)
            return sw_err_set(e, SW_EINVAL,
                              "bench: --rate x --duration asks for more than 200,000 requests");
    }
    if (o->threads < 0 || o->threads > 256)
        return sw_err_set(e, SW_EINVAL, "bench: --threads must be 1..256");
    for (size_t i = 0; i < o->ndepths; i++)
        if (o->depths[i] < 0 || o->depths[i] > 100000000)
            return sw_err_set(e, SW_EINVAL, "bench: a depth must be 0..100M tokens");
    return 0;
}

/* The grid of points: each depth at each concurrency level (closed loop), or the one open-loop
 * point; each point's room for samples, and the requests the progress bar counts to. */
struct grid {
    int64_t depths[SW_BENCH_MAX_POINTS];
    size_t nd;
    int conc[SW_BENCH_MAX_POINTS];
    size_t nc;
    size_t caps[SW_BENCH_MAX_POINTS * 2];
    size_t open_cap;
    uint64_t total;
};

static void plan_grid(const struct sw_bench_opts *o, struct grid *g)
{
    memset(g, 0, sizeof(*g));
    g->nd = o->ndepths;
    memcpy(g->depths, o->depths, g->nd * sizeof(*g->depths));
    if (!g->nd)
        g->depths[g->nd++] = o->pp;
    if (o->prompts_file) {
        g->nd = 1;
        g->depths[0] = -1;
    }
    g->nc = o->nconc;
    memcpy(g->conc, o->conc, g->nc * sizeof(*g->conc));
    if (!g->nc)
        g->conc[g->nc++] = 1;
    if (o->mode == SW_BENCH_OPEN) {
        g->nd = g->nc = 1;
        g->conc[0] = 0;
        /* the schedule's length is random: its mean plus ten standard deviations of a renewal
         * count (variance ~ cv^2 x mean), at least 64 more */
        double mean = o->rate * o->duration_s;
        g->open_cap = (size_t)(mean + 10.0 * SW_MAX(o->cv, 0.1) * sqrt(mean)) + 64;
        g->total = (uint64_t)(o->rate * o->duration_s);
        return;
    }
    for (size_t c = 0; c < g->nc; c++) {
        g->caps[c] = (size_t)g->conc[c] * (size_t)o->repeat;
        g->total += g->caps[c] * g->nd;
    }
}

/* Every point of the grid, in turn, with the progress bar over all of them. */
static int run_points(struct run *r, struct sw_err *e)
{
    const struct sw_bench_opts *o = r->o;
    struct sw_bench_report *rep = r->rep;
    struct grid g;
    int rc = 0;
    plan_grid(o, &g);
    rep->points = sw_calloc(g.nd * g.nc, sizeof(*rep->points));
    if (!rep->points)
        return sw_err_set(e, SW_ENOMEM, "bench: out of memory");
    if (o->progress) {
        sw_progress_init(&r->prog, "bench", "req", g.total);
        r->prog.out = o->progress;
    }
    for (size_t d = 0; d < g.nd && !rc; d++) {
        for (size_t c = 0; c < g.nc && !rc; c++) {
            struct sw_bench_point *pt = &rep->points[rep->npoints];
            rc = sw__bench_point_init(pt, g.depths[d], g.conc[c],
                                      o->mode == SW_BENCH_OPEN ? g.open_cap : g.caps[c]);
            if (rc) {
                sw_err_set(e, rc, "bench: out of memory");
                break;
            }
            rep->npoints++;
            if (o->mode == SW_BENCH_OPEN) {
                r->cap = g.open_cap;
                rc = sw__bench_run_open(r, pt);
            } else {
                rc = sw__bench_run_closed(r, pt);
            }
            if (rc)
                sw_err_set(e, rc, "bench: the event loop failed");
        }
    }
    if (o->progress)
        sw_progress_finish(&r->prog);
    return rc;
}

/* r set up for o: the chat URL, the report's header, the run's own event loop. */
static int begin(struct run *r, const struct sw_bench_opts *o, struct sw_bench_report *rep,
                 struct event_base **base, struct sw_err *e)
{
    memset(r, 0, sizeof(*r));
    r->o = o;
    r->rep = rep;
    r->llama = !o->engine || !strcmp(o->engine, "llama.cpp") || !strcmp(o->engine, "llamacpp");
    r->nonce = (o->seed * 1000003ull) ^ (sw_now_ns() / 1000u);
    size_t ul = strlen(o->url);
    while (ul && o->url[ul - 1] == '/')
        ul--;
    snprintf(r->url, sizeof(r->url), "%.*s/v1/chat/completions", (int)SW_MIN(ul, 600u), o->url);
    snprintf(r->root, sizeof(r->root), "%.*s", (int)SW_MIN(ul, 600u), o->url);
    sw_net_redact_url(o->url, rep->url, sizeof(rep->url));
    snprintf(rep->model, sizeof(rep->model), "%s", o->model ? o->model : "");
    snprintf(rep->engine, sizeof(rep->engine), "%s", o->engine ? o->engine : "llama.cpp");
    rep->mode = o->mode;
    rep->started_at = sw_wall_unix();
    return sw__bench_loop_open(r, base, e);
}

/* The engine's counters from here (calibration excluded) to the last point's end: its prefix
 * cache reset first when asked (a failure fails the run), then the first scrape. */
static int counters_before(struct run *r, struct sw_openai_metrics *before, bool *have,
                           struct sw_err *e)
{
    const struct sw_bench_opts *o = r->o;
    struct sw_bench_counters *c = &r->rep->counters;
    if (o->reset_cache) {
        int rc = sw__bench_reset_cache(&r->loop, r->root, o->engine, o->api_key, c->reset,
                                       sizeof(c->reset), e);
        if (rc)
            return rc;
    }
    if (o->engine_metrics)
        *have = !sw__bench_scrape(&r->loop, r->root, o->api_key, before, c->why, sizeof(c->why));
    else
        snprintf(c->why, sizeof(c->why), "not read (asked)");
    return 0;
}

int sw_bench_run(const struct sw_bench_opts *o, struct sw_bench_report *rep, struct sw_err *e)
{
    struct run r;
    struct event_base *base = NULL;
    struct sw_openai_metrics before, after;
    bool have_before = false, have_after = false;
    memset(rep, 0, sizeof(*rep));
    memset(&r, 0, sizeof(r));
    memset(&before, 0, sizeof(before));
    memset(&after, 0, sizeof(after));
    int rc = check_opts(o, e);
    if (rc)
        return rc;
    rc = begin(&r, o, rep, &base, e);
    if (rc)
        return rc;
    rc = o->prompts_file ? sw__bench_load_file(&r, o->prompts_file, e) : sw__bench_calibrate(&r, e);
    if (!rc)
        rc = counters_before(&r, &before, &have_before, e);
    if (!rc)
        rc = run_points(&r, e);
    if (rc)
        goto out;
    if (o->mode == SW_BENCH_OPEN && rep->npoints)
        sw__bench_open_verdict(&r, rep);
    sw__bench_verdicts(o, rep);
    sw__bench_roofline(o, rep);
    if (have_before)
        sw__bench_engine_counters(&r, r.root, &before, &after, &have_after);
    sw_bench_slo_text(o, rep->slo, sizeof(rep->slo));
    size_t ok = 0;
    for (size_t i = 0; i < rep->npoints; i++)
        ok += rep->points[i].nsamples - rep->points[i].failed;
    if (!ok)
        rc = sw_err_set(e, r.first_rc ? r.first_rc : SW_EIO, "%s: no request succeeded: %s",
                        rep->url, r.first_err);
out:
    if (have_before)
        sw_openai_metrics_free(&before);
    if (have_after)
        sw_openai_metrics_free(&after);
    sw_net_loop_close(&r.loop);
    event_base_free(base);
    sw__bench_pool_free(&r);
    for (size_t i = 0; i < r.nfile; i++)
        json_decref(r.file[i]);
    sw_free(r.file);
    return rc;
}

void sw_bench_report_free(struct sw_bench_report *rep)
{
    if (!rep)
        return;
    for (size_t i = 0; i < rep->npoints; i++)
        sw_free(rep->points[i].samples);
    sw_free(rep->points);
    memset(rep, 0, sizeof(*rep));
}
