/*
 * Files nothing can inject into (issue 27), against the real binary: the operator's unit as he
 * writes it (first line `[Unit]`, which the sniffer took for a JSON array), with a byte order
 * mark, with CR LF ends, with drop-ins beside it or given one; a path with `..` climbing out of a
 * container's mount (lint, render, fleet check); a CR in alias, args, listen.address and
 * runtime.args (a command of its own in the rendered unit); a fleet file whose name holds an LF
 * (a NAME=value of its own in the env file); `render --out` a directory that does not exist (said
 * only "No such file or directory"); <script> and <img onerror> from the fleet and the ledger in
 * the Markdown report; a unit whose ExecStop names a stop grace past int64 milliseconds. Each case
 * failed before its fix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BOUND_S 60 /* a run that blocks is killed after this long (status 137) */

static char *dir;

static int setup(void **state)
{
    return swt_tmpdir_setup(state, &dir);
}

/* `slipway lint --no-verify path`; the output must not carry a sanitizer's report. */
static void lint(const char *path, struct swt_run *r)
{
    const char *argv[] = {swt_bin(), "lint", "--no-verify", path, NULL};
    swt_run_bounded(argv, BOUND_S, r);
    if (strstr(r->err, "runtime error") || strstr(r->err, "Sanitizer"))
        fail_msg("lint %s: %s", path, r->err);
}

/* Every needle is in the text exactly `want` times. */
static void has_n(const char *what, const char *text, const char *needle, int want)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    if (n != want)
        fail_msg("%s says '%s' %d times, not %d:\n%s", what, needle, n, want, text);
}

/* The operator's unit as he writes it: no comment, podman run with `ExecStop=podman stop -t 120`
 * and no TimeoutStopSec, StartLimitIntervalSec= in [Service], Restart=on-failure, the host path
 * given where the container sees /models, the image by tag, a token on the command line. */
#define OPERATOR_UNIT                                                                              \
    "[Unit]\n"                                                                                     \
    "Description=frank-primary (vLLM in podman)\n"                                                 \
    "After=network-online.target\n"                                                                \
    "\n"                                                                                           \
    "[Service]\n"                                                                                  \
    "StartLimitIntervalSec=0\n"                                                                    \
    "ExecStartPre=-/usr/bin/podman rm -f frank-primary\n"                                          \
    "ExecStart=/usr/bin/podman run --rm --name frank-primary -v /home/dank/models:/models:ro \\\n" \
    "    docker.io/vllm/vllm-openai:v0.11.0 --model /home/dank/models/Qwen3.5-27B \\\n"            \
    "    --api-key sk-frank-0123456789abcdef --max-model-len 32768\n"                              \
    "ExecStop=/usr/bin/podman stop -t 120 frank-primary\n"                                         \
    "Restart=on-failure\n"                                                                         \
    "\n"                                                                                           \
    "[Install]\n"                                                                                  \
    "WantedBy=multi-user.target\n"

