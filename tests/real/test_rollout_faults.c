/*
 * Real tier: the interruptions of a deploy (include/slipway/rollout.h), on real test hosts
 * (scripts/testhost.sh: systemd, journald, sshd; sw-rf-a on 169.254.24.2, sw-rf-b on 169.254.25.2)
 * running the pinned llama-server natively as the endpoint's systemd service:
 *   (i)   ssh drops mid-deploy: the host's sshd is stopped and every sshd process of the host
 *         killed (from the host's own PID 1 namespace) the moment slipway reports that it stopped
 *         the old unit: the deploy ends `interrupted` (ssh_dropped) without hanging, a deploy while
 *         sshd is down is refused before anything, and once sshd is back the next deploy takes the
 *         dead process's lock over (naming it) and converges; the same fault after the start, then
 *         `slipway rollback` converges to the last-good;
 *   (ii)  disk full while staging: a 1 MiB tmpfs (holding copies of the live files) mounted over
 *         /etc/systemd/system on the host and filled: staging fails with the host, the path and
 *         ENOSPC's words, nothing half-written is left, the live files are byte-identical and the
 *         live unit is never stopped (same MainPID, same NRestarts); with room again the deploy
 *         converges;
 *   (iii) slipway SIGKILLed in each step of the pipeline (stage, stop, start, boot-follow, probe,
 *         commit), found from its progress lines: the next deploy (or rollback) converges, and the
 *         ledger holds the killed attempt as `interrupted`, never `running`.
 * The time the endpoint did not serve is measured from outside: a meter process sends the
 * engine's one-token generation every 100 ms from before the fault until it has converged
 * ("OUTAGE fault=... ms=..."), beside slipway's own figure of the converging run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swrollout.h"
#include "swthost.h"
#include "swtest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNIT "slipway-rf.service"
#define LIVE "/etc/systemd/system/" UNIT
#define ENV  "/etc/slipway/slipway-rf.env"

static const struct swro_site site_a = {"sw-rf-a", "169.254.24.2", "rf-host", "rf"};
static const struct swro_site site_b = {"sw-rf-b", "169.254.25.2", "rf-host", "rf"};

struct fx {
    struct swro ro;    /* the host, the fleet, the endpoint */
    char payload[256]; /* the model's path on the host; "" /models/chat.gguf */
    pid_t meter;
    char meter_out[4300];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    *state = f;
    return f ? 0 : -1;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->meter > 0) {
        kill(f->meter, SIGKILL);
        waitpid(f->meter, NULL, 0);
    }
    swro_close(&f->ro);
    free(f);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* `sh -c CMD` run inside the host's namespaces from this machine (no ssh: what a console on the
 * host would do). Its exit status; its output into out (may be NULL, free()). */
static int on_console(const struct swth_host *h, const char *cmd, char **out)
{
    char pid[32];
    snprintf(pid, sizeof(pid), "%ld", (long)h->leader);
    const char *argv[] = {"nsenter", "-t", pid,  "-m", "-u", "-i",
                          "-n",      "-p", "sh", "-c", cmd,  NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 60, &r), 0);
    int st = r.status;
    if (out) {
        *out = r.out;
        r.out = NULL;
    }
    swt_run_free(&r);
    return st;
}

/* The fleet: endpoint `rf` on the host, native llama-server with the given ctx, bound to every
 * address of the host (so the outage meter, a process here polling every 100 ms, reaches it
 * directly; slipway's route is then the direct one). */
static void write_fleet(struct fx *f, int ctx)
{
    swro_write_fleet(&f->ro, &(struct swro_fleet){.ctx = ctx,
                                                  .payload = f->payload[0] ? f->payload : NULL,
                                                  .listen = "0.0.0.0"});
}

#define PROBE "readiness,liveness,models,chat"

/* slipway's own figure of the converging run: null when it stopped nothing (the interrupted
 * run had stopped the unit already; the meter's figure covers that). */
static void print_downtime(const char *fault, const json_t *j)
{
    const json_t *dt = json_object_get(j, "downtime_ms");
    if (json_is_integer(dt))
        print_message("DOWNTIME fault=%s converging-run ms=%lld (%s)\n", fault,
                      (long long)json_integer_value(dt), swro_str(j, "outcome"));
    else
        print_message("DOWNTIME fault=%s converging-run ms=- (%s; it stopped nothing)\n", fault,
                      swro_str(j, "outcome"));
}

