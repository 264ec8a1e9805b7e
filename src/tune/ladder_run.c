/*
 * ladder's rung runners (include/slipway/ladder.h): each boots the endpoint with the rung's
 * value, puts the worst-case request to it (the probe's worst_case check: a prompt of half the
 * window asking for the rest of it), stops it, records the boot in the ledger, and says what
 * happened as a ladder class.
 *
 *   sim      the engine stand-in in a forked child (its loop and its log are the child's); the
 *            parent reads the bound port from a pipe or, when the child exits first, the
 *            engine's failure from the log through the engine's own boot-log parser;
 *   local    the engine from the plan's argv through sw_deploy_up, optionally in a memory cgroup
 *            of its own (v1 memory.limit_in_bytes or v2 memory.max under this process's cgroup),
 *            whose peak and oom_kill count are the measurement;
 *   rollout  sw_rollout_deploy on the endpoint's host.
 *
 * What they do not do: keep an engine running after the rung (the ladder asks a question; the
 * deploy of the answer is `slipway deploy`), or retry a rung.
 */
#include <slipway/deploy.h>
#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/ladder.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>
#include <slipway/probe.h>
#include <slipway/rollout.h>
#include <slipway/sim.h>

#include "ladder_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOG_MAX (16u << 20)

static unsigned g_seq;

static int log_path(char *out, size_t n, const char *what, struct sw_err *e)
{
    char dir[4096];
    int rc = sw_run_dir(dir, sizeof(dir), e);
    if (rc)
        return rc;
    snprintf(out, n, "%s/ladder-%d-%u-%s.log", dir, (int)getpid(), ++g_seq, what);
    return 0;
}

/* The engine's boot-log parser over a log file: *bootlog {"failure", "report", ...}. */
static json_t *read_bootlog(const char *engine, const char *path, bool exited, int code,
                            char **text_out)
{
    char *text = NULL;
    size_t len = 0;
    json_t *out = NULL;
    const struct sw_engine *eng = sw_engine_find(engine);
    if (!eng || sw_read_file(path, LOG_MAX, &text, &len, NULL))
        return NULL;
    struct sw_bootlog_hints h;
    memset(&h, 0, sizeof(h));
    h.exited = exited;
    h.exit_code = code;
    h.live = !exited;
    if (eng->bootlog(text, len, path, &h, &out, NULL, NULL))
        out = NULL;
    if (text_out)
        *text_out = text;
    else
        sw_free(text);
    return out;
}

/* vLLM's KV refusal names the largest max_model_len the pool holds. */
static int64_t engine_max_of(const char *text)
{
    static const char key[] = "estimated maximum model length is ";
    const char *p = text ? strstr(text, key) : NULL;
    if (!p)
        return 0;
    return strtoll(p + sizeof(key) - 1, NULL, 10);
}

static void take_failure(struct sw_ladder_outcome *out, const json_t *failure)
{
    out->cls = sw_ladder_classify(failure);
    json_t *t = json_object_get(failure, "tried_bytes");
    json_t *fr = json_object_get(failure, "free_bytes");
    if (json_is_integer(t) && json_integer_value(t) > 0)
        out->tried_bytes = (uint64_t)json_integer_value(t);
    if (json_is_integer(fr) && json_integer_value(fr) >= 0)
        out->free_bytes = (uint64_t)json_integer_value(fr);
    const char *cls = json_string_value(json_object_get(failure, "class"));
    const char *phase = json_string_value(json_object_get(failure, "phase"));
    const char *msg = json_string_value(json_object_get(failure, "message"));
    snprintf(out->detail, sizeof(out->detail), "%s%s%s: %.400s", cls ? cls : "failed",
             phase ? " at " : "", phase ? phase : "", msg ? msg : "");
}