/* Its six findings, at the lines they have when the file starts `shift` lines later. */
static void operator_findings(const char *what, const char *out, int shift)
{
    static const struct {
        int line;
        const char *law, *needle;
    } want[] = {
        {6, "start-limit", "StartLimitIntervalSec=0 is in [Service]"},
        {8, "path",
         "the model path --model /home/dank/models/Qwen3.5-27B that vLLM receives inside the "
         "container "
         "is the HOST path"},
        {8, "image-digest", "the image docker.io/vllm/vllm-openai:v0.11.0"},
        {8, "secret", "ExecStart"},
        {11, "stop-timeout", "TimeoutStopSec=90s (systemd's default"},
        {12, "restart", "Restart=on-failure"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char needle[512];
        snprintf(needle, sizeof(needle), ":%d: %s: %s", want[i].line + shift, want[i].law,
                 want[i].needle);
        has_n(what, out, needle, 1);
    }
    swt_has_all(what, out, "6 findings", "passes --api-key with a literal value", NULL);
    assert_null(strstr(out, "sk-frank-0123456789abcdef"));
}

static void write_bytes(const char *path, const char *prefix, const char *text, bool crlf)
{
    size_t n = strlen(prefix) + 2 * strlen(text) + 1, o = 0;
    char *b = malloc(n);
    assert_non_null(b);
    o = (size_t)snprintf(b, n, "%s", prefix);
    for (const char *p = text; *p; p++) {
        if (*p == '\n' && crlf)
            b[o++] = '\r';
        b[o++] = *p;
    }
    swt_write(path, b, o);
    free(b);
}

/* Defect 1: every unit whose first line is [Unit] was refused as "a JSON array (an API error
 * body?)"; a byte order mark made it "binary". Now each reads as systemd reads it and gets the
 * same six findings, exit 1. */
static void test_lint_operator_unit(void **state)
{
    (void)state;
    static const struct {
        const char *name, *prefix;
        bool crlf;
        int shift;
    } forms[] = {
        {"as-written.service", "", false, 0},
        {"commented.service", "# frank-primary, as the operator runs it\n", false, 1},
        {"bom.service", "\xef\xbb\xbf", false, 0},
        {"crlf.service", "", true, 0},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        const char *unit = swt_join(dir, forms[i].name);
        char path[4200];
        snprintf(path, sizeof(path), "%s", unit);
        write_bytes(path, forms[i].prefix, OPERATOR_UNIT, forms[i].crlf);
        struct swt_run r;
        lint(path, &r);
        if (r.status != 1)
            fail_msg("lint %s exited %d: %s%s", forms[i].name, r.status, r.out, r.err);
        if (!forms[i].crlf) {
            operator_findings(forms[i].name, r.out, forms[i].shift);
        } else {
            /* the same six, and the CR LF ends as a warning of their own */
            char *six = strdup(r.out);
            char *seven = strstr(six, "7 findings");
            assert_non_null(seven);
            memcpy(seven, "6", 1);
            operator_findings(forms[i].name, six, 0);
            free(six);
            swt_has_all(forms[i].name, r.out,
                        "crlf.service:1: syntax: warning: 15 lines end in CR LF, the first line 1",
                        NULL);
        }
        swt_run_free(&r);
    }
    /* JSON text is still refused as one */
    const char *json = swt_join(dir, "error-body.service");
    char jp[4200];
    snprintf(jp, sizeof(jp), "%s", json);
    swt_write_str(jp, "[{\"error\": \"rate limited\"}]\n");
    struct swt_run r;
    lint(jp, &r);
    assert_int_equal(r.status, 2);
    swt_has_all("lint of a JSON body", r.err, "not a unit file: a JSON array", NULL);
    swt_run_free(&r);
}

/* Defect 1, drop-ins: systemd applies foo.service.d/NAME.conf after the unit, in lexical order
 * (a later assignment wins, an empty one resets a list). The lint read none of them: two that
 * set TimeoutStopSec and Restart were not seen, and a drop-in given to it was refused. */
static void test_lint_dropins(void **state)
{
    (void)state;
    char unit[4200], d[4300], a[4400], b[4400], c[4400];
    snprintf(unit, sizeof(unit), "%s/frank-primary.service", dir);
    snprintf(d, sizeof(d), "%s.d", unit);
    snprintf(a, sizeof(a), "%s/10-stop.conf", d);
    snprintf(b, sizeof(b), "%s/20-stop.conf", d);
    snprintf(c, sizeof(c), "%s/30-restart.conf", d);
    write_bytes(unit, "", OPERATOR_UNIT, false);
    assert_int_equal(mkdir(d, 0755), 0);
    /* lexical order: 20 overrides 10 (the other way round the timeout would stay too short) */
    swt_write_str(a, "[Service]\nTimeoutStopSec=100\n");
    swt_write_str(b, "[Service]\nTimeoutStopSec=180\n");
    swt_write_str(c, "[Service]\nRestart=always\nStartLimitBurst=5\n");
    swt_write_str(swt_join(d, "notes.txt"), "not a drop-in: no .conf\n");
    struct swt_run r;
    lint(unit, &r);
    assert_int_equal(r.status, 1);
    char read[16000];
    snprintf(read, sizeof(read), "%s: read with its drop-ins, in this order: %s, %s, %s\n", unit, a,
             b, c);
    swt_has_all("lint with drop-ins", r.out, read, ":6: start-limit: StartLimitIntervalSec=0",
                ":8: path:", ":8: image-digest:", ":8: secret:", "5 findings", NULL);
    char in_dropin[4500];
    snprintf(in_dropin, sizeof(in_dropin),
             "%s:3: start-limit: warning: StartLimitBurst=5 is in [Service]", c);
    swt_has_all("lint with drop-ins", r.out, in_dropin, NULL);
    assert_null(strstr(r.out, "stop-timeout"));
    assert_null(strstr(r.out, "restart:"));
    assert_null(strstr(r.out, "notes.txt"));
    swt_run_free(&r);

    /* a drop-in given: its unit and all of the unit's drop-ins, the same findings */
    lint(a, &r);
    assert_int_equal(r.status, 1);
    swt_has_all("lint of a drop-in", r.out, read, in_dropin, "5 findings", NULL);
    swt_run_free(&r);

    /* a drop-in whose unit is not beside it: linted alone, and said so */
    char lone_d[4200], lone[4300];
    snprintf(lone_d, sizeof(lone_d), "%s/elsewhere.service.d", dir);
    snprintf(lone, sizeof(lone), "%s/override.conf", lone_d);
    assert_int_equal(mkdir(lone_d, 0755), 0);
    swt_write_str(lone, "[Service]\nStartLimitIntervalSec=30\n");
    const char *argv[] = {swt_bin(), "lint", lone, NULL};
    swt_run_bounded(argv, BOUND_S, &r);
    assert_int_equal(r.status, 1);
    swt_has_all("lint of a lone drop-in", r.out,
                "override.conf:2: start-limit: StartLimitIntervalSec=30",
                "is a drop-in, and its unit", "elsewhere.service is not beside its directory",
                "linted alone", NULL);
    swt_run_free(&r);
}

#define DIGEST "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A one-host fleet; endpoints appended. */
#define FLEET_HEAD                                                                                 \
    "version: 1\n"                                                                                 \
    "hosts:\n"                                                                                     \
    "  h:\n"                                                                                       \
    "    transport: local\n"                                                                       \
    "    devices:\n"                                                                               \
    "      g0: {kind: test, vendor: nvidia, index: 1, memory_total: 24GiB}\n"                      \
    "endpoints:\n"

/* A llama.cpp endpoint in a container that mounts /srv/models at /models, its projector at
 * mmproj (a host path the renderer translates). */
static void container_fleet(const char *path, const char *mmproj)
{
    char y[4096];
    snprintf(y, sizeof(y),
             FLEET_HEAD "  c:\n"
                        "    host: h\n"
                        "    engine: llama.cpp\n"
                        "    binary: /app/llama-server\n"
                        "    image: ghcr.io/x/llama" DIGEST "\n"
                        "    payload:\n"
                        "      path: /srv/models/m\n"
                        "      gguf: m.gguf\n"
                        "      mmproj: %s\n"
                        "      mounts: [\"/srv/models:/models:ro\"]\n"
                        "    shape: {ctx_size: 4096, seqs: 1}\n",
             mmproj);
    swt_write_str(path, y);
}

/* Defect 4: a path with `..` passed the inside-a-mount checks, each a text prefix compare:
 * `/models/../etc` lay "under" /models in the lint, the render and the fleet's own check. Now
 * every one compares lexical forms; `/models/./a//b` is still inside (and handed on as
 * /models/a/b). */
static void test_mount_dotdot(void **state)
{
    (void)state;
    /* the lint: the engine's --model against the container's mounts */
    static const char *const models[] = {"/models/../etc/x", "/models/./a//b"};
    for (size_t i = 0; i < 2; i++) {
        char unit[4200], text[2048];
        snprintf(unit, sizeof(unit), "%s/dotdot-%zu.service", dir, i);
        snprintf(text, sizeof(text),
                 "# a path with .. inside a mount\n"
                 "[Service]\n"
                 "ExecStart=/usr/bin/podman run --rm --name m -v /srv/models:/models:ro "
                 "docker.io/vllm/vllm-openai" DIGEST " --model %s\n"
                 "Restart=always\n",
                 models[i]);
        swt_write_str(unit, text);
        struct swt_run r;
        lint(unit, &r);
        if (i == 0) {
            assert_int_equal(r.status, 1);
            swt_has_all("lint of /models/../etc/x", r.out,
                        ":3: path: the model path --model /models/../etc/x that vLLM receives lies "
                        "under none of the container's 1 mount(s)",
                        "1 finding", NULL);
        } else if (r.status != 0) {
            fail_msg("lint of /models/./a//b exited %d: %s", r.status, r.out);
        }
        swt_run_free(&r);
    }

    /* the render: llama.cpp's host paths through the mounts */
    char fleet[4200];
    snprintf(fleet, sizeof(fleet), "%s/dotdot.yaml", dir);
    container_fleet(fleet, "/srv/models/../elsewhere/proj.gguf");
    const char *out_bad[] = {swt_bin(), "render", "c", "--fleet", fleet, NULL};
    struct swt_run r;
    swt_run_bounded(out_bad, BOUND_S, &r);
    if (r.status == 0)
        fail_msg("rendered a projector outside the mount:\n%s", r.out);
    swt_has_all("render of /srv/models/../elsewhere", r.err,
                "dotdot.yaml:17:17: endpoints.c: the engine receives "
                "/srv/models/../elsewhere/proj.gguf, which is outside every mount",
                NULL);
    swt_run_free(&r);
    container_fleet(fleet, "/srv/models/./m//proj.gguf");
    swt_run_bounded(out_bad, BOUND_S, &r);
    if (r.status != 0)
        fail_msg("render of /srv/models/./m//proj.gguf exited %d: %s", r.status, r.err);
    swt_has_all("render of /srv/models/./m//proj.gguf", r.out, " --mmproj /models/m/proj.gguf ",
                NULL);
    swt_run_free(&r);

    /* the fleet's check: vLLM's payload on a mount's host side */
    char y[4096];
    snprintf(y, sizeof(y),
             FLEET_HEAD "  v:\n"
                        "    host: h\n"
                        "    engine: vllm\n"
                        "    image: localhost/vllm" DIGEST "\n"
                        "    payload:\n"
                        "      path: /srv/models/../other/model\n"
                        "      mounts: [\"/srv/models:/models:ro\"]\n"
                        "    shape: {max_model_len: 4096, seqs: 1}\n");
    swt_write_str(fleet, y);
    const char *check[] = {swt_bin(), "fleet", "check", fleet, NULL};
    swt_run_bounded(check, BOUND_S, &r);
    assert_int_not_equal(r.status, 0);
    swt_has_all("fleet check of /srv/models/../other", r.err,
                "payload.path /srv/models/../other/model is on no mount's host side", NULL);
    swt_run_free(&r);
}

/* Defect 2: a CR in alias, args, listen.address or runtime.args ended the line for systemd:
 * `alias: "m\rExecStartPre=/bin/true\r#"` rendered a real ExecStartPre= that `render --lint`
 * called clean. Each is refused at load, at its key; and a unit with such a line is a finding. */
static void test_control_chars(void **state)
{
    (void)state;
    static const struct {
        const char *lines, *where;
    } cases[] = {
        {"    alias: \"m\\rExecStartPre=/bin/true\\r#\"\n", "11:13: endpoints.m.alias"},
        {"    args: [\"--flag\", \"v\\rExecStartPre=/bin/true\"]\n", "11:23: endpoints.m.args[1]"},
        {"    listen: {address: \"127.0.0.1\\nExecStartPre=/bin/true\", port: 8080}\n",
         "11:24: endpoints.m.listen.address"},
        {"    runtime: {kind: podman, args: [\"--label=a\\rExecStartPre=/bin/true\"]}\n",
         "11:37: endpoints.m.runtime.args[0]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char fleet[4200], y[4096];
        snprintf(fleet, sizeof(fleet), "%s/ctl-%zu.yaml", dir, i);
        snprintf(y, sizeof(y),
                 FLEET_HEAD
                 "  m:\n"
                 "    host: h\n"
                 "    engine: llama.cpp\n"
                 "%s"
                 "    binary: /app/llama-server\n"
                 "    image: ghcr.io/x/llama" DIGEST "\n"
                 "    payload: {path: /srv/models/m.gguf, mounts: [\"/srv/models:/models\"]}\n"
                 "    shape: {ctx_size: 4096, seqs: 1}\n",
                 cases[i].lines);
        swt_write_str(fleet, y);
        const char *argv[] = {swt_bin(), "render", "m", "--fleet", fleet, "--lint", NULL};
        struct swt_run r;
        swt_run_bounded(argv, BOUND_S, &r);
        if (r.status != 2 || strstr(r.out, "\nExecStartPre=/bin/true"))
            fail_msg("render of %s exited %d:\n%s%s", cases[i].where, r.status, r.out, r.err);
        char want[512];
        snprintf(want, sizeof(want), "ctl-%zu.yaml:%s holds a control character", i,
                 cases[i].where);
        swt_has_all("render", r.err, want, NULL);
        swt_run_free(&r);
    }
    /* the unit the render wrote before: the lint says what systemd reads at the CR */
    const char *unit = swt_join(dir, "cr-alias.service");
    char up[4200];
    snprintf(up, sizeof(up), "%s", unit);
    swt_write_str(up, "# as rendered with alias \"m\\rExecStartPre=/bin/true\\r#\"\n"
                      "[Service]\n"
                      "ExecStart=/usr/bin/llama-server -m /srv/m.gguf --alias m\r"
                      "ExecStartPre=/bin/true\r# --port 8080\n"
                      "Restart=on-failure\n");
    struct swt_run r;
    lint(up, &r);
    assert_int_equal(r.status, 1);
    swt_has_all(
        "lint of a CR inside a line", r.out,
        "cr-alias.service:3: syntax: a carriage return (CR) inside line 3 ends the line for "
        "systemd, so 'ExecStartPre=/bin/true' after it is read as a line of its own",
        NULL);
    swt_run_free(&r);
}

/* No line of the file at path starts with prefix. */
static void no_line_starts(const char *path, const char *prefix)
{
    char *text = NULL;
    size_t len = 0;
    struct sw_err e;
    if (sw_read_file(path, 1 << 20, &text, &len, &e))
        fail_msg("%s", e.msg);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, prefix, strlen(prefix)))
            fail_msg("%s has a line '%s...':\n%s", path, prefix, text);
    sw_free(text);
}

