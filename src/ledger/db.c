/*
 * Opening and closing the ledger, the connection settings that carry its guarantees, the
 * statement cache, transactions and the mapping of SQLite errors to slipway's.
 *
 * The settings, and why (docs/ledger.md says the same for operators):
 *   journal_mode=WAL   readers never block the writer and a writer never blocks readers; a crash
 *                      leaves the WAL, which the next open replays up to the last commit record.
 *   synchronous=FULL   the WAL is fsynced at every commit, so a commit that returned survives a
 *                      power loss or kernel crash, not only a killed process (NORMAL would keep
 *                      it across kill -9 but may lose the last commits on power loss). A boot
 *                      takes minutes; an fsync per record costs nothing that matters here
 *                      (bench/bench_ledger.c measures it).
 *   foreign_keys=ON    a boot cannot point at a shape or endpoint that is not there.
 *   busy handler       concurrent writers queue on the lock instead of failing; every write
 *                      transaction starts with BEGIN IMMEDIATE so it takes the lock before it
 *                      reads, which avoids the one SQLITE_BUSY a wait cannot absorb (a reader
 *                      upgrading to writer after another commit: SQLITE_BUSY_SNAPSHOT). The
 *                      handler is ours, not sqlite3_busy_timeout: SQLite's default backs off to
 *                      100 ms sleeps, so a writer in a loop retakes the lock every time it lets
 *                      go and starves the other (measured: 245 records to 1 in 3 s). Short
 *                      jittered sleeps (0.2-1.2 ms) let waiting writers in between.
 *   DEFENSIVE          no writable_schema tricks; the FTS3 tokenizer pointer function is off.
 *                      The schema must be trusted (SQLite 3.40 does not mark json_valid, used
 *                      by our CHECK constraints, innocuous), so instead schema.c refuses any file
 *                      whose schema is not exactly what our migrations create: a crafted ledger
 *                      cannot bring its own triggers, views or function calls.
 *
 *
 * Read-only opens (SQLITE_OPEN_READONLY, URI mode=ro) never write. Reading a WAL database needs
 * its shared-memory index (-shm); when that cannot be created (the user cannot write the
 * directory), the open falls back to immutable=1 as SQLite documents, unless a -wal file holds
 * commits that immutable would not see: then it says so instead of reading a stale file.
 * Read-write opens run PRAGMA quick_check first and refuse a corrupt file rather than adding to
 * it. A zero-byte file is an uninitialised ledger: read-write opens initialise it, read-only
 * opens say so.
 *
 * What it deliberately does not do: no schema (schema.c), no records or queries, and no part of
 * any table's upkeep: a read-write open runs the hooks the tables' descriptors name (tables.c;
 * the deploy journal's recovery is one), knowing none of them.
 */
#include "ledger_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_BUSY_MS 15000

int sw__ledger_dberr(struct sw_ledger *l, struct sw_err *e, int rc, const char *what)
{
    int code;
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        code = SW_EBUSY;
        break;
    case SQLITE_CONSTRAINT:
        code = (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) ? SW_EEXIST
                                                                                      : SW_EINVAL;
        break;
    case SQLITE_NOMEM:
        code = SW_ENOMEM;
        break;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
        code = SW_EIO;
        break;
    default:
        code = SW_EDB;
        break;
    }
    const char *msg = l && l->db ? sqlite3_errmsg(l->db) : sqlite3_errstr(rc);
    const char *hint = "";
    if (code == SW_EBUSY)
        hint = " (another process held the ledger's write lock past the busy timeout)";
    return sw_err_at(e, code, l ? l->path : "ledger", 0, 0, "%s: %s [%s]%s", what, msg,
                     sqlite3_errstr(rc), hint);
}

