/*
 * plan/remote: reading ranges of files on an endpoint's host, for the laws' model metadata when the
 * payload is not on this machine (docs/hosts.md, "Model metadata from where the model is").
 *
 * Two commands, run through the host's transport (sw_host_run: over ssh every word is quoted, so
 * the paths are never read by the remote shell; they reach the fixed scripts below as "$@"):
 *   - stat:   `stat -L -c '%s %.9Y %f' -- PATH` per path (size, mtime to the nanosecond, mode;
 *             links followed, as the engine opens them), "-" for a path stat cannot see;
 *   - ranges: per (PATH, OFFSET, COUNT), the same stat line then exactly the bytes
 *             `dd iflag=skip_bytes,count_bytes` copies (GNU coreutils: one process that seeks, and
 *             the exact count, on any Debian host).
 * Every range arrives with the stat of its file, taken by the same command just before the read,
 * and must match the stat the caller asked with: a file that changed in between is an error, not
 * a torn header. Replies are parsed as untrusted input (bounded lines, exact framing). Every byte
 * the commands print is counted in the session's struct sw_plan_model_read.
 *
 * A host that could not be reached is remembered for the rest of the process (a plan asks for
 * the model several times: one connect timeout, not one per gate).
 *
 * What it does not do: decide what to read (remote_model.c), keep anything (remote_cache.c), or
 * read a path on a local host (the plan reads this machine's files itself).
 */
#include "plan/remote_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char stat_script[] =
    "for f; do stat -L -c '%s %.9Y %f' -- \"$f\" 2>/dev/null || echo -; done";
static const char ranges_script[] =
    "while [ $# -ge 3 ]; do stat -L -c '%s %.9Y %f' -- \"$1\" || exit 3; "
    "dd if=\"$1\" iflag=skip_bytes,count_bytes skip=\"$2\" count=\"$3\" bs=1M status=none "
    "|| exit 4; shift 3; done";

/* Hosts that failed to answer in this process, and why. */
#define DOWN_MAX 16
static struct {
    char id[300];
    char why[512];
} down[DOWN_MAX];
static int n_down;
static pthread_mutex_t down_mu = PTHREAD_MUTEX_INITIALIZER;

static bool host_down(const char *id, char *why, size_t whyn)
{
    bool hit = false;
    pthread_mutex_lock(&down_mu);
    for (int i = 0; i < n_down && !hit; i++)
        if (!strcmp(down[i].id, id)) {
            snprintf(why, whyn, "%s", down[i].why);
            hit = true;
        }
    pthread_mutex_unlock(&down_mu);
    return hit;
}

static void mark_down(const char *id, const char *why)
{
    pthread_mutex_lock(&down_mu);
    if (n_down < DOWN_MAX) {
        snprintf(down[n_down].id, sizeof(down[0].id), "%s", id);
        snprintf(down[n_down].why, sizeof(down[0].why), "%s", why);
        n_down++;
    }
    pthread_mutex_unlock(&down_mu);
}

bool sw__remote_applies(const struct sw_fleet_endpoint *ep)
{
    /* a declared arch is the operator's word: such an endpoint plans offline, as it did */
    return ep && !ep->arch && sw__remote_on_host(ep);
}

bool sw__remote_on_host(const struct sw_fleet_endpoint *ep)
{
    const char *p = ep ? ep->payload.path.v : NULL;
    if (!ep || !ep->host || ep->host->transport != SW_FLEET_SSH)
        return false;
    if (ep->payload.gguf.v && ep->payload.gguf.v[0] == '/')
        return true;
    return p && (p[0] == '/' || (p[0] == '~' && p[1] == '/'));
}

const char *sw__remote_path(const char *path)
{
    if (path[0] == '~' && path[1] == '/') {
        path += 2;
        while (*path == '/')
            path++;
    }
    return path;
}

