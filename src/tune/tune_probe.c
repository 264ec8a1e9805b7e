/*
 * One probe of the tuner: boot a candidate's plan, measure the objective, stop it.
 *
 *   local  a llama-server started from the plan's argv (plan.cmd, never an argv of our own) by
 *          deploy's supervisor (sw_deploy_up: preflight, readiness, a one-token liveness proof,
 *          its own process group, killed with us), stopped with sw_child_stop;
 *   sim    the engine stand-in serving the same plan (llama.cpp: the plan; vLLM: the law's plan
 *          object and the payload directory, as `slipway sim EP --fleet FLEET` does) in a forked child,
 *          its port read from its ready file, /health polled until the engine is up, SIGTERM to
 *          stop it;
 *   rollout  sw_rollout_deploy of the candidate on the endpoint's host (gates, stage, boot,
 *          readiness, liveness, the battery's liveness check, rollback on any failure, the
 *          attempt and its tag in the ledger), then the same measure at the endpoint's URL on
 *          that host. Nothing is stopped after: the next probe's deploy replaces it, and the
 *          host stays on the last shape a probe committed. A deploy that did not commit is a
 *          boot failure whose why names the rollout's outcome and class.
 *
 * The measure: for each concurrency level (1, 2, 4... up to the candidate's slots and the
 * caller's ceiling) the objective is measured `repeats` times by bench at the objective's depth
 * (one bench run each, so each repeat is an independent figure); the best level's median is the
 * probe's score and its relative spread the probe's noise.
 *
 * What it deliberately does not do: judge a candidate (tune_judge.c does), plan or gate (done
 * before), record anything.
 */
#include "tune_internal.h"

#include <slipway/bench.h>
#include <slipway/deploy.h>
#include <slipway/engine.h>
#include <slipway/host.h>
#include <slipway/net.h>
#include <slipway/rollout.h>
#include <slipway/sim.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void sw__tune_stats(const double *v, size_t n, double *median, double *noise)
{
    double s[SW__TUNE_MAX_REPEATS];
    size_t k = 0;
    for (size_t i = 0; i < n && k < SW__TUNE_MAX_REPEATS; i++)
        if (isfinite(v[i]))
            s[k++] = v[i];
    if (!k) {
        *median = NAN;
        *noise = NAN;
        return;
    }
    qsort(s, k, sizeof(s[0]), cmp_d);
    *median = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
    /* the interquartile range (linear interpolation, as bench's spread): one outlier of a
     * shared machine does not make the whole probe noise, and two repeats give half their
     * range */
    double q1 = s[0], q3 = s[k - 1];
    if (k > 1) {
        double a = 0.25 * (double)(k - 1), b = 0.75 * (double)(k - 1);
        size_t ia = (size_t)a, ib = (size_t)b;
        q1 = s[ia] + (ia + 1 < k ? (a - (double)ia) * (s[ia + 1] - s[ia]) : 0);
        q3 = s[ib] + (ib + 1 < k ? (b - (double)ib) * (s[ib + 1] - s[ib]) : 0);
    }
    *noise = *median > 0 ? (q3 - q1) / *median : NAN;
}

size_t sw__tune_refine(double lo, double hi, double step, bool is_real, const double *xs,
                       const double *scores, size_t n, double out[2])
{
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (isfinite(scores[i]) && (best == n || scores[i] > scores[best]))
            best = i;
    if (best == n)
        return 0;
    double x = xs[best];
    double left = NAN, right = NAN; /* the nearest tried points on each side */
    for (size_t i = 0; i < n; i++) {
        if (xs[i] < x && (!isfinite(left) || xs[i] > left))
            left = xs[i];
        if (xs[i] > x && (!isfinite(right) || xs[i] < right))
            right = xs[i];
    }
    size_t k = 0;
    double side[2] = {left, right};
    for (int s = 0; s < 2; s++) {
        double y = side[s];
        if (!isfinite(y))
            continue;
        double m = (x + y) / 2;
        if (!is_real) {
            double st = step >= 1 ? step : 1;
            /* on the step from lo, rounded toward the best point */
            double q = (m - lo) / st;
            m = lo + (y < x ? ceil(q) : floor(q)) * st;
        }
        if (m < lo || m > hi)
            continue;
        if (!(y < x ? (m > y && m < x) : (m > x && m < y)))
            continue;
        if (is_real && fabs(m - x) <= 1e-9 * (fabs(x) + 1))
            continue;
        out[k++] = m;
    }
    return k;
}

