/*
 * unit lint: the scanner of systemd units and the relational laws (include/slipway/unit_lint.h).
 *
 * The operator's two units (tests/data/units/lint/vllm-podman.service, llama-native.service) are
 * clean; each of his six mistakes planted one at a time (mistake-*.service) is caught by its law,
 * with the relationship and both values named, and nothing else is reported. `systemd-analyze
 * verify` runs for real where it is installed (swt_need: required under CI). Then the scanner's
 * syntax, the container and engine forms, each law's edges, the CLI, and allocation failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/unit_lint.h>

#include "swtest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool have_analyze(void)
{
    struct swt_run r;
    const char *argv[] = {"systemd-analyze", "--version", NULL};
    bool ok = swt_run(argv, NULL, 20, &r) == 0 && r.status == 0;
    swt_run_free(&r);
    return ok;
}

static const char *fixture(const char *name)
{
    static char buf[4][4096];
    static int k;
    char rel[512];
    snprintf(rel, sizeof(rel), "tests/data/units/lint/%s", name);
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s", swt_src(rel));
    return buf[k];
}

/* Lint text (named where) and return the report; fails the test on an error. */
static struct sw_unit *lint_text(const char *where, const char *text, const char *env,
                                 const struct sw_unit_lint_opts *o, struct sw_unit_report *r)
{
    struct sw_unit *u = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    memset(r, 0, sizeof(*r));
    int rc = sw_unit_parse(text, strlen(text), where, env, &u, &e);
    if (rc)
        fail_msg("%s: %s", where, e.msg);
    struct sw_unit_lint_opts none = {0};
    rc = sw_unit_lint(u, o ? o : &none, r, &e);
    if (rc)
        fail_msg("%s: lint: %s", where, e.msg);
    return u;
}

static void print_report(const char *where, const struct sw_unit_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        fprintf(stderr, "  %s:%d: %s: %s\n", where, r->v[i].line, r->v[i].law, r->v[i].msg);
}

/* Exactly one finding, of law, on line, its message holding every needle (NULL-terminated). */
static void expect_one(const char *where, const struct sw_unit_report *r, const char *law, int line,
                       ...)
{
    if (r->n != 1 || strcmp(r->v[0].law, law)) {
        print_report(where, r);
        fail_msg("%s: want exactly one %s finding, got %zu", where, law, r->n);
    }
    if (line >= 0)
        assert_int_equal(r->v[0].line, line);
    va_list ap;
    va_start(ap, line);
    for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *))
        if (!strstr(r->v[0].msg, n))
            fail_msg("%s: the %s finding does not name '%s': %s", where, law, n, r->v[0].msg);
    va_end(ap);
}

static void expect_none(const char *where, const struct sw_unit_report *r)
{
    if (r->n) {
        print_report(where, r);
        fail_msg("%s: want no finding, got %zu", where, r->n);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The operator's units and mistakes.
 */
static void test_good_units(void **state)
{
    (void)state;
    struct sw_unit_report r = {0};
    struct sw_unit *u = NULL;
    struct sw_err e;
    struct sw_unit_lint_opts o = {0};
    const char *good[] = {"vllm-podman.service", "llama-native.service"};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(sw_unit_lint_file(fixture(good[i]), NULL, &o, &r, &u, &e), 0);
        expect_none(good[i], &r);
        sw_unit_report_free(&r);
        sw_unit_free(u);
    }
    /* what the scanner read from the vLLM unit */
    assert_int_equal(sw_unit_lint_file(fixture("vllm-podman.service"), fixture("frank-primary.env"),
                                       &o, &r, &u, &e),
                     0);
    expect_none("vllm-podman.service + env", &r);
    assert_int_equal(u->engine, SW_UNIT_ENGINE_VLLM);
    assert_true(u->ctr.found && u->ctr.via_shell);
    assert_string_equal(u->ctr.tool, "podman");
    assert_string_equal(u->ctr.name, "frank-primary");
    assert_int_equal(u->ctr.n_mounts, 1);
    assert_string_equal(u->ctr.mounts[0].host, "/home/dank/models");
    assert_string_equal(u->ctr.mounts[0].cont, "/models");
    assert_true(u->ctr.mounts[0].ro);
    assert_int_equal(u->ctr.n_devices, 2);
    assert_int_equal(u->ctr.stop_timeout_s, 120);
    assert_int_equal(u->stop_grace_s, 120);
    assert_int_equal(u->n_paths, 2);
    assert_string_equal(u->paths[0].path, "/models/Qwen3.5-27B");
    assert_string_equal(u->paths[1].path, "/models/Qwen3.5-9B-mtp");
    assert_string_equal(u->paths[1].role, "draft model");
    assert_string_equal(sw_unit_env(u, "MODELS"), "/models");
    sw_unit_report_free(&r);
    sw_unit_free(u);

    swt_need(have_analyze(), "systemd-analyze (the verify step of the lint)");
    o.verify = true;
    assert_int_equal(sw_unit_lint_file(fixture("vllm-podman.service"), NULL, &o, &r, NULL, &e), 0);
    if (access("/usr/bin/podman", X_OK) == 0)
        expect_none("vllm-podman.service (verified)", &r);
    else /* verify checks every Exec binary: where podman is missing it says so, and only that */
        expect_one("vllm-podman.service (verified)", &r, SW_UNIT_LAW_VERIFY, -1,
                   "/usr/bin/podman is not executable", NULL);
    sw_unit_report_free(&r);
    /* The native unit names /usr/local/bin/llama-server, where the operator installs it: clean
     * where it exists, else verify says so (and only that). */
    assert_int_equal(sw_unit_lint_file(fixture("llama-native.service"), NULL, &o, &r, NULL, &e), 0);
    if (access("/usr/local/bin/llama-server", X_OK) == 0)
        expect_none("llama-native.service (verified)", &r);
    else
        expect_one("llama-native.service (verified)", &r, SW_UNIT_LAW_VERIFY, -1,
                   "/usr/local/bin/llama-server is not executable", NULL);
    sw_unit_report_free(&r);
}

/* Where podman is not installed, verify says so about the units that name /usr/bin/podman:
 * that finding (asserted in test_good_units) is not the mistake under test. */
static void drop_missing_podman(struct sw_unit_report *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].law, SW_UNIT_LAW_VERIFY) ||
            !strstr(r->v[i].msg, "/usr/bin/podman is not executable"))
            r->v[k++] = r->v[i];
    r->n = k;
}

