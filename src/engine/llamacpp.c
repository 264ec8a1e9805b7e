/*
 * engine/llamacpp: the llama.cpp (llama-server) adapter: its table entry, argv/env rendering,
 * the JSON views of its boot report, its HTTP error shape and its /metrics names.
 *
 * Render writes every knob it is given explicitly, through llama-server's flag table (the rows of
 * memory.h's SW_LLAMACPP_RENDERED, the same the law's reader reads: so the boot does not depend on
 * llama-server's defaults or on LLAMA_ARG_* variables, which deploy also strips from the child's
 * environment) and adds `-lv 4`: the pinned llama-server prints llama's INFO messages (the memory lines) only
 * at verbosity >= LOG_LEVEL_TRACE (common/log.cpp common_log_get_verbosity; default is 3).
 * The API key goes to LLAMA_API_KEY (common/arg.cpp: --api-key .set_env("LLAMA_API_KEY")):
 * a secret in argv is readable by every user through /proc/PID/cmdline.
 *
 * What it deliberately does not do: choose a shape (plan/tune), resolve paths (deploy), or parse
 * boot logs (llamacpp_bootlog.c) and diff reports (llamacpp_diff.c).
 */
#include "engine_internal.h"

#include <slipway/memory.h>

#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <stdlib.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------------
 * Render: memory.h's rendered rows of llama-server's table (SW_LLAMACPP_RENDERED), each from its
 * field of the launch.
 */
/* llama-server's listen address when its command line names none. */
#define LLAMACPP_DEFAULT_HOST "127.0.0.1"
#define LLAMACPP_DEFAULT_PORT 8080

