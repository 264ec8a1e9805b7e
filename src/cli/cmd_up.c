/*
 * slipway up [options] -- llama-server -m MODEL.gguf [llama-server flags]
 * slipway up [options] FLEET.yaml [ENDPOINT]
 *
 * Plan, render, start the engine supervised (its own process group, log captured), wait for
 * readiness, prove liveness with a real one-token generation, print the printed boot report and
 * the predicted-vs-printed diff, then serve in the foreground (Ctrl-C or SIGTERM stops it
 * cleanly) or --detach with a pid file for `slipway down`.
 *
 * Exit: 0 served and stopped cleanly / detached; 1 the boot failed (the failure is classified),
 * the endpoint is already running, or the engine died while serving; 2 unusable input.
 */
#include "cli.h"

#include <slipway/arch.h>
#include <slipway/deploy.h>
#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/gguf.h>
#include <slipway/ledger.h>
#include <slipway/memory.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_signal;

static void on_signal(int sig)
{
    g_stop = 1;
    g_signal = sig;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: slipway up [options] FLEET.yaml [ENDPOINT]\n"
            "       slipway up [options] -- llama-server -m MODEL.gguf [llama-server flags]\n"
            "options:\n"
            "  --detach            leave it running with a pid file (stop: slipway down)\n"
            "  --json              {url, pid, report, diff, ...} on stdout\n"
            "  --name NAME         endpoint name for the pid file and log (default: alias or "
            "llama-server-PORT)\n"
            "  --pid-file F        (default: RUN_DIR/NAME.pid)\n"
            "  --log F             engine output (default: RUN_DIR/NAME.log)\n"
            "  --timeout S         boot deadline in seconds (default 900)\n"
            "  --grace S           SIGTERM -> SIGKILL delay when stopping (default 10)\n"
            "  --limit-as BYTES    cap the engine's address space (RLIMIT_AS), e.g. 3GiB\n"
            "  --no-preflight      do not check port, payload and the plan against the fleet's\n"
            "                      declared device memory first: let the engine fail\n"
            "  --no-liveness       skip the one-token generation\n"
            "  --dry-run           print the command line (and the prediction) and stop\n"
            "  --record            record the boot (ok or failed) in the ledger\n"
            "  --ledger PATH       that ledger (default: beside the fleet file, $SLIPWAY_LEDGER,\n"
            "                      or ~/.local/share/slipway/ledger.sqlite); implies --record\n"
            "RUN_DIR: $SLIPWAY_RUN_DIR, else $XDG_RUNTIME_DIR/slipway, else /tmp/slipway-UID.\n"
            "The engine's LLAMA_ARG_* variables are not passed on (the argv is the shape);\n"
            "LLAMA_API_KEY, if set, is passed to the engine through its environment.\n");
    return SW_EXIT_USAGE;
}

struct up_cli {
    bool json, detach, preflight, liveness, dry_run, record;
    const char *name, *pid_file, *log, *ledger;
    unsigned timeout_s, grace_ms;
    uint64_t limit_as;
    char **eng_argv; /* after "--" */
    int eng_argc;
    const char *fleet, *endpoint;
};

/* ---------------------------------------------------------------------------------------------
 * The verbatim form: normalize llama-server's argv so the boot can be verified.
 */
struct verbatim {
    struct sw_engine_cmd cmd;
    const char *model, *alias, *host, *api_key;
    unsigned port;
    char where[640]; /* fleet position of the payload, "" for the verbatim form */
};

static bool is_flag(const char *a, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(a, *names))
            return true;
    return false;
}

static int push(struct sw_engine_cmd *c, size_t *cap, const char *s)
{
    if (c->argc + 2 > *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        char **v = sw_realloc(c->argv, nc * sizeof(*v));
        if (!v)
            return SW_ENOMEM;
        c->argv = v;
        *cap = nc;
    }
    c->argv[c->argc] = sw_strdup(s);
    if (!c->argv[c->argc])
        return SW_ENOMEM;
    c->argv[++c->argc] = NULL;
    return 0;
}

static const char *find_llama_server(char *out, size_t n);