int sw__remote_begin(struct sw__remote *r, const struct sw_fleet_endpoint *ep,
                     struct sw_plan_model_read *st, struct sw_err *e)
{
    char why[512];
    memset(r, 0, sizeof(*r));
    r->cache.dirfd = -1;
    r->ep = ep;
    r->st = st;
    st->asked = true;
    snprintf(st->host, sizeof(st->host), "%s", ep->host->name);
    int rc = sw_host_open_fleet(&r->h, ep->host, 0, e);
    if (rc)
        return rc;
    sw_host_describe(&r->h, r->id, sizeof(r->id));
    snprintf(st->via, sizeof(st->via), "%s", r->id);
    if (host_down(r->id, why, sizeof(why)))
        return sw_err_set(e, SW_ENET, "%s", why);
    sw__rcache_open(&r->cache);
    if (r->cache.dirfd >= 0)
        snprintf(st->cache, sizeof(st->cache), "%.590s", r->cache.dir);
    else
        snprintf(st->cache, sizeof(st->cache), "off: %s", r->cache.why);
    return 0;
}

void sw__remote_end(struct sw__remote *r)
{
    sw__rcache_close(&r->cache);
}

void sw__remote_note_why(struct sw_plan_model_read *st, const struct sw_err *e)
{
    char b[700];
    snprintf(st->why, sizeof(st->why), "%s", sw_err_format(e, b, sizeof(b)));
}

int sw__remote_parse_stat(const char *line, size_t len, struct sw__rfile *f, struct sw_err *e)
{
    char b[96];
    memset(f, 0, sizeof(f[0]));
    if (len == 1 && line[0] == '-')
        return 0;
    if (len == 0 || len >= sizeof(b))
        return sw_err_set(e, SW_EPARSE, "stat printed a line of %zu bytes, not SIZE MTIME MODE",
                          len);
    memcpy(b, line, len);
    b[len] = '\0';
    /* SIZE: decimal digits; MTIME: digits, a dot, digits (GNU stat's %.9Y); MODE: hex */
    const char *sz = b, *mt = strchr(b, ' ');
    const char *md = mt ? strchr(mt + 1, ' ') : NULL;
    if (!mt || !md || strchr(md + 1, ' '))
        return sw_err_set(e, SW_EPARSE, "stat printed \"%.60s\", not SIZE MTIME MODE", b);
    size_t nsz = (size_t)(mt - sz), nmt = (size_t)(md - mt - 1), nmd = strlen(md + 1);
    if (!nsz || nsz > 20 || strspn(sz, "0123456789") != nsz)
        return sw_err_set(e, SW_EPARSE, "stat printed \"%.60s\": the size is not a number", b);
    if (!nmt || nmt >= SW__REMOTE_MTIME || strspn(mt + 1, "0123456789.-") != nmt)
        return sw_err_set(e, SW_EPARSE, "stat printed \"%.60s\": the mtime is not a time", b);
    if (!nmd || nmd > 8 || strspn(md + 1, "0123456789abcdefABCDEF") != nmd)
        return sw_err_set(e, SW_EPARSE, "stat printed \"%.60s\": the mode is not hex", b);
    char num[24];
    snprintf(num, sizeof(num), "%.*s", (int)nsz, sz);
    int rc = sw_parse_u64(num, &f->size, NULL);
    if (rc)
        return sw_err_set(e, SW_EPARSE, "stat printed \"%.60s\": the size does not fit 64 bits", b);
    snprintf(f->mtime, sizeof(f->mtime), "%.*s", (int)nmt, mt + 1);
    unsigned long mode = strtoul(md + 1, NULL, 16);
    f->exists = true;
    f->regular = (mode & 0170000ul) == 0100000ul;
    return 0;
}

/* The next line of out[*at..len) without its '\n': SW_EPARSE when there is none within 96
 * bytes. */
static int next_line(const char *out, size_t len, size_t *at, const char **line, size_t *n,
                     struct sw_err *e)
{
    size_t lim = SW_MIN(len - *at, (size_t)96);
    const char *nl = memchr(out + *at, '\n', lim);
    if (!nl)
        return sw_err_set(e, SW_EPARSE, "the host's reply ends without a stat line at byte %zu",
                          *at);
    *line = out + *at;
    *n = (size_t)(nl - *line);
    *at += *n + 1;
    return 0;
}

