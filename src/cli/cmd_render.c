/*
 * slipway render ENDPOINT [--fleet FILE] [--out DIR] [--json]
 *
 *   Render an endpoint as a systemd service (include/slipway/unit.h): the unit, its environment
 *   file and, for a container, the container's argv. The human view prints both files (secret
 *   values shown as ***); --out DIR writes NAME.service and NAME.env (0600, with the secrets)
 *   whole or not at all; --json prints {unit, files: [{name, mode, text}], engine_argv,
 *   container: {argv, stop, image, pinned} | null, timing, warnings}.
 *
 *   --target k8s: the Kubernetes objects once the gates pass (report/export_k8s.c).
 *
 * Exit: 0 rendered, 1 the files could not be written, 2 unusable input (a broken fleet, an
 * unknown endpoint, an endpoint that cannot be rendered: a path outside its mounts...).
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/report.h>
#include <slipway/unit.h>
#include <slipway/unit_lint.h>
#include <slipway/watch.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct sw_opt opts[] = {
    {"out", 'o', "DIR", 0,
     "write NAME.service and NAME.env (mode 0600, with the secret values) into DIR", NULL},
    {"lint", 0, NULL, 0,
     "parse the rendered unit back and hold it to the unit laws (`slipway lint`); exit 1 on a\n"
     "finding. `systemd-analyze verify` runs when the endpoint's host is local",
     NULL},
    {"target", 0, "systemd|k8s", 0,
     "what to render (default systemd). k8s: Deployment + Service + PVC for the model cache,\n"
     "after the gates (`slipway check`) pass; --out DIR writes NAME.k8s.yaml",
     NULL},
    {"ledger", 0, "PATH", 0,
     "k8s: the ledger for the gates and the measured boot time (default: beside the fleet)", NULL},
    {"no-ledger", 0, NULL, 0, "read and write no ledger (k8s: the gates without ledger evidence)",
     NULL},
    {"nodes", 0, "N", 0,
     "k8s, vLLM: serve across N nodes as a LeaderWorkerSet (the leader runs the Ray head and\n"
     "the engine, N-1 workers join it; the plan's tensor x pipeline parallel GPUs split evenly).\n"
     "Default: the endpoint's `nodes:` in the fleet; a different N is a usage error",
     NULL},
    {"watch", 0, NULL, 0,
     "render `slipway watch`'s own unit for this machine instead (slipway-watch.service: the\n"
     "fleet and ledger by absolute path; --out DIR writes it); no ENDPOINT",
     NULL},
    {"metrics", 0, "ADDR", 0, "--watch: serve Prometheus text on ADDR", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway render frank-primary --fleet examples/operator.yaml",
    "slipway render frank-small --fleet examples/operator.yaml --out /tmp/units",
    "slipway render local --fleet examples/local.yaml --json",
    "slipway render frank-primary --fleet examples/operator.yaml --lint",
    "slipway render --target k8s frank-primary --fleet examples/operator.yaml",
    "slipway render --target k8s big-amd --nodes 2 --out k8s/",
    "slipway render --watch --fleet fleet.yaml --metrics 127.0.0.1:9464",
    NULL,
};

const struct sw_cmd_spec sw_spec_render = {
    .name = "render",
    .summary = "render an endpoint as a systemd service: the unit, its env file, the container",
    .synopsis =
        "ENDPOINT [--fleet FILE] [--out DIR] [--lint] [--json]\n"
        "--target k8s ENDPOINT [--fleet FILE] [--ledger PATH] [--nodes N] [--out DIR] [--json]\n"
        "--watch [--fleet FILE] [--ledger PATH] [--metrics ADDR] [--out DIR]",
    .about = "Renders from the endpoint's plan (the one argv of its engine) and the fleet's\n"
             "runtime: (native, podman, docker) and service: settings. Secrets go only to the\n"
             "env file; printed text shows them as ***. The same fleet renders byte-identical\n"
             "files. The fleet: --fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml.\n"
             "Exit: 0 rendered, 1 the files could not be written or --lint found something,\n"
             "2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

/* What the options ask for. */
struct req {
    const char *name, *fleet_path, *dir;
    bool k8s, lint;
    unsigned long nodes;
};

