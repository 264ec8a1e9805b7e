/*
 * plan/remote: model metadata read by ranges on an endpoint's host, and its cache.
 *  - the host's replies as untrusted input: stat lines (size, mtime, mode; "-"), and the ranges
 *    command's framing (a stat line, then exactly the range's bytes), a file changed between the
 *    stat and the read, short and long replies;
 *  - the cache's keys: one entry per (host, path), used only for the same kind, size and mtime
 *    and bytes that hash to what the entry says; a tampered, cut or linked entry is a miss; a
 *    cache directory that is a link or writable by others is not used; entries are 0600;
 *  - the reads themselves, through a local host (the same commands the ssh transport runs, here):
 *    a sparse multi-GB GGUF whose header is longer than one read (a 40,000-token vocabulary) is
 *    read to its header plus at most one read ahead, counted; a second read asks the host only
 *    for the stat; a changed mtime reads again; a header-only GGUF is accepted and said; a
 *    checkpoint's index and shard headers give the weights sw_hf_weight_bytes counts here; a split
 *    GGUF's parts are each read and merged as sw_gguf_open merges them here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>
#include <slipway/hf.h>
#include <slipway/plan.h>

#include "plan/remote_internal.h"
#include "swtest.h"
#include "test_gguf_build.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static void test_parse_stat(void **state)
{
    (void)state;
    struct sw__rfile f;
    struct sw_err e;
    const char *ok = "4294967296 1733561234.123456789 81a4";
    assert_int_equal(sw__remote_parse_stat(ok, strlen(ok), &f, &e), 0);
    assert_true(f.exists && f.regular);
    assert_int_equal(f.size, 4294967296ull);
    assert_string_equal(f.mtime, "1733561234.123456789");
    const char *dir = "4096 1733561234.000000000 41ed";
    assert_int_equal(sw__remote_parse_stat(dir, strlen(dir), &f, &e), 0);
    assert_true(f.exists && !f.regular);
    assert_int_equal(sw__remote_parse_stat("-", 1, &f, &e), 0);
    assert_false(f.exists);
    static const char *const bad[] = {
        "",
        "12",
        "12 34",
        "12 34 81a4 extra",
        "1x 1733561234.1 81a4",
        "99999999999999999999 1733561234.1 81a4", /* past 64 bits */
        "123456789012345678901 1.1 81a4",         /* 21 digits */
        "12 17335x1234.1 81a4",
        "12 1733561234.1 81g4",
        "12  1733561234.1 81a4",
        "-1 1733561234.1 81a4",
        "12 1733561234.1234567890123456789012345 81a4",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++) {
        int rc = sw__remote_parse_stat(bad[i], strlen(bad[i]), &f, &e);
        if (rc != SW_EPARSE)
            fail_msg("\"%s\": rc %d, want SW_EPARSE", bad[i], rc);
    }
    char big[200];
    memset(big, '1', sizeof(big));
    assert_int_equal(sw__remote_parse_stat(big, sizeof(big), &f, &e), SW_EPARSE);
}

static struct sw__rfile file_of(uint64_t size, const char *mtime)
{
    struct sw__rfile f = {.exists = true, .regular = true, .size = size};
    snprintf(f.mtime, sizeof(f.mtime), "%s", mtime);
    return f;
}