/* Defect 3: an LF in the fleet file's own path was written verbatim into the `#` header of the
 * rendered unit, the env file (where it became a real NAME=value for EnvironmentFile=) and the
 * llama-swap export. The path is now escaped in each. */
static void test_fleet_path_newline(void **state)
{
    (void)state;
    char fleet[4200], out[4200];
    snprintf(fleet, sizeof(fleet), "%s/fleet\nLD_PRELOAD=evil.so\n.yaml", dir);
    swt_write_str(fleet, FLEET_HEAD "  m:\n"
                                    "    host: h\n"
                                    "    engine: llama.cpp\n"
                                    "    binary: /usr/bin/llama-server\n"
                                    "    payload: {path: /srv/models/m.gguf}\n"
                                    "    shape: {ctx_size: 4096, seqs: 1}\n");
    snprintf(out, sizeof(out), "%s/units", dir);
    assert_int_equal(mkdir(out, 0700), 0);
    const char *render[] = {swt_bin(), "render", "m", "--fleet", fleet, "--out", out, NULL};
    struct swt_run r;
    swt_run_bounded(render, BOUND_S, &r);
    if (r.status != 0)
        fail_msg("render exited %d: %s", r.status, r.err);
    swt_run_free(&r);
    const char *env = swt_join(out, "slipway-m.env"), *unit = swt_join(out, "slipway-m.service");
    no_line_starts(env, "LD_PRELOAD");
    no_line_starts(unit, "LD_PRELOAD");
    assert_true(swt_file_has(env, "fleet\\nLD_PRELOAD=evil.so\\n.yaml). Mode 0600"));
    assert_true(swt_file_has(unit, "fleet\\nLD_PRELOAD=evil.so\\n.yaml. Change the fleet"));

    char swap[4300];
    snprintf(swap, sizeof(swap), "%s/llama-swap.yaml", out);
    const char *export[] = {swt_bin(), "export", "llama-swap", "--fleet",
                            fleet,     "--out",  swap,         NULL};
    swt_run_bounded(export, BOUND_S, &r);
    if (r.status != 0)
        fail_msg("export exited %d: %s", r.status, r.err);
    swt_run_free(&r);
    no_line_starts(swap, "LD_PRELOAD");
    assert_true(swt_file_has(swap, "fleet\\nLD_PRELOAD=evil.so\\n.yaml; do not edit"));
}

