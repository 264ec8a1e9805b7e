/*
 * slipway ledger: read and add to the ledger by hand (list, show, export, import, usage,
 * add-usage, note, rules, add-rule, verify, path; their options and synopses are the tables
 * below, `slipway ledger --help` prints them). Every sub-verb reads its options, makes ONE call
 * of the ledger's by-hand API (sw_ledger_at_*, src/ledger/hand.c: it finds and opens the ledger
 * --ledger or --fleet names, does the work and closes it) and prints the answer: text, or the
 * JSON the call handed back with --json.
 *
 * What it deliberately does not do: open the ledger or run anything of it itself. Boots are
 * recorded by `slipway up` and `slipway bootlog record`, through sw_ledger_record_boot.
 */
#include "cli.h"

#include <slipway/ledger.h>

#include <stdlib.h>
#include <string.h>

struct opts {
    const char *ledger, *fleet, *endpoint, *outcome, *device, *used, *total, *free, *source;
    const char *shape, *note, *at_time, *author, *expr, *reason, *output;
    int64_t limit, boot, usage, rule, rung, battery, bench;
    bool json;
    const char *pos[64];
    int npos;
    struct sw_ledger_at at; /* where the ledger is (--ledger, --fleet) and what was found there */
};

/* Every sub-verb takes these: where the ledger is (and no --no-ledger: the ledger is the verb). */
#define LEDGER_OPTS                                                                                 \
    {"ledger", 0, "PATH", 0, "the ledger (wins over --fleet)", NULL},                               \
        {"no-ledger", 0, NULL, SW_OPT_REFUSE, "the ledger verb reads and writes the ledger", NULL}, \
    {                                                                                               \
        "fleet", 0, "FLEET.yaml", 0, "the ledger beside this fleet file", NULL                      \
    }
#define OPT_ENDPOINT(what)                                                                         \
    {                                                                                              \
        "endpoint", 0, "E", 0, what, NULL                                                          \
    }
#define OPT_ID(name, what)                                                                         \
    {                                                                                              \
        name, 0, "ID", 0, what, NULL                                                               \
    }
static const struct sw_opt parent_opts[] = {LEDGER_OPTS, {0}};
static const struct sw_opt list_opts[] = {
    LEDGER_OPTS,
    OPT_ENDPOINT("only this endpoint's boots"),
    {"outcome", 0, "ok|failed", 0, "only boots with this outcome", NULL},
    {"limit", 0, "N", 0, "at most N rows", NULL},
    {0},
};
static const struct sw_opt plain_opts[] = {LEDGER_OPTS, {0}};
static const struct sw_opt export_opts[] = {
    LEDGER_OPTS,
    OPT_ENDPOINT("only this endpoint's rows"),
    {"output", 'o', "FILE", 0, "write the document here (default: stdout)", NULL},
    {0},
};
static const struct sw_opt usage_opts[] = {
    LEDGER_OPTS,
    OPT_ENDPOINT("only this endpoint's readings"),
    {"limit", 0, "N", 0, "at most N rows", NULL},
    {0},
};
static const struct sw_opt add_usage_opts[] = {
    LEDGER_OPTS,
    OPT_ENDPOINT("the endpoint the reading is of (required)"),
    {"device", 0, "D", 0, "the device (required)", NULL},
    {"used", 0, "MIB", 0, "memory used: 21684MiB, 21.2GiB (required)", NULL},
    {"total", 0, "MIB", 0, "the device's memory (required)", NULL},
    {"free", 0, "MIB", 0, "the tool's free figure, when it printed one", NULL},
    {"source", 0, "TOOL", 0, "nvidia-smi, rocm-smi, \"by hand\" (default)", NULL},
    OPT_ID("boot", "the boot the reading was taken under"),
    {"shape", 0, "HASH", 0, "the shape it was taken under (instead of --boot)", NULL},
    {"note", 0, "TEXT", 0, "a note on the reading", NULL},
    {"at", 0, "TIME", 0, "when it was taken: 2026-10-01T13:27:17Z (default: now)", NULL},
    {0},
};
static const struct sw_opt note_opts[] = {
    LEDGER_OPTS,
    OPT_ID("boot", "the note is on this boot"),
    OPT_ENDPOINT("the note is on this endpoint"),
    {"shape", 0, "HASH", 0, "the note is on this shape", NULL},
    OPT_ID("usage", "the note is on this usage reading"),
    OPT_ID("rule", "the note is on this rule"),
    OPT_ID("rung", "the note is on this rung"),
    OPT_ID("battery", "the note is on this battery"),
    OPT_ID("bench", "the note is on this bench"),
    {"author", 0, "A", 0, "who wrote it", NULL},
    {0},
};
static const struct sw_opt rules_opts[] = {
    LEDGER_OPTS,
    OPT_ENDPOINT("only this endpoint's (and every endpoint's) rules"),
    {0},
};
static const struct sw_opt add_rule_opts[] = {
    LEDGER_OPTS,
    {"expr", 0, "EXPR", 0, "the rule: 'slots == 2', 'ctx > 131072 && kv_dtype == \"q8_0\"'", NULL},
    {"reason", 0, "TEXT", 0, "why (required)", NULL},
    OPT_ENDPOINT("the endpoint it holds for (default: every endpoint)"),
    OPT_ID("boot", "the boot that taught it (its failure is kept)"),
    {"source", 0, "WHO", 0, "where it came from (default: operator)", NULL},
    {0},
};

