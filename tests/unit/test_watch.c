/*
 * watch (src/watch/): the classification of status's look (every state from the fields status
 * reports), the fleet's watch:/alert:/schedule: read with defaults and refused with the file's
 * line and column, the watch_events table's keys (an action key recorded twice is refused:
 * what makes a restarted watch act once), the metrics page passing `promtool check metrics`
 * (a missing promtool fails the test, naming it), an alert delivered to an exec hook on stdin,
 * a schedule's window, and render --watch's unit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swhttpd.h"
#include "swtest.h"
#include "watch/watch_internal.h"

#include <slipway/deploy.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/watch.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static json_t *J(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s: %s", je.text, text);
    return j;
}

static const char FLEET[] = "version: 1\n"
                            "hosts:\n"
                            "  h1: {transport: local}\n"
                            "endpoints:\n"
                            "  e1:\n"
                            "    host: h1\n"
                            "    engine: llama.cpp\n"
                            "    payload: {path: /models/x.gguf}\n"
                            "    shape: {ctx_size: 4096}\n"
                            "    free_band: {min: 2GiB, max: 3GiB}\n"
                            "    watch: {interval: 10s, restart: {max: 2, window: 10m}, "
                            "rollback_after: 4}\n";

static struct sw_fleet *load(const char *text, struct sw_err *e)
{
    struct sw_fleet *f = NULL;
    struct sw_fleet_opts o = {.getenv = sw_fleet_no_environ};
    sw_fleet_load_mem("fleet.yaml", text, strlen(text), &o, &f, e);
    return f;
}

static enum sw_watch_state cls(const char *st, const struct sw_fleet_endpoint *ep, int64_t prev)
{
    json_t *j = J(st);
    char why[512];
    enum sw_watch_state s = sw_watch_classify(j, ep, prev, why, sizeof(why));
    assert_true(why[0] != '\0');
    json_decref(j);
    return s;
}

#define UNIT_OK  "\"unit\": {\"active\": \"active\", \"sub\": \"running\", \"restarts\": 0}"
#define SHAPE_OK "\"shape\": {\"as_rendered\": true, \"installed\": true, \"drift\": []}"

static void test_classify(void **state)
{
    (void)state;
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_fleet *f = load(FLEET, &e);
    assert_non_null(f);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "e1");
    assert_int_equal(
        cls("{\"reached\": false, \"host\": \"h1\", \"unreachable\": \"deadline\"}", ep, -1),
        SW_WATCH_UNREACHABLE);
    assert_int_equal(
        cls("{\"reached\": true, " UNIT_OK ", " SHAPE_OK
            ", \"health\": {\"status\": 200}, \"liveness\": {\"ok\": true, \"ms\": 40},"
            " \"serving\": true}",
            ep, 0),
        SW_WATCH_SERVING);
    /* the operator's vLLM: /health 200 with a dead engine */
    assert_int_equal(cls("{\"reached\": true, " UNIT_OK ", " SHAPE_OK
                         ", \"health\": {\"status\": 200}, \"liveness\": {\"ok\": false, "
                         "\"detail\": \"timed out\"}, \"serving\": false}",
                         ep, 0),
                     SW_WATCH_DEAD_GENERATION);
    assert_int_equal(cls("{\"reached\": true, \"unit\": {\"active\": \"activating\", \"sub\": "
                         "\"auto-restart\", \"restarts\": 51}, \"health\": {\"status\": 0}, "
                         "\"liveness\": {\"ok\": false}}",
                         ep, 50),
                     SW_WATCH_CRASH_LOOP);
    /* NRestarts rising between looks while not serving */
    assert_int_equal(cls("{\"reached\": true, \"unit\": {\"active\": \"activating\", \"sub\": "
                         "\"start\", \"restarts\": 3}, \"health\": {\"status\": 0}, "
                         "\"liveness\": {\"ok\": false}}",
                         ep, 2),
                     SW_WATCH_CRASH_LOOP);
    assert_int_equal(cls("{\"reached\": true, \"unit\": {\"active\": \"failed\", \"sub\": "
                         "\"failed\", \"restarts\": 0, \"result\": \"exit-code\"}, "
                         "\"health\": {\"status\": 0}, \"liveness\": {\"ok\": false}}",
                         ep, 0),
                     SW_WATCH_DOWN);
    assert_int_equal(cls("{\"reached\": true, " UNIT_OK
                         ", \"shape\": {\"as_rendered\": false, \"installed\": true, \"drift\": "
                         "[{\"file\": \"unit\", \"line\": 3}]}, \"health\": {\"status\": 200}, "
                         "\"liveness\": {\"ok\": true}, \"serving\": true}",
                         ep, 0),
                     SW_WATCH_DRIFTED);
    /* 1 GiB free: below the band's 2 GiB */
    assert_int_equal(cls("{\"reached\": true, " UNIT_OK ", " SHAPE_OK
                         ", \"health\": {\"status\": 200}, \"liveness\": {\"ok\": true}, "
                         "\"serving\": true, \"devices\": {\"tool\": \"nvidia-smi\", \"readings\": "
                         "[{\"index\": 0, \"free_bytes\": 1073741824}]}}",
                         ep, 0),
                     SW_WATCH_MEMORY_OUT_OF_BAND);
    assert_true(sw_watch_state_needs_action(SW_WATCH_DEAD_GENERATION));
    assert_false(sw_watch_state_needs_action(SW_WATCH_UNREACHABLE));
    assert_false(sw_watch_state_needs_action(SW_WATCH_DRIFTED));
    sw_fleet_free(f);
}

