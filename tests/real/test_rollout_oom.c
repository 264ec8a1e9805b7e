/*
 * Real tier: the worst-case request kills the engine (issue 14's fault "a shape too large for a
 * memory limit set on the unit"). On a real test host (scripts/testhost.sh sw-wc-a, 169.254.26.2:
 * systemd, journald, sshd) running the pinned llama-server as the endpoint's unit:
 *   1. a last-good shape (ctx 512) is deployed and committed;
 *   2. a new shape is deployed whose boot fits the unit's MemoryMax= but whose worst-case
 *      request does not: ctx 8192, batch = ubatch = 4096, flash attention off, MemoryMax=256MiB.
 *      llama.cpp allocates and clears the KV cache at boot, but the CPU compute buffer it
 *      reserves for the worst-case graph (a full ubatch of 4096 tokens against the whole window:
 *      the KQ matrices are n_kv x n_ubatch x n_head floats) is malloc'd address space that
 *      becomes resident only when a graph writes it. Measured with this model outside any limit:
 *      RSS 108 MB after the boot, 124 MB after a 619-token prompt, 400 MB after a 4,166-token
 *      one. The boot, readiness, the one-token generation and the short battery checks pass
 *      under 256 MiB; the worst case's half-window prompt (4,096 tokens) is one full ubatch
 *      and takes the process past the limit: the kernel's OOM killer ends it.
 *   3. deploy must classify that as runtime_oom (failed step probe), roll back to the last-good
 *      shape, prove it serves by generation, record the attempt, and teach a known-bad rule so
 *      that `slipway check` refuses the shape next time. The downtime is printed.
 *
 * Where the limit is enforced. This machine's memory controller is on the cgroup v1 hierarchy
 * (a v1/v2 hybrid); systemd-nspawn mounts the v1 controllers read-only inside the host and the
 * host's own cgroup2 tree has no controllers, so the host's systemd accepts MemoryMax= and
 * cannot apply it. The test applies the unit's own MemoryMax= the way systemd applies it on a
 * v1 host (memory.limit_in_bytes): a small limiter process on this machine finds each
 * llama-server of the host (by /proc/PID/root), reads MemoryMax= from the unit file that
 * started it, and moves it into a v1 memory cgroup of that limit (charges moved along). The
 * kill is the kernel's own (memory.oom_control oom_kill is read back), systemd inside the host
 * sees an unrequested SIGKILL (status=9/KILL, Result=signal: it reads OOM events only from
 * cgroup v2's memory.events), and the rollout classifies from what the host shows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swrollout.h"
#include "swthost.h"
#include "swtest.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIMIT     "256MiB"
#define LIMIT_B   268435456ull
#define CG_PREFIX "sw-wc-"

static const struct swro_site site = {"sw-wc-a", "169.254.26.2", "wc-a", "wc"};

static char g_memcg[4096]; /* this process's v1 memory cgroup directory, "" when none */

struct fx {
    struct swro ro; /* the host, the fleet, the endpoint */
    char limiter_log[4200];
    pid_t limiter;
};

/* This process's cgroup v1 memory directory, when it can make children there. */
static void find_memcg(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[4096];
    g_memcg[0] = '\0';
    while (f && fgets(line, sizeof(line), f)) {
        char *a = strchr(line, ':');
        char *b = a ? strchr(a + 1, ':') : NULL;
        if (!a || !b || strncmp(a + 1, "memory:", 7))
            continue;
        b[strcspn(b, "\n")] = '\0';
        snprintf(g_memcg, sizeof(g_memcg), "/sys/fs/cgroup/memory%s", b + 1);
    }
    if (f)
        fclose(f);
    char probe[4200];
    snprintf(probe, sizeof(probe), "%s/memory.limit_in_bytes", g_memcg);
    if (g_memcg[0] && access(probe, W_OK))
        g_memcg[0] = '\0';
}

static int group_setup(void **state)
{
    find_memcg();
    return swth_group_setup(state);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    *state = f;
    return f ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

static bool read_file(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t k = fread(out, 1, n - 1, f);
    out[k] = '\0';
    fclose(f);
    return true;
}

/* The limiter's cgroups (CG_PREFIX + pid) removed: each is empty once its process is gone. */
static void limiter_cleanup(void)
{
    DIR *d = g_memcg[0] ? opendir(g_memcg) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, CG_PREFIX, strlen(CG_PREFIX)))
            continue;
        char p[4400];
        snprintf(p, sizeof(p), "%s/%s", g_memcg, de->d_name);
        for (int i = 0; i < 50 && rmdir(p) && errno == EBUSY; i++)
            usleep(100000);
    }
    if (d)
        closedir(d);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->limiter > 0) {
        kill(f->limiter, SIGKILL);
        waitpid(f->limiter, NULL, 0);
    }
    swro_close(&f->ro);
    limiter_cleanup();
    free(f);
    return 0;
}

