/*
 * The tuner's journal: tune_runs (one per endpoint x objective x search space, open until the run
 * ends, so a later `slipway tune` of the same space resumes it) and tune_probes (every candidate
 * as it was decided, one transaction each: a process killed between two probes loses neither).
 *
 * What it deliberately does not do: decide anything (src/tune does), update a probe once written
 * (a resumed run appends), or delete.
 */
#include "deploy_internal.h"

#include <math.h>
#include <string.h>

#define LABEL_MAX 160
#define CAND_MAX  2048

static int check_label(const char *what, const char *s, size_t max, struct sw_err *e)
{
    if (!s || !*s)
        return sw_err_set(e, SW_EINVAL, "tune: %s is required", what);
    size_t n = strlen(s);
    if (n > max)
        return sw_err_set(e, SW_EINVAL, "tune: %s is longer than %zu bytes", what, max);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return sw_err_set(e, SW_EINVAL, "tune: %s holds a control character", what);
    return 0;
}

static const char SQL_OPEN_RUN[] =
    "SELECT id FROM tune_runs WHERE endpoint_id = ?1 AND objective = ?2 AND space = ?3 "
    "AND ended_ms IS NULL ORDER BY id DESC LIMIT 1";
static const char SQL_NEW_RUN[] =
    "INSERT INTO tune_runs(endpoint_id, objective, space, started_ms) VALUES(?1, ?2, ?3, ?4)";

static int begin_tx(struct sw_ledger *l, const char *endpoint, const char *objective,
                    const char *space, int64_t *run, bool *resumed, struct sw_err *e)
{
    int64_t ep = 0;
    sqlite3_stmt *st = NULL;
    int rc = sw__ledger_endpoint_tx(l, endpoint, true, &ep, e);
    if (rc)
        return rc;
    rc = sw__dep_prepare(l, SQL_OPEN_RUN, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ep);
    sw__bind_text(st, 2, objective);
    sw__bind_text(st, 3, space);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *run = sqlite3_column_int64(st, 0);
        *resumed = true;
        sqlite3_finalize(st);
        return 0;
    }
    sqlite3_finalize(st);
    if (s != SQLITE_DONE)
        return sw__ledger_dberr(l, e, s, "reading tune_runs");
    rc = sw__dep_prepare(l, SQL_NEW_RUN, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ep);
    sw__bind_text(st, 2, objective);
    sw__bind_text(st, 3, space);
    sqlite3_bind_int64(st, 4, sw__wall_ms());
    rc = sw__dep_done(l, st, "recording a tune run", e);
    if (rc)
        return rc;
    *run = sqlite3_last_insert_rowid(l->db);
    *resumed = false;
    return 0;
}

int sw_ledger_tune_begin(struct sw_ledger *l, const char *endpoint, const char *objective,
                         const char *space, int64_t *run, bool *resumed, struct sw_err *e)
{
    *run = 0;
    *resumed = false;
    int rc = check_label("objective", objective, LABEL_MAX, e);
    if (!rc)
        rc = check_label("space", space, LABEL_MAX, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc)
        return rc;
    rc = begin_tx(l, endpoint, objective, space, run, resumed, e);
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

static const char *const phases[] = {"baseline", "single", "combo", "remeasure", NULL};
static const char *const outcomes[] = {"rejected", "boot_failed", "bench_failed", "measured", NULL};

static bool one_of(const char *s, const char *const *words)
{
    for (size_t i = 0; s && words[i]; i++)
        if (!strcmp(s, words[i]))
            return true;
    return false;
}

static const char SQL_PROBE[] =
    "INSERT INTO tune_probes(run_id, seq, phase, candidate, outcome, gate, score, noise, "
    "recorded_ms, evidence) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

static void bind_num(sqlite3_stmt *st, int i, const json_t *v)
{
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (isfinite(d))
        sqlite3_bind_double(st, i, d);
    else
        sqlite3_bind_null(st, i);
}

int sw_ledger_tune_probe(struct sw_ledger *l, int64_t run, const json_t *probe, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    char *ev = NULL;
    if (!json_is_object(probe))
        return sw_err_set(e, SW_EINVAL, "tune: a probe must be a JSON object");
    json_int_t seq = json_integer_value(json_object_get(probe, "seq"));
    const char *phase = json_string_value(json_object_get(probe, "phase"));
    const char *cand = json_string_value(json_object_get(probe, "candidate"));
    const char *outcome = json_string_value(json_object_get(probe, "outcome"));
    const char *gate = json_string_value(json_object_get(probe, "gate"));
    const json_t *evidence = json_object_get(probe, "evidence");
    if (seq < 1)
        return sw_err_set(e, SW_EINVAL, "tune: probe seq must be >= 1");
    if (!one_of(phase, phases))
        return sw_err_set(e, SW_EINVAL,
                          "tune: probe phase '%s' is not one of baseline, single, "
                          "combo, remeasure",
                          phase ? phase : "(none)");
    if (!one_of(outcome, outcomes))
        return sw_err_set(e, SW_EINVAL,
                          "tune: probe outcome '%s' is not one of rejected, "
                          "boot_failed, bench_failed, measured",
                          outcome ? outcome : "(none)");
    int rc = check_label("probe candidate", cand, CAND_MAX, e);
    if (rc)
        return rc;
    if ((strcmp(outcome, "rejected") == 0) != (gate != NULL))
        return sw_err_set(e, SW_EINVAL, "tune: a probe names its gate exactly when rejected");
    if (gate) {
        rc = check_label("probe gate", gate, LABEL_MAX, e);
        if (rc)
            return rc;
    }
    rc = sw__dep_json("tune probe evidence", evidence, true, NULL, &ev, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc)
        goto out;
    rc = sw__dep_prepare(l, SQL_PROBE, &st, e);
    if (rc) {
        sw__ledger_rollback(l);
        goto out;
    }
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, (int64_t)seq);
    sw__bind_text(st, 3, phase);
    sw__bind_text(st, 4, cand);
    sw__bind_text(st, 5, outcome);
    if (gate)
        sw__bind_text(st, 6, gate);
    else
        sqlite3_bind_null(st, 6);
    bind_num(st, 7, json_object_get(probe, "score"));
    bind_num(st, 8, json_object_get(probe, "noise"));
    sqlite3_bind_int64(st, 9, sw__wall_ms());
    sw__bind_text(st, 10, ev ? ev : "{}");
    rc = sw__dep_done(l, st, "recording a tune probe", e);
    if (rc) {
        sw__ledger_rollback(l);
        goto out;
    }
    rc = sw__ledger_commit(l, e);
out:
    sw_free(ev);
    return rc;
}

