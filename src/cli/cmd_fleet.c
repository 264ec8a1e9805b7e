/*
 * slipway fleet show FLEET.yaml [ENDPOINT] [--json]
 * slipway fleet check FLEET.yaml [--json]
 * slipway fleet names [--fleet FILE]   (hidden: what the shell completion offers for ENDPOINT)
 *
 * show: the hosts, devices, profiles and endpoints (engine, payload, shape, knobs, measured facts,
 * known-bad rules, env-file imports with where each value came from) and the harness.
 * check: every mistake in the file as file:line:col: what and why, then the warnings.
 * names: the fleet's endpoint names, one a line, from the fleet every verb would read (--fleet,
 * $SLIPWAY_FLEET, ./fleet.yaml); the completion script calls it with stderr discarded.
 * Exit: 0 the file loads, 2 it does not (or bad usage), 1 for anything else that failed.
 * The caller's environment takes part in env-file imports, as the operator's scripts do.
 */
#include "cli.h"

#include <slipway/fleet.h>

#include <inttypes.h>
#include <string.h>

static const struct sw_opt no_opts[] = {{0}};

static const char *const show_examples[] = {
    "slipway fleet show examples/operator.yaml",
    "slipway fleet show examples/operator.yaml frank-primary --json",
    NULL,
};

static const char *const check_examples[] = {
    "slipway fleet check examples/operator.yaml",
    "slipway fleet check --json fleet.yaml",
    NULL,
};

static const struct sw_cmd_spec spec_show = {
    .name = "fleet show",
    .summary = "print the hosts, devices, profiles, endpoints and harness of a fleet file",
    .synopsis = "FLEET.yaml [ENDPOINT] [--json]",
    .about = "Env-file imports use the caller's environment (it wins over the env file).",
    .opts = no_opts,
    .max_args = 2,
    .examples = show_examples,
};

static const struct sw_cmd_spec spec_check = {
    .name = "fleet check",
    .summary = "report every mistake as file:line:col: what and why",
    .synopsis = "FLEET.yaml [--json]",
    .about = "Exit 0 the file loads (warnings on stderr), 2 it does not. Under --json a file\n"
             "that does not load prints {\"error\": {...}} (the first mistake, as every verb\n"
             "prints an error) with \"errors\": every mistake.",
    .opts = no_opts,
    .max_args = 1,
    .examples = check_examples,
};

static const struct sw_cmd_spec spec_names = {
    .name = "fleet names",
    .summary = "the fleet's endpoint names, one a line (for shell completion)",
    .synopsis = "[--fleet FILE]",
    .opts = no_opts,
    .max_args = 0,
    .hidden = true,
    .fleet = true,
};

static const struct sw_cmd_spec *const subs[] = {&spec_show, &spec_check, &spec_names, NULL};

const struct sw_cmd_spec sw_spec_fleet = {
    .name = "fleet",
    .summary = "show or check a fleet file (hosts, devices, endpoints, shapes)",
    .opts = no_opts,
    .max_args = -1,
    .subs = subs,
};

struct collect {
    json_t *errors; /* --json */
    bool json;
    int n;
};

static void on_error(void *ctx, const struct sw_err *e)
{
    struct collect *c = ctx;
    char buf[2048];
    c->n++;
    if (c->json) {
        json_t *j = sw_err_to_json(e);
        if (j && json_array_append_new(c->errors, j))
            json_decref(j);
        return;
    }
    fprintf(stderr, "%s\n", sw_err_format(e, buf, sizeof(buf)));
}

static void print_shape(const char *indent, const struct sw_fleet_shape *s)
{
    size_t nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    for (size_t i = 0; i < nf; i++) {
        struct sw_fleet_value v;
        char buf[128];
        sw_fleet_shape_get(s, fs[i].name, &v);
        if (!v.at.file)
            continue;
        printf("%s%-24s %s\n", indent, fs[i].name,
               v.set ? sw_fleet_value_text(&v, buf, sizeof(buf)) : "off");
    }
}

/* The endpoint's first line (engine, profile, host, devices) and where it is reached, its alias,
 * image, binary and key's reference. */