/* MemoryMax= of the unit file (in the host's root) that started a process of unit `cg` (its
 * cgroup2 path, "/system.slice/NAME.service"); 0 when none. */
static unsigned long long unit_memory_max(const char *root, const char *cg)
{
    const char *slash = strrchr(cg, '/');
    char path[8300], text[16384];
    snprintf(path, sizeof(path), "%s/etc/systemd/system/%s", root, slash ? slash + 1 : cg);
    if (!read_file(path, text, sizeof(text)))
        return 0;
    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
        if (!strncmp(l, "MemoryMax=", 10) && isdigit((unsigned char)l[10]))
            return strtoull(l + 10, NULL, 10);
    return 0;
}

/* The limiter: every 50 ms, each new llama-server whose root is the host's gets its unit's
 * MemoryMax= as a v1 memory cgroup of its own. One line per decision in the log. */
static void limiter_main(const char *root, const char *log)
{
    pid_t seen[256];
    size_t nseen = 0;
    /* not the test's handlers (they would take the host down from here) */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGABRT, SIG_DFL);
    signal(SIGSEGV, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
    FILE *lf = fopen(log, "a");
    if (!lf)
        _exit(1);
    setvbuf(lf, NULL, _IOLBF, 0);
    for (;;) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (!isdigit((unsigned char)de->d_name[0]))
                continue;
            pid_t pid = (pid_t)atoi(de->d_name);
            bool known = false;
            for (size_t i = 0; i < nseen; i++)
                known |= seen[i] == pid;
            if (known)
                continue;
            char p[256], buf[8192];
            snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
            if (!read_file(p, buf, sizeof(buf)) || strcmp(buf, "llama-server\n"))
                continue;
            /* its root directory is the host's (readlink says "/" from inside its mount
             * namespace: compare the directories themselves) */
            snprintf(p, sizeof(p), "/proc/%d/root/", (int)pid);
            struct stat a, b;
            if (stat(p, &a) || stat(root, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                continue;
            if (nseen < sizeof(seen) / sizeof(seen[0]))
                seen[nseen++] = pid;
            snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
            char cg[4096] = "";
            if (read_file(p, buf, sizeof(buf))) {
                char *z = strstr(buf, "0::");
                if (z) {
                    z += 3;
                    z[strcspn(z, "\n")] = '\0';
                    snprintf(cg, sizeof(cg), "%s", z);
                }
            }
            unsigned long long mm = unit_memory_max(root, cg);
            if (!mm) {
                fprintf(lf, "pid %d (%s): no MemoryMax=\n", (int)pid, cg);
                continue;
            }
            char dir[4400], f2[4500], v[64];
            snprintf(dir, sizeof(dir), "%s/%s%d", g_memcg, CG_PREFIX, (int)pid);
            mkdir(dir, 0755);
            snprintf(f2, sizeof(f2), "%s/memory.move_charge_at_immigrate", dir);
            write_file(f2, "3");
            snprintf(f2, sizeof(f2), "%s/memory.limit_in_bytes", dir);
            snprintf(v, sizeof(v), "%llu", mm);
            write_file(f2, v);
            snprintf(f2, sizeof(f2), "%s/cgroup.procs", dir);
            snprintf(v, sizeof(v), "%d", (int)pid);
            write_file(f2, v);
            fprintf(lf, "pid %d (%s): MemoryMax=%llu applied as %s\n", (int)pid, cg, mm, dir);
        }
        if (d)
            closedir(d);
        usleep(50000);
    }
}

static void up(struct fx *f)
{
    swt_need(g_memcg[0] != '\0',
             "a writable cgroup v1 memory controller for this process (the limiter applies the "
             "unit's MemoryMax= there)");
    swro_up(&f->ro, &site);
    f->ro.deadline_s = 900;
    char *ctl = swth_must(&f->ro.h, "cat /sys/fs/cgroup/cgroup.controllers; echo .");
    print_message("the host's cgroup2 controllers: '%s'\n", ctl);
    free(ctl);
    snprintf(f->limiter_log, sizeof(f->limiter_log), "%s", swt_join(f->ro.dir, "limiter.log"));
    char root[4200];
    snprintf(root, sizeof(root), "%s", f->ro.h.root);
    f->limiter = fork();
    assert_true(f->limiter >= 0);
    if (f->limiter == 0)
        limiter_main(root, f->limiter_log);
}

/* The step named `step` in the deploy's steps, NULL when none. */
static const json_t *step_of(const json_t *j, const char *step)
{
    const json_t *steps = json_object_get(j, "steps");
    for (size_t i = 0; i < json_array_size(steps); i++)
        if (!strcmp(swro_str(json_array_get(steps, i), "step"), step))
            return json_array_get(steps, i);
    return NULL;
}