#define SUB(var, nm, sum, syn, table, maxa, ...)                                                   \
    static const struct sw_cmd_spec var = {.name = "ledger " nm,                                   \
                                           .summary = sum,                                         \
                                           .synopsis = syn,                                        \
                                           .about = ledger_about,                                  \
                                           .opts = table,                                          \
                                           .max_args = maxa,                                       \
                                           .examples = (const char *const[]){__VA_ARGS__, NULL}}

static const char ledger_about[] =
    "The ledger: --ledger PATH (wins) | --fleet FLEET.yaml (ledger beside it); else\n"
    "$SLIPWAY_LEDGER, else $XDG_DATA_HOME/slipway/ledger.sqlite.";

SUB(spec_list, "list", "boots, newest first",
    "[--endpoint E] [--outcome ok|failed] [--limit N] [--json]", list_opts, 0,
    "slipway ledger list --fleet examples/local.yaml",
    "slipway ledger list --endpoint frank-primary --outcome failed --json");
SUB(spec_show, "show", "one boot in full", "ID [--json]", plain_opts, 1, "slipway ledger show 12");
SUB(spec_export, "export", "everything as JSON (import reads it)", "[--endpoint E] [-o FILE]",
    export_opts, 0, "slipway ledger export -o ledger.json");
SUB(spec_import, "import", "record a document (one transaction)", "FILE.json [--json]", plain_opts,
    1, "slipway ledger import ledger.json");
SUB(spec_usage, "usage", "device memory readings", "[--endpoint E] [--json]", usage_opts, 0,
    "slipway ledger usage --endpoint frank-primary");
SUB(spec_add_usage, "add-usage", "record a device memory reading by hand",
    "--endpoint E --device D --used 21684MiB --total 24576MiB [--free 2441MiB]\n"
    "    [--source nvidia-smi|rocm-smi|\"by hand\"] [--boot ID | --shape HASH]\n"
    "    [--note TEXT] [--at 2026-10-01T13:27:17Z] [--json]",
    add_usage_opts, 0,
    "slipway ledger add-usage --endpoint frank-primary --device r9700-0 --used 21684MiB --total "
    "24576MiB --source rocm-smi --boot 12");
SUB(spec_note, "note", "a note on a row, or on the ledger",
    "[--boot ID|--endpoint E|--shape HASH|--usage ID|--rule ID|--rung ID|\n"
    "    --battery ID|--bench ID] [--author A] TEXT...",
    note_opts, -1, "slipway ledger note --boot 12 the fan was loud");
SUB(spec_rules, "rules", "failed shapes and known-bad rules (what the gates refuse)",
    "[--endpoint E] [--json]", rules_opts, 0, "slipway ledger rules --endpoint frank-primary");
