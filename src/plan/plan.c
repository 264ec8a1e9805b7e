/*
 * plan/plan: sw_plan_endpoint, the one plan of an endpoint that `slipway plan FLEET`, the gates
 * and `up` share.
 *
 * llama.cpp: the engine adapter renders the endpoint's argv (or the caller gives one verbatim) and
 * the law's argv reader reads it back, so planning a fleet and planning the rendered command
 * agree; the architecture comes from the GGUF's header (read header-only: a file whose tensor data
 * is absent will do) when it is on this machine, else from its header read on the endpoint's ssh
 * host (plan/remote_model.c: ranged reads, cached), else from the endpoint's `arch` (llama.cpp
 * keys with "arch", or a config.json-like object naming model_type); the devices from the fleet.
 * vLLM: plan_vllm.c (memory/vllm with the endpoint's shape, devices and fork profile).
 * SGLang: memory/sglang over the argv the adapter renders, read back by its argv reader; the
 * endpoint's config.json (or inline `arch`) as the model, its first device as the card.
 *
 * What it deliberately does not do: judge the plan (gate), start anything (deploy), print (cli).
 */
#include <slipway/arch.h>
#include <slipway/gguf.h>
#include <slipway/hf.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/engine_sglang.h>
#include <slipway/sglang.h>

#include "plan/plan_internal.h"
#include "plan/remote_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A config.json-style declaration, normalized; llama.cpp lays out memory by model family, so the
 * declaration must name it. */
static int arch_from_hf_decl(const struct sw_fleet_endpoint *ep, struct sw_arch **out,
                             struct sw_err *e)
{
    struct sw_hf_config *c = sw_calloc(1, sizeof(*c));
    char where[600];
    int rc;

    if (!c)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_endpoint_hf_config(ep, c, where, sizeof(where), e);
    if (rc)
        goto out;
    if (!c->model_type[0]) {
        rc = sw_err_set(e, SW_EINVAL,
                        "%s: a config.json-style declaration needs model_type (e.g. qwen3_5, "
                        "qwen3_next, llama): llama.cpp lays out memory by model family",
                        where);
        goto out;
    }
    rc = sw_arch_from_hf(c, out, e);
    if (rc)
        sw_err_prefix(e, "%s", where);
out:
    sw_free(c);
    return rc;
}

static const char *base_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static void pwarn_plan(struct sw_llamacpp_plan *lp, const char *fmt, ...) SW_PRINTF(2, 3);
static void pwarn_plan(struct sw_llamacpp_plan *lp, const char *fmt, ...)
{
    va_list ap;
    if (lp->n_warn >= (int)SW_ARRAY_LEN(lp->warn))
        return;
    va_start(ap, fmt);
    vsnprintf(lp->warn[lp->n_warn], sizeof(lp->warn[0]), fmt, ap);
    va_end(ap);
    lp->n_warn++;
}

static int copy_argv(struct sw_engine_cmd *c, const char *const *argv, size_t argc,
                     struct sw_err *e)
{
    c->argv = sw_calloc(argc + 1, sizeof(char *));
    if (!c->argv)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < argc; i++) {
        c->argv[i] = sw_strdup(argv[i]);
        if (!c->argv[i])
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        c->argc = i + 1;
    }
    return 0;
}

/* Is the payload there to be read? With regular_files_only, a FIFO or a device is not. */
static bool payload_here(const char *path, bool regular_only)
{
    struct stat st;
    if (regular_only)
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
    return access(path, R_OK) == 0;
}

/* Where a payload file (payload.gguf, .draft, .mmproj: `f`) is on the endpoint's host: as
 * written when absolute or "~/", else under payload.path; "" when neither says. */
static void host_file(const struct sw_fleet_endpoint *ep, const char *f, char *out, size_t n)
{
    const char *dir = ep->payload.path.v;
    out[0] = '\0';
    if (f && (f[0] == '/' || (f[0] == '~' && f[1] == '/')))
        snprintf(out, n, "%s", f);
    else if (f && dir)
        snprintf(out, n, "%s/%s", dir, f);
    else if (!f && dir)
        snprintf(out, n, "%s", dir);
}

