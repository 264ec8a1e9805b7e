/*
 * A loaded fleet as JSON (`slipway fleet show --json`): every value the file (or an import) set,
 * in the file's vocabulary, with unset values left out and values turned off shown as null.
 * Positions are not repeated per value (sw_fleet_pos has them); imports carry theirs, since where
 * an imported value came from is the point of showing it.
 *
 * Each struct the view writes is a table of its keys in output order, each naming the member it
 * reads and that member's kind (struct fd); what is not a member (a name behind a pointer, a
 * list written only when it has items, a computed default) is a small function of the table.
 * The shape is written from the shape's own field table. It does not read or check the file.
 */
#include "fleet_internal.h"

#include <stddef.h>
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

static json_t *secret_json(struct jb *b, const struct sw_fleet_secret *s)
{
    json_t *o = chk(b, json_object());
    put_cstr(b, o, s->kind == SW_FLEET_SECRET_ENV ? "from_env" : "from_file", s->ref);
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

/* What a field may need beyond its own struct: the fleet, and the struct's position in its
 * list. */
struct view {
    const struct sw_fleet *f;
    size_t i;
};

enum fk {
    FK_STR,  /* struct sw_fleet_str: its text; null when turned off; left out when unset */
    FK_CSTR, /* const char *: left out when NULL */
    FK_U64,  /* struct sw_fleet_u64 (SW_FLEET_ALL as "all") */
    FK_F64,  /* struct sw_fleet_f64 */
    FK_BOOL, /* struct sw_fleet_bool */
    FK_MS,   /* struct sw_fleet_u64 of milliseconds, in the file's spelling: "120s", "500ms" */
    FK_FLAG, /* bool: always written */
    FK_REAL, /* double: always written */
    FK_AT,   /* struct sw_fleet_at: "file:line:col", null when none */
    FK_JSON, /* json_t * (borrowed): a copy, left out when NULL */
    FK_DEV,  /* const struct sw_fleet_device *: its name, left out when NULL */
    FK_STRS, /* struct sw_fleet_str * with its count at n_off: a list, left out when empty */
    FK_FN,   /* fn(b, the struct, view): the value, or NULL to leave the key out */
};

struct fd {
    const char *key;
    enum fk kind;
    size_t off;   /* the member */
    size_t n_off; /* FK_STRS: the member counting it */
    json_t *(*fn)(struct jb *b, const void *obj, const struct view *v);
};

#define F(k, kind, T, m)                                                                           \
    {                                                                                              \
        k, kind, offsetof(T, m), 0, NULL                                                           \
    }
#define FSTRS(k, T, m, n)                                                                          \
    {                                                                                              \
        k, FK_STRS, offsetof(T, m), offsetof(T, n), NULL                                           \
    }
#define FFN(k, f)                                                                                  \
    {                                                                                              \
        k, FK_FN, 0, 0, f                                                                          \
    }
#define PUT_FIELDS(b, o, t, obj, v) put_fields(b, o, t, SW_ARRAY_LEN(t), obj, v)

static json_t *ms_json(uint64_t ms)
{
    char t[40];
    if (ms % 1000)
        snprintf(t, sizeof(t), "%llums", (unsigned long long)ms);
    else
        snprintf(t, sizeof(t), "%llus", (unsigned long long)(ms / 1000));
    return json_string(t);
}

static json_t *strs_json(struct jb *b, const struct sw_fleet_str *s, size_t n)
{
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < n; i++)
        push(b, a, chk(b, json_string(s[i].v)));
    return a;
}

