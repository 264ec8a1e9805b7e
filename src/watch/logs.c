/*
 * watch/logs: `slipway logs ENDPOINT`: the journal of the endpoint's unit (its name from the one
 * render, unit.h) read from its host with journalctl (-f follows, --since, --boot), each line
 * passed through the engine's own boot-log parser so a failure line (an OOM, a compile
 * constraint, a bad payload) comes out with its class and phase.
 *
 * An endpoint `up` started on this machine (its record RUN_DIR/NAME.pid names its log) is read
 * from that log instead, the same way line by line: the last N lines, or followed until the
 * process exits or stop is set. Its lines carry no time, so --since applies to the run as a
 * whole (all of it when the run began after T, none when nothing was written after T); inside
 * the run it goes by the time since start that llama.cpp puts on each line, and is refused for
 * an engine whose lines carry none; --boot has no meaning there.
 *
 * What it deliberately does not do: keep anything (the journal and up's log do), or read a log
 * whose record is forged (sw_pidfile_read's refusals hold).
 */
#include "watch_internal.h"

#include <slipway/deploy.h>
#include <slipway/engine.h>
#include <slipway/host.h>
#include <slipway/unit.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct lctx {
    const struct sw_engine *eng;
    const struct sw_watch_logs_opts *o;
    /* up's log with --since inside its run: a line is shown from since_ms into the run on, by
     * the time since start llama.cpp's log puts first (common/log.cpp: "M.SS.mmm.uuu"); a line
     * without one goes with the line before it */
    bool by_elapsed, showing;
    int64_t since_ms;
};

/* llama.cpp's "M.SS.mmm.uuu " line prefix as milliseconds, -1 when the line has none. */
static int64_t elapsed_ms(const char *s, size_t len)
{
    unsigned m, sec, ms, us;
    int used = 0;
    char head[40];
    snprintf(head, sizeof(head), "%.*s", (int)SW_MIN(len, sizeof(head) - 1), s);
    if (sscanf(head, "%u.%2u.%3u.%3u %n", &m, &sec, &ms, &us, &used) != 4 || !used)
        return -1;
    return (int64_t)m * 60000 + sec * 1000 + ms;
}

static int on_line(void *ctx, const char *line, size_t len)
{
    struct lctx *c = ctx;
    char buf[4096];
    snprintf(buf, sizeof(buf), "%.*s", (int)SW_MIN(len, sizeof(buf) - 1), line);
    const char *cls = NULL, *phase = NULL;
    /* one line at a time: a class the parser names from that line alone (an OOM, a compile
     * constraint, a missing payload); "unknown" and "not this engine" say nothing of one line */
    struct sw_boot_status st;
    memset(&st, 0, sizeof(st));
    json_t *out = NULL;
    if (c->eng && c->eng->bootlog &&
        !c->eng->bootlog(buf, strlen(buf), "journal", NULL, &out, &st, NULL) && st.failed &&
        st.failure.cls != SW_BOOT_UNKNOWN && st.failure.cls != SW_BOOT_NOT_THIS_ENGINE) {
        cls = sw_boot_class_name(st.failure.cls);
        phase = sw_boot_phase_name(st.failure.phase);
    }
    json_decref(out);
    if (c->o->on_line)
        c->o->on_line(c->o->ctx, buf, cls, phase);
    return c->o->stop && *c->o->stop;
}

/* --since T as unix seconds: "@UNIX", "YYYY-MM-DD[ HH:MM[:SS]]" (local time, as journalctl),
 * or "DUR ago" ("1h ago", "90 s ago"). */