static int verbatim_cmd(int argc, char **argv, struct verbatim *v, struct sw_err *e)
{
    static const char *const f_model[] = {"-m", "--model", NULL};
    static const char *const f_host[] = {"--host", NULL};
    static const char *const f_port[] = {"--port", NULL};
    static const char *const f_alias[] = {"-a", "--alias", NULL};
    static const char *const f_verb[] = {"-lv", "--verbosity", "--log-verbosity", NULL};
    static const char *const f_verbose[] = {"-v", "--verbose", "--log-verbose", NULL};
    bool has_verbosity = false;
    size_t cap = 0;
    int rc = 0;
    memset(v, 0, sizeof(*v));
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--api-key") || !strncmp(a, "--api-key=", 10) ||
            !strcmp(a, "--api-key-file"))
            return sw_err_set(e, SW_EINVAL,
                              "<argv>: %s: a secret on the command line is readable by every "
                              "user (/proc/PID/cmdline); export LLAMA_API_KEY instead",
                              a);
        if (is_flag(a, f_model) && val)
            v->model = val;
        else if (is_flag(a, f_host) && val)
            v->host = val;
        else if (is_flag(a, f_alias) && val)
            v->alias = val;
        else if (is_flag(a, f_port) && val) {
            uint64_t p;
            if (sw_parse_u64(val, &p, NULL) || p == 0 || p > 65535)
                return sw_err_set(e, SW_EINVAL, "<argv>: --port %s is not a TCP port", val);
            v->port = (unsigned)p;
        } else if (is_flag(a, f_verb) || is_flag(a, f_verbose))
            has_verbosity = true;
    }
    if (!v->model)
        return sw_err_set(e, SW_EINVAL,
                          "<argv>: no -m MODEL.gguf (slipway up needs a local "
                          "model file; -hf downloads are not supported)");
    static char bin[4096];
    const char *exe = argv[0];
    if (!strcmp(exe, "llama-server")) {
        const char *found = find_llama_server(bin, sizeof(bin));
        if (found)
            exe = found;
    }
    rc = push(&v->cmd, &cap, exe);
    for (int i = 1; !rc && i < argc; i++)
        rc = push(&v->cmd, &cap, argv[i]);
    /* make the address explicit (llama-server's defaults: 127.0.0.1:8080) */
    if (!rc && !v->host) {
        v->host = "127.0.0.1";
        rc = push(&v->cmd, &cap, "--host");
        if (!rc)
            rc = push(&v->cmd, &cap, v->host);
    }
    if (!rc && !v->port) {
        v->port = 8080;
        rc = push(&v->cmd, &cap, "--port");
        if (!rc)
            rc = push(&v->cmd, &cap, "8080");
    }
    if (!rc && !has_verbosity) {
        /* the memory lines need verbosity >= 4 in the pinned build */
        char lv[8];
        snprintf(lv, sizeof(lv), "%d", SW_ENGINE_LLAMACPP_VERBOSITY);
        rc = push(&v->cmd, &cap, "-lv");
        if (!rc)
            rc = push(&v->cmd, &cap, lv);
    }
    v->cmd.env = sw_calloc(2, sizeof(char *));
    if (!rc && !v->cmd.env)
        rc = SW_ENOMEM;
    const char *key = getenv("LLAMA_API_KEY");
    v->api_key = key;
    if (!rc && key && *key) {
        size_t n = strlen(key) + sizeof("LLAMA_API_KEY=");
        v->cmd.env[0] = sw_malloc(n);
        if (!v->cmd.env[0])
            rc = SW_ENOMEM;
        else {
            snprintf(v->cmd.env[0], n, "LLAMA_API_KEY=%s", key);
            v->cmd.envc = 1;
        }
    }
    if (rc) {
        sw_engine_cmd_free(&v->cmd);
        return sw_err_set(e, rc, "out of memory");
    }
    return 0;
}

/* llama-server: from PATH, else the pinned build scripts/llama-build.sh made
 * ($SLIPWAY_CACHE or ~/.cache/slipway, llama.cpp/<commit>/bin). NULL when neither has it. */
static const char *find_llama_server(char *out, size_t n)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(out, n, "%.*s/llama-server", (int)len, p);
        if (len && access(out, X_OK) == 0)
            return "llama-server";
        p += len + (p[len] == ':');
    }
    const char *cache = getenv("SLIPWAY_CACHE"), *home = getenv("HOME");
    if (cache && *cache)
        snprintf(out, n, "%s/llama.cpp/%s/bin/llama-server", cache, SW_ENGINE_LLAMACPP_PIN);
    else
        snprintf(out, n, "%s/.cache/slipway/llama.cpp/%s/bin/llama-server", home ? home : "",
                 SW_ENGINE_LLAMACPP_PIN);
    return access(out, X_OK) == 0 ? out : NULL;
}

static void fleet_error(void *ctx, const struct sw_err *e)
{
    char buf[2048];
    (void)ctx;
    fprintf(stderr, "%s\n", sw_err_format(e, buf, sizeof(buf)));
}

/* The endpoint to boot: the one named, or the only enabled one. */
static int pick_endpoint(const struct sw_fleet *f, const char *name,
                         const struct sw_fleet_endpoint **out, struct sw_err *e)
{
    *out = NULL;
    if (name) {
        *out = sw_fleet_endpoint(f, name);
        if (!*out)
            return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s'", f->path, name);
        return 0;
    }
    for (size_t i = 0; i < f->n_endpoints; i++) {
        if (!f->endpoints[i].enabled)
            continue;
        if (*out)
            return sw_err_set(e, SW_EINVAL,
                              "%s: several endpoints (%s, %s, ...): name the one to boot", f->path,
                              (*out)->name, f->endpoints[i].name);
        *out = &f->endpoints[i];
    }
    if (!*out)
        return sw_err_set(e, SW_ENOENT, "%s: no enabled endpoint", f->path);
    return 0;
}

