/*
 * readings: every recorded tool output under tests/data/readings/ parses into the exact bytes
 * written below; malformed outputs are refused with the tool named; the tool is told apart (and
 * ambiguity refused); allocation-failure torture over the three parsers; readings matched to a
 * fleet endpoint's devices and recorded in a real SQLite ledger, read back with the ledger's list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/readings.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB(x) ((int64_t)(x)*1048576)
#define NA     (-1)

struct want {
    int64_t index, used, total, free;
};

struct file_case {
    const char *path;
    enum sw_readings_tool tool;
    size_t n;
    struct want r[4];
};

static const struct file_case files[] = {
    {"nvidia-smi/one-gpu.csv", SW_READINGS_NVIDIA_SMI, 1, {{0, MiB(20190), MiB(24564), MiB(3898)}}},
    {"nvidia-smi/two-gpus-nounits.csv",
     SW_READINGS_NVIDIA_SMI,
     2,
     {{0, MiB(41512), MiB(49140), MiB(7184)}, {1, MiB(4), MiB(49140), MiB(48691)}}},
    {"nvidia-smi/four-gpus-noheader.csv",
     SW_READINGS_NVIDIA_SMI,
     4,
     {{0, MiB(74113), MiB(81559), MiB(6914)},
      {1, MiB(74113), MiB(81559), MiB(6914)},
      {2, MiB(1), MiB(81559), MiB(81026)},
      {3, 0, MiB(81559), MiB(81027)}}},
    {"nvidia-smi/noheader-nounits-no-free.csv",
     SW_READINGS_NVIDIA_SMI,
     1,
     {{0, MiB(14650), MiB(15360), NA}}},
    {"nvidia-smi/na-fields.csv",
     SW_READINGS_NVIDIA_SMI,
     2,
     {{0, NA, NA, NA}, {1, MiB(22118), MiB(24576), NA}}},
    {"nvidia-smi/reordered-crlf.csv",
     SW_READINGS_NVIDIA_SMI,
     2,
     {{0, MiB(512), MiB(46068), NA}, {1, MiB(39000), MiB(46068), NA}}},
    {"rocm-smi/one-card.json", SW_READINGS_ROCM_SMI, 1, {{0, 22737571840, 34342961152, NA}}},
    {"rocm-smi/two-cards-system.json",
     SW_READINGS_ROCM_SMI,
     2,
     {{0, 27745271808, 34342961152, NA}, {1, 296148992, 34342961152, NA}}},
    {"rocm-smi/showbus-series.json",
     SW_READINGS_ROCM_SMI,
     2,
     {{0, 297410560, 206141652992, NA}, {1, 191210414080, 206141652992, NA}}},
    {"rocm-smi/apu-na.json", SW_READINGS_ROCM_SMI, 1, {{0, NA, 536870912, NA}}},
    {"amd-smi/metric-units.json",
     SW_READINGS_AMD_SMI,
     2,
     {{0, MiB(21684), MiB(32752), MiB(11068)}, {1, MiB(283), MiB(32752), MiB(32469)}}},
    {"amd-smi/metric-gpu-data.json",
     SW_READINGS_AMD_SMI,
     1,
     {{0, MiB(180210), MiB(196592), MiB(16382)}}},
    {"amd-smi/metric-plain-older.json",
     SW_READINGS_AMD_SMI,
     1,
     {{0, MiB(9012), MiB(16368), MiB(7356)}}},
    {"amd-smi/metric-strings-older.json",
     SW_READINGS_AMD_SMI,
     2,
     {{0, MiB(9012), MiB(16368), NA}, {1, MiB(10), MiB(16368), MiB(16358)}}},
    {"amd-smi/static-vram.json", SW_READINGS_AMD_SMI, 1, {{0, NA, MiB(32752), NA}}},
    {"llamacpp/one-cuda.log",
     SW_READINGS_LLAMACPP,
     1,
     {{0, MiB(24080 - 3890), MiB(24080), MiB(3890)}}},
    /* two tables (a restart): the last one's figures */
    {"llamacpp/two-rocm-restart.log",
     SW_READINGS_LLAMACPP,
     2,
     {{0, MiB(32624 - 2441), MiB(32624), MiB(2441)},
      {1, MiB(32624 - 9817), MiB(32624), MiB(9817)}}},
};