static int since_unix(const char *s, int64_t *t, struct sw_err *e)
{
    struct tm tm;
    char dur[64];
    const char *end;
    size_t n = strlen(s);
    if (s[0] == '@') {
        char *x = NULL;
        long long v = strtoll(s + 1, &x, 10);
        if (x != s + 1 && !*x) {
            *t = v;
            return 0;
        }
    } else if (n > 4 && !strcmp(s + n - 4, " ago") && n - 4 < sizeof(dur)) {
        /* "1h ago", "90 s ago", and journalctl's words: "1 hour ago", "2 days ago" */
        static const struct {
            const char *word;
            int64_t ms;
        } units[] = {{"second", 1000},   {"seconds", 1000},   {"sec", 1000},
                     {"minute", 60000},  {"minutes", 60000},  {"min", 60000},
                     {"hour", 3600000},  {"hours", 3600000},  {"day", 86400000},
                     {"days", 86400000}, {"week", 604800000}, {"weeks", 604800000}};
        snprintf(dur, sizeof(dur), "%.*s", (int)(n - 4), s);
        char *x = NULL;
        double v = strtod(dur, &x);
        while (x && *x == ' ')
            x++;
        for (size_t i = 0; x != dur && x && i < SW_ARRAY_LEN(units); i++)
            if (!strcmp(x, units[i].word) && v >= 0) {
                *t = (int64_t)time(NULL) - (int64_t)(v * (double)units[i].ms) / 1000;
                return 0;
            }
        size_t k = 0;
        for (size_t i = 0; dur[i]; i++)
            if (dur[i] != ' ')
                dur[k++] = dur[i];
        dur[k] = '\0';
        int64_t ms;
        if (!sw_parse_duration_ms(dur, &ms, NULL)) {
            *t = (int64_t)time(NULL) - ms / 1000;
            return 0;
        }
    } else {
        static const char *const fmts[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", NULL};
        for (size_t i = 0; fmts[i]; i++) {
            memset(&tm, 0, sizeof(tm));
            end = strptime(s, fmts[i], &tm);
            if (end && !*end) {
                tm.tm_isdst = -1;
                *t = (int64_t)mktime(&tm);
                return 0;
            }
        }
    }
    return sw_err_set(e, SW_EINVAL,
                      "--since %s: for up's log give '@UNIX', 'YYYY-MM-DD [HH:MM[:SS]]' or "
                      "'DUR ago' (1h ago)",
                      s);
}

/* Feed whole lines of buf[0..*len) to on_line; the partial last line stays at the front. */
static int feed(struct lctx *c, char *buf, size_t *len, bool flush)
{
    size_t at = 0;
    for (;;) {
        char *nl = memchr(buf + at, '\n', *len - at);
        if (!nl && !(flush && at < *len))
            break;
        size_t l = nl ? (size_t)(nl - (buf + at)) : *len - at;
        if (c->by_elapsed) {
            int64_t t = elapsed_ms(buf + at, l);
            if (t >= 0)
                c->showing = t >= c->since_ms;
        }
        if ((!c->by_elapsed || c->showing) && on_line(c, buf + at, l))
            return 1;
        at += l + (nl ? 1 : 0);
    }
    memmove(buf, buf + at, *len - at);
    *len -= at;
    return 0;
}

/* Where the last n lines of fd's first size bytes begin (at most 4 MiB back). */
static off_t tail_start(int fd, off_t size, size_t n)
{
    char b[8192];
    off_t pos = size, floor = size > (4 << 20) ? size - (4 << 20) : 0;
    size_t seen = 0;
    while (pos > floor) {
        size_t k = (size_t)SW_MIN((off_t)sizeof(b), pos - floor);
        if (pread(fd, b, k, pos - (off_t)k) != (ssize_t)k)
            return floor;
        for (size_t i = k; i-- > 0;) {
            /* the newline that ends the file's last line does not count */
            if (b[i] == '\n' && pos - (off_t)k + (off_t)i != size - 1 && ++seen >= n)
                return pos - (off_t)k + (off_t)i + 1;
        }
        pos -= (off_t)k;
    }
    return floor;
}

/* No record, but up's log of the endpoint's last run is there (RUN_DIR/NAME.log beside where
 * its record was): *ur as a record of an ended run (pid 0; its start unknown). */
static bool left_log(const struct sw_fleet_endpoint *ep, struct sw_up_record *ur)
{
    char pid[4096];
    memset(ur, 0, sizeof(*ur));
    size_t n;
    if (sw_deploy_pid_path(ep->name, pid, sizeof(pid), NULL) || (n = strlen(pid)) < 4)
        return false;
    snprintf(ur->rec.log, sizeof(ur->rec.log), "%.*s.log", (int)(n - 4), pid);
    snprintf(ur->rec.endpoint, sizeof(ur->rec.endpoint), "%s", ep->name);
    snprintf(ur->rec.engine, sizeof(ur->rec.engine), "%s", sw_fleet_engine_name(ep->engine));
    ur->verdict = SW_PID_GONE;
    return access(ur->rec.log, R_OK) == 0;
}

/* When the file was made (statx's birth time; 0 unknown): nothing in it was written before. */
static int64_t born(const char *path)
{
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_BTIME, &sx) || !(sx.stx_mask & STATX_BTIME))
        return 0;
    return (int64_t)sx.stx_btime.tv_sec;
}

