/*
 * Loading a fleet file: YAML tree -> typed fleet, in three passes.
 *   1. decode: every key of hosts, profiles, endpoints and harness against its schema; unknown
 *      keys (with a suggestion), wrong types and bad units are reported and decoding goes on, so
 *      one run shows every mistake;
 *   2. import: env files named by endpoints, under the operator's override rule (envimport.c);
 *   3. resolve and check: names to pointers (hosts, devices, profiles, endpoints) and the rules
 *      that need the whole endpoint (a setting that does not apply to its engine, ranks versus
 *      devices, a payload outside every container mount, knobs outside their range...).
 * Any error in any pass: everything is freed and nothing is returned.
 *
 * Not done here: anything about whether a shape fits (memory, gates) or how it is launched.
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Table-driven mappings.
 */
struct fdef;
typedef int (*dec_fn)(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct fdef *d);

struct fdef {
    const char *name;
    const char *aliases[3];
    dec_fn dec;
    struct sw__fleet_spec spec;
    size_t off;
};

static int dec_strf(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct fdef *d)
{
    return sw__fleet_dec_str(c, v, &d->spec, (struct sw_fleet_str *)((char *)obj + d->off));
}

static int dec_u64f(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct fdef *d)
{
    return sw__fleet_dec_u64(c, v, &d->spec, (struct sw_fleet_u64 *)((char *)obj + d->off));
}

static int dec_boolf(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct fdef *d)
{
    return sw__fleet_dec_bool(c, v, (struct sw_fleet_bool *)((char *)obj + d->off));
}

#define SPEC(ft_)                                                                                  \
    {                                                                                              \
        .ft = (ft_)                                                                                \
    }
#define SPECN(ft_, mn, mx)                                                                         \
    {                                                                                              \
        .ft = (ft_), .min = (mn), .max = (mx)                                                      \
    }
#define SPECC(ch)                                                                                  \
    {                                                                                              \
        .ft = SW__FT_CHOICE, .choices = (ch)                                                       \
    }

static int dec_map(struct sw__fleet_ctx *c, const struct sw__fleet_node *n, void *obj,
                   const struct fdef *defs, size_t nd, const char *what)
{
    int rc = 0;
    if (!sw__fleet_want_map(c, n))
        return SW_EPARSE;
    sw__fleet_record(c, n);
    const struct sw__fleet_node *seen[64] = {0};
    for (size_t i = 0; i < n->n && !c->oom; i++) {
        const struct sw__fleet_node *k = n->kids[2 * i], *v = n->kids[2 * i + 1];
        size_t hit = nd;
        for (size_t j = 0; j < nd && hit == nd; j++) {
            if (!strcmp(defs[j].name, k->text))
                hit = j;
            for (size_t a = 0; a < 3 && defs[j].aliases[a] && hit == nd; a++)
                if (!strcmp(defs[j].aliases[a], k->text))
                    hit = j;
        }
        if (hit == nd || strlen(k->text) != k->len) {
            const char *known[64];
            size_t nk = 0;
            for (size_t j = 0; j < nd && nk < SW_ARRAY_LEN(known); j++)
                known[nk++] = defs[j].name;
            rc = sw__fleet_unknown_key(c, k, what, known, nk);
            continue;
        }
        if (hit < SW_ARRAY_LEN(seen) && seen[hit]) {
            struct sw_fleet_at at = sw__fleet_at(k);
            rc = sw__fleet_err(c, &at, "%s: '%s' sets %s again (already set at line %d)",
                               c->plen ? c->path : "the top level", k->text, defs[hit].name,
                               seen[hit]->line);
            continue;
        }
        if (hit < SW_ARRAY_LEN(seen))
            seen[hit] = k;
        size_t saved = sw__fleet_path_push(c, defs[hit].name);
        int r = defs[hit].dec(c, v, obj, &defs[hit]);
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

/* A `name: {...}` mapping of named objects: validates each name. */
static bool check_name(struct sw__fleet_ctx *c, const struct sw__fleet_node *k, const char *what)
{
    const char *t = k->text;
    size_t n = strlen(t);
    bool ok = n == k->len && n > 0 && n <= 64 && isalnum((unsigned char)t[0]);
    for (size_t i = 1; ok && i < n; i++)
        ok = isalnum((unsigned char)t[i]) || t[i] == '_' || t[i] == '-';
    if (!ok) {
        struct sw_fleet_at at = sw__fleet_at(k);
        sw__fleet_err(c, &at,
                      "%s name '%s' is not a name: use letters, digits, '-' and '_' (at most 64, "
                      "starting with a letter or digit)",
                      what, t);
    }
    return ok;
}

static bool is_env_name(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static bool is_date(const char *s)
{
    /* YYYY-MM-DD, optionally followed by a time or a note */
    for (int i = 0; i < 10; i++) {
        if (i == 4 || i == 7) {
            if (s[i] != '-')
                return false;
        } else if (!isdigit((unsigned char)s[i])) {
            return false;
        }
    }
    int m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
    return m >= 1 && m <= 12 && d >= 1 && d <= 31 && (!s[10] || s[10] == ' ' || s[10] == 'T');
}

static int dec_date(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, const char **out)
{
    struct sw_fleet_str s = {0};
    struct sw__fleet_spec sp = SPEC(SW__FT_STR);
    int rc = sw__fleet_dec_str(c, v, &sp, &s);
    if (rc)
        return rc;
    if (s.v && !is_date(s.v))
        return sw__fleet_errp(c, v, "'%s' is not a date: write YYYY-MM-DD", s.v);
    *out = s.v;
    return 0;
}

static int dec_text(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, const char **out)
{
    struct sw_fleet_str s = {0};
    struct sw__fleet_spec sp = SPEC(SW__FT_STR);
    int rc = sw__fleet_dec_str(c, v, &sp, &s);
    *out = s.v;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Secrets.
 */
static bool looks_secret_name(const char *name)
{
    static const char *const words[] = {"TOKEN",      "SECRET", "PASSWORD",   "PASSWD",
                                        "API_KEY",    "APIKEY", "CREDENTIAL", "PRIVATE_KEY",
                                        "ACCESS_KEY", "AUTH"};
    char up[128];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(up); i++)
        up[i] = name[i] == '-' ? '_' : (char)toupper((unsigned char)name[i]);
    up[i] = '\0';
    for (size_t k = 0; k < SW_ARRAY_LEN(words); k++)
        if (strstr(up, words[k]))
            return true;
    return false;
}

/* Values that are secrets whatever they are called: Hugging Face, OpenAI-style, GitHub tokens,
 * bearer headers, PEM keys. */
static bool looks_secret_value(const char *v)
{
    size_t n = strlen(v);
    if ((!strncmp(v, "hf_", 3) && n >= 30) || (!strncmp(v, "sk-", 3) && n >= 20) ||
        (!strncmp(v, "ghp_", 4) && n >= 30) || (!strncmp(v, "github_pat_", 11) && n >= 30) ||
        !strncmp(v, "Bearer ", 7) || strstr(v, "-----BEGIN"))
        return true;
    return false;
}

static int dec_secret_ref(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                          struct sw_fleet_secret *out, const char *what)
{
    out->at = sw__fleet_at(v);
    sw__fleet_record(c, v);
    if (v->kind == SW__FLN_SCALAR) {
        if (sw__fleet_node_is_null(v))
            return 0;
        return sw__fleet_errp(c, v,
                              "is a literal %s: a secret must be given by reference, "
                              "{from_env: NAME} or {from_file: PATH}, never written in the fleet "
                              "file",
                              what);
    }
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    if (v->n != 1) {
        return sw__fleet_errp(c, v, "needs exactly one of from_env: NAME or from_file: PATH");
    }
    const struct sw__fleet_node *k = v->kids[0], *val = v->kids[1];
    size_t saved = sw__fleet_path_push(c, k->text);
    int rc = 0;
    struct sw_fleet_str s = {0};
    if (!strcmp(k->text, "from_env")) {
        struct sw__fleet_spec sp = SPEC(SW__FT_STR);
        rc = sw__fleet_dec_str(c, val, &sp, &s);
        if (!rc && s.v && !is_env_name(s.v))
            rc = sw__fleet_errp(c, val, "'%s' is not an environment variable name", s.v);
        if (!rc && s.v) {
            out->kind = SW_FLEET_SECRET_ENV;
            out->ref = s.v;
            out->at = s.at;
        }
    } else if (!strcmp(k->text, "from_file")) {
        struct sw__fleet_spec sp = SPEC(SW__FT_LPATH);
        rc = sw__fleet_dec_str(c, val, &sp, &s);
        if (!rc && s.v) {
            out->kind = SW_FLEET_SECRET_FILE;
            out->ref = s.v;
            out->at = s.at;
        }
    } else {
        sw__fleet_path_pop(c, saved);
        static const char *const known[] = {"from_env", "from_file"};
        return sw__fleet_unknown_key(c, k, what, known, 2);
    }
    sw__fleet_path_pop(c, saved);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Hosts and devices.
 */
static const char *const vendors[] = {"amd", "nvidia", "intel", "apple", "cpu", NULL};

static const struct fdef device_defs[] = {
    {"kind", {"model"}, dec_strf, SPEC(SW__FT_STR), offsetof(struct sw_fleet_device, kind)},
    {"vendor", {0}, dec_strf, SPECC(vendors), offsetof(struct sw_fleet_device, vendor)},
    {"index", {0}, dec_u64f, SPECN(SW__FT_COUNT, 0, 1023), offsetof(struct sw_fleet_device, index)},
    {"memory_total",
     {"memory", "vram"},
     dec_u64f,
     SPEC(SW__FT_BYTES_APPROX),
     offsetof(struct sw_fleet_device, memory_total)},
    {"memory_usable",
     {"usable"},
     dec_u64f,
     SPEC(SW__FT_BYTES_APPROX),
     offsetof(struct sw_fleet_device, memory_usable)},
    {"bandwidth", {0}, dec_u64f, SPEC(SW__FT_RATE), offsetof(struct sw_fleet_device, bandwidth)},
    {"unified_memory",
     {"unified"},
     dec_boolf,
     SPEC(SW__FT_BOOL),
     offsetof(struct sw_fleet_device, unified_memory)},
    {"note", {0}, dec_strf, SPEC(SW__FT_STR), offsetof(struct sw_fleet_device, note)},
};

static int dec_devices(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct fdef *d)
{
    struct sw_fleet_host *h = obj;
    (void)d;
    sw__fleet_record(c, v);
    if (sw__fleet_node_is_null(v))
        return 0;
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    h->devices = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*h->devices));
    if (!h->devices)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *dv = v->kids[2 * i + 1];
        if (!check_name(c, k, "device")) {
            rc = SW_EPARSE;
            continue;
        }
        struct sw_fleet_device *dev = &h->devices[h->n_devices++];
        dev->name = sw__fleet_strdup(c->a, k->text);
        if (!dev->name)
            return sw__fleet_nomem(c);
        dev->at = sw__fleet_at(k);
        dev->host = h;
        size_t saved = sw__fleet_path_push(c, k->text);
        int r = dec_map(c, dv, dev, device_defs, SW_ARRAY_LEN(device_defs), "device");
        if (!r && dev->memory_total.set && dev->memory_usable.set &&
            dev->memory_usable.v > dev->memory_total.v) {
            struct sw_fleet_at at = dev->memory_usable.at;
            r = sw__fleet_err(
                c, &at, "%s.memory_usable (%llu B) is more than memory_total (%llu B)", c->path,
                (unsigned long long)dev->memory_usable.v, (unsigned long long)dev->memory_total.v);
        }
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static const char *const transports[] = {"local", "ssh", NULL};

struct transport_dec {
    struct sw_fleet_str kind, address, user, identity_file, known_hosts;
    struct sw_fleet_u64 port;
};

static int dec_transport(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct fdef *d)
{
    struct sw_fleet_host *h = obj;
    (void)d;
    struct sw__fleet_spec sp = SPECC(transports);
    struct transport_dec t;
    memset(&t, 0, sizeof(t));
    h->transport_at = sw__fleet_at(v);
    int rc;
    if (v->kind == SW__FLN_SCALAR) {
        rc = sw__fleet_dec_str(c, v, &sp, &t.kind);
        if (rc)
            return rc;
        if (!t.kind.v)
            return sw__fleet_errp(c, v, "must be local or ssh");
        if (!strcmp(t.kind.v, "ssh"))
            return sw__fleet_errp(c, v, "ssh needs an address: write {kind: ssh, address: HOST}");
        h->transport = SW_FLEET_LOCAL;
        return 0;
    }
    static const struct fdef defs[] = {
        {"kind", {"type"}, dec_strf, SPECC(transports), offsetof(struct transport_dec, kind)},
        {"address",
         {"hostname", "host"},
         dec_strf,
         SPEC(SW__FT_STR),
         offsetof(struct transport_dec, address)},
        {"port", {0}, dec_u64f, SPEC(SW__FT_PORT), offsetof(struct transport_dec, port)},
        {"user", {0}, dec_strf, SPEC(SW__FT_NAME), offsetof(struct transport_dec, user)},
        {"identity_file",
         {"identity", "key_file"},
         dec_strf,
         SPEC(SW__FT_LPATH),
         offsetof(struct transport_dec, identity_file)},
        {"known_hosts",
         {0},
         dec_strf,
         SPEC(SW__FT_LPATH),
         offsetof(struct transport_dec, known_hosts)},
    };
    rc = dec_map(c, v, &t, defs, SW_ARRAY_LEN(defs), "transport");
    if (rc)
        return rc;
    if (!t.kind.v)
        return sw__fleet_errp(c, v, "needs kind: local or ssh");
    h->transport = !strcmp(t.kind.v, "ssh") ? SW_FLEET_SSH : SW_FLEET_LOCAL;
    h->address = t.address;
    h->port = t.port;
    h->user = t.user;
    h->identity_file = t.identity_file;
    h->known_hosts = t.known_hosts;
    if (h->transport == SW_FLEET_SSH && !h->address.v)
        return sw__fleet_errp(c, v, "kind ssh needs an address");
    if (h->transport == SW_FLEET_LOCAL &&
        (h->address.v || h->port.set || h->user.v || h->identity_file.v || h->known_hosts.v))
        return sw__fleet_errp(c, v, "kind local takes no address, port, user or ssh files");
    return 0;
}

static const struct fdef host_defs[] = {
    {"transport", {0}, dec_transport, SPEC(0), 0},
    {"devices", {0}, dec_devices, SPEC(0), 0},
    {"note", {0}, dec_strf, SPEC(SW__FT_STR), offsetof(struct sw_fleet_host, note)},
};

static int dec_hosts(struct sw__fleet_ctx *c, const struct sw__fleet_node *v)
{
    struct sw_fleet *f = c->f;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    f->hosts = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*f->hosts));
    if (!f->hosts)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *hv = v->kids[2 * i + 1];
        if (!check_name(c, k, "host")) {
            rc = SW_EPARSE;
            continue;
        }
        struct sw_fleet_host *h = &f->hosts[f->n_hosts++];
        h->name = sw__fleet_strdup(c->a, k->text);
        if (!h->name)
            return sw__fleet_nomem(c);
        h->at = sw__fleet_at(k);
        size_t saved = sw__fleet_path_push(c, k->text);
        int r = dec_map(c, hv, h, host_defs, SW_ARRAY_LEN(host_defs), "host");
        if (!r && !h->transport) {
            struct sw_fleet_at at = sw__fleet_at(hv);
            r = sw__fleet_err(c, &at, "%s needs a transport: local, or {kind: ssh, address: ...}",
                              c->path);
        }
        /* device indexes: default to position; explicit ones must not collide */
        for (size_t a = 0; a < h->n_devices; a++) {
            if (!h->devices[a].index.set)
                continue;
            for (size_t b = a + 1; b < h->n_devices; b++) {
                const char *va = h->devices[a].vendor.v, *vb = h->devices[b].vendor.v;
                bool same_vendor = (!va && !vb) || (va && vb && !strcmp(va, vb));
                if (same_vendor && h->devices[b].index.set &&
                    h->devices[b].index.v == h->devices[a].index.v) {
                    struct sw_fleet_at at = h->devices[b].index.at;
                    r = sw__fleet_err(
                        c, &at, "%s.devices.%s.index %llu is already device %s's index", c->path,
                        h->devices[b].name, (unsigned long long)h->devices[b].index.v,
                        h->devices[a].name);
                }
            }
        }
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

/* ---------------------------------------------------------------------------------------------
 * Engine profiles.
 */
static const char *const engine_names[] = {"llama.cpp",    "vllm",     "sglang",
                                           "llama-server", "llamacpp", NULL};

static enum sw_fleet_engine engine_of(const char *s)
{
    if (!s)
        return SW_FLEET_ENGINE_NONE;
    if (!strcmp(s, "vllm"))
        return SW_FLEET_VLLM;
    if (!strcmp(s, "sglang"))
        return SW_FLEET_SGLANG;
    return SW_FLEET_LLAMACPP;
}

const char *sw_fleet_engine_name(enum sw_fleet_engine e)
{
    switch (e) {
    case SW_FLEET_LLAMACPP:
        return "llama.cpp";
    case SW_FLEET_VLLM:
        return "vllm";
    case SW_FLEET_SGLANG:
        return "sglang";
    default:
        return "?";
    }
}

/* A quantity: "9190 B/token", or {value: ..., note: ...}. */
static int dec_qty(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, struct sw_fleet_qty *q)
{
    const char *t = sw__fleet_scalar(c, v);
    if (!t)
        return SW_EPARSE;
    sw__fleet_record(c, v);
    struct sw_err e;
    sw_err_clear(&e);
    char unit[160];
    if (sw_fleet_parse_qty(t, &q->value, unit, sizeof(unit), &e))
        return sw__fleet_errp(c, v, "%s", e.msg);
    q->unit = sw__fleet_strdup(c->a, unit);
    q->text = sw__fleet_strdup(c->a, t);
    if (!q->unit || !q->text)
        return sw__fleet_nomem(c);
    return 0;
}

static int dec_const(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                     struct sw_fleet_const *k)
{
    k->at = sw__fleet_at(v);
    if (v->kind == SW__FLN_SCALAR)
        return dec_qty(c, v, &k->q);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    sw__fleet_record(c, v);
    int rc = 0;
    bool have = false;
    for (size_t i = 0; i < v->n; i++) {
        const struct sw__fleet_node *key = v->kids[2 * i], *val = v->kids[2 * i + 1];
        size_t saved = sw__fleet_path_push(c, key->text);
        int r = 0;
        if (!strcmp(key->text, "value")) {
            r = dec_qty(c, val, &k->q);
            have = true;
            k->at = sw__fleet_at(val);
        } else if (!strcmp(key->text, "note") || !strcmp(key->text, "source")) {
            r = dec_text(c, val, &k->note);
        } else {
            sw__fleet_path_pop(c, saved);
            static const char *const known[] = {"value", "note", "source"};
            rc = sw__fleet_unknown_key(c, key, "constant", known, 3);
            continue;
        }
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    if (!rc && !have)
        return sw__fleet_errp(c, v, "needs a value");
    return rc;
}

static int dec_profiles(struct sw__fleet_ctx *c, const struct sw__fleet_node *v)
{
    struct sw_fleet *f = c->f;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    f->profiles = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*f->profiles));
    if (!f->profiles)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *pv = v->kids[2 * i + 1];
        if (!check_name(c, k, "profile")) {
            rc = SW_EPARSE;
            continue;
        }
        struct sw_fleet_profile *p = &f->profiles[f->n_profiles++];
        p->name = sw__fleet_strdup(c->a, k->text);
        if (!p->name)
            return sw__fleet_nomem(c);
        p->at = sw__fleet_at(k);
        size_t saved = sw__fleet_path_push(c, k->text);
        if (!sw__fleet_want_map(c, pv)) {
            sw__fleet_path_pop(c, saved);
            rc = SW_EPARSE;
            continue;
        }
        sw__fleet_record(c, pv);
        bool have_base = false;
        for (size_t j = 0; j < pv->n && !c->oom; j++) {
            const struct sw__fleet_node *key = pv->kids[2 * j], *val = pv->kids[2 * j + 1];
            size_t s2 = sw__fleet_path_push(c, key->text);
            int r = 0;
            if (!strcmp(key->text, "base")) {
                struct sw__fleet_spec sp = SPECC(engine_names);
                struct sw_fleet_str s = {0};
                r = sw__fleet_dec_str(c, val, &sp, &s);
                if (!r && s.v) {
                    p->base = engine_of(s.v);
                    have_base = true;
                }
            } else if (!strcmp(key->text, "note")) {
                struct sw__fleet_spec sp = SPEC(SW__FT_STR);
                r = sw__fleet_dec_str(c, val, &sp, &p->note);
            } else if (!strcmp(key->text, "terms")) {
                sw__fleet_record(c, val);
                if (val->kind != SW__FLN_MAP && val->kind != SW__FLN_SEQ) {
                    r = sw__fleet_errp(c, val, "must be a mapping or a list");
                } else {
                    struct sw_err e;
                    sw_err_clear(&e);
                    json_t *tj = sw__fleet_node_to_json(val, &e);
                    if (!tj)
                        r = e.code == SW_ENOMEM ? sw__fleet_nomem(c)
                                                : sw__fleet_err_from(c, val, &e);
                    else if (!sw__fleet_keep_json(c, tj))
                        p->terms = tj;
                }
            } else if (!strcmp(key->text, "constants")) {
                sw__fleet_record(c, val);
                if (!sw__fleet_want_map(c, val)) {
                    r = SW_EPARSE;
                } else {
                    p->consts = sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*p->consts));
                    if (!p->consts) {
                        r = sw__fleet_nomem(c);
                    } else {
                        for (size_t q = 0; q < val->n && !c->oom; q++) {
                            const struct sw__fleet_node *ck = val->kids[2 * q];
                            if (!check_name(c, ck, "constant")) {
                                r = SW_EPARSE;
                                continue;
                            }
                            struct sw_fleet_const *kc = &p->consts[p->n_consts++];
                            memset(kc, 0, sizeof(*kc));
                            kc->name = sw__fleet_strdup(c->a, ck->text);
                            if (!kc->name) {
                                r = sw__fleet_nomem(c);
                                break;
                            }
                            size_t s3 = sw__fleet_path_push(c, ck->text);
                            int r3 = dec_const(c, val->kids[2 * q + 1], kc);
                            sw__fleet_path_pop(c, s3);
                            if (r3)
                                r = r3;
                        }
                    }
                }
            } else {
                sw__fleet_path_pop(c, s2);
                static const char *const known[] = {"base", "constants", "terms", "note"};
                rc = sw__fleet_unknown_key(c, key, "profile", known, 4);
                continue;
            }
            sw__fleet_path_pop(c, s2);
            if (r)
                rc = r;
        }
        if (!have_base && !c->oom) {
            struct sw_fleet_at at = sw__fleet_at(pv);
            rc = sw__fleet_err(c, &at,
                               "%s needs base: the engine whose law it extends (llama.cpp, vllm "
                               "or sglang)",
                               c->path);
        }
        sw__fleet_path_pop(c, saved);
    }
    return c->oom ? SW_ENOMEM : rc;
}