static void put_fields(struct jb *b, json_t *o, const struct fd *t, size_t n, const void *obj,
                       const struct view *v)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = t[i].key;
        const void *p = (const char *)obj + t[i].off;
        switch (t[i].kind) {
        case FK_STR:
            put_str(b, o, k, p);
            break;
        case FK_CSTR:
            put_cstr(b, o, k, *(const char *const *)p);
            break;
        case FK_U64:
            put_u64(b, o, k, p);
            break;
        case FK_F64:
            put_f64(b, o, k, p);
            break;
        case FK_BOOL:
            put_bool(b, o, k, p);
            break;
        case FK_MS:
            if (((const struct sw_fleet_u64 *)p)->set)
                put(b, o, k, chk(b, ms_json(((const struct sw_fleet_u64 *)p)->v)));
            break;
        case FK_FLAG:
            put(b, o, k, chk(b, json_boolean(*(const bool *)p)));
            break;
        case FK_REAL:
            put(b, o, k, chk(b, json_real(*(const double *)p)));
            break;
        case FK_AT:
            put(b, o, k, chk(b, at_json(p)));
            break;
        case FK_JSON:
            if (*(json_t *const *)p)
                put(b, o, k, chk(b, json_deep_copy(*(json_t *const *)p)));
            break;
        case FK_DEV: {
            const struct sw_fleet_device *d = *(const struct sw_fleet_device *const *)p;
            put_cstr(b, o, k, d ? d->name : NULL);
            break;
        }
        case FK_STRS: {
            size_t cnt = *(const size_t *)((const char *)obj + t[i].n_off);
            if (cnt)
                put(b, o, k, strs_json(b, *(const struct sw_fleet_str *const *)p, cnt));
            break;
        }
        case FK_FN: {
            json_t *j = t[i].fn(b, obj, v);
            if (j)
                put(b, o, k, j);
            break;
        }
        }
    }
}

/* A struct as an object of its table's keys. */
static json_t *fields_json(struct jb *b, const struct fd *t, size_t n, const void *obj,
                           const struct view *v)
{
    json_t *o = chk(b, json_object());
    put_fields(b, o, t, n, obj, v);
    return o;
}
#define FIELDS_JSON(b, t, obj, v) fields_json(b, t, SW_ARRAY_LEN(t), obj, v)

/* A name, or the key left out. */
static json_t *name_json(struct jb *b, const char *s)
{
    return s ? chk(b, json_string(s)) : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * hosts
 */
static json_t *transport_kind(struct jb *b, const void *obj, const struct view *v)
{
    return name_json(b, ((const struct sw_fleet_host *)obj)->transport == SW_FLEET_SSH ? "ssh"
                                                                                       : "local");
}

static const struct fd transport_fields[] = {
    FFN("kind", transport_kind),
    F("address", FK_STR, struct sw_fleet_host, address),
    F("port", FK_U64, struct sw_fleet_host, port),
    F("user", FK_STR, struct sw_fleet_host, user),
    F("identity_file", FK_STR, struct sw_fleet_host, identity_file),
    F("known_hosts", FK_STR, struct sw_fleet_host, known_hosts),
};

/* index: as written, else the device's position in its host */
static json_t *device_index(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_device *d = obj;
    if (d->index.set)
        return chk(b, u64_json(d->index.v));
    return chk(b, json_integer((json_int_t)v->i));
}

static const struct fd device_fields[] = {
    F("name", FK_CSTR, struct sw_fleet_device, name),
    F("kind", FK_STR, struct sw_fleet_device, kind),
    F("vendor", FK_STR, struct sw_fleet_device, vendor),
    FFN("index", device_index),
    F("memory_total", FK_U64, struct sw_fleet_device, memory_total),
    F("memory_usable", FK_U64, struct sw_fleet_device, memory_usable),
    F("bandwidth", FK_U64, struct sw_fleet_device, bandwidth),
    F("unified_memory", FK_BOOL, struct sw_fleet_device, unified_memory),
    F("note", FK_STR, struct sw_fleet_device, note),
};

static json_t *host_transport(struct jb *b, const void *obj, const struct view *v)
{
    return FIELDS_JSON(b, transport_fields, obj, v);
}

static json_t *host_devices(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_host *h = obj;
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < h->n_devices; i++) {
        struct view dv = {v->f, i};
        push(b, a, FIELDS_JSON(b, device_fields, &h->devices[i], &dv));
    }
    return a;
}

static const struct fd host_fields[] = {
    F("name", FK_CSTR, struct sw_fleet_host, name),
    FFN("transport", host_transport),
    FFN("devices", host_devices),
    F("note", FK_STR, struct sw_fleet_host, note),
};

/* ---------------------------------------------------------------------------------------------
 * profiles
 */
static const struct fd const_fields[] = {
    F("value", FK_REAL, struct sw_fleet_const, q.value),
    F("unit", FK_CSTR, struct sw_fleet_const, q.unit),
    F("text", FK_CSTR, struct sw_fleet_const, q.text),
    F("note", FK_CSTR, struct sw_fleet_const, note),
};

