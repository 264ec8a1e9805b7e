/*
 * bench/loops: the loops that keep a point's requests in flight. A closed loop keeps C streams in
 * flight until C x repeat requests ran (each stream's next request intended the moment its last
 * one ended); an open loop sends on a seeded arrival schedule (a libevent timer on the loop's
 * base) whatever is still in flight. Either runs on the caller's thread, or over several (one
 * event loop each: a closed point's streams split over them, an open schedule's arrivals dealt
 * round-robin), the per-token histograms and the cost merged after.
 *
 * What it does not do: build or measure a request (request.c), or summarize a point (point.c).
 */
#include "run_internal.h"

#include <event2/event.h>

#include <pthread.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int sw__bench_loop_open(struct run *r, struct event_base **base, struct sw_err *e)
{
    /* libevent times its timers on CLOCK_MONOTONIC_COARSE unless asked (a 4 ms tick at HZ=250):
     * the open-loop schedule would run up to a tick late, every send lag with it */
    struct event_config *cfg = event_config_new();
    if (cfg)
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    *base = cfg ? event_base_new_with_config(cfg) : NULL;
    if (cfg)
        event_config_free(cfg);
    if (!*base)
        return sw_err_set(e, SW_ENOMEM, "bench: cannot make an event base");
    struct sw_net_loop_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.base = *base;
    lo.max_total_conns = r->o->connections;
    lo.max_host_conns = r->o->connections;
    lo.max_cached_conns = r->o->connections > 64 ? r->o->connections : 0;
    lo.unix_socket = r->o->unix_socket;
    int rc = sw_net_loop_init(&r->loop, &lo, e);
    if (rc) {
        event_base_free(*base);
        *base = NULL;
    }
    return rc;
}

/* Fold one thread's share of a point into the point: its histograms, client CPU and wall time,
 * the first error any thread met, its finished requests (the progress). */

/* ---- closed loop ---- */

static int run_threads(struct run *r, struct sw_bench_point *pt, int T);

int sw__bench_run_closed(struct run *r, struct sw_bench_point *pt)
{
    int T = SW_MIN(r->o->threads, pt->concurrency);
    if (T > 1)
        return run_threads(r, pt, T);
    pt->threads = 1;
    r->pt = pt;
    r->next = r->done = 0;
    r->cap = (size_t)pt->concurrency * (size_t)r->o->repeat;
    r->shared_nonce = ++r->nonce;
    sw__bench_cost_begin(pt);
    uint64_t now = sw_now_ns();
    for (int i = 0; i < pt->concurrency; i++)
        sw__bench_start_one(r, now);
    int rc = sw_net_loop_run(&r->loop);
    sw__bench_cost_end(pt);
    pt->nsamples = r->next;
    sw__bench_point_close(pt);
    return rc;
}

/* ---- open loop ---- */

static void schedule(struct run *r);

static void on_tick(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct run *r = ud;
    uint64_t now = sw_now_ns();
    /* every instant already due goes now, each keeping its own intended time */
    while (!r->sending_over) {
        uint64_t due = r->t0 + (uint64_t)(r->next_at_s * 1e9);
        if (due > now)
            break;
        if (r->next_at_s >= r->o->duration_s) {
            r->sending_over = true;
            break;
        }
        bool mine = r->stride <= 1 || r->sched_i % (uint64_t)r->stride == (uint64_t)r->phase;
        r->sched_i++;
        if (mine && !sw__bench_start_one(r, due)) {
            r->truncated = true;
            r->sending_over = true;
            break;
        }
        r->next_at_s += sw_bench_arrival_gap(r->o->arrival, r->o->cv, r->o->rate, &r->rng);
    }
    if (r->sending_over) {
        if (sw_net_loop_active(&r->loop) == 0)
            event_base_loopbreak(sw_net_loop_base(&r->loop));
        return;
    }
    schedule(r);
}

static void schedule(struct run *r)
{
    uint64_t due = r->t0 + (uint64_t)(r->next_at_s * 1e9), now = sw_now_ns();
    uint64_t wait = due > now ? due - now : 0;
    struct timeval tv = {(time_t)(wait / 1000000000u), (suseconds_t)(wait % 1000000000u / 1000u)};
    evtimer_add(r->tick, &tv);
}

/* The schedule from t0 on r's loop until its last request is done (pt's samples: r->pt). */
static int open_loop(struct run *r, uint64_t t0)
{
    r->next = r->done = 0;
    sw_bench_rng_seed(&r->rng, r->o->seed);
    r->tick = evtimer_new(sw_net_loop_base(&r->loop), on_tick, r);
    if (!r->tick)
        return SW_ENOMEM;
    r->t0 = t0;
    r->next_at_s = 0;
    r->sched_i = 0;
    r->sending_over = false;
    schedule(r);
    int rc = event_base_loop(sw_net_loop_base(&r->loop), 0) < 0 ? SW_EIO : 0;
    /* anything still running (a break from elsewhere) runs out */
    if (!rc && sw_net_loop_active(&r->loop))
        rc = sw_net_loop_run(&r->loop);
    event_free(r->tick);
    r->tick = NULL;
    return rc;
}

