/*
 * payload/download internals: the state of one sw_fetch_run shared by its three rooms,
 * download.c (the run, step by step, and its report), download_present.c (what is already on
 * disk or in the HF cache) and download_xfer.c (the transfers on the net loop). Not a public API.
 */
#ifndef SW_DOWNLOAD_INTERNAL_H
#define SW_DOWNLOAD_INTERNAL_H

#include <slipway/fetch.h>
#include <slipway/net.h>

#include <limits.h>

#include "payload/payload_internal.h"

struct event;
struct sw__fetch;

/* One file to transfer. */
struct sw__fetch_job {
    struct sw__fetch *ft;
    int dfd; /* the directory of the .incomplete and the target, opened without links */
    struct sw_fetch_result *res;
    const struct sw_payload_file *f;
    char tmp[PATH_MAX + 16];
    char url[4096];
    char range[64];
    const char *hdrs[2];
    int fd;
    EVP_MD_CTX *sha256;
    EVP_MD_CTX *sha1; /* git blob sha1, when the file's only hash is its git oid */
    uint64_t offset;  /* bytes in the .incomplete now */
    uint64_t asked;   /* the Range start asked for */
    char head[SW_PAYLOAD_SNIFF_HEAD];
    size_t head_n;
    bool head_judged;
    bool from_zero; /* this transfer's bytes start at 0: the head is the file's head */
    bool bad_bytes; /* what is in the .incomplete must not be kept */
    int abort_rc;
    char abort_msg[1024];
    struct sw_net_xfer x;
};

/* One run. */
struct sw__fetch {
    const struct sw_payload_manifest *m;
    const struct sw_fetch_opts *o;
    struct sw_fetch_report *rep;
    struct sw__fetch_job *jobs; /* one per manifest file; those with ft set are queued */
    struct sw_net_loop loop;
    bool loop_ok;
    struct sw__fetch_job **queue;
    size_t nq, next, running, parallel;
    char repo_dir[PATH_MAX];
    const char *root; /* dest, or repo_dir: nothing below it is reached through a link */
    size_t root_len;
    bool cache_mode;
    const char *ep;
    const char *tok;
    struct sw_progress prog;
    uint64_t progress_done;
    int interrupted; /* the signal that stopped the fetch, 0 when none */
    struct event *sig[2];
};

/* download.c: helpers every room uses. */

/* A hash to check the bytes against: without one a file can only be unverified. */
bool sw__fetch_has_hash(const struct sw_payload_file *f);
/* path (root/rel) relative to the run's root. */
const char *sw__fetch_rel(const struct sw__fetch *ft, const char *path);
/* The last component of a path. */
const char *sw__fetch_base(const char *path);
/* r FAILED with rc and the message (the token redacted from it). */
void sw__fetch_fail(const struct sw__fetch *ft, struct sw_fetch_result *r, int rc, const char *fmt,
                    ...) SW_PRINTF(4, 5);
/* The sha256 (a) and git sha1 (b, may be NULL) of the first len bytes of an open file, read
 * sequentially through one bounded buffer; path names it in messages. */
int sw__fetch_hash_fd(int fd, uint64_t len, EVP_MD_CTX *a, EVP_MD_CTX *b, const char *path,
                      struct sw_err *e);

/* download_present.c: every file's target and what is there already, hashed (in parallel):
 * PRESENT, LINKED (from the HF cache into dest), a wrong file removed, or still PENDING with
 * r->had the size of a .incomplete found. Only out of memory is the run's error. */
int sw__fetch_present(struct sw__fetch *ft, struct sw_err *e);

/* download_xfer.c: the queued jobs transferred on the net loop, --jobs at once, until done or
 * interrupted (SIGINT/SIGTERM with stop_on_signal). An error only when the loop cannot start. */
int sw__fetch_transfer(struct sw__fetch *ft, struct sw_err *e);
/* Close what the transfers hold (descriptors, hashes, signal events, the loop). */
void sw__fetch_transfer_close(struct sw__fetch *ft);

#endif
