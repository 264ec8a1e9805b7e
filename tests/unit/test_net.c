/*
 * net: the HTTP client core against a real HTTP server on 127.0.0.1 (tests/support/swhttpd)
 * scripted to misbehave in every way the battery must survive: refused, stalled before the first
 * byte, stalled mid-stream, reset mid-body, cut short, empty, a 10 MB line, oversized headers and
 * bodies, 503 then 200, slow headers; plus concurrency on one loop (the streams overlap in time),
 * connection reuse (CURLINFO_NUM_CONNECTS and the server's own count), cancellation from
 * callbacks, the bearer token's confinement, and allocation failures. Every case must end in a
 * classified result, never a hang or a crash. No timing thresholds: only the order of events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/net.h>

#include "swhttpd.h"
#include "swtest.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int setup(void **state)
{
    *state = swh_start();
    return 0;
}

static int teardown(void **state)
{
    swh_stop(*state);
    return 0;
}

static void test_get_json(void **state)
{
    struct swh *s = *state;
    swh_reply(s, "GET", "/v1/models", 200, NULL, "{\"data\":[]}");
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/v1/models"), NULL, &r, &e), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.fail, SW_NET_OK);
    assert_string_equal(sw_buf_cstr(&r.body), "{\"data\":[]}");
    assert_string_equal(sw_net_resp_header(&r, "content-type"), "application/json");
    assert_string_equal(sw_net_resp_header(&r, "SERVER"), "swhttpd");
    assert_null(sw_net_resp_header(&r, "x-nope"));
    assert_int_equal(r.body_bytes, 11);
    assert_int_equal(r.new_connections, 1);
    /* the instants come in order */
    assert_true(r.t.start > 0);
    assert_true(r.t.connected >= r.t.start);
    assert_true(r.t.first_byte >= r.t.connected);
    assert_true(r.t.headers >= r.t.first_byte);
    assert_true(r.t.first_body >= r.t.headers);
    assert_true(r.t.last_byte >= r.t.first_body);
    assert_true(r.t.done >= r.t.last_byte);
    sw_net_resp_free(&r);
    /* a 404 is a reply, not a transport error, unless asked */
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/nothing"), NULL, &r, &e), 0);
    assert_int_equal(r.status, 404);
    sw_net_resp_free(&r);
}

static void test_post_bearer(void **state)
{
    struct swh *s = *state;
    swh_reply(s, "POST", "/v1/chat/completions", 200, NULL, "{}");
    const char *hdrs[] = {"X-Slipway-Test: yes", NULL};
    struct sw_net_req tmpl = {.bearer = "sk-secret-123", .headers = hdrs};
    struct sw_net_resp r;
    struct sw_err e;
    const char *body = "{\"model\":\"m\",\"messages\":[]}";
    assert_int_equal(sw_net_post_json(NULL, swh_url(s, "/v1/chat/completions"), body, strlen(body),
                                      &tmpl, &r, &e),
                     0);
    assert_int_equal(r.status, 200);
    sw_net_resp_free(&r);
    struct swh_request rq;
    assert_true(swh_last_request(s, "/v1/chat/completions", &rq));
    char v[256];
    assert_string_equal(rq.method, "POST");
    assert_string_equal(swh_request_header(&rq, "Authorization", v, sizeof(v)),
                        "Bearer sk-secret-123");
    assert_string_equal(swh_request_header(&rq, "Content-Type", v, sizeof(v)), "application/json");
    assert_string_equal(swh_request_header(&rq, "X-Slipway-Test", v, sizeof(v)), "yes");
    assert_null(swh_request_header(&rq, "Expect", v, sizeof(v)));
    assert_string_equal(rq.body, body);
    swh_request_free(&rq);
    /* a header that would inject a line is refused before anything is sent */
    const char *bad[] = {"X-A: 1\r\nX-B: 2", NULL};
    tmpl.headers = bad;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/x"), &tmpl, &r, &e), SW_EINVAL);
    tmpl.headers = NULL;
    tmpl.bearer = "tok\nen";
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/x"), &tmpl, &r, &e), SW_EINVAL);
    assert_null(strstr(e.msg, "tok"));
    sw_net_resp_free(&r);
}