/* The options into q: 0, or the usage error's exit code (printed). */
static int read_opts(const struct sw_args *a, struct req *q)
{
    if (a->npos < 1)
        return sw_cli_need_endpoint(a, " to render");
    q->name = a->pos[0];
    struct sw_cli_fleet fl;
    int frc = sw_cli_fleet(a, 0, 0, &fl);
    if (frc)
        return frc;
    q->fleet_path = fl.path;
    q->dir = sw_args_str(a, "out");
    q->lint = sw_args_flag(a, "lint");
    if (q->dir && !*q->dir)
        return sw_args_usage(a, "--out: want a directory");
    const char *target = sw_args_str(a, "target");
    q->k8s = target && !strcmp(target, "k8s");
    if (target && !q->k8s && strcmp(target, "systemd"))
        return sw_args_usage(a, "--target: want systemd or k8s, got '%s'", target);
    if (q->k8s && q->lint)
        return sw_args_usage(a, "--lint is for the systemd unit (--target systemd)");
    if (!q->k8s && sw_args_str(a, "ledger"))
        return sw_args_usage(a, "--ledger goes with --target k8s");
    static const char *const uses[] = {"ledger", NULL};
    int lrc = sw_cli_no_ledger(a, uses);
    if (lrc)
        return lrc;
    if (sw_args_str(a, "nodes") && !q->k8s)
        return sw_args_usage(a, "--nodes goes with --target k8s");
    uint64_t nodes = 0;
    int rc = sw_args_number(a, "nodes", 1, 1024, &nodes);
    q->nodes = (unsigned long)nodes;
    return rc;
}

/* The failures the fleet waives (gate.h sw_gate_waive), on stderr: WAIVED, the reason, until. */
static void print_waived(const char *endpoint, const json_t *check)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(check, "gates"), i, g)
    {
        const char *gv = json_string_value(json_object_get(g, "verdict"));
        if (!gv || strcmp(gv, "waived"))
            continue;
        fprintf(stderr, "slipway: %s: WAIVED %s: %s\n", endpoint,
                json_string_value(json_object_get(g, "gate")),
                json_string_value(json_object_get(g, "line")));
        sw_cli_print_waiver(stderr, 2, g);
    }
}

/* The gates rejected the shape: what they said, nothing rendered. */
static void print_rejected(const struct sw_args *a, const struct sw_fleet_endpoint *ep,
                           const json_t *check)
{
    if (a->json) {
        json_t *j = json_pack("{s:b,s:O}", "rendered", false, "check", check);
        sw_json_print(stdout, j, true);
        json_decref(j);
        return;
    }
    fprintf(stderr, "slipway render: %s: the gates reject this shape; not rendered:\n", ep->name);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(check, "gates"), i, g)
    {
        const char *gv = json_string_value(json_object_get(g, "verdict"));
        if (gv && !strcmp(gv, "fail"))
            fprintf(stderr, "  FAIL %s: %s\n", json_string_value(json_object_get(g, "gate")),
                    json_string_value(json_object_get(g, "line")));
    }
    print_waived(ep->name, check);
}

/* --target k8s: the objects once the gates pass (the ledger gives the gates their evidence and
 * the measured boot time), written into --out DIR or printed. */
static int render_k8s(const struct sw_args *a, const struct req *q, struct sw_fleet *f,
                      const struct sw_fleet_endpoint *ep)
{
    struct sw_err e;
    struct sw_ledger l;
    struct sw_buf yaml;
    struct sw_export_k8s x = {.yaml = &yaml};
    bool opened = false;
    char path[4096], file[4400];
    int rc = SW_EXIT_OK;
    memset(&l, 0, sizeof(l));
    sw_buf_init(&yaml, 16u << 20);
    sw_err_clear(&e);
    if (!sw_args_flag(a, "no-ledger") &&
        sw_report_ledger_open(&l, sw_args_str(a, "ledger"), q->fleet_path, &opened, path,
                              sizeof(path), &e))
        goto fail;
    struct sw_report_opts ro = {.ledger = opened ? &l : NULL};
    if (sw_export_k8s(f, ep, &ro, (unsigned)q->nodes, &x, &e))
        goto fail;
    if (x.rejected) {
        print_rejected(a, ep, x.check);
        rc = SW_EXIT_FAIL;
        goto out;
    }
    if (q->dir) {
        snprintf(file, sizeof(file), "%s/%s.k8s.yaml", q->dir, x.name);
        if (sw_out_dir(q->dir, &e) ||
            sw_write_file_atomic(file, sw_buf_cstr(&yaml), yaml.len, 0644, &e)) {
            e.code = SW_EIO;
            goto fail;
        }
        sw_json_set_str(x.doc, "written", file);
    }
    if (a->json) {
        sw_json_print(stdout, x.doc, true);
    } else {
        size_t i;
        json_t *w;
        print_waived(ep->name, x.check);
        json_array_foreach(json_object_get(x.doc, "warnings"), i, w)
            fprintf(stderr, "slipway: warning: %s\n", json_string_value(w));
        if (q->dir)
            printf("wrote %s\n", file);
        else
            fwrite(sw_buf_cstr(&yaml), 1, yaml.len, stdout);
    }
    goto out;
fail:
    rc = sw_cli_fail(&e, a->json);
out:
    json_decref(x.check);
    json_decref(x.doc);
    sw_buf_free(&yaml);
    if (opened)
        sw_ledger_close(&l);
    return rc;
}