static json_t *deploy(struct fx *f, int *st)
{
    return swro_run(&f->ro, st, "deploy", "--no-worst-case", "--probe-only", PROBE, NULL);
}

/* ---- the outage meter: a process that asks for one generated token every 100 ms ---- */

static volatile sig_atomic_t g_meter_stop;

static void meter_term(int sig)
{
    (void)sig;
    g_meter_stop = 1;
}

static void meter_start(struct fx *f)
{
    snprintf(f->meter_out, sizeof(f->meter_out), "%s", swt_join(f->ro.dir, "meter.txt"));
    unlink(f->meter_out);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGTERM, meter_term);
        double total = 0, longest = 0, down_since = 0;
        long polls = 0, fails = 0;
        while (!g_meter_stop) {
            double t = now_ms();
            bool ok = swro_generates(f->ro.addr, f->ro.port, 3);
            if (g_meter_stop) /* the stop can cut this poll short (poll(2) is not restarted) */
                break;
            polls++;
            if (!ok) {
                fails++;
                if (down_since == 0)
                    down_since = t;
            } else if (down_since != 0) {
                double span = t - down_since;
                total += span;
                if (span > longest)
                    longest = span;
                down_since = 0;
            }
            usleep(100000);
        }
        /* The stop can come in the 100 ms between the last failed poll and the first one after
         * the step that brought the endpoint back (the rollback's own liveness check passed just
         * before): one last whole poll, with the stop already in, says whether it serves now. */
        if (down_since != 0 && swro_generates(f->ro.addr, f->ro.port, 3)) {
            double span = now_ms() - down_since;
            total += span;
            if (span > longest)
                longest = span;
            down_since = 0;
        }
        bool still = down_since != 0;
        if (still) {
            double span = now_ms() - down_since;
            total += span;
            if (span > longest)
                longest = span;
        }
        FILE *o = fopen(f->meter_out, "w");
        if (o) {
            fprintf(o, "%.0f %.0f %ld %ld %d\n", total, longest, polls, fails, still ? 1 : 0);
            fclose(o);
        }
        _exit(0);
    }
    f->meter = pid;
    /* it has seen the endpoint serve before the fault */
    usleep(300000);
}

/* The meter stopped: the total time not serving (ms), printed as OUTAGE. */
static long meter_stop(struct fx *f, const char *fault)
{
    assert_true(f->meter > 0);
    kill(f->meter, SIGTERM);
    int ws = 0;
    waitpid(f->meter, &ws, 0);
    f->meter = 0;
    FILE *in = fopen(f->meter_out, "r");
    assert_non_null(in);
    double total = 0, longest = 0;
    long polls = 0, fails = 0;
    int still = 0;
    assert_int_equal(fscanf(in, "%lf %lf %ld %ld %d", &total, &longest, &polls, &fails, &still), 5);
    fclose(in);
    print_message("OUTAGE fault=%s ms=%.0f (longest %.0f ms; %ld of %ld polls failed%s)\n", fault,
                  total, longest, fails, polls, still ? "; STILL DOWN" : "");
    assert_int_equal(still, 0);
    return (long)total;
}

/* ---- a deploy run as a child, its progress lines read as they come ---- */

struct child {
    pid_t pid;
    FILE *in;
    char out[65536];
    size_t len;
};