/* ---------------------------------------------------------------------------------------------
 * Endpoints: everything that names another object is kept as text here and resolved later.
 */
struct ep_raw {
    struct sw_fleet_str host;
    struct sw_fleet_str *devices;
    size_t n_devices;
    bool devices_given;
    struct sw_fleet_str profile;
    struct sw_fleet_str engine;
    const struct sw__fleet_node *env_file;
    struct sw_fleet_str *fact_devices; /* per fact */
    struct sw_fleet_str *boot_devices; /* per boot */
    const char **knob_names_raw;
};

/* The loader's context: the shared decoding context plus what only this file needs. */
struct ctx_ext {
    struct sw__fleet_ctx c; /* first: a struct sw__fleet_ctx * is a struct ctx_ext * */
    struct ep_raw *raw;     /* parallel to f->endpoints */
};

static struct ep_raw *raw_of(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep)
{
    return &((struct ctx_ext *)c)->raw[ep - c->f->endpoints];
}

static int dec_namelist(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                        struct sw_fleet_str **out, size_t *n, enum sw__fleet_ft ft)
{
    sw__fleet_record(c, v);
    if (v->kind == SW__FLN_SCALAR && !sw__fleet_node_is_null(v)) {
        /* one name without brackets */
        *out = sw__fleet_alloc(c->a, sizeof(**out));
        if (!*out)
            return sw__fleet_nomem(c);
        struct sw__fleet_spec sp = SPEC(ft);
        int rc = sw__fleet_dec_str(c, v, &sp, &(*out)[0]);
        if (!rc && (*out)[0].v)
            *n = 1; /* counted only when it holds a name: later passes read every counted one */
        return rc;
    }
    if (sw__fleet_node_is_null(v))
        return 0;
    if (!sw__fleet_want_seq(c, v))
        return SW_EPARSE;
    *out = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(**out));
    if (!*out)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        size_t saved = sw__fleet_path_index(c, i);
        struct sw__fleet_spec sp = SPEC(ft);
        memset(&(*out)[*n], 0, sizeof((*out)[*n]));
        int r = sw__fleet_dec_str(c, v->kids[i], &sp, &(*out)[*n]);
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        if (!(*out)[*n].v) {
            size_t s2 = sw__fleet_path_index(c, i);
            rc = sw__fleet_errp(c, v->kids[i], "must not be null");
            sw__fleet_path_pop(c, s2);
            continue;
        }
        (*n)++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static int ep_host(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                   const struct fdef *d)
{
    struct sw__fleet_spec sp = SPEC(SW__FT_NAME);
    (void)d;
    return sw__fleet_dec_str(c, v, &sp, &raw_of(c, obj)->host);
}

static int ep_devices(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct fdef *d)
{
    struct ep_raw *r = raw_of(c, obj);
    (void)d;
    r->devices_given = true;
    return dec_namelist(c, v, &r->devices, &r->n_devices, SW__FT_NAME);
}

static int ep_engine(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    struct sw__fleet_spec sp = SPECC(engine_names);
    (void)d;
    struct ep_raw *r = raw_of(c, ep);
    int rc = sw__fleet_dec_str(c, v, &sp, &r->engine);
    if (!rc && r->engine.v) {
        ep->engine = engine_of(r->engine.v);
        ep->engine_at = r->engine.at;
    }
    return rc;
}

static int ep_profile(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct fdef *d)
{
    struct sw__fleet_spec sp = SPEC(SW__FT_NAME);
    (void)d;
    return sw__fleet_dec_str(c, v, &sp, &raw_of(c, obj)->profile);
}

