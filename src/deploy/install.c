/*
 * deploy/install: sw_deploy_install, an endpoint's rendered service put on its host and, when
 * asked, started and proven to serve. The order is the point: everything that can refuse the
 * install (the render, its lint, `systemd-analyze verify` on the host) runs before anything is
 * written where systemd reads it; the files then land atomically (temp + sync + rename, the env
 * file first so the unit never names a missing one), and only then daemon-reload and start.
 *
 * What it deliberately does not do: stop a live unit before the new one is proven or keep the
 * previous files (a gated deploy does), enable the unit at boot, or print (the CLI does).
 */
#include "deploy_internal.h"
#include "service_internal.h"

#include <slipway/ledger.h>
#include <slipway/readings.h>

#include <slipway/host.h>
#include <slipway/unit.h>
#include <slipway/unit_lint.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEF_DEADLINE_MS 60000
#define DEF_SERVE_MS    300000u

/* An install on its way: the caller's options and result, the step being timed, and what one
 * step leaves for the next (the render, the host, the staged files). */
struct ctx {
    const struct sw_install_opts *o;
    struct sw_install_result *r;
    uint64_t t_step;
    const struct sw_fleet *f;
    const struct sw_fleet_endpoint *ep;
    int64_t dl; /* one host operation's deadline */
    struct sw_unit_render ur;
    struct sw_unit *u; /* the render parsed back, and its lint */
    struct sw_unit_report rep;
    struct sw_host h;
    char stage[4096]; /* the private directory here ("" when none) */
    char local_unit[4400], local_env[4400];
};

static void step_begin(struct ctx *c)
{
    c->t_step = sw_now_ns();
}

static void step_end(struct ctx *c, const char *name, bool ok, const char *fmt, ...)
    SW_PRINTF(4, 5);
static void step_end(struct ctx *c, const char *name, bool ok, const char *fmt, ...)
{
    struct sw_install_result *r = c->r;
    if (r->n_steps >= SW_INSTALL_MAX_STEPS)
        return;
    struct sw_install_step *s = &r->steps[r->n_steps++];
    s->name = name;
    s->ok = ok;
    s->seconds = (double)(sw_now_ns() - c->t_step) / 1e9;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->detail, sizeof(s->detail), fmt, ap);
    va_end(ap);
    if (c->o && c->o->on_step)
        c->o->on_step(c->o->ctx, s);
}

static void add_finding(json_t *arr, const char *law, const char *sev, int line, const char *msg)
{
    json_array_append_new(arr, json_pack("{s:s,s:s,s:i,s:s}", "law", law, "severity", sev, "line",
                                         line, "message", msg));
}

/* `systemd-analyze verify` of the staged unit on the host: $1 the unit's file name, $2 "--user"
 * or "", the unit on stdin. A private directory, removed whatever happens; every line printed
 * is a finding (verify exits 0 on an unknown key), the directory's name taken out of them. */
static const char verify_script[] =
    "command -v systemd-analyze >/dev/null 2>&1 || { echo 'systemd-analyze not found on the "
    "host'; exit 3; }\n"
    "d=$(mktemp -d) || exit 1\n"
    "trap 'rm -rf -- \"$d\"' EXIT HUP INT TERM\n"
    "cat >\"$d/$1\" || exit 1\n"
    "out=$(systemd-analyze $2 verify \"$d/$1\" 2>&1); rc=$?\n"
    "[ -z \"$out\" ] || printf '%s\\n' \"$out\" | sed \"s|$d/||g\"\n"
    "exit $rc\n";

