/*
 * memory/llamacpp_report: the llama.cpp report as JSON, as the lines llama-server prints, and the
 * field-by-field comparison of a prediction with a printed boot.
 *
 * "To the printed precision" means what llama.cpp's format strings show: the `size = ` lines of
 * llama_kv_cache and llama_memory_recurrent cast bytes/MiB to float and print "%7.2f"
 * (src/llama-kv-cache.cpp, src/llama-memory-recurrent.cpp); the buffer lines divide in double and
 * print "%8.2f" (llama_model_base::load_tensors, llama_context::output_reserve, sched_reserve).
 *
 * What it does not do: parse logs (engine/llamacpp's bootlog parser fills the same struct).
 */
#include <slipway/memory.h>

#include <stdio.h>
#include <string.h>

const char *sw_llamacpp_mib_f(uint64_t bytes, char *out, size_t n)
{
    float mib = (float)bytes / (1024.0f * 1024.0f);
    snprintf(out, n, "%.2f", (double)mib);
    return out;
}

const char *sw_llamacpp_mib_d(uint64_t bytes, char *out, size_t n)
{
    snprintf(out, n, "%.2f", (double)bytes / 1024.0 / 1024.0);
    return out;
}

json_t *sw_llamacpp_report_to_json(const struct sw_llamacpp_report *r)
{
    json_t *j = json_object(), *kvs = json_array();
    int bad = 0; /* any failed set: jansson drops the key, so the object would be short */
    if (!j || !kvs)
        goto fail;
    bad |= sw_json_set_int(j, "n_ctx", r->n_ctx);
    bad |= sw_json_set_int(j, "n_ctx_seq", r->n_ctx_seq);
    bad |= sw_json_set_int(j, "n_seq_max", r->n_seq_max);
    bad |= sw_json_set_bool(j, "kv_unified", r->kv_unified);
    for (uint32_t i = 0; i < r->n_kv; i++) {
        const struct sw_llamacpp_kv *k = &r->kv[i];
        json_t *o = json_object();
        if (!o)
            goto fail;
        bad |= sw_json_set_int(o, "cells", k->cells);
        bad |= sw_json_set_int(o, "layers", k->layers);
        bad |= sw_json_set_int(o, "seqs", k->seqs);
        bad |= sw_json_set_int(o, "streams", k->streams);
        bad |= sw_json_set_str(o, "k_type", sw_kv_type_name(k->k_type));
        bad |= sw_json_set_str(o, "v_type", sw_kv_type_name(k->v_type));
        bad |= sw_json_set_int(o, "k_bytes", (int64_t)k->k_bytes);
        bad |= sw_json_set_int(o, "v_bytes", (int64_t)k->v_bytes);
        bad |= sw_json_set_bool(o, "swa", k->swa);
        bad |= json_array_append_new(kvs, o);
    }
    bad |= sw_json_set_new(j, "kv_caches", kvs);
    kvs = NULL;
    if (r->has_recurrent) {
        json_t *o = json_object();
        if (!o)
            goto fail;
        bad |= sw_json_set_int(o, "cells", r->recurrent.cells);
        bad |= sw_json_set_int(o, "layers", r->recurrent.layers);
        bad |= sw_json_set_int(o, "r_bytes", (int64_t)r->recurrent.r_bytes);
        bad |= sw_json_set_int(o, "s_bytes", (int64_t)r->recurrent.s_bytes);
        bad |= sw_json_set_new(j, "recurrent", o);
    } else {
        bad |= sw_json_set_new(j, "recurrent", json_null());
    }
    if (r->model_known)
        bad |= sw_json_set_int(j, "model_bytes", (int64_t)r->model_bytes);
    else
        bad |= sw_json_set_new(j, "model_bytes", json_null());
    bad |= sw_json_set_int(j, "output_bytes", (int64_t)r->output_bytes);
    if (r->compute_known)
        bad |= sw_json_set_int(j, "compute_bytes", (int64_t)r->compute_bytes);
    else
        bad |= sw_json_set_new(j, "compute_bytes", json_null());
    if (bad)
        goto fail;
    return j;
fail:
    json_decref(j);
    json_decref(kvs);
    return NULL;
}

