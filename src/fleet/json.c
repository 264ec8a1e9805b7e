/*
 * A loaded fleet as JSON (`slipway fleet show --json`): every value the file (or an import) set,
 * in the file's vocabulary, with unset values left out and values turned off shown as null.
 * Positions are not repeated per value (sw_fleet_pos has them); imports carry theirs, since where
 * an imported value came from is the point of showing it.
 */
#include "fleet_internal.h"

#include <stdlib.h>
#include <string.h>

struct jb {
    bool oom;
};

static json_t *chk(struct jb *b, json_t *j)
{
    if (!j)
        b->oom = true;
    return j;
}

static void put(struct jb *b, json_t *o, const char *k, json_t *v)
{
    if (!o || !v) {
        b->oom = b->oom || !v;
        json_decref(v);
        return;
    }
    if (json_object_set_new(o, k, v))
        b->oom = true;
}

static void push(struct jb *b, json_t *a, json_t *v)
{
    if (!a || !v) {
        b->oom = b->oom || !v;
        json_decref(v);
        return;
    }
    if (json_array_append_new(a, v))
        b->oom = true;
}

static void put_str(struct jb *b, json_t *o, const char *k, const struct sw_fleet_str *s)
{
    if (s->v)
        put(b, o, k, chk(b, json_string(s->v)));
    else if (s->off)
        put(b, o, k, chk(b, json_null()));
}

static void put_cstr(struct jb *b, json_t *o, const char *k, const char *s)
{
    if (s)
        put(b, o, k, chk(b, json_string(s)));
}

static json_t *u64_json(uint64_t v)
{
    if (v == SW_FLEET_ALL)
        return json_string("all");
    if (v > (uint64_t)INT64_MAX)
        return json_real((double)v);
    return json_integer((json_int_t)v);
}

static void put_u64(struct jb *b, json_t *o, const char *k, const struct sw_fleet_u64 *u)
{
    if (u->set)
        put(b, o, k, chk(b, u64_json(u->v)));
    else if (u->off)
        put(b, o, k, chk(b, json_null()));
}

static void put_f64(struct jb *b, json_t *o, const char *k, const struct sw_fleet_f64 *d)
{
    if (d->set)
        put(b, o, k, chk(b, json_real(d->v)));
    else if (d->off)
        put(b, o, k, chk(b, json_null()));
}

static void put_bool(struct jb *b, json_t *o, const char *k, const struct sw_fleet_bool *x)
{
    if (x->set)
        put(b, o, k, chk(b, json_boolean(x->v)));
    else if (x->off)
        put(b, o, k, chk(b, json_null()));
}

static json_t *at_json(const struct sw_fleet_at *at)
{
    char buf[700];
    if (!at->file)
        return json_null();
    if (at->line > 0)
        snprintf(buf, sizeof(buf), "%s:%d:%d", at->file, at->line, at->col);
    else
        snprintf(buf, sizeof(buf), "%s", at->file);
    return json_string(buf);
}

static json_t *value_json(const struct sw_fleet_value *v)
{
    if (!v->set)
        return json_null();
    switch (v->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES:
        return u64_json(v->u);
    case SW_FLEET_V_REAL:
        return json_real(v->f);
    case SW_FLEET_V_BOOL:
        return json_boolean(v->b);
    case SW_FLEET_V_STR:
        return json_string(v->s ? v->s : "");
    }
    return json_null();
}

static json_t *shape_json(struct jb *b, const struct sw_fleet_shape *s)
{
    json_t *o = chk(b, json_object());
    json_t *spec = NULL;
    size_t nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    for (size_t i = 0; o && i < nf; i++) {
        const void *p = sw__fleet_shape_cptr(s, &fs[i]);
        json_t *dst = o;
        const char *key = fs[i].name;
        if (!strncmp(key, "spec_decode.", 12)) {
            if (!spec)
                spec = chk(b, json_object());
            dst = spec;
            key += 12;
        }
        switch (fs[i].type) {
        case SW_FLEET_V_COUNT:
        case SW_FLEET_V_BYTES:
            put_u64(b, dst, key, p);
            break;
        case SW_FLEET_V_REAL:
            put_f64(b, dst, key, p);
            break;
        case SW_FLEET_V_BOOL:
            put_bool(b, dst, key, p);
            break;
        case SW_FLEET_V_STR:
            put_str(b, dst, key, p);
            break;
        }
    }
    if (spec && json_object_size(spec))
        put(b, o, "spec_decode", spec);
    else
        json_decref(spec);
    return o;
}

