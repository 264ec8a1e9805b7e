/*
 * rollout: the deploy pipeline and its rollback (include/slipway/rollout.h says the steps).
 * Every step goes through rollout_record, the one place a step's outcome and time are kept (the
 * result's steps today; the ledger's deploy_steps when that is wired).
 */
#include "rollout_internal.h"

#include <slipway/gate.h>
#include <slipway/plan.h>
#include <slipway/probe.h>
#include <slipway/readings.h>
#include <slipway/service.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STOP_MS (5 * 60 * 1000)

static const char *const outcome_names[] = {
    "none",        "committed",       "dry_run",  "gate_failed", "refused",
    "rolled_back", "rollback_failed", "restored", "interrupted",
};

const char *sw_rollout_outcome_name(enum sw_rollout_outcome o)
{
    if ((unsigned)o >= SW_ARRAY_LEN(outcome_names))
        return "?";
    return outcome_names[o];
}

void sw_rollout_result_free(struct sw_rollout_result *r)
{
    if (!r)
        return;
    json_decref(r->steps);
    json_decref(r->gates);
    json_decref(r->probe);
    json_decref(r->boot);
    json_decref(r->diff);
    sw_free(r->journal);
    memset(r, 0, sizeof(*r));
}

static double ms_since(uint64_t t)
{
    return (double)(sw_now_ns() - t) / 1e6;
}

/* The one recording point of a step: kept in the result, printed as progress. */
static void rollout_record(struct sw__ro *c, const char *step, bool ok, uint64_t t_start,
                           const char *fmt, ...) SW_PRINTF(5, 6);
static void rollout_record(struct sw__ro *c, const char *step, bool ok, uint64_t t_start,
                           const char *fmt, ...)
{
    char detail[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    double ms = t_start ? ms_since(t_start) : 0;
    snprintf(c->last_step, sizeof(c->last_step), "%s", step);
    sw__ro_ledger_step(c, step, ok, ms, detail);
    json_t *s = json_object();
    if (s) {
        sw_json_set_str(s, "step", step);
        sw_json_set_bool(s, "ok", ok);
        sw_json_set_real(s, "ms", ms);
        sw_json_set_str(s, "detail", detail);
        json_array_append_new(c->r->steps, s);
    }
    if (c->o->progress) {
        fprintf(c->o->progress, "%-10s %-4s %8.0f ms  %s\n", step, ok ? "ok" : "FAIL", ms, detail);
        fflush(c->o->progress);
    }
}

static void fail_as(struct sw__ro *c, const char *step, const char *cls, const char *fmt, ...)
    SW_PRINTF(4, 5);
static void fail_as(struct sw__ro *c, const char *step, const char *cls, const char *fmt, ...)
{
    struct sw_rollout_result *r = c->r;
    snprintf(r->failed_step, sizeof(r->failed_step), "%s", step);
    snprintf(r->fail_class, sizeof(r->fail_class), "%s", cls);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->fail_msg, sizeof(r->fail_msg), fmt, ap);
    va_end(ap);
}

/* The transport to the host died after the host's files changed (or during the steps that
 * change them): nothing more can be done from here, neither a rollback nor a commit. The result
 * says how far it got; the lock this process holds is stale once it exits, so deploy or rollback
 * again converges. */
static void lost_host(struct sw__ro *c, const char *msg)
{
    struct sw_rollout_result *r = c->r;
    fail_as(c, c->last_step[0] ? c->last_step : "host", "ssh_dropped",
            "the connection to the host was lost after the step '%s': %.400s%s%.400s", c->last_step,
            msg, c->gone_msg[0] ? "; then: " : "", c->gone_msg);
    snprintf(r->rollback_msg, sizeof(r->rollback_msg),
             "not attempted: the host cannot be reached; it holds what the steps above left "
             "(run deploy or rollback again: the lock of this process is stale once it exits)");
    r->outcome = SW_ROLLOUT_INTERRUPTED;
    c->locked = false; /* it cannot be released over a dead transport */
    rollout_record(c, "interrupted", false, 0, "%s", r->fail_msg);
}

/* Did an error of a remote step come from a transport that is gone? SW_ENET says so; a remote
 * command that ends without a word (ssh exits 255 with nothing on stderr when its master
 * connection dies under it) is told apart by asking the host for `true`. */
static bool host_gone(struct sw__ro *c, int rc)
{
    if (rc == SW_ENET)
        return true;
    if (!rc || !c->host_open)
        return false;
    struct sw_host_result hr;
    struct sw_err pe;
    sw_err_clear(&pe);
    static const char script[] = "true\n";
    int prc = sw__ro_sh(c, script, NULL, 30000, &hr, &pe);
    sw_host_result_free(&hr);
    if (prc == SW_ENET)
        snprintf(c->gone_msg, sizeof(c->gone_msg), "%.500s", pe.msg);
    return prc == SW_ENET;
}

/* Paths and the URL of the endpoint on its host. */
static int ro_init(struct sw__ro *c, const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                   const struct sw_rollout_opts *o, struct sw_rollout_result *r, struct sw_err *e)
{
    memset(c, 0, sizeof(*c));
    c->f = f;
    c->ep = ep;
    c->o = o;
    c->r = r;
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", ep->name);
    r->downtime_ms = -1;
    r->steps = json_array();
    if (!r->steps)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (!ep->host)
        return sw_err_set(e, SW_EINVAL, "endpoint %s has no host", ep->name);
    if (ep->service.scope == SW_FLEET_SCOPE_USER)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "endpoint %s: a user-scope unit is not deployed by rollout yet",
                          ep->name);
    c->eng = sw_engine_find(sw_fleet_engine_name(ep->engine));
    if (!c->eng || !c->eng->health_path || !c->eng->liveness_path)
        return sw_err_set(e, SW_EUNSUPPORTED, "endpoint %s: engine %s has no health/liveness",
                          ep->name, sw_fleet_engine_name(ep->engine));
    struct sw_fleet_addr fa;
    int rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (rc)
        return rc;
    snprintf(c->url, sizeof(c->url), "%s", fa.url);
    return 0;
}