static int get_u(const json_t *o, const char *k, uint64_t *out, bool required, struct sw_err *e)
{
    const json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        if (required)
            return sw_err_set(e, SW_EPARSE, "report: missing \"%s\"", k);
        return SW_ENOENT;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return sw_err_set(e, SW_EPARSE, "report: \"%s\" must be a non-negative integer", k);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int sw_llamacpp_report_from_json(const json_t *j, struct sw_llamacpp_report *r, struct sw_err *e)
{
    uint64_t x;
    int rc;
    memset(r, 0, sizeof(*r));
    if (!json_is_object(j))
        return sw_err_set(e, SW_EPARSE, "report: not an object");
    rc = get_u(j, "n_ctx", &x, true, e);
    if (rc)
        return rc;
    r->n_ctx = (uint32_t)x;
    rc = get_u(j, "n_ctx_seq", &x, true, e);
    if (rc)
        return rc;
    r->n_ctx_seq = (uint32_t)x;
    rc = get_u(j, "n_seq_max", &x, true, e);
    if (rc)
        return rc;
    r->n_seq_max = (uint32_t)x;
    r->kv_unified = json_is_true(json_object_get(j, "kv_unified"));
    const json_t *kvs = json_object_get(j, "kv_caches");
    if (kvs && !json_is_array(kvs))
        return sw_err_set(e, SW_EPARSE, "report: kv_caches must be a list");
    for (size_t i = 0; kvs && i < json_array_size(kvs); i++) {
        const json_t *o = json_array_get(kvs, i);
        struct sw_llamacpp_kv *k;
        if (r->n_kv >= SW_LLAMACPP_MAX_KV)
            return sw_err_set(e, SW_ERANGE, "report: too many kv_caches");
        k = &r->kv[r->n_kv++];
        rc = get_u(o, "cells", &x, true, e);
        if (rc)
            return rc;
        k->cells = (uint32_t)x;
        rc = get_u(o, "layers", &x, true, e);
        if (rc)
            return rc;
        k->layers = (uint32_t)x;
        rc = get_u(o, "seqs", &x, true, e);
        if (rc)
            return rc;
        k->seqs = (uint32_t)x;
        rc = get_u(o, "streams", &x, true, e);
        if (rc)
            return rc;
        k->streams = (uint32_t)x;
        rc = get_u(o, "k_bytes", &k->k_bytes, true, e);
        if (rc || (rc = get_u(o, "v_bytes", &k->v_bytes, true, e)))
            return rc;
        const char *kt = json_string_value(json_object_get(o, "k_type"));
        const char *vt = json_string_value(json_object_get(o, "v_type"));
        k->k_type = kt ? sw_kv_type_from_name(kt) : -1;
        k->v_type = vt ? sw_kv_type_from_name(vt) : -1;
        if (k->k_type < 0 || k->v_type < 0)
            return sw_err_set(e, SW_EPARSE, "report: kv_caches[%zu] has an unknown cache type", i);
        k->swa = json_is_true(json_object_get(o, "swa"));
    }
    const json_t *rec = json_object_get(j, "recurrent");
    if (rec && json_is_object(rec)) {
        r->has_recurrent = true;
        rc = get_u(rec, "cells", &x, true, e);
        if (rc)
            return rc;
        r->recurrent.cells = (uint32_t)x;
        rc = get_u(rec, "layers", &x, true, e);
        if (rc)
            return rc;
        r->recurrent.layers = (uint32_t)x;
        rc = get_u(rec, "r_bytes", &r->recurrent.r_bytes, true, e);
        if (rc || (rc = get_u(rec, "s_bytes", &r->recurrent.s_bytes, true, e)))
            return rc;
    }
    r->model_known = get_u(j, "model_bytes", &r->model_bytes, false, NULL) == 0;
    get_u(j, "output_bytes", &r->output_bytes, false, NULL);
    r->compute_known = get_u(j, "compute_bytes", &r->compute_bytes, false, NULL) == 0;
    return 0;
}

json_t *sw_llamacpp_plan_to_json(const struct sw_llamacpp_plan *p)
{
    json_t *j = json_object(), *devs = json_array(), *warns = json_array(), *budget = json_object();
    json_t *server = json_object();
    int bad = 0; /* any failed set: jansson drops the key, so the object would be short */
    uint64_t tot[6] = {0};
    if (!j || !devs || !warns || !budget || !server)
        goto fail;
    bad |= sw_json_set_new(j, "report", sw_llamacpp_report_to_json(&p->report));
    for (int d = 0; d < p->n_dev; d++) {
        const struct sw_llamacpp_device *x = &p->dev[d];
        json_t *o = json_object();
        if (!o)
            goto fail;
        bad |= sw_json_set_str(o, "device", x->name);
        bad |= sw_json_set_int(o, "weights", (int64_t)x->weights);
        bad |= sw_json_set_int(o, "kv", (int64_t)x->kv);
        bad |= sw_json_set_int(o, "recurrent", (int64_t)x->recurrent);
        bad |= sw_json_set_int(o, "compute", (int64_t)x->compute);
        bad |= sw_json_set_int(o, "output", (int64_t)x->output);
        bad |= sw_json_set_int(o, "total", (int64_t)x->total);
        if (x->memory) {
            bad |= sw_json_set_int(o, "memory", (int64_t)x->memory);
            bad |= sw_json_set_int(o, "free", (int64_t)x->memory - (int64_t)x->total);
        }
        bad |= json_array_append_new(devs, o);
        tot[0] += x->weights;
        tot[1] += x->kv;
        tot[2] += x->recurrent;
        tot[3] += x->compute;
        tot[4] += x->output;
        tot[5] += x->total;
    }
    bad |= sw_json_set_new(budget, "devices", devs);
    devs = NULL;
    bad |= sw_json_set_new(budget, "total",
                           json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "weights", (json_int_t)tot[0],
                                     "kv", (json_int_t)tot[1], "recurrent", (json_int_t)tot[2],
                                     "compute", (json_int_t)tot[3], "output", (json_int_t)tot[4],
                                     "total", (json_int_t)tot[5]));
    bad |= sw_json_set_new(j, "budget", budget);
    budget = NULL;
    bad |= sw_json_set_int(server, "n_slots", p->n_slots);
    bad |= sw_json_set_int(server, "n_ctx_slot", p->n_ctx_slot);
    bad |= sw_json_set_int(server, "n_batch", p->report.n_batch);
    bad |= sw_json_set_int(server, "n_ubatch", p->report.n_ubatch);
    bad |= sw_json_set_bool(server, "flash_attn", p->flash_attn);
    bad |= sw_json_set_new(j, "server", server);
    server = NULL;
    bad |= sw_json_set_str(j, "compute_method", p->compute_method);
    for (int i = 0; i < p->n_warn; i++)
        bad |= json_array_append_new(warns, json_string(p->warn[i]));
    bad |= sw_json_set_new(j, "warnings", warns);
    warns = NULL;
    if (bad)
        goto fail;
    return j;
fail:
    json_decref(j);
    json_decref(devs);
    json_decref(warns);
    json_decref(budget);
    json_decref(server);
    return NULL;
}

