/*
 * Real test hosts (scripts/testhost.sh through tests/support/swthost.h): machines with their own
 * systemd, journald and sshd (systemd-nspawn over an overlay of a cached Debian bookworm rootfs),
 * each with a network of its own (a veth pair, 169.254.N.1 here, 169.254.N.2 there); podman runs
 * inside them.
 *  - a host boots; root@169.254.2.2 answers with the generated key under StrictHostKeyChecking=yes
 *    against the known_hosts `up` printed, and refuses a known_hosts holding another key; a
 *    server on this machine's 127.0.0.1 is not reached from inside it, nor a listener on its
 *    127.0.0.1 from here;
 *  - the pinned llama-server runs there as a systemd service, natively (the llama.cpp build bound
 *    at /opt/llama) and in a podman container (localhost/slipway-llama:test, run by digest),
 *    serving the tiny chat model bound read-only at /models: GET /health and a chat completion
 *    answered from this machine;
 *  - the operator's unit mistakes, reproduced for real:
 *      StartLimitIntervalSec= in [Service]: the journal says systemd ignored it;
 *      `podman stop -t GRACE` under a stop timeout shorter than GRACE, on a container that does
 *      not exit on SIGTERM: the stop is logged as timed out and the unit's result is 'timeout'
 *      (shortened: TimeoutStopSec=3 against -t 10 is the same relation as the operator's
 *      default 90 s against -t 120);
 *      a path of this machine handed to an engine in a container that sees the models at
 *      /models: it exits, systemd restarts it, NRestarts climbs until "Start request repeated too
 *      quickly";
 *  - teardown: after `down`, no nspawn, no process of the host, no container, no directory.
 * The tests share one host, sw-th-a (the models bound): the first test boots it and checks that
 * boot, each later one installs units of its own names on it (nothing it checks is shared: the
 * journal is read for its own units' lines). The last takes it down and brings up two fresh
 * hosts of its own (the teardown check powers one off: see test_teardown_leaves_nothing).
 * swthost's exit and signal hooks take every host down when a test dies; each test is bounded
 * well under 3 minutes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swllama.h"
#include "swhttpd.h"
#include "swthost.h"
#include "swtest.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ADDR_A "169.254.2.2"
#define ADDR_B "169.254.3.2"
#define IMAGE  SWTH_IMAGE

/* The group's model (made once) and why it could not be made. */

struct fx {
    struct swth_host h;  /* a copy of the shared host (shared_up), or a host of the test's own */
    struct swth_host h2; /* a host of the test's own */
};

/* The tests' one host (shared_up), while it is up. */
static struct swth_host g_host;

static int setup(void **state)
{
    *state = calloc(1, sizeof(struct fx));
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (strcmp(f->h.name, g_host.name)) /* a host of the test's own (not the shared one) */
        swth_down(&f->h);
    swth_down(&f->h2);
    free(f);
    return 0;
}

/* The group's teardown: the shared host down (if a test left it up), then the model removed. */
static int group_teardown(void **state)
{
    if (g_host.up)
        swth_down(&g_host);
    return swth_group_teardown(state);
}

static void need_host(void)
{
    const char *why = swth_missing();
    swt_need(why[0] == '\0', "%s", why);
}

static void need_model(void)
{
    swt_need(swth_gm.model[0] != '\0', "no chat model: %s", swth_gm.missing);
}

static void need_podman(void)
{
    const char *why = swth_podman_missing();
    swt_need(why[0] == '\0', "%s", why);
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void up(struct swth_host *h, const char *name, const char *addr, bool models)
{
    char bind[4200];
    snprintf(bind, sizeof(bind), "%s:/models", swth_gm.dir);
    const char *binds[] = {bind, NULL};
    assert_int_equal(swth_up(name, addr, models ? binds : NULL, h), 0);
    print_message("host %s up at %s in %ld ms (unpack, boot, sshd)\n", name, addr, h->boot_ms);
}

/* f->h: the shared host sw-th-a at ADDR_A with the models bound, booted by the first test that
 * asks (test_boots_ssh checks that boot), the tests' ssh calls to it over one connection. */
static void shared_up(struct fx *f)
{
    if (!g_host.up) {
        up(&g_host, "sw-th-a", ADDR_A, true);
        swth_mux_on(&g_host); /* the tests' polls of unit state over one connection */
    }
    f->h = g_host;
}

/* Install a unit file and `systemctl daemon-reload`. */
static void install_unit(const struct swth_host *h, const char *unit, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "/etc/systemd/system/%s", unit);
    assert_int_equal(swth_put(h, path, text), 0);
    free(swth_must(h, "systemctl daemon-reload"));
}

