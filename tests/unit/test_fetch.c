/*
 * fetch: the pieces that need no server. The token's sources and the refusal of a token file
 * others can read, redaction, the Hugging Face cache layout (names, relative snapshot links,
 * refs), resolve URLs and their encoding, HF_ENDPOINT. The downloads themselves run against a
 * real nginx in tests/real/test_fetch_hub.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fetch.h>

#include "swtest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;

static int setup(void **state)
{
    dir = swt_tmpdir();
    unsetenv("HF_TOKEN");
    unsetenv("HF_TOKEN_PATH");
    unsetenv("HF_HUB_CACHE");
    unsetenv("XDG_CACHE_HOME");
    setenv("HF_HOME", dir, 1);
    return 0;
}

static int teardown(void **state)
{
    swt_tmpdir_free(dir);
    return 0;
}

static void test_token_sources(void **state)
{
    struct sw_fetch_token t;
    struct sw_err e;
    /* nothing anywhere: anonymous, not an error */
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "");
    /* the file in HF_HOME, only when only its owner can read it */
    const char *tf = swt_join(dir, "token");
    swt_write_str(tf, "  hf_fromfile123\n");
    chmod(tf, 0640);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "0640"));
    assert_non_null(strstr(e.msg, "chmod 600"));
    assert_null(strstr(e.msg, "hf_fromfile123"));
    assert_string_equal(t.value, "");
    chmod(tf, 0604);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    chmod(tf, 0600);
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "hf_fromfile123");
    assert_string_equal(t.source, tf);
    /* HF_TOKEN wins */
    setenv("HF_TOKEN", "hf_fromenv456", 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "hf_fromenv456");
    assert_string_equal(t.source, "HF_TOKEN");
    /* a header injection is refused */
    setenv("HF_TOKEN", "hf_abc\r\nX-Evil: 1", 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    assert_string_equal(t.value, "");
    unsetenv("HF_TOKEN");
    /* HF_TOKEN_PATH; a symlink is not followed */
    const char *other = swt_join(dir, "other-token");
    swt_write_str(other, "hf_other789");
    chmod(other, 0600);
    setenv("HF_TOKEN_PATH", other, 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "hf_other789");
    const char *ln = swt_join(dir, "link-token");
    assert_int_equal(symlink(other, ln), 0);
    setenv("HF_TOKEN_PATH", ln, 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "symbolic link"));
    unsetenv("HF_TOKEN_PATH");
    sw_fetch_token_clear(&t);
    assert_string_equal(t.value, "");
}

static void test_redact(void **state)
{
    char s[200] = "Authorization: Bearer hf_SECRET; again hf_SECRET end";
    sw_fetch_redact(s, "hf_SECRET");
    assert_string_equal(s, "Authorization: Bearer ***; again *** end");
    char t[50] = "nothing here";
    sw_fetch_redact(t, "hf_SECRET");
    assert_string_equal(t, "nothing here");
    sw_fetch_redact(t, "");
    sw_fetch_redact(t, NULL);
    sw_fetch_redact(NULL, "x");
    assert_string_equal(t, "nothing here");
}

