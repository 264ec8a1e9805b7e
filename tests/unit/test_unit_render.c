/*
 * unit/render: the operator's endpoints as systemd services. frank-primary (vLLM in podman on two
 * AMD cards) and frank-small (llama.cpp native on an NVIDIA card) from examples/operator.yaml
 * against goldens under tests/data/units/ (SW_GOLDEN_UPDATE=1 rewrites them; read the diff line
 * by line before committing), the relationships the operator learnt checked on the text rather
 * than on literals, determinism, a path outside the container's mounts, secrets only in the env
 * file, --out that leaves nothing behind, the fleet's runtime:/service: validation, and
 * `systemd-analyze verify` printing nothing for rendered units.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/unit.h>

#include "swtest.h"
#include "unit/render_internal.h"

#include <slipway/unit_lint.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Renders name the fleet file as given: load from the source tree by a relative path so the
 * goldens do not hold this machine's checkout path. */
static struct sw_fleet *load_rel(const char *rel)
{
    if (chdir(swt_src("")))
        fail_msg("chdir %s", swt_src(""));
    struct sw_fleet_opts fo = {0};
    fo.getenv = sw_fleet_no_environ;
    struct sw_fleet *f = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_fleet_load(rel, &fo, &f, &e))
        fail_msg("%s: %s", rel, e.msg);
    return f;
}

static struct sw_fleet *load_text(const char *text, struct sw_err *e)
{
    struct sw_fleet_opts fo = {0};
    fo.getenv = sw_fleet_no_environ;
    struct sw_fleet *f = NULL;
    sw_err_clear(e);
    sw_fleet_load_mem("test.yaml", text, strlen(text), &fo, &f, e);
    return f;
}

static void render(const struct sw_fleet *f, const char *name, struct sw_unit_render *r)
{
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    assert_non_null(ep);
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_unit_render_endpoint(f, ep, r, &e))
        fail_msg("render %s: %s", name, e.msg);
}

/* The golden file holds exactly text (or is rewritten under SW_GOLDEN_UPDATE=1). */
static void golden(const char *rel, const char *text)
{
    const char *path = swt_src(rel);
    const char *upd = getenv("SW_GOLDEN_UPDATE");
    if (upd && !strcmp(upd, "1")) {
        swt_write_str(path, text);
        return;
    }
    if (!swt_file_is(path, text, strlen(text))) {
        char *have = NULL;
        size_t n = 0;
        struct sw_err e;
        sw_read_file(path, 1 << 20, &have, &n, &e);
        fail_msg("%s differs from the render (SW_GOLDEN_UPDATE=1 rewrites it):\n--- render\n%s\n"
                 "--- golden\n%s",
                 rel, text, have ? have : "(unreadable)");
    }
}

/* The line "Key=..." in the section, its value; NULL when absent. Count in *n (may be NULL). */
static const char *key_in(const char *text, const char *section, const char *key, int *n)
{
    static char val[4096];
    const char *found = NULL;
    int count = 0;
    bool in = false;
    size_t kl = strlen(key);
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        if (len && l[0] == '[')
            in = len == strlen(section) && !strncmp(l, section, len);
        else if (in && len > kl && !strncmp(l, key, kl) && l[kl] == '=') {
            count++;
            snprintf(val, sizeof(val), "%.*s", (int)(len - kl - 1), l + kl + 1);
            found = val;
        }
        l = nl ? nl + 1 : NULL;
    }
    if (n)
        *n = count;
    return found;
}

static long num(const char *s)
{
    assert_non_null(s);
    return strtol(s, NULL, 10);
}

/* The number after `stop -t ` in ExecStop. */
static long stop_grace(const char *text)
{
    const char *s = key_in(text, "[Service]", "ExecStop", NULL);
    assert_non_null(s);
    const char *t = strstr(s, " stop -t ");
    assert_non_null(t);
    return strtol(t + 9, NULL, 10);
}

