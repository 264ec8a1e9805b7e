/*
 * engine/llamacpp boot-log parser: data-driven over the real llama-server logs captured under
 * tests/data/bootlogs/llamacpp/ (NAME.log, the command in NAME.cmd, what must be read in
 * NAME.expect, written by hand from the log), plus the public boot lines of older builds in
 * ../shared/data/bootlogs and the edge cases a log can throw (prefixes, CRLF, binary, a lost
 * tail, a huge line), and an allocation-failure sweep.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/engine.h>

#include "swtest.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every key of `want` must be in `got` with an equal value; arrays must have the same length and
 * match element-wise (recursively, with the same subset rule for objects). */
static bool subset(const json_t *want, const json_t *got, char *path, size_t pn)
{
    if (json_is_object(want)) {
        const char *k;
        const json_t *v;
        if (!json_is_object(got))
            return false;
        json_object_foreach((json_t *)want, k, v)
        {
            size_t l = strlen(path);
            snprintf(path + l, pn - l, ".%s", k);
            if (!subset(v, json_object_get(got, k), path, pn))
                return false;
            path[l] = '\0';
        }
        return true;
    }
    if (json_is_array(want)) {
        if (!json_is_array(got) || json_array_size(want) != json_array_size(got))
            return false;
        for (size_t i = 0; i < json_array_size(want); i++) {
            size_t l = strlen(path);
            snprintf(path + l, pn - l, "[%zu]", i);
            if (!subset(json_array_get(want, i), json_array_get(got, i), path, pn))
                return false;
            path[l] = '\0';
        }
        return true;
    }
    if (json_is_null(want))
        return !got || json_is_null(got);
    return got && json_equal((json_t *)want, (json_t *)got);
}

static json_t *parse_file(const char *path, const struct sw_bootlog_hints *h,
                          struct sw_boot_status *st)
{
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    char *text = NULL;
    size_t len = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(path, SW_BOOTLOG_MAX, &text, &len, &e), 0);
    json_t *o = NULL;
    assert_int_equal(eng->bootlog(text, len, path, h, &o, st, &e), 0);
    sw_free(text);
    return o;
}

static void check_case(const char *dir, const char *name)
{
    char path[4096], where[512] = "";
    snprintf(path, sizeof(path), "%s/%s.expect", dir, name);
    struct sw_err e;
    json_t *want = sw_json_load_file(path, 1 << 20, &e);
    if (!want)
        fail_msg("%s: %s", path, e.msg);
    snprintf(path, sizeof(path), "%s/%s.log", dir, name);
    struct sw_boot_status st;
    json_t *got = parse_file(path, NULL, &st);

    const json_t *w = json_object_get(want, "booted");
    if (w && json_is_true(w) != json_is_true(json_object_get(got, "booted")))
        fail_msg("%s: booted: want %d", name, json_is_true(w));
    w = json_object_get(want, "phase");
    if (w && !json_equal((json_t *)w, json_object_get(got, "phase")))
        fail_msg("%s: phase: want %s got %s", name, json_string_value(w),
                 json_string_value(json_object_get(got, "phase")));
    w = json_object_get(want, "failure");
    if (w && !subset(w, json_object_get(got, "failure"), where, sizeof(where))) {
        char *dump = json_dumps(json_object_get(got, "failure"), 0);
        fail_msg("%s: failure%s: got %s", name, where, dump);
    }
    w = json_object_get(want, "report");
    where[0] = '\0';
    if (w && !subset(w, json_object_get(got, "report"), where, sizeof(where))) {
        char *dump = json_dumps(json_object_get(got, "report"), 0);
        fail_msg("%s: report%s differs: got %s", name, where, dump);
    }
    /* failure is set exactly when failed */
    assert_true(st.failed == json_is_object(json_object_get(got, "failure")));
    json_decref(got);

    w = json_object_get(want, "hints");
    if (w) {
        struct sw_bootlog_hints h = {0};
        h.exited = json_is_true(json_object_get(w, "exited"));
        h.exit_code = (int)json_integer_value(json_object_get(w, "exit_code"));
        h.exit_signal = (int)json_integer_value(json_object_get(w, "exit_signal"));
        got = parse_file(path, &h, &st);
        where[0] = '\0';
        if (!subset(json_object_get(want, "failure_with_hints"), json_object_get(got, "failure"),
                    where, sizeof(where)))
            fail_msg("%s: failure with hints%s differs", name, where);
        json_decref(got);
    }
    json_decref(want);
}

