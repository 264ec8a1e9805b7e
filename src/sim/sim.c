/*
 * sim: the object and its boot sequence on the loop. A sim is made from a plan (sim.h), binds
 * its socket, announces the port, prints the engine's early boot lines, waits the load time with
 * /health answering the engine's "loading" (llama.cpp; vLLM binds its port only when up), then
 * prints the memory lines and either the failure (and stops with the engine's exit status) or
 * "serving" and hands the loop to the HTTP surface (sim_http.c) and its scheduler (sim_sched.c).
 *
 * What it does not do: the HTTP surface (sim_http.c and the files it names), the scheduler
 * (sim_sched.c), or the boot lines' text (sim_boot.c).
 */
#include "sim_internal.h"

#include <slipway/engine.h>
#include <slipway/hf.h>
#include <slipway/memory.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/util.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

void sw_sim_config_init(struct sw_sim_config *c)
{
    memset(c, 0, sizeof(*c));
    c->load_ms = -1;
    c->load_rate = 2ull << 30;
    c->max_tokens_default = 16;
    c->timing.decode_base_us = 2000.0;
    c->timing.decode_per_seq_us = 200.0;
    c->timing.decode_per_kv_us = 1.0;
    c->timing.prefill_per_token_us = 50.0;
    c->timing.prefill_batch_share = 1.0;
    c->timing.batch_window_us = 3000.0;
}

/* The plan read (or found) the payload on the endpoint's host, where the engine runs: it
 * resolves there though it is not on this machine (plan.h struct sw_plan_model_read). */
static bool read_on_host(const json_t *plan)
{
    return json_is_true(json_object_get(json_object_get(plan, "model_read"), "found"));
}

bool sw_sim_payload_missing(const char *model_dir)
{
    char cfg[1100];
    struct stat st;
    if (!model_dir)
        return true;
    snprintf(cfg, sizeof(cfg), "%s/config.json", model_dir);
    return stat(cfg, &st) != 0;
}

void sw__sim_listen(struct sw_sim *s, const char *host, const char *port)
{
    if (s->cfg.listen || (!host && !port))
        return;
    snprintf(s->listen_buf, sizeof(s->listen_buf), "%s:%s", host ? host : "127.0.0.1",
             port ? port : "0");
    s->cfg.listen = s->listen_buf;
}

int64_t sw__sim_sglang_window(const char *dir, int64_t given)
{
    struct sw_hf_config hc;
    if (given > 0 || sw_sim_payload_missing(dir))
        return given;
    memset(&hc, 0, sizeof(hc));
    return sw_hf_config_load(dir, &hc, NULL) == 0 ? hc.max_position_embeddings : 0;
}

int64_t sw_sim_count_tokens(const char *text, size_t len)
{
    (void)text;
    return (int64_t)((len + 3) / 4);
}

static struct sw_sim *sim_alloc(const struct sw_sim_config *c, struct sw_err *e)
{
    struct sw_sim *s = sw_calloc(1, sizeof(*s));
    if (!s) {
        sw_err_set(e, SW_ENOMEM, "out of memory");
        return NULL;
    }
    if (c)
        s->cfg = *c;
    else
        sw_sim_config_init(&s->cfg);
    sw_buf_init(&s->boot_early, 1u << 20);
    sw_buf_init(&s->boot_mem, 1u << 20);
    sw_buf_init(&s->boot_tail, 1u << 20);
    s->listen_fd = -1;
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    return s;
}

