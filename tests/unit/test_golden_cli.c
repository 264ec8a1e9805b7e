/*
 * Golden outputs of the planning verbs: `slipway plan` (fleet, llama.cpp, vLLM, SGLang argv),
 * `slipway check` against the seed ledger and `slipway up --dry-run`, run through the binary from
 * the source directory (so paths print as the README shows them) and compared byte for byte with
 * tests/data/golden/<case>.txt (exit code, stdout, stderr). A refactor of the plan, the engine
 * adapters or the gates that changes any figure or line fails here, naming the case and the first
 * differing line.
 *
 * The temporary ledger's path prints as @LEDGER@. After an intended change, regenerate with
 * SW_GOLDEN_UPDATE=1 ctest -R test_golden_cli and review the diff of tests/data/golden/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VLLM_MODEL   "tests/data/vllm/models/frank-primary-inferred"
#define VLLM_PROFILE "tests/data/vllm/frank-expert-offload-calibrated.json"
#define VLLM_ARGV                                                                                  \
    "--", "vllm", "serve", VLLM_MODEL, "-tp", "2", "--max-model-len", "200704",                    \
        "--kv-cache-dtype", "fp8", "--kv-cache-memory-bytes", "3146000000",                        \
        "--max-num-batched-tokens", "1024"
#define SGLANG_ARGV                                                                                \
    "--", "python", "-m", "sglang.launch_server", "--model-path", VLLM_MODEL, "--tp", "2",         \
        "--kv-cache-dtype", "fp8_e4m3", "--max-total-tokens", "606208"
#define DECL        "tests/data/golden/qwen35-9b-decl.json"
#define GOLDEN_HOME "/nonexistent/slipway-golden-home"
#define DECL_FLEET  "tests/data/golden/local-declared.yaml"

struct golden {
    const char *name;
    const char *argv[40]; /* after the binary; "@LEDGER@" is the temporary ledger */
};

static const struct golden cases[] = {
    {"plan-operator", {"plan", "--fleet", "examples/operator.yaml"}},
    {"plan-operator-json", {"plan", "--fleet", "examples/operator.yaml", "--json"}},
    {"plan-operator-frank-small", {"plan", "--fleet", "examples/operator.yaml", "frank-small"}},
    {"plan-local", {"plan", "--fleet", "examples/local.yaml"}},
    {"plan-local-json", {"plan", "--fleet", "examples/local.yaml", "--json"}},
    {"check-operator", {"check", "--fleet", "examples/operator.yaml", "--ledger", "@LEDGER@"}},
    {"check-operator-json",
     {"check", "--fleet", "examples/operator.yaml", "--ledger", "@LEDGER@", "--json"}},
    {"check-local-json",
     {"check", "--fleet", "examples/local.yaml", "--ledger", "@LEDGER@", "--json"}},
    {"plan-vllm", {"plan", "--engine", "vllm", VLLM_ARGV}},
    {"plan-vllm-json", {"plan", "--engine", "vllm", "--json", VLLM_ARGV}},
    {"plan-vllm-profile", {"plan", "--engine", "vllm", "--profile", VLLM_PROFILE, VLLM_ARGV}},
    {"plan-vllm-profile-json",
     {"plan", "--engine", "vllm", "--json", "--profile", VLLM_PROFILE, VLLM_ARGV}},
    {"plan-sglang", {"plan", "--engine", "sglang", SGLANG_ARGV}},
    {"plan-sglang-json", {"plan", "--engine", "sglang", "--json", SGLANG_ARGV}},
    {"plan-llamacpp-decl",
     {"plan", "--engine", "llama.cpp", "--arch", DECL, "--gpu", "CUDA0=24GiB", "--", "llama-server",
      "-m", "q.gguf", "-c", "131072", "-np", "1", "-ctv", "q8_0"}},
    {"plan-llamacpp-decl-json",
     {"plan", "--engine", "llama.cpp", "--json", "--arch", DECL, "--", "llama-server", "-m",
      "q.gguf", "-c", "135168"}},
    {"up-dry-run-verbatim",
     {"up", "--dry-run", "--", "./llama-server", "-m", "tests/data/golden/absent.gguf", "-c",
      "8192", "-np", "2", "-b", "1024"}},
    {"up-dry-run-verbatim-json",
     {"up", "--dry-run", "--json", "--", "./llama-server", "-m", "tests/data/golden/absent.gguf",
      "--port", "18080", "-fa", "on"}},
    {"plan-declared-fleet", {"plan", "--fleet", DECL_FLEET}},
    {"plan-declared-fleet-json", {"plan", "--fleet", DECL_FLEET, "--json"}},
    {"check-declared-fleet-json",
     {"check", "--fleet", DECL_FLEET, "--ledger", "@LEDGER@", "--json"}},
    {"up-dry-run-fleet", {"up", "--dry-run", "--fleet", DECL_FLEET}},
    {"up-dry-run-fleet-json", {"up", "--dry-run", "--json", "--fleet", DECL_FLEET}},
};

