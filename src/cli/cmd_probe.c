/*
 * slipway probe URL|ENDPOINT [--fleet FLEET.yaml] [--json] [--only CHECKS] [--worst-case]
 *                           [--model NAME] [--window N] [--slots N] [--engine E]
 *                           [--vision yes|no] [--api-key-env VAR] [--timeout S]
 *                           [--ready-wait S] [--record] [--ledger PATH] [--quiet]
 *
 * Run the live battery (see include/slipway/probe.h) against a URL, or against an endpoint of
 * the fleet: then the URL, served name, engine, slots, the window clients rely on (the harness's
 * contextWindow), whether a projector is declared, and the API key's reference come from the
 * fleet file. Flags override. A token is never taken from argv: --api-key-env names the variable.
 * --record writes the battery into the ledger (beside the fleet, or --ledger PATH).
 *
 * Exit: 0 every check passed or was skipped, 1 a check failed, 2 unusable input.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/probe.h>

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: slipway probe URL|ENDPOINT [--fleet FLEET.yaml] [--json] [--only CHECKS]\n"
          "                     [--worst-case] [--model NAME] [--window N] [--slots N]\n"
          "                     [--engine llama.cpp|vllm|sglang] [--vision yes|no]\n"
          "                     [--api-key-env VAR] [--timeout S] [--ready-wait S]\n"
          "                     [--record] [--ledger PATH] [--quiet] [--svg FILE]\n"
          "checks: readiness liveness models chat stream reasoning tool_calls vision metrics\n"
          "        over_length concurrency speed, and worst_case with --worst-case\n"
          "ENDPOINT is a name in the fleet file (default ./fleet.yaml); URL is http(s)://...\n"
          "--svg FILE: the speed check as a chart (decode and prefill tok/s by depth, client and\n"
          "            server)\n",
          f);
}

struct opts {
    const char *target, *fleet, *only, *model, *engine, *vision, *key_env, *ledger;
    const char *window, *slots, *timeout, *ready, *svg;
    bool json, worst, record, quiet, help;
};

static int parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **val = NULL;
        if (sw_cli_is(a, "--json", NULL))
            o->json = true;
        else if (sw_cli_is(a, "--worst-case", NULL))
            o->worst = true;
        else if (sw_cli_is(a, "--record", NULL))
            o->record = true;
        else if (sw_cli_is(a, "--quiet", "-q"))
            o->quiet = true;
        else if (sw_cli_is(a, "--help", "-h"))
            o->help = true;
        else if (sw_cli_is(a, "--fleet", NULL))
            val = &o->fleet;
        else if (sw_cli_is(a, "--only", NULL))
            val = &o->only;
        else if (sw_cli_is(a, "--model", NULL))
            val = &o->model;
        else if (sw_cli_is(a, "--engine", NULL))
            val = &o->engine;
        else if (sw_cli_is(a, "--vision", NULL))
            val = &o->vision;
        else if (sw_cli_is(a, "--api-key-env", NULL))
            val = &o->key_env;
        else if (sw_cli_is(a, "--ledger", NULL))
            val = &o->ledger;
        else if (sw_cli_is(a, "--window", NULL))
            val = &o->window;
        else if (sw_cli_is(a, "--slots", NULL))
            val = &o->slots;
        else if (sw_cli_is(a, "--timeout", NULL))
            val = &o->timeout;
        else if (sw_cli_is(a, "--ready-wait", NULL))
            val = &o->ready;
        else if (sw_cli_is(a, "--svg", NULL))
            val = &o->svg;
        else if (a[0] == '-' && a[1])
            return sw_cli_usage("probe", "unknown option %s", a);
        else if (!o->target)
            o->target = a;
        else
            return sw_cli_usage("probe", "one URL or endpoint, not also '%s'", a);
        if (val) {
            if (i + 1 >= argc)
                return sw_cli_usage("probe", "%s needs a value", a);
            *val = argv[++i];
        }
    }
    return 0;
}

static int num(const char *flag, const char *v, uint64_t *out)
{
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_parse_count(v, out, &e))
        return sw_cli_usage("probe", "%s: %s", flag, e.msg);
    return 0;
}

/* A duration flag (seconds, or with a unit) as milliseconds, at most a day. */
static int dur(const char *flag, const char *v, unsigned *ms)
{
    struct sw_err e;
    int64_t x;
    sw_err_clear(&e);
    if (sw_parse_duration_ms(v, &x, &e))
        return sw_cli_usage("probe", "%s: %s", flag, e.msg);
    if (x > 86400000)
        return sw_cli_usage("probe", "%s %s: more than a day (86400 s)", flag, v);
    *ms = (unsigned)x;
    return 0;
}