/* The render and its lint as JSON: {unit, files, ..., written, lint: {findings, clean,
 * verified}}. Exit 1 when the lint found something. */
static int print_json(const struct sw_args *a, const struct req *q, const struct sw_unit_render *r,
                      const struct sw_unit_report *rep, bool verified)
{
    struct sw_err e;
    json_t *out = sw_unit_render_json(r);
    if (out && q->dir)
        sw_json_set_str(out, "written", q->dir);
    if (out && q->lint) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < rep->n; i++)
            json_array_append_new(
                arr, json_pack("{s:s,s:s,s:i,s:s}", "law", rep->v[i].law, "severity",
                               rep->v[i].severity == SW_UNIT_ERROR ? "error" : "warning", "line",
                               rep->v[i].line, "message", rep->v[i].msg));
        json_t *l = json_pack("{s:o,s:b,s:b}", "findings", arr ? arr : json_array(), "clean",
                              rep->n == 0, "verified", verified);
        sw_json_set_new(out, "lint", l);
    }
    if (!out) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        return sw_cli_fail(&e, a->json);
    }
    sw_json_print(stdout, out, true);
    json_decref(out);
    return rep->n ? SW_EXIT_FAIL : SW_EXIT_OK;
}

/* The files (secrets as ***) or where they were written, and the lint's findings. Exit 1 when
 * the lint found something. */
static int print_human(const struct req *q, const struct sw_unit_render *r,
                       const struct sw_unit_report *rep, bool verified)
{
    for (size_t i = 0; i < r->n_warnings; i++)
        fprintf(stderr, "slipway: warning: %s\n", r->warnings[i]);
    if (q->dir)
        printf("wrote %s/%s (0644) and %s/%s (0600)\n", q->dir, r->service.name, q->dir,
               r->env.name);
    else
        printf("### %s (mode 0644)\n%s\n### %s (mode 0600, secrets shown as ***; install to "
               "%s)\n%s",
               r->service.name, r->service.shown, r->env.name, r->env_path, r->env.shown);
    if (!q->lint)
        return SW_EXIT_OK;
    for (size_t i = 0; i < rep->n; i++)
        printf("%s:%d: %s: %s%s\n", r->service.name, rep->v[i].line, rep->v[i].law,
               rep->v[i].severity == SW_UNIT_WARNING ? "warning: " : "", rep->v[i].msg);
    if (rep->n)
        printf("lint: %zu finding%s\n", rep->n, rep->n == 1 ? "" : "s");
    else
        printf("lint: %s is clean (%s)\n", r->service.name,
               verified ? "systemd-analyze verify said nothing"
                        : "not verified: the host is remote; install verifies it there");
    return rep->n ? SW_EXIT_FAIL : SW_EXIT_OK;
}

/* The systemd unit: rendered, linted (--lint: parsed back and held to the unit laws;
 * systemd-analyze verify when the host is this machine), written (--out) and printed. */
