/*
 * slipway watch [ENDPOINT...] [--fleet FILE] [--interval DUR] [--once] [--metrics ADDR]
 *               [--ledger PATH] [--deadline DUR] [--json]
 *
 *   The fleet's supervisor, in the foreground (include/slipway/watch.h): every interval each
 *   endpoint is proven by a one-token generation and classified; restarts, rollbacks, alerts and
 *   scheduled jobs follow the fleet's watch:, alert: and schedule:. One line per event (a JSON
 *   line each with --json). Ctrl-C or SIGTERM stops it; started again it resumes from the ledger.
 *   `slipway render --watch` writes its systemd unit.
 *
 * Exit: 0 stopped (or --once done), 1 it could not run, 2 usage.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/watch.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

static const struct sw_opt opts[] = {
    {"interval", 0, "DUR", 0,
     "between looks at an endpoint (default 30s; the fleet's\n"
     "watch.interval of an endpoint wins)",
     NULL},
    {"once", 0, NULL, 0, "one look at each endpoint (acting and alerting), then exit", NULL},
    {"metrics", 0, "ADDR", 0, "serve Prometheus text on http://ADDR/metrics (127.0.0.1:9464)",
     NULL},
    {"deadline", 0, "DUR", 0, "each look's host deadline (default: the interval, at most 20s)",
     NULL},
    {"ledger", 0, "PATH", 0, "the ledger (default: beside the fleet; created when missing)", NULL},
    {"no-ledger", 0, NULL, SW_OPT_REFUSE,
     "watch keeps its looks and actions in the ledger: a restarted watch reads them back so it\n"
     "never acts twice; it cannot run without one",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway watch --fleet fleet.yaml",
    "slipway watch frank-primary --fleet fleet.yaml --interval 10s --metrics 127.0.0.1:9464",
    "slipway watch --fleet fleet.yaml --once --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_watch = {
    .name = "watch",
    .summary = "keep the fleet serving: prove, restart, roll back, alert, schedule, metrics",
    .synopsis = "[ENDPOINT...] [--fleet FILE] [--interval DUR] [--once] [--metrics ADDR]\n"
                "[--deadline DUR] [--ledger PATH] [--json]",
    .about = "Every interval (jittered) each endpoint is proven by a one-token generation over\n"
             "its route, its unit's state and NRestarts, drift and device memory read, and\n"
             "classified: serving, dead_generation, crash_loop, down, drifted,\n"
             "memory_out_of_band, unreachable. The fleet's watch: policy restarts (rate\n"
             "limited) and rolls back to last-good after N failed restarts; never while the\n"
             "deploy lock is held, never on a host that did not answer. Every change, action,\n"
             "alert and job goes to the ledger; restarted, watch takes no action twice.\n"
             "docs/watch.md has the fleet keys.",
    .opts = opts,
    .max_args = -1,
    .fleet = true,
    .examples = examples,
};

static bool g_json;

static void on_event(void *ctx, const struct sw_watch_event *ev)
{
    (void)ctx;
    if (g_json) {
        json_t *j = sw_watch_event_json(ev);
        json_object_del(j, "evidence");
        char *s = json_dumps(j, JSON_COMPACT);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(j);
    } else {
        char ts[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (!strcmp(ev->kind, "observation"))
            printf("%s %-20s %s -> %s: ", ts, ev->endpoint, sw_watch_state_name(ev->prev),
                   sw_watch_state_name(ev->state));
        else
            printf("%s %-20s %s %s %s: ", ts, ev->endpoint, ev->kind, ev->action ? ev->action : "",
                   ev->outcome ? ev->outcome : "");
        sw_fput_term(stdout, ev->detail ? ev->detail : "", 0);
        putchar('\n');
    }
    fflush(stdout);
}

int sw_cmd_watch(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_ledger l;
    bool opened = false;
    char lpath[1024];
    int rc;
    struct sw_args a;
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_watch, argc, argv, &a, &rc))
        return rc;
    g_json = a.json;
    struct sw_cli_fleet fl;
    if ((rc = sw_cli_fleet(&a, 0, 0, &fl)))
        return rc;
    const char *path = fl.path;
    const char *only[SW_ARGS_MAX];
    size_t n_only = 0;
    for (int i = 0; i < fl.n_endpoints; i++)
        only[n_only++] = fl.endpoints[i];
    only[n_only] = NULL;
    int64_t interval = 30000, deadline = 0;
    rc = sw_args_duration(&a, "interval", 1000, 86400000, &interval);
    if (!rc)
        rc = sw_args_duration(&a, "deadline", 500, 600000, &deadline);
    if (rc)
        return rc;
    if (sw_fleet_load(path, NULL, &f, &e))
        return sw_cli_fail(&e, a.json);
    struct sw_ledger_open_opts lo = {.create = true};
    rc = sw_ledger_open_for(&l, sw_args_str(&a, "ledger"), path, &lo, SW_LEDGER_MUST_EXIST, &opened,
                            lpath, sizeof(lpath), &e);
    if (rc) {
        rc = sw_cli_fail(&e, a.json);
        goto done;
    }
    sw_cli_catch_stop(false);
    struct sw_watch_opts o = {.only = n_only ? only : NULL,
                              .n_only = n_only,
                              .interval_ms = interval,
                              .deadline_ms = deadline,
                              .once = sw_args_flag(&a, "once"),
                              .metrics_addr = sw_args_str(&a, "metrics"),
                              .ledger = &l,
                              .ledger_path = lpath,
                              .fleet_path = path,
                              .stop = &sw_cli_stop,
                              .on_event = on_event};
    if (!a.json)
        fprintf(stderr, "watch: %s, ledger %s%s%s\n", path, lpath,
                o.metrics_addr ? ", metrics on http://" : "", o.metrics_addr ? o.metrics_addr : "");
    rc = sw_watch_run(f, &o, &e);
    sw_cli_release_stop();
    rc = rc ? sw_cli_fail(&e, a.json) : SW_EXIT_OK;
done:
    if (opened)
        sw_ledger_close(&l);
    sw_fleet_free(f);
    return rc;
}
