/*
 * slipway history ENDPOINT [FLEET.yaml] [--ledger PATH] [--json]
 *
 *   The endpoint's tags, newest first (include/slipway/ledger.h, sw_ledger_history): each with
 *   its shape, what the ledger measured of that shape on the endpoint (boots, battery, bench,
 *   usage), when and why it was retired, which one is last-good, and whether it can be restored
 *   (its payload paths, at their recorded sizes, and its image are on the host). The check looks
 *   at this machine's filesystem (and podman's store) when the fleet says the endpoint's host is
 *   local, and at the host's over ssh when it is an ssh host ("not checked" when it cannot be
 *   reached). Then the last deploy attempts.
 *
 * Exit: 0 printed, 1 the ledger could not be read, 2 unusable input (no such endpoint in the
 * ledger, a broken fleet, an unknown endpoint in the fleet).
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/host.h>
#include <slipway/ledger.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct sw_opt opts[] = {
    {"ledger", 0, "PATH", 0,
     "the ledger (default: $SLIPWAY_LEDGER, else beside FLEET, else ~/.local/share/slipway)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway history frank-primary examples/operator.yaml",
    "slipway history frank-small --ledger fleet.ledger.sqlite --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_history = {
    .name = "history",
    .summary = "an endpoint's tags: shapes, measured figures, last-good, retired, restorable",
    .synopsis = "ENDPOINT [FLEET.yaml] [--ledger PATH] [--json]",
    .about = "Lists the endpoint's tags (ENDPOINT-YYYYMMDD-N, newest first) with their shapes,\n"
             "what the ledger measured of each shape on the endpoint, which one is last-good,\n"
             "when and why each was retired, and whether each can be restored: its payload\n"
             "paths (at their recorded sizes) and image are on the host. That is checked on\n"
             "the host FLEET names (here, or over ssh); without FLEET it says \"not checked\".\n"
             "Then the endpoint's last deploy attempts. The ledger is opened read-only.\n"
             "Exit: 0 printed, 1 the ledger could not be read, 2 unusable input.",
    .opts = opts,
    .max_args = 2,
    .examples = examples,
};

struct local_check {
    struct sw_host host;
    bool host_open;
    const char *runtime; /* "podman"/"docker", NULL for native */
    bool remote;         /* an ssh host: paths are looked at there */
};

/* A path on an ssh host: 'f' a regular file (its size in *size), 'o' anything else that
 * exists, 'n' nothing there. */
static int remote_stat(struct local_check *c, const char *what, char *kind, long long *size,
                       struct sw_err *e)
{
    static const char script[] = "if [ -f \"$1\" ]; then printf 'f '; stat -Lc %s -- \"$1\"; "
                                 "elif [ -e \"$1\" ]; then echo o; else echo n; fi\n";
    const char *argv[] = {"sh", "-c", script, "sh", what, NULL};
    struct sw_host_run_opts ro = {.deadline_ms = 30000};
    struct sw_host_result hr;
    *kind = 'n';
    *size = -1;
    int rc = sw_host_run(&c->host, argv, &ro, &hr, e);
    if (!rc && hr.out && (hr.out[0] == 'f' || hr.out[0] == 'o' || hr.out[0] == 'n')) {
        *kind = hr.out[0];
        if (hr.out[0] == 'f' && hr.out_len > 2)
            *size = atoll(hr.out + 2);
    } else if (!rc) {
        rc = sw_err_set(e, SW_EPARSE, "host %s: stat %s: unexpected output", c->host.name, what);
    }
    sw_host_result_free(&hr);
    return rc;
}

/* A payload path is present when it exists and, for a regular file, has the size recorded
 * (sizes only: hashing a 60 GiB payload is `slipway fetch --verify-only`'s job). */
static int local_present(void *ctx, const char *kind, const char *what, bool *present,
                         struct sw_err *e)
{
    struct local_check *c = ctx;
    *present = false;
    if (!strcmp(kind, "image")) {
        if (!c->runtime)
            return sw_err_set(e, SW_EUNSUPPORTED, "the endpoint runs natively: no image store");
        if (!c->host_open)
            return sw_err_set(e, SW_EUNSUPPORTED, "the local host could not be opened");
        return sw_host_image_present(&c->host, c->runtime, what, 30000, present, e);
    }
    struct stat st;
    if (lstat(what, &st)) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return sw_err_at(e, SW_EIO, what, 0, 0, "cannot stat: %s", strerror(errno));
    }
    *present = true;
    (void)c;
    return 0;
}

/* The manifest's recorded size of what: present only when the size still matches. */
struct sized_check {
    struct local_check *inner;
    const json_t *tags;
};

static const json_t *find_size(const json_t *tags, const char *path)
{
    size_t i, k;
    const json_t *t, *x;
    json_array_foreach(tags, i, t)
    {
        json_array_foreach(json_object_get(t, "payload"), k, x)
        {
            const char *p = json_string_value(json_object_get(x, "path"));
            if (p && !strcmp(p, path))
                return json_object_get(x, "size");
        }
    }
    return NULL;
}

