/*
 * apply's internals, shared by its files (survey.c: the fleet's side and the hosts' answers;
 * gates.c: the fleet's own gates; run.c: carrying the survey out; json.c: the document).
 */
#ifndef SW_APPLY_INTERNAL_H
#define SW_APPLY_INTERNAL_H

#include <slipway/apply.h>
#include <slipway/host.h>
#include <slipway/unit.h>

#include <pthread.h>

/* What a host's thread prepared for one item (parallel to sw_apply_survey.items). */
struct sw__apply_ep {
    struct sw_unit_render ur;
    bool rendered;
    char *unit_path; /* /etc/systemd/system/NAME.service (sw_malloc) */
    char *env_path;  /* the render's EnvironmentFile=, NULL when not rendered */
};
struct sw__apply_ctx {
    struct sw__apply_ep *per;
    size_t n;
};
void sw__apply_ctx_free(struct sw__apply_ctx *x);

/* One host's thread of the survey. */
struct sw__apply_hostjob {
    const struct sw_fleet *f;
    struct sw_apply_host *hr;
    struct sw_apply_item **items; /* the host's items, in fleet order */
    struct sw__apply_ep **pe;
    size_t n;
    int64_t deadline_ms;
    struct sw_host h;
    bool open;
    pthread_t th;
    bool started;
};

/* Items and hosts from the fleet (the calling thread's part). */
int sw__apply_prepare(const struct sw_fleet *f, const struct sw_apply_opts *o,
                      struct sw_apply_survey *s, struct sw__apply_ctx *x, struct sw_err *e);
/* Every host at once: its items rendered, planned and asked; *jobs freed with
 * sw__apply_jobs_free. */
int sw__apply_hosts(const struct sw_fleet *f, struct sw_apply_survey *s, struct sw__apply_ctx *x,
                    int64_t deadline_ms, struct sw__apply_hostjob **jobs, struct sw_err *e);
void sw__apply_jobs_free(struct sw__apply_hostjob *jobs, size_t n);
/* The fleet's gates over the survey's items: co-tenancy per device, ports per host
 * (gates.c). Refused items are marked and listed in s->refusals. */
int sw__apply_gates(const struct sw_fleet *f, struct sw_apply_survey *s, struct sw_err *e);

#endif