static int ep_image(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    struct sw__fleet_spec sp = SPEC(SW__FT_STR);
    (void)d;
    int rc = sw__fleet_dec_str(c, v, &sp, &ep->image);
    if (rc || !ep->image.v)
        return rc;
    const char *t = ep->image.v;
    for (const char *p = t; *p; p++)
        if (isspace((unsigned char)*p) || (unsigned char)*p < 0x20)
            return sw__fleet_errp(c, v, "'%s' is not an image reference (no spaces)", t);
    const char *at = strstr(t, "@sha256:");
    if (at) {
        const char *hex = at + 8;
        size_t n = strlen(hex);
        bool ok = n == 64;
        for (size_t i = 0; ok && i < n; i++)
            ok = isxdigit((unsigned char)hex[i]) && !isupper((unsigned char)hex[i]);
        if (!ok)
            return sw__fleet_errp(c, v,
                                  "digest of '%s' must be sha256: and 64 lowercase hex digits", t);
        ep->image_pinned = true;
    }
    return 0;
}

static int ep_listen(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct fdef *d)
{
    static const struct fdef defs[] = {
        {"address",
         {"host"},
         dec_strf,
         SPEC(SW__FT_STR),
         offsetof(struct sw_fleet_endpoint, listen_address)},
        {"port", {0}, dec_u64f, SPEC(SW__FT_PORT), offsetof(struct sw_fleet_endpoint, listen_port)},
    };
    (void)d;
    if (v->kind == SW__FLN_SCALAR && !sw__fleet_node_is_null(v)) {
        /* "127.0.0.1:8080" */
        const char *t = sw__fleet_scalar(c, v);
        if (!t)
            return SW_EPARSE;
        const char *colon = strrchr(t, ':');
        if (!colon || colon == t || !colon[1])
            return sw__fleet_errp(c, v, "'%s' must be ADDRESS:PORT or {address, port}", t);
        struct sw_fleet_endpoint *ep = obj;
        sw__fleet_record(c, v);
        char *addr = sw__fleet_strndup(c->a, t, (size_t)(colon - t));
        if (!addr)
            return sw__fleet_nomem(c);
        struct sw_err e;
        sw_err_clear(&e);
        uint64_t port;
        if (sw_parse_count(colon + 1, &port, &e) || port < 1 || port > 65535)
            return sw__fleet_errp(c, v, "port in '%s' must be 1..65535", t);
        ep->listen_address.v = addr;
        ep->listen_address.at = sw__fleet_at(v);
        ep->listen_port.v = port;
        ep->listen_port.set = true;
        ep->listen_port.at = sw__fleet_at(v);
        size_t s = sw__fleet_path_push(c, "address");
        sw__fleet_record(c, v);
        sw__fleet_path_pop(c, s);
        s = sw__fleet_path_push(c, "port");
        sw__fleet_record(c, v);
        sw__fleet_path_pop(c, s);
        return 0;
    }
    return dec_map(c, v, obj, defs, SW_ARRAY_LEN(defs), "listen");
}

static int ep_api_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct fdef *d)
{
    (void)d;
    return dec_secret_ref(c, v, &((struct sw_fleet_endpoint *)obj)->api_key, "API key");
}

static int dec_mounts(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct fdef *d)
{
    struct sw_fleet_payload *p = obj;
    (void)d;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_seq(c, v))
        return SW_EPARSE;
    p->mounts = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*p->mounts));
    if (!p->mounts)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *m = v->kids[i];
        size_t saved = sw__fleet_path_index(c, i);
        struct sw_fleet_mount *mt = &p->mounts[p->n_mounts];
        memset(mt, 0, sizeof(*mt));
        mt->at = sw__fleet_at(m);
        sw__fleet_record(c, m);
        int r = 0;
        struct sw_fleet_str hp = {0}, cp = {0};
        struct sw_fleet_bool ro = {0};
        struct sw__fleet_spec sp = SPEC(SW__FT_PATH);
        if (m->kind == SW__FLN_SCALAR) {
            /* "HOST:CONTAINER[:ro]" as podman and docker spell it */
            const char *t = sw__fleet_scalar(c, m);
            if (!t) {
                r = SW_EPARSE;
            } else {
                const char *c1 = strchr(t, ':');
                const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c1 || (c2 && strcmp(c2, ":ro") && strcmp(c2, ":rw"))) {
                    r = sw__fleet_errp(c, m, "'%s' must be HOST_PATH:CONTAINER_PATH[:ro]", t);
                } else {
                    char *h = sw__fleet_strndup(c->a, t, (size_t)(c1 - t));
                    char *ct = sw__fleet_strndup(c->a, c1 + 1,
                                                 c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1));
                    if (!h || !ct)
                        return sw__fleet_nomem(c);
                    if ((h[0] != '/' && strncmp(h, "~/", 2)) || ct[0] != '/')
                        r = sw__fleet_errp(c, m, "'%s': both paths must be absolute", t);
                    hp.v = h;
                    cp.v = ct;
                    ro.v = c2 && !strcmp(c2, ":ro");
                }
            }
        } else if (m->kind == SW__FLN_MAP) {
            for (size_t j = 0; j < m->n; j++) {
                const struct sw__fleet_node *k = m->kids[2 * j], *val = m->kids[2 * j + 1];
                size_t s2 = sw__fleet_path_push(c, k->text);
                int r2 = 0;
                if (!strcmp(k->text, "host"))
                    r2 = sw__fleet_dec_str(c, val, &sp, &hp);
                else if (!strcmp(k->text, "container"))
                    r2 = sw__fleet_dec_str(c, val, &sp, &cp);
                else if (!strcmp(k->text, "readonly"))
                    r2 = sw__fleet_dec_bool(c, val, &ro);
                else {
                    sw__fleet_path_pop(c, s2);
                    static const char *const known[] = {"host", "container", "readonly"};
                    r = sw__fleet_unknown_key(c, k, "mount", known, 3);
                    continue;
                }
                sw__fleet_path_pop(c, s2);
                if (r2)
                    r = r2;
            }
            if (!r && cp.v && cp.v[0] == '~')
                r = sw__fleet_errp(c, m, "container path must be absolute");
            if (!r && (!hp.v || !cp.v))
                r = sw__fleet_errp(c, m, "needs host: and container: paths");
        } else {
            r = sw__fleet_errp(c, m, "must be HOST:CONTAINER or {host, container}");
        }
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        mt->host_path = hp.v;
        mt->container_path = cp.v;
        mt->readonly = ro.v;
        p->n_mounts++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static int dec_files(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct fdef *d)
{
    struct sw_fleet_payload *p = obj;
    (void)d;
    return dec_namelist(c, v, &p->files, &p->n_files, SW__FT_LPATH);
}

static int dec_repo(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct fdef *d)
{
    struct sw_fleet_str *out = (struct sw_fleet_str *)((char *)obj + d->off);
    int rc = sw__fleet_dec_str(c, v, &d->spec, out);
    if (rc || !out->v)
        return rc;
    /* The engine says "Repo id must be in the form namespace/repo_name" seven minutes into a
     * boot; say it now. */
    const char *t = out->v;
    const char *slash = strchr(t, '/');
    bool ok = slash && slash != t && slash[1] && !strchr(slash + 1, '/');
    for (const char *p = t; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '/' || *p == '-' || *p == '_' || *p == '.';
    if (!ok)
        return sw__fleet_errp(c, v,
                              "'%s' is not a Hugging Face repo id: it must be namespace/name (a "
                              "local directory goes under path:)",
                              t);
    return 0;
}

static const struct fdef payload_defs[] = {
    {"path",
     {"dir", "model"},
     dec_strf,
     SPEC(SW__FT_PATH),
     offsetof(struct sw_fleet_payload, path)},
    {"repo", {"hf_repo"}, dec_repo, SPEC(SW__FT_STR), offsetof(struct sw_fleet_payload, repo)},
    {"revision", {"rev"}, dec_strf, SPEC(SW__FT_WORD), offsetof(struct sw_fleet_payload, revision)},
    {"files", {"globs"}, dec_files, SPEC(0), 0},
    {"shards", {0}, dec_u64f, SPECN(SW__FT_COUNT, 1, 0), offsetof(struct sw_fleet_payload, shards)},
    {"gguf", {"gguf_file"}, dec_strf, SPEC(SW__FT_LPATH), offsetof(struct sw_fleet_payload, gguf)},
    {"mmproj",
     {"projector"},
     dec_strf,
     SPEC(SW__FT_LPATH),
     offsetof(struct sw_fleet_payload, mmproj)},
    {"draft",
     {"draft_model"},
     dec_strf,
     SPEC(SW__FT_LPATH),
     offsetof(struct sw_fleet_payload, draft)},
    {"quantization",
     {"quant", "dtype"},
     dec_strf,
     SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_payload, quantization)},
    {"mounts", {0}, dec_mounts, SPEC(0), 0},
};

static int ep_payload(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    int rc = dec_map(c, v, &ep->payload, payload_defs, SW_ARRAY_LEN(payload_defs), "payload");
    struct sw_fleet_payload *p = &ep->payload;
    p->source = p->path.v   ? SW_FLEET_PAYLOAD_LOCAL
                : p->repo.v ? SW_FLEET_PAYLOAD_HF
                            : SW_FLEET_PAYLOAD_NONE;
    return rc;
}

static int ep_shape(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct fdef *d)
{
    (void)d;
    return sw__fleet_dec_shape(c, v, &((struct sw_fleet_endpoint *)obj)->shape);
}

static int ep_args(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                   const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_seq(c, v))
        return SW_EPARSE;
    ep->args = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->args));
    if (!ep->args)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        size_t saved = sw__fleet_path_index(c, i);
        const struct sw__fleet_node *a = v->kids[i];
        struct sw_fleet_str *s = &ep->args[ep->n_args];
        memset(s, 0, sizeof(*s));
        int r = 0;
        /* an argument may be any scalar (a number, a JSON string); kept as written */
        const char *t = sw__fleet_scalar(c, a);
        if (!t) {
            r = SW_EPARSE;
        } else {
            s->v = sw__fleet_strdup(c->a, t);
            s->at = sw__fleet_at(a);
            sw__fleet_record(c, a);
            if (!s->v)
                return sw__fleet_nomem(c);
            /* A token on a command line is readable by every user of the host (ps, /proc). */
            const char *prev = ep->n_args ? ep->args[ep->n_args - 1].v : NULL;
            bool flag_secret = !strncmp(t, "--", 2) && looks_secret_name(t + 2) && strchr(t, '=') &&
                               strchr(t, '=')[1];
            bool after_secret_flag = prev && !strncmp(prev, "--", 2) && !strchr(prev, '=') &&
                                     looks_secret_name(prev + 2);
            if (looks_secret_value(t) || flag_secret || after_secret_flag)
                r = sw__fleet_errp(c, a,
                                   "puts a secret on the engine's command line, where every user "
                                   "of the host can read it: pass it by reference (api_key: "
                                   "{from_env: NAME}, or env: {NAME: {from_env: NAME}})");
        }
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_args++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static int ep_env(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                  const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    ep->env = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->env));
    if (!ep->env)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
        if (strlen(k->text) != k->len || !is_env_name(k->text)) {
            struct sw_fleet_at at = sw__fleet_at(k);
            rc = sw__fleet_err(c, &at, "%s: '%s' is not an environment variable name", c->path,
                               k->text);
            continue;
        }
        size_t saved = sw__fleet_path_push(c, k->text);
        struct sw_fleet_envvar *ev = &ep->env[ep->n_env];
        memset(ev, 0, sizeof(*ev));
        ev->name = sw__fleet_strdup(c->a, k->text);
        if (!ev->name)
            return sw__fleet_nomem(c);
        ev->at = sw__fleet_at(val);
        int r = 0;
        if (val->kind == SW__FLN_MAP) {
            r = dec_secret_ref(c, val, &ev->secret, "secret");
        } else {
            struct sw_fleet_str s = {0};
            struct sw__fleet_spec sp = SPEC(SW__FT_STR);
            if (val->kind == SW__FLN_SCALAR && val->len == 0 && !val->plain) {
                /* VAR: "" is a deliberate empty value */
                sw__fleet_record(c, val);
                s.v = "";
            } else {
                r = sw__fleet_dec_str(c, val, &sp, &s);
            }
            if (!r && !s.v)
                r = sw__fleet_errp(c, val, "needs a value (\"\" for an empty one)");
            if (!r && *s.v && (looks_secret_name(k->text) || looks_secret_value(s.v)))
                r = sw__fleet_errp(c, val,
                                   "is a literal secret: give it by reference, {from_env: %s} or "
                                   "{from_file: PATH}, never written in the fleet file",
                                   k->text);
            ev->value = s.v;
        }
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_env++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static int ep_env_file(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct fdef *d)
{
    (void)d;
    sw__fleet_record(c, v);
    raw_of(c, obj)->env_file = v; /* imported after the whole file is decoded */
    return 0;
}

