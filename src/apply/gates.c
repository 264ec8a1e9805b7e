/*
 * apply/gates: the fleet's own gates, the ones no endpoint alone can see (include/slipway/
 * apply.h). Co-tenancy: per device, the device memory every enabled endpoint on it takes when it
 * runs (sw_plan_view_claim; an endpoint outside the selection counts too: it runs there) summed
 * against what the device holds (memory_usable, else memory_total). Ports: two enabled endpoints
 * of one host that the engines would bind to the same port, on one address or on every address
 * (sw_fleet_endpoint_addr: an engine's default port counts). A gate refuses every selected
 * endpoint it names, and says all of them.
 *
 * What it deliberately does not do: judge one endpoint's shape (its own gates run in its
 * rollout, sw_gate_endpoint), or read a device's live memory (readings do).
 */
#include "apply_internal.h"

#include <slipway/plan.h>

#include <stdio.h>
#include <string.h>

static double device_room(const struct sw_fleet_device *d)
{
    if (d->memory_usable.set)
        return (double)d->memory_usable.v;
    return (double)sw_fleet_device_capacity(d);
}

/* ep's claim on device d: from the survey's item when it has one, else planned here. */
static double claim_of(const struct sw_apply_survey *s, const struct sw_fleet_endpoint *ep,
                       const struct sw_fleet_device *d, bool *known)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->items[i].ep != ep)
            continue;
        for (size_t c = 0; c < s->items[i].n_claims; c++)
            if (s->items[i].claims[c].dev == d) {
                *known = s->items[i].claims[c].bytes > 0;
                return s->items[i].claims[c].bytes;
            }
        *known = false;
        return 0;
    }
    struct sw_plan_view v;
    double b = 0;
    if (sw_plan_view(ep, &v, NULL) == 0 && v.ok)
        b = sw_plan_view_claim(&v, sw_plan_view_device(&v, d), NULL, 0);
    sw_plan_view_free(&v);
    *known = b > 0;
    return b;
}

static bool uses(const struct sw_fleet_endpoint *ep, const struct sw_fleet_device *d)
{
    for (size_t i = 0; i < ep->n_devices; i++)
        if (ep->devices[i] == d)
            return true;
    return false;
}

static void refuse(struct sw_apply_survey *s, const struct sw_fleet_endpoint *ep, const char *why)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].ep == ep && !s->items[i].refused) {
            s->items[i].refused = true;
            snprintf(s->items[i].refused_why, sizeof(s->items[i].refused_why), "%s", why);
        }
}

static bool in_survey(const struct sw_apply_survey *s, const struct sw_fleet_endpoint *ep)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].ep == ep)
            return true;
    return false;
}

/* Each device a selected endpoint uses, once: the sum of what its enabled endpoints take. */
static int cotenancy(const struct sw_fleet *f, struct sw_apply_survey *s)
{
    for (size_t i = 0; i < s->n; i++) {
        for (size_t c = 0; c < s->items[i].n_claims; c++) {
            const struct sw_fleet_device *d = s->items[i].claims[c].dev;
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                for (size_t q = 0; q < s->items[k].n_claims; q++)
                    seen = seen || s->items[k].claims[q].dev == d;
            for (size_t q = 0; q < c && !seen; q++)
                seen = s->items[i].claims[q].dev == d;
            double room = device_room(d);
            if (seen || room <= 0)
                continue;
            double sum = 0;
            size_t n = 0, unknown = 0;
            char names[600] = "";
            size_t off = 0;
            for (size_t e = 0; e < f->n_endpoints; e++) {
                const struct sw_fleet_endpoint *ep = &f->endpoints[e];
                if (!ep->enabled || !uses(ep, d))
                    continue;
                bool known;
                double b = claim_of(s, ep, d, &known);
                sum += b;
                unknown += !known;
                n++;
                char fb[32];
                if (off < sizeof(names))
                    off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s %s",
                                            n > 1 ? ", " : "", ep->name,
                                            sw_fmt_bytes((uint64_t)b, fb, sizeof(fb)));
            }
            if (n < 2 || sum <= room)
                continue;
            char why[768], rb[32], sb[32];
            snprintf(why, sizeof(why),
                     "co-tenancy: device %s of host %s holds %s, and its %zu enabled "
                     "endpoints take %s together (%s)%s",
                     d->name, d->host ? d->host->name : "?",
                     sw_fmt_bytes((uint64_t)room, rb, sizeof(rb)), n,
                     sw_fmt_bytes((uint64_t)sum, sb, sizeof(sb)), names,
                     unknown ? "; some could not be planned and count as 0" : "");
            json_t *r = json_object(), *eps = json_array();
            if (!r || !eps) {
                json_decref(r);
                json_decref(eps);
                return SW_ENOMEM;
            }
            for (size_t e = 0; e < f->n_endpoints; e++) {
                const struct sw_fleet_endpoint *ep = &f->endpoints[e];
                if (!ep->enabled || !uses(ep, d))
                    continue;
                json_array_append_new(eps, json_string(ep->name));
                if (in_survey(s, ep))
                    refuse(s, ep, why);
            }
            sw_json_set_str(r, "gate", "cotenancy");
            sw_json_set_str(r, "device", d->name);
            sw_json_set_str(r, "line", why);
            sw_json_set_new(r, "endpoints", eps);
            json_array_append_new(s->refusals, r);
        }
    }
    return 0;
}

/* Every pair of enabled endpoints of one host that would bind one port, once. */
static int ports(const struct sw_fleet *f, struct sw_apply_survey *s)
{
    for (size_t a = 0; a < f->n_endpoints; a++) {
        const struct sw_fleet_endpoint *ea = &f->endpoints[a];
        struct sw_fleet_addr aa, ba;
        if (!ea->enabled || !ea->host || sw_fleet_endpoint_addr(ea, &aa, NULL))
            continue;
        for (size_t b = a + 1; b < f->n_endpoints; b++) {
            const struct sw_fleet_endpoint *eb = &f->endpoints[b];
            if (!eb->enabled || eb->host != ea->host || sw_fleet_endpoint_addr(eb, &ba, NULL) ||
                ba.port != aa.port)
                continue;
            if (strcmp(aa.bind, ba.bind) && !sw_fleet_addr_is_wildcard(aa.bind) &&
                !sw_fleet_addr_is_wildcard(ba.bind))
                continue;
            if (!in_survey(s, ea) && !in_survey(s, eb))
                continue;
            char why[768];
            snprintf(why, sizeof(why),
                     "port: endpoints %s (%s:%u) and %s (%s:%u) of host %s would bind the same "
                     "port: give one of them another listen.port",
                     ea->name, aa.bind, aa.port, eb->name, ba.bind, ba.port, ea->host->name);
            refuse(s, ea, why);
            refuse(s, eb, why);
            json_t *r = json_pack("{s:s,s:s,s:[s,s]}", "gate", "port", "line", why, "endpoints",
                                  ea->name, eb->name);
            if (!r || json_array_append_new(s->refusals, r))
                return SW_ENOMEM;
        }
    }
    return 0;
}

int sw__apply_gates(const struct sw_fleet *f, struct sw_apply_survey *s, struct sw_err *e)
{
    int rc = cotenancy(f, s);
    if (!rc)
        rc = ports(f, s);
    if (rc)
        return sw_err_set(e, rc, "out of memory");
    return 0;
}