static void test_redirect_keeps_token_home(void **state)
{
    struct swh *s = *state;
    char loc[512];
    /* "localhost" is another host name to curl than "127.0.0.1" */
    snprintf(
        loc, sizeof(loc),
        "HTTP/1.1 302 Found\r\nLocation: http://localhost:%d/final\r\nContent-Length: 0\r\n\r\n",
        swh_port(s));
    struct swh_step st[] = {{.op = SWH_SEND, .data = loc}, {.op = SWH_END}};
    swh_script(s, "GET", "/start", st);
    swh_reply(s, "GET", "/final", 200, "text/plain", "landed");
    struct sw_net_req tmpl = {.bearer = "sk-home-only", .max_redirects = 3};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/start"), &tmpl, &r, &e), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.redirects, 1);
    assert_string_equal(sw_buf_cstr(&r.body), "landed");
    sw_net_resp_free(&r);
    struct swh_request rq;
    char v[256];
    assert_true(swh_last_request(s, "/start", &rq));
    assert_non_null(swh_request_header(&rq, "Authorization", v, sizeof(v)));
    swh_request_free(&rq);
    assert_true(swh_last_request(s, "/final", &rq));
    assert_null(swh_request_header(&rq, "Authorization", v, sizeof(v)));
    swh_request_free(&rq);
    /* without max_redirects the 302 is the reply */
    tmpl.max_redirects = 0;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/start"), &tmpl, &r, &e), 0);
    assert_int_equal(r.status, 302);
    sw_net_resp_free(&r);
}

static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t al = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &al);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_refused(void **state)
{
    char url[128];
    snprintf(url, sizeof(url), "http://user:pw@127.0.0.1:%d/health?key=secret", closed_port());
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_get(NULL, url, NULL, &r, &e), SW_ENET);
    assert_int_equal(r.fail, SW_NET_REFUSED);
    assert_string_equal(sw_net_fail_name(r.fail), "refused");
    assert_non_null(strstr(e.msg, "refused"));
    /* the URL in the message lost its userinfo and query */
    assert_null(strstr(e.where, "pw"));
    assert_null(strstr(e.where, "secret"));
    assert_non_null(strstr(e.where, "/health?..."));
    assert_int_equal(r.status, 0);
    sw_net_resp_free(&r);
}

static void test_timeout_first_byte(void **state)
{
    struct swh *s = *state;
    struct swh_step st[] = {{.op = SWH_STALL}, {.op = SWH_END}};
    swh_script(s, "POST", "/slow", st);
    struct sw_net_req q = {.url = swh_url(s, "/slow"),
                           .body = "{}",
                           .body_len = 2,
                           .first_byte_ms = 150,
                           .idle_ms = 5000,
                           .total_ms = 10000};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_NET_TIMEOUT_FIRST_BYTE);
    assert_non_null(strstr(e.msg, "first-byte"));
    assert_true(r.t.connected > 0);
    assert_int_equal(r.t.first_byte, 0);
    sw_net_resp_free(&r);
    /* with no first-byte limit, idle guards the wait from the connection on; the total limit
     * would fire instead if the idle deadline were not armed when the connection came up */
    q.first_byte_ms = 0;
    q.idle_ms = 150;
    q.total_ms = 5000;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_NET_TIMEOUT_IDLE);
    sw_net_resp_free(&r);
}

struct evcount {
    int n;
    uint64_t first_t, last_t;
    int cancel_at;
    struct sw_net_xfer *x;
    struct sw_buf data;
};

static int count_event(void *ud, const struct sw_sse_event *ev)
{
    struct evcount *c = ud;
    if (!c->n)
        c->first_t = ev->t_ns;
    c->last_t = ev->t_ns;
    c->n++;
    if (c->data.max)
        sw_buf_append(&c->data, ev->data, ev->data_len);
    if (c->cancel_at && c->n == c->cancel_at)
        sw_net_cancel(c->x);
    return 0;
}

