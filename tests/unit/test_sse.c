/*
 * sse: the incremental event-stream parser.
 *
 * Data-driven: every tests/data/sse/NAME.sse (raw bytes) with NAME.json (expected events, end
 * state, and where the bytes came from) is fed whole, cut at every byte boundary into two reads,
 * one byte at a time, and (for short streams) cut at every pair of boundaries; every way must give
 * exactly the expected events. Then the properties no case file can show: timestamps, limits on a
 * 10 MB line without a realloc storm, stopping from the callback, allocation failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/sse.h>

#include "swtest.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* What one run of the parser produced. */
struct outcome {
    json_t *events; /* array of {type, data, id, done} */
    uint64_t comments;
    int end; /* first non-zero code from feed, else finish's */
    int64_t retry;
};

static int on_ev(void *ud, const struct sw_sse_event *ev)
{
    struct outcome *o = ud;
    json_t *j = json_object();
    json_object_set_new(j, "type", json_string(ev->type));
    json_object_set_new(j, "data", json_stringn(ev->data, ev->data_len));
    json_object_set_new(j, "id", json_string(ev->id));
    json_object_set_new(j, "done", json_boolean(ev->done));
    json_array_append_new(o->events, j);
    assert_int_equal(ev->index, json_array_size(o->events) - 1);
    return 0;
}

static void run_split(const char *buf, size_t n, const size_t *cuts, size_t ncuts, size_t line_max,
                      size_t event_max, struct outcome *o)
{
    struct sw_sse p;
    struct sw_err e;
    o->events = json_array();
    sw_sse_init(&p, line_max, event_max, on_ev, NULL, o);
    size_t prev = 0;
    int rc = 0;
    for (size_t k = 0; k <= ncuts && !rc; k++) {
        size_t to = k < ncuts ? cuts[k] : n;
        rc = sw_sse_feed(&p, buf + prev, to - prev, 1000 + k, &e);
        prev = to;
    }
    if (!rc)
        rc = sw_sse_finish(&p, &e);
    o->end = rc;
    o->comments = sw_sse_comments(&p);
    o->retry = sw_sse_retry_ms(&p);
    sw_sse_close(&p);
}

static const char *end_name(int rc)
{
    if (rc == 0)
        return "ok";
    if (rc == SW_ETRUNC)
        return "SW_ETRUNC";
    if (rc == SW_ERANGE)
        return "SW_ERANGE";
    return sw_strerror(rc);
}

static void check_outcome(const char *name, const char *how, json_t *exp, struct outcome *o)
{
    json_t *ev = json_object_get(exp, "events");
    char why[512];
    snprintf(why, sizeof(why), "%s (%s)", name, how);
    if (json_array_size(ev) != json_array_size(o->events)) {
        char *got = json_dumps(o->events, JSON_COMPACT);
        print_error("%s: expected %zu events, got %s\n", why, json_array_size(ev), got);
        free(got);
        fail();
    }
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i), *g = json_array_get(o->events, i);
        const char *type = json_string_value(json_object_get(x, "type"));
        const char *id = json_string_value(json_object_get(x, "id"));
        json_t *xd = json_object_get(x, "data"), *gd = json_object_get(g, "data");
        if (!json_equal(xd, gd) ||
            strcmp(type ? type : "message", json_string_value(json_object_get(g, "type"))) ||
            strcmp(id ? id : "", json_string_value(json_object_get(g, "id"))) ||
            json_is_true(json_object_get(x, "done")) != json_is_true(json_object_get(g, "done"))) {
            char *got = json_dumps(g, JSON_COMPACT), *want = json_dumps(x, JSON_COMPACT);
            print_error("%s: event %zu: expected %s, got %s\n", why, i, want, got);
            free(got);
            free(want);
            fail();
        }
    }
    const char *end = json_string_value(json_object_get(exp, "end"));
    if (strcmp(end ? end : "ok", end_name(o->end))) {
        print_error("%s: expected end %s, got %s\n", why, end, end_name(o->end));
        fail();
    }
    json_t *c = json_object_get(exp, "comments");
    if (c)
        assert_int_equal(json_integer_value(c), o->comments);
    json_t *r = json_object_get(exp, "retry");
    assert_int_equal(r ? json_integer_value(r) : -1, o->retry);
}

