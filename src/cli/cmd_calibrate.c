/*
 * slipway calibrate: fit the free terms of an endpoint's engine law from its recorded boots and
 * usage readings, and show what each boot taught.
 *
 *   slipway calibrate ENDPOINT [--fleet FILE] [--ledger PATH] [--config CONFIG.json|DIR]
 *                     [--predict MAXLEN:KV_BYTES]... [--budget SHAPE.json] [--save FILE.json]
 *                     [--need SEQSxMAXLEN]... [--exclude BOOT_ID]... [--max-state-blocks N]
 *                     [--json]
 * --need prints the pool (KV_BYTES per rank) at which SEQS requests of MAXLEN fit.
 * --record writes the fit's summary as a note on the endpoint in the ledger (--save writes the
 * whole fit as JSON).
 * --exclude leaves a boot out of the fits (what would the others have predicted?).
 *
 * The ledger: --ledger, else $SLIPWAY_LEDGER, else beside the fleet file, else the XDG default.
 * The fleet (--fleet, $SLIPWAY_FLEET or ./fleet.yaml; optional) gives the endpoint's inline arch (KV law for llama.cpp readings, vLLM structure)
 * and its fork profile (declared arena constants to compare); --config overrides the arch.
 *
 * This file reads the options, calls sw_calib_run (the orchestration: fleet, ledger, fit,
 * predictions, needs, budget, the note) and, for SGLang, plan's sw_plan_sglang_calib_doc (the
 * calibration pipeline the band gate runs too), and prints the result; it writes --save and --svg.
 *
 * Exit: 0 fitted; 1 nothing could be fitted, or a class is inconsistent; 2 unusable input (no
 * ledger, unknown endpoint, bad options).
 */
#include "cli.h"

#include <slipway/calib.h>
#include <slipway/plan.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PRED 16

