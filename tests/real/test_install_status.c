/*
 * `slipway install` and `slipway status` on real test hosts (scripts/testhost.sh through
 * tests/support/swthost.h: systemd-nspawn machines with their own systemd, sshd and podman, each
 * with a network of its own), reached over slipway's own ssh transport with the host's generated
 * key and known_hosts:
 *  - a fleet names two hosts, each with a llama.cpp endpoint: `native` runs the pinned
 *    llama-server the host binds at /opt/llama, listening on the host's own 127.0.0.1 (so every
 *    proof goes through the host's ssh), `boxed` runs it in podman from the test image pinned by
 *    digest with the models' directory mounted (payload.mounts), listening on every address of
 *    its host (reached at the host's address);
 *  - `slipway render --lint` passes both; `slipway install --start` puts each on its host and
 *    proves it serves (render -> serving timed); `slipway status` shows both serving (active,
 *    NRestarts 0, /health 200, liveness ok, the installed files as rendered) and `slipway hosts
 *    check` is green;
 *  - device memory from the vendor tool the host has (these hosts have no GPU: a recorded
 *    nvidia-smi / rocm-smi output answers slipway's exact query), "no device tool" without one;
 *  - a changed fleet shows as drift, line by line, while the endpoint still serves;
 *  - one host frozen (every process of its PID namespace SIGSTOPped: sshd accepts nothing, an
 *    open ssh connection hangs): `status --deadline` reports it unreachable within the deadline,
 *    exit 1, the other endpoint still serving; then the host stopped: unreachable at once.
 * The operator's unit mistakes as they show on a host are reproduced by test_testhost.c, not here.
 * Addresses 169.254.4.2/169.254.5.2 (test_testhost uses .2/.3: the two may run at once under ctest
 * -j). Hosts are always taken down (teardown, and swthost's exit and signal hooks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swllama.h"
#include "swthost.h"
#include "swtest.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ADDR_A "169.254.4.2"
#define ADDR_B "169.254.5.2"
#define IMAGE  SWTH_IMAGE
#define KEY_1  "sk-status-test-key-one-0123456789"
#define KEY_2  "sk-status-test-key-two-9876543210"

struct fx {
    struct swth_host a, b;
    bool b_frozen;
    char *dir;
    char run[4200];
    char fleet[4200];
};

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SIGSTOP or SIGCONT every process in the host's PID namespace (its systemd, sshd, journald...).
 * Returns how many were signalled. */
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

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->dir = swt_tmpdir();
    /* slipway's run directory (ssh control sockets) private to the test */
    snprintf(f->run, sizeof(f->run), "%s/run", f->dir);
    mkdir(f->run, 0700);
    setenv("SLIPWAY_RUN_DIR", f->run, 1);
    /* native's API key: llama-server then refuses a generation without it */
    setenv("SW_TEST_STATUS_KEY", KEY_1, 1);
    snprintf(f->fleet, sizeof(f->fleet), "%s/fleet.yaml", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->b_frozen)
        signal_host(&f->b, SIGCONT);
    swth_end_masters(f->run);
    swth_down(&f->a);
    swth_down(&f->b);
    swth_end_masters(f->run);
    assert_int_equal(swt_survivors(f->run, true, NULL), 0);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static unsigned long long hard_limit(int res)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(res, &rl), 0);
    return rl.rlim_max == RLIM_INFINITY ? 0 : (unsigned long long)rl.rlim_max;
}

/*
 * The fleet. The container's limits: the render asks for nofile 65536 and memlock unlimited (what
 * a GPU engine wants), but a test host cannot raise a hard limit above this machine's
 * (systemd-nspawn drops CAP_SYS_RESOURCE), and runc fails the container when it cannot set one.
 * runtime.args come after the rendered ones and podman keeps the last value of each limit, so the
 * fleet caps them at this machine's hard limits, as an operator would for such a host.
 */
