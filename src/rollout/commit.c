/*
 * rollout/commit: a deploy's commit, once the new shape served and passed the battery: the host
 * keeps the new files as its last-good set (what a rollback reads) under a tag, and the ledger
 * names the same tag with what it served: the payload manifest as hashed on the host, the image
 * by digest, and the devices' readings taken now as usage rows of the shape.
 *
 * The host and the ledger commit in two halves around the ledger's, which decides: the host
 * copies the live files to STATE/last-good.new/ with the attempt's id (prepare), the ledger
 * names the tag and finishes the attempt `committed`, then the host makes last-good.new its
 * last-good under that tag (finish). A transport lost anywhere leaves a state the next deploy or
 * rollback of the endpoint settles once it holds the lock (sw__ro_commit_settle): a
 * last-good.new whose attempt the ledger committed is finished, any other is removed; so the
 * host's last-good and the ledger's agree from then on, whatever the moment the transport died
 * (a reply lost after the host's half was done included, which a host-first order could not
 * tell).
 *
 * What it does not do: fail a served deploy for the ledger's sake (a ledger that cannot take the
 * tag is said in the result; the host's tag keeps its own name).
 */
#include "rollout_internal.h"

#include <slipway/readings.h>
#include <slipway/service.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The payload manifest of a tag: every regular file of the endpoint's payload path (the file
 * itself, or the files under the directory) with its size and sha256 as read on the host, so
 * that a tag says which bytes it served. When the host cannot hash them (the tools missing, a
 * deadline passed) the path is kept with its size and sha256 null. */
static json_t *payload_manifest(struct sw__ro *c)
{
    const char *path = c->ep->payload.path.v;
    json_t *arr = json_array();
    if (!arr || !path)
        return arr;
    static const char hash_script[] =
        "set -e\n"
        "find -L \"$1\" -type f | LC_ALL=C sort | while IFS= read -r f; do\n"
        "  s=$(stat -Lc %s -- \"$f\"); h=$(sha256sum < \"$f\")\n"
        "  printf '%s %.64s %s\\n' \"$s\" \"$h\" \"$f\"\n"
        "done\n";
    const char *args[] = {path, NULL};
    struct sw_host_result hr;
    /* a payload is read once per commit, while the new shape already serves */
    if (sw__ro_sh(c, hash_script, args, 30 * 60 * 1000, &hr, NULL) == 0 && hr.out) {
        for (const char *l = hr.out; *l;) {
            const char *nl = strchr(l, '\n');
            size_t n = nl ? (size_t)(nl - l) : strlen(l);
            char line[4200], hex[65] = "";
            long long size = -1;
            int off = 0;
            snprintf(line, sizeof(line), "%.*s", (int)SW_MIN(n, sizeof(line) - 1), l);
            if (sscanf(line, "%lld %64[0-9a-f] %n", &size, hex, &off) == 2 && off > 0 &&
                strlen(hex) == 64 && size >= 0 && line[off] == '/')
                json_array_append_new(arr, json_pack("{s:s,s:I,s:s}", "path", line + off, "size",
                                                     (json_int_t)size, "sha256", hex));
            l = nl ? nl + 1 : l + n;
        }
    }
    sw_host_result_free(&hr);
    if (json_array_size(arr))
        return arr;
    static const char size_script[] = "stat -Lc %s \"$1\"\n";
    long long size = -1;
    if (sw__ro_sh(c, size_script, args, 30000, &hr, NULL) == 0)
        size = atoll(hr.out);
    sw_host_result_free(&hr);
    json_array_append_new(arr, json_pack("{s:s,s:I,s:n}", "path", path, "size",
                                         (json_int_t)(size < 0 ? 0 : size), "sha256"));
    return arr;
}

/* The image a tag records: the endpoint's image as its digest (name@sha256:...): the pinned
 * reference as the fleet gives it, else the digest the host's runtime holds for it (its first
 * RepoDigest); the reference as given when the runtime names none. "" for a native endpoint. */