static void test_frank_primary(void **state)
{
    (void)state;
    struct sw_fleet *f = load_rel("examples/operator.yaml");
    struct sw_unit_render r;
    render(f, "frank-primary", &r);
    golden("tests/data/units/slipway-frank-primary.service", r.service.text);
    golden("tests/data/units/slipway-frank-primary.env", r.env.text);
    const char *t = r.service.text;
    int n = 0;
    /* vLLM's API server exits 0 when its engine dies; podman wait exits 0 too */
    assert_string_equal(key_in(t, "[Service]", "Restart", NULL), "always");
    assert_non_null(strstr(t, "# Restart=always: vLLM's API server exits 0"));
    /* start limits exactly once each, in [Unit], never in [Service] */
    assert_non_null(key_in(t, "[Unit]", "StartLimitIntervalSec", &n));
    assert_int_equal(n, 1);
    assert_non_null(key_in(t, "[Unit]", "StartLimitBurst", &n));
    assert_int_equal(n, 1);
    assert_null(key_in(t, "[Service]", "StartLimitIntervalSec", NULL));
    assert_null(key_in(t, "[Service]", "StartLimitBurst", NULL));
    /* TimeoutStopSec above the container's grace plus a margin, and above the drain */
    long grace = stop_grace(t);
    long tss = num(key_in(t, "[Service]", "TimeoutStopSec", NULL));
    assert_int_equal(grace, 120); /* the operator's `podman stop -t 120` */
    assert_true(tss > grace + 5);
    assert_true((uint64_t)tss * 1000 > r.timing.drain_ms);
    assert_int_equal(num(key_in(t, "[Service]", "OOMScoreAdjust", NULL)), -500);
    /* exec podman wait as the main process, rm -f before, run -d --name */
    assert_string_equal(key_in(t, "[Service]", "ExecStart", NULL),
                        "/usr/bin/podman wait slipway-frank-primary");
    swt_has_all("t", t, "ExecStartPre=-/usr/bin/podman rm -f slipway-frank-primary\n",
                "ExecStartPre=/usr/bin/podman run -d --name slipway-frank-primary ", NULL);
    /* the container's argv: AMD devices, shm, the mount, the model as /models/... */
    const char *want[] = {"--device=/dev/kfd",
                          "--device=/dev/dri",
                          "--group-add=video",
                          "--shm-size=16g",
                          "--volume=/home/dank/models:/models:ro",
                          "/models/Qwen3.8-Flash-Next-Uncensored-FP8",
                          "localhost/tcclaviger-vllm"};
    for (size_t w = 0; w < SW_ARRAY_LEN(want); w++) {
        bool hit = false;
        for (size_t i = 0; i < r.container_argc; i++)
            hit = hit || !strcmp(r.container_argv[i], want[w]);
        if (!hit)
            fail_msg("container argv lacks %s", want[w]);
    }
    /* no engine argument is a host path */
    for (size_t i = 0; i < r.engine_argc; i++)
        assert_null(strstr(r.engine_argv[i], "/home/dank"));
    assert_non_null(strstr(r.env.text, "\nHIP_VISIBLE_DEVICES=0,1\n"));
    assert_int_equal(r.env.mode, 0600);
    /* the image is a tag: a warning, not a silence */
    assert_int_equal(r.n_warnings, 1);
    assert_non_null(strstr(r.warnings[0], "not pinned by digest"));
    assert_false(r.image_pinned);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
}

static void test_frank_small(void **state)
{
    (void)state;
    struct sw_fleet *f = load_rel("examples/operator.yaml");
    struct sw_unit_render r;
    render(f, "frank-small", &r);
    golden("tests/data/units/slipway-frank-small.service", r.service.text);
    golden("tests/data/units/slipway-frank-small.env", r.env.text);
    const char *t = r.service.text;
    assert_int_equal(r.runtime, SW_FLEET_RUNTIME_NATIVE);
    assert_null(r.container_argv);
    assert_string_equal(key_in(t, "[Service]", "Restart", NULL), "on-failure");
    assert_null(key_in(t, "[Service]", "ExecStartPre", NULL));
    const char *es = key_in(t, "[Service]", "ExecStart", NULL);
    assert_non_null(es);
    assert_non_null(strstr(es, " -m /home/dank/models/MiMo-V2.6-Distill-Qwen-9B-GGUF/"
                               "MiMo-V2.6-Distill-Qwen-9B-Q5_K_M.gguf "));
    assert_non_null(strstr(es, " -np 3 "));
    assert_non_null(strstr(r.env.text, "\nCUDA_VISIBLE_DEVICES=0\n"));
    assert_true(num(key_in(t, "[Service]", "TimeoutStopSec", NULL)) * 1000 >
                (long)r.timing.drain_ms);
    assert_non_null(key_in(t, "[Unit]", "StartLimitIntervalSec", NULL));
    assert_null(key_in(t, "[Service]", "StartLimitIntervalSec", NULL));
    sw_unit_render_free(&r);
    sw_fleet_free(f);
}

static void test_local_native(void **state)
{
    (void)state;
    struct sw_fleet *f = load_rel("examples/local.yaml");
    struct sw_unit_render r;
    render(f, "local", &r);
    const char *t = r.service.text;
    assert_string_equal(r.name, "slipway-local");
    assert_int_equal(r.runtime, SW_FLEET_RUNTIME_NATIVE);
    const char *es = key_in(t, "[Service]", "ExecStart", NULL);
    assert_non_null(es);
    swt_has_all("es", es, "tiny-llama.gguf", " --port 18080 ", NULL);
    assert_null(strchr(es, '~'));
    /* a CPU endpoint: no device variable */
    assert_null(strstr(r.env.text, "VISIBLE_DEVICES"));
    sw_unit_render_free(&r);
    sw_fleet_free(f);
}