static void print_head(const struct sw_fleet_endpoint *ep)
{
    printf("\nendpoint %s%s: %s", ep->name, ep->enabled ? "" : " (disabled: kept for the record)",
           sw_fleet_engine_name(ep->engine));
    if (ep->engine_version.v)
        printf(" %s", ep->engine_version.v);
    if (ep->profile)
        printf(" with profile %s", ep->profile->name);
    printf(" on %s [", ep->host ? ep->host->name : "?");
    for (size_t i = 0; i < ep->n_devices; i++)
        printf("%s%s", i ? ", " : "", ep->devices[i]->name);
    printf("]\n");
    struct sw_fleet_addr ad;
    if (sw_fleet_endpoint_addr(ep, &ad, NULL) == 0)
        printf("  listen     %s%s%s:%u%s, reached %s%s (%s)\n", strchr(ad.bind, ':') ? "[" : "",
               ad.bind, strchr(ad.bind, ':') ? "]" : "", ad.port,
               ad.port_default ? " (the engine's default port)" : "",
               ad.route == SW_FLEET_ROUTE_HOST ? "through its host at " : "at ", ad.url, ad.why);
    if (ep->alias.v)
        printf("  alias      %s\n", ep->alias.v);
    if (ep->image.v)
        printf("  image      %s (%s)\n", ep->image.v,
               ep->image_pinned ? "pinned by digest" : "NOT pinned by digest");
    if (ep->binary.v)
        printf("  binary     %s\n", ep->binary.v);
    if (ep->api_key.kind)
        printf("  api_key    from %s %s\n",
               ep->api_key.kind == SW_FLEET_SECRET_ENV ? "env" : "file", ep->api_key.ref);
}

static void print_payload(const struct sw_fleet_payload *p)
{
    char a[128];
    if (p->source) {
        printf("  payload    %s", p->path.v ? p->path.v : p->repo.v);
        if (p->path.v && p->repo.v)
            printf(" (from %s%s%s)", p->repo.v, p->revision.v ? "@" : "",
                   p->revision.v ? p->revision.v : "");
        printf("\n");
    }
    if (p->gguf.v)
        printf("  gguf       %s\n", p->gguf.v);
    if (p->mmproj.v || p->mmproj.off)
        printf("  mmproj     %s\n", p->mmproj.v ? p->mmproj.v : "off (text-only)");
    if (p->draft.v)
        printf("  draft      %s\n", p->draft.v);
    if (p->quantization.v)
        printf("  quant      %s\n", p->quantization.v);
    if (p->shards.set)
        printf("  shards     %s\n", sw_fleet_u64_text(&p->shards, false, a, sizeof(a)));
    for (size_t i = 0; i < p->n_mounts; i++)
        printf("  mount      %s -> %s%s\n", p->mounts[i].host_path, p->mounts[i].container_path,
               p->mounts[i].readonly ? " (ro)" : "");
}

/* Extra args, the environment (secrets by reference) and the env file's imports, each with
 * where its value came from. */
static void print_env(const struct sw_fleet_endpoint *ep)
{
    if (ep->n_args) {
        printf("  args      ");
        for (size_t i = 0; i < ep->n_args; i++)
            printf(" %s", ep->args[i].v);
        printf("\n");
    }
    for (size_t i = 0; i < ep->n_env; i++) {
        if (ep->env[i].secret.kind)
            printf("  env        %s from %s %s\n", ep->env[i].name,
                   ep->env[i].secret.kind == SW_FLEET_SECRET_ENV ? "env" : "file",
                   ep->env[i].secret.ref);
        else
            printf("  env        %s=%s\n", ep->env[i].name, ep->env[i].value);
    }
    if (!ep->env_file)
        return;
    printf("  env file   %s\n", ep->env_file->path);
    for (size_t i = 0; i < ep->n_imports; i++) {
        const struct sw_fleet_import *im = &ep->imports[i];
        const char *from = im->from == SW_FLEET_FROM_ENVIRON ? "the environment"
                           : im->from == SW_FLEET_FROM_FILE  ? "the env file"
                                                             : "fleet file (unset elsewhere)";
        if (im->from == SW_FLEET_FROM_FILE)
            printf("    %-14s -> %-28s = %-12s (%s:%d:%d)\n", im->key, im->field,
                   im->value && *im->value ? im->value : "(empty: off)", im->at.file, im->at.line,
                   im->at.col);
        else
            printf("    %-14s -> %-28s = %-12s (%s)\n", im->key, im->field,
                   im->value ? (*im->value ? im->value : "(empty: off)") : "-", from);
    }
}