/* A GGUF's header on ep's host (header-only: the law needs nothing else), counted into rd:
 * 0 read (*g), 1 the host did not give it (why in rd; a declaration may stand in), else the
 * error of a file that is there but unreadable as GGUF. */
static int host_gguf(const struct sw_fleet_endpoint *ep, const char *path,
                     const struct sw_gguf_types *x, struct sw_gguf **g,
                     struct sw_plan_model_read *rd, struct sw_err *e)
{
    struct sw__remote r;
    struct sw_err re;
    const struct sw_gguf_read_opts o = {.types = x, .header_only = true};
    sw_err_clear(&re);
    if (!rd->path[0])
        snprintf(rd->path, sizeof(rd->path), "%s", path);
    int rc = sw__remote_begin(&r, ep, rd, &re);
    if (!rc)
        rc = sw__remote_gguf(&r, path, &o, g, &re);
    sw__remote_end(&r);
    if (!rc)
        return 0;
    if (rc == SW_ENOENT || rc == SW_ENET || rc == SW_EMISMATCH || rc == SW_ETIMEDOUT ||
        rc == SW_ECHILD || rc == SW_EIO || rc == SW_EINVAL) {
        sw__remote_note_why(rd, &re);
        return 1;
    }
    if (e)
        *e = re;
    return rc;
}

/* A fork profile's extra tensor types, as the GGUF reader takes them (fork[] holds them). */
static void fork_types(const struct sw_fleet_endpoint *ep, struct sw_ggml_type *fork, size_t n,
                       struct sw_gguf_types *x, char *by, size_t byn)
{
    const struct sw_fleet_profile *fp = ep ? ep->profile : NULL;
    x->types = fork;
    x->n = 0;
    x->declared_by = NULL;
    for (size_t i = 0; fp && i < fp->n_gguf_types && i < n; i++) {
        fork[i] = (struct sw_ggml_type){fp->gguf_types[i].id, fp->gguf_types[i].name,
                                        fp->gguf_types[i].block_size, fp->gguf_types[i].type_size};
        x->n = i + 1;
    }
    if (fp) {
        snprintf(by, byn, "profile %s", fp->name);
        x->declared_by = by;
    }
}

/* A declared fact in bytes (measured: NAME: {value: 918166048 B}); 0 when absent or not bytes. */
uint64_t sw__plan_fact_bytes(const struct sw_fleet_endpoint *ep, const char *name)
{
    const struct sw_fleet_fact *f = ep ? sw_fleet_endpoint_fact(ep, name) : NULL;
    if (!f || strcmp(f->q.unit, "B") || f->q.value < 1 || f->q.value > 9e18)
        return 0;
    return (uint64_t)f->q.value;
}

/* The draft model (-md) priced beside the main one: its GGUF when it is here, else the
 * endpoint's draft_arch (weights from the fact draft_file when the architecture has none);
 * neither: its declared size alone, or a warning that it is not priced. */
static int price_draft(const struct sw_fleet_endpoint *ep, const struct sw_llamacpp_env *env,
                       bool regular_only, const struct sw_llamacpp_args *a,
                       struct sw_llamacpp_plan *lp, struct sw_plan_model_read *rd, struct sw_err *e)
{
    struct sw_arch *da = NULL;
    struct sw_gguf *g = NULL;
    char from[1200] = "";
    uint64_t declared = sw__plan_fact_bytes(ep, "draft_file");
    int rc = 0;