/* Defect 6: `render --out DIR` with no DIR failed with a bare "No such file or directory". It
 * still refuses (a mistyped path writes nothing anywhere), and now says which path, why, and
 * whether the parent exists; a file in the way names itself. */
static void test_render_out_dir(void **state)
{
    (void)state;
    char fleet[4200], fresh[4200], deep[4200], file[4200];
    snprintf(fleet, sizeof(fleet), "%s/out.yaml", dir);
    container_fleet(fleet, "proj.gguf");
    snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
    snprintf(deep, sizeof(deep), "%s/no/such/dir", dir);
    snprintf(file, sizeof(file), "%s/out.yaml", dir);
    struct swt_run r;
    char want[8500];
    const char *mk[] = {swt_bin(), "render", "c", "--fleet", fleet, "--out", fresh, NULL};
    swt_run_bounded(mk, BOUND_S, &r);
    assert_int_not_equal(r.status, 0);
    snprintf(want, sizeof(want),
             "%s: no such directory (its parent %s exists): the output directory must exist", fresh,
             dir);
    swt_has_all("render --out a missing directory", r.err, want, NULL);
    swt_run_free(&r);

    const char *no[] = {swt_bin(), "render", "c", "--fleet", fleet, "--out", deep, NULL};
    swt_run_bounded(no, BOUND_S, &r);
    assert_int_not_equal(r.status, 0);
    snprintf(want, sizeof(want),
             "%s: no such directory, and its parent %s/no/such is not one either", deep, dir);
    swt_has_all("render --out a deep missing directory", r.err, want, NULL);
    swt_run_free(&r);

    const char *in_file[] = {swt_bin(), "render", "c", "--fleet", fleet, "--out", file, NULL};
    swt_run_bounded(in_file, BOUND_S, &r);
    assert_int_not_equal(r.status, 0);
    snprintf(want, sizeof(want), "%s: exists and is not a directory", file);
    swt_has_all("render --out a file", r.err, want, NULL);
    swt_run_free(&r);

    /* nothing was created on the way */
    struct stat st;
    assert_int_not_equal(stat(fresh, &st), 0);
    assert_int_not_equal(stat(swt_join(dir, "no"), &st), 0);
}

