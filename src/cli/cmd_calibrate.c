/*
 * slipway calibrate: fit the free terms of an endpoint's engine law from its recorded boots and
 * usage readings, and show what each boot taught.
 *
 *   slipway calibrate ENDPOINT [FLEET.yaml] [--ledger PATH] [--config CONFIG.json|DIR]
 *                     [--predict MAXLEN:KV_BYTES]... [--budget SHAPE.json] [--save FILE.json]
 *                     [--need SEQSxMAXLEN]... [--exclude BOOT_ID]... [--max-state-blocks N]
 *                     [--json]
 * --need prints the pool (KV_BYTES per rank) at which SEQS requests of MAXLEN fit.
 * --record writes the fit's summary as a note on the endpoint in the ledger (--save writes the
 * whole fit as JSON).
 * --exclude leaves a boot out of the fits (what would the others have predicted?).
 *
 * The ledger: --ledger, else $SLIPWAY_LEDGER, else beside FLEET.yaml, else the XDG default.
 * FLEET.yaml gives the endpoint's inline arch (KV law for llama.cpp readings, vLLM structure)
 * and its fork profile (declared arena constants to compare); --config overrides the arch.
 *
 * Exit: 0 fitted; 1 nothing could be fitted, or a class is inconsistent; 2 unusable input (no
 * ledger, unknown endpoint, bad options).
 */
#include "cli.h"

#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PRED 16

struct opts {
    const char *endpoint, *fleet, *ledger, *config, *budget, *save, *svg;
    int max_s;
    int n_pred, n_excl, n_need;
    int64_t need_seqs[MAX_PRED], need_len[MAX_PRED];
    int64_t excl[MAX_PRED];
    int64_t pred_len[MAX_PRED];
    uint64_t pred_kv[MAX_PRED];
    bool json, help, record;
};

static void usage_text(FILE *f)
{
    fputs("usage: slipway calibrate ENDPOINT [FLEET.yaml] [--ledger PATH] [--config CONFIG.json]\n"
          "                         [--predict MAXLEN:KV_BYTES]... [--budget SHAPE.json]\n"
          "                         [--need SEQSxMAXLEN]... [--exclude BOOT_ID]... [--save "
          "FIT.json]\n"
          "                         [--max-state-blocks N] [--record] [--svg FILE]\n"
          "                         [--json]\n"
          "Fits the KV block law (vLLM), the non-KV cost by subtraction (usage readings) and the\n"
          "expert arena (fork profile) from the ledger's boots of ENDPOINT; prints the fitted\n"
          "terms, the geometry they hold for, residuals and what each boot taught.\n"
          "exit: 0 fitted, 1 nothing fit or inconsistent boots, 2 unusable input\n",
          f);
}

