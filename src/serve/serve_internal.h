/*
 * serve internals: the server, its endpoints, models (served names: one or more replicas) and
 * requests, shared by serve.c (set-up, starts and stops, admission), front.c (the routes, the
 * queue, keys, /metrics) and proxy.c (the upstream request).
 *
 * What it does not do: anything public (slipway/serve.h).
 */
#ifndef SW_SERVE_INTERNAL_H
#define SW_SERVE_INTERNAL_H

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/service.h>
#include <slipway/serve.h>

#include <event2/event.h>
#include <event2/http.h>
#include <pthread.h>
#include <sys/queue.h>

#define SW__SERVE_MAX_EP    64
#define SW__SERVE_MAX_REPL  16
#define SW__SERVE_BODY_MAX  (64u << 20)
#define SW__SERVE_N_BUCKETS 14
#define SW__SERVE_N_CODES   16
#define SW__SERVE_POOL      32 /* idle engine connections kept per endpoint */

struct sw__serve;
struct sw__serve_loop;

struct sw__serve_hist {
    uint64_t bucket[SW__SERVE_N_BUCKETS]; /* cumulative at print; here per bucket */
    uint64_t count;
    double sum;
};
extern const double sw__serve_bounds[SW__SERVE_N_BUCKETS - 1]; /* seconds; the last is +Inf */
void sw__serve_hist_add(struct sw__serve_hist *h, double seconds);

struct sw__serve_ep {
    const struct sw_fleet_endpoint *ep;
    int model; /* index into sv->models */
    struct sw_serve_claim claim;
    bool claim_ok;
    char claim_why[512];
    enum sw_serve_state state;
    int inflight;
    bool pinned, by_priority, local;
    bool routed; /* reached through its host's ssh forward (client.route.unix_socket) */
    bool unit;   /* a system unit on an ssh host: started and stopped by systemctl (serve.c) */
    int look;    /* its deploy lock looked at before an eviction for it (units.c) */
    unsigned priority;
    uint64_t idle_ttl_ms, last_ns;
    bool ours;       /* serve started it (it stops it at exit) */
    bool can_stop;   /* a pid file names it */
    bool want_start; /* victims are stopping for it */
    bool retired;    /* an instance a deploy replaced: draining or stopped, in no model's list,
                      * not in /metrics (bluegreen.c); it holds its memory until it stops */
    struct sw_service_client client;
    bool client_open;
    char host[256];
    unsigned port;
    char pid_path[4096];
    uint64_t starts, evictions, stops_idle, failures;
    uint64_t refreshes;         /* its forward opened again (proxy.c) */
    uint64_t refresh_failed_ns; /* when asking it again last failed; 0 */
    int pool[SW__SERVE_POOL];   /* idle keep-alive connections to it (proxy.c) */
    int n_pool;
};

enum { SW__SERVE_LOOK_NONE = 0, SW__SERVE_LOOK_RUNNING, SW__SERVE_LOOK_FREE };

struct sw__serve_px;
TAILQ_HEAD(sw__serve_pxq, sw__serve_px);

struct sw__serve_model {
    const char *name;
    int eps[SW__SERVE_MAX_REPL];
    int n_eps;
    struct sw__serve_pxq queue;
    int n_queued;
    char last_why[1024]; /* the last admission line that kept it waiting */
    bool never;          /* no replica fits even alone */
    struct sw__serve_hist ttft, queue_wait;
    uint64_t tokens;
    int codes[SW__SERVE_N_CODES];
    uint64_t code_n[SW__SERVE_N_CODES];
    uint64_t cancelled, retried, midstream;
};