int sw__ro_route(struct sw__ro *c, struct sw_err *e)
{
    if (c->route_open)
        return sw_host_route_refresh(&c->route, 30000, e);
    int rc = sw_host_route_open(&c->route, c->ep, &c->h, 30000, e);
    if (rc) {
        sw_host_route_close(&c->route);
        return rc;
    }
    c->route_open = true;
    return 0;
}

static int ro_open(struct sw__ro *c, const struct sw_unit_render *rd, struct sw_err *e)
{
    snprintf(c->name, sizeof(c->name), "%s", rd->name);
    snprintf(c->unit, sizeof(c->unit), "%s.service", rd->name);
    snprintf(c->r->unit, sizeof(c->r->unit), "%s", c->unit);
    snprintf(c->live_unit, sizeof(c->live_unit), "/etc/systemd/system/%s", c->unit);
    snprintf(c->live_env, sizeof(c->live_env), "%s", rd->env_path);
    snprintf(c->state, sizeof(c->state), "/var/lib/slipway/rollout/%s", rd->name);
    int rc = sw_host_open_fleet(&c->h, c->ep->host, 5, e);
    if (rc)
        return rc;
    c->host_open = true;
    return 0;
}

/* The lock released and the ssh master asked to exit: nothing of this run outlives it. */
static void ro_close(struct sw__ro *c)
{
    if (c->route_open)
        sw_host_route_close(&c->route);
    c->route_open = false;
    sw__ro_unlock(c);
    if (c->host_open)
        sw_host_disconnect(&c->h);
    c->host_open = false;
}

static int systemctl(struct sw__ro *c, const char *verb, const char *unit, int64_t dl, char *why,
                     size_t n)
{
    struct sw_host_result hr;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_host_systemctl(&c->h, false, verb, unit, dl, &hr, &e);
    if (rc && why)
        snprintf(why, n, "systemctl %s %s: %.400s %.300s", verb, unit ? unit : "", e.msg,
                 hr.err ? hr.err : "");
    sw_host_result_free(&hr);
    return rc;
}

/* Bring up whatever the live files say, from a fresh cursor, and prove it serves: readiness and
 * one-token generation. Returns 0 when it serves (b->ready, gen ok); else the class in b. */
static int start_and_prove(struct sw__ro *c, const char *verb, struct sw__ro_boot *b,
                           bool *generated, struct sw_err *e)
{
    char *cursor = NULL;
    char why[1024];
    *generated = false;
    memset(b, 0, sizeof(*b));
    int rc = sw__ro_route(c, e);
    if (!rc)
        rc = sw__ro_cursor(c, &cursor, e);
    if (rc)
        return rc;
    systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
    uint64_t t = sw_now_ns();
    /* a start job that fails (Type=exec: the process died at once) is read like any other
     * death: the watch says what the unit and the journal show */
    bool refused = systemctl(c, verb, c->unit, STOP_MS, why, sizeof(why)) != 0;
    rollout_record(c, verb, !refused, t, "systemctl %s %s%s%s", verb, c->unit, refused ? ": " : "",
                   refused ? why : "");
    t = sw_now_ns();
    rc = sw__ro_watch(c, cursor, b, e);
    sw_free(cursor);
    if (rc)
        return rc;
    if (refused && !b->ready && !b->cls[0]) {
        snprintf(b->cls, sizeof(b->cls), "start_refused");
        snprintf(b->msg, sizeof(b->msg), "%.1000s", why);
    }
    if (!b->ready) {
        rollout_record(c, "boot", false, t, "%s: %s", b->cls, b->msg);
        return 0;
    }
    rollout_record(c, "readiness", true, t, "%s%s answered 200", c->url, c->eng->health_path);
    t = sw_now_ns();
    if (sw__ro_generate(c, why, sizeof(why))) {
        snprintf(b->cls, sizeof(b->cls), "dead_generation");
        snprintf(b->msg, sizeof(b->msg), "%s answered 200 but generation failed: %.900s",
                 c->eng->health_path, why);
        b->ready = false;
        rollout_record(c, "liveness", false, t, "%s", b->msg);
        return 0;
    }
    *generated = true;
    if (c->t_down && c->r->downtime_ms < 0)
        c->r->downtime_ms = (int64_t)((sw_now_ns() - c->t_down) / 1000000);
    rollout_record(c, "liveness", true, t, "one-token generation answered");
    return 0;
}