static int verify_on_host(struct ctx *c, struct sw_host *h, const struct sw_unit_render *ur,
                          const char *local_unit, int64_t deadline_ms, size_t *n_lines,
                          struct sw_err *e)
{
    struct sw_host_result hr;
    const char *argv[] = {"sh",
                          "-c",
                          verify_script,
                          "sh",
                          ur->service.name,
                          ur->scope == SW_FLEET_SCOPE_USER ? "--user" : "",
                          NULL};
    struct sw_host_run_opts ro = {
        .deadline_ms = deadline_ms, .max_out = 64u * 1024u, .stdin_path = local_unit};
    *n_lines = 0;
    int rc = sw_host_run(h, argv, &ro, &hr, e);
    if (rc && hr.fail != SW_HOST_EXIT) {
        sw_host_result_free(&hr);
        return rc;
    }
    /* stdout and stderr are the script's: verify's own words are in out */
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, hr.out, hr.out ? strlen(hr.out) : 0, SIZE_MAX, 0);
    while (sw_lines_next(&it, &ln)) {
        if (!ln.len)
            continue;
        char line[1100];
        snprintf(line, sizeof(line), "systemd-analyze verify on %s: %.*s", h->name,
                 (int)SW_MIN(ln.len, (size_t)1000), ln.s);
        add_finding(c->r->findings, SW_UNIT_LAW_VERIFY, "error", 0, line);
        (*n_lines)++;
    }
    if (rc && !*n_lines) {
        char line[600];
        snprintf(line, sizeof(line), "systemd-analyze verify on %s exited %d: %.400s", h->name,
                 hr.exit_code, hr.err ? hr.err : "");
        add_finding(c->r->findings, SW_UNIT_LAW_VERIFY, "error", 0, line);
        (*n_lines)++;
    }
    sw_host_result_free(&hr);
    sw_err_clear(e);
    return 0;
}

/* Run argv on the host; 0 or the error with e set. */
static int run(struct sw_host *h, const char *const *argv, int64_t deadline_ms, char *out, size_t n,
               struct sw_err *e)
{
    struct sw_host_result hr;
    struct sw_host_run_opts ro = {.deadline_ms = deadline_ms, .max_out = 64u * 1024u};
    int rc = sw_host_run(h, argv, &ro, &hr, e);
    if (out && n) {
        size_t l = hr.out ? strcspn(hr.out, "\n") : 0;
        snprintf(out, n, "%.*s", (int)SW_MIN(l, n - 1), hr.out ? hr.out : "");
    }
    sw_host_result_free(&hr);
    return rc;
}

static void rm_stage(char *dir, const struct sw_unit_render *ur)
{
    char p[4400];
    if (!dir[0])
        return;
    snprintf(p, sizeof(p), "%s/%s", dir, ur->service.name);
    unlink(p);
    snprintf(p, sizeof(p), "%s/%s", dir, ur->env.name);
    unlink(p);
    rmdir(dir);
    dir[0] = '\0';
}

/* What the copy replaces, kept beside it (FILE.slipway-prev) until the manager has read the new
 * files: put back (or the new file removed where there was none) when it could not, so a failed
 * install leaves the host as it found it. One script for each direction; the paths are
 * arguments, never part of the script. */
static const char keep_script[] = "for f; do rm -f -- \"$f.slipway-prev\"; "
                                  "if [ -e \"$f\" ]; then cp -p -- \"$f\" \"$f.slipway-prev\" "
                                  "|| exit 1; fi; done";
static const char put_back_script[] = "for f; do if [ -e \"$f.slipway-prev\" ]; then "
                                      "mv -f -- \"$f.slipway-prev\" \"$f\"; "
                                      "else rm -f -- \"$f\"; fi; done";
static const char drop_script[] = "for f; do rm -f -- \"$f.slipway-prev\"; done";

static int prev_files(struct sw_host *h, const char *script, const struct sw_install_result *r,
                      int64_t deadline_ms, struct sw_err *e)
{
    const char *argv[] = {"sh", "-c", script, "sh", r->unit_path, r->env_path, NULL};
    return run(h, argv, deadline_ms, NULL, 0, e);
}

/* The unit's newest journal lines into r->journal (evidence for a failed start): the last 8
 * of the newest 40, without systemd's "Killing process" lines (a container's dozen helpers each
 * get one and would crowd out the engine's or podman's own words). */
static void journal_tail(struct sw_host *h, struct sw_install_result *r, int64_t deadline_ms)
{
    struct sw_host_journal j;
    struct sw_err e;
    size_t o = 0, keep[8], nk = 0;
    memset(&j, 0, sizeof(j));
    r->journal[0] = '\0';
    if (sw_host_journal_read(h, r->user, r->unit, NULL, 40, SW_MIN(deadline_ms, 10000), &j, &e))
        return;
    for (size_t i = j.n; i-- > 0 && nk < SW_ARRAY_LEN(keep);) {
        const char *m = j.v[i].message;
        if (m && *m && !strstr(m, ": Killing process "))
            keep[nk++] = i;
    }
    while (nk-- > 0 && o + 2 < sizeof(r->journal)) {
        int w =
            snprintf(r->journal + o, sizeof(r->journal) - o, "    %.220s\n", j.v[keep[nk]].message);
        if (w > 0)
            o = SW_MIN(o + (size_t)w, sizeof(r->journal) - 1);
    }
    sw_host_journal_free(&j);
}