static const struct sw_opt opts[] = {
    {"ledger", 0, "PATH", 0, "the ledger (default: $SLIPWAY_LEDGER, else beside the fleet)", NULL},
    {"no-ledger", 0, NULL, SW_OPT_REFUSE,
     "calibrate fits the ledger's recorded boots: without a ledger there is nothing to fit", NULL},
    {"config", 0, "CONFIG.json|DIR", 0, "the model's config.json: overrides the fleet's arch",
     NULL},
    {"predict", 0, "MAXLEN:KV_BYTES", SW_OPT_REPEAT,
     "predict tokens and concurrency at this max_model_len and pool", NULL},
    {"budget", 0, "SHAPE.json", 0, "the per-device budget of this shape", NULL},
    {"need", 0, "SEQSxMAXLEN", SW_OPT_REPEAT,
     "the pool (KV_BYTES per rank) at which SEQS requests of MAXLEN fit", NULL},
    {"exclude", 0, "BOOT_ID", SW_OPT_REPEAT,
     "leave a boot out of the fits (what would the others have predicted?)", NULL},
    {"save", 0, "FIT.json", 0, "write the whole fit as JSON", NULL},
    {"max-state-blocks", 0, "N", 0, "search bound for the state blocks S, 1..4096 (default 256)",
     NULL},
    {"record", 0, NULL, 0, "write the fit's summary as a note on the endpoint in the ledger", NULL},
    {"svg", 0, "FILE", 0, "printed boots beside the fit, predictions with their intervals", NULL},
    {"context", 0, "LABEL", 0,
     "how the predicted boots would run (the boots' flags.context): outside the fitted contexts a "
     "prediction warns",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway calibrate frank-primary --fleet examples/operator.yaml",
    "slipway calibrate frank-primary --ledger fleet.ledger.sqlite --predict 200704:3.15e9 --json",
    "slipway calibrate frank-small --config config.json --budget shape.json --svg fit.svg",
    NULL,
};

const struct sw_cmd_spec sw_spec_calibrate = {
    .name = "calibrate",
    .summary = "fit an endpoint's law terms from its recorded boots; predict with intervals",
    .synopsis = "ENDPOINT [--fleet FILE] [--ledger PATH] [--config CONFIG.json]\n"
                "    [--predict MAXLEN:KV_BYTES]... [--budget SHAPE.json]\n"
                "    [--need SEQSxMAXLEN]... [--exclude BOOT_ID]... [--save FIT.json]\n"
                "    [--max-state-blocks N] [--record] [--svg FILE] [--context LABEL] [--json]",
    .about =
        "Fits the KV block law (vLLM), the non-KV cost by subtraction (usage readings) and the\n"
        "expert arena (fork profile) from the ledger's boots of ENDPOINT; prints the fitted\n"
        "terms, the geometry they hold for, residuals and what each boot taught.\n"
        "exit: 0 fitted, 1 nothing fit or inconsistent boots, 2 unusable input",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

/* The request's arrays, filled from the options. */
struct lists {
    int64_t need_seqs[MAX_PRED], need_len[MAX_PRED];
    int64_t excl[MAX_PRED];
    int64_t pred_len[MAX_PRED];
    uint64_t pred_kv[MAX_PRED];
};

static int parse(const struct sw_args *a, struct sw_calib_request *rq, struct lists *ls)
{
    rq->endpoint = a->npos > 0 ? a->pos[0] : NULL;
    /* the fleet gives the endpoint's inline arch and fork profile; without one the ledger's boots
     * are fitted alone */
    struct sw_cli_fleet fl;
    int rc = sw_cli_fleet(a, 0, SW_CLI_FLEET_OPTIONAL, &fl);
    if (rc)
        return rc;
    rq->fleet_path = fl.path;
    rq->ledger_path = sw_args_str(a, "ledger");
    rq->config_path = sw_args_str(a, "config");
    rq->budget_path = sw_args_str(a, "budget");
    rq->record = sw_args_flag(a, "record");
    rq->context = sw_args_str(a, "context");
    if (sw_args_count(a, "need") > MAX_PRED || sw_args_count(a, "exclude") > MAX_PRED ||
        sw_args_count(a, "predict") > MAX_PRED)
        return sw_args_usage(a, "at most %d of each of --need, --exclude, --predict", MAX_PRED);
    for (int i = 0; i < sw_args_count(a, "need"); i++) {
        const char *v = sw_args_nth(a, "need", i);
        const char *x = strchr(v, 'x');
        char sb[32];
        uint64_t seqs, len;
        struct sw_err e = {0};
        if (!x || (size_t)(x - v) >= sizeof(sb))
            return sw_args_usage(a, "--need wants SEQSxMAXLEN, got '%s'", v);
        memcpy(sb, v, (size_t)(x - v));
        sb[x - v] = 0;
        if (sw_parse_count(sb, &seqs, &e) || sw_parse_count(x + 1, &len, &e) || seqs == 0 ||
            seqs > 65536 || len == 0 || len > (1u << 31))
            return sw_args_usage(a, "--need '%s': %s", v, e.msg[0] ? e.msg : "out of range");
        ls->need_seqs[rq->n_need] = (int64_t)seqs;
        ls->need_len[rq->n_need++] = (int64_t)len;
    }
    for (int i = 0; i < sw_args_count(a, "exclude"); i++) {
        const char *v = sw_args_nth(a, "exclude", i);
        int64_t n;
        struct sw_err e = {0};
        if (sw_parse_i64(v, &n, &e) || n < 1)
            return sw_args_usage(a, "--exclude wants a boot id, got '%s'", v);
        ls->excl[rq->n_exclude++] = n;
    }
    const char *v = sw_args_str(a, "max-state-blocks");
    if (v) {
        int64_t n;
        struct sw_err e = {0};
        if (sw_parse_i64(v, &n, &e) || n < 1 || n > 4096)
            return sw_args_usage(a, "--max-state-blocks wants 1..4096, got '%s'", v);
        rq->max_state_blocks = (int)n;
    }
    for (int i = 0; i < sw_args_count(a, "predict"); i++) {
        v = sw_args_nth(a, "predict", i);
        const char *colon = strchr(v, ':');
        char lenbuf[64];
        struct sw_err e = {0};
        uint64_t len, kv;
        if (!colon || (size_t)(colon - v) >= sizeof(lenbuf))
            return sw_args_usage(a, "--predict wants MAXLEN:KV_BYTES, got '%s'", v);
        memcpy(lenbuf, v, (size_t)(colon - v));
        lenbuf[colon - v] = 0;
        if (sw_parse_count(lenbuf, &len, &e) || sw_parse_bytes(colon + 1, &kv, &e) || len == 0 ||
            len > (1u << 31) || kv == 0)
            return sw_args_usage(a, "--predict '%s': %s", v, e.msg[0] ? e.msg : "out of range");
        ls->pred_len[rq->n_predict] = (int64_t)len;
        ls->pred_kv[rq->n_predict++] = kv;
    }
    rq->need_seqs = ls->need_seqs;
    rq->need_len = ls->need_len;
    rq->exclude = ls->excl;
    rq->predict_len = ls->pred_len;
    rq->predict_kv = ls->pred_kv;
    if (!rq->endpoint)
        return sw_args_usage(a, "which endpoint? (slipway calibrate ENDPOINT)");
    return 0;
}

static const char *cnt(int64_t v, char *b, size_t n)
{
    return sw_fmt_count(v < 0 ? 0 : (uint64_t)v, b, n);
}

static void print_kv(const struct sw_calib_kv_fit *k)
{
    char a[32], b[32], c[32], d[32], e2[32];
    printf("KV class %s (vLLM block law: per request A x cdiv(L, B) + S blocks of `stride` "
           "bytes; tokens = int(blocks / per_request x L))\n",
           k->klass);
    printf("  geometry fitted: max_model_len");
    for (int i = 0; i < k->n_lens; i++)
        printf(" %s", cnt(k->lens[i], a, sizeof(a)));
    printf("; pools %s..%s B; %d boot%s\n", cnt((int64_t)k->kv_lo, b, sizeof(b)),
           cnt((int64_t)k->kv_hi, c, sizeof(c)), k->n_points, k->n_points == 1 ? "" : "s");
    printf("  searched: B multiple of %lld up to the largest max_model_len, S <= %d, A <= %d\n",
           (long long)k->align, k->max_s, k->max_a);
    if (!k->consistent) {
        printf("  INCONSISTENT: %s\n", k->why);
    } else {
        printf("  feasible set: %s solution%s; block B %s..%s tokens, state blocks S %lld..%lld, "
               "stride %s..%s B/block, %.0f..%.0f B/token (A x stride / B)\n",
               cnt(k->n_solutions, a, sizeof(a)), k->n_solutions == 1 ? "" : "s",
               cnt(k->b_lo, b, sizeof(b)), cnt(k->b_hi, c, sizeof(c)), (long long)k->s_lo,
               (long long)k->s_hi, cnt((int64_t)k->stride_lo, d, sizeof(d)),
               cnt((int64_t)k->stride_hi, e2, sizeof(e2)), k->bytes_per_token_lo,
               k->bytes_per_token_hi);
    }
    const struct sw_calib_kv_model *m = &k->model;
    if (m->have && m->explained) {
        printf("  with the model's config (%s): block %lld, %lld layers per group, %d attention "
               "+ %d state groups, upstream %lld B/token/layer and %lld state blocks per group\n",
               m->source, (long long)m->block, (long long)m->group_size, m->attn_groups,
               m->state_groups, (long long)m->page_per_token, (long long)m->state_blocks_base);
        printf("    fork terms fitted: extra_attn_bytes_per_token %lld..%lld, extra_mamba_blocks "
               "%lld..%lld; memory/vllm with them reproduces every boot: %s\n",
               (long long)m->extra_bytes_lo, (long long)m->extra_bytes_hi,
               (long long)m->extra_blocks_lo, (long long)m->extra_blocks_hi,
               m->law_reproduces ? "yes" : "NO");
        if (!m->law_reproduces)
            printf("    %s\n", m->why);
    } else if (m->why[0]) {
        printf("  model config: %s\n", m->why);
    }
    for (int i = 0; i < k->n_points; i++) {
        const struct sw_calib_kv_point *p = &k->pts[i];
        if (p->kv_bytes)
            cnt((int64_t)p->kv_bytes, b, sizeof(b));
        else
            snprintf(b, sizeof(b), "(not recorded)");
        printf("  boot #%lld %s: L %s, pool %s B -> printed %s tokens", (long long)p->boot_id,
               p->ext_id, cnt(p->max_model_len, a, sizeof(a)), b, cnt(p->tokens, c, sizeof(c)));
        if (p->has_conc)
            printf(", %.2fx", p->conc);
        if (k->consistent && p->kv_bytes)
            printf("; fit %s (%sx), residual %lld", cnt(p->fit_tokens, d, sizeof(d)), p->fit_conc,
                   (long long)p->residual_tokens);
        printf("\n    taught: %s\n", p->taught);
    }
    if (k->n_skipped)
        printf("  not used: %s\n", k->skipped);
}

static void print_nonkv(const struct sw_calib_nonkv *c)
{
    printf("non-KV on %s, %s: %.1f MiB (%.1f..%.1f over %d reading%s, ctx %lld..%lld)\n", c->device,
           c->label, c->mean, c->lo, c->hi, c->n, c->n == 1 ? "" : "s", (long long)c->ctx_lo,
           (long long)c->ctx_hi);
    printf("  KV from %s\n", c->kv_source);
    for (int i = 0; i < c->n; i++) {
        const struct sw_calib_nonkv_read *r = &c->r[i];
        printf("  usage #%lld (boot #%lld, ctx %lld x%lld): %llu used - %.2f KV = %.2f MiB "
               "non-KV%s\n",
               (long long)r->usage_id, (long long)r->boot_id, (long long)r->ctx,
               (long long)r->slots, (unsigned long long)r->used_mib, r->kv_mib, r->non_kv_mib,
               r->free_read ? "" : " (free not read)");
    }
    if (c->reserve_hi > 0)
        printf("  driver-held (total - used - free): %.0f..%.0f MiB\n", c->reserve_lo,
               c->reserve_hi);
}

static void print_arena(const struct sw_calib_arena *a)
{
    printf("expert arena (fork profile): %d boot%s\n", a->n, a->n == 1 ? "" : "s");
    for (int i = 0; i < a->n; i++)
        printf("  boot #%lld: L %lld, MNBT %lld -> %lld slots%s\n", (long long)a->boot_ids[i],
               (long long)a->lens[i], (long long)a->mnbt[i], (long long)a->slots[i],
               a->gib[i] >= 0 ? "" : " (GiB not printed)");
    if (!a->consistent) {
        printf("  not fitted: %s\n", a->why);
        return;
    }
    printf("  reserve per token of max_model_len: %.1f..%.1f B/token\n", a->reserve_lo,
           a->reserve_hi);
    printf("  capacity C (arena at L = 0): %.4f..%.4f GiB; slot %.6f..%.6f MiB\n",
           a->cap_lo / 1073741824.0, a->cap_hi / 1073741824.0, a->slot_lo / 1048576.0,
           a->slot_hi / 1048576.0);
    if (a->have_base)
        printf("  against the fleet profile's constants (%.4f GiB): adjust %+.4f..%+.4f GiB\n",
               a->base / 1073741824.0, a->adjust_lo / 1073741824.0, a->adjust_hi / 1073741824.0);
    printf("  underdetermined: %s\n", a->underdetermined);
}

static void print_headroom(const struct sw_calib_headroom *h)
{
    const double G = 1073741824.0;
    printf("headroom (fork profile's budget at graph capture): %d boot%s read\n", h->n_points,
           h->n_points == 1 ? "" : "s");
    for (int i = 0; i < h->n_points; i++) {
        const struct sw_calib_hr_point *p = &h->pts[i];
        printf("  boot #%lld %s: %s", (long long)p->boot_id, p->ext_id,
               sw_calib_hr_use_name(p->use));
        if (p->use == SW_CALIB_HR_CAPTURE_OK || p->use == SW_CALIB_HR_CAPTURE_OOM ||
            p->use == SW_CALIB_HR_OVERDRAWN)
            printf(", %.2f..%.2f GiB free at capture", p->free_lo / G, p->free_hi / G);
        if (p->use == SW_CALIB_HR_ACTIVATION)
            printf(", %.2f GiB free printed of %.2f beside the arena", p->printed_free / G,
                   p->free_kv / G);
        if (p->why[0])
            printf(" (%s)", p->why);
        printf("\n");
    }
    if (!h->consistent)
        printf("  INCONSISTENT: %s\n", h->why);
    if (h->tau_hi_set)
        printf("  capture, pinned pools: %.3f..%.3f GiB per sequence x (1 + MTP n) (%d boot(s) "
               "past capture, %d death(s))\n",
               h->tau_lo / G, h->tau_hi / G, h->n_tau_hi, h->n_tau_lo);
    else
        printf("  capture, pinned pools: more than %.3f GiB per sequence, no upper bound\n",
               h->tau_lo / G);
    if (h->act.n_vert) {
        double lo = 1e300, hi = -1e300, slo = 1e300, shi = -1e300;
        for (int i = 0; i < h->act.n_vert; i++) {
            lo = h->act.x[i] < lo ? h->act.x[i] : lo;
            hi = h->act.x[i] > hi ? h->act.x[i] : hi;
            slo = h->act.y[i] < slo ? h->act.y[i] : slo;
            shi = h->act.y[i] > shi ? h->act.y[i] : shi;
        }
        printf("  activations at KV allocation: %.3f..%.3f GiB + %.4f..%.4f GiB per sequence "
               "(%d KV allocation failure(s))\n",
               lo / G, hi / G, slo / G, shi / G, h->n_act);
    }
    for (int c = 0; c < h->n_pools; c++) {
        const struct sw_calib_hr_pool *p = &h->pools[c];
        double ylo = 1e300, yhi = -1e300;
        for (int i = 0; i < p->line.n_vert; i++) {
            ylo = p->line.y[i] < ylo ? p->line.y[i] : ylo;
            yhi = p->line.y[i] > yhi ? p->line.y[i] : yhi;
        }
        printf("  engine-sized pool, %s x %lld at utilization %.2f: grows %.0f..%.0f B per token "
               "of max_model_len (%d boot(s)); capture needs free > %.3f and <= %.3f GiB\n",
               p->kv_dtype, (long long)p->seqs, p->util, p->line.n_vert ? ylo : 0,
               p->line.n_vert ? yhi : 0, p->n_boots, p->theta_lo_set ? p->theta_lo / G : -1e9,
               p->theta_hi_set ? p->theta_hi / G : 1e9);
    }
}

static void print_sglang(const json_t *sj)
{
    char a[32], b[32];
    if (!sj)
        return;
    const char *why = json_string_value(json_object_get(sj, "why"));
    printf("SGLang (cell %lld B/token, mamba state %lld B/request):\n",
           (long long)json_integer_value(json_object_get(sj, "cell_bytes")),
           (long long)json_integer_value(json_object_get(sj, "mamba_cache_per_req")));
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(sj, "boots"), i, x)
    {
        const json_t *fb = json_object_get(x, "free_bytes");
        printf("  boot #%lld %s: %s tokens %s, %lld mamba slots%s",
               (long long)json_integer_value(json_object_get(x, "boot")),
               json_string_value(json_object_get(x, "source")),
               cnt(json_integer_value(json_object_get(x, "tokens")), a, sizeof(a)),
               json_is_true(json_object_get(x, "pinned")) ? "pinned" : "sized by the engine",
               (long long)json_integer_value(json_object_get(x, "mamba_slots")),
               fb ? ", free " : "\n");
        if (fb)
            printf("%.0f MiB\n", json_number_value(fb) / (double)SW_MIB);
    }
    if (json_is_integer(json_object_get(sj, "rest_lo")))
        printf("  rest %.2f GiB at mem_fraction_static %.3f ([%s, %s) B)\n",
               (double)json_integer_value(json_object_get(sj, "rest_lo")) / (double)SW_GIB,
               json_number_value(json_object_get(sj, "rest_mem_fraction_static")),
               cnt(json_integer_value(json_object_get(sj, "rest_lo")), a, sizeof(a)),
               cnt(json_integer_value(json_object_get(sj, "rest_hi")), b, sizeof(b)));
    else if (json_is_integer(json_object_get(sj, "rest_floor")))
        printf("  rest >= %.2f GiB (pinned boots only: no boot sized its own pool)\n",
               (double)json_integer_value(json_object_get(sj, "rest_floor")) / (double)SW_GIB);
    if (json_object_get(sj, "free_constant_lo"))
        printf("  free after boot = %.1f MiB - the pools (KV + mamba state)\n",
               json_number_value(json_object_get(sj, "free_constant_lo")) / (double)SW_MIB);
    if (why)
        printf("  INCONSISTENT: %s\n", why);
    json_array_foreach(json_object_get(sj, "predictions"), i, x)
    {
        const char *pw = json_string_value(json_object_get(x, "why"));
        if (pw) {
            printf("  predict %s: %s\n", json_string_value(json_object_get(x, "shape")), pw);
            continue;
        }
        printf("  predict %s: %s..%s%s tokens, %lld mamba slots",
               json_string_value(json_object_get(x, "shape")),
               cnt(json_integer_value(json_object_get(x, "tokens_lo")), a, sizeof(a)),
               cnt(json_integer_value(json_object_get(x, "tokens_hi")), b, sizeof(b)),
               json_is_true(json_object_get(x, "tokens_open")) ? "+" : "",
               (long long)json_integer_value(json_object_get(x, "mamba_slots")));
        const json_t *fh = json_object_get(x, "free_hi_bytes"),
                     *fl = json_object_get(x, "free_lo_bytes");
        if (fh && fl)
            printf(", free after boot %.0f..%.0f MiB%s", json_number_value(fl) / (double)SW_MIB,
                   json_number_value(fh) / (double)SW_MIB,
                   json_is_true(json_object_get(x, "would_oom")) ? ": WOULD OOM" : "");
        else if (fh)
            printf(", free after boot <= %.0f MiB", json_number_value(fh) / (double)SW_MIB);
        printf("\n");
        const char *w = json_string_value(json_object_get(x, "warning"));
        if (w)
            printf("    WARNING: %s\n", w);
    }
}

/* Only when the boots recorded how they ran (a context other than "unrecorded"). */
static void print_contexts(const json_t *cs)
{
    size_t i;
    const json_t *c;
    bool any = false;
    json_array_foreach(cs, i, c) any |= json_string_value(json_object_get(c, "label"))[0] != 0;
    if (!any)
        return;
    printf("contexts (how the engine ran):\n");
    json_array_foreach(cs, i, c)
    {
        const char *lab = json_string_value(json_object_get(c, "label"));
        const json_t *o = json_object_get(c, "offset");
        printf("  %s: %lld boot%s\n", lab[0] ? lab : "unrecorded",
               (long long)json_integer_value(json_object_get(c, "boots")),
               json_integer_value(json_object_get(c, "boots")) == 1 ? "" : "s");
        if (!o)
            continue;
        const json_t *lo = json_object_get(o, "free_at_kv_alloc_lo_bytes"),
                     *hi = json_object_get(o, "free_at_kv_alloc_hi_bytes");
        const char *from = json_string_value(json_object_get(o, "from"));
        printf("    free at KV allocation vs %s: ", from && from[0] ? from : "unrecorded");
        if (lo && hi)
            printf("%+.3f..%+.3f GiB/rank", json_number_value(lo) / (double)SW_GIB,
                   json_number_value(hi) / (double)SW_GIB);
        else if (lo)
            printf(">= %+.3f GiB/rank", json_number_value(lo) / (double)SW_GIB);
        else
            printf("<= %+.3f GiB/rank", json_number_value(hi) / (double)SW_GIB);
        printf(" (%s)\n", json_string_value(json_object_get(o, "basis")));
    }
}

/* The fork's KV terms over every class the config explained (they do not depend on the dtype). */
static void print_joint(const struct sw_calib_fit *fit)
{
    if (fit->joint_classes <= 1)
        return;
    if (fit->joint_agree)
        printf("fork KV terms over the %d KV classes the config explains: "
               "extra_attn_bytes_per_token %lld..%lld, extra_mamba_blocks %lld..%lld\n",
               fit->joint_classes, (long long)fit->joint_bytes_lo, (long long)fit->joint_bytes_hi,
               (long long)fit->joint_blocks_lo, (long long)fit->joint_blocks_hi);
    else
        printf("fork KV terms: the %d KV classes DISAGREE (no common value): the fork's "
               "terms depend on the KV dtype, or a class's boots are wrong\n",
               fit->joint_classes);
}

/* --predict: tokens and concurrency per KV class, or the arena's slots. */
static void print_predictions(const json_t *preds)
{
    size_t i;
    json_t *p;
    json_array_foreach(preds, i, p)
    {
        const json_t *t = json_object_get(p, "tokens");
        char a[32], b[32];
        if (t) {
            printf("predict %s at L %lld, pool %lld B: %s..%s tokens, concurrency "
                   "%.2f..%.2f\n",
                   json_string_value(json_object_get(p, "class")),
                   (long long)json_integer_value(json_object_get(p, "max_model_len")),
                   (long long)json_integer_value(json_object_get(p, "kv_bytes")),
                   cnt(json_integer_value(json_object_get(t, "lo")), a, sizeof(a)),
                   cnt(json_integer_value(json_object_get(t, "hi")), b, sizeof(b)),
                   json_real_value(json_object_get(json_object_get(p, "concurrency"), "lo")),
                   json_real_value(json_object_get(json_object_get(p, "concurrency"), "hi")));
            printf("  point %s (%s)\n",
                   cnt(json_integer_value(json_object_get(t, "point")), a, sizeof(a)),
                   json_string_value(json_object_get(p, "point_from")));
        } else {
            const json_t *sl = json_object_get(p, "slots");
            printf("predict arena at L %lld: %lld..%lld slots\n",
                   (long long)json_integer_value(json_object_get(p, "max_model_len")),
                   (long long)json_integer_value(json_object_get(sl, "lo")),
                   (long long)json_integer_value(json_object_get(sl, "hi")));
        }
        const char *w = json_string_value(json_object_get(p, "warning"));
        if (w)
            printf("  WARNING: %s\n", w);
        else if (json_is_true(json_object_get(p, "extrapolated")))
            printf("  WARNING: extrapolates across geometry (max_model_len not fitted)\n");
    }
}

/* --need: the pool at which SEQS requests of MAXLEN fit. */
static void print_needs(const json_t *needs)
{
    size_t i;
    json_t *p;
    json_array_foreach(needs, i, p)
    {
        char a[32], b[32];
        long long seqs = (long long)json_integer_value(json_object_get(p, "seqs"));
        long long len = (long long)json_integer_value(json_object_get(p, "max_model_len"));
        bool extr = json_is_true(json_object_get(p, "extrapolated"));
        printf("need %s: %lld x %lld holds at a pool of %s B per rank for every solution "
               "(%s B for the most favourable)%s\n",
               json_string_value(json_object_get(p, "class")), seqs, len,
               cnt(json_integer_value(json_object_get(p, "kv_bytes_hi")), a, sizeof(a)),
               cnt(json_integer_value(json_object_get(p, "kv_bytes_lo")), b, sizeof(b)),
               extr ? "\n  WARNING: extrapolates across geometry (max_model_len not fitted)" : "");
    }
}

/* --budget: used and free per device. */
static void print_budget(const json_t *bj)
{
    size_t di;
    json_t *d;
    if (!bj)
        return;
    json_array_foreach(json_object_get(bj, "devices"), di, d)
    {
        const json_t *u = json_object_get(d, "used_mib"), *fr = json_object_get(d, "free_mib");
        printf("budget on %s: used %.0f MiB (%.0f..%.0f), free %.0f MiB (%.0f..%.0f)%s\n  "
               "%s\n",
               json_string_value(json_object_get(d, "device")),
               json_real_value(json_object_get(u, "point")),
               json_real_value(json_object_get(u, "lo")), json_real_value(json_object_get(u, "hi")),
               json_real_value(json_object_get(fr, "point")),
               json_real_value(json_object_get(fr, "lo")),
               json_real_value(json_object_get(fr, "hi")),
               json_is_true(json_object_get(d, "measured")) ? " [measured]" : "",
               json_string_value(json_object_get(d, "basis")));
    }
    const char *w = json_string_value(json_object_get(bj, "warning"));
    if (w)
        printf("  WARNING: %s\n", w);
}

/* The human view of the whole calibration document. */
static void print_human(const struct sw_calib_result *res, const char *endpoint, bool nothing)
{
    const struct sw_calib_fit *fit = res->fit;
    const json_t *out = res->doc;
    printf("calibrate %s (%s, %d boot%s in %s)\n", fit->endpoint,
           fit->engine[0] ? fit->engine : "?", fit->n_boots, fit->n_boots == 1 ? "" : "s",
           res->ledger_path);
    for (int i = 0; i < fit->n_kv; i++)
        print_kv(&fit->kv[i]);
    for (int i = 0; i < fit->n_nonkv; i++)
        print_nonkv(&fit->nonkv[i]);
    print_joint(fit);
    if (fit->arena.have)
        print_arena(&fit->arena);
    if (fit->headroom.have)
        print_headroom(&fit->headroom);
    print_sglang(json_object_get(out, "sglang"));
    print_contexts(json_object_get(out, "contexts"));
    print_predictions(json_object_get(out, "predictions"));
    print_needs(json_object_get(out, "needs"));
    print_budget(json_object_get(out, "budget"));
    if (fit->notes[0]) {
        printf("notes:\n  ");
        for (const char *c = fit->notes; *c; c++)
            fputs(*c == '\n' ? "\n  " : (char[2]){*c, 0}, stdout);
        printf("\n");
    }
    if (json_is_integer(json_object_get(out, "note")))
        printf("recorded as note #%lld on endpoint %s\n",
               (long long)json_integer_value(json_object_get(out, "note")), endpoint);
    if (nothing)
        printf("nothing to fit: no boot printed a KV pool with a pinned size, no usage "
               "reading could be priced, no arena was printed, no SGLang pool\n");
}

int sw_cmd_calibrate(int argc, char **argv)
{
    struct sw_args args;
    struct sw_calib_request rq = {0};
    struct sw_calib_result res = {0};
    struct lists ls;
    struct sw_err e = {0};
    int rc;
    if (!sw_args_parse(&sw_spec_calibrate, argc, argv, &args, &rc))
        return rc;
    rc = parse(&args, &rq, &ls);
    if (rc)
        return rc;
    const char *save = sw_args_str(&args, "save"), *svg = sw_args_str(&args, "svg");
    bool json = args.json;
    if (sw_calib_run(&rq, &res, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    const struct sw_calib_fit *fit = res.fit;
    json_t *out = res.doc;
    bool nothing = res.nothing, bad = res.inconsistent;
    if (fit->sglang.have || !strcmp(fit->engine, "sglang")) {
        bool sg_fit = false, sg_bad = false;
        if (sw_plan_sglang_calib_doc(rq.fleet_path, rq.endpoint, fit, rq.exclude, rq.n_exclude, out,
                                     &sg_fit, &sg_bad, &e)) {
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        nothing = nothing && !sg_fit;
        bad = bad || sg_bad;
    }
    if (save) {
        char *t = sw_json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!t || sw_write_file_atomic(save, t, strlen(t), 0644, &e)) {
            sw_free(t);
            if (!e.code)
                sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        sw_free(t);
    }
    if (svg && sw_calib_svg(out, svg, &e)) {
        sw_err_prefix(&e, "--svg %s", svg);
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (res.note_id)
        sw_json_set_int(out, "note", res.note_id);
    if (json) {
        sw_json_set_bool(out, "ok", !nothing && !bad);
        sw_json_print(stdout, out, true);
    } else {
        print_human(&res, rq.endpoint, nothing);
    }
    rc = nothing || bad ? SW_EXIT_FAIL : SW_EXIT_OK;
out:
    sw_calib_result_free(&res);
    return rc;
}