static int parse(int argc, char **argv, struct opts *o)
{
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (sw_cli_is(a, "-h", "--help")) {
            o->help = true;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--record")) {
            o->record = true;
        } else if (!strcmp(a, "--ledger") || !strcmp(a, "--config") || !strcmp(a, "--budget") ||
                   !strcmp(a, "--save") || !strcmp(a, "--predict") ||
                   !strcmp(a, "--max-state-blocks") || !strcmp(a, "--fleet") ||
                   !strcmp(a, "--exclude") || !strcmp(a, "--need") || !strcmp(a, "--svg")) {
            if (!v)
                return sw_cli_usage("calibrate", "%s needs a value", a);
            i++;
            if (!strcmp(a, "--ledger"))
                o->ledger = v;
            else if (!strcmp(a, "--config"))
                o->config = v;
            else if (!strcmp(a, "--budget"))
                o->budget = v;
            else if (!strcmp(a, "--save"))
                o->save = v;
            else if (!strcmp(a, "--svg"))
                o->svg = v;
            else if (!strcmp(a, "--fleet"))
                o->fleet = v;
            else if (!strcmp(a, "--need")) {
                const char *x = strchr(v, 'x');
                char sb[32];
                uint64_t seqs, len;
                struct sw_err e = {0};
                if (!x || (size_t)(x - v) >= sizeof(sb) || o->n_need >= MAX_PRED)
                    return sw_cli_usage("calibrate", "--need wants SEQSxMAXLEN, got '%s'", v);
                memcpy(sb, v, (size_t)(x - v));
                sb[x - v] = 0;
                if (sw_parse_count(sb, &seqs, &e) || sw_parse_count(x + 1, &len, &e) || seqs == 0 ||
                    seqs > 65536 || len == 0 || len > (1u << 31))
                    return sw_cli_usage("calibrate", "--need '%s': %s", v,
                                        e.msg[0] ? e.msg : "out of range");
                o->need_seqs[o->n_need] = (int64_t)seqs;
                o->need_len[o->n_need++] = (int64_t)len;
            } else if (!strcmp(a, "--exclude")) {
                int64_t n;
                struct sw_err e = {0};
                if (sw_parse_i64(v, &n, &e) || n < 1 || o->n_excl >= MAX_PRED)
                    return sw_cli_usage("calibrate", "--exclude wants a boot id, got '%s'", v);
                o->excl[o->n_excl++] = n;
            } else if (!strcmp(a, "--max-state-blocks")) {
                int64_t n;
                struct sw_err e = {0};
                if (sw_parse_i64(v, &n, &e) || n < 1 || n > 4096)
                    return sw_cli_usage("calibrate", "--max-state-blocks wants 1..4096, got '%s'",
                                        v);
                o->max_s = (int)n;
            } else {
                const char *colon = strchr(v, ':');
                char lenbuf[64];
                struct sw_err e = {0};
                uint64_t len, kv;
                if (!colon || (size_t)(colon - v) >= sizeof(lenbuf) || o->n_pred >= MAX_PRED)
                    return sw_cli_usage("calibrate", "--predict wants MAXLEN:KV_BYTES, got '%s'",
                                        v);
                memcpy(lenbuf, v, (size_t)(colon - v));
                lenbuf[colon - v] = 0;
                if (sw_parse_count(lenbuf, &len, &e) || sw_parse_bytes(colon + 1, &kv, &e) ||
                    len == 0 || len > (1u << 31) || kv == 0)
                    return sw_cli_usage("calibrate", "--predict '%s': %s", v,
                                        e.msg[0] ? e.msg : "out of range");
                o->pred_len[o->n_pred] = (int64_t)len;
                o->pred_kv[o->n_pred++] = kv;
            }
        } else if (a[0] == '-' && a[1]) {
            return sw_cli_usage("calibrate", "unknown option '%s'", a);
        } else if (npos == 0) {
            o->endpoint = a;
            npos++;
        } else if (npos == 1 && !o->fleet) {
            o->fleet = a;
            npos++;
        } else {
            return sw_cli_usage("calibrate", "unexpected argument '%s'", a);
        }
    }
    if (!o->help && !o->endpoint)
        return sw_cli_usage("calibrate", "which endpoint? (slipway calibrate ENDPOINT)");
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

