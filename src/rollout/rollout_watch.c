/*
 * rollout/watch: a boot on the host watched until it serves or fails. Each poll (250 ms apart)
 * reads the unit's new journal entries after the cursor, feeds everything read so far to the
 * engine's boot-log parser (the failure the engine printed is classified on the poll that reads
 * it), reads `systemctl show` (a death systemd will restart, NRestarts rising, ActiveState
 * failed, an engine that exited 0) and asks the health path. A stall is judged by progress: no
 * new journal line and no readiness for stall_ms; the boot's whole bound is deadline_ms.
 *
 * What it does not do: follow the journal with a long-lived `journalctl -f` (a poll is one ssh
 * round trip over the shared master connection, and it lets the same loop read the unit's state
 * and the health path); read a container's own log stream (a podman unit's engine output reaches
 * the journal only through the unit's stdout).
 */
#include "rollout_internal.h"

#include <slipway/net.h>

#include <stdio.h>
#include <string.h>

#define POLL_MS     250
#define JOURNAL_MAX (8u << 20)
#define DRAIN_POLLS 16 /* x 150 ms */

void sw__ro_boot_free(struct sw__ro_boot *b)
{
    if (!b)
        return;
    json_decref(b->evidence);
    sw_free(b->journal);
    memset(b, 0, sizeof(*b));
}

/* A request to the endpoint's path, through its route, within the bounds given. */
static void endpoint_req(const struct sw__ro *c, const char *path, unsigned connect_ms,
                         unsigned total_ms, char *url, size_t n, struct sw_net_req *req,
                         struct sw_net_resp *resp)
{
    snprintf(url, n, "%s%s", c->url, path);
    memset(req, 0, sizeof(*req));
    req->unix_socket = c->route.unix_socket;
    req->connect_ms = connect_ms;
    req->total_ms = total_ms;
    memset(resp, 0, sizeof(*resp));
}

static int health(struct sw__ro *c)
{
    char url[700];
    struct sw_net_req req;
    struct sw_net_resp resp;
    endpoint_req(c, c->eng->health_path, 1000, 2000, url, sizeof(url), &req, &resp);
    sw_net_get(NULL, url, &req, &resp, NULL);
    int status = (int)resp.status;
    sw_net_resp_free(&resp);
    return status;
}

int sw__ro_generate(struct sw__ro *c, char *why, size_t n)
{
    char url[700];
    struct sw_net_req req;
    struct sw_net_resp resp;
    endpoint_req(c, c->eng->liveness_path, 2000, 60000, url, sizeof(url), &req, &resp);
    const char *body = c->eng->liveness_body;
    int rc = sw_net_post_json(NULL, url, body, strlen(body), &req, &resp, NULL);
    const char *text = sw_buf_cstr(&resp.body);
    if (rc)
        snprintf(why, n, "POST %s: %s", c->eng->liveness_path, resp.err.msg);
    else if (resp.status < 200 || resp.status > 299)
        snprintf(why, n, "POST %s: HTTP %ld: %.300s", c->eng->liveness_path, resp.status, text);
    else if (!strstr(text, "\"choices\""))
        snprintf(why, n, "POST %s: HTTP %ld without choices: %.300s", c->eng->liveness_path,
                 resp.status, text);
    else
        why[0] = '\0';
    sw_net_resp_free(&resp);
    return why[0] ? -1 : 0;
}

/* The main process exited with status 0: ExecMainCode CLD_EXITED, or (systemd 252 after the
 * unit deactivated) Result=success with status 0. */
static bool exited0(const struct sw_host_unit *u)
{
    if (u->exec_main_status != 0)
        return false;
    return u->exec_main_code == 1 || !strcmp(u->result, "success");
}

static json_t *unit_json(const struct sw_host_unit *u)
{
    return json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "active_state", u->active_state, "sub_state",
                     u->sub_state, "result", u->result, "n_restarts", (json_int_t)u->n_restarts,
                     "main_pid", (json_int_t)u->main_pid, "exec_main_status",
                     (json_int_t)u->exec_main_status, "exec_main_code",
                     (json_int_t)u->exec_main_code);
}

/* The last `lines` lines of text. */
static const char *tail_lines(const char *text, size_t len, int lines)
{
    const char *p = text + len;
    while (p > text && lines >= 0) {
        p--;
        if (*p == '\n' && p + 1 < text + len)
            lines--;
    }
    return lines < 0 ? p + 1 : text;
}