/* The new shape failed after the live files changed: put the rollback set back and prove it. */
static int roll_back(struct sw__ro *c, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    /* the last-good set when a deploy committed one (the live files may be an interrupted
     * deploy's unproven shape), else the live files saved before the swap */
    char set[600], lg[700];
    bool have_lg = false;
    snprintf(set, sizeof(set), "%s/last-good", c->state);
    snprintf(lg, sizeof(lg), "%.400s/%.250s", set, c->unit);
    if (sw__ro_exists(c, lg, &have_lg, NULL) || !have_lg)
        snprintf(set, sizeof(set), "%s/rollback", c->state);
    uint64_t t = sw_now_ns();
    if (!have_lg && !r->had_rollback_set) {
        char why[512] = "";
        systemctl(c, "stop", c->unit, STOP_MS, why, sizeof(why));
        systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
        struct sw_err re;
        sw_err_clear(&re);
        int rc = sw__ro_remove_live(c, &re);
        if (!rc)
            rc = systemctl(c, "daemon-reload", NULL, 60000, why, sizeof(why));
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "the host had no live unit before: the failed one is stopped and its files "
                 "moved to %.200s/failed/ %.150s",
                 c->state, rc ? re.msg : "");
        rollout_record(c, "rollback", rc == 0, t, "%s", r->rollback_msg);
        r->outcome = SW_ROLLOUT_ROLLED_BACK;
        return 0;
    }
    struct sw_err re;
    sw_err_clear(&re);
    char why[512] = "";
    /* the failed unit first: a crash loop left running restarts the old definition while the
     * files are put back (ASan's slower restore saw a restart of the broken binary land after
     * the explicit start, and read its exit 127 as the rollback's own death) */
    int rc = systemctl(c, "stop", c->unit, STOP_MS, why, sizeof(why));
    if (rc && host_gone(c, rc)) {
        lost_host(c, why);
        return 0;
    }
    systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
    why[0] = '\0';
    rc = sw__ro_restore(c, set, &re);
    if (!rc)
        rc = systemctl(c, "daemon-reload", NULL, 60000, why, sizeof(why));
    if (rc && host_gone(c, rc)) {
        lost_host(c, why[0] ? why : re.msg);
        return 0;
    }
    if (rc) {
        snprintf(r->rollback_msg, sizeof(r->rollback_msg), "restoring %.200s failed: %.150s%.100s",
                 set, re.msg, why);
        rollout_record(c, "rollback", false, t, "%s", r->rollback_msg);
        systemctl(c, "stop", c->unit, STOP_MS, NULL, 0);
        r->outcome = SW_ROLLOUT_ROLLBACK_FAILED;
        return 0;
    }
    rollout_record(c, "restore", true, t, "%s put back over %s and %s", set, c->live_unit,
                   c->live_env);
    struct sw__ro_boot b;
    bool gen = false;
    /* the downtime runs to the first generation of the shape that serves in the end */
    r->downtime_ms = -1;
    rc = start_and_prove(c, "restart", &b, &gen, e);
    if (rc) {
        sw__ro_boot_free(&b);
        return rc;
    }
    if (!gen && !strcmp(b.cls, "ssh_dropped")) {
        lost_host(c, b.msg);
        sw__ro_boot_free(&b);
        return 0;
    }
    if (gen) {
        r->serving = true;
        r->outcome = SW_ROLLOUT_ROLLED_BACK;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "%.400s serves again (readiness and one-token generation)", set);
    } else {
        /* nothing worse behind: the broken target does not crash-loop */
        systemctl(c, "stop", c->unit, STOP_MS, NULL, 0);
        systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
        r->outcome = SW_ROLLOUT_ROLLBACK_FAILED;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "%.200s failed too (%s: %.200s); the unit is stopped", set, b.cls, b.msg);
    }
    rollout_record(c, "rollback", gen, t, "%s", r->rollback_msg);
    sw__ro_boot_free(&b);
    return 0;
}

/* The dry run: every step with what it would write and the diff against the live files. */
static int dry_run(struct sw__ro *c, const struct sw_unit_render *rd, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    int rc = 0;
    char dir[] = "/tmp/slipway-rollout-XXXXXX";
    char *live = NULL, *live_env = NULL;
    bool exists = false, env_exists = false;
    r->diff = json_array();
    if (!mkdtemp(dir))
        return sw_err_set(e, SW_EIO, "mkdtemp %s failed", dir);
    rc = sw__ro_cat(c, c->live_unit, &live, &exists, e);
    if (rc)
        goto out;
    rc = sw__ro_cat(c, c->live_env, &live_env, &env_exists, e);
    if (rc)
        goto out;
    char a[700], b[700];
    snprintf(a, sizeof(a), "%s/live", dir);
    snprintf(b, sizeof(b), "%s/new", dir);
    rc = sw_write_file_atomic(a, live, strlen(live), 0600, e);
    rc = rc ? rc : sw_write_file_atomic(b, rd->service.text, rd->service.len, 0600, e);
    if (rc)
        goto out;
    struct sw_host lh;
    struct sw_host_cfg cfg = {.name = "local", .kind = SW_HOST_KIND_LOCAL};
    rc = sw_host_open(&lh, &cfg, e);
    if (rc)
        goto out;
    char la[600], lb[600];
    snprintf(la, sizeof(la), "%s (live)", c->live_unit);
    snprintf(lb, sizeof(lb), "%s (new)", c->live_unit);
    const char *argv[] = {"diff", "-u", "--label", la, "--label", lb, a, b, NULL};
    struct sw_host_result hr;
    sw_host_run(&lh, argv, NULL, &hr, NULL);
    json_t *d = json_pack("{s:s,s:s,s:b,s:s,s:b}", "file", rd->service.name, "path", c->live_unit,
                          "live_exists", exists, "diff", hr.out ? hr.out : "", "identical",
                          hr.exit_code == 0);
    json_array_append_new(r->diff, d);
    rollout_record(c, "diff", true, 0, "%s: %s", c->live_unit,
                   !exists             ? "no live unit: the whole file is new"
                   : hr.exit_code == 0 ? "identical to the live unit"
                                       : "differs from the live unit (diff below)");
    if (c->o->progress && hr.exit_code != 0 && hr.out)
        fputs(hr.out, c->o->progress);
    sw_host_result_free(&hr);
    bool env_same = env_exists && strlen(live_env) == rd->env.len &&
                    !memcmp(live_env, rd->env.text, rd->env.len);
    d = json_pack("{s:s,s:s,s:b,s:s,s:b}", "file", rd->env.name, "path", c->live_env, "live_exists",
                  env_exists, "diff",
                  env_same ? "" : "(not shown: the env file holds secret values)", "identical",
                  env_same);
    json_array_append_new(r->diff, d);
    rollout_record(c, "diff", true, 0, "%s: %s", c->live_env,
                   !env_exists ? "no live env file: new"
                   : env_same  ? "identical"
                               : "differs (not shown: it holds secret values)");
    rollout_record(c, "stage", true, 0, "would write %s.new (0644) and %s.new (0600)", c->live_unit,
                   c->live_env);
    rollout_record(c, "verify", true, 0, "would run systemd-analyze verify on the staged unit");
    rollout_record(c, "save", true, 0, "would save %s into %s/rollback/",
                   exists ? "the live files" : "nothing (no live unit)", c->state);
    rollout_record(c, "swap", true, 0,
                   "would rename the staged files over the live ones and "
                   "daemon-reload");
    rollout_record(c, "start", true, 0, "would stop %s and start it with the new files", c->unit);
    rollout_record(c, "watch", true, 0,
                   "would follow the journal, classify the boot, watch NRestarts, wait for "
                   "%s%s 200",
                   c->url, c->eng->health_path);
    rollout_record(c, "liveness", true, 0, "would POST %s for one token", c->eng->liveness_path);
    rollout_record(c, "probe", true, 0, "would run the battery%s",
                   c->o->worst_case ? " with worst_case" : "");
    rollout_record(c, "commit", true, 0, "would save the new files as %s/last-good/ and tag them",
                   c->state);
    r->outcome = SW_ROLLOUT_DRY_RUN;
    unlink(a);
    unlink(b);
out:
    sw_free(live);
    if (live_env) {
        memset(live_env, 0, strlen(live_env));
        sw_free(live_env);
    }
    rmdir(dir);
    return rc;
}

