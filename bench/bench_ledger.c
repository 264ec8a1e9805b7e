/*
 * bench_ledger: what recording and reading the ledger costs.
 *   1. insert rate: boots/s, one transaction per boot as `slipway up` and `bootlog record` do,
 *      each with a realistic vLLM report + prediction (~1.6 KB of JSON each), a failure on one
 *      boot in five, an 8 KiB log excerpt and a note; synchronous=FULL (what the ledger uses)
 *      and synchronous=NORMAL for comparison;
 *   2. the query calibrate makes, all boots of one endpoint in full (shape, report, predicted,
 *      failure, excerpt, usage, notes), and the summary list, at 10,000 boots of that endpoint
 *      (plus 2,000 of another, which the filter must skip); the gates' known-bad query; export.
 * Usage: bench_ledger [DIR] [N_FULL_SYNC]   (DIR default $TMPDIR or /tmp; the file system
 *        matters for FULL: an fsync per commit)
 */
#include <slipway/ledger.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *report(int i)
{
    /* the fields engine/vllm prints in its report, with group detail */
    return json_pack(
        "{s:I,s:f,s:I,s:i,s:I,s:s,s:[{s:s,s:i,s:i,s:I,s:I},{s:s,s:i,s:i,s:I,s:I},"
        "{s:s,s:i,s:i,s:I,s:I}],s:{s:f,s:f,s:f,s:f,s:f},s:i,s:f}",
        "kv_cache_tokens", (json_int_t)(792069 + i), "max_concurrency", 3.02, "num_gpu_blocks",
        (json_int_t)(24752 + i), "block_size", 32, "available_kv_bytes", (json_int_t)6100000000LL,
        "vllm_version", "0.30.0+fork", "groups", "kind", "full_attention", "layers", 12,
        "page_bytes", 32768, "bytes", (json_int_t)1524000000LL, "blocks", (json_int_t)24752, "kind",
        "gated_delta_net", "layers", 36, "page_bytes", 98304, "bytes", (json_int_t)4576000000LL,
        "blocks", (json_int_t)24752, "kind", "padding", "layers", 0, "page_bytes", 0, "bytes",
        (json_int_t)0, "blocks", (json_int_t)0, "budget_gib", "weights", 6.28, "kv_pool", 5.68,
        "cuda_graphs", 0.55, "expert_arena", 14.30, "non_torch", 1.45, "expert_arena_slots", 6248,
        "expert_slot_mib", 2.344);
}

static json_t *shape(int i)
{
    static const int ctx[] = {262144, 245760, 241664, 237568, 200704};
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:i,s:i,s:i,s:s,s:I,s:i,s:{s:s,s:b}}", "engine", "vllm",
                     "engine_profile", "tiered-expert-offload", "model", "name",
                     "Qwen3.8-Flash-Next-Uncensored-FP8", "quant", "fp8", "tp", 2, "ctx",
                     ctx[i % 5], "slots", 3 + (i / 5) % 3, "kv_dtype", i % 2 ? "fp8" : "auto",
                     "kv_bytes", (json_int_t)(6100000000LL + (i % 10) * 100000000LL), "mnbt",
                     1024 << (i % 2), "flags", "moe_gather", "32x64", "expert_precise_memory",
                     (i % 7) == 0);
}

static char excerpt[8192];

static int record(struct sw_ledger *l, const char *ep, int i, struct sw_err *e)
{
    json_t *s = shape(i), *r = report(i), *p = report(i + 1);
    json_t *f = i % 5 == 4 ? json_pack("{s:s,s:s,s:s,s:i}", "class", "oom", "phase",
                                       "graph_capture", "message",
                                       "Tried to allocate 76.00 MiB ... 0 bytes free", "line", 4120)
                           : NULL;
    struct sw_ledger_boot b = {.endpoint = ep,
                               .shape = s,
                               .engine = "vllm",
                               .engine_version = "0.30.0",
                               .started_at = 1790812800 + i,
                               .ended_at = 1790813220 + i,
                               .duration_ms = 420000,
                               .predicted = p,
                               .report = r,
                               .failure = f,
                               .log_excerpt = excerpt,
                               .source = "bench",
                               .note = "bench boot"};
    int rc = sw_ledger_record_boot(l, &b, NULL, e);
    json_decref(s);
    json_decref(r);
    json_decref(p);
    json_decref(f);
    return rc;
}

static double insert_run(const char *path, bool normal, int n, const char *ep, int from)
{
    struct sw_ledger l;
    struct sw_err e;
    struct sw_ledger_open_opts o = {.create = true, .sync_normal = normal};
    if (sw_ledger_open(&l, path, &o, &e)) {
        fprintf(stderr, "open: %s\n", e.msg);
        exit(1);
    }
    double t0 = sw_now_s();
    for (int i = 0; i < n; i++) {
        if (record(&l, ep, from + i, &e)) {
            fprintf(stderr, "record: %s\n", e.msg);
            exit(1);
        }
    }
    double dt = sw_now_s() - t0;
    sw_ledger_close(&l);
    return n / dt;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return v[n / 2];
}

