/*
 * serve front: the front door's routes: /v1/models (every served name with its state), the
 * generation routes (/v1/chat/completions, /v1/completions, /v1/embeddings) routed by `model`
 * through the queue of that model (bounded; a maximum wait; 429/503 with Retry-After), the
 * clients' API keys (the client's name is logged, never its key), /metrics in Prometheus' text
 * format, and OpenAI-style error bodies.
 *
 * What it does not do: talk to an engine (proxy.c) or decide admission (serve.c, admit.c).
 */
#include "serve_internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

const double sw__serve_bounds[SW__SERVE_N_BUCKETS - 1] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30, 120};

void sw__serve_hist_add(struct sw__serve_hist *h, double s)
{
    int i = 0;
    while (i < SW__SERVE_N_BUCKETS - 1 && s > sw__serve_bounds[i])
        i++;
    h->bucket[i]++;
    h->count++;
    h->sum += s;
}

void sw__serve_count(struct sw__serve_model *m, int code)
{
    for (int i = 0; i < SW__SERVE_N_CODES; i++) {
        if (m->codes[i] == code) {
            m->code_n[i]++;
            return;
        }
        if (!m->codes[i]) {
            m->codes[i] = code;
            m->code_n[i] = 1;
            return;
        }
    }
}

void sw__serve_reply_text(struct evhttp_request *req, int code, const char *text, int retry_after)
{
    if (sw__serve_reply_elsewhere(req, code, text, retry_after)) /* another loop's request */
        return;
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "application/json");
    if (retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", retry_after);
        evhttp_add_header(h, "Retry-After", ra);
    }
    struct evbuffer *b = evbuffer_new();
    if (b && text)
        evbuffer_add(b, text, strlen(text));
    const char *reason = code == 200   ? "OK"
                         : code == 429 ? "Too Many Requests"
                         : code == 507 ? "Insufficient Storage"
                         : code == 503 ? "Service Unavailable"
                         : code == 404 ? "Not Found"
                         : code == 401 ? "Unauthorized"
                         : code == 400 ? "Bad Request"
                         : code == 502 ? "Bad Gateway"
                                       : "Error";
    evhttp_send_reply(req, code, reason, b);
    if (b)
        evbuffer_free(b);
}

void sw__serve_reply_error(struct evhttp_request *req, int code, const char *type, const char *msg,
                           int retry_after)
{
    json_t *j = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", msg, "type", type, "code", code);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    sw__serve_reply_text(req, code, s, retry_after);
    free(s);
}

static void on_client_gone(struct evhttp_connection *c, void *arg)
{
    struct sw__serve_px *px = arg;
    (void)c;
    struct sw__serve *sv = px->sv;
    sw__serve_enter(sv);
    sw__serve_cancel(px);
    /* libevent detaches a request whose reply is not done when its connection fails and leaves
     * it to its user (as the sim's on_client_gone says); one still attached goes with it */
    if (px->req && !evhttp_request_get_connection(px->req))
        evhttp_request_free(px->req);
    px->req = NULL;
    px->cconn = NULL;
    sw__serve_px_free(px);
    sw__serve_kick(sv);
    sw__serve_leave(sv);
}

void sw__serve_px_free(struct sw__serve_px *px)
{
    if (!px)
        return;
    struct sw__serve *sv = px->sv;
    if (px->queued) {
        struct sw__serve_model *m = &sv->models[px->model];
        TAILQ_REMOVE(&m->queue, px, link);
        m->n_queued--;
        px->queued = false;
    }
    sw__serve_unhand(px);
    sw_free(px->hand_msg);
    if (px->deadline)
        event_free(px->deadline);
    if (px->cconn)
        evhttp_connection_set_closecb(px->cconn, NULL, NULL);
    sw_free(px->body);
    sw_free(px);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct sw__serve_px *px = arg;
    (void)fd;
    (void)what;
    struct sw__serve *sv = px->sv;
    struct sw__serve_model *m = &sv->models[px->model];
    sw__serve_enter(sv);
    if (!px->queued) { /* dispatched meanwhile by another loop: its hand-off sends it */
        sw__serve_leave(sv);
        return;
    }
    if (sw__serve_bg_holds(sv, px->model)) { /* a stop-start deploy: it waits for the boot */
        struct timeval tv = {1, 0};
        event_add(px->deadline, &tv);
        sw__serve_leave(sv);
        return;
    }
    char msg[1400];
    snprintf(msg, sizeof(msg), "model %s was not served within %.1f s: %s", m->name,
             (double)sv->max_wait_ms / 1000.0, m->last_why[0] ? m->last_why : "it is starting");
    sw__serve_logf(sv, "%s: a request waited %.1f s: 503", m->name,
                   (double)sv->max_wait_ms / 1000.0);
    sw__serve_hist_add(&m->queue_wait, (double)(sw_now_ns() - px->t_arrive_ns) / 1e9);
    sw__serve_count(m, 503);
    sw__serve_reply_error(px->req, 503, "unavailable_error", msg, 5);
    sw__serve_px_free(px);
    sw__serve_leave(sv);
}

