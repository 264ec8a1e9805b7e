/*
 * rollout/host: the remote side of a rollout: small POSIX sh scripts run on the endpoint's host
 * (`sh -c SCRIPT sh ARG...`, every word quoted by the transport), the deploy lock, the journal
 * cursor, and the file moves (stage, save, swap, restore, commit). Each script either completes
 * or leaves the live files as they were: copies go to a temporary name first and are renamed.
 *
 * What it does not do: decide (rollout.c does), or read anything but the files it names.
 */
#include "rollout_internal.h"

#include <slipway/deploy.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sw__ro_sh(struct sw__ro *c, const char *script, const char *const *args, int64_t deadline_ms,
              struct sw_host_result *hr, struct sw_err *e)
{
    const char *argv[16];
    size_t n = 0;
    argv[n++] = "sh";
    argv[n++] = "-c";
    argv[n++] = script;
    argv[n++] = "sh";
    for (size_t i = 0; args && args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    struct sw_host_run_opts ro = {0};
    ro.deadline_ms = deadline_ms ? deadline_ms : 30000;
    return sw_host_run(&c->h, argv, &ro, hr, e);
}

/* The lock's owner line for this process. */
static void lock_owner(char *out, size_t n)
{
    char host[128] = "", boot[40] = "";
    struct sw_proc_id id;
    memset(&id, 0, sizeof(id));
    gethostname(host, sizeof(host) - 1);
    for (char *p = host; *p; p++)
        if (*p == ' ' || *p == '\n')
            *p = '_';
    sw_proc_boot_id(boot, sizeof(boot));
    sw_proc_identify(getpid(), &id, NULL);
    snprintf(out, n, "host=%s boot=%s pid=%ld start=%llu", host, boot, (long)getpid(),
             (unsigned long long)id.start_ticks);
}

/* A lock held by a process of this machine that is gone (or whose pid now names another
 * process) is stale. A lock of another machine is never judged stale here. */
static bool lock_stale(const char *owner)
{
    char host[128] = "", boot[40] = "", myhost[128] = "", myboot[40] = "";
    long pid = 0;
    unsigned long long start = 0;
    if (sscanf(owner, "host=%127s boot=%39s pid=%ld start=%llu", host, boot, &pid, &start) != 4)
        return false;
    gethostname(myhost, sizeof(myhost) - 1);
    for (char *p = myhost; *p; p++)
        if (*p == ' ' || *p == '\n')
            *p = '_';
    sw_proc_boot_id(myboot, sizeof(myboot));
    if (strcmp(host, myhost))
        return false;
    if (strcmp(boot, myboot))
        return true; /* this machine rebooted since: its owner is gone */
    struct sw_proc_id id;
    if (sw_proc_identify((pid_t)pid, &id, NULL))
        return true;
    if (id.state == 'Z' || id.state == 'X')
        return true; /* killed, not yet reaped */
    return id.start_ticks != start;
}

static const char lock_script[] =
    "mkdir -p /run/slipway || exit 1\n"
    "if ( set -C; printf '%s\\n' \"$2\" > \"$1\" ) 2>/dev/null; then echo acquired; exit 0; fi\n"
    "echo held; cat \"$1\" 2>/dev/null; exit 0\n";

static const char unlock_script[] = "[ \"$(cat \"$1\" 2>/dev/null)\" = \"$2\" ] && rm -f \"$1\"\n"
                                    "exit 0\n";

int sw__ro_lock(struct sw__ro *c, struct sw_err *e)
{
    char path[512];
    snprintf(path, sizeof(path), "/run/slipway/%s.lock", c->name);
    lock_owner(c->lock_owner, sizeof(c->lock_owner));
    for (int attempt = 0; attempt < 2; attempt++) {
        struct sw_host_result hr;
        const char *args[] = {path, c->lock_owner, NULL};
        int rc = sw__ro_sh(c, lock_script, args, 30000, &hr, e);
        if (rc) {
            sw_host_result_free(&hr);
            return rc;
        }
        if (!strncmp(hr.out, "acquired", 8)) {
            sw_host_result_free(&hr);
            c->locked = true;
            return 0;
        }
        char holder[512] = "";
        const char *nl = strchr(hr.out, '\n');
        snprintf(holder, sizeof(holder), "%s", nl ? nl + 1 : "");
        holder[strcspn(holder, "\n")] = '\0';
        sw_host_result_free(&hr);
        if (attempt == 0 && lock_stale(holder)) {
            snprintf(c->lock_stale, sizeof(c->lock_stale), "%s", holder);
            const char *rargs[] = {path, holder, NULL};
            rc = sw__ro_sh(c, unlock_script, rargs, 30000, &hr, e);
            sw_host_result_free(&hr);
            if (rc)
                return rc;
            continue;
        }
        return sw_err_set(e, SW_EBUSY, "%s: %s is held (%s): another deploy of %s runs", c->h.name,
                          path, holder, c->name);
    }
    return sw_err_set(e, SW_EBUSY, "%s: /run/slipway/%s.lock could not be taken", c->h.name,
                      c->name);
}

int sw__ro_lock_holder(struct sw__ro *c, char *holder, size_t n, struct sw_err *e)
{
    char path[512];
    snprintf(path, sizeof(path), "/run/slipway/%s.lock", c->name);
    static const char script[] = "cat \"$1\" 2>/dev/null; exit 0\n";
    const char *args[] = {path, NULL};
    struct sw_host_result hr;
    holder[0] = '\0';
    int rc = sw__ro_sh(c, script, args, 30000, &hr, e);
    if (!rc && hr.out && hr.out[0]) {
        snprintf(holder, n, "%.*s", (int)strcspn(hr.out, "\n"), hr.out);
        if (lock_stale(holder))
            holder[0] = '\0'; /* a dead holder's: the next lock takes it over */
    }
    sw_host_result_free(&hr);
    return rc;
}

void sw__ro_unlock(struct sw__ro *c)
{
    if (!c->locked)
        return;
    char path[512];
    snprintf(path, sizeof(path), "/run/slipway/%s.lock", c->name);
    struct sw_host_result hr;
    const char *args[] = {path, c->lock_owner, NULL};
    sw__ro_sh(c, unlock_script, args, 30000, &hr, NULL);
    sw_host_result_free(&hr);
    c->locked = false;
}

int sw__ro_cursor(struct sw__ro *c, char **cursor, struct sw_err *e)
{
    *cursor = NULL;
    const char *argv[] = {"journalctl", "-n", "1", "-o", "json", "--no-pager", NULL};
    struct sw_host_result hr;
    struct sw_host_run_opts ro = {0};
    ro.deadline_ms = 30000;
    int rc = sw_host_run(&c->h, argv, &ro, &hr, e);
    if (!rc) {
        struct sw_host_journal j;
        memset(&j, 0, sizeof(j));
        rc = sw_host_journal_parse(hr.out, hr.out_len, &j, e);
        if (!rc && j.cursor) {
            *cursor = j.cursor;
            j.cursor = NULL;
        }
        sw_host_journal_free(&j);
    }
    sw_host_result_free(&hr);
    return rc;
}

int sw__ro_cat(struct sw__ro *c, const char *path, char **text, bool *exists, struct sw_err *e)
{
    static const char script[] = "if [ -f \"$1\" ]; then echo y; cat \"$1\"; else echo n; fi\n";
    const char *args[] = {path, NULL};
    struct sw_host_result hr;
    *text = NULL;
    *exists = false;
    int rc = sw__ro_sh(c, script, args, 30000, &hr, e);
    if (!rc) {
        *exists = hr.out_len >= 2 && hr.out[0] == 'y';
        const char *body = hr.out_len >= 2 ? hr.out + 2 : "";
        *text = sw_strdup(body);
        if (!*text)
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    sw_host_result_free(&hr);
    return rc;
}

/* The staged unit verified under its own name in a private directory. */
int sw__ro_verify(struct sw__ro *c, char *out, size_t n, struct sw_err *e)
{
    static const char script[] = "d=$(mktemp -d) || exit 1\n"
                                 "cp \"$1\" \"$d/$2\" || { rm -rf \"$d\"; exit 1; }\n"
                                 "systemd-analyze verify \"$d/$2\" 2>&1; rc=$?\n"
                                 "rm -rf \"$d\"; exit $rc\n";
    char staged[600];
    snprintf(staged, sizeof(staged), "%s.new", c->live_unit);
    const char *args[] = {staged, c->unit, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 60000, &hr, e);
    snprintf(out, n, "%s", hr.out ? hr.out : "");
    sw_host_result_free(&hr);
    return rc;
}

/* Save the live files into DIR (a set), through DIR.tmp; prints "has" when a live unit was
 * there, "none" otherwise. */
int sw__ro_save(struct sw__ro *c, const char *set, bool *had, struct sw_err *e)
{
    static const char script[] = "set -e\n"
                                 "rm -rf \"$1.tmp\"; mkdir -p \"$1.tmp\"\n"
                                 "if [ -f \"$2\" ]; then cp -p \"$2\" \"$1.tmp/\"; fi\n"
                                 "if [ -f \"$3\" ]; then cp -p \"$3\" \"$1.tmp/\"; fi\n"
                                 "sync\n"
                                 "rm -rf \"$1\"; mv \"$1.tmp\" \"$1\"\n"
                                 "if [ -f \"$2\" ]; then echo has; else echo none; fi\n";
    const char *args[] = {set, c->live_unit, c->live_env, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 60000, &hr, e);
    *had = !rc && !strncmp(hr.out, "has", 3);
    sw_host_result_free(&hr);
    return rc;
}

/* A script over the live unit ($1) and environment file ($2), within 30 s; its output dropped. */
static int on_live_files(struct sw__ro *c, const char *script, struct sw_err *e)
{
    const char *args[] = {c->live_unit, c->live_env, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 30000, &hr, e);
    sw_host_result_free(&hr);
    return rc;
}

int sw__ro_swap(struct sw__ro *c, struct sw_err *e)
{
    static const char script[] = "set -e\n"
                                 "mv -f \"$2.new\" \"$2\"\n"
                                 "mv -f \"$1.new\" \"$1\"\n"
                                 "sync\n";
    return on_live_files(c, script, e);
}

int sw__ro_unstage(struct sw__ro *c)
{
    return on_live_files(c, "rm -f \"$1.new\" \"$2.new\"\n", NULL);
}

/* Put a saved set's files over the live ones (each through a temporary name). SW_ENOENT when
 * the set holds no unit. */
int sw__ro_restore(struct sw__ro *c, const char *set, struct sw_err *e)
{
    static const char script[] =
        "[ -f \"$1/$4\" ] || { echo noset; exit 0; }\n"
        "set -e\n"
        "if [ -f \"$1/$5\" ]; then cp -p \"$1/$5\" \"$3.rb\"; mv -f \"$3.rb\" \"$3\"; fi\n"
        "cp -p \"$1/$4\" \"$2.rb\"; mv -f \"$2.rb\" \"$2\"\n"
        "sync; echo restored\n";
    const char *env_base = strrchr(c->live_env, '/');
    env_base = env_base ? env_base + 1 : c->live_env;
    const char *args[] = {set, c->live_unit, c->live_env, c->unit, env_base, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 60000, &hr, e);
    if (!rc && !strncmp(hr.out, "noset", 5))
        rc = sw_err_set(e, SW_ENOENT, "%s: %s holds no %s", c->h.name, set, c->unit);
    sw_host_result_free(&hr);
    return rc;
}

/* The first deploy failed and there is nothing to go back to: the failed unit's files are moved
 * to STATE/failed/ (evidence), so nothing is left to start. */
int sw__ro_remove_live(struct sw__ro *c, struct sw_err *e)
{
    static const char script[] = "set -e\n"
                                 "rm -rf \"$1/failed\"; mkdir -p \"$1/failed\"\n"
                                 "if [ -f \"$2\" ]; then mv -f \"$2\" \"$1/failed/\"; fi\n"
                                 "if [ -f \"$3\" ]; then mv -f \"$3\" \"$1/failed/\"; fi\n"
                                 "sync\n";
    const char *args[] = {c->state, c->live_unit, c->live_env, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 30000, &hr, e);
    sw_host_result_free(&hr);
    return rc;
}

/* The commit's first half: the live files copied to STATE/last-good.new/ with the attempt that
 * proved them (.attempt); the last-good set is not touched. */
int sw__ro_commit_prepare(struct sw__ro *c, struct sw_err *e)
{
    static const char script[] = "set -e\n"
                                 "rm -rf \"$1/last-good.new\"; mkdir -p \"$1/last-good.new\"\n"
                                 "cp -p \"$2\" \"$1/last-good.new/\"\n"
                                 "if [ -f \"$3\" ]; then cp -p \"$3\" \"$1/last-good.new/\"; fi\n"
                                 "echo \"$4\" > \"$1/last-good.new/.attempt\"\n"
                                 "sync\n";
    char attempt[32];
    snprintf(attempt, sizeof(attempt), "%lld", (long long)c->attempt);
    const char *args[] = {c->state, c->live_unit, c->live_env, attempt, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 60000, &hr, e);
    sw_host_result_free(&hr);
    return rc;
}

/* The commit's second half: STATE/last-good.new/ becomes the last-good set and a tag of it,
 * named *tag when it is not "" (the ledger's), else ENDPOINT-YYYYMMDD-N with N the first free
 * number on the host; the name into tag. SW_ENOENT when there is no last-good.new. */
int sw__ro_commit_finish(struct sw__ro *c, char *tag, size_t n, struct sw_err *e)
{
    static const char script[] =
        "[ -d \"$1/last-good.new\" ] || { echo nonew; exit 0; }\n"
        "set -e\n"
        "d=$(date -u +%Y%m%d); i=1\n"
        "while [ -e \"$1/tags/$2-$d-$i\" ]; do i=$((i+1)); done\n"
        "t=\"$2-$d-$i\"\n"
        "if [ -n \"$3\" ]; then t=\"$3\"; fi\n"
        "mkdir -p \"$1/tags\"; rm -rf \"$1/tags/$t\" \"$1/tags/.new\"\n"
        "cp -pr \"$1/last-good.new\" \"$1/tags/.new\"; mv \"$1/tags/.new\" \"$1/tags/$t\"\n"
        "sync; rm -rf \"$1/last-good\"; mv \"$1/last-good.new\" \"$1/last-good\"; sync\n"
        "echo \"tag $t\"\n";
    if (strchr(tag, '/') || tag[0] == '.')
        return sw_err_set(e, SW_EINVAL, "tag name %s: not a directory name", tag);
    char given[200];
    snprintf(given, sizeof(given), "%s", tag);
    const char *args[] = {c->state, c->ep->name, given, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 60000, &hr, e);
    if (!rc && !strncmp(hr.out, "nonew", 5))
        rc = sw_err_set(e, SW_ENOENT, "%s: %s/last-good.new is gone", c->h.name, c->state);
    else if (!rc) {
        snprintf(tag, n, "%s", hr.out + (strncmp(hr.out, "tag ", 4) ? 0 : 4));
        tag[strcspn(tag, "\n")] = '\0';
    }
    sw_host_result_free(&hr);
    return rc;
}

/* A commit cut off between its halves: *present when STATE/last-good.new/ exists, *attempt the
 * attempt it names (0: a run without a ledger; -1 when its .attempt is missing or not a number,
 * i.e. the first half itself was cut off). */
int sw__ro_commit_pending(struct sw__ro *c, bool *present, int64_t *attempt, struct sw_err *e)
{
    static const char script[] = "[ -d \"$1/last-good.new\" ] || { echo none; exit 0; }\n"
                                 "echo \"new $(head -c 32 \"$1/last-good.new/.attempt\" "
                                 "2>/dev/null | tr -cd 0-9)\"\n";
    const char *args[] = {c->state, NULL};
    struct sw_host_result hr;
    *present = false;
    *attempt = 0;
    int rc = sw__ro_sh(c, script, args, 30000, &hr, e);
    if (!rc && !strncmp(hr.out, "new ", 4)) {
        *present = true;
        *attempt = isdigit((unsigned char)hr.out[4]) ? strtoll(hr.out + 4, NULL, 10) : -1;
    }
    sw_host_result_free(&hr);
    return rc;
}

/* The first half of a commit the ledger never confirmed, removed. */
int sw__ro_commit_drop(struct sw__ro *c, struct sw_err *e)
{
    static const char script[] = "rm -rf \"$1/last-good.new\"; sync\n";
    const char *args[] = {c->state, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 30000, &hr, e);
    sw_host_result_free(&hr);
    return rc;
}

int sw__ro_exists(struct sw__ro *c, const char *path, bool *yes, struct sw_err *e)
{
    static const char script[] = "if [ -e \"$1\" ]; then echo y; else echo n; fi\n";
    const char *args[] = {path, NULL};
    struct sw_host_result hr;
    int rc = sw__ro_sh(c, script, args, 30000, &hr, e);
    *yes = !rc && hr.out[0] == 'y';
    sw_host_result_free(&hr);
    return rc;
}