int sw_llamacpp_print_lines(const struct sw_llamacpp_report *r, struct sw_buf *out)
{
    char a[32], b[32], c[32];
    int rc = 0;
    rc |= sw_buf_printf(out, "llama_context: n_seq_max             = %u\n", r->n_seq_max);
    rc |= sw_buf_printf(out, "llama_context: n_ctx                 = %u\n", r->n_ctx);
    rc |= sw_buf_printf(out, "llama_context: n_ctx_seq             = %u\n", r->n_ctx_seq);
    rc |= sw_buf_printf(out, "llama_context: n_batch               = %u\n", r->n_batch);
    rc |= sw_buf_printf(out, "llama_context: n_ubatch              = %u\n", r->n_ubatch);
    rc |= sw_buf_printf(out, "llama_context: kv_unified            = %s\n",
                        r->kv_unified ? "true" : "false");
    rc |= sw_buf_printf(out, "llama_context:  output buffer size = %8s MiB\n",
                        sw_llamacpp_mib_d(r->output_bytes, a, sizeof(a)));
    for (uint32_t i = 0; i < r->n_kv; i++) {
        const struct sw_llamacpp_kv *k = &r->kv[i];
        if (r->n_kv > 1)
            rc |= sw_buf_printf(out, "llama_kv_cache_iswa: creating %s KV cache, size = %u cells\n",
                                k->swa ? "    SWA" : "non-SWA", k->cells);
        rc |= sw_buf_printf(
            out,
            "llama_kv_cache: size = %7s MiB (%6u cells, %3u layers, %2u/%u seqs), K (%s): %7s "
            "MiB, V (%s): %7s MiB\n",
            sw_llamacpp_mib_f(k->k_bytes + k->v_bytes, a, sizeof(a)), k->cells, k->layers, k->seqs,
            k->streams, sw_kv_type_name(k->k_type), sw_llamacpp_mib_f(k->k_bytes, b, sizeof(b)),
            sw_kv_type_name(k->v_type), sw_llamacpp_mib_f(k->v_bytes, c, sizeof(c)));
    }
    if (r->has_recurrent) {
        const struct sw_llamacpp_recurrent *x = &r->recurrent;
        char d[32];
        rc |= sw_buf_printf(
            out,
            "llama_memory_recurrent: size = %7s MiB (%6u cells, %3u layers, %2u "
            "seqs %2u rs_seq), R (f32): %7s MiB, S (f32): %7s MiB, P (f32): %7s "
            "MiB\n",
            sw_llamacpp_mib_f(x->r_bytes + x->s_bytes, a, sizeof(a)), x->cells, x->layers, x->seqs,
            x->rs_seq, sw_llamacpp_mib_f(x->r_bytes, b, sizeof(b)),
            sw_llamacpp_mib_f(x->s_bytes, c, sizeof(c)), sw_llamacpp_mib_f(0, d, sizeof(d)));
    }
    if (r->model_known)
        rc |= sw_buf_printf(out, "load_tensors: model buffer size (sum) = %8s MiB\n",
                            sw_llamacpp_mib_d(r->model_bytes, a, sizeof(a)));
    if (r->compute_known)
        rc |= sw_buf_printf(out, "sched_reserve: compute buffer size (sum, estimate) = %8s MiB\n",
                            sw_llamacpp_mib_d(r->compute_bytes, a, sizeof(a)));
    return rc ? SW_ENOMEM : 0;
}