static const char SQL_PROBES[] =
    "SELECT seq, phase, candidate, outcome, gate, score, noise, evidence FROM tune_probes "
    "WHERE run_id = ?1 ORDER BY seq";

static json_t *num_or_null(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null()
                                                     : json_real(sqlite3_column_double(st, i));
}

static json_t *text_or_null(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? json_string((const char *)t) : json_null();
}

static int probes_tx(struct sw_ledger *l, int64_t run, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    int rc = sw__dep_prepare(l, SQL_PROBES, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    json_t *arr = json_array();
    int s;
    while (arr && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *evt = sqlite3_column_text(st, 7);
        json_t *ev = evt ? json_loads((const char *)evt, 0, NULL) : NULL;
        json_t *p = json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "seq",
                              (json_int_t)sqlite3_column_int64(st, 0), "phase", text_or_null(st, 1),
                              "candidate", text_or_null(st, 2), "outcome", text_or_null(st, 3),
                              "gate", text_or_null(st, 4), "score", num_or_null(st, 5), "noise",
                              num_or_null(st, 6), "evidence", ev ? ev : json_object());
        if (!p || json_array_append_new(arr, p)) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (!arr) {
        sqlite3_finalize(st);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (s != SQLITE_DONE) {
        sqlite3_finalize(st);
        json_decref(arr);
        return sw__ledger_dberr(l, e, s, "reading tune_probes");
    }
    sqlite3_finalize(st);
    *out = arr;
    return 0;
}

int sw_ledger_tune_probes(struct sw_ledger *l, int64_t run, json_t **out, struct sw_err *e)
{
    *out = NULL;
    int rc = sw__ledger_exec(l, "BEGIN", e);
    if (rc)
        return rc;
    rc = probes_tx(l, run, out, e);
    sw__ledger_rollback(l);
    return rc;
}

static const char SQL_FINISH[] = "UPDATE tune_runs SET ended_ms = ?2, outcome = ?3, result = ?4 "
                                 "WHERE id = ?1 AND ended_ms IS NULL";

int sw_ledger_tune_finish(struct sw_ledger *l, int64_t run, const char *outcome,
                          const json_t *result, struct sw_err *e)
{
    static const char *const words[] = {"crowned", "no_winner", "budget", "interrupted", NULL};
    sqlite3_stmt *st = NULL;
    char *res = NULL;
    if (!one_of(outcome, words))
        return sw_err_set(e, SW_EINVAL,
                          "tune: run outcome '%s' is not one of crowned, "
                          "no_winner, budget, interrupted",
                          outcome ? outcome : "(none)");
    int rc = sw__dep_json("tune result", result, true, NULL, &res, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc)
        goto out;
    rc = sw__dep_prepare(l, SQL_FINISH, &st, e);
    if (rc) {
        sw__ledger_rollback(l);
        goto out;
    }
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, sw__wall_ms());
    sw__bind_text(st, 3, outcome);
    if (res)
        sw__bind_text(st, 4, res);
    else
        sqlite3_bind_null(st, 4);
    rc = sw__dep_done(l, st, "ending a tune run", e);
    if (!rc && sqlite3_changes(l->db) != 1)
        rc = sw_err_set(e, SW_EINVAL, "tune run %lld is not open", (long long)run);
    if (rc) {
        sw__ledger_rollback(l);
        goto out;
    }
    rc = sw__ledger_commit(l, e);
out:
    sw_free(res);
    return rc;
}
