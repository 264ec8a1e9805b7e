/*
 * rollout: the gated deploy of an endpoint's shape on its host (include/slipway/rollout.h says
 * the steps), one step after another: the gates (a failure touches nothing on the host), the
 * render, the lock, the new files staged beside the live ones, systemd-analyze verify, the live
 * files saved, the swap, the old unit stopped, the new one started and watched to readiness and
 * one-token liveness, the probe battery, the commit (commit.c). Until the swap a failure is a
 * refusal (the staged files removed, nothing live changed); after it, a rollback (rollback.c).
 * The dry run says every step and diffs the render against the live files.
 *
 * One concept: the deploy's pipeline, and the result it leaves (its outcome's name, its JSON,
 * what the battery said of the worst case); the session with the host, each step's record and
 * the failures' names are session.c's.
 */
#include "rollout_internal.h"

#include <slipway/gate.h>
#include <slipway/probe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    sw__ro_record(c, "diff", true, 0, "%s: %s", c->live_unit,
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
    sw__ro_record(c, "diff", true, 0, "%s: %s", c->live_env,
                  !env_exists ? "no live env file: new"
                  : env_same  ? "identical"
                              : "differs (not shown: it holds secret values)");
    sw__ro_record(c, "stage", true, 0, "would write %s.new (0644) and %s.new (0600)", c->live_unit,
                  c->live_env);
    sw__ro_record(c, "verify", true, 0, "would run systemd-analyze verify on the staged unit");
    sw__ro_record(c, "save", true, 0, "would save %s into %s/rollback/",
                  exists ? "the live files" : "nothing (no live unit)", c->state);
    sw__ro_record(c, "swap", true, 0,
                  "would rename the staged files over the live ones and "
                  "daemon-reload");
    sw__ro_record(c, "start", true, 0, "would stop %s and start it with the new files", c->unit);
    sw__ro_record(c, "watch", true, 0,
                  "would follow the journal, classify the boot, watch NRestarts, wait for "
                  "%s%s 200",
                  c->url, c->eng->health_path);
    sw__ro_record(c, "liveness", true, 0, "would POST %s for one token", c->eng->liveness_path);
    sw__ro_record(c, "probe", true, 0, "would run the battery%s",
                  c->o->worst_case ? " with worst_case" : "");
    sw__ro_record(c, "commit", true, 0, "would save the new files as %s/last-good/ and tag them",
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
        sw__ro_fail(c, "probe", "probe:error", "the battery could not run: %s", e.msg);
        sw__ro_record(c, "probe", false, t, "%s", r->fail_msg);
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
            sw__ro_fail(c, "probe", d.cls, "%s; probe check %s: %s (%s)", d.msg, rep.v[i].name,
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
            sw__ro_fail(c, "probe", cls, "probe check %s failed: %s (%s)", rep.v[i].name,
                        rep.v[i].reason, rep.v[i].evidence);
        }
        json_decref(d.evidence);
        sw_free(d.journal);
        break;
    }
    sw_free(cursor);
    sw__ro_record(c, "probe", rep.failed == 0, t, "%d passed, %d failed, %d skipped%s%s",
                  rep.passed, rep.failed, rep.skipped, rep.failed ? ": " : "",
                  rep.failed ? r->fail_msg : "");
    sw_probe_report_free(&rep);
}

/* Plan + every gate: a failure touches nothing on the host (outcome gate_failed). The ledger's
 * attempt begins here (not for a dry run). */
static int gates(struct sw__ro *c, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    uint64_t t = sw_now_ns();
    struct sw_gate_opts go = {0};
    go.ledger = c->o->ledger;
    int rc = sw_gate_endpoint(c->f, c->ep, &go, &r->gates, e);
    if (rc)
        return rc;
    const json_t *gs = json_object_get(r->gates, "gates");
    if (!c->o->dry_run) {
        rc = sw__ro_ledger_begin(c, json_object_get(r->gates, "shape"), e);
        if (rc)
            return rc;
        r->attempt = c->attempt;
    }
    const json_t *waivers = json_object_get(r->gates, "waivers");
    char wsum[600] = "";
    size_t wo = 0;
    for (size_t i = 0; i < json_array_size(waivers) && wo < sizeof(wsum); i++) {
        const json_t *w = json_array_get(waivers, i);
        int n = snprintf(wsum + wo, sizeof(wsum) - wo, "%s%s until %s (\"%.160s\")",
                         i ? ", " : "; WAIVED: ", json_string_value(json_object_get(w, "gate")),
                         json_string_value(json_object_get(w, "until")),
                         json_string_value(json_object_get(w, "reason")));
        if (n > 0)
            wo += (size_t)n;
    }
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        if (!sw_gate_verdict_blocks(json_string_value(json_object_get(g, "verdict"))))
            continue;
        const char *name = json_string_value(json_object_get(g, "gate"));
        char cls[64];
        snprintf(cls, sizeof(cls), "gate:%s", name);
        sw__ro_fail(c, "gate", cls, "gate %s failed: %s", name,
                    json_string_value(json_object_get(g, "line")));
        r->outcome = SW_ROLLOUT_GATE_FAILED;
        sw__ro_record(c, "gate", false, t, "%s (nothing on the host was touched)%s", r->fail_msg,
                      wsum);
        sw__ro_ledger_waivers(c, waivers);
        return 0;
    }
    sw__ro_record(c, "gate", true, t, "%zu gates: none failed%s", json_array_size(gs), wsum);
    sw__ro_ledger_waivers(c, waivers);
    return 0;
}