static json_t *profile_base(struct jb *b, const void *obj, const struct view *v)
{
    return name_json(b, sw_fleet_engine_name(((const struct sw_fleet_profile *)obj)->base));
}

static json_t *profile_consts(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_profile *p = obj;
    json_t *cs = chk(b, json_object());
    for (size_t k = 0; k < p->n_consts; k++)
        put(b, cs, p->consts[k].name, FIELDS_JSON(b, const_fields, &p->consts[k], v));
    return cs;
}

static const struct fd profile_fields[] = {
    F("name", FK_CSTR, struct sw_fleet_profile, name),
    FFN("base", profile_base),
    FFN("constants", profile_consts),
    F("terms", FK_JSON, struct sw_fleet_profile, terms),
    F("note", FK_STR, struct sw_fleet_profile, note),
};

/* ---------------------------------------------------------------------------------------------
 * an endpoint's runtime and service: the resolved kind, name and scope, and what the file gave
 */
static json_t *runtime_kind(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_runtime *rt = obj;
    return name_json(b, rt->kind ? sw_fleet_runtime_name(rt->kind) : NULL);
}

static const struct fd runtime_fields[] = {
    FFN("kind", runtime_kind),
    F("shm_size", FK_U64, struct sw_fleet_runtime, shm_size),
    F("stop_grace", FK_MS, struct sw_fleet_runtime, stop_grace_ms),
    FSTRS("devices", struct sw_fleet_runtime, devices, n_devices),
    FSTRS("args", struct sw_fleet_runtime, args, n_args),
};

static json_t *service_scope(struct jb *b, const void *obj, const struct view *v)
{
    enum sw_fleet_scope sc = ((const struct sw_fleet_service *)obj)->scope;
    return name_json(b, sc == SW_FLEET_SCOPE_USER     ? "user"
                        : sc == SW_FLEET_SCOPE_SYSTEM ? "system"
                                                      : NULL);
}

static json_t *service_oom_score(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_service *sv = obj;
    if (!sv->oom_score_adjust.set)
        return NULL;
    return chk(b, json_integer((json_int_t)sv->oom_score_adjust.v));
}

static const struct fd service_fields[] = {
    F("name", FK_STR, struct sw_fleet_service, name),
    FFN("scope", service_scope),
    F("restart_sec", FK_MS, struct sw_fleet_service, restart_sec_ms),
    F("stop_timeout", FK_MS, struct sw_fleet_service, stop_timeout_ms),
    F("start_limit_burst", FK_U64, struct sw_fleet_service, start_limit_burst),
    F("start_limit_interval", FK_MS, struct sw_fleet_service, start_limit_interval_ms),
    FFN("oom_score_adjust", service_oom_score),
    F("user", FK_STR, struct sw_fleet_service, user),
    F("memory_max", FK_U64, struct sw_fleet_service, memory_max),
};

/* ---------------------------------------------------------------------------------------------
 * an endpoint's payload
 */
static json_t *payload_source(struct jb *b, const void *obj, const struct view *v)
{
    enum sw_fleet_payload_source s = ((const struct sw_fleet_payload *)obj)->source;
    return name_json(b, s == SW_FLEET_PAYLOAD_LOCAL ? "local"
                        : s == SW_FLEET_PAYLOAD_HF  ? "hf"
                                                    : NULL);
}

static const struct fd mount_fields[] = {
    F("host", FK_CSTR, struct sw_fleet_mount, host_path),
    F("container", FK_CSTR, struct sw_fleet_mount, container_path),
    F("readonly", FK_FLAG, struct sw_fleet_mount, readonly),
};

static json_t *payload_mounts(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_payload *p = obj;
    if (!p->n_mounts)
        return NULL;
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < p->n_mounts; i++)
        push(b, a, FIELDS_JSON(b, mount_fields, &p->mounts[i], v));
    return a;
}

static const struct fd payload_fields[] = {
    FFN("source", payload_source),
    F("path", FK_STR, struct sw_fleet_payload, path),
    F("repo", FK_STR, struct sw_fleet_payload, repo),
    F("revision", FK_STR, struct sw_fleet_payload, revision),
    FSTRS("files", struct sw_fleet_payload, files, n_files),
    F("shards", FK_U64, struct sw_fleet_payload, shards),
    F("gguf", FK_STR, struct sw_fleet_payload, gguf),
    F("mmproj", FK_STR, struct sw_fleet_payload, mmproj),
    F("draft", FK_STR, struct sw_fleet_payload, draft),
    F("quantization", FK_STR, struct sw_fleet_payload, quantization),
    FFN("mounts", payload_mounts),
};