int sw_sim_new_llamacpp(const struct sw_plan *p, int plan_rc, const struct sw_sim_config *c,
                        struct sw_sim **out, struct sw_err *e)
{
    struct stat st;
    *out = NULL;
    if (!p->args || !p->args->model[0])
        return plan_rc ? plan_rc : sw_err_set(e, SW_EINVAL, "the plan has no llama.cpp argv");
    struct sw_sim *s = sim_alloc(c, e);
    if (!s)
        return SW_ENOMEM;
    s->engine = SW__SIM_LLAMACPP;
    snprintf(s->model_path, sizeof(s->model_path), "%s", p->args->model);
    bool here = stat(s->model_path, &st) == 0;
    s->payload_missing = !here && !p->model_read.found;
    if (plan_rc && !s->payload_missing) {
        sw_sim_free(s);
        return plan_rc; /* the law could not run on a payload that is there: the caller says why */
    }
    s->payload_bytes = here ? (uint64_t)st.st_size : p->model_read.file_size;
    /* llama-server's id on /v1/models: the alias (-a, as the command line's table read it), else
     * the model path */
    const char *alias = s->cfg.alias              ? s->cfg.alias
                        : p->ep && p->ep->alias.v ? p->ep->alias.v
                        : p->args->alias          ? p->args->alias
                                                  : s->model_path;
    snprintf(s->alias, sizeof(s->alias), "%s", alias[0] ? alias : s->model_path);
    s->metrics = p->args->metrics; /* llama-server serves /metrics only with --metrics */
    if (p->llamacpp && !plan_rc) {
        s->n_slots = (int)p->llamacpp->n_slots;
        s->window = p->llamacpp->n_ctx_slot;
        s->n_ctx = p->llamacpp->report.n_ctx;
    }
    if (s->n_slots < 1)
        s->n_slots = 1;
    /* the scheduler: cells are tokens; -b is a step's budget; with --kv-unified the slots share
     * the n_ctx cells (each may grow to all of them), else each has its window */
    s->block_size = 1;
    s->batch_tokens = s->cfg.batch_tokens > 0   ? s->cfg.batch_tokens
                      : p->llamacpp && !plan_rc ? (int64_t)p->llamacpp->report.n_batch
                                                : 2048;
    if (p->llamacpp && !plan_rc && p->llamacpp->report.kv_unified && s->n_slots > 1)
        s->kv_pool = s->n_ctx;
    int rc = sw__sim_boot_llamacpp(s, p, e);
    if (rc) {
        sw_sim_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* The weights' bytes of a checkpoint directory (every regular *.safetensors in it), for a load
 * time scaled from the payload. */
static uint64_t weights_bytes(const char *dir)
{
    char path[1100];
    struct stat st;
    uint64_t total = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de = d ? readdir(d) : NULL; de; de = readdir(d)) {
        size_t n = strlen(de->d_name);
        if (n < 12 || strcmp(de->d_name + n - 12, ".safetensors"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
    }
    if (d)
        closedir(d);
    return total;
}

int sw_sim_new_vllm(const json_t *plan, const char *model_dir, int64_t max_num_seqs,
                    const struct sw_sim_config *c, struct sw_sim **out, struct sw_err *e)
{
    return sw_sim_new_vllm_boot(plan, model_dir, max_num_seqs, NULL, c, out, e);
}

int sw_sim_new_vllm_boot(const json_t *plan, const char *model_dir, int64_t max_num_seqs,
                         const struct sw_sim_vllm_boot *boot, const struct sw_sim_config *c,
                         struct sw_sim **out, struct sw_err *e)
{
    *out = NULL;
    if (!model_dir)
        return sw_err_set(e, SW_EINVAL, "no model directory");
    struct sw_sim *s = sim_alloc(c, e);
    if (!s)
        return SW_ENOMEM;
    s->engine = SW__SIM_VLLM;
    s->metrics = true;
    snprintf(s->model_path, sizeof(s->model_path), "%s", model_dir);
    s->payload_missing = !plan || (sw_sim_payload_missing(model_dir) && !read_on_host(plan));
    /* the served name: --served-model-name, else the path as given */
    snprintf(s->alias, sizeof(s->alias), "%s", s->cfg.alias ? s->cfg.alias : model_dir);
    s->n_slots = max_num_seqs > 0 ? (int)max_num_seqs : 256;
    if (boot) {
        s->vboot = *boot;
        snprintf(s->vboot_text, sizeof(s->vboot_text), "%s", boot->text ? boot->text : "");
        s->vboot.text = s->vboot_text;
    }
    if (plan) {
        const json_t *rep = json_object_get(plan, "report");
        s->window = json_integer_value(json_object_get(rep, "max_model_len"));
        s->kv_pool = json_integer_value(json_object_get(rep, "kv_cache_tokens"));
        s->n_ctx = s->kv_pool;
        s->block_size = json_integer_value(json_object_get(rep, "block_size"));
    }
    if (s->block_size < 1)
        s->block_size = 16; /* vLLM's default block */
    s->batch_tokens = s->cfg.batch_tokens > 0 ? s->cfg.batch_tokens : 2048;
    s->payload_bytes = s->payload_missing ? 0 : weights_bytes(model_dir);
    int rc = sw__sim_boot_vllm(s, plan, e);
    if (rc) {
        sw_sim_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* SGLang's chunked_prefill_size when the command line gives none: its bucket for the cards the
 * operator runs (server_args: 8192 for 24-80 GB cards; smaller ones get less). */
#define SGLANG_CHUNK_DEFAULT 8192

int sw_sim_new_sglang(const json_t *plan, const char *model_dir, int64_t context_len,
                      int64_t max_running, bool metrics, const struct sw_sim_config *c,
                      struct sw_sim **out, struct sw_err *e)
{
    *out = NULL;
    if (!model_dir)
        return sw_err_set(e, SW_EINVAL, "no model directory");
    if (context_len < 1 && plan)
        return sw_err_set(e, SW_EINVAL,
                          "the request window is not known: give --context-length (or a "
                          "config.json with max_position_embeddings)");
    struct sw_sim *s = sim_alloc(c, e);
    if (!s)
        return SW_ENOMEM;
    s->engine = SW__SIM_SGLANG;
    s->metrics = metrics;
    snprintf(s->model_path, sizeof(s->model_path), "%s", model_dir);
    s->payload_missing = !plan || (sw_sim_payload_missing(model_dir) && !read_on_host(plan));
    /* the served name: --served-model-name, else the path as given */
    snprintf(s->alias, sizeof(s->alias), "%s", s->cfg.alias ? s->cfg.alias : model_dir);
    const json_t *rep = json_object_get(plan, "report");
    if (max_running < 1)
        max_running = json_integer_value(json_object_get(rep, "max_running_requests"));
    s->n_slots = max_running > 0 ? (int)SW_MIN(max_running, 65536) : 256;
    s->window = context_len > 0 ? context_len : 0;
    /* the token pool: a page of one token (--page-size 1, SGLang's default) */
    s->kv_pool = json_integer_value(json_object_get(rep, "max_total_num_tokens"));
    s->n_ctx = s->kv_pool;
    s->block_size = 1;
    s->batch_tokens = s->cfg.batch_tokens > 0 ? s->cfg.batch_tokens : SGLANG_CHUNK_DEFAULT;
    s->payload_bytes = s->payload_missing ? 0 : weights_bytes(model_dir);
    int rc = sw__sim_boot_sglang(s, plan, e);
    if (rc) {
        sw_sim_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static void stop_workers(struct sw_sim *s)
{
    if (s->stop_pipe[1] >= 0) { /* EOF wakes every worker's loop */
        close(s->stop_pipe[1]);
        s->stop_pipe[1] = -1;
    }
    pthread_t *th = s->worker_threads;
    for (int i = 0; i < s->n_workers; i++) {
        if (th)
            pthread_join(th[i], NULL);
        sw_sim_free(s->workers[i]);
    }
    s->n_workers = 0;
}

void sw_sim_free(struct sw_sim *s)
{
    if (!s)
        return;
    stop_workers(s);
    sw_free(s->workers);
    sw_free(s->worker_threads);
    if (s->stop_ev)
        event_free(s->stop_ev);
    if (s->stop_pipe[0] >= 0)
        close(s->stop_pipe[0]);
    sw__sim_drop_all(s);
    if (s->http)
        evhttp_free(s->http);
    sw__sim_guard_free(s);
    if (s->chunk)
        evbuffer_free(s->chunk);
    free(s->alias_json);
    if (s->sig_term)
        event_free(s->sig_term);
    if (s->sig_int)
        event_free(s->sig_int);
    if (s->load_timer)
        event_free(s->load_timer);
    if (s->step_timer)
        event_free(s->step_timer);
    if (s->window_timer)
        event_free(s->window_timer);
    if (s->listen_fd >= 0 && !s->http_owns_fd)
        close(s->listen_fd);
    if (s->base)
        event_base_free(s->base);
    sw_free(s->slots);
    sw_free(s->hung);
    sw_free(s->hung_conn);
    sw_free(s->pf_n);
    sw_free(s->pf_k0);
    sw_buf_free(&s->boot_early);
    sw_buf_free(&s->boot_mem);
    sw_buf_free(&s->boot_tail);
    sw_free(s);
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT" into a bound (not yet listening) socket. */
static int bind_listen(struct sw_sim *s, struct sw_err *e)
{
    const char *l = s->cfg.listen ? s->cfg.listen : "127.0.0.1:0";
    char host[256] = "127.0.0.1";
    const char *colon = strrchr(l, ':');
    const char *portp = colon ? colon + 1 : l;
    if (colon && colon > l) {
        size_t n = (size_t)(colon - l);
        if (l[0] == '[' && n >= 2 && l[n - 1] == ']') {
            l++;
            n -= 2;
        }
        if (n >= sizeof(host))
            return sw_err_set(e, SW_EINVAL, "--listen: host too long");
        memcpy(host, l, n);
        host[n] = '\0';
    }
    uint64_t port;
    if (sw_parse_u64(portp, &port, NULL) || port > 65535)
        return sw_err_set(e, SW_EINVAL, "--listen '%s': want HOST:PORT", s->cfg.listen);
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        sl = sizeof(*v4);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        sl = sizeof(*v6);
    } else {
        return sw_err_set(e, SW_EINVAL, "--listen '%s': '%s' is not an IP address", l, host);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return sw_err_set(e, SW_EIO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (s->cfg.threads > 1) /* the other loops bind the same port */
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0) {
        int err = errno;
        close(fd);
        return sw_err_set(e, SW_EIO, "bind %s:%" PRIu64 ": %s", host, port, strerror(err));
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        s->port = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
    snprintf(s->host, sizeof(s->host), "%s", host);
    s->listen_fd = fd;
    return 0;
}

static int start_listening(struct sw_sim *s, struct sw_err *e)
{
    if (listen(s->listen_fd, 1024) != 0)
        return sw_err_set(e, SW_EIO, "listen: %s", strerror(errno));
    evutil_make_socket_nonblocking(s->listen_fd);
    if (!evhttp_accept_socket_with_handle(s->http, s->listen_fd))
        return sw_err_set(e, SW_EIO, "evhttp could not accept on the socket");
    s->http_owns_fd = true;
    return 0;
}

static int write_ready_file(const char *path, int port)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return SW_EIO;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return SW_EIO;
    }
    return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct sw_sim *s = arg;
    (void)what;
    (void)sig;
    if (s->engine == SW__SIM_LLAMACPP) {
        struct sw_buf b;
        sw_buf_init(&b, 4096);
        sw_buf_puts(&b, "I srv    operator(): operator(): cleaning up before exit...\n");
        sw__sim_log_lines(s, &b);
        sw_buf_free(&b);
    } else {
        struct sw_buf b;
        sw_buf_init(&b, 4096);
        sw_buf_puts(&b, s->engine == SW__SIM_SGLANG
                            ? "INFO:     Shutting down\n"
                            : "(APIServer pid=1) INFO:     Shutting down\n");
        sw__sim_log_lines(s, &b);
        sw_buf_free(&b);
    }
    s->state = SW__SIM_STOPPING;
    s->exit_status = 0;
    sw__sim_drop_all(s);
    event_base_loopexit(s->base, NULL);
}

static struct event_base *precise_base(void)
{
    struct event_config *ec = event_config_new();
    if (ec)
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *b = ec ? event_base_new_with_config(ec) : NULL;
    if (ec)
        event_config_free(ec);
    return b;
}

static void on_stop_pipe(evutil_socket_t fd, short what, void *arg)
{
    struct sw_sim *w = arg;
    (void)fd;
    (void)what;
    w->state = SW__SIM_STOPPING;
    sw__sim_drop_all(w);
    event_base_loopbreak(w->base);
}

static void *worker_main(void *arg)
{
    struct sw_sim *w = arg;
    event_base_dispatch(w->base);
    return NULL;
}

/* threads - 1 more loops on the bound port, each a sim of the same plan with its own scheduler;
 * built here, then each dispatched on its own thread (a base is only ever used by one). */
static int spawn_workers(struct sw_sim *s, struct sw_err *e)
{
    int n = s->cfg.threads - 1;
    if (pipe2(s->stop_pipe, O_CLOEXEC) != 0)
        return sw_err_set(e, SW_EIO, "pipe: %s", strerror(errno));
    s->workers = sw_calloc((size_t)n, sizeof(*s->workers));
    s->worker_threads = sw_calloc((size_t)n, sizeof(pthread_t));
    if (!s->workers || !s->worker_threads)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        struct sw_sim *w = sim_alloc(&s->cfg, e);
        if (!w)
            return SW_ENOMEM;
        w->engine = s->engine;
        memcpy(w->alias, s->alias, sizeof(w->alias));
        memcpy(w->model_path, s->model_path, sizeof(w->model_path));
        w->payload_bytes = s->payload_bytes;
        w->n_ctx = s->n_ctx;
        w->window = s->window;
        w->n_slots = s->n_slots;
        w->kv_pool = s->kv_pool;
        w->block_size = s->block_size;
        w->batch_tokens = s->batch_tokens;
        w->metrics = s->metrics;
        w->t0_ns = s->t0_ns;
        snprintf(w->listen_buf, sizeof(w->listen_buf), "%s%s%s:%d", strchr(s->host, ':') ? "[" : "",
                 s->host, strchr(s->host, ':') ? "]" : "", s->port);
        w->cfg.listen = w->listen_buf;
        w->cfg.ready_file = NULL;
        w->base = precise_base();
        int rc = w->base ? 0 : sw_err_set(e, SW_ENOMEM, "event_base_new failed");
        if (!rc)
            rc = bind_listen(w, e);
        if (!rc)
            rc = sw__sim_http_init(w, e);
        if (!rc)
            rc = start_listening(w, e);
        w->stop_ev = rc ? NULL : event_new(w->base, s->stop_pipe[0], EV_READ, on_stop_pipe, w);
        if (!rc && (!w->stop_ev || event_add(w->stop_ev, NULL)))
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        if (rc) {
            sw_sim_free(w);
            return rc;
        }
        w->state = SW__SIM_READY;
        /* --fault applies to every loop (each is its own engine); exit0 ends the process from
         * the first one */
        for (int k = 0; k < w->cfg.n_faults; k++)
            if (w->cfg.faults[k].kind != SW_SIM_FAULT_EXIT0)
                sw__sim_fault_apply(w, &w->cfg.faults[k]);
        s->workers[s->n_workers] = w;
        if (pthread_create(&((pthread_t *)s->worker_threads)[s->n_workers], NULL, worker_main, w) !=
            0) {
            sw_sim_free(w);
            return sw_err_set(e, SW_EIO, "pthread_create failed");
        }
        s->n_workers++;
    }
    return 0;
}

static void on_loaded(evutil_socket_t fd, short what, void *arg)
{
    struct sw_sim *s = arg;
    struct sw_err e;
    (void)fd;
    (void)what;
    sw_err_clear(&e);
    sw__sim_log_lines(s, &s->boot_mem);
    sw__sim_log_lines(s, &s->boot_tail);
    if (s->boot_fails) {
        s->state = SW__SIM_FAILED;
        s->exit_status = s->fail_status;
        event_base_loopexit(s->base, NULL);
        return;
    }
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    if (s->engine == SW__SIM_LLAMACPP) {
        sw_buf_printf(&b, "I srv  llama_server: listening on http://%s:%d\n", s->host, s->port);
        sw_buf_puts(&b, "I srv  update_slots: all slots are idle\n");
    } else {
        if (start_listening(s, &e)) {
            char m[600];
            sw_buf_printf(&b, "ERROR: %s\n", sw_err_format(&e, m, sizeof(m)));
            s->exit_status = 1;
            sw__sim_log_lines(s, &b);
            sw_buf_free(&b);
            event_base_loopexit(s->base, NULL);
            return;
        }
        if (s->engine == SW__SIM_SGLANG) {
            /* uvicorn's lines, then SGLang's own once its warm-up request has run */
            char pre[64];
            sw_buf_puts(&b, "INFO:     Started server process [1]\n");
            sw_buf_puts(&b, "INFO:     Waiting for application startup.\n");
            sw_buf_puts(&b, "INFO:     Application startup complete.\n");
            sw_buf_printf(&b, "INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)\n",
                          s->host, s->port);
            sw__sim_sglang_prefix(pre, sizeof(pre), false);
            sw_buf_printf(&b, "%sThe server is fired up and ready to roll!\n", pre);
        } else {
            sw_buf_printf(&b,
                          "(APIServer pid=1) INFO: Starting vLLM API server 0 on http://%s:%d\n",
                          s->host, s->port);
            sw_buf_puts(&b, "(APIServer pid=1) INFO:     Started server process [1]\n");
            sw_buf_puts(&b, "(APIServer pid=1) INFO:     Waiting for application startup.\n");
            sw_buf_puts(&b, "(APIServer pid=1) INFO:     Application startup complete.\n");
        }
    }
    if (s->cfg.threads > 1 && spawn_workers(s, &e)) {
        char m[600];
        sw_buf_printf(&b, "ERROR: --threads: %s\n", sw_err_format(&e, m, sizeof(m)));
        sw__sim_log_lines(s, &b);
        sw_buf_free(&b);
        s->exit_status = 1;
        event_base_loopexit(s->base, NULL);
        return;
    }
    sw__sim_log_lines(s, &b);
    sw_buf_free(&b);
    s->state = SW__SIM_READY;
    sw__sim_http_ready(s);
}

int sw_sim_run(struct sw_sim *s, int *exit_status, struct sw_err *e)
{
    int rc;
    *exit_status = 1;
    s->t0_ns = sw_now_ns();
    /* steps are timed to the microsecond: epoll's millisecond timeout would round each one */
    s->base = precise_base();
    if (!s->base)
        return sw_err_set(e, SW_ENOMEM, "event_base_new failed");
    /* a stand-in for thousands of streams: as many descriptors as the hard limit allows */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    rc = bind_listen(s, e);
    if (rc)
        return rc;
    rc = sw__sim_http_init(s, e);
    if (rc)
        return rc;
    /* llama-server answers (503) while it loads; vLLM's API server is not up before its engine */
    if (s->engine == SW__SIM_LLAMACPP) {
        rc = start_listening(s, e);
        if (rc)
            return rc;
    }
    FILE *out = s->cfg.out ? s->cfg.out : stdout;
    if (s->cfg.announce_json)
        fprintf(out, "{\"port\": %d, \"url\": \"http://%s:%d\"}\n", s->port, s->host, s->port);
    else
        fprintf(out, "%d\n", s->port);
    fflush(out);
    if (s->cfg.ready_file && write_ready_file(s->cfg.ready_file, s->port))
        return sw_err_set(e, SW_EIO, "%s: cannot write the ready file", s->cfg.ready_file);
    s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
    s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
    s->load_timer = evtimer_new(s->base, on_loaded, s);
    if (!s->sig_term || !s->sig_int || !s->load_timer)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    event_add(s->sig_term, NULL);
    event_add(s->sig_int, NULL);
    sw__sim_log_lines(s, &s->boot_early);
    int64_t ms = s->cfg.load_ms;
    if (ms < 0)
        ms = s->cfg.load_rate ? (int64_t)(s->payload_bytes * 1000u / s->cfg.load_rate) : 0;
    if (s->payload_missing)
        ms = 0; /* the open fails at once */
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
    event_add(s->load_timer, &tv);
    event_base_dispatch(s->base);
    stop_workers(s);
    *exit_status = s->exit_status;
    return 0;
}