static char *load(const char *rel, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "tests/data/readings/%s", rel);
    char *data = NULL;
    struct sw_err e;
    if (sw_read_file(swt_src(path), SW_READINGS_MAX_INPUT, &data, len, &e))
        fail_msg("%s: %s", path, e.msg);
    return data;
}

static void check_figure(const char *file, size_t i, const char *what, bool has, uint64_t got,
                         int64_t want)
{
    if (want == NA) {
        if (has)
            fail_msg("%s [%zu] %s: printed %llu, want not printed", file, i, what,
                     (unsigned long long)got);
    } else if (!has || got != (uint64_t)want) {
        fail_msg("%s [%zu] %s: %s%llu, want %lld", file, i, what, has ? "" : "not printed ",
                 (unsigned long long)got, (long long)want);
    }
}

static void test_recorded_files(void **state)
{
    (void)state;
    for (size_t c = 0; c < SW_ARRAY_LEN(files); c++) {
        const struct file_case *fc = &files[c];
        size_t len;
        char *text = load(fc->path, &len);
        struct sw_readings rs;
        struct sw_err e;
        /* given the tool, and detected */
        for (int pass = 0; pass < 2; pass++) {
            int rc =
                sw_readings_parse(pass ? SW_READINGS_AUTO : fc->tool, text, len, fc->path, &rs, &e);
            if (rc)
                fail_msg("%s: %s", fc->path, e.msg);
            assert_int_equal(rs.tool, fc->tool);
            if (rs.n != fc->n)
                fail_msg("%s: %zu readings, want %zu", fc->path, rs.n, fc->n);
            for (size_t i = 0; i < rs.n; i++) {
                const struct sw_reading *r = &rs.r[i];
                assert_int_equal(r->index, fc->r[i].index);
                assert_string_equal(r->tool, sw_readings_tool_name(fc->tool));
                bool green = fc->tool == SW_READINGS_NVIDIA_SMI || strstr(fc->path, "cuda");
                assert_string_equal(r->vendor, green ? "nvidia" : "amd");
                check_figure(fc->path, i, "used", r->has_used, r->used_bytes, fc->r[i].used);
                check_figure(fc->path, i, "total", r->has_total, r->total_bytes, fc->r[i].total);
                check_figure(fc->path, i, "free", r->has_free, r->free_bytes, fc->r[i].free);
                assert_true(r->origin[0]);
            }
            json_t *j = sw_readings_json(&rs);
            assert_non_null(j);
            assert_int_equal(json_array_size(json_object_get(j, "readings")), fc->n);
            json_decref(j);
            sw_readings_free(&rs);
        }
        sw_free(text);
    }
}

static void test_strings_kept(void **state)
{
    (void)state;
    size_t len;
    struct sw_readings rs;
    struct sw_err e;
    char *t = load("nvidia-smi/one-gpu.csv", &len);
    assert_int_equal(sw_readings_nvidia_smi(t, len, "one-gpu.csv", &rs, &e), 0);
    assert_string_equal(rs.r[0].uuid, "GPU-5d2a3c1e-8f4b-4c6d-9e7a-1b2c3d4e5f60");
    assert_string_equal(rs.r[0].name, "NVIDIA GeForce RTX 4090");
    assert_int_equal(rs.r[0].line, 2);
    sw_readings_free(&rs);
    sw_free(t);
    t = load("nvidia-smi/reordered-crlf.csv", &len);
    assert_int_equal(sw_readings_nvidia_smi(t, len, "reordered-crlf.csv", &rs, &e), 0);
    assert_string_equal(rs.r[0].bus_id, "00000000:01:00.0");
    assert_string_equal(rs.r[1].bus_id, "00000000:41:00.0");
    assert_string_equal(rs.r[1].name, "NVIDIA L40S");
    assert_int_equal(rs.r[0].line, 3);
    assert_null(strchr(rs.r[0].origin, '\r'));
    sw_readings_free(&rs);
    sw_free(t);
    t = load("rocm-smi/showbus-series.json", &len);
    assert_int_equal(sw_readings_rocm_smi(t, len, "showbus", &rs, &e), 0);
    assert_string_equal(rs.r[1].bus_id, "0000:26:00.0");
    assert_string_equal(rs.r[1].name, "AMD Instinct MI300X");
    assert_string_equal(rs.r[1].origin, "card1");
    sw_readings_free(&rs);
    sw_free(t);
}

