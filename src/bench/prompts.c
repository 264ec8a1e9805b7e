/*
 * bench/prompts: what a run sends. Synthetic prompts are met to a depth from a calibration pair
 * of short requests (a minimal prompt, then one of CAL_WORDS filler words): the template's
 * overhead and the tokens per filler word, so a depth is met to within a few tokens (the
 * measured prompt_tokens is what the report shows beside the asked depth). Or the requests come
 * from a JSONL file of chat requests, one object with messages a line.
 *
 * What it does not do: trust a count that cannot be (the calibration request is checked like
 * any other: its count would set every depth).
 */
#include "run_internal.h"

#include <math.h>
#include <string.h>

#define CAL_WORDS 256

/* One short request, synchronously; *prompt_tokens from its usage. */
static int one_prompt(struct run *r, int64_t words, int64_t *prompt_tokens, struct sw_err *e)
{
    struct sw_bench_seen asked;
    char *body = sw__bench_make_body(r, words, 1, ++r->nonce, 0, &asked);
    if (!body)
        return sw_err_set(e, SW_ENOMEM, "bench: out of memory");
    struct flight f;
    memset(&f, 0, sizeof(f));
    sw_openai_result_init(&f.res, 0, 0);
    f.run = r;
    struct sw_net_req q;
    memset(&q, 0, sizeof(q));
    q.url = r->url;
    q.bearer = r->o->api_key;
    q.body = body;
    q.body_len = strlen(body);
    q.total_ms = r->o->timeout_ms ? r->o->timeout_ms : 600000u;
    q.fail_on_status = true;
    q.on_event = sw__bench_on_event;
    q.ud = &f;
    struct sw_net_resp resp;
    int rc = sw_net_request(&r->loop, &q, &resp, e);
    if (!rc && f.res.error.present) {
        sw_redact(f.res.error.message, r->o->api_key);
        rc = sw_err_set(e, SW_EHTTP, "%s: the calibration request failed: %s", r->o->url,
                        f.res.error.message);
    }
    if (!rc) {
        /* the depths are met from this count: a claim that cannot be would set them all */
        asked.elapsed_ms =
            resp.t.done > resp.t.start ? (double)(resp.t.done - resp.t.start) / 1e6 : NAN;
        asked.cum = f.cum;
        asked.ncum = f.res.nrecs;
        rc = sw_bench_check(&f.res, &asked, e);
        if (rc)
            sw_err_prefix(e, "%s: the calibration request", r->o->url);
    }
    if (!rc) {
        int64_t p = f.res.usage.present ? f.res.usage.prompt_tokens : -1;
        if (p < 0 && f.res.timings.present)
            p = f.res.timings.prompt_n + SW_MAX(f.res.timings.cache_n, 0);
        if (p < 0)
            rc = sw_err_set(e, SW_EHTTP,
                            "%s: the server reports no prompt token count (no usage, no "
                            "timings): depths cannot be met",
                            r->o->url);
        *prompt_tokens = p;
    } else if (resp.status && resp.body.len) {
        struct sw_openai_error oe;
        sw_openai_parse_error(resp.body.data, resp.body.len, resp.status, &oe);
        sw_redact(oe.message, r->o->api_key);
        sw_err_set(e, rc, "%s: HTTP %ld: %.300s", r->o->url, resp.status, oe.message);
    }
    sw_net_resp_free(&resp);
    sw_openai_result_free(&f.res);
    sw_free(f.cum);
    sw_free(f.srv_ms);
    sw_free(f.emit);
    sw_free(body);
    return rc;
}

int sw__bench_calibrate(struct run *r, struct sw_err *e)
{
    int64_t p0 = 0, p1 = 0;
    int rc = one_prompt(r, 0, &p0, e);
    if (!rc)
        rc = one_prompt(r, CAL_WORDS, &p1, e);
    if (rc)
        return rc;
    r->overhead = p0;
    r->tok_per_word = p1 > p0 ? (double)(p1 - p0) / CAL_WORDS : 1.0;
    r->cal_words = r->cal_tokens = 0;
    if (p1 > p0)
        sw__bench_learn_words(r, CAL_WORDS, p1);
    return 0;
}

int sw__bench_load_file(struct run *r, const char *path, struct sw_err *e)
{
    char *data = NULL;
    size_t len = 0;
    int rc = sw_read_file(path, 256u * 1024u * 1024u, &data, &len, e);
    if (rc)
        return rc;
    size_t line = 0;
    char *p = data, *end = data + len;
    while (!rc && p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        if (n && !(n == 1 && p[0] == '\r')) {
            char where[4200];
            snprintf(where, sizeof(where), "%s:%zu", path, line);
            json_t *j = sw_json_parse(p, n, where, e);
            if (!j) {
                rc = e && e->code ? e->code : SW_EPARSE;
                break;
            }
            if (!json_is_object(j) || !json_is_array(json_object_get(j, "messages"))) {
                json_decref(j);
                rc = sw_err_set(e, SW_EPARSE, "%s: not a chat request (an object with messages)",
                                where);
                break;
            }
            json_t **f = sw_realloc(r->file, (r->nfile + 1) * sizeof(*f));
            if (!f) {
                json_decref(j);
                rc = sw_err_set(e, SW_ENOMEM, "%s: out of memory", where);
                break;
            }
            r->file = f;
            r->file[r->nfile++] = j;
        }
        p += n + 1;
    }
    sw_free(data);
    if (!rc && !r->nfile)
        rc = sw_err_set(e, SW_EINVAL, "%s: no request in the file", path);
    return rc;
}
