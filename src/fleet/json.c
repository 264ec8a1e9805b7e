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

static json_t *u64_json(uint64_t v)
{
    if (v == SW_FLEET_ALL)
        return json_string("all");
    if (v > (uint64_t)INT64_MAX)
        return json_real((double)v);
    return json_integer((json_int_t)v);
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

/* What a field may need beyond its own struct: the fleet, and the struct's position in its
 * list. */
struct view {
    const struct sw_fleet *f;
    size_t i;
};

enum fk {
    FK_STR,    /* struct sw_fleet_str: its text; null when turned off; left out when unset */
    FK_CSTR,   /* const char *: left out when NULL */
    FK_U64,    /* struct sw_fleet_u64 (SW_FLEET_ALL as "all") */
    FK_F64,    /* struct sw_fleet_f64 */
    FK_BOOL,   /* struct sw_fleet_bool */
    FK_MS,     /* struct sw_fleet_u64 of milliseconds, in the file's spelling: "120s", "500ms" */
    FK_FLAG,   /* bool: always written */
    FK_REAL,   /* double: always written */
    FK_AT,     /* struct sw_fleet_at: "file:line:col", null when none */
    FK_JSON,   /* json_t * (borrowed): a copy, left out when NULL */
    FK_REF,    /* a pointer to a struct whose first member is its name: the name, left out when
                * NULL */
    FK_ENUM,   /* an enum: name(value), else names[value]; left out when that is NULL */
    FK_SECRET, /* struct sw_fleet_secret: {from_env|from_file: ref}, left out when none */
    FK_SHAPE,  /* struct sw_fleet_shape: the shape's own field table */
    FK_STRS,   /* struct sw_fleet_str * and its count: a list of the texts */
    FK_NAMES,  /* structs whose first member is a name, and their count: a list of the names */
    FK_OBJ,    /* a struct (off 0: this one): an object of sub */
    FK_LIST,   /* structs and their count: a list of sub's objects (or fn's values) */
    FK_MAP,    /* structs whose first member is a name (or points to a named struct), and their
                * count: an object of them by name, each sub's object (or fn's value) */
    FK_FN,     /* fn(b, the struct, view): the value, or NULL to leave the key out */
};

#define FD_OMIT_EMPTY 1u /* FK_STRS, FK_NAMES, FK_LIST, FK_MAP: left out without elements */
#define FD_KEY_REF    2u /* FK_MAP: an element's first member points to the struct named */

struct fd {
    const char *key;
    enum fk kind;
    size_t off;           /* the member */
    size_t n_off;         /* FK_STRS, FK_NAMES, FK_LIST, FK_MAP: the member counting it */
    size_t size;          /* FK_NAMES, FK_LIST, FK_MAP: an element's size */
    const struct fd *sub; /* FK_OBJ, FK_LIST, FK_MAP: the element's table, n_sub keys */
    size_t n_sub;
    const char *(*name)(int value); /* FK_ENUM... */
    const char *const *names;       /* ...or n_names names by value */
    size_t n_names;
    unsigned flags;
    /* FK_FN; FK_LIST and FK_MAP without sub: an element's value */
    json_t *(*fn)(struct jb *b, const void *obj, const struct view *v);
};

/* A table's rows. T is the struct the table reads (#define T around the table); a row's key is
 * its member's name (ROW) unless it is given (KEY, and the other kinds). */
/* clang-format off */
#define KEY(k, kd, m)      {.key = k, .kind = kd, .off = offsetof(T, m)}
#define ROW(kd, m)         KEY(#m, kd, m)
#define FN(k, f)           {.key = k, .kind = FK_FN, .fn = f}
#define ENUM(k, m, tab)    {.key = k, .kind = FK_ENUM, .off = offsetof(T, m), .names = tab, \
                            .n_names = SW_ARRAY_LEN(tab)}
#define ENUMF(k, m, f)     {.key = k, .kind = FK_ENUM, .off = offsetof(T, m), .name = f}
#define OBJ(k, m, t)       {.key = k, .kind = FK_OBJ, .off = offsetof(T, m), .sub = t, \
                            .n_sub = SW_ARRAY_LEN(t)}
#define ELEMS(kd, m, n)    .kind = kd, .off = offsetof(T, m), .n_off = offsetof(T, n), \
                           .size = sizeof(*((T *)0)->m)
