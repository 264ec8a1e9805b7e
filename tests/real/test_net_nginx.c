/*
 * net against a real, independent HTTP server: nginx (Debian's nginx-light) started on 127.0.0.1
 * with a throwaway config, serving files from a temporary directory. What payload will do with
 * the client: stream an 8 MiB file through on_data while hashing it (SHA-256, compared with the
 * file's), resume with a Range request (206 + Content-Range), run parallel downloads on one loop
 * and reuse their connections, refuse an error page (fail_on_status: the 404 body never reaches
 * on_data), HEAD for the size. nginx is stopped by PID. Skips when nginx is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/net.h>

#include "swtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (8u * 1024u * 1024u)

struct ngx {
    char *dir;
    pid_t pid;
    int port;
    char base[64];
    unsigned char big_sha[32];
};

static void sha256(const void *p, size_t n, unsigned char out[32])
{
    unsigned int len = 32;
    EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

static int setup(void **state)
{
    if (access("/usr/sbin/nginx", X_OK) != 0) {
        *state = NULL;
        return 0;
    }
    struct ngx *g = calloc(1, sizeof(*g));
    g->dir = swt_tmpdir();
    char www[4200], conf[4200], path[4400];
    snprintf(www, sizeof(www), "%s/www", g->dir);
    mkdir(www, 0755);
    unsigned char *big = malloc(BIG);
    swt_noise(big, BIG, 2463534242u);
    sha256(big, BIG, g->big_sha);
    snprintf(path, sizeof(path), "%s/big.bin", www);
    swt_write(path, big, BIG);
    free(big);
    snprintf(path, sizeof(path), "%s/small.json", www);
    swt_write_str(path, "{\"ok\":true}\n");
    for (int attempt = 0; attempt < 5 && !g->pid; attempt++) {
        g->port = swt_free_port();
        snprintf(conf, sizeof(conf), "%s/nginx.conf", g->dir);
        char text[2048];
        snprintf(text, sizeof(text),
                 "daemon off;\nmaster_process off;\nworker_processes 1;\n"
                 "error_log %s/error.log;\npid %s/nginx.pid;\n"
                 "events { worker_connections 64; }\n"
                 "http {\n  access_log off;\n  client_body_temp_path %s/cb;\n"
                 "  proxy_temp_path %s/px;\n  fastcgi_temp_path %s/fc;\n"
                 "  uwsgi_temp_path %s/uw;\n  scgi_temp_path %s/sc;\n"
                 "  keepalive_requests 1000;\n"
                 "  server {\n    listen 127.0.0.1:%d;\n    root %s;\n  }\n}\n",
                 g->dir, g->dir, g->dir, g->dir, g->dir, g->dir, g->dir, g->port, www);
        swt_write_str(conf, text);
        pid_t pid = fork();
        if (pid == 0) {
            int devnull = open("/dev/null", 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
            execl("/usr/sbin/nginx", "nginx", "-p", g->dir, "-c", conf, (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 200; i++) {
            if (swt_port_open(g->port)) {
                g->pid = pid;
                break;
            }
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid)
                break; /* it exited (port taken?): try another port */
            sw_sleep_ms(25);
        }
        if (!g->pid) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
    }
    if (!g->pid) {
        print_error("nginx did not start; see %s/error.log\n", g->dir);
        return -1;
    }
    snprintf(g->base, sizeof(g->base), "http://127.0.0.1:%d", g->port);
    *state = g;
    return 0;
}

static int teardown(void **state)
{
    struct ngx *g = *state;
    if (!g)
        return 0;
    kill(g->pid, SIGTERM);
    waitpid(g->pid, NULL, 0);
    swt_tmpdir_free(g->dir);
    free(g);
    return 0;
}

static const char *url(struct ngx *g, const char *path)
{
    static char b[4][256];
    static int i;
    char *u = b[i++ % 4];
    snprintf(u, 256, "%s%s", g->base, path);
    return u;
}

struct hashing {
    EVP_MD_CTX *ctx;
    uint64_t bytes;
    int pieces;
    uint64_t prev_t;
    bool ordered;
};

static int hash_piece(void *ud, struct sw_net_xfer *x, const char *p, size_t n, uint64_t t)
{
    struct hashing *h = ud;
    EVP_DigestUpdate(h->ctx, p, n);
    h->bytes += n;
    h->pieces++;
    if (t < h->prev_t)
        h->ordered = false;
    h->prev_t = t;
    return 0;
}

static void hashing_init(struct hashing *h)
{
    memset(h, 0, sizeof(*h));
    h->ctx = EVP_MD_CTX_new();
    h->ordered = true;
    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL);
}

static void hashing_end(struct hashing *h, unsigned char out[32])
{
    unsigned int len = 32;
    EVP_DigestFinal_ex(h->ctx, out, &len);
    EVP_MD_CTX_free(h->ctx);
}

