/*
 * slipway export harness|harness-models|llama-swap|prometheus [--fleet FILE] [--ledger PATH] [--out FILE] [--json]
 *
 *   harness     each endpoint's contextWindow (its real window from the plan) and the compaction
 *               request checked against the compaction endpoint's window; JSON always
 *   llama-swap  a llama-swap config (YAML) per host, every enabled endpoint (llama-server, vLLM,
 *               SGLang; a container's podman run), its devices kept in env; --out DIR writes
 *               DIR/HOST.yaml each, else the hosts' configs as `---`-separated documents
 *   prometheus  a textfile-collector file (Prometheus text exposition) of the fleet's state
 *
 * --out FILE writes atomically (temp + rename), mode 0644. --json wraps the text kinds as
 * {"kind", "text"}. Exit: 0 written, 1 the harness contract does not hold (a window exceeded, a
 * compaction request that does not fit: the export is still written) or the file could not be
 * written, 2 unusable input.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/report.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const struct sw_opt opts[] = {
    {"ledger", 0, "PATH", 0, "the ledger (default: beside the fleet file)", NULL},
    {"no-ledger", 0, NULL, 0,
     "read no ledger: the fleet and its plans alone (no measured figures, no restarts)", NULL},
    {"out", 'o', "FILE", 0, "write the export to FILE atomically (mode 0644) instead of stdout",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway export harness --fleet examples/operator.yaml",
    "slipway export llama-swap --out /etc/llama-swap/config.yaml",
    "slipway export prometheus --out /var/lib/node_exporter/textfile/slipway.prom",
    NULL,
};

const struct sw_cmd_spec sw_spec_export = {
    .name = "export",
    .summary = "write the fleet for the tools around it: harness, llama-swap, prometheus",
    .synopsis = "harness|harness-models|llama-swap|prometheus [--fleet FILE] [--ledger PATH | "
                "--no-ledger]\n"
                "    [--out FILE] [--json]",
    .about = "harness: each endpoint's contextWindow = its real window (the plan's slot or\n"
             "request window) and the compaction request (ratio x window + summary budget)\n"
             "against the compaction endpoint's window. llama-swap: a config for the llama.cpp\n"
             "endpoints from their rendered argv. prometheus: a textfile-collector file.\n"
             "The fleet: --fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml.\n"
             "Exit: 0 written, 1 the harness contract\n"
             "does not hold (still written) or writing failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

/* `export harness --out FILE`: the harness's own models.yml form beside FILE. */
static int models_beside(const json_t *doc, const char *fleet, const char *outp, bool json,
                         struct sw_err *e)
{
    char dir[4096], yp[4200];
    snprintf(dir, sizeof(dir), "%s", outp);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    snprintf(yp, sizeof(yp), "%s/models.yml", slash ? dir : ".");
    struct sw_buf y;
    sw_buf_init(&y, 16u << 20);
    int rc = sw_export_harness_models_yml(doc, fleet, &y, e);
    if (!rc)
        rc = sw_write_file_atomic(yp, sw_buf_cstr(&y), y.len, 0644, e);
    sw_buf_free(&y);
    if (rc) {
        e->code = SW_EIO;
        return rc;
    }
    if (!json)
        printf("wrote %s\n", yp);
    return 0;
}

/* `export llama-swap --out DIR`: one config per host with enabled endpoints, DIR/HOST.yaml,
 * each written atomically (b is the scratch buffer). */
static int llama_swap_dir(const struct sw_fleet *f, const struct sw_report_opts *ro,
                          const char *outp, struct sw_buf *b, bool json, struct sw_err *e)
{
    for (size_t h = 0; h < f->n_hosts; h++) {
        bool any = false;
        for (size_t i = 0; i < f->n_endpoints; i++)
            any |= f->endpoints[i].enabled && f->endpoints[i].host == &f->hosts[h];
        if (!any)
            continue;
        char hp[4096];
        snprintf(hp, sizeof(hp), "%s/%s.yaml", outp, f->hosts[h].name);
        sw_buf_reset(b);
        int rc = sw_export_llama_swap_host(f, f->hosts[h].name, ro, b, e);
        if (rc)
            return rc;
        if ((rc = sw_write_file_atomic(hp, sw_buf_cstr(b), b->len, 0644, e))) {
            e->code = SW_EIO;
            return rc;
        }
        if (!json)
            printf("wrote %s (%zu bytes)\n", hp, b->len);
    }
    if (json) {
        json_t *j = json_pack("{s:s,s:s,s:b}", "kind", "llama-swap", "written", outp, "ok", 1);
        sw_json_print(stdout, j, true);
        json_decref(j);
    }
    return 0;
}