/* Knob names: a shape field (canonical name returned), env.NAME or arg.--flag. */
static const char *knob_name(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                             const struct sw_fleet_field **field)
{
    const char *t = k->text;
    *field = NULL;
    if (strlen(t) != k->len)
        return NULL;
    if (!strncmp(t, "env.", 4) && is_env_name(t + 4))
        return t;
    if (!strncmp(t, "arg.--", 6) && t[6]) {
        for (const char *p = t + 6; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
                return NULL;
        return t;
    }
    *field = sw_fleet_shape_field(t);
    return *field ? (*field)->name : NULL;
}

static int unknown_knob(struct sw__fleet_ctx *c, const struct sw__fleet_node *k)
{
    size_t nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    const char *known[64];
    size_t nk = 0;
    for (size_t i = 0; i < nf && nk < SW_ARRAY_LEN(known); i++)
        known[nk++] = fs[i].name;
    const char *sug = sw__fleet_suggest(k->text, known, nk);
    struct sw_fleet_at at = sw__fleet_at(k);
    return sw__fleet_err(c, &at, "%s: '%s' is not a shape field, env.NAME or arg.--flag%s%s%s",
                         c->path, k->text, sug ? " (did you mean '" : "", sug ? sug : "",
                         sug ? "'?)" : "");
}

static struct sw__fleet_spec field_spec(const struct sw_fleet_field *f)
{
    if (f)
        return sw__fleet_shape_slot(f)->spec;
    struct sw__fleet_spec sp = SPEC(SW__FT_STR);
    return sp;
}

static int dec_knob(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                    struct sw_fleet_knob *kb, const struct sw_fleet_field *f)
{
    enum sw_fleet_vtype t = f ? f->type : SW_FLEET_V_STR;
    struct sw__fleet_spec sp = field_spec(f);
    kb->type = t;
    sw__fleet_record(c, v);
    int rc = 0;
    if (v->kind == SW__FLN_SEQ) {
        kb->values = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*kb->values));
        if (!kb->values)
            return sw__fleet_nomem(c);
        if (!v->n)
            return sw__fleet_errp(c, v, "lists no values");
        for (size_t i = 0; i < v->n && !c->oom; i++) {
            size_t saved = sw__fleet_path_index(c, i);
            int r = sw__fleet_dec_value(c, v->kids[i], t, &sp, &kb->values[kb->n_values]);
            sw__fleet_path_pop(c, saved);
            if (r)
                rc = r;
            else
                kb->n_values++;
        }
        return c->oom ? SW_ENOMEM : rc;
    }
    if (t == SW_FLEET_V_STR || t == SW_FLEET_V_BOOL) {
        if (v->kind == SW__FLN_MAP)
            return sw__fleet_errp(c, v, "is a %s setting: list its values, [a, b]",
                                  t == SW_FLEET_V_BOOL ? "true/false" : "named");
    }
    const struct sw__fleet_node *mn = NULL, *mx = NULL, *st = NULL;
    if (v->kind == SW__FLN_MAP) {
        for (size_t i = 0; i < v->n; i++) {
            const struct sw__fleet_node *k = v->kids[2 * i];
            if (!strcmp(k->text, "min"))
                mn = v->kids[2 * i + 1];
            else if (!strcmp(k->text, "max"))
                mx = v->kids[2 * i + 1];
            else if (!strcmp(k->text, "step"))
                st = v->kids[2 * i + 1];
            else {
                static const char *const known[] = {"min", "max", "step"};
                rc = sw__fleet_unknown_key(c, k, "knob", known, 3);
            }
        }
        if (rc)
            return rc;
        if (!mn || !mx)
            return sw__fleet_errp(c, v, "needs min: and max: (or a list of values)");
    } else if (v->kind == SW__FLN_SCALAR) {
        return sw__fleet_errp(c, v, "must be {min: A, max: B[, step: S]} or a list of values");
    }
    kb->is_range = true;
    size_t saved = sw__fleet_path_push(c, "min");
    int r1 = sw__fleet_dec_value(c, mn, t, &sp, &kb->min);
    sw__fleet_path_pop(c, saved);
    saved = sw__fleet_path_push(c, "max");
    int r2 = sw__fleet_dec_value(c, mx, t, &sp, &kb->max);
    sw__fleet_path_pop(c, saved);
    int r3 = 0;
    if (st) {
        saved = sw__fleet_path_push(c, "step");
        struct sw__fleet_spec ssp = sp;
        ssp.min = 1;
        ssp.max = 0;
        ssp.fmin = 0;
        ssp.fmin_open = true;
        r3 = sw__fleet_dec_value(c, st, t, &ssp, &kb->step);
        sw__fleet_path_pop(c, saved);
    }
    if (r1 || r2 || r3)
        return r1 ? r1 : r2 ? r2 : r3;
    bool bad = (t == SW_FLEET_V_REAL) ? kb->min.f > kb->max.f : kb->min.u > kb->max.u;
    if (bad)
        return sw__fleet_errp(c, v, "min is above max");
    return 0;
}

static int ep_knobs(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    ep->knobs = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->knobs));
    if (!ep->knobs)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i];
        const struct sw_fleet_field *f;
        const char *nm = knob_name(c, k, &f);
        if (!nm) {
            rc = unknown_knob(c, k);
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < ep->n_knobs && !dup; j++) {
            if (!strcmp(ep->knobs[j].name, nm)) {
                struct sw_fleet_at at = sw__fleet_at(k);
                rc = sw__fleet_err(c, &at, "%s: '%s' names knob %s again (already at line %d)",
                                   c->path, k->text, nm, ep->knobs[j].at.line);
                dup = true;
            }
        }
        if (dup)
            continue;
        struct sw_fleet_knob *kb = &ep->knobs[ep->n_knobs];
        memset(kb, 0, sizeof(*kb));
        kb->name = sw__fleet_strdup(c->a, nm);
        if (!kb->name)
            return sw__fleet_nomem(c);
        kb->at = sw__fleet_at(k);
        size_t saved = sw__fleet_path_push(c, nm);
        int r = dec_knob(c, v->kids[2 * i + 1], kb, f);
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_knobs++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static const char *const frozen_words[] = {"image",          "binary",  "engine",
                                           "engine_version", "profile", "payload",
                                           "quantization",   "alias",   NULL};

static int ep_frozen(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw_fleet_str *names = NULL;
    size_t n = 0;
    int rc = dec_namelist(c, v, &names, &n, SW__FT_LPATH);
    if (rc)
        return rc;
    ep->frozen = sw__fleet_allocn(c->a, n ? n : 1, sizeof(*ep->frozen));
    if (!ep->frozen)
        return sw__fleet_nomem(c);
    for (size_t i = 0; i < n; i++) {
        const char *t = names[i].v;
        const char *canon = NULL;
        for (size_t w = 0; frozen_words[w] && !canon; w++)
            if (!strcmp(frozen_words[w], t))
                canon = frozen_words[w];
        if (!canon &&
            ((!strncmp(t, "env.", 4) && is_env_name(t + 4)) || (!strncmp(t, "arg.--", 6) && t[6])))
            canon = t;
        if (!canon) {
            const struct sw_fleet_field *f = sw_fleet_shape_field(t);
            canon = f ? f->name : NULL;
        }
        if (!canon) {
            const char *known[80];
            size_t nk = 0;
            for (size_t w = 0; frozen_words[w]; w++)
                known[nk++] = frozen_words[w];
            size_t nf;
            const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
            for (size_t q = 0; q < nf && nk < SW_ARRAY_LEN(known); q++)
                known[nk++] = fs[q].name;
            const char *sug = sw__fleet_suggest(t, known, nk);
            rc = sw__fleet_err(c, &names[i].at,
                               "%s: '%s' is not something that can be frozen (a shape field, "
                               "image, binary, engine, profile, payload, quantization, alias, "
                               "env.NAME, arg.--flag)%s%s%s",
                               c->path, t, sug ? "; did you mean '" : "", sug ? sug : "",
                               sug ? "'?" : "");
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < ep->n_frozen && !dup; j++)
            dup = !strcmp(ep->frozen[j].name, canon);
        if (dup) {
            rc = sw__fleet_err(c, &names[i].at, "%s: '%s' is listed twice", c->path, t);
            continue;
        }
        ep->frozen[ep->n_frozen].name = canon;
        ep->frozen[ep->n_frozen].at = names[i].at;
        ep->n_frozen++;
    }
    return rc;
}

static int ep_free_band(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                        const struct fdef *d)
{
    struct sw_fleet_band *b = &((struct sw_fleet_endpoint *)obj)->free_band;
    (void)d;
    struct sw__fleet_spec sp = SPEC(SW__FT_BYTES_APPROX);
    b->at = sw__fleet_at(v);
    sw__fleet_record(c, v);
    int rc = 0;
    if (v->kind == SW__FLN_SCALAR) {
        /* "2GiB..3GiB" */
        const char *t = sw__fleet_scalar(c, v);
        if (!t)
            return SW_EPARSE;
        const char *dots = strstr(t, "..");
        if (!dots)
            return sw__fleet_errp(c, v, "'%s' must be MIN..MAX (like 2GiB..3GiB) or {min, max}", t);
        struct sw__fleet_node lo = *v, hi = *v;
        char *l = sw__fleet_strndup(c->a, t, (size_t)(dots - t));
        char *h = sw__fleet_strdup(c->a, dots + 2);
        if (!l || !h)
            return sw__fleet_nomem(c);
        lo.text = l;
        lo.len = strlen(l);
        lo.plain = false;
        hi.text = h;
        hi.len = strlen(h);
        hi.plain = false;
        size_t saved = sw__fleet_path_push(c, "min");
        rc = sw__fleet_dec_u64(c, &lo, &sp, &b->min);
        sw__fleet_path_pop(c, saved);
        saved = sw__fleet_path_push(c, "max");
        int r2 = sw__fleet_dec_u64(c, &hi, &sp, &b->max);
        sw__fleet_path_pop(c, saved);
        if (r2)
            rc = r2;
    } else {
        static const struct fdef defs[] = {
            {"min", {0}, dec_u64f, SPEC(SW__FT_BYTES_APPROX), offsetof(struct sw_fleet_band, min)},
            {"max", {0}, dec_u64f, SPEC(SW__FT_BYTES_APPROX), offsetof(struct sw_fleet_band, max)},
        };
        rc = dec_map(c, v, b, defs, SW_ARRAY_LEN(defs), "free_band");
    }
    if (rc)
        return rc;
    if (!b->min.set || !b->max.set)
        return sw__fleet_errp(c, v, "needs both min and max");
    if (b->min.v > b->max.v)
        return sw__fleet_errp(c, v, "min (%llu B) is above max (%llu B)",
                              (unsigned long long)b->min.v, (unsigned long long)b->max.v);
    return 0;
}

static int ep_measured(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct ep_raw *raw = raw_of(c, ep);
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    ep->facts = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->facts));
    raw->fact_devices = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*raw->fact_devices));
    if (!ep->facts || !raw->fact_devices)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *fv = v->kids[2 * i + 1];
        if (!check_name(c, k, "fact")) {
            rc = SW_EPARSE;
            continue;
        }
        struct sw_fleet_fact *fa = &ep->facts[ep->n_facts];
        memset(fa, 0, sizeof(*fa));
        memset(&raw->fact_devices[ep->n_facts], 0, sizeof(raw->fact_devices[0]));
        fa->name = sw__fleet_strdup(c->a, k->text);
        if (!fa->name)
            return sw__fleet_nomem(c);
        fa->at = sw__fleet_at(fv);
        size_t saved = sw__fleet_path_push(c, k->text);
        int r = 0;
        if (fv->kind == SW__FLN_SCALAR) {
            r = dec_qty(c, fv, &fa->q);
        } else if (sw__fleet_want_map(c, fv)) {
            sw__fleet_record(c, fv);
            bool have = false;
            for (size_t j = 0; j < fv->n && !c->oom; j++) {
                const struct sw__fleet_node *fk = fv->kids[2 * j], *val = fv->kids[2 * j + 1];
                size_t s2 = sw__fleet_path_push(c, fk->text);
                int r2 = 0;
                if (!strcmp(fk->text, "value")) {
                    r2 = dec_qty(c, val, &fa->q);
                    fa->at = sw__fleet_at(val);
                    have = true;
                } else if (!strcmp(fk->text, "date")) {
                    r2 = dec_date(c, val, &fa->date);
                } else if (!strcmp(fk->text, "source") || !strcmp(fk->text, "note")) {
                    if (fa->source) {
                        r2 = sw__fleet_errp(c, val, "source and note are the same field: use one");
                    } else {
                        r2 = dec_text(c, val, &fa->source);
                    }
                } else if (!strcmp(fk->text, "device")) {
                    struct sw__fleet_spec sp = SPEC(SW__FT_NAME);
                    r2 = sw__fleet_dec_str(c, val, &sp, &raw->fact_devices[ep->n_facts]);
                } else {
                    sw__fleet_path_pop(c, s2);
                    static const char *const known[] = {"value", "date", "source", "note",
                                                        "device"};
                    r = sw__fleet_unknown_key(c, fk, "fact", known, 5);
                    continue;
                }
                sw__fleet_path_pop(c, s2);
                if (r2)
                    r = r2;
            }
            if (!r && !have)
                r = sw__fleet_errp(c, fv, "needs a value");
        } else {
            r = SW_EPARSE;
        }
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_facts++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static const char *const outcomes[] = {"booted", "serving", "failed", "rejected", NULL};

