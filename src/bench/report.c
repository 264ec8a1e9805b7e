/*
 * bench/report: a run as JSON (every field defined in docs/bench.md), as a table, as CSV, as SVG
 * (decode tok/s by depth, one line per concurrency, with the min..max of the repeats;
 * per-stream and summed decode by concurrency; the roofline; the open loop's latency CDFs), and
 * as one self-contained HTML page (the table and the panels as inline SVG: no script, no
 * network).
 *
 * What it deliberately does not do: re-measure anything.
 */
#include <slipway/bench.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *spread_json(const struct sw_bench_spread *s)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= sw_json_set_int(o, "n", (int64_t)s->n);
    bad |= sw_json_set_new(o, "median", num(s->median));
    bad |= sw_json_set_new(o, "min", num(s->min));
    bad |= sw_json_set_new(o, "max", num(s->max));
    bad |= sw_json_set_new(o, "q1", num(s->q1));
    bad |= sw_json_set_new(o, "q3", num(s->q3));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static double ms_of(uint64_t t, uint64_t base)
{
    return t && base && t >= base ? (double)(t - base) / 1e6 : NAN;
}

static json_t *sample_json(const struct sw_bench_sample *s)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= sw_json_set_int(o, "index", (int64_t)s->index);
    bad |= sw_json_set_bool(o, "ok", s->rc == 0);
    if (s->rc)
        bad |= sw_json_set_str(o, "error", s->error);
    if (s->invalid)
        bad |= sw_json_set_bool(o, "invalid", true);
    bad |= sw_json_set_int(o, "status", s->status);
    /* instants, as ms after the intended send */
    json_t *t = json_object();
    bad |= sw_json_set_new(t, "issued_ms", num(ms_of(s->t_issued, s->t_intended)));
    bad |= sw_json_set_new(t, "sent_ms", num(ms_of(s->t_sent, s->t_intended)));
    bad |= sw_json_set_new(t, "first_byte_ms", num(ms_of(s->t_first_byte, s->t_intended)));
    bad |= sw_json_set_new(t, "first_token_ms", num(ms_of(s->t_first_token, s->t_intended)));
    bad |= sw_json_set_new(t, "first_content_ms", num(ms_of(s->t_first_content, s->t_intended)));
    bad |= sw_json_set_new(t, "last_token_ms", num(ms_of(s->t_last_token, s->t_intended)));
    bad |= sw_json_set_new(t, "end_ms", num(ms_of(s->t_end, s->t_intended)));
    bad |= sw_json_set_new(o, "t", t);
    bad |= sw_json_set_int(o, "prompt_tokens", s->prompt_tokens);
    bad |= sw_json_set_int(o, "completion_tokens", s->completion_tokens);
    bad |= sw_json_set_int(o, "reasoning_tokens", s->reasoning_tokens);
    bad |= sw_json_set_int(o, "cached_tokens", s->cached_tokens);
    bad |= sw_json_set_int(o, "first_chunk_tokens", s->first_chunk_tokens);
    bad |= sw_json_set_str(o, "count_source", sw_bench_count_src_name(s->count_src));
    bad |= sw_json_set_bool(o, "good", s->good);
    bad |= sw_json_set_int(o, "chunks", (int64_t)s->chunks);
    bad |= sw_json_set_int(o, "token_chunks", (int64_t)s->token_chunks);
    bad |= sw_json_set_int(o, "multi_token_chunks", (int64_t)s->multi_chunks);
    bad |= sw_json_set_new(o, "ttft_ms", num(s->ttft_s * 1e3));
    bad |= sw_json_set_new(o, "ttft_from_sent_ms", num(s->ttft_sent_s * 1e3));
    bad |= sw_json_set_new(o, "ttfc_ms", num(s->ttfc_s * 1e3));
    bad |= sw_json_set_new(o, "e2e_ms", num(s->e2e_s * 1e3));
    bad |= sw_json_set_new(o, "e2e_from_sent_ms", num(s->e2e_sent_s * 1e3));
    bad |= sw_json_set_new(o, "send_lag_ms", num(s->send_lag_s * 1e3));
    bad |= sw_json_set_new(o, "client_queue_ms", num(s->queue_s * 1e3));
    bad |= sw_json_set_new(o, "decode_span_ms", num(s->decode_span_s * 1e3));
    bad |= sw_json_set_new(o, "tpot_ms", num(s->tpot_s * 1e3));
    bad |= sw_json_set_new(o, "decode_tps", num(s->decode_tps));
    bad |= sw_json_set_new(o, "prefill_tps", num(s->prefill_tps));
    if (s->srv) {
        json_t *v = json_object();
        bad |= sw_json_set_int(v, "prompt_n", s->srv_prompt_n);
        bad |= sw_json_set_int(v, "cache_n", s->srv_cache_n);
        bad |= sw_json_set_int(v, "predicted_n", s->srv_predicted_n);
        bad |= sw_json_set_new(v, "prompt_ms", num(s->srv_prompt_ms));
        bad |= sw_json_set_new(v, "predicted_ms", num(s->srv_predicted_ms));
        bad |= sw_json_set_new(v, "prompt_per_second", num(s->srv_prompt_tps));
        bad |= sw_json_set_new(v, "predicted_per_second", num(s->srv_decode_tps));
        if (s->srv_draft_n >= 0) {
            bad |= sw_json_set_int(v, "draft_n", s->srv_draft_n);
            bad |= sw_json_set_int(v, "draft_n_accepted", s->srv_draft_accepted);
        }
        bad |= sw_json_set_new(o, "server", v);
    } else {
        bad |= sw_json_set_new(o, "server", json_null());
    }
    json_t *d = json_object();
    bad |= sw_json_set_bool(d, "counts_agree", s->counts_agree);
    bad |= sw_json_set_new(d, "span_diff_ms", num(s->span_diff_ms));
    bad |= sw_json_set_new(d, "decode_diff_pct", num(s->decode_diff_pct));
    bad |= sw_json_set_new(d, "prefill_diff_pct", num(s->prefill_diff_pct));
    bad |= sw_json_set_new(d, "delivery_spread_ms", num(s->delivery_spread_ms));
    bad |= sw_json_set_new(o, "reconcile", d);
    if (s->emit_matched || s->emit_missing || s->emit_bad) {
        json_t *em = json_object();
        bad |= sw_json_set_int(em, "matched", s->emit_matched);
        bad |= sw_json_set_int(em, "missing", s->emit_missing);
        bad |= sw_json_set_int(em, "bad", s->emit_bad);
        bad |= sw_json_set_new(o, "emit", em);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *point_json(const struct sw_bench_point *pt, bool samples)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    if (pt->depth >= 0)
        bad |= sw_json_set_int(o, "depth", pt->depth);
    else
        bad |= sw_json_set_new(o, "depth", json_null());
    bad |= sw_json_set_int(o, "concurrency", pt->concurrency);
    bad |= sw_json_set_int(o, "requests", (int64_t)pt->nsamples);
    bad |= sw_json_set_int(o, "failed", (int64_t)pt->failed);
    bad |= sw_json_set_int(o, "invalid", (int64_t)pt->invalid);
    json_t *fa = json_array();
    for (size_t i = 0; fa && i < pt->nreasons; i++) {
        json_t *x = json_object();
        bad |= sw_json_set_str(x, "why", pt->reasons[i].why);
        bad |= sw_json_set_int(x, "count", (int64_t)pt->reasons[i].n);
        bad |= json_array_append_new(fa, x);
    }
    bad |= sw_json_set_new(o, "failures", fa);
    if (pt->reasons_other)
        bad |= sw_json_set_int(o, "failures_other", (int64_t)pt->reasons_other);
    bad |= sw_json_set_int(o, "prompt_tokens", pt->tokens_in);
    bad |= sw_json_set_int(o, "completion_tokens", pt->tokens_out);
    bad |= sw_json_set_int(o, "reasoning_tokens", pt->reasoning_tokens);
    bad |= sw_json_set_new(o, "wall_s", num(pt->wall_s));
    bad |= sw_json_set_new(
        o, "request_throughput_rps",
        num(pt->wall_s > 0 ? (double)(pt->nsamples - pt->failed) / pt->wall_s : NAN));
    bad |= sw_json_set_new(o, "token_throughput_tps",
                           num(pt->wall_s > 0 ? (double)pt->tokens_out / pt->wall_s : NAN));
    bad |= sw_json_set_new(o, "decode_tps", spread_json(&pt->decode));
    bad |= sw_json_set_new(o, "summed_decode_tps", num(pt->sum_decode_tps));
    bad |= sw_json_set_new(o, "prefill_tps", spread_json(&pt->prefill));
    bad |= sw_json_set_new(o, "server_decode_tps", spread_json(&pt->srv_decode));
    bad |= sw_json_set_new(o, "decode_diff_pct", spread_json(&pt->decode_diff));
    bad |= sw_json_set_new(o, "server_prefill_tps", spread_json(&pt->srv_prefill));
    bad |= sw_json_set_new(o, "prefill_diff_pct", spread_json(&pt->prefill_diff));
    bad |= sw_json_set_bool(o, "counts_agree", pt->counts_agree);
    bad |= sw_json_set_int(o, "good", (int64_t)pt->good);
    bad |= sw_json_set_new(o, "goodput_rps", num(pt->goodput_rps));
    if (pt->draft_n > 0) {
        json_t *sd = json_object();
        bad |= sw_json_set_int(sd, "drafted", pt->draft_n);
        bad |= sw_json_set_int(sd, "accepted", pt->draft_accepted);
        bad |= sw_json_set_real(sd, "acceptance", (double)pt->draft_accepted / (double)pt->draft_n);
        bad |= sw_json_set_new(o, "spec_decode", sd);
    }
    bad |= sw_json_set_int(o, "cached_tokens_max", pt->cache_checked ? pt->cached_max : -1);
    bad |= sw_json_set_new(o, "ttft", sw_bench_hist_json(&pt->ttft));
    bad |= sw_json_set_new(o, "ttft_from_sent", sw_bench_hist_json(&pt->ttft_sent));
    bad |= sw_json_set_new(o, "ttfc", sw_bench_hist_json(&pt->ttfc));
    bad |= sw_json_set_new(o, "e2e", sw_bench_hist_json(&pt->e2e));
    bad |= sw_json_set_new(o, "e2e_from_sent", sw_bench_hist_json(&pt->e2e_sent));
    bad |= sw_json_set_new(o, "tpot", sw_bench_hist_json(&pt->tpot));
    bad |= sw_json_set_new(o, "itl_token", sw_bench_hist_json(&pt->itl_tok));
    bad |= sw_json_set_new(o, "itl_chunk", sw_bench_hist_json(&pt->itl_chunk));
    bad |= sw_json_set_new(o, "send_lag", sw_bench_hist_json(&pt->lag));
    json_t *cl = json_object();
    bad |= sw_json_set_new(cl, "cpu_s", num(pt->client_cpu_s));
    bad |= sw_json_set_new(cl, "wall_s", num(pt->client_wall_s));
    int nth = pt->threads > 1 ? pt->threads : 1;
    bad |= sw_json_set_int(cl, "threads", nth);
    bad |= sw_json_set_new(
        cl, "loop_utilisation",
        num(pt->client_wall_s > 0 ? pt->client_cpu_s / pt->client_wall_s / nth : NAN));
    bad |= sw_json_set_new(
        cl, "cpu_per_token_us",
        num(pt->tokens_out > 0 ? pt->client_cpu_s * 1e6 / (double)pt->tokens_out : NAN));
    bad |= sw_json_set_new(o, "client", cl);
    if (isfinite(pt->roof_tps)) {
        json_t *rf = json_object();
        bad |= sw_json_set_new(rf, "depth", num(pt->roof_depth));
        bad |= sw_json_set_new(rf, "bytes_per_token", num(pt->roof_bytes));
        bad |= sw_json_set_new(rf, "ceiling_tps", num(pt->roof_tps));
        bad |= sw_json_set_new(rf, "pct", num(pt->roof_pct));
        bad |= sw_json_set_new(o, "roofline", rf);
    }
    if (pt->emit.n || pt->emit_missing || pt->emit_bad) {
        json_t *te = sw_bench_hist_json(&pt->emit);
        bad |= sw_json_set_int(te, "matched", pt->emit_matched);
        bad |= sw_json_set_int(te, "missing", pt->emit_missing);
        bad |= sw_json_set_int(te, "bad", pt->emit_bad);
        bad |= sw_json_set_new(o, "timing_error", te);
    }
    if (samples) {
        json_t *a = json_array();
        for (size_t i = 0; i < pt->nsamples; i++)
            bad |= json_array_append_new(a, sample_json(&pt->samples[i]));
        bad |= sw_json_set_new(o, "samples", a);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *counters_json(const struct sw_bench_counters *c)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = sw_json_set_bool(o, "present", c->present);
    if (c->reset[0])
        bad |= sw_json_set_str(o, "reset", c->reset);
    if (!c->present) {
        bad |= sw_json_set_str(o, "why", c->why);
        goto out;
    }
    bad |= sw_json_set_str(o, "engine", c->engine);
    bad |= sw_json_set_new(o, "prompt_tokens", num(c->prompt_tokens));
    bad |= sw_json_set_new(o, "generation_tokens", num(c->generation_tokens));
    bad |= sw_json_set_int(o, "client_prompt_tokens", c->client_prompt_tokens);
    bad |= sw_json_set_int(o, "client_completion_tokens", c->client_completion_tokens);
    bad |= sw_json_set_int(o, "client_failed", (int64_t)c->client_failed);
    bad |= sw_json_set_bool(o, "counts_agree", c->counts_agree);
    json_t *pc = json_object();
    bad |= sw_json_set_new(pc, "queries", num(c->prefix_queries));
    bad |= sw_json_set_new(pc, "hits", num(c->prefix_hits));
    bad |= sw_json_set_new(pc, "hit_rate", num(c->prefix_hits / c->prefix_queries));
    bad |= sw_json_set_new(o, "prefix_cache", pc);
    if (c->spec_drafts > 0) {
        json_t *sd = json_object(), *pos = json_array();
        bad |= sw_json_set_new(sd, "drafts", num(c->spec_drafts));
        bad |= sw_json_set_new(sd, "draft_tokens", num(c->spec_draft_tokens));
        bad |= sw_json_set_new(sd, "accepted", num(c->spec_accepted));
        bad |= sw_json_set_new(sd, "acceptance", num(c->spec_accepted / c->spec_draft_tokens));
        for (size_t k = 0; k < c->spec_npos; k++)
            bad |= json_array_append_new(pos, num(c->spec_accept_pos[k]));
        bad |= sw_json_set_new(sd, "acceptance_per_pos", pos);
        bad |= sw_json_set_new(o, "spec_decode", sd);
    } else if (c->spec_accept_length > 0) {
        json_t *sd = json_object();
        bad |= sw_json_set_str(sd, "source", "sglang gauges (its last decode log interval)");
        bad |= sw_json_set_new(sd, "accept_length", num(c->spec_accept_length));
        bad |= sw_json_set_new(sd, "acceptance", num(c->spec_accept_rate));
        bad |= sw_json_set_new(sd, "acceptance_per_pos", json_null());
        bad |= sw_json_set_str(sd, "per_pos_why", "SGLang exports no per-position counters");
        bad |= sw_json_set_new(o, "spec_decode", sd);
    }
out:
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static void counters_print(FILE *f, const struct sw_bench_counters *c)
{
    if (c->reset[0])
        fprintf(f, "cache reset: %s\n", c->reset);
    if (!c->present) {
        if (c->why[0])
            fprintf(f, "engine counters: none (%s)\n", c->why);
        return;
    }
    fprintf(f,
            "engine counters (%s /metrics, over the points): prompt %.0f (client %lld), "
            "generated %.0f (client %lld): %s",
            c->engine, c->prompt_tokens, (long long)c->client_prompt_tokens, c->generation_tokens,
            (long long)c->client_completion_tokens,
            c->counts_agree    ? "agree"
            : c->client_failed ? "differ (requests failed)"
                               : "DIFFER");
    if (isfinite(c->prefix_hits))
        fprintf(f, "; prefix cache %.0f of %.0f prompt tokens hit", c->prefix_hits,
                c->prefix_queries);
    fprintf(f, "\n");
    if (c->spec_drafts > 0) {
        fprintf(f, "spec decode (/metrics): %.0f drafts, acceptance %.1f%%, per position:",
                c->spec_drafts, 100.0 * c->spec_accepted / c->spec_draft_tokens);
        for (size_t k = 0; k < c->spec_npos; k++)
            fprintf(f, " %zu:%.1f%%", k, 100.0 * c->spec_accept_pos[k]);
        fprintf(f, "\n");
    } else if (c->spec_accept_length > 0) {
        fprintf(f,
                "spec decode (SGLang's /metrics gauges, its last decode log interval): %.2f "
                "tokens kept a verify step",
                c->spec_accept_length);
        if (isfinite(c->spec_accept_rate))
            fprintf(f, ", acceptance %.1f%%", 100.0 * c->spec_accept_rate);
        fprintf(f, " (SGLang exports no per-position counters)\n");
    }
}

json_t *sw_bench_report_json(const struct sw_bench_report *rep, bool samples)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= sw_json_set_str(o, "url", rep->url);
    if (rep->model[0])
        bad |= sw_json_set_str(o, "model", rep->model);
    bad |= sw_json_set_str(o, "engine", rep->engine);
    bad |= sw_json_set_str(o, "mode", rep->mode == SW_BENCH_OPEN ? "open" : "sweep");
    bad |= sw_json_set_int(o, "started_at", rep->started_at);
    if (rep->mode == SW_BENCH_OPEN) {
        json_t *ol = json_object();
        bad |= sw_json_set_str(ol, "arrival", rep->arrival);
        bad |= sw_json_set_new(ol, "rate_asked", num(rep->rate_asked));
        bad |= sw_json_set_new(ol, "rate_achieved", num(rep->rate_achieved));
        bad |= sw_json_set_new(ol, "duration_s", num(rep->duration_s));
        bad |= sw_json_set_int(ol, "seed", (int64_t)rep->seed);
        bad |= sw_json_set_new(ol, "max_lag_ms", num(rep->max_lag_ms));
        bad |= sw_json_set_bool(ol, "valid", !rep->invalid);
        if (rep->invalid)
            bad |= sw_json_set_str(ol, "invalid_why", rep->invalid_why);
        bad |= sw_json_set_new(o, "open_loop", ol);
    }
    json_t *c = json_object();
    bad |= sw_json_set_bool(c, "expect_hit", rep->cache_expect_hit);
    bad |= sw_json_set_bool(c, "verified", rep->cache_verified);
    bad |= sw_json_set_str(c, "why", rep->cache_why);
    bad |= sw_json_set_new(o, "cache", c);
    if (rep->parity[0])
        bad |= sw_json_set_str(o, "parity", rep->parity);
    json_t *rf = json_object();
    bad |= sw_json_set_bool(rf, "known", rep->roof_known);
    if (rep->roof_known) {
        bad |= sw_json_set_new(rf, "weight_bytes", num(rep->roof.weight_bytes));
        bad |= sw_json_set_new(rf, "total_weight_bytes", num(rep->roof.total_weight_bytes));
        bad |= sw_json_set_new(rf, "kv_bytes_per_token", num(rep->roof.kv_bytes_per_token));
        bad |= sw_json_set_new(rf, "kv_swa_bytes_per_token", num(rep->roof.kv_swa_bytes_per_token));
        bad |= sw_json_set_int(rf, "swa_window", rep->roof.swa_window);
        bad |= sw_json_set_new(rf, "state_bytes", num(rep->roof.state_bytes));
        bad |= sw_json_set_new(rf, "bandwidth", num(rep->roof.bandwidth));
        bad |= sw_json_set_int(rf, "ranks", rep->roof.ranks > 0 ? rep->roof.ranks : 1);
        bad |= sw_json_set_str(rf, "weights_from", rep->roof.weights_from);
    } else {
        bad |= sw_json_set_str(rf, "why", rep->roof_why);
    }
    bad |= sw_json_set_new(o, "roofline", rf);
    bad |= sw_json_set_new(o, "engine_counters", counters_json(&rep->counters));
    if (rep->slo[0])
        bad |= sw_json_set_str(o, "slo", rep->slo);
    json_t *a = json_array();
    for (size_t i = 0; i < rep->npoints; i++)
        bad |= json_array_append_new(a, point_json(&rep->points[i], samples));
    bad |= sw_json_set_new(o, "points", a);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static double p_ms(const struct sw_bench_hist *h, double q)
{
    return h->n ? (double)sw_bench_hist_quantile(h, q) / 1e6 : NAN;
}

/* "2 of 6 requests failed (1 invalid):" and each kept reason with its count, a reason cut at a
 * character boundary and escaped for the terminal (a server's words: sw_fput_term). */
static void print_failures(FILE *f, const struct sw_bench_point *pt)
{
    char inv[48] = "";
    if (pt->invalid)
        snprintf(inv, sizeof(inv), " (%zu invalid)", pt->invalid);
    fprintf(f, "        %zu of %zu requests failed%s%s\n", pt->failed, pt->nsamples, inv,
            pt->nreasons ? ":" : "");
    for (size_t i = 0; i < pt->nreasons; i++) {
        char why[161];
        size_t n = strlen(pt->reasons[i].why);
        if (n >= sizeof(why)) {
            n = sizeof(why) - 4;
            while (n && ((unsigned char)pt->reasons[i].why[n] & 0xc0) == 0x80)
                n--;
            snprintf(why, sizeof(why), "%.*s...", (int)n, pt->reasons[i].why);
        } else {
            snprintf(why, sizeof(why), "%s", pt->reasons[i].why);
        }
        fprintf(f, "          %zux ", pt->reasons[i].n);
        sw_fput_term(f, why, 0);
        fputc('\n', f);
    }
    if (pt->reasons_other)
        fprintf(f, "          %zux for other reasons (--json --samples has each)\n",
                pt->reasons_other);
}

void sw_bench_report_print(FILE *f, const struct sw_bench_report *rep)
{
    fprintf(f, "bench %s%s%s (%s)\n", rep->url, rep->model[0] ? " model " : "", rep->model,
            rep->engine);
    fprintf(f, "%7s %4s %5s %6s %6s  %-26s %9s %7s %9s %9s %9s %7s %8s %8s\n", "depth", "conc",
            "reqs", "prompt", "tokens", "decode tok/s med[min..max]", "server", "diff%", "summed",
            "prefill", "server", "diff%", "ttft ms", "itl p99");
    for (size_t i = 0; i < rep->npoints; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        char dep[32], dec[64];
        char conc[16];
        if (pt->concurrency)
            snprintf(conc, sizeof(conc), "%d", pt->concurrency);
        else
            snprintf(conc, sizeof(conc), "open");
        if (pt->depth >= 0)
            snprintf(dep, sizeof(dep), "%lld", (long long)pt->depth);
        else
            snprintf(dep, sizeof(dep), "file");
        snprintf(dec, sizeof(dec), "%.2f [%.2f..%.2f]", pt->decode.median, pt->decode.min,
                 pt->decode.max);
        size_t ok = pt->nsamples - pt->failed;
        fprintf(f,
                "%7s %4s %5zu %6lld %6lld  %-26s %9.2f %+7.2f %9.2f %9.1f %9.1f %+7.1f %8.1f "
                "%8.2f\n",
                dep, conc, pt->nsamples, ok ? (long long)(pt->tokens_in / (int64_t)ok) : 0LL,
                ok ? (long long)(pt->tokens_out / (int64_t)ok) : 0LL, dec, pt->srv_decode.median,
                pt->decode_diff.median, pt->sum_decode_tps, pt->prefill.median,
                pt->srv_prefill.median, pt->prefill_diff.median, p_ms(&pt->ttft, 0.5),
                p_ms(&pt->itl_tok, 0.99));
        if (pt->failed)
            print_failures(f, pt);
        if (rep->slo[0])
            fprintf(f, "        goodput (%s): %zu of %zu requests, %.3f req/s\n", rep->slo,
                    pt->good, pt->nsamples, pt->goodput_rps);
        if (pt->draft_n > 0)
            fprintf(f,
                    "        speculative decoding: %lld of %lld drafted tokens accepted (%.1f%%)\n",
                    (long long)pt->draft_accepted, (long long)pt->draft_n,
                    100.0 * (double)pt->draft_accepted / (double)pt->draft_n);
        if (!pt->counts_agree)
            fprintf(f, "        token counts DISAGREE with the engine's own (see --json)\n");
        if (pt->client_wall_s > 0)
            fprintf(f, "        client: event loop%s busy %.1f%% of %.2f s, %.2f us CPU a token\n",
                    pt->threads > 1 ? "s (mean of the threads')" : "",
                    100.0 * pt->client_cpu_s / pt->client_wall_s /
                        (pt->threads > 1 ? pt->threads : 1),
                    pt->client_wall_s,
                    pt->tokens_out > 0 ? pt->client_cpu_s * 1e6 / (double)pt->tokens_out : NAN);
        if (isfinite(pt->roof_tps))
            fprintf(f,
                    "        roofline: %.1f MB a token at depth %.0f -> ceiling %.2f tok/s; decode "
                    "%.2f is %.1f%% of it\n",
                    pt->roof_bytes / 1e6, pt->roof_depth, pt->roof_tps, pt->decode.median,
                    pt->roof_pct);
        if (pt->emit.n || pt->emit_missing || pt->emit_bad)
            fprintf(f,
                    "        timing error (arrival - emit): p50 %.3f p99 %.3f p99.9 %.3f max %.3f "
                    "ms over %lld tokens (%lld chunks unstamped, %lld stamps not theirs)\n",
                    p_ms(&pt->emit, 0.5), p_ms(&pt->emit, 0.99), p_ms(&pt->emit, 0.999),
                    p_ms(&pt->emit, 1), (long long)pt->emit_matched, (long long)pt->emit_missing,
                    (long long)pt->emit_bad);
    }
    if (rep->mode == SW_BENCH_OPEN && rep->npoints) {
        const struct sw_bench_point *pt = &rep->points[0];
        fprintf(f,
                "open loop %s: asked %.2f req/s, achieved %.2f req/s over %.1f s; send lag p50 "
                "%.3f ms p99 %.3f ms max %.3f ms (bound %.3f)\n",
                rep->arrival, rep->rate_asked, rep->rate_achieved, rep->duration_s,
                p_ms(&pt->lag, 0.5), p_ms(&pt->lag, 0.99), p_ms(&pt->lag, 1), rep->max_lag_ms);
        fprintf(f,
                "latency from the intended send (from the actual send): ttft p50 %.1f (%.1f) p99 "
                "%.1f (%.1f) ms; e2e p50 %.1f (%.1f) p99 %.1f (%.1f) ms\n",
                p_ms(&pt->ttft, 0.5), p_ms(&pt->ttft_sent, 0.5), p_ms(&pt->ttft, 0.99),
                p_ms(&pt->ttft_sent, 0.99), p_ms(&pt->e2e, 0.5), p_ms(&pt->e2e_sent, 0.5),
                p_ms(&pt->e2e, 0.99), p_ms(&pt->e2e_sent, 0.99));
        if (rep->invalid)
            fprintf(f, "%s\n", rep->invalid_why);
    }
    if (rep->roof_known) {
        char tp[48] = "";
        if (rep->roof.ranks > 1)
            snprintf(tp, sizeof(tp), ", one rank of tp %d", rep->roof.ranks);
        fprintf(f,
                "roofline: %.2f GB of weights read a token (of %.2f), KV %.0f B a context "
                "token, state %.0f B, at %.1f GB/s%s; weights: %s\n",
                rep->roof.weight_bytes / 1e9, rep->roof.total_weight_bytes / 1e9,
                rep->roof.kv_bytes_per_token + rep->roof.kv_swa_bytes_per_token,
                rep->roof.state_bytes, rep->roof.bandwidth / 1e9, tp, rep->roof.weights_from);
    } else if (rep->roof_why[0] && strncmp(rep->roof_why, "no roofline (a URL", 18))
        fprintf(f, "roofline: %s\n", rep->roof_why);
    fprintf(f, "cache: %s\n", rep->cache_why);
    counters_print(f, &rep->counters);
    if (rep->parity[0])
        fprintf(f, "parity: %s\n", rep->parity);
}

static int csv_num(struct sw_buf *b, double v)
{
    return isfinite(v) ? sw_buf_printf(b, ",%.6g", v) : sw_buf_puts(b, ",");
}

int sw_bench_report_csv(const struct sw_bench_report *rep, const char *path, struct sw_err *e)
{
    struct sw_buf b;
    sw_buf_init(&b, 1024u * 1024u * 1024u);
    int rc = sw_buf_puts(&b, "depth,concurrency,index,ok,status,prompt_tokens,completion_tokens,"
                             "reasoning_tokens,cached_tokens,count_source,chunks,token_chunks,"
                             "send_lag_ms,client_queue_ms,ttft_ms,ttft_from_sent_ms,ttfc_ms,e2e_ms,"
                             "e2e_from_sent_ms,decode_span_ms,tpot_ms,decode_tps,prefill_tps,"
                             "server_predicted_n,server_decode_tps,server_prompt_tps,"
                             "decode_diff_pct,span_diff_ms,delivery_spread_ms,good\n");
    for (size_t i = 0; !rc && i < rep->npoints; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        for (size_t j = 0; !rc && j < pt->nsamples; j++) {
            const struct sw_bench_sample *s = &pt->samples[j];
            int bad =
                sw_buf_printf(&b, "%lld,%d,%llu,%d,%ld,%lld,%lld,%lld,%lld,%s,%llu,%llu",
                              (long long)pt->depth, pt->concurrency, (unsigned long long)s->index,
                              s->rc == 0, s->status, (long long)s->prompt_tokens,
                              (long long)s->completion_tokens, (long long)s->reasoning_tokens,
                              (long long)s->cached_tokens, sw_bench_count_src_name(s->count_src),
                              (unsigned long long)s->chunks, (unsigned long long)s->token_chunks);
            double ms[] = {s->send_lag_s,  s->queue_s,       s->ttft_s,
                           s->ttft_sent_s, s->ttfc_s,        s->e2e_s,
                           s->e2e_sent_s,  s->decode_span_s, s->tpot_s};
            for (size_t k = 0; k < SW_ARRAY_LEN(ms); k++)
                bad |= csv_num(&b, ms[k] * 1e3);
            bad |= csv_num(&b, s->decode_tps);
            bad |= csv_num(&b, s->prefill_tps);
            bad |= sw_buf_printf(&b, ",%lld", (long long)s->srv_predicted_n);
            bad |= csv_num(&b, s->srv_decode_tps);
            bad |= csv_num(&b, s->srv_prompt_tps);
            bad |= csv_num(&b, s->decode_diff_pct);
            bad |= csv_num(&b, s->span_diff_ms);
            bad |= csv_num(&b, s->delivery_spread_ms);
            bad |= sw_buf_printf(&b, ",%d\n", s->good);
            rc = bad ? SW_ENOMEM : 0;
        }
    }
    if (rc)
        rc =
            sw_err_set(e, rc, "%s: the CSV could not be built (out of memory or past 1 GiB)", path);
    else
        rc = sw_write_file_atomic(path, b.data, b.len, 0644, e);
    sw_buf_free(&b);
    return rc;
}

#define MAXS      8
#define MAXX      SW_BENCH_MAX_POINTS
#define ROOF_GRID 17

/* The panels of a run and the storage they point into (big: heap-allocated by charts_build). */
struct charts {
    double x[MAXS][MAXX], y[MAXS][MAXX], lo[MAXS][MAXX], hi[MAXS][MAXX];
    char names[MAXS][48];
    struct sw_chart_series ser[MAXS];
    double cx[MAXX], cy[MAXX], cs[MAXX];
    struct sw_chart_series cser[2];
    double cdf[8 * SW_BENCH_HIST_NBINS];
    struct sw_chart_series lser[4];
    char note[1024];
    /* the roofline: measured decode at the first concurrency against the ceiling over depth */
    double rx[MAXX], ry[MAXX], rlo[MAXX], rhi[MAXX];
    char rlab[MAXX][24];
    const char *rlabp[MAXX];
    double gx[ROOF_GRID], gy[ROOF_GRID];
    char rname[48];
    struct sw_chart_series rser[2];
    char rnote[1024];
    struct sw_chart all[4];
    size_t n;
};

/* One more line panel, both axes from zero. */
static void add_panel(struct charts *c, const char *title, const char *note, const char *x_label,
                      const char *y_label, struct sw_chart_series *series, size_t n)
{
    c->all[c->n++] = (struct sw_chart){.kind = SW_CHART_LINES,
                                       .title = title,
                                       .note = note,
                                       .x_label = x_label,
                                       .y_label = y_label,
                                       .series = series,
                                       .n_series = n,
                                       .y_from_zero = true,
                                       .x_from_zero = true};
}

/* The concurrency levels of the run in the order met (at most MAXS): one series each. */
static size_t distinct_concs(const struct sw_bench_report *rep, int concs[MAXS])
{
    size_t nconc = 0;
    for (size_t i = 0; i < rep->npoints && nconc < MAXS; i++) {
        bool seen = false;
        for (size_t j = 0; j < nconc; j++)
            seen = seen || concs[j] == rep->points[i].concurrency;
        if (!seen)
            concs[nconc++] = rep->points[i].concurrency;
    }
    return nconc;
}

/* Panel 1: decode tok/s by depth, one series per concurrency (median, min..max whiskers). */
static void panel_depth(struct charts *c, const struct sw_bench_report *rep, const int *concs,
                        size_t nconc)
{
    for (size_t k = 0; k < nconc; k++) {
        size_t n = 0;
        for (size_t i = 0; i < rep->npoints && n < MAXX; i++) {
            const struct sw_bench_point *pt = &rep->points[i];
            if (pt->concurrency != concs[k])
                continue;
            c->x[k][n] = pt->depth >= 0 ? (double)pt->depth : 0;
            c->y[k][n] = pt->decode.median;
            c->lo[k][n] = pt->decode.min;
            c->hi[k][n] = pt->decode.max;
            n++;
        }
        snprintf(c->names[k], sizeof(c->names[k]), "%d stream%s (per stream)", concs[k],
                 concs[k] == 1 ? "" : "s");
        c->ser[k] = (struct sw_chart_series){.name = c->names[k],
                                             .n = n,
                                             .x = c->x[k],
                                             .y = c->y[k],
                                             .lo = c->lo[k],
                                             .hi = c->hi[k]};
    }
    snprintf(c->note, sizeof(c->note), "%s%s%s; median of the repeats, whiskers min..max", rep->url,
             rep->model[0] ? " " : "", rep->model);
    add_panel(c, "decode tok/s by context depth", c->note, "depth (prompt tokens asked)",
              "decode tok/s", c->ser, nconc);
}

/* Panel 2: per-stream and summed decode by concurrency at the first depth (with two levels or
 * more). */
static void panel_concurrency(struct charts *c, const struct sw_bench_report *rep)
{
    size_t nc = 0;
    for (size_t i = 0; i < rep->npoints && nc < MAXX; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        if (pt->depth != rep->points[0].depth)
            continue;
        c->cx[nc] = pt->concurrency;
        c->cy[nc] = pt->decode.median;
        c->cs[nc] = pt->sum_decode_tps;
        nc++;
    }
    c->cser[0] = (struct sw_chart_series){.name = "per stream", .n = nc, .x = c->cx, .y = c->cy};
    c->cser[1] = (struct sw_chart_series){.name = "summed", .n = nc, .x = c->cx, .y = c->cs};
    if (nc > 1)
        add_panel(c, "decode tok/s by concurrency (first depth)", c->note, "streams in flight",
                  "decode tok/s", c->cser, 2);
}

/* The roofline panel: each point's median decode at `conc` streams (whiskers min..max, its % of
 * the ceiling above it) at its measured depth, the ceiling drawn over 0..the deepest point. */
static void panel_roofline(struct charts *c, const struct sw_bench_report *rep, int conc)
{
    size_t nr = 0;
    double dmax = 0;
    for (size_t i = 0; i < rep->npoints && nr < MAXX; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        if (pt->concurrency != conc || !isfinite(pt->roof_tps))
            continue;
        c->rx[nr] = pt->roof_depth;
        c->ry[nr] = pt->decode.median;
        c->rlo[nr] = pt->decode.min;
        c->rhi[nr] = pt->decode.max;
        if (isfinite(pt->roof_pct))
            snprintf(c->rlab[nr], sizeof(c->rlab[nr]), "%.1f%%", pt->roof_pct);
        c->rlabp[nr] = c->rlab[nr];
        if (pt->roof_depth > dmax)
            dmax = pt->roof_depth;
        nr++;
    }
    for (size_t g = 0; nr && g < ROOF_GRID; g++) {
        c->gx[g] = dmax * (double)g / (double)(ROOF_GRID - 1);
        c->gy[g] = sw_bench_roof_tps(&rep->roof, (int64_t)(c->gx[g] + 0.5));
    }
    snprintf(c->rname, sizeof(c->rname), "decode, %d stream%s (%% of the ceiling)", conc,
             conc == 1 ? "" : "s");
    c->rser[0] = (struct sw_chart_series){.name = c->rname,
                                          .n = nr,
                                          .x = c->rx,
                                          .y = c->ry,
                                          .lo = c->rlo,
                                          .hi = c->rhi,
                                          .labels = c->rlabp};
    c->rser[1] = (struct sw_chart_series){
        .name = "ceiling: bandwidth / bytes a token", .n = ROOF_GRID, .x = c->gx, .y = c->gy};
    /* the source's kind only ("checkpoint", "declared", "GGUF"): the panel is narrow */
    const char *wf = rep->roof.weights_from, *paren = strstr(wf, " (");
    int wlen = paren ? (int)(paren - wf) : (int)strlen(wf);
    snprintf(c->rnote, sizeof(c->rnote),
             "%.2f GB of weights (%.*s) + %.0f B KV a context token + %.0f B state at %.1f "
             "GB/s%s",
             rep->roof.weight_bytes / 1e9, wlen > 100 ? 100 : wlen, wf,
             rep->roof.kv_bytes_per_token + rep->roof.kv_swa_bytes_per_token, rep->roof.state_bytes,
             rep->roof.bandwidth / 1e9, rep->roof.ranks > 1 ? ", one tensor-parallel rank" : "");
    if (nr)
        add_panel(c, "decode roofline by context depth", c->rnote, "depth (mean prompt tokens)",
                  "decode tok/s", c->rser, 2);
}

/* Open loop: latency CDFs from the intended send and from the actual send, side by side. */
static void panel_cdf(struct charts *c, const struct sw_bench_point *pt)
{
    const struct sw_bench_hist *h[4] = {&pt->ttft, &pt->ttft_sent, &pt->e2e, &pt->e2e_sent};
    static const char *const ln[4] = {"TTFT from the intended send", "TTFT from the actual send",
                                      "E2E from the intended send", "E2E from the actual send"};
    for (int i = 0; i < 4; i++) {
        double *xs = c->cdf + (size_t)(2 * i) * SW_BENCH_HIST_NBINS;
        double *ys = xs + SW_BENCH_HIST_NBINS;
        size_t n = sw_bench_hist_cdf(h[i], xs, ys, SW_BENCH_HIST_NBINS);
        c->lser[i] = (struct sw_chart_series){.name = ln[i], .n = n, .x = xs, .y = ys};
    }
    add_panel(c, "latency CDF (open loop)", c->note, "ms", "fraction of requests", c->lser, 4);
}

/* A panel with nothing finite (one-token streams have no decode rate) is left out. */
static void keep_finite(struct charts *c)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->n; i++) {
        bool any = false;
        for (size_t k = 0; k < c->all[i].n_series; k++)
            for (size_t m = 0; m < c->all[i].series[k].n; m++)
                any = any || isfinite(c->all[i].series[k].y[m]);
        if (any)
            c->all[kept++] = c->all[i];
    }
    c->n = kept;
}