/* The endpoint's `up` log on this machine (module comment). */
static int local_logs(struct lctx *c, const struct sw_up_record *ur, struct sw_err *e)
{
    const struct sw_watch_logs_opts *o = c->o;
    const char *path = ur->rec.log;
    if (o->set_boot)
        return sw_err_set(e, SW_EINVAL,
                          "%s: --boot reads a journal; up's log (%s) holds one run of the engine",
                          ur->rec.endpoint, path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_err_set(e, SW_ENOENT, "%s: up's log %s: %s", ur->rec.endpoint, path,
                          strerror(errno));
    struct stat sb;
    int rc = fstat(fd, &sb) ? sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno)) : 0;
    off_t from = 0;
    if (!rc && o->since) {
        int64_t t = 0;
        rc = since_unix(o->since, &t, e);
        if (!rc && t > (int64_t)sb.st_mtime)
            from = sb.st_size; /* nothing written since */
        else if (!rc && t > ur->rec.started_unix && ur->rec.started_unix > 0 &&
                 !strcmp(ur->rec.engine, "llama.cpp")) {
            c->by_elapsed = true;
            c->since_ms = (t - ur->rec.started_unix) * 1000;
        } else if (!rc && !ur->rec.started_unix && t <= born(path))
            ; /* the file was made after T: all of it was written since */
        else if (!rc && !ur->rec.started_unix)
            rc = sw_err_set(e, SW_EUNSUPPORTED,
                            "%s: --since %s falls inside what up's log %s holds (last written "
                            "@%lld), and that run's start is unknown (its record went with it): "
                            "use -n N",
                            ur->rec.endpoint, o->since, path, (long long)sb.st_mtime);
        else if (!rc && t > ur->rec.started_unix)
            rc = sw_err_set(e, SW_EUNSUPPORTED,
                            "%s: up's log %s has no time since start on its lines (%s) and "
                            "--since %s falls inside its run (started @%lld, last written "
                            "@%lld): use -n N",
                            ur->rec.endpoint, path, ur->rec.engine, o->since,
                            (long long)ur->rec.started_unix, (long long)sb.st_mtime);
    } else if (!rc) {
        from = tail_start(fd, sb.st_size, o->lines ? o->lines : o->follow ? 10 : 200);
    }
    char buf[16384];
    size_t len = 0;
    bool stopped = false;
    uint64_t last_check = sw_now_ns();
    while (!rc && !stopped) {
        ssize_t k = pread(fd, buf + len, sizeof(buf) - 1 - len, from);
        if (k < 0) {
            rc = sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
            break;
        }
        from += k;
        len += (size_t)k;
        /* a line longer than the buffer is cut where the buffer ends */
        stopped = feed(c, buf, &len, len == sizeof(buf) - 1) != 0;
        if (k > 0 || stopped)
            continue;
        if (!o->follow || (o->stop && *o->stop))
            break;
        /* following: until the process exits (checked each second; what it wrote last is read) */
        if (sw_now_ns() - last_check >= 1000000000ull) {
            last_check = sw_now_ns();
            if (ur->verdict != SW_PID_ALIVE ||
                sw_pidfile_check(&ur->rec, NULL, 0) != SW_PID_ALIVE) {
                k = pread(fd, buf + len, sizeof(buf) - 1 - len, from);
                if (k > 0)
                    len += (size_t)k;
                break;
            }
        }
        sw_sleep_ms(200);
    }
    if (!rc && !stopped)
        feed(c, buf, &len, true);
    close(fd);
    return rc;
}