static void test_captured_logs(void **state)
{
    const char *dir = swt_src("tests/data/bootlogs/llamacpp");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof(dirbuf), "%s", dir);
    DIR *d = opendir(dirbuf);
    assert_non_null(d);
    struct dirent *de;
    int n = 0, failures = 0, oom = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 8 || strcmp(de->d_name + l - 7, ".expect"))
            continue;
        char name[256];
        snprintf(name, sizeof(name), "%.*s", (int)(l - 7), de->d_name);
        check_case(dirbuf, name);
        n++;
        failures += strncmp(name, "ok_", 3) != 0;
        oom += !strncmp(name, "oom_", 4);
    }
    closedir(d);
    /* the set itself is part of the contract: every class issue 3 names has a real log */
    assert_true(n >= 29);
    assert_true(failures >= 20);
    assert_true(oom >= 6);
}

/* Each failure class the parser knows must be exercised by at least one captured log. */
static void test_every_class_captured(void **state)
{
    static const char *const need[] = {"oom",      "bad_payload", "missing_payload",
                                       "bad_flag", "port_in_use", "unsupported_arch",
                                       "crash"};
    static const char *const need_phase[] = {"load", "kv_alloc", "compute_alloc", "runtime"};
    static const char *const need_kind[] = {"html", "lfs_pointer", "truncated", "bad_magic"};
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "cat %s/*.expect", swt_src("tests/data/bootlogs/llamacpp"));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 22);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        assert_int_equal(sw_buf_append(&b, chunk, n), 0);
    pclose(p);
    const char *all = sw_buf_cstr(&b);
    char pat[128];
    for (size_t i = 0; i < SW_ARRAY_LEN(need); i++) {
        snprintf(pat, sizeof(pat), "\"class\": \"%s\"", need[i]);
        if (!strstr(all, pat))
            fail_msg("no captured log for class %s", need[i]);
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(need_phase); i++) {
        snprintf(pat, sizeof(pat), "\"class\": \"oom\", \"phase\": \"%s\"", need_phase[i]);
        if (!strstr(all, pat))
            fail_msg("no captured oom log in phase %s", need_phase[i]);
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(need_kind); i++) {
        snprintf(pat, sizeof(pat), "\"payload_kind\": \"%s\"", need_kind[i]);
        if (!strstr(all, pat))
            fail_msg("no captured log for payload kind %s", need_kind[i]);
    }
    sw_buf_free(&b);
}

static void parse_str(const char *s, struct sw_bootlog_report *r, struct sw_boot_status *st,
                      const struct sw_bootlog_hints *h)
{
    assert_int_equal(sw_engine_llamacpp_bootlog(s, strlen(s), h, r, st), 0);
}

