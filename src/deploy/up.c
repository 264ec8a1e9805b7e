/*
 * deploy/up: boot one local endpoint and prove it serves.
 *
 * preflight (port free, payload present and a model, nothing running under this pid file is the
 * CLI's job) -> spawn under the supervisor -> poll readiness while watching the child (llama-server
 * binds first and answers 503 while it loads; a child that exits meanwhile is a failed boot,
 * classified from its log with its exit status) -> read the boot report from the log -> one real
 * generation of one token (not /health: a server can answer /health and still be unable to
 * generate). On any failure the child is stopped before returning: nothing is left running.
 *
 * The pid file (o->pid_file) is written as soon as the engine runs, not after it proved itself:
 * if slipway and its watchdog are both killed mid-boot, the orphaned engine is still on record
 * for `slipway down`. It is written again once the engine answers readiness (what /proc shows
 * then: a wrapper script has exec'd the engine by now). A failed boot removes it; the watchdog
 * removes it when it stops the engine.
 *
 * What it deliberately does not do: decide the shape or wait in the foreground (the CLI does
 * those), or retry.
 */
#include "deploy_internal.h"

#include <slipway/gguf.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void fail(struct sw_up_result *r, enum sw_boot_class cls, enum sw_boot_phase ph,
                 enum sw_payload_kind kind, const char *msg)
{
    struct sw_boot_failure *f = &r->status.failure;
    memset(f, 0, sizeof(*f));
    f->cls = cls;
    f->phase = ph;
    f->payload_kind = kind;
    snprintf(f->message, sizeof(f->message), "%.*s", (int)sizeof(f->message) - 1, msg);
    r->status.failed = true;
}

/* The first SW_BOOTLOG_MAX bytes of the log (a serving engine keeps writing to it). */
static int read_head(const char *path, char **text, size_t *len, struct sw_err *e)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
    struct sw_buf b;
    sw_buf_init(&b, SW_BOOTLOG_MAX);
    char chunk[65536];
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, SW_MIN(sizeof(chunk), SW_BOOTLOG_MAX - b.len));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        rc = sw_buf_append(&b, chunk, (size_t)n);
        if (rc || b.len >= SW_BOOTLOG_MAX)
            break;
    }
    close(fd);
    if (rc) {
        sw_buf_free(&b);
        return sw_err_set(e, rc, "%s: out of memory", path);
    }
    *len = b.len;
    *text = sw_buf_steal(&b);
    if (!*text)
        return sw_err_set(e, SW_ENOMEM, "%s: out of memory", path);
    return 0;
}

int sw_deploy_read_log(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e)
{
    char *text = NULL;
    size_t len = 0;
    int rc = read_head(o->log_path, &text, &len, e);
    if (rc)
        return rc;
    struct sw_bootlog_hints h;
    memset(&h, 0, sizeof(h));
    h.exit_code = -1;
    h.payload = o->payload;
    h.ready = r->ready;
    h.live = !(r->child.exited && r->child.status >= 0);
    if (r->child.exited && r->child.status >= 0) {
        h.exited = true;
        if (WIFEXITED(r->child.status))
            h.exit_code = WEXITSTATUS(r->child.status);
        else if (WIFSIGNALED(r->child.status))
            h.exit_signal = WTERMSIG(r->child.status);
    }
    json_t *o_json = NULL;
    struct sw_boot_status st;
    rc = o->engine->bootlog(text, len, o->log_path, &h, &o_json, &st, e);
    sw_free(text);
    if (rc)
        return rc;
    json_decref(r->bootlog);
    r->bootlog = o_json;
    r->status = st;
    return 0;
}

/* The log once /health answered 200. llama-server writes its log through a thread of its own,
 * which on a loaded machine can lag the answer (a test read a log holding none of the memory
 * lines at the 200): its log is read again, every 20 ms for at most a second, until its parser
 * has seen the line that says it serves ("model loaded", "all slots are idle"). */
static void read_log_ready(const struct sw_up_opts *o, struct sw_up_result *r)
{
    sw_deploy_read_log(o, r, NULL);
    bool llama = !strcmp(o->engine->name, "llama.cpp");
    for (int i = 0; llama && !r->status.booted && i < 50 && !sw_child_poll(&r->child); i++) {
        sw_sleep_ms(20);
        sw_deploy_read_log(o, r, NULL);
    }
}