static void test_deterministic(void **state)
{
    (void)state;
    const char *names[] = {"frank-primary", "frank-small"};
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++) {
        struct sw_fleet *f1 = load_rel("examples/operator.yaml");
        struct sw_fleet *f2 = load_rel("examples/operator.yaml");
        struct sw_unit_render a, b;
        render(f1, names[i], &a);
        render(f2, names[i], &b);
        assert_int_equal(a.service.len, b.service.len);
        assert_memory_equal(a.service.text, b.service.text, a.service.len);
        assert_int_equal(a.env.len, b.env.len);
        assert_memory_equal(a.env.text, b.env.text, a.env.len);
        json_t *ja = sw_unit_render_json(&a), *jb = sw_unit_render_json(&b);
        char *sa = sw_json_dumps(ja, JSON_SORT_KEYS), *sb = sw_json_dumps(jb, JSON_SORT_KEYS);
        assert_string_equal(sa, sb);
        sw_free(sa);
        sw_free(sb);
        json_decref(ja);
        json_decref(jb);
        /* written twice: byte-identical files */
        char *d1 = swt_tmpdir(), *d2 = swt_tmpdir();
        struct sw_err e;
        assert_int_equal(sw_unit_render_write(&a, d1, &e), 0);
        assert_int_equal(sw_unit_render_write(&b, d2, &e), 0);
        char p1[4200];
        snprintf(p1, sizeof(p1), "%s", swt_join(d1, a.service.name));
        assert_true(swt_file_is(swt_join(d2, b.service.name), a.service.text, a.service.len));
        assert_true(swt_file_is(p1, b.service.text, b.service.len));
        swt_tmpdir_free(d1);
        swt_tmpdir_free(d2);
        sw_unit_render_free(&a);
        sw_unit_render_free(&b);
        sw_fleet_free(f1);
        sw_fleet_free(f2);
    }
}

static const char *const base_fleet =
    "version: 1\n"
    "hosts:\n"
    "  h:\n"
    "    transport: local\n"
    "    devices:\n"
    "      g0: {kind: test, vendor: nvidia, index: 1, memory_total: 24GiB}\n"
    "endpoints:\n";

static char *fleet_with(const char *endpoints)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    sw_buf_puts(&b, base_fleet);
    sw_buf_puts(&b, endpoints);
    return sw_buf_steal(&b);
}

/* A container endpoint whose payload lies outside its mounts: refused, the path named. */
static void test_outside_mounts(void **state)
{
    (void)state;
    struct sw_err e;
    /* llama.cpp hands host paths: the renderer translates them, and refuses one no mount covers */
    char *y = fleet_with("  c:\n"
                         "    host: h\n"
                         "    engine: llama.cpp\n"
                         "    binary: /app/llama-server\n"
                         "    image: ghcr.io/x/llama@sha256:"
                         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
                         "    payload:\n"
                         "      path: /srv/models/m\n"
                         "      gguf: m.gguf\n"
                         "      mmproj: /srv/elsewhere/proj.gguf\n"
                         "      mounts: [\"/srv/models:/models:ro\"]\n"
                         "    shape: {ctx_size: 4096, seqs: 1}\n");
    struct sw_fleet *f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    struct sw_unit_render r;
    sw_err_clear(&e);
    assert_int_not_equal(sw_unit_render_endpoint(f, sw_fleet_endpoint(f, "c"), &r, &e), 0);
    swt_has_all("e.msg", e.msg, "/srv/elsewhere/proj.gguf", "/srv/models -> /models", NULL);
    assert_null(r.service.text);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    sw_free(y);

    /* the same with the projector inside the mount: both paths in the container's view */
    y = fleet_with("  c:\n"
                   "    host: h\n"
                   "    engine: llama.cpp\n"
                   "    binary: /app/llama-server\n"
                   "    image: ghcr.io/x/llama@sha256:"
                   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
                   "    payload:\n"
                   "      path: /srv/models/m\n"
                   "      gguf: m.gguf\n"
                   "      mmproj: proj.gguf\n"
                   "      mounts: [\"/srv/models:/models:ro\"]\n"
                   "    shape: {ctx_size: 4096, seqs: 1}\n");
    f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    render(f, "c", &r);
    bool model = false, proj = false, cdi = false;
    for (size_t i = 0; i < r.container_argc; i++) {
        assert_null(strstr(r.container_argv[i], "/srv/models/m"));
        model = model || !strcmp(r.container_argv[i], "/models/m/m.gguf");
        proj = proj || !strcmp(r.container_argv[i], "/models/m/proj.gguf");
        cdi = cdi || !strcmp(r.container_argv[i], "--device=nvidia.com/gpu=1");
    }
    assert_true(model && proj && cdi);
    assert_int_equal(r.n_warnings, 0); /* pinned by digest */
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    sw_free(y);

    /* vLLM: the fleet's own check refuses a payload no mount covers, the path named */
    y = fleet_with("  v:\n"
                   "    host: h\n"
                   "    engine: vllm\n"
                   "    image: localhost/vllm\n"
                   "    payload:\n"
                   "      path: /srv/other/model\n"
                   "      mounts: [\"/srv/models:/models:ro\"]\n"
                   "    shape: {max_model_len: 4096, seqs: 1}\n");
    f = load_text(y, &e);
    assert_null(f);
    assert_non_null(strstr(e.msg, "/srv/other/model"));
    sw_free(y);
}

/* An api_key from the environment or a file: only in the env file, never on a command line nor
 * in what is printed. */