    if (!a->draft[0])
        return 0;
    struct sw_ggml_type fork[SW_GGUF_MAX_EXTRA_TYPES];
    struct sw_gguf_types x;
    char by[128] = "", hp[4096] = "";
    fork_types(ep, fork, SW_ARRAY_LEN(fork), &x, by, sizeof(by));
    const struct sw_gguf_read_opts ho = {.types = &x, .header_only = true};
    int hrc = 1;
    if (!payload_here(a->draft, regular_only) && ep && rd && !ep->draft_arch &&
        sw__remote_applies(ep) && ep->payload.draft.v) {
        host_file(ep, ep->payload.draft.v, hp, sizeof(hp));
        hrc = hp[0] ? host_gguf(ep, hp, &x, &g, rd, e) : 1;
        if (hrc < 0) {
            rc = hrc;
            sw_err_prefix(e, "the draft model (-md)");
            goto out;
        }
    }
    if (payload_here(a->draft, regular_only) || hrc == 0) {
        rc = hrc == 0 ? 0 : sw_gguf_open_opts(a->draft, &ho, &g, e);
        if (!rc)
            rc = sw_arch_from_gguf(g, &da, e);
        if (rc) {
            sw_err_prefix(e, "the draft model (-md)");
            goto out;
        }
        if (hrc == 0)
            snprintf(from, sizeof(from), "the draft's GGUF %s:%s", ep->host->name, hp);
        else
            snprintf(from, sizeof(from), "the draft's GGUF %s", a->draft);
        declared = 0;
    } else if (ep && ep->draft_arch) {
        struct sw_fleet_endpoint q = *ep;
        q.arch = ep->draft_arch;
        q.arch_at = ep->draft_arch_at;
        q.payload.path.v = NULL; /* the main checkpoint's config.json is not the draft's */
        if (json_object_get(ep->draft_arch, "arch"))
            rc = sw_arch_from_json(ep->draft_arch,
                                   ep->draft_arch_at.file ? ep->draft_arch_at.file : "draft_arch",
                                   &da, e);
        else
            rc = arch_from_hf_decl(&q, &da, e);
        if (rc) {
            sw_err_prefix(e, "%s: draft_arch", ep->name);
            goto out;
        }
        snprintf(from, sizeof(from), "%s is not here: the declared draft_arch%s", a->draft,
                 declared ? ", weights from the fact draft_file" : "");
    }
    if (da) {
        rc = sw_llamacpp_plan_draft(lp, da, declared, a, env, from, e);
        if (rc)
            goto out;
        if (!da->weights.known && !declared)
            pwarn_plan(lp,
                       "draft weights not priced: %s is not here and no fact draft_file "
                       "(bytes) is declared",
                       base_of(a->draft));
    } else if (declared) {
        snprintf(from, sizeof(from), "%s is not here: the fact draft_file", a->draft);
        sw_llamacpp_plan_draft_weights(lp, declared, a, env, from);
        pwarn_plan(lp,
                   "draft KV and compute not priced: %s is not here and no draft_arch is "
                   "declared",
                   base_of(a->draft));
    } else {
        pwarn_plan(lp,
                   "-md %s: the draft model is not priced: its GGUF is not here and neither "
                   "draft_arch nor the fact draft_file is declared",
                   base_of(a->draft));
    }
out:
    sw_arch_free(da);
    sw_gguf_free(g);
    return rc;
}

/* The size of a payload file on ep's host (one stat, counted into rd); 0 when not had. */
static uint64_t host_file_size(const struct sw_fleet_endpoint *ep, const char *f,
                               struct sw_plan_model_read *rd)
{
    struct sw__remote r;
    struct sw_err e;
    char hp[4096];
    uint64_t size = 0;
    sw_err_clear(&e);
    host_file(ep, f, hp, sizeof(hp));
    if (!hp[0])
        return 0;
    if (!sw__remote_begin(&r, ep, rd, &e))
        sw__remote_size(&r, hp, &size, &e);
    sw__remote_end(&r);
    return size;
}

/* The projector (--mmproj): its weights from the file when it is here (or its size on the
 * endpoint's ssh host), else the fact projector_file; the vision encoder's compute from the fact
 * projector_compute, else from a measured projector_cost less the weights (the operator's
 * subtraction of two boots). */
static void price_projector(const struct sw_fleet_endpoint *ep, const struct sw_llamacpp_env *env,
                            bool regular_only, const struct sw_llamacpp_args *a,
                            struct sw_llamacpp_plan *lp, struct sw_plan_model_read *rd)
{
    struct stat st;
    uint64_t w = 0, c = 0, cost = sw__plan_fact_bytes(ep, "projector_cost"), hs = 0;
    char from[400];
    const char *wf = NULL, *cf = NULL;