/* How the rows are written, as they name it (memory.h "Engine command lines as flag tables"). */
#define WR_STR       .write = SW_FLAG_W_STR
#define WR_HOST      .write = SW_FLAG_W_STR_OR, .wtext = LLAMACPP_DEFAULT_HOST
#define WR_UINT      .write = SW_FLAG_W_UINT
#define WR_U64       .write = SW_FLAG_W_U64
#define WR_IS1       .write = SW_FLAG_W_IS, .arg = 1
#define WR_IS0       .write = SW_FLAG_W_IS, .arg = 0
#define WR_LAYERS    .write = SW_FLAG_W_LAYERS
#define WR_THREADS   .write = SW_FLAG_W_INT_POS
#define WR_VERBOSITY .write = SW_FLAG_W_INT_OR, .wnum = SW_ENGINE_LLAMACPP_VERBOSITY
#define ROW(n, rd, field, d, wr, src)                                                              \
    {.names = (n), WR_##wr, .from = offsetof(struct sw_engine_launch, src)},

static const struct sw_flag rendered[] = {SW_LLAMACPP_RENDERED(ROW)};
static const struct sw_flag_table rendered_table = {
    .rows = rendered,
    .n_rows = SW_ARRAY_LEN(rendered),
};

/* Flags that carry a secret or that slipway must own (they would contradict the rendered ones). */
static const char *forbidden_extra(const char *a)
{
    if (!strcmp(a, "--api-key") || !strncmp(a, "--api-key=", 10) || !strcmp(a, "--api-key-file") ||
        !strncmp(a, "--api-key-file=", 15))
        return "a secret on the command line is readable by every user through "
               "/proc/PID/cmdline; give it as the endpoint's api_key (it is passed as "
               "LLAMA_API_KEY)";
    if (!strcmp(a, "--log-file") || !strcmp(a, "--log-disable"))
        return "slipway captures llama-server's output itself and reads it to verify the boot";
    return NULL;
}

/* LLAMA_API_KEY=key (common/arg.cpp: --api-key .set_env("LLAMA_API_KEY")), when there is one. */
static void api_key_env(struct sw__list *env, const char *key)
{
    struct sw_buf kb;
    if (!key || !*key || env->rc)
        return;
    sw_buf_init(&kb, 1 << 16);
    env->rc = sw_buf_printf(&kb, "LLAMA_API_KEY=%s", key);
    sw__list_push(env, sw_buf_cstr(&kb));
    sw_buf_free(&kb);
}

/* argv and env into out; an empty environment is an empty list, not NULL. */
static int take(struct sw_engine_cmd *out, struct sw__list *a, struct sw__list *env)
{
    if (!env->v && !env->rc) {
        env->v = sw_calloc(1, sizeof(char *)); /* an empty NULL-terminated list */
        if (!env->v)
            env->rc = SW_ENOMEM;
    }
    return sw__cmd_take(out, a, env);
}

static int check_launch(const struct sw_engine_launch *l, struct sw_err *e)
{
    if (!l || !l->model || !*l->model)
        return sw_err_set(e, SW_EINVAL, "llama.cpp: the endpoint names no model file");
    if (l->cache_type_k && sw_kv_type_from_name(l->cache_type_k) < 0)
        return sw_err_set(e, SW_EINVAL,
                          "llama.cpp: cache_type_k '%s' is not one llama-server "
                          "accepts (f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1)",
                          l->cache_type_k);
    if (l->cache_type_v && sw_kv_type_from_name(l->cache_type_v) < 0)
        return sw_err_set(e, SW_EINVAL,
                          "llama.cpp: cache_type_v '%s' is not one llama-server "
                          "accepts (f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1)",
                          l->cache_type_v);
    if (l->flash_attn && strcmp(l->flash_attn, "on") && strcmp(l->flash_attn, "off") &&
        strcmp(l->flash_attn, "auto"))
        return sw_err_set(e, SW_EINVAL, "llama.cpp: flash_attn must be on, off or auto (got '%s')",
                          l->flash_attn);
    for (size_t i = 0; i < l->n_extra_args; i++) {
        const char *why = l->extra_args[i] ? forbidden_extra(l->extra_args[i]) : "NULL argument";
        if (why)
            return sw_err_set(e, SW_EINVAL, "llama.cpp: extra argument '%s' refused: %s",
                              l->extra_args[i] ? l->extra_args[i] : "(null)", why);
    }
    for (size_t i = 0; i < l->n_env; i++) {
        if (!l->env[i] || !strchr(l->env[i], '=') || l->env[i][0] == '=')
            return sw_err_set(e, SW_EINVAL, "llama.cpp: environment entry '%s' is not NAME=VALUE",
                              l->env[i] ? l->env[i] : "(null)");
    }
    return 0;
}

int sw_engine_llamacpp_render(const struct sw_engine_launch *l, struct sw_engine_cmd *out,
                              struct sw_err *e)
{
    struct sw__list a = {0}, env = {0};
    memset(out, 0, sizeof(*out));
    int rc = check_launch(l, e);
    if (rc)
        return rc;
    sw__list_push(&a, l->binary && *l->binary ? l->binary : "llama-server");
    sw__argv_render(&rendered_table, l, NULL, &a, e); /* no row of its writes fails */
    for (size_t i = 0; i < l->n_extra_args; i++)
        sw__list_push(&a, l->extra_args[i]);
    for (size_t i = 0; i < l->n_env; i++)
        sw__list_push(&env, l->env[i]);
    api_key_env(&env, l->api_key);
    rc = take(out, &a, &env);
    return rc ? sw_err_set(e, rc, "llama.cpp: out of memory rendering argv") : 0;
}

int sw_engine_llamacpp_verbatim(int argc, const char *const *argv, const char *exe,
                                const char *api_key, struct sw_engine_cmd *out,
                                struct sw_engine_launch *l, struct sw_err *e)
{
    /* the table's rows, by their rendered spelling: a word that is any of their spellings */
    const struct sw_flag_table *t = &sw_llamacpp_flags;
    const struct sw_flag *f_model = sw_flags_find(t, "-m"), *f_host = sw_flags_find(t, "--host");
    const struct sw_flag *f_port = sw_flags_find(t, "--port"), *f_alias = sw_flags_find(t, "-a");
    const struct sw_flag *f_verb = sw_flags_find(t, "-lv"), *f_verbose = sw_flags_find(t, "-v");
    struct sw__list a = {0}, env = {0};
    bool has_verbosity = false;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(l, 0, sizeof(*l));
    if (argc < 1)
        return sw_err_set(e, SW_EINVAL, "<argv>: no llama-server command line");
    for (int i = 0; i < argc; i++) {
        const char *x = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        const struct sw_flag *f = sw_flags_find(t, x);
        if (!strcmp(x, "--api-key") || !strncmp(x, "--api-key=", 10) ||
            !strcmp(x, "--api-key-file"))
            return sw_err_set(e, SW_EINVAL,
                              "<argv>: %s: a secret on the command line is readable by every "
                              "user (/proc/PID/cmdline); export LLAMA_API_KEY instead",
                              x);
        if (f == f_model && val) {
            l->model = val;
        } else if (f == f_host && val) {
            l->host = val;
        } else if (f == f_alias && val) {
            l->alias = val;
        } else if (f == f_port && val) {
            uint64_t p;
            if (sw_parse_u64(val, &p, NULL) || p == 0 || p > 65535)
                return sw_err_set(e, SW_EINVAL, "<argv>: --port %s is not a TCP port", val);
            l->port = (unsigned)p;
        } else if (f && (f == f_verb || f == f_verbose)) {
            has_verbosity = true;
        }
    }
    if (!l->model)
        return sw_err_set(e, SW_EINVAL,
                          "<argv>: no -m MODEL.gguf (slipway up needs a local "
                          "model file; -hf downloads are not supported)");
    sw__list_push(&a, exe ? exe : argv[0]);
    for (int i = 1; i < argc; i++)
        sw__list_push(&a, argv[i]);
    /* make the address explicit (llama-server's defaults) */
    if (!l->host) {
        l->host = LLAMACPP_DEFAULT_HOST;
        sw__list_push(&a, "--host");
        sw__list_push(&a, l->host);
    }
    if (!l->port) {
        l->port = LLAMACPP_DEFAULT_PORT;
        sw__list_push(&a, "--port");
        sw__list_push(&a, "8080");
    }
    if (!has_verbosity) { /* the memory lines need verbosity >= 4 in the pinned build */
        sw__list_push(&a, "-lv");
        sw__list_push(&a, "4");
    }
    l->api_key = api_key;
    api_key_env(&env, api_key);
    rc = take(out, &a, &env);
    return rc ? sw_err_set(e, rc, "llama.cpp: out of memory normalizing argv") : 0;
}

/* ---------------------------------------------------------------------------------------------
 * JSON views of the report.
 */
static int set_i64_or_null(json_t *o, const char *k, int64_t v)
{
    return v < 0 ? sw_json_set_new(o, k, json_null()) : sw_json_set_int(o, k, v);
}

/* One KV line's figures, or (prec) the rounding their print allows. */
static int kv_json(const struct sw_bootlog_kv *kv, bool prec, json_t *k)
{
    if (prec)
        return sw_json_set_int(k, "k_bytes", kv->k_prec) |
               sw_json_set_int(k, "v_bytes", kv->v_prec);
    int rc = set_i64_or_null(k, "cells", kv->cells);
    rc |= set_i64_or_null(k, "layers", kv->layers);
    rc |= set_i64_or_null(k, "seqs", kv->seqs);
    rc |= set_i64_or_null(k, "streams", kv->streams);
    rc |= sw_json_set_str(k, "k_type", kv->k_type);
    rc |= sw_json_set_str(k, "v_type", kv->v_type);
    rc |= set_i64_or_null(k, "k_bytes", kv->k_bytes);
    rc |= set_i64_or_null(k, "v_bytes", kv->v_bytes);
    return rc | sw_json_set_bool(k, "swa", kv->swa);
}

/* The recurrent state's figures, or (prec) their rounding; null when the boot printed none. */
static int recurrent_json(const struct sw_bootlog_report *r, bool prec, json_t *o)
{
    json_t *rs = r->has_recurrent ? json_object() : json_null();
    int rc = sw_json_set_new(o, "recurrent", rs);
    if (rc || !r->has_recurrent)
        return rc;
    if (prec)
        return sw_json_set_int(rs, "r_bytes", r->recurrent.r_prec) |
               sw_json_set_int(rs, "s_bytes", r->recurrent.s_prec);
    rc |= set_i64_or_null(rs, "cells", r->recurrent.cells);
    rc |= set_i64_or_null(rs, "layers", r->recurrent.layers);
    rc |= set_i64_or_null(rs, "r_bytes", r->recurrent.r_bytes);
    return rc | set_i64_or_null(rs, "s_bytes", r->recurrent.s_bytes);
}

/* The report as plan prints it, or (prec) per byte field the rounding the print allows. */
static json_t *report_json(const struct sw_bootlog_report *r, bool prec)
{
    json_t *o = json_object(), *kvs = json_array();
    int rc = (!o || !kvs) ? SW_ENOMEM : 0;
    if (!rc && !prec) {
        rc |= set_i64_or_null(o, "n_ctx", r->n_ctx);
        rc |= set_i64_or_null(o, "n_ctx_seq", r->n_ctx_seq);
        rc |= set_i64_or_null(o, "n_seq_max", r->n_seq_max);
        rc |= sw_json_set_new(o, "kv_unified",
                              r->kv_unified < 0 ? json_null() : json_boolean(r->kv_unified));
    }
    for (size_t i = 0; !rc && i < r->n_kv; i++) {
        json_t *k = json_object();
        if (!k || json_array_append_new(kvs, k)) {
            rc = SW_ENOMEM;
            break;
        }
        rc |= kv_json(&r->kv[i], prec, k);
    }
    if (!rc) {
        rc = sw_json_set_new(o, "kv_caches", kvs);
        kvs = NULL;
    }
    if (!rc)
        rc = recurrent_json(r, prec, o);
    if (!rc) {
        rc |= set_i64_or_null(o, "model_bytes",
                              prec && r->model_bytes >= 0 ? r->model_prec : r->model_bytes);
        rc |= set_i64_or_null(o, "output_bytes",
                              prec && r->output_bytes >= 0 ? r->output_prec : r->output_bytes);
        rc |= set_i64_or_null(o, "compute_bytes",
                              prec && r->compute_bytes >= 0 ? r->compute_prec : r->compute_bytes);
    }
    json_decref(kvs);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sw_engine_llamacpp_report_json(const struct sw_bootlog_report *r)
{
    return report_json(r, false);
}

json_t *sw_engine_llamacpp_precision_json(const struct sw_bootlog_report *r)
{
    return report_json(r, true);
}

/* The draft model's (-md) own load and context, printed after "loading draft model": read by
 * the same reader from there on (the main model's lines come before it) into o's "draft"
 * {report, precision}, when it printed a context. r is scratch. */
static int draft_json(const char *text, size_t len, struct sw_bootlog_report *r, json_t *o)
{
    static const char mark[] = "loading draft model";
    const char *p = text ? memmem(text, len, mark, sizeof(mark) - 1) : NULL;
    if (!p)
        return 0;
    size_t off = (size_t)(p - text);
    if (sw_engine_llamacpp_bootlog(p, len - off, NULL, r, NULL))
        return SW_ENOMEM;
    if (r->n_ctx < 0 && !r->n_kv)
        return 0; /* it died before its context: the main report's failure says why */
    json_t *d = json_object();
    if (!d)
        return SW_ENOMEM;
    int rc = sw_json_set_new(d, "report", sw_engine_llamacpp_report_json(r));
    rc |= sw_json_set_new(d, "precision", sw_engine_llamacpp_precision_json(r));
    return rc | sw_json_set_new(o, "draft", d);
}

static int llamacpp_bootlog(const char *text, size_t len, const char *where,
                            const struct sw_bootlog_hints *hints, json_t **out,
                            struct sw_boot_status *st, struct sw_err *e)
{
    struct sw_bootlog_report *r = sw_malloc(sizeof(*r));
    struct sw_boot_status s;
    json_t *o = NULL;
    int rc;
    *out = NULL;
    if (!r)
        return sw_err_set(e, SW_ENOMEM, "%s: out of memory", where);
    rc = sw_engine_llamacpp_bootlog(text, len, hints, r, &s);
    if (rc) {
        sw_err_set(e, rc, "%s: cannot read the boot log", where);
        goto out;
    }
    /* Nothing llama.cpp prints was found (no build line, no phase, no failure it names). */
    if (!s.build[0] && !s.booted && s.phase <= SW_PHASE_ARGS &&
        (!s.failed || s.failure.cls == SW_BOOT_UNKNOWN))
        sw__bootlog_not_this_engine(text, len, where, "llama.cpp", hints, &s);
    o = json_object();
    rc = o ? 0 : SW_ENOMEM;
    if (!rc) {
        rc |= sw_json_set_str(o, "engine", "llama.cpp");
        rc |= sw_json_set_str(o, "log", where);
        rc |= sw_json_set_str(o, "build", s.build[0] ? s.build : NULL);
        rc |= sw_json_set_bool(o, "booted", s.booted);
        rc |= sw_json_set_str(o, "phase", sw_boot_phase_name(s.phase));
        rc |= sw_json_set_int(o, "lines", s.n_lines);
        rc |= sw_json_set_new(o, "report", sw_engine_llamacpp_report_json(r));
        rc |= sw_json_set_new(o, "precision", sw_engine_llamacpp_precision_json(r));
        rc |= sw_json_set_new(o, "failure",
                              s.failed ? sw_boot_failure_to_json(&s.failure) : json_null());
        rc |= rc ? 0 : draft_json(text, len, r, o);
    }
    if (rc) {
        sw_err_set(e, SW_ENOMEM, "%s: out of memory", where);
        rc = SW_ENOMEM;
        json_decref(o);
        o = NULL;
        goto out;
    }
    if (st)
        *st = s;
    *out = o;
out:
    sw_free(r);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * HTTP errors: {"error": {"code", "message", "type"[, "n_prompt_tokens", "n_ctx"]}}
 * (tools/server/server-common.cpp format_error_response; server-context.cpp send_error).
 */
static int llamacpp_error_shape(int status, const char *body, size_t len,
                                struct sw_engine_error *out)
{
    memset(out, 0, sizeof(*out));
    out->status = status;
    out->n_prompt_tokens = out->n_ctx = -1;
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    json_t *err = j ? json_object_get(j, "error") : NULL;
    if (!json_is_object(err)) {
        json_decref(j);
        return SW_EPARSE;
    }
    const char *type = json_string_value(json_object_get(err, "type"));
    const char *msg = json_string_value(json_object_get(err, "message"));
    json_t *code = json_object_get(err, "code");
    snprintf(out->type, sizeof(out->type), "%s", type ? type : "");
    snprintf(out->message, sizeof(out->message), "%s", msg ? msg : "");
    if (json_is_integer(code) && !status)
        out->status = (int)json_integer_value(code);
    json_t *n = json_object_get(err, "n_prompt_tokens");
    if (json_is_integer(n))
        out->n_prompt_tokens = json_integer_value(n);
    n = json_object_get(err, "n_ctx");
    if (json_is_integer(n))
        out->n_ctx = json_integer_value(n);
    json_decref(j);
    return 0;
}

/* tools/server/server-task.cpp server_task_result_metrics::to_metrics, prefixed "llamacpp:". */
static const struct sw_engine_metric llamacpp_metrics[] = {
    {"llamacpp:prompt_tokens_total", "counter", "prompt tokens processed, cache hits excluded"},
    {"llamacpp:prompt_tokens_cached_total", "counter", "prompt tokens reused from the cache"},
    {"llamacpp:prompt_seconds_total", "counter", "time spent processing prompts"},
    {"llamacpp:tokens_predicted_total", "counter", "tokens generated"},
    {"llamacpp:tokens_predicted_seconds_total", "counter", "time spent generating"},
    {"llamacpp:n_decode_total", "counter", "llama_decode() calls"},
    {"llamacpp:n_tokens_max", "counter", "largest sequence seen (prompt + generation)"},
    {"llamacpp:spec_decode_num_draft_tokens_total", "counter", "draft tokens generated"},
    {"llamacpp:spec_decode_num_accepted_tokens_total", "counter", "draft tokens accepted"},
    {"llamacpp:spec_decode_num_drafts_total", "counter", "speculative verification steps"},
    {"llamacpp:spec_decode_num_accepted_tokens_per_pos_total", "counter",
     "draft tokens accepted, by position (label position)"},
    {"llamacpp:prompt_tokens_seconds", "gauge", "average prompt throughput, tokens/s"},
    {"llamacpp:predicted_tokens_seconds", "gauge", "average generation throughput, tokens/s"},
    {"llamacpp:requests_processing", "gauge", "requests being processed"},
    {"llamacpp:requests_deferred", "gauge", "requests waiting for a slot"},
    {"llamacpp:n_busy_slots_per_decode", "gauge", "average busy slots per llama_decode()"},
};

static const char *const llamacpp_aliases[] = {"llamacpp", "llama-server", "llama_cpp", NULL};

const struct sw_engine sw__engine_llamacpp = {
    .name = "llama.cpp",
    .aliases = llamacpp_aliases,
    .default_binary = "llama-server",
    .render = sw__llamacpp_render_endpoint,
    .bootlog = llamacpp_bootlog,
    .diff = sw__llamacpp_diff,
    .error_shape = llamacpp_error_shape,
    .health_path = "/health",
    .health_loading_status = 503,
    .liveness_path = SW__LIVENESS_PATH,
    .liveness_body = SW__LIVENESS_BODY,
    .metrics = llamacpp_metrics,
    .n_metrics = SW_ARRAY_LEN(llamacpp_metrics),
};

const char *sw_engine_llamacpp_find_server(char *out, size_t n, bool *on_path)
{
    const char *path = getenv("PATH");
    if (on_path)
        *on_path = false;
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len && p[0] == '/') {
            snprintf(out, n, "%.*s/llama-server", (int)len, p);
            if (access(out, X_OK) == 0) {
                if (on_path)
                    *on_path = true;
                return out;
            }
        }
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
