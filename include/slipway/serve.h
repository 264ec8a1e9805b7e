/*
 * serve: one OpenAI-compatible front door for a fleet's endpoints (`slipway serve`,
 * docs/serve.md). libevent, one request loop per core: /v1/models lists every endpoint's
 * served name with its state;
 * /v1/chat/completions, /v1/completions and /v1/embeddings are routed by `model` and passed
 * through byte for byte (a client that goes away cancels its upstream request); a request for a
 * stopped endpoint starts it when the plan's memory per device fits beside what runs there, else
 * evicts by policy (never a pinned endpoint, never one with requests in flight), each decision
 * logged with its figures; a queue per model with a bound and a maximum wait; replicas balanced by
 * fewest outstanding, retried before the first byte; API keys per client; /metrics.
 *
 * The admission law (sw_serve_admit) is a pure function over claims per device, so it is tested
 * without a network; the claims come from the plan view (sw_serve_claim).
 *
 * What it deliberately does not do: plan (plan), boot (deploy: `up` runs in a worker thread;
 * rollout: a system unit on an ssh host is started by systemctl there, sw_rollout_unit_start),
 * parse SSE (the bytes are relayed, only counted), or watch the fleet between requests (watch).
 */
#ifndef SLIPWAY_SERVE_H
#define SLIPWAY_SERVE_H

#include <slipway/core.h>
#include <slipway/fleet.h>

#include <signal.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SW_SERVE_MAX_DEV 8

/* What an endpoint claims on each of its devices while it runs, by its plan. */
struct sw_serve_claim {
    int n;
    const struct sw_fleet_device *dev[SW_SERVE_MAX_DEV];
    uint64_t bytes[SW_SERVE_MAX_DEV];    /* the claim on dev[i] */
    uint64_t capacity[SW_SERVE_MAX_DEV]; /* dev[i]'s usable memory (memory_usable, else total) */
    char how[256];                       /* where the figure comes from, for the log */
};
/*
 * ep's claim: llama.cpp the law's weights, KV, state, compute, draft and projector per device (the
 * fleet's measured non-KV fact in place of weights + compute when it has one); vLLM the fork
 * profile's parts when it has one, else gpu_memory_utilization x capacity (what vLLM takes);
 * SGLang mem_fraction_static x capacity when set, else the law's pools. SW_EINVAL (why in e)
 * when the plan cannot be made or a device has no declared memory.
 */
int sw_serve_claim(const struct sw_fleet_endpoint *ep, struct sw_serve_claim *c, struct sw_err *e);

/* An endpoint as the admission law sees it. */
enum sw_serve_state {
    SW_SERVE_STOPPED,
    SW_SERVE_STARTING,
    SW_SERVE_RUNNING,
    SW_SERVE_STOPPING,
};
const char *sw_serve_state_name(enum sw_serve_state s);

struct sw_serve_tenant {
    const char *name;
    const struct sw_serve_claim *claim;
    enum sw_serve_state state;
    int inflight;      /* requests in flight (and queued for it) */
    bool pinned;       /* never evicted */
    bool by_priority;  /* policy priority: ranked by priority, then by last use */
    unsigned priority; /* 0..1000 */
    uint64_t last_ns;  /* the last request's end (or start), CLOCK_MONOTONIC */
    bool can_stop;     /* serve can stop it (it started it, or `up` did: a pid file) */
};

enum sw_serve_verdict {
    SW_SERVE_FITS,  /* start it now */
    SW_SERVE_EVICT, /* stop victims[0..n_victims) first, then start */
    SW_SERVE_WAIT,  /* what stands in the way is busy (in flight, starting, stopping): wait */
    SW_SERVE_NEVER, /* it does not fit even alone: dev, need and capacity say why */
};

