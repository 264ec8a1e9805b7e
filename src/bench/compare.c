/*
 * Comparing two bench runs from their --json documents (as the ledger keeps them): the points
 * both runs measured (same depth, same concurrency), and per metric A's and B's figure, the
 * difference B - A, and whether it exceeds the noise the repeats show.
 *
 * The noise of a metric measured per request (decode_tps, prefill_tps, the server's decode and
 * prefill) is half A's range plus half B's range, (maxA - minA)/2 + (maxB - minB)/2: a median
 * difference larger than that cannot be produced by moving each run's median within its own
 * repeats. It needs two requests on each side; with fewer there is no verdict ("no spread").
 * A point-level figure (summed decode, throughputs, latency percentiles) has no repeats of its
 * own: its difference is shown without a verdict.
 *
 * What it deliberately does not do: a statistical test (a handful of repeats do not support
 * one), or compare points that only one run measured (they are listed apart).
 */
#include <slipway/bench.h>

#include <math.h>
#include <string.h>

struct metric {
    const char *name;  /* the key in a point */
    const char *field; /* NULL: a spread object; else a field of a histogram / a number */
    bool higher_better;
};

static const struct metric spread_metrics[] = {
    {"decode_tps", NULL, true},
    {"prefill_tps", NULL, true},
    {"server_decode_tps", NULL, true},
    {"server_prefill_tps", NULL, true},
};

static const struct metric point_metrics[] = {
    {"summed_decode_tps", "", true}, {"request_throughput_rps", "", true},
    {"goodput_rps", "", true},       {"ttft", "p50_ms", false},
    {"ttft", "p99_ms", false},       {"tpot", "p50_ms", false},
    {"itl_token", "p99_ms", false},  {"e2e", "p50_ms", false},
};

