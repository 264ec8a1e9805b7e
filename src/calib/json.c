/*
 * calib/json: the fit, a budget and a KV prediction as JSON, every figure with its unit in the
 * key name (bytes, mib, tokens) and every interval as {lo, hi, point}.
 *
 * What it does not do: format for humans (the CLI does).
 */
#include "calib_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static json_t *range3(int64_t lo, int64_t hi, int64_t point)
{
    return json_pack("{s:I,s:I,s:I}", "lo", (json_int_t)lo, "hi", (json_int_t)hi, "point",
                     (json_int_t)point);
}

static json_t *rangef(double lo, double hi)
{
    return json_pack("{s:f,s:f}", "lo", lo, "hi", hi);
}

static json_t *kv_json(const struct sw_calib_kv_fit *k)
{
    json_t *o = json_object();
    json_t *pts = json_array();
    json_t *lens = json_array();
    if (!o || !pts || !lens) {
        json_decref(o);
        json_decref(pts);
        json_decref(lens);
        return NULL;
    }
    sw_json_set_str(o, "class", k->klass);
    sw_json_set_str(o, "kv_dtype", k->kv_dtype);
    sw_json_set_int(o, "tp", k->tp);
    for (int i = 0; i < k->n_lens; i++)
        json_array_append_new(lens, json_integer(k->lens[i]));
    sw_json_set_new(o, "geometry",
                    json_pack("{s:o,s:I,s:I}", "max_model_len", lens, "kv_bytes_lo",
                              (json_int_t)k->kv_lo, "kv_bytes_hi", (json_int_t)k->kv_hi));
    sw_json_set_new(o, "search",
                    json_pack("{s:I,s:i,s:i,s:s}", "block_align", (json_int_t)k->align,
                              "max_state_blocks", k->max_s, "max_attn_groups", k->max_a, "law",
                              "vllm-current-block"));
    sw_json_set_bool(o, "consistent", k->consistent);
    if (!k->consistent)
        sw_json_set_str(o, "why", k->why);
    sw_json_set_int(o, "solutions", k->n_solutions);
    if (k->consistent) {
        sw_json_set_new(o, "block_tokens", rangef((double)k->b_lo, (double)k->b_hi));
        sw_json_set_new(o, "state_blocks_per_request", rangef((double)k->s_lo, (double)k->s_hi));
        sw_json_set_new(o, "stride_bytes", rangef((double)k->stride_lo, (double)k->stride_hi));
        sw_json_set_new(o, "bytes_per_token", rangef(k->bytes_per_token_lo, k->bytes_per_token_hi));
        if (k->chosen >= 0) {
            const struct sw_calib_kv_sol *s = &k->sols[k->chosen];
            sw_json_set_new(o, "chosen",
                            json_pack("{s:i,s:I,s:I,s:I,s:I}", "attn_groups", s->a, "block",
                                      (json_int_t)s->b, "state_blocks", (json_int_t)s->s,
                                      "stride_lo", (json_int_t)s->stride_lo, "stride_hi",
                                      (json_int_t)s->stride_hi));
        }
    }
    if (k->model.have || k->model.why[0]) {
        const struct sw_calib_kv_model *m = &k->model;
        json_t *mj =
            json_pack("{s:s,s:b,s:I,s:I,s:i,s:i,s:I,s:I,s:b,s:b}", "source", m->source, "planned",
                      m->have, "block", (json_int_t)m->block, "group_size",
                      (json_int_t)m->group_size, "attn_groups", m->attn_groups, "state_groups",
                      m->state_groups, "state_blocks_base", (json_int_t)m->state_blocks_base,
                      "page_bytes_per_token_layer", (json_int_t)m->page_per_token, "explained",
                      m->explained, "law_reproduces", m->law_reproduces);
        if (mj && m->explained) {
            sw_json_set_new(mj, "extra_attn_bytes_per_token",
                            rangef((double)m->extra_bytes_lo, (double)m->extra_bytes_hi));
            sw_json_set_new(mj, "extra_mamba_blocks",
                            rangef((double)m->extra_blocks_lo, (double)m->extra_blocks_hi));
        }
        if (mj && m->why[0])
            sw_json_set_str(mj, "why", m->why);
        sw_json_set_new(o, "model", mj);
    }
    for (int i = 0; i < k->n_points; i++) {
        const struct sw_calib_kv_point *p = &k->pts[i];
        json_t *pj = json_pack("{s:I,s:s,s:I,s:I,s:I,s:I}", "boot", (json_int_t)p->boot_id,
                               "ext_id", p->ext_id, "max_model_len", (json_int_t)p->max_model_len,
                               "slots", (json_int_t)p->slots, "kv_bytes", (json_int_t)p->kv_bytes,
                               "printed_tokens", (json_int_t)p->tokens);
        if (!pj)
            continue;
        if (p->has_conc)
            sw_json_set_real(pj, "printed_concurrency", p->conc);
        if (k->consistent) {
            sw_json_set_int(pj, "fit_tokens", p->fit_tokens);
            sw_json_set_str(pj, "fit_concurrency", p->fit_conc);
            sw_json_set_int(pj, "residual_tokens", p->residual_tokens);
        }
        sw_json_set_str(pj, "taught", p->taught);
        json_array_append_new(pts, pj);
    }
    sw_json_set_new(o, "boots", pts);
    if (k->n_skipped)
        sw_json_set_str(o, "skipped", k->skipped);
    return o;
}