static int ep_boots(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct ep_raw *raw = raw_of(c, ep);
    sw__fleet_record(c, v);
    if (!sw__fleet_want_seq(c, v))
        return SW_EPARSE;
    ep->boots = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->boots));
    raw->boot_devices = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*raw->boot_devices));
    if (!ep->boots || !raw->boot_devices)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *bv = v->kids[i];
        size_t saved = sw__fleet_path_index(c, i);
        struct sw_fleet_boot *b = &ep->boots[ep->n_boots];
        memset(b, 0, sizeof(*b));
        memset(&raw->boot_devices[ep->n_boots], 0, sizeof(raw->boot_devices[0]));
        b->at = sw__fleet_at(bv);
        int r = 0;
        if (!sw__fleet_want_map(c, bv)) {
            sw__fleet_path_pop(c, saved);
            rc = SW_EPARSE;
            continue;
        }
        sw__fleet_record(c, bv);
        for (size_t j = 0; j < bv->n && !c->oom; j++) {
            const struct sw__fleet_node *k = bv->kids[2 * j], *val = bv->kids[2 * j + 1];
            size_t s2 = sw__fleet_path_push(c, k->text);
            int r2 = 0;
            struct sw__fleet_spec bytes = SPEC(SW__FT_BYTES_APPROX);
            if (!strcmp(k->text, "shape")) {
                r2 = sw__fleet_dec_shape(c, val, &b->shape);
            } else if (!strcmp(k->text, "mmproj") || !strcmp(k->text, "projector")) {
                r2 = sw__fleet_dec_bool(c, val, &b->mmproj);
            } else if (!strcmp(k->text, "device")) {
                struct sw__fleet_spec sp = SPEC(SW__FT_NAME);
                r2 = sw__fleet_dec_str(c, val, &sp, &raw->boot_devices[ep->n_boots]);
            } else if (!strcmp(k->text, "used")) {
                r2 = sw__fleet_dec_u64(c, val, &bytes, &b->used);
            } else if (!strcmp(k->text, "total")) {
                r2 = sw__fleet_dec_u64(c, val, &bytes, &b->total);
            } else if (!strcmp(k->text, "free")) {
                r2 = sw__fleet_dec_u64(c, val, &bytes, &b->free);
            } else if (!strcmp(k->text, "outcome")) {
                struct sw__fleet_spec sp = SPECC(outcomes);
                struct sw_fleet_str s = {0};
                r2 = sw__fleet_dec_str(c, val, &sp, &s);
                b->outcome = s.v;
            } else if (!strcmp(k->text, "failure")) {
                struct sw__fleet_spec sp = SPEC(SW__FT_WORD);
                struct sw_fleet_str s = {0};
                r2 = sw__fleet_dec_str(c, val, &sp, &s);
                b->failure = s.v;
            } else if (!strcmp(k->text, "text")) {
                r2 = dec_text(c, val, &b->text);
            } else if (!strcmp(k->text, "date")) {
                r2 = dec_date(c, val, &b->date);
            } else if (!strcmp(k->text, "note")) {
                r2 = dec_text(c, val, &b->note);
            } else if (!strcmp(k->text, "printed")) {
                sw__fleet_record(c, val);
                if (val->kind != SW__FLN_MAP) {
                    r2 = sw__fleet_errp(c, val, "must be a mapping of what the engine printed");
                } else {
                    struct sw_err e;
                    sw_err_clear(&e);
                    json_t *pj = sw__fleet_node_to_json(val, &e);
                    if (!pj)
                        r2 = e.code == SW_ENOMEM ? sw__fleet_nomem(c)
                                                 : sw__fleet_err_from(c, val, &e);
                    else if (!sw__fleet_keep_json(c, pj))
                        b->printed = pj;
                }
            } else {
                sw__fleet_path_pop(c, s2);
                static const char *const known[] = {"shape", "mmproj", "device",  "used",
                                                    "total", "free",   "outcome", "failure",
                                                    "text",  "date",   "note",    "printed"};
                r = sw__fleet_unknown_key(c, k, "boot", known, SW_ARRAY_LEN(known));
                continue;
            }
            sw__fleet_path_pop(c, s2);
            if (r2)
                r = r2;
        }
        if (!r && !b->outcome)
            r = sw__fleet_errp(c, bv, "needs an outcome: booted, serving, failed or rejected");
        if (!r && b->used.set && b->total.set && b->used.v > b->total.v)
            r = sw__fleet_errp(c, bv, "used is more than total");
        if (!r && b->free.set && b->total.set && b->free.v > b->total.v)
            r = sw__fleet_errp(c, bv, "free is more than total");
        if (!r && b->failure && strcmp(b->outcome, "failed"))
            r = sw__fleet_errp(c, bv, "has a failure class but its outcome is %s", b->outcome);
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_boots++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

/* ---------------------------------------------------------------------------------------------
 * Known-bad rules: `when` is "seqs == 2 && kv_cache_dtype == bf16" or {seqs: 2, ...}.
 */
static int parse_op(const char **pp, enum sw_fleet_op *op)
{
    const char *p = *pp;
    static const struct {
        const char *s;
        enum sw_fleet_op op;
    } ops[] = {{"==", SW_FLEET_EQ}, {"!=", SW_FLEET_NE}, {"<=", SW_FLEET_LE}, {">=", SW_FLEET_GE},
               {"<", SW_FLEET_LT},  {">", SW_FLEET_GT},  {"=", SW_FLEET_EQ}};
    for (size_t i = 0; i < SW_ARRAY_LEN(ops); i++) {
        size_t l = strlen(ops[i].s);
        if (!strncmp(p, ops[i].s, l)) {
            *op = ops[i].op;
            *pp = p + l;
            return 0;
        }
    }
    return -1;
}

/* One condition from a field name and an operand node ("2", ">= 245760", [1, 2]). */
static int dec_cond(struct sw__fleet_ctx *c, const struct sw__fleet_node *at_node,
                    const char *fname, const struct sw__fleet_node *operand,
                    struct sw_fleet_cond *cd)
{
    cd->at = sw__fleet_at(at_node);
    cd->field = sw_fleet_shape_field(fname);
    if (!cd->field) {
        size_t nf;
        const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
        const char *known[64];
        size_t nk = 0;
        for (size_t i = 0; i < nf && nk < SW_ARRAY_LEN(known); i++)
            known[nk++] = fs[i].name;
        const char *sug = sw__fleet_suggest(fname, known, nk);
        return sw__fleet_err(c, &cd->at, "%s: '%s' is not a shape field%s%s%s", c->path, fname,
                             sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
    }
    struct sw__fleet_spec sp = sw__fleet_shape_slot(cd->field)->spec;
    if (operand->kind == SW__FLN_SEQ) {
        cd->op = SW_FLEET_IN;
        cd->in = sw__fleet_allocn(c->a, operand->n ? operand->n : 1, sizeof(*cd->in));
        if (!cd->in)
            return sw__fleet_nomem(c);
        int rc = 0;
        for (size_t i = 0; i < operand->n; i++) {
            int r =
                sw__fleet_dec_value(c, operand->kids[i], cd->field->type, &sp, &cd->in[cd->n_in]);
            if (r)
                rc = r;
            else
                cd->n_in++;
        }
        if (!rc && !cd->n_in)
            rc = sw__fleet_errp(c, operand, "lists no values");
        return rc;
    }
    const char *t = sw__fleet_scalar(c, operand);
    if (!t)
        return SW_EPARSE;
    const char *p = t;
    while (isspace((unsigned char)*p))
        p++;
    cd->op = SW_FLEET_EQ;
    /* ">= 245760" must be quoted in YAML (a plain '>' starts a folded block), so quoting does not
     * make the operator part of the value; no allowed value starts with = < > ! */
    if (parse_op(&p, &cd->op))
        p = t; /* a bare value means == */
    while (isspace((unsigned char)*p))
        p++;
    struct sw__fleet_node tmp = *operand;
    tmp.text = p;
    tmp.len = strlen(p);
    tmp.plain = false;
    if ((cd->field->type == SW_FLEET_V_STR || cd->field->type == SW_FLEET_V_BOOL) &&
        cd->op != SW_FLEET_EQ && cd->op != SW_FLEET_NE)
        return sw__fleet_errp(c, operand, "%s only compares with == or !=", cd->field->name);
    return sw__fleet_dec_value(c, &tmp, cd->field->type, &sp, &cd->v);
}

static int dec_when_expr(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                         struct sw_fleet_rule *r)
{
    const char *t = sw__fleet_scalar(c, v);
    if (!t)
        return SW_EPARSE;
    /* count the conjuncts first to size the array */
    size_t nconds = 1;
    for (const char *p = t; (p = strstr(p, "&&")); p += 2)
        nconds++;
    for (const char *p = t; (p = strstr(p, " and ")); p += 5)
        nconds++;
    r->conds = sw__fleet_allocn(c->a, nconds, sizeof(*r->conds));
    char *copy = sw__fleet_strdup(c->a, t);
    if (!r->conds || !copy)
        return sw__fleet_nomem(c);
    char *p = copy;
    int rc = 0;
    while (p && *p) {
        char *amp = strstr(p, "&&");
        char *andw = strstr(p, " and ");
        char *end = amp && (!andw || amp < andw) ? amp : andw;
        char *next = NULL;
        if (end) {
            next = end + (end == amp ? 2 : 5);
            *end = '\0';
        }
        while (isspace((unsigned char)*p))
            p++;
        /* field name */
        char *q = p;
        while (*q && (isalnum((unsigned char)*q) || *q == '_' || *q == '.'))
            q++;
        if (q == p) {
            return sw__fleet_errp(
                c, v, "'%s' is not a condition: write FIELD OP VALUE, joined with &&", t);
        }
        char fname[96];
        snprintf(fname, sizeof(fname), "%.*s", (int)(q - p), p);
        while (isspace((unsigned char)*q))
            q++;
        enum sw_fleet_op op;
        const char *opp = q;
        if (parse_op(&opp, &op))
            return sw__fleet_errp(c, v, "'%s': after %s comes an operator (== != < <= > >=)", t,
                                  fname);
        struct sw__fleet_node operand = *v;
        char *val = sw__fleet_printf(c->a, "%.*s%s", (int)(opp - q), q, opp);
        if (!val)
            return sw__fleet_nomem(c);
        operand.text = val;
        operand.len = strlen(val);
        operand.plain = true;
        /* trim trailing space */
        while (operand.len && isspace((unsigned char)val[operand.len - 1]))
            val[--operand.len] = '\0';
        int r2 = dec_cond(c, v, fname, &operand, &r->conds[r->n_conds]);
        if (r2)
            rc = r2;
        else
            r->n_conds++;
        p = next;
    }
    if (!rc && !r->n_conds)
        return sw__fleet_errp(c, v, "states no condition");
    return rc;
}

static int ep_known_bad(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                        const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_seq(c, v))
        return SW_EPARSE;
    ep->known_bad = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->known_bad));
    if (!ep->known_bad)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *rv = v->kids[i];
        size_t saved = sw__fleet_path_index(c, i);
        struct sw_fleet_rule *r = &ep->known_bad[ep->n_known_bad];
        memset(r, 0, sizeof(*r)); /* a failed item leaves its slot to the next one */
        r->at = sw__fleet_at(rv);
        int res = 0;
        bool have_when = false;
        if (!sw__fleet_want_map(c, rv)) {
            sw__fleet_path_pop(c, saved);
            rc = SW_EPARSE;
            continue;
        }
        sw__fleet_record(c, rv);
        for (size_t j = 0; j < rv->n && !c->oom; j++) {
            const struct sw__fleet_node *k = rv->kids[2 * j], *val = rv->kids[2 * j + 1];
            size_t s2 = sw__fleet_path_push(c, k->text);
            int r2 = 0;
            if (!strcmp(k->text, "when")) {
                have_when = true;
                sw__fleet_record(c, val);
                if (val->kind == SW__FLN_MAP) {
                    r->conds = sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*r->conds));
                    if (!r->conds)
                        return sw__fleet_nomem(c);
                    for (size_t q = 0; q < val->n; q++) {
                        const struct sw__fleet_node *fk = val->kids[2 * q];
                        size_t s3 = sw__fleet_path_push(c, fk->text);
                        int r3 =
                            dec_cond(c, fk, fk->text, val->kids[2 * q + 1], &r->conds[r->n_conds]);
                        sw__fleet_path_pop(c, s3);
                        if (r3)
                            r2 = r3;
                        else
                            r->n_conds++;
                    }
                    if (!r2 && !r->n_conds)
                        r2 = sw__fleet_errp(c, val, "states no condition");
                } else {
                    r2 = dec_when_expr(c, val, r);
                }
            } else if (!strcmp(k->text, "failure")) {
                struct sw__fleet_spec sp = SPEC(SW__FT_WORD);
                struct sw_fleet_str s = {0};
                r2 = sw__fleet_dec_str(c, val, &sp, &s);
                r->failure = s.v;
            } else if (!strcmp(k->text, "text")) {
                r2 = dec_text(c, val, &r->text);
            } else if (!strcmp(k->text, "date")) {
                r2 = dec_date(c, val, &r->date);
            } else if (!strcmp(k->text, "note")) {
                r2 = dec_text(c, val, &r->note);
            } else {
                sw__fleet_path_pop(c, s2);
                static const char *const known[] = {"when", "failure", "text", "date", "note"};
                res = sw__fleet_unknown_key(c, k, "known_bad rule", known, 5);
                continue;
            }
            sw__fleet_path_pop(c, s2);
            if (r2)
                res = r2;
        }
        if (!res && !have_when)
            res = sw__fleet_errp(c, rv, "needs when: the condition that fails");
        if (!res && !r->text && !r->note)
            res = sw__fleet_errp(c, rv,
                                 "needs text: (the failure that taught it) or note: (how it was "
                                 "learned), so the refusal can say why");
        sw__fleet_path_pop(c, saved);
        if (res) {
            rc = res;
            continue;
        }
        ep->n_known_bad++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static int ep_arch(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                   const struct fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    sw__fleet_record(c, v);
    ep->arch_at = sw__fleet_at(v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    struct sw_err e;
    sw_err_clear(&e);
    json_t *j = sw__fleet_node_to_json(v, &e);
    if (!j)
        return e.code == SW_ENOMEM ? sw__fleet_nomem(c) : sw__fleet_err_from(c, v, &e);
    int rc = sw__fleet_keep_json(c, j);
    if (!rc)
        ep->arch = j;
    return rc;
}

static int dec_enabled(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct fdef *d)
{
    struct sw_fleet_bool b = {0};
    (void)d;
    int rc = sw__fleet_dec_bool(c, v, &b);
    if (!rc && b.set)
        ((struct sw_fleet_endpoint *)obj)->enabled = b.v;
    return rc;
}

static const struct fdef endpoint_defs[] = {
    {"enabled", {0}, dec_enabled, SPEC(SW__FT_BOOL), 0},
    {"host", {0}, ep_host, SPEC(0), 0},
    {"devices", {0}, ep_devices, SPEC(0), 0},
    {"engine", {0}, ep_engine, SPEC(0), 0},
    {"engine_version",
     {0},
     dec_strf,
     SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_endpoint, engine_version)},
    {"profile", {"engine_profile"}, ep_profile, SPEC(0), 0},
    {"binary", {"bin"}, dec_strf, SPEC(SW__FT_PATH), offsetof(struct sw_fleet_endpoint, binary)},
    {"image", {"container_image"}, ep_image, SPEC(0), 0},
    {"listen", {0}, ep_listen, SPEC(0), 0},
    {"alias",
     {"served_model_name"},
     dec_strf,
     SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_endpoint, alias)},
    {"api_key", {0}, ep_api_key, SPEC(0), 0},
    {"payload", {0}, ep_payload, SPEC(0), 0},
    {"shape", {0}, ep_shape, SPEC(0), 0},
    {"args", {"extra_args"}, ep_args, SPEC(0), 0},
    {"env", {"environment"}, ep_env, SPEC(0), 0},
    {"env_file", {0}, ep_env_file, SPEC(0), 0},
    {"knobs", {"movable"}, ep_knobs, SPEC(0), 0},
    {"frozen", {0}, ep_frozen, SPEC(0), 0},
    {"free_band", {0}, ep_free_band, SPEC(0), 0},
    {"measured", {"facts"}, ep_measured, SPEC(0), 0},
    {"boots", {0}, ep_boots, SPEC(0), 0},
    {"known_bad", {0}, ep_known_bad, SPEC(0), 0},
    {"arch", {"architecture"}, ep_arch, SPEC(0), 0},
    {"note", {0}, dec_strf, SPEC(SW__FT_STR), offsetof(struct sw_fleet_endpoint, note)},
};