json_t *sw_fleet_shape_to_json(const struct sw_fleet_shape *s)
{
    struct jb b = {0};
    json_t *o = shape_json(&b, s);
    if (b.oom) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *qty_json(struct jb *b, const struct sw_fleet_qty *q)
{
    json_t *o = chk(b, json_object());
    put(b, o, "value", chk(b, json_real(q->value)));
    put_cstr(b, o, "unit", q->unit);
    put_cstr(b, o, "text", q->text);
    return o;
}

static json_t *secret_json(struct jb *b, const struct sw_fleet_secret *s)
{
    json_t *o = chk(b, json_object());
    put_cstr(b, o, s->kind == SW_FLEET_SECRET_ENV ? "from_env" : "from_file", s->ref);
    return o;
}

static json_t *host_json(struct jb *b, const struct sw_fleet_host *h)
{
    json_t *o = chk(b, json_object());
    put_cstr(b, o, "name", h->name);
    json_t *t = chk(b, json_object());
    put_cstr(b, t, "kind", h->transport == SW_FLEET_SSH ? "ssh" : "local");
    put_str(b, t, "address", &h->address);
    put_u64(b, t, "port", &h->port);
    put_str(b, t, "user", &h->user);
    put_str(b, t, "identity_file", &h->identity_file);
    put_str(b, t, "known_hosts", &h->known_hosts);
    put(b, o, "transport", t);
    json_t *devs = chk(b, json_array());
    for (size_t i = 0; i < h->n_devices; i++) {
        const struct sw_fleet_device *d = &h->devices[i];
        json_t *dj = chk(b, json_object());
        put_cstr(b, dj, "name", d->name);
        put_str(b, dj, "kind", &d->kind);
        put_str(b, dj, "vendor", &d->vendor);
        if (d->index.set)
            put_u64(b, dj, "index", &d->index);
        else
            put(b, dj, "index", chk(b, json_integer((json_int_t)i)));
        put_u64(b, dj, "memory_total", &d->memory_total);
        put_u64(b, dj, "memory_usable", &d->memory_usable);
        put_u64(b, dj, "bandwidth", &d->bandwidth);
        put_bool(b, dj, "unified_memory", &d->unified_memory);
        put_str(b, dj, "note", &d->note);
        push(b, devs, dj);
    }
    put(b, o, "devices", devs);
    put_str(b, o, "note", &h->note);
    return o;
}

static json_t *rule_json(struct jb *b, const struct sw_fleet_rule *r)
{
    json_t *o = chk(b, json_object());
    char when[600];
    size_t j = 0;
    when[0] = '\0';
    for (size_t i = 0; i < r->n_conds && j < sizeof(when); i++) {
        const struct sw_fleet_cond *c = &r->conds[i];
        char val[200];
        if (c->op == SW_FLEET_IN) {
            size_t k = 0;
            val[0] = '\0';
            for (size_t q = 0; q < c->n_in && k < sizeof(val); q++) {
                json_t *vj = value_json(&c->in[q]);
                char *txt = vj ? sw_json_dumps(vj, JSON_ENCODE_ANY) : NULL;
                int w = snprintf(val + k, sizeof(val) - k, "%s%s", q ? ", " : "[", txt ? txt : "?");
                sw_free(txt);
                json_decref(vj);
                if (w < 0 || (size_t)w >= sizeof(val) - k)
                    break;
                k += (size_t)w;
            }
            if (k + 2 < sizeof(val)) {
                val[k] = ']';
                val[k + 1] = '\0';
            }
        } else {
            json_t *vj = value_json(&c->v);
            char *txt = vj ? sw_json_dumps(vj, JSON_ENCODE_ANY) : NULL;
            snprintf(val, sizeof(val), "%s", txt ? txt : "?");
            sw_free(txt);
            json_decref(vj);
        }
        int w = snprintf(when + j, sizeof(when) - j, "%s%s %s %s", i ? " && " : "",
                         c->field ? c->field->name : "?", sw_fleet_op_name(c->op), val);
        if (w < 0 || (size_t)w >= sizeof(when) - j)
            break;
        j += (size_t)w;
    }
    put(b, o, "when", chk(b, json_string(when)));
    put_cstr(b, o, "failure", r->failure);
    put_cstr(b, o, "text", r->text);
    put_cstr(b, o, "date", r->date);
    put_cstr(b, o, "note", r->note);
    put(b, o, "at", chk(b, at_json(&r->at)));
    return o;
}

static json_t *knob_json(struct jb *b, const struct sw_fleet_knob *k)
{
    if (!k->is_range) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < k->n_values; i++)
            push(b, a, chk(b, value_json(&k->values[i])));
        return a;
    }
    json_t *o = chk(b, json_object());
    put(b, o, "min", chk(b, value_json(&k->min)));
    put(b, o, "max", chk(b, value_json(&k->max)));
    if (k->step.set)
        put(b, o, "step", chk(b, value_json(&k->step)));
    return o;
}

