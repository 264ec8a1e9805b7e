/*
 * Real tier: `slipway watch` over two real test hosts (scripts/testhost.sh: systemd, journald,
 * sshd, each on a network of its own: 169.254.50.2 and 169.254.51.2), each serving a vLLM
 * endpoint whose engine is slipway's simulator (as tests/real/test_rollout_sim.c does: vLLM needs
 * a GPU this machine does not have), deployed by the real rollout so each has a last-good set.
 * One watch process (this build's binary, --json, --metrics) over both, in order:
 *   (a) both are observed serving; the schedule's job (the ladder, --dry-run) runs inside its
 *       window, and a job that overruns its timeout is stopped and recorded overran; a job whose
 *       ledger says it last ran three slots ago (watch "was down") runs once now and records
 *       the slots in between missed, in one row;
 *   (b) the sim's dead_generation fault (/health stays 200, no generation is ever answered) is
 *       restarted within one interval + 2 s of the fault, an alert is delivered to the exec hook
 *       with the evidence (the look's liveness), and it serves again;
 *   (c) the metrics page passes `promtool check metrics` (a missing promtool fails);
 *   (d) the fault again; watch is killed (SIGKILL) right after its restart, started again: no
 *       second restart of that episode;
 *   (e) host B frozen (every process SIGSTOPped): wb is reported unreachable within one interval
 *       + its deadline + 2 s while wa's looks go on, and nothing is done on B; thawed, wb serves
 *       again;
 *   (f) wa's engine made to crash-loop (its env file edited on the host, the unit restarted):
 *       rolled back to last-good after rollback_after (3) restarts, and serves; the rollback is
 *       a rollout attempt in the ledger (`slipway history` shows it rolled_back);
 *   (g) `slipway logs` reads wa's journal from its host through the fleet (the crash loop's
 *       refusal among its lines);
 *   (h) host A as a control machine (this build's slipway from /opt/sim): `install --watch
 *       --start` writes, enables and starts slipway-watch.service, whose watch records wa
 *       serving; a second install whose watch cannot bind its metrics address does not stay up,
 *       and the first unit is put back and runs again;
 *   (i) `slipway logs` of endpoints `up --detach` runs on this machine with the real llama-server:
 *       one whose KV cache cannot be allocated (a context larger than this machine's memory)
 *       shows the allocation failure classified oom from up's log; one that serves is followed
 *       (-f) until SIGINT, and until `slipway down` ends the engine;
 *   (j) the same allocation failure in a real journal: a llama.cpp endpoint installed on host
 *       B, `slipway logs` shows its line classified.
 * The hosts come down in the teardown, also when a check fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swllama.h"
#include "swrollout.h"
#include "swthost.h"
#include "swtest.h"

#include <slipway/ledger.h>

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INTERVAL_S 3

static const struct swro_site site_a = {"sw-wa-a", "169.254.50.2", "wa-host", "wa"};
static const struct swro_site site_b = {"sw-wa-b", "169.254.51.2", "wb-host", "wb"};

struct fx {
    struct swro a, b;
    char *root; /* the sim's bound directory */
    char fleet[4200], out[4200], ledger[4200];
    int mport;
    pid_t watch;
    bool b_frozen;
};

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* SIGSTOP or SIGCONT every process in the host's PID namespace (test_install_status's way). */
static int signal_host(const struct swth_host *h, int sig)
{
    char p[64], ns[128], pns[128];
    int n = 0;
    snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)h->leader);
    ssize_t l = readlink(p, ns, sizeof(ns) - 1);
    if (l <= 0)
        return 0;
    ns[l] = '\0';
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 1)
            continue;
        snprintf(p, sizeof(p), "/proc/%ld/ns/pid", pid);
        l = readlink(p, pns, sizeof(pns) - 1);
        if (l <= 0)
            continue;
        pns[l] = '\0';
        if (!strcmp(ns, pns) && kill((pid_t)pid, sig) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static void stop_watch(struct fx *f, int sig)
{
    if (f->watch > 0) {
        kill(f->watch, sig);
        int st;
        waitpid(f->watch, &st, 0);
    }
    f->watch = 0;
}

static int setup(void **state)
{
    *state = calloc(1, sizeof(struct fx));
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    stop_watch(f, SIGKILL);
    if (f->b_frozen)
        signal_host(&f->b.h, SIGCONT);
    swro_close(&f->a);
    swro_close(&f->b);
    if (f->root)
        swt_tmpdir_free(f->root);
    free(f);
    return 0;
}

/* dir/slipway, dir/lib/ (what it links but libc and the loader), dir/vllm (the wrapper),
 * dir/model/config.json: test_rollout_sim's layout. */
static void make_simroot(const char *dir)
{
    char lib[4200], cmd[8400];
    snprintf(lib, sizeof(lib), "%s/lib", dir);
    assert_int_equal(mkdir(lib, 0755), 0);
    snprintf(cmd, sizeof(cmd), "%s/model", dir);
    assert_int_equal(mkdir(cmd, 0755), 0);
    swt_write_str(swt_join(cmd, "config.json"), SWT_LLAMA8B_CONFIG);
    const char *cp[] = {"cp", swt_bin(), swt_join(dir, "slipway"), NULL};
    struct swt_run r;
    assert_int_equal(swt_run(cp, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    const char *ldd[] = {"ldd", swt_bin(), NULL};
    assert_int_equal(swt_run(ldd, NULL, 60, &r), 0);
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        char *arrow = strstr(line, "=> /");
        char path[1024], copy[1100];
        if (!arrow || sscanf(arrow + 3, "%1023s", path) != 1)
            continue;
        snprintf(copy, sizeof(copy), "%s", path);
        const char *base = basename(copy);
        if (!strncmp(base, "libc.so", 7) || !strncmp(base, "ld-linux", 8))
            continue;
        const char *c[] = {"cp", "-L", path, lib, NULL};
        struct swt_run rc;
        assert_int_equal(swt_run(c, NULL, 60, &rc), 0);
        swt_run_free(&rc);
    }
    swt_run_free(&r);
    snprintf(cmd, sizeof(cmd), "%s/vllm", dir);
    swt_write_str(cmd, "#!/bin/sh\n"
                       "# slipway's simulator standing in for vLLM (tests/real/test_watch.c)\n"
                       "export LD_LIBRARY_PATH=/opt/sim/lib ASAN_OPTIONS=detect_leaks=0\n"
                       "exec /opt/sim/slipway sim --engine vllm --device-memory 24GiB --weights "
                       "16GiB --load-time 1s $SIM_FLAGS -- vllm \"$@\"\n");
    assert_int_equal(chmod(cmd, 0755), 0);
    assert_int_equal(chmod(swt_join(dir, "slipway"), 0755), 0);
}

static int host_lines(const struct swro *r, char *out, size_t n)
{
    return snprintf(out, n,
                    "  %s:\n"
                    "    transport: {kind: ssh, address: %s, user: root, identity_file: %s, "
                    "known_hosts: %s}\n"
                    "    devices:\n"
                    "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}\n",
                    r->fleet_host, r->addr, r->h.key, r->h.known_hosts);
}

static int endpoint_lines(const struct swro *r, const char *watch, char *out, size_t n)
{
    return snprintf(out, n,
                    "  %s:\n"
                    "    host: %s\n"
                    "    devices: [g0]\n"
                    "    engine: vllm\n"
                    "    binary: /opt/sim/vllm\n"
                    "    runtime: native\n"
                    "    listen: 127.0.0.1:%d\n"
                    "    alias: %s-8b\n"
                    "    payload: {path: /opt/sim/model}\n"
                    "    shape: {max_model_len: 4096, seqs: 2}\n"
                    "    env:\n"
                    "      SIM_FLAGS: \"\"\n"
                    "    service:\n"
                    "      restart_sec: 1s\n"
                    "%s",
                    r->endpoint, r->fleet_host, r->port, r->endpoint, watch);
}

/* r's own fleet (for its deploy): its host, its endpoint. */
static void write_own_fleet(struct swro *r)
{
    char text[8192];
    int n = snprintf(text, sizeof(text), "version: 1\nhosts:\n");
    n += host_lines(r, text + n, sizeof(text) - (size_t)n);
    n += snprintf(text + n, sizeof(text) - (size_t)n, "endpoints:\n");
    n += endpoint_lines(r, "", text + n, sizeof(text) - (size_t)n);
    assert_true((size_t)n < sizeof(text));
    swt_write_str(r->fleet, text);
}

/* HH:MM of now + delta minutes, UTC. */
static void hhmm(int delta_min, char *out, size_t n)
{
    time_t t = time(NULL) + delta_min * 60;
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, n, "%02d:%02d", tm.tm_hour, tm.tm_min);
}

/* The watch fleet: both hosts and endpoints as their own fleets have them (so nothing drifts),
 * each with a watch: policy, one exec alert hook, two jobs. */
static void write_watch_fleet(struct fx *f)
{
    char text[16384], w0[8], w1[8];
    const char *pol = "    watch: {interval: 3s, rollback_after: 3, restart: {max: 5, window: "
                      "10m}}\n";
    hhmm(-1, w0, sizeof(w0));
    hhmm(10, w1, sizeof(w1));
    int n = snprintf(text, sizeof(text), "version: 1\nhosts:\n");
    n += host_lines(&f->a, text + n, sizeof(text) - (size_t)n);
    n += host_lines(&f->b, text + n, sizeof(text) - (size_t)n);
    n += snprintf(text + n, sizeof(text) - (size_t)n, "endpoints:\n");
    n += endpoint_lines(&f->a, pol, text + n, sizeof(text) - (size_t)n);
    n += endpoint_lines(&f->b, pol, text + n, sizeof(text) - (size_t)n);
    n += snprintf(text + n, sizeof(text) - (size_t)n,
                  "alert:\n"
                  "  - {exec: 'cat > %s/alert.$(date +%%s%%N).json', deadline: 5s, retries: 1}\n"
                  "schedule:\n"
                  "  - {name: quick, endpoint: wb, run: '%s ladder wb --fleet \"$SLIPWAY_FLEET\" "
                  "--dry-run --no-ledger --min 2048 --max 8192 > %s/ladder.out 2>&1 && echo "
                  "\"ran $SLIPWAY_ENDPOINT\" >> %s/job.out', every: 1h, window: '%s-%s'}\n"
                  "  - {name: long, endpoint: wa, run: 'sleep 60', every: 1h, timeout: 2s, "
                  "window: '%s-%s'}\n"
                  "  - {name: catchup, run: 'echo ran >> %s/catchup.out', every: 1m}\n",
                  f->a.dir, swt_bin(), f->a.dir, f->a.dir, w0, w1, w0, w1, f->a.dir);
    assert_true((size_t)n < sizeof(text));
    snprintf(f->fleet, sizeof(f->fleet), "%s", swt_join(f->a.dir, "watch.yaml"));
    /* wa's deploy ledger (beside its own fleet): watch's rollback of wa is an attempt there */
    snprintf(f->ledger, sizeof(f->ledger), "%s", swt_join(f->a.dir, "fleet.ledger.sqlite"));
    assert_int_equal(access(f->ledger, F_OK), 0);
    snprintf(f->out, sizeof(f->out), "%s", swt_join(f->a.dir, "watch.out"));
    swt_write_str(f->fleet, text);
    /* catchup last ran three one-minute slots ago (no window: slot = unix minute) */
    struct sw_ledger l;
    struct sw_err e;
    char key[64];
    sw_err_clear(&e);
    assert_int_equal(sw_ledger_open(&l, f->ledger, NULL, &e), 0);
    snprintf(key, sizeof(key), "job#catchup#%lld", (long long)(time(NULL) / 60 - 3));
    struct sw_ledger_watch_event ev = {.endpoint = "-",
                                       .kind = "job",
                                       .state = "started",
                                       .action = "catchup",
                                       .action_key = key,
                                       .outcome = "started",
                                       .observed_ms = ((int64_t)time(NULL) - 180) * 1000};
    assert_int_equal(sw_ledger_record_watch(&l, &ev, NULL, &e), 0);
    sw_ledger_close(&l);
}

static void start_watch(struct fx *f)
{
    char port[32];
    snprintf(port, sizeof(port), "127.0.0.1:%d", f->mport);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* never outlives the test: a watch left by a killed run acts on the next run's hosts
         * (the same names and addresses), which is how one killed run failed every later one */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(127);
        int fd = open(f->out, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(swt_bin(), swt_bin(), "watch", "--fleet", f->fleet, "--ledger", f->ledger, "--json",
              "--metrics", port, (char *)NULL);
        _exit(127);
    }
    f->watch = pid;
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return strdup("");
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    if (fread(s, 1, (size_t)n, fp) != (size_t)n)
        s[0] = '\0';
    fclose(fp);
    return s;
}

/* Lines of watch's output (from byte `from`) holding every needle; the count. */
static int count_lines(const struct fx *f, size_t from, const char *n1, const char *n2,
                       const char *n3)
{
    char *s = slurp(f->out);
    int c = 0;
    char *p = strlen(s) > from ? s + from : s + strlen(s);
    for (char *line = strtok(p, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, n1) && (!n2 || strstr(line, n2)) && (!n3 || strstr(line, n3)))
            c++;
    free(s);
    return c;
}

static size_t out_len(const struct fx *f)
{
    struct stat st;
    return stat(f->out, &st) ? 0 : (size_t)st.st_size;
}

/* Wait (at most timeout_s) until a line from `from` holds every needle; ms it took, -1 never. */
static long wait_line(const struct fx *f, size_t from, unsigned timeout_s, const char *n1,
                      const char *n2, const char *n3)
{
    long t0 = now_ms();
    while (now_ms() - t0 < (long)timeout_s * 1000) {
        if (count_lines(f, from, n1, n2, n3))
            return now_ms() - t0;
        sleep_ms(50);
    }
    char *s = slurp(f->out);
    print_message("watch's output so far:\n%s\n", s);
    free(s);
    return -1;
}

static json_t *ledger_rows(const struct fx *f, const char *ep, const char *kind)
{
    struct sw_ledger l;
    struct sw_err e;
    struct sw_ledger_open_opts o = {.readonly = true};
    json_t *rows = NULL;
    sw_err_clear(&e);
    assert_int_equal(sw_ledger_open(&l, f->ledger, &o, &e), 0);
    assert_int_equal(sw_ledger_watch_list(&l, ep, kind, 0, &rows, &e), 0);
    sw_ledger_close(&l);
    return rows;
}

/* Restart claims (outcome started) of ep in the ledger. */
static int restarts_claimed(const struct fx *f, const char *ep)
{
    json_t *rows = ledger_rows(f, ep, "action");
    int n = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *a = json_string_value(json_object_get(r, "action"));
        const char *o = json_string_value(json_object_get(r, "outcome"));
        if (a && o && !strcmp(a, "restart") && !strcmp(o, "started"))
            n++;
    }
    json_decref(rows);
    return n;
}