static void print_measured(const json_t *m)
{
    json_int_t boots = json_integer_value(json_object_get(m, "boots"));
    const json_t *bat = json_object_get(m, "battery");
    const json_t *ben = json_object_get(m, "bench");
    const json_t *use = json_object_get(m, "usage");
    printf("      measured: %lld boots (%lld ok, %lld failed)", (long long)boots,
           (long long)json_integer_value(json_object_get(m, "boots_ok")),
           (long long)json_integer_value(json_object_get(m, "boots_failed")));
    const json_t *kv = json_object_get(m, "kv_cache_tokens");
    if (json_is_number(kv))
        printf(", kv_cache_tokens %.0f", json_number_value(kv));
    const json_t *mc = json_object_get(m, "max_concurrency");
    if (json_is_number(mc))
        printf(", max_concurrency %.2f", json_number_value(mc));
    const json_t *lb = json_object_get(bat, "last");
    printf("; battery %lld runs", (long long)json_integer_value(json_object_get(bat, "runs")));
    if (json_is_object(lb))
        printf(" (last: %lld pass, %lld fail, %lld skip)",
               (long long)json_integer_value(json_object_get(lb, "passed")),
               (long long)json_integer_value(json_object_get(lb, "failed")),
               (long long)json_integer_value(json_object_get(lb, "skipped")));
    printf("; bench %lld runs", (long long)json_integer_value(json_object_get(ben, "runs")));
    const json_t *lu = json_object_get(use, "last");
    if (json_is_object(lu))
        printf("; last reading %s %lld/%lld MiB", json_string_value(json_object_get(lu, "device")),
               (long long)json_integer_value(json_object_get(lu, "used_mib")),
               (long long)json_integer_value(json_object_get(lu, "total_mib")));
    printf("\n");
}

static void print_history(const json_t *h, const char *lpath)
{
    const json_t *tags = json_object_get(h, "tags");
    const json_t *lg = json_object_get(h, "last_good");
    printf("history of %s (ledger %s): %zu tags, last-good %s\n",
           json_string_value(json_object_get(h, "endpoint")), lpath, json_array_size(tags),
           json_is_string(lg) ? json_string_value(lg) : "none");
    size_t i;
    const json_t *t;
    json_array_foreach(tags, i, t)
    {
        bool last_good = json_is_true(json_object_get(t, "last_good"));
        bool kept = json_is_true(json_object_get(t, "kept"));
        const json_t *r = json_object_get(t, "restorable");
        printf("%s %-30s %-9s %s  %s [%.12s]\n", last_good ? "*" : " ",
               json_string_value(json_object_get(t, "name")),
               last_good ? "last-good" : (kept ? "kept" : "retired"),
               json_string_value(json_object_get(t, "created")),
               json_string_value(json_object_get(t, "summary")),
               json_string_value(json_object_get(t, "shape_hash")));
        const char *note = json_string_value(json_object_get(t, "note"));
        if (note)
            printf("      note: %s\n", note);
        const char *image = json_string_value(json_object_get(t, "image"));
        const json_t *pl = json_object_get(t, "payload");
        printf("      payload: %zu paths%s%s\n", json_array_size(pl), image ? "; image " : "",
               image ? image : "");
        size_t pi;
        const json_t *pe;
        json_array_foreach(pl, pi, pe)
        {
            if (pi == 3) {
                printf("        ... and %zu more\n", json_array_size(pl) - 3);
                break;
            }
            const char *sha = json_string_value(json_object_get(pe, "sha256"));
            printf("        %s %lld bytes, sha256 %s\n",
                   json_string_value(json_object_get(pe, "path")),
                   (long long)json_integer_value(json_object_get(pe, "size")),
                   sha ? sha : "not hashed");
        }
        print_measured(json_object_get(t, "measured"));
        if (!kept)
            printf("      retired %s: %s\n", json_string_value(json_object_get(t, "retired")),
                   json_string_value(json_object_get(t, "retired_why")));
        printf("      restorable: %s (%s)\n",
               json_is_null(r) ? "unknown" : (json_is_true(r) ? "yes" : "NO"),
               json_string_value(json_object_get(t, "restorable_why")));
        const json_t *missing = json_object_get(t, "missing");
        size_t k;
        const json_t *m;
        json_array_foreach(missing, k, m)
        {
            printf("        missing: %s\n", json_string_value(m));
        }
    }
    const json_t *att = json_object_get(h, "attempts");
    if (json_array_size(att))
        printf("deploy attempts (newest first):\n");
    json_array_foreach(att, i, t)
    {
        const json_t *dt = json_object_get(t, "downtime_ms");
        const char *cls = json_string_value(json_object_get(t, "failure_class"));
        const char *tag = json_string_value(json_object_get(t, "tag"));
        printf("  #%lld %s %-15s", (long long)json_integer_value(json_object_get(t, "id")),
               json_string_value(json_object_get(t, "started")),
               json_string_value(json_object_get(t, "outcome")));
        if (cls)
            printf(" %s", cls);
        if (tag)
            printf(" -> %s", tag);
        if (json_is_integer(dt))
            printf(", did not serve for %lld ms", (long long)json_integer_value(dt));
        if (json_is_integer(json_object_get(t, "rule_id")))
            printf(" (known-bad rule #%lld)",
                   (long long)json_integer_value(json_object_get(t, "rule_id")));
        printf(", %zu steps\n", json_array_size(json_object_get(t, "steps")));
    }
}

