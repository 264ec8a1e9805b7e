/*
 * slipway report [--fleet FILE] [--ledger PATH | --no-ledger] [--md OUT] [--html OUT] [--json] [--since DATE]
 *
 *   The fleet as people read it, from the fleet file, each endpoint's plan and the ledger: per
 *   host and endpoint its engine, payload, shape, window, budget per device (stacked bars in the
 *   HTML), measured decode/prefill, last battery, known-bad shapes and why, the harness
 *   contract. Without --md/--html/--json the Markdown goes to stdout. --md and --html write
 *   atomically (mode 0644); --json prints the document both are made from.
 *
 * Exit: 0 written, 1 a file could not be written or the ledger could not be read, 2 unusable
 * input.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/report.h>

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"ledger", 0, "PATH", 0, "the ledger (default: beside the fleet file)", NULL},
    {"no-ledger", 0, NULL, 0, "read no ledger: the fleet and its plan alone", NULL},
    {"md", 0, "FILE", 0, "write the Markdown report to FILE (atomically)", NULL},
    {"html", 0, "FILE", 0, "write the HTML page (inline SVG, no network) to FILE (atomically)",
     NULL},
    {"since", 0, "DATE", 0, "list the ledger rows recorded since DATE (2026-10-01 or ISO-8601)",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway report --fleet examples/operator.yaml",
    "slipway report --fleet examples/operator.yaml --ledger fleet.sqlite --html fleet.html --md "
    "FLEET.md",
    "slipway report --since 2026-10-01 --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_report = {
    .name = "report",
    .summary = "the fleet as people read it: Markdown, one HTML page, JSON; from fleet + ledger",
    .synopsis = "[--fleet FILE] [--ledger PATH | --no-ledger] [--md FILE] [--html FILE]\n"
                "    [--since DATE] [--json]",
    .about = "Per host and endpoint: engine, payload, shape, window, budget per device (weights,\n"
             "KV, state, compute, arena, other, free, against the band), measured decode and\n"
             "prefill, the last battery, known-bad shapes and why, the harness contract. Every\n"
             "figure comes from the plan, a measured fact or a ledger row. The fleet is --fleet\n"
             "FILE, else $SLIPWAY_FLEET, else ./fleet.yaml; --no-ledger reports the fleet alone.\n"
             "Exit: 0 written, 1 writing or the ledger failed, 2 unusable input.",
    .opts = opts,
    .max_args = 0,
    .examples = examples,
    .fleet = true,
};

/* The Markdown or HTML view of doc, written to path atomically (mode 0644), or on stdout when
 * path is NULL. */
static int put_view(const json_t *doc, const char *path, bool html, struct sw_err *e)
{
    struct sw_buf b;
    sw_buf_init(&b, 64u << 20);
    int rc = html ? sw_report_html(doc, &b, e) : sw_report_markdown(doc, &b, e);
    if (!rc && path)
        rc = sw_write_file_atomic(path, sw_buf_cstr(&b), b.len, 0644, e);
    else if (!rc)
        fputs(sw_buf_cstr(&b), stdout);
    sw_buf_free(&b);
    return rc;
}

int sw_cmd_report(int argc, char **argv)
{
    struct sw_args a;
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_ledger l;
    json_t *doc = NULL;
    bool opened = false;
    char path[4096];
    int rc = SW_EXIT_OK;
    int64_t since = 0;

    memset(&l, 0, sizeof(l));
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_report, argc, argv, &a, &rc))
        return rc;
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, 0, &fl);
    if (rc)
        return rc;
    const char *fleet = fl.path;
    const char *ledger = sw_args_str(&a, "ledger"), *md = sw_args_str(&a, "md");
    const char *html = sw_args_str(&a, "html"), *s = sw_args_str(&a, "since");
    if ((md && !*md) || (html && !*html))
        return sw_args_usage(&a, "--md/--html: want a file");
    if (s && (sw_ledger_parse_time(s, &since, &e) || since <= 0))
        return sw_args_usage(&a, "--since: want a date (2026-10-01 or ISO-8601), got '%s'", s);

    bool no_ledger = sw_args_flag(&a, "no-ledger");
    if (no_ledger && ledger)
        return sw_args_usage(&a, "--ledger and --no-ledger together");
    if (sw_fleet_load(fleet, NULL, &f, &e))
        goto fail;
    if (!no_ledger && sw_report_ledger_open(&l, ledger, fleet, &opened, path, sizeof(path), &e))
        goto fail;
    struct sw_report_opts ro = {.ledger = opened ? &l : NULL, .since = since};
    if (sw_report_collect(f, &ro, &doc, &e))
        goto fail;
    if (md && put_view(doc, md, false, &e))
        goto fail_io;
    if (html && put_view(doc, html, true, &e))
        goto fail_io;
    if (a.json) {
        if (md)
            sw_json_set_str(doc, "written_md", md);
        if (html)
            sw_json_set_str(doc, "written_html", html);
        sw_json_print(stdout, doc, true);
    } else if (!md && !html) {
        if (put_view(doc, NULL, false, &e))
            goto fail;
    } else {
        if (md)
            printf("wrote %s\n", md);
        if (html)
            printf("wrote %s\n", html);
    }
    goto out;
fail_io:
    e.code = SW_EIO;
fail:
    rc = sw_cli_fail(&e, a.json);
out:
    json_decref(doc);
    if (opened)
        sw_ledger_close(&l);
    sw_fleet_free(f);
    return rc;
}