static void test_policy(void **state)
{
    (void)state;
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_fleet *f = load(FLEET, &e);
    assert_non_null(f);
    struct sw_watch_policy p;
    assert_int_equal(sw_watch_policy_read(f, sw_fleet_endpoint(f, "e1"), 0, &p, &e), 0);
    assert_int_equal(p.interval_ms, 10000);
    assert_int_equal(p.restart_max, 2);
    assert_int_equal(p.restart_window_ms, 600000);
    assert_int_equal(p.rollback_after, 4);
    sw_fleet_free(f);

    /* a bad value names the fleet file, line and column of the endpoint's watch: */
    char text[2048];
    snprintf(text, sizeof(text), "%.*swatch: {interval: soon}\n",
             (int)(strstr(FLEET, "watch:") - FLEET), FLEET);
    f = load(text, &e);
    assert_non_null(f);
    assert_int_equal(sw_watch_policy_read(f, sw_fleet_endpoint(f, "e1"), 0, &p, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "watch.interval"));
    assert_int_equal(e.line, 11);
    sw_fleet_free(f);

    /* alert: and schedule: at the top */
    snprintf(text, sizeof(text),
             "%salert:\n  - {exec: 'cat > /dev/null', deadline: 5s, retries: 1}\n"
             "  - {post: 'http://127.0.0.1:9/hook'}\n"
             "schedule:\n  - {name: nightly, endpoint: e1, run: 'true', every: 24h, window: "
             "'01:00-05:00'}\n",
             FLEET);
    sw_err_clear(&e);
    f = load(text, &e);
    assert_non_null(f);
    assert_int_equal(sw_watch_check_fleet(f, &e), 0);
    sw_fleet_free(f);
    snprintf(text, sizeof(text), "%sschedule:\n  - {name: x, endpoint: nobody, run: 'true'}\n",
             FLEET);
    f = load(text, &e);
    assert_non_null(f);
    assert_int_equal(sw_watch_check_fleet(f, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "no endpoint named 'nobody'"));
    sw_fleet_free(f);
    snprintf(text, sizeof(text), "%salert:\n  - {exec: 'x', post: 'http://a'}\n", FLEET);
    f = load(text, &e);
    assert_non_null(f);
    assert_int_equal(sw_watch_check_fleet(f, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "exactly one"));
    sw_fleet_free(f);
}