/* Defect 7: `report --md` copied <script> and <img onerror=...> from the fleet and the ledger into
 * the Markdown (the HTML report escaped them), and a line break in a boot's text broke its table
 * row. Now HTML and Markdown's own characters are escaped, a cell stays one line. */
static void test_report_md_escaped(void **state)
{
    (void)state;
    char fleet[4200], led[4200], md[4200];
    snprintf(fleet, sizeof(fleet), "%s/report.yaml", dir);
    snprintf(led, sizeof(led), "%s/report.sqlite", dir);
    snprintf(md, sizeof(md), "%s/FLEET.md", dir);
    swt_write_str(fleet,
                  FLEET_HEAD "  m:\n"
                             "    host: h\n"
                             "    engine: llama.cpp\n"
                             "    binary: /usr/bin/llama-server\n"
                             "    payload: {path: /srv/models/m.gguf}\n"
                             "    shape: {ctx_size: 4096, seqs: 1}\n"
                             "    boots:\n"
                             "      - shape: {ctx_size: 8192, seqs: 1}\n"
                             "        outcome: failed\n"
                             "        failure: oom\n"
                             "        text: \"<script>alert(1)</script>\\n| *new row* |\"\n");
    const char *rule[] = {swt_bin(),
                          "ledger",
                          "--ledger",
                          led,
                          "add-rule",
                          "--expr",
                          "ctx_size > 65536",
                          "--reason",
                          "<img src=x onerror=alert(1)>",
                          "--endpoint",
                          "m",
                          NULL};
    struct swt_run r;
    swt_run_bounded(rule, BOUND_S, &r);
    if (r.status != 0)
        fail_msg("add-rule: %s", r.err);
    swt_run_free(&r);
    const char *report[] = {swt_bin(), "report", "--fleet", fleet, "--ledger",
                            led,       "--md",   md,        NULL};
    swt_run_bounded(report, BOUND_S, &r);
    if (r.status != 0)
        fail_msg("report exited %d: %s", r.status, r.err);
    swt_run_free(&r);
    char *text = NULL;
    size_t len = 0;
    struct sw_err e;
    if (sw_read_file(md, 1 << 20, &text, &len, &e))
        fail_msg("%s", e.msg);
    if (strstr(text, "<script") || strstr(text, "<img"))
        fail_msg("a tag reached the Markdown:\n%s", text);
    swt_has_all(
        "the Markdown report", text,
        "| failed (oom): &lt;script&gt;alert(1)&lt;/script&gt; \\| \\*new row\\* \\| | fleet "
        "boots |",
        "| ctx_size &gt; 65536 | &lt;img src=x onerror=alert(1)&gt; | ledger rule |", NULL);
    sw_free(text);
}