/* The render, and the host opened: one host's systemd unit serves the endpoint. */
static int render(struct sw__ro *c, struct sw_unit_render *rd, struct sw_err *e)
{
    uint64_t t = sw_now_ns();
    const struct sw_fleet_endpoint *ep = c->ep;
    if (sw_fleet_endpoint_nodes(ep) > 1)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "endpoint %s spans %llu nodes (nodes:): one host's systemd unit cannot "
                          "serve it; render it for Kubernetes (slipway render --target k8s)",
                          ep->name, (unsigned long long)sw_fleet_endpoint_nodes(ep));
    int rc = sw_unit_render_endpoint(c->f, ep, rd, e);
    if (rc)
        return rc;
    sw__ro_record(c, "render", true, t, "%s and %s", rd->service.name, rd->env.name);
    return sw__ro_open(c, rd, e);
}

/* A step before the swap failed: a refusal (the staged files removed, nothing live changed),
 * unless the host is gone (rc kept: the caller settles it). */
static int refuse(struct sw__ro *c, const char *step, const char *cls, uint64_t t, int rc,
                  const char *msg)
{
    if (sw__ro_host_gone(c, rc))
        return rc;
    sw__ro_fail(c, step, cls, "%s", msg);
    sw__ro_record(c, step, false, t, "%s", c->r->fail_msg);
    sw__ro_unstage(c);
    c->r->outcome = SW_ROLLOUT_REFUSED;
    return 0;
}

/* The new files staged beside the live ones and verified: either a refusal when it fails. */
static int prepare(struct sw__ro *c, const struct sw_unit_render *rd, struct sw_err *e)
{
    uint64_t t = sw_now_ns();
    int rc = stage(c, rd, e);
    /* the host's own words (ENOSPC's "No space left on device") name the class */
    if (rc)
        return refuse(c, "stage", strstr(e->msg, "No space left") ? "disk_full" : "stage", t, rc,
                      e->msg);
    sw__ro_record(c, "stage", true, t, "%s.new and %s.new written beside the live files",
                  c->live_unit, c->live_env);
    t = sw_now_ns();
    char vout[2048], msg[1000];
    rc = sw__ro_verify(c, vout, sizeof(vout), e);
    if (rc) {
        snprintf(msg, sizeof(msg), "systemd-analyze verify: %.900s", vout[0] ? vout : e->msg);
        return refuse(c, "verify", "verify", t, rc, msg);
    }
    sw__ro_record(c, "verify", true, t, "systemd-analyze verify: %s", vout[0] ? vout : "clean");
    return 0;
}

/* The live files saved as the rollback set (a refusal when that fails). */
static int save(struct sw__ro *c, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    uint64_t t = sw_now_ns();
    char set[600];
    snprintf(set, sizeof(set), "%s/rollback", c->state);
    int rc = sw__ro_save(c, set, &r->had_rollback_set, e);
    if (rc)
        return refuse(c, "save", strstr(e->msg, "No space left") ? "disk_full" : "save", t, rc,
                      e->msg);
    sw__ro_record(c, "save", true, t, "%s",
                  r->had_rollback_set ? "live files saved as the rollback set"
                                      : "no live unit: nothing to roll back to");
    return 0;
}

/* The staged files renamed over the live ones, daemon-reload, and the old unit stopped when it
 * was serving (was_state: its state before). A failed swap rolls back. */