static void test_stream_and_hash(void **state)
{
    struct ngx *g = *state;
    swt_need(g != NULL, "nginx (/usr/sbin/nginx, scripts/deps.sh installs it)");
    struct hashing h;
    hashing_init(&h);
    struct sw_net_req q = {.url = url(g, "/big.bin"),
                           .fail_on_status = true,
                           .idle_ms = 10000,
                           .on_data = hash_piece,
                           .ud = &h};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), 0);
    unsigned char got[32];
    hashing_end(&h, got);
    assert_int_equal(r.status, 200);
    assert_int_equal(h.bytes, BIG);
    assert_int_equal(r.body_bytes, BIG);
    assert_int_equal(r.body.len, 0); /* streamed, not buffered */
    assert_true(h.pieces > 1);
    assert_true(h.ordered);
    assert_memory_equal(got, g->big_sha, 32);
    char cl[32];
    snprintf(cl, sizeof(cl), "%u", BIG);
    assert_string_equal(sw_net_resp_header(&r, "Content-Length"), cl);
    assert_non_null(strstr(sw_net_resp_header(&r, "server"), "nginx"));
    sw_net_resp_free(&r);
}

static void test_range_resume(void **state)
{
    struct ngx *g = *state;
    swt_need(g != NULL, "nginx (/usr/sbin/nginx, scripts/deps.sh installs it)");
    /* fetch the first 3 MiB, then resume from there: the two halves hash to the whole file */
    struct hashing h;
    hashing_init(&h);
    const char *first[] = {"Range: bytes=0-3145727", NULL};
    struct sw_net_req q = {.url = url(g, "/big.bin"),
                           .headers = first,
                           .fail_on_status = true,
                           .on_data = hash_piece,
                           .ud = &h};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), 0);
    assert_int_equal(r.status, 206);
    assert_int_equal(h.bytes, 3145728);
    sw_net_resp_free(&r);
    const char *rest[] = {"Range: bytes=3145728-", NULL};
    q.headers = rest;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), 0);
    assert_int_equal(r.status, 206);
    char cr[64];
    snprintf(cr, sizeof(cr), "bytes 3145728-%u/%u", BIG - 1, BIG);
    assert_string_equal(sw_net_resp_header(&r, "content-range"), cr);
    unsigned char got[32];
    hashing_end(&h, got);
    assert_int_equal(h.bytes, BIG);
    assert_memory_equal(got, g->big_sha, 32);
    sw_net_resp_free(&r);
}

struct dl {
    struct sw_net_xfer x;
    struct hashing h;
};

static void batch(struct ngx *g, struct sw_net_loop *l, struct dl *d, int n, long *conns)
{
    struct sw_err e;
    for (int i = 0; i < n; i++) {
        sw_net_xfer_init(&d[i].x);
        hashing_init(&d[i].h);
        d[i].x.req.url = url(g, "/big.bin");
        d[i].x.req.fail_on_status = true;
        d[i].x.req.on_data = hash_piece;
        d[i].x.req.ud = &d[i].h;
        assert_int_equal(sw_net_start(l, &d[i].x, &e), 0);
    }
    assert_int_equal(sw_net_loop_run(l), 0);
    *conns = 0;
    for (int i = 0; i < n; i++) {
        unsigned char got[32];
        hashing_end(&d[i].h, got);
        assert_int_equal(d[i].x.resp.rc, 0);
        assert_memory_equal(got, g->big_sha, 32);
        *conns += d[i].x.resp.new_connections;
        sw_net_xfer_close(&d[i].x);
    }
}

static void test_parallel_and_reuse(void **state)
{
    struct ngx *g = *state;
    swt_need(g != NULL, "nginx (/usr/sbin/nginx, scripts/deps.sh installs it)");
    struct sw_net_loop l;
    struct sw_err e;
    assert_int_equal(sw_net_loop_init(&l, NULL, &e), 0);
    struct dl d[4];
    long conns;
    batch(g, &l, d, 4, &conns);
    assert_int_equal(conns, 4);
    batch(g, &l, d, 4, &conns);
    assert_int_equal(conns, 0);
    /* and a one-shot call on the same loop reuses one too */
    struct sw_net_resp r;
    assert_int_equal(sw_net_get(&l, url(g, "/small.json"), NULL, &r, &e), 0);
    assert_int_equal(r.new_connections, 0);
    assert_string_equal(sw_buf_cstr(&r.body), "{\"ok\":true}\n");
    sw_net_resp_free(&r);
    sw_net_loop_close(&l);
}

static int never(void *ud, struct sw_net_xfer *x, const char *p, size_t n, uint64_t t)
{
    fail_msg("an error page reached on_data");
    return 0;
}

static void test_error_page_and_head(void **state)
{
    struct ngx *g = *state;
    swt_need(g != NULL, "nginx (/usr/sbin/nginx, scripts/deps.sh installs it)");
    struct sw_net_req q = {
        .url = url(g, "/missing.safetensors"), .fail_on_status = true, .on_data = never};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &r, &e), SW_EHTTP);
    assert_int_equal(r.status, 404);
    assert_int_equal(r.fail, SW_NET_HTTP_STATUS);
    assert_non_null(strstr(e.msg, "HTTP 404"));
    assert_non_null(strstr(e.msg, "HTML"));
    assert_non_null(strstr(sw_buf_cstr(&r.body), "404 Not Found"));
    sw_net_resp_free(&r);
    struct sw_net_req h = {.url = url(g, "/big.bin"), .method = "HEAD"};
    assert_int_equal(sw_net_request(NULL, &h, &r, &e), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_bytes, 0);
    assert_non_null(sw_net_resp_header(&r, "content-length"));
    sw_net_resp_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_and_hash),
        cmocka_unit_test(test_range_resume),
        cmocka_unit_test(test_parallel_and_reuse),
        cmocka_unit_test(test_error_page_and_head),
    };
    return cmocka_run_group_tests_name("net_nginx", tests, setup, teardown);
}