/* One client request. */
struct sw__serve_px {
    struct sw__serve *sv;
    int model;
    struct evhttp_request *req;
    struct evhttp_connection *cconn;
    char path[64];
    char *body;
    size_t body_len;
    char client[64];
    int ep;
    int ufd;                /* the engine's connection (a plain socket: proxy.c), or -1 */
    struct event *uev;      /* its one event: writable while the request goes, then readable */
    struct evbuffer *uhead; /* the engine's head while it arrives */
    char *ureq;             /* the request's head to the engine */
    size_t ureq_len, usent; /* its length; bytes of head + body sent */
    struct evbuffer_cb_entry *drain; /* on the client's output while it is held back */
    bool paused;       /* the engine is not read: the client's output is above the mark */
    bool pooled, keep; /* the connection came from the pool; it may go back to it */
    int ustate;        /* 0 head, 1 body */
    bool raw;          /* the body goes as the engine framed it (chunked or sized) */
    bool chunked;      /* the engine's body is chunked: ck tracks its framing */
    int64_t remain;    /* sized body: bytes left; chunked: of the current chunk */
    int ck;            /* chunk framing state (proxy.c) */
    bool ck_digits;    /* a size line has started */
    int ck_line;       /* trailer: bytes on the current line */
    bool tried[SW__SERVE_MAX_EP];
    bool headers_sent, stream, retry, queued;
    int retry_code;
    uint64_t t_arrive_ns, t_sent_ns;
    bool first;
    struct event *deadline;
    TAILQ_ENTRY(sw__serve_px) link;
    /* the request loop that owns the client's connection (its events, its replies) */
    struct sw__serve_loop *lp;
    /* handed to its loop by another thread (serve.c): sent to `ep` (reserved: counted in its
     * in-flight), or answered `hand_code` then freed */
    bool handed;
    int hand_code, hand_retry;
    const char *hand_type;
    char *hand_msg;
    TAILQ_ENTRY(sw__serve_px) hlink;
    struct evbuffer *cout; /* the client's output buffer and socket, from the head on (proxy.c) */
    int cfd;
};

struct sw__serve_job {
    struct sw__serve *sv;
    int ep;
    bool start;
    int rc;
    char msg[1200];
    char pid_path[4096];
    double secs;
    /* a start beside the running instance (bluegreen.c): its name for the pid file and log,
     * its port, and what the loop does once it ended (instead of job_done's; then freed) */
    char as[160];
    unsigned port;
    const char *fleet_text;       /* the fleet text of the shape it boots (NULL: the fleet file) */
    const struct sw_fleet *fleet; /* a unit's start or stop: the fleet its endpoint is of */
    void (*done)(struct sw__serve *sv, struct sw__serve_job *j);
    /* a job of its own instead of a start or a stop (stopstart.c: the gated rollout of an
     * endpoint on another host), run in the thread with arg */
    void (*run)(struct sw__serve_job *j);
    void *arg;
    char fail_class[64]; /* a failed start: its boot failure's class ("oom"), else "" */
    pthread_t th;
    struct sw__serve_job *next; /* the jobs not yet joined */
};

/* A JSON answer to a request of another loop, sent by that loop (serve.c). */
struct sw__serve_reply {
    struct evhttp_request *req;
    int code, retry_after;
    char *body;
    struct sw__serve_reply *next;
};

/*
 * One request loop (`--loops N`, default the online CPUs): its own thread, event_base and evhttp
 * on the shared listening socket. What it does alone: read requests, relay the engines' bytes
 * (per-chunk work takes no lock), count tokens in its own counters. Everything shared (models,
 * queues, endpoints' states and in-flight counts, admission, starts and stops, metrics, deploys)
 * is touched under sv->mu; an operation on a request of another loop is handed to that loop
 * (handq, replies; its `wake` event), never done across threads.
 */
struct sw__serve_loop {
    struct sw__serve *sv;
    int idx;
    struct event_base *base;
    struct evhttp *http;
    struct event *wake;
    pthread_t th;
    bool th_started;
    struct sw__serve_pxq handq;                 /* under sv->mu */
    struct sw__serve_reply *replies;            /* under sv->mu */
    int pool[SW__SERVE_MAX_EP][SW__SERVE_POOL]; /* idle engine connections, per endpoint; mu */
    int n_pool[SW__SERVE_MAX_EP];
    uint64_t tokens[SW__SERVE_MAX_EP]; /* per model; written by this loop, relaxed atomics */
    uint64_t requests;                 /* requests received on this loop; relaxed atomics */
};

struct sw__serve_key {
    char client[64];
    char *key;
};