static void fault(const struct swro *r, const char *kind)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "curl -sf -m 5 -X POST -d '{\"kind\": \"%s\"}' http://127.0.0.1:%d/sim/fault", kind,
             r->port);
    char *o = swth_must(&r->h, cmd);
    free(o);
}

static char *metrics(const struct fx *f)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", f->mport);
    const char *argv[] = {"curl", "-sf", "-m", "5", url, NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 10, &r), 0);
    assert_int_equal(r.status, 0);
    char *s = strdup(r.out);
    swt_run_free(&r);
    return s;
}

static double metric(const char *page, const char *series)
{
    const char *p = strstr(page, series);
    return p ? strtod(p + strlen(series), NULL) : -1;
}

/* A context this machine cannot hold: its KV cache (2 KiB a token for the chat model's 4 layers
 * x 2 x 64 dims x f32... measured: 32768 MiB at 16 Mi tokens) at 1.5 x memory + swap, so the one
 * allocation fails at once (a larger one spends seconds on per-cell arrays first). */
static unsigned long long oom_ctx(void)
{
    FILE *m = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0, v;
    assert_non_null(m);
    while (fgets(line, sizeof(line), m))
        if (sscanf(line, "MemTotal: %llu kB", &v) == 1 ||
            sscanf(line, "SwapTotal: %llu kB", &v) == 1)
            kb += v;
    fclose(m);
    return (kb * 1024ull * 3 / 2 / 2048 + 255) / 256 * 256;
}

