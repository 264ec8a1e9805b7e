/*
 * host/restore: whether a deploy tag's payload and image are still on its endpoint's host (the
 * restorability `slipway history` and `slipway report` print, through sw_ledger_history's
 * present callback). One test, here, so the two views can never disagree.
 *
 * A local host is looked at directly; an ssh host over its transport (one `stat` per path, a
 * 5 s connect bound: an unreachable host makes its tags "not checked", never "not restorable").
 *
 * What it deliberately does not do: hash payloads (`slipway fetch --verify-only` does), or read
 * the ledger itself.
 */
#include <slipway/host.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *sw_host_restore_check_open(struct sw_host_restore_check *c,
                                       const struct sw_fleet_endpoint *ep)
{
    memset(c, 0, sizeof(*c));
    if (!ep || !ep->host ||
        (ep->host->transport != SW_FLEET_LOCAL && ep->host->transport != SW_FLEET_SSH))
        return "not checked (remote host)";
    if (ep->runtime.kind != SW_FLEET_RUNTIME_NATIVE)
        c->runtime = sw_fleet_runtime_name(ep->runtime.kind);
    c->remote = ep->host->transport == SW_FLEET_SSH;
    c->host_open = sw_host_open_fleet(&c->host, ep->host, c->remote ? 5 : 0, NULL) == 0;
    if (c->remote && !c->host_open)
        return "not checked (the host could not be reached)";
    return NULL;
}

void sw_host_restore_check_close(struct sw_host_restore_check *c)
{
    if (c && c->host_open)
        sw_host_disconnect(&c->host);
    if (c)
        c->host_open = false;
}

/* A path on an ssh host: 'f' a regular file (its size in *size), 'o' anything else that exists,
 * 'n' nothing there. */
static int remote_stat(struct sw_host_restore_check *c, const char *what, char *kind,
                       long long *size, struct sw_err *e)
{
    static const char script[] = "if [ -f \"$1\" ]; then printf 'f '; stat -Lc %s -- \"$1\"; "
                                 "elif [ -e \"$1\" ]; then echo o; else echo n; fi\n";
    const char *argv[] = {"sh", "-c", script, "sh", what, NULL};
    struct sw_host_run_opts ro = {.deadline_ms = 30000};
    struct sw_host_result hr;
    *kind = 'n';
    *size = -1;
    int rc = sw_host_run(&c->host, argv, &ro, &hr, e);
    if (!rc && hr.out && (hr.out[0] == 'f' || hr.out[0] == 'o' || hr.out[0] == 'n')) {
        *kind = hr.out[0];
        if (hr.out[0] == 'f' && hr.out_len > 2)
            *size = atoll(hr.out + 2);
    } else if (!rc) {
        rc = sw_err_set(e, SW_EPARSE, "host %s: stat %s: unexpected output", c->host.name, what);
    }
    sw_host_result_free(&hr);
    return rc;
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
            return sw_err_set(e, SW_EUNSUPPORTED, "the host could not be opened");
        return sw_host_image_present(&c->host, c->runtime, what, 30000, present, e);
    }
    if (c->remote) {
        char k = 'n';
        long long sz = -1;
        int rc = remote_stat(c, what, &k, &sz, e);
        if (rc)
            return rc;
        *present = k != 'n' && !(k == 'f' && size >= 0 && sz != size);
        return 0;
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
