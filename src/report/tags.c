/*
 * report/tags: what the ledger says about an endpoint's deploys: its last-good tag, the rollback
 * tags and whether each can still be restored (the same test `slipway history` prints:
 * sw_host_restore_check, through sw_ledger_history), and the restarts its deploy attempts saw.
 *
 * Restarts come from the deploy attempts only: a rollout watches the new unit and records
 * systemd's NRestarts of a death it saw (evidence.boot_failure.n_restarts, failure class
 * crash_loop). A restart between deploys is not recorded anywhere (`slipway status` reads the
 * live NRestarts); the document says so instead of inventing a count.
 *
 * What it deliberately does not do: look at a remote host (its tags are "not checked"), write.
 */
#include "report_internal.h"

#include <slipway/host.h>

#include <string.h>

static json_t *jstr(const char *s)
{
    return s ? sw_json_text(s, strlen(s), NULL) : json_null();
}

/* One tag of the history, trimmed to what a reader of the report needs. */
static json_t *tag_view(const json_t *t)
{
    static const char *const keys[] = {
        "name", "created", "summary",     "shape_hash", "image",   "note",          "last_good",
        "kept", "retired", "retired_why", "restorable", "missing", "restorable_why"};
    json_t *v = json_object();
    if (!v)
        return NULL;
    for (size_t i = 0; i < SW_ARRAY_LEN(keys); i++) {
        json_t *x = json_object_get(t, keys[i]);
        if (json_object_set_new(v, keys[i], x ? json_deep_copy(x) : json_null())) {
            json_decref(v);
            return NULL;
        }
    }
    if (json_object_set_new(
            v, "payload_paths",
            json_integer((json_int_t)json_array_size(json_object_get(t, "payload"))))) {
        json_decref(v);
        return NULL;
    }
    return v;
}

int sw__rep_tags(struct sw_ledger *l, const struct sw_fleet_endpoint *ep, json_t **out,
                 struct sw_err *e)
{
    struct sw_host_restore_check chk;
    struct sw_ledger_history_opts ho = {0};
    json_t *list = NULL, *h = NULL, *d = NULL, *rb = NULL, *ret = NULL, *last_good = NULL;
    size_t i, unrestorable = 0;
    json_t *t;
    int rc = 0;
    *out = NULL;
    memset(&chk, 0, sizeof(chk));
    if (!l) {
        *out = json_null();
        return 0;
    }
    rc = sw_ledger_tag_list(l, ep->name, false, &list, e);
    if (rc == SW_ENOENT) {
        if (e)
            sw_err_clear(e);
        rc = 0;
        list = json_array();
        if (!list)
            rc = SW_ENOMEM;
    }
    if (rc)
        goto out;
    ho.unchecked = sw_host_restore_check_open(&chk, ep);
    ho.present_sized = ho.unchecked ? NULL : sw_host_restore_present;
    ho.ctx = &chk;
    if (json_array_size(list)) {
        rc = sw_ledger_history(l, ep->name, &ho, &h, e);
        if (rc)
            goto out;
    }
    d = json_object();
    rb = json_array();
    ret = json_array();
    if (!d || !rb || !ret) {
        rc = SW_ENOMEM;
        goto out;
    }
    last_good = json_null();
    json_array_foreach(json_object_get(h, "tags"), i, t)
    {
        json_t *v = tag_view(t);
        if (!v) {
            rc = SW_ENOMEM;
            break;
        }
        if (json_is_true(json_object_get(t, "last_good"))) {
            json_decref(last_good);
            last_good = v;
        } else if (json_array_append_new(json_is_true(json_object_get(t, "kept")) ? rb : ret, v)) {
            rc = SW_ENOMEM;
            break;
        }
        if (json_is_false(json_object_get(t, "restorable")) &&
            json_is_true(json_object_get(t, "kept")))
            unrestorable++;
    }
    sw__rep_put(d, "last_good", last_good, &rc);
    last_good = NULL;
    sw__rep_put(d, "rollback", rb, &rc);
    rb = NULL;
    sw__rep_put(d, "retired", ret, &rc);
    ret = NULL;
    sw__rep_put(d, "count", json_integer((json_int_t)json_array_size(list)), &rc);
    sw__rep_put(d, "unrestorable", json_integer((json_int_t)unrestorable), &rc);
    sw__rep_put(d, "checked", json_boolean(!ho.unchecked), &rc);
    sw__rep_put(d, "unchecked_why", jstr(ho.unchecked), &rc);
    sw__rep_put(d, "check",
                jstr("payload paths exist at their recorded sizes and the image is in the "
                     "runtime's store, on this machine (the check `slipway history` prints)"),
                &rc);
out:
    sw_host_restore_check_close(&chk);
    json_decref(list);
    json_decref(h);
    json_decref(rb);
    json_decref(ret);
    json_decref(last_good);
    if (rc) {
        json_decref(d);
        if (rc == SW_ENOMEM && e && !e->code)
            sw_err_set(e, rc, "out of memory");
        return rc;
    }
    *out = d;
    return 0;
}

