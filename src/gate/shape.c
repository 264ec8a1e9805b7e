/*
 * gate/shape: the comparison the gates use to find "this shape" among recorded boots, and
 * `--set KEY=VALUE` overrides. The shape itself is built by plan/shape (sw_plan_shape).
 *
 * What it deliberately does not do: canonicalize (ledger/canon does, through
 * sw_ledger_shape_canon) or decide anything about memory.
 */
#include <slipway/fleet.h>
#include <slipway/gate.h>

#include <string.h>
#include <strings.h>

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

/* ---------------------------------------------------------------------------------------------
 * Comparison on the keys that change memory.
 */
static bool truthy(const json_t *v)
{
    return v && !json_is_null(v) && !json_is_false(v) &&
           !(json_is_string(v) && !json_string_length(v));
}

static const char *flag_name(const json_t *v)
{
    if (json_is_string(v))
        return base_name(json_string_value(v));
    if (json_is_object(v) && json_is_string(json_object_get(v, "name")))
        return base_name(json_string_value(json_object_get(v, "name")));
    return NULL;
}

static bool same_key(const json_t *a, const json_t *b, const char *k)
{
    const json_t *x = json_object_get(a, k), *y = json_object_get(b, k);
    if (!x || !y)
        return !x && !y;
    if (json_is_number(x) && json_is_number(y))
        return json_number_value(x) == json_number_value(y);
    return json_equal(x, y);
}

bool sw_gate_same_shape(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"engine",
                                       "engine_profile",
                                       "ctx",
                                       "slots",
                                       "kv_dtype_k",
                                       "kv_dtype_v",
                                       "kv_bytes",
                                       "kv_tokens",
                                       "mnbt",
                                       "tp",
                                       "pp",
                                       "gpu_memory_utilization",
                                       "mem_fraction_static"};
    if (!json_is_object(a) || !json_is_object(b))
        return false;
    for (size_t i = 0; i < SW_ARRAY_LEN(keys); i++)
        if (!same_key(a, b, keys[i]))
            return false;
    const json_t *ma = json_object_get(a, "model"), *mb = json_object_get(b, "model");
    if (json_object_get(ma, "sha256") || json_object_get(mb, "sha256")) {
        if (!same_key(ma, mb, "sha256"))
            return false;
    } else if (!same_key(ma, mb, "name") || !same_key(ma, mb, "quant")) {
        return false;
    }
    const json_t *fa = json_object_get(a, "flags"), *fb = json_object_get(b, "flags");
    const json_t *pa = json_object_get(fa, "mmproj"), *pb = json_object_get(fb, "mmproj");
    if (truthy(pa) != truthy(pb))
        return false;
    if (truthy(pa) && flag_name(pa) && flag_name(pb) && strcmp(flag_name(pa), flag_name(pb)))
        return false;
    const json_t *sa = json_object_get(fa, "speculative"), *sb = json_object_get(fb, "speculative");
    if (truthy(sa) != truthy(sb))
        return false;
    if (json_is_object(sa) && json_is_object(sb) && !json_equal(sa, sb))
        return false;
    if (truthy(json_object_get(fa, "expert_precise_memory")) !=
        truthy(json_object_get(fb, "expert_precise_memory")))
        return false;
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Overrides.
 */
static int set_path(struct sw_fleet_str *s, const char *key, const char *v, struct sw_err *e)
{
    if (!*v)
        return sw_err_set(e, SW_EINVAL, "--set %s: empty value (write %s=null to turn it off)", key,
                          key);
    s->v = v;
    s->off = false;
    s->at.file = "--set";
    s->at.line = s->at.col = 0;
    return 0;
}

