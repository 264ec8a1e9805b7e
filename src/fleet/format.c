/*
 * fleet/format: a fleet value as `slipway fleet show` writes it for people: a count with its
 * thousands ("200,704"), a size as bytes and in binary units ("3,146,000,000 (2.93 GiB)"), "all",
 * "off" or "-" for what is not set.
 *
 * What it does not do: write the fleet file's own spelling (tune's patch writes values as the
 * file reads them), or round-trip (the text is for reading, not for parsing back).
 */
#include <slipway/fleet.h>

#include <stdio.h>

const char *sw_fleet_u64_text(const struct sw_fleet_u64 *u, bool bytes, char *out, size_t n)
{
    char a[64], b[64];
    if (!u->set)
        snprintf(out, n, u->off ? "off" : "-");
    else if (u->v == SW_FLEET_ALL)
        snprintf(out, n, "all");
    else if (bytes)
        snprintf(out, n, "%s (%s)", sw_fmt_count(u->v, a, sizeof(a)),
                 sw_fmt_bytes(u->v, b, sizeof(b)));
    else
        snprintf(out, n, "%s", sw_fmt_count(u->v, a, sizeof(a)));
    return out;
}

const char *sw_fleet_value_text(const struct sw_fleet_value *v, char *out, size_t n)
{
    char a[64], b[64];
    if (!v->set)
        snprintf(out, n, "-");
    else if (v->type == SW_FLEET_V_REAL)
        snprintf(out, n, "%g", v->f);
    else if (v->type == SW_FLEET_V_BOOL)
        snprintf(out, n, "%s", v->b ? "true" : "false");
    else if (v->type == SW_FLEET_V_STR)
        snprintf(out, n, "%s", v->s ? v->s : "");
    else if (v->type == SW_FLEET_V_BYTES)
        snprintf(out, n, "%s (%s)", sw_fmt_count(v->u, a, sizeof(a)),
                 sw_fmt_bytes(v->u, b, sizeof(b)));
    else if (v->u == SW_FLEET_ALL)
        snprintf(out, n, "all");
    else
        snprintf(out, n, "%s", sw_fmt_count(v->u, a, sizeof(a)));
    return out;
}