/* Start (restart when it runs: the installed files are what must run) and wait until the unit
 * is active, /health answers 200 and a one-token generation comes back. */
/* Once the endpoint serves: device memory as the host's vendor tool reads it, recorded in the
 * ledger (when the caller gave one) as usage rows of the endpoint's devices. A host without a
 * tool, or a reading that cannot be recorded, is said in the step and never fails the install:
 * the endpoint serves. */
static void read_devices(struct ctx *c, struct sw_host *h, const struct sw_fleet_endpoint *ep,
                         int64_t deadline_ms)
{
    struct sw_install_result *r = c->r;
    struct sw_readings rs;
    struct sw_err le;
    char tool[32], note[512];
    step_begin(c);
    sw_err_clear(&le);
    int rc = sw__svc_devices(h, ep->host ? ep->host->name : "host", deadline_ms, &rs, tool,
                             sizeof(tool), note, sizeof(note));
    r->readings = json_object();
    if (r->readings) {
        sw_json_set_new(r->readings, "tool", tool[0] ? json_string(tool) : json_null());
        if (note[0])
            sw_json_set_str(r->readings, "note", note);
    }
    if (rc || !rs.n) {
        step_end(c, "readings", true, "%s", note[0] ? note : "no device read");
        sw_readings_free(&rs);
        return;
    }
    json_t *rj = sw_readings_json(&rs);
    if (r->readings && rj)
        json_object_set(r->readings, "readings", json_object_get(rj, "readings"));
    json_decref(rj);
    if (!c->o->ledger) {
        step_end(c, "readings", true, "%zu device(s) read by %s; no ledger given", rs.n, tool);
        sw_readings_free(&rs);
        return;
    }
    struct sw_readings_outcome *out = sw_calloc(rs.n, sizeof(*out));
    size_t recorded = 0;
    if (!out) {
        step_end(c, "readings", false, "out of memory");
        sw_readings_free(&rs);
        return;
    }
    struct sw_readings_record_opts ro = {.note = "read by slipway install once it served"};
    rc = sw_readings_record(c->o->ledger, ep, &rs, &ro, out, &recorded, &le);
    if (r->readings)
        sw_json_set_int(r->readings, "recorded", (int64_t)recorded);
    step_end(c, "readings", rc == 0, "%zu device(s) read by %s, %zu recorded in the ledger%s%s",
             rs.n, tool, recorded, rc ? ": " : "", rc ? le.msg : "");
    sw_free(out);
    sw_readings_free(&rs);
}