/* The client's name for the log, or NULL: refused (401 sent). */
static const char *authorize(struct sw__serve *sv, struct evhttp_request *req)
{
    if (!sv->n_keys)
        return "-";
    const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (a && !strncasecmp(a, "Bearer ", 7)) {
        a += 7;
        size_t n = strlen(a);
        for (int i = 0; i < sv->n_keys; i++) {
            size_t k = strlen(sv->keys[i].key);
            unsigned char diff = (unsigned char)(n != k);
            for (size_t j = 0; j < k; j++) /* every byte compared, whatever differs */
                diff |= (unsigned char)(sv->keys[i].key[j] ^ (j < n ? a[j] : 0));
            if (!diff)
                return sv->keys[i].client;
        }
    }
    __atomic_add_fetch(&sv->unauthorized, 1, __ATOMIC_RELAXED);
    sw__serve_reply_error(req, 401, "invalid_request_error",
                          "Incorrect API key provided (Authorization: Bearer KEY)", 0);
    return NULL;
}

static int find_model(struct sw__serve *sv, const char *name)
{
    for (int i = 0; i < sv->n_models; i++)
        if (!strcmp(sv->models[i].name, name))
            return i;
    for (int i = 0; i < sv->n_eps; i++) /* an endpoint's own name stands for its model */
        if (!strcmp(sv->eps[i].ep->name, name))
            return sv->eps[i].model;
    return -1;
}

static const char *model_state(struct sw__serve *sv, const struct sw__serve_model *m)
{
    bool starting = false;
    for (int k = 0; k < m->n_eps; k++) {
        enum sw_serve_state s = sv->eps[m->eps[k]].state;
        if (s == SW_SERVE_RUNNING)
            return "running";
        starting = starting || s == SW_SERVE_STARTING;
    }
    return starting ? "starting" : "stopped";
}

static void on_models(struct sw__serve *sv, struct evhttp_request *req)
{
    json_t *data = json_array();
    for (int i = 0; i < sv->n_models; i++) {
        const struct sw__serve_model *m = &sv->models[i];
        json_t *eps = json_array();
        for (int k = 0; k < m->n_eps; k++) {
            const struct sw__serve_ep *x = &sv->eps[m->eps[k]];
            json_t *c = json_array();
            for (int d = 0; x->claim_ok && d < x->claim.n; d++)
                json_array_append_new(c, json_pack("{s:s,s:I,s:I}", "device", x->claim.dev[d]->name,
                                                   "bytes", (json_int_t)x->claim.bytes[d],
                                                   "capacity", (json_int_t)x->claim.capacity[d]));
            json_t *one =
                json_pack("{s:s,s:s,s:s,s:i,s:o}", "name", x->ep->name, "engine",
                          sw_fleet_engine_name(x->ep->engine), "state",
                          sw_serve_state_name(x->state), "in_flight", x->inflight, "claim", c);
            if (one && x->ep->host) /* on a host: its unit, and the way serve reaches it */
                json_object_set_new(one, "host",
                                    json_pack("{s:s,s:s,s:b,s:s}", "name", x->ep->host->name,
                                              "route", x->routed ? "host" : "direct", "unit",
                                              x->unit, "via", x->client.route.via));
            json_array_append_new(eps, one);
        }
        json_array_append_new(data,
                              json_pack("{s:s,s:s,s:I,s:s,s:s,s:o}", "id", m->name, "object",
                                        "model", "created", (json_int_t)0, "owned_by", "slipway",
                                        "state", model_state(sv, m), "endpoints", eps));
    }
    sw__serve_reply_json(req, 200, json_pack("{s:s,s:o}", "object", "list", "data", data));
}

void sw__serve_reply_json(struct evhttp_request *req, int code, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    sw__serve_reply_text(req, code, s, 0);
    free(s);
}