#define TEXTS(k, kd, m, n, fl)   {.key = k, ELEMS(kd, m, n), .flags = fl}
#define TABLES(k, kd, m, n, t, fl) {.key = k, ELEMS(kd, m, n), .sub = t, .n_sub = SW_ARRAY_LEN(t), \
                                    .flags = fl}
/* clang-format on */

static json_t *fields_json(struct jb *b, const struct fd *t, size_t n, const void *obj,
                           const struct view *v);
static json_t *field_json(struct jb *b, const struct fd *d, const void *obj, const struct view *v);
#define FIELDS_JSON(b, t, obj, v) fields_json(b, t, SW_ARRAY_LEN(t), obj, v)

/* The shape from its own field table (sw_fleet_shape_fields); spec_decode.* nested. */
static json_t *shape_json(struct jb *b, const struct sw_fleet_shape *s)
{
    static const enum fk kinds[] = {[SW_FLEET_V_COUNT] = FK_U64,
                                    [SW_FLEET_V_BYTES] = FK_U64,
                                    [SW_FLEET_V_REAL] = FK_F64,
                                    [SW_FLEET_V_BOOL] = FK_BOOL,
                                    [SW_FLEET_V_STR] = FK_STR};
    json_t *o = chk(b, json_object());
    json_t *spec = NULL;
    size_t nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    for (size_t i = 0; o && i < nf; i++) {
        json_t *dst = o;
        const char *key = fs[i].name;
        if (!strncmp(key, "spec_decode.", 12)) {
            if (!spec)
                spec = chk(b, json_object());
            dst = spec;
            key += 12;
        }
        struct fd d = {.key = key, .kind = kinds[fs[i].type]};
        json_t *j = field_json(b, &d, sw__fleet_shape_cptr(s, &fs[i]), NULL);
        if (j)
            put(b, dst, key, j);
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
    if (s->ref)
        put(b, o, s->kind == SW_FLEET_SECRET_ENV ? "from_env" : "from_file",
            chk(b, json_string(s->ref)));
    return o;
}

/* A rule's conditions as one line: "seqs == 2 && cache_type_k in [\"f16\", \"q8_0\"]". */
static json_t *rule_when(struct jb *b, const struct sw_fleet_rule *r)
{
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
    return chk(b, json_string(when));
}

/* A knob's domain: its set as a list, or its range as {min, max[, step]}. */
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

static json_t *ms_json(uint64_t ms)
{
    char t[40];
    if (ms % 1000)
        snprintf(t, sizeof(t), "%llums", (unsigned long long)ms);
    else
        snprintf(t, sizeof(t), "%llus", (unsigned long long)(ms / 1000));
    return json_string(t);
}

/* The name of a struct whose first member is it. */
static const char *name_of(const void *x)
{
    return *(const char *const *)x;
}

/* FK_STRS, FK_NAMES, FK_LIST, FK_MAP: the count elements at p (NULL when omitted empty). */
static json_t *many_json(struct jb *b, const struct fd *d, const void *obj, const struct view *v)
{
    size_t cnt = *(const size_t *)((const char *)obj + d->n_off);
    const char *first = *(const char *const *)((const char *)obj + d->off);
    if (!cnt && (d->flags & FD_OMIT_EMPTY))
        return NULL;
    json_t *c = chk(b, d->kind == FK_MAP ? json_object() : json_array());
    for (size_t i = 0; i < cnt; i++) {
        const char *x = first + i * d->size;
        struct view ev = {v->f, i};
        json_t *one;
        if (d->kind == FK_STRS)
            one = chk(b, json_string(((const struct sw_fleet_str *)x)->v));
        else if (d->kind == FK_NAMES)
            one = chk(b, json_string(name_of(x)));
        else if (d->sub)
            one = fields_json(b, d->sub, d->n_sub, x, &ev);
        else
            one = d->fn(b, x, &ev);
        if (d->kind == FK_MAP)
            put(b, c, name_of((d->flags & FD_KEY_REF) ? *(const void *const *)x : x), one);
        else
            push(b, c, one);
    }
    return c;
}

/* One field's value: NULL when it is left out (or out of memory, which b then says). */
static json_t *field_json(struct jb *b, const struct fd *d, const void *obj, const struct view *v)
{
    const void *p = (const char *)obj + d->off;
    switch (d->kind) {
    case FK_STR: {
        const struct sw_fleet_str *x = p;
        return x->v ? chk(b, json_string(x->v)) : x->off ? chk(b, json_null()) : NULL;
    }
    case FK_CSTR:
        return *(const char *const *)p ? chk(b, json_string(*(const char *const *)p)) : NULL;
    case FK_U64:
    case FK_MS: {
        const struct sw_fleet_u64 *x = p;
        if (x->set)
            return chk(b, d->kind == FK_MS ? ms_json(x->v) : u64_json(x->v));
        return x->off && d->kind == FK_U64 ? chk(b, json_null()) : NULL;
    }
    case FK_F64: {
        const struct sw_fleet_f64 *x = p;
        return x->set ? chk(b, json_real(x->v)) : x->off ? chk(b, json_null()) : NULL;
    }
    case FK_BOOL: {
        const struct sw_fleet_bool *x = p;
        return x->set ? chk(b, json_boolean(x->v)) : x->off ? chk(b, json_null()) : NULL;
    }
    case FK_FLAG:
        return chk(b, json_boolean(*(const bool *)p));
    case FK_REAL:
        return chk(b, json_real(*(const double *)p));
    case FK_AT:
        return chk(b, at_json(p));
    case FK_JSON:
        return *(json_t *const *)p ? chk(b, json_deep_copy(*(json_t *const *)p)) : NULL;
    case FK_REF:
        return *(const void *const *)p ? chk(b, json_string(name_of(*(const void *const *)p)))
                                       : NULL;
    case FK_ENUM: {
        int x = *(const int *)p;
        const char *s = d->name                            ? d->name(x)
                        : x >= 0 && (size_t)x < d->n_names ? d->names[x]
                                                           : NULL;
        return s ? chk(b, json_string(s)) : NULL;
    }
    case FK_SECRET:
        return ((const struct sw_fleet_secret *)p)->kind ? secret_json(b, p) : NULL;
    case FK_SHAPE:
        return shape_json(b, p);
    case FK_OBJ:
        return fields_json(b, d->sub, d->n_sub, p, v);
    case FK_STRS:
    case FK_NAMES:
    case FK_LIST:
    case FK_MAP:
        return many_json(b, d, obj, v);
    case FK_FN:
        return d->fn(b, obj, v);
    }
    return NULL;
}

/* A struct as an object of its table's keys, in the table's order. */
static json_t *fields_json(struct jb *b, const struct fd *t, size_t n, const void *obj,
                           const struct view *v)
{
    json_t *o = chk(b, json_object());
    for (size_t i = 0; i < n; i++) {
        json_t *j = field_json(b, &t[i], obj, v);
        if (j)
            put(b, o, t[i].key, j);
    }
    return o;
}

/* ---------------------------------------------------------------------------------------------
 * hosts and profiles
 */
static const char *const transports[] = {[SW_FLEET_LOCAL] = "local", [SW_FLEET_SSH] = "ssh"};

#define T struct sw_fleet_host
static const struct fd transport_fields[] = {ENUM("kind", transport, transports),
                                             ROW(FK_STR, address),
                                             ROW(FK_U64, port),
                                             ROW(FK_STR, user),
                                             ROW(FK_STR, identity_file),
                                             ROW(FK_STR, known_hosts)};
#undef T

/* index: as written, else the device's position in its host */
static json_t *device_index(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_device *d = obj;
    return chk(b, d->index.set ? u64_json(d->index.v) : json_integer((json_int_t)v->i));
}

#define T struct sw_fleet_device
static const struct fd device_fields[] = {ROW(FK_CSTR, name),        ROW(FK_STR, kind),
                                          ROW(FK_STR, vendor),       FN("index", device_index),
                                          ROW(FK_U64, memory_total), ROW(FK_U64, memory_usable),
                                          ROW(FK_U64, bandwidth),    ROW(FK_BOOL, unified_memory),
                                          ROW(FK_STR, note)};
#undef T

#define T struct sw_fleet_host
static const struct fd host_fields[] = {
    ROW(FK_CSTR, name),
    {.key = "transport",
     .kind = FK_OBJ,
     .off = 0,
     .sub = transport_fields,
     .n_sub = SW_ARRAY_LEN(transport_fields)},
    TABLES("devices", FK_LIST, devices, n_devices, device_fields, 0),
    ROW(FK_STR, note)};
#undef T

static const char *engine_name(int e)
{
    return sw_fleet_engine_name((enum sw_fleet_engine)e);
}

#define T struct sw_fleet_const
static const struct fd const_fields[] = {KEY("value", FK_REAL, q.value),
                                         KEY("unit", FK_CSTR, q.unit), KEY("text", FK_CSTR, q.text),
                                         ROW(FK_CSTR, note)};
#undef T

#define T struct sw_fleet_profile
static const struct fd profile_fields[] = {
    ROW(FK_CSTR, name), ENUMF("base", base, engine_name),
    TABLES("constants", FK_MAP, consts, n_consts, const_fields, 0), ROW(FK_JSON, terms),
    ROW(FK_STR, note)};
#undef T

/* ---------------------------------------------------------------------------------------------
 * an endpoint's runtime, service and payload: the resolved kind, name and scope, and what the
 * file gave
 */
static const char *runtime_name(int k)
{
    return k ? sw_fleet_runtime_name((enum sw_fleet_runtime_kind)k) : NULL;
}

static const char *const scopes[] = {
    [SW_FLEET_SCOPE_SYSTEM] = "system", [SW_FLEET_SCOPE_USER] = "user"};
static const char *const sources[] = {
    [SW_FLEET_PAYLOAD_LOCAL] = "local", [SW_FLEET_PAYLOAD_HF] = "hf"};

#define T struct sw_fleet_runtime
static const struct fd runtime_fields[] = {
    ENUMF("kind", kind, runtime_name), ROW(FK_U64, shm_size),
    KEY("stop_grace", FK_MS, stop_grace_ms),
    TEXTS("devices", FK_STRS, devices, n_devices, FD_OMIT_EMPTY),
    TEXTS("args", FK_STRS, args, n_args, FD_OMIT_EMPTY)};
#undef T

static json_t *service_oom_score(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_service *sv = obj;
    return sv->oom_score_adjust.set ? chk(b, json_integer((json_int_t)sv->oom_score_adjust.v))
                                    : NULL;
}

#define T struct sw_fleet_service
static const struct fd service_fields[] = {
    ROW(FK_STR, name),
    ENUM("scope", scope, scopes),
    KEY("restart_sec", FK_MS, restart_sec_ms),
    KEY("stop_timeout", FK_MS, stop_timeout_ms),
    ROW(FK_U64, start_limit_burst),
    KEY("start_limit_interval", FK_MS, start_limit_interval_ms),
    FN("oom_score_adjust", service_oom_score),
    ROW(FK_STR, user),
    ROW(FK_U64, memory_max)};
#undef T

#define T struct sw_fleet_mount
static const struct fd mount_fields[] = {KEY("host", FK_CSTR, host_path),
                                         KEY("container", FK_CSTR, container_path),
                                         ROW(FK_FLAG, readonly)};
#undef T

#define T struct sw_fleet_payload
static const struct fd payload_fields[] = {
    ENUM("source", source, sources),
    ROW(FK_STR, path),
    ROW(FK_STR, repo),
    ROW(FK_STR, revision),
    TEXTS("files", FK_STRS, files, n_files, FD_OMIT_EMPTY),
    ROW(FK_U64, shards),
    ROW(FK_STR, gguf),
    ROW(FK_STR, mmproj),
    ROW(FK_STR, draft),
    ROW(FK_STR, quantization),
    TABLES("mounts", FK_LIST, mounts, n_mounts, mount_fields, FD_OMIT_EMPTY)};
#undef T

/* ---------------------------------------------------------------------------------------------
 * what an endpoint records: imports, measured facts, boots, known-bad rules
 */
static const char *const froms[] = {[SW_FLEET_FROM_ENVIRON] = "environment",
                                    [SW_FLEET_FROM_FILE] = "env_file",
                                    [SW_FLEET_FROM_DEFAULT] = "fleet_file"};

#define T struct sw_fleet_import
static const struct fd import_fields[] = {ROW(FK_CSTR, key), ROW(FK_CSTR, field),
                                          ROW(FK_CSTR, value), ENUM("from", from, froms),
                                          ROW(FK_AT, at)};
#undef T

#define T struct sw_fleet_fact
static const struct fd fact_fields[] = {
    KEY("value", FK_REAL, q.value), KEY("unit", FK_CSTR, q.unit),
    KEY("text", FK_CSTR, q.text),   ROW(FK_CSTR, date),
    ROW(FK_CSTR, source),           ROW(FK_REF, device)};
#undef T

#define T struct sw_fleet_boot
static const struct fd boot_fields[] = {
    ROW(FK_SHAPE, shape), ROW(FK_BOOL, mmproj),  ROW(FK_REF, device),   ROW(FK_U64, used),
    ROW(FK_U64, total),   ROW(FK_U64, free),     ROW(FK_CSTR, outcome), ROW(FK_CSTR, failure),
    ROW(FK_CSTR, text),   ROW(FK_JSON, printed), ROW(FK_CSTR, date),    ROW(FK_CSTR, note)};
#undef T

static json_t *rule_when_fn(struct jb *b, const void *obj, const struct view *v)
{
    return rule_when(b, obj);
}

#define T struct sw_fleet_rule
static const struct fd rule_fields[] = {FN("when", rule_when_fn), ROW(FK_CSTR, failure),
                                        ROW(FK_CSTR, text),       ROW(FK_CSTR, date),
                                        ROW(FK_CSTR, note),       ROW(FK_AT, at)};
#undef T

#define T struct sw_fleet_band
static const struct fd band_fields[] = {ROW(FK_U64, min), ROW(FK_U64, max)};
#undef T

#define T struct sw_fleet_endpoint
static const struct fd listen_fields[] = {KEY("address", FK_STR, listen_address),
                                          KEY("port", FK_U64, listen_port),
                                          KEY("route", FK_STR, listen_route)};
#undef T

/* ---------------------------------------------------------------------------------------------
 * an endpoint: what is not one member of it
 */
#define EP(obj) ((const struct sw_fleet_endpoint *)(obj))

static json_t *ep_devices(struct jb *b, const void *obj, const struct view *v)
{
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < EP(obj)->n_devices; i++)
        push(b, a, chk(b, json_string(EP(obj)->devices[i]->name)));
    return a;
}

