/*
 * Model metadata from where the model is (issue 30): a fleet whose payloads live only on a real
 * test host (scripts/testhost.sh sw-mr-a, 169.254.36.2: its own sshd and network, reached over
 * slipway's ssh transport), nothing of them on this machine, and no declared `arch`:
 *  - a 4 GiB SPARSE GGUF: the tiny chat model's header followed by a hole (`truncate -s 4G`);
 *  - a vLLM-style checkpoint directory: config.json, model.safetensors.index.json, two shards;
 *  - a header-only GGUF (the header alone, no tensor data).
 * `slipway plan FLEET --json` plans all three, reading on the host: the GGUF's header and at most
 * one 1 MiB read ahead (counted: "model_read".bytes, everything the host's commands printed, is at
 * most the header + 1 MiB), config.json, the index and each shard's 8-byte length and header (no
 * data byte); the header-only GGUF plans and says "header only". A second plan transfers no byte of
 * any file (the cache: one stat per file); a changed mtime on the host reads that file again and
 * only it. `slipway check` plans the same way. `slipway sim` of the vLLM and llama.cpp endpoints
 * boots and serves (the payload resolves where the engine runs), and so does an endpoint that
 * declares its `arch` (the help's `slipway sim frank-primary` case: the host is asked whether the
 * payload is there); a payload the host does not have still fails the sim's boot as vLLM does
 * ("Repo id must be in the form"). The cache lives in $SLIPWAY_CACHE/remote-meta, entries 0600.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swllama.h"
#include "swthost.h"
#include "swtest.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME "sw-mr-a"
#define ADDR "169.254.36.2"
#define MIB  (1024 * 1024)

struct fx {
    struct swth_host h;
    char *dir;
    char run[4200], cache[4200], fleet[4200];
    size_t data_offset; /* the chat model's header */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->dir = swt_tmpdir();
    snprintf(f->run, sizeof(f->run), "%s/run", f->dir);
    snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
    snprintf(f->fleet, sizeof(f->fleet), "%s/fleet.yaml", f->dir);
    mkdir(f->run, 0700);
    setenv("SLIPWAY_RUN_DIR", f->run, 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    unsetenv("SLIPWAY_CACHE"); /* scripts/testhost.sh keeps its rootfs under the real one */
    swth_end_masters(f->run);
    swth_down(&f->h);
    swth_end_masters(f->run);
    assert_int_equal(swt_survivors(f->run, true, NULL), 0);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

/* Write bytes at PATH on the host, through its root directory on this machine. */
static void host_write(struct fx *f, const char *path, const void *data, size_t n)
{
    char p[8400];
    snprintf(p, sizeof(p), "%s%s", f->h.root, path);
    swt_write(p, data, n);
}

/* A safetensors shard: one bf16 tensor of rows x 4096 (the data written: small). */
static void host_shard(struct fx *f, const char *path, const char *name, int rows)
{
    char hdr[256];
    int n = snprintf(hdr, sizeof(hdr),
                     "{\"%s\":{\"dtype\":\"BF16\",\"shape\":[%d,4096],\"data_offsets\":[0,%d]}}",
                     name, rows, rows * 8192);
    uint64_t len = (uint64_t)n;
    size_t total = 8 + (size_t)n + (size_t)rows * 8192;
    unsigned char *b = calloc(1, total);
    memcpy(b, &len, 8);
    memcpy(b + 8, hdr, (size_t)n);
    host_write(f, path, b, total);
    free(b);
}

/* The host's files: the sparse GGUF, the header-only GGUF, the checkpoint directory. */
static void put_payloads(struct fx *f, const char *model)
{
    struct sw_gguf *g = NULL;
    struct sw_err e;
    assert_int_equal(sw_gguf_open(model, &g, &e), 0);
    f->data_offset = (size_t)g->data_offset;
    sw_gguf_free(g);
    char *head = malloc(f->data_offset);
    FILE *in = fopen(model, "rb");
    assert_non_null(in);
    assert_int_equal(fread(head, 1, f->data_offset, in), f->data_offset);
    fclose(in);
    free(swth_must(&f->h, "mkdir -p /srv/mr/ckpt"));
    host_write(f, "/srv/mr/sparse.gguf", head, f->data_offset);
    host_write(f, "/srv/mr/head.gguf", head, f->data_offset);
    free(head);
    free(swth_must(&f->h, "truncate -s 4G /srv/mr/sparse.gguf && ls -ls /srv/mr/sparse.gguf"));
    host_write(f, "/srv/mr/ckpt/config.json", SWT_LLAMA8B_CONFIG, strlen(SWT_LLAMA8B_CONFIG));
    host_shard(f, "/srv/mr/ckpt/model-00001-of-00002.safetensors", "a.weight", 64);
    host_shard(f, "/srv/mr/ckpt/model-00002-of-00002.safetensors", "b.weight", 192);
    static const char ix[] = "{\"metadata\":{\"total_size\":2097152},\"weight_map\":{"
                             "\"a.weight\":\"model-00001-of-00002.safetensors\","
                             "\"b.weight\":\"model-00002-of-00002.safetensors\"}}";
    host_write(f, "/srv/mr/ckpt/model.safetensors.index.json", ix, sizeof(ix) - 1);
}

static void write_fleet(struct fx *f)
{
    char text[8192];
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  mr:\n"
             "    transport: {kind: ssh, address: %s, user: root,\n"
             "                identity_file: %s, known_hosts: %s}\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu, memory_total: 8GiB}\n"
             "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}\n"
             "endpoints:\n"
             "  mr-gguf:\n"
             "    host: mr\n"
             "    devices: [cpu]\n"
             "    engine: llama.cpp\n"
             "    listen: 127.0.0.1:18231\n"
             "    payload: {path: /srv/mr/sparse.gguf}\n"
             "    shape: {ctx_size: 512, seqs: 1, n_gpu_layers: 0}\n"
             "  mr-head:\n"
             "    host: mr\n"
             "    devices: [cpu]\n"
             "    engine: llama.cpp\n"
             "    listen: 127.0.0.1:18232\n"
             "    payload: {path: /srv/mr/head.gguf}\n"
             "    shape: {ctx_size: 512, seqs: 1, n_gpu_layers: 0}\n"
             "  mr-vllm:\n"
             "    host: mr\n"
             "    devices: [g0]\n"
             "    engine: vllm\n"
             "    listen: 127.0.0.1:18233\n"
             "    payload: {path: /srv/mr/ckpt}\n"
             "    shape: {max_model_len: 8192, seqs: 2}\n"
             "  mr-declared:\n"
             "    host: mr\n"
             "    devices: [g0]\n"
             "    engine: vllm\n"
             "    listen: 127.0.0.1:18234\n"
             "    payload: {path: /srv/mr/ckpt}\n"
             "    shape: {max_model_len: 8192, seqs: 2, kv_cache_bytes: 2GiB}\n"
             "    arch: %s\n"
             "  mr-absent:\n"
             "    host: mr\n"
             "    devices: [g0]\n"
             "    engine: vllm\n"
             "    listen: 127.0.0.1:18235\n"
             "    payload: {path: /srv/mr/not-here}\n"
             "    shape: {max_model_len: 8192, seqs: 2, kv_cache_bytes: 2GiB}\n"
             "    arch: %s\n",
             f->h.addr, f->h.key, f->h.known_hosts, SWT_LLAMA8B_CONFIG, SWT_LLAMA8B_CONFIG);
    swt_write_str(f->fleet, text);
}