/* The knobs tune may turn, the frozen fields, the free band. */
static void print_knobs(const struct sw_fleet_endpoint *ep)
{
    char a[128], b[128];
    for (size_t i = 0; i < ep->n_knobs; i++) {
        const struct sw_fleet_knob *k = &ep->knobs[i];
        printf("  knob       %-24s ", k->name);
        if (k->is_range) {
            printf("%s .. %s", sw_fleet_value_text(&k->min, a, sizeof(a)),
                   sw_fleet_value_text(&k->max, b, sizeof(b)));
            if (k->step.set)
                printf(" step %s", sw_fleet_value_text(&k->step, a, sizeof(a)));
        } else {
            for (size_t j = 0; j < k->n_values; j++)
                printf("%s%s", j ? ", " : "", sw_fleet_value_text(&k->values[j], a, sizeof(a)));
        }
        printf("\n");
    }
    if (ep->n_frozen) {
        printf("  frozen    ");
        for (size_t i = 0; i < ep->n_frozen; i++)
            printf(" %s", ep->frozen[i].name);
        printf("\n");
    }
    if (ep->free_band.min.set)
        printf("  free band  %s .. %s per device\n",
               sw_fmt_bytes(ep->free_band.min.v, a, sizeof(a)),
               sw_fmt_bytes(ep->free_band.max.v, b, sizeof(b)));
}

/* What was measured: facts, and the boots the fleet records with their shapes. */
static void print_measured(const struct sw_fleet_endpoint *ep)
{
    char a[128], b[128];
    for (size_t i = 0; i < ep->n_facts; i++) {
        const struct sw_fleet_fact *fa = &ep->facts[i];
        printf("  measured   %s = %s", fa->name, fa->q.text);
        if (fa->date)
            printf(" (%s)", fa->date);
        if (fa->source)
            printf(": %s", fa->source);
        printf("\n");
    }
    for (size_t i = 0; i < ep->n_boots; i++) {
        const struct sw_fleet_boot *bt = &ep->boots[i];
        printf("  boot       %-8s", bt->outcome);
        size_t nf;
        const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
        for (size_t k = 0; k < nf; k++) {
            struct sw_fleet_value v;
            sw_fleet_shape_get(&bt->shape, fs[k].name, &v);
            if (v.set)
                printf(" %s=%s", fs[k].name, sw_fleet_value_text(&v, a, sizeof(a)));
        }
        if (bt->mmproj.set)
            printf(" mmproj=%s", bt->mmproj.v ? "yes" : "no");
        if (bt->used.set && bt->total.set)
            printf("  used %s of %s MiB", sw_fmt_count(bt->used.v / SW_MIB, a, sizeof(a)),
                   sw_fmt_count(bt->total.v / SW_MIB, b, sizeof(b)));
        if (bt->free.set)
            printf(", %s MiB free", sw_fmt_count(bt->free.v / SW_MIB, a, sizeof(a)));
        if (bt->failure)
            printf("  [%s]", bt->failure);
        printf("\n");
    }
}

static void print_known_bad(const struct sw_fleet_endpoint *ep)
{
    char a[128];
    for (size_t i = 0; i < ep->n_known_bad; i++) {
        const struct sw_fleet_rule *r = &ep->known_bad[i];
        printf("  known bad ");
        for (size_t j = 0; j < r->n_conds; j++) {
            const struct sw_fleet_cond *c = &r->conds[j];
            printf("%s%s %s ", j ? "&& " : " ", c->field->name, sw_fleet_op_name(c->op));
            if (c->op == SW_FLEET_IN) {
                printf("[");
                for (size_t q = 0; q < c->n_in; q++)
                    printf("%s%s", q ? ", " : "", sw_fleet_value_text(&c->in[q], a, sizeof(a)));
                printf("] ");
            } else {
                printf("%s ", sw_fleet_value_text(&c->v, a, sizeof(a)));
            }
        }
        if (r->failure)
            printf("(%s)", r->failure);
        printf("\n");
        if (r->text)
            printf("             \"%.160s%s\"\n", r->text, strlen(r->text) > 160 ? "..." : "");
    }
}

static void print_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep)
{
    char a[128];
    print_head(ep);
    print_payload(&ep->payload);
    printf("  shape\n");
    print_shape("    ", &ep->shape);
    print_env(ep);
    print_knobs(ep);
    print_measured(ep);
    print_known_bad(ep);
    if (ep->arch)
        printf("  arch       declared inline (%zu keys)\n", json_object_size(ep->arch));
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(f, ep);
    if (cw)
        printf("  client     contextWindow %s\n", sw_fleet_u64_text(cw, false, a, sizeof(a)));
    if (ep->note.v)
        printf("  note       %s\n", ep->note.v);
}