/* A fleet endpoint, rendered by its engine adapter. */
static int fleet_cmd(const char *fleet_path, const char *endpoint, struct sw_fleet **fp,
                     struct sw_engine_launch *l, struct verbatim *v, char *name, size_t name_n,
                     const struct sw_fleet_endpoint **ep_out, struct sw_err *e)
{
    struct sw_fleet_opts fo = {.on_error = fleet_error};
    const struct sw_fleet_endpoint *ep;
    int rc = sw_fleet_load(fleet_path, &fo, fp, e);
    if (rc)
        return rc;
    rc = pick_endpoint(*fp, endpoint, &ep, e);
    if (rc)
        return rc;
    if (!ep->enabled)
        return sw_fleet_err_at(e, SW_EINVAL, &ep->at,
                               "endpoint %s is disabled (kept for the "
                               "record)",
                               ep->name);
    if (ep->host && ep->host->transport != SW_FLEET_LOCAL)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->host_at,
                               "endpoint %s runs on host %s over ssh: `up` boots local "
                               "endpoints only for now",
                               ep->name, ep->host->name);
    if (ep->engine != SW_FLEET_LLAMACPP)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->engine_at,
                               "endpoint %s: `up` boots llama.cpp endpoints only for now (%s)",
                               ep->name, sw_fleet_engine_name(ep->engine));
    rc = sw_engine_launch_from_fleet(ep, l, e);
    if (rc)
        return rc;
    static char bin[4096];
    if (!l->binary)
        l->binary = find_llama_server(bin, sizeof(bin));
    if (!l->binary)
        l->binary = "llama-server"; /* spawn names what is missing */
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    memset(v, 0, sizeof(*v));
    rc = eng->render(l, &v->cmd, e);
    if (rc) {
        sw_err_prefix(e, "endpoint %s", ep->name);
        return rc;
    }
    v->model = l->model;
    v->alias = l->alias;
    v->host = l->host;
    v->port = l->port;
    v->api_key = l->api_key;
    const struct sw_fleet_at *at = ep->payload.gguf.v ? &ep->payload.gguf.at : &ep->payload.path.at;
    if (at->file)
        snprintf(v->where, sizeof(v->where), "%s:%d:%d: payload of endpoint %s", at->file, at->line,
                 at->col, ep->name);
    snprintf(name, name_n, "%s", ep->name);
    *ep_out = ep;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Output.
 */
struct prog {
    struct sw_progress bar;
    char label[96];
    bool on;
};

static void on_progress(void *ctx, const struct sw_up_progress *p)
{
    struct prog *g = ctx;
    if (!g->on)
        return;
    const char *ph = sw_boot_phase_name(p->phase);
    snprintf(g->label, sizeof(g->label), "%s (%s, /health %d)", p->what, ph ? ph : "start",
             p->health_status);
    g->bar.label = g->label;
    sw_progress_update(&g->bar, (uint64_t)(p->elapsed_s * 10));
}

static void print_failure(const struct sw_up_result *r, const char *log, const char *where)
{
    const struct sw_boot_failure *f = &r->status.failure;
    const char *ph = sw_boot_phase_name(f->phase);
    const char *pk = sw_payload_kind_name(f->payload_kind);
    fprintf(stderr, "slipway up: boot FAILED: %s", sw_boot_class_name(f->cls));
    if (ph)
        fprintf(stderr, " (phase %s)", ph);
    if (pk)
        fprintf(stderr, " (payload %s)", pk);
    fprintf(stderr, "\n  %s\n", f->message);
    if (where && *where &&
        (f->cls == SW_BOOT_MISSING_PAYLOAD || f->cls == SW_BOOT_BAD_PAYLOAD ||
         f->cls == SW_BOOT_UNSUPPORTED))
        fprintf(stderr, "  (%s)\n", where);
    if (f->line > 0)
        fprintf(stderr, "  at %s:%d\n", log, f->line);
    else if (r->started)
        fprintf(stderr, "  log: %s\n", log);
}

static json_t *failure_json(const struct sw_up_result *r)
{
    return r->status.failed ? sw_boot_failure_to_json(&r->status.failure) : json_null();
}

static void print_report(const json_t *rep)
{
    char a[32], b[32];
    size_t i;
    const json_t *kv;
    if (!json_is_object(rep))
        return;
    printf("printed by the engine:\n");
    printf("  n_ctx %" JSON_INTEGER_FORMAT ", n_ctx_seq %" JSON_INTEGER_FORMAT
           ", n_seq_max %" JSON_INTEGER_FORMAT ", kv_unified %s\n",
           json_integer_value(json_object_get(rep, "n_ctx")),
           json_integer_value(json_object_get(rep, "n_ctx_seq")),
           json_integer_value(json_object_get(rep, "n_seq_max")),
           json_is_true(json_object_get(rep, "kv_unified")) ? "true" : "false");
    json_array_foreach(json_object_get(rep, "kv_caches"), i, kv)
    {
        printf(
            "  kv cache %zu%s: %" JSON_INTEGER_FORMAT " cells, %" JSON_INTEGER_FORMAT
            " layers, K %s %s MiB, V %s %s MiB\n",
            i, json_is_true(json_object_get(kv, "swa")) ? " (swa)" : "",
            json_integer_value(json_object_get(kv, "cells")),
            json_integer_value(json_object_get(kv, "layers")),
            json_string_value(json_object_get(kv, "k_type")),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(kv, "k_bytes")), a, sizeof(a)),
            json_string_value(json_object_get(kv, "v_type")),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(kv, "v_bytes")), b, sizeof(b)));
    }
    const json_t *rs = json_object_get(rep, "recurrent");
    if (json_is_object(rs))
        printf(
            "  recurrent: %" JSON_INTEGER_FORMAT " cells, R %s MiB, S %s MiB\n",
            json_integer_value(json_object_get(rs, "cells")),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rs, "r_bytes")), a, sizeof(a)),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rs, "s_bytes")), b, sizeof(b)));
    printf(
        "  model %s MiB, compute %s MiB\n",
        sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rep, "model_bytes")), a, sizeof(a)),
        sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rep, "compute_bytes")), b,
                   sizeof(b)));
}