static int stage(struct sw__ro *c, const struct sw_unit_render *rd, struct sw_err *e)
{
    char dir[] = "/tmp/slipway-rollout-XXXXXX";
    if (!mkdtemp(dir))
        return sw_err_set(e, SW_EIO, "mkdtemp %s failed", dir);
    int rc = sw_unit_render_write(rd, dir, e);
    char src[700], dst[700];
    struct sw_host_result hr;
    if (!rc) {
        static const char mk[] = "mkdir -p \"$(dirname \"$1\")\" \"$2\"\n";
        const char *args[] = {c->live_env, c->state, NULL};
        rc = sw__ro_sh(c, mk, args, 30000, &hr, e);
        sw_host_result_free(&hr);
    }
    if (!rc) {
        snprintf(src, sizeof(src), "%s/%s", dir, rd->env.name);
        snprintf(dst, sizeof(dst), "%s.new", c->live_env);
        rc = sw_host_copy(&c->h, src, dst, 0600, 60000, &hr, e);
        sw_host_result_free(&hr);
    }
    if (!rc) {
        snprintf(src, sizeof(src), "%s/%s", dir, rd->service.name);
        snprintf(dst, sizeof(dst), "%s.new", c->live_unit);
        rc = sw_host_copy(&c->h, src, dst, 0644, 60000, &hr, e);
        sw_host_result_free(&hr);
    }
    snprintf(src, sizeof(src), "%s/%s", dir, rd->env.name);
    unlink(src);
    snprintf(src, sizeof(src), "%s/%s", dir, rd->service.name);
    unlink(src);
    rmdir(dir);
    return rc;
}

/* The payload manifest of a tag: every regular file of the endpoint's payload path (the file
 * itself, or the files under the directory) with its size and sha256 as read on the host, so
 * that a tag says which bytes it served. When the host cannot hash them (the tools missing, a
 * deadline passed) the path is kept with its size and sha256 null. */
static json_t *payload_manifest(struct sw__ro *c)
{
    const char *path = c->ep->payload.path.v;
    json_t *arr = json_array();
    if (!arr || !path)
        return arr;
    static const char hash_script[] =
        "set -e\n"
        "find -L \"$1\" -type f | LC_ALL=C sort | while IFS= read -r f; do\n"
        "  s=$(stat -Lc %s -- \"$f\"); h=$(sha256sum < \"$f\")\n"
        "  printf '%s %.64s %s\\n' \"$s\" \"$h\" \"$f\"\n"
        "done\n";
    const char *args[] = {path, NULL};
    struct sw_host_result hr;
    /* a payload is read once per commit, while the new shape already serves */
    if (sw__ro_sh(c, hash_script, args, 30 * 60 * 1000, &hr, NULL) == 0 && hr.out) {
        for (const char *l = hr.out; *l;) {
            const char *nl = strchr(l, '\n');
            size_t n = nl ? (size_t)(nl - l) : strlen(l);
            char line[4200], hex[65] = "";
            long long size = -1;
            int off = 0;
            snprintf(line, sizeof(line), "%.*s", (int)SW_MIN(n, sizeof(line) - 1), l);
            if (sscanf(line, "%lld %64[0-9a-f] %n", &size, hex, &off) == 2 && off > 0 &&
                strlen(hex) == 64 && size >= 0 && line[off] == '/')
                json_array_append_new(arr, json_pack("{s:s,s:I,s:s}", "path", line + off, "size",
                                                     (json_int_t)size, "sha256", hex));
            l = nl ? nl + 1 : l + n;
        }
    }
    sw_host_result_free(&hr);
    if (json_array_size(arr))
        return arr;
    static const char size_script[] = "stat -Lc %s \"$1\"\n";
    long long size = -1;
    if (sw__ro_sh(c, size_script, args, 30000, &hr, NULL) == 0)
        size = atoll(hr.out);
    sw_host_result_free(&hr);
    json_array_append_new(arr, json_pack("{s:s,s:I,s:n}", "path", path, "size",
                                         (json_int_t)(size < 0 ? 0 : size), "sha256"));
    return arr;
}

/* The image a tag records: the endpoint's image as its digest (name@sha256:...): the pinned
 * reference as the fleet gives it, else the digest the host's runtime holds for it (its first
 * RepoDigest); the reference as given when the runtime names none. "" for a native endpoint. */
static void image_digest(struct sw__ro *c, char *out, size_t n)
{
    const struct sw_fleet_endpoint *ep = c->ep;
    out[0] = '\0';
    if (!ep->image.v || ep->runtime.kind == SW_FLEET_RUNTIME_NATIVE)
        return;
    snprintf(out, n, "%s", ep->image.v);
    if (ep->image_pinned)
        return;
    const char *argv[] = {
        sw_fleet_runtime_name(ep->runtime.kind),      "image",     "inspect", "--format",
        "{{range .RepoDigests}}{{println .}}{{end}}", ep->image.v, NULL};
    struct sw_host_run_opts ro = {.deadline_ms = 30000};
    struct sw_host_result hr;
    if (sw_host_run(&c->h, argv, &ro, &hr, NULL) == 0 && hr.out) {
        const char *d = strstr(hr.out, "@sha256:");
        if (d) {
            const char *s = d;
            while (s > hr.out && s[-1] != '\n')
                s--;
            size_t len = strcspn(s, "\r\n");
            snprintf(out, n, "%.*s", (int)SW_MIN(len, n - 1), s);
        }
    }
    sw_host_result_free(&hr);
}