static void test_secrets(void **state)
{
    (void)state;
    const char *key = "swt-unit-key-4f1c9a7e";
    setenv("SWT_UNIT_API_KEY", key, 1);
    char *d = swt_tmpdir();
    char kf[4200];
    snprintf(kf, sizeof(kf), "%s/key.txt", d);
    swt_write_str(kf, "swt-unit-filekey-88a2\n");
    char eps[8192];
    snprintf(eps, sizeof(eps),
             "  n:\n"
             "    host: h\n"
             "    engine: llama.cpp\n"
             "    binary: /bin/true\n"
             "    api_key: {from_env: SWT_UNIT_API_KEY}\n"
             "    payload: {path: /srv/m.gguf}\n"
             "    shape: {ctx_size: 4096, seqs: 1}\n"
             "  c:\n"
             "    host: h\n"
             "    engine: vllm\n"
             "    image: localhost/vllm\n"
             "    api_key: {from_file: %s}\n"
             "    env: {HF_HUB_OFFLINE: \"1\"}\n"
             "    payload: {path: /srv/models/x, mounts: [\"/srv/models:/models:ro\"]}\n"
             "    shape: {max_model_len: 4096, seqs: 1}\n",
             kf);
    char *y = fleet_with(eps);
    struct sw_err e;
    struct sw_fleet *f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    const char *names[] = {"n", "c"};
    const char *secrets[] = {key, "swt-unit-filekey-88a2"};
    const char *vars[] = {"LLAMA_API_KEY", "VLLM_API_KEY"};
    for (size_t i = 0; i < 2; i++) {
        struct sw_unit_render r;
        render(f, names[i], &r);
        char line[256];
        snprintf(line, sizeof(line), "\n%s=%s\n", vars[i], secrets[i]);
        assert_non_null(strstr(r.env.text, line));
        snprintf(line, sizeof(line), "\n%s=***\n", vars[i]);
        assert_non_null(strstr(r.env.shown, line));
        assert_null(strstr(r.env.shown, secrets[i]));
        assert_null(strstr(r.service.text, secrets[i]));
        assert_null(strstr(r.service.shown, secrets[i]));
        for (size_t k = 0; k < r.engine_argc; k++)
            assert_null(strstr(r.engine_argv[k], secrets[i]));
        for (size_t k = 0; k < r.container_argc; k++)
            assert_null(strstr(r.container_argv[k], secrets[i]));
        /* a literal of the fleet is not a secret */
        if (i == 1)
            assert_non_null(strstr(r.env.shown, "\nHF_HUB_OFFLINE=1\n"));
        json_t *j = sw_unit_render_json(&r);
        char *s = sw_json_dumps(j, 0);
        assert_null(strstr(s, secrets[i]));
        sw_free(s);
        json_decref(j);
        /* the file written carries it, mode 0600 */
        char out[4200];
        snprintf(out, sizeof(out), "%s/out%zu", d, i);
        assert_int_equal(mkdir(out, 0700), 0);
        assert_int_equal(sw_unit_render_write(&r, out, &e), 0);
        char envp[4400];
        snprintf(envp, sizeof(envp), "%s/%s", out, r.env.name);
        assert_true(swt_file_has(envp, secrets[i]));
        struct stat st;
        assert_int_equal(stat(envp, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_false(swt_file_has(swt_join(out, r.service.name), secrets[i]));
        sw_unit_render_free(&r);
    }
    unsetenv("SWT_UNIT_API_KEY");
    sw_fleet_free(f);
    sw_free(y);
    swt_tmpdir_free(d);
}

static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

/* --out into a missing, a non-directory or an unwritable place: an error, nothing left. */
static void test_write_failures(void **state)
{
    (void)state;
    struct sw_fleet *f = load_rel("examples/operator.yaml");
    struct sw_unit_render r;
    render(f, "frank-small", &r);
    struct sw_err e;
    char *d = swt_tmpdir();
    char p[4200];
    snprintf(p, sizeof(p), "%s/missing", d);
    sw_err_clear(&e);
    assert_int_not_equal(sw_unit_render_write(&r, p, &e), 0);
    assert_non_null(strstr(e.msg, "missing"));
    assert_int_equal(entries(d), 0);
    /* a file where the directory should be */
    snprintf(p, sizeof(p), "%s/file", d);
    swt_write_str(p, "x");
    assert_int_not_equal(sw_unit_render_write(&r, p, &e), 0);
    assert_int_equal(entries(d), 1);
    /* the unit's name taken by a directory: refused before the env file is renamed into place */
    char sub[4200];
    snprintf(sub, sizeof(sub), "%s/blocked", d);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(mkdir(swt_join(sub, r.service.name), 0755), 0);
    assert_int_not_equal(sw_unit_render_write(&r, sub, &e), 0);
    assert_int_equal(entries(sub), 1);
    /* read-only: a directory nobody may write (root writes anywhere: then /proc, which no
     * one can create files in) */
    char ro[4200];
    snprintf(ro, sizeof(ro), "%s/ro", d);
    assert_int_equal(mkdir(ro, 0555), 0);
    const char *target = geteuid() == 0 ? "/proc" : ro;
    sw_err_clear(&e);
    assert_int_not_equal(sw_unit_render_write(&r, target, &e), 0);
    assert_non_null(strstr(e.msg, target));
    assert_int_equal(entries(ro), 0);
    assert_int_not_equal(access("/proc/slipway-frank-small.env", F_OK), 0);
    chmod(ro, 0755);
    swt_tmpdir_free(d);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
}

static void expect_fleet_error(const char *endpoint_yaml, const char *want, int line)
{
    char *y = fleet_with(endpoint_yaml);
    struct sw_err e;
    struct sw_fleet *f = load_text(y, &e);
    if (f)
        fail_msg("loaded, wanted an error naming '%s'", want);
    if (!strstr(e.msg, want))
        fail_msg("error '%s' does not say '%s'", e.msg, want);
    if (e.line != line)
        fail_msg("error '%s' at line %d, wanted %d", e.msg, e.line, line);
    sw_free(y);
}

/* runtime: and service: in the fleet file: defaults, and mistakes with their line:col. */
static void test_fleet_schema(void **state)
{
    (void)state;
    struct sw_err e;
    char *y = fleet_with("  a:\n"
                         "    host: h\n"
                         "    engine: vllm\n"
                         "    image: localhost/v\n"
                         "    payload: {path: /m/x, mounts: [\"/m:/m\"]}\n"
                         "  b:\n"
                         "    host: h\n"
                         "    engine: llama.cpp\n"
                         "    payload: {path: /m/x.gguf}\n"
                         "  c:\n"
                         "    host: h\n"
                         "    engine: vllm\n"
                         "    image: localhost/v\n"
                         "    runtime: {kind: docker, shm_size: 8GiB, stop_grace: 2min, devices: "
                         "[/dev/infiniband], args: [--ipc=host]}\n"
                         "    service: {name: llm, scope: system, restart_sec: 45s, stop_timeout: "
                         "200s, start_limit_burst: 3, start_limit_interval: 10min, "
                         "oom_score_adjust: -900, user: dank}\n"
                         "    payload: {path: /m/x, mounts: [\"/m:/m\"]}\n");
    struct sw_fleet *f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    const struct sw_fleet_endpoint *a = sw_fleet_endpoint(f, "a");
    const struct sw_fleet_endpoint *b = sw_fleet_endpoint(f, "b");
    const struct sw_fleet_endpoint *c = sw_fleet_endpoint(f, "c");
    assert_int_equal(a->runtime.kind, SW_FLEET_RUNTIME_PODMAN); /* image -> podman */
    assert_int_equal(b->runtime.kind, SW_FLEET_RUNTIME_NATIVE);
    assert_string_equal(a->service.name.v, "slipway-a");
    assert_int_equal(a->service.scope, SW_FLEET_SCOPE_SYSTEM);
    assert_int_equal(c->runtime.kind, SW_FLEET_RUNTIME_DOCKER);
    assert_int_equal(c->runtime.shm_size.v, 8ull << 30);
    assert_int_equal(c->runtime.stop_grace_ms.v, 120000);
    assert_int_equal(c->service.stop_timeout_ms.v, 200000);
    assert_int_equal(c->service.start_limit_interval_ms.v, 600000);
    assert_int_equal(c->service.oom_score_adjust.v, -900);
    assert_string_equal(c->service.name.v, "llm");
    /* fleet show --json shows them */
    json_t *j = sw_fleet_to_json(f);
    char *s = sw_json_dumps(j, JSON_SORT_KEYS);
    assert_non_null(strstr(s, "\"runtime\": {\"args\": [\"--ipc=host\"], \"devices\": "
                              "[\"/dev/infiniband\"], \"kind\": \"docker\", \"shm_size\": "
                              "8589934592, \"stop_grace\": \"120s\"}"));
    assert_non_null(strstr(s, "\"stop_timeout\": \"200s\""));
    sw_free(s);
    json_decref(j);
    /* docker: --gpus for NVIDIA, the extra device and args, stop -t 120 */
    struct sw_unit_render r;
    render(f, "c", &r);
    bool gpus = false, ib = false, ipc = false;
    for (size_t i = 0; i < r.container_argc; i++) {
        gpus = gpus || !strcmp(r.container_argv[i], "--gpus=device=1");
        ib = ib || !strcmp(r.container_argv[i], "--device=/dev/infiniband");
        ipc = ipc || !strcmp(r.container_argv[i], "--ipc=host");
    }
    assert_true(gpus && ib && ipc);
    assert_string_equal(r.container_argv[0], "/usr/bin/docker");
    assert_string_equal(key_in(r.service.text, "[Service]", "ExecStop", NULL),
                        "/usr/bin/docker stop -t 120 llm");
    assert_string_equal(key_in(r.service.text, "[Service]", "User", NULL), "dank");
    assert_string_equal(key_in(r.service.text, "[Unit]", "StartLimitIntervalSec", NULL), "600");
    assert_string_equal(key_in(r.service.text, "[Service]", "RestartSec", NULL), "45");
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    sw_free(y);

    /* mistakes, each at its line (the endpoints start at line 7) */
    expect_fleet_error("  a:\n    host: h\n    engine: vllm\n    runtime: podman\n"
                       "    payload: {path: /m/x}\n",
                       "needs an image", 11);
    expect_fleet_error("  a:\n    host: h\n    engine: llama.cpp\n    runtime: rkt\n"
                       "    payload: {path: /m/x}\n",
                       "rkt", 11);
    expect_fleet_error("  a:\n    host: h\n    engine: llama.cpp\n"
                       "    runtime: {kind: native, shm_size: 1GiB}\n"
                       "    payload: {path: /m/x}\n",
                       "container", 11);
    expect_fleet_error("  a:\n    host: h\n    engine: vllm\n    image: localhost/v\n"
                       "    runtime: {kind: podman, stop_grace: 120s}\n"
                       "    service: {stop_timeout: 90s}\n"
                       "    payload: {path: /m/x, mounts: [\"/m:/m\"]}\n",
                       "must be above runtime.stop_grace", 13);
    expect_fleet_error("  a:\n    host: h\n    engine: llama.cpp\n"
                       "    service: {scope: user, oom_score_adjust: -500}\n"
                       "    payload: {path: /m/x}\n",
                       "may not lower", 11);
    expect_fleet_error("  a:\n    host: h\n    engine: llama.cpp\n"
                       "    service: {scope: galaxy}\n"
                       "    payload: {path: /m/x}\n",
                       "galaxy", 11);
    expect_fleet_error("  a:\n    host: h\n    engine: llama.cpp\n"
                       "    service: {restart_sec: soon}\n"
                       "    payload: {path: /m/x}\n",
                       "not a duration", 11);
    expect_fleet_error("  a:\n    host: h\n    engine: llama.cpp\n"
                       "    service: {name: a.service}\n"
                       "    payload: {path: /m/x}\n",
                       "without '.service'", 11);
}

/* The render's stop timeout, checked against the engine's numbers with the fleet's position. */
/* service.memory_max: MemoryMax= in bytes on a native unit, in the fleet's JSON and the render's
 * timing; refused at its line:col below 1 MiB and on a container (the unit's limit does not
 * reach podman's own cgroup). */
static void test_memory_max(void **state)
{
    (void)state;
    struct sw_err e;
    char *y = fleet_with("  b:\n"
                         "    host: h\n"
                         "    engine: llama.cpp\n"
                         "    payload: {path: /m/x.gguf}\n"
                         "    service: {memory_max: 1.5GiB}\n");
    struct sw_fleet *f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    const struct sw_fleet_endpoint *b = sw_fleet_endpoint(f, "b");
    assert_true(b->service.memory_max.set);
    assert_int_equal(b->service.memory_max.v, 1610612736ull);
    json_t *j = sw_fleet_to_json(f);
    char *s = sw_json_dumps(j, JSON_COMPACT);
    assert_non_null(strstr(s, "\"memory_max\":1610612736"));
    sw_free(s);
    json_decref(j);
    struct sw_unit_render r;
    render(f, "b", &r);
    const char *mm = key_in(r.service.text, "[Service]", "MemoryMax", NULL);
    assert_non_null(mm);
    assert_string_equal(mm, "1610612736");
    assert_int_equal(r.timing.memory_max, 1610612736ull);
    json_t *rj = sw_unit_render_json(&r);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(rj, "timing"), "memory_max")),
        1610612736);
    json_decref(rj);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    free(y);

    y = fleet_with("  b:\n"
                   "    host: h\n"
                   "    engine: llama.cpp\n"
                   "    payload: {path: /m/x.gguf}\n"
                   "    service:\n"
                   "      memory_max: 100KiB\n");
    f = load_text(y, &e);
    assert_null(f);
    swt_has_all("e.msg", e.msg, "must be >= 1048576", "service.memory_max", NULL);
    free(y);

    y = fleet_with("  a:\n"
                   "    host: h\n"
                   "    engine: vllm\n"
                   "    image: localhost/v\n"
                   "    payload: {path: /m/x, mounts: [\"/m:/m\"]}\n"
                   "    service:\n"
                   "      memory_max: 8GiB\n");
    f = load_text(y, &e);
    assert_null(f);
    if (!strstr(e.msg, "does not reach a podman container") || !strstr(e.msg, "--memory="))
        fail_msg("%s", e.msg);
    free(y);
}