    if (!a->mmproj[0])
        return;
    uint64_t wdecl = sw__plan_fact_bytes(ep, "projector_file"),
             cdecl = sw__plan_fact_bytes(ep, "projector_compute");
    bool here =
        payload_here(a->mmproj, regular_only) && stat(a->mmproj, &st) == 0 && st.st_size > 0;
    if (!here && ep && rd && sw__remote_applies(ep) && ep->payload.mmproj.v &&
        !ep->payload.mmproj.off)
        hs = host_file_size(ep, ep->payload.mmproj.v, rd);
    if (here) {
        w = (uint64_t)st.st_size;
        wf = "the file's size";
    } else if (hs) {
        w = hs;
        wf = "the file's size on its host";
    } else if (wdecl) {
        w = wdecl;
        wf = "the fact projector_file";
    }
    if (cdecl) {
        c = cdecl;
        cf = "the fact projector_compute";
    } else if (cost && w && cost >= w) {
        c = cost - w;
        cf = "the measured projector_cost less the weights";
    } else if (cost && !w) {
        w = cost;
        wf = "the measured projector_cost (weights and compute together)";
        cf = "included in projector_cost";
    }
    if (!w) {
        pwarn_plan(lp,
                   "--mmproj %s: the projector is not priced: its file is not here and no fact "
                   "projector_file (bytes) or projector_cost is declared",
                   base_of(a->mmproj));
        return;
    }
    if (!cf)
        pwarn_plan(lp,
                   "--mmproj %s: the vision encoder's compute buffer is not derived (declare the "
                   "fact projector_compute or a measured projector_cost)",
                   base_of(a->mmproj));
    snprintf(from, sizeof(from), "weights: %s; compute: %s", wf, cf ? cf : "unknown (0)");
    sw_llamacpp_plan_projector(lp, w, c, env, from);
}

/* The draft and the projector; rd (may be NULL: this machine's files only) counts what was read
 * on the endpoint's host. */
static int llamacpp_extras(const struct sw_fleet_endpoint *ep, const struct sw_llamacpp_args *a,
                           const struct sw_llamacpp_env *env, bool regular_only,
                           struct sw_llamacpp_plan *lp, struct sw_plan_model_read *rd,
                           struct sw_err *e)
{
    /* a draft the law cannot plan (a draft head llama.cpp runs only attached to its target, an
     * unreadable GGUF, a bad draft_arch) leaves the main plan standing, said */
    struct sw_err de;
    sw_err_clear(&de);
    int rc = price_draft(ep, env, regular_only, a, lp, rd, &de);
    if (rc == SW_ENOMEM)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (rc) {
        char b[600];
        pwarn_plan(lp, "-md %s: the draft model is not priced: %.150s", base_of(a->draft),
                   sw_err_format(&de, b, sizeof(b)));
    }
    price_projector(ep, env, regular_only, a, lp, rd);
    return 0;
}

int sw_plan_llamacpp_extras(const struct sw_fleet_endpoint *ep, const struct sw_llamacpp_args *a,
                            const struct sw_llamacpp_env *env, bool regular_only,
                            struct sw_llamacpp_plan *lp, struct sw_err *e)
{
    return llamacpp_extras(ep, a, env, regular_only, lp, NULL, e);
}

static int plan_llamacpp(const struct sw_fleet_endpoint *ep, const struct sw_plan_overrides *ov,
                         struct sw_plan *p, struct sw_err *e)
{
    struct sw_llamacpp_env env;
    struct sw_gguf *g = NULL;
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    bool regular_only = ov && ov->regular_files_only;
    int rc;