struct sw__serve {
    const struct sw_serve_opts *o;
    struct sw_fleet *fleet;
    const char *fleet_path;
    struct event_base *base;
    struct evhttp *http;
    struct event *tick, *jobs_ev;
    int jobs_pipe[2];
    struct sw__serve_job *jobs;
    int n_jobs_running;
    struct sw__serve_ep eps[SW__SERVE_MAX_EP];
    int n_eps;
    struct sw__serve_model models[SW__SERVE_MAX_EP];
    int n_models;
    struct sw__serve_key *keys;
    int n_keys;
    FILE *log;
    unsigned queue_max;
    uint64_t max_wait_ms;
    uint64_t unauthorized;
    unsigned ticks;
    struct sw__serve_bg *bg; /* deploys through serve (bluegreen.c); NULL before the first */
    char *fleet_text;        /* the fleet file as serve read it: its shapes boot from it */
    /* the request loops; `base` above is the state loop's (ticks, jobs, deploys' timers), run
     * by the calling thread under mu (serve.c) */
    struct sw__serve_loop *loops;
    int n_loops;
    pthread_mutex_t mu;
    /* the ledger deploys through serve record their attempts in (record.c), used by the state
     * loop under mu; a gated rollout opens its own connection to ledger_path in its thread */
    struct sw_ledger ledger;
    bool have_ledger;
    char ledger_path[4096];
    char ledger_why[700]; /* why there is none ("" with one, or with --no-ledger) */
};

void sw__serve_logf(struct sw__serve *sv, const char *fmt, ...) SW_PRINTF(2, 3);

/* serve.c: the shared state's lock (re-entrant per thread): every callback of a request loop
 * that touches shared state enters it; the state loop holds it while it runs */
void sw__serve_enter(struct sw__serve *sv);
void sw__serve_leave(struct sw__serve *sv);
/* the request loop of the calling thread, or NULL (the state loop, a worker) */
struct sw__serve_loop *sw__serve_self(void);
/* hand px (of another loop) to its loop: sent to endpoint i (reserved now) when i >= 0, else
 * answered code/type/msg and freed; under mu */
void sw__serve_hand(struct sw__serve_px *px, int i, int code, const char *type, const char *msg,
                    int retry_after);
/* px leaves its loop's hand-off list (it is freed): its reservation is released */
void sw__serve_unhand(struct sw__serve_px *px);
/* a JSON answer to req sent by req's own loop (now when that is the calling thread) */
bool sw__serve_reply_elsewhere(struct evhttp_request *req, int code, const char *body,
                               int retry_after);
/* a JSON answer to req, a request of loop lp, sent by lp (now when lp is the calling thread's
 * or NULL): a thread other than lp's never touches req or its connection, which lp's thread may
 * be failing meanwhile (bluegreen.c's deploys end on the state loop) */
void sw__serve_reply_on(struct sw__serve_loop *lp, struct evhttp_request *req, int code,
                        const char *body, int retry_after);

/* front.c */
void sw__serve_on_request(struct evhttp_request *req, void *arg);
void sw__serve_reply_error(struct evhttp_request *req, int code, const char *type, const char *msg,
                           int retry_after);
void sw__serve_count(struct sw__serve_model *m, int code);
/* a JSON text answer, with Retry-After when retry_after > 0 (by req's loop) */
void sw__serve_reply_text(struct evhttp_request *req, int code, const char *text, int retry_after);
/* a JSON answer (j's reference is taken) */
void sw__serve_reply_json(struct evhttp_request *req, int code, json_t *j);
/* a request is done (replied, or its client went away): unhook and free it */
void sw__serve_px_free(struct sw__serve_px *px);

/* serve.c: the admission driver */
/* try to get every model with queued requests served: dispatch, start, evict */
void sw__serve_kick(struct sw__serve *sv);
/* the running replica of m with the fewest outstanding requests not yet tried by px; -1 none */
int sw__serve_pick(struct sw__serve *sv, const struct sw__serve_model *m,
                   const struct sw__serve_px *px);

/* serve.c: every endpoint instance as the admission law sees it (queued requests count as in
 * flight on a running one); the count */