/* ---------------------------------------------------------------------------------------------
 * what an endpoint records: imports, measured facts, boots
 */
static json_t *import_from(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_import *im = obj;
    return name_json(b, im->from == SW_FLEET_FROM_ENVIRON ? "environment"
                        : im->from == SW_FLEET_FROM_FILE  ? "env_file"
                                                          : "fleet_file");
}

static const struct fd import_fields[] = {
    F("key", FK_CSTR, struct sw_fleet_import, key),
    F("field", FK_CSTR, struct sw_fleet_import, field),
    F("value", FK_CSTR, struct sw_fleet_import, value),
    FFN("from", import_from),
    F("at", FK_AT, struct sw_fleet_import, at),
};

static const struct fd fact_fields[] = {
    F("value", FK_REAL, struct sw_fleet_fact, q.value),
    F("unit", FK_CSTR, struct sw_fleet_fact, q.unit),
    F("text", FK_CSTR, struct sw_fleet_fact, q.text),
    F("date", FK_CSTR, struct sw_fleet_fact, date),
    F("source", FK_CSTR, struct sw_fleet_fact, source),
    F("device", FK_DEV, struct sw_fleet_fact, device),
};

static json_t *boot_shape(struct jb *b, const void *obj, const struct view *v)
{
    return shape_json(b, &((const struct sw_fleet_boot *)obj)->shape);
}

static const struct fd boot_fields[] = {
    FFN("shape", boot_shape),
    F("mmproj", FK_BOOL, struct sw_fleet_boot, mmproj),
    F("device", FK_DEV, struct sw_fleet_boot, device),
    F("used", FK_U64, struct sw_fleet_boot, used),
    F("total", FK_U64, struct sw_fleet_boot, total),
    F("free", FK_U64, struct sw_fleet_boot, free),
    F("outcome", FK_CSTR, struct sw_fleet_boot, outcome),
    F("failure", FK_CSTR, struct sw_fleet_boot, failure),
    F("text", FK_CSTR, struct sw_fleet_boot, text),
    F("printed", FK_JSON, struct sw_fleet_boot, printed),
    F("date", FK_CSTR, struct sw_fleet_boot, date),
    F("note", FK_CSTR, struct sw_fleet_boot, note),
};

static const struct fd band_fields[] = {
    F("min", FK_U64, struct sw_fleet_band, min),
    F("max", FK_U64, struct sw_fleet_band, max),
};

/* ---------------------------------------------------------------------------------------------
 * an endpoint
 */
#define EP(obj) ((const struct sw_fleet_endpoint *)(obj))

static json_t *ep_host(struct jb *b, const void *obj, const struct view *v)
{
    return name_json(b, EP(obj)->host ? EP(obj)->host->name : NULL);
}

static json_t *ep_devices(struct jb *b, const void *obj, const struct view *v)
{
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < EP(obj)->n_devices; i++)
        push(b, a, chk(b, json_string(EP(obj)->devices[i]->name)));
    return a;
}

static json_t *ep_engine(struct jb *b, const void *obj, const struct view *v)
{
    return name_json(b, sw_fleet_engine_name(EP(obj)->engine));
}

static json_t *ep_profile(struct jb *b, const void *obj, const struct view *v)
{
    return name_json(b, EP(obj)->profile ? EP(obj)->profile->name : NULL);
}

static json_t *ep_image_pinned(struct jb *b, const void *obj, const struct view *v)
{
    return EP(obj)->image.v ? chk(b, json_boolean(EP(obj)->image_pinned)) : NULL;
}

static json_t *ep_runtime(struct jb *b, const void *obj, const struct view *v)
{
    return FIELDS_JSON(b, runtime_fields, &EP(obj)->runtime, v);
}

static json_t *ep_service(struct jb *b, const void *obj, const struct view *v)
{
    return FIELDS_JSON(b, service_fields, &EP(obj)->service, v);
}

