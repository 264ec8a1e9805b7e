/*
 * watch/act: what watch does to an endpoint on its host: read its deploy lock (a deploy or a
 * rollback in progress: watch keeps its hands off), and restart its unit. The rollback is the
 * rollout's own (sw_rollout_rollback, called from watch.c), which takes the lock itself.
 *
 * What it deliberately does not do: decide (watch.c does), wait for the restarted unit to serve
 * (the next look proves it, after the policy's grace).
 */
#include "watch_internal.h"

#include <slipway/host.h>

#include <stdio.h>
#include <string.h>

/* The unit's name without ".service" is the lock's (rollout: /run/slipway/NAME.lock). */
static void lock_name(const json_t *st, const struct sw_fleet_endpoint *ep, char *out, size_t n)
{
    const char *u = json_string_value(json_object_get(json_object_get(st, "unit"), "name"));
    if (!u || !*u) {
        snprintf(out, n, "slipway-%s", ep->name);
        return;
    }
    size_t l = strlen(u);
    if (l > 8 && !strcmp(u + l - 8, ".service"))
        l -= 8;
    snprintf(out, n, "%.*s", (int)l, u);
}

static int lock_read(struct sw_host *h, const char *name, int64_t deadline_ms, bool *held,
                     char *holder, size_t n, struct sw_err *e)
{
    char path[512];
    snprintf(path, sizeof(path), "/run/slipway/%s.lock", name);
    const char *argv[] = {"sh", "-c", "if [ -e \"$1\" ]; then echo held; cat \"$1\"; fi",
                          "sh", path, NULL};
    struct sw_host_run_opts ro = {.deadline_ms = deadline_ms, .max_out = 4096};
    struct sw_host_result hr;
    *held = false;
    holder[0] = '\0';
    int rc = sw_host_run(h, argv, &ro, &hr, e);
    if (!rc && hr.out && !strncmp(hr.out, "held", 4)) {
        *held = true;
        const char *nl = strchr(hr.out, '\n');
        snprintf(holder, n, "%s: %s", path, nl ? nl + 1 : "");
        holder[strcspn(holder, "\n")] = '\0';
    }
    sw_host_result_free(&hr);
    return rc;
}

int sw__watch_lock_held(const struct sw_fleet_endpoint *ep, int64_t deadline_ms, bool *held,
                        char *holder, size_t n, struct sw_err *e)
{
    struct sw_host h;
    char name[256];
    *held = false;
    lock_name(NULL, ep, name, sizeof(name));
    int rc = sw_host_open_fleet(&h, ep->host, 5, e);
    if (rc)
        return rc;
    rc = lock_read(&h, name, deadline_ms, held, holder, n, e);
    sw_host_disconnect(&h);
    return rc;
}

int sw__watch_restart(const struct sw_fleet_endpoint *ep, const json_t *st, int64_t deadline_ms,
                      char *detail, size_t n, struct sw_err *e)
{
    struct sw_host h;
    struct sw_host_result hr;
    char name[256], unit[300], holder[512];
    bool held = false;
    const json_t *u = json_object_get(st, "unit");
    bool user = !strcmp(json_string_value(json_object_get(u, "scope")) ?: "", "user");
    lock_name(st, ep, name, sizeof(name));
    snprintf(unit, sizeof(unit), "%s.service", name);
    int rc = sw_host_open_fleet(&h, ep->host, 5, e);
    if (rc) {
        snprintf(detail, n, "host %s: %s", ep->host->name, e ? e->msg : "not opened");
        return rc;
    }
    rc = lock_read(&h, name, SW_MIN(deadline_ms, 15000), &held, holder, sizeof(holder), e);
    if (!rc && held) {
        snprintf(detail, n, "not restarted: the deploy lock is held (%s)", holder);
        rc = sw_err_set(e, SW_EBUSY, "%s", detail);
        goto out;
    }
    if (rc) {
        snprintf(detail, n, "not restarted: the lock could not be read: %s", e ? e->msg : "");
        goto out;
    }
    double t0 = sw_now_s();
    rc = sw_host_systemctl(&h, user, "restart", unit, deadline_ms, &hr, e);
    sw_host_result_free(&hr);
    if (rc)
        snprintf(detail, n, "systemctl%s restart %s on %s: %s", user ? " --user" : "", unit,
                 ep->host->name, e ? e->msg : "failed");
    else
        snprintf(detail, n, "systemctl%s restart %s on %s (%.1f s)", user ? " --user" : "", unit,
                 ep->host->name, sw_now_s() - t0);
out:
    sw_host_disconnect(&h);
    return rc;
}