int sw_watch_logs(const struct sw_fleet *f, const char *endpoint,
                  const struct sw_watch_logs_opts *o, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, endpoint);
    if (!ep)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s'",
                          f->path ? f->path : "the fleet", endpoint);
    /* started here by `up`: its record names its log; one that ended (its record gone with
     * it, a boot that failed) left the log beside where the record was */
    struct sw_up_record ur;
    memset(&ur, 0, sizeof(ur));
    bool here = !ep->host || ep->host->transport == SW_FLEET_LOCAL;
    bool rec =
        !sw_deploy_up_record(ep->name, &ur, NULL) && ur.present && !ur.unreadable && ur.rec.log[0];
    if ((rec && ur.verdict == SW_PID_ALIVE) || (here && (rec || left_log(ep, &ur)))) {
        struct lctx c = {.eng = sw_engine_find(sw_fleet_engine_name(ep->engine)), .o = o};
        bool alive = rec && ur.verdict == SW_PID_ALIVE;
        if (o->from)
            snprintf(o->from, o->from_n, "up's log %s (%s)", ur.rec.log,
                     alive ? "running" : "the engine has ended");
        return local_logs(&c, &ur, e);
    }
    if (!ep->host)
        return sw_err_set(e, SW_EINVAL,
                          "%s: endpoint %s has no host: its unit's journal is on "
                          "none (an engine `up` runs keeps its log in its run "
                          "directory)",
                          f->path ? f->path : "the fleet", endpoint);
    struct sw_unit_render r;
    memset(&r, 0, sizeof(r));
    int rc = sw_unit_render_endpoint(f, ep, &r, e);
    if (rc)
        return rc;
    char unit[300], lines[32], boot[32];
    snprintf(unit, sizeof(unit), "%s.service", r.name);
    if (o->from)
        snprintf(o->from, o->from_n, "the journal of %s on %s", unit, ep->host->name);
    bool user = r.scope == SW_FLEET_SCOPE_USER;
    sw_unit_render_free(&r);
    const char *argv[16];
    size_t n = 0;
    argv[n++] = "journalctl";
    if (user)
        argv[n++] = "--user";
    argv[n++] = "-u";
    argv[n++] = unit;
    argv[n++] = "-o";
    argv[n++] = "cat";
    argv[n++] = "--no-pager";
    if (o->since) {
        argv[n++] = "--since";
        argv[n++] = o->since;
    }
    if (o->set_boot) {
        snprintf(boot, sizeof(boot), "%d", o->boot);
        argv[n++] = "--boot";
        argv[n++] = boot;
    }
    if (o->follow) {
        argv[n++] = "-f";
    } else if (!o->since) {
        snprintf(lines, sizeof(lines), "%zu", o->lines ? o->lines : 200);
        argv[n++] = "-n";
        argv[n++] = lines;
    }
    argv[n] = NULL;
    struct sw_host h;
    rc = sw_host_open_fleet(&h, ep->host, 5, e);
    if (rc)
        return rc;
    struct lctx c = {.eng = sw_engine_find(sw_fleet_engine_name(ep->engine)), .o = o};
    struct sw_host_run_opts ro = {.deadline_ms = o->deadline_ms > 0 ? o->deadline_ms
                                                 : o->follow        ? INT64_MAX / 4
                                                                    : 30000,
                                  .on_line = on_line,
                                  .ctx = &c};
    struct sw_host_result hr;
    rc = sw_host_run(&h, argv, &ro, &hr, e);
    if (rc == SW_ETIMEDOUT && o->follow)
        rc = 0;
    sw_host_result_free(&hr);
    sw_host_disconnect(&h);
    return rc;
}