static void child_start(struct fx *f, struct child *c, const char *verb)
{
    int fds[2];
    memset(c, 0, sizeof(*c));
    assert_int_equal(pipe(fds), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execl(swt_bin(), swt_bin(), verb, "rf", "--fleet", f->ro.fleet, "--no-worst-case",
              "--probe-only", PROBE, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    c->in = fdopen(fds[0], "r");
    assert_non_null(c->in);
}

/* Read lines until one starts with the step word `step` (a progress line: "STEP  ok ..."), or
 * EOF. Returns whether it came. */
static bool child_until(struct child *c, const char *step)
{
    char line[4096];
    size_t sl = strlen(step);
    while (fgets(line, sizeof(line), c->in)) {
        size_t l = strlen(line);
        if (c->len + l < sizeof(c->out)) {
            memcpy(c->out + c->len, line, l);
            c->len += l;
            c->out[c->len] = '\0';
        }
        if (!strncmp(line, step, sl) && line[sl] == ' ')
            return true;
    }
    return false;
}

/* The rest of its output and its wait status. */
static int child_end(struct child *c)
{
    child_until(c, "\x01never");
    fclose(c->in);
    int ws = 0;
    waitpid(c->pid, &ws, 0);
    return ws;
}

/* The ledger's attempts of rf, newest first (history --json). */
static json_t *attempts(struct fx *f)
{
    int st = 0;
    json_t *j = swro_run(&f->ro, &st, "history", NULL);
    assert_int_equal(st, 0);
    json_t *a = json_incref(json_object_get(j, "attempts"));
    json_decref(j);
    return a;
}

static const json_t *attempt_by_id(const json_t *a, json_int_t id)
{
    size_t i;
    const json_t *x;
    json_array_foreach(a, i, x)
    {
        if (json_integer_value(json_object_get(x, "id")) == id)
            return x;
    }
    return NULL;
}

static json_int_t newest_attempt(struct fx *f)
{
    json_t *a = attempts(f);
    json_int_t id = json_integer_value(json_object_get(json_array_get(a, 0), "id"));
    json_decref(a);
    return id;
}

/* ---- (i) ssh drops mid-deploy ---- */

/* The host's sshd gone: the service stopped and every sshd process (the listener and each
 * session, slipway's master connection among them) killed, from the host's own namespaces. */
static void sever(const struct swth_host *h)
{
    char *out = NULL;
    int st = on_console(h,
                        "systemctl stop ssh.service ssh.socket 2>/dev/null; "
                        "pkill -KILL -x sshd; sleep 0.2; pgrep -x sshd || echo gone",
                        &out);
    print_message("sshd on %s severed (exit %d): %s", h->name, st, out ? out : "");
    assert_non_null(strstr(out, "gone"));
    free(out);
}

static void mend(const struct swth_host *h)
{
    char *out = NULL;
    int st = on_console(h,
                        /* a start right after the kill can fail (its ExecStartPre raced the
                         * last session's teardown, seen once in CI): bounded retries, then the
                         * unit's status and journal as the evidence */
                        "for i in 1 2 3 4 5; do "
                        "systemctl reset-failed ssh.service ssh.socket 2>/dev/null; "
                        "systemctl start ssh.service 2>&1 && exit 0; sleep 1; done; "
                        "systemctl status ssh.service 2>&1; journalctl -u ssh.service -n 20 "
                        "--no-pager 2>&1; exit 1",
                        &out);
    if (st)
        fail_msg("sshd on %s did not start again: %s", h->name, out);
    free(out);
    assert_int_equal(swth_wait(h, "true", 30, NULL), 0);
}

static json_int_t same_last_good(struct fx *f);

/* A leftover state made on the host by host_cmd; the rollback after it settles it first (its
 * second step, `reconcile`, saying want) and passes. */
static void reconciled_by_rollback(struct fx *f, const char *host_cmd, const char *want)
{
    int st = 0;
    free(swth_must(&f->ro.h, host_cmd));
    json_t *j = swro_run(&f->ro, &st, "rollback", NULL);
    swro_print_steps(j);
    assert_int_equal(st, 0);
    const json_t *rs = json_array_get(json_object_get(j, "steps"), 1);
    assert_string_equal(swro_str(rs, "step"), "reconcile");
    assert_non_null(strstr(swro_str(rs, "detail"), want));
    json_decref(j);
}

static void test_ssh_drop_converges(void **state)
{
    struct fx *f = *state;
    swro_up(&f->ro, &site_a);
    write_fleet(f, 512);
    swro_must_commit(&f->ro, "baseline");
    assert_true(swro_serves(&f->ro));

    /* 1. severed right after slipway stopped the old unit */
    json_int_t severed = newest_attempt(f) + 1;
    write_fleet(f, 1024);
    meter_start(f);
    struct child c;
    child_start(f, &c, "deploy");
    double t0 = now_ms();
    bool at_stop = child_until(&c, "stop");
    if (at_stop)
        sever(&f->ro.h);
    int ws = child_end(&c);
    double t_end = now_ms();
    print_message("the severed deploy (%.0f ms after the stop line):\n", t_end - t0);
    fputs(c.out, stdout);
    assert_true(at_stop);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 1);
    assert_non_null(strstr(c.out, "): interrupted"));
    assert_non_null(strstr(c.out, "ssh_dropped"));
    /* it did not hang on the dead transport */
    assert_true(t_end - t0 < 60000);
    char *lock = NULL;
    assert_int_equal(on_console(&f->ro.h, "cat /run/slipway/slipway-rf.lock", &lock), 0);
    print_message("the lock left on the host: %s", lock);
    free(lock);

    /* while sshd is down: refused before anything, at once */
    int st = 0;
    double t1 = now_ms();
    json_t *j = deploy(f, &st);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    print_message("a deploy while sshd is down: exit %d in %.0f ms: %s\n", st, now_ms() - t1,
                  msg ? msg : "");
    assert_int_equal(st, 1);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "unreachable"));
    json_decref(j);

    /* sshd back: the next deploy takes the dead process's lock over and converges */
    mend(&f->ro.h);
    j = deploy(f, &st);
    swro_print_steps(j);
    if (st != 0 || strcmp(swro_str(j, "outcome"), "committed"))
        fail_msg("the deploy after the drop: exit %d %s %s: %s", st, swro_str(j, "outcome"),
                 swro_str(j, "fail_class"), swro_str(j, "fail_msg"));
    const json_t *lk = json_array_get(json_object_get(j, "steps"), 2);
    assert_string_equal(swro_str(lk, "step"), "lock");
    assert_non_null(strstr(swro_str(lk, "detail"), "taken over from a dead holder: host="));
    print_downtime("ssh_drop_after_stop", j);
    json_decref(j);
    meter_stop(f, "ssh_drop_after_stop");
    assert_true(swro_live_has(&f->ro, "-c 1024"));
    assert_true(swro_serves(&f->ro));
    swro_nothing_staged(&f->ro);
    json_t *a = attempts(f);
    const json_t *x = attempt_by_id(a, severed);
    assert_non_null(x);
    print_message("the severed attempt in the ledger: #%lld %s %s\n", (long long)severed,
                  swro_str(x, "outcome"), swro_str(x, "failure_class"));
    assert_string_equal(swro_str(x, "outcome"), "interrupted");
    assert_string_equal(swro_str(x, "failure_class"), "ssh_dropped");
    x = attempt_by_id(a, severed + 1);
    assert_non_null(x);
    print_message("the attempt while sshd was down: #%lld %s %s\n", (long long)severed + 1,
                  swro_str(x, "outcome"), swro_str(x, "failure_class"));
    assert_string_equal(swro_str(x, "failure_class"), "unreachable");
    assert_string_equal(swro_str(json_array_get(a, 0), "outcome"), "committed");
    json_decref(a);

    /* 2. severed right after the start of the new shape (ctx 512 again), while slipway
     * follows the boot; `slipway rollback` converges to the last-good (ctx 1024) */
    write_fleet(f, 512);
    meter_start(f);
    child_start(f, &c, "deploy");
    t0 = now_ms();
    bool at_start = child_until(&c, "start");
    if (at_start)
        sever(&f->ro.h);
    ws = child_end(&c);
    t_end = now_ms();
    print_message("the deploy severed at the start (%.0f ms after the start line):\n", t_end - t0);
    fputs(c.out, stdout);
    assert_true(at_start);
    assert_int_equal(WEXITSTATUS(ws), 1);
    assert_non_null(strstr(c.out, "): interrupted"));
    assert_non_null(strstr(c.out, "ssh_dropped"));
    mend(&f->ro.h);
    j = swro_run(&f->ro, &st, "rollback", NULL);
    swro_print_steps(j);
    if (st != 0 || strcmp(swro_str(j, "outcome"), "restored"))
        fail_msg("rollback after the drop: exit %d %s %s: %s", st, swro_str(j, "outcome"),
                 swro_str(j, "fail_class"), swro_str(j, "fail_msg"));
    print_downtime("ssh_drop_after_start", j);
    json_decref(j);
    meter_stop(f, "ssh_drop_after_start");
    assert_true(swro_live_has(&f->ro, "-c 1024"));
    assert_true(swro_serves(&f->ro));
    swro_nothing_staged(&f->ro);
    a = attempts(f);
    x = json_array_get(a, 0);
    assert_string_equal(swro_str(x, "outcome"), "interrupted");
    assert_string_equal(swro_str(x, "failure_class"), "ssh_dropped");
    json_decref(a);

    /* 3. severed once the battery passed, in the commit: whatever the moment, once the next
     * run of the endpoint holds its lock (here the rollback) the ledger's last-good and the
     * host's last-good are the same shape (the commit's two halves: rollout/commit.c) */
    write_fleet(f, 512);
    child_start(f, &c, "deploy");
    bool at_probe = child_until(&c, "probe");
    if (at_probe)
        sever(&f->ro.h);
    ws = child_end(&c);
    print_message("the deploy severed in the commit:\n");
    fputs(c.out, stdout);
    assert_true(at_probe);
    mend(&f->ro.h);
    if (WEXITSTATUS(ws) != 0) {
        assert_non_null(strstr(c.out, "): interrupted"));
        j = swro_run(&f->ro, &st, "rollback", NULL);
        swro_print_steps(j);
        assert_int_equal(st, 0);
        json_decref(j);
    }
    same_last_good(f);
    assert_true(swro_serves(&f->ro));
    swro_nothing_staged(&f->ro);

    /* 4. the states a cut-off commit can leave, made by hand: a last-good.new of an attempt the
     * ledger committed (the host's half lost) is finished by the next run; one of an attempt it
     * never committed is removed, as is one whose copy was cut off */
    json_int_t proved = same_last_good(f);
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "set -e; s=/var/lib/slipway/rollout/slipway-rf; cp -pr $s/last-good $s/last-good.new; "
             "echo %lld > $s/last-good.new/.attempt; sed -i 's/-c [0-9]*/-c 77/' "
             "$s/last-good/" UNIT,
             (long long)proved);
    reconciled_by_rollback(f, cmd, "made of last-good.new");
    /* the hand-edited last-good was replaced by the committed set, which the rollback restored */
    assert_false(swro_live_has(&f->ro, "-c 77"));
    same_last_good(f);
    reconciled_by_rollback(f,
                           "set -e; s=/var/lib/slipway/rollout/slipway-rf; "
                           "cp -pr $s/last-good $s/last-good.new; "
                           "echo 999999 > $s/last-good.new/.attempt",
                           "never committed");
    /* and a first half cut off before its .attempt: never finished, whatever the ledger says */
    reconciled_by_rollback(f,
                           "set -e; s=/var/lib/slipway/rollout/slipway-rf; "
                           "mkdir -p $s/last-good.new; cp -p $s/last-good/" UNIT
                           " $s/last-good.new/",
                           "cut off before it was whole");
    assert_true(swro_serves(&f->ro));
    swro_nothing_staged(&f->ro);
}