static void run_case(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.sse", dir, name);
    char *buf = NULL;
    size_t n = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(path, 64u << 20, &buf, &n, &e), 0);
    snprintf(path, sizeof(path), "%s/%s.json", dir, name);
    json_error_t je;
    json_t *exp = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!exp) {
        print_error("%s: %s\n", path, je.text);
        fail();
    }
    const char *src = json_string_value(json_object_get(exp, "source"));
    /* every case says where its bytes came from */
    assert_non_null(src);
    assert_true(!strncmp(src, "synthetic", 9) || !strncmp(src, "recorded", 8));
    size_t line_max = (size_t)json_integer_value(json_object_get(exp, "line_max"));
    size_t event_max = (size_t)json_integer_value(json_object_get(exp, "event_max"));

    struct outcome o;
    run_split(buf, n, NULL, 0, line_max, event_max, &o);
    check_outcome(name, "whole", exp, &o);
    json_decref(o.events);

    char how[64];
    for (size_t k = 0; k <= n; k++) {
        run_split(buf, n, &k, 1, line_max, event_max, &o);
        snprintf(how, sizeof(how), "cut at %zu", k);
        check_outcome(name, how, exp, &o);
        json_decref(o.events);
    }
    size_t *cuts = malloc((n + 1) * sizeof(*cuts));
    for (size_t k = 0; k < n; k++)
        cuts[k] = k + 1;
    run_split(buf, n, cuts, n ? n - 1 : 0, line_max, event_max, &o);
    check_outcome(name, "byte by byte", exp, &o);
    json_decref(o.events);
    free(cuts);
    if (n <= 160) {
        for (size_t a = 0; a <= n; a++) {
            for (size_t b = a; b <= n; b++) {
                size_t two[2] = {a, b};
                run_split(buf, n, two, 2, line_max, event_max, &o);
                snprintf(how, sizeof(how), "cut at %zu and %zu", a, b);
                check_outcome(name, how, exp, &o);
                json_decref(o.events);
            }
        }
    }
    json_decref(exp);
    sw_free(buf);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_data_cases(void **state)
{
    const char *dir = swt_src("tests/data/sse");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof(dirbuf), "%s", dir);
    DIR *d = opendir(dirbuf);
    assert_non_null(d);
    char *names[512];
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".sse") && nn < SW_ARRAY_LEN(names))
            names[nn++] = strndup(de->d_name, l - 4);
    }
    closedir(d);
    qsort(names, nn, sizeof(*names), cmp_str);
    assert_true(nn >= 20);
    for (size_t i = 0; i < nn; i++) {
        run_case(dirbuf, names[i]);
        free(names[i]);
    }
}

/* ---- timestamps ---- */

struct times {
    uint64_t t[8], t0[8];
    int64_t off[8];
    int n;
};

static int on_time(void *ud, const struct sw_sse_event *ev)
{
    struct times *t = ud;
    t->t[t->n] = ev->t_ns;
    t->t0[t->n] = ev->t_first_ns;
    t->off[t->n] = ev->offset;
    t->n++;
    return 0;
}