/* Lines from the public boot logs in ../shared/data/bootlogs/points.jsonl (other builds). */
static void test_shared_points(void **state)
{
    struct sw_err e;
    char *text = NULL;
    size_t len;
    const char *points = swt_shared("data/bootlogs/points.jsonl");
    swt_need(access(points, R_OK) == 0, "the shared boot-log points %s (SW_SHARED_DIR)", points);
    assert_int_equal(sw_read_file(points, 1 << 24, &text, &len, &e), 0);
    int checked = 0;
    for (char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
        nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        json_t *pt = sw_json_parse(l, strlen(l), "points.jsonl", &e);
        assert_non_null(pt);
        const char *engine = json_string_value(json_object_get(pt, "engine"));
        if (!engine || strcmp(engine, "llama.cpp")) {
            json_decref(pt);
            continue;
        }
        struct sw_buf b;
        sw_buf_init(&b, 1 << 20);
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(pt, "raw"), i, r)
        {
            sw_buf_puts(&b, json_string_value(r));
            sw_buf_putc(&b, '\n');
        }
        struct sw_bootlog_report rep;
        struct sw_boot_status st;
        parse_str(sw_buf_cstr(&b), &rep, &st, NULL);
        const json_t *pr = json_object_get(pt, "printed");
        /* where the record prints a single KV cache with cells, it must be read exactly */
        const json_t *cells = json_object_get(pr, "cells");
        const json_t *kmib = json_object_get(pr, "k_mib");
        if (json_is_integer(cells) && rep.n_kv == 1) {
            assert_int_equal(rep.kv[0].cells, json_integer_value(cells));
            checked++;
        }
        if (json_is_number(kmib) && rep.n_kv >= 1) {
            double want = json_number_value(kmib) * 1048576.0;
            assert_true(rep.kv[0].k_bytes >= (int64_t)want - 1 &&
                        rep.kv[0].k_bytes <= (int64_t)want + 1);
            checked++;
        }
        assert_false(st.failed);
        sw_buf_free(&b);
        json_decref(pt);
    }
    sw_free(text);
    assert_true(checked >= 3);
}

static void test_old_formats(void **state)
{
    struct sw_bootlog_report r;
    struct sw_boot_status st;
    /* build 4198 (ggml-org/ci pythia log) */
    parse_str("0.00.747.743 I llm_load_tensors:        CUDA0 model buffer size =  5049.71 MiB\n"
              "0.00.747.744 I llm_load_tensors:          CPU model buffer size =   245.62 MiB\n"
              "0.01.648.580 I llama_new_context_with_model: n_ctx         = 2048\n"
              "0.01.649.933 I llama_new_context_with_model: KV self size  =  640.00 MiB, K (f16):"
              "  320.00 MiB, V (f16):  320.00 MiB\n"
              "0.01.661.489 I llama_new_context_with_model:      CUDA0 compute buffer size =   "
              "162.00 MiB\n"
              "0.01.661.499 I llama_new_context_with_model:  CUDA_Host compute buffer size =     "
              "9.01 MiB\n",
              &r, &st, NULL);
    assert_int_equal(r.n_ctx, 2048);
    assert_int_equal(r.n_kv, 1);
    assert_int_equal(r.kv[0].cells, 2048);
    assert_int_equal(r.kv[0].k_bytes, 320 * 1048576);
    assert_int_equal(r.model_bytes, 5295004713 + 257551237); /* 5049.71 + 245.62 MiB */
    assert_int_equal(r.model_lines, 2);
    assert_int_equal(r.model_prec, 2 * 5243);
    assert_int_equal(r.compute_lines, 2);
    /* recurrent line without rs_seq and without R/S on the same line */
    parse_str("llama_memory_recurrent: size = 251.25 MiB (4 cells, 40 layers, 4 seqs)\n", &r, &st,
              NULL);
    assert_true(r.has_recurrent);
    assert_int_equal(r.recurrent.cells, 4);
    assert_int_equal(r.recurrent.layers, 40);
    assert_int_equal(r.recurrent.r_bytes, -1);
    /* no slash in seqs: streams unknown */
    parse_str("llama_kv_cache_unified: size = 272.00 MiB (  4096 cells,  32 layers,  1 seqs), K "
              "(q8_0):  136.00 MiB, V (q8_0):  136.00 MiB\r\n",
              &r, &st, NULL);
    assert_int_equal(r.n_kv, 1);
    assert_int_equal(r.kv[0].streams, -1);
    assert_string_equal(r.kv[0].k_type, "q8_0");
    assert_int_equal(r.kv[0].k_bytes, 136 * 1048576);
}