static void print_diff(const json_t *diff, const char *why_none)
{
    if (!json_is_object(diff)) {
        printf("predicted vs printed: no prediction (%s)\n", why_none);
        return;
    }
    size_t i;
    const json_t *f;
    printf("predicted vs printed:\n");
    json_array_foreach(json_object_get(diff, "fields"), i, f)
    {
        const char *verdict = json_string_value(json_object_get(f, "verdict"));
        char *pa = json_dumps(json_object_get(f, "predicted"), JSON_ENCODE_ANY);
        char *pb = json_dumps(json_object_get(f, "printed"), JSON_ENCODE_ANY);
        const json_t *d = json_object_get(f, "delta");
        json_int_t tol = json_integer_value(json_object_get(f, "tolerance"));
        char extra[160] = "";
        if (!strcmp(verdict, "estimate"))
            snprintf(extra, sizeof(extra), "  (%s)", json_string_value(json_object_get(f, "note")));
        else if (json_is_integer(d) && json_integer_value(d) && tol)
            snprintf(extra, sizeof(extra),
                     "  (%+" JSON_INTEGER_FORMAT " B, printed to +-%" JSON_INTEGER_FORMAT " B)",
                     json_integer_value(d), tol);
        printf("  %-26s %14s %14s  %s%s\n", json_string_value(json_object_get(f, "field")),
               pa ? pa : "?", pb ? pb : "?", verdict, extra);
        sw_free(pa);
        sw_free(pb);
    }
    printf("  %s\n", json_is_true(json_object_get(diff, "match")) ? "MATCH" : "MISMATCH");
}

/*
 * The predicted report: memory/llamacpp's law over the very argv the engine receives (the
 * adapter rendered it, or the operator wrote it), with the model's architecture read from its
 * GGUF. On a CPU build with no declared memory, as here, --fit changes nothing the law models.
 */
static json_t *predict(const struct sw_engine_cmd *cmd, const struct sw_fleet_endpoint *ep,
                       char *why, size_t n, char *unfit, size_t unfit_n)
{
    struct sw_llamacpp_args *args = sw_calloc(1, sizeof(*args));
    struct sw_llamacpp_plan *plan = sw_calloc(1, sizeof(*plan));
    struct sw_llamacpp_env env;
    struct sw_gguf *g = NULL;
    struct sw_arch *arch = NULL;
    struct sw_err e;
    json_t *out = NULL;
    char msg[1200];
    memset(&env, 0, sizeof(env));
    if (ep) /* the fleet's devices: a declared memory is a limit the plan is held to */
        sw_llamacpp_env_from_endpoint(ep, &env);
    unfit[0] = '\0';
    if (!args || !plan) {
        snprintf(why, n, "out of memory");
        goto out;
    }
    sw_llamacpp_args_init(args);
    if (sw_llamacpp_args_parse(args, (int)cmd->argc, (const char *const *)cmd->argv, &e)) {
        snprintf(why, n, "the plan failed: %.200s", sw_err_format(&e, msg, sizeof(msg)));
        goto out;
    }
    /* never block or fail the boot on the prediction: a FIFO or a device is not read here */
    struct stat st;
    if (stat(args->model, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, n, "%.200s is not a regular file", args->model);
        goto out;
    }
    if (sw_gguf_open(args->model, &g, &e) || sw_arch_from_gguf(g, &arch, &e) ||
        sw_llamacpp_plan(arch, args, &env, plan, &e)) {
        snprintf(why, n, "the plan failed: %.200s", sw_err_format(&e, msg, sizeof(msg)));
        goto out;
    }
    out = sw_llamacpp_report_to_json(&plan->report);
    if (!out)
        snprintf(why, n, "out of memory");
    for (int d = 0; d < plan->n_dev && !unfit[0]; d++) {
        const struct sw_llamacpp_device *x = &plan->dev[d];
        const double M = 1024.0 * 1024.0;
        if (x->memory && x->total > x->memory)
            snprintf(unfit, unfit_n,
                     "the plan does not fit %s: %.2f MiB (weights %.2f + KV %.2f + recurrent "
                     "%.2f + compute %.2f + output %.2f) of %.2f MiB declared",
                     x->name, (double)x->total / M, (double)x->weights / M, (double)x->kv / M,
                     (double)x->recurrent / M, (double)x->compute / M, (double)x->output / M,
                     (double)x->memory / M);
    }
out:
    sw_arch_free(arch);
    sw_gguf_free(g);
    sw_free(plan);
    sw_free(args);
    return out;
}