/* The device readings at commit: the host's vendor tool read once the new shape serves, each
 * reading of one of the endpoint's devices recorded as a usage row of the shape. What was read
 * (or why nothing was) in words into out. */
static void commit_readings(struct sw__ro *c, const json_t *shape, char *out, size_t n)
{
    struct sw_readings rs;
    char tool[32] = "", note[512] = "";
    int rc =
        sw_service_devices(&c->h, c->h.name, 60000, &rs, tool, sizeof(tool), note, sizeof(note));
    if (rc || !rs.n) {
        snprintf(out, n, "device readings: none (%.400s)", note[0] ? note : "no device read");
        sw_readings_free(&rs);
        return;
    }
    size_t off = (size_t)snprintf(out, n, "device readings (%s):", tool);
    for (size_t i = 0; i < rs.n && off < n; i++) {
        const struct sw_reading *rd = &rs.r[i];
        const struct sw_fleet_device *dev = sw_readings_match(c->ep, rd);
        struct sw_ledger_usage u;
        memset(&u, 0, sizeof(u));
        struct sw_err e;
        sw_err_clear(&e);
        if (!dev || sw_readings_to_usage(rd, &u, &e)) {
            off += (size_t)snprintf(out + off, n - off, " #%llu not recorded (%s)",
                                    (unsigned long long)rd->index,
                                    dev ? e.msg : "no device of the endpoint");
            continue;
        }
        u.endpoint = c->ep->name;
        u.shape = shape;
        u.device = dev->name;
        u.source = tool;
        u.source_line = rd->origin;
        u.note = "read by slipway deploy at commit";
        int64_t id = 0;
        rc = sw__ro_ledger_usage(c, &u, &id, &e);
        off +=
            (size_t)snprintf(out + off, n - off, " %s %llu/%llu MiB%s%s", dev->name,
                             (unsigned long long)u.used_mib, (unsigned long long)u.total_mib,
                             rc ? " (not recorded: " : (id ? " (recorded)" : ""), rc ? e.msg : "");
        if (rc && off < n)
            off += (size_t)snprintf(out + off, n - off, ")");
    }
    sw_readings_free(&rs);
}

static void probe(struct sw__ro *c)
{
    struct sw_rollout_result *r = c->r;
    uint64_t t = sw_now_ns();
    struct sw_probe_target pt = {0};
    pt.url = c->url;
    pt.unix_socket = c->route.unix_socket;
    pt.via = c->route.via;
    pt.engine = c->eng->name;
    pt.model = c->ep->alias.v ? c->ep->alias.v : NULL;
    pt.vision = -1;
    pt.worst_case = c->o->worst_case;
    pt.only = c->o->probe_only;
    pt.deadline_ms = c->o->probe_ms > 0 ? (unsigned)c->o->probe_ms : 0;
    struct sw_probe_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    /* a cursor before the battery: when a check fails, the journal after it says whether the
     * engine died under the request (the worst case past a MemoryMax=) */
    char *cursor = NULL;
    sw__ro_cursor(c, &cursor, NULL);
    int rc = sw__ro_route(c, &e);
    if (!rc)
        rc = sw_probe_run(&pt, &rep, &e);
    if (rc) {
        fail_as(c, "probe", "probe:error", "the battery could not run: %s", e.msg);
        rollout_record(c, "probe", false, t, "%s", r->fail_msg);
        sw_probe_report_free(&rep);
        sw_free(cursor);
        return;
    }
    r->probe = sw_probe_report_json(&rep);
    for (size_t i = 0; i < rep.n; i++) {
        if (rep.v[i].status != SW_PROBE_FAIL)
            continue;
        char cls[64], during[96];
        snprintf(cls, sizeof(cls), "probe:%s", rep.v[i].name);
        snprintf(during, sizeof(during), "the probe's %s request", rep.v[i].name);
        struct sw__ro_death d;
        sw__ro_runtime_death(c, cursor, during, &d);
        if (d.died) {
            /* the engine died under the request: that is the class, the check its evidence */
            fail_as(c, "probe", d.cls, "%s; probe check %s: %s (%s)", d.msg, rep.v[i].name,
                    rep.v[i].reason, rep.v[i].evidence);
            json_decref(r->boot);
            r->boot = d.evidence;
            if (r->boot)
                sw_json_set_str(r->boot, "check", rep.v[i].name);
            d.evidence = NULL;
            if (d.journal) {
                sw_free(r->journal);
                r->journal = d.journal;
                d.journal = NULL;
            }
        } else {
            fail_as(c, "probe", cls, "probe check %s failed: %s (%s)", rep.v[i].name,
                    rep.v[i].reason, rep.v[i].evidence);
        }
        json_decref(d.evidence);
        sw_free(d.journal);
        break;
    }
    sw_free(cursor);
    rollout_record(c, "probe", rep.failed == 0, t, "%d passed, %d failed, %d skipped%s%s",
                   rep.passed, rep.failed, rep.skipped, rep.failed ? ": " : "",
                   rep.failed ? r->fail_msg : "");
    sw_probe_report_free(&rep);
}

