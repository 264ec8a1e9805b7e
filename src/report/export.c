/*
 * report/export: the fleet for the tools around it.
 *
 *   llama-swap  export_swap.c
 *   prometheus  the text exposition format (version 0.0.4) for node_exporter's textfile
 *               collector: every family has HELP and TYPE lines, its samples together, label
 *               values escaped (\\, \", \n).
 *
 * What it deliberately does not do: write files (the CLI does, atomically), put a secret value
 * anywhere (llama-swap gets only the endpoint's literal environment; a secret is named in a
 * comment, to be set in llama-swap's own environment).
 */
#include "report_internal.h"

#include <string.h>

int sw_report_boot_ms(struct sw_ledger *l, const char *endpoint, int64_t *ms, struct sw_err *e)
{
    json_t *rows = NULL;
    *ms = 0;
    if (!l)
        return 0;
    struct sw_ledger_query q = {.endpoint = endpoint, .outcome = "ok"};
    struct sw_err le;
    sw_err_clear(&le);
    int rc = sw_ledger_boots(l, &q, &rows, &le);
    if (rc == SW_ENOENT)
        return 0;
    if (rc) {
        if (e)
            *e = le;
        return rc;
    }
    size_t i;
    json_t *b;
    json_array_foreach(rows, i, b)
    {
        json_int_t d = json_integer_value(json_object_get(b, "duration_ms"));
        if (d > *ms)
            *ms = d;
    }
    json_decref(rows);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Prometheus
 */
/* One sample (core's sw_buf_prom_sample). */
static int sample(struct sw_buf *b, const char *name, const char *const *labels, double v)
{
    return sw_buf_prom_sample(b, name, labels, v);
}

static int family(struct sw_buf *b, const char *name, const char *help)
{
    return sw_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static const char *js(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static double last_num(const json_t *v)
{
    if (json_is_array(v))
        v = json_array_get(v, json_array_size(v) - 1);
    return json_is_number(v) ? json_number_value(v) : -1;
}

enum fam {
    F_INFO,
    F_ENABLED,
    F_SLOTS,
    F_WINDOW,
    F_POOL,
    F_CAP,
    F_PART,
    F_FREE,
    F_BAND_MIN,
    F_BAND_MAX,
    F_BATTERY,
    F_CHECKS,
    F_DECODE,
    F_PREFILL,
    F_GRID_DECODE,
    F_GRID_PREFILL,
    F_ATTEMPTS,
    F_CRASH_LOOPS,
    F_RESTARTS,
    F_UNIT_RESTARTS,
    F_UNIT_OBSERVED,
    F_TAG_RESTORABLE,
    F_N
};

static const struct {
    const char *name, *help;
} fams[F_N] = {
    [F_INFO] = {"slipway_endpoint_info", "The endpoint's engine and deployed shape (value 1)."},
    [F_ENABLED] = {"slipway_endpoint_enabled", "1 when the fleet deploys the endpoint."},
    [F_SLOTS] = {"slipway_endpoint_slots", "Concurrent conversations (slots / max_num_seqs)."},
    [F_WINDOW] = {"slipway_endpoint_window_tokens",
                  "Tokens one conversation may hold (the plan's slot or request window)."},
    [F_POOL] = {"slipway_endpoint_pool_tokens", "Tokens the KV pool holds, from the plan."},
    [F_CAP] = {"slipway_device_capacity_bytes", "Device memory as a reading's total counts it."},
    [F_PART] = {"slipway_budget_bytes",
                "Device memory per part of the budget (weights, kv, state, compute, arena, "
                "other)."},
    [F_FREE] = {"slipway_budget_free_bytes", "Device memory left free after the boot."},
    [F_BAND_MIN] = {"slipway_budget_band_min_bytes", "Lower edge of the free-memory band."},
    [F_BAND_MAX] = {"slipway_budget_band_max_bytes", "Upper edge of the free-memory band."},
    [F_BATTERY] = {"slipway_battery_pass", "1 when the last probe battery passed, 0 when not."},
    [F_CHECKS] = {"slipway_battery_checks", "Checks of the last probe battery, by status."},
    [F_DECODE] = {"slipway_bench_decode_tokens_per_second",
                  "Decode speed of the last bench run (deepest context when several)."},
    [F_PREFILL] = {"slipway_bench_prefill_tokens_per_second",
                   "Prefill speed of the last bench run."},
    [F_GRID_DECODE] = {"slipway_bench_point_decode_tokens_per_second",
                       "Per-stream decode (median) of the reported bench run, by context depth "
                       "and concurrency."},
    [F_GRID_PREFILL] = {"slipway_bench_point_prefill_tokens_per_second",
                        "Prefill (median) of the reported bench run, by context depth and "
                        "concurrency."},
    [F_ATTEMPTS] = {"slipway_deploy_attempts", "Deploy attempts the ledger recorded."},
    [F_CRASH_LOOPS] = {"slipway_deploy_crash_loops",
                       "Deploy attempts that ended in a crash loop (systemd restarted the unit)."},
    [F_RESTARTS] = {"slipway_deploy_restarts",
                    "systemd restarts (NRestarts) seen while deploys watched the unit."},
    [F_UNIT_RESTARTS] = {"slipway_unit_restarts",
                         "systemd's NRestarts of the unit at the last slipway status --record "
                         "(automatic restarts since it was last started on purpose)."},
    [F_UNIT_OBSERVED] = {"slipway_unit_observed_timestamp_seconds",
                         "When slipway status --record last looked at the unit (unix seconds)."},
    [F_TAG_RESTORABLE] = {"slipway_tag_restorable",
                          "1 when a kept deploy tag's payload and image are still on the host, 0 "
                          "when not (unchecked tags are absent)."},
};

/* The grid rows of the run the report's figures come from, one sample each. */
static int grid_samples(struct sw_buf *b, const char *name, const char *ep_name, const json_t *m,
                        const char *key)
{
    int rc = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(m, "grid"), i, r)
    {
        const json_t *v = json_object_get(r, key), *d = json_object_get(r, "depth"),
                     *c = json_object_get(r, "concurrency");
        if (rc)
            break;
        if (!json_is_number(v) || !json_is_integer(d) || !json_is_integer(c) ||
            !json_equal(json_object_get(r, "run"), json_object_get(m, "run")))
            continue;
        char ds[32], cs[32];
        snprintf(ds, sizeof(ds), "%lld", (long long)json_integer_value(d));
        snprintf(cs, sizeof(cs), "%lld", (long long)json_integer_value(c));
        const char *const l[] = {"endpoint", ep_name, "depth", ds, "concurrency", cs, NULL};
        rc = sample(b, name, l, json_number_value(v));
    }
    return rc;
}

static int fam_samples(struct sw_buf *b, enum fam fm, const json_t *ep)
{
    const char *name = fams[fm].name, *ep_name = js(ep, "name");
    const char *const l1[] = {"endpoint", ep_name, NULL};
    const json_t *w = json_object_get(ep, "window"), *m = json_object_get(ep, "measured");
    const json_t *bat = json_object_get(ep, "battery");
    int rc = 0;
    switch (fm) {
    case F_INFO: {
        const char *const l[] = {"endpoint",   ep_name,
                                 "host",       js(ep, "host"),
                                 "engine",     js(ep, "engine"),
                                 "shape",      js(ep, "shape_summary"),
                                 "shape_hash", js(ep, "shape_hash"),
                                 NULL};
        return sample(b, name, l, 1);
    }
    case F_ENABLED:
        return sample(b, name, l1, json_is_true(json_object_get(ep, "enabled")) ? 1 : 0);
    case F_SLOTS:
    case F_WINDOW:
    case F_POOL: {
        const char *k = fm == F_SLOTS    ? "slots"
                        : fm == F_WINDOW ? "per_conversation"
                                         : "pool_tokens";
        const json_t *v = json_object_get(w, k);
        return json_is_integer(v) && json_integer_value(v) > 0
                   ? sample(b, name, l1, (double)json_integer_value(v))
                   : 0;
    }
    case F_BATTERY:
        return json_is_object(bat) ? sample(b, name, l1, !strcmp(js(bat, "verdict"), "pass")) : 0;
    case F_CHECKS: {
        static const char *const st[] = {"passed", "failed", "skipped"};
        for (size_t i = 0; json_is_object(bat) && i < 3 && !rc; i++) {
            const char *const l[] = {"endpoint", ep_name, "status", st[i], NULL};
            rc = sample(b, name, l, (double)json_integer_value(json_object_get(bat, st[i])));
        }
        return rc;
    }
    case F_DECODE:
    case F_PREFILL: {
        double v = last_num(json_object_get(m, fm == F_DECODE ? "decode_tok_s" : "prefill_tok_s"));
        return v >= 0 ? sample(b, name, l1, v) : 0;
    }
    case F_GRID_DECODE:
    case F_GRID_PREFILL:
        return grid_samples(b, name, ep_name, m,
                            fm == F_GRID_DECODE ? "decode_tok_s" : "prefill_tok_s");
    case F_ATTEMPTS:
    case F_CRASH_LOOPS:
    case F_RESTARTS: {
        const json_t *rs = json_object_get(ep, "restarts");
        const char *k = fm == F_ATTEMPTS      ? "attempts"
                        : fm == F_CRASH_LOOPS ? "crash_loops"
                                              : "restarts_seen";
        return json_is_object(rs)
                   ? sample(b, name, l1, (double)json_integer_value(json_object_get(rs, k)))
                   : 0;
    }
    case F_UNIT_RESTARTS:
    case F_UNIT_OBSERVED: {
        const json_t *bt = json_object_get(json_object_get(ep, "restarts"), "between_deploys");
        if (!json_is_object(bt))
            return 0;
        if (fm == F_UNIT_RESTARTS)
            return sample(b, name, l1,
                          (double)json_integer_value(json_object_get(bt, "n_restarts")));
        const json_t *ms = json_object_get(bt, "observed_ms");
        return json_is_integer(ms) ? sample(b, name, l1, (double)(json_integer_value(ms) / 1000))
                                   : 0;
    }
    case F_TAG_RESTORABLE: {
        const json_t *t = json_object_get(ep, "tags");
        const json_t *lg = json_object_get(t, "last_good");
        size_t n = json_array_size(json_object_get(t, "rollback"));
        for (size_t i = 0; i <= n && !rc; i++) {
            const json_t *x = i ? json_array_get(json_object_get(t, "rollback"), i - 1) : lg;
            const json_t *r = json_object_get(x, "restorable");
            if (!json_is_boolean(r))
                continue;
            const char *const l[] = {"endpoint",    ep_name, "tag",
                                     js(x, "name"), "role",  i ? "rollback" : "last_good",
                                     NULL};
            rc = sample(b, name, l, json_is_true(r) ? 1 : 0);
        }
        return rc;
    }
    default:
        break;
    }
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(ep, "budget"), "devices"), i, d)
    {
        const char *const l[] = {"endpoint", ep_name, "device", js(d, "name"), NULL};
        const json_t *band = json_object_get(d, "band");
        if (fm == F_CAP)
            rc = sample(b, name, l, (double)json_integer_value(json_object_get(d, "capacity")));
        else if (fm == F_FREE && json_is_integer(json_object_get(d, "free")))
            rc = sample(b, name, l, (double)json_integer_value(json_object_get(d, "free")));
        else if (fm == F_BAND_MIN || fm == F_BAND_MAX)
            rc = sample(b, name, l,
                        (double)json_integer_value(
                            json_object_get(band, fm == F_BAND_MIN ? "min" : "max")));
        else if (fm == F_PART) {
            size_t k;
            json_t *p;
            json_array_foreach(json_object_get(d, "parts"), k, p)
            {
                const char *const lp[] = {"endpoint", ep_name,       "device", js(d, "name"),
                                          "part",     js(p, "part"), NULL};
                if (!rc)
                    rc = sample(b, name, lp,
                                (double)json_integer_value(json_object_get(p, "bytes")));
            }
        }
        if (rc)
            break;
    }
    return rc;
}

int sw_export_prometheus(const json_t *doc, struct sw_buf *out, struct sw_err *e)
{
    int rc = 0;
    const json_t *eps = json_object_get(doc, "endpoints");
    for (int fm = 0; fm < F_N && !rc; fm++) {
        struct sw_buf s;
        sw_buf_init(&s, 16u << 20);
        size_t i;
        json_t *ep;
        json_array_foreach(eps, i, ep)
        {
            rc = fam_samples(&s, (enum fam)fm, ep);
            if (rc)
                break;
        }
        if (!rc && s.len)
            rc = family(out, fams[fm].name, fams[fm].help);
        if (!rc && s.len)
            rc = sw_buf_append(out, s.data, s.len);
        sw_buf_free(&s);
    }
    return rc ? sw_err_set(e, rc, "out of memory writing the metrics") : 0;
}