static void test_window(void **state)
{
    (void)state;
    struct sw__watch_window w = {.set = true, .start_min = 60, .end_min = 300};
    int64_t left = 0;
    assert_true(sw__watch_window_in(&w, 86400 * 3 + 3600 + 60, &left));
    assert_int_equal(left, (300 * 60 - 3660) * 1000LL);
    assert_false(sw__watch_window_in(&w, 86400 * 3 + 300 * 60, &left));
    struct sw__watch_window night = {.set = true, .start_min = 23 * 60, .end_min = 60};
    assert_true(sw__watch_window_in(&night, 86400 + 23 * 3600 + 30 * 60, &left));
    assert_int_equal(left, 90 * 60 * 1000LL);
    assert_true(sw__watch_window_in(&night, 86400 + 30 * 60, &left));
    assert_false(sw__watch_window_in(&night, 86400 + 12 * 3600, NULL));
}

static void test_ledger_keys(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    struct sw_ledger l;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_ledger_open(&l, swt_join(dir, "l.sqlite"), NULL, &e), 0);
    json_t *ev = J("{\"why\": \"health 200, generation failed\"}");
    struct sw_ledger_watch_event o = {
        .endpoint = "e1", .kind = "observation", .state = "dead_generation", .evidence = ev};
    int64_t id = 0;
    assert_int_equal(sw_ledger_record_watch(&l, &o, &id, &e), 0);
    assert_true(id > 0);
    struct sw_ledger_watch_event a = {.endpoint = "e1",
                                      .kind = "action",
                                      .state = "dead_generation",
                                      .action = "restart",
                                      .action_key = "e1#1#restart#1",
                                      .outcome = "started"};
    assert_int_equal(sw_ledger_record_watch(&l, &a, NULL, &e), 0);
    /* the same key again: refused, nothing recorded */
    assert_int_equal(sw_ledger_record_watch(&l, &a, NULL, &e), SW_EEXIST);
    bool found = false;
    assert_int_equal(sw_ledger_watch_has_key(&l, "e1#1#restart#1", &found, &e), 0);
    assert_true(found);
    assert_int_equal(sw_ledger_watch_has_key(&l, "e1#1#restart#2", &found, &e), 0);
    assert_false(found);
    struct sw_ledger_watch_event bad = {.endpoint = "e1", .kind = "dance", .state = "x"};
    assert_int_equal(sw_ledger_record_watch(&l, &bad, NULL, &e), SW_EINVAL);
    json_t *rows = NULL;
    assert_int_equal(sw_ledger_watch_list(&l, "e1", NULL, 0, &rows, &e), 0);
    assert_int_equal(json_array_size(rows), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "action_key")),
                        "e1#1#restart#1");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(rows, 1), "evidence"), "why")),
                        "health 200, generation failed");
    json_decref(rows);
    assert_int_equal(sw_ledger_watch_list(&l, NULL, "observation", 0, &rows, &e), 0);
    assert_int_equal(json_array_size(rows), 1);
    json_decref(rows);
    json_decref(ev);
    sw_ledger_close(&l);
    swt_tmpdir_free(dir);
}

/* promtool must be here: a missing one fails (scripts/deps.sh installs Debian's prometheus). */
static void promtool_check(const char *text)
{
    struct swt_run r;
    const char *which[] = {"sh", "-c", "command -v promtool", NULL};
    assert_int_equal(swt_run(which, NULL, 10, &r), 0);
    bool have = r.status == 0;
    swt_run_free(&r);
    if (!have)
        fail_msg("promtool is missing (Debian's prometheus package; scripts/deps.sh installs it): "
                 "the metrics page cannot be checked");
    const char *argv[] = {"promtool", "check", "metrics", NULL};
    assert_int_equal(swt_run(argv, text, 30, &r), 0);
    if (r.status != 0)
        fail_msg("promtool check metrics: exit %d: %s%s\n%s", r.status, r.out, r.err, text);
    swt_run_free(&r);
}

