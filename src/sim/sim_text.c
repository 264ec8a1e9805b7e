/*
 * sim text: what the sim says, deterministic: the words of its replies (a function of the seed,
 * the request's prompt and the token index), the seeds and seeded draws (faults' jitter, the drafts'
 * acceptance), and a tool call's arguments.
 *
 * What it does not do: count tokens (sw_sim_count_tokens), or send anything (sim_reply.c).
 */
#include "sim_internal.h"

#include <stdio.h>
#include <string.h>

static const char *const words[] = {
    "the",    "river",  "stone",  "light",  "north",   "quiet",   "ember",  "field",
    "cloud",  "amber",  "signal", "harbor", "lantern", "meadow",  "copper", "winter",
    "orbit",  "willow", "echo",   "cedar",  "granite", "marble",  "silver", "thunder",
    "valley", "canyon", "falcon", "garden", "island",  "jasmine", "kettle", "lumen",
};

uint64_t sw__sim_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

uint64_t sw__sim_rng_next(uint64_t *state)
{
    *state = sw__sim_mix64(*state + 0x9e3779b97f4a7c15ull);
    return *state;
}

void sw__sim_token_text(const struct sw__sim_req *r, int64_t i, char *out, size_t n)
{
    uint64_t w = sw__sim_mix64(r->text_seed + (uint64_t)i) % SW_ARRAY_LEN(words);
    snprintf(out, n, "%s%s", i ? " " : "", words[w]);
}

void sw__sim_hash_content(const json_t *c, uint64_t *h)
{
    if (json_is_string(c)) {
        *h ^= hash_bytes(json_string_value(c), json_string_length(c));
        *h = sw__sim_mix64(*h);
    }
    for (size_t i = 0; i < json_array_size(c); i++)
        sw__sim_hash_content(json_object_get(json_array_get(c, i), "text"), h);
}

/* The arguments of a call: every required property, a word for a string, 1 for a number or an
 * integer, true for a boolean. Allocated (sw_free); NULL on OOM. */
char *sw__sim_tool_arguments(const json_t *params, uint64_t seed)
{
    json_t *args = json_object();
    const json_t *props = json_object_get(params, "properties");
    const json_t *req = json_object_get(params, "required");
    for (size_t i = 0; args && i < json_array_size(req); i++) {
        const char *k = json_string_value(json_array_get(req, i));
        if (!k)
            continue;
        const char *type = json_string_value(json_object_get(json_object_get(props, k), "type"));
        if (type && (!strcmp(type, "number") || !strcmp(type, "integer")))
            json_object_set_new(args, k, json_integer(1));
        else if (type && !strcmp(type, "boolean"))
            json_object_set_new(args, k, json_true());
        else
            json_object_set_new(args, k,
                                json_string(words[sw__sim_mix64(seed + i) % SW_ARRAY_LEN(words)]));
    }
    char *txt = args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(args);
    char *out = txt ? sw_strdup(txt) : NULL;
    free(txt);
    return out;
}