int main(int argc, char **argv)
{
    sw_core_init();
    const char *tmp = getenv("TMPDIR");
    const char *dir = argc > 1 ? argv[1] : (tmp && *tmp ? tmp : "/tmp");
    int64_t n_arg = 2000;
    if (argc > 2 && (sw_parse_i64(argv[2], &n_arg, NULL) || n_arg < 1 || n_arg > 10000)) {
        fprintf(stderr, "usage: bench_ledger [DIR] [N_FULL_SYNC 1..10000]\n");
        return 2;
    }
    int n_full = (int)n_arg;
    for (size_t i = 0; i + 100 < sizeof(excerpt); i += 100)
        snprintf(excerpt + i, sizeof(excerpt) - i, "%-99s\n",
                 "(EngineCore_DP0 pid=123) INFO [gpu_worker.py:298] Available KV cache memory");
    char full[4096], normal[4096];
    snprintf(full, sizeof(full), "%s/bench_ledger.%d.sqlite", dir, (int)getpid());
    snprintf(normal, sizeof(normal), "%s/bench_ledger_normal.%d.sqlite", dir, (int)getpid());

    printf("bench_ledger in %s (SQLite %s)\n", dir, "3.40");
    double r_full = insert_run(full, false, n_full, "frank-primary", 0);
    printf("insert, synchronous=FULL:   %8.0f boots/s (%d boots, one transaction each)\n", r_full,
           n_full);
    double r_norm = insert_run(normal, true, n_full, "frank-primary", 0);
    printf("insert, synchronous=NORMAL: %8.0f boots/s (%d boots; for comparison only)\n", r_norm,
           n_full);

    /* fill to 10,000 boots of the endpoint + 2,000 of another (NORMAL: the fill is not what is
     * measured) */
    insert_run(full, true, 10000 - n_full, "frank-primary", n_full);
    insert_run(full, true, 2000, "frank-small", 10000);

    struct sw_ledger l;
    struct sw_err e;
    if (sw_ledger_open(&l, full, NULL, &e)) {
        fprintf(stderr, "open: %s\n", e.msg);
        return 1;
    }
    double t[5];
    size_t rows = 0;
    for (int k = 0; k < 5; k++) {
        struct sw_ledger_query q = {.endpoint = "frank-primary", .full = true};
        json_t *out = NULL;
        double t0 = sw_now_s();
        if (sw_ledger_boots(&l, &q, &out, &e)) {
            fprintf(stderr, "query: %s\n", e.msg);
            return 1;
        }
        t[k] = sw_now_s() - t0;
        rows = json_array_size(out);
        json_decref(out);
    }
    double q_full = median(t, 5);
    printf("query all boots of an endpoint, full:    %7.1f ms for %zu boots (%.1f us/boot), "
           "median of 5\n",
           q_full * 1e3, rows, q_full * 1e6 / (double)rows);
    for (int k = 0; k < 5; k++) {
        struct sw_ledger_query q = {.endpoint = "frank-primary"};
        json_t *out = NULL;
        double t0 = sw_now_s();
        sw_ledger_boots(&l, &q, &out, &e);
        t[k] = sw_now_s() - t0;
        rows = json_array_size(out);
        json_decref(out);
    }
    double q_sum = median(t, 5);
    printf("query all boots of an endpoint, summary: %7.1f ms for %zu boots\n", q_sum * 1e3, rows);
    for (int k = 0; k < 5; k++) {
        json_t *out = NULL;
        double t0 = sw_now_s();
        sw_ledger_known_bad(&l, "frank-primary", &out, &e);
        t[k] = sw_now_s() - t0;
        rows = json_array_size(json_object_get(out, "shapes"));
        json_decref(out);
    }
    printf("known-bad shapes and rules:              %7.1f ms (%zu failed shapes)\n",
           median(t, 5) * 1e3, rows);
    json_t *x = NULL;
    double t0 = sw_now_s();
    sw_ledger_export(&l, NULL, &x, &e);
    double tx = sw_now_s() - t0;
    printf("export everything:                       %7.1f ms (%zu boots)\n", tx * 1e3,
           json_array_size(json_object_get(x, "boots")));
    json_decref(x);
    sw_ledger_close(&l);
    struct stat st;
    if (stat(full, &st) == 0)
        printf("file: %.1f MiB for 12,000 boots (%.1f KiB/boot with its 8 KiB excerpt)\n",
               (double)st.st_size / 1048576.0, (double)st.st_size / 1024.0 / 12000.0);
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3 && !getenv("BENCH_LEDGER_KEEP"); i++) {
        char p[4200];
        snprintf(p, sizeof(p), "%s%s", full, suffix[i]);
        unlink(p);
        snprintf(p, sizeof(p), "%s%s", normal, suffix[i]);
        unlink(p);
    }
    return 0;
}