static void test_stop_timeout_relations(void **state)
{
    (void)state;
    struct sw_err e;
    char *y = fleet_with("  a:\n"
                         "    host: h\n"
                         "    engine: vllm\n"
                         "    image: localhost/v\n"
                         "    service: {stop_timeout: 125s}\n"
                         "    payload: {path: /m/x, mounts: [\"/m:/m\"]}\n");
    struct sw_fleet *f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    struct sw_unit_render r;
    sw_err_clear(&e);
    /* the default grace for vLLM is 120 s: 125 s leaves less than the margin */
    assert_int_not_equal(sw_unit_render_endpoint(f, sw_fleet_endpoint(f, "a"), &r, &e), 0);
    assert_non_null(strstr(e.msg, "stop -t 120"));
    assert_int_equal(e.line, 12);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    sw_free(y);
}

static bool have(const char *path)
{
    return access(path, X_OK) == 0;
}

/* systemd-analyze verify prints nothing for rendered units whose programs exist here. */
static void verify_quiet(const struct sw_unit_render *r)
{
    char *d = swt_tmpdir();
    struct sw_err e;
    assert_int_equal(sw_unit_render_write(r, d, &e), 0);
    const char *unit = swt_join(d, r->service.name);
    const char *argv[] = {"/usr/bin/systemd-analyze", "verify", unit, NULL};
    struct swt_run run;
    assert_int_equal(swt_run(argv, NULL, 60, &run), 0);
    if (run.status || run.out[0] || run.err[0])
        fail_msg("systemd-analyze verify %s (exit %d):\n%s%s\n--- unit\n%s", r->service.name,
                 run.status, run.out, run.err, r->service.text);
    swt_run_free(&run);
    swt_tmpdir_free(d);
}

