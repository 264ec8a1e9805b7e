/*
 * Judging one tune candidate (docs/tune.md "Candidates, gates, boots"). A probe the journal
 * already decided is taken from it. Otherwise the candidate is made on a fresh load of the fleet,
 * planned (sw_plan_endpoint, the one plan: the argv booted is the plan's), checked against every
 * frozen setting and gated (sw_gate_endpoint); a gate the baseline fails too is inherited, and
 * rejects only a candidate that is worse on the figure the gate states. A rejected candidate is
 * recorded and never booted; one that passed is booted and measured when asked and the budget
 * allows. Every decided probe is journaled and joins the report's list, its verdict beside it.
 *
 * What it deliberately does not do: choose the candidates or crown one (tune_search.c,
 * tune_crown.c), or boot and measure (tune_probe.c).
 */
#include "tune_run_internal.h"

#include <slipway/deploy.h>
#include <slipway/gate.h>

#include <math.h>
#include <string.h>

static const char *const phase_names[] = {"baseline", "single", "combo", "rebase", "remeasure"};
static const char *const outcome_names[] = {
    "", "planned", "rejected", "boot_failed", "bench_failed", "measured", "?"};

const char *sw__tune_phase_name(enum sw__tune_phase ph)
{
    return (unsigned)ph < SW_ARRAY_LEN(phase_names) ? phase_names[ph] : "?";
}

const char *sw__tune_outcome_name(enum sw__tune_outcome oc)
{
    return (unsigned)oc < SW_ARRAY_LEN(outcome_names) ? outcome_names[oc] : "?";
}

bool sw__tune_undecided(const struct sw__tune_verdict *v)
{
    return !v || v->outcome == SW__TUNE_OC_NONE || v->outcome == SW__TUNE_OC_PLANNED;
}

bool sw__tune_measured(const struct sw__tune_verdict *v)
{
    return v && v->outcome == SW__TUNE_OC_MEASURED && isfinite(v->score);
}

/* ---------------------------------------------------------------------------------------------
 * The gates, against the baseline's.
 */

/* The baseline's verdict of a gate (matched by name and device), or NULL. */
static const json_t *base_gate(const json_t *base, const json_t *g)
{
    const char *nm = json_string_value(json_object_get(g, "gate"));
    const char *dev = json_string_value(json_object_get(json_object_get(g, "numbers"), "device"));
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(base, "gates"), i, x)
    {
        const char *bn = json_string_value(json_object_get(x, "gate"));
        const char *bd =
            json_string_value(json_object_get(json_object_get(x, "numbers"), "device"));
        if (bn && nm && !strcmp(bn, nm) && (!dev || (bd && !strcmp(bd, dev))))
            return x;
    }
    return NULL;
}

/* Is the candidate worse than the baseline on a gate both fail? The figure each gate states
 * (higher is better): the pool's concurrency, the window's tokens. A gate without one is not. */
static bool worse_than_base(const json_t *g, const json_t *b)
{
    static const char *const figure[][2] = {{"pool", "max_concurrency"}, {"window", "window"}};
    const char *nm = json_string_value(json_object_get(g, "gate"));
    for (size_t i = 0; nm && i < SW_ARRAY_LEN(figure); i++) {
        if (strcmp(nm, figure[i][0]))
            continue;
        const json_t *x = json_object_get(json_object_get(g, "numbers"), figure[i][1]);
        const json_t *y = json_object_get(json_object_get(b, "numbers"), figure[i][1]);
        if (json_is_number(x) && json_is_number(y))
            return json_number_value(x) < json_number_value(y) * (1 - 1e-9);
    }
    return false;
}

/*
 * The gates that reject a candidate, "band,pool" (empty when none). A gate the baseline fails
 * too is inherited, not the candidate's doing: it rejects only when the candidate is worse on
 * the figure that gate states (a smaller pool concurrency, a shorter window). base NULL: every
 * failing gate rejects (the baseline itself).
 */