/* The journal of the whole boot holds needle (fixed string), polled up to deadline_s. */
static bool journal_has(const struct swth_host *h, const char *needle, unsigned deadline_s,
                        struct swt_run *last)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "journalctl -b --no-pager -o cat | grep -F -- \"%s\"", needle);
    return swth_wait(h, cmd, deadline_s, last) == 0;
}

/* HTTP from this machine to the host's address (curl): *code the status, the body returned. */
static char *http(const char *addr, int port, const char *path, const char *json, int *code)
{
    char url[256];
    snprintf(url, sizeof(url), "http://%s:%d%s", addr, port, path);
    const char *get[] = {"curl", "-sS", "-m", "60", "-w", "\n%{http_code}", url, NULL};
    const char *post[] = {"curl",
                          "-sS",
                          "-m",
                          "60",
                          "-w",
                          "\n%{http_code}",
                          "-H",
                          "Content-Type: application/json",
                          "--data-binary",
                          "@-",
                          url,
                          NULL};
    struct swt_run r;
    *code = 0;
    if (swt_run(json ? post : get, json, 90, &r))
        return NULL;
    char *nl = strrchr(r.out, '\n');
    if (r.status == 0 && nl) {
        *code = atoi(nl + 1);
        *nl = '\0';
    }
    char *body = r.out;
    r.out = NULL;
    swt_run_free(&r);
    return body;
}

/* GET /health until 200, at most deadline_s. */
static bool wait_health(const char *addr, int port, unsigned deadline_s)
{
    long end = now_ms() + (long)deadline_s * 1000;
    while (now_ms() < end) {
        int code = 0;
        free(http(addr, port, "/health", NULL, &code));
        if (code == 200)
            return true;
        usleep(200 * 1000);
    }
    return false;
}

/* /health 200 within 120 s, or the test fails with what the unit and its journal say (a CI failure
 * must say why: a port taken, the engine's own error, a slow boot). */
static void serving_or_explain(const struct swth_host *h, const char *unit, const char *addr,
                               int port)
{
    if (wait_health(addr, port, 120))
        return;
    char cmd[512];
    struct swt_run r;
    snprintf(cmd, sizeof(cmd),
             "systemctl show -p ActiveState,SubState,NRestarts,Result %s; journalctl -u %s "
             "--no-pager -n 40; ss -ltnp | grep ':%d ' || true",
             unit, unit, port);
    memset(&r, 0, sizeof(r));
    swth_ssh(h, cmd, NULL, 30, &r);
    fail_msg("%s: %s on %s:%d did not answer /health 200 within 120 s:\n%s%s", h->name, unit, addr,
             port, r.out ? r.out : "", r.err ? r.err : "");
}

/* A chat completion answered 200 with a message. A random-weight model may write text the
 * server cannot parse as its chat format (500): a few other prompts and seeds are tried. */
static void chat_ok(const char *addr, int port)
{
    const char *prompts[] = {"hello", "Say something.", "What is 2+2?", "hi there",
                             "Name a color."};
    char body[512];
    int code = 0;
    char *out = NULL;
    for (int i = 0; i < 5; i++) {
        snprintf(body, sizeof(body),
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}],\"max_tokens\":8,"
                 "\"temperature\":%s,\"seed\":%d}",
                 prompts[i], i ? "1" : "0", 7 + i);
        free(out);
        out = http(addr, port, "/v1/chat/completions", body, &code);
        if (code == 200 && out && strstr(out, "\"choices\"") && strstr(out, "\"message\""))
            break;
    }
    if (code != 200)
        fail_msg("chat completion from %s:%d: HTTP %d: %.400s", addr, port, code, out ? out : "");
    free(out);
}