static void image_digest(struct sw__ro *c, char *out, size_t n)
{
    const struct sw_fleet_endpoint *ep = c->ep;
    out[0] = '\0';
    if (!ep->image.v || ep->runtime.kind == SW_FLEET_RUNTIME_NATIVE)
        return;
    snprintf(out, n, "%s", ep->image.v);
    if (ep->image_pinned)
        return;
    const char *argv[] = {
        sw_fleet_runtime_name(ep->runtime.kind),      "image",     "inspect", "--format",
        "{{range .RepoDigests}}{{println .}}{{end}}", ep->image.v, NULL};
    struct sw_host_run_opts ro = {.deadline_ms = 30000};
    struct sw_host_result hr;
    if (sw_host_run(&c->h, argv, &ro, &hr, NULL) == 0 && hr.out) {
        const char *d = strstr(hr.out, "@sha256:");
        if (d) {
            const char *s = d;
            while (s > hr.out && s[-1] != '\n')
                s--;
            size_t len = strcspn(s, "\r\n");
            snprintf(out, n, "%.*s", (int)SW_MIN(len, n - 1), s);
        }
    }
    sw_host_result_free(&hr);
}

/* The device readings at commit: the host's vendor tool read once the new shape serves, each
 * reading of one of the endpoint's devices recorded as a usage row of the shape. What was read
 * (or why nothing was) in words into out. */
static void commit_readings(struct sw__ro *c, const json_t *shape, char *out, size_t n)
{
    struct sw_readings rs;
    char tool[32] = "", note[512] = "";
    int rc =
        sw_service_devices(&c->h, c->h.name, 60000, &rs, tool, sizeof(tool), note, sizeof(note));
    if (rc || !rs.n) {
        snprintf(out, n, "device readings: none (%.400s)", note[0] ? note : "no device read");
        sw_readings_free(&rs);
        return;
    }
    size_t off = (size_t)snprintf(out, n, "device readings (%s):", tool);
    for (size_t i = 0; i < rs.n && off < n; i++) {
        const struct sw_reading *rd = &rs.r[i];
        const struct sw_fleet_device *dev = sw_readings_match(c->ep, rd);
        struct sw_ledger_usage u;
        memset(&u, 0, sizeof(u));
        struct sw_err e;
        sw_err_clear(&e);
        if (!dev || sw_readings_to_usage(rd, &u, &e)) {
            off += (size_t)snprintf(out + off, n - off, " #%llu not recorded (%s)",
                                    (unsigned long long)rd->index,
                                    dev ? e.msg : "no device of the endpoint");
            continue;
        }
        u.endpoint = c->ep->name;
        u.shape = shape;
        u.device = dev->name;
        u.source = tool;
        u.source_line = rd->origin;
        u.note = "read by slipway deploy at commit";
        int64_t id = 0;
        rc = sw__ro_ledger_usage(c, &u, &id, &e);
        off +=
            (size_t)snprintf(out + off, n - off, " %s %llu/%llu MiB%s%s", dev->name,
                             (unsigned long long)u.used_mib, (unsigned long long)u.total_mib,
                             rc ? " (not recorded: " : (id ? " (recorded)" : ""), rc ? e.msg : "");
        if (rc && off < n)
            off += (size_t)snprintf(out + off, n - off, ")");
    }
    sw_readings_free(&rs);
}