/* The worst-case request against a serving engine. *passed, and the check's evidence. */
static int worst_case(const char *url, const struct sw_fleet_endpoint *ep, int64_t probe_ms,
                      bool *passed, char *why, size_t n, json_t **ev, struct sw_err *e)
{
    struct sw_probe_target t;
    struct sw_probe_report rep;
    memset(&t, 0, sizeof(t));
    t.url = url;
    t.engine = sw_fleet_engine_name(ep->engine);
    t.model = ep->alias.v;
    t.vision = -1;
    t.only = "worst_case";
    t.worst_case = true;
    t.deadline_ms = (unsigned)(probe_ms > 0 ? probe_ms : 5 * 60 * 1000);
    int rc = sw_probe_run(&t, &rep, e);
    *passed = false;
    if (!rc) {
        for (size_t i = 0; i < rep.n; i++) {
            const struct sw_probe_result *c = &rep.v[i];
            if (strcmp(c->name, "worst_case"))
                continue;
            *passed = c->status == SW_PROBE_PASS;
            snprintf(why, n, "worst_case %s: %s%s%s", sw_probe_status_name(c->status), c->evidence,
                     c->reason[0] ? "; " : "", c->reason);
            *ev = json_object();
            if (*ev) {
                sw_json_set_str(*ev, "status", sw_probe_status_name(c->status));
                sw_json_set_str(*ev, "evidence", c->evidence);
                if (c->data)
                    json_object_set(*ev, "data", c->data);
            }
        }
        if (!why[0])
            snprintf(why, n, "worst_case did not run: %s", rep.gave_up);
    }
    sw_probe_report_free(&rep);
    return rc;
}