/* New entries of the unit's journal after *cursor appended to log; true when there were. */
static bool pull(struct sw__ro *c, char **cursor, struct sw_buf *log)
{
    bool got = false;
    struct sw_host_journal j;
    memset(&j, 0, sizeof(j));
    if (sw_host_journal_read(&c->h, false, c->unit, *cursor, 1000, 30000, &j, NULL) == 0) {
        for (size_t i = 0; i < j.n; i++) {
            if (j.v[i].message) {
                sw_buf_puts(log, j.v[i].message);
                sw_buf_putc(log, '\n');
            }
        }
        if (j.n && j.cursor) {
            char *nc = sw_strdup(j.cursor);
            if (nc) {
                sw_free(*cursor);
                *cursor = nc;
            }
            got = true;
        }
    }
    sw_host_journal_free(&j);
    return got;
}

/* Everything read so far through the engine's boot-log parser. */
static void classify(struct sw__ro *c, const struct sw_buf *log, struct sw_boot_status *st)
{
    struct sw_bootlog_hints hints = {0};
    hints.live = true;
    hints.exit_code = -1;
    memset(st, 0, sizeof(*st));
    json_t *bl = NULL;
    if (log->len && c->eng->bootlog)
        c->eng->bootlog(log->data, log->len, c->unit, &hints, &bl, st, NULL);
    json_decref(bl);
}

int sw__ro_watch(struct sw__ro *c, const char *cursor0, struct sw__ro_boot *b, struct sw_err *e)
{
    int rc = 0;
    struct sw_buf log;
    sw_buf_init(&log, JOURNAL_MAX);
    char *cursor = cursor0 ? sw_strdup(cursor0) : NULL;
    int64_t deadline = c->o->deadline_ms > 0 ? c->o->deadline_ms : 10 * 60 * 1000;
    int64_t stall = c->o->stall_ms > 0 ? c->o->stall_ms : 120 * 1000;
    uint64_t t0 = sw_now_ns(), progress = t0;
    /* an explicit start flushes NRestarts (systemd's flush_n_restarts): any restart seen after
     * it is this boot's */
    struct sw_host_unit base;
    memset(&base, 0, sizeof(base));
    bool have_base = true;
    int unreachable = 0; /* consecutive polls on which the host could not be reached */
    char unreachable_msg[1024] = "";
    memset(b, 0, sizeof(*b));

    for (;;) {
        uint64_t now = sw_now_ns();
        /* 1. the journal since the cursor; 2. what the engine printed, classified */
        if (pull(c, &cursor, &log))
            progress = now;
        struct sw_boot_status st;
        classify(c, &log, &st);

        /* 3. the unit as systemd sees it */
        struct sw_host_unit u;
        memset(&u, 0, sizeof(u));
        struct sw_err ue;
        sw_err_clear(&ue);
        bool have_u = sw_host_unit_show(&c->h, false, c->unit, 30000, &u, &ue) == 0;
        if (!have_u && ue.code == SW_ENET) {
            unreachable++;
            snprintf(unreachable_msg, sizeof(unreachable_msg), "%s", ue.msg);
        } else {
            unreachable = 0;
        }

        const char *cls = NULL;
        char msg[1024] = "";
        if (st.failed && st.failure.cls != SW_BOOT_NOT_THIS_ENGINE) {
            cls = sw_boot_class_name(st.failure.cls);
            snprintf(msg, sizeof(msg), "the engine printed (journal line %d): %s", st.failure.line,
                     st.failure.message);
        } else if (have_u && have_base && u.n_restarts > base.n_restarts) {
            cls = "crash_loop";
            snprintf(msg, sizeof(msg),
                     "NRestarts %llu -> %llu: the engine died (ExecMainCode=%lld "
                     "ExecMainStatus=%lld) and systemd started it again",
                     (unsigned long long)base.n_restarts, (unsigned long long)u.n_restarts,
                     (long long)u.exec_main_code, (long long)u.exec_main_status);
        } else if (have_u && !strcmp(u.sub_state, "auto-restart")) {
            bool exit0 = exited0(&u);
            cls = exit0 ? "exit0" : "crash_loop";
            snprintf(msg, sizeof(msg),
                     "the engine %s (ExecMainCode=%lld ExecMainStatus=%lld); systemd will "
                     "restart it (NRestarts=%llu)",
                     exit0 ? "exited 0 while it should serve" : "died", (long long)u.exec_main_code,
                     (long long)u.exec_main_status, (unsigned long long)u.n_restarts);
        } else if (have_u && (!strcmp(u.active_state, "failed") ||
                              (!strcmp(u.active_state, "inactive") && now - t0 > 2000000000ull))) {
            bool exit0 = exited0(&u);
            cls = exit0 ? "exit0" : "unit_failed";
            snprintf(msg, sizeof(msg), "the unit is %s/%s (Result=%s ExecMainStatus=%lld)",
                     u.active_state, u.sub_state, u.result, (long long)u.exec_main_status);
        }
        if (cls && !st.failed) {
            /* the unit says it died: what the engine printed last may reach the journal a
             * moment after the exit; its own words name the cause better than the state. Up to
             * 2.4 s: with 8 builds on 2 cores journald delivered a dead engine's last lines more
             * than 600 ms after systemd's state showed the death (2026-12-03, faults d and f
             * read as crash_loop with 4 x 150 ms) */
            for (int i = 0; i < DRAIN_POLLS && !st.failed; i++) {
                sw_sleep_ms(150);
                pull(c, &cursor, &log);
                classify(c, &log, &st);
            }
            if (st.failed && st.failure.cls != SW_BOOT_NOT_THIS_ENGINE) {
                char was[1024];
                snprintf(was, sizeof(was), "%s", msg);
                cls = sw_boot_class_name(st.failure.cls);
                snprintf(msg, sizeof(msg), "the engine printed (journal line %d): %.500s; %.400s",
                         st.failure.line, st.failure.message, was);
            }
        }
        if (cls) {
            snprintf(b->cls, sizeof(b->cls), "%s", cls);
            snprintf(b->msg, sizeof(b->msg), "%s", msg);
            b->evidence = have_u ? unit_json(&u) : json_object();
            if (b->evidence && st.failed)
                sw_json_set_new(b->evidence, "boot_failure", sw_boot_failure_to_json(&st.failure));
            break;
        }

        /* 4. readiness */
        if (health(c) == 200) {
            b->ready = true;
            b->ready_ns = sw_now_ns();
            b->evidence = have_u ? unit_json(&u) : json_object();
            break;
        }
        /* the transport is gone (and the engine does not answer): nothing on the host can be
         * read or changed from here; the caller does not roll back over a dead transport */
        if (unreachable >= 3) {
            snprintf(b->cls, sizeof(b->cls), "ssh_dropped");
            snprintf(b->msg, sizeof(b->msg),
                     "the host could not be reached on %d polls in a row: %.900s", unreachable,
                     unreachable_msg);
            b->evidence = json_object();
            break;
        }
        now = sw_now_ns();
        if ((int64_t)((now - progress) / 1000000) > stall) {
            snprintf(b->cls, sizeof(b->cls), "stall");
            snprintf(b->msg, sizeof(b->msg),
                     "no journal line and no readiness for %lld ms (%d lines so far)",
                     (long long)stall, st.n_lines);
            b->evidence = have_u ? unit_json(&u) : json_object();
            break;
        }
        if ((int64_t)((now - t0) / 1000000) > deadline) {
            snprintf(b->cls, sizeof(b->cls), "timeout");
            snprintf(b->msg, sizeof(b->msg), "not ready within %lld ms (still printing)",
                     (long long)deadline);
            b->evidence = have_u ? unit_json(&u) : json_object();
            break;
        }
        sw_sleep_ms(POLL_MS);
    }
    /* one more read so the excerpt holds what the engine printed last */
    if (!b->ready)
        pull(c, &cursor, &log);
    const char *tl = tail_lines(sw_buf_cstr(&log), log.len, 40);
    b->journal = sw_strdup(tl);
    if (!b->journal)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    sw_free(cursor);
    sw_buf_free(&log);
    return rc;
}

