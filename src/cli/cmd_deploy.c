/*
 * slipway deploy ENDPOINT [--fleet FILE] [--dry-run] [--no-worst-case] [--deadline DUR]
 *                [--stall DUR] [--probe-only CHECKS] [--ledger PATH | --no-ledger] [--json]
 *
 *   The gated rollout of include/slipway/rollout.h: gates, stage beside the live files, verify,
 *   save the rollback set, swap, stop/start, the boot watched from its journal and unit state,
 *   readiness, one-token liveness, the probe battery, commit; any failure after the stop puts the
 *   rollback set back and proves it serves. Also `slipway rollback` (cmd_rollback.c) shares the
 *   printing here.
 *
 * Exit: 0 committed (or the dry run printed), 1 the deploy failed (a gate, the boot, the
 * battery: rolled back or not), 2 unusable input (fleet, endpoint, a bad option).
 */
#include "cli.h"
#include "cmd_rollout.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/rollout.h>
#include <slipway/serve.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"dry-run", 'n', NULL, 0,
     "print every step, what it would write and the diff against the live files;\n"
     "touch nothing",
     NULL},
    {"no-worst-case", 0, NULL, 0, "leave the probe's worst_case check out", NULL},
    {"deadline", 0, "DUR", 0, "the boot's bound to readiness (default 10m)", NULL},
    {"stall", 0, "DUR", 0, "no journal line and no readiness this long is a stall (default 2m)",
     NULL},
    {"probe-only", 0, "CHECKS", 0, "the battery's checks, comma-separated (default: all)", NULL},
    {"ledger", 0, "PATH", 0, "the ledger (default: $SLIPWAY_LEDGER, else FLEET.ledger.sqlite)",
     NULL},
    {"no-ledger", 0, NULL, 0, "no ledger: no evidence for the gates, nothing recorded", NULL},
    {"note", 0, "TEXT", 0, "the operator's note for the attempt and its tag", NULL},
    {"via-serve", 0, "URL", 0,
     "deploy through the `slipway serve` at URL: a local endpoint blue/green beside the old\n"
     "shape when the plan says both fit, else stop-start with the requests queued (rolled\n"
     "back when the new shape fails); one on another host by its gated rollout (with\n"
     "--no-worst-case, --probe-only) with the requests queued; the admin key from\n"
     "$SLIPWAY_SERVE_KEY (docs/serve.md)",
     NULL},
    {"drain", 0, "DUR", 0,
     "with --via-serve: how long the old instance may finish its requests "
     "(default 300s)",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway deploy frank-small --fleet examples/operator.yaml --dry-run",
    "slipway deploy local --no-worst-case --deadline 5m",
    "SLIPWAY_SERVE_KEY=... slipway deploy qwen-small --via-serve http://127.0.0.1:8090",
    NULL,
};

const struct sw_cmd_spec sw_spec_deploy = {
    .name = "deploy",
    .summary = "roll an endpoint's shape out on its host, proven, or roll back to the old one",
    .synopsis = "ENDPOINT [--fleet FILE] [--dry-run] [--no-worst-case] [--deadline DUR]\n"
                "    [--stall DUR] [--probe-only CHECKS] [--ledger PATH | --no-ledger]\n"
                "    [--note TEXT] [--via-serve URL [--drain DUR]] [--json]",
    .about = "Gates (any failure touches nothing on the host) -> render -> stage beside the live\n"
             "files -> systemd-analyze verify -> save the live files -> swap -> stop/start ->\n"
             "watch the boot (journal classified as it arrives, NRestarts, unit state, stall)\n"
             "-> readiness -> one-token liveness -> probe battery -> commit (last-good + tag).\n"
             "A failure after the stop restores the saved files and proves they serve; the\n"
             "time the endpoint did not serve is measured. One deploy per endpoint at a time\n"
             "(/run/slipway/NAME.lock on the host).\n"
             "Exit: 0 committed or dry run, 1 the deploy failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

void sw__cli_rollout_print(const struct sw_rollout_result *r)
{
    printf("%s (%s): %s\n", r->endpoint, r->unit[0] ? r->unit : "-",
           sw_rollout_outcome_name(r->outcome));
    if (r->failed_step[0]) {
        printf("  failed at %s: %s: ", r->failed_step, r->fail_class);
        sw_fput_term(stdout, r->fail_msg, 0);
        putchar('\n');
    }
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(r->gates, "gates"), i, g)
    {
        const char *v = json_string_value(json_object_get(g, "verdict"));
        if (!v || strcmp(v, "waived"))
            continue;
        printf("  WAIVED %s: %s\n", json_string_value(json_object_get(g, "gate")),
               json_string_value(json_object_get(g, "line")));
        sw_cli_print_waiver(stdout, 4, g);
    }
    if (r->rollback_msg[0]) {
        fputs("  rollback: ", stdout);
        sw_fput_term(stdout, r->rollback_msg, 0);
        putchar('\n');
    }
    if (r->tag[0])
        printf("  tag: %s\n", r->tag);
    if (r->attempt)
        printf("  ledger: attempt %lld\n", (long long)r->attempt);
    if (r->rule_id)
        printf("  known-bad: rule %lld now refuses this shape (slipway check)\n",
               (long long)r->rule_id);
    if (r->ledger_msg[0])
        printf("  ledger: not written: %s\n", r->ledger_msg);
    if (r->downtime_ms >= 0)
        printf("  downtime: %lld ms (stop to the first generation of the shape that serves)\n",
               (long long)r->downtime_ms);
    else if (r->stopped)
        printf("  downtime: still not serving\n");
    if (r->journal && r->journal[0] && r->failed_step[0]) {
        fputs("  journal (last lines):\n", stdout);
        sw_fput_term(stdout, r->journal, SW_TERM_LINES);
    }
}