/* The ledger's last-good tag and the host's last-good set hold the same context; the attempt
 * that committed the tag. */
static json_int_t same_last_good(struct fx *f)
{
    int st = 0;
    const json_t *x;
    json_t *h = swro_run(&f->ro, &st, "history", NULL);
    const char *lg = json_string_value(json_object_get(h, "last_good"));
    const json_t *lgt = NULL;
    size_t k;
    json_array_foreach(json_object_get(h, "tags"), k, x)
    {
        if (lg && !strcmp(swro_str(x, "name"), lg))
            lgt = x;
    }
    assert_non_null(lgt);
    char *host_lg =
        swth_must(&f->ro.h, "grep -o -- '-c [0-9]*' /var/lib/slipway/rollout/slipway-rf/"
                            "last-good/" UNIT);
    print_message("ledger last-good %s (%s); host last-good: %s", lg, swro_str(lgt, "summary"),
                  host_lg);
    bool ledger_512 = strstr(swro_str(lgt, "summary"), "ctx=512") != NULL;
    bool host_512 = strstr(host_lg, "-c 512") != NULL;
    assert_int_equal(ledger_512, host_512);
    free(host_lg);
    json_int_t id = json_integer_value(json_object_get(lgt, "attempt"));
    json_decref(h);
    assert_true(id > 0);
    return id;
}

