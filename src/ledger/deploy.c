/*
 * Deploy attempts and their steps in the ledger: what the rollout pipeline writes as it goes, so
 * that every attempt, each step with its timings and the verdict land on disk as they happen.
 *
 *   begin   one open attempt per endpoint (a partial unique index holds it); it records who owns
 *           it (host, kernel boot id, pid and the pid's start time) so a later process can tell
 *           a live deploy from one whose process died;
 *   steps   each step is written when it starts and again when it ends, one transaction each: a
 *           process killed mid-step leaves the step open, and that open step says where it died;
 *   finish  the verdict with its failure class, evidence and downtime. A failed shape teaches: a
 *           rolled-back attempt adds a known-bad rule for its exact shape (the rules API), so the
 *           known_bad gate refuses it next time;
 *   recover marks the open attempts whose owner is provably gone as `interrupted` (their open
 *           steps too). Every read-write open runs it (the on-open hook deploy_attempts'
 *           descriptor names, tables.c), and begin runs it for its endpoint.
 *
 * Secrets: notes, evidence and step details pass through the caller's secret list (sw_redact)
 * before they are stored.
 *
 * What it deliberately does not do: run a deploy, decide a verdict or judge a shape (deploy and
 * the gates do), or keep the files of a committed shape (tag.c).
 */
#include "deploy_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t sw__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sw__dep_prepare(struct sw_ledger *l, const char *sql, sqlite3_stmt **st, struct sw_err *e)
{
    *st = NULL;
    if (!l || !l->db)
        return sw_err_set(e, SW_EINVAL, "ledger: not open");
    int rc = sqlite3_prepare_v2(l->db, sql, -1, st, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(*st);
        *st = NULL;
        return sw__ledger_dberr(l, e, rc, "preparing a statement");
    }
    return 0;
}

int sw__dep_done(struct sw_ledger *l, sqlite3_stmt *st, const char *what, struct sw_err *e)
{
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_DONE ? 0 : sw__ledger_dberr(l, e, rc, what);
    sqlite3_finalize(st);
    return ret;
}