static int dec_endpoints(struct sw__fleet_ctx *c, const struct sw__fleet_node *v)
{
    struct sw_fleet *f = c->f;
    const struct fdef *defs = endpoint_defs;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    f->endpoints = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*f->endpoints));
    ((struct ctx_ext *)c)->raw = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(struct ep_raw));
    if (!f->endpoints || !((struct ctx_ext *)c)->raw)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *ev = v->kids[2 * i + 1];
        if (!check_name(c, k, "endpoint")) {
            rc = SW_EPARSE;
            continue;
        }
        struct sw_fleet_endpoint *ep = &f->endpoints[f->n_endpoints++];
        ep->name = sw__fleet_strdup(c->a, k->text);
        if (!ep->name)
            return sw__fleet_nomem(c);
        ep->at = sw__fleet_at(k);
        ep->enabled = true;
        size_t saved = sw__fleet_path_push(c, k->text);
        int r = dec_map(c, ev, ep, defs, SW_ARRAY_LEN(endpoint_defs), "endpoint");
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

/* ---------------------------------------------------------------------------------------------
 * Harness.
 */
struct harness_raw {
    struct sw_fleet_str compaction_endpoint;
    struct sw_fleet_str *client_names;
};

static int dec_harness(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                       struct harness_raw *hr)
{
    struct sw_fleet_harness *h = &c->f->harness;
    h->present = true;
    h->at = sw__fleet_at(v);
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *val = v->kids[2 * i + 1];
        const char *key = k->text;
        int r = 0;
        size_t saved;
        if (!strcmp(key, "context_window") || !strcmp(key, "contextWindow")) {
            struct sw__fleet_spec sp = SPECN(SW__FT_COUNT, 1, 0);
            saved = sw__fleet_path_push(c, "context_window");
            r = sw__fleet_dec_u64(c, val, &sp, &h->context_window);
        } else if (!strcmp(key, "compaction_ratio") || !strcmp(key, "compactionRatio")) {
            struct sw__fleet_spec sp = {.ft = SW__FT_REAL, .fmin = 0, .fmax = 1, .fmin_open = true};
            saved = sw__fleet_path_push(c, "compaction_ratio");
            r = sw__fleet_dec_f64(c, val, &sp, &h->compaction_ratio);
        } else if (!strcmp(key, "summary_budget") || !strcmp(key, "summaryBudget")) {
            struct sw__fleet_spec sp = SPECN(SW__FT_COUNT, 0, 0);
            saved = sw__fleet_path_push(c, "summary_budget");
            r = sw__fleet_dec_u64(c, val, &sp, &h->summary_budget);
        } else if (!strcmp(key, "compaction_endpoint") || !strcmp(key, "compaction")) {
            struct sw__fleet_spec sp = SPEC(SW__FT_NAME);
            saved = sw__fleet_path_push(c, "compaction_endpoint");
            r = sw__fleet_dec_str(c, val, &sp, &hr->compaction_endpoint);
            h->compaction_endpoint_at = sw__fleet_at(val);
        } else if (!strcmp(key, "endpoints")) {
            saved = sw__fleet_path_push(c, "endpoints");
            sw__fleet_record(c, val);
            if (!sw__fleet_want_map(c, val)) {
                r = SW_EPARSE;
            } else {
                h->clients = sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*h->clients));
                hr->client_names =
                    sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*hr->client_names));
                if (!h->clients || !hr->client_names) {
                    sw__fleet_path_pop(c, saved);
                    return sw__fleet_nomem(c);
                }
                for (size_t j = 0; j < val->n && !c->oom; j++) {
                    const struct sw__fleet_node *ek = val->kids[2 * j], *evv = val->kids[2 * j + 1];
                    if (!check_name(c, ek, "endpoint")) {
                        r = SW_EPARSE;
                        continue;
                    }
                    struct sw_fleet_client *cl = &h->clients[h->n_clients];
                    struct sw_fleet_str *nm = &hr->client_names[h->n_clients];
                    memset(cl, 0, sizeof(*cl));
                    memset(nm, 0, sizeof(*nm));
                    nm->v = sw__fleet_strdup(c->a, ek->text);
                    if (!nm->v) {
                        sw__fleet_path_pop(c, saved);
                        return sw__fleet_nomem(c);
                    }
                    nm->at = sw__fleet_at(ek);
                    cl->at = sw__fleet_at(ek);
                    size_t s2 = sw__fleet_path_push(c, ek->text);
                    static const struct fdef cdefs[] = {
                        {"context_window",
                         {"contextWindow"},
                         dec_u64f,
                         SPECN(SW__FT_COUNT, 1, 0),
                         offsetof(struct sw_fleet_client, context_window)},
                    };
                    int r2 = dec_map(c, evv, cl, cdefs, 1, "harness endpoint");
                    sw__fleet_path_pop(c, s2);
                    if (r2) {
                        r = r2;
                        continue;
                    }
                    h->n_clients++;
                }
            }
        } else {
            static const char *const known[] = {"context_window", "compaction_ratio",
                                                "summary_budget", "compaction_endpoint",
                                                "endpoints"};
            rc = sw__fleet_unknown_key(c, k, "harness", known, 5);
            continue;
        }
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

/* ---------------------------------------------------------------------------------------------
 * Resolution and whole-endpoint checks.
 */

static int unknown_ref(struct sw__fleet_ctx *c, const struct sw_fleet_str *s, const char *kind,
                       const char *const *names, size_t n, const char *where)
{
    const char *sug = sw__fleet_suggest(s->v, names, n);
    return sw__fleet_err(c, &s->at, "%s: no %s named '%s'%s%s%s", where, kind, s->v,
                         sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
}

static const struct sw_fleet_device *find_device(struct sw__fleet_ctx *c,
                                                 const struct sw_fleet_host *h,
                                                 const struct sw_fleet_str *s, const char *where)
{
    for (size_t i = 0; i < h->n_devices; i++)
        if (!strcmp(h->devices[i].name, s->v))
            return &h->devices[i];
    const char *names[128];
    size_t n = 0;
    for (size_t i = 0; i < h->n_devices && n < SW_ARRAY_LEN(names); i++)
        names[n++] = h->devices[i].name;
    char kind[200];
    snprintf(kind, sizeof(kind), "device of host %s", h->name);
    unknown_ref(c, s, kind, names, n, where);
    return NULL;
}

static bool is_frozen_or_knob(const struct sw_fleet_endpoint *ep, const char *name)
{
    return sw_fleet_endpoint_frozen(ep, name) || sw_fleet_endpoint_knob(ep, name);
}

static int value_in_knob(const struct sw_fleet_knob *kb, const struct sw_fleet_value *v)
{
    if (kb->is_range) {
        if (kb->type == SW_FLEET_V_REAL)
            return v->f >= kb->min.f && v->f <= kb->max.f;
        if (v->u < kb->min.u || v->u > kb->max.u)
            return 0;
        if (kb->step.set && kb->step.u && (v->u - kb->min.u) % kb->step.u)
            return 0;
        return 1;
    }
    for (size_t i = 0; i < kb->n_values; i++) {
        const struct sw_fleet_value *w = &kb->values[i];
        switch (kb->type) {
        case SW_FLEET_V_COUNT:
        case SW_FLEET_V_BYTES:
            if (w->u == v->u)
                return 1;
            break;
        case SW_FLEET_V_REAL:
            if (w->f == v->f)
                return 1;
            break;
        case SW_FLEET_V_BOOL:
            if (w->b == v->b)
                return 1;
            break;
        case SW_FLEET_V_STR:
            if (w->s && v->s && !strcmp(w->s, v->s))
                return 1;
            break;
        }
    }
    return 0;
}

static void check_shape_engine(struct sw__fleet_ctx *c, const struct sw_fleet_shape *s,
                               enum sw_fleet_engine eng, const char *where)
{
    size_t nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    for (size_t i = 0; i < nf; i++) {
        struct sw_fleet_value v;
        sw_fleet_shape_get(s, fs[i].name, &v);
        if (!v.at.file || (fs[i].engines & SW_FLEET_ENG_BIT(eng)))
            continue;
        sw__fleet_err(c, &v.at, "%s.%s does not apply to %s%s%s%s", where, fs[i].name,
                      sw_fleet_engine_name(eng), fs[i].instead ? " (" : "",
                      fs[i].instead ? fs[i].instead : "", fs[i].instead ? ")" : "");
    }
}

static bool path_under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return !strncmp(p, dir, n) && (p[n] == '/' || p[n] == '\0');
}

static bool quantized_ggml(const char *t)
{
    return t && t[0] != 'f' && strcmp(t, "bf16");
}