/* ---- (ii) disk full while staging ---- */

static void test_disk_full_staging(void **state)
{
    struct fx *f = *state;
    swro_up(&f->ro, &site_a);
    write_fleet(f, 512);
    swro_must_commit(&f->ro, "baseline");
    /* a 1 MiB tmpfs over the unit directory, holding copies of what was there, then filled */
    char *out = swth_must(&f->ro.h, "set -e; d=/etc/systemd/system; rm -rf /root/sys.keep; "
                                    "mkdir /root/sys.keep; cp -a $d/. /root/sys.keep/; "
                                    "mount -t tmpfs -o size=1m,mode=0755 sw-rf-full $d; "
                                    "cp -a /root/sys.keep/. $d/; "
                                    "dd if=/dev/zero of=$d/.filler bs=4k 2>/dev/null || true; "
                                    "sync; df -k $d | tail -1");
    print_message("the unit directory on the host: %s", out);
    free(out);
    out =
        swth_must(&f->ro.h, "cat " LIVE " > /dev/null && echo x > /etc/systemd/system/.probe 2>&1 "
                            "|| echo full");
    assert_string_equal(out, "full\n");
    free(out);
    char *before = swth_must(&f->ro.h, "sha256sum " LIVE " " ENV);
    char pid0[64], nr0[64];
    swth_show(&f->ro.h, UNIT, "MainPID", pid0, sizeof(pid0));
    swth_show(&f->ro.h, UNIT, "NRestarts", nr0, sizeof(nr0));

    write_fleet(f, 1024);
    meter_start(f);
    int st = 0;
    json_t *j = deploy(f, &st);
    swro_print_steps(j);
    print_message("disk_full: outcome=%s step=%s class=%s\n  %s\n", swro_str(j, "outcome"),
                  swro_str(j, "failed_step"), swro_str(j, "fail_class"), swro_str(j, "fail_msg"));
    assert_int_equal(st, 1);
    assert_string_equal(swro_str(j, "outcome"), "refused");
    assert_string_equal(swro_str(j, "failed_step"), "stage");
    assert_string_equal(swro_str(j, "fail_class"), "disk_full");
    const char *msg = swro_str(j, "fail_msg");
    assert_non_null(strstr(msg, "rf-host"));
    assert_non_null(strstr(msg, LIVE ".new"));
    assert_non_null(strstr(msg, "No space left on device"));
    assert_false(json_is_true(json_object_get(j, "stopped")));
    assert_true(json_is_null(json_object_get(j, "downtime_ms")));
    json_int_t refused_attempt = json_integer_value(json_object_get(j, "attempt"));
    json_decref(j);
    long outage = meter_stop(f, "disk_full");
    assert_int_equal(outage, 0);
    /* nothing half-written, nothing changed, the unit never stopped */
    swro_nothing_staged(&f->ro);
    char *after = swth_must(&f->ro.h, "sha256sum " LIVE " " ENV);
    assert_string_equal(before, after);
    free(after);
    char pid1[64], nr1[64];
    swth_show(&f->ro.h, UNIT, "MainPID", pid1, sizeof(pid1));
    swth_show(&f->ro.h, UNIT, "NRestarts", nr1, sizeof(nr1));
    assert_string_equal(pid0, pid1);
    assert_string_equal(nr0, nr1);
    assert_true(swro_serves(&f->ro));
    json_t *a = attempts(f);
    const json_t *x = attempt_by_id(a, refused_attempt);
    assert_non_null(x);
    print_message("the refused attempt in the ledger: #%lld %s %s\n", (long long)refused_attempt,
                  swro_str(x, "outcome"), swro_str(x, "failure_class"));
    assert_string_equal(swro_str(x, "failure_class"), "disk_full");
    json_decref(a);
    free(before);

    /* room again: the same deploy converges */
    free(swth_must(&f->ro.h, "rm -f /etc/systemd/system/.filler"));
    swro_must_commit(&f->ro, "the deploy with room again");
    assert_true(swro_live_has(&f->ro, "-c 1024"));
    assert_true(swro_serves(&f->ro));
    swro_nothing_staged(&f->ro);
}