int sw_cmd_calibrate(int argc, char **argv)
{
    struct opts o = {0};
    struct sw_err e = {0};
    struct sw_ledger l = {0};
    struct sw_fleet *fleet = NULL;
    struct sw_calib_fit *fit = NULL;
    json_t *out = NULL, *shape = NULL;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    if (o.help) {
        usage_text(stdout);
        return SW_EXIT_OK;
    }
    struct sw_calib_opts co = {.config_path = o.config,
                               .max_state_blocks = o.max_s,
                               .exclude = o.excl,
                               .n_exclude = o.n_excl};
    if (o.fleet) {
        if (sw_fleet_load(o.fleet, NULL, &fleet, &e)) {
            rc = sw_cli_fail(&e, o.json);
            goto out;
        }
        co.ep = sw_fleet_endpoint(fleet, o.endpoint);
        if (!co.ep) {
            sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s' in the fleet", o.fleet, o.endpoint);
            rc = sw_cli_fail(&e, o.json);
            goto out;
        }
    }
    char path[4096];
    if (o.ledger)
        snprintf(path, sizeof(path), "%s", o.ledger);
    else if (sw_ledger_default_path(o.fleet, path, sizeof(path), &e)) {
        rc = sw_cli_fail(&e, o.json);
        goto out;
    }
    struct sw_ledger_open_opts lo = {.create = false, .readonly = !o.record};
    if (sw_ledger_open(&l, path, &lo, &e)) {
        sw_err_prefix(&e, "ledger %s", path);
        rc = sw_cli_fail(&e, o.json);
        goto out;
    }
    if (sw_calib_fit(&l, o.endpoint, &co, &fit, &e)) {
        if (e.code == SW_ENOENT)
            sw_err_prefix(&e, "ledger %s: endpoint '%s' has no record", path, o.endpoint);
        rc = sw_cli_fail(&e, o.json);
        goto out;
    }
    bool nothing = !fit->n_kv && !fit->n_nonkv && !(fit->arena.have && fit->arena.consistent);
    bool bad = false;
    for (int i = 0; i < fit->n_kv; i++)
        bad |= !fit->kv[i].consistent;
    bad |= fit->arena.have && !fit->arena.consistent && !fit->arena.one_geometry &&
           fit->arena.slot_hi > 0;
    out = sw_calib_fit_json(fit);
    if (!out) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        rc = sw_cli_fail(&e, o.json);
        goto out;
    }
    json_t *preds = json_array();
    for (int i = 0; i < o.n_pred; i++) {
        for (int k = 0; k < fit->n_kv; k++) {
            struct sw_calib_kv_pred p;
            if (sw_calib_kv_predict(&fit->kv[k], o.pred_len[i], o.pred_kv[i], &p, NULL))
                continue;
            json_t *pj = sw_calib_kv_pred_json(&p);
            sw_json_set_str(pj, "class", fit->kv[k].klass);
            sw_json_set_str(pj, "point_from",
                            fit->kv[k].chosen >= 0 ? "the model's structure (config)"
                                                   : "the middle of the interval");
            sw_json_set_int(pj, "max_model_len", o.pred_len[i]);
            sw_json_set_int(pj, "kv_bytes", (int64_t)o.pred_kv[i]);
            json_array_append_new(preds, pj);
        }
        if (fit->arena.consistent) {
            struct sw_calib_range s;
            if (!sw_calib_arena_predict(&fit->arena, o.pred_len[i], &s, NULL))
                json_array_append_new(
                    preds, json_pack("{s:s,s:I,s:{s:I,s:I},s:b}", "class", "arena", "max_model_len",
                                     (json_int_t)o.pred_len[i], "slots", "lo", (json_int_t)s.lo,
                                     "hi", (json_int_t)s.hi, "extrapolated", s.extrapolated));
        }
    }
    sw_json_set_new(out, "predictions", preds);
    json_t *needs = json_array();
    for (int i = 0; i < o.n_need; i++)
        for (int k = 0; k < fit->n_kv; k++) {
            uint64_t nlo, nhi;
            bool ex;
            if (sw_calib_kv_need(&fit->kv[k], o.need_len[i], o.need_seqs[i], &nlo, &nhi, &ex, NULL))
                continue;
            json_array_append_new(
                needs, json_pack("{s:s,s:I,s:I,s:I,s:I,s:b}", "class", fit->kv[k].klass, "seqs",
                                 (json_int_t)o.need_seqs[i], "max_model_len",
                                 (json_int_t)o.need_len[i], "kv_bytes_lo", (json_int_t)nlo,
                                 "kv_bytes_hi", (json_int_t)nhi, "extrapolated", ex));
        }
    sw_json_set_new(out, "needs", needs);
    if (o.budget) {
        shape = sw_json_load_file(o.budget, 1u << 20, &e);
        struct sw_calib_budget b;
        if (!shape || sw_calib_budget(fit, shape, &co, &b, &e)) {
            rc = sw_cli_fail(&e, o.json);
            goto out;
        }
        sw_json_set_new(out, "budget", sw_calib_budget_json(&b));
    }
    if (o.save) {
        char *t = json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!t || sw_write_file_atomic(o.save, t, strlen(t), 0644, &e)) {
            free(t);
            if (!e.code)
                sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, o.json);
            goto out;
        }
        free(t);
    }
    if (o.svg && sw_calib_svg(out, o.svg, &e)) {
        sw_err_prefix(&e, "--svg %s", o.svg);
        rc = sw_cli_fail(&e, o.json);
        goto out;
    }
    if (o.record && !nothing) {
        /* the fit as a note on the endpoint: the ledger keeps what was concluded, and when */
        static char text[8192];
        int64_t eid = 0, nid = 0;
        sw_calib_fit_summary(fit, text, sizeof(text));
        if (sw_ledger_endpoint_id(&l, o.endpoint, false, &eid, &e) ||
            sw_ledger_record_note(&l, "endpoint", eid, text, "slipway calibrate", &nid, &e)) {
            rc = sw_cli_fail(&e, o.json);
            goto out;
        }
        sw_json_set_int(out, "note", nid);
    }
    if (o.json) {
        sw_json_set_bool(out, "ok", !nothing && !bad);
        sw_json_print(stdout, out, true);
    } else {
        printf("calibrate %s (%s, %d boot%s in %s)\n", fit->endpoint,
               fit->engine[0] ? fit->engine : "?", fit->n_boots, fit->n_boots == 1 ? "" : "s",
               path);
        for (int i = 0; i < fit->n_kv; i++)
            print_kv(&fit->kv[i]);
        for (int i = 0; i < fit->n_nonkv; i++)
            print_nonkv(&fit->nonkv[i]);
        if (fit->joint_classes > 1) {
            if (fit->joint_agree)
                printf("fork KV terms over the %d KV classes the config explains: "
                       "extra_attn_bytes_per_token %lld..%lld, extra_mamba_blocks %lld..%lld\n",
                       fit->joint_classes, (long long)fit->joint_bytes_lo,
                       (long long)fit->joint_bytes_hi, (long long)fit->joint_blocks_lo,
                       (long long)fit->joint_blocks_hi);
            else
                printf("fork KV terms: the %d KV classes DISAGREE (no common value): the fork's "
                       "terms depend on the KV dtype, or a class's boots are wrong\n",
                       fit->joint_classes);
        }
        if (fit->arena.have)
            print_arena(&fit->arena);
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
                const json_t *s = json_object_get(p, "slots");
                printf("predict arena at L %lld: %lld..%lld slots\n",
                       (long long)json_integer_value(json_object_get(p, "max_model_len")),
                       (long long)json_integer_value(json_object_get(s, "lo")),
                       (long long)json_integer_value(json_object_get(s, "hi")));
            }
            const char *w = json_string_value(json_object_get(p, "warning"));
            if (w)
                printf("  WARNING: %s\n", w);
            else if (json_is_true(json_object_get(p, "extrapolated")))
                printf("  WARNING: extrapolates across geometry (max_model_len not fitted)\n");
        }
        json_array_foreach(needs, i, p)
        {
            char a[32], b[32];
            printf("need %s: %lld x %lld holds at a pool of %s B per rank for every solution "
                   "(%s B for the most favourable)%s\n",
                   json_string_value(json_object_get(p, "class")),
                   (long long)json_integer_value(json_object_get(p, "seqs")),
                   (long long)json_integer_value(json_object_get(p, "max_model_len")),
                   cnt(json_integer_value(json_object_get(p, "kv_bytes_hi")), a, sizeof(a)),
                   cnt(json_integer_value(json_object_get(p, "kv_bytes_lo")), b, sizeof(b)),
                   json_is_true(json_object_get(p, "extrapolated"))
                       ? "\n  WARNING: extrapolates across geometry (max_model_len not fitted)"
                       : "");
        }
        const json_t *bj = json_object_get(out, "budget");
        if (bj) {
            size_t di;
            json_t *d;
            json_array_foreach(json_object_get(bj, "devices"), di, d)
            {
                const json_t *u = json_object_get(d, "used_mib"),
                             *fr = json_object_get(d, "free_mib");
                printf("budget on %s: used %.0f MiB (%.0f..%.0f), free %.0f MiB (%.0f..%.0f)%s\n  "
                       "%s\n",
                       json_string_value(json_object_get(d, "device")),
                       json_real_value(json_object_get(u, "point")),
                       json_real_value(json_object_get(u, "lo")),
                       json_real_value(json_object_get(u, "hi")),
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
        if (fit->notes[0]) {
            printf("notes:\n  ");
            for (const char *c = fit->notes; *c; c++)
                fputs(*c == '\n' ? "\n  " : (char[2]){*c, 0}, stdout);
            printf("\n");
        }
        if (json_is_integer(json_object_get(out, "note")))
            printf("recorded as note #%lld on endpoint %s\n",
                   (long long)json_integer_value(json_object_get(out, "note")), o.endpoint);
        if (nothing)
            printf("nothing to fit: no boot printed a KV pool with a pinned size, no usage "
                   "reading could be priced, no arena was printed\n");
    }
    rc = nothing || bad ? SW_EXIT_FAIL : SW_EXIT_OK;
out:
    json_decref(shape);
    json_decref(out);
    sw_calib_fit_free(fit);
    sw_ledger_close(&l);
    sw_fleet_free(fleet);
    return rc;
}