/* The run's panels with something finite to draw; sw_free(*out). SW_EINVAL when none. */
static int charts_build(const struct sw_bench_report *rep, struct charts **out, struct sw_err *e)
{
    int concs[MAXS];
    *out = NULL;
    struct charts *c = sw_calloc(1, sizeof(*c));
    if (!c)
        return sw_err_set(e, SW_ENOMEM, "bench: out of memory");
    size_t nconc = distinct_concs(rep, concs);
    panel_depth(c, rep, concs, nconc);
    panel_concurrency(c, rep);
    if (!nconc) {
        sw_free(c);
        return sw_err_set(e, SW_EINVAL, "bench: nothing to chart");
    }
    if (rep->roof_known)
        panel_roofline(c, rep, concs[0]);
    if (rep->mode == SW_BENCH_OPEN && rep->npoints && rep->points[0].e2e.n)
        panel_cdf(c, &rep->points[0]);
    keep_finite(c);
    if (!c->n) {
        sw_free(c);
        return sw_err_set(e, SW_EINVAL, "bench: no figure to chart (no request succeeded?)");
    }
    *out = c;
    return 0;
}

int sw_bench_report_svg(const struct sw_bench_report *rep, const char *path, struct sw_err *e)
{
    struct charts *c;
    int rc = charts_build(rep, &c, e);
    if (rc)
        return rc;
    rc = sw_chart_write_svg(c->all, c->n, path, e);
    sw_free(c);
    return rc;
}

