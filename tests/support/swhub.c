/*
 * swhub: a Hub look-alike on a real nginx (see swhub.h). The config is regenerated at every
 * start from the files and faults declared, so a test can cut a transfer (swhub_kill), change a
 * fault and start again on the same port.
 */
#include "swhub.h"

#include <slipway/core.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swtest.h"

#define NGINX "/usr/sbin/nginx"
#define MAXF  32

struct hubfile {
    char *name;
    unsigned char *data;
    size_t len;
    bool lfs;
    enum swhub_fault fault;
    char sha256[65];
    char gitsha1[41];
};

struct swhub {
    char *dir;
    char repo[256];
    char commit[41];
    char other[41];
    char token[256];
    struct hubfile f[MAXF];
    int n;
    int port;
    pid_t pid;
    char url[64];
};

static void hex(const unsigned char *d, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

struct swhub *swhub_new(const char *repo, const char *commit)
{
    if (access(NGINX, X_OK) != 0)
        return NULL;
    struct swhub *h = calloc(1, sizeof(*h));
    h->dir = swt_tmpdir();
    snprintf(h->repo, sizeof(h->repo), "%s", repo);
    snprintf(h->commit, sizeof(h->commit), "%s", commit);
    snprintf(h->other, sizeof(h->other), "%s", commit);
    h->other[39] = h->other[39] == 'f' ? 'e' : 'f';
    return h;
}

void swhub_file(struct swhub *h, const char *name, const void *data, size_t len, bool lfs)
{
    if (h->n >= MAXF)
        abort();
    struct hubfile *f = &h->f[h->n++];
    f->name = strdup(name);
    f->data = malloc(len ? len : 1);
    memcpy(f->data, data, len);
    f->len = len;
    f->lfs = lfs;
    unsigned char d[32];
    unsigned dl = 32;
    EVP_Digest(data, len, d, &dl, EVP_sha256(), NULL);
    hex(d, 32, f->sha256);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    char hdr[64];
    int hn = snprintf(hdr, sizeof(hdr), "blob %zu", len);
    EVP_DigestInit_ex(c, EVP_sha1(), NULL);
    EVP_DigestUpdate(c, hdr, (size_t)hn + 1); /* with its NUL */
    EVP_DigestUpdate(c, data, len);
    dl = 20;
    EVP_DigestFinal_ex(c, d, &dl);
    EVP_MD_CTX_free(c);
    hex(d, 20, f->gitsha1);
}

static struct hubfile *find(const struct swhub *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->f[i].name, name))
            return (struct hubfile *)&h->f[i];
    return NULL;
}

void swhub_fault(struct swhub *h, const char *name, enum swhub_fault fault)
{
    struct hubfile *f = find(h, name);
    if (!f)
        abort();
    f->fault = fault;
}

void swhub_require_token(struct swhub *h, const char *token)
{
    snprintf(h->token, sizeof(h->token), "%s", token);
}

const char *swhub_url(const struct swhub *h)
{
    return h->url;
}
const char *swhub_dir(const struct swhub *h)
{
    return h->dir;
}
const char *swhub_commit(const struct swhub *h)
{
    return h->commit;
}
const char *swhub_other_commit(const struct swhub *h)
{
    return h->other;
}
pid_t swhub_pid(const struct swhub *h)
{
    return h->pid;
}

const char *swhub_sha256(const struct swhub *h, const char *name)
{
    struct hubfile *f = find(h, name);
    return f ? f->sha256 : NULL;
}

const char *swhub_gitsha1(const struct swhub *h, const char *name)
{
    struct hubfile *f = find(h, name);
    return f ? f->gitsha1 : NULL;
}

static void mkdirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    mkdir(tmp, 0755);
}

static void put(FILE *c, const char *fmt, ...) SW_PRINTF(2, 3);
static void put(FILE *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c, fmt, ap);
    va_end(ap);
}