static json_t *plan_json(struct fx *f, const char *only)
{
    struct swt_run r;
    const char *argv[] = {swt_bin(), "plan", "--fleet", f->fleet, only, "--json", NULL};
    assert_int_equal(swt_run(argv, NULL, 120, &r), 0);
    json_t *j = swt_json_out(&r);
    if (!j || r.status != 0)
        fail_msg("plan %s exited %d:\n%.3000s\n%.3000s", only, r.status, r.out, r.err);
    swt_run_free(&r);
    return j;
}

static const json_t *read_of(const json_t *plan)
{
    const json_t *ep = json_array_get(json_object_get(plan, "endpoints"), 0);
    const json_t *m = json_object_get(ep, "model_read");
    if (!m)
        fail_msg("no model_read in %s", json_dumps(ep, 0));
    return m;
}

static long long num(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

/* The sim of an endpoint: it must announce its port and serve /health, then stop on SIGTERM. */
static void sim_serves(struct fx *f, const char *ep)
{
    char log[4300], out[4300], so[4300];
    snprintf(log, sizeof(log), "%s/sim-%s.log", f->dir, ep);
    snprintf(out, sizeof(out), "%s/sim-%s.port", f->dir, ep);
    snprintf(so, sizeof(so), "%s/sim-%s.out", f->dir, ep);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        int o = open(so, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int l = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(l, 2);
        execl(swt_bin(), swt_bin(), "sim", ep, "--fleet", f->fleet, "--load-time", "0",
              "--ready-file", out, (char *)NULL);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 300 && !port; i++) {
        FILE *p = fopen(out, "r");
        if (p) {
            if (fscanf(p, "%d", &port) != 1)
                port = 0;
            fclose(p);
        }
        int st;
        if (!port && waitpid(pid, &st, WNOHANG) == pid) {
            fail_msg("sim %s exited %d before serving (log %s)", ep, WEXITSTATUS(st), log);
        }
        if (!port)
            usleep(100 * 1000);
    }
    assert_true(port > 0);
    int status = 0;
    char *body = NULL;
    for (int i = 0; i < 100; i++) {
        free(body);
        body = NULL;
        if (swl_http(port, "GET", "/health", NULL, 10, &status, &body) == 0 && status == 200)
            break;
        usleep(100 * 1000);
    }
    free(body);
    assert_int_equal(status, 200);
    kill(-pid, SIGTERM);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_false(swt_file_has(log, "Repo id must be in the form"));
}

static void test_remote_model(void **state)
{
    struct fx *f = *state;
    const char *why = swth_missing();
    swt_need(!why[0], "%s", why);
    char mdir[4096], model[4096], missing[8700];
    swth_model(mdir, sizeof(mdir), model, sizeof(model), missing, sizeof(missing));
    if (!model[0]) {
        swt_tmpdir_free(strdup(mdir));
        swt_need(false, "no chat model: %s", missing);
    }
    assert_int_equal(swth_up(NAME, ADDR, NULL, &f->h), 0);
    put_payloads(f, model);
    swt_tmpdir_free(strdup(mdir));
    write_fleet(f);
    /* slipway's cache in the test's directory (testhost.sh is done with the real one) */
    setenv("SLIPWAY_CACHE", f->cache, 1);
    /* nothing of the payloads on this machine */
    struct stat st;
    assert_int_equal(stat("/srv/mr", &st), -1);

    /* 1. the sparse 4 GiB GGUF: the header and at most one read ahead, counted */
    json_t *j = plan_json(f, "mr-gguf");
    const json_t *m = read_of(j);
    assert_true(json_is_true(json_object_get(m, "found")));
    assert_int_equal(num(m, "file_size"), 4ll << 30);
    assert_int_equal(num(m, "header_bytes"), (long long)f->data_offset);
    assert_false(json_is_true(json_object_get(m, "header_only")));
    assert_int_equal(num(m, "files_read"), 1);
    long long first = num(m, "bytes");
    print_message("sparse 4 GiB GGUF, header %zu B: %lld B transferred over %lld commands\n",
                  f->data_offset, first, num(m, "commands"));
    assert_true(first >= (long long)f->data_offset);
    assert_true(first <= (long long)f->data_offset + MIB);
    const json_t *ep = json_array_get(json_object_get(j, "endpoints"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ep, "arch"), "arch")),
                        "llama");
    json_decref(j);

    /* 2. the checkpoint directory: config.json, the index, the shards' headers */
    j = plan_json(f, "mr-vllm");
    m = read_of(j);
    ep = json_array_get(json_object_get(j, "endpoints"), 0);
    assert_true(json_is_true(json_object_get(m, "found")));
    assert_string_equal(json_string_value(json_object_get(ep, "config")),
                        "mr:/srv/mr/ckpt/config.json");
    assert_true(json_is_true(json_object_get(json_object_get(ep, "report"), "pool_sized")));
    assert_int_equal(num(m, "files_read"), 4);
    assert_int_equal(num(m, "range_bytes"), num(m, "header_bytes"));
    long long vbytes = num(m, "bytes");
    print_message("vLLM directory: %lld B of config, index and shard headers; %lld B "
                  "transferred over %lld commands\n",
                  num(m, "header_bytes"), vbytes, num(m, "commands"));
    assert_true(vbytes < num(m, "header_bytes") + 1024);
    json_decref(j);

    /* 3. header only */
    j = plan_json(f, "mr-head");
    m = read_of(j);
    assert_true(json_is_true(json_object_get(m, "header_only")));
    ep = json_array_get(json_object_get(j, "endpoints"), 0);
    char *text = json_dumps(ep, 0);
    assert_non_null(strstr(text, "header only"));
    free(text);
    json_decref(j);
    struct swt_run r;
    const char *hargv[] = {swt_bin(), "plan", "--fleet", f->fleet, "mr-head", NULL};
    assert_int_equal(swt_run(hargv, NULL, 120, &r), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "header only"));
    assert_non_null(strstr(r.out, "model read on mr"));
    swt_run_free(&r);

    /* 4. again: nothing but the stats */
    j = plan_json(f, "mr-gguf");
    m = read_of(j);
    assert_int_equal(num(m, "range_bytes"), 0);
    assert_int_equal(num(m, "files_cached"), 1);
    assert_int_equal(num(m, "commands"), 1);
    assert_true(num(m, "bytes") < 100);
    json_decref(j);
    j = plan_json(f, "mr-vllm");
    m = read_of(j);
    assert_int_equal(num(m, "range_bytes"), 0);
    assert_int_equal(num(m, "files_cached"), 4);
    assert_int_equal(num(m, "files_read"), 0);
    json_decref(j);
    /* the cache: one entry per file, 0600, in the cache directory */
    char cdir[4300];
    snprintf(cdir, sizeof(cdir), "%s/remote-meta", f->cache);
    assert_int_equal(stat(cdir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    DIR *d = opendir(cdir);
    int entries = 0;
    for (struct dirent *de = d ? readdir(d) : NULL; de; de = readdir(d)) {
        if (de->d_name[0] == '.')
            continue;
        char p[4600];
        snprintf(p, sizeof(p), "%s/%s", cdir, de->d_name);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0600);
        entries++;
    }
    if (d)
        closedir(d);
    assert_int_equal(entries, 6); /* two GGUFs, config, index, two shards */

    /* 5. a changed mtime on the host: read again (that file only) */
    free(swth_must(&f->h, "touch -d '2021-01-02 03:04:05' /srv/mr/sparse.gguf"));
    j = plan_json(f, "mr-gguf");
    m = read_of(j);
    assert_int_equal(num(m, "files_read"), 1);
    assert_true(num(m, "bytes") >= (long long)f->data_offset);
    assert_true(num(m, "bytes") <= (long long)f->data_offset + MIB);
    json_decref(j);
    j = plan_json(f, "mr-vllm");
    assert_int_equal(num(read_of(j), "files_read"), 0);
    json_decref(j);

    /* 6. check plans the same way: its law-reading gates run on the host's model */
    const char *cargv[] = {swt_bin(), "check", "--fleet", f->fleet, "mr-vllm", "--json", NULL};
    assert_int_equal(swt_run(cargv, NULL, 120, &r), 0);
    assert_null(strstr(r.out, "is not on this machine"));
    assert_null(strstr(r.err, "is not on this machine"));
    json_t *cj = swt_json_out(&r);
    if (!cj)
        fail_msg("check exited %d:\n%.3000s\n%.2000s", r.status, r.out, r.err);
    json_decref(cj);
    swt_run_free(&r);

    /* 7. the sim: each boots where the payload is on the host, the declared one too */
    sim_serves(f, "mr-vllm");
    sim_serves(f, "mr-gguf");
    sim_serves(f, "mr-declared");
    /* a payload the host does not have fails as vLLM does */
    const char *sargv[] = {swt_bin(), "sim",         "mr-absent", "--fleet",
                           f->fleet,  "--load-time", "0",         NULL};
    assert_int_equal(swt_run(sargv, NULL, 60, &r), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "Repo id must be in the form"));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_remote_model, setup, teardown),
    };
    return cmocka_run_group_tests_name("model_remote", tests, NULL, NULL);
}