static void test_timeout_idle_midstream(void **state)
{
    struct swh *s = *state;
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    struct swh_step st[] = {{.op = SWH_SEND, .data = head},
                            {.op = SWH_CHUNK, .data = "data: {\"n\":1}\n\n"},
                            {.op = SWH_CHUNK, .data = "data: {\"n\":2}\n\n"},
                            {.op = SWH_STALL},
                            {.op = SWH_END}};
    swh_script(s, "POST", "/stall", st);
    struct evcount c = {0};
    struct sw_net_req q = {.url = swh_url(s, "/stall"),
                           .body = "{}",
                           .body_len = 2,
                           .first_byte_ms = 5000,
                           .idle_ms = 150,
                           .on_event = count_event,
                           .ud = &c};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_NET_TIMEOUT_IDLE);
    assert_non_null(strstr(e.msg, "stalled"));
    assert_int_equal(c.n, 2);
    assert_int_equal(r.status, 200);
    sw_net_resp_free(&r);
}

static void test_timeout_total(void **state)
{
    struct swh *s = *state;
    const char *evs[] = {"data: 1\n\n", "data: 2\n\n", "data: 3\n\n", "data: 4\n\n", "data: 5\n\n",
                         "data: 6\n\n", "data: 7\n\n", "data: 8\n\n", NULL};
    swh_sse(s, "/drip", evs, 80);
    struct evcount c = {0};
    struct sw_net_req q = {.url = swh_url(s, "/drip"),
                           .body = "{}",
                           .body_len = 2,
                           .idle_ms = 5000,
                           .total_ms = 250,
                           .on_event = count_event,
                           .ud = &c};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_NET_TIMEOUT_TOTAL);
    assert_true(c.n < 8);
    sw_net_resp_free(&r);
}

static void test_timeout_connect(void **state)
{
    /* a listener that never accepts, with its queue filled: the kernel drops further SYNs,
     * so a new connect hangs until our deadline */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 0), 0);
    socklen_t al = sizeof(a);
    getsockname(lfd, (struct sockaddr *)&a, &al);
    int fill[4];
    for (int i = 0; i < 4; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&a, sizeof(a));
    }
    sw_sleep_ms(50);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(a.sin_port));
    struct sw_net_req q = {.url = url, .connect_ms = 200};
    struct sw_net_resp r;
    struct sw_err e;
    int rc = sw_net_request(NULL, &q, &r, &e);
    assert_int_equal(rc, SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_NET_TIMEOUT_CONNECT);
    assert_non_null(strstr(e.msg, "connect timeout"));
    sw_net_resp_free(&r);
    for (int i = 0; i < 4; i++)
        close(fill[i]);
    close(lfd);
}

static void test_reset_and_truncation(void **state)
{
    struct swh *s = *state;
    static const char head100[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789";
    struct swh_step reset[] = {{.op = SWH_SEND, .data = head100},
                               {.op = SWH_SLEEP, .ms = 20},
                               {.op = SWH_RESET},
                               {.op = SWH_END}};
    struct swh_step cut[] = {{.op = SWH_SEND, .data = head100}, {.op = SWH_CLOSE}, {.op = SWH_END}};
    struct swh_step empty[] = {{.op = SWH_CLOSE}, {.op = SWH_END}};
    struct swh_step junk[] = {{.op = SWH_SEND, .data = "SSH-2.0-OpenSSH_9.2\r\n\r\n"},
                              {.op = SWH_CLOSE},
                              {.op = SWH_END}};
    swh_script(s, "GET", "/reset", reset);
    swh_script(s, "GET", "/cut", cut);
    swh_script(s, "GET", "/empty", empty);
    swh_script(s, "GET", "/junk", junk);
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/reset"), NULL, &r, &e), SW_ENET);
    assert_int_equal(r.fail, SW_NET_RESET);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_bytes, 10);
    assert_non_null(strstr(e.msg, "reset"));
    sw_net_resp_free(&r);
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/cut"), NULL, &r, &e), SW_ENET);
    assert_int_equal(r.fail, SW_NET_TRUNCATED);
    sw_net_resp_free(&r);
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/empty"), NULL, &r, &e), SW_ENET);
    assert_int_equal(r.fail, SW_NET_EMPTY);
    sw_net_resp_free(&r);
    assert_int_not_equal(sw_net_get(NULL, swh_url(s, "/junk"), NULL, &r, &e), 0);
    assert_int_equal(r.fail, SW_NET_PROTOCOL);
    sw_net_resp_free(&r);
}