static int start_and_prove(struct ctx *c, struct sw_host *h, const struct sw_unit_render *ur,
                           int64_t deadline_ms, unsigned serve_ms, struct sw_err *e)
{
    struct sw_install_result *r = c->r;
    struct sw_host_result hr;
    struct sw_host_unit u;
    bool user = r->user;
    char bearer[512];
    const struct sw_engine *eng = sw__svc_engine(ur->ep);
    int rc;

    struct sw_host_route rt;
    uint64_t t0 = sw_now_ns(); /* serve_ms counts from here */
    memset(&rt, 0, sizeof(rt));
    bearer[0] = '\0';
    step_begin(c);
    rc = sw_host_unit_show(h, user, r->unit, deadline_ms, &u, e);
    uint64_t restarts0 = rc ? 0 : u.n_restarts;
    /* `systemctl restart` returns once ExecStartPre (a container's `podman run`, an image pull)
     * is done: bounded by the start -> serving budget, not one operation's deadline */
    rc = sw_host_systemctl(h, user, "restart", r->unit, SW_MAX(deadline_ms, (int64_t)serve_ms), &hr,
                           e);
    sw_host_result_free(&hr);
    step_end(c, "start", rc == 0, "systemctl%s restart %s%s%s", user ? " --user" : "", r->unit,
             rc ? ": " : "", rc ? e->msg : "");
    if (rc) {
        journal_tail(h, r, deadline_ms);
        return rc;
    }
    r->started = true;

    /* the way to it: direct, or through the host when it listens on the host's loopback */
    step_begin(c);
    rc = sw_host_route_open(&rt, ur->ep, h, deadline_ms, e);
    step_end(c, "route", rc == 0, "%s%s%s", rc ? e->msg : sw_fleet_route_name(rt.addr.route),
             rt.via[0] ? " through " : "", rt.via);
    if (rc)
        goto wipe;
    snprintf(r->via, sizeof(r->via), "%s", rt.via);
    sw__svc_bearer(ur, bearer, sizeof(bearer));
    /* active, then health: the unit's state is read each second so a crash loop ends the wait
     * at once instead of at the timeout */
    step_begin(c);
    uint64_t last_show = 0;
    double hms = 0;
    bool active = false;
    for (;;) {
        int64_t left = (int64_t)serve_ms - (int64_t)((sw_now_ns() - t0) / 1000000ull);
        if (left <= 0)
            break;
        if (!last_show || sw_now_ns() - last_show >= 1000000000ull) {
            last_show = sw_now_ns();
            rc = sw_host_unit_show(h, user, r->unit, SW_MIN(deadline_ms, left + 1000), &u, e);
            if (rc) {
                step_end(c, active ? "health" : "active", false, "%s", e->msg);
                goto wipe;
            }
            r->n_restarts = u.n_restarts;
            bool now_active = !strcmp(u.active_state, "active");
            if (now_active && !active) {
                active = true;
                r->active = true;
                step_end(c, "active", true, "ActiveState=active SubState=%s MainPID=%lld",
                         u.sub_state, (long long)u.main_pid);
                step_begin(c);
            }
            if (!strcmp(u.active_state, "failed") || u.n_restarts > restarts0 ||
                (active && !now_active)) {
                rc = sw_err_set(e, SW_ECHILD,
                                "%s on %s: %s/%s (result %s, NRestarts %llu, exit status %lld) "
                                "while waiting for it to serve",
                                r->unit, h->name, u.active_state, u.sub_state, u.result,
                                (unsigned long long)u.n_restarts, (long long)u.exec_main_status);
                step_end(c, active ? "health" : "active", false, "%s", e->msg);
                goto wipe;
            }
        }
        if (active) {
            int st = 0;
            sw__svc_health(eng, &rt, bearer, 2000, &st, &hms);
            r->health_status = st;
            if (st == 200)
                break;
        }
        sw_sleep_ms(250);
    }
    if (!active || r->health_status != 200) {
        rc =
            sw_err_set(e, SW_ECHILD, "%s on %s: %s within %.0f s (ActiveState=%s, last /health %d)",
                       r->unit, h->name, active ? "/health never answered 200" : "never active",
                       serve_ms / 1000.0, u.active_state, r->health_status);
        step_end(c, active ? "health" : "active", false, "%s", e->msg);
        goto wipe;
    }
    step_end(c, "health", true, "GET %s/health: 200 (%.0f ms)", r->url, hms);

    step_begin(c);
    double lms = 0;
    int64_t left = (int64_t)serve_ms - (int64_t)((sw_now_ns() - t0) / 1000000ull);
    bool live = sw__svc_liveness(eng, &rt, bearer, (unsigned)SW_MAX(left, 5000), r->liveness,
                                 sizeof(r->liveness), &lms);
    step_end(c, "liveness", live, "%s (%.0f ms)", r->liveness, lms);
    if (!live) {
        rc = sw_err_set(e, SW_ECHILD, "%s on %s: no generation: %s", r->unit, h->name, r->liveness);
        goto wipe;
    }
    r->serving = true;
    rc = 0;
wipe:
    sw_host_route_close(&rt);
    if (rc)
        journal_tail(h, r, deadline_ms);
    explicit_bzero(bearer, sizeof(bearer));
    return rc;
}

/* What no install can do: an endpoint without a host, a disabled one, one across nodes. */
static int install_refusal(const struct sw_fleet_endpoint *ep, struct sw_err *e)
{
    if (!ep->host)
        return sw_err_set(e, SW_EINVAL, "endpoint %s has no host", ep->name);
    if (!ep->enabled)
        return sw_err_set(e, SW_EINVAL,
                          "endpoint %s is disabled (enabled: false, kept for the record): not "
                          "installed",
                          ep->name);
    if (sw_fleet_endpoint_nodes(ep) > 1)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "endpoint %s spans %llu nodes (nodes:): one host's systemd unit cannot "
                          "serve it; render it for Kubernetes (slipway render --target k8s)",
                          ep->name, (unsigned long long)sw_fleet_endpoint_nodes(ep));
    return 0;
}

