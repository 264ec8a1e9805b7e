/*
 * `slipway sim frank-primary` replays every frank-primary boot the seed ledger records
 * (tests/data/ledger/seed-boots.json) from the built binary, on 127.0.0.1, with the headroom model
 * fitted on that ledger (`--ledger`) and the boot's shape given as `--set` overrides of
 * examples/operator.yaml (its payload pointed at a directory holding the inferred config):
 *  - booted / serving: the sim serves; its log prints the law's "GPU KV cache size" (and
 *    "Maximum concurrency" when the boot printed one) with the recorded figures, the night
 *    ladder's engine-sized pools included (718,606 and 732,359 tokens from the fitted pool line);
 *  - oom at graph_capture (the ladder's 262,144 and 245,760): exit 1 with torch's "Tried to
 *    allocate 76.00 MiB ... 0 bytes is free" after "Capturing CUDA graphs";
 *  - oom at kv_alloc: exit 1 with the allocation and the free memory (10.70 GiB against 9.18);
 *  - oom at runtime (five 262,144 fp8 contexts): boots, serves a short request, and the
 *    worst-case request (995-token prompt, max_tokens 261,149) kills the engine: HTTP 500, the API
 *    server exits 0;
 *  - compile_constraint (SEQS 2): exit 1 with the declared dynamo error;
 *  - bad_path: the operator's own payload path, absent here: "Repo id must be in the form".
 * `slipway bootlog parse` classifies every failure as recorded (class and phase). Every sim runs in
 * its own process group and is killed in the teardown even when a check fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swledger.h"
#include "swllama.h"
#include "swtest.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct fx {
    char *dir;
    char led[4096];
    char fleet[4096];   /* operator.yaml with the payload here */
    char precise[4096]; /* the same with --expert-precise-memory */
};