static void hist_print(struct sw_buf *b, const char *name, const char *model,
                       const struct sw__serve_hist *h)
{
    /* the model's name is the operator's text: every label goes through core's escaper */
    uint64_t cum = 0;
    char n[160], le[32];
    for (int i = 0; i < SW__SERVE_N_BUCKETS; i++) {
        cum += h->bucket[i];
        if (i < SW__SERVE_N_BUCKETS - 1)
            snprintf(le, sizeof(le), "%g", sw__serve_bounds[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        const char *l[] = {"model", model, "le", le, NULL};
        snprintf(n, sizeof(n), "%s_bucket", name);
        sw_buf_prom_sample(b, n, l, (double)cum);
    }
    const char *l[] = {"model", model, NULL};
    snprintf(n, sizeof(n), "%s_sum", name);
    sw_buf_prom_sample(b, n, l, h->sum);
    snprintf(n, sizeof(n), "%s_count", name);
    sw_buf_prom_sample(b, n, l, (double)h->count);
}

static void on_metrics(struct sw__serve *sv, struct evhttp_request *req)
{
    struct sw_buf b;
    sw_buf_init(&b, 8u << 20);
    sw_buf_puts(&b, "# HELP slipway_serve_requests_total Requests answered, by model and status.\n"
                    "# TYPE slipway_serve_requests_total counter\n");
    for (int i = 0; i < sv->n_models; i++)
        for (int k = 0; k < SW__SERVE_N_CODES && sv->models[i].codes[k]; k++) {
            char code[16];
            snprintf(code, sizeof(code), "%d", sv->models[i].codes[k]);
            const char *l[] = {"model", sv->models[i].name, "code", code, NULL};
            sw_buf_prom_sample(&b, "slipway_serve_requests_total", l,
                               (double)sv->models[i].code_n[k]);
        }
    sw_buf_puts(&b, "# HELP slipway_serve_ttft_seconds Arrival to the first byte of the answer.\n"
                    "# TYPE slipway_serve_ttft_seconds histogram\n");
    for (int i = 0; i < sv->n_models; i++)
        hist_print(&b, "slipway_serve_ttft_seconds", sv->models[i].name, &sv->models[i].ttft);
    sw_buf_puts(&b, "# HELP slipway_serve_queue_wait_seconds Time a request waited in its "
                    "model's queue.\n# TYPE slipway_serve_queue_wait_seconds histogram\n");
    for (int i = 0; i < sv->n_models; i++)
        hist_print(&b, "slipway_serve_queue_wait_seconds", sv->models[i].name,
                   &sv->models[i].queue_wait);
    const struct {
        const char *name, *help;
        size_t off;
    } mc[] = {
        {"slipway_serve_tokens_total", "Streamed events passed through (tokens).",
         offsetof(struct sw__serve_model, tokens)},
        {"slipway_serve_cancelled_total", "Upstream requests cancelled: the client went away.",
         offsetof(struct sw__serve_model, cancelled)},
        {"slipway_serve_retries_total", "Requests retried on another replica before a byte.",
         offsetof(struct sw__serve_model, retried)},
        {"slipway_serve_midstream_failures_total", "Streams an endpoint ended before their end.",
         offsetof(struct sw__serve_model, midstream)},
    };
    for (size_t k = 0; k < SW_ARRAY_LEN(mc); k++) {
        sw_buf_printf(&b, "# HELP %s %s\n# TYPE %s counter\n", mc[k].name, mc[k].help, mc[k].name);
        for (int i = 0; i < sv->n_models; i++) {
            const char *l[] = {"model", sv->models[i].name, NULL};
            uint64_t v = *(const uint64_t *)((const char *)&sv->models[i] + mc[k].off);
            for (int lk = 0; !k && lk < sv->n_loops; lk++) /* tokens: each loop counts its own */
                v += __atomic_load_n(&sv->loops[lk].tokens[i], __ATOMIC_RELAXED);
            sw_buf_prom_sample(&b, mc[k].name, l, (double)v);
        }
    }
    sw_buf_puts(&b, "# HELP slipway_serve_loop_requests_total Requests received, by request loop.\n"
                    "# TYPE slipway_serve_loop_requests_total counter\n");
    for (int lk = 0; lk < sv->n_loops; lk++)
        sw_buf_printf(&b, "slipway_serve_loop_requests_total{loop=\"%d\"} %" PRIu64 "\n", lk,
                      __atomic_load_n(&sv->loops[lk].requests, __ATOMIC_RELAXED));
    sw_buf_puts(&b, "# HELP slipway_serve_queued Requests waiting in the model's queue.\n"
                    "# TYPE slipway_serve_queued gauge\n");
    for (int i = 0; i < sv->n_models; i++) {
        const char *l[] = {"model", sv->models[i].name, NULL};
        sw_buf_prom_sample(&b, "slipway_serve_queued", l, sv->models[i].n_queued);
    }
    const struct {
        const char *name, *help;
        size_t off;
    } ec[] = {
        {"slipway_serve_starts_total", "Endpoint starts by serve.",
         offsetof(struct sw__serve_ep, starts)},
        {"slipway_serve_evictions_total", "Endpoints stopped to make room for another.",
         offsetof(struct sw__serve_ep, evictions)},
        {"slipway_serve_idle_stops_total", "Endpoints stopped after their idle_ttl.",
         offsetof(struct sw__serve_ep, stops_idle)},
        {"slipway_serve_upstream_failures_total", "Upstream requests that failed.",
         offsetof(struct sw__serve_ep, failures)},
    };
    for (size_t k = 0; k < SW_ARRAY_LEN(ec); k++) {
        sw_buf_printf(&b, "# HELP %s %s\n# TYPE %s counter\n", ec[k].name, ec[k].help, ec[k].name);
        for (int i = 0; i < sv->n_eps; i++)
            if (!sv->eps[i].retired) /* a replaced instance: its endpoint's row is the new one */
                sw_buf_printf(&b, "%s{endpoint=\"%s\"} %" PRIu64 "\n", ec[k].name,
                              sv->eps[i].ep->name,
                              *(const uint64_t *)((const char *)&sv->eps[i] + ec[k].off));
    }
    sw_buf_puts(&b, "# HELP slipway_serve_in_flight Requests in flight to the endpoint.\n"
                    "# TYPE slipway_serve_in_flight gauge\n");
    for (int i = 0; i < sv->n_eps; i++)
        if (!sv->eps[i].retired)
            sw_buf_printf(&b, "slipway_serve_in_flight{endpoint=\"%s\"} %d\n", sv->eps[i].ep->name,
                          sv->eps[i].inflight);
    sw_buf_puts(&b, "# HELP slipway_serve_endpoint_state 1 for the endpoint's state.\n"
                    "# TYPE slipway_serve_endpoint_state gauge\n");
    for (int i = 0; i < sv->n_eps; i++)
        for (int s = SW_SERVE_STOPPED; s <= SW_SERVE_STOPPING && !sv->eps[i].retired; s++)
            sw_buf_printf(&b, "slipway_serve_endpoint_state{endpoint=\"%s\",state=\"%s\"} %d\n",
                          sv->eps[i].ep->name, sw_serve_state_name((enum sw_serve_state)s),
                          sv->eps[i].state == (enum sw_serve_state)s);
    for (int i = 0; i < sv->n_eps; i++) {
        const struct sw__serve_ep *x = &sv->eps[i];
        if (!i)
            sw_buf_puts(&b, "# HELP slipway_serve_claim_bytes The plan's memory on the device "
                            "while the endpoint runs.\n# TYPE slipway_serve_claim_bytes gauge\n");
        for (int d = 0; x->claim_ok && !x->retired && d < x->claim.n; d++)
            sw_buf_printf(&b,
                          "slipway_serve_claim_bytes{endpoint=\"%s\",device=\"%s\"} %" PRIu64 "\n",
                          x->ep->name, x->claim.dev[d]->name, x->claim.bytes[d]);
    }
    sw_buf_printf(&b,
                  "# HELP slipway_serve_unauthorized_total Requests refused for their key.\n"
                  "# TYPE slipway_serve_unauthorized_total counter\n"
                  "slipway_serve_unauthorized_total %" PRIu64 "\n",
                  __atomic_load_n(&sv->unauthorized, __ATOMIC_RELAXED));
    struct evbuffer *eb = evbuffer_new();
    if (eb)
        evbuffer_add(eb, sw_buf_cstr(&b), b.len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", eb);
    if (eb)
        evbuffer_free(eb);
    sw_buf_free(&b);
}

static void on_generate(struct sw__serve *sv, struct evhttp_request *req, const char *path,
                        const char *client)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    unsigned char *raw = evbuffer_pullup(in, (ev_ssize_t)n);
    /* the model's name only: the body goes on as it came */
    json_t *body = raw ? sw_json_parse((const char *)raw, n, "request", NULL) : NULL;
    const char *name = json_string_value(json_object_get(body, "model"));
    if (!name) {
        json_decref(body);
        sw__serve_reply_error(req, 400, "invalid_request_error",
                              "the body must be a JSON object naming its 'model'", 0);
        return;
    }
    int mi = find_model(sv, name);
    if (mi < 0) {
        char msg[1200];
        int w = snprintf(msg, sizeof(msg), "The model '%s' does not exist (served:", name);
        for (int i = 0; i < sv->n_models && w > 0 && (size_t)w < sizeof(msg); i++)
            w += snprintf(msg + w, sizeof(msg) - (size_t)w, " %s", sv->models[i].name);
        if (w > 0 && (size_t)w < sizeof(msg) - 2)
            snprintf(msg + w, sizeof(msg) - (size_t)w, ")");
        json_decref(body);
        sw__serve_reply_error(req, 404, "invalid_request_error", msg, 0);
        return;
    }
    json_decref(body);
    struct sw__serve_model *m = &sv->models[mi];
    if (m->never) {
        sw__serve_count(m, 507);
        sw__serve_reply_error(req, 507, "insufficient_memory", m->last_why, 0);
        return;
    }
    struct sw__serve_px *px = sw_calloc(1, sizeof(*px));
    char *copy = px ? sw_malloc(n ? n : 1) : NULL;
    if (!px || !copy) {
        sw_free(px);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    memcpy(copy, raw, n);
    px->sv = sv;
    px->lp = sw__serve_self();
    px->model = mi;
    px->req = req;
    px->body = copy;
    px->body_len = n;
    px->ep = -1;
    px->t_arrive_ns = sw_now_ns();
    snprintf(px->path, sizeof(px->path), "%s", path);
    snprintf(px->client, sizeof(px->client), "%s", client);
    px->cconn = evhttp_request_get_connection(req);
    if (px->cconn)
        evhttp_connection_set_closecb(px->cconn, on_client_gone, px);
    int i = sw__serve_pick(sv, m, px);
    if (i >= 0 && !m->n_queued) {
        sw__serve_hist_add(&m->queue_wait, 0);
        sw__serve_forward(px, i);
        return;
    }
    if (m->n_queued >= (int)sv->queue_max) {
        char msg[300];
        snprintf(msg, sizeof(msg), "model %s has %d requests queued (the bound): try later",
                 m->name, m->n_queued);
        sw__serve_logf(sv, "%s: queue full (%d): 429 (loop %d)", m->name, m->n_queued,
                       px->lp ? px->lp->idx : -1);
        sw__serve_count(m, 429);
        sw__serve_reply_error(req, 429, "rate_limit_error", msg, 1);
        sw__serve_px_free(px);
        return;
    }
    px->deadline = event_new(px->lp->base, -1, 0, on_deadline, px);
    struct timeval tv = {(time_t)(sv->max_wait_ms / 1000),
                         (suseconds_t)(sv->max_wait_ms % 1000) * 1000};
    if (px->deadline)
        event_add(px->deadline, &tv);
    TAILQ_INSERT_TAIL(&m->queue, px, link);
    m->n_queued++;
    px->queued = true;
    sw__serve_kick(sv);
}

static void on_request(struct sw__serve *sv, struct evhttp_request *req);

/* A request on one of the request loops: /health alone, the rest under the state's lock. */
void sw__serve_on_request(struct evhttp_request *req, void *arg)
{
    struct sw__serve_loop *lp = arg;
    struct sw__serve *sv = lp->sv;
    __atomic_store_n(&lp->requests, lp->requests + 1, __ATOMIC_RELAXED);
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    if (path && !strcmp(path, "/health")) {
        struct evbuffer *b = evbuffer_new();
        if (b)
            evbuffer_add(b, "{\"status\":\"ok\"}", 15);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "application/json");
        evhttp_send_reply(req, 200, "OK", b);
        if (b)
            evbuffer_free(b);
        return;
    }
    sw__serve_enter(sv);
    on_request(sv, req);
    sw__serve_leave(sv);
}

static void on_request(struct sw__serve *sv, struct evhttp_request *req)
{
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) { /* a token is a small write: never held for the client's delayed ACK */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (!path)
        path = "/";
    if (!strcmp(path, "/metrics") && cmd == EVHTTP_REQ_GET) {
        on_metrics(sv, req);
        return;
    }
    const char *client = authorize(sv, req);
    if (!client)
        return;
    if (cmd == EVHTTP_REQ_GET && (!strcmp(path, "/v1/models") || !strcmp(path, "/models")))
        on_models(sv, req);
    else if (cmd == EVHTTP_REQ_POST &&
             (!strcmp(path, "/v1/chat/completions") || !strcmp(path, "/v1/completions") ||
              !strcmp(path, "/v1/embeddings")))
        on_generate(sv, req, path, client);
    else if (cmd == EVHTTP_REQ_POST && !strcmp(path, "/admin/deploy"))
        sw__serve_on_deploy(sv, req, client);
    else
        sw__serve_reply_error(req, 404, "invalid_request_error", "no such route", 0);
}