static json_t *ep_image_pinned(struct jb *b, const void *obj, const struct view *v)
{
    return EP(obj)->image.v ? chk(b, json_boolean(EP(obj)->image_pinned)) : NULL;
}

/* listen: only when the file gave one of its keys */
static json_t *ep_listen(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->listen_address.v && !ep->listen_port.set && !ep->listen_route.v)
        return NULL;
    return FIELDS_JSON(b, listen_fields, ep, v);
}

/* an env value: a literal, or a secret by reference */
static json_t *env_value(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_envvar *ev = obj;
    return ev->secret.kind ? secret_json(b, &ev->secret) : chk(b, json_string(ev->value));
}

#define T struct sw_fleet_endpoint
static const struct fd imports_field =
    TABLES("imports", FK_LIST, imports, n_imports, import_fields, 0);
#undef T

/* env_file: the file imported from, and every mapped key with where its value came from */
static json_t *ep_env_file(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->env_file)
        return NULL;
    json_t *ef = chk(b, json_object());
    if (ep->env_file->path)
        put(b, ef, "path", chk(b, json_string(ep->env_file->path)));
    put(b, ef, "imports", many_json(b, &imports_field, ep, v));
    return ef;
}

static json_t *knob_fn(struct jb *b, const void *obj, const struct view *v)
{
    return knob_json(b, obj);
}