bool sw__dep_word(const char *s, size_t max)
{
    if (!s || !*s || strlen(s) > max)
        return false;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* Serialize j (may be NULL) with every secret replaced by "***"; checked to be JSON again. */
int sw__dep_json(const char *what, const json_t *j, bool want_object, const char *const *secrets,
                 char **out, struct sw_err *e)
{
    *out = NULL;
    if (!j)
        return 0;
    int rc = sw__ledger_json_text(what, j, want_object, SW_LEDGER_JSON_MAX, out, e);
    if (rc || !secrets)
        return rc;
    bool changed = false;
    for (const char *const *s = secrets; *s; s++)
        changed |= sw_redact(*out, *s) > 0;
    if (changed) {
        json_error_t je;
        json_t *back = json_loads(*out, JSON_DECODE_ANY, &je);
        if (!back) {
            sw_free(*out);
            *out = NULL;
            return sw_err_set(e, SW_EINVAL, "%s: not JSON once its secrets were redacted", what);
        }
        json_decref(back);
    }
    return 0;
}

/* A copy of text (may be NULL) with each secret redacted; *out NULL for NULL. */
int sw__dep_text(const char *what, const char *text, size_t max, const char *const *secrets,
                 char **out, struct sw_err *e)
{
    *out = NULL;
    if (!text)
        return 0;
    size_t n = strlen(text);
    if (n > max)
        return sw_err_set(e, SW_ERANGE, "%s: %zu bytes, more than the %zu the ledger keeps", what,
                          n, max);
    char *c = NULL;
    size_t cn = 0;
    if (sw__utf8_repair(text, n, &c, &cn))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (const char *const *s = secrets; s && *s; s++)
        sw_redact(c, *s);
    *out = c;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Who owns an open attempt, and whether that process is still there.
 */

static void read_line(const char *path, char *out, size_t n)
{
    out[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (!fgets(out, (int)n, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* Field 22 (starttime, clock ticks after boot) and field 3 (state) of /proc/PID/stat; false
 * when there is no such process. */
static bool proc_start(int64_t pid, int64_t *start, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[got] = '\0';
    /* the command name (field 2) may hold spaces and ')': fields resume after the last ')' */
    char *p = strrchr(buf, ')');
    if (!p)
        return false;
    p++;
    int field = 2;
    *state = '?';
    *start = 0;
    char *save = NULL;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 3)
            *state = tok[0];
        if (field == 22) {
            *start = strtoll(tok, NULL, 10);
            return true;
        }
    }
    return false;
}

void sw__dep_owner_self(struct sw__dep_owner *o)
{
    memset(o, 0, sizeof(*o));
    if (gethostname(o->host, sizeof(o->host) - 1))
        snprintf(o->host, sizeof(o->host), "?");
    read_line("/proc/sys/kernel/random/boot_id", o->boot, sizeof(o->boot));
    o->pid = (int64_t)getpid();
    char st;
    if (!proc_start(o->pid, &o->start, &st))
        o->start = 0;
}

/* 1: the owner runs; 0: it is gone (its pid is free or reused, a zombie, or the host rebooted);
 * -1: cannot tell (another host). */
int sw__dep_owner_alive(const struct sw__dep_owner *o, char *why, size_t whyn)
{
    struct sw__dep_owner me;
    sw__dep_owner_self(&me);
    if (strcmp(o->host, me.host)) {
        snprintf(why, whyn, "owned by host %s, not this one (%s): cannot tell", o->host, me.host);
        return -1;
    }
    if (o->boot[0] && me.boot[0] && strcmp(o->boot, me.boot)) {
        snprintf(why, whyn, "the host rebooted since (its owner, pid %lld, died with it)",
                 (long long)o->pid);
        return 0;
    }
    int64_t start = 0;
    char state = '?';
    if (o->pid <= 0 || !proc_start(o->pid, &start, &state)) {
        snprintf(why, whyn, "its process (pid %lld on %s) is gone", (long long)o->pid, o->host);
        return 0;
    }
    if (o->start && start != o->start) {
        snprintf(why, whyn, "its process (pid %lld) is gone; the pid now names another process",
                 (long long)o->pid);
        return 0;
    }
    if (state == 'Z' || state == 'X') {
        snprintf(why, whyn, "its process (pid %lld) died (a zombie)", (long long)o->pid);
        return 0;
    }
    snprintf(why, whyn, "its process (pid %lld on %s) is running", (long long)o->pid, o->host);
    return 1;
}

static void owner_from_row(sqlite3_stmt *st, int col, struct sw__dep_owner *o)
{
    memset(o, 0, sizeof(*o));
    const char *h = (const char *)sqlite3_column_text(st, col);
    const char *b = (const char *)sqlite3_column_text(st, col + 1);
    snprintf(o->host, sizeof(o->host), "%s", h ? h : "");
    snprintf(o->boot, sizeof(o->boot), "%s", b ? b : "");
    o->pid = sqlite3_column_int64(st, col + 2);
    o->start = sqlite3_column_int64(st, col + 3);
}

/* ---------------------------------------------------------------------------------------------
 * Recovery.
 */

static const char SQL_OPEN_ATTEMPTS[] =
    "SELECT a.id, e.name, a.owner_host, a.owner_boot, a.owner_pid, a.owner_start, a.started_ms, "
    "(SELECT name FROM deploy_steps WHERE attempt_id = a.id ORDER BY seq DESC LIMIT 1), "
    "(SELECT max(coalesce(ended_ms, started_ms)) FROM deploy_steps WHERE attempt_id = a.id) "
    "FROM deploy_attempts a JOIN endpoints e ON e.id = a.endpoint_id "
    "WHERE a.ended_ms IS NULL AND (?1 IS NULL OR e.name = ?1) AND a.id > ?2 ORDER BY a.id";

static int mark_interrupted(struct sw_ledger *l, int64_t id, int64_t ended_ms, const char *why,
                            const char *last_step, const struct sw__dep_owner *o, struct sw_err *e)
{
    json_t *ev = json_pack("{s:s,s:s?,s:{s:s,s:I}}", "reason", why, "last_step", last_step, "owner",
                           "host", o->host, "pid", (json_int_t)o->pid);
    char *evt = NULL;
    sqlite3_stmt *st = NULL;
    int rc = ev ? sw__ledger_json_text("evidence", ev, true, SW_LEDGER_JSON_MAX, &evt, e)
                : sw_err_set(e, SW_ENOMEM, "out of memory");
    if (!rc)
        rc = sw__dep_prepare(l,
                             "UPDATE deploy_steps SET ended_ms = ?2, outcome = 'interrupted' "
                             "WHERE attempt_id = ?1 AND ended_ms IS NULL",
                             &st, e);
    if (!rc) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, ended_ms);
        rc = sw__dep_done(l, st, "closing the open steps", e);
    }
    if (!rc)
        rc = sw__dep_prepare(l,
                             "UPDATE deploy_attempts SET ended_ms = ?2, outcome = 'interrupted', "
                             "failure_class = 'interrupted', evidence = ?3 "
                             "WHERE id = ?1 AND ended_ms IS NULL",
                             &st, e);
    if (!rc) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, ended_ms);
        sw__bind_text(st, 3, evt);
        rc = sw__dep_done(l, st, "marking an attempt interrupted", e);
    }
    json_decref(ev);
    sw_free(evt);
    return rc;
}