/* What `slipway logs ... --json` printed: its lines, how many classified (the first one in
 * words), and the first line holding needle (classified cls, when cls is given). */
struct logs_seen {
    int lines, classified;
    bool saw;
    char first[700], hit[700];
};

static void logs_scan(const char *const *argv, const char *needle, const char *cls,
                      struct logs_seen *ls)
{
    struct swt_run lr;
    memset(ls, 0, sizeof(*ls));
    assert_int_equal(swt_run(argv, NULL, 60, &lr), 0);
    if (lr.status)
        fail_msg("slipway logs: exit %d: %s", lr.status, lr.err);
    for (char *line = strtok(lr.out, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t je;
        json_t *lj = json_loads(line, 0, &je);
        assert_non_null(lj);
        ls->lines++;
        const char *c = json_string_value(json_object_get(lj, "class"));
        if (c && !ls->classified++)
            snprintf(ls->first, sizeof(ls->first), "%s/%s: %.600s", c, swro_str(lj, "phase"),
                     swro_str(lj, "line"));
        if (!ls->saw && strstr(swro_str(lj, "line"), needle) && (!cls || (c && !strcmp(c, cls)))) {
            ls->saw = true;
            snprintf(ls->hit, sizeof(ls->hit), "%s/%s: %.600s", c ? c : "-", swro_str(lj, "phase"),
                     swro_str(lj, "line"));
        }
        json_decref(lj);
    }
    swt_run_free(&lr);
}

/* logs_scan that must find needle classified cls. */
static void logs_classified(const char *const *argv, const char *cls, const char *needle)
{
    struct logs_seen ls;
    logs_scan(argv, needle, cls, &ls);
    if (!ls.saw)
        fail_msg("slipway logs %s: no line with '%s' classified %s among %d", argv[2], needle, cls,
                 ls.lines);
    print_message("logs %s: %d lines, classified %s\n", argv[2], ls.lines, ls.hit);
}

/* slipway logs -f in the background, its output in out. */
static pid_t follow_logs(const char *fleet, const char *ep, const char *out)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(swt_bin(), swt_bin(), "logs", ep, "--fleet", fleet, "-f", "-n", "3", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Wait up to timeout_ms for pid to exit: its exit status, -1 when it did not (then killed). */
static int exited_within(pid_t pid, long timeout_ms, long *took)
{
    long t0 = now_ms();
    int st;
    while (now_ms() - t0 < timeout_ms) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            *took = now_ms() - t0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* (i) up's log here, with the real llama-server. */
static void local_up_logs(struct fx *f)
{
    swt_need(swl_llama_dir() != NULL, "%s", swl_missing());
    char run[4200], fleet[4200], text[4096], out[4200];
    snprintf(run, sizeof(run), "%s", swt_join(f->a.dir, "run"));
    assert_int_equal(mkdir(run, 0700), 0);
    setenv("SLIPWAY_RUN_DIR", run, 1);
    snprintf(fleet, sizeof(fleet), "%s", swt_join(f->a.dir, "local.yaml"));
    snprintf(text, sizeof(text),
             "version: 1\nhosts:\n  here: {transport: local}\nendpoints:\n"
             "  lo-oom:\n    host: here\n    engine: llama.cpp\n    binary: %s\n"
             "    listen: 127.0.0.1:%d\n    payload: {path: %s}\n"
             "    shape: {ctx_size: %llu, seqs: 1}\n    args: [\"--fit\", \"off\"]\n"
             "  lo-ok:\n    host: here\n    engine: llama.cpp\n    binary: %s\n"
             "    listen: 127.0.0.1:%d\n    payload: {path: %s}\n"
             "    shape: {ctx_size: 2048, seqs: 1}\n",
             swl_bin("llama-server"), swt_free_port(), swth_gm.model, oom_ctx(),
             swl_bin("llama-server"), swt_free_port(), swth_gm.model);
    swt_write_str(fleet, text);
    struct swt_run r;
    const char *up_oom[] = {swt_bin(),     "up",      "lo-oom", "--detach",
                            "--no-ledger", "--fleet", fleet,    NULL};
    assert_int_equal(swt_run(up_oom, NULL, 120, &r), 0);
    print_message("up lo-oom: exit %d: %s\n", r.status, strstr(r.err, "boot FAILED") ?: r.err);
    assert_int_not_equal(r.status, 0);
    swt_run_free(&r);
    const char *logs[] = {swt_bin(), "logs", "lo-oom", "--fleet", fleet, "--json", NULL};
    logs_classified(logs, "oom", "failed to allocate buffer for kv cache");
    /* a serving one, followed: SIGINT ends the reading; the engine's exit ends it too */
    const char *up_ok[] = {swt_bin(),     "up",      "lo-ok", "--detach",
                           "--no-ledger", "--fleet", fleet,   NULL};
    assert_int_equal(swt_run(up_ok, NULL, 120, &r), 0);
    if (r.status)
        fail_msg("up lo-ok: exit %d: %s", r.status, r.err);
    swt_run_free(&r);
    snprintf(out, sizeof(out), "%s", swt_join(f->a.dir, "follow.out"));
    pid_t fl = follow_logs(fleet, "lo-ok", out);
    sleep_ms(1000);
    kill(fl, SIGINT);
    long took = 0;
    int st = exited_within(fl, 5000, &took);
    print_message("logs -f: SIGINT ended it in %ld ms (exit %d)\n", took, st);
    assert_int_equal(st, 0);
    fl = follow_logs(fleet, "lo-ok", out);
    sleep_ms(1000);
    const char *down[] = {swt_bin(), "down", "lo-ok", "--fleet", fleet, NULL};
    assert_int_equal(swt_run(down, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    st = exited_within(fl, 5000, &took);
    char *followed = slurp(out);
    print_message("logs -f: the engine's exit ended it %ld ms after down (exit %d), %zu bytes\n",
                  took, st, strlen(followed));
    assert_int_equal(st, 0);
    assert_non_null(strstr(followed, "up's log"));
    free(followed);
    unsetenv("SLIPWAY_RUN_DIR");
}

/* (j) the allocation failure in host B's journal, classified by `slipway logs`. */
static void journal_oom_logs(struct fx *f)
{
    char text[8192], fleet[4200];
    int n = swro_fleet_head(&f->b, "cpu: {kind: cpu, vendor: cpu}", text, sizeof(text));
    n += snprintf(text + n, sizeof(text) - (size_t)n,
                  "  wx:\n    host: %s\n    engine: llama.cpp\n"
                  "    binary: /opt/llama/bin/llama-server\n    runtime: native\n"
                  "    listen: 127.0.0.1:%d\n    payload: {path: /models/chat.gguf}\n"
                  "    shape: {ctx_size: %llu, seqs: 1, n_gpu_layers: 0}\n"
                  "    args: [\"--fit\", \"off\"]\n",
                  f->b.fleet_host, swt_free_port(), oom_ctx());
    assert_true((size_t)n < sizeof(text));
    snprintf(fleet, sizeof(fleet), "%s", swt_join(f->b.dir, "oom.yaml"));
    swt_write_str(fleet, text);
    const char *inst[] = {swt_bin(), "install",   "wx",  "--fleet",     fleet,
                          "--start", "--timeout", "60s", "--no-ledger", NULL};
    struct swt_run r;
    assert_int_equal(swt_run(inst, NULL, 120, &r), 0);
    print_message("install wx (a context the host cannot hold): exit %d\n", r.status);
    assert_int_not_equal(r.status, 0);
    swt_run_free(&r);
    const char *logs[] = {swt_bin(), "logs", "wx", "--fleet", fleet, "--json", "-n", "400", NULL};
    logs_classified(logs, "oom", "failed to allocate buffer for kv cache");
    free(swth_must(&f->b.h, "systemctl stop slipway-wx.service || true"));
}

/* (h) host A as the control machine: install --watch there, then one that must be put back. */
static void install_watch_on(struct swro *a)
{
    char text[8192];
    int n = snprintf(text, sizeof(text),
                     "version: 1\nhosts:\n  %s:\n    transport: local\n    devices:\n"
                     "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}\nendpoints:\n",
                     a->fleet_host);
    n += endpoint_lines(a, "    watch: {interval: 3s, act: false}\n", text + n,
                        sizeof(text) - (size_t)n);
    assert_true((size_t)n < sizeof(text));
    /* what /opt/sim/slipway links that the host's root lacks (libc and the loader are its own) */
    free(swth_must(&a->h, "cp -n /opt/sim/lib/* /usr/lib/x86_64-linux-gnu/ && mkdir -p "
                          "/var/lib/slipway"));
    assert_int_equal(swth_put(&a->h, "/root/ctl.yaml", text), 0);
    const char *inst = "ASAN_OPTIONS=detect_leaks=0 /opt/sim/slipway install --watch --start "
                       "--fleet /root/ctl.yaml --ledger /var/lib/slipway/watch.sqlite --json";
    struct swt_run r;
    assert_int_equal(swth_ssh(&a->h, inst, NULL, 120, &r), 0);
    json_t *j = swt_json_out(&r);
    if (r.status)
        fail_msg("install --watch: exit %d: %s %s", r.status, r.out, r.err);
    swt_run_free(&r);
    assert_true(json_is_true(json_object_get(j, "serving")));
    json_decref(j);
    char *o = swth_must(&a->h, "systemctl is-enabled slipway-watch.service; systemctl is-active "
                               "slipway-watch.service; systemctl show -P ExecStart "
                               "slipway-watch.service");
    print_message("install --watch on %s: %s\n", a->fleet_host, o);
    assert_non_null(strstr(o, "enabled\nactive\n"));
    assert_non_null(strstr(o, "/root/ctl.yaml"));
    free(o);
    /* the installed watch looks at wa on its own machine and says it serves */
    assert_int_equal(swth_wait(&a->h,
                               "journalctl -u slipway-watch.service -o cat | grep -q "
                               "'wa .*-> serving'",
                               30, NULL),
                     0);
    /* a watch that cannot bind its metrics address dies at once: the first unit is put back */
    const char *bad = "ASAN_OPTIONS=detect_leaks=0 /opt/sim/slipway install --watch --start "
                      "--fleet /root/ctl.yaml --metrics 192.0.2.1:9464 --json";
    assert_int_equal(swth_ssh(&a->h, bad, NULL, 120, &r), 0);
    j = swt_json_out(&r);
    print_message("install --watch, unbindable metrics: exit %d, %s\n", r.status,
                  swro_str(j, "error"));
    assert_int_equal(r.status, 1);
    swt_run_free(&r);
    assert_true(json_is_true(json_object_get(j, "put_back")));
    assert_true(json_is_true(json_object_get(j, "replaced")));
    assert_true(json_is_false(json_object_get(j, "installed")));
    json_decref(j);
    o = swth_must(&a->h, "grep -c 192.0.2.1 /etc/systemd/system/slipway-watch.service; "
                         "ls /etc/systemd/system/ | grep -c slipway-prev; systemctl is-active "
                         "slipway-watch.service || true");
    assert_string_equal(o, "0\n0\nactive\n");
    free(o);
    free(swth_must(&a->h, "systemctl disable --now slipway-watch.service && rm -f "
                          "/etc/systemd/system/slipway-watch.service && systemctl daemon-reload"));
}

static void test_watch(void **state)
{
    struct fx *f = *state;
    swt_need(swth_missing()[0] == '\0', "%s", swth_missing());
    const char *which[] = {"sh", "-c", "command -v promtool", NULL};
    struct swt_run pr;
    assert_int_equal(swt_run(which, NULL, 10, &pr), 0);
    if (pr.status != 0)
        fail_msg("promtool is missing (Debian's prometheus package; scripts/deps.sh installs it)");
    swt_run_free(&pr);
    f->root = swt_tmpdir();
    make_simroot(f->root);
    char bind[4200];
    snprintf(bind, sizeof(bind), "%s:/opt/sim", f->root);
    swro_up_binds(&f->a, &site_a, bind);
    swro_up_binds(&f->b, &site_b, bind);
    write_own_fleet(&f->a);
    write_own_fleet(&f->b);
    swro_must_commit(&f->a, "wa baseline");
    swro_must_commit(&f->b, "wb baseline");
    write_watch_fleet(f);
    f->mport = swt_free_port();
    start_watch(f);

    /* (a) both serving; the jobs */
    assert_true(wait_line(f, 0, 60, "\"endpoint\":\"wa\"", "\"state\":\"serving\"", NULL) >= 0);
    assert_true(wait_line(f, 0, 60, "\"endpoint\":\"wb\"", "\"state\":\"serving\"", NULL) >= 0);
    /* quick is a whole `slipway ladder --dry-run` (the sanitized build's, in that copy of the
     * test) reading the model on host B: seconds when the machine is quiet, more beside three
     * other tests; the bound is a deadline, not a measure */
    long quick_ms =
        wait_line(f, 0, 120, "\"kind\":\"job\"", "\"action\":\"quick\"", "\"outcome\":\"ok\"");
    if (quick_ms < 0) {
        /* what the job said so far, and what runs: the failure's evidence */
        char *lo = slurp(swt_join(f->a.dir, "ladder.out"));
        print_message("ladder.out so far:\n%s\n", lo ? lo : "(none)");
        free(lo);
        if (system("ps -eo pid,ppid,etimes,stat,args | grep -E 'slipway|ssh' | grep -v grep"))
            print_message("(ps found nothing)\n");
    }
    assert_true(quick_ms >= 0);
    {
        json_t *jobs = ledger_rows(f, "wb", "job");
        size_t i;
        json_t *r;
        json_array_foreach(jobs, i, r)
        {
            if (!strcmp(swro_str(r, "action"), "quick") && !strcmp(swro_str(r, "outcome"), "ok"))
                print_message("job quick: %s (seen %ld ms after the baseline)\n",
                              swro_str(json_object_get(r, "evidence"), "detail"), quick_ms);
        }
        json_decref(jobs);
    }
    assert_true(wait_line(f, 0, 30, "\"kind\":\"job\"", "\"action\":\"long\"",
                          "\"outcome\":\"overran\"") >= 0);
    char *job = slurp(swt_join(f->a.dir, "job.out"));
    assert_string_equal(job, "ran wb\n");
    free(job);
    job = slurp(swt_join(f->a.dir, "ladder.out"));
    assert_non_null(strstr(job, "dry run: the first rung would boot max_model_len=2048"));
    free(job);
    /* catch-up: the current slot ran, the two (three, when a minute turned meanwhile) in
     * between are one missed row */
    assert_true(wait_line(f, 0, 30, "\"kind\":\"job\"", "\"action\":\"catchup\"",
                          "\"outcome\":\"ok\"") >= 0);
    assert_true(wait_line(f, 0, 5, "\"action\":\"catchup\"", "\"outcome\":\"missed\"", NULL) >= 0);
    {
        json_t *jobs = ledger_rows(f, "-", "job");
        size_t i, missed = 0;
        json_t *r;
        json_array_foreach(jobs, i, r)
        {
            if (strcmp(swro_str(r, "outcome"), "missed"))
                continue;
            missed++;
            const json_t *ev = json_object_get(r, "evidence");
            print_message("catch-up: %s\n", swro_str(ev, "detail"));
            assert_true(json_integer_value(json_object_get(ev, "slots")) >= 2);
        }
        assert_int_equal(missed, 1);
        json_decref(jobs);
    }

    /* (b) a dead generation behind a 200 /health: restarted within one interval + 2 s */
    size_t mark = out_len(f);
    long t0 = now_ms();
    fault(&f->a, "dead_generation");
    long seen = wait_line(f, mark, 30, "\"endpoint\":\"wa\"", "\"state\":\"dead_generation\"",
                          "\"kind\":\"observation\"");
    long restarted = wait_line(f, mark, 30, "\"endpoint\":\"wa\"", "\"action\":\"restart\"",
                               "\"outcome\":\"ok\"");
    long took = now_ms() - t0;
    assert_true(seen >= 0 && restarted >= 0);
    json_t *acts = ledger_rows(f, "wa", "action");
    int64_t claimed_ms = 0;
    size_t i;
    json_t *r;
    json_array_foreach(acts, i, r)
    {
        if (!strcmp(swro_str(r, "action"), "restart") && !strcmp(swro_str(r, "outcome"), "started"))
            claimed_ms = json_integer_value(json_object_get(r, "observed_ms"));
    }
    json_decref(acts);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    long claim_after = (long)(claimed_ms - ((int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000 -
                                            (now_ms() - t0)));
    print_message("dead_generation: seen after %ld ms, restart decided %ld ms and done %ld ms "
                  "after the fault (interval %d s)\n",
                  seen, claim_after, took, INTERVAL_S);
    assert_true(claim_after <= INTERVAL_S * 1050 + 2000);
    assert_true(wait_line(f, mark, 60, "\"endpoint\":\"wa\"", "\"state\":\"serving\"", NULL) >= 0);
    assert_true(swro_serves(&f->a));
    /* the alert: delivered, with the evidence */
    assert_true(wait_line(f, mark, 20, "\"kind\":\"alert\"", "\"state\":\"dead_generation\"",
                          "\"outcome\":\"delivered\"") >= 0);
    const char *grep[] = {"sh", "-c", "grep -l dead_generation alert.*.json | head -1 | xargs cat",
                          NULL};
    char cwd[4200];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(f->a.dir), 0);
    struct swt_run ar;
    assert_int_equal(swt_run(grep, NULL, 10, &ar), 0);
    assert_int_equal(chdir(cwd), 0);
    json_t *alert = swt_json_out(&ar);
    swt_run_free(&ar);
    json_t *ev = json_object_get(alert, "evidence");
    assert_true(json_is_false(json_object_get(json_object_get(ev, "liveness"), "ok")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "health"), "status")),
                     200);
    print_message("alert evidence: liveness %s\n",
                  swro_str(json_object_get(ev, "liveness"), "detail"));
    json_decref(alert);

    /* (c) the metrics page */
    char *page = metrics(f);
    const char *check[] = {"promtool", "check", "metrics", NULL};
    struct swt_run mr;
    assert_int_equal(swt_run(check, page, 30, &mr), 0);
    if (mr.status)
        fail_msg("promtool check metrics: %s%s\n%s", mr.out, mr.err, page);
    swt_run_free(&mr);
    assert_true(metric(page, "slipway_watch_endpoint_state{endpoint=\"wa\",host=\"wa-host\","
                             "state=\"serving\"}") == 1);
    assert_true(metric(page, "slipway_watch_host_reachable{host=\"wb-host\"}") == 1);
    free(page);

    /* (d) killed right after its restart, started again: no second restart of that episode */
    int before = restarts_claimed(f, "wa");
    mark = out_len(f);
    fault(&f->a, "dead_generation");
    assert_true(wait_line(f, mark, 30, "\"endpoint\":\"wa\"", "\"action\":\"restart\"",
                          "\"outcome\":\"ok\"") >= 0);
    stop_watch(f, SIGKILL);
    start_watch(f);
    sleep_ms(4 * INTERVAL_S * 1000);
    assert_true(swro_serves(&f->a));
    print_message("restarts before the kill %d, after: %d\n", before, restarts_claimed(f, "wa"));
    assert_int_equal(restarts_claimed(f, "wa"), before + 1);

    /* (e) host B frozen: unreachable, while wa is still looked at */
    page = metrics(f);
    double looks0 = metric(page, "slipway_watch_looks_total{endpoint=\"wa\",host=\"wa-host\"}");
    free(page);
    mark = out_len(f);
    assert_true(signal_host(&f->b.h, SIGSTOP) >= 3);
    f->b_frozen = true;
    long unreach = wait_line(f, mark, 30, "\"endpoint\":\"wb\"", "\"state\":\"unreachable\"", NULL);
    assert_true(unreach >= 0);
    {
        char *all = slurp(f->out);
        for (char *line = strtok(all + mark, "\n"); line; line = strtok(NULL, "\n"))
            if (strstr(line, "\"endpoint\":\"wb\""))
                print_message("wb: %.600s\n", line);
        free(all);
    }
    sleep_ms(2 * INTERVAL_S * 1000);
    page = metrics(f);
    double looks1 = metric(page, "slipway_watch_looks_total{endpoint=\"wa\",host=\"wa-host\"}");
    print_message("B frozen: wb unreachable after %ld ms; wa looks %.0f -> %.0f meanwhile\n",
                  unreach, looks0, looks1);
    /* within one interval (its jitter) + the look's deadline (3 s) + watch's 2 s bound + 1 s */
    assert_true(unreach <= INTERVAL_S * 1050 + 3000 + 2000 + 1000);
    assert_true(looks1 >= looks0 + 3);
    assert_true(metric(page, "slipway_watch_host_reachable{host=\"wb-host\"}") == 0);
    assert_true(metric(page, "slipway_watch_endpoint_state{endpoint=\"wa\",host=\"wa-host\","
                             "state=\"serving\"}") == 1);
    free(page);
    /* no action on a host it cannot reach */
    assert_int_equal(count_lines(f, mark, "\"endpoint\":\"wb\"", "\"kind\":\"action\"", NULL), 0);
    signal_host(&f->b.h, SIGCONT);
    f->b_frozen = false;
    assert_true(wait_line(f, mark, 60, "\"endpoint\":\"wb\"", "\"state\":\"serving\"", NULL) >= 0);

    /* (f) wa crash-loops (its env file edited on the host): rolled back to last-good */
    mark = out_len(f);
    char *o = swth_must(&f->a.h, "f=$(systemctl show -P EnvironmentFiles slipway-wa.service | "
                                 "cut -d' ' -f1); sed -i 's/^SIM_FLAGS=.*/SIM_FLAGS=--no-such-"
                                 "flag/' \"$f\"; systemctl restart slipway-wa.service || true");
    free(o);
    long rb = wait_line(f, mark, 120, "\"endpoint\":\"wa\"", "\"action\":\"rollback\"",
                        "\"outcome\":\"ok\"");
    print_message("crash loop rolled back after %ld ms\n", rb);
    assert_true(rb >= 0);
    assert_true(count_lines(f, mark, "\"endpoint\":\"wa\"", "\"state\":\"crash_loop\"", NULL) +
                    count_lines(f, mark, "\"endpoint\":\"wa\"", "\"state\":\"down\"", NULL) >=
                1);
    assert_true(swro_serves(&f->a));
    o = swth_must(&f->a.h, "f=$(systemctl show -P EnvironmentFiles slipway-wa.service | "
                           "cut -d' ' -f1); grep -c no-such-flag \"$f\" || true");
    assert_int_equal(atoi(o), 0);
    free(o);
    stop_watch(f, SIGTERM);
    /* the rollback as a rollout attempt: history shows it as any rollback */
    int hs = 0;
    json_t *hist = swro_run(&f->a, &hs, "history", NULL);
    assert_int_equal(hs, 0);
    const json_t *att = json_array_get(json_object_get(hist, "attempts"), 0);
    print_message("history wa: attempt #%lld %s %s (%zu steps), note: %s\n",
                  (long long)json_integer_value(json_object_get(att, "id")),
                  swro_str(att, "outcome"), swro_str(att, "failure_class"),
                  json_array_size(json_object_get(att, "steps")), swro_str(att, "note"));
    assert_string_equal(swro_str(att, "outcome"), "rolled_back");
    assert_non_null(strstr(swro_str(att, "note"), "slipway watch"));
    assert_true(json_array_size(json_object_get(att, "steps")) >= 2);
    assert_true(json_is_null(json_object_get(att, "rule_id")) || !json_object_get(att, "rule_id"));
    json_decref(hist);
    assert_true(count_lines(f, mark, "\"action\":\"rollback\"", "rollout attempt #", NULL) >= 1);

    /* (g) logs: the unit's journal from its host, through the fleet; the crash loop's line */
    const char *logs[] = {swt_bin(), "logs", "wa",     "--fleet", f->fleet,
                          "-n",      "300",  "--json", NULL};
    struct logs_seen ls;
    logs_scan(logs, "no-such-flag", NULL, &ls);
    if (ls.classified)
        print_message("logs: first classified line: %s\n", ls.first);
    print_message("logs: %d lines, %d classified\n", ls.lines, ls.classified);
    assert_true(ls.lines > 10);
    assert_true(ls.saw);
    install_watch_on(&f->a);
    local_up_logs(f);
    journal_oom_logs(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