static void write_fleet(const struct fx *f, const char *path, int pa, int pb, const char *digest,
                        unsigned ctx, const char *native_bin)
{
    char limits[512], memlock_arg[128] = "", text[8192];
    unsigned long long nofile = hard_limit(RLIMIT_NOFILE), memlock = hard_limit(RLIMIT_MEMLOCK);
    unsigned long long nproc = hard_limit(RLIMIT_NPROC);
    nofile = nofile ? nofile : 65536;
    nproc = nproc ? nproc : 65536;
    if (memlock)
        snprintf(memlock_arg, sizeof(memlock_arg), ", \"--ulimit=memlock=%llu:%llu\"", memlock,
                 memlock);
    snprintf(limits, sizeof(limits),
             "[\"--ulimit=nofile=%llu:%llu\", \"--ulimit=nproc=%llu:%llu\"%s]", nofile, nofile,
             nproc, nproc, memlock_arg);
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  th-native:\n"
             "    transport: {kind: ssh, address: %s, user: root,\n"
             "                identity_file: %s, known_hosts: %s}\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu}\n"
             /* what the host's (recorded) nvidia-smi reports: install records its reading */
             "      gpu0: {kind: rtx4090, vendor: nvidia, index: 0, memory_total: 24564MiB}\n"
             "  th-podman:\n"
             "    transport: {kind: ssh, address: %s, user: root,\n"
             "                identity_file: %s, known_hosts: %s}\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu}\n"
             "endpoints:\n"
             "  native:\n"
             "    host: th-native\n"
             "    devices: [cpu, gpu0]\n"
             "    engine: llama.cpp\n"
             "    binary: %s\n"
             "    listen: 127.0.0.1:%d\n"
             "    api_key: {from_env: SW_TEST_STATUS_KEY}\n"
             "    payload: {path: /models/chat.gguf}\n"
             "    shape: {ctx_size: %u, seqs: 1, n_gpu_layers: 0}\n"
             "    args: [-t, \"1\"]\n"
             "  boxed:\n"
             "    host: th-podman\n"
             "    engine: llama.cpp\n"
             "    binary: /opt/llama/bin/llama-server\n"
             "    image: %s@%s\n"
             "    runtime: {kind: podman, args: %s}\n"
             "    listen: 0.0.0.0:%d\n"
             "    payload:\n"
             "      path: /models/chat.gguf\n"
             "      mounts: [{host: /models, container: /models, readonly: true}]\n"
             "    shape: {ctx_size: %u, seqs: 1, n_gpu_layers: 0}\n"
             "    args: [-t, \"1\"]\n",
             f->a.addr, f->a.key, f->a.known_hosts, f->b.addr, f->b.key, f->b.known_hosts,
             native_bin, pa, ctx, IMAGE, digest, limits, pb, ctx);
    swt_write_str(path, text);
}

static const json_t *endpoint(const json_t *st, const char *name)
{
    return swt_json_find(json_object_get(st, "endpoints"), "endpoint", name);
}

/* Put a device tool on a host that answers exactly slipway's query with a recorded output of the
 * real tool (tests/data/readings): these hosts have no GPU, so this proves the plumbing (found by
 * the host's facts, run over ssh, parsed by readings), not a driver. Any other argv: exit 2. */
