/*
 * slipway render ENDPOINT [FLEET.yaml] [--out DIR] [--json]
 *
 *   Render an endpoint as a systemd service (include/slipway/unit.h): the unit, its environment
 *   file and, for a container, the container's argv. The human view prints both files (secret
 *   values shown as ***); --out DIR writes NAME.service and NAME.env (0600, with the secrets)
 *   whole or not at all; --json prints {unit, files: [{name, mode, text}], engine_argv,
 *   container: {argv, stop, image, pinned} | null, timing, warnings}.
 *
 * Exit: 0 rendered, 1 the files could not be written, 2 unusable input (a broken fleet, an
 * unknown endpoint, an endpoint that cannot be rendered: a path outside its mounts...).
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ledger.h>
#include <slipway/unit.h>
#include <slipway/unit_k8s.h>
#include <slipway/unit_lint.h>

#include <stdio.h>
#include <string.h>

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
    {"nodes", 0, "N", 0,
     "k8s, vLLM: serve across N nodes as a LeaderWorkerSet (the leader runs the Ray head and\n"
     "the engine, N-1 workers join it; the plan's tensor x pipeline parallel GPUs split evenly).\n"
     "Default: the endpoint's `nodes:` in the fleet; a different N is a usage error",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway render frank-primary examples/operator.yaml",
    "slipway render frank-small examples/operator.yaml --out /tmp/units",
    "slipway render local examples/local.yaml --json",
    "slipway render frank-primary examples/operator.yaml --lint",
    "slipway render --target k8s frank-primary examples/operator.yaml",
    "slipway render --target k8s big-amd fleet.yaml --nodes 2 --out k8s/",
    NULL,
};

const struct sw_cmd_spec sw_spec_render = {
    .name = "render",
    .summary = "render an endpoint as a systemd service: the unit, its env file, the container",
    .synopsis =
        "ENDPOINT [FLEET.yaml] [--out DIR] [--lint] [--json]\n"
        "--target k8s ENDPOINT [FLEET.yaml] [--ledger PATH] [--nodes N] [--out DIR] [--json]",
    .about = "Renders from the endpoint's plan (the one argv of its engine) and the fleet's\n"
             "runtime: (native, podman, docker) and service: settings. Secrets go only to the\n"
             "env file; printed text shows them as ***. The same fleet renders byte-identical\n"
             "files. FLEET.yaml defaults to ./fleet.yaml.\n"
             "Exit: 0 rendered, 1 the files could not be written or --lint found something,\n"
             "2 unusable input.",
    .opts = opts,
    .max_args = 2,
    .examples = examples,
};

/* --target k8s: the gates first (a shape `check` rejects is not rendered), then the objects. */
static int render_k8s(const struct sw_args *a, struct sw_fleet *f,
                      const struct sw_fleet_endpoint *ep, const char *fleet_path, unsigned nodes)
{
    struct sw_err e;
    struct sw_ledger l;
    bool opened = false;
    json_t *verdict = NULL, *doc = NULL;
    struct sw_buf b;
    char path[4096], file[4400];
    int rc = SW_EXIT_OK;
    const char *ledger = sw_args_str(a, "ledger"), *dir = sw_args_str(a, "out");
    memset(&l, 0, sizeof(l));
    sw_err_clear(&e);
    sw_buf_init(&b, 16u << 20);
    /* no ledger beside the fleet yet: figures from the fleet alone */
    struct sw_ledger_open_opts lo = {.readonly = true};
    if (sw_ledger_open_for(&l, ledger, fleet_path, &lo, SW_LEDGER_DEFAULT_MAY_BE_ABSENT, &opened,
                           path, sizeof(path), &e))
        goto fail;
    struct sw_gate_opts go = {.ledger = opened ? &l : NULL};
    if (sw_gate_endpoint(f, ep, &go, &verdict, &e))
        goto fail;
    const char *v = json_string_value(json_object_get(verdict, "verdict"));
    if (!v || strcmp(v, "pass")) {
        if (a->json) {
            json_t *j = json_pack("{s:b,s:O}", "rendered", false, "check", verdict);
            sw_json_print(stdout, j, true);
            json_decref(j);
        } else {
            fprintf(stderr, "slipway render: %s: the gates reject this shape; not rendered:\n",
                    ep->name);
            size_t i;
            json_t *g;
            json_array_foreach(json_object_get(verdict, "gates"), i, g)
            {
                const char *gv = json_string_value(json_object_get(g, "verdict"));
                if (gv && !strcmp(gv, "fail"))
                    fprintf(stderr, "  FAIL %s: %s\n",
                            json_string_value(json_object_get(g, "gate")),
                            json_string_value(json_object_get(g, "line")));
            }
        }
        rc = SW_EXIT_FAIL;
        goto out;
    }
    /* the slowest measured boot sizes the startupProbe */
    struct sw_k8s_opts ko = {.nodes = nodes};
    if (opened) {
        json_t *boots = NULL;
        struct sw_ledger_query q = {.endpoint = ep->name, .outcome = "ok"};
        if (!sw_ledger_boots(&l, &q, &boots, NULL)) {
            size_t i;
            json_t *bt;
            json_array_foreach(boots, i, bt)
            {
                json_int_t ms = json_integer_value(json_object_get(bt, "duration_ms"));
                if (ms > ko.boot_ms)
                    ko.boot_ms = ms;
            }
        }
        json_decref(boots);
    }
    if (sw_unit_render_k8s(f, ep, &ko, &doc, &e))
        goto fail;
    if (sw_unit_k8s_yaml(json_object_get(doc, "objects"), &b)) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        goto fail;
    }
    const char *nm = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(doc, "objects"), 0), "metadata"), "name"));
    if (dir) {
        snprintf(file, sizeof(file), "%s/%s.k8s.yaml", dir, nm ? nm : ep->name);
        if (sw_out_dir(dir, &e) || sw_write_file_atomic(file, sw_buf_cstr(&b), b.len, 0644, &e)) {
            e.code = SW_EIO;
            goto fail;
        }
        sw_json_set_str(doc, "written", file);
    }
    if (a->json) {
        sw_json_print(stdout, doc, true);
    } else {
        size_t i;
        json_t *w;
        json_array_foreach(json_object_get(doc, "warnings"), i, w)
            fprintf(stderr, "slipway: warning: %s\n", json_string_value(w));
        if (dir)
            printf("wrote %s\n", file);
        else
            fwrite(sw_buf_cstr(&b), 1, b.len, stdout);
    }
    goto out;
