/*
 * Resolution and whole-endpoint checks, the loader's third pass: names to pointers (hosts,
 * devices, profiles, endpoints) and the rules that need a whole endpoint or the whole fleet (a
 * setting that does not apply to its engine, ranks versus devices, a payload outside every
 * container mount, knobs outside their range, two endpoints on one port...).
 *
 * Not here: whether a shape fits (memory, gates).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

static bool quantized_ggml(const char *t)
{
    return t && t[0] != 'f' && strcmp(t, "bf16");
}

/* The entry of first[0..n) (size bytes each, its name the first member) that ref names; NULL,
 * with the error at ref under `where` (and a suggestion), when none does. */
static const void *resolve_named(struct sw__fleet_ctx *c, const struct sw_fleet_str *ref,
                                 const void *first, size_t n, size_t size, const char *kind,
                                 const char *where)
{
    const void *found = sw__fleet_named(first, n, size, ref->v);
    if (found)
        return found;
    const char *names[128];
    size_t nn = 0;
    for (size_t i = 0; i < n && nn < SW_ARRAY_LEN(names); i++)
        names[nn++] = *(const char *const *)((const char *)first + i * size);
    unknown_ref(c, ref, kind, names, nn, where);
    return NULL;
}

static const struct sw_fleet_device *find_device(struct sw__fleet_ctx *c,
                                                 const struct sw_fleet_host *h,
                                                 const struct sw_fleet_str *s, const char *where)
{
    char kind[200];
    snprintf(kind, sizeof(kind), "device of host %s", h->name);
    return resolve_named(c, s, h->devices, h->n_devices, sizeof(*h->devices), kind, where);
}

static void resolve_host(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                         const struct sw__fleet_ep_raw *raw, const char *where)
{
    const struct sw_fleet *f = c->f;
    if (!raw->host.v) {
        sw__fleet_err(c, &ep->at, "%s needs a host: one of the names under hosts:", where);
        return;
    }
    char w[240];
    snprintf(w, sizeof(w), "%s.host", where);
    ep->host_at = raw->host.at;
    ep->host = resolve_named(c, &raw->host, f->hosts, f->n_hosts, sizeof(*f->hosts), "host", w);
}

/* The devices the endpoint names on its host (or the host's only one); false when out of
 * memory. */
static bool resolve_devices(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                            const struct sw__fleet_ep_raw *raw, const char *where)
{
    const struct sw_fleet_host *h = ep->host;
    size_t cap = raw->n_devices ? raw->n_devices : 1;
    ep->devices = sw_region_allocn(c->a, cap, sizeof(*ep->devices));
    ep->devices_at = sw_region_allocn(c->a, cap, sizeof(*ep->devices_at));
    if (!ep->devices || !ep->devices_at) {
        sw__fleet_nomem(c);
        return false;
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
                       "%s: host %s declares no devices, so no memory budget can be planned", where,
                       h->name);
    }
    return true;
}

static void resolve_profile(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                            const struct sw__fleet_ep_raw *raw, const char *where)
{
    const struct sw_fleet *f = c->f;
    if (!raw->profile.v)
        return;
    char w[240];
    snprintf(w, sizeof(w), "%s.profile", where);
    ep->profile_at = raw->profile.at;
    ep->profile = resolve_named(c, &raw->profile, f->profiles, f->n_profiles, sizeof(*f->profiles),
                                "profile", w);
    if (ep->profile && ep->profile->base != ep->engine)
        sw__fleet_err(c, &raw->profile.at,
                      "%s.profile: %s extends the %s law but the endpoint runs %s", where,
                      ep->profile->name, sw_fleet_engine_name(ep->profile->base),
                      sw_fleet_engine_name(ep->engine));
}