static void print_fleet(const struct sw_fleet *f, const char *only)
{
    char a[64], b[64];
    if (!only) {
        printf("fleet %s: %zu host%s, %zu profile%s, %zu endpoint%s\n", f->path, f->n_hosts,
               f->n_hosts == 1 ? "" : "s", f->n_profiles, f->n_profiles == 1 ? "" : "s",
               f->n_endpoints, f->n_endpoints == 1 ? "" : "s");
        for (size_t i = 0; i < f->n_hosts; i++) {
            const struct sw_fleet_host *h = &f->hosts[i];
            printf("\nhost %s: ", h->name);
            if (h->transport == SW_FLEET_SSH)
                printf("ssh %s%s%s:%" PRIu64 "%s%s\n", h->user.v ? h->user.v : "",
                       h->user.v ? "@" : "", h->address.v, h->port.set ? h->port.v : 22,
                       h->identity_file.v ? " key " : "",
                       h->identity_file.v ? h->identity_file.v : "");
            else
                printf("local\n");
            for (size_t k = 0; k < h->n_devices; k++) {
                const struct sw_fleet_device *d = &h->devices[k];
                printf("  device %-10s %-10s", d->name, d->kind.v ? d->kind.v : "?");
                if (d->memory_total.set)
                    printf(" total %s", sw_fmt_bytes(d->memory_total.v, a, sizeof(a)));
                if (d->memory_usable.set)
                    printf(" usable %s", sw_fmt_bytes(d->memory_usable.v, b, sizeof(b)));
                if (d->bandwidth.set)
                    printf(" %s/s", sw_fmt_bytes(d->bandwidth.v, a, sizeof(a)));
                if (d->unified_memory.set && d->unified_memory.v)
                    printf(" unified memory");
                printf("\n");
            }
        }
        for (size_t i = 0; i < f->n_profiles; i++) {
            const struct sw_fleet_profile *p = &f->profiles[i];
            printf("\nprofile %s: extends the %s law\n", p->name, sw_fleet_engine_name(p->base));
            for (size_t k = 0; k < p->n_consts; k++)
                printf("  %-28s %-18s = %.15g %s\n", p->consts[k].name, p->consts[k].q.text,
                       p->consts[k].q.value, p->consts[k].q.unit);
            if (p->terms)
                printf("  terms declared (%s)\n", json_is_array(p->terms) ? "list" : "mapping");
        }
    }
    for (size_t i = 0; i < f->n_endpoints; i++)
        if (!only || !strcmp(only, f->endpoints[i].name))
            print_endpoint(f, &f->endpoints[i]);
    if (!only && f->harness.present) {
        const struct sw_fleet_harness *h = &f->harness;
        printf("\nharness: contextWindow %s",
               sw_fleet_u64_text(&h->context_window, false, a, sizeof(a)));
        if (h->compaction_ratio.set)
            printf(", compaction at %.2f", h->compaction_ratio.v);
        if (h->summary_budget.set)
            printf(" + %s-token summary",
                   sw_fleet_u64_text(&h->summary_budget, false, b, sizeof(b)));
        if (h->compaction_endpoint)
            printf(", served by %s", h->compaction_endpoint->name);
        printf("\n");
        for (size_t i = 0; i < h->n_clients; i++)
            printf("  %s: contextWindow %s\n", h->clients[i].endpoint->name,
                   sw_fleet_u64_text(&h->clients[i].context_window, false, a, sizeof(a)));
    }
    if (f->n_warnings) {
        printf("\nwarnings:\n");
        for (size_t i = 0; i < f->n_warnings; i++) {
            const struct sw_fleet_at *at = &f->warnings[i].at;
            if (at->file && at->line)
                printf("  %s:%d:%d: %s\n", at->file, at->line, at->col, f->warnings[i].msg);
            else
                printf("  %s\n", f->warnings[i].msg);
        }
    }
}

/* `fleet names`: quick and quiet, for the completion script. */
static int fleet_names(const struct sw_args *a)
{
    struct sw_cli_fleet fl;
    int rc = sw_cli_fleet(a, 0, SW_CLI_FLEET_LOAD | SW_CLI_FLEET_QUIET, &fl);
    if (rc)
        return rc;
    for (size_t i = 0; i < fl.fleet->n_endpoints; i++)
        printf("%s\n", fl.fleet->endpoints[i].name);
    sw_fleet_free(fl.fleet);
    return SW_EXIT_OK;
}