int sw_gate_set(struct sw_fleet_endpoint *ep, const char *kv, struct sw_err *e)
{
    const char *eq = kv ? strchr(kv, '=') : NULL;
    char key[128];
    if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
        return sw_err_set(e, SW_EINVAL, "--set: want KEY=VALUE (e.g. slots=3), got '%s'",
                          kv ? kv : "");
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    const char *v = eq + 1;
    bool null = !strcmp(v, "null") || !strcmp(v, "~");
    const char *k = !strncmp(key, "shape.", 6) ? key + 6 : key;

    if (!strcmp(k, "mmproj") || !strcmp(k, "payload.mmproj") || !strcmp(k, "draft") ||
        !strcmp(k, "payload.draft")) {
        struct sw_fleet_str *s = strstr(k, "mmproj") ? &ep->payload.mmproj : &ep->payload.draft;
        if (null) {
            s->v = NULL;
            s->off = true;
            return 0;
        }
        return set_path(s, key, v, e);
    }
    const struct sw_fleet_field *fd = sw_fleet_shape_field(k);
    if (!fd)
        return sw_err_set(e, SW_ENOENT,
                          "--set %s: not a shape field, mmproj or draft (shape fields: slots, "
                          "ctx, max_model_len, kv_cache_bytes, kv_cache_dtype, ...)",
                          key);
    if (!(fd->engines & SW_FLEET_ENG_BIT(ep->engine)))
        return sw_err_set(e, SW_EINVAL, "--set %s: %s does not apply to %s endpoints%s%s", key,
                          fd->name, sw_fleet_engine_name(ep->engine), fd->instead ? ": " : "",
                          fd->instead ? fd->instead : "");
    struct sw_fleet_value val;
    memset(&val, 0, sizeof(val));
    val.type = fd->type;
    val.at.file = "--set";
    int rc = 0;
    if (null) {
        /* unset: sw_fleet_shape_set refuses an unset value, so clear the field by name */
        struct sw_fleet_shape empty;
        memset(&empty, 0, sizeof(empty));
        struct sw_fleet_value cur;
        rc = sw_fleet_shape_get(&ep->shape, fd->name, &cur);
        if (rc)
            return sw_err_set(e, rc, "--set %s: cannot read the field", key);
        /* rebuild the shape without this field: copy every other set field */
        size_t n = 0;
        const struct sw_fleet_field *all = sw_fleet_shape_fields(&n);
        for (size_t i = 0; i < n; i++) {
            struct sw_fleet_value x;
            if (&all[i] == fd || !strcmp(all[i].name, fd->name))
                continue;
            if (sw_fleet_shape_get(&ep->shape, all[i].name, &x) == 0 && x.set &&
                (rc = sw_fleet_shape_set(&empty, all[i].name, &x, e)))
                return rc;
        }
        ep->shape = empty;
        return 0;
    }
    val.set = true;
    switch (fd->type) {
    case SW_FLEET_V_COUNT:
        if (!strcmp(v, "all"))
            val.u = SW_FLEET_ALL;
        else
            rc = sw_parse_count(v, &val.u, e);
        break;
    case SW_FLEET_V_BYTES:
        rc = sw_parse_bytes(v, &val.u, e);
        break;
    case SW_FLEET_V_REAL: {
        size_t l = strlen(v);
        if (l && v[l - 1] == '%') {
            char tmp[64];
            snprintf(tmp, sizeof(tmp), "%.*s", (int)(l - 1), v);
            rc = sw_parse_double(tmp, &val.f, e);
            val.f /= 100.0;
        } else {
            rc = sw_parse_double(v, &val.f, e);
        }
        break;
    }
    case SW_FLEET_V_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
            val.b = true;
        else if (!strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
            val.b = false;
        else
            rc = sw_err_set(e, SW_EINVAL, "'%s' is not true or false", v);
        break;
    case SW_FLEET_V_STR:
        val.s = v;
        break;
    }
    if (!rc)
        rc = sw_fleet_shape_set(&ep->shape, fd->name, &val, e);
    if (rc)
        sw_err_prefix(e, "--set %s", key);
    return rc;
}