    memset(&env, 0, sizeof(env));
    p->args = sw_calloc(1, sizeof(*p->args));
    p->llamacpp = sw_calloc(1, sizeof(*p->llamacpp));
    if (!p->args || !p->llamacpp)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (ov && ov->argv) {
        rc = copy_argv(&p->cmd, ov->argv, ov->argc, e);
    } else {
        if (!eng)
            return sw_err_set(e, SW_EUNSUPPORTED, "no llama.cpp engine adapter");
        rc = eng->render(ep, &p->cmd, e);
    }
    if (rc)
        goto out;
    sw_llamacpp_args_init(p->args);
    rc = sw_llamacpp_args_parse(p->args, (int)p->cmd.argc, (const char *const *)p->cmd.argv, e);
    if (rc)
        goto out;
    /* a fork profile's extra tensor types (gguf_types) are read as the fork reads them; only
     * the header is read, so a file whose tensor data is absent plans as well */
    struct sw_ggml_type fork[SW_GGUF_MAX_EXTRA_TYPES];
    struct sw_gguf_types x;
    char by[128] = "", hp[4096] = "";
    fork_types(ep, fork, SW_ARRAY_LEN(fork), &x, by, sizeof(by));
    const struct sw_gguf_read_opts ho = {.types = &x, .header_only = true};
    bool here = payload_here(p->args->model, regular_only);
    int hrc = 1;
    if (!here && ep && sw__remote_applies(ep)) {
        host_file(ep, ep->payload.gguf.v, hp, sizeof(hp));
        hrc = hp[0] ? host_gguf(ep, hp, &x, &g, &p->model_read, e) : 1;
        if (hrc < 0) {
            rc = hrc;
            goto out;
        }
    }
    if (here || hrc == 0) {
        rc = hrc == 0 ? 0 : sw_gguf_open_opts(p->args->model, &ho, &g, e);
        if (!rc)
            rc = sw_arch_from_gguf(g, &p->arch, e);
    } else if (ep && ep->arch && json_object_get(ep->arch, "arch")) {
        rc = sw_arch_from_json(ep->arch, ep->arch_at.file ? ep->arch_at.file : "arch", &p->arch, e);
    } else if (ep && ep->arch) {
        rc = arch_from_hf_decl(ep, &p->arch, e);
    } else if (ep && p->model_read.asked) {
        rc = sw_err_set(e, SW_ENOENT,
                        "%s: %s is not on this machine nor could it be read on its host (%.600s), "
                        "and no `arch` is declared",
                        ep->name, p->args->model, p->model_read.why);
    } else if (ep) {
        rc = sw_err_set(e, SW_ENOENT, "%s: %s is not on this machine and no `arch` is declared",
                        ep->name, p->args->model);
    } else {
        rc = sw_err_set(e, SW_ENOENT, "%s is not a regular file", p->args->model);
    }
    if (rc)
        goto out;
    if (ep) /* the fleet's devices: a declared memory is a limit the plan is held to */
        sw_llamacpp_env_from_endpoint(ep, &env);
    else if (ov && ov->llamacpp_env)
        env = *ov->llamacpp_env;
    rc = sw_llamacpp_plan(p->arch, p->args, &env, p->llamacpp, e);
    if (rc)
        goto out;
    if (g && g->header_only)
        pwarn_plan(p->llamacpp,
                   "%s is header only (its tensor data is not in the file%s): planned from the "
                   "header; the engine cannot load it",
                   base_of(hp[0] ? hp : p->args->model), hp[0] ? " on the host" : "");
    rc = llamacpp_extras(ep, p->args, &env, regular_only, p->llamacpp, &p->model_read, e);
    if (rc)
        goto out;
    p->predicted = sw_llamacpp_report_to_json(&p->llamacpp->report);
    if (!p->predicted)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
out:
    sw_gguf_free(g);
    return rc;
}

/* A measured `autofit_tokens` fact (the pool the engine sized itself for this shape without the
 * pin) calibrates SGLang's rest, which the fleet does not hold: the plan then says what the
 * autofit is, what the pin leaves unallocated, and what the autofill of the same rest would give
 * the mamba pool. Nothing is said without the fact; a fact the law cannot invert is a warning. */