/* (a) boots; ssh with the generated key and StrictHostKeyChecking=yes; another key refused. */
static void test_boots_ssh(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    assert_false(g_host.up); /* the first test: this is the host's boot */
    shared_up(f);
    assert_string_equal(f->h.addr, ADDR_A);
    assert_true(f->h.leader > 0);

    char *out = swth_must(&f->h, "systemctl is-system-running; hostname; id -u; ps -o comm= -p 1");
    if (!strstr(out, "running\n") && !strstr(out, "degraded\n"))
        fail_msg("systemctl is-system-running said: %s", out);
    assert_non_null(strstr(out, "sw-th-a\n0\nsystemd\n"));
    free(out);

    /* The printed known_hosts line is the file's content and the host's own key. */
    assert_true(swt_file_has(f->h.known_hosts, f->h.known_hosts_line));
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub");
    out = swth_must(&f->h, cmd);
    out[strcspn(out, "\n")] = '\0';
    assert_non_null(strstr(f->h.known_hosts_line, out));
    free(out);

    /* StrictHostKeyChecking is real: a known_hosts naming another key for the address fails. */
    char *dir = swt_tmpdir();
    const char *kg[] = {"ssh-keygen",           "-q", "-t", "ed25519", "-N", "", "-f",
                        swt_join(dir, "other"), NULL};
    struct swt_run r;
    assert_int_equal(swt_run(kg, NULL, 30, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    char *pub = NULL;
    size_t len = 0;
    assert_int_equal(sw_read_file(swt_join(dir, "other.pub"), 4096, &pub, &len, NULL), 0);
    char type[64], blob[1024], line[1200];
    assert_int_equal(sscanf(pub, "%63s %1023s", type, blob), 2);
    sw_free(pub);
    snprintf(line, sizeof(line), "%s %s %s\n", ADDR_A, type, blob);
    struct swth_host wrong = f->h;
    wrong.mux[0] = '\0'; /* a connection of its own: the check is of a new one's key exchange */
    snprintf(wrong.known_hosts, sizeof(wrong.known_hosts), "%s", swt_join(dir, "known_hosts"));
    swt_write_str(wrong.known_hosts, line);
    assert_int_equal(swth_ssh(&wrong, "true", NULL, 30, &r), 0);
    assert_int_equal(r.status, 255);
    assert_non_null(strstr(r.err, "Host key verification failed"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);

    /* A network of its own: a server on this machine's 127.0.0.1 is not reached from inside the
     * host, and a listener on the host's 127.0.0.1 is not reached from here (as with a real
     * remote machine); this machine is at the link's other end. */
    struct swh *here = swh_start();
    swh_reply(here, "GET", "/", 200, "text/plain", "this-machine");
    snprintf(cmd, sizeof(cmd), "curl -s -m 3 http://127.0.0.1:%d/; echo \" exit=$?\"",
             swh_port(here));
    out = swth_must(&f->h, cmd);
    if (strstr(out, "this-machine"))
        fail_msg("the host reached this machine's 127.0.0.1:%d: %s", swh_port(here), out);
    assert_non_null(strstr(out, " exit=7"));
    free(out);
    assert_int_equal(swh_hits(here, NULL), 0);
    swh_stop(here);
    int hp = swt_free_port();
    snprintf(cmd, sizeof(cmd),
             "systemd-run --unit=sw-own-net -q systemd-socket-activate -l 127.0.0.1:%d --inetd "
             "-a /bin/echo host-side && for i in $(seq 50); do timeout 3 bash -c 'exec "
             "3<>/dev/tcp/127.0.0.1/%d; cat <&3' && break; sleep 0.1; done",
             hp, hp);
    out = swth_must(&f->h, cmd);
    assert_non_null(strstr(out, "host-side"));
    free(out);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", hp);
    const char *probe[] = {"curl", "-s", "-m", "3", url, NULL};
    assert_int_equal(swt_run(probe, NULL, 10, &r), 0);
    assert_int_equal(r.status, 7); /* refused: nothing of the host's listens here */
    swt_run_free(&r);
    /* its one address besides loopback is its side of the link */
    out = swth_must(&f->h, "hostname -I");
    assert_string_equal(out, ADDR_A " \n");
    free(out);
}

/* (b) the pinned llama-server as a native systemd service, from unit install to serving. */
static void test_native_llama_service(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    shared_up(f);
    int port = swt_free_port();
    char unit[2048];
    snprintf(unit, sizeof(unit),
             "[Unit]\n"
             "Description=slipway test: native llama-server\n"
             "StartLimitIntervalSec=120\n"
             "StartLimitBurst=5\n"
             "[Service]\n"
             "ExecStart=/opt/llama/bin/llama-server -m /models/chat.gguf --host %s --port %d "
             "-c 512 -np 1 -t 1\n"
             "Restart=always\n"
             "RestartSec=2\n"
             "TimeoutStopSec=30\n",
             ADDR_A, port);
    long t0 = now_ms();
    install_unit(&f->h, "sw-llama.service", unit);
    free(swth_must(&f->h, "systemctl start sw-llama.service"));
    if (!wait_health(ADDR_A, port, 120)) {
        char *j = swth_must(&f->h, "journalctl -u sw-llama --no-pager | tail -20");
        fail_msg("llama-server on %s:%d never answered /health 200:\n%s", ADDR_A, port, j);
    }
    long serving = now_ms() - t0;
    print_message("native: unit install to /health 200 in %ld ms\n", serving);
    chat_ok(ADDR_A, port);

    char v[256];
    swth_show(&f->h, "sw-llama.service", "ActiveState", v, sizeof(v));
    assert_string_equal(v, "active");
    swth_show(&f->h, "sw-llama.service", "NRestarts", v, sizeof(v));
    assert_string_equal(v, "0");
    swth_show(&f->h, "sw-llama.service", "ExecMainPID", v, sizeof(v));
    assert_true(atol(v) > 1);
    free(swth_must(&f->h, "systemctl stop sw-llama.service"));
    swth_show(&f->h, "sw-llama.service", "ActiveState", v, sizeof(v));
    assert_string_equal(v, "inactive");
    int code = 0;
    free(http(ADDR_A, port, "/health", NULL, &code));
    assert_int_equal(code, 0);
}

/* The container's podman arguments the tests share (host network, limits at or below ours). */
#define PODMAN_RUN                                                                                 \
    "/usr/bin/podman run --rm --network host --ulimit nofile=1024:1024 "                           \
    "--ulimit nproc=1024:1024 -v /models:/models:ro"

/* (b) the same llama-server in a podman container (image pinned by digest) as a service. */
static void test_podman_llama_service(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    need_podman();
    char digest[128];
    swth_image_digest(digest, sizeof(digest));
    shared_up(f);
    int port = swt_free_port();
    char unit[2048];
    snprintf(unit, sizeof(unit),
             "[Unit]\n"
             "Description=slipway test: llama-server in podman\n"
             "StartLimitIntervalSec=120\n"
             "StartLimitBurst=5\n"
             "[Service]\n"
             "ExecStartPre=-/usr/bin/podman rm -f sw-llama-c\n"
             "ExecStart=" PODMAN_RUN " --name sw-llama-c %s@%s -m /models/chat.gguf --host %s "
             "--port %d -c 512 -np 1 -t 1\n"
             "ExecStop=/usr/bin/podman stop -t 10 sw-llama-c\n"
             "TimeoutStopSec=30\n"
             "Restart=always\n"
             "RestartSec=2\n",
             IMAGE, digest, ADDR_A, port);
    long t0 = now_ms();
    install_unit(&f->h, "sw-llama-c.service", unit);
    free(swth_must(&f->h, "systemctl start sw-llama-c.service"));
    if (!wait_health(ADDR_A, port, 120)) {
        char *j = swth_must(&f->h, "journalctl -u sw-llama-c --no-pager | tail -20");
        fail_msg("llama-server in podman on %s:%d never answered /health 200:\n%s", ADDR_A, port,
                 j);
    }
    print_message("podman: unit install to /health 200 in %ld ms\n", now_ms() - t0);
    chat_ok(ADDR_A, port);
    char *out = swth_must(&f->h, "podman ps --format '{{.Names}} {{.Image}}'");
    char want[256];
    snprintf(want, sizeof(want), "sw-llama-c %s@%s", IMAGE, digest);
    if (!strstr(out, want))
        fail_msg("podman ps on the host: %s (wanted '%s')", out, want);
    free(out);
    char v[64];
    swth_show(&f->h, "sw-llama-c.service", "NRestarts", v, sizeof(v));
    assert_string_equal(v, "0");
    free(swth_must(&f->h, "systemctl stop sw-llama-c.service"));
    swth_show(&f->h, "sw-llama-c.service", "Result", v, sizeof(v));
    assert_string_equal(v, "success");
}

/* (c) StartLimitIntervalSec= in [Service]: systemd ignores it and says so when it loads the
 * unit; the same key in [Unit] (the control) draws no such line. */
static void test_start_limit_in_service(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    shared_up(f);
    install_unit(&f->h, "sw-bad.service",
                 "[Unit]\nDescription=start limit in the wrong section\n"
                 "[Service]\nExecStart=/bin/sleep 300\nRestart=always\n"
                 "StartLimitIntervalSec=60\nStartLimitBurst=3\n");
    install_unit(&f->h, "sw-good.service",
                 "[Unit]\nDescription=start limit in [Unit]\n"
                 "StartLimitIntervalSec=60\nStartLimitBurst=3\n"
                 "[Service]\nExecStart=/bin/sleep 300\nRestart=always\n");
    /* systemd loads a unit when something asks for it */
    free(swth_must(&f->h, "systemctl start sw-bad.service sw-good.service"));
    struct swt_run r;
    bool seen = journal_has(&f->h,
                            "/etc/systemd/system/sw-bad.service:6: Unknown key "
                            "'StartLimitIntervalSec' in section [Service], ignoring.",
                            30, &r);
    if (!seen)
        fail_msg("no warning in the journal; last: %s%s", r.out, r.err);
    swt_run_free(&r);
    char *out =
        swth_must(&f->h, "journalctl -b --no-pager -o cat | grep -c sw-good.service: || true");
    assert_string_equal(out, "0\n");
    free(out);
    /* what slipway's lint leans on: verify prints the line but exits 0 */
    assert_int_equal(
        swth_ssh(&f->h, "systemd-analyze verify /etc/systemd/system/sw-bad.service", NULL, 60, &r),
        0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "Unknown key 'StartLimitIntervalSec' in section [Service]"));
    swt_run_free(&r);
    /* the interval in effect: systemd's default for the bad one, the unit's own for the good.
     * (StartLimitBurst= is still accepted in [Service] for compatibility: no warning for it.) */
    char v[64];
    swth_show(&f->h, "sw-bad.service", "StartLimitIntervalUSec", v, sizeof(v));
    assert_string_equal(v, "10s");
    swth_show(&f->h, "sw-good.service", "StartLimitIntervalUSec", v, sizeof(v));
    assert_string_equal(v, "1min");
}

/* (c) `podman stop -t 10` under TimeoutStopSec=3 on a container that does not exit on SIGTERM
 * (sleep as the container's PID 1: the kernel drops SIGTERM for it, as an engine that drains
 * longer than its grace): the stop times out and systemd says so. The operator's unit had no
 * TimeoutStopSec (90 s) and `podman stop -t 120`: the same relation, 30 times longer. */
static void test_podman_stop_outlives_timeout(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    need_podman();
    shared_up(f);
    install_unit(&f->h, "sw-stop.service",
                 "[Unit]\nDescription=podman stop -t 10 under TimeoutStopSec=3\n"
                 "[Service]\n"
                 "ExecStartPre=-/usr/bin/podman rm -f sw-stop-c\n"
                 "ExecStart=/usr/bin/podman run --rm --network host --ulimit nofile=1024:1024 "
                 "--ulimit nproc=1024:1024 --name sw-stop-c --entrypoint /bin/sleep " IMAGE
                 ":test 600\n"
                 "ExecStop=/usr/bin/podman stop -t 10 sw-stop-c\n"
                 "TimeoutStopSec=3\n");
    free(swth_must(&f->h, "systemctl start sw-stop.service"));
    assert_int_equal(
        swth_wait(&f->h, "podman ps --format '{{.Names}}' | grep -qx sw-stop-c", 60, NULL), 0);
    long t0 = now_ms();
    struct swt_run r;
    assert_int_equal(swth_ssh(&f->h, "systemctl stop sw-stop.service", NULL, 60, &r), 0);
    long took = now_ms() - t0;
    print_message("systemctl stop returned after %ld ms (exit %d)\n", took, r.status);
    swt_run_free(&r);
    char v[64];
    swth_show(&f->h, "sw-stop.service", "Result", v, sizeof(v));
    assert_string_equal(v, "timeout");
    bool seen = journal_has(&f->h, "sw-stop.service: Stopping timed out. Terminating.", 20, &r);
    if (!seen)
        fail_msg("no stop timeout in the journal; last: %s%s", r.out, r.err);
    swt_run_free(&r);
    assert_true(journal_has(&f->h, "sw-stop.service: Failed with result 'timeout'.", 20, NULL));
    /* systemd killed `podman stop` before its own grace ran out, so nothing sent the container
     * its SIGKILL: say whether it outlived its unit, then remove it (the host's power-off would
     * otherwise wait for it). */
    assert_int_equal(swth_ssh(&f->h, "podman ps --format '{{.Names}} {{.Status}}'", NULL, 30, &r),
                     0);
    print_message("after the timed-out stop, running containers: %s\n",
                  r.out[0] ? r.out : "(none)\n");
    swt_run_free(&r);
    free(swth_must(&f->h, "podman rm -f -t 0 sw-stop-c >/dev/null 2>&1 || true"));
}

/* Runs unit NAME.service (its ExecStart hands the engine swth_gm.model, a path of this machine,
 * while the host sees the models at /models only) and reads it crash-looping: it exits at once,
 * Restart=always starts it again, NRestarts climbs, and the start limit in [Unit] ends it with
 * "Start request repeated too quickly". Each caller names its own unit: the host is shared, and
 * the journal must hold this unit's lines, not another test's. */
static void crash_loop(struct fx *f, const char *name, const char *exec_start)
{
    shared_up(f);
    char svc[64], cmd[4400], needle[128];
    snprintf(svc, sizeof(svc), "%s.service", name);
    char unit[4096];
    snprintf(unit, sizeof(unit),
             "[Unit]\n"
             "Description=slipway test: a path of another machine handed to the engine\n"
             "StartLimitIntervalSec=300\n"
             "StartLimitBurst=4\n"
             "[Service]\n"
             "ExecStart=%s\n"
             "Restart=always\n"
             "RestartSec=1\n",
             exec_start);
    install_unit(&f->h, svc, unit);
    snprintf(cmd, sizeof(cmd), "systemctl start %s", svc);
    free(swth_must(&f->h, cmd));
    /* NRestarts read while it climbs, until the start limit stops it */
    long seen[32];
    int nseen = 0;
    char v[64];
    long end = now_ms() + 120 * 1000;
    for (;;) {
        swth_show(&f->h, svc, "NRestarts", v, sizeof(v));
        long nr = atol(v);
        if (!nseen || nr != seen[nseen - 1]) {
            if (nseen < 32)
                seen[nseen++] = nr;
            print_message("%s: NRestarts=%ld\n", name, nr);
        }
        swth_show(&f->h, svc, "ActiveState", v, sizeof(v));
        if (!strcmp(v, "failed"))
            break;
        if (now_ms() > end)
            fail_msg("%s still %s after 120 s", svc, v);
        usleep(300 * 1000);
    }
    for (int i = 1; i < nseen; i++)
        assert_true(seen[i] > seen[i - 1]);
    assert_true(nseen >= 3); /* it was read climbing, not only at the end */
    swth_show(&f->h, svc, "NRestarts", v, sizeof(v));
    /* StartLimitBurst=4: four starts ran; the 4th restart was counted, then refused */
    assert_int_equal(atol(v), 4);
    /* systemd 252 keeps the last run's result when the refused start is its own auto-restart
     * (measured; 'start-limit-hit' is what a refused `systemctl start` gets) */
    swth_show(&f->h, svc, "Result", v, sizeof(v));
    assert_string_equal(v, "exit-code");
    snprintf(needle, sizeof(needle), "%s: Start request repeated too quickly.", svc);
    assert_true(journal_has(&f->h, needle, 20, NULL));
    /* and why: the engine was handed a path it cannot see */
    snprintf(cmd, sizeof(cmd),
             "journalctl -u %s --no-pager -o cat | grep -F -- \"failed to load model, '%s'\"", svc,
             swth_gm.model);
    struct swt_run r;
    assert_int_equal(swth_ssh(&f->h, cmd, NULL, 30, &r), 0);
    if (r.status)
        fail_msg("the engine's complaint about %s is not in the journal", swth_gm.model);
    swt_run_free(&r);
}

/* (c) the operator's case: the engine in a container that sees the models at /models. */
static void test_host_path_crash_loop_podman(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    need_podman();
    char exec[4400];
    snprintf(exec, sizeof(exec),
             PODMAN_RUN " --name sw-crash-c " IMAGE ":test -m %s --host %s --port %d -c 512",
             swth_gm.model, ADDR_A, swt_free_port());
    crash_loop(f, "sw-crash-c", exec);
}

/* (c) the same mistake natively: the host has the models at /models, not at this machine's path. */
static void test_host_path_crash_loop_native(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    char exec[4400];
    snprintf(exec, sizeof(exec), "/opt/llama/bin/llama-server -m %s --host %s --port %d -c 512",
             swth_gm.model, ADDR_A, swt_free_port());
    crash_loop(f, "sw-crash-n", exec);
}

/* (d) down leaves nothing: no nspawn, no process of the host, no container, no directory. Two
 * fresh hosts at once (169.254.2.2 native, 169.254.3.2 podman), both serving, both taken down:
 * the first by a power-off (`down`), the second by `down --kill` (what every test's teardown
 * uses). Fresh, not the shared host: what the tests before left on it holds its power-off until
 * `down` gives up waiting (20 s) and kills it, which is not the power-off this checks; the shared
 * host goes first (`down --kill`), its address is the first host's. */
static void test_teardown_leaves_nothing(void **state)
{
    struct fx *f = *state;
    need_host();
    need_model();
    need_podman();
    if (g_host.up)
        assert_int_equal(swth_down(&g_host), 0);
    up(&f->h, "sw-th-down-a", ADDR_A, true);
    up(&f->h2, "sw-th-down-b", ADDR_B, true);
    int pa = swt_free_port();
    int pb = pa + 1;
    char unit[2048], mark_a[64], mark_b[64];
    snprintf(unit, sizeof(unit),
             "[Service]\nExecStart=/opt/llama/bin/llama-server -m /models/chat.gguf --host %s "
             "--port %d -c 512 -np 1 -t 1\n",
             ADDR_A, pa);
    install_unit(&f->h, "sw-llama.service", unit);
    free(swth_must(&f->h, "systemctl start sw-llama.service"));
    snprintf(unit, sizeof(unit),
             "[Service]\nExecStart=" PODMAN_RUN " --name sw-down-c " IMAGE ":test -m "
             "/models/chat.gguf --host %s --port %d -c 512 -np 1 -t 1\n",
             ADDR_B, pb);
    install_unit(&f->h2, "sw-llama-c.service", unit);
    free(swth_must(&f->h2, "systemctl start sw-llama-c.service"));
    serving_or_explain(&f->h, "sw-llama.service", ADDR_A, pa);
    serving_or_explain(&f->h2, "sw-llama-c.service", ADDR_B, pb);
    snprintf(mark_a, sizeof(mark_a), "--port %d", pa);
    snprintf(mark_b, sizeof(mark_b), "--port %d", pb);
    assert_true(swt_survivors(mark_a, false, NULL) >= 1);
    assert_true(swt_survivors(mark_b, false, NULL) >= 1);

    struct swth_host a = f->h, b = f->h2;
    assert_int_equal(swth_down_graceful(&f->h), 0);
    assert_int_equal(swth_down(&f->h2), 0);
    const struct swth_host *hs[] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        const struct swth_host *h = hs[i];
        errno = 0;
        assert_int_equal(kill(h->pid, 0), -1);
        assert_int_equal(errno, ESRCH);
        errno = 0;
        assert_int_equal(kill(h->leader, 0), -1);
        assert_int_equal(errno, ESRCH);
        struct stat st;
        assert_int_equal(stat(h->root, &st), -1);
        assert_int_equal(swth_left(h->name), 0);
        assert_int_equal(swt_survivors(h->root, true, NULL), 0);
        assert_false(swt_file_has("/proc/self/mounts", h->root));
    }
    assert_int_equal(swt_survivors(mark_a, true, NULL), 0);
    assert_int_equal(swt_survivors(mark_b, true, NULL), 0);
    int code = 0;
    free(http(ADDR_A, pa, "/health", NULL, &code));
    assert_int_equal(code, 0);
    free(http(ADDR_B, pb, "/health", NULL, &code));
    assert_int_equal(code, 0);
    /* nothing on this machine's own podman either */
    const char *ps[] = {"podman", "ps", "-a", "--format", "{{.Names}}", NULL};
    struct swt_run r;
    assert_int_equal(swt_run(ps, NULL, 60, &r), 0);
    assert_null(strstr(r.out, "sw-down-c"));
    swt_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_boots_ssh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_native_llama_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_podman_llama_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_limit_in_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_podman_stop_outlives_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_path_crash_loop_podman, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_path_crash_loop_native, setup, teardown),
        cmocka_unit_test_setup_teardown(test_teardown_leaves_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, group_teardown);
}