SUB(spec_add_rule, "add-rule", "record a known-bad rule",
    "--expr EXPR --reason TEXT [--endpoint E] [--boot ID] [--json]", add_rule_opts, 0,
    "slipway ledger add-rule --expr 'slots == 2' --reason 'OOM at warmup' --endpoint "
    "frank-primary");
SUB(spec_verify, "verify", "integrity_check + foreign_key_check", "[--json]", plain_opts, 0,
    "slipway ledger verify --json");
SUB(spec_path, "path", "where the ledger is, row counts", "[--json]", plain_opts, 0,
    "slipway ledger path");
static const struct sw_cmd_spec *const subs[] = {
    &spec_list, &spec_show,  &spec_export,   &spec_import, &spec_usage, &spec_add_usage,
    &spec_note, &spec_rules, &spec_add_rule, &spec_verify, &spec_path,  NULL,
};

const struct sw_cmd_spec sw_spec_ledger = {
    .name = "ledger",
    .summary = "the record of boots, usage readings, batteries, benches and rules",
    .about = ledger_about,
    .opts = parent_opts,
    .max_args = -1,
    .subs = subs,
};

static int parse_id(const char *flag, const char *v, int64_t *out, bool json)
{
    struct sw_err e = {0};
    if (sw_parse_i64(v, out, &e) || *out < 1)
        return sw_cli_usage_json("ledger", json, "%s wants a row id (a number >= 1), got '%s'",
                                 flag, v);
    return 0;
}

/* The sub-verb's line, read by its table, as the struct the sub-verbs below read: pos[0] is the
 * sub-verb's name, pos[1..] its arguments. */
static int parse_args(int argc, char **argv, struct opts *o, const struct sw_cmd_spec **sub)
{
    struct sw_args a;
    int rc;
    memset(o, 0, sizeof(*o));
    const struct {
        const char *name;
        const char **v;
    } strs[] = {
        {"ledger", &o->ledger},   {"fleet", &o->fleet},   {"endpoint", &o->endpoint},
        {"outcome", &o->outcome}, {"device", &o->device}, {"used", &o->used},
        {"total", &o->total},     {"free", &o->free},     {"source", &o->source},
        {"shape", &o->shape},     {"note", &o->note},     {"at", &o->at_time},
        {"author", &o->author},   {"expr", &o->expr},     {"reason", &o->reason},
        {"output", &o->output},
    };
    const struct {
        const char *name;
        int64_t *v;
    } ids[] = {{"limit", &o->limit}, {"boot", &o->boot}, {"usage", &o->usage},
               {"rule", &o->rule},   {"rung", &o->rung}, {"battery", &o->battery},
               {"bench", &o->bench}};
    if (!sw_args_parse_sub(&sw_spec_ledger, argc, argv, sub, &a, &rc))
        return rc ? rc : -1;
    o->json = a.json;
    for (int i = 0; i < a.n; i++) {
        const char *name = a.seen[i].opt->name;
        for (size_t k = 0; k < SW_ARRAY_LEN(strs); k++)
            if (!strcmp(name, strs[k].name))
                *strs[k].v = a.seen[i].val;
        for (size_t k = 0; k < SW_ARRAY_LEN(ids); k++) {
            char flag[40];
            if (strcmp(name, ids[k].name))
                continue;
            snprintf(flag, sizeof(flag), "--%s", name);
            rc = parse_id(flag, a.seen[i].val, ids[k].v, o->json);
            if (rc)
                return rc;
        }
    }
    o->at.ledger = o->ledger;
    o->at.fleet = o->fleet;
    o->pos[o->npos++] = strchr((*sub)->name, ' ') + 1;
    for (int i = 0; i < a.npos && o->npos < (int)SW_ARRAY_LEN(o->pos); i++)
        o->pos[o->npos++] = a.pos[i];
    return 0;
}

static const char *jstr(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

static const char *jnum(const json_t *o, const char *k, char *buf, size_t n)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v))
        return sw_fmt_count((uint64_t)json_integer_value(v), buf, n);
    if (json_is_real(v)) {
        snprintf(buf, n, "%.2fx", json_real_value(v));
        return buf;
    }
    return "-";
}