fail:
    rc = sw_cli_fail(&e, a->json);
out:
    sw_buf_free(&b);
    json_decref(doc);
    json_decref(verdict);
    if (opened)
        sw_ledger_close(&l);
    return rc;
}

int sw_cmd_render(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_unit_render r;
    json_t *out = NULL;
    struct sw_unit *u = NULL;
    struct sw_unit_report rep = {0};
    bool linted = false, verified = false;
    int rc = SW_EXIT_OK;

    sw_err_clear(&e);
    memset(&r, 0, sizeof(r));
    struct sw_args a;
    if (!sw_args_parse(&sw_spec_render, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    if (a.npos < 1)
        return sw_args_usage(&a, "name the ENDPOINT to render");
    const char *name = a.pos[0];
    const char *fleet_path = a.npos > 1 ? a.pos[1] : "fleet.yaml";
    const char *dir = sw_args_str(&a, "out");
    if (dir && !*dir)
        return sw_args_usage(&a, "--out: want a directory");
    const char *target = sw_args_str(&a, "target");
    bool k8s = target && !strcmp(target, "k8s");
    if (target && !k8s && strcmp(target, "systemd"))
        return sw_args_usage(&a, "--target: want systemd or k8s, got '%s'", target);
    if (k8s && sw_args_flag(&a, "lint"))
        return sw_args_usage(&a, "--lint is for the systemd unit (--target systemd)");
    if (!k8s && sw_args_str(&a, "ledger"))
        return sw_args_usage(&a, "--ledger goes with --target k8s");
    const char *ns = sw_args_str(&a, "nodes");
    unsigned long nodes = 0;
    if (ns) {
        char *end = NULL;
        nodes = strtoul(ns, &end, 10);
        if (!k8s)
            return sw_args_usage(&a, "--nodes goes with --target k8s");
        if (!*ns || !end || *end || nodes < 1 || nodes > 1024)
            return sw_args_usage(&a, "--nodes: want a count of nodes 1..1024, got '%s'", ns);
    }

    if (sw_fleet_load(fleet_path, NULL, &f, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    if (!ep) {
        char names[1024] = "";
        size_t o = 0;
        for (size_t i = 0; i < f->n_endpoints && o < sizeof(names); i++) {
            int w =
                snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", f->endpoints[i].name);
            if (w > 0)
                o += (size_t)w;
        }
        sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s' (the fleet has: %s)", fleet_path, name,
                   names);
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (k8s && nodes && ep->nodes.set && nodes != ep->nodes.v) {
        rc = sw_args_usage(&a, "--nodes %lu conflicts with the fleet's nodes: %llu (%s:%d:%d)",
                           nodes, (unsigned long long)ep->nodes.v,
                           ep->nodes.at.file ? ep->nodes.at.file : fleet_path, ep->nodes.at.line,
                           ep->nodes.at.col);
        goto out;
    }
    if (k8s) {
        rc = render_k8s(&a, f, ep, fleet_path, (unsigned)nodes);
        goto out;
    }
    if (sw_fleet_endpoint_nodes(ep) > 1) {
        sw_err_set(&e, SW_EUNSUPPORTED,
                   "%s: the endpoint spans %llu nodes (nodes:): one host's systemd unit cannot "
                   "serve it; use --target k8s",
                   ep->name, (unsigned long long)sw_fleet_endpoint_nodes(ep));
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (sw_unit_render_endpoint(f, ep, &r, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (sw_args_flag(&a, "lint")) {
        struct sw_unit_lint_opts lo = {0};
        lo.verify = ep->host && ep->host->transport == SW_FLEET_LOCAL;
        if (sw_unit_parse(r.service.text, r.service.len, r.service.name, r.env.text, &u, &e) ||
            sw_unit_lint(u, &lo, &rep, &e)) {
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        linted = true;
        verified = lo.verify;
    }
    if (dir && sw_unit_render_write(&r, dir, &e)) {
        e.code = SW_EIO; /* the render was fine: writing it failed */
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (json) {
        out = sw_unit_render_json(&r);
        if (out && dir)
            sw_json_set_str(out, "written", dir);
        if (out && linted) {
            json_t *arr = json_array();
            for (size_t i = 0; arr && i < rep.n; i++)
                json_array_append_new(
                    arr, json_pack("{s:s,s:s,s:i,s:s}", "law", rep.v[i].law, "severity",
                                   rep.v[i].severity == SW_UNIT_ERROR ? "error" : "warning", "line",
                                   rep.v[i].line, "message", rep.v[i].msg));
            json_t *l = json_pack("{s:o,s:b,s:b}", "findings", arr ? arr : json_array(), "clean",
                                  rep.n == 0, "verified", verified);
            sw_json_set_new(out, "lint", l);
        }
        if (!out) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        sw_json_print(stdout, out, true);
        if (rep.n)
            rc = SW_EXIT_FAIL;
        goto out;
    }
    for (size_t i = 0; i < r.n_warnings; i++)
        fprintf(stderr, "slipway: warning: %s\n", r.warnings[i]);
    if (dir)
        printf("wrote %s/%s (0644) and %s/%s (0600)\n", dir, r.service.name, dir, r.env.name);
    else
        printf("### %s (mode 0644)\n%s\n### %s (mode 0600, secrets shown as ***; install to "
               "%s)\n%s",
               r.service.name, r.service.shown, r.env.name, r.env_path, r.env.shown);
    if (linted) {
        for (size_t i = 0; i < rep.n; i++)
            printf("%s:%d: %s: %s%s\n", r.service.name, rep.v[i].line, rep.v[i].law,
                   rep.v[i].severity == SW_UNIT_WARNING ? "warning: " : "", rep.v[i].msg);
        if (rep.n)
            printf("lint: %zu finding%s\n", rep.n, rep.n == 1 ? "" : "s");
        else
            printf("lint: %s is clean (%s)\n", r.service.name,
                   verified ? "systemd-analyze verify said nothing"
                            : "not verified: the host is remote; install verifies it there");
        if (rep.n)
            rc = SW_EXIT_FAIL;
    }
out:
    json_decref(out);
    sw_unit_report_free(&rep);
    sw_unit_free(u);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    return rc;
}