static const struct fd listen_fields[] = {
    F("address", FK_STR, struct sw_fleet_endpoint, listen_address),
    F("port", FK_U64, struct sw_fleet_endpoint, listen_port),
    F("route", FK_STR, struct sw_fleet_endpoint, listen_route),
};

static json_t *ep_listen(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->listen_address.v && !ep->listen_port.set && !ep->listen_route.v)
        return NULL;
    return FIELDS_JSON(b, listen_fields, ep, v);
}

static json_t *ep_api_key(struct jb *b, const void *obj, const struct view *v)
{
    return EP(obj)->api_key.kind ? secret_json(b, &EP(obj)->api_key) : NULL;
}

static json_t *ep_payload(struct jb *b, const void *obj, const struct view *v)
{
    return FIELDS_JSON(b, payload_fields, &EP(obj)->payload, v);
}

static json_t *ep_shape(struct jb *b, const void *obj, const struct view *v)
{
    return shape_json(b, &EP(obj)->shape);
}

static json_t *ep_env(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->n_env)
        return NULL;
    json_t *e = chk(b, json_object());
    for (size_t i = 0; i < ep->n_env; i++) {
        if (ep->env[i].secret.kind)
            put(b, e, ep->env[i].name, secret_json(b, &ep->env[i].secret));
        else
            put(b, e, ep->env[i].name, chk(b, json_string(ep->env[i].value)));
    }
    return e;
}

static json_t *ep_env_file(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->env_file)
        return NULL;
    json_t *ef = chk(b, json_object());
    put_cstr(b, ef, "path", ep->env_file->path);
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < ep->n_imports; i++)
        push(b, a, FIELDS_JSON(b, import_fields, &ep->imports[i], v));
    put(b, ef, "imports", a);
    return ef;
}

static json_t *ep_knobs(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->n_knobs)
        return NULL;
    json_t *k = chk(b, json_object());
    for (size_t i = 0; i < ep->n_knobs; i++)
        put(b, k, ep->knobs[i].name, knob_json(b, &ep->knobs[i]));
    return k;
}

static json_t *ep_frozen(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->n_frozen)
        return NULL;
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < ep->n_frozen; i++)
        push(b, a, chk(b, json_string(ep->frozen[i].name)));
    return a;
}

static json_t *ep_free_band(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_band *fb = &EP(obj)->free_band;
    return fb->min.set ? FIELDS_JSON(b, band_fields, fb, v) : NULL;
}

static json_t *ep_measured(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->n_facts)
        return NULL;
    json_t *m = chk(b, json_object());
    for (size_t i = 0; i < ep->n_facts; i++)
        put(b, m, ep->facts[i].name, FIELDS_JSON(b, fact_fields, &ep->facts[i], v));
    return m;
}

static json_t *ep_boots(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->n_boots)
        return NULL;
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < ep->n_boots; i++)
        push(b, a, FIELDS_JSON(b, boot_fields, &ep->boots[i], v));
    return a;
}

static json_t *ep_known_bad(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->n_known_bad)
        return NULL;
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < ep->n_known_bad; i++)
        push(b, a, rule_json(b, &ep->known_bad[i]));
    return a;
}

static json_t *ep_client_window(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(v->f, obj);
    return cw ? chk(b, u64_json(cw->v)) : NULL;
}

static const struct fd endpoint_fields[] = {
    F("name", FK_CSTR, struct sw_fleet_endpoint, name),
    F("enabled", FK_FLAG, struct sw_fleet_endpoint, enabled),
    FFN("host", ep_host),
    FFN("devices", ep_devices),
    FFN("engine", ep_engine),
    F("engine_version", FK_STR, struct sw_fleet_endpoint, engine_version),
    FFN("profile", ep_profile),
    F("binary", FK_STR, struct sw_fleet_endpoint, binary),
    F("image", FK_STR, struct sw_fleet_endpoint, image),
    FFN("image_pinned", ep_image_pinned),
    FFN("runtime", ep_runtime),
    FFN("service", ep_service),
    FFN("listen", ep_listen),
    F("alias", FK_STR, struct sw_fleet_endpoint, alias),
    F("nodes", FK_U64, struct sw_fleet_endpoint, nodes),
    FFN("api_key", ep_api_key),
    FFN("payload", ep_payload),
    FFN("shape", ep_shape),
    FSTRS("args", struct sw_fleet_endpoint, args, n_args),
    FFN("env", ep_env),
    FFN("env_file", ep_env_file),
    FFN("knobs", ep_knobs),
    FFN("frozen", ep_frozen),
    FFN("free_band", ep_free_band),
    FFN("measured", ep_measured),
    FFN("boots", ep_boots),
    FFN("known_bad", ep_known_bad),
    F("arch", FK_JSON, struct sw_fleet_endpoint, arch),
    F("draft_arch", FK_JSON, struct sw_fleet_endpoint, draft_arch),
    FFN("client_context_window", ep_client_window),
    F("note", FK_STR, struct sw_fleet_endpoint, note),
};