/* In a write transaction: mark the stale open attempts (of endpoint, or all) interrupted. */
int sw__dep_recover_tx(struct sw_ledger *l, const char *endpoint, int64_t *marked, struct sw_err *e)
{
    enum { BATCH = 16 };
    struct {
        int64_t id, end;
        struct sw__dep_owner o;
        char why[256];
        char step[65];
    } dead[BATCH];
    int64_t total = 0;
    int64_t after = 0; /* attempts are read in id order, a batch at a time */
    for (;;) {
        size_t nd = 0;
        sqlite3_stmt *st = NULL;
        int rc = sw__dep_prepare(l, SQL_OPEN_ATTEMPTS, &st, e);
        if (rc)
            return rc;
        sw__bind_text(st, 1, endpoint);
        sqlite3_bind_int64(st, 2, after);
        int s;
        bool more = false;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            after = sqlite3_column_int64(st, 0);
            struct sw__dep_owner o;
            owner_from_row(st, 2, &o);
            char why[256];
            if (sw__dep_owner_alive(&o, why, sizeof(why)) != 0)
                continue;
            dead[nd].id = after;
            dead[nd].o = o;
            /* the last thing the dead process wrote is the best end time there is */
            int64_t last = sqlite3_column_int64(st, 8);
            int64_t started = sqlite3_column_int64(st, 6);
            dead[nd].end = last > started ? last : started;
            snprintf(dead[nd].why, sizeof(dead[nd].why), "%s", why);
            const char *step = (const char *)sqlite3_column_text(st, 7);
            snprintf(dead[nd].step, sizeof(dead[nd].step), "%s", step ? step : "");
            if (++nd == BATCH) {
                more = true;
                break;
            }
        }
        if (s != SQLITE_ROW && s != SQLITE_DONE)
            rc = sw__ledger_dberr(l, e, s, "reading the open attempts");
        sqlite3_finalize(st);
        for (size_t i = 0; !rc && i < nd; i++) {
            rc = mark_interrupted(l, dead[i].id, dead[i].end, dead[i].why,
                                  dead[i].step[0] ? dead[i].step : NULL, &dead[i].o, e);
            if (!rc)
                sw_log(SW_LOG_INFO, "ledger %s: deploy attempt #%lld marked interrupted: %s",
                       l->path, (long long)dead[i].id, dead[i].why);
        }
        if (rc)
            return rc;
        total += (int64_t)nd;
        if (!more)
            break;
    }
    if (marked)
        *marked = total;
    return 0;
}

/* Any open attempt at all (a read, no lock): what a read-write open checks before it takes the
 * write lock to recover. */