/* vLLM and SGLang: one rank per device (per node across nodes), and DCP within the TP ranks. */
static void check_ranks(struct sw__fleet_ctx *c, const struct sw_fleet_endpoint *ep, uint64_t nodes,
                        const char *where)
{
    const struct sw_fleet_shape *s = &ep->shape;
    uint64_t tp = s->tensor_parallel.set ? s->tensor_parallel.v : 1;
    uint64_t pp = s->pipeline_parallel.set ? s->pipeline_parallel.v : 1;
    if (nodes > 1 && tp * pp != ep->n_devices * nodes) {
        const struct sw_fleet_at *at = s->tensor_parallel.set     ? &s->tensor_parallel.at
                                       : s->pipeline_parallel.set ? &s->pipeline_parallel.at
                                                                  : &ep->nodes.at;
        sw__fleet_err(c, at,
                      "%s: tensor_parallel %llu x pipeline_parallel %llu = %llu ranks, but "
                      "%llu nodes x %zu device%s per node = %llu (devices: lists one node's "
                      "GPUs; one rank per GPU)",
                      where, (unsigned long long)tp, (unsigned long long)pp,
                      (unsigned long long)(tp * pp), (unsigned long long)nodes, ep->n_devices,
                      ep->n_devices == 1 ? "" : "s", (unsigned long long)(ep->n_devices * nodes));
    } else if (nodes == 1 && tp * pp != ep->n_devices) {
        const struct sw_fleet_at *at = s->tensor_parallel.set     ? &s->tensor_parallel.at
                                       : s->pipeline_parallel.set ? &s->pipeline_parallel.at
                                                                  : &ep->devices_at[0];
        sw__fleet_err(c, at,
                      "%s: tensor_parallel %llu x pipeline_parallel %llu = %llu ranks, but the "
                      "endpoint uses %zu device%s (one rank per device)",
                      where, (unsigned long long)tp, (unsigned long long)pp,
                      (unsigned long long)(tp * pp), ep->n_devices, ep->n_devices == 1 ? "" : "s");
    }
    if (s->decode_context_parallel.set && tp % s->decode_context_parallel.v)
        sw__fleet_err(c, &s->decode_context_parallel.at,
                      "%s.shape.decode_context_parallel %llu must divide tensor_parallel %llu "
                      "(DCP reuses the TP ranks)",
                      where, (unsigned long long)s->decode_context_parallel.v,
                      (unsigned long long)tp);
}

/* The shape against its engine: settings it does not read, and the ones it refuses together. */
static void check_shape(struct sw__fleet_ctx *c, const struct sw_fleet_endpoint *ep,
                        const char *where)
{
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
    uint64_t nodes = sw_fleet_endpoint_nodes(ep);
    if (nodes > 1 && ep->engine != SW_FLEET_VLLM)
        sw__fleet_err(c, &ep->nodes.at,
                      "%s.nodes: %llu nodes is vLLM's multi-node serving (a Ray cluster); %s "
                      "serves from one node",
                      where, (unsigned long long)nodes, sw_fleet_engine_name(ep->engine));
    if ((ep->engine == SW_FLEET_VLLM || ep->engine == SW_FLEET_SGLANG) && ep->n_devices)
        check_ranks(c, ep, nodes, where);
    if (s->spec_tokens.set && s->spec_tokens.v > 0 && !s->spec_method.v)
        sw__fleet_err(c, &s->spec_tokens.at, "%s.shape.spec_decode.tokens needs a method", where);
    const struct sw_fleet_u64 *fl = &ep->contract.full_length;
    if (fl->set && s->seqs.set && fl->v > s->seqs.v)
        sw__fleet_err(c, &fl->at,
                      "%s.contract.full_length %llu is above seqs %llu (line %d): at most seqs "
                      "requests run at once",
                      where, (unsigned long long)fl->v, (unsigned long long)s->seqs.v,
                      s->seqs.at.line);
}

static void check_image(struct sw__fleet_ctx *c, const struct sw_fleet_endpoint *ep,
                        const char *where)
{
    if (!ep->image.v || ep->image_pinned)
        return;
    if (sw_fleet_endpoint_frozen(ep, "image"))
        sw__fleet_warn(c, &ep->image.at,
                       "%s.image is frozen but not pinned by digest (NAME@sha256:...): a tag "
                       "can move under a frozen setting",
                       where);
    else
        sw__fleet_warn(c, &ep->image.at,
                       "%s.image is not pinned by digest (NAME@sha256:...): a tag can move", where);
}

