/*
 * Hosts of a fleet file: their transport (local or ssh) and their devices (vendor, index,
 * memory, bandwidth), with the checks that need a whole host (device indexes that collide,
 * usable memory above total).
 *
 * Not here: reaching a host (deploy) or reading its devices' live state (probe).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Hosts and devices.
 */
static const char *const vendors[] = {"amd", "nvidia", "intel", "apple", "cpu", NULL};

static const struct sw__fleet_fdef device_defs[] = {
    {"kind",
     {"model"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_device, kind)},
    {"vendor",
     {0},
     sw__fleet_dec_strf,
     SW__SPECC(vendors),
     offsetof(struct sw_fleet_device, vendor)},
    {"index",
     {0},
     sw__fleet_dec_u64f,
     SW__SPECN(SW__FT_COUNT, 0, 1023),
     offsetof(struct sw_fleet_device, index)},
    {"memory_total",
     {"memory", "vram"},
     sw__fleet_dec_u64f,
     SW__SPEC(SW__FT_BYTES_APPROX),
     offsetof(struct sw_fleet_device, memory_total)},
    {"memory_usable",
     {"usable"},
     sw__fleet_dec_u64f,
     SW__SPEC(SW__FT_BYTES_APPROX),
     offsetof(struct sw_fleet_device, memory_usable)},
    {"bandwidth",
     {0},
     sw__fleet_dec_u64f,
     SW__SPEC(SW__FT_RATE),
     offsetof(struct sw_fleet_device, bandwidth)},
    {"unified_memory",
     {"unified"},
     sw__fleet_dec_boolf,
     SW__SPEC(SW__FT_BOOL),
     offsetof(struct sw_fleet_device, unified_memory)},
    {"note",
     {0},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_TEXT),
     offsetof(struct sw_fleet_device, note)},
};

static int dec_device(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                      const struct sw__fleet_node *dv, void *arg)
{
    struct sw_fleet_host *h = arg;
    struct sw_fleet_device *dev = &h->devices[h->n_devices++];
    dev->name = sw_region_strdup(c->a, k->text);
    if (!dev->name)
        return sw__fleet_nomem(c);
    dev->at = sw__fleet_at(k);
    dev->host = h;
    int r = sw__fleet_dec_map(c, dv, dev, device_defs, SW_ARRAY_LEN(device_defs), "device");
    if (!r && dev->memory_total.set && dev->memory_usable.set &&
        dev->memory_usable.v > dev->memory_total.v) {
        struct sw_fleet_at at = dev->memory_usable.at;
        r = sw__fleet_err(c, &at, "%s.memory_usable (%llu B) is more than memory_total (%llu B)",
                          c->path, (unsigned long long)dev->memory_usable.v,
                          (unsigned long long)dev->memory_total.v);
    }
    return r;
}

static int dec_devices(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_host *h = obj;
    (void)d;
    if (sw__fleet_node_is_null(v)) {
        sw__fleet_record(c, v);
        return 0;
    }
    struct sw__fleet_walk w = {.what = "device", .fn = dec_device, .arg = h};
    return sw__fleet_map_into(c, v, &h->devices, sizeof(*h->devices), &w);
}

static const char *const transports[] = {"local", "ssh", NULL};

struct transport_dec {
    struct sw_fleet_str kind, address, user, identity_file, known_hosts;
    struct sw_fleet_u64 port;
};

static int dec_transport(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d)
{
    struct sw_fleet_host *h = obj;
    (void)d;
    struct sw__fleet_spec sp = SW__SPECC(transports);
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
    static const struct sw__fleet_fdef defs[] = {
        {"kind",
         {"type"},
         sw__fleet_dec_strf,
         SW__SPECC(transports),
         offsetof(struct transport_dec, kind)},
        {"address",
         {"hostname", "host"},
         sw__fleet_dec_strf,
         SW__SPEC(SW__FT_STR),
         offsetof(struct transport_dec, address)},
        {"port",
         {0},
         sw__fleet_dec_u64f,
         SW__SPEC(SW__FT_PORT),
         offsetof(struct transport_dec, port)},
        {"user",
         {0},
         sw__fleet_dec_strf,
         SW__SPEC(SW__FT_NAME),
         offsetof(struct transport_dec, user)},
        {"identity_file",
         {"identity", "key_file"},
         sw__fleet_dec_strf,
         SW__SPEC(SW__FT_LPATH),
         offsetof(struct transport_dec, identity_file)},
        {"known_hosts",
         {0},
         sw__fleet_dec_strf,
         SW__SPEC(SW__FT_LPATH),
         offsetof(struct transport_dec, known_hosts)},
    };
    rc = sw__fleet_dec_map(c, v, &t, defs, SW_ARRAY_LEN(defs), "transport");
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

static const struct sw__fleet_fdef host_defs[] = {
    {"transport", {0}, dec_transport, SW__SPEC(0), 0},
    {"devices", {0}, dec_devices, SW__SPEC(0), 0},
    {"note", {0}, sw__fleet_dec_strf, SW__SPEC(SW__FT_TEXT), offsetof(struct sw_fleet_host, note)},
};

static int dec_host(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                    const struct sw__fleet_node *hv, void *arg)
{
    struct sw_fleet *f = c->f;
    (void)arg;
    struct sw_fleet_host *h = &f->hosts[f->n_hosts++];
    h->name = sw_region_strdup(c->a, k->text);
    if (!h->name)
        return sw__fleet_nomem(c);
    h->at = sw__fleet_at(k);
    int r = sw__fleet_dec_map(c, hv, h, host_defs, SW_ARRAY_LEN(host_defs), "host");
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
                r = sw__fleet_err(c, &at, "%s.devices.%s.index %llu is already device %s's index",
                                  c->path, h->devices[b].name,
                                  (unsigned long long)h->devices[b].index.v, h->devices[a].name);
            }
        }
    }
    return r;
}

int sw__fleet_dec_hosts(struct sw__fleet_ctx *c, const struct sw__fleet_node *v)
{
    struct sw_fleet *f = c->f;
    struct sw__fleet_walk w = {.what = "host", .fn = dec_host};
    return sw__fleet_map_into(c, v, &f->hosts, sizeof(*f->hosts), &w);
}
