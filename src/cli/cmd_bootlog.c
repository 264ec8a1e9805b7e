/*
 * slipway bootlog parse --engine ENGINE LOG [--model FILE] [--json]
 * slipway bootlog diff PREDICTED.json PRINTED.json [--engine ENGINE] [--json]
 *
 * parse: what the engine printed at boot, as the same `report` object `slipway plan` prints, plus
 *        the classified failure when the boot failed. Exit 0 booted, 1 failed or unfinished,
 *        2 unusable input.
 * diff:  predicted vs printed, field by field (each file: a report, or an object holding one
 *        under "report", as `plan --json` and `bootlog parse --json` print). Exit 0 when every
 *        exact field matches, 1 on a mismatch.
 * record: parse, then store the boot in the ledger (sw_ledger_record_boot) with the log's excerpt:
 *        slipway bootlog record ENDPOINT LOG [--engine E] [--model FILE] [--shape SHAPE.json]
 *                               [--predicted PLAN.json] [--started TIME] [--ledger PATH |
 *                               --fleet FLEET.yaml] [--json]
 *        Exit 0 recorded a boot that came up, 1 recorded one that failed, 2 unusable input.
 */
#include "cli.h"

#include <slipway/engine.h>
#include <slipway/ledger.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct sw_opt parse_opts[] = {
    {"engine", 0, "ENGINE", 0, "llama.cpp (default), vllm or sglang", NULL},
    {"model", 0, "FILE", 0, "the payload, so a bad file is named by its bytes", NULL},
    {0},
};

static const struct sw_opt diff_opts[] = {
    {"engine", 0, "ENGINE", 0, "llama.cpp (default), vllm or sglang", NULL},
    {0},
};

static const struct sw_opt record_opts[] = {
    {"engine", 0, "ENGINE", 0, "llama.cpp (default), vllm or sglang", NULL},
    {"model", 0, "FILE", 0, "the payload, so a bad file is named by its bytes", NULL},
    {"shape", 0, "SHAPE.json", 0, "the shape booted (an object, or {\"shape\": ...})", NULL},
    {"predicted", 0, "PLAN.json", 0, "the prediction (a report, or plan --json's output)", NULL},
    {"started", 0, "TIME", 0, "when the boot started (2026-10-01T13:27:17Z)", NULL},
    {"ledger", 0, "PATH", 0, "the ledger (wins over --fleet)", NULL},
    {"fleet", 0, "FLEET.yaml", 0, "the ledger beside this fleet file", NULL},
    {"no-ledger", 0, NULL, SW_OPT_REFUSE,
     "bootlog record writes the boot into the ledger: use bootlog parse to read a log alone", NULL},

    {0},
};

static const char *const parse_examples[] = {
    "slipway bootlog parse server.log",
    "slipway bootlog parse --engine vllm vllm.log --json",
    "llama-server ... 2>&1 | slipway bootlog parse -",
    NULL,
};

static const char *const diff_examples[] = {
    "slipway bootlog diff predicted.json printed.json",
    NULL,
};

static const char *const record_examples[] = {
    "slipway bootlog record local server.log --fleet examples/local.yaml",
    NULL,
};

static const struct sw_cmd_spec spec_parse = {
    .name = "bootlog parse",
    .summary = "an engine's boot log: its report and classified failure",
    .synopsis = "[--engine llama.cpp] LOG [--model FILE] [--json]",
    .about = "What the engine printed at boot, as the same `report` object `slipway plan` prints,\n"
             "plus the classified failure when the boot failed. LOG '-' reads stdin.\n"
             "Exit 0 booted, 1 failed or unfinished, 2 unusable input.",
    .opts = parse_opts,
    .max_args = 1,
    .examples = parse_examples,
};

static const struct sw_cmd_spec spec_diff = {
    .name = "bootlog diff",
    .summary = "predicted vs printed, field by field",
    .synopsis = "PREDICTED.json PRINTED.json [--engine llama.cpp] [--json]",
    .about =
        "Each file: a report, or an object holding one under \"report\" (as `plan --json` and\n"
        "`bootlog parse --json` print). Exit 0 every exact field matches, 1 a mismatch.",
    .opts = diff_opts,
    .max_args = 2,
    .examples = diff_examples,
};