static int cmd_list(struct opts *o)
{
    struct sw_err e = {0};
    json_t *doc = NULL;
    struct sw_ledger_query q = {
        .endpoint = o->endpoint, .outcome = o->outcome, .limit = o->limit, .newest_first = true};
    if (sw_ledger_at_list(&o->at, &q, &doc, &e))
        return sw_cli_fail(&e, o->json);
    json_t *boots = json_object_get(doc, "boots");
    if (o->json) {
        sw_json_print(stdout, doc, true);
    } else if (o->at.missing) {
        printf("no ledger at %s yet: nothing recorded\n", o->at.path);
    } else {
        printf("ledger %s: %zu boot%s%s%s\n", o->at.path, json_array_size(boots),
               json_array_size(boots) == 1 ? "" : "s", o->endpoint ? " of " : "",
               o->endpoint ? o->endpoint : "");
        if (json_array_size(boots))
            printf("%6s  %-20s  %-16s  %-7s  %-26s  %10s  %6s  %s\n", "ID", "STARTED (UTC)",
                   "ENDPOINT", "OUTCOME", "FAILURE", "KV TOKENS", "CONC", "SHAPE");
        size_t i;
        json_t *b;
        json_array_foreach(boots, i, b)
        {
            char fb[64], t1[32], t2[32];
            const char *fc = jstr(b, "failure_class", NULL);
            const char *fp = jstr(b, "failure_phase", NULL);
            snprintf(fb, sizeof(fb), "%s%s%s", fc ? fc : "-", fp ? "/" : "", fp ? fp : "");
            printf("%6lld  %-20s  %-16.16s  %-7s  %-26.26s  %10s  %6s  %s\n",
                   (long long)json_integer_value(json_object_get(b, "id")),
                   jstr(b, "started_at", "-"), jstr(b, "endpoint", "?"), jstr(b, "outcome", "?"),
                   fb, jnum(b, "kv_cache_tokens", t1, sizeof(t1)),
                   jnum(b, "max_concurrency", t2, sizeof(t2)), jstr(b, "shape_summary", "-"));
        }
    }
    json_decref(doc);
    return SW_EXIT_OK;
}

static void print_json_field(const char *label, json_t *v)
{
    if (!v || json_is_null(v))
        return;
    char *s = sw_json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12));
    if (!s)
        return;
    printf("%s:\n", label);
    for (char *line = s; line && *line;) {
        char *nl = strchr(line, '\n');
        printf("  %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
        line = nl ? nl + 1 : NULL;
    }
    sw_free(s);
}