/* 1. the one render: the unit, where the endpoint answers, the render's warnings as findings */
static int install_render(struct ctx *c, struct sw_err *e)
{
    struct sw_install_result *r = c->r;
    step_begin(c);
    int rc = sw_unit_render_endpoint(c->f, c->ep, &c->ur, e);
    step_end(c, "render", rc == 0, "%s", rc ? e->msg : c->ur.service.name);
    if (rc)
        return rc;
    snprintf(r->unit, sizeof(r->unit), "%s", c->ur.service.name);
    r->user = c->ur.scope == SW_FLEET_SCOPE_USER;
    struct sw_fleet_addr fa;
    rc = sw_fleet_endpoint_addr(c->ep, &fa, e);
    if (rc)
        return rc;
    snprintf(r->url, sizeof(r->url), "%s", fa.url);
    snprintf(r->route, sizeof(r->route), "%s", sw_fleet_route_name(fa.route));
    r->findings = json_array();
    if (!r->findings)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->ur.n_warnings; i++)
        add_finding(r->findings, "render", "warning", 0, c->ur.warnings[i]);
    return 0;
}

/* 2. the lint here: an error refuses the install before the host is touched */
static int install_lint(struct ctx *c, struct sw_err *e)
{
    const struct sw_unit_render *ur = &c->ur;
    const struct sw_unit_report *rep = &c->rep;
    struct sw_unit_lint_opts lo = {0};
    step_begin(c);
    int rc =
        sw_unit_parse(ur->service.text, ur->service.len, ur->service.name, ur->env.text, &c->u, e);
    if (!rc)
        rc = sw_unit_lint(c->u, &lo, &c->rep, e);
    if (rc) {
        step_end(c, "lint", false, "%s", e->msg);
        return rc;
    }
    size_t n_err = 0;
    for (size_t i = 0; i < rep->n; i++) {
        bool err = rep->v[i].severity == SW_UNIT_ERROR;
        n_err += err;
        add_finding(c->r->findings, rep->v[i].law, err ? "error" : "warning", rep->v[i].line,
                    rep->v[i].msg);
    }
    step_end(c, "lint", n_err == 0, "%zu finding(s), %zu error(s)", rep->n, n_err);
    if (!n_err)
        return 0;
    c->r->refused = true;
    return sw_err_set(e, SW_EGATE, "%s: the unit lint found %zu error(s): nothing installed on %s",
                      ur->service.name, n_err, c->r->host);
}

/* 3. the host, reached; its $HOME (for a user unit or a %h) says where the files go */
static int install_open(struct ctx *c, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = c->ep;
    struct sw_install_result *r = c->r;
    char home[1024] = "";
    step_begin(c);
    unsigned ct = (unsigned)SW_MAX(1, SW_MIN(10, c->dl / 2000));
    int rc = sw_host_open_fleet(&c->h, ep->host, ct, e);
    if (!rc) {
        sw_host_describe(&c->h, r->transport, sizeof(r->transport));
        const char *argv[] = {"sh", "-c", "printf '%s\\n' \"$HOME\"", NULL};
        rc = run(&c->h, argv, c->dl, home, sizeof(home), e);
    }
    step_end(c, "open", rc == 0, "%s%s%s", r->transport, rc ? ": " : "", rc ? e->msg : "");
    if (rc)
        return rc;
    return sw__svc_paths(&c->ur, home, r->unit_path, sizeof(r->unit_path), r->env_path,
                         sizeof(r->env_path), e);
}

/* The files, staged here in a private directory of the run directory. */
static int install_stage(struct ctx *c, struct sw_err *e)
{
    int rc = sw_run_dir(c->stage, sizeof(c->stage), e);
    if (rc)
        return rc;
    size_t sl = strlen(c->stage);
    if (sl + 24 >= sizeof(c->stage))
        return sw_err_set(e, SW_ERANGE, "run directory path too long");
    memcpy(c->stage + sl, "/install-XXXXXX", 16);
    if (!mkdtemp(c->stage)) {
        rc = sw_err_set(e, SW_EIO, "mkdtemp %s: %s", c->stage, strerror(errno));
        c->stage[0] = '\0';
        return rc;
    }
    rc = sw_unit_render_write(&c->ur, c->stage, e);
    if (rc)
        return rc;
    snprintf(c->local_unit, sizeof(c->local_unit), "%s/%s", c->stage, c->ur.service.name);
    snprintf(c->local_env, sizeof(c->local_env), "%s/%s", c->stage, c->ur.env.name);
    return 0;
}