static void test_reset_mid_event(void **state)
{
    struct swh *s = *state;
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    struct swh_step st[] = {{.op = SWH_SEND, .data = head},
                            {.op = SWH_CHUNK, .data = "data: {\"n\":1}\n\n"},
                            {.op = SWH_CHUNK, .data = "data: {\"choices\":[{\"del"},
                            {.op = SWH_SLEEP, .ms = 20},
                            {.op = SWH_RESET},
                            {.op = SWH_END}};
    swh_script(s, "POST", "/rst", st);
    /* an event stream closed cleanly but inside an event */
    static const char head_close[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                     "Connection: close\r\n\r\ndata: {\"n\":1}\n\ndata: {\"n\"";
    struct swh_step st2[] = {
        {.op = SWH_SEND, .data = head_close}, {.op = SWH_CLOSE}, {.op = SWH_END}};
    swh_script(s, "POST", "/half", st2);
    struct evcount c = {0};
    struct sw_net_req q = {.url = swh_url(s, "/rst"),
                           .body = "{}",
                           .body_len = 2,
                           .idle_ms = 5000,
                           .on_event = count_event,
                           .ud = &c};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_ENET);
    print_message("reset mid-event: %s: %s\n", sw_net_fail_name(r.fail), e.msg);
    assert_true(r.fail == SW_NET_RESET || r.fail == SW_NET_TRUNCATED);
    assert_int_equal(c.n, 1);
    sw_net_resp_free(&r);
    c.n = 0;
    q.url = swh_url(s, "/half");
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_ETRUNC);
    assert_int_equal(r.fail, SW_NET_TRUNCATED);
    assert_non_null(strstr(e.msg, "inside an event"));
    assert_int_equal(c.n, 1);
    sw_net_resp_free(&r);
}

static void test_huge_line(void **state)
{
    struct swh *s = *state;
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Connection: close\r\n\r\ndata: ok\n\ndata: ";
    char *kib = malloc(1024);
    memset(kib, 'x', 1024);
    struct swh_step st[] = {{.op = SWH_SEND, .data = head},
                            {.op = SWH_REPEAT, .data = kib, .len = 1024, .count = 10 * 1024},
                            {.op = SWH_SEND, .data = "\n\n"},
                            {.op = SWH_CLOSE},
                            {.op = SWH_END}};
    swh_script(s, "POST", "/big", st);
    free(kib);
    struct evcount c = {0};
    struct sw_net_req q = {.url = swh_url(s, "/big"),
                           .body = "{}",
                           .body_len = 2,
                           .idle_ms = 5000,
                           .total_ms = 20000,
                           .sse_line_max = 1u << 20,
                           .on_event = count_event,
                           .ud = &c};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_ERANGE);
    assert_int_equal(r.fail, SW_NET_TOO_BIG);
    assert_non_null(strstr(e.msg, "limit"));
    assert_int_equal(c.n, 1);
    /* it stopped reading soon after the limit, not at the end of the 10 MB */
    assert_true(r.body_bytes < (1u << 20) + (1u << 18));
    sw_net_resp_free(&r);
}