static void write_tree(struct swhub *h)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/www/cdn", h->dir);
    mkdirs(p);
    snprintf(p, sizeof(p), "%s/www/api/%s", h->dir, h->repo);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdirs(p);
    /* the model info: what /api/models/{repo}/revision/{rev} answers */
    json_t *info = json_pack("{s:s, s:s, s:[]}", "id", h->repo, "sha", h->commit, "siblings");
    for (int i = 0; i < h->n; i++)
        json_array_append_new(json_object_get(info, "siblings"),
                              json_pack("{s:s}", "rfilename", h->f[i].name));
    char *text = json_dumps(info, JSON_COMPACT);
    snprintf(p, sizeof(p), "%s/www/api/%s.json", h->dir, h->repo);
    swt_write_str(p, text);
    free(text);
    json_decref(info);
    for (int i = 0; i < h->n; i++) {
        struct hubfile *f = &h->f[i];
        if (f->lfs) {
            snprintf(p, sizeof(p), "%s/www/cdn/%s", h->dir, f->sha256);
            if (f->fault == SWHUB_LFS_POINTER) {
                char ptr[256];
                snprintf(ptr, sizeof(ptr),
                         "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %zu\n",
                         f->sha256, f->len);
                swt_write_str(p, ptr);
            } else if (f->fault == SWHUB_TRUNCATED) {
                swt_write(p, f->data, f->len / 2);
            } else {
                swt_write(p, f->data, f->len);
            }
        } else {
            snprintf(p, sizeof(p), "%s/www/git/%s", h->dir, f->name);
            char *s = strrchr(p, '/');
            *s = '\0';
            mkdirs(p);
            *s = '/';
            swt_write(p, f->data, f->len);
        }
    }
}

static void write_conf(struct swhub *h)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/nginx.conf", h->dir);
    FILE *c = fopen(path, "w");
    const char *d = h->dir;
    put(c,
        "daemon off;\nmaster_process off;\nworker_processes 1;\n"
        "error_log %s/error.log;\npid %s/nginx.pid;\n"
        "events { worker_connections 128; }\n"
        "http {\n"
        "  log_format hub '$request_method $uri $status \"$http_range\" $body_bytes_sent';\n"
        "  access_log %s/access.log hub;\n"
        "  client_body_temp_path %s/cb;\n  proxy_temp_path %s/px;\n"
        "  fastcgi_temp_path %s/fc;\n  uwsgi_temp_path %s/uw;\n  scgi_temp_path %s/sc;\n"
        "  keepalive_requests 1000;\n  types { }\n  default_type application/octet-stream;\n"
        "  server {\n    listen 127.0.0.1:%d;\n    root %s/www;\n",
        d, d, d, d, d, d, d, d, h->port, d);
    put(c, "    location ~ ^/api/models/([^/]+)/([^/]+)/revision/([^/]+)$ {\n"
           "      default_type application/json;\n      try_files /api/$1/$2.json =404;\n    }\n");
    put(c, "    location /cdn/ { }\n");
    char gate[512] = "";
    if (h->token[0])
        snprintf(gate, sizeof(gate),
                 "      if ($http_authorization != \"Bearer %s\") {\n"
                 "        return 401 '{\"error\":\"Access to model %s is restricted.\"}';\n"
                 "      }\n",
                 h->token, h->repo);
    for (int i = 0; i < h->n; i++) {
        struct hubfile *f = &h->f[i];
        const char *revs[2] = {"main", h->commit};
        for (int r = 0; r < 2; r++) {
            /* a moved branch: "main" resolves elsewhere now; the old commit still answers */
            const char *commit = f->fault == SWHUB_MOVED && r == 0 ? h->other : h->commit;
            put(c, "    location = /%s/resolve/%s/%s {\n%s", h->repo, revs[r], f->name, gate);
            put(c, "      add_header X-Repo-Commit %s always;\n", commit);
            if (f->lfs) {
                const char *sha = f->sha256;
                char wrong[65];
                if (f->fault == SWHUB_WRONG_SHA) {
                    snprintf(wrong, sizeof(wrong), "%s", f->sha256);
                    wrong[0] = wrong[0] == '0' ? '1' : '0';
                    sha = wrong;
                } else if (f->fault == SWHUB_ETAG_OPAQUE) {
                    snprintf(wrong, sizeof(wrong), "%.32s-3", f->sha256);
                    sha = wrong;
                } else if (f->fault == SWHUB_ETAG_PATH) {
                    sha = "../../escaped/x";
                }
                put(c,
                    "      add_header X-Linked-Size %zu;\n"
                    "      add_header X-Linked-Etag '\"%s\"';\n"
                    "      add_header ETag '\"%s\"';\n"
                    "      return 302 %s/cdn/%s?X-Amz-Signature=s3cr3t&X-Amz-Expires=3600;\n",
                    f->len, sha, sha, h->url, f->sha256);
            } else {
                put(c,
                    "      etag off;\n      add_header ETag '\"%s\"';\n"
                    "      alias %s/www/git/%s;\n",
                    f->gitsha1, d, f->name);
            }
            put(c, "    }\n");
        }
        if (f->lfs && f->fault != SWHUB_OK && f->fault != SWHUB_ETAG_OPAQUE &&
            f->fault != SWHUB_ETAG_PATH) {
            put(c, "    location = /cdn/%s {\n", f->sha256);
            switch (f->fault) {
            case SWHUB_403_HTML:
                put(c, "      default_type text/html;\n"
                       "      return 403 '<!DOCTYPE html>\\n<html><head><title>403 Forbidden"
                       "</title></head><body><h1>AccessDenied</h1><p>Request has expired"
                       "</p></body></html>\\n';\n");
                break;
            case SWHUB_500:
                put(c, "      return 500;\n");
                break;
            case SWHUB_NO_RANGE:
                put(c, "      max_ranges 0;\n");
                break;
            case SWHUB_SLOW:
                put(c, "      limit_rate 256k;\n      limit_rate_after 0;\n");
                break;
            default:
                break;
            }
            put(c, "    }\n");
        }
    }
    put(c, "  }\n}\n");
    fclose(c);
}