struct sw_serve_decision {
    enum sw_serve_verdict verdict;
    int victims[16]; /* indexes into the tenants */
    int n_victims;
    int dev;                       /* NEVER / WAIT: the claim's device that does not fit */
    uint64_t need, used, capacity; /* on that device: the claim, what others hold, capacity */
    char text[1024];               /* the decision with its figures, one line */
};
/*
 * May tenants[t] start? Per device of its claim: what the others that run, start or stop hold
 * (used) + its claim against the device's capacity. When it does not fit, victims are chosen
 * among RUNNING tenants that are not pinned, have nothing in flight and can be stopped, sharing a
 * device that does not fit: those under policy priority by their priority (lowest first), then
 * by last use (oldest first), until every device fits. Pure: reads only its arguments.
 */
void sw_serve_admit(const struct sw_serve_tenant *tenants, int n, int t,
                    struct sw_serve_decision *d);

/* `slipway serve`. */
struct sw_serve_opts {
    const char *fleet;            /* FLEET.yaml (NULL: ./fleet.yaml) */
    const char *const *endpoints; /* the endpoints served; NULL: every enabled one */
    size_t n_endpoints;
    const char *listen;          /* HOST:PORT (default 127.0.0.1:8090; port 0: any) */
    const char *keys_file;       /* CLIENT=KEY lines (NULL: no key asked) */
    unsigned queue_max;          /* per model (0: 64) */
    uint64_t max_wait_ms;        /* in the queue (0: 120 s) */
    unsigned boot_timeout_s;     /* a start (0: 900) */
    unsigned grace_ms;           /* a stop's SIGTERM -> SIGKILL (0: 10000) */
    bool keep;                   /* leave what serve started running at exit */
    const char *ready_file;      /* gets "PORT\n" once it listens (NULL: none) */
    FILE *log;                   /* decisions and requests (NULL: stderr) */
    volatile sig_atomic_t *stop; /* set by a signal handler: stop serving */
    void (*on_listen)(void *ctx, const char *url);
    void *ctx;
    unsigned loops; /* request loops, each its own thread (0: the online CPUs; at most 64) */
    /* the ledger every deploy through serve records its attempt in (docs/serve.md): this path
     * (NULL: $SLIPWAY_LEDGER, else beside the fleet: sw_ledger_open_for), created when missing;
     * no_ledger: none. A named ledger that cannot be opened fails the start; the default one is
     * said in the log and in every deploy's answer. */
    const char *ledger;
    bool no_ledger;
};
/* Serve until *stop. Errors before serving: the fleet's, an endpoint not in it, a keys file, the
 * listen address. */
int sw_serve_run(const struct sw_serve_opts *o, struct sw_err *e);

/*
 * A deploy through a running serve (`slipway deploy ENDPOINT --via-serve URL`): POST
 * URL/admin/deploy {"endpoint", "drain_s"?} with an admin client's key, and wait for the outcome
 * (serve answers when the deploy ends: blue/green beside the old when the plan says both shapes
 * fit, else stop-start with the requests queued; docs/serve.md). *out (json_decref) gets serve's
 * answer: {endpoint, path, ok, decision, old, new, seconds, requests {answered, failed},
 * queued {requests, wait_p50_s, wait_p99_s, wait_max_s}, switched_after_s?, drained_s?,
 * drained_in_flight?, error?}, or its OpenAI-style error object. 0 when the deploy ended ok;
 * SW_EGATE when serve refused it or it failed (the message says why); the transport's error
 * when serve could not be asked.
 */
struct sw_serve_deploy_req {
    const char *url;      /* serve's base URL, http://HOST:PORT */
    const char *endpoint; /* the fleet's endpoint, as serve serves it */
    const char *key;      /* an admin client's key (a --keys name beginning with "admin") */
    unsigned drain_s;     /* the old instance's drain bound (0: serve's default, 300 s) */
    unsigned timeout_s;   /* the whole wait (0: 3600 s) */
    /* an endpoint on another host is deployed by serve through the gated rollout: its battery */
    const char *probe_only; /* comma-separated checks (NULL: all) */
    bool no_worst_case;     /* leave the worst_case check out */
};
int sw_serve_deploy(const struct sw_serve_deploy_req *q, json_t **out, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