int sw_rollout_deploy(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                      const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                      struct sw_err *e)
{
    struct sw__ro c;
    struct sw_unit_render rd;
    struct sw_rollout_opts dflt = {0};
    memset(r, 0, sizeof(*r));
    memset(&rd, 0, sizeof(rd));
    int rc = ro_init(&c, f, ep, o ? o : &dflt, r, e);
    if (rc)
        return rc;
    o = c.o;

    /* plan + every gate: a failure touches nothing on the host */
    uint64_t t = sw_now_ns();
    struct sw_gate_opts go = {0};
    go.ledger = o->ledger;
    rc = sw_gate_endpoint(f, ep, &go, &r->gates, e);
    if (rc)
        goto out;
    const json_t *gs = json_object_get(r->gates, "gates");
    const json_t *shape = json_object_get(r->gates, "shape");
    if (!o->dry_run) {
        rc = sw__ro_ledger_begin(&c, shape, e);
        if (rc)
            goto out;
        r->attempt = c.attempt;
    }
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        if (strcmp(json_string_value(json_object_get(g, "verdict")), "fail"))
            continue;
        const char *name = json_string_value(json_object_get(g, "gate"));
        char cls[64];
        snprintf(cls, sizeof(cls), "gate:%s", name);
        fail_as(&c, "gate", cls, "gate %s failed: %s", name,
                json_string_value(json_object_get(g, "line")));
        r->outcome = SW_ROLLOUT_GATE_FAILED;
        rollout_record(&c, "gate", false, t, "%s (nothing on the host was touched)", r->fail_msg);
        goto out;
    }
    rollout_record(&c, "gate", true, t, "%zu gates: none failed", json_array_size(gs));

    t = sw_now_ns();
    if (sw_fleet_endpoint_nodes(ep) > 1) {
        rc = sw_err_set(e, SW_EUNSUPPORTED,
                        "endpoint %s spans %llu nodes (nodes:): one host's systemd unit cannot "
                        "serve it; render it for Kubernetes (slipway render --target k8s)",
                        ep->name, (unsigned long long)sw_fleet_endpoint_nodes(ep));
        goto out;
    }
    rc = sw_unit_render_endpoint(f, ep, &rd, e);
    if (rc)
        goto out;
    rollout_record(&c, "render", true, t, "%s and %s", rd.service.name, rd.env.name);
    rc = ro_open(&c, &rd, e);
    if (rc)
        goto out;
    if (o->dry_run) {
        rc = dry_run(&c, &rd, e);
        goto out;
    }

    t = sw_now_ns();
    rc = sw__ro_lock(&c, e);
    if (rc)
        goto out;
    rollout_record(&c, "lock", true, t, "/run/slipway/%s.lock on %s%s%s%s", c.name, c.h.name,
                   c.lock_stale[0] ? " (taken over from a dead holder: " : "", c.lock_stale,
                   c.lock_stale[0] ? ")" : "");

    t = sw_now_ns();
    rc = stage(&c, &rd, e);
    if (rc && host_gone(&c, rc))
        goto out;
    if (rc) {
        /* the host's own words (ENOSPC's "No space left on device") name the class */
        fail_as(&c, "stage", strstr(e->msg, "No space left") ? "disk_full" : "stage", "%s", e->msg);
        rollout_record(&c, "stage", false, t, "%s", e->msg);
        sw__ro_unstage(&c);
        r->outcome = SW_ROLLOUT_REFUSED;
        rc = 0;
        goto out;
    }
    rollout_record(&c, "stage", true, t, "%s.new and %s.new written beside the live files",
                   c.live_unit, c.live_env);

    t = sw_now_ns();
    char vout[2048];
    rc = sw__ro_verify(&c, vout, sizeof(vout), e);
    if (rc && host_gone(&c, rc))
        goto out;
    if (rc) {
        fail_as(&c, "verify", "verify", "systemd-analyze verify: %.900s", vout[0] ? vout : e->msg);
        rollout_record(&c, "verify", false, t, "%s", r->fail_msg);
        sw__ro_unstage(&c);
        r->outcome = SW_ROLLOUT_REFUSED;
        rc = 0;
        goto out;
    }
    rollout_record(&c, "verify", true, t, "systemd-analyze verify: %s", vout[0] ? vout : "clean");

    /* was anything serving? */
    struct sw_host_unit before;
    memset(&before, 0, sizeof(before));
    sw_host_unit_show(&c.h, false, c.unit, 30000, &before, NULL);
    bool was_active = !strcmp(before.active_state, "active") ||
                      !strcmp(before.active_state, "activating") ||
                      !strcmp(before.active_state, "reloading");

    t = sw_now_ns();
    char set[600];
    snprintf(set, sizeof(set), "%s/rollback", c.state);
    rc = sw__ro_save(&c, set, &r->had_rollback_set, e);
    if (rc && host_gone(&c, rc))
        goto out;
    if (rc) {
        fail_as(&c, "save", strstr(e->msg, "No space left") ? "disk_full" : "save", "%s", e->msg);
        rollout_record(&c, "save", false, t, "%s", e->msg);
        sw__ro_unstage(&c);
        r->outcome = SW_ROLLOUT_REFUSED;
        rc = 0;
        goto out;
    }
    rollout_record(&c, "save", true, t, "%s",
                   r->had_rollback_set ? "live files saved as the rollback set"
                                       : "no live unit: nothing to roll back to");

    t = sw_now_ns();
    rc = sw__ro_swap(&c, e);
    char why[1024] = "";
    if (!rc)
        rc = systemctl(&c, "daemon-reload", NULL, 60000, why, sizeof(why));
    if (rc && host_gone(&c, rc)) {
        lost_host(&c, why[0] ? why : e->msg);
        rc = 0;
        goto out;
    }
    if (rc) {
        fail_as(&c, "swap", "swap", "%s%s", e->msg, why);
        rollout_record(&c, "swap", false, t, "%s", r->fail_msg);
        rc = roll_back(&c, e);
        goto out;
    }
    rollout_record(&c, "swap", true, t, "staged files renamed over the live ones; daemon-reload");

    if (was_active) {
        t = sw_now_ns();
        c.t_down = t;
        r->stopped = true;
        int src = systemctl(&c, "stop", c.unit, STOP_MS, why, sizeof(why));
        if (src && host_gone(&c, src)) {
            lost_host(&c, why);
            goto out;
        }
        if (src)
            rollout_record(&c, "stop", false, t, "%s", why);
        else
            rollout_record(&c, "stop", true, t, "%s stopped (was %s)", c.unit, before.active_state);
    }

    struct sw__ro_boot b;
    bool gen = false;
    rc = start_and_prove(&c, "start", &b, &gen, e);
    if (rc) {
        sw__ro_boot_free(&b);
        goto out;
    }
    r->boot = b.evidence;
    b.evidence = NULL;
    if (r->boot && b.cls[0])
        sw_json_set_str(r->boot, "class", b.cls);
    r->journal = b.journal;
    b.journal = NULL;
    if (!gen && !strcmp(b.cls, "ssh_dropped")) {
        lost_host(&c, b.msg);
        sw__ro_boot_free(&b);
        goto out;
    }
    if (!gen) {
        fail_as(&c, b.cls[0] && !strcmp(b.cls, "dead_generation") ? "liveness" : "boot", b.cls,
                "%s", b.msg);
        sw__ro_boot_free(&b);
        rc = roll_back(&c, e);
        goto out;
    }
    sw__ro_boot_free(&b);

    probe(&c);
    if (r->fail_class[0]) {
        rc = roll_back(&c, e);
        goto out;
    }

    t = sw_now_ns();
    char readings[1024], image[512];
    commit_readings(&c, shape, readings, sizeof(readings));
    image_digest(&c, image, sizeof(image));
    json_t *payload = payload_manifest(&c);
    size_t n_payload = json_array_size(payload);
    /* the host first: its last-good is what a rollback reads, so the ledger names a tag only
     * once the host holds it (a transport lost here leaves the attempt interrupted, never a
     * ledger tag the host does not have); the host's tag directory then takes the ledger's name */
    char host_tag[sizeof(r->tag)] = "";
    rc = sw__ro_commit(&c, host_tag, sizeof(host_tag), e);
    if (rc) {
        json_decref(payload);
        rollout_record(&c, "commit", false, t, "%s", e->msg);
        goto out;
    }
    snprintf(r->tag, sizeof(r->tag), "%s", host_tag);
    if (sw__ro_ledger_commit(&c, shape, &rd, payload, image[0] ? image : NULL, r->tag,
                             sizeof(r->tag), e)) {
        snprintf(r->ledger_msg, sizeof(r->ledger_msg), "the tag: %.480s", e->msg);
        sw_err_clear(e);
        snprintf(r->tag, sizeof(r->tag), "%s", host_tag);
    }
    json_decref(payload);
    if (strcmp(r->tag, host_tag) && sw__ro_rename_tag(&c, host_tag, r->tag, e)) {
        snprintf(r->ledger_msg, sizeof(r->ledger_msg),
                 "the host's tag directory %.100s could not take the ledger's name %.100s: %.150s",
                 host_tag, r->tag, e->msg);
        sw_err_clear(e);
    }
    rollout_record(&c, "commit", true, t,
                   "%s/last-good/ holds the new files; tag %s; payload %zu file(s) hashed%s%s; "
                   "%s",
                   c.state, r->tag, n_payload, image[0] ? "; image " : "", image, readings);
    r->serving = true;
    r->outcome = SW_ROLLOUT_COMMITTED;