/* A duration kept in milliseconds, in the file's spelling: "120s", "500ms". */
static void put_ms(struct jb *b, json_t *o, const char *k, const struct sw_fleet_u64 *u)
{
    if (!u->set)
        return;
    char t[40];
    if (u->v % 1000)
        snprintf(t, sizeof(t), "%llums", (unsigned long long)u->v);
    else
        snprintf(t, sizeof(t), "%llus", (unsigned long long)(u->v / 1000));
    put(b, o, k, chk(b, json_string(t)));
}

/* runtime {kind, shm_size, stop_grace, devices, args} and service {name, scope, ...}: the
 * resolved kind, name and scope, and what the file gave. */
static void put_runtime(struct jb *b, json_t *o, const struct sw_fleet_endpoint *ep)
{
    const struct sw_fleet_runtime *rt = &ep->runtime;
    json_t *r = chk(b, json_object());
    put_cstr(b, r, "kind", rt->kind ? sw_fleet_runtime_name(rt->kind) : NULL);
    put_u64(b, r, "shm_size", &rt->shm_size);
    put_ms(b, r, "stop_grace", &rt->stop_grace_ms);
    if (rt->n_devices) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < rt->n_devices; i++)
            push(b, a, chk(b, json_string(rt->devices[i].v)));
        put(b, r, "devices", a);
    }
    if (rt->n_args) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < rt->n_args; i++)
            push(b, a, chk(b, json_string(rt->args[i].v)));
        put(b, r, "args", a);
    }
    put(b, o, "runtime", r);
    const struct sw_fleet_service *sv = &ep->service;
    json_t *s = chk(b, json_object());
    put_str(b, s, "name", &sv->name);
    put_cstr(b, s, "scope",
             sv->scope == SW_FLEET_SCOPE_USER     ? "user"
             : sv->scope == SW_FLEET_SCOPE_SYSTEM ? "system"
                                                  : NULL);
    put_ms(b, s, "restart_sec", &sv->restart_sec_ms);
    put_ms(b, s, "stop_timeout", &sv->stop_timeout_ms);
    put_u64(b, s, "start_limit_burst", &sv->start_limit_burst);
    put_ms(b, s, "start_limit_interval", &sv->start_limit_interval_ms);
    if (sv->oom_score_adjust.set)
        put(b, s, "oom_score_adjust", chk(b, json_integer((json_int_t)sv->oom_score_adjust.v)));
    put_str(b, s, "user", &sv->user);
    put_u64(b, s, "memory_max", &sv->memory_max);
    put(b, o, "service", s);
}

