/*
 * The synchronous convenience over the loop: run one request to completion and hand back its
 * response, for the many one-shot calls (health, models, metrics, a non-streamed chat).
 *
 * What it deliberately does not do: retry, or treat an HTTP error status as a failure unless
 * asked (fail_on_status): the probe battery needs the 400 body of an over-length prompt.
 */
#include "net_internal.h"

#include <string.h>

int sw_net_request(struct sw_net_loop *l, const struct sw_net_req *req, struct sw_net_resp *out,
                   struct sw_err *e)
{
    struct sw_net_loop own;
    bool own_loop = false;
    struct sw_net_xfer x;
    int rc = 0;
    memset(out, 0, sizeof(*out));
    sw_net_xfer_init(&x);
    if (!l) {
        rc = sw_net_loop_init(&own, NULL, e);
        if (rc)
            goto out;
        own_loop = true;
        l = &own;
    }
    x.req = *req;
    rc = sw_net_start(l, &x, e);
    if (rc)
        goto out;
    rc = sw_net_loop_run_until(l, &x);
    if (rc) {
        /* the loop itself broke: nothing else can finish this transfer */
        sw_net_cancel(&x);
        sw__net_xfer_fail(&x, rc, SW_NET_OTHER, "the event loop failed");
    }
    /* run_until may also return early on sw_net_loop_break: wait for this transfer anyway */
    while (x.state == SW_NET_RUNNING && !rc)
        rc = sw_net_loop_run_until(l, &x);
    *out = x.resp;
    memset(&x.resp, 0, sizeof(x.resp));
    rc = out->rc;
    if (rc && e)
        *e = out->err;
out:
    sw_net_xfer_close(&x);
    if (own_loop)
        sw_net_loop_close(&own);
    return rc;
}

/* The caller's template (or an empty request) for method to url, without a body. */
static struct sw_net_req req_from(const struct sw_net_req *tmpl, const char *url,
                                  const char *method)
{
    struct sw_net_req q;
    if (tmpl)
        q = *tmpl;
    else
        memset(&q, 0, sizeof(q));
    q.url = url;
    q.method = method;
    q.body = NULL;
    q.body_len = 0;
    return q;
}

int sw_net_get(struct sw_net_loop *l, const char *url, const struct sw_net_req *tmpl,
               struct sw_net_resp *out, struct sw_err *e)
{
    struct sw_net_req q = req_from(tmpl, url, "GET");
    return sw_net_request(l, &q, out, e);
}

int sw_net_post_json(struct sw_net_loop *l, const char *url, const char *json, size_t len,
                     const struct sw_net_req *tmpl, struct sw_net_resp *out, struct sw_err *e)
{
    struct sw_net_req q = req_from(tmpl, url, "POST");
    q.body = json ? json : "";
    q.body_len = json ? len : 0;
    q.content_type = "application/json";
    return sw_net_request(l, &q, out, e);
}
