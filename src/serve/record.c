/*
 * serve record: what a deploy through serve writes to the ledger (docs/ledger.md, "Deploys, steps
 * and tags"; docs/serve.md, "The ledger"), in the tables the gated rollout writes. A deploy serve
 * runs itself (blue/green, stop-start) opens its attempt when it begins (the new shape, from the
 * endpoint's last-good tag, the note "through serve: PATH (by CLIENT)") with a step "decide" (the
 * admission's decision), and when it ends adds a step "serve" holding the figures of the admin's
 * answer (path, requests answered and failed, queued requests and their waits, downtime,
 * rollback seconds) and its verdict: committed with a tag (the payload by its path and size),
 * rolled_back (the new shape failed; the old serves: a blue/green's old never stopped),
 * rollback_failed, or gate_refused (nothing changed: no room, an eviction or a stop failed). A
 * failure of the new shape teaches a known-bad rule as the rollout's does, unless the shape is
 * the endpoint's last-good. The gated rollout of another host's endpoint records its own attempt
 * (through a connection of its own to the same ledger, in its thread); serve adds its step
 * "serve" once the rollout has finished it. A write that fails is said in serve's log and in the
 * admin's answer ("ledger": {"error"}); it never fails the deploy.
 *
 * What it does not do: decide or run a deploy (bluegreen.c, stopstart.c), or hash the payload
 * (an `up` endpoint's files are this machine's; the tag keeps their path and size).
 */
#include "deploy_internal.h"

#include <slipway/gate.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>
#include <slipway/rollout.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int sw__serve_ledger_open(struct sw__serve *sv, struct sw_err *e)
{
    const struct sw_serve_opts *o = sv->o;
    if (o->no_ledger) {
        sw__serve_logf(sv, "ledger: none (--no-ledger): deploys through serve are not recorded");
        return 0;
    }
    /* a short busy wait: the state loop writes holding the lock every request loop takes */
    struct sw_ledger_open_opts oo = {.create = true, .busy_timeout_ms = 2000};
    struct sw_err le;
    sw_err_clear(&le);
    bool have = false;
    int rc = sw_ledger_open_for(&sv->ledger, o->ledger, sv->fleet_path, &oo,
                                SW_LEDGER_DEFAULT_MAY_BE_ABSENT, &have, sv->ledger_path,
                                sizeof(sv->ledger_path), &le);
    char m[600];
    if (rc && o->ledger) /* named: bad input */
        return sw_err_set(e, rc, "the ledger: %s", sw_err_format(&le, m, sizeof(m)));
    if (rc || !have) {
        snprintf(sv->ledger_why, sizeof(sv->ledger_why),
                 "the ledger %.200s cannot be opened: %.400s", sv->ledger_path,
                 rc ? sw_err_format(&le, m, sizeof(m)) : "missing");
        sw__serve_logf(sv, "ledger: %s; deploys through serve are NOT recorded", sv->ledger_why);
        return 0;
    }
    sv->have_ledger = true;
    sw__serve_logf(sv, "ledger: %s (deploys through serve record their attempts there)",
                   sv->ledger_path);
    return 0;
}

void sw__serve_ledger_close(struct sw__serve *sv)
{
    if (sv->have_ledger)
        sw_ledger_close(&sv->ledger);
    sv->have_ledger = false;
}

/* A write that failed: kept for the answer (the first one) and said in the log. */
static void failed(struct sw__deploy *d, const char *what, const struct sw_err *e)
{
    char m[600];
    sw_err_format(e, m, sizeof(m));
    if (!d->ledger_msg[0])
        snprintf(d->ledger_msg, sizeof(d->ledger_msg), "%s: %s", what, m);
    sw__serve_logf(d->sv, "deploy: %s: the ledger %s was not written (%s): %s", d->ep->name,
                   d->sv->ledger_path, what, m);
}

void sw__dep_ledger_begin(struct sw__deploy *d, const char *path)
{
    struct sw__serve *sv = d->sv;
    if (!sv->have_ledger) {
        snprintf(d->ledger_msg, sizeof(d->ledger_msg), "%s",
                 sv->ledger_why[0] ? sv->ledger_why : "serve runs with --no-ledger");
        return;
    }
    struct sw_err e;
    sw_err_clear(&e);
    char hash[SW_LEDGER_HASH_LEN + 1];
    json_t *raw = sw_plan_shape(d->ep), *lg = NULL;
    int rc = raw ? sw_ledger_shape_canon(raw, &d->shape, NULL, hash, &e)
                 : sw_err_set(&e, SW_ENOMEM, "out of memory");
    json_decref(raw);
    const char *from = NULL;
    if (!rc && sw_ledger_tag_last_good(&sv->ledger, d->ep->name, &lg, NULL) == 0) {
        from = json_string_value(json_object_get(lg, "name"));
        d->same_shape = sw_gate_same_shape(json_object_get(lg, "shape"), d->shape);
    }
    char note[200];
    snprintf(note, sizeof(note), "through serve: %s (by %.64s)", path, d->client);
    struct sw_ledger_attempt a = {
        .endpoint = d->ep->name, .shape = d->shape, .from_tag = from, .note = note};
    if (!rc)
        rc = sw_ledger_deploy_begin(&sv->ledger, &a, &d->attempt, &e);
    json_decref(lg);
    if (rc) {
        d->attempt = 0;
        failed(d, "its attempt", &e);
        return;
    }
    json_t *det =
        json_pack("{s:s,s:s,s:s}", "path", path, "decision", d->decision, "evicted", d->evicted);
    if (sw_ledger_deploy_step_record(&sv->ledger, d->attempt, "decide",
                                     strcmp(path, "none") ? "ok" : "failed", det, NULL, &e))
        failed(d, "its step decide", &e);
    json_decref(det);
}