/* ---------------------------------------------------------------------------------------------
 * The measure.
 */

int sw__tune_mix_parse(const char *s, struct sw__tune_mix *mx, struct sw_err *e)
{
    char buf[40];
    uint64_t d = 0, t = 0;
    memset(mx, 0, sizeof(*mx));
    const char *sl = s ? strchr(s, '/') : NULL;
    if (!sl || strlen(s) >= sizeof(buf) || sl == s)
        return sw_err_set(e, SW_EINVAL, "load.mix '%s' is not DEPTH/TOKENS (512/64, 4Ki/256)",
                          s ? s : "");
    memcpy(buf, s, (size_t)(sl - s));
    buf[sl - s] = '\0';
    if (sw_parse_count(buf, &d, NULL) || d > (1u << 24) || sw_parse_count(sl + 1, &t, NULL) ||
        t < 1 || t > 65536)
        return sw_err_set(e, SW_EINVAL,
                          "load.mix '%s' is not DEPTH/TOKENS (depth 0..16M, tokens 1..65536)", s);
    snprintf(mx->name, sizeof(mx->name), "%s", s);
    mx->depth = (int64_t)d;
    mx->tokens = (int64_t)t;
    return 0;
}

static int measure_mix(const struct sw_tune_opts *o, const struct sw_fleet_endpoint *ep,
                       const char *api_key, const struct sw__tune_mix *mx, int reps,
                       struct sw__tune_measure *m, size_t mi, struct sw_err *e);

static int measure(const struct sw_tune_opts *o, const struct sw_fleet_endpoint *ep,
                   const char *api_key, int slots, const struct sw__tune_mix *mixes, size_t nmix,
                   struct sw__tune_measure *m, struct sw_err *e)
{
    int ceiling = o->max_concurrency > 0 ? o->max_concurrency : 8;
    if (slots < 1)
        slots = 1;
    m->nlevels = 0;
    for (size_t i = 0; i < o->n_levels && m->nlevels < SW__TUNE_MAX_LEVELS; i++)
        m->levels[m->nlevels++] = o->levels[i];
    for (int c = 1; !o->n_levels && c <= slots && c <= ceiling && m->nlevels < SW__TUNE_MAX_LEVELS;
         c *= 2)
        m->levels[m->nlevels++] = c;
    int reps = o->repeats > 0 ? o->repeats : 3;
    if (reps < 2)
        reps = 2;
    if (reps > SW__TUNE_MAX_REPEATS)
        reps = SW__TUNE_MAX_REPEATS;
    struct sw__tune_mix one;
    memset(&one, 0, sizeof(one));
    one.depth = o->objective.depth;
    one.tokens = o->tokens > 0 ? o->tokens : 64;
    if (!nmix) {
        mixes = &one;
        nmix = 1;
    }
    if (nmix > SW__TUNE_MAX_MIXES)
        nmix = SW__TUNE_MAX_MIXES;
    m->nmix = nmix;
    for (size_t mi = 0; mi < nmix; mi++) {
        int rc = measure_mix(o, ep, api_key, &mixes[mi], reps, m, mi, e);
        if (rc)
            return rc;
    }
    double logsum = 0;
    m->noise = 0;
    for (size_t mi = 0; mi < nmix; mi++) {
        if (!(m->mix_score[mi] > 0)) {
            m->score = NAN;
            m->noise = NAN;
            return SW__TUNE_BENCH_FAILED;
        }
        logsum += log(m->mix_score[mi]);
        if (isfinite(m->mix_noise[mi]) && m->mix_noise[mi] > m->noise)
            m->noise = m->mix_noise[mi];
    }
    m->best = m->mix_best[0];
    m->score = nmix == 1 ? m->mix_score[0] : exp(logsum / (double)nmix);
    if (nmix == 1)
        m->noise = m->mix_noise[0];
    return SW__TUNE_MEASURED;
}