int sw__cli_rollout_finish(const struct sw_rollout_result *r, bool json)
{
    if (json) {
        json_t *j = sw_rollout_result_json(r);
        if (!j) {
            fprintf(stderr, "slipway: out of memory\n");
            return SW_EXIT_FAIL;
        }
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        sw__cli_rollout_print(r);
    }
    return r->outcome == SW_ROLLOUT_COMMITTED || r->outcome == SW_ROLLOUT_DRY_RUN ||
                   r->outcome == SW_ROLLOUT_RESTORED
               ? SW_EXIT_OK
               : SW_EXIT_FAIL;
}

int sw__cli_rollout_endpoint(const struct sw_args *a, const char *verb, struct sw_fleet **f,
                             const struct sw_fleet_endpoint **ep, int *rc)
{
    struct sw_cli_fleet fl;
    (void)verb;
    *rc = sw_cli_fleet(a, 0, SW_CLI_FLEET_LOAD, &fl);
    if (*rc)
        return -1;
    *f = fl.fleet;
    *ep = sw_fleet_endpoint(*f, a->pos[0]);
    return 0;
}

int sw__cli_rollout_ledger(const struct sw_args *a, const struct sw_fleet *f, bool write,
                           struct sw_ledger *led, bool *have, struct sw_rollout_opts *o, int *rc)
{
    struct sw_err e;
    char lpath[4096];
    *have = false;
    if (sw_args_flag(a, "no-ledger"))
        return 0;
    sw_err_clear(&e);
    struct sw_ledger_open_opts oo = {.readonly = !write, .create = write};
    if (sw_ledger_open_for(led, sw_args_str(a, "ledger"), f->path, &oo,
                           SW_LEDGER_DEFAULT_MAY_BE_ABSENT, have, lpath, sizeof(lpath), &e)) {
        sw_err_prefix(&e, "the ledger");
        sw_cli_fail(&e, a->json);
        *rc = SW_EXIT_USAGE;
        return -1;
    }
    if (*have) {
        o->ledger = led;
        o->record = write;
    }
    return 0;
}

/* --via-serve: serve deploys it (blue/green or stop-start) and answers with the figures. */
/* A string of serve's answer, as the terminal may show it (serve is a server: its bytes are
 * escaped, an absent field is "-"). */
static void term(const json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    sw_fput_term(stdout, s ? s : "-", 0);
}

static void print_serve_answer(const char *endpoint, const json_t *j, bool failed)
{
    const json_t *rq = json_object_get(j, "requests"), *w = json_object_get(j, "queued");
    printf("%s: ", endpoint);
    term(j, "path");
    printf(" %s in %.1f s: ", failed ? "failed" : "done",
           json_real_value(json_object_get(j, "seconds")));
    term(j, "old");
    fputs(" -> ", stdout);
    term(j, "new");
    fputs("\n  ", stdout);
    term(j, "decision");
    printf("\n  requests: %lld answered, %lld failed; %lld queued (wait p50 %.3f s, p99 %.3f s, "
           "max %.3f s)\n",
           (long long)json_integer_value(json_object_get(rq, "answered")),
           (long long)json_integer_value(json_object_get(rq, "failed")),
           (long long)json_integer_value(json_object_get(w, "requests")),
           json_real_value(json_object_get(w, "wait_p50_s")),
           json_real_value(json_object_get(w, "wait_p99_s")),
           json_real_value(json_object_get(w, "wait_max_s")));
    const json_t *lj = json_object_get(j, "ledger"); /* what serve recorded (docs/serve.md) */
    if (json_integer_value(json_object_get(lj, "attempt")) > 0) {
        printf("  ledger: attempt %lld ",
               (long long)json_integer_value(json_object_get(lj, "attempt")));
        term(lj, "outcome");
        if (json_object_get(lj, "tag")) {
            fputs(", tag ", stdout);
            term(lj, "tag");
        }
        fputs(" in ", stdout);
        term(lj, "path");
        fputs("\n", stdout);
    }
    if (json_object_get(lj, "error") || json_object_get(lj, "why")) {
        fputs(json_object_get(lj, "error") ? "  ledger: not written: " : "  ledger: ", stdout);
        term(lj, json_object_get(lj, "error") ? "error" : "why");
        fputs("\n", stdout);
    }
}