static void test_limits(void **state)
{
    struct swh *s = *state;
    char *big = malloc(2001);
    memset(big, 'b', 2000);
    big[2000] = '\0';
    swh_reply(s, "GET", "/body", 200, "text/plain", big);
    char hdr[4096];
    snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nX-Big: %s\r\nContent-Length: 0\r\n\r\n", big);
    struct swh_step st[] = {{.op = SWH_SEND, .data = hdr}, {.op = SWH_END}};
    swh_script(s, "GET", "/hdr", st);
    free(big);
    struct sw_net_req tmpl = {.body_max = 1000};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/body"), &tmpl, &r, &e), SW_ERANGE);
    assert_int_equal(r.fail, SW_NET_TOO_BIG);
    assert_true(r.body.len <= 1000);
    sw_net_resp_free(&r);
    tmpl.body_max = 0;
    tmpl.header_max = 1024;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/hdr"), &tmpl, &r, &e), SW_ERANGE);
    assert_int_equal(r.fail, SW_NET_TOO_BIG);
    assert_non_null(strstr(e.msg, "headers"));
    sw_net_resp_free(&r);
    tmpl.header_max = 0;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/hdr"), &tmpl, &r, &e), 0);
    assert_int_equal(strlen(sw_net_resp_header(&r, "x-big")), 2000);
    sw_net_resp_free(&r);
    /* one header line of a megabyte: curl refuses it past its own ceiling and calls that "out
     * of memory"; the message names the limit instead */
    static const char head[] = "HTTP/1.1 200 OK\r\nX-Huge: ";
    struct swh_step huge[] = {{.op = SWH_SEND, .data = head, .len = sizeof(head) - 1},
                              {.op = SWH_REPEAT, .data = "h", .len = 1, .count = 1u << 20},
                              {.op = SWH_SEND, .data = "\r\nContent-Length: 0\r\n\r\n"},
                              {.op = SWH_END}};
    swh_script(s, "GET", "/huge", huge);
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/huge"), NULL, &r, &e), SW_ERANGE);
    assert_int_equal(r.fail, SW_NET_TOO_BIG);
    assert_null(strstr(e.msg, "out of memory"));
    assert_non_null(strstr(e.msg, "CURL_MAX_HTTP_HEADER"));
    sw_net_resp_free(&r);
}

static void test_503_then_200(void **state)
{
    struct swh *s = *state;
    swh_reply(
        s, "GET", "/health", 503, NULL,
        "{\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}");
    swh_reply(s, "GET", "/health", 200, NULL, "{\"status\":\"ok\"}");
    struct sw_net_loop l;
    struct sw_err e;
    assert_int_equal(sw_net_loop_init(&l, NULL, &e), 0);
    struct sw_net_req tmpl = {.fail_on_status = true};
    struct sw_net_resp r;
    assert_int_equal(sw_net_get(&l, swh_url(s, "/health"), &tmpl, &r, &e), SW_EHTTP);
    assert_int_equal(r.fail, SW_NET_HTTP_STATUS);
    assert_int_equal(r.status, 503);
    assert_non_null(strstr(e.msg, "503"));
    assert_non_null(strstr(sw_buf_cstr(&r.body), "Loading model"));
    sw_net_resp_free(&r);
    assert_int_equal(sw_net_get(&l, swh_url(s, "/health"), &tmpl, &r, &e), 0);
    assert_int_equal(r.status, 200);
    /* same loop, kept-alive connection: the second call opened none */
    assert_int_equal(r.new_connections, 0);
    sw_net_resp_free(&r);
    assert_int_equal(swh_connections(s), 1);
    sw_net_loop_close(&l);
}

static void test_slow_headers(void **state)
{
    struct swh *s = *state;
    struct swh_step st[] = {{.op = SWH_SEND, .data = "HTTP/1.1 200 OK\r\n"},
                            {.op = SWH_SLEEP, .ms = 300},
                            {.op = SWH_SEND, .data = "Content-Length: 2\r\n\r\nok"},
                            {.op = SWH_END}};
    swh_script(s, "GET", "/slowhead", st);
    struct sw_net_req tmpl = {.idle_ms = 100};
    struct sw_net_resp r;
    struct sw_err e;
    /* headers that stall count as a stalled reply */
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/slowhead"), &tmpl, &r, &e), SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_NET_TIMEOUT_IDLE);
    assert_int_equal(r.t.headers, 0);
    sw_net_resp_free(&r);
    tmpl.idle_ms = 5000;
    assert_int_equal(sw_net_get(NULL, swh_url(s, "/slowhead"), &tmpl, &r, &e), 0);
    assert_string_equal(sw_buf_cstr(&r.body), "ok");
    assert_true(r.t.headers > r.t.first_byte);
    sw_net_resp_free(&r);
}

/* ---- concurrency ---- */

struct par {
    struct sw_net_xfer x;
    struct evcount c;
};

