/*
 * ladder's result as its readers take it: the JSON object (`slipway ladder --json`) and the table
 * for people, one line per rung.
 *
 * What it deliberately does not do: decide anything; every figure is the result's.
 */
#include <slipway/ladder.h>

#include <inttypes.h>

/* v, or null when it is not known (negative). */
static json_t *known(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

/* A prediction as {lo, hi, point} (new reference; NULL when out of memory). */
static json_t *prediction_json(int64_t lo, int64_t hi, int64_t point)
{
    json_t *p = json_object();
    if (p) {
        sw_json_set_new(p, "lo", known(lo));
        sw_json_set_new(p, "hi", known(hi));
        sw_json_set_new(p, "point", known(point));
    }
    return p;
}

json_t *sw_ladder_result_json(const struct sw_ladder_result *r)
{
    json_t *o = json_object();
    json_t *rungs = json_array();
    json_t *range = json_object();
    json_t *pred = prediction_json(r->pred_lo, r->pred_hi, r->pred_point);
    if (!o || !rungs || !range || !pred) {
        json_decref(o);
        json_decref(rungs);
        json_decref(range);
        json_decref(pred);
        return NULL;
    }
    sw_json_set_str(o, "endpoint", r->endpoint);
    sw_json_set_str(o, "label", r->label);
    sw_json_set_str(o, "knob", r->knob);
    sw_json_set_str(o, "engine", r->engine);
    sw_json_set_str(o, "runner", r->runner);
    sw_json_set_int(range, "min", r->min);
    sw_json_set_int(range, "max", r->max);
    sw_json_set_int(range, "step", r->step);
    sw_json_set_new(o, "range", range);
    sw_json_set_new(o, "answer", known(r->answer));
    sw_json_set_new(o, "bad", known(r->bad));
    sw_json_set_bool(o, "converged", r->converged);
    sw_json_set_int(o, "boots", r->boots);
    sw_json_set_int(o, "boots_total", r->boots_total);
    if (r->law) {
        json_t *law = json_object();
        if (law) {
            sw_json_set_real(law, "bytes_per_unit", r->law_b);
            sw_json_set_real(law, "a_lo", r->law_a_lo);
            sw_json_set_real(law, "a_hi", r->law_a_hi);
            sw_json_set_int(law, "capacity", (int64_t)r->capacity);
        }
        sw_json_set_new(o, "law", law ? law : json_null());
    } else {
        sw_json_set_new(o, "law", json_null());
    }
    sw_json_set_str(o, "law_source", r->law_source);
    sw_json_set_bool(o, "headroom", r->headroom);
    sw_json_set_new(o, "prediction", pred);
    sw_json_set_new(o, "next", known(r->next));
    for (int i = 0; i < r->n; i++) {
        const struct sw_ladder_rung *g = &r->rungs[i];
        json_t *j = json_object();
        if (!j)
            continue;
        sw_json_set_int(j, "rung", g->n);
        sw_json_set_int(j, "value", g->value);
        sw_json_set_str(j, "class", sw_ladder_class_name(g->cls));
        sw_json_set_bool(j, "booted", g->booted);
        sw_json_set_bool(j, "resumed", g->resumed);
        sw_json_set_new(j, "boot", g->boot_id ? json_integer(g->boot_id) : json_null());
        sw_json_set_new(j, "good_before", known(g->good_before));
        sw_json_set_new(j, "bad_before", known(g->bad_before));
        json_t *p = prediction_json(g->pred_lo, g->pred_hi, g->pred_point);
        if (p)
            sw_json_set_new(j, "prediction", p);
        sw_json_set_new(j, "peak_bytes",
                        g->peak_bytes ? json_integer((int64_t)g->peak_bytes) : json_null());
        sw_json_set_int(j, "ms", (int64_t)g->ms);
        sw_json_set_str(j, "detail", g->detail);
        json_array_append_new(rungs, j);
    }
    sw_json_set_new(o, "rungs", rungs);
    sw_json_set_str(o, "why_stopped", r->why_stopped);
    if (r->stopped_up_pid)
        sw_json_set_int(o, "stopped_up_pid", r->stopped_up_pid);
    return o;
}

void sw_ladder_result_print(FILE *out, const struct sw_ladder_result *r)
{
    fprintf(out, "ladder %s of %s (%s, runner %s): %" PRId64 "..%" PRId64 " step %" PRId64 "\n",
            r->knob, r->endpoint, r->engine, r->runner, r->min, r->max, r->step);
    if (r->law || r->headroom)
        fprintf(out, "law: %s\n", r->law_source);
    else
        fprintf(out, "law: none (%s)\n", r->law_source[0] ? r->law_source : "not available");
    if (r->pred_point >= 0)
        fprintf(out, "predicted: %" PRId64 " (in %" PRId64 "..%" PRId64 ")\n", r->pred_point,
                r->pred_lo, r->pred_hi);
    fprintf(out, "%-5s %-12s %-12s %-5s %-9s %s\n", "rung", "value", "class", "boot", "seconds",
            "evidence");
    for (int i = 0; i < r->n; i++) {
        const struct sw_ladder_rung *g = &r->rungs[i];
        fprintf(out, "%-5d %-12" PRId64 " %-12s %-5s %-9.1f %s%s\n", g->n, g->value,
                sw_ladder_class_name(g->cls), g->booted ? "yes" : "no", g->ms / 1000.0,
                g->resumed ? "(resumed) " : "", g->detail);
    }
    if (r->next >= 0)
        fprintf(out, "dry run: the first rung would boot %s=%" PRId64 "\n", r->knob, r->next);
    if (r->answer >= 0)
        fprintf(out, "answer: %s=%" PRId64, r->knob, r->answer);
    else
        fprintf(out, "answer: none proven");
    if (r->bad >= 0)
        fprintf(out, " (%" PRId64 " fails)", r->bad);
    fprintf(out, "; %d boot%s now, %d in all; %s\n", r->boots, r->boots == 1 ? "" : "s",
            r->boots_total, r->why_stopped);
}