static int run_open_threads(struct run *r, struct sw_bench_point *pt, int T);

int sw__bench_run_open(struct run *r, struct sw_bench_point *pt)
{
    if (r->o->threads > 1)
        return run_open_threads(r, pt, r->o->threads);
    pt->threads = 1;
    r->pt = pt;
    r->shared_nonce = ++r->nonce;
    r->stride = 1;
    sw__bench_cost_begin(pt);
    int rc = open_loop(r, sw_now_ns());
    sw__bench_cost_end(pt);
    pt->nsamples = r->next;
    sw__bench_point_close(pt);
    return rc;
}

/* ---- a point on several threads (--threads N): one event loop each ---- */

/* One thread's share of a point: its own copy of the run and of the options, its point (its own
 * histograms; the samples: a share of the caller's (closed loop) or its own (open loop)). */
struct sub {
    pthread_t th;
    int rc;    /* what its loop returned */
    bool open; /* an open-loop share: the schedule from t0; else `streams` closed streams */
    int streams;
    uint64_t t0;
    struct event_base *base;
    struct run r;
    struct sw_bench_opts o; /* the caller's, without the progress bar */
    struct sw_bench_point pt;
};

static void *sub_main(void *arg)
{
    struct sub *u = arg;
    sw__bench_cost_begin(&u->pt);
    if (u->open) {
        u->rc = open_loop(&u->r, u->t0);
    } else {
        uint64_t now = sw_now_ns();
        for (int i = 0; i < u->streams; i++)
            sw__bench_start_one(&u->r, now);
        u->rc = sw_net_loop_run(&u->r.loop);
    }
    sw__bench_cost_end(&u->pt);
    return NULL;
}

/* Thread t's own copy of the run, its options (no progress bar: the caller draws it) and the
 * point (empty histograms; the samples are the caller's to place): a pool of its own, a nonce
 * range of its own. */
static void thread_copy(const struct run *r, const struct sw_bench_point *pt, int t, struct run *xr,
                        struct sw_bench_opts *xo, struct sw_bench_point *xpt)
{
    *xo = *r->o;
    xo->progress = NULL;
    *xr = *r;
    xr->o = xo;
    xr->free_list = NULL;
    xr->all = NULL;
    xr->nall = 0;
    xr->first_rc = 0;
    xr->truncated = false;
    xr->nonce = r->nonce + (uint64_t)(t + 1) * 1000000007ull;
    xr->next = xr->done = 0;
    *xpt = *pt;
    struct sw_bench_hist *h[] = {&xpt->itl_tok, &xpt->itl_chunk, &xpt->emit};
    for (size_t i = 0; i < SW_ARRAY_LEN(h); i++)
        sw_bench_hist_init(h[i]);
    xr->pt = xpt;
}

/* The point's C streams split over T threads, each its own loop and its own share of the
 * samples; the per-token histograms and the cost merged after. */

/* Fold one thread's share of a point into the point: its histograms, client CPU and wall time,
 * the first error any thread met, its finished requests (the progress). */
static void merge_thread(struct run *r, struct sw_bench_point *pt, const struct run *xr,
                         const struct sw_bench_point *xpt, double *cpu, double *wall)
{
    sw_bench_hist_merge(&pt->itl_tok, &xpt->itl_tok);
    sw_bench_hist_merge(&pt->itl_chunk, &xpt->itl_chunk);
    sw_bench_hist_merge(&pt->emit, &xpt->emit);
    *cpu += xpt->client_cpu_s;
    *wall = SW_MAX(*wall, xpt->client_wall_s);
    if (xr->first_rc && !r->first_rc) {
        r->first_rc = xr->first_rc;
        snprintf(r->first_err, sizeof(r->first_err), "%s", xr->first_err);
    }
    r->prog_done += xr->done; /* a thread draws no bar: its finished requests */
}

/* The first `started` shares' threads made (unless *rc already failed): how many were. */
static int spawn(struct sub *u, int started, int *rc)
{
    int made = 0;
    for (int t = 0; t < started && !*rc; t++) {
        if (pthread_create(&u[t].th, NULL, sub_main, &u[t])) {
            *rc = SW_ENOMEM;
            break;
        }
        made++;
    }
    return made;
}

/* After the threads: every share's loop, base and pool freed (its own samples too), the point's
 * figures set (none unless every thread ran: made == T) and summarized. Returns rc. */