static double num_of(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int64_t key_depth(const json_t *pt)
{
    const json_t *d = json_object_get(pt, "depth");
    return json_is_integer(d) ? (int64_t)json_integer_value(d) : -1;
}

static int64_t key_conc(const json_t *pt)
{
    const json_t *c = json_object_get(pt, "concurrency");
    return json_is_integer(c) ? (int64_t)json_integer_value(c) : -1;
}

static const json_t *find_point(const json_t *points, int64_t depth, int64_t conc)
{
    size_t i;
    const json_t *p;
    json_array_foreach(points, i, p)
    {
        if (key_depth(p) == depth && key_conc(p) == conc)
            return p;
    }
    return NULL;
}

static const char *verdict(double diff, bool higher_better, bool exceeds)
{
    if (!exceeds || diff == 0)
        return "within noise";
    return (diff > 0) == higher_better ? "better" : "worse";
}

/* A metric with no noise to judge by (fewer than two requests a side, or a point-level figure). */
static int no_spread(json_t *m)
{
    int bad = sw_json_set_new(m, "noise", json_null());
    bad |= sw_json_set_new(m, "exceeds_noise", json_null());
    return bad | sw_json_set_str(m, "verdict", "no spread");
}

static int add_diff(json_t *m, double a, double b)
{
    int bad = 0;
    double diff = b - a;
    bad |= sw_json_set_new(m, "diff", isfinite(diff) ? json_real(diff) : json_null());
    double pct = 100.0 * diff / a;
    bad |= sw_json_set_new(m, "diff_pct", isfinite(pct) && a != 0 ? json_real(pct) : json_null());
    return bad;
}

static json_t *spread_metric(const struct metric *mt, const json_t *pa, const json_t *pb)
{
    const json_t *sa = json_object_get(pa, mt->name), *sb = json_object_get(pb, mt->name);
    double ma = num_of(json_object_get(sa, "median")), mb = num_of(json_object_get(sb, "median"));
    if (!isfinite(ma) || !isfinite(mb))
        return NULL;
    json_t *m = json_object();
    if (!m)
        return NULL;
    int bad = 0;
    bad |= sw_json_set_str(m, "metric", mt->name);
    bad |= sw_json_set_str(m, "better", mt->higher_better ? "higher" : "lower");
    bad |= sw_json_set_new(m, "a", json_deep_copy(sa));
    bad |= sw_json_set_new(m, "b", json_deep_copy(sb));
    bad |= add_diff(m, ma, mb);
    double na = num_of(json_object_get(sa, "n")), nb = num_of(json_object_get(sb, "n"));
    double noise = (num_of(json_object_get(sa, "max")) - num_of(json_object_get(sa, "min"))) / 2 +
                   (num_of(json_object_get(sb, "max")) - num_of(json_object_get(sb, "min"))) / 2;
    if (na >= 2 && nb >= 2 && isfinite(noise)) {
        bool exceeds = fabs(mb - ma) > noise;
        bad |= sw_json_set_real(m, "noise", noise);
        bad |= sw_json_set_bool(m, "exceeds_noise", exceeds);
        bad |= sw_json_set_str(m, "verdict", verdict(mb - ma, mt->higher_better, exceeds));
    } else {
        bad |= no_spread(m);
    }
    if (bad) {
        json_decref(m);
        return NULL;
    }
    return m;
}

static json_t *point_metric(const struct metric *mt, const json_t *pa, const json_t *pb)
{
    const json_t *va = json_object_get(pa, mt->name), *vb = json_object_get(pb, mt->name);
    if (mt->field[0]) {
        va = json_object_get(va, mt->field);
        vb = json_object_get(vb, mt->field);
    }
    double a = num_of(va), b = num_of(vb);
    if (!isfinite(a) || !isfinite(b))
        return NULL;
    json_t *m = json_object();
    if (!m)
        return NULL;
    char name[64];
    snprintf(name, sizeof(name), "%s%s%s", mt->name, mt->field[0] ? "." : "", mt->field);
    int bad = 0;
    bad |= sw_json_set_str(m, "metric", name);
    bad |= sw_json_set_str(m, "better", mt->higher_better ? "higher" : "lower");
    bad |= sw_json_set_real(m, "a", a);
    bad |= sw_json_set_real(m, "b", b);
    bad |= add_diff(m, a, b);
    bad |= no_spread(m);
    if (bad) {
        json_decref(m);
        return NULL;
    }
    return m;
}

static json_t *point_key(const json_t *p)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int64_t d = key_depth(p);
    int bad = sw_json_set_new(o, "depth", d >= 0 ? json_integer(d) : json_null());
    bad |= sw_json_set_int(o, "concurrency", key_conc(p));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sw_bench_compare(const json_t *a, const json_t *b, struct sw_err *e)
{
    const json_t *pa = json_object_get(a, "points"), *pb = json_object_get(b, "points");
    if (!json_is_array(pa) || !json_is_array(pb)) {
        sw_err_set(e, SW_EINVAL, "bench compare: run %s has no points (not a bench result)",
                   json_is_array(pa) ? "B" : "A");
        return NULL;
    }
    json_t *out = json_object(), *points = json_array(), *only_a = json_array(),
           *only_b = json_array();
    int bad = !out || !points || !only_a || !only_b;
    size_t i, better = 0, worse = 0;
    const json_t *p;
    json_array_foreach(pa, i, p)
    {
        const json_t *q = find_point(pb, key_depth(p), key_conc(p));
        if (!q) {
            bad |= json_array_append_new(only_a, point_key(p));
            continue;
        }
        json_t *o = point_key(p), *ms = json_array();
        bad |= !o || !ms;
        for (size_t k = 0; !bad && k < SW_ARRAY_LEN(spread_metrics); k++) {
            json_t *m = spread_metric(&spread_metrics[k], p, q);
            if (!m)
                continue;
            const char *v = json_string_value(json_object_get(m, "verdict"));
            better += v && !strcmp(v, "better");
            worse += v && !strcmp(v, "worse");
            bad |= json_array_append_new(ms, m);
        }
        for (size_t k = 0; !bad && k < SW_ARRAY_LEN(point_metrics); k++) {
            json_t *m = point_metric(&point_metrics[k], p, q);
            if (m)
                bad |= json_array_append_new(ms, m);
        }
        bad |= sw_json_set_new(o, "metrics", ms);
        bad |= json_array_append_new(points, o);
    }
    json_array_foreach(pb, i, p)
    {
        if (!find_point(pa, key_depth(p), key_conc(p)))
            bad |= json_array_append_new(only_b, point_key(p));
    }
    bad |= sw_json_set_new(out, "points", points);
    bad |= sw_json_set_new(out, "only_a", only_a);
    bad |= sw_json_set_new(out, "only_b", only_b);
    bad |= sw_json_set_int(out, "better", (int64_t)better);
    bad |= sw_json_set_int(out, "worse", (int64_t)worse);
    if (bad) {
        json_decref(out);
        sw_err_set(e, SW_ENOMEM, "bench compare: out of memory");
        return NULL;
    }
    return out;
}