static int html_text(struct sw_buf *b, const char *s, size_t n)
{
    return sw_buf_html(b, s, n);
}

/* One panel as an inline <svg> (the XML declaration dropped: it has no place in HTML). */
static int html_panel(struct sw_buf *b, const struct sw_chart *chart, struct sw_err *e)
{
    struct sw_buf svg;
    sw_buf_init(&svg, 64u << 20);
    int rc = sw_chart_svg(chart, 1, &svg, e);
    if (!rc) {
        const char *p = sw_buf_cstr(&svg);
        if (!strncmp(p, "<?xml", 5)) {
            const char *nl = strchr(p, '\n');
            p = nl ? nl + 1 : p + svg.len;
        }
        rc = sw_buf_puts(b, "<figure>\n");
        if (!rc)
            rc = sw_buf_puts(b, p);
        if (!rc)
            rc = sw_buf_puts(b, "</figure>\n");
        if (rc)
            sw_err_set(e, rc, "bench: out of memory building the page");
    }
    sw_buf_free(&svg);
    return rc;
}

int sw_bench_report_html(const struct sw_bench_report *rep, const char *path, struct sw_err *e)
{
    struct charts *c = NULL;
    struct sw_buf b;
    sw_buf_init(&b, 256u << 20);
    char *table = NULL;
    size_t tlen = 0;
    int rc = charts_build(rep, &c, e);
    if (rc)
        goto out;
    /* the table exactly as the terminal shows it */
    FILE *f = open_memstream(&table, &tlen);
    if (!f) {
        rc = sw_err_set(e, SW_ENOMEM, "bench: out of memory building the page");
        goto out;
    }
    sw_bench_report_print(f, rep);
    if (fclose(f)) {
        rc = sw_err_set(e, SW_ENOMEM, "bench: out of memory building the page");
        goto out;
    }
    int bad = 0;
    bad |= sw_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                           "<title>slipway bench: ");
    bad |= html_text(&b, rep->url, strlen(rep->url));
    bad |=
        sw_buf_puts(&b, "</title>\n<style>\nbody{font-family:sans-serif;margin:2em;color:#222}\n"
                        "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:13px}\n"
                        "figure{margin:1.5em 0}\nh1{font-size:1.4em}\n</style>\n</head>\n<body>\n"
                        "<h1>slipway bench: ");
    bad |= html_text(&b, rep->url, strlen(rep->url));
    if (rep->model[0]) {
        bad |= sw_buf_puts(&b, " (");
        bad |= html_text(&b, rep->model, strlen(rep->model));
        bad |= sw_buf_puts(&b, ")");
    }
    bad |= sw_buf_printf(&b,
                         "</h1>\n<p id=\"run\">engine %s, %s, %zu point%s; every figure is "
                         "defined in slipway's docs/bench.md.</p>\n<pre id=\"table\">",
                         rep->engine, rep->mode == SW_BENCH_OPEN ? "open loop" : "sweep",
                         rep->npoints, rep->npoints == 1 ? "" : "s");
    bad |= html_text(&b, table, tlen);
    bad |= sw_buf_puts(&b, "</pre>\n");
    if (bad) {
        rc = sw_err_set(e, SW_ENOMEM, "bench: out of memory building the page");
        goto out;
    }
    for (size_t i = 0; i < c->n && !rc; i++)
        rc = html_panel(&b, &c->all[i], e);
    if (rc)
        goto out;
    if (sw_buf_puts(&b, "</body>\n</html>\n")) {
        rc = sw_err_set(e, SW_ENOMEM, "bench: out of memory building the page");
        goto out;
    }
    rc = sw_write_file_atomic(path, b.data, b.len, 0644, e);
out:
    free(table); /* open_memstream's buffer is libc's */
    sw_free(c);
    sw_buf_free(&b);
    return rc;
}