static void run_batch(struct swh *s, struct sw_net_loop *l, struct par *p, int n)
{
    struct sw_err e;
    for (int i = 0; i < n; i++) {
        sw_net_xfer_init(&p[i].x);
        memset(&p[i].c, 0, sizeof(p[i].c));
        p[i].x.req.url = swh_url(s, "/par");
        p[i].x.req.body = "{}";
        p[i].x.req.body_len = 2;
        p[i].x.req.idle_ms = 5000;
        p[i].x.req.on_event = count_event;
        p[i].x.req.ud = &p[i].c;
        assert_int_equal(sw_net_start(l, &p[i].x, &e), 0);
    }
    assert_int_equal(sw_net_loop_active(l), n);
    assert_int_equal(sw_net_loop_run(l), 0);
    assert_int_equal(sw_net_loop_active(l), 0);
}

static void test_concurrency_and_reuse(void **state)
{
    struct swh *s = *state;
    const char *evs[] = {"data: a\n\n", "data: b\n\n", "data: c\n\n", "data: d\n\n", NULL};
    swh_sse(s, "/par", evs, 60);
    enum { N = 4 };
    struct par p[N];
    struct sw_net_loop l;
    struct sw_err e;
    assert_int_equal(sw_net_loop_init(&l, NULL, &e), 0);
    run_batch(s, &l, p, N);
    uint64_t max_first = 0, min_last = UINT64_MAX, max_start = 0, min_done = UINT64_MAX;
    long conns = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(p[i].x.resp.rc, 0);
        assert_int_equal(p[i].c.n, 4);
        max_first = SW_MAX(max_first, p[i].c.first_t);
        min_last = SW_MIN(min_last, p[i].c.last_t);
        max_start = SW_MAX(max_start, p[i].x.resp.t.start);
        min_done = SW_MIN(min_done, p[i].x.resp.t.done);
        conns += p[i].x.resp.new_connections;
        sw_net_xfer_close(&p[i].x);
    }
    /* they overlapped: every stream had its first event before any stream got its last */
    assert_true(max_first < min_last);
    assert_true(max_start < min_done);
    assert_int_equal(conns, N);
    /* a second batch on the same loop reuses the N kept-alive connections */
    run_batch(s, &l, p, N);
    conns = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(p[i].x.resp.rc, 0);
        conns += p[i].x.resp.new_connections;
        sw_net_xfer_close(&p[i].x);
    }
    assert_int_equal(conns, 0);
    assert_int_equal(swh_connections(s), N);
    sw_net_loop_close(&l);
}

/* ---- cancellation and callbacks ---- */

static int seen_done;
static void note_done(void *ud, struct sw_net_xfer *x)
{
    seen_done++;
}

static void test_cancel(void **state)
{
    struct swh *s = *state;
    const char *evs[] = {"data: 1\n\n", "data: 2\n\n", "data: 3\n\n", "data: 4\n\n", NULL};
    swh_sse(s, "/c", evs, 50);
    struct sw_net_loop l;
    struct sw_err e;
    assert_int_equal(sw_net_loop_init(&l, NULL, &e), 0);
    /* from the transfer's own event callback */
    struct sw_net_xfer x;
    struct evcount c = {.cancel_at = 2, .x = &x};
    sw_net_xfer_init(&x);
    x.req.url = swh_url(s, "/c");
    x.req.body = "{}";
    x.req.body_len = 2;
    x.req.on_event = count_event;
    x.req.on_done = note_done;
    x.req.ud = &c;
    seen_done = 0;
    assert_int_equal(sw_net_start(&l, &x, &e), 0);
    assert_int_equal(sw_net_loop_run(&l), 0);
    assert_int_equal(seen_done, 1);
    assert_int_equal(x.resp.rc, SW_EINTR);
    assert_int_equal(x.resp.fail, SW_NET_CANCELLED);
    assert_int_equal(c.n, 2);
    sw_net_xfer_close(&x);
    /* a stalled transfer is cancelled by closing the loop: on_done still runs */
    struct swh_step st[] = {{.op = SWH_STALL}, {.op = SWH_END}};
    swh_script(s, "GET", "/forever", st);
    sw_net_xfer_init(&x);
    x.req.url = swh_url(s, "/forever");
    x.req.on_done = note_done;
    seen_done = 0;
    assert_int_equal(sw_net_start(&l, &x, &e), 0);
    event_base_loop(sw_net_loop_base(&l), EVLOOP_NONBLOCK);
    sw_net_loop_close(&l);
    assert_int_equal(seen_done, 1);
    assert_int_equal(x.resp.fail, SW_NET_CANCELLED);
    sw_net_xfer_close(&x);
}

