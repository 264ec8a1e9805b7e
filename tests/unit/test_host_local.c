/*
 * host: the local transport on this machine (run, exit codes, deadlines that kill the whole
 * group, the line callback, atomic copy with its mode and nothing left on failure, facts), the
 * remote quoting checked by a real /bin/sh, and the parsers of `systemctl show`, `journalctl -o
 * json` and the facts script on recorded outputs (tests/data/host, written from systemd's
 * documented formats; facts-nobus.txt recorded in a container without a systemd manager). Bounded waits only; no timing assertions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/host.h>

#include "swtest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

static void open_local(struct sw_host *h)
{
    struct sw_host_cfg c = {.name = "here", .kind = SW_HOST_KIND_LOCAL};
    struct sw_err e;
    assert_int_equal(sw_host_open(h, &c, &e), 0);
}

static void test_run_echo_and_exit(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_local(&h);
    const char *echo[] = {"echo", "hello", "world", NULL};
    assert_int_equal(sw_host_run(&h, echo, NULL, &r, &e), 0);
    assert_int_equal(r.fail, SW_HOST_OK);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.out, "hello world\n");
    sw_host_result_free(&r);

    const char *ex[] = {"sh", "-c", "echo oops >&2; exit 7", NULL};
    assert_int_equal(sw_host_run(&h, ex, NULL, &r, &e), SW_ECHILD);
    assert_int_equal(r.fail, SW_HOST_EXIT);
    assert_int_equal(r.exit_code, 7);
    assert_string_equal(r.err, "oops\n");
    swt_has_all("e.msg", e.msg, "here", "exited 7: oops", NULL);
    sw_host_result_free(&r);

    const char *none[] = {"/nonexistent/slipway-no-such-tool", NULL};
    assert_int_equal(sw_host_run(&h, none, NULL, &r, &e), SW_ECHILD);
    assert_int_equal(r.exit_code, 127);
    assert_non_null(strstr(r.err, "cannot run"));
    sw_host_result_free(&r);
}

static void test_output_bound(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_local(&h);
    const char *big[] = {"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' a", NULL};
    struct sw_host_run_opts o = {.max_out = 1000};
    assert_int_equal(sw_host_run(&h, big, &o, &r, &e), 0);
    assert_int_equal(r.out_len, 1000);
    assert_true(r.out_truncated);
    sw_host_result_free(&r);
}

/* The quoting a remote shell reads: a real sh must give back exactly the words. */
static void test_quote_roundtrip(void **state)
{
    const char *words[] = {"plain",
                           "two words",
                           "it's",
                           "'",
                           "''",
                           "\"double\"",
                           "$(touch /tmp/slipway-pwned)",
                           "`id`",
                           "$HOME ${PATH}",
                           "line1\nline2\n",
                           "back\\slash",
                           "semi; rm -rf /nonexistent",
                           "*",
                           "-n",
                           "",
                           "tab\there",
                           NULL};
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_buf_puts(&b, "printf '%s\\0' "), 0);
    assert_int_equal(sw_host_quote_argv(words, &b), 0);
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_local(&h);
    const char *argv[] = {"sh", "-c", sw_buf_cstr(&b), NULL};
    assert_int_equal(sw_host_run(&h, argv, NULL, &r, &e), 0);
    size_t off = 0;
    for (size_t i = 0; words[i]; i++) {
        assert_true(off < r.out_len || (off == r.out_len && !*words[i]));
        assert_string_equal(r.out + off, words[i]);
        off += strlen(words[i]) + 1;
    }
    assert_int_equal(off, r.out_len);
    assert_int_equal(access("/tmp/slipway-pwned", F_OK), -1);
    sw_host_result_free(&r);
    sw_buf_free(&b);
}

static void test_deadline_kills_group(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_local(&h);
    /* the sleep is a grandchild: only killing the group ends it */
    const char *argv[] = {"sh", "-c", "sleep 101.25; echo never", NULL};
    struct sw_host_run_opts o = {.deadline_ms = 300};
    assert_int_equal(sw_host_run(&h, argv, &o, &r, &e), SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_HOST_DEADLINE);
    assert_true(r.seconds < 30);
    assert_non_null(strstr(e.msg, "deadline"));
    sw_host_result_free(&r);
    int left = 1;
    for (int i = 0; i < 100 && left; i++) {
        left = swt_survivors("101.25", false, NULL);
        if (left)
            usleep(20000);
    }
    assert_int_equal(swt_survivors("101.25", true, NULL), 0);
}