static void test_systemd_verify(void **state)
{
    (void)state;
    swt_need(have("/usr/bin/systemd-analyze"), "systemd-analyze (systemd)");
    /* native units whose program exists: /bin/true stands in for the engine */
    struct sw_err e;
    char *y = fleet_with("  n:\n"
                         "    host: h\n"
                         "    engine: llama.cpp\n"
                         "    binary: /bin/true\n"
                         "    payload: {path: /srv/m.gguf}\n"
                         "    shape: {ctx_size: 4096, seqs: 1}\n"
                         "  u:\n"
                         "    host: h\n"
                         "    engine: vllm\n"
                         "    binary: /bin/true\n"
                         "    service: {scope: user, restart_sec: 1500ms}\n"
                         "    payload: {path: /srv/x}\n"
                         "    shape: {max_model_len: 4096, seqs: 1}\n");
    struct sw_fleet *f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    const char *names[] = {"n", "u"};
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++) {
        struct sw_unit_render r;
        render(f, names[i], &r);
        verify_quiet(&r);
        sw_unit_render_free(&r);
    }
    sw_fleet_free(f);
    sw_free(y);
    swt_need(have("/usr/bin/podman"), "podman at /usr/bin/podman (the rendered unit runs it)");
    /* a user unit in podman: the env file under %h, kept a specifier on the podman line too; a
     * '%' and a '$' of the engine's own arguments doubled */
    y = fleet_with("  p:\n"
                   "    host: h\n"
                   "    engine: llama.cpp\n"
                   "    binary: /app/llama-server\n"
                   "    image: localhost/llama\n"
                   "    service: {scope: user}\n"
                   "    args: [--chat-template-kwargs, '{\"x\": \"50% $HOME\"}']\n"
                   "    payload: {path: /srv/m.gguf, mounts: [\"/srv:/srv:ro\"]}\n"
                   "    shape: {ctx_size: 4096, seqs: 1}\n");
    f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    struct sw_unit_render pr;
    render(f, "p", &pr);
    assert_string_equal(key_in(pr.service.text, "[Service]", "EnvironmentFile", NULL),
                        "%h/.config/slipway/slipway-p.env");
    swt_has_all("pr.service.text", pr.service.text, " --env-file %h/.config/slipway/slipway-p.env ",
                " \"{\\\"x\\\": \\\"50%% $$HOME\\\"}\"\n", NULL);
    assert_null(key_in(pr.service.text, "[Unit]", "After", NULL));
    assert_null(key_in(pr.service.text, "[Service]", "OOMScoreAdjust", NULL));
    assert_null(strstr(pr.service.text, "memlock"));
    verify_quiet(&pr);
    sw_unit_render_free(&pr);
    sw_fleet_free(f);
    sw_free(y);
    /* the operator's container unit runs /usr/bin/podman; frank-small's llama-server is not
     * installed here, so only its container sibling is verified */
    f = load_rel("examples/operator.yaml");
    struct sw_unit_render r;
    render(f, "frank-primary", &r);
    verify_quiet(&r);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
}

