/*
 * ladder's names: its knobs (and the shape field each moves on the endpoint), the failure
 * classes a rung ends in (and an engine's boot-log failure read as one), and its runners.
 *
 * What it deliberately does not do: decide anything from a class (ladder_bounds.c,
 * ladder_law.c) or run a rung (ladder_run.c).
 */
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ladder.h>

#include "ladder_internal.h"

#include <inttypes.h>
#include <string.h>

static const char *const knob_names[] = {"max_model_len", "ctx_size", "slots", "kv_cache_bytes"};
/* the shape field sw_gate_set takes for each knob */
static const char *const knob_keys[] = {"max_model_len", "ctx_size", "seqs", "kv_cache_bytes"};

const char *sw_ladder_knob_name(enum sw_ladder_knob k)
{
    return (unsigned)k < 4 ? knob_names[k] : "?";
}

int sw_ladder_knob_parse(const char *s, enum sw_ladder_knob *out)
{
    static const struct {
        const char *name;
        enum sw_ladder_knob k;
    } t[] = {{"max_model_len", SW_LADDER_MAX_MODEL_LEN},
             {"maxlen", SW_LADDER_MAX_MODEL_LEN},
             {"ctx_size", SW_LADDER_CTX_SIZE},
             {"ctx", SW_LADDER_CTX_SIZE},
             {"slots", SW_LADDER_SLOTS},
             {"seqs", SW_LADDER_SLOTS},
             {"kv_cache_bytes", SW_LADDER_KV_BYTES},
             {"kv_bytes", SW_LADDER_KV_BYTES}};
    for (size_t i = 0; s && i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(s, t[i].name)) {
            *out = t[i].k;
            return 0;
        }
    return SW_EINVAL;
}

static const char *const class_names[] = {"pass",        "capture_oom", "boot_oom", "kv_refused",
                                          "runtime_oom", "compile",     "refused",  "other"};

const char *sw_ladder_class_name(enum sw_ladder_class c)
{
    return (unsigned)c <= SW_LADDER_OTHER ? class_names[c] : "?";
}

int sw_ladder_class_parse(const char *s, enum sw_ladder_class *out)
{
    for (unsigned i = 0; s && i <= SW_LADDER_OTHER; i++)
        if (!strcmp(s, class_names[i])) {
            *out = (enum sw_ladder_class)i;
            return 0;
        }
    return SW_EINVAL;
}

bool sw_ladder_class_is_bad(enum sw_ladder_class c)
{
    return c == SW_LADDER_CAPTURE_OOM || c == SW_LADDER_BOOT_OOM || c == SW_LADDER_KV_REFUSED ||
           c == SW_LADDER_RUNTIME_OOM;
}

static const char *const runner_names[] = {"auto", "sim", "local", "rollout"};

const char *sw_ladder_runner_name(enum sw_ladder_runner_kind k)
{
    return (unsigned)k < 4 ? runner_names[k] : "?";
}

int sw_ladder_runner_parse(const char *s, enum sw_ladder_runner_kind *out)
{
    for (unsigned i = 0; s && i < 4; i++)
        if (!strcmp(s, runner_names[i])) {
            *out = (enum sw_ladder_runner_kind)i;
            return 0;
        }
    return SW_EINVAL;
}

enum sw_ladder_class sw_ladder_classify(const json_t *failure)
{
    /* the boot log's failure class and phase, walked in order (phase NULL: any) */
    static const struct {
        const char *cls, *phase;
        enum sw_ladder_class c;
    } t[] = {{"oom", "graph_capture", SW_LADDER_CAPTURE_OOM},
             {"oom", "runtime", SW_LADDER_RUNTIME_OOM},
             {"oom", NULL, SW_LADDER_BOOT_OOM},
             {"kv_too_small", NULL, SW_LADDER_KV_REFUSED},
             {"compile_constraint", NULL, SW_LADDER_COMPILE}};
    const char *cls = json_string_value(json_object_get(failure, "class"));
    const char *phase = json_string_value(json_object_get(failure, "phase"));
    for (size_t i = 0; cls && i < SW_ARRAY_LEN(t); i++)
        if (!strcmp(cls, t[i].cls) && (!t[i].phase || (phase && !strcmp(phase, t[i].phase))))
            return t[i].c;
    return SW_LADDER_OTHER;
}

struct sw_fleet_u64 *sw__ladder_knob_field(struct sw_fleet_endpoint *ep, enum sw_ladder_knob k)
{
    switch (k) {
    case SW_LADDER_MAX_MODEL_LEN:
        return &ep->shape.max_model_len;
    case SW_LADDER_CTX_SIZE:
        return &ep->shape.ctx_size;
    case SW_LADDER_SLOTS:
        return &ep->shape.seqs;
    case SW_LADDER_KV_BYTES:
        return &ep->shape.kv_cache_bytes;
    }
    return NULL;
}

int sw__ladder_set(struct sw_fleet_endpoint *ep, enum sw_ladder_knob k, int64_t v, struct sw_err *e)
{
    char kv[96];
    snprintf(kv, sizeof(kv), "%s=%" PRId64, knob_keys[k], v);
    return sw_gate_set(ep, kv, e);
}