int sw__ro_commit_step(struct sw__ro *c, const json_t *shape, const struct sw_unit_render *rd,
                       struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    uint64_t t = sw_now_ns();
    char readings[1024], image[512];
    commit_readings(c, shape, readings, sizeof(readings));
    image_digest(c, image, sizeof(image));
    json_t *payload = payload_manifest(c);
    size_t n_payload = json_array_size(payload);
    int rc = sw__ro_commit_prepare(c, e);
    if (rc) {
        json_decref(payload);
        sw__ro_record(c, "commit", false, t, "%s", e->msg);
        return rc;
    }
    char name[sizeof(r->tag)] = "";
    if (sw__ro_ledger_commit(c, shape, rd, payload, image[0] ? image : NULL, name, sizeof(name),
                             e)) {
        snprintf(r->ledger_msg, sizeof(r->ledger_msg), "the tag: %.480s", e->msg);
        sw_err_clear(e);
        name[0] = '\0'; /* the host names it */
    } else if (name[0]) {
        c->ledger_committed = true;
    }
    json_decref(payload);
    snprintf(r->tag, sizeof(r->tag), "%s", name);
    rc = sw__ro_commit_finish(c, r->tag, sizeof(r->tag), e);
    if (rc) {
        sw__ro_record(c, "commit", false, t, "%s%s%s%s", e->msg,
                      c->ledger_committed ? "; the ledger committed tag " : "", name,
                      c->ledger_committed ? " (the host's last-good is made of it by the next "
                                            "deploy or rollback of this endpoint)"
                                          : "");
        return rc;
    }
    sw__ro_record(c, "commit", true, t,
                  "%s/last-good/ holds the new files; tag %s; payload %zu file(s) hashed%s%s; "
                  "%s",
                  c->state, r->tag, n_payload, image[0] ? "; image " : "", image, readings);
    r->serving = true;
    r->outcome = SW_ROLLOUT_COMMITTED;
    return 0;
}

/* What the ledger says of attempt id: the tag it committed into tag (n bytes), "" when it
 * committed none (or is not the endpoint's). */
static int committed_tag(struct sw__ro *c, int64_t id, char *tag, size_t n, struct sw_err *e)
{
    json_t *a = NULL;
    tag[0] = '\0';
    int rc = sw_ledger_deploy_get(c->o->ledger, id, &a, e);
    if (rc == SW_ENOENT) {
        sw_err_clear(e);
        return 0;
    }
    if (rc)
        return rc;
    const char *ep = json_string_value(json_object_get(a, "endpoint"));
    const char *out = json_string_value(json_object_get(a, "outcome"));
    const char *tg = json_string_value(json_object_get(a, "tag"));
    if (ep && !strcmp(ep, c->ep->name) && out && !strcmp(out, "committed") && tg)
        snprintf(tag, n, "%s", tg);
    json_decref(a);
    return 0;
}

int sw__ro_commit_settle(struct sw__ro *c, struct sw_err *e)
{
    bool present = false;
    int64_t id = 0;
    uint64_t t = sw_now_ns();
    int rc = sw__ro_commit_pending(c, &present, &id, e);
    if (rc || !present)
        return rc;
    char tag[200] = "";
    if (id > 0 && !c->o->ledger) {
        sw__ro_record(c, "reconcile", true, t,
                      "%s/last-good.new (attempt %lld) left as it is: no ledger to say whether "
                      "it committed",
                      c->state, (long long)id);
        return 0;
    }
    if (id > 0 && (rc = committed_tag(c, id, tag, sizeof(tag), e)) != 0)
        return rc;
    if (id < 0 || (id > 0 && !tag[0])) {
        rc = sw__ro_commit_drop(c, e);
        if (!rc && id < 0)
            sw__ro_record(c, "reconcile", true, t,
                          "%s/last-good.new removed: its copy was cut off before it was whole",
                          c->state);
        else if (!rc)
            sw__ro_record(c, "reconcile", true, t,
                          "%s/last-good.new removed: attempt %lld never committed in the ledger",
                          c->state, (long long)id);
        return rc;
    }
    /* the ledger committed it (or no ledger was in that run): the host's half completed */
    rc = sw__ro_commit_finish(c, tag, sizeof(tag), e);
    if (!rc)
        sw__ro_record(c, "reconcile", true, t,
                      "%s/last-good/ made of last-good.new (tag %s): attempt %lld's commit was "
                      "cut off after the ledger's half",
                      c->state, tag, (long long)id);
    return rc;
}