struct mistake {
    const char *file, *law;
    int line;
    const char *needles[4];
};

static void test_mistakes(void **state)
{
    (void)state;
    static const struct mistake m[] = {
        {"mistake-start-limit-in-service.service",
         SW_UNIT_LAW_START_LIMIT,
         9,
         {"StartLimitIntervalSec=0 is in [Service]", "[Unit] setting", "Unknown key"}},
        {"mistake-no-timeout-stop.service",
         SW_UNIT_LAW_STOP_TIMEOUT,
         21,
         {"TimeoutStopSec=90s (systemd's default", "is not above the container's stop grace",
          "`podman stop -t 120` (line 21)", "every stop is logged as failed"}},
        {"mistake-restart-on-failure.service",
         SW_UNIT_LAW_RESTART,
         22,
         {"Restart=on-failure (line 22)", "vLLM's API server (line 13)", "exits 0",
          "Restart=always"}},
        {"mistake-host-path.service",
         SW_UNIT_LAW_PATH,
         13,
         {"--model /home/dank/models/Qwen3.5-27B", "HOST path",
          "mounts /home/dank/models at /models", "given /models/Qwen3.5-27B"}},
        {"mistake-image-tag.service",
         SW_UNIT_LAW_IMAGE,
         13,
         {"docker.io/vllm/vllm-openai:v0.11.0", "by tag, not by digest", "sha256"}},
        {"mistake-api-key.service",
         SW_UNIT_LAW_SECRET,
         13,
         {"ExecStart (line 13)", "--api-key", "literal value", "EnvironmentFile"}},
    };
    bool verify = have_analyze();
    swt_need(verify, "systemd-analyze (the verify step of the lint)");
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < SW_ARRAY_LEN(m); i++) {
            struct sw_unit_report r = {0};
            struct sw_err e;
            struct sw_unit_lint_opts o = {.verify = pass == 1};
            assert_int_equal(sw_unit_lint_file(fixture(m[i].file), NULL, &o, &r, NULL, &e), 0);
            if (pass == 1 && access("/usr/bin/podman", X_OK) != 0)
                drop_missing_podman(&r);
            expect_one(m[i].file, &r, m[i].law, m[i].line, m[i].needles[0], m[i].needles[1],
                       pass == 0 && !strcmp(m[i].law, SW_UNIT_LAW_START_LIMIT) ? NULL
                                                                               : m[i].needles[2],
                       m[i].needles[3], NULL);
            assert_null(strstr(r.v[0].msg, "sk-frank-0123456789abcdef"));
            sw_unit_report_free(&r);
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * The scanner.
 */
#define DIGEST_T "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
static void test_syntax(void **state)
{
    (void)state;
    const char *text = "# comment\n"
                       "; another\n"
                       "[Unit]\n"
                       "Description=a \\\n"
                       "# a comment inside a continuation is skipped\n"
                       "  b \\\n"
                       "  c\n"
                       "[Service]\n"
                       "Environment=A=1 \"B=two words\"\n"
                       "Environment=C=x\n"
                       "Environment=\n"
                       "Environment=D=/d E=e\n"
                       "ExecStartPre=-/bin/true one\n"
                       "ExecStartPre=@/bin/echo argv0 \"quoted arg\" 'single q' \\$lit $$x\n"
                       "ExecStart=/bin/echo $E ${D}/m \"$E\" $UNSET ${UNSET}z\n"
                       "ExecStart=\n"
                       "ExecStart=:/bin/echo $E\n"
                       "no equals here\n"
                       "[Broken\n"
                       "Key=after broken header\n";
    struct sw_unit *u = NULL;
    struct sw_err e;
    assert_int_equal(sw_unit_parse(text, strlen(text), "t.service", "E=from file\n", &u, &e), 0);
    int line = 0;
    assert_string_equal(sw_unit_get(u, "Unit", "Description", &line), "a  b  c");
    assert_int_equal(line, 4);
    /* the reset dropped C; the env file overrides Environment=E */
    assert_null(sw_unit_env(u, "C"));
    assert_null(sw_unit_env(u, "A"));
    assert_string_equal(sw_unit_env(u, "D"), "/d");
    assert_string_equal(sw_unit_env(u, "E"), "from file");
    assert_null(sw_unit_get(u, "Service", "Nope", NULL));
    /* ExecStartPre x2, the reset ExecStart gone, the last one kept */
    assert_int_equal(u->n_cmds, 3);
    assert_int_equal(u->cmds[0].prefix, SW_UNIT_EXEC_IGNORE);
    assert_string_equal(u->cmds[0].argv[0], "/bin/true");
    assert_int_equal(u->cmds[1].prefix, SW_UNIT_EXEC_ARGV0);
    assert_int_equal(u->cmds[1].argc, 5);
    assert_string_equal(u->cmds[1].argv[0], "/bin/echo");
    assert_string_equal(u->cmds[1].argv[1], "quoted arg");
    assert_string_equal(u->cmds[1].argv[2], "single q");
    assert_string_equal(u->cmds[1].argv[3], "$lit");
    assert_string_equal(u->cmds[1].argv[4], "$x");
    assert_int_equal(u->cmds[2].prefix, SW_UNIT_EXEC_NOENV);
    assert_string_equal(u->cmds[2].argv[1], "$E");
    assert_string_equal(u->cmds[2].key, "ExecStart");
    assert_int_equal(u->cmds[2].line, 17);
    /* the two bad lines are kept as notes, the key after a broken header has no section */
    assert_int_equal(u->n_notes, 3);
    assert_int_equal(u->notes[0].line, 18);
    assert_int_equal(u->notes[1].line, 19);
    assert_int_equal(u->notes[2].line, 20);
    sw_unit_free(u);

    /* $E as a whole word splits; ${D} stays in its word; "$E" (quoted) is one word */
    const char *t2 = "[Service]\nEnvironment=E=\"x y\" D=/d\n"
                     "ExecStart=/bin/echo $E ${D}/m \"$E\" $UNSET ${UNSET}z\n";
    assert_int_equal(sw_unit_parse(t2, strlen(t2), "t2.service", NULL, &u, &e), 0);
    assert_int_equal(u->n_cmds, 1);
    const struct sw_unit_cmd *c = &u->cmds[0];
    assert_int_equal(c->argc, 6);
    assert_string_equal(c->argv[1], "x");
    assert_string_equal(c->argv[2], "y");
    assert_string_equal(c->argv[3], "/d/m");
    assert_string_equal(c->argv[4], "x y");
    assert_string_equal(c->argv[5], "z");
    assert_string_equal(c->raw[1], "$E");
    sw_unit_free(u);

    /* syntax notes are findings */
    struct sw_unit_report r;
    u = lint_text("n.service", "[Service]\nExecStart=/bin/true\nnot an assignment\n", NULL, NULL,
                  &r);
    expect_one("n.service", &r, SW_UNIT_LAW_SYNTAX, 3, "not Key=Value", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);

    /* refusals: a NUL byte names its line; too large */
    char nul[] = "[Unit]\nA=b\n\0x";
    assert_int_equal(sw_unit_parse(nul, sizeof(nul) - 1, "nul.service", NULL, &u, &e), SW_EPARSE);
    assert_int_equal(e.line, 3);
    assert_null(u);
    char *big = calloc(1, SW_UNIT_TEXT_MAX + 2);
    memset(big, '#', SW_UNIT_TEXT_MAX + 1);
    assert_int_equal(sw_unit_parse(big, SW_UNIT_TEXT_MAX + 1, "big.service", NULL, &u, &e),
                     SW_ERANGE);
    free(big);
}

/* Lines end where systemd's read_line_full ends them; a byte order mark is skipped; drop-ins
 * follow the unit as parts, their positions naming them. */
static void test_line_ends_and_parts(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u;
    /* a BOM, CR LF ends: read as written, the CR LF a warning at the first such line */
    u = lint_text("crlf.service",
                  "\xef\xbb\xbf[Unit]\r\nDescription=d\r\n[Service]\r\nExecStart=/bin/true \\\r\n"
                  "  two\r\nRestart=always\r\n",
                  NULL, NULL, &r);
    expect_one("crlf", &r, SW_UNIT_LAW_SYNTAX, 1, "6 lines end in CR LF, the first line 1", NULL);
    assert_int_equal(r.v[0].severity, SW_UNIT_WARNING);
    assert_string_equal(sw_unit_get(u, "Unit", "Description", NULL), "d");
    assert_string_equal(sw_unit_get(u, "Service", "Restart", NULL), "always");
    assert_int_equal(u->n_cmds, 1);
    assert_int_equal(u->cmds[0].argc, 2);
    assert_string_equal(u->cmds[0].argv[1], "two");
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* a CR alone ends the line for systemd: the assignment after it is one (and one finding for
     * the line); lines keep the numbers an editor shows */
    u = lint_text("cr.service",
                  "[Service]\nExecStart=/bin/true\nDescription=m\rExecStartPre=/bin/x\r#\n"
                  "Restart=always\nUser=u\n",
                  NULL, NULL, &r);
    expect_one("cr", &r, SW_UNIT_LAW_SYNTAX, 3, "inside line 3 ends the line for systemd",
               "'ExecStartPre=/bin/x'", NULL);
    int line = 0;
    assert_string_equal(sw_unit_get(u, "Service", "ExecStartPre", &line), "/bin/x");
    assert_int_equal(line, 3);
    assert_string_equal(sw_unit_get(u, "Service", "User", &line), "u");
    assert_int_equal(line, 5);
    assert_int_equal(u->n_cmds, 2);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* LF CR is one line end too (systemd's read_line_full), counted with the CR LF ends */
    u = lint_text("lfcr.service", "[Service]\n\rExecStart=/bin/true\nRestart=always\n", NULL, NULL,
                  &r);
    expect_one("lfcr", &r, SW_UNIT_LAW_SYNTAX, 1, "1 line ends in CR LF, the first line 1", NULL);
    assert_int_equal(u->n_cmds, 1);
    assert_string_equal(sw_unit_get(u, "Service", "Restart", &line), "always");
    assert_int_equal(line, 3);
    sw_unit_report_free(&r);
    sw_unit_free(u);

    /* parts: the drop-ins in order override, append and reset; positions name their file */
    const struct sw_unit_part parts[] = {
        {"/u/a.service",
         "[Service]\nExecStart=/bin/one\nEnvironment=A=1\nTimeoutStopSec=5\nRestart=no\n", 0},
        {"/u/a.service.d/10.conf", "[Service]\nTimeoutStopSec=100\nEnvironment=B=2\n", 0},
        {"/u/a.service.d/20.conf", "[Service]\nExecStart=\nExecStart=/bin/two\nStartLimitBurst=3\n",
         0},
    };
    struct sw_unit_part p3[3];
    for (size_t i = 0; i < 3; i++) {
        p3[i] = parts[i];
        p3[i].len = strlen(parts[i].text);
    }
    struct sw_err e;
    assert_int_equal(sw_unit_parse_parts(p3, 3, NULL, &u, &e), 0);
    assert_int_equal(u->n_parts, 3);
    assert_string_equal(sw_unit_get(u, "Service", "TimeoutStopSec", &line), "100");
    const char *file = sw_unit_pos(u, line, &line);
    assert_string_equal(file, "/u/a.service.d/10.conf");
    assert_int_equal(line, 2);
    assert_string_equal(sw_unit_env(u, "A"), "1");
    assert_string_equal(sw_unit_env(u, "B"), "2");
    assert_int_equal(u->n_cmds, 1);
    assert_string_equal(u->cmds[0].argv[0], "/bin/two");
    assert_string_equal(sw_unit_pos(u, u->cmds[0].line, &line), "/u/a.service.d/20.conf");
    assert_int_equal(line, 3);
    assert_string_equal(sw_unit_pos(u, 4, &line), "/u/a.service");
    assert_int_equal(line, 4);
    assert_string_equal(sw_unit_pos(u, 0, &line), "/u/a.service");
    assert_int_equal(line, 0);
    memset(&r, 0, sizeof(r));
    struct sw_unit_lint_opts none = {0};
    assert_int_equal(sw_unit_lint(u, &none, &r, &e), 0);
    expect_one("parts", &r, SW_UNIT_LAW_START_LIMIT, 2 * SW_UNIT_PART_LINES + 4,
               "StartLimitBurst=3 is in [Service]", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* a message naming a position in a drop-in names the drop-in */
    const struct sw_unit_part two[] = {
        {"/u/b.service", "[Service]\nExecStart=/usr/bin/podman run --name b img" DIGEST_T "\n", 0},
        {"/u/b.service.d/x.conf", "[Service]\nExecStop=/usr/bin/podman stop -t 120 b\n", 0},
    };
    struct sw_unit_part p2[2] = {two[0], two[1]};
    p2[0].len = strlen(two[0].text);
    p2[1].len = strlen(two[1].text);
    assert_int_equal(sw_unit_parse_parts(p2, 2, NULL, &u, &e), 0);
    memset(&r, 0, sizeof(r));
    assert_int_equal(sw_unit_lint(u, &none, &r, &e), 0);
    bool named = false;
    for (size_t i = 0; i < r.n; i++)
        named |= !strcmp(r.v[i].law, SW_UNIT_LAW_STOP_TIMEOUT) &&
                 strstr(r.v[i].msg, "`podman stop -t 120` (line 2 of /u/b.service.d/x.conf)");
    if (!named) {
        print_report("b", &r);
        fail_msg("the stop-timeout finding does not name the drop-in's line");
    }
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* refusals: no part, too many, a NUL in a drop-in naming the drop-in */
    assert_int_equal(sw_unit_parse_parts(p2, 0, NULL, &u, &e), SW_EINVAL);
    assert_int_equal(sw_unit_parse_parts(p2, SW_UNIT_PARTS_MAX + 1, NULL, &u, &e), SW_EINVAL);
    p2[1].text = "[Service]\n\0x";
    p2[1].len = 12;
    assert_int_equal(sw_unit_parse_parts(p2, 2, NULL, &u, &e), SW_EPARSE);
    assert_string_equal(e.where, "/u/b.service.d/x.conf");
    assert_null(u);
}

static void test_timespan(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(sw_unit_timespan_ms("90", &ms), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(sw_unit_timespan_ms("2min 30s", &ms), 0);
    assert_int_equal(ms, 150000);
    assert_int_equal(sw_unit_timespan_ms("3min", &ms), 0);
    assert_int_equal(ms, 180000);
    assert_int_equal(sw_unit_timespan_ms("500ms", &ms), 0);
    assert_int_equal(ms, 500);
    assert_int_equal(sw_unit_timespan_ms("1h", &ms), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(sw_unit_timespan_ms("1.5s", &ms), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(sw_unit_timespan_ms("infinity", &ms), 0);
    assert_true(ms == INT64_MAX);
    assert_int_equal(sw_unit_timespan_ms("", &ms), SW_EPARSE);
    assert_int_equal(sw_unit_timespan_ms("ten", &ms), SW_EPARSE);
    assert_int_equal(sw_unit_timespan_ms("5 fortnights", &ms), SW_EPARSE);
    assert_int_equal(sw_unit_timespan_ms("99999999999999999999", &ms), SW_EPARSE);
    /* the whole years fit in int64 microseconds, the fraction added to them does not */
    assert_int_equal(sw_unit_timespan_ms("292271y", &ms), 0);
    assert_int_equal(sw_unit_timespan_ms("292271.999999y", &ms), SW_EPARSE);
}

#define DIGEST "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ---------------------------------------------------------------------------------------------
 * Container forms and the laws' edges.
 */
static void test_stop_timeout(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u;
    /* podman stop without -t: podman's default 10 s; TimeoutStopSec=10 is not above it */
    u = lint_text("a.service",
                  "[Service]\nExecStart=/usr/bin/podman run --name x img" DIGEST "\n"
                  "ExecStop=/usr/bin/podman stop x\nRestart=always\nTimeoutStopSec=10\n",
                  NULL, NULL, &r);
    expect_one("a", &r, SW_UNIT_LAW_STOP_TIMEOUT, 5, "TimeoutStopSec=10 (line 5)",
               "podman stop without -t: its default 10 s", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* --time=200 against TimeoutSec=3min (TimeoutStopSec absent) */
    u = lint_text("b.service",
                  "[Service]\nExecStart=/usr/bin/docker run --rm img" DIGEST "\n"
                  "ExecStop=/usr/bin/docker stop --time=200 x\nRestart=always\nTimeoutSec=3min\n",
                  NULL, NULL, &r);
    expect_one("b", &r, SW_UNIT_LAW_STOP_TIMEOUT, 5, "TimeoutSec=3min", "docker stop -t 200", NULL);
    assert_string_equal(u->ctr.tool, "docker");
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* only --stop-timeout, no ExecStop: that is the grace; 181s is above 180; infinity too */
    u = lint_text("c.service",
                  "[Service]\nExecStart=/usr/bin/podman run --stop-timeout=180 img" DIGEST "\n"
                  "Restart=always\nTimeoutStopSec=181s\n",
                  NULL, NULL, &r);
    expect_none("c", &r);
    assert_int_equal(u->stop_grace_s, 180);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("d.service",
                  "[Service]\nExecStart=/usr/bin/podman run --stop-timeout 180 img" DIGEST "\n"
                  "Restart=always\nTimeoutStopSec=infinity\n",
                  NULL, NULL, &r);
    expect_none("d", &r);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("e.service",
                  "[Service]\nExecStart=/usr/bin/podman run --stop-timeout 180 img" DIGEST "\n"
                  "Restart=always\nTimeoutStopSec=soon\n",
                  NULL, NULL, &r);
    expect_one("e", &r, SW_UNIT_LAW_STOP_TIMEOUT, 4, "TimeoutStopSec=soon", "not a time span",
               NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* a grace past int64 milliseconds (fuzz_unit_scan): above every finite timeout, compared
     * without multiplying it; --stop-timeout alike */
    u = lint_text("f.service",
                  "[Service]\nExecStart=/usr/bin/podman run --name x img" DIGEST "\n"
                  "ExecStop=/usr/bin/podman stop -t 3262585074549260287 x\nRestart=always\n"
                  "TimeoutStopSec=3y\n",
                  NULL, NULL, &r);
    expect_one("f", &r, SW_UNIT_LAW_STOP_TIMEOUT, 5, "TimeoutStopSec=3y (line 5)",
               "podman stop -t 3262585074549260287", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("g.service",
                  "[Service]\nExecStart=/usr/bin/podman run --stop-timeout 9223372036854775807 "
                  "img" DIGEST "\nRestart=always\n",
                  NULL, NULL, &r);
    expect_one("g", &r, SW_UNIT_LAW_STOP_TIMEOUT, 2, "TimeoutStopSec=90s (systemd's default",
               "--stop-timeout 9223372036854775807", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
}

static void test_start_limit(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u = lint_text("s.service",
                                  "[Unit]\nStartLimitIntervalSec=600\nStartLimitInterval=300\n"
                                  "StartLimitBurst=5\n[Service]\nExecStart=/bin/true\n"
                                  "StartLimitBurst=3\n",
                                  NULL, NULL, &r);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.v[0].law, SW_UNIT_LAW_START_LIMIT);
    assert_int_equal(r.v[0].line, 3);
    assert_non_null(strstr(r.v[0].msg, "first at line 2"));
    assert_int_equal(r.v[1].line, 7);
    assert_int_equal(r.v[1].severity, SW_UNIT_WARNING);
    assert_non_null(strstr(r.v[1].msg, "StartLimitBurst=3 is in [Service]"));
    sw_unit_report_free(&r);
    sw_unit_free(u);
}

/* memory-limit: MemoryMax= in [Service] with a size is clean; in [Unit], unreadable, on a
 * container unit or in the v1 spelling it is named. */
static void test_memory_limit(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u = lint_text("m.service",
                                  "[Service]\nExecStart=/bin/true\nMemoryMax=268435456\n"
                                  "MemoryHigh=1.5G\n",
                                  NULL, NULL, &r);
    sw_unit_free(u);
    expect_none("m.service", &r);
    sw_unit_report_free(&r);
    u = lint_text("m.service", "[Service]\nExecStart=/bin/true\nMemoryMax=256M\n", NULL, NULL, &r);
    expect_none("m.service", &r);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("m.service", "[Unit]\nMemoryMax=256M\n[Service]\nExecStart=/bin/true\n", NULL,
                  NULL, &r);
    expect_one("m.service", &r, SW_UNIT_LAW_MEMORY, 2, "[Unit]", "without a limit", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("m.service", "[Service]\nExecStart=/bin/true\nMemoryMax=lots\n", NULL, NULL, &r);
    expect_one("m.service", &r, SW_UNIT_LAW_MEMORY, 3, "not a size", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("m.service", "[Service]\nExecStart=/bin/true\nMemoryLimit=2G\n", NULL, NULL, &r);
    expect_one("m.service", &r, SW_UNIT_LAW_MEMORY, 3, "MemoryMax=", NULL);
    assert_int_equal(r.v[0].severity, SW_UNIT_WARNING);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("c.service",
                  "[Service]\nMemoryMax=8G\nExecStartPre=/usr/bin/podman run -d --name c "
                  "localhost/img@sha256:"
                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
                  "ExecStart=/usr/bin/podman wait c\nRestart=always\n",
                  NULL, NULL, &r);
    bool named = false;
    for (size_t i = 0; i < r.n; i++)
        named |= !strcmp(r.v[i].law, SW_UNIT_LAW_MEMORY) && r.v[i].line == 2 &&
                 strstr(r.v[i].msg, "--memory") != NULL;
    if (!named) {
        print_report("c.service", &r);
        fail_msg("MemoryMax= on a container unit is not named");
    }
    sw_unit_report_free(&r);
    sw_unit_free(u);
}

static void test_restart(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u;
    /* `exec podman wait` as the main process, Restart absent */
    u = lint_text("w.service",
                  "[Service]\nExecStart=/bin/sh -c '/usr/bin/podman run -d --name x img" DIGEST
                  " && exec /usr/bin/podman wait x'\n",
                  NULL, NULL, &r);
    expect_one("w", &r, SW_UNIT_LAW_RESTART, 2, "Restart=no (systemd's default",
               "`podman wait` as the main process (line 2)", "exits 0 whatever", NULL);
    assert_int_equal(u->wait_line, 2);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* the same with Restart=always: clean */
    u = lint_text("w2.service",
                  "[Service]\nExecStart=/bin/sh -c '/usr/bin/podman run -d --name x img" DIGEST
                  " && exec /usr/bin/podman wait x'\nRestart=always\n",
                  NULL, NULL, &r);
    expect_none("w2", &r);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* native vLLM: `vllm serve` and `python -m vllm.entrypoints.openai.api_server` */
    u = lint_text("v.service",
                  "[Service]\nExecStart=/opt/venv/bin/vllm serve /srv/m --port 8000\n"
                  "Restart=on-abnormal\n",
                  NULL, NULL, &r);
    expect_one("v", &r, SW_UNIT_LAW_RESTART, 3, "Restart=on-abnormal (line 3)",
               "vLLM's API server (line 2)", NULL);
    assert_string_equal(u->paths[0].path, "/srv/m");
    assert_string_equal(u->paths[0].flag, "serve (positional)");
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("v2.service",
                  "[Service]\nExecStart=/usr/bin/python3 -m vllm.entrypoints.openai.api_server "
                  "--model /srv/m --tokenizer /srv/t\n",
                  NULL, NULL, &r);
    expect_one("v2", &r, SW_UNIT_LAW_RESTART, 2, "Restart=no", NULL);
    assert_int_equal(u->n_paths, 2);
    assert_string_equal(u->paths[1].role, "tokenizer");
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* llama.cpp with Restart=on-failure is fine (it exits non-zero when it fails) */
    u = lint_text("l.service",
                  "[Service]\nExecStart=/opt/llama/llama-server -m /m/a.gguf -md /m/d.gguf "
                  "--mmproj=/m/p.gguf --chat-template-file /m/t.jinja --lora /m/l.gguf\n"
                  "Restart=on-failure\n",
                  NULL, NULL, &r);
    expect_none("l", &r);
    assert_int_equal(u->engine, SW_UNIT_ENGINE_LLAMACPP);
    assert_int_equal(u->n_paths, 5);
    assert_string_equal(u->paths[1].role, "draft model");
    assert_string_equal(u->paths[2].path, "/m/p.gguf");
    assert_string_equal(u->paths[3].role, "chat template");
    sw_unit_report_free(&r);
    sw_unit_free(u);
}

static void test_paths(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u;
    /* SGLang in docker with --mount: the draft lies outside every mount */
    u = lint_text("g.service",
                  "[Service]\nExecStart=/usr/bin/docker run --mount "
                  "type=bind,source=/srv/models,target=/models,readonly img" DIGEST
                  " python3 -m sglang.launch_server --model-path /models/a --tokenizer-path "
                  "/models/a --speculative-draft-model-path /drafts/d\nRestart=always\n",
                  NULL, NULL, &r);
    expect_one("g", &r, SW_UNIT_LAW_PATH, 2, "draft model path --speculative-draft-model-path",
               "/drafts/d", "under none of the container's 1 mount(s)", NULL);
    assert_int_equal(u->engine, SW_UNIT_ENGINE_SGLANG);
    assert_true(u->ctr.mounts[0].ro);
    assert_string_equal(u->ctr.mounts[0].host, "/srv/models");
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* a relative path to a native engine; a Hub repo id to vLLM is not a path */
    u = lint_text("rel.service", "[Service]\nExecStart=/opt/llama-server -m models/a.gguf\n", NULL,
                  NULL, &r);
    expect_one("rel", &r, SW_UNIT_LAW_PATH, 2, "model path -m models/a.gguf", "relative", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("hub.service",
                  "[Service]\nExecStart=/opt/vllm serve Qwen/Qwen3-8B\nRestart=always\n", NULL,
                  NULL, &r);
    expect_none("hub", &r);
    sw_unit_report_free(&r);
    sw_unit_free(u);

    /* existence, checked on this machine: the host side of the mount */
    char *dir = swt_tmpdir();
    char sub[4200], text[8192];
    snprintf(sub, sizeof(sub), "%s/models", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    swt_write_str(swt_join(sub, "a.gguf"), "x");
    struct sw_unit_lint_opts o = {.exists = sw_unit_exists_local};
    snprintf(text, sizeof(text),
             "[Service]\nExecStart=/usr/bin/podman run -v %s:/models:ro "
             "ghcr.io/ggml-org/llama.cpp" DIGEST " -m /models/a.gguf --mmproj /models/b.gguf\n"
             "ExecStop=/usr/bin/podman stop -t 5 x\n",
             sub);
    u = lint_text("ex.service", text, NULL, &o, &r);
    expect_one("ex", &r, SW_UNIT_LAW_PATH, 2, "projector path --mmproj /models/b.gguf", "host side",
               "/models/b.gguf does not exist", NULL);
    assert_int_equal(u->engine, SW_UNIT_ENGINE_LLAMACPP);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    snprintf(text, sizeof(text), "[Service]\nExecStart=/opt/llama-server -m %s/a.gguf -md %s/z\n",
             sub, sub);
    u = lint_text("ex2.service", text, NULL, &o, &r);
    expect_one("ex2", &r, SW_UNIT_LAW_PATH, 2, "draft model path -md", "does not exist on the host",
               NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    swt_tmpdir_free(dir);
}

static void test_image_and_secrets(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u;
    u = lint_text("i.service",
                  "[Service]\nExecStart=/usr/bin/podman run -e HF_TOKEN -e MAX_TOKENS=4096 "
                  "--env-file /etc/x.env localhost/llama\n",
                  NULL, NULL, &r);
    expect_one("i", &r, SW_UNIT_LAW_IMAGE, 2, "localhost/llama", "bare name", NULL);
    assert_int_equal(u->ctr.n_env, 2);
    assert_int_equal(u->ctr.n_env_files, 1);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    u = lint_text("i2.service", "[Service]\nExecStart=/usr/bin/podman run img@sha256:0123\n", NULL,
                  NULL, &r);
    expect_one("i2", &r, SW_UNIT_LAW_IMAGE, 2, "img@sha256:0123", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);

    /* secrets: in the unit's Environment=, as -e NAME=VALUE, and --api-key from a variable */
    const char *text = "[Service]\n"
                       "Environment=\"HF_TOKEN=hf_literal_secret_value\" MODE=x\n"
                       "EnvironmentFile=/etc/k.env\n"
                       "ExecStart=/usr/bin/podman run -e OPENAI_API_KEY=sk-literal-abc123 "
                       "img" DIGEST " --api-key ${KEY}\n"
                       "Restart=always\n";
    u = lint_text("k.service", text, "KEY=sk-from-env-file-9876\n", NULL, &r);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.v[0].line, 2);
    assert_non_null(strstr(r.v[0].msg, "Environment=HF_TOKEN=<value>"));
    assert_non_null(strstr(r.v[1].msg, "OPENAI_API_KEY=<value>"));
    assert_non_null(strstr(r.v[2].msg, "--api-key from a variable"));
    for (size_t i = 0; i < r.n; i++) {
        assert_string_equal(r.v[i].law, SW_UNIT_LAW_SECRET);
        assert_null(strstr(r.v[i].msg, "hf_literal_secret_value"));
        assert_null(strstr(r.v[i].msg, "sk-literal-abc123"));
        assert_null(strstr(r.v[i].msg, "sk-from-env-file-9876"));
    }
    sw_unit_report_free(&r);
    sw_unit_free(u);
}

/* ---------------------------------------------------------------------------------------------
 * The verify step: missing, hanging, and real.
 */
static void test_verify(void **state)
{
    (void)state;
    struct sw_unit_report r;
    struct sw_unit *u;
    struct sw_unit_lint_opts o = {.verify = true,
                                  .systemd_analyze = "/nonexistent/systemd-analyze"};
    const char *ok = "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n";
    u = lint_text("ok.service", ok, NULL, &o, &r);
    expect_one("missing analyze", &r, SW_UNIT_LAW_VERIFY, 0, "/nonexistent/systemd-analyze",
               "is not installed", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);

    /* a program that does not finish in time is killed and said so */
    char *dir = swt_tmpdir();
    const char *hang = swt_join(dir, "hang-analyze");
    swt_write_str(hang, "#!/bin/sh\nexec sleep 30\n");
    assert_int_equal(chmod(hang, 0755), 0);
    char hang_path[4200];
    snprintf(hang_path, sizeof(hang_path), "%s", hang);
    o.systemd_analyze = hang_path;
    o.verify_timeout_ms = 300;
    u = lint_text("ok.service", ok, NULL, &o, &r);
    expect_one("hang", &r, SW_UNIT_LAW_VERIFY, 0, "did not finish within 300 ms", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    swt_tmpdir_free(dir);

    swt_need(have_analyze(), "systemd-analyze (the verify step of the lint)");
    o.systemd_analyze = NULL;
    o.verify_timeout_ms = 0;
    u = lint_text("/some/where/ok.service", ok, NULL, &o, &r);
    expect_none("ok (verified)", &r);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    /* an unknown key: systemd-analyze exits 0, the line is still a finding, naming the file */
    u = lint_text("/some/where/uk.service",
                  "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\nFooBar=1\n", NULL, &o,
                  &r);
    expect_one("unknown key", &r, SW_UNIT_LAW_VERIFY, 5,
               "/some/where/uk.service:5: Unknown key 'FooBar' in section [Service]", NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
}

/* ---------------------------------------------------------------------------------------------
 * The CLI.
 */
static void test_cli(void **state)
{
    (void)state;
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "lint", "--no-verify", fixture("vllm-podman.service"), NULL),
                     0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "clean"));
    swt_run_free(&r);
    const char *f = fixture("mistake-no-timeout-stop.service");
    assert_int_equal(swt_slipway(&r, "lint", "--no-verify", f, NULL), 0);
    assert_int_equal(r.status, 1);
    char want[4200];
    snprintf(want, sizeof(want), "%s:21: stop-timeout: TimeoutStopSec=90s", f);
    assert_non_null(strstr(r.out, want));
    swt_run_free(&r);
    assert_int_equal(
        swt_slipway(&r, "lint", "--no-verify", "--json", fixture("mistake-api-key.service"), NULL),
        0);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    json_t *fs = json_object_get(j, "findings");
    assert_int_equal(json_array_size(fs), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(fs, 0), "law")), "secret");
    assert_null(strstr(r.out, "sk-frank-0123456789abcdef"));
    json_decref(j);
    swt_run_free(&r);

    /* unusable input: exit 2, the file named */
    assert_int_equal(swt_slipway(&r, "lint", "/nonexistent/x.service", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "/nonexistent/x.service"));
    swt_run_free(&r);
    char *dir = swt_tmpdir();
    assert_int_equal(swt_slipway(&r, "lint", dir, NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, dir));
    swt_run_free(&r);
    const char *bin = swt_join(dir, "bin.service");
    swt_write(bin,
              "\x7f"
              "ELF\x02\x01\x01\0\0\0",
              10);
    char binp[4200];
    snprintf(binp, sizeof(binp), "%s", bin);
    assert_int_equal(swt_slipway(&r, "lint", binp, NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, binp));
    assert_non_null(strstr(r.err, "not a unit file"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
    swt_slipway_exits(2, "lint", NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Allocation failures over parse + lint (no exec).
 */
struct torture_arg {
    char *text, *env;
};

static int parse_lint_once(void *arg)
{
    struct torture_arg *t = arg;
    struct sw_unit *u = NULL;
    struct sw_unit_report r = {0};
    struct sw_unit_lint_opts o = {0};
    int rc = sw_unit_parse(t->text, strlen(t->text), "t.service", t->env, &u, NULL);
    if (!rc)
        rc = sw_unit_lint(u, &o, &r, NULL);
    sw_unit_report_free(&r);
    sw_unit_free(u);
    return rc;
}

static void test_alloc_failures(void **state)
{
    (void)state;
    struct torture_arg t;
    size_t n;
    assert_int_equal(
        sw_read_file(fixture("mistake-restart-on-failure.service"), 1 << 20, &t.text, &n, NULL), 0);
    assert_int_equal(sw_read_file(fixture("frank-primary.env"), 1 << 20, &t.env, &n, NULL), 0);
    assert_true(swt_torture("unit parse + lint", parse_lint_once, &t, SW_ENOMEM) >= 2);
    sw_free(t.text);
    sw_free(t.env);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_units),
        cmocka_unit_test(test_mistakes),
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_line_ends_and_parts),
        cmocka_unit_test(test_timespan),
        cmocka_unit_test(test_stop_timeout),
        cmocka_unit_test(test_start_limit),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_image_and_secrets),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests_name("unit_lint", tests, NULL, NULL);
}