static void test_prefixes_and_noise(void **state)
{
    struct sw_bootlog_report r;
    struct sw_boot_status st;
    /* journald and docker prefixes, CRLF, NUL bytes, a binary line, an over-long line */
    struct sw_buf b;
    sw_buf_init(&b, 1 << 24);
    sw_buf_puts(&b, "Dec 02 20:38:54 host llama-server[123]: llama_context: n_ctx                 "
                    "= 8192\r\n");
    sw_buf_append(&b, "garbage\0\x01\xff\xfe binary\n", 20);
    for (int i = 0; i < 10000; i++)
        sw_buf_puts(&b, "xxxxxxxxxx");
    sw_buf_puts(&b, "\n2026-12-02T20:38:54.1Z stderr F llama_kv_cache: size =    8.00 MiB (  4096 "
                    "cells,   2 layers,  4/1 seqs), K (f16):    4.00 MiB, V (f16):    4.00 MiB\n");
    sw_buf_puts(&b, "llama_kv_cache: size = 99999999999999999999.00 MiB (1 cells, 1 layers, 1/1 "
                    "seqs), K (f16): 1.00 MiB, V (f16): 1.00 MiB\n");
    sw_buf_puts(&b, "llama_kv_cache: size = 1.00 MiB (1 cells, 1 layers, 1/1 seqs), K (f16): 1.00"
                    "MiB\n");
    assert_int_equal(sw_engine_llamacpp_bootlog(b.data, b.len, NULL, &r, &st), 0);
    assert_int_equal(r.n_ctx, 8192);
    assert_int_equal(r.n_kv, 1); /* the absurd and the cut lines are not KV lines */
    assert_int_equal(r.kv[0].cells, 4096);
    assert_int_equal(r.kv[0].streams, 1);
    assert_false(st.failed);
    assert_false(st.booted);
    assert_int_equal(st.n_lines, 6);
    sw_buf_free(&b);
    /* empty log */
    assert_int_equal(sw_engine_llamacpp_bootlog("", 0, NULL, &r, &st), 0);
    assert_int_equal(st.phase, SW_PHASE_ARGS);
    assert_int_equal(sw_engine_llamacpp_bootlog(NULL, 3, NULL, &r, &st), SW_EINVAL);
}

static void test_draft_context_ignored(void **state)
{
    struct sw_bootlog_report r;
    struct sw_boot_status st;
    parse_str(
        "load_tensors:   CPU_Mapped model buffer size =     4.52 MiB\n"
        "llama_context: constructing llama_context\n"
        "llama_context: n_ctx                 = 4096\n"
        "llama_context:        CPU  output buffer size =     0.49 MiB\n"
        "llama_kv_cache: size =    8.00 MiB (  4096 cells,   2 layers,  1/1 seqs), K (f16):   "
        " 4.00 MiB, V (f16):    4.00 MiB\n"
        "sched_reserve:        CPU compute buffer size =     7.51 MiB\n"
        "load_tensors:   CPU_Mapped model buffer size =     1.00 MiB\n"
        "llama_context: constructing llama_context\n"
        "llama_context: n_ctx                 = 1024\n"
        "llama_kv_cache: size =    2.00 MiB (  1024 cells,   2 layers,  1/1 seqs), K (f16):   "
        " 1.00 MiB, V (f16):    1.00 MiB\n"
        "sched_reserve:        CPU compute buffer size =     3.00 MiB\n"
        "srv  llama_server: model loaded\n",
        &r, &st, NULL);
    assert_int_equal(r.n_ctx, 4096);
    assert_int_equal(r.n_kv, 1);
    assert_int_equal(r.model_lines, 1);
    assert_int_equal(r.compute_lines, 1);
    assert_int_equal(r.output_bytes, 513802); /* 0.49 x 2^20 = 513802.24 */
    assert_true(st.booted);
}