int sw_cmd_fleet(int argc, char **argv)
{
    const struct sw_cmd_spec *sub;
    struct sw_args a;
    int exit_code;
    if (!sw_args_parse_sub(&sw_spec_fleet, argc, argv, &sub, &a, &exit_code))
        return exit_code;
    if (sub == &spec_names)
        return fleet_names(&a);
    bool json = a.json, check = sub == &spec_check;
    if (!a.npos)
        return sw_args_usage(&a, "which fleet file?");
    const char *path = a.pos[0], *only = a.npos > 1 ? a.pos[1] : NULL;

    struct collect col = {.json = json, .errors = json ? json_array() : NULL};
    if (json && !col.errors)
        return SW_EXIT_FAIL;
    struct sw_fleet_opts opts = {.on_error = on_error, .on_error_ctx = &col};
    struct sw_fleet *f = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_fleet_load(path, &opts, &f, &e);
    exit_code = SW_EXIT_OK;
    if (rc) {
        exit_code = sw_cli_exit_for(rc);
        if (json) {
            /* the shape every verb prints an error in: the first mistake (or the load's own
             * error when the file could not be read), then all of them */
            json_t *first = json_array_get(col.errors, 0);
            json_t *o = json_pack("{s:o,s:b,s:s,s:O,s:i}", "error",
                                  first ? json_incref(first) : sw_err_to_json(&e), "ok", 0, "path",
                                  path, "errors", col.errors, "error_count", col.n);
            if (o)
                sw_json_print(stdout, o, true);
            json_decref(o);
        } else {
            fprintf(stderr, "%s: %d error%s; nothing loaded\n", path, col.n, col.n == 1 ? "" : "s");
        }
        json_decref(col.errors);
        return exit_code;
    }
    json_decref(col.errors);
    if (only && !sw_fleet_endpoint(f, only)) {
        fprintf(stderr, "slipway fleet: %s has no endpoint '%s'\n", path, only);
        sw_fleet_free(f);
        return SW_EXIT_USAGE;
    }
    if (check) {
        if (json) {
            json_t *ws = json_array();
            for (size_t i = 0; ws && i < f->n_warnings; i++) {
                struct sw_err w;
                sw_fleet_err_at(&w, SW_OK, &f->warnings[i].at, "%s", f->warnings[i].msg);
                char buf[2048];
                json_array_append_new(ws, json_string(sw_err_format(&w, buf, sizeof(buf))));
            }
            json_t *o = json_pack("{s:b,s:s,s:[],s:o,s:I,s:I,s:I}", "ok", 1, "path", path, "errors",
                                  "warnings", ws ? ws : json_array(), "hosts",
                                  (json_int_t)f->n_hosts, "profiles", (json_int_t)f->n_profiles,
                                  "endpoints", (json_int_t)f->n_endpoints);
            if (o)
                sw_json_print(stdout, o, true);
            json_decref(o);
        } else {
            for (size_t i = 0; i < f->n_warnings; i++) {
                const struct sw_fleet_at *at = &f->warnings[i].at;
                if (at->file && at->line)
                    fprintf(stderr, "%s:%d:%d: warning: %s\n", at->file, at->line, at->col,
                            f->warnings[i].msg);
                else
                    fprintf(stderr, "warning: %s\n", f->warnings[i].msg);
            }
            printf("%s: ok: %zu host%s, %zu profile%s, %zu endpoint%s, %zu warning%s\n", path,
                   f->n_hosts, f->n_hosts == 1 ? "" : "s", f->n_profiles,
                   f->n_profiles == 1 ? "" : "s", f->n_endpoints, f->n_endpoints == 1 ? "" : "s",
                   f->n_warnings, f->n_warnings == 1 ? "" : "s");
        }
    } else if (json) {
        json_t *o = sw_fleet_to_json(f);
        if (!o) {
            sw_fleet_free(f);
            return SW_EXIT_FAIL;
        }
        if (only) {
            json_t *eps = json_object_get(o, "endpoints");
            size_t i;
            json_t *one = NULL, *it;
            json_array_foreach(eps, i, it)
            {
                if (!strcmp(json_string_value(json_object_get(it, "name")), only))
                    one = it;
            }
            sw_json_print(stdout, one, true);
        } else {
            sw_json_print(stdout, o, true);
        }
        json_decref(o);
    } else {
        print_fleet(f, only);
    }
    sw_fleet_free(f);
    return exit_code;
}