static int record_boot(struct sw_ledger *l, const struct sw_fleet_endpoint *ep,
                       const struct sw_plan *pl, const json_t *bootlog, const json_t *failure,
                       const char *text, int64_t started, double ms, const char *source,
                       int64_t *id, struct sw_err *e)
{
    *id = 0;
    if (!l)
        return 0;
    json_t *shape = sw_plan_shape(ep);
    if (!shape)
        return sw_err_set(e, SW_ENOMEM, "out of memory (boot shape)");
    struct sw_ledger_boot b;
    memset(&b, 0, sizeof(b));
    b.endpoint = ep->name;
    b.shape = shape;
    b.engine = sw_fleet_engine_name(ep->engine);
    b.started_at = started;
    b.ended_at = sw_wall_unix();
    b.duration_ms = (int64_t)ms;
    b.predicted = pl && json_is_object(pl->predicted) ? pl->predicted : NULL;
    const json_t *rep = json_object_get(bootlog, "report");
    b.report = json_is_object(rep) ? rep : NULL;
    b.failure = failure && json_is_object(failure) ? failure : NULL;
    b.log_excerpt = text;
    b.source = source;
    int rc = sw_ledger_record_boot(l, &b, id, e);
    json_decref(shape);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * sim
 */
static int sim_child(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep, int outfd,
                     int logfd)
{
    struct sw_sim_config c;
    struct sw_plan pl;
    struct sw_sim *s = NULL;
    struct sw_err e;
    int st = 1;
    sw_err_clear(&e);
    sw_sim_config_init(&c);
    c.load_ms = 0;
    /* the ladder asks whether it survives, not how fast: no simulated step time */
    memset(&c.timing, 0, sizeof(c.timing));
    c.log = fdopen(logfd, "w");
    c.out = fdopen(outfd, "w");
    if (!c.log || !c.out)
        return 1;
    setvbuf(c.out, NULL, _IONBF, 0);
    if (ep->alias.v)
        c.alias = ep->alias.v;
    int prc = sw_plan_endpoint(f, ep, NULL, &pl, &e);
    int rc;
    if (ep->engine == SW_FLEET_LLAMACPP)
        rc = sw_sim_new_llamacpp(&pl, prc, &c, &s, &e);
    else
        rc = sw_sim_new_vllm(prc ? NULL : pl.engine_plan, ep->payload.path.v,
                             ep->shape.seqs.set ? (int64_t)ep->shape.seqs.v : 0, &c, &s, &e);
    if (!rc)
        rc = sw_sim_run(s, &st, &e);
    if (rc) {
        fprintf(c.log, "slipway ladder: the sim could not run: %s\n", e.msg);
        st = 1;
    }
    sw_sim_free(s);
    sw_plan_free(&pl);
    fflush(c.log);
    return st;
}

static int wait_child(pid_t pid, unsigned grace_ms, int *status)
{
    uint64_t end = sw_now_ns() + (uint64_t)grace_ms * 1000000u;
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid)
            return 0;
        if (w < 0 && errno != EINTR)
            return -1;
        if (sw_now_ns() >= end) {
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR)
                ;
            return 1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int sw_ladder_run_sim(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                      enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                      struct sw_err *e)
{
    const struct sw_ladder_opts *o = ctx;
    char lp[4200], line[256];
    int pfd[2] = {-1, -1}, logfd = -1, status = 0;
    char *text = NULL;
    json_t *bl = NULL;
    struct sw_plan pl;
    memset(&pl, 0, sizeof(pl));
    if (ep->engine != SW_FLEET_LLAMACPP && ep->engine != SW_FLEET_VLLM)
        return sw_err_set(e, SW_EUNSUPPORTED, "%s: the sim has no %s engine (llama.cpp, vllm)",
                          ep->name, sw_fleet_engine_name(ep->engine));
    int rc = log_path(lp, sizeof(lp), "sim", e);
    if (rc)
        return rc;
    logfd = open(lp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (logfd < 0 || pipe2(pfd, O_CLOEXEC)) {
        rc = sw_err_set(e, SW_EIO, "%s: %s", lp, strerror(errno));
        goto out;
    }
    struct sw_err pe;
    sw_err_clear(&pe);
    if (sw_plan_endpoint(f, ep, NULL, &pl, &pe)) {
        /* the child plans again and fails the engine's way; keep what was computed */
    }
    /* the exec'd sim's command line: built before the fork (no allocation in the child) */
    char *argv[8 + 2 * 64 + 16] = {0};
    char setv[96];
    if (o && o->sim_exe) {
        int k = 0;
        if (!f || !f->path) {
            rc = sw_err_set(e, SW_EINVAL, "%s: an exec'd sim needs the fleet's path", ep->name);
            goto out;
        }
        snprintf(setv, sizeof(setv), "%s=%" PRId64,
                 knob == SW_LADDER_SLOTS ? "seqs" : sw_ladder_knob_name(knob), value);
        argv[k++] = (char *)o->sim_exe;
        argv[k++] = "sim";
        argv[k++] = (char *)ep->name;
        argv[k++] = (char *)f->path;
        argv[k++] = "--listen";
        argv[k++] = "127.0.0.1:0";
        argv[k++] = "--load-time";
        argv[k++] = "0";
        static const char *const zero[] = {"--prefill-us", "--decode-base-us", "--decode-seq-us",
                                           "--decode-kv-us"};
        for (size_t z = 0; z < 4; z++) {
            argv[k++] = (char *)zero[z];
            argv[k++] = "0";
        }
        if (o->sim_ledger) {
            argv[k++] = "--ledger";
            argv[k++] = (char *)o->sim_ledger;
        }
        for (int i = 0; i < o->n_sets && i < 64; i++) {
            argv[k++] = "--set";
            argv[k++] = (char *)o->sets[i];
        }
        argv[k++] = "--set";
        argv[k++] = setv;
        argv[k] = NULL;
    }
    int64_t started = sw_wall_unix();
    uint64_t t0 = sw_now_ns();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        rc = sw_err_set(e, SW_EIO, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        close(pfd[0]);
        signal(SIGTERM, SIG_DFL);
        if (argv[0]) {
            /* the slipway binary's own sim verb: its headroom model fitted on sim_ledger */
            if (dup2(pfd[1], 1) < 0 || dup2(logfd, 2) < 0)
                _exit(127);
            execv(argv[0], argv);
            _exit(127);
        }
        _exit(sim_child(f, ep, pfd[1], logfd));
    }
    close(pfd[1]);
    pfd[1] = -1;
    /* the port line, or EOF when the boot failed */
    size_t got = 0;
    int64_t bound = o && o->boot_timeout_ms > 0 ? o->boot_timeout_ms : 10 * 60 * 1000;
    uint64_t end = t0 + (uint64_t)bound * 1000000u;
    bool eof = false;
    while (!eof && got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
        uint64_t now = sw_now_ns();
        if (now >= end)
            break;
        struct pollfd p = {pfd[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)((end - now) / 1000000u) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t k = read(pfd[0], line + got, sizeof(line) - 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            eof = true;
        else
            got += (size_t)k;
    }
    line[got] = 0;
    line[strcspn(line, "\r\n")] = 0;
    int64_t pv = 0;
    int port = sw_parse_i64(line, &pv, NULL) == 0 && pv > 0 && pv <= 65535 ? (int)pv : 0;
    out->booted = true;
    if (port <= 0) {
        kill(pid, SIGTERM);
        wait_child(pid, 5000, &status);
        double ms = (double)(sw_now_ns() - t0) / 1e6;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        bl = read_bootlog(sw_fleet_engine_name(ep->engine), lp, true, code, &text);
        json_t *failure = json_object_get(bl, "failure");
        if (json_is_object(failure)) {
            take_failure(out, failure);
        } else {
            out->cls = SW_LADDER_OTHER;
            snprintf(out->detail, sizeof(out->detail),
                     "the sim announced no port within %lld ms and its log names no failure "
                     "(exit %d)",
                     (long long)bound, code);
        }
        out->engine_max = engine_max_of(text);
        rc =
            record_boot(o ? o->ledger : NULL, ep, &pl, bl, json_is_object(failure) ? failure : NULL,
                        text, started, ms, "slipway ladder (sim)", &out->boot_id, e);
        out->evidence = json_object();
        if (out->evidence && json_is_object(failure))
            json_object_set(out->evidence, "failure", failure);
        goto out;
    }
    /* vLLM's API server listens only once its engine is up: wait for a connection (or the
     * child's exit, which is the boot failing) before the worst case */
    bool up = false;
    while (!up && sw_now_ns() < end) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        up = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (fd >= 0)
            close(fd);
        if (!up) {
            if (waitpid(pid, &status, WNOHANG) == pid) {
                port = -1;
                break;
            }
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (port < 0) {
        /* it died before it listened: the boot failed after announcing its port */
        double fms = (double)(sw_now_ns() - t0) / 1e6;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        bl = read_bootlog(sw_fleet_engine_name(ep->engine), lp, true, code, &text);
        json_t *failure = json_object_get(bl, "failure");
        if (json_is_object(failure)) {
            take_failure(out, failure);
        } else {
            out->cls = SW_LADDER_OTHER;
            snprintf(out->detail, sizeof(out->detail),
                     "the sim exited %d before it listened and its log names no failure", code);
        }
        out->engine_max = engine_max_of(text);
        rc =
            record_boot(o ? o->ledger : NULL, ep, &pl, bl, json_is_object(failure) ? failure : NULL,
                        text, started, fms, "slipway ladder (sim)", &out->boot_id, e);
        out->evidence = json_object();
        if (out->evidence && json_is_object(failure))
            json_object_set(out->evidence, "failure", failure);
        goto out;
    }
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    bool passed = false;
    char why[1600] = "";
    json_t *wev = NULL;
    rc = worst_case(url, ep, o ? o->probe_ms : 0, &passed, why, sizeof(why), &wev, e);
    pid_t w = waitpid(pid, &status, WNOHANG);
    bool died = w == pid;
    if (!died) {
        kill(pid, SIGTERM);
        wait_child(pid, 5000, &status);
    }
    double ms = (double)(sw_now_ns() - t0) / 1e6;
    if (rc) {
        json_decref(wev);
        goto out;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    bl = read_bootlog(sw_fleet_engine_name(ep->engine), lp, true, died ? code : 0, &text);
    json_t *failure = json_object_get(bl, "failure");
    out->evidence = json_object();
    if (out->evidence && wev)
        sw_json_set_new(out->evidence, "worst_case", wev);
    else
        json_decref(wev);
    if (passed) {
        out->cls = SW_LADDER_PASS;
        snprintf(out->detail, sizeof(out->detail), "%.500s", why);
        failure = NULL;
    } else if (json_is_object(failure) || died) {
        if (json_is_object(failure))
            take_failure(out, failure);
        else
            snprintf(out->detail, sizeof(out->detail), "died on the worst case: %.400s", why);
        out->cls = SW_LADDER_RUNTIME_OOM;
    } else {
        out->cls = SW_LADDER_OTHER;
        snprintf(out->detail, sizeof(out->detail), "%.500s", why);
    }
    rc = record_boot(o ? o->ledger : NULL, ep, &pl, bl, json_is_object(failure) ? failure : NULL,
                     text, started, ms, "slipway ladder (sim)", &out->boot_id, e);
out:
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    if (logfd >= 0)
        close(logfd);
    unlink(lp);
    json_decref(bl);
    sw_free(text);
    sw_plan_free(&pl);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * local, in a memory cgroup
 */
struct cg {
    char dir[4200];
    bool v2;
};

static int read_u64(const char *path, const char *key, uint64_t *v)
{
    char *t = NULL;
    size_t n = 0;
    if (sw_read_file(path, 1 << 16, &t, &n, NULL))
        return -1;
    int rc = -1;
    const char *p = t;
    if (key) {
        size_t kl = strlen(key);
        for (p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (!strncmp(p, key, kl) && p[kl] == ' ') {
                p += kl + 1;
                break;
            }
    }
    if (p && *p >= '0' && *p <= '9') {
        *v = strtoull(p, NULL, 10);
        rc = 0;
    }
    sw_free(t);
    return rc;
}

static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t k = write(fd, s, strlen(s));
    int err = errno;
    close(fd);
    errno = err;
    return k == (ssize_t)strlen(s) ? 0 : -1;
}

static int cg_create(uint64_t limit, struct cg *g, struct sw_err *e)
{
    char *t = NULL;
    size_t n = 0;
    struct stat sb;
    memset(g, 0, sizeof(*g));
    int rc = sw_read_file("/proc/self/cgroup", 1 << 16, &t, &n, e);
    if (rc)
        return rc;
    char base[4096] = "";
    g->v2 = stat("/sys/fs/cgroup/cgroup.controllers", &sb) == 0;
    for (char *p = t; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        char *c1 = strchr(p, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c1 && c2) {
            *c2 = 0;
            const char *ctl = c1 + 1;
            bool mem = false;
            for (const char *q = ctl; *q;) {
                size_t l = strcspn(q, ",");
                mem |= l == 6 && !strncmp(q, "memory", 6);
                q += l + (q[l] == ',');
            }
            if (g->v2 && !*ctl)
                snprintf(base, sizeof(base), "/sys/fs/cgroup%s", c2 + 1);
            else if (!g->v2 && mem)
                snprintf(base, sizeof(base), "/sys/fs/cgroup/memory%s", c2 + 1);
        }
        p = nl ? nl + 1 : NULL;
    }
    sw_free(t);
    if (!base[0])
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "/proc/self/cgroup: no memory cgroup for this process (a memory limit "
                          "needs cgroup v1's memory controller or cgroup v2)");
    snprintf(g->dir, sizeof(g->dir), "%s/slipway-ladder-%d-%u", base, (int)getpid(), ++g_seq);
    if (mkdir(g->dir, 0700))
        return sw_err_set(e, SW_EIO, "%s: %s (a memory limit needs a writable cgroup)", g->dir,
                          strerror(errno));
    char path[4300], v[32];
    snprintf(v, sizeof(v), "%" PRIu64, limit);
    snprintf(path, sizeof(path), "%s/%s", g->dir, g->v2 ? "memory.max" : "memory.limit_in_bytes");
    if (write_str(path, v)) {
        rc = sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
        rmdir(g->dir);
        g->dir[0] = 0;
        return rc;
    }
    /* no swap to hide in: the limit is the memory the engine has */
    snprintf(path, sizeof(path), "%s/%s", g->dir,
             g->v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes");
    if (write_str(path, g->v2 ? "0" : v)) {
        /* absent without swap accounting: nothing to bound */
    }
    return 0;
}

static uint64_t cg_peak(const struct cg *g)
{
    char path[4300];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "%s/%s", g->dir,
             g->v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    return read_u64(path, NULL, &v) ? 0 : v;
}

static uint64_t cg_ooms(const struct cg *g)
{
    char path[4300];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "%s/%s", g->dir, g->v2 ? "memory.events" : "memory.oom_control");
    return read_u64(path, "oom_kill", &v) ? 0 : v;
}

static void cg_remove(struct cg *g)
{
    if (!g->dir[0])
        return;
    /* the engine was reaped; its group empties as the kernel lets go of it */
    for (int i = 0; i < 100 && rmdir(g->dir) && errno == EBUSY; i++) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    g->dir[0] = 0;
}

int sw_ladder_run_local(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                        enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                        struct sw_err *e)
{
    const struct sw_ladder_opts *o = ctx;
    struct sw_plan pl;
    struct sw_up_opts uo;
    struct sw_up_result ur;
    struct cg g;
    char lp[4200], procs[4300], *text = NULL;
    json_t *bl = NULL;
    (void)knob;
    (void)value;
    memset(&ur, 0, sizeof(ur));
    memset(&g, 0, sizeof(g));
    int rc = sw_plan_endpoint(f, ep, NULL, &pl, e);
    if (!rc && !pl.cmd.argv)
        rc = sw_err_set(e, SW_EINVAL, "%s: no command line to run (%s)", ep->name, pl.cmd_why);
    struct sw_fleet_addr fa;
    if (!rc)
        rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (!rc)
        rc = log_path(lp, sizeof(lp), "local", e);
    if (rc)
        goto out;
    const struct sw_engine *eng = sw_engine_find(sw_fleet_engine_name(ep->engine));
    if (!eng) {
        rc = sw_err_set(e, SW_EUNSUPPORTED, "%s: no engine adapter", ep->name);
        goto out;
    }
    if (o && o->memory_max) {
        rc = cg_create(o->memory_max, &g, e);
        if (rc)
            goto out;
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", g.dir);
    }
    memset(&uo, 0, sizeof(uo));
    uo.engine = eng;
    uo.cmd = &pl.cmd;
    uo.host = fa.bind;
    uo.port = fa.port;
    uo.log_path = lp;
    uo.endpoint = ep->name;
    uo.preflight = true;
    uo.liveness = true;
    int64_t bound = o && o->boot_timeout_ms > 0 ? o->boot_timeout_ms : 10 * 60 * 1000;
    uo.boot_timeout_s = (unsigned)((bound + 999) / 1000);
    uo.grace_ms = 3000;
    uo.cgroup_procs = g.dir[0] ? procs : NULL;
    int64_t started = sw_wall_unix();
    uint64_t t0 = sw_now_ns();
    struct sw_err ue;
    sw_err_clear(&ue);
    int urc = sw_deploy_up(&uo, &ur, &ue);
    if (urc && urc != SW_ECHILD) {
        rc = sw_err_set(e, urc, "%s", ue.msg);
        goto out;
    }
    out->booted = true;
    json_t *failure = NULL;
    bool passed = false;
    char why[1600] = "";
    json_t *wev = NULL;
    if (!urc) {
        rc = worst_case(ur.url, ep, o ? o->probe_ms : 0, &passed, why, sizeof(why), &wev, e);
        bool died = sw_child_poll(&ur.child) == 1;
        struct sw_err se;
        sw_child_stop(&ur.child, 3000, &se);
        if (rc) {
            json_decref(wev);
            goto out;
        }
        out->evidence = json_object();
        if (out->evidence && wev)
            sw_json_set_new(out->evidence, "worst_case", wev);
        else
            json_decref(wev);
        bl = read_bootlog(eng->name, lp, died, -1, &text);
        uint64_t ooms = g.dir[0] ? cg_ooms(&g) : 0;
        if (passed && !ooms) {
            out->cls = SW_LADDER_PASS;
            snprintf(out->detail, sizeof(out->detail), "%.500s", why);
        } else if (ooms || died) {
            out->cls = SW_LADDER_RUNTIME_OOM;
            snprintf(out->detail, sizeof(out->detail), "%s%.450s",
                     ooms ? "the memory cgroup's OOM killer fired on the worst case; " : "", why);
            failure = json_object_get(bl, "failure");
            if (!json_is_object(failure)) {
                failure = NULL;
                json_t *fo = json_pack("{s:s,s:s,s:s}", "class", "oom", "phase", "runtime",
                                       "message", out->detail);
                if (fo)
                    json_object_set_new(bl ? bl : (bl = json_object()), "failure", fo);
                failure = json_object_get(bl, "failure");
            }
        } else {
            out->cls = SW_LADDER_OTHER;
            snprintf(out->detail, sizeof(out->detail), "%.500s", why);
        }
    } else {
        bl = ur.bootlog ? json_incref(ur.bootlog) : NULL;
        sw_read_file(lp, LOG_MAX, &text, NULL, NULL);
        failure = json_object_get(bl, "failure");
        uint64_t ooms = g.dir[0] ? cg_ooms(&g) : 0;
        if (json_is_object(failure))
            take_failure(out, failure);
        else
            out->cls = SW_LADDER_OTHER;
        if (ooms && out->cls == SW_LADDER_OTHER) {
            /* killed by the cgroup before the engine could say anything */
            out->cls = SW_LADDER_BOOT_OOM;
        }
        if (ooms)
            snprintf(out->detail + strlen(out->detail), sizeof(out->detail) - strlen(out->detail),
                     "%sthe memory cgroup's OOM killer fired during the boot",
                     out->detail[0] ? "; " : "");
        else if (!out->detail[0])
            snprintf(out->detail, sizeof(out->detail), "the boot failed: %.400s", ue.msg);
        out->evidence = json_object();
        if (out->evidence && json_is_object(failure))
            json_object_set(out->evidence, "failure", failure);
    }
    if (g.dir[0]) {
        out->peak_bytes = cg_peak(&g);
        if (out->evidence) {
            sw_json_set_int(out->evidence, "peak_bytes", (int64_t)out->peak_bytes);
            sw_json_set_int(out->evidence, "memory_max", (int64_t)o->memory_max);
            sw_json_set_int(out->evidence, "oom_kills", (int64_t)cg_ooms(&g));
        }
    }
    double ms = (double)(sw_now_ns() - t0) / 1e6;
    rc = record_boot(o ? o->ledger : NULL, ep, &pl, bl, out->cls == SW_LADDER_PASS ? NULL : failure,
                     text, started, ms, "slipway ladder (local)", &out->boot_id, e);
out:
    if (ur.child.pid && !ur.child.exited) {
        struct sw_err se;
        sw_child_stop(&ur.child, 3000, &se);
    }
    sw_up_result_free(&ur);
    cg_remove(&g);
    if (lp[0])
        unlink(lp);
    json_decref(bl);
    sw_free(text);
    sw_plan_free(&pl);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * rollout
 */
int sw_ladder_run_rollout(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                          enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                          struct sw_err *e)
{
    const struct sw_ladder_opts *o = ctx;
    struct sw_rollout_opts ro;
    struct sw_rollout_result rr;
    (void)knob;
    (void)value;
    memset(&ro, 0, sizeof(ro));
    ro.ledger = o ? o->ledger : NULL;
    ro.worst_case = true;
    ro.probe_only = "liveness";
    ro.deadline_ms = o ? o->boot_timeout_ms : 0;
    ro.probe_ms = o ? o->probe_ms : 0;
    ro.record = ro.ledger != NULL;
    ro.note = "slipway ladder rung";
    int rc = sw_rollout_deploy(f, ep, &ro, &rr, e);
    if (rc) {
        sw_rollout_result_free(&rr);
        return rc;
    }
    out->booted = rr.outcome != SW_ROLLOUT_GATE_FAILED && rr.outcome != SW_ROLLOUT_REFUSED;
    out->evidence = sw_rollout_result_json(&rr);
    const char *fc = rr.fail_class;
    if (rr.outcome == SW_ROLLOUT_COMMITTED) {
        out->cls = SW_LADDER_PASS;
        snprintf(out->detail, sizeof(out->detail), "committed as %s; worst case passed", rr.tag);
    } else if (rr.outcome == SW_ROLLOUT_GATE_FAILED) {
        out->cls = SW_LADDER_REFUSED;
        snprintf(out->detail, sizeof(out->detail), "%s: %.400s", fc, rr.fail_msg);
    } else {
        if (!strcmp(fc, "probe:worst_case") || !strcmp(fc, "runtime_oom"))
            out->cls = SW_LADDER_RUNTIME_OOM;
        else if (rr.boot)
            out->cls = sw_ladder_classify(rr.boot);
        else
            out->cls = SW_LADDER_OTHER;
        json_t *tb = json_object_get(rr.boot, "tried_bytes");
        json_t *fb = json_object_get(rr.boot, "free_bytes");
        if (json_is_integer(tb))
            out->tried_bytes = (uint64_t)json_integer_value(tb);
        if (json_is_integer(fb))
            out->free_bytes = (uint64_t)json_integer_value(fb);
        snprintf(out->detail, sizeof(out->detail), "%s (%s): %.400s",
                 sw_rollout_outcome_name(rr.outcome), fc, rr.fail_msg);
    }
    sw_rollout_result_free(&rr);
    return 0;
}