static void check_endpoint(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                           struct ep_raw *raw)
{
    struct sw_fleet *f = c->f;
    char where[200];
    snprintf(where, sizeof(where), "endpoints.%s", ep->name);

    /* engine */
    if (!ep->engine) {
        if (!raw->engine.at.file) /* a bad engine value was reported where it was written */
            sw__fleet_err(c, &ep->at, "%s needs an engine: llama.cpp, vllm or sglang", where);
        return;
    }
    /* host */
    if (!raw->host.v) {
        sw__fleet_err(c, &ep->at, "%s needs a host: one of the names under hosts:", where);
    } else {
        const char *names[128];
        size_t n = 0;
        for (size_t i = 0; i < f->n_hosts; i++) {
            if (!strcmp(f->hosts[i].name, raw->host.v))
                ep->host = &f->hosts[i];
            if (n < SW_ARRAY_LEN(names))
                names[n++] = f->hosts[i].name;
        }
        ep->host_at = raw->host.at;
        if (!ep->host) {
            char w[240];
            snprintf(w, sizeof(w), "%s.host", where);
            unknown_ref(c, &raw->host, "host", names, n, w);
        }
    }
    /* devices */
    if (ep->host) {
        const struct sw_fleet_host *h = ep->host;
        size_t cap = raw->n_devices ? raw->n_devices : 1;
        ep->devices = sw__fleet_allocn(c->a, cap, sizeof(*ep->devices));
        ep->devices_at = sw__fleet_allocn(c->a, cap, sizeof(*ep->devices_at));
        if (!ep->devices || !ep->devices_at) {
            sw__fleet_nomem(c);
            return;
        }
        if (raw->devices_given) {
            char w[240];
            snprintf(w, sizeof(w), "%s.devices", where);
            for (size_t i = 0; i < raw->n_devices; i++) {
                const struct sw_fleet_device *d = find_device(c, h, &raw->devices[i], w);
                if (!d)
                    continue;
                bool dup = false;
                for (size_t j = 0; j < ep->n_devices && !dup; j++)
                    dup = ep->devices[j] == d;
                if (dup) {
                    sw__fleet_err(c, &raw->devices[i].at, "%s lists device %s twice", w, d->name);
                    continue;
                }
                ep->devices_at[ep->n_devices] = raw->devices[i].at;
                ep->devices[ep->n_devices++] = d;
            }
        } else if (h->n_devices == 1) {
            ep->devices[0] = &h->devices[0];
            ep->devices_at[0] = h->devices[0].at;
            ep->n_devices = 1;
        } else if (h->n_devices > 1) {
            sw__fleet_err(c, &ep->at,
                          "%s: host %s has %zu devices; say which this endpoint uses (devices: "
                          "[%s, ...])",
                          where, h->name, h->n_devices, h->devices[0].name);
        } else {
            sw__fleet_warn(c, &ep->at,
                           "%s: host %s declares no devices, so no memory budget can be planned",
                           where, h->name);
        }
    }
    /* profile */
    if (raw->profile.v) {
        const char *names[128];
        size_t n = 0;
        for (size_t i = 0; i < f->n_profiles; i++) {
            if (!strcmp(f->profiles[i].name, raw->profile.v))
                ep->profile = &f->profiles[i];
            if (n < SW_ARRAY_LEN(names))
                names[n++] = f->profiles[i].name;
        }
        ep->profile_at = raw->profile.at;
        if (!ep->profile) {
            char w[240];
            snprintf(w, sizeof(w), "%s.profile", where);
            unknown_ref(c, &raw->profile, "profile", names, n, w);
        } else if (ep->profile->base != ep->engine) {
            sw__fleet_err(c, &raw->profile.at,
                          "%s.profile: %s extends the %s law but the endpoint runs %s", where,
                          ep->profile->name, sw_fleet_engine_name(ep->profile->base),
                          sw_fleet_engine_name(ep->engine));
        }
    }
    /* shape */
    char sw_[240];
    snprintf(sw_, sizeof(sw_), "%s.shape", where);
    check_shape_engine(c, &ep->shape, ep->engine, sw_);
    const struct sw_fleet_shape *s = &ep->shape;
    if (ep->engine == SW_FLEET_LLAMACPP && s->flash_attn.v && !strcmp(s->flash_attn.v, "off") &&
        quantized_ggml(s->cache_type_v.v))
        sw__fleet_err(c, &s->cache_type_v.at,
                      "%s.cache_type_v %s needs flash attention, and flash_attn is off (line %d): "
                      "llama.cpp refuses a quantized V cache without it",
                      where, s->cache_type_v.v, s->flash_attn.at.line);
    if (s->batch_size.set && s->ubatch_size.set && s->ubatch_size.v > s->batch_size.v)
        sw__fleet_warn(c, &s->ubatch_size.at,
                       "%s.shape.ubatch_size %llu is above batch_size %llu: llama.cpp uses %llu",
                       where, (unsigned long long)s->ubatch_size.v,
                       (unsigned long long)s->batch_size.v, (unsigned long long)s->batch_size.v);
    if ((ep->engine == SW_FLEET_VLLM || ep->engine == SW_FLEET_SGLANG) && ep->n_devices) {
        uint64_t tp = s->tensor_parallel.set ? s->tensor_parallel.v : 1;
        uint64_t pp = s->pipeline_parallel.set ? s->pipeline_parallel.v : 1;
        if (tp * pp != ep->n_devices) {
            const struct sw_fleet_at *at = s->tensor_parallel.set     ? &s->tensor_parallel.at
                                           : s->pipeline_parallel.set ? &s->pipeline_parallel.at
                                                                      : &ep->devices_at[0];
            sw__fleet_err(c, at,
                          "%s: tensor_parallel %llu x pipeline_parallel %llu = %llu ranks, but the "
                          "endpoint uses %zu device%s (one rank per device)",
                          where, (unsigned long long)tp, (unsigned long long)pp,
                          (unsigned long long)(tp * pp), ep->n_devices,
                          ep->n_devices == 1 ? "" : "s");
        }
        if (s->decode_context_parallel.set && tp % s->decode_context_parallel.v)
            sw__fleet_err(c, &s->decode_context_parallel.at,
                          "%s.shape.decode_context_parallel %llu must divide tensor_parallel %llu "
                          "(DCP reuses the TP ranks)",
                          where, (unsigned long long)s->decode_context_parallel.v,
                          (unsigned long long)tp);
    }
    if (s->spec_tokens.set && s->spec_tokens.v > 0 && !s->spec_method.v)
        sw__fleet_err(c, &s->spec_tokens.at, "%s.shape.spec_decode.tokens needs a method", where);
    /* image */
    if (ep->image.v && !ep->image_pinned) {
        if (sw_fleet_endpoint_frozen(ep, "image"))
            sw__fleet_warn(c, &ep->image.at,
                           "%s.image is frozen but not pinned by digest (NAME@sha256:...): a tag "
                           "can move under a frozen setting",
                           where);
        else
            sw__fleet_warn(c, &ep->image.at,
                           "%s.image is not pinned by digest (NAME@sha256:...): a tag can move",
                           where);
    }
    /* payload */
    const struct sw_fleet_payload *p = &ep->payload;
    if (p->path.v && ep->image.v && p->n_mounts) {
        bool seen = false;
        for (size_t i = 0; i < p->n_mounts && !seen; i++)
            seen = path_under(p->path.v, p->mounts[i].host_path);
        if (!seen)
            sw__fleet_err(c, &p->path.at,
                          "%s.payload.path %s is on no mount's host side: the container would not "
                          "see it (serve would get a host path the container does not have)",
                          where, p->path.v);
    }
    if (p->n_mounts && !ep->image.v)
        sw__fleet_err(c, &p->mounts[0].at, "%s.payload.mounts: mounts need a container image",
                      where);
    if (p->revision.v && !p->repo.v)
        sw__fleet_err(c, &p->revision.at, "%s.payload.revision needs repo", where);
    if (p->gguf.v && ep->engine != SW_FLEET_LLAMACPP)
        sw__fleet_warn(c, &p->gguf.at, "%s.payload.gguf on %s: a GGUF is llama.cpp's format", where,
                       sw_fleet_engine_name(ep->engine));
    /* knobs and frozen */
    for (size_t i = 0; i < ep->n_knobs; i++) {
        const struct sw_fleet_knob *kb = &ep->knobs[i];
        const struct sw_fleet_field *fld = sw_fleet_shape_field(kb->name);
        if (!fld)
            continue;
        if (!(fld->engines & SW_FLEET_ENG_BIT(ep->engine))) {
            sw__fleet_err(c, &kb->at, "%s.knobs.%s does not apply to %s", where, kb->name,
                          sw_fleet_engine_name(ep->engine));
            continue;
        }
        if (sw_fleet_endpoint_frozen(ep, kb->name))
            sw__fleet_err(c, &kb->at, "%s.knobs.%s is also frozen (line %d): it cannot be both",
                          where, kb->name, sw_fleet_endpoint_frozen(ep, kb->name)->at.line);
        struct sw_fleet_value cur;
        sw_fleet_shape_get(s, kb->name, &cur);
        if (cur.set && !value_in_knob(kb, &cur))
            sw__fleet_err(c, &cur.at,
                          "%s.shape.%s is outside what its knob allows (line %d): the current "
                          "shape must be one the knob can reach",
                          where, kb->name, kb->at.line);
    }
    for (size_t i = 0; i < ep->n_frozen; i++) {
        const struct sw_fleet_field *fld = sw_fleet_shape_field(ep->frozen[i].name);
        if (fld && !(fld->engines & SW_FLEET_ENG_BIT(ep->engine)))
            sw__fleet_err(c, &ep->frozen[i].at, "%s.frozen: %s does not apply to %s", where,
                          fld->name, sw_fleet_engine_name(ep->engine));
    }
    (void)is_frozen_or_knob;
    /* known-bad rules must be able to match */
    for (size_t i = 0; i < ep->n_known_bad; i++) {
        const struct sw_fleet_rule *r = &ep->known_bad[i];
        for (size_t j = 0; j < r->n_conds; j++) {
            const struct sw_fleet_field *fld = r->conds[j].field;
            if (fld && !(fld->engines & SW_FLEET_ENG_BIT(ep->engine)))
                sw__fleet_err(c, &r->conds[j].at,
                              "%s.known_bad: %s does not apply to %s, so the rule could never "
                              "match",
                              where, fld->name, sw_fleet_engine_name(ep->engine));
        }
    }
    /* measured facts and boots: device names */
    char w2[240];
    for (size_t i = 0; i < ep->n_facts; i++) {
        if (!raw->fact_devices[i].v || !ep->host)
            continue;
        snprintf(w2, sizeof(w2), "%s.measured.%s.device", where, ep->facts[i].name);
        ep->facts[i].device = find_device(c, ep->host, &raw->fact_devices[i], w2);
    }
    for (size_t i = 0; i < ep->n_boots; i++) {
        snprintf(w2, sizeof(w2), "%s.boots (line %d).shape", where, ep->boots[i].at.line);
        check_shape_engine(c, &ep->boots[i].shape, ep->engine, w2);
        if (!raw->boot_devices[i].v || !ep->host)
            continue;
        snprintf(w2, sizeof(w2), "%s.boots (line %d).device", where, ep->boots[i].at.line);
        ep->boots[i].device = find_device(c, ep->host, &raw->boot_devices[i], w2);
    }
}

static void check_fleet(struct sw__fleet_ctx *c, struct harness_raw *hr)
{
    struct sw_fleet *f = c->f;
    /* listen ports per host */
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *a = &f->endpoints[i];
        if (!a->enabled || !a->host || !a->listen_port.set)
            continue;
        for (size_t j = i + 1; j < f->n_endpoints; j++) {
            const struct sw_fleet_endpoint *b = &f->endpoints[j];
            if (b->enabled && b->host == a->host && b->listen_port.set &&
                b->listen_port.v == a->listen_port.v)
                sw__fleet_err(c, &b->listen_port.at,
                              "endpoints.%s.listen.port %llu is already endpoint %s's port on host "
                              "%s",
                              b->name, (unsigned long long)b->listen_port.v, a->name,
                              a->host->name);
        }
    }
    /* harness references */
    const char *names[256];
    size_t n = 0;
    for (size_t i = 0; i < f->n_endpoints && n < SW_ARRAY_LEN(names); i++)
        names[n++] = f->endpoints[i].name;
    if (hr->compaction_endpoint.v) {
        f->harness.compaction_endpoint = sw_fleet_endpoint(f, hr->compaction_endpoint.v);
        if (!f->harness.compaction_endpoint)
            unknown_ref(c, &hr->compaction_endpoint, "endpoint", names, n,
                        "harness.compaction_endpoint");
    }
    for (size_t i = 0; i < f->harness.n_clients; i++) {
        f->harness.clients[i].endpoint = sw_fleet_endpoint(f, hr->client_names[i].v);
        if (!f->harness.clients[i].endpoint)
            unknown_ref(c, &hr->client_names[i], "endpoint", names, n, "harness.endpoints");
    }
    if (f->harness.present && f->harness.compaction_endpoint && !f->harness.compaction_ratio.set)
        sw__fleet_err(c, &f->harness.at,
                      "harness names a compaction endpoint but no compaction_ratio");
}

/* ---------------------------------------------------------------------------------------------
 * The load.
 */