static void test_parse_ranges(void **state)
{
    (void)state;
    struct sw_err e;
    struct sw__rrange rg[2] = {
        {.path = "/m/a", .off = 0, .count = 4, .want = file_of(10, "1.5")},
        {.path = "/m/b", .off = 8, .count = 100, .want = file_of(12, "2.5")},
    };
    /* a's first 4 bytes; b's last 4 (the count is clipped to the file) */
    static const char good[] = "10 1.5 81a4\nABCD12 2.5 81a4\nWXYZ";
    assert_int_equal(sw__remote_parse_ranges(good, sizeof(good) - 1, rg, 2, "h", &e), 0);
    assert_int_equal(rg[0].len, 4);
    assert_memory_equal(rg[0].data, "ABCD", 4);
    assert_int_equal(rg[1].len, 4);
    assert_memory_equal(rg[1].data, "WXYZ", 4);
    for (int i = 0; i < 2; i++) {
        sw_free(rg[i].data);
        rg[i].data = NULL;
    }
    /* the file changed between the stat and the read */
    static const char moved[] = "10 1.6 81a4\nABCD12 2.5 81a4\nWXYZ";
    assert_int_equal(sw__remote_parse_ranges(moved, sizeof(moved) - 1, rg, 2, "h", &e),
                     SW_EMISMATCH);
    assert_non_null(strstr(e.msg, "changed while it was read"));
    sw_free(rg[0].data);
    rg[0].data = NULL;
    static const char grown[] = "11 1.5 81a4\nABCD12 2.5 81a4\nWXYZ";
    assert_int_equal(sw__remote_parse_ranges(grown, sizeof(grown) - 1, rg, 2, "h", &e),
                     SW_EMISMATCH);
    /* short, long, unframed */
    static const char *const bad[] = {
        "10 1.5 81a4\nABCD12 2.5 81a4\nWXY",
        "10 1.5 81a4\nABCD12 2.5 81a4\nWXYZ!",
        "10 1.5 81a4\nABCD",
        "10 1.5 81a4 ABCD12 2.5 81a4\nWXYZ",
        "",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++) {
        int rc = sw__remote_parse_ranges(bad[i], strlen(bad[i]), rg, 2, "h", &e);
        if (rc != SW_EPARSE)
            fail_msg("reply %zu: rc %d, want SW_EPARSE (%s)", i, rc, e.msg);
        for (int k = 0; k < 2; k++) {
            sw_free(rg[k].data);
            rg[k].data = NULL;
        }
    }
}