/* The kernel's OOM kills counted in the limiter's cgroups (memory.oom_control oom_kill). */
static long oom_kills(void)
{
    long total = 0;
    DIR *d = opendir(g_memcg);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, CG_PREFIX, strlen(CG_PREFIX)))
            continue;
        char p[4400], text[512];
        snprintf(p, sizeof(p), "%s/%s/memory.oom_control", g_memcg, de->d_name);
        if (!read_file(p, text, sizeof(text)))
            continue;
        const char *k = strstr(text, "oom_kill ");
        if (k)
            total += atol(k + 9);
    }
    if (d)
        closedir(d);
    return total;
}

static void test_worst_case_oom_rolls_back(void **state)
{
    struct fx *f = *state;
    up(f);
    /* 1. the last-good shape */
    swro_write_fleet(&f->ro, &(struct swro_fleet){.ctx = 512});
    swro_must_commit(&f->ro, "baseline deploy");
    assert_true(swro_serves(&f->ro));
    assert_false(swro_live_has(&f->ro, "MemoryMax="));

    /* 2. the shape whose worst case passes the unit's MemoryMax= */
    swro_write_fleet(&f->ro, &(struct swro_fleet){.ctx = 8192,
                                                  .shape = "      batch_size: 4096\n"
                                                           "      ubatch_size: 4096\n"
                                                           "      flash_attn: off\n",
                                                  .service = "      memory_max: " LIMIT "\n"});
    long kills0 = oom_kills();
    int st = 0;
    json_t *j =
        swro_run(&f->ro, &st, "deploy", "--probe-only", "readiness,liveness,models,chat", NULL);
    const json_t *dt = json_object_get(j, "downtime_ms");
    print_message("worst_case_oom: outcome=%s step=%s class=%s\n  %s\n  rollback: %s\n",
                  swro_str(j, "outcome"), swro_str(j, "failed_step"), swro_str(j, "fail_class"),
                  swro_str(j, "fail_msg"), swro_str(j, "rollback"));
    if (json_is_integer(dt))
        print_message("DOWNTIME fault=worst_case_oom ms=%lld\n", (long long)json_integer_value(dt));
    char lim[8192] = "";
    read_file(f->limiter_log, lim, sizeof(lim));
    print_message("limiter:\n%s", lim);
    long kills = oom_kills() - kills0;
    print_message("kernel OOM kills in the limited cgroups: %ld\n", kills);
    if (strcmp(swro_str(j, "outcome"), "rolled_back") ||
        strcmp(swro_str(j, "fail_class"), "runtime_oom"))
        fail_msg("outcome %s class %s: %s\njournal:\n%s", swro_str(j, "outcome"),
                 swro_str(j, "fail_class"), swro_str(j, "fail_msg"), swro_str(j, "journal"));
    assert_int_equal(st, 1);
    assert_string_equal(swro_str(j, "failed_step"), "probe");
    /* the boot passed: readiness and the one-token generation of the new shape answered */
    const json_t *rd = step_of(j, "readiness");
    assert_non_null(rd);
    assert_true(json_is_true(json_object_get(rd, "ok")));
    /* the kernel killed it, under the limit the unit file said */
    assert_non_null(strstr(lim, "MemoryMax=268435456 applied"));
    assert_true(kills >= 1);
    assert_non_null(strstr(swro_str(j, "journal"), "status=9/KILL"));
    assert_non_null(strstr(swro_str(j, "fail_msg"), "worst_case"));
    assert_string_equal(swro_str(json_object_get(j, "boot"), "phase"), "runtime");
    assert_string_equal(swro_str(json_object_get(j, "boot"), "check"), "worst_case");
    /* rolled back to the last-good, which serves by generation */
    assert_true(json_is_true(json_object_get(j, "serving")));
    assert_true(json_is_integer(dt));
    assert_true(swro_live_has(&f->ro, "-c 512"));
    assert_false(swro_live_has(&f->ro, "MemoryMax="));
    assert_true(swro_serves(&f->ro));
    /* recorded: the attempt, and the known-bad rule it taught */
    assert_true(json_integer_value(json_object_get(j, "attempt")) > 0);
    assert_true(json_integer_value(json_object_get(j, "rule_id")) > 0);
    assert_string_equal(swro_str(j, "ledger_error"), "");
    json_decref(j);

    /* 3. `check` refuses that shape now */
    j = swro_run(&f->ro, &st, "check", NULL);
    char *doc = json_dumps(j, JSON_COMPACT);
    print_message("check after the failure: exit %d\n", st);
    assert_int_equal(st, 1);
    assert_non_null(doc);
    if (!strstr(doc, "known_bad") || !strstr(doc, "runtime_oom"))
        fail_msg("check does not refuse the shape by known_bad/runtime_oom: %.3000s", doc);
    free(doc);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_worst_case_oom_rolls_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, swth_group_teardown);
}