static int sglang_autofit(const struct sw_fleet_endpoint *ep, const struct sw_hf_config *c,
                          const struct sw_sglang_opts *o, const struct sw_sglang_report *pinned,
                          json_t *plan, struct sw_err *e)
{
    const struct sw_fleet_fact *f = sw_fleet_endpoint_fact(ep, "autofit_tokens");
    struct sw_sglang_opts q = *o;
    struct sw_sglang_report fit, fill;
    struct sw_err le;
    uint64_t lo = 0, hi = 0;
    if (!f || f->q.value < 1 || f->q.value > 9e15)
        return 0;
    sw_err_clear(&le);
    q.max_total_tokens = 0;
    if (sw_sglang_rest_from_tokens(c, &q, (int64_t)f->q.value, &lo, &hi, &le) == 0) {
        q.rest_bytes = lo;
        if (sw_sglang_plan(c, &q, &fit, &le) == 0) {
            struct sw_sglang_opts a = q;
            a.max_mamba_cache_size = 0;
            bool have_fill = sw_sglang_plan(c, &a, &fill, NULL) == 0;
            json_t *j = json_object();
            if (!j)
                return sw_err_set(e, SW_ENOMEM, "out of memory");
            sw_json_set_str(j, "from", "measured autofit_tokens");
            sw_json_set_int(j, "rest_bytes_lo", (json_int_t)lo);
            sw_json_set_int(j, "rest_bytes_hi", (json_int_t)hi);
            sw_json_set_int(j, "autofit_tokens", fit.max_total_num_tokens);
            if (o->max_total_tokens > 0) {
                int64_t slack = fit.max_total_num_tokens - pinned->max_total_num_tokens;
                sw_json_set_int(j, "pin_unallocated_tokens", slack);
                sw_json_set_int(j, "pin_unallocated_bytes", slack * pinned->cell_bytes);
            }
            if (have_fill && fill.mamba_cache_per_req) {
                sw_json_set_int(j, "autofill_mamba_slots", fill.max_mamba_cache_size);
                sw_json_set_real(j, "autofill_ssm_gb", round(fill.mamba_ssm_gb * 100) / 100);
                sw_json_set_real(j, "autofill_conv_gb", round(fill.mamba_conv_gb * 100) / 100);
                sw_json_set_int(j, "autofill_kv_tokens", fill.max_total_num_tokens);
            }
            sw_json_set_new(plan, "calibrated", j);
            char b[320];
            snprintf(b, sizeof(b),
                     "calibrated from the measured autofit: rest %.2f GiB; autofit %lld tokens",
                     (double)lo / (double)SW_GIB, (long long)fit.max_total_num_tokens);
            if (have_fill && fill.mamba_cache_per_req)
                snprintf(b + strlen(b), sizeof(b) - strlen(b),
                         "; the autofill would give the mamba pool %lld slots, ssm_state %.2f GB",
                         (long long)fill.max_mamba_cache_size, fill.mamba_ssm_gb);
            json_array_append_new(json_object_get(plan, "lines"), json_string(b));
            return 0;
        }
    }
    char b[700], w[900];
    const char *w0 = json_string_value(json_object_get(plan, "warnings"));
    snprintf(w, sizeof(w), "%s%sautofit_tokens not used: %s", w0 ? w0 : "", w0 ? "; " : "",
             sw_err_format(&le, b, sizeof(b)));
    sw_json_set_str(plan, "warnings", w);
    return 0;
}

/* SGLang: the argv the adapter renders, read back by the adapter's argv reader into the law's
 * options (one reading of the command line, as `plan --engine sglang -- ...` does), with the
 * fleet's device as the card and its config.json (or inline `arch`) as the model. The pool is
 * sized from free memory the fleet does not hold: a pinned pool (max_total_tokens) is planned
 * exactly; an unpinned one needs the facts, else the plan says so. */
