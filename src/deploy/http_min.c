/*
 * deploy/http_min: the two requests deploy makes itself (GET /health while the engine loads, one
 * POST for the liveness generation), as blocking libcurl easy calls.
 *
 * Temporary by design: net (issue 4) owns HTTP; when its synchronous wrapper is on main, deploy
 * calls it and this file goes. It keeps no state, follows no redirects, and bounds every body.
 */
#include "deploy_internal.h"

#include <curl/curl.h>
#include <string.h>

struct sink {
    struct sw_buf *b;
    bool over;
};

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
    struct sink *s = ud;
    size_t n = sz * nm;
    if (s->b && !s->over && sw_buf_append(s->b, p, n) != 0)
        s->over = true; /* keep the head, drop the rest; the status is what matters */
    return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    volatile sig_atomic_t *stop = ud;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return stop && *stop ? 1 : 0;
}

int sw__http(const char *method, const char *url, const char *body, const char *bearer,
             unsigned timeout_ms, volatile sig_atomic_t *stop, int *status, struct sw_buf *resp,
             struct sw_err *e)
{
    static bool inited;
    if (!inited) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        inited = true;
    }
    *status = 0;
    CURL *c = curl_easy_init();
    if (!c)
        return sw_err_set(e, SW_ENOMEM, "curl_easy_init failed");
    struct curl_slist *h = NULL;
    struct sink s = {resp, false};
    char auth[1024];
    int rc = 0;
    h = curl_slist_append(h, "Content-Type: application/json");
    if (bearer && *bearer) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", bearer);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)SW_MIN(timeout_ms, 5000u));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)stop);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (method && strcmp(method, body ? "POST" : "GET"))
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OK) {
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        *status = (int)code;
    } else {
        rc =
            sw_err_set(e, SW_ENET, "%s %s: %s", body ? "POST" : "GET", url, curl_easy_strerror(cc));
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    memset(auth, 0, sizeof(auth));
    return rc;
}