static bool same_file(const struct sw__rfile *a, const struct sw__rfile *b)
{
    return a->exists == b->exists && a->regular == b->regular && a->size == b->size &&
           !strcmp(a->mtime, b->mtime);
}

int sw__remote_parse_ranges(const char *out, size_t len, struct sw__rrange *rg, size_t n,
                            const char *host, struct sw_err *e)
{
    size_t at = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const char *line = NULL;
        size_t ln = 0;
        struct sw__rfile f;
        rc = next_line(out, len, &at, &line, &ln, e);
        if (!rc)
            rc = sw__remote_parse_stat(line, ln, &f, e);
        if (rc) {
            sw_err_prefix(e, "%s: %s", host, rg[i].path);
            return rc;
        }
        if (!same_file(&f, &rg[i].want))
            return sw_err_set(e, SW_EMISMATCH,
                              "%s: %s changed while it was read (size %" PRIu64 " mtime %s, then "
                              "%" PRIu64 " mtime %s): read again",
                              host, rg[i].path, rg[i].want.size, rg[i].want.mtime, f.size, f.mtime);
        uint64_t want = 0;
        if (rg[i].off < f.size)
            want = SW_MIN(rg[i].count, f.size - rg[i].off);
        if (want > len - at)
            return sw_err_set(e, SW_EPARSE,
                              "%s: %s: %" PRIu64 " bytes asked at byte %" PRIu64 ", %zu came", host,
                              rg[i].path, want, rg[i].off, len - at);
        rg[i].data = sw_malloc((size_t)want + 1);
        if (!rg[i].data)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        memcpy(rg[i].data, out + at, (size_t)want);
        rg[i].data[want] = '\0';
        rg[i].len = (size_t)want;
        at += (size_t)want;
    }
    if (at != len)
        return sw_err_set(e, SW_EPARSE, "%s: %zu bytes more than the ranges asked came back", host,
                          len - at);
    return 0;
}

/* This thread's end for its reads (sw_plan_remote_within), 0 none. */
static _Thread_local uint64_t tl_deadline_ns;

uint64_t sw_plan_remote_within(uint64_t deadline_ns)
{
    uint64_t was = tl_deadline_ns;
    tl_deadline_ns = deadline_ns;
    return was;
}

/* Run argv on the host, counted; a host that does not answer is remembered. */
static int run(struct sw__remote *r, const char *const *argv, size_t max_out,
               struct sw_host_result *res, struct sw_err *e)
{
    struct sw_host_run_opts o = {.deadline_ms = SW__REMOTE_DEADLINE_MS, .max_out = max_out};
    if (tl_deadline_ns) {
        uint64_t now = sw_now_ns();
        if (now >= tl_deadline_ns) {
            memset(res, 0, sizeof(*res));
            res->exit_code = -1;
            res->fail = SW_HOST_DEADLINE;
            return sw_err_set(e, SW_ETIMEDOUT, "host %s: the caller's deadline has passed",
                              r->st->host);
        }
        o.deadline_ms =
            (int64_t)SW_MIN((tl_deadline_ns - now) / 1000000u, (uint64_t)SW__REMOTE_DEADLINE_MS);
        if (o.deadline_ms < 1)
            o.deadline_ms = 1;
    }
    int rc = sw_host_run(&r->h, argv, &o, res, e);
    r->st->commands++;
    r->st->bytes += res->out_len;
    if (rc && (res->fail == SW_HOST_UNREACHABLE || res->fail == SW_HOST_AUTH ||
               res->fail == SW_HOST_HOSTKEY || res->fail == SW_HOST_DEADLINE)) {
        char b[700];
        mark_down(r->id, sw_err_format(e, b, sizeof(b)));
    }
    if (!rc && res->out_truncated)
        rc = sw_err_set(e, SW_EPARSE, "host %s: the reply passed %zu bytes", r->st->host, max_out);
    return rc;
}