/* One mix at every level: m->v[mi], its best level and score. SW__TUNE_BENCH_FAILED when no
 * level measured. */
static int measure_mix(const struct sw_tune_opts *o, const struct sw_fleet_endpoint *ep,
                       const char *api_key, const struct sw__tune_mix *mx, int reps,
                       struct sw__tune_measure *m, size_t mi, struct sw_err *e)
{
    size_t ok_levels = 0;
    m->mix_score[mi] = NAN;
    m->mix_noise[mi] = NAN;
    for (size_t li = 0; li < m->nlevels; li++) {
        m->nv[mi][li] = 0;
        /* r = -1: one untimed warm-up run before a mix's first level (the first request after
         * a boot pages the weights in and was seen at 4 tok/s beside 412 for the rest) */
        for (int r = li == 0 ? -1 : 0; r < reps; r++) {
            if (o->stop && *o->stop)
                return sw_err_set(e, SW_EINTR, "interrupted");
            struct sw_bench_opts bo;
            struct sw_bench_report rep;
            struct sw_err be;
            sw_err_clear(&be);
            sw_bench_opts_init(&bo);
            bo.url = m->url;
            bo.unix_socket = m->unix_socket[0] ? m->unix_socket : NULL;
            bo.model = ep->alias.v;
            bo.api_key = api_key;
            bo.engine = sw_fleet_engine_name(ep->engine);
            bo.depths[0] = mx->depth;
            bo.ndepths = 1;
            bo.conc[0] = m->levels[li];
            bo.nconc = 1;
            bo.tg = mx->tokens;
            bo.repeat = 1;
            bo.ignore_eos = true;
            bo.extra = o->extra;
            bo.slo_ttft_s = o->objective.slo_ttft_s;
            bo.slo_tpot_s = o->objective.slo_tpot_s;
            bo.slo_e2e_s = o->objective.slo_e2e_s;
            bo.timeout_ms = 120000;
            memset(&rep, 0, sizeof(rep));
            int rc = sw_bench_run(&bo, &rep, &be);
            double v = NAN;
            if (!rc && rep.npoints == 1 && rep.points[0].failed < rep.points[0].nsamples) {
                const struct sw_bench_point *pt = &rep.points[0];
                /* decode: generated tokens over the point's wall time, across the streams in
                 * flight. Not the summed per-stream decode: requests queued behind one slot
                 * each decode fast, and a burst of chunks makes a tiny decode span. */
                v = o->objective.metric == SW_TUNE_GOODPUT
                        ? pt->goodput_rps
                        : (pt->wall_s > 0 ? (double)pt->tokens_out / pt->wall_s : NAN);
            } else if (r >= 0 && !m->why[0]) {
                snprintf(m->why, sizeof(m->why), "bench at concurrency %d%s%s: %.1000s",
                         m->levels[li], mx->name[0] ? ", mix " : "", mx->name,
                         rc ? be.msg : "every request failed");
            }
            sw_bench_report_free(&rep);
            if (rc == SW_ENOMEM)
                return sw_err_set(e, SW_ENOMEM, "out of memory");
            if (r < 0)
                continue; /* the warm-up: not a sample */
            m->v[mi][li][m->nv[mi][li]++] = v;
        }
        double noise;
        sw__tune_stats(m->v[mi][li], m->nv[mi][li], &m->median[mi][li], &noise);
        if (isfinite(m->median[mi][li]))
            ok_levels++;
    }
    if (!ok_levels)
        return SW__TUNE_BENCH_FAILED;
    size_t best = 0;
    for (size_t li = 0; li < m->nlevels; li++)
        if (isfinite(m->median[mi][li]) &&
            (!isfinite(m->median[mi][best]) || m->median[mi][li] > m->median[mi][best]))
            best = li;
    m->mix_best[mi] = best;
    sw__tune_stats(m->v[mi][best], m->nv[mi][best], &m->mix_score[mi], &m->mix_noise[mi]);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Local: deploy's supervisor.
 */

static int probe_local(const struct sw_tune_opts *o, const char *run_dir,
                       const struct sw_fleet_endpoint *ep, const struct sw_plan *p,
                       const char *api_key, int slots, const struct sw__tune_mix *mixes,
                       size_t nmix, int seq, struct sw__tune_measure *m, struct sw_err *e)
{
    struct sw_up_opts uo;
    struct sw_up_result ur;
    struct sw_err ue;
    char pid[4200];
    memset(&uo, 0, sizeof(uo));
    memset(&ur, 0, sizeof(ur));
    sw_err_clear(&ue);
    if (!p->cmd.argc)
        return sw_err_set(e, SW_EINVAL, "endpoint %s: the plan has no command line (%s)", ep->name,
                          p->cmd_why[0] ? p->cmd_why : "no renderer");
    snprintf(m->log, sizeof(m->log), "%s/tune-%s-%d.log", run_dir, ep->name, seq);
    snprintf(pid, sizeof(pid), "%s/tune-%s.pid", run_dir, ep->name);
    uo.engine = sw_engine_find("llama.cpp");
    uo.cmd = &p->cmd;
    struct sw_fleet_addr fa;
    int arc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (arc)
        return arc;
    uo.host = fa.bind;
    uo.port = fa.port;
    uo.log_path = m->log;
    uo.pid_file = pid;
    uo.endpoint = ep->name;
    uo.api_key = api_key;
    uo.preflight = true;
    uo.liveness = true;
    uo.boot_timeout_s = o->boot_timeout_s ? o->boot_timeout_s : 300;
    uo.grace_ms = 5000;
    uo.stop = o->stop;
    int rc = sw_deploy_up(&uo, &ur, &ue);
    if (rc == SW_EINTR) {
        sw_up_result_free(&ur);
        return sw_err_set(e, SW_EINTR, "interrupted");
    }
    if (rc) {
        snprintf(m->why, sizeof(m->why), "%.1200s", ue.msg[0] ? ue.msg : sw_strerror(rc));
        sw_up_result_free(&ur);
        unlink(pid);
        return SW__TUNE_BOOT_FAILED;
    }
    m->boot_s = ur.boot_s;
    snprintf(m->url, sizeof(m->url), "%s", ur.url);
    rc = measure(o, ep, api_key, slots, mixes, nmix, m, e);
    struct sw_err se;
    sw_child_stop(&ur.child, 5000, &se);
    unlink(pid);
    sw_up_result_free(&ur);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Rollout: a deploy on the endpoint's host.
 */

static int probe_rollout(const struct sw_tune_opts *o, const struct sw_fleet *f,
                         struct sw_ledger *ledger, const struct sw_fleet_endpoint *ep,
                         const char *api_key, int slots, const struct sw__tune_mix *mixes,
                         size_t nmix, struct sw__tune_measure *m, struct sw_err *e)
{
    struct sw_rollout_opts ro;
    struct sw_rollout_result rr;
    struct sw_err de;
    memset(&ro, 0, sizeof(ro));
    sw_err_clear(&de);
    ro.ledger = ledger;
    ro.record = ledger != NULL;
    ro.probe_only = "liveness";
    ro.deadline_ms = (int64_t)(o->boot_timeout_s ? o->boot_timeout_s : 300) * 1000;
    ro.note = "slipway tune probe";
    double t0 = sw_now_s();
    int rc = sw_rollout_deploy(f, ep, &ro, &rr, &de);
    if (rc == SW_ENOMEM || rc == SW_EINTR) {
        sw_rollout_result_free(&rr);
        return sw_err_set(e, rc, "%s", de.msg[0] ? de.msg : sw_strerror(rc));
    }
    m->deployed = true;
    if (rc) {
        /* the deploy could not start (host unreachable, another deploy's lock): this probe
         * failed, the run goes on */
        snprintf(m->deploy_outcome, sizeof(m->deploy_outcome), "not_started");
        snprintf(m->why, sizeof(m->why), "deploy on host %s did not start: %.1200s",
                 ep->host ? ep->host->name : "?", de.msg[0] ? de.msg : sw_strerror(rc));
        sw_rollout_result_free(&rr);
        return SW__TUNE_BOOT_FAILED;
    }
    snprintf(m->deploy_outcome, sizeof(m->deploy_outcome), "%s",
             sw_rollout_outcome_name(rr.outcome));
    snprintf(m->deploy_class, sizeof(m->deploy_class), "%s", rr.fail_class);
    snprintf(m->deploy_tag, sizeof(m->deploy_tag), "%s", rr.tag);
    m->deploy_attempt = rr.attempt;
    m->deploy_serving = rr.serving;
    if (rr.outcome != SW_ROLLOUT_COMMITTED) {
        snprintf(m->why, sizeof(m->why), "deploy %s (%s at %s): %.800s%s%.300s",
                 sw_rollout_outcome_name(rr.outcome), rr.fail_class[0] ? rr.fail_class : "?",
                 rr.failed_step[0] ? rr.failed_step : "?", rr.fail_msg,
                 rr.rollback_msg[0] ? "; rollback: " : "", rr.rollback_msg);
        sw_rollout_result_free(&rr);
        return SW__TUNE_BOOT_FAILED;
    }
    sw_rollout_result_free(&rr);
    m->boot_s = sw_now_s() - t0;
    /* measured where the endpoint answers: through its host when it listens on the host's
     * loopback */
    struct sw_host_route rt;
    rc = sw_host_route_open(&rt, ep, NULL, 30000, &de);
    if (rc) {
        sw_host_route_close(&rt);
        snprintf(m->why, sizeof(m->why), "no way to the endpoint: %.1200s", de.msg);
        return SW__TUNE_BENCH_FAILED;
    }
    snprintf(m->url, sizeof(m->url), "%s", rt.url);
    snprintf(m->unix_socket, sizeof(m->unix_socket), "%s", rt.unix_socket);
    rc = measure(o, ep, api_key, slots, mixes, nmix, m, e);
    sw_host_route_close(&rt);
    m->unix_socket[0] = '\0';
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Sim: the stand-in in a forked child.
 */

/* GET /health on 127.0.0.1:port: the status, 0 when nothing answered (within 2 s). */
static int health(int port)
{
    struct sw_net_loop l;
    struct sw_net_resp r;
    char url[64];
    if (sw_net_loop_init(&l, NULL, NULL))
        return 0;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/health", port);
    struct sw_net_req t = {.connect_ms = 2000, .total_ms = 2000, .body_max = 4096};
    memset(&r, 0, sizeof(r));
    sw_net_get(&l, url, &t, &r, NULL);
    int status = (int)r.status;
    sw_net_resp_free(&r);
    sw_net_loop_close(&l);
    return status;
}

static void sim_child(const struct sw_tune_opts *o, const struct sw_fleet_endpoint *ep,
                      const struct sw_plan *p, const char *ready)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    struct sw_sim_config c;
    struct sw_sim *s = NULL;
    struct sw_err e;
    int status = 1;
    (void)o;
    sw_sim_config_init(&c);
    c.listen = "127.0.0.1:0";
    c.ready_file = ready;
    c.alias = ep->alias.v;
    c.load_ms = 0;
    c.out = fopen("/dev/null", "we");
    c.log = stderr;
    int rc;
    if (ep->engine == SW_FLEET_VLLM)
        rc = sw_sim_new_vllm(p->engine_plan, ep->payload.path.v,
                             ep->shape.seqs.set ? (int64_t)ep->shape.seqs.v : 0, &c, &s, &e);
    else
        rc = sw_sim_new_llamacpp(p, 0, &c, &s, &e);
    if (!rc)
        rc = sw_sim_run(s, &status, &e);
    if (rc)
        fprintf(stderr, "sim: %s\n", e.msg);
    fflush(stderr);
    _exit(rc ? 1 : status);
}

static int probe_sim(const struct sw_tune_opts *o, const char *run_dir,
                     const struct sw_fleet_endpoint *ep, const struct sw_plan *p, int slots,
                     const struct sw__tune_mix *mixes, size_t nmix, int seq,
                     struct sw__tune_measure *m, struct sw_err *e)
{
    char ready[4200];
    snprintf(m->log, sizeof(m->log), "%s/tune-%s-%d.log", run_dir, ep->name, seq);
    snprintf(ready, sizeof(ready), "%s/tune-%s-%d.port", run_dir, ep->name, seq);
    unlink(ready);
    if (ep->engine == SW_FLEET_VLLM && !p->engine_plan)
        return sw_err_set(e, SW_EINVAL, "endpoint %s: no vLLM plan to simulate", ep->name);
    fflush(NULL);
    double t0 = sw_now_s();
    pid_t pid = fork();
    if (pid < 0)
        return sw_err_set(e, SW_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* the log in slipway's run directory, never through a link planted there */
        int lfd = open(m->log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
        if (lfd >= 0 && lfd != 2) {
            dup2(lfd, 2);
            close(lfd);
        }
        sim_child(o, ep, p, ready);
    }
    int rc = 0, status = 0, port = 0;
    bool exited = false, up = false;
    double deadline = t0 + (o->boot_timeout_s ? o->boot_timeout_s : 300);
    while (!up && !exited && sw_now_s() < deadline) {
        if (o->stop && *o->stop)
            break;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            break;
        }
        if (!port) {
            char *txt = NULL;
            size_t n = 0;
            int64_t v = 0;
            if (sw_read_file(ready, 64, &txt, &n, NULL) == 0) {
                txt[strcspn(txt, "\r\n")] = '\0';
                if (sw_parse_i64(txt, &v, NULL) == 0 && v > 0 && v <= 65535)
                    port = (int)v;
                sw_free(txt);
            }
        }
        if (port > 0 && health(port) == 200)
            up = true;
        else
            usleep(20000);
    }
    if (up) {
        m->boot_s = sw_now_s() - t0;
        snprintf(m->url, sizeof(m->url), "http://127.0.0.1:%d", port);
        rc = measure(o, ep, NULL, slots, mixes, nmix, m, e);
    } else if (o->stop && *o->stop) {
        rc = sw_err_set(e, SW_EINTR, "interrupted");
    } else {
        char *tail = NULL;
        size_t n = 0;
        sw_read_file(m->log, 1 << 20, &tail, &n, NULL);
        const char *last = tail ? tail : "";
        /* the last line that says something */
        size_t end = n;
        while (end && (last[end - 1] == '\n' || last[end - 1] == '\r'))
            end--;
        size_t start = end;
        while (start && last[start - 1] != '\n')
            start--;
        snprintf(m->why, sizeof(m->why), "%s: %.*s",
                 exited ? "the engine exited while booting" : "no answer before the deadline",
                 (int)(end - start > 400 ? 400 : end - start), last + start);
        sw_free(tail);
        rc = SW__TUNE_BOOT_FAILED;
    }
    if (!exited) {
        kill(pid, SIGTERM);
        double until = sw_now_s() + 10;
        while (waitpid(pid, &status, WNOHANG) != pid) {
            if (sw_now_s() > until) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                break;
            }
            usleep(10000);
        }
    }
    unlink(ready);
    return rc;
}

int sw__tune_probe(const struct sw_tune_opts *o, enum sw_tune_boot boot, const char *run_dir,
                   const struct sw_fleet *f, struct sw_ledger *ledger,
                   const struct sw_fleet_endpoint *ep, const struct sw_plan *p, int slots,
                   const struct sw__tune_mix *mixes, size_t nmix, int seq,
                   struct sw__tune_measure *m, struct sw_err *e)
{
    memset(m, 0, sizeof(*m));
    m->score = NAN;
    m->noise = NAN;
    if (boot == SW_TUNE_BOOT_SIM)
        return probe_sim(o, run_dir, ep, p, slots, mixes, nmix, seq, m, e);
    char *key = NULL;
    int rc = sw_engine_read_secret(&ep->api_key, "api_key", &key, e);
    if (rc)
        return rc;
    if (boot == SW_TUNE_BOOT_ROLLOUT)
        rc = probe_rollout(o, f, ledger, ep, key, slots, mixes, nmix, m, e);
    else
        rc = probe_local(o, run_dir, ep, p, key, slots, mixes, nmix, seq, m, e);
    if (key) {
        memset(key, 0, strlen(key));
        sw_free(key);
    }
    return rc;
}