/* The rendered command without starting it. Environment values are not shown: they may be
 * secrets (LLAMA_API_KEY); their names are. */
static int dry_run(const struct sw_engine_cmd *cmd, const json_t *predicted, const char *why,
                   bool json)
{
    if (json) {
        json_t *o = json_object(), *argv = json_array(), *env = json_array();
        for (size_t i = 0; i < cmd->argc; i++)
            json_array_append_new(argv, sw_json_text(cmd->argv[i], strlen(cmd->argv[i]), NULL));
        for (size_t i = 0; i < cmd->envc; i++)
            json_array_append_new(env, sw_json_text(cmd->env[i], strcspn(cmd->env[i], "="), NULL));
        sw_json_set_new(o, "argv", argv);
        sw_json_set_new(o, "env", env);
        sw_json_set_new(o, "predicted", predicted ? json_deep_copy(predicted) : json_null());
        if (!predicted)
            sw_json_set_str(o, "predicted_note", why);
        sw_json_print(stdout, o, true);
        json_decref(o);
        return SW_EXIT_OK;
    }
    struct sw_buf line;
    sw_buf_init(&line, 1 << 20);
    sw_engine_cmd_format(cmd, &line);
    printf("%s\n", sw_buf_cstr(&line));
    sw_buf_free(&line);
    for (size_t i = 0; i < cmd->envc; i++)
        printf("env: %.*s=...\n", (int)strcspn(cmd->env[i], "="), cmd->env[i]);
    if (!predicted)
        printf("no prediction (%s)\n", why);
    else
        sw_json_print(stdout, predicted, true);
    return SW_EXIT_OK;
}

/* The value after a flag in argv (the last one wins, as in llama-server). */
static const char *flag_value(const struct sw_engine_cmd *cmd, const char *a, const char *b)
{
    const char *v = NULL;
    for (size_t i = 1; i + 1 < cmd->argc; i++)
        if (!strcmp(cmd->argv[i], a) || (b && !strcmp(cmd->argv[i], b)))
            v = cmd->argv[i + 1];
    return v;
}

static bool has_flag(const struct sw_engine_cmd *cmd, const char *a)
{
    for (size_t i = 1; i < cmd->argc; i++)
        if (!strcmp(cmd->argv[i], a))
            return true;
    return false;
}

/* The shape in the ledger's vocabulary (docs/ledger.md), with the effective values the engine
 * printed where it printed them (n_ctx, slots, unified KV, cache types). */
static json_t *boot_shape(const struct sw_engine_cmd *cmd, const char *model, const json_t *rep)
{
    json_t *s = json_object(), *m = json_object(), *flags = json_object();
    const char *base = strrchr(model, '/');
    struct stat st;
    sw_json_set_str(s, "engine", "llama.cpp");
    sw_json_set_str(m, "name", base ? base + 1 : model);
    sw_json_set_str(m, "file", model);
    if (stat(model, &st) == 0 && st.st_size > 0)
        sw_json_set_int(m, "size", st.st_size);
    sw_json_set_new(s, "model", m);
    const char *c = flag_value(cmd, "-c", "--ctx-size");
    const json_t *v;
    if (c)
        sw_json_set_str(s, "ctx", c);
    else if (json_is_integer(v = json_object_get(rep, "n_ctx")))
        sw_json_set_new(s, "ctx", json_deep_copy(v));
    if (json_is_integer(v = json_object_get(rep, "n_seq_max")))
        sw_json_set_new(s, "slots", json_deep_copy(v));
    else if ((c = flag_value(cmd, "-np", "--parallel")))
        sw_json_set_str(s, "slots", c);
    const json_t *kv0 = json_array_get(json_object_get(rep, "kv_caches"), 0);
    const char *k = json_string_value(json_object_get(kv0, "k_type"));
    const char *vt = json_string_value(json_object_get(kv0, "v_type"));
    if (!k)
        k = flag_value(cmd, "-ctk", "--cache-type-k");
    if (!vt)
        vt = flag_value(cmd, "-ctv", "--cache-type-v");
    sw_json_set_str(s, "kv_dtype_k", k ? k : "f16");
    sw_json_set_str(s, "kv_dtype_v", vt ? vt : "f16");
    c = flag_value(cmd, "-b", "--batch-size");
    sw_json_set_str(s, "batch", c ? c : "2048"); /* llama-server's defaults, made explicit */
    c = flag_value(cmd, "-ub", "--ubatch-size");
    sw_json_set_str(s, "ubatch", c ? c : "512");
    c = flag_value(cmd, "-ngl", "--n-gpu-layers");
    if (c)
        sw_json_set_str(s, "gpu_layers", c);
    if (json_is_boolean(v = json_object_get(rep, "kv_unified")))
        sw_json_set_new(flags, "kv_unified", json_deep_copy(v));
    c = flag_value(cmd, "-fa", "--flash-attn");
    sw_json_set_str(flags, "flash_attn", c ? c : "auto");
    sw_json_set_bool(flags, "swa_full", has_flag(cmd, "--swa-full"));
    c = flag_value(cmd, "--mmproj", "-mm");
    if (c)
        sw_json_set_str(flags, "mmproj", c);
    sw_json_set_new(s, "flags", flags);
    return s;
}