static void put_tool(const struct swth_host *h, const char *tool, const char *args,
                     const char *recorded)
{
    char *text = NULL;
    size_t len = 0;
    struct sw_err e;
    if (sw_read_file(swt_src(recorded), 1 << 20, &text, &len, &e))
        fail_msg("%s", e.msg);
    char path[256], script[8192];
    snprintf(path, sizeof(path), "/usr/local/bin/%s", tool);
    snprintf(script, sizeof(script),
             "#!/bin/sh\n"
             "# a recorded output of %s (%s), for slipway's test\n"
             "[ \"$*\" = \"%s\" ] || { echo \"unexpected: $*\" >&2; exit 2; }\n"
             "cat <<'EOF'\n%.*sEOF\n",
             tool, recorded, args, (int)len, text);
    sw_free(text);
    assert_int_equal(swth_put(h, path, script), 0);
    struct swt_run r;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "chmod 755 %s", path);
    assert_int_equal(swth_ssh(h, cmd, NULL, 30, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
}

static void assert_device(const json_t *ep, const char *tool, unsigned long long used,
                          unsigned long long total)
{
    const json_t *d = json_object_get(ep, "devices");
    char *dump = json_dumps(d, 0);
    if (!json_is_string(json_object_get(d, "tool")) ||
        strcmp(json_string_value(json_object_get(d, "tool")), tool))
        fail_msg("devices: %s (wanted %s)", dump, tool);
    const json_t *r0 = json_array_get(json_object_get(d, "readings"), 0);
    if (!r0)
        fail_msg("devices: no readings: %s", dump);
    free(dump);
    assert_int_equal(json_integer_value(json_object_get(r0, "used_bytes")), used);
    assert_int_equal(json_integer_value(json_object_get(r0, "total_bytes")), total);
}

static void assert_serving(const json_t *ep)
{
    const json_t *u = json_object_get(ep, "unit");
    char *dump = json_dumps(ep, JSON_INDENT(1));
    if (!json_is_true(json_object_get(ep, "serving")))
        fail_msg("not serving: %s", dump);
    free(dump);
    assert_string_equal(json_string_value(json_object_get(ep, "state")), "serving");
    assert_true(json_is_true(json_object_get(ep, "reached")));
    assert_string_equal(json_string_value(json_object_get(u, "active")), "active");
    assert_string_equal(json_string_value(json_object_get(u, "sub")), "running");
    assert_true(json_integer_value(json_object_get(u, "main_pid")) > 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ep, "health"), "status")),
                     200);
    assert_true(json_is_true(json_object_get(json_object_get(ep, "liveness"), "ok")));
}

static void install(struct fx *f, const char *name, double *secs)
{
    struct swt_run r;
    json_t *j = swt_slipway_json(&r, 0, "install", name, "--fleet", f->fleet, "--start",
                                 "--timeout", "120s", "--json", NULL);
    assert_true(json_is_true(json_object_get(j, "serving")));
    assert_true(json_is_true(json_object_get(j, "installed")));
    assert_int_equal(json_integer_value(json_object_get(j, "health")), 200);
    assert_int_equal(json_array_size(json_object_get(j, "findings")), 0);
    /* every step ran, in order, and passed */
    static const char *const want[] = {"render", "lint",          "open",     "verify",
                                       "copy",   "daemon-reload", "start",    "route",
                                       "active", "health",        "liveness", "readings"};
    const json_t *steps = json_object_get(j, "steps");
    assert_int_equal(json_array_size(steps), SW_ARRAY_LEN(want));
    for (size_t i = 0; i < SW_ARRAY_LEN(want); i++) {
        const json_t *s = json_array_get(steps, i);
        assert_string_equal(json_string_value(json_object_get(s, "name")), want[i]);
        assert_true(json_is_true(json_object_get(s, "ok")));
    }
    /* native listens on its host's loopback: proved through the host; boxed on every address:
     * proved at the host's address */
    bool native = !strcmp(name, "native");
    assert_string_equal(json_string_value(json_object_get(j, "route")), native ? "host" : "direct");
    assert_true(native == (json_object_get(j, "via") != NULL));
    *secs = json_real_value(json_object_get(j, "render_to_serving_s"));
    assert_true(*secs > 0);
    print_message("%s: render -> serving in %.2f s (%s)\n", name, *secs,
                  json_string_value(json_object_get(j, "url")));
    json_decref(j);
    swt_run_free(&r);
}