static void test_hints(void **state)
{
    struct sw_bootlog_report r;
    struct sw_boot_status st;
    const char *loading = "srv    load_model: loading model 'x.gguf'\n"
                          "llama_model_loader: loaded meta data\n";
    struct sw_bootlog_hints h = {.exited = true, .exit_code = -1, .exit_signal = 9};
    parse_str(loading, &r, &st, &h);
    assert_true(st.failed);
    assert_int_equal(st.failure.cls, SW_BOOT_CRASH);
    assert_int_equal(st.failure.phase, SW_PHASE_LOAD);
    assert_non_null(strstr(st.failure.message, "signal 9"));

    /* a clean stop after serving is not a failure */
    h.exit_signal = 0;
    h.exit_code = 0;
    parse_str("srv  llama_server: model loaded\nsrv    operator(): cleaning up before exit...\n",
              &r, &st, &h);
    assert_false(st.failed);
    assert_true(st.booted);

    /* exit while loading with a lost tail: the payload says why */
    char *dir = swt_tmpdir();
    const char *lfs = swt_join(dir, "m.gguf");
    swt_write_str(lfs, "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n");
    h.exit_code = 1;
    h.payload = lfs;
    parse_str(loading, &r, &st, &h);
    assert_int_equal(st.failure.cls, SW_BOOT_BAD_PAYLOAD);
    assert_int_equal(st.failure.payload_kind, SW_PAYLOAD_LFS_POINTER);
    h.payload = swt_join(dir, "absent.gguf");
    parse_str(loading, &r, &st, &h);
    assert_int_equal(st.failure.cls, SW_BOOT_MISSING_PAYLOAD);
    /* a GGUF that ends inside its header: the reader says truncated */
    const char *cut = swt_join(dir, "cut.gguf");
    static const unsigned char hdr[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1, 0, 0, 0,
                                        0,   0,   0,   0,   2, 0, 0, 0, 0, 0, 0, 0};
    swt_write(cut, hdr, sizeof(hdr));
    h.payload = cut;
    parse_str(loading, &r, &st, &h);
    assert_int_equal(st.failure.cls, SW_BOOT_BAD_PAYLOAD);
    assert_int_equal(st.failure.payload_kind, SW_PAYLOAD_TRUNCATED);
    /* a whole GGUF of an architecture the pinned llama.cpp does not know: llama-server's
     * "unknown model architecture" line is what an exit may drop from its log */
    const char *zl = swt_join(dir, "zlama.gguf");
    static const unsigned char zhdr[] = {
        'G', 'G', 'U', 'F', 3,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   1,   0,
        0,   0,   0,   0,   0,   0,   20,  0,   0,   0,   0,   0,   0,   0,   'g', 'e', 'n', 'e',
        'r', 'a', 'l', '.', 'a', 'r', 'c', 'h', 'i', 't', 'e', 'c', 't', 'u', 'r', 'e', 8,   0,
        0,   0,   5,   0,   0,   0,   0,   0,   0,   0,   'z', 'l', 'a', 'm', 'a'};
    swt_write(zl, zhdr, sizeof(zhdr));
    h.payload = zl;
    parse_str(loading, &r, &st, &h);
    assert_true(st.failed);
    assert_int_equal(st.failure.cls, SW_BOOT_UNSUPPORTED);
    assert_int_equal(st.failure.phase, SW_PHASE_LOAD);
    assert_non_null(strstr(st.failure.message, "'zlama'"));
    /* the file, sniffed, overrides what 4 bytes in the log suggested */
    const char *xml = swt_join(dir, "x.gguf");
    swt_write_str(xml, "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>");
    h.payload = xml;
    parse_str("gguf_init_from_reader: invalid magic characters: '<?xm', expected 'GGUF'\n", &r, &st,
              &h);
    assert_int_equal(st.failure.cls, SW_BOOT_BAD_PAYLOAD);
    assert_int_equal(st.failure.payload_kind, SW_PAYLOAD_HTML);
    assert_non_null(strstr(st.failure.message, "XML"));
    swt_tmpdir_free(dir);
}

struct bootlog_run {
    const struct sw_engine *eng;
    const char *text;
    size_t len;
};

