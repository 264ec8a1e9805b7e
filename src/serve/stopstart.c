/*
 * serve stopstart: a deploy through serve whose new shape does not fit beside the old (bluegreen.c
 * decides): the old leaves the rotation and the model's requests queue (they are not refused)
 * while it drains and stops; the new shape boots on the endpoint's own address, and the queue
 * goes to it. Until that boot ends the slot holds the larger of both shapes' claims per device.
 * A new shape whose boot or proof fails is rolled back: the old shape boots again on its address
 * from the fleet text it was read from, and the queued requests go to it (a failed rollback
 * answers them 503 with both failures). The failure, the rollback and their figures are logged
 * and in the admin's answer. An endpoint on another host is deployed the same way through its
 * gated rollout (sw_rollout_deploy in a worker thread: the unit stopped, installed, started and
 * proved, or rolled back), its model's requests queued meanwhile.
 *
 * What it does not do: decide the path, evict, or answer the admin (bluegreen.c).
 */
#include "deploy_internal.h"

#include <slipway/deploy.h>
#include <slipway/rollout.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void on_ss_done(evutil_socket_t fd, short what, void *arg)
{
    struct sw__deploy *d = arg;
    (void)fd;
    (void)what;
    if (d->phase == SS_DONE)
        sw__dep_finish(d, d->remote ? "rollout" : "stop-start", d->error[0] ? d->error : NULL);
}

/* The stop-start ended (error: why it failed): the queue goes to the slot in this turn's kick
 * (its waits counted), the answer on the next turn. */
static void ss_done(struct sw__deploy *d, const char *error)
{
    snprintf(d->error, sizeof(d->error), "%s", error ? error : "");
    d->phase = SS_DONE;
    struct timeval zero = {0, 0};
    if (event_base_once(d->sv->base, -1, EV_TIMEOUT, on_ss_done, d, &zero))
        on_ss_done(-1, 0, d);
}

/* The slot takes a shape (ep, priced claim) on ep's own address in fleet f (port: another, 0:
 * the declared one); its pid file RUN_DIR/NAME.pid. 0, or why in why. */
int sw__dep_take_shape(struct sw__serve *sv, struct sw__serve_ep *x, const struct sw_fleet *f,
                       const struct sw_fleet_endpoint *ep, const struct sw_serve_claim *claim,
                       unsigned port, char *why, size_t n)
{
    struct sw_service_client c;
    struct sw_err e;
    sw_err_clear(&e);
    if (!f || sw_service_client_open(f, ep->name, &c, &e)) {
        char m[800];
        snprintf(why, n, "%s", f ? sw_err_format(&e, m, sizeof(m)) : "its fleet is gone");
        return -1;
    }
    if (x->client_open)
        sw_service_client_close(&x->client);
    x->client = c;
    x->client_open = true;
    x->ep = ep;
    x->claim = *claim;
    x->claim_ok = true;
    snprintf(x->host, sizeof(x->host), "%s", c.route.addr.connect);
    x->port = port ? port : c.route.addr.port;
    char p[4096];
    if (!sw_deploy_pid_path(ep->name, p, sizeof(p), NULL))
        snprintf(x->pid_path, sizeof(x->pid_path), "%s", p);
    (void)sv;
    return 0;
}

static void rollback_done(struct sw__serve *sv, struct sw__serve_job *j)
{
    struct sw__deploy *d = sw__dep_of_job(sv, j);
    if (!d)
        return;
    struct sw__serve_ep *x = &sv->eps[d->slot];
    struct sw__serve_model *m = &sv->models[d->model];
    char msg[2800];
    d->t_rollback = sw_now_ns();
    if (j->rc) {
        x->state = SW_SERVE_STOPPED;
        x->failures++;
        snprintf(msg, sizeof(msg),
                 "the new shape's boot failed: %.1200s; the old shape's boot (the rollback) "
                 "failed too after %.1f s: %.1200s",
                 d->failure, j->secs, j->msg);
        sw__serve_logf(sv, "deploy: %s: %s; %d queued requests answered 503", d->ep->name, msg,
                       m->n_queued);
        char q[3000];
        snprintf(q, sizeof(q), "endpoint %s of model %s: %s", d->ep->name, m->name, msg);
        sw__serve_fail_queue(sv, m, 503, "unavailable_error", q);
        ss_done(d, msg);
        return;
    }
    sw__dep_started(x, j, d->old_ours);
    d->rolled_back = true;
    sw__serve_logf(sv,
                   "deploy: %s: rolled back: the old shape serves again at %s:%u (its boot and "
                   "proof %.1f s; %.1f s since the deploy began); %d queued requests go to it",
                   d->ep->name, x->host, x->port, j->secs, (double)(sw_now_ns() - d->t0) / 1e9,
                   m->n_queued);
    snprintf(msg, sizeof(msg),
             "the new shape's boot failed: %.1200s; rolled back: the old shape serves again at "
             "%s:%u",
             d->failure, x->host, x->port);
    ss_done(d, msg);
}