static pid_t g_pid;

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[4200];
    f->dir = swt_tmpdir();
    snprintf(f->led, sizeof(f->led), "%s", swt_join(f->dir, "seed.sqlite"));
    swl_cli_import_seed(f->led);
    /* the payload: a directory with the inferred config (the law plans from it) */
    char *b = swt_operator_local(f->dir);
    snprintf(f->fleet, sizeof(f->fleet), "%s/operator.yaml", f->dir);
    swt_write_str(f->fleet, b);
    char *c = swt_replace1(b, "    args: [--reasoning-parser",
                           "    args: [--expert-precise-memory, "
                           "--reasoning-parser");
    snprintf(f->precise, sizeof(f->precise), "%s/precise.yaml", f->dir);
    swt_write_str(f->precise, c);
    free(b);
    free(c);
    static const char *const envs[] = {"frank-primary.env", "frank-small.env"};
    for (size_t i = 0; i < SW_ARRAY_LEN(envs); i++) {
        snprintf(path, sizeof(path), "examples/%s", envs[i]);
        swt_copy(swt_src(path), swt_join(f->dir, envs[i]));
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (g_pid > 0) {
        kill(-g_pid, SIGKILL);
        waitpid(g_pid, NULL, 0);
        g_pid = 0;
    }
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static int reap_within(pid_t pid, int timeout_s)
{
    int st = 0;
    for (int i = 0; i < timeout_s * 10; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            g_pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(100000);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &st, 0);
    g_pid = 0;
    return 128 + SIGKILL;
}

/* The boot's shape as --set overrides; false when it has none (bad_path). */
static bool sets_of(const json_t *boot, char sets[][96], int *n)
{
    const json_t *s = json_object_get(boot, "shape");
    const json_t *fl = json_object_get(boot, "failure");
    *n = 0;
    if (!s)
        return false;
    snprintf(sets[(*n)++], 96, "max_model_len=%lld",
             (long long)json_integer_value(json_object_get(s, "ctx")));
    snprintf(sets[(*n)++], 96, "seqs=%lld",
             (long long)json_integer_value(json_object_get(s, "slots")));
    snprintf(sets[(*n)++], 96, "kv_cache_dtype=%s",
             json_string_value(json_object_get(s, "kv_dtype")));
    const json_t *kb = json_object_get(s, "kv_bytes");
    const json_t *asked = json_object_get(fl, "asked_gib"); /* the pool the operator asked */
    if (json_is_integer(kb))
        snprintf(sets[(*n)++], 96, "kv_cache_bytes=%lld", (long long)json_integer_value(kb));
    else if (json_is_number(asked))
        snprintf(sets[(*n)++], 96, "kv_cache_bytes=%lld",
                 (long long)llround(json_number_value(asked) * 1073741824.0));
    else
        snprintf(sets[(*n)++], 96, "kv_cache_bytes=null");
    const json_t *m = json_object_get(s, "mnbt");
    if (json_is_integer(m))
        snprintf(sets[(*n)++], 96, "max_num_batched_tokens=%lld", (long long)json_integer_value(m));
    const json_t *u = json_object_get(s, "gpu_memory_utilization");
    if (json_is_number(u))
        snprintf(sets[(*n)++], 96, "gpu_memory_utilization=%.2f", json_number_value(u));
    return true;
}

static void classify(const char *log, const char *cls, const char *phase)
{
    struct swt_run r;
    swt_slipway(&r, "bootlog", "parse", "--engine", "vllm", "--json", log, NULL);
    json_t *j = swt_json_out(&r);
    assert_non_null(j);
    json_t *fl = json_object_get(j, "failure");
    const char *c = json_string_value(json_object_get(fl, "class"));
    const char *p = json_string_value(json_object_get(fl, "phase"));
    if (!c || strcmp(c, cls) || (phase && (!p || strcmp(p, phase))))
        fail_msg("%s: bootlog parse says %s/%s, recorded %s/%s", log, c ? c : "-", p ? p : "-", cls,
                 phase ? phase : "-");
    json_decref(j);
    swt_run_free(&r);
}

static void fmt_count(int64_t v, char *out, size_t n)
{
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
    size_t l = strlen(tmp), o = 0;
    for (size_t i = 0; i < l && o + 2 < n; i++) {
        if (i && (l - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = tmp[i];
    }
    out[o] = 0;
}

/* A boot that serves: the sim announces its port, prints the law's lines, answers /health. */
static void replay_serves(struct fx *f, const char *ref, const char *const *argv,
                          const json_t *boot, bool runtime_oom)
{
    char out[4200], log[4200];
    snprintf(out, sizeof(out), "%s/%s.out", f->dir, ref);
    snprintf(log, sizeof(log), "%s/%s.log", f->dir, ref);
    int port = swt_spawn_announced(ref, argv, out, log, &g_pid);
    pid_t pid = g_pid;
    int status = 0;
    for (int i = 0; i < 300 && status != 200; i++) {
        char *body = NULL;
        if (swl_http(port, "GET", "/health", NULL, 5, &status, &body))
            status = 0;
        free(body);
        if (status != 200)
            usleep(100000);
    }
    assert_int_equal(status, 200);
    char *text = swt_slurp(log);
    const json_t *rep = json_object_get(boot, "report");
    const json_t *tok = json_object_get(rep, "kv_cache_tokens");
    if (json_is_integer(tok)) {
        char c[32], want[96];
        fmt_count((int64_t)json_integer_value(tok), c, sizeof(c));
        snprintf(want, sizeof(want), "GPU KV cache size: %s tokens", c);
        if (!strstr(text, want))
            fail_msg("%s: no '%s' in the log:\n%.3000s", ref, want, text);
    }
    const json_t *conc = json_object_get(rep, "max_concurrency");
    if (json_is_number(conc)) {
        char want[64];
        snprintf(want, sizeof(want), "per request: %.2fx", json_number_value(conc));
        if (!strstr(text, want))
            fail_msg("%s: no '%s' in the log:\n%.3000s", ref, want, text);
    }
    free(text);
    if (runtime_oom) {
        /* a short request passes; the worst-case one (995 prompt tokens by the sim's count:
         * 3,952 bytes + 4 for the message + 3 for the reply, max_tokens 261,149) kills it */
        char *body = NULL;
        assert_int_equal(swl_http(port, "POST", "/v1/chat/completions",
                                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                                  "\"max_tokens\":8}",
                                  60, &status, &body),
                         0);
        free(body);
        assert_int_equal(status, 200);
        char *big = malloc(3952 + 200);
        int k = snprintf(big, 200, "{\"messages\":[{\"role\":\"user\",\"content\":\"");
        memset(big + k, 'a', 3952);
        snprintf(big + k + 3952, 200, "\"}],\"max_tokens\":261149}");
        body = NULL;
        assert_int_equal(swl_http(port, "POST", "/v1/chat/completions", big, 60, &status, &body),
                         0);
        free(big);
        free(body);
        assert_int_equal(status, 500);
        assert_int_equal(reap_within(pid, 20), 0); /* vLLM's API server exits 0 */
        text = swt_slurp(log);
        assert_non_null(strstr(text, "Tried to allocate"));
        assert_non_null(strstr(text, "0 bytes is free"));
        free(text);
        classify(log, "oom", "runtime");
        return;
    }
    kill(pid, SIGTERM);
    assert_int_equal(reap_within(pid, 20), 0);
}

static void test_replay(void **state)
{
    struct fx *f = *state;
    json_t *seed = json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 0, NULL);
    assert_non_null(seed);
    size_t i;
    json_t *b;
    int replayed = 0, kinds[6] = {0};
    json_array_foreach(json_object_get(seed, "boots"), i, b)
    {
        if (strcmp(json_string_value(json_object_get(b, "endpoint")), "frank-primary"))
            continue;
        const char *ref = json_string_value(json_object_get(b, "ref"));
        const json_t *fl = json_object_get(b, "failure");
        const char *cls = json_string_value(json_object_get(fl, "class"));
        const char *phase = json_string_value(json_object_get(fl, "phase"));
        char sets[12][96];
        int ns = 0;
        bool shaped = sets_of(b, sets, &ns);
        bool precise = json_is_true(json_object_get(
            json_object_get(json_object_get(b, "shape"), "flags"), "expert_precise_memory"));
        const char *argv[48];
        int k = 0;
        argv[k++] = swt_bin();
        argv[k++] = "sim";
        argv[k++] = "frank-primary";
        argv[k++] = "--fleet";
        /* a boot without a shape (the bad path): the operator's fleet as written, whose payload
         * path is not on this machine */
        argv[k++] = !shaped ? swt_src("examples/operator.yaml") : precise ? f->precise : f->fleet;
        argv[k++] = "--ledger";
        argv[k++] = f->led;
        argv[k++] = "--load-time";
        argv[k++] = "0";
        for (int s = 0; s < ns; s++) {
            argv[k++] = "--set";
            argv[k++] = sets[s];
        }
        argv[k] = NULL;
        print_message("replay %s (%s/%s)\n", ref, cls ? cls : "ok", phase ? phase : "-");
        replayed++;
        if (!cls || (!strcmp(cls, "oom") && !strcmp(phase, "runtime"))) {
            replay_serves(f, ref, argv, b, cls != NULL);
            kinds[cls ? 1 : 0]++;
            continue;
        }
        struct swt_run r;
        assert_int_equal(swt_run(argv, NULL, 60, &r), 0);
        char log[4200];
        snprintf(log, sizeof(log), "%s/%s.log", f->dir, ref);
        swt_write_str(log, r.err);
        if (r.status != 1)
            fail_msg("%s: exit %d, want 1:\n%.3000s", ref, r.status, r.err);
        if (!strcmp(cls, "oom") && !strcmp(phase, "graph_capture")) {
            assert_non_null(strstr(r.err, "Capturing CUDA graphs"));
            assert_non_null(strstr(r.err, "Tried to allocate 76.00 MiB"));
            assert_non_null(strstr(r.err, "0 bytes is free"));
            kinds[2]++;
        } else if (!strcmp(cls, "oom") && !strcmp(phase, "kv_alloc")) {
            char want[96];
            const json_t *fg = json_object_get(fl, "free_gib");
            snprintf(want, sizeof(want), "of which %.2f GiB is free", json_number_value(fg));
            if (!strstr(r.err, want))
                fail_msg("%s: no '%s':\n%.3000s", ref, want, r.err);
            kinds[3]++;
        } else if (!strcmp(cls, "compile_constraint")) {
            assert_non_null(strstr(r.err, "Constraints violated (L['query_start_loc'].size()[0])"));
            kinds[4]++;
        } else if (!strcmp(cls, "bad_path")) {
            assert_non_null(strstr(r.err, "Repo id must be in the form"));
            kinds[5]++;
        }
        swt_run_free(&r);
        classify(log, cls, phase);
    }
    json_decref(seed);
    /* every kind the seed records was replayed: 6 that serve, the runtime death, 2 capture
     * deaths, 2 KV allocation failures, 3 compile constraints, the bad path */
    assert_int_equal(replayed, 15);
    assert_int_equal(kinds[0], 6);
    assert_int_equal(kinds[1], 1);
    assert_int_equal(kinds[2], 2);
    assert_int_equal(kinds[3], 2);
    assert_int_equal(kinds[4], 3);
    assert_int_equal(kinds[5], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replay, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