static int end_point(struct run *r, struct sw_bench_point *pt, struct sub *u, int T, int started,
                     int made, size_t n, int rc)
{
    double cpu = 0, wall = 0;
    for (int t = 0; t < made; t++)
        merge_thread(r, pt, &u[t].r, &u[t].pt, &cpu, &wall);
    for (int t = 0; t < started; t++) {
        sw_net_loop_close(&u[t].r.loop);
        event_base_free(u[t].base);
        sw__bench_pool_free(&u[t].r);
        if (u[t].open)
            sw_free(u[t].pt.samples);
    }
    r->nonce += (uint64_t)(T + 1) * 1000000007ull;
    pt->nsamples = made == T ? n : 0;
    pt->client_cpu_s = cpu;
    pt->client_wall_s = wall;
    pt->threads = T;
    sw_free(u);
    sw__bench_point_close(pt);
    if (r->o->progress)
        sw_progress_update(&r->prog, r->prog_done);
    return rc;
}

/* The point's C streams split over T threads, each its own loop and its own share of the
 * samples; the per-token histograms and the cost merged after. */
static int run_threads(struct run *r, struct sw_bench_point *pt, int T)
{
    struct sub *u = sw_calloc((size_t)T, sizeof(*u));
    if (!u)
        return SW_ENOMEM;
    int rc = 0, started = 0;
    size_t off = 0, n = 0;
    for (int t = 0; t < T && !rc; t++) {
        struct sub *x = &u[t];
        thread_copy(r, pt, t, &x->r, &x->o, &x->pt);
        x->streams = pt->concurrency / T + (t < pt->concurrency % T);
        x->pt.samples = pt->samples + off;
        x->r.cap = (size_t)x->streams * (size_t)r->o->repeat;
        off += x->r.cap;
        struct sw_err e;
        rc = sw__bench_loop_open(&x->r, &x->base, &e);
        if (rc)
            break;
        started++;
    }
    int made = spawn(u, started, &rc);
    for (int t = 0; t < made; t++) {
        pthread_join(u[t].th, NULL);
        if (u[t].rc && !rc)
            rc = u[t].rc;
        /* the samples of thread t sit right after those of t - 1 (each ran all of its cap) */
        n += u[t].r.next;
    }
    return end_point(r, pt, u, T, started, made, n, rc);
}

static int by_intended(const void *a, const void *b)
{
    const struct sw_bench_sample *x = a, *y = b;
    return x->t_intended < y->t_intended ? -1 : x->t_intended > y->t_intended;
}

/* Thread t sends arrivals t, t + T, t + 2T... of the schedule a single loop would keep (same
 * seed, same intended instants), each on its own loop and connections (--connections split
 * over the threads), into its own samples. After: the samples gathered in intended order (the
 * per-request figures, the send lag among them, stay per intended send), the per-token
 * histograms and the cost merged. */
static int run_open_threads(struct run *r, struct sw_bench_point *pt, int T)
{
    struct sub *u = sw_calloc((size_t)T, sizeof(*u));
    if (!u)
        return SW_ENOMEM;
    int rc = 0, started = 0;
    size_t n = 0;
    r->shared_nonce = ++r->nonce;
    for (int t = 0; t < T && !rc; t++) {
        struct sub *x = &u[t];
        thread_copy(r, pt, t, &x->r, &x->o, &x->pt);
        x->open = true;
        if (r->o->connections > 0)
            x->o.connections = (r->o->connections + T - 1) / T;
        x->r.stride = T;
        x->r.phase = t;
        /* a thread's share of a random schedule is not known in advance: room for all of it */
        x->pt.samples = sw_calloc(r->cap ? r->cap : 1, sizeof(*x->pt.samples));
        if (!x->pt.samples) {
            rc = SW_ENOMEM;
            break;
        }
        x->r.cap = r->cap;
        struct sw_err e;
        rc = sw__bench_loop_open(&x->r, &x->base, &e);
        if (rc) {
            sw_free(x->pt.samples);
            x->pt.samples = NULL;
            break;
        }
        started++;
    }
    /* one t0 for every thread: a thread that starts late shows it as send lag */
    uint64_t t0 = sw_now_ns();
    for (int t = 0; t < started; t++)
        u[t].t0 = t0;
    int made = spawn(u, started, &rc);
    for (int t = 0; t < made; t++) {
        pthread_join(u[t].th, NULL);
        struct sub *x = &u[t];
        if (x->rc && !rc)
            rc = x->rc;
        for (size_t i = 0; i < x->r.next; i++) {
            if (n >= r->cap) {
                r->truncated = true;
                break;
            }
            pt->samples[n++] = x->pt.samples[i];
        }
        r->truncated = r->truncated || x->r.truncated;
    }
    qsort(pt->samples, n, sizeof(*pt->samples), by_intended);
    for (size_t i = 0; i < n; i++)
        pt->samples[i].index = i;
    return end_point(r, pt, u, T, started, made, n, rc);
}