static json_t *nonkv_json(const struct sw_calib_nonkv *c)
{
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:I,s:I}", "class", c->label, "device",
                  c->device, "kv_source", c->kv_source, "non_kv_mib", c->mean, "non_kv_lo_mib",
                  c->lo, "non_kv_hi_mib", c->hi, "reserve_lo_mib", c->reserve_lo, "reserve_hi_mib",
                  c->reserve_hi, "ctx_lo", (json_int_t)c->ctx_lo, "ctx_hi", (json_int_t)c->ctx_hi);
    json_t *rs = json_array();
    if (!o || !rs) {
        json_decref(o);
        json_decref(rs);
        return NULL;
    }
    for (int i = 0; i < c->n; i++) {
        const struct sw_calib_nonkv_read *r = &c->r[i];
        json_array_append_new(rs,
                              json_pack("{s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:b,s:I,s:f,s:f}", "usage",
                                        (json_int_t)r->usage_id, "boot", (json_int_t)r->boot_id,
                                        "shape", r->shape, "ctx", (json_int_t)r->ctx, "slots",
                                        (json_int_t)r->slots, "used_mib", (json_int_t)r->used_mib,
                                        "total_mib", (json_int_t)r->total_mib, "free_read",
                                        r->free_read, "free_mib", (json_int_t)r->free_mib, "kv_mib",
                                        r->kv_mib, "non_kv_mib", r->non_kv_mib));
    }
    sw_json_set_new(o, "readings", rs);
    return o;
}

static json_t *arena_json(const struct sw_calib_arena *a)
{
    json_t *o = json_object();
    json_t *pts = json_array();
    if (!o || !pts) {
        json_decref(o);
        json_decref(pts);
        return NULL;
    }
    sw_json_set_bool(o, "consistent", a->consistent);
    if (a->why[0])
        sw_json_set_str(o, "why", a->why);
    for (int i = 0; i < a->n; i++) {
        json_t *p = json_pack("{s:I,s:I,s:I,s:I}", "boot", (json_int_t)a->boot_ids[i],
                              "max_model_len", (json_int_t)a->lens[i], "mnbt",
                              (json_int_t)a->mnbt[i], "printed_slots", (json_int_t)a->slots[i]);
        if (p && a->gib[i] >= 0)
            sw_json_set_real(p, "printed_gib", a->gib[i]);
        json_array_append_new(pts, p);
    }
    sw_json_set_new(o, "boots", pts);
    sw_json_set_new(o, "slot_bytes", rangef(a->slot_lo, a->slot_hi));
    if (a->consistent) {
        sw_json_set_new(o, "reserve_per_token", rangef(a->reserve_lo, a->reserve_hi));
        sw_json_set_new(o, "capacity_bytes", rangef(a->cap_lo, a->cap_hi));
        if (a->have_base) {
            sw_json_set_real(o, "declared_base_bytes", a->base);
            sw_json_set_new(o, "adjust_bytes", rangef(a->adjust_lo, a->adjust_hi));
        }
        sw_json_set_int(o, "vertices", a->n_vert);
        sw_json_set_str(o, "underdetermined", a->underdetermined);
    }
    return o;
}