static json_t *ep_free_band(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_band *fb = &EP(obj)->free_band;
    return fb->min.set ? FIELDS_JSON(b, band_fields, fb, v) : NULL;
}

static json_t *ep_client_window(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(v->f, obj);
    return cw ? chk(b, u64_json(cw->v)) : NULL;
}

/* waive: [{gate, reason, until, rule?, line}] (the line the gates name when one is refused) */
static json_t *ep_waive(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_endpoint *ep = obj;
    if (!ep->n_waivers)
        return NULL;
    json_t *a = chk(b, json_array());
    for (size_t i = 0; i < ep->n_waivers; i++) {
        const struct sw_fleet_waiver *w = &ep->waivers[i];
        json_t *o = chk(b, json_pack("{s:s,s:s,s:s,s:i}", "gate", w->gate, "reason", w->reason,
                                     "until", w->until, "line", w->at.line));
        if (o && w->rule)
            put(b, o, "rule", chk(b, u64_json(w->rule)));
        push(b, a, o);
    }
    return a;
}

static json_t *ep_contract(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet_contract *k = &EP(obj)->contract;
    if (!k->full_length.set)
        return NULL;
    json_t *o = chk(b, json_object());
    put(b, o, "full_length", chk(b, u64_json(k->full_length.v)));
    return o;
}

