/*
 * host/restore: whether a deploy tag's payload and image are still on its endpoint's host (the
 * restorability `slipway history` and `slipway report` print, through sw_ledger_history's
 * present callback). One test, here, so the two views can never disagree.
 *
 * What it deliberately does not do: hash payloads (`slipway fetch --verify-only` does), look at a
 * remote host (a tag of a remote endpoint is "not checked"), or read the ledger itself.
 */
#include <slipway/host.h>

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

const char *sw_host_restore_check_open(struct sw_host_restore_check *c,
                                       const struct sw_fleet_endpoint *ep)
{
    memset(c, 0, sizeof(*c));
    if (!ep || !ep->host || ep->host->transport != SW_FLEET_LOCAL)
        return "not checked (remote host)";
    if (ep->runtime.kind != SW_FLEET_RUNTIME_NATIVE)
        c->runtime = sw_fleet_runtime_name(ep->runtime.kind);
    c->host_open = sw_host_open_fleet(&c->host, ep->host, 0, NULL) == 0;
    return NULL;
}

void sw_host_restore_check_close(struct sw_host_restore_check *c)
{
    if (c && c->host_open)
        sw_host_disconnect(&c->host);
    if (c)
        c->host_open = false;
}

int sw_host_restore_present(void *ctx, const char *kind, const char *what, int64_t size,
                            bool *present, struct sw_err *e)
{
    struct sw_host_restore_check *c = ctx;
    *present = false;
    if (!strcmp(kind, "image")) {
        if (!c->runtime)
            return sw_err_set(e, SW_EUNSUPPORTED, "the endpoint runs natively: no image store");
        if (!c->host_open)
            return sw_err_set(e, SW_EUNSUPPORTED, "the local host could not be opened");
        return sw_host_image_present(&c->host, c->runtime, what, 30000, present, e);
    }
    struct stat st;
    if (lstat(what, &st)) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return sw_err_at(e, SW_EIO, what, 0, 0, "cannot stat: %s", strerror(errno));
    }
    *present = !(S_ISREG(st.st_mode) && size >= 0 && (int64_t)st.st_size != size);
    return 0;
}