/* ---------------------------------------------------------------------------------------------
 * the harness, and the fleet
 */
static json_t *harness_compaction(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_harness *h = obj;
    return name_json(b, h->compaction_endpoint ? h->compaction_endpoint->name : NULL);
}

static const struct fd client_fields[] = {
    F("context_window", FK_U64, struct sw_fleet_client, context_window),
};

static json_t *harness_clients(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_harness *h = obj;
    if (!h->n_clients)
        return NULL;
    json_t *cj = chk(b, json_object());
    for (size_t i = 0; i < h->n_clients; i++)
        put(b, cj, h->clients[i].endpoint->name, FIELDS_JSON(b, client_fields, &h->clients[i], v));
    return cj;
}

static const struct fd harness_fields[] = {
    F("context_window", FK_U64, struct sw_fleet_harness, context_window),
    F("compaction_ratio", FK_F64, struct sw_fleet_harness, compaction_ratio),
    F("summary_budget", FK_U64, struct sw_fleet_harness, summary_budget),
    FFN("compaction_endpoint", harness_compaction),
    FFN("endpoints", harness_clients),
};

static json_t *fleet_version(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    return chk(b, json_integer(f->version.set ? (json_int_t)f->version.v : 1));
}

/* A list of n structs of size bytes, each an object of its table. */
static json_t *list_json(struct jb *b, const struct fd *t, size_t nt, const void *first, size_t n,
                         size_t size, const struct view *v)
{
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < n; i++)
        push(b, a, fields_json(b, t, nt, (const char *)first + i * size, v));
    return a;
}

static json_t *fleet_hosts(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    return list_json(b, host_fields, SW_ARRAY_LEN(host_fields), f->hosts, f->n_hosts,
                     sizeof(*f->hosts), v);
}

static json_t *fleet_profiles(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    return list_json(b, profile_fields, SW_ARRAY_LEN(profile_fields), f->profiles, f->n_profiles,
                     sizeof(*f->profiles), v);
}

static json_t *fleet_endpoints(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    return list_json(b, endpoint_fields, SW_ARRAY_LEN(endpoint_fields), f->endpoints,
                     f->n_endpoints, sizeof(*f->endpoints), v);
}

static json_t *fleet_harness(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    return f->harness.present ? FIELDS_JSON(b, harness_fields, &f->harness, v) : NULL;
}

static json_t *fleet_warnings(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    json_t *ws = chk(b, json_array());
    for (size_t i = 0; i < f->n_warnings; i++) {
        char buf[1600];
        const struct sw_fleet_at *at = &f->warnings[i].at;
        if (at->file && at->line)
            snprintf(buf, sizeof(buf), "%s:%d:%d: %s", at->file, at->line, at->col,
                     f->warnings[i].msg);
        else
            snprintf(buf, sizeof(buf), "%s", f->warnings[i].msg);
        push(b, ws, chk(b, json_string(buf)));
    }
    return ws;
}

static const struct fd fleet_fields[] = {
    F("path", FK_CSTR, struct sw_fleet, path),
    FFN("version", fleet_version),
    FFN("hosts", fleet_hosts),
    FFN("profiles", fleet_profiles),
    FFN("endpoints", fleet_endpoints),
    FFN("harness", fleet_harness),
    FFN("warnings", fleet_warnings),
};

json_t *sw_fleet_to_json(const struct sw_fleet *f)
{
    struct jb b = {0};
    struct view v = {f, 0};
    json_t *o = FIELDS_JSON(&b, fleet_fields, f, &v);
    if (b.oom) {
        json_decref(o);
        return NULL;
    }
    return o;
}