int swhub_start(struct swhub *h)
{
    bool fixed = h->port != 0;
    for (int attempt = 0; attempt < (fixed ? 40 : 5) && !h->pid; attempt++) {
        if (!fixed)
            h->port = swt_free_port();
        snprintf(h->url, sizeof(h->url), "http://127.0.0.1:%d", h->port);
        write_tree(h);
        write_conf(h);
        char conf[4096];
        snprintf(conf, sizeof(conf), "%s/nginx.conf", h->dir);
        pid_t pid = fork();
        if (pid == 0) {
            /* a test that fails mid-way (cmocka longjmps past swhub_free) must not leave nginx
             * behind: it dies with us */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int devnull = open("/dev/null", O_RDWR);
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
            execl(NGINX, "nginx", "-p", h->dir, "-c", conf, (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 400; i++) {
            if (swt_port_open(h->port)) {
                h->pid = pid;
                break;
            }
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                pid = 0;
                break; /* it exited (port taken?) */
            }
            sw_sleep_ms(10);
        }
        if (!h->pid && pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        if (!h->pid && fixed)
            sw_sleep_ms(50); /* the same port, just released: try again */
    }
    return h->pid ? 0 : -1;
}

void swhub_kill(struct swhub *h)
{
    if (h && h->pid > 0) {
        kill(h->pid, SIGKILL);
        waitpid(h->pid, NULL, 0);
        h->pid = 0;
    }
}

void swhub_stop(struct swhub *h)
{
    if (h && h->pid > 0) {
        kill(h->pid, SIGTERM);
        waitpid(h->pid, NULL, 0);
        h->pid = 0;
    }
}

void swhub_free(struct swhub *h)
{
    if (!h)
        return;
    swhub_stop(h);
    for (int i = 0; i < h->n; i++) {
        free(h->f[i].name);
        free(h->f[i].data);
    }
    swt_tmpdir_free(h->dir);
    free(h);
}

char *swhub_log_text(const struct swhub *h)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/access.log", h->dir);
    FILE *f = fopen(p, "r");
    if (!f)
        return strdup("");
    struct sw_buf b;
    sw_buf_init(&b, 64u << 20);
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        sw_buf_append(&b, tmp, n);
    fclose(f);
    char *s = strdup(sw_buf_cstr(&b));
    sw_buf_free(&b);
    return s;
}

struct swhub *swhub_client(const char *repo, const char *commit, char **tmp, char *cache, size_t cn,
                           const char *cache_name, char *home, size_t hn)
{
    struct swhub *h = swhub_new(repo, commit);
    if (!h)
        return NULL;
    *tmp = swt_tmpdir();
    snprintf(cache, cn, "%s/%s", *tmp, cache_name);
    snprintf(home, hn, "%s/hf-home", *tmp);
    mkdir(home, 0700);
    return h;
}

void swhub_env(const struct swhub *h, const char *cache, const char *home)
{
    setenv("HF_ENDPOINT", swhub_url(h), 1);
    setenv("HF_HUB_CACHE", cache, 1);
    setenv("HF_HOME", home, 1);
    setenv("SLIPWAY_NO_PROGRESS", "1", 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_TOKEN_PATH");
}

unsigned char *swhub_safetensors(size_t total, uint32_t seed, const char *tensor)
{
    unsigned char *b = malloc(total);
    size_t hl = 128, n = total - 8 - hl;
    char hdr[129];
    int k = snprintf(hdr, sizeof(hdr),
                     "{\"%s\":{\"dtype\":\"U8\",\"shape\":[%zu],"
                     "\"data_offsets\":[0,%zu]}}",
                     tensor, n, n);
    memset(hdr + k, ' ', hl - (size_t)k);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, hdr, hl);
    uint32_t x = seed;
    for (size_t i = 8 + hl; i < total; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)x;
    }
    return b;
}