json_t *sw_calib_fit_json(const struct sw_calib_fit *f)
{
    json_t *o = json_object();
    json_t *kv = json_array(), *nk = json_array();
    if (!o || !kv || !nk) {
        json_decref(o);
        json_decref(kv);
        json_decref(nk);
        return NULL;
    }
    sw_json_set_str(o, "endpoint", f->endpoint);
    sw_json_set_str(o, "engine", f->engine);
    sw_json_set_int(o, "boots", f->n_boots);
    for (int i = 0; i < f->n_kv; i++)
        json_array_append_new(kv, kv_json(&f->kv[i]));
    for (int i = 0; i < f->n_nonkv; i++)
        json_array_append_new(nk, nonkv_json(&f->nonkv[i]));
    sw_json_set_new(o, "kv", kv);
    sw_json_set_new(o, "non_kv", nk);
    if (f->arena.have)
        sw_json_set_new(o, "arena", arena_json(&f->arena));
    if (f->headroom.have)
        sw_json_set_new(o, "headroom", sw_calib_headroom_json(&f->headroom));
    if (f->joint_classes)
        sw_json_set_new(o, "fork_terms",
                        json_pack("{s:i,s:b,s:o,s:o}", "classes", f->joint_classes, "agree",
                                  f->joint_agree, "extra_attn_bytes_per_token",
                                  rangef((double)f->joint_bytes_lo, (double)f->joint_bytes_hi),
                                  "extra_mamba_blocks",
                                  rangef((double)f->joint_blocks_lo, (double)f->joint_blocks_hi)));
    if (f->notes[0])
        sw_json_set_str(o, "notes", f->notes);
    return o;
}

json_t *sw_calib_budget_json(const struct sw_calib_budget *b)
{
    json_t *o = json_object();
    json_t *ds = json_array();
    if (!o || !ds) {
        json_decref(o);
        json_decref(ds);
        return NULL;
    }
    for (int i = 0; i < b->n_dev; i++) {
        const struct sw_calib_device *d = &b->dev[i];
        json_t *ids = json_array();
        for (int j = 0; j < d->n_readings && j < SW_CALIB_MAX_READ; j++)
            json_array_append_new(ids, json_integer(d->reading_ids[j]));
        json_array_append_new(
            ds, json_pack("{s:s,s:I,s:b,s:f,s:o,s:o,s:o,s:f,s:f,s:f,s:f,s:o,s:s}", "device",
                          d->device, "total_mib", (json_int_t)d->total_mib, "measured", d->measured,
                          "kv_mib", d->kv_mib, "non_kv_mib",
                          json_pack("{s:f,s:f,s:f}", "point", d->non_kv_mib, "lo", d->non_kv_lo,
                                    "hi", d->non_kv_hi),
                          "used_mib",
                          json_pack("{s:f,s:f,s:f}", "point", d->used_mib, "lo", d->used_lo, "hi",
                                    d->used_hi),
                          "free_mib",
                          json_pack("{s:f,s:f,s:f}", "point", d->free_mib, "lo", d->free_lo, "hi",
                                    d->free_hi),
                          "reserve_mib", d->reserve_mib, "free_point_mib", d->free_mib,
                          "used_point_mib", d->used_mib, "non_kv_point_mib", d->non_kv_mib,
                          "readings", ids, "basis", d->basis));
    }
    sw_json_set_new(o, "devices", ds);
    sw_json_set_bool(o, "extrapolated", b->extrapolated);
    if (b->warning[0])
        sw_json_set_str(o, "warning", b->warning);
    return o;
}