/* The verb: human view, --json, --out, an unknown endpoint. */
static void test_cli(void **state)
{
    (void)state;
    const char *fl = swt_src("examples/operator.yaml");
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "render", "frank-primary", "--fleet", fl, "--json", NULL), 0);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *files = json_object_get(j, "files");
    assert_int_equal(json_array_size(files), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(files, 0), "name")),
                        "slipway-frank-primary.service");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(files, 1), "mode")), 0600);
    json_t *argv = json_object_get(json_object_get(j, "container"), "argv");
    assert_true(json_array_size(argv) > 10);
    assert_string_equal(json_string_value(json_array_get(argv, 1)), "run");
    assert_int_equal(json_array_size(json_object_get(j, "warnings")), 1);
    json_decref(j);
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "render", "frank-small", "--fleet", fl, NULL), 0);
    swt_out_has(&r, 0, "### slipway-frank-small.service", "Restart=on-failure", NULL);

    char *d = swt_tmpdir();
    assert_int_equal(swt_slipway(&r, "render", "frank-small", "--fleet", fl, "--out", d, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_true(swt_file_has(swt_join(d, "slipway-frank-small.service"), "[Service]"));
    assert_true(swt_file_has(swt_join(d, "slipway-frank-small.env"), "CUDA_VISIBLE_DEVICES=0"));
    swt_run_free(&r);
    char missing[4200];
    snprintf(missing, sizeof(missing), "%s/nope", d);
    assert_int_equal(
        swt_slipway(&r, "render", "frank-small", "--fleet", fl, "--out", missing, NULL), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "nope"));
    swt_run_free(&r);
    swt_tmpdir_free(d);

    assert_int_equal(swt_slipway(&r, "render", "nobody", "--fleet", fl, NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "frank-primary"));
    swt_run_free(&r);
    swt_slipway_exits(2, "render", NULL);
}