static json_t *endpoint_json(struct jb *b, const struct sw_fleet *f,
                             const struct sw_fleet_endpoint *ep)
{
    json_t *o = chk(b, json_object());
    put_cstr(b, o, "name", ep->name);
    put(b, o, "enabled", chk(b, json_boolean(ep->enabled)));
    put_cstr(b, o, "host", ep->host ? ep->host->name : NULL);
    json_t *devs = chk(b, json_array());
    for (size_t i = 0; i < ep->n_devices; i++)
        push(b, devs, chk(b, json_string(ep->devices[i]->name)));
    put(b, o, "devices", devs);
    put_cstr(b, o, "engine", sw_fleet_engine_name(ep->engine));
    put_str(b, o, "engine_version", &ep->engine_version);
    put_cstr(b, o, "profile", ep->profile ? ep->profile->name : NULL);
    put_str(b, o, "binary", &ep->binary);
    put_str(b, o, "image", &ep->image);
    if (ep->image.v)
        put(b, o, "image_pinned", chk(b, json_boolean(ep->image_pinned)));
    put_runtime(b, o, ep);
    if (ep->listen_address.v || ep->listen_port.set || ep->listen_route.v) {
        json_t *l = chk(b, json_object());
        put_str(b, l, "address", &ep->listen_address);
        put_u64(b, l, "port", &ep->listen_port);
        put_str(b, l, "route", &ep->listen_route);
        put(b, o, "listen", l);
    }
    put_str(b, o, "alias", &ep->alias);
    put_u64(b, o, "nodes", &ep->nodes);
    if (ep->api_key.kind)
        put(b, o, "api_key", secret_json(b, &ep->api_key));
    const struct sw_fleet_payload *p = &ep->payload;
    json_t *pj = chk(b, json_object());
    put_cstr(b, pj, "source",
             p->source == SW_FLEET_PAYLOAD_LOCAL ? "local"
             : p->source == SW_FLEET_PAYLOAD_HF  ? "hf"
                                                 : NULL);
    put_str(b, pj, "path", &p->path);
    put_str(b, pj, "repo", &p->repo);
    put_str(b, pj, "revision", &p->revision);
    if (p->n_files) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < p->n_files; i++)
            push(b, a, chk(b, json_string(p->files[i].v)));
        put(b, pj, "files", a);
    }
    put_u64(b, pj, "shards", &p->shards);
    put_str(b, pj, "gguf", &p->gguf);
    put_str(b, pj, "mmproj", &p->mmproj);
    put_str(b, pj, "draft", &p->draft);
    put_str(b, pj, "quantization", &p->quantization);
    if (p->n_mounts) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < p->n_mounts; i++) {
            json_t *m = chk(b, json_object());
            put_cstr(b, m, "host", p->mounts[i].host_path);
            put_cstr(b, m, "container", p->mounts[i].container_path);
            put(b, m, "readonly", chk(b, json_boolean(p->mounts[i].readonly)));
            push(b, a, m);
        }
        put(b, pj, "mounts", a);
    }
    put(b, o, "payload", pj);
    put(b, o, "shape", shape_json(b, &ep->shape));
    if (ep->n_args) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < ep->n_args; i++)
            push(b, a, chk(b, json_string(ep->args[i].v)));
        put(b, o, "args", a);
    }
    if (ep->n_env) {
        json_t *e = chk(b, json_object());
        for (size_t i = 0; i < ep->n_env; i++) {
            if (ep->env[i].secret.kind)
                put(b, e, ep->env[i].name, secret_json(b, &ep->env[i].secret));
            else
                put(b, e, ep->env[i].name, chk(b, json_string(ep->env[i].value)));
        }
        put(b, o, "env", e);
    }
    if (ep->env_file) {
        json_t *ef = chk(b, json_object());
        put_cstr(b, ef, "path", ep->env_file->path);
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < ep->n_imports; i++) {
            const struct sw_fleet_import *im = &ep->imports[i];
            json_t *ij = chk(b, json_object());
            put_cstr(b, ij, "key", im->key);
            put_cstr(b, ij, "field", im->field);
            if (im->value)
                put_cstr(b, ij, "value", im->value);
            put_cstr(b, ij, "from",
                     im->from == SW_FLEET_FROM_ENVIRON ? "environment"
                     : im->from == SW_FLEET_FROM_FILE  ? "env_file"
                                                       : "fleet_file");
            put(b, ij, "at", chk(b, at_json(&im->at)));
            push(b, a, ij);
        }
        put(b, ef, "imports", a);
        put(b, o, "env_file", ef);
    }
    if (ep->n_knobs) {
        json_t *k = chk(b, json_object());
        for (size_t i = 0; i < ep->n_knobs; i++)
            put(b, k, ep->knobs[i].name, knob_json(b, &ep->knobs[i]));
        put(b, o, "knobs", k);
    }
    if (ep->n_frozen) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < ep->n_frozen; i++)
            push(b, a, chk(b, json_string(ep->frozen[i].name)));
        put(b, o, "frozen", a);
    }
    if (ep->free_band.min.set) {
        json_t *fb = chk(b, json_object());
        put_u64(b, fb, "min", &ep->free_band.min);
        put_u64(b, fb, "max", &ep->free_band.max);
        put(b, o, "free_band", fb);
    }
    if (ep->n_facts) {
        json_t *m = chk(b, json_object());
        for (size_t i = 0; i < ep->n_facts; i++) {
            const struct sw_fleet_fact *fa = &ep->facts[i];
            json_t *fj = qty_json(b, &fa->q);
            put_cstr(b, fj, "date", fa->date);
            put_cstr(b, fj, "source", fa->source);
            put_cstr(b, fj, "device", fa->device ? fa->device->name : NULL);
            put(b, m, fa->name, fj);
        }
        put(b, o, "measured", m);
    }
    if (ep->n_boots) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < ep->n_boots; i++) {
            const struct sw_fleet_boot *bt = &ep->boots[i];
            json_t *bj = chk(b, json_object());
            put(b, bj, "shape", shape_json(b, &bt->shape));
            put_bool(b, bj, "mmproj", &bt->mmproj);
            put_cstr(b, bj, "device", bt->device ? bt->device->name : NULL);
            put_u64(b, bj, "used", &bt->used);
            put_u64(b, bj, "total", &bt->total);
            put_u64(b, bj, "free", &bt->free);
            put_cstr(b, bj, "outcome", bt->outcome);
            put_cstr(b, bj, "failure", bt->failure);
            put_cstr(b, bj, "text", bt->text);
            if (bt->printed)
                put(b, bj, "printed", chk(b, json_deep_copy(bt->printed)));
            put_cstr(b, bj, "date", bt->date);
            put_cstr(b, bj, "note", bt->note);
            push(b, a, bj);
        }
        put(b, o, "boots", a);
    }
    if (ep->n_known_bad) {
        json_t *a = chk(b, json_array());
        for (size_t i = 0; i < ep->n_known_bad; i++)
            push(b, a, rule_json(b, &ep->known_bad[i]));
        put(b, o, "known_bad", a);
    }
    if (ep->arch)
        put(b, o, "arch", chk(b, json_deep_copy(ep->arch)));
    if (ep->draft_arch)
        put(b, o, "draft_arch", chk(b, json_deep_copy(ep->draft_arch)));
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(f, ep);
    if (cw)
        put(b, o, "client_context_window", chk(b, u64_json(cw->v)));
    put_str(b, o, "note", &ep->note);
    return o;
}