struct bad_case {
    enum sw_readings_tool tool;
    const char *text;
    const char *needle; /* in the message, beside the tool's name */
};

#define NV_HDR "index, uuid, name, memory.used [MiB], memory.total [MiB], memory.free [MiB]\n"
#define NV_ROW "0, GPU-1, NVIDIA X, "
static const struct bad_case bad[] = {
    {SW_READINGS_NVIDIA_SMI, "", "empty"},
    {SW_READINGS_NVIDIA_SMI, "\n\n  \n", "empty"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR, "no device"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR "0, GPU-1, NVIDIA X, 20190 MiB", "fields"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR "0, GPU-1, NVIDIA X, 20190 MiB, 24564 MiB, 3898 MiB, 1",
     "fields"},
    {SW_READINGS_NVIDIA_SMI, "index, name, memory.used [MiB]\n0, X, 1 MiB\n", "memory.total"},
    {SW_READINGS_NVIDIA_SMI, "uuid, memory.used [MiB], memory.total [MiB]\nG, 1, 2\n", "index"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "abc MiB, 24564 MiB, 3898 MiB\n", "not a number"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "20190 GiB, 24564 MiB, 3898 MiB\n", "not a number"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "-5 MiB, 24564 MiB, 3898 MiB\n", "negative"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "1 MiB, 99999999999999999999 MiB, 3898 MiB\n",
     "more bytes"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "1 MiB, 18446744073709551616 MiB, 1 MiB\n",
     "more bytes"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "1 MiB, 8796093022208 MiB, 1 MiB\n", "more bytes"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "30000 MiB, 24564 MiB, 3898 MiB\n", "more than total"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "1 MiB, 24564 MiB, 30000 MiB\n", "more than total"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "1 MiB, 2 MiB, 1 MiB\n" NV_ROW "1 MiB, 2 MiB, 1 MiB\n",
     "printed twice"},
    {SW_READINGS_NVIDIA_SMI, "x, GPU-1, NVIDIA X, 1 MiB, 2 MiB\n", "device index"},
    {SW_READINGS_NVIDIA_SMI, "index, memory.used [GiB], memory.total [GiB]\n0, 1, 2\n", "only MiB"},
    {SW_READINGS_NVIDIA_SMI, "index, memory.used [MiB, memory.total [MiB]\n0, 1, 2\n", "unclosed"},
    {SW_READINGS_NVIDIA_SMI, "index, memory.used [MiB], memory.used [MiB]\n0, 1, 2\n", "twice"},
    {SW_READINGS_NVIDIA_SMI,
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
     "no header"},
    {SW_READINGS_NVIDIA_SMI, NV_HDR NV_ROW "[N/A], [Unknown Error], 1 MiB\n", "not a number"},
    {SW_READINGS_ROCM_SMI, "", "not JSON"},
    {SW_READINGS_ROCM_SMI, "{\"card0\": {\"VRAM Total", "not JSON"},
    {SW_READINGS_ROCM_SMI, "[1, 2]", "not an object of cards"},
    {SW_READINGS_ROCM_SMI, "{}", "no device"},
    {SW_READINGS_ROCM_SMI, "{\"system\": {}}", "no device"},
    {SW_READINGS_ROCM_SMI, "{\"gpu0\": {}}", "not a card"},
    {SW_READINGS_ROCM_SMI, "{\"card01\": {}}", "not a card"},
    {SW_READINGS_ROCM_SMI, "{\"card0\": 5}", "not an object"},
    {SW_READINGS_ROCM_SMI, "{\"card0\": {\"VRAM Total Memory (B)\": \"10\"}}",
     "\"VRAM Total Used Memory (B)\" missing"},
    {SW_READINGS_ROCM_SMI,
     "{\"card0\": {\"VRAM Total Memory (B)\": \"ten\", \"VRAM Total Used Memory (B)\": \"1\"}}",
     "not a whole number"},
    {SW_READINGS_ROCM_SMI,
     "{\"card0\": {\"VRAM Total Memory (B)\": 1.5, \"VRAM Total Used Memory (B)\": \"1\"}}",
     "not a number of bytes"},
    {SW_READINGS_ROCM_SMI,
     "{\"card0\": {\"VRAM Total Memory (B)\": \"10\", \"VRAM Total Used Memory (B)\": \"-1\"}}",
     "negative"},
    {SW_READINGS_ROCM_SMI,
     "{\"card0\": {\"VRAM Total Memory (B)\": \"10\", \"VRAM Total Used Memory (B)\": -1}}",
     "negative"},
    {SW_READINGS_ROCM_SMI,
     "{\"card0\": {\"VRAM Total Memory (B)\": \"18446744073709551616\", "
     "\"VRAM Total Used Memory (B)\": \"1\"}}",
     "more bytes"},
    {SW_READINGS_ROCM_SMI,
     "{\"card0\": {\"VRAM Total Memory (B)\": \"10\", \"VRAM Total Used Memory (B)\": \"11\"}}",
     "more than total"},
    {SW_READINGS_AMD_SMI, "", "not JSON"},
    {SW_READINGS_AMD_SMI, "{\"card0\": {}}", "not a list of GPUs"},
    {SW_READINGS_AMD_SMI, "{\"gpu_data\": [], \"x\": 1}", "not a list of GPUs"},
    {SW_READINGS_AMD_SMI, "[]", "no device"},
    {SW_READINGS_AMD_SMI, "[5]", "not an object"},
    {SW_READINGS_AMD_SMI, "[{\"mem_usage\": {}}]", "\"gpu\" is missing"},
    {SW_READINGS_AMD_SMI, "[{\"gpu\": -1, \"mem_usage\": {}}]", "not a device index"},
    {SW_READINGS_AMD_SMI, "[{\"gpu\": 0}]", "neither mem_usage"},
    {SW_READINGS_AMD_SMI, "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 10}}]",
     "used_vram missing"},
    {SW_READINGS_AMD_SMI,
     "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": {\"value\": 10, \"unit\": \"GB\"}, "
     "\"used_vram\": 1}}]",
     "only MB"},
    {SW_READINGS_AMD_SMI,
     "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": {\"value\": 10}, \"used_vram\": 1}}]",
     "not {\"value\""},
    {SW_READINGS_AMD_SMI, "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 10.5, \"used_vram\": 1}}]",
     "fraction"},
    {SW_READINGS_AMD_SMI, "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 10, \"used_vram\": -1}}]",
     "negative"},
    {SW_READINGS_AMD_SMI,
     "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 9999999999999999, \"used_vram\": 1}}]",
     "more bytes"},
    {SW_READINGS_AMD_SMI,
     "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": \"10\", \"used_vram\": 1}}]", "no unit"},
    {SW_READINGS_AMD_SMI, "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 10, \"used_vram\": 11}}]",
     "more than total"},
    {SW_READINGS_AMD_SMI,
     "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 10, \"used_vram\": 1}}, "
     "{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 10, \"used_vram\": 1}}]",
     "printed twice"},
    {SW_READINGS_AMD_SMI,
     "[{\"gpu\": 0, \"mem_usage\": {\"total_vram\": 10, \"used_vram\": 1}, "
     "\"vram\": {\"size\": 12}}]",
     "disagree"},
    {SW_READINGS_AMD_SMI, "[{\"gpu\": 0, \"vram\": {\"type\": \"GDDR6\"}}]", "vram.size missing"},
#define LB "x_memory_breakdown_print: | memory breakdown [MiB] | total free self |\n"
#define LR "x_memory_breakdown_print: |   - "
    {SW_READINGS_LLAMACPP, "", "no memory breakdown"},
    {SW_READINGS_LLAMACPP, "main: server is listening\n", "no memory breakdown"},
    {SW_READINGS_LLAMACPP, LB, "no device"},
    {SW_READINGS_LLAMACPP, LB LR "Host | 5 = 4 + 0 + 1 |\n", "no device"},
    {SW_READINGS_LLAMACPP, LB LR "Vulkan0 (Radeon 780M) | 100 = 50 + (40 = 40 + 0 + 0) + 10 |\n",
     "whose device"},
    {SW_READINGS_LLAMACPP, LB LR "CUDA0 (X) | 100 = 500 + (40 = 40 + 0 + 0) + 10 |\n",
     "more than total"},
    {SW_READINGS_LLAMACPP, LB LR "CUDA0 (X) | abc = 50 + (40 = 40 + 0 + 0) + 10 |\n",
     "not \"total = free"},
    {SW_READINGS_LLAMACPP, LB LR "CUDA0 (X) | 9999999999999999 = 50 + (4 = 4 + 0 + 0) + 1 |\n",
     "more bytes"},
    {SW_READINGS_LLAMACPP, LB LR "CUDA (X) | 100 = 50 + (40 = 40 + 0 + 0) + 10 |\n",
     "no device number"},
    {SW_READINGS_LLAMACPP,
     LB LR "CUDA0 (X) | 100 = 50 + (40 = 40 + 0 + 0) + 10 |\n" LR
           "CUDA0 (X) | 100 = 50 + (40 = 40 + 0 + 0) + 10 |\n",
     "printed twice"},
    {SW_READINGS_LLAMACPP, LB LR "CUDA0 (X) 100 = 50 + (40 = 40 + 0 + 0) + 10\n", "no '|'"},
};

static void test_malformed(void **state)
{
    (void)state;
    for (size_t c = 0; c < SW_ARRAY_LEN(bad); c++) {
        const struct bad_case *b = &bad[c];
        struct sw_readings rs;
        struct sw_err e;
        sw_err_clear(&e);
        int rc = sw_readings_parse(b->tool, b->text, strlen(b->text), "in.txt", &rs, &e);
        if (!rc)
            fail_msg("case %zu accepted: %s", c, b->text);
        assert_int_equal(rs.n, 0);
        assert_null(rs.r);
        char msg[2048];
        sw_err_format(&e, msg, sizeof(msg));
        if (!strstr(msg, sw_readings_tool_name(b->tool)) || !strstr(msg, b->needle))
            fail_msg("case %zu: \"%s\" should name %s and say '%s'", c, msg,
                     sw_readings_tool_name(b->tool), b->needle);
        if (b->tool == SW_READINGS_NVIDIA_SMI && strstr(b->text, "\n") && e.line == 0 &&
            !strstr(b->needle, "empty") && !strstr(b->needle, "no device"))
            fail_msg("case %zu: \"%s\" should give the line", c, msg);
    }
}

static void test_detect(void **state)
{
    (void)state;
    static const char *const ambiguous[] = {
        "", "   \n", "{\"x\": 1}", "{\"card0\": {}, \"gpu_data\": []}", "{not json",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(ambiguous); i++) {
        enum sw_readings_tool t = SW_READINGS_AUTO;
        struct sw_err e;
        struct sw_readings rs;
        assert_int_not_equal(sw_readings_detect(ambiguous[i], strlen(ambiguous[i]), "x", &t, &e),
                             0);
        assert_int_not_equal(
            sw_readings_parse(SW_READINGS_AUTO, ambiguous[i], strlen(ambiguous[i]), "x", &rs, &e),
            0);
    }
    enum sw_readings_tool t;
    struct sw_err e;
    assert_int_equal(sw_readings_detect("{\"card3\": {}}", 13, NULL, &t, &e), 0);
    assert_int_equal(t, SW_READINGS_ROCM_SMI);
    assert_int_equal(sw_readings_detect("[]", 2, NULL, &t, &e), 0);
    assert_int_equal(t, SW_READINGS_AMD_SMI);
    assert_int_equal(sw_readings_tool_from_name("rocm-smi", &t, &e), 0);
    assert_int_equal(t, SW_READINGS_ROCM_SMI);
    assert_int_equal(sw_readings_tool_from_name("xpu-smi", &t, &e), SW_EINVAL);
}

struct tort {
    enum sw_readings_tool tool;
    const char *file;
    char *text;
    size_t len;
};

static int tort_run(void *arg)
{
    const struct tort *t = arg;
    struct sw_readings rs;
    struct sw_err e;
    int rc = sw_readings_parse(t->tool, t->text, t->len, t->file, &rs, &e);
    if (!rc) {
        json_t *j = sw_readings_json(&rs);
        if (!j)
            rc = SW_ENOMEM;
        json_decref(j);
    }
    sw_readings_free(&rs);
    return rc;
}

static void test_torture(void **state)
{
    (void)state;
    struct tort t[] = {
        {SW_READINGS_NVIDIA_SMI, "nvidia-smi/four-gpus-noheader.csv"},
        {SW_READINGS_ROCM_SMI, "rocm-smi/showbus-series.json"},
        {SW_READINGS_AMD_SMI, "amd-smi/metric-units.json"},
        {SW_READINGS_AUTO, "amd-smi/metric-strings-older.json"},
        {SW_READINGS_LLAMACPP, "llamacpp/two-rocm-restart.log"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(t); i++) {
        t[i].text = load(t[i].file, &t[i].len);
        swt_torture(t[i].file, tort_run, &t[i], SW_ENOMEM);
        sw_free(t[i].text);
    }
}

static void test_to_usage(void **state)
{
    (void)state;
    struct sw_reading r = {.vendor = "amd",
                           .tool = "rocm-smi",
                           .has_used = true,
                           .has_total = true,
                           .used_bytes = 296148992,
                           .total_bytes = 34342961152};
    struct sw_ledger_usage u;
    struct sw_err e;
    assert_int_equal(sw_readings_to_usage(&r, &u, &e), 0);
    assert_int_equal(u.used_mib, 283); /* 282.43 MiB rounds up */
    assert_int_equal(u.total_mib, 32752);
    assert_false(u.has_free);
    /* within one MiB of each other: used is capped at total */
    r.used_bytes = MiB(10) - 1;
    r.total_bytes = MiB(10) - 1;
    r.has_free = true;
    r.free_bytes = MiB(10) - 1;
    assert_int_equal(sw_readings_to_usage(&r, &u, &e), 0);
    assert_int_equal(u.used_mib, 9);
    assert_int_equal(u.total_mib, 9);
    assert_int_equal(u.free_mib, 0);
    /* the ledger holds whole MiB and a total > 0: a smaller device is refused here */
    r.total_bytes = r.used_bytes = MiB(1) - 1;
    assert_int_equal(sw_readings_to_usage(&r, &u, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "under 1 MiB"));
    r.has_used = false;
    assert_int_equal(sw_readings_to_usage(&r, &u, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "used not printed"));
}

static const char fleet_yaml[] =
    "version: 1\n"
    "hosts:\n"
    "  box:\n"
    "    transport: local\n"
    "    devices:\n"
    "      r9700-0: {kind: R9700, vendor: amd, index: 0, memory_total: 32752MiB}\n"
    "      r9700-1: {kind: R9700, vendor: amd, memory_total: 32752MiB}\n"
    "      cuda0: {kind: GB10, vendor: nvidia, index: 0}\n"
    "      cuda1: {kind: RTX3090, vendor: nvidia, index: 1}\n"
    "endpoints:\n"
    "  both:\n"
    "    host: box\n"
    "    devices: [r9700-0, r9700-1]\n"
    "    engine: llama.cpp\n"
    "    payload: {path: /nonexistent/m.gguf}\n"
    "  one:\n"
    "    host: box\n"
    "    devices: [r9700-0]\n"
    "    engine: llama.cpp\n"
    "    payload: {path: /nonexistent/m.gguf}\n"
    "  green:\n"
    "    host: box\n"
    "    devices: [cuda0, cuda1]\n"
    "    engine: llama.cpp\n"
    "    payload: {path: /nonexistent/m.gguf}\n";

static void test_record(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char fpath[4200], lpath[4200];
    snprintf(fpath, sizeof(fpath), "%s/fleet.yaml", dir);
    snprintf(lpath, sizeof(lpath), "%s/ledger.sqlite", dir);
    struct sw_err e;
    assert_int_equal(sw_write_file_atomic(fpath, fleet_yaml, strlen(fleet_yaml), 0644, &e), 0);
    struct sw_fleet *f = NULL;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    if (sw_fleet_load(fpath, &fo, &f, &e))
        fail_msg("fleet: %s", e.msg);
    struct sw_ledger l;
    if (sw_ledger_open(&l, lpath, NULL, &e))
        fail_msg("ledger: %s", e.msg);

    size_t len;
    char *text = load("rocm-smi/two-cards-system.json", &len);
    struct sw_readings rs;
    assert_int_equal(sw_readings_parse(SW_READINGS_AUTO, text, len, "two", &rs, &e), 0);
    struct sw_readings_outcome out[2];
    size_t n = 0;
    struct sw_readings_record_opts o = {.note = "after boot"};
    if (sw_readings_record(&l, sw_fleet_endpoint(f, "both"), &rs, &o, out, &n, &e))
        fail_msg("record: %s", e.msg);
    assert_int_equal(n, 2);
    assert_string_equal(out[0].device->name, "r9700-0");
    assert_string_equal(out[1].device->name, "r9700-1"); /* index by position in the host */
    assert_true(out[0].usage_id > 0 && out[1].usage_id > out[0].usage_id);
    assert_string_equal(out[0].warning, "");

    /* an endpoint on one card: the other reading is a warning, not silently dropped */
    assert_int_equal(sw_readings_record(&l, sw_fleet_endpoint(f, "one"), &rs, NULL, out, &n, &e),
                     0);
    assert_int_equal(n, 1);
    assert_non_null(out[0].device);
    assert_null(out[1].device);
    assert_int_equal(out[1].usage_id, 0);
    assert_non_null(strstr(out[1].warning, "none of endpoint one's devices"));
    /* amd readings on an nvidia endpoint: none match */
    assert_int_equal(sw_readings_record(&l, sw_fleet_endpoint(f, "green"), &rs, NULL, out, &n, &e),
                     0);
    assert_int_equal(n, 0);
    assert_true(out[0].warning[0] && out[1].warning[0]);
    sw_readings_free(&rs);
    sw_free(text);

    /* nvidia N/A figures: a warning, the printed one recorded */
    text = load("nvidia-smi/na-fields.csv", &len);
    assert_int_equal(sw_readings_parse(SW_READINGS_AUTO, text, len, "na", &rs, &e), 0);
    assert_int_equal(sw_readings_record(&l, sw_fleet_endpoint(f, "green"), &rs, NULL, out, &n, &e),
                     0);
    assert_int_equal(n, 1);
    assert_non_null(strstr(out[0].warning, "used and total not printed"));
    assert_null(out[0].device);
    assert_string_equal(out[1].device->name, "cuda1");
    sw_readings_free(&rs);
    sw_free(text);

    /* read back through the ledger's own list */
    json_t *arr = NULL;
    struct sw_ledger_query q = {.endpoint = "both"};
    assert_int_equal(sw_ledger_usage_list(&l, &q, &arr, &e), 0);
    assert_int_equal(json_array_size(arr), 2);
    json_t *u0 = json_array_get(arr, 0), *u1 = json_array_get(arr, 1);
    assert_string_equal(json_string_value(json_object_get(u0, "device")), "r9700-0");
    assert_int_equal(json_integer_value(json_object_get(u0, "used_mib")), 26460);
    assert_int_equal(json_integer_value(json_object_get(u0, "total_mib")), 32752);
    assert_string_equal(json_string_value(json_object_get(u0, "source")), "rocm-smi");
    assert_string_equal(json_string_value(json_object_get(u1, "device")), "r9700-1");
    assert_int_equal(json_integer_value(json_object_get(u1, "used_mib")), 283);
    json_decref(arr);
    q.endpoint = "green";
    assert_int_equal(sw_ledger_usage_list(&l, &q, &arr, &e), 0);
    assert_int_equal(json_array_size(arr), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "device")),
                        "cuda1");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, 0), "used_mib")),
                     22118);
    json_decref(arr);
    sw_ledger_close(&l);
    sw_fleet_free(f);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_files), cmocka_unit_test(test_strings_kept),
        cmocka_unit_test(test_malformed),      cmocka_unit_test(test_detect),
        cmocka_unit_test(test_torture),        cmocka_unit_test(test_to_usage),
        cmocka_unit_test(test_record),
    };
    return cmocka_run_group_tests_name("readings", tests, NULL, NULL);
}
