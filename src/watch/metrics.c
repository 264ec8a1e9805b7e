/*
 * watch/metrics: the live page `slipway watch --metrics ADDR` serves (Prometheus text exposition
 * 0.0.4 on GET /metrics): per endpoint its state (one series per state, 1 for the current),
 * the last proof's latency, systemd's NRestarts, the actions watch took, the newest bench decode
 * and prefill from the ledger, device memory and drift; per host whether it answered.
 *
 * What it deliberately does not do: keep history (Prometheus does), or serve anything but
 * /metrics (a plain blocking accept loop on its own thread: one scraper at a time is plenty).
 */
#include "watch_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One sample (core's sw_buf_prom_sample). */
static int sample(struct sw_buf *b, const char *name, const char *const *labels, double v)
{
    return sw_buf_prom_sample(b, name, labels, v);
}

static int family(struct sw_buf *b, const char *name, const char *type, const char *help)
{
    return sw_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *js(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

enum fam {
    F_STATE,
    F_LOOKS,
    F_PROOF,
    F_RESTARTS,
    F_ACTIONS,
    F_DECODE,
    F_PREFILL,
    F_USED,
    F_FREE,
    F_DRIFT,
    F_N
};
static const struct {
    const char *name, *type, *help;
} fams[F_N] = {
    [F_STATE] = {"slipway_watch_endpoint_state", "gauge",
                 "1 for the endpoint's current state as watch classified it, 0 for the others."},
    [F_LOOKS] = {"slipway_watch_looks_total", "counter",
                 "Looks watch finished at the endpoint (reached or not) since it started."},
    [F_PROOF] = {"slipway_watch_proof_latency_seconds", "gauge",
                 "Wall time of the last one-token generation that proved the endpoint."},
    [F_RESTARTS] = {"slipway_watch_unit_restarts", "gauge",
                    "systemd's NRestarts of the endpoint's unit at the last look."},
    [F_ACTIONS] = {"slipway_watch_actions", "gauge",
                   "Restarts, rollbacks and refusals watch recorded since it started."},
    [F_DECODE] = {"slipway_watch_bench_decode_tokens_per_second", "gauge",
                  "Decode speed of the endpoint's newest bench run in the ledger."},
    [F_PREFILL] = {"slipway_watch_bench_prefill_tokens_per_second", "gauge",
                   "Prefill speed of the endpoint's newest bench run in the ledger."},
    [F_USED] = {"slipway_watch_device_used_bytes", "gauge",
                "Device memory used as the host's vendor tool read it at the last look."},
    [F_FREE] = {"slipway_watch_device_free_bytes", "gauge",
                "Device memory free as the host's vendor tool read it at the last look."},
    [F_DRIFT] = {"slipway_watch_drift_lines", "gauge",
                 "Lines of the installed unit and environment file that differ from the render."},
};

static int fam_samples(struct sw_buf *b, enum fam fm, const json_t *x)
{
    const char *name = fams[fm].name, *ep = js(x, "endpoint"), *host = js(x, "host");
    const char *const l1[] = {"endpoint", ep, "host", host, NULL};
    bool looked = json_is_true(json_object_get(x, "looked"));
    bool reach = json_is_true(json_object_get(x, "reachable"));
    int rc = 0;
    switch (fm) {
    case F_STATE:
        for (int s = 1; s < SW_WATCH_N_STATES && !rc; s++) {
            const char *sn = sw_watch_state_name((enum sw_watch_state)s);
            const char *const l[] = {"endpoint", ep, "host", host, "state", sn, NULL};
            rc = sample(b, name, l, !strcmp(sn, js(x, "state")));
        }
        return rc;
    case F_LOOKS:
        return sample(b, name, l1, (double)json_integer_value(json_object_get(x, "looks")));
    case F_PROOF:
        return looked && reach
                   ? sample(b, name, l1, json_number_value(json_object_get(x, "proof_ms")) / 1e3)
                   : 0;
    case F_RESTARTS:
        return looked && reach
                   ? sample(b, name, l1, (double)json_integer_value(json_object_get(x, "restarts")))
                   : 0;
    case F_ACTIONS:
        return sample(b, name, l1, (double)json_integer_value(json_object_get(x, "actions")));
    case F_DECODE:
    case F_PREFILL: {
        const json_t *v = json_object_get(x, fm == F_DECODE ? "decode_tok_s" : "prefill_tok_s");
        return json_is_number(v) ? sample(b, name, l1, json_number_value(v)) : 0;
    }
    case F_USED:
    case F_FREE: {
        size_t i;
        const json_t *r;
        json_array_foreach(json_object_get(x, "devices"), i, r)
        {
            const json_t *v = json_object_get(r, fm == F_USED ? "used_bytes" : "free_bytes");
            char idx[32];
            snprintf(idx, sizeof(idx), "%lld",
                     (long long)json_integer_value(json_object_get(r, "index")));
            const char *const l[] = {"endpoint", ep, "host", host, "device", idx, NULL};
            if (json_is_integer(v) && !rc)
                rc = sample(b, name, l, (double)json_integer_value(v));
        }
        return rc;
    }
    case F_DRIFT:
        return looked && reach
                   ? sample(b, name, l1, (double)json_integer_value(json_object_get(x, "drift")))
                   : 0;
    default:
        return 0;
    }
}

int sw_watch_metrics_text(const json_t *snap, struct sw_buf *out, struct sw_err *e)
{
    int rc = 0;
    size_t i;
    const json_t *x;
    for (int fm = 0; fm < F_N && !rc; fm++) {
        rc = family(out, fams[fm].name, fams[fm].type, fams[fm].help);
        json_array_foreach(snap, i, x)
        {
            if (rc)
                break;
            rc = fam_samples(out, (enum fam)fm, x);
        }
    }
    /* per host: reachable when every looked endpoint of it was reached */
    if (!rc)
        rc = family(out, "slipway_watch_host_reachable", "gauge",
                    "1 when the host answered watch's last look, 0 when it did not.");
    json_t *seen = json_object();
    json_array_foreach(snap, i, x)
    {
        if (rc || !seen)
            break;
        const char *h = js(x, "host");
        if (!json_is_true(json_object_get(x, "looked")))
            continue;
        json_t *cur = json_object_get(seen, h);
        bool r = json_is_true(json_object_get(x, "reachable"));
        if (!cur || json_is_true(cur))
            json_object_set_new(seen, h, json_boolean(r));
    }
    const char *h;
    json_t *v;
    json_object_foreach(seen, h, v)
    {
        const char *const l[] = {"host", h, NULL};
        if (!rc)
            rc = sample(out, "slipway_watch_host_reachable", l, json_is_true(v));
    }
    json_decref(seen);
    if (rc)
        return sw_err_set(e, rc, "metrics page larger than its buffer");
    return 0;
}

struct mserver {
    struct sw__watch *w;
    int fd;
};

static void serve_one(struct sw__watch *w, int c)
{
    char req[2048];
    ssize_t n = recv(c, req, sizeof(req) - 1, 0);
    if (n <= 0)
        return;
    req[n] = '\0';
    struct sw_buf b;
    sw_buf_init(&b, 8u << 20);
    const char *status = "200 OK";
    if (!strncmp(req, "GET /metrics", 12) || !strncmp(req, "GET / ", 6)) {
        json_t *snap = sw__watch_snapshot(w);
        if (sw_watch_metrics_text(snap, &b, NULL))
            status = "500 Internal Server Error";
        json_decref(snap);
    } else {
        status = "404 Not Found";
        sw_buf_puts(&b, "only /metrics here\n");
    }
    char head[256];
    int hl = snprintf(head, sizeof(head),
                      "HTTP/1.1 %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      status, b.len);
    send(c, head, (size_t)hl, MSG_NOSIGNAL);
    size_t off = 0;
    while (off < b.len) {
        ssize_t s = send(c, b.data + off, b.len - off, MSG_NOSIGNAL);
        if (s <= 0)
            break;
        off += (size_t)s;
    }
    sw_buf_free(&b);
}

static void *metrics_main(void *arg)
{
    struct sw__watch *w = arg;
    while (!sw__watch_stopped(w)) {
        struct pollfd p = {.fd = w->metrics_fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        int c = accept4(w->metrics_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        struct timeval tv = {2, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        serve_one(w, c);
        close(c);
    }
    return NULL;
}

int sw__watch_metrics_start(struct sw__watch *w, const char *addr, pthread_t *th, struct sw_err *e)
{
    char host[256], port[16];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host) ||
        strlen(colon + 1) >= sizeof(port) || !colon[1])
        return sw_err_set(e, SW_EINVAL, "--metrics %s: expected HOST:PORT (127.0.0.1:9464)", addr);
    snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
    snprintf(port, sizeof(port), "%s", colon + 1);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(host, port, &hints, &ai);
    if (g)
        return sw_err_set(e, SW_EINVAL, "--metrics %s: %s", addr, gai_strerror(g));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16)) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return sw_err_set(e, SW_EBUSY, "--metrics %s: %s", addr, strerror(err));
    }
    freeaddrinfo(ai);
    w->metrics_fd = fd;
    if (pthread_create(th, NULL, metrics_main, w)) {
        close(fd);
        w->metrics_fd = -1;
        return sw_err_set(e, SW_EIO, "--metrics: no thread");
    }
    return 0;
}
