/*
 * The sim's faults as the operator spells them: --fault KIND[:ARG] at start, or POST /sim/fault's
 * JSON. Both end in one struct sw_sim_fault, checked here once (docs/sim.md, "Faults").
 */
#include <slipway/sim.h>

#include <string.h>

static const char *const names[] = {
    [SW_SIM_FAULT_NONE] = "none",         [SW_SIM_FAULT_DEAD_GENERATION] = "dead_generation",
    [SW_SIM_FAULT_HANG] = "hang",         [SW_SIM_FAULT_OOM_NEXT_REQUEST] = "oom_next_request",
    [SW_SIM_FAULT_HTTP_500] = "http_500", [SW_SIM_FAULT_EXIT0] = "exit0",
    [SW_SIM_FAULT_JITTER] = "jitter",     [SW_SIM_FAULT_STALL] = "stall",
    [SW_SIM_FAULT_RESET] = "reset",       [SW_SIM_FAULT_CRASH] = "crash",
};

#define KINDS                                                                                      \
    "none, dead_generation, hang, oom_next_request, http_500[:COUNT], exit0, jitter:DURATION, "    \
    "stall:DURATION, reset:TOKENS[xCOUNT], crash[:COUNT]"

const char *sw_sim_fault_name(enum sw_sim_fault_kind k)
{
    return (size_t)k < SW_ARRAY_LEN(names) && names[k] ? names[k] : "?";
}

static int kind_of(const char *name, size_t len, enum sw_sim_fault_kind *k)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++) {
        if (names[i] && strlen(names[i]) == len && !memcmp(names[i], name, len)) {
            *k = (enum sw_sim_fault_kind)i;
            return 0;
        }
    }
    return -1;
}

/* What each kind needs, once for both spellings. */
static int check(const struct sw_sim_fault *f, const char *what, struct sw_err *e)
{
    bool timed = f->kind == SW_SIM_FAULT_JITTER || f->kind == SW_SIM_FAULT_STALL;
    if (f->count < 1 || f->count > 1000000000)
        return sw_err_set(e, SW_EINVAL, "fault %s: the count must be 1..1e9", what);
    if (timed && (f->ms < 1 || f->ms > 3600000))
        return sw_err_set(e, SW_EINVAL, "fault %s: %s needs a duration of 1 ms .. 1 h", what,
                          names[f->kind]);
    if (f->kind == SW_SIM_FAULT_RESET && (f->after < 1 || f->after > 1000000000))
        return sw_err_set(e, SW_EINVAL,
                          "fault %s: reset needs the tokens generated before it, >= 1 "
                          "(reset:TOKENS[xCOUNT], or \"after\")",
                          what);
    return 0;
}

int sw_sim_fault_parse(const char *spec, struct sw_sim_fault *out, struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    out->count = 1;
    if (!spec || !*spec)
        return sw_err_set(e, SW_EINVAL, "fault \"\": want one of %s", KINDS);
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (kind_of(spec, nlen, &out->kind))
        return sw_err_set(e, SW_EINVAL, "fault \"%s\": unknown kind; want one of %s", spec, KINDS);
    const char *arg = colon ? colon + 1 : NULL;
    switch (out->kind) {
    case SW_SIM_FAULT_HTTP_500:
    case SW_SIM_FAULT_CRASH:
        if (arg && (sw_parse_i64(arg, &out->count, NULL) || out->count < 1))
            return sw_err_set(e, SW_EINVAL, "fault \"%s\": \"%s\" is not a count >= 1", spec, arg);
        break;
    case SW_SIM_FAULT_JITTER:
    case SW_SIM_FAULT_STALL:
        if (!arg || sw_parse_duration_ms(arg, &out->ms, NULL))
            return sw_err_set(e, SW_EINVAL, "fault \"%s\": want %s:DURATION (e.g. 5ms, 2s)", spec,
                              names[out->kind]);
        break;
    case SW_SIM_FAULT_RESET: {
        char tok[32];
        const char *x = arg ? strchr(arg, 'x') : NULL;
        size_t tlen = arg ? (x ? (size_t)(x - arg) : strlen(arg)) : 0;
        if (!arg || !tlen || tlen >= sizeof(tok))
            return sw_err_set(e, SW_EINVAL, "fault \"%s\": want reset:TOKENS[xCOUNT]", spec);
        memcpy(tok, arg, tlen);
        tok[tlen] = '\0';
        if (sw_parse_i64(tok, &out->after, NULL) || (x && sw_parse_i64(x + 1, &out->count, NULL)))
            return sw_err_set(e, SW_EINVAL, "fault \"%s\": want reset:TOKENS[xCOUNT]", spec);
        break;
    }
    default:
        if (arg)
            return sw_err_set(e, SW_EINVAL, "fault \"%s\": %s takes no argument", spec,
                              names[out->kind]);
        break;
    }
    char what[96];
    snprintf(what, sizeof(what), "\"%.80s\"", spec);
    return check(out, what, e);
}

/* An optional integer member: absent keeps *v; present must be an integer. */
static int member(const json_t *o, const char *key, int64_t *v, struct sw_err *e)
{
    const json_t *j = json_object_get(o, key);
    if (!j)
        return 0;
    if (!json_is_integer(j))
        return sw_err_set(e, SW_EINVAL, "fault: \"%s\" must be an integer", key);
    *v = json_integer_value(j);
    return 0;
}

int sw_sim_fault_from_json(const json_t *o, struct sw_sim_fault *out, struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    out->count = 1;
    const char *k = json_string_value(json_object_get(o, "kind"));
    if (!json_is_object(o) || !k)
        return sw_err_set(e, SW_EINVAL,
                          "fault: want {\"kind\": K, \"count\": N, \"ms\": N, "
                          "\"after\": N}; kinds: %s",
                          KINDS);
    if (kind_of(k, strlen(k), &out->kind))
        return sw_err_set(e, SW_EINVAL, "fault: unknown kind \"%.64s\"; want one of %s", k, KINDS);
    int rc = member(o, "count", &out->count, e);
    if (!rc)
        rc = member(o, "ms", &out->ms, e);
    if (!rc)
        rc = member(o, "after", &out->after, e);
    if (rc)
        return rc;
    char what[96];
    snprintf(what, sizeof(what), "%s", names[out->kind]);
    return check(out, what, e);
}