json_t *sw_fleet_to_json(const struct sw_fleet *f)
{
    struct jb b = {0};
    json_t *o = chk(&b, json_object());
    put_cstr(&b, o, "path", f->path);
    put(&b, o, "version", chk(&b, json_integer(f->version.set ? (json_int_t)f->version.v : 1)));
    json_t *hs = chk(&b, json_array());
    for (size_t i = 0; i < f->n_hosts; i++)
        push(&b, hs, host_json(&b, &f->hosts[i]));
    put(&b, o, "hosts", hs);
    json_t *ps = chk(&b, json_array());
    for (size_t i = 0; i < f->n_profiles; i++) {
        const struct sw_fleet_profile *p = &f->profiles[i];
        json_t *pj = chk(&b, json_object());
        put_cstr(&b, pj, "name", p->name);
        put_cstr(&b, pj, "base", sw_fleet_engine_name(p->base));
        json_t *cs = chk(&b, json_object());
        for (size_t k = 0; k < p->n_consts; k++) {
            json_t *cj = qty_json(&b, &p->consts[k].q);
            put_cstr(&b, cj, "note", p->consts[k].note);
            put(&b, cs, p->consts[k].name, cj);
        }
        put(&b, pj, "constants", cs);
        if (p->terms)
            put(&b, pj, "terms", chk(&b, json_deep_copy(p->terms)));
        put_str(&b, pj, "note", &p->note);
        push(&b, ps, pj);
    }
    put(&b, o, "profiles", ps);
    json_t *es = chk(&b, json_array());
    for (size_t i = 0; i < f->n_endpoints; i++)
        push(&b, es, endpoint_json(&b, f, &f->endpoints[i]));
    put(&b, o, "endpoints", es);
    if (f->harness.present) {
        const struct sw_fleet_harness *h = &f->harness;
        json_t *hj = chk(&b, json_object());
        put_u64(&b, hj, "context_window", &h->context_window);
        put_f64(&b, hj, "compaction_ratio", &h->compaction_ratio);
        put_u64(&b, hj, "summary_budget", &h->summary_budget);
        put_cstr(&b, hj, "compaction_endpoint",
                 h->compaction_endpoint ? h->compaction_endpoint->name : NULL);
        if (h->n_clients) {
            json_t *cj = chk(&b, json_object());
            for (size_t i = 0; i < h->n_clients; i++) {
                json_t *one = chk(&b, json_object());
                put_u64(&b, one, "context_window", &h->clients[i].context_window);
                put(&b, cj, h->clients[i].endpoint->name, one);
            }
            put(&b, hj, "endpoints", cj);
        }
        put(&b, o, "harness", hj);
    }
    json_t *ws = chk(&b, json_array());
    for (size_t i = 0; i < f->n_warnings; i++) {
        char buf[1600];
        const struct sw_fleet_at *at = &f->warnings[i].at;
        if (at->file && at->line)
            snprintf(buf, sizeof(buf), "%s:%d:%d: %s", at->file, at->line, at->col,
                     f->warnings[i].msg);
        else
            snprintf(buf, sizeof(buf), "%s", f->warnings[i].msg);
        push(&b, ws, chk(&b, json_string(buf)));
    }
    put(&b, o, "warnings", ws);
    if (b.oom) {
        json_decref(o);
        return NULL;
    }
    return o;
}