/* The answer's path in the ledger's words. */
static const char *path_word(const char *path)
{
    return !strcmp(path, "blue-green")   ? "blue_green"
           : !strcmp(path, "stop-start") ? "stop_start"
                                         : path;
}

/* How the deploy ended, in the ledger's outcomes; cls and not_shape for one that did not commit. */
static const char *verdict(const struct sw__deploy *d, const char *path, const char *error,
                           const char **cls, bool *not_shape)
{
    *cls = NULL;
    *not_shape = true;
    if (!strcmp(path, "none")) {
        *cls = "no_room";
        return "gate_refused";
    }
    if (!error || (d->blue_green && d->t_switch)) /* the new shape serves (the old's stop may */
        return "committed";                       /* have failed: the error says so) */
    if (d->failure[0]) {                          /* the new shape failed */
        *cls = d->fail_class[0] ? d->fail_class : "boot";
        *not_shape = d->same_shape;
        return d->blue_green || d->rolled_back ? "rolled_back" : "rollback_failed";
    }
    *cls = d->phase == EV_STOPPING                              ? "evict_failed"
           : d->phase == BG_STOPPING || d->phase == SS_STOPPING ? "stop_failed"
                                                                : "no_start";
    return "gate_refused";
}

/* The time the model was not served: none for blue/green (the old serves until the switch, the
 * new from it); for stop-start from out of rotation until a shape served again; -1 when none did. */
static int64_t downtime_ms(const struct sw__deploy *d, const char *outcome)
{
    if (d->blue_green || !d->t_drain0)
        return 0;
    if (!strcmp(outcome, "rollback_failed"))
        return -1;
    uint64_t end = d->t_switch ? d->t_switch : d->t_rollback ? d->t_rollback : sw_now_ns();
    return (int64_t)((end - d->t_drain0) / 1000000);
}

/* The tag's payload: the endpoint's file by its path and size (not hashed: serve's state loop
 * does not read gigabytes); none when it is not one absolute regular file. */
static json_t *payload_of(const struct sw_fleet_endpoint *ep)
{
    json_t *arr = json_array();
    const char *p = ep->payload.path.v;
    struct stat st;
    if (arr && p && p[0] == '/' && !stat(p, &st) && S_ISREG(st.st_mode))
        json_array_append_new(
            arr, json_pack("{s:s,s:I,s:n}", "path", p, "size", (json_int_t)st.st_size, "sha256"));
    return arr;
}

/* The verdict of an attempt serve ran; a tag's name into tag. An attempt that could not be
 * committed is finished "interrupted" (never left open: it would hold the endpoint's deploys). */
static void close_attempt(struct sw__deploy *d, const char *word, const char *outcome,
                          const char *cls, bool not_shape, int64_t down, const char *error,
                          char *tag)
{
    struct sw__serve *sv = d->sv;
    struct sw_err e;
    sw_err_clear(&e);
    if (!strcmp(outcome, "committed")) {
        json_t *payload = payload_of(d->ep);
        struct sw_ledger_tag_new t = {.endpoint = d->ep->name,
                                      .attempt_id = d->attempt,
                                      .shape = d->shape,
                                      .payload = payload,
                                      .downtime_ms = down};
        int64_t id = 0;
        int rc = payload ? sw_ledger_tag_commit(&sv->ledger, &t, tag, &id, &e)
                         : sw_err_set(&e, SW_ENOMEM, "out of memory");
        json_decref(payload);
        if (!rc)
            return;
        failed(d, "its tag", &e);
        outcome = "interrupted";
        cls = "ledger";
        error = d->ledger_msg;
    }
    json_t *ev = json_pack("{s:s,s:s,s:s,s:s}", "path", word, "message", error ? error : "",
                           "new_shape_failure", d->failure, "decision", d->decision);
    struct sw_ledger_attempt_end f = {.outcome = outcome,
                                      .failure_class = cls,
                                      .evidence = ev,
                                      .downtime_ms = down,
                                      .not_the_shape = not_shape};
    if (sw_ledger_deploy_finish(&sv->ledger, d->attempt, &f, NULL, &e))
        failed(d, "its verdict", &e);
    json_decref(ev);
}