static void failed_gates(const json_t *g, const json_t *base, char *out, size_t n, json_t **list)
{
    out[0] = '\0';
    size_t used = 0;
    *list = json_array();
    const json_t *gs = json_object_get(g, "gates");
    size_t i;
    const json_t *x;
    json_array_foreach(gs, i, x)
    {
        const char *v = json_string_value(json_object_get(x, "verdict"));
        const char *nm = json_string_value(json_object_get(x, "gate"));
        if (!v || strcmp(v, "fail") || !nm)
            continue;
        const json_t *b = base ? base_gate(base, x) : NULL;
        const char *bv = b ? json_string_value(json_object_get(b, "verdict")) : NULL;
        bool inherited = bv && !strcmp(bv, "fail") && !worse_than_base(x, b);
        json_array_append_new(*list, json_pack("{s:s, s:s?, s:b}", "gate", nm, "line",
                                               json_string_value(json_object_get(x, "line")),
                                               "inherited", inherited));
        if (inherited)
            continue;
        bool dup = false;
        for (const char *q = strstr(out, nm); q && !dup; q = strstr(q + 1, nm))
            dup = (q == out || q[-1] == ',') && (q[strlen(nm)] == ',' || !q[strlen(nm)]);
        if (!dup && used < n)
            used += (size_t)snprintf(out + used, n - used, "%s%s", used ? "," : "", nm);
    }
}

static struct sw_gate_opts gate_opts(struct sw__tune_run *r)
{
    struct sw_gate_opts go;
    memset(&go, 0, sizeof(go));
    go.ledger = r->have_ledger ? &r->ledger : NULL;
    go.waivers_loose = true; /* a candidate may not need the fleet's waivers */
    return go;
}

/* A resumed baseline's gates: still what the candidates are held against. */
static int regate_baseline(struct sw__tune_run *r, const struct sw__tune_cand *c, struct sw_err *e)
{
    struct sw__tune_made m;
    int rc = sw__tune_make(r, c, &m, e);
    if (!rc) {
        struct sw_gate_opts go = gate_opts(r);
        if (sw_gate_endpoint(m.f, m.ep, &go, &r->base_gates, NULL))
            r->base_gates = NULL;
    }
    sw__tune_made_free(&m);
    return rc;
}

/* The gates of a planned candidate into gates ("" when none rejects it) and p. The baseline is
 * measured whatever its gates say (it is what runs now); the gates it fails are inherited by
 * every candidate. */
static void gate(struct sw__tune_run *r, const struct sw__tune_cand *c, enum sw__tune_phase phase,
                 const struct sw__tune_made *m, json_t *p, char *gates, size_t n)
{
    json_t *doc = NULL, *glist = NULL;
    struct sw_gate_opts go = gate_opts(r);
    struct sw_err ge;
    sw_err_clear(&ge);
    if (sw_gate_endpoint(m->f, m->ep, &go, &doc, &ge)) {
        snprintf(gates, n, "check");
        json_object_set_new(p, "why", json_string(ge.msg));
        json_decref(doc);
        return;
    }
    bool is_base = !c->n;
    failed_gates(doc, is_base ? NULL : r->base_gates, gates, n, &glist);
    if (glist)
        json_object_set_new(p, "gates", glist);
    if (is_base) {
        if (phase == SW__TUNE_PH_BASELINE) {
            json_decref(r->base_gates);
            r->base_gates = json_incref(doc);
        }
        if (gates[0])
            json_object_set_new(p, "baseline_fails", json_string(gates));
        gates[0] = '\0';
    }
    json_decref(doc);
}

/* Plan the made candidate, guard its frozen settings and gate it: gates names what rejects it
 * ("frozen", "plan", "check" or the gates), "" when nothing does. */