/* ---- (iii) slipway killed in each step ---- */

static void check_tags_restorable(struct fx *f);

struct kill_point {
    const char *after; /* the progress line it is killed on */
    const char *in;    /* the step that runs then */
    bool rollback;     /* converge with `rollback` instead of deploy */
};

static void test_killed_at_each_step(void **state)
{
    struct fx *f = *state;
    static const struct kill_point points[] = {
        {"lock", "stage", false},       {"swap", "stop", false},      {"stop", "start", false},
        {"start", "boot-follow", true}, {"liveness", "probe", false}, {"probe", "commit", false},
    };
    swro_up(&f->ro, &site_b);
    /* the payload on the host's own disk (the bind is read-only): the end moves it away */
    free(swth_must(&f->ro.h, "mkdir -p /srv/m && cp /models/chat.gguf /srv/m/chat.gguf"));
    snprintf(f->payload, sizeof(f->payload), "/srv/m/chat.gguf");
    int ctx = 512;
    write_fleet(f, ctx);
    swro_must_commit(&f->ro, "baseline");
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        const struct kill_point *p = &points[i];
        int next = ctx == 512 ? 1024 : 512;
        json_int_t before = newest_attempt(f);
        write_fleet(f, next);
        meter_start(f);
        struct child c;
        child_start(f, &c, "deploy");
        bool came = child_until(&c, p->after);
        if (came)
            kill(c.pid, SIGKILL);
        int ws = child_end(&c);
        if (!came || !WIFSIGNALED(ws))
            fail_msg("kill after %s: the line %s, ws %d:\n%s", p->after,
                     came ? "came" : "never came", ws, c.out);
        char *lock = NULL;
        on_console(&f->ro.h, "cat /run/slipway/slipway-rf.lock 2>/dev/null || echo none", &lock);
        print_message("killed in %s (after the %s line); lock left: %s", p->in, p->after, lock);
        free(lock);
        /* the ledger does not say `running` for it: its process is gone */
        json_t *a = attempts(f);
        const json_t *x = attempt_by_id(a, before + 1);
        assert_non_null(x);
        /* killed in commit, the ledger's tag may have landed before the host's copy: then it
         * says committed (true of the ledger; the host converges on the next run) */
        if (strcmp(swro_str(x, "outcome"), "interrupted") &&
            !(strcmp(p->in, "commit") == 0 && strcmp(swro_str(x, "outcome"), "committed") == 0))
            fail_msg("killed in %s: attempt #%lld is %s", p->in, (long long)(before + 1),
                     swro_str(x, "outcome"));
        bool ledger_committed = strcmp(swro_str(x, "outcome"), "committed") == 0;
        json_decref(a);

        int st = 0;
        json_t *j = p->rollback ? swro_run(&f->ro, &st, "rollback", NULL) : deploy(f, &st);
        const char *want = p->rollback ? "restored" : "committed";
        if (st != 0 || strcmp(swro_str(j, "outcome"), want)) {
            swro_print_steps(j);
            fail_msg("after a kill in %s: exit %d %s %s: %s", p->in, st, swro_str(j, "outcome"),
                     swro_str(j, "fail_class"), swro_str(j, "fail_msg"));
        }
        char fault[64];
        snprintf(fault, sizeof(fault), "killed_in_%s", p->in);
        print_downtime(fault, j);
        if (!p->rollback) {
            /* the commit records the payload's digest and the device readings (this host has
             * no device tool: it says so) */
            const json_t *steps = json_object_get(j, "steps");
            const json_t *cm = json_array_get(steps, json_array_size(steps) - 1);
            print_message("commit: %s\n", swro_str(cm, "detail"));
            assert_string_equal(swro_str(cm, "step"), "commit");
            assert_non_null(strstr(swro_str(cm, "detail"), "payload 1 file(s) hashed"));
            assert_non_null(
                strstr(swro_str(cm, "detail"), "device readings: none (no device tool"));
        }
        json_decref(j);
        meter_stop(f, fault);
        if (!p->rollback)
            ctx = next;
        char needle[32];
        snprintf(needle, sizeof(needle), "-c %d", ctx);
        assert_true(swro_live_has(&f->ro, needle));
        assert_true(swro_serves(&f->ro));
        swro_nothing_staged(&f->ro);
        /* recorded: interrupted, with the step it last finished */
        a = attempts(f);
        x = attempt_by_id(a, before + 1);
        assert_non_null(x);
        const json_t *ev = json_object_get(x, "evidence");
        print_message("ledger: attempt #%lld %s (recovered %s), last step %s\n",
                      (long long)(before + 1), swro_str(x, "outcome"),
                      json_is_true(json_object_get(x, "recovered")) ? "yes" : "not yet",
                      swro_str(ev, "last_step"));
        if (!ledger_committed)
            assert_string_equal(swro_str(x, "outcome"), "interrupted");
        size_t k;
        const json_t *y;
        json_array_foreach(a, k, y)
        {
            if (!strcmp(swro_str(y, "outcome"), "running"))
                fail_msg("attempt #%lld is still `running`",
                         (long long)json_integer_value(json_object_get(y, "id")));
        }
        json_decref(a);
    }
    check_tags_restorable(f);
}