/* SGLang, in podman and native: the adapter's argv, Restart=always, the model in the mount. */
static void test_sglang(void **state)
{
    (void)state;
    struct sw_err e;
    char *y =
        fleet_with("  s:\n"
                   "    host: h\n"
                   "    engine: sglang\n"
                   "    image: localhost/sglang\n"
                   "    payload: {path: /srv/models/q, mounts: [\"/srv/models:/models:ro\"]}\n"
                   "    shape: {max_model_len: 4096, seqs: 2}\n"
                   "  sn:\n"
                   "    host: h\n"
                   "    engine: sglang\n"
                   "    binary: /bin/true\n"
                   "    payload: {path: /srv/models/q}\n"
                   "    shape: {max_model_len: 4096, seqs: 2}\n");
    struct sw_fleet *f = load_text(y, &e);
    if (!f)
        fail_msg("%s", e.msg);
    struct sw_unit_render r;
    render(f, "s", &r);
    assert_string_equal(key_in(r.service.text, "[Service]", "Restart", NULL), "always");
    bool model = false;
    for (size_t i = 0; i + 1 < r.container_argc; i++)
        model = model || (!strcmp(r.container_argv[i], "--model-path") &&
                          !strcmp(r.container_argv[i + 1], "/models/q"));
    assert_true(model);
    sw_unit_render_free(&r);
    render(f, "sn", &r);
    const char *es = key_in(r.service.text, "[Service]", "ExecStart", NULL);
    assert_non_null(strstr(es, "/bin/true --model-path /srv/models/q "));
    assert_string_equal(key_in(r.service.text, "[Service]", "Restart", NULL), "always");
    assert_non_null(strstr(r.env.text, "\nCUDA_VISIBLE_DEVICES=1\n"));
    if (access("/usr/bin/systemd-analyze", X_OK) == 0)
        verify_quiet(&r);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    sw_free(y);
}

struct torture_arg {
    const struct sw_fleet *f;
    const char *name;
};

static int torture_run(void *arg)
{
    struct torture_arg *t = arg;
    struct sw_unit_render r;
    struct sw_err e;
    int rc = sw_unit_render_endpoint(t->f, sw_fleet_endpoint(t->f, t->name), &r, &e);
    if (!rc) {
        json_t *j = sw_unit_render_json(&r);
        if (!j)
            rc = SW_ENOMEM;
        json_decref(j);
    }
    sw_unit_render_free(&r);
    return rc;
}

/* Every allocation of a render (plan, argv, texts, JSON) failing in turn: SW_ENOMEM, no leak. */
static void test_torture(void **state)
{
    (void)state;
    struct sw_fleet *f = load_rel("examples/operator.yaml");
    const char *names[] = {"frank-primary", "frank-small"};
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++) {
        struct torture_arg t = {f, names[i]};
        assert_true(swt_torture(names[i], torture_run, &t, SW_ENOMEM) > 10);
    }
    sw_fleet_free(f);
}

/* The one escaper of a value in an Exec line writes a control character as the C escape systemd
 * reads back, never raw (systemd ends a unit's line at a CR): the scanner, which splits as
 * systemd does, reads the word back whole, and the line stays one line. */
static void test_exec_quote_controls(void **state)
{
    (void)state;
    static const char *const args[] = {"m\rExecStartPre=/bin/x\r#",
                                       "a\nb",
                                       "t\tab",
                                       "bell\x07",
                                       "plain",
                                       "50%",
                                       "$HOME",
                                       "q\"uo\\te",
                                       ""};
    for (size_t i = 0; i < SW_ARRAY_LEN(args); i++) {
        struct sw_buf b;
        sw_buf_init(&b, 1 << 16);
        assert_int_equal(sw_buf_puts(&b, "[Service]\nExecStart=/bin/echo "), 0);
        assert_int_equal(sw__unit_exec_quote(&b, args[i]), 0);
        assert_int_equal(sw_buf_puts(&b, "\n"), 0);
        const char *t = sw_buf_cstr(&b);
        for (const char *p = t; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\n')
                fail_msg("'%s' wrote a raw control character: %s", args[i], t);
        assert_int_equal(strchr(strchr(t, '\n') + 1, '\n'), t + b.len - 1);
        struct sw_unit *u = NULL;
        struct sw_err e;
        assert_int_equal(sw_unit_parse(t, b.len, "q.service", NULL, &u, &e), 0);
        assert_int_equal(u->n_notes, 0);
        assert_int_equal(u->n_cmds, 1);
        assert_int_equal(u->cmds[0].argc, 2);
        /* %% is the renderer's, the scanner leaves specifiers as written */
        if (strcmp(args[i], "50%"))
            assert_string_equal(u->cmds[0].argv[1], args[i]);
        sw_unit_free(u);
        sw_buf_free(&b);
    }
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frank_primary),
        cmocka_unit_test(test_frank_small),
        cmocka_unit_test(test_local_native),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_outside_mounts),
        cmocka_unit_test(test_exec_quote_controls),
        cmocka_unit_test(test_secrets),
        cmocka_unit_test(test_write_failures),
        cmocka_unit_test(test_fleet_schema),
        cmocka_unit_test(test_stop_timeout_relations),
        cmocka_unit_test(test_memory_max),
        cmocka_unit_test(test_systemd_verify),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_torture),
        cmocka_unit_test(test_sglang),
    };
    return cmocka_run_group_tests_name("unit_render", tests, NULL, NULL);
}