/* 4. verify on the host, on a staged copy (what it names exists there, not here): a line it
 * prints refuses the install */
static int install_verify(struct ctx *c, struct sw_err *e)
{
    size_t n_ver = 0;
    step_begin(c);
    int rc = verify_on_host(c, &c->h, &c->ur, c->local_unit, c->dl, &n_ver, e);
    step_end(c, "verify", rc == 0 && n_ver == 0, "%s",
             rc      ? e->msg
             : n_ver ? "systemd-analyze verify printed findings"
                     : "systemd-analyze verify said nothing");
    if (rc || !n_ver)
        return rc;
    c->r->refused = true;
    return sw_err_set(e, SW_EGATE,
                      "%s: systemd-analyze verify on %s printed %zu line(s): nothing installed",
                      c->ur.service.name, c->r->host, n_ver);
}

/* 5. the files in place: env first (the unit names it), each atomic with its mode; a copy that
 * failed half-way puts back the files it replaced */
static int install_copy(struct ctx *c, struct sw_err *e)
{
    struct sw_install_result *r = c->r;
    char ud[1024], ed[1024];
    struct sw_host_result hr;
    step_begin(c);
    snprintf(ud, sizeof(ud), "%s", r->unit_path);
    snprintf(ed, sizeof(ed), "%s", r->env_path);
    *strrchr(ud, '/') = '\0';
    *strrchr(ed, '/') = '\0';
    const char *argv[] = {"mkdir", "-p", "--", ud[0] ? ud : "/", ed[0] ? ed : "/", NULL};
    int rc = run(&c->h, argv, c->dl, NULL, 0, e);
    if (!rc)
        rc = prev_files(&c->h, keep_script, r, c->dl, e);
    if (!rc) {
        rc = sw_host_copy(&c->h, c->local_env, r->env_path, 0600, c->dl, &hr, e);
        sw_host_result_free(&hr);
    }
    if (!rc) {
        rc = sw_host_copy(&c->h, c->local_unit, r->unit_path, 0644, c->dl, &hr, e);
        sw_host_result_free(&hr);
    }
    if (rc) {
        struct sw_err pe;
        sw_err_clear(&pe);
        prev_files(&c->h, put_back_script, r, c->dl, &pe);
    }
    step_end(c, "copy", rc == 0, "%s%s%s (0644), %s (0600)", rc ? e->msg : "", rc ? "; " : "",
             r->unit_path, r->env_path);
    if (!rc)
        r->installed = true;
    return rc;
}

/* 6. daemon-reload. When the manager did not take the new files: put back what was there (or
 * remove what was not), and have it read those again, so nothing half-installed stays. */
static int install_reload(struct ctx *c, struct sw_err *e)
{
    struct sw_install_result *r = c->r;
    struct sw_host_result hr;
    step_begin(c);
    int rc = sw_host_systemctl(&c->h, r->user, "daemon-reload", NULL, c->dl, &hr, e);
    sw_host_result_free(&hr);
    if (!rc) {
        prev_files(&c->h, drop_script, r, c->dl, NULL);
        step_end(c, "daemon-reload", true, "systemctl%s daemon-reload", r->user ? " --user" : "");
        return 0;
    }
    struct sw_err pe;
    sw_err_clear(&pe);
    int prc = prev_files(&c->h, put_back_script, r, c->dl, &pe);
    if (!prc) {
        sw_host_systemctl(&c->h, r->user, "daemon-reload", NULL, c->dl, &hr, NULL);
        sw_host_result_free(&hr);
        r->installed = false;
    }
    step_end(c, "daemon-reload", false, "systemctl%s daemon-reload: %s; %s",
             r->user ? " --user" : "", e->msg,
             prc ? pe.msg : "the files that were there are back (nothing installed)");
    return rc;
}

/* The install's steps, in their order: each refuses or fails the install, or leaves what the
 * next needs in ctx. */
static int (*const install_steps[])(struct ctx *c, struct sw_err *e) = {
    install_render, install_lint, install_open,   install_stage,
    install_verify, install_copy, install_reload,
};