/* Record one boot (ok or failed). Returns 0, or prints why not. */
static void record_boot(const struct up_cli *c, const char *fleet_path, const char *name,
                        const struct verbatim *v, const struct sw_up_result *r,
                        const json_t *predicted, int64_t started, double boot_s,
                        const char *log_path)
{
    char path[4096], msg[1200];
    struct sw_err e;
    struct sw_ledger led;
    memset(&led, 0, sizeof(led));
    int rc = 0;
    if (c->ledger)
        snprintf(path, sizeof(path), "%s", c->ledger);
    else
        rc = sw_ledger_default_path(fleet_path, path, sizeof(path), &e);
    const json_t *rep = json_object_get(r->bootlog, "report");
    json_t *shape = boot_shape(&v->cmd, v->model, rep);
    json_t *failure = r->status.failed ? sw_boot_failure_to_json(&r->status.failure) : NULL;
    char *text = NULL;
    size_t len = 0;
    if (sw_read_file(log_path, 64u << 20, &text, &len, NULL))
        text = NULL;
    struct sw_ledger_boot b;
    memset(&b, 0, sizeof(b));
    b.endpoint = name;
    b.shape = shape;
    b.engine = "llama.cpp";
    b.engine_version = r->status.build[0] ? r->status.build : NULL;
    b.started_at = started;
    b.ended_at = sw_wall_unix();
    b.duration_ms = boot_s > 0 ? (int64_t)(boot_s * 1000) : -1;
    b.predicted = predicted;
    b.report = json_is_object(rep) ? rep : NULL;
    b.failure = failure;
    b.log_excerpt = text;
    b.log_len = len;
    b.log_path = log_path;
    b.source = "slipway up";
    int64_t id = 0;
    if (!rc)
        rc = sw_ledger_open(&led, path, NULL, &e);
    if (!rc)
        rc = sw_ledger_record_boot(&led, &b, &id, &e);
    sw_ledger_close(&led);
    if (rc)
        fprintf(stderr, "slipway up: boot not recorded: %s\n", sw_err_format(&e, msg, sizeof(msg)));
    else if (!c->json)
        fprintf(stderr, "slipway up: recorded as boot %lld in %s\n", (long long)id, path);
    sw_free(text);
    json_decref(shape);
    json_decref(failure);
}

/* ---------------------------------------------------------------------------------------------
 * The verb.
 */
static int parse_args(int argc, char **argv, struct up_cli *c)
{
    memset(c, 0, sizeof(*c));
    c->preflight = c->liveness = true;
    c->timeout_s = 900;
    c->grace_ms = 10000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u;
        if (!strcmp(a, "--")) {
            c->eng_argv = argv + i + 1;
            c->eng_argc = argc - i - 1;
            break;
        } else if (!strcmp(a, "--json")) {
            c->json = true;
        } else if (!strcmp(a, "--detach")) {
            c->detach = true;
        } else if (!strcmp(a, "--no-preflight")) {
            c->preflight = false;
        } else if (!strcmp(a, "--no-liveness")) {
            c->liveness = false;
        } else if (!strcmp(a, "--dry-run")) {
            c->dry_run = true;
        } else if (!strcmp(a, "--record")) {
            c->record = true;
        } else if (!strcmp(a, "--ledger") && val) {
            c->ledger = argv[++i];
            c->record = true;
        } else if (!strcmp(a, "--name") && val) {
            c->name = argv[++i];
        } else if (!strcmp(a, "--pid-file") && val) {
            c->pid_file = argv[++i];
        } else if (!strcmp(a, "--log") && val) {
            c->log = argv[++i];
        } else if ((!strcmp(a, "--timeout") || !strcmp(a, "--grace")) && val) {
            if (sw_parse_u64(val, &u, NULL) || u > 86400)
                return sw_cli_usage("up", "%s %s: seconds expected", a, val);
            if (!strcmp(a, "--timeout"))
                c->timeout_s = (unsigned)u;
            else
                c->grace_ms = (unsigned)u * 1000;
            i++;
        } else if (!strcmp(a, "--limit-as") && val) {
            struct sw_err e;
            if (sw_parse_bytes(val, &c->limit_as, &e))
                return sw_cli_usage("up", "--limit-as %s: %s", val, e.msg);
            i++;
        } else if (sw_cli_is(a, "-h", "--help")) {
            usage();
            return -1;
        } else if (a[0] == '-') {
            return sw_cli_usage("up", "unknown option '%s'", a);
        } else if (!c->fleet) {
            c->fleet = a;
        } else if (!c->endpoint) {
            c->endpoint = a;
        } else {
            return sw_cli_usage("up", "unexpected argument '%s'", a);
        }
    }
    if (!c->eng_argv && !c->fleet)
        return usage();
    if (c->eng_argv && c->fleet)
        return sw_cli_usage("up", "either a fleet file or -- llama-server ..., not both");
    if (c->eng_argv && c->eng_argc == 0)
        return sw_cli_usage("up", "nothing after --");
    return 0;
}