static void test_install_status_unreachable(void **state)
{
    struct fx *f = *state;
    const char *why = swth_missing();
    swt_need(!why[0], "%s", why);
    swt_need(swth_gm.model[0] != '\0', "no chat model: %s", swth_gm.missing);
    why = swth_podman_missing();
    swt_need(!why[0], "%s", why);

    char digest[128], bind[4200];
    swth_image_digest(digest, sizeof(digest));
    snprintf(bind, sizeof(bind), "%s:/models", swth_gm.dir);
    const char *binds[] = {bind, NULL};
    assert_int_equal(swth_up("sw-st-native", ADDR_A, binds, &f->a), 0);
    assert_int_equal(swth_up("sw-st-podman", ADDR_B, binds, &f->b), 0);
    int pa = swt_free_port(), pb = pa + 1;
    write_fleet(f, f->fleet, pa, pb, digest, 512, "/opt/llama/bin/llama-server");

    struct swt_run r, s;
    json_t *j =
        swt_slipway_json(&r, 0, "render", "native", "--fleet", f->fleet, "--lint", "--json", NULL);
    assert_true(json_is_true(json_object_get(json_object_get(j, "lint"), "clean")));
    json_decref(j);
    swt_run_free(&r);
    j = swt_slipway_json(&r, 0, "render", "boxed", "--fleet", f->fleet, "--lint", "--json", NULL);
    assert_true(json_is_true(json_object_get(json_object_get(j, "lint"), "clean")));
    json_decref(j);
    swt_run_free(&r);

    /* a binary the host lacks: the lint here cannot know, `systemd-analyze verify` on the host
     * says so, and the install is refused with nothing written there */
    char bad[4300];
    snprintf(bad, sizeof(bad), "%s/bad.yaml", f->dir);
    write_fleet(f, bad, pa, pb, digest, 512, "/opt/llama/bin/no-such-server");
    j = swt_slipway_json(&r, 1, "install", "native", "--fleet", bad, "--start", "--json", NULL);
    assert_true(json_is_true(json_object_get(j, "refused")));
    assert_false(json_is_true(json_object_get(j, "installed")));
    const json_t *fd = json_array_get(json_object_get(j, "findings"), 0);
    assert_string_equal(json_string_value(json_object_get(fd, "law")), "verify");
    assert_non_null(strstr(json_string_value(json_object_get(fd, "message")), "no-such-server"));
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(swth_ssh(&f->a,
                              "ls -A /etc/systemd/system | grep slipway; "
                              "ls -A /etc/slipway 2>/dev/null; ls -d /tmp/tmp.* 2>/dev/null",
                              NULL, 30, &s),
                     0);
    if (s.out[0])
        fail_msg("a refused install left files on %s: %s", f->a.name, s.out);
    swt_run_free(&s);

    double t_native, t_boxed;
    install(f, "native", &t_native);
    install(f, "boxed", &t_boxed);

    /* a host without a device tool says so */
    j = swt_slipway_json(&r, 0, "status", "--fleet", f->fleet, "native", "--json", NULL);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(endpoint(j, "native"), "devices"), "note")),
                        "no device tool on this host");
    json_decref(j);
    swt_run_free(&r);
    put_tool(&f->a, "nvidia-smi",
             "--query-gpu=index,uuid,name,memory.used,memory.total,memory.free --format=csv",
             "tests/data/readings/nvidia-smi/one-gpu.csv");
    put_tool(&f->b, "rocm-smi", "--showmeminfo vram --json",
             "tests/data/readings/rocm-smi/two-cards-system.json");

    /* both serving, the installed files as rendered, device memory from each host's tool */
    j = swt_slipway_json(&r, 0, "status", "--fleet", f->fleet, "--json", "--deadline", "30s", NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "serving")), 2);
    const char *names[] = {"native", "boxed"};
    for (int i = 0; i < 2; i++) {
        const json_t *ep = endpoint(j, names[i]);
        assert_serving(ep);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(ep, "unit"), "restarts")), 0);
        assert_true(json_is_true(json_object_get(json_object_get(ep, "shape"), "as_rendered")));
    }
    assert_device(endpoint(j, "native"), "nvidia-smi", 20190ull << 20, 24564ull << 20);
    assert_device(endpoint(j, "boxed"), "rocm-smi", 27745271808ull, 34342961152ull);
    json_decref(j);
    swt_run_free(&r);
    /* the same in the human table */
    assert_int_equal(swt_slipway(&r, "status", "--fleet", f->fleet, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "as rendered"));
    assert_non_null(strstr(r.out, "2 of 2 endpoint(s) serving"));
    assert_non_null(strstr(r.out, "device 0 (NVIDIA GeForce RTX 4090, nvidia-smi)"));
    swt_run_free(&r);

    /* install again on the host that now has a device tool: once it serves, the reading is
     * recorded in the ledger as the endpoint's device usage, without being asked */
    char led[4300];
    snprintf(led, sizeof(led), "%s/ledger.sqlite", f->dir);
    j = swt_slipway_json(&r, 0, "install", "native", "--fleet", f->fleet, "--start", "--timeout",
                         "120s", "--ledger", led, "--json", NULL);
    assert_true(json_is_true(json_object_get(j, "serving")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "devices"), "tool")),
                        "nvidia-smi");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "devices"), "recorded")),
                     1);
    json_decref(j);
    swt_run_free(&r);
    j = swt_slipway_json(&r, 0, "ledger", "usage", "--ledger", led, "--json", NULL);
    char *usage = json_dumps(j, 0);
    assert_non_null(strstr(usage, "20190"));
    assert_non_null(strstr(usage, "24564"));
    free(usage);
    json_decref(j);
    swt_run_free(&r);

    /* the host check is green */
    j = swt_slipway_json(&r, 0, "hosts", "check", "--fleet", f->fleet, "--json", NULL);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "pass");
    json_decref(j);
    swt_run_free(&r);

    /* the container really runs the image by digest on its host */
    assert_int_equal(swth_ssh(&f->b, "podman ps --format '{{.Names}} {{.Image}}'", NULL, 30, &s),
                     0);
    char want[256];
    snprintf(want, sizeof(want), "slipway-boxed %s@%s", IMAGE, digest);
    if (!strstr(s.out, want))
        fail_msg("podman ps on %s: %s (wanted %s)", f->b.name, s.out, want);
    swt_run_free(&s);

    /* the API key is the one the engine got: a generation without it is refused (asked on the
     * host: the engine listens on the host's own loopback, invisible from here) */
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "curl -s -o /dev/null -w '%%{http_code}' -H 'Content-Type: application/json' -d "
             "'{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":1}' "
             "http://127.0.0.1:%d/v1/chat/completions",
             pa);
    assert_int_equal(swth_ssh(&f->a, cmd, NULL, 30, &s), 0);
    assert_string_equal(s.out, "401");
    swt_run_free(&s);
    /* and from here nothing answers at the host's address on that port: it is the host's own */
    char url[128];
    snprintf(url, sizeof(url), "http://%s:%d/health", ADDR_A, pa);
    const char *curl[] = {"curl",      "-s", "-m",           "3", "-o",
                          "/dev/null", "-w", "%{http_code}", url, NULL};
    assert_int_equal(swt_run(curl, NULL, 30, &s), 0);
    assert_string_equal(s.out, "000");
    swt_run_free(&s);

    /* a changed fleet (context and key) is drift, line by line, the key's value never shown,
     * while the installed shape still serves (liveness with the installed key) */
    char drift[4300];
    snprintf(drift, sizeof(drift), "%s/drift.yaml", f->dir);
    write_fleet(f, drift, pa, pb, digest, 1024, "/opt/llama/bin/llama-server");
    setenv("SW_TEST_STATUS_KEY", KEY_2, 1);
    j = swt_slipway_json(&r, 0, "status", "--fleet", drift, "native", "--json", NULL);
    setenv("SW_TEST_STATUS_KEY", KEY_1, 1);
    const json_t *en = endpoint(j, "native");
    assert_serving(en);
    const json_t *sh = json_object_get(en, "shape");
    assert_false(json_is_true(json_object_get(sh, "as_rendered")));
    assert_int_equal(json_integer_value(json_object_get(sh, "drift_lines")), 2);
    const json_t *d = json_array_get(json_object_get(sh, "drift"), 0);
    assert_non_null(strstr(json_string_value(json_object_get(d, "installed")), " -c 512 "));
    assert_non_null(strstr(json_string_value(json_object_get(d, "rendered")), " -c 1024 "));
    d = json_array_get(json_object_get(sh, "drift"), 1);
    assert_string_equal(json_string_value(json_object_get(d, "installed")), "LLAMA_API_KEY=***");
    assert_string_equal(json_string_value(json_object_get(d, "rendered")), "LLAMA_API_KEY=***");
    assert_null(strstr(r.out, "sk-status-test"));
    assert_null(strstr(r.err, "sk-status-test"));
    json_decref(j);
    swt_run_free(&r);

    /* an install whose daemon-reload fails leaves the host as it was: the files it copied are
     * put back (the manager kept reading the old ones), nothing staged is left, and the endpoint
     * still serves as installed */
    free(swth_must(&f->a, "mv /usr/bin/systemctl /usr/bin/systemctl.real && printf '#!/bin/sh\\n"
                          "case \"$*\" in *daemon-reload*) echo \"Failed to reload daemon: test\" "
                          ">&2; exit 1;; esac\\nexec /usr/bin/systemctl.real \"$@\"\\n' "
                          ">/usr/bin/systemctl && chmod 755 /usr/bin/systemctl"));
    j = swt_slipway_json(&r, 1, "install", "native", "--fleet", drift, "--json", NULL);
    free(swth_must(&f->a, "mv -f /usr/bin/systemctl.real /usr/bin/systemctl"));
    assert_false(json_is_true(json_object_get(j, "installed")));
    const json_t *last = json_array_get(json_object_get(j, "steps"),
                                        json_array_size(json_object_get(j, "steps")) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "name")), "daemon-reload");
    assert_non_null(strstr(json_string_value(json_object_get(last, "detail")), "are back"));
    json_decref(j);
    swt_run_free(&r);
    char *left =
        swth_must(&f->a, "grep -c -- ' -c 512 ' /etc/systemd/system/slipway-native.service;"
                         " ls -A /etc/systemd/system /etc/slipway | grep -c slipway-prev"
                         " || true");
    assert_string_equal(left, "1\n0\n");
    free(left);
    j = swt_slipway_json(&r, 0, "status", "--fleet", f->fleet, "native", "--json", NULL);
    en = endpoint(j, "native");
    assert_serving(en);
    assert_true(json_is_true(json_object_get(json_object_get(en, "shape"), "as_rendered")));
    json_decref(j);
    swt_run_free(&r);

    /* the podman host frozen: its sshd accepts nothing and the open ssh connection hangs */
    assert_true(signal_host(&f->b, SIGSTOP) >= 3);
    f->b_frozen = true;
    long t0 = now_ms();
    j = swt_slipway_json(&r, 1, "status", "--fleet", f->fleet, "--json", "--deadline", "5s", NULL);
    long took = now_ms() - t0;
    print_message("status with %s frozen: %ld ms (deadline 5 s per host)\n", f->b.name, took);
    const json_t *eb = endpoint(j, "boxed");
    assert_string_equal(json_string_value(json_object_get(eb, "state")), "unreachable");
    assert_false(json_is_true(json_object_get(eb, "reached")));
    assert_false(json_is_true(json_object_get(eb, "serving")));
    assert_true(json_real_value(json_object_get(eb, "seconds")) < 5.5);
    assert_serving(endpoint(j, "native"));
    assert_int_equal(json_integer_value(json_object_get(j, "serving")), 1);
    /* native's checks take well under a second; the frozen host at most its 5 s */
    assert_true(took < 9000);
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "status", "--fleet", f->fleet, "--deadline", "3s", NULL), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "unreachable"));
    assert_non_null(strstr(r.out, "1 of 2 endpoint(s) serving"));
    swt_run_free(&r);

    /* then stopped: nothing listens on its address; unreachable at once */
    signal_host(&f->b, SIGCONT);
    f->b_frozen = false;
    swth_end_masters(f->run);
    assert_int_equal(swth_down(&f->b), 0);
    t0 = now_ms();
    j = swt_slipway_json(&r, 1, "status", "--fleet", f->fleet, "--json", "--deadline", "5s", NULL);
    took = now_ms() - t0;
    print_message("status with %s stopped: %ld ms\n", f->b.name, took);
    eb = endpoint(j, "boxed");
    assert_string_equal(json_string_value(json_object_get(eb, "state")), "unreachable");
    assert_string_equal(json_string_value(json_object_get(eb, "unreachable")), "unreachable");
    assert_serving(endpoint(j, "native"));
    assert_true(took < 9000);
    json_decref(j);
    swt_run_free(&r);
    print_message("render -> serving: native %.2f s, podman %.2f s\n", t_native, t_boxed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_install_status_unreachable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