static void test_metrics_promtool(void **state)
{
    (void)state;
    json_t *snap = J(
        "[{\"endpoint\": \"frank-primary\", \"host\": \"dankserver\", \"state\": \"serving\", "
        "\"looked\": true, \"reachable\": true, \"proof_ms\": 412.5, \"restarts\": 0, "
        "\"drift\": 0, \"actions\": 1, \"looks\": 7, \"decode_tok_s\": 106.8, "
        "\"prefill_tok_s\": 3814, \"devices\": [{\"index\": 0, \"used_bytes\": 22972000000, "
        "\"free_bytes\": 1153000000}, {\"index\": 1, \"used_bytes\": 1, \"free_bytes\": 2}]},"
        " {\"endpoint\": \"frank-small\", \"host\": \"dank\\\"claw\", \"state\": \"unreachable\","
        " \"looked\": true, \"reachable\": false, \"looks\": 3, \"actions\": 0, \"devices\": []}]");
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_watch_metrics_text(snap, &b, NULL), 0);
    const char *t = sw_buf_cstr(&b);
    assert_non_null(strstr(t, "slipway_watch_endpoint_state{endpoint=\"frank-primary\","
                              "host=\"dankserver\",state=\"serving\"} 1"));
    assert_non_null(strstr(t, "slipway_watch_host_reachable{host=\"dank\\\"claw\"} 0"));
    assert_non_null(strstr(t, "slipway_watch_bench_decode_tokens_per_second{endpoint=\"frank-"
                              "primary\",host=\"dankserver\"} 106.8"));
    assert_null(strstr(t, "slipway_watch_proof_latency_seconds{endpoint=\"frank-small\""));
    promtool_check(t);
    sw_buf_free(&b);
    json_decref(snap);
}

static void test_alert_exec(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char text[4096];
    snprintf(text, sizeof(text),
             "%salert:\n  - {exec: 'cat > %s/got.json', deadline: 5s}\n"
             "  - {exec: ['sh', '-c', 'exit 3'], retries: 1, deadline: 2s}\n",
             FLEET, dir);
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_fleet *f = load(text, &e);
    assert_non_null(f);
    json_t *ev = J("{\"endpoint\": \"e1\", \"state\": \"dead_generation\", \"evidence\": "
                   "{\"liveness\": {\"ok\": false}}}");
    size_t ok = 0;
    assert_int_equal(sw_watch_alert(f, ev, &ok, &e), SW_ECHILD);
    assert_int_equal(ok, 1);
    assert_non_null(strstr(e.msg, "exit 3"));
    assert_non_null(strstr(e.msg, "try 2 of 2"));
    struct swt_run r;
    const char *cat[] = {"cat", swt_join(dir, "got.json"), NULL};
    assert_int_equal(swt_run(cat, NULL, 10, &r), 0);
    json_t *got = J(r.out);
    assert_true(json_equal(got, ev));
    json_decref(got);
    swt_run_free(&r);
    json_decref(ev);
    sw_fleet_free(f);
    swt_tmpdir_free(dir);
}

/* a POST hook: the first try gets 503, the retry 200; the body is the event */
static void test_alert_post(void **state)
{
    (void)state;
    struct swh *h = swh_start();
    swh_reply(h, "POST", "/hook", 503, NULL, "{\"error\": \"later\"}");
    swh_reply(h, "POST", "/hook", 200, NULL, "{}");
    char text[4096];
    snprintf(text, sizeof(text), "%salert:\n  - {post: '%s', deadline: 2s, retries: 1}\n", FLEET,
             swh_url(h, "/hook"));
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_fleet *f = load(text, &e);
    assert_non_null(f);
    json_t *ev = J("{\"endpoint\": \"e1\", \"state\": \"crash_loop\"}");
    size_t ok = 0;
    assert_int_equal(sw_watch_alert(f, ev, &ok, &e), 0);
    assert_int_equal(ok, 1);
    assert_int_equal(swh_hits(h, "/hook"), 2);
    struct swh_request rq;
    assert_true(swh_last_request(h, "/hook", &rq));
    json_t *got = J(rq.body);
    assert_true(json_equal(got, ev));
    json_decref(got);
    swh_request_free(&rq);
    json_decref(ev);
    sw_fleet_free(f);
    swh_stop(h);
}