int sw__dep_any_open(struct sw_ledger *l, bool *any, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *any = false;
    int rc =
        sw__dep_prepare(l, "SELECT 1 FROM deploy_attempts WHERE ended_ms IS NULL LIMIT 1", &st, e);
    if (rc)
        return rc;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        *any = true;
    else if (s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading the open attempts");
    sqlite3_finalize(st);
    return rc;
}

/* The deploy journal's part of every read-write open (deploy_attempts' descriptor names it,
 * tables.c): a deploy whose process died left its attempt open, so mark it interrupted now. Only
 * when an open attempt exists, so an ordinary open takes no write lock; a failure here is
 * logged, not fatal (the next open, or sw_ledger_deploy_recover, tries again). */
void sw__dep_on_open(struct sw_ledger *l)
{
    struct sw_err re;
    bool any = false;
    int64_t n = 0;
    sw_err_clear(&re);
    if (sw__dep_any_open(l, &any, &re) || !any)
        return;
    if (sw_ledger_deploy_recover(l, NULL, &n, &re))
        sw_log(SW_LOG_WARN, "ledger %s: could not mark interrupted deploys: %s", l->path, re.msg);
}

int sw_ledger_deploy_recover(struct sw_ledger *l, const char *endpoint, int64_t *marked,
                             struct sw_err *e)
{
    if (marked)
        *marked = 0;
    int rc = sw__ledger_begin(l, e);
    if (rc)
        return rc;
    rc = sw__dep_recover_tx(l, endpoint, marked, e);
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

/* ---------------------------------------------------------------------------------------------
 * Attempts and steps.
 */

int sw_ledger_deploy_begin(struct sw_ledger *l, const struct sw_ledger_attempt *a, int64_t *id,
                           struct sw_err *e)
{
    int64_t endpoint_id = 0, shape_id = 0, open_id = 0, open_pid = 0;
    char *note = NULL;
    sqlite3_stmt *st = NULL;
    if (id)
        *id = 0;
    if (!a || !a->endpoint || !a->shape)
        return sw_err_set(e, SW_EINVAL, "deploy attempt: endpoint and shape are required");
    if (a->from_tag && !*a->from_tag)
        return sw_err_set(e, SW_EINVAL, "deploy attempt: from_tag is empty (NULL = none)");
    int rc = sw__dep_text("deploy attempt: note", a->note, 64u * 1024u, a->secrets, &note, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc)
        goto out_free;
    rc = sw__dep_recover_tx(l, a->endpoint, NULL, e);
    if (!rc)
        rc = sw__ledger_endpoint_tx(l, a->endpoint, true, &endpoint_id, e);
    if (!rc)
        rc = sw__ledger_shape_tx(l, a->shape, &shape_id, NULL, e);
    if (rc)
        goto out;
    /* one deploy per endpoint at a time */
    rc = sw__dep_prepare(l,
                         "SELECT id, owner_pid, owner_host FROM deploy_attempts "
                         "WHERE endpoint_id = ?1 AND ended_ms IS NULL",
                         &st, e);
    if (rc)
        goto out;
    sqlite3_bind_int64(st, 1, endpoint_id);
    char host[256] = "";
    if (sqlite3_step(st) == SQLITE_ROW) {
        open_id = sqlite3_column_int64(st, 0);
        open_pid = sqlite3_column_int64(st, 1);
        const char *h = (const char *)sqlite3_column_text(st, 2);
        snprintf(host, sizeof(host), "%s", h ? h : "?");
    }
    sqlite3_finalize(st);
    st = NULL;
    if (open_id) {
        rc = sw_err_at(e, SW_EBUSY, l->path, 0, 0,
                       "%s: deploy attempt #%lld is still open (pid %lld on %s is running it); "
                       "one deploy per endpoint at a time",
                       a->endpoint, (long long)open_id, (long long)open_pid, host);
        goto out;
    }
    if (a->from_tag) {
        int64_t tag_endpoint = 0;
        rc = sw__dep_prepare(l, "SELECT endpoint_id FROM tags WHERE name = ?1", &st, e);
        if (rc)
            goto out;
        sw__bind_text(st, 1, a->from_tag);
        if (sqlite3_step(st) == SQLITE_ROW)
            tag_endpoint = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        st = NULL;
        if (tag_endpoint != endpoint_id) {
            rc = sw_err_set(e, SW_ENOENT, "deploy attempt: from_tag %s is not a tag of %s",
                            a->from_tag, a->endpoint);
            goto out;
        }
    }
    struct sw__dep_owner o;
    sw__dep_owner_self(&o);
    rc = sw__dep_prepare(l,
                         "INSERT INTO deploy_attempts(endpoint_id, shape_id, from_tag, "
                         "started_ms, owner_host, owner_boot, owner_pid, owner_start, note) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                         &st, e);
    if (rc)
        goto out;
    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_int64(st, 2, shape_id);
    sw__bind_text(st, 3, a->from_tag);
    sqlite3_bind_int64(st, 4, a->started_ms > 0 ? a->started_ms : sw__wall_ms());
    sw__bind_text(st, 5, o.host);
    sw__bind_text(st, 6, o.boot[0] ? o.boot : NULL);
    sqlite3_bind_int64(st, 7, o.pid);
    sqlite3_bind_int64(st, 8, o.start);
    sw__bind_text(st, 9, note);
    rc = sw__dep_done(l, st, "recording a deploy attempt", e);
    if (!rc && id)
        *id = sqlite3_last_insert_rowid(l->db);
out:
    if (rc)
        sw__ledger_rollback(l);
    else
        rc = sw__ledger_commit(l, e);
out_free:
    sw_free(note);
    return rc;
}

/* The attempt's endpoint id and whether it is still open; SW_ENOENT when there is none. */
int sw__dep_attempt_row(struct sw_ledger *l, int64_t attempt, int64_t *endpoint_id,
                        int64_t *shape_id, bool *open, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    int rc = sw__dep_prepare(l,
                             "SELECT endpoint_id, shape_id, ended_ms IS NULL FROM "
                             "deploy_attempts WHERE id = ?1",
                             &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, attempt);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        if (endpoint_id)
            *endpoint_id = sqlite3_column_int64(st, 0);
        if (shape_id)
            *shape_id = sqlite3_column_int64(st, 1);
        if (open)
            *open = sqlite3_column_int(st, 2) != 0;
    } else if (s == SQLITE_DONE) {
        rc = sw_err_set(e, SW_ENOENT, "no deploy attempt #%lld in the ledger", (long long)attempt);
    } else {
        rc = sw__ledger_dberr(l, e, s, "reading a deploy attempt");
    }
    sqlite3_finalize(st);
    return rc;
}

/* A step of attempt numbered after its others, begun now; with outcome, ended now too (its detail
 * dt as stored). In the caller's transaction. */
static int step_insert(struct sw_ledger *l, int64_t attempt, const char *step, const char *outcome,
                       const char *dt, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    int rc = sw__dep_prepare(l,
                             "INSERT INTO deploy_steps(attempt_id, seq, name, started_ms, "
                             "ended_ms, outcome, detail) VALUES(?1, (SELECT coalesce(max(seq), 0) "
                             "+ 1 FROM deploy_steps WHERE attempt_id = ?1), ?2, ?3, ?4, ?5, ?6)",
                             &st, e);
    if (rc)
        return rc;
    int64_t now = sw__wall_ms();
    sqlite3_bind_int64(st, 1, attempt);
    sw__bind_text(st, 2, step);
    sqlite3_bind_int64(st, 3, now);
    if (outcome)
        sqlite3_bind_int64(st, 4, now);
    sw__bind_text(st, 5, outcome);
    sw__bind_text(st, 6, dt);
    return sw__dep_done(l, st, "recording a deploy step", e);
}

int sw_ledger_deploy_step_begin(struct sw_ledger *l, int64_t attempt, const char *step,
                                int64_t *step_id, struct sw_err *e)
{
    bool open = false;
    if (step_id)
        *step_id = 0;
    if (!sw__dep_word(step, 64))
        return sw_err_set(e, SW_EINVAL,
                          "deploy step: the name must be a lowercase word (plan, gate, render, "
                          "stage, stop, start, follow, ready, live, battery, readings, commit, "
                          "rollback, ...)");
    int rc = sw__ledger_begin(l, e);
    if (rc)
        return rc;
    rc = sw__dep_attempt_row(l, attempt, NULL, NULL, &open, e);
    if (!rc && !open)
        rc = sw_err_set(e, SW_EINVAL, "deploy attempt #%lld is finished: no more steps",
                        (long long)attempt);
    if (!rc)
        rc = step_insert(l, attempt, step, NULL, NULL, e);
    if (!rc && step_id)
        *step_id = sqlite3_last_insert_rowid(l->db);
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

/* A step's end checked: its outcome a known word, its detail as stored (*dt, sw_free). */
static int step_end_text(const char *outcome, const json_t *detail, const char *const *secrets,
                         char **dt, struct sw_err *e)
{
    static const char *const ok[] = {"ok", "failed", "skipped", NULL};
    bool known = false;
    for (size_t i = 0; outcome && ok[i]; i++)
        known |= !strcmp(outcome, ok[i]);
    if (!known)
        return sw_err_set(e, SW_EINVAL, "deploy step: outcome must be ok, failed or skipped");
    return sw__dep_json("deploy step: detail", detail, false, secrets, dt, e);
}

/* The transaction a step's write began: committed when rc is 0, else rolled back (rc). */
static int step_txn_end(struct sw_ledger *l, int rc, struct sw_err *e)
{
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

/* An ended step's row: the open step step_id ended now (attempt 0), or a whole step `step` added
 * to attempt, open or finished (step_id 0); its outcome and detail checked; one transaction. */
static int step_write(struct sw_ledger *l, int64_t step_id, int64_t attempt, const char *step,
                      const char *outcome, const json_t *detail, const char *const *secrets,
                      struct sw_err *e)
{
    char *dt = NULL;
    sqlite3_stmt *st = NULL;
    int rc = step_end_text(outcome, detail, secrets, &dt, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc)
        goto out_free;
    if (!step_id) {
        rc = sw__dep_attempt_row(l, attempt, NULL, NULL, NULL, e);
        if (!rc)
            rc = step_insert(l, attempt, step, outcome, dt, e);
        goto out_txn;
    }
    int64_t ended = 0;
    rc = sw__dep_prepare(l, "SELECT attempt_id, ended_ms FROM deploy_steps WHERE id = ?1", &st, e);
    if (!rc) {
        sqlite3_bind_int64(st, 1, step_id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            attempt = sqlite3_column_int64(st, 0);
            ended = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        st = NULL;
        if (!attempt)
            rc = sw_err_set(e, SW_ENOENT, "no deploy step #%lld in the ledger", (long long)step_id);
        else if (ended)
            rc =
                sw_err_set(e, SW_EINVAL, "deploy step #%lld has already ended", (long long)step_id);
    }
    if (!rc)
        rc =
            sw__dep_prepare(l,
                            "UPDATE deploy_steps SET ended_ms = max(?2, started_ms), outcome = ?3, "
                            "detail = ?4 WHERE id = ?1",
                            &st, e);
    if (!rc) {
        sqlite3_bind_int64(st, 1, step_id);
        sqlite3_bind_int64(st, 2, sw__wall_ms());
        sw__bind_text(st, 3, outcome);
        sw__bind_text(st, 4, dt);
        rc = sw__dep_done(l, st, "ending a deploy step", e);
    }
out_txn:
    rc = step_txn_end(l, rc, e);
out_free:
    sw_free(dt);
    return rc;
}

int sw_ledger_deploy_step_end(struct sw_ledger *l, int64_t step_id, const char *outcome,
                              const json_t *detail, const char *const *secrets, struct sw_err *e)
{
    if (step_id <= 0)
        return sw_err_set(e, SW_ENOENT, "no deploy step #%lld in the ledger", (long long)step_id);
    return step_write(l, step_id, 0, NULL, outcome, detail, secrets, e);
}

int sw_ledger_deploy_step_record(struct sw_ledger *l, int64_t attempt, const char *step,
                                 const char *outcome, const json_t *detail,
                                 const char *const *secrets, struct sw_err *e)
{
    if (!sw__dep_word(step, 64))
        return sw_err_set(e, SW_EINVAL, "deploy step: the name must be a lowercase word");
    return step_write(l, 0, attempt, step, outcome, detail, secrets, e);
}

/* ---------------------------------------------------------------------------------------------
 * The known-bad rule a failed shape teaches: every scalar of its canonical form, joined by &&.
 */

static int expr_term(struct sw_buf *b, const char *path, const json_t *v, int depth)
{
    int rc = 0;
    if (json_is_object(v)) {
        const char *k;
        const json_t *x;
        if (depth >= 3)
            return 0; /* deeper than a rule path reaches: the rule is a little wider */
        json_object_foreach((json_t *)v, k, x)
        {
            char sub[256];
            int w = snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
            if (w < 0 || (size_t)w >= sizeof(sub))
                continue;
            rc = expr_term(b, sub, x, depth + 1);
            if (rc)
                return rc;
        }
        return 0;
    }
    const char *sep = b->len ? " && " : "";
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (strlen(s) > 200)
            return 0;
        rc = sw_buf_printf(b, "%s%s == \"", sep, path);
        for (; !rc && *s; s++) {
            if (*s == '"' || *s == '\\')
                rc = sw_buf_putc(b, '\\');
            if (!rc)
                rc = sw_buf_putc(b, *s);
        }
        if (!rc)
            rc = sw_buf_putc(b, '"');
    } else if (json_is_integer(v)) {
        rc = sw_buf_printf(b, "%s%s == %lld", sep, path, (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        rc = sw_buf_printf(b, "%s%s == %.17g", sep, path, json_real_value(v));
    } else if (json_is_boolean(v)) {
        rc = sw_buf_printf(b, "%s%s == %s", sep, path, json_is_true(v) ? "true" : "false");
    }
    return rc; /* arrays and nulls: left out (the rule is a little wider) */
}

/* The rule expression of an exact canonical shape; it is parsed back and must match it. */
int sw__dep_shape_expr(const json_t *canonical, char **out, struct sw_err *e)
{
    struct sw_buf b;
    struct sw_ledger_rule *r = NULL;
    *out = NULL;
    sw_buf_init(&b, 4096);
    int rc = expr_term(&b, "", canonical, 0);
    if (rc) {
        sw_buf_free(&b);
        return rc == SW_ENOMEM ? sw_err_set(e, rc, "out of memory")
                               : sw_err_set(e, SW_ERANGE, "the shape's rule is over 4096 bytes");
    }
    if (!b.len) {
        sw_buf_free(&b);
        return sw_err_set(e, SW_EINVAL, "the shape has no scalar to write a rule of");
    }
    rc = sw_ledger_rule_parse(sw_buf_cstr(&b), &r, e);
    if (!rc && !sw_ledger_rule_eval(r, canonical))
        rc = sw_err_set(e, SW_EINVAL, "the rule written for the shape does not match it: %s",
                        sw_buf_cstr(&b));
    sw_ledger_rule_free(r);
    if (rc) {
        sw_buf_free(&b);
        return rc;
    }
    *out = sw_buf_steal(&b);
    return *out ? 0 : sw_err_set(e, SW_ENOMEM, "out of memory");
}

static const char SQL_SHAPE_CANON[] = "SELECT canonical, hash FROM shapes WHERE id = ?1";

static int teach(struct sw_ledger *l, int64_t attempt, int64_t shape_id, const char *endpoint,
                 const char *cls, const char *outcome, const char *note, int64_t *rule_id,
                 struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    json_t *canon = NULL, *failure = NULL;
    char *expr = NULL, hash[SW_LEDGER_HASH_LEN + 1] = "";
    char reason[512];
    int rc = sw__dep_prepare(l, SQL_SHAPE_CANON, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, shape_id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        const char *h = (const char *)sqlite3_column_text(st, 1);
        canon = t ? json_loads(t, 0, NULL) : NULL;
        snprintf(hash, sizeof(hash), "%s", h ? h : "");
    }
    sqlite3_finalize(st);
    if (!canon)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw__dep_shape_expr(canon, &expr, e);
    if (rc)
        goto out;
    snprintf(reason, sizeof(reason),
             "deploy attempt #%lld of %s (shape %.12s) failed: %s, %s%s%.300s", (long long)attempt,
             endpoint, hash, cls, outcome, note ? ": " : "", note ? note : "");
    failure = json_pack("{s:s,s:s,s:s,s:I}", "class", cls, "phase", "deploy", "message", reason,
                        "attempt", (json_int_t)attempt);
    if (!failure) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    struct sw_ledger_rule_rec rr = {.endpoint = endpoint,
                                    .expr = expr,
                                    .reason = reason,
                                    .failure = failure,
                                    .source = "deploy"};
    rc = sw__ledger_rule_tx(l, &rr, rule_id, e);
out:
    json_decref(canon);
    json_decref(failure);
    sw_free(expr);
    return rc;
}

int sw_ledger_deploy_finish(struct sw_ledger *l, int64_t attempt,
                            const struct sw_ledger_attempt_end *f, int64_t *rule_id,
                            struct sw_err *e)
{
    static const char *const outcomes[] = {"rolled_back", "rollback_failed", "gate_refused",
                                           "interrupted", NULL};
    char *ev = NULL, *note = NULL, endpoint[160] = "";
    int64_t endpoint_id = 0, shape_id = 0, rid = 0;
    bool open = false, known = false;
    sqlite3_stmt *st = NULL;
    if (rule_id)
        *rule_id = 0;
    if (!f || !f->outcome)
        return sw_err_set(e, SW_EINVAL, "deploy finish: an outcome is required");
    if (!strcmp(f->outcome, "committed"))
        return sw_err_set(e, SW_EINVAL,
                          "deploy finish: a committed attempt is finished by sw_ledger_tag_commit "
                          "(the tag and the verdict land together)");
    for (size_t i = 0; outcomes[i]; i++)
        known |= !strcmp(f->outcome, outcomes[i]);
    if (!known)
        return sw_err_set(e, SW_EINVAL,
                          "deploy finish: outcome must be committed, rolled_back, "
                          "rollback_failed, gate_refused or interrupted (got '%s')",
                          f->outcome);
    const char *cls = f->failure_class ? f->failure_class : f->outcome;
    if (!sw__dep_word(cls, 64))
        return sw_err_set(e, SW_EINVAL,
                          "deploy finish: failure_class must be a lowercase word (oom, "
                          "crash_loop, dead_generation, worst_case, ...)");
    int rc = sw__dep_json("deploy finish: evidence", f->evidence, true, f->secrets, &ev, e);
    if (!rc)
        rc = sw__dep_text("deploy finish: note", f->note, 64u * 1024u, f->secrets, &note, e);
    if (rc)
        goto out_free;
    rc = sw__ledger_begin(l, e);
    if (rc)
        goto out_free;
    rc = sw__dep_attempt_row(l, attempt, &endpoint_id, &shape_id, &open, e);
    if (!rc && !open)
        rc = sw_err_set(e, SW_EINVAL, "deploy attempt #%lld is already finished",
                        (long long)attempt);
    if (!rc) {
        rc = sw__dep_prepare(l, "SELECT name FROM endpoints WHERE id = ?1", &st, e);
        if (!rc) {
            sqlite3_bind_int64(st, 1, endpoint_id);
            if (sqlite3_step(st) == SQLITE_ROW)
                snprintf(endpoint, sizeof(endpoint), "%s", sqlite3_column_text(st, 0));
            sqlite3_finalize(st);
            st = NULL;
        }
    }
    bool failed_shape =
        !strcmp(f->outcome, "rolled_back") || !strcmp(f->outcome, "rollback_failed");
    if (!rc && failed_shape && !f->not_the_shape)
        rc = teach(l, attempt, shape_id, endpoint, cls, f->outcome, note, &rid, e);
    if (!rc)
        rc = sw__dep_prepare(l,
                             "UPDATE deploy_attempts SET ended_ms = max(?2, started_ms), "
                             "outcome = ?3, failure_class = ?4, evidence = ?5, downtime_ms = ?6, "
                             "note = coalesce(?7, note), rule_id = ?8 WHERE id = ?1",
                             &st, e);
    if (!rc) {
        sqlite3_bind_int64(st, 1, attempt);
        sqlite3_bind_int64(st, 2, f->ended_ms > 0 ? f->ended_ms : sw__wall_ms());
        sw__bind_text(st, 3, f->outcome);
        sw__bind_text(st, 4, cls);
        sw__bind_text(st, 5, ev);
        sw__bind_i64(st, 6, f->downtime_ms, f->downtime_ms < 0);
        sw__bind_text(st, 7, note);
        sw__bind_i64(st, 8, rid, rid == 0);
        rc = sw__dep_done(l, st, "finishing a deploy attempt", e);
    }
    if (rc) {
        sw__ledger_rollback(l);
        goto out_free;
    }
    rc = sw__ledger_commit(l, e);
    if (!rc && rule_id)
        *rule_id = rid;
out_free:
    sw_free(ev);
    sw_free(note);
    return rc;
}