static int head_says_no(void *ud, struct sw_net_xfer *x)
{
    return x->resp.status == 200 ? SW_EMISMATCH : 0;
}

struct chunks {
    int n;
    uint64_t prev;
    bool ordered;
    size_t bytes;
};

static int on_chunk(void *ud, struct sw_net_xfer *x, const char *p, size_t n, uint64_t t)
{
    struct chunks *c = ud;
    if (t < c->prev || t < x->resp.t.start)
        c->ordered = false;
    c->prev = t;
    c->n++;
    c->bytes += n;
    return 0;
}

static void test_callbacks(void **state)
{
    struct swh *s = *state;
    swh_reply(s, "GET", "/h", 200, "text/plain", "hello");
    const char *evs[] = {"data: 1\n\n", "data: 2\n\n", "data: 3\n\n", NULL};
    swh_sse(s, "/raw", evs, 20);
    struct sw_net_req q = {.url = swh_url(s, "/h"), .on_head = head_says_no};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_EMISMATCH);
    assert_int_equal(r.fail, SW_NET_ABORTED);
    sw_net_resp_free(&r);
    /* raw body pieces with their arrival times, in order */
    struct chunks c = {.ordered = true};
    struct sw_net_req q2 = {
        .url = swh_url(s, "/raw"), .method = "POST", .body = "", .on_data = on_chunk, .ud = &c};
    assert_int_equal(sw_net_request(NULL, &q2, &r, &e), 0);
    assert_true(c.ordered);
    assert_true(c.n >= 3);
    assert_int_equal(c.bytes, 27);
    assert_int_equal(r.body_bytes, 27);
    assert_int_equal(r.body.len, 0);
    assert_true(c.prev <= r.t.done);
    sw_net_resp_free(&r);
}

static void test_redact(void **state)
{
    char b[256];
    assert_string_equal(sw_net_redact_url("https://u:p@hf.co/a/b?X-Amz-Signature=zz", b, sizeof(b)),
                        "https://hf.co/a/b?...");
    assert_string_equal(sw_net_redact_url("http://127.0.0.1:8080/health", b, sizeof(b)),
                        "http://127.0.0.1:8080/health");
    assert_string_equal(sw_net_redact_url("http://h/p#frag", b, sizeof(b)), "http://h/p");
    assert_string_equal(sw_net_fail_name(SW_NET_TIMEOUT_IDLE), "timeout_idle");
    assert_string_equal(sw_net_fail_name((enum sw_net_fail)999), "unknown");
}

static void test_alloc_failures(void **state)
{
    struct swh *s = *state;
    swh_reply(s, "GET", "/a", 200, NULL, "{\"ok\":true}");
    const char *url = swh_url(s, "/a");
    int ok = 0, oom = 0;
    for (long k = 1; k < 40; k++) {
        struct sw_net_resp r;
        struct sw_err e;
        sw_alloc_fail_at(k);
        int rc = sw_net_get(NULL, url, NULL, &r, &e);
        sw_alloc_fail_at(0);
        if (rc == 0) {
            assert_string_equal(sw_buf_cstr(&r.body), "{\"ok\":true}");
            ok++;
        } else {
            assert_int_equal(rc, SW_ENOMEM);
            oom++;
        }
        sw_net_resp_free(&r);
    }
    assert_true(oom > 0);
    assert_true(ok > 0);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_post_bearer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirect_keeps_token_home, setup, teardown),
        cmocka_unit_test(test_refused),
        cmocka_unit_test_setup_teardown(test_timeout_first_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_idle_midstream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_total, setup, teardown),
        cmocka_unit_test(test_timeout_connect),
        cmocka_unit_test_setup_teardown(test_reset_and_truncation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_mid_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_huge_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_503_then_200, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrency_and_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callbacks, setup, teardown),
        cmocka_unit_test(test_redact),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests_name("net", tests, NULL, NULL);
}