static void check_payload(struct sw__fleet_ctx *c, const struct sw_fleet_endpoint *ep,
                          const char *where)
{
    const struct sw_fleet_payload *p = &ep->payload;
    if (p->path.v && ep->image.v && p->n_mounts) {
        bool seen = false;
        for (size_t i = 0; i < p->n_mounts && !seen; i++)
            seen = sw_path_within(p->path.v, p->mounts[i].host_path, NULL, 0) > 0;
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
}

/* Knobs and frozen settings name shape fields of this engine; the current shape is within each
 * knob; no setting is both. */
static void check_knobs(struct sw__fleet_ctx *c, const struct sw_fleet_endpoint *ep,
                        const char *where)
{
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
        sw_fleet_shape_get(&ep->shape, kb->name, &cur);
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
}

/* Known-bad rules must be able to match: each condition on a field of this engine. */
static void check_known_bad(struct sw__fleet_ctx *c, const struct sw_fleet_endpoint *ep,
                            const char *where)
{
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
}

/* The listen address has one source, listen: (sw_fleet_endpoint_addr reads it). */
static void check_listen(struct sw__fleet_ctx *c, const struct sw_fleet_endpoint *ep,
                         const char *where)
{
    for (size_t i = 0; i < ep->n_args; i++) {
        const char *t = ep->args[i].v;
        if (!t)
            continue;
        size_t fl = strcspn(t, "=");
        if ((fl == 6 && !strncmp(t, "--host", 6)) || (fl == 6 && !strncmp(t, "--port", 6)))
            sw__fleet_err(c, &ep->args[i].at,
                          "%s.args sets %.6s: give it as listen.%s, so that every verb reaches "
                          "the endpoint where the engine listens",
                          where, t, t[2] == 'h' ? "address" : "port");
    }
    if (ep->listen_route.v && ep->host && ep->host->transport != SW_FLEET_SSH)
        sw__fleet_err(c, &ep->listen_route.at,
                      "%s.listen.route applies to an endpoint on an ssh host (host %s is local)",
                      where, ep->host->name);
}

/* Measured facts and boots: their device names, and a boot's shape against the engine. */
static void resolve_records(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                            const struct sw__fleet_ep_raw *raw, const char *where)
{
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

void sw__fleet_check_endpoint(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                              struct sw__fleet_ep_raw *raw)
{
    char where[200];
    snprintf(where, sizeof(where), "endpoints.%s", ep->name);
    if (!ep->engine) {
        if (!raw->engine.at.file) /* a bad engine value was reported where it was written */
            sw__fleet_err(c, &ep->at, "%s needs an engine: llama.cpp, vllm or sglang", where);
        return;
    }
    resolve_host(c, ep, raw, where);
    if (ep->host && !resolve_devices(c, ep, raw, where))
        return;
    resolve_profile(c, ep, raw, where);
    sw__fleet_check_runtime(c, ep, where);
    check_shape(c, ep, where);
    check_image(c, ep, where);
    check_payload(c, ep, where);
    check_knobs(c, ep, where);
    check_known_bad(c, ep, where);
    check_listen(c, ep, where);
    resolve_records(c, ep, raw, where);
}

void sw__fleet_check_fleet(struct sw__fleet_ctx *c, struct sw__fleet_harness_raw *hr)
{
    struct sw_fleet *f = c->f;
    /* listen addresses per host, as the engines will bind them (an unset port is the engine's
     * default): the same port on the same address, or on every address, collides. Two ports
     * written in the file are an error; a collision through an engine's default port is a
     * warning here (a fleet may describe endpoints it never runs together) and a refusal of the
     * gates that start them. */
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *a = &f->endpoints[i];
        struct sw_fleet_addr aa, ba;
        if (!a->enabled || !a->host || !a->engine || sw_fleet_endpoint_addr(a, &aa, NULL))
            continue;
        for (size_t j = i + 1; j < f->n_endpoints; j++) {
            const struct sw_fleet_endpoint *b = &f->endpoints[j];
            if (!b->enabled || b->host != a->host || !b->engine ||
                sw_fleet_endpoint_addr(b, &ba, NULL) || ba.port != aa.port)
                continue;
            if (strcmp(aa.bind, ba.bind) && !sw_fleet_addr_is_wildcard(aa.bind) &&
                !sw_fleet_addr_is_wildcard(ba.bind))
                continue;
            if (aa.port_default || ba.port_default)
                sw__fleet_warn(c, b->listen_port.set ? &b->listen_port.at : &b->at,
                               "endpoints.%s would listen on %s:%u%s, which endpoint %s (line %d) "
                               "takes on host %s: they cannot run together; give one of them "
                               "another listen.port",
                               b->name, ba.bind, ba.port,
                               ba.port_default ? " (the engine's default port)" : "", a->name,
                               a->at.line, a->host->name);
            else
                sw__fleet_err(c, &b->listen_port.at,
                              "endpoints.%s listens on %s:%u, which endpoint %s (line %d) already "
                              "takes on host %s: give one of them another listen.port",
                              b->name, ba.bind, ba.port, a->name, a->at.line, a->host->name);
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