static int render_systemd(const struct sw_args *a, const struct req *q, const struct sw_fleet *f,
                          const struct sw_fleet_endpoint *ep)
{
    struct sw_err e;
    struct sw_unit_render r;
    struct sw_unit *u = NULL;
    struct sw_unit_report rep = {0};
    struct sw_unit_lint_opts lo = {0};
    int rc;
    sw_err_clear(&e);
    memset(&r, 0, sizeof(r));
    if (sw_unit_render_endpoint(f, ep, &r, &e))
        goto fail;
    lo.verify = q->lint && ep->host && ep->host->transport == SW_FLEET_LOCAL;
    if (q->lint &&
        (sw_unit_parse(r.service.text, r.service.len, r.service.name, r.env.text, &u, &e) ||
         sw_unit_lint(u, &lo, &rep, &e)))
        goto fail;
    if (q->dir && sw_unit_render_write(&r, q->dir, &e)) {
        e.code = SW_EIO; /* the render was fine: writing it failed */
        goto fail;
    }
    rc = a->json ? print_json(a, q, &r, &rep, lo.verify) : print_human(q, &r, &rep, lo.verify);
    goto out;
fail:
    rc = sw_cli_fail(&e, a->json);
out:
    sw_unit_report_free(&rep);
    sw_unit_free(u);
    sw_unit_render_free(&r);
    return rc;
}

/* --watch: watch's own unit (src/watch/unit.c) for this machine. */
static int render_watch(const struct sw_args *a)
{
    struct sw_err e;
    struct sw_buf b;
    char exe[PATH_MAX], fleet[PATH_MAX], ledger[PATH_MAX];
    const char *lp = NULL;
    const char *dir = sw_args_str(a, "out");
    int rc = SW_EXIT_OK;
    sw_err_clear(&e);
    if (a->npos > 0)
        return sw_args_usage(a, "--watch renders the supervisor of the whole fleet: no ENDPOINT");
    struct sw_cli_fleet fl;
    if ((rc = sw_cli_fleet(a, 0, 0, &fl)))
        return rc;
    if ((rc = sw_cli_watch_paths(a, fl.path, exe, fleet, ledger, &lp)))
        return rc;
    sw_buf_init(&b, 1u << 16);
    if (sw_watch_unit_render(exe, fleet, lp, sw_args_str(a, "metrics"), &b, &e)) {
        rc = sw_cli_fail(&e, a->json);
        goto out;
    }
    if (dir) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/slipway-watch.service", dir);
        if (sw_write_file_atomic(path, b.data, b.len, 0644, &e)) {
            rc = sw_cli_fail(&e, a->json);
            goto out;
        }
        if (!a->json)
            printf("wrote %s\n", path);
    }
    if (a->json) {
        json_t *j = json_object();
        sw_json_set_str(j, "unit", "slipway-watch.service");
        sw_json_set_str(j, "text", sw_buf_cstr(&b));
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else if (!dir) {
        fwrite(b.data, 1, b.len, stdout);
    }
out:
    sw_buf_free(&b);
    return rc;
}

int sw_cmd_render(int argc, char **argv)
{
    struct sw_args a;
    struct req q;
    struct sw_err e;
    struct sw_fleet *f = NULL;
    const struct sw_fleet_endpoint *ep = NULL;
    int rc = SW_EXIT_OK;
    memset(&q, 0, sizeof(q));
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_render, argc, argv, &a, &rc))
        return rc;
    if (sw_args_flag(&a, "watch"))
        return render_watch(&a);
    if (sw_args_str(&a, "metrics"))
        return sw_args_usage(&a, "--metrics goes with --watch");
    rc = read_opts(&a, &q);
    if (rc)
        return rc;
    if (sw_fleet_load(q.fleet_path, NULL, &f, &e) || sw_fleet_find_endpoint(f, q.name, &ep, &e)) {
        rc = sw_cli_fail(&e, a.json);
        goto out;
    }
    if (q.k8s && q.nodes && ep->nodes.set && q.nodes != ep->nodes.v) {
        rc = sw_args_usage(&a, "--nodes %lu conflicts with the fleet's nodes: %llu (%s:%d:%d)",
                           q.nodes, (unsigned long long)ep->nodes.v,
                           ep->nodes.at.file ? ep->nodes.at.file : q.fleet_path, ep->nodes.at.line,
                           ep->nodes.at.col);
    } else if (q.k8s) {
        rc = render_k8s(&a, &q, f, ep);
    } else if (sw_fleet_endpoint_nodes(ep) > 1) {
        sw_err_set(&e, SW_EUNSUPPORTED,
                   "%s: the endpoint spans %llu nodes (nodes:): one host's systemd unit cannot "
                   "serve it; use --target k8s",
                   ep->name, (unsigned long long)sw_fleet_endpoint_nodes(ep));
        rc = sw_cli_fail(&e, a.json);
    } else {
        rc = render_systemd(&a, &q, f, ep);
    }
out:
    sw_fleet_free(f);
    return rc;
}