out:
    if (rc && c.locked && r->outcome == SW_ROLLOUT_NONE && host_gone(&c, rc)) {
        /* the transport died once the host was ours: a verdict, not an error */
        lost_host(&c, e->msg);
        rc = 0;
    }
    if (rc == SW_ENET && !c.locked && r->outcome == SW_ROLLOUT_NONE)
        fail_as(&c, "connect", "unreachable", "%s", e->msg); /* nothing was touched */
    if (rc && r->outcome == SW_ROLLOUT_NONE && !r->failed_step[0])
        fail_as(&c, "error", "error", "%s", e ? e->msg : "error");
    if (c.attempt > 0 && r->outcome != SW_ROLLOUT_COMMITTED) {
        if (r->outcome == SW_ROLLOUT_NONE) /* an error ended it: what it left is on the host */
            r->outcome = r->stopped ? SW_ROLLOUT_ROLLBACK_FAILED : SW_ROLLOUT_REFUSED;
        sw__ro_ledger_finish(&c);
    }
    ro_close(&c);
    sw_unit_render_free(&rd);
    return rc;
}

int sw_rollout_rollback(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                        const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                        struct sw_err *e)
{
    struct sw__ro c;
    struct sw_unit_render rd;
    struct sw_rollout_opts dflt = {0};
    memset(r, 0, sizeof(*r));
    memset(&rd, 0, sizeof(rd));
    int rc = ro_init(&c, f, ep, o ? o : &dflt, r, e);
    if (rc)
        return rc;
    o = c.o;
    /* the render names the unit and the env path: the same the deploy used */
    rc = sw_unit_render_endpoint(f, ep, &rd, e);
    if (rc)
        goto out;
    rc = ro_open(&c, &rd, e);
    if (rc)
        goto out;
    uint64_t t = sw_now_ns();
    rc = sw__ro_lock(&c, e);
    if (rc)
        goto out;
    rollout_record(&c, "lock", true, t, "/run/slipway/%s.lock on %s%s%s%s", c.name, c.h.name,
                   c.lock_stale[0] ? " (taken over from a dead holder: " : "", c.lock_stale,
                   c.lock_stale[0] ? ")" : "");

    char set[700];
    bool yes = false;
    if (o->to_tag) {
        if (strchr(o->to_tag, '/') || o->to_tag[0] == '.' || !o->to_tag[0]) {
            rc = sw_err_set(e, SW_EINVAL, "--to %s: not a tag name", o->to_tag);
            goto out;
        }
        snprintf(set, sizeof(set), "%s/tags/%s", c.state, o->to_tag);
    } else {
        snprintf(set, sizeof(set), "%s/last-good", c.state);
        rc = sw__ro_exists(&c, set, &yes, e);
        if (rc)
            goto out;
        if (!yes)
            snprintf(set, sizeof(set), "%s/rollback", c.state);
    }
    rc = sw__ro_exists(&c, set, &yes, e);
    if (rc)
        goto out;
    if (!yes) {
        rc = sw_err_set(e, SW_ENOENT, "%s: no saved set for %s (%s)", c.h.name, c.name, set);
        goto out;
    }
    struct sw_host_unit before;
    memset(&before, 0, sizeof(before));
    sw_host_unit_show(&c.h, false, c.unit, 30000, &before, NULL);
    t = sw_now_ns();
    c.t_down = t;
    r->stopped = !strcmp(before.active_state, "active");
    char why[512] = "";
    if (strcmp(before.active_state, "active") && strcmp(before.active_state, "inactive")) {
        /* a crash loop (activating, auto-restart, failed): stopped before its files change,
         * or a restart of the old definition can land after ours */
        rc = systemctl(&c, "stop", c.unit, STOP_MS, why, sizeof(why));
        if (rc && host_gone(&c, rc)) {
            lost_host(&c, why);
            rc = 0;
            goto out;
        }
        systemctl(&c, "reset-failed", c.unit, 30000, NULL, 0);
        why[0] = '\0';
    }
    rc = sw__ro_restore(&c, set, e);
    if (!rc)
        rc = systemctl(&c, "daemon-reload", NULL, 60000, why, sizeof(why));
    if (rc && host_gone(&c, rc)) {
        lost_host(&c, why[0] ? why : e->msg);
        rc = 0;
        goto out;
    }
    if (rc) {
        rollout_record(&c, "restore", false, t, "%s%s", e->msg, why);
        goto out;
    }
    rollout_record(&c, "restore", true, t, "%s put back over %s", set, c.live_unit);
    struct sw__ro_boot b;
    bool gen = false;
    rc = start_and_prove(&c, "restart", &b, &gen, e);
    if (rc) {
        sw__ro_boot_free(&b);
        goto out;
    }
    r->boot = b.evidence;
    b.evidence = NULL;
    r->journal = b.journal;
    b.journal = NULL;
    if (!gen && !strcmp(b.cls, "ssh_dropped")) {
        lost_host(&c, b.msg);
    } else if (gen) {
        r->serving = true;
        r->outcome = SW_ROLLOUT_RESTORED;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg), "%.400s serves", set);
    } else {
        fail_as(&c, "rollback", b.cls, "%s", b.msg);
        systemctl(&c, "stop", c.unit, STOP_MS, NULL, 0);
        systemctl(&c, "reset-failed", c.unit, 30000, NULL, 0);
        r->outcome = SW_ROLLOUT_ROLLBACK_FAILED;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "%.400s did not serve: the unit is stopped", set);
    }
    sw__ro_boot_free(&b);