static int sized_present(void *ctx, const char *kind, const char *what, bool *present,
                         struct sw_err *e)
{
    struct sized_check *s = ctx;
    if (s->inner->remote && !strcmp(kind, "path")) {
        char k = 'n';
        long long sz = -1;
        int rrc = remote_stat(s->inner, what, &k, &sz, e);
        if (rrc)
            return rrc;
        const json_t *want = find_size(s->tags, what);
        *present = k != 'n';
        if (k == 'f' && json_is_integer(want) && (json_int_t)sz != json_integer_value(want))
            *present = false;
        return 0;
    }
    int rc = local_present(s->inner, kind, what, present, e);
    if (rc || !*present || strcmp(kind, "path"))
        return rc;
    struct stat st;
    const json_t *size = find_size(s->tags, what);
    if (!lstat(what, &st) && S_ISREG(st.st_mode) && json_is_integer(size) &&
        (json_int_t)st.st_size != json_integer_value(size))
        *present = false;
    return 0;
}

int sw_cmd_history(int argc, char **argv)
{
    struct sw_err e;
    struct sw_args a;
    struct sw_ledger led;
    struct sw_fleet *f = NULL;
    struct local_check lc;
    json_t *h = NULL, *tags = NULL;
    char lpath[4096];
    int rc = SW_EXIT_OK;
    sw_err_clear(&e);
    memset(&led, 0, sizeof(led));
    memset(&lc, 0, sizeof(lc));
    if (!sw_args_parse(&sw_spec_history, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    if (a.npos < 1)
        return sw_args_usage(&a, "name the ENDPOINT");
    const char *endpoint = a.pos[0];
    const char *fleet_path = a.npos > 1 ? a.pos[1] : NULL;
    const char *ledger_path = sw_args_str(&a, "ledger");

    struct sw_ledger_history_opts ho = {.unchecked = "not checked (no fleet given: the "
                                                     "endpoint's host is unknown)"};
    const struct sw_fleet_endpoint *ep = NULL;
    if (fleet_path) {
        if (sw_fleet_load(fleet_path, NULL, &f, &e)) {
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        ep = sw_fleet_endpoint(f, endpoint);
        if (!ep) {
            sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s'", fleet_path, endpoint);
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        if (ep->host && ep->host->transport == SW_FLEET_LOCAL) {
            if (ep->runtime.kind != SW_FLEET_RUNTIME_NATIVE)
                lc.runtime = sw_fleet_runtime_name(ep->runtime.kind);
            lc.host_open = sw_host_open_fleet(&lc.host, ep->host, 0, NULL) == 0;
            ho.unchecked = NULL;
        } else if (ep->host && ep->host->transport == SW_FLEET_SSH) {
            if (ep->runtime.kind != SW_FLEET_RUNTIME_NATIVE)
                lc.runtime = sw_fleet_runtime_name(ep->runtime.kind);
            lc.remote = true;
            lc.host_open = sw_host_open_fleet(&lc.host, ep->host, 5, NULL) == 0;
            ho.unchecked = lc.host_open ? NULL : "not checked (the host could not be reached)";
        } else {
            ho.unchecked = "not checked (remote host)";
        }
    }
    if (ledger_path)
        snprintf(lpath, sizeof(lpath), "%s", ledger_path);
    else if (sw_ledger_default_path(fleet_path, lpath, sizeof(lpath), &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    struct sw_ledger_open_opts oo = {.readonly = true};
    if (sw_ledger_open(&led, lpath, &oo, &e)) {
        sw_err_prefix(&e, "the ledger");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    struct sized_check sc = {.inner = &lc};
    if (!ho.unchecked) {
        /* the manifest sizes come from the tags themselves */
        if (sw_ledger_tag_list(&led, endpoint, false, &tags, &e)) {
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        sc.tags = tags;
        ho.present = sized_present;
        ho.ctx = &sc;
    }
    if (sw_ledger_history(&led, endpoint, &ho, &h, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    sw_json_set_str(h, "ledger", lpath);
    if (json)
        sw_json_print(stdout, h, true);
    else
        print_history(h, lpath);
out:
    json_decref(h);
    json_decref(tags);
    sw_ledger_close(&led);
    if (lc.host_open)
        sw_host_disconnect(&lc.host);
    sw_fleet_free(f);
    return rc;
}