/* The new shape failed (why): the slot takes the old shape again and boots it, the queue held. */
static void rollback(struct sw__deploy *d, const char *why, double secs)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *x = &sv->eps[d->slot];
    snprintf(d->failure, sizeof(d->failure), "%s", why);
    d->t_rollback0 = sw_now_ns();
    const char *text = NULL;
    const struct sw_fleet *f = sw__dep_fleet_of(sv, d->old_ep, &text);
    char msg[1000] = "";
    d->phase = SS_ROLLBACK;
    sw__serve_logf(sv,
                   "deploy: %s: the new shape's boot failed after %.1f s: %s; rolling back: the "
                   "old shape boots again at %s (%d requests queued)",
                   d->ep->name, secs, why, d->old_addr, sv->models[d->model].n_queued);
    if (sw__dep_take_shape(sv, x, f, d->old_ep, &d->old_claim, d->old_port, msg, sizeof(msg)) ||
        sw__dep_boot(d, d->slot, text, NULL, d->old_port, rollback_done)) {
        struct sw__serve_job none = {.ep = d->slot, .rc = 1};
        snprintf(none.msg, sizeof(none.msg), "%s", msg[0] ? msg : "no thread for its boot");
        rollback_done(sv, &none);
    }
}

static void ss_boot_done(struct sw__serve *sv, struct sw__serve_job *j)
{
    struct sw__deploy *d = sw__dep_of_job(sv, j);
    if (!d)
        return;
    struct sw__serve_ep *x = &sv->eps[d->slot];
    if (j->rc) {
        x->state = SW_SERVE_STOPPED;
        x->failures++;
        snprintf(d->fail_class, sizeof(d->fail_class), "%s", j->fail_class);
        rollback(d, j->msg, j->secs);
        return;
    }
    sw__dep_started(x, j, d->old_ours);
    x->claim = d->claim; /* no longer the larger of both shapes */
    d->t_switch = sw_now_ns();
    sw__serve_logf(sv,
                   "deploy: %s: the new shape answered (ready and a one-token generation) in "
                   "%.1f s at %s; %d queued requests go to it",
                   d->ep->name, j->secs, d->new_addr, sv->models[d->model].n_queued);
    ss_done(d, NULL);
}

/* Stop-start once there is room: out of rotation; the model's requests queue while the old
 * drains, stops and the new boots. Until the boot ends the slot holds the larger of both shapes'
 * claims on each device (another deploy or start is not admitted into the new one's room). */
void sw__dep_ss_begin(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    old->state = SW_SERVE_STOPPING;
    d->t_drain0 = sw_now_ns();
    d->phase = SS_DRAINING;
    sw__dep_drain_timer(d);
    sw__serve_logf(sv, "deploy: %s: out of rotation (requests queue); draining %d in flight",
                   d->ep->name, old->inflight);
}

void sw__dep_ss_boot(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    struct sw_serve_claim both = d->old_claim;
    sw__serve_claim_max(&both, &d->claim);
    char why[1000];
    if (sw__dep_take_shape(sv, old, d->fleet, d->ep, &both, 0, why, sizeof(why))) {
        rollback(d, why, 0);
        return;
    }
    snprintf(d->new_addr, sizeof(d->new_addr), "%s:%u", old->host, old->port);
    sw__serve_logf(sv, "deploy: %s: stopped; the new shape boots at %s (%d requests queued)",
                   d->ep->name, d->new_addr, sv->models[d->model].n_queued);
    d->phase = SS_STARTING;
    if (sw__dep_boot(d, d->slot, d->text, NULL, 0, ss_boot_done))
        rollback(d, "no thread for the new shape's boot", 0);
}

/* ---------------------------------------------------------------------------------------------
 * Another host's unit: stop-start through the gated rollout.
 */
void sw__dep_ro_begin(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    old->state = SW_SERVE_STOPPING; /* out of rotation: the model's requests queue */
    sw__serve_pool_close(sv, d->slot);
    d->t_drain0 = sw_now_ns();
    d->phase = RO_DRAINING;
    sw__dep_drain_timer(d);
    sw__serve_logf(sv,
                   "deploy: %s: on host %s: out of rotation (requests queue); draining %d in "
                   "flight, then the gated rollout of its unit",
                   d->ep->name, d->ep->host ? d->ep->host->name : "?", old->inflight);
    if (!old->inflight)
        sw__dep_ro_run(d);
}