static int cmd_show(struct opts *o)
{
    struct sw_err e = {0};
    json_t *b = NULL;
    int64_t id;
    if (o->npos != 2)
        return sw_cli_usage_json("ledger", o->json, "show takes one boot id");
    int rc = parse_id("show", o->pos[1], &id, o->json);
    if (rc)
        return rc;
    if (sw_ledger_at_show(&o->at, id, &b, &e))
        return sw_cli_fail(&e, o->json);
    if (o->json) {
        sw_json_print(stdout, b, true);
    } else {
        json_t *sh = json_object_get(b, "shape");
        printf("boot %lld of %s: %s", (long long)id, jstr(b, "endpoint", "?"),
               jstr(b, "outcome", "?"));
        if (jstr(b, "failure_class", NULL))
            printf(" (%s%s%s)", jstr(b, "failure_class", ""),
                   jstr(b, "failure_phase", NULL) ? " at " : "", jstr(b, "failure_phase", ""));
        printf("\n");
        printf("  engine       %s %s\n", jstr(b, "engine", "?"), jstr(b, "engine_version", ""));
        printf("  shape        %s\n", jstr(b, "shape_summary", "-"));
        if (json_is_object(sh))
            printf("  shape hash   %s\n", jstr(sh, "hash", "-"));
        char dur[32] = "-";
        if (json_is_integer(json_object_get(b, "duration_ms")))
            sw_fmt_count((uint64_t)json_integer_value(json_object_get(b, "duration_ms")), dur,
                         sizeof(dur));
        printf("  started      %s   ended %s   duration %s ms\n", jstr(b, "started_at", "-"),
               jstr(b, "ended_at", "-"), dur);
        printf("  source       %s\n", jstr(b, "source", "-"));
        if (jstr(b, "source_line", NULL))
            printf("  source line  %s\n", jstr(b, "source_line", ""));
        if (jstr(b, "log_path", NULL))
            printf("  log          %s\n", jstr(b, "log_path", ""));
        const char *docs[][2] = {{"predicted", "predicted"},
                                 {"report", "report (printed by the engine)"},
                                 {"failure", "failure"}};
        print_json_field("shape (canonical)", json_object_get(sh, "canonical"));
        for (size_t k = 0; k < SW_ARRAY_LEN(docs); k++)
            print_json_field(docs[k][1], json_object_get(b, docs[k][0]));
        size_t i;
        json_t *u;
        json_array_foreach(json_object_get(b, "usage"), i, u)
        {
            if (!i)
                printf("usage readings:\n");
            printf("  #%lld %-12s %6lld / %6lld MiB used (%lld free)  %s  %s\n",
                   (long long)json_integer_value(json_object_get(u, "id")), jstr(u, "device", "?"),
                   (long long)json_integer_value(json_object_get(u, "used_mib")),
                   (long long)json_integer_value(json_object_get(u, "total_mib")),
                   (long long)json_integer_value(json_object_get(u, "free_mib")),
                   jstr(u, "source", ""), jstr(u, "note", ""));
        }
        json_array_foreach(json_object_get(b, "notes"), i, u)
        {
            if (!i)
                printf("notes:\n");
            printf("  %s  %s\n", jstr(u, "created_at", ""), jstr(u, "text", ""));
        }
        const char *ex = jstr(b, "log_excerpt", NULL);
        if (ex) {
            /* the tail is where a boot fails; --json has all of it */
            size_t len = strlen(ex), lines = 0, at = len;
            while (at > 0 && lines <= 40)
                if (ex[--at] == '\n' && at + 1 < len)
                    lines++;
            const char *from = lines > 40 ? ex + at + 1 : ex;
            printf("log excerpt%s:\n%s%s", from != ex ? " (last 40 lines; --json for all)" : "",
                   from, len && ex[len - 1] == '\n' ? "" : "\n");
        }
    }
    json_decref(b);
    return SW_EXIT_OK;
}

static int cmd_export(struct opts *o)
{
    struct sw_err e = {0};
    json_t *doc = NULL;
    if (sw_ledger_at_export(&o->at, o->endpoint, o->output, &doc, &e))
        return sw_cli_fail(&e, o->json);
    int rc = 0;
    if (o->output)
        fprintf(stderr, "exported %s to %s\n", o->at.path, o->output);
    else
        rc = sw_json_print(stdout, doc, true);
    json_decref(doc);
    return rc ? sw_cli_fail(&e, o->json) : SW_EXIT_OK;
}

static int cmd_import(struct opts *o)
{
    struct sw_err e = {0};
    struct sw_progress prog;
    struct sw_ledger_import_stats st = {.progress = &prog};
    sw_progress_init(&prog, "import", "rows", 0);
    if (o->json)
        sw_progress_force(&prog, false, NULL);
    if (o->npos != 2)
        return sw_cli_usage_json("ledger", o->json, "import takes one FILE.json");
    if (sw_ledger_at_import(&o->at, o->pos[1], &st, &e))
        return sw_cli_fail(&e, o->json);
    if (o->json) {
        json_t *j = json_pack("{s:s,s:s,s:I,s:I}", "ledger", o->at.path, "file", o->pos[1], "added",
                              (json_int_t)st.added, "skipped", (json_int_t)st.skipped);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        printf("%s: recorded %lld rows in %s (%lld already there)\n", o->pos[1],
               (long long)st.added, o->at.path, (long long)st.skipped);
    }
    return SW_EXIT_OK;
}