int sw__rep_absent_ok(int rc, struct sw_err *e)
{
    if (rc != SW_ENOENT)
        return rc;
    if (e)
        sw_err_clear(e);
    return 0;
}

int sw__rep_restarts(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e)
{
    json_t *att = NULL, *d = NULL, *last = NULL;
    int rc = 0;
    *out = NULL;
    if (!l) {
        *out = json_null();
        return 0;
    }
    rc = sw__rep_absent_ok(sw_ledger_deploy_list(l, endpoint, 0, &att, e), e);
    if (rc)
        return rc;
    json_int_t n = 0, committed = 0, rolled = 0, loops = 0, seen = 0;
    size_t i;
    json_t *a;
    json_array_foreach(att, i, a)
    {
        const char *oc = json_string_value(json_object_get(a, "outcome"));
        const char *cls = json_string_value(json_object_get(a, "failure_class"));
        const json_t *bf = json_object_get(json_object_get(a, "evidence"), "boot_failure");
        json_int_t nr = json_integer_value(json_object_get(bf, "n_restarts"));
        n++;
        if (oc && !strcmp(oc, "committed"))
            committed++;
        if (oc && (!strcmp(oc, "rolled_back") || !strcmp(oc, "rollback_failed")))
            rolled++;
        if (cls && !strcmp(cls, "crash_loop"))
            loops++;
        if (nr > 0)
            seen += nr;
        if (!last && ((cls && !strcmp(cls, "crash_loop")) || nr > 0)) {
            /* newest first: the first one is the last */
            last = json_pack("{s:O,s:O,s:o,s:I}", "attempt", json_object_get(a, "id"), "at",
                             json_object_get(a, "started"), "class", jstr(cls), "n_restarts",
                             nr > 0 ? nr : (json_int_t)0);
            if (!last) {
                rc = SW_ENOMEM;
                break;
            }
        }
    }
    /* between deploys: the newest `slipway status --record` look at the unit */
    json_t *obs = NULL, *between = NULL;
    if (!rc)
        rc = sw_ledger_unit_obs_list(l, endpoint, 1, &obs, e);
    if (!rc && json_array_size(obs)) {
        const json_t *o = json_array_get(obs, 0);
        const json_t *newest = json_array_get(att, 0);
        const char *ot = json_string_value(json_object_get(o, "observed"));
        const char *dt = json_string_value(json_object_get(newest, "started"));
        between = json_pack(
            "{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:b}", "observation", json_object_get(o, "id"),
            "observed", json_object_get(o, "observed"), "observed_ms",
            json_object_get(o, "observed_ms"), "n_restarts", json_object_get(o, "n_restarts"),
            "active", json_object_get(o, "active"), "sub", json_object_get(o, "sub"), "since",
            json_object_get(o, "since"), "after_last_deploy", !dt || (ot && strcmp(ot, dt) >= 0));
        if (!between)
            rc = SW_ENOMEM;
    }
    if (!rc) {
        d = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:O,s:O}", "source",
                      "the ledger's deploy attempts (systemd's NRestarts seen while a rollout "
                      "watched the new unit) and the last `slipway status --record` (NRestarts "
                      "since the unit was last started on purpose)",
                      "attempts", n, "committed", committed, "rolled_back", rolled, "crash_loops",
                      loops, "restarts_seen", seen, "last", last ? last : json_null(),
                      "between_deploys", between ? between : json_null());
        if (!d)
            rc = SW_ENOMEM;
    }
    json_decref(obs);
    json_decref(between);
    json_decref(att);
    json_decref(last);
    if (rc) {
        if (rc == SW_ENOMEM && e && !e->code)
            sw_err_set(e, rc, "out of memory");
        return rc;
    }
    *out = d;
    return 0;
}