/* Does the journal text say the kernel's OOM killer ended a process of the unit? systemd logs
 * "A process of this unit has been killed by the OOM killer." and "Failed with result
 * 'oom-kill'." when it reads the OOM event from the unit's cgroup (memory.events, cgroup v2). */
static const char *oom_line(const char *log)
{
    static const char *const needles[] = {"killed by the OOM killer", "result 'oom-kill'",
                                          "oom-kill"};
    for (size_t i = 0; i < SW_ARRAY_LEN(needles); i++) {
        const char *hit = strstr(log, needles[i]);
        if (hit) {
            while (hit > log && hit[-1] != '\n')
                hit--;
            return hit;
        }
    }
    return NULL;
}

/* The engine's own boot-log classifier on what it printed since the probe began: an
 * out-of-memory failure, its line in *line (pointing into log). */
static bool engine_oom(struct sw__ro *c, const struct sw_buf *log, const char **line)
{
    struct sw_boot_status st;
    classify(c, log, &st);
    if (!st.failed || st.failure.cls != SW_BOOT_OOM || st.failure.line < 1)
        return false;
    const char *p = sw_buf_cstr(log);
    for (int n = 1; n < st.failure.line && p; n++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    *line = p ? p : st.failure.message;
    return true;
}

int sw__ro_runtime_death(struct sw__ro *c, const char *cursor, const char *during,
                         struct sw__ro_death *d)
{
    struct sw_buf log;
    sw_buf_init(&log, JOURNAL_MAX);
    memset(d, 0, sizeof(*d));
    char *cur = cursor ? sw_strdup(cursor) : NULL;
    struct sw_host_unit u;
    memset(&u, 0, sizeof(u));
    bool have_u = false;
    /* systemd writes its lines about the death a moment after it: read a few times */
    for (int i = 0; i < 6; i++) {
        pull(c, &cur, &log);
        memset(&u, 0, sizeof(u));
        have_u = sw_host_unit_show(&c->h, false, c->unit, 30000, &u, NULL) == 0;
        const char *text = sw_buf_cstr(&log);
        if (oom_line(text) || strstr(text, "status=9/KILL") || (have_u && u.n_restarts > 0) ||
            (have_u && strcmp(u.active_state, "active")))
            d->died = true;
        if (oom_line(text) || (have_u && !strcmp(u.result, "oom-kill")))
            break;
        if (!d->died && i >= 1)
            break;
        sw_sleep_ms(250);
    }
    const char *text = sw_buf_cstr(&log);
    const char *ol = oom_line(text);
    bool killed9 = strstr(text, "status=9/KILL") != NULL;
    uint64_t mm = c->ep->service.memory_max.set ? c->ep->service.memory_max.v : 0;
    char mms[32] = "";
    if (mm)
        sw_fmt_bytes(mm, mms, sizeof(mms));
    if (ol || (have_u && !strcmp(u.result, "oom-kill"))) {
        d->died = true;
        d->oom = true;
        snprintf(d->cls, sizeof(d->cls), "runtime_oom");
        snprintf(d->msg, sizeof(d->msg),
                 "the engine was killed by the kernel's OOM killer during %s%s%s (Result=%s): "
                 "%.300s",
                 during, mm ? " under MemoryMax=" : "", mms, have_u ? u.result : "?",
                 ol ? ol : "Result=oom-kill");
    } else if (killed9 && mm) {
        /* systemd saw a SIGKILL nobody asked for but no OOM event: on a cgroup v1 memory
         * controller (or none it can read) it cannot; the kernel's OOM killer is what sends an
         * unrequested SIGKILL to a process at its memory limit */
        d->died = true;
        d->oom = true;
        snprintf(d->cls, sizeof(d->cls), "runtime_oom");
        snprintf(d->msg, sizeof(d->msg),
                 "the engine was SIGKILLed during %s under MemoryMax=%s with no stop asked for "
                 "(journal: status=9/KILL; the unit now NRestarts=%llu Result=%s: systemd read "
                 "no OOM event from the unit's cgroup, which it reads only from cgroup v2's "
                 "memory.events; the kernel's OOM killer sends exactly this signal)",
                 during, mms, have_u ? (unsigned long long)u.n_restarts : 0ull,
                 have_u ? u.result : "?");
    } else if (d->died && engine_oom(c, &log, &ol)) {
        /* no kernel OOM, but the engine's own words: a device allocation that failed (vLLM's
         * torch.OutOfMemoryError in a worker, llama.cpp's bad_alloc), after which it died */
        d->oom = true;
        snprintf(d->cls, sizeof(d->cls), "runtime_oom");
        snprintf(d->msg, sizeof(d->msg),
                 "the engine ran out of device memory during %s and died (ActiveState=%s "
                 "Result=%s NRestarts=%llu): %.*s",
                 during, have_u ? u.active_state : "?", have_u ? u.result : "?",
                 have_u ? (unsigned long long)u.n_restarts : 0ull,
                 (int)SW_MIN(strcspn(ol, "\n"), (size_t)400), ol);
    } else if (d->died) {
        snprintf(d->cls, sizeof(d->cls), "runtime_death");
        snprintf(d->msg, sizeof(d->msg),
                 "the engine died during %s (ActiveState=%s Result=%s NRestarts=%llu)", during,
                 have_u ? u.active_state : "?", have_u ? u.result : "?",
                 have_u ? (unsigned long long)u.n_restarts : 0ull);
    }
    if (d->died) {
        d->evidence = have_u ? unit_json(&u) : json_object();
        if (d->evidence) {
            sw_json_set_str(d->evidence, "class", d->cls);
            sw_json_set_str(d->evidence, "phase", "runtime");
            sw_json_set_str(d->evidence, "during", during);
            if (mm)
                sw_json_set_int(d->evidence, "memory_max", (int64_t)mm);
        }
        /* the excerpt around the death (a restart's boot lines come after it): from 20 lines
         * before the line that names it, 40 lines at most */
        const char *at = ol ? ol : strstr(text, "status=9/KILL");
        const char *from = at ? tail_lines(text, (size_t)(at - text), 20) : NULL;
        if (!from) {
            d->journal = sw_strdup(tail_lines(text, log.len, 40));
        } else {
            const char *end = from;
            for (int k = 0; k < 40 && *end; k++) {
                const char *nl = strchr(end, '\n');
                end = nl ? nl + 1 : end + strlen(end);
            }
            d->journal = sw_strndup(from, (size_t)(end - from));
        }
    }
    sw_free(cur);
    sw_buf_free(&log);
    return 0;
}