/* In the worker thread: the rollout, its verdict into d (the loop does not read it meanwhile). */
static void ro_thread(struct sw__serve_job *j)
{
    struct sw__deploy *d = j->arg;
    struct sw_rollout_opts o = {0};
    o.worst_case = d->worst_case;
    o.probe_only = d->probe_only[0] ? d->probe_only : NULL;
    o.deadline_ms = (int64_t)(d->sv->o->boot_timeout_s ? d->sv->o->boot_timeout_s : 600) * 1000;
    struct sw_rollout_result r;
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_ledger l;
    bool have = sw__dep_ledger_rollout(d, &l, &o); /* its attempt, in serve's ledger */
    int rc = sw_rollout_deploy(d->fleet, d->ep, &o, &r, &e);
    sw__dep_ledger_rollout_done(d, &l, have, &r);
    snprintf(d->ro_outcome, sizeof(d->ro_outcome), "%s",
             rc ? "error" : sw_rollout_outcome_name(r.outcome));
    snprintf(d->ro_class, sizeof(d->ro_class), "%s", r.fail_class);
    if (rc) {
        char m[800];
        snprintf(d->ro_msg, sizeof(d->ro_msg), "%s", sw_err_format(&e, m, sizeof(m)));
    } else
        snprintf(d->ro_msg, sizeof(d->ro_msg), "%s", r.fail_msg);
    snprintf(d->ro_rollback, sizeof(d->ro_rollback), "%s", r.rollback_msg);
    snprintf(d->ro_tag, sizeof(d->ro_tag), "%s", r.tag);
    d->ro_downtime_ms = r.downtime_ms;
    /* nothing was touched (the host unreachable, its lock held, a gate refused): the old serves */
    d->ro_serving = rc || r.outcome == SW_ROLLOUT_GATE_FAILED || r.outcome == SW_ROLLOUT_REFUSED
                        ? !r.stopped
                        : r.serving;
    j->rc = rc || r.outcome != SW_ROLLOUT_COMMITTED;
    snprintf(j->msg, sizeof(j->msg), "%s%s%.64s%s%.1000s", d->ro_outcome,
             d->ro_class[0] ? ": " : "", d->ro_class, d->ro_msg[0] ? ": " : "", d->ro_msg);
    sw_rollout_result_free(&r);
}

static void ro_done(struct sw__serve *sv, struct sw__serve_job *j)
{
    struct sw__deploy *d = j->arg;
    struct sw__serve_ep *x = &sv->eps[d->slot];
    struct sw__serve_model *m = &sv->models[d->model];
    char why[1000] = "", err[2800];
    d->t_switch = sw_now_ns();
    /* the unit serves the new shape (committed) or the old (rolled back, or never stopped) */
    const struct sw_fleet_endpoint *ep = j->rc ? d->old_ep : d->ep;
    const char *text = NULL;
    const struct sw_fleet *f = j->rc ? sw__dep_fleet_of(sv, d->old_ep, &text) : d->fleet;
    if (sw__dep_take_shape(sv, x, f, ep, j->rc ? &d->old_claim : &d->claim, 0, why, sizeof(why)))
        sw__serve_logf(sv, "deploy: %s: its address: %s", d->ep->name, why);
    x->pid_path[0] = 0; /* a unit: no pid file of `up` */
    x->state = d->ro_serving ? SW_SERVE_RUNNING : SW_SERVE_STOPPED;
    x->last_ns = sw_now_ns();
    sw__serve_logf(sv,
                   "deploy: %s: the rollout ended in %.1f s: %s (its downtime %" PRId64
                   " ms%s%s); %s at %s:%u; %d queued requests %s",
                   d->ep->name, j->secs, j->rc ? j->msg : d->ro_outcome, d->ro_downtime_ms,
                   d->ro_tag[0] ? ", tag " : "", d->ro_tag,
                   d->ro_serving ? (j->rc ? "the old shape serves" : "the new shape serves")
                                 : "nothing serves",
                   x->host, x->port, m->n_queued, d->ro_serving ? "go to it" : "answered 503");
    if (!d->ro_serving) {
        snprintf(err, sizeof(err), "endpoint %s of model %s: the rollout of its unit: %.1200s",
                 d->ep->name, m->name, j->msg);
        sw__serve_fail_queue(sv, m, 503, "unavailable_error", err);
    }
    snprintf(d->new_addr, sizeof(d->new_addr), "%s:%u", x->host, x->port);
    if (j->rc)
        snprintf(d->failure, sizeof(d->failure), "%s", j->msg);
    snprintf(err, sizeof(err), "the gated rollout: %.1200s%s", j->msg,
             d->ro_serving ? "; the old shape serves" : "; nothing serves");
    ss_done(d, j->rc ? err : NULL);
}

void sw__dep_ro_run(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_job *j = sw_calloc(1, sizeof(*j));
    d->phase = RO_RUNNING;
    d->t_stopped = sw_now_ns();
    if (j) {
        j->ep = d->slot;
        j->run = ro_thread;
        j->arg = d;
        j->done = ro_done;
    }
    sw__serve_logf(sv, "deploy: %s: the gated rollout of its unit on host %s (%s)", d->ep->name,
                   d->ep->host ? d->ep->host->name : "?",
                   d->probe_only[0] ? d->probe_only : "the whole battery");
    if (!j || sw__serve_job_spawn(sv, j)) {
        sw_free(j);
        sv->eps[d->slot].state = SW_SERVE_RUNNING; /* nothing was touched */
        ss_done(d, "no thread for the rollout; nothing was touched");
    }
}