static int cmd_usage(struct opts *o)
{
    struct sw_err e = {0};
    json_t *doc = NULL;
    struct sw_ledger_query q = {.endpoint = o->endpoint, .limit = o->limit};
    if (sw_ledger_at_usage(&o->at, &q, &doc, &e))
        return sw_cli_fail(&e, o->json);
    json_t *arr = json_object_get(doc, "usage");
    if (o->json) {
        sw_json_print(stdout, doc, true);
    } else {
        printf("%zu usage reading%s in %s\n", json_array_size(arr),
               json_array_size(arr) == 1 ? "" : "s", o->at.path);
        if (json_array_size(arr))
            printf("%5s  %-16s  %-12s  %9s  %9s  %9s  %-5s  %-14s  %-20s  %s\n", "ID", "ENDPOINT",
                   "DEVICE", "USED MiB", "TOTAL MiB", "FREE MiB", "BOOT", "SHAPE", "TAKEN (UTC)",
                   "SOURCE / NOTE");
        size_t i;
        json_t *u;
        json_array_foreach(arr, i, u)
        {
            char a[32], b[32], c[32], boot[24];
            json_t *bid = json_object_get(u, "boot");
            snprintf(boot, sizeof(boot), "%s", "-");
            if (json_is_integer(bid))
                snprintf(boot, sizeof(boot), "%lld", (long long)json_integer_value(bid));
            printf("%5lld  %-16.16s  %-12.12s  %9s  %9s  %9s  %-5s  %-14.12s  %-20s  %s%s%s\n",
                   (long long)json_integer_value(json_object_get(u, "id")),
                   jstr(u, "endpoint", "?"), jstr(u, "device", "?"),
                   jnum(u, "used_mib", a, sizeof(a)), jnum(u, "total_mib", b, sizeof(b)),
                   jnum(u, "free_mib", c, sizeof(c)), boot,
                   jstr(json_object_get(u, "shape"), "hash", "-"), jstr(u, "taken_at", "-"),
                   jstr(u, "source", ""), jstr(u, "note", NULL) ? ": " : "", jstr(u, "note", ""));
        }
    }
    json_decref(doc);
    return SW_EXIT_OK;
}

static int cmd_add_usage(struct opts *o)
{
    struct sw_err e = {0};
    struct sw_ledger_usage u = {.endpoint = o->endpoint,
                                .device = o->device,
                                .source = o->source ? o->source : "by hand",
                                .boot_id = o->boot,
                                .note = o->note,
                                .has_free = o->free != NULL};
    const struct {
        const char *flag, *value;
        uint64_t *mib;
    } figures[] = {{"--used", o->used, &u.used_mib},
                   {"--total", o->total, &u.total_mib},
                   {"--free", o->free, &u.free_mib}};
    int64_t id = 0;
    bool new_endpoint = false;
    if (!o->endpoint || !o->device || !o->used || !o->total)
        return sw_cli_usage_json("ledger", o->json,
                                 "add-usage needs --endpoint, --device, --used and --total");
    if (o->boot && o->shape)
        return sw_cli_usage_json("ledger", o->json,
                                 "give --boot or --shape, not both (a boot has its shape)");
    for (size_t i = 0; i < SW_ARRAY_LEN(figures); i++) {
        if (figures[i].value && sw_ledger_parse_mib(figures[i].value, figures[i].mib, &e)) {
            sw_err_prefix(&e, "%s", figures[i].flag);
            return sw_cli_fail(&e, o->json);
        }
    }
    if (o->at_time && sw_ledger_parse_time(o->at_time, &u.taken_at, &e)) {
        sw_err_prefix(&e, "--at");
        return sw_cli_fail(&e, o->json);
    }
    int rc = sw_ledger_at_add_usage(&o->at, &u, o->shape, &id, &new_endpoint, &e);
    if (new_endpoint)
        fprintf(stderr, "slipway ledger: note: '%s' is a new endpoint in %s\n", o->endpoint,
                o->at.path);
    if (rc)
        return sw_cli_fail(&e, o->json);
    if (o->json) {
        json_t *j =
            json_pack("{s:s,s:I,s:s,s:s,s:I,s:I,s:I}", "ledger", o->at.path, "id", (json_int_t)id,
                      "endpoint", o->endpoint, "device", o->device, "used_mib",
                      (json_int_t)u.used_mib, "total_mib", (json_int_t)u.total_mib, "free_mib",
                      (json_int_t)(u.has_free ? u.free_mib : u.total_mib - u.used_mib));
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        char a[32], b[32], c[32];
        printf("usage #%lld: %s %s %s / %s MiB used, %s MiB free (%s)\n", (long long)id,
               o->endpoint, o->device, sw_fmt_count(u.used_mib, a, sizeof(a)),
               sw_fmt_count(u.total_mib, b, sizeof(b)),
               sw_fmt_count(u.has_free ? u.free_mib : u.total_mib - u.used_mib, c, sizeof(c)),
               u.source);
    }
    return SW_EXIT_OK;
}