static const struct sw_cmd_spec spec_record = {
    .name = "bootlog record",
    .summary = "parse a boot log and store the boot in the ledger",
    .synopsis =
        "ENDPOINT LOG [--engine E] [--model FILE] [--shape SHAPE.json]\n"
        "    [--predicted PLAN.json] [--started TIME] [--ledger PATH | --fleet FLEET.yaml]\n"
        "    [--json]",
    .about = "Exit 0 recorded a boot that came up, 1 recorded one that failed, 2 unusable input.",
    .opts = record_opts,
    .max_args = 2,
    .examples = record_examples,
};

static const struct sw_cmd_spec *const subs[] = {&spec_parse, &spec_diff, &spec_record, NULL};

static const struct sw_opt no_opts[] = {{0}};

const struct sw_cmd_spec sw_spec_bootlog = {
    .name = "bootlog",
    .summary = "read an engine's boot log: its report and failure; diff predicted vs printed",
    .opts = no_opts,
    .max_args = -1,
    .subs = subs,
};

static void print_bytes(const json_t *v)
{
    char b[32];
    if (!json_is_integer(v)) {
        printf("%12s", "-");
        return;
    }
    printf("%9s MiB", sw_fmt_mib((uint64_t)json_integer_value(v), b, sizeof(b)));
}

static void print_int(const char *label, const json_t *v)
{
    if (json_is_integer(v))
        printf("  %-12s %" JSON_INTEGER_FORMAT "\n", label, json_integer_value(v));
    else if (json_is_boolean(v))
        printf("  %-12s %s\n", label, json_is_true(v) ? "true" : "false");
    else
        printf("  %-12s -\n", label);
}

/* One report or failure field of an engine whose report is not llama.cpp's shape (vLLM, SGLang):
 * the engine's own names, in the order the parser set them; byte counts also in MiB. */
static void print_field(const char *key, const json_t *v)
{
    char b[32];
    size_t kl = strlen(key);
    bool bytes = kl > 6 && !strcmp(key + kl - 6, "_bytes");
    if (json_is_integer(v) && bytes && json_integer_value(v) >= 0)
        printf("  %-22s %" JSON_INTEGER_FORMAT " (%s MiB)\n", key, json_integer_value(v),
               sw_fmt_mib((uint64_t)json_integer_value(v), b, sizeof(b)));
    else if (json_is_integer(v))
        printf("  %-22s %" JSON_INTEGER_FORMAT "\n", key, json_integer_value(v));
    else if (json_is_real(v))
        printf("  %-22s %g\n", key, json_real_value(v));
    else if (json_is_string(v))
        printf("  %-22s %s\n", key, json_string_value(v));
    else if (json_is_boolean(v))
        printf("  %-22s %s\n", key, json_is_true(v) ? "true" : "false");
}

/* "line N: message", or the message alone when the log gave no line (null). */
static void print_where(const json_t *f)
{
    const json_t *line = json_object_get(f, "line");
    printf("\n  ");
    if (json_is_integer(line))
        printf("line %" JSON_INTEGER_FORMAT ": ", json_integer_value(line));
    printf("%s\n", json_string_value(json_object_get(f, "message")));
}

static void print_human_other(const json_t *o)
{
    const json_t *r = json_object_get(o, "report");
    const json_t *f = json_object_get(o, "failure");
    const char *key;
    const json_t *v;
    size_t n = 0;
    json_object_foreach((json_t *)r, key, v)
    {
        if (!json_is_null(v)) {
            print_field(key, v);
            n++;
        }
    }
    if (!n)
        printf("  (no report line printed)\n");
    if (json_is_object(f)) {
        printf("FAILED: %s", json_string_value(json_object_get(f, "class")));
        const char *ph = json_string_value(json_object_get(f, "phase"));
        if (ph)
            printf(" (phase %s)", ph);
        print_where(f);
        json_object_foreach((json_t *)f, key, v)
        {
            if (strcmp(key, "class") && strcmp(key, "phase") && strcmp(key, "line") &&
                strcmp(key, "message") && !json_is_null(v))
                print_field(key, v);
        }
    } else if (!json_is_true(json_object_get(o, "booted"))) {
        printf("UNFINISHED: the log ends during %s without an error\n",
               json_string_value(json_object_get(o, "phase")));
    }
}