static void progress(const struct sw_up_opts *o, struct sw_up_result *r, const char *what,
                     int health)
{
    if (!o->on_progress)
        return;
    struct sw_up_progress p = {r->status.phase, sw_now_s() - r->child.t_start, health, what};
    o->on_progress(o->ctx, &p);
}

/* Sleep ms in small steps, returning early when asked to stop. */
static bool nap(const struct sw_up_opts *o, unsigned ms)
{
    for (unsigned t = 0; t < ms; t += 25) {
        if (o->stop && *o->stop)
            return false;
        sw_sleep_ms(25);
    }
    return !(o->stop && *o->stop);
}

/*
 * llama-server logs through a worker thread (common/log.cpp): when it exits within milliseconds of
 * starting (a port that cannot be bound, say) the lines can be lost with it, and the log says
 * nothing. What the machine says may still explain it: if the engine died before loading and its
 * port is taken now, that is the reason.
 */
static void explain_silent_exit(const struct sw_up_opts *o, struct sw_up_result *r)
{
    if (r->status.failed && r->status.failure.cls != SW_BOOT_UNKNOWN)
        return;
    if (r->status.phase > SW_PHASE_BIND)
        return;
    struct sw_err pe;
    if (sw_port_check(o->host, o->port, &pe) == SW_EBUSY) {
        char st[96], msg[600];
        sw_wait_status_str(r->child.status, st, sizeof(st));
        snprintf(msg, sizeof(msg), "the engine %s before loading and its log is empty; %.400s", st,
                 pe.msg);
        fail(r, SW_BOOT_PORT_IN_USE, SW_PHASE_BIND, SW_PAYLOAD_NONE, msg);
    }
}

static int preflight(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e)
{
    int rc = sw_port_check(o->host, o->port, e);
    if (rc == SW_EBUSY) {
        fail(r, SW_BOOT_PORT_IN_USE, SW_PHASE_BIND, SW_PAYLOAD_NONE, e ? e->msg : "port in use");
        return rc;
    }
    if (rc)
        return rc;
    if (!o->payload)
        return 0;
    struct stat st;
    char msg[600];
    if (stat(o->payload, &st) != 0) {
        snprintf(msg, sizeof(msg), "%s: %s", o->payload, strerror(errno));
        fail(r, SW_BOOT_MISSING_PAYLOAD, SW_PHASE_LOAD, SW_PAYLOAD_NONE, msg);
        return sw_err_set(e, SW_EGATE, "payload %s", msg);
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(msg, sizeof(msg), "%s is not a regular file", o->payload);
        fail(r, SW_BOOT_MISSING_PAYLOAD, SW_PHASE_LOAD, SW_PAYLOAD_NONE, msg);
        return sw_err_set(e, SW_EGATE, "payload %s", msg);
    }
    /* A GGUF engine's payload must start with the magic; anything else is named by its bytes
     * (an HTML page, a git-lfs pointer...) before a boot is spent on it. */
    if (!strcmp(o->engine->name, "llama.cpp")) {
        unsigned char head[512];
        int fd = open(o->payload, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, head, sizeof(head)) : -1;
        if (fd >= 0)
            close(fd);
        if (n < 0) {
            snprintf(msg, sizeof(msg), "%s: %s", o->payload, strerror(errno));
            fail(r, SW_BOOT_MISSING_PAYLOAD, SW_PHASE_LOAD, SW_PAYLOAD_NONE, msg);
            return sw_err_set(e, SW_EGATE, "payload %s", msg);
        }
        if (n < 4 || memcmp(head, "GGUF", 4)) {
            char what[160];
            sw_sniff(head, (size_t)n, what, sizeof(what));
            enum sw_payload_kind k = SW_PAYLOAD_BAD_MAGIC;
            if (n < 4)
                k = SW_PAYLOAD_TRUNCATED;
            else if (strstr(what, "git-lfs"))
                k = SW_PAYLOAD_LFS_POINTER;
            else if (strstr(what, "HTML") || strstr(what, "XML"))
                k = SW_PAYLOAD_HTML;
            else if (strstr(what, "JSON"))
                k = SW_PAYLOAD_JSON;
            snprintf(msg, sizeof(msg), "%s is not a GGUF model: it is %s", o->payload, what);
            fail(r, SW_BOOT_BAD_PAYLOAD, SW_PHASE_LOAD, k, msg);
            return sw_err_set(e, SW_EGATE, "%s", msg);
        }
        /* The header, read the hardened way: a cut download or a corrupt file is refused
         * here, in milliseconds, with the byte that shows it. */
        struct sw_gguf *g = NULL;
        struct sw_err ge;
        int grc = sw_gguf_open(o->payload, &g, &ge);
        sw_gguf_free(g);
        if (grc == SW_ENOMEM)
            return sw_err_set(e, SW_ENOMEM, "out of memory reading %s", o->payload);
        if (grc) {
            char text[1200];
            snprintf(msg, sizeof(msg), "%.590s", sw_err_format(&ge, text, sizeof(text)));
            fail(r, SW_BOOT_BAD_PAYLOAD, SW_PHASE_LOAD,
                 grc == SW_ETRUNC ? SW_PAYLOAD_TRUNCATED : SW_PAYLOAD_CORRUPT, msg);
            return sw_err_set(e, SW_EGATE, "%s", msg);
        }
    }
    return 0;
}

