/*
 * Unit observations: an endpoint's systemd unit as `slipway status --record` read it (state,
 * NRestarts, main PID, since), one row per look. Deploy attempts record what a rollout watched;
 * this is what happened between deploys, so the report and the Prometheus export can say how
 * many times the engine was restarted by systemd since it was last started on purpose.
 *
 * What it deliberately does not do: read systemd (src/deploy/status.c does), interpret the
 * counts (src/report does), update or delete a row.
 */
#include "deploy_internal.h"

#include <string.h>

static int check_text(const char *what, const char *s, size_t max, bool required, struct sw_err *e)
{
    if (!s || !*s)
        return required ? sw_err_set(e, SW_EINVAL, "unit observation: %s is required", what) : 0;
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return sw_err_set(e, SW_EINVAL, "unit observation: %s is longer than %zu bytes", what, max);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return sw_err_set(e, SW_EINVAL, "unit observation: %s holds a control character", what);
    return 0;
}

static const char SQL_OBS[] =
    "INSERT INTO unit_observations(endpoint_id, observed_ms, host, unit, active, sub, result, "
    "n_restarts, main_pid, since) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

static int record_tx(struct sw_ledger *l, const struct sw_ledger_unit_obs *o, int64_t *id,
                     struct sw_err *e)
{
    int64_t ep = 0;
    sqlite3_stmt *st = NULL;
    int rc = sw__ledger_endpoint_tx(l, o->endpoint, true, &ep, e);
    if (rc)
        return rc;
    rc = sw__dep_prepare(l, SQL_OBS, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ep);
    sqlite3_bind_int64(st, 2, o->observed_ms > 0 ? o->observed_ms : sw__wall_ms());
    sw__bind_text(st, 3, o->host);
    sw__bind_text(st, 4, o->unit);
    sw__bind_text(st, 5, o->active);
    sw__bind_text(st, 6, o->sub && *o->sub ? o->sub : NULL);
    sw__bind_text(st, 7, o->result && *o->result ? o->result : NULL);
    sqlite3_bind_int64(st, 8, (int64_t)o->n_restarts);
    sw__bind_i64(st, 9, o->main_pid, o->main_pid < 0);
    sw__bind_text(st, 10, o->since && *o->since ? o->since : NULL);
    rc = sw__dep_done(l, st, "recording a unit observation", e);
    if (rc)
        return rc;
    if (id)
        *id = sqlite3_last_insert_rowid(l->db);
    return 0;
}

int sw_ledger_record_unit_obs(struct sw_ledger *l, const struct sw_ledger_unit_obs *o, int64_t *id,
                              struct sw_err *e)
{
    if (id)
        *id = 0;
    if (!o)
        return sw_err_set(e, SW_EINVAL, "unit observation: none given");
    if (o->n_restarts > (uint64_t)INT64_MAX)
        return sw_err_set(e, SW_EINVAL, "unit observation: n_restarts out of range");
    int rc = check_text("endpoint", o->endpoint, 256, true, e);
    if (!rc)
        rc = check_text("host", o->host, 256, true, e);
    if (!rc)
        rc = check_text("unit", o->unit, 256, true, e);
    if (!rc)
        rc = check_text("active", o->active, 32, true, e);
    if (!rc)
        rc = check_text("sub", o->sub, 32, false, e);
    if (!rc)
        rc = check_text("result", o->result, 32, false, e);
    if (!rc)
        rc = check_text("since", o->since, 64, false, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc)
        return rc;
    rc = record_tx(l, o, id, e);
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

int sw_ledger_unit_obs_list(struct sw_ledger *l, const char *endpoint, int64_t limit, json_t **out,
                            struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    int rc = sw__ledger_exec(l, "BEGIN", e);
    if (rc)
        return rc;
    /* the rows as unit_observations' descriptor lists them (tables.c) */
    rc = sw__ledger_stmt(l, LST_UNIT_OBS, &st, e);
    if (!rc) {
        sw__bind_text(st, 1, endpoint);
        sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
        rc = sw__ledger_collect(l, LST_UNIT_OBS, st, out, e);
    }
    sw__ledger_rollback(l);
    return rc;
}