/* Read a secret reference from the fleet: an environment variable or a file (first line). */
static char *read_secret(const struct sw_fleet_secret *s, struct sw_err *e)
{
    if (s->kind == SW_FLEET_SECRET_ENV) {
        const char *v = getenv(s->ref);
        if (!v || !*v) {
            sw_fleet_err_at(e, SW_ENOENT, &s->at, "the API key's variable %s is not set", s->ref);
            return NULL;
        }
        return sw_strdup(v);
    }
    if (s->kind == SW_FLEET_SECRET_FILE) {
        char *data = NULL;
        size_t len = 0;
        if (sw_read_file(s->ref, 64 * 1024, &data, &len, e))
            return NULL;
        data[strcspn(data, "\r\n")] = '\0';
        return data;
    }
    return NULL;
}

/* Fill the target from a fleet endpoint. url_buf holds the URL. */
static int from_fleet(const struct opts *o, struct sw_fleet **fp, struct sw_probe_target *t,
                      char *url_buf, size_t url_n, char **key, struct sw_err *e)
{
    const char *path = o->fleet ? o->fleet : "fleet.yaml";
    int rc = sw_fleet_load(path, NULL, fp, e);
    if (rc)
        return rc;
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(*fp, o->target);
    if (!ep)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s' (and it is not a URL)", path,
                          o->target);
    const char *addr = ep->listen_address.v;
    if (!addr || !strcmp(addr, "0.0.0.0") || !strcmp(addr, "::")) {
        /* bound to every interface: reach it where its host is */
        addr = ep->host && ep->host->transport == SW_FLEET_SSH && ep->host->address.v
                   ? ep->host->address.v
                   : "127.0.0.1";
    }
    if (!ep->listen_port.set)
        return sw_fleet_err_at(e, SW_EINVAL, &ep->at, "endpoint %s has no listen port", ep->name);
    snprintf(url_buf, url_n, "http://%s:%llu", addr, (unsigned long long)ep->listen_port.v);
    t->url = url_buf;
    t->model = ep->alias.v;
    t->engine = ep->engine ? sw_fleet_engine_name(ep->engine) : NULL;
    if (ep->shape.seqs.set)
        t->slots = (int)ep->shape.seqs.v;
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(*fp, ep);
    if (cw && cw->set)
        t->window = (int64_t)cw->v;
    else if (ep->shape.max_model_len.set)
        t->window = (int64_t)ep->shape.max_model_len.v;
    if (ep->payload.mmproj.off)
        t->vision = 0;
    else if (ep->payload.mmproj.v)
        t->vision = 1;
    if (ep->api_key.kind != SW_FLEET_SECRET_NONE && !o->key_env) {
        *key = read_secret(&ep->api_key, e);
        if (!*key)
            return e && e->code ? e->code : SW_ENOENT;
    }
    return 0;
}

