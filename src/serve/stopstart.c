/*
 * serve stopstart: a deploy through serve whose new shape does not fit beside the old (bluegreen.c
 * decides): the old leaves the rotation and the model's requests queue (they are not refused)
 * while it drains and stops; the new shape boots on the endpoint's own address, and the queue
 * goes to it. Until that boot ends the slot holds the larger of both shapes' claims per device.
 * A new shape whose boot or proof fails is rolled back: the old shape boots again on its address
 * from the fleet text it was read from, and the queued requests go to it (a failed rollback
 * answers them 503 with both failures). The failure, the rollback and their figures are logged
 * and in the admin's answer.
 *
 * What it does not do: decide the path, evict, or answer the admin (bluegreen.c).
 */
#include "deploy_internal.h"

#include <slipway/deploy.h>

#include <stdio.h>
#include <string.h>

static void on_ss_done(evutil_socket_t fd, short what, void *arg)
{
    struct sw__deploy *d = arg;
    (void)fd;
    (void)what;
    if (d->phase == SS_DONE)
        sw__dep_finish(d, "stop-start", d->error[0] ? d->error : NULL);
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