static int cmd_note(struct opts *o)
{
    struct sw_err e = {0};
    struct sw_ledger_note_on on = {.endpoint = o->endpoint, .shape = o->shape};
    int targets = (o->endpoint != NULL) + (o->shape != NULL);
    const struct {
        const char *kind;
        int64_t id;
    } t[] = {{"boot", o->boot}, {"usage", o->usage},     {"rule", o->rule},
             {"rung", o->rung}, {"battery", o->battery}, {"bench", o->bench}};
    for (size_t i = 0; i < SW_ARRAY_LEN(t); i++)
        if (t[i].id) {
            on.kind = t[i].kind;
            on.subject = t[i].id;
            targets++;
        }
    if (targets > 1)
        return sw_cli_usage_json("ledger", o->json, "a note has one subject");
    if (o->npos < 2)
        return sw_cli_usage_json("ledger", o->json, "note needs its text");
    char text[16384];
    size_t len = 0;
    for (int i = 1; i < o->npos; i++) {
        int w = snprintf(text + len, sizeof(text) - len, "%s%s", i > 1 ? " " : "", o->pos[i]);
        if (w < 0 || (size_t)w >= sizeof(text) - len)
            return sw_cli_usage_json("ledger", o->json, "note text is longer than %zu bytes",
                                     sizeof(text) - 1);
        len += (size_t)w;
    }
    int64_t id = 0;
    if (sw_ledger_at_note(&o->at, &on, text, o->author, &id, &e))
        return sw_cli_fail(&e, o->json);
    if (o->json) {
        json_t *j = json_pack("{s:s,s:I,s:s,s:I}", "ledger", o->at.path, "id", (json_int_t)id,
                              "kind", on.kind, "subject", (json_int_t)on.subject);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else if (on.subject) {
        printf("note #%lld on %s %lld\n", (long long)id, on.kind, (long long)on.subject);
    } else {
        printf("note #%lld on the ledger\n", (long long)id);
    }
    return SW_EXIT_OK;
}

static int cmd_rules(struct opts *o)
{
    struct sw_err e = {0};
    json_t *kb = NULL;
    if (sw_ledger_at_rules(&o->at, o->endpoint, &kb, &e))
        return sw_cli_fail(&e, o->json);
    if (o->json) {
        sw_json_print(stdout, kb, true);
    } else {
        size_t i;
        json_t *s;
        json_t *shapes = json_object_get(kb, "shapes");
        json_t *rules = json_object_get(kb, "rules");
        printf("%zu shape%s that failed, %zu known-bad rule%s (%s)\n", json_array_size(shapes),
               json_array_size(shapes) == 1 ? "" : "s", json_array_size(rules),
               json_array_size(rules) == 1 ? "" : "s", o->at.path);
        json_array_foreach(shapes, i, s)
        {
            char sum[256];
            json_t *fails = json_object_get(s, "failures");
            json_t *last = json_array_get(fails, json_array_size(fails) - 1);
            json_t *f = json_object_get(last, "failure");
            printf("  shape %.12s  %s: failed %lld, ok %lld; last %s%s%s (boot %lld)\n     %s\n",
                   jstr(s, "hash", "?"), jstr(s, "endpoint", "?"),
                   (long long)json_integer_value(json_object_get(s, "failed")),
                   (long long)json_integer_value(json_object_get(s, "ok")), jstr(f, "class", "?"),
                   jstr(f, "phase", NULL) ? "/" : "", jstr(f, "phase", ""),
                   (long long)json_integer_value(json_object_get(last, "boot")),
                   sw_ledger_shape_summary(json_object_get(s, "canonical"), sum, sizeof(sum)));
        }
        json_array_foreach(rules, i, s)
        {
            printf("  rule #%lld  %s: %s\n     %s\n",
                   (long long)json_integer_value(json_object_get(s, "id")),
                   jstr(s, "endpoint", "(any endpoint)"), jstr(s, "expr", "?"),
                   jstr(s, "reason", ""));
        }
    }
    json_decref(kb);
    return SW_EXIT_OK;
}

static int cmd_add_rule(struct opts *o)
{
    struct sw_err e = {0};
    int64_t id = 0;
    if (!o->expr || !o->reason)
        return sw_cli_usage_json("ledger", o->json, "add-rule needs --expr and --reason");
    struct sw_ledger_rule_rec r = {.endpoint = o->endpoint,
                                   .expr = o->expr,
                                   .reason = o->reason,
                                   .boot_id = o->boot,
                                   .source = o->source ? o->source : "operator"};
    if (sw_ledger_at_add_rule(&o->at, &r, &id, &e))
        return sw_cli_fail(&e, o->json);
    if (o->json) {
        json_t *j =
            json_pack("{s:s,s:I,s:s}", "ledger", o->at.path, "id", (json_int_t)id, "expr", o->expr);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        printf("rule #%lld: %s%s%s\n", (long long)id, o->expr, o->endpoint ? " on " : "",
               o->endpoint ? o->endpoint : " (any endpoint)");
    }
    return SW_EXIT_OK;
}

/* verify and path: where the ledger is, its version and rows, and (verify) whether it passes
 * integrity_check and foreign_key_check; exit 1 when it does not. */
static int cmd_verify(struct opts *o)
{
    bool check = !strcmp(o->pos[0], "verify");
    struct sw_err e = {0};
    json_t *doc = NULL;
    if (sw_ledger_at_verify(&o->at, check, &doc, &e))
        return sw_cli_fail(&e, o->json);
    bool ok = !json_is_false(json_object_get(doc, "ok"));
    if (o->json) {
        sw_json_print(stdout, doc, true);
    } else if (o->at.missing) {
        printf("%s: no ledger yet (created by the first record)\n", o->at.path);
    } else {
        printf("%s: schema version %d%s\n", o->at.path, o->at.schema_version,
               check && ok ? ", integrity ok, foreign keys ok" : "");
        if (!ok)
            printf("PROBLEM: %s\n", jstr(doc, "problem", ""));
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(doc, "rows"), k, v)
        {
            printf("  %-15s %lld\n", k, (long long)json_integer_value(v));
        }
    }
    json_decref(doc);
    return ok ? SW_EXIT_OK : SW_EXIT_FAIL;
}

int sw_cmd_ledger(int argc, char **argv)
{
    static const struct {
        const struct sw_cmd_spec *spec;
        int (*run)(struct opts *o);
    } runs[] = {
        {&spec_list, cmd_list},     {&spec_show, cmd_show},   {&spec_export, cmd_export},
        {&spec_import, cmd_import}, {&spec_usage, cmd_usage}, {&spec_add_usage, cmd_add_usage},
        {&spec_note, cmd_note},     {&spec_rules, cmd_rules}, {&spec_add_rule, cmd_add_rule},
        {&spec_verify, cmd_verify}, {&spec_path, cmd_verify},
    };
    struct opts o;
    const struct sw_cmd_spec *sub = NULL;
    int rc = parse_args(argc, argv, &o, &sub);
    if (rc)
        return rc < 0 ? SW_EXIT_OK : rc;
    if (o.ledger && o.fleet)
        return sw_cli_usage_json("ledger", o.json, "give --ledger or --fleet, not both");
    for (size_t i = 0; i < SW_ARRAY_LEN(runs); i++)
        if (sub == runs[i].spec)
            return runs[i].run(&o);
    return SW_EXIT_USAGE;
}