/* Defect 5: `podman stop -t 3262585074549260287` overflowed stop_grace_s * 1000 (UBSan: signed
 * integer overflow); the wrapped product was negative, so the finding was lost. */
static void test_lint_huge_stop_grace(void **state)
{
    (void)state;
    const char *unit = swt_join(dir, "huge-grace.service");
    swt_write_str(unit, "# found by fuzz_unit_scan\n"
                        "[Unit]\n"
                        "Description=a grace past int64 milliseconds\n"
                        "[Service]\n"
                        "ExecStart=/usr/bin/podman run --rm --name g -v /srv/m:/models "
                        "docker.io/vllm/vllm-openai@sha256:"
                        "4f1ca1d3c1b0a8fd0f2b8d6b1d0e5c9a7b3e2f1a0c9d8e7f6a5b4c3d2e1f0a9b "
                        "--model /models/x\n"
                        "ExecStop=/usr/bin/podman stop -t 3262585074549260287 g\n"
                        "Restart=always\n"
                        "TimeoutStopSec=3y\n");
    struct swt_run r;
    lint(unit, &r);
    assert_int_equal(r.status, 1);
    swt_has_all("lint", r.out, "huge-grace.service:8: stop-timeout: TimeoutStopSec=3y (line 8)",
                "`podman stop -t 3262585074549260287` (line 6)", "1 finding", NULL);
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lint_operator_unit), cmocka_unit_test(test_lint_dropins),
        cmocka_unit_test(test_mount_dotdot),       cmocka_unit_test(test_control_chars),
        cmocka_unit_test(test_fleet_path_newline), cmocka_unit_test(test_render_out_dir),
        cmocka_unit_test(test_report_md_escaped),  cmocka_unit_test(test_lint_huge_stop_grace),
    };
    return cmocka_run_group_tests(tests, setup, swt_tmpdir_teardown);
}