static char *dir;
static char ledger[4096];

static int setup(void **state)
{
    (void)state;
    dir = swt_tmpdir();
    snprintf(ledger, sizeof(ledger), "%s", swt_join(dir, "seed.sqlite"));
    /* The examples name payloads under ~: a fixed HOME that cannot exist keeps the outputs the same
     * for every user, whether or not scripts/setup.sh wrote the tiny model on this machine. */
    setenv("HOME", GOLDEN_HOME, 1);
    unsetenv("XDG_DATA_HOME");
    unsetenv("SLIPWAY_LEDGER");
    /* waivers are judged on a fixed day, so an example's waiver does not expire under the test */
    setenv("SLIPWAY_TODAY", "2026-12-07", 1);
    if (chdir(swt_src(".")))
        return -1;
    struct swt_run r;
    swt_slipway(&r, "ledger", "import", "tests/data/ledger/seed-boots.json", "--ledger", ledger,
                NULL);
    int st = r.status;
    swt_run_free(&r);
    return st;
}

static int teardown(void **state)
{
    (void)state;
    swt_tmpdir_free(dir);
    return 0;
}

/* s with every occurrence of what replaced by with; caller frees. */
static char *replace_all(const char *s, const char *what, const char *with)
{
    size_t wl = strlen(what), nl = strlen(with), n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + wl, what))
        n++;
    char *out = malloc(strlen(s) + n * nl + 1), *o = out;
    assert_non_null(out);
    for (const char *p = s;;) {
        const char *q = strstr(p, what);
        if (!q) {
            strcpy(o, p);
            break;
        }
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, with, nl);
        o += nl;
        p = q + wl;
    }
    return out;
}

static char *render(const struct swt_run *r)
{
    size_t n = strlen(r->out) + strlen(r->err) + 64;
    char *raw = malloc(n);
    assert_non_null(raw);
    snprintf(raw, n, "exit %d\n--- stdout\n%s--- stderr\n%s", r->status, r->out, r->err);
    char *out = replace_all(raw, ledger, "@LEDGER@");
    free(raw);
    return out;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static void first_difference(const char *name, const char *want, const char *got)
{
    int line = 1;
    const char *a = want, *b = got;
    while (*a && *a == *b) {
        if (*a == '\n')
            line++;
        a++;
        b++;
    }
    const char *ae = strchr(a, '\n'), *be = strchr(b, '\n');
    print_error(
        "%s: differs from tests/data/golden/%s.txt at line %d\n  want: %.*s\n  got:  %.*s\n", name,
        name, line, (int)(ae ? ae - a : (long)strlen(a)), a, (int)(be ? be - b : (long)strlen(b)),
        b);
}

static void test_golden(void **state)
{
    (void)state;
    bool update = getenv("SW_GOLDEN_UPDATE") && *getenv("SW_GOLDEN_UPDATE");
    int failed = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *argv[48];
        size_t k = 0;
        argv[k++] = swt_bin();
        for (size_t i = 0; cases[c].argv[i]; i++)
            argv[k++] = strcmp(cases[c].argv[i], "@LEDGER@") ? cases[c].argv[i] : ledger;
        argv[k] = NULL;
        struct swt_run r;
        assert_int_equal(swt_run(argv, NULL, 120, &r), 0);
        char *got = render(&r);
        char path[4200];
        snprintf(path, sizeof(path), "%s", swt_src("tests/data/golden/"));
        strncat(path, cases[c].name, sizeof(path) - strlen(path) - 5);
        strcat(path, ".txt");
        if (update) {
            swt_write_str(path, got);
        } else {
            char *want = slurp(path);
            if (!want) {
                print_error("%s: no %s (SW_GOLDEN_UPDATE=1 writes it)\n", cases[c].name, path);
                failed++;
            } else if (strcmp(want, got)) {
                first_difference(cases[c].name, want, got);
                failed++;
            }
            free(want);
        }
        free(got);
        swt_run_free(&r);
    }
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