#define T struct sw_fleet_endpoint
static const struct fd endpoint_fields[] = {
    ROW(FK_CSTR, name),
    ROW(FK_FLAG, enabled),
    ROW(FK_REF, host),
    FN("devices", ep_devices),
    ENUMF("engine", engine, engine_name),
    ROW(FK_STR, engine_version),
    ROW(FK_REF, profile),
    ROW(FK_STR, binary),
    ROW(FK_STR, image),
    FN("image_pinned", ep_image_pinned),
    OBJ("runtime", runtime, runtime_fields),
    OBJ("service", service, service_fields),
    FN("listen", ep_listen),
    ROW(FK_STR, alias),
    ROW(FK_U64, nodes),
    ROW(FK_SECRET, api_key),
    OBJ("payload", payload, payload_fields),
    ROW(FK_SHAPE, shape),
    TEXTS("args", FK_STRS, args, n_args, FD_OMIT_EMPTY),
    {.key = "env", ELEMS(FK_MAP, env, n_env), .flags = FD_OMIT_EMPTY, .fn = env_value},
    FN("env_file", ep_env_file),
    {.key = "knobs", ELEMS(FK_MAP, knobs, n_knobs), .flags = FD_OMIT_EMPTY, .fn = knob_fn},
    TEXTS("frozen", FK_NAMES, frozen, n_frozen, FD_OMIT_EMPTY),
    FN("free_band", ep_free_band),
    TABLES("measured", FK_MAP, facts, n_facts, fact_fields, FD_OMIT_EMPTY),
    TABLES("boots", FK_LIST, boots, n_boots, boot_fields, FD_OMIT_EMPTY),
    TABLES("known_bad", FK_LIST, known_bad, n_known_bad, rule_fields, FD_OMIT_EMPTY),
    FN("waive", ep_waive),
    FN("contract", ep_contract),
    ROW(FK_JSON, arch),
    ROW(FK_JSON, draft_arch),
    FN("client_context_window", ep_client_window),
    ROW(FK_STR, note)};