static int serve_foreground(struct sw_up_result *r, const struct sw_up_opts *o, bool json,
                            const char *pid_file)
{
    int code = SW_EXIT_OK;
    if (!json)
        printf("serving at %s in the foreground (pid %d); Ctrl-C stops it\n", r->url,
               (int)r->child.pid);
    fflush(stdout);
    while (!g_stop && !sw_child_poll(&r->child))
        sw_sleep_ms(100);
    struct sw_err e;
    sw_err_clear(&e);
    if (g_stop) {
        int rc = sw_child_stop(&r->child, o->grace_ms, &e);
        char st[96];
        fprintf(stderr, "slipway up: %s: stopped %s (%s)\n", strsignal(g_signal), r->child.exe,
                r->child.exited ? sw_wait_status_str(r->child.status, st, sizeof(st))
                                : "still running?");
        if (rc) {
            fprintf(stderr, "slipway up: %s\n", e.msg);
            code = SW_EXIT_FAIL;
        }
    } else {
        /* it went away on its own: `slipway down` from elsewhere, or a crash */
        sw_child_stop(&r->child, o->grace_ms, NULL);
        sw_deploy_read_log(o, r, NULL);
        char st[96];
        sw_wait_status_str(r->child.status, st, sizeof(st));
        if (r->status.failed) {
            print_failure(r, o->log_path, NULL);
            code = SW_EXIT_FAIL;
        } else if (WIFEXITED(r->child.status) && WEXITSTATUS(r->child.status) == 0) {
            fprintf(stderr, "slipway up: %s stopped (%s)\n", r->child.exe, st);
        } else {
            fprintf(stderr, "slipway up: %s died while serving (%s); log %s\n", r->child.exe, st,
                    o->log_path);
            code = SW_EXIT_FAIL;
        }
    }
    unlink(pid_file);
    return code;
}