static void test_cache_keys(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char cdir[4096];
    snprintf(cdir, sizeof(cdir), "%s/cache", dir);
    setenv("SLIPWAY_CACHE", cdir, 1);
    char n1[70], n2[70], n3[70], n4[70];
    assert_int_equal(sw__rcache_name("ssh root@h:22", "/m/a.gguf", n1), 0);
    assert_int_equal(sw__rcache_name("ssh root@h:22", "/m/a.gguf", n2), 0);
    assert_int_equal(sw__rcache_name("ssh root@g:22", "/m/a.gguf", n3), 0);
    assert_int_equal(sw__rcache_name("ssh root@h:22", "/m/b.gguf", n4), 0);
    assert_string_equal(n1, n2);
    assert_string_not_equal(n1, n3);
    assert_string_not_equal(n1, n4);
    assert_int_equal(strlen(n1), 64 + 5);

    struct sw__rcache c;
    sw__rcache_open(&c);
    assert_true(c.dirfd >= 0);
    char path[4096];
    snprintf(path, sizeof(path), "%s/remote-meta", cdir);
    assert_string_equal(c.dir, path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    struct sw__rfile f = file_of(4294967296ull, "1733561234.123456789");
    struct sw__rkey k = {"ssh root@h:22", "/m/a.gguf", "gguf-head", &f};
    struct sw_err e;
    char *d = NULL, sha[65];
    size_t n = 0;
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), SW_ENOENT);
    static const char bytes[] = "GGUF\x03\0\0\0 header bytes \n with a newline";
    assert_int_equal(sw__rcache_put(&c, &k, bytes, sizeof(bytes), &e), 0);
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), 0);
    assert_int_equal(n, sizeof(bytes));
    assert_memory_equal(d, bytes, n);
    assert_int_equal(strlen(sha), 64);
    sw_free(d);
    char entry[4200];
    snprintf(entry, sizeof(entry), "%s/%s", path, n1);
    assert_int_equal(lstat(entry, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);

    /* every part of the key counts */
    struct sw__rfile f2 = file_of(4294967297ull, "1733561234.123456789");
    struct sw__rfile f3 = file_of(4294967296ull, "1733561235.123456789");
    struct sw__rkey miss[] = {
        {"ssh root@g:22", "/m/a.gguf", "gguf-head", &f},
        {"ssh root@h:22", "/m/b.gguf", "gguf-head", &f},
        {"ssh root@h:22", "/m/a.gguf", "file", &f},
        {"ssh root@h:22", "/m/a.gguf", "gguf-head", &f2},
        {"ssh root@h:22", "/m/a.gguf", "gguf-head", &f3},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(miss); i++)
        assert_int_equal(sw__rcache_get(&c, &miss[i], &d, &n, sha), SW_ENOENT);
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), 0);
    sw_free(d);

    /* a byte changed in the entry: its hash no longer holds */
    int fd = open(entry, O_RDWR);
    assert_true(fd >= 0);
    off_t end = lseek(fd, 0, SEEK_END);
    assert_int_equal(pwrite(fd, "X", 1, end - 3), 1);
    close(fd);
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), SW_ENOENT);
    /* written again: used again; cut short: a miss */
    assert_int_equal(sw__rcache_put(&c, &k, bytes, sizeof(bytes), &e), 0);
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), 0);
    sw_free(d);
    assert_int_equal(truncate(entry, end - 1), 0);
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), SW_ENOENT);
    /* an entry that is a link to a good entry elsewhere is not followed */
    char other[4200];
    snprintf(other, sizeof(other), "%s/elsewhere.meta", dir);
    assert_int_equal(sw__rcache_put(&c, &k, bytes, sizeof(bytes), &e), 0);
    assert_int_equal(rename(entry, other), 0);
    assert_int_equal(symlink(other, entry), 0);
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), SW_ENOENT);
    /* and a write replaces the link, never writing through it */
    struct stat before;
    assert_int_equal(stat(other, &before), 0);
    assert_int_equal(sw__rcache_put(&c, &k, "new", 3, &e), 0);
    assert_int_equal(lstat(entry, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    struct stat after;
    assert_int_equal(stat(other, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), 0);
    assert_int_equal(n, 3);
    sw_free(d);
    sw__rcache_close(&c);

    /* a cache directory writable by others, or a link, is not used */
    assert_int_equal(chmod(path, 0777), 0);
    sw__rcache_open(&c);
    assert_int_equal(c.dirfd, -1);
    assert_non_null(strstr(c.why, "only you can write"));
    assert_int_equal(sw__rcache_get(&c, &k, &d, &n, sha), SW_ENOENT);
    assert_int_equal(sw__rcache_put(&c, &k, bytes, sizeof(bytes), &e), 0); /* nothing kept */
    sw__rcache_close(&c);
    assert_int_equal(chmod(path, 0700), 0);
    char moved_dir[4200];
    snprintf(moved_dir, sizeof(moved_dir), "%s/real-meta", dir);
    assert_int_equal(rename(path, moved_dir), 0);
    assert_int_equal(symlink(moved_dir, path), 0);
    sw__rcache_open(&c);
    assert_int_equal(c.dirfd, -1);
    assert_non_null(strstr(c.why, "link"));
    sw__rcache_close(&c);
    unsetenv("SLIPWAY_CACHE");
    swt_tmpdir_free(dir);
}

/* ----------------------------------------------------------------------------------------------
 * Reads through a local host: the ssh transport runs the same argv on the host.
 */
struct fx {
    char *dir;
    struct sw_fleet_host host;
    struct sw_fleet_endpoint ep;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    f->dir = swt_tmpdir();
    char cache[4096];
    snprintf(cache, sizeof(cache), "%s/cache", f->dir);
    setenv("SLIPWAY_CACHE", cache, 1);
    f->host.name = "here";
    f->host.transport = SW_FLEET_LOCAL;
    f->ep.name = "e";
    f->ep.host = &f->host;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    unsetenv("SLIPWAY_CACHE");
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

/* A llama GGUF header with a vocabulary of n_tok tokens, its tensor data to come at data_off;
 * the file is the header, then a hole up to `size` (sparse). */
static void write_sparse_gguf(const char *path, int n_tok, uint64_t size, size_t *data_off)
{
    struct gb b = {0};
    gb_header(&b, 3, 2, 4);
    gb_kv_str(&b, "general.architecture", "llama");
    gb_kv_u32(&b, "llama.block_count", 1);
    gb_kv_u32(&b, "llama.context_length", 4096);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, 9);
    gb_u32(&b, 8);
    gb_u64(&b, (uint64_t)n_tok);
    for (int i = 0; i < n_tok; i++) {
        char t[64];
        snprintf(t, sizeof(t), "a-rather-long-token-number-%d", i);
        gb_str(&b, t);
    }
    gb_tensor(&b, "token_embd.weight", 2, (uint64_t[]){64, 64}, 0, 0);
    gb_tensor(&b, "output.weight", 2, (uint64_t[]){64, 64}, 0, 16384);
    gb_pad(&b, 32);
    *data_off = b.n;
    swt_write(path, b.p, b.n);
    gb_free(&b);
    if (size)
        assert_int_equal(truncate(path, (off_t)size), 0);
}

static int read_gguf(struct fx *f, const char *path, struct sw_plan_model_read *st,
                     struct sw_gguf **g, struct sw_err *e)
{
    struct sw__remote r;
    const struct sw_gguf_read_opts ho = {.header_only = true};
    memset(st, 0, sizeof(*st));
    int rc = sw__remote_begin(&r, &f->ep, st, e);
    if (!rc)
        rc = sw__remote_gguf(&r, path, &ho, g, e);
    sw__remote_end(&r);
    return rc;
}

/* read_gguf, which must succeed: the model (sw_gguf_free it). */
static struct sw_gguf *read_gguf_ok(struct fx *f, const char *path, struct sw_plan_model_read *st)
{
    struct sw_gguf *g = NULL;
    struct sw_err e;
    if (read_gguf(f, path, st, &g, &e))
        fail_msg("%s: %s", path, e.msg);
    return g;
}

static void test_gguf_by_ranges(void **state)
{
    struct fx *f = *state;
    char path[4096];
    size_t data_off;
    snprintf(path, sizeof(path), "%s/big.gguf", f->dir);
    /* ~1.5 MiB of vocabulary: longer than the first read; 6 GiB, all but the header a hole */
    write_sparse_gguf(path, 40000, 6ull << 30, &data_off);
    assert_true(data_off > SW__REMOTE_CHUNK);
    struct sw_plan_model_read st;
    struct sw_gguf *g = read_gguf_ok(f, path, &st);
    assert_int_equal(g->data_offset, data_off);
    assert_false(g->header_only);
    assert_int_equal(g->file_size, 6ull << 30);
    assert_true(st.found);
    assert_int_equal(st.header_bytes, data_off);
    assert_int_equal(st.file_size, 6ull << 30);
    /* the header and at most one read ahead, never the data */
    assert_true(st.range_bytes >= data_off);
    assert_true(st.range_bytes <= data_off + SW__REMOTE_CHUNK);
    assert_true(st.bytes <= st.range_bytes + 96 * st.commands);
    assert_int_equal(st.files_read, 1);
    assert_int_equal(st.files_cached, 0);
    assert_true(st.commands >= 3); /* the stat, the first MiB, the rest */
    print_message("header %zu B: %llu B of ranges, %llu B in all, %u commands\n", data_off,
                  (unsigned long long)st.range_bytes, (unsigned long long)st.bytes, st.commands);
    sw_gguf_free(g);

    /* again: the host is asked for the stat only */
    g = read_gguf_ok(f, path, &st);
    assert_int_equal(st.commands, 1);
    assert_int_equal(st.range_bytes, 0);
    assert_int_equal(st.files_cached, 1);
    assert_int_equal(st.files_read, 0);
    assert_true(st.bytes < 96);
    assert_int_equal(g->data_offset, data_off);
    sw_gguf_free(g);

    /* a changed mtime: read again */
    struct timeval tv[2] = {{1000000000, 0}, {1000000000, 0}};
    assert_int_equal(utimes(path, tv), 0);
    g = read_gguf_ok(f, path, &st);
    assert_int_equal(st.files_read, 1);
    assert_int_equal(st.files_cached, 0);
    assert_true(st.range_bytes >= data_off && st.range_bytes <= data_off + SW__REMOTE_CHUNK);
    sw_gguf_free(g);

    /* not there */
    char none[4200];
    snprintf(none, sizeof(none), "%s/none.gguf", f->dir);
    struct sw_err e;
    assert_int_equal(read_gguf(f, none, &st, &g, &e), SW_ENOENT);
    assert_null(g);
}

static void test_gguf_header_only(void **state)
{
    struct fx *f = *state;
    char path[4096];
    size_t data_off;
    snprintf(path, sizeof(path), "%s/head.gguf", f->dir);
    write_sparse_gguf(path, 10, 0, &data_off); /* the header alone */
    struct sw_plan_model_read st;
    struct sw_gguf *g = NULL;
    struct sw_err e;
    assert_int_equal(read_gguf(f, path, &st, &g, &e), 0);
    assert_true(g->header_only);
    assert_true(st.header_only);
    assert_int_equal(st.range_bytes, data_off); /* the whole file is smaller than a read */
    sw_gguf_free(g);
    /* cut inside the header: truncated, whatever is asked */
    assert_int_equal(truncate(path, (off_t)data_off / 2), 0);
    assert_int_equal(read_gguf(f, path, &st, &g, &e), SW_ETRUNC);
    assert_null(g);
    /* not a GGUF at all */
    swt_write_str(path, "<!DOCTYPE html><html><body>Sign in to continue to the model hub, or "
                        "ask the owner for access</body></html>");
    assert_int_equal(read_gguf(f, path, &st, &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "HTML"));
}

/* A split set on the host: each part read (its header), the set checked and merged as here. */
static void test_gguf_split_by_ranges(void **state)
{
    struct fx *f = *state;
    char first[4200];
    for (int no = 0; no < 3; no++) {
        struct gb b = {0};
        char p[4200];
        snprintf(p, sizeof(p), "%s/m-%05d-of-00003.gguf", f->dir, no + 1);
        if (!no)
            snprintf(first, sizeof(first), "%s", p);
        gb_header(&b, 3, 1, no == 0 ? 4 : 2);
        if (no == 0) {
            gb_kv_str(&b, "general.architecture", "llama");
            gb_kv_u32(&b, "split.tensors.count", 3);
        }
        gb_kv_u16(&b, "split.no", (uint16_t)no);
        gb_kv_u16(&b, "split.count", 3);
        char name[32];
        snprintf(name, sizeof(name), "blk.%d.ffn_up.weight", no);
        gb_tensor(&b, name, 2, (uint64_t[]){8, 2}, 0, 0);
        gb_pad(&b, 32);
        swt_write(p, b.p, b.n);
        gb_free(&b);
        assert_int_equal(truncate(p, 1ll << 30), 0); /* the data: a hole */
    }
    struct sw_plan_model_read st;
    struct sw_gguf *g = read_gguf_ok(f, first, &st);
    assert_int_equal(g->n_splits, 3);
    assert_int_equal(g->n_tensors, 3);
    assert_int_equal(g->file_size, 3ull << 30);
    assert_int_equal(st.files_read, 3);
    assert_int_equal(st.file_size, 3ull << 30);
    assert_true(st.range_bytes >= st.header_bytes);
    assert_true(st.range_bytes <= st.header_bytes + 3 * SW__REMOTE_CHUNK); /* each part: one read */
    sw_gguf_free(g);
    /* again: three stats */
    g = read_gguf_ok(f, first, &st);
    assert_int_equal(st.files_cached, 3);
    assert_int_equal(st.range_bytes, 0);
    sw_gguf_free(g);
    /* a part missing on the host */
    char p[4200];
    snprintf(p, sizeof(p), "%s/m-00003-of-00003.gguf", f->dir);
    assert_int_equal(unlink(p), 0);
    struct sw_err e;
    assert_int_equal(read_gguf(f, first, &st, &g, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "split set incomplete"));
    assert_null(g);
}

/* A safetensors file: one F32 tensor of rows x 4. */
static void write_st(const char *path, const char *name, int rows)
{
    char hdr[256];
    int n = snprintf(hdr, sizeof(hdr),
                     "{\"%s\":{\"dtype\":\"F32\",\"shape\":[%d,4],\"data_offsets\":[0,%d]}}", name,
                     rows, rows * 16);
    uint64_t len = (uint64_t)n;
    size_t total = 8 + (size_t)n + (size_t)rows * 16;
    unsigned char *b = calloc(1, total);
    memcpy(b, &len, 8);
    memcpy(b + 8, hdr, (size_t)n);
    swt_write(path, b, total);
    free(b);
}

static void test_weights_by_headers(void **state)
{
    struct fx *f = *state;
    char dir[4096], p[4200];
    snprintf(dir, sizeof(dir), "%s/ckpt", f->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(p, sizeof(p), "%s/model-00001-of-00002.safetensors", dir);
    write_st(p, "a.weight", 100);
    snprintf(p, sizeof(p), "%s/model-00002-of-00002.safetensors", dir);
    write_st(p, "b.weight", 300);
    snprintf(p, sizeof(p), "%s/model.safetensors.index.json", dir);
    swt_write_str(p, "{\"metadata\":{\"total_size\":6400},\"weight_map\":{"
                     "\"a.weight\":\"model-00001-of-00002.safetensors\","
                     "\"b.weight\":\"model-00002-of-00002.safetensors\"}}");
    uint64_t here = 0, there = 0;
    struct sw_err e;
    assert_int_equal(sw_hf_weight_bytes(dir, &here, &e), 0);
    assert_int_equal(here, 6400);

    struct sw_plan_model_read st;
    struct sw__remote r;
    memset(&st, 0, sizeof(st));
    assert_int_equal(sw__remote_begin(&r, &f->ep, &st, &e), 0);
    int rc = sw__remote_weight_bytes(&r, dir, &there, &e);
    sw__remote_end(&r);
    if (rc)
        fail_msg("%s", e.msg);
    assert_int_equal(there, here);
    /* the index, then each shard's 8-byte length and header, and not one byte of data */
    struct stat ist;
    assert_int_equal(stat(p, &ist), 0);
    assert_int_equal(st.range_bytes, st.header_bytes);
    assert_true(st.range_bytes > (uint64_t)ist.st_size + 2 * 8);
    assert_true(st.range_bytes < (uint64_t)ist.st_size + 2 * 200);
    assert_int_equal(st.files_read, 3);
    assert_int_equal(st.commands, 5); /* stat, index, stat shards, lengths, headers */

    memset(&st, 0, sizeof(st));
    assert_int_equal(sw__remote_begin(&r, &f->ep, &st, &e), 0);
    assert_int_equal(sw__remote_weight_bytes(&r, dir, &there, &e), 0);
    sw__remote_end(&r);
    assert_int_equal(there, here);
    assert_int_equal(st.range_bytes, 0);
    assert_int_equal(st.files_cached, 3);
    assert_int_equal(st.commands, 2); /* the two stats */

    /* a shard the index names that is not there */
    snprintf(p, sizeof(p), "%s/model-00002-of-00002.safetensors", dir);
    assert_int_equal(unlink(p), 0);
    memset(&st, 0, sizeof(st));
    assert_int_equal(sw__remote_begin(&r, &f->ep, &st, &e), 0);
    assert_int_equal(sw__remote_weight_bytes(&r, dir, &there, &e), SW_ENOENT);
    sw__remote_end(&r);
    assert_non_null(strstr(e.msg, "model-00002-of-00002.safetensors"));
    /* a shard whose length claims more than the file */
    FILE *x = fopen(p, "wb");
    uint64_t huge = 1ull << 40;
    fwrite(&huge, 8, 1, x);
    fwrite("{}", 2, 1, x);
    fclose(x);
    memset(&st, 0, sizeof(st));
    assert_int_equal(sw__remote_begin(&r, &f->ep, &st, &e), 0);
    rc = sw__remote_weight_bytes(&r, dir, &there, &e);
    sw__remote_end(&r);
    assert_int_equal(rc, SW_ETRUNC);
    assert_non_null(strstr(e.msg, "exceeds the file"));
}

static void test_index_parse(void **state)
{
    (void)state;
    struct sw_st_index ix;
    struct sw_err e;
    static const char good[] = "{\"metadata\":{\"total_size\":10},\"weight_map\":{\"a\":\"s1\","
                               "\"b\":\"s2\",\"c\":\"s1\"}}";
    assert_int_equal(sw_st_index_parse(good, sizeof(good) - 1, "h:/i.json", &ix, &e), 0);
    assert_int_equal(ix.n_shards, 2);
    assert_int_equal(ix.n_tensors, 3);
    assert_int_equal(ix.total_size, 10);
    assert_false(ix.complete);
    sw_st_index_free(&ix);
    static const char *const bad[] = {
        "{\"weight_map\":{\"a\":\"../s1\"}}",
        "{\"weight_map\":{\"a\":\"/etc/passwd\"}}",
        "{\"weight_map\":[]}",
        "{\"metadata\":{\"total_size\":-1},\"weight_map\":{}}",
        "not json",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++)
        assert_int_not_equal(sw_st_index_parse(bad[i], strlen(bad[i]), "h:/i.json", &ix, &e), 0);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_stat),
        cmocka_unit_test(test_parse_ranges),
        cmocka_unit_test(test_cache_keys),
        cmocka_unit_test(test_index_parse),
        cmocka_unit_test_setup_teardown(test_gguf_by_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gguf_header_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gguf_split_by_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weights_by_headers, setup, teardown),
    };
    return cmocka_run_group_tests_name("plan_remote", tests, NULL, NULL);
}