static void plan_and_gate(struct sw__tune_run *r, const struct sw__tune_cand *c,
                          enum sw__tune_phase phase, struct sw__tune_made *m, json_t *p,
                          char *gates, size_t n)
{
    struct sw_err pe;
    sw_err_clear(&pe);
    gates[0] = '\0';
    const char *moved = sw__tune_frozen_moved(r->base, m->ep);
    json_object_set_new(p, "frozen_values",
                        json_pack("{s:s?, s:s?, s:s?, s:s?}", "image", m->ep->image.v, "payload",
                                  m->ep->payload.path.v, "gguf", m->ep->payload.gguf.v,
                                  "quantization", m->ep->payload.quantization.v));
    m->plan_rc = sw_plan_endpoint(m->f, m->ep, NULL, &m->plan, &pe);
    m->planned = true;
    /* booted here: the program `up` runs (deploy/local), not whatever $PATH has */
    if (!m->plan_rc && r->boot == SW_TUNE_BOOT_LOCAL && m->plan.cmd.argc)
        m->plan_rc = sw_deploy_local_program(m->ep, &m->plan.cmd, NULL, &pe);
    if (m->plan.cmd.argc) {
        struct sw_buf b;
        sw_buf_init(&b, 1 << 16);
        sw_engine_cmd_format(&m->plan.cmd, &b);
        json_object_set_new(p, "argv", json_string(sw_buf_cstr(&b)));
        sw_buf_free(&b);
    }
    if (moved) {
        snprintf(gates, n, "frozen");
        json_object_set_new(p, "why", json_sprintf("would move frozen %s", moved));
    } else if (m->plan_rc) {
        snprintf(gates, n, "plan");
        json_object_set_new(p, "why", json_string(pe.msg));
    } else {
        gate(r, c, phase, m, p, gates, n);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Verdicts.
 */

/* A new verdict of c in phase (every number NAN), or NULL when out of memory. */
static struct sw__tune_verdict *verdict_new(const struct sw__tune_cand *c,
                                            enum sw__tune_phase phase)
{
    struct sw__tune_verdict *v = sw_malloc(sizeof(*v));
    if (!v)
        return NULL;
    memset(v, 0, sizeof(*v));
    v->c = *c;
    v->phase = phase;
    v->score = v->noise = v->gain = NAN;
    return v;
}

/* p joins the report's list and v the run's verdicts (v is freed on an error). */
static int decided(struct sw__tune_run *r, struct sw__tune_verdict *v, json_t *p,
                   const struct sw__tune_verdict **out, struct sw_err *e)
{
    if (r->nverdicts >= SW__TUNE_MAX_PROBES) {
        sw_free(v);
        return sw_err_set(e, SW_ERANGE, "tune: more than %d probes in one run",
                          SW__TUNE_MAX_PROBES);
    }
    if (json_array_append(r->probes, p)) {
        sw_free(v);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    v->json = p;
    r->verdicts[r->nverdicts++] = v;
    *out = v;
    return 0;
}

/* A verdict without a measure (rejected, planned) decided with p. */
static int decide(struct sw__tune_run *r, const struct sw__tune_cand *c, enum sw__tune_phase phase,
                  enum sw__tune_outcome oc, json_t *p, const struct sw__tune_verdict **out,
                  struct sw_err *e)
{
    struct sw__tune_verdict *v = verdict_new(c, phase);
    if (!v)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    v->outcome = oc;
    return decided(r, v, p, out, e);
}

/* The probe the journal already decided, into the report's list as it was ("resumed"). */
static int from_journal(struct sw__tune_run *r, const struct sw__tune_cand *c,
                        enum sw__tune_phase phase, const json_t *prev,
                        const struct sw__tune_verdict **out, struct sw_err *e)
{
    json_t *ev = json_deep_copy(json_object_get(prev, "evidence"));
    struct sw__tune_verdict *v = verdict_new(c, phase);
    if (!ev || !v) {
        json_decref(ev);
        sw_free(v);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    json_object_set_new(ev, "resumed", json_true());
    sw__tune_verdict_from_json(v, ev);
    if (v->outcome == SW__TUNE_OC_REJECTED)
        r->rejected++;
    const char *oc = json_string_value(json_object_get(ev, "outcome"));
    sw__tune_note(r, "%s %s: %s (from the journal)", sw__tune_phase_name(phase), c->key,
                  oc ? oc : "?");
    int rc = decided(r, v, ev, out, e);
    json_decref(ev);
    return rc;
}

static int reject(struct sw__tune_run *r, const struct sw__tune_cand *c, enum sw__tune_phase phase,
                  json_t *p, const char *gates, const struct sw__tune_verdict **out,
                  struct sw_err *e)
{
    r->rejected++;
    r->seq++;
    json_object_set_new(p, "outcome", json_string("rejected"));
    json_object_set_new(p, "gate", json_string(gates));
    /* the line of the last gate that is the candidate's own doing, else why */
    const char *line = json_string_value(json_object_get(p, "why"));
    size_t gi;
    const json_t *gx;
    json_array_foreach(json_object_get(p, "gates"), gi, gx)
    {
        if (!json_is_true(json_object_get(gx, "inherited")) &&
            json_string_value(json_object_get(gx, "line")))
            line = json_string_value(json_object_get(gx, "line"));
    }
    sw__tune_note(r, "%s %s: rejected by %s before any boot: %.300s", sw__tune_phase_name(phase),
                  c->key, gates, line ? line : "");
    int rc = sw__tune_journal_record(r, p, e);
    if (rc)
        return rc;
    return decide(r, c, phase, SW__TUNE_OC_REJECTED, p, out, e);
}

/* ---------------------------------------------------------------------------------------------
 * A boot and its measure.
 */

/* What the boot was: its log, its time, and for the rollout runner the deploy. */
static void put_boot(json_t *p, const struct sw__tune_measure *me)
{
    json_object_set_new(p, "log", json_string(me->log));
    json_object_set_new(p, "boot_s", sw__tune_jnum(me->boot_s));
    if (me->deployed)
        json_object_set_new(p, "deploy",
                            json_pack("{s:s, s:I, s:s, s:s, s:b}", "outcome", me->deploy_outcome,
                                      "attempt", (json_int_t)me->deploy_attempt, "tag",
                                      me->deploy_tag, "fail_class", me->deploy_class, "serving",
                                      me->deploy_serving));
}

/* What was measured: every level's repeats (per mix), each mix's figure at its best level, the
 * probe's score, noise and best level, and its gain over the first baseline (v->gain). */
static void put_measure(const struct sw__tune_run *r, json_t *p, const struct sw__tune_measure *me,
                        struct sw__tune_verdict *v)
{
    json_t *levels = json_array(), *mixes = r->nmix ? json_array() : NULL;
    for (size_t mi = 0; mi < me->nmix; mi++) {
        for (size_t li = 0; li < me->nlevels; li++) {
            json_t *reps = json_array();
            for (size_t k = 0; k < me->nv[mi][li]; k++)
                json_array_append_new(reps, sw__tune_jnum(me->v[mi][li][k]));
            json_t *lv = json_pack("{s:i, s:o, s:o}", "concurrency", me->levels[li], "median",
                                   sw__tune_jnum(me->median[mi][li]), "repeats", reps);
            if (lv && r->nmix)
                json_object_set_new(lv, "mix", json_string(r->mixes[mi].name));
            json_array_append_new(levels, lv);
        }
        if (mixes)
            json_array_append_new(mixes, json_pack("{s:s, s:I, s:I, s:o, s:o, s:i}", "mix",
                                                   r->mixes[mi].name, "depth",
                                                   (json_int_t)r->mixes[mi].depth, "tokens",
                                                   (json_int_t)r->mixes[mi].tokens, "score",
                                                   sw__tune_jnum(me->mix_score[mi]), "noise",
                                                   sw__tune_jnum(me->mix_noise[mi]), "concurrency",
                                                   me->levels[me->mix_best[mi]]));
    }
    if (mixes)
        json_object_set_new(p, "mixes", mixes);
    json_object_set_new(p, "outcome", json_string("measured"));
    json_object_set_new(p, "score", sw__tune_jnum(me->score));
    json_object_set_new(p, "noise", sw__tune_jnum(me->noise));
    json_object_set_new(p, "concurrency", json_integer(me->levels[me->best]));
    json_object_set_new(p, "levels", levels);
    v->outcome = SW__TUNE_OC_MEASURED;
    v->score = me->score;
    v->noise = me->noise;
    if (r->have_base && r->base_score > 0) {
        v->gain = (me->score - r->base_score) / r->base_score;
        json_object_set_new(p, "gain", sw__tune_jnum(v->gain));
    }
}

/* The progress line of a measured probe, with every repeat. */
static void note_measured(const struct sw__tune_run *r, const struct sw__tune_cand *c,
                          enum sw__tune_phase phase, const struct sw__tune_measure *me)
{
    char reps[256];
    size_t rn = 0;
    reps[0] = '\0';
    for (size_t mi = 0; mi < me->nmix; mi++)
        for (size_t li = 0; li < me->nlevels; li++)
            for (size_t k = 0; k < me->nv[mi][li] && rn < sizeof(reps); k++)
                rn += (size_t)snprintf(reps + rn, sizeof(reps) - rn, "%s%.1f",
                                       k ? " " : (li || mi ? " | " : ""), me->v[mi][li][k]);
    sw__tune_note(r, "%s %s: %.2f (noise %.1f%%, concurrency %d; repeats per level: %s)",
                  sw__tune_phase_name(phase), c->key, me->score, me->noise * 100,
                  me->levels[me->best], reps);
}

/* Boot the made candidate and measure it (nothing when the budget is spent: *out stays NULL). */
static int boot_and_measure(struct sw__tune_run *r, const struct sw__tune_cand *c,
                            enum sw__tune_phase phase, const struct sw__tune_made *m, json_t *p,
                            const struct sw__tune_verdict **out, struct sw_err *e)
{
    const char *ph = sw__tune_phase_name(phase);
    struct sw__tune_measure me;
    if (r->boots >= r->budget) {
        r->budget_hit = true;
        sw__tune_note(r, "%s %s: not booted, the budget of %d boots is spent", ph, c->key,
                      r->budget);
        return 0;
    }
    int slots = m->ep->shape.seqs.set ? (int)m->ep->shape.seqs.v : 1;
    if (m->ep->engine == SW_FLEET_VLLM && !m->ep->shape.seqs.set)
        slots = 256;
    sw__tune_note(r, "%s %s: booting (%d of %d)", ph, c->key, r->boots + 1, r->budget);
    int pr = sw__tune_probe(r->o, r->boot, r->run_dir, m->f, r->have_ledger ? &r->ledger : NULL,
                            m->ep, &m->plan, slots, r->mixes, r->nmix, r->seq + 1, &me, e);
    if (pr < 0) {
        if (pr == SW_EINTR)
            r->interrupted = true;
        return pr;
    }
    struct sw__tune_verdict *v = verdict_new(c, phase);
    if (!v)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    r->boots++;
    r->seq++;
    put_boot(p, &me);
    if (me.deployed && !strcmp(me.deploy_outcome, "committed"))
        snprintf(v->deploy_tag, sizeof(v->deploy_tag), "%s", me.deploy_tag);
    if (pr == SW__TUNE_BOOT_FAILED || pr == SW__TUNE_BENCH_FAILED) {
        v->outcome =
            pr == SW__TUNE_BOOT_FAILED ? SW__TUNE_OC_BOOT_FAILED : SW__TUNE_OC_BENCH_FAILED;
        json_object_set_new(p, "outcome", json_string(sw__tune_outcome_name(v->outcome)));
        json_object_set_new(p, "why", json_string(me.why));
        sw__tune_note(r, "%s %s: %s: %s", ph, c->key,
                      pr == SW__TUNE_BOOT_FAILED ? "boot failed" : "bench failed", me.why);
    } else {
        put_measure(r, p, &me, v);
        note_measured(r, c, phase, &me);
    }
    int rc = sw__tune_journal_record(r, p, e);
    if (rc) {
        sw_free(v);
        return rc;
    }
    return decided(r, v, p, out, e);
}

int sw__tune_judge(struct sw__tune_run *r, struct sw__tune_cand *c, enum sw__tune_phase phase,
                   bool boot, const struct sw__tune_verdict **out, struct sw_err *e)
{
    struct sw__tune_made m;
    json_t *p = NULL;
    char gates[256];
    int rc;
    *out = NULL;
    sw__tune_cand_key(r->ks, c);
    const json_t *prev = sw__tune_journal_prior(r, c->key, phase);
    if (prev && !c->n && !r->base_gates) {
        rc = regate_baseline(r, c, e);
        if (rc)
            return rc;
    }
    /* re-measures are never taken from the journal: they are measured again */
    if (prev && phase != SW__TUNE_PH_REMEASURE && phase != SW__TUNE_PH_REBASE)
        return from_journal(r, c, phase, prev, out, e);

    rc = sw__tune_make(r, c, &m, e);
    if (rc)
        goto out;
    p = json_pack("{s:i, s:s, s:s, s:o}", "seq", r->seq + 1, "phase", sw__tune_phase_name(phase),
                  "candidate", c->key, "settings", sw__tune_cand_settings(r, c));
    if (!p) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (r->refine_round)
        json_object_set_new(p, "refine", json_integer(r->refine_round));
    plan_and_gate(r, c, phase, &m, p, gates, sizeof(gates));
    if (gates[0]) {
        rc = reject(r, c, phase, p, gates, out, e);
    } else if (boot && !r->o->dry_run) {
        rc = boot_and_measure(r, c, phase, &m, p, out, e);
    } else {
        /* passed its gates; a dry run lists it */
        json_object_set_new(p, "outcome", json_string("planned"));
        json_object_del(p, "seq");
        if (r->o->dry_run)
            rc = decide(r, c, phase, SW__TUNE_OC_PLANNED, p, out, e);
    }
out:
    json_decref(p);
    sw__tune_made_free(&m);
    return rc;
}