static int swap(struct sw__ro *c, const char *was_state, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    uint64_t t = sw_now_ns();
    char why[1024] = "";
    bool lost;
    int rc = sw__ro_reload(c, sw__ro_swap(c, e), e, why, sizeof(why), &lost);
    if (lost)
        return 0;
    if (rc) {
        sw__ro_fail(c, "swap", "swap", "%s%s", e->msg, why);
        sw__ro_record(c, "swap", false, t, "%s", r->fail_msg);
        return sw__ro_roll_back(c, e);
    }
    sw__ro_record(c, "swap", true, t, "staged files renamed over the live ones; daemon-reload");
    if (strcmp(was_state, "active") && strcmp(was_state, "activating") &&
        strcmp(was_state, "reloading"))
        return 0;
    t = sw_now_ns();
    c->t_down = t;
    r->stopped = true;
    rc = sw__ro_systemctl(c, "stop", c->unit, SW__RO_STOP_MS, why, sizeof(why));
    if (rc && sw__ro_host_gone(c, rc))
        sw__ro_lost_host(c, why);
    else if (rc)
        sw__ro_record(c, "stop", false, t, "%s", why);
    else
        sw__ro_record(c, "stop", true, t, "%s stopped (was %s)", c->unit, was_state);
    return 0;
}

/* The new shape started and proven (readiness, one-token generation), then the battery; a
 * failure of either rolls back. */
static int prove(struct sw__ro *c, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    struct sw__ro_boot b;
    bool gen = false;
    int rc = sw__ro_start_and_keep(c, "start", true, &b, &gen, e);
    bool lost = !rc && !gen && !strcmp(b.cls, "ssh_dropped");
    if (lost)
        sw__ro_lost_host(c, b.msg);
    else if (!rc && !gen)
        sw__ro_fail(c, b.cls[0] && !strcmp(b.cls, "dead_generation") ? "liveness" : "boot", b.cls,
                    "%s", b.msg);
    sw__ro_boot_free(&b);
    if (rc || lost)
        return rc;
    if (!gen)
        return sw__ro_roll_back(c, e);
    probe(c);
    return r->fail_class[0] ? sw__ro_roll_back(c, e) : 0;
}

/* What an error that ended the run before a verdict leaves: a refused connect when nothing was
 * touched, the error's words, and the attempt's end in the ledger. */
static void finish(struct sw__ro *c, int rc, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    if (rc == SW_ENET && !c->locked && r->outcome == SW_ROLLOUT_NONE)
        sw__ro_fail(c, "connect", "unreachable", "%s", e->msg); /* nothing was touched */
    if (rc && r->outcome == SW_ROLLOUT_NONE && !r->failed_step[0])
        sw__ro_fail(c, "error", "error", "%s", e ? e->msg : "error");
    if (c->attempt > 0 && r->outcome != SW_ROLLOUT_COMMITTED) {
        if (r->outcome == SW_ROLLOUT_NONE) /* an error ended it: what it left is on the host */
            r->outcome = r->stopped ? SW_ROLLOUT_ROLLBACK_FAILED : SW_ROLLOUT_REFUSED;
        sw__ro_ledger_finish(c);
    }
}

int sw_rollout_deploy(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                      const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                      struct sw_err *e)
{
    struct sw__ro c;
    struct sw_unit_render rd;
    struct sw_host_unit before;
    int rc = sw__ro_init(&c, f, ep, o, r, &rd, e);
    if (rc)
        return rc;
    memset(&before, 0, sizeof(before));
    rc = gates(&c, e);
    if (rc || r->outcome != SW_ROLLOUT_NONE)
        goto out;
    rc = render(&c, &rd, e);
    if (rc)
        goto out;
    if (c.o->dry_run) {
        rc = dry_run(&c, &rd, e);
        goto out;
    }
    rc = sw__ro_take_lock(&c, e);
    if (!rc)
        rc = prepare(&c, &rd, e);
    if (rc || r->outcome != SW_ROLLOUT_NONE)
        goto out;
    /* was anything serving? */
    sw_host_unit_show(&c.h, false, c.unit, 30000, &before, NULL);
    rc = save(&c, e);
    if (!rc && r->outcome == SW_ROLLOUT_NONE)
        rc = swap(&c, before.active_state, e);
    if (!rc && r->outcome == SW_ROLLOUT_NONE)
        rc = prove(&c, e);
    if (!rc && r->outcome == SW_ROLLOUT_NONE)
        rc = sw__ro_commit_step(&c, json_object_get(r->gates, "shape"), &rd, e);
out:
    rc = sw__ro_settle(&c, rc, e);
    finish(&c, rc, e);
    sw__ro_close(&c);
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