int sw_cmd_probe(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    if (o.help) {
        usage(stdout);
        return SW_EXIT_OK;
    }
    if (!o.target)
        return sw_cli_usage("probe", "which URL or endpoint?");
    struct sw_probe_target t;
    memset(&t, 0, sizeof(t));
    t.vision = -1;
    struct sw_fleet *fleet = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    char url[600];
    char *key = NULL;
    struct sw_probe_report rep;
    memset(&rep, 0, sizeof(rep));
    int exit_code = SW_EXIT_OK;
    if (strstr(o.target, "://")) {
        t.url = o.target;
    } else {
        rc = from_fleet(&o, &fleet, &t, url, sizeof(url), &key, &e);
        if (rc) {
            exit_code = sw_cli_fail(&e, o.json);
            goto out;
        }
    }
    uint64_t v;
    if (o.model)
        t.model = o.model;
    if (o.engine)
        t.engine = o.engine;
    if (o.window) {
        exit_code = num("--window", o.window, &v);
        if (exit_code)
            goto out;
        t.window = (int64_t)v;
    }
    if (o.slots) {
        exit_code = num("--slots", o.slots, &v);
        if (exit_code)
            goto out;
        t.slots = (int)SW_MIN(v, 100000);
    }
    if (o.timeout) {
        exit_code = dur("--timeout", o.timeout, &t.timeout_ms);
        if (exit_code)
            goto out;
    }
    if (o.ready) {
        exit_code = dur("--ready-wait", o.ready, &t.ready_ms);
        if (exit_code)
            goto out;
    }
    if (o.vision) {
        if (!strcmp(o.vision, "yes"))
            t.vision = 1;
        else if (!strcmp(o.vision, "no"))
            t.vision = 0;
        else {
            exit_code = sw_cli_usage("probe", "--vision takes yes or no");
            goto out;
        }
    }
    if (o.key_env) {
        const char *k = getenv(o.key_env);
        if (!k || !*k) {
            sw_err_set(&e, SW_ENOENT, "--api-key-env: %s is not set", o.key_env);
            exit_code = sw_cli_fail(&e, o.json);
            goto out;
        }
        sw_free(key);
        key = sw_strdup(k);
    }
    t.api_key = key;
    t.only = o.only;
    t.worst_case = o.worst;
    t.progress = o.quiet || o.json ? NULL : stderr;
    int64_t started = sw_wall_unix();
    rc = sw_probe_run(&t, &rep, &e);
    if (rc) {
        exit_code = sw_cli_fail(&e, o.json);
        goto out;
    }
    json_t *doc = sw_probe_report_json(&rep);
    if (o.json) {
        if (doc)
            sw_json_print(stdout, doc, true);
    } else {
        sw_probe_report_print(stdout, &rep);
    }
    if (o.record && doc) {
        char path[4096];
        struct sw_ledger led;
        memset(&led, 0, sizeof(led));
        if (o.ledger)
            snprintf(path, sizeof(path), "%s", o.ledger);
        rc = o.ledger
                 ? 0
                 : sw_ledger_default_path(fleet ? fleet->path : o.fleet, path, sizeof(path), &e);
        int64_t id = 0;
        if (!rc)
            rc = sw_ledger_open(&led, path, NULL, &e);
        if (!rc)
            rc = sw_ledger_record_battery(&led, fleet ? o.target : NULL, 0, rep.url, started, doc,
                                          &id, &e);
        sw_ledger_close(&led);
        if (rc) {
            char m[1200];
            fprintf(stderr, "slipway probe: not recorded: %s\n", sw_err_format(&e, m, sizeof(m)));
        } else if (!o.json) {
            printf("recorded as battery %lld in %s\n", (long long)id, path);
        }
    }
    exit_code = rep.failed ? SW_EXIT_FAIL : SW_EXIT_OK;
    if (o.svg) {
        char m[1200];
        sw_err_clear(&e);
        if (!doc || sw_probe_speed_svg(doc, o.svg, &e)) {
            fprintf(stderr, "slipway probe: --svg %s: %s\n", o.svg,
                    doc ? sw_err_format(&e, m, sizeof(m)) : "out of memory");
            if (exit_code == SW_EXIT_OK)
                exit_code = SW_EXIT_FAIL;
        } else if (!o.json) {
            printf("speed chart: %s\n", o.svg);
        }
    }
    json_decref(doc);
out:
    sw_probe_report_free(&rep);
    if (key) {
        memset(key, 0, strlen(key));
        sw_free(key);
    }
    sw_fleet_free(fleet);
    return exit_code;
}