static int cmp_pos(const void *a, const void *b)
{
    const struct sw__fleet_posent *x = a, *y = b;
    int r = strcmp(x->path, y->path);
    if (r)
        return r;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *sw_fleet_no_environ(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return NULL;
}

void sw_fleet_free(struct sw_fleet *f)
{
    if (!f)
        return;
    struct sw__fleet_priv *p = f->priv;
    if (p) {
        for (size_t i = 0; i < p->n_json; i++)
            json_decref(p->json[i]);
        sw_free(p->json);
        for (size_t i = 0; i < p->n_envfiles; i++)
            sw_fleet_envfile_free(p->envfiles[i]);
        sw_free(p->envfiles);
        sw_free(p->pos);
        sw_free(p->warn);
        sw__fleet_arena_free(&p->arena);
        sw_free(p);
    }
    sw_free(f);
}

static int load(const char *name, const char *text, size_t len, const struct sw_fleet_opts *opts,
                struct sw_fleet **out, struct sw_err *e)
{
    int rc = 0;
    *out = NULL;
    sw_err_clear(e);
    struct sw_fleet *f = sw_calloc(1, sizeof(*f));
    struct sw__fleet_priv *p = f ? sw_calloc(1, sizeof(*p)) : NULL;
    struct ctx_ext cx;
    memset(&cx, 0, sizeof(cx));
    struct sw__fleet_ctx *c = &cx.c;
    struct harness_raw hr;
    memset(&hr, 0, sizeof(hr));
    if (!f || !p) {
        sw_free(f);
        sw_free(p);
        return sw_err_at(e, SW_ENOMEM, name, 0, 0, "out of memory loading the fleet");
    }
    f->priv = p;
    /* a fleet's whole tree and values stay well under 64x its text */
    sw__fleet_arena_init(&p->arena, 64u * SW_FLEET_MAX_FILE + (1u << 20));
    c->f = f;
    c->p = p;
    c->a = &p->arena;
    c->opts = opts;
    c->max_errors = opts && opts->max_errors > 0 ? opts->max_errors : 50;
    c->first = e;
    c->file = sw__fleet_strdup(c->a, name);
    if (!c->file) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    f->path = c->file;
    const char *slash = strrchr(c->file, '/');
    c->dir = slash ? sw__fleet_strndup(c->a, c->file, (size_t)(slash - c->file + 1)) : "";
    if (!c->dir) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    if (len > SW_FLEET_MAX_FILE) {
        struct sw_fleet_at at = {.file = c->file};
        rc = sw__fleet_err(c, &at, "is larger than %u bytes: not a fleet file", SW_FLEET_MAX_FILE);
        goto out;
    }
    struct sw__fleet_node *root = NULL;
    struct sw_err ye;
    sw_err_clear(&ye);
    rc = sw__fleet_yaml_parse(c->a, c->file, text, len, &root, &ye);
    if (rc) {
        if (rc == SW_ENOMEM) {
            sw__fleet_nomem(c);
        } else {
            struct sw_fleet_at at = {.file = c->file, .line = ye.line, .col = ye.col};
            sw__fleet_err(c, &at, "%s", ye.msg);
        }
        goto out;
    }
    if (!root || sw__fleet_node_is_null(root)) {
        struct sw_fleet_at at = {.file = c->file, .line = 1, .col = 1};
        rc = sw__fleet_err(c, &at, "the fleet file is empty: it needs hosts: and endpoints:");
        goto out;
    }
    if (!sw__fleet_want_map(c, root)) {
        rc = SW_EPARSE;
        goto out;
    }
    /* pass 1: decode; hosts and profiles before endpoints whatever the order in the file */
    static const char *const top[] = {"version", "hosts", "profiles", "endpoints", "harness"};
    for (size_t i = 0; i < root->n && !c->oom; i++) {
        const struct sw__fleet_node *k = root->kids[2 * i];
        bool known = false;
        for (size_t t = 0; t < SW_ARRAY_LEN(top); t++)
            known |= !strcmp(top[t], k->text) && strlen(k->text) == k->len;
        /* "x-..." keys are a place for YAML anchors (docker-compose's convention): the key says
         * it is not for slipway, so ignoring it hides nothing */
        if (!known && strncmp(k->text, "x-", 2))
            sw__fleet_unknown_key(c, k, "fleet", top, SW_ARRAY_LEN(top));
    }
    for (size_t t = 0; t < SW_ARRAY_LEN(top) && !c->oom; t++) {
        const struct sw__fleet_node *v = sw__fleet_map_get(root, top[t]);
        if (!v)
            continue;
        size_t saved = sw__fleet_path_push(c, top[t]);
        if (t == 0) {
            struct sw__fleet_spec sp = SPECN(SW__FT_COUNT, 1, 1);
            sw__fleet_dec_u64(c, v, &sp, &f->version);
        } else if (t == 1) {
            dec_hosts(c, v);
        } else if (t == 2) {
            dec_profiles(c, v);
        } else if (t == 3) {
            dec_endpoints(c, v);
        } else {
            dec_harness(c, v, &hr);
        }
        sw__fleet_path_pop(c, saved);
    }
    if (!c->oom && !sw__fleet_map_get(root, "endpoints") && !sw__fleet_map_get(root, "hosts")) {
        struct sw_fleet_at at = sw__fleet_at(root);
        sw__fleet_err(c, &at, "the fleet file declares no hosts: and no endpoints:");
    }
    /* pass 2: env-file imports (their values replace the defaults written in the file) */
    for (size_t i = 0; i < f->n_endpoints && !c->oom; i++) {
        struct ep_raw *raw = &cx.raw[i];
        if (!raw->env_file)
            continue;
        char base[200];
        snprintf(base, sizeof(base), "endpoints.%s", f->endpoints[i].name);
        size_t saved = sw__fleet_path_push(c, base);
        sw__fleet_import_env(c, &f->endpoints[i], raw->env_file);
        sw__fleet_path_pop(c, saved);
    }
    /* pass 3: resolve and check */
    for (size_t i = 0; i < f->n_endpoints && !c->oom; i++)
        check_endpoint(c, &f->endpoints[i], &cx.raw[i]);
    if (!c->oom)
        check_fleet(c, &hr);

    if (c->nerr) {
        rc = c->first_code ? c->first_code : SW_EPARSE;
        if (c->nerr > 1 && e && rc != SW_ENOMEM) {
            char more[64];
            snprintf(more, sizeof(more), " (and %d more error%s)", c->nerr - 1,
                     c->nerr == 2 ? "" : "s");
            size_t ml = strlen(e->msg);
            if (ml + strlen(more) < sizeof(e->msg))
                memcpy(e->msg + ml, more, strlen(more) + 1);
        }
        goto out;
    }
    qsort(p->pos, p->n_pos, sizeof(*p->pos), cmp_pos);
    f->warnings = p->warn;
    f->n_warnings = p->n_warn;
    *out = f;
    return 0;
out:
    if (!rc)
        rc = SW_EPARSE;
    sw_fleet_free(f);
    return rc;
}

int sw_fleet_load_mem(const char *name, const char *text, size_t len,
                      const struct sw_fleet_opts *opts, struct sw_fleet **out, struct sw_err *e)
{
    if (!out)
        return sw_err_set(e, SW_EINVAL, "sw_fleet_load_mem: no output");
    return load(name ? name : "<fleet>", text ? text : "", text ? len : 0, opts, out, e);
}

int sw_fleet_load(const char *path, const struct sw_fleet_opts *opts, struct sw_fleet **out,
                  struct sw_err *e)
{
    if (!out)
        return sw_err_set(e, SW_EINVAL, "sw_fleet_load: no output");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = sw_read_file(path, SW_FLEET_MAX_FILE, &text, &len, e);
    if (rc) {
        if (opts && opts->on_error)
            opts->on_error(opts->on_error_ctx, e);
        return rc;
    }
    rc = load(path, text, len, opts, out, e);
    sw_free(text);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Import targets: the endpoint fields an env-file key may set, decoded exactly as the YAML value
 * would be (same types, units and checks).
 */
static const struct fdef *find_def(const struct fdef *defs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(defs[i].name, name))
            return &defs[i];
    return NULL;
}

static const struct fdef listen_defs[] = {
    {"address",
     {0},
     dec_strf,
     SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_endpoint, listen_address)},
    {"port", {0}, dec_u64f, SPEC(SW__FT_PORT), offsetof(struct sw_fleet_endpoint, listen_port)},
};

static const char *const scalar_payload[] = {"path", "repo",   "revision", "shards",
                                             "gguf", "mmproj", "draft",    "quantization"};
static const char *const scalar_endpoint[] = {"binary", "image", "alias", "engine_version"};

const char *sw__fleet_target_canon(const char *t, struct sw__fleet_arena *a)
{
    if (!strncmp(t, "shape.", 6)) {
        const struct sw_fleet_field *f = sw_fleet_shape_field(t + 6);
        return f ? sw__fleet_printf(a, "shape.%s", f->name) : NULL;
    }
    if (!strncmp(t, "payload.", 8)) {
        for (size_t i = 0; i < SW_ARRAY_LEN(scalar_payload); i++)
            if (!strcmp(t + 8, scalar_payload[i]))
                return t;
        return NULL;
    }
    if (!strcmp(t, "listen.port") || !strcmp(t, "listen.address"))
        return t;
    for (size_t i = 0; i < SW_ARRAY_LEN(scalar_endpoint); i++)
        if (!strcmp(t, scalar_endpoint[i]))
            return t;
    if (!strncmp(t, "env.", 4) && is_env_name(t + 4))
        return t;
    return NULL;
}

/* Every target spelled out, for suggestions. */
size_t sw__fleet_target_names(const char **out, size_t max)
{
    static char buf[64][48];
    size_t n = 0, nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    for (size_t i = 0; i < nf && n < max && n < SW_ARRAY_LEN(buf); i++) {
        snprintf(buf[n], sizeof(buf[n]), "shape.%s", fs[i].name);
        out[n] = buf[n];
        n++;
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(scalar_payload) && n < max && n < SW_ARRAY_LEN(buf); i++) {
        snprintf(buf[n], sizeof(buf[n]), "payload.%s", scalar_payload[i]);
        out[n] = buf[n];
        n++;
    }
    static const char *const rest[] = {"listen.port", "listen.address", "binary",
                                       "image",       "alias",          "engine_version"};
    for (size_t i = 0; i < SW_ARRAY_LEN(rest) && n < max; i++)
        out[n++] = rest[i];
    return n;
}

int sw__fleet_dec_target(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep, const char *target,
                         const struct sw__fleet_node *n)
{
    if (!strncmp(target, "shape.", 6)) {
        const struct sw_fleet_field *f = sw_fleet_shape_field(target + 6);
        return f ? sw__fleet_dec_shape_field(c, n, f, &ep->shape) : SW_EINVAL;
    }
    if (!strncmp(target, "payload.", 8)) {
        const struct fdef *d = find_def(payload_defs, SW_ARRAY_LEN(payload_defs), target + 8);
        if (!d)
            return SW_EINVAL;
        int rc = d->dec(c, n, &ep->payload, d);
        struct sw_fleet_payload *p = &ep->payload;
        p->source = p->path.v   ? SW_FLEET_PAYLOAD_LOCAL
                    : p->repo.v ? SW_FLEET_PAYLOAD_HF
                                : SW_FLEET_PAYLOAD_NONE;
        return rc;
    }
    if (!strncmp(target, "listen.", 7)) {
        const struct fdef *d = find_def(listen_defs, SW_ARRAY_LEN(listen_defs), target + 7);
        return d ? d->dec(c, n, ep, d) : SW_EINVAL;
    }
    if (!strncmp(target, "env.", 4)) {
        const char *name = target + 4;
        if (sw__fleet_node_is_null(n))
            return 0; /* opted out: the variable is not passed */
        const char *t = sw__fleet_scalar(c, n);
        if (!t)
            return SW_EPARSE;
        sw__fleet_record(c, n);
        if (looks_secret_name(name) || looks_secret_value(t))
            return sw__fleet_errp(c, n,
                                  "would copy a secret into the fleet: reference it instead, env: "
                                  "{%s: {from_env: %s}}",
                                  name, name);
        char *val = sw__fleet_strdup(c->a, t);
        if (!val)
            return sw__fleet_nomem(c);
        for (size_t i = 0; i < ep->n_env; i++) {
            if (!strcmp(ep->env[i].name, name)) {
                ep->env[i].value = val;
                memset(&ep->env[i].secret, 0, sizeof(ep->env[i].secret));
                ep->env[i].at = sw__fleet_at(n);
                return 0;
            }
        }
        struct sw_fleet_envvar *nv = sw__fleet_allocn(c->a, ep->n_env + 1, sizeof(*nv));
        char *nm = sw__fleet_strdup(c->a, name);
        if (!nv || !nm)
            return sw__fleet_nomem(c);
        if (ep->n_env)
            memcpy(nv, ep->env, ep->n_env * sizeof(*nv));
        nv[ep->n_env].name = nm;
        nv[ep->n_env].value = val;
        nv[ep->n_env].at = sw__fleet_at(n);
        ep->env = nv;
        ep->n_env++;
        return 0;
    }
    const struct fdef *d = find_def(endpoint_defs, SW_ARRAY_LEN(endpoint_defs), target);
    return d ? d->dec(c, n, ep, d) : SW_EINVAL;
}

/* Whether a target currently holds a value written in the fleet file (the default). */
bool sw__fleet_target_has_default(struct sw_fleet_endpoint *ep, const char *target,
                                  struct sw_fleet_at *at)
{
    if (!strncmp(target, "shape.", 6)) {
        struct sw_fleet_value v;
        if (sw_fleet_shape_get(&ep->shape, target + 6, &v))
            return false;
        *at = v.at;
        return v.set;
    }
    const struct sw_fleet_str *s = NULL;
    const struct sw_fleet_u64 *u = NULL;
    if (!strcmp(target, "payload.path"))
        s = &ep->payload.path;
    else if (!strcmp(target, "payload.repo"))
        s = &ep->payload.repo;
    else if (!strcmp(target, "payload.revision"))
        s = &ep->payload.revision;
    else if (!strcmp(target, "payload.gguf"))
        s = &ep->payload.gguf;
    else if (!strcmp(target, "payload.mmproj"))
        s = &ep->payload.mmproj;
    else if (!strcmp(target, "payload.draft"))
        s = &ep->payload.draft;
    else if (!strcmp(target, "payload.quantization"))
        s = &ep->payload.quantization;
    else if (!strcmp(target, "payload.shards"))
        u = &ep->payload.shards;
    else if (!strcmp(target, "listen.port"))
        u = &ep->listen_port;
    else if (!strcmp(target, "listen.address"))
        s = &ep->listen_address;
    else if (!strcmp(target, "binary"))
        s = &ep->binary;
    else if (!strcmp(target, "image"))
        s = &ep->image;
    else if (!strcmp(target, "alias"))
        s = &ep->alias;
    else if (!strcmp(target, "engine_version"))
        s = &ep->engine_version;
    else if (!strncmp(target, "env.", 4)) {
        for (size_t i = 0; i < ep->n_env; i++) {
            if (!strcmp(ep->env[i].name, target + 4)) {
                *at = ep->env[i].at;
                return true;
            }
        }
        return false;
    }
    if (s) {
        *at = s->at;
        return s->v != NULL;
    }
    if (u) {
        *at = u->at;
        return u->set;
    }
    return false;
}