static void test_spawn_deadline(void **state)
{
    (void)state;
    json_t *cmd = json_string("sleep 30");
    int code = 0;
    bool over = false;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw__watch_spawn(cmd, NULL, NULL, 300, NULL, &code, &over, &e), 0);
    assert_true(over);
    assert_int_equal(code, -1);
    json_decref(cmd);
}

static void test_render_unit(void **state)
{
    (void)state;
    struct sw_buf b;
    struct sw_err e;
    sw_err_clear(&e);
    sw_buf_init(&b, 1 << 16);
    assert_int_equal(sw_watch_unit_render("/usr/bin/slipway", "/etc/slipway/my fleet.yaml", NULL,
                                          "127.0.0.1:9464", &b, &e),
                     0);
    assert_non_null(strstr(sw_buf_cstr(&b), "ExecStart=/usr/bin/slipway watch --fleet "
                                            "\"/etc/slipway/my fleet.yaml\" --metrics "
                                            "127.0.0.1:9464\n"));
    assert_non_null(strstr(sw_buf_cstr(&b), "Restart=always\n"));
    assert_int_equal(sw_watch_unit_render("slipway", "fleet.yaml", NULL, NULL, &b, &e), SW_EINVAL);
    /* a line break in a path would start a unit key of its own */
    sw_buf_reset(&b);
    assert_int_equal(sw_watch_unit_render("/usr/bin/slipway", "/etc/f.yaml\nExecStartPre=/x", NULL,
                                          NULL, &b, &e),
                     SW_EINVAL);
    assert_non_null(strstr(e.msg, "line break"));
    assert_null(strstr(sw_buf_cstr(&b), "ExecStartPre"));
    sw_buf_free(&b);
}

/* logs of an endpoint `up` runs here: up's record names its log; the last N lines, the engine's
 * failure line classified, --since inside the run by llama.cpp's time since start, --boot
 * refused. The record is this test process's own (alive, so its checks pass). */
struct got {
    char text[2048];
    int n, classified;
    char cls[64];
};

static void got_line(void *ctx, const char *line, const char *c, const char *phase)
{
    struct got *g = ctx;
    size_t l = strlen(g->text);
    snprintf(g->text + l, sizeof(g->text) - l, "%s%s\n", c ? "!! " : "", line);
    g->n++;
    if (c) {
        g->classified++;
        snprintf(g->cls, sizeof(g->cls), "%s/%s", c, phase ? phase : "");
    }
}

static int logs_of(const struct sw_fleet *f, struct sw_watch_logs_opts *o, struct got *g,
                   struct sw_err *e)
{
    memset(g, 0, sizeof(*g));
    o->on_line = got_line;
    o->ctx = g;
    return sw_watch_logs(f, "e1", o, e);
}

/* Schedules' slots with an injected clock: anchored at the window's start (a window across
 * midnight is one slot of a daily job), an hourly job's slots outside its window have no time,
 * and the slots a watch that was down missed: only those whose window time is over, each
 * counted once, never the current one while its window is open (it runs then, once). */
static bool ran_set(void *ctx, int64_t k)
{
    const int64_t *v = ctx;
    for (; *v != INT64_MIN; v++)
        if (*v == k)
            return true;
    return false;
}

