/*
 * gate/patch: one engine patch verified against its base file, on this machine or on a fleet host
 * (include/slipway/gate.h sw_gate_patch). The verification itself is payload's
 * sw_payload_patch_verify; this file resolves the fleet's paths, brings a host's base file here
 * over the host's transport (`cat` under the host's deadline, into a private temporary file that
 * is removed on every path) and says the verdict in words. The `patches` gate of `slipway
 * check` (sw__gate_patches) runs it on each of an endpoint's patches, base on this machine.
 *
 * What it does not do: patch anything on the host, or reach into an image (the base is a file
 * the host holds: the image's file as mounted or extracted).
 */
#define _XOPEN_SOURCE 700
#include "gate_internal.h"

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/host.h>
#include <slipway/payload.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE_MAX (256u << 20) /* an engine source file; far above any */

/* path relative to the fleet file's directory (absolute stays) */
static void fleet_rel(const struct sw_fleet_patch *fp, const char *path, char *out, size_t n)
{
    const char *ff = fp->at.file;
    const char *slash = ff ? strrchr(ff, '/') : NULL;
    if (path[0] == '/' || !slash)
        snprintf(out, n, "%s", path);
    else
        snprintf(out, n, "%.*s/%s", (int)(slash - ff), ff, path);
}

/* The host's file into a new private temporary file (*tmp, which the caller unlinks). */
static int fetch_base(struct sw_host *h, const char *path, int64_t deadline_ms, char *tmp,
                      size_t tmpn, struct sw_err *e)
{
    struct sw_host_result hr;
    const char *argv[] = {"cat", "--", path, NULL};
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms, .max_out = BASE_MAX};
    int rc, fd = -1;
    memset(&hr, 0, sizeof(hr));
    tmp[0] = '\0';
    rc = sw_host_run(h, argv, &o, &hr, e);
    if (rc)
        goto out;
    if (hr.out_truncated) {
        rc = sw_err_set(e, SW_ERANGE, "%s: %s: larger than %u MiB", h->name, path, BASE_MAX >> 20);
        goto out;
    }
    const char *td = getenv("TMPDIR");
    snprintf(tmp, tmpn, "%s/slipway-base-XXXXXX", td && td[0] == '/' ? td : "/tmp");
    fd = mkstemp(tmp);
    if (fd < 0) {
        rc = sw_err_set(e, SW_EIO, "%s: cannot create: %s", tmp, strerror(errno));
        tmp[0] = '\0';
        goto out;
    }
    for (size_t w = 0; w < hr.out_len;) {
        ssize_t k = write(fd, hr.out + w, hr.out_len - w);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = sw_err_set(e, SW_EIO, "%s: write: %s", tmp, strerror(errno));
            goto out;
        }
        w += (size_t)k;
    }
out:
    if (fd >= 0)
        close(fd);
    if (rc && tmp[0]) {
        unlink(tmp);
        tmp[0] = '\0';
    }
    sw_host_result_free(&hr);
    return rc;
}

