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
 *            of its own (ladder_cgroup.c: v1 memory.limit_in_bytes or v2 memory.max under this
 *            process's cgroup), whose peak and oom_kill count are the measurement;
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

unsigned sw__ladder_next_seq(void)
{
    return ++g_seq;
}

static int log_path(char *out, size_t n, const char *what, struct sw_err *e)
{
    char dir[4096];
    int rc = sw_run_dir(dir, sizeof(dir), e);
    if (rc)
        return rc;
    snprintf(out, n, "%s/ladder-%d-%u-%s.log", dir, (int)getpid(), sw__ladder_next_seq(), what);
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

/* What every runner's rung holds: the options, the endpoint and its plan, the engine's log and
 * what was read of it, and when the boot began. */
struct rung {
    const struct sw_ladder_opts *o; /* NULL: the library's defaults */
    const struct sw_fleet *f;
    struct sw_fleet_endpoint *ep;
    struct sw_plan pl;
    char lp[4200]; /* the engine's log ("" before it has one) */
    int64_t started;
    uint64_t t0;
    char *text; /* the log, once read */
    json_t *bl; /* its boot-log report */
};

static void rung_init(struct rung *g, void *ctx, const struct sw_fleet *f,
                      struct sw_fleet_endpoint *ep)
{
    memset(g, 0, sizeof(*g));
    g->o = ctx;
    g->f = f;
    g->ep = ep;
}

static void rung_close(struct rung *g)
{
    if (g->lp[0])
        unlink(g->lp);
    json_decref(g->bl);
    sw_free(g->text);
    sw_plan_free(&g->pl);
}

/* The rung's boot in the run's ledger (none without one), ms after it began: its shape, the law's
 * prediction, the engine's report and failure (NULL: none), the log. */
static int record_boot(const struct rung *g, const json_t *failure, double ms, const char *source,
                       int64_t *id, struct sw_err *e)
{
    struct sw_ledger *l = g->o ? g->o->ledger : NULL;
    *id = 0;
    if (!l)
        return 0;
    json_t *shape = sw_plan_shape(g->ep);
    if (!shape)
        return sw_err_set(e, SW_ENOMEM, "out of memory (boot shape)");
    struct sw_ledger_boot b;
    memset(&b, 0, sizeof(b));
    b.endpoint = g->ep->name;
    b.shape = shape;
    b.engine = sw_fleet_engine_name(g->ep->engine);
    b.started_at = g->started;
    b.ended_at = sw_wall_unix();
    b.duration_ms = (int64_t)ms;
    b.predicted = json_is_object(g->pl.predicted) ? g->pl.predicted : NULL;
    const json_t *rep = json_object_get(g->bl, "report");
    b.report = json_is_object(rep) ? rep : NULL;
    b.failure = failure && json_is_object(failure) ? failure : NULL;
    b.log_excerpt = g->text;
    b.source = source;
    int rc = sw_ledger_record_boot(l, &b, id, e);
    json_decref(shape);
    return rc;
}

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

/* One sim rung in flight: its log, the child and the pipe its port comes on. */
struct sim_rung {
    struct rung r;
    int pfd[2], logfd;
    pid_t pid;
    int status;
    int64_t bound_ms;
    uint64_t end;
};

static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The exec'd sim's command line (the slipway binary's own sim verb, no load or step time, the
 * rung's value set), built before the fork: no allocation in the child. */
static int sim_argv(const struct sim_rung *s, enum sw_ladder_knob knob, int64_t value, char **argv,
                    char *setv, size_t n, struct sw_err *e)
{
    static const char *const zero[] = {"--prefill-us", "--decode-base-us", "--decode-seq-us",
                                       "--decode-kv-us"};
    const struct sw_ladder_opts *o = s->r.o;
    int k = 0;
    if (!s->r.f || !s->r.f->path)
        return sw_err_set(e, SW_EINVAL, "%s: an exec'd sim needs the fleet's path", s->r.ep->name);
    snprintf(setv, n, "%s=%" PRId64, knob == SW_LADDER_SLOTS ? "seqs" : sw_ladder_knob_name(knob),
             value);
    argv[k++] = (char *)o->sim_exe;
    argv[k++] = "sim";
    argv[k++] = (char *)s->r.ep->name;
    argv[k++] = "--fleet"; /* slipway VERB ENDPOINT --fleet FILE */
    argv[k++] = (char *)s->r.f->path;
    argv[k++] = "--listen";
    argv[k++] = "127.0.0.1:0";
    argv[k++] = "--load-time";
    argv[k++] = "0";
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
    return 0;
}

/* Fork the sim: the exec'd binary with o->sim_exe, else the library in the child. Its port comes
 * on s->pfd[0], its log goes to s->r.lp. */
static int sim_start(struct sim_rung *s, enum sw_ladder_knob knob, int64_t value, struct sw_err *e)
{
    char *argv[8 + 2 * 64 + 16] = {0};
    char setv[96];
    int rc = log_path(s->r.lp, sizeof(s->r.lp), "sim", e);
    if (rc)
        return rc;
    s->logfd = open(s->r.lp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (s->logfd < 0 || pipe2(s->pfd, O_CLOEXEC))
        return sw_err_set(e, SW_EIO, "%s: %s", s->r.lp, strerror(errno));
    struct sw_err pe;
    sw_err_clear(&pe);
    if (sw_plan_endpoint(s->r.f, s->r.ep, NULL, &s->r.pl, &pe)) {
        /* the child plans again and fails the engine's way; keep what was computed */
    }
    if (s->r.o && s->r.o->sim_exe) {
        rc = sim_argv(s, knob, value, argv, setv, sizeof(setv), e);
        if (rc)
            return rc;
    }
    s->r.started = sw_wall_unix();
    s->r.t0 = sw_now_ns();
    fflush(NULL);
    s->pid = fork();
    if (s->pid < 0)
        return sw_err_set(e, SW_EIO, "fork: %s", strerror(errno));
    if (s->pid == 0) {
        close(s->pfd[0]);
        signal(SIGTERM, SIG_DFL);
        if (argv[0]) {
            /* the slipway binary's own sim verb: its headroom model fitted on sim_ledger */
            if (dup2(s->pfd[1], 1) < 0 || dup2(s->logfd, 2) < 0)
                _exit(127);
            execv(argv[0], argv);
            _exit(127);
        }
        _exit(sim_child(s->r.f, s->r.ep, s->pfd[1], s->logfd));
    }
    close(s->pfd[1]);
    s->pfd[1] = -1;
    s->bound_ms = s->r.o && s->r.o->boot_timeout_ms > 0 ? s->r.o->boot_timeout_ms : 10 * 60 * 1000;
    s->end = s->r.t0 + (uint64_t)s->bound_ms * 1000000u;
    return 0;
}

/* The port the sim announces on its pipe, 0 when it closed the pipe (the boot failed) or the
 * boot timed out first. */
static int sim_port(struct sim_rung *s)
{
    char line[256];
    size_t got = 0;
    bool eof = false;
    while (!eof && got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
        uint64_t now = sw_now_ns();
        if (now >= s->end)
            break;
        struct pollfd p = {s->pfd[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)((s->end - now) / 1000000u) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t k = read(s->pfd[0], line + got, sizeof(line) - 1 - got);
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
    return sw_parse_i64(line, &pv, NULL) == 0 && pv > 0 && pv <= 65535 ? (int)pv : 0;
}

/* Wait for the port to accept a connection (vLLM's API server listens only once its engine is
 * up). false when the child exited first (the boot failed); a timeout is left to the worst
 * case. */
static bool sim_listens(struct sim_rung *s, int port)
{
    while (sw_now_ns() < s->end) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bool up = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (fd >= 0)
            close(fd);
        if (up)
            return true;
        if (waitpid(s->pid, &s->status, WNOHANG) == s->pid)
            return false;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* The boot failed (no port announced, or the child died after announcing it, before it
 * listened): the engine's failure from its log (or what happened when the log names none), the
 * boot recorded. */
static int sim_boot_failed(struct sim_rung *s, bool announced, struct sw_ladder_outcome *out,
                           struct sw_err *e)
{
    double ms = (double)(sw_now_ns() - s->r.t0) / 1e6;
    int code = exit_code(s->status);
    s->r.bl = read_bootlog(sw_fleet_engine_name(s->r.ep->engine), s->r.lp, true, code, &s->r.text);
    json_t *failure = json_object_get(s->r.bl, "failure");
    if (!json_is_object(failure))
        failure = NULL;
    if (failure) {
        take_failure(out, failure);
    } else {
        out->cls = SW_LADDER_OTHER;
        if (announced)
            snprintf(out->detail, sizeof(out->detail),
                     "the sim exited %d before it listened and its log names no failure", code);
        else
            snprintf(out->detail, sizeof(out->detail),
                     "the sim announced no port within %lld ms and its log names no failure "
                     "(exit %d)",
                     (long long)s->bound_ms, code);
    }
    out->engine_max = engine_max_of(s->r.text);
    int rc = record_boot(&s->r, failure, ms, "slipway ladder (sim)", &out->boot_id, e);
    out->evidence = json_object();
    if (out->evidence && failure)
        json_object_set(out->evidence, "failure", failure);
    return rc;
}

/* The worst case against the listening sim, then SIGTERM: passed, died of it (its failure, or
 * a runtime OOM), or another failure; the boot recorded. */
static int sim_worst_case(struct sim_rung *s, int port, struct sw_ladder_outcome *out,
                          struct sw_err *e)
{
    char url[64], why[1600] = "";
    bool passed = false;
    json_t *wev = NULL;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    int rc =
        worst_case(url, s->r.ep, s->r.o ? s->r.o->probe_ms : 0, &passed, why, sizeof(why), &wev, e);
    bool died = waitpid(s->pid, &s->status, WNOHANG) == s->pid;
    if (!died) {
        kill(s->pid, SIGTERM);
        wait_child(s->pid, 5000, &s->status);
    }
    double ms = (double)(sw_now_ns() - s->r.t0) / 1e6;
    if (rc) {
        json_decref(wev);
        return rc;
    }
    s->r.bl = read_bootlog(sw_fleet_engine_name(s->r.ep->engine), s->r.lp, true,
                           died ? exit_code(s->status) : 0, &s->r.text);
    json_t *failure = json_object_get(s->r.bl, "failure");
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
    return record_boot(&s->r, json_is_object(failure) ? failure : NULL, ms, "slipway ladder (sim)",
                       &out->boot_id, e);
}

static void sim_close(struct sim_rung *s)
{
    if (s->pfd[0] >= 0)
        close(s->pfd[0]);
    if (s->pfd[1] >= 0)
        close(s->pfd[1]);
    if (s->logfd >= 0)
        close(s->logfd);
    rung_close(&s->r);
}

/* The sim runner: the engine stand-in forked from the endpoint's plan (or the slipway binary's
 * own sim verb), no step time, then the worst case against it, then SIGTERM. */
int sw_ladder_run_sim(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                      enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                      struct sw_err *e)
{
    struct sim_rung s;
    memset(&s, 0, sizeof(s));
    rung_init(&s.r, ctx, f, ep);
    s.pfd[0] = s.pfd[1] = s.logfd = -1;
    if (ep->engine != SW_FLEET_LLAMACPP && ep->engine != SW_FLEET_VLLM)
        return sw_err_set(e, SW_EUNSUPPORTED, "%s: the sim has no %s engine (llama.cpp, vllm)",
                          ep->name, sw_fleet_engine_name(ep->engine));
    int rc = sim_start(&s, knob, value, e);
    if (rc)
        goto out;
    int port = sim_port(&s);
    out->booted = true;
    if (port <= 0) {
        kill(s.pid, SIGTERM);
        wait_child(s.pid, 5000, &s.status);
        rc = sim_boot_failed(&s, false, out, e);
    } else if (!sim_listens(&s, port)) {
        rc = sim_boot_failed(&s, true, out, e);
    } else {
        rc = sim_worst_case(&s, port, out, e);
    }
out:
    sim_close(&s);
    return rc;
}

/* One local rung in flight: the engine through deploy's supervisor, in a memory cgroup of its own
 * when the run has a limit. */
struct local_rung {
    struct rung r;
    const struct sw_engine *eng;
    struct sw_up_result ur;
    struct sw__ladder_cg g;
    char procs[4300]; /* the cgroup's procs file */
};

/* Plan the endpoint and start its engine: 0 with *urc the supervisor's verdict (0: serving;
 * SW_ECHILD: the boot failed, ue says why), or an error of slipway's own. */
static int local_start(struct local_rung *l, int *urc, struct sw_err *ue, struct sw_err *e)
{
    const struct sw_ladder_opts *o = l->r.o;
    struct sw_up_opts uo;
    struct sw_fleet_addr fa;
    int rc = sw_plan_endpoint(l->r.f, l->r.ep, NULL, &l->r.pl, e);
    if (!rc && !l->r.pl.cmd.argv)
        rc = sw_err_set(e, SW_EINVAL, "%s: no command line to run (%s)", l->r.ep->name,
                        l->r.pl.cmd_why);
    /* the program `up` runs (deploy/local), not whatever $PATH has */
    if (!rc)
        rc = sw_deploy_local_program(l->r.ep, &l->r.pl.cmd, NULL, e);
    if (!rc)
        rc = sw_fleet_endpoint_addr(l->r.ep, &fa, e);
    if (!rc)
        rc = log_path(l->r.lp, sizeof(l->r.lp), "local", e);
    if (rc)
        return rc;
    l->eng = sw_engine_find(sw_fleet_engine_name(l->r.ep->engine));
    if (!l->eng)
        return sw_err_set(e, SW_EUNSUPPORTED, "%s: no engine adapter", l->r.ep->name);
    if (o && o->memory_max) {
        rc = sw__ladder_cg_create(o->memory_max, &l->g, e);
        if (rc)
            return rc;
        snprintf(l->procs, sizeof(l->procs), "%s/cgroup.procs", l->g.dir);
    }
    memset(&uo, 0, sizeof(uo));
    uo.engine = l->eng;
    uo.cmd = &l->r.pl.cmd;
    uo.host = fa.bind;
    uo.port = fa.port;
    uo.log_path = l->r.lp;
    uo.endpoint = l->r.ep->name;
    uo.preflight = true;
    uo.liveness = true;
    int64_t bound = o && o->boot_timeout_ms > 0 ? o->boot_timeout_ms : 10 * 60 * 1000;
    uo.boot_timeout_s = (unsigned)((bound + 999) / 1000);
    uo.grace_ms = 3000;
    uo.cgroup_procs = l->g.dir[0] ? l->procs : NULL;
    l->r.started = sw_wall_unix();
    l->r.t0 = sw_now_ns();
    sw_err_clear(ue);
    *urc = sw_deploy_up(&uo, &l->ur, ue);
    if (*urc && *urc != SW_ECHILD)
        return sw_err_set(e, *urc, "%s", ue->msg);
    return 0;
}

/* The engine served: the worst case against it, then it is stopped. Passed; died of it (or the
 * memory cgroup's OOM killer fired: a runtime OOM, *failure what to record); or another failure. */
static int local_served(struct local_rung *l, struct sw_ladder_outcome *out, json_t **failure,
                        struct sw_err *e)
{
    bool passed = false;
    char why[1600] = "";
    json_t *wev = NULL;
    int rc = worst_case(l->ur.url, l->r.ep, l->r.o ? l->r.o->probe_ms : 0, &passed, why,
                        sizeof(why), &wev, e);
    bool died = sw_child_poll(&l->ur.child) == 1;
    struct sw_err se;
    sw_child_stop(&l->ur.child, 3000, &se);
    if (rc) {
        json_decref(wev);
        return rc;
    }
    out->evidence = json_object();
    if (out->evidence && wev)
        sw_json_set_new(out->evidence, "worst_case", wev);
    else
        json_decref(wev);
    l->r.bl = read_bootlog(l->eng->name, l->r.lp, died, -1, &l->r.text);
    uint64_t ooms = l->g.dir[0] ? sw__ladder_cg_ooms(&l->g) : 0;
    if (passed && !ooms) {
        out->cls = SW_LADDER_PASS;
        snprintf(out->detail, sizeof(out->detail), "%.500s", why);
    } else if (ooms || died) {
        out->cls = SW_LADDER_RUNTIME_OOM;
        snprintf(out->detail, sizeof(out->detail), "%s%.450s",
                 ooms ? "the memory cgroup's OOM killer fired on the worst case; " : "", why);
        *failure = json_object_get(l->r.bl, "failure");
        if (!json_is_object(*failure)) {
            json_t *fo = json_pack("{s:s,s:s,s:s}", "class", "oom", "phase", "runtime", "message",
                                   out->detail);
            if (fo)
                json_object_set_new(l->r.bl ? l->r.bl : (l->r.bl = json_object()), "failure", fo);
            *failure = json_object_get(l->r.bl, "failure");
        }
    } else {
        out->cls = SW_LADDER_OTHER;
        snprintf(out->detail, sizeof(out->detail), "%.500s", why);
    }
    return 0;
}

/* The boot failed: the engine's failure from the supervisor's boot log (*failure), or the
 * memory cgroup's OOM killer, or what the supervisor said (ue). */
static void local_failed(struct local_rung *l, const struct sw_err *ue,
                         struct sw_ladder_outcome *out, json_t **failure)
{
    l->r.bl = l->ur.bootlog ? json_incref(l->ur.bootlog) : NULL;
    sw_read_file(l->r.lp, LOG_MAX, &l->r.text, NULL, NULL);
    *failure = json_object_get(l->r.bl, "failure");
    uint64_t ooms = l->g.dir[0] ? sw__ladder_cg_ooms(&l->g) : 0;
    if (json_is_object(*failure))
        take_failure(out, *failure);
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
        snprintf(out->detail, sizeof(out->detail), "the boot failed: %.400s", ue->msg);
    out->evidence = json_object();
    if (out->evidence && json_is_object(*failure))
        json_object_set(out->evidence, "failure", *failure);
}

static void local_close(struct local_rung *l)
{
    if (l->ur.child.pid && !l->ur.child.exited) {
        struct sw_err se;
        sw_child_stop(&l->ur.child, 3000, &se);
    }
    sw_up_result_free(&l->ur);
    sw__ladder_cg_remove(&l->g);
    rung_close(&l->r);
}

/* The local runner: the engine from the plan's argv (sw_deploy_up), in its own memory cgroup
 * when o->memory_max is set, whose peak and OOM kills are the measurement. */
int sw_ladder_run_local(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                        enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                        struct sw_err *e)
{
    struct local_rung l;
    struct sw_err ue;
    json_t *failure = NULL;
    int urc = 0;
    (void)knob;
    (void)value;
    memset(&l, 0, sizeof(l));
    rung_init(&l.r, ctx, f, ep);
    int rc = local_start(&l, &urc, &ue, e);
    if (rc)
        goto out;
    out->booted = true;
    if (!urc)
        rc = local_served(&l, out, &failure, e);
    else
        local_failed(&l, &ue, out, &failure);
    if (rc)
        goto out;
    if (l.g.dir[0]) {
        out->peak_bytes = sw__ladder_cg_peak(&l.g);
        if (out->evidence) {
            sw_json_set_int(out->evidence, "peak_bytes", (int64_t)out->peak_bytes);
            sw_json_set_int(out->evidence, "memory_max", (int64_t)l.r.o->memory_max);
            sw_json_set_int(out->evidence, "oom_kills", (int64_t)sw__ladder_cg_ooms(&l.g));
        }
    }
    double ms = (double)(sw_now_ns() - l.r.t0) / 1e6;
    rc = record_boot(&l.r, out->cls == SW_LADDER_PASS ? NULL : failure, ms,
                     "slipway ladder (local)", &out->boot_id, e);
out:
    local_close(&l);
    return rc;
}

/* The rollout runner: sw_rollout_deploy on the endpoint's host (gates, unit, stop/start, the
 * worst case, commit or roll back); its class from the rollout's. */
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