static int plan_sglang(const struct sw_fleet_endpoint *ep, struct sw_plan *p, struct sw_err *e)
{
    const struct sw_engine *eng = sw_engine_find("sglang");
    struct sw_engine_cmd law;
    struct sw_hf_config *c = NULL;
    struct sw_err re;
    const char *dir = NULL;
    char src[700], ign[512] = "";
    int rc;

    memset(&law, 0, sizeof(law));
    if (!eng)
        return sw_err_set(e, SW_EUNSUPPORTED, "no sglang engine adapter");
    sw_err_clear(&re);
    if (eng->render(ep, &p->cmd, &re)) {
        char buf[600];
        sw_engine_cmd_free(&p->cmd);
        memset(&p->cmd, 0, sizeof(p->cmd));
        snprintf(p->cmd_why, sizeof(p->cmd_why), "%s", sw_err_format(&re, buf, sizeof(buf)));
        if (re.code == SW_ENOMEM)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    /* the law reads the argv without its secret (SGLang's key is argv-only, refused above for
     * the real command; the pools do not depend on it) */
    struct sw_fleet_endpoint nokey = *ep;
    nokey.api_key.kind = SW_FLEET_SECRET_NONE;
    rc = eng->render(&nokey, &law, e);
    if (rc)
        goto out;
    p->sglang_opts = sw_malloc(sizeof(*p->sglang_opts));
    p->sglang = sw_calloc(1, sizeof(*p->sglang));
    c = sw_calloc(1, sizeof(*c));
    if (!p->sglang_opts || !p->sglang || !c) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    struct sw_sglang_opts *o = p->sglang_opts;
    sw_sglang_opts_init(o);
    if (ep->n_devices > 0)
        o->gpu_mem_bytes = sw_fleet_device_capacity(ep->devices[0]);
    /* the rendered argv starts with python3 -m sglang.launch_server, or the endpoint's binary */
    size_t skip = 0;
    if (law.argc > 0 && strcmp(law.argv[0], "python3") && strcmp(law.argv[0], "python") &&
        strcmp(law.argv[0], "sglang"))
        skip = 1;
    rc =
        sw_sglang_parse_argv((int)(law.argc - skip), law.argv + skip, o, &dir, ign, sizeof(ign), e);
    if (rc) {
        sw_err_prefix(e, "%s: the rendered command line", ep->name);
        goto out;
    }
    rc = sw_endpoint_hf_config_read(ep, c, src, sizeof(src), &p->model_read, e);
    if (rc)
        goto out;
    p->pool_pinned = o->max_total_tokens > 0;
    p->pool_sized = true;
    /* An unpinned pool without the free-memory facts: the measured autofit (the pool the engine
     * sized itself for this endpoint) gives the rest, so the pool is the autofit's and the pool
     * and window gates can hold it (the rest is solved with this shape's mamba pool) */
    bool from_autofit = false;
    const struct sw_fleet_fact *af = sw_fleet_endpoint_fact(ep, "autofit_tokens");
    if (!p->pool_pinned && !o->rest_bytes &&
        (!o->post_load_avail_bytes || !o->pre_load_free_bytes) && af && af->q.value >= 1 &&
        af->q.value <= 9e15) {
        uint64_t lo = 0, hi = 0;
        if (sw_sglang_rest_from_tokens(c, o, (int64_t)af->q.value, &lo, &hi, NULL) == 0) {
            o->rest_bytes = lo;
            from_autofit = true;
        }
    }
    rc = sw_sglang_plan(c, o, p->sglang, e);
    if (rc) {
        sw_err_prefix(e, "%s", ep->name);
        if (!p->pool_pinned && e)
            snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg),
                     " (pin the pool with shape.max_total_tokens)");
        goto out;
    }
    if (ign[0]) {
        size_t l = strlen(p->sglang->warnings);
        snprintf(p->sglang->warnings + l, sizeof(p->sglang->warnings) - l,
                 "%sflags not modelled: %.300s", l ? "; " : "", ign);
    }
    p->engine_plan = sw_sglang_report_json(p->sglang);
    if (!p->engine_plan) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    json_t *rep = json_object_get(p->engine_plan, "report");
    sw_json_set_str(p->engine_plan, "endpoint", ep->name);
    sw_json_set_str(p->engine_plan, "config", src);
    if (p->model_read.asked)
        sw_json_set_new(p->engine_plan, "model_read", sw_plan_model_read_json(&p->model_read));
    sw_json_set_bool(rep, "pool_pinned", p->pool_pinned);
    if (from_autofit) {
        sw_json_set_str(rep, "pool_from", "measured autofit_tokens");
        char b[200];
        snprintf(b, sizeof(b),
                 "pool unpinned: the engine's autofit, %lld tokens, from the rest the measured "
                 "autofit_tokens gives (%.2f GiB)",
                 (long long)p->sglang->max_total_num_tokens,
                 (double)o->rest_bytes / (double)SW_GIB);
        json_array_append_new(json_object_get(p->engine_plan, "lines"), json_string(b));
    }
    sw_json_set_int(rep, "context_length", o->context_length);
    sw_json_set_str(rep, "mamba_ssm_dtype", o->mamba_ssm_dtype);
    sw_json_set_str(rep, "kv_cache_dtype", o->kv_cache_dtype);
    rc = sglang_autofit(ep, c, o, p->sglang, p->engine_plan, e);
    if (rc)
        goto out;
    p->predicted = json_incref(rep);
out:
    sw_engine_cmd_free(&law);
    sw_free(c);
    return rc;
}