static void test_slots(void **state)
{
    (void)state;
    const int64_t H = 3600000, D = 24 * H, day = 20000 * D; /* a midnight, UTC */
    int64_t o = 0, c = 0, first = 0, last = 0;
    struct sw__watch_window night = {.set = true, .start_min = 23 * 60, .end_min = 2 * 60};
    int64_t k = sw__watch_slot_of(D, &night, day + 23 * H + H / 2);
    assert_int_equal(sw__watch_slot_of(D, &night, day + D + H + H / 2), k); /* 01:30 next day */
    assert_int_equal(sw__watch_slot_of(D, &night, day + D + 23 * H), k + 1);
    assert_true(sw__watch_slot_span(D, &night, k, &o, &c));
    assert_int_equal(o, day + 23 * H);
    assert_int_equal(c, day + D + 2 * H);
    /* hourly inside 01:00-05:00: the 02:00 slot has its hour, the 06:00 one none */
    struct sw__watch_window w = {.set = true, .start_min = 60, .end_min = 300};
    assert_true(sw__watch_slot_span(H, &w, sw__watch_slot_of(H, &w, day + 2 * H + 60000), &o, &c));
    assert_int_equal(o, day + 2 * H);
    assert_int_equal(c, day + 3 * H);
    assert_false(sw__watch_slot_span(H, &w, sw__watch_slot_of(H, &w, day + 6 * H), &o, &c));
    /* every 48 h: a slot spans two windows, from the first's start to the second's end */
    assert_true(sw__watch_slot_span(2 * D, &w, sw__watch_slot_of(2 * D, &w, day + 2 * H), &o, &c));
    assert_int_equal(c - o, D + 4 * H);
    /* no window: the slot is the slot */
    struct sw__watch_window none = {0};
    assert_int_equal(sw__watch_slot_of(5 * 60000, &none, day + 7 * 60000), day / 300000 + 1);
    /* daily 01:00-05:00; the last settled slot is day 1's; watch comes back on day 4 at 03:00:
     * days 2 and 3 are missed (one gap), day 4 is not (its window is open: it runs) */
    int64_t d1 = sw__watch_slot_of(D, &w, day + D + 2 * H);
    int64_t none_ran[] = {INT64_MIN};
    assert_int_equal(
        sw__watch_missed(D, &w, d1, day + 4 * D + 3 * H, ran_set, none_ran, &first, &last), 2);
    assert_int_equal(first, d1 + 1);
    assert_int_equal(last, d1 + 2);
    int64_t day3_ran[] = {d1 + 2, INT64_MIN};
    assert_int_equal(
        sw__watch_missed(D, &w, d1, day + 4 * D + 3 * H, ran_set, day3_ran, &first, &last), 1);
    assert_int_equal(last, d1 + 1);
    /* back at 06:00 instead: day 4's window is over too */
    assert_int_equal(
        sw__watch_missed(D, &w, d1, day + 4 * D + 6 * H, ran_set, none_ran, &first, &last), 3);
    assert_int_equal(last, d1 + 3);
    /* settled up to the last: nothing again (recorded once) */
    assert_int_equal(
        sw__watch_missed(D, &w, d1 + 3, day + 4 * D + 7 * H, ran_set, none_ran, &first, &last), 0);
    /* hourly in the night window, down from 00:00 to 03:30: 01:00 and 02:00 missed; the 03:00
     * slot's hour is still open (it runs now, once); the 05:00.. slots have no time */
    int64_t s0 = sw__watch_slot_of(H, &w, day - H);
    assert_int_equal(
        sw__watch_missed(H, &w, s0, day + 3 * H + H / 2, ran_set, none_ran, &first, &last), 2);
    /* a watch down for years looks back at the newest 1000 slots only (the current one open) */
    assert_int_equal(sw__watch_missed(H, &none, 0, day, ran_set, none_ran, &first, &last), 999);
}