int sw_cmd_up(int argc, char **argv)
{
    struct up_cli c;
    int prc = parse_args(argc, argv, &c);
    if (prc)
        return prc < 0 ? SW_EXIT_OK : prc;
    struct sw_err e;
    sw_err_clear(&e);
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    struct verbatim v;
    struct sw_fleet *fleet = NULL;
    struct sw_engine_launch launch;
    const struct sw_fleet_endpoint *ep = NULL;
    char ep_name[128] = "";
    int rc;
    memset(&v, 0, sizeof(v));
    memset(&launch, 0, sizeof(launch));
    if (c.fleet)
        rc = fleet_cmd(c.fleet, c.endpoint, &fleet, &launch, &v, ep_name, sizeof(ep_name), &ep, &e);
    else
        rc = verbatim_cmd(c.eng_argc, c.eng_argv, &v, &e);
    if (rc) {
        sw_engine_launch_free(&launch);
        sw_fleet_free(fleet);
        return sw_cli_fail(&e, c.json);
    }

    char run_dir[3800], name[128], pid_path[4096], log_path[4096];
    int code = SW_EXIT_FAIL;
    json_t *predicted = NULL, *diff = NULL, *out = NULL;
    struct sw_up_result r;
    memset(&r, 0, sizeof(r));
    char why_none[256] = "", unfit[600] = "";
    predicted = predict(&v.cmd, ep, why_none, sizeof(why_none), unfit, sizeof(unfit));
    if (c.dry_run) {
        code = dry_run(&v.cmd, predicted, why_none, c.json);
        if (unfit[0] && !c.json)
            fprintf(stderr, "slipway up: %s\n", unfit);
        goto out;
    }
    /* A shape that does not fit is refused here, not found minutes into a boot. */
    if (unfit[0] && c.preflight) {
        sw_err_set(&e, SW_EGATE,
                   "%s: %s; nothing was started (change the shape, or --no-preflight to boot "
                   "it anyway)",
                   ep_name[0] ? ep_name : "llama-server", unfit);
        code = sw_cli_fail(&e, c.json);
        goto out;
    }
    if (c.name)
        snprintf(name, sizeof(name), "%s", c.name);
    else if (ep_name[0])
        snprintf(name, sizeof(name), "%s", ep_name);
    else if (v.alias)
        snprintf(name, sizeof(name), "%s", v.alias);
    else
        snprintf(name, sizeof(name), "llama-server-%u", v.port);
    for (char *p = name; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    if (!c.pid_file || !c.log) {
        rc = sw_deploy_run_dir(run_dir, sizeof(run_dir), &e);
        if (rc) {
            code = sw_cli_fail(&e, c.json);
            goto out;
        }
    }
    snprintf(pid_path, sizeof(pid_path), "%s", c.pid_file ? c.pid_file : "");
    if (!c.pid_file)
        snprintf(pid_path, sizeof(pid_path), "%s/%s.pid", run_dir, name);
    if (c.log)
        snprintf(log_path, sizeof(log_path), "%s", c.log);
    else
        snprintf(log_path, sizeof(log_path), "%s/%s.log", run_dir, name);

    /* one endpoint, one process: an existing record must be dead or stale */
    struct sw_pidfile old;
    if (sw_pidfile_read(pid_path, &old, NULL) == 0) {
        char why[512];
        enum sw_pid_verdict vd = sw_pidfile_check(&old, why, sizeof(why));
        if (vd == SW_PID_ALIVE) {
            sw_err_set(&e, SW_EEXIST,
                       "%s is already running (pid %d, %s); stop it first: slipway down "
                       "--pid-file %s",
                       name, (int)old.pid, old.url, pid_path);
            code = sw_cli_fail(&e, c.json);
            goto out;
        }
        fprintf(stderr, "slipway up: removing stale pid file %s: %s\n", pid_path, why);
        unlink(pid_path);
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct prog pg;
    memset(&pg, 0, sizeof(pg));
    sw_progress_init(&pg.bar, "starting", "", 0);
    pg.on = pg.bar.enabled && !c.json;

    struct sw_up_opts o;
    memset(&o, 0, sizeof(o));
    o.engine = eng;
    o.cmd = &v.cmd;
    o.host = v.host;
    o.port = v.port;
    o.payload = v.model;
    o.log_path = log_path;
    o.pid_file = pid_path; /* written by deploy as soon as the engine runs */
    o.endpoint = name;
    o.api_key = v.api_key;
    o.detach = c.detach;
    o.preflight = c.preflight;
    o.liveness = c.liveness;
    o.boot_timeout_s = c.timeout_s;
    o.grace_ms = c.grace_ms;
    o.rlimit_as = c.limit_as;
    o.stop = &g_stop;
    o.on_progress = on_progress;
    o.ctx = &pg;
    if (!c.json) {
        struct sw_buf line;
        sw_buf_init(&line, 1 << 16);
        sw_engine_cmd_format(&v.cmd, &line);
        fprintf(stderr, "slipway up: %s\n  log %s\n", sw_buf_cstr(&line), log_path);
        sw_buf_free(&line);
    }
    int64_t started = sw_wall_unix();
    rc = sw_deploy_up(&o, &r, &e);
    if (pg.on)
        sw_progress_finish(&pg.bar);
    if (c.record && r.started)
        record_boot(&c, c.fleet, name, &v, &r, predicted, started,
                    r.ready ? r.boot_s : sw_now_s() - r.child.t_start, log_path);
    if (rc) {
        if (c.json) {
            out = json_object();
            sw_json_set_str(out, "url", r.url);
            sw_json_set_new(out, "pid", json_null());
            sw_json_set_str(out, "log", log_path);
            sw_json_set_new(out, "report",
                            json_object_get(r.bootlog, "report")
                                ? json_deep_copy(json_object_get(r.bootlog, "report"))
                                : json_null());
            sw_json_set_new(out, "failure", failure_json(&r));
            sw_json_set_new(out, "error", sw_err_to_json(&e));
            sw_json_print(stdout, out, true);
        }
        if (r.status.failed)
            print_failure(&r, log_path, v.where);
        else
            fprintf(stderr, "slipway up: %s\n", e.msg);
        code = rc == SW_EINTR || r.status.failed || rc == SW_EEXIST || rc == SW_ECHILD
                   ? SW_EXIT_FAIL
                   : sw_cli_exit_for(rc);
        goto out;
    }

    const json_t *printed = json_object_get(r.bootlog, "report");
    if (predicted)
        eng->diff(predicted, r.bootlog, NULL, &diff, NULL);
    if (c.json) {
        out = json_object();
        sw_json_set_str(out, "url", r.url);
        sw_json_set_int(out, "pid", r.child.pid);
        sw_json_set_int(out, "pgid", r.child.pgid);
        sw_json_set_str(out, "endpoint", name);
        sw_json_set_str(out, "pid_file", pid_path);
        sw_json_set_str(out, "log", log_path);
        sw_json_set_bool(out, "detached", c.detach);
        sw_json_set_real(out, "boot_s", r.boot_s);
        sw_json_set_str(out, "liveness", c.liveness ? r.liveness : NULL);
        sw_json_set_new(out, "report", printed ? json_deep_copy(printed) : json_null());
        sw_json_set_new(out, "predicted", predicted ? json_incref(predicted) : json_null());
        sw_json_set_new(out, "diff", diff ? json_incref(diff) : json_null());
        if (!diff)
            sw_json_set_str(out, "diff_note", why_none);
        sw_json_set_new(out, "failure", json_null());
        sw_json_print(stdout, out, true);
    } else {
        printf("ready in %.1f s at %s (pid %d, group %d)\n", r.boot_s, r.url, (int)r.child.pid,
               (int)r.child.pgid);
        if (c.liveness)
            printf("liveness: %s\n", r.liveness);
        print_report(printed);
        print_diff(diff, why_none);
    }
    fflush(stdout);
    if (c.detach) {
        sw_child_release(&r.child);
        if (!c.json)
            printf("detached: pid file %s; stop with: slipway down --pid-file %s\n", pid_path,
                   pid_path);
        code = SW_EXIT_OK;
        goto out;
    }
    code = serve_foreground(&r, &o, c.json, pid_path);
out:
    json_decref(out);
    json_decref(diff);
    json_decref(predicted);
    sw_up_result_free(&r);
    sw_engine_cmd_free(&v.cmd);
    sw_engine_launch_free(&launch);
    sw_fleet_free(fleet);
    return code;
}