int sw_plan_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                     const struct sw_plan_overrides *ov, struct sw_plan *out, struct sw_err *e)
{
    (void)f; /* the endpoint carries its host, devices and profile; kept for fleet-wide inputs */
    memset(out, 0, sizeof(*out));
    out->ep = ep;
    out->engine = ep ? ep->engine : SW_FLEET_LLAMACPP;
    if (ep) {
        out->shape = sw_plan_shape(ep);
        if (!out->shape)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (!ep && !(ov && ov->argv))
        return sw_err_set(e, SW_EINVAL, "nothing to plan: no endpoint and no command line");
    switch (out->engine) {
    case SW_FLEET_LLAMACPP:
        return plan_llamacpp(ep, ov, out, e);
    case SW_FLEET_VLLM:
        return sw__plan_vllm(ep, out, e);
    case SW_FLEET_SGLANG:
        return plan_sglang(ep, out, e);
    default:
        return sw_err_set(e, SW_EINVAL,
                          "%s: planning a %s endpoint from a fleet is not wired; give its "
                          "command line: slipway plan --engine %s -- ...",
                          ep->name, sw_fleet_engine_name(ep->engine),
                          sw_fleet_engine_name(ep->engine));
    }
}

int sw_plan_payload_on_host(struct sw_plan *p, const struct sw_fleet_endpoint *ep, struct sw_err *e)
{
    struct sw_plan_model_read *rd = &p->model_read;
    char hp[4096], cfg[4200];
    const char *what = hp;
    if (!ep || rd->asked || !sw__remote_on_host(ep))
        return 0;
    host_file(ep, ep->engine == SW_FLEET_LLAMACPP ? ep->payload.gguf.v : NULL, hp, sizeof(hp));
    if (!hp[0])
        return 0;
    if (ep->engine != SW_FLEET_LLAMACPP) {
        snprintf(cfg, sizeof(cfg), "%s/config.json", hp);
        what = cfg;
    }
    /* here after all (a path both machines have): nothing to ask */
    if (what[0] == '/' && access(what, R_OK) == 0)
        return 0;
    struct sw__remote r;
    struct sw_err re;
    uint64_t size = 0;
    sw_err_clear(&re);
    snprintf(rd->path, sizeof(rd->path), "%.1000s", hp);
    int rc = sw__remote_begin(&r, ep, rd, &re);
    if (!rc)
        rc = sw__remote_size(&r, what, &size, &re);
    sw__remote_end(&r);
    if (rc == SW_ENOMEM)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (rc)
        sw__remote_note_why(rd, &re);
    rd->found = rc == 0;
    if (!rc && ep->engine == SW_FLEET_LLAMACPP)
        rd->file_size = size;
    if (p->engine_plan &&
        sw_json_set_new(p->engine_plan, "model_read", sw_plan_model_read_json(rd)))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    return 0;
}

void sw_plan_free(struct sw_plan *p)
{
    sw_engine_cmd_free(&p->cmd);
    sw_free(p->args);
    sw_free(p->llamacpp);
    sw_arch_free(p->arch);
    sw_free(p->vllm);
    sw_free(p->vllm_opts);
    sw_free(p->sglang);
    sw_free(p->sglang_opts);
    json_decref(p->engine_plan);
    json_decref(p->predicted);
    json_decref(p->shape);
    memset(p, 0, sizeof(*p));
}

int sw_plan_sglang_opts(const struct sw_fleet_endpoint *ep, const struct sw_fleet_shape *shape,
                        struct sw_sglang_opts *o, struct sw_err *e)
{
    struct sw_fleet_endpoint q = *ep;
    struct sw_plan p;
    if (shape)
        q.shape = *shape;
    bool unpinned = !q.shape.max_total_tokens.set || q.shape.max_total_tokens.v == 0;
    if (unpinned) {
        q.shape.max_total_tokens.set = true;
        q.shape.max_total_tokens.v = 1;
    }
    int rc = sw_plan_endpoint(NULL, &q, NULL, &p, e);
    if (!rc && !p.sglang_opts)
        rc = sw_err_set(e, SW_EINVAL, "%s: not an SGLang endpoint (no SGLang options to plan)",
                        ep->name);
    if (!rc) {
        *o = *p.sglang_opts;
        if (unpinned)
            o->max_total_tokens = 0;
    }
    sw_plan_free(&p);
    return rc;
}