int sw__ledger_exec(struct sw_ledger *l, const char *sql, struct sw_err *e)
{
    int rc = sqlite3_exec(l->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : sw__ledger_dberr(l, e, rc, sql);
}

int sw__ledger_begin(struct sw_ledger *l, struct sw_err *e)
{
    if (l->readonly)
        return sw_err_at(e, SW_EINVAL, l->path, 0, 0, "ledger opened read-only");
    return sw__ledger_exec(l, "BEGIN IMMEDIATE", e);
}

int sw__ledger_commit(struct sw_ledger *l, struct sw_err *e)
{
    int rc = sw__ledger_exec(l, "COMMIT", e);
    if (rc)
        sw__ledger_rollback(l);
    return rc;
}

void sw__ledger_rollback(struct sw_ledger *l)
{
    if (l->db && !sqlite3_get_autocommit(l->db))
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
}

int sw__ledger_stmt(struct sw_ledger *l, enum sw__lst which, sqlite3_stmt **out, struct sw_err *e)
{
    if ((unsigned)which >= LST__N || !l->db)
        return sw_err_set(e, SW_EINVAL, "ledger: bad statement %d", (int)which);
    sqlite3_stmt *st = l->stmt[which];
    if (!st) {
        char buf[4096];
        const char *sql = sw__ledger_sql_text(which, buf, sizeof(buf));
        if (!sql)
            return sw_err_set(e, SW_ERANGE, "ledger: statement %d is too long", (int)which);
        int rc = sqlite3_prepare_v3(l->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK)
            return sw__ledger_dberr(l, e, rc, "preparing a statement");
        l->stmt[which] = st;
    } else {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    *out = st;
    return 0;
}

int sw__bind_text(sqlite3_stmt *st, int i, const char *s)
{
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

int sw__bind_i64(sqlite3_stmt *st, int i, int64_t v, bool is_null)
{
    return is_null ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

int sw__ledger_step_done(struct sw_ledger *l, sqlite3_stmt *st, const char *what, struct sw_err *e)
{
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_DONE ? 0 : sw__ledger_dberr(l, e, rc, what);
    sqlite3_reset(st);
    return ret;
}

/* Describe a file that SQLite says is not a database. */
static void describe_file(const char *path, char *out, size_t n)
{
    unsigned char head[64];
    size_t got = 0;
    FILE *f = fopen(path, "rb");
    if (f) {
        got = fread(head, 1, sizeof(head), f);
        fclose(f);
    }
    sw_sniff(head, got, out, n);
}

/* SQLite calls this while the lock is held elsewhere; n is 0 on the first call of a wait.
 * Returning 0 gives up (SQLITE_BUSY), anything else retries. */
static int busy_wait(void *arg, int n)
{
    struct sw_ledger *l = arg;
    uint64_t now = sw_now_ns();
    if (n == 0)
        l->busy_since_ns = now;
    if (now - l->busy_since_ns > (uint64_t)l->busy_ms * 1000000ull)
        return 0;
    l->busy_seed = l->busy_seed * 1103515245u + 12345u;
    struct timespec ts = {0, 200000L + (long)((l->busy_seed >> 16) % 1000u) * 1000L};
    nanosleep(&ts, NULL);
    return 1;
}

static int set_wal(struct sw_ledger *l, int busy_ms, struct sw_err *e)
{
    /* Switching a fresh file to WAL needs a moment of exclusive access; with several processes
     * opening it at once, retry within the busy budget. */
    uint64_t deadline = sw_now_ns() + (uint64_t)busy_ms * 1000000ull;
    for (;;) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(l->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const char *mode = (const char *)sqlite3_column_text(st, 0);
            bool wal = mode && !strcmp(mode, "wal");
            char got[32];
            snprintf(got, sizeof(got), "%s", mode ? mode : "?");
            sqlite3_finalize(st);
            if (!wal)
                return sw_err_at(e, SW_EUNSUPPORTED, l->path, 0, 0,
                                 "cannot use WAL journaling here (SQLite kept '%s'); the ledger "
                                 "needs a local filesystem with shared memory",
                                 got);
            return 0;
        }
        sqlite3_finalize(st);
        if ((rc & 0xff) != SQLITE_BUSY || sw_now_ns() > deadline)
            return sw__ledger_dberr(l, e, rc, "PRAGMA journal_mode=WAL");
        sw_sleep_ms(5);
    }
}

/* "file:" URI of a path for sqlite3_open_v2 with SQLITE_OPEN_URI: every byte outside the
 * unreserved set and '/' is percent-encoded (a '?' or '#' or '%' in a file name stays a name). */
static int file_uri(const char *path, const char *query, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    int w = snprintf(out, n, "file:");
    if (w < 0 || (size_t)w >= n)
        return SW_ERANGE;
    o = (size_t)w;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || strchr("-._~/", *p);
        if (o + 4 >= n)
            return SW_ERANGE;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    w = snprintf(out + o, n - o, "?%s", query);
    return w < 0 || (size_t)w >= n - o ? SW_ERANGE : 0;
}

/* Open the connection (read-only through a URI) and configure it; no I/O on the file yet. */
static int open_conn(struct sw_ledger *l, const char *path, bool readonly, bool immutable,
                     struct sw_err *e)
{
    char uri[3 * 4096 + 64];
    const char *name = path;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (readonly) {
        if (file_uri(path, immutable ? "mode=ro&immutable=1" : "mode=ro", uri, sizeof(uri)))
            return sw_err_set(e, SW_ERANGE, "ledger path is too long");
        name = uri;
        flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
    }
    sqlite3 *db = NULL;
    int src = sqlite3_open_v2(name, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    l->db = db;
    if (src != SQLITE_OK)
        return sw__ledger_dberr(l, e, src, "open");
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_handler(db, busy_wait, l);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, (int *)NULL);
    return 0;
}

static void close_conn(struct sw_ledger *l)
{
    if (l->db)
        sqlite3_close_v2(l->db);
    l->db = NULL;
}

/* A read-only reader that cannot create the WAL index: true when falling back to immutable=1
 * loses nothing, i.e. there is no -wal file with frames in it. */
static int wal_pending(const char *path, bool *pending, struct sw_err *e)
{
    char wal[4096 + 8];
    struct stat st;
    *pending = false;
    snprintf(wal, sizeof(wal), "%s-wal", path);
    if (stat(wal, &st) == 0) {
        *pending = st.st_size > 0;
        return 0;
    }
    if (errno == ENOENT)
        return 0;
    return sw_err_at(e, SW_EIO, wal, 0, 0, "cannot stat: %s", strerror(errno));
}

/* PRAGMA quick_check: "ok", or the first problem SQLite found. */
static int quick_check(struct sw_ledger *l, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    char first[512] = "";
    int rc = sqlite3_prepare_v2(l->db, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        /* "*** in database main ***\nPage 11: btreeInitPage() returns error code 11": one line */
        const char *t = (const char *)sqlite3_column_text(st, 0);
        const char *pre = "*** in database main ***\n";
        if (t && !strncmp(t, pre, strlen(pre)))
            t += strlen(pre);
        snprintf(first, sizeof(first), "%s", t ? t : "?");
        for (char *c = first; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        rc = SQLITE_OK;
    } else if (rc != SQLITE_DONE) {
        snprintf(first, sizeof(first), "%s", sqlite3_errmsg(l->db));
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK && !strcmp(first, "ok"))
        return 0;
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_NOMEM)
        return sw__ledger_dberr(l, e, rc, "PRAGMA quick_check");
    return sw_err_at(e, SW_EDB, l->path, 0, 0,
                     "the ledger is corrupt (PRAGMA quick_check: %s); nothing was written. "
                     "Restore a copy, or read what is left with `slipway ledger export`",
                     first[0] ? first : sqlite3_errstr(rc));
}

int sw_ledger_open(struct sw_ledger *l, const char *path, const struct sw_ledger_open_opts *opts,
                   struct sw_err *e)
{
    static const struct sw_ledger_open_opts defaults = {.create = true};
    int rc = 0;
    memset(l, 0, sizeof(*l));
    if (!opts)
        opts = &defaults;
    if (!path || !*path)
        return sw_err_set(e, SW_EINVAL, "ledger: no path given");
    if (strlen(path) >= sizeof(l->path))
        return sw_err_set(e, SW_ERANGE, "ledger path is longer than %zu bytes",
                          sizeof(l->path) - 1);
    snprintf(l->path, sizeof(l->path), "%s", path);
    l->readonly = opts->readonly;
    int busy_ms = opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : DEFAULT_BUSY_MS;

    struct stat stb;
    if (stat(path, &stb) == 0) {
        if (S_ISDIR(stb.st_mode))
            return sw_err_at(e, SW_EINVAL, path, 0, 0, "is a directory, not a ledger file");
        if (opts->readonly && S_ISREG(stb.st_mode) && stb.st_size == 0)
            return sw_err_at(e, SW_EDB, path, 0, 0,
                             "is empty (0 bytes): an uninitialised ledger, nothing recorded "
                             "yet; left untouched (a recording command initialises it)");
    } else if (errno == ENOENT) {
        if (!opts->create || opts->readonly)
            return sw_err_at(e, SW_ENOENT, path, 0, 0, "no ledger here (nothing recorded yet)");
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            rc = sw_mkdir_p(dir, 0700, e);
            if (rc)
                return rc;
        }
    } else {
        return sw_err_at(e, SW_EIO, path, 0, 0, "cannot stat: %s", strerror(errno));
    }

    l->busy_ms = busy_ms;
    l->busy_seed = (unsigned)getpid() ^ (unsigned)sw_now_ns();
    rc = open_conn(l, path, opts->readonly, false, e);
    if (rc)
        goto out;

    /* The first read tells a database from anything else. */
    int src = sqlite3_exec(l->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
    if (opts->readonly && ((src & 0xff) == SQLITE_READONLY || (src & 0xff) == SQLITE_CANTOPEN)) {
        /* A WAL ledger whose -shm this user cannot create (a directory they cannot write). */
        bool pending = false;
        rc = wal_pending(path, &pending, e);
        if (rc)
            goto out;
        if (pending) {
            rc = sw_err_at(e, SW_EIO, path, 0, 0,
                           "cannot read it read-only: its write-ahead log %s-wal holds commits "
                           "and you cannot create the shared-memory index beside it (%s); a "
                           "recording command run once by a user who can write the directory "
                           "folds the log into the file (reading commands do not)",
                           path, sqlite3_errmsg(l->db));
            goto out;
        }
        close_conn(l);
        rc = open_conn(l, path, true, true, e);
        if (rc)
            goto out;
        l->immutable = true;
        src = sqlite3_exec(l->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
    }
    if ((src & 0xff) == SQLITE_NOTADB) {
        char what[160];
        describe_file(path, what, sizeof(what));
        rc = sw_err_at(e, SW_EDB, path, 0, 0, "not an SQLite database (%s); left untouched", what);
        goto out;
    }
    if (src != SQLITE_OK) {
        rc = sw__ledger_dberr(l, e, src, "reading the schema");
        goto out;
    }
    if (!opts->readonly) {
        rc = quick_check(l, e);
        if (rc)
            goto out;
        rc = set_wal(l, busy_ms, e);
        if (rc)
            goto out;
        rc = sw__ledger_exec(
            l, opts->sync_normal ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL", e);
        if (rc)
            goto out;
    }
    rc = sw__ledger_exec(l, "PRAGMA foreign_keys=ON", e);
    if (rc)
        goto out;
    rc = sw__ledger_migrate(l, SW_LEDGER_SCHEMA_VERSION, e);
    if (!rc && !opts->readonly)
        sw__ledger_tables_on_open(l); /* each table's owner, by its descriptor (tables.c) */
out:
    if (rc)
        sw_ledger_close(l);
    return rc;
}

void sw_ledger_close(struct sw_ledger *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < SW_ARRAY_LEN(l->stmt); i++) {
        if (l->stmt[i])
            sqlite3_finalize(l->stmt[i]);
        l->stmt[i] = NULL;
    }
    if (l->db) {
        sw__ledger_rollback(l);
        sqlite3_close_v2(l->db);
    }
    l->db = NULL;
}

int sw_ledger_default_path(const char *fleet_path, char *out, size_t n, struct sw_err *e)
{
    const char *env = getenv("SLIPWAY_LEDGER");
    int w;
    if (env && *env) {
        w = snprintf(out, n, "%s", env);
    } else if (fleet_path && *fleet_path) {
        w = snprintf(out, n, "%.*s.ledger.sqlite", (int)sw_path_yaml_stem(fleet_path), fleet_path);
    } else {
        const char *xdg = getenv("XDG_DATA_HOME");
        const char *home = getenv("HOME");
        /* The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored. */
        if (xdg && xdg[0] == '/')
            w = snprintf(out, n, "%s/slipway/ledger.sqlite", xdg);
        else if (home && home[0] == '/')
            w = snprintf(out, n, "%s/.local/share/slipway/ledger.sqlite", home);
        else
            return sw_err_set(e, SW_EINVAL,
                              "no ledger location: give --ledger PATH or a fleet "
                              "file, or set XDG_DATA_HOME or HOME");
    }
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "ledger path is too long");
    return 0;
}

int sw_ledger_open_for(struct sw_ledger *l, const char *explicit_path, const char *fleet_path,
                       const struct sw_ledger_open_opts *opts, enum sw_ledger_absent absent,
                       bool *opened, char *path, size_t n, struct sw_err *e)
{
    *opened = false;
    if (explicit_path) {
        int w = snprintf(path, n, "%s", explicit_path);
        if (w < 0 || (size_t)w >= n)
            return sw_err_set(e, SW_EINVAL, "the ledger path is too long (%zu bytes at most)",
                              n - 1);
    } else {
        int rc = sw_ledger_default_path(fleet_path, path, n, e);
        if (rc)
            return rc;
    }
    const char *env = getenv("SLIPWAY_LEDGER");
    bool named = explicit_path || (env && *env);
    int rc = sw_ledger_open(l, path, opts, e);
    if (rc == SW_ENOENT && (absent == SW_LEDGER_MAY_BE_ABSENT ||
                            (absent == SW_LEDGER_DEFAULT_MAY_BE_ABSENT && !named))) {
        sw_err_clear(e);
        return 0;
    }
    *opened = rc == 0;
    return rc;
}

int sw_ledger_verify(struct sw_ledger *l, bool *ok, struct sw_err *e)
{
    *ok = false;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(l->db, "PRAGMA integrity_check", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sw__ledger_dberr(l, e, rc, "PRAGMA integrity_check");
    rc = sqlite3_step(st);
    bool good = false;
    char first[512] = "";
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        good = t && !strcmp(t, "ok");
        snprintf(first, sizeof(first), "%s", t ? t : "?");
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK && rc != SQLITE_DONE)
        return sw__ledger_dberr(l, e, rc, "PRAGMA integrity_check");
    if (!good) {
        sw_err_at(e, SW_EDB, l->path, 0, 0, "integrity_check: %s", first);
        return 0;
    }
    rc = sqlite3_prepare_v2(l->db, "PRAGMA foreign_key_check", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sw__ledger_dberr(l, e, rc, "PRAGMA foreign_key_check");
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        sw_err_at(e, SW_EDB, l->path, 0, 0,
                  "foreign_key_check: %s row %lld refers to a missing "
                  "%s row",
                  (const char *)sqlite3_column_text(st, 0), (long long)sqlite3_column_int64(st, 1),
                  (const char *)sqlite3_column_text(st, 2));
        sqlite3_finalize(st);
        return 0;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sw__ledger_dberr(l, e, rc, "PRAGMA foreign_key_check");
    *ok = true;
    return 0;
}