static int diff_line(struct sw_buf *out, const char *field, const char *pred, const char *got)
{
    if (!strcmp(pred, got))
        return 0;
    if (out)
        sw_buf_printf(out, "%s: predicted %s, printed %s\n", field, pred, got);
    return 1;
}

static int diff_u(struct sw_buf *out, const char *field, uint64_t pred, uint64_t got)
{
    char a[32], b[32];
    snprintf(a, sizeof(a), "%llu", (unsigned long long)pred);
    snprintf(b, sizeof(b), "%llu", (unsigned long long)got);
    return diff_line(out, field, a, b);
}

static int diff_mib_f(struct sw_buf *out, const char *field, uint64_t pred, uint64_t got)
{
    char a[32], b[32];
    return diff_line(out, field, sw_llamacpp_mib_f(pred, a, sizeof(a)),
                     sw_llamacpp_mib_f(got, b, sizeof(b)));
}

static int diff_mib_d(struct sw_buf *out, const char *field, uint64_t pred, uint64_t got)
{
    char a[32], b[32];
    return diff_line(out, field, sw_llamacpp_mib_d(pred, a, sizeof(a)),
                     sw_llamacpp_mib_d(got, b, sizeof(b)));
}

int sw_llamacpp_report_diff(const struct sw_llamacpp_report *p, const struct sw_llamacpp_report *g,
                            bool compute, struct sw_buf *out)
{
    int n = 0;
    char f[64];
    n += diff_u(out, "n_ctx", p->n_ctx, g->n_ctx);
    n += diff_u(out, "n_ctx_seq", p->n_ctx_seq, g->n_ctx_seq);
    n += diff_u(out, "n_seq_max", p->n_seq_max, g->n_seq_max);
    n += diff_u(out, "kv_unified", p->kv_unified, g->kv_unified);
    n += diff_u(out, "kv_caches.count", p->n_kv, g->n_kv);
    for (uint32_t i = 0; i < p->n_kv && i < g->n_kv; i++) {
        const struct sw_llamacpp_kv *a = &p->kv[i], *b = &g->kv[i];
#define F(name) (snprintf(f, sizeof(f), "kv_caches[%u].%s", i, name), f)
        n += diff_u(out, F("cells"), a->cells, b->cells);
        n += diff_u(out, F("layers"), a->layers, b->layers);
        n += diff_u(out, F("seqs"), a->seqs, b->seqs);
        n += diff_u(out, F("streams"), a->streams, b->streams);
        n += diff_line(out, F("k_type"),
                       sw_kv_type_name(a->k_type) ? sw_kv_type_name(a->k_type) : "?",
                       sw_kv_type_name(b->k_type) ? sw_kv_type_name(b->k_type) : "?");
        n += diff_line(out, F("v_type"),
                       sw_kv_type_name(a->v_type) ? sw_kv_type_name(a->v_type) : "?",
                       sw_kv_type_name(b->v_type) ? sw_kv_type_name(b->v_type) : "?");
        n += diff_mib_f(out, F("k_bytes (MiB)"), a->k_bytes, b->k_bytes);
        n += diff_mib_f(out, F("v_bytes (MiB)"), a->v_bytes, b->v_bytes);
        /* the line's total is not compared: a printed report rebuilt from the rounded K and V
         * cannot say it more precisely than they do */
        n += diff_u(out, F("swa"), a->swa, b->swa);
#undef F
    }
    n += diff_u(out, "recurrent.present", p->has_recurrent, g->has_recurrent);
    if (p->has_recurrent && g->has_recurrent) {
        n += diff_u(out, "recurrent.cells", p->recurrent.cells, g->recurrent.cells);
        n += diff_u(out, "recurrent.layers", p->recurrent.layers, g->recurrent.layers);
        n += diff_mib_f(out, "recurrent.r_bytes (MiB)", p->recurrent.r_bytes, g->recurrent.r_bytes);
        n += diff_mib_f(out, "recurrent.s_bytes (MiB)", p->recurrent.s_bytes, g->recurrent.s_bytes);
    }
    if (p->model_known && g->model_known)
        n += diff_mib_d(out, "model_bytes (MiB)", p->model_bytes, g->model_bytes);
    n += diff_mib_d(out, "output_bytes (MiB)", p->output_bytes, g->output_bytes);
    if (compute && p->compute_known && g->compute_known)
        n += diff_mib_d(out, "compute_bytes (MiB)", p->compute_bytes, g->compute_bytes);
    return n;
}