static int via_serve(const struct sw_args *a, const char *url)
{
    int64_t drain = 0;
    int rc = sw_args_duration(a, "drain", 1000, 86400000, &drain);
    if (rc)
        return rc;
    struct sw_serve_deploy_req q = {.url = url,
                                    .endpoint = a->pos[0],
                                    .key = getenv("SLIPWAY_SERVE_KEY"),
                                    .drain_s = (unsigned)(drain / 1000),
                                    .probe_only = sw_args_str(a, "probe-only"),
                                    .no_worst_case = sw_args_flag(a, "no-worst-case")};
    json_t *j = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    int drc = sw_serve_deploy(&q, &j, &e);
    if (a->json && j)
        sw_json_print(stdout, j, true);
    else if (j && json_object_get(j, "path"))
        print_serve_answer(q.endpoint, j, drc != 0);
    bool answered = j != NULL;
    json_decref(j);
    if (drc && !answered)
        return sw_cli_fail(&e, a->json); /* serve was not asked, or did not answer */
    if (drc) {
        fprintf(stderr, "slipway: %s\n", e.msg);
        return SW_EXIT_FAIL;
    }
    return SW_EXIT_OK;
}

int sw_cmd_deploy(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    const struct sw_fleet_endpoint *ep = NULL;
    struct sw_rollout_result res;
    struct sw_ledger led;
    bool have_ledger = false;
    int rc = SW_EXIT_OK;

    sw_err_clear(&e);
    memset(&res, 0, sizeof(res));
    memset(&led, 0, sizeof(led));
    struct sw_args a;
    if (!sw_args_parse(&sw_spec_deploy, argc, argv, &a, &rc))
        return rc;
    if (a.npos < 1)
        return sw_cli_need_endpoint(&a, " to deploy");
    if (sw_args_str(&a, "via-serve"))
        return via_serve(&a, sw_args_str(&a, "via-serve"));
    if (sw_args_str(&a, "drain"))
        return sw_args_usage(&a, "--drain goes with --via-serve");
    struct sw_rollout_opts o = {0};
    o.dry_run = sw_args_flag(&a, "dry-run");
    o.worst_case = !sw_args_flag(&a, "no-worst-case");
    o.probe_only = sw_args_str(&a, "probe-only");
    o.note = sw_args_str(&a, "note");
    rc = sw_args_duration(&a, "deadline", 1, INT64_MAX, &o.deadline_ms);
    if (!rc)
        rc = sw_args_duration(&a, "stall", 1, INT64_MAX, &o.stall_ms);
    if (rc)
        return rc;
    if (sw_args_str(&a, "ledger") && sw_args_flag(&a, "no-ledger"))
        return sw_args_usage(&a, "--ledger and --no-ledger: choose one");
    if (!a.json && !o.dry_run)
        o.progress = stdout;
    if (o.dry_run && !a.json)
        o.progress = stdout;

    /* read-write: every attempt, its steps and its tag or failure land in it (a dry run only
     * reads: it records nothing) */
    if (sw__cli_rollout_endpoint(&a, "deploy", &f, &ep, &rc) ||
        sw__cli_rollout_ledger(&a, f, !o.dry_run, &led, &have_ledger, &o, &rc))
        goto out;
    if (sw_rollout_deploy(f, ep, &o, &res, &e)) {
        rc = sw_cli_fail(&e, a.json);
        if (rc == SW_EXIT_USAGE && e.code != SW_EINVAL && e.code != SW_EUNSUPPORTED)
            rc = SW_EXIT_FAIL;
        goto out;
    }
    rc = sw__cli_rollout_finish(&res, a.json);
out:
    sw_rollout_result_free(&res);
    if (have_ledger)
        sw_ledger_close(&led);
    sw_fleet_free(f);
    return rc;
}