out:
    if (rc && c.locked && r->outcome == SW_ROLLOUT_NONE && host_gone(&c, rc)) {
        lost_host(&c, e->msg);
        rc = 0;
    }
    ro_close(&c);
    sw_unit_render_free(&rd);
    return rc;
}

int sw_rollout_survives_worst_case(const struct sw_rollout_result *r)
{
    if (!strcmp(r->fail_class, "runtime_oom") || !strcmp(r->fail_class, "probe:worst_case"))
        return 0;
    const json_t *checks = json_object_get(r->probe, "checks");
    for (size_t i = 0; i < json_array_size(checks); i++) {
        const json_t *ck = json_array_get(checks, i);
        const char *name = json_string_value(json_object_get(ck, "name"));
        if (!name || strcmp(name, "worst_case"))
            continue;
        const char *st = json_string_value(json_object_get(ck, "status"));
        if (st && !strcmp(st, "pass"))
            return 1;
        if (st && !strcmp(st, "fail"))
            return 0;
    }
    return -1;
}

json_t *sw_rollout_result_json(const struct sw_rollout_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = sw_json_set_str(o, "endpoint", r->endpoint);
    rc = rc ? rc : sw_json_set_str(o, "unit", r->unit);
    rc = rc ? rc : sw_json_set_str(o, "outcome", sw_rollout_outcome_name(r->outcome));
    rc = rc ? rc : sw_json_set_str(o, "failed_step", r->failed_step);
    rc = rc ? rc : sw_json_set_str(o, "fail_class", r->fail_class);
    rc = rc ? rc : sw_json_set_str(o, "fail_msg", r->fail_msg);
    rc = rc ? rc : sw_json_set_str(o, "rollback", r->rollback_msg);
    rc = rc ? rc : sw_json_set_str(o, "tag", r->tag);
    rc = rc ? rc : sw_json_set_int(o, "attempt", r->attempt);
    rc = rc ? rc : sw_json_set_int(o, "rule_id", r->rule_id);
    rc = rc ? rc : sw_json_set_str(o, "ledger_error", r->ledger_msg);
    rc = rc ? rc : sw_json_set_bool(o, "had_rollback_set", r->had_rollback_set);
    rc = rc ? rc : sw_json_set_bool(o, "stopped", r->stopped);
    rc = rc ? rc : sw_json_set_bool(o, "serving", r->serving);
    if (!rc)
        rc = r->downtime_ms >= 0 ? sw_json_set_int(o, "downtime_ms", r->downtime_ms)
                                 : sw_json_set_new(o, "downtime_ms", json_null());
    rc = rc ? rc : sw_json_set_new(o, "steps", r->steps ? json_incref(r->steps) : json_array());
    rc = rc ? rc : sw_json_set_new(o, "gates", r->gates ? json_incref(r->gates) : json_null());
    rc = rc ? rc : sw_json_set_new(o, "boot", r->boot ? json_incref(r->boot) : json_null());
    rc = rc ? rc : sw_json_set_new(o, "probe", r->probe ? json_incref(r->probe) : json_null());
    rc = rc ? rc : sw_json_set_new(o, "diff", r->diff ? json_incref(r->diff) : json_null());
    if (!rc)
        rc = r->journal ? sw_json_set_str(o, "journal", r->journal)
                        : sw_json_set_new(o, "journal", json_null());
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}
