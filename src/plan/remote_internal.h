/*
 * plan's reader of model metadata on an endpoint's host (remote.c: the host's replies and the
 * ranged reads; remote_cache.c: the cache on this machine; remote_model.c: a GGUF header, a
 * config.json, the safetensors headers) and the plan's wiring (plan.c, inputs.c). Not a public
 * API: what a plan read is public as struct sw_plan_model_read (plan.h).
 */
#ifndef SLIPWAY_PLAN_REMOTE_INTERNAL_H
#define SLIPWAY_PLAN_REMOTE_INTERNAL_H

#include <slipway/gguf.h>
#include <slipway/host.h>
#include <slipway/plan.h>

/* The first read of a GGUF, and the most a read goes past the header (one read ahead). */
#define SW__REMOTE_CHUNK (1u << 20)
/* A command on the host: the stat of a few paths, or ranges of up to a header's size. */
#define SW__REMOTE_DEADLINE_MS 120000
/* The longest mtime stat prints ("%.9Y": seconds, a dot, nine digits). */
#define SW__REMOTE_MTIME 32

/* One file on the host as `stat -L -c '%s %.9Y %f'` saw it (links followed). */
struct sw__rfile {
    bool exists; /* stat answered */
    bool regular;
    uint64_t size;
    char mtime[SW__REMOTE_MTIME]; /* as printed: "1733561234.123456789" */
};

/* One stat line ("SIZE MTIME MODEHEX", or "-" for a path stat could not see). SW_EPARSE naming
 * what is wrong with anything else: the line comes from another machine. */
int sw__remote_parse_stat(const char *line, size_t len, struct sw__rfile *f, struct sw_err *e);

/* A range of a file to read: [off, off + count) of path, clipped to the file's size. */
struct sw__rrange {
    const char *path;
    uint64_t off, count;
    struct sw__rfile want; /* the stat the bytes must come with (from an earlier stat) */
    /* OUT: the bytes (sw_malloc; the caller frees) */
    char *data;
    size_t len;
};

/* The reply of the ranges command (stat line, then exactly the range's bytes, per range): each
 * range's bytes into rg[i].data. SW_EMISMATCH when a file's stat differs from the one it was
 * asked with (it changed since), SW_EPARSE when the reply is not framed as asked. */
int sw__remote_parse_ranges(const char *out, size_t len, struct sw__rrange *rg, size_t n,
                            const char *host, struct sw_err *e);

/* The cache on this machine: $SLIPWAY_CACHE/remote-meta, else ~/.cache/slipway/remote-meta (the
 * directory 0700, ours, not a link), one entry per (host, path) named by the sha256 of both,
 * holding the size and mtime the bytes were read at and the sha256 of the bytes. An entry is used
 * only when host, path, kind, size and mtime all match and the bytes hash to what it says;
 * anything else is a miss and is read again (and overwritten). Entries are written atomically
 * (a temporary name, fsync, rename), mode 0600, never through a link. */
struct sw__rcache {
    int dirfd; /* -1: no cache (the directory could not be made safe: reads go to the host) */
    char dir[4096];
    char why[512]; /* when dirfd is -1 */
};
struct sw__rkey {
    const char *host; /* the transport's identity: "ssh root@169.254.36.2:22" */
    const char *path; /* on the host, as asked */
    const char *kind; /* "gguf-head", "file", "safetensors-head" */
    const struct sw__rfile *f;
};
/* The cache directory's path (not created): $SLIPWAY_CACHE/remote-meta or
 * $HOME/.cache/slipway/remote-meta. */
int sw__rcache_path(char *out, size_t n, struct sw_err *e);
/* Open (making it 0700 when absent); a directory that is a link, not ours, or writable by others
 * leaves the cache off (c->why says why), which is not an error. */
void sw__rcache_open(struct sw__rcache *c);
void sw__rcache_close(struct sw__rcache *c);
/* The entry's file name for (host, path): 64 hex + ".meta" + NUL; SW_ENOMEM when no hash could
 * be had. */
int sw__rcache_name(const char *host, const char *path, char out[70]);
/* A hit: the bytes (sw_malloc, caller frees) and their sha256. SW_ENOENT for a miss of any kind
 * (absent, another size or mtime, a torn or tampered entry); SW_ENOMEM. */
int sw__rcache_get(struct sw__rcache *c, const struct sw__rkey *k, char **data, size_t *len,
                   char sha256[65]);
/* Store the bytes under k. A failure to write is said in e and leaves no entry. */
int sw__rcache_put(struct sw__rcache *c, const struct sw__rkey *k, const void *data, size_t len,
                   struct sw_err *e);

/* A reading session on one endpoint's host: the host opened once, the cache, the counters. */
struct sw__remote {
    const struct sw_fleet_endpoint *ep;
    struct sw_host h;
    char id[300]; /* sw_host_describe: the cache key's host */
    struct sw__rcache cache;
    struct sw_plan_model_read *st; /* what the reads cost (never NULL inside a session) */
};
/* Does ep's payload get looked for on its host: an ssh host, a path there ('/' or "~/"), and no
 * declared `arch` (a declaration is used as written, and the host is not asked)? */
bool sw__remote_applies(const struct sw_fleet_endpoint *ep);
/* The same without the declaration: an ssh host and a path there. */
bool sw__remote_on_host(const struct sw_fleet_endpoint *ep);
/* Begin a session on ep's host, counting into st (added to: a plan's sessions, the model's, the
 * draft's, the projector's, count into one). A host that failed to answer earlier in this
 * process is not asked again (SW_ENET with why). End it in every case. */
int sw__remote_begin(struct sw__remote *r, const struct sw_fleet_endpoint *ep,
                     struct sw_plan_model_read *st, struct sw_err *e);
void sw__remote_end(struct sw__remote *r);
/* A host path as the transport takes it: "~/x" is "x" (ssh runs in the login's home). */
const char *sw__remote_path(const char *path);
/* stat the paths (one command): f[i] for path[i]. */
int sw__remote_stat(struct sw__remote *r, const char *const *paths, size_t n, struct sw__rfile *f,
                    struct sw_err *e);
/* Read the ranges (one command), each checked against its want stat. */
int sw__remote_read(struct sw__remote *r, struct sw__rrange *rg, size_t n, struct sw_err *e);
/* Record why the host could not give what was asked (into st->why). */
void sw__remote_note_why(struct sw_plan_model_read *st, const struct sw_err *e);

/* What the laws read, from the host (or the cache), in remote_model.c. Not found on the host:
 * SW_ENOENT; the host not answering: SW_ENET / SW_EMISMATCH / SW_ETIMEDOUT (the caller may fall
 * back to a declared arch); a file that is there but not what it should be: its parse error. */
int sw__remote_gguf(struct sw__remote *r, const char *path, const struct sw_gguf_read_opts *o,
                    struct sw_gguf **out, struct sw_err *e);
/* A whole small file (config.json, an index) of at most max bytes: *text NUL-terminated. */
int sw__remote_file(struct sw__remote *r, const char *path, size_t max, char **text, size_t *len,
                    struct sw_err *e);
/* The weight bytes of a checkpoint directory as sw_hf_weight_bytes counts them (the index's
 * shards, else model.safetensors): each shard's 8-byte length, then its header, never its data. */
int sw__remote_weight_bytes(struct sw__remote *r, const char *dir, uint64_t *bytes,
                            struct sw_err *e);
/* The size of a file (one stat). */
int sw__remote_size(struct sw__remote *r, const char *path, uint64_t *size, struct sw_err *e);

#endif