/* Model output is arbitrary: keep printable ASCII for the evidence line. */
static void printable(char *out, size_t n, const char *s)
{
    size_t o = 0;
    for (; *s && o + 1 < n; s++)
        out[o++] = (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\') ? *s : '?';
    out[o] = '\0';
}

/* The boot's deadline (o->boot_timeout_s from the engine's start, 900 s by default): readiness
 * and the one-token proof both end by it. */
static unsigned boot_limit_s(const struct sw_up_opts *o)
{
    return o->boot_timeout_s ? o->boot_timeout_s : 900;
}

static int liveness(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e)
{
    char url[512];
    struct sw_buf body;
    int status = 0;
    sw_buf_init(&body, 1 << 20);
    snprintf(url, sizeof(url), "%s%s", r->url, o->engine->liveness_path);
    progress(o, r, "liveness", 200);
    double t0 = sw_now_s();
    /* what readiness left of the deadline (at least 1 s: a proof needs a round trip) */
    double left = r->child.t_start + boot_limit_s(o) - t0;
    unsigned budget_ms = left > 1.0 ? (unsigned)(left * 1000.0) : 1000u;
    int rc = sw__http("POST", url, NULL, o->engine->liveness_body, o->api_key, budget_ms, o->stop,
                      &status, &body, e);
    r->liveness_ms = (sw_now_s() - t0) * 1000.0;
    if (o->stop && *o->stop) {
        sw_buf_free(&body);
        return SW_EINTR;
    }
    if (rc == 0 && status == 200) {
        json_error_t je;
        json_t *j = json_loadb(body.data ? body.data : "", body.len, 0, &je);
        json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        json_t *usage = json_object_get(j, "usage");
        const char *fin = json_string_value(json_object_get(ch, "finish_reason"));
        const char *text =
            json_string_value(json_object_get(json_object_get(ch, "message"), "content"));
        json_int_t ntok = json_integer_value(json_object_get(usage, "completion_tokens"));
        if (ch && json_is_object(usage) && ntok >= 1) {
            char shown[48];
            printable(shown, sizeof(shown), text ? text : "");
            snprintf(r->liveness, sizeof(r->liveness),
                     "POST %s: HTTP 200, %lld token(s), finish_reason %s, text \"%s\", %.0f ms",
                     o->engine->liveness_path, (long long)ntok, fin ? fin : "?", shown,
                     r->liveness_ms);
            r->live = true;
            json_decref(j);
            sw_buf_free(&body);
            return 0;
        }
        json_decref(j);
    }
    /* Did it die answering? Give the exit a moment to land, then read the log. */
    for (int i = 0; i < 20 && !sw_child_poll(&r->child); i++)
        sw_sleep_ms(50);
    char msg[600];
    /* the engine lives and took the whole budget: the deadline, not the engine, ended it */
    bool late = rc && r->liveness_ms + 50 >= budget_ms && !sw_child_poll(&r->child);
    if (late)
        snprintf(msg, sizeof(msg),
                 "liveness: POST %s: no answer to the one-token generation by the boot deadline "
                 "(%u s from the start; %.1f s of it were left once /health answered 200)",
                 o->engine->liveness_path, boot_limit_s(o), budget_ms / 1000.0);
    else if (rc)
        snprintf(msg, sizeof(msg), "liveness: %.400s", e ? e->msg : "no answer");
    else
        snprintf(msg, sizeof(msg), "liveness: POST %s answered HTTP %d: %.300s",
                 o->engine->liveness_path, status, body.data ? body.data : "");
    sw_buf_free(&body);
    snprintf(r->liveness, sizeof(r->liveness), "%.*s", (int)sizeof(r->liveness) - 1, msg);
    /* the log says why (a crash, a std::bad_alloc the server caught and answered 500 for) */
    sw_deploy_read_log(o, r, NULL);
    if (!r->status.failed)
        fail(r,
             late              ? SW_BOOT_TIMEOUT
             : r->child.exited ? SW_BOOT_CRASH
                               : SW_BOOT_UNKNOWN,
             SW_PHASE_RUNTIME, SW_PAYLOAD_NONE, msg);
    return sw_err_set(e, SW_ECHILD, "%s", msg); /* a failed boot (its class says the deadline) */
}

/* The record `down` trusts, from what /proc says about the child now that it runs. */
static int write_record(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e)
{
    int rc = 0;
    struct sw_buf line;
    struct sw_pidfile *pf = sw_calloc(1, sizeof(*pf));
    if (!pf)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sw_buf_init(&line, sizeof(pf->cmdline) - 1);
    rc = sw_pidfile_identify(r->child.pid, pf, e);
    if (rc)
        goto out;
    if (pf->start_ticks != r->child.start_ticks) {
        rc = sw_err_set(e, SW_ECHILD, "pid %d changed while it was being recorded",
                        (int)r->child.pid);
        goto out;
    }
    snprintf(pf->endpoint, sizeof(pf->endpoint), "%s", o->endpoint ? o->endpoint : "");
    snprintf(pf->engine, sizeof(pf->engine), "%s", o->engine->name);
    sw_engine_cmd_format(o->cmd, &line);
    snprintf(pf->cmdline, sizeof(pf->cmdline), "%s", sw_buf_cstr(&line));
    snprintf(pf->host, sizeof(pf->host), "%s", o->host && *o->host ? o->host : "127.0.0.1");
    pf->port = o->port;
    snprintf(pf->url, sizeof(pf->url), "%s", r->url);
    snprintf(pf->log, sizeof(pf->log), "%s", o->log_path ? o->log_path : "");
    pf->started_unix = sw_wall_unix();
    pf->supervisor = o->detach ? 0 : getpid();
    /* the watchdog learns the path first: if slipway dies between the two, the watchdog still
     * removes a record it finds (it checks the pid and start time before unlinking) */
    sw__child_watch_record(&r->child, o->pid_file);
    rc = sw_pidfile_write(o->pid_file, pf, e);
out:
    sw_buf_free(&line);
    sw_free(pf);
    return rc;
}

/* Remove the record of a boot that failed, when it is still this child's. */
static void remove_record(const struct sw_up_opts *o, const struct sw_up_result *r)
{
    struct sw_pidfile *pf = sw_calloc(1, sizeof(*pf));
    if (pf && sw_pidfile_read(o->pid_file, pf, NULL) == 0 && pf->pid == r->child.pid &&
        pf->start_ticks == r->child.start_ticks)
        unlink(o->pid_file);
    sw_free(pf);
}

static int boot(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e);

int sw_deploy_up(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e)
{
    int rc = boot(o, r, e);
    if (rc && r->started && o->pid_file)
        remove_record(o, r);
    return rc;
}

static int boot(const struct sw_up_opts *o, struct sw_up_result *r, struct sw_err *e)
{
    int rc = 0;
    memset(r, 0, sizeof(*r));
    r->child.wd_fd = -1;
    const char *host = o->host && *o->host ? o->host : "127.0.0.1";
    const char *connect = host;
    if (!strcmp(host, "0.0.0.0"))
        connect = "127.0.0.1";
    else if (!strcmp(host, "::"))
        connect = "::1";
    if (strchr(connect, ':'))
        snprintf(r->url, sizeof(r->url), "http://[%s]:%u", connect, o->port);
    else
        snprintf(r->url, sizeof(r->url), "http://%s:%u", connect, o->port);
    unsigned grace = o->grace_ms ? o->grace_ms : 10000;

    if (o->preflight) {
        rc = preflight(o, r, e);
        if (rc)
            return rc;
    }
    /* where the record will go must be safe before anything starts */
    if (o->pid_file) {
        char dir[4096];
        const char *slash = strrchr(o->pid_file, '/');
        if (!slash)
            snprintf(dir, sizeof(dir), ".");
        else
            snprintf(dir, sizeof(dir), "%.*s",
                     slash == o->pid_file ? 1 : (int)(slash - o->pid_file), o->pid_file);
        rc = sw_deploy_check_dir(dir, e);
        if (rc)
            return rc;
    }
    struct sw_spawn_opts so;
    memset(&so, 0, sizeof(so));
    so.argv = (const char *const *)o->cmd->argv;
    so.env_add = (const char *const *)o->cmd->env;
    so.n_env_add = o->cmd->envc;
    so.log_path = o->log_path;
    so.rlimit_as = o->rlimit_as;
    so.cgroup_procs = o->cgroup_procs;
    so.die_with_parent = !o->detach;
    so.watchdog = true;
    rc = sw_child_spawn(&so, &r->child, e);
    if (rc)
        return rc;
    r->started = true;
    if (o->pid_file) {
        rc = write_record(o, r, e);
        /* an engine that exited at once (a busy port) has nothing to record: the loop below
         * classifies its failure */
        if (rc && !sw_child_poll(&r->child)) {
            sw_child_stop(&r->child, grace, NULL);
            return rc;
        }
        rc = 0;
    }

    double deadline = r->child.t_start + boot_limit_s(o);
    double next_parse = 0;
    char url[512];
    snprintf(url, sizeof(url), "%s%s", r->url, o->engine->health_path);
    progress(o, r, "starting", 0);
    for (;;) {
        if (o->stop && *o->stop) {
            sw_child_stop(&r->child, grace, NULL);
            sw_deploy_read_log(o, r, NULL);
            return sw_err_set(e, SW_EINTR, "interrupted while %s was booting", r->child.exe);
        }
        if (sw_child_poll(&r->child)) {
            sw_child_stop(&r->child, grace, NULL); /* the rest of its group, the watchdog */
            rc = sw_deploy_read_log(o, r, e);
            if (rc)
                return rc;
            explain_silent_exit(o, r);
            if (!r->status.failed) {
                char st[96], msg[200];
                sw_wait_status_str(r->child.status, st, sizeof(st));
                snprintf(msg, sizeof(msg), "%s while loading", st);
                fail(r, SW_BOOT_UNKNOWN, r->status.phase, SW_PAYLOAD_NONE, msg);
            }
            char st[96];
            return sw_err_set(e, SW_ECHILD, "%s %s: %s: %s", r->child.exe,
                              sw_wait_status_str(r->child.status, st, sizeof(st)),
                              sw_boot_class_name(r->status.failure.cls), r->status.failure.message);
        }
        int status = 0;
        sw__http("GET", url, NULL, NULL, o->api_key, 2000, o->stop, &status, NULL, NULL);
        if (status == 200)
            break;
        double now = sw_now_s();
        if (now >= next_parse) {
            sw_deploy_read_log(o, r, NULL);
            next_parse = now + 0.5;
        }
        progress(o, r, "loading", status);
        if (now > deadline) {
            sw_child_stop(&r->child, grace, NULL);
            sw_deploy_read_log(o, r, NULL);
            char msg[160];
            snprintf(msg, sizeof(msg), "not ready after %u s (last /health status %d)",
                     boot_limit_s(o), status);
            fail(r, SW_BOOT_TIMEOUT, r->status.phase, SW_PAYLOAD_NONE, msg);
            return sw_err_set(e, SW_ETIMEDOUT, "%s", msg);
        }
        if (!nap(o, 200))
            continue; /* the stop check at the top handles it */
    }
    r->ready = true;
    r->boot_s = sw_now_s() - r->child.t_start;
    /* recorded again now that it serves: a wrapper script that exec'd the engine has done so,
     * and the record must name what `down` will find */
    if (o->pid_file) {
        rc = write_record(o, r, e);
        if (rc) {
            sw_child_stop(&r->child, grace, NULL);
            return rc;
        }
    }
    read_log_ready(o, r);
    if (o->liveness) {
        rc = liveness(o, r, e);
        if (rc) {
            sw_child_stop(&r->child, grace, NULL);
            return rc;
        }
    }
    return 0;
}

void sw_up_result_free(struct sw_up_result *r)
{
    if (!r)
        return;
    json_decref(r->bootlog);
    r->bootlog = NULL;
}