static void test_logs_up(void **state)
{
    (void)state;
    struct sw_err e;
    struct sw_fleet *f = load(FLEET, &e);
    assert_non_null(f);
    char *dir = swt_tmpdir();
    setenv("SLIPWAY_RUN_DIR", dir, 1);
    struct sw_pidfile p;
    memset(&p, 0, sizeof(p));
    assert_int_equal(sw_pidfile_identify(getpid(), &p, &e), 0);
    snprintf(p.endpoint, sizeof(p.endpoint), "e1");
    snprintf(p.engine, sizeof(p.engine), "llama.cpp");
    snprintf(p.log, sizeof(p.log), "%s", swt_join(dir, "e1.log"));
    int64_t now = (int64_t)time(NULL);
    p.started_unix = now - 200;
    swt_write_str(p.log, "0.00.010.000 I main: starting\n"
                         "0.00.500.000 E llama_init_from_model: failed to initialize the context: "
                         "failed to allocate buffer for kv cache\n"
                         "   a line without a time\n"
                         "1.40.000.000 I srv  update_slots: all slots are idle\n");
    char pid[4200];
    assert_int_equal(sw_deploy_pid_path("e1", pid, sizeof(pid), &e), 0);
    assert_int_equal(sw_pidfile_write(pid, &p, &e), 0);
    struct got g;
    char from[4400];
    struct sw_watch_logs_opts o = {.lines = 2, .from = from, .from_n = sizeof(from)};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_string_equal(g.text, "   a line without a time\n"
                                "1.40.000.000 I srv  update_slots: all slots are idle\n");
    assert_non_null(strstr(from, "up's log"));
    /* every line; the allocation failure classified on its own */
    o = (struct sw_watch_logs_opts){0};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_int_equal(g.n, 4);
    assert_int_equal(g.classified, 1);
    assert_string_equal(g.cls, "oom/kv_alloc");
    /* --since 50 s into the run: the line of 1 min 40 s only (the untimed line goes with its
     * predecessor, of 0.5 s) */
    char since[64];
    snprintf(since, sizeof(since), "@%lld", (long long)(now - 150));
    o = (struct sw_watch_logs_opts){.since = since};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_string_equal(g.text, "1.40.000.000 I srv  update_slots: all slots are idle\n");
    /* before the run: all of it; after the last write: none */
    o = (struct sw_watch_logs_opts){.since = "1h ago"};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_int_equal(g.n, 4);
    snprintf(since, sizeof(since), "@%lld", (long long)(now + 100));
    o = (struct sw_watch_logs_opts){.since = since};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_int_equal(g.n, 0);
    o = (struct sw_watch_logs_opts){.since = "yesterday-ish"};
    assert_int_equal(logs_of(f, &o, &g, &e), SW_EINVAL);
    /* following with stop already set: what is there, then back */
    volatile sig_atomic_t stop = 1;
    o = (struct sw_watch_logs_opts){.follow = true, .stop = &stop};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_true(g.n >= 1);
    /* --boot reads a journal */
    o = (struct sw_watch_logs_opts){.set_boot = true, .boot = -1};
    assert_int_equal(logs_of(f, &o, &g, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "--boot"));
    /* the engine ended (a boot that failed): no record, its log left beside where it was */
    unlink(pid);
    char log2[4300];
    snprintf(log2, sizeof(log2), "%.*s.log", (int)(strlen(pid) - 4), pid);
    assert_int_equal(rename(p.log, log2), 0);
    o = (struct sw_watch_logs_opts){.from = from, .from_n = sizeof(from), .follow = true};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_int_equal(g.n, 4);
    assert_string_equal(g.cls, "oom/kv_alloc");
    assert_non_null(strstr(from, "ended"));
    /* its start is unknown: a --since before the file was made takes all of it ("1 hour
     * ago", journalctl's words), one inside what it wrote (last written 100 s from now, here)
     * is refused */
    o = (struct sw_watch_logs_opts){.since = "1 hour ago"};
    assert_int_equal(logs_of(f, &o, &g, &e), 0);
    assert_int_equal(g.n, 4);
    struct timespec ts[2] = {{now + 100, 0}, {now + 100, 0}};
    assert_int_equal(utimensat(AT_FDCWD, log2, ts, 0), 0);
    snprintf(since, sizeof(since), "@%lld", (long long)(now + 50));
    o = (struct sw_watch_logs_opts){.since = since};
    assert_int_equal(logs_of(f, &o, &g, &e), SW_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "start is unknown"));
    unsetenv("SLIPWAY_RUN_DIR");
    swt_tmpdir_free(dir);
    sw_fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_ledger_keys),
        cmocka_unit_test(test_metrics_promtool),
        cmocka_unit_test(test_alert_exec),
        cmocka_unit_test(test_alert_post),
        cmocka_unit_test(test_spawn_deadline),
        cmocka_unit_test(test_render_unit),
        cmocka_unit_test(test_logs_up),
        cmocka_unit_test(test_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
