/*
 * serve deploy_client: the caller's side of a deploy through serve (sw_serve_deploy): one POST to
 * serve's admin route with an admin client's key, waiting for serve's answer (it comes when the
 * deploy ends), read as JSON.
 *
 * What it does not do: deploy (serve does: bluegreen.c), or read a key from anywhere (the
 * caller passes it; the CLI takes it from the environment, never from argv).
 */
#include <slipway/net.h>
#include <slipway/serve.h>

#include <string.h>

int sw_serve_deploy(const struct sw_serve_deploy_req *q, json_t **out, struct sw_err *e)
{
    *out = NULL;
    if (!q->url || !q->endpoint)
        return sw_err_set(e, SW_EINVAL, "a deploy through serve needs serve's URL and an endpoint");
    if (!q->key || !q->key[0])
        return sw_err_set(e, SW_EINVAL,
                          "a deploy through serve needs an admin client's key "
                          "($SLIPWAY_SERVE_KEY: a --keys name beginning with 'admin')");
    char url[1100];
    size_t ul = strlen(q->url);
    while (ul && q->url[ul - 1] == '/')
        ul--;
    if (ul > 1000)
        return sw_err_set(e, SW_EINVAL, "serve's URL is too long");
    snprintf(url, sizeof(url), "%.*s/admin/deploy", (int)ul, q->url);
    json_t *body = json_pack("{s:s}", "endpoint", q->endpoint);
    if (body && q->drain_s)
        json_object_set_new(body, "drain_s", json_integer(q->drain_s));
    if (body && q->probe_only)
        json_object_set_new(body, "probe_only", json_string(q->probe_only));
    if (body && q->no_worst_case)
        json_object_set_new(body, "worst_case", json_false());
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    struct sw_net_req rq = {0};
    rq.bearer = q->key;
    rq.total_ms = (q->timeout_s ? q->timeout_s : 3600) * 1000u;
    struct sw_net_resp r;
    int rc = sw_net_post_json(NULL, url, text, strlen(text), &rq, &r, e);
    free(text);
    if (rc) {
        sw_net_resp_free(&r);
        return rc;
    }
    json_t *j = sw_json_parse(sw_buf_cstr(&r.body), r.body.len, "serve's answer", e);
    if (!j) {
        sw_net_resp_free(&r);
        return e ? e->code : SW_EPARSE;
    }
    *out = j;
    const char *err = json_string_value(json_object_get(j, "error"));
    const char *emsg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    if (r.status == 200 && json_is_true(json_object_get(j, "ok")))
        rc = 0;
    else
        rc = sw_err_set(e, SW_EGATE, "serve (%ld): %s", r.status,
                        err    ? err
                        : emsg ? emsg
                               : "the deploy failed");
    sw_net_resp_free(&r);
    return rc;
}