/* The table's bootlog on a real hybrid boot log; a failed run leaves no object behind. */
static int bootlog_once(void *arg)
{
    const struct bootlog_run *b = arg;
    json_t *o = NULL;
    struct sw_err e;
    int rc = b->eng->bootlog(b->text, b->len, "x", NULL, &o, NULL, &e);
    if (rc == 0)
        assert_non_null(o);
    else
        assert_null(o);
    json_decref(o);
    return rc;
}

static void test_alloc_failures(void **state)
{
    const struct sw_engine *eng = sw_engine_find("llamacpp");
    char *text = NULL;
    size_t len;
    struct sw_err e;
    assert_int_equal(sw_read_file(swt_src("tests/data/bootlogs/llamacpp/ok_qwen3next_hybrid.log"),
                                  SW_BOOTLOG_MAX, &text, &len, &e),
                     0);
    struct bootlog_run b = {eng, text, len};
    assert_true(swt_torture("llama.cpp bootlog -> JSON", bootlog_once, &b, SW_ENOMEM) > 10);
    sw_free(text);
}

static void test_diff(void **state)
{
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    struct sw_err e;
    json_t *printed =
        parse_file(swt_src("tests/data/bootlogs/llamacpp/ok_qwen3next_hybrid.log"), NULL, NULL);
    json_t *pred = json_deep_copy(json_object_get(printed, "report"));
    /* exact bytes behind "4.12 MiB" (4,320,133 printed): within 0.005 MiB + float slack */
    json_t *kv0 = json_array_get(json_object_get(pred, "kv_caches"), 0);
    json_object_set_new(kv0, "k_bytes", json_integer(4325376)); /* 4.125 MiB -> prints 4.12 */
    json_object_set_new(pred, "compute_bytes", json_integer(8 * 1048576));
    json_t *d = NULL;
    assert_int_equal(eng->diff(pred, printed, NULL, &d, &e), 0);
    assert_true(json_is_true(json_object_get(d, "match")));
    size_t i;
    json_t *f;
    bool saw_estimate = false;
    json_array_foreach(json_object_get(d, "fields"), i, f)
    {
        const char *name = json_string_value(json_object_get(f, "field"));
        if (!strcmp(name, "compute_bytes")) {
            assert_string_equal(json_string_value(json_object_get(f, "verdict")), "estimate");
            saw_estimate = true;
        }
        if (!strcmp(name, "kv_caches[0].k_bytes"))
            assert_true(json_integer_value(json_object_get(f, "tolerance")) >= 5243);
        if (!strcmp(name, "n_ctx"))
            assert_int_equal(json_integer_value(json_object_get(f, "tolerance")), 0);
    }
    assert_true(saw_estimate);
    json_decref(d);

    /* one cell off, a byte count past the tolerance, a wrong type, a missing recurrent */
    json_object_set_new(kv0, "cells", json_integer(2817));
    json_object_set_new(kv0, "v_bytes", json_integer(4320133 + 6000));
    json_object_set_new(kv0, "v_type", json_string("q8_0"));
    json_object_set_new(pred, "recurrent", json_null());
    assert_int_equal(eng->diff(pred, printed, NULL, &d, &e), 0);
    assert_false(json_is_true(json_object_get(d, "match")));
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 4);
    json_decref(d);

    /* an extra predicted cache: the count is a mismatch */
    json_array_append(json_object_get(pred, "kv_caches"), kv0);
    assert_int_equal(eng->diff(pred, printed, NULL, &d, &e), 0);
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 5);
    json_decref(d);
    json_t *bad = json_string("x");
    assert_int_equal(eng->diff(bad, printed, NULL, &d, &e), SW_EPARSE);
    json_decref(bad);
    json_decref(pred);
    json_decref(printed);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_logs),
        cmocka_unit_test(test_every_class_captured),
        cmocka_unit_test(test_shared_points),
        cmocka_unit_test(test_old_formats),
        cmocka_unit_test(test_prefixes_and_noise),
        cmocka_unit_test(test_draft_context_ignored),
        cmocka_unit_test(test_hints),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests_name("bootlog_llamacpp", tests, NULL, NULL);
}