/* Another host's attempt as its rollout finished it: its outcome (static text) and tag. */
static const char *rollout_outcome(struct sw__deploy *d, char *tag)
{
    static const char *const words[] = {"committed",    "rolled_back", "rollback_failed",
                                        "gate_refused", "interrupted", NULL};
    json_t *a = NULL;
    const char *out = d->ro_outcome;
    if (sw_ledger_deploy_get(&d->sv->ledger, d->attempt, &a, NULL) == 0) {
        const char *o = json_string_value(json_object_get(a, "outcome"));
        for (int i = 0; o && words[i]; i++)
            if (!strcmp(o, words[i]))
                out = words[i];
        snprintf(tag, SW_LEDGER_TAG_MAX, "%s",
                 json_is_string(json_object_get(a, "tag"))
                     ? json_string_value(json_object_get(a, "tag"))
                     : "");
    }
    json_decref(a);
    return out;
}

void sw__dep_ledger_end(struct sw__deploy *d, const char *path, const char *error, json_t *answer)
{
    struct sw__serve *sv = d->sv;
    const char *word = path_word(path), *cls = NULL;
    bool not_shape = true;
    const char *outcome = d->remote ? d->ro_outcome : verdict(d, path, error, &cls, &not_shape);
    int64_t down = d->remote ? d->ro_downtime_ms : downtime_ms(d, outcome);
    char tag[SW_LEDGER_TAG_MAX] = "";
    struct sw_err e;
    sw_err_clear(&e);
    if (d->attempt > 0 && sv->have_ledger) {
        json_t *det = answer ? json_deep_copy(answer) : json_object();
        if (det) {
            json_object_set_new(det, "path", json_string(word));
            json_object_set_new(det, "downtime_ms", json_integer(down));
        }
        if (sw_ledger_deploy_step_record(&sv->ledger, d->attempt, "serve", error ? "failed" : "ok",
                                         det, NULL, &e))
            failed(d, "its step serve", &e);
        json_decref(det);
        if (!d->remote) /* another host's rollout finished its attempt itself */
            close_attempt(d, word, outcome, cls, not_shape, down, error, tag);
        else
            outcome = rollout_outcome(d, tag);
    } else if (!d->ledger_msg[0])
        snprintf(d->ledger_msg, sizeof(d->ledger_msg), "%s",
                 !strcmp(path, "stopped") ? "nothing booted: the stopped endpoint takes the new "
                                            "shape at its next start (no attempt)"
                                          : "no attempt was recorded");
    bool recorded = d->attempt > 0 && !d->ledger_msg[0];
    if (recorded)
        sw__serve_logf(
            sv, "deploy: %s: ledger: attempt %" PRId64 " %s %s%s%s (downtime %" PRId64 " ms) in %s",
            d->ep->name, d->attempt, word, outcome, tag[0] ? ", tag " : "", tag, down,
            sv->ledger_path);
    else
        sw__serve_logf(
            sv, "deploy: %s: ledger: %s%s", d->ep->name,
            d->attempt > 0 ? "attempt written in part: " : "NOT recorded: ", d->ledger_msg);
    if (!answer)
        return;
    json_t *lj = json_pack("{s:s,s:b,s:s}", "path", sv->ledger_path, "recorded", recorded,
                           "deploy_path", word);
    if (lj && d->attempt > 0) {
        json_object_set_new(lj, "attempt", json_integer(d->attempt));
        json_object_set_new(lj, "outcome", json_string(outcome));
        json_object_set_new(lj, "downtime_ms", json_integer(down));
        if (tag[0])
            json_object_set_new(lj, "tag", json_string(tag));
    }
    if (lj && d->ledger_msg[0])
        json_object_set_new(lj, d->attempt <= 0 && !strcmp(path, "stopped") ? "why" : "error",
                            json_string(d->ledger_msg));
    json_object_set_new(answer, "ledger", lj);
}

bool sw__dep_ledger_rollout(struct sw__deploy *d, struct sw_ledger *l, struct sw_rollout_opts *o)
{
    struct sw__serve *sv = d->sv; /* have_ledger and its path are set before serving */
    memset(l, 0, sizeof(*l));
    if (!sv->have_ledger) {
        snprintf(d->ledger_msg, sizeof(d->ledger_msg), "%s",
                 sv->ledger_why[0] ? sv->ledger_why : "serve runs with --no-ledger");
        return false;
    }
    struct sw_ledger_open_opts oo = {.create = true};
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_ledger_open(l, sv->ledger_path, &oo, &e)) {
        char m[600];
        snprintf(d->ledger_msg, sizeof(d->ledger_msg), "the rollout's connection: %s",
                 sw_err_format(&e, m, sizeof(m)));
        return false;
    }
    o->ledger = l;
    o->record = true;
    o->note = "through serve: rollout";
    return true;
}

void sw__dep_ledger_rollout_done(struct sw__deploy *d, struct sw_ledger *l, bool have,
                                 const struct sw_rollout_result *r)
{
    if (!have)
        return;
    d->attempt = r->attempt;
    if (r->ledger_msg[0])
        snprintf(d->ledger_msg, sizeof(d->ledger_msg), "the rollout: %s", r->ledger_msg);
    sw_ledger_close(l);
}