int sw_deploy_install(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                      const struct sw_install_opts *o, struct sw_install_result *r,
                      struct sw_err *e)
{
    struct ctx c = {.o = o,
                    .r = r,
                    .f = f,
                    .ep = ep,
                    .dl = o && o->deadline_ms > 0 ? o->deadline_ms : DEF_DEADLINE_MS};
    unsigned serve_ms = o && o->serve_timeout_ms ? o->serve_timeout_ms : DEF_SERVE_MS;
    struct sw_err mine;
    int rc;

    if (!e)
        e = &mine; /* the steps quote e's message */
    sw_err_clear(e);
    memset(r, 0, sizeof(*r));
    uint64_t t_all = sw_now_ns();
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", ep->name);
    snprintf(r->host, sizeof(r->host), "%s", ep->host ? ep->host->name : "");
    rc = install_refusal(ep, e);
    if (rc)
        return rc;
    for (size_t i = 0; i < SW_ARRAY_LEN(install_steps) && !rc; i++)
        rc = install_steps[i](&c, e);
    if (!rc && o && o->start) {
        rc = start_and_prove(&c, &c.h, &c.ur, c.dl, serve_ms, e);
        if (!rc)
            r->render_to_serving_s = (double)(sw_now_ns() - t_all) / 1e9;
        if (!rc)
            read_devices(&c, &c.h, ep, c.dl);
    }
    r->total_s = (double)(sw_now_ns() - t_all) / 1e9;
    rm_stage(c.stage, &c.ur);
    sw_unit_report_free(&c.rep);
    sw_unit_free(c.u);
    sw_unit_render_free(&c.ur);
    return rc;
}

void sw_install_result_free(struct sw_install_result *r)
{
    if (!r)
        return;
    json_decref(r->findings);
    r->findings = NULL;
    json_decref(r->readings);
    r->readings = NULL;
}

static int scope_json(json_t *o, const char *key, const void *obj)
{
    return sw_json_set_str(o, key,
                           ((const struct sw_install_result *)obj)->user ? "user" : "system");
}

/* steps: each with its name, verdict, time and detail */
static int steps_json(json_t *o, const char *key, const void *obj)
{
    const struct sw_install_result *r = obj;
    json_t *steps = json_array();
    for (size_t i = 0; steps && i < r->n_steps; i++) {
        const struct sw_install_step *s = &r->steps[i];
        json_array_append_new(steps, json_pack("{s:s,s:b,s:f,s:s}", "name", s->name, "ok", s->ok,
                                               "seconds", s->seconds, "detail", s->detail));
    }
    return sw_json_set_new(o, key, steps);
}

static int findings_json(json_t *o, const char *key, const void *obj)
{
    const struct sw_install_result *r = obj;
    return sw_json_set_new(o, key, r->findings ? json_incref(r->findings) : json_array());
}

#define R(kind, m)        SW_JSON_M(kind, struct sw_install_result, m, 0)
#define K(k, kind, m, fl) SW_JSON_ROW(k, kind, struct sw_install_result, m, fl)
/* clang-format off */
static const struct sw_json_field result_fields[] = {
    R(SW_JK_CHARS, endpoint), R(SW_JK_CHARS, host), R(SW_JK_CHARS, transport), R(SW_JK_CHARS, unit),
    SW_JSON_ROW_FN("scope", scope_json), R(SW_JK_CHARS, unit_path), R(SW_JK_CHARS, env_path),
    SW_JSON_ROW_FN("steps", steps_json), SW_JSON_ROW_FN("findings", findings_json),
    R(SW_JK_BOOL, refused), R(SW_JK_BOOL, installed), R(SW_JK_BOOL, started), R(SW_JK_BOOL, active),
    R(SW_JK_BOOL, serving), R(SW_JK_CHARS, url), R(SW_JK_CHARS, route),
    K("via", SW_JK_CHARS, via, SW_JF_OMIT), K("health", SW_JK_INT, health_status, 0),
    R(SW_JK_CHARS, liveness), R(SW_JK_CHARS, journal), K("restarts", SW_JK_U64, n_restarts, 0),
    R(SW_JK_DOUBLE, render_to_serving_s), K("devices", SW_JK_JSON, readings, SW_JF_OMIT),
    R(SW_JK_DOUBLE, total_s),
};
/* clang-format on */

json_t *sw_install_result_json(const struct sw_install_result *r)
{
    json_t *o = json_object();
    if (o)
        sw_json_put_fields(o, result_fields, SW_ARRAY_LEN(result_fields), r);
    return o;
}