/* A llama.cpp report's figures, one per line. */
static void print_llamacpp_report(const json_t *r)
{
    print_int("n_ctx", json_object_get(r, "n_ctx"));
    print_int("n_ctx_seq", json_object_get(r, "n_ctx_seq"));
    print_int("n_seq_max", json_object_get(r, "n_seq_max"));
    print_int("kv_unified", json_object_get(r, "kv_unified"));
    size_t i;
    const json_t *kv;
    json_array_foreach(json_object_get(r, "kv_caches"), i, kv)
    {
        printf("  kv[%zu]%s     %" JSON_INTEGER_FORMAT " cells, %" JSON_INTEGER_FORMAT
               " layers, %" JSON_INTEGER_FORMAT " seqs, K %s ",
               i, json_is_true(json_object_get(kv, "swa")) ? " swa" : "    ",
               json_integer_value(json_object_get(kv, "cells")),
               json_integer_value(json_object_get(kv, "layers")),
               json_integer_value(json_object_get(kv, "seqs")),
               json_string_value(json_object_get(kv, "k_type")));
        print_bytes(json_object_get(kv, "k_bytes"));
        printf(", V %s ", json_string_value(json_object_get(kv, "v_type")));
        print_bytes(json_object_get(kv, "v_bytes"));
        printf("\n");
    }
    const json_t *rs = json_object_get(r, "recurrent");
    if (json_is_object(rs)) {
        printf("  recurrent    %" JSON_INTEGER_FORMAT " cells, %" JSON_INTEGER_FORMAT " layers, R ",
               json_integer_value(json_object_get(rs, "cells")),
               json_integer_value(json_object_get(rs, "layers")));
        print_bytes(json_object_get(rs, "r_bytes"));
        printf(", S ");
        print_bytes(json_object_get(rs, "s_bytes"));
        printf("\n");
    }
    printf("  model    ");
    print_bytes(json_object_get(r, "model_bytes"));
    printf("\n  output   ");
    print_bytes(json_object_get(r, "output_bytes"));
    printf("\n  compute  ");
    print_bytes(json_object_get(r, "compute_bytes"));
    printf("\n");
}

static void print_human_parse(const json_t *o, const struct sw_engine *eng)
{
    const json_t *r = json_object_get(o, "report");
    const json_t *f = json_object_get(o, "failure");
    const char *build = json_string_value(json_object_get(o, "build"));
    printf("%s boot log %s: %s", json_string_value(json_object_get(o, "engine")),
           json_string_value(json_object_get(o, "log")),
           json_is_true(json_object_get(o, "booted")) ? "booted" : "did not boot");
    if (build)
        printf(" (build %s)", build);
    printf("\n");
    /* vLLM and SGLang print other figures than llama-server (KV tokens, concurrency, pools):
     * their reports are shown by their own names, not as llama.cpp's lines */
    if (strcmp(eng->name, "llama.cpp")) {
        print_human_other(o);
        return;
    }
    print_llamacpp_report(r);
    const json_t *dr = json_object_get(json_object_get(o, "draft"), "report");
    if (json_is_object(dr)) {
        printf("draft model (-md), its own context:\n");
        print_llamacpp_report(dr);
    }
    if (json_is_object(f)) {
        const char *ph = json_string_value(json_object_get(f, "phase"));
        const char *pk = json_string_value(json_object_get(f, "payload_kind"));
        printf("FAILED: %s", json_string_value(json_object_get(f, "class")));
        if (ph)
            printf(" (phase %s)", ph);
        if (pk)
            printf(" (payload %s)", pk);
        print_where(f);
    } else if (!json_is_true(json_object_get(o, "booted"))) {
        printf("UNFINISHED: the log ends during %s without an error\n",
               json_string_value(json_object_get(o, "phase")));
    }
}