int sw_gate_patch(const struct sw_fleet_patch *fp, struct sw_host *h, int64_t deadline_ms,
                  struct sw_gate_patch_result *out, struct sw_err *e)
{
    char patch[8192], base[8192], tmp[4096] = "", eb[1000], where[300] = "";
    struct sw_err le;
    struct sw_payload_patch_result pr;
    int rc = 0;
    memset(out, 0, sizeof(*out));
    out->verdict = SW_GATE_SKIP;
    fleet_rel(fp, fp->patch, patch, sizeof(patch));
    if (h)
        snprintf(where, sizeof(where), " on %s", h->name);
    if (!fp->base) {
        snprintf(out->line, sizeof(out->line),
                 "%s (%s:%d): no base %sto verify against: give base: PATH, the pinned image's %s",
                 fp->patch, fp->at.file ? fp->at.file : "fleet", fp->at.line,
                 h ? "" : "on this machine ", fp->file);
        return 0;
    }
    sw_err_clear(&le);
    if (h) {
        if (fp->base[0] != '/') {
            snprintf(out->line, sizeof(out->line),
                     "%s: base %s must be an absolute path to verify it on %s", fp->patch, fp->base,
                     h->name);
            return 0;
        }
        snprintf(base, sizeof(base), "%s", fp->base);
        if (fetch_base(h, fp->base, deadline_ms, tmp, sizeof(tmp), &le))
            goto cannot;
    } else {
        fleet_rel(fp, fp->base, base, sizeof(base));
    }
    struct sw_payload_patch pp = {fp->file, patch, fp->base_sha256, fp->patched_sha256};
    if (sw_payload_patch_verify(tmp[0] ? tmp : base, &pp, &pr, &le))
        goto cannot;
    snprintf(out->base_sha256, sizeof(out->base_sha256), "%s", pr.base_sha256);
    snprintf(out->patched_sha256, sizeof(out->patched_sha256), "%s", pr.patched_sha256);
    snprintf(out->detail, sizeof(out->detail), "%s", sw_payload_patch_verdict_name(pr.verdict));
    out->verdict = pr.verdict == SW_PATCH_OK ? SW_GATE_PASS : SW_GATE_FAIL;
    switch (pr.verdict) {
    case SW_PATCH_OK:
        snprintf(out->line, sizeof(out->line),
                 "%s applies to %s%s (base %.8s...) and reproduces %.8s...", fp->patch, fp->file,
                 where, pr.base_sha256, pr.patched_sha256);
        break;
    case SW_PATCH_BASE_DRIFTED:
        snprintf(out->line, sizeof(out->line),
                 "%s: the image's %s%s is %.8s..., not the recorded base %.8s...: the image moved "
                 "under the patch",
                 fp->patch, fp->file, where, pr.base_sha256, fp->base_sha256);
        break;
    case SW_PATCH_DOES_NOT_APPLY:
        snprintf(out->line, sizeof(out->line), "%s no longer applies to %s%s: %s", fp->patch,
                 fp->file, where, pr.detail[0] ? pr.detail : "patch refused");
        break;
    default:
        snprintf(out->line, sizeof(out->line),
                 "%s applies to %s%s but makes %.8s..., not the recorded %.8s...", fp->patch,
                 fp->file, where, pr.patched_sha256, fp->patched_sha256);
        break;
    }
    if (out->verdict == SW_GATE_FAIL)
        snprintf(out->fix, sizeof(out->fix),
                 "rebase the patch on the pinned image's %s and record both sha256s again, or pin "
                 "the image the patch was made for",
                 fp->file);
    goto done;
cannot:
    if (le.code == SW_ENOMEM) {
        *e = le;
        rc = SW_ENOMEM;
        goto done;
    }
    out->verdict = SW_GATE_SKIP;
    snprintf(out->line, sizeof(out->line), "%s: cannot verify%s: %s", fp->patch, where,
             sw_err_format(&le, eb, sizeof(eb)));
done:
    if (tmp[0])
        unlink(tmp);
    return rc;
}

/* The patches gate: each of the endpoint's patches, verified here (base on this machine). */
int sw__gate_patches(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    for (size_t i = 0; i < ep->n_patches; i++) {
        const struct sw_fleet_patch *fp = &ep->patches[i];
        struct sw_gate_patch_result pr;
        int rc = sw_gate_patch(fp, NULL, 0, &pr, e);
        if (rc)
            return rc;
        json_t *g = sw__gate_add(r, "patches", pr.verdict, "%s", pr.line);
        sw__gate_str(g, "file", fp->file);
        if (!pr.detail[0])
            continue;
        sw__gate_str(g, "verdict_detail", pr.detail);
        sw__gate_str(g, "base_sha256", pr.base_sha256);
        if (pr.patched_sha256[0])
            sw__gate_str(g, "patched_sha256", pr.patched_sha256);
        if (pr.fix[0])
            sw__gate_fix(g, "%s", pr.fix);
    }
    return 0;
}