int sw_cmd_export(int argc, char **argv)
{
    struct sw_args a;
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_ledger l;
    struct sw_buf b;
    json_t *doc = NULL;
    bool opened = false, contract_ok = true;
    char path[4096];
    int rc = SW_EXIT_OK;

    memset(&l, 0, sizeof(l));
    sw_err_clear(&e);
    sw_buf_init(&b, 64u << 20);
    if (!sw_args_parse(&sw_spec_export, argc, argv, &a, &rc))
        return rc;
    if (a.npos < 1)
        return sw_args_usage(&a, "name what to export: harness, llama-swap or prometheus");
    const char *kind = a.pos[0];
    if (strcmp(kind, "harness") && strcmp(kind, "harness-models") && strcmp(kind, "llama-swap") &&
        strcmp(kind, "prometheus"))
        return sw_args_usage(
            &a, "unknown export '%s' (harness, harness-models, llama-swap, prometheus)", kind);
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 1, 0, &fl);
    if (rc)
        return rc;
    const char *fleet = fl.path;
    const char *ledger = sw_args_str(&a, "ledger"), *outp = sw_args_str(&a, "out");
    if (outp && !*outp)
        return sw_args_usage(&a, "--out: want a file");
    static const char *const uses[] = {"ledger", NULL};
    rc = sw_cli_no_ledger(&a, uses);
    if (rc)
        return rc;

    if (sw_fleet_load(fleet, NULL, &f, &e))
        goto fail;
    if (!sw_args_flag(&a, "no-ledger") &&
        sw_report_ledger_open(&l, ledger, fleet, &opened, path, sizeof(path), &e))
        goto fail;
    struct sw_report_opts ro = {.ledger = opened ? &l : NULL};

    if (!strcmp(kind, "harness")) {
        if (sw_export_harness(f, &ro, &doc, &e))
            goto fail;
        contract_ok = json_is_true(json_object_get(doc, "ok"));
        char *t = sw_json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
        if (!t || sw_buf_puts(&b, t) || sw_buf_putc(&b, '\n')) {
            sw_free(t);
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            goto fail;
        }
        sw_free(t);
        if (outp && models_beside(doc, fleet, outp, a.json, &e))
            goto fail;
    } else if (!strcmp(kind, "harness-models")) {
        if (sw_export_harness(f, &ro, &doc, &e))
            goto fail;
        contract_ok = json_is_true(json_object_get(doc, "ok"));
        if (sw_export_harness_models_yml(doc, fleet, &b, &e))
            goto fail;
    } else if (!strcmp(kind, "llama-swap")) {
        struct stat st;
        if (outp && !stat(outp, &st) && S_ISDIR(st.st_mode)) {
            if (llama_swap_dir(f, &ro, outp, &b, a.json, &e))
                goto fail;
            goto out;
        }
        if (sw_export_llama_swap(f, &ro, &b, &e))
            goto fail;
    } else {
        json_t *rep = NULL;
        if (sw_report_collect(f, &ro, &rep, &e))
            goto fail;
        int prc = sw_export_prometheus(rep, &b, &e);
        json_decref(rep);
        if (prc)
            goto fail;
    }
    if (outp) {
        if (sw_write_file_atomic(outp, sw_buf_cstr(&b), b.len, 0644, &e)) {
            e.code = SW_EIO;
            goto fail;
        }
        if (a.json) {
            json_t *j =
                json_pack("{s:s,s:s,s:b}", "kind", kind, "written", outp, "ok", contract_ok);
            sw_json_print(stdout, j, true);
            json_decref(j);
        } else {
            printf("wrote %s (%zu bytes)\n", outp, b.len);
        }
    } else if (a.json && strcmp(kind, "harness")) {
        json_t *j = json_pack("{s:s,s:s%}", "kind", kind, "text", sw_buf_cstr(&b), b.len);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        fwrite(sw_buf_cstr(&b), 1, b.len, stdout);
    }
    if (!contract_ok) {
        if (!a.json)
            fprintf(stderr, "slipway export: the harness contract does not hold (a window is "
                            "exceeded or a compaction request does not fit)\n");
        rc = SW_EXIT_FAIL;
    }
    goto out;
fail:
    rc = sw_cli_fail(&e, a.json);
out:
    json_decref(doc);
    sw_buf_free(&b);
    if (opened)
        sw_ledger_close(&l);
    sw_fleet_free(f);
    return rc;
}