static void test_timestamps(void **state)
{
    struct sw_sse p;
    struct times t = {0};
    sw_sse_init(&p, 0, 0, on_time, NULL, &t);
    /* event 1 starts in read 100 and completes in read 200; event 2 lies whole in read 200
     * but its blank line arrives in read 300 */
    assert_int_equal(sw_sse_feed(&p, "data: a", 7, 100, NULL), 0);
    assert_int_equal(sw_sse_feed(&p, "bc\n\ndata: x\n", 12, 200, NULL), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(sw_sse_feed(&p, "\n: ping\n", 8, 300, NULL), 0);
    assert_int_equal(t.n, 2);
    assert_int_equal(t.t[0], 200);
    assert_int_equal(t.t0[0], 100);
    assert_int_equal(t.off[0], 0);
    assert_int_equal(t.t[1], 300);
    assert_int_equal(t.t0[1], 200);
    assert_int_equal(t.off[1], 11);
    assert_int_equal(sw_sse_offset(&p), 27);
    assert_int_equal(sw_sse_finish(&p, NULL), 0);
    sw_sse_close(&p);
}

/* ---- limits ---- */

static int count_ev(void *ud, const struct sw_sse_event *ev)
{
    (*(int *)ud)++;
    return 0;
}

static void test_huge_line(void **state)
{
    /* 10 MB of one data line in 16 KiB reads (what curl hands over): the error must come as
     * soon as the 1 MiB limit is crossed, with few allocations and a buffer capped at the
     * limit, and the offset of the line */
    size_t chunk = 16384, total = 10u * 1000u * 1000u;
    char *blk = malloc(chunk);
    memset(blk, 'x', chunk);
    memcpy(blk, "data: ", 6);
    struct sw_sse p;
    int n = 0;
    struct sw_err e;
    sw_err_clear(&e);
    sw_sse_init(&p, 1u << 20, 0, count_ev, NULL, &n);
    assert_int_equal(sw_sse_feed(&p, "data: ok\n\n", 10, 1, &e), 0);
    long a0 = sw_alloc_count();
    size_t fed = 0;
    int rc = 0;
    while (fed < total && !rc) {
        rc = sw_sse_feed(&p, blk, chunk, 2, &e);
        fed += chunk;
        memset(blk, 'x', 6);
    }
    assert_int_equal(rc, SW_ERANGE);
    assert_true(fed <= (1u << 20) + chunk);
    assert_true(p.line.cap <= (1u << 20) + 1);
    assert_true(sw_alloc_count() - a0 < 40);
    assert_int_equal(e.offset, 10);
    assert_non_null(strstr(e.msg, "limit"));
    /* sticky */
    assert_int_equal(sw_sse_feed(&p, "\n\n", 2, 3, &e), SW_ERANGE);
    assert_int_equal(sw_sse_finish(&p, &e), SW_ERANGE);
    assert_int_equal(n, 1);
    sw_sse_close(&p);
    /* the same line in one read */
    char *big = malloc(total);
    memset(big, 'y', total);
    memcpy(big, "data: ", 6);
    big[total - 1] = '\n';
    n = 0;
    sw_sse_init(&p, 1u << 20, 0, count_ev, NULL, &n);
    a0 = sw_alloc_count();
    assert_int_equal(sw_sse_feed(&p, big, total, 1, &e), SW_ERANGE);
    assert_true(sw_alloc_count() - a0 < 4);
    sw_sse_close(&p);
    free(big);
    free(blk);
}

static int stop_at_done(void *ud, const struct sw_sse_event *ev)
{
    (*(int *)ud)++;
    return ev->done ? 1 : 0;
}

static void test_stop_from_callback(void **state)
{
    const char *s = "data: a\n\ndata: [DONE]\n\ndata: after\n\n";
    struct sw_sse p;
    int n = 0;
    sw_sse_init(&p, 0, 0, stop_at_done, NULL, &n);
    assert_int_equal(sw_sse_feed(&p, s, strlen(s), 1, NULL), 1);
    assert_int_equal(n, 2);
    assert_true(sw_sse_done_seen(&p));
    assert_int_equal(sw_sse_feed(&p, s, strlen(s), 1, NULL), 1);
    assert_int_equal(n, 2);
    sw_sse_close(&p);
}

static int on_comment(void *ud, const char *text, size_t len, uint64_t t)
{
    struct sw_buf *b = ud;
    sw_buf_append(b, text, len);
    sw_buf_putc(b, '|');
    return 0;
}

static void test_comments(void **state)
{
    struct sw_buf b;
    sw_buf_init(&b, 1024);
    struct sw_sse p;
    sw_sse_init(&p, 0, 0, NULL, on_comment, &b);
    const char *s = ":\n\n: keep-alive\r\n:x\r";
    assert_int_equal(sw_sse_feed(&p, s, strlen(s), 1, NULL), 0);
    assert_string_equal(sw_buf_cstr(&b), "| keep-alive|x|");
    assert_int_equal(sw_sse_finish(&p, NULL), 0);
    sw_sse_close(&p);
    sw_buf_free(&b);
}

/* Two feeds splitting an event; both events must arrive. */
static int sse_two_feeds(void *arg)
{
    const char *s = "event: e\nid: 1\ndata: first line\ndata: second";
    const char *t = " part\n\ndata: x\n\n";
    struct sw_sse p;
    int n = 0;
    struct sw_err e;
    (void)arg;
    sw_sse_init(&p, 0, 0, count_ev, NULL, &n);
    int rc = sw_sse_feed(&p, s, strlen(s), 1, &e);
    if (!rc)
        rc = sw_sse_feed(&p, t, strlen(t), 2, &e);
    if (!rc && n != 2)
        rc = SW_EPARSE;
    sw_sse_close(&p);
    return rc;
}

static void test_alloc_failures(void **state)
{
    (void)state;
    /* fail each allocation in turn: a clean SW_ENOMEM, never a crash, nothing leaked (ASan) */
    assert_true(swt_torture("sse two feeds", sse_two_feeds, NULL, SW_ENOMEM) >= 1);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_cases), cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_huge_line),  cmocka_unit_test(test_stop_from_callback),
        cmocka_unit_test(test_comments),   cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests_name("sse", tests, NULL, NULL);
}