static void test_hfcache_layout(void **state)
{
    char c[4200], rd[4400];
    struct sw_err e;
    setenv("HF_HUB_CACHE", "/x/hub", 1);
    assert_int_equal(sw_hfcache_dir(c, sizeof(c), &e), 0);
    assert_string_equal(c, "/x/hub");
    unsetenv("HF_HUB_CACHE");
    setenv("HF_HOME", "/y", 1);
    assert_int_equal(sw_hfcache_dir(c, sizeof(c), &e), 0);
    assert_string_equal(c, "/y/hub");
    setenv("HF_HOME", dir, 1);
    assert_int_equal(sw_hfcache_repo_dir("/c", "Qwen/Qwen3-8B", rd, sizeof(rd), &e), 0);
    assert_string_equal(rd, "/c/models--Qwen--Qwen3-8B");
    assert_int_equal(sw_hfcache_repo_dir("/c", "noslash", rd, sizeof(rd), &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_repo_dir("/c", "a/b/c", rd, sizeof(rd), &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_repo_dir("/c", "../x", rd, sizeof(rd), &e), SW_EINVAL);

    snprintf(c, sizeof(c), "%s/hub", dir);
    assert_int_equal(sw_hfcache_repo_dir(c, "org/m", rd, sizeof(rd), &e), 0);
    const char *commit = "89abcdef0123456789abcdef0123456789abcdef";
    assert_int_equal(sw_hfcache_link(rd, commit, "sub/dir/w.safetensors", "deadbeef", &e), 0);
    char p[5000], l[5000];
    snprintf(p, sizeof(p), "%s/snapshots/%s/sub/dir/w.safetensors", rd, commit);
    ssize_t n = readlink(p, l, sizeof(l) - 1);
    assert_true(n > 0);
    l[n] = '\0';
    assert_string_equal(l, "../../../../blobs/deadbeef");
    /* replaced when it points elsewhere */
    assert_int_equal(sw_hfcache_link(rd, commit, "sub/dir/w.safetensors", "cafe", &e), 0);
    n = readlink(p, l, sizeof(l) - 1);
    l[n] = '\0';
    assert_string_equal(l, "../../../../blobs/cafe");
    assert_int_equal(sw_hfcache_link(rd, commit, "config.json", "abc", &e), 0);
    snprintf(p, sizeof(p), "%s/snapshots/%s/config.json", rd, commit);
    n = readlink(p, l, sizeof(l) - 1);
    l[n] = '\0';
    assert_string_equal(l, "../../blobs/abc");
    /* refs */
    char got[41];
    assert_int_equal(sw_hfcache_read_ref(rd, "main", got, &e), SW_ENOENT);
    assert_int_equal(sw_hfcache_write_ref(rd, "main", commit, &e), 0);
    assert_int_equal(sw_hfcache_read_ref(rd, "main", got, &e), 0);
    assert_string_equal(got, commit);
    assert_int_equal(sw_hfcache_write_ref(rd, "../x", commit, &e), SW_EINVAL);
    /* the file holds the bare commit, as huggingface_hub writes it */
    snprintf(p, sizeof(p), "%s/refs/main", rd);
    char *d = NULL;
    size_t len;
    assert_int_equal(sw_read_file(p, 100, &d, &len, &e), 0);
    assert_int_equal(len, 40);
    sw_free(d);
    /* blob names */
    struct sw_payload_file f = {0};
    assert_null(sw_hfcache_blob_name(&f));
    char oid[] = "0123456789012345678901234567890123456789";
    f.git_oid = oid;
    assert_string_equal(sw_hfcache_blob_name(&f), oid);
    snprintf(f.sha256, sizeof(f.sha256), "%064d", 7);
    assert_string_equal(sw_hfcache_blob_name(&f), f.sha256);
}

static void test_urls(void **state)
{
    char u[512];
    assert_int_equal(sw_hub_resolve_url("https://hf.co", "org/m", "main", "a b/c+d.json", u,
                                        sizeof(u)),
                     0);
    assert_string_equal(u, "https://hf.co/org/m/resolve/main/a%20b/c%2Bd.json");
    /* a revision with a slash is one path segment */
    assert_int_equal(sw_hub_resolve_url("https://hf.co", "org/m", "refs/pr/1", "x", u, sizeof(u)),
                     0);
    assert_string_equal(u, "https://hf.co/org/m/resolve/refs%2Fpr%2F1/x");
    assert_int_equal(sw_hub_resolve_url("https://hf.co", "org/m", "main", "x", u, 20), SW_ERANGE);
    unsetenv("HF_ENDPOINT");
    assert_string_equal(sw_hub_endpoint(), "https://huggingface.co");
    setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
    assert_string_equal(sw_hub_endpoint(), "http://127.0.0.1:9");
    unsetenv("HF_ENDPOINT");
    assert_string_equal(sw_fetch_state_name(SW_FETCH_LINKED), "linked");
    assert_string_equal(sw_fetch_state_name((enum sw_fetch_state)99), "?");
}

static void test_cli_refuses_token_flag(void **state)
{
    struct swt_run r;
    swt_slipway(&r, "fetch", "org/m", "--token", "hf_x", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "HF_TOKEN"));
    swt_run_free(&r);
    swt_slipway(&r, "fetch", "org/m", "--json", "--quiet", NULL);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_sources),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_hfcache_layout),
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_cli_refuses_token_flag),
    };
    return cmocka_run_group_tests_name("fetch", tests, setup, teardown);
}