struct lines {
    int n;
    char first[64];
};

static int on_line(void *ctx, const char *line, size_t len)
{
    struct lines *l = ctx;
    if (!l->n)
        snprintf(l->first, sizeof(l->first), "%.*s", (int)len, line);
    return ++l->n >= 3;
}

static void test_line_callback_stops(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_local(&h);
    const char *argv[] = {"sh", "-c", "i=0; while :; do i=$((i+1)); echo line$i; sleep 0.02; done",
                          NULL};
    struct lines l = {0};
    struct sw_host_run_opts o = {.deadline_ms = 20000, .on_line = on_line, .ctx = &l};
    assert_int_equal(sw_host_run(&h, argv, &o, &r, &e), 0);
    assert_int_equal(r.fail, SW_HOST_OK);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.first, "line1");
    sw_host_result_free(&r);
}

static bool dir_has_prefix(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    bool found = false;
    if (!d)
        return false;
    while ((de = readdir(d)))
        found |= !strncmp(de->d_name, prefix, strlen(prefix));
    closedir(d);
    return found;
}

static void test_copy_atomic_mode(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    struct stat st;
    open_local(&h);
    char *dir = swt_tmpdir();
    char src[4200], dst[4200], sub[4200];
    snprintf(src, sizeof(src), "%s/src.bin", dir);
    snprintf(dst, sizeof(dst), "%s/out/unit.service", dir);
    swt_write_str(src, "[Service]\nExecStart=/bin/true\n");
    snprintf(sub, sizeof(sub), "%s/out", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(sw_host_copy(&h, src, dst, 0640, 10000, &r, &e), 0);
    sw_host_result_free(&r);
    assert_true(swt_file_is(dst, "[Service]\nExecStart=/bin/true\n", 30));
    assert_int_equal(stat(dst, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    /* again over the existing file, another mode */
    swt_write_str(src, "v2\n");
    assert_int_equal(sw_host_copy(&h, src, dst, 0600, 10000, &r, &e), 0);
    sw_host_result_free(&r);
    assert_true(swt_file_is(dst, "v2\n", 3));
    assert_int_equal(stat(dst, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_false(dir_has_prefix(sub, ".slipway-copy"));

    /* the rename fails (the target is a non-empty directory): the old target stays, no temp */
    char blocked[4200], inner[4200];
    snprintf(blocked, sizeof(blocked), "%s/blocked", sub);
    snprintf(inner, sizeof(inner), "%s/keep", blocked);
    assert_int_equal(mkdir(blocked, 0755), 0);
    swt_write_str(inner, "keep");
    assert_int_not_equal(sw_host_copy(&h, src, blocked, 0644, 10000, &r, &e), 0);
    assert_int_equal(r.fail, SW_HOST_EXIT);
    sw_host_result_free(&r);
    assert_true(swt_file_is(inner, "keep", 4));
    assert_false(dir_has_prefix(sub, ".slipway-copy"));
    assert_false(dir_has_prefix(blocked, ".slipway-copy"));

    /* a directory nothing can be created in (procfs): refused, nothing made */
    assert_int_not_equal(sw_host_copy(&h, src, "/proc/slipway-copy-test", 0644, 10000, &r, &e), 0);
    sw_host_result_free(&r);
    assert_int_equal(access("/proc/slipway-copy-test", F_OK), -1);

    /* a source that is not there: nothing runs */
    assert_int_equal(sw_host_copy(&h, "/nonexistent/x", dst, 0644, 10000, &r, &e), SW_ENOENT);
    sw_host_result_free(&r);
    swt_tmpdir_free(dir);
}

static void test_facts_local(void **state)
{
    struct sw_host h;
    struct sw_host_facts f;
    struct sw_err e;
    open_local(&h);
    char *dir = swt_tmpdir();
    char missing[4200];
    snprintf(missing, sizeof(missing), "%s/not/there", dir);
    const char *paths[] = {dir, missing, "sh", "slipway-no-such-command-xyz"};
    int rc = sw_host_facts(&h, paths, 4, 20000, &f, &e);
    if (rc)
        fail_msg("facts: %s", e.msg);
    assert_true(f.mem_total > 0);
    assert_true(f.mem_available > 0 && f.mem_available <= f.mem_total);
    assert_true(f.kernel[0]);
    /* with systemctl installed, both managers are asked whether they answer or not */
    assert_true(f.systemd_version == 0 || (f.systemd_system.asked && f.systemd_user.asked));
    assert_int_equal(f.n_paths, 4);
    assert_true(f.paths[0].exists && f.paths[0].is_dir && !f.paths[0].is_exec);
    assert_true(f.paths[0].fs_size > 0 && f.paths[0].fs_avail <= f.paths[0].fs_size);
    assert_non_null(f.paths[0].fs_target);
    assert_false(f.paths[1].exists);
    /* a missing path: the free space of its nearest existing parent's filesystem */
    assert_int_equal(f.paths[1].fs_size, f.paths[0].fs_size);
    assert_true(f.paths[2].exists && f.paths[2].is_exec);
    assert_non_null(f.paths[2].resolved);
    assert_int_equal(f.paths[2].resolved[0], '/');
    assert_false(f.paths[3].exists);
    assert_null(f.paths[3].resolved);
    sw_host_facts_free(&f);
    swt_tmpdir_free(dir);
}

static char *slurp(const char *rel, size_t *len)
{
    char *d = NULL;
    struct sw_err e;
    if (sw_read_file(swt_src(rel), 1 << 20, &d, len, &e))
        fail_msg("%s", e.msg);
    return d;
}

static void test_facts_recorded(void **state)
{
    size_t len;
    char *d = slurp("tests/data/host/facts-gpu.txt", &len);
    const char *paths[] = {"~/models/frank", "~/models/missing", "podman"};
    struct sw_host_facts f;
    struct sw_err e;
    assert_int_equal(sw_host_facts_parse(d, len, paths, 3, &f, &e), 0);
    assert_int_equal(f.mem_total, 131072000ull * 1024);
    assert_int_equal(f.mem_available, 98304000ull * 1024);
    assert_int_equal(f.systemd_version, 252);
    assert_string_equal(f.podman_version, "4.3.1");
    assert_string_equal(f.docker_version, "20.10.24+dfsg1");
    assert_string_equal(f.kernel, "6.8.12-amd64");
    assert_true(f.dev_kfd);
    assert_int_equal(f.n_dri, 2);
    assert_int_equal(f.n_nvidia, 0);
    assert_true(f.rocm_smi && f.amd_smi && !f.nvidia_smi);
    assert_true(f.paths[0].exists && f.paths[0].is_dir);
    assert_int_equal(f.paths[0].fs_avail, 402653184000ull);
    assert_string_equal(f.paths[0].fs_target, "/home");
    assert_false(f.paths[1].exists);
    assert_true(f.paths[2].is_exec);
    assert_string_equal(f.paths[2].resolved, "/usr/bin/podman");
    sw_host_facts_free(&f);
    /* fewer paths answered than asked: refused naming the path */
    const char *more[] = {"a", "b", "c", "d"};
    assert_int_equal(sw_host_facts_parse(d, len, more, 4, &f, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "path 4 (d)"));
    sw_free(d);
    d = slurp("tests/data/host/facts-truncated.txt", &len);
    assert_int_equal(sw_host_facts_parse(d, len, NULL, 0, &f, &e), SW_ETRUNC);
    sw_free(d);
}

/* The managers: facts-nobus.txt is the script's output in a container whose PID 1 is not
 * systemd (systemctl installed, no bus): --version answers, the managers do not. */
static void test_facts_managers(void **state)
{
    (void)state;
    size_t len;
    char *d = slurp("tests/data/host/facts-nobus.txt", &len);
    struct sw_host_facts f;
    struct sw_err e;
    assert_int_equal(sw_host_facts_parse(d, len, NULL, 0, &f, &e), 0);
    assert_int_equal(f.systemd_version, 252);
    assert_true(f.systemd_system.asked && !f.systemd_system.reached);
    assert_non_null(strstr(f.systemd_system.said, "Failed to connect to bus: Host is down"));
    assert_non_null(strstr(f.systemd_system.said, "(PID 1). Can't operate. Failed")); /* joined */
    assert_true(f.systemd_user.asked && !f.systemd_user.reached);
    assert_string_equal(f.systemd_user.said, "Failed to connect to bus: No medium found");
    sw_host_facts_free(&f);
    sw_free(d);
    /* answered; an older recording without the lines (not asked); a control byte and a
     * non-ASCII byte in a complaint shown as '?'; an exit status of nothing is no answer */
    static const char ok[] = "@systemd systemd 257 (257.9)\n@manager system 0 257\n"
                             "@manager user 1 Failed \x1b[31m\xc3\xa9\n@end\n";
    assert_int_equal(sw_host_facts_parse(ok, sizeof(ok) - 1, NULL, 0, &f, &e), 0);
    assert_true(f.systemd_system.asked && f.systemd_system.reached);
    assert_string_equal(f.systemd_system.said, "");
    assert_string_equal(f.systemd_user.said, "Failed ?[31m??");
    sw_host_facts_free(&f);
    static const char old[] = "@systemd systemd 252 (252.30-1~deb12u2)\n@end\n";
    assert_int_equal(sw_host_facts_parse(old, sizeof(old) - 1, NULL, 0, &f, &e), 0);
    assert_false(f.systemd_system.asked || f.systemd_user.asked);
    sw_host_facts_free(&f);
    static const char bad[] = "@manager system x\n@end\n";
    assert_int_equal(sw_host_facts_parse(bad, sizeof(bad) - 1, NULL, 0, &f, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "bad @manager line"));
    static const char scope[] = "@manager session 1 x\n@end\n";
    assert_int_equal(sw_host_facts_parse(scope, sizeof(scope) - 1, NULL, 0, &f, &e), SW_EPARSE);
}

static void test_unit_show_recorded(void **state)
{
    size_t len;
    struct sw_host_unit u;
    struct sw_err e;
    char *d = slurp("tests/data/host/show-running.txt", &len);
    assert_int_equal(sw_host_unit_parse(d, len, &u, &e), 0);
    assert_string_equal(u.active_state, "active");
    assert_string_equal(u.sub_state, "running");
    assert_string_equal(u.load_state, "loaded");
    assert_string_equal(u.result, "success");
    assert_int_equal(u.main_pid, 48213);
    assert_int_equal(u.n_restarts, 0);
    assert_string_equal(u.active_enter, "Thu 2026-10-01 14:02:11 UTC");
    sw_free(d);
    d = slurp("tests/data/host/show-crashloop.txt", &len);
    assert_int_equal(sw_host_unit_parse(d, len, &u, &e), 0);
    assert_string_equal(u.sub_state, "auto-restart");
    assert_string_equal(u.result, "exit-code");
    assert_int_equal(u.n_restarts, 51);
    assert_int_equal(u.exec_main_code, 1);
    assert_int_equal(u.exec_main_status, 1);
    assert_string_equal(u.active_enter, "");
    sw_free(d);
    d = slurp("tests/data/host/show-notfound.txt", &len);
    assert_int_equal(sw_host_unit_parse(d, len, &u, &e), 0);
    assert_string_equal(u.load_state, "not-found");
    sw_free(d);
    d = slurp("tests/data/host/show-bad-number.txt", &len);
    assert_int_equal(sw_host_unit_parse(d, len, &u, &e), SW_EPARSE);
    assert_int_equal(e.line, 2);
    sw_free(d);
    d = slurp("tests/data/host/show-bad-line.txt", &len);
    assert_int_equal(sw_host_unit_parse(d, len, &u, &e), SW_EPARSE);
    assert_int_equal(e.line, 2);
    sw_free(d);
}

static void test_journal_recorded(void **state)
{
    size_t len;
    struct sw_host_journal j = {0};
    struct sw_err e;
    char *d = slurp("tests/data/host/journal.jsonl", &len);
    assert_int_equal(sw_host_journal_parse(d, len, &j, &e), 0);
    assert_int_equal(j.n, 4);
    assert_string_equal(j.v[0].message, "Started frank-primary.service - vLLM frank-primary.");
    assert_int_equal(j.v[0].priority, 6);
    assert_int_equal(j.v[0].realtime_us, 1727791331000000ull);
    assert_string_equal(j.v[1].message, "hi\xff\n");
    assert_null(j.v[2].message);
    assert_int_equal(j.v[2].priority, 3);
    assert_non_null(strstr(j.v[3].message, "StartLimitIntervalSec"));
    assert_string_equal(j.cursor, j.v[3].cursor);
    assert_non_null(strstr(j.cursor, "i=1a2e"));
    sw_host_journal_free(&j);
    sw_free(d);
    d = slurp("tests/data/host/journal-nocursor.jsonl", &len);
    assert_int_equal(sw_host_journal_parse(d, len, &j, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "__CURSOR"));
    sw_host_journal_free(&j);
    sw_free(d);
    d = slurp("tests/data/host/journal-badbytes.jsonl", &len);
    assert_int_equal(sw_host_journal_parse(d, len, &j, &e), SW_EPARSE);
    sw_host_journal_free(&j);
    sw_free(d);
    assert_int_equal(sw_host_journal_parse("[1]\n", 4, &j, &e), SW_EPARSE);
    sw_host_journal_free(&j);
}

static char *torture_text;
static size_t torture_len;

static int run_journal(void *arg)
{
    struct sw_host_journal j = {0};
    int rc = sw_host_journal_parse(torture_text, torture_len, &j, NULL);
    sw_host_journal_free(&j);
    return rc;
}

static int run_facts(void *arg)
{
    const char *paths[] = {"~/models/frank", "~/models/missing", "podman"};
    struct sw_host_facts f;
    int rc = sw_host_facts_parse(torture_text, torture_len, paths, 3, &f, NULL);
    sw_host_facts_free(&f);
    return rc;
}

/* Every allocation of the parsers may fail: ENOMEM, nothing leaked (ASan). */
static void test_parsers_torture(void **state)
{
    torture_text = slurp("tests/data/host/journal.jsonl", &torture_len);
    swt_torture("journal", run_journal, NULL, SW_ENOMEM);
    sw_free(torture_text);
    torture_text = slurp("tests/data/host/facts-gpu.txt", &torture_len);
    swt_torture("facts", run_facts, NULL, SW_ENOMEM);
    sw_free(torture_text);
}

static void test_open_refuses(void **state)
{
    struct sw_host h;
    struct sw_err e;
    struct sw_host_cfg c = {.name = "x", .kind = SW_HOST_KIND_SSH, .address = "-oProxyCommand=x"};
    assert_int_equal(sw_host_open(&h, &c, &e), SW_EINVAL);
    c.address = NULL;
    assert_int_equal(sw_host_open(&h, &c, &e), SW_EINVAL);
    c.address = "example.org";
    c.user = "-l";
    assert_int_equal(sw_host_open(&h, &c, &e), SW_EINVAL);
    struct sw_host_result r;
    open_local(&h);
    assert_int_equal(sw_host_systemctl(&h, false, "mask", "x.service", 1000, &r, &e), SW_EINVAL);
    assert_int_equal(sw_host_systemctl(&h, false, "start", "--all", 1000, &r, &e), SW_EINVAL);
}

int main(void)
{
    sw_core_init();
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_echo_and_exit),   cmocka_unit_test(test_output_bound),
        cmocka_unit_test(test_quote_roundtrip),     cmocka_unit_test(test_deadline_kills_group),
        cmocka_unit_test(test_line_callback_stops), cmocka_unit_test(test_copy_atomic_mode),
        cmocka_unit_test(test_facts_local),         cmocka_unit_test(test_facts_recorded),
        cmocka_unit_test(test_facts_managers),      cmocka_unit_test(test_unit_show_recorded),
        cmocka_unit_test(test_journal_recorded),    cmocka_unit_test(test_open_refuses),
        cmocka_unit_test(test_parsers_torture),
    };
    return cmocka_run_group_tests_name("host_local", tests, NULL, NULL);
}