int sw__serve_tenants(struct sw__serve *sv, struct sw_serve_tenant *ts);
/* answer every request queued for m with code (a start failed, or nothing can fit) */
void sw__serve_fail_queue(struct sw__serve *sv, struct sw__serve_model *m, int code,
                          const char *type, const char *msg);

/* serve.c: a start (`up`) or a stop (`down`) of endpoint i in a worker thread */
void sw__serve_start_stop(struct sw__serve *sv, int i, bool start);
/* a job j (ep, start, as, port and done set) in a worker thread; 0, or -1 when no thread */
int sw__serve_job_spawn(struct sw__serve *sv, struct sw__serve_job *j);

/* bluegreen.c: a deploy through serve (POST /admin/deploy), docs/serve.md */
struct sw__serve_bg;
void sw__serve_on_deploy(struct sw__serve *sv, struct evhttp_request *req, const char *client);
/* the deploy's next step, when what it waits for happened (called first by sw__serve_kick) */
void sw__serve_bg_kick(struct sw__serve *sv);
/* does a stop-start deploy hold model mi's queue (its requests wait past --max-wait)? */
bool sw__serve_bg_holds(struct sw__serve *sv, int mi);
/* a queued request of model mi was sent after waiting `secs` */
void sw__serve_bg_waited(struct sw__serve *sv, int mi, double secs);
/* at exit: a job of the deploy's that ended (its new instance stopped unless --keep) */
void sw__serve_bg_orphan(struct sw__serve *sv, struct sw__serve_job *j);
void sw__serve_bg_free(struct sw__serve *sv);
/* read the fleet file: its text (*text, sw_free) and the fleet loaded from that text */
int sw__serve_fleet_read(const char *path, struct sw_fleet **out, char **text, struct sw_err *e);
/* the fleet text an endpoint's shape was read from (serve's start, or a deploy's reload): its
 * starts boot that shape, not what the file says since */
const char *sw__serve_bg_text(struct sw__serve *sv, const struct sw_fleet_endpoint *ep);
/* the fleet an endpoint's shape was read from (serve's start, or a deploy's reload); NULL: none */
const struct sw_fleet *sw__serve_bg_fleet(struct sw__serve *sv, const struct sw_fleet_endpoint *ep);

/* record.c: serve's ledger opened (a named one that cannot be: an error; the default one: said
 * in the log, sv->ledger_why) and closed */
int sw__serve_ledger_open(struct sw__serve *sv, struct sw_err *e);
void sw__serve_ledger_close(struct sw__serve *sv);

/* admit.c: per device, the larger of into's and c's claims (a stop-start deploy holds the larger
 * of its old and new shapes until its boot ends) */
void sw__serve_claim_max(struct sw_serve_claim *into, const struct sw_serve_claim *c);

/* units.c: endpoints on other hosts */
/* does x answer (its health through its route; else a connect to its address, 500 ms)? */
bool sw__serve_answers(struct sw__serve_ep *x);
/* a unit's start or stop (j->start) in a worker thread: j->rc, msg, fail_class */
void sw__serve_unit_job(struct sw__serve_job *j);
/* Before anything is evicted for endpoint i (a unit its model wants started; the law's words in
 * the model's last_why): true while its deploy lock is looked at in a worker thread (the
 * requests wait; a held lock answers them 503 naming the holder, nothing evicted); false when
 * the eviction may go (the lock was free, or i is not a unit). */
bool sw__serve_unit_look(struct sw__serve *sv, int i);

/* proxy.c */
/* send px to endpoint i; on failure before the first byte px is retried or answered */
void sw__serve_forward(struct sw__serve_px *px, int i);
/* the client went away: cancel the upstream request */
void sw__serve_cancel(struct sw__serve_px *px);
/* close the idle engine connections of every endpoint (at exit, or when one stops) */
void sw__serve_pool_close(struct sw__serve *sv, int ep);
/* px to endpoint i, its in-flight count already taken (a hand-off from another thread) */
void sw__serve_forward_reserved(struct sw__serve_px *px, int i);
/* px's reservation on its endpoint goes (in flight -1, last use now) */
void sw__serve_ep_release(struct sw__serve_px *px);

#endif