static int cmd_parse(const struct sw_args *a)
{
    const char *engine = sw_args_str(a, "engine"), *path = a->npos ? a->pos[0] : NULL;
    const char *model = sw_args_str(a, "model");
    bool json = a->json;
    struct sw_err e;
    sw_err_clear(&e);
    if (!engine)
        engine = "llama.cpp";
    if (!path)
        return sw_args_usage(a, "which LOG? ('-' reads stdin)");
    const struct sw_engine *eng = sw_engine_find(engine);
    if (!eng)
        return sw_args_usage(a, "unknown engine '%s'", engine);

    char *text = NULL;
    size_t len = 0;
    int rc;
    if (!strcmp(path, "-")) {
        struct sw_buf b;
        char chunk[65536];
        size_t n;
        sw_buf_init(&b, SW_BOOTLOG_MAX);
        rc = 0;
        while (!rc && (n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
            rc = sw_buf_append(&b, chunk, n);
        if (rc) {
            sw_buf_free(&b);
            sw_err_set(&e, rc, "<stdin>: larger than %u MiB", SW_BOOTLOG_MAX >> 20);
            return sw_cli_fail(&e, json);
        }
        len = b.len;
        text = sw_buf_steal(&b);
        path = "<stdin>";
    } else {
        rc = sw_read_file(path, SW_BOOTLOG_MAX, &text, &len, &e);
        if (rc)
            return sw_cli_fail(&e, json);
    }
    struct sw_bootlog_hints h = {0};
    h.exit_code = -1;
    h.payload = model;
    json_t *o = NULL;
    struct sw_boot_status st;
    rc = eng->bootlog(text, len, path, model ? &h : NULL, &o, &st, &e);
    sw_free(text);
    if (rc)
        return sw_cli_fail(&e, json);
    if (json)
        sw_json_print(stdout, o, true);
    else
        print_human_parse(o, eng);
    json_decref(o);
    return st.failed || !st.booted ? SW_EXIT_FAIL : SW_EXIT_OK;
}

/* One value of a diff row as the table shows it, right-aligned in width: integers and reals
 * (vLLM's and SGLang's figures) as numbers, strings and booleans as they are, anything else "-". */
static void print_cell(const json_t *v, int width)
{
    if (json_is_integer(v))
        printf(" %*" JSON_INTEGER_FORMAT, width, json_integer_value(v));
    else if (json_is_real(v))
        printf(" %*.6g", width, json_real_value(v));
    else if (json_is_string(v))
        printf(" %*.31s", width, json_string_value(v));
    else if (json_is_boolean(v))
        printf(" %*s", width, json_is_true(v) ? "true" : "false");
    else
        printf(" %*s", width, "-");
}

static void print_human_diff(const json_t *d)
{
    size_t i;
    const json_t *f;
    printf("%-28s %16s %16s %10s  %-13s %s\n", "field", "predicted", "printed", "delta", "verdict",
           "tolerance");
    json_array_foreach(json_object_get(d, "fields"), i, f)
    {
        char dl[32] = "";
        const json_t *dj = json_object_get(f, "delta");
        if (json_is_integer(dj))
            snprintf(dl, sizeof(dl), "%+" JSON_INTEGER_FORMAT, json_integer_value(dj));
        else if (json_is_real(dj))
            snprintf(dl, sizeof(dl), "%+.4g", json_real_value(dj));
        /* llama.cpp's tolerances are integer bytes; vLLM's and SGLang's are in the field's unit */
        const json_t *tj = json_object_get(f, "tolerance");
        char tb[160] = "exact";
        if (json_is_integer(tj) && json_integer_value(tj))
            snprintf(tb, sizeof(tb), "+-%" JSON_INTEGER_FORMAT " B", json_integer_value(tj));
        else if (json_is_real(tj) && json_real_value(tj) > 0)
            snprintf(tb, sizeof(tb), "+-%.4g", json_real_value(tj));
        const char *verdict = json_string_value(json_object_get(f, "verdict"));
        if (!strcmp(verdict, "estimate"))
            snprintf(tb, sizeof(tb), "%s", json_string_value(json_object_get(f, "note")));
        printf("%-28s", json_string_value(json_object_get(f, "field")));
        print_cell(json_object_get(f, "predicted"), 16);
        print_cell(json_object_get(f, "printed"), 16);
        printf(" %10s  %-13s %s\n", dl, verdict, tb);
    }
    printf("%s: %" JSON_INTEGER_FORMAT " mismatch(es)\n",
           json_is_true(json_object_get(d, "match")) ? "MATCH" : "MISMATCH",
           json_integer_value(json_object_get(d, "mismatches")));
}

static int cmd_diff(const struct sw_args *args)
{
    const char *engine = sw_args_str(args, "engine");
    bool json = args->json;
    struct sw_err e;
    sw_err_clear(&e);
    if (!engine)
        engine = "llama.cpp";
    if (args->npos != 2)
        return sw_args_usage(args, "two files: PREDICTED.json PRINTED.json");
    const char *pa = args->pos[0], *pb = args->pos[1];
    const struct sw_engine *eng = sw_engine_find(engine);
    if (!eng)
        return sw_args_usage(args, "unknown engine '%s'", engine);
    json_t *a = sw_json_load_file(pa, 16u << 20, &e);
    if (!a)
        return sw_cli_fail(&e, json);
    json_t *b = sw_json_load_file(pb, 16u << 20, &e);
    if (!b) {
        json_decref(a);
        return sw_cli_fail(&e, json);
    }
    json_t *d = NULL;
    int rc = eng->diff(a, b, NULL, &d, &e);
    json_decref(a);
    json_decref(b);
    if (rc)
        return sw_cli_fail(&e, json);
    if (json)
        sw_json_print(stdout, d, true);
    else
        print_human_diff(d);
    int code = json_is_true(json_object_get(d, "match")) ? SW_EXIT_OK : SW_EXIT_FAIL;
    json_decref(d);
    return code;
}

static int cmd_record(const struct sw_args *a)
{
    const char *engine = sw_args_str(a, "engine"), *model = sw_args_str(a, "model");
    const char *shape_path = sw_args_str(a, "shape"), *pred_path = sw_args_str(a, "predicted");
    const char *started = sw_args_str(a, "started"), *ledger = sw_args_str(a, "ledger");
    const char *fleet = sw_args_str(a, "fleet");
    bool json = a->json;
    struct sw_err e;
    sw_err_clear(&e);
    if (!engine)
        engine = "llama.cpp";
    if (a->npos != 2)
        return sw_args_usage(a, "ENDPOINT LOG, one log at a time");
    const char *endpoint = a->pos[0], *path = a->pos[1];
    const struct sw_engine *eng = sw_engine_find(engine);
    if (!eng)
        return sw_args_usage(a, "unknown engine '%s'", engine);
    struct sw_ledger_boot b = {
        .endpoint = endpoint, .engine = eng->name, .duration_ms = -1, .source = "bootlog record"};
    if (started && sw_ledger_parse_time(started, &b.started_at, &e)) {
        sw_err_prefix(&e, "--started");
        return sw_cli_fail(&e, json);
    }
    char *text = NULL, abs[4096];
    size_t len = 0;
    json_t *o = NULL, *shape = NULL, *pred = NULL, *failure = NULL, *out = NULL;
    struct sw_ledger l = {0};
    char lpath[4096];
    int64_t id = 0;
    int rc = sw_read_file(path, SW_BOOTLOG_MAX, &text, &len, &e);
    if (!rc && shape_path) {
        shape = sw_engine_json_inner(shape_path, "shape", &e);
        if (!shape)
            rc = e.code;
    }
    if (!rc && pred_path) {
        pred = sw_engine_json_inner(pred_path, "report", &e);
        if (!pred)
            rc = e.code;
    }
    struct sw_bootlog_hints h = {.exit_code = -1, .payload = model};
    struct sw_boot_status st;
    if (!rc)
        rc = eng->bootlog(text, len, path, model ? &h : NULL, &o, &st, &e);
    if (rc)
        goto out;
    failure = sw_engine_boot_failure(o, &st);
    b.failure = json_is_object(failure) ? failure : NULL;
    b.report = json_is_object(json_object_get(o, "report")) ? json_object_get(o, "report") : NULL;
    b.predicted = pred;
    b.shape = shape;
    b.engine_version = st.build[0] ? st.build : NULL;
    b.log_excerpt = text;
    b.log_len = len;
    b.log_path = realpath(path, abs) ? abs : path;
    bool opened;
    rc = sw_ledger_open_for(&l, ledger, fleet, NULL, SW_LEDGER_MUST_EXIST, &opened, lpath,
                            sizeof(lpath), &e);
    if (!rc)
        rc = sw_ledger_record_boot(&l, &b, &id, &e);
    if (!rc)
        rc = sw_ledger_boot(&l, id, &out, &e);
out:
    sw_ledger_close(&l);
    sw_free(text);
    json_decref(o);
    json_decref(shape);
    json_decref(pred);
    if (rc) {
        json_decref(failure);
        json_decref(out);
        return sw_cli_fail(&e, json);
    }
    if (json) {
        json_t *j = json_pack("{s:s,s:O}", "ledger", lpath, "boot", out);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        const char *cls = json_string_value(json_object_get(failure, "class"));
        const char *ph = json_string_value(json_object_get(failure, "phase"));
        printf("recorded boot #%lld of %s in %s: %s", (long long)id, endpoint, lpath,
               cls ? "failed" : "ok");
        if (cls)
            printf(" (%s%s%s)", cls, ph ? " at " : "", ph ? ph : "");
        printf("\n");
    }
    json_decref(out);
    int code = b.failure ? SW_EXIT_FAIL : SW_EXIT_OK;
    json_decref(failure);
    return code;
}

int sw_cmd_bootlog(int argc, char **argv)
{
    const struct sw_cmd_spec *sub;
    struct sw_args a;
    int rc;
    if (!sw_args_parse_sub(&sw_spec_bootlog, argc, argv, &sub, &a, &rc))
        return rc;
    if (sub == &spec_parse)
        return cmd_parse(&a);
    if (sub == &spec_diff)
        return cmd_diff(&a);
    return cmd_record(&a);
}