#undef T

/* ---------------------------------------------------------------------------------------------
 * the harness, and the fleet
 */
#define T struct sw_fleet_client
static const struct fd client_fields[] = {ROW(FK_U64, context_window)};
#undef T

#define T struct sw_fleet_harness
static const struct fd harness_fields[] = {
    ROW(FK_U64, context_window), ROW(FK_F64, compaction_ratio), ROW(FK_U64, summary_budget),
    ROW(FK_REF, compaction_endpoint),
    TABLES("endpoints", FK_MAP, clients, n_clients, client_fields, FD_OMIT_EMPTY | FD_KEY_REF)};
#undef T

static json_t *fleet_version(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    return chk(b, json_integer(f->version.set ? (json_int_t)f->version.v : 1));
}

static json_t *fleet_harness(struct jb *b, const void *obj, const struct view *v)
{
    const struct sw_fleet *f = obj;
    return f->harness.present ? FIELDS_JSON(b, harness_fields, &f->harness, v) : NULL;
}

/* warnings: "file:line:col: message" */
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

#define T struct sw_fleet
static const struct fd fleet_fields[] = {
    ROW(FK_CSTR, path),
    FN("version", fleet_version),
    TABLES("hosts", FK_LIST, hosts, n_hosts, host_fields, 0),
    TABLES("profiles", FK_LIST, profiles, n_profiles, profile_fields, 0),
    TABLES("endpoints", FK_LIST, endpoints, n_endpoints, endpoint_fields, 0),
    FN("harness", fleet_harness),
    FN("warnings", fleet_warnings)};
#undef T

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