/* (iv) the tags: the payload with its sha256 as read on the host, restorable while it is there;
 * with the payload gone, `slipway history` says not restorable and names what is missing. */
static void check_tags_restorable(struct fx *f)
{
    char *sum = swth_must(&f->ro.h, "sha256sum /srv/m/chat.gguf");
    sum[64] = '\0';
    int st = 0;
    json_t *h = swro_run(&f->ro, &st, "history", NULL);
    assert_int_equal(st, 0);
    const json_t *t = json_array_get(json_object_get(h, "tags"), 0);
    const json_t *p0 = json_array_get(json_object_get(t, "payload"), 0);
    print_message(
        "tag %s: payload %s size %lld sha256 %s; restorable %s (%s)\n", swro_str(t, "name"),
        swro_str(p0, "path"), (long long)json_integer_value(json_object_get(p0, "size")),
        swro_str(p0, "sha256"), json_is_true(json_object_get(t, "restorable")) ? "yes" : "no",
        swro_str(t, "restorable_why"));
    assert_string_equal(swro_str(p0, "path"), "/srv/m/chat.gguf");
    assert_string_equal(swro_str(p0, "sha256"), sum);
    assert_true(json_is_true(json_object_get(t, "restorable")));
    json_decref(h);
    /* the human view shows the digest, and the commit step said what the devices read */
    const char *hv[] = {swt_bin(), "history", "rf", "--fleet", f->ro.fleet, NULL};
    struct swt_run hr;
    assert_int_equal(swt_run(hv, NULL, 60, &hr), 0);
    assert_non_null(strstr(hr.out, sum));
    swt_run_free(&hr);
    free(sum);
    free(swth_must(&f->ro.h, "mv /srv/m/chat.gguf /srv/m/chat.gguf.away"));
    h = swro_run(&f->ro, &st, "history", NULL);
    assert_int_equal(st, 0);
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(h, "tags"), i, x)
    {
        if (!json_is_false(json_object_get(x, "restorable")))
            fail_msg("tag %s is restorable %s with its payload gone", swro_str(x, "name"),
                     json_dumps(json_object_get(x, "restorable"), JSON_ENCODE_ANY));
        assert_string_equal(json_string_value(json_array_get(json_object_get(x, "missing"), 0)),
                            "/srv/m/chat.gguf");
    }
    json_decref(h);
    const char *argv[] = {swt_bin(), "history", "rf", "--fleet", f->ro.fleet, NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 60, &r), 0);
    print_message("slipway history with the payload gone:\n%s", r.out);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "restorable: NO"));
    swt_run_free(&r);
    free(swth_must(&f->ro.h, "mv /srv/m/chat.gguf.away /srv/m/chat.gguf"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ssh_drop_converges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full_staging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_at_each_step, setup, teardown),
    };
    /* SW_TEST_FILTER=test_disk_full_staging: one test only; SW_TEST_SKIP=PATTERN: all but
     * those (the ASan+UBSan build skips test_killed_at_each_step: CMakeLists.txt says why) */
    if (getenv("SW_TEST_FILTER"))
        cmocka_set_test_filter(getenv("SW_TEST_FILTER"));
    if (getenv("SW_TEST_SKIP"))
        cmocka_set_skip_filter(getenv("SW_TEST_SKIP"));
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
