/*
 * Watch events: what `slipway watch` saw and did between commands, one row per change of an
 * endpoint's state, per action (restart, rollback, a refusal to act), per alert and per scheduled
 * job. An action carries a key (the endpoint and the state change it answers); the key is UNIQUE,
 * so the check-and-record is one transaction and a watch restarted after a crash finds the key
 * and does not act twice.
 *
 * What it deliberately does not do: classify or decide anything (src/watch does), update or
 * delete a row.
 */
#include "deploy_internal.h"

#include <stdlib.h>
#include <string.h>

static int check_text(const char *what, const char *s, size_t max, bool required, struct sw_err *e)
{
    if (!s || !*s)
        return required ? sw_err_set(e, SW_EINVAL, "watch event: %s is required", what) : 0;
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return sw_err_set(e, SW_EINVAL, "watch event: %s is longer than %zu bytes", what, max);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return sw_err_set(e, SW_EINVAL, "watch event: %s holds a control character", what);
    return 0;
}

static const char SQL_HAS[] = "SELECT 1 FROM watch_events WHERE action_key = ?1";
static const char SQL_EV[] =
    "INSERT INTO watch_events(endpoint_id, observed_ms, kind, state, action, action_key, "
    "outcome, evidence) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

static int has_key_tx(struct sw_ledger *l, const char *key, bool *found, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *found = false;
    int rc = sw__dep_prepare(l, SQL_HAS, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, key);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        *found = true;
    else if (s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading a watch action key");
    sqlite3_finalize(st);
    return rc;
}

static int record_tx(struct sw_ledger *l, const struct sw_ledger_watch_event *ev,
                     const char *evidence, int64_t *id, struct sw_err *e)
{
    int64_t ep = 0;
    sqlite3_stmt *st = NULL;
    if (ev->action_key && *ev->action_key) {
        bool found = false;
        int rc = has_key_tx(l, ev->action_key, &found, e);
        if (rc)
            return rc;
        if (found)
            return sw_err_set(e, SW_EEXIST, "watch: action %s is already recorded", ev->action_key);
    }
    int rc = sw__ledger_endpoint_tx(l, ev->endpoint, true, &ep, e);
    if (rc)
        return rc;
    rc = sw__dep_prepare(l, SQL_EV, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ep);
    sqlite3_bind_int64(st, 2, ev->observed_ms > 0 ? ev->observed_ms : sw__wall_ms());
    sw__bind_text(st, 3, ev->kind);
    sw__bind_text(st, 4, ev->state);
    sw__bind_text(st, 5, ev->action && *ev->action ? ev->action : NULL);
    sw__bind_text(st, 6, ev->action_key && *ev->action_key ? ev->action_key : NULL);
    sw__bind_text(st, 7, ev->outcome && *ev->outcome ? ev->outcome : NULL);
    sw__bind_text(st, 8, evidence);
    rc = sw__dep_done(l, st, "recording a watch event", e);
    if (rc)
        return rc;
    if (id)
        *id = sqlite3_last_insert_rowid(l->db);
    return 0;
}

int sw_ledger_record_watch(struct sw_ledger *l, const struct sw_ledger_watch_event *ev, int64_t *id,
                           struct sw_err *e)
{
    char *evidence = NULL;
    if (id)
        *id = 0;
    if (!ev)
        return sw_err_set(e, SW_EINVAL, "watch event: none given");
    int rc = check_text("endpoint", ev->endpoint, 256, true, e);
    if (!rc && ev->kind && strcmp(ev->kind, "observation") && strcmp(ev->kind, "action") &&
        strcmp(ev->kind, "alert") && strcmp(ev->kind, "job"))
        rc = sw_err_set(e, SW_EINVAL,
                        "watch event: kind '%s' is not observation, action, "
                        "alert or job",
                        ev->kind);
    if (!rc)
        rc = check_text("kind", ev->kind, 16, true, e);
    if (!rc)
        rc = check_text("state", ev->state, 32, true, e);
    if (!rc)
        rc = check_text("action", ev->action, 64, false, e);
    if (!rc)
        rc = check_text("action_key", ev->action_key, 256, false, e);
    if (!rc)
        rc = check_text("outcome", ev->outcome, 64, false, e);
    if (!rc && ev->evidence)
        rc = sw__dep_json("watch evidence", ev->evidence, false, NULL, &evidence, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc)
        goto out;
    rc = record_tx(l, ev, evidence, id, e);
    if (rc) {
        sw__ledger_rollback(l);
        goto out;
    }
    rc = sw__ledger_commit(l, e);
out:
    sw_free(evidence);
    return rc;
}

int sw_ledger_watch_has_key(struct sw_ledger *l, const char *action_key, bool *found,
                            struct sw_err *e)
{
    *found = false;
    int rc = sw__ledger_exec(l, "BEGIN", e);
    if (rc)
        return rc;
    rc = has_key_tx(l, action_key, found, e);
    sw__ledger_rollback(l);
    return rc;
}

int sw_ledger_watch_list(struct sw_ledger *l, const char *endpoint, const char *kind, int64_t limit,
                         json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    int rc = sw__ledger_exec(l, "BEGIN", e);
    if (rc)
        return rc;
    /* the rows as watch_events' descriptor lists them (tables.c) */
    rc = sw__ledger_stmt(l, LST_WATCH, &st, e);
    if (!rc) {
        sw__bind_text(st, 1, endpoint);
        sw__bind_text(st, 2, kind);
        sqlite3_bind_int64(st, 3, limit > 0 ? limit : -1);
        rc = sw__ledger_collect(l, LST_WATCH, st, out, e);
    }
    sw__ledger_rollback(l);
    return rc;
}