json_t *sw_calib_kv_pred_json(const struct sw_calib_kv_pred *p)
{
    json_t *o = json_pack(
        "{s:o,s:o,s:o,s:b}", "tokens", range3(p->tokens.lo, p->tokens.hi, p->tokens.point),
        "blocks_per_request",
        range3(p->blocks_per_request.lo, p->blocks_per_request.hi, p->blocks_per_request.point),
        "concurrency", rangef(p->conc_lo, p->conc_hi), "extrapolated", p->tokens.extrapolated);
    if (o && p->warning[0])
        sw_json_set_str(o, "warning", p->warning);
    return o;
}

const char *sw_calib_fit_summary(const struct sw_calib_fit *f, char *out, size_t n)
{
    size_t k = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (k < n)                                                                                 \
            k += (size_t)snprintf(out + k, n - k, __VA_ARGS__);                                    \
    } while (0)
    if (!n)
        return out;
    out[0] = 0;
    PUT("slipway calibrate %s:", f->endpoint);
    for (int i = 0; i < f->n_kv; i++) {
        const struct sw_calib_kv_fit *c = &f->kv[i];
        PUT(" KV %s over max_model_len", c->klass);
        for (int j = 0; j < c->n_lens; j++)
            PUT("%s%lld", j ? "," : " ", (long long)c->lens[j]);
        if (!c->consistent) {
            PUT(": INCONSISTENT (%s);", c->why);
            continue;
        }
        PUT(" (%d boots, residual 0): %lld solutions, block %lld..%lld, state blocks %lld..%lld, "
            "stride %llu..%llu B, %.0f..%.0f B/token",
            c->n_points, (long long)c->n_solutions, (long long)c->b_lo, (long long)c->b_hi,
            (long long)c->s_lo, (long long)c->s_hi, (unsigned long long)c->stride_lo,
            (unsigned long long)c->stride_hi, c->bytes_per_token_lo, c->bytes_per_token_hi);
        if (c->model.explained)
            PUT(", fork terms %lld..%lld B/token/layer, %+lld..%+lld state blocks",
                (long long)c->model.extra_bytes_lo, (long long)c->model.extra_bytes_hi,
                (long long)c->model.extra_blocks_lo, (long long)c->model.extra_blocks_hi);
        PUT(";");
    }
    for (int i = 0; i < f->n_nonkv; i++) {
        const struct sw_calib_nonkv *c = &f->nonkv[i];
        PUT(" non-KV %s on %s: %.1f..%.1f MiB over %d reading%s (ctx %lld..%lld);", c->label,
            c->device, c->lo, c->hi, c->n, c->n == 1 ? "" : "s", (long long)c->ctx_lo,
            (long long)c->ctx_hi);
    }
    if (f->arena.have && f->arena.consistent)
        PUT(" arena: reserve %.1f..%.1f B/token, C %.4f..%.4f GiB over %d boots;",
            f->arena.reserve_lo, f->arena.reserve_hi, f->arena.cap_lo / 1073741824.0,
            f->arena.cap_hi / 1073741824.0, f->arena.n);
    if (f->headroom.have && f->headroom.consistent && f->headroom.tau_hi_set)
        PUT(" headroom: capture %.3f..%.3f GiB per sequence over %d boots;",
            f->headroom.tau_lo / 1073741824.0, f->headroom.tau_hi / 1073741824.0,
            f->headroom.n_tau_lo + f->headroom.n_tau_hi);
#undef PUT
    if (k >= n && n > 4)
        memcpy(out + n - 4, "...", 4);
    return out;
}