int sw__remote_stat(struct sw__remote *r, const char *const *paths, size_t n, struct sw__rfile *f,
                    struct sw_err *e)
{
    struct sw_host_result res;
    const char **argv = sw_calloc(n + 5, sizeof(*argv));
    int rc = 0;
    memset(&res, 0, sizeof(res));
    if (!argv)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    argv[0] = "sh";
    argv[1] = "-c";
    argv[2] = stat_script;
    argv[3] = "sh";
    for (size_t i = 0; i < n; i++)
        argv[4 + i] = sw__remote_path(paths[i]);
    rc = run(r, argv, 96 * (n + 1), &res, e);
    if (rc)
        goto out;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const char *line = NULL;
        size_t ln = 0;
        rc = next_line(res.out, res.out_len, &at, &line, &ln, e);
        if (!rc)
            rc = sw__remote_parse_stat(line, ln, &f[i], e);
        if (rc) {
            sw_err_prefix(e, "host %s: stat %s", r->st->host, paths[i]);
            goto out;
        }
    }
    if (at != res.out_len)
        rc = sw_err_set(e, SW_EPARSE, "host %s: stat printed more lines than paths asked",
                        r->st->host);
out:
    sw_host_result_free(&res);
    sw_free(argv);
    return rc;
}

int sw__remote_read(struct sw__remote *r, struct sw__rrange *rg, size_t n, struct sw_err *e)
{
    struct sw_host_result res;
    const char **argv = sw_calloc(3 * n + 5, sizeof(*argv));
    char(*nums)[2][24] = sw_calloc(n ? n : 1, sizeof(*nums));
    size_t max = 0;
    int rc = 0;
    memset(&res, 0, sizeof(res));
    if (!argv || !nums) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    argv[0] = "sh";
    argv[1] = "-c";
    argv[2] = ranges_script;
    argv[3] = "sh";
    for (size_t i = 0; i < n; i++) {
        snprintf(nums[i][0], sizeof(nums[i][0]), "%" PRIu64, rg[i].off);
        snprintf(nums[i][1], sizeof(nums[i][1]), "%" PRIu64, rg[i].count);
        argv[4 + 3 * i] = sw__remote_path(rg[i].path);
        argv[5 + 3 * i] = nums[i][0];
        argv[6 + 3 * i] = nums[i][1];
        uint64_t want =
            rg[i].off < rg[i].want.size ? SW_MIN(rg[i].count, rg[i].want.size - rg[i].off) : 0;
        max += (size_t)want + 96;
        rg[i].data = NULL;
        rg[i].len = 0;
    }
    rc = run(r, argv, max, &res, e);
    if (rc)
        goto out;
    rc = sw__remote_parse_ranges(res.out, res.out_len, rg, n, r->st->host, e);
    for (size_t i = 0; i < n; i++)
        r->st->range_bytes += rg[i].len;
out:
    if (rc)
        for (size_t i = 0; i < n; i++) {
            sw_free(rg[i].data);
            rg[i].data = NULL;
            rg[i].len = 0;
        }
    sw_host_result_free(&res);
    sw_free(nums);
    sw_free(argv);
    return rc;
}

json_t *sw_plan_model_read_json(const struct sw_plan_model_read *m)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    int rc = sw_json_set_str(j, "host", m->host);
    rc |= sw_json_set_str(j, "via", m->via);
    rc |= sw_json_set_str(j, "path", m->path);
    rc |= sw_json_set_bool(j, "found", m->found);
    if (m->why[0])
        rc |= sw_json_set_str(j, "why", m->why);
    if (m->file_size)
        rc |= sw_json_set_int(j, "file_size", (int64_t)m->file_size);
    if (m->header_bytes)
        rc |= sw_json_set_int(j, "header_bytes", (int64_t)m->header_bytes);
    rc |= sw_json_set_bool(j, "header_only", m->header_only);
    rc |= sw_json_set_int(j, "bytes", (int64_t)m->bytes);
    rc |= sw_json_set_int(j, "range_bytes", (int64_t)m->range_bytes);
    rc |= sw_json_set_int(j, "commands", (int64_t)m->commands);
    rc |= sw_json_set_int(j, "files_read", (int64_t)m->files_read);
    rc |= sw_json_set_int(j, "files_cached", (int64_t)m->files_cached);
    rc |= sw_json_set_str(j, "cache", m->cache);
    if (rc) {
        json_decref(j);
        return NULL;
    }
    return j;
}
